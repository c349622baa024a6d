"""river's estimator checks on every estimator of the package, as river's own suite runs them.

Every public module is walked, and every concrete river estimator it defines is checked with each
of its ``_unit_test_params``; a new estimator is checked as soon as it exists. Each must also have
a docstring with a runnable example (the doctests run it).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from river import base, checks

import river_doebe


def _public_modules():
    yield river_doebe
    for info in pkgutil.walk_packages(river_doebe.__path__, prefix="river_doebe."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            yield importlib.import_module(info.name)


def _estimator_classes() -> list[type]:
    found = {}
    for module in _public_modules():
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and obj.__module__ == module.__name__
                and issubclass(obj, base.Estimator)
                and not inspect.isabstract(obj)
                and not name.startswith(("_", "Base", "Array"))
            ):
                found[f"{obj.__module__}.{name}"] = obj
    return [found[k] for k in sorted(found)]


CLASSES = _estimator_classes()


def _cases():
    # every estimator with its first parameters in the default run; its other parameters in the
    # slow run (`.ci/run` runs both)
    for cls in CLASSES:
        for i, params in enumerate(cls._unit_test_params()):
            marks = [pytest.mark.slow] if i else []
            yield pytest.param(cls, params, id=f"{cls.__name__}-{i}", marks=marks)


def test_every_exported_estimator_is_found():
    names = {cls.__name__ for cls in CLASSES}
    assert set(river_doebe.__all__) <= names
    assert {"Linear", "AdditivePolynomial", "RandomFourierFeatures", "HilbertGP", "RBFNetwork",
            "TargetStandardScaler", "WithDist"} <= names


@pytest.mark.parametrize("cls, params", list(_cases()))
def test_check_estimator(cls, params):
    checks.check_estimator(cls(**params))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_estimator_has_a_runnable_example(cls):
    doc = inspect.getdoc(cls) or ""
    assert "Examples" in doc and ">>> " in doc, f"{cls.__name__} has no runnable example"
