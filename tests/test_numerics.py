"""Numerics that no input may break: positive variances and covariances on unscaled or extreme
inputs, refused samples that leave the model as it was, and observation that changes nothing."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from river import linear_model

from river_doebe import (
    DOBE,
    DOEBE,
    EDOEBE,
    SDOEBE,
    DOBEClassifier,
    DOEBEClassifier,
    EDOEBEClassifier,
    SDOEBEClassifier,
)
from river_doebe.basis import (
    AdditivePolynomial,
    BSpline,
    HilbertGP,
    Linear,
    RandomFourierFeatures,
    RBFNetwork,
)
from river_doebe.engine import Engine, FilterError, Member
from river_doebe.kernels import gaussian


def _psd(S, rel=1e-12):
    lam = np.linalg.eigvalsh(S)
    return lam.min() >= -rel * max(1.0, np.abs(lam).max())


def _exact_posterior(Phi, y, var_theta, var_eps):
    """The batch posterior by a QR factorisation of the whitened system (no normal equations)."""
    F = Phi.shape[1]
    A = np.vstack([Phi / math.sqrt(var_eps), np.eye(F) / math.sqrt(var_theta)])
    b = np.r_[y / math.sqrt(var_eps), np.zeros(F)]
    Q, R = np.linalg.qr(A)
    mean = np.linalg.solve(R, Q.T @ b)
    Rinv = np.linalg.inv(R)
    return mean, Rinv @ Rinv.T


# ------------------------------------------------------------------ positive definite, any scale
def test_unscaled_timestamps_keep_a_finite_positive_variance():
    """The original report: a linear DOBE on raw Unix timestamps gave a complex sigma and then a
    NaN evidence. River's BayesianLinearRegression is the yardstick."""
    model, river_blr = DOBE(), linear_model.BayesianLinearRegression()
    model.learn_one({"t": 1.7e9, "u": 0.3}, 1.0)
    river_blr.learn_one({"t": 1.7e9, "u": 0.3}, 1.0)
    x = {"t": 1.7e9 + 60, "u": -0.2}
    dist = model.predict_one(x, with_dist=True)
    assert isinstance(dist.sigma, float) and math.isfinite(dist.sigma)
    assert dist.sigma**2 >= model.var_eps
    assert math.isfinite(river_blr.predict_one(x, with_dist=True).sigma)
    model.learn_one(x, 2.0)
    assert math.isfinite(model.log_evidence_)

    rng = np.random.default_rng(0)
    X, y = [[1.7e9, 0.3], [1.7e9 + 60, -0.2]], [1.0, 2.0]
    for t in range(2, 800):
        x = {"t": 1.7e9 + 60 * t, "u": float(rng.normal())}
        dist = model.predict_one(x, with_dist=True)
        assert math.isfinite(dist.sigma) and dist.sigma**2 >= model.var_eps
        target = 1e-9 * x["t"] + x["u"] + 0.1 * rng.normal()
        model.learn_one(x, target)
        X.append([x["t"], x["u"]])
        y.append(target)
    mu, Sigma = model.posterior
    assert _psd(Sigma) and np.array_equal(Sigma, Sigma.T)
    Phi = np.hstack([np.asarray(X)[:, ::-1][:, ::-1], np.ones((len(X), 1))])  # t, u, bias
    mean, cov = _exact_posterior(Phi, np.asarray(y), model.var_theta, model.var_eps)
    # the square-root filter agrees with the batch posterior to the conditioning of the problem
    np.testing.assert_allclose(Phi @ mu, Phi @ mean, rtol=1e-9)
    np.testing.assert_allclose(np.diag(Sigma), np.diag(cov), rtol=1e-5, atol=1e-30)


