"""The engine: a stack of members, their filters and their weights (an internal layer).

Every estimator of the package is thin over this module: it turns dicts into arrays
(:mod:`river_doebe._schema`) and calls :meth:`Engine.predict` / :meth:`Engine.learn` (regression)
or :meth:`LogisticEngine.predict_proba` / :meth:`LogisticEngine.learn` (classification). One
sample costs one featurisation call per basis family, one predict sweep over the whole stack, one
likelihood update and the weight steps, all in Numba (:mod:`river_doebe.kernels`).

Here are also what the engine is built from: :class:`Member`, the one record of a member (basis,
variances, random walk, and where the warm-up found it), and the switching matrices
(:func:`edoebe_transition`, :func:`sparse_transition`).

The work of a predict is cached: a ``learn`` that follows with the same ``z`` (as in progressive
validation) reuses the features, the predict sweep and the switched weights instead of
recomputing them. Covariance updates are applied lazily, inside the next predict sweep; the
arithmetic does not depend on when they are applied, so the views (:attr:`Engine.mu`,
:attr:`Engine.Sigma`, :meth:`Engine.posterior`) and pickling never change the engine.

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
    sparse_transition,
    twin_members,
)
from river_doebe.engine.threads import (
    PARALLEL_MIN_WORK,
    get_num_threads,
    num_threads,
    set_num_threads,
)

__all__ = [
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
    "sparse_transition",
    "twin_members",
]
