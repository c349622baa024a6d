"""Who decides the threads: the timing of each stack (:class:`river_doebe.engine.threads.Pace`),
an explicit setting that always wins, and no number that depends on either."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import numba
import numpy as np
import pytest
from conftest import ROOT, dicts

import river_doebe.engine.threads as threads
from river_doebe import DOBE, DOEBE, EDOEBE, DOBEClassifier, DOEBEClassifier
from river_doebe.basis import HilbertGP, Linear, RandomFourierFeatures
from river_doebe.engine import num_threads
from river_doebe.kernels import spin

two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                 reason="one thread only on this machine")


class FakeClock:
    """A clock that the test moves: each call of a stack costs what ``cost(parallel)`` says."""

    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def _drive(pace, clock, cost, n, work=10**6, members=100, rows=1):
    """``n`` calls of ``pace``, each taking ``cost(parallel, i)`` ns; the modes it chose."""
    modes = []
    for i in range(n):
        parallel = pace.start(work, members, rows)
        modes.append(parallel)
        clock.now += cost(parallel, i)
    return np.array(modes)


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(threads, "_clock", fake)
    monkeypatch.setattr(threads, "_ready", [True])  # the twins' compile is paid for
    return fake


@two_threads
def test_the_threads_run_where_they_pay_and_not_where_they_do_not(clock):
    with num_threads(None):
        quiet = _drive(threads.Pace(), clock, lambda p, i: 550 if p else 1000, 5000)
        busy = _drive(threads.Pace(), clock, lambda p, i: 9000 if p else 1000, 20_000)
    assert quiet[100:].mean() > 0.98  # the serial chunks of the rare probes only
    assert busy.mean() < 0.005  # few parallel calls, each cut short by the abort
    # probes become rarer while one thread wins: most of the parallel calls come early
    assert busy[:2000].sum() > busy[10_000:].sum()


@two_threads
def test_between_probes_a_chunk_reads_the_clock_once(clock, monkeypatch):
    reads = []

    def counted():
        reads.append(clock.now)
        return clock.now

    monkeypatch.setattr(threads, "_clock", counted)
    with num_threads(None):
        pace = threads.Pace()
        modes = _drive(pace, clock, lambda p, i: 550 if p else 1000, 2000)
    assert modes[48:].all()  # the first probe's six chunks, then the threads
    probe = pace.rounds * 2 * pace.chunk  # (each call of a probe timed on its own)
    assert len(reads) == probe + (2000 - probe) // pace.chunk


@two_threads
def test_a_machine_that_becomes_busy_falls_back_within_a_few_hundred_samples(clock):
    def cost(parallel, i):
        if i < 3000:  # quiet: the threads pay
            return 550 if parallel else 1000
        return 9000 if parallel else 1500  # busy from sample 3,000 on

    with num_threads(None):
        modes = _drive(threads.Pace(), clock, cost, 6000)
    assert modes[2000:3000].all()
    # three chunks of 8 samples to see it, then one thread but for the short probes
    assert not modes[3000 + 30:3000 + 250].any()
    assert modes[3000 + 250:].mean() < 0.02
    # ... and a machine that becomes quiet again gets its threads back
    with num_threads(None):
        pace = threads.Pace()
        _drive(pace, clock, lambda p, i: 9000 if p else 1000, 5000)
        later = _drive(pace, clock, lambda p, i: 550 if p else 1000, 10_000)
    assert later[-2000:].all()


@two_threads
def test_blocks_are_timed_per_row(clock):
    pace = threads.Pace(chunk=1, rounds=1, first=8, longest=64)
    with num_threads(None):
        for _ in range(200):  # blocks of 256 rows, then a short one, alternately
            for rows in (256, 10):
                parallel = pace.start(10**6, 90, rows)
                clock.now += rows * (400 if parallel else 1000)
                pace.stop()
                clock.now += 10**9  # whatever happens between blocks is not counted
    assert pace.parallel_calls / pace.calls > 0.9


@two_threads
def test_a_probe_times_part_of_a_long_block(clock):
    pace = threads.Pace(chunk=1, rounds=1, first=8, longest=64, probe_rows=64)
    work, members = 10**6, 90

    def call(rows):
        parallel = pace.start(work, members, rows)
        clock.now += rows * (400 if parallel else 1000)
        pace.stop()
        return parallel

    with num_threads(None):
        assert pace.split(work, members, 256) == 64  # the probe's serial part
        assert not call(64)
        assert pace.split(work, members, 192) == 64  # its parallel part
        assert call(64)
        assert pace.split(work, members, 128) == 128  # decided: the rest in one call
        assert call(128)
        assert pace.split(work, members, 256) == 256  # no probe: whole blocks
        assert pace.split(work, members, 100) == 100
    with num_threads(1):  # no choice to time: never split
        assert threads.Pace(probe_rows=64).split(work, members, 256) == 256
    assert threads.Pace().split(work, members, 256) == 256  # (no probe_rows: never split)


@two_threads
def test_a_block_split_by_a_probe_gives_the_per_sample_numbers(clock, monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(threads, "PARALLEL_MIN_MEMBERS", 0)
    X = np.random.default_rng(3).normal(size=(700, 3))
    y = np.sin(X).sum(axis=1)
    xs, ys = dicts(X), y.tolist()

    def make():
        return DOEBE([DOBE(RandomFourierFeatures(20, seed=s), var_eps=0.1, var_rw=1e-3 * s)
                      for s in range(4)], weight_floor=1e-16)

    def read(dist):  # the mixture's numbers, as floats
        return (dist.mu, dist.sigma, dist.cdf(0.3))

    with num_threads(1):
        loop = make()
        expected, dists = [], []
        for x, t in zip(xs, ys, strict=True):
            expected.append(loop.predict_one(x))
            dists.append(read(loop.predict_one(x, with_dist=True)))
            loop.learn_one(x, t)
    for with_dist in (False, True):
        with num_threads(None):
            blocks = make()
            blocks.learn_one(xs[0], ys[0])
            got = []
            pace = blocks._model._block_pace
            for i in range(1, 700, 233):  # blocks of 233 rows: each probe splits one
                got += list(blocks.predict_learn_many(xs[i:i + 233], ys[i:i + 233],
                                                      with_dist=with_dist))
        assert pace.calls > 3  # a probe did run on parts of a block
        assert [read(d) for d in got] == dists[1:] if with_dist else got == expected[1:]
        assert pickle.dumps(blocks) == pickle.dumps(loop)


@two_threads
def test_an_explicit_thread_count_always_wins(clock):
    slow_threads = lambda p, i: 9000 if p else 1000  # noqa: E731
    with num_threads(2):
        assert _drive(threads.Pace(), clock, slow_threads, 500).all()
    with num_threads(1):
        assert not _drive(threads.Pace(), clock, lambda p, i: 1 if p else 1000, 500).any()
    # a small stack is never a candidate, whatever the setting
    with num_threads(2):
        assert not _drive(threads.Pace(), clock, slow_threads, 50, work=100, members=2).any()
    with num_threads(None):
        assert not _drive(threads.Pace(), clock, slow_threads, 50, members=1).any()


@two_threads
def test_a_stack_runs_on_the_numba_count_of_the_setting_whoever_changed_it_on_any_thread():
    # the count is read from Numba's threading layer itself once the threads run (not through
    # numba.get_num_threads and its locks), and still on every call: a count that Numba's own
    # API changed in between, or that another thread has, is set again before the kernel runs
    import threading

    n = numba.config.NUMBA_NUM_THREADS
    with num_threads(None):
        assert threads.use_threads(10**6, 100)
        getter = threads._numba_count[0]
        assert getter is not numba.get_num_threads or not hasattr(
            numba.np.ufunc.parallel, "_get_num_threads")
        try:
            numba.set_num_threads(1)
            assert threads.use_threads(10**6, 100)
            assert numba.get_num_threads() == n
            with num_threads(2):
                numba.set_num_threads(1)
                assert threads.use_threads(10**6, 100) and numba.get_num_threads() == 2
            seen = []

            def other_thread():
                numba.set_num_threads(1)
                seen.append(threads.use_threads(10**6, 100))
                seen.append(numba.get_num_threads())

            worker = threading.Thread(target=other_thread)
            worker.start()
            worker.join()
            assert seen == [True, n]
        finally:
            numba.set_num_threads(n)


class _Kernel:
    """Stands for a dispatcher in a compile event: what the bill reads of it."""

    def __init__(self, module):
        self.py_func = type("F", (), {"__module__": module})


def _compile(clock, module, seconds, nested=()):
    """A compile event of a function of ``module`` lasting ``seconds`` on the fake clock, with
    ``nested`` compiles (module, seconds) inside it."""
    with numba.core.event.trigger_event("numba:compile", data={"dispatcher": _Kernel(module)}):
        for inner, s in nested:
            _compile(clock, inner, s)
        clock.now += int(seconds * 1e9)


@two_threads
def test_the_parallel_twins_wait_until_the_serial_calls_have_paid_for_the_compile(
        clock, monkeypatch):
    from river_doebe.kernels import jit

    monkeypatch.setattr(threads, "_bill", threads._CompileBill())
    monkeypatch.setattr(threads, "_paid", [0])
    monkeypatch.setattr(threads, "_ready", [False])
    monkeypatch.setattr(jit, "_twin_seconds", [0.0])
    numba.core.event.register("numba:compile", threads._bill)
    try:
        # the library's kernels compile (a foreign function's compile is not on the bill, nor
        # is a nested compile counted twice): a bill of 3 s
        _compile(clock, "river_doebe.kernels.stack", 1.5, nested=[("numba.np.linalg", 0.5)])
        _compile(clock, "user_code", 5.0)
        _compile(clock, "river_doebe.basis.rbf", 1.0)
        assert threads._bill.ns == 3 * 10**9
        assert threads.compiled() == (2, 3.0)  # (what river-doebe compile reports)
        pace = threads.Pace()
        with num_threads(None):
            # threads would pay (0.55 of the serial time), but the first 3 s of serial calls
            # (3,000 calls of 1 ms) run on one thread; a compile during a call is not its time,
            # nor is a rented kernel's Python twin (it pays toward its own compile)
            modes = []
            for i in range(9000):
                modes.append(pace.start(10**6, 100))
                if i == 10:
                    _compile(clock, "river_doebe.kernels.gaussian", 4.0)  # 4 s more to pay
                if i == 20:
                    jit._twin_seconds[0] += 2.0
                    clock.now += 2 * 10**9
                clock.now += 550_000 if modes[-1] else 1_000_000
        modes = np.array(modes)
        first = int(np.argmax(modes))
        assert 7000 - 2 <= first <= 7000 + 16  # the rent is paid, then the probe
        assert not modes[:first].any() and modes[first + 100:].mean() > 0.98
        assert threads.threads_ready() and threads._paid[0] >= threads._bill.ns
    finally:
        numba.core.event.unregister("numba:compile", threads._bill)


@pytest.mark.slow  # eight fresh interpreters, each importing the package
def test_the_environment_sets_the_starting_value():
    code = ("import river_doebe.engine.threads as t, os; "
            "print(t._setting[0], os.environ.get('GOMP_SPINCOUNT'))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GOMP_SPINCOUNT", None)
    env.pop("OMP_WAIT_POLICY", None)

    def run(**extra):
        out = subprocess.run([sys.executable, "-c", code], env={**env, **extra},
                             capture_output=True, text=True, cwd=ROOT)
        return out.stdout.split(), out.stderr

    assert run(RIVER_DOEBE_THREADS="1")[0] == ["1", threads.SPIN_COUNT]
    assert run(RIVER_DOEBE_THREADS="auto")[0] == ["None", threads.SPIN_COUNT]
    assert run()[0] == ["None", threads.SPIN_COUNT]
    # a wait policy of the user's own is left alone
    assert run(GOMP_SPINCOUNT="5")[0] == ["None", "5"]
    assert run(OMP_WAIT_POLICY="PASSIVE")[0] == ["None", "None"]
    _, err = run(RIVER_DOEBE_THREADS="two")
    assert "RIVER_DOEBE_THREADS must be a positive integer or 'auto', got 'two'" in err
    # the first stack that may use the threads times the spin before Numba starts them
    started = ("import river_doebe.engine.threads as t, os; t.use_threads(10**6, 90); "
               "print(t._setting[0], os.environ.get('GOMP_SPINCOUNT'))")
    out = subprocess.run([sys.executable, "-c", started], env={**env, "NUMBA_NUM_THREADS": "2"},
                         capture_output=True, text=True, cwd=ROOT).stdout.split()
    if spin.X86:
        low, high = threads._SPIN_LIMITS
        assert out[0] == "None" and low <= int(out[1]) <= high
    else:
        assert out == ["None", threads.SPIN_COUNT]
    out = subprocess.run([sys.executable, "-c", started],
                         env={**env, "NUMBA_NUM_THREADS": "2", "GOMP_SPINCOUNT": "7"},
                         capture_output=True, text=True, cwd=ROOT).stdout.split()
    assert out == ["None", "7"]


@pytest.fixture
def untimed_spin(monkeypatch):
    """The library's spin as its import leaves it, Numba's threads not started (as far as the
    library can tell), and a pause of 10 ns."""
    from numba.np.ufunc import parallel

    monkeypatch.setenv("GOMP_SPINCOUNT", threads.SPIN_COUNT)
    monkeypatch.setattr(threads, "_spin_untimed", [True])
    monkeypatch.setattr(parallel, "_is_initialized", False)
    monkeypatch.setattr(spin, "round_seconds", lambda: 1e-8)
    return parallel


def test_the_spin_is_timed_before_the_threads_start(untimed_spin):
    threads.time_the_spin()
    assert os.environ["GOMP_SPINCOUNT"] == str(round(threads.SPIN_SECONDS / 1e-8))
    assert threads._spin_untimed == [False]


def test_only_the_first_stack_that_may_use_the_threads_times_the_spin(monkeypatch):
    calls = []

    def timed():
        calls.append(1)
        threads._spin_untimed[0] = False

    monkeypatch.setattr(threads, "_spin_untimed", [True])
    monkeypatch.setattr(threads, "time_the_spin", timed)
    with num_threads(None):
        threads.use_threads(100, 2)  # (too small for its threads one sample at a time)
        threads.use_threads(10, 1, rows=64)  # (a single learner)
        assert calls == []
        threads.use_threads(10**6, 90)
        threads.use_threads(10**6, 90)
        threads.use_threads(100, 2, rows=64)
    assert calls == [1]


@pytest.mark.parametrize("seconds, count", [(1e-3, 1_000), (1e-12, 10_000_000), (None, None)])
def test_a_timed_spin_out_of_range_is_bounded_and_an_untimed_one_kept(untimed_spin, monkeypatch,
                                                                       seconds, count):
    monkeypatch.setattr(spin, "round_seconds", lambda: seconds)
    threads.time_the_spin()
    assert os.environ["GOMP_SPINCOUNT"] == (threads.SPIN_COUNT if count is None else str(count))


@pytest.mark.parametrize("case", ["started", "changed"])
def test_the_spin_is_left_alone_when_openmp_may_have_read_it_or_it_is_not_the_librarys(
        untimed_spin, monkeypatch, case):
    # (a count of the user's own: the import leaves ``_spin_untimed`` unset, see
    # test_the_environment_sets_the_starting_value)
    if case == "started":
        monkeypatch.setattr(untimed_spin, "_is_initialized", True)
    elif case == "changed":
        monkeypatch.setenv("GOMP_SPINCOUNT", "123")
    before = os.environ["GOMP_SPINCOUNT"]
    threads.time_the_spin()
    assert os.environ["GOMP_SPINCOUNT"] == before
    assert threads._spin_untimed == [False]


@pytest.mark.skipif(not spin.X86, reason="the pause is timed on x86 only")
def test_a_pause_is_timed_to_a_positive_finite_duration_by_a_loop_that_issues_it():
    one = spin.round_seconds(rounds=2_000, repeats=3)
    assert one is not None and 0 < one < 1e-5
    # the loop is not optimised away: its machine code issues the hint it times (compiled anew
    # here, as Numba does not show the code of a kernel read from its on-disk cache)
    loop = numba.njit(spin._pauses.py_func)
    loop(1)
    (asm,) = loop.inspect_asm().values()
    assert any(line.split()[:1] == ["pause"] for line in asm.splitlines())


# ------------------------------------------------------------------ the numbers
def _stream(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)
    return dicts(X, ["a", "b", "c"]), y


MODELS = {
    "DOEBE": lambda: DOEBE([DOBE(RandomFourierFeatures(6, seed=k), var_eps=0.1,
                                 var_rw=1e-3 * (k % 2)) for k in range(6)]
                           + [DOBE(Linear(), var_eps=1.0)], weight_floor=0.0),
    "EDOEBE": lambda: EDOEBE(families=[RandomFourierFeatures(6, seed=4), HilbertGP(10)],
                             n_warmup=80, n_samples=2, starts=(1.0,), seed=0),
    "DOEBEClassifier": lambda: DOEBEClassifier(
        [DOBEClassifier(RandomFourierFeatures(6, seed=k), var_rw=1e-3 * (k % 2)) for k in range(4)]
        + [DOBEClassifier(Linear())], weight_floor=0.0),  # no member dies
}


@pytest.fixture
def erratic_clock(monkeypatch):
    """Every stack is a candidate, and its calls take random times: the stacks switch between
    their serial and parallel kernels again and again, mid-stream."""
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(threads, "PARALLEL_MIN_MEMBERS", 0)
    rng = np.random.default_rng(0)
    state = {"now": 0}

    def tick():
        state["now"] += int(rng.integers(1, 10_000))
        return state["now"]

    monkeypatch.setattr(threads, "_clock", tick)
    monkeypatch.setattr(threads, "_ready", [True])
    switches = {"sample": 0, "block": 0}
    last = {}
    start = threads.Pace.start

    def counting_start(self, work, members, rows=1):
        out = start(self, work, members, rows)
        # keyed by the Pace itself (a strong reference): an id() is reused once its object is
        # freed, and a new stack's first call would then count as a switch of the old one
        switches["sample" if rows == 1 else "block"] += last.get(self, out) != out
        last[self] = out
        return out

    monkeypatch.setattr(threads.Pace, "start", counting_start)
    return switches


def _run(model, xs, ys, classify):
    out = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if classify:
            out.append(model.predict_proba_one(x))
        else:
            out.append(model.predict_one(x))
        model.learn_one(x, y)
        if i % 97 == 0:  # pickled mid-stream: nothing of the timing goes along
            model = pickle.loads(pickle.dumps(model))
    return out, model


@two_threads
@pytest.mark.parametrize("name", list(MODELS))
def test_switching_mid_stream_changes_no_number(name, erratic_clock):
    classify = "Classifier" in name
    xs, y = _stream(600, seed=3)
    ys = (y > 0).tolist() if classify else y.tolist()
    with num_threads(1):
        ref, ref_model = _run(MODELS[name](), xs, ys, classify)
        ref_blocks = MODELS[name]()
        ref_b = [ref_blocks.predict_learn_many(xs[i:i + 5], ys[i:i + 5])
                 for i in range(0, 600, 5)]
    with num_threads(None):
        out, model = _run(MODELS[name](), xs, ys, classify)
        blocks = MODELS[name]()
        # blocks of 5 rows: 120 calls, more than the longest run between two probes (64 blocks)
        out_b = [blocks.predict_learn_many(xs[i:i + 5], ys[i:i + 5])
                 for i in range(0, 600, 5)]
    assert erratic_clock["sample"] >= 4 and erratic_clock["block"] >= 2
    assert out == ref and out_b == ref_b
    assert pickle.dumps(model) == pickle.dumps(ref_model)
    assert pickle.dumps(blocks) == pickle.dumps(ref_blocks)


@two_threads
def test_the_timing_stays_out_of_pickles_and_copies(erratic_clock):
    xs, y = _stream(400, seed=5)

    def learn(model, rows):
        return [(model.predict_one(xs[i]), model.learn_one(xs[i], y[i]))[0] for i in rows]

    with num_threads(1):
        twin = MODELS["DOEBE"]()
        learn(twin, range(300))
        expected = learn(copy.deepcopy(twin), range(300, 400))
    with num_threads(None):
        model = MODELS["DOEBE"]()
        learn(model, range(300))
        assert model._engine._pace.calls == 300
        assert pickle.dumps(model) == pickle.dumps(twin)  # the timing is not in the pickle
        assert b"Pace" not in pickle.dumps(model)
        for other in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
            assert other._engine._pace.calls == 0  # it times its own calls again
            assert learn(other, range(300, 400)) == expected
        assert learn(model.clone(), range(300)) == learn(MODELS["DOEBE"](), range(300))


@two_threads
@pytest.mark.parametrize("cached", [True, False])
def test_a_process_that_compiled_nothing_waits_only_for_parallel_kernels_not_on_disk(
        cached, clock, monkeypatch):
    monkeypatch.setattr(threads, "_bill", threads._CompileBill())  # nothing compiled here
    monkeypatch.setattr(threads, "_paid", [0])
    monkeypatch.setattr(threads, "_ready", [False])
    monkeypatch.setattr(threads, "_twins_cached", [cached])
    monkeypatch.setattr(threads, "UNCACHED_TWINS_SECONDS", 2.0)
    pace = threads.Pace()
    with num_threads(None):
        modes = _drive(pace, clock, lambda p, i: 550_000 if p else 1_000_000, 4000)
    first = int(np.argmax(modes))
    # on the disk: the probe starts from the second call (a serial chunk first); not there: after
    # 2 s of 1-ms serial calls
    assert (first <= 2 + 8) if cached else (2000 - 2 <= first <= 2000 + 16)


def test_the_on_disk_check_of_the_parallel_sweep_answers_once(monkeypatch):
    monkeypatch.setattr(threads, "_twins_cached", [None])
    DOBE(RandomFourierFeatures(4, seed=0)).learn_one({"a": 1.0}, 1.0)  # a serial sweep ran
    assert threads._parallel_sweep_cached() in (True, False)
    assert threads._twins_cached[0] is not None


# ------------------------------------------------------------------ backward sweeps
@pytest.mark.parametrize("M", [1, 2, 7, 45, 90, 91])
@pytest.mark.parametrize("n_threads", [1, 2, 3, 4])
def test_backward_runs_reverse_each_threads_run_in_place(M, n_threads):
    order = threads.balanced_order(np.arange(M) % 2 == 0, np.full(M, 10))
    back = threads.backward_runs(order, n_threads)
    # Numba's runs: M // n each, one more for the first M % n (as np.array_split cuts)
    for run, back_run in zip(np.array_split(order, n_threads),
                             np.array_split(back, n_threads), strict=True):
        assert back_run.tolist() == run[::-1].tolist()
    assert threads.backward_runs(back, n_threads).tolist() == order.tolist()


@numba.njit(parallel=True)
def _thread_of(order, out):
    for j in numba.prange(order.shape[0]):
        out[order[j]] = numba.get_thread_id()


@two_threads
@pytest.mark.parametrize("M", [2, 45, 90, 91])
def test_a_backward_sweep_gives_every_thread_the_members_it_swept_forwards(M):
    """The point of sweeping backwards: each thread meets again the members its core's cache
    holds. Checked on Numba's own split of a ``prange`` (the threading layer of this process)."""
    order = threads.balanced_order(np.arange(M) % 3 == 0, np.full(M, 10))
    n = threads.running_threads()
    forwards, backwards = np.empty(M, dtype=np.int64), np.empty(M, dtype=np.int64)
    _thread_of(order, forwards)
    if numba.threading_layer() == "tbb":  # pragma: no cover - (TBB steals work: no fixed runs)
        pytest.skip("TBB's threads take no fixed runs")
    _thread_of(threads.backward_runs(order, n), backwards)
    assert forwards.tolist() == backwards.tolist()
    assert len(set(forwards.tolist())) == min(n, M)


@pytest.mark.parametrize("setting", [1, numba.config.NUMBA_NUM_THREADS])
def test_sweeping_backwards_every_other_sample_changes_no_number(setting, monkeypatch):
    """The same stream with every sweep forwards: the same predictions and the same pickled
    state, to the bit (each member's arithmetic is its own)."""
    import river_doebe.engine.core as core

    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)  # (the parallel sweep for 7 members)
    monkeypatch.setattr(threads, "PARALLEL_MIN_MEMBERS", 0)
    xs, y = _stream(300, seed=5)
    ys = y.tolist()

    def run():
        model, out = MODELS["DOEBE"](), []
        for x, t in zip(xs, ys, strict=True):
            out.append(model.predict_one(x))
            model.learn_one(x, t)
        return out, model

    with num_threads(setting):
        out, model = run()
        engine = model._engine
        backward = engine._backward[setting]
        assert backward.tolist() != engine.order.tolist()  # (the turns did sweep backwards)
        with monkeypatch.context() as patch:
            patch.setattr(core, "backward_runs", lambda order, n_threads: order)
            ref, ref_model = run()
    assert out == ref
    assert pickle.dumps(model) == pickle.dumps(ref_model)
