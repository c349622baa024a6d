"""Throughput of river-doebe against river's own Bayesian linear regression, in one process.

The per-sample rows run through ``river.evaluate.progressive_val_score`` on the same 10-feature
stream (Friedman #1, 20,000 samples), so each sample pays for a ``predict_one`` and a
``learn_one`` exactly as a river user's loop does; the block rows feed the same stream through
``predict_learn_many`` (blocks of 256 rows, the same predictions bit for bit). Numba compilation
happens in a short run first and is not timed. The thread count is the library's
(``river_doebe.num_threads``): "1 thread" rows pin it to one; "all threads" rows are the
library's default, where each stack times its serial and parallel kernels on the stream and
runs the faster (``river_doebe.engine.threads.Pace``; ``parallel_share`` says how many of its
calls ran on the threads); "threads forced" rows set the thread count to every thread Numba has,
which runs the parallel kernels on every call, as the library did before it timed them. The
script prints a table and writes JSON (default ``benchmarks/results/throughput.json``) with the
machine's core and thread counts and its load (``os.getloadavg``) before and after.

    python benchmarks/throughput.py [--n 20000] [--repeats 3] [--out FILE] [--no-threshold]
                                    [--no-busy] [--only-busy] [--busy-n 4000]
                                    [--only-limit] [--no-limit] [--limit-n 2048]
                                    [--rows TEXT ...]

Rows and targets (ratios within one run):

- ``DOBE`` with 100 random Fourier features (dynamic, and static with its square-root
  covariance) at least as fast as river's ``BayesianLinearRegression`` (which works in 10
  dimensions);
- the 90-member ensemble of 100-feature learners (``recalibrate=False``: the engine alone;
  weight floor 0: every member stays live) per
  sample with 1 thread and with all threads (target: all >= 1.6x one), and through
  ``predict_learn_many`` with 1 and all threads (target: all threads >= 2.2x the one-thread
  per-sample rate); the same ensemble with the paper's and the default weight floors, and with
  the threads forced;
- ``EDOEBE()`` as a user gets it, on the 20,000 samples, per sample and in blocks (its
  warm-up on the first 1,000 samples included and reported apart), and the same with online
  stacking (``weighting="stacking", delta=0``): what stacking costs in time;
- the default warm-up on 1,000 samples of 21 inputs, serial and on every thread (target:
  parallel <= 0.65x serial);
- ``busy``: the same machine with two CPU-bound processes of another program beside the
  benchmark (a Python busy loop each, started by the script, ended by it whatever happens and
  bounded by a deadline of their own): the 90-member ensemble and ``EDOEBE()`` after its
  warm-up (fitted once, then loaded from its pickle for each run), per sample and in blocks, on
  1 thread and with the default threads, the two models taking turns on the stream in
  segments of 200 samples or one block (target: default >= 0.8x one thread), and the
  warm-up on 1 thread and on all (target: not slower than one thread). The machine's own load
  before the busy processes start is written beside them. ``--only-busy`` measures these rows
  alone and puts them into an existing results file, keeping its other rows;
- ``limit``: the 90-member ensemble per sample and in blocks on 1 thread against a minimal
  member sweep of the same shape (90 dynamic members of 100 features: the covariance sweep alone,
  no featurisation, weights or Python per sample) per sample and blocked, taking turns a block
  at a time (target: the library at least 0.75x of the sweep, each path); ``--only-limit``
  measures these and the ``first_use`` rows alone;
- ``first_use``: the JIT compile of ``EDOEBE()``'s first use in a new process, on a fresh Numba
  cache (a new install; target < 6 s) and on the on-disk cache that run left (its two blocks
  go the per-sample way on a fresh install: the block kernel is rented, see
  ``river_doebe.engine.core._BLOCKS``);
- ``--rows TEXT ...``: only the per-sample and block rows above whose names contain one of the
  texts, beside river's BLR, interleaved as in the full run; printed, nothing written (an A/B
  of two checkouts in alternate processes, e.g. ``--rows "DOBE, 100 RFF"``);
- ``threshold``: stacks of ``M`` members of ``F`` features per sample, one thread against all
  threads with the parallel sweep forced, to place ``PARALLEL_MIN_WORK`` and
  ``PARALLEL_MIN_MEMBERS`` (below them a stack does not even time its threads).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import pickle
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np
from _common import HERE
from river import evaluate, linear_model, metrics

import river_doebe
import river_doebe.engine.threads as threads
from river_doebe import DOBE, DOEBE, EDOEBE
from river_doebe.basis import HilbertGP, RandomFourierFeatures, RBFNetwork
from river_doebe.datasets import Friedman1

BLOCK = 256
ALL = None  # the library's default: every thread Numba has, where it pays (timed)
FORCED = numba.config.NUMBA_NUM_THREADS  # an explicit count: the parallel kernels every call


def ensemble_90(weight_floor: float) -> EDOEBE:
    """45 specifications (3 families x 15), each static and dynamic: 90 members of F = 100."""
    specs = []
    for k in range(15):
        ls = 0.5 + 0.25 * k
        specs.append(DOBE(RandomFourierFeatures(50, lengthscale=ls, seed=k), var_eps=0.1))
        specs.append(DOBE(HilbertGP(100, lengthscale=ls), var_eps=0.1))
        specs.append(DOBE(RBFNetwork(100, lengthscale=ls, seed=k), var_eps=0.1))
    # the engine's rows (threads, blocks, the limit): the members and weights alone, without
    # the recalibration of the predictive that EDOEBE() adds by default
    return EDOEBE(models=specs, rw_variances=(1e-3,), delta=1e-2, weight_floor=weight_floor,
                  recalibrate=False)


def _dobe(var_rw):
    return DOBE(RandomFourierFeatures(50, lengthscale=0.5, seed=0), var_eps=0.1, var_rw=var_rw)


def candidates():
    """``name: (factory, path, threads)``; every model works on the raw Friedman inputs (in
    [0, 1]), so that every row pays for the same river plumbing. (In a pipeline behind an online
    scaler, ``learn_one`` sees other inputs than the ``predict_one`` before it and the predict
    step is computed twice.)"""
    e90 = "E-DOEBE, 90 members x 100 features"
    return {
        "river BayesianLinearRegression": (linear_model.BayesianLinearRegression, "sample", 1),
        "DOBE, 100 RFF features": (lambda: _dobe(1e-4), "sample", ALL),
        # a static learner keeps a square root of its covariance (Carlson's update): its cost
        "DOBE, 100 RFF features, static (square-root covariance)": (lambda: _dobe(0.0), "sample",
                                                                    ALL),
        f"{e90} (no floor: all live), per sample, 1 thread": (lambda: ensemble_90(0.0), "sample",
                                                              1),
        f"{e90} (no floor: all live), per sample, all threads": (lambda: ensemble_90(0.0),
                                                                 "sample", ALL),
        f"{e90} (no floor: all live), blocks, 1 thread": (lambda: ensemble_90(0.0), "block", 1),
        f"{e90} (no floor: all live), blocks, all threads": (lambda: ensemble_90(0.0), "block",
                                                             ALL),
        f"{e90} (no floor: all live), per sample, threads forced": (lambda: ensemble_90(0.0),
                                                                    "sample", FORCED),
        f"{e90} (no floor: all live), blocks, threads forced": (lambda: ensemble_90(0.0),
                                                                "block", FORCED),
        f"{e90} (the paper's floor 1e-16), per sample": (lambda: ensemble_90(1e-16), "sample",
                                                         ALL),
        f"{e90} (default floor 1e-100), per sample": (lambda: ensemble_90(1e-100), "sample",
                                                      ALL),
    }


def state_bytes(model) -> int:
    return len(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))


def stream(model, data, path: str) -> float:
    """Predict then learn every sample of ``data``: the MAE of the predictions."""
    if path == "sample":
        return evaluate.progressive_val_score(data, model, metrics.MAE()).get()
    mae = metrics.MAE()
    for i in range(0, len(data), BLOCK):
        rows = data[i:i + BLOCK]
        ys = [y for _, y in rows]
        for y, p in zip(ys, model.predict_learn_many([x for x, _ in rows], ys), strict=True):
            mae.update(y, p)
    return mae.get()


def run_one(make, data, repeats, path):
    """Best of ``repeats`` full runs; the state is weighed at half time and at the end."""
    best = np.inf
    half = len(data) // 2
    for _ in range(repeats):
        model = make()
        start = time.perf_counter()
        stream(model, data[:half], path)
        paused = time.perf_counter()
        mid_mem = state_bytes(model)
        share_half = parallel_share(model, path)
        resumed = time.perf_counter()
        mae = stream(model, data[half:], path)
        elapsed = time.perf_counter() - resumed + (paused - start)
        end_mem = state_bytes(model)
        best = min(best, elapsed)
    return {
        "seconds": best,
        "samples_per_second": len(data) / best,
        "mae_second_half": mae,
        "state_bytes_half": mid_mem,
        "state_bytes_end": end_mem,
        # the pickle at half time started the timing again: the second half's share
        "parallel_share": _merge_share(share_half, parallel_share(model, path)),
    }


def parallel_share(model, path: str):
    """The share of the stack's calls that ran on the threads under the default setting
    (``None``: no stack, or every call decided by an explicit thread count or the size)."""
    engine = getattr(model, "_engine", None)
    if engine is None or not hasattr(engine, "_pace"):
        return None
    pace = engine._pace if path == "sample" else engine._block_pace
    return None if not pace.calls else (pace.parallel_calls, pace.calls)


def _merge_share(*shares):
    shares = [s for s in shares if s is not None]
    if not shares:
        return None
    return sum(s[0] for s in shares) / sum(s[1] for s in shares)


#: ``EDOEBE`` as a user gets it, and with online stacking in place of model averaging and
#: switching (the better predictions of the stacking experiment): what the stacking costs
DROP_INS = {
    "EDOEBE()": lambda: EDOEBE(seed=0),
    "EDOEBE(weighting='stacking', delta=0)": lambda: EDOEBE(seed=0, weighting="stacking",
                                                           delta=0.0),
}


STACKING = "EDOEBE(weighting='stacking', delta=0)"


def drop_in_name(model: str, n: int, path: str) -> str:
    return f"{model} on {n:,}, {'per sample' if path == 'sample' else 'blocks'}"


def drop_in(data, path: str, n_warmup: int = 1000, make=DROP_INS["EDOEBE()"]) -> dict:
    """An ``EDOEBE`` on the whole stream: its warm-up (the first ``n_warmup`` samples, with the
    fit) and the rest, timed apart."""
    model = make()
    start = time.perf_counter()
    stream(model, data[:n_warmup], path)
    warm = time.perf_counter()
    mae = stream(model, data[n_warmup:], path)
    end = time.perf_counter()
    return {
        "seconds": end - warm,
        "samples_per_second": (len(data) - n_warmup) / (end - warm),
        "mae_second_half": mae,
        "warmup_seconds": warm - start,
        "members": len(model.members),
        "live_members_at_end": int((model.weights > 0).sum()),
        "parallel_share": _merge_share(parallel_share(model, path)),
        "state_bytes_half": state_bytes(model),
        "state_bytes_end": state_bytes(model),
    }


def time_warmups(repeats: int) -> dict:
    """Wall time of the default ``EDOEBE()`` warm-up on 1,000 samples of 21 inputs (Friedman #1
    with 16 irrelevant inputs), on one thread and on all of them, the runs interleaved (the
    machine's speed drifts), best of ``repeats`` each."""
    X, y = Friedman1(n_samples=1000, n_features=21, seed=0).arrays()
    out = {}
    for _ in range(repeats):
        for kind, n_threads in (("serial", 1), ("parallel", ALL)):
            with river_doebe.num_threads(n_threads):
                start = time.perf_counter()
                model = EDOEBE.from_batch(X, y, seed=0)
                seconds = time.perf_counter() - start
            entry = out.setdefault(kind, {"samples": 1000, "inputs": 21,
                                          "threads": river_doebe_threads(n_threads),
                                          "members": len(model.members), "seconds_all": []})
            entry["seconds_all"].append(seconds)
    for entry in out.values():
        entry["seconds_best"] = min(entry["seconds_all"])
    return out


def river_doebe_threads(n_threads) -> int:
    with river_doebe.num_threads(n_threads):
        return river_doebe.get_num_threads()


def threshold(data, sizes=(1, 2, 4, 8, 16, 32, 64), features=(25, 50, 100),
              repeats=3) -> list[dict]:
    """Per-sample rates of ``DOEBE`` stacks of ``M`` dynamic members of ``F`` features on one
    thread and on all threads with the parallel sweep forced (``PARALLEL_MIN_WORK`` and
    ``PARALLEL_MIN_MEMBERS`` at 0), the two runs interleaved, best of ``repeats`` each: where the
    ratio passes 1 is where the parallel sweep pays (on this machine, in its present state)."""
    rows = []
    saved = threads.PARALLEL_MIN_WORK, threads.PARALLEL_MIN_MEMBERS
    settings = {"one": (1, saved), "all": (FORCED, (0, 0))}
    try:
        for F in features:
            for M in sizes:
                def make(F=F, M=M):
                    return DOEBE([DOBE(RandomFourierFeatures(F // 2, lengthscale=0.5 + 0.1 * k,
                                                             seed=k), var_eps=0.1, var_rw=1e-4)
                                  for k in range(M)], weight_floor=0.0)

                best = {"one": np.inf, "all": np.inf}
                for rep in range(repeats + 1):  # the first round compiles and is not counted
                    for label, (n_threads, floors) in settings.items():
                        threads.PARALLEL_MIN_WORK, threads.PARALLEL_MIN_MEMBERS = floors
                        with river_doebe.num_threads(n_threads):
                            model = make()
                            start = time.perf_counter()
                            evaluate.progressive_val_score(data if rep else data[:50], model,
                                                           metrics.MAE())
                            if rep:
                                best[label] = min(best[label], time.perf_counter() - start)
                rates = {label: len(data) / seconds for label, seconds in best.items()}
                rows.append({"members": M, "features": F, "work": M * F * F,
                             "one_thread_per_s": rates["one"], "all_threads_per_s": rates["all"],
                             "ratio": rates["all"] / rates["one"]})
                print(f"  threshold M={M:>3} F={F:>3} work={M * F * F:>7}: "
                      f"{rates['one']:>8.0f} -> {rates['all']:>8.0f}/s "
                      f"({rates['all'] / rates['one']:.2f}x)", flush=True)
    finally:
        threads.PARALLEL_MIN_WORK, threads.PARALLEL_MIN_MEMBERS = saved
    return rows


# ---------------------------------------------------------------------- the kernel's limit
# A minimal member sweep, written here as a yardstick: the arithmetic of one dynamic member of
# the stack per sample (the owed covariance update fused with the predict sweep, the Gaussian
# gain, the mean step), with no featurisation, no weights, no checks and no Python between the
# samples. It does what ``../shared/probes/member_sweeps.py`` times (its serial variants) and is
# the library's ceiling for the same shape.

@numba.njit
def _limit_step(m, phi, y, mu, S, V, pvec, pc, rw):
    F = mu.shape[1]
    v = V[m]
    vp = pvec[m]
    c = pc[m]
    for i in range(F):
        v[i] = rw * phi[i]
    for j in range(F):
        row = S[m, j]
        pj = phi[j]
        vj = vp[j]
        for i in range(F):
            r = row[i] - (vj * vp[i]) * c
            row[i] = r
            v[i] += r * pj
        row[j] += rw
        v[j] += rw * pj
    s = 0.0
    q = 0.0
    for i in range(F):
        q += phi[i] * v[i]
        s += phi[i] * mu[m, i]
    var = q + 0.25
    g = (y - s) / var
    for i in range(F):
        mu[m, i] += v[i] * g
        vp[i] = v[i]
    pc[m] = 1.0 / var
    return s


@numba.njit
def _limit_per_sample(PhiT, Y, mu, S, V, pvec, pc, rw, out):
    """Sample after sample, every member for each (the per-sample path's order)."""
    for t in range(Y.shape[0]):
        for m in range(mu.shape[0]):
            out[t, m] = _limit_step(m, PhiT[t, m], Y[t], mu, S, V, pvec, pc, rw)


@numba.njit
def _limit_blocked(PhiT, Y, mu, S, V, pvec, pc, rw, out):
    """Member after member, every sample of the block for each (the block path's order)."""
    for m in range(mu.shape[0]):
        for t in range(Y.shape[0]):
            out[t, m] = _limit_step(m, PhiT[t, m], Y[t], mu, S, V, pvec, pc, rw)


def _limit_state(M, F):
    return (np.zeros((M, F)), np.tile(np.eye(F), (M, 1, 1)), np.zeros((M, F)), np.zeros((M, F)),
            np.zeros(M))


def limit_rows(n: int = 2048, repeats: int = 3, members: int = 90, features: int = 100) -> dict:
    """The library's 90-member ensemble per sample and in blocks, on 1 thread, against the
    minimal sweep of the same shape (``members`` dynamic members of ``features`` features) per
    sample and blocked. The four take turns a block of 256 rows at a time (a fresh model and a
    fresh sweep state each run, carried from block to block), so that a change of the machine's
    speed while they run (this shared machine's varies by tens of percent within seconds) hits
    all four alike; each one's time is summed over the run. The fractions are each run's ratio
    of summed times; reported: their median over ``repeats`` runs, and every run's."""
    data = list(Friedman1(n_samples=n, seed=0))
    rng = np.random.default_rng(0)
    PhiT = rng.standard_normal((BLOCK, members, features)) / 10
    Y = rng.standard_normal(BLOCK)
    out = np.zeros((BLOCK, members))
    names = {
        ("library", "sample"): "library, per sample, 1 thread",
        ("library", "block"): "library, blocks, 1 thread",
        ("sweep", "sample"): "minimal sweep, per sample, 1 thread",
        ("sweep", "block"): "minimal sweep, blocked, 1 thread",
    }
    kernels = {"sample": _limit_per_sample, "block": _limit_blocked}

    def one_run() -> tuple[dict, dict]:
        spent = dict.fromkeys(names.values(), 0.0)
        # the same from the second block on: a fresh model's first block holds its start (the
        # RBF networks placing their centres one sample at a time, in blocks too)
        later = dict.fromkeys(names.values(), 0.0)
        models = {path: ensemble_90(0.0) for path in kernels}
        states = {path: _limit_state(members, features) for path in kernels}
        rows = 0
        with river_doebe.num_threads(1):
            for i in range(0, n - BLOCK + 1, BLOCK):
                for path, kernel in kernels.items():
                    start = time.perf_counter()
                    stream(models[path], data[i:i + BLOCK], path)
                    took = time.perf_counter() - start
                    spent[names["library", path]] += took
                    later[names["library", path]] += took if i else 0.0
                    start = time.perf_counter()
                    kernel(PhiT, Y, *states[path], 1e-3, out)
                    took = time.perf_counter() - start
                    spent[names["sweep", path]] += took
                    later[names["sweep", path]] += took if i else 0.0
                rows += BLOCK
        return ({name: rows / t for name, t in spent.items()},
                {name: (rows - BLOCK) / t for name, t in later.items()})

    # compile (not timed)
    _limit_per_sample(PhiT[:2], Y[:2], *_limit_state(members, features), 1e-3, out)
    _limit_blocked(PhiT[:2], Y[:2], *_limit_state(members, features), 1e-3, out)
    with river_doebe.num_threads(1):
        for path in ("sample", "block"):
            stream(ensemble_90(0.0), data[:300], path)
    runs, steady_runs, loads = [], [], [_load()]
    for _ in range(repeats):
        whole, steady = one_run()
        runs.append(whole)
        steady_runs.append(steady)
        loads.append(_load())
    rates = {name: [r[name] for r in runs] for name in names.values()}
    best = {name: max(r) for name, r in rates.items()}

    def ratios(of: list) -> dict:
        return {f"{label}, 1 thread / minimal sweep {sweep}": [
            r[names["library", path]] / r[names["sweep", path]] for r in of]
            for path, label, sweep in (("sample", "per sample", "per sample"),
                                       ("block", "blocks", "blocked"))}

    per_run, steady_per_run = ratios(runs), ratios(steady_runs)
    fractions = {name: float(np.median(v)) for name, v in per_run.items()}
    steady = {name: float(np.median(v)) for name, v in steady_per_run.items()}
    for name, r in rates.items():
        print(f"  limit {name}: {best[name]:,.0f}/s (runs {', '.join(f'{x:,.0f}' for x in r)})",
              flush=True)
    for name, value in fractions.items():
        print(f"  limit fraction {name}: {value:.2f}, median of runs "
              f"{', '.join(f'{v:.2f}' for v in per_run[name])} (target >= 0.75); from the "
              f"second block on {steady[name]:.2f} (runs "
              f"{', '.join(f'{v:.2f}' for v in steady_per_run[name])})", flush=True)
    return {"shape": {"members": members, "features": features, "samples": n},
            "samples_per_second_best": best, "samples_per_second_all": rates,
            "fractions": fractions, "fractions_per_run": per_run,
            "fractions_after_first_block": steady,
            "fractions_after_first_block_per_run": steady_per_run, "loads": loads}


#: what a new user's first ``EDOEBE()`` runs: its warm-up, samples one by one, then blocks
_FIRST_USE = """
import json, sys, time
from numba.core import event
t0 = time.perf_counter()
import river_doebe
from river_doebe import EDOEBE
from river_doebe.datasets import Friedman1
data = list(Friedman1(n_samples=1600, seed=0))
spans, depth, names = [], [0], []

class Listener(event.Listener):
    def on_start(self, ev):
        if depth[0] == 0:
            spans.append([time.perf_counter(), None])
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            names.append(f"{func.__module__}.{func.__qualname__}" if func else "?")
        depth[0] += 1

    def on_end(self, ev):
        depth[0] -= 1
        if depth[0] == 0:
            spans[-1][1] = time.perf_counter()

t1 = time.perf_counter()
with event.install_listener("numba:compile", Listener()):
    model = EDOEBE(seed=0)
    for x, y in data[:1200]:
        model.predict_one(x)
        model.learn_one(x, y)
    for i in range(1200, 1600, 200):
        rows = data[i:i + 200]
        model.predict_learn_many([x for x, _ in rows], [y for _, y in rows])
t2 = time.perf_counter()
tops = sorted(((e - s, n) for (s, e), n in zip(spans, names)), reverse=True)
print(json.dumps({"import_seconds": t1 - t0, "first_use_seconds": t2 - t1,
                  "compile_seconds": sum(e - s for s, e in spans), "compiles": len(spans),
                  "slowest": [[round(d, 3), n] for d, n in tops[:12]]}))
"""


def compile_rows(repeats: int = 1) -> dict:
    """The JIT compile of ``EDOEBE()``'s first use (its warm-up on 1,000 samples, 200 samples
    one by one, two blocks of 200) in a fresh process: on a fresh on-disk cache
    (``NUMBA_CACHE_DIR`` a new empty folder: a new install), again on the cache that run left
    (a second session), and on a fresh cache after ``river-doebe compile`` (what an image or a
    cluster's node built with it starts from; the command's own seconds beside the row).
    ``compile_seconds`` sums Numba's compile events (outermost only)."""
    import tempfile

    rows: dict[str, list[dict]] = {"fresh cache": [], "on-disk cache": [],
                                   "after river-doebe compile": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            env = _cache_env(cache)
            _first_use_row(env, "fresh cache", rows, None)
            _first_use_row(env, "on-disk cache", rows, None)
        with tempfile.TemporaryDirectory() as cache:
            env = _cache_env(cache)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "river_doebe", "compile"], env=env,
                           capture_output=True, text=True, check=True)
            _first_use_row(env, "after river-doebe compile", rows, time.perf_counter() - start)
    best = {label: min(r, key=lambda row: row["compile_seconds"]) for label, r in rows.items()}
    return {"runs": rows, "best": best, "target_fresh_compile_seconds": 6.0}


