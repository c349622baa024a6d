"""The target scaler: river's point predictions, and the predictive distribution mapped back."""

import dataclasses
import itertools
import math
import pickle

import numpy as np
import pytest
from river import base, datasets, linear_model, proba
from river import preprocessing as river_preprocessing
from river.conf import Interval
from scipy import stats

from river_doebe import DOBE, DOEBE, EDOEBE, metrics
from river_doebe import datasets as doebe_datasets
from river_doebe.basis import Linear, RandomFourierFeatures
from river_doebe.distributions import GaussianMixture
from river_doebe.evaluate import progressive_scores
from river_doebe.preprocessing import TargetStandardScaler


def _dobe():
    return DOBE(RandomFourierFeatures(20, lengthscale=3.0, seed=2), var_eps=0.1, var_rw=1e-3)


def _doebe():
    return DOEBE(
        [
            DOBE(Linear(), var_eps=0.5),
            DOBE(RandomFourierFeatures(20, lengthscale=5.0, seed=1), var_eps=0.1, var_rw=1e-3),
            DOBE(RandomFourierFeatures(20, lengthscale=2.0, seed=1), var_eps=0.1, var_rw=1e-3),
        ],
        weight_floor=0.0,
    )


def _scaled_pipeline(model):
    return TargetStandardScaler(river_preprocessing.StandardScaler() | model)


def _trump(n=300):
    return list(itertools.islice(datasets.TrumpApproval(), n))


@pytest.mark.parametrize(
    "make",
    [
        _dobe,
        _doebe,
        lambda: river_preprocessing.StandardScaler() | _dobe(),
        lambda: river_preprocessing.StandardScaler() | linear_model.LinearRegression(),
    ],
    ids=["dobe", "doebe", "pipeline-dobe", "river-linear-regression"],
)
def test_point_predictions_are_rivers_bit_for_bit(make):
    ours = TargetStandardScaler(make())
    theirs = river_preprocessing.TargetStandardScaler(make())
    for i, (x, y) in enumerate(_trump()):
        # from the first prediction on: before any target (0), after one (that target), ...
        assert ours.predict_one(x) == theirs.predict_one(x), i
        ours.learn_one(x, y)
        theirs.learn_one(x, y)
        assert (ours.var.mean.get(), ours.var.get()) == (theirs.var.mean.get(), theirs.var.get())
    assert i == 299


def _log_pdf(dist, u):
    # from mu and sigma where the distribution has no log_pdf (river 0.22's Gaussian)
    if hasattr(dist, "log_pdf"):
        return dist.log_pdf(u)
    return stats.norm.logpdf(u, dist.mu, dist.sigma)


@pytest.mark.parametrize("make", [_dobe, _doebe], ids=["dobe", "doebe"])
def test_the_distribution_is_the_wrapped_models_mapped_back(make):
    model = _scaled_pipeline(make())
    inner = model.regressor
    for i, (x, y) in enumerate(_trump()):
        dist = model.predict_one(x, with_dist=True)
        # the identity the metrics rely on: the distribution's mean is the point prediction
        assert dist.mu == model.predict_one(x)
        s, m = model.var.get() ** 0.5, model.var.mean.get()
        z = inner.predict_one(x, with_dist=True)
        if i >= 2:
            assert type(dist) is type(z)
            assert dist.mu == z.mu * s + m
            assert dist.sigma == pytest.approx(s * z.sigma, rel=1e-14)
            # log p_Y(y) = log p_Z((y - m) / s) - log s, three ways
            expected = _log_pdf(z, (y - m) / s) - math.log(s)
            assert dist.log_pdf(y) == pytest.approx(expected, rel=1e-10, abs=1e-10)
            assert model.log_density_one(x, y) == pytest.approx(expected, rel=1e-10, abs=1e-10)
            assert dist.cdf(y) == pytest.approx(z.cdf((y - m) / s), rel=1e-10, abs=1e-300)
            if isinstance(z, GaussianMixture):
                np.testing.assert_array_equal(dist.weights, z.weights)
                np.testing.assert_allclose(dist.means, z.means * s + m, rtol=1e-15)
                np.testing.assert_allclose(dist.variances, z.variances * s * s, rtol=1e-15)
        model.learn_one(x, y)
    # the units are the target's: the approval rates are around 40 (percent)
    assert 30 < dist.mu < 50 and 0.1 < dist.sigma < 5


