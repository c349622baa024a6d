"""Classification: the Laplace step against a full-dimensional reference, the probit predictive,
labels, ensembles of logistic members, river compatibility."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from conftest import dicts, logistic_stream
from river import datasets, evaluate, metrics, preprocessing
from scipy.optimize import brentq
from scipy.special import expit, logsumexp

from river_doebe import (
    DOBEClassifier,
    DOEBEClassifier,
    EDOEBEClassifier,
    SDOEBEClassifier,
)
from river_doebe.basis import Linear, RandomFourierFeatures
from river_doebe.engine import LogisticEngine, Member, edoebe_transition
from river_doebe.kernels import logistic

CLASSES = [DOBEClassifier, DOEBEClassifier, SDOEBEClassifier, EDOEBEClassifier]


# ----------------------------------------------------------------------------- the Laplace step
def _reference_laplace(mu, Sigma_pred, phi, y):
    """Full-dimensional Newton on -log N(theta; mu, Sigma_pred) - log p(y | theta); covariance
    from the inverse Hessian of the negative log posterior at the mode."""
    P = np.linalg.inv(Sigma_pred)
    s = 1.0 if y else -1.0
    theta = mu.copy()
    for _ in range(100):
        f = phi @ theta
        grad = P @ (theta - mu) - s * phi * expit(-s * f)
        lam = expit(f) * expit(-f)
        H = P + lam * np.outer(phi, phi)
        step = np.linalg.solve(H, grad)
        theta = theta - step
        if np.linalg.norm(step) <= 1e-15 * (1.0 + np.linalg.norm(theta)):
            break
    f = phi @ theta
    lam = expit(f) * expit(-f)
    return theta, np.linalg.inv(P + lam * np.outer(phi, phi))


def _rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


@pytest.mark.parametrize("var_rw", [0.0, 1e-2])
def test_one_laplace_step_equals_the_full_dimensional_reference(var_rw):
    """Every member of a padded stack (F = 4, 3 and 10) against the F-dim Newton reference."""
    X, y = logistic_stream(n=60, d=3, seed=1)
    models = [
        DOBEClassifier(Linear(), var_theta=2.0, var_rw=var_rw),
        DOBEClassifier(Linear(bias=False), var_theta=0.5, var_rw=var_rw),
        DOBEClassifier(
            RandomFourierFeatures(5, lengthscale=1.5, seed=2), var_theta=8.0, var_rw=var_rw
        ),
    ]
    ens = DOEBEClassifier(models, weight_floor=0.0)
    xs = dicts(X)
    for x, t in zip(xs[:40], y[:40], strict=True):
        ens.learn_one(x, bool(t))
    for x, t in zip(xs[40:], y[40:], strict=True):
        z = np.array([x[name] for name in ens.feature_names_in_])
        before = [ens.member_posterior(k) for k in range(len(ens.members))]
        ens.learn_one(x, bool(t))
        for k, (mu, Sigma) in enumerate(before):
            f = mu.shape[0]
            phi = ens.members[k].basis.featurize_one(z)
            mu_ref, Sigma_ref = _reference_laplace(mu, Sigma + var_rw * np.eye(f), phi, t)
            mu_k, Sigma_k = ens.member_posterior(k)
            assert _rel(mu_k, mu_ref) < 1e-8
            assert _rel(Sigma_k, Sigma_ref) < 1e-8
            np.testing.assert_array_equal(Sigma_k, Sigma_k.T)


@pytest.mark.parametrize("a", [-60.0, -5.0, 0.0, 0.7, 40.0])
@pytest.mark.parametrize("s2", [0.0, 1e-9, 0.3, 50.0, 1e6])
@pytest.mark.parametrize("y", [0, 1])
def test_scalar_newton_is_robust_and_converged(a, s2, y):
    t, lam = logistic.solve_laplace_step(a, s2, y)
    s = 1.0 if y else -1.0
    residual = lambda u: u - s * expit(-s * (a + s2 * u))  # noqa: E731
    lo, hi = (0.0, 1.0) if y else (-1.0, 0.0)
    assert lo <= t <= hi
    ref = brentq(residual, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps)
    assert abs(t - ref) <= 1e-14 + 1e-12 * abs(ref)
    f = a + s2 * t
    assert lam == pytest.approx(expit(f) * expit(-f), rel=1e-9, abs=1e-300)


def test_covariance_stays_symmetric_positive_definite():
    X, y = logistic_stream(n=6000, d=4, seed=3, scale=4.0)
    model = DOBEClassifier(
        RandomFourierFeatures(10, lengthscale=2.0, seed=0), var_theta=10.0, var_rw=1e-3
    )
    for x, t in zip(dicts(X), y, strict=True):
        model.learn_one(x, t)
    _, Sigma = model.posterior
    np.testing.assert_array_equal(Sigma, Sigma.T)
    assert np.linalg.eigvalsh(Sigma).min() > 0


# ----------------------------------------------------------------------------- the predictive
@pytest.mark.parametrize("a, s2", [(0.0, 1.0), (1.5, 0.5), (-2.0, 4.0), (3.0, 20.0), (0.4, 100.0)])
def test_probit_predictive_is_close_to_the_expected_sigmoid(a, s2):
    nodes, w = np.polynomial.hermite_e.hermegauss(120)
    exact = np.sum(w * expit(a + math.sqrt(s2) * nodes)) / np.sum(w)
    logit = np.zeros(1)
    logistic.probit_logits(np.array([a]), np.array([s2]), logit)
    assert abs(expit(logit[0]) - exact) < 0.02


def test_predict_proba_is_the_probit_of_the_latent_predictive():
    X, y = logistic_stream(n=200, seed=4)
    model = DOBEClassifier(Linear(), var_theta=3.0, var_rw=1e-2)
    log_loss = 0.0
    for x, t in zip(dicts(X[:150]), y[:150], strict=True):
        log_loss -= model.log_density_one(x, t)
        model.learn_one(x, t)
    assert model.log_evidence_ == pytest.approx(-log_loss, rel=1e-12)
    mu, Sigma = model.posterior
    for row, x in zip(X[150:], dicts(X[150:]), strict=True):
        phi = np.append(row, 1.0)
        a, s2 = phi @ mu, phi @ (Sigma + 1e-2 * np.eye(3)) @ phi
        proba = model.predict_proba_one(x)
        assert proba[True] == pytest.approx(expit(a / math.sqrt(1 + math.pi * s2 / 8)), rel=1e-12)
        assert proba[False] + proba[True] == pytest.approx(1.0, abs=1e-15)


def test_online_error_on_separable_data_falls_towards_zero():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 2))
    y = X @ np.array([1.0, -2.0]) + 0.5 > 0
    model = DOBEClassifier(Linear(), var_theta=10.0)
    errors = []
    for x, t in zip(dicts(X), y, strict=True):
        errors.append(model.predict_one(x) != t)
        model.learn_one(x, t)
    assert np.mean(errors[-500:]) < 0.02
    assert np.mean(errors[-500:]) < np.mean(errors[:500])


# ----------------------------------------------------------------------------- labels
def test_probabilities_are_valid_and_before_any_label_follow_river():
    model = DOBEClassifier(RandomFourierFeatures(10, seed=1), var_theta=5.0, var_rw=1e-3)
    assert model.predict_proba_one({"a": 1.0}) == {False: 0.5, True: 0.5}
    assert model.predict_one({"a": 1.0}) is False
    X, y = logistic_stream(n=300, d=1, seed=6, scale=8.0)
    for x, t in zip([{"a": v} for v in X[:, 0]], y, strict=True):
        proba = model.predict_proba_one(x)
        assert set(proba) == {False, True}
        assert all(0.0 <= p <= 1.0 for p in proba.values())
        assert sum(proba.values()) == pytest.approx(1.0, abs=1e-12)
        model.learn_one(x, t)


@pytest.mark.parametrize(
    "code0, code1, first",
    [
        ("ham", "spam", "spam"),  # sorted: the first label seen gets code 1 (a flip)
        ("ham", "spam", "ham"),
        (3, 7, 7),
        (False, True, True),
        (np.False_, np.True_, np.False_),
        (0, "x", 0),  # not comparable: order of appearance
        ("x", 0, "x"),
    ],
)
def test_any_two_labels_are_an_exact_relabelling_of_bools(code0, code1, first):
    X, y = logistic_stream(n=120, seed=7)
    y[:5] = True  # a few samples of one label before the second label appears
    if code1 != first:
        y = ~y  # the stream starts with `first`
    make = lambda: DOEBEClassifier(  # noqa: E731
        [DOBEClassifier(Linear(), var_rw=1e-2), DOBEClassifier(Linear(bias=False))]
    )
    named, plain = make(), make()
    for x, t in zip(dicts(X), y, strict=True):
        label = code1 if t else code0
        p, q = named.predict_proba_one(x), plain.predict_proba_one(x)
        if len(named.classes_) == 1 and not isinstance(first, bool | np.bool_):
            assert p == {first: 1.0}
        elif len(named.classes_) == 2:
            assert set(p) == {code0, code1}
            assert p[code1] == pytest.approx(q[True], rel=1e-12, abs=1e-15)
            assert named.predict_one(x) == (code1 if plain.predict_one(x) else code0)
        named.learn_one(x, label)
        plain.learn_one(x, bool(t))
    assert named.classes_ == (code0, code1)
    np.testing.assert_allclose(named.weights, plain.weights, rtol=1e-12)


def test_single_non_bool_label_and_third_label():
    model = DOBEClassifier()
    model.learn_one({"a": 1.0}, "cat")
    assert model.predict_proba_one({"a": 2.0}) == {"cat": 1.0}
    assert model.predict_one({"a": 2.0}) == "cat"
    model.learn_one({"a": -1.0}, "bird")
    proba = model.predict_proba_one({"a": 2.0})
    assert list(proba) == ["bird", "cat"] and proba["cat"] > 0.5
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="third label 'dog'.*OneVsRestClassifier"):
        model.learn_one({"a": 1.0}, "dog")
    assert pickle.dumps(model) == before
    assert model.log_density_one({"a": 2.0}, "cat") == pytest.approx(math.log(proba["cat"]))
    with pytest.raises(ValueError, match="not one of the labels"):
        model.log_density_one({"a": 2.0}, "dog")


@pytest.mark.parametrize(
    "x, y, exc, word",
    [
        ({"a": float("nan"), "b": 1.0}, True, ValueError, "'a'"),
        ({"a": 1.0, "b": float("inf")}, True, ValueError, "'b'"),
        ({"a": "1.0", "b": 1.0}, True, TypeError, "'a'"),
        ({"a": 1.0, "b": None}, True, TypeError, "'b'"),
        ({"a": 1.0, "b": 1.0}, None, ValueError, "None"),
        ({"a": 1.0, "b": 1.0}, float("nan"), ValueError, "NaN"),
        ({"a": 1.0, "b": 1.0}, [1], TypeError, "hashable"),
    ],
)
def test_bad_input_raises_and_leaves_state_unchanged(x, y, exc, word):
    bad_x = y is True
    model = DOBEClassifier(Linear(), var_rw=1e-3)
    for i in range(5):
        model.learn_one({"a": float(i), "b": 1.0 - i}, i % 2 == 0)
    before = pickle.dumps(model)
    with pytest.raises(exc, match=word):
        model.learn_one(x, y)
    if bad_x:
        with pytest.raises(exc, match=word):
            model.predict_proba_one(x)
    assert pickle.dumps(model) == before
    # a bad first sample fixes neither a schema nor a label
    fresh = DOBEClassifier()
    with pytest.raises(exc, match=word):
        fresh.learn_one(x, y)
    assert fresh.feature_names_in_ == () and fresh.classes_ == ()



# a missing label in any of its forms: Python's, NumPy's and pandas' (a nullable ``boolean``,
# ``string`` or ``Int64`` column's <NA>, a datetime column's NaT)
MISSING_LABELS = [None, float("nan"), np.float64("nan"), np.float32("nan"), pd.NA, pd.NaT,
                  np.datetime64("NaT"), np.timedelta64("NaT"), complex("nan")]
MAKE_CLASSIFIERS = {
    "DOBEClassifier": lambda: DOBEClassifier(RandomFourierFeatures(6, seed=1)),
    "DOEBEClassifier": lambda: DOEBEClassifier([DOBEClassifier(), DOBEClassifier(var_rw=1e-2)]),
    "SDOEBEClassifier": lambda: SDOEBEClassifier([DOBEClassifier(), DOBEClassifier(var_rw=1e-2)],
                                                 transition=[[0.9, 0.1], [0.1, 0.9]]),
    "EDOEBEClassifier": lambda: EDOEBEClassifier(n_warmup=20, n_samples=2, starts=(1.0,),
                                                 seed=0),
}


@pytest.mark.parametrize("missing", MISSING_LABELS, ids=repr)
@pytest.mark.parametrize("make", MAKE_CLASSIFIERS.values(), ids=MAKE_CLASSIFIERS.keys())
def test_a_missing_label_is_refused_and_never_becomes_a_class(make, missing):
    """The report: with the labels True, True, pd.NA, False, <NA> became the second class and
    the real False was refused for good as a third label (NaT labels were two classes)."""
    model, twin = make(), make()
    stream = [({"a": 0.5}, True), ({"a": 0.7}, True), ({"a": -0.1}, missing),
              ({"a": -0.6}, False), ({"a": -0.2}, False)]
    for x, t in stream:
        before = pickle.dumps(model)
        if t is missing:
            with pytest.raises(ValueError, match="the label is .*(missing|None)"):
                model.learn_one(x, t)
            with pytest.raises(ValueError, match="the label is"):
                model.predict_learn_many([x], [t])
            assert pickle.dumps(model) == before
            continue
        model.learn_one(x, t)
        twin.learn_one(x, t)
    assert model.classes_ == (False, True)
    assert pickle.dumps(model) == pickle.dumps(twin)
    # before any label, and as a second label
    for labels in ([missing], [True, missing], ["b", "a", missing]):
        fresh = make()
        for t in labels[:-1]:
            fresh.learn_one({"a": 1.0}, t)
        before = pickle.dumps(fresh)
        with pytest.raises(ValueError, match="the label is"):
            fresh.learn_one({"a": 1.0}, labels[-1])
        assert pickle.dumps(fresh) == before
    with pytest.raises(ValueError, match="the label is"):
        model.log_density_one({"a": 1.0}, missing)


@pytest.mark.parametrize("dtype, labels", [
    ("boolean", [True, pd.NA, True, False]),
    ("string", ["cat", "dog", pd.NA, "cat"]),
    ("Int64", [1, 0, 0, pd.NA]),
    ("object", [True, False, None, True]),
    ("float64", [1.0, 0.0, float("nan"), 1.0]),
    ("datetime64[ns]", [pd.Timestamp(0), pd.NaT, pd.Timestamp(1), pd.Timestamp(0)]),
])
@pytest.mark.parametrize("make", MAKE_CLASSIFIERS.values(), ids=MAKE_CLASSIFIERS.keys())
def test_a_batch_with_a_missing_label_is_refused_whole(make, dtype, labels):
    """A nullable column's <NA> (a datetime column's NaT) is refused as a NaN label is: the whole
    batch, naming the row, with the model unchanged, in every batch method and form."""
    y = pd.Series(labels, dtype=dtype)
    row = next(i for i, t in enumerate(labels) if t is None or t is pd.NA or t != t)
    X = pd.DataFrame({"a": [0.1, -0.2, 0.3, -0.4]})
    model = make()
    model.learn_one({"a": 0.0}, y.dropna().iloc[0])
    before = pickle.dumps(model)
    for call in (lambda: model.learn_many(X, y), lambda: model.predict_learn_many(X, y),
                 lambda: model.learn_many(X.to_dict("records"), y.tolist()),
                 lambda: model.predict_learn_many(X.to_dict("records"), list(y))):
        with pytest.raises(ValueError, match=f"row {row}: the label is .*missing"):
            call()
        assert pickle.dumps(model) == before
    assert len(model.classes_) == 1


def test_invalid_parameters():
    with pytest.raises(ValueError, match="var_theta"):
        DOBEClassifier(var_theta=0.0)
    with pytest.raises(ValueError, match="var_rw"):
        DOBEClassifier(var_rw=-1.0)
    with pytest.raises(ValueError, match="weight_floor"):
        DOEBEClassifier([DOBEClassifier()], weight_floor=1.0)
    with pytest.raises(ValueError, match="delta"):
        EDOEBEClassifier(models=[DOBEClassifier()], delta=0.7, rw_variances=(1e-3, 1e-2))
    with pytest.raises(TypeError, match="DOBEClassifier"):
        DOEBEClassifier([Linear()]).learn_one({"a": 1.0}, True)
    with pytest.raises(ValueError, match="row-stochastic"):
        SDOEBEClassifier([DOBEClassifier(), DOBEClassifier()], transition=[[0.5, 0.6], [0, 1]])


# ----------------------------------------------------------------------------- ensembles
def _members():
    return [
        DOBEClassifier(Linear(), var_theta=1.0),
        DOBEClassifier(Linear(), var_theta=10.0, var_rw=1e-2),
        DOBEClassifier(Linear(bias=False), var_theta=0.3),
        DOBEClassifier(RandomFourierFeatures(6, lengthscale=2.0, seed=4), var_theta=5.0),
    ]


def test_bma_weights_are_normalised_products_of_member_predictives():
    X, y = logistic_stream(n=300, seed=9)
    static = [m for m in _members() if m.var_rw == 0]
    ens = DOEBEClassifier(copy.deepcopy(static), weight_floor=0.0)
    alone = copy.deepcopy(static)
    log_evidence = np.zeros(len(alone))
    for x, t in zip(dicts(X), y, strict=True):
        for k, m in enumerate(alone):
            log_evidence[k] += math.log(m.predict_proba_one(x)[bool(t)])
            m.learn_one(x, t)
        ens.learn_one(x, t)
    expected = log_evidence - logsumexp(log_evidence)
    np.testing.assert_allclose(np.log(ens.weights), expected, rtol=1e-9, atol=1e-9)
    assert ens.log_evidence_ == pytest.approx(
        logsumexp(log_evidence) - math.log(len(alone)), rel=1e-10
    )
    # the members run alone are the ensemble's members
    x = dicts(X[:1])[0]
    probas, _ = ens.member_predictions(x)
    for got, m in zip(probas, alone, strict=True):
        assert got[True] == pytest.approx(m.predict_proba_one(x)[True], rel=1e-12)


def test_switching_prediction_mixes_the_switched_weights():
    X, y = logistic_stream(n=200, seed=10)
    Q = edoebe_transition(2, 2, 0.05)
    ens = SDOEBEClassifier(_members(), transition=Q, weight_floor=0.0)
    alone = _members()
    for x, t in zip(dicts(X), y, strict=True):
        w = ens.weights @ Q
        p = np.array([m.predict_proba_one(x)[True] for m in alone])
        got = ens.predict_proba_one(x)
        assert got[True] == pytest.approx(w @ p, rel=1e-10)
        expected_log_w = np.log(w) + (np.log(p) if t else np.log1p(-p))
        ens.learn_one(x, t)
        np.testing.assert_allclose(
            np.log(ens.weights), expected_log_w - logsumexp(expected_log_w), atol=1e-9
        )
        for m in alone:
            m.learn_one(x, t)


def test_the_padding_of_a_heterogeneous_stack_is_never_touched():
    members = [Member(Linear(), 1.0, 0.0), Member(Linear(bias=False), 1.0, 0.0, 1e-3)]
    engine = LogisticEngine(members)
    engine.setup(2)
    X, y = logistic_stream(n=50, seed=13)
    for z, t in zip(X, y, strict=True):
        engine.learn(z, int(t))
    assert engine.F.tolist() == [3, 2]
    assert not engine.mu[1, 2:].any() and not engine.Sigma[1, 2:, :].any()
    assert not engine.Sigma[1, :, 2:].any()


def test_edoebe_with_explicit_models_builds_twins():
    ens = EDOEBEClassifier(
        models=[DOBEClassifier(Linear()), DOBEClassifier(Linear(bias=False))],
        rw_variances=(1e-2, 1e-4),
        delta=0.05,
    )
    np.testing.assert_allclose(ens.weights, np.full(6, 1 / 6))
    ens.learn_one({"a": 1.0}, "yes")
    kinds = [(m.basis.bias, m.var_rw) for m in ens.members]
    assert kinds == [
        (True, 1e-2),
        (False, 1e-2),
        (True, 1e-4),
        (False, 1e-4),
        (True, 0.0),
        (False, 0.0),
    ]
    assert ens.members[0].basis is not ens.members[4].basis
    assert ens.is_warm and ens.n_samples_seen == 1


def test_every_basis_family_in_one_ensemble():
    """Mixed families (different F, an RBF network placing its centres online) in one stack."""
    from river_doebe.basis import AdditivePolynomial, HilbertGP, RBFNetwork

    ens = EDOEBEClassifier(
        models=[
            DOBEClassifier(Linear()),
            DOBEClassifier(RandomFourierFeatures(20, lengthscale=3.0, seed=0), var_theta=10.0),
            DOBEClassifier(HilbertGP(), var_theta=10.0),
            DOBEClassifier(RBFNetwork(), var_theta=10.0),
            DOBEClassifier(AdditivePolynomial(), var_theta=10.0),
        ]
    )
    model = preprocessing.StandardScaler() | ens
    score = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    assert score.get() > 0.85
    assert len({m.basis.n_outputs for m in ens.members}) >= 3
    assert ens.weights.sum() == pytest.approx(1.0)
    for k in range(len(ens.members)):
        S = ens.member_posterior(k)[1]
        np.testing.assert_array_equal(S, S.T)
        assert np.linalg.eigvalsh(S).min() > 0


# ----------------------------------------------------------------------------- the drop-in warm-up
def _circle(n=500, seed=0):
    """A nonlinear boundary on raw (unstandardised) inputs: inside an ellipse or not."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * np.array([1.0, 20.0]) + np.array([3.0, -50.0])
    y = ((X[:, 0] - 3.0) ** 2 + ((X[:, 1] + 50.0) / 20.0) ** 2) < 1.4
    return X, y


