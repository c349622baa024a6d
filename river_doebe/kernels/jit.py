"""One kernel source, compiled twice: on one thread and with its member loop on every thread.

A stack kernel loops over the members with ``numba.prange``. Compiled without ``parallel=True``
that loop is an ordinary ``range`` (no thread is woken: a single learner or a small stack pays
nothing); compiled with it, the members run on Numba's threads. Each member's arithmetic is its
own, so both give the same numbers, and the engine picks one per call, by timing both on the
stream unless the thread count is set (:class:`river_doebe.engine.threads.Pace`).

Numba's on-disk cache files a compiled function under its qualified name, so the parallel twin
is a copy of the function under the name ``<name>_parallel``: each has its own cache entry.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

__all__ = ["stack_kernel"]

_Kernel = TypeVar("_Kernel", bound=Callable[..., Any])


def stack_kernel(py_func: _Kernel) -> tuple[_Kernel, _Kernel]:
    """``(serial, parallel)``: ``py_func`` jitted with ``cache=True``, and a copy of it jitted
    with ``parallel=True`` as well."""
    serial = numba.njit(cache=True)(py_func)
    twin = types.FunctionType(py_func.__code__, py_func.__globals__,
                              f"{py_func.__name__}_parallel", py_func.__defaults__,
                              py_func.__closure__)
    twin.__qualname__ = f"{py_func.__qualname__}_parallel"
    twin.__module__ = py_func.__module__
    twin.__doc__ = py_func.__doc__
    # (typed as ``py_func``: a type checker then checks every call against its argument list)
    return cast(_Kernel, serial), cast(_Kernel, numba.njit(cache=True, parallel=True)(twin))
