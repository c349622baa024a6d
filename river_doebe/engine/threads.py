"""How many threads the member stack's kernels use.

A large stack's predict sweep and its block path run their members on every core (Numba's
``prange``: each member's arithmetic is its own, so the numbers do not depend on the thread
count). A small stack stays on one thread: waking the threads costs more than they save. The
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

__all__ = ["PARALLEL_MIN_WORK", "get_num_threads", "num_threads", "set_num_threads", "use_threads"]

#: a stack with fewer covariance entries than this (the sum of ``F_m^2`` over its members) is
#: swept on one thread; measured by ``benchmarks/throughput.py`` (``threshold`` rows): on two
#: cores the parallel sweep pays from about 20 members of 50 features (a single learner never)
PARALLEL_MIN_WORK = 50_000


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


def use_threads(work: int) -> bool:
    """Whether a stack of ``work`` covariance entries runs in parallel now (and if so, the
    Numba thread count of this thread is set for it)."""
    n = get_num_threads()
    if n < 2 or work < PARALLEL_MIN_WORK:
        return False
    if numba.get_num_threads() != n:
        numba.set_num_threads(n)
    return True
