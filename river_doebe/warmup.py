"""The warm-up of the drop-in E-DOEBE: standardise, fit each family by empirical Bayes, sample.

Paper Sec. 4.1-4.2 and Sec. 5 (protocol): the first ``n_warmup`` samples fix a standardisation of
``x`` and ``y`` (their mean and standard deviation), the hyperparameters of every basis family are
fitted on them by type-II maximum likelihood from several starts, each mode is complemented by
draws from its Laplace approximation, every member gets a dynamic twin for each random-walk
level, and the hyperparameters are frozen from then on.
"""

from __future__ import annotations

import math
import time
import warnings
import zlib
from dataclasses import dataclass

import numpy as np

from river_doebe import evidence
from river_doebe._engine import WEIGHT_FLOOR, MemberSpec

__all__ = ["Standardizer", "default_families", "fit_members"]


@dataclass
class Standardizer:
    """Frozen standardisation of the inputs and the target (fitted on the warm-up window).

    Inputs that are constant over the warm-up window carry no information for hyperparameters
    that are frozen from then on; they are dropped (with a warning), so that values which such a
    feature takes later cannot blow the standardised inputs up. Standardised values are clipped
    to ``[-clip, clip]`` like the paper's code.
    """

    x_mean: np.ndarray
    x_scale: np.ndarray
    keep: np.ndarray
    y_mean: float
    y_scale: float
    clip: float = 1e3

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray, names=None, clip: float = 1e3) -> Standardizer:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        mean, std = _mean_std(X)
        # constant: no spread beyond rounding, relative to the input's own size (any scale)
        keep = std > _CONSTANT * np.abs(mean)
        if not keep.any():
            warnings.warn(
                "every input is constant over the warm-up window; the model keeps the first one "
                "and will predict little more than the target's mean",
                RuntimeWarning,
                stacklevel=3,
            )
            keep[0] = True
            std[0] = 1.0
        elif not keep.all():
            dropped = np.flatnonzero(~keep)
            labels = [str(names[i]) if names is not None else f"x{i}" for i in dropped]
            warnings.warn(
                f"input(s) {labels} are constant over the warm-up window and are ignored from now "
                "on (frozen hyperparameters cannot use them)",
                RuntimeWarning,
                stacklevel=3,
            )
        y_mean, y_std = (float(v[0]) for v in _mean_std(y[:, None]))
        if not y_std > _CONSTANT * abs(y_mean):
            warnings.warn(
                "the target is constant over the warm-up window; its scale is taken as 1",
                RuntimeWarning,
                stacklevel=3,
            )
            y_std = 1.0
        scale = np.where(keep, std, 1.0)
        return cls(mean[keep], scale[keep], keep, y_mean, y_std, clip)

    def x(self, X: np.ndarray) -> np.ndarray:
        """Standardise one sample ``(D,)`` or a batch ``(n, D)``; returns only the kept inputs."""
        Z = (X[..., self.keep] - self.x_mean) / self.x_scale
        return np.clip(Z, -self.clip, self.clip, out=Z)

    def y(self, y):
        return (y - self.y_mean) / self.y_scale

    def y_back(self, mean, var):
        """A standardised mean and variance (numbers or arrays) back in the units of ``y``."""
        # (not y_scale ** 2, which raises where a product overflows to inf: targets near 1e200)
        return mean * self.y_scale + self.y_mean, var * (self.y_scale * self.y_scale)


#: a spread below this fraction of a column's mean is rounding: the column is constant
_CONSTANT = 1e-12

#: the power-of-two unit of an input (or target) that has only been 0 so far
_UNSET = np.iinfo(np.int64).min


