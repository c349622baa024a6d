"""Turning river's feature dicts into arrays, once per sample, with one documented policy.

The policy, shared by every estimator and transformer of the package:

- The input schema is fixed by the first sample the estimator sees (``learn_one``,
  ``predict_one`` or ``transform_one``). Its feature names are sorted, so the order in which a
  dict lists its keys never matters.
- A schema feature missing from a later sample counts as ``0.0``.
- A feature that was not in the first sample is ignored.
- Values must be real numbers (``bool`` counts as 0/1). A value of another type raises
  ``TypeError``; NaN or infinity raises ``ValueError``. Both name the feature, and both are raised
  before the estimator touches its state.
"""

from __future__ import annotations

import math
import numbers
import operator

import numpy as np

__all__ = ["Schema", "check_target"]

_FAST_TYPES = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})


def _sort_key(name):
    return (type(name).__name__, str(name))


class Schema:
    """An ordered, frozen list of feature names, and the dict -> array conversion."""

    __slots__ = ("names", "index", "_get")

    def __init__(self, names):
        self.__setstate__(tuple(sorted(names, key=_sort_key)))

    @classmethod
    def from_sample(cls, x: dict) -> Schema:
        if not isinstance(x, dict):
            raise TypeError(f"expected a dict of features, got {type(x).__name__}")
        if not x:
            raise ValueError("the first sample has no features, so no input schema can be fixed")
        return cls(x.keys())

    def __len__(self) -> int:
        return len(self.names)

    def __getstate__(self):
        return self.names

    def __setstate__(self, names):
        self.names = names
        self.index = {name: i for i, name in enumerate(names)}
        # all features present (the usual case): one C-level lookup of every value
        getter = operator.itemgetter(*names)
        self._get = getter if len(names) > 1 else (lambda x: (getter(x),))

    def to_array(self, x: dict) -> np.ndarray:
        """Return the sample as a float64 array in schema order, validating every value used."""
        if not isinstance(x, dict):
            raise TypeError(f"expected a dict of features, got {type(x).__name__}")
        try:
            vals = self._get(x)
        except KeyError:
            vals = [x.get(name, 0.0) for name in self.names]
        if not _FAST_TYPES.issuperset(map(type, vals)):
            _check_values(self.names, vals)
        total = sum(vals)
        if total - total != 0:  # NaN or infinity somewhere (or an overflowing sum): look closer
            for name, v in zip(self.names, vals):
                if not math.isfinite(v):
                    raise ValueError(
                        f"feature {name!r} is {v!r}; NaN and infinity are not accepted"
                    )
        return np.array(vals, dtype=np.float64)

    def frame_to_array(self, X) -> np.ndarray:
        """Convert a pandas DataFrame (rows in stream order) under the same policy."""
        n = len(X)
        out = np.zeros((n, len(self.names)), dtype=np.float64)
        for name in X.columns:
            j = self.index.get(name)
            if j is None:
                continue
            col = X[name]
            if col.dtype == object or not np.issubdtype(col.dtype, np.number) and col.dtype != bool:
                _check_values([name] * n, list(col))
            values = np.asarray(col, dtype=np.float64)
            if not np.isfinite(values).all():
                raise ValueError(f"feature {name!r} has NaN or infinite values")
            out[:, j] = values
        return out


def _check_values(names, vals):
    for name, v in zip(names, vals):
        if isinstance(v, str | bytes) or not isinstance(v, numbers.Real):
            raise TypeError(
                f"feature {name!r} has a value of type {type(v).__name__} ({v!r}); "
                "only real numbers are accepted"
            )


def check_target(y) -> float:
    """Validate a regression target and return it as a float."""
    if isinstance(y, str | bytes) or not isinstance(y, numbers.Real):
        raise TypeError(f"the target must be a real number, got {type(y).__name__} ({y!r})")
    y = float(y)
    if not math.isfinite(y):
        raise ValueError(f"the target is {y!r}; NaN and infinity are not accepted")
    return y