def _families():
    from river_doebe.basis import HilbertGP

    return [RandomFourierFeatures(10, seed=1), HilbertGP(20)]


def _warm(**kw):
    params = dict(families=_families(), n_warmup=150, n_samples=2, starts=(1.0,), seed=3)
    params.update(kw)
    return EDOEBEClassifier(**params)


def _stream(model, X, labels):
    """Progressive validation; checks every prediction is a valid distribution. Returns the
    predicted labels and the log probability of every true label."""
    preds, logp = [], []
    for x, t in zip(dicts(X), labels, strict=True):
        proba = model.predict_proba_one(x)
        assert all(0.0 <= p <= 1.0 for p in proba.values())
        assert sum(proba.values()) == pytest.approx(1.0, abs=1e-12)
        preds.append(model.predict_one(x))
        if t in proba:
            logp.append(model.log_density_one(x, t))
        model.learn_one(x, t)
    return np.array(preds), np.array(logp)


def test_warm_up_predicts_valid_probabilities_from_the_first_sample_then_switches():
    X, y = _circle()
    model = _warm()
    assert model.predict_proba_one(dicts(X[:1])[0]) == {False: 0.5, True: 0.5}
    assert not model.is_warm and model.weights.tolist() == [1.0]
    with pytest.raises(RuntimeError, match="warm-up"):
        model.member_predictions(dicts(X[:1])[0])
    preds, logp = _stream(model, X[:149], y[:149])
    assert not model.is_warm
    preds2, logp2 = _stream(model, X[149:], y[149:])
    assert model.is_warm and model.n_samples_seen == len(y)
    # the log evidence is that of the probabilities actually given (fallback, then ensemble)
    assert model.log_evidence_ == pytest.approx(logp.sum() + logp2.sum(), rel=1e-9)
    # 2 families x 1 start x 2 draws = 4 static members, each with a dynamic twin first
    members = model.describe()
    assert len(members) == 8 and "var_eps" not in members[0]
    assert [m["dynamic"] for m in members] == [True] * 4 + [False] * 4
    assert {m["family"] for m in members} == {"RandomFourierFeatures", "HilbertGP"}
    assert sum(m["weight"] for m in members) == pytest.approx(1.0)
    # a nonlinear boundary on raw inputs of very different scales is learnt
    assert np.mean(preds2[151:] != y[300:]) < 0.1
    # member_predictions standardises like predict_proba_one
    x = dicts(X[:1])[0]
    probas, w = model.member_predictions(x)
    mix = sum(wk * p[True] for wk, p in zip(w, probas, strict=True) if wk > 0)
    assert mix / w.sum() == pytest.approx(model.predict_proba_one(x)[True], rel=1e-10)


