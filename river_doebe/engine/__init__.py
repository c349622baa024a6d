"""The engine: a stack of members, their filters and their weights (an internal layer).

Every estimator of the package is thin over this package: it turns dicts into arrays
(:mod:`river_doebe._schema`) and calls :meth:`Engine.predict` / :meth:`Engine.learn` (regression)
or :meth:`LogisticEngine.predict_proba` / :meth:`LogisticEngine.learn` (classification), or,
for many rows at once, :meth:`Engine.learn_block`. The modules:

- :mod:`~river_doebe.engine.members`: :class:`Member`, the one record of a member (basis,
  variances, random walk, and where the warm-up found it), :class:`FilterError`, and the
  switching matrices (:func:`edoebe_transition`, :func:`csc_transition`);
- :mod:`~river_doebe.engine.core`: :class:`Engine`, the stack and the Gaussian likelihood;
- :mod:`~river_doebe.engine.logistic`: :class:`LogisticEngine`, the same stack with a logistic
  likelihood;
- :mod:`~river_doebe.engine.weighting`: :class:`Weighting`, how the weights learn (model
  averaging or online stacking, and a fixed share);
- :mod:`~river_doebe.engine.threads`: how many threads the stack kernels use, and when.

**One sample** costs one featurisation call per basis family, one predict sweep over the whole
stack, one likelihood update and the weight steps, all in Numba (:mod:`river_doebe.kernels`).
Members whose bases give the same features (an E-DOEBE's static and dynamic twins) share one
featurisation. The work of a predict is cached: a ``learn`` that follows with the same ``z`` (as
in progressive validation) reuses the features, the predict sweep and the switched weights.
Covariance updates are applied lazily, inside the next predict sweep; the arithmetic does not
depend on when they are applied, so the views (:attr:`Engine.mu`, :attr:`Engine.Sigma`,
:meth:`Engine.posterior`) and pickling never change the engine.

**A block of rows** (:meth:`Engine.learn_block`) runs member-major: each member through every
row while its covariance stays in cache, then the weights row by row. The members' filters do
not depend on the weights, and each member does the per-sample arithmetic, so the block leaves
the engine and returns the predictions exactly as the rows one by one would. Until its kernel
has paid for its compile (a fresh install's first blocks, :class:`~river_doebe.kernels.jit.Rented`),
a block's rows go one by one, to the same numbers.

**Threads.** A stack large enough for them can run its members on every thread, in the
featurisation, the predict sweep and the block path alike (each member's numbers are its own:
the results do not depend on the thread count). By default each stack times its serial and
parallel kernels on the stream and runs the faster, checking again as it goes
(:class:`~river_doebe.engine.threads.Pace`); :func:`set_num_threads` and :func:`num_threads` set
an explicit count for the process, which always wins.

**Dead members.** A member whose weight is zero and can never come back (pruned by the weight
floor, with no switching path from a live member) leaves the stack, with its memory and time;
the views keep the original members' order and report it with weight 0.

A sample that cannot be filtered safely (features so large that a predictive moment or an update
would not be finite) raises :class:`FilterError` before any state changes that a pickle would
see.
"""

from river_doebe.engine.core import Engine
from river_doebe.engine.logistic import LogisticEngine
from river_doebe.engine.members import (
    WEIGHT_FLOOR,
    FilterError,
    Member,
    csc_transition,
    edoebe_transition,
    twin_members,
)
from river_doebe.engine.threads import (
    PARALLEL_MIN_MEMBERS,
    PARALLEL_MIN_WORK,
    get_num_threads,
    num_threads,
    set_num_threads,
)
from river_doebe.engine.weighting import Weighting

__all__ = [
    "PARALLEL_MIN_MEMBERS",
    "PARALLEL_MIN_WORK",
    "WEIGHT_FLOOR",
    "Engine",
    "FilterError",
    "LogisticEngine",
    "Member",
    "csc_transition",
    "edoebe_transition",
    "get_num_threads",
    "num_threads",
    "set_num_threads",
    "twin_members",
    "Weighting",
]
