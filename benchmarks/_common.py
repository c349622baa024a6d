"""What the benchmark scripts share: the package imported from this checkout, and the data folder.

The scripts run as ``python benchmarks/<name>.py`` (this folder is then first on ``sys.path``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))


def default_data_dir(given) -> Path | None:
    """``--data-dir``, else ``$RIVER_DOEBE_DATA``, else ``../shared/data`` beside the checkout
    (``None`` if none is there: the streams that need a file are then skipped)."""
    from river_doebe import datasets

    if given:
        return Path(given)
    if os.environ.get(datasets.ENV_VAR):
        return Path(os.environ[datasets.ENV_VAR])
    beside = ROOT.parent / "shared" / "data"
    return beside if beside.is_dir() else None


def predict_then_learn(model, xs: list, ys: list, block_size: int = 256) -> list:
    """Each row's prediction (a classifier: its ``predict_proba_one``) made before the row is
    learnt: through ``predict_learn_many`` in blocks for this package's models (the same numbers
    as the loop), else ``predict_proba_one`` / ``predict_one`` then ``learn_one``."""
    many = getattr(model, "predict_learn_many", None)
    if many is not None:
        out = []
        for i in range(0, len(xs), block_size):
            out.extend(many(xs[i:i + block_size], ys[i:i + block_size]))
        return out
    predict = getattr(model, "predict_proba_one", None) or model.predict_one
    out = []
    for x, y in zip(xs, ys, strict=True):
        out.append(predict(x))
        model.learn_one(x, y)
    return out


def paper_stream(name: str, data_dir, cap: int | None, n_warmup: int):
    """``(rows, targets)`` of a stream under the paper's protocol (``peers.py``'s: ``X`` and
    ``y`` standardised with the first ``n_warmup`` samples, the kept inputs named ``z000``, ...
    in order), cut to ``cap`` samples; ``None`` if its file is absent."""
    import warnings

    from river_doebe import datasets
    from river_doebe.warmup import Standardizer

    if name == "drift":
        ds = datasets.Drift()
    elif name == "static_then_drift":
        ds = datasets.StaticThenDrift()
    else:
        try:
            ds = datasets.load(name, directory=data_dir)
        except (FileNotFoundError, ValueError):
            return None
    X, y = ds.arrays()
    if cap is not None:
        X, y = X[:cap], y[:cap]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        std = Standardizer.fit(X[:n_warmup], y[:n_warmup])
    Z, Y = std.x(X), std.y(y)
    names = [f"z{i:03d}" for i in range(Z.shape[1])]
    return [dict(zip(names, row, strict=True)) for row in Z.tolist()], Y.tolist()


def paper_protocol_rows(variants: list, data_dir, cap: int | None, n_warmup: int) -> list:
    """For each of the built-in and the paper's streams present (:func:`paper_stream`), each
    variant ``(fields, make, report)``: ``make(n_warmup)`` warms up on the first ``n_warmup``
    samples and streams the rest one step ahead; a row of ``fields``, the samples streamed, the
    nMSE, the MAE and the seconds, and ``report(model)``'s fields. Printed as they come."""
    import json
    import time
    import warnings

    import numpy as np

    from river_doebe import datasets

    rows = []
    for name in ("drift", "static_then_drift", *datasets.PAPER_NAMES):
        data = paper_stream(name, data_dir, cap, n_warmup)
        if data is None:
            print(f"{name}: not in the data folder, skipped", flush=True)
            continue
        xs, ys = data
        for fields, make, report in variants:
            model = make(n_warmup)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                predict_then_learn(model, xs[:n_warmup], ys[:n_warmup])
                t0 = time.perf_counter()
                preds = np.array(predict_then_learn(model, xs[n_warmup:], ys[n_warmup:]))
            target = np.array(ys[n_warmup:])
            err = target - preds
            row = {"stream": name, **fields, "samples": len(target),
                   "nmse": float(np.mean(err**2) / np.var(target)),
                   "mae": float(np.mean(np.abs(err))), "seconds": time.perf_counter() - t0,
                   **report(model)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def events_and_streams_main(name: str, description: str, argv, n: int, quick: tuple,
                            run_events, run_streams, markdown, **settings) -> dict:
    """The command line of a script with an ``events`` and a ``streams`` experiment
    (``outliers.py``, ``noise_levels.py``): ``--quick`` takes ``quick`` = ``(n, n_warmup,
    cap)`` instead of ``(n, 1000, None)``; writes ``<name>.json`` (``settings`` among its
    fields) and ``<name>.md`` (``markdown(results)``) to ``--out``."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--experiments", nargs="+", choices=("events", "streams"),
                        default=["events", "streams"])
    parser.add_argument("--n", type=int, default=n, help="length of the events' streams")
    parser.add_argument("--quick", action="store_true",
                        help="short streams and warm-ups: checks the script, rough numbers")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    n, n_warmup, cap = quick if args.quick else (args.n, 1000, None)
    results: dict = {"args": " ".join(argv if argv is not None else sys.argv[1:]), "n": n,
                     "n_warmup": n_warmup, **settings,
                     "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0}
    if "events" in args.experiments:
        results["events"] = run_events(n, n_warmup)
    if "streams" in args.experiments:
        results["streams"] = run_streams(default_data_dir(args.data_dir), cap, n_warmup)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / f"{name}.md").write_text(markdown(results))
    return results


def distances(model, rows: list) -> tuple:
    """Predict then learn each ``(x, y, reference)`` of ``rows`` one by one: the distances
    ``|reference - prediction|`` (an array) and the seconds it took."""
    import time
    import warnings

    import numpy as np

    out = np.empty(len(rows))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for t, (x, y, reference) in enumerate(rows):
            out[t] = abs(reference - model.predict_one(x))
            model.learn_one(x, y)
    return out, time.perf_counter() - t0