def test_hyperparameters_are_the_label_regression_evidence_fit():
    """The documented criterion: type-II ML of a regression of the -1/+1 codes on each basis,
    on the inputs standardised with the window's statistics (the labels untouched)."""
    from river_doebe.warmup import Standardizer, fit_members

    X, y = _circle(n=200)
    model = _warm()
    for x, t in zip(dicts(X[:150]), y[:150], strict=True):
        model.learn_one(x, t)
    Z = Standardizer.fit(X[:150], y[:150].astype(float)).x(X[:150])
    ref = fit_members(Z, 2.0 * y[:150] - 1.0, _families(), n_samples=2, starts=(1.0,), seed=3)
    static = model.describe()[len(ref):]
    for got, want in zip(static, ref, strict=True):
        assert got["var_theta"] == want.var_theta
        np.testing.assert_array_equal(list(got["hyper"].values()), want.basis.get_hyper())
    np.testing.assert_array_equal(model.standardizer_.x_mean, X[:150].mean(axis=0))


def test_pickle_round_trips_predictions_exactly_after_warm_up_and_clone_is_fresh():
    X, y = _circle(n=300)
    model = _warm()
    for x, t in zip(dicts(X[:200]), y[:200], strict=True):
        model.learn_one(x, t)
    assert model.is_warm
    restored = pickle.loads(pickle.dumps(model))
    for x, t in zip(dicts(X[200:]), y[200:], strict=True):
        assert restored.predict_proba_one(x) == model.predict_proba_one(x)
        restored.learn_one(x, t)
        model.learn_one(x, t)
    assert restored.log_evidence_ == model.log_evidence_
    fresh = model.clone()
    assert not fresh.is_warm and fresh.n_samples_seen == 0 and fresh.classes_ == ()
    # mid-warm-up pickles too
    half = _warm()
    for x, t in zip(dicts(X[:50]), y[:50], strict=True):
        half.learn_one(x, t)
    again = pickle.loads(pickle.dumps(half))
    for x, t in zip(dicts(X[50:200]), y[50:200], strict=True):
        assert again.predict_proba_one(x) == half.predict_proba_one(x)
        again.learn_one(x, t)
        half.learn_one(x, t)
    assert again.is_warm and half.is_warm


