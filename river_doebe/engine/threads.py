"""How many threads the member stack's kernels use, and when.

A large stack's predict sweep and its block path (featurisation included) can run their members
on every core (Numba's ``prange``: each member's arithmetic is its own, so the numbers do not
depend on the thread count), and the E-DOEBE warm-up's fit runs its jobs on a pool of threads.
Whether the threads pay depends on the machine *now*: on a quiet machine a second core nearly
halves a large stack's time, but beside other CPU-bound programs a parallel region waits at its
barrier for a thread that the system has descheduled, and one sample at a time that costs more
than the region saves (``benchmarks/results/throughput.json``, its busy rows). So by default
nothing is decided in advance: each stack times its own calls on the stream it learns, serial
and parallel in turn, and runs the faster (:class:`Pace`), checking again as it goes.

The library's setting applies to every model of the process:

- ``river_doebe.set_num_threads(None)`` (the default): the stacks choose, call by call, between
  one thread and every thread Numba launched, by timing both (see :class:`Pace`);
- ``river_doebe.set_num_threads(n)``: exactly ``n`` threads for every stack large enough to
  use them, always (``1``: never parallel, e.g. for one model per process in a pool of
  processes or a Ray actor; ``n >= 2``: the threads always, without timing anything);
- ``with river_doebe.num_threads(n): ...`` sets it inside the block;
- the environment variable ``RIVER_DOEBE_THREADS`` (a number, or ``auto``) sets the starting
  value.

An explicit setting always wins over the timing. Nothing of the timing is pickled or copied
with a model: a loaded or copied model times its own calls again.

**The parallel twins are compiled when they can pay for it.** Numba compiles a kernel on its
first call; a parallel twin costs seconds more (its ``prange`` lowering), and on a fresh install
(no on-disk cache yet) a first probe would pay for every twin before the first hundred samples,
to speed up a stream that may end soon after. So the stacks of a process first run their serial
kernels only, until those calls have taken as long as this process spent compiling the library's
kernels (:func:`threads_ready`; Numba's compile events, outermost only): the rule of renting
before buying (the "ski rental" problem), which never spends more than twice what the better of
the two choices would have cost for the compile. On a later session the kernels come from the
on-disk cache, nothing is compiled, and the stacks time their threads from their first calls;
if that earlier session ended before its stacks timed their threads (its twins were never
compiled, so they are not in the cache), the rent is :data:`UNCACHED_TWINS_SECONDS` instead.
The compile time is kept out of every call's time too, so a probe that compiles its twin is not
judged by it.

The GNU OpenMP runtime (Numba's ``omp`` threading layer) keeps a thread that has no work
spinning for 300,000 rounds before it sleeps. Between the per-sample parallel regions of a busy
machine that spinning thread is one more CPU-bound thread, fighting the process' own main thread
and everything else; but a thread that has gone to sleep takes tens of microseconds to wake at
the next region, one sample at a time. So unless the user set ``OMP_WAIT_POLICY`` or
``GOMP_SPINCOUNT``, the library sets ``GOMP_SPINCOUNT`` to the rounds that last
:data:`SPIN_SECONDS`: enough to stay awake from one sample to the next on a quiet machine, short
enough to give the core back soon on a busy one. A round is no fixed time (x86's ``pause`` in
it took 9 ns on one machine of ``benchmarks/results/engine.md``, where the count chosen on
another gave about 50 ns a round; :mod:`river_doebe.kernels.spin`), so the count is timed, once
a process, just before the library first starts Numba's threads (OpenMP reads its environment
once, when it starts): importing the library sets :data:`SPIN_COUNT` until then, which is also
the count where the round cannot be timed. It touches no other OpenMP runtime, and nothing if
Numba's threads were started before the library's first parallel call.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import numba
import numpy as np
from numba.core import event
from numba.np.ufunc import parallel

from river_doebe.kernels import spin
from river_doebe.kernels.jit import in_disk_cache, twin_seconds

__all__ = [
    "PARALLEL_MIN_MEMBERS",
    "PARALLEL_MIN_WORK",
    "SPIN_COUNT",
    "SPIN_SECONDS",
    "UNCACHED_TWINS_SECONDS",
    "Pace",
    "backward_runs",
    "balanced_order",
    "compiled",
    "get_num_threads",
    "num_threads",
    "running_threads",
    "set_num_threads",
    "threads_ready",
    "time_the_spin",
    "use_threads",
]

#: one sample at a time, a stack is a candidate for its threads when it has at least
#: ``PARALLEL_MIN_MEMBERS`` members and ``PARALLEL_MIN_WORK`` covariance entries (the sum of
#: ``F_m^2``): below that the parallel sweep lost to one thread even on a quiet machine
#: (``benchmarks/throughput.py``, its ``threshold`` rows), and a busy machine only makes it lose
#: more, so a small stack does not even time it. Above it, :class:`Pace` decides. A block of
#: rows is a candidate from two members on: one launch of the threads serves every row.
PARALLEL_MIN_WORK = 20_000
PARALLEL_MIN_MEMBERS = 8

#: how long an idle OpenMP thread spins before it sleeps, when the user set no OpenMP wait
#: policy (see the module docstring; measured in ``benchmarks/results/engine.md``)
SPIN_SECONDS = 5e-4

#: the ``GOMP_SPINCOUNT`` the import sets when the user set no OpenMP wait policy, until the
#: count of :data:`SPIN_SECONDS` is timed (and where it cannot be): half a millisecond on the
#: processor where it was chosen (about 50 ns a round there, not timed)
SPIN_COUNT = "10000"

#: the bounds of the timed count (a round far out of the range measured is a broken timing)
_SPIN_LIMITS = (1_000, 10_000_000)

#: whether the library set ``GOMP_SPINCOUNT`` and has not timed it yet
_spin_untimed = [False]


def _yield_when_idle() -> None:
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
        _spin_untimed[0] = True


_yield_when_idle()


def time_the_spin() -> None:
    """Set ``GOMP_SPINCOUNT`` to the rounds of :data:`SPIN_SECONDS` on this processor, if the
    library set it at its import, no one changed it since and Numba's threads have not started
    (then OpenMP has not read it yet); once a process. The first stack that may use the threads
    calls it; a program that starts Numba's threads itself before that (its own parallel code,
    ``numba.get_num_threads()``) calls it first to have the timed count."""
    _spin_untimed[0] = False
    # (Numba has no public "started" flag)
    if getattr(parallel, "_is_initialized", True) or os.environ.get("GOMP_SPINCOUNT") != SPIN_COUNT:
        return
    seconds = spin.round_seconds()
    if seconds is not None and seconds > 0:
        low, high = _SPIN_LIMITS
        os.environ["GOMP_SPINCOUNT"] = str(min(max(round(SPIN_SECONDS / seconds), low), high))


def _from_environment() -> int | None:
    value = os.environ.get("RIVER_DOEBE_THREADS", "").strip()
    if not value or value.lower() == "auto":
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"RIVER_DOEBE_THREADS must be a positive integer or 'auto', got {value!r}")
    return n


_setting: list[int | None] = [_from_environment()]


def set_num_threads(n: int | None) -> None:
    """Use exactly ``n`` threads in the stack kernels (``None``: let each stack choose between
    one thread and all that Numba launched, by timing both)."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"the number of threads must be a positive integer or None, got {n!r}")
    _setting[0] = n


