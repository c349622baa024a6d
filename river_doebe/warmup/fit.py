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
from dataclasses import dataclass

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
from river_doebe.warmup import fallback
from river_doebe.warmup.empirical_bayes import member_sets
from river_doebe.warmup.fallback import CONSTANT
from river_doebe.warmup.families import derive_seed, resolve_families

__all__ = ["Standardizer", "fit_ensemble", "fit_members", "unfitted_members"]


@dataclass
class Standardizer:
    """Frozen standardisation of the inputs and the target (fitted on the warm-up window).

    The window's rows hold NaN where a sample lacked a key (``EDOEBE`` asks its schema for NaN
    there). Per input, with ``f`` the fraction of the window's samples that have it:

    - a **dense** input (``f >=`` :data:`river_doebe.warmup.fallback.DENSE_PRESENCE`, 0.99, and
      not constant over its present values: a measurement) is centred and scaled with the mean
      and standard deviation of its present values; a key missing from a sample, in the window
      or later, is imputed at that mean (it standardises to 0), as river's ``StandardScaler``
      leaves a missing key at the scaled 0;
    - a **sparse** input (present in fewer samples, or constant whenever present: an
      indicator, a word count) is scaled by its standard deviation over the window with absent
      counted as 0, and not centred (scikit-learn's ``StandardScaler(with_mean=False)`` for
      sparse data), so that an absent key stays 0, below or apart from its present values, as
      river's sparse encoders (``OneHotEncoder``, ``BagOfWords``, ``TFIDF``) mean it;
    - an input that joins after the warm-up (:meth:`grow`) is sparse by construction (absent
      from every earlier sample): not centred, and scaled by the magnitude of its first non-zero
      value, frozen when the model first learns from one (:meth:`freeze`), so that every sample
      it has learnt keeps its standardised value.

    In every case a missing key standardises to exactly 0. Inputs that take one value over the
    whole window (absent counted as 0) carry no information for hyperparameters that are frozen
    from then on; they are dropped (with a warning), so that values which such a feature takes
    later cannot blow the standardised inputs up. Standardised values are clipped to
    ``[-clip, clip]`` like the paper's code.
    """

    x_mean: np.ndarray
    x_scale: np.ndarray
    keep: np.ndarray
    y_mean: float
    y_scale: float
    clip: float = 1e3
    #: per kept input: whether it is centred (dense) or only scaled (sparse; ``None``: all dense)
    centred: np.ndarray | None = None

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray | None = None, names=None,
            clip: float = 1e3) -> Standardizer:
        """Fit to the window ``X`` (NaN where a sample lacked the input) and, for regression,
        its targets ``y`` (``None``: the target is left as it is, as a classifier's label
        codes)."""
        X = np.asarray(X, dtype=np.float64)
        present = ~np.isnan(X)
        if present.all():
            # every key in every sample (the paper's streams): the statistics of the whole window
            mean, std = _mean_std(X)
            centre, spread = mean, std
            dense = std > CONSTANT * np.abs(mean)
        else:
            mean, std = _mean_std(np.where(present, X, 0.0))  # absent counted as 0
            centre, spread = mean.copy(), std.copy()
            for j in np.flatnonzero(~present.all(axis=0)).tolist():  # over the present values
                values = X[present[:, j], j]
                if values.size:
                    m, s = _mean_std(values[:, None])
                    centre[j], spread[j] = m[0], s[0]
            fraction = present.mean(axis=0)
            # (the fallback's constant, read here at each fit: the threshold benchmark moves it)
            dense = (fraction >= fallback.DENSE_PRESENCE) & (spread > CONSTANT * np.abs(centre))
            centre = np.where(dense, centre, 0.0)
            spread = np.where(dense, spread, std)
        # constant: no spread beyond rounding, relative to the input's own size (any scale)
        keep = dense | (std > CONSTANT * np.abs(mean))
        if not keep.any():
            if X.shape[1] == 0:
                raise ValueError("the warm-up window has no inputs")
            warnings.warn(
                "every input is constant over the warm-up window; the model keeps the first one "
                "and will predict little more than the target's mean",
                RuntimeWarning,
                stacklevel=3,
            )
            keep[0] = True
            spread[0] = 1.0
        elif not keep.all():
            dropped = np.flatnonzero(~keep)
            labels = [str(names[i]) if names is not None else f"x{i}" for i in dropped]
            warnings.warn(
                f"input(s) {labels} are constant over the warm-up window and are ignored from now "
                "on (frozen hyperparameters cannot use them)",
                RuntimeWarning,
                stacklevel=3,
            )
        centred = None if dense[keep].all() else np.array(dense[keep])
        scale = np.where(keep, spread, 1.0)
        if y is None:
            return cls(centre[keep], scale[keep], keep, 0.0, 1.0, clip, centred)
        y_mean, y_std = (float(v[0]) for v in _mean_std(np.asarray(y, dtype=np.float64)[:, None]))
        if not y_std > CONSTANT * abs(y_mean):
            warnings.warn(
                "the target is constant over the warm-up window; its scale is taken as 1",
                RuntimeWarning,
                stacklevel=3,
            )
            y_std = 1.0
        return cls(centre[keep], scale[keep], keep, y_mean, y_std, clip, centred)

    def x(self, X: np.ndarray) -> np.ndarray:
        """Standardise one sample ``(D,)`` or a batch ``(n, D)``; returns only the kept inputs.
        A missing value (NaN) standardises to 0; an input that joined later and whose scale is
        not frozen yet counts as its sign (what its scale, frozen from this value, gives)."""
        Z = (X[..., self.keep] - self.x_mean) / self.x_scale
        Z = np.clip(Z, -self.clip, self.clip, out=Z)
        if self.centred is not None:
            unset = np.isnan(self.x_scale)
            if unset.any():
                Z[..., unset] = np.sign(X[..., self.keep][..., unset])
        missing = np.isnan(Z)
        if missing.any():
            Z[missing] = 0.0
        return Z

    def grow(self, n_new: int) -> None:
        """Take ``n_new`` inputs that joined after the warm-up (last): sparse, not centred,
        their scales unset until :meth:`freeze`."""
        centred = np.ones(self.keep.sum(), dtype=np.bool_) if self.centred is None else self.centred
        self.keep = np.r_[self.keep, np.ones(n_new, dtype=np.bool_)]
        self.x_mean = np.r_[self.x_mean, np.zeros(n_new)]
        self.x_scale = np.r_[self.x_scale, np.full(n_new, np.nan)]
        self.centred = np.r_[centred, np.zeros(n_new, dtype=np.bool_)]

    def freeze(self, X: np.ndarray) -> None:
        """Before learning the sample ``(D,)`` or the rows ``(n, D)`` in order: an input that
        joined later takes as its scale the magnitude of its first non-zero value."""
        if self.centred is None:
            return
        unset = np.flatnonzero(np.isnan(self.x_scale))
        if not unset.size:
            return
        V = np.atleast_2d(X[..., self.keep])[:, unset]
        set_ = (V != 0.0) & ~np.isnan(V)
        for i, j in enumerate(unset.tolist()):
            rows = np.flatnonzero(set_[:, i])
            if rows.size:
                self.x_scale[j] = abs(float(V[rows[0], i]))

    def x_learning(self, X: np.ndarray) -> np.ndarray:
        """:meth:`x` of samples about to be learnt, in order: :meth:`freeze` first."""
        self.freeze(X)
        return self.x(X)

    @property
    def sparse_(self) -> np.ndarray:
        """Per kept input: whether it is sparse (only scaled: absent means 0) rather than dense
        (centred: a missing key means its mean)."""
        if self.centred is None:
            return np.zeros(int(self.keep.sum()), dtype=np.bool_)
        return ~self.centred

    def y(self, y):
        return (y - self.y_mean) / self.y_scale

    def y_back(self, mean, var):
        """A standardised mean and variance (numbers or arrays) back in the units of ``y``."""
        # (not y_scale ** 2, which raises where a product overflows to inf: targets near 1e200)
        return mean * self.y_scale + self.y_mean, var * (self.y_scale * self.y_scale)


def _mean_std(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and (population) standard deviations of ``X (n, D)`` at any scale: each
    column is divided by a power of two near its largest magnitude first (exact), so that
    squares neither overflow (1e200) nor underflow (1e-200)."""
    peak = np.max(np.abs(X), axis=0) if X.shape[0] else np.zeros(X.shape[1])
    _, exp = np.frexp(np.where(peak > 0, peak, 1.0))
    S = np.ldexp(X, -exp)
    return np.ldexp(S.mean(axis=0), exp), np.ldexp(S.std(axis=0), exp)


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
    block) and the E-DOEBE transition matrix, and, with ``replay``, its members have filtered the
    window already (the weights start uniform all the same). ``weighting`` is its weight rule
    (:class:`~river_doebe.engine.weighting.Weighting`; ``None``: model averaging), and
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
    engine = engine_type(twin_members(members, list(levels)),
                         edoebe_transition(len(members), len(levels), delta), weight_floor,
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
