"""How well calibrated ``EDOEBE()``'s predictive is during its warm-up, and just after it.

During its first ``n_warmup`` samples an ``EDOEBE`` predicts with its fallback (a Bayesian
average of a linear regression and a nearest-neighbour predictor), whose mixture is another
model's, calibrated otherwise: too wide, as it carries the two predictors' disagreement. With
``recalibrate=True`` (the default) the warm-up has a map of its own, learnt from the warm-up's
targets by the steps of :class:`river_doebe.conf.Recalibrated`; ``recalibrate=False`` gives the
fallback's mixture as it is, which is also what ``EDOEBE()`` predicted in its warm-up before
that map (its map learnt nothing before the ensemble was warm, and its gate kept the identity).

Streams, in their own units (the model standardises them itself, as for a user): the built-in
Friedman #1 and #2, ``Drift`` and ``StaticThenDrift``, and the paper's Elevators, CaData and CPU
Small when their files are present (``--data-dir``, ``$RIVER_DOEBE_DATA`` or ``../shared/data``).
Each model predicts (the distribution and, with the recalibration, the adaptive conformal
interval) then learns every sample one by one, ``EDOEBE(seed=0)`` with its default warm-up of
1,000 samples. Scores over the warm-up (samples 1 to 1,000), its first 100 samples, and the
1,000 samples after it: the share of the targets inside the distribution's central 90% and 50%
intervals and inside the conformal 90% interval, the mean width of the distribution's 90%
interval, the CRPS and the predictive log-likelihood (``river_doebe.metrics``).

    python benchmarks/warmup_calibration.py                 # about ten minutes
    python benchmarks/warmup_calibration.py --quick --out /tmp/warmup_calibration

Writes ``warmup_calibration.json`` and ``warmup_calibration.md`` to ``--out`` (default
``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
import warnings
from pathlib import Path

from _common import HERE, default_data_dir
from calibration import width_90

from river_doebe import EDOEBE, datasets, metrics

#: the warm-up of ``EDOEBE()`` (its default), and the samples scored after it
N_WARMUP = 1000
AFTER = 1000

MODELS = {
    "EDOEBE() (the warm-up's own map)": lambda: EDOEBE(seed=0),
    "EDOEBE(recalibrate=False) (the fallback as it is)": lambda: EDOEBE(seed=0,
                                                                     recalibrate=False),
}


def streams(data_dir, n: int) -> dict:
    """``name: list of (x, y)`` of the first ``n`` samples of each stream present."""
    made = {
        "Friedman #1": lambda: datasets.Friedman1(n_samples=n, seed=0),
        "Friedman #2": lambda: datasets.Friedman2(n_samples=n, seed=0),
        "Drift": datasets.Drift,
        "StaticThenDrift": datasets.StaticThenDrift,
    }
    out = {name: list(itertools.islice(make(), n)) for name, make in made.items()}
    for name, cls in (("Elevators", datasets.Elevators), ("CaData", datasets.CaData),
                      ("CPU Small", datasets.CPUSmall)):
        try:
            out[name] = list(itertools.islice(cls(directory=data_dir), n))
        except (FileNotFoundError, ValueError):
            print(f"  {name}: no file, skipped", flush=True)
    return out


def _scores() -> dict:
    return {"cov90": metrics.IntervalCoverage(0.9), "cov50": metrics.IntervalCoverage(0.5),
            "crps": metrics.CRPS(), "pll": metrics.PredictiveLogLikelihood()}


def score(model, data: list, n_warmup: int) -> dict:
    """Predict then learn every sample; the scores by segment (see the module's docstring)."""
    segments = {"warm-up": (0, n_warmup), "first 100": (0, min(100, n_warmup)),
                "after": (n_warmup, len(data))}
    sums = {s: {"scores": _scores(), "conformal": 0, "width": 0.0} for s in segments}
    recalibrates = model.recalibration_ is not None
    start = time.perf_counter()
    for t, (x, y) in enumerate(data):
        dist = model.predict_one(x, with_dist=True)
        inside = None
        if recalibrates:
            interval = model.predict_one(x, with_interval=True)
            inside = interval.lower <= y <= interval.upper
        width = width_90(dist)
        for s, (a, b) in segments.items():
            if a <= t < b:
                for metric in sums[s]["scores"].values():
                    metric.update(y, dist)
                sums[s]["width"] += width
                sums[s]["conformal"] += bool(inside)
        model.learn_one(x, y)
    seconds = time.perf_counter() - start
    out = {}
    for s, (a, b) in segments.items():
        n = min(b, len(data)) - a
        if n <= 0:
            continue
        row = {k: float(m.get()) for k, m in sums[s]["scores"].items()}
        row["width90"] = sums[s]["width"] / n
        row["conformal90"] = sums[s]["conformal"] / n if recalibrates else None
        row["samples"] = n
        out[s] = row
    out["seconds"] = seconds
    return out


def markdown(doc: dict) -> str:
    lines = ["# Calibration during the warm-up", "",
             f"`python benchmarks/warmup_calibration.py{doc['args']}` ({doc['measured']}, "
             f"load {doc['load']:.1f} at the start). `EDOEBE(seed=0)`, warm-up of "
             f"{doc['n_warmup']:,} samples, one by one; coverage of the distribution's central "
             "90% and 50% intervals and of the conformal 90% interval (`with_interval=True`), "
             "mean width of the 90% interval, CRPS (lower is better) and predictive "
             "log-likelihood (PLL, higher is better).", ""]
    for segment in ("warm-up", "first 100", "after"):
        lines += [f"## {segment}", "",
                  "| stream | model | cov 90% | cov 50% | conformal 90% | width 90% | CRPS | "
                  "PLL |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in doc["rows"]:
            s = r["scores"].get(segment)
            if s is None:
                continue
            conformal = "" if s["conformal90"] is None else f"{s['conformal90']:.3f}"
            lines.append(f"| {r['stream']} | {r['model']} | {s['cov90']:.3f} | "
                         f"{s['cov50']:.3f} | {conformal} | {s['width90']:.4g} | "
                         f"{s['crps']:.4g} | {s['pll']:.4g} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="the built-in streams only, a warm-up of 300 and 300 after")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    n_warmup, after = (300, 300) if args.quick else (N_WARMUP, AFTER)
    data_dir = None if args.quick else default_data_dir(args.data_dir)
    models = MODELS if not args.quick else {
        name: (lambda make=make: make().clone({"n_warmup": n_warmup}))
        for name, make in MODELS.items()}
    load = os.getloadavg()[0]
    rows = []
    for stream, data in streams(data_dir, n_warmup + after).items():
        for name, make in models.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                scores = score(make(), data, n_warmup)
            row = {"stream": stream, "model": name, "scores": scores}
            rows.append(row)
            print(json.dumps(row), flush=True)
    given = sys.argv[1:] if argv is None else argv
    doc = {"args": "".join(f" {a}" for a in given),
           "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": load,
           "n_warmup": n_warmup, "rows": rows}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "warmup_calibration.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "warmup_calibration.md").write_text(markdown(doc))
    return doc


if __name__ == "__main__":
    main()
