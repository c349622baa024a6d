"""`KeyedModels`: one model per key, the keys spread over Ray actors (shards).

The driver (this object) validates a call's rows, routes each row to its key's shard
(:mod:`~river_doebe.distributed.routing`), sends each shard its rows in batches (one remote call
per shard per batch, every shard's call in flight at once) and puts the answers back in input
order. Each shard (:class:`~river_doebe.distributed.shard.Shard`) feeds each key's rows of a
batch to the key's model at once, through ``predict_learn_many``.

Recovery. The driver keeps, per shard, the last snapshot of its models and a log of the batches
it has learnt since. A snapshot is either the shard's file of the last :meth:`checkpoint`, or,
when the log passes ``log_limit`` rows, the shard's pickled models returned as a Ray object: the
driver owns that object, so it stays in Ray's object store (which spills it to disk under
memory pressure) when the actor dies, and the driver's own memory holds only a reference. When a
call finds a shard's actor dead (``ray.exceptions.RayActorError``), the driver starts a new
actor, loads the snapshot, replays the log, and sends the call's batches again: the models end
as if nothing had happened, bit for bit.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import os
import pickle
import time
import uuid
from pathlib import Path

import ray
from river.base import Estimator

from river_doebe._compat import is_classifier, is_regressor
from river_doebe._schema import check_row, check_target
from river_doebe.distributed.routing import HASH_SCHEME, canonical_key, shard_of
from river_doebe.distributed.shard import Shard, atomic_write
from river_doebe.labels import check_label

__all__ = ["KeyedModels"]

#: seconds to wait for the shards' actors to start before giving up (an actor waits for a
#: free CPU: a cluster too busy for ``n_shards`` would otherwise hang)
START_TIMEOUT = 120.0

#: the value types of the usual row, checked in bulk (anything else: the schema's checks)
_FLOATS = frozenset({float})

MANIFEST = "manifest.json"
TEMPLATE_FILE = "template.pkl"
FORMAT = 1

_ShardActor = ray.remote(Shard)


def _positive_int(name: str, value, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


class KeyedModels:
    """A model per key, for many keyed streams, the keys spread over Ray actors.

    Each key gets ``template.clone()`` on its first row learnt and keeps it on its shard, the
    Ray actor its key hashes to (a stable hash: a key lands on the same shard in every run).
    ``predict_learn_many(keys, X, y)`` returns, for each row, the prediction its key's model
    makes before learning it, exactly (bit for bit) what a dict ``{key: template.clone()}`` fed
    row by row with ``predict_one`` then ``learn_one`` gives, for any number of shards and any
    batch size: a key's rows are taken in input order, and the shards work in parallel.

    Parameters
    ----------
    template
        A river estimator (this library's models take a key's rows in blocks through
        ``predict_learn_many``; any other river regressor or classifier row by row).
    n_shards
        The number of shards (Ray actors). ``None``: one per CPU (of this machine when Ray is
        started here, else the CPUs the cluster has free).
    address
        ``None``: use the Ray of this process if there is one, else start one here, local to
        this process, and shut it down on :meth:`close` (in a job submitted to a cluster, whose
        environment sets ``RAY_ADDRESS``, join that cluster). ``"auto"``, ``"host:6379"`` or
        ``"ray://host:10001"`` (any address ``ray.init`` takes): join that cluster
        (disconnecting on :meth:`close`). When Ray runs already in this process, it is used
        as it is and left running.
    batch_size
        Rows per batch: a call is cut into batches of this many rows, each sent as one remote
        call per shard. Larger batches amortise Ray's per-call cost (about a millisecond).
    log_limit
        The most rows a shard's replay log holds: past it, the driver snapshots the shard's
        models and clears its log. A smaller limit replays less after a failure and holds fewer
        rows on the driver; a larger one snapshots less often. At least ``batch_size``.
    cpus_per_shard
        The CPUs each actor reserves. ``None``: one, or an equal share of the cluster's CPUs
        when there are more shards than CPUs.

    Examples
    --------
    >>> from river_doebe import DOBE
    >>> from river_doebe.basis import RandomFourierFeatures
    >>> from river_doebe.datasets import KeyedDrift
    >>> from river_doebe.distributed import KeyedModels
    >>> records = list(KeyedDrift(n_keys=4, n_samples=400, seed=0))
    >>> keys, X, y = map(list, zip(*records))
    >>> template = DOBE(RandomFourierFeatures(n_frequencies=10, seed=0), var_rw=1e-3)
    >>> with KeyedModels(template, n_shards=2) as keyed:  # doctest: +SKIP
    ...     predictions = keyed.predict_learn_many(keys, X, y)
    ...     keyed.n_keys, len(predictions)
    (4, 400)

    (Skipped when the documentation is tested: it starts Ray. ``tests/test_distributed.py``
    runs it.)
    """

    def __init__(
        self,
        template,
        n_shards=None,
        address=None,
        batch_size: int = 8192,
        log_limit: int = 50_000,
        cpus_per_shard=None,
    ):
        if not isinstance(template, Estimator):
            raise TypeError(f"template must be a river estimator, got {type(template).__name__}")
        _positive_int("n_shards", n_shards, allow_none=True)
        _positive_int("batch_size", batch_size)
        _positive_int("log_limit", log_limit)
        if log_limit < batch_size:
            raise ValueError(
                f"log_limit ({log_limit}) must be at least batch_size ({batch_size}): a batch "
                "is logged whole"
            )
        if address is not None and not isinstance(address, str):
            raise TypeError(f"address must be None or a string, got {address!r}")
        if cpus_per_shard is not None and not (
            isinstance(cpus_per_shard, int | float)
            and not isinstance(cpus_per_shard, bool)
            and math.isfinite(cpus_per_shard)
            and cpus_per_shard > 0
        ):
            raise ValueError(f"cpus_per_shard must be a positive number, got {cpus_per_shard!r}")
        try:
            self._template_bytes = pickle.dumps(template, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:
            raise TypeError(f"template must be picklable to reach the shards: {err}") from None
        self.template = template
        self.n_shards = n_shards
        self.address = address
        self.batch_size = batch_size
        self.log_limit = log_limit
        self.cpus_per_shard = cpus_per_shard

        if is_classifier(template):
            self._check_y = check_label
        elif is_regressor(template):
            self._check_y = check_target
        else:
            self._check_y = None
        self._connected = False
        self._local = False
        self._closed = False
        self._actors: list = []
        self._connect()
        try:
            self._n = self._shard_count()
            self._cpus = self._actor_cpus()
            self._actors = [self._new_actor(s) for s in range(self._n)]
            self._wait_ready(self._actors)
        except BaseException:
            self.close()
            raise
        self._route: dict = {}
        self._snapshots: list = [None] * self._n  # None: the empty shard
        self._logs: list[list] = [[] for _ in range(self._n)]
        self._log_rows = [0] * self._n
        self._calls = itertools.count()
        self._recoveries: list[dict] = []

    # ------------------------------------------------------------------ Ray
    def _connect(self) -> None:
        if ray.is_initialized():
            return
        options = {"include_dashboard": False, "log_to_driver": False, "logging_level": "WARNING"}
        if self.address is not None:
            ray.init(address=self.address, **options)
        elif os.environ.get("RAY_ADDRESS"):  # a job on a cluster: Ray says where it runs
            ray.init(**options)
        else:
            # a new Ray of this process ("local": not a `ray start` instance found on the
            # machine), with enough CPUs that every shard's actor gets one, even past the cores
            cores = os.cpu_count() or 1
            ray.init(address="local", num_cpus=max(cores, self.n_shards or 0), **options)
            self._local = True
        self._connected = True

    def _shard_count(self) -> int:
        if self.n_shards is not None:
            return self.n_shards
        if self._local:
            return os.cpu_count() or 1
        return max(1, int(ray.available_resources().get("CPU", 1)))

    def _actor_cpus(self) -> float:
        if self.cpus_per_shard is not None:
            return float(self.cpus_per_shard)
        total = ray.cluster_resources().get("CPU", 0.0)
        if total >= self._n:
            return 1.0
        # more shards than CPUs: an equal share each (Ray places fractions of a CPU to 1e-4;
        # floor, so that the shares fit)
        share = math.floor(total / self._n * 1e4) / 1e4
        if share <= 0:
            raise RuntimeError(f"the Ray cluster has no CPU for {self._n} shards")
        return share

    def _new_actor(self, s: int):
        # Each actor is one CPU's worth of work: pin the library's kernels (Numba's member
        # loops and the warm-up's fit) to one thread there, else every actor would start a
        # thread per core and the shards would fight over the cores they are meant to split.
        return _ShardActor.options(
            num_cpus=self._cpus, max_restarts=0, scheduling_strategy="SPREAD"
        ).remote(self._template_bytes, s, 1)

    def _wait_ready(self, actors) -> None:
        refs = [a.ready.remote() for a in actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=START_TIMEOUT)
        if len(ready) < len(refs):
            raise RuntimeError(
                f"only {len(ready)} of {len(refs)} shards started within {START_TIMEOUT:.0f} s: "
                f"each asks for {self._cpus} CPU and the cluster has "
                f"{ray.available_resources().get('CPU', 0)} free"
            )
        ray.get(refs)

    @property
    def shards(self) -> list:
        """The shards' Ray actor handles (a test or an operator may ``ray.kill`` one)."""
        return list(self._actors)

    @property
    def recoveries(self) -> list[dict]:
        """Every recovery so far: the shard, the rows replayed and the seconds it took."""
        return [dict(r) for r in self._recoveries]

    def close(self) -> None:
        """Stop the shards; shut Ray down if this object started it (or disconnect from the
        cluster it joined)."""
        if self._closed:
            return
        self._closed = True
        for actor in self._actors:
            try:
                ray.kill(actor)
            except Exception:  # already dead
                pass
        if self._connected and ray.is_initialized():
            ray.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"KeyedModels({self.template!r}, n_shards={self._n}, "
            f"batch_size={self.batch_size}, log_limit={self.log_limit})"
        )

    # ------------------------------------------------------------------ routing
    def shard_of(self, key) -> int:
        """The shard that holds (or will hold) ``key``."""
        return self._routed(key)[1]

    def _routed(self, key, row=None):
        """``(canonical key, shard)``, remembered (a dict lookup per row after the first)."""
        where = "" if row is None else f"row {row}: "
        try:
            route = self._route.get(key)
        except TypeError:
            raise TypeError(f"{where}key {key!r} is not hashable") from None
        if route is None:
            try:
                ckey = canonical_key(key)
            except TypeError as err:
                raise TypeError(f"{where}{err}") from None
            route = (ckey, shard_of(ckey, self._n))
            self._route[key] = route
        return route

    def _rows(self, X) -> list:
        if hasattr(X, "columns"):  # a DataFrame: its rows as dicts, as a river loop sees them
            if not X.columns.is_unique:
                raise ValueError("the DataFrame has duplicate column names")
            return X.to_dict("records")
        return X if isinstance(X, list) else list(X)

    def _prepare(self, keys, X, y):
        """Validate every row (key, features, target) and split the rows by shard; nothing is
        sent before the whole call is valid."""
        if self._closed:
            raise RuntimeError("this KeyedModels is closed")
        rows = self._rows(X)
        keys = keys if isinstance(keys, list) else list(keys)
        if len(keys) != len(rows):
            raise ValueError(f"got {len(keys)} keys for {len(rows)} rows of features")
        if y is not None:
            y = y.tolist() if hasattr(y, "tolist") else list(y)
            if len(y) != len(rows):
                raise ValueError(f"got {len(y)} targets for {len(rows)} rows of features")
        check_y = self._check_y if y is not None else None
        index = [[] for _ in range(self._n)]
        ckeys = [[] for _ in range(self._n)]
        xs = [[] for _ in range(self._n)]
        ys = [[] for _ in range(self._n)]
        routes = self._route
        for i, key in enumerate(keys):
            try:
                route = routes.get(key)
            except TypeError:
                raise TypeError(f"row {i}: key {key!r} is not hashable") from None
            ckey, s = route if route is not None else self._routed(key, i)
            x = rows[i]
            target = None if y is None else y[i]
            # the usual row (a dict of finite floats, a finite float target) in a few steps;
            # anything else goes through the schema's own checks, which name the feature
            if not (
                type(x) is dict
                and _FLOATS.issuperset(map(type, x.values()))
                and math.isfinite(sum(x.values()))
            ):
                try:
                    check_row(x)
                except (TypeError, ValueError) as err:
                    raise type(err)(f"row {i}, key {ckey!r}: {err}; nothing was sent") from None
            if check_y is not None and not (type(target) is float and math.isfinite(target)):
                try:
                    target = check_y(target)
                except (TypeError, ValueError) as err:
                    raise type(err)(f"row {i}, key {ckey!r}: {err}; nothing was sent") from None
            index[s].append(i)
            ckeys[s].append(ckey)
            xs[s].append(x)
            ys[s].append(target)
        return len(rows), index, ckeys, xs, ys

    # ------------------------------------------------------------------ the calls
    def predict_learn_many(self, keys, X, y, with_dist: bool = False) -> list:
        """For each row, its key's prediction made before the row is learnt; then learn it.

        Parameters
        ----------
        keys
            One key per row (str, bytes, int or tuples of them).
        X
            A DataFrame, or a list of dicts.
        y
            One target (label) per row.
        with_dist
            Regression: the predictive distributions instead of their means.

        Returns
        -------
        list
            One prediction per row, in input order (a classifier: ``predict_proba_one``
            dicts).
        """
        return self._learn(keys, X, y, with_dist, want=True)

    def learn_many(self, keys, X, y) -> None:
        """Learn each row with its key's model (created from the template at its first row)."""
        self._learn(keys, X, y, False, want=False)

    def predict_many(self, keys, X, with_dist: bool = False) -> list:
        """Each row's prediction by its key's model, learning nothing; a key not seen yet gets
        the (untrained) template's prediction and is not created."""
        n, index, ckeys, xs, _ = self._prepare(keys, X, None)
        out = [None] * n
        for start in range(0, max(n, 1), self.batch_size):
            jobs = []
            for s in range(self._n):
                part = slice(*self._part(index[s], start))
                if part.start == part.stop:
                    continue
                jobs.append(
                    (s, index[s][part], ("predict", ckeys[s][part], xs[s][part], with_dist))
                )
            for (_, idx, _), result in zip(jobs, self._gather(jobs), strict=True):
                for i, p in zip(idx, result[1], strict=True):
                    out[i] = p
        return out

    def _part(self, positions, start):
        """The slice of one shard's rows that fall in the batch ``[start, start + batch)`` of
        the call (a shard's rows are in input order)."""
        lo = bisect.bisect_left(positions, start)
        hi = bisect.bisect_left(positions, start + self.batch_size)
        return lo, hi

    def _learn(self, keys, X, y, with_dist, want):
        n, index, ckeys, xs, ys = self._prepare(keys, X, y)
        call = next(self._calls)
        out = [None] * n if want else None
        # [shard, row positions, payload, method, args, ref], in submission order
        pending: list = []
        queued = [0] * self._n  # rows sent to each shard and not yet collected
        stopped: set = set()  # shards that refused a row: they take no more of this call
        failure = None
        for start in range(0, n, self.batch_size):
            batch = []
            for s in range(self._n):
                lo, hi = self._part(index[s], start)
                if lo < hi:
                    batch.append((s, lo, hi))
            # a shard whose log would pass its limit: collect what is in flight, snapshot it
            full = [
                s
                for s, lo, hi in batch
                if self._log_rows[s] + queued[s] + (hi - lo) > self.log_limit
            ]
            if full:
                collected = self._collect(pending, out, queued, stopped)
                failure = failure or collected
                pending = []
                self._snapshot([s for s in full if self._log_rows[s] > 0])
            for s, lo, hi in batch:
                if s in stopped:
                    continue
                payload = (ckeys[s][lo:hi], xs[s][lo:hi], ys[s][lo:hi])
                method = "predict_learn" if want else "learn"
                args = (call, *payload, with_dist) if want else (call, *payload)
                pending.append([s, index[s][lo:hi], payload, method, args, None])
                queued[s] += hi - lo
            self._submit(pending)
        collected = self._collect(pending, out, queued, stopped)
        failure = failure or collected
        if failure is not None:
            self._raise(failure)
        self._snapshot([s for s in range(self._n) if self._log_rows[s] >= self.log_limit])
        return out

    def _submit(self, pending) -> None:
        for job in pending:
            if job[5] is None:
                s, _, _, method, args, _ = job
                job[5] = getattr(self._actors[s], method).remote(*args)

    def _collect(self, pending, out, queued, stopped: set):
        """Wait for every batch in flight, in order; log what each shard learnt; recover a
        dead shard and send its batches again. Returns the first refusal, if any, and adds
        the shards that refused a row to ``stopped``."""
        failure = None
        failed: set = set()
        k = 0
        while k < len(pending):
            s, idx, payload, _, _, ref = pending[k]
            try:
                result = ray.get(ref)
            except ray.exceptions.RayActorError:
                self._recover(s)
                for job in pending[k:]:  # the new actor takes them again, in order
                    if job[0] == s:
                        job[5] = None
                self._submit(pending)
                continue
            k += 1
            queued[s] -= len(idx)
            if result[0] == "ok":
                self._logs[s].append(payload)
                self._log_rows[s] += len(idx)
                if out is not None:
                    for i, p in zip(idx, result[1], strict=True):
                        out[i] = p
            elif result[0] == "error":
                failed.add(s)
                failure = failure or (s, result[1], result[2])
        if failed:
            # what a refused batch left learnt is the shard's to know: snapshot it as it is
            self._snapshot(sorted(failed))
            stopped |= failed
        return failure

    def _raise(self, failure):
        s, key, err = failure
        err.add_note(
            f"(key {key!r} on shard {s}: that shard stopped at this key's rows; the rows it "
            "took before, and the other shards' rows of the call, were learnt)"
        )
        raise err

    def _gather(self, jobs):
        """Run ``(shard, positions, (method, *args))`` jobs, one per shard, recovering a dead
        shard and asking it again; the results in order."""
        refs = [getattr(self._actors[s], m).remote(*args) for s, _, (m, *args) in jobs]
        results = []
        for k, (s, _, (m, *args)) in enumerate(jobs):
            while True:
                try:
                    results.append(ray.get(refs[k]))
                    break
                except ray.exceptions.RayActorError:
                    self._recover(s)
                    refs[k] = getattr(self._actors[s], m).remote(*args)
        return results

    def _on_each(self, method, *args) -> list:
        return self._gather([(s, None, (method, *args)) for s in range(self._n)])

    # ------------------------------------------------------------------ snapshots, recovery
    def _snapshot(self, shards) -> None:
        """Replace the snapshot of ``shards`` by their models now (a Ray object the driver
        owns) and clear their logs."""
        for s in shards:
            while True:
                payload, n_keys = self._actors[s].dump.options(num_returns=2).remote()
                try:
                    ray.get(n_keys)  # done: the payload is in the object store
                    break
                except ray.exceptions.RayActorError:
                    self._recover(s)
            self._snapshots[s] = payload
            self._logs[s] = []
            self._log_rows[s] = 0

    def _recover(self, s: int) -> None:
        """A new actor for shard ``s``: its last snapshot, then its log replayed."""
        start = time.perf_counter()
        try:
            ray.kill(self._actors[s])
        except Exception:  # already gone
            pass
        actor = self._new_actor(s)
        self._wait_ready([actor])
        snapshot = self._snapshots[s]
        if isinstance(snapshot, tuple):  # a checkpoint's file and its checksum
            loaded = actor.load.remote(*snapshot)
        else:
            loaded = actor.load.remote(snapshot)
        replayed = actor.replay.remote(self._logs[s])
        try:
            ray.get(loaded)
            rows = ray.get(replayed)
        except ray.exceptions.RayError as err:
            raise RuntimeError(
                f"shard {s} died and could not be restored from its last snapshot: {err}"
            ) from err
        self._actors[s] = actor
        self._recoveries.append(
            {"shard": s, "rows_replayed": rows, "seconds": time.perf_counter() - start}
        )

    def warm(self, X, y) -> None:
        """Feed the rows ``X, y`` to a throwaway clone of the template on every shard, in
        parallel, and drop it (no key changes): each actor's process then loads the compiled
        kernels (from Numba's disk cache, a second or so for an E-DOEBE) before the first real
        call, not during it."""
        _, _, _, xs, ys = self._prepare(["warm"] * len(X), X, y)
        rows, targets = [x for part in xs for x in part], [t for part in ys for t in part]
        self._on_each("warm", rows, targets)

    # ------------------------------------------------------------------ views
    def keys(self) -> list:
        """Every key with a model, shard by shard (each in the order of its first row)."""
        return [k for part in self._on_each("keys") for k in part]

    @property
    def n_keys(self) -> int:
        """The number of keys with a model."""
        return sum(self._on_each("n_keys"))

    def model(self, key):
        """A local copy of ``key``'s model (``KeyError`` if it has none)."""
        ckey, s = self._routed(key)
        (model,) = self._gather([(s, None, ("model", ckey))])
        if model is None:
            raise KeyError(key)
        return pickle.loads(model)

    def memory(self) -> list[dict]:
        """Per shard: its keys, the rows it has learnt, and ``model_bytes``, the size of its
        models pickled (what a snapshot or a checkpoint holds; not the process's memory)."""
        return self._on_each("memory")

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, path) -> dict:
        """Write every shard's models to the folder ``path`` and a manifest; returns the
        manifest.

        Each shard writes its own file (``shard-0000-<id>.pkl``, atomically: a temporary
        file renamed), then the driver writes the template and ``manifest.json`` (atomically
        too), which names the files: the checkpoint is the manifest's, whole, at any moment.
        Files of an earlier checkpoint in the folder are then removed. On a cluster, ``path``
        must be a folder every node sees. The files become the shards' snapshots for
        recovery (their logs are cleared).
        """
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        tag = uuid.uuid4().hex[:12]
        names = [f"shard-{s:04d}-{tag}.pkl" for s in range(self._n)]
        written = self._gather(
            [(s, None, ("write", str(folder.resolve()), names[s])) for s in range(self._n)]
        )
        atomic_write(
            str(folder / TEMPLATE_FILE),
            pickle.dumps(self.template, protocol=pickle.HIGHEST_PROTOCOL),
        )
        from river_doebe import __version__

        manifest = {
            "format": FORMAT,
            "library": "river-doebe",
            "version": __version__,
            "n_shards": self._n,
            "hash_scheme": HASH_SCHEME,
            "template": repr(self.template),
            "template_file": TEMPLATE_FILE,
            "n_keys": sum(w["n_keys"] for w in written),
            "shards": written,
        }
        atomic_write(str(folder / MANIFEST), (json.dumps(manifest, indent=2) + "\n").encode())
        for old in folder.glob("shard-*.pkl"):
            if old.name not in names:
                old.unlink()
        for s, w in enumerate(written):
            self._snapshots[s] = (str(folder.resolve() / w["file"]), w["sha256"])
            self._logs[s] = []
            self._log_rows[s] = 0
        return manifest

    @classmethod
    def restore(
        cls,
        path,
        address=None,
        batch_size: int = 8192,
        log_limit: int = 50_000,
        cpus_per_shard=None,
    ) -> KeyedModels:
        """The models of the checkpoint in the folder ``path`` on new shards (as many as it
        has: the keys' shards depend on their number); the other parameters as in the
        constructor. The files are pickles: restore only checkpoints you trust."""
        folder = Path(path)
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
        except FileNotFoundError:
            raise FileNotFoundError(
                f"no checkpoint in {str(folder)!r}: {MANIFEST} is missing"
            ) from None
        if manifest.get("format") != FORMAT or manifest.get("hash_scheme") != HASH_SCHEME:
            raise ValueError(
                f"{str(folder / MANIFEST)!r} is a checkpoint of another format or hash scheme "
                f"({manifest.get('format')!r}, {manifest.get('hash_scheme')!r})"
            )
        with open(folder / manifest["template_file"], "rb") as fh:
            template = pickle.load(fh)
        keyed = cls(
            template,
            n_shards=manifest["n_shards"],
            address=address,
            batch_size=batch_size,
            log_limit=log_limit,
            cpus_per_shard=cpus_per_shard,
        )
        try:
            files = [(str(folder.resolve() / w["file"]), w["sha256"]) for w in manifest["shards"]]
            keyed._gather([(s, None, ("load", *files[s])) for s in range(keyed._n)])
        except BaseException:
            keyed.close()
            raise
        keyed._snapshots = files
        return keyed