def test_the_mixture_of_an_ensemble_keeps_every_member():
    model = TargetStandardScaler(_doebe())
    for x, y in _trump():
        model.learn_one(x, y)
    x = _trump(301)[-1][0]
    dist = model.predict_one(x, with_dist=True)
    means, variances, w = model.regressor.member_predictions(x)
    assert isinstance(dist, GaussianMixture) and dist.n_components == 3
    s, m = model.var.get() ** 0.5, model.var.mean.get()
    np.testing.assert_allclose(np.sort(dist.means), np.sort(means * s + m), rtol=1e-14)
    np.testing.assert_allclose(dist.weights.sum(), 1.0)
    assert dist.mu == model.predict_one(x)


def test_before_two_targets_the_prediction_is_the_wrapped_predictive_at_the_mean():
    """The target's scale is unknown before two distinct targets: the point prediction is
    river's (the mean), and the distribution the wrapped model's own, on a unit scale, moved to
    that mean: proper (it was a point mass, whose log-likelihood is -inf)."""
    x = {"a": 1.0, "b": -0.5}
    for seen in ([], [3.0], [3.0, 3.0]):
        model = TargetStandardScaler(_doebe())
        for y in seen:
            model.learn_one(x, y)
        dist = model.predict_one(x, with_dist=True)
        inner = model.regressor.predict_one(x, with_dist=True)
        # river's map sends every value to the mean (0 before any target)
        expected = seen[0] if seen else 0.0
        assert model.predict_one(x) == expected
        assert isinstance(dist, GaussianMixture)
        assert (dist.mu, dist.sigma) == (expected, inner.sigma)
        np.testing.assert_array_equal(dist.variances, inner.variances)
        np.testing.assert_allclose(dist.means - expected, inner.means - inner.mu, atol=1e-15)
        for y in (expected, expected + 1.7):
            assert math.isfinite(model.log_density_one(x, y))
            assert model.log_density_one(x, y) == pytest.approx(dist.log_pdf(y), abs=1e-12)
    model.learn_one(x, 5.0)
    dist = model.predict_one(x, with_dist=True)
    assert isinstance(dist, GaussianMixture) and dist.sigma > 0
    assert math.isfinite(model.log_density_one(x, 4.0))
    gaussian_model = TargetStandardScaler(_dobe())
    dist = gaussian_model.predict_one(x, with_dist=True)
    assert isinstance(dist, proba.Gaussian) and dist.mu == 0.0 and dist.sigma > 0


def test_a_predictive_log_likelihood_is_finite_from_the_first_sample():
    # the README's tour model on river's streams scored -inf from its first prediction
    for stream in (datasets.TrumpApproval(), datasets.ChickWeights(),
                   doebe_datasets.Drift(n_samples=200, seed=1)):
        model = _scaled_pipeline(_dobe())
        result = progressive_scores(stream, model, [metrics.PLL(), metrics.NMSE()])
        assert math.isfinite(result["PredictiveLogLikelihood"])


def test_rivers_bayesian_linear_regression_gets_its_distribution_back():
    model = _scaled_pipeline(linear_model.BayesianLinearRegression())
    inner = model.regressor
    for i, (x, y) in enumerate(_trump(100)):
        dist = model.predict_one(x, with_dist=True)
        assert isinstance(dist, proba.Gaussian)
        assert dist.mu == model.predict_one(x)
        if i >= 2:
            s, m = model.var.get() ** 0.5, model.var.mean.get()
            z = inner.predict_one(x, with_dist=True)
            # a pipeline has no log_density_one: the wrapped distribution's density is used
            expected = _log_pdf(z, (y - m) / s) - math.log(s)
            assert model.log_density_one(x, y) == pytest.approx(expected, rel=1e-12)
            assert dist.log_pdf(y) == pytest.approx(expected, rel=1e-10)
        model.learn_one(x, y)


def test_pickle_and_clone_mid_stream():
    model = _scaled_pipeline(_doebe())
    stream = _trump(120)
    for x, y in stream[:100]:
        model.learn_one(x, y)
    copy = pickle.loads(pickle.dumps(model))
    fresh = model.clone()
    assert fresh.var.n == 0 and repr(fresh) == repr(model)
    for x, y in stream[100:]:
        a, b = model.predict_one(x, with_dist=True), copy.predict_one(x, with_dist=True)
        assert (a.mu, a.sigma, a.log_pdf(y)) == (b.mu, b.sigma, b.log_pdf(y))
        model.learn_one(x, y)
        copy.learn_one(x, y)
    assert fresh.predict_one(stream[0][0]) == 0.0


