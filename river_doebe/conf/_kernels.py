"""The recalibration's arithmetic, compiled (Numba, cached like the package's kernels): the
probability integral transform and log density of a target under a Gaussian mixture, and the
whole update of :class:`~river_doebe.conf.Recalibrated`'s state from one target, which also
makes the knots of the map for the next prediction. In Python the update was a few dozen
small operations on lists and NumPy arrays a sample, most of the wrapper's time
(benchmarks/results/calibration_wrapper.json). The per-sample path and the block path both call
:func:`update_affine` (through :func:`update` for a distribution in the target's units; with a
model's standardised members and its scale and shift for the arrays a point prediction of this
package's ensembles gives), so they do the same arithmetic in the same order.

The state is one float64 vector (:func:`new_state` lays it out):

- ``alpha``, ``beta``: the adaptive conformal step's miscoverage level and the share of the
  misses put below; the counts of updates and of updates made with ``alpha`` outside ``(0, 1)``;
- the correction in use for the next prediction, and its location and scale;
- the random walk's last standardised residual and the weighted mean of its squared steps;
- the shape knots' levels of ``F'``, one per entry of ``levels``;
- one exponentially weighted mean and variance of the standardised residuals per window;
- the recent mean log scores (the unmoved predictive first, one per window, the random walk
  last);
- the gate's block (see ``G_OPEN``) and the gate's mean map's knots.
"""

from __future__ import annotations

import math

import numpy as np

from river_doebe.kernels.jit import kernel

__all__ = ["mixture_pit", "new_state", "knots", "scaled_mixture_pit", "update", "update_affine"]

_SQRT_HALF = math.sqrt(0.5)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

# the state's fixed slots
ALPHA, BETA, N_UPDATES, N_OUTSIDE, CORR, CLOC, CSCALE, LAST, STEP2 = range(9)
FIXED = 9

# the settings' slots (the last three are set from the module's constants below; the benchmarks
# set them otherwise to measure the choices)
S_LEVEL, S_STEP, S_LEVEL_STEP, S_RHO_SCORE, S_MARGIN, S_GATE = range(6)
S_EARLY, S_LEVEL_EARLY, S_GATE_AVERAGE = range(6, 9)
N_SETTINGS = 9

#: the early steps: the conformal step at the ``t``-th target learnt is ``max(step, EARLY_STEP /
#: sqrt(t))`` and the shape knots' ``max(level_step, EARLY_LEVEL_STEP / sqrt(t))`` (Angelopoulos,
#: Barber & Bates, 2024: steps that decay to the constant one). A short stream, or a model
#: far off at the start, is recalibrated within tens of targets instead of hundreds; the
#: guarantee stays of order ``1 / T`` (see :class:`~river_doebe.conf.Recalibrated`)
EARLY_STEP = 0.3
EARLY_LEVEL_STEP = 0.3

# the gate's block, last in the state: whether it is open, which map is in use while it is open
# (0: the learnt map, 1: the mean map), the targets it has seen, the targets learnt while the
# distribution was not the conformal map; then the shares of its events over each window; then
# the mean map's knots
G_OPEN, G_SLOW, G_N, G_CLOSED = range(4)
G_OWN, G_MEAN = 0.0, 1.0
#: the gate's windows (effective lengths), and by how many standard deviations under uniform
#: PITs a share must depart from its probability over each to open it: the short windows see
#: a shift within tens of samples, the long one a small, lasting miscalibration (and, by
#: themselves, many looks at a calibrated stream must rarely open it: hence the high bars)
GATE_WINDOWS = np.array([100.0, 1000.0, 4000.0])
GATE_Z_OPEN = np.array([4.5, 3.5, 3.0])
#: it closes when every share of every window is back within this many standard deviations
GATE_Z_CLOSE = 2.5
#: a share counts only once the targets its window weighs are enough for its normal
#: approximation: their effective number (``(sum w)^2 / sum w^2`` of the window's weights, 1 after
#: one target) times the probability of the event, or of its complement, at least this (the usual
#: rule for a binomial's). Otherwise one target beyond the 5% or 95% quantile, the map's first,
#: stood 4.4 standard deviations from its probability whatever the window and opened the gate
#: (one time in ten for a calibrated model): the shares of the tails count from about 100
#: targets on, the median's from 10 (benchmarks/results/warmup_calibration.md)
GATE_MIN_EXPECTED = 5.0
#: the events: the PIT below 0.05, 0.25, 0.5, 0.75, 0.95, inside (0.25, 0.75] and (0.05, 0.95];
#: their probabilities under uniform PITs
GATE_P = np.array([0.05, 0.25, 0.5, 0.75, 0.95, 0.5, 0.9])
#: the window of the mean of the learnt maps used while only the longest window finds a
#: departure (a small one: a map that moves with every step would cost more than it corrects;
#: over 1,000 targets the mean still cost a calibrated stream CRPS, over 4,000 it does not:
#: benchmarks/results/calibration_replay.md)
GATE_AVERAGE = 4000.0
# (two online choices by the maps' recent CRPS were measured and left out: the gate's score of
# the mean map and of the learnt map against the wrapped predictive's followed noise;
# benchmarks/results/calibration_replay.md, gate-mean-score-1000 and gate-own-score-100)
# the gate's block: G_OPEN .. G_CLOSED, then the shares of the 7 events over the 3 windows
GATE_SIZE = 4 + 3 * 7