def _cache_env(cache: str) -> dict:
    """This process' environment with Numba's on-disk cache in ``cache`` and this checkout
    first on the path."""
    return dict(os.environ, NUMBA_CACHE_DIR=cache,
                PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))


def _first_use_row(env: dict, label: str, rows: dict, ahead: float | None) -> None:
    """One first use in a new process (``_FIRST_USE``), appended to ``rows[label]``; ``ahead``:
    the seconds ``river-doebe compile`` took before it, if it ran."""
    load = _load()
    done = subprocess.run([sys.executable, "-c", _FIRST_USE], env=env,
                          capture_output=True, text=True, check=True)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["load"] = load
    if ahead is not None:
        row["compile_command_seconds"] = ahead
    rows[label].append(row)
    print(f"  first use, {label}: compile {row['compile_seconds']:.1f} s in "
          f"{row['compiles']} compiles, first use {row['first_use_seconds']:.1f} s, "
          f"import {row['import_seconds']:.1f} s (load {load[0]:.1f})"
          + ("" if ahead is None else f"; the command took {ahead:.0f} s"),
          flush=True)


#: the busy processes' own deadline (s): they end then even if this script is killed
HOG_DEADLINE = 3600
_HOG = "import time\nend = time.monotonic() + {deadline}\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def busy_machine(n: int = 2, deadline: float = HOG_DEADLINE):
    """``n`` CPU-bound processes of another program (a Python busy loop each) beside this one,
    for the ``with`` block; ended when it ends, whatever ends it (an error, Ctrl-C), and ending
    by themselves after ``deadline`` seconds should this process die first."""
    hogs = []
    try:
        for _ in range(n):
            hogs.append(subprocess.Popen([sys.executable, "-c", _HOG.format(deadline=deadline)],
                                         stdin=subprocess.DEVNULL))
        time.sleep(1.0)  # let them take their share before anything is timed
        yield hogs
    finally:
        for hog in hogs:
            hog.terminate()
        for hog in hogs:
            try:
                hog.wait(timeout=10)
            except subprocess.TimeoutExpired:
                hog.kill()
                hog.wait()


