"""Calibration of a predictive distribution at one target: central-interval coverage and the CRPS.

A predictive distribution is calibrated when its stated probabilities come true: the targets fall
in its central 90% interval 90% of the time. Two scores measure it, sample by sample, for the
predictives of this package (a Gaussian, or an ensemble's mixture of Gaussians) in closed form:

- :func:`in_central_interval`: whether ``y`` lies in the central ``level`` interval of the
  predictive, read from its CDF (no quantile is computed);
- :func:`crps`: the continuous ranked probability score ``int (F(z) - 1[z >= y])^2 dz``, a proper
  scoring rule in the target's units (Gneiting & Raftery, 2007), lower is better.

The metrics :class:`river_doebe.metrics.IntervalCoverage` and :class:`river_doebe.metrics.CRPS`
average them over a stream. A prediction is read as the PLL reads it: an object with
``weights``, ``means`` and ``variances`` (:class:`~river_doebe.distributions.GaussianMixture`), one
with ``mu`` and ``sigma`` (``river.proba.Gaussian``), or a Gaussian's ``(mean, variance)`` tuple;
:func:`in_central_interval` also takes any object with a ``cdf`` method. A distribution known by
its CDF and quantile function (an object, other than a river Gaussian, with vectorised ``cdf``
and ``quantile`` methods, such as :class:`river_doebe.conf.RecalibratedDistribution`) is read
through them: its coverage from its CDF (and its ``sf``, if it has one), its CRPS by quadrature
of the CDF between its quantiles (:func:`crps_from_cdf`). A number is refused with a
``TypeError`` that says how to get the distribution.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from river import proba
from scipy.special import erf, ndtr

__all__ = ["cdf_sf", "crps", "crps_from_cdf", "crps_gaussian", "crps_mixture",
           "in_central_interval"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


def refuse_number(who: str, y_pred: Any) -> TypeError:
    """The error for a point prediction given to a metric that needs the distribution."""
    return TypeError(
        f"{who} needs a predictive distribution, got the number {y_pred!r}. Call "
        "`model.predict_one(x, with_dist=True)`, wrap the model in "
        "`river_doebe.evaluate.WithDist` for `evaluate.progressive_val_score`, or use "
        "`river_doebe.evaluate.progressive_scores`."
    )


def _by_its_cdf(y_pred: Any) -> bool:
    """Whether ``y_pred`` is a distribution known by its (vectorised) CDF and quantile function,
    to be read through them rather than through its ``mu`` and ``sigma``."""
    return (callable(getattr(y_pred, "quantile", None)) and callable(getattr(y_pred, "cdf", None))
            and not isinstance(y_pred, proba.Gaussian))


def _unmapped(y_pred: Any) -> Any:
    """The distribution that ``y_pred`` maps, when its map is the identity (a recalibrated
    distribution, :class:`river_doebe.conf.RecalibratedDistribution`, whose knots are their own
    images: ``EDOEBE()``'s while its recalibration's gate is closed), else ``None``."""
    ku, kp = getattr(y_pred, "knots_u", None), getattr(y_pred, "knots_p", None)
    base = getattr(y_pred, "base", None)
    if base is None or ku is None or kp is None or not np.array_equal(ku, kp):
        return None
    return base


def _read(
    y_pred: Any, who: str
) -> tuple[float, float] | tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(mu, sd)`` of a Gaussian, ``(weights, means, sds)`` of a mixture (its positive-weight
    components), or ``None`` for anything else (a distribution known by its CDF among them)."""
    if y_pred is None or isinstance(y_pred, numbers.Real):
        raise refuse_number(who, y_pred)
    if _by_its_cdf(y_pred):
        return None
    if isinstance(y_pred, tuple | list) and len(y_pred) == 2:
        mean, var = float(y_pred[0]), float(y_pred[1])
        # as the PLL: a (mean, variance) pair must be a proper Gaussian
        if not (var > 0.0 and math.isfinite(var)):
            raise ValueError(f"a predictive variance must be positive and finite, got {var!r}")
        return mean, math.sqrt(var)
    weights = getattr(y_pred, "weights", None)
    variances = getattr(y_pred, "variances", None)
    if weights is not None and variances is not None:
        w = np.asarray(weights, dtype=np.float64).ravel()
        keep = w > 0.0  # a component without weight adds nothing: skip its work
        v = np.asarray(variances, dtype=np.float64).ravel()[keep]
        if not (np.isfinite(v).all() and (v > 0.0).all()):
            raise ValueError("a mixture's component variances must be positive and finite")
        means = np.asarray(y_pred.means, dtype=np.float64).ravel()[keep]
        return w[keep], means, np.sqrt(v)
    mu, sigma = getattr(y_pred, "mu", None), getattr(y_pred, "sigma", None)
    if mu is not None and sigma is not None:
        return float(mu), float(sigma)
    return None


