"""Property tests over sparse river dicts (issue 18): keys missing at random, keys first seen
late, empty samples, and values of every NumPy scalar type.

- A static learner of any basis, fed a sparse stream, holds the batch posterior of the design
  with each absent key at 0 (its schema grew exactly as keys arrived).
- The block path equals the per-sample loop bit for bit on such streams, and predictions change
  nothing.
- A NumPy scalar is the number it holds (a ``bool_`` is 0/1): a model fed them is the model fed
  their ``float`` values, bit for bit.
- After its warm-up an E-DOEBE gives finite predictions for any sparse sample, puts a missing
  dense key at its mean (exactly), learns keys first seen late with the scale of their first
  non-zero value, and its blocks equal its loop; an input constant over its warm-up joins at
  its first other value, scaled by the difference, its blocks equal to its loop.
"""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

from river_doebe import DOBE, DOEBE, EDOEBE
from river_doebe.basis import (
    AdditivePolynomial,
    BSpline,
    HilbertGP,
    Linear,
    RandomFourierFeatures,
)

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

KEYS = ("a", "b", "c", "d")

#: what a river user's dict may hold: Python and NumPy numbers of every width, bools
_CONVERTERS = (
    float,
    lambda v: int(round(v)),
    lambda v: v > 0,
    np.float64,
    np.float32,
    np.float16,
    lambda v: np.int8(round(v)),
    lambda v: np.uint8(abs(round(v))),
    lambda v: np.int16(round(v)),
    lambda v: np.uint32(abs(round(v))),
    lambda v: np.int64(round(v)),
    lambda v: np.uint64(abs(round(v))),
    lambda v: np.bool_(v > 0),
)

_value = st.builds(lambda v, i: _CONVERTERS[i](v), st.floats(-3.0, 3.0),
                   st.integers(0, len(_CONVERTERS) - 1))


@st.composite
def sparse_streams(draw, keys=KEYS, min_size=1, max_size=25, late_from=0):
    """``[(x, y), ...]``: each key first seen at a random sample (perhaps never), then present in
    each sample with its own probability; samples may be empty."""
    n = draw(st.integers(min_size, max_size))
    start = {k: draw(st.integers(late_from, n + 2)) for k in keys}
    presence = {k: draw(st.sampled_from((0.3, 0.8, 1.0))) for k in keys}
    rows = []
    for t in range(n):
        x = {}
        for k in keys:
            if t >= start[k] and draw(st.floats(0.0, 1.0)) < presence[k]:
                x[k] = draw(_value)
        rows.append((x, draw(st.floats(-3.0, 3.0))))
    return rows


def _plain(x: dict) -> dict:
    return {k: float(v) for k, v in x.items()}


_BASES = (
    lambda: Linear(),
    lambda: AdditivePolynomial(2),
    lambda: RandomFourierFeatures(4, lengthscale=1.5, seed=1),
    lambda: RandomFourierFeatures(4, kernel="matern32", seed=2),
    lambda: HilbertGP(8, lengthscale=0.9),
    lambda: BSpline(16, degree=1, penalty_order=1),
)

_SETTINGS = hypothesis.settings(max_examples=40, deadline=None,
                                suppress_health_check=[hypothesis.HealthCheck.too_slow])


