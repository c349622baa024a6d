"""The models the command line builds, by key: this package's (``--model``) and river's peers
(``--peers``).

This is the one registry of river's peer regressors: ``benchmarks/peers.py`` builds its models
from it too, so that a model of the same name is the same model in the command line and in the
benchmarks. The basis families behind the DOE-, OE- and DOBE- models are those of the package's
family registry, :mod:`river_doebe.warmup.families`.

Every factory takes the settings of a run, a dict with ``n_warmup``, ``n_samples``, ``starts``
and ``seed`` (a peer reads only the seed), and returns a fresh, untrained model. river's modules
are imported when a peer is built, so that listing the models stays quick.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from river_doebe import EDOEBE
from river_doebe.warmup.families import DEFAULT_FAMILIES, FAMILIES

__all__ = ["DEFAULT", "DEFAULT_PEERS", "FAST", "MODELS", "PEERS", "ModelSpec"]


def _edoebe_defaults() -> dict[str, Any]:
    """The warm-up defaults of ``EDOEBE()`` itself (the paper's settings)."""
    params = inspect.signature(EDOEBE).parameters
    return {k: params[k].default for k in ("n_warmup", "n_samples", "starts")}


#: Warm-up of ``river-doebe evaluate`` by default (those of ``EDOEBE()``) and with ``--fast``.
DEFAULT = _edoebe_defaults()
FAST: dict[str, Any] = {"n_warmup": 500, "n_samples": 3, "starts": (1.0,)}


@dataclass(frozen=True)
class ModelSpec:
    """A model the CLI can build.

    Attributes
    ----------
    label
        Its name in the command line's table and JSON.
    help
        What ``river-doebe list`` says about it.
    factory
        ``factory(settings)`` builds a fresh model (see the module's docstring).
    has_dist
        Whether it gives a predictive distribution (``predict_one(x, with_dist=True)``).
    warms_up
        Whether it fits itself on a warm-up window (``n_warmup`` applies).
    estimator
        For a river peer: river's estimator, by class name (with the parameter that differs from
        its default), the name the benchmarks report it under.
    recalibrates
        Whether the model recalibrates its predictive distribution online itself (this
        package's E-DOEBE models: ``EDOEBE(recalibrate=True)`` is the default); ``--recalibrate``
        then adds the same model with ``recalibrate=False``.

    """

    label: str
    help: str
    factory: Callable
    has_dist: bool = True
    warms_up: bool = False
    estimator: str = ""
    recalibrates: bool = False


# ---------------------------------------------------------------------------------------------
# This package's models
# ---------------------------------------------------------------------------------------------


def _edoebe(settings, **weighting):
    return EDOEBE(
        n_warmup=settings["n_warmup"], n_samples=settings["n_samples"],
        starts=tuple(settings["starts"]), seed=settings["seed"], **weighting,
    )


def _edoebe_stacking(settings):
    # without switching: measured better than with it under stacking (results.md, stacking)
    return _edoebe(settings, weighting="stacking", delta=0.0)


def _family(family, kind):
    """One named family (see :func:`river_doebe.warmup.family_templates`) warmed up like the
    E-DOEBE: ``"doe"`` every member dynamic (the paper's DOE-X), ``"oe"`` every member static
    (OE-X), ``"dobe"`` a single dynamic learner at the empirical-Bayes mode of the ``s = 1``
    start."""

    def make(settings):
        common = {"families": (family,), "n_warmup": settings["n_warmup"],
                  "seed": settings["seed"]}
        if kind == "dobe":
            return EDOEBE(**common, n_samples=1, starts=(1.0,), static=False)
        common.update(n_samples=settings["n_samples"], starts=tuple(settings["starts"]))
        if kind == "doe":
            return EDOEBE(**common, static=False)
        return EDOEBE(**common, rw_variances=())

    return make


def _model_registry() -> dict[str, ModelSpec]:
    models = {
        "edoebe": ModelSpec(
            "E-DOEBE", "E-DOEBE: static and dynamic twins of additive HSGP, RFF and RBF members, "
            "switching weights (paper Exp. 3), recalibrated online (EDOEBE())", _edoebe,
            warms_up=True, recalibrates=True,
        ),
        "edoebe-stacking": ModelSpec(
            "E-DOEBE stacking", "E-DOEBE's members weighted by online stacking of their "
            "predictive densities (weighting='stacking', delta=0), recalibrated online",
            _edoebe_stacking, warms_up=True, recalibrates=True,
        ),
    }
    for fam in FAMILIES.values():
        models[f"doe-{fam.name}"] = ModelSpec(
            f"DOE-{fam.tag}", f"DOEBE of dynamic {fam.description} members",
            _family(fam.name, "doe"), warms_up=True, recalibrates=True,
        )
        models[f"oe-{fam.name}"] = ModelSpec(
            f"OE-{fam.tag}", f"DOEBE of static {fam.description} members",
            _family(fam.name, "oe"), warms_up=True, recalibrates=True,
        )
    # a single learner only for the families of EDOEBE(): the kernel families, whose length
    # scales make one empirical-Bayes mode a model of its own
    for fam in (FAMILIES[name] for name in DEFAULT_FAMILIES):
        models[f"dobe-{fam.name}"] = ModelSpec(
            f"DOBE-{fam.tag}", f"one dynamic {fam.description} learner (empirical-Bayes mode)",
            _family(fam.name, "dobe"), warms_up=True, recalibrates=True,
        )
    return models


MODELS: dict[str, ModelSpec] = _model_registry()


# ---------------------------------------------------------------------------------------------
# river's peers
# ---------------------------------------------------------------------------------------------


def _blr(smoothing=None):
    def make(settings):
        from river import linear_model, preprocessing

        return preprocessing.StandardScaler() | linear_model.BayesianLinearRegression(
            smoothing=smoothing
        )

    return make


def _lr(settings):
    from river import linear_model, preprocessing

    return preprocessing.StandardScaler() | linear_model.LinearRegression()


def _hat(settings):
    from river import preprocessing, tree

    # the leaves hold linear models, which need scaled inputs (raw Elevators: nMSE 49 vs 0.32)
    return preprocessing.StandardScaler() | tree.HoeffdingAdaptiveTreeRegressor(
        seed=settings["seed"]
    )


def _knn(settings):
    from river import neighbors, preprocessing

    return preprocessing.StandardScaler() | neighbors.KNNRegressor()


def _arf(settings):
    from river import forest, preprocessing

    return preprocessing.StandardScaler() | forest.ARFRegressor(seed=settings["seed"])


PEERS: dict[str, ModelSpec] = {
    "blr": ModelSpec(
        "BayesianLinearRegression", "river StandardScaler | linear_model.BayesianLinearRegression",
        _blr(), estimator="BayesianLinearRegression",
    ),
    "blr-smooth": ModelSpec(
        "BayesianLinearRegression(smoothing=0.999)",
        "the same, forgetting old data (smoothing=0.999)", _blr(0.999),
        estimator="BayesianLinearRegression(smoothing=0.999)",
    ),
    "lr": ModelSpec(
        "LinearRegression", "river StandardScaler | linear_model.LinearRegression", _lr,
        has_dist=False, estimator="LinearRegression",
    ),
    "hat": ModelSpec(
        "HoeffdingAdaptiveTree", "river StandardScaler | tree.HoeffdingAdaptiveTreeRegressor", _hat,
        has_dist=False, estimator="HoeffdingAdaptiveTreeRegressor",
    ),
    "knn": ModelSpec(
        "KNN", "river StandardScaler | neighbors.KNNRegressor", _knn, has_dist=False,
        estimator="KNNRegressor",
    ),
    "arf": ModelSpec(
        "ARF", "river StandardScaler | forest.ARFRegressor", _arf, has_dist=False,
        estimator="ARFRegressor",
    ),
}

DEFAULT_PEERS = ("blr", "hat", "knn")
