"""The single learner: exact identities with batch Bayesian regression and a NumPy Kalman filter,
long-run stability, input policy and river compatibility."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from conftest import dicts, regression_stream
from river import compose, datasets, dummy, evaluate, metrics, preprocessing, stats

from river_doebe import DOBE
from river_doebe.basis import Linear
from river_doebe.engine import Engine, Member


def _rff(n=50, seed=0):
    from river_doebe.basis import RandomFourierFeatures

    return RandomFourierFeatures(n_frequencies=n, lengthscale=1.5, seed=seed)


BASES = [pytest.param(lambda: Linear(), id="linear"), pytest.param(lambda: _rff(), id="rff")]


@pytest.mark.parametrize("make_basis", BASES)
def test_static_learner_equals_batch_posterior(make_basis):
    X, y = regression_stream()
    var_theta, var_eps = 1.7, 0.2
    model = DOBE(make_basis(), var_theta=var_theta, var_eps=var_eps)
    xs = dicts(X)
    for x, t in zip(xs, y):
        model.predict_one(x)  # exercise the predict -> learn cache
        model.learn_one(x, t)

    Phi = model.basis_.featurize(X)
    F = Phi.shape[1]
    A = Phi.T @ Phi / var_eps + np.eye(F) / var_theta
    cov = np.linalg.inv(A)
    mean = cov @ Phi.T @ y / var_eps

    mu, Sigma = model.posterior
    np.testing.assert_allclose(mu, mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(Sigma, cov, rtol=1e-8, atol=1e-12)

    rng = np.random.default_rng(1)
    Xt = rng.normal(size=(20, X.shape[1]))
    Pt = model.basis_.featurize(Xt)
    for x, phi in zip(dicts(Xt), Pt):
        dist = model.predict_one(x, with_dist=True)
        exp_mean = phi @ mean
        exp_var = phi @ cov @ phi + var_eps
        assert dist.mu == pytest.approx(exp_mean, rel=1e-8, abs=1e-10)
        assert dist.sigma**2 == pytest.approx(exp_var, rel=1e-8)


def test_static_log_evidence_is_the_marginal_likelihood():
    X, y = regression_stream(n=300)
    model = DOBE(Linear(), var_theta=0.8, var_eps=0.3)
    for x, t in zip(dicts(X), y):
        model.learn_one(x, t)
    Phi = np.hstack([X, np.ones((len(X), 1))])
    C = 0.8 * Phi @ Phi.T + 0.3 * np.eye(len(X))
    sign, logdet = np.linalg.slogdet(C)
    expected = -0.5 * (y @ np.linalg.solve(C, y) + logdet + len(y) * math.log(2 * math.pi))
    assert model.log_evidence_ == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("make_basis", BASES)
def test_dynamic_learner_equals_numpy_kalman_filter(make_basis):
    X, y = regression_stream(n=500, seed=3)
    var_theta, var_eps, var_rw = 1.0, 0.25, 1e-2
    model = DOBE(make_basis(), var_theta=var_theta, var_eps=var_eps, var_rw=var_rw)
    xs = dicts(X)
    preds = []
    for x, t in zip(xs, y):
        d = model.predict_one(x, with_dist=True)
        preds.append((d.mu, d.sigma**2))
        model.learn_one(x, t)

    Phi = model.basis_.featurize(X)
    F = Phi.shape[1]
    m, P = np.zeros(F), var_theta * np.eye(F)
    for i, (phi, t) in enumerate(zip(Phi, y)):
        P = P + var_rw * np.eye(F)  # Chapman-Kolmogorov step
        s = phi @ P @ phi + var_eps
        mean = phi @ m
        assert preds[i][0] == pytest.approx(mean, rel=1e-9, abs=1e-11)
        assert preds[i][1] == pytest.approx(s, rel=1e-9)
        k = P @ phi / s
        m = m + k * (t - mean)
        P = P - s * np.outer(k, k)
    mu, Sigma = model.posterior
    np.testing.assert_allclose(mu, m, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(Sigma, P, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("var_rw", [0.0, 1e-3])
def test_covariance_stays_symmetric_psd_over_200k_updates(var_rw):
    rng = np.random.default_rng(7)
    F, n = 12, 200_000
    engine = Engine([Member(Linear(bias=False), 1.0, 0.05, var_rw)])
    engine.setup(F)
    # correlated, badly scaled inputs stress the plain covariance update; in blocks of rows,
    # which are bit for bit the per-sample updates (tests/test_blocks.py) at a fraction of the
    # time
    mix = rng.normal(size=(F, F)) * np.logspace(-2, 1, F)
    for _ in range(n // 1000):
        Z = rng.normal(size=(1000, F)) @ mix
        ys = Z[:, 0] - 0.5 * Z[:, 3] + 0.2 * rng.normal(size=1000)
        engine.learn_block(Z, ys)
    assert engine.n_updates == n
    S = engine.Sigma[0]
    assert np.array_equal(S, S.T)
    eig = np.linalg.eigvalsh(S)
    assert eig.min() >= -1e-12 * eig.max()
    assert np.isfinite(engine.mu).all()


def test_prediction_never_sees_its_own_target():
    X, y = regression_stream(n=50)
    xs = dicts(X)
    a, b = DOBE(Linear(), var_rw=1e-3), DOBE(Linear(), var_rw=1e-3)
    for i, (x, t) in enumerate(zip(xs, y)):
        pa = a.predict_one(x, with_dist=True)
        pb = b.predict_one(x, with_dist=True)
        assert (pa.mu, pa.sigma) == (pb.mu, pb.sigma)
        a.learn_one(x, t)
        b.learn_one(x, t + 100.0 if i == 49 else t)


def test_predict_then_learn_equals_learn_alone():
    X, y = regression_stream(n=200)
    a, b = DOBE(Linear(), var_rw=1e-3), DOBE(Linear(), var_rw=1e-3)
    for x, t in zip(dicts(X), y):
        a.predict_one(x)
        a.learn_one(x, t)
        b.learn_one(x, t)
    np.testing.assert_array_equal(a.posterior[0], b.posterior[0])
    np.testing.assert_array_equal(a.posterior[1], b.posterior[1])


def test_feature_order_and_missing_and_new_features():
    model = DOBE(Linear(), var_eps=0.1)
    model.learn_one({"b": 2.0, "a": 1.0}, 3.0)
    assert model.feature_names_in_ == ("a", "b")
    # another key order: same prediction
    assert model.predict_one({"a": 1.0, "b": 2.0}) == model.predict_one({"b": 2.0, "a": 1.0})
    # a missing feature counts as zero
    assert model.predict_one({"a": 1.0}) == model.predict_one({"a": 1.0, "b": 0.0})
    # a feature not in the first sample is ignored
    assert model.predict_one({"a": 1.0, "b": 2.0, "c": 9.0}) == model.predict_one(
        {"a": 1.0, "b": 2.0}
    )
    model.learn_one({"a": 1.0, "c": 5.0}, 1.0)
    assert model.n_samples_seen == 2


@pytest.mark.parametrize(
    "x, y, exc, word",
    [
        ({"a": float("nan"), "b": 1.0}, 1.0, ValueError, "'a'"),
        ({"a": 1.0, "b": float("inf")}, 1.0, ValueError, "'b'"),
        ({"a": 1.0, "b": 1.0}, float("nan"), ValueError, "target"),
        ({"a": "1.0", "b": 1.0}, 1.0, TypeError, "'a'"),
        ({"a": 1.0, "b": None}, 1.0, TypeError, "'b'"),
        ({"a": 1.0, "b": 1.0}, "3", TypeError, "target"),
    ],
)
def test_bad_input_raises_and_leaves_state_unchanged(x, y, exc, word):
    model = DOBE(Linear(), var_rw=1e-3)
    for i in range(5):
        model.learn_one({"a": float(i), "b": 1.0 - i}, float(i))
    before = pickle.dumps(model)
    with pytest.raises(exc, match=word):
        model.learn_one(x, y)
    if not (isinstance(y, float) and math.isnan(y)) and not isinstance(y, str):
        with pytest.raises(exc, match=word):
            model.predict_one(x)
    assert pickle.dumps(model) == before


def test_an_empty_first_sample_is_learnt_and_a_non_dict_refused():
    model = DOBE()
    model.learn_one({}, 1.0)  # a sample with no active feature: only the bias learns
    assert model.feature_names_in_ == () and model.n_samples_seen == 1
    assert model.predict_one({"a": 3.0}) == model.predict_one({}) > 0.0
    with pytest.raises(TypeError, match="dict"):
        DOBE().learn_one([1.0, 2.0], 1.0)


def test_invalid_parameters():
    with pytest.raises(ValueError, match="var_theta"):
        DOBE(var_theta=0.0)
    with pytest.raises(ValueError, match="var_eps"):
        DOBE(var_eps=-1.0)
    with pytest.raises(ValueError, match="var_rw"):
        DOBE(var_rw=float("nan"))


def test_learn_many_and_predict_many_match_one_by_one():
    pd = pytest.importorskip("pandas")
    X, y = regression_stream(n=120)
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    a, b = DOBE(_rff(10), var_rw=1e-3), DOBE(_rff(10), var_rw=1e-3)
    a.learn_many(frame.iloc[:100], pd.Series(y[:100]))
    for x, t in zip(dicts(X[:100]), y[:100]):
        b.learn_one(x, t)
    np.testing.assert_allclose(a.posterior[1], b.posterior[1], rtol=1e-12, atol=1e-15)
    many = a.predict_many(frame.iloc[100:])
    one = [b.predict_one(x) for x in dicts(X[100:])]
    np.testing.assert_allclose(many.to_numpy(), one, rtol=1e-12)


def test_pickle_clone_and_pipeline():
    model = preprocessing.StandardScaler() | DOBE(_rff(20), var_eps=0.1, var_rw=1e-4)
    data = list(datasets.TrumpApproval().take(300))
    for x, t in data[:200]:
        model.learn_one(x, t)
    restored = pickle.loads(pickle.dumps(model))
    for x, _ in data[200:]:
        assert restored.predict_one(x) == model.predict_one(x)
    fresh = model.clone()
    assert isinstance(fresh, compose.Pipeline)
    assert fresh["DOBE"].n_samples_seen == 0
    deep = copy.deepcopy(model)
    x, t = data[250]
    deep.learn_one(x, t)
    assert deep.predict_one(x) != model.predict_one(x)


def test_progressive_validation_beats_the_mean():
    data = datasets.TrumpApproval()
    model = preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | DOBE(_rff(50), var_eps=0.1, var_rw=1e-3)
    )
    mae = evaluate.progressive_val_score(data, model, metrics.MAE())
    base = evaluate.progressive_val_score(
        data, dummy.StatisticRegressor(stats.Mean()), metrics.MAE()
    )
    assert mae.get() < 0.5 * base.get()


@pytest.mark.slow
def test_every_kernel_is_loaded_from_the_disk_cache_by_a_fresh_process():
    """Two fresh processes run every kernel: the first may compile, the second must only load
    (numba's dispatcher counts the cache hits and misses of each signature it was called with)."""
    import subprocess
    import sys

    script = """
import json, numba, numpy as np
from river_doebe import DOBE, DOEBE, DOBEClassifier, EDOEBE
from river_doebe.basis import AdditivePolynomial, BSpline, HilbertGP, Linear, RandomFourierFeatures
from river_doebe.basis import RBFNetwork, bspline, hsgp, linear, polynomial, rbf, rff
from river_doebe.kernels import gaussian, logistic, stack, weights
rng = np.random.default_rng(0)
bases = [Linear(), AdditivePolynomial(2), RandomFourierFeatures(4, seed=0), HilbertGP(6),
         RBFNetwork(3, lengthscale=2.0), BSpline(8)]
import river_doebe.engine.threads as threads
from river_doebe import DOEBEClassifier
models = [DOEBE([DOBE(b), DOBE(b, var_rw=1e-3)]) for b in bases]
models += [DOBEClassifier(var_rw=1e-3), DOBEClassifier(),
           EDOEBE(models=[DOBE(), DOBE(var_rw=1e-2)])]
# and every parallel twin: the same models with the threads forced, one sample at a time and
# in blocks
threads.PARALLEL_MIN_WORK = threads.PARALLEL_MIN_MEMBERS = 0
models += [DOEBE([DOBE(b), DOBE(b, var_rw=1e-3)]) for b in bases]
models += [DOEBEClassifier([DOBEClassifier(var_rw=1e-3), DOBEClassifier()])]
for t in range(30):
    x = {"a": float(rng.normal()), "b": float(rng.normal())}
    for m in models:
        y = x["a"] > 0 if "Classifier" in type(m).__name__ else x["a"] - x["b"]
        m.predict_one(x)
        m.learn_one(x, y)
xs = [{"a": float(v), "b": float(-v)} for v in rng.normal(size=8)]
for m in models:
    ys = [x["a"] > 0 for x in xs] if "Classifier" in type(m).__name__ else [x["a"] for x in xs]
    m.predict_learn_many(xs, ys)
models[0]._engine.Sigma  # an owed update applied on its own (flush_stack)
models[0].predict_one(x, with_dist=True), models[0].log_density_one(x, 0.3)
stats = {}
for module in (gaussian, logistic, stack, weights, bspline, hsgp, linear, polynomial, rbf, rff):
    for name, obj in vars(module).items():
        if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.signatures:
            s = obj.stats
            stats[f"{module.__name__}.{name}"] = (sum(s.cache_hits.values()),
                                                  sum(s.cache_misses.values()))
print(json.dumps(stats))
"""
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=600, check=True)
        for _ in range(2)
    ]
    import json

    second = json.loads(runs[1].stdout.strip().splitlines()[-1])
    assert len(second) >= 15  # the kernels the script reached
    for name, (hits, misses) in second.items():
        assert misses == 0 and hits > 0, f"{name} was compiled again ({hits} hits, {misses} misses)"


