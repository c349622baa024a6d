"""``river-doebe evaluate --keys N [--shards S] [--address A]``: the keyed stream on Ray.

The records of :class:`~river_doebe.datasets.KeyedDrift` (``N`` keys, ``--n`` records, 1,000
per key by default) go through :class:`river_doebe.distributed.KeyedModels` holding one
``--model`` (default ``EDOEBE``) per key, in calls of `CALL` records, pipelined
(``iter_predict_learn``), each record predicted before it is learnt. The summary gives each
key's nMSE (its MSE over the variance of its targets) and PLL (the mean log predictive density
of its targets) as their mean and quantiles over the keys, the records per second (Ray's and the
actors' start excluded, reported apart) and each shard's keys and memory (its models pickled).

The warm-up settings are those of the single-stream run; without ``--n-warmup`` each key warms
up on a fifth of its records (at most the default 1,000, at least 50).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from river_doebe.cli.base import PROG, CLIError

__all__ = ["CALL", "add_arguments", "cmd_keyed", "summary"]

#: records per call of ``predict_learn_many``: enough to fill every shard's batch, few enough
#: that the progress bar moves
CALL = 5000

#: the quantiles of the per-key scores the summary shows
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def add_arguments(
    parser: argparse.ArgumentParser, positive_int: Callable[[str], int]
) -> None:
    """The keyed run's options of ``evaluate``."""
    parser.add_argument(
        "--keys",
        type=positive_int,
        default=None,
        metavar="N",
        help="run N keyed streams (datasets.KeyedDrift, --n records in all, "
        "default 1,000 per key) on Ray, a model per key; needs "
        '`pip install "river-doebe[ray]"`',
    )
    parser.add_argument(
        "--shards",
        type=positive_int,
        default=None,
        metavar="S",
        help="with --keys: the number of Ray actors (default: one per CPU)",
    )
    parser.add_argument(
        "--address",
        default=None,
        metavar="A",
        help="with --keys: the Ray cluster to join ('auto', 'ray://host:10001'; "
        "default: a local Ray started for the run)",
    )


def check_options(args: argparse.Namespace) -> None:
    """The options that do not go with ``--keys`` (or need it)."""
    if args.keys is None:
        for option, value in (("--shards", args.shards), ("--address", args.address)):
            if value is not None:
                raise CLIError(f"{option} goes with --keys N")
        return
    clashes = [
        ("--stream", args.stream),
        ("--csv", args.csv),
        ("--plot", args.plot),
        ("--peers", args.peers),
        ("--every", args.every),
    ]
    given = [option for option, value in clashes if value is not None]
    if given:
        raise CLIError(f"--keys runs the keyed stream alone; drop {', '.join(given)}")
    if args.n is not None and args.n < args.keys:
        raise CLIError(
            f"--n ({args.n}) must be at least --keys ({args.keys}): every key gets a record"
        )


def _scores(keys: list, y: list, predictions: list, has_dist: bool) -> dict:
    """Each key's nMSE and PLL (NaN where it has no distribution)."""
    from river_doebe import metrics

    by_key: dict = {}
    for k, target, pred in zip(keys, y, predictions, strict=True):
        by_key.setdefault(k, ([], []))
        by_key[k][0].append(target)
        by_key[k][1].append(pred)
    out = {}
    for k, (targets, preds) in by_key.items():
        nmse = metrics.NMSE(var_y=float(np.var(targets)))
        pll = metrics.PredictiveLogLikelihood() if has_dist else None
        for target, pred in zip(targets, preds, strict=True):
            nmse.update(target, pred)
            if pll is not None:
                pll.update(target, pred)
        out[k] = {
            "records": len(targets),
            "nMSE": float(nmse.get()),
            "PLL": float(pll.get()) if pll is not None else math.nan,
        }
    return out


def summary(scores: dict) -> dict:
    """Mean and quantiles over the keys of each score (keys whose score is not finite, say a
    key with constant targets, are left out and counted)."""
    out = {}
    for name in ("nMSE", "PLL"):
        values = np.array([s[name] for s in scores.values()], dtype=float)
        finite = values[np.isfinite(values)]
        if not finite.size:
            continue
        out[name] = {
            "mean": float(finite.mean()),
            **{f"q{round(100 * q):02d}": float(np.quantile(finite, q)) for q in QUANTILES},
            "keys": int(finite.size),
            "left_out": int(values.size - finite.size),
        }
    return out


