"""The logistic likelihood of the classifiers: probit predictive and per-step Laplace update. Numba.

A member ``m`` of the stack has ``p(y = 1 | theta) = sigmoid(phi' theta)`` and a Gaussian belief
``N(mu, Sigma)`` about ``theta`` that takes a random-walk step of variance ``var_rw`` before each
sample (paper Sec. 3.4). The latent predictive moments are those of the Gaussian filter without
observation noise (:func:`river_doebe.kernels.stack.predict_stack` with ``var_eps = 0``)::

    v = Sigma_pred phi,   a = phi' mu,   s2 = phi' v,        Sigma_pred = Sigma + var_rw I

Predictive (probit approximation, MacKay 1992)::

    p(y = 1) ~= sigmoid(kappa a),   kappa = 1 / sqrt(1 + pi s2 / 8)

Update with ``y in {0, 1}`` (Laplace approximation of ``N(theta; mu, Sigma_pred) p(y | theta)``).
The posterior mode lies on the line ``mu + t v``, where the latent is ``f = a + s2 t``, and the
scalar ``t`` solves::

    h(t) = t - (y - sigmoid(a + s2 t)) = 0

``h`` is strictly increasing (``h' = 1 + s2 lam > 0``) with its root inside ``(y - 1, y)``, so a
Newton iteration kept inside a shrinking bracket (bisection when a step leaves it) always
converges. Then, with ``lam = sigmoid(f*) (1 - sigmoid(f*))``::

    mu_new    = mu + v t*                      (= mu + v (f* - a) / s2)
    Sigma_new = Sigma_pred - v v' lam / (1 + lam s2)

which is ``(Sigma_pred^-1 + lam phi phi')^-1`` by the Sherman-Morrison formula: a Gaussian
measurement update with noise variance ``1 / lam``, applied in the forms of
:mod:`river_doebe.kernels.stack` (a square root for static members). The parametrisation by ``t``
rather than ``f`` also covers ``s2 = 0`` (an all-zero feature vector), where ``t = y -
sigmoid(a)`` and nothing moves.

Tails are computed without cancellation: ``1 - sigmoid(x)`` is evaluated as ``sigmoid(-x)`` and
``log sigmoid`` directly.

With ``ipl`` the kernels take ``(t, lam)`` from the iterated posterior linearisation of
:mod:`river_doebe.kernels.ipl` instead (the same scalar contract, so the same ``O(F^2)`` update of
each member); the predictive and the log-likelihood the weights use do not depend on the update.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from river_doebe.kernels.ipl import NODES, WEIGHTS, solve_ipl_step
from river_doebe.kernels.jit import kernel, stack_kernel
from river_doebe.kernels.stack import (
    Params,
    State,
    owe_update,
    predict_member,
    record_update,
    step_is_finite,
)
from river_doebe.kernels.weights import sigmoid

__all__ = [
    "logistic_block",
    "logistic_block_parallel",
    "probit_logit",
    "PROBIT_SCALE",
    "log_sigmoid",
    "sigmoid",
    "probit_logits",
    "logistic_update_stack",
    "solve_laplace_step",
    "solve_step",
]

#: ``pi / 8``: the scale of the latent variance in the probit approximation.
PROBIT_SCALE = math.pi / 8.0

_MAX_ITER = 200
_TOL = 1e-15


@kernel(inline="always")
def log_sigmoid(x):
    """``log sigmoid(x)`` without overflow or cancellation."""
    if x >= 0.0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@kernel()
def solve_laplace_step(a, s2, y):
    """Solve ``t = y - sigmoid(a + s2 t)`` for ``t`` (``y`` in {0, 1}); return ``(t, lam)``.

    ``lam = sigmoid(f) (1 - sigmoid(f))`` at the mode ``f = a + s2 t``. Newton's method
    safeguarded by the bracket ``(y - 1, y)``, which shrinks around the root as ``h`` is evaluated;
    stops when a step is below ``1e-15`` (``t`` is in ``(-1, 1)``) or the bracket has closed.
    """
    sgn = 1.0 if y == 1 else -1.0
    if sgn > 0.0:
        lo, hi = 0.0, 1.0
    else:
        lo, hi = -1.0, 0.0
    # the s2 -> 0 solution: exact for s2 = 0, and inside the bracket
    t = sgn * sigmoid(-sgn * a)
    for _ in range(_MAX_ITER):
        f = a + s2 * t
        # y - sigmoid(f), written as +/- the probability of the other label
        h = t - sgn * sigmoid(-sgn * f)
        if h == 0.0:
            break
        if h > 0.0:
            hi = t
        else:
            lo = t
        dh = 1.0 + s2 * sigmoid(f) * sigmoid(-f)
        t_new = t - h / dh
        if not (lo < t_new < hi):
            t_new = 0.5 * (lo + hi)
        step = abs(t_new - t)
        t = t_new
        if step <= _TOL or hi - lo <= _TOL:
            break
    f = a + s2 * t
    lam = sigmoid(f) * sigmoid(-f)
    return t, lam


@kernel(inline="always")
def solve_step(a, s2, y, ipl):
    """``(t, lam)`` of the member's update: the Laplace step, or with ``ipl`` the iterated
    posterior linearisation (on the quadrature fixed at import)."""
    if ipl:
        return solve_ipl_step(a, s2, y, NODES, WEIGHTS)
    return solve_laplace_step(a, s2, y)


@kernel(inline="always")
def probit_logit(mean, var):
    """``mean / sqrt(1 + pi var / 8)``: ``sigmoid`` of it is the probit-approximated ``p(y = 1)``
    of the latent predictive ``N(mean, var)``."""
    return mean / math.sqrt(1.0 + PROBIT_SCALE * var)


@kernel()
def probit_logits(mean, var, logit):
    """``logit[m] = probit_logit(mean[m], var[m])`` for every member."""
    M = mean.shape[0]
    for m in range(M):
        logit[m] = probit_logit(mean[m], var[m])


@kernel(inline="always")
def _learn(is_static, var, logit, t, lam, y, alpha0, pg, m):
    """Record member ``m``'s step (``t``, ``lam``: Laplace or IPL); return ``log p_m(y)``."""
    a0 = 1.0 / lam if lam > 0.0 else np.inf
    c = lam / (1.0 + lam * var)
    record_update(is_static, t, c, a0, alpha0, pg, m)
    return log_sigmoid((1.0 if y == 1 else -1.0) * logit)


