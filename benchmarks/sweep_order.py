"""What sweeping every other sample backwards is worth, one sample at a time.

The engine's predict sweep takes each thread's run of members backwards every other sample
(``river_doebe.engine.threads.backward_runs``), so that a thread starts where its last sweep
ended, on members its core's cache still holds. This script measures that against the members
always in the same order, in one process: four fitted copies of the 90-member ensemble of
``throughput.py`` (one thread or the default threads; backwards every other sample, or always
forwards) take turns on Friedman #1 in segments of 200 samples (the order of the four turns
around at each segment, so that a drift of the machine's speed meets all of them), on the
machine as it is and with two CPU-bound processes of another program beside it (those of
``throughput.py``'s busy rows). Every copy gives the same predictions to the bit, which the
script checks.

    python benchmarks/sweep_order.py [--n 6000] [--repeats 3] [--no-busy] [--out FILE]

Writes ``benchmarks/results/sweep_order.json``: microseconds a sample for each copy, and the
ratios backwards / forwards (below 1: backwards is faster) and default threads / one thread.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from pathlib import Path

from _common import HERE
from river import metrics
from throughput import busy_machine, ensemble_90

import river_doebe
from river_doebe.datasets import Friedman1

SEGMENT = 200
WARM = 1000


class _Forwards(dict):
    """An engine's table of backward orders that always gives the forward one."""

    def __init__(self, order):
        super().__init__()
        self.order = order

    def get(self, key, default=None):
        return self.order


def _fitted(data, backwards: bool):
    model = ensemble_90(0.0)
    with river_doebe.num_threads(1):
        for x, y in data[:WARM]:
            model.predict_one(x)
            model.learn_one(x, y)
    if not backwards:
        engine = model._engine
        engine._backward = _Forwards(engine.order)
    return model


def _run(data, repeats: int) -> dict:
    copies = {(threads, backwards): None for threads in (1, None) for backwards in (True, False)}
    seconds = dict.fromkeys(copies, 0.0)
    maes = {}
    for _ in range(repeats):
        models = {key: _fitted(data, key[1]) for key in copies}
        predictions = {key: [] for key in copies}
        for k, i in enumerate(range(WARM, len(data), SEGMENT)):
            segment = data[i:i + SEGMENT]
            turns = list(models) if k % 2 == 0 else list(models)[::-1]
            for key in turns:
                model, out = models[key], predictions[key]
                with river_doebe.num_threads(key[0]):
                    start = time.perf_counter()
                    for x, y in segment:
                        out.append(model.predict_one(x))
                        model.learn_one(x, y)
                    seconds[key] += time.perf_counter() - start
                model._engine._pace.stop()
        first = next(iter(predictions.values()))
        if any(p != first for p in predictions.values()):
            raise AssertionError("the sweep's order changed a prediction")
        mae = metrics.MAE()
        for (_, y), p in zip(data[WARM:], first, strict=True):
            mae.update(y, p)
        maes = {"MAE (every copy)": mae.get()}
    n = (len(data) - WARM) * repeats
    us = {key: seconds[key] / n * 1e6 for key in copies}
    name = {1: "1 thread", None: "default threads"}
    return {
        "us_a_sample": {f"{name[t]}, {'backwards every other' if b else 'forwards always'}": v
                        for (t, b), v in us.items()},
        "backwards / forwards, 1 thread": us[(1, True)] / us[(1, False)],
        "backwards / forwards, default threads": us[(None, True)] / us[(None, False)],
        "default / 1 thread (speed), backwards every other": us[(1, True)] / us[(None, True)],
        "default / 1 thread (speed), forwards always": us[(1, False)] / us[(None, False)],
        **maes,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=6000, help="samples after the first 1,000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-busy", action="store_true", help="skip the busy machine")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "sweep_order.json")
    args = parser.parse_args(argv)
    data = list(Friedman1(n_samples=WARM + args.n, seed=0))
    _run(data[:WARM + 400], 1)  # compiles every kernel, untimed
    out = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
           "samples": args.n, "repeats": args.repeats, "segment": SEGMENT,
           "cores": os.cpu_count()}
    out["load_before"] = list(os.getloadavg())
    out["quiet"] = _run(data, args.repeats)
    print("quiet", json.dumps(out["quiet"], indent=1), flush=True)
    if not args.no_busy:
        with busy_machine(2):
            out["busy"] = _run(data, args.repeats)
        print("busy", json.dumps(out["busy"], indent=1), flush=True)
    out["load_after"] = list(os.getloadavg())
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
