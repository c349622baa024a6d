"""A noise level that moves after the warm-up: ``EDOEBE()`` against
``EDOEBE(noise_levels=(1, 10, 100))``, and river's ``HoeffdingAdaptiveTreeRegressor`` beside them.

Two experiments (``--experiments``, default both):

- ``events``: ``y = f(a, b) + noise``, ``f = sin(6a) + b`` (``a``, ``b`` uniform), ``--n`` samples
  (6,000), the noise's deviation 0.1 or 1 before sample ``n // 3`` and after it: ``low`` (0.1
  throughout), ``high`` (1 throughout), ``rise`` (0.1, then 1) and ``fall`` (1, then 0.1). The
  E-DOEBEs warm up on the first 1,000 samples. Per model and stream: the mean distance of the
  one-step-ahead predictions to ``f`` (what the noise hides) from sample ``n // 2`` on, and the
  seconds.
- ``streams``: the streams present of the paper's protocol (``peers.py``'s), ``EDOEBE(seed=0)``
  with and without the noise levels: nMSE, MAE and seconds.

    python benchmarks/noise_levels.py                    # a few minutes
    python benchmarks/noise_levels.py --quick --out /tmp/noise

Writes ``noise_levels.json`` and ``noise_levels.md`` to ``--out`` (default
``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _common import HERE, default_data_dir, paper_stream, predict_then_learn
from river import tree

from river_doebe import EDOEBE, datasets

LEVELS = (1.0, 10.0, 100.0)
#: the noise's deviation before and after the change, per stream of ``events``
EVENTS = {"low": (0.1, 0.1), "high": (1.0, 1.0), "rise": (0.1, 1.0), "fall": (1.0, 0.1)}


def event_stream(event: str, n: int, seed: int = 0) -> list:
    before, after = EVENTS[event]
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        a, b = float(rng.uniform()), float(rng.uniform())
        f = math.sin(6.0 * a) + b
        noise = (before if t < n // 3 else after) * float(rng.normal())
        out.append(({"a": a, "b": b}, f + noise, f))
    return out


def event_models(n_warmup: int) -> dict:
    return {
        "EDOEBE()": lambda: EDOEBE(n_warmup=n_warmup, seed=0),
        "EDOEBE(noise_levels=(1, 10, 100))": lambda: EDOEBE(n_warmup=n_warmup, seed=0,
                                                             noise_levels=LEVELS),
        "HoeffdingAdaptiveTreeRegressor": lambda: tree.HoeffdingAdaptiveTreeRegressor(seed=0),
    }


def run_events(n: int, n_warmup: int) -> list:
    rows = []
    for event in EVENTS:
        data = event_stream(event, n)
        for name, make in event_models(n_warmup).items():
            model = make()
            distance = np.empty(n)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                for t, (x, y, f) in enumerate(data):
                    distance[t] = abs(f - model.predict_one(x))
                    model.learn_one(x, y)
            row = {"event": event, "model": name, "seconds": time.perf_counter() - t0,
                   "distance_to_f": float(distance[n // 2:].mean())}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def run_streams(data_dir, cap: int | None, n_warmup: int) -> list:
    rows = []
    for name in ("drift", "static_then_drift", *datasets.PAPER_NAMES):
        data = paper_stream(name, data_dir, cap, n_warmup)
        if data is None:
            print(f"{name}: not in the data folder, skipped", flush=True)
            continue
        xs, ys = data
        for levels in ((1.0,), LEVELS):
            model = EDOEBE(n_warmup=n_warmup, seed=0, noise_levels=levels)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                predict_then_learn(model, xs[:n_warmup], ys[:n_warmup])
                t0 = time.perf_counter()
                preds = np.array(predict_then_learn(model, xs[n_warmup:], ys[n_warmup:]))
            target = np.array(ys[n_warmup:])
            err = target - preds
            row = {"stream": name, "noise_levels": list(levels), "samples": len(target),
                   "nmse": float(np.mean(err**2) / np.var(target)),
                   "mae": float(np.mean(np.abs(err))), "seconds": time.perf_counter() - t0}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def markdown(results: dict) -> str:
    lines = ["# A noise level that moves after the warm-up", "",
             f"`python benchmarks/noise_levels.py {results['args']}` (load "
             f"{results['load']:.1f} at the start).", ""]
    if results.get("events"):
        lines += [f"Mean distance of the predictions to the noiseless function from sample "
                  f"{results['n'] // 2} on (the noise moves at {results['n'] // 3}), and seconds:",
                  "", "| stream | model | distance | seconds |", "| --- | --- | ---: | ---: |"]
        for r in results["events"]:
            lines.append(f"| {r['event']} | {r['model']} | {r['distance_to_f']:.4g} | "
                         f"{r['seconds']:.1f} |")
        lines.append("")
    if results.get("streams"):
        lines += ["The paper's protocol (peers.py's), `EDOEBE(seed=0)`:", "",
                  "| stream | noise_levels | samples | nMSE | MAE | seconds |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for r in results["streams"]:
            levels = ", ".join(f"{v:g}" for v in r["noise_levels"])
            lines.append(f"| {r['stream']} | ({levels}) | {r['samples']} | {r['nmse']:.5g} | "
                         f"{r['mae']:.5g} | {r['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="+", choices=("events", "streams"),
                        default=["events", "streams"])
    parser.add_argument("--n", type=int, default=6000, help="length of the events' streams")
    parser.add_argument("--quick", action="store_true",
                        help="short streams and warm-ups: checks the script, rough numbers")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    n, n_warmup, cap = (900, 200, 1500) if args.quick else (args.n, 1000, None)
    results: dict = {"args": " ".join(argv if argv is not None else sys.argv[1:]), "n": n,
                     "n_warmup": n_warmup, "noise_levels": list(LEVELS),
                     "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0}
    if "events" in args.experiments:
        results["events"] = run_events(n, n_warmup)
    if "streams" in args.experiments:
        results["streams"] = run_streams(default_data_dir(args.data_dir), cap, n_warmup)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "noise_levels.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "noise_levels.md").write_text(markdown(results))
    return results


if __name__ == "__main__":
    main()
