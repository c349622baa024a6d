"""How well calibrated the predictive distributions are: interval coverage and CRPS, per stream.

Protocol (issue 14's figures): the first ``--max-samples`` (8,000) samples of each stream, in the
stream's own units (no standardisation by the script); every model learns the first
``--n-warmup`` (1,000) unscored (``EDOEBE(seed=0)`` warms up on exactly them), then the rest is
scored strictly one step ahead through ``river_doebe.evaluate.progressive_scores``:

- the share of targets inside the central 90% and 50% intervals of the model's own predictive
  (``metrics.IntervalCoverage``; a calibrated model covers 90% and 50%);
- the CRPS (``metrics.CRPS``, in the target's units, lower is better), the PLL of the model's own
  predictive and the nMSE, for context.

Models: ``EDOEBE(seed=0)`` (its predictive is the mixture of its members) and river's
``BayesianLinearRegression`` behind a ``StandardScaler`` (its predictive is a Gaussian whose noise
level is fixed, not learnt on the target's scale).

    python benchmarks/calibration.py                       # friedman1 elevators cadata cpusmall
    python benchmarks/calibration.py --quick --streams friedman1 --out /tmp/cal

Writes ``calibration.json`` and ``calibration.md`` to ``--out`` (default ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
from _common import HERE, default_data_dir
from river import linear_model, preprocessing

from river_doebe import EDOEBE, datasets, metrics
from river_doebe.evaluate import progressive_scores
from river_doebe.utils import json_safe

STREAMS = ("friedman1", "elevators", "cadata", "cpusmall")


def models(cfg: dict) -> dict:
    """name -> factory."""
    edoebe = {"seed": cfg["seed"], "n_warmup": cfg["n_warmup"]}
    if cfg["quick"]:
        edoebe.update(n_samples=2, starts=(1.0,))
    return {
        "EDOEBE": lambda: EDOEBE(**edoebe),
        "BayesianLinearRegression (scaled)": lambda: preprocessing.StandardScaler()
        | linear_model.BayesianLinearRegression(),
    }


def scores(make, rows: list, n_warmup: int) -> dict:
    warm, streamed = rows[:n_warmup], rows[n_warmup:]
    model = make()
    ys = np.array([y for _, y in streamed], dtype=float)
    chosen = {"coverage_90": metrics.IntervalCoverage(0.9),
              "coverage_50": metrics.IntervalCoverage(0.5), "crps": metrics.CRPS(),
              "pll": metrics.PredictiveLogLikelihood(), "nmse": metrics.NMSE(var_y=ys.var())}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        start = time.perf_counter()
        for x, y in warm:
            model.learn_one(x, y)
        result = progressive_scores(streamed, model, chosen)
    out = {key: float(value) for key, value in result.scores.items()}
    out.update(n_scored=result.n_samples, seconds=time.perf_counter() - start,
               crps_over_std_y=out["crps"] / float(ys.std()))
    return out


def markdown(results: dict, cfg: dict, skipped: dict) -> str:
    lines = [
        "# Calibration of the predictive distributions",
        "",
        f"First {cfg['max_samples']:,} samples of each stream in its own units; the first "
        f"{cfg['n_warmup']:,} learnt unscored (the E-DOEBE's warm-up), the rest scored one step "
        "ahead. Coverage: share of the targets inside the central 90% / 50% interval of the "
        "model's own predictive (calibrated: 90% / 50%). CRPS in the target's units (lower is "
        "better), and divided by the standard deviation of the scored targets; PLL of the "
        "model's own predictive (the E-DOEBE's mixture), in the target's units."
        + (" **Quick mode: rough numbers only.**" if cfg["quick"] else ""),
        "Command: `python benchmarks/calibration.py"
        + (" --quick" if cfg["quick"] else "") + "`.",
        "",
        "| stream | model | 90% coverage | 50% coverage | CRPS | CRPS / std(y) | PLL | nMSE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for stream, rows in results.items():
        for name, r in rows.items():
            lines.append(
                f"| {stream} | {name} | {r['coverage_90']:.1%} | {r['coverage_50']:.1%} | "
                f"{r['crps']:.4g} | {r['crps_over_std_y']:.4f} | {r['pll']:.3f} | "
                f"{r['nmse']:.4f} |"
            )
    lines.append("")
    if skipped:
        lines += ["Not run: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()), ""]
    return "\n".join(lines)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", nargs="+", default=list(STREAMS), metavar="NAME")
    p.add_argument("--max-samples", type=int, default=None,
                   help="samples taken from each stream (default 8000; quick: 1500)")
    p.add_argument("--n-warmup", type=int, default=None,
                   help="samples learnt unscored (default 1000; quick: 300)")
    p.add_argument("--quick", action="store_true", help="short streams and a small E-DOEBE")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    p.add_argument("--data-dir", default=None,
                   help="folder of the .npz files (default: $RIVER_DOEBE_DATA, else "
                   "../shared/data beside the checkout)")
    args = p.parse_args(argv)
    cfg = {
        "max_samples": args.max_samples or (1500 if args.quick else 8000),
        "n_warmup": args.n_warmup or (300 if args.quick else 1000),
        "seed": args.seed,
        "quick": bool(args.quick),
    }
    data_dir = default_data_dir(args.data_dir)
    try:
        present = set(datasets.available(data_dir))
    except FileNotFoundError:
        present = set(datasets.available(None))
    results, skipped = {}, {}
    for name in args.streams:
        if name not in present:
            skipped[name] = "unknown stream" if name not in datasets.NAMES else "file not found"
            print(f"skip {name}: {skipped[name]}", flush=True)
            continue
        rows = list(itertools.islice(iter(datasets.load(name, directory=data_dir)),
                                     cfg["max_samples"]))
        if len(rows) <= cfg["n_warmup"]:
            skipped[name] = f"{len(rows)} samples, too few for a warm-up of {cfg['n_warmup']}"
            continue
        results[name] = {}
        for model_name, make in models(cfg).items():
            r = scores(make, rows, cfg["n_warmup"])
            results[name][model_name] = r
            print(f"{name:<10} {model_name:<34} 90%: {r['coverage_90']:6.1%}  50%: "
                  f"{r['coverage_50']:6.1%}  CRPS {r['crps']:.4g}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"config": cfg, "results": results, "skipped": skipped}
    (args.out / "calibration.json").write_text(json.dumps(json_safe(doc), indent=1) + "\n")
    md = markdown(results, cfg, skipped)
    (args.out / "calibration.md").write_text(md)
    print(md)
    return doc


if __name__ == "__main__":
    main()
