"""The recalibrated predictive distribution: a piecewise-linear map of a Gaussian's or a Gaussian
mixture's CDF, exact (CDF, survival function, log density, quantiles) and proper."""

from __future__ import annotations

import math
import numbers

import numpy as np
from river import proba
from river.conf import Interval
from scipy.special import ndtr, ndtri

from river_doebe import calibration
from river_doebe.distributions import GaussianMixture, _NotANumber
from river_doebe.kernels.jit import kernel

__all__ = ["RecalibratedDistribution"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

#: Gauss-Legendre nodes on [-1, 1]: the grid of the mode's search, on each piece
_GL_X = np.polynomial.legendre.leggauss(8)[0]


# ---------------------------------------------------------------------------------------------
# The wrapped predictive, read as components, evaluated on arrays
# ---------------------------------------------------------------------------------------------


class _Components:
    """A Gaussian or a mixture of Gaussians as arrays, with vectorised CDF, survival function,
    log density and quantile function (the mixture's quantiles by safeguarded Newton steps)."""

    __slots__ = ("w", "m", "s", "log_w", "log_s")

    def __init__(self, dist):
        if isinstance(dist, GaussianMixture) and dist.weights.size:
            # a mixture is checked when made (its constructor; the engine's are valid by
            # construction: positive weights, finite means, positive finite variances)
            self._set(dist.weights, dist.means, np.sqrt(dist.variances))
            return
        parts = calibration._read(dist, "Recalibrated")
        if parts is None:
            raise TypeError(
                "Recalibrated wraps a regressor whose predict_one(x, with_dist=True) returns a "
                "Gaussian (river.proba.Gaussian) or a river_doebe GaussianMixture, got "
                f"{type(dist).__name__!r}"
            )
        if len(parts) == 2:
            w, m, s = np.ones(1), np.array([parts[0]]), np.array([parts[1]])
        else:
            w, m, s = parts
        if not (np.isfinite(m).all() and np.isfinite(s).all() and (s > 0.0).all()):
            raise ValueError("the predictive distribution must have finite means and positive, "
                             "finite standard deviations")
        self._set(w, m, s)

    def _set(self, w: np.ndarray, m: np.ndarray, s: np.ndarray) -> None:
        self.w, self.m, self.s = w, m, s
        with np.errstate(divide="ignore"):
            self.log_w = np.log(w)
        self.log_s = np.log(s)

    def cdf_sf(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = (np.asarray(y, dtype=np.float64)[..., None] - self.m) / self.s
        return ndtr(z) @ self.w, ndtr(-z) @ self.w

    def cdf(self, y: np.ndarray) -> np.ndarray:
        """The first of :meth:`cdf_sf`, alone (half its work)."""
        return ndtr((np.asarray(y, dtype=np.float64)[..., None] - self.m) / self.s) @ self.w

    def without_lightest(self, mass: float) -> _Components:
        """These components less the lightest ones, whose weights sum to at most ``mass`` (all
        of them when none is that light)."""
        order = np.argsort(self.w, kind="stable")
        light = int(np.searchsorted(np.cumsum(self.w[order]), mass, side="right"))
        light = min(light, self.w.size - 1)
        if light == 0:
            return self
        keep = np.sort(order[light:])
        out = _Components.__new__(_Components)
        out._set(self.w[keep], self.m[keep], self.s[keep])
        return out

    def log_pdf(self, y: np.ndarray) -> np.ndarray:
        z = (np.asarray(y, dtype=np.float64)[..., None] - self.m) / self.s
        terms = self.log_w - 0.5 * z * z - self.log_s
        # log-sum-exp over the components, shifted by the largest term (NumPy's: SciPy's
        # array-API logsumexp costs ten times as much on a few dozen terms)
        top = terms.max(axis=-1)
        shift = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return (np.log(np.exp(terms - shift[..., None]).sum(axis=-1)) + shift
                    - _HALF_LOG_2PI)

    def quantile(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The quantiles at levels ``u`` given with their complements ``v = 1 - u`` (each
        accurate where it is small: the upper tail is solved on the survival function)."""
        u = np.asarray(u, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        upper = u > 0.5
        score = np.where(upper, -ndtri(v), ndtri(u))
        comp = self.m + self.s * score[..., None]
        if self.w.size == 1:
            return comp[..., 0]
        target = np.where(upper, v, u)
        tol = 1e-14 * (np.abs(comp).max(axis=-1) + self.s.min())
        shape = comp.shape[:-1]
        out = np.empty(shape)
        _mixture_quantiles(self.w, self.m, self.s, comp.reshape(-1, self.w.size),
                           target.ravel(), upper.ravel(), tol.ravel(), out.reshape(-1))
        return out


#: the total weight of the lightest components that the CRPS's quadrature leaves out
_NEGLIGIBLE = 1e-15

#: a piece of the map narrower than this many standard deviations of every component of ``F``
#: counts as a point for the moments (:meth:`RecalibratedDistribution._mv`): the midpoint rule's
#: relative error there is below 1e-11, and the closed form's differences of CDFs and densities
#: lose as much as that to rounding
_NARROW = 1e-5

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@kernel()
def _mixture_quantiles(w, m, s, comp, target, upper, tol, out):
    """The quantiles of the mixture ``sum_k w_k N(m_k, s_k^2)``, one a row of ``comp`` (its
    components' quantiles at the level), into ``out``: the root of ``F(x) = target`` in the
    lower half, of ``1 - F(x) = target`` in the upper half (``upper``; each level's one tail,
    where it is accurate), to ``tol``, by safeguarded Newton steps.

    A mixture's CDF is a weighted mean of its components' CDFs, so its quantile lies between
    the smallest and the largest of the components' quantiles: the first bracket, around their
    weighted mean. A Newton step that leaves the bracket, or that is not at most half the step
    before last (Newton can cycle between two points of a mixture's CDF), is replaced by the
    bracket's midpoint (rtsafe, Press et al., Numerical Recipes 9.4)."""
    K = w.shape[0]
    for i in range(comp.shape[0]):
        lo = np.inf
        hi = -np.inf
        x = 0.0
        for k in range(K):
            q = comp[i, k]
            lo = min(lo, q)
            hi = max(hi, q)
            x += w[k] * q
        sign = -1.0 if upper[i] else 1.0
        moved = hi - lo
        moved_before = moved
        for _ in range(100):
            # h increases with x: F - u in the lower half, (1 - u) - S in the upper half
            tail = 0.0
            dens = 0.0
            for k in range(K):
                z = (x - m[k]) / s[k]
                tail += w[k] * (0.5 * math.erfc(-sign * z * _SQRT_HALF))
                dens += w[k] / s[k] * math.exp(-0.5 * z * z)
            dens *= _INV_SQRT_2PI  # (0 where every component's underflows)
            h = sign * (tail - target[i])
            if h == 0.0:
                break
            if h < 0.0:
                lo = x
            else:
                hi = x
            step = h / dens if dens > 0.0 else np.inf
            new = x - step
            if not (lo <= new <= hi and 2.0 * abs(step) <= moved_before):
                new = 0.5 * (lo + hi)
            moved_before = moved
            moved = abs(new - x)
            x = new
            if moved <= tol[i] or hi - lo <= tol[i]:
                break
        out[i] = x


# ---------------------------------------------------------------------------------------------
# The recalibrated distribution
# ---------------------------------------------------------------------------------------------


class RecalibratedDistribution(_NotANumber, proba.base.ContinuousDistribution):
    """A predictive distribution whose CDF is a monotone map of another's: ``G(y) = g(F(y))``.

    ``F`` is a Gaussian (``river.proba.Gaussian``) or a
    :class:`~river_doebe.distributions.GaussianMixture`; ``g`` is the piecewise-linear map
    through the points ``(knots_u[j], knots_p[j])``, from ``(0, 0)`` to ``(1, 1)``, strictly
    increasing. This is what :class:`Recalibrated` returns from ``predict_one(x,
    with_dist=True)``; it is exact, not an approximation: its CDF is ``g(F(y))``, its survival
    function ``1 - g(F(y))`` computed from ``F``'s own survival function (no digits lost in the
    upper tail), its density ``g'(F(y)) f(y)`` (finite and positive wherever ``f`` is, as every
    slope of ``g`` is), its quantiles ``F^{-1}(g^{-1}(p))``. It is a proper distribution: the CDF
    rises from 0 to 1 and the density integrates to 1. Its mean and standard deviation
    (``mu``, ``sigma``) are computed when first asked for, in closed form: between two
    consecutive quantiles of ``F`` at the map's knots ``G``'s density is ``F``'s times the
    map's slope, and a Gaussian component's partial moments between two points are sums of its
    CDF and density there.

    Parameters
    ----------
    base
        The distribution ``F``.
    knots_u
        The knots of ``g`` on ``F``'s levels: ``0 = knots_u[0] < ... < knots_u[-1] = 1``.
    knots_p
        Their images: ``0 = knots_p[0] < ... < knots_p[-1] = 1``.

    Examples
    --------
    >>> from river_doebe.conf import RecalibratedDistribution
    >>> from river_doebe.distributions import gaussian

    A map that moves the 25% and 75% levels of ``N(0, 1)`` to its 10% and 90% levels: the 50%
    interval of the result is ``N(0, 1)``'s 80% interval.

    >>> F = gaussian(0.0, 1.0)
    >>> G = RecalibratedDistribution(F, [0.0, 0.1, 0.9, 1.0], [0.0, 0.25, 0.75, 1.0])
    >>> round(G.cdf(F.mu + 1.2815515655446004), 6)
    0.75
    >>> G.interval(0.5)
    Interval(lower=-1.28155..., upper=1.28155...)
    >>> round(G.mu, 10), round(G.sigma, 4)
    (0.0, 1.3577)
    >>> round(G.log_pdf(0.0) - F.log_pdf(0.0), 6)  # log g'(F(0)) = log(0.5 / 0.8)
    -0.470004

    """

    def __init__(self, base, knots_u, knots_p):
        ku = np.asarray(knots_u, dtype=np.float64).ravel()
        kp = np.asarray(knots_p, dtype=np.float64).ravel()
        if ku.shape != kp.shape or ku.size < 2:
            raise ValueError("knots_u and knots_p must be of the same length, at least 2")
        for name, k in (("knots_u", ku), ("knots_p", kp)):
            if not (k[0] == 0.0 and k[-1] == 1.0 and (np.diff(k) > 0.0).all()):
                raise ValueError(f"{name} must rise strictly from 0 to 1, got {k.tolist()}")
        _Components(base)  # refuse a distribution it cannot read now, not at first use
        self._set(base, ku, kp)

    @classmethod
    def _unchecked(cls, base, knots_u, knots_p):
        """What :class:`Recalibrated` builds, its knots valid by construction: no checks."""
        new = cls.__new__(cls)
        new._set(base, knots_u, knots_p)
        return new

    def _set(self, base, ku, kp) -> None:
        # everything derived is computed on first use: a prediction that is only scored for
        # its coverage reads two interpolations
        self.seed = None
        self.__dict__["_generator"] = None
        self.base = base
        self.knots_u = ku
        self.knots_p = kp
        self._components = None
        self._log_slopes = None
        self._moments = None
        self._breaks = None
        self._kink_points = None
        self._light = None

    #: what is derived from the distribution, computed on first use
    _DERIVED = ("_components", "_log_slopes", "_moments", "_breaks", "_kink_points", "_light")

    def __setstate__(self, state: dict) -> None:
        # what is derived is computed again: a pickle of an earlier version may hold it in
        # another layout, or lack what this one derives
        self.__dict__.update(state)
        for name in self._DERIVED:
            self.__dict__[name] = None

    @property
    def _ku_up(self) -> np.ndarray:
        """The map read from the top: ``1 - g(1 - w)`` runs through ``(1 - knots_u, 1 -
        knots_p)``, reversed."""
        return (1.0 - self.knots_u)[::-1]

    @property
    def _kp_up(self) -> np.ndarray:
        return (1.0 - self.knots_p)[::-1]

    @property
    def _parts(self) -> _Components:
        if self._components is None:
            self._components = _Components(self.base)
        return self._components

    @property
    def _rng(self):
        if self.__dict__.get("_generator") is None:
            import random

            self.__dict__["_generator"] = random.Random(self.seed)
        return self.__dict__["_generator"]

    @_rng.setter
    def _rng(self, generator) -> None:
        self.__dict__["_generator"] = generator

    # ------------------------------------------------------------------ CDF and density
    def _map(self, f, s):
        """``(G, 1 - G)`` from ``(F, 1 - F)``, each through the end of the map where it is
        accurate."""
        return (np.interp(f, self.knots_u, self.knots_p),
                np.interp(s, self._ku_up, self._kp_up))

    def cdf_sf(self, y):
        """``(G(y), 1 - G(y))``, both computed directly (arrays or numbers)."""
        f, s = self._parts.cdf_sf(y)
        g, gs = self._map(f, s)
        if np.ndim(y) == 0:
            return float(g), float(gs)
        return g, gs

    def cdf(self, y):
        """``G(y) = g(F(y))`` (a number, or an array for an array ``y``)."""
        g = np.interp(self._parts.cdf(y), self.knots_u, self.knots_p)
        return float(g) if np.ndim(y) == 0 else g

    def sf(self, y):
        """``1 - G(y)``, accurate in the upper tail."""
        return self.cdf_sf(y)[1]

    def log_pdf(self, y):
        """``log g'(F(y)) + log f(y)``: finite wherever ``F``'s log density is."""
        if self.knots_u.size == 2:  # the identity map: G is F (one segment, of slope 1)
            out = self._parts.log_pdf(y)
            return float(out) if np.ndim(y) == 0 else out
        f, s = self._parts.cdf_sf(y)
        # the segment of g holding F(y), found on F in the lower half and on 1 - F above
        low = np.searchsorted(self.knots_u, f, side="right") - 1
        high = self.knots_u.size - 1 - np.searchsorted(self._ku_up, s, side="right")
        if self._log_slopes is None:
            self._log_slopes = np.log(np.diff(self.knots_p) / np.diff(self.knots_u))
        seg = np.clip(np.where(f <= 0.5, low, high), 0, self._log_slopes.size - 1)
        out = self._log_slopes[seg] + self._parts.log_pdf(y)
        return float(out) if np.ndim(y) == 0 else out

    def __call__(self, y):
        return math.exp(self.log_pdf(y)) if np.ndim(y) == 0 else np.exp(self.log_pdf(y))

    def quantile(self, p):
        """``G^{-1}(p) = F^{-1}(g^{-1}(p))`` for levels strictly between 0 and 1."""
        p = np.asarray(p, dtype=np.float64)
        if not ((p > 0.0) & (p < 1.0)).all():
            raise ValueError("quantile levels must be strictly between 0 and 1")
        out = self._quantile(p, 1.0 - p)
        return float(out) if out.ndim == 0 else out

    def _quantile(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        """The quantiles at levels ``p`` given with their complements ``q = 1 - p``."""
        u = np.interp(p, self.knots_p, self.knots_u)
        v = np.interp(q, self._kp_up, self._ku_up)
        return self._parts.quantile(u, v)

    def interval(self, level: float) -> Interval:
        """The central ``level`` interval, from the ``(1 - level) / 2`` quantile to the
        ``(1 + level) / 2`` one, as a ``river.conf.Interval``."""
        if not (isinstance(level, numbers.Real) and 0.0 < level < 1.0):
            raise ValueError(f"level must be strictly between 0 and 1, got {level!r}")
        p = np.array([0.5 * (1.0 - level), 0.5 * (1.0 + level)])
        at = np.searchsorted(self.knots_p, p)
        if (self.knots_p[at] == p).all():  # the knots of Recalibrated's interval: known
            lo, hi = self._kinks()[at - 1]
        else:
            lo, hi = self._quantile(p, np.array([0.5 * (1.0 + level), 0.5 * (1.0 - level)]))
        return Interval(float(lo), float(hi))

    # ------------------------------------------------------------------ quadrature
    def _kinks(self) -> np.ndarray:
        """The quantiles at the map's inner knots: where the density jumps."""
        if self._kink_points is None:
            inner = self.knots_p[1:-1]
            self._kink_points = self._quantile(inner, 1.0 - inner)
        return self._kink_points

    @property
    def _crps_parts(self) -> _Components:
        """The components the CRPS's quadrature reads: all but the lightest, whose weights sum
        to at most :data:`_NEGLIGIBLE` (an ensemble's members keep weights down to 1e-100).
        Left out, they move ``F`` by less than its rounding, and the CRPS by less than that
        times the map's steepest slope and the length of the integration."""
        if self._light is None:
            self._light = self._parts.without_lightest(_NEGLIGIBLE)
        return self._light

    def crps_cdf(self, y):
        """:meth:`cdf` without the components too light to count (:attr:`_crps_parts`), on the
        pieces of :meth:`crps_breaks`: what :func:`river_doebe.calibration.crps` integrates."""
        return np.interp(self._crps_parts.cdf(y), self.knots_u, self.knots_p)

    def crps_breaks(self) -> np.ndarray:
        """The pieces of the CRPS's quadrature: points between which the density is smooth
        (the quantiles at the map's knots are among them), no further apart than half the
        standard deviation of ``F`` or the narrowest of the components it reads
        (:attr:`_crps_parts`), and spanning their means plus or minus 8.5 standard deviations,
        outside of which lies less than ``1e-17`` of each one's mass."""
        if self._breaks is None:
            parts = self._crps_parts
            mean = float(parts.w @ parts.m)
            sd = math.sqrt(float(parts.w @ (parts.s ** 2 + (parts.m - mean) ** 2)))
            lo = min(mean - 8.5 * sd, float((parts.m - 8.5 * parts.s).min()))
            hi = max(mean + 8.5 * sd, float((parts.m + 8.5 * parts.s).max()))
            h = min(0.5 * sd, float(parts.s.min()))
            n = int(min(max(math.ceil((hi - lo) / h), 34), 400))
            self._breaks = np.unique(np.concatenate((np.linspace(lo, hi, n + 1),
                                                     self._kinks())))
        return self._breaks

    def _mv(self) -> tuple[float, float]:
        if self._moments is None:
            # G's density is slope_j f between q_j = F^{-1}(knots_u[j]) and q_{j+1} (the kinks,
            # with q = -inf and +inf at the ends), so its moments are the slopes times the
            # partial moments of F's Gaussian components between the kinks, in closed form:
            # with t = (y - m) / s, int_a^b (y - c) N(y; m, s^2) dy = d dPhi - s dphi and
            # int_a^b (y - c)^2 N(y; m, s^2) dy = (d^2 + s^2) dPhi - 2 d s dphi - s^2 d(t phi),
            # d = m - c, the differences taken between the ends' t. About F's mean c, so that
            # the variance does not cancel
            if self.knots_u.size == 2:  # the identity map: G is F
                mu, sd = float(self.base.mu), float(self.base.sigma)
                self._moments = (mu, sd * sd)
                return self._moments
            parts = self._parts
            m, s = parts.m, parts.s
            c = float(parts.w @ m)
            t = (np.concatenate(([-np.inf], self._kinks(), [np.inf]))[:, None] - m) / s
            lo, hi = t[:-1], t[1:]
            # each component's mass on each piece, from the tail where it is accurate
            mass = np.where(lo > 0.0, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))
            phi = np.exp(-0.5 * t * t - _HALF_LOG_2PI)  # (0 at the infinite ends)
            tphi = np.where(np.isfinite(t), t, 0.0) * phi
            dphi, dtphi = np.diff(phi, axis=0), np.diff(tphi, axis=0)
            d = m - c
            first = (d * mass - s * dphi) @ parts.w
            second = ((d * d + s * s) * mass - 2.0 * d * s * dphi - s * s * dtphi) @ parts.w
            du = np.diff(self.knots_u)
            # a piece much narrower than every component (a steep stretch of the map, whose two
            # kinks may even round to one float) is a point mass of F's mass du there: the
            # differences above cancel to nothing on it, but a steep slope gives it weight
            point = np.max(hi - lo, axis=1) < _NARROW
            if point.any():
                ends = np.concatenate(([-np.inf], self._kinks(), [np.inf]))
                at = 0.5 * (ends[:-1] + ends[1:])[point] - c
                first[point] = du[point] * at
                second[point] = du[point] * at * at
            slopes = np.diff(self.knots_p) / du
            m1 = float(slopes @ first)
            m2 = float(slopes @ second)
            self._moments = (c + m1, max(m2 - m1 * m1, 0.0))
        return self._moments

    @property
    def mu(self) -> float:
        return self._mv()[0]

    @property
    def sigma(self) -> float:
        return math.sqrt(self._mv()[1])

    @property
    def mode(self) -> float:
        """The point of highest density among the quadrature nodes (a grid search)."""
        b = self.crps_breaks()
        x = ((0.5 * (b[1:] + b[:-1]))[:, None] + (0.5 * np.diff(b))[:, None] * _GL_X).ravel()
        return float(x[np.argmax(self.log_pdf(x))])

    @property
    def n_samples(self) -> int:
        return 1

    def sample(self) -> float:
        p = self._rng.random()
        while p <= 0.0:
            p = self._rng.random()
        return self.quantile(p)

    def update(self, x: float) -> None:
        raise NotImplementedError("a predictive distribution is computed, not estimated")

    def revert(self, x: float) -> None:
        raise NotImplementedError("a predictive distribution is computed, not estimated")

    def __repr__(self) -> str:
        k = self.knots_u.size - 2
        return (f"RecalibratedDistribution({type(self.base).__name__}, {k} inner "
                f"knot{'s' if k != 1 else ''}, μ={self.mu:.3f}, σ={self.sigma:.3f})")

    __str__ = __repr__


