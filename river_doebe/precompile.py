"""Compile the package's kernels into Numba's on-disk cache before a model first runs them.

Numba compiles a kernel the first time it runs and files the machine code in its on-disk cache
(beside the package, or in ``NUMBA_CACHE_DIR``), so only a fresh install's first models pay
for it (seconds for a first ``EDOEBE()``: ``benchmarks/results/engine.md``).
:func:`precompile` (the command ``river-doebe compile``) pays it once, ahead of use: it runs
every model of the package on a few hundred generated samples, the way a stream and a batch
run them, so that a later process reads every kernel from the cache. Run it where the
package is installed: in a container image's build after ``pip install``, once on each node of
a Ray cluster, before a timed benchmark.

Numba files a kernel under the types of its arguments, which the models fix, so the workloads
go through the public API (``predict_one``, ``learn_one``, the predictive distribution's
reads, ``predict_learn_many``, river's mini-batch methods) rather than calling the kernels.
Left out: the dynamic members' covariance repair, which almost never runs (a process compiles
it on its first repair).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numba
import numpy as np
import pandas as pd

import river_doebe
from river_doebe import (
    DOBE,
    DOEBE,
    EDOEBE,
    SDOEBE,
    DOBEClassifier,
    DOEBEClassifier,
    EDOEBEClassifier,
    SDOEBEClassifier,
)
from river_doebe.basis import (
    AdditivePolynomial,
    BSpline,
    HilbertGP,
    Linear,
    RandomFourierFeatures,
    RBFNetwork,
)
from river_doebe.conf import Recalibrated
from river_doebe.datasets import Friedman1
from river_doebe.engine.threads import compiled
from river_doebe.kernels import spin
from river_doebe.kernels.jit import buy_all

__all__ = ["precompile"]


def _regression_rows(n: int) -> list:
    return list(Friedman1(n_samples=n, seed=0))


def _models(warmup: int) -> Iterator[tuple[str, Callable[[], Any], bool]]:
    """``(name, factory, is_classifier)`` of every kind of model: the learners on each basis,
    static and dynamic, the ensembles with each weighting, the E-DOEBEs, the wrapper."""
    bases: list[Callable[[], Any]] = [
        Linear, partial(AdditivePolynomial, degree=2), BSpline, partial(HilbertGP, 20),
        partial(RandomFourierFeatures, 10, seed=0), partial(RBFNetwork, 10, seed=0),
    ]
    for basis in bases:
        name = getattr(basis, "func", basis).__name__
        yield f"DOBE({name})", partial(_learner, DOBE, basis), False
        yield f"DOBE({name}, var_rw=1e-3)", partial(_learner, DOBE, basis, var_rw=1e-3), False
    rff = partial(RandomFourierFeatures, 10, seed=0)
    for update in ("laplace", "ipl"):
        for var_rw in (0.0, 1e-3):
            yield (f"DOBEClassifier(update={update!r}, var_rw={var_rw})",
                   partial(_learner, DOBEClassifier, rff, var_rw=var_rw, update=update), True)
    for weighting in ("bma", "stacking"):
        yield (f"DOEBE(weighting={weighting!r})",
               partial(_ensemble, DOEBE, DOBE, weighting=weighting, share=0.01), False)
        yield (f"DOEBEClassifier(weighting={weighting!r})",
               partial(_ensemble, DOEBEClassifier, DOBEClassifier, weighting=weighting), True)
    switching = np.full((4, 4), 0.25)
    yield "SDOEBE", partial(_ensemble, SDOEBE, DOBE, transition=switching), False
    yield ("SDOEBEClassifier",
           partial(_ensemble, SDOEBEClassifier, DOBEClassifier, transition=switching), True)
    yield "Recalibrated(DOBE())", partial(Recalibrated, DOBE()), False
    yield "EDOEBE()", partial(EDOEBE, n_warmup=warmup, seed=0), False
    yield ("EDOEBE(recalibrate=False)",
           partial(EDOEBE, n_warmup=warmup, seed=0, recalibrate=False), False)
    yield "EDOEBEClassifier()", partial(EDOEBEClassifier, n_warmup=warmup, seed=0), True


def _learner(cls: Any, basis: Callable[[], Any], **params: Any) -> Any:
    """A fresh learner of ``cls`` on a fresh ``basis()``."""
    return cls(basis(), **params)


def _ensemble(cls: Any, learner: Any, **params: Any) -> Any:
    """A fresh ensemble of ``cls`` over four ``learner`` members, static and dynamic."""
    members = [learner(RandomFourierFeatures(10, seed=k), var_rw=r)
               for k in range(2) for r in (0.0, 1e-3)]
    return cls(members, **params)


def _run(model: Any, rows: list, classifier: bool, block: int) -> None:
    """The model's per-sample path on the first rows (with every read of its predictive), then
    a block of ``block`` rows (lists of dicts) and the rest as a DataFrame (river's mini-batch
    methods)."""
    split = len(rows) - 2 * block
    for x, y in rows[:split]:
        if classifier:
            model.predict_proba_one(x)
        else:
            model.predict_one(x)
            dist = model.predict_one(x, with_dist=True)
            dist.mu, dist.sigma, dist.log_pdf(y), dist.cdf(y)
            if hasattr(dist, "interval"):
                dist.interval(0.9)
        model.learn_one(x, y)
    part = rows[split:split + block]
    if hasattr(model, "predict_learn_many"):
        model.predict_learn_many([x for x, _ in part], [y for _, y in part])
    part = rows[split + block:]
    X, y = pd.DataFrame([x for x, _ in part]), pd.Series([y for _, y in part])
    predict_many = getattr(model, "predict_proba_many" if classifier else "predict_many", None)
    if predict_many is not None:
        predict_many(X)
    if hasattr(model, "learn_many"):
        model.learn_many(X, y)


def precompile(threads: bool = True, warmup: int = 120, samples: int = 320,
               progress: Callable[[str], None] | None = None) -> dict:
    """Compile every kernel the package's models run into Numba's on-disk cache.

    Parameters
    ----------
    threads
        Also compile the parallel twins of the stack kernels (the member loop on every thread),
        which the ensembles time against one thread on a stream, by running the ensembles again
        on all of Numba's threads. Left out on a machine where Numba launches one thread.
    warmup
        The warm-up window of the E-DOEBEs it runs (any size compiles the same kernels).
    samples
        Samples each model runs (the last 128 in two blocks of 64).
    progress
        Called with each model's name before it runs (the command line prints them).

    Returns
    -------
    dict
        ``compiles`` and ``seconds``: the package's kernels Numba compiled in this call and the
        time that took (0 when everything was in the cache already); ``models``: how many
        models ran.

    Notes
    -----
    ``tests/test_precompile.py`` checks that a process started afterwards compiles nothing;
    from a shell it is ``river-doebe compile``.

    """
    # the recalibration's update, the weights, the standardisation of a sample and the block
    # kernels are rented (run by their Python twins, or a block's rows the per-sample way, until
    # they have paid for their compile, unless they are in the cache): here they are bought, so
    # that the cache holds them
    buy_all()
    rows = _regression_rows(max(samples, warmup + 200))
    labelled = [(x, y > 14.0) for x, y in rows]  # (Friedman #1's median is about 14)
    compiles_before, seconds_before = compiled()
    # the loop that times OpenMP's spin before a process' first parallel stack (it runs only
    # when the threads have not started, which a process that ran anything may have done)
    spin.round_seconds(rounds=1, repeats=1)
    passes = [1]
    if threads and numba.config.NUMBA_NUM_THREADS >= 2:  # type: ignore[attr-defined, unused-ignore]
        passes.append(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined, unused-ignore]
    n_models = 0
    with warnings.catch_warnings():
        # (short warm-up windows and tiny models warn about themselves: not the user's concern)
        warnings.simplefilter("ignore")
        for n_threads in passes:
            with river_doebe.num_threads(n_threads):
                for name, make, classifier in _models(warmup):
                    model = make()
                    if n_threads > 1 and not hasattr(model, "models") and "EDOEBE" not in name:
                        continue  # (a single learner never runs on threads)
                    if progress is not None:
                        progress(name if n_threads == 1 else f"{name} on {n_threads} threads")
                    length = max(samples, warmup + 200) if "EDOEBE" in name else samples
                    _run(model, (labelled if classifier else rows)[:length], classifier, 64)
                    n_models += 1
    compiles, seconds = compiled()
    return {"compiles": compiles - compiles_before, "seconds": seconds - seconds_before,
            "models": n_models}
