"""The recalibration's one costly step per sample, compiled: the probability integral transform
and the log density of a target under a Gaussian mixture (Numba, cached like the package's
kernels). In NumPy it was a dozen array operations over the mixture's components, most of the
wrapper's time per sample (benchmarks/results/calibration.md)."""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["mixture_pit"]

_SQRT_HALF = math.sqrt(0.5)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(cache=True)
def mixture_pit(weights, means, variances, y):
    """``(F(y), 1 - F(y), log f(y))`` of the mixture ``sum_k w_k N(means_k, variances_k)``,
    the log density by log-sum-exp (a component of weight 0 adds nothing)."""
    n = weights.shape[0]
    f = 0.0
    sf = 0.0
    terms = np.empty(n)
    top = -np.inf
    for k in range(n):
        r = y - means[k]
        z = r / math.sqrt(variances[k])
        f += weights[k] * (0.5 * math.erfc(-z * _SQRT_HALF))
        sf += weights[k] * (0.5 * math.erfc(z * _SQRT_HALF))
        if weights[k] > 0.0:
            t = (math.log(weights[k]) - 0.5 * r * r / variances[k]
                 - 0.5 * math.log(variances[k]) - _HALF_LOG_2PI)
        else:
            t = -np.inf
        terms[k] = t
        if t > top:
            top = t
    if not math.isfinite(top):
        return f, sf, top
    acc = 0.0
    for k in range(n):
        acc += math.exp(terms[k] - top)
    return f, sf, top + math.log(acc)