def test_from_batch_equals_streaming_the_window():
    X, y = _circle(n=250)
    streamed = _warm()
    for x, t in zip(dicts(X[:150]), y[:150], strict=True):
        streamed.learn_one(x, t)
    batch = EDOEBEClassifier.from_batch(
        X[:150], y[:150], families=_families(), n_samples=2, starts=(1.0,), seed=3
    )
    assert batch.is_warm and batch.n_samples_seen == 150
    for x in dicts(X[150:]):
        assert batch.predict_proba_one(x) == streamed.predict_proba_one(x)
    with pytest.raises(ValueError, match="explicit models"):
        EDOEBEClassifier.from_batch(X, y, models=[DOBEClassifier()])
    # mini-batches across the end of the warm-up
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["x0", "x1"])
    many = _warm()
    many.learn_many(frame.iloc[:100], pd.Series(y[:100]))
    with pytest.raises(RuntimeError, match="before its warm-up ends"):
        _ = many.members
    many.learn_many(frame.iloc[100:150], pd.Series(y[100:150]))
    proba = many.predict_proba_many(frame.iloc[150:])
    expected = [streamed.predict_proba_one(x)[True] for x in dicts(X[150:])]
    np.testing.assert_array_equal(proba[True].to_numpy(), expected)


def test_labels_that_flip_during_the_warm_up_are_an_exact_relabelling():
    X, y = _circle(n=300, seed=1)
    y[:3] = True  # 'spam' first: 'ham' sorts before it and flips the codes at its first sight
    named, plain = _warm(), _warm()
    for x, t in zip(dicts(X), y, strict=True):
        p, q = named.predict_proba_one(x), plain.predict_proba_one(x)
        if len(named.classes_) == 2:
            assert p["spam"] == pytest.approx(q[True], rel=1e-12, abs=1e-15)
        named.learn_one(x, "spam" if t else "ham")
        plain.learn_one(x, bool(t))
    assert named.classes_ == ("ham", "spam")
    np.testing.assert_allclose(named.weights, plain.weights, rtol=1e-12)


