"""One-step-ahead evaluation that gives each metric what it needs, as ``river.evaluate`` does.

river's ``evaluate.progressive_val_score`` calls ``predict_one(x)`` and hands every metric that
number. The predictive log-likelihood of :mod:`river_doebe.metrics` needs the predictive
distribution instead. Two ways to score it:

- `WithDist` wraps a model so that ``predict_one(x)`` returns ``predict_one(x, with_dist=True)``;
  use it with river's ``progressive_val_score``. To score river's point metrics at the same
  time, combine the metrics with one of :mod:`river_doebe.metrics` first,
  ``PredictiveLogLikelihood() + MAE()``, or as ``Metrics([MAE(), PredictiveLogLikelihood()])``:
  that container hands the distribution to the metrics that need it and its mean to all others;
- `progressive_scores` runs the predict-then-learn loop itself and feeds each metric what it
  needs (a point prediction to ``NMSE`` and to river's metrics, the distribution to
  ``PredictiveLogLikelihood``), with optional traces for plotting, and returns a
  `ProgressiveResult`.

"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from river import base, proba, utils
from river.metrics import base as metrics_base

from river_doebe._compat import gives_distributions, is_classifier
from river_doebe.distributions import PredictiveGaussian
from river_doebe.engine import FilterError
from river_doebe.metrics import _point

__all__ = ["ProgressiveResult", "WithDist", "progressive_scores"]


class WithDist(base.Wrapper, base.Regressor):
    """Make a regressor's ``predict_one`` return its predictive distribution.

    ``WithDist(model).predict_one(x)`` returns ``model.predict_one(x, with_dist=True)``, and
    ``learn_one`` is forwarded unchanged. This lets river's ``evaluate.progressive_val_score``,
    which calls ``predict_one(x)`` without options, feed a distribution to
    :class:`~river_doebe.metrics.PredictiveLogLikelihood`. Every metric then receives the
    distribution: those of :mod:`river_doebe.metrics` accept it (``NMSE`` uses its mean);
    river's own point metrics, such as ``metrics.MAE``, get its mean when they are combined with
    a metric of that module, ``PredictiveLogLikelihood() + MAE()`` or
    ``Metrics([MAE(), PredictiveLogLikelihood()])`` (see :class:`~river_doebe.metrics.Metrics`).
    `progressive_scores` does the same without the wrapper.

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
    >>> from river_doebe.evaluate import WithDist

    >>> model = WithDist(linear_model.BayesianLinearRegression())
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

    #: its predict_one asks the model for the distribution: it gives one when the model does
    #: (:func:`river_doebe._compat.gives_distributions`)
    _asks_with_dist = True

    def __init__(self, model: Any) -> None:
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

    def learn_one(self, x: dict, y: Any, **kwargs: Any) -> None:
        self.model.learn_one(x, y, **kwargs)

    def predict_one(self, x: dict, **kwargs: Any) -> Any:
        kwargs.pop("with_dist", None)
        dist = self.model.predict_one(x, with_dist=True, **kwargs)
        if type(dist) is proba.Gaussian:
            return PredictiveGaussian._adopt(dist)
        return dist


def _variance(y_pred: Any) -> float:
    """The predictive variance carried by ``y_pred``, or NaN if it carries none."""
    sigma = getattr(y_pred, "sigma", None)
    if sigma is not None:
        return sigma * sigma
    if isinstance(y_pred, tuple | list) and len(y_pred) == 2:
        return float(y_pred[1])
    return math.nan


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


def _rolled(m: Any) -> metrics_base.Metric | None:
    """The metric a ``river.utils.Rolling`` computes over its window (river's ``Rolling`` is
    no metric itself: it hands every other attribute to the one it wraps), else ``None``."""
    inner = getattr(m, "obj", None)
    if isinstance(m, utils.Rolling) and isinstance(inner, metrics_base.Metric):
        return inner
    return None


