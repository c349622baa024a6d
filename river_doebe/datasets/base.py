"""What every dataset of the package shares.

- Locating the data files: `ENV_VAR`, `data_dir` and the lookup of one file, whose error says
  every place it looked and how to supply the file.
- `ArrayStream`: a stream backed by two arrays ``(X, y)``, built once, iterated as river dicts,
  and handed out by ``arrays()``.
- The two kinds of dataset: `GeneratedDataset` (a synthetic stream drawn from a seed) and
  `NpzDataset` (a stream read from ``<name>.npz``, whose header is checked when the dataset is
  made and whose data are read on first use).
- The docstring machinery. A dataset class writes its summary and description; the sections
  every dataset has (Parameters, Examples, References) are built from class attributes, so the
  parameters shared by several datasets, the example that a file-based dataset's docstring
  shows and the citation of the DOEBE paper are written once, here. See `ArrayStream`.
"""

from __future__ import annotations

import inspect
import os
import pathlib
import textwrap
import warnings
import zipfile
from collections.abc import Iterable
from typing import Any

import numpy as np
from river.datasets import base

__all__ = [
    "ENV_VAR",
    "PAPER",
    "ArrayStream",
    "GeneratedDataset",
    "NpzDataset",
    "data_dir",
    "generic_names",
]

#: Environment variable naming the folder that holds the ``.npz`` data files.
ENV_VAR = "RIVER_DOEBE_DATA"

#: The DOEBE paper, cited by every dataset it uses (with where it uses it).
PAPER = (
    "D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions. "
    "Transactions on Machine Learning Research"
)

#: What the parameters that several datasets share mean, by name. ``{filename}`` is replaced by
#: the dataset's file name.
PARAMETERS = {
    "n_samples": "Length of the stream.",
    "n_features": "Number of inputs $d$.",
    "noise": "Standard deviation $\\sigma$ of the Gaussian observation noise.",
    "drift": "Standard deviation $\\delta$ of each random-walk step of each coefficient.",
    "seed": "Seed of ``np.random.RandomState``.",
    "directory": "Folder that holds ``{filename}``. Defaults to the ``RIVER_DOEBE_DATA`` "
    "environment variable (see `data_dir`).",
}

# The text of a docstring is wrapped to this width before it is indented, so that help() shows
# lines of at most 100 characters, as in the source.
_WIDTH = 92


def generic_names(d: int) -> tuple[str, ...]:
    """Feature names ``x0, x1, ...`` zero-padded to a common width, so that sorting them (as the
    estimators of this package do) keeps the column order."""
    width = len(str(d - 1)) if d > 1 else 1
    return tuple(f"x{j:0{width}d}" for j in range(d))


def check_n_samples(n_samples: Any) -> None:
    if int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")


# ---------------------------------------------------------------------------------------------
# Locating data files
# ---------------------------------------------------------------------------------------------


def _how_to_supply(filename: str) -> str:
    return (
        f"Pass the folder that holds {filename!r} as `directory=...`, or set the environment "
        f"variable {ENV_VAR} to it. The file must be a NumPy .npz archive with float64 arrays "
        "'X' (n, d) and 'y' (n,), rows in stream order."
    )


def data_dir(directory: str | os.PathLike | None = None) -> pathlib.Path:
    """Resolve the folder that holds the ``.npz`` data files.

    The folder is ``directory`` when it is given; otherwise the value of the environment variable
    ``RIVER_DOEBE_DATA``. A leading ``~`` is expanded.

    Parameters
    ----------
    directory
        A folder, as a string or path, or ``None`` to use the environment variable.

    Returns
    -------
    The folder, as a ``pathlib.Path``.

    Raises
    ------
    FileNotFoundError
        If neither is set, or the folder does not exist. The message says where it looked and
        how to supply the folder.

    Examples
    --------
    >>> import tempfile
    >>> from river_doebe import datasets
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     datasets.data_dir(folder).is_dir()
    True

    """
    if directory is not None:
        path = pathlib.Path(directory).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"The data folder {str(path)!r} (the `directory` argument) does not exist."
            )
        return path
    env = os.environ.get(ENV_VAR)
    if not env:
        raise FileNotFoundError(
            f"No data folder given: the `directory` argument is None and the environment "
            f"variable {ENV_VAR} is not set. Pass `directory=...` or set {ENV_VAR} to the folder "
            "that holds the .npz data files."
        )
    path = pathlib.Path(env).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"The data folder {str(path)!r} (from the environment variable {ENV_VAR}) does not "
            "exist."
        )
    return path