#: samples (per sample) or blocks (block path) a model runs before the other takes its turn
SEGMENT = {"sample": 200, "block": 1}


def _close_call(model) -> None:
    """End the timing of the model's last call at the end of its segment (else its stack
    would count the other model's segment as part of that call)."""
    engine = getattr(model, "_engine", None)
    if engine is not None and hasattr(engine, "_pace"):
        engine._pace.stop()


def _rate_pairs(runs: dict, repeats: int, machine: str = "busy") -> dict:
    """Each run of ``runs`` (``name: (make, path, data)``) on 1 thread and with the default
    threads, side by side: two fresh models take turns on the stream, a segment each
    (:data:`SEGMENT`; which one goes first alternates), so that both meet the same machine,
    whose speed beside busy processes changes from one second to the next. The ratio is of the
    two models' total times over ``repeats`` such runs."""
    rows = {}
    for _ in range(repeats):
        for name, (make, path, data) in runs.items():
            models = {"1 thread": (make(), 1), "default threads": (make(), ALL)}
            seconds = dict.fromkeys(models, 0.0)
            step = SEGMENT[path] * (1 if path == "sample" else BLOCK)
            for k, i in enumerate(range(0, len(data), step)):
                segment = data[i:i + step]
                order = list(models) if k % 2 == 0 else list(models)[::-1]
                for label in order:
                    model, n_threads = models[label]
                    with river_doebe.num_threads(n_threads):
                        start = time.perf_counter()
                        stream(model, segment, path)
                        seconds[label] += time.perf_counter() - start
                        _close_call(model)
            row = rows.setdefault(name, {"path": path, "samples": len(data),
                                         "segment": step})
            for label, (model, _) in models.items():
                entry = row.setdefault(label, {"seconds_all": [], "parallel_share_all": []})
                entry["seconds_all"].append(seconds[label])
                entry["parallel_share_all"].append(_merge_share(parallel_share(model, path)))
            print(f"  {machine} {name}: " + ", ".join(
                f"{label} {len(data) / seconds[label]:.0f}/s" for label in models)
                + f" (load {_load()[0]:.1f})", flush=True)
    for row in rows.values():
        for label in ("1 thread", "default threads"):
            entry = row[label]
            entry["seconds_total"] = sum(entry["seconds_all"])
            entry["samples_per_second"] = row["samples"] * repeats / entry["seconds_total"]
        row["default / 1 thread"] = (row["1 thread"]["seconds_total"]
                                     / row["default threads"]["seconds_total"])
    return rows


