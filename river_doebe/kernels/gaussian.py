"""The Gaussian likelihood of the regressors: one update of every member of a stack. Numba.

Member ``m`` predicts ``N(mean_m, var_m)`` (the predict sweep of :mod:`river_doebe.kernels.stack`
with the noise variance added); the target ``y`` gives it the log-likelihood ``log N(y; mean_m,
var_m)``, which the ensemble weights use, and the Kalman update ``mu += v g``, ``Sigma_pred -= c v
v'`` with gain ``g = (y - mean_m) / var_m`` and curvature ``c = 1 / var_m`` (for a static member
in square-root form: the measurement noise ``alpha_0 = var_eps``).
"""

from __future__ import annotations

import math

import numba

from river_doebe.kernels.jit import kernel, stack_kernel
from river_doebe.kernels.stack import (
    Params,
    State,
    owe_update,
    predict_member,
    record_update,
    step_is_finite,
)

__all__ = ["LOG_2PI", "gaussian_block", "gaussian_block_parallel", "gaussian_update"]

LOG_2PI = math.log(2.0 * math.pi)


@kernel(inline="always")
def _can_learn(is_static, mean, var, var_theta, var_rw, n, var_eps, y):
    """Whether the member's residual, gain and mean step for ``y`` stay finite."""
    r = y - mean
    g = r / var
    if not (math.isfinite(r) and math.isfinite(g)):
        return False
    return step_is_finite(is_static, var - var_eps, var_theta, var_rw, n, g)


@kernel(inline="always")
def _learn(is_static, mean, var, var_eps, y, alpha0, pg, m):
    """Record member ``m``'s update for ``y``; return its log-likelihood ``log N(y; mean, var)``."""
    r = y - mean
    record_update(is_static, r / var, 1.0 / var, var_eps, alpha0, pg, m)
    return -0.5 * (LOG_2PI + math.log(var) + r * r / var)


@kernel()
def gaussian_update(params, state, V, mean, var, y, loglik):
    """Fold ``y`` into every member (``params``, ``state``: plain tuples of the fields of
    :class:`~river_doebe.kernels.stack.Params` and :class:`~river_doebe.kernels.stack.State`)
    with a Gaussian likelihood; record the owed updates.

    Every member is checked first: a residual, gain or mean step that would not be finite (the
    step from a bound, :func:`~river_doebe.kernels.stack.step_is_finite`) returns ``m + 1`` for
    the first such member and changes nothing. Otherwise writes ``loglik[m] = log N(y; mean[m],
    var[m])`` and records each member's owed update (its vector ``v`` in the state's ``pvec``,
    its gain, and ``sqrt(c)`` for a dynamic member or ``alpha_0`` for a static one), which the
    next predict sweep applies; returns 0.
    """
    p = Params(*params)
    s = State(*state)
    F, static, var_eps = p.F, p.static, p.var_eps
    M = F.shape[0]
    for m in range(M):
        if not _can_learn(static[m], mean[m], var[m], p.var_theta[m], p.var_rw[m],
                          s.n_filtered[m], var_eps[m], y):
            return m + 1
    for m in range(M):
        loglik[m] = _learn(static[m], mean[m], var[m], var_eps[m], y, s.alpha0, s.pg, m)
        owe_update(m, F[m], V, s)
    return 0


# not inlined, as predict_member (Numba loses the writes through a record's arrays when they
# are inlined into a parallel loop)
@kernel(no_cpython_wrapper=True)
def _member_rows(m, Phi3, src, Y, p, s, V, E, mean_out, var_out, loglik_out, status, repair):
    """Member ``m`` through every row of a block, as the per-sample steps would take it; returns
    the first row it cannot take, or -1, and writes ``status[m]``: 0, the predict step's status
    (2, 3 or, without ``repair``, :data:`~river_doebe.kernels.stack.NEEDS_REPAIR`: see
    :func:`~river_doebe.kernels.stack.predict_member`), or 1 (the update would not be finite)."""
    f = p.F[m]
    is_static = p.static[m]
    for t in range(Y.shape[0]):
        mean, var = mean_out[t], var_out[t]
        refused = predict_member(m, Phi3[src[m], t], p, s, V, E, mean, var, repair)
        if refused:
            status[m] = refused
            return t
        if not _can_learn(is_static, mean[m], var[m], p.var_theta[m], p.var_rw[m],
                          s.n_filtered[m], p.var_eps[m], Y[t]):
            status[m] = 1
            return t
        loglik_out[t, m] = _learn(is_static, mean[m], var[m], p.var_eps[m], Y[t], s.alpha0,
                                  s.pg, m)
        owe_update(m, f, V, s)
    status[m] = 0
    return -1


def _gaussian_block(order, Phi3, src, Y, params, state, V, E, mean_out, var_out, loglik_out,
                    bad_row, status, repair):
    """A block of rows member by member: every member ``m`` (``params``, ``state``: plain tuples
    of the fields of :class:`~river_doebe.kernels.stack.Params` and
    :class:`~river_doebe.kernels.stack.State`) through every row of its slot's features
    ``Phi3[src[m]]`` (``Phi3`` is ``(slots, B, F_max)``) while its covariance stays in cache,
    writing each row's predictive
    ``mean_out[t, m]``, ``var_out[t, m]`` and ``loglik_out[t, m]`` and, in ``bad_row[m]``, the
    first row the member could not take (-1: none) and in ``status[m]`` why (see
    :func:`_member_rows`; ``repair``: see :func:`~river_doebe.kernels.stack.predict_member`).
    The weights are the caller's, row by row afterwards
    (:func:`river_doebe.kernels.weights.weigh_block`): the members' filters do not depend on
    them. The members are a ``prange`` in the order ``order`` (as in
    :func:`river_doebe.kernels.stack.predict_stack`): the parallel twin spreads them over the
    threads."""
    p = Params(*params)
    s = State(*state)
    for j in numba.prange(order.shape[0]):
        m = order[j]
        bad_row[m] = _member_rows(m, Phi3, src, Y, p, s, V, E, mean_out, var_out, loglik_out,
                                  status, repair)


gaussian_block, gaussian_block_parallel = stack_kernel(_gaussian_block)
