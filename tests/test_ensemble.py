"""Ensembles: BMA weights are normalised evidences, switching, E-DOEBE structure, one-step-ahead
mixtures, river compatibility."""

from __future__ import annotations

import contextlib
import math
import pickle

import numpy as np
import pytest
from conftest import dicts
from river import compose, evaluate, preprocessing
from scipy.special import logsumexp
from scipy.stats import multivariate_normal, norm

from river_doebe import DOBE, DOEBE, EDOEBE, SDOEBE, EDOEBEClassifier
from river_doebe.basis import Linear, RandomFourierFeatures
from river_doebe.engine import edoebe_transition


def _stream(n=300, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 1.5 * X[:, 0] - X[:, 1] + 0.4 + 0.5 * rng.normal(size=n)
    return X, y


def _log_evidence(Phi, y, var_theta, var_eps):
    C = var_theta * Phi @ Phi.T + var_eps * np.eye(len(y))
    return multivariate_normal.logpdf(y, np.zeros(len(y)), C)


def test_bma_weights_are_normalised_evidences():
    X, y = _stream()
    specs = [(True, 1.0, 0.25), (False, 1.0, 0.25), (True, 0.1, 1.0), (True, 5.0, 0.2)]
    models = [DOBE(Linear(bias=b), var_theta=vt, var_eps=ve) for b, vt, ve in specs]
    ens = DOEBE(models, weight_floor=0.0)
    for x, t in zip(dicts(X), y):
        ens.learn_one(x, t)
    evid = []
    for b, vt, ve in specs:
        Phi = np.hstack([X, np.ones((len(X), 1))]) if b else X
        evid.append(_log_evidence(Phi, y, vt, ve))
    evid = np.array(evid)
    expected = evid - logsumexp(evid)
    got = np.log(ens.weights)
    np.testing.assert_allclose(got - got[0], expected - expected[0], rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(ens.weights, np.exp(expected), rtol=1e-8, atol=1e-300)
    # the ensemble's own running evidence is the log of the mixture of evidences
    assert ens.log_evidence_ == pytest.approx(logsumexp(evid) - math.log(4), rel=1e-10)


def test_prediction_is_the_moment_matched_mixture_of_the_prior_weights():
    X, y = _stream(n=60)
    models = [DOBE(Linear(), var_eps=0.3), DOBE(Linear(), var_eps=0.3, var_rw=1e-2)]
    ens = SDOEBE(models, transition=[[0.9, 0.1], [0.2, 0.8]], weight_floor=0.0)
    singles = [DOBE(Linear(), var_eps=0.3), DOBE(Linear(), var_eps=0.3, var_rw=1e-2)]
    for x, t in zip(dicts(X), y):
        w = ens.weights
        w_switched = w @ np.array([[0.9, 0.1], [0.2, 0.8]])
        dists = [s.predict_one(x, with_dist=True) for s in singles]
        means = np.array([d.mu for d in dists])
        vars_ = np.array([d.sigma**2 for d in dists])
        mean = w_switched @ means
        var = w_switched @ (vars_ + (means - mean) ** 2)
        got = ens.predict_one(x, with_dist=True)
        assert got.mu == pytest.approx(mean, rel=1e-10, abs=1e-12)
        assert got.sigma**2 == pytest.approx(var, rel=1e-10)
        exact = logsumexp(np.log(w_switched) + norm.logpdf(t, means, np.sqrt(vars_)))
        assert ens.log_density_one(x, t) == pytest.approx(exact, rel=1e-10)
        ens.learn_one(x, t)
        for s in singles:
            s.learn_one(x, t)


def test_weights_never_see_the_target_they_predict():
    X, y = _stream(n=80)
    make = lambda: EDOEBE(models=[DOBE(Linear(), var_eps=0.3), DOBE(Linear(bias=False))])  # noqa: E731
    a, b = make(), make()
    xs = dicts(X)
    for i, (x, t) in enumerate(zip(xs, y)):
        if i == 79:
            pa, pb = a.predict_one(x, with_dist=True), b.predict_one(x, with_dist=True)
            assert (pa.mu, pa.sigma) == (pb.mu, pb.sigma)
            a.learn_one(x, t)
            b.learn_one(x, -t + 50)
            assert not np.allclose(a.weights, b.weights)
        else:
            a.learn_one(x, t)
            b.learn_one(x, t)


def _members(task):
    """Members of both tasks: static and dynamic, with and without a bias, linear and RFF."""
    return [
        task.DOBE(Linear(), var_theta=1.0),
        task.DOBE(Linear(), var_theta=10.0, var_rw=1e-2),
        task.DOBE(Linear(bias=False), var_theta=0.3),
        task.DOBE(RandomFourierFeatures(6, lengthscale=2.0, seed=4), var_theta=5.0),
    ]


def test_sdoebe_with_identity_equals_doebe(task):
    X, y = task.stream(n=300, seed=8)
    a = task.DOEBE(_members(task))
    b = task.SDOEBE(_members(task), transition=np.eye(4))
    for x, t in zip(dicts(X), y, strict=True):
        assert task.predict(a, x) == task.predict(b, x)
        a.learn_one(x, t)
        b.learn_one(x, t)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.log_evidence_ == b.log_evidence_


def _static_then_drift(n_static=1500, n_drift=1500, seed=0):
    """A linear model that is fixed at first and then drifts quickly."""
    rng = np.random.default_rng(seed)
    n = n_static + n_drift
    X = rng.normal(size=(n, 2))
    w = np.array([1.0, -1.0])
    y = np.empty(n)
    for i in range(n):
        if i >= n_static:
            w = w + 0.05 * rng.normal(size=2)
        y[i] = X[i] @ w + 0.1 * rng.normal()
    return X, y


def test_collapsed_weight_revives_under_switching():
    X, y = _static_then_drift()
    members = lambda: [  # noqa: E731
        DOBE(Linear(bias=False), var_eps=0.01, var_rw=1e-3),
        DOBE(Linear(bias=False), var_eps=0.01),
    ]
    bma = DOEBE(members(), weight_floor=1e-16)  # the paper's floor
    switching = SDOEBE(members(), transition=edoebe_transition(1, 2, 1e-2), weight_floor=1e-16)
    w_bma, w_sw = [], []
    pll_bma, pll_sw = 0.0, 0.0
    for i, (x, t) in enumerate(zip(dicts(X), y)):
        d1, d2 = bma.predict_one(x, with_dist=True), switching.predict_one(x, with_dist=True)
        if i >= 1500:
            pll_bma += norm.logpdf(t, d1.mu, d1.sigma)
            pll_sw += norm.logpdf(t, d2.mu, d2.sigma)
        bma.learn_one(x, t)
        switching.learn_one(x, t)
        w_bma.append(bma.weights[0])
        w_sw.append(switching.weights[0])
    # the static member wins the static part: BMA drops the dynamic member for good
    assert w_bma[1499] == 0.0 and w_bma[-1] == 0.0
    assert w_sw[1499] < 0.05
    # once the data drift, the switching ensemble brings the dynamic member back
    assert np.mean(w_sw[-500:]) > 0.9
    assert pll_sw > pll_bma + 1000


@pytest.mark.parametrize("levels, delta", [((1e-3,), 1e-2), ((1e-2, 1e-4), 0.05)])
def test_edoebe_pays_at_most_the_switching_share_against_any_member(levels, delta):
    """Fixed-share bound: the prediction weight of member k is at least min_k Q_kk times its
    last posterior weight, so over T steps the E-DOEBE's log evidence is at least any member's
    cumulative log density minus log M and T log(1 / min Q_kk) (the price of its insurance)."""
    X, y = _static_then_drift()
    ens = EDOEBE(
        models=[DOBE(Linear(bias=False), var_eps=0.01), DOBE(Linear(), var_eps=0.1)],
        rw_variances=levels, delta=delta, weight_floor=0.0,
    )
    member_ll = None
    for i, (x, t) in enumerate(zip(dicts(X), y)):
        means, variances, _ = ens.member_predictions(x)  # every member is live (no floor)
        ll = norm.logpdf(t, means, np.sqrt(variances))
        ens.learn_one(x, t)
        member_ll = ll if member_ll is None else member_ll + ll
        if i in (10, 500, 1999, len(y) - 1):
            T, M = i + 1, len(ens.members)
            q_min = edoebe_transition(2, len(levels) + 1, delta).diagonal().min()
            slack = math.log(M) - T * math.log(q_min)
            assert ens.log_evidence_ >= member_ll.max() - slack - 1e-6
    # the insurance pays here: switching between twins beats every member once the data drift
    assert ens.log_evidence_ > member_ll.max() + 100


def test_a_member_under_the_floor_is_dead_and_leaves_the_stack(task):
    # a member whose prior all but pins its weights at 0 (and without a bias) loses to a linear
    # model on a (logistic) linear stream until its weight is under the floor
    X, y = task.stream(n=400, seed=11, d=2)
    dead = task.DOBE(Linear(bias=False), var_theta=1e-6)
    ens = task.DOEBE([task.DOBE(Linear(), var_theta=10.0), dead], weight_floor=1e-16)
    xs = dicts(X)
    for x, t in zip(xs, y, strict=True):
        ens.learn_one(x, t)
    assert ens.weights[1] == 0.0
    # under model averaging a member under the floor never gets weight again: it is dead, and
    # its state is gone (the rest of the stack carries on without it)
    with pytest.raises(ValueError, match="dead"):
        ens.member_posterior(1)
    assert len(ens.members) == 2 and ens.weights.shape == (2,)
    for x, t in zip(xs[:20], y[:20], strict=True):
        ens.learn_one(x, t)
    assert ens.weights[1] == 0.0 and ens.weights[0] == 1.0
    *predictions, w = ens.member_predictions(xs[0])
    dead_prediction = predictions[0][1][True] if task.is_classification else predictions[0][1]
    assert math.isnan(dead_prediction) and w[1] == 0.0


def test_edoebe_builds_twins_and_a_row_stochastic_block_matrix():
    ens = EDOEBE(
        models=[DOBE(Linear()), DOBE(Linear(bias=False), var_eps=0.5)],
        rw_variances=(1e-2, 1e-4),
        delta=0.05,
    )
    ens.learn_one({"a": 1.0}, 1.0)
    kinds = [(type(m.basis).__name__, m.basis.bias, m.var_rw) for m in ens.members]
    assert kinds == [
        ("Linear", True, 1e-2), ("Linear", False, 1e-2),
        ("Linear", True, 1e-4), ("Linear", False, 1e-4),
        ("Linear", True, 0.0), ("Linear", False, 0.0),
    ]
    Q = edoebe_transition(2, 3, 0.05)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0)
    assert Q[0, 0] == pytest.approx(0.9) and Q[0, 2] == Q[0, 4] == 0.05
    assert Q[0, 1] == Q[0, 3] == 0.0  # never across families
    assert ens.members[0].basis is not ens.members[4].basis


@pytest.mark.parametrize(
    "Q, word",
    [
        ([[0.5, 0.6], [0.5, 0.5]], "row-stochastic"),
        ([[1.5, -0.5], [0.0, 1.0]], "non-negative"),
        ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "square"),
        (np.eye(3), "3 members"),
    ],
)
def test_invalid_transition_matrices_are_refused(Q, word):
    with pytest.raises(ValueError, match=word):
        SDOEBE([DOBE(), DOBE()], transition=Q)