def get_num_threads() -> int:
    """The threads the stack kernels may use now."""
    n = _setting[0]
    # (numba.config sets its attributes from the environment at run time: no declared type)
    launched: int = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined, unused-ignore]
    return launched if n is None else min(n, launched)


@contextlib.contextmanager
def num_threads(n: int | None) -> Iterator[None]:
    """``with num_threads(1): ...``: the stack kernels use ``n`` threads inside the block
    (``None``: they choose)."""
    before = _setting[0]
    set_num_threads(n)
    try:
        yield
    finally:
        _setting[0] = before


def use_threads(work: int, members: int, rows: int = 1) -> bool:
    """Whether a stack of ``members`` members and ``work`` covariance entries may run its members
    on more than one thread, for one sample (``rows = 1``) or a block of rows (and if so, the
    Numba thread count of this thread is set for it). With the default setting a :class:`Pace`
    then decides whether it does."""
    if members < 2:  # a single learner: decided before anything else (its every step asks)
        return False
    n = get_num_threads()
    if n < 2:
        return False
    if rows == 1 and (members < PARALLEL_MIN_MEMBERS or work < PARALLEL_MIN_WORK):
        return False
    if _spin_untimed[0]:
        time_the_spin()  # (before the first ``numba.get_num_threads``, which starts them)
    count = _numba_count[0]
    if count() != n:
        numba.set_num_threads(n)
    if count is numba.get_num_threads:  # (Numba's threads run now: their layer's own getter)
        _numba_count[0] = getattr(parallel, "_get_num_threads", count)
    return True