#: a sample costs a correction at most this many nats more than the best one, in the recent
#: mean log scores: one wild target must not decide for hundreds of samples
SCORE_CAP = 30.0

def new_state(confidence_level: float, levels, n_windows: int) -> np.ndarray:
    """The state before any update (the gate's mean map is set by the caller, to the first
    knots)."""
    k, w = len(levels), n_windows
    state = np.zeros(FIXED + k + 2 * w + (w + 2 if w else 1) + GATE_SIZE + k + 4)
    gate = state.shape[0] - GATE_SIZE - (k + 4)
    state[gate + 4:gate + GATE_SIZE] = np.tile(GATE_P, 3)
    state[ALPHA] = 1.0 - confidence_level
    state[BETA] = 0.5
    state[CSCALE] = 1.0
    state[STEP2] = 2.0
    state[FIXED:FIXED + k] = levels  # the shape knots start at the identity
    state[FIXED + k + w:FIXED + k + 2 * w] = 1.0  # the windows' variances
    return state


@kernel()
def mixture_pit(weights, means, variances, y):
    """``(F(y), 1 - F(y), log f(y))`` of the mixture ``sum_k w_k N(means_k, variances_k)``,
    the log density by log-sum-exp (a component of weight 0 adds nothing)."""
    return scaled_mixture_pit(weights, means, variances, 1.0, 0.0, y)


@kernel(allocates=True)
def scaled_mixture_pit(weights, means, variances, scale, shift, y):
    """``(F(y), 1 - F(y), log f(y))`` of the mixture ``sum_k w_k N(scale means_k + shift,
    scale^2 variances_k)``: a model's mixture in its standardised units, mapped back to the
    target's with the arithmetic of
    :meth:`river_doebe.warmup.standardise.Standardizer.y_back` (``scale = 1, shift = 0``
    changes no bit). A component of weight 0 is skipped: it adds nothing, and it may be a
    slot that no prediction filled."""
    n = weights.shape[0]
    f = 0.0
    sf = 0.0
    terms = np.empty(n)
    top = -np.inf
    s2 = scale * scale
    for k in range(n):
        if not weights[k] > 0.0:
            terms[k] = -np.inf
            continue
        var = variances[k] * s2
        r = y - (means[k] * scale + shift)
        z = r / math.sqrt(var)
        f += weights[k] * (0.5 * math.erfc(-z * _SQRT_HALF))
        sf += weights[k] * (0.5 * math.erfc(z * _SQRT_HALF))
        t = (math.log(weights[k]) - 0.5 * r * r / var - 0.5 * math.log(var) - _HALF_LOG_2PI)
        terms[k] = t
        if t > top:
            top = t
    if not math.isfinite(top):
        return f, sf, top
    acc = 0.0
    for k in range(n):
        acc += math.exp(terms[k] - top)
    return f, sf, top + math.log(acc)


