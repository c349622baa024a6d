"""One kernel source, compiled twice: on one thread and with its member loop on every thread.

A stack kernel loops over the members with ``numba.prange``. Compiled without ``parallel=True``
that loop is an ordinary ``range`` (no thread is woken: a single learner or a small stack pays
nothing); compiled with it, the members run on Numba's threads. Each member's arithmetic is its
own, so both give the same numbers, and the engine picks one per call, by timing both on the
stream unless the thread count is set (:class:`river_doebe.engine.threads.Pace`).

Numba's on-disk cache files a compiled function under its qualified name, so the parallel twin
is a copy of the function under the name ``<name>_parallel``: each has its own cache entry.

**The on-disk cache and the callees' sources.** Numba files a compiled kernel under a hash of
the source file that defines it, and compiles into it every jitted function it calls, from
whatever file: a kernel whose own file did not change is loaded from the cache with the code of
its callees as they were when it was compiled. A kernel of ``gaussian.py`` then runs the member
step of an older ``stack.py`` (this happened: a developer's tree ran a block path a third slower
than its source, and the same happens to a user whose upgrade leaves a file unchanged beside the
old cache files, which no uninstall removes). Every kernel here is therefore cached by
:class:`KernelCache`, whose stamp covers the sources of every module of its package that
defines jitted code (:func:`kernel_sources`): a change to any of them compiles the kernels
again.

Every kernel of the package is jitted with ``no_cfunc_wrapper=True``: Numba otherwise compiles
a C-callable wrapper of each function as well, for passing it as a first-class function value,
which the package never does (about a tenth of a fresh install's compile). A function that only
kernels call (a member's step, the covariance repair) has ``no_cpython_wrapper=True`` too: it
cannot be called from Python, and Numba does not build the code that would unbox its records.

A kernel that makes no array is compiled without Numba's reference counting (its runtime's
``_nrt`` option off). With it, every call of a member's step and every view of a stack's arrays
(``C[m]``, ``Phi[src[m]]``) increments and later decrements the count of each array it holds,
some seventy atomic operations a member's step, which cost a small member as much as its
arithmetic; the arrays a kernel is given live in its caller for the whole call, so nothing needs
the counts. A kernel that makes arrays (``np.empty``, ``np.linalg``), or returns one its callee
made, says so (``kernel(allocates=True)``): without the runtime Numba refuses to type it
("Only accept returning of array passed into the function as argument"). Every kernel sets the
option itself, as Numba would otherwise give a callee its caller's.

A kernel that runs once a sample on a few small arrays (the recalibration's update) may be
*rented* (:class:`Rented`): run by its Python twin (:func:`python_twin`, the same source and
the same bits) until those calls have taken about what its compile would, then compiled, so
that a short first stream on a fresh install is not kept waiting for a compile it would not
pay back. The block kernels are rented the same way, a block's rows going the per-sample way
meanwhile (:meth:`river_doebe.engine.Engine.learn_block`).
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import time
import types
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import numba
import numpy as np
from numba.core.caching import CompileResultCacheImpl, FunctionCache
from numba.core.registry import CPUDispatcher

__all__ = [
    "KernelCache",
    "Rented",
    "buy_all",
    "in_disk_cache",
    "kernel",
    "kernel_sources",
    "python_twin",
    "stack_kernel",
    "twin_seconds",
]

_Kernel = TypeVar("_Kernel", bound=Callable[..., Any])

#: a module that defines jitted code imports Numba or this module, and has a decorator of
#: this package's or of Numba's at the start of a line, a ``stack_kernel`` assignment, a call
#: of ``numba.njit`` (this module's own) or of ``intrinsic`` as an argument or assigned
_IMPORTS_JIT = (b"import numba", b"from numba", b"kernels.jit import")
_DEFINES_JIT = re.compile(
    rb"^[ \t]*@(?:kernel|njit|numba\.njit|jit|numba\.jit|intrinsic|overload\w*\(|"
    rb"register_jitable)\b|=[ \t]*stack_kernel\(|numba\.njit\(|[=(,][ \t]*intrinsic\(", re.M)


def kernel_sources(root: Path) -> list[Path]:
    """The source files whose changes recompile the kernels of the package at ``root`` (its
    directory; a module that is a single file: that file): every module of it that defines
    jitted code, which any kernel of it may call."""
    if root.is_file():
        return [root]
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if any(marker in text for marker in _IMPORTS_JIT) and _DEFINES_JIT.search(text):
            found.append(path)
    return found


@functools.cache
def _sources_digest(root: Path) -> bytes:
    sha = hashlib.sha256()
    for path in kernel_sources(root):
        sha.update(path.relative_to(root.parent).as_posix().encode() + b"\0")
        sha.update(hashlib.sha256(path.read_bytes()).digest())
    return sha.digest()


def _package_root(py_func: Callable[..., Any]) -> Path | None:
    """The directory of the top-level package that ``py_func``'s module belongs to (or the
    module's file, for a module outside a package); ``None`` when there is no file."""
    top = sys.modules.get(py_func.__module__.partition(".")[0])
    paths = list(getattr(top, "__path__", None) or [])
    if paths:
        return Path(paths[0]).resolve()
    file = getattr(top, "__file__", None)
    return Path(file).resolve() if file else None