def test_one_class_window_warns_and_still_learns_the_boundary():
    X, y = _circle(n=600, seed=2)
    y[:150] = True
    model = _warm()
    with pytest.warns(RuntimeWarning, match="one class only"):
        preds, _ = _stream(model, X, y)
    # one member per family (template hyperparameters), and a dynamic twin each
    members = model.describe()
    assert [(m["family"], m["var_theta"]) for m in members[2:]] == [
        ("RandomFourierFeatures", 1.0),
        ("HilbertGP", 1.0),
    ]
    assert np.mean(preds[400:] != y[400:]) < 0.15
    # a non-bool single label whose code flips only after the warm-up
    labels = np.where(y, "spam", "ham")
    model = _warm()
    with pytest.warns(RuntimeWarning, match="one class only"):
        preds, _ = _stream(model, X, labels)
    assert model.classes_ == ("ham", "spam")
    assert np.mean(preds[400:] != labels[400:]) < 0.15


def test_constant_feature_in_the_window_is_left_out_and_later_values_are_harmless():
    X, y = _circle(n=400, seed=3)
    rng = np.random.default_rng(3)
    X = np.column_stack([X, np.full(400, 7.0)])
    X[150:, 2] = rng.normal(scale=1e6, size=250)
    model = _warm()
    with pytest.warns(RuntimeWarning, match="constant over the warm-up"):
        preds, _ = _stream(model, X, y)
    assert np.mean(preds[200:] != y[200:]) < 0.1


