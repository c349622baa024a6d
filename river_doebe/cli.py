"""The ``river-doebe`` command: progressive validation of a DOEBE model against river's own.

Two subcommands::

    river-doebe list
    river-doebe evaluate [--stream drift] [--model edoebe] [--peers blr hat knn] ...
    river-doebe evaluate --csv FILE --target COLUMN [--drop COLUMN ...] ...

``evaluate`` streams a dataset of :mod:`river_doebe.datasets`, or a user's CSV file read by
river's ``stream.iter_csv`` (its numeric columns are the features), through a chosen model of
this package and through river regressors, strictly one step ahead (each sample is predicted before
it is learnt, :func:`river_doebe.evaluate.progressive_scores`), shows a progress bar per model and
prints a table: nMSE, MAE, the predictive log-likelihood (PLL) where the model gives a
predictive distribution, and samples per second. ``--json`` keeps every number and trace,
``--plot`` draws nMSE over time and the E-DOEBE's weights over time.

The default model is the drop-in ``EDOEBE()`` with the library's own defaults (a warm-up of
1,000 samples, 5 members per mode, starts 0.1, 1 and 10 times each input's range), on the
built-in :class:`~river_doebe.datasets.Drift` stream (5,000 samples); ``river-doebe evaluate``
takes about ten seconds on two cores. ``--fast`` uses a smaller warm-up (500 samples, 3 members
per mode, one start) for quick looks at long or wide streams. On a stream too short for that
warm-up to be at most a fifth of it, the warm-up is a fifth of the stream (at least 50
samples), as the header line says, unless ``--n-warmup`` is given.

Every sample is scored, the warm-up included (an E-DOEBE predicts with a Bayesian linear
fallback while it warms up), so all models are compared on the same samples. The nMSE divides
by the variance of all the streamed targets, as in the paper; the PLL is the mean log density of
the targets as given under each model's predictive distribution (an ensemble's is the mixture of
its members' Gaussians), so it moves by ``-log c`` when ``y`` is scaled by ``c`` (the paper's
figures are for standardised targets).
Errors (a missing data file, an unknown stream or model, a non-numeric CSV column, bad options)
print one line ``error: ...`` to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from river_doebe.utils import json_safe

__all__ = ["MODELS", "PEERS", "build_parser", "main"]

PROG = "river-doebe"


def _edoebe_defaults() -> dict:
    """The warm-up defaults of ``EDOEBE()`` itself (the paper's settings)."""
    import inspect

    from river_doebe import EDOEBE

    params = inspect.signature(EDOEBE).parameters
    return {k: params[k].default for k in ("n_warmup", "n_samples", "starts")}


#: Warm-up of ``river-doebe evaluate`` by default (those of ``EDOEBE()``) and with ``--fast``.
DEFAULT = _edoebe_defaults()
FAST = {"n_warmup": 500, "n_samples": 3, "starts": (1.0,)}

#: The smallest warm-up the CLI picks by itself for a short stream (a fifth of the stream).
MIN_FITTED_WARMUP = 50


class CLIError(Exception):
    """A user error: reported as ``error: <message>`` with exit status 2."""


# ---------------------------------------------------------------------------------------------
# Registries of models and peers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """A model the CLI can build: a label, a description, a factory, and whether it gives a
    predictive distribution (``predict_one(x, with_dist=True)``)."""

    label: str
    help: str
    factory: Callable
    has_dist: bool = True
    warms_up: bool = False


def _edoebe(settings):
    from river_doebe import EDOEBE

    return EDOEBE(
        n_warmup=settings["n_warmup"], n_samples=settings["n_samples"],
        starts=tuple(settings["starts"]), seed=settings["seed"],
    )


def _family(family, kind):
    """One named family (see :func:`river_doebe.warmup.family_templates`) warmed up like the
    E-DOEBE: ``"doe"`` every member dynamic (the paper's DOE-X), ``"oe"`` every member static
    (OE-X), ``"dobe"`` a single dynamic learner at the empirical-Bayes mode of the ``s = 1``
    start."""

    def make(settings):
        from river_doebe import EDOEBE

        common = {"families": (family,), "n_warmup": settings["n_warmup"],
                  "seed": settings["seed"]}
        if kind == "dobe":
            return EDOEBE(**common, n_samples=1, starts=(1.0,), static=False)
        common.update(n_samples=settings["n_samples"], starts=tuple(settings["starts"]))
        if kind == "doe":
            return EDOEBE(**common, static=False)
        return EDOEBE(**common, rw_variances=())

    return make


_FAMILY_NAMES = {
    "hsgp": "additive HSGP",
    "rff": "random Fourier features",
    "rbf": "RBF network",
    "poly": "additive polynomials (degrees 2-4)",
    "linear": "linear",
}


def _model_registry() -> dict[str, ModelSpec]:
    models = {
        "edoebe": ModelSpec(
            "E-DOEBE", "E-DOEBE: static and dynamic twins of additive HSGP, RFF and RBF members, "
            "switching weights (paper Exp. 3)", _edoebe, warms_up=True,
        )
    }
    for fam, name in _FAMILY_NAMES.items():
        tag = fam.upper() if fam in ("hsgp", "rff", "rbf") else fam.capitalize()
        models[f"doe-{fam}"] = ModelSpec(
            f"DOE-{tag}", f"DOEBE of dynamic {name} members", _family(fam, "doe"), warms_up=True
        )
        models[f"oe-{fam}"] = ModelSpec(
            f"OE-{tag}", f"DOEBE of static {name} members", _family(fam, "oe"), warms_up=True
        )
    for fam in ("hsgp", "rff", "rbf"):
        models[f"dobe-{fam}"] = ModelSpec(
            f"DOBE-{fam.upper()}", f"one dynamic {_FAMILY_NAMES[fam]} learner (empirical-Bayes "
            "mode)", _family(fam, "dobe"), warms_up=True,
        )
    return models


def _blr(smoothing=None):
    def make(settings):
        from river import linear_model, preprocessing

        return preprocessing.StandardScaler() | linear_model.BayesianLinearRegression(
            smoothing=smoothing
        )

    return make


def _lr(settings):
    from river import linear_model, preprocessing

    return preprocessing.StandardScaler() | linear_model.LinearRegression()


def _hat(settings):
    from river import preprocessing, tree

    # the leaves hold linear models, which need scaled inputs (raw Elevators: nMSE 49 vs 0.32)
    return preprocessing.StandardScaler() | tree.HoeffdingAdaptiveTreeRegressor(
        seed=settings["seed"]
    )


def _knn(settings):
    from river import neighbors, preprocessing

    return preprocessing.StandardScaler() | neighbors.KNNRegressor()


def _arf(settings):
    from river import forest, preprocessing

    return preprocessing.StandardScaler() | forest.ARFRegressor(seed=settings["seed"])


PEERS: dict[str, ModelSpec] = {
    "blr": ModelSpec(
        "BayesianLinearRegression", "river StandardScaler | linear_model.BayesianLinearRegression",
        _blr(),
    ),
    "blr-smooth": ModelSpec(
        "BayesianLinearRegression(smoothing=0.999)",
        "the same, forgetting old data (smoothing=0.999)", _blr(0.999),
    ),
    "lr": ModelSpec(
        "LinearRegression", "river StandardScaler | linear_model.LinearRegression", _lr,
        has_dist=False,
    ),
    "hat": ModelSpec(
        "HoeffdingAdaptiveTree", "river StandardScaler | tree.HoeffdingAdaptiveTreeRegressor", _hat,
        has_dist=False,
    ),
    "knn": ModelSpec(
        "KNN", "river StandardScaler | neighbors.KNNRegressor", _knn, has_dist=False
    ),
    "arf": ModelSpec("ARF", "river StandardScaler | forest.ARFRegressor", _arf, has_dist=False),
}

MODELS: dict[str, ModelSpec] = _model_registry()

DEFAULT_PEERS = ("blr", "hat", "knn")


# ---------------------------------------------------------------------------------------------
# Running one model
# ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    """The outcome of one model's progressive validation."""

    key: str
    label: str
    scores: dict
    elapsed: float
    n: int
    steps: list
    nmse_trace: list
    weights: dict | None = None
    warnings: list = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.n / self.elapsed if self.elapsed > 0 else math.inf


class _WeightRecorder:
    """Records an E-DOEBE's weights, summed by family and static/dynamic, every ``every``
    samples once it is warm."""

    def __init__(self, model, every: int):
        self.model = model
        self.every = every
        self.labels: list[str] | None = None
        self.index: np.ndarray | None = None
        self.steps: list[int] = []
        self.rows: list[np.ndarray] = []
        self.warm_at: int | None = None

    def __call__(self, t: int) -> None:
        model = self.model
        if not getattr(model, "is_warm", True):
            return
        if self.labels is None:
            self.warm_at = t
            described = model.describe()
            labels = [
                f"{m['family']} ({'dynamic' if m['dynamic'] else 'static'})" for m in described
            ]
            self.labels = list(dict.fromkeys(labels))
            self.index = np.array([self.labels.index(lab) for lab in labels])
        if t % self.every == 0 or t == self.warm_at:
            w = np.asarray(model.weights, dtype=float)
            self.steps.append(t)
            self.rows.append(np.bincount(self.index, weights=w, minlength=len(self.labels)))

    def result(self) -> dict | None:
        if not self.steps:
            return None
        table = np.vstack(self.rows)
        return {
            "steps": list(self.steps),
            "warm_at": self.warm_at,
            "groups": {lab: table[:, j].tolist() for j, lab in enumerate(self.labels)},
        }


def _iterate(dataset, n: int, bar, hook):
    """The first ``n`` samples of ``dataset``; after each one is learnt, advance the bar and
    call ``hook(t)`` (the code after ``yield`` runs when the loop asks for the next sample)."""
    for t, (x, y) in enumerate(itertools.islice(dataset, n), start=1):
        yield x, y
        if bar is not None:
            bar.update(1)
        if hook is not None:
            hook(t)


def run_model(key, spec, model, dataset, n, var_y, every, progress=True, record_weights=False,
              width=28):
    """Progressive validation of ``model`` on the first ``n`` samples of ``dataset``."""
    from river import metrics as river_metrics
    from tqdm import tqdm

    from river_doebe import evaluate, metrics

    metric_list = {"nMSE": metrics.NMSE(var_y=var_y), "MAE": river_metrics.MAE()}
    if spec.has_dist:
        metric_list["PLL"] = metrics.PredictiveLogLikelihood()
    recorder = _WeightRecorder(model, every) if record_weights else None
    bar = tqdm(total=n, desc=spec.label.ljust(width), unit="sample", disable=not progress,
               file=sys.stderr, leave=True, dynamic_ncols=True, mininterval=0.5)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = evaluate.progressive_scores(
                _iterate(dataset, n, bar, recorder), model, metric_list, every=every
            )
    finally:
        bar.close()
    messages = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    return Run(
        key=key,
        label=spec.label,
        scores={k: float(v) for k, v in result.scores.items()},
        elapsed=result.elapsed,
        n=result.n_samples,
        steps=result.steps.tolist(),
        nmse_trace=result.traces["nMSE"].tolist(),
        weights=recorder.result() if recorder is not None else None,
        warnings=messages,
    )


# ---------------------------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------------------------


def load_stream(name: str, data_dir=None, n: int | None = None):
    """The dataset ``name`` (``datasets.load``), its length after truncation to ``n``, and the
    variance of its targets. Generated streams are generated with ``n_samples=n``."""
    from river.datasets import base as dbase

    from river_doebe import datasets

    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in datasets.NAMES:
        raise CLIError(
            f"unknown stream {name!r}; choose one of: {', '.join(datasets.NAMES)} "
            f"(`{PROG} list` shows which are available)"
        )
    kwargs = {}
    if n is not None and _is_generated(key):
        kwargs["n_samples"] = n
    try:
        dataset = datasets.load(key, directory=data_dir, **kwargs)
    except FileNotFoundError as err:
        raise CLIError(f"{err} On the command line: --data-dir DIR.") from None
    except ValueError as err:
        raise CLIError(f"cannot load stream {name!r}: {err}") from None
    if dataset.task != dbase.REG:
        raise CLIError(
            f"stream {key!r} is a {dataset.task.lower()} stream; `evaluate` runs regressors"
        )
    try:
        _, y = dataset.arrays()
    except (ValueError, OSError) as err:
        raise CLIError(f"cannot read stream {key!r}: {err}") from None
    total = len(y) if n is None else min(n, len(y))
    var_y = float(np.var(y[:total]))
    if not var_y > 0:
        raise CLIError(f"the targets of stream {key!r} are constant; nMSE is undefined")
    return key, dataset, total, var_y


def _is_generated(key: str) -> bool:
    """Whether ``key`` names a generated stream (one that needs no data file)."""
    from river_doebe import datasets

    return key in datasets.GENERATED_NAMES


class CSVStream:
    """The rows of a CSV file as ``(x, y)`` pairs of floats, read by river's ``stream.iter_csv``
    each time it is iterated (once per model). Built by `load_csv`, which checks the file
    first."""

    def __init__(self, path: Path, target: str, features: list[str], dropped: list[str]):
        self.path = path
        self.target = target
        self.features = features
        self.dropped = dropped
        self.n_features = len(features)

    def __iter__(self):
        from river import stream

        converters = {name: float for name in (*self.features, self.target)}
        return stream.iter_csv(str(self.path), target=self.target, converters=converters,
                               drop=self.dropped or None)


def _csv_number(value, column: str, row: int, name: str, is_target: bool) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        if is_target:
            raise CLIError(
                f"the target column {column!r} of {name} is not numeric ({value!r} in row "
                f"{row}); `evaluate` runs regressors"
            ) from None
        raise CLIError(
            f"column {column!r} of {name} is not numeric ({value!r} in row {row}); leave it "
            f"out with --drop {column}"
        ) from None
    if not math.isfinite(number):
        raise CLIError(
            f"column {column!r} of {name} holds {value!r} in row {row}; the models take finite "
            "numbers only"
        )
    return number


def load_csv(path, target: str, drop=(), n: int | None = None):
    """A user's CSV file as a stream: the counterpart of `load_stream`.

    The file is read once here, through river's ``stream.iter_csv``: the ``target`` column and
    every column not in ``drop`` must hold finite numbers in each of the first ``n`` rows (all
    rows without ``n``), or a `CLIError` names the column, the row and the value. Returns the
    stream's name (the file name), a `CSVStream`, its length and the variance of its targets.
    """
    from river import stream

    path = Path(path)
    name = repr(path.name)
    if not path.is_file():
        raise CLIError(f"no such file: {str(path)!r} (--csv)")
    drop = list(dict.fromkeys(drop))
    columns: list[str] | None = None
    features: list[str] = []
    ys: list[float] = []
    try:
        for row, (x, _) in enumerate(stream.iter_csv(str(path)), start=1):
            if columns is None:
                columns = list(x)
                listing = ", ".join(columns)
                if target not in x:
                    raise CLIError(
                        f"--target {target!r} is not a column of {name}; its columns: {listing}"
                    )
                unknown = [c for c in drop if c not in x]
                if unknown:
                    raise CLIError(
                        f"--drop {', '.join(map(repr, unknown))}: not a column of {name}; its "
                        f"columns: {listing}"
                    )
                if target in drop:
                    raise CLIError(f"--drop lists the target column {target!r}")
                features = [c for c in columns if c != target and c not in drop]
                if not features:
                    raise CLIError(f"{name} has no feature column left besides the target")
            if len(x) != len(columns):
                raise CLIError(
                    f"row {row} of {name} has {len(x)} fields, its header {len(columns)}"
                )
            for column in features:
                _csv_number(x[column], column, row, name, is_target=False)
            ys.append(_csv_number(x[target], target, row, name, is_target=True))
            if n is not None and len(ys) >= n:
                break
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise CLIError(f"cannot read {name}: {err}") from None
    if not ys:
        raise CLIError(f"{name} has no data rows")
    var_y = float(np.var(ys))
    if not var_y > 0:
        raise CLIError(f"the target column {target!r} of {name} is constant; nMSE is undefined")
    return path.name, CSVStream(path, target, features, drop), len(ys), var_y


def fitted_warmup(default: int, n: int) -> int:
    """The warm-up the CLI uses when ``--n-warmup`` is not given: the default, unless it is more
    than a fifth of the ``n`` samples, then a fifth of them, at least `MIN_FITTED_WARMUP`."""
    return min(default, max(MIN_FITTED_WARMUP, n // 5))


# ---------------------------------------------------------------------------------------------
# Output: table, JSON, plot
# ---------------------------------------------------------------------------------------------


def _fmt(v, spec=".4f") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec)


def format_table(runs: list[Run]) -> str:
    header = ["model", "nMSE", "MAE", "PLL", "time [s]", "samples/s"]
    rows = [
        [
            r.label,
            _fmt(r.scores.get("nMSE")),
            _fmt(r.scores.get("MAE")),
            _fmt(r.scores.get("PLL")),
            _fmt(r.elapsed, ".1f"),
            _fmt(r.rate, ",.0f"),
        ]
        for r in runs
    ]
    widths = [max(len(h), *(len(row[j]) for row in rows)) for j, h in enumerate(header)]
    lines = []
    for k, row in enumerate([header, *rows]):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(path: Path, stream: str, n: int, var_y: float, settings: dict, runs,
               source: dict | None = None) -> None:
    doc = {
        "command": f"{PROG} evaluate",
        "stream": stream,
        "source": source,
        "n_samples": n,
        "var_y": var_y,
        "settings": settings,
        "scoring": "progressive (predict, then learn), every sample scored; nMSE = MSE / Var(y) "
        "over the stream; PLL = mean log predictive density of y as given (not standardised)",
        "results": [
            {
                "key": r.key,
                "model": r.label,
                "scores": r.scores,
                "elapsed_s": r.elapsed,
                "samples_per_s": r.rate,
                "trace": {"steps": r.steps, "nMSE": r.nmse_trace},
                "weights": r.weights,
                "warnings": r.warnings,
            }
            for r in runs
        ],
    }
    path.write_text(json.dumps(json_safe(doc), indent=2) + "\n")


def _import_pyplot():
    try:
        import matplotlib
    except ImportError:
        raise CLIError(
            "--plot needs matplotlib, which is not installed; install it with "
            "`pip install matplotlib` (or `pip install 'river-doebe[plot]'`)"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plot(path: Path, stream: str, runs: list[Run]) -> None:
    plt = _import_pyplot()
    weighted = [r for r in runs if r.weights]
    n_rows = 1 + len(weighted)
    fig, axes = plt.subplots(n_rows, 1, figsize=(8, 3.2 * n_rows), squeeze=False)
    ax = axes[0, 0]
    top = 0.0
    for r in runs:
        trace = np.asarray(r.nmse_trace, dtype=float)
        ax.plot(r.steps, trace, label=r.label, lw=1.4)
        tail = trace[len(trace) // 10 :]
        if tail.size and np.isfinite(tail).any():
            top = max(top, float(np.nanmax(tail)))
    ax.set_ylim(0.0, min(1.5, 1.05 * top) if top > 0 else 1.0)
    ax.set_xlabel("samples seen")
    ax.set_ylabel("nMSE (cumulative)")
    ax.set_title(f"Progressive nMSE on {stream}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    for k, r in enumerate(weighted, start=1):
        ax = axes[k, 0]
        w = r.weights
        labels = list(w["groups"])
        ax.stackplot(w["steps"], *[w["groups"][lab] for lab in labels], labels=labels, alpha=0.85)
        ax.set_xlim(0, r.n)
        ax.set_ylim(0.0, 1.0)
        if w.get("warm_at"):
            ax.axvline(w["warm_at"], color="k", ls=":", lw=1)
        ax.set_xlabel("samples seen")
        ax.set_ylabel("weight")
        ax.set_title(f"{r.label} weights by family (warm-up ends at the dotted line)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    sub = parser.add_subparsers(dest="command", metavar="{evaluate,list}")
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
    ev.add_argument("--every", type=_positive_int, default=None, metavar="K",
                    help="record the traces every K samples (default: about 200 points)")
    ev.add_argument("--json", type=Path, default=None, metavar="FILE",
                    help="write every score and trace to FILE")
    ev.add_argument("--plot", type=Path, default=None, metavar="FILE",
                    help="save a PNG of nMSE over time and the E-DOEBE weights over time")
    ev.add_argument("--no-progress", action="store_true", help="no progress bars")
    ev.add_argument("--verbose", action="store_true",
                    help="print the warnings raised while fitting (otherwise only counted)")

    sub.add_parser("list", help="list the streams, models and peers",
                   description="List the streams (and whether their data are available), "
                   "the river-doebe models and the river peers.")
    return parser


def _settings(args, parser) -> dict:
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


def _peer_keys(args) -> list[str]:
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


def cmd_list(args, out=None) -> int:
    from river_doebe import datasets

    out = out or sys.stdout
    try:
        folder = str(datasets.data_dir(None))
    except FileNotFoundError:
        folder = None
    available = set(datasets.available(None))
    print("Streams (--stream):", file=out)
    for name in datasets.NAMES:
        if _is_generated(name):
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
    print("\nModels (--model):", file=out)
    for key, spec in MODELS.items():
        print(f"  {key:<12} {spec.help}", file=out)
    print("\nPeers (--peers):", file=out)
    for key, spec in PEERS.items():
        default = "  [default]" if key in DEFAULT_PEERS else ""
        print(f"  {key:<12} {spec.help}{default}", file=out)
    return 0


def _split_names(values) -> list[str]:
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


def _fit_warmup(args, settings: dict, spec: ModelSpec, stream: str, n: int) -> str:
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


def cmd_evaluate(args, parser) -> int:
    settings = _settings(args, parser)
    peers = _peer_keys(args)
    if args.plot is not None:
        _import_pyplot()  # fail before the long run, not after it
    stream, dataset, n, var_y = _load(args)
    spec = MODELS[args.model]
    warmup_note = _fit_warmup(args, settings, spec, stream, n)
    for target in (args.json, args.plot):
        if target is not None:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise CLIError(f"cannot create the folder of {str(target)!r}: {err}") from None
    every = args.every or max(1, n // 200)
    progress = not args.no_progress

    entries = [(args.model, spec, True)] + [(k, PEERS[k], False) for k in peers]
    n_features = getattr(dataset, "n_features", None)
    print(
        f"{PROG} evaluate: stream {stream!r} ({n} samples, {n_features} features); "
        f"model {spec.label} (n_warmup={settings['n_warmup']}, n_samples="
        f"{settings['n_samples']}, starts={settings['starts']}, seed={settings['seed']})"
        + (f"; peers: {', '.join(PEERS[k].label for k in peers)}" if peers else "")
        + warmup_note,
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
        "(an ensemble's: its mixture; y as given, not standardised; '-' for models without a "
        "distribution). Every sample "
        "is predicted before it is learnt, the warm-up included; time and samples/s include "
        "the warm-up fit."
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``river-doebe`` and ``python -m river_doebe``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        if args.command == "list":
            return cmd_list(args)
        status = cmd_evaluate(args, parser)
    except CLIError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(f"total time: {time.perf_counter() - start:.1f} s")
    return status


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