def _compile_runs(runs: dict) -> None:
    """Compile every kernel of ``runs`` (both twins), untimed."""
    for make, path, rows in runs.values():
        for n_threads in (1, FORCED):
            with river_doebe.num_threads(n_threads):
                stream(make(), rows[:2 * BLOCK], path)


def quiet_pair_rows(n: int, repeats: int) -> dict:
    """The 90-member ensemble's default threads against one thread on the machine as it is,
    measured as the busy rows are (:func:`_rate_pairs`: two models take turns on the stream, so
    that a drift of the machine's speed meets both); a steadier ratio than the best-of rows'."""
    data = list(Friedman1(n_samples=n, seed=0))
    runs = {
        "E-DOEBE, 90 members x 100 features (no floor: all live), per sample":
            (lambda: ensemble_90(0.0), "sample", data),
        "E-DOEBE, 90 members x 100 features (no floor: all live), blocks":
            (lambda: ensemble_90(0.0), "block", data),
    }
    _compile_runs(runs)
    load_before = _load()
    started = datetime.datetime.now().isoformat(timespec="seconds")
    rows = _rate_pairs(runs, repeats, machine="quiet")
    return {"started": started, "samples": n, "load_at_start": load_before,
            "load_at_end": _load(), "rows": rows}


def busy_rows(n: int, repeats: int) -> dict:
    """The ``busy`` rows (see the module docstring)."""
    data = list(Friedman1(n_samples=1000 + n, seed=0))
    with river_doebe.num_threads(1):
        fitted = EDOEBE(seed=0)
        stream(fitted, data[:1000], "sample")  # the warm-up, once, before the busy processes
    blob = pickle.dumps(fitted)
    runs = {
        "E-DOEBE, 90 members x 100 features (no floor: all live), per sample":
            (lambda: ensemble_90(0.0), "sample", data[1000:]),
        "E-DOEBE, 90 members x 100 features (no floor: all live), blocks":
            (lambda: ensemble_90(0.0), "block", data[1000:]),
        "EDOEBE() after its warm-up, per sample": (lambda: pickle.loads(blob), "sample",
                                                   data[1000:]),
        "EDOEBE() after its warm-up, blocks": (lambda: pickle.loads(blob), "block", data[1000:]),
    }
    _compile_runs(runs)
    load_before = _load()
    started = datetime.datetime.now().isoformat(timespec="seconds")
    with busy_machine(2) as hogs:
        load_with = _load()
        rows = _rate_pairs(runs, repeats)
        warmup = time_warmups(repeats)
        load_after = _load()
        ended_alive = sum(h.poll() is None for h in hogs)
    warmup["ratio_parallel_to_serial"] = (warmup["parallel"]["seconds_best"]
                                          / warmup["serial"]["seconds_best"])
    return {
        "busy_processes": 2,
        "busy_program": "python busy loop (one process each)",
        "busy_processes_alive_at_end": ended_alive,
        "started": started,
        "samples_after_warmup": n,
        "load_before_busy_processes": load_before,
        "load_once_started": load_with,
        "load_at_end": load_after,
        "rows": rows,
        "warmup": warmup,
    }