def test_a_stream_shorter_than_the_window():
    X, y = _circle(n=120)
    model = _warm(n_warmup=1000)
    with pytest.raises(RuntimeError, match="at least 2"):
        model.finish_warmup()
    _stream(model, X[:100], y[:100])
    assert not model.is_warm
    with pytest.warns(RuntimeWarning, match="ended early on 100"):
        assert model.finish_warmup() is model
    assert model.is_warm
    _stream(model, X[100:], y[100:])


def test_without_replay_the_members_start_from_their_prior():
    X, y = _circle(n=150)
    model = _warm(replay=False)
    for x, t in zip(dicts(X), y, strict=True):
        model.learn_one(x, t)
    assert model.is_warm
    assert not any(model.member_posterior(k)[0].any() for k in range(len(model.members)))
    np.testing.assert_allclose(model.weights, np.full(8, 1 / 8))


def test_warm_up_parameters_are_validated():
    with pytest.raises(TypeError, match="models="):
        EDOEBEClassifier([DOBEClassifier()])
    with pytest.raises(ValueError, match="n_warmup"):
        EDOEBEClassifier(n_warmup=1)
    with pytest.raises(ValueError, match="n_samples"):
        EDOEBEClassifier(n_samples=0)
    with pytest.raises(ValueError, match="rw_variances"):
        EDOEBEClassifier(rw_variances=(-1e-3,))
    with pytest.raises(ValueError, match="no members"):
        EDOEBEClassifier(rw_variances=(), static=False)
    with pytest.raises(ValueError, match="unknown basis family 'gp'"):
        EDOEBEClassifier(families=["gp"])