#: what gives Numba's thread count of the calling thread: ``numba.get_num_threads`` until it has
#: started Numba's threads, then the function of the threading layer it calls itself (Numba's
#: own, ``numba.np.ufunc.parallel._get_num_threads``, when it has it) without the two locks it
#: takes first, which cost a large stack 7-12 us a sample (``benchmarks/results/engine.md``)
_numba_count: list[Callable[[], int]] = [numba.get_num_threads]


def running_threads() -> int:
    """The threads a parallel kernel called now from this thread runs on (Numba's count)."""
    return _numba_count[0]()


#: the clock of :class:`Pace` and of the compile bill (nanoseconds; a test may replace it)
_clock = time.perf_counter_ns


class _CompileBill(event.Listener):
    """The time Numba has spent compiling this library's kernels in this process (``ns``) and
    how many it compiled (``n``): the outermost compile events whose function is the library's
    (a kernel's nested compiles, Numba's own helpers included, are inside it)."""

    def __init__(self) -> None:
        self.ns = 0
        self.n = 0
        self._depth = 0
        self._t0 = 0
        self._ours = False

    def on_start(self, ev: event.Event) -> None:
        if self._depth == 0:
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            self._ours = getattr(func, "__module__", "").startswith("river_doebe.")
            self._t0 = _clock()
        self._depth += 1

    def on_end(self, ev: event.Event) -> None:
        self._depth -= 1
        if self._depth == 0 and self._ours:
            self.ns += _clock() - self._t0
            self.n += 1


def compiled() -> tuple[int, float]:
    """How many of the library's kernels this process has compiled so far, and the seconds
    that took (a kernel read from Numba's on-disk cache counts for nothing)."""
    return _bill.n, _bill.ns / 1e9


#: the compile bill, and the time the stacks' serial calls have run (the rent paid); Numba
#: compiles under one lock, so the events of several threads do not interleave
_bill = _CompileBill()
event.register("numba:compile", _bill)
_paid = [0]
_ready = [False]


#: the rent when this process compiled nothing (the serial kernels came from the on-disk cache)
#: but the parallel twins are not there: about what the member sweep's twin and the three
#: featurisation twins take to compile (``benchmarks/results/engine.md``: 7.4 s on 2 cores)
UNCACHED_TWINS_SECONDS = 8.0

_twins_cached: list[bool | None] = [None]


def _parallel_sweep_cached() -> bool:
    """Whether the parallel member sweep is compiled in this process or, for every signature
    its serial twin has run, in Numba's on-disk cache (then the first probe compiles nothing:
    the twins of one install are compiled together). Asked once a process."""
    if _twins_cached[0] is None:
        from river_doebe.kernels import stack

        # (Numba dispatchers; typed as their Python functions by ``stack_kernel``)
        serial: Any = stack.predict_stack
        twin: Any = stack.predict_stack_parallel
        cached = bool(twin.signatures)
        if not cached and serial.signatures:
            # (Numba's own first step of a compile: its on-disk cache, looked up, not used)
            # (the signatures of the stream: a repair runs the serial kernel with repair=True,
            # a variant no twin ever needs)
            stream = [sig for sig in serial.signatures if str(sig[-1]) == "none"]
            cached = bool(stream) and all(in_disk_cache(twin, sig) for sig in stream)
        _twins_cached[0] = cached
    return bool(_twins_cached[0])