class _StampedLocator:
    """A Numba cache locator whose source stamp is its own and the digest of the package's
    kernel sources; everything else is the locator's."""

    def __init__(self, locator: Any, digest: bytes) -> None:
        self._locator = locator
        self._digest = digest

    def get_source_stamp(self) -> Any:
        return (self._locator.get_source_stamp(), self._digest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._locator, name)


class _KernelCacheImpl(CompileResultCacheImpl):
    def __init__(self, py_func: Callable[..., Any]) -> None:
        super().__init__(py_func)
        root = _package_root(py_func)
        digest = _sources_digest(root) if root is not None and root.exists() else b""
        self._locator = _StampedLocator(self._locator, digest)


class KernelCache(FunctionCache):
    """Numba's on-disk cache of a function (``cache=True``), whose entries are also stale when
    a module of the function's package that defines jitted code has changed since (Numba looks
    at the function's own file only): an entry compiled with another version of a callee is
    compiled again rather than loaded."""

    _impl_class = _KernelCacheImpl


def _cached(dispatcher: Any) -> Any:
    """``dispatcher`` with its on-disk cache (what ``cache=True`` would give it, but a
    :class:`KernelCache`)."""
    dispatcher._cache = KernelCache(dispatcher.py_func)
    return dispatcher


def _options(allocates: bool) -> dict[str, Any]:
    """The Numba options of every kernel (a dict: Numba's type stubs omit ``no_cfunc_wrapper``);
    ``_nrt``: Numba's runtime, whose reference counts only code that makes arrays needs. (The
    on-disk cache is not one of them: :func:`_cached` gives it.)"""
    return {"no_cfunc_wrapper": True, "_nrt": bool(allocates)}


def kernel(*, allocates: bool = False, **options: Any) -> Callable[[_Kernel], _Kernel]:
    """``numba.njit`` with the package's options (cached on disk by :class:`KernelCache`,
    ``no_cfunc_wrapper=True``, Numba's reference counting only if the kernel ``allocates``
    arrays) and ``options`` (typed as the decorated function, as :func:`stack_kernel`'s)."""
    jit = numba.njit(**_options(allocates), **options)
    return cast(Callable[[_Kernel], _Kernel], lambda py_func: _cached(jit(py_func)))


def stack_kernel(py_func: _Kernel, *, allocates: bool = False) -> tuple[_Kernel, _Kernel]:
    """``(serial, parallel)``: ``py_func`` jitted with the options of :func:`kernel`, and a copy
    of it jitted with ``parallel=True`` as well."""
    serial = _cached(numba.njit(**_options(allocates))(py_func))
    twin = types.FunctionType(py_func.__code__, py_func.__globals__,
                              f"{py_func.__name__}_parallel", py_func.__defaults__,
                              py_func.__closure__)
    twin.__qualname__ = f"{py_func.__qualname__}_parallel"
    twin.__module__ = py_func.__module__
    twin.__doc__ = py_func.__doc__
    # (typed as ``py_func``: a type checker then checks every call against its argument list)
    parallel = _cached(numba.njit(parallel=True, **_options(allocates))(twin))
    return cast(_Kernel, serial), cast(_Kernel, parallel)


