"""What a second thread is worth on this machine, by the kind of work, and what that bounds.

The quiet-machine rows of ``throughput.py`` compare the 90-member ensemble's default threads
with one thread. How much a second thread can give depends first on the machine: two virtual
CPUs may be two cores, or two hardware threads of one core that share its arithmetic units and
caches. This script measures, in one process, rounds interleaved, best of ``--repeats``:

- ``latency``: one chain of dependent multiply-adds a thread (the units mostly wait): two
  threads against one thread running both chains in turn;
- ``throughput``: an element-wise multiply-add over an array in the first-level cache, which
  LLVM vectorises (the units are busy every cycle), the same way;
- ``sweep``: the predict sweep of a fitted 90-member ensemble (``throughput.ensemble_90``,
  every member live), its serial kernel against its parallel twin, each call applying an owed
  update as a stream's does;
- ``per_sample``: the same ensemble one sample at a time, on one thread and on two (forced),
  with the time of the predict sweep, of the featurisation and of the learn step's update
  split out: the rest of a sample (river's loop, the weights, the engine's Python) runs on one
  thread either way. ``bound`` is the ratio one sample at a time would reach if the sweep alone
  took the second thread as in ``sweep`` and everything else stayed as measured on one thread;
- ``update_on_threads``: the learn step's per-member update (``gaussian_update``) run on the
  threads too (a parallel twin written here, the members split as the sweep splits them),
  against the library's serial update, both with the sweep on two threads;
- ``cache``: what the sweep's pass over the stack costs the rest of a sample. The members'
  factors are larger than a core's cache, so each sweep streams them through it and leaves
  little of what the rest of a sample uses (:func:`member_rows`: a member swept from the cache
  and streamed; :func:`rest_rows`: a sample's time outside the sweep and the update, in the
  stream, without the sweep, and with a read of the factors' size in its place).
  ``bound_with_the_rest_in_cache`` is ``bound`` with that rest as fast as without the sweep.

Writes JSON (default ``benchmarks/results/cores.json``) with the load before and after.

    python benchmarks/cores.py [--repeats 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pickle
import time

import numba
import numpy as np
from _common import HERE
from throughput import ensemble_90, stream

import river_doebe
from river_doebe.datasets import Friedman1
from river_doebe.engine import core
from river_doebe.engine.threads import time_the_spin
from river_doebe.kernels.gaussian import _can_learn, _learn
from river_doebe.kernels.jit import kernel, stack_kernel
from river_doebe.kernels.stack import (
    Params,
    State,
    owe_update,
    predict_stack,
    predict_stack_parallel,
)

N_WARMUP = 1000


@numba.njit(inline="always")
def _chain(n, x):
    for _ in range(n):
        x = x * 0.999999 + 1e-9
    return x


@numba.njit(parallel=True)
def _latency(n, out):
    for t in numba.prange(out.shape[0]):
        out[t] = _chain(n, t + 1.0)


@numba.njit(inline="always")
def _stream(rounds, a, b):
    for _ in range(rounds):
        for k in range(a.shape[0]):
            a[k] = a[k] * 0.9999999 + b[k]
    return a[0]


@numba.njit(parallel=True)
def _throughput(rounds, a, b, out):
    for t in numba.prange(out.shape[0]):
        out[t] = _stream(rounds, a[t], b[t])


def _pair(run, repeats: int) -> dict:
    """``run()`` on one thread and on two, rounds interleaved: best seconds of each, ratio."""
    run()  # (compiles)
    seconds: dict[int, list[float]] = {1: [], 2: []}
    for r in range(repeats):
        for n in ((1, 2) if r % 2 == 0 else (2, 1)):
            numba.set_num_threads(n)
            start = time.perf_counter()
            run()
            seconds[n].append(time.perf_counter() - start)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return {"one_thread_seconds": min(seconds[1]), "two_threads_seconds": min(seconds[2]),
            "two_threads_over_one": min(seconds[1]) / min(seconds[2])}


def machine_rows(repeats: int) -> dict:
    out = np.zeros(2)
    a = np.random.default_rng(0).random((2, 256))
    b = np.random.default_rng(1).random((2, 256)) * 1e-9
    return {
        "latency": _pair(lambda: _latency(20_000_000, out), repeats),
        "throughput": _pair(lambda: _throughput(100_000, a, b, out), repeats),
    }


def fitted_ensemble():
    """The 90-member ensemble after ``N_WARMUP`` samples on one thread, and the stream after."""
    data = list(Friedman1(n_samples=N_WARMUP + 8000, seed=0))
    model = ensemble_90(0.0)
    with river_doebe.num_threads(1):
        stream(model, data[:N_WARMUP], "sample")
    return model, data[N_WARMUP:]


def sweep_rows(model, repeats: int, calls: int = 100) -> dict:
    """The predict sweep alone on the ensemble's state, serial kernel and parallel twin."""
    engine = model._engine
    state = State(*(a.copy() for a in engine._kernel_state))
    state.pvec[:] *= 1e-3  # (owed updates small enough to be applied again and again)

    def run(kernel_):
        def go():
            for _ in range(calls):
                state.pend[:] = True
                kernel_(engine.order, engine.Phi, engine.src, engine._kernel_params,
                        tuple(state), engine.V, engine.E, engine.mean, engine.var,
                        engine.status, None)
        return go

    numba.set_num_threads(2)
    runs = {"serial": run(predict_stack), "parallel": run(predict_stack_parallel)}
    for go in runs.values():
        go()
    seconds: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(repeats):
        for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            start = time.perf_counter()
            runs[name]()
            seconds[name].append((time.perf_counter() - start) / calls)
    serial, parallel = min(seconds["serial"]), min(seconds["parallel"])
    return {"members": int(engine.M), "serial_us": serial * 1e6, "parallel_us": parallel * 1e6,
            "parallel_over_serial": serial / parallel}


