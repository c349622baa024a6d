"""The predictive distributions of the models, as river distributions.

A single learner predicts a Gaussian, built by :func:`gaussian`: a ``river.proba.Gaussian``
with the given mean and variance, made the same way on every river version this package
supports.

An ensemble's one-step-ahead predictive is ``p(y) = sum_m w_m N(y; mean_m, var_m)`` (paper
Sec. 3.1). :class:`GaussianMixture` keeps that mixture whole: its density, log density, CDF and
samples are the mixture's, while ``mu`` and ``sigma`` are its exact first two moments (the
moment-matched Gaussian of the paper's code), so code written for ``river.proba.Gaussian`` keeps
working.

:func:`affine` maps a predictive distribution through ``y -> scale * y + shift``, which is how a
model trained on a standardised target gives its distribution back in the target's units: a
Gaussian and a mixture of Gaussians stay what they are under that map, so the result is exact.

Neither is a number: arithmetic on one (``y - dist``, ``float(dist)``), which is what a point
metric such as river's ``metrics.MAE`` does with a prediction, raises a ``TypeError`` that says
how to score point and distribution metrics together.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from river import proba, stats
from scipy.special import log_ndtr, logsumexp

__all__ = ["GaussianMixture", "PredictiveGaussian", "affine", "gaussian"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class _NotANumber:
    """Arithmetic on a predictive distribution raises a ``TypeError`` that says what to do.

    Without this, a point metric given a distribution fails with Python's bare "unsupported
    operand type(s) for -: 'float' and 'Gaussian'". That happens when river's own ``Metrics``
    container, which hands every metric the same prediction, holds a distribution metric
    behind a river point metric (``MAE() + PredictiveLogLikelihood()``) and the model is
    wrapped in ``river_doebe.evaluate.WithDist``.
    """

    __slots__ = ()

    def _not_a_number(self, *args):
        raise TypeError(
            f"{type(self).__name__} {self!r} is a predictive distribution, not a number: a "
            "point metric (such as river's MAE) or other arithmetic was given the distribution "
            "that `predict_one(x, with_dist=True)` or `river_doebe.evaluate.WithDist` returns; its "
            "mean is `.mu`. To score point and distribution metrics together, put a river_doebe "
            "metric first (`PredictiveLogLikelihood() + MAE()`) or write "
            "`river_doebe.metrics.Metrics([MAE(), PredictiveLogLikelihood()])`: river's "
            "`MAE() + PredictiveLogLikelihood()` gives every metric the same prediction. "
            "`river_doebe.evaluate.progressive_scores` takes either."
        )

    __add__ = __radd__ = __sub__ = __rsub__ = _not_a_number
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __pow__ = __rpow__ = _not_a_number
    __neg__ = __pos__ = __abs__ = __float__ = _not_a_number


class PredictiveGaussian(_NotANumber, proba.Gaussian):
    """A ``river.proba.Gaussian`` that is a model's predictive: what :func:`gaussian` returns.

    It is river's Gaussian in every respect (``mu``, ``sigma``, the density, ``cdf``,
    ``sample``), with a ``log_pdf`` on every river version, and two differences: arithmetic on
    it raises a ``TypeError`` that explains how to score point and distribution metrics
    together (it is a distribution, not a number), and the generator behind ``sample`` is
    seeded only when first used, which makes building one about ten times cheaper (a model
    builds one per prediction).

    Examples
    --------
    >>> from river import proba
    >>> from river_doebe.distributions import gaussian

    >>> p = gaussian(1.0, 4.0)
    >>> p
    𝒩(μ=1.000, σ=2.000)
    >>> print(p)
    𝒩(μ=1.000, σ=2.000)
    >>> isinstance(p, proba.Gaussian)
    True
    >>> 3.0 - p
    Traceback (most recent call last):
    ...
    TypeError: PredictiveGaussian 𝒩(μ=1.000, σ=2.000) is a predictive distribution, not a number...

    """

    # river's Distribution.__init__ assigns `_rng` a generator seeded from the OS (13 us); here
    # it is made on first use instead
    @property
    def _rng(self) -> random.Random:
        generator = self.__dict__.get("_generator")
        if generator is None:
            generator = self.__dict__["_generator"] = random.Random(self.seed)
        return generator

    @_rng.setter
    def _rng(self, generator: random.Random) -> None:
        self.__dict__["_generator"] = generator

    def log_pdf(self, x: float) -> float:
        """Log density at ``x``; minus infinity when the variance is 0 (river 0.22's Gaussian
        has no ``log_pdf``; later ones compute the same)."""
        variance = self._var.get()
        if variance > 0.0:
            # river's own formula, term for term: the same value to the last bit
            mu = self._var.mean.get()
            try:
                square = (x - mu) ** 2
            except OverflowError:
                # the distance squares beyond float64: in units of the standard deviation it
                # may not (a variance near 1e300), else the density is 0 in float64
                z = (x - mu) / math.sqrt(variance)
                return -0.5 * z * z - _HALF_LOG_2PI - 0.5 * math.log(variance)
            return square / (-2.0 * variance) - _HALF_LOG_2PI - 0.5 * math.log(variance)
        return -math.inf

    def __str__(self) -> str:
        # river's Base.__str__ gives the class name; a distribution reads as its repr
        return repr(self)

    @classmethod
    def _adopt(cls, dist: proba.Gaussian) -> PredictiveGaussian:
        """The same Gaussian as river's ``dist``, sharing its (read-only) state."""
        new = cls.__new__(cls)
        state = dict(dist.__dict__)
        generator = state.pop("_rng", None)
        new.__dict__.update(state)
        new.__dict__["_generator"] = generator
        return new


