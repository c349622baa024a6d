"""The labels of a binary classifier: any two hashable values, coded 0 and 1.

The first two distinct labels a classifier learns are mapped to the codes 0 and 1, in sorted
order when they can be compared (so ``False``/``True`` and ``0``/``1`` keep their natural
meaning), else in order of appearance; a third distinct label raises ``ValueError``. Like river's
``linear_model.LogisticRegression``, the probabilities are reported for ``False`` and ``True``
until two labels are known, unless the one label seen so far is not a ``bool``, in which case it
is the only key (with probability 1). When the second label sorts before the first, the codes of
the earlier labels flip: the engines turn that into an exact relabelling (``theta -> -theta``).
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

import numpy as np

__all__ = ["Labels", "argmax", "check_label", "same_label"]


def _is_bool(y: Any) -> bool:
    return isinstance(y, bool | np.bool_)


#: the label types that are never a missing value (the usual labels: checked without a comparison)
_PLAIN = frozenset({str, int})


def _is_missing(y: Any) -> bool:
    """Whether ``y`` is a missing value: ``None``, pandas' ``NA`` (a nullable ``boolean``,
    ``string`` or ``Int64`` column's missing value) or any value that differs from itself (a
    NaN of any type, pandas' ``NaT``, NumPy's ``datetime64('NaT')`` / ``timedelta64('NaT')``)."""
    if y is None:
        return True
    pd = sys.modules.get("pandas")  # (pandas is never imported here: its NA needs it loaded)
    if pd is not None and (y is pd.NA or y is pd.NaT):
        return True
    try:
        return bool(y != y)
    except Exception:  # (a comparison that is no truth value: not a missing scalar)
        return False


def check_label(y: Any) -> Any:
    """Validate a class label; return it (numpy booleans become ``bool``). A missing value
    (``None``, NaN, pandas' ``NA`` or ``NaT``, NumPy's ``NaT``) raises ``ValueError``: a sample
    without a label cannot be learnt, and it must not become a class."""
    if _is_bool(y):
        return bool(y)
    if type(y) not in _PLAIN and _is_missing(y):
        if y is None:
            raise ValueError(
                "the label is None; labels must be hashable values such as bool or str (a "
                "missing label cannot be learnt: drop the sample)"
            )
        raise ValueError(
            f"the label is {y!r}, a missing value; NaN, NA and NaT are not accepted as labels "
            "(a missing label cannot be learnt, nor become a class: drop the sample)"
        )
    if isinstance(y, numbers.Real) and not math.isfinite(float(y)):
        raise ValueError(f"the label is {y!r}; NaN and infinity are not accepted as labels")
    try:
        hash(y)
    except TypeError:
        raise TypeError(f"labels must be hashable, got a {type(y).__name__} ({y!r})") from None
    return y


def _ordered(first: Any, second: Any) -> bool:
    """Whether the pair ``(first, second)`` swaps when sorted; order of appearance if the two
    labels cannot be compared."""
    try:
        return bool(second < first)
    except TypeError:
        return False


class Labels:
    """The labels known to a binary classifier and their codes (a small, picklable value)."""

    __slots__ = ("labels", "code")

    def __init__(self, labels: tuple = (), code: int = 0) -> None:
        self.labels = labels  # () / (one label) / (code-0 label, code-1 label)
        self.code = code  # the code of the single label while only one is known

    def __getstate__(self):
        return self.labels, self.code

    def __setstate__(self, state):
        self.labels, self.code = state

    def encode(self, y: Any) -> tuple[Labels, int, bool]:
        """``(new state, code of y, whether the codes of earlier labels flip)``; pure."""
        y = check_label(y)
        labels = self.labels
        if not labels:
            code = int(y) if _is_bool(y) else 0
            return Labels((y,), code), code, False
        if len(labels) == 2:
            for code, known in enumerate(labels):
                if same_label(known, y):
                    return self, code, False
            raise ValueError(
                f"this classifier is binary and has seen the labels {labels[0]!r} and "
                f"{labels[1]!r}; got a third label {y!r} (for more classes, wrap it in river's "
                "multiclass.OneVsRestClassifier)"
            )
        (known,) = labels
        if same_label(known, y):
            return self, self.code, False
        if _ordered(known, y):
            return Labels((y, known)), 0, self.code != 1
        return Labels((known, y)), 1, self.code != 0

    def keys(self) -> tuple | None:
        """The labels of codes 0 and 1 to report, or None when one non-bool label is known."""
        if len(self.labels) == 2:
            return self.labels
        if not self.labels or _is_bool(self.labels[0]):
            return (False, True)
        return None


def same_label(a: Any, b: Any) -> bool:
    """Whether two labels are the same dictionary key."""
    try:
        return hash(a) == hash(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def argmax(proba: dict) -> Any:
    """The most probable label; the first (code 0) on a tie, as ``predict_many`` does."""
    best, best_p = None, -1.0
    for label, p in proba.items():
        if p > best_p:
            best, best_p = label, p
    return best
