"""The E-DOEBE's outlier gate: an isolated target far beyond the prediction is kept out of the
members and weights, exactly as if it had not come; a stream that moved is followed from its
second sample; blocks equal the loop bit for bit."""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from river_doebe import DOBE, EDOEBE
from river_doebe.basis import AdditivePolynomial, HilbertGP, Linear, RandomFourierFeatures
from river_doebe.engine import FilterError

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


def _stream(n=600, seed=0, spikes=(), shift_at=None, spike=1e6):
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        a, b = float(rng.uniform()), float(rng.uniform())
        y = math.sin(6.0 * a) + b + 0.1 * float(rng.normal())
        if shift_at is not None and t >= shift_at:
            y += 5.0
        if t in spikes:
            y = spike
        out.append(({"a": a, "b": b}, y))
    return out


_WARM = {}


def _warm(gate=8.0, recalibrate=False):
    """An E-DOEBE warmed up on the first 100 samples of :func:`_stream` (built once)."""
    key = (gate, recalibrate)
    if key not in _WARM:
        model = EDOEBE(families=[HilbertGP(20), RandomFourierFeatures(10, seed=1)],
                       n_warmup=100, n_samples=1, starts=(1.0,), seed=0, outlier_gate=gate,
                       recalibrate=recalibrate)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for x, y in _stream(100, seed=1):
                model.learn_one(x, y)
        assert model.is_warm
        _WARM[key] = model
    return copy.deepcopy(_WARM[key])


def _loop(model, data, with_dist=True):
    out = []
    for x, y in data:
        out.append(model.predict_one(x, with_dist=with_dist))
        model.learn_one(x, y)
    return out


def _same(got, expected):
    assert [d.mu for d in got] == [d.mu for d in expected]
    assert [d.sigma for d in got] == [d.sigma for d in expected]


def test_isolated_spikes_are_kept_out_exactly_the_report():
    """The probe: one target of 1e6 in a stream of unit scale gave ``EDOEBE()`` an MAE of 540
    over the 1,500 samples after the 500 that followed it (0.08 without it). With the gate the
    model is, bit for bit, the model of the stream without the spikes."""
    data = _stream(spikes={20, 150, 151 + 60})
    gated = _warm()
    got = _loop(gated, data)
    reference = _warm(gate=None)
    kept = [t for t in range(len(data)) if t not in {20, 150, 211}]
    expected = _loop(reference, [data[t] for t in kept])
    _same([got[t] for t in kept], expected)
    assert gated.n_skipped_ == 3 and reference.n_skipped_ == 0
    assert gated.n_samples_seen == reference.n_samples_seen + 3
    # a recalibrated model's map learns the spikes too (they are scored), and its point
    # predictions are the gated mixture's means
    recal = _warm(recalibrate=True)
    assert _loop(recal, data, with_dist=False) == [d.mu for d in got]
    assert recal.recalibration_.n_updates_ == _warm(recalibrate=True).recalibration_.n_updates_ \
        + len(data)


def test_a_stream_that_moved_is_followed_from_its_second_sample():
    """The level moves up by 50 noise deviations: its first sample is kept out, the next ones
    learnt (and as the model catches up, an isolated one beyond the gate may be kept out
    again); the model is the model of the stream without the samples it kept out."""
    data = _stream(shift_at=300)
    gated = _warm()
    got, out = [], []
    for t, (x, y) in enumerate(data):
        got.append(gated.predict_one(x, with_dist=True))
        before = gated.n_skipped_
        gated.learn_one(x, y)
        if gated.n_skipped_ > before:
            out.append(t)
    assert out[0] == 300 and 301 not in out and len(out) <= 3
    reference = _warm(gate=None)
    kept = [t for t in range(len(data)) if t not in out]
    _same([got[t] for t in kept], _loop(reference, [data[t] for t in kept]))
    assert np.mean([abs(got[t].mu - data[t][1]) for t in range(400, 600)]) < 0.2


@pytest.mark.parametrize("frame", [False, True], ids=["dicts", "DataFrame"])
@pytest.mark.parametrize("recalibrate", [False, True], ids=["mixture", "recalibrated"])
def test_blocks_with_kept_out_rows_equal_the_loop(frame, recalibrate, block_rent):
    """Spikes at the first and last rows of a block (predict_learn_many cuts it into blocks
    of 256), in pairs (the second learnt), and a move of the level."""
    data = _stream(n=700, spikes={0, 255, 256, 400, 401, 650}, shift_at=500)
    loop, block = _warm(recalibrate=recalibrate), _warm(recalibrate=recalibrate)
    expected = _loop(loop, data)
    xs, ys = [x for x, _ in data], [y for _, y in data]
    got = block.predict_learn_many(pd.DataFrame(xs) if frame else xs, ys, with_dist=True)
    _same(got, expected)
    assert block.n_skipped_ == loop.n_skipped_ >= 5
    assert pickle.dumps(block) == pickle.dumps(loop)


