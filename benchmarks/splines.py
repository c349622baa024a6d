"""The cost of adding the P-spline family to the E-DOEBE: ``EDOEBE()`` against
``EDOEBE(families=("hsgp", "rff", "rbf", "bspline"))``, on the paper's streams that are present.

Each model is the library's own, from raw dicts (it standardises on its warm-up window and fits
its families there): the first ``--n-samples`` rows of each stream (1,000 of them the warm-up)
are predicted then learnt in blocks of 256 rows, strictly one step ahead. The two models run
interleaved, ``--repeats`` times each (the machine's speed drifts, and other processes share
it), and each keeps its best time; the figure is the ratio of the best times, measured in the
same process. The nMSE and PLL (of the model's own predictive, the mixture) of the streamed rows
are those of the last run (the same in every run: the seed is fixed). Whether the splines *help*
is the business of ``reproduce.py --experiments exp3`` (full streams, 3 trials); this measures
what they cost.

    python benchmarks/splines.py --repeats 3

Writes ``benchmarks/results/splines.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

import numpy as np
from _common import HERE, default_data_dir, predict_then_learn

from river_doebe import EDOEBE, datasets
from river_doebe.utils import json_safe
from river_doebe.warmup import DEFAULT_FAMILIES

MODELS = {
    "EDOEBE()": lambda: EDOEBE(seed=0),
    "EDOEBE(+bspline)": lambda: EDOEBE(families=(*DEFAULT_FAMILIES, "bspline"), seed=0),
}
N_WARMUP = 1000


def run(make, xs, ys) -> dict:
    model = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        start = time.perf_counter()
        predict_then_learn(model, xs[:N_WARMUP], ys[:N_WARMUP])  # the warm-up, fit included
        warm = time.perf_counter()
        dists = []
        for i in range(N_WARMUP, len(xs), 256):
            dists.extend(model.predict_learn_many(xs[i:i + 256], ys[i:i + 256], with_dist=True))
        end = time.perf_counter()
    y = np.asarray(ys[N_WARMUP:])
    mu = np.array([d.mu for d in dists])
    logpdf = np.array([d.log_pdf(t) for d, t in zip(dists, y, strict=True)])
    scale = float(np.std(ys[:N_WARMUP]))
    return {
        "warmup_s": warm - start,
        "stream_s": end - warm,
        "total_s": end - start,
        "members": len(model._engine.members),
        "nmse": float(np.mean((y - mu) ** 2) / np.var(y)),
        # in the units of the warm-up-standardised target, as the paper's PLL
        "pll": float(np.mean(logpdf) + math.log(scale)),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="best of this many runs per model")
    p.add_argument("--n-samples", type=int, default=6000, help="rows of each stream")
    p.add_argument("--streams", nargs="+", default=list(datasets.PAPER_NAMES))
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", default=str(HERE / "results" / "splines.json"))
    args = p.parse_args(argv)
    data_dir = default_data_dir(args.data_dir)
    out = {"n_samples": args.n_samples, "n_warmup": N_WARMUP, "repeats": args.repeats,
           "streams": {}, "skipped": {}}
    for name in args.streams:
        try:
            rows = list(datasets.load(name, data_dir))[: args.n_samples]
        except (FileNotFoundError, ValueError) as err:
            out["skipped"][name] = str(err).splitlines()[0]
            continue
        xs, ys = [x for x, _ in rows], [float(y) for _, y in rows]
        if not out["streams"]:  # compile (or load) every kernel before anything is timed
            for make in MODELS.values():
                run(make, xs[:N_WARMUP + 300], ys[:N_WARMUP + 300])
        best = {label: None for label in MODELS}
        for _ in range(args.repeats):
            for label, make in MODELS.items():  # interleaved
                r = run(make, xs, ys)
                if best[label] is None:
                    best[label] = {**r, "total_s_all": []}
                keep = best[label]
                keep["total_s_all"].append(r["total_s"])
                for key in ("warmup_s", "stream_s", "total_s"):
                    keep[key] = min(keep[key], r[key])
                keep.update({k: r[k] for k in ("nmse", "pll", "members")})
        a, b = best["EDOEBE()"], best["EDOEBE(+bspline)"]
        entry = {"models": best, "ratio_total": b["total_s"] / a["total_s"],
                 "ratio_warmup": b["warmup_s"] / a["warmup_s"],
                 "ratio_stream": b["stream_s"] / a["stream_s"]}
        out["streams"][name] = entry
        print(f"{name:<10} total {a['total_s']:6.1f} s -> {b['total_s']:6.1f} s "
              f"({entry['ratio_total']:.2f}x; warm-up {entry['ratio_warmup']:.2f}x, stream "
              f"{entry['ratio_stream']:.2f}x); nMSE {a['nmse']:.3g} -> {b['nmse']:.3g}, "
              f"PLL {a['pll']:.3f} -> {b['pll']:.3f}", flush=True)
    with open(args.out, "w") as f:
        f.write(json.dumps(json_safe(out), indent=1) + "\n")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