def _cannot_read(who: str, y_pred: Any, also: str = "") -> TypeError:
    return TypeError(
        f"{who} cannot read a distribution from {type(y_pred).__name__!r}: expected a Gaussian "
        "mixture (`weights`, `means`, `variances`), an object with `mu` and `sigma` (e.g. "
        f"river.proba.Gaussian), a Gaussian's (mean, variance) tuple{also}."
    )


# ---------------------------------------------------------------------------------------------
# The central interval, from the CDF
# ---------------------------------------------------------------------------------------------


def cdf_sf(y_pred: Any, y: float, who: str = "cdf_sf") -> tuple[float, float]:
    """``(P(Y <= y), P(Y >= y))`` for ``Y`` distributed as ``y_pred``.

    Both are computed directly, not one as one minus the other: in the upper tail ``1 - F(y)``
    would lose every digit that ``F(y)`` rounds away. For a Gaussian of variance 0 (a point mass,
    what a target scaler predicts before it has a scale) both are 1 at its mean.

    Examples
    --------
    >>> from river_doebe.calibration import cdf_sf
    >>> from river_doebe.distributions import GaussianMixture, gaussian

    >>> cdf_sf(gaussian(0.0, 1.0), 0.0)
    (0.5, 0.5)
    >>> cdf_sf(gaussian(0.0, 1.0), 30.0)  # 1 - F would be 0
    (1.0, 4.9067139271...e-198)
    >>> [round(p, 4) for p in cdf_sf(GaussianMixture([0.75, 0.25], [0.0, 4.0], [1.0, 1.0]), 2.0)]
    [0.7386, 0.2614]

    """
    parts = _read(y_pred, who)
    y = float(y)
    if parts is None:
        cdf = getattr(y_pred, "cdf", None)
        if cdf is None:
            raise _cannot_read(who, y_pred, " or an object with a `cdf` method")
        # a distribution known only by its CDF is taken as continuous: P(Y >= y) = 1 - F(y),
        # from its own survival function when it has one (exact in the upper tail)
        f = float(cdf(y))
        sf = getattr(y_pred, "sf", None)
        return f, (float(sf(y)) if callable(sf) else 1.0 - f)
    if len(parts) == 2:
        mu, sd = parts
        if sd > 0.0:
            z = (y - mu) / sd
            # Phi(z) = erfc(-z / sqrt 2) / 2 keeps its relative accuracy in both tails
            return 0.5 * math.erfc(-z * _SQRT_HALF), 0.5 * math.erfc(z * _SQRT_HALF)
        return float(y >= mu), float(y <= mu)
    w, means, sds = parts
    z = (y - means) / sds
    return float(w @ ndtr(z)), float(w @ ndtr(-z))


def in_central_interval(
    y_pred: Any, y: float, level: float, who: str = "in_central_interval"
) -> bool:
    """Whether ``y`` lies in the central ``level`` interval of the predictive ``y_pred``.

    The central interval runs from the ``(1 - level) / 2`` quantile to the ``(1 + level) / 2``
    one. For a continuous, strictly increasing CDF ``F`` (a Gaussian, a mixture of Gaussians),
    ``y`` lies between those quantiles exactly when ``(1 - level) / 2 <= F(y) <= (1 + level) / 2``:
    ``F`` maps the interval onto that range, in order. So the test needs ``F(y)`` only, which is
    in closed form, and never the quantiles, which a mixture has no closed form for (each would
    take a root search, and its tolerance would decide the targets near the ends). The upper end
    is tested on ``P(Y >= y)``, computed as such (see :func:`cdf_sf`), which also makes a point
    mass cover its own mean.

    Examples
    --------
    >>> from river_doebe.calibration import in_central_interval
    >>> from river_doebe.distributions import gaussian

    >>> p = gaussian(0.0, 1.0)  # the central 90% interval is [-1.645, 1.645]
    >>> in_central_interval(p, 1.6, 0.9), in_central_interval(p, 1.7, 0.9)
    (True, False)

    """
    tail = 0.5 * (1.0 - level)
    below, above = cdf_sf(y_pred, y, who)
    return below >= tail and above >= tail


