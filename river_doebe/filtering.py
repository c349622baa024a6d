"""Numba kernels of the online filter and of the ensemble weights. Nothing river-specific here.

A *stack* holds ``M`` Bayesian linear learners of possibly different feature counts ``F[m]``,
zero-padded to ``F_max``: ``mu (M, F_max)``, ``Sigma (M, F_max, F_max)``. Member ``m`` only ever
reads and writes its leading ``F[m]`` entries, so the padding is never touched.

One step of member ``m`` with features ``phi`` (paper Sec. 3.1-3.2; a Kalman filter with a random
walk of variance ``var_rw`` on the weights):

- predict: ``v = (Sigma + var_rw I) phi``; ``mean = phi' mu``; ``var = phi' v + var_eps``
- update with ``y``: ``mu += v (y - mean) / var``; ``Sigma += var_rw I - v v' / var``
- its loss is ``-log N(y; mean, var)``.

The covariance update is deferred: :func:`update_means` records it and the next
:func:`predict_stack` applies it in the same sweep over ``Sigma`` that computes ``Sigma phi``
(:func:`flush_stack` applies it when ``Sigma`` is read in between). The arithmetic is the same, in
the same order, as updating at once.

``Sigma`` is kept exactly symmetric: entry ``(i, j)`` and ``(j, i)`` receive the same floating
point update because ``v[i] * v[j] == v[j] * v[i]``.

Ensemble weights are kept as logs. A switching step (paper Eq. 8) with a row-stochastic ``Q``
stored sparse in compressed-column form computes ``log w_new[j] = logsumexp_i(log w[i] + log
Q[i, j])`` exactly in the log domain.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "predict_stack",
    "update_means",
    "flush_stack",
    "switch_log_weights",
    "bma_log_weights",
    "mixture_moments",
    "mixture_log_density",
    "LOG_2PI",
]

LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True, fastmath=False)
def predict_stack(Phi, F, mu, Sigma, var_rw, var_eps, active, V, mean, var, Vp, inv_sp, pend):
    """Predictive moments of every active member; ``V[m] = (Sigma_m + var_rw I) phi_m``.

    A member with ``pend[m]`` still owes ``Sigma`` its last covariance update
    ``Sigma += var_rw I - Vp Vp' inv_sp`` (see :func:`update_means`). It is applied here, row by
    row, in the same pass that reads the row for ``Sigma phi``: one sweep over the covariance
    per step instead of two. ``Sigma phi`` is accumulated as a sum of rows scaled by ``phi``
    (``Sigma`` is symmetric), a contiguous axpy that vectorises without reassociating sums.
    """
    M = Phi.shape[0]
    for m in range(M):
        f = F[m]
        rw = var_rw[m]
        owes = pend[m]
        if owes:
            pend[m] = False
            vp = Vp[m]
            c = inv_sp[m]
        if not active[m]:
            if owes:
                for j in range(f):
                    row = Sigma[m, j]
                    vj = vp[j]
                    for i in range(f):
                        row[i] -= (vj * vp[i]) * c
                    row[j] += rw
            continue
        v = V[m]
        phi = Phi[m]
        for i in range(f):
            v[i] = rw * phi[i]
        for j in range(f):
            row = Sigma[m, j]
            pj = phi[j]
            if owes:
                # one pass: update the row and add it, scaled, to Sigma phi
                vj = vp[j]
                for i in range(f):
                    r = row[i] - (vj * vp[i]) * c
                    row[i] = r
                    v[i] += r * pj
                row[j] += rw
                v[j] += rw * pj
            elif pj != 0.0:
                for i in range(f):
                    v[i] += row[i] * pj
        s = 0.0
        q = 0.0
        for i in range(f):
            q += phi[i] * v[i]
            s += phi[i] * mu[m, i]
        mean[m] = s
        var[m] = q + var_eps[m]


@numba.njit(cache=True, fastmath=False)
def update_means(F, mu, V, mean, var, y, active, loglik, inv_sp, pend):
    """Fold ``y`` into the mean of every active member and write its log-likelihood; record the
    covariance update it owes (``pend``, ``inv_sp``; the caller keeps ``V`` as ``Vp``).

    Inactive members are left as they are and get ``loglik = -inf``.
    """
    M = mu.shape[0]
    for m in range(M):
        if not active[m]:
            loglik[m] = -np.inf
            continue
        f = F[m]
        s = var[m]
        r = y - mean[m]
        loglik[m] = -0.5 * (LOG_2PI + math.log(s) + r * r / s)
        g = r / s
        for i in range(f):
            mu[m, i] += V[m, i] * g
        inv_sp[m] = 1.0 / s
        pend[m] = True


@numba.njit(cache=True, fastmath=False)
def flush_stack(F, Sigma, var_rw, Vp, inv_sp, pend):
    """Apply every owed covariance update ``Sigma += var_rw I - Vp Vp' inv_sp``."""
    M = Sigma.shape[0]
    for m in range(M):
        if not pend[m]:
            continue
        pend[m] = False
        f = F[m]
        c = inv_sp[m]
        rw = var_rw[m]
        for j in range(f):
            row = Sigma[m, j]
            vj = Vp[m, j]
            for i in range(f):
                row[i] -= (vj * Vp[m, i]) * c
            row[j] += rw