def as_a_later_session() -> None:
    """The rows time a session whose kernels are compiled (from the second session on they come
    from the on-disk cache): what this process compiles (a first run after a change) is not left
    for its serial calls to pay for before the stacks time their threads
    (``threads.threads_ready``), and the rented kernels (the recalibration's update, the
    weights, a sample's standardisation, the block kernels) run compiled from the start. The
    ``first_use`` rows measure a fresh install's first use."""
    from river_doebe.conf import recalibrated  # noqa: F401 - (its rented update, to buy)
    from river_doebe.kernels.jit import buy_all

    threads._ready[0] = True
    buy_all()


def _load():
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="stream length")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "throughput.json")
    parser.add_argument("--no-threshold", action="store_true",
                        help="skip the parallel-threshold rows")
    parser.add_argument("--no-busy", action="store_true", help="skip the busy-machine rows")
    parser.add_argument("--only-busy", action="store_true",
                        help="measure the busy-machine rows only, into an existing --out file")
    parser.add_argument("--busy-n", type=int, default=4000,
                        help="samples after the warm-up in the busy rows")
    parser.add_argument("--only-limit", action="store_true",
                        help="measure the kernel's-limit and first-use compile rows only, into "
                             "--out (its other rows kept when it exists)")
    parser.add_argument("--no-limit", action="store_true",
                        help="skip the kernel's-limit and first-use compile rows")
    parser.add_argument("--limit-n", type=int, default=2048,
                        help="samples of the kernel's-limit rows")
    parser.add_argument("--only-quiet-pairs", action="store_true",
                        help="measure the 90-member rows as the busy rows are (paired), without "
                             "the busy processes, into --out (its other rows kept)")
    parser.add_argument("--rows", nargs="+", metavar="TEXT",
                        help="measure only the per-sample and block rows whose name contains one "
                             "of these texts (and river's BLR, the reference), print them and "
                             "write nothing (e.g. --rows DOBE,)")
    args = parser.parse_args(argv)
    as_a_later_session()

    if args.rows:
        return some_rows(args.rows, args.n, args.repeats)

    if args.only_limit:
        payload = json.loads(args.out.read_text()) if args.out.exists() else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            payload["limit"] = limit_rows(args.limit_n, args.repeats)
            payload["limit"]["measured"] = datetime.datetime.now().isoformat(timespec="seconds")
            payload["first_use"] = compile_rows()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=2))
        print(f"wrote the kernel's-limit and first-use rows into {args.out}")
        return payload

    if args.only_quiet_pairs:
        payload = json.loads(args.out.read_text()) if args.out.exists() else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            payload["quiet_pairs"] = quiet_pair_rows(args.busy_n, args.repeats)
        payload["quiet_pairs"]["gomp_spincount"] = os.environ.get("GOMP_SPINCOUNT")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=2))
        for name, row in payload["quiet_pairs"]["rows"].items():
            print(f"  {name}: default / 1 thread {row['default / 1 thread']:.2f}x")
        print(f"wrote the quiet paired rows into {args.out}")
        return payload

    if args.only_busy:
        payload = json.loads(args.out.read_text())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            payload["busy"] = busy_rows(args.busy_n, args.repeats)
        payload["busy"]["threading_layer"] = _threading_layer()
        payload["busy"]["gomp_spincount"] = os.environ.get("GOMP_SPINCOUNT")
        _print_busy(payload["busy"])
        args.out.write_text(json.dumps(payload, indent=2))
        print(f"wrote the busy rows into {args.out}")
        return payload

    load_start = _load()
    data = list(Friedman1(n_samples=args.n, seed=0))
    warm = data[:300]
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # warm-up diagnostics
        models = candidates()
        for make, path, n_threads in models.values():
            with river_doebe.num_threads(n_threads):
                stream(make(), warm, path)  # compile, fill caches
        # the repeats go round the models (the machine's speed drifts): best of each
        for _ in range(args.repeats):
            for name, (make, path, n_threads) in models.items():
                with river_doebe.num_threads(n_threads):
                    row = run_one(make, data, 1, path)
                    row["path"], row["threads"] = path, river_doebe.get_num_threads()
                if name not in results or row["seconds"] < results[name]["seconds"]:
                    results[name] = row
        for name, row in results.items():
            print(f"  {name}: {row['samples_per_second']:.0f}/s", flush=True)
        # round the drop-in models too, best of the repeats (by their time after the warm-up)
        for _ in range(args.repeats):
            for model, make in DROP_INS.items():
                for path in ("sample", "block"):
                    name = drop_in_name(model, args.n, path)
                    row = drop_in(data, path, make=make)
                    row["path"], row["threads"] = path, river_doebe.get_num_threads()
                    if name not in results or row["seconds"] < results[name]["seconds"]:
                        results[name] = row
        warmup = time_warmups(args.repeats)
        warmup["ratio_parallel_to_serial"] = (warmup["parallel"]["seconds_best"]
                                              / warmup["serial"]["seconds_best"])
        crossover = [] if args.no_threshold else threshold(data[:6000])
        limit = None if args.no_limit else limit_rows(args.limit_n, args.repeats)
        first_use = None if args.no_limit else compile_rows()
        load_quiet_end = _load()
        busy = None if args.no_busy else busy_rows(args.busy_n, args.repeats)

    ref = results["river BayesianLinearRegression"]["samples_per_second"]
    for r in results.values():
        r["speed_ratio_vs_river_blr"] = r["samples_per_second"] / ref
    e90 = "E-DOEBE, 90 members x 100 features (no floor: all live)"
    one = results[f"{e90}, per sample, 1 thread"]["samples_per_second"]
    ratios = {
        "90 members per sample, all threads / 1 thread":
            results[f"{e90}, per sample, all threads"]["samples_per_second"] / one,
        "90 members in blocks, all threads / per sample 1 thread":
            results[f"{e90}, blocks, all threads"]["samples_per_second"] / one,
        "90 members in blocks, 1 thread / per sample 1 thread":
            results[f"{e90}, blocks, 1 thread"]["samples_per_second"] / one,
        "90 members per sample, threads forced / 1 thread":
            results[f"{e90}, per sample, threads forced"]["samples_per_second"] / one,
        "90 members in blocks, threads forced / per sample 1 thread":
            results[f"{e90}, blocks, threads forced"]["samples_per_second"] / one,
        "DOBE / river BLR": results["DOBE, 100 RFF features"]["speed_ratio_vs_river_blr"],
        "EDOEBE() blocks / per sample (after the warm-up)":
            results[drop_in_name("EDOEBE()", args.n, "block")]["samples_per_second"]
            / results[drop_in_name("EDOEBE()", args.n, "sample")]["samples_per_second"],
        "EDOEBE() stacking time / model averaging time, per sample (after the warm-up)":
            results[drop_in_name("EDOEBE()", args.n, "sample")]["samples_per_second"]
            / results[drop_in_name(STACKING, args.n, "sample")]["samples_per_second"],
        "EDOEBE() stacking time / model averaging time, blocks (after the warm-up)":
            results[drop_in_name("EDOEBE()", args.n, "block")]["samples_per_second"]
            / results[drop_in_name(STACKING, args.n, "block")]["samples_per_second"],
        "warm-up parallel / serial": warmup["ratio_parallel_to_serial"],
    }

    width = max(map(len, results))
    print(f"{'model':<{width}}  {'samples/s':>10}  {'ratio':>6}  {'MAE':>6}  state KiB half->end")
    for name, r in results.items():
        print(
            f"{name:<{width}}  {r['samples_per_second']:>10.0f}  "
            f"{r['speed_ratio_vs_river_blr']:>6.2f}  {r['mae_second_half']:>6.3f}  "
            f"{r['state_bytes_half'] / 1024:.0f} -> {r['state_bytes_end'] / 1024:.0f}"
        )
    for kind in ("serial", "parallel"):
        w = warmup[kind]
        print(f"EDOEBE() warm-up on {w['samples']} x {w['inputs']}, {kind} ({w['threads']} "
              f"thread(s)): {w['seconds_best']:.1f} s ({w['members']} members)")
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}")
    if busy is not None:
        _print_busy(busy)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "stream": f"Friedman #1, {args.n} samples, 10 features",
        "machine": {
            "python": platform.python_version(),
            "processor": platform.processor(),
            "cores": os.cpu_count(),
            "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(),
            "numba_threads": numba.config.NUMBA_NUM_THREADS,
            "numba_threading_layer": _threading_layer(),
            "gomp_spincount": os.environ.get("GOMP_SPINCOUNT"),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        },
        "measured": datetime.datetime.now().isoformat(timespec="seconds"),
        "load_at_start": load_start,
        "load_at_end_of_quiet_rows": load_quiet_end,
        "threads_all": river_doebe_threads(ALL),
        "parallel_min_work": threads.PARALLEL_MIN_WORK,
        "parallel_min_members": threads.PARALLEL_MIN_MEMBERS,
        "block_rows": BLOCK,
        "repeats": args.repeats,
        "results": results,
        "ratios": ratios,
        "warmup": warmup,
        "threshold": crossover,
        "limit": limit,
        "first_use": first_use,
        "busy": busy,
    }
    args.out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {args.out}")
    return payload