@kernel()
def _interp(x, xp, fp):
    """``np.interp(x, xp, fp)`` for one number, the same arithmetic (the recalibrated
    distribution maps its CDF with NumPy's: the coverage event counted here is the one the
    metrics see)."""
    n = xp.shape[0]
    if x > xp[n - 1]:
        return fp[n - 1]
    if x < xp[0]:
        return fp[0]
    lo, hi = 0, n - 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if xp[mid] <= x:
            lo = mid
        else:
            hi = mid
    if xp[hi] <= x:
        lo = hi
    if lo == n - 1:
        return fp[n - 1]
    if xp[lo] == x:
        return fp[lo]
    slope = (fp[lo + 1] - fp[lo]) / (xp[lo + 1] - xp[lo])
    out = slope * (x - xp[lo]) + fp[lo]
    if math.isnan(out):
        out = slope * (x - xp[lo + 1]) + fp[lo + 1]
        if math.isnan(out) and fp[lo] == fp[lo + 1]:
            out = fp[lo]
    return out


@kernel(no_cpython_wrapper=True)
def _location_scale(state, n_levels, n_windows, k):
    """The correction ``k``'s location and scale, in standardised residuals (0: the unmoved
    predictive; 1 .. ``n_windows`` the windows'; ``n_windows + 1`` the random walk)."""
    if k == 0:
        return 0.0, 1.0
    if k <= n_windows:
        loc = state[FIXED + n_levels + k - 1]
        scale = math.sqrt(state[FIXED + n_levels + n_windows + k - 1])
    else:
        loc = state[LAST]
        scale = math.sqrt(0.5 * state[STEP2])
    return loc, min(max(scale, 1e-8), 1e8)


@kernel(no_cpython_wrapper=True)
def _choose_correction(state, settings, n_levels, n_windows):
    """Which predictive the next prediction uses, and its location and scale, into the
    state: the best correction by recent mean log score when it beats the unmoved predictive's
    by ``margin`` nats a sample, else the unmoved one."""
    k = 0
    if n_windows > 0:
        base = FIXED + n_levels + 2 * n_windows
        best = 1
        for j in range(2, n_windows + 2):
            if state[base + j] > state[base + best]:
                best = j
        if state[base + best] - state[base] > settings[S_MARGIN]:
            k = best
    loc, scale = _location_scale(state, n_levels, n_windows, k)
    state[CORR] = k
    state[CLOC] = loc
    state[CSCALE] = scale


@kernel(allocates=True)
def knots(state, settings, shape_p, segment):
    """The knots of the map for the next prediction on ``F'``'s levels, a fresh array (their
    images are fixed: 0, the levels and the interval's levels in order, 1).

    They are 0, the shape knots below the interval, the interval's lower end ``alpha *
    beta`` (``alpha`` held in ``[1e-6, 1 - 1e-6]``), the shape knots inside, its upper end ``1 -
    alpha (1 - beta)``, the shape knots above, 1; each shape knot inside its segment by a
    millionth of it, in order, strictly increasing."""
    K = shape_p.shape[0]
    n = K + 4
    a = min(max(state[ALPHA], 1e-6), 1.0 - 1e-6)
    beta = state[BETA]
    lo = a * beta
    hi = 1.0 - a * (1.0 - beta)
    ku = np.empty(n)
    ku[0] = 0.0
    ku[n - 1] = 1.0
    running = -np.inf
    i = 1
    placed_lo = False
    placed_hi = False
    for j in range(K):
        seg = segment[j]
        if seg >= 1 and not placed_lo:
            ku[i] = lo
            i += 1
            placed_lo = True
        if seg >= 2 and not placed_hi:
            ku[i] = hi
            i += 1
            placed_hi = True
        if seg == 0:
            left, right = 0.0, lo
        elif seg == 1:
            left, right = lo, hi
        else:
            left, right = hi, 1.0
        width = right - left
        v = min(max(state[FIXED + j], left + 1e-6 * width), right - 1e-6 * width)
        running = max(running, v)
        ku[i] = running + 1e-9 * width * j
        i += 1
    if not placed_lo:
        ku[i] = lo
        i += 1
    if not placed_hi:
        ku[i] = hi
        i += 1
    return ku


@kernel(allocates=True)
def update(state, settings, shape_p, segment, rho, ku, kp, weights, means, variances, mu, sigma,
           y):
    """:func:`update_affine` of a mixture given in the target's units (``scale = 1, shift =
    0``)."""
    return update_affine(state, settings, shape_p, segment, rho, ku, kp, weights, means,
                         variances, 1.0, 0.0, mu, sigma, y)