@numba.njit(cache=True)
def switch_log_weights(log_w, indptr, indices, log_q, out):
    """``out[j] = logsumexp_i(log_w[i] + log_q)`` over the stored entries ``(i, j)`` of ``Q``."""
    M = log_w.shape[0]
    for j in range(M):
        hi = -np.inf
        for p in range(indptr[j], indptr[j + 1]):
            t = log_w[indices[p]] + log_q[p]
            if t > hi:
                hi = t
        if hi == -np.inf:
            out[j] = -np.inf
            continue
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            t = log_w[indices[p]] + log_q[p]
            if t > -np.inf:
                acc += math.exp(t - hi)
        out[j] = hi + math.log(acc)


@numba.njit(cache=True)
def bma_log_weights(log_prior, loglik, log_floor, out):
    """Posterior log weights ``log_prior + loglik``, renormalised; below ``log_floor`` -> -inf.

    Returns the log predictive density of the mixture, ``logsumexp(log_prior + loglik)``.
    """
    M = log_prior.shape[0]
    hi = -np.inf
    for m in range(M):
        t = log_prior[m] + loglik[m]
        out[m] = t
        if t > hi:
            hi = t
    if hi == -np.inf:
        # every member gave zero likelihood: keep the prior (nothing can be learnt from y)
        for m in range(M):
            out[m] = log_prior[m]
        return -np.inf
    acc = 0.0
    for m in range(M):
        if out[m] > -np.inf:
            acc += math.exp(out[m] - hi)
    lse = hi + math.log(acc)
    for m in range(M):
        out[m] -= lse
    if log_floor > -np.inf:
        # zero the weights below the floor, then renormalise the survivors
        hi2 = -np.inf
        for m in range(M):
            if out[m] < log_floor:
                out[m] = -np.inf
            elif out[m] > hi2:
                hi2 = out[m]
        acc = 0.0
        for m in range(M):
            if out[m] > -np.inf:
                acc += math.exp(out[m] - hi2)
        lse2 = hi2 + math.log(acc)
        for m in range(M):
            out[m] -= lse2
    return lse


@numba.njit(cache=True)
def mixture_moments(log_w, mean, var):
    """Moment-matched mixture: ``(sum w m, sum w (v + (m - mean)^2))`` over members with w > 0."""
    M = log_w.shape[0]
    hi = -np.inf
    for m in range(M):
        if log_w[m] > hi:
            hi = log_w[m]
    tot = 0.0
    mu = 0.0
    for m in range(M):
        if log_w[m] > -np.inf:
            w = math.exp(log_w[m] - hi)
            tot += w
            mu += w * mean[m]
    mu /= tot
    v = 0.0
    for m in range(M):
        if log_w[m] > -np.inf:
            w = math.exp(log_w[m] - hi) / tot
            d = mean[m] - mu
            v += w * (var[m] + d * d)
    return mu, v


@numba.njit(cache=True)
def mixture_log_density(log_w, mean, var, y):
    """Exact log density of ``y`` under the Gaussian mixture ``sum_m w_m N(mean_m, var_m)``."""
    M = log_w.shape[0]
    hi = -np.inf
    terms = np.empty(M)
    for m in range(M):
        if log_w[m] > -np.inf:
            r = y - mean[m]
            terms[m] = log_w[m] - 0.5 * (LOG_2PI + math.log(var[m]) + r * r / var[m])
        else:
            terms[m] = -np.inf
        if terms[m] > hi:
            hi = terms[m]
    if hi == -np.inf:
        return -np.inf
    acc = 0.0
    for m in range(M):
        if terms[m] > -np.inf:
            acc += math.exp(terms[m] - hi)
    # log_w may be unnormalised: subtract its own logsumexp
    hw = -np.inf
    for m in range(M):
        if log_w[m] > hw:
            hw = log_w[m]
    accw = 0.0
    for m in range(M):
        if log_w[m] > -np.inf:
            accw += math.exp(log_w[m] - hw)
    return hi + math.log(acc) - (hw + math.log(accw))
