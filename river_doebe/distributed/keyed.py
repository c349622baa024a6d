"""`KeyedModels`: one model per key, the keys spread over Ray actors (shards).

The driver (this object) validates a call's rows, places each key on a shard
(:class:`~river_doebe.distributed.routing.Placement`), cuts each shard's rows into *parts* of at
most ``batch_size`` rows, and sends each part to its shard as one remote call
(:class:`~river_doebe.distributed.shard.Shard`), which feeds each key's rows of the part to the
key's model at once, through ``predict_learn_many``.

A transactional driver
----------------------
The driver owns everything a shard is rebuilt from, and a call is all or nothing:

- **Logged before it is sent.** Each part is frozen (pickled: a caller that changes its row dicts
  afterwards changes nothing), numbered (the shard's next sequence number) and appended to the
  shard's log, then submitted. A shard applies part ``n`` only if its last part was ``n - 1``:
  a part it already holds (a retry, a replay) is skipped, so each part is applied at most once
  and in order.
- **Recovery state owned by the driver.** Per shard: a *base* (the shard's models pickled at its
  last snapshot, a Ray object the driver owns and keeps on the driver's node, copied there from
  another node; empty at first) and the log of the parts since. A snapshot is taken when the log
  passes ``log_limit`` rows and by :meth:`KeyedModels.checkpoint`; the checkpoint's folder is
  written by the driver and never read again by it.
- **Committed, or taken back.** A call is committed when every shard has answered every part of
  it (then it returns). A shard whose actor dies (or does not answer a part within ``timeout``
  seconds: it is killed) is rebuilt on a new actor, from its base and its log, and the call goes
  on; a shard that fails more than ``max_retries`` times in a row, a row a model refuses, an
  interrupt (``KeyboardInterrupt``) or any other error aborts the call: its parts leave the logs,
  every shard that may have applied one is rebuilt from the driver's base and log before it takes
  anything else (on a new actor if it is still busy with the interrupted work a second into its
  next use), and one error says that the call was not applied, so sending it again is safe.
- **Serialised.** A lock makes calls from several threads run one after the other, each whole.

Pipelined calls
---------------
:meth:`KeyedModels.iter_predict_learn` reads calls from an iterable and keeps up to
``max_in_flight`` of them in flight on the shards while it yields the predictions of the oldest:
the driver checks and routes the next calls while the shards work. A shard runs its parts in
order, so each key's rows are learnt in input order. A call whose predictions were yielded is
committed; a failure aborts the failed call and every later one read so far, and the error says
from which call to resume.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import numbers
import os
import pickle
import socket
import threading
import time
import uuid
from collections import deque
from itertools import chain
from pathlib import Path

import numpy as np
import ray
from river.base import Estimator

from river_doebe._compat import is_classifier, is_regressor
from river_doebe._schema import check_row, check_target
from river_doebe.distributed.routing import HASH_SCHEME, Placement, canonical_key
from river_doebe.distributed.shard import Shard, dumps
from river_doebe.labels import check_label

__all__ = ["CheckpointError", "KeyedModels", "ShardError"]

#: seconds to try to reach the Ray cluster at ``address`` before giving up (Ray's own attempt
#: waits minutes for an address with nothing behind it)
CONNECT_TIMEOUT = 20.0

#: the longest single wait: waits are cut into pieces so that the deadlines are checked and an
#: interrupt is seen
_POLL = 1.0

#: the seconds a shard interrupted in a call may take to finish the work it was sent, at its
#: next use, before it is killed and rebuilt on a new actor
BUSY_GRACE = 1.0

#: the value types of the usual row, checked in bulk (anything else: the schema's checks)
_FLOATS = frozenset({float})
_DICTS = frozenset({dict})
_PLAIN_KEYS = frozenset({str, int, bytes})

MANIFEST = "manifest.json"
FORMAT = 2
PLACEMENT = "fewest keys at the key's first row, searching from its hash shard (routing.Placement)"

_ShardActor = ray.remote(Shard)

# The Ray this module started (ray.init), and how many KeyedModels use it: it is shut down when
# the last of them closes, not under another one.
_OWN_RAY = {"started": False, "users": 0}
_OWN_RAY_LOCK = threading.Lock()


class ShardError(RuntimeError):
    """A shard could not do its part: its actor died more than ``max_retries`` times in a row,
    did not answer within ``timeout``, or failed. The message says what state the keys are in."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be restored: a file missing, damaged or not the one its
    manifest describes, or an edited manifest. The message names the file."""


class _Refused(Exception):
    """A model refused a row (the shard's answer): the call is aborted and the model's error
    raised."""

    def __init__(self, shard: int, key, error: BaseException):
        super().__init__(shard, key, error)
        self.shard, self.key, self.error = shard, key, error


def _positive_int(name: str, value, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _positive_number(name: str, value) -> None:
    if not (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    ):
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


def _short(err: BaseException, limit: int = 300) -> str:
    """The error's type and the first line of its text, at most ``limit`` characters (a task's
    error: the error raised in the task)."""
    cause = getattr(err, "cause", None)
    if isinstance(err, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        err = cause
    lines = str(err).strip().splitlines()
    text = f"{type(err).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Part:
    """One shard's rows of one call: frozen, numbered, logged."""

    __slots__ = ("call", "shard", "seq", "data", "rows", "n", "sent", "done")

    def __init__(self, call, shard: int, data: bytes, rows: list):
        self.call = call  # None once committed (the answers are the caller's)
        self.shard = shard
        self.seq = 0
        self.data = data
        self.rows = rows  # the rows' positions in the call
        self.n = len(rows)
        self.sent = False  # submitted to the shard's actor at least once
        self.done = False  # answered


class _Call:
    __slots__ = ("number", "n", "parts", "out", "want", "with_dist", "remaining", "committed")

    def __init__(self, number: int, n: int, want: bool, with_dist: bool):
        self.number = number
        self.n = n
        self.parts: list[_Part] = []
        self.out = [None] * n if want else None
        self.want = want
        self.with_dist = with_dist
        self.remaining = 0
        self.committed = False


class _Ask:
    """A question to one shard that changes nothing (a view, a snapshot); asked again if the
    shard is rebuilt before it answers."""

    __slots__ = ("shard", "method", "args", "returns", "value", "payload", "state")

    def __init__(self, shard: int, method: str, args: tuple = (), returns: int = 1):
        self.shard, self.method, self.args, self.returns = shard, method, args, returns
        self.value = self.payload = None
        self.state = "new"  # "sent", "done"; back to "new" when its shard is rebuilt


class _Task:
    __slots__ = ("kind", "ref", "payload", "part", "ask", "sent", "replay", "record", "limit")

    def __init__(self, kind, ref, payload=None, part=None, ask=None, replay=False, record=None):
        self.kind, self.ref, self.payload, self.part, self.ask = kind, ref, payload, part, ask
        self.limit = None  # seconds it may take (None: the timeout)
        self.sent = time.monotonic()
        self.replay = replay  # part of a rebuild
        self.record = record  # the rebuild's record, on its last task