# ------------------------------------------------------------------ the update on the threads
@kernel(no_cpython_wrapper=True)
def _check_member(m, p, s, V, mean, var, y):
    return _can_learn(p.F[m], p.static[m], s.mu[m], V[m], mean[m], var[m], p.var_theta[m],
                      p.var_eps[m], y)


@kernel(no_cpython_wrapper=True)
def _learn_member(m, p, s, V, mean, var, y, loglik):
    loglik[m] = _learn(p.F[m], p.static[m], s.mu[m], V[m], mean[m], var[m], p.var_eps[m], y,
                       s.alpha0, s.pg, m)
    owe_update(m, p.F[m], V, s)


def _update_on_threads(order, params, state, V, mean, var, y, loglik, ok):
    """``gaussian_update`` with its two passes over the members (check, then learn) as
    ``prange`` loops in the sweep's order; the same numbers."""
    p = Params(*params)
    s = State(*state)
    M = order.shape[0]
    for j in numba.prange(M):
        ok[order[j]] = _check_member(order[j], p, s, V, mean, var, y)
    for m in range(M):
        if not ok[m]:
            return m + 1
    for j in numba.prange(M):
        _learn_member(order[j], p, s, V, mean, var, y, loglik)
    return 0


_, update_on_threads = stack_kernel(_update_on_threads)


class _Clock:
    """Wraps the engine's kernels with timers (seconds by part), and can put the learn step's
    update on the threads."""

    def __init__(self):
        self.parts: dict[str, int] = {}
        self._saved = (core.predict_stack, core.predict_stack_parallel,
                       core.Engine._featurize, core.Engine._update_members)

    def _timed(self, name, f):
        def g(*args, **kwargs):
            start = time.perf_counter_ns()
            result = f(*args, **kwargs)
            self.parts[name] = self.parts.get(name, 0) + time.perf_counter_ns() - start
            return result
        return g

    def install(self, threaded_update: bool) -> None:
        sweep, sweep_parallel, featurize, update = self._saved
        core.predict_stack = self._timed("sweep", sweep)
        core.predict_stack_parallel = self._timed("sweep", sweep_parallel)
        core.Engine._featurize = self._timed("featurize", featurize)
        if threaded_update:
            flags: dict[int, np.ndarray] = {}  # (by stack size: allocated once, not a sample)

            def threaded(engine, y):
                ok = flags.get(engine.M)
                if ok is None:
                    ok = flags[engine.M] = np.empty(engine.M, dtype=np.bool_)
                return update_on_threads(engine.order, engine._kernel_params,
                                         engine._kernel_state, engine.V, engine.mean,
                                         engine.var, y, engine.loglik, ok)
            core.Engine._update_members = self._timed("update", threaded)
        else:
            core.Engine._update_members = self._timed("update", update)

    def restore(self) -> None:
        (core.predict_stack, core.predict_stack_parallel, core.Engine._featurize,
         core.Engine._update_members) = self._saved


