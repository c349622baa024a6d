"""How the kernels are compiled: ``river_doebe.kernels.jit``."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core.extending import _Intrinsic
from numba.core.registry import CPUDispatcher

import river_doebe
from river_doebe.kernels.jit import KernelCache, kernel, kernel_sources


def _module_values() -> list:
    """Every top-level value of the package's modules."""
    values = []
    for info in pkgutil.walk_packages(river_doebe.__path__, "river_doebe."):
        if ".distributed" in info.name:  # (Ray: no kernel there, and a slow import)
            continue
        values.extend(vars(importlib.import_module(info.name)).values())
    return values


def _kernels() -> dict[str, CPUDispatcher]:
    """Every Numba function of the package's modules, by qualified name."""
    return {f"{value.py_func.__module__}.{value.py_func.__qualname__}": value
            for value in _module_values() if isinstance(value, CPUDispatcher)}


def test_every_kernel_sets_its_reference_counting_itself():
    """Numba gives a function that does not set it its caller's: a kernel that makes arrays
    called from one that does not would then be refused, and one that does not make any would
    count references or not depending on who compiled it first."""
    kernels = _kernels()
    assert len(kernels) > 40
    unset = sorted(name for name, d in kernels.items() if "_nrt" not in d.targetoptions)
    assert not unset
    counted = {name for name, d in kernels.items() if d.targetoptions["_nrt"]}
    # the kernels that make or return arrays, and only those, count references (a new one that
    # does joins this list; one that stops should leave it)
    package = "river_doebe."
    assert counted == {package + name for name in (
        "basis.bspline._bspline", "basis.bspline._bspline_parallel",
        "conf._kernels._learn_corrections", "conf._kernels.knots",
        "conf._kernels.scaled_mixture_pit", "conf._kernels.update", "conf._kernels.update_affine",
        "kernels.ipl.solve_ipl_step", "kernels.stack.repair_covariance",
        "kernels.weights.mixture_log_density", "warmup.standardise._standardise_one",
    )}


def test_a_kernel_without_reference_counts_cannot_make_an_array():
    """The message a developer meets when a kernel that makes arrays does not say so."""

    @kernel()
    def makes(n):
        return np.empty(n).sum()

    @kernel(allocates=True)
    def says_so(n):
        return np.zeros(n).sum()

    with pytest.raises(numba.core.errors.TypingError, match="Only accept returning of array"):
        makes(3)
    assert says_so(3) == 0.0


def test_every_kernel_is_cached_against_the_sources_it_can_call():
    """Each kernel is filed in the on-disk cache under a stamp that covers every module of the
    package that defines jitted code, its own file among them (a module the scan missed could
    change under a cached caller)."""
    root = Path(river_doebe.__file__).resolve().parent
    sources = set(kernel_sources(root))
    kernels = _kernels()
    assert {type(d._cache) for d in kernels.values()} == {KernelCache}
    outside = sorted(name for name, d in kernels.items()
                     if Path(d.py_func.__code__.co_filename).resolve() not in sources)
    assert not outside
    intrinsics = [value for value in _module_values() if isinstance(value, _Intrinsic)]
    assert intrinsics
    assert all(Path(i._defn.__code__.co_filename).resolve() in sources for i in intrinsics)
    # and no module without jitted code (a docstring's word, ``typing.overload``)
    assert root / "base.py" not in sources
    assert root / "engine" / "core.py" not in sources


_CALLEE = """from river_doebe.kernels.jit import KernelCache, kernel, kernel_sources


@kernel(no_cpython_wrapper=True)
def value():
    return {}
"""

_CALLER = """from river_doebe.kernels.jit import KernelCache, kernel, kernel_sources
from stalepkg.callee import value


@kernel()
def read():
    return value()
"""


def test_a_changed_callee_compiles_its_cached_callers_again(tmp_path):
    """The stale cache this guards against: Numba checks only the file of the function it
    loads, so a caller cached with ``cache=True`` keeps the code of a callee of another file as
    it was when the caller was compiled (one process, then another after the callee's file
    changed)."""
    package = tmp_path / "stalepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "caller.py").write_text(_CALLER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(Path(river_doebe.__file__).resolve().parents[1])])}
    env.pop("NUMBA_DISABLE_JIT", None)

    def run() -> list[str]:
        """The kernel's value, and whether it came from the on-disk cache."""
        done = subprocess.run([sys.executable, "-c", "from stalepkg.caller import read; "
                               "print(read(), sum(read.stats.cache_hits.values()))"],
                              env=env, capture_output=True, text=True, timeout=300, check=True)
        return done.stdout.split()

    for value in ("1.5", "2.5"):
        (package / "callee.py").write_text(_CALLEE.format(value))
        assert run() == [value, "0"]  # compiled with the callee as it is now
        assert run() == [value, "1"]  # and loaded from the cache while it stays so