_TWINS: dict[Any, Callable[..., Any]] = {}


def python_twin(dispatcher: Any) -> Callable[..., Any]:
    """The Python function of a kernel whose calls to the kernels of its module go to their
    Python functions too (a kernel without a CPython wrapper cannot be called from Python at
    all). Its arithmetic is the kernel's own source run by the interpreter: written with explicit
    loops and ``math``'s functions, as the recalibration's kernels are, it gives the same bits
    (``tests/test_conf.py`` replays streams through both)."""
    twin = _TWINS.get(dispatcher)
    if twin is None:
        scope = dict(dispatcher.py_func.__globals__)
        for name, value in list(scope.items()):
            if isinstance(value, CPUDispatcher):
                func = value.py_func
                scope[name] = types.FunctionType(func.__code__, scope, func.__name__,
                                                 func.__defaults__, func.__closure__)
        func = dispatcher.py_func
        twin = _TWINS[dispatcher] = types.FunctionType(func.__code__, scope, func.__name__,
                                                        func.__defaults__, func.__closure__)
    return twin


def in_disk_cache(dispatcher: Any, signature: tuple) -> bool:
    """Whether Numba's on-disk cache holds ``dispatcher`` compiled for ``signature`` (the types
    of its arguments): Numba's own first step of a compile, the cache looked up, not used."""
    try:
        return dispatcher._cache.load_overload(signature, dispatcher.targetctx) is not None
    except Exception:  # a Numba without this cache interface: as if not cached
        return False


class _Vector(list):
    """A 1-D array's values as a list, with the array's ``shape``: what a twin indexes."""

    __slots__ = ("shape",)
    shape: tuple[int, ...]


class _Matrix(list):
    """A 2-D array's rows as :class:`_Vector`, with its ``shape``, indexed by a row or by
    ``[i, j]``."""

    __slots__ = ("shape",)
    shape: tuple[int, ...]

    def __getitem__(self, key: Any) -> Any:
        if type(key) is tuple:
            return list.__getitem__(self, key[0])[key[1]]
        return list.__getitem__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if type(key) is not tuple:
            raise TypeError("a twin on lists writes a matrix element by element")
        list.__getitem__(self, key[0])[key[1]] = value


def _as_list(a: np.ndarray) -> list:
    if a.ndim == 1:
        v = _Vector(a.tolist())
        v.shape = a.shape
        return v
    m = _Matrix()
    for row in a.tolist():
        r = _Vector(row)
        r.shape = a.shape[1:]
        m.append(r)
    m.shape = a.shape
    return m


def _owner(a: np.ndarray) -> int:
    """The identity of the object that owns ``a``'s memory (the end of its chain of bases)."""
    owner: Any = a
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    return id(owner)


def _on_lists(twin: Callable[..., Any], args: tuple) -> Any:
    """``twin(*args)`` with the 1-D and 2-D arrays of ``args`` as lists, written back into the
    writable ones after the call (as they are when two of them are views of one owner's memory:
    the lists would not see each other's writes)."""
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and 1 <= a.ndim <= 2]
    if len({_owner(args[i]) for i in arrays}) < len(arrays):
        return twin(*args)
    lists = list(args)
    for i in arrays:
        lists[i] = _as_list(args[i])
    out = twin(*lists)
    for i in arrays:
        if args[i].flags.writeable and args[i].size:
            args[i][...] = lists[i]
    return out


#: the seconds the twins of every :class:`Rented` have run in this process (not the kernels'
#: time: :class:`river_doebe.engine.threads.Pace` leaves it out of the sweep's)
_twin_seconds = [0.0]


def twin_seconds() -> float:
    """The seconds the rented kernels' Python twins have run in this process."""
    return _twin_seconds[0]


#: every :class:`Rented` of the modules imported so far (what :func:`buy_all` buys; weak: a
#: test's own rented kernels go with it)
_ALL_RENTED: weakref.WeakSet[Rented] = weakref.WeakSet()