def _segments(runs: dict, data: list, segment: int, clock: _Clock) -> dict:
    """Each run of ``runs`` (``name: (model, threads, threaded_update)``) through the same
    segments of ``data`` in turn (which goes first alternates): microseconds a sample by part,
    summed over the segments."""
    totals = {name: {"total": 0, "n": 0} for name in runs}
    for k, i in enumerate(range(0, len(data), segment)):
        rows = data[i:i + segment]
        for name in (list(runs) if k % 2 == 0 else list(runs)[::-1]):
            model, threads, threaded_update = runs[name]
            clock.install(threaded_update)
            clock.parts = {}
            with river_doebe.num_threads(threads):
                start = time.perf_counter_ns()
                stream(model, rows, "sample")
                totals[name]["total"] += time.perf_counter_ns() - start
            totals[name]["n"] += len(rows)
            for part, ns in clock.parts.items():
                totals[name][part] = totals[name].get(part, 0) + ns
    clock.restore()
    return {name: {part: ns / t["n"] / 1e3 for part, ns in t.items() if part != "n"}
            for name, t in totals.items()}


def stream_rows(model, data: list, sweep: dict) -> dict:
    """One sample at a time, one thread against two, and the update on the threads."""
    blob = pickle.dumps(model)
    clock = _Clock()
    runs = {
        "one thread": (pickle.loads(blob), 1, False),
        "two threads": (pickle.loads(blob), 2, False),
        "two threads, update on the threads": (pickle.loads(blob), 2, True),
    }
    for m, threads, threaded_update in runs.values():  # (compiles; the same samples for all)
        clock.install(threaded_update)
        with river_doebe.num_threads(threads):
            stream(m, data[:200], "sample")
    parts = _segments(runs, data[200:], 500, clock)
    one, two = parts["one thread"], parts["two threads"]
    rest_one = one["total"] - one["sweep"]
    return {
        "us_per_sample": parts,
        "two_threads_over_one": one["total"] / two["total"],
        "update_on_threads_over_serial_update": (parts["two threads, update on the threads"]
                                                 ["total"] / two["total"]),
        "sweep_in_stream_parallel_over_serial": one["sweep"] / two["sweep"],
        "bound": one["total"] / (rest_one + one["sweep"] / sweep["parallel_over_serial"]),
    }


# ------------------------------------------------------------------ the caches
def member_rows(model, repeats: int, calls: int = 200) -> dict:
    """Microseconds a member of the predict sweep (serial kernel, an owed update applied at
    every call), by kind: a few members swept again and again, whose factors stay in the core's
    cache, against all the members of the kind and the whole stack, which stream through it."""
    engine = model._engine
    state = State(*(a.copy() for a in engine._kernel_state))
    state.pvec[:] *= 1e-3  # (owed updates small enough to be applied again and again)
    static = engine._kernel_params[1]

    def per_member(order):
        best = np.inf
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                state.pend[:] = True
                predict_stack(order, engine.Phi, engine.src, engine._kernel_params,
                              tuple(state), engine.V, engine.E, engine.mean, engine.var,
                              engine.status, None)
            best = min(best, (time.perf_counter() - start) / calls / len(order))
        return best * 1e6

    rows = {}
    for kind, members in (("static", np.flatnonzero(static)), ("dynamic", np.flatnonzero(~static))):
        members = members.astype(np.int64)
        rows[kind] = {"in_cache_us": per_member(members[:8].copy()),
                      "streamed_us": per_member(members)}
    rows["stack"] = {"streamed_us": per_member(engine.order),
                     "factor_megabytes": state.C.nbytes / 2**20,
                     "members": int(engine.M)}
    return rows


