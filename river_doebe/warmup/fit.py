"""The warm-up pipeline of an E-DOEBE, the same for regression and classification.

On the window ``(X, y)`` of its first ``n_warmup`` samples (paper Sec. 4.1-4.2 and Sec. 5): freeze
a standardisation of ``x`` (and of a regression target), fit the hyperparameters of every basis
family by type-II maximum likelihood from several starts (:mod:`.empirical_bayes`), complement each
mode with draws from its Laplace approximation, give every member a dynamic twin for each
random-walk level, build the engine of the task with the E-DOEBE switching matrix and filter the
window through its members. A classifier's hyperparameters come from the same fit on its labels
coded -1/+1 (the Gaussian-process "label regression" criterion; the logistic evidence has no
closed form); a window with one class only says nothing about them, and the families keep their
templates' hyperparameters.
"""

from __future__ import annotations

import copy
import math
import time
import warnings

import numpy as np

from river_doebe.engine import (
    WEIGHT_FLOOR,
    Engine,
    LogisticEngine,
    Member,
    edoebe_transition,
    twin_members,
)
from river_doebe.engine.threads import get_num_threads
from river_doebe.warmup.empirical_bayes import member_sets
from river_doebe.warmup.families import derive_seed, resolve_families
from river_doebe.warmup.standardise import Standardizer

__all__ = ["fit_ensemble", "fit_members", "unfitted_members"]


#: optimiser diagnostics that are routine in a warm-up (a start at its iteration limit, a mode on
#: a bound whose Hessian is repaired): shown with ``verbose``, not raised as warnings
_ROUTINE = ("did not converge", "did not move", "not positive definite")


def _relay(notes, family: str, verbose: bool) -> None:
    for text in notes:
        if any(r in text for r in _ROUTINE):
            if verbose:
                print(f"[river-doebe] warm-up: {family}: {text}", flush=True)
        else:
            warnings.warn(f"{family}: {text}", RuntimeWarning, stacklevel=4)


