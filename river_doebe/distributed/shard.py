"""One shard: the models of the keys that hash to it, in one process (a Ray actor).

:class:`Shard` is plain Python, wrapped as a Ray actor by :class:`~river_doebe.distributed.
KeyedModels` (``ray.remote(Shard)``), so it can be read and tested without Ray. A batch arrives
as three lists (canonical keys, feature dicts, targets) in the input order; the shard groups the
rows by key, keeping each key's rows in order, and feeds each key's rows to its model at once:
``predict_learn_many`` / ``learn_many`` for this library's models (bit for bit ``predict_one``
then ``learn_one`` row by row), ``predict_one`` (a classifier: ``predict_proba_one``) then
``learn_one`` row by row for any other river estimator. Keys are independent, so the order in
which a batch's keys are taken changes nothing.

A model that refuses a row (say :class:`river_doebe.engine.FilterError`) stops the shard's part
of the call there: the error comes back as a value naming the key, and the shard skips the rest
of that call (the rows of its earlier keys are learnt, as ``learn_many`` leaves the rows before
a refused one).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile

from river_doebe._compat import is_classifier

__all__ = ["Shard", "atomic_write"]


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never a
    part: a temporary file in the same folder, flushed to disk, then renamed over ``path``
    (``os.replace`` is atomic within a file system)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _predictor(model, with_dist: bool):
    """What a river estimator without ``predict_learn_many`` predicts a row with."""
    if is_classifier(model) and hasattr(model, "predict_proba_one"):
        return model.predict_proba_one
    if with_dist:
        return lambda x: model.predict_one(x, with_dist=True)
    return model.predict_one


def _group(keys) -> dict:
    """Each key's row positions, keys in order of first appearance."""
    groups: dict = {}
    for i, key in enumerate(keys):
        rows = groups.get(key)
        if rows is None:
            groups[key] = [i]
        else:
            rows.append(i)
    return groups


class Shard:
    """The models of one shard: ``{key: template.clone()}``, created at a key's first row.

    Parameters
    ----------
    template
        The estimator every key starts as (cloned; never trained), or its pickle.
    index
        The shard's number.
    threads
        The library's thread count in this process (``river_doebe.set_num_threads``); ``None``
        leaves it alone.
    """

    def __init__(self, template, index: int, threads: int | None = 1):
        if threads is not None:
            import river_doebe

            river_doebe.set_num_threads(threads)
        if isinstance(template, bytes):
            # unpickled here, not by Ray: Ray hands NumPy arrays over read-only (zero copy
            # from its object store), and a model's arrays must be writable
            template = pickle.loads(template)
        self.template = template
        self.index = index
        self.models: dict = {}
        self.rows_learnt = 0
        self._failed_call = None

    def ready(self) -> int:
        return self.index

    # ------------------------------------------------------------------ batches
    def predict_learn(self, call, keys, X, y, with_dist: bool = False):
        """``("ok", predictions)`` in the batch's row order, or ``("error", key, exception)``
        (``("skipped",)`` for a later batch of a call that failed here)."""
        return self._run(call, keys, X, y, with_dist, want=True)

    def learn(self, call, keys, X, y):
        """As :meth:`predict_learn`, without predictions."""
        return self._run(call, keys, X, y, False, want=False)

    def _run(self, call, keys, X, y, with_dist, want):
        if call is not None and call == self._failed_call:
            return ("skipped",)
        out = [None] * len(keys) if want else None
        for key, rows in _group(keys).items():
            model = self.models.get(key)
            if model is None:
                model = self.template.clone()
                self.models[key] = model
            xs = [X[i] for i in rows]
            ys = [y[i] for i in rows]
            try:
                preds = self._feed(model, xs, ys, with_dist, want)
            except Exception as err:  # reported to the driver, which names the key
                self._failed_call = call
                return ("error", key, err)
            self.rows_learnt += len(rows)
            if want:
                for i, p in zip(rows, preds, strict=True):
                    out[i] = p
        return ("ok", out)

    @staticmethod
    def _feed(model, xs, ys, with_dist, want):
        many = getattr(model, "predict_learn_many", None)
        if many is not None:  # this library's block path
            if want:
                return many(xs, ys, with_dist=with_dist)
            model.learn_many(xs, ys)
            return None
        predict = _predictor(model, with_dist) if want else None
        out = []
        for x, target in zip(xs, ys, strict=True):
            if want:
                out.append(predict(x))
            model.learn_one(x, target)
        return out

    def predict(self, keys, X, with_dist: bool = False):
        """``("ok", predictions)`` without learning; a key the shard has not seen gets a fresh
        clone of the template's prediction (and is not created)."""
        out = []
        for key, x in zip(keys, X, strict=True):
            model = self.models.get(key)
            if model is None:
                model = self.template.clone()
            out.append(_predictor(model, with_dist)(x))
        return ("ok", out)

    def warm(self, X, y) -> None:
        """Feed ``X, y`` to a throwaway clone of the template: the process loads the compiled
        kernels now (Numba reads its disk cache once per process) rather than in the first
        real batch."""
        self._feed(self.template.clone(), X, y, False, want=True)

    def replay(self, batches) -> int:
        """Learn logged batches ``[(keys, X, y), ...]`` in order (a recovery); returns the rows
        learnt."""
        n = 0
        for keys, X, y in batches:
            status = self._run(None, keys, X, y, False, want=False)
            if status[0] != "ok":
                raise RuntimeError(
                    f"replaying shard {self.index}'s log failed at key {status[1]!r}: {status[2]!r}"
                ) from status[2]
            n += len(keys)
        return n

    # ------------------------------------------------------------------ state
    def _payload(self) -> bytes:
        return pickle.dumps(
            {"models": self.models, "rows_learnt": self.rows_learnt},
            protocol=pickle.HIGHEST_PROTOCOL,
        )

    def dump(self):
        """The pickled models and the number of keys (an in-memory snapshot)."""
        return self._payload(), len(self.models)

    def write(self, folder: str, filename: str) -> dict:
        """Write the pickled models to ``folder/filename`` atomically; what the manifest
        records of it."""
        data = self._payload()
        atomic_write(os.path.join(folder, filename), data)
        return {
            "file": filename,
            "n_keys": len(self.models),
            "rows_learnt": self.rows_learnt,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }

    def load(self, source, sha256: str | None = None) -> int:
        """Replace the models by a snapshot: ``None`` (empty), the bytes of :meth:`dump` or the
        path of a file of :meth:`write` (checked against ``sha256`` when given); returns the
        number of keys."""
        if source is None:
            self.models, self.rows_learnt = {}, 0
            return 0
        if isinstance(source, str):
            with open(source, "rb") as fh:
                data = fh.read()
            if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
                raise ValueError(f"{source!r} does not match its checksum in the manifest")
        else:
            data = source
        state = pickle.loads(data)
        self.models, self.rows_learnt = state["models"], state["rows_learnt"]
        self._failed_call = None
        return len(self.models)

    # ------------------------------------------------------------------ views
    def keys(self) -> list:
        return list(self.models)

    def n_keys(self) -> int:
        return len(self.models)

    def model(self, key) -> bytes | None:
        """``key``'s model pickled (unpickled by the caller into writable arrays), or None."""
        model = self.models.get(key)
        return None if model is None else pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)

    def memory(self) -> dict:
        """The shard's keys, rows learnt and the size of its models pickled (what a snapshot
        or a checkpoint holds; the process's own memory is more)."""
        return {
            "shard": self.index,
            "n_keys": len(self.models),
            "rows_learnt": self.rows_learnt,
            "model_bytes": len(self._payload()),
        }