# ----------------------------------------------------------------------------- river
def test_learn_many_and_predict_many_match_one_by_one():
    pd = pytest.importorskip("pandas")
    X, y = logistic_stream(n=150, d=3, seed=12)
    labels = np.where(y, "spam", "ham")
    labels[0] = "spam"  # the second label ("ham") flips the first label's code mid-batch
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    make = lambda: SDOEBEClassifier(  # noqa: E731
        [DOBEClassifier(var_rw=1e-2), DOBEClassifier(RandomFourierFeatures(5, seed=1))],
        transition=[[0.9, 0.1], [0.1, 0.9]],
    )
    a, b = make(), make()
    a.learn_many(frame.iloc[:60], pd.Series(labels[:60]))
    a.learn_many(frame.iloc[60:100], pd.Series(labels[60:100]))
    for x, t in zip(dicts(X[:100]), labels[:100], strict=True):
        b.learn_one(x, t)
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-10)
    proba = a.predict_proba_many(frame.iloc[100:])
    assert list(proba.columns) == ["ham", "spam"]
    one = [b.predict_proba_one(x) for x in dicts(X[100:])]
    np.testing.assert_allclose(proba["spam"].to_numpy(), [p["spam"] for p in one], rtol=1e-10)
    assert a.predict_many(frame.iloc[100:]).tolist() == [b.predict_one(x) for x in dicts(X[100:])]
    with pytest.raises(ValueError, match="third label"):
        a.learn_many(frame.iloc[:3], pd.Series(["ham", "spam", "eggs"]))
    with pytest.raises(ValueError, match="rows"):
        a.learn_many(frame.iloc[:3], pd.Series(["ham"]))