def fit_members(
    Z: np.ndarray,
    y: np.ndarray,
    families: list,
    n_samples: int = 5,
    starts=(0.1, 1.0, 10.0),
    seed: int | None = None,
    verbose: bool = False,
    maxiter: int = 200,
) -> list[Member]:
    """Empirical Bayes on ``(Z, y)`` for every family, plus Laplace draws: the static members.

    The fits of all families run together on the library's threads
    (:func:`river_doebe.get_num_threads`; the members are the same for any number). A family
    whose every start fails is skipped with a warning; if all families fail, the error is raised.
    """
    t0 = time.perf_counter()
    names, seeds, seen = [], [], {}
    for family in families:
        name = type(family).__name__
        seen[name] = seen.get(name, -1) + 1
        names.append(name)
        seeds.append(derive_seed(seed, "fit", name, str(seen[name])))
    sets = member_sets(
        [copy.deepcopy(f) for f in families], Z, y, n_samples=n_samples, starts=starts,
        seeds=seeds, maxiter=maxiter, n_threads=get_num_threads(),
    )
    members: list[Member] = []
    errors = []
    for name, (specs, notes) in zip(names, sets, strict=True):
        _relay(notes, name, verbose)
        if isinstance(specs, Exception):
            warnings.warn(f"warm-up of {name} failed and is skipped: {specs}", RuntimeWarning,
                          stacklevel=2)
            errors.append(specs)
            continue
        members.extend(
            s for s in specs if math.isfinite(s.var_theta) and math.isfinite(s.var_eps)
        )
        if verbose:
            n_modes = len({s.mode_index for s in specs})
            print(f"[river-doebe] warm-up: {name}: {n_modes} mode(s), {len(specs)} members",
                  flush=True)
    if verbose:
        print(f"[river-doebe] warm-up: fits of {len(names)} families in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    if not members:
        raise RuntimeError(f"the warm-up found no usable member: {errors}")
    return members


def unfitted_members(Z: np.ndarray, families: list) -> list[Member]:
    """One member per family with the template's own hyperparameters and ``var_theta = 1``,
    fitted to the inputs only (boundaries, centres): the members of a one-class window."""
    members = []
    for template in families:
        name = type(template).__name__
        try:
            basis = copy.deepcopy(template).fit(Z)
        except (ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
            warnings.warn(f"{name} cannot be set up and is skipped: {exc}", RuntimeWarning,
                          stacklevel=3)
            continue
        members.append(Member(basis, 1.0, math.nan, 0.0, name, 0, True))
    if not members:
        raise RuntimeError("no basis family could be set up on the warm-up window")
    return members


def fit_ensemble(
    X: np.ndarray,
    y: np.ndarray,
    task: str = "regression",
    names=None,
    families=None,
    n_samples: int = 5,
    levels=(1e-3, 0.0),
    delta: float = 1e-2,
    noise_levels=(1.0,),
    weight_floor: float = WEIGHT_FLOOR,
    starts=(0.1, 1.0, 10.0),
    seed: int | None = None,
    replay: bool = True,
    verbose: bool = False,
    weighting=None,
    update: str = "laplace",
):
    """The whole warm-up on a window ``(X, y)``: returns ``(standardizer, engine, members)``.

    ``y`` holds the regression targets, or the label codes 0/1 of a classifier (``task``).
    ``engine`` (an :class:`~river_doebe.engine.Engine`, or a
    :class:`~river_doebe.engine.LogisticEngine` for classification) is set up with
    ``len(levels) * len(members)`` members in blocks by level (the last level, 0, is the static
    block; with ``noise_levels``, multipliers of the fitted noise variances, those blocks once
    per noise level) and the E-DOEBE transition matrix, and, with ``replay``, its members have
    filtered the window already (the weights start uniform all the same). ``weighting`` is its
    weight rule (:class:`~river_doebe.engine.weighting.Weighting`; ``None``: model averaging), and
    ``update`` the classifier's update step (``"laplace"`` or ``"ipl"``; ignored in regression).
    """
    t0 = time.perf_counter()
    classify = task == "classification"
    if X.shape[0] < X.shape[1]:
        warnings.warn(
            f"the warm-up window has {X.shape[0]} samples for {X.shape[1]} inputs; the fitted "
            "hyperparameters will be poorly determined",
            RuntimeWarning,
            stacklevel=3,
        )
    std = Standardizer.fit(X, None if classify else y, names=names)
    Z = std.x(X)
    Y = np.asarray(y, dtype=np.int64) if classify else std.y(y)
    templates = list(resolve_families(families, Z.shape[1], seed))
    if classify and Y.min() == Y.max():
        warnings.warn(
            f"the warm-up window holds one class only (all {len(Y)} samples), which says nothing "
            "about the decision boundary; the families are used with their template "
            "hyperparameters and var_theta = 1",
            RuntimeWarning,
            stacklevel=3,
        )
        members = unfitted_members(Z, templates)
    else:
        target = 2.0 * Y - 1.0 if classify else Y  # label regression on -1/+1 codes
        members = fit_members(Z, target, templates, n_samples=n_samples, starts=starts,
                              seed=seed, verbose=verbose)
    engine_type = LogisticEngine if classify else Engine
    blocks = len(levels) * len(noise_levels)
    engine = engine_type(twin_members(members, list(levels), noise_levels),
                         edoebe_transition(len(members), blocks, delta), weight_floor,
                         weighting, **({"update": update} if classify else {}))
    engine.setup(Z.shape[1])
    if replay:
        # The members' filters learn the window; the weights do not: the hyperparameters were
        # fitted on these very samples, so their predictive densities here are in-sample and
        # would hand the weights to whichever family overfits the window most (an RBF network
        # with its centres on the data), zeroing the others for good.
        engine.replay(Z, Y)
    if verbose:
        print(
            f"[river-doebe] warm-up done: {engine.M} members from {X.shape[0]} samples in "
            f"{time.perf_counter() - t0:.1f} s",
            flush=True,
        )
    return std, engine, members
