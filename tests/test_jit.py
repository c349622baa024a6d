"""How the kernels are compiled: ``river_doebe.kernels.jit``."""

from __future__ import annotations

import importlib
import pkgutil

import numba
import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

import river_doebe
from river_doebe.kernels.jit import kernel


def _kernels() -> dict[str, CPUDispatcher]:
    """Every Numba function of the package's modules, by qualified name."""
    found = {}
    for info in pkgutil.walk_packages(river_doebe.__path__, "river_doebe."):
        if ".distributed" in info.name:  # (Ray: no kernel there, and a slow import)
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher):
                found[f"{value.py_func.__module__}.{value.py_func.__qualname__}"] = value
    return found


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
