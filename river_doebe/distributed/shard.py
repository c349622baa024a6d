"""One shard: the models of the keys placed on it, in one process (a Ray actor).

:class:`Shard` is plain Python, wrapped as a Ray actor by :class:`~river_doebe.distributed.
KeyedModels` (``ray.remote(Shard)``), so it can be read and tested without Ray.

The driver sends a shard numbered *parts*: ``apply(seq, data, want, with_dist)``, where
``data`` is a part's rows frozen by the driver (the pickle of three lists: canonical keys,
feature dicts, targets, in input order) and ``seq`` its sequence number on this shard. The shard
applies part ``seq`` only if it is the next one (``seq == self.seq + 1``):

- a part it has applied already (a retry, or a replay of a part its state holds) is skipped and
  answered ``("duplicate", seq, result)``, with the result it gave then if it still has it;
- a part that comes too early is refused, ``("gap", self.seq)``: the driver rebuilds the shard.

So a part is applied at most once, and in order. Applying groups the rows by key, keeping each
key's rows in order, and feeds each key's rows to its model at once: ``predict_learn_many`` /
``learn_many`` for this library's models (bit for bit ``predict_one`` then ``learn_one`` row by
row), ``predict_one`` (a classifier: ``predict_proba_one``) then ``learn_one`` row by row for any
other river estimator. Keys are independent, so the order in which a part's keys are taken
changes nothing.

A model that refuses a row (say :class:`river_doebe.engine.FilterError`) stops the part there:
the shard answers ``("refused", key, error)`` and, as the keys before it have learnt their rows,
it refuses every later part (``("broken", seq)``) until :meth:`load` resets it: the driver
rebuilds it from its own copy of the state.
"""

from __future__ import annotations

import os
import pickle
import time

from river_doebe._compat import is_classifier

__all__ = ["Shard", "dumps", "kill_and_wait"]

#: how many answers of applied parts a shard keeps for a retry of the same part
KEEP_RESULTS = 16


def dumps(obj) -> bytes:
    """``obj`` pickled: the standard pickler, or Ray's cloudpickle for what it cannot take (a
    class defined in ``__main__`` or in a notebook, a lambda in a pipeline)."""
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        from ray import cloudpickle

        return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


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


def _portable(err: BaseException) -> BaseException:
    """``err`` if it pickles (to travel back to the driver), else a RuntimeError with its
    text."""
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:
        return RuntimeError(f"{type(err).__name__}: {err}")