def test_tiny_noise_polynomial_stays_positive_definite():
    """The second report: AdditivePolynomial(4), var_theta=1e4, var_eps=1e-10 went negative
    within about 60 steps."""
    model = DOBE(AdditivePolynomial(4), var_theta=1e4, var_eps=1e-10)
    rng = np.random.default_rng(1)
    for _ in range(400):
        x = {"a": 3 * rng.normal(), "b": rng.normal()}
        dist = model.predict_one(x, with_dist=True)
        assert math.isfinite(dist.sigma) and dist.sigma**2 >= model.var_eps
        model.learn_one(x, x["a"] ** 2 - x["b"] + 1e-5 * rng.normal())
    assert _psd(model.posterior[1])


BASES = [
    pytest.param(lambda: Linear(), id="linear"),
    pytest.param(lambda: AdditivePolynomial(3), id="poly"),
    pytest.param(lambda: RandomFourierFeatures(10, lengthscale=2.0, seed=0), id="rff"),
    pytest.param(lambda: HilbertGP(12), id="hsgp"),
    pytest.param(lambda: BSpline(12), id="bspline"),
    pytest.param(lambda: RBFNetwork(6, lengthscale=1e7, seed=0), id="rbf"),
]


@pytest.mark.parametrize("scale", [1.0, 5e7])
@pytest.mark.parametrize("var_theta", [1e-4, 10.0])
def test_the_update_s_bound_on_a_mean_step_holds(scale, var_theta):
    """The learn step checks each mean step ``Sigma_pred phi g`` against a bound from scalars
    alone (``kernels.stack.step_is_finite``): ``|e_i' Sigma_pred phi| <= sqrt(lambda q)`` with
    ``lambda`` = ``var_theta`` (static) or ``2 (var_theta + (n + 1) var_rw)`` after ``n``
    steps (dynamic). Checked at every prediction: the largest eigenvalue of the predictive
    covariance, and every entry of ``Sigma_pred phi``, on inputs at the scales where rounding
    broke covariances before."""
    members = [DOBE(make(), var_theta=var_theta, var_eps=1e-6, var_rw=rw)
               for make in (lambda: AdditivePolynomial(3), lambda: HilbertGP(8), lambda: Linear())
               for rw in (0.0, 1e-6, 1e-1)]
    model = DOEBE(members, weight_floor=0.0)
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(300):
        x = {"a": scale * rng.normal(), "b": rng.normal()}
        model.predict_one(x)
        engine = model._engine
        if engine is None:  # (the first sample: nothing is set up before a model learns)
            model.learn_one(x, x["b"])
            continue
        s = engine.state
        for k in range(engine.M):
            f = int(engine.F[k])
            C = s.C[k, :f, :f]
            q = float(engine.var[k] - engine.var_eps[k])
            if engine.static[k]:
                lam = float(engine.var_theta[k])
                Sigma = C.T @ C
                v = C.T @ engine.V[k, :f]  # (U (U' phi): the static V is U' phi)
            else:
                lam = 2.0 * (engine.var_theta[k] + (s.n_filtered[k] + 1) * engine.var_rw[k])
                Sigma = C
                v = engine.V[k, :f]
            # (to rounding: the static bound has no slack, the check's 1e300 is far below
            # float64's limit)
            assert np.linalg.eigvalsh(0.5 * (Sigma + Sigma.T)).max() <= lam * (1.0 + 1e-9)
            assert np.abs(v).max() <= math.sqrt(lam * q) * (1.0 + 1e-9)
            checked += 1
        model.learn_one(x, 1e-7 * x["a"] + x["b"])
    assert checked == 299 * 9


@pytest.mark.parametrize("make_basis", BASES)
@pytest.mark.parametrize("var_rw", [0.0, 1e-3])
def test_inputs_around_5e7_keep_every_variance_above_the_noise(make_basis, var_rw):
    """Where property tests found breakdowns: |x| around 5e7, a small noise variance."""
    model = DOBE(make_basis(), var_theta=10.0, var_eps=1e-6, var_rw=var_rw)
    rng = np.random.default_rng(2)
    for _ in range(300):
        x = {"a": 5e7 * rng.normal(), "b": float(rng.integers(0, 2)), "c": rng.normal()}
        dist = model.predict_one(x, with_dist=True)
        assert math.isfinite(dist.mu) and math.isfinite(dist.sigma)
        assert dist.sigma**2 >= model.var_eps
        model.learn_one(x, 1e-7 * x["a"] + x["c"])
    Sigma = model.posterior[1]
    assert np.array_equal(Sigma, Sigma.T) and _psd(Sigma, rel=1e-9)