def _find_file(
    filename: str, directory: str | os.PathLike | None = None, hint: str = ""
) -> pathlib.Path:
    """Return the path of ``filename``, or raise a FileNotFoundError naming every place looked."""
    hint = f" {hint}" if hint else ""
    if directory is not None:
        path = pathlib.Path(directory).expanduser() / filename
        if path.is_file():
            return path
        raise FileNotFoundError(
            f"Data file {filename!r} not found: looked for {str(path)!r} (from the `directory` "
            f"argument).{hint} {_how_to_supply(filename)}"
        )
    env = os.environ.get(ENV_VAR)
    if env:
        path = pathlib.Path(env).expanduser() / filename
        if path.is_file():
            return path
        where = f"looked for {str(path)!r} (from the environment variable {ENV_VAR})"
    else:
        where = f"the `directory` argument is None and the environment variable {ENV_VAR} is unset"
    raise FileNotFoundError(
        f"Data file {filename!r} not found: {where}.{hint} " + _how_to_supply(filename)
    )


def _npz_shapes(path: pathlib.Path) -> dict[str, tuple[int, ...]]:
    """Read the shapes of the arrays of a ``.npz`` file from their headers (no decompression)."""
    shapes = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if not member.endswith(".npy"):
                    continue
                with archive.open(member) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, _ = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, _, _ = np.lib.format.read_array_header_2_0(fh)
                shapes[member[: -len(".npy")]] = tuple(shape)
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise ValueError(f"{str(path)!r} is not a readable NumPy .npz archive: {err}") from err
    return shapes


# ---------------------------------------------------------------------------------------------
# Docstrings
# ---------------------------------------------------------------------------------------------


def _fill(text: str, first: str, rest: str) -> str:
    # URLs and names with hyphens stay whole
    return textwrap.fill(
        " ".join(text.split()), width=_WIDTH, initial_indent=first, subsequent_indent=rest,
        break_long_words=False, break_on_hyphens=False,
    )


def _section(title: str, body: str) -> str:
    return f"{title}\n{'-' * len(title)}\n{body}"


def build_docstring(
    text: str, parameters: Iterable = (), examples: str = "", references: Iterable[str] = ()
) -> str:
    """A dataset's docstring: ``text`` (summary and description), then the Parameters,
    Examples and References sections.

    ``parameters`` holds ``(name, description)`` pairs, ``references`` the texts of the
    references (numbered in order). The result is indented as a class docstring in the source
    is, which river's ``Dataset.__repr__`` expects when it reads the description and the
    parameters back.
    """
    sections = [inspect.cleandoc(text)]
    if parameters:
        sections.append(
            _section("Parameters", "\n".join(f"{name}\n{_fill(desc, '    ', '    ')}"
                                             for name, desc in parameters))
        )
    if examples:
        sections.append(_section("Examples", inspect.cleandoc(examples)))
    if references:
        sections.append(
            _section("References", "\n".join(_fill(ref, f"[^{k}]: ", "    ")
                                             for k, ref in enumerate(references, start=1)))
        )
    body = textwrap.indent("\n\n".join(sections), "    ")
    return body[len("    "):] + "\n\n    "


# ---------------------------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------------------------

_DOC_ATTRIBUTES = ("_doc_parameters", "_doc_examples", "_doc_references", "_doc_paper")


