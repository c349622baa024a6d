"""Many rows at once: ``predict_learn_many`` and the block path of ``learn_many``.

A stream stored in a DataFrame or a list of dicts is learnt in blocks: every member runs through
every row of a block while its covariance stays in the cache, then the weights take the rows one
by one (:meth:`river_doebe.engine.Engine.learn_block`). The result is bit for bit what
``predict_one`` then ``learn_one`` row after row give: the same predictions (each made before its
row is learnt), the same weights, the same log evidence, the same state.

The rows that cannot be part of a block take the per-sample path, in order: a row that starts or
grows the input schema or brings back an input the warm-up left out (constant over its
window), a label not seen yet (a classifier's codes may flip), an E-DOEBE's
warm-up, a basis that changes with the samples it learns (an RBF network placing its centres).
Everything is validated before anything changes; a row the filters refuse
(:class:`river_doebe.engine.FilterError`) stops the batch there, with the rows before it learnt.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from river_doebe._compat import is_classifier
from river_doebe._schema import check_frame, check_row
from river_doebe.engine import FilterError

__all__ = ["BatchPath"]

#: rows per block: enough for a member's covariance to stay in cache through many rows, few
#: enough that the block's features and per-row outputs stay small
BLOCK = 256


def _blame(x: dict, y: Any = None) -> tuple[str, str]:
    """What a refusal names as most likely to blame for a sample ``x`` (and its target ``y``,
    when a regression target was being learnt): its largest input and the target, and what to
    scale."""
    largest: tuple[Any, Any] | None = None
    for name, v in x.items():
        if isinstance(v, numbers.Real) and (largest is None or abs(v) > abs(largest[1])):
            largest = (name, v)
    hint = f"; its largest input is {largest[0]!r} = {largest[1]!r}" if largest else ""
    scale = "the inputs (e.g. preprocessing.StandardScaler)"
    if y is not None:
        hint += f" and its target is {y!r}"
        scale = "the inputs (e.g. preprocessing.StandardScaler) or the target"
    return hint, scale


def _at_row(row: int, detail: str) -> FilterError:
    """A batch's refusal of row ``row`` (``detail``: what happened to it); the row and the
    message without it ride along (``row``, ``detail``), for a caller that counts rows from
    elsewhere (:func:`river_doebe.evaluate.progressive_scores`: from the stream's start)."""
    err = FilterError(f"row {row} {detail}; the rows before it were learnt")
    err.row, err.detail = row, detail
    return err


class BatchPath:
    """The block path of the estimators (mixed into :class:`river_doebe.base.ArrayEstimator`).

    The task's face gives ``_batch_targets`` (validated targets), ``_row`` (one row the
    per-sample way), ``_block_target_ok`` and ``_run_block``.
    """

    if TYPE_CHECKING:  # what the estimator this is mixed into provides
        _engine: Any
        _schema: Any
        _fill: float

        def _batch_targets(self, y: Any, n: int) -> Any: ...
        def _frame_for_learning(self, X: Any) -> tuple[np.ndarray, Any]: ...
        def _block_target_ok(self, target: Any) -> bool: ...
        def _row(self, x: Any, y: Any, with_dist: bool, want: bool, is_frame: bool) -> Any: ...
        def _run_block(self, Z: np.ndarray, ys: list, with_dist: bool, want: bool) -> list: ...
        def _schema_is_free(self) -> bool: ...
        def _revives(self, z: Any) -> bool: ...
        def _ignore(self, new: list) -> None: ...

    def predict_learn_many(self, X: Any, y: Any, with_dist: bool = False) -> list:
        """For each row of ``X``, the prediction made before the row is learnt, then learn it.

        Exactly what ``predict_one(x, with_dist)`` (a classifier: ``predict_proba_one(x)``)
        then ``learn_one(x, y)`` row after row would return and leave behind, bit for bit, but
        member by member in blocks of rows: the way to feed a stored stream.

        Parameters
        ----------
        X
            A DataFrame, or a list of dicts, in stream order.
        y
            The targets (labels), one per row.
        with_dist
            Regression: return the predictive distributions instead of their means.

        Returns
        -------
        list
            One prediction per row: a float (or a distribution) for a regressor, a
            ``predict_proba_one`` dict for a classifier.
        """
        return cast(list, self._many(X, y, with_dist, want=True))

    def _many(self, X: Any, y: Any, with_dist: bool, want: bool) -> list | None:
        is_frame = hasattr(X, "columns")
        if is_frame:
            check_frame(X)
            n = len(X)
        else:
            rows = X if isinstance(X, list) else list(X)
            n = len(rows)
            for x in rows:
                check_row(x)
        targets = self._batch_targets(y, n)
        if is_frame:
            Z, commit = self._frame_for_learning(X)  # (validates every column, changes nothing)
            if n == 0:
                # no sample learnt: the schema stays free (the first sample *learnt* fixes it),
                # no column joins it and none is reported as ignored, as for an empty list
                return [] if want else None
            commit()
            rows = list(Z)
        out: list | None = [None] * n if want else None
        block: list[int] = []
        zs: list = []  # the block's rows: value tuples, or a frame's arrays

        def flush():
            if block:
                self._flush_block(block, zs, targets, with_dist, want, out)
                block.clear()
                zs.clear()

        for i in range(n):
            z = self._block_array(rows[i], is_frame)
            if z is not None and self._block_target_ok(targets[i]):
                block.append(i)
                zs.append(z)
                if len(block) == BLOCK:
                    flush()
                continue
            flush()
            try:
                pred = self._row(rows[i], targets[i], with_dist, want, is_frame)
            except FilterError as err:
                raise _at_row(i, f"cannot be taken safely ({err})") from None
            if out is not None:
                out[i] = pred
        flush()
        return out

    def _flush_block(self, block, zs, targets, with_dist, want, out):
        Z = np.array(zs, dtype=np.float64)
        try:
            preds = self._run_block(Z, [targets[i] for i in block], with_dist, want)
        except FilterError as err:
            k = getattr(err, "rows_learnt", 0)
            # named as learn_one names a sample: its largest input, and a regressor's target
            names = () if self._schema is None else self._schema.names
            target = None if is_classifier(self) else float(targets[block[k]])
            hint, scale = _blame(dict(zip(names, Z[k].tolist())), target)
            raise _at_row(block[k], f"cannot be learnt safely ({getattr(err, 'reason', err)})"
                          f"{hint}; scale {scale} or drop it") from None
        if want:
            for i, p in zip(block, preds, strict=True):
                out[i] = p

    def _block_ready(self) -> bool:
        """Whether the next rows may go into a block (the engine exists and is exact in blocks)."""
        return self._engine is not None and self._engine.can_block

    def _block_array(self, row: Any, is_frame: bool) -> Any:
        """The row's values for a block (in schema order), or ``None`` when it needs the
        per-sample path."""
        if not self._block_ready():
            return None
        if is_frame:
            z = row
        else:
            # the values as they are: every row was checked on entry, and the block converts
            # them all at once
            z, new = self._schema.values_and_new(row, self._fill)
            if new:
                if self._schema_is_free():
                    return None  # the schema grows here: the per-sample path
                self._ignore(new)
        # an input the warm-up left out comes back here: the per-sample path too
        return None if self._revives(z) else z
