"""The ensemble weights, kept as logs, and the predictive mixture they define. Numba.

A switching step (paper Eq. 8) with a row-stochastic ``Q`` stored sparse in compressed-column form
computes ``log w_new[j] = logsumexp_i(log w[i] + log Q[i, j])`` exactly in the log domain; a BMA
step (paper Sec. 3.1) adds every member's log-likelihood, renormalises and zeroes the weights
below a floor. The mixture helpers give its moments and its exact log density.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from river_doebe.kernels.gaussian import LOG_2PI

__all__ = [
    "bma_log_weights",
    "log_max",
    "mixture_log_density",
    "mixture_moments",
    "switch_log_weights",
]


@numba.njit(cache=True, inline="always")
def log_max(log_w):
    """The largest log weight (``-inf`` when every weight is 0): the shift of a stable sum."""
    hi = -np.inf
    for m in range(log_w.shape[0]):
        if log_w[m] > hi:
            hi = log_w[m]
    return hi


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
    hi = log_max(log_w)
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
    hw = log_max(log_w)
    accw = 0.0
    for m in range(M):
        if log_w[m] > -np.inf:
            accw += math.exp(log_w[m] - hw)
    return hi + math.log(acc) - (hw + math.log(accw))
