"""Metrics of the DOEBE paper, and a one-step-ahead evaluation driver.

The paper scores a stream with two numbers (Section 5):

- the normalised mean squared error, ``nMSE_t = sum_{tau<=t} (mu_tau - y_tau)^2 / (t Var(y))``,
  where ``mu_tau`` is the predictive mean and ``Var(y)`` the variance of the targets of the
  whole streamed part: `NMSE`;
- the predictive log-likelihood, the mean of ``log p(y_t | x_t, past data)`` under the model's
  predictive distribution: `PredictiveLogLikelihood`.

Both are river metrics (``update(y_true, y_pred)``, ``revert``, ``get``). The log-likelihood needs
the predictive distribution, not a point prediction; river's ``evaluate.progressive_val_score``
only calls ``predict_one(x)``. Two ways around that are provided:

- `WithDist` wraps a model so that ``predict_one(x)`` returns ``predict_one(x, with_dist=True)``;
  use it with ``progressive_val_score``. To score river's point metrics at the same time,
  combine the metrics with one of this module first, ``PredictiveLogLikelihood() + MAE()``, or
  as ``Metrics([MAE(), PredictiveLogLikelihood()])``: that container (`Metrics`) hands the
  distribution to the metrics that need it and its mean to all others;
- `progressive_scores` runs the predict-then-learn loop itself and feeds each metric what it
  needs (a point prediction to `NMSE` and to river's metrics, the distribution to
  `PredictiveLogLikelihood`), with optional traces for plotting.

"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import time

import numpy as np
from river import base, proba
from river.metrics import base as metrics_base

from river_doebe._compat import is_classifier, is_regressor
from river_doebe.distributions import PredictiveGaussian

__all__ = [
    "NMSE",
    "Metrics",
    "PLL",
    "PredictiveLogLikelihood",
    "ProgressiveResult",
    "WithDist",
    "progressive_scores",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


# ---------------------------------------------------------------------------------------------
# Reading predictions
# ---------------------------------------------------------------------------------------------


def _point(y_pred):
    """The point prediction carried by ``y_pred``: itself if a number, else the mean."""
    if type(y_pred) is float:
        return y_pred
    if isinstance(y_pred, numbers.Real):
        return float(y_pred)
    mu = getattr(y_pred, "mu", None)
    if mu is not None:
        return float(mu)
    if isinstance(y_pred, tuple | list) and len(y_pred) == 2:
        return float(y_pred[0])
    raise TypeError(
        f"Cannot read a point prediction from {type(y_pred).__name__!r}: expected a number, a "
        "distribution with a `mu` attribute (e.g. river.proba.Gaussian) or a (mean, var) tuple."
    )


def _variance(y_pred) -> float:
    """The predictive variance carried by ``y_pred``, or NaN if it carries none."""
    sigma = getattr(y_pred, "sigma", None)
    if sigma is not None:
        return sigma * sigma
    if isinstance(y_pred, tuple | list) and len(y_pred) == 2:
        return float(y_pred[1])
    return math.nan


def _gaussian_log_density(y, mean, var) -> float:
    if not (var > 0.0 and math.isfinite(var)):
        raise ValueError(f"a predictive variance must be positive and finite, got {var!r}")
    r = y - mean
    return -0.5 * r * r / var - 0.5 * math.log(var) - _HALF_LOG_2PI


def _log_density(y_pred, y_true) -> float:
    """``log p(y_true)`` under the predictive distribution ``y_pred``."""
    if y_pred is None or isinstance(y_pred, numbers.Real):
        raise TypeError(
            "PredictiveLogLikelihood needs a predictive distribution, got the number "
            f"{y_pred!r}. Call `model.predict_one(x, with_dist=True)`, wrap the model in "
            "`river_doebe.metrics.WithDist` for `evaluate.progressive_val_score`, or use "
            "`river_doebe.metrics.progressive_scores`."
        )
    log_pdf = getattr(y_pred, "log_pdf", None)
    if log_pdf is not None:
        return float(log_pdf(y_true))
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
    metric also works on the output of `WithDist`.

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

    def __init__(self, var_y=None):
        if var_y is not None and not (var_y > 0 and math.isfinite(var_y)):
            raise ValueError(f"var_y must be positive and finite, got {var_y!r}")
        self.var_y = var_y
        self._w = 0.0  # total weight
        self._sse = 0.0  # weighted sum of squared errors
        self._mean = 0.0  # weighted running mean of the targets (Welford)
        self._m2 = 0.0  # weighted sum of squared deviations of the targets

    def update(self, y_true, y_pred, w=1.0) -> None:
        err = y_true - _point(y_pred)
        self._sse += w * err * err
        self._w += w
        delta = y_true - self._mean
        self._mean += (w / self._w) * delta
        self._m2 += w * delta * (y_true - self._mean)

    def revert(self, y_true, y_pred, w=1.0) -> None:
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


class PredictiveLogLikelihood(_CombinesIntoMetrics, metrics_base.RegressionMetric):
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
    `WithDist` and call ``evaluate.progressive_val_score`` as usual, or use
    `progressive_scores`, which hands this metric the distribution and other metrics the mean.
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
    >>> model = metrics.WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(
    ...     datasets.Drift(n_samples=500), model, metrics.PredictiveLogLikelihood()
    ... )
    PredictiveLogLikelihood: -1.23...

    """

    #: Tells `progressive_scores` to pass the predictive distribution, not its mean.
    requires_distribution = True

    def __init__(self, moment_matched: bool = False):
        self.moment_matched = moment_matched
        self._w = 0.0
        self._sum = 0.0

    @property
    def bigger_is_better(self):
        return True

    def _term(self, y_true, y_pred) -> float:
        if self.moment_matched and not isinstance(y_pred, tuple | list):
            mu, sigma = getattr(y_pred, "mu", None), getattr(y_pred, "sigma", None)
            if mu is not None and sigma is not None:
                return _gaussian_log_density(y_true, mu, sigma * sigma)
        return _log_density(y_pred, y_true)

    def update(self, y_true, y_pred, w=1.0) -> None:
        self._sum += w * self._term(y_true, y_pred)
        self._w += w

    def revert(self, y_true, y_pred, w=1.0) -> None:
        self._sum -= w * self._term(y_true, y_pred)
        self._w -= w
        if self._w <= 0.0:
            self._w = self._sum = 0.0

    def get(self) -> float:
        return self._sum / self._w if self._w > 0 else 0.0


