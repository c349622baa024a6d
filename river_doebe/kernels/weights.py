"""The ensemble weights, kept as logs, and the predictive mixture they define. Numba.

A switching step (paper Eq. 8) with a row-stochastic ``Q`` stored sparse in compressed-column form
computes ``log w_new[j] = logsumexp_i(log w[i] + log Q[i, j])`` exactly in the log domain; a BMA
step (paper Sec. 3.1) adds every member's log-likelihood, renormalises and zeroes the weights
below a floor; the Soft-Bayes step of online stacking moves them only part of the way, and a fixed
share mixes them with the uniform. The mixture helpers give its moments and its exact log density.
"""

from __future__ import annotations

import math

import numpy as np

from river_doebe.kernels.gaussian import LOG_2PI
from river_doebe.kernels.jit import kernel

__all__ = [
    "log_max",
    "mixture_log_density",
    "mixture_moments",
    "mixture_proba",
    "share_log_weights",
    "sigmoid",
    "switch_log_weights",
    "update_log_weights",
    "weigh_block",
]


@kernel(inline="always")
def log_max(log_w):
    """The largest log weight (``-inf`` when every weight is 0): the shift of a stable sum."""
    hi = -np.inf
    for m in range(log_w.shape[0]):
        if log_w[m] > hi:
            hi = log_w[m]
    return hi


@kernel()
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


@kernel()
def update_log_weights(log_prior, loglik, log_rate, log_keep, log_floor, out):
    """The weights after a target: Bayes' rule, or the Soft-Bayes step of online stacking.

    With ``r_m = p_m(y) / sum_k w_k p_k(y)`` (each member's density over the mixture's), the
    Soft-Bayes step (Orseau, Lattimore and Legg 2017) of rate ``eta`` is
    ``w_m <- w_m (1 - eta + eta r_m)``, here in the log domain with ``log_rate = log(eta)`` and
    ``log_keep = log(1 - eta)``; it sums to one by construction (``sum_m w_m r_m = 1``) and is
    renormalised only against rounding. ``eta = 1`` (``log_keep = -inf``) is Bayes' rule, the
    model-averaging step, computed as such (bit for bit the same numbers). Weights below
    ``log_floor`` are then zeroed, except the largest (a floor above every weight would zero
    them all), and the survivors renormalised.

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
    if log_keep == -np.inf:
        for m in range(M):
            out[m] -= lse
    else:
        for m in range(M):
            if log_prior[m] == -np.inf:
                out[m] = -np.inf
            else:
                # log(1 - eta + eta r_m): w_m r_m <= 1, so this never overflows
                out[m] = log_prior[m] + _logaddexp(log_keep, log_rate + loglik[m] - lse)
        _normalise(out)
    if log_floor > -np.inf:
        # zero the weights below the floor, then renormalise the survivors; the largest weight
        # is never below all the others, so a floor above every weight (above 1 / M while the
        # weights are uniform) keeps the leaders instead of emptying the ensemble
        top = -np.inf
        for m in range(M):
            if out[m] > top:
                top = out[m]
        for m in range(M):
            if out[m] < log_floor and out[m] < top:
                out[m] = -np.inf
        _normalise(out)
    return lse


@kernel(inline="always")
def _logaddexp(a, b):
    """``log(exp(a) + exp(b))`` for ``a > -inf``."""
    if b == -np.inf:
        return a
    if a >= b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@kernel(inline="always")
def _normalise(log_w):
    """Subtract ``logsumexp(log_w)`` (at least one weight is positive)."""
    hi = log_max(log_w)
    acc = 0.0
    for m in range(log_w.shape[0]):
        if log_w[m] > -np.inf:
            acc += math.exp(log_w[m] - hi)
    lse = hi + math.log(acc)
    for m in range(log_w.shape[0]):
        log_w[m] -= lse


@kernel()
def share_log_weights(log_w, log_keep, log_each):
    """Fixed share in place: ``w_m <- (1 - alpha) w_m + alpha / M`` with ``log_keep =
    log(1 - alpha)`` and ``log_each = log(alpha / M)`` (Herbster and Warmuth 1998), so that no
    weight falls below ``alpha / M`` and a member that turned bad can lead again."""
    for m in range(log_w.shape[0]):
        log_w[m] = _logaddexp(log_each, log_keep + log_w[m])


@kernel()
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


@kernel(allocates=True)
def mixture_log_density(log_w, mean, var, y):
    """Exact log density of ``y`` under the Gaussian mixture ``sum_m w_m N(mean_m, var_m)``."""
    M = log_w.shape[0]
    hi = -np.inf
    terms = np.empty(M)
    for m in range(M):
        if log_w[m] > -np.inf:
            r = y - mean[m]
            q = r * r / var[m]
            if q == np.inf:  # (r * r beyond float64, in units of the variance maybe not)
                z = r / math.sqrt(var[m])
                q = z * z
            terms[m] = log_w[m] - 0.5 * (LOG_2PI + math.log(var[m]) + q)
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


@kernel()
def mixture_proba(log_w, logit):
    """``(p0, p1)``: the weighted mixture of the members' probit predictives.

    ``p1 = sum_m w_m sigmoid(logit[m])`` and ``p0 = sum_m w_m sigmoid(-logit[m])`` over members
    with ``w_m > 0`` (the weights need not be normalised); both are computed directly, so a
    probability close to 0 keeps its relative precision, and they are renormalised to sum to 1.
    """
    M = log_w.shape[0]
    hi = log_max(log_w)
    p0 = 0.0
    p1 = 0.0
    for m in range(M):
        if log_w[m] > -np.inf:
            w = math.exp(log_w[m] - hi)
            p1 += w * sigmoid(logit[m])
            p0 += w * sigmoid(-logit[m])
    s = p0 + p1
    return p0 / s, p1 / s


@kernel(inline="always")
def sigmoid(x):
    """``1 / (1 + exp(-x))`` without overflow."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@kernel()