def test_invalid_ensemble_arguments():
    with pytest.raises(ValueError, match="delta"):
        EDOEBE(models=[DOBE()], delta=0.7, rw_variances=(1e-3, 1e-2))
    with pytest.raises(ValueError, match="weight_floor"):
        DOEBE([DOBE()], weight_floor=1.5)
    with pytest.raises(TypeError, match="DOBE"):
        DOEBE([Linear()]).learn_one({"a": 1.0}, 1.0)


def test_ensemble_pickles_clones_and_works_in_a_pipeline(task):
    if task.is_classification:
        members = [task.DOBE(), task.DOBE(RandomFourierFeatures(10, seed=2), var_theta=5.0)]
    else:
        members = [task.DOBE(Linear(), var_eps=0.5), task.DOBE(RandomFourierFeatures(10, seed=2))]
    ens = task.EDOEBE(models=members)
    model = preprocessing.StandardScaler() | ens
    data = list(task.dataset().take(300))
    for x, t in data[:200]:
        task.predict(model, x)
        model.learn_one(x, t)
    restored = pickle.loads(pickle.dumps(model))
    for x, t in data[200:]:
        assert task.predict(restored, x) == task.predict(model, x)
        restored.learn_one(x, t)
        model.learn_one(x, t)
    np.testing.assert_array_equal(restored[type(ens).__name__].weights, ens.weights)
    fresh = model.clone()
    assert isinstance(fresh, compose.Pipeline)
    assert fresh[type(ens).__name__].n_samples_seen == 0
    score = evaluate.progressive_val_score(task.dataset(), fresh, task.metric()).get()
    # measured on the whole dataset: accuracy 0.897 on Phishing, MAE 0.478 on TrumpApproval
    assert score > 0.88 if task.is_classification else score < 0.6


