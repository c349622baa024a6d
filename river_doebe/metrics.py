"""Metrics of the DOEBE paper, and a container that gives each metric what it needs.

The paper scores a stream with two numbers (Section 5):

- the normalised mean squared error, ``nMSE_t = sum_{tau<=t} (mu_tau - y_tau)^2 / (t Var(y))``,
  where ``mu_tau`` is the predictive mean and ``Var(y)`` the variance of the targets of the
  whole streamed part: `NMSE`;
- the predictive log-likelihood, the mean of ``log p(y_t | x_t, past data)`` under the model's
  predictive distribution: `PredictiveLogLikelihood`.

Beyond the paper, two scores of calibration (:mod:`river_doebe.calibration`):

- the share of targets inside the central ``level`` interval of the predictive:
  `IntervalCoverage`;
- the continuous ranked probability score: `CRPS`.

All are river metrics (``update(y_true, y_pred)``, ``revert``, ``get``). The log-likelihood, the
coverage and the CRPS need the predictive distribution, not a point prediction. Combined with
river's point metrics, a metric of this module first, ``PredictiveLogLikelihood() + MAE()``, or
written ``Metrics([MAE(), PredictiveLogLikelihood()])``, builds a `Metrics` container, which
hands the distribution to the metrics that need it and its mean to all others.

River's ``evaluate.progressive_val_score`` only calls ``predict_one(x)``: to feed it a
distribution, wrap the model in :class:`river_doebe.evaluate.WithDist`, or let
:func:`river_doebe.evaluate.progressive_scores` run the predict-then-learn loop (see
:mod:`river_doebe.evaluate`).

"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

from river import proba
from river.metrics import base as metrics_base

from river_doebe import calibration
from river_doebe._compat import gives_distributions, is_regressor, last_step
from river_doebe.distributions import PredictiveGaussian

__all__ = [
    "CRPS",
    "IntervalCoverage",
    "NMSE",
    "Metrics",
    "PLL",
    "PredictiveLogLikelihood",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


# ---------------------------------------------------------------------------------------------
# Reading predictions
# ---------------------------------------------------------------------------------------------


def _point(y_pred):
    """The point prediction carried by ``y_pred``: itself if a number, else the model's point
    prediction that a distribution carries as ``point`` (``EDOEBE()``'s recalibrated
    distribution: the mixture's mean, what ``predict_one(x)`` returns), else its mean."""
    if type(y_pred) is float:
        return y_pred
    if isinstance(y_pred, numbers.Real):
        return float(y_pred)
    point = getattr(y_pred, "point", None)
    if isinstance(point, numbers.Real):
        return float(point)
    mu = getattr(y_pred, "mu", None)
    if mu is not None:
        return float(mu)
    if isinstance(y_pred, tuple | list) and len(y_pred) == 2:
        return float(y_pred[0])
    raise TypeError(
        f"Cannot read a point prediction from {type(y_pred).__name__!r}: expected a number, a "
        "distribution with a `mu` attribute (e.g. river.proba.Gaussian) or a (mean, var) tuple."
    )


def _gaussian_log_density(y: float, mean: float, var: float) -> float:
    if not (var > 0.0 and math.isfinite(var)):
        raise ValueError(f"a predictive variance must be positive and finite, got {var!r}")
    r = y - mean
    return -0.5 * r * r / var - 0.5 * math.log(var) - _HALF_LOG_2PI


def _log_density(y_pred: Any, y_true: float) -> float:
    """``log p(y_true)`` under the predictive distribution ``y_pred``."""
    if y_pred is None or isinstance(y_pred, numbers.Real):
        raise calibration.refuse_number("PredictiveLogLikelihood", y_pred)
    log_pdf = getattr(y_pred, "log_pdf", None)
    if log_pdf is not None:
        return float(log_pdf(y_true))
    if isinstance(y_pred, proba.Gaussian):
        # river 0.22's Gaussian has no log_pdf: the same Gaussian's, from its variance as
        # later river versions compute it (from ``sigma`` squared it differs in the last bit)
        return PredictiveGaussian._adopt(y_pred).log_pdf(y_true)
    mu, sigma = getattr(y_pred, "mu", None), getattr(y_pred, "sigma", None)
    if mu is not None and sigma is not None:
        return _gaussian_log_density(y_true, mu, sigma * sigma)
    if isinstance(y_pred, tuple | list) and len(y_pred) == 2:
        return _gaussian_log_density(y_true, y_pred[0], y_pred[1])
    raise TypeError(
        f"PredictiveLogLikelihood cannot read a distribution from {type(y_pred).__name__!r}: "
        "expected an object with a `log_pdf` method (e.g. river.proba.Gaussian), one with `mu` "
        "and `sigma`, or a Gaussian's (mean, variance) tuple."
    )


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------


class _CombinesIntoMetrics:
    """``+`` with another regression metric gives a `Metrics` container, which feeds each
    metric what it needs, instead of river's, which feeds them all the same prediction."""

    def __add__(self, other):
        return Metrics([self, other])

    def __radd__(self, other):
        # reached from `sum(...)`, which starts from 0; river's metrics never defer to it
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return Metrics([self])
        return Metrics([other, self])


class NMSE(_CombinesIntoMetrics, metrics_base.RegressionMetric):
    """Normalised mean squared error: the MSE divided by the variance of the targets.

    The paper's nMSE at time $t$ is

    $$\\text{nMSE}_t = \\frac{\\sum_{\\tau=1}^{t} (\\mu_\\tau - y_\\tau)^2}
    {t\\,\\text{Var}(y_{1:T})},$$

    where $\\mu_\\tau$ is the predictive mean and $\\text{Var}(y_{1:T})$ is the (population,
    ``ddof=0``) variance of the targets over the **whole** streamed part, as the paper's code
    computes it (``y.var()``). An online metric cannot know that variance in advance, hence two
    modes:

    - ``var_y`` given: it is used as the denominator; with ``var_y = numpy.var(y_stream)`` this is
      exactly the paper's figure at every step (the paper's nMSE curves).
    - ``var_y=None`` (default): the denominator is the running variance (``ddof=0``) of the
      targets seen so far, so ``get()`` after the last step equals the paper's final number, but
      intermediate values differ from the paper's curve (the denominator still moves). Until two
      different targets have been seen, that variance is 0 and ``get()`` returns NaN.

    A value of 1 is what predicting the mean of the targets would score; lower is better.

    ``y_pred`` may be a number or a predictive distribution (anything with a ``mu`` attribute,
    such as ``river.proba.Gaussian``, or a ``(mean, var)`` tuple), whose mean is used. So the
    metric also works on the output of :class:`~river_doebe.evaluate.WithDist`.

    Parameters
    ----------
    var_y
        Fixed variance of the targets to normalise by, or ``None`` for the running variance.

    Examples
    --------
    >>> from river_doebe import metrics

    >>> y_true = [3, -0.5, 2, 7]
    >>> y_pred = [2.5, 0.0, 2, 8]

    With the running variance of the targets seen so far:

    >>> metric = metrics.NMSE()
    >>> for yt, yp in zip(y_true, y_pred):
    ...     metric.update(yt, yp)
    ...     print(metric.get())
    nan
    0.0816...
    0.0769...
    0.0513...

    With the variance of the whole stream (here ``numpy.var(y_true) = 7.296875``), as in the
    paper; after the last step both agree:

    >>> metric = metrics.NMSE(var_y=7.296875)
    >>> for yt, yp in zip(y_true, y_pred):
    ...     metric.update(yt, yp)
    >>> metric
    NMSE: 0.051392

    """

    def __init__(self, var_y: float | None = None) -> None:
        if var_y is not None and not (var_y > 0 and math.isfinite(var_y)):
            raise ValueError(f"var_y must be positive and finite, got {var_y!r}")
        self.var_y = var_y
        self._w = 0.0  # total weight
        self._sse = 0.0  # weighted sum of squared errors
        self._mean = 0.0  # weighted running mean of the targets (Welford)
        self._m2 = 0.0  # weighted sum of squared deviations of the targets

    def update(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        err = y_true - _point(y_pred)
        self._sse += w * err * err
        self._w += w
        delta = y_true - self._mean
        self._mean += (w / self._w) * delta
        self._m2 += w * delta * (y_true - self._mean)

    def revert(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        err = y_true - _point(y_pred)
        self._sse -= w * err * err
        w_old = self._w - w
        if w_old <= 0.0:
            self._w = self._sse = self._mean = self._m2 = 0.0
            return
        mean_old = (self._w * self._mean - w * y_true) / w_old
        self._m2 -= w * (y_true - mean_old) * (y_true - self._mean)
        self._m2 = max(self._m2, 0.0)
        self._mean = mean_old
        self._w = w_old

    @property
    def mse(self) -> float:
        """The mean squared error so far (0 before any update)."""
        return self._sse / self._w if self._w > 0 else 0.0

    @property
    def var(self) -> float:
        """The denominator in use: ``var_y`` if given, else the running variance (``ddof=0``)."""
        if self.var_y is not None:
            return self.var_y
        return self._m2 / self._w if self._w > 0 else 0.0

    def get(self) -> float:
        var = self.var
        if var <= 0.0:
            return math.nan
        return self.mse / var


class _ScoresTheDistribution(_CombinesIntoMetrics, metrics_base.RegressionMetric):
    """A weighted mean over the stream of a score of the predictive distribution at the target,
    ``_term(y_true, y_pred)``: what the PLL, the coverage and the CRPS share."""

    #: Tells `Metrics` and :func:`~river_doebe.evaluate.progressive_scores` to pass the
    #: predictive distribution, not its mean.
    requires_distribution = True

    def __init__(self) -> None:
        self._w = 0.0
        self._sum = 0.0

    def _term(self, y_true: float, y_pred: Any) -> float:  # pragma: no cover - in every subclass
        raise NotImplementedError

    def update(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        # the term first: a prediction it refuses leaves the metric as it was
        self._sum += w * self._term(y_true, y_pred)
        self._w += w

    def revert(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        self._sum -= w * self._term(y_true, y_pred)
        self._w -= w
        if self._w <= 0.0:
            self._w = self._sum = 0.0

    def get(self) -> float:
        return self._sum / self._w if self._w > 0 else 0.0

    def works_with(self, model: Any) -> bool:
        # a regressor whose predicting step names with_dist (this package's models, river's
        # BayesianLinearRegression), alone, at the end of a pipeline or in a `WithDist`: a
        # **kwargs does not count, as a pipeline or `WithDist` around a point regressor takes
        # one and the first sample would then fail on its number
        return (is_regressor(model) and hasattr(last_step(model), "predict_one")
                and gives_distributions(model))


class PredictiveLogLikelihood(_ScoresTheDistribution):
    """Predictive log-likelihood: the mean of $\\log p(y_t \\mid x_t, \\text{past data})$.

    The paper's PLL (Section 5) is the average log density of each target under the model's
    one-step-ahead predictive distribution, made before the target was learnt. Higher is
    better. For a Gaussian predictive $\\mathcal{N}(\\mu_t, s_t^2)$ each term is
    $-\\frac{1}{2}\\log(2\\pi s_t^2) - (y_t - \\mu_t)^2 / (2 s_t^2)$.

    ``update(y_true, y_pred)`` needs the **distribution**: ``y_pred`` may be

    - an object with a ``log_pdf`` method, such as the ``river.proba.Gaussian`` that
      ``predict_one(x, with_dist=True)`` returns (this package's models and river's
      ``linear_model.BayesianLinearRegression`` do);
    - an object with ``mu`` and ``sigma`` attributes;
    - a Gaussian's ``(mean, variance)`` tuple.

    A plain number raises ``TypeError``. In progressive validation, either wrap the model in
    :class:`~river_doebe.evaluate.WithDist` and call ``evaluate.progressive_val_score`` as
    usual, or use :func:`~river_doebe.evaluate.progressive_scores`, which hands this metric the
    distribution and other metrics the mean.
    Combined with river's point metrics, put this one first, ``PredictiveLogLikelihood() +
    metrics.MAE()``, or write ``Metrics([metrics.MAE(), PredictiveLogLikelihood()])``: both
    give ``MAE`` the mean (see `Metrics`).

    A predictive variance of zero gives a log density of $-\\infty$ (or an error for a tuple):
    the metric then stays at $-\\infty$, which is the honest score.

    The ensembles of this package predict a mixture of their members' Gaussians
    (:class:`river_doebe.distributions.GaussianMixture`), and the metric scores its exact log
    density: that is the paper's definition, the mean of $\\log p(y_{t+1} \\mid
    x_{1:t+1}, y_{1:t})$. With ``moment_matched=True`` it scores the Gaussian with the same
    mean and variance instead, as the paper's code does (its reported figures): a mixture's own
    density is at least as good on average, and the two differ most when members that disagree
    by more than the noise share the weight.

    Parameters
    ----------
    moment_matched
        Score ``N(y; mu, sigma^2)`` from the prediction's ``mu`` and ``sigma`` even when it has
        a density of its own.

    Examples
    --------
    >>> from river_doebe import metrics
    >>> from river_doebe.distributions import gaussian

    >>> metric = metrics.PredictiveLogLikelihood()
    >>> metric.update(1.0, (0.0, 1.0))
    >>> metric.update(0.5, gaussian(0.0, 0.25))
    >>> metric
    PredictiveLogLikelihood: -1.072365

    A point prediction is refused:

    >>> metric.update(1.0, 0.9)
    Traceback (most recent call last):
    ...
    TypeError: PredictiveLogLikelihood needs a predictive distribution, got the number 0.9. ...

    With river's progressive validation:

    >>> from river import evaluate, linear_model
    >>> from river_doebe import datasets
    >>> from river_doebe.evaluate import WithDist
    >>> model = WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(
    ...     datasets.Drift(n_samples=500), model, metrics.PredictiveLogLikelihood()
    ... )
    PredictiveLogLikelihood: -1.23...

    """

    def __init__(self, moment_matched: bool = False) -> None:
        super().__init__()
        self.moment_matched = moment_matched

    @property
    def bigger_is_better(self) -> bool:
        return True

    def _term(self, y_true: float, y_pred: Any) -> float:
        if self.moment_matched and not isinstance(y_pred, tuple | list):
            mu, sigma = getattr(y_pred, "mu", None), getattr(y_pred, "sigma", None)
            if mu is not None and sigma is not None:
                return _gaussian_log_density(y_true, mu, sigma * sigma)
        return _log_density(y_pred, y_true)


#: Short alias of `PredictiveLogLikelihood`.
PLL = PredictiveLogLikelihood


class IntervalCoverage(_ScoresTheDistribution):
    """The share of targets inside the central ``level`` interval of their predictive.

    A calibrated model's central 90% intervals hold 90% of the targets: more means intervals
    too wide (the model is under-confident), fewer too narrow. The interval of a prediction
    runs from its ``(1 - level) / 2`` quantile to its ``(1 + level) / 2`` quantile, and the
    target counts as inside when ``(1 - level) / 2 <= F(y) <= (1 + level) / 2`` for the
    predictive CDF ``F``: the same event, since ``F`` is continuous and increasing, but exact
    and without a quantile (a mixture's have no closed form; see
    :func:`river_doebe.calibration.in_central_interval`). ``F`` is a Gaussian's in closed form,
    or the mixture's, the weighted sum of its components' CDFs, for an ensemble.

    ``y_pred`` is a distribution, as for `PredictiveLogLikelihood`: a
    :class:`~river_doebe.distributions.GaussianMixture`, a ``river.proba.Gaussian`` (anything
    with ``mu`` and ``sigma``), a ``(mean, variance)`` tuple, or any object with a ``cdf``
    method. A number raises ``TypeError``.

    A coverage is neither better high nor low: the best is ``level``. ``gap`` is the distance
    ``|coverage - level|``, and comparing two coverages (``is_better_than``, ``>``) compares
    their gaps, smaller being better, which is what ``bigger_is_better = False`` refers to.
    Code that ranks models by ``get()`` itself, such as river's successive halving, would
    prefer the narrowest intervals: rank by ``gap`` instead.

    Parameters
    ----------
    level
        The probability of the central interval, strictly between 0 and 1.

    Examples
    --------
    >>> from river_doebe import metrics
    >>> from river_doebe.distributions import GaussianMixture, gaussian

    >>> metric = metrics.IntervalCoverage(level=0.9)
    >>> metric.update(0.5, gaussian(0.0, 1.0))  # inside [-1.645, 1.645]
    >>> metric.update(2.0, gaussian(0.0, 1.0))  # outside
    >>> metric.update(2.0, GaussianMixture([0.5, 0.5], [0.0, 4.0], [1.0, 1.0]))
    >>> metric
    IntervalCoverage(level=0.9): 66.67%
    >>> round(metric.gap, 4)
    0.2333

    On a stream, with a model that gives its distribution:

    >>> from river import linear_model
    >>> from river_doebe import datasets
    >>> from river_doebe.evaluate import progressive_scores
    >>> result = progressive_scores(
    ...     datasets.Drift(n_samples=500),
    ...     linear_model.BayesianLinearRegression(),
    ...     {"90%": metrics.IntervalCoverage(0.9), "50%": metrics.IntervalCoverage(0.5)},
    ... )
    >>> {k: round(v, 2) for k, v in result.scores.items()}  # river versions differ by a sample
    {'90%': 0.96, '50%': 0.63}

    """

    _fmt = ".2%"
    level: float

    def __init__(self, level: float = 0.9) -> None:
        if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
            raise ValueError(f"level must be a number strictly between 0 and 1, got {level!r}")
        super().__init__()
        self.level = level

    @property
    def bigger_is_better(self) -> bool:
        return False  # of the gap, which `is_better_than` compares

    @property
    def gap(self) -> float:
        """``|coverage - level|``: 0 for a calibrated model, smaller is better."""
        return abs(self.get() - self.level)

    def is_better_than(self, other: Any) -> bool:
        return self.gap < other.gap

    def _term(self, y_true: float, y_pred: Any) -> float:
        inside = calibration.in_central_interval(y_pred, y_true, self.level, "IntervalCoverage")
        return 1.0 if inside else 0.0

    def __repr__(self):
        return f"{type(self).__name__}(level={self.level}): {self.get():{self._fmt}}"


class CRPS(_ScoresTheDistribution):
    """Continuous ranked probability score: the mean of $\\int (F_t(z) - 1[z \\ge y_t])^2 dz$.

    The CRPS compares the predictive CDF $F_t$ with the step of the target: it rewards a
    distribution both for being close to the target and for being sharp, and it is proper (the
    true distribution has the lowest expected score; Gneiting & Raftery, 2007). It is in the
    target's units, and for a point prediction it is the absolute error, so it reads like an
    MAE that also charges for the spread. Lower is better.

    The score has a closed form for a Gaussian and, through $E|X - y| - E|X - X'| / 2$, for a
    mixture of Gaussians (:func:`river_doebe.calibration.crps`): an ensemble is scored on its
    whole mixture, at a cost quadratic in its members with positive weight. ``y_pred`` is a
    :class:`~river_doebe.distributions.GaussianMixture`, a ``river.proba.Gaussian`` (anything
    with ``mu`` and ``sigma``) or a ``(mean, variance)`` tuple; a number raises ``TypeError``,
    as for `PredictiveLogLikelihood`. A Gaussian of variance 0 (a point mass) scores the
    absolute error.

    Examples
    --------
    >>> from river_doebe import metrics
    >>> from river_doebe.distributions import GaussianMixture, gaussian

    >>> metric = metrics.CRPS()
    >>> metric.update(0.0, gaussian(0.0, 1.0))
    >>> metric.update(1.0, GaussianMixture([0.75, 0.25], [0.0, 4.0], [1.0, 1.0]))
    >>> metric
    CRPS: 0.377937

    On a stream, with river's progressive validation:

    >>> from river import evaluate, linear_model
    >>> from river_doebe import datasets
    >>> from river_doebe.evaluate import WithDist
    >>> model = WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(datasets.Drift(n_samples=500), model, metrics.CRPS())
    CRPS: 0.4...

    """

    def _term(self, y_true: float, y_pred: Any) -> float:
        return calibration.crps(y_pred, y_true, "CRPS")


def _needs_distribution(metric: Any) -> bool:
    return bool(getattr(metric, "requires_distribution", False))


class Metrics(metrics_base.Metrics):
    """Regression metrics scored together, each given what it needs.

    river's own container, ``river.metrics.base.Metrics``, hands every metric the same
    prediction. That fails when distribution metrics and point metrics are mixed: given a
    predictive distribution (from a model wrapped in :class:`~river_doebe.evaluate.WithDist`),
    river's ``MAE`` cannot subtract it from the target; given a number,
    `PredictiveLogLikelihood` has no density to score. This container looks at each metric
    instead: those with ``requires_distribution`` (`PredictiveLogLikelihood`,
    `IntervalCoverage`, `CRPS`) get the distribution, all others (`NMSE`, river's ``MAE``,
    ``RMSE``, ``R2``, ...) get its mean (a number passes through unchanged). It is a river
    ``Metrics``, so ``evaluate.progressive_val_score`` and
    :func:`~river_doebe.evaluate.progressive_scores` take it.

    Adding a metric of this module to another regression metric builds one:
    ``PredictiveLogLikelihood() + MAE()`` and ``NMSE() + MAE()`` are ``Metrics``, and so is
    ``sum([PredictiveLogLikelihood(), MAE()])``. With a river metric first, ``MAE() +
    PredictiveLogLikelihood()`` is river's own container, which river builds without asking
    the second metric: spell that order ``Metrics([MAE(), PredictiveLogLikelihood()])``.
    Scoring river's container with a distribution raises a ``TypeError`` that says so.

    Parameters
    ----------
    metrics
        Regression metrics; river ``Metrics`` containers among them are flattened.
    str_sep
        The separator between the metrics in ``repr``.

    Examples
    --------
    >>> from river import evaluate, linear_model
    >>> from river import metrics as river_metrics
    >>> from river_doebe import datasets, metrics
    >>> from river_doebe.evaluate import WithDist

    >>> combined = metrics.PredictiveLogLikelihood() + river_metrics.MAE()
    >>> type(combined).__module__, type(combined).__name__
    ('river_doebe.metrics', 'Metrics')
    >>> model = WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(datasets.Drift(n_samples=500), model, combined)
    PredictiveLogLikelihood: -1.23...
    MAE: 0.61...

    With river's metric first, name the container:

    >>> combined = metrics.Metrics([river_metrics.MAE(), metrics.PredictiveLogLikelihood()])
    >>> model = WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(datasets.Drift(n_samples=500), model, combined)
    MAE: 0.61...
    PredictiveLogLikelihood: -1.23...

    river's own container would have given ``MAE`` the distribution:

    >>> river_made = river_metrics.MAE() + metrics.PredictiveLogLikelihood()
    >>> type(river_made).__module__
    'river.metrics.base'
    >>> model = WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(datasets.Drift(n_samples=500), model, river_made)
    Traceback (most recent call last):
    ...
    TypeError: PredictiveGaussian 𝒩(...) is a predictive distribution, not a number: ...

    """

    def __init__(self, metrics: Iterable, str_sep: str = "\n") -> None:
        flat: list = []
        for metric in metrics:
            flat.extend(metric if isinstance(metric, metrics_base.Metrics) else [metric])
        for metric in flat:
            if not isinstance(metric, metrics_base.Metric):
                raise TypeError(f"{metric!r} is not a river metric")
            if not isinstance(metric, metrics_base.RegressionMetric):
                raise ValueError(
                    f"{type(metric).__name__} is not a regression metric; "
                    "river_doebe.metrics.Metrics combines regression metrics (point and "
                    "distribution ones)"
                )
        super().__init__(flat, str_sep=str_sep)

    @property
    def requires_distribution(self) -> bool:
        """Whether some metric needs the predictive distribution."""
        return any(_needs_distribution(m) for m in self)

    def _point_of(self, y_pred):
        """The mean of ``y_pred`` for the point metrics, read before any metric is touched (a
        number with a distribution metric present is left to that metric to refuse)."""
        if self.requires_distribution and isinstance(y_pred, numbers.Real):
            return None
        return _point(y_pred)

    def update(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        point = self._point_of(y_pred)
        # the distribution metrics first: one refusing the prediction (a number, a bad
        # variance) raises before any metric has changed
        for m in self:
            if _needs_distribution(m):
                m.update(y_true, y_pred, w)
        for m in self:
            if not _needs_distribution(m):
                m.update(y_true, point, w)

    def revert(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        point = self._point_of(y_pred)
        for m in self:
            if _needs_distribution(m):
                m.revert(y_true, y_pred, w)
        for m in self:
            if not _needs_distribution(m):
                m.revert(y_true, point, w)

    def works_with(self, model: Any) -> bool:
        return is_regressor(model) and all(m.works_with(model) for m in self)

    def __add__(self, other):
        return type(self)([*self, other], str_sep=self.str_sep)

    def __radd__(self, other):
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return type(self)(list(self), str_sep=self.str_sep)
        return type(self)([other, *self], str_sep=self.str_sep)