def test_a_dynamic_covariance_broken_by_rounding_is_repaired():
    """Dynamic members keep Sigma itself; if it ever loses positive definiteness along the
    features of a sample, the engine repairs it before predicting."""
    engine = Engine([Member(Linear(bias=False), 1.0, 0.01, 1e-3)])
    engine.setup(2)
    engine.state.C[0, :2, :2] = [[1.0, 0.0], [0.0, -0.5]]  # as if rounding had broken it
    mean, var = engine.predict(np.array([0.0, 1.0]))
    assert var >= 0.01
    assert _psd(engine.Sigma[0])
    engine.learn(np.array([0.0, 1.0]), 0.3)
    assert _psd(engine.Sigma[0])


def _broken_engine(n_members=3):
    """Dynamic members, the middle one's covariance broken as if by rounding."""
    engine = Engine([Member(Linear(bias=False), 1.0, 0.01, 1e-3) for _ in range(n_members)])
    engine.setup(2)
    engine.state.C[1, :2, :2] = [[1.0, 0.0], [0.0, -0.5]]
    return engine


def test_a_block_repairs_a_broken_covariance_as_the_rows_one_by_one_do():
    """The block path stops a member whose covariance needs the repair and runs its rows again
    with it (the repair is compiled on its first use): the same numbers as the rows one by
    one, for the member repaired mid-block and for the others."""
    rng = np.random.default_rng(0)
    Z = np.vstack([[0.0, 1.0], rng.normal(size=(5, 2))])
    Z = np.vstack([Z[1:3], Z[:1], Z[3:]])  # the broken direction at row 2
    Y = rng.normal(size=len(Z))
    one, block = _broken_engine(), _broken_engine()
    expected = []
    for z, y in zip(Z, Y, strict=True):
        expected.append(one.predict(z))
        one.learn(z, y)
    a, b, _ = block.learn_block(Z, Y)
    assert np.array_equal(a, [m for m, _ in expected])
    assert np.array_equal(b, [v for _, v in expected])
    assert np.array_equal(block.Sigma, one.Sigma) and np.array_equal(block.mu, one.mu)
    assert block.log_evidence == one.log_evidence and _psd(block.Sigma[1])
    # the block ran the member again with the repair (the kernel's variant with repair=True)
    assert any(str(sig[-1]) == "bool" for sig in gaussian.gaussian_block.signatures)


def test_a_random_walk_below_the_rounding_of_the_covariance_is_refused():
    with pytest.raises(ValueError, match="var_rw"):
        DOBE(var_theta=1e9, var_rw=1e-6)
    with pytest.raises(ValueError, match="var_rw"):
        DOBEClassifier(var_theta=1e9, var_rw=1e-6)
    with pytest.raises(ValueError, match="rw_variances"):
        EDOEBE(rw_variances=(1e-12,))
    DOBE(var_theta=1e9, var_rw=1e-3)  # fine