@hypothesis.settings(max_examples=20, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(st.sets(st.integers(0, 299), max_size=12), st.integers(1, 300),
                  st.sampled_from((1e6, -1e3, 30.0)))
def test_blocks_equal_the_loop_wherever_the_extremes_fall(spikes, block_size, spike):
    data = _stream(n=300, spikes=spikes, spike=spike)
    loop, block = _warm(), _warm()
    expected = _loop(loop, data, with_dist=False)
    got = []
    for i in range(0, len(data), block_size):
        rows = data[i:i + block_size]
        got += block.predict_learn_many([x for x, _ in rows], [y for _, y in rows])
    assert got == expected
    assert block.n_skipped_ == loop.n_skipped_
    assert pickle.dumps(block) == pickle.dumps(loop)


def test_a_target_the_members_would_refuse_is_kept_out_in_a_block_as_one_by_one(block_rent):
    """A target of 1e300 makes a mean step overflow: refused without the gate, kept out with it
    (the gate is asked before the update), in the block path as in the loop."""
    data = _stream(n=300)
    data[120] = (data[120][0], 1e300)
    ungated = _warm(gate=None)
    with pytest.raises(FilterError, match="row 120"):
        ungated.predict_learn_many([x for x, _ in data], [y for _, y in data])
    loop, block = _warm(), _warm()
    expected = _loop(loop, data, with_dist=False)
    got = block.predict_learn_many([x for x, _ in data], [y for _, y in data])
    assert got == expected and block.n_skipped_ == loop.n_skipped_ == 1
    assert pickle.dumps(block) == pickle.dumps(loop)


def test_a_row_the_members_refuse_stops_a_gated_batch_as_before(block_rent):
    """An input whose features overflow (the cube of 1e154) is refused whatever the gate: the
    batch stops at that row, with the rows before it learnt as one by one."""
    models = [DOBE(AdditivePolynomial(3)), DOBE(Linear(), var_eps=0.5)]
    data = _stream(n=200)
    xs, ys = [x for x, _ in data], [y for _, y in data]
    xs[150] = {"a": 1e154, "b": 0.0}
    ys[40] = 1e6  # (a kept-out row before it)
    loop = EDOEBE(models=models, outlier_gate=8.0, recalibrate=False)
    block = copy.deepcopy(loop)
    expected = _loop(loop, list(zip(xs[:150], ys[:150], strict=True)), with_dist=False)
    with pytest.raises(FilterError, match="row 150"):
        block.predict_learn_many(xs, ys)
    assert block.n_skipped_ == loop.n_skipped_ == 1
    assert pickle.dumps(block) == pickle.dumps(loop)
    assert [block.predict_one(x) for x in xs[151:160]] == [loop.predict_one(x)
                                                           for x in xs[151:160]]
    assert len(expected) == 150


def test_the_gate_s_run_is_part_of_the_state():
    """Pickled right after a spike it kept out, a model learns the next extreme (the second in
    a row) as the original does."""
    data = _stream(n=200, spikes={100, 101})
    model = _warm()
    _loop(model, data[:101])
    assert model.n_skipped_ == 1
    restored = pickle.loads(pickle.dumps(model))
    a, b = _loop(model, data[101:]), _loop(restored, data[101:])
    _same(a, b)
    assert model.n_skipped_ == restored.n_skipped_


@pytest.mark.parametrize("gate", [0.0, -1.0, math.inf, math.nan, "8", True])
def test_a_bad_gate_is_refused_at_construction(gate):
    with pytest.raises(ValueError, match="outlier_gate"):
        EDOEBE(outlier_gate=gate)


def test_a_kept_out_refused_row_after_members_died_in_a_block_with_distributions():
    """Members die (a high weight floor) before a row the members refuse and the gate keeps
    out: the block's distributions still have one column per member of the stack they ran on,
    and equal the loop's."""
    models = [DOBE(Linear(), var_eps=0.5), DOBE(RandomFourierFeatures(8, seed=3), var_eps=0.1),
              DOBE(HilbertGP(10), var_eps=0.05), DOBE(RandomFourierFeatures(8, seed=4))]
    data = _stream(n=260)
    data[200] = (data[200][0], 1.7e308)  # (its gain overflows: the members refuse it)
    make = lambda: EDOEBE(models=models, outlier_gate=8.0, recalibrate=False,  # noqa: E731
                          weight_floor=1e-3, delta=0.0)
    loop, block = make(), make()
    expected = _loop(loop, data)
    got = block.predict_learn_many([x for x, _ in data], [y for _, y in data], with_dist=True)
    _same(got, expected)
    assert block.n_skipped_ == loop.n_skipped_ == 1
    assert sum(w == 0.0 for w in loop.weights) >= 1  # (members died before row 200)
    assert pickle.dumps(block) == pickle.dumps(loop)