#: Short alias of `PredictiveLogLikelihood`.
PLL = PredictiveLogLikelihood


def _needs_distribution(metric) -> bool:
    return bool(getattr(metric, "requires_distribution", False))


class Metrics(metrics_base.Metrics):
    """Regression metrics scored together, each given what it needs.

    river's own container, ``river.metrics.base.Metrics``, hands every metric the same
    prediction. That fails when distribution metrics and point metrics are mixed: given a
    predictive distribution (from a model wrapped in `WithDist`), river's ``MAE`` cannot
    subtract it from the target; given a number, `PredictiveLogLikelihood` has no density to
    score. This container looks at each metric instead: those with ``requires_distribution``
    (`PredictiveLogLikelihood`) get the distribution, all others (`NMSE`, river's ``MAE``,
    ``RMSE``, ``R2``, ...) get its mean (a number passes through unchanged). It is a river
    ``Metrics``, so ``evaluate.progressive_val_score`` and `progressive_scores` take it.

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

    >>> combined = metrics.PredictiveLogLikelihood() + river_metrics.MAE()
    >>> type(combined).__module__, type(combined).__name__
    ('river_doebe.metrics', 'Metrics')
    >>> model = metrics.WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(datasets.Drift(n_samples=500), model, combined)
    PredictiveLogLikelihood: -1.23...
    MAE: 0.61...

    With river's metric first, name the container:

    >>> combined = metrics.Metrics([river_metrics.MAE(), metrics.PredictiveLogLikelihood()])
    >>> model = metrics.WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(datasets.Drift(n_samples=500), model, combined)
    MAE: 0.61...
    PredictiveLogLikelihood: -1.23...

    river's own container would have given ``MAE`` the distribution:

    >>> river_made = river_metrics.MAE() + metrics.PredictiveLogLikelihood()
    >>> type(river_made).__module__
    'river.metrics.base'
    >>> model = metrics.WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(datasets.Drift(n_samples=500), model, river_made)
    Traceback (most recent call last):
    ...
    TypeError: PredictiveGaussian 𝒩(...) is a predictive distribution, not a number: ...

    """

    def __init__(self, metrics, str_sep="\n"):
        flat = []
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

    def update(self, y_true, y_pred, w=1.0) -> None:
        point = self._point_of(y_pred)
        # the distribution metrics first: one refusing the prediction (a number, a bad
        # variance) raises before any metric has changed
        for m in self:
            if _needs_distribution(m):
                m.update(y_true, y_pred, w)
        for m in self:
            if not _needs_distribution(m):
                m.update(y_true, point, w)

    def revert(self, y_true, y_pred, w=1.0) -> None:
        point = self._point_of(y_pred)
        for m in self:
            if _needs_distribution(m):
                m.revert(y_true, y_pred, w)
        for m in self:
            if not _needs_distribution(m):
                m.revert(y_true, point, w)

    def works_with(self, model) -> bool:
        return is_regressor(model) and all(m.works_with(model) for m in self)

    def __add__(self, other):
        return type(self)([*self, other], str_sep=self.str_sep)

    def __radd__(self, other):
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return type(self)(list(self), str_sep=self.str_sep)
        return type(self)([other, *self], str_sep=self.str_sep)