class _ShardState:
    """What the driver keeps of one shard."""

    __slots__ = (
        "index", "actor", "node", "base", "base_seq", "log", "log_rows", "committed", "seq",
        "tasks", "state", "failures", "snap", "snapping", "progress", "cause", "busy",
    )  # fmt: skip

    def __init__(self, index: int, actor):
        self.index = index
        self.actor = actor
        self.node = None  # the Ray node of the actor, once it answers
        self.base = None  # ObjectRef of the pickled models at base_seq (None: empty)
        self.base_seq = 0
        self.log: list[_Part] = []  # parts after base_seq, in order (committed, then pending)
        self.log_rows = 0  # committed rows in the log
        self.committed = 0  # last committed part
        self.seq = 0  # last numbered part
        self.tasks: deque[_Task] = deque()  # submitted to the actor, not yet collected, in order
        self.state = "ok"  # "stale": rebuild before use; "dead": replace the actor first
        self.failures = 0  # failures in a row
        self.snap = None  # a snapshot not yet committed: (payload ref, info)
        self.snapping = False  # a snapshot is in flight
        self.progress = time.monotonic()  # the last answer
        self.cause = ""
        self.busy: list = []  # tasks of an interrupted call, maybe still running


def _drawn_seed(template) -> int | None:
    """A seed for a template whose ``seed`` parameter is ``None`` (see
    :attr:`KeyedModels.seed_`), else ``None``."""
    get_params = getattr(template, "_get_params", None)
    params = get_params() if callable(get_params) else {}
    if "seed" not in params or params["seed"] is not None:
        return None
    return int(np.random.SeedSequence().generate_state(1)[0])


