"""What an E-DOEBE predicts before its members exist: the warm-up fallback against river's models.

Both tasks, every sample scored one step ahead from the first one (river's
``progressive_val_score``), the default ``EDOEBE()`` / ``EDOEBEClassifier()`` (a warm-up of 1,000
samples, then the fitted ensemble):

- classification on river's own ``datasets.Bananas()`` (5,300 samples, a curved boundary that a
  linear fallback cannot draw): accuracy on the first 1,000 samples (the warm-up) and on the whole
  stream, against river's ``ARFClassifier`` and ``KNNClassifier`` behind a scaler;
- regression on Friedman #1 (this package's stream, 5,000 samples): MAE on the first 1,000 and on
  the whole stream, against river's ``KNNRegressor`` and ``LinearRegression`` behind a scaler.

    python benchmarks/fallback.py [--out benchmarks/results]

Writes ``fallback.json`` and ``fallback.md``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from _common import HERE
from river import datasets, forest, linear_model, metrics, neighbors, preprocessing

from river_doebe import EDOEBE, EDOEBEClassifier
from river_doebe.datasets import Friedman1
from river_doebe.utils import json_safe


def classifiers(seed: int) -> dict:
    return {
        "EDOEBEClassifier()": lambda: EDOEBEClassifier(seed=seed),
        "ARFClassifier": lambda: forest.ARFClassifier(seed=seed),
        "KNNClassifier (scaled)": lambda: preprocessing.StandardScaler()
        | neighbors.KNNClassifier(),
    }


def regressors(seed: int) -> dict:
    return {
        "EDOEBE()": lambda: EDOEBE(seed=seed),
        "KNNRegressor (scaled)": lambda: preprocessing.StandardScaler()
        | neighbors.KNNRegressor(),
        # (river's BayesianLinearRegression has no intercept: on Friedman #1, whose target
        # averages 14, it is not a fair linear baseline)
        "LinearRegression (scaled)": lambda: preprocessing.StandardScaler()
        | linear_model.LinearRegression(),
    }


def score(make, stream, metric_type, n_first: int) -> dict:
    """The metric on the first ``n_first`` samples and on the whole stream, one step ahead."""
    model = make()
    first, whole = metric_type(), metric_type()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for t, (x, y) in enumerate(stream):
            y_pred = model.predict_one(x)
            if t < n_first:
                first.update(y, y_pred)
            whole.update(y, y_pred)
            model.learn_one(x, y)
    return {"first": first.get(), "whole": whole.get(), "n": t + 1,
            "seconds": time.perf_counter() - start}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--n-regression", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    bananas = list(datasets.Bananas())
    friedman = list(Friedman1(n_samples=args.n_regression, seed=args.seed))
    results = {
        "classification (Bananas, accuracy)": {
            name: score(make, bananas, metrics.Accuracy, 1000)
            for name, make in classifiers(args.seed).items()
        },
        "regression (Friedman #1, MAE)": {
            name: score(make, friedman, metrics.MAE, 1000)
            for name, make in regressors(args.seed).items()
        },
    }
    lines = ["# The warm-up fallback against river's models", "",
             "Every sample scored one step ahead from the first; the E-DOEBEs warm up on the "
             "first 1,000 samples (their fallback predicts those), then stream with their fitted "
             "members. Command: `python benchmarks/fallback.py`.", ""]
    for task, rows in results.items():
        lines += [f"## {task}", "", "| model | first 1,000 | whole stream | time [s] |",
                  "|---|---|---|---|"]
        for name, r in rows.items():
            lines.append(f"| {name} | {r['first']:.4f} | {r['whole']:.4f} | {r['seconds']:.1f} |")
        lines.append("")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fallback.json").write_text(json.dumps(json_safe(results), indent=1) + "\n")
    (args.out / "fallback.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return results


if __name__ == "__main__":
    main()