@pytest.mark.parametrize(
    "bad", [None, river_preprocessing.StandardScaler(), linear_model.LogisticRegression(), 1.0]
)
def test_a_non_regressor_is_refused(bad):
    with pytest.raises(TypeError, match="regressor must be a river regressor"):
        TargetStandardScaler(bad)


def test_a_model_without_a_distribution_is_refused_with_dist():
    model = _scaled_pipeline(linear_model.LinearRegression())
    for x, y in _trump(5):
        model.learn_one(x, y)
    x = _trump(6)[-1][0]
    assert isinstance(model.predict_one(x), float)
    # the pipeline drops `with_dist` for its last step, which returns a number
    with pytest.raises(TypeError, match="must give a predictive distribution"):
        model.predict_one(x, with_dist=True)
    with pytest.raises(TypeError, match="must give a predictive distribution"):
        model.log_density_one(x, 40.0)


@pytest.mark.parametrize("y", [math.nan, math.inf, "40", None])
def test_a_bad_target_is_refused_before_the_statistics_change(y):
    model = TargetStandardScaler(_dobe())
    x = {"a": 1.0}
    model.learn_one(x, 1.0)
    with pytest.raises((TypeError, ValueError), match="target"):
        model.learn_one(x, y)
    with pytest.raises((TypeError, ValueError), match="target"):
        model.log_density_one(x, y)
    assert (model.var.n, model.var.mean.get()) == (1, 1.0)


class _Refuses(base.Regressor):
    """A plain river regressor (a running mean, no validation method) that refuses a sample
    with a feature ``boom`` by an error of its own, before it changes."""

    def __init__(self):
        self.n = 0
        self.total = 0.0

    def learn_one(self, x, y):
        if "boom" in x:
            raise RuntimeError("boom")
        self.n += 1
        self.total += y

    def predict_one(self, x):
        return self.total / self.n if self.n else 0.0


@pytest.mark.parametrize(
    "make, bad, error",
    [
        (_dobe, {"a": math.nan, "b": 0.0}, ValueError),
        (_doebe, {"a": 0.5, "b": math.inf}, ValueError),
        (_Refuses, {"a": 0.5, "boom": 1.0}, RuntimeError),
    ],
    ids=["dobe-nan", "doebe-inf", "other-exception"],
)
@pytest.mark.parametrize("at", [0, 1, 2, 40])
def test_a_refused_sample_leaves_the_model_as_a_twin_that_never_saw_it(make, bad, error, at):
    # refused before any target, after one (no scale yet), after two, and mid-stream; the
    # target is far off, so that any trace of it would show
    stream = [({"a": i / 20, "b": math.sin(i)}, float(i % 7) + 0.1 * i) for i in range(60)]
    model, twin = TargetStandardScaler(make()), TargetStandardScaler(make())
    for i, (x, y) in enumerate(stream):
        if i == at:
            var, state = model.var, pickle.dumps(model)
            with pytest.raises(error):
                model.learn_one(bad, 1e6)
            assert model.var is var
            assert pickle.dumps(model) == state == pickle.dumps(twin)
        assert model.predict_one(x) == twin.predict_one(x), i
        if make is not _Refuses:
            a, b = model.predict_one(x, with_dist=True), twin.predict_one(x, with_dist=True)
            assert (a.mu, a.sigma, a.log_pdf(y)) == (b.mu, b.sigma, b.log_pdf(y)), i
        model.learn_one(x, y)
        twin.learn_one(x, y)
    assert pickle.dumps(model) == pickle.dumps(twin)
    assert (model.var.n, model.var.mean.get(), model.var.get()) == (
        twin.var.n, twin.var.mean.get(), twin.var.get())


def _edoebe():
    return EDOEBE(n_warmup=50, seed=1, n_samples=2, starts=(1.0,))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (a warm-up of fewer samples than features)
