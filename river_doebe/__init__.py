"""river-doebe: dynamic online ensembles of basis expansions for river.

The estimators are river regressors: :class:`DOBE` (one Bayesian basis-expansion learner),
:class:`DOEBE` (Bayesian model averaging), :class:`SDOEBE` (switching weights) and
:class:`EDOEBE` (the ensemble of static and dynamic twins of Waxman & Djuric, 2024), and their
classifiers (a logistic likelihood with a per-step Laplace approximation).

They are all that ``from river_doebe import *`` brings in, so that it does not shadow river's
own ``metrics`` and ``datasets``. The submodules are imported by name,
``from river_doebe import basis, datasets, distributions, metrics``, and are also reachable as
attributes (``river_doebe.metrics``), loaded on first use: importing the package does not load
the datasets, the metrics or the command line.

The thread count of the member sweeps and the warm-up is the library's, for every model of the
process. By default (``None``) each large ensemble times its one-thread and all-thread kernels
on the stream and runs the faster, so a busy machine falls back to one thread on its own. An
explicit count always wins: ``river_doebe.set_num_threads(1)`` (never parallel, e.g. one model
per process in a pool), ``set_num_threads(n)`` with ``n >= 2`` (the threads always, untimed),
``with river_doebe.num_threads(1): ...`` for a block of code, or the environment variable
``RIVER_DOEBE_THREADS`` (a number, or ``auto``); ``river_doebe.get_num_threads()`` reads the
count. Unless ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` is set, the package sets
``GOMP_SPINCOUNT`` so that an idle OpenMP thread stops spinning after about half a millisecond,
timed on the processor before the first ensemble starts the threads (see
:mod:`river_doebe.engine.threads`).

Many keyed streams (a model per key, the keys spread over Ray actors) are
:class:`river_doebe.distributed.KeyedModels`, with Ray as an optional dependency
(``pip install "river-doebe[ray]"``).
"""

import importlib as _importlib

from river_doebe.edoebe import EDOEBE, EDOEBEClassifier

# re-exported, outside __all__ (a star import brings the estimators only)
from river_doebe.engine.threads import get_num_threads as get_num_threads
from river_doebe.engine.threads import num_threads as num_threads
from river_doebe.engine.threads import set_num_threads as set_num_threads
from river_doebe.ensemble import DOEBE, SDOEBE, DOEBEClassifier, SDOEBEClassifier
from river_doebe.learner import DOBE, DOBEClassifier

__all__ = [
    "DOBE",
    "DOBEClassifier",
    "DOEBE",
    "DOEBEClassifier",
    "EDOEBE",
    "EDOEBEClassifier",
    "SDOEBE",
    "SDOEBEClassifier",
]
__version__ = "0.1.0"

# the public submodules, imported on first attribute access (PEP 562)
_SUBMODULES = (
    "basis",
    "calibration",
    "cli",
    "conf",
    "datasets",
    "distributed",
    "distributions",
    "engine",
    "evaluate",
    "evidence",
    "kernels",
    "metrics",
    "precompile",
    "preprocessing",
    "utils",
    "warmup",
)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES})
