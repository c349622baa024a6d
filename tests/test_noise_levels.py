"""The E-DOEBE's noise levels: twins of every member with its noise variance scaled, between
which the weights switch, so that a noise level that rises after the warm-up is followed."""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pytest
from conftest import static_members_hold_the_batch_posterior

from river_doebe import DOBE, EDOEBE
from river_doebe.basis import BSpline, HilbertGP, Linear, RandomFourierFeatures


def _stream(n, change, before, after, seed=0):
    """``y = sin(6a) + b`` plus noise of deviation ``before``, then ``after`` from ``change``;
    with the noiseless value."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        a, b = float(rng.uniform()), float(rng.uniform())
        f = math.sin(6.0 * a) + b
        noise = (before if t < change else after) * float(rng.normal())
        out.append(({"a": a, "b": b}, f + noise, f))
    return out


def _small(**kw):
    return EDOEBE(families=[HilbertGP(20), RandomFourierFeatures(20, seed=1)], n_warmup=200,
                  n_samples=1, starts=(1.0,), seed=0, **kw)


def _distance(model, data, start):
    """The mean distance of the one-step-ahead predictions to the noiseless values from
    ``start`` on."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y, f in data:
            out.append(abs(f - model.predict_one(x)))
            model.learn_one(x, y)
    return float(np.mean(out[start:]))


def test_a_noise_level_that_rises_after_the_warm_up_is_followed_the_report():
    """The probe: the noise rose from 0.1 to 1 at sample 2,000, after ``EDOEBE()``'s warm-up:
    its members, their noise variance frozen at the window's, chased the noise (predictions
    0.60 from the noiseless function over samples 3,000-6,000, against 0.066 for a model warmed
    up on the noisy stream; river's HoeffdingAdaptiveTree 0.25). With noise levels
    ``(1, 10, 100)``: 0.073."""
    rise = _stream(1500, 200, 0.1, 1.0)
    fixed = _distance(_small(), rise, 700)
    levels = _distance(_small(noise_levels=(1.0, 10.0, 100.0)), rise, 700)
    noisy = _distance(_small(), _stream(1500, 0, 1.0, 1.0), 700)
    assert levels <= 1.3 * noisy < 0.5 * fixed


def test_noise_levels_are_twins_with_scaled_noise_and_the_static_ones_are_exact():
    """Each noise level's static member holds the batch posterior of its basis with its own
    noise variance (the fitted one times the level)."""
    rng = np.random.default_rng(3)
    families = [HilbertGP(12), BSpline(12)]
    model = EDOEBE(families=families, n_warmup=40, n_samples=1, starts=(1.0,), seed=0,
                   weight_floor=0.0, noise_levels=(1.0, 4.0), recalibrate=False)
    rows = []
    for _ in range(120):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        y = math.sin(x["a"]) + 0.5 * x["b"] + 0.2 * float(rng.normal())
        model.learn_one(x, y)
        rows.append((x, y))
    members = model.members
    assert len(members) == 2 * 2 * len(families)  # (dynamic and static) x 2 noise levels
    half = len(members) // 2
    for low, high in zip(members[:half], members[half:], strict=True):
        assert high.var_eps == 4.0 * low.var_eps and high.var_rw == low.var_rw
    std = model.standardizer_
    Z = std.x(np.array([[x["a"], x["b"]] for x, _ in rows]))
    Y = std.y(np.array([y for _, y in rows]))
    assert static_members_hold_the_batch_posterior(model, Z, Y) == 2 * len(families)


def test_blocks_equal_the_loop_with_noise_levels_and_one_level_is_the_model_without():
    data = _stream(700, 300, 0.1, 1.0)
    warm = _small(noise_levels=(1.0, 10.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y, _ in data[:200]:
            warm.learn_one(x, y)
    loop, block = copy.deepcopy(warm), copy.deepcopy(warm)
    expected = []
    for x, y, _ in data[200:]:
        expected.append(loop.predict_one(x, with_dist=True))
        loop.learn_one(x, y)
    got = block.predict_learn_many([x for x, _, _ in data[200:]], [y for _, y, _ in data[200:]],
                                   with_dist=True)
    assert [d.mu for d in got] == [d.mu for d in expected]
    assert pickle.dumps(block) == pickle.dumps(loop)
    # (1.0,) is the default's model, bit for bit
    a, b = _small(), _small(noise_levels=[1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y, _ in data[:300]:
            assert a.predict_one(x) == b.predict_one(x)
            a.learn_one(x, y)
            b.learn_one(x, y)
    np.testing.assert_array_equal(a._engine.state.C, b._engine.state.C)


def test_explicit_members_take_the_noise_levels_too():
    models = [DOBE(Linear(), var_eps=0.5), DOBE(RandomFourierFeatures(8, seed=3), var_eps=0.2)]
    model = EDOEBE(models=models, noise_levels=(1.0, 3.0), rw_variances=(1e-3,))
    model.learn_one({"a": 0.1}, 1.0)
    eps = [m.var_eps for m in model.members]
    assert eps == [0.5, 0.2, 0.5, 0.2, 1.5, 0.6000000000000001, 1.5, 0.6000000000000001]


@pytest.mark.parametrize("levels, exc", [((), TypeError), ("1", TypeError), (None, TypeError),
                                         ((0.0,), ValueError), ((1.0, math.inf), ValueError)])
def test_bad_noise_levels_are_refused_at_construction(levels, exc):
    with pytest.raises(exc, match="noise_levels"):
        EDOEBE(noise_levels=levels)