def gaussian(mu: float, var: float) -> proba.Gaussian:
    """The Gaussian ``N(mu, var)`` as a ``river.proba.Gaussian``, on every supported river version.

    river builds its Gaussian from a running variance, ``stats.Var``, and has no public way to
    give it a mean and a variance directly. The private ``Gaussian._from_state`` does, but its
    variance argument is named ``sig`` in river 0.22 and ``var`` later (it is the variance in
    both), so a call by keyword works on one version only. This function builds the state that
    both versions read, ``stats.Var._from_state(1, mu, var, ddof=0)`` (one "observation" with
    zero degrees of freedom removed, so that ``sigma**2 == var``), and returns a
    :class:`PredictiveGaussian` holding it.

    Parameters
    ----------
    mu
        The mean, a finite number.
    var
        The variance, finite and non-negative (0 gives a point mass: zero density everywhere,
        a log density of minus infinity).

    Examples
    --------
    >>> from river_doebe.distributions import gaussian

    >>> p = gaussian(0.5, 0.25)
    >>> p.mu, p.sigma
    (0.5, 0.5)
    >>> round(p(0.5), 6)
    0.797885
    >>> gaussian(0.0, -1.0)
    Traceback (most recent call last):
    ...
    ValueError: var must be finite and non-negative, got -1.0

    """
    if not 0.0 <= var < math.inf:
        raise ValueError(f"var must be finite and non-negative, got {var!r}")
    if not -math.inf < mu < math.inf:
        raise ValueError(f"mu must be finite, got {mu!r}")
    new = PredictiveGaussian.__new__(PredictiveGaussian)
    new.seed = None
    new._var = stats.Var._from_state(1, mu, var, ddof=0)
    return new


