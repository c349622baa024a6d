"""The streams the command line evaluates on: a built-in dataset (`load_stream`) or a user's CSV
file (`load_csv`), each checked before any model runs, and the warm-up a stream's length calls
for (`fitted_warmup`)."""

from __future__ import annotations

import contextlib
import csv
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from river_doebe.cli.base import PROG, CLIError

__all__ = ["MIN_FITTED_WARMUP", "CSVStream", "fitted_warmup", "is_generated", "load_csv",
           "load_stream"]

#: The smallest warm-up the CLI picks by itself for a short stream (a fifth of the stream).
MIN_FITTED_WARMUP = 50


def load_stream(
    name: str, data_dir: str | os.PathLike | None = None, n: int | None = None
) -> tuple[str, Any, int, float]:
    """The dataset ``name`` (``datasets.load``), its length after truncation to ``n``, and the
    variance of its targets. Generated streams are generated with ``n_samples=n``."""
    # river's datasets take a third of a second to import: not for `river-doebe --help`
    from river.datasets import base as dbase

    from river_doebe import datasets

    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in datasets.NAMES:
        raise CLIError(
            f"unknown stream {name!r}; choose one of: {', '.join(datasets.NAMES)} "
            f"(`{PROG} list` shows which are available)"
        )
    kwargs = {}
    if n is not None and is_generated(key):
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


def is_generated(key: str) -> bool:
    """Whether ``key`` names a generated stream (one that needs no data file)."""
    from river_doebe import datasets

    return key in datasets.GENERATED_NAMES


@contextlib.contextmanager
def _csv_rows(path: Path, **kwargs: Any) -> Iterator[Iterator[tuple[dict, Any]]]:
    """river's ``stream.iter_csv`` over ``path``, on a file opened (and closed, however the
    iteration ends) here: river closes a file it opened only when its rows run out, so a
    stream cut at ``--n`` left it to the garbage collector and a ``ResourceWarning`` under
    every model."""
    from river import stream
    from river.stream import utils

    buffer = utils.open_filepath(str(path), "infer")
    try:
        yield stream.iter_csv(buffer, **kwargs)
    finally:
        buffer.close()


class CSVStream:
    """The rows of a CSV file as ``(x, y)`` pairs of floats, read by river's ``stream.iter_csv``
    each time it is iterated (once per model). Built by `load_csv`, which checks the file
    first. An empty feature cell is a missing value: its key is left out of the row's dict
    (``empty_cells``: ``(count, column, row)`` of them in the rows checked, or ``None``)."""

    def __init__(self, path: Path, target: str, features: list[str], dropped: list[str],
                 empty_cells: tuple | None = None):
        self.path = path
        self.target = target
        self.features = features
        self.dropped = dropped
        self.n_features = len(features)
        self.empty_cells = empty_cells

    def __iter__(self):
        features, target = self.features, self.target
        with _csv_rows(self.path, target=target, drop=self.dropped or None) as rows:
            for x, y in rows:
                yield {k: float(x[k]) for k in features if x[k] and x[k].strip()}, float(y)


def _csv_number(value: Any, column: str, row: int, name: str, is_target: bool) -> float | None:
    if value is None or not value.strip():
        if is_target:
            raise CLIError(
                f"the target column {column!r} of {name} is empty in row {row}; every row "
                "needs a target"
            )
        return None  # an empty feature cell: a missing value
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


def load_csv(
    path: str | os.PathLike, target: str, drop: Iterable[str] = (), n: int | None = None
) -> tuple[str, Any, int, float]:
    """A user's CSV file as a stream: the counterpart of `load_stream`.

    The file is read once here, through river's ``stream.iter_csv``: the ``target`` column and
    every column not in ``drop`` must hold finite numbers in each of the first ``n`` rows (all
    rows without ``n``), or a `CLIError` names the column, the row and the value. Returns the
    stream's name (the file name), a `CSVStream`, its length and the variance of its targets.
    """
    path = Path(path)
    name = repr(path.name)
    if not path.is_file():
        raise CLIError(f"no such file: {str(path)!r} (--csv)")
    drop = list(dict.fromkeys(drop))
    ys: list[float] = []
    try:
        _check_header(path, name)
        with _csv_rows(path) as rows:
            features, empty = _check_rows(rows, name, target, drop, n, ys)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise CLIError(f"cannot read {name}: {err}") from None
    if not ys:
        raise CLIError(f"{name} has no data rows")
    var_y = float(np.var(ys))
    if not var_y > 0:
        raise CLIError(f"the target column {target!r} of {name} is constant; nMSE is undefined")
    return path.name, CSVStream(path, target, features, drop, empty), len(ys), var_y


def _check_header(path: Path, name: str) -> None:
    """Refuse a header that names a column twice: river's rows are dicts, in which the last
    of the two columns would silently take the other's place."""
    from river.stream import utils

    buffer = utils.open_filepath(str(path), "infer")
    try:
        header = next(csv.reader(buffer), [])
    finally:
        buffer.close()
    twice = list(dict.fromkeys(c for c in header if header.count(c) > 1))
    if twice:
        raise CLIError(
            f"{name} names the column{'s' if len(twice) > 1 else ''} "
            f"{', '.join(map(repr, twice))} more than once; give each column its own name"
        )


def _check_rows(
    rows: Iterable[tuple[dict, Any]], name: str, target: str, drop: list, n: int | None, ys: list
) -> tuple[list[str], tuple[int, str, int] | None]:
    """Check the rows of `load_csv`, their targets appended to ``ys``. Returns the feature
    columns and ``(count, column, row)`` of the empty feature cells (the first one's column and
    row), or ``None`` if there are none."""
    columns: list[str] | None = None
    features: list[str] = []
    n_empty = 0
    first_empty: tuple[str, int] | None = None
    for row, (x, _) in enumerate(rows, start=1):
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
            raise CLIError(f"row {row} of {name} has {len(x)} fields, its header {len(columns)}")
        for column in features:
            if _csv_number(x[column], column, row, name, is_target=False) is None:
                n_empty += 1
                first_empty = first_empty or (column, row)
        ys.append(_csv_number(x[target], target, row, name, is_target=True))
        if n is not None and len(ys) >= n:
            break
    return features, ((n_empty, *first_empty) if first_empty is not None else None)


def fitted_warmup(default: int, n: int) -> int:
    """The warm-up the CLI uses when ``--n-warmup`` is not given: the default, unless it is more
    than a fifth of the ``n`` samples, then a fifth of them, at least `MIN_FITTED_WARMUP`."""
    return min(default, max(MIN_FITTED_WARMUP, n // 5))

