"""How many threads the member stack's kernels use.

A large stack's predict sweep and its block path (featurisation included) run their members on
every core (Numba's ``prange``: each member's arithmetic is its own, so the numbers do not depend
on the thread count), and so does the E-DOEBE warm-up's fit. A small stack stays on one thread:
waking the threads costs more than they save. The
library's setting applies to every model of the process:

- ``river_doebe.set_num_threads(n)`` (``None``: every thread Numba launched; ``1``: never
  parallel, e.g. for one model per process in a pool of processes);
- ``with river_doebe.num_threads(1): ...`` pins what runs inside the block;
- the environment variable ``RIVER_DOEBE_THREADS`` sets the starting value.
"""

from __future__ import annotations

import contextlib
import os

import numba
import numpy as np

__all__ = [
    "PARALLEL_MIN_MEMBERS",
    "PARALLEL_MIN_WORK",
    "balanced_order",
    "get_num_threads",
    "num_threads",
    "set_num_threads",
    "use_threads",
]

#: one sample at a time, a stack runs its members on every thread when it has at least
#: ``PARALLEL_MIN_MEMBERS`` members and ``PARALLEL_MIN_WORK`` covariance entries (the sum of
#: ``F_m^2``): measured by ``benchmarks/throughput.py`` (its ``threshold`` rows, per sample, one
#: thread against two with the parallel sweep forced) on two cores, the parallel sweep (with the
#: featurisation on both threads) pays from about 4 to 8 members of 100 features (1.10x at 4,
#: 1.28x at 8), 8 of 50 (1.03x) and 32 of 25 (1.13x), and never for one learner. A block of rows
#: runs in parallel from two members on: one launch of the threads serves every row.
PARALLEL_MIN_WORK = 20_000
PARALLEL_MIN_MEMBERS = 8


def _from_environment() -> int | None:
    value = os.environ.get("RIVER_DOEBE_THREADS")
    return None if not value else int(value)


_setting: list[int | None] = [_from_environment()]


def set_num_threads(n: int | None) -> None:
    """Use ``n`` threads in the stack kernels (``None``: all that Numba launched)."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"the number of threads must be a positive integer or None, got {n!r}")
    _setting[0] = n


def get_num_threads() -> int:
    """The threads the stack kernels may use now."""
    n = _setting[0]
    return numba.config.NUMBA_NUM_THREADS if n is None else min(n, numba.config.NUMBA_NUM_THREADS)


@contextlib.contextmanager
def num_threads(n: int | None):
    """``with num_threads(1): ...``: the stack kernels use ``n`` threads inside the block."""
    before = _setting[0]
    set_num_threads(n)
    try:
        yield
    finally:
        _setting[0] = before


def use_threads(work: int, members: int, rows: int = 1) -> bool:
    """Whether a stack of ``members`` members and ``work`` covariance entries runs its members on
    every thread now, for one sample (``rows = 1``) or a block of rows (and if so, the Numba
    thread count of this thread is set for it)."""
    if members < 2:  # a single learner: decided before anything else (its every step asks)
        return False
    n = get_num_threads()
    if n < 2:
        return False
    if rows == 1 and (members < PARALLEL_MIN_MEMBERS or work < PARALLEL_MIN_WORK):
        return False
    if numba.get_num_threads() != n:
        numba.set_num_threads(n)
    return True


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
