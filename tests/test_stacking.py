"""Online stacking of the members' predictive densities (``weighting="stacking"``) and the fixed
share: Bayes' rule as its special case, the regret bound against the best fixed mixture, a mixture
that beats every member and model averaging, recovery, and the river face."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from river import base
from scipy import optimize, special

from river_doebe import DOBE, DOEBE, EDOEBE, SDOEBE, DOBEClassifier, DOEBEClassifier
from river_doebe.basis import Linear, RandomFourierFeatures
from river_doebe.engine.weighting import Weighting


def _heteroscedastic(n, seed=0):
    """``y = x + noise``: noise 0.1 on the left half of the inputs, 1 on the right half."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, n)
    y = x + np.where(x < 0, 0.1, 1.0) * rng.standard_normal(n)
    return [{"x": float(v)} for v in x], y.tolist()


def _pair(**params):
    """A member that is sure of itself (noise 0.1) and one that is not (noise 1)."""
    return DOEBE([DOBE(Linear(), var_eps=0.01), DOBE(Linear(), var_eps=1.0)], weight_floor=0.0,
                 **params)


def _record(model, xs, ys):
    """For each row, before learning it: the members' log densities of the target, the
    weights used, and the mixture's log density; then learn it."""
    logp, weights, mixed = [], [], []
    for x, y in zip(xs, ys, strict=True):
        mean, var, w = model.member_predictions(x)
        logp.append(-0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var))
        weights.append(w)
        mixed.append(model.log_density_one(x, y))
        model.learn_one(x, y)
    return np.array(logp), np.array(weights), np.array(mixed)


def _best_mixture(logp):
    """The fixed mixture with the highest cumulative log density, by scipy over the simplex
    (softmax coordinates; the objective is concave in the weights)."""

    def loss(a):
        logu = a - special.logsumexp(a)
        return -special.logsumexp(logp + logu, axis=1).sum()

    res = optimize.minimize(loss, np.zeros(logp.shape[1]), method="L-BFGS-B")
    u = special.softmax(res.x)
    return u, -res.fun


def test_rate_one_is_bayes_rule_bit_for_bit():
    xs, ys = _heteroscedastic(300)
    a, b = _pair(), _pair(weighting="stacking", stacking_rate=1.0)
    for x, y in zip(xs, ys, strict=True):
        pa, pb = a.predict_one(x, with_dist=True), b.predict_one(x, with_dist=True)
        assert pa.log_pdf(y) == pb.log_pdf(y)
        a.learn_one(x, y)
        b.learn_one(x, y)
    assert np.array_equal(a.weights, b.weights)
    assert a.log_evidence_ == b.log_evidence_


@pytest.mark.parametrize("rate, share", [(0.1, 0.0), (0.5, 0.0), (0.1, 0.01)])
def test_regret_against_the_best_fixed_mixture_is_within_the_bound(rate, share):
    """``sum_t log(<u, p_t> / <w_t, p_t>) <= KL(u || w_1) / eta + eta sum_t <u, (r_t - 1)^2>
    + T log(1 / (1 - share)) / eta`` for every fixed mixture ``u`` (see
    :mod:`river_doebe.engine.weighting`), checked for the best one in hindsight and the
    vertices, with the densities and weights the model recorded."""
    xs, ys = _heteroscedastic(800, seed=1)
    model = DOEBE(
        [DOBE(Linear(), var_eps=0.01), DOBE(Linear(), var_eps=1.0),
         DOBE(RandomFourierFeatures(10, seed=2), var_eps=0.3, var_rw=1e-3)],
        weight_floor=0.0, weighting="stacking", stacking_rate=rate, share=share,
    )
    logp, w, mixed = _record(model, xs, ys)
    T, M = logp.shape
    assert np.allclose(w.sum(axis=1), 1.0) and (w > 0).all() and np.isfinite(w).all()
    # the model's own log density is that of its weights' mixture
    assert np.allclose(mixed, special.logsumexp(logp + np.log(w), axis=1), rtol=0, atol=1e-9)
    r = np.exp(logp - mixed[:, None])
    u_best, best = _best_mixture(logp)
    assert best >= special.logsumexp(logp - math.log(M), axis=1).sum() - 1e-6
    for u in [u_best, *np.eye(M)]:
        regret = special.logsumexp(logp + np.log(np.maximum(u, 1e-300)), axis=1).sum() - mixed.sum()
        kl = float(np.sum(u * np.log(np.maximum(u, 1e-300) * M)))
        bound = kl / rate + rate * float(np.sum(u * (r - 1.0) ** 2)) - T * math.log1p(-share) / rate
        assert regret <= bound


def test_the_stacked_mixture_beats_both_members_and_model_averaging():
    """Each member is better on half of the inputs: the mixture of the two is better than
    either, which model averaging (converging to one member) cannot be."""
    xs, ys = _heteroscedastic(3000, seed=2)
    scores = {}
    for name, model in {"bma": _pair(), "stacking": _pair(weighting="stacking",
                                                         stacking_rate=0.1)}.items():
        logp, w, mixed = _record(model, xs, ys)
        scores[name] = mixed[500:].mean()
        scores["members"] = logp[500:].mean(axis=0)
        if name == "stacking":
            final = w[-1]
    assert scores["stacking"] > scores["bma"] + 0.05
    assert scores["stacking"] > scores["members"].max() + 0.05
    assert 0.2 < final[0] < 0.8  # a real mixture, not one member


