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
import numpy as np

from river_doebe.kernels.stack import record_update, step_is_finite

__all__ = ["LOG_2PI", "gaussian_update"]

LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True)
def gaussian_update(F, static, mu, V, mean, var, var_theta, var_eps, y, active, loglik, pc, pg,
                    pend, n_filtered):
    """Fold ``y`` into every active member with a Gaussian likelihood; record the owed updates.

    Every active member is checked first: a residual, gain or mean step that would not be finite
    returns ``m + 1`` for the first such member and changes nothing. Otherwise writes
    ``loglik[m] = log N(y; mean[m], var[m])`` (``-inf`` for inactive members), updates the means
    of dynamic members, turns ``V[m]`` into the owed factor (the caller keeps it as ``pvec``:
    ``v sqrt(c)`` for dynamic members, ``f`` for static ones) and returns 0.
    """
    M = mu.shape[0]
    for m in range(M):
        if not active[m]:
            continue
        s = var[m]
        r = y - mean[m]
        g = r / s
        if not (math.isfinite(r) and math.isfinite(g)):
            return m + 1
        if not step_is_finite(F[m], static[m], mu[m], V[m], s - var_eps[m], var_theta[m], g):
            return m + 1
    for m in range(M):
        if not active[m]:
            loglik[m] = -np.inf
            continue
        s = var[m]
        r = y - mean[m]
        loglik[m] = -0.5 * (LOG_2PI + math.log(s) + r * r / s)
        record_update(F[m], static[m], mu[m], V[m], r / s, 1.0 / s, var_eps[m], pc, pg, m)
        pend[m] = True
        n_filtered[m] += 1
    return 0