def _node_id():
    try:
        import ray

        return ray.get_runtime_context().get_node_id()
    except Exception:  # outside Ray (a test of the plain class)
        return None


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
        import river_doebe

        if threads is not None:
            river_doebe.set_num_threads(threads)
        self._threads = river_doebe.get_num_threads
        if isinstance(template, bytes):
            # unpickled here, not by Ray: Ray hands NumPy arrays over read-only (zero copy
            # from its object store), and a model's arrays must be writable
            template = pickle.loads(template)
        self.template = template
        self.index = index
        self.models: dict = {}
        self.rows: dict = {}  # rows learnt per key
        self.rows_learnt = 0
        self.seq = 0
        self.broken = None
        self._results: dict = {}

    def ready(self) -> dict:
        """Where the shard runs: its index, Ray node, process and library threads."""
        return {
            "shard": self.index,
            "node": _node_id(),
            "pid": os.getpid(),
            "threads": self._threads(),
        }

    # ------------------------------------------------------------------ parts
    def apply(self, seq: int, data, want: bool = False, with_dist: bool = False):
        """Apply part ``seq`` (see the module's docstring). ``("ok", predictions)`` (in the
        part's row order; ``None`` unless ``want``), ``("duplicate", seq, answer)``,
        ``("gap", last_seq)``, ``("refused", key, error)`` or ``("broken", seq)``."""
        if seq <= self.seq:
            return ("duplicate", seq, self._results.get(seq))
        if seq != self.seq + 1:
            return ("gap", self.seq)
        if self.broken is not None:
            return ("broken", self.broken)
        keys, X, y = pickle.loads(data) if isinstance(data, bytes) else data
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
                self.broken = seq
                return ("refused", key, _portable(err))
            self.rows[key] = self.rows.get(key, 0) + len(rows)
            self.rows_learnt += len(rows)
            if want:
                for i, p in zip(rows, preds, strict=True):
                    out[i] = p
        self.seq = seq
        answer = ("ok", out)
        if want:
            self._results[seq] = answer
            self._results.pop(seq - KEEP_RESULTS, None)
        return answer

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

    def predict(self, data, with_dist: bool = False):
        """``("ok", predictions)`` of the rows ``data`` (the pickle of keys and feature dicts)
        without learning; a key the shard has not seen gets the untrained template's
        prediction (and is not created)."""
        keys, X = pickle.loads(data) if isinstance(data, bytes) else data
        fresh: dict = {}
        out = []
        for key, x in zip(keys, X, strict=True):
            model = self.models.get(key)
            if model is None:
                model = fresh.get(key)
                if model is None:
                    model = fresh[key] = self.template.clone()
            out.append(_predictor(model, with_dist)(x))
        return ("ok", out)

    def warm(self, X, y) -> None:
        """Feed ``X, y`` to a throwaway clone of the template: the process loads the compiled
        kernels now (Numba reads its disk cache once per process) rather than in the first
        real part."""
        self._feed(self.template.clone(), X, y, False, want=True)

    # ------------------------------------------------------------------ state
    def dump(self):
        """The shard's state pickled, and what it is: ``(payload, info)``, ``info`` with the
        sequence number of the last part applied, the keys, rows learnt and bytes. (The
        driver calls it with two returns, so that it can keep the payload where it is.)"""
        if self.broken is not None:
            raise RuntimeError(f"shard {self.index} refused part {self.broken}: reload it first")
        data = dumps({"models": self.models, "rows": self.rows})
        info = {
            "seq": self.seq,
            "n_keys": len(self.models),
            "rows_learnt": self.rows_learnt,
            "bytes": len(data),
        }
        return data, info

    def load(self, data, seq: int = 0, list_keys: bool = False) -> dict:
        """Replace the state by a payload of :meth:`dump` (``None``: empty) whose last part was
        ``seq``; what it holds (and its keys with ``list_keys``), and where the shard runs."""
        if data is None:
            models, rows = {}, {}
        else:
            state = pickle.loads(data)
            models, rows = state["models"], state["rows"]
        self.models, self.rows = models, rows
        self.rows_learnt = sum(rows.values())
        self.seq = seq
        self.broken = None
        self._results = {}
        info = {**self.ready(), "n_keys": len(models), "rows_learnt": self.rows_learnt}
        if list_keys:
            info["keys"] = list(models)
        return info

    # ------------------------------------------------------------------ views
    def keys(self) -> list:
        return list(self.models)

    def n_keys(self) -> int:
        return len(self.models)

    def model(self, key) -> bytes | None:
        """``key``'s model pickled (unpickled by the caller into writable arrays), or None."""
        model = self.models.get(key)
        return None if model is None else dumps(model)

    def memory(self) -> dict:
        """The shard's keys, rows learnt, the size of its models pickled (what a snapshot or a
        checkpoint holds; the process's own memory is more), its last part, its library threads
        and its Ray node."""
        return {
            "shard": self.index,
            "n_keys": len(self.models),
            "rows_learnt": self.rows_learnt,
            "model_bytes": len(dumps({"models": self.models, "rows": self.rows})),
            "seq": self.seq,
            "threads": self._threads(),
            "node": _node_id(),
        }


def kill_and_wait(actor, timeout: float = 60.0) -> None:
    """End a shard's actor as a crash would (``ray.kill``) and return once it is dead, for a
    fault drill: a kill travels through Ray's control plane, so a call sent just after
    ``ray.kill`` may still reach the old actor. Raises ``TimeoutError`` if it still answers after
    ``timeout`` seconds."""
    import ray

    ray.kill(actor)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the killed actor still answered after {timeout:g} s")
        try:
            ray.get(actor.ready.remote(), timeout=left)
        except ray.exceptions.RayActorError:
            return
        except ray.exceptions.GetTimeoutError:
            continue
        time.sleep(0.05)