class KeyedModels:
    """A model per key, for many keyed streams, the keys spread over Ray actors.

    Each key gets ``template.clone()`` on its first row learnt and keeps it on its shard, the
    Ray actor it was placed on at that row (the one with the fewest keys; see
    :class:`~river_doebe.distributed.routing.Placement`). ``predict_learn_many(keys, X, y)``
    returns, for each row, the prediction its key's model makes before learning it, exactly
    (bit for bit) what a dict ``{key: template.clone()}`` fed row by row with ``predict_one``
    then ``learn_one`` gives, for any number of shards and any batch size: a key's rows are taken
    in input order, and the shards work in parallel. It stays so whatever fails: a call is
    applied whole or not at all (see :mod:`river_doebe.distributed.keyed`), a dead or hung shard
    is rebuilt from state the driver owns, and calls from several threads are serialised.

    Parameters
    ----------
    template
        A river regressor or classifier (this library's models take a key's rows in blocks
        through ``predict_learn_many``; any other river estimator row by row, its features as
        it takes them).
    n_shards
        The number of shards (Ray actors). ``None``: one per CPU (of this machine when Ray is
        started here, else the CPUs the cluster has free).
    address
        ``None``: use the Ray of this process if there is one, else start one here, local to
        this process (in a job submitted to a cluster, whose environment sets ``RAY_ADDRESS``,
        join that cluster). ``"auto"``, ``"host:6379"`` or ``"ray://host:10001"`` (any address
        ``ray.init`` takes): join that cluster; an address with nothing behind it fails within
        ``CONNECT_TIMEOUT`` (20) seconds, naming it. A Ray this object starts or joins stops on
        :meth:`close` of the last ``KeyedModels`` using it; one running before is left running.
    batch_size
        The most rows of a shard in one remote call (a *part*). Larger parts amortise Ray's
        per-call cost (about a millisecond).
    log_limit
        The most committed rows a shard's log holds: past it, the driver snapshots the shard's
        models and clears its log. A smaller limit replays less in a recovery or after an
        aborted call and holds fewer rows on the driver; a larger one snapshots less often. At
        least ``batch_size``.
    cpus_per_shard
        The CPUs each actor reserves. ``None``: one, or an equal share of the cluster's CPUs
        when there are more shards than CPUs.
    max_in_flight
        The most parts sent to a shard and not yet answered, and the most calls
        :meth:`iter_predict_learn` keeps in flight.
    timeout
        The seconds a shard may take to answer one remote call (a part, a snapshot, a view, a
        load) before it counts as hung: it is then killed and rebuilt like a dead one.
    start_timeout
        The seconds a new actor may take to start (to be scheduled on a node with a free CPU
        and to import the library) before it counts as dead.
    max_retries
        The most times in a row a shard is rebuilt within one call before the call is aborted
        with :class:`ShardError`.
    threads_per_shard
        The library's threads in each actor (``river_doebe.set_num_threads``): one, as each
        actor is one CPU's worth of work; ``None`` leaves the library's default.
    actor_options
        More options for the shards' actors (``ray.remote`` options such as ``resources``,
        ``scheduling_strategy`` or ``runtime_env``), a dict or a function of the shard's index
        returning one.

    Attributes
    ----------
    seed_
        The seed the keys' models are cloned with when ``template`` has a ``seed`` of ``None``
        (drawn once, here), else ``None``. A rebuilt shard replays its keys' rows into fresh
        clones: with ``seed=None`` each clone would draw other random numbers (an E-DOEBE's
        members at its warm-up) and the replayed model would not be the one lost. So every
        key's model gets this one seed, kept in the shards' template and in checkpoints.

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
        max_in_flight: int = 4,
        timeout: float = 300.0,
        start_timeout: float = 120.0,
        max_retries: int = 3,
        threads_per_shard=1,
        actor_options=None,
    ):
        if not isinstance(template, Estimator):
            raise TypeError(f"template must be a river estimator, got {type(template).__name__}")
        if is_classifier(template):
            self._check_y = check_label
        elif is_regressor(template):
            self._check_y = check_target
        else:
            raise TypeError(
                f"template must be a river regressor or classifier, got {type(template).__name__}"
                " (an unsupervised model takes no targets, and KeyedModels learns from them)"
            )
        _positive_int("n_shards", n_shards, allow_none=True)
        _positive_int("batch_size", batch_size)
        _positive_int("log_limit", log_limit)
        _positive_int("max_in_flight", max_in_flight)
        _positive_int("threads_per_shard", threads_per_shard, allow_none=True)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        _positive_number("timeout", timeout)
        _positive_number("start_timeout", start_timeout)
        if log_limit < batch_size:
            raise ValueError(
                f"log_limit ({log_limit}) must be at least batch_size ({batch_size}): a part "
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
        if actor_options is not None and not (
            isinstance(actor_options, dict) or callable(actor_options)
        ):
            raise TypeError(
                f"actor_options must be a dict or a function of the shard, got {actor_options!r}"
            )
        self.seed_ = _drawn_seed(template)
        shipped = template if self.seed_ is None else template.clone({"seed": self.seed_})
        try:
            # cloudpickle: a template whose class is defined in __main__ or a notebook (or
            # registered with cloudpickle.register_pickle_by_value) travels by value
            from ray import cloudpickle

            self._template_bytes = cloudpickle.dumps(shipped, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:
            raise TypeError(f"template must be picklable to reach the shards: {err}") from None
        self.template = template
        self.n_shards = n_shards
        self.address = address
        self.batch_size = batch_size
        self.log_limit = log_limit
        self.cpus_per_shard = cpus_per_shard
        self.max_in_flight = max_in_flight
        self.timeout = float(timeout)
        self.start_timeout = float(start_timeout)
        self.max_retries = max_retries
        self.threads_per_shard = threads_per_shard
        self.actor_options = actor_options
        # this library's models take dicts of real numbers, checked here so that a bad row is
        # refused before any shard sees it; another river estimator takes what it takes
        self._strict = type(template).__module__.split(".")[0] == "river_doebe"

        self._lock = threading.RLock()
        self._active = False  # an iter_predict_learn is running
        self._closed = False
        self._ray_user = False  # counted in _OWN_RAY
        self._states: list[_ShardState] = []
        self._recoveries: list[dict] = []
        self._calls = 0
        self._connect()
        try:
            self._node = ray.get_runtime_context().get_node_id()
            self._n = self._shard_count()
            self._cpus = self._actor_cpus()
            self._states = [_ShardState(s, self._new_actor(s)) for s in range(self._n)]
            self._placement = Placement(self._n)
            self._start()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ Ray
    def _connect(self) -> None:
        with _OWN_RAY_LOCK:
            if ray.is_initialized():
                if _OWN_RAY["started"]:  # ours: count this user too
                    _OWN_RAY["users"] += 1
                    self._ray_user = True
                return
            options = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": "WARNING",
            }
            self._local = False
            joining = self.address or os.environ.get("RAY_ADDRESS")
            if joining:  # (RAY_ADDRESS: a job on a cluster, Ray says where it runs)
                _probe(joining)
                try:
                    ray.init(address=self.address, **options)
                except Exception as err:
                    raise ConnectionError(
                        f"cannot join the Ray cluster at address {joining!r}: {_short(err)}"
                    ) from err
            else:
                # a new Ray of this process ("local": not a `ray start` instance found on the
                # machine), with enough CPUs that every shard's actor gets one, even past the
                # cores
                cores = os.cpu_count() or 1
                ray.init(address="local", num_cpus=max(cores, self.n_shards or 0), **options)
                self._local = True
            _OWN_RAY["started"] = True
            _OWN_RAY["users"] = 1
            self._ray_user = True

    def _shard_count(self) -> int:
        if self.n_shards is not None:
            return self.n_shards
        if getattr(self, "_local", False):
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
        # Each actor is one CPU's worth of work: the library's kernels run on
        # threads_per_shard threads there (one by default), else every actor would start a
        # thread per core and the shards would fight over the cores they are meant to split.
        # Ray restarts nothing by itself (max_restarts=0, max_task_retries=0): a restarted
        # actor would come back empty and a retried task would reach it behind the driver's
        # back; the driver starts the new actor and gives it its state.
        options = {
            "num_cpus": self._cpus,
            "max_restarts": 0,
            "max_task_retries": 0,
            "scheduling_strategy": "SPREAD",
        }
        extra = self.actor_options(s) if callable(self.actor_options) else self.actor_options
        options.update(extra or {})
        return _ShardActor.options(**options).remote(
            self._template_bytes, s, self.threads_per_shard
        )

    def _start(self) -> None:
        """Wait for every actor to start (within ``start_timeout``)."""
        refs = [st.actor.ready.remote() for st in self._states]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.start_timeout)
        if len(ready) < len(refs):
            raise ShardError(
                f"only {len(ready)} of {len(refs)} shards started within "
                f"{self.start_timeout:g} s: "
                f"each asks for {self._cpus} CPU and the cluster has "
                f"{ray.available_resources().get('CPU', 0)} free"
            )
        for st, ref in zip(self._states, refs, strict=True):
            try:
                st.node = ray.get(ref)["node"]
            except ray.exceptions.RayError as err:
                raise ShardError(f"shard {st.index} did not start: {_short(err, 1000)}") from err

    @property
    def shards(self) -> list:
        """The shards' Ray actor handles (a test or an operator may ``ray.kill`` one)."""
        return [st.actor for st in self._states]

    @property
    def recoveries(self) -> list[dict]:
        """Every rebuild of a shard so far: the shard, why (``cause``), the rows replayed from
        its log, and the seconds from the failure to the replay's end (``None`` if an aborted
        call cut it short: the shard is rebuilt again before its next use)."""
        return [{k: v for k, v in r.items() if k != "started"} for r in self._recoveries]

    def close(self) -> None:
        """Stop the shards; stop Ray if this object started it or joined the one another
        ``KeyedModels`` started, and no other one uses it. Every later use raises
        ``RuntimeError``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for st in self._states:
                with contextlib.suppress(Exception):  # already dead
                    ray.kill(st.actor)
                st.tasks.clear()
            if self._ray_user:
                with _OWN_RAY_LOCK:
                    _OWN_RAY["users"] -= 1
                    if _OWN_RAY["users"] <= 0:
                        _OWN_RAY["started"] = False
                        _OWN_RAY["users"] = 0
                        if ray.is_initialized():
                            ray.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"KeyedModels({self.template!r}, n_shards={getattr(self, '_n', self.n_shards)}, "
            f"batch_size={self.batch_size}, log_limit={self.log_limit})"
        )

    def _usable(self) -> None:
        if self._closed:
            raise RuntimeError("this KeyedModels is closed")
        if self._active:
            raise RuntimeError(
                "an iter_predict_learn of this KeyedModels is running: exhaust or close it first"
            )

    # ------------------------------------------------------------------ routing, checks
    def shard_of(self, key) -> int:
        """The shard that holds ``key``, or that would take it if it came now."""
        with self._lock:
            return self._placement.choose(self._canonical(key))

    @staticmethod
    def _canonical(key, row=None):
        where = "" if row is None else f"row {row}: "
        try:
            return canonical_key(key)
        except TypeError as err:
            raise TypeError(f"{where}{err}") from None
        except ValueError as err:  # pragma: no cover - no key type raises it today
            raise ValueError(f"{where}{err}") from None

    def _rows(self, X) -> list:
        if hasattr(X, "columns"):  # a DataFrame: its rows as dicts, as a river loop sees them
            if not X.columns.is_unique:
                raise ValueError("the DataFrame has duplicate column names")
            return X.to_dict("records")
        return X if isinstance(X, list) else list(X)

    def _checked(self, keys, X, y):
        """``(canonical keys, rows, targets)`` of a call, every one checked; nothing is sent
        before the whole call is valid."""
        rows = self._rows(X)
        keys = keys if isinstance(keys, list) else list(keys)
        n = len(rows)
        if len(keys) != n:
            raise ValueError(f"got {len(keys)} keys for {n} rows of features")
        # only an exact str / int / bytes is its own canonical key: a float equal to an int key
        # (7.0 and 7) must be refused whatever keys came before it. The usual call (such keys
        # only, rows of finite floats) is checked in a few passes over the whole call, in C;
        # anything else row by row, naming the row
        if _PLAIN_KEYS.issuperset(map(type, keys)):
            ckeys = list(keys)
        else:
            ckeys = [None] * n
            for i, key in enumerate(keys):
                t = type(key)
                ckeys[i] = key if t in _PLAIN_KEYS else self._canonical(key, i)
        strict = self._strict
        if _DICTS.issuperset(map(type, rows)):
            if not strict:
                rows_ok = True
            else:
                values = list(chain.from_iterable(map(dict.values, rows)))
                # (a sum of finite floats can overflow: then the rows are checked one by one)
                rows_ok = _FLOATS.issuperset(map(type, values)) and math.isfinite(sum(values))
        else:
            rows_ok = False
        for i, x in enumerate(() if rows_ok else rows):
            # the usual row (a dict of finite floats) in a few steps; anything else goes
            # through the schema's own checks, which name the feature
            if type(x) is dict and (
                not strict
                or (_FLOATS.issuperset(map(type, x.values())) and math.isfinite(sum(x.values())))
            ):
                continue
            try:
                if strict:
                    check_row(x)
                elif not isinstance(x, dict):
                    raise TypeError(f"expected a dict of features, got {type(x).__name__}")
            except (TypeError, ValueError) as err:
                raise type(err)(f"row {i}, key {ckeys[i]!r}: {err}; nothing was sent") from None
        if y is None:
            return ckeys, rows, None
        y = y.tolist() if hasattr(y, "tolist") else (y if isinstance(y, list) else list(y))
        if len(y) != n:
            raise ValueError(f"got {len(y)} targets for {n} rows of features")
        check_y = self._check_y
        if check_y is check_target and _FLOATS.issuperset(map(type, y)) and math.isfinite(sum(y)):
            return ckeys, rows, list(y)
        targets = [None] * n
        for i, target in enumerate(y):
            if type(target) is float and target - target == 0.0 and check_y is check_target:
                targets[i] = target
                continue
            try:
                targets[i] = check_y(target)
            except (TypeError, ValueError) as err:
                raise type(err)(f"row {i}, key {ckeys[i]!r}: {err}; nothing was sent") from None
        return ckeys, rows, targets

    def _with_dist(self, with_dist) -> bool:
        if not isinstance(with_dist, bool | int):
            raise TypeError(f"with_dist must be a bool, got {with_dist!r}")
        if with_dist and is_classifier(self.template):
            raise ValueError(
                "with_dist=True is for regressors: a classifier's predictions are "
                "predict_proba_one's dicts already"
            )
        return bool(with_dist)

    def _prepare(self, keys, X, y, want: bool, with_dist: bool) -> _Call:
        """A call checked, routed and cut into frozen parts (not logged yet)."""
        if y is None:
            raise TypeError(
                "y is None: a call that learns needs a target per row (predict_many predicts "
                "without learning); nothing was sent"
            )
        ckeys, rows, targets = self._checked(keys, X, y)
        n_shards = self._n
        placement = self._placement
        where = placement.shard
        positions = [[] for _ in range(n_shards)]
        for i, ckey in enumerate(ckeys):
            s = where.get(ckey)
            if s is None:
                s = placement.place(ckey)
            positions[s].append(i)
        call = _Call(self._calls, len(rows), want, with_dist)
        self._calls += 1
        batch = self.batch_size
        chunks = []
        for s, idx in enumerate(positions):
            for j, lo in enumerate(range(0, len(idx), batch)):
                chunk = idx[lo : lo + batch]
                data = (
                    [ckeys[i] for i in chunk],
                    [rows[i] for i in chunk],
                    [targets[i] for i in chunk],
                )
                try:
                    frozen = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:
                    frozen = dumps(data)
                chunks.append((j, s, _Part(call, s, frozen, chunk)))
        # the first part of every shard first, so that every shard starts at once
        call.parts = [part for _, _, part in sorted(chunks, key=lambda c: (c[0], c[1]))]
        call.remaining = len(call.parts)
        return call

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
        return self._run(keys, X, y, True, self._with_dist(with_dist))

    def learn_many(self, keys, X, y) -> None:
        """Learn each row with its key's model (created from the template at its first row)."""
        self._run(keys, X, y, False, False)

    def _run(self, keys, X, y, want: bool, with_dist: bool):
        with self._lock:
            self._usable()
            call = self._prepare(keys, X, y, want, with_dist)
            try:
                self._log(call)
                self._send(call)
                self._pump(lambda: call.remaining == 0)
                self._commit(call)
            except BaseException as err:
                self._fail([call], err)
            return call.out

    def iter_predict_learn(self, calls, with_dist: bool = False):
        """Each call's predictions, as :meth:`predict_learn_many` gives them, with up to
        ``max_in_flight`` calls in flight.

        ``calls`` is an iterable of ``(keys, X, y)`` calls. The generator reads the next calls
        while the shards work on the earlier ones and yields each call's predictions in order;
        a key's rows are learnt in input order. The calls whose predictions were yielded are
        applied; if it stops early (closed, an error, an interrupt), the calls read but not
        yielded are not applied, and the error says from which call to resume. A call that
        cannot be read or is refused by the checks raises once the calls before it are
        yielded. Other methods of this object refuse to run until the generator is exhausted
        or closed.
        """
        with self._lock:
            self._usable()
            with_dist = self._with_dist(with_dist)
            self._active = True
        window: deque[_Call] = deque()
        yielded = 0
        held = None  # the error of a call read ahead, raised once the calls before it are out
        source = iter(calls)
        try:
            while True:
                while source is not None and held is None and len(window) < self.max_in_flight:
                    try:
                        item = next(source)
                    except StopIteration:
                        source = None
                        break
                    try:
                        keys, X, y = item
                        with self._lock:
                            call = self._prepare(keys, X, y, True, with_dist)
                    except Exception as err:
                        held = err
                        break
                    with self._lock:
                        window.append(call)
                        self._log(call)
                        self._send(call)
                if not window:
                    break
                call = window[0]
                with self._lock:
                    if self._closed:
                        raise RuntimeError("this KeyedModels was closed while iterating")
                    self._pump(lambda c=call: c.remaining == 0)
                    self._commit(call)
                    window.popleft()
                    yielded += 1
                yield call.out
            if held is not None:
                raise held
        except BaseException as err:
            with self._lock:
                self._active = False
                first = yielded + sum(1 for c in window if c.committed)
                self._fail(list(window), err, resume=first)
        finally:
            self._active = False

    def predict_many(self, keys, X, with_dist: bool = False) -> list:
        """Each row's prediction by its key's model, learning nothing; a key not seen yet gets
        the (untrained) template's prediction and is not created."""
        with_dist = self._with_dist(with_dist)
        with self._lock:
            self._usable()
            ckeys, rows, _ = self._checked(keys, X, None)
            placement = self._placement
            positions = [[] for _ in range(self._n)]
            for i, ckey in enumerate(ckeys):
                positions[placement.choose(ckey)].append(i)
            asks = []
            for s, idx in enumerate(positions):
                for lo in range(0, len(idx), self.batch_size):
                    chunk = idx[lo : lo + self.batch_size]
                    data = dumps(([ckeys[i] for i in chunk], [rows[i] for i in chunk]))
                    asks.append((chunk, _Ask(s, "predict", (data, with_dist))))
            self._ask([a for _, a in asks])
            out = [None] * len(rows)
            for chunk, ask in asks:
                for i, p in zip(chunk, ask.value[1], strict=True):
                    out[i] = p
            return out

    # ------------------------------------------------------------------ the engine
    def _log(self, call: _Call) -> None:
        """Number the call's parts and append them to their shards' logs (before any is
        sent)."""
        for part in call.parts:
            st = self._states[part.shard]
            part.seq = st.seq + 1
            st.log.append(part)
            st.seq = part.seq

    def _submit(self, st: _ShardState, method: str, *args, part=None, ask=None, replay=False,
                returns: int = 1) -> _Task:
        kind = "apply" if part is not None else ("ask" if ask is not None else method)
        if part is not None:
            part.sent = True  # before the remote call: an interrupt after it must see it
        handle = getattr(st.actor, method)
        if returns == 1:
            ref, payload = handle.remote(*args), None
        else:
            payload, ref = handle.options(num_returns=2).remote(*args)
        task = _Task(kind, ref, payload=payload, part=part, ask=ask, replay=replay)
        if ask is not None:
            ask.payload = payload
        st.tasks.append(task)
        return task

    def _submit_part(self, st: _ShardState, part: _Part, replay: bool) -> _Task:
        call = part.call
        want = call is not None and call.want and not part.done and not replay
        with_dist = call is not None and call.with_dist
        return self._submit(st, "apply", part.seq, part.data, want, with_dist, part=part,
                            replay=replay)

    def _send(self, call: _Call) -> None:
        """Submit the call's parts, keeping at most ``max_in_flight`` tasks per shard."""
        limit = self.max_in_flight
        for part in call.parts:
            st = self._states[part.shard]
            while not part.sent:
                if st.state != "ok":
                    self._rebuild(st)  # sends the shard's whole log, this part included
                elif len(st.tasks) >= limit:
                    self._pump(lambda st=st, part=part: part.sent or len(st.tasks) < limit)
                else:
                    self._submit_part(st, part, replay=False)

    def _pump(self, done) -> None:
        """Collect answers, each shard's in order, until ``done()``; a shard that does not
        answer within ``timeout`` is killed and rebuilt."""
        timeout = self.timeout
        while not done():
            heads = {}
            deadline = math.inf
            for st in self._states:
                if st.tasks:
                    task = st.tasks[0]
                    heads[task.ref] = st
                    deadline = min(deadline, self._deadline(st, task))
            if not heads:
                raise AssertionError("KeyedModels waits with nothing in flight")  # a bug
            wait = min(max(deadline - time.monotonic(), 0.0), _POLL)
            ready, _ = ray.wait(list(heads), num_returns=1, timeout=wait)
            for ref in ready:
                self._collect(heads[ref])
            now = time.monotonic()
            for st in self._states:
                if st.tasks and now > self._deadline(st, st.tasks[0]):
                    task = st.tasks[0]
                    if task.kind == "ready":
                        cause = "its new actor did not start within start_timeout="
                        cause += f"{self.start_timeout:g} s (killed)"
                    else:
                        cause = f"did not answer within timeout={timeout:g} s (killed)"
                    self._failed(st, cause, kill=True)

    def _deadline(self, st: _ShardState, task: _Task) -> float:
        """When the task counts as hung: its time counts from its sending or the shard's last
        answer, whichever is later (the tasks before it on the shard are not its own)."""
        limit = self.timeout if task.limit is None else task.limit
        return max(task.sent, st.progress) + limit

    def _collect(self, st: _ShardState) -> None:
        """The answer of the shard's oldest task."""
        task = st.tasks.popleft()
        try:
            answer = ray.get(task.ref, timeout=self.timeout)
        except ray.exceptions.RayActorError as err:
            st.tasks.appendleft(task)  # (so that _failed sees what was in flight)
            self._failed(st, f"its actor died ({_short(err, 160)})")
            return
        except ray.exceptions.GetTimeoutError:
            st.tasks.appendleft(task)
            self._failed(st, f"its answer did not arrive within {self.timeout:g} s", kill=True)
            return
        except ray.exceptions.RayError as err:
            raise ShardError(f"shard {st.index}: {task.kind} failed: {_short(err, 1000)}") from err
        st.progress = time.monotonic()
        if not task.replay:
            st.failures = 0
        if task.kind == "apply":
            self._applied(st, task, answer)
        elif task.kind in ("load", "ready"):
            st.node = answer["node"]
        elif task.kind == "dump":
            st.snapping = False
            self._promote(st, task.payload, answer)
        else:  # a question
            ask = task.ask
            ask.value = answer
            ask.state = "done"
        if task.record is not None:
            task.record["seconds"] = time.monotonic() - task.record["started"]

    def _applied(self, st: _ShardState, task: _Task, answer) -> None:
        part = task.part
        status = answer[0]
        if status == "duplicate":
            if answer[2] is not None:
                status, answer = "ok", answer[2]
            elif part.done or part.seq <= st.committed or not (part.call and part.call.want):
                status, answer = "ok", ("ok", None)
        if status == "ok":
            if part.done or part.seq <= st.committed:
                return  # a replay
            part.done = True
            call = part.call
            if call.want:
                out = call.out
                for i, p in zip(part.rows, answer[1], strict=True):
                    out[i] = p
            call.remaining -= 1
        elif status == "refused":
            raise _Refused(st.index, answer[1], answer[2])
        else:  # "gap", "broken", a duplicate without its answer: the shard is not as logged
            st.tasks.appendleft(task)
            self._failed(st, f"its state did not match the log ({status} at part {part.seq})",
                         dead=False)

    def _failed(self, st: _ShardState, cause: str, dead: bool = True, kill: bool = False) -> None:
        """The shard's actor is dead (``dead``; hung: ``kill`` it first) or out of step with
        the log: rebuild it, or give up after ``max_retries`` rebuilds in a row."""
        if kill:
            with contextlib.suppress(Exception):
                ray.kill(st.actor)
        for task in st.tasks:
            if task.ask is not None and task.kind == "ask":
                task.ask.state = "new"
        st.tasks.clear()
        st.snapping = False
        st.state = "dead" if (dead or kill) else "stale"
        st.failures += 1
        st.cause = cause
        if st.failures > self.max_retries:
            raise ShardError(
                f"shard {st.index} failed {st.failures} times in a row (max_retries="
                f"{self.max_retries}); the last time: {cause}"
            )
        self._rebuild(st)

    def _rebuild(self, st: _ShardState) -> None:
        """The shard's state again from the driver's: a new actor if it is dead, its base,
        then its log (the committed parts replayed, the pending ones sent again)."""
        started = time.monotonic()
        if st.busy:
            # the tasks of an interrupted call: a shard still at them after BUSY_GRACE
            # seconds is killed (a new actor starts in a second or two; the work could last
            # minutes)
            busy, st.busy = st.busy, []
            if st.state == "stale" and not _finished(busy, BUSY_GRACE):
                st.state = "dead"
                st.cause = "killed: still busy with an interrupted call"
        if st.state == "dead":
            with contextlib.suppress(Exception):
                ray.kill(st.actor)
            st.actor = self._new_actor(st.index)
            st.node = None
            st.state = "stale"  # alive, and empty until loaded
        cause = st.cause or "rolled back an aborted call"
        st.tasks.clear()
        st.snap = None
        st.snapping = False
        if st.node is None:  # a new actor: its start has its own time limit
            self._submit(st, "ready", replay=True).limit = self.start_timeout
        last = self._submit(st, "load", st.base, st.base_seq, replay=True)
        replayed = 0
        for part in st.log:
            replay = part.seq <= st.committed or part.done
            task = self._submit_part(st, part, replay=replay)
            if replay:
                replayed += part.n
                last = task
        # recorded now (an aborted call may cut the rebuild short: then it keeps no seconds)
        last.record = {"shard": st.index, "cause": cause, "rows_replayed": replayed,
                       "seconds": None, "started": started}
        self._recoveries.append(last.record)
        # only now: an interrupt before this leaves the shard to be rebuilt again
        st.state = "ok"
        st.cause = ""

    def _commit(self, call: _Call) -> None:
        touched = []
        for part in call.parts:
            st = self._states[part.shard]
            if part.seq > st.committed:
                st.committed = part.seq
            st.log_rows += part.n
            part.call = None  # the answers are the caller's now
            part.rows = None
            touched.append(st)
        call.committed = True
        for st in touched:
            if st.snap is not None and st.snap[1]["seq"] <= st.committed:
                self._promote(st, *st.snap)
            if st.log_rows >= self.log_limit and not st.snapping and st.state == "ok":
                st.snapping = True
                self._submit(st, "dump", returns=2)

    def _promote(self, st: _ShardState, payload, info) -> None:
        """Make a snapshot the shard's base and drop the log it holds."""
        seq = info["seq"]
        if seq > st.committed:  # holds parts of calls not yet committed: wait for them
            st.snap = (payload, info)
            return
        st.snap = None
        if seq < st.base_seq:
            return
        if st.node is None or st.node != self._node:
            # the payload lives in the object store of the shard's node, lost with it: keep a
            # copy on the driver's node
            try:
                payload = ray.put(ray.get(payload, timeout=self.timeout))
            except ray.exceptions.RayError:  # lost on the way: keep the base and the log
                return
        st.base, st.base_seq = payload, seq
        st.log = [p for p in st.log if p.seq > seq]
        st.log_rows = sum(p.n for p in st.log if p.seq <= st.committed)

    def _fail(self, calls, err: BaseException, resume: int | None = None):
        """Abort every call not committed, then raise ``err`` (a model's refusal: its own
        error) with a note on what state the keys are in."""
        interrupted = not isinstance(err, Exception)
        touched = self._abort(kill=interrupted)
        pending = [c for c in calls if not c.committed]
        if isinstance(err, _Refused):
            where = f"key {err.key!r} on shard {err.shard}"
            err = err.error
            err.add_note(f"({where} refused a row of this call)")
        if isinstance(err, GeneratorExit):
            raise err
        if resume is None:
            if pending:
                what = "the call was not applied: no key learnt any of its rows"
                tail = "the keys are as they were before it, so it is safe to send it again"
            else:
                what = "the call was applied whole (every key learnt its rows)"
                tail = "do not send it again"
        else:
            what = (
                f"the {resume} calls yielded were applied; the {len(pending)} read after them "
                "were not"
            )
            tail = f"resume from call {resume} (counting from 0): it is safe to send it again"
        rebuilt = (
            f"; shards {sorted(touched)} are rebuilt from the driver's snapshot and log before "
            "they take anything else"
            if touched
            else ""
        )
        err.add_note(f"KeyedModels: {what}{rebuilt}; {tail}.")
        raise err

    def _abort(self, kill: bool) -> list[int]:
        """Take back every part not committed; a shard that may have applied one is rebuilt
        before it takes anything else (killed first if ``kill``: an interrupt stops the work).
        Returns those shards."""
        touched = []
        for st in self._states:
            pending = [p for p in st.log if p.seq > st.committed]
            if st.state == "ok" and any(p.sent for p in pending):
                st.state = "stale"
                st.cause = "rolled back an aborted call"
                if kill and st.tasks:
                    # interrupted: the work sent goes on until the shard's next use, which
                    # kills the actor if it is still busy then (see _rebuild); the caller has
                    # control back at once
                    st.busy = [t.ref for t in st.tasks]
            if st.state != "ok":
                touched.append(st.index)
            for p in pending:
                p.call = None
            st.log = [p for p in st.log if p.seq <= st.committed]
            st.seq = st.committed
            st.tasks.clear()
            st.snapping = False
            if st.snap is not None and st.snap[1]["seq"] > st.committed:
                st.snap = None
            st.failures = 0
        return touched

    def _ask(self, asks: list[_Ask]) -> None:
        """Ask each shard its question (a shard rebuilt meanwhile is asked again)."""
        try:
            while True:
                for ask in asks:
                    if ask.state == "new":
                        st = self._states[ask.shard]
                        if st.state != "ok":
                            self._rebuild(st)
                        ask.state = "sent"
                        self._submit(st, ask.method, *ask.args, ask=ask, returns=ask.returns)
                if all(a.state == "done" for a in asks):
                    return
                self._pump(lambda: all(a.state != "sent" for a in asks))
        except BaseException as err:
            # a question changes nothing: nothing to take back but what was in flight
            self._abort(kill=not isinstance(err, Exception))
            if isinstance(err, _Refused):  # pragma: no cover - questions refuse nothing
                raise err.error from None
            raise

    def _on_each(self, method, *args) -> list:
        asks = [_Ask(s, method, args) for s in range(self._n)]
        self._ask(asks)
        return [a.value for a in asks]

    def warm(self, X, y) -> None:
        """Feed the rows ``X, y`` to a throwaway clone of the template on every shard, in
        parallel, and drop it (no key changes): each actor's process then loads the compiled
        kernels (from Numba's disk cache, a second or so for an E-DOEBE) before the first real
        call, not during it."""
        with self._lock:
            self._usable()
            if y is None:
                raise TypeError("y is None: warm needs a target per row")
            rows = self._rows(X)
            _, rows, targets = self._checked(["warm"] * len(rows), rows, y)
            self._on_each("warm", rows, targets)

    # ------------------------------------------------------------------ views
    def keys(self) -> list:
        """Every key with a model, shard by shard (each in the order of its first row)."""
        with self._lock:
            self._usable()
            return [k for part in self._on_each("keys") for k in part]

    @property
    def n_keys(self) -> int:
        """The number of keys with a model."""
        with self._lock:
            self._usable()
            return sum(self._on_each("n_keys"))

    def model(self, key):
        """A local copy of ``key``'s model (``KeyError`` if it has none)."""
        with self._lock:
            self._usable()
            ckey = self._canonical(key)
            s = self._placement.where(ckey)
            if s is None:
                raise KeyError(key)
            ask = _Ask(s, "model", (ckey,))
            self._ask([ask])
            if ask.value is None:
                raise KeyError(key)
            return pickle.loads(ask.value)

    def memory(self) -> list[dict]:
        """Per shard: its keys, the rows it has learnt, ``model_bytes`` (the size of its models
        pickled: what a snapshot or a checkpoint holds; not the process's memory), its last
        part (``seq``), its library threads and the Ray node it runs on."""
        with self._lock:
            self._usable()
            return self._on_each("memory")

    # ------------------------------------------------------------------ checkpoints
    def _snapshot_all(self) -> list:
        """Every shard's state now, as its new base; ``[(payload ref, info)]``."""
        asks = [_Ask(s, "dump", (), returns=2) for s in range(self._n)]
        self._ask(asks)
        out = []
        for st, ask in zip(self._states, asks, strict=True):
            st.snap = None
            self._promote(st, ask.payload, ask.value)
            if st.base_seq != ask.value["seq"]:
                raise ShardError(
                    f"shard {st.index}'s snapshot could not be brought to the driver's node"
                )
            out.append((st.base, ask.value))
        return out

    def checkpoint(self, path) -> dict:
        """Write every shard's models to the folder ``path`` and a manifest; returns the
        manifest.

        The driver snapshots every shard (the snapshots become the shards' bases: their logs
        are cleared) and writes, each atomically (a temporary file renamed), one file per
        shard (``shard-0000-<id>.pkl``) and the template (``template-<id>.pkl``), then
        ``manifest.json``, the commit point, which names the files with their sizes and
        SHA-256 and carries its own checksum. The files of the checkpoint the manifest
        replaced are removed then (and only those). The folder is the driver's: on a cluster
        it need not be shared, and the driver never reads it again (recovery uses its own
        copies), so removing or reusing it later breaks nothing. An ``OSError`` (a read-only
        folder, a full disk) names the folder and leaves no file of this checkpoint behind.
        """
        from river_doebe import __version__

        with self._lock:
            self._usable()
            folder = Path(path)
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise OSError(
                    err.errno, f"cannot write a checkpoint in {str(folder)!r}: {err.strerror}"
                ) from err
            previous = _previous_files(folder)
            snaps = self._snapshot_all()
            tag = uuid.uuid4().hex[:12]
            written: list[Path] = []
            try:
                shards = []
                for s, (ref, info) in enumerate(snaps):
                    data = ray.get(ref, timeout=self.timeout)
                    name = f"shard-{s:04d}-{tag}.pkl"
                    written.append(folder / name)
                    _atomic_write(folder / name, data)
                    shards.append(
                        {
                            "file": name,
                            "n_keys": info["n_keys"],
                            "rows_learnt": info["rows_learnt"],
                            "bytes": len(data),
                            "sha256": hashlib.sha256(data).hexdigest(),
                        }
                    )
                template = self._template_bytes
                template_name = f"template-{tag}.pkl"
                written.append(folder / template_name)
                _atomic_write(folder / template_name, template)
                manifest = {
                    "format": FORMAT,
                    "library": "river-doebe",
                    "version": __version__,
                    "n_shards": self._n,
                    "placement": PLACEMENT,
                    "hash_scheme": HASH_SCHEME,
                    "template": repr(self.template),
                    "template_file": template_name,
                    "template_sha256": hashlib.sha256(template).hexdigest(),
                    "n_keys": sum(s["n_keys"] for s in shards),
                    "shards": shards,
                }
                manifest["checksum"] = _checksum(manifest)
                written.append(folder / MANIFEST)
                _atomic_write(folder / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
            except OSError as err:
                for f in written[:-1] if written and written[-1].name == MANIFEST else written:
                    with contextlib.suppress(OSError):
                        f.unlink()
                raise OSError(
                    err.errno,
                    f"cannot write a checkpoint in {str(folder)!r}: {err.strerror or err}; no "
                    "file of it was left there (the previous checkpoint, if any, is intact)",
                ) from err
            keep = {s["file"] for s in shards} | {template_name}
            for name in previous - keep:
                with contextlib.suppress(OSError):
                    (folder / name).unlink()
            return manifest

    @classmethod
    def restore(
        cls,
        path,
        n_shards=None,
        address=None,
        batch_size: int = 8192,
        log_limit: int = 50_000,
        cpus_per_shard=None,
        **kwargs,
    ) -> KeyedModels:
        """The models of the checkpoint in the folder ``path`` on new shards; the other
        parameters as in the constructor. ``n_shards=None`` keeps the checkpoint's number of
        shards and each key its shard; another number places the keys anew (resharding: no key
        is lost). Every file is checked against the manifest (size, SHA-256, keys) and the
        manifest against its checksum; :class:`CheckpointError` names the file that does not
        match. The files are pickles: restore only checkpoints you trust."""
        folder = Path(path)
        manifest = _read_manifest(folder)
        template = pickle.loads(
            _read_checked(folder, manifest["template_file"], manifest["template_sha256"])
        )
        payloads = [
            _read_checked(folder, entry["file"], entry["sha256"], entry["bytes"])
            for entry in manifest["shards"]
        ]
        keyed = cls(
            template,
            n_shards=manifest["n_shards"] if n_shards is None else n_shards,
            address=address,
            batch_size=batch_size,
            log_limit=log_limit,
            cpus_per_shard=cpus_per_shard,
            **kwargs,
        )
        try:
            with keyed._lock:
                keyed._load_checkpoint(folder, manifest, payloads)
        except BaseException:
            keyed.close()
            raise
        return keyed

    def _load_checkpoint(self, folder: Path, manifest: dict, payloads: list) -> None:
        entries = manifest["shards"]
        if self._n == len(payloads):  # the same shards: each file as it is
            bases = [ray.put(data) for data in payloads]
            asks = [_Ask(s, "load", (bases[s], 0, True)) for s in range(self._n)]
            self._ask(asks)
            for s, (ask, entry) in enumerate(zip(asks, entries, strict=True)):
                keys = ask.value["keys"]
                self._check_shard_file(folder, entry, keys, ask.value["rows_learnt"])
                for key in keys:
                    try:
                        self._placement.assign(key, s)
                    except ValueError as err:
                        raise CheckpointError(
                            f"{str(folder / entry['file'])!r}: {err} (the manifest's files "
                            "overlap)"
                        ) from None
                st = self._states[s]
                st.base, st.base_seq = bases[s], 0
            return
        # resharding: the keys placed anew, in the order of the old shards
        models: list[dict] = [{} for _ in range(self._n)]
        rows: list[dict] = [{} for _ in range(self._n)]
        for data, entry in zip(payloads, entries, strict=True):
            try:
                state = pickle.loads(data)
                old, old_rows = state["models"], state["rows"]
            except Exception as err:
                raise CheckpointError(f"{str(folder / entry['file'])!r}: {_short(err)}") from None
            self._check_shard_file(folder, entry, list(old), sum(old_rows.values()))
            for key, model in old.items():
                if self._placement.where(key) is not None:
                    raise CheckpointError(
                        f"{str(folder / entry['file'])!r}: key {key!r} is in another shard's "
                        "file too (the manifest's files overlap)"
                    )
                s = self._placement.place(key)
                models[s][key] = model
                rows[s][key] = old_rows.get(key, 0)
        # cloudpickle: a model whose class came by value goes back by value
        from ray import cloudpickle

        bases = [
            ray.put(cloudpickle.dumps({"models": m, "rows": r}, protocol=pickle.HIGHEST_PROTOCOL))
            for m, r in zip(models, rows, strict=True)
        ]
        self._ask([_Ask(s, "load", (bases[s], 0)) for s in range(self._n)])
        for st, base in zip(self._states, bases, strict=True):
            st.base, st.base_seq = base, 0

    @staticmethod
    def _check_shard_file(folder: Path, entry: dict, keys: list, rows_learnt: int) -> None:
        if len(keys) != entry["n_keys"] or rows_learnt != entry["rows_learnt"]:
            raise CheckpointError(
                f"{str(folder / entry['file'])!r} holds {len(keys)} keys and {rows_learnt} rows, "
                f"its manifest says {entry['n_keys']} and {entry['rows_learnt']}"
            )


# ---------------------------------------------------------------------- helpers
def _probe(address: str) -> None:
    """``ConnectionError`` naming ``address`` if nothing answers there within
    ``CONNECT_TIMEOUT`` seconds (Ray's own attempt waits minutes)."""
    target = address
    if target in ("auto", "local"):
        return
    if "://" in target:
        target = target.split("://", 1)[1]
    host, _, port = target.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        return  # Ray judges the form
    hosts = [host]
    if host in ("localhost", "127.0.0.1", "::1"):
        with contextlib.suppress(Exception):
            hosts.append(ray.util.get_node_ip_address())
    errors = []
    for h in hosts:
        try:
            socket.create_connection((h, int(port)), timeout=CONNECT_TIMEOUT / len(hosts)).close()
            return
        except OSError as err:
            errors.append(f"{h}:{port}: {err}")
    raise ConnectionError(
        f"no Ray cluster at address {address!r}: nothing answers there ({'; '.join(errors)})"
    )


def _finished(refs, timeout: float = 0.0) -> bool:
    """Whether every task of ``refs`` has finished (waiting at most ``timeout`` seconds)."""
    try:
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout, fetch_local=False)
    except Exception:
        return False
    return len(done) == len(refs)


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never a
    part: a temporary file in the same folder, flushed to disk, then renamed over ``path``."""
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex[:8]}-{path.name}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _checksum(manifest: dict) -> str:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _previous_files(folder: Path) -> set:
    """The files the manifest in ``folder`` names (removed once a new one replaces it)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        names = [s["file"] for s in manifest["shards"]]
        names.append(manifest["template_file"])
    except Exception:  # none, or not ours: remove nothing
        return set()
    return {n for n in names if isinstance(n, str) and Path(n).name == n}