@kernel(allocates=True)
def update_affine(state, settings, shape_p, segment, rho, ku, kp, weights, means, variances,
                  scale, shift, mu, sigma, y):
    """Learn one target ``y`` from the prediction made before it was seen: the wrapped
    predictive (the mixture ``weights, means, variances`` mapped by ``scale`` and ``shift`` as
    :func:`scaled_mixture_pit` says, of mean ``mu`` and standard deviation ``sigma``) and the
    map ``(ku, kp)`` it was given. Returns the knots on ``F'``'s levels for the next
    prediction."""
    K = shape_p.shape[0]
    W = rho.shape[0]
    c = settings[S_LEVEL]
    # the steps for the t-th target learnt: non-increasing in t, the constant ones from
    # (EARLY_STEP / step)^2 targets on
    root_t = math.sqrt(state[N_UPDATES] + 1.0)
    step = max(settings[S_STEP], settings[S_EARLY] / root_t)
    p_lo = 0.5 * (1.0 - c)
    p_hi = 0.5 * (1.0 + c)
    # the PIT under F': the wrapped predictive's, or the correction's Gaussian in use
    f, sf, log_f = scaled_mixture_pit(weights, means, variances, scale, shift, y)
    f_wrapped = f
    k = int(state[CORR])
    if k != 0:
        sd = sigma * state[CSCALE]
        if 0.0 < sd * sd < np.inf:
            zc = (y - (mu + sigma * state[CLOC])) / sd
            f = 0.5 * math.erfc(-zc * _SQRT_HALF)
            sf = 0.5 * math.erfc(zc * _SQRT_HALF)
    n = ku.shape[0]
    ku_up = np.empty(n)
    kp_up = np.empty(n)
    for i in range(n):
        ku_up[i] = 1.0 - ku[n - 1 - i]
        kp_up[i] = 1.0 - kp[n - 1 - i]
    below_p = _interp(f, ku, kp)
    above_p = _interp(sf, ku_up, kp_up)
    # the event the metrics count: inside when G(y) >= p_lo and 1 - G(y) >= 1 - p_hi
    below = below_p < p_lo
    above = above_p < 1.0 - p_hi
    alpha = state[ALPHA]
    if alpha <= 0.0:
        err = 0.0
    elif alpha >= 1.0:
        err = 1.0
    else:
        err = 1.0 if (below or above) else 0.0
    if not (0.0 < alpha < 1.0):
        state[N_OUTSIDE] += 1.0
    state[ALPHA] = alpha + step * ((1.0 - c) - err)
    if err != 0.0:
        beta = state[BETA] + step * (0.5 - (1.0 if below else 0.0))
        state[BETA] = min(max(beta, 0.05), 0.95)
    # the shape knots: one-sided conformal steps on F'_t's level (the map sends the knot's
    # level to p exactly: G(y) <= p is f <= the knot)
    if K > 0:
        ls = max(settings[S_LEVEL_STEP], settings[S_LEVEL_EARLY] / root_t)
        for j in range(K):
            idx = 1 + j + segment[j]
            hit = 1.0 if f <= ku[idx] else 0.0
            v = state[FIXED + j] + ls * (shape_p[j] - hit)
            state[FIXED + j] = min(max(v, 0.0), 1.0)
    if W > 0:
        _learn_corrections(state, settings, rho, K, W, mu, sigma, y, log_f)
    _choose_correction(state, settings, K, W)
    state[N_UPDATES] += 1.0
    ku_next = knots(state, settings, shape_p, segment)
    if settings[S_GATE] != 0.0:
        _gate(state, settings, f_wrapped, ku_next)
    return ku_next


