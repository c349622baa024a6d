"""What a kernel call costs in Numba's dispatcher, by the form of the stack's records.

The per-sample step of a stack is two kernel calls (the predict sweep and the update), each
taking the member stack's parameters and state (``river_doebe.kernels.stack.Params``,
``State``). This script replays a stream's per-sample kernel pair on the state of a fitted
model, in one process, with the records passed as the engine passes them (plain tuples of their
fields, named on entry by the kernel) and as the named tuples themselves (the same kernels, a
second specialisation), rounds interleaved, best of ``--repeats``; it checks that both end bit
for bit alike, and it times a bare call of a trivial kernel in each form (arrays one by one,
plain tuples, named tuples) to isolate the dispatcher. Writes JSON (default
``benchmarks/results/dispatch.json``) with the load before and after.

    python benchmarks/dispatch.py [--model dobe|edoebe] [--n 2000] [--repeats 5] [--out FILE]

``dobe``: ``DOBE`` with 100 random Fourier features (one member: the dispatch is a large share
of its step); ``edoebe``: ``EDOEBE()`` after its warm-up, the samples before its first
compaction (its stack keeps its size). Friedman #1 (``river_doebe.datasets.Friedman1``), one
thread.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pickle
import time
from collections import namedtuple

import numba
import numpy as np
from _common import HERE

import river_doebe
from river_doebe import DOBE, EDOEBE
from river_doebe.basis import RandomFourierFeatures
from river_doebe.datasets import Friedman1
from river_doebe.kernels.gaussian import gaussian_update
from river_doebe.kernels.stack import predict_stack

N_WARMUP = 1000


def fitted(model: str, n: int):
    """The model after ``N_WARMUP`` samples (pickled), and the features and targets its engine
    meets in the next ``n`` samples while its stack keeps its size."""
    data = list(Friedman1(n_samples=N_WARMUP + n, seed=0))
    make = {
        "dobe": lambda: DOBE(RandomFourierFeatures(50, lengthscale=0.5, seed=0), var_eps=0.1,
                             var_rw=1e-4),
        "edoebe": lambda: EDOEBE(seed=0),
    }[model]
    with river_doebe.num_threads(1):
        m = make()
        for x, y in data[:N_WARMUP]:
            m.predict_one(x)
            m.learn_one(x, y)
        blob = pickle.dumps(m)
        replay = pickle.loads(blob)
        engine = replay._engine
        size = engine.M
        phis, ys = [], []
        predict_extra, update = engine._predict_extra, engine._update_members

        def capture_features():
            phis.append(engine.Phi.copy() if engine.M == size else None)
            predict_extra()

        def capture_target(y):
            ys.append(float(y))
            return update(y)

        engine._predict_extra, engine._update_members = capture_features, capture_target
        for x, y in data[N_WARMUP:]:
            replay.predict_one(x)
            replay.learn_one(x, y)
    n_same = next((i for i, p in enumerate(phis) if p is None), len(phis))
    return blob, phis[:n_same], ys[:n_same]


def replay_pair(engine, phis, ys, named: bool) -> float:
    """The per-sample kernel pair over the captured samples; its wall time."""
    p, s = (engine.params, engine.state) if named else (engine._kernel_params,
                                                         engine._kernel_state)
    V, E, mean, var = engine.V, engine.E, engine.mean, engine.var
    status, loglik, order, src = engine.status, engine.loglik, engine.order, engine.src
    start = time.perf_counter()
    for phi, y in zip(phis, ys, strict=True):
        if predict_stack(order, phi, src, p, s, V, E, mean, var, status, None):
            raise RuntimeError("a member refused a replayed sample")
        if gaussian_update(p, s, V, mean, var, y, loglik):
            raise RuntimeError("a member refused a replayed target")
    return time.perf_counter() - start


def bare_calls(repeats: int, calls: int = 100_000) -> dict:
    """ns per call of a trivial kernel taking a 1-member stack's 12 arrays and one more array:
    one by one, as two plain tuples, as two named tuples."""
    P = namedtuple("P", ("F", "static", "var_rw", "var_theta", "var_eps"))
    S = namedtuple("S", ("mu", "C", "pvec", "alpha0", "pg", "pend", "n_filtered"))
    p = P(np.full(1, 100), np.zeros(1, bool), np.ones(1), np.ones(1), np.ones(1))
    s = S(np.zeros((1, 100)), np.zeros((1, 100, 100)), np.zeros((1, 100)), np.zeros(1),
          np.zeros(1), np.zeros(1, bool), np.zeros(1, np.int64))
    V = np.zeros((1, 100))

    @numba.njit
    def flat(F, static, var_rw, var_theta, var_eps, mu, C, pvec, alpha0, pg, pend, nf, V):
        return F[0] + mu.shape[0]

    @numba.njit
    def records(p, s, V):
        return p[0][0] + s[0].shape[0]

    pt, st = tuple(p), tuple(s)
    forms = {
        "arrays one by one": lambda: flat(*pt, *st, V),
        "plain tuples": lambda: records(pt, st, V),
        "named tuples": lambda: records(p, s, V),
    }
    best = dict.fromkeys(forms, np.inf)
    for fn in forms.values():
        fn()  # compile
    for _ in range(repeats):
        for name, fn in forms.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / calls * 1e9)
    return {name: round(v, 1) for name, v in best.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("dobe", "edoebe"), default="dobe")
    parser.add_argument("--n", type=int, default=2000, help="samples replayed (at most)")
    parser.add_argument("--repeats", type=int, default=5, help="best of this many rounds")
    parser.add_argument("--out", default=str(HERE / "results" / "dispatch.json"))
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    blob, phis, ys = fitted(args.model, args.n)
    best = {"plain tuples (as the engine calls)": np.inf, "named tuples": np.inf}
    ends = {}
    for r in range(args.repeats + 1):  # the first round compiles
        for name in best:
            engine = pickle.loads(blob)._engine
            elapsed = replay_pair(engine, phis, ys, named=name == "named tuples")
            if r:
                best[name] = min(best[name], elapsed)
            ends[name] = [a.copy() for a in engine.state] + [engine.mean.copy()]
    same = all(np.array_equal(a, b) for a, b in zip(*ends.values(), strict=True))
    rows = {name: round(t / len(ys) * 1e6, 2) for name, t in best.items()}
    result = {
        "measured": datetime.datetime.now().isoformat(timespec="seconds"),
        "model": args.model,
        "samples": len(ys),
        "members": int(pickle.loads(blob)._engine.M),
        "repeats": args.repeats,
        "us_per_sample_kernel_pair": rows,
        "bit_identical": same,
        "ns_per_bare_call": bare_calls(args.repeats),
        "numba": numba.__version__,
        "load_start": load_start,
        "load_end": os.getloadavg(),
    }
    print(json.dumps(result, indent=2))
    if not same:
        raise SystemExit("the two call forms did not end bit for bit alike")
    out = json.loads(open(args.out).read()) if os.path.exists(args.out) else {}
    out[args.model] = result
    with open(args.out, "w") as f:
        f.write(json.dumps(out, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