# ---------------------------------------------------------------------------------------------
# Progressive validation with predictive distributions
# ---------------------------------------------------------------------------------------------


class WithDist(base.Wrapper, base.Regressor):
    """Make a regressor's ``predict_one`` return its predictive distribution.

    ``WithDist(model).predict_one(x)`` returns ``model.predict_one(x, with_dist=True)``, and
    ``learn_one`` is forwarded unchanged. This lets river's ``evaluate.progressive_val_score``,
    which calls ``predict_one(x)`` without options, feed a distribution to
    `PredictiveLogLikelihood`. Every metric then receives the distribution: those of this
    module accept it (`NMSE` uses its mean); river's own point metrics, such as
    ``metrics.MAE``, get its mean when they are combined with a metric of this module,
    ``PredictiveLogLikelihood() + MAE()`` or ``Metrics([MAE(), PredictiveLogLikelihood()])``
    (see `Metrics`). `progressive_scores` does the same without the wrapper.

    A river ``proba.Gaussian`` is returned as a `river_doebe.distributions.PredictiveGaussian`
    with the same state (still a ``proba.Gaussian``), whose arithmetic raises a ``TypeError``
    that explains how to combine the metrics if a point metric is handed the distribution.

    Parameters
    ----------
    model
        A regressor whose ``predict_one`` accepts ``with_dist=True``: this package's models,
        river's ``linear_model.BayesianLinearRegression``, or a pipeline ending in one.

    Examples
    --------
    >>> from river import evaluate, linear_model, proba
    >>> from river import metrics as river_metrics
    >>> from river_doebe import datasets, metrics

    >>> model = metrics.WithDist(linear_model.BayesianLinearRegression())
    >>> evaluate.progressive_val_score(
    ...     datasets.Drift(n_samples=500),
    ...     model,
    ...     metrics.NMSE() + metrics.PredictiveLogLikelihood() + river_metrics.MAE(),
    ... )
    NMSE: 0.52...
    PredictiveLogLikelihood: -1.23...
    MAE: 0.61...

    >>> x, _ = next(iter(datasets.Drift()))
    >>> isinstance(model.predict_one(x), proba.Gaussian)
    True

    """

    def __init__(self, model):
        self.model = model

    @property
    def _wrapped_model(self):
        return self.model

    @classmethod
    def _unit_test_params(cls):
        from river import linear_model

        yield {"model": linear_model.BayesianLinearRegression()}

    def _unit_test_skips(self):
        # The predictions are distribution objects, which this check compares with `==`;
        # feature-order invariance is the wrapped model's property and is checked on it.
        return {"check_shuffle_features_no_impact"}

    def learn_one(self, x, y, **kwargs):
        self.model.learn_one(x, y, **kwargs)

    def predict_one(self, x, **kwargs):
        kwargs.pop("with_dist", None)
        dist = self.model.predict_one(x, with_dist=True, **kwargs)
        if type(dist) is proba.Gaussian:
            return PredictiveGaussian._adopt(dist)
        return dist


@dataclasses.dataclass
class ProgressiveResult:
    """What `progressive_scores` returns.

    Attributes
    ----------
    scores
        Final value of each metric, by name.
    n_samples
        Number of samples streamed.
    steps
        Sample counts (1-based) at which the traces were recorded; empty without ``every``.
    traces
        Value of each metric at each of ``steps``, by name.
    predictions
        With ``keep_predictions=True``: the point prediction (predictive mean, or label) made
        for each sample before learning it; NaN where the model returned ``None``.
    variances
        With ``keep_predictions=True`` and predictive distributions: the predictive variance
        for each sample; otherwise ``None``.
    elapsed
        Wall-clock seconds spent in the loop.

    """

    scores: dict
    n_samples: int
    steps: np.ndarray
    traces: dict
    predictions: np.ndarray | None = None
    variances: np.ndarray | None = None
    elapsed: float = 0.0

    def __getitem__(self, name):
        return self.scores[name]