def some_rows(texts: list[str], n: int, repeats: int) -> dict:
    """The rows of :func:`candidates` whose name contains one of ``texts``, beside river's BLR,
    measured as the full run measures them (interleaved, best of ``repeats``); printed only."""
    load_start = _load()
    data = list(Friedman1(n_samples=n, seed=0))
    models = {name: row for name, row in candidates().items()
              if name == "river BayesianLinearRegression" or any(t in name for t in texts)}
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for make, path, n_threads in models.values():
            with river_doebe.num_threads(n_threads):
                stream(make(), data[:300], path)  # compile, fill caches
        for _ in range(repeats):
            for name, (make, path, n_threads) in models.items():
                with river_doebe.num_threads(n_threads):
                    row = run_one(make, data, 1, path)
                if name not in results or row["seconds"] < results[name]["seconds"]:
                    results[name] = row
    ref = results["river BayesianLinearRegression"]["samples_per_second"]
    for name, r in results.items():
        r["speed_ratio_vs_river_blr"] = r["samples_per_second"] / ref
        print(f"  {name}: {r['samples_per_second']:.0f}/s ({r['seconds']:.3f} s, "
              f"{r['speed_ratio_vs_river_blr']:.2f}x river BLR)", flush=True)
    print(f"  load at start {load_start}, at end {_load()}")
    return results


def _print_busy(busy: dict) -> None:
    print(f"busy machine (2 busy processes beside it; load before them "
          f"{busy['load_before_busy_processes']}, at the end {busy['load_at_end']}):")
    for name, row in busy["rows"].items():
        print(f"  {name}: 1 thread {row['1 thread']['samples_per_second']:.0f}/s, default "
              f"{row['default threads']['samples_per_second']:.0f}/s "
              f"({row['default / 1 thread']:.2f}x)")
    w = busy["warmup"]
    print(f"  warm-up: 1 thread {w['serial']['seconds_best']:.1f} s, all "
          f"{w['parallel']['seconds_best']:.1f} s ({w['ratio_parallel_to_serial']:.2f}x)")


def _threading_layer() -> str:
    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel has run
        return "not started"


if __name__ == "__main__":
    main()