class ArrayStream:
    """Mixin: a dataset backed by two arrays, built once and cached.

    A subclass that sets one of the ``_doc_*`` attributes below gets its docstring built by
    `build_docstring` when the class is made: its own docstring gives the summary and the
    description, and

    - ``_doc_parameters`` lists its parameters: a name of `PARAMETERS`, or a ``(name,
      description)`` pair for one of its own;
    - ``_doc_examples`` holds its examples (doctest text);
    - ``_doc_references`` holds the texts of its references;
    - ``_doc_paper``, where the DOEBE paper uses the stream (``"Table 1, Elevators"``), adds the
      paper as the last reference.

    """

    feature_names: tuple[str, ...]

    _doc_parameters: tuple = ()
    _doc_examples: str = ""
    _doc_references: tuple = ()
    _doc_paper: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if any(name in cls.__dict__ for name in _DOC_ATTRIBUTES):
            cls.__doc__ = build_docstring(
                cls.__doc__ or "", cls._doc_parameter_list(), cls._doc_example_text(),
                cls._doc_reference_list(),
            )

    @classmethod
    def _doc_parameter_list(cls) -> list[tuple[str, str]]:
        fields = {"filename": getattr(cls, "_filename", "")}
        return [
            (entry, PARAMETERS[entry].format(**fields)) if isinstance(entry, str) else entry
            for entry in cls._doc_parameters
        ]

    @classmethod
    def _doc_example_text(cls) -> str:
        return cls._doc_examples

    @classmethod
    def _doc_reference_list(cls) -> list[str]:
        paper = [f"{PAPER} ({cls._doc_paper})."] if cls._doc_paper else []
        return [*cls._doc_references, *paper]

    def _build(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _get(self) -> tuple[np.ndarray, np.ndarray]:
        cached = self.__dict__.get("_cached")
        if cached is None:
            cached = self._build()
            self.__dict__["_cached"] = cached
        return cached

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the whole stream as arrays ``(X, y)``, rows in stream order.

        ``X`` has shape ``(n_samples, n_features)`` with columns in the order of
        ``feature_names``; ``y`` has shape ``(n_samples,)``. They are fresh copies, so they may be
        modified freely.

        """
        X, y = self._get()
        return X.copy(), y.copy()

    def __iter__(self):
        X, y = self._get()
        names = self.feature_names
        for row, target in zip(X.tolist(), y.tolist(), strict=True):
            yield dict(zip(names, row, strict=True)), target


class GeneratedDataset(ArrayStream, base.SyntheticDataset):
    """A generated regression stream of ``n_samples`` rows of ``n_features`` inputs, named by
    `generic_names`."""

    def __init__(self, n_samples: int, n_features: int):
        check_n_samples(n_samples)
        super().__init__(task=base.REG, n_features=n_features, n_samples=n_samples)
        self.feature_names = generic_names(n_features)


class NpzDataset(ArrayStream, base.Dataset):
    """A regression stream read from the file ``_filename``, with arrays ``X`` (n, d) and ``y``
    (n,).

    A subclass gives the file name, the documented row count (a file with another one is read
    with a warning), the column count (checked), the feature names if the columns have
    documented ones, and a hint that the error shows when the file is missing. Its docstring
    gets a Parameters section for ``directory`` and an example that loads the file and shows
    its shape, skipped when the documentation is tested (the file is not shipped); the lines of
    ``_doc_examples`` follow that example, skipped too. ``_doc_call`` and ``_doc_shape`` change
    the constructor call and the shape the example shows.
    """

    _filename: str = ""
    _n_rows: int | None = None
    _n_cols: int = 0
    _names: tuple[str, ...] | None = None
    _hint: str = ""

    _doc_parameters: tuple = ("directory",)
    _doc_call: str | None = None
    _doc_shape: tuple[int, int] | None = None

    def __init__(self, directory=None):
        self.directory = directory
        self.path = _find_file(self._filename, directory, self._hint)
        shapes = _npz_shapes(self.path)
        if "X" not in shapes or "y" not in shapes:
            raise ValueError(
                f"{str(self.path)!r} must hold arrays 'X' and 'y'; it holds {sorted(shapes)}."
            )
        sx, sy = shapes["X"], shapes["y"]
        if len(sx) != 2 or len(sy) != 1 or sx[0] != sy[0]:
            raise ValueError(
                f"{str(self.path)!r}: expected X of shape (n, d) and y of shape (n,), got X "
                f"{sx} and y {sy}."
            )
        if sx[1] != self._n_cols:
            raise ValueError(
                f"{str(self.path)!r}: expected {self._n_cols} feature columns in X, got {sx[1]}."
            )
        if self._n_rows is not None and sx[0] != self._n_rows:
            warnings.warn(
                f"{str(self.path)!r} has {sx[0]} rows; the documented stream has {self._n_rows}.",
                stacklevel=2,
            )
        self.feature_names = self._names or generic_names(self._n_cols)
        super().__init__(task=base.REG, n_features=sx[1], n_samples=sx[0])

    @classmethod
    def _doc_example_text(cls) -> str:
        rows, cols = cls._doc_shape or (cls._n_rows, cls._n_cols)
        lines = [
            f">>> dataset = datasets.{cls._doc_call or f'{cls.__name__}()'}",
            ">>> dataset.n_samples, dataset.n_features",
            f"({rows}, {cols})",
            *inspect.cleandoc(cls._doc_examples).splitlines(),
        ]
        skipped = [f"{line}  # doctest: +SKIP" if line.startswith((">>>", "...")) else line
                   for line in lines]
        return "\n".join(
            ["This example needs the data file, so it is skipped when the documentation is "
             "tested.", "", ">>> from river_doebe import datasets", *skipped]
        )

    def _build(self):
        with np.load(self.path, allow_pickle=False) as data:
            X = np.asarray(data["X"], dtype=np.float64)
            y = np.asarray(data["y"], dtype=np.float64)
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ValueError(f"{str(self.path)!r} holds NaN or infinite values.")
        return X, y

    @property
    def _repr_content(self):
        content = super()._repr_content
        content["Path"] = str(self.path)
        return content
