"""Checks of constructor parameters: plain functions that every estimator calls in ``__init__``,
so that a bad parameter is refused at construction with one line that names it."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "check_bool",
    "check_int",
    "check_positive",
    "check_non_negative",
    "check_probability",
    "check_random_walk",
    "check_seed",
    "check_starts",
    "check_transition",
    "check_update",
    "check_weight_floor",
    "check_weighting",
]


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_positive(name: str, value: Any) -> None:
    """A finite number > 0."""
    if not (_is_real(value) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")


def check_non_negative(name: str, value: Any) -> None:
    """A finite number >= 0."""
    if not (_is_real(value) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be non-negative and finite, got {value!r}")


#: the smallest random walk a dynamic member may take, relative to its prior variance: below it
#: the step vanishes in the rounding of the covariance (and the standard-form update it needs can
#: lose positive definiteness); such a member is a static one, kept in square-root form
MIN_RELATIVE_RW = 1e-12


def check_random_walk(var_rw: Any, var_theta: Any, name: str = "var_rw") -> None:
    """``var_rw`` is 0 (static) or at least ``MIN_RELATIVE_RW * var_theta``."""
    check_non_negative(name, var_rw)
    if 0 < var_rw < MIN_RELATIVE_RW * var_theta:
        raise ValueError(
            f"{name}={var_rw!r} is below {MIN_RELATIVE_RW:g} times var_theta={var_theta!r}: "
            "a random walk that small vanishes in the rounding of the covariance; use 0 (a "
            "static learner) or a larger value"
        )


def check_probability(name: str, value: Any, upper: float = 1.0) -> None:
    """A number in ``[0, upper)``."""
    if not (_is_real(value) and 0.0 <= value < upper):
        raise ValueError(f"{name} must be in [0, {upper:g}), got {value!r}")


def check_weight_floor(value: Any) -> None:
    check_probability("weight_floor", value)


#: the weight rules of an ensemble, by name (:mod:`river_doebe.engine.weighting`)
WEIGHTINGS = ("bma", "stacking")


def check_weighting(weighting: Any, stacking_rate: Any, share: Any) -> None:
    """The weight rule of an ensemble: ``"bma"`` or ``"stacking"``, a Soft-Bayes rate in
    ``(0, 1]`` and a fixed share in ``[0, 1)``."""
    if not isinstance(weighting, str) or weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    if not (_is_real(stacking_rate) and 0.0 < stacking_rate <= 1.0):
        raise ValueError(f"stacking_rate must be in (0, 1], got {stacking_rate!r}")
    check_probability("share", share)


#: the update steps of a classifier's members, by name (:mod:`river_doebe.kernels.logistic`)
UPDATES = ("laplace", "ipl")


def check_update(update: Any) -> None:
    """A classifier's update step: ``"laplace"`` or ``"ipl"`` (iterated posterior
    linearisation)."""
    if not isinstance(update, str) or update not in UPDATES:
        raise ValueError(f"update must be one of {UPDATES}, got {update!r}")


def check_int(name: str, value: Any, low: int) -> None:
    """An integer >= ``low`` (``bool`` is not an integer here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def check_seed(value: Any) -> None:
    """``None`` or a non-negative integer."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"seed must be None or an integer, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"seed must be non-negative, got {value!r}")


def check_starts(value: Any) -> None:
    """A non-empty sequence of positive, finite numbers."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | np.ndarray):
        raise TypeError(f"starts must be a tuple of positive numbers, got {value!r}")
    if len(value) == 0:
        raise ValueError("starts must hold at least one starting length scale, got ()")
    for s in value:
        if not (_is_real(s) and math.isfinite(s) and s > 0):
            raise ValueError(f"starts must be positive, finite numbers, got {tuple(value)!r}")


def check_transition(Q: ArrayLike, n_members: int | None = None) -> np.ndarray:
    """A row-stochastic square matrix (for ``n_members`` members when given)."""
    try:
        Q = np.asarray(Q, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"the transition matrix must be numeric, got {Q!r}") from None
    if Q.ndim != 2 or Q.shape[0] != Q.shape[1]:
        raise ValueError(f"the transition matrix must be square, got shape {Q.shape}")
    if not np.isfinite(Q).all() or (Q < 0).any():
        raise ValueError("the transition matrix must have finite, non-negative entries")
    sums = Q.sum(axis=1)
    if not np.allclose(sums, 1.0, rtol=0, atol=1e-10):
        bad = int(np.argmax(np.abs(sums - 1.0)))
        raise ValueError(
            f"the transition matrix must be row-stochastic; row {bad} sums to {sums[bad]!r}"
        )
    if n_members is not None and Q.shape[0] != n_members:
        raise ValueError(
            f"the transition matrix is for {Q.shape[0]} members, the ensemble has {n_members}"
        )
    return Q