def weigh_block(log_w, new_log_w, log_prior, switching, indptr, indices, log_q, log_floor,
                log_rate, log_keep, share_keep, share_each, mean_b, var_b, logit_b, loglik_b,
                pred_a, pred_b, prior_out, log_evidence):
    """The weights' part of a block of rows, row after row, as the per-sample steps do it.

    Before row ``t``: switch the weights (or copy them) into ``log_prior``, then the fixed share
    (when ``share_each > -inf``); the prediction for
    the row is the mixture of the members' predictives under those weights, ``(mean, var)`` in
    ``pred_a[t], pred_b[t]`` (a classifier, which passes the logits ``logit_b``: ``(p0, p1)``;
    a regressor passes ``None``, and its compile leaves the classifier's mixture out, as Numba
    prunes a branch on an argument that is ``None``); ``prior_out[t]`` keeps
    the weights (when it has rows). Then the weight step with the row's log-likelihoods (Bayes'
    rule, or Soft-Bayes of rate ``exp(log_rate)``, see :func:`update_log_weights`). Returns the
    log evidence, ``log_evidence`` plus the block's.
    """
    B, M = mean_b.shape
    for t in range(B):
        if M > 1:
            if switching:
                switch_log_weights(log_w, indptr, indices, log_q, log_prior)
            else:
                for m in range(M):
                    log_prior[m] = log_w[m]
            if share_each > -np.inf:
                share_log_weights(log_prior, share_keep, share_each)
        if logit_b is not None:
            pred_a[t], pred_b[t] = mixture_proba(log_prior, logit_b[t])
        elif M > 1:
            pred_a[t], pred_b[t] = mixture_moments(log_prior, mean_b[t], var_b[t])
        else:
            pred_a[t], pred_b[t] = mean_b[t, 0], var_b[t, 0]
        if prior_out.shape[0]:
            for m in range(M):
                prior_out[t, m] = log_prior[m]
        if M > 1:
            log_evidence += update_log_weights(log_prior, loglik_b[t], log_rate, log_keep,
                                               log_floor, new_log_w)
            for m in range(M):
                log_w[m] = new_log_w[m]
        else:
            log_evidence += loglik_b[t, 0]
    return log_evidence