def _named_metrics(metrics: Any) -> list[tuple[str, Any]]:
    if (isinstance(metrics, metrics_base.Metric) and not isinstance(metrics, metrics_base.Metrics)
            or _rolled(metrics) is not None):
        metrics = [metrics]
    if isinstance(metrics, dict):
        items = list(metrics.items())
    else:
        flat: list = []
        for m in metrics:
            flat.extend(m if isinstance(m, metrics_base.Metrics) else [m])
        seen: dict[str, int] = {}
        items = []
        for m in flat:
            inner = _rolled(m)
            name = type(m).__name__ if inner is None else f"Rolling{type(inner).__name__}"
            seen[name] = seen.get(name, 0) + 1
            items.append((name if seen[name] == 1 else f"{name}_{seen[name]}", m))
    for name, m in items:
        if not isinstance(m, metrics_base.Metric) and _rolled(m) is None:
            raise TypeError(f"{name!r} is not a river metric (or a river.utils.Rolling of one): "
                            f"{m!r}")
    return items


def _is_model(obj: Any) -> bool:
    return isinstance(obj, base.Estimator) or (
        callable(getattr(obj, "learn_one", None)) and callable(getattr(obj, "predict_one", None))
    )


def progressive_scores(
    dataset: Iterable,
    model: Any,
    metrics: Any,
    *,
    every: int | None = None,
    with_dist: bool | None = None,
    keep_predictions: bool = False,
    block_size: int = 256,
    on_learnt: Callable[[int], None] | None = None,
) -> ProgressiveResult:
    """Progressive (one-step-ahead) validation that gives each metric what it needs.

    The arguments come in the order of river's ``evaluate.progressive_val_score``: ``(dataset,
    model, metrics)``. For each ``(x, y)`` of ``dataset``, in order: predict for ``x``, update
    every metric with ``y`` and that prediction, and only then ``model.learn_one(x, y)``. No
    prediction ever depends on its own target. The model is called once per step:

    - for a regressor, ``predict_one(x, with_dist=True)`` when a distribution is needed (some
      metric has ``requires_distribution``, such as ``PredictiveLogLikelihood``, or
      ``with_dist=True``), else ``predict_one(x)``. Metrics that need the distribution get it;
      all others (``NMSE``, river's ``MAE``, ``R2``, ...) get its mean;
    - for a classifier, ``predict_proba_one(x)`` when some metric works on probabilities
      (``requires_labels`` is false, e.g. river's ``LogLoss``), else ``predict_one(x)``; label
      metrics get the most probable label.

    Where the model returns ``None``, no metric is updated, as in river. The metrics are updated
    in place, like ``evaluate.progressive_val_score`` does.

    A model of this package is fed ``block_size`` rows at a time through its
    ``predict_learn_many``, which returns, for each row, the prediction made before that row is
    learnt: the same numbers as the loop above, bit for bit, member by member in blocks of rows
    (faster). Other models (river's, pipelines, `WithDist`) take the loop.

    Parameters
    ----------
    dataset
        An iterable of ``(x, y)`` pairs, such as a river dataset.
    model
        A river regressor or classifier. It is trained in place.
    metrics
        A metric, a list of metrics (river ``Metrics`` containers are flattened), or a dict
        ``{name: metric}``; a metric over a window, ``river.utils.Rolling(metric, n)``, counts
        as one. In a list, a metric is named by its class (``Rolling`` and its metric's class
        for a rolling one), with ``_2``, ``_3``, ... appended to repeats.
    every
        If given, record every metric's value after every ``every`` samples, and after the
        last one (the traces, for plotting).
    with_dist
        Force (``True``) or forbid (``False``) asking a regressor for its distribution; by
        default it is asked only when a metric needs it. Forcing it gives the predictive
        variances with ``keep_predictions``.
    keep_predictions
        Whether to return the point predictions (and predictive variances) for every sample.
    block_size
        Rows per call of a model's ``predict_learn_many`` (``1``: one sample at a time).
    on_learnt
        Called as ``on_learnt(t)`` once the model has learnt the first ``t`` samples, to read
        its state (an E-DOEBE's weights, say): after every sample in the loop; in blocks, after
        each block, and the blocks end at every multiple of ``every`` and, while the model warms
        up (``is_warm`` false), after every sample.

    Returns
    -------
    A `ProgressiveResult`; ``result.scores`` holds the final values and ``result["NMSE"]`` is a
    shortcut.

    Examples
    --------
    >>> from river import linear_model, metrics as river_metrics
    >>> from river_doebe import datasets, metrics
    >>> from river_doebe.evaluate import progressive_scores

    >>> dataset = datasets.Drift(n_samples=500)
    >>> result = progressive_scores(
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
    >>> paper = progressive_scores(
    ...     dataset, linear_model.BayesianLinearRegression(), metrics.NMSE(var_y=y.var())
    ... )
    >>> bool(abs(paper["NMSE"] - result["NMSE"]) < 1e-12)
    True

    The model comes second, as in river:

    >>> model = linear_model.BayesianLinearRegression()
    >>> progressive_scores(model, dataset, metrics.NMSE())
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
    if isinstance(block_size, bool) or int(block_size) != block_size or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
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
            to_point = None  # type: ignore[assignment]
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
                if not gives_distributions(model):
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
    for y, y_pred in _one_step_ahead(dataset, model, predict, learn, is_clf, use_raw,
                                     int(block_size), every, on_learnt):
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
        t += 1
        if every is not None and t % every == 0:
            record(t)
    elapsed = time.perf_counter() - start
    if every is not None and t and (not steps or steps[-1] != t):
        record(t)
    _warn_if_never_warm(model, t)

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


def _parts(model):
    """The model and the models inside it (a pipeline's steps, a wrapper's model), depth first."""
    yield model
    steps = getattr(model, "steps", None)
    if isinstance(steps, dict):
        for step in steps.values():
            yield from _parts(step)
    inner = getattr(model, "_wrapped_model", None)
    if inner is not None and inner is not model:
        yield from _parts(inner)


def _warn_if_never_warm(model: Any, n_samples: int) -> None:
    """Say so when an E-DOEBE of ``model`` is still in its warm-up at the end of the stream: it
    predicted every sample with its fallback, and the ensemble never ran."""
    from river_doebe.edoebe import BaseEDOEBE

    for part in _parts(model):
        if isinstance(part, BaseEDOEBE) and part.models is None and not part.is_warm:
            warm = part._warm
            if warm is None or not warm.keep_window:
                continue  # nothing learnt, or a failed warm-up (which warned already)
            why = (f" (the target was constant over its first window; the window kept since the "
                   f"target first varied holds {warm.n_window} samples)" if warm.restarts else "")
            warnings.warn(
                f"{type(part).__name__}: the stream ended after {n_samples} samples, before the "
                f"end of the warm-up (n_warmup={part.n_warmup}): every prediction came from the "
                f"warm-up fallback and the ensemble never ran{why}. Give a smaller n_warmup (a "
                "fifth of the stream is a good start) or call finish_warmup()",
                RuntimeWarning,
                stacklevel=3,
            )


def _one_step_ahead(dataset, model, predict, learn, is_clf, use_raw, block_size, every,
                    on_learnt):
    """``(y, prediction made before learning (x, y))`` for every sample, in order: through
    the model's ``predict_learn_many`` in blocks when it has one, else predict then learn (the
    code after a ``yield`` runs when the caller asks for the next sample, so each sample is
    scored before it is learnt)."""
    many = getattr(model, "predict_learn_many", None) if block_size > 1 else None
    if many is None:
        for t, (x, y) in enumerate(dataset, start=1):
            y_pred = predict(x)
            yield y, y_pred
            learn(x, y)
            if on_learnt is not None:
                on_learnt(t)
        return
    if is_clf and not use_raw:
        from river_doebe.labels import argmax  # what the classifiers' predict_one returns

        def point(p):
            return argmax(p)

    else:

        def point(p):
            return p

    rows = iter(dataset)
    t = 0
    while True:
        size = block_size if getattr(model, "is_warm", True) else 1
        if every is not None:
            size = min(size, every - t % every)
        chunk = list(itertools.islice(rows, size))
        if not chunk:
            return
        ys = [y for _, y in chunk]
        try:
            preds = many([x for x, _ in chunk], ys, with_dist=use_raw and not is_clf)
        except FilterError as err:
            if not hasattr(err, "row"):
                raise
            # (the block's row, counted from the stream's start; a block's predictions are
            # scored once it is learnt whole: the refused sample's block is not)
            raise FilterError(f"sample {t + err.row} of the stream (counting from 0) "
                              f"{err.detail}; the samples before it were learnt, those of its "
                              f"block of {len(chunk)} not scored") from None
        for y, p in zip(ys, preds, strict=True):
            yield y, point(p)
        t += len(chunk)
        if on_learnt is not None:
            on_learnt(t)
