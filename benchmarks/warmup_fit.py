"""How long an ``EDOEBE()``'s warm-up fit takes (the ``learn_one`` that ends its window: the
empirical-Bayes fits, the Laplace draws, the replay of the window), and what handing the RBF
network's and the HSGP's features to their evidence gradients saves (``hyper_vjp(Z, G,
Phi=...)``: the gradient reads the features the evidence computed instead of computing them
again).

    python benchmarks/warmup_fit.py [--rounds 4] [--busy]

The two variants take turns on copies of one model at the end of its window (the order
alternating round by round), on one thread and with the default threads, on the built-in drift
stream and on Friedman #1; both must give the same predictions to the last bit. Writes
``results/warmup_fit.json`` and ``results/warmup_fit.md`` (with ``--busy``, two CPU-bound
processes beside it, throughput.py's busy rows' own: ``results/warmup_fit_busy.*``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import itertools
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

import river_doebe
from river_doebe import EDOEBE, evidence
from river_doebe.datasets import Drift, Friedman1

HERE = Path(__file__).resolve().parent


def _stream(name: str, n: int) -> list:
    source = Drift() if name == "drift" else Friedman1(n_samples=n, seed=0)
    return list(itertools.islice(source, n))


def measure(rounds: int, n_warmup: int = 1000) -> dict:
    with_features = evidence._takes_features

    def without_features(cls):
        return False

    variants = {"features handed over": with_features, "features computed again": without_features}
    rows = []
    for name in ("drift", "friedman1"):
        data = _stream(name, n_warmup + 50)
        window = EDOEBE(n_warmup=n_warmup, seed=0)
        for x, y in data[:n_warmup - 1]:
            window.learn_one(x, y)
        for threads in (1, None):
            seconds: dict[str, list[float]] = {v: [] for v in variants}
            predictions = {}
            for r in range(rounds):
                order = list(variants) if r % 2 == 0 else list(reversed(variants))
                for label in order:
                    evidence._takes_features = variants[label]
                    try:
                        model = copy.deepcopy(window)
                        with river_doebe.num_threads(threads):
                            start = time.perf_counter()
                            model.learn_one(*data[n_warmup - 1])
                            seconds[label].append(time.perf_counter() - start)
                    finally:
                        evidence._takes_features = with_features
                    predictions[label] = np.array([model.predict_one(x)
                                                   for x, _ in data[n_warmup:]])
            same = np.array_equal(*predictions.values())
            a, b = (seconds[v] for v in variants)
            row = {"stream": name, "threads": "1" if threads else "default", "seconds": seconds,
                   "ratio_of_best": min(a) / min(b),
                   "ratio_of_medians": float(np.median(a) / np.median(b)),
                   "same_predictions": bool(same), "load": os.getloadavg()}
            print(f"  {name}, {row['threads']} thread(s): best {min(a):.2f} s against "
                  f"{min(b):.2f} s ({row['ratio_of_best']:.3f}; medians "
                  f"{row['ratio_of_medians']:.3f}); same predictions: {same}", flush=True)
            rows.append(row)
    return {"rounds": rounds, "n_warmup": n_warmup, "rows": rows}


def write(result: dict, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    busy = result.get("busy", False)
    name = "warmup_fit_busy" if busy else "warmup_fit"
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# The warm-up fit of EDOEBE()" + (", on a busy machine" if busy else ""),
        "",
        f"Seconds of the `learn_one` that ends the warm-up window ({result['n_warmup']:,} "
        "samples), copies of one model taking turns (order alternating), `python "
        f"benchmarks/warmup_fit.py --rounds {result['rounds']}"
        + (" --busy` (two CPU-bound processes beside it)" if busy else "`")
        + "; ratio: with the RBF "
        "network's and the HSGP's features handed to their evidence gradients over without "
        "(below 1: faster). "
        "The predictions after the fit are the same to the last bit.",
        "",
        "| stream | threads | handed over, s | computed again, s | ratio of best "
        "| ratio of medians | same | load |",
        "|---|---|---|---|---:|---:|---|---|",
    ]
    for row in result["rows"]:
        a, b = row["seconds"].values()
        lines.append(
            f"| {row['stream']} | {row['threads']} | {' '.join(f'{v:.2f}' for v in sorted(a))} "
            f"| {' '.join(f'{v:.2f}' for v in sorted(b))} | {row['ratio_of_best']:.3f} "
            f"| {row['ratio_of_medians']:.3f} | {row['same_predictions']} "
            f"| {row['load'][0]:.1f} |")
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    return out / f"{name}.md"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--n-warmup", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--busy", action="store_true",
                        help="two CPU-bound processes of another program beside it "
                        "(throughput.py's busy rows' processes, ended by the script)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from throughput import busy_machine

    with busy_machine(2) if args.busy else contextlib.nullcontext():
        result = measure(args.rounds, args.n_warmup)
    result["busy"] = args.busy
    print(f"wrote {write(result, args.out)}")
    return result


if __name__ == "__main__":
    main()