# ---------------------------------------------------------------------------------------------
# The continuous ranked probability score
# ---------------------------------------------------------------------------------------------


def crps_gaussian(mu: float, sigma: float, y: float) -> float:
    """The CRPS of ``N(mu, sigma^2)`` at ``y`` (Gneiting & Raftery, 2007, eq. 21).

    With ``z = (y - mu) / sigma``, ``CRPS = sigma (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi))``;
    ``2 Phi(z) - 1`` is written ``erf(z / sqrt 2)``, exact near 0. ``sigma = 0`` gives the
    limit, ``|y - mu|``: the CRPS of a point mass is the absolute error.

    Examples
    --------
    >>> from river_doebe.calibration import crps_gaussian
    >>> round(crps_gaussian(0.0, 1.0, 0.0), 6)  # (sqrt 2 - 1) / sqrt pi
    0.233695
    >>> crps_gaussian(1.0, 0.0, 3.5)
    2.5

    """
    if sigma == 0.0:
        return abs(y - mu)
    z = (y - mu) / sigma
    return sigma * (z * math.erf(z * _SQRT_HALF) + 2.0 * _INV_SQRT_2PI * math.exp(-0.5 * z * z)
                    - _INV_SQRT_PI)


def _mean_abs(m, s):
    """``E|N(m, s^2)| = m erf(m / (s sqrt 2)) + 2 s phi(m / s)``, elementwise, ``s > 0``."""
    z = m / s
    return m * erf(z * _SQRT_HALF) + 2.0 * _INV_SQRT_2PI * s * np.exp(-0.5 * z * z)


def crps_mixture(weights: ArrayLike, means: ArrayLike, sds: ArrayLike, y: float) -> float:
    """The CRPS of the mixture ``sum_k w_k N(means_k, sds_k^2)`` at ``y``.

    ``CRPS(F, y) = E|X - y| - E|X - X'| / 2`` for ``X, X'`` independent draws of ``F``
    (Gneiting & Raftery, 2007, eq. 20). For a mixture, ``X - y`` is ``N(m_k - y, s_k^2)`` with
    probability ``w_k`` and ``X - X'`` is ``N(m_j - m_k, s_j^2 + s_k^2)`` with probability
    ``w_j w_k``, and ``E|N(m, s^2)|`` has a closed form: ``O(K^2)`` work for ``K`` components
    (4,005 pairs for an E-DOEBE's 90 members, one array expression). The pairs' scales are
    ``hypot(s_j, s_k)``, which neither underflows nor overflows where ``s_j^2`` would.

    ``weights`` must be positive and sum to 1, ``sds`` positive (see :func:`crps`, which reads
    them from a distribution and skips components without weight).

    Examples
    --------
    >>> from river_doebe.calibration import crps_gaussian, crps_mixture

    One component, or several identical ones, is the Gaussian:

    >>> a = crps_mixture([0.5, 0.5], [1.0, 1.0], [2.0, 2.0], 0.0)
    >>> b = crps_gaussian(1.0, 2.0, 0.0)
    >>> bool(abs(a - b) < 1e-12)
    True

    """
    w = np.asarray(weights, dtype=np.float64)
    m = np.asarray(means, dtype=np.float64)
    s = np.asarray(sds, dtype=np.float64)
    to_y = float(w @ _mean_abs(m - y, s))
    # E|X - X'| over the pairs j < k, counted twice (the terms are symmetric), plus the
    # diagonal, E|N(0, 2 s_k^2)| = 2 s_k / sqrt(pi): half the work of the full K x K table
    j, k = _pairs(w.size)
    pairs = _mean_abs(m[j] - m[k], np.hypot(s[j], s[k]))
    between = 2.0 * float((w[j] * w[k]) @ pairs) + 2.0 * _INV_SQRT_PI * float((w * w) @ s)
    return to_y - 0.5 * between