def _elsewhere() -> int:
    """The nanoseconds this process has spent compiling the library's kernels and running the
    Python twins of its rented ones (``kernels.jit.Rented``): time in a call that is not its
    kernels' (a twin's rent counts toward its own compile, not also toward the threads')."""
    return _bill.ns + int(twin_seconds() * 1e9)


def threads_ready() -> bool:
    """Whether the stacks of this process may time their parallel kernels (and so compile
    them): once their serial calls have run as long as the library's compiles took in this
    process; when it compiled nothing, at once if the parallel kernels are in the on-disk cache
    too, else after :data:`UNCACHED_TWINS_SECONDS` of serial calls. From then on, always."""
    if not _ready[0] and _paid[0] > 0:
        rent = _bill.ns
        if rent == 0 and not _parallel_sweep_cached():
            rent = int(UNCACHED_TWINS_SECONDS * 1e9)
        if _paid[0] >= rent:
            _ready[0] = True
    return _ready[0]


class Pace:
    """Chooses, call by call, between a stack kernel's serial and parallel twins by timing both
    on the stream itself.

    The calls are timed in *chunks* of ``chunk`` consecutive calls of one kind (a chunk pays
    for waking the threads once, as a run of calls does). A *probe* runs ``rounds`` pairs of
    chunks, serial then parallel, then parallel then serial, and so on (a drift of the machine's
    speed hits both), and compares the two by their chunks' median time per unit (a sample, or a
    block's row): the parallel kernels win if they take at most ``MARGIN`` of the serial time.
    The winner runs until the next probe:

    - while the threads win, a probe every ``longest`` chunks, and at once if the last three
      chunks' median time exceeds what one thread took at the probe (the machine got busy: the
      fall-back takes three chunks);
    - while one thread wins, a probe after ``first`` chunks, then twice as long each time one
      thread wins again, up to ``longest`` (a busy machine pays for few parallel chunks); a
      parallel chunk that takes more than ``ABORT`` times the serial time ends its probe, as
      soon as its calls so far have taken that long.

    With ``probe_rows``, a probe times only part of a long call: :meth:`split` cuts a call of
    more than ``2 * probe_rows`` rows into a timed part of ``probe_rows`` rows and the rest, so
    the losing side of a probe runs on a few rows, not on a whole block (the parts give the same
    numbers as the whole: blocks of any length do).

    A call is timed from its start to the start of the next (:meth:`start`), so what the
    threads cost outside the kernel (a spinning thread taking the core from the main thread)
    counts too, or to :meth:`stop` when that is called. During a probe, and while the serial
    calls pay toward the twins' compile, each call is timed on its own; between probes a chunk's
    calls are timed together, one reading of the clock a chunk: a large stack calls this once a
    sample, and each reading of a sample comes back cold into the caches its sweep emptied
    (``benchmarks/results/engine.md``). Which kernels run never changes a number (each member's
    arithmetic is its own), so neither does anything here.
    """

    MARGIN = 0.9
    ABORT = 2.0

    __slots__ = ("chunk", "rounds", "first", "longest", "probe_rows", "parallel", "_plan",
                 "_serial", "_threads", "_recent", "_wait", "_left", "_left_calls", "_t0", "_units",
                 "_span", "_billed", "_sum", "_sum_units", "_ref", "_probing", "calls",
                 "parallel_calls")

    def __init__(self, chunk: int = 8, rounds: int = 3, first: int = 32, longest: int = 512,
                 probe_rows: int = 0):
        self.chunk, self.rounds, self.first, self.longest = chunk, rounds, first, longest
        self.probe_rows = probe_rows
        self.calls = 0  # calls that could use the threads, and how many did
        self.parallel_calls = 0
        self.restart()

    def restart(self) -> None:
        """Forget every timing and probe from the next call."""
        self.parallel = False
        self._wait = self.first
        self._ref = np.inf
        self._recent: list[float] = []
        # when the calls being timed started (None: none is), how many there are, their units
        # and the time spent elsewhere then (see _elsewhere)
        self._t0: int | None = None
        self._span = 0
        self._units = 0
        self._billed = 0
        self._begin_probe()

    def restack(self) -> None:
        """The stack changed (members died, inputs were added): the timings so far are of
        another stack. While the threads win, or during a probe, probe again from the next call;
        while one thread wins, keep to the schedule (a smaller stack gains even less from its
        threads, and an E-DOEBE loses members often early on)."""
        self._t0 = None
        self._recent = []
        if self.parallel or self._probing:
            self._begin_probe()

    # ------------------------------------------------------------------ calls
    def start(self, work: int, members: int, rows: int = 1) -> bool:
        """Whether this call of a stack of ``members`` members and ``work`` covariance entries,
        on ``rows`` rows, runs the parallel kernels; closes the previous call's time."""
        if not use_threads(work, members, rows):
            self._t0 = None
            return False
        if _setting[0] is not None:  # an explicit thread count: no timing, no choice
            self._t0 = None
            return True
        self.calls += 1
        if (self._t0 is not None and self._span < self._left_calls and not self._probing
                and _ready[0]):
            # a chunk's next call between probes: timed with the chunk's first
            self._span += 1
            self._units += rows
        else:
            now = _clock()
            elsewhere = _elsewhere()
            if self._t0 is not None:
                self._count(now, elsewhere)
            self._t0, self._units, self._span, self._billed = now, rows, 1, elsewhere
            if not (_ready[0] or threads_ready()):  # the serial kernels pay toward the twins
                return False
        self.parallel_calls += self.parallel
        return self.parallel

    def split(self, work: int, members: int, rows: int) -> int:
        """How many of a call's ``rows`` to run as the next call: ``probe_rows`` while a probe
        would time this call and it has more than twice as many, else all of them."""
        if (self.probe_rows and 2 * self.probe_rows < rows and self._probing
                and _setting[0] is None and _ready[0] and use_threads(work, members, rows)):
            return self.probe_rows
        return rows

    def stop(self) -> None:
        """The call started last has ended (else its time runs to the next :meth:`start`)."""
        if self._t0 is not None:
            self._count(_clock(), _elsewhere())
            self._t0 = None

    def forget(self) -> None:
        """Do not count the time since the last call (something else ran in between)."""
        self._t0 = None

    # ------------------------------------------------------------------ bookkeeping
    def _count(self, now: int, elsewhere: int) -> None:
        """Count the ``_span`` calls timed since ``_t0``, ended at ``now`` when
        :func:`_elsewhere` was ``elsewhere``."""
        assert self._t0 is not None  # (a span being timed)
        elapsed = now - self._t0 - (elsewhere - self._billed)  # (a compile or a twin: not theirs)
        if not _ready[0]:  # a serial call before the twins may be timed: rent paid, no probe
            _paid[0] += max(elapsed, 0)
            return
        self._sum += elapsed
        self._sum_units += self._units
        self._left_calls -= self._span
        if self._left_calls == 0:
            cost = self._sum / self._sum_units
            self._new_chunk()
            self._chunk_done(cost)
        elif (self._probing and self.parallel and self._serial
              and self._sum > self.ABORT * min(self._serial) * self.chunk * self._units):
            # this parallel chunk cannot end under the bound any more: the probe ends now
            self._new_chunk()
            self._decide(False)

    def _new_chunk(self) -> None:
        self._sum, self._sum_units, self._left_calls = 0, 0, self.chunk

    def _begin_probe(self) -> None:
        plan = []
        for r in range(self.rounds):
            plan += [False, True] if r % 2 == 0 else [True, False]
        self._serial: list[float] = []
        self._threads: list[float] = []
        self._probing = True
        self.parallel = plan.pop(0)
        self._plan = plan
        self._new_chunk()

    def _chunk_done(self, cost: float) -> None:
        if self._probing:
            (self._threads if self.parallel else self._serial).append(cost)
            if self.parallel and self._serial and cost > self.ABORT * min(self._serial):
                return self._decide(False)
            if self._plan:
                self.parallel = self._plan.pop(0)
                return
            return self._decide(_median(self._threads) <= self.MARGIN * _median(self._serial))
        self._recent = (self._recent + [cost])[-3:]
        self._left -= 1
        if self.parallel and len(self._recent) == 3 and _median(self._recent) > self._ref:
            return self._begin_probe()
        if self._left <= 0:
            self._begin_probe()

    def _decide(self, parallel: bool) -> None:
        self._probing = False
        self.parallel = parallel
        self._ref = _median(self._serial)
        self._recent = []
        if parallel:
            self._wait = self.first
            self._left = self.longest
        else:
            self._left = self._wait
            self._wait = min(2 * self._wait, self.longest)


