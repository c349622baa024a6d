"""The entry point of ``river-doebe``: the argument parser and the subcommands."""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from river_doebe.cli import keyed
from river_doebe.cli.base import PROG, CLIError
from river_doebe.cli.registry import DEFAULT, DEFAULT_PEERS, FAST, MODELS, PEERS, ModelSpec
from river_doebe.cli.report import check_plot_path, format_table, write_json, write_plot
from river_doebe.cli.run import run_model
from river_doebe.cli.streams import (
    MIN_FITTED_WARMUP,
    CSVStream,
    fitted_warmup,
    is_generated,
    load_csv,
    load_stream,
)

__all__ = ["build_parser", "cmd_compile", "cmd_evaluate", "cmd_list", "fit_warmup", "main",
           "peer_keys", "recalibrated_spec", "warmup_settings"]


# ---------------------------------------------------------------------------------------------
# Argument parsing
# ---------------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Dynamic online ensembles of basis expansions (Waxman & Djuric, TMLR 2024) "
        "for river: evaluate them against river's own regressors.",
    )
    sub = parser.add_subparsers(dest="command", metavar="{evaluate,list,compile}")
    sub.required = True

    ev = sub.add_parser(
        "evaluate",
        help="progressive validation of a model against river peers on a stream",
        description="Progressive (predict, then learn) validation of a river-doebe model "
        "against river regressors on a stream. Prints nMSE, MAE, PLL and samples/s.",
    )
    ev.add_argument("--stream", default=None,
                    help="stream name (default: drift; see `river-doebe list`)")
    ev.add_argument("--csv", type=Path, default=None, metavar="FILE",
                    help="stream a CSV file instead (river's stream.iter_csv, first row the "
                    "header): its numeric columns are the features, --target names the target")
    ev.add_argument("--target", default=None, metavar="COLUMN",
                    help="with --csv: the column to predict")
    ev.add_argument("--drop", nargs="+", default=None, metavar="COLUMN",
                    help="with --csv: columns to leave out (space or comma separated), such as "
                    "non-numeric ones")
    ev.add_argument("--data-dir", default=None, metavar="DIR",
                    help="folder of the .npz data files (default: $RIVER_DOEBE_DATA)")
    ev.add_argument("--n", type=_positive_int, default=None, metavar="N",
                    help="use the first N samples (generated streams are generated with N)")
    ev.add_argument("--model", default="edoebe", choices=list(MODELS), metavar="MODEL",
                    help="the river-doebe model (default: edoebe): " + ", ".join(MODELS))
    ev.add_argument("--n-warmup", type=_int, default=None, metavar="N",
                    help=f"warm-up window (default {DEFAULT['n_warmup']}, {FAST['n_warmup']} "
                    "with --fast; on a stream shorter than five times that, a fifth of the "
                    f"stream, at least {MIN_FITTED_WARMUP})")
    ev.add_argument("--n-samples", type=_int, default=None, metavar="K",
                    help=f"members per empirical-Bayes mode (default {DEFAULT['n_samples']}; "
                    f"{FAST['n_samples']} with --fast)")
    ev.add_argument("--starts", type=_positive_float, nargs="+", default=None, metavar="S",
                    help="starting length scales as multiples of each input's range "
                    f"(default {' '.join(map(str, DEFAULT['starts']))}; "
                    f"{' '.join(map(str, FAST['starts']))} with --fast)")
    ev.add_argument("--fast", action="store_true",
                    help="a smaller warm-up: 500 samples, 3 members per mode, one start")
    ev.add_argument("--seed", type=_int, default=0, help="seed of the random parts (default: 0)")
    group = ev.add_mutually_exclusive_group()
    group.add_argument("--peers", nargs="+", default=None, metavar="PEER",
                       help="river peers (space or comma separated): " + ", ".join(PEERS)
                       + f" (default: {' '.join(DEFAULT_PEERS)})")
    group.add_argument("--no-peers", action="store_true", help="evaluate the model alone")
    ev.add_argument("--recalibrate", action="store_true",
                    help="compare the model with and without online recalibration of its "
                    "predictive distribution: the models of this package recalibrate themselves "
                    "by default (EDOEBE(recalibrate=True), the algorithm of "
                    "river_doebe.conf.Recalibrated(..., gate=True): 90%% intervals with a "
                    "long-run coverage guarantee), and the table gains the row of the same "
                    "model with recalibrate=False (a model that does not recalibrate itself is "
                    "run wrapped in river_doebe.conf.Recalibrated)")
    ev.add_argument("--every", type=_positive_int, default=None, metavar="K",
                    help="record the traces every K samples (default: about 200 points)")
    ev.add_argument("--json", type=Path, default=None, metavar="FILE",
                    help="write every score and trace to FILE")
    ev.add_argument("--plot", type=Path, default=None, metavar="FILE",
                    help="save a PNG of nMSE over time and the E-DOEBE weights over time")
    ev.add_argument("--no-progress", action="store_true", help="no progress bars")
    ev.add_argument("--verbose", action="store_true",
                    help="print the warnings raised while fitting (otherwise only counted)")
    keyed.add_arguments(ev, _positive_int)

    sub.add_parser("list", help="list the streams, models and peers",
                   description="List the streams (and whether their data are available), "
                   "the river-doebe models and the river peers.")
    comp = sub.add_parser(
        "compile", help="compile the kernels into Numba's on-disk cache, ahead of first use",
        description="Run every model of the package on a few hundred generated samples, so "
        "that Numba compiles its kernels now and files them in its on-disk cache (beside the "
        "package, or in $NUMBA_CACHE_DIR): a later process reads them from there instead of "
        "compiling at its first model. Run it where the package is installed: in a container "
        "image's build, on each node of a Ray cluster.")
    comp.add_argument("--no-threads", action="store_true",
                      help="leave out the parallel twins of the ensembles' kernels (those the "
                      "ensembles time against one thread on a stream)")
    return parser