@functools.lru_cache(maxsize=16)
def _pairs(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The index pairs ``j < l`` of ``k`` components (an ensemble predicts with the same count
    sample after sample: made once)."""
    return np.triu_indices(k, 1)


#: Gauss-Legendre nodes and weights on [-1, 1], for the pieces of :func:`crps_from_cdf`
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)

#: The levels whose quantiles cut a distribution known by its CDF into the pieces of
#: :func:`crps_from_cdf`: normal scores from -8 to 8 (the outer levels are 6e-16 from 0 and 1),
#: pieces of at most ~1/16 of the mass each
_CRPS_LEVELS = ndtr(np.linspace(-8.0, 8.0, 33))


def crps_from_cdf(cdf: Callable[[float], float], y: float, breaks: ArrayLike) -> float:
    """The CRPS ``int (F(z) - 1[z >= y])^2 dz`` of a continuous distribution given by its CDF.

    The integral is cut at ``breaks`` and at ``y`` and each piece is integrated by an 8-point
    Gauss-Legendre rule, exact to rounding for a CDF that is smooth on each piece on the piece's
    scale (a Gaussian's on pieces of half a standard deviation: 1e-15). The
    parts outside the outermost break and ``y`` are left out: choose ``breaks`` that hold all
    but a negligible share of the mass, that include every point where the density is not
    smooth (the kinks of a piecewise-linear map of a CDF), and that are close enough for the
    CDF to be smooth on the scale of a piece. :func:`crps` takes a distribution's own
    ``crps_breaks()`` when it has them, else its quantiles at 33 levels from ``6e-16`` to ``1 -
    6e-16``.

    Parameters
    ----------
    cdf
        The CDF, vectorised: it takes an array of points and returns an array.
    y
        The target.
    breaks
        Increasing points, as above.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import ndtr
    >>> from river_doebe.calibration import crps_from_cdf, crps_gaussian

    >>> breaks = np.linspace(-9.0, 9.0, 37)
    >>> a = crps_from_cdf(ndtr, 0.3, breaks)
    >>> bool(abs(a - crps_gaussian(0.0, 1.0, 0.3)) < 1e-13)
    True

    """
    b = np.unique(np.append(np.asarray(breaks, dtype=np.float64), float(y)))
    half = 0.5 * np.diff(b)
    x = (0.5 * (b[1:] + b[:-1]))[:, None] + half[:, None] * _GL_X
    G = np.asarray(cdf(x), dtype=np.float64)
    # each piece lies on one side of y, which is a break
    step = (0.5 * (b[1:] + b[:-1]) >= y)[:, None]
    return float(((G - step) ** 2 @ _GL_W) @ half)


def crps(y_pred: Any, y: float, who: str = "crps") -> float:
    """The CRPS of the predictive ``y_pred`` at ``y``: :func:`crps_gaussian` for a Gaussian,
    :func:`crps_mixture` over the components with positive weight for a mixture, and
    :func:`crps_from_cdf` for a distribution known by its CDF and quantile function (between its
    quantiles at a grid of levels, and at its own ``crps_breaks()`` if it has them; its own
    ``crps_cdf`` in place of its ``cdf`` if it has one).

    Examples
    --------
    >>> from river_doebe.calibration import crps
    >>> from river_doebe.distributions import GaussianMixture, gaussian

    >>> round(crps(gaussian(0.0, 4.0), 1.0), 6)
    0.662807
    >>> round(crps(GaussianMixture([0.75, 0.25], [0.0, 4.0], [1.0, 1.0]), 1.0), 6)
    0.522179
    >>> crps(1.0, 1.0)
    Traceback (most recent call last):
    ...
    TypeError: crps needs a predictive distribution, got the number 1.0. ...

    """
    parts = _read(y_pred, who)
    if parts is None:
        if _by_its_cdf(y_pred):
            base = _unmapped(y_pred)
            if base is not None:  # the identity map of a distribution: that one, exactly
                return crps(base, y, who)
            own = getattr(y_pred, "crps_breaks", None)
            breaks = own() if callable(own) else y_pred.quantile(_CRPS_LEVELS)
            cdf = getattr(y_pred, "crps_cdf", y_pred.cdf)
            return crps_from_cdf(cdf, float(y), breaks)
        raise _cannot_read(who, y_pred)
    if len(parts) == 2:
        return crps_gaussian(parts[0], parts[1], float(y))
    return crps_mixture(*parts, float(y))