@pytest.mark.parametrize("var_rw", [0.0, 0.1])
def test_a_prediction_before_the_label_flip_changes_no_bit(var_rw):
    """The second label sorting first flips the codes: the means are negated. With owed
    updates pending (no prediction since the last learn) they were negated apart from their
    owed steps, which gave a feature that is always 0 a weight of +0.0 where a prediction
    before the flip led to -0.0: the pickles differed. The flip applies the owed updates
    first."""
    rows = [{"a": 0.5, "holiday": 0.0}, {"a": -1.0, "holiday": 0.0}, {"a": 2.0, "holiday": 0.0},
            {"a": 0.1, "holiday": 0.0}]
    labels = ["b", "b", "a", "a"]

    def make():
        return DOEBEClassifier([DOBEClassifier(Linear(), var_theta=1.0, var_rw=var_rw),
                                DOBEClassifier(RandomFourierFeatures(4, seed=1), var_rw=var_rw)],
                               weight_floor=0.0)

    learnt, observed = make(), make()
    for x, y in zip(rows, labels, strict=True):
        learnt.learn_one(x, y)
        observed.predict_proba_one(x)
        observed.learn_one(x, y)
    assert pickle.dumps(learnt) == pickle.dumps(observed)
    many, blocks = make(), make()
    many.learn_many(rows, labels)
    blocks.predict_learn_many(rows, labels)
    assert pickle.dumps(many) == pickle.dumps(blocks) == pickle.dumps(learnt)
