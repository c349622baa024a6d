"""The warm-up of an E-DOEBE: from its first samples to a fitted, replayed member stack.

- :mod:`~river_doebe.warmup.families`: the basis families by name (the registry the command line
  and the benchmarks use too);
- :mod:`~river_doebe.warmup.empirical_bayes`: the type-II maximum-likelihood fit of the families,
  one job per start on every core;
- :mod:`~river_doebe.warmup.laplace`: the draws around each mode (the Laplace approximation);
- :mod:`~river_doebe.warmup.fit`: the pipeline for both tasks (standardise, fit, twin, build the
  engine, replay);
- :mod:`~river_doebe.warmup.fallback`: what the model predicts with until then;
- :mod:`~river_doebe.warmup.standardise`: the standardisation between the model's river face and
  the fallback or the fitted engine behind it.

The fit and its optimiser (scipy) load when a warm-up first needs them.
"""

import importlib

from river_doebe.warmup.fallback import Fallback
from river_doebe.warmup.families import (
    DEFAULT_FAMILIES,
    FAMILIES,
    FAMILY_NAMES,
    WIDE_FAMILIES,
    WIDE_INPUTS,
    check_families,
    default_families,
    family_templates,
    resolve_families,
)
from river_doebe.warmup.standardise import Standardizer

__all__ = [
    "DEFAULT_FAMILIES",
    "FAMILIES",
    "FAMILY_NAMES",
    "Fallback",
    "Standardizer",
    "WIDE_FAMILIES",
    "WIDE_INPUTS",
    "check_families",
    "default_families",
    "family_templates",
    "fit_ensemble",
    "fit_members",
    "resolve_families",
]

_LAZY = {"fit_ensemble": "fit", "fit_members": "fit"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    if name in ("fit", "empirical_bayes", "laplace"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
