"""An isolated outlier against a stream that moved: ``EDOEBE()`` with and without its
``outlier_gate``, and river's models beside it.

Two experiments (``--experiments``, default both):

- ``events``: ``y = sin(6a) + b + 0.1 noise`` (``a``, ``b`` uniform), ``--n`` samples (4,000), and
  at sample ``n // 2`` one event: none (``clean``), one target of 1e6 (``spike``: a sensor spike,
  a typing error), two such targets in a row (``burst``), one input of 1e6 (``input glitch``), or
  the target's level moving up by 5 for good (``shift``). Models: ``EDOEBE()``,
  ``EDOEBE(outlier_gate=8)``, river's ``BayesianLinearRegression`` behind a ``StandardScaler``
  and ``HoeffdingAdaptiveTreeRegressor``. Per model and event: the MAE over samples 1,000 to the
  event, and over the segments after it (``+1..+50``, ``+50..+200``, ``+200..+500``, ``+500..``),
  and the targets the gate kept out.
- ``streams``: the streams present of the paper's protocol (``peers.py``'s: ``X`` and ``y``
  standardised with the first 1,000 samples, on which the model warms up; the rest one step
  ahead, in blocks of 256 rows, the same predictions as one by one): ``EDOEBE(seed=0)`` and
  ``EDOEBE(seed=0, outlier_gate=8)``, their nMSE and MAE and the targets kept out.

    python benchmarks/outliers.py                    # a few minutes
    python benchmarks/outliers.py --quick --out /tmp/outliers

Writes ``outliers.json`` and ``outliers.md`` to ``--out`` (default ``benchmarks/results/``).
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
from river import linear_model, preprocessing, tree

from river_doebe import EDOEBE, datasets

EVENTS = ("clean", "spike", "burst", "input glitch", "shift")
GATE = 8.0


def event_stream(event: str, n: int, seed: int = 0) -> list:
    """The ``events`` stream with ``event`` at sample ``n // 2``."""
    rng = np.random.default_rng(seed)
    at = n // 2
    out = []
    for t in range(n):
        a, b = float(rng.uniform()), float(rng.uniform())
        y = math.sin(6.0 * a) + b + 0.1 * float(rng.normal())
        if event == "shift" and t >= at:
            y += 5.0
        if (event == "spike" and t == at) or (event == "burst" and at <= t <= at + 1):
            y = 1e6
        if event == "input glitch" and t == at:
            a = 1e6
        out.append(({"a": a, "b": b}, y))
    return out


def event_models(n_warmup: int) -> dict:
    return {
        "EDOEBE()": lambda: EDOEBE(n_warmup=n_warmup, seed=0),
        f"EDOEBE(outlier_gate={GATE:g})": lambda: EDOEBE(n_warmup=n_warmup, seed=0,
                                                          outlier_gate=GATE),
        "BayesianLinearRegression (scaled)": lambda: (
            preprocessing.StandardScaler() | linear_model.BayesianLinearRegression()),
        "HoeffdingAdaptiveTreeRegressor": lambda: tree.HoeffdingAdaptiveTreeRegressor(seed=0),
    }


def run_events(n: int, n_warmup: int) -> list:
    at = n // 2
    segments = {"before": (n_warmup, at), "+1..+50": (at + 1, at + 50),
                "+50..+200": (at + 50, at + 200), "+200..+500": (at + 200, at + 500),
                "+500..": (at + 500, n)}
    rows = []
    for event in EVENTS:
        data = event_stream(event, n)
        for name, make in event_models(n_warmup).items():
            model = make()
            errors = np.empty(n)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                for t, (x, y) in enumerate(data):
                    errors[t] = abs(y - model.predict_one(x))
                    model.learn_one(x, y)
            row = {"event": event, "model": name, "seconds": time.perf_counter() - t0,
                   "kept_out": getattr(model, "n_skipped_", None),
                   "mae": {k: float(errors[a:b].mean()) for k, (a, b) in segments.items()
                           if b > a}}
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
        for gate in (None, GATE):
            model = EDOEBE(n_warmup=n_warmup, seed=0, outlier_gate=gate)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                predict_then_learn(model, xs[:n_warmup], ys[:n_warmup])
                t0 = time.perf_counter()
                preds = np.array(predict_then_learn(model, xs[n_warmup:], ys[n_warmup:]))
            target = np.array(ys[n_warmup:])
            err = target - preds
            row = {"stream": name, "outlier_gate": gate, "samples": len(target),
                   "nmse": float(np.mean(err**2) / np.var(target)),
                   "mae": float(np.mean(np.abs(err))), "kept_out": model.n_skipped_,
                   "seconds": time.perf_counter() - t0}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def markdown(results: dict) -> str:
    lines = ["# An isolated outlier against a stream that moved", "",
             f"`python benchmarks/outliers.py {results['args']}` (load {results['load']:.1f} at "
             "the start). MAE of the one-step-ahead predictions, by segment of samples around "
             f"the event at sample {results['n'] // 2}; `kept out`: the targets the gate kept "
             "out of the members and weights.", ""]
    segments = ["before", "+1..+50", "+50..+200", "+200..+500", "+500.."]
    if results.get("events"):
        lines += ["| event | model | " + " | ".join(segments) + " | kept out |",
                  "| --- | --- |" + " ---: |" * (len(segments) + 1)]
        for r in results["events"]:
            cells = [f"{r['mae'][s]:.4g}" if s in r["mae"] else "" for s in segments]
            kept = "" if r["kept_out"] is None else str(r["kept_out"])
            lines.append(f"| {r['event']} | {r['model']} | " + " | ".join(cells)
                         + f" | {kept} |")
        lines.append("")
    if results.get("streams"):
        lines += ["The paper's protocol (peers.py's), `EDOEBE(seed=0)`:", "",
                  "| stream | outlier_gate | samples | nMSE | MAE | kept out |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for r in results["streams"]:
            gate = "None" if r["outlier_gate"] is None else f"{r['outlier_gate']:g}"
            lines.append(f"| {r['stream']} | {gate} | {r['samples']} | {r['nmse']:.5g} | "
                         f"{r['mae']:.5g} | {r['kept_out']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="+", choices=("events", "streams"),
                        default=["events", "streams"])
    parser.add_argument("--n", type=int, default=4000, help="length of the events' streams")
    parser.add_argument("--quick", action="store_true",
                        help="short streams and warm-ups: checks the script, rough numbers")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    n, n_warmup, cap = (800, 200, 1500) if args.quick else (args.n, 1000, None)
    results: dict = {"args": " ".join(argv if argv is not None else sys.argv[1:]), "n": n,
                     "n_warmup": n_warmup, "outlier_gate": GATE,
                     "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0}
    if "events" in args.experiments:
        results["events"] = run_events(n, n_warmup)
    if "streams" in args.experiments:
        results["streams"] = run_streams(default_data_dir(args.data_dir), cap, n_warmup)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "outliers.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "outliers.md").write_text(markdown(results))
    return results


if __name__ == "__main__":
    main()
