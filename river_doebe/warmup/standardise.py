"""The E-DOEBE's standardisation, in one place: between its river face and the model behind it.

An :class:`~river_doebe.EDOEBE` (or :class:`~river_doebe.EDOEBEClassifier`) answers in the units
of its inputs and targets, while its members learn standardised ones. Every array hook of its
river face goes through one :class:`StandardisedModel`: the model behind it (the warm-up
fallback, the fitted engine, or the engine of explicit ``models``) and a scaler, either the
:class:`Standardizer` frozen at the end of the warm-up or :class:`AsGiven` (the fallback keeps
its own running statistics, and explicit members take their inputs as given). The adaptor also
counts the samples the river face learnt, from the model's own count.
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from river_doebe.engine.members import FilterError
from river_doebe.kernels.jit import Rented, kernel
from river_doebe.warmup import fallback
from river_doebe.warmup.fallback import CONSTANT

__all__ = ["AsGiven", "StandardisedModel", "Standardizer", "target_is_constant"]


@kernel(allocates=True, error_model="numpy")
def _standardise_one(x, cols, mean, scale, clip, signs):
    """:meth:`Standardizer.x` of one sample, element by element (the same operations in the
    same order as the array expressions, without their per-call overheads, which cost more than
    the arithmetic of a sample of a few dozen inputs)."""
    n = cols.shape[0]
    out = np.empty(n)
    for k in range(n):
        v = x[cols[k]]
        s = scale[k]
        if signs and s != s:  # a late input whose scale is not frozen yet: its sign
            z = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else (0.0 if v == 0.0 else v))
        else:
            z = (v - mean[k]) / s  # (overflows to inf beyond the scale: clipped below)
            if z < -clip:
                z = -clip
            elif z > clip:
                z = clip
        out[k] = 0.0 if z != z else z  # a missing value (NaN) standardises to 0
    return out



#: about what a fresh install's compile of :func:`_standardise_one` takes (0.35 s,
#: ``benchmarks/results/engine.md``)
STANDARDISE_COMPILE_SECONDS = 0.35
#: one sample's standardisation, by its Python twin (a loop over the inputs: the same bits)
#: until the twin's calls have taken ``STANDARDISE_COMPILE_SECONDS``, then compiled (at once when
#: it is in Numba's on-disk cache; see :class:`river_doebe.kernels.jit.Rented`)
_STANDARDISE = Rented(STANDARDISE_COMPILE_SECONDS, standardise_one=_standardise_one)

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

    In every case a missing key standardises to exactly 0. An input that takes one value over
    the whole window (absent counted as 0) carries no information for the hyperparameters
    fitted on it, and a later value could not be scaled by its spread: it is left out (*idle*,
    with a warning) until a sample about to be learnt gives it another value. It then joins the
    model as an input that joined late does (:meth:`revive`), last, centred at its warm-up
    value and scaled by the magnitude of that first difference (frozen at once): every earlier
    sample, at the warm-up value, standardises to exactly 0, so its growth is exact (see
    :meth:`river_doebe.engine.Engine.grow`). Standardised values are clipped to ``[-clip,
    clip]`` like the paper's code.
    """

    #: per model input: the centre and the scale (NaN: a late input's scale, not frozen yet)
    x_mean: np.ndarray
    x_scale: np.ndarray
    #: per model input, in the model's order: its column of the input schema
    cols: np.ndarray
    y_mean: float
    y_scale: float
    clip: float = 1e3
    #: per model input: whether it is centred (dense) or only scaled (sparse; ``None``: all dense)
    centred: np.ndarray | None = None
    #: the schema's columns left out as constant over the window, and their value there
    idle: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    idle_value: np.ndarray = field(default_factory=lambda: np.zeros(0))

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
            dense = _varies(mean, std)
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
            dense = (fraction >= fallback.DENSE_PRESENCE) & _varies(centre, spread)
            centre = np.where(dense, centre, 0.0)
            spread = np.where(dense, spread, std)
        # constant: no spread beyond rounding, relative to the input's own size (any scale)
        keep = dense | _varies(mean, std)
        if not keep.any():
            if X.shape[1] == 0:
                raise ValueError("the warm-up window has no inputs")
            warnings.warn(
                "every input is constant over the warm-up window; the model keeps the first one "
                "and predicts little more than the target's mean until another one varies",
                RuntimeWarning,
                stacklevel=3,
            )
            keep[0] = True
            spread[0] = 1.0
        elif not keep.all():
            dropped = np.flatnonzero(~keep)
            labels = [str(names[i]) if names is not None else f"x{i}" for i in dropped]
            warnings.warn(
                f"input(s) {labels} are constant over the warm-up window: left out until a "
                "sample learnt gives them another value, then they join the model as a late "
                "input does",
                RuntimeWarning,
                stacklevel=3,
            )
        centred = None if dense[keep].all() else np.array(dense[keep])
        scale = np.where(keep, spread, 1.0)
        cols = np.flatnonzero(keep)
        idle = np.flatnonzero(~keep)
        idle_value = mean[idle].copy()
        if y is None:
            return cls(centre[keep], scale[keep], cols, 0.0, 1.0, clip, centred, idle,
                       idle_value)
        y_mean, y_std = (float(v[0]) for v in _mean_std(np.asarray(y, dtype=np.float64)[:, None]))
        if not _varies(y_mean, y_std):
            warnings.warn(
                "the target is constant over the warm-up window; its scale is taken as 1",
                RuntimeWarning,
                stacklevel=3,
            )
            y_std = 1.0
        return cls(centre[keep], scale[keep], cols, y_mean, y_std, clip, centred, idle,
                   idle_value)

    def x(self, X: np.ndarray) -> np.ndarray:
        """Standardise one sample ``(D,)`` or a batch ``(n, D)`` (the schema's columns); returns
        the model's inputs. A missing value (NaN) standardises to 0; an input that joined later
        and whose scale is not frozen yet counts as its sign (what its scale, frozen from this
        value, gives)."""
        if X.ndim == 1:
            return _STANDARDISE.standardise_one(X, self.cols, self.x_mean, self.x_scale,
                                                float(self.clip), self.centred is not None)
        # a value far beyond its scale (a late input whose first value was subnormal, then 1)
        # may overflow to inf here: the clip below is what bounds it, so that is not an error
        with np.errstate(over="ignore"):
            Z = (X[..., self.cols] - self.x_mean) / self.x_scale
        Z = np.clip(Z, -self.clip, self.clip, out=Z)
        if self.centred is not None:
            unset = np.isnan(self.x_scale)
            if unset.any():
                Z[..., unset] = np.sign(X[..., self.cols][..., unset])
        missing = np.isnan(Z)
        if missing.any():
            Z[missing] = 0.0
        return Z

    @property
    def n_columns(self) -> int:
        """How many columns the input schema has (the model's inputs and the idle ones)."""
        return len(self.cols) + len(self.idle)

    def grow(self, n_new: int) -> None:
        """Take ``n_new`` inputs that joined the schema after the warm-up (last): sparse, not
        centred, their scales unset until :meth:`freeze`."""
        n_cols = self.n_columns
        self._append(np.arange(n_cols, n_cols + n_new), np.zeros(n_new), np.full(n_new, np.nan),
                     np.zeros(n_new, dtype=np.bool_))

    def _append(self, cols, mean, scale, centred) -> None:
        """Append model inputs (schema columns ``cols``, centres, scales, centred flags)."""
        was = np.ones(len(self.cols), dtype=np.bool_) if self.centred is None else self.centred
        self.cols = np.r_[self.cols, np.asarray(cols, dtype=np.int64)]
        self.x_mean = np.r_[self.x_mean, mean]
        self.x_scale = np.r_[self.x_scale, scale]
        self.centred = np.r_[was, centred]

    def revives(self, x) -> bool:
        """Whether learning the sample ``x`` (its values in schema order) would bring an idle
        input back (:meth:`revive`)."""
        return bool(self.idle.size) and bool(self._differing(x))

    def _differing(self, x) -> list[tuple[int, int, float]]:
        """The idle inputs whose value in ``x`` differs from their warm-up value beyond
        rounding (the window's test of a constant): ``(position in idle, column, value)``."""
        out = []
        for i, (j, c) in enumerate(zip(self.idle.tolist(), self.idle_value.tolist(),
                                       strict=True)):
            v = float(x[j])
            if v == v and _varies(c, abs(v - c)):
                out.append((i, j, v))
        return out

    def revive(self, x) -> int:
        """Before learning the sample ``x`` (its values in schema order): the idle inputs whose
        value in it differs from their warm-up value join the model's inputs, last (centred at
        that value, scaled by the magnitude of the difference); returns how many joined (the
        model grows by as many)."""
        back = self._differing(x) if self.idle.size else []
        if not back:
            return 0
        centre = self.idle_value[[i for i, _, _ in back]]
        scale = np.abs(np.array([v for _, _, v in back]) - centre)
        # (an input idle at 0, a flag or a count, stays sparse: centred at 0 either way)
        self._append([j for _, j, _ in back], centre, scale, centre != 0.0)
        stay = np.ones(len(self.idle), dtype=np.bool_)
        stay[[i for i, _, _ in back]] = False
        self.idle, self.idle_value = self.idle[stay], self.idle_value[stay]
        return len(back)

    def freeze(self, X: np.ndarray) -> None:
        """Before learning the sample ``(D,)`` or the rows ``(n, D)`` in order: an input that
        joined later takes as its scale the magnitude of its first non-zero value."""
        if self.centred is None:
            return
        unset = np.flatnonzero(np.isnan(self.x_scale))
        if not unset.size:
            return
        V = np.atleast_2d(X[..., self.cols])[:, unset]
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
        """Per model input: whether it is sparse (only scaled: absent means 0) rather than dense
        (centred: a missing key means its mean)."""
        if self.centred is None:
            return np.zeros(len(self.cols), dtype=np.bool_)
        return ~self.centred

    def y(self, y):
        return (y - self.y_mean) / self.y_scale

    def y_back(self, mean, var):
        """A standardised mean and variance (numbers or arrays) back in the units of ``y``."""
        # (not y_scale ** 2, which raises where a product overflows to inf: targets near 1e200)
        return mean * self.y_scale + self.y_mean, var * (self.y_scale * self.y_scale)

    def y_affine(self) -> tuple[float, float]:
        """``(scale, shift)``: :meth:`y_back` maps a mean ``m`` to ``m * scale + shift`` and a
        variance ``v`` to ``v * (scale * scale)``."""
        return self.y_scale, self.y_mean

    def log_density_back(self, log_p) -> float:
        """The log density of a standardised target as the log density of ``y`` (the change of
        variables: minus the log of the scale)."""
        return float(log_p - math.log(self.y_scale))


