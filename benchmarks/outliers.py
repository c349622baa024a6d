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

import json
import math

import numpy as np
from _common import distances, events_and_streams_main, paper_protocol_rows
from river import linear_model, preprocessing, tree

from river_doebe import EDOEBE

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
        data = [(x, y, y) for x, y in event_stream(event, n)]
        for name, make in event_models(n_warmup).items():
            model = make()
            errors, seconds = distances(model, data)
            row = {"event": event, "model": name, "seconds": seconds,
                   "kept_out": getattr(model, "n_skipped_", None),
                   "mae": {k: float(errors[a:b].mean()) for k, (a, b) in segments.items()
                           if b > a}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def run_streams(data_dir, cap: int | None, n_warmup: int) -> list:
    return paper_protocol_rows(
        [({"outlier_gate": gate},
          lambda w, gate=gate: EDOEBE(n_warmup=w, seed=0, outlier_gate=gate),
          lambda model: {"kept_out": model.n_skipped_}) for gate in (None, GATE)],
        data_dir, cap, n_warmup)


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
    return events_and_streams_main("outliers", __doc__.splitlines()[0], argv, 4000,
                                   (800, 200, 1500), run_events, run_streams, markdown,
                                   outlier_gate=GATE)


if __name__ == "__main__":
    main()