@kernel(no_cpython_wrapper=True)
def _gate(state, settings, f, ku):
    """The gate's statistics from the wrapped predictive's PIT ``f`` of the target, the mean
    map from the knots ``ku`` for the next prediction, and the gate's state for it."""
    n_knots = ku.shape[0]
    gb = state.shape[0] - GATE_SIZE - n_knots
    mean = gb + GATE_SIZE
    # how the prediction of this target was made: the count of the distribution's bound
    if state[gb + G_OPEN] == 0.0 or state[gb + G_SLOW] != G_OWN:
        state[gb + G_CLOSED] += 1.0
    n = state[gb + G_N] + 1.0
    state[gb + G_N] = n
    departs = False
    fast = False
    inside = True
    for i in range(GATE_WINDOWS.shape[0]):
        rho = 1.0 - 1.0 / GATE_WINDOWS[i]
        # the variance of an exponentially weighted share of n draws, started at its mean
        spread = (1.0 - rho) * (1.0 - rho ** (2.0 * n)) / (1.0 + rho)
        top = 0.0
        # the window's effective number of targets, times the spread: ``(1 - rho^n)^2`` (a
        # product: Numba compiles ``** 2`` so, but Python calls ``pow``, whose last bit differs
        # now and then, and the Python twin must give the kernel's bits)
        filled = 1.0 - rho ** n
        weighed = filled * filled
        for j in range(GATE_P.shape[0]):
            q = GATE_P[j]
            if j < 5:
                hit = 1.0 if f <= q else 0.0
            elif j == 5:
                hit = 1.0 if 0.25 < f <= 0.75 else 0.0
            else:
                hit = 1.0 if 0.05 < f <= 0.95 else 0.0
            at = gb + 4 + i * GATE_P.shape[0] + j
            h = rho * state[at] + (1.0 - rho) * hit
            state[at] = h
            if min(q, 1.0 - q) * weighed >= GATE_MIN_EXPECTED * spread:
                top = max(top, abs(h - q) / math.sqrt(q * (1.0 - q) * spread))
        if top > GATE_Z_OPEN[i]:
            departs = True
            if i < GATE_WINDOWS.shape[0] - 1:
                fast = True
        if top > GATE_Z_CLOSE:
            inside = False
    r = 1.0 - 1.0 / settings[S_GATE_AVERAGE]
    for j in range(1, n_knots - 1):  # (the ends stay 0 and 1 exactly)
        state[mean + j] = r * state[mean + j] + (1.0 - r) * ku[j]
    if state[gb + G_OPEN] != 0.0:
        state[gb + G_OPEN] = 0.0 if inside else 1.0
    else:
        state[gb + G_OPEN] = 1.0 if departs else 0.0
    state[gb + G_SLOW] = G_OWN if fast else G_MEAN


@kernel(allocates=True, no_cpython_wrapper=True)
def _learn_corrections(state, settings, rho, K, W, mu, sigma, y, log_f):
    z = (y - mu) / sigma
    if not (math.isfinite(z) and abs(z) < 1e150):
        return
    base = FIXED + K
    sb = base + 2 * W
    # the log density of y under the wrapped predictive and under each correction's Gaussian
    # (in the standardised units), before they learn y
    logs = np.empty(W + 2)
    logs[0] = log_f + math.log(sigma)
    for j in range(1, W + 2):
        loc, scale = _location_scale(state, K, W, j)
        r = (z - loc) / scale
        logs[j] = -0.5 * r * r - math.log(scale) - _HALF_LOG_2PI
    top = logs[0]
    for j in range(1, W + 2):
        if logs[j] > top:
            top = logs[j]
    floor = top - SCORE_CAP
    rs = settings[S_RHO_SCORE]
    for j in range(W + 2):
        state[sb + j] = rs * state[sb + j] + (1.0 - rs) * max(logs[j], floor)
    # the statistics learn residuals clipped at 5 of their standard deviations (Huber's
    # winsorising): one wild target widens them by a factor, not by its square, and a lasting
    # shift is followed in steps that grow geometrically
    for j in range(W):
        r = rho[j]
        var = state[base + W + j]
        bound = 5.0 * math.sqrt(var)
        d = min(max(z - state[base + j], -bound), bound)
        state[base + j] += (1.0 - r) * d
        state[base + W + j] = min(max(r * (var + (1.0 - r) * d * d), 1e-16), 1e16)
    bound = 5.0 * math.sqrt(state[STEP2])
    jump = min(max(z - state[LAST], -bound), bound)
    state[STEP2] = min(max(rs * state[STEP2] + (1.0 - rs) * jump * jump, 1e-16), 1e16)
    state[LAST] = z