@pytest.mark.parametrize("warm", [False, True])
def test_bad_input_leaves_an_ensemble_untouched(warm):
    from river_doebe.basis import RandomFourierFeatures

    model = EDOEBE(families=[RandomFourierFeatures(5, seed=1)], n_warmup=20, n_samples=1,
                   starts=(1.0,), seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30 if warm else 5):
        a, b = rng.normal(size=2)
        model.learn_one({"a": a, "b": b}, a - b)
    assert model.is_warm == warm
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="'b'"):
        model.learn_one({"a": 1.0, "b": float("nan")}, 1.0)
    with pytest.raises(TypeError, match="'a'"):
        model.predict_one({"a": "x", "b": 1.0})
    with pytest.raises(ValueError, match="target"):
        model.learn_one({"a": 1.0, "b": 1.0}, float("inf"))
    assert pickle.dumps(model) == before


def test_replay_filters_every_member_through_the_whole_window():
    """The warm-up replay must not let the weight floor drop a member half-way: each member's
    posterior after it is that of the member alone on the window, and the weights are uniform."""
    from river_doebe.engine import Engine, Member

    X, y = _stream(n=300)
    specs = [Member(Linear(), 1.0, 0.25, 0.0), Member(Linear(), 1.0, 50.0, 1e-3)]
    engine = Engine(specs, None, weight_floor=1e-16)
    engine.setup(2)
    engine.replay(X, y)
    for k, spec in enumerate(specs):
        alone = Engine([Member(Linear(), spec.var_theta, spec.var_eps, spec.var_rw)])
        alone.setup(2)
        for z, t in zip(X, y):
            alone.learn(z, float(t))
        mu, Sigma = engine.posterior(k)
        mu_a, Sigma_a = alone.posterior(0)
        np.testing.assert_allclose(mu, mu_a, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(Sigma, Sigma_a, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(engine.weights, [0.5, 0.5])
    assert engine.log_floor == math.log(1e-16)
    # the same window learnt normally drops the second member for good
    normal = Engine([Member(Linear(), 1.0, 0.25, 0.0), Member(Linear(), 1.0, 50.0, 1e-3)],
                    None, weight_floor=1e-16)
    normal.setup(2)
    for z, t in zip(X, y):
        normal.learn(z, float(t))
    assert normal.weights[1] == 0.0


@pytest.mark.parametrize("make", [
    lambda f: DOEBE([DOBE(Linear(), var_eps=0.5), DOBE(Linear(), var_eps=0.1, var_rw=1e-3),
                     DOBE(Linear(), var_eps=1.0)], weight_floor=f),
    lambda f: DOEBE([DOBE(Linear(), var_eps=0.5), DOBE(Linear(), var_eps=1.0)],
                    weighting="stacking", weight_floor=f),
    lambda f: SDOEBE([DOBE(Linear(), var_eps=0.5), DOBE(Linear(), var_eps=1.0)],
                     [[0.9, 0.1], [0.1, 0.9]], weight_floor=f),
], ids=["doebe", "stacking", "sdoebe"])
def test_a_floor_above_every_weight_keeps_the_leader(make):
    """The report: a floor above every weight (0.5 over three uniform weights) zeroed every
    member, and the ensemble failed for good on a NumPy error. The largest weight is never
    zeroed; a floor as usual (far below the largest) zeroes the same members as before."""
    model = make(0.5)
    for i in range(30):
        x = {"a": i / 30}
        dist = model.predict_one(x, with_dist=True)
        assert math.isfinite(dist.mu) and dist.sigma > 0
        model.learn_one(x, 2.0 * i / 30)
    assert np.count_nonzero(model.weights) >= 1 and model.weights.sum() == pytest.approx(1.0)


def test_default_floor_keeps_a_member_that_comes_back():
    """The paper's floor (1e-16) prunes a member 37 nats behind for good; the default (1e-100)
    keeps it, and model averaging hands it the weight once it is the better model."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=80)
    y = np.r_[0.1 * rng.normal(size=40), 1.0 * rng.normal(size=40)]  # the noise grows
    xs = [{"x": float(v)} for v in x]

    def run(**kw):
        ens = DOEBE([DOBE(Linear(), var_eps=0.01), DOBE(Linear(), var_eps=1.0)], **kw)
        w40 = None
        for i, (xi, t) in enumerate(zip(xs, y)):
            ens.learn_one(xi, float(t))
            if i == 39:
                w40 = ens.weights[1]
        return w40, ens.weights[1]

    w40, w_end = run()
    assert 0 < w40 < 1e-16 and w_end > 0.99
    w40, w_end = run(weight_floor=1e-16)
    assert w40 == 0.0 and w_end == 0.0
    assert DOEBE([DOBE()]).weight_floor == 1e-100


def test_replay_window_filters_the_members_and_leaves_the_weights_uniform():
    """The public replay of a window (what the reproduction benchmark does with the paper's
    warm-up window): every member learns it as alone, the weights and the evidence do not."""
    X, y = _stream(n=200)
    xs = dicts(X)
    models = [DOBE(Linear(), var_eps=0.25), DOBE(Linear(), var_eps=50.0, var_rw=1e-3)]
    ens = EDOEBE(models=models, rw_variances=(1e-3,), weight_floor=1e-16)
    ens.replay_window(xs, y)
    np.testing.assert_array_equal(ens.weights, np.full(4, 0.25))
    assert ens.log_evidence_ == 0.0
    for k, member in enumerate(ens.members):
        alone = DOBE(Linear(), member.var_theta, member.var_eps, member.var_rw)
        for x, t in zip(xs, y):
            alone.learn_one(x, t)
        np.testing.assert_allclose(ens.member_posterior(k)[0], alone.posterior[0], rtol=1e-12)
    with pytest.raises(RuntimeError, match="warm-up"):
        EDOEBE(n_warmup=500).replay_window(xs[:5], y[:5])
    # after samples learnt as a stream, the replay starts the weights' mixture again: its
    # evidence with it (as documented)
    for x, t in zip(xs[:20], y[:20]):
        ens.learn_one(x, t)
    assert ens.log_evidence_ < 0.0
    ens.replay_window(xs[20:40], y[20:40])
    assert ens.log_evidence_ == 0.0


@contextlib.contextmanager
def _by_twins(*rented):
    """Every kernel of the :class:`~river_doebe.kernels.jit.Rented` ``rented`` run by its Python
    twin, as on a fresh install before the rent is paid."""
    saved = [(r.rent, r.paid, dict(r._bought),
              {k: r.__dict__.pop(k) for k in r._kernels if k in r.__dict__}) for r in rented]
    for r in rented:
        r.rent, r._bought = math.inf, dict.fromkeys(r._kernels, False)
    try:
        yield
    finally:
        for r, (rent, paid, bought, bound) in zip(rented, saved, strict=True):
            r.rent, r.paid, r._bought = rent, paid, bought
            r.__dict__.update(bound)


def _everything_read(model, xs, ys, classify):
    """Per sample, then in blocks: every number the river face gives before learning a target
    (the weights, read after it), and the log evidence at the end."""
    read = []
    for x, y in zip(xs[:450], ys[:450], strict=True):
        if classify:
            read.append(tuple(model.predict_proba_one(x).values()))
        else:
            dist = model.predict_one(x, with_dist=True)
            read.append((dist.mu, dist.sigma, model.log_density_one(x, y)))
        model.learn_one(x, y)
        if getattr(model, "_engine", None) is not None:
            read.append(tuple(model.weights))
    for i in range(450, len(xs), 64):
        out = model.predict_learn_many(xs[i:i + 64], ys[i:i + 64], with_dist=not classify)
        read.extend(o if classify else (o.mu, o.sigma) for o in out)
    return read, model.log_evidence_


@pytest.mark.parametrize("make", [
    lambda: EDOEBE(n_warmup=150, n_samples=2, seed=0),
    lambda: EDOEBE(n_warmup=150, n_samples=1, seed=0, weighting="stacking", stacking_rate=0.2,
                   share=0.01),
    lambda: EDOEBEClassifier(n_warmup=150, n_samples=1, seed=0),
], ids=["switching", "stacking-share", "classifier"])
def test_the_weights_and_standardisation_twins_give_the_kernels_bits(make):
    # a fresh install runs the weights' kernels and a sample's standardisation by their Python
    # twins until they have paid for their compile (kernels.jit.Rented): when the switch comes
    # must change no number, so the twins give the kernels' bits (the switching step, Bayes' rule
    # with its floor, Soft-Bayes and the fixed share, the mixture's moments, log density and
    # probabilities, the burial of the dead, a block's weights)
    from river_doebe.engine import core
    from river_doebe.warmup import standardise

    X, y = _static_then_drift(n_static=350, n_drift=350, seed=3)
    xs = dicts(X)
    model = make()
    classify = isinstance(model, EDOEBEClassifier)
    ys = [bool(v > np.median(y)) for v in y] if classify else y.tolist()
    compiled = _everything_read(model, xs, ys, classify)
    with _by_twins(core._WEIGHTS, standardise._STANDARDISE):
        twins = _everything_read(make(), xs, ys, classify)
        assert core._WEIGHTS.paid > 0 and standardise._STANDARDISE.paid > 0  # (the twins ran)
    assert twins == compiled
