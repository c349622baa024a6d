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

import json
import math

import numpy as np
from _common import distances, events_and_streams_main, paper_protocol_rows
from river import tree

from river_doebe import EDOEBE

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
            distance, seconds = distances(make(), data)
            row = {"event": event, "model": name, "seconds": seconds,
                   "distance_to_f": float(distance[n // 2:].mean())}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def run_streams(data_dir, cap: int | None, n_warmup: int) -> list:
    return paper_protocol_rows(
        [({"noise_levels": list(levels)},
          lambda w, levels=levels: EDOEBE(n_warmup=w, seed=0, noise_levels=levels),
          lambda model: {}) for levels in ((1.0,), LEVELS)],
        data_dir, cap, n_warmup)


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
    return events_and_streams_main("noise_levels", __doc__.splitlines()[0], argv, 6000,
                                   (900, 200, 1500), run_events, run_streams, markdown,
                                   noise_levels=list(LEVELS))


if __name__ == "__main__":
    main()