def _read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no checkpoint in {str(folder)!r}: {MANIFEST} is missing"
        ) from None
    except OSError as err:
        raise CheckpointError(f"{str(path)!r} cannot be read: {err}") from None
    try:
        manifest = json.loads(text)
    except ValueError as err:
        raise CheckpointError(f"{str(path)!r} is not valid JSON ({err}): damaged") from None
    if not isinstance(manifest, dict):
        raise CheckpointError(f"{str(path)!r} is not a checkpoint manifest")
    if manifest.get("format") != FORMAT or manifest.get("hash_scheme") != HASH_SCHEME:
        raise CheckpointError(
            f"{str(path)!r} is a checkpoint of another format or hash scheme "
            f"({manifest.get('format')!r}, {manifest.get('hash_scheme')!r}); this version "
            f"reads format {FORMAT}"
        )
    if manifest.get("checksum") != _checksum(manifest):
        raise CheckpointError(
            f"{str(path)!r} does not match its own checksum: it was edited or damaged"
        )
    try:
        n = manifest["n_shards"]
        entries = manifest["shards"]
        fields = [manifest["template_file"], manifest["template_sha256"]]
        ok = isinstance(n, int) and n >= 1 and isinstance(entries, list) and len(entries) == n
        for entry in entries:
            fields += [entry["file"], entry["sha256"]]
            ok = ok and all(
                isinstance(entry[k], int) and entry[k] >= 0
                for k in ("n_keys", "rows_learnt", "bytes")
            )
        ok = ok and all(isinstance(f, str) and Path(f).name == f for f in fields)
    except (KeyError, TypeError) as err:
        raise CheckpointError(f"{str(path)!r} lacks a field or has a wrong one ({err!r})") from None
    if not ok:
        raise CheckpointError(f"{str(path)!r} has a field of the wrong kind or count")
    return manifest


def _read_checked(folder: Path, name: str, sha256: str, size: int | None = None) -> bytes:
    path = folder / name
    try:
        data = path.read_bytes()
    except OSError as err:
        raise CheckpointError(
            f"{str(path)!r}, named by {MANIFEST}, cannot be read: {err.strerror or err}"
        ) from None
    if (size is not None and len(data) != size) or hashlib.sha256(data).hexdigest() != sha256:
        raise CheckpointError(
            f"{str(path)!r} does not match its size or SHA-256 in {MANIFEST}: it is not the "
            "file this checkpoint wrote (damaged, or replaced)"
        )
    return data