def _table(stats: dict) -> str:
    columns = ["mean", *(f"q{round(100 * q):02d}" for q in QUANTILES)]
    lines = [f"{'over keys':<10}" + "".join(f"{c:>10}" for c in columns)]
    for name, row in stats.items():
        lines.append(f"{name:<10}" + "".join(f"{row[c]:>10.4f}" for c in columns))
    return "\n".join(lines)


def cmd_keyed(
    args: argparse.Namespace, parser: argparse.ArgumentParser, settings: dict, spec: Any
) -> int:
    """Run the keyed stream; print the summary (and write ``--json``)."""
    from tqdm import tqdm

    from river_doebe.cli.streams import fitted_warmup

    try:
        from river_doebe.distributed import KeyedModels
    except ImportError as err:
        raise CLIError(str(err)) from None
    from river_doebe.datasets import KeyedDrift

    check_options(args)
    n = args.n if args.n is not None else 1000 * args.keys
    per_key = n // args.keys
    if spec.warms_up and args.n_warmup is None:
        settings["n_warmup"] = fitted_warmup(settings["n_warmup"], per_key)
    dataset = KeyedDrift(n_keys=args.keys, n_samples=n, seed=args.seed)
    keys, X, y = map(list, zip(*dataset))
    template = spec.factory(settings)
    where = "a local Ray" if args.address is None else f"Ray at {args.address}"
    print(
        f"{PROG} evaluate: KeyedDrift ({args.keys} keys, {n:,} records, about {per_key:,} per "
        f"key, {dataset.n_features} features); model {spec.label}, one per key (n_warmup="
        f"{settings['n_warmup']}, n_samples={settings['n_samples']}, starts="
        f"{settings['starts']}, seed={settings['seed']}) on {where}",
        flush=True,
    )
    start = time.perf_counter()
    try:
        keyed = KeyedModels(template, n_shards=args.shards, address=args.address)
    except (RuntimeError, ConnectionError, ValueError) as err:
        raise CLIError(f"cannot start the shards: {err}") from None
    started = time.perf_counter() - start
    predictions = []
    try:
        bar = tqdm(
            total=n,
            desc="records",
            unit="record",
            disable=args.no_progress,
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.5,
        )
        start = time.perf_counter()
        with bar, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            starts = range(0, n, CALL)
            calls = ((keys[i : i + CALL], X[i : i + CALL], y[i : i + CALL]) for i in starts)
            # pipelined: the driver checks and sends the next calls while the shards work
            for answers in keyed.iter_predict_learn(calls, with_dist=spec.has_dist):
                predictions += answers
                bar.update(len(answers))
        elapsed = time.perf_counter() - start
        memory = keyed.memory()
        n_shards = len(keyed.shards)
    finally:
        keyed.close()
    stats = summary(_scores(keys, y, predictions, spec.has_dist))
    print()
    print(
        f"per-key scores ({args.keys} keys): nMSE = the key's MSE / Var(its targets), PLL = "
        "mean log predictive density of its targets"
    )
    print(_table(stats))
    print(
        f"\nrecords/s: {n / elapsed:,.0f} ({n:,} records in {elapsed:.1f} s on {n_shards} "
        f"shard{'s' if n_shards > 1 else ''}; starting Ray and the shards took "
        f"{started:.1f} s more)"
    )
    print("memory per shard (its models pickled):")
    for m in memory:
        print(
            f"  shard {m['shard']}: {m['n_keys']} keys, {m['model_bytes'] / 1e6:,.2f} MB "
            f"({m['model_bytes'] / max(m['n_keys'], 1) / 1e3:,.1f} kB per key)"
        )
    if args.json is not None:
        _write_json(args, n, settings, spec, stats, elapsed, started, memory)
    return 0


def _write_json(
    args: argparse.Namespace, n: int, settings: dict, spec: Any, stats: dict, elapsed: float,
    started: float, memory: Any,
) -> None:
    import json

    from river_doebe.utils import json_safe

    doc = {
        "command": f"{PROG} evaluate --keys",
        "stream": {"name": "KeyedDrift", "n_keys": args.keys, "n_samples": n, "seed": args.seed},
        "model": spec.label,
        "settings": settings,
        "shards": len(memory),
        "address": args.address,
        "scores_over_keys": stats,
        "records_per_s": n / elapsed,
        "elapsed_s": elapsed,
        "startup_s": started,
        "memory": memory,
    }
    try:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(json_safe(doc), indent=2) + "\n")
    except OSError as err:
        raise CLIError(f"cannot write {str(args.json)!r}: {err}") from None
    print(f"wrote {args.json}")
