"""Every dataset by its short name: `load`, the lists of names, and those available now."""

from __future__ import annotations

import os
from typing import Any

from river_doebe.datasets.base import data_dir
from river_doebe.datasets.files import (
    UCI,
    UCI_NAMES,
    Banana,
    CaData,
    CPUSmall,
    Elevators,
    Kuka1,
    Sarcos,
    SarcosTest,
)
from river_doebe.datasets.generated import Drift, Friedman1, Friedman2, StaticThenDrift

__all__ = ["GENERATED_NAMES", "NAMES", "PAPER_NAMES", "available", "load"]

_GENERATED = {
    "friedman1": Friedman1,
    "friedman2": Friedman2,
    "drift": Drift,
    "static_then_drift": StaticThenDrift,
}

_FILES = {
    "elevators": Elevators,
    "cadata": CaData,
    "cpusmall": CPUSmall,
    "sarcos": Sarcos,
    "sarcos_test": SarcosTest,
    "kuka1": Kuka1,
    "banana": Banana,
}

#: Every name `load` accepts.
NAMES = tuple(_GENERATED) + tuple(_FILES) + UCI_NAMES

#: The names of the generated streams, which need no data file.
GENERATED_NAMES = tuple(_GENERATED)

#: The paper's seven regression streams (Table 1), in the paper's order.
PAPER_NAMES = ("friedman1", "friedman2", "elevators", "sarcos", "kuka1", "cadata", "cpusmall")


def _normalise(name: object) -> str:
    return str(name).strip().lower().replace("-", "_").replace(" ", "_")


def load(name: str, directory: str | os.PathLike | None = None, **kwargs: Any) -> Any:
    """Return the dataset registered under ``name``.

    Parameters
    ----------
    name
        One of `NAMES` (case-insensitive; ``-`` and spaces count as ``_``).
    directory
        Folder holding the data file, for file-based datasets (see `data_dir`). Ignored by
        generated datasets.
    kwargs
        Passed on to the dataset's constructor, e.g. ``shuffle=True, seed=0`` for ``"banana"``
        or ``n_samples=1000`` for ``"friedman1"``.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid ones.
    FileNotFoundError
        When a file-based dataset's file cannot be found.

    Examples
    --------
    >>> from river_doebe import datasets
    >>> datasets.load("drift", n_samples=300).n_samples
    300
    >>> datasets.load("mnist")
    Traceback (most recent call last):
    ...
    ValueError: Unknown dataset 'mnist'. Valid names: friedman1, friedman2, drift, ...

    """
    key = _normalise(name)
    if key in _GENERATED:
        return _GENERATED[key](**kwargs)
    if key in _FILES:
        return _FILES[key](directory=directory, **kwargs)
    if key in UCI_NAMES:
        return UCI(key, directory=directory, **kwargs)
    raise ValueError(f"Unknown dataset {name!r}. Valid names: {', '.join(NAMES)}.")


def available(directory: str | os.PathLike | None = None) -> tuple[str, ...]:
    """Return the names of `NAMES` that can be loaded now: generated ones, and those whose file
    is in the data folder (see `data_dir`; none when no folder is configured).

    Examples
    --------
    >>> import tempfile
    >>> from river_doebe import datasets
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     datasets.available(folder)
    ('friedman1', 'friedman2', 'drift', 'static_then_drift')

    """
    try:
        folder = data_dir(directory)
    except FileNotFoundError:
        folder = None
    names = list(_GENERATED)
    for name in NAMES[len(_GENERATED) :]:
        if folder is not None and (folder / f"{name}.npz").is_file():
            names.append(name)
    return tuple(names)