# ------------------------------------------------------------------ refused samples
@pytest.mark.parametrize(
    "make, x",
    [
        (lambda: DOBE(AdditivePolynomial(3)), {"a": 1e154, "b": 0.0}),
        (lambda: DOBE(Linear(), var_rw=1e-3), {"a": 1e300, "b": 1e300}),
        (lambda: DOBEClassifier(), {"a": 1e155, "b": 0.0}),
        (lambda: DOBEClassifier(var_rw=1e-3), {"a": 1e160, "b": 0.0}),
        (lambda: EDOEBE(models=[DOBE(AdditivePolynomial(3))]), {"a": 1e154, "b": 0.0}),
        (lambda: EDOEBEClassifier(models=[DOBEClassifier()]), {"a": 1e155, "b": 0.0}),
    ],
    ids=["poly3", "linear-dynamic", "classifier", "classifier-dynamic", "edoebe",
         "edoebe-classifier"],
)
def test_finite_but_extreme_inputs_are_refused_and_change_nothing(make, x):
    """The original report: one sample of 1e154 made every later prediction NaN."""
    model = make()
    rng = np.random.default_rng(3)
    stream = [
        ({"a": float(rng.normal()), "b": float(rng.normal())}, bool(i % 2)) for i in range(40)
    ]
    is_clf = isinstance(model, DOBEClassifier | EDOEBEClassifier)
    for xi, yi in stream[:30]:
        model.learn_one(xi, yi if is_clf else float(yi))
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="'a'"):
        model.learn_one(x, True if is_clf else 1.0)
    assert pickle.dumps(model) == before
    with pytest.raises(ValueError, match="'a'"):
        (model.predict_proba_one if is_clf else model.predict_one)(x)
    assert pickle.dumps(model) == before
    for xi, _ in stream[30:]:
        out = model.predict_proba_one(xi) if is_clf else model.predict_one(xi, with_dist=True)
        values = list(out.values()) if is_clf else [out.mu, out.sigma]
        assert all(math.isfinite(v) for v in values)


def test_a_huge_target_is_named_in_its_refusal():
    """The report: a target of 1e300 was refused naming only the largest input, a harmless
    0.1, and the advice to scale the inputs."""
    model = EDOEBE(n_warmup=20, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        a = float(rng.uniform(-1, 1))
        model.learn_one({"a": a}, math.sin(3 * a))
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match=r"'a' = 0.1 and its target is 1e\+300.*or the target"):
        model.learn_one({"a": 0.1}, 1e300)
    assert pickle.dumps(model) == before


def test_a_refused_sample_that_brought_a_new_feature_leaves_no_trace():
    model = DOBE(AdditivePolynomial(3), var_rw=1e-3)
    for i in range(10):
        model.learn_one({"a": float(i)}, float(i))
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="'b'"):
        model.learn_one({"a": 1.0, "b": 1e200}, 1.0)
    assert pickle.dumps(model) == before
    assert model.feature_names_in_ == ("a",)


