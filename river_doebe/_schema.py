"""Turning river's feature dicts into arrays, once per sample, with one documented policy.

The policy, shared by every estimator of the package (the README's "Input policy"):

- The input schema is an ordered list of feature names. The names of the first sample are
  sorted, so the order in which a dict lists its keys never matters; names that join later are
  appended (sorted among those arriving together).
- ``learn_one`` / ``learn_many`` add a feature the schema has not seen (river's sparse encoders
  emit only the active keys) when the model can take it exactly; otherwise the new feature is
  ignored with one warning that names it. ``predict_one`` never changes the schema: a feature it
  has not seen is ignored.
- An empty dict is a valid sample with no active feature (a first empty sample fixes an empty
  schema, which grows as features arrive).
- A schema feature missing from a sample takes the model's ``fill`` value: ``0.0`` for a model
  that uses its inputs as given, NaN (a missing value, resolved by the model's standardisation)
  for one that standardises them (:class:`river_doebe.EDOEBE`).
- Values must be real numbers: ``bool`` and NumPy's ``bool_`` count as 0/1, and every NumPy
  integer and float type is a number. A value of another type raises ``TypeError``; NaN,
  infinity or a number too large for a float raises ``ValueError``. Both name the feature, and
  both are raised before the estimator touches its state.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["Schema", "check_row", "check_target", "check_targets"]

_FAST_TYPES = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})

#: NumPy floats narrower than a Python float: compared with one, NumPy rounds the Python float to
#: their precision, so a float32 0.0 equals 1e-254 (and float32 0.1 equals 0.1) although the two
#: convert to different float64s
_NARROW = frozenset({np.float16, np.float32})

#: the types whose values may reuse the last sample's array (:meth:`Schema._again`): accepted
#: numbers that compare exactly with a Python float. A value of any other type, even one that
#: compares equal (a ``Decimal``, a complex, a NumPy array), is validated anew: the input policy
#: refuses it, whatever was converted before.
_REUSABLE = (_FAST_TYPES - _NARROW) | {bool, np.bool_}


def _no_values(x):
    return ()


def _sort_key(name):
    return (type(name).__name__, str(name))


class Schema:
    """An ordered list of feature names, and the dict -> array conversion.

    Parameters
    ----------
    names
        The feature names.
    sort
        Whether to sort them (the first sample's names are sorted; an extension keeps the old
        order and appends).
    """

    __slots__ = ("names", "index", "_get", "_last")

    def __init__(self, names: Iterable[Hashable], sort: bool = True) -> None:
        names = tuple(sorted(names, key=_sort_key)) if sort else tuple(names)
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1}, key=_sort_key)
            raise ValueError(f"duplicate feature names {dupes}")
        self.__setstate__(names)

    @classmethod
    def from_sample(cls, x: dict) -> Schema:
        """The schema of a first sample (an empty sample gives the empty schema)."""
        if not isinstance(x, dict):
            raise TypeError(f"expected a dict of features, got {type(x).__name__}")
        return cls(x.keys())

    def __len__(self) -> int:
        return len(self.names)

    def __getstate__(self):
        return self.names

    def __setstate__(self, names):
        self.names = names
        self._last: tuple | None = None  # the values and array of the last sample converted
        self.index = {name: i for i, name in enumerate(names)}
        # all features present (the usual case): one C-level lookup of every value
        if not names:
            self._get = _no_values
            return
        getter = operator.itemgetter(*names)
        self._get = getter if len(names) > 1 else (lambda x: (getter(x),))

    def extend(self, new_names: Iterable[Hashable]) -> Schema:
        """The schema with ``new_names`` appended (sorted among themselves)."""
        return Schema(self.names + tuple(sorted(new_names, key=_sort_key)), sort=False)

    # ------------------------------------------------------------------ dicts
    def _values(self, x: dict) -> tuple[Any, bool]:
        if not isinstance(x, dict):
            raise TypeError(f"expected a dict of features, got {type(x).__name__}")
        try:
            return self._get(x), False
        except KeyError:
            return [x.get(name, 0.0) for name in self.names], True

    def to_array(self, x: dict, fill: float = 0.0) -> np.ndarray:
        """Return the sample as a float64 array in schema order, validating every value used
        (a key that is not in the schema is ignored; a schema feature that ``x`` lacks takes
        the value ``fill``)."""
        vals, missing = self._values(x)
        if missing:
            return self._filled(self._convert(vals), x, fill)
        z = self._again(vals)
        if z is None:
            z = self._convert(vals)
            # (only values that may be reused are kept: see _REUSABLE)
            self._last = (vals, z) if _REUSABLE.issuperset(map(type, vals)) else None
        return z

    def _again(self, vals: Any) -> np.ndarray | None:
        """The array of the last sample :meth:`to_array` converted, if ``vals`` are its values
        (river's loop learns the sample it has just predicted). Only values of the plain number
        types (:data:`_REUSABLE`) are reused: equal values of those types give equal floats, but
        for the zeros' signs (a value equal to zero always converts anew), while a value of
        another type may compare equal and yet be refused (a ``Decimal``, a complex, a NumPy
        array) or convert to another float (a NumPy float narrower than a Python float, see
        :data:`_NARROW`), so it is validated and converted anew, every time. The array is read,
        never written, by those who get it."""
        last = self._last
        try:
            if (last is not None and last[0] == vals and 0.0 not in vals
                    and _REUSABLE.issuperset(map(type, vals))):
                return last[1]
        except (TypeError, ValueError):  # (a value that does not compare: validated anew)
            pass
        return None

    def to_array_and_new(self, x: dict, fill: float = 0.0) -> tuple[np.ndarray, list]:
        """:meth:`to_array` and the keys of ``x`` that are not in the schema (usually none,
        which costs one ``len`` check)."""
        vals, missing = self._values(x)
        z: np.ndarray | None = None if missing else self._again(vals)
        if z is None:
            z = self._convert(vals)
            if missing:
                z = self._filled(z, x, fill)
        if not missing and len(x) == len(self.names):
            return z, []
        return z, [k for k in x if k not in self.index]

    def values_and_new(self, x: dict, fill: float = 0.0) -> tuple[tuple | list, list]:
        """The values of ``x`` in schema order (``fill`` for a missing key), not converted nor
        checked (a batch's rows are checked whole with :func:`check_row` first), and the keys of
        ``x`` that are not in the schema."""
        vals, missing = self._values(x)
        if not missing:
            if len(x) == len(self.names):
                return vals, []
        elif fill != 0.0:
            vals = [x.get(name, fill) for name in self.names]
        return vals, [k for k in x if k not in self.index]

    def _filled(self, z: np.ndarray, x: dict, fill: float) -> np.ndarray:
        """``z`` (missing keys at 0, as validated) with ``fill`` where ``x`` lacks a feature."""
        if fill != 0.0:
            z[[i for i, name in enumerate(self.names) if name not in x]] = fill
        return z

    def new_names(self, x: dict) -> list:
        """The keys of ``x`` that are not in the schema."""
        return [k for k in x if k not in self.index]

    def _convert(self, vals: Sequence) -> np.ndarray:
        return _validated(self.names, vals)

    # ------------------------------------------------------------------ frames
    def frame_new_names(self, X: Any) -> list:
        """The columns of the DataFrame ``X`` that are not in the schema."""
        return [c for c in X.columns if c not in self.index]

    def frame_to_array(self, X: Any, fill: float = 0.0) -> np.ndarray:
        """Convert a pandas DataFrame (rows in stream order) under the same policy; columns
        that are not in the schema are ignored, and a schema feature that is not a column
        takes the value ``fill``."""
        check_frame(X)
        out = np.full((len(X), len(self.names)), fill, dtype=np.float64)
        for name in X.columns:
            j = self.index.get(name)
            if j is not None:
                out[:, j] = column_values(X, name)
        return out


def _plain_and_finite(vals: Sequence) -> bool:
    """The usual sample: plain number types only, and one finite sum (a NaN or an infinity makes
    the sum non-finite; an int beyond the float range makes it raise, as the sum is taken in
    floats), so every value is fine."""
    if not _FAST_TYPES.issuperset(map(type, vals)):
        return False
    try:
        total = sum(vals, 0.0)
    except OverflowError:
        return False
    return total - total == 0


def _validated(names: Sequence[Hashable], vals: Sequence) -> np.ndarray:
    """``vals`` as a float64 array, every value checked (a real, finite number that fits a
    float); an error names the feature."""
    if not _plain_and_finite(vals):
        _check_values(names, vals)
        for name, v in zip(names, vals):
            _check_finite(name, v)
    return np.array(vals, dtype=np.float64)


def check_row(x: Any) -> None:
    """Validate every value of the dict ``x`` (the features a model would ignore included)."""
    if not isinstance(x, dict):
        raise TypeError(f"expected a dict of features, got {type(x).__name__}")
    vals = tuple(x.values())
    if not _plain_and_finite(vals):
        _validated(tuple(x), vals)  # (names the feature that is wrong)


def _check_values(names, vals):
    for name, v in zip(names, vals):
        if v is None:
            raise TypeError(
                f"feature {name!r} is None; a missing value is a key left out of the sample "
                "(see the input policy: a standardising model reads it as at its mean), or "
                "impute it first (river's preprocessing.StatImputer)"
            )
        if isinstance(v, str | bytes):
            raise TypeError(
                f"feature {name!r} has a value of type {type(v).__name__} ({v!r}); only real "
                "numbers are accepted: encode a categorical feature first (river's "
                f"compose.Select({name!r}) | preprocessing.OneHotEncoder(), beside the numeric "
                "features; river's feature_extraction.BagOfWords for a text)"
            )
        if not isinstance(v, numbers.Real | np.bool_):
            raise TypeError(
                f"feature {name!r} has a value of type {type(v).__name__} ({v!r}); "
                "only real numbers are accepted"
            )


def _check_finite(name: Hashable, v: Any) -> None:
    try:
        with np.errstate(over="ignore"):  # (a long double beyond the float range: named below)
            f = float(v)
    except OverflowError:
        f = None
    if f is None or (math.isinf(f) and isinstance(v, np.floating) and np.isfinite(v)):
        raise ValueError(
            f"feature {name!r} is {_short(v)}, too large for a float; rescale it"
        ) from None
    if not math.isfinite(f):
        raise ValueError(
            f"feature {name!r} is {v!r}; NaN and infinity are not accepted (a missing value is "
            "a key left out of the sample)"
        )


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 24 else f"{text[:8]}...({len(text)} digits)"


def check_frame(X: Any) -> None:
    """Refuse a DataFrame whose column names repeat."""
    if not X.columns.is_unique:
        dupes = X.columns[X.columns.duplicated()].unique().tolist()
        raise ValueError(f"the DataFrame has duplicate column names {dupes}")


def column_values(X: Any, name: Hashable) -> np.ndarray:
    """Column ``name`` of a DataFrame as float64, validated: numeric and boolean columns
    (pandas' nullable ``Int64``, ``Float64`` and ``boolean`` included) are converted, a missing
    value or a non-finite one raises ``ValueError`` naming the column, any other column
    (``category``, strings, objects that are not real numbers) ``TypeError``."""
    import pandas as pd

    col = X[name]
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        raise TypeError(
            f"feature {name!r} is a categorical column; encode it first (for example with "
            "river's preprocessing.OneHotEncoder)"
        )
    if pd.api.types.is_bool_dtype(dtype) or (
        pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_object_dtype(dtype)
    ):
        try:
            values = col.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            values = None
    else:
        values = None
    if values is None:
        vals = col.tolist()
        _check_values([name] * len(vals), vals)
        try:
            values = np.array(vals, dtype=np.float64)
        except OverflowError:
            for v in vals:
                _check_finite(name, v)
            raise  # pragma: no cover
    if not np.isfinite(values).all():
        raise ValueError(
            f"feature {name!r} has missing, NaN or infinite values (first at row "
            f"{int(np.flatnonzero(~np.isfinite(values))[0])})"
        )
    return values


def check_target(y: Any) -> float:
    """Validate a regression target and return it as a float."""
    if type(y) is float and y - y == 0.0:  # the usual case, without the ABC checks below
        return y
    # NumPy's bool_ is no numbers.Real, but counts as 0/1 as a bool does (and as in the features)
    if isinstance(y, str | bytes) or not isinstance(y, numbers.Real | np.bool_):
        raise TypeError(f"the target must be a real number, got {type(y).__name__} ({y!r})")
    try:
        y = float(y)
    except OverflowError:
        raise ValueError(f"the target is {_short(y)}, too large for a float") from None
    if not math.isfinite(y):
        raise ValueError(f"the target is {y!r}; NaN and infinity are not accepted")
    return y


def check_targets(y: Any, n: int) -> np.ndarray:
    """Validate the regression targets of a batch of ``n`` rows; return them as float64 ``(n,)``.

    A column vector ``(n, 1)`` is accepted. Raises ``ValueError`` for a wrong shape (stating
    both) or a missing / non-finite target (naming its row), ``TypeError`` for targets that are
    not real numbers.
    """
    raw = y.to_numpy() if hasattr(y, "to_numpy") else y
    arr = np.asarray(raw)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.shape != (n,):
        raise ValueError(f"got {n} rows of features but targets of shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        for i, v in enumerate(arr.tolist()):
            if v is None or isinstance(v, str | bytes) or not isinstance(v, numbers.Real):
                raise TypeError(
                    f"the targets must be real numbers; row {i} is {type(v).__name__} ({v!r})"
                )
        try:
            arr = np.array(arr.tolist(), dtype=np.float64)
        except OverflowError:
            for i, v in enumerate(arr.tolist()):
                try:
                    float(v)
                except OverflowError:
                    raise ValueError(f"the target of row {i} is too large for a float") from None
            raise  # pragma: no cover
    arr = arr.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(
            f"the target of row {int(bad[0])} is {arr[bad[0]]!r}; NaN and infinity are not "
            "accepted"
        )
    return arr
