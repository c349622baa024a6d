"""The target scaler: river's point predictions, and the predictive distribution mapped back."""

import itertools
import math
import pickle

import numpy as np
import pytest
from river import datasets, linear_model, proba
from river import preprocessing as river_preprocessing
from scipy import stats

from river_doebe import DOBE, DOEBE, metrics
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
