"""Tests of river_doebe.evaluate: WithDist and progressive_scores against hand-written
predict-then-learn loops and river's own progressive validation, with this package's metrics and
river's."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
from river import base, evaluate, linear_model
from river import metrics as river_metrics
from scipy.stats import norm

from river_doebe import datasets, metrics
from river_doebe.evaluate import ProgressiveResult, WithDist, progressive_scores

# ---------------------------------------------------------------------------------------------
# WithDist and progressive_scores, checked against hand-written predict-then-learn loops
# ---------------------------------------------------------------------------------------------


def _hand_loop(dataset, make_model):
    """One-step-ahead loop written out: the reference for the helpers."""
    model = make_model()
    y_all, means, variances = [], [], []
    for x, y in dataset:
        dist = model.predict_one(x, with_dist=True)
        means.append(dist.mu)
        variances.append(dist.sigma**2)
        y_all.append(y)
        model.learn_one(x, y)
    return np.array(y_all), np.array(means), np.array(variances)


@pytest.fixture(scope="module")
def drift():
    return datasets.Drift(n_samples=400, seed=1)


@pytest.fixture(scope="module")
def reference(drift):
    return _hand_loop(drift, linear_model.BayesianLinearRegression)


def test_with_dist_wrapper(drift, reference):
    y, means, variances = reference
    model = WithDist(linear_model.BayesianLinearRegression())
    assert isinstance(model, base.Regressor)
    metric = metrics.NMSE() + metrics.PredictiveLogLikelihood()
    evaluate.progressive_val_score(drift, model, metric)
    nmse, pll = metric
    assert nmse.get() == pytest.approx(np.mean((y - means) ** 2) / np.var(y), rel=1e-9)
    expected_pll = np.mean(norm.logpdf(y, loc=means, scale=np.sqrt(variances)))
    assert pll.get() == pytest.approx(expected_pll, rel=1e-9)
    # the wrapper trained the inner model exactly like the hand loop did
    x, _ = next(iter(drift))
    inner = model.model.predict_one(x, with_dist=True)
    assert model.predict_one(x).mu == inner.mu
    assert model.predict_one(x, with_dist=False).mu == inner.mu  # always a distribution
    clone = model.clone()
    assert isinstance(clone, WithDist) and clone.model is not model.model


def test_with_dist_passes_river_checks():
    from river import checks

    checks.check_estimator(WithDist(linear_model.BayesianLinearRegression()))


def test_with_dist_wrapper_in_pipeline(drift):
    from river import preprocessing

    def make():
        return preprocessing.StandardScaler() | linear_model.BayesianLinearRegression()

    wrapped, plain = WithDist(make()), make()
    pll_w, pll_p = metrics.PLL(), metrics.PLL()
    for x, y in drift.take(100):
        pll_w.update(y, wrapped.predict_one(x))
        pll_p.update(y, plain.predict_one(x, with_dist=True))
        wrapped.learn_one(x, y)
        plain.learn_one(x, y)
    assert pll_w.get() == pll_p.get()


def test_progressive_scores_equals_hand_loop(drift, reference):
    y, means, variances = reference
    result = progressive_scores(
        drift,
        linear_model.BayesianLinearRegression(),
        [
            metrics.NMSE(),
            metrics.NMSE(var_y=float(np.var(y))),
            metrics.PredictiveLogLikelihood(),
            river_metrics.MAE(),
            river_metrics.RMSE(),
        ],
        every=50,
        keep_predictions=True,
    )
    assert isinstance(result, ProgressiveResult)
    assert list(result.scores) == ["NMSE", "NMSE_2", "PredictiveLogLikelihood", "MAE", "RMSE"]
    assert result.n_samples == len(y) == 400
    logpdf = norm.logpdf(y, loc=means, scale=np.sqrt(variances))
    assert result["NMSE"] == pytest.approx(np.mean((y - means) ** 2) / np.var(y), rel=1e-9)
    assert result["NMSE_2"] == pytest.approx(result["NMSE"], rel=1e-9)
    assert result["PredictiveLogLikelihood"] == pytest.approx(np.mean(logpdf), rel=1e-9)
    assert result["MAE"] == pytest.approx(np.mean(np.abs(y - means)), rel=1e-9)
    assert result["RMSE"] == pytest.approx(np.sqrt(np.mean((y - means) ** 2)), rel=1e-9)
    np.testing.assert_allclose(result.predictions, means, rtol=1e-12)
    np.testing.assert_allclose(result.variances, variances, rtol=1e-12)
    # traces
    assert np.array_equal(result.steps, np.arange(50, 401, 50))
    t = result.steps
    paper_curve = np.cumsum((y - means) ** 2)[t - 1] / (t * np.var(y))
    np.testing.assert_allclose(result.traces["NMSE_2"], paper_curve, rtol=1e-9)
    running = [np.mean((y[:k] - means[:k]) ** 2) / np.var(y[:k]) for k in t]
    np.testing.assert_allclose(result.traces["NMSE"], running, rtol=1e-9)
    pll_curve = np.cumsum(logpdf)[t - 1] / t
    np.testing.assert_allclose(result.traces["PredictiveLogLikelihood"], pll_curve, rtol=1e-9)
    assert result.elapsed > 0


def test_progressive_scores_equals_river_progressive_val_score(drift):
    mine = progressive_scores(
        drift, linear_model.BayesianLinearRegression(), {"mae": river_metrics.MAE()}
    )
    theirs = river_metrics.MAE()
    evaluate.progressive_val_score(drift, linear_model.BayesianLinearRegression(), theirs)
    assert mine["mae"] == theirs.get()
    # the same through WithDist, with a distribution metric
    mine = progressive_scores(
        drift, WithDist(linear_model.BayesianLinearRegression()), metrics.PLL()
    )
    theirs = metrics.PLL()
    evaluate.progressive_val_score(
        drift, WithDist(linear_model.BayesianLinearRegression()), theirs
    )
    assert mine["PredictiveLogLikelihood"] == theirs.get()


def test_progressive_scores_point_only_skips_distribution(drift):
    calls = []

    class Spy(linear_model.BayesianLinearRegression):
        def predict_one(self, x, with_dist=False):
            calls.append(with_dist)
            return super().predict_one(x, with_dist=with_dist)

    result = progressive_scores(drift.take(20), Spy(), [metrics.NMSE()])
    assert calls == [False] * 20 and result.predictions is None and result.variances is None
    calls.clear()
    result = progressive_scores(
        drift.take(20), Spy(), [metrics.NMSE()], with_dist=True, keep_predictions=True
    )
    assert calls == [True] * 20 and len(result.variances) == 20
    with pytest.raises(ValueError, match="with_dist=False"):
        progressive_scores(drift.take(5), Spy(), [metrics.PLL()], with_dist=False)


class _LastTarget(base.Regressor):
    """Predicts the last target it learnt: any look-ahead would show up as a perfect score."""

    def __init__(self):
        self.last = 0.0
        self.log = []

    def learn_one(self, x, y):
        self.log.append(("learn", y))
        self.last = y

    def predict_one(self, x, with_dist=False):
        self.log.append(("predict", None))
        return (self.last, 1.0) if with_dist else self.last


def test_progressive_scores_is_one_step_ahead():
    ys = [1.0, 5.0, -2.0, 4.0, 0.5]
    stream = [({"a": 1.0}, y) for y in ys]
    model = _LastTarget()
    result = progressive_scores(
        stream, model, [metrics.PLL()], every=2, keep_predictions=True
    )
    assert model.log == [step for y in ys for step in (("predict", None), ("learn", y))]
    np.testing.assert_array_equal(result.predictions, [0.0, *ys[:-1]])
    expected = norm.logpdf(ys, loc=[0.0, *ys[:-1]], scale=1.0)
    assert result["PredictiveLogLikelihood"] == pytest.approx(expected.mean(), rel=1e-12)
    # the trace ends with the last sample even when it is not a multiple of `every`
    assert list(result.steps) == [2, 4, 5]
    assert result.traces["PredictiveLogLikelihood"][-1] == result["PredictiveLogLikelihood"]


def test_progressive_scores_errors():
    class NoDist(base.Regressor):
        def learn_one(self, x, y):
            pass

        def predict_one(self, x):
            return 0.0

    with pytest.raises(TypeError, match="with_dist"):
        progressive_scores([({"a": 1.0}, 1.0)], NoDist(), [metrics.PLL()])
    with pytest.raises(ValueError, match="every"):
        progressive_scores([], NoDist(), [metrics.NMSE()], every=0)
    with pytest.raises(TypeError, match="not a river metric"):
        progressive_scores([], NoDist(), [metrics.NMSE(), "MAE"])
    empty = progressive_scores([], NoDist(), metrics.NMSE(), every=3)
    assert empty.n_samples == 0 and len(empty.steps) == 0 and empty.traces["NMSE"].shape == (0,)


def test_progressive_scores_skips_none_predictions():
    class Lazy(base.Regressor):
        def __init__(self):
            self.n = 0

        def learn_one(self, x, y):
            self.n += 1

        def predict_one(self, x, with_dist=False):
            return None if self.n < 2 else (1.0, 1.0)

    stream = [({"a": 1.0}, y) for y in (3.0, 4.0, 1.0, 2.0)]
    result = progressive_scores(stream, Lazy(), [metrics.NMSE()], keep_predictions=True)
    assert np.isnan(result.predictions[:2]).all()
    assert result["NMSE"] == pytest.approx(np.mean([0.0, 1.0]) / np.var([1.0, 2.0]))


def test_progressive_scores_classifier():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 2))
    labels = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=300)) > 0
    stream = [({"a": a, "b": b}, bool(t)) for (a, b), t in zip(X, labels, strict=True)]
    result = progressive_scores(
        stream,
        linear_model.LogisticRegression(),
        [river_metrics.Accuracy(), river_metrics.LogLoss()],
        every=100,
    )
    acc, logloss = river_metrics.Accuracy(), river_metrics.LogLoss()
    evaluate.progressive_val_score(stream, linear_model.LogisticRegression(), acc)
    evaluate.progressive_val_score(stream, linear_model.LogisticRegression(), logloss)
    assert result["Accuracy"] == pytest.approx(acc.get())
    assert result["LogLoss"] == pytest.approx(logloss.get())
    labels_only = progressive_scores(
        stream, linear_model.LogisticRegression(), river_metrics.Accuracy()
    )
    assert labels_only["Accuracy"] == pytest.approx(acc.get())


def test_progressive_scores_updates_metrics_in_place(drift):
    metric = metrics.NMSE()
    result = progressive_scores(
        drift.take(30), linear_model.BayesianLinearRegression(), [metric]
    )
    assert metric.get() == result["NMSE"]
    snapshot = copy.deepcopy(metric)
    assert snapshot.get() == metric.get()


def test_progressive_scores_takes_river_s_rolling_metrics(drift):
    """river's ``utils.Rolling`` wraps a metric without being one: the same scores as river's
    ``progressive_val_score``, for a point metric and for one that needs the distribution."""
    import warnings

    from river import utils

    from river_doebe import DOBE
    from river_doebe.evaluate import WithDist

    data = list(drift.take(200))
    with warnings.catch_warnings():  # (river 0.26 prefers Rolling(MAE, window_size=50))
        warnings.simplefilter("ignore", DeprecationWarning)
        rolled = [utils.Rolling(river_metrics.MAE(), 50), utils.Rolling(metrics.PLL(), 50)]
        theirs = [utils.Rolling(river_metrics.MAE(), 50), utils.Rolling(metrics.PLL(), 50)]
    result = progressive_scores(data, DOBE(), [river_metrics.MAE(), *rolled])
    assert list(result.scores) == ["MAE", "RollingMAE", "RollingPredictiveLogLikelihood"]
    assert result["RollingMAE"] == evaluate.progressive_val_score(data, DOBE(), theirs[0]).get()
    assert result["RollingPredictiveLogLikelihood"] == evaluate.progressive_val_score(
        data, WithDist(DOBE()), theirs[1]).get()
    rolling = utils.Rolling(river_metrics.MAE, window_size=50)
    if not isinstance(rolling.obj, river_metrics.MAE):  # (an older river: instances only)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            rolling = utils.Rolling(river_metrics.MAE(), 50)
    alone = progressive_scores(data, DOBE(), rolling)
    assert alone["RollingMAE"] == result["RollingMAE"]
    with pytest.raises(TypeError, match="not a river metric"):
        progressive_scores(data, DOBE(), [river_metrics.MAE(), object()])


def test_progressive_scores_takes_river_s_argument_order(drift):
    """(dataset, model, metrics), as evaluate.progressive_val_score: the old order is refused
    before anything is learnt or scored."""
    model, metric = _LastTarget(), metrics.NMSE()
    with pytest.raises(TypeError, match=r"takes \(dataset, model, metrics\).*the model "
                       r"_LastTarget"):
        progressive_scores(model, drift, [metric])
    assert model.log == [] and math.isnan(metric.get())  # nothing predicted, learnt or scored
    with pytest.raises(TypeError, match=r"\(dataset, model, metrics\).*got list"):
        progressive_scores(drift, [metric], model)
    # a pipeline or a wrapper is a model too
    from river import preprocessing

    pipeline = preprocessing.StandardScaler() | linear_model.BayesianLinearRegression()
    for first in (pipeline, WithDist(linear_model.BayesianLinearRegression())):
        with pytest.raises(TypeError, match="first argument is the model"):
            progressive_scores(first, drift, metric)
    # keywords in river's names work
    result = progressive_scores(dataset=drift.take(10), model=model, metrics=metric)
    assert result.n_samples == 10


# ---------------------------------------------------------------------------------------------
# Combining distribution metrics with river's point metrics
# ---------------------------------------------------------------------------------------------


def _dobe():
    from river_doebe import DOBE
    from river_doebe.basis import Linear

    return DOBE(Linear(), var_eps=0.5, var_rw=1e-3)


def _doebe():
    from river_doebe import DOBE, DOEBE
    from river_doebe.basis import Linear

    return DOEBE([DOBE(Linear(), var_eps=0.5), DOBE(Linear(), var_eps=2.0, var_rw=1e-2)])


MAKERS = {"river-blr": linear_model.BayesianLinearRegression, "dobe": _dobe, "doebe": _doebe}


@pytest.mark.parametrize("make", list(MAKERS.values()), ids=list(MAKERS))
def test_library_metric_first_gives_each_metric_what_it_needs(drift, make):
    y, means, variances = _hand_loop(drift, make)
    expected_mae = np.mean(np.abs(y - means))
    exact = metrics.PLL()
    model = make()
    for x, target in drift:  # the reference PLL: each prediction's own density
        exact.update(target, model.predict_one(x, with_dist=True))
        model.learn_one(x, target)

    combined = metrics.PredictiveLogLikelihood() + river_metrics.MAE()
    assert isinstance(combined, metrics.Metrics)
    evaluate.progressive_val_score(drift, WithDist(make()), combined)
    pll, mae = combined
    assert mae.get() == pytest.approx(expected_mae, rel=1e-12)
    assert pll.get() == pytest.approx(exact.get(), rel=1e-12)

    # progressive_scores takes the same container, with or without the wrapper
    for model in (make(), WithDist(make())):
        result = progressive_scores(
            drift, model, metrics.PredictiveLogLikelihood() + river_metrics.MAE()
        )
        assert result["MAE"] == pytest.approx(expected_mae, rel=1e-12)
        assert result["PredictiveLogLikelihood"] == pytest.approx(exact.get(), rel=1e-12)


@pytest.mark.parametrize("make", list(MAKERS.values()), ids=list(MAKERS))
def test_river_metric_first_fails_with_the_working_spelling(drift, make):
    river_made = river_metrics.MAE() + metrics.PredictiveLogLikelihood()
    # river builds its own container without asking the second metric
    assert type(river_made) is river_metrics.base.Metrics
    model = WithDist(make())
    with pytest.raises(TypeError, match=r"not a number.*PredictiveLogLikelihood\(\) \+ MAE\(\)"
                       r".*river_doebe\.metrics\.Metrics\(\[MAE\(\), PredictiveLogLikelihood"):
        evaluate.progressive_val_score(drift, model, river_made)
    mae, pll = river_made
    assert mae.get() == 0.0 and pll.get() == 0.0  # refused at the first sample, nothing counted

    # the spelling the message gives works, in that order
    y, means, _ = _hand_loop(drift, make)
    spelled = metrics.Metrics([river_metrics.MAE(), metrics.PredictiveLogLikelihood()])
    evaluate.progressive_val_score(drift, WithDist(make()), spelled)
    reference = metrics.PredictiveLogLikelihood() + river_metrics.MAE()
    evaluate.progressive_val_score(drift, WithDist(make()), reference)
    assert [type(m).__name__ for m in spelled] == ["MAE", "PredictiveLogLikelihood"]
    assert spelled[0].get() == pytest.approx(np.mean(np.abs(y - means)), rel=1e-12)
    assert spelled[1].get() == reference[0].get()

    # and progressive_scores takes river's container as it is
    result = progressive_scores(
        drift, make(), river_metrics.MAE() + metrics.PredictiveLogLikelihood()
    )
    assert result["MAE"] == spelled[0].get() and result["PredictiveLogLikelihood"] == pytest.approx(
        spelled[1].get(), rel=1e-12
    )


# ---------------------------------------------------------------------------------------------
# the block path: this package's models are fed through predict_learn_many
# ---------------------------------------------------------------------------------------------


def _block_models():
    from river_doebe import EDOEBE, DOBEClassifier, DOEBEClassifier, EDOEBEClassifier
    from river_doebe.basis import HilbertGP, Linear, RandomFourierFeatures

    small = dict(families=[RandomFourierFeatures(12, seed=2), HilbertGP(12)], n_warmup=90,
                 n_samples=2, starts=(1.0,), seed=1)
    return {
        "EDOEBE": lambda: EDOEBE(**small),
        "EDOEBEClassifier": lambda: EDOEBEClassifier(**small),
        "DOEBEClassifier": lambda: DOEBEClassifier(
            [DOBEClassifier(RandomFourierFeatures(10, seed=1)), DOBEClassifier(Linear())]
        ),
    }


@pytest.mark.parametrize("name", ["EDOEBE", "EDOEBEClassifier", "DOEBEClassifier"])
@pytest.mark.parametrize("proba", [True, False], ids=["dist", "point"])
def test_blocks_score_exactly_as_the_per_sample_loop(name, proba):
    classify = "Classifier" in name
    stream = list(datasets.Friedman1(n_samples=400, n_features=5, seed=4))
    if classify:
        stream = [(x, y > 14.0) for x, y in stream]
        chosen = [river_metrics.Accuracy()] + ([river_metrics.LogLoss()] if proba else [])
    else:
        chosen = [metrics.NMSE(), river_metrics.MAE()] + ([metrics.PLL()] if proba else [])
    make = _block_models()[name]
    runs = []
    for block_size in (1, 256, 64):
        model, seen = make(), []
        weights = getattr(model, "weights", None) is not None

        def learnt(t, model=model, seen=seen, weights=weights):
            seen.append((t, list(model.weights) if weights and t % 50 == 0 else None))

        result = progressive_scores(stream, model, copy.deepcopy(chosen), every=50,
                                    keep_predictions=True, block_size=block_size,
                                    on_learnt=learnt)
        runs.append((result, seen, model))
    (one, seen_one, _), *blocks = runs
    for result, seen, _ in blocks:
        assert result.scores == one.scores
        np.testing.assert_array_equal(result.predictions, one.predictions)
        if one.variances is not None:
            np.testing.assert_array_equal(result.variances, one.variances)
        for key in one.traces:
            np.testing.assert_array_equal(result.traces[key], one.traces[key])
        # the state read after each block is the per-sample state at that sample
        by_t = dict(seen_one)
        assert [t for t, _ in seen][-1] == len(stream)
        for t, w in seen:
            assert by_t[t] == w
        assert len(seen) < len(seen_one) / 2  # it did run in blocks
    assert [t for t, _ in seen_one] == list(range(1, len(stream) + 1))


def test_block_size_is_validated(drift):
    with pytest.raises(ValueError, match="block_size"):
        progressive_scores(drift, linear_model.BayesianLinearRegression(), metrics.NMSE(),
                           block_size=0)


def test_a_stream_shorter_than_the_warm_up_says_the_ensemble_never_ran():
    from river import preprocessing

    from river_doebe import EDOEBE
    from river_doebe.datasets import Drift

    for model in (EDOEBE(n_warmup=300), preprocessing.StandardScaler() | EDOEBE(n_warmup=300)):
        with pytest.warns(RuntimeWarning, match=r"ended after 120 samples.*n_warmup=300"):
            progressive_scores(Drift(n_samples=120, seed=1), model, metrics.NMSE())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = EDOEBE(n_warmup=50, n_samples=1, starts=(1.0,))
        progressive_scores(Drift(n_samples=120, seed=1), model, metrics.NMSE())
    assert model.is_warm
    assert not [w for w in caught if "ended after" in str(w.message)]
    # a window whose target never varied restarts: the warning says why the warm-up waited
    stuck = [(x, 2.0 if t < 100 else y) for t, (x, y) in enumerate(Drift(n_samples=120, seed=1))]
    with pytest.warns(RuntimeWarning, match=r"constant over its first window; the window kept "
                      r"since the target first varied holds 20 samples"):
        progressive_scores(stuck, EDOEBE(n_warmup=50, n_samples=1, starts=(1.0,)),
                           metrics.NMSE())