# ------------------------------------------------------------------ observing changes nothing
def _regression_stream(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        x = {"a": float(rng.normal()), "b": float(rng.normal()), "c": float(rng.uniform())}
        drift = 1.0 if t < n // 2 else -1.0
        out.append((x, drift * math.sin(2 * x["a"]) + x["b"] * x["c"] + 0.1 * rng.normal()))
    return out


def _rff(k, **kw):
    return RandomFourierFeatures(8, lengthscale=1.5, seed=k, **kw)


REGRESSORS = [
    pytest.param(lambda: DOBE(_rff(0), var_eps=0.1, var_rw=1e-3), id="DOBE-dynamic"),
    pytest.param(lambda: DOBE(_rff(0), var_eps=0.1), id="DOBE-static"),
    pytest.param(
        lambda: DOEBE([DOBE(_rff(1), var_eps=0.1), DOBE(_rff(2), var_eps=0.1, var_rw=1e-2)]),
        id="DOEBE",
    ),
    pytest.param(
        lambda: SDOEBE(
            [DOBE(_rff(1), var_eps=0.1), DOBE(Linear(), var_eps=0.3, var_rw=1e-2)],
            transition=[[0.95, 0.05], [0.05, 0.95]],
        ),
        id="SDOEBE",
    ),
    pytest.param(
        lambda: EDOEBE(families=[_rff(3), HilbertGP(12)], n_warmup=60, n_samples=2,
                       starts=(1.0,), seed=0),
        id="EDOEBE-warm",
    ),
]

CLASSIFIERS = [
    pytest.param(lambda: DOBEClassifier(_rff(0), var_theta=5.0, var_rw=1e-3), id="DOBEClf"),
    pytest.param(
        lambda: DOEBEClassifier([DOBEClassifier(_rff(1)), DOBEClassifier(Linear(), var_rw=1e-2)]),
        id="DOEBEClf",
    ),
    pytest.param(
        lambda: SDOEBEClassifier(
            [DOBEClassifier(_rff(1)), DOBEClassifier(Linear(), var_rw=1e-2)],
            transition=[[0.9, 0.1], [0.1, 0.9]],
        ),
        id="SDOEBEClf",
    ),
    pytest.param(
        lambda: EDOEBEClassifier(families=[_rff(3)], n_warmup=60, n_samples=2, starts=(1.0,),
                                 seed=0),
        id="EDOEBEClf-warm",
    ),
]


def _look_at_everything(model, x_other):
    """Read every public view of a model, predict for another input, pickle it."""
    for name in ("weights", "members", "posterior", "log_evidence_", "n_samples_seen",
                 "is_warm", "classes_"):
        if hasattr(type(model), name):
            try:
                getattr(model, name)
            except RuntimeError:
                pass
    for method in ("describe",):
        if hasattr(model, method):
            getattr(model, method)()
    if hasattr(model, "member_predictions"):
        model.member_predictions(x_other)
    engine = model._engine
    engine.Sigma, engine.mu, engine.posterior(0)  # noqa: B018
    if hasattr(model, "predict_proba_one"):
        model.predict_proba_one(x_other)
    else:
        model.predict_one(x_other, with_dist=True)
        model.log_density_one(x_other, 0.3)
    pickle.dumps(model)
    copy.deepcopy(model)


def _predictions_after(model, stream, is_clf):
    out = []
    for x, y in stream:
        if is_clf:
            p = model.predict_proba_one(x)
            out.append(tuple(sorted(p.items(), key=lambda kv: str(kv[0]))))
        else:
            d = model.predict_one(x, with_dist=True)
            out.append((d.mu, d.sigma))
        model.learn_one(x, y)
    return out


@pytest.mark.parametrize("make", REGRESSORS + CLASSIFIERS)
@pytest.mark.parametrize("how", ["pickle", "deepcopy", "look"])
def test_observing_a_model_mid_stream_changes_nothing_later(make, how):
    """Bit for bit the same 150 later predictions as an untouched twin, whether the model was
    pickled, deep-copied, or looked at (every view, a prediction for another input)."""
    is_clf = "Classifier" in repr(make())
    data = _regression_stream(300)
    if is_clf:
        data = [(x, y > 0) for x, y in data]
    twin, model = make(), make()
    for x, y in data[:150]:
        for m in (twin, model):
            m.predict_one(x)
            m.learn_one(x, y)
    if how == "pickle":
        model = pickle.loads(pickle.dumps(model))
    elif how == "deepcopy":
        model = copy.deepcopy(model)
    else:
        _look_at_everything(model, data[200][0])
    assert _predictions_after(model, data[150:], is_clf) == _predictions_after(
        twin, data[150:], is_clf
    )


def test_pickling_between_predict_and_learn_changes_nothing():
    """The predict -> learn cache is not pickled; the restored model recomputes the same step."""
    data = _regression_stream(200, seed=4)
    make = lambda: DOEBE([DOBE(_rff(1), var_eps=0.1), DOBE(_rff(2), var_rw=1e-2)])  # noqa: E731
    twin, model = make(), make()
    for x, y in data[:100]:
        twin.predict_one(x)
        twin.learn_one(x, y)
        model.predict_one(x)
        model = pickle.loads(pickle.dumps(model))
        model.learn_one(x, y)
    assert [model.predict_one(x) for x, _ in data[100:]] == [
        twin.predict_one(x) for x, _ in data[100:]
    ]


def test_filter_error_is_a_value_error():
    assert issubclass(FilterError, ValueError)