def test_the_interval_is_the_wrapped_models_mapped_back_and_covers_as_it_does():
    from river.stats import Var

    model = TargetStandardScaler(_edoebe())
    alone = _edoebe()  # the same model unwrapped, trained by hand on the standardised target
    var = Var()
    hits, hits_alone = [], []
    for i, (x, y) in enumerate(itertools.islice(doebe_datasets.Friedman1(seed=1), 200)):
        s, m = model.var.get() ** 0.5, model.var.mean.get()
        interval = model.predict_one(x, with_interval=True)
        own = alone.predict_one(x, with_interval=True)
        assert model.regressor.predict_one(x, with_interval=True) == own, i
        assert type(interval) is Interval
        if s > 0:
            assert interval == Interval(own.lower * s + m, own.upper * s + m), i
            if math.isfinite(own.width):  # (the adaptive interval is at times the whole line)
                assert interval.center == pytest.approx(own.center * s + m, rel=1e-14)
                assert interval.width == pytest.approx(own.width * s, rel=1e-12)
            # the event the coverage counts, in both units
            hits.append(y in interval)
            hits_alone.append((y - m) / s in own)
        else:
            # no scale yet (the first two samples): on a unit scale, moved with the point
            # prediction to the mean
            point = alone.predict_one(x)
            assert interval == Interval(own.lower - point + m, own.upper - point + m), i
            assert interval.width == pytest.approx(own.width, rel=1e-12)
            assert interval.lower <= m <= interval.upper
        var.update(y)
        t = var.get() ** 0.5
        model.learn_one(x, y)
        alone.learn_one(x, (y - var.mean.get()) / t if t > 0 else 0.0)
    assert hits == hits_alone and len(hits) == 198
    # the conformal interval does its job after the warm-up of 50 (90% asked)
    assert 0.8 < np.mean(hits[50:]) < 0.98


class _Fixed(base.Regressor):
    """Predicts 0.5, and an interval of the given ends (of the given type)."""

    def __init__(self, lower=-1.0, upper=2.0, kind=Interval):
        self.lower, self.upper, self.kind = lower, upper, kind

    def learn_one(self, x, y):
        pass

    def predict_one(self, x, with_interval=False):
        return self.kind(self.lower, self.upper) if with_interval else 0.5


@dataclasses.dataclass
class _SubInterval(Interval):
    pass


@pytest.mark.parametrize(
    "lower, upper",
    [(-1.0, 2.0), (-math.inf, math.inf), (math.inf, -math.inf), (-math.inf, 1.0)],
    ids=["finite", "whole-line", "empty", "half-line"],
)
def test_an_interval_keeps_its_infinite_ends_and_its_type(lower, upper):
    model = TargetStandardScaler(_Fixed(lower, upper, _SubInterval))
    x = {"a": 1.0}
    expected = [
        # no scale yet, before a target (mean 0) and after one (mean 3): on a unit scale, moved
        # with the point prediction (0.5) to the mean; never scaled by 0 (an infinite end NaN)
        _SubInterval(lower - 0.5, upper - 0.5),
        _SubInterval(lower - 0.5 + 3.0, upper - 0.5 + 3.0),
        # targets 3 and 5: s = sqrt(2), m = 4
        _SubInterval(lower * 2**0.5 + 4.0, upper * 2**0.5 + 4.0),
    ]
    for want, y in zip(expected, (3.0, 5.0, None), strict=True):
        got = model.predict_one(x, with_interval=True)
        assert type(got) is _SubInterval and got == want
        assert not (math.isnan(got.lower) or math.isnan(got.upper))
        if y is not None:
            model.learn_one(x, y)


def test_a_keyword_or_an_interval_the_scaler_cannot_map_is_refused():
    x = {"a": 1.0}
    model = TargetStandardScaler(_Fixed())
    # other keywords go to the wrapped model, as river's scaler passes them: it names one it
    # does not take
    with pytest.raises(TypeError, match="'with_quantiles'"):
        model.predict_one(x, with_quantiles=True)
    with pytest.raises(TypeError, match="'alpha'"):
        model.predict_one(x, with_interval=True, alpha=0.1)
    with pytest.raises(ValueError, match="not both"):
        model.predict_one(x, with_dist=True, with_interval=True)

    @dataclasses.dataclass
    class Labelled(Interval):
        level: float = 0.9

    with pytest.raises(TypeError, match="level"):
        TargetStandardScaler(_Fixed(kind=Labelled)).predict_one(x, with_interval=True)
    # a model without an interval: refused, or (a pipeline) dropped for a number
    for inner in (_dobe(), river_preprocessing.StandardScaler() | _dobe()):
        with pytest.raises(TypeError, match="must give a prediction interval"):
            TargetStandardScaler(inner).predict_one(x, with_interval=True)