class GaussianMixture(_NotANumber, proba.base.ContinuousDistribution):
    """A finite mixture of univariate Gaussians, ``sum_m w_m N(mean_m, var_m)``.

    This is what the ensembles of this package return from ``predict_one(x, with_dist=True)``:
    the exact Bayesian predictive of the ensemble. Components with zero weight are dropped;
    the weights are normalised.

    Parameters
    ----------
    weights
        Non-negative component weights (at least one positive).
    means
        Component means.
    variances
        Component variances, positive and finite.
    seed
        Seed of the generator used by :meth:`sample`.

    Attributes
    ----------
    mu
        The mixture's mean, ``sum_m w_m mean_m``.
    sigma
        The square root of the mixture's variance, ``sum_m w_m (var_m + (mean_m - mu)^2)``:
        ``N(mu, sigma^2)`` is the moment-matched Gaussian (see :attr:`gaussian`).

    Examples
    --------
    >>> from river_doebe.distributions import GaussianMixture

    >>> p = GaussianMixture([0.75, 0.25], [0.0, 4.0], [1.0, 1.0], seed=1)
    >>> p
    GaussianMixture(2 components, μ=1.000, σ=2.000)
    >>> round(p.log_pdf(0.0), 4)
    -1.2066
    >>> round(p.gaussian.log_pdf(0.0), 4)
    -1.7371
    >>> round(p.cdf(2.0), 4)
    0.7386
    >>> round(p.mode, 4)
    0.0004

    The moment-matched Gaussian is never a better density for a sample from the mixture, on
    average (the mixture is the true distribution); for a target far from every component it
    can be higher, because its tails are wider.
    """

    def __init__(
        self, weights: ArrayLike, means: ArrayLike, variances: ArrayLike, seed: int | None = None
    ) -> None:
        # river's Distribution.__init__ would seed a generator from the OS at every prediction;
        # only `sample` needs one, so it is made on first use (see `_rng`)
        self.seed = seed
        self._generator: random.Random | None = None
        w = np.asarray(weights, dtype=np.float64).ravel()
        m = np.asarray(means, dtype=np.float64).ravel()
        v = np.asarray(variances, dtype=np.float64).ravel()
        if not (w.shape == m.shape == v.shape) or w.size == 0:
            raise ValueError(
                "weights, means and variances must be non-empty and of the same length, got "
                f"{w.size}, {m.size} and {v.size}"
            )
        keep = w > 0.0
        if not (np.isfinite(w).all() and (w >= 0).all() and keep.any()):
            raise ValueError("the weights must be finite, non-negative and not all zero")
        w, m, v = w[keep], m[keep], v[keep]
        if not (np.isfinite(m).all() and np.isfinite(v).all() and (v > 0).all()):
            raise ValueError("the components' means must be finite and variances positive")
        self.weights = w / w.sum()
        self.means = m
        self.variances = v
        self._moments: tuple[float, float] | None = None

    @classmethod
    def _from_moments(
        cls, weights: ArrayLike, means: ArrayLike, variances: ArrayLike, mu: float, var: float
    ) -> GaussianMixture:
        """A mixture whose moments were already computed (by the engine, bit for bit the
        values ``predict_one`` returns)."""
        # the engine's weights are positive and normalised and its variances positive: no
        # checks on this per-sample path
        new = cls.__new__(cls)
        new.seed = None
        new._generator = None
        new.weights = np.asarray(weights, dtype=np.float64)
        new.means = np.asarray(means, dtype=np.float64)
        new.variances = np.asarray(variances, dtype=np.float64)
        new._moments = (float(mu), float(var))
        return new

    def _affine(self, scale: float, shift: float) -> GaussianMixture:
        """The mixture of ``scale * Y + shift`` (``scale > 0``, checked by :func:`affine`)."""
        means = self.means * scale + shift
        variances = self.variances * (scale * scale)
        finite = np.isfinite(means).all() and np.isfinite(variances).all()
        if not (finite and (variances > 0.0).all()):
            raise ValueError(
                f"scale={scale!r} and shift={shift!r} overflow or underflow a component of the "
                "mixture"
            )
        # the moments are mapped from the stored ones, not recomputed from the new components:
        # then `mu` is bit for bit `scale * mu + shift`, the value a target scaler's point
        # prediction takes, rather than a value that differs from it in the last digit
        mu, var = self._mv()
        new = GaussianMixture.__new__(GaussianMixture)
        new.seed = self.seed
        new._generator = None
        new.weights = self.weights.copy()
        new.means = means
        new.variances = variances
        new._moments = (mu * scale + shift, var * (scale * scale))
        return new

    # a property where river's Distribution has an attribute: the generator is made on first use
    @property
    def _rng(self) -> random.Random:  # type: ignore[override]
        if self._generator is None:
            self._generator = random.Random(self.seed)
        return self._generator

    # ------------------------------------------------------------------ moments
    def _mv(self) -> tuple[float, float]:
        if self._moments is None:
            mu = float(self.weights @ self.means)
            var = float(self.weights @ (self.variances + (self.means - mu) ** 2))
            self._moments = (mu, var)
        return self._moments

    @property
    def mu(self) -> float:
        return self._mv()[0]

    @property
    def sigma(self) -> float:
        return math.sqrt(self._mv()[1])

    @property
    def gaussian(self) -> proba.Gaussian:
        """The moment-matched ``river.proba.Gaussian`` ``N(mu, sigma^2)``."""
        mu, var = self._mv()
        return gaussian(mu, var)

    @property
    def n_components(self) -> int:
        return int(self.weights.size)

    @property
    def n_samples(self) -> int:
        # a predictive, not an estimate from observed samples; like the learners' Gaussians
        return 1

    # ------------------------------------------------------------------ density
    def _log_terms(self, x: float) -> np.ndarray:
        # a weight that underflowed to 0 is a -inf term; a point so far from a narrow component
        # that its squared distance overflows is one too (its density is 0): no warning for
        # either, as the values are right
        with np.errstate(divide="ignore", over="ignore"):
            r = x - self.means
            return (
                np.log(self.weights)
                - 0.5 * r * r / self.variances
                - 0.5 * np.log(self.variances)
                - _HALF_LOG_2PI
            )

    def log_pdf(self, x: float) -> float:
        """Log density of the mixture at ``x`` (computed in the log domain)."""
        t = self._log_terms(float(x))
        top = t.max()
        if not np.isfinite(top):
            return float(top)
        return float(top + math.log(np.exp(t - top).sum()))

    def __call__(self, x: float) -> float:
        return math.exp(self.log_pdf(x))

    def cdf(self, x: float) -> float:
        # a standardised distance that overflows is +-inf, whose log_ndtr is exact (0 or -inf)
        with np.errstate(over="ignore"):
            z = (float(x) - self.means) / np.sqrt(self.variances)
        # (the weights sum to 1 only to rounding: the upper tail could pass 1 by an ulp or two)
        return min(float(np.exp(logsumexp(log_ndtr(z), b=self.weights))), 1.0)

    def sample(self) -> float:
        k = self._rng.choices(range(self.weights.size), weights=self.weights.tolist())[0]
        return self._rng.gauss(float(self.means[k]), math.sqrt(float(self.variances[k])))

    @property
    def mode(self) -> float:
        """A mode of the mixture: the fixed point of the mean-shift iteration started from the
        component mean of highest mixture density (the global mode when the mixture is
        unimodal)."""
        start = max(self.means.tolist(), key=self.log_pdf)
        x = start
        inv_v = 1.0 / self.variances
        for _ in range(200):
            t = self._log_terms(x)
            r = np.exp(t - t.max()) * inv_v
            new = float(r @ self.means / r.sum())
            if abs(new - x) <= 1e-12 * (1.0 + abs(x)):
                x = new
                break
            x = new
        return x if self.log_pdf(x) >= self.log_pdf(start) else start

    # ------------------------------------------------------------------ river's interface
    def update(self, x: float) -> None:
        raise NotImplementedError(
            "a predictive GaussianMixture is computed by a model, not estimated from observations"
        )

    def revert(self, x: float) -> None:
        raise NotImplementedError(
            "a predictive GaussianMixture is computed by a model, not estimated from observations"
        )

    def __repr__(self) -> str:
        k = self.n_components
        return (
            f"GaussianMixture({k} component{'s' if k != 1 else ''}, μ={self.mu:.3f}, "
            f"σ={self.sigma:.3f})"
        )

    __str__ = __repr__