def rest_rows(model, data: list, segment: int = 500) -> dict:
    """One thread, one sample at a time: microseconds a sample outside the predict sweep and
    the learn step's update (the featurisation, the weights, river's loop and the library's
    Python), three ways, segments interleaved:

    - ``in the stream``: as a stream runs them, each sample after its sweep;
    - ``without the sweep``: the sweep and the update replaced by calls that do nothing (the
      members neither predict nor learn any more; a copy of the model), so the rest of a sample
      finds the caches as the previous sample's rest left them;
    - ``with a read instead``: the sweep replaced by a sum over a buffer of the stack's
      factors' size (its time left out), the update by nothing: the rest after the caches were
      swept without any of the sweep's arithmetic."""
    clock = _Clock()
    buffer = np.ones(model._engine._kernel_state[1].size)
    blob = pickle.dumps(model)

    def nothing(*args):
        return 0

    def read(*args):
        start = time.perf_counter_ns()
        buffer.sum()
        clock.parts["sweep"] = clock.parts.get("sweep", 0) + time.perf_counter_ns() - start
        return 0

    ways = {"in the stream": None, "without the sweep": nothing, "with a read instead": read}
    models = {name: pickle.loads(blob) for name in ways}
    totals = {name: [0, 0] for name in ways}  # (nanoseconds outside the sweep and update, samples)
    for k, i in enumerate(range(0, len(data), segment)):
        rows = data[i:i + segment]
        for name in (list(ways) if k % 2 == 0 else list(ways)[::-1]):
            clock.install(False)
            if ways[name] is not None:
                core.predict_stack = ways[name]
                core.Engine._update_members = lambda engine, y: 0
            clock.parts = {}
            with river_doebe.num_threads(1):
                start = time.perf_counter_ns()
                stream(models[name], rows, "sample")
                elapsed = time.perf_counter_ns() - start
            inside = clock.parts.get("sweep", 0) + clock.parts.get("update", 0)
            if k > 0:  # (the first segment: the substitutes' first calls)
                totals[name][0] += elapsed - inside
                totals[name][1] += len(rows)
    clock.restore()
    return {name: ns / n / 1e3 for name, (ns, n) in totals.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(HERE / "results" / "cores.json"))
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = datetime.datetime.now().isoformat(timespec="seconds")
    # the machine rows start Numba's threads themselves: the library's timed spin first, as its
    # first parallel stack would have it
    time_the_spin()
    print(f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')}", flush=True)
    machine = machine_rows(args.repeats)
    for name, row in machine.items():
        print(f"{name}: two threads {row['two_threads_over_one']:.2f}x one", flush=True)
    model, data = fitted_ensemble()
    sweep = sweep_rows(model, args.repeats)
    print(f"sweep: {sweep['serial_us']:.0f} us serial, {sweep['parallel_us']:.0f} us parallel "
          f"({sweep['parallel_over_serial']:.2f}x)", flush=True)
    per_sample = stream_rows(model, data, sweep)
    for name, parts in per_sample["us_per_sample"].items():
        print(f"{name}: " + ", ".join(f"{k} {v:.0f} us" for k, v in parts.items()), flush=True)
    print(f"per sample: two threads {per_sample['two_threads_over_one']:.2f}x one "
          f"(bound {per_sample['bound']:.2f}x); the update on the threads "
          f"{per_sample['update_on_threads_over_serial_update']:.2f} of the time", flush=True)
    members = member_rows(model, args.repeats)
    for kind in ("static", "dynamic"):
        row = members[kind]
        print(f"{kind} member: {row['in_cache_us']:.2f} us in the cache, "
              f"{row['streamed_us']:.2f} us streamed", flush=True)
    rest = rest_rows(model, data)
    print("outside the sweep and update, one thread: "
          + ", ".join(f"{k} {v:.0f} us" for k, v in rest.items()), flush=True)
    one = per_sample["us_per_sample"]["one thread"]
    # the ratio one sample at a time would reach with the sweep on two threads as in ``sweep``
    # and everything else as fast as it runs when the caches keep it (``without the sweep``)
    warm = one["update"] + rest["without the sweep"]
    cache = {
        "members": members,
        "rest_us_per_sample": rest,
        "bound_with_the_rest_in_cache": (one["sweep"] + warm)
        / (one["sweep"] / sweep["parallel_over_serial"] + warm),
    }
    print(f"bound with the rest in the cache: {cache['bound_with_the_rest_in_cache']:.2f}x",
          flush=True)
    payload = {
        "started": started,
        "cpus": os.cpu_count(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "threading_layer": numba.threading_layer(),
        "gomp_spincount": os.environ.get("GOMP_SPINCOUNT"),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "machine": machine,
        "sweep": sweep,
        "per_sample": per_sample,
        "cache": cache,
    }
    with open(args.out, "w") as fh:
        json.dump(payload, fh, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