def buy_all() -> None:
    """Every rented kernel of the package's modules imported so far compiled from its next call
    on: what ``river-doebe compile`` does before it runs the models, and a benchmark or a test of
    a later session (whose on-disk cache holds the kernels) does first."""
    for rented in _ALL_RENTED:
        rented.buy()


class Rented:
    """Kernels run by their Python twins (:func:`python_twin`) until the twins' calls have
    taken as long as compiling the kernels would, then compiled: the rule of renting before
    buying (the "ski rental" problem), which never spends more than twice what the better of the
    two would have cost. A kernel already compiled in the process, or found in Numba's on-disk
    cache at its first call, is used compiled at once. For kernels that run once a sample on
    small arrays, so that a short stream on a fresh install does not wait seconds for a
    compile that its samples would not pay back. The twins give the same bits as the kernels,
    so when the switch comes changes no number. A caller with a stand-in of its own that gives
    the kernel's bits (the block kernels: a block's rows the per-sample way,
    :meth:`river_doebe.engine.Engine.learn_block`) asks :meth:`ready` and :meth:`pay` itself and
    leaves the twins alone.

    Parameters
    ----------
    rent
        Seconds of the twins' calls after which the kernels are compiled (about what their
        compile takes).
    as_lists
        Whether the twins take their 1-D and 2-D arrays as lists (:class:`_Vector`,
        :class:`_Matrix`), written back into the arrays after the call: Python computes with
        its own floats faster than with NumPy's scalars, to the same bits.
        For kernels that index their arrays element by element and read only their ``shape``
        (no slices, no array methods) and return no array of theirs; arrays that may share
        memory (views of one owner) are passed as they are.
    kernels
        The kernels (Numba dispatchers) by name; ``rented.name(*args)`` calls one (a name
        other than the methods' and attributes' below).
    """

    def __init__(self, rent: float, *, as_lists: bool = False, **kernels: Any) -> None:
        clash = set(kernels) & {"rent", "paid", "ready", "pay", "buy", "as_lists"}
        if clash:
            raise ValueError(f"a rented kernel cannot be named {sorted(clash)}")
        self.rent = float(rent)
        self.paid = 0.0
        self.as_lists = bool(as_lists)
        self._kernels = kernels
        self._bought: dict[str, bool] = {}
        self._calls = {name: self._entry(name, d) for name, d in kernels.items()}
        _ALL_RENTED.add(self)

    def ready(self, name: str, args: tuple) -> bool:
        """Whether the kernel ``name`` runs compiled now; ``args``: the arguments of its call
        (at its first call in the process, what Numba's on-disk cache is looked up for)."""
        bought = self._bought.get(name)
        if bought is None:
            dispatcher = self._kernels[name]
            bought = self._bought[name] = bool(dispatcher.signatures) or in_disk_cache(
                dispatcher, tuple(dispatcher.typeof_pyval(a) for a in args))
        return bought or self.paid >= self.rent

    def pay(self, seconds: float) -> None:
        """Count ``seconds`` the twins took towards the rent."""
        self.paid += seconds

    def _entry(self, name: str, dispatcher: Any) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            if self.ready(name, args):
                # compiled for good (what was paid only grows, a kernel bought stays bought): later
                # calls find the kernel itself as the attribute, without this function
                self.__dict__[name] = dispatcher
                return dispatcher(*args)
            t0 = time.perf_counter()
            # (a compiled kernel's arithmetic sets no floating-point warning: nor does its twin's,
            # whose scalars may be NumPy's)
            with np.errstate(all="ignore"):
                if self.as_lists:
                    out = _on_lists(python_twin(dispatcher), args)
                else:
                    out = python_twin(dispatcher)(*args)
            seconds = time.perf_counter() - t0
            self.pay(seconds)
            _twin_seconds[0] += seconds
            return out

        return call

    def buy(self) -> None:
        """Run the kernels compiled from now on (``river-doebe compile`` puts them in the
        on-disk cache so)."""
        self.rent = 0.0

    def __getattr__(self, name: str) -> Callable[..., Any]:
        calls = self.__dict__.get("_calls", {})
        if name not in calls:
            raise AttributeError(name)
        return calls[name]