def affine(dist: Any, scale: float, shift: float = 0.0) -> Any:
    """The exact distribution of ``scale * Y + shift`` for ``Y ~ dist`` and ``scale > 0``.

    A Gaussian ``N(mu, sigma^2)`` becomes ``N(scale * mu + shift, (scale * sigma)^2)``, a
    ``river.proba.Gaussian``. A :class:`GaussianMixture` keeps its weights and maps every
    component the same way; its ``mu`` and ``sigma`` (the moments) are mapped likewise. The
    density is the change of variables ``log p(y) = log p_Y((y - shift) / scale) - log(scale)``
    and the CDF ``P((y - shift) / scale)``.

    This is how a model trained on a standardised target gives its predictive distribution back
    in the target's units (see :class:`river_doebe.preprocessing.TargetStandardScaler`). The
    mean of the result is computed as ``mu * scale + shift``, the same operations as mapping a
    point prediction back, so the two are equal to the last bit.

    Parameters
    ----------
    dist
        A ``river.proba.Gaussian`` or a :class:`GaussianMixture`. It is not modified.
    scale
        The factor, positive and finite.
    shift
        The offset, finite.

    Examples
    --------
    >>> from river import proba
    >>> from river_doebe.distributions import GaussianMixture, affine

    >>> g = proba.Gaussian._from_state(1, 0.5, 0.04, 0)
    >>> affine(g, scale=10.0, shift=100.0)
    𝒩(μ=105.000, σ=2.000)

    >>> p = GaussianMixture([0.75, 0.25], [0.0, 4.0], [1.0, 1.0])
    >>> q = affine(p, scale=2.0, shift=-1.0)
    >>> q
    GaussianMixture(2 components, μ=1.000, σ=4.000)
    >>> q.means, q.variances
    (array([-1.,  7.]), array([4., 4.]))
    >>> round(q.log_pdf(3.0), 6) == round(p.log_pdf(2.0) - math.log(2.0), 6)
    True

    """
    a, b = float(scale), float(shift)
    if not (math.isfinite(a) and a > 0.0):
        raise ValueError(f"scale must be positive and finite, got {scale!r}")
    if not math.isfinite(b):
        raise ValueError(f"shift must be finite, got {shift!r}")
    if isinstance(dist, GaussianMixture):
        return dist._affine(a, b)
    if isinstance(dist, proba.Gaussian):
        mu, sigma = dist.mu * a + b, a * dist.sigma
        var = sigma * sigma
        # a positive variance that underflows to 0 would turn the Gaussian into a point mass
        if not (math.isfinite(mu) and math.isfinite(var)) or (var == 0.0 and dist.sigma > 0.0):
            raise ValueError(
                f"scale={scale!r} and shift={shift!r} overflow or underflow the Gaussian {dist!r}"
            )
        return gaussian(mu, var)
    raise TypeError(
        "affine maps a river.proba.Gaussian or a river_doebe.distributions.GaussianMixture, got "
        f"{type(dist).__name__!r}"
    )