@kernel()
def logistic_update_stack(params, state, V, mean, var, logit, y, loglik, t_buf, lam_buf, ipl):
    """Fold the label ``y`` (0 or 1) into every member (``params``, ``state``: plain tuples of the
    fields of :class:`~river_doebe.kernels.stack.Params` and
    :class:`~river_doebe.kernels.stack.State`), given its predict step (by the Laplace step, or
    with ``ipl`` by iterated posterior linearisation: :func:`solve_step`).

    ``V``, ``mean``, ``var`` are the latent predictive quantities of
    :func:`river_doebe.kernels.stack.predict_stack` run with ``var_eps = 0``, and ``logit`` those
    of :func:`probit_logits`. Every member is checked first (a mean step that would not be finite
    returns ``m + 1`` and changes nothing). Then writes ``loglik[m] = log p_m(y)`` under the
    probit-approximated predictive, and records each member's step as the owed update of
    :mod:`river_doebe.kernels.stack`: gain ``t*`` and curvature ``c = lam / (1 + lam s2)``, which
    for a static member is the measurement update with noise variance ``alpha_0 = 1 / lam``
    (``inf`` when ``lam`` underflows: the mean moves, the covariance does not).
    """
    p = Params(*params)
    s = State(*state)
    F, static = p.F, p.static
    M = F.shape[0]
    for m in range(M):
        t_buf[m], lam_buf[m] = solve_step(mean[m], var[m], y, ipl)
        if not step_is_finite(static[m], var[m], p.var_theta[m], p.var_rw[m], s.n_filtered[m],
                              t_buf[m]):
            return m + 1
    for m in range(M):
        loglik[m] = _learn(static[m], var[m], logit[m], t_buf[m], lam_buf[m], y, s.alpha0,
                           s.pg, m)
        owe_update(m, F[m], V, s)
    return 0


# not inlined, as predict_member (Numba loses the writes through a record's arrays when they
# are inlined into a parallel loop)
@kernel(no_cpython_wrapper=True)
def _member_rows(m, Phi3, src, Y, p, s, V, E, mean_out, var_out, logit_out, loglik_out, status,
                 ipl, repair):
    """Member ``m`` through every row of a block (see :func:`logistic_block`); returns the first
    row it cannot take, or -1, and writes ``status[m]`` (as
    :func:`river_doebe.kernels.gaussian._member_rows`)."""
    f = p.F[m]
    is_static = p.static[m]
    for t in range(Y.shape[0]):
        mean, var = mean_out[t], var_out[t]
        refused = predict_member(m, Phi3[src[m], t], p, s, V, E, mean, var, repair)
        if refused:
            status[m] = refused
            return t
        logit = probit_logit(mean[m], var[m])
        logit_out[t, m] = logit
        step, lam = solve_step(mean[m], var[m], Y[t], ipl)
        if not step_is_finite(is_static, var[m], p.var_theta[m], p.var_rw[m], s.n_filtered[m],
                              step):
            status[m] = 1
            return t
        loglik_out[t, m] = _learn(is_static, var[m], logit, step, lam, Y[t], s.alpha0, s.pg, m)
        owe_update(m, f, V, s)
    status[m] = 0
    return -1


def _logistic_block(order, Phi3, src, Y, params, state, V, E, mean_out, var_out, logit_out,
                    loglik_out, bad_row, status, ipl, repair):
    """A block of labelled rows member by member (by the Laplace step, or with ``ipl`` by IPL), as
    :func:`river_doebe.kernels.gaussian.gaussian_block` for the regressors; also writes the
    probit logits ``logit_out[t, m]`` the row's prediction needs."""
    p = Params(*params)
    s = State(*state)
    for j in numba.prange(order.shape[0]):
        m = order[j]
        bad_row[m] = _member_rows(m, Phi3, src, Y, p, s, V, E, mean_out, var_out, logit_out,
                                  loglik_out, status, ipl, repair)


logistic_block, logistic_block_parallel = stack_kernel(_logistic_block)
