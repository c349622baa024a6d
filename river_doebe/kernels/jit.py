"""One kernel source, compiled twice: on one thread and with its member loop on every thread.

A stack kernel loops over the members with ``numba.prange``. Compiled without ``parallel=True``
that loop is an ordinary ``range`` (no thread is woken: a single learner or a small stack pays
nothing); compiled with it, the members run on Numba's threads. Each member's arithmetic is its
own, so both give the same numbers, and the engine picks one per call, by timing both on the
stream unless the thread count is set (:class:`river_doebe.engine.threads.Pace`).

Numba's on-disk cache files a compiled function under its qualified name, so the parallel twin
is a copy of the function under the name ``<name>_parallel``: each has its own cache entry.

Every kernel of the package is jitted with ``no_cfunc_wrapper=True``: Numba otherwise compiles
a C-callable wrapper of each function as well, for passing it as a first-class function value,
which the package never does (about a tenth of a fresh install's compile). A function that only
kernels call (a member's step, the covariance repair) has ``no_cpython_wrapper=True`` too: it
cannot be called from Python, and Numba does not build the code that would unbox its records.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

__all__ = ["kernel", "stack_kernel"]

_Kernel = TypeVar("_Kernel", bound=Callable[..., Any])

#: the Numba options of every stack kernel (a dict: Numba's type stubs omit ``no_cfunc_wrapper``)
_OPTIONS: dict[str, Any] = {"cache": True, "no_cfunc_wrapper": True}


def kernel(**options: Any) -> Callable[[_Kernel], _Kernel]:
    """``numba.njit`` with the package's options (``cache=True``, ``no_cfunc_wrapper=True``) and
    ``options`` (typed as the decorated function, as :func:`stack_kernel`'s)."""
    return cast(Callable[[_Kernel], _Kernel], numba.njit(**_OPTIONS, **options))


def stack_kernel(py_func: _Kernel) -> tuple[_Kernel, _Kernel]:
    """``(serial, parallel)``: ``py_func`` jitted with ``cache=True`` (and
    ``no_cfunc_wrapper=True``, as every kernel of the package), and a copy of it jitted with
    ``parallel=True`` as well."""
    serial = numba.njit(**_OPTIONS)(py_func)
    twin = types.FunctionType(py_func.__code__, py_func.__globals__,
                              f"{py_func.__name__}_parallel", py_func.__defaults__,
                              py_func.__closure__)
    twin.__qualname__ = f"{py_func.__qualname__}_parallel"
    twin.__module__ = py_func.__module__
    twin.__doc__ = py_func.__doc__
    # (typed as ``py_func``: a type checker then checks every call against its argument list)
    parallel = numba.njit(parallel=True, **_OPTIONS)(twin)
    return cast(_Kernel, serial), cast(_Kernel, parallel)