def _varies(mean, std):
    """Whether values of this mean and (population) standard deviation vary beyond rounding,
    relative to their own size (any scale)."""
    return std > CONSTANT * np.abs(mean)


def target_is_constant(y: np.ndarray) -> bool:
    """Whether the targets ``y`` take one value (up to rounding): what :meth:`Standardizer.fit`
    would scale by 1."""
    mean, std = _mean_std(np.asarray(y, dtype=np.float64)[:, None])
    return not bool(_varies(mean[0], std[0]))


def _mean_std(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and (population) standard deviations of ``X (n, D)`` at any scale: each
    column is divided by a power of two near its largest magnitude first (exact), so that
    squares neither overflow (1e200) nor underflow (1e-200)."""
    peak = np.max(np.abs(X), axis=0) if X.shape[0] else np.zeros(X.shape[1])
    _, exp = np.frexp(np.where(peak > 0, peak, 1.0))
    S = np.ldexp(X, -exp)
    return np.ldexp(S.mean(axis=0), exp), np.ldexp(S.std(axis=0), exp)


class AsGiven:
    """The scaler of a model that takes the inputs and targets as given: every map is the
    identity, and returns its argument itself (explicit ``models``, and the warm-up fallback,
    which standardises with its own running statistics)."""

    def x(self, X: np.ndarray) -> np.ndarray:
        return X

    def x_learning(self, X: np.ndarray) -> np.ndarray:
        return X

    def grow(self, n_new: int) -> None:
        """New inputs are taken as given too."""

    def revive(self, x) -> int:
        """No input is ever left out."""
        return 0

    def revives(self, x) -> bool:
        return False

    def y(self, y):
        return y

    def y_back(self, mean, var):
        return mean, var

    def log_density_back(self, log_p):
        return log_p

    def y_affine(self) -> tuple[float, float]:
        return 1.0, 0.0


class StandardisedModel:
    """A model behind a scaler: what the E-DOEBE's river face talks to, in the units of its
    inputs and targets.

    Inputs are standardised on the way in (:meth:`Standardizer.x_learning` for samples that are
    learnt, which freezes the scale of an input that joined late), a regression target too, and
    means, variances and log densities are mapped back on the way out. A classifier's label codes
    are never transformed.

    Parameters
    ----------
    model
        An :class:`~river_doebe.engine.Engine` (or :class:`~river_doebe.engine.LogisticEngine`),
        or the warm-up :class:`~river_doebe.warmup.Fallback`: both take arrays in the schema's
        order through the same methods.
    scaler
        A :class:`Standardizer` or :class:`AsGiven`.
    regression
        Whether the targets are real numbers (standardised) rather than label codes.
    n_before
        How many samples the river face learnt before this model took over (the warm-up's, when
        the fitted engine replaces the fallback).
    """

    def __init__(self, model, scaler: Standardizer | AsGiven, regression: bool,
                 n_before: int = 0):
        self.model = model
        self.scaler = scaler
        self.regression = regression
        # the model's own count, less what it learnt that the river face did not (a replay)
        self._offset = n_before - model.n_updates

    @property
    def n_updates(self) -> int:
        """How many samples the river face has learnt (a replay does not count)."""
        return self._offset + self.model.n_updates

    # ------------------------------------------------------------------ both tasks
    def revives(self, z) -> bool:
        """Whether learning ``z`` (values in schema order) would first bring an input the
        warm-up left out back (:meth:`Standardizer.revive`): such a sample takes the per-sample
        path, and the estimator keeps a copy to restore if the sample is then refused."""
        return self.scaler.revives(z) and self.model.can_grow

    def learn(self, z: np.ndarray, target) -> None:
        if self.revives(z):
            self._learn_reviving(z, target)
            return
        scaler = self.scaler
        self.model.learn(scaler.x_learning(z), scaler.y(target) if self.regression else target)

    def _learn_reviving(self, z: np.ndarray, target) -> None:
        """:meth:`learn` of a sample that brings inputs back: the model grows by them first,
        and if the sample is then refused, the model and the scaler are put back as they were
        (in place: the estimator holds the model too). Once an input: a copy is affordable."""
        model, scaler = self.model, self.scaler
        saved = copy.deepcopy((model.__dict__, scaler.__dict__))
        try:
            model.grow(model.n_inputs + scaler.revive(z))
            model.learn(scaler.x_learning(z), scaler.y(target) if self.regression else target)
        except FilterError:
            for obj, state in zip((model, scaler), saved, strict=True):
                obj.__dict__.clear()
                obj.__dict__.update(state)
            raise

    def learn_block(self, Z: np.ndarray, targets: np.ndarray, keep: bool):
        """The model's block on ``(Z, targets)``; a regressor's ``(means, variances, extra)`` in
        the target's units."""
        scaler = self.scaler
        Z = scaler.x_learning(Z)
        if not self.regression:
            return self.model.learn_block(Z, targets, keep)
        try:
            return self._in_units(self.model.learn_block(Z, scaler.y(targets), keep))
        except FilterError as err:
            err.learnt = self._in_units(err.learnt)  # (the rows learnt before the refused one)
            raise

    def _in_units(self, out: tuple) -> tuple:
        """A regressor's block outputs in the target's units."""
        a, b, extra = out
        scaler = self.scaler
        if extra is not None:
            log_prior, means, variances = extra
            extra = (log_prior, *scaler.y_back(means, variances))
        return (*scaler.y_back(a, b), extra)

    def replay(self, Z: np.ndarray, targets: np.ndarray) -> None:
        """Filter ``(Z, targets)`` through the members (see
        :meth:`river_doebe.engine.Engine.replay`); not counted among the samples learnt."""
        before = self.model.n_updates
        try:
            self.model.replay(self.scaler.x_learning(Z),
                              self.scaler.y(targets) if self.regression else targets)
        finally:
            self._offset -= self.model.n_updates - before

    def grow(self, n_new: int) -> None:
        """``n_new`` inputs joined the schema (last)."""
        self.scaler.grow(n_new)
        self.model.grow(self.model.n_inputs + n_new)

    # ------------------------------------------------------------------ regression
    def predict(self, z: np.ndarray) -> tuple[float, float]:
        return self.scaler.y_back(*self.model.predict(self.scaler.x(z)))

    def mixture(self, z: np.ndarray):
        w, means, variances, mean, var = self.model.mixture(self.scaler.x(z))
        return (w, *self.scaler.y_back(means, variances), *self.scaler.y_back(mean, var))

    def predictive(self, z: np.ndarray):
        """The engine's :meth:`~river_doebe.engine.Engine.predictive` with the mean and
        variance in the units of ``y``, and the ``(scale, shift)`` that maps its members'
        standardised means and variances there (:meth:`Standardizer.y_affine`); ``None`` for a
        model that has no such view (the warm-up's fallback)."""
        view = getattr(self.model, "predictive", None)
        if view is None:
            return None
        mean, var, log_w, means, variances = view(self.scaler.x(z))
        return (*self.scaler.y_back(mean, var), log_w, means, variances,
                *self.scaler.y_affine())

    def log_density(self, z: np.ndarray, y: float) -> float:
        return self.scaler.log_density_back(self.model.log_density(self.scaler.x(z),
                                                                   self.scaler.y(y)))

    def member_predictions(self, z: np.ndarray):
        mean, var, w = self.model.member_predictions(self.scaler.x(z))
        return (*self.scaler.y_back(mean, var), w)

    # ------------------------------------------------------------------ classification
    def predict_proba(self, z: np.ndarray) -> tuple[float, float]:
        return self.model.predict_proba(self.scaler.x(z))

    def member_probas(self, z: np.ndarray):
        return self.model.member_probas(self.scaler.x(z))

    def flip(self) -> None:
        self.model.flip()