def _median(values: list[float]) -> float:
    """The median, the lower of the middle two for an even count (the better of two)."""
    s = sorted(values)
    return s[(len(s) - 1) // 2]


def balanced_order(static: np.ndarray, F: np.ndarray) -> np.ndarray:
    """The order in which a parallel kernel hands the members to its threads.

    Numba splits a ``prange`` into one contiguous run of iterations per thread, so the run's
    members decide a thread's time. Members of one kind (static or dynamic, and their feature
    count) cost alike, but the kinds do not: a static member's square-root step touches half
    its factor, a dynamic member's step all of its covariance. An E-DOEBE stacks its static
    members, then their dynamic twins, so in stack order one thread would get every static
    member and the other every dynamic one. This order spreads each kind evenly along the
    whole range (member ``i`` of ``n`` of its kind goes to the position ``(i + 1/2) / n``), so
    any contiguous run holds its share of every kind, whatever the thread count and whatever
    the kinds' relative costs. The numbers do not change: each member's arithmetic is its own.
    """
    static = np.asarray(static, dtype=bool)
    F = np.asarray(F, dtype=np.int64)
    position = np.empty(len(F))
    for kind in set(zip(static.tolist(), F.tolist())):
        rows = np.flatnonzero((static == kind[0]) & (F == kind[1]))
        position[rows] = (np.arange(len(rows)) + 0.5) / len(rows)
    return np.argsort(position, kind="stable").astype(np.int64)


def backward_runs(order: np.ndarray, n_threads: int) -> np.ndarray:
    """``order`` with the run of every thread reversed: the order in which a parallel kernel on
    ``n_threads`` threads (``1``: the serial kernel) takes the members every other sweep.

    A sweep one sample at a time reads and writes every member's covariance, more bytes than a
    core's cache holds, and leaves in the cache the members it swept last. Swept again in the
    same order, the cache holds none of those it needs first, and each member it brings in evicts
    the next one it needs (a cyclic pass over more than the cache is the case where a
    least-recently-used cache hits nothing). Swept backwards instead, every thread starts with
    the members it swept last, still in its core's cache: each sweep then reads a cache's worth
    less from memory (``benchmarks/results/engine.md``). A thread must meet its own members
    again for that, so each run is reversed where it is: Numba splits a ``prange`` of ``M``
    iterations into contiguous runs, one a thread, of ``M // n`` iterations plus one for the
    first ``M % n`` threads (its ``omp`` and ``workqueue`` layers; measured). A threading layer
    that splits otherwise (TBB's, which steals work) takes the members in another order: that
    loses the cache's hits, never a number, as each member's arithmetic is its own."""
    M = len(order)
    out = np.empty_like(order)
    start = 0
    for i in range(n_threads):
        size = M // n_threads + (i < M % n_threads)
        out[start:start + size] = order[start:start + size][::-1]
        start += size
    return out
