"""Streams for the DOEBE paper's experiments, as river datasets.

Every dataset here is an ordinary river dataset: iterating it yields ``(x, y)`` pairs where ``x``
is a ``dict`` of floats with stable feature names and ``y`` is a float (a ``bool`` for
:class:`Banana`). Every dataset also has a fast array accessor, ``arrays()``, which returns
``(X, y)`` as NumPy arrays in stream order, for benchmarks that feed arrays to a model.

There are two kinds of datasets.

- **Generated** (no files needed): :class:`Friedman1` and :class:`Friedman2` (the paper's
  synthetic benchmarks), :class:`Drift` (a drifting stream with a regime change, for the quick
  start and the command-line default) and :class:`StaticThenDrift` (a stream in the style of the
  paper's Experiment 2: static first, drifting afterwards). :class:`KeyedDrift` interleaves many
  keys' drifting streams and yields ``(key, x, y)`` records, for
  :class:`river_doebe.distributed.KeyedModels`; it is not in the registry below, whose streams
  yield ``(x, y)``.
- **File-based**: the real streams are read from ``<name>.npz`` files holding two float64 arrays,
  ``X`` of shape ``(n, d)`` and ``y`` of shape ``(n,)``, rows in stream order. The package does not
  ship them. Pass the folder holding them as ``directory=...``, or set the environment variable
  ``RIVER_DOEBE_DATA`` to it. See :func:`data_dir`.

Feature names are ``"x0"``, ``"x1"``, ... zero-padded to a common width (``"x00"`` to ``"x16"``
for 17 features), so that sorting the names, as this package's estimators do, keeps the column
order of ``arrays()``. Datasets whose columns have documented names use them instead
(:class:`CaData`, :class:`CPUSmall`, :class:`Sarcos`, :class:`SarcosTest`); their
``feature_names`` attribute gives the column order of ``arrays()``.

Nothing is standardised here. The paper standardises ``X`` and ``y`` with the mean and standard
deviation of the first 1000 samples; that belongs to the experiment code.

The package has one module per part: :mod:`~river_doebe.datasets.base` (locating the files, the
array-backed stream, the two kinds of dataset and their docstrings),
:mod:`~river_doebe.datasets.generated`, :mod:`~river_doebe.datasets.files` and
:mod:`~river_doebe.datasets.registry`, which gives every dataset a short name (`NAMES`;
`PAPER_NAMES` are the paper's seven regression streams, `GENERATED_NAMES` those that need no
file; `available` lists those that can be loaded now):

>>> from river_doebe import datasets
>>> "friedman1" in datasets.NAMES and "uci_concrete" in datasets.NAMES
True
>>> dataset = datasets.load("friedman2", n_samples=100)
>>> dataset.n_samples, dataset.n_features
(100, 4)

"""

from river_doebe.datasets.base import ENV_VAR, data_dir
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
from river_doebe.datasets.keyed import KeyedDrift
from river_doebe.datasets.registry import GENERATED_NAMES, NAMES, PAPER_NAMES, available, load

__all__ = [
    "ENV_VAR",
    "GENERATED_NAMES",
    "NAMES",
    "PAPER_NAMES",
    "UCI_NAMES",
    "UCI",
    "Banana",
    "CPUSmall",
    "CaData",
    "Drift",
    "Elevators",
    "Friedman1",
    "Friedman2",
    "KeyedDrift",
    "Kuka1",
    "Sarcos",
    "SarcosTest",
    "StaticThenDrift",
    "available",
    "data_dir",
    "load",
]