def warmup_settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The warm-up settings of a run: the defaults (or ``--fast``'s) and the options given."""
    base_values = FAST if args.fast else DEFAULT
    settings = {
        "n_warmup": base_values["n_warmup"] if args.n_warmup is None else args.n_warmup,
        "n_samples": base_values["n_samples"] if args.n_samples is None else args.n_samples,
        "starts": list(base_values["starts"] if args.starts is None else args.starts),
        "seed": args.seed,
    }
    if settings["n_warmup"] < 2:
        parser.error(f"argument --n-warmup: must be at least 2, got {settings['n_warmup']}")
    if settings["n_samples"] < 1:
        parser.error(f"argument --n-samples: must be at least 1, got {settings['n_samples']}")
    return settings


def peer_keys(args: argparse.Namespace) -> list[str]:
    """The peers to run, by key, in the order given and each once."""
    if args.no_peers:
        return []
    if args.peers is None:
        return list(DEFAULT_PEERS)
    keys = [k.strip().lower() for item in args.peers for k in item.split(",") if k.strip()]
    unknown = [k for k in keys if k not in PEERS]
    if unknown:
        raise CLIError(
            f"unknown peer(s) {', '.join(map(repr, unknown))}; choose from: {', '.join(PEERS)}"
        )
    if not keys:
        raise CLIError("--peers needs at least one peer name")
    return list(dict.fromkeys(keys))


# ---------------------------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------------------------


def cmd_compile(args: argparse.Namespace, out: TextIO | None = None) -> int:
    import numba

    from river_doebe.precompile import precompile

    out = out or sys.stdout
    report = precompile(threads=not args.no_threads,
                        progress=lambda name: print(f"  {name}", file=out, flush=True))
    folder = numba.config.CACHE_DIR  # type: ignore[attr-defined, unused-ignore]
    where = folder or ("beside the package (its __pycache__ folders), or the user's cache "
                       "folder where those are read-only")
    print(f"{report['models']} models run: {report['compiles']} compiles, "
          f"{report['seconds']:.1f} s; Numba's on-disk cache: {where}", file=out)
    return 0


def cmd_list(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from river_doebe import datasets

    out = out or sys.stdout
    try:
        folder = str(datasets.data_dir(None))
    except FileNotFoundError:
        folder = None
    available = set(datasets.available(None))
    print("Streams (--stream):", file=out)
    for name in datasets.NAMES:
        if is_generated(name):
            status = "generated"
        elif name in available:
            status = "available"
        else:
            status = f"needs {name}.npz (--data-dir or ${datasets.ENV_VAR})"
        paper = "  [paper]" if name in datasets.PAPER_NAMES else ""
        print(f"  {name:<20} {status}{paper}", file=out)
    where = folder or f"none (set ${datasets.ENV_VAR} or pass --data-dir)"
    print(f"  data folder: {where}", file=out)
    print("  or a CSV file of your own: --csv FILE --target COLUMN [--drop COLUMN ...]",
          file=out)
    # one column for every key, as wide as the longest (edoebe-stacking is 15 characters)
    width = max(len(key) for key in (*MODELS, *PEERS))
    print("\nModels (--model):", file=out)
    for key, spec in MODELS.items():
        print(f"  {key:<{width}} {spec.help}", file=out)
    print("Each recalibrates its predictive distribution online, as EDOEBE() does by default; "
          "--recalibrate adds its row with recalibrate=False.", file=out)
    print("\nPeers (--peers):", file=out)
    for key, spec in PEERS.items():
        default = "  [default]" if key in DEFAULT_PEERS else ""
        print(f"  {key:<{width}} {spec.help}{default}", file=out)
    return 0


def _split_names(values: Iterable[str]) -> list[str]:
    return [k.strip() for item in values or () for k in item.split(",") if k.strip()]


def _load(args):
    """The stream to evaluate on: a built-in one (`load_stream`) or a CSV file (`load_csv`)."""
    if args.csv is None:
        for option, value in (("--target", args.target), ("--drop", args.drop)):
            if value is not None:
                raise CLIError(f"{option} goes with --csv FILE")
        return load_stream(args.stream or "drift", args.data_dir, args.n)
    if args.stream is not None:
        raise CLIError("give either --stream or --csv, not both")
    if args.data_dir is not None:
        raise CLIError("--data-dir is the folder of the built-in streams; --csv reads FILE")
    if args.target is None:
        raise CLIError("--csv needs --target COLUMN, the column to predict")
    return load_csv(args.csv, args.target, _split_names(args.drop), args.n)


def recalibrated_spec(spec: ModelSpec) -> ModelSpec:
    """The row ``--recalibrate`` adds beside ``spec``'s model: for a model that recalibrates
    itself (``spec.recalibrates``: this package's, ``EDOEBE(recalibrate=True)`` by default) the
    same model without its recalibration (``recalibrate=False``), so that the table compares the
    two; any other model wrapped in :class:`river_doebe.conf.Recalibrated` (its defaults)."""
    if spec.recalibrates:

        def without(settings):
            return spec.factory(settings).clone({"recalibrate": False})

        return ModelSpec(f"{spec.label} recalibrate=False",
                         f"{spec.help}, without its online recalibration (recalibrate=False)",
                         without, has_dist=True, warms_up=spec.warms_up)

    def make(settings):
        from river_doebe.conf import Recalibrated

        return Recalibrated(spec.factory(settings))

    return ModelSpec(f"{spec.label} recalibrated",
                     f"{spec.help}, recalibrated online (river_doebe.conf.Recalibrated)", make,
                     has_dist=True, warms_up=spec.warms_up, recalibrates=True)


def fit_warmup(
    args: argparse.Namespace, settings: dict, spec: ModelSpec, stream: str, n: int
) -> str:
    """Fit the warm-up to a stream of ``n`` samples unless ``--n-warmup`` was given; returns
    what the header line says about it."""
    if not spec.warms_up:
        return ""
    given = args.n_warmup is not None
    note = ""
    if given:
        settings["n_warmup_rule"] = "--n-warmup"
    else:
        default = settings["n_warmup"]
        settings["n_warmup"] = fitted_warmup(default, n)
        if settings["n_warmup"] == default:
            settings["n_warmup_rule"] = "default"
        else:
            settings["n_warmup_rule"] = f"a fifth of the stream, at least {MIN_FITTED_WARMUP}"
            note = (
                f"; the warm-up is fitted to the stream: {settings['n_warmup']} samples, a fifth "
                f"of it (at least {MIN_FITTED_WARMUP}), as the default {default} is more than a "
                "fifth (--n-warmup sets it)"
            )
    if settings["n_warmup"] >= n:
        if given:
            raise CLIError(
                f"--n-warmup ({settings['n_warmup']}) must be smaller than the number of "
                f"samples ({n}) of stream {stream!r}"
            )
        raise CLIError(
            f"stream {stream!r} has {n} samples, too few for a warm-up of at least "
            f"{MIN_FITTED_WARMUP}; give --n-warmup N with 2 <= N < {n}"
        )
    return note


def cmd_evaluate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    settings = warmup_settings(args, parser)
    keyed.check_options(args)
    if args.keys is not None:  # many keyed streams on Ray (river_doebe/cli/keyed.py)
        if args.recalibrate:
            raise CLIError("--recalibrate is not available with --keys")
        return keyed.cmd_keyed(args, parser, settings, MODELS[args.model])
    peers = peer_keys(args)
    if args.plot is not None:
        check_plot_path(args.plot)  # fail before the long run, not after it
    stream, dataset, n, var_y = _load(args)
    spec = MODELS[args.model]
    warmup_note = fit_warmup(args, settings, spec, stream, n)
    for target in (args.json, args.plot):
        if target is not None:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise CLIError(f"cannot create the folder of {str(target)!r}: {err}") from None
    every = args.every or max(1, n // 200)
    progress = not args.no_progress

    entries = [(args.model, spec, True)] + [(k, PEERS[k], False) for k in peers]
    if args.recalibrate:
        suffix = "recalibrate-false" if spec.recalibrates else "recalibrated"
        entries.insert(1, (f"{args.model}-{suffix}", recalibrated_spec(spec), False))
    n_features = getattr(dataset, "n_features", None)
    print(
        f"{PROG} evaluate: stream {stream!r} ({n} samples, {n_features} features); "
        f"model {spec.label} (n_warmup={settings['n_warmup']}, n_samples="
        f"{settings['n_samples']}, starts={settings['starts']}, seed={settings['seed']}"
        + ("; recalibrated online, the default" if spec.recalibrates else "") + ")"
        + (f"; peers: {', '.join(PEERS[k].label for k in peers)}" if peers else "")
        + warmup_note,
        flush=True,
    )
    empty = getattr(dataset, "empty_cells", None)
    if empty:
        count, column, row = empty
        print(
            f"note: {count} empty cell{'s' if count > 1 else ''} in the feature columns (the "
            f"first: column {column!r}, row {row}) {'are' if count > 1 else 'is'} read as a "
            "missing value: the key is left out of that row's dict",
            flush=True,
        )
    runs = []
    width = max(len(s.label) for _, s, _ in entries)
    for key, s, is_main in entries:
        model = s.factory(settings)
        record = is_main and key == "edoebe"
        runs.append(
            run_model(key, s, model, dataset, n, var_y, every, progress=progress,
                      record_weights=record, width=width)
        )
    print()
    print(format_table(runs))
    print(
        f"\nnMSE: MSE / Var(y) over all {n} samples; PLL: mean log predictive density of y "
        "(an ensemble's: its mixture, recalibrated where the model recalibrates it; y as given, "
        "not standardised; '-' for models without a "
        "distribution); cov90 / cov50: share of y inside the central 90% / 50% interval of the "
        "predictive (calibrated: 90% / 50%); CRPS: continuous ranked probability score, in y's "
        "units (lower is better). Every sample "
        "is predicted before it is learnt, the warm-up included; time and samples/s include "
        "the warm-up fit and the scoring."
    )
    for r in runs:
        if r.warnings:
            if args.verbose:
                print(f"\nwarnings from {r.label}:")
                for msg in r.warnings:
                    print(f"  {msg}")
            else:
                print(f"note: {r.label} raised {len(r.warnings)} distinct warning(s) "
                      "(--verbose shows them)")
    if args.json is not None:
        source = None
        if isinstance(dataset, CSVStream):
            source = {"csv": str(dataset.path), "target": dataset.target,
                      "features": dataset.features, "dropped": dataset.dropped}
        try:
            write_json(args.json, stream, n, var_y, settings, runs, source=source)
        except OSError as err:
            raise CLIError(f"cannot write {str(args.json)!r}: {err}") from None
        print(f"wrote {args.json}")
    if args.plot is not None:
        try:
            write_plot(args.plot, stream, runs)
        except OSError as err:
            raise CLIError(f"cannot write {str(args.plot)!r}: {err}") from None
        print(f"wrote {args.plot}")
    return 0


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``river-doebe`` and ``python -m river_doebe``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        if args.command == "list":
            return cmd_list(args)
        if args.command == "compile":
            return cmd_compile(args)
        status = cmd_evaluate(args, parser)
    except CLIError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(f"total time: {time.perf_counter() - start:.1f} s")
    return status