def test_weights_recover_after_the_leading_member_turns_bad():
    """The sure member leads while the noise is small, then the noise grows: under a share,
    the weights move to the other member within a few hundred samples, and back."""
    rng = np.random.default_rng(3)
    n = 1500
    x = rng.uniform(-1, 1, n)
    noise = np.where((np.arange(n) >= 500) & (np.arange(n) < 1000), 1.0, 0.1)
    y = x + noise * rng.standard_normal(n)
    xs, ys = [{"x": float(v)} for v in x], y.tolist()
    model = _pair(weighting="stacking", stacking_rate=0.2, share=0.01)
    _, w, mixed = _record(model, xs, ys)
    assert w[499, 0] > 0.8  # the sure member leads
    assert w[600, 0] < 0.2  # 100 samples after it turned bad, the other one does
    assert w[1100, 0] > 0.8  # and back, 100 samples after the noise fell again
    assert (w >= 0.01 / 2 - 1e-15).all()  # the share keeps every weight at share / M at least
    # model averaging collapses on the member that led last and never returns
    _, w_bma, mixed_bma = _record(_pair(), xs, ys)
    assert w_bma[1100, 0] < 1e-3
    assert mixed[1000:].mean() > mixed_bma[1000:].mean() + 1.0


def test_switching_and_stacking_together_and_the_block_path():
    xs, ys = _heteroscedastic(700, seed=4)
    make = lambda: SDOEBE(  # noqa: E731
        [DOBE(Linear(), var_eps=0.01), DOBE(Linear(), var_eps=1.0)],
        transition=[[0.99, 0.01], [0.01, 0.99]], weighting="stacking", stacking_rate=0.3,
        share=0.02,
    )
    a, b = make(), make()
    one = []
    for x, y in zip(xs, ys, strict=True):
        one.append(a.predict_one(x, with_dist=True))
        a.learn_one(x, y)
    many = []
    for i in range(0, len(xs), 128):
        many.extend(b.predict_learn_many(xs[i:i + 128], ys[i:i + 128], with_dist=True))
    assert [d.mu for d in one] == [d.mu for d in many]
    assert [d.sigma for d in one] == [d.sigma for d in many]
    assert np.array_equal(a.weights, b.weights) and a.log_evidence_ == b.log_evidence_


def test_an_edoebe_stacks_after_its_warm_up_and_pickles_exactly():
    xs, ys = _heteroscedastic(600, seed=5)
    model = EDOEBE(n_warmup=100, n_samples=1, starts=(1.0,), seed=0, weighting="stacking",
                   stacking_rate=0.1, share=0.01)
    for x, y in zip(xs[:300], ys[:300], strict=True):
        model.learn_one(x, y)
    assert model._engine.weighting == Weighting("stacking", 0.1, 0.01)
    copied = pickle.loads(pickle.dumps(model))
    deep = copy.deepcopy(model)
    for x, y in zip(xs[300:], ys[300:], strict=True):
        p = model.predict_one(x, with_dist=True)
        for other in (copied, deep):
            q = other.predict_one(x, with_dist=True)
            assert (p.mu, p.sigma) == (q.mu, q.sigma)
            other.learn_one(x, y)
        model.learn_one(x, y)
    w = model.weights
    assert np.isclose(w.sum(), 1.0) and (w > 0).all()


def test_a_classifier_stacks_too():
    rng = np.random.default_rng(6)
    xs = [{"a": float(v)} for v in rng.normal(size=400)]
    ys = [bool(x["a"] + 0.5 * rng.normal() > 0) for x in xs]
    model = DOEBEClassifier(
        [DOBEClassifier(Linear()), DOBEClassifier(Linear(), var_rw=1e-2)],
        weighting="stacking", stacking_rate=0.2, share=0.01,
    )
    for x, y in zip(xs, ys, strict=True):
        p = model.predict_proba_one(x)
        assert math.isclose(sum(p.values()), 1.0)
        model.learn_one(x, y)
    assert np.isclose(model.weights.sum(), 1.0) and (model.weights > 0).all()


@pytest.mark.parametrize(
    "params, match",
    [
        ({"weighting": "stack"}, "weighting must be one of"),
        ({"weighting": None}, "weighting must be one of"),
        ({"stacking_rate": 0.0}, "stacking_rate must be in"),
        ({"stacking_rate": 1.5}, "stacking_rate must be in"),
        ({"stacking_rate": "0.1"}, "stacking_rate must be in"),
        ({"share": 1.0}, "share must be in"),
        ({"share": -0.1}, "share must be in"),
    ],
)
def test_bad_weighting_parameters_are_refused_at_construction(params, match):
    with pytest.raises(ValueError, match=match):
        _pair(**params)
    with pytest.raises(ValueError, match=match):
        EDOEBE(**params)


def test_the_weighting_parameters_are_river_parameters():
    model = _pair(weighting="stacking", stacking_rate=0.3, share=0.05)
    assert isinstance(model, base.Regressor)
    clone = model.clone()
    assert (clone.weighting, clone.stacking_rate, clone.share) == ("stacking", 0.3, 0.05)
