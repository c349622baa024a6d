"""Tests of river_doebe.metrics against numpy and scipy (the evaluation loops that feed them are
in test_evaluate.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from river import linear_model
from river import metrics as river_metrics
from scipy.stats import norm

from river_doebe import metrics
from river_doebe.distributions import gaussian as _gaussian


class _MuSigma:
    """A distribution that only has ``mu`` and ``sigma`` (no ``log_pdf``)."""

    def __init__(self, mu, sigma):
        self.mu, self.sigma = mu, sigma


@pytest.fixture
def stream():
    rng = np.random.RandomState(0)
    y = rng.normal(loc=2.0, scale=3.0, size=200)
    mean = y + rng.normal(scale=1.5, size=200)
    var = rng.uniform(0.5, 4.0, size=200)
    return y, mean, var


# ---------------------------------------------------------------------------------------------
# NMSE
# ---------------------------------------------------------------------------------------------


def test_nmse_running_variance_matches_numpy(stream):
    y, mean, _ = stream
    metric = metrics.NMSE()
    assert math.isnan(metric.get())
    for t, (yt, mt) in enumerate(zip(y, mean, strict=True), start=1):
        metric.update(yt, mt)
        if t == 1:
            assert math.isnan(metric.get())
            continue
        expected = np.mean((y[:t] - mean[:t]) ** 2) / np.var(y[:t])
        assert metric.get() == pytest.approx(expected, rel=1e-10)
    assert metric.mse == pytest.approx(np.mean((y - mean) ** 2), rel=1e-12)
    assert metric.var == pytest.approx(np.var(y), rel=1e-12)


def test_nmse_fixed_variance_matches_paper_curve(stream):
    y, mean, _ = stream
    var_y = float(np.var(y))
    metric = metrics.NMSE(var_y=var_y)
    assert metric.get() == 0.0
    curve = np.cumsum((mean - y) ** 2) / (np.arange(1, len(y) + 1) * var_y)
    for t, (yt, mt) in enumerate(zip(y, mean, strict=True)):
        metric.update(yt, mt)
        assert metric.get() == pytest.approx(curve[t], rel=1e-10)
    # at the end of the stream both modes give the paper's number
    running = metrics.NMSE()
    for yt, mt in zip(y, mean, strict=True):
        running.update(yt, mt)
    assert running.get() == pytest.approx(metric.get(), rel=1e-10)


def test_nmse_accepts_distributions(stream):
    y, mean, var = stream
    plain, dist, pair = metrics.NMSE(), metrics.NMSE(), metrics.NMSE()
    for yt, mt, vt in zip(y, mean, var, strict=True):
        plain.update(yt, mt)
        dist.update(yt, _gaussian(mt, vt))
        pair.update(yt, (mt, vt))
    assert dist.get() == pytest.approx(plain.get(), rel=1e-12)
    assert pair.get() == pytest.approx(plain.get(), rel=1e-12)
    with pytest.raises(TypeError):
        plain.update(1.0, "3.0")


def test_nmse_revert_and_weights(stream):
    y, mean, _ = stream
    metric = metrics.NMSE()
    for yt, mt in zip(y[:100], mean[:100], strict=True):
        metric.update(yt, mt)
    before = metric.get()
    for yt, mt in zip(y[100:], mean[100:], strict=True):
        metric.update(yt, mt)
    for yt, mt in zip(y[100:][::-1], mean[100:][::-1], strict=True):
        metric.revert(yt, mt)
    assert metric.get() == pytest.approx(before, rel=1e-9)
    # a weight of 2 counts a sample twice
    weighted, doubled = metrics.NMSE(), metrics.NMSE()
    for yt, mt in zip(y[:50], mean[:50], strict=True):
        weighted.update(yt, mt, w=2.0)
        doubled.update(yt, mt)
        doubled.update(yt, mt)
    assert weighted.get() == pytest.approx(doubled.get(), rel=1e-10)
    # reverting everything resets
    for yt, mt in zip(y[:50], mean[:50], strict=True):
        weighted.revert(yt, mt, w=2.0)
    assert weighted.mse == 0.0 and math.isnan(weighted.get())


def test_nmse_conventions():
    metric = metrics.NMSE(var_y=2.0)
    assert not metric.bigger_is_better
    assert metric.works_with(linear_model.LinearRegression())
    assert not metric.works_with(linear_model.LogisticRegression())
    metric.update(1.0, 0.0)
    assert repr(metric) == "NMSE: 0.5"
    assert metric.clone().var_y == 2.0 and metric.clone().get() == 0.0
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            metrics.NMSE(var_y=bad)


# ---------------------------------------------------------------------------------------------
# Predictive log-likelihood
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["gaussian", "tuple", "list", "mu_sigma"])
def test_pll_matches_scipy(stream, kind):
    y, mean, var = stream
    make = {
        "gaussian": _gaussian,
        "tuple": lambda m, v: (m, v),
        "list": lambda m, v: [m, v],
        "mu_sigma": lambda m, v: _MuSigma(m, math.sqrt(v)),
    }[kind]
    metric = metrics.PredictiveLogLikelihood()
    assert metric.get() == 0.0
    logpdf = norm.logpdf(y, loc=mean, scale=np.sqrt(var))
    for t, (yt, mt, vt) in enumerate(zip(y, mean, var, strict=True), start=1):
        metric.update(yt, make(mt, vt))
        assert metric.get() == pytest.approx(np.mean(logpdf[:t]), rel=1e-10)


def test_pll_refuses_point_predictions():
    metric = metrics.PredictiveLogLikelihood()
    for bad in (1.0, 2, np.float64(0.5), True, None):
        with pytest.raises(TypeError, match="predictive distribution"):
            metric.update(1.0, bad)
    with pytest.raises(TypeError, match="cannot read"):
        metric.update(1.0, {"mean": 1.0})
    with pytest.raises(ValueError, match="variance"):
        metric.update(1.0, (0.0, 0.0))
    with pytest.raises(ValueError, match="variance"):
        metric.update(1.0, (0.0, -1.0))
    assert metric.get() == 0.0  # nothing was counted


def test_the_distribution_metrics_work_with_a_model_whose_predicting_step_gives_one():
    """The report: ``WithDist(StandardScaler() | LinearRegression())`` passed ``works_with``
    (its ``**kwargs``), and the first sample failed, advising the ``WithDist`` it had."""
    from river import compose, preprocessing
    from river import evaluate as river_evaluate

    from river_doebe import DOBE
    from river_doebe.evaluate import WithDist

    pll = metrics.PLL()
    for model in (DOBE(), linear_model.BayesianLinearRegression(), WithDist(DOBE()),
                  preprocessing.StandardScaler() | DOBE(),
                  WithDist(preprocessing.StandardScaler() | DOBE()),
                  preprocessing.StandardScaler() | WithDist(DOBE())):
        assert pll.works_with(model), model
    point = preprocessing.StandardScaler() | linear_model.LinearRegression()
    for model in (linear_model.LinearRegression(), point, WithDist(point),
                  compose.Pipeline(preprocessing.StandardScaler(),
                                   WithDist(linear_model.LinearRegression()))):
        assert not pll.works_with(model), model
    with pytest.raises(ValueError, match="not compatible"):
        river_evaluate.progressive_val_score([({"a": 1.0}, 1.0)], WithDist(point), pll)


def test_pll_revert_weights_conventions(stream):
    y, mean, var = stream
    metric = metrics.PLL()
    assert metrics.PLL is metrics.PredictiveLogLikelihood
    assert metric.bigger_is_better and metric.requires_distribution
    assert metric.works_with(linear_model.BayesianLinearRegression())
    for yt, mt, vt in zip(y, mean, var, strict=True):
        metric.update(yt, (mt, vt), w=0.5)
    logpdf = norm.logpdf(y, loc=mean, scale=np.sqrt(var))
    assert metric.get() == pytest.approx(np.mean(logpdf), rel=1e-10)
    for yt, mt, vt in zip(y[10:], mean[10:], var[10:], strict=True):
        metric.revert(yt, (mt, vt), w=0.5)
    assert metric.get() == pytest.approx(np.mean(logpdf[:10]), rel=1e-9)
    assert repr(metric).startswith("PredictiveLogLikelihood: -")


def test_pll_zero_variance_gaussian_is_minus_inf():
    metric = metrics.PredictiveLogLikelihood()
    metric.update(1.0, _gaussian(0.0, 0.0))
    assert metric.get() == -math.inf


# ---------------------------------------------------------------------------------------------
# The Metrics container
# ---------------------------------------------------------------------------------------------


def test_metrics_container_building():
    pll, nmse, mae, rmse = (metrics.PLL(), metrics.NMSE(), river_metrics.MAE(),
                            river_metrics.RMSE())
    for combined in (pll + mae, nmse + mae, pll + nmse, nmse + pll + mae + rmse,
                     sum([pll, mae]), (pll + mae) + (nmse + rmse)):
        assert isinstance(combined, metrics.Metrics)
    chain = nmse + pll + mae + rmse
    assert list(chain) == [nmse, pll, mae, rmse] and chain.requires_distribution
    assert not (nmse + mae).requires_distribution
    # river's containers are flattened into this one
    flat = metrics.Metrics([mae + rmse, pll])
    assert list(flat) == [mae, rmse, pll]
    # adding does not change the operands
    base_pair = pll + mae
    bigger = base_pair + rmse
    assert len(base_pair) == 2 and len(bigger) == 3
    # river's conventions: the clone is fresh, the repr lists the metrics
    assert isinstance(chain.clone(), metrics.Metrics) and chain.clone()[0] is not nmse
    assert repr(pll + mae).splitlines() == ["PredictiveLogLikelihood: 0.", "MAE: 0."]
    assert (pll + mae).works_with(linear_model.BayesianLinearRegression())
    assert not (pll + mae).works_with(linear_model.LogisticRegression())
    with pytest.raises(ValueError, match="Accuracy is not a regression metric"):
        pll + river_metrics.Accuracy()
    with pytest.raises(TypeError, match="not a river metric"):
        metrics.Metrics([pll, "MAE"])


def test_metrics_container_updates_all_or_none():
    combined = metrics.PLL() + river_metrics.MAE() + metrics.NMSE()
    combined.update(1.0, (0.5, 0.25))
    combined.update(2.0, _gaussian(1.0, 1.0))
    pll, mae, nmse = combined
    assert mae.get() == pytest.approx(0.75) and nmse.mse == pytest.approx(0.625)
    assert pll.get() == pytest.approx(
        np.mean([norm.logpdf(1.0, 0.5, 0.5), norm.logpdf(2.0, 1.0, 1.0)]), rel=1e-12
    )
    before = [m.get() for m in combined]
    for bad, error, message in (
        (1.5, TypeError, "needs a predictive distribution"),  # a number: no density
        ((1.0, -1.0), ValueError, "variance"),
        ({"mean": 1.0}, TypeError, "Cannot read a point prediction"),
    ):
        with pytest.raises(error, match=message):
            combined.update(3.0, bad)
        assert [m.get() for m in combined] == before  # nothing was counted
    combined.revert(2.0, _gaussian(1.0, 1.0))
    assert mae.get() == pytest.approx(0.5) and pll.get() == pytest.approx(
        norm.logpdf(1.0, 0.5, 0.5), rel=1e-12
    )
    # point metrics alone take numbers too
    points = metrics.NMSE() + river_metrics.MAE()
    points.update(1.0, 0.5)
    assert points[1].get() == 0.5