def _mean_std(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and (population) standard deviations of ``X (n, D)`` at any scale: each
    column is divided by a power of two near its largest magnitude first (exact), so that
    squares neither overflow (1e200) nor underflow (1e-200)."""
    peak = np.max(np.abs(X), axis=0) if X.shape[0] else np.zeros(X.shape[1])
    _, exp = np.frexp(np.where(peak > 0, peak, 1.0))
    S = np.ldexp(X, -exp)
    return np.ldexp(S.mean(axis=0), exp), np.ldexp(S.std(axis=0), exp)


#: the basis families a warm-up can be asked for by name (paper Sec. 5.1, Experiment 1)
FAMILY_NAMES = ("hsgp", "rff", "rbf", "poly", "linear")

#: the paper's Experiment 3 set, what ``EDOEBE()`` uses
DEFAULT_FAMILIES = ("hsgp", "rff", "rbf")


def family_templates(name: str, n_inputs: int, seed: int | None = None) -> list:
    """Basis templates of a named family for ``n_inputs`` inputs, as in the paper's experiments.

    ``"hsgp"``: additive Hilbert-space GP with ``floor(100 / D)`` functions per input;
    ``"rff"``: 50 random Fourier frequencies; ``"rbf"``: an RBF network with 100 centres (all
    three with ARD length scales, one per input, starting at 1); ``"poly"``: additive polynomials
    of degrees 2, 3 and 4 (three templates); ``"linear"``: linear with a bias.
    """
    from river_doebe.basis import (
        AdditivePolynomial,
        HilbertGP,
        Linear,
        RandomFourierFeatures,
        RBFNetwork,
    )

    ones = tuple([1.0] * n_inputs)
    if name == "hsgp":
        return [HilbertGP(n_features=max(100, n_inputs), lengthscale=ones)]
    if name == "rff":
        return [RandomFourierFeatures(n_frequencies=50, lengthscale=ones, seed=seed)]
    if name == "rbf":
        return [RBFNetwork(n_centres=100, lengthscale=ones, seed=seed)]
    if name == "poly":
        return [AdditivePolynomial(degree=d) for d in (2, 3, 4)]
    if name == "linear":
        return [Linear()]
    raise ValueError(f"unknown basis family {name!r}; the names are {', '.join(FAMILY_NAMES)}")


def check_families(families) -> None:
    """Refuse, with a clear message, anything that is not a family name or a basis template."""
    from river_doebe.basis import Basis

    if families is None:
        return
    if isinstance(families, str) or not isinstance(families, list | tuple) or not families:
        raise TypeError(
            "families must be a non-empty list or tuple of family names "
            f"({', '.join(FAMILY_NAMES)}) or basis templates, got {families!r}"
        )
    for f in families:
        if isinstance(f, str):
            if f not in FAMILY_NAMES:
                raise ValueError(
                    f"unknown basis family {f!r}; the names are {', '.join(FAMILY_NAMES)}"
                )
        elif not isinstance(f, Basis):
            raise TypeError(
                f"families are family names or basis templates (e.g. 'rff' or "
                f"RandomFourierFeatures(50)), got {type(f).__name__}; explicit members go in "
                "models=[...]"
            )


def resolve_families(families, n_inputs: int, seed: int | None = None) -> list:
    """The basis templates of ``families`` (names and/or templates; ``None``: the default set)."""
    check_families(families)
    out = []
    for f in DEFAULT_FAMILIES if families is None else families:
        if isinstance(f, str):
            out.extend(family_templates(f, n_inputs, derive_seed(seed, "template", f)))
        else:
            out.append(f)
    return out


def derive_seed(seed: int | None, *keys: str) -> int | None:
    """A seed for one part of a warm-up, from the user's seed and names of that part only.

    Each family's random draws (features, centres, Laplace draws) then do not depend on which
    other families are in the ensemble: ``EDOEBE(seed=s)`` holds exactly the members of
    ``EDOEBE(families=("rbf",), seed=s)``, so a family alone and in the ensemble can be compared
    like for like. ``None`` stays ``None`` (fresh randomness).
    """
    if seed is None:
        return None
    words = [int(seed) % 2**32] + [zlib.crc32(k.encode()) for k in keys]
    return int(np.random.SeedSequence(words).generate_state(1)[0] % (2**31 - 1))


def default_families(n_inputs: int, seed: int | None = None) -> list:
    """The paper's Experiment 3 families: additive HSGP (about 100 features), RFF with 50
    frequencies, and an RBF network with 100 centres, all with ARD length scales."""
    return resolve_families(None, n_inputs, seed)


#: optimiser diagnostics that are routine in a warm-up (a start at its iteration limit, a mode on
#: a bound whose Hessian is repaired): shown with ``verbose``, not raised as warnings
_ROUTINE = ("did not converge", "did not move", "not positive definite")


def _relay(caught, family: str, verbose: bool) -> None:
    for w in caught:
        text = str(w.message)
        if any(r in text for r in _ROUTINE):
            if verbose:
                print(f"[river-doebe] warm-up: {family}: {text}", flush=True)
        else:
            warnings.warn(f"{family}: {text}", w.category, stacklevel=3)


@dataclass
class FittedMember:
    """A member found by the warm-up, before the random-walk twins are made."""

    basis: object
    var_theta: float
    var_eps: float
    family: str
    mode_index: int
    is_mode: bool


def fit_members(
    Z: np.ndarray,
    y: np.ndarray,
    families: list,
    n_samples: int = 5,
    starts=(0.1, 1.0, 10.0),
    seed: int | None = None,
    verbose: bool = False,
    maxiter: int = 200,
) -> list[FittedMember]:
    """Empirical Bayes on ``(Z, y)`` for every family, plus Laplace draws: the static members.

    A family whose every start fails is skipped with a warning; if all families fail, the error
    is raised.
    """
    import copy

    members: list[FittedMember] = []
    errors = []
    seen: dict[str, int] = {}
    for family in families:
        name = type(family).__name__
        seen[name] = seen.get(name, -1) + 1
        fam_seed = derive_seed(seed, "fit", name, str(seen[name]))
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                specs = evidence.build_members(
                    copy.deepcopy(family), Z, y, n_samples=n_samples, starts=starts,
                    seed=fam_seed, maxiter=maxiter,
                )
            _relay(caught, name, verbose)
        except (RuntimeError, np.linalg.LinAlgError, ValueError) as exc:
            warnings.warn(f"warm-up of {name} failed and is skipped: {exc}", RuntimeWarning,
                          stacklevel=2)
            errors.append(exc)
            continue
        for s in specs:
            if not (math.isfinite(s.var_theta) and math.isfinite(s.var_eps)):
                continue
            members.append(
                FittedMember(s.basis, float(s.var_theta), float(s.var_eps), s.family,
                             s.mode_index, s.is_mode)
            )
        if verbose:
            n_modes = len({s.mode_index for s in specs})
            print(
                f"[river-doebe] warm-up: {name}: {n_modes} mode(s), {len(specs)} members "
                f"in {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
    if not members:
        raise RuntimeError(f"the warm-up found no usable member: {errors}")
    return members


def twin_specs(members: list[FittedMember], levels: list[float]) -> list[MemberSpec]:
    """One copy of every member per random-walk level (the last level is the static one)."""
    import copy

    return [
        MemberSpec(copy.deepcopy(m.basis), m.var_theta, m.var_eps, level)
        for level in levels
        for m in members
    ]


class Fallback:
    """What the E-DOEBE predicts with during its warm-up, and the window it keeps.

    A Bayesian linear regression (prior variance 1 on the weights) of the target on the inputs,
    both standardised with the statistics of the samples seen so far, recomputed exactly from
    running moments at every step (so a change of standardisation never leaves the posterior
    stale). Its noise variance is the mean squared standardised one-step error so far (clipped
    to ``[1e-3, 1]``). Predictions are one step ahead and come with a distribution; before two
    samples it predicts the running mean with unit variance in the target's scale.

    The moments are kept in units of a power of two per input (and for the target) near its
    largest magnitude so far, rescaled exactly when that grows, so that inputs of any scale
    (1e-150 or 1e150) neither overflow nor underflow. New inputs can join (:meth:`grow`): the
    past samples count as 0 there, as the input policy says.
    """

    def __init__(self, n_inputs: int):
        self.n = 0
        self.keep_window = True
        self._X: list[np.ndarray] = []
        self._y: list[float] = []
        self._ex = np.full(n_inputs, _UNSET, dtype=np.int64)  # x is kept as x * 2**-ex
        self._ey = _UNSET
        self._mx = np.zeros(n_inputs)
        self._Cxx = np.zeros((n_inputs, n_inputs))
        self._cxy = np.zeros(n_inputs)
        self._my = 0.0
        self._syy = 0.0
        self._sq_err = 0.0
        self._n_err = 0
        self._post = None

    @classmethod
    def from_window(cls, X: np.ndarray, y: np.ndarray) -> Fallback:
        fb = cls(X.shape[1])
        for z, t in zip(X, y):
            fb._add(np.asarray(z, dtype=np.float64), float(t))
        return fb

    def grow(self, n_inputs: int) -> None:
        """Take ``n_inputs`` inputs; the new ones last, 0 in every past sample."""
        k = n_inputs - self._mx.shape[0]
        self._ex = np.r_[self._ex, np.full(k, _UNSET, dtype=np.int64)]
        self._mx = np.r_[self._mx, np.zeros(k)]
        self._cxy = np.r_[self._cxy, np.zeros(k)]
        self._Cxx = np.pad(self._Cxx, ((0, k), (0, k)))
        self._post = None

    def drop_window(self) -> None:
        """Stop keeping the samples (the warm-up was given up: the fallback is the model)."""
        self.keep_window = False
        self._X, self._y = [], []

    def _rescale(self, z: np.ndarray, y: float) -> None:
        """Move the power-of-two units of the moments to ``(z, y)``'s magnitudes (exact): an
        input's unit is set by its first non-zero value and raised when a value exceeds it by
        more than ``2**8``."""
        _, ex = np.frexp(z)
        unset = self._ex == _UNSET
        up = np.where(z == 0, 0, np.where(unset, ex, np.maximum(ex - self._ex - 8, 0)))
        if up.any():
            shift = np.where(unset, 0, up)
            self._ex = np.where(unset & (z != 0), ex, self._ex + shift)
            self._mx = np.ldexp(self._mx, -shift)
            self._cxy = np.ldexp(self._cxy, -shift)
            self._Cxx = np.ldexp(np.ldexp(self._Cxx, -shift[:, None]), -shift[None, :])
            self._post = None
        if y != 0:
            _, ey = math.frexp(y)
            if self._ey == _UNSET:
                self._ey = ey
            elif ey - self._ey > 8:
                dy = ey - self._ey
                self._ey = ey
                self._my = math.ldexp(self._my, -dy)
                self._syy = math.ldexp(self._syy, -2 * dy)
                self._cxy = np.ldexp(self._cxy, -dy)
                self._post = None

    def _units(self) -> tuple[np.ndarray, int]:
        return np.where(self._ex == _UNSET, 0, self._ex), (0 if self._ey == _UNSET else self._ey)

    def _posterior(self):
        if self._post is None:
            n = self.n
            sx = np.sqrt(np.maximum(np.diag(self._Cxx) / n, 0.0))
            sx[~(sx > _CONSTANT * np.abs(self._mx))] = np.inf  # constant: no weight
            sy = math.sqrt(max(self._syy / n, 0.0))
            if not sy > _CONSTANT * abs(self._my):
                sy = 1.0
            ve = min(max(self._sq_err / self._n_err, 1e-3), 1.0) if self._n_err else 1.0
            inv = 1.0 / sx
            A = self._Cxx * np.outer(inv, inv) / ve
            A[np.diag_indices_from(A)] += 1.0
            b = self._cxy * inv / (sy * ve)
            chol = np.linalg.cholesky(A)
            w = np.linalg.solve(A, b)
            self._post = (inv, sy, ve, chol, w)
        return self._post

    def predict(self, z: np.ndarray) -> tuple[float, float]:
        """Predictive mean and variance, in the units of the target."""
        mean, var = self._predict_scaled(z)
        _, ey = self._units()
        # a variance in the target's units may overflow (a target around 1e200): then inf
        return float(np.ldexp(mean, ey)), float(np.ldexp(var, 2 * ey))

    def _predict_scaled(self, z: np.ndarray) -> tuple[float, float]:
        if self.n < 2:
            return self._my, (1.0 if self.n == 0 else 1.0 + self._my**2)
        inv, sy, ve, chol, w = self._posterior()
        u = (np.ldexp(z, -self._units()[0]) - self._mx) * inv
        u = np.clip(u, -1e3, 1e3)
        h = np.linalg.solve(chol, u)
        return self._my + sy * float(u @ w), sy * sy * (float(h @ h) + ve)

    def learn(self, z: np.ndarray, y: float) -> None:
        if self.n >= 2:
            mean, _ = self._predict_scaled(z)
            _, sy, _, _, _ = self._posterior()
            self._sq_err += ((math.ldexp(y, -self._units()[1]) - mean) / sy) ** 2
            self._n_err += 1
        self._add(z.copy(), y)

    def _add(self, z: np.ndarray, y: float) -> None:
        if self.keep_window:
            self._X.append(z)
            self._y.append(y)
        self._rescale(z, y)
        ex, ey = self._units()
        zs, ys = np.ldexp(z, -ex), math.ldexp(y, -ey)
        self.n += 1
        dx = zs - self._mx
        dy = ys - self._my
        self._mx += dx / self.n
        self._my += dy / self.n
        self._Cxx += np.outer(dx, zs - self._mx)
        self._cxy += dx * (ys - self._my)
        self._syy += dy * (ys - self._my)
        self._post = None

    def window(self) -> tuple[np.ndarray, np.ndarray]:
        """The samples kept, as ``(X, y)``; inputs that joined later are 0 in earlier rows."""
        X = np.zeros((len(self._X), self._mx.shape[0]))
        for i, z in enumerate(self._X):
            X[i, : z.shape[0]] = z
        return X, np.asarray(self._y, dtype=np.float64)


def fit_ensemble(
    X: np.ndarray,
    y: np.ndarray,
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
):
    """The whole warm-up on a window ``(X, y)``: returns ``(standardizer, engine, members)``.

    ``engine`` is set up with ``len(levels) * len(members)`` members in blocks by level (the
    last level, 0, is the static block) and the E-DOEBE transition matrix, and, with ``replay``,
    its members have filtered the window already (the weights start uniform all the same).
    """
    from river_doebe._engine import Engine
    from river_doebe.ensemble import edoebe_transition

    t0 = time.perf_counter()
    if X.shape[0] < X.shape[1]:
        warnings.warn(
            f"the warm-up window has {X.shape[0]} samples for {X.shape[1]} inputs; the fitted "
            "hyperparameters will be poorly determined",
            RuntimeWarning,
            stacklevel=3,
        )
    std = Standardizer.fit(X, y, names=names)
    Z = std.x(X)
    Y = std.y(y)
    families = resolve_families(families, Z.shape[1], seed)
    members = fit_members(Z, Y, list(families), n_samples=n_samples, starts=starts, seed=seed,
                          verbose=verbose)
    specs = twin_specs(members, list(levels))
    engine = Engine(specs, edoebe_transition(len(members), len(levels), delta), weight_floor)
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