@_SETTINGS
@hypothesis.given(sparse_streams(), st.integers(0, len(_BASES) - 1))
def test_a_static_learner_holds_the_batch_posterior_of_the_sparse_design(stream, which):
    model = DOBE(_BASES[which](), var_theta=1.0, var_eps=0.25)
    for x, y in stream:
        assert math.isfinite(model.predict_one(x))
        model.learn_one(x, y)
    names = model.feature_names_in_
    assert set(names) == set().union(*(x.keys() for x, _ in stream))
    X = np.array([[float(x.get(k, 0.0)) for k in names] for x, _ in stream]).reshape(
        len(stream), len(names))
    y = np.array([t for _, t in stream])
    Phi = model.basis_.featurize(X)
    A = Phi.T @ Phi / 0.25 + np.eye(Phi.shape[1])
    mu, Sigma = model.posterior
    np.testing.assert_allclose(mu, np.linalg.solve(A, Phi.T @ y / 0.25), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(A @ Sigma, np.eye(Phi.shape[1]), atol=1e-8)


def _ensemble():
    return DOEBE([DOBE(Linear(), var_eps=0.5),
                  DOBE(RandomFourierFeatures(4, seed=3), var_rw=1e-3),
                  DOBE(HilbertGP(8), var_rw=1e-3)])


@_SETTINGS
@hypothesis.given(sparse_streams(min_size=2, max_size=40))
def test_blocks_equal_the_loop_and_predictions_change_nothing(stream):
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    loop, block = _ensemble(), _ensemble()
    expected = []
    for x, y in stream:
        before = pickle.dumps(loop)
        expected.append(loop.predict_one(x, with_dist=True))
        loop.predict_one({**x, "unseen": 1.0})
        assert pickle.dumps(loop) == before
        loop.learn_one(x, y)
    got = block.predict_learn_many(xs, ys, with_dist=True)
    assert [d.mu for d in got] == [d.mu for d in expected]
    assert [d.sigma for d in got] == [d.sigma for d in expected]
    assert pickle.dumps(block) == pickle.dumps(loop)


@_SETTINGS
@hypothesis.given(sparse_streams())
def test_numpy_scalars_are_the_numbers_they_hold(stream):
    for make in (lambda: DOBE(HilbertGP(8)), lambda: EDOEBE(n_warmup=100)):
        numpy_fed, float_fed = make(), make()
        for x, y in stream:
            assert numpy_fed.predict_one(x) == float_fed.predict_one(_plain(x))
            numpy_fed.learn_one(x, y)
            float_fed.learn_one(_plain(x), y)
        assert pickle.dumps(numpy_fed) == pickle.dumps(float_fed)


# ------------------------------------------------------------------ the E-DOEBE after its warm-up
_WARM = {}


def _warm_edoebe(stuck: bool = False):
    """An E-DOEBE warmed up on ``a`` and ``b`` (present in every sample), built once: its own
    mixture (``recalibrate=False``), whose mean is the point prediction. ``stuck``: with two
    more inputs constant over its window, ``s`` (a sensor stuck at 2) and ``f`` (a flag never
    raised, 0)."""
    key = "stuck" if stuck else "model"
    if key not in _WARM:
        rng = np.random.default_rng(0)
        model = EDOEBE(families=[HilbertGP(12), RandomFourierFeatures(8, seed=1)], n_warmup=30,
                       n_samples=1, starts=(1.0,), seed=0, recalibrate=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore" if stuck else "error", RuntimeWarning)
            for _ in range(30):
                x = {"a": 10.0 + float(rng.normal()), "b": float(rng.normal())}
                model.learn_one({**x, "s": 2.0, "f": 0.0} if stuck else x,
                                math.sin(x["a"]) + x["b"])
        assert model.is_warm
        assert model.standardizer_.idle.tolist() == ([2, 3] if stuck else [])
        _WARM[key] = model
    return copy.deepcopy(_WARM[key])


@hypothesis.settings(max_examples=25, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(sparse_streams(keys=("a", "b", "c", "d"), min_size=1, max_size=30))
def test_edoebe_after_its_warm_up_takes_any_sparse_sample(stream):
    loop, block = _warm_edoebe(), _warm_edoebe()
    first_nonzero = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no key is ignored
        expected = []
        for x, y in stream:
            dist = loop.predict_one(x, with_dist=True)
            assert math.isfinite(dist.mu) and dist.sigma > 0
            std = loop.standardizer_
            for k in ("a", "b"):
                if k not in x:  # a dense key that is missing: at its mean
                    mean = std.x_mean[loop.feature_names_in_.index(k)]
                    assert loop.predict_one({**x, k: mean}) == dist.mu
            expected.append(dist)
            loop.learn_one(x, y)
            for k in ("c", "d"):
                if k in x and float(x[k]) != 0.0:
                    first_nonzero.setdefault(k, abs(float(x[k])))
        got = block.predict_learn_many([x for x, _ in stream], [y for _, y in stream],
                                       with_dist=True)
    assert [d.mu for d in got] == [d.mu for d in expected]
    names = loop.feature_names_in_
    assert names[:2] == ("a", "b")
    scales = dict(zip(names, loop.standardizer_.x_scale.tolist(), strict=True))
    for k, value in first_nonzero.items():
        assert scales[k] == value
    np.testing.assert_array_equal(block.standardizer_.x_scale, loop.standardizer_.x_scale)


@hypothesis.settings(max_examples=25, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(sparse_streams(keys=("a", "b", "s", "f"), min_size=1, max_size=30))
def test_inputs_constant_over_the_warm_up_join_at_their_first_other_value(stream):
    loop, block = _warm_edoebe(stuck=True), _warm_edoebe(stuck=True)
    first_change = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = []
        for x, y in stream:
            dist = loop.predict_one(x, with_dist=True)
            assert math.isfinite(dist.mu) and dist.sigma > 0
            expected.append(dist)
            loop.learn_one(x, y)
            for k, c in (("s", 2.0), ("f", 0.0)):
                if k in x and float(x[k]) != c:
                    first_change.setdefault(k, abs(float(x[k]) - c))
        got = block.predict_learn_many([x for x, _ in stream], [y for _, y in stream],
                                       with_dist=True)
    assert [d.mu for d in got] == [d.mu for d in expected]
    assert [d.sigma for d in got] == [d.sigma for d in expected]
    std = loop.standardizer_
    names = loop.feature_names_in_
    joined = [names[j] for j in std.cols.tolist()[2:]]
    assert set(joined) == set(first_change)
    for k, scale in zip(joined, std.x_scale[2:].tolist(), strict=True):
        assert scale == first_change[k]
    np.testing.assert_array_equal(block.standardizer_.cols, std.cols)
    np.testing.assert_array_equal(block.standardizer_.x_scale, std.x_scale)


def test_a_late_input_first_seen_subnormal_then_at_one_is_clipped_without_a_warning():
    """Found by the property test above: a late input whose first non-zero value is subnormal
    freezes that magnitude as its scale, and a later 1.0 divides to beyond the float range; the
    standardisation's clip bounds it (no overflow warning, finite predictions, loop == block)."""
    stream = [({"a": 0.0, "c": 2.2250738585e-313}, 0.0), ({"a": 0.0, "c": 1.0}, 0.0),
              ({"a": 0.5, "c": 1.0}, 0.1)]
    loop, block = _warm_edoebe(), _warm_edoebe()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = []
        for x, y in stream:
            dist = loop.predict_one(x, with_dist=True)
            assert math.isfinite(dist.mu) and math.isfinite(dist.sigma) and dist.sigma > 0
            expected.append(dist.mu)
            loop.learn_one(x, y)
        got = block.predict_learn_many([x for x, _ in stream], [y for _, y in stream])
    assert got == expected