def _named_metrics(metrics) -> list[tuple[str, metrics_base.Metric]]:
    if isinstance(metrics, metrics_base.Metric) and not isinstance(metrics, metrics_base.Metrics):
        metrics = [metrics]
    if isinstance(metrics, dict):
        items = list(metrics.items())
    else:
        flat = []
        for m in metrics:
            flat.extend(m if isinstance(m, metrics_base.Metrics) else [m])
        items, seen = [], {}
        for m in flat:
            name = type(m).__name__
            seen[name] = seen.get(name, 0) + 1
            items.append((name if seen[name] == 1 else f"{name}_{seen[name]}", m))
    for name, m in items:
        if not isinstance(m, metrics_base.Metric):
            raise TypeError(f"{name!r} is not a river metric: {m!r}")
    return items


def _accepts_with_dist(method) -> bool:
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return True
    return "with_dist" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def _is_model(obj) -> bool:
    return isinstance(obj, base.Estimator) or (
        callable(getattr(obj, "learn_one", None)) and callable(getattr(obj, "predict_one", None))
    )


def progressive_scores(
    dataset,
    model,
    metrics,
    *,
    every: int | None = None,
    with_dist: bool | None = None,
    keep_predictions: bool = False,
) -> ProgressiveResult:
    """Progressive (one-step-ahead) validation that gives each metric what it needs.

    The arguments come in the order of river's ``evaluate.progressive_val_score``: ``(dataset,
    model, metrics)``. For each ``(x, y)`` of ``dataset``, in order: predict for ``x``, update
    every metric with ``y`` and that prediction, and only then ``model.learn_one(x, y)``. No
    prediction ever depends on its own target. The model is called once per step:

    - for a regressor, ``predict_one(x, with_dist=True)`` when a distribution is needed (some
      metric has ``requires_distribution``, such as `PredictiveLogLikelihood`, or
      ``with_dist=True``), else ``predict_one(x)``. Metrics that need the distribution get it;
      all others (`NMSE`, river's ``MAE``, ``R2``, ...) get its mean;
    - for a classifier, ``predict_proba_one(x)`` when some metric works on probabilities
      (``requires_labels`` is false, e.g. river's ``LogLoss``), else ``predict_one(x)``; label
      metrics get the most probable label.

    Where the model returns ``None``, no metric is updated, as in river. The metrics are updated
    in place, like ``evaluate.progressive_val_score`` does.

    Parameters
    ----------
    dataset
        An iterable of ``(x, y)`` pairs, such as a river dataset.
    model
        A river regressor or classifier. It is trained in place.
    metrics
        A metric, a list of metrics (river ``Metrics`` containers are flattened), or a dict
        ``{name: metric}``. In a list, a metric is named by its class, with ``_2``, ``_3``, ...
        appended to repeats.
    every
        If given, record every metric's value after every ``every`` samples, and after the
        last one (the traces, for plotting).
    with_dist
        Force (``True``) or forbid (``False``) asking a regressor for its distribution; by
        default it is asked only when a metric needs it. Forcing it gives the predictive
        variances with ``keep_predictions``.
    keep_predictions
        Whether to return the point predictions (and predictive variances) for every sample.

    Returns
    -------
    A `ProgressiveResult`; ``result.scores`` holds the final values and ``result["NMSE"]`` is a
    shortcut.

    Examples
    --------
    >>> from river import linear_model, metrics as river_metrics
    >>> from river_doebe import datasets, metrics

    >>> dataset = datasets.Drift(n_samples=500)
    >>> result = metrics.progressive_scores(
    ...     dataset,
    ...     linear_model.BayesianLinearRegression(),
    ...     [metrics.NMSE(), metrics.PredictiveLogLikelihood(), river_metrics.MAE()],
    ...     every=100,
    ... )
    >>> result.scores
    {'NMSE': 0.52..., 'PredictiveLogLikelihood': -1.23..., 'MAE': 0.61...}
    >>> result.steps
    array([100, 200, 300, 400, 500])
    >>> result.traces["NMSE"].shape
    (5,)

    The paper's nMSE divides by the variance of all the streamed targets:

    >>> _, y = dataset.arrays()
    >>> paper = metrics.progressive_scores(
    ...     dataset, linear_model.BayesianLinearRegression(), metrics.NMSE(var_y=y.var())
    ... )
    >>> bool(abs(paper["NMSE"] - result["NMSE"]) < 1e-12)
    True

    The model comes second, as in river:

    >>> model = linear_model.BayesianLinearRegression()
    >>> metrics.progressive_scores(model, dataset, metrics.NMSE())
    Traceback (most recent call last):
    ...
    TypeError: progressive_scores takes (dataset, model, metrics), like river's ...

    """
    if _is_model(dataset):
        raise TypeError(
            "progressive_scores takes (dataset, model, metrics), like river's "
            "evaluate.progressive_val_score, but its first argument is the model "
            f"{type(dataset).__name__}: call progressive_scores(dataset, model, metrics)"
        )
    if not _is_model(model):
        raise TypeError(
            "progressive_scores takes (dataset, model, metrics): the second argument must be a "
            f"river model with learn_one and predict_one, got {type(model).__name__}"
        )
    if every is not None and (int(every) != every or every < 1):
        raise ValueError(f"every must be a positive integer, got {every!r}")
    named = _named_metrics(metrics)
    is_clf = is_classifier(model)

    if is_clf:
        raw = [not getattr(m, "requires_labels", True) for _, m in named]
        use_raw = any(raw)
        if use_raw:
            predict = model.predict_proba_one

            def to_point(p):
                return max(p, key=p.get) if p else None

        else:
            predict = model.predict_one
            to_point = None
    else:
        raw = [bool(getattr(m, "requires_distribution", False)) for _, m in named]
        use_raw = any(raw) if with_dist is None else bool(with_dist)
        if any(raw) and not use_raw:
            needs = [name for (name, _), r in zip(named, raw, strict=True) if r]
            raise ValueError(f"with_dist=False, but {needs} need a predictive distribution")
        if use_raw:
            if isinstance(model, WithDist):
                predict = model.predict_one
            else:
                if not _accepts_with_dist(model.predict_one):
                    raise TypeError(
                        f"{type(model).__name__}.predict_one does not accept `with_dist`, so it "
                        "cannot give the predictive distribution that "
                        f"{[n for (n, _), r in zip(named, raw, strict=True) if r] or 'with_dist'}"
                        " needs."
                    )
                predict_one = model.predict_one

                def predict(x):
                    return predict_one(x, with_dist=True)

        else:
            predict = model.predict_one
        to_point = _point  # a float for every regression metric, whatever the model returns

    raw_updates = [m.update for (_, m), r in zip(named, raw, strict=True) if r]
    point_updates = [m.update for (_, m), r in zip(named, raw, strict=True) if not r]
    learn = model.learn_one
    keep_var = keep_predictions and use_raw and not is_clf
    preds: list = []
    variances: list = []
    steps: list[int] = []
    trace_rows: list[list[float]] = []

    def record(t):
        steps.append(t)
        trace_rows.append([m.get() for _, m in named])

    t = 0
    start = time.perf_counter()
    for x, y in dataset:
        y_pred = predict(x)
        if y_pred is not None:
            point = to_point(y_pred) if to_point is not None else y_pred
            for update in raw_updates:
                update(y, y_pred)
            if point is not None:
                for update in point_updates:
                    update(y, point)
        else:
            point = None
        if keep_predictions:
            preds.append(math.nan if point is None else point)
            if keep_var:
                variances.append(math.nan if y_pred is None else _variance(y_pred))
        learn(x, y)
        t += 1
        if every is not None and t % every == 0:
            record(t)
    elapsed = time.perf_counter() - start
    if every is not None and t and (not steps or steps[-1] != t):
        record(t)

    table = np.array(trace_rows, dtype=float).reshape(len(steps), len(named))
    return ProgressiveResult(
        scores={name: m.get() for name, m in named},
        n_samples=t,
        steps=np.array(steps, dtype=int),
        traces={name: table[:, j].copy() for j, (name, _) in enumerate(named)},
        predictions=np.array(preds) if keep_predictions else None,
        variances=np.array(variances, dtype=float) if keep_var else None,
        elapsed=elapsed,
    )
