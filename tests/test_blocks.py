"""The block path and the threads: the same numbers as the per-sample loop, bit for bit."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import dicts

import river_doebe.engine.threads as threads
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
from river_doebe.basis import HilbertGP, Linear, RandomFourierFeatures, RBFNetwork
from river_doebe.engine import FilterError, num_threads


def _rff(k, n=8):
    return RandomFourierFeatures(n, lengthscale=1.5, seed=k)


def _stream(n=600, seed=0):
    """A drifting nonlinear regression (the sign flips half-way)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)
    y[n // 2 :] *= -1
    return X, y


REGRESSORS = {
    "DOBE-dynamic": lambda: DOBE(_rff(0), var_eps=0.1, var_rw=1e-3),
    "DOBE-static": lambda: DOBE(_rff(0), var_eps=0.1),
    "DOEBE-floor": lambda: DOEBE(
        [DOBE(_rff(1), var_eps=0.1), DOBE(_rff(2), var_eps=0.5, var_rw=1e-2),
         DOBE(Linear(), var_eps=2.0)], weight_floor=1e-16,
    ),
    "SDOEBE": lambda: SDOEBE(
        [DOBE(_rff(1), var_eps=0.1), DOBE(Linear(), var_eps=0.3, var_rw=1e-2)],
        transition=[[0.95, 0.05], [0.05, 0.95]],
    ),
    "EDOEBE-models": lambda: EDOEBE(
        models=[DOBE(_rff(3), var_eps=0.1), DOBE(HilbertGP(12), var_eps=0.1)],
        rw_variances=(1e-3,),
    ),
    "EDOEBE-warm-up": lambda: EDOEBE(families=[_rff(4), HilbertGP(12)], n_warmup=100,
                                     n_samples=2, starts=(1.0,), seed=0),
    "EDOEBE-stacking": lambda: EDOEBE(families=[_rff(4), HilbertGP(12)], n_warmup=100,
                                      n_samples=2, starts=(1.0,), seed=0,
                                      weighting="stacking", stacking_rate=0.2, share=0.01),
}

CLASSIFIERS = {
    "DOBEClassifier": lambda: DOBEClassifier(_rff(0), var_rw=1e-3),
    "DOEBEClassifier": lambda: DOEBEClassifier(
        [DOBEClassifier(_rff(1)), DOBEClassifier(Linear(), var_rw=1e-2)], weight_floor=1e-16
    ),
    "SDOEBEClassifier": lambda: SDOEBEClassifier(
        [DOBEClassifier(_rff(1)), DOBEClassifier(Linear(), var_rw=1e-2)],
        transition=[[0.9, 0.1], [0.1, 0.9]],
    ),
    "EDOEBEClassifier-warm-up": lambda: EDOEBEClassifier(
        families=[_rff(4)], n_warmup=100, n_samples=2, starts=(1.0,), seed=0
    ),
    "DOEBEClassifier-stacking": lambda: DOEBEClassifier(
        [DOBEClassifier(_rff(1)), DOBEClassifier(Linear(), var_rw=1e-2)],
        weighting="stacking", stacking_rate=0.3,
    ),
}


def _one_by_one(model, xs, ys, with_dist):
    out = []
    for x, t in zip(xs, ys):
        if hasattr(model, "predict_proba_one"):
            out.append(model.predict_proba_one(x))
        else:
            out.append(model.predict_one(x, with_dist=with_dist))
        model.learn_one(x, t)
    return out


def _same(a, b):
    if hasattr(a, "knots_u"):  # recalibrated (EDOEBE()): the same map of the same mixture
        return (type(a) is type(b) and np.array_equal(a.knots_u, b.knots_u)
                and np.array_equal(a.knots_p, b.knots_p) and _same(a.base, b.base))
    if hasattr(a, "mu"):
        return (a.mu, a.sigma) == (b.mu, b.sigma) and type(a) is type(b) and (
            not hasattr(a, "weights") or (np.array_equal(a.weights, b.weights)
                                          and np.array_equal(a.means, b.means)
                                          and np.array_equal(a.variances, b.variances))
        )
    return a == b


def _targets(name, y):
    return [bool(t > 0) for t in y] if "Classifier" in name else y.tolist()


@pytest.mark.parametrize("name", [*REGRESSORS, *CLASSIFIERS])
@pytest.mark.parametrize("frame", [False, True], ids=["dicts", "frame"])
def test_predict_learn_many_is_predict_then_learn_row_by_row(name, frame, block_rent):
    make = {**REGRESSORS, **CLASSIFIERS}[name]
    X, y = _stream()
    xs, ys = dicts(X, ["a", "b", "c"]), _targets(name, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a, b = make(), make()
        expected = _one_by_one(a, xs, ys, with_dist=True)
        batch = pd.DataFrame(xs) if frame else xs
        got = b.predict_learn_many(batch, ys, with_dist=True)
    assert all(_same(p, q) for p, q in zip(expected, got, strict=True))
    assert pickle.dumps(a) == pickle.dumps(b)  # weights, log evidence, every member's state
    assert a.n_samples_seen == b.n_samples_seen == len(ys)


@pytest.mark.parametrize("name", ["DOEBE-floor", "EDOEBE-warm-up", "DOEBEClassifier"])
def test_learn_many_ends_as_learn_one_row_by_row(name, block_rent):
    make = {**REGRESSORS, **CLASSIFIERS}[name]
    X, y = _stream(seed=1)
    xs, ys = dicts(X, ["a", "b", "c"]), _targets(name, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a, b = make(), make()
        for x, t in zip(xs, ys):
            a.learn_one(x, t)
        b.learn_many(pd.DataFrame(xs), ys)
    assert pickle.dumps(a) == pickle.dumps(b)


def test_new_features_and_labels_in_the_middle_of_a_batch():
    """Rows that grow the schema or bring a second label take the per-sample path, in order."""
    X, y = _stream(n=300, seed=2)
    xs = dicts(X, ["a", "b", "c"])
    for i in range(100):  # 'c' first appears at row 100, 'd' at row 200
        del xs[i]["c"]
    for i in range(200, 300):
        xs[i]["d"] = float(X[i, 0] * X[i, 1])
    labels = ["no"] * 60 + ["yes" if t > 0 else "no" for t in y[60:]]
    for make, targets in [(lambda: DOEBE([DOBE(Linear()), DOBE(_rff(0), var_rw=1e-3)]),
                           y.tolist()),
                          (lambda: DOEBEClassifier([DOBEClassifier(), DOBEClassifier(_rff(1))]),
                           labels)]:
        a, b = make(), make()
        expected = _one_by_one(a, xs, targets, with_dist=False)
        assert b.predict_learn_many(xs, targets) == expected
        assert pickle.dumps(a) == pickle.dumps(b)
        assert b.feature_names_in_ == ("a", "b", "c", "d")


def test_a_basis_that_learns_from_the_samples_takes_the_per_sample_path():
    X, y = _stream(n=200, seed=3)
    xs = dicts(X, ["a", "b", "c"])
    a, b = (DOBE(RBFNetwork(20, lengthscale=2.0)) for _ in range(2))  # centres placed online
    assert _one_by_one(a, xs, y, False) == b.predict_learn_many(xs, y)
    assert pickle.dumps(a) == pickle.dumps(b)



@pytest.mark.parametrize("name", [*REGRESSORS, *CLASSIFIERS])
@pytest.mark.parametrize("learnt", [0, 40], ids=["fresh", "learnt"])
def test_an_empty_batch_changes_nothing(name, learnt):
    """The report: a zero-row DataFrame (a mini-batch a filter emptied) learnt nothing but fixed
    the input schema to its columns, so every later prediction differed from an untouched twin
    (and after some learning its new column joined the schema). An empty batch, in any form
    and through every batch method, leaves the model byte for byte as it was."""
    make = {**REGRESSORS, **CLASSIFIERS}[name]
    classifier = name in CLASSIFIERS
    X, y = _stream(n=200, seed=6)
    frame = pd.DataFrame(X[:, :2], columns=["a", "b"])
    ys = pd.Series(_targets(name, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        model, twin = make(), make()
        for m in (model, twin):
            if learnt:
                m.learn_many(frame[["a"]].iloc[:learnt], ys.iloc[:learnt])
    before = pickle.dumps(twin)
    empty = frame[["b"]].iloc[:0]
    calls = [
        lambda: model.learn_many(empty, ys.iloc[:0]),
        lambda: model.learn_many(frame.iloc[:0], []),
        lambda: model.learn_many(pd.DataFrame(columns=["c"]), []),
        lambda: model.learn_many([], []),
        lambda: model.predict_learn_many(empty, ys.iloc[:0]),
        lambda: model.predict_learn_many([], [], with_dist=True),
        lambda: model.predict_many(empty),
    ]
    if classifier:
        calls.append(lambda: model.predict_proba_many(empty))
    else:
        calls.append(lambda: model.predict_learn_many(empty, [], with_dist=True))
    for call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no new feature is reported as ignored either)
            out = call()
        assert out is None or len(out) == 0
        assert pickle.dumps(model) == before
    assert model.feature_names_in_ == twin.feature_names_in_
    rest = slice(learnt, learnt + 120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        model.learn_many(frame.iloc[rest], ys.iloc[rest])
        twin.learn_many(frame.iloc[rest], ys.iloc[rest])
    later = frame.iloc[160:]
    if classifier:
        pd.testing.assert_frame_equal(model.predict_proba_many(later),
                                      twin.predict_proba_many(later))
    else:
        pd.testing.assert_series_equal(model.predict_many(later), twin.predict_many(later))
    assert pickle.dumps(model) == pickle.dumps(twin)


def test_a_bad_row_is_refused_before_anything_changes():
    X, y = _stream(n=100, seed=4)
    xs = dicts(X, ["a", "b", "c"])
    model = DOEBE([DOBE(Linear()), DOBE(_rff(0))])
    model.learn_many(xs[:50], y[:50])
    before = pickle.dumps(model)
    bad = [dict(x) for x in xs[50:]]
    bad[30]["b"] = float("nan")
    with pytest.raises(ValueError, match="'b'"):
        model.predict_learn_many(bad, y[50:])
    with pytest.raises(ValueError, match="row 3"):
        model.predict_learn_many(xs[50:], [*y[50:53], math.inf, *y[54:]])
    with pytest.raises(TypeError, match="dict"):
        model.learn_many([*xs[50:60], [1.0, 2.0]], y[50:61])
    huge = [dict(x) for x in xs[50:]]
    huge[40]["c"] = 10**400  # an int beyond the float range, alone in its row's sum
    huge[41] = {"a": 10**400, "b": -(10**400), "c": 0}
    for rows in (huge, huge[41:]):
        with pytest.raises(ValueError, match="'[ac]' is 1000.*too large for a float"):
            model.predict_learn_many(rows, y[100 - len(rows):])
    assert pickle.dumps(model) == before


def test_a_row_the_filters_refuse_stops_the_batch_with_the_rows_before_it_learnt(block_rent):
    from river_doebe.basis import AdditivePolynomial

    X, y = _stream(n=80, seed=5)
    xs = dicts(X, ["a", "b", "c"])
    xs[60] = {"a": 1e154, "b": 0.0, "c": 0.0}  # finite, but its cube is not
    make = lambda: DOEBE([DOBE(AdditivePolynomial(3)), DOBE(Linear(), var_rw=1e-3)])  # noqa: E731
    a, b = make(), make()
    expected = _one_by_one(a, xs[:60], y[:60], False)
    # the row named as learn_one names a sample: its largest input and its target
    with pytest.raises(FilterError, match=r"row 60 cannot be (learnt|taken) safely \(.*\).*"
                       r"largest input is 'a' = 1e\+154 and its target is .*the rows before "
                       r"it were learnt") as refused:
        b.predict_learn_many(xs, y)
    assert refused.value.row == 60
    assert pickle.dumps(a) == pickle.dumps(b)
    assert [b.predict_one(x) for x in xs[61:]] == [a.predict_one(x) for x in xs[61:]]
    assert len(expected) == 60


def test_progressive_scores_names_a_refused_sample_by_its_place_in_the_stream():
    from river import metrics as river_metrics

    from river_doebe.basis import AdditivePolynomial
    from river_doebe.evaluate import progressive_scores

    X, y = _stream(n=400, seed=5)
    data = list(zip(dicts(X, ["a", "b", "c"]), y.tolist(), strict=True))
    data[300] = ({"a": 1e154, "b": 0.0, "c": 0.0}, 0.5)
    with pytest.raises(FilterError, match=r"^sample 300 of the stream \(counting from 0\) "
                       r"cannot be .* 'a' = 1e\+154 and its target is 0.5"):
        progressive_scores(data, DOBE(AdditivePolynomial(3)), river_metrics.MAE(),
                           block_size=128)


def test_the_first_blocks_rent_the_kernel_then_buy_it(monkeypatch):
    """Until the rows' time pays for the kernel's compile the rows of a block go the
    per-sample way; then the kernel takes the rest of the block, and the blocks after it."""
    from river_doebe.engine import Engine, core

    rented = core._BLOCKS
    monkeypatch.setattr(rented, "_bought", {"gaussian_block": False})
    monkeypatch.setattr(rented, "paid", 0.0)
    monkeypatch.setattr(rented, "rent", math.inf)
    kernel_rows = []
    member_pass = Engine._member_pass

    def counted(self, Phi3, Y, parallel):
        kernel_rows.append(Phi3.shape[1])
        return member_pass(self, Phi3, Y, parallel)

    monkeypatch.setattr(Engine, "_member_pass", counted)
    X, y = _stream(n=300, seed=7)
    xs = dicts(X, ["a", "b", "c"])
    loop, block = REGRESSORS["DOEBE-floor"](), REGRESSORS["DOEBE-floor"]()
    expected = _one_by_one(loop, xs, y, with_dist=False)
    got = block.predict_learn_many(xs[:100], y[:100])
    assert kernel_rows == [] and rented.paid > 0.0
    rented.rent = rented.paid + 1e-12  # the next row's time pays the rest
    got += block.predict_learn_many(xs[100:], y[100:])
    assert sum(kernel_rows) == 199
    assert got == expected and pickle.dumps(block) == pickle.dumps(loop)


# ------------------------------------------------------------------ threads
@pytest.fixture
def parallel_always(monkeypatch):
    """Every stack counts as large: the parallel kernels run even on these small ensembles."""
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(threads, "PARALLEL_MIN_MEMBERS", 0)


@pytest.mark.parametrize("name", ["DOEBE-floor", "EDOEBE-models", "DOEBEClassifier"])
def test_the_numbers_do_not_depend_on_the_threads(name, parallel_always):
    make = {**REGRESSORS, **CLASSIFIERS}[name]
    X, y = _stream(n=400, seed=6)
    xs, ys = dicts(X, ["a", "b", "c"]), _targets(name, y)
    results = []
    for n_threads in (1, 2, None):
        with num_threads(n_threads):
            per_sample = make()
            out = _one_by_one(per_sample, xs, ys, with_dist=False)
            blocks = make()
            out_b = blocks.predict_learn_many(xs, ys)
        results.append((out, pickle.dumps(per_sample), out_b, pickle.dumps(blocks)))
    first = results[0]
    for r in results:
        assert r[0] == first[0] == r[2] and r[1] == first[1] == r[3]


def test_the_thread_setting_is_validated_and_scoped():
    with pytest.raises(ValueError, match="threads"):
        threads.set_num_threads(0)
    before = threads.get_num_threads()
    with num_threads(1):
        assert threads.get_num_threads() == 1
    assert threads.get_num_threads() == before


@pytest.mark.skipif(threads.get_num_threads() < 2, reason="one thread only on this machine")
def test_who_runs_on_the_threads():
    big, members = threads.PARALLEL_MIN_WORK, threads.PARALLEL_MIN_MEMBERS
    with num_threads(None):
        assert not threads.use_threads(10**9, 1)  # a single learner never
        assert not threads.use_threads(10**9, 1, rows=256)
        assert not threads.use_threads(big - 1, members)  # a small stack, one sample at a time
        assert not threads.use_threads(big, members - 1)
        assert threads.use_threads(big, members)
        assert threads.use_threads(100, 2, rows=256)  # a block: from two members on
    with num_threads(1):
        assert not threads.use_threads(10**9, 100)
        assert not threads.use_threads(10**9, 100, rows=256)



@pytest.mark.parametrize("n_threads", [2, 3, 4])
def test_each_thread_gets_its_share_of_every_kind_of_member(n_threads):
    # an E-DOEBE's stack: static members first, then their dynamic twins, and a family of
    # another size; Numba hands each thread one contiguous run of the order
    static = np.array([True] * 30 + [False] * 30 + [True] * 7 + [False] * 7)
    F = np.array([100] * 60 + [21] * 14)
    order = threads.balanced_order(static, F)
    assert sorted(order.tolist()) == list(range(len(F)))
    for run in np.array_split(order, n_threads):
        for kind in ((True, 100), (False, 100), (True, 21), (False, 21)):
            total = int(np.sum((static == kind[0]) & (F == kind[1])))
            here = int(np.sum((static[run] == kind[0]) & (F[run] == kind[1])))
            assert abs(here - total / n_threads) <= 1

# ------------------------------------------------------------------ dead members
def test_dead_members_leave_the_stack_and_change_nothing(monkeypatch):
    """A member that can never carry weight again is removed; the same model that keeps every
    member (removal switched off) predicts the same, bit for bit."""
    X, y = _stream(n=500, seed=7)
    xs = dicts(X, ["a", "b", "c"])
    make = lambda: DOEBE(  # noqa: E731
        [DOBE(_rff(1), var_eps=0.1), DOBE(Linear(), var_eps=5.0), DOBE(_rff(2), var_eps=0.05)],
        weight_floor=1e-16,
    )
    pruned = make()
    preds = _one_by_one(pruned, xs, y, False)
    from river_doebe.engine import Engine

    monkeypatch.setattr(Engine, "_bury", lambda self: None)
    kept = make()
    assert _one_by_one(kept, xs, y, False) == preds
    w = pruned.weights
    assert w[1] == 0.0 and len(w) == len(pruned.members) == 3
    np.testing.assert_array_equal(w, kept.weights)
    assert pruned._engine.M < 3  # the dead member's state is gone
    means, _, _ = pruned.member_predictions(xs[0])
    assert math.isnan(means[1])
    with pytest.raises(ValueError, match="dead"):
        pruned.member_posterior(1)
    assert len(pickle.dumps(pruned)) < len(pickle.dumps(kept))


def test_a_switched_member_that_lost_its_weight_keeps_learning_while_its_twin_lives():
    """Under switching a member whose weight fell under the floor gets weight again from its
    twin at the next step: it is filtered all along, so that it comes back up to date."""
    X, y = _stream(n=400, seed=8)
    xs = dicts(X, ["a", "b", "c"])
    model = EDOEBE(models=[DOBE(_rff(1), var_eps=0.05)], rw_variances=(1e-3,),
                   weight_floor=0.4)
    for x, t in zip(xs, y):
        model.learn_one(x, t)
        assert (model.weights > 0).sum() >= 1
    assert model._engine.M == 2  # neither twin died: each can get weight from the other


def test_a_pickle_stores_each_covariance_once_and_loads_it_exactly():
    # a static member's square root is triangular and a dynamic member's Sigma symmetric: the
    # pickle keeps one triangle of each and the loaded model goes on bit for bit
    X, y = _stream(n=300, seed=3)
    xs = dicts(X, ["a", "b", "c"])
    model = SDOEBE([DOBE(_rff(1, n=40)), DOBE(_rff(2, n=40), var_rw=1e-3)],
                   transition=[[0.9, 0.1], [0.1, 0.9]])
    _one_by_one(model, xs[:200], y[:200], False)
    engine = model._engine
    full = engine._flushed()[1]
    blob = pickle.dumps(model)
    assert len(blob) < 0.6 * full.nbytes + len(pickle.dumps(engine.members))
    copy_ = pickle.loads(blob)
    np.testing.assert_array_equal(copy_._engine.state.C, full)
    after = zip(_one_by_one(copy_, xs[200:], y[200:], True),
                _one_by_one(model, xs[200:], y[200:], True), strict=True)
    assert all(_same(a, b) for a, b in after)
