"""The E-DOEBE (paper Sec. 4.2): an ensemble of static and dynamic twins that warms itself up.

:class:`BaseEDOEBE` holds everything the regressor and the classifier share: the fifteen
parameters and their checks, the blocks of random-walk levels and their switching matrix, the
warm-up (fallback, window, the one pipeline of :func:`river_doebe.warmup.fit_ensemble`, a window
that fails), ``describe``, ``finish_warmup`` and ``from_batch``. :class:`EDOEBE` and
:class:`EDOEBEClassifier` add their task's face: the regressor standardises its target and
answers in its units, the classifier codes its labels and takes one more parameter, its members'
update step (``update``).
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from river import base

from river_doebe._checks import (
    check_bool,
    check_int,
    check_positive,
    check_probability,
    check_random_walk,
    check_seed,
    check_starts,
    check_update,
    check_weight_floor,
    check_weighting,
)
from river_doebe._schema import Schema, check_frame, check_targets, column_values
from river_doebe.base import ArrayClassifier, ArrayRegressor
from river_doebe.engine import (
    WEIGHT_FLOOR,
    FilterError,
    LogisticEngine,
    Member,
    edoebe_transition,
    twin_members,
)
from river_doebe.engine.weighting import STACKING_RATE
from river_doebe.ensemble import BaseEnsemble, check_models, member_records
from river_doebe.learner import DOBE, DOBEClassifier
from river_doebe.warmup.fallback import Fallback
from river_doebe.warmup.families import check_families
from river_doebe.warmup.standardise import (
    AsGiven,
    StandardisedModel,
    Standardizer,
    target_is_constant,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BaseEDOEBE", "EDOEBE", "EDOEBEClassifier"]


def _batch(X, feature_names) -> tuple[np.ndarray, list]:
    """A history for ``from_batch``: ``X`` as a float64 ``(n, D)`` array and the feature names
    (a DataFrame's columns, else ``feature_names``, else ``x0``, ``x1``, ...)."""
    columns = getattr(X, "columns", None)
    names: list | None
    if columns is not None:
        check_frame(X)
        if feature_names is not None:
            raise ValueError("X is a DataFrame: its columns name the features, not feature_names")
        names = list(columns)
        X = np.column_stack([column_values(X, c) for c in columns]) if len(columns) else X
    else:
        names = None if feature_names is None else list(feature_names)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"X must be a 2-D array (n, D) with at least one row, got {X.shape}")
    if names is None:
        names = [f"x{i}" for i in range(X.shape[1])]
    if len(names) != X.shape[1]:
        raise ValueError(
            f"feature_names has {len(names)} names for the {X.shape[1]} columns of X"
        )
    Schema(names)  # refuses duplicates
    return X, names


def _own_recalibration(model):
    """The online recalibration of ``EDOEBE(recalibrate=True)``: the state and the methods of
    ``river_doebe.conf.Recalibrated(model, gate=True)``, which the model calls itself (imported
    here, when a model is made: it loads river's ``proba``)."""
    from river_doebe.conf.recalibrated import Recalibrated

    recal = Recalibrated(model, gate=True)
    # the model asks it for its update and its maps: its reference to the model goes, so that
    # the model holds no cycle (a copy of the model's state would hold a second model)
    recal.regressor = None
    recal._use_map(False)  # a new model warms up first: the warm-up's map is in use
    return recal


def _with_point(recalibrated, mixture):
    """The recalibration of ``mixture`` carrying the model's point prediction, the mixture's
    mean, as ``point`` (its ``mu`` is its own mean): what the package's metrics score a point
    prediction from (:func:`river_doebe.metrics._point`). (A point mass is not mapped: it is
    returned as it is.)"""
    if recalibrated is not mixture:
        recalibrated.point = mixture.mu
    return recalibrated


def _same(value, default) -> bool:
    """Whether a parameter is at its default (a sequence compared item by item, whatever its
    type: a list or an array of the default's values is the default)."""
    if isinstance(default, tuple) and not isinstance(value, str | bytes):
        try:
            return tuple(np.ravel(value).tolist()) == default
        except (TypeError, ValueError):
            return False
    if default is None:
        return value is None
    return not isinstance(value, bool) and isinstance(value, numbers.Real) and value == default


def check_edoebe_params(model, kind: type, name: str) -> None:
    """The checks an E-DOEBE (regressor or classifier) makes of its parameters."""
    check_families(model.families)
    check_int("n_warmup", model.n_warmup, 2)
    check_int("n_samples", model.n_samples, 1)
    if model.models is not None:
        check_models(model.models, kind, name)
        # the warm-up's parameters do nothing with explicit members: set, they say the caller
        # expects a warm-up that will not run
        defaults = inspect.signature(type(model).__init__).parameters
        unused = [k for k in ("families", "n_warmup", "n_samples", "starts")
                  if k in defaults and not _same(getattr(model, k), defaults[k].default)]
        if unused:
            raise ValueError(
                f"{', '.join(unused)} {'go' if len(unused) > 1 else 'goes'} with the warm-up, "
                "which explicit models skip: leave "
                f"{'them' if len(unused) > 1 else 'it'} out, or leave out models to have the "
                "warm-up fit the members"
            )
    rw = model.rw_variances
    if isinstance(rw, str | bytes) or not isinstance(rw, list | tuple | np.ndarray):
        raise TypeError(f"rw_variances must be a tuple of positive numbers, got {rw!r}")
    for v in rw:
        check_positive("each of rw_variances", v)
        # the warm-up fits var_theta up to 1e2 (explicit members have their own)
        top = 1e2 if model.models is None else max(float(m.var_theta) for m in model.models)
        check_random_walk(v, top, "each of rw_variances")
    check_bool("static", model.static)
    if not model.static and len(rw) == 0:
        raise ValueError("no members: give rw_variances, or keep the static members")
    check_probability("delta", model.delta)
    edoebe_transition(1, model._n_blocks(), float(model.delta))
    check_seed(model.seed)
    check_weight_floor(model.weight_floor)
    check_weighting(model.weighting, model.stacking_rate, model.share)
    check_starts(model.starts)
    check_bool("replay", model.replay)
    check_bool("verbose", model.verbose)


class BaseEDOEBE(BaseEnsemble):
    """The E-DOEBE of either task (see the module's docstring); ``task`` names it, and the
    subclass gives the learner type of explicit ``models``."""

    task = "regression"
    _learner_type: type = DOBE
    #: the outlier gate of the engine (:attr:`river_doebe.engine.Engine.gate`): the regressor's
    #: parameter; a classifier has none
    outlier_gate: float | None = None

    def __init__(
        self,
        families: list | None = None,
        n_warmup: int = 1000,
        n_samples: int = 5,
        rw_variances: tuple = (1e-3,),
        delta: float = 1e-2,
        seed: int | None = None,
        models: list | None = None,
        weight_floor: float = WEIGHT_FLOOR,
        starts: tuple = (0.1, 1.0, 10.0),
        replay: bool = True,
        verbose: bool = False,
        static: bool = True,
        weighting: str = "bma",
        stacking_rate: float = STACKING_RATE,
        share: float = 0.0,
    ):
        self.families = families
        self.n_warmup = n_warmup
        self.n_samples = n_samples
        self.rw_variances = rw_variances
        self.delta = delta
        self.seed = seed
        self.models = models
        self.weight_floor = weight_floor
        self.starts = starts
        self.replay = replay
        self.verbose = verbose
        self.static = static
        self.weighting = weighting
        self.stacking_rate = stacking_rate
        self.share = share
        learner = self._learner_type
        check_edoebe_params(self, learner, learner.__name__)
        # a missing key: NaN, for the standardisation to resolve, or 0 with explicit members
        self._fill = math.nan if models is None else 0.0
        self._warm: Fallback | None = None
        self._adaptor: StandardisedModel | None = None

    def __setstate__(self, state: dict) -> None:
        # a model pickled before the standardisation adaptor: its engine or fallback sat beside
        # its frozen standardisation (``_std``) and its own sample count (``_n_seen``)
        if "_adaptor" not in state:
            state = dict(state)
            std = state.pop("_std", None)
            n_seen = state.pop("_n_seen", 0)
            state["_fill"] = math.nan if state.get("models") is None else 0.0
            model = state.get("_engine")
            if model is None:
                model = state.get("_warm")
            state["_adaptor"] = None if model is None else StandardisedModel(
                model, AsGiven() if std is None else std, self.task == "regression", n_seen
            )
        self.__dict__.update(state)

    # ------------------------------------------------------------------ the member blocks
    def _levels(self) -> list[float]:
        """The random-walk variance of each block of members: the dynamic levels, then 0 for the
        static block (when ``static``)."""
        return [float(v) for v in self.rw_variances] + ([0.0] if self.static else [])

    def _noise_levels(self) -> tuple[float, ...]:
        """The multipliers of the members' noise variances, one block of twins each (a
        classifier's members have none: one block)."""
        return (1.0,)

    def _n_blocks(self) -> int:
        return len(self._levels()) * len(self._noise_levels())

    def _transition(self, n_members: int):
        blocks = self._n_blocks()
        return edoebe_transition(n_members // blocks, blocks, float(self.delta))

    def _members_for(self, n_inputs: int) -> list[Member]:
        """Explicit models: for each random-walk level a copy of every member, then the static
        block (and those blocks once per noise level)."""
        return twin_members(member_records(self.models, n_inputs), self._levels(),
                            self._noise_levels())

    def _n_members_before(self) -> int:
        return 1 if self.models is None else len(self.models) * self._n_blocks()

    def _history_targets(self, y: Any, n: int) -> np.ndarray:  # pragma: no cover - per task
        """The targets of a history for :meth:`from_batch` (a classifier: its label codes)."""
        raise NotImplementedError

    @property
    def members(self) -> list[Member]:
        """The members (basis, variances, random walk, and where the warm-up found them), in
        weight order: the dynamic twins first, the static members last (with several
        ``noise_levels``, those blocks once per level, in its order)."""
        if self._engine is None and self.models is None:
            raise RuntimeError("the ensemble has no members before its warm-up ends")
        return super().members

    def _member_predictions(self, x: dict):
        """The members' views for ``x`` (an error while the warm-up has no members)."""
        z = self._predict_array(x)
        if self._engine is None and self.models is None:
            raise RuntimeError("the ensemble has no members before its warm-up ends")
        if z is None:  # explicit members, no schema yet: ask a fresh copy
            return self._ghost(x.keys()).member_predictions(x)
        return self._member_view(z)

    # ------------------------------------------------------------------ the input schema
    def _grow(self, n_inputs: int) -> None:
        assert self._adaptor is not None and self._schema is not None  # (a schema that exists)
        # (the engine may have fewer inputs than the schema: those the warm-up dropped)
        self._adaptor.grow(n_inputs - len(self._schema))

    def _revives(self, z: Any) -> bool:
        return self._adaptor is not None and self._adaptor.revives(z)

    # ------------------------------------------------------------------ the warm-up
    @property
    def _model(self) -> StandardisedModel | None:
        return self._adaptor

    @property
    def standardizer_(self) -> Standardizer | None:
        """The standardisation frozen at the end of the warm-up
        (:class:`river_doebe.warmup.standardise.Standardizer`), or ``None`` (before it, or with
        explicit ``models``)."""
        scaler = None if self._adaptor is None else self._adaptor.scaler
        return scaler if isinstance(scaler, Standardizer) else None

    @property
    def is_warm(self) -> bool:
        """Whether the warm-up is over (always true with explicit ``models`` once the first
        sample has been seen)."""
        return self._engine is not None

    def _on_schema(self, schema) -> None:
        regression = self.task == "regression"
        if self.models is not None:
            super()._on_schema(schema)
            assert self._engine is not None  # (built by the base for the explicit members)
            self._engine.gate = self.outlier_gate
            self._adaptor = StandardisedModel(self._engine, AsGiven(), regression)
            return
        self._warm = Fallback(len(schema), self.task)
        self._adaptor = StandardisedModel(self._warm, AsGiven(), regression)

    def _learn_z(self, z: np.ndarray, target: Any) -> None:
        assert self._adaptor is not None  # (set up with the schema)
        self._adaptor.learn(z, target)
        warm = self._warm
        # (a window whose samples had no feature at all has nothing to fit: it waits for one)
        if warm is not None and warm.keep_window and warm.n_window >= self.n_warmup and z.shape[0]:
            targets = warm.window()[1] if self.task == "regression" else None
            if targets is not None and target_is_constant(targets):
                self._wait_for_a_varying_target(warm, float(targets[0]))
            else:
                self._end_warmup()

    def _wait_for_a_varying_target(self, warm: Fallback, value: float) -> None:
        """A window whose target never varied has no noise or prior variance to fit (the
        evidence would push both to their bounds, leaving members that barely move once the
        target varies): the window empties and keeps samples again from the first target that
        differs, the fallback goes on predicting, and the warm-up ends on the first full window
        whose target varies (``value``: the window's one target). Said once."""
        if not warm.restarts:
            warnings.warn(
                f"{type(self).__name__}: the target was constant ({value:g}) over the "
                f"{warm.n_window} samples of the warm-up window; the warm-up goes on until "
                "it varies (the fallback predicts meanwhile)",
                RuntimeWarning,
                stacklevel=4,
            )
        warm.restart_window(value)

    def _end_warmup(self) -> None:
        """Fit the members; if that fails on the window's data, say so once and go on with the
        fallback, which then is the model (it keeps learning, and no longer keeps samples)."""
        try:
            self._finish_warmup()
        except (RuntimeError, ValueError, ArithmeticError, np.linalg.LinAlgError) as err:
            warnings.warn(
                f"{type(self).__name__}: the warm-up failed on its window ({err}); the model "
                "goes on with its warm-up fallback, which keeps learning",
                RuntimeWarning,
                stacklevel=4,
            )
            assert self._warm is not None  # (the warm-up that failed)
            self._warm.drop_window()

    def _finish_warmup(self) -> None:
        from river_doebe.warmup.fit import fit_ensemble  # scipy's optimiser: only now

        warm = self._warm
        assert warm is not None  # (the warm-up that ends)
        X, targets = warm.window()
        names = self._schema.names if self._schema is not None else None
        std, engine, _ = fit_ensemble(
            X, targets, task=self.task, names=names, families=self.families,
            n_samples=int(self.n_samples), levels=self._levels(), delta=float(self.delta),
            noise_levels=self._noise_levels(),
            weight_floor=float(self.weight_floor), starts=tuple(self.starts), seed=self.seed,
            replay=bool(self.replay), verbose=bool(self.verbose), weighting=self._weighting(),
            **self._likelihood_options(),
        )
        engine.gate = self.outlier_gate  # (after the replay of the window: it learns every row)
        self._engine = engine
        self._adaptor = StandardisedModel(engine, std, self.task == "regression",
                                          n_before=warm.n)
        self._warm_log_evidence = warm.log_evidence
        self._warm = None

    def finish_warmup(self) -> Self:
        """End the warm-up now, on the samples of its window so far (at least 2), instead of
        at ``n_warmup``. Useful when a stream is shorter than the window."""
        if self._engine is not None:
            return self
        if self._warm is None or self._warm.n_window < 2:
            restarted = self._warm is not None and self._warm.restarts
            raise RuntimeError(
                "the warm-up needs at least 2 samples in its window"
                + (" (it restarted: the target was constant over it)" if restarted else ""))
        if not self._warm.keep_window:
            raise RuntimeError("the warm-up failed already; the model is its fallback")
        warnings.warn(
            f"warm-up ended early on {self._warm.n_window} samples instead of {self.n_warmup}",
            RuntimeWarning,
            stacklevel=2,
        )
        self._finish_warmup()
        return self

    _warm_log_evidence = 0.0

    @property
    def log_evidence_(self) -> float:
        """Sum of the log densities (probabilities) that the model gave to the targets it
        learnt, before learning each: the fallback's during the warm-up, the ensemble's after
        (the replay of the window through the members does not count)."""
        if self._engine is None:
            return 0.0 if self._warm is None else float(self._warm.log_evidence)
        return float(self._warm_log_evidence + self._engine.log_evidence)

    def describe(self) -> list[dict]:
        """One dict per member: family, random-walk variance, variances, hyperparameters, mode,
        and current weight (a classifier has no noise variance: none is reported)."""
        if self._engine is None:
            raise RuntimeError("the ensemble has no members before its warm-up ends")
        out = []
        for m, w in zip(self._engine.members, self._engine.weights, strict=True):
            row = {
                "family": type(m.basis).__name__,
                "var_rw": m.var_rw,
                "dynamic": m.var_rw > 0,
                "var_theta": m.var_theta,
                "var_eps": m.var_eps,
                "hyper": dict(zip(m.basis.hyper_names(), m.basis.get_hyper().tolist())),
                "mode_index": m.mode_index,
                "is_mode": m.is_mode,
                "weight": float(w),
            }
            if self.task == "classification":
                del row["var_eps"]
            out.append(row)
        return out

    # ------------------------------------------------------------------ from a history
    @classmethod
    def from_batch(cls, X: pd.DataFrame | np.ndarray, y: pd.Series | np.ndarray | list,
                   feature_names: list | None = None, **params: Any) -> Self:
        """Warm an E-DOEBE up on a history ``X (n, D)``, ``y (n,)`` and return it, ready to
        stream.

        The features are named by ``X``'s columns when it is a DataFrame, else by
        ``feature_names`` (default ``x0``, ``x1``, ...); the dicts of the stream must use those
        names. ``params`` are the constructor's (``models`` excluded). The members are fitted on
        the first ``n_warmup`` rows (by default all of them); the rest are learnt as a stream.
        A history whose target never varied has nothing to fit: the model is returned still
        warming up, as a stream of those rows would leave it (see the class docstring).
        """
        if params.get("models") is not None:
            raise ValueError("from_batch warms a model up; explicit models need no warm-up")
        X, names = _batch(X, feature_names)
        n = X.shape[0]
        if n < 2:
            raise ValueError("from_batch needs at least 2 rows")
        if not np.isfinite(X).all():
            raise ValueError("X must be finite")
        model = cls(**{"n_warmup": n, **params})
        targets = model._history_targets(y, n)
        model._schema = Schema(names)
        Z = X[:, [names.index(c) for c in model._schema.names]]
        w = min(int(model.n_warmup), n)
        model._warm = Fallback.from_window(Z[:w], targets[:w], cls.task)
        if cls.task == "regression" and target_is_constant(targets[:w]):
            # nothing to fit, as on a stream: the fallback predicts and the window starts again
            # at the first target that differs
            model._adaptor = StandardisedModel(model._warm, AsGiven(), True)
            model._wait_for_a_varying_target(model._warm, float(targets[0]))
        else:
            model._finish_warmup()
        for z, t in zip(Z[w:], targets[w:]):
            model._learn_z(z, t)
        return model


class EDOEBE(BaseEDOEBE, ArrayRegressor, base.MiniBatchRegressor):
    """Ensemble of DOEBEs (paper Sec. 4.2): the drop-in model of river-doebe.

    ``EDOEBE()`` needs no arguments. For its first ``n_warmup`` samples it predicts with its
    warm-up fallback (:class:`river_doebe.warmup.Fallback`: a Bayesian average of a linear
    regression and a nearest-neighbour predictor, which learns from the first sample) while it
    keeps the window. At ``n_warmup`` it freezes a standardisation of ``x`` and ``y`` (mean and
    standard deviation of the window), fits the hyperparameters of every basis family by
    empirical Bayes from several starting length scales, draws ``n_samples - 1`` more members
    around each mode from its Laplace approximation, gives every member a dynamic twin per
    random-walk variance, replays the window through the members' filters and streams on. The
    weights start uniform after the warm-up: the window's predictive densities are in-sample for
    the fitted hyperparameters and would favour whichever family overfits it. Predictions and
    distributions are in the original units of ``y``. If the fit fails on the window's data, the
    model says so once and goes on with its fallback. A window whose target never varied (a
    sensor that read one value, a count that stayed 0) has no noise or prior variance to fit:
    the model says so once, and its window keeps samples again from the first target that
    differs, the fallback predicting meanwhile.

    A missing key is at its window mean for a dense input (present in 99% of the window's samples)
    and 0 for a sparse one (an indicator, a word count); inputs first seen after the warm-up join
    every member exactly, and so does an input that was constant over the window (a sensor
    stuck, a flag never raised) at its first other value
    (:class:`river_doebe.warmup.standardise.Standardizer`, the README's input policy).

    The weights switch with the block matrix of :func:`river_doebe.engine.edoebe_transition`: a
    member moves to one of its own twins with probability ``delta`` each step, so a collapse of
    the static/dynamic weights early in a stream can be undone later.

    With ``models`` given, the warm-up is skipped: those members and their twins are used as
    they are, on inputs and targets as given.

    Parameters
    ----------
    families
        The basis families whose hyperparameters the warm-up fits: names (``"hsgp"``, ``"rff"``,
        ``"rbf"``, ``"poly"``, ``"linear"``, ``"bspline"``, see
        :data:`river_doebe.warmup.FAMILIES`) and/or basis templates, each family once (a name
        or a seeded template given twice is refused: its members would count twice; more
        members of a family come from ``n_samples``). The default ``None`` is the
        paper's Experiment 3 set, ``("hsgp", "rff", "rbf")``: additive HSGP (about 100
        features), random Fourier features (50 frequencies) and an RBF network (100 centres),
        all with ARD length scales; on more than 100 inputs (a bag of words) the linear family
        takes the HSGP's place, ``("linear", "rff", "rbf")``, since 100 functions cannot cover
        every input (:func:`river_doebe.warmup.default_families`).
    n_warmup
        Length of the warm-up window, in samples. Defaults to 1000.
    n_samples
        Members per empirical-Bayes mode: the mode itself and ``n_samples - 1`` draws from its
        Laplace approximation. Defaults to 5.
    rw_variances
        The random-walk variances of the dynamic twins, one block of twins per value. Defaults
        to ``(1e-3,)``.
    delta
        The probability that a member's weight switches to one of its own twins at each step.
        Defaults to 0.01.
    seed
        Seed of the random parts (random features, centres, Laplace draws, and those of a
        basis template in ``families`` without a seed of its own); the same seed gives the same
        ensemble. Defaults to ``None`` (not reproducible).
    models
        Explicit members, as :class:`~river_doebe.DOBE` learners: the warm-up is skipped
        (see above). Defaults to ``None`` (the warm-up fits the members).
    weight_floor
        Posterior weights below it (but the largest) are zeroed
        before the next switching step, and their members
        no longer updated. Defaults to 1e-100 (the paper uses 1e-16; see
        :class:`river_doebe.DOEBE` for why the default is lower).
    starts
        Starting length scales of the empirical-Bayes optimiser, as multiples of each input's
        range over the warm-up window. Defaults to ``(0.1, 1.0, 10.0)``.
    replay
        Whether the warm-up window is filtered through the members after the fit (the weights
        restart uniform either way). Defaults to ``True``.
    verbose
        Whether to print the progress of the warm-up. Defaults to ``False``.
    static
        Whether the static members are kept beside their dynamic twins. With ``static=False``
        and one random-walk variance the ensemble is the paper's DOE-X (every member dynamic,
        plain model averaging); with ``rw_variances=()`` it is OE-X (every member static).
        Defaults to ``True``.
    weighting
        The weight rule: ``"bma"``, Bayesian model averaging (the paper), or ``"stacking"``,
        online stacking of the members' predictive densities (the Soft-Bayes step, see
        :mod:`river_doebe.engine.weighting`). Defaults to ``"bma"``.
    stacking_rate
        The Soft-Bayes rate ``eta`` in ``(0, 1]`` of ``weighting="stacking"`` (1 is Bayes'
        rule); unused by ``"bma"``. Defaults to 0.05.
    share
        A fixed share in ``[0, 1)`` of the weight spread uniformly over the members after the
        switching step between twins, so that a member that fell behind can lead again.
        Defaults to 0 (none).
    recalibrate
        Whether the predictive distribution is recalibrated online: ``predict_one(x,
        with_dist=True)`` returns the mixture mapped by a monotone map of its CDF learnt from
        the probability integral transforms of past targets (a
        :class:`river_doebe.conf.RecalibratedDistribution`), and ``predict_one(x,
        with_interval=True)`` the adaptive conformal interval at 90% (a
        ``river.conf.Interval``). It is the algorithm of
        ``river_doebe.conf.Recalibrated(EDOEBE(recalibrate=False), gate=True)`` (its other
        parameters at their defaults), bit for bit, built in: the map learns from the mixture
        the ensemble predicted before each target, which the weight update reads anyway; the
        warm-up's predictions (the fallback's, too wide as they are) have a map of their own,
        learnt from the warm-up's targets, and the ensemble's map starts afresh when the
        warm-up ends. The long-run miscoverage of the interval obeys the bound of
        :class:`river_doebe.conf.Recalibrated` for any sequence, after the warm-up and within
        it. The point prediction,
        ``predict_one(x)``, the mixture's mean, does not change (the recalibrated
        distribution carries it as ``point``, which the point metrics of
        :func:`river_doebe.evaluate.progressive_scores` score). Defaults to ``True`` (measured:
        benchmarks/results/calibration_replay.md); ``False`` gives the ensemble's own mixture.
        ``recalibration_`` is the state (a :class:`river_doebe.conf.Recalibrated` that wraps
        nothing: its ``alpha_``, ``gate_open_``, ``n_updates_``).
    outlier_gate
        After the warm-up, a target further than ``outlier_gate`` standard deviations of the
        ensemble's predictive (its moment-matched mean and variance) from the prediction, when
        the target before it was within them, is kept out of the members and their weights:
        an isolated outlier (a sensor spike, a typing error), which the Gaussian filters would
        otherwise learn like any target, for thousands of samples. The model is then exactly as
        if the sample had not come; the prediction made for it, its score and the
        recalibration count it as usual. The next target beyond the gate is learnt, and those
        after it while they stay beyond: a stream that moved is followed from its second
        sample. ``None`` learns every target, as the paper does. Defaults to ``None``.
        ``n_skipped_`` counts the targets kept out.
    noise_levels
        Multipliers of each member's noise variance ``var_eps`` (fitted on the warm-up window,
        then frozen): every member gets a twin per level (and per random-walk level), and the
        switching moves weight between all of a member's twins. With ``(1.0, 10.0, 100.0)`` the
        ensemble follows a noise level that rises after the warm-up, where members whose noise
        variance stayed at the window's chase the noise; it costs up to as many times the
        members. Defaults to ``(1.0,)``: the fitted noise variances only, as the paper.

    Examples
    --------

    >>> from river import evaluate, metrics
    >>> from river_doebe import EDOEBE
    >>> from river_doebe.datasets import Friedman1

    >>> model = EDOEBE(n_warmup=300, n_samples=2, starts=(1.0,), seed=1)
    >>> evaluate.progressive_val_score(Friedman1(n_samples=1000), model, metrics.R2())
    R2: 0.8...
    >>> len(model.members), sorted({m["family"] for m in model.describe()})
    (12, ['HilbertGP', 'RBFNetwork', 'RandomFourierFeatures'])

    The predictive distribution is the mixture of the members' Gaussians, in the units of ``y``,
    recalibrated online (``recalibrate=True``); the point prediction is the mixture's mean,
    whether recalibrated or not:

    >>> x = {i: 0.5 for i in range(10)}
    >>> dist = model.predict_one(x, with_dist=True)
    >>> type(dist).__name__, type(dist.base).__name__
    ('RecalibratedDistribution', 'GaussianMixture')
    >>> import math
    >>> math.isclose(dist.log_pdf(15.0), model.log_density_one(x, 15.0))
    True
    >>> raw = model.clone({"recalibrate": False})
    >>> evaluate.progressive_val_score(Friedman1(n_samples=1000), raw, metrics.R2())
    R2: 0.8...
    >>> raw.predict_one(x) == model.predict_one(x) == raw.predict_one(x, with_dist=True).mu
    True
    >>> model.predict_one(x, with_interval=True)
    Interval(lower=..., upper=...)

    Explicit members, no warm-up: a dynamic twin of each member, then the static members.

    >>> from river_doebe import DOBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> ensemble = EDOEBE(
    ...     models=[DOBE(Linear(), var_eps=0.5), DOBE(RandomFourierFeatures(20, seed=1))],
    ...     rw_variances=(1e-3,),
    ... )
    >>> ensemble.learn_one({"a": 0.3, "b": -1.0}, 2.0)
    >>> for m in ensemble.members:
    ...     print(type(m.basis).__name__, m.var_rw)
    Linear 0.001
    RandomFourierFeatures 0.001
    Linear 0.0
    RandomFourierFeatures 0.0

    References
    ----------
    [^1]: Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
        Transactions on Machine Learning Research.

    """

    def __init__(
        self,
        families: list | None = None,
        n_warmup: int = 1000,
        n_samples: int = 5,
        rw_variances: tuple = (1e-3,),
        delta: float = 1e-2,
        seed: int | None = None,
        models: list | None = None,
        weight_floor: float = WEIGHT_FLOOR,
        starts: tuple = (0.1, 1.0, 10.0),
        replay: bool = True,
        verbose: bool = False,
        static: bool = True,
        weighting: str = "bma",
        stacking_rate: float = STACKING_RATE,
        share: float = 0.0,
        recalibrate: bool = True,
        outlier_gate: float | None = None,
        noise_levels: tuple = (1.0,),
    ):
        self.recalibrate = recalibrate
        check_bool("recalibrate", recalibrate)
        self.outlier_gate = outlier_gate
        if outlier_gate is not None:
            check_positive("outlier_gate", outlier_gate)
        self.noise_levels = noise_levels
        if (isinstance(noise_levels, str | bytes)
                or not isinstance(noise_levels, list | tuple | np.ndarray)
                or not len(noise_levels)):
            raise TypeError(f"noise_levels must be a non-empty tuple of positive numbers, got "
                            f"{noise_levels!r}")
        for v in noise_levels:
            check_positive("each of noise_levels", v)
        super().__init__(
            families=families, n_warmup=n_warmup, n_samples=n_samples,
            rw_variances=rw_variances, delta=delta, seed=seed, models=models,
            weight_floor=weight_floor, starts=starts, replay=replay, verbose=verbose,
            static=static, weighting=weighting, stacking_rate=stacking_rate, share=share,
        )
        self._recal = _own_recalibration(self) if recalibrate else None

    #: the predictive of the last prediction, for the map to learn from if the next sample
    #: learnt is that one: ``(key, ("arrays", parts) or ("dist", mixture))`` (see
    #: :meth:`_remember`); not part of the state (pickles and copies leave it out)
    _memo: tuple | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_memo", None)
        return state

    def __setstate__(self, state: dict) -> None:
        # a model pickled before the recalibration was built in had none
        if "recalibrate" not in state:
            state = {**state, "recalibrate": False, "_recal": None}
        super().__setstate__(state)

    def _noise_levels(self) -> tuple[float, ...]:
        return tuple(float(v) for v in self.noise_levels)

    @property
    def n_skipped_(self) -> int:
        """How many targets the ``outlier_gate`` kept out of the members and weights."""
        return 0 if self._engine is None else int(self._engine.n_skipped)

    @property
    def recalibration_(self):
        """The online recalibration (``recalibrate=True``): a
        :class:`river_doebe.conf.Recalibrated` that wraps nothing, whose state (``alpha_``,
        ``beta_``, ``gate_open_``, ``n_updates_``, ...) the model updates; ``None`` with
        ``recalibrate=False``."""
        return self._recal

    def _history_targets(self, y, n: int) -> np.ndarray:
        return check_targets(y, n)

    # ------------------------------------------------------------------ the recalibration
    def _recalibrates_next(self) -> bool:
        """Whether the warm model's map (rather than the warm-up's) learns from the next
        target: once the model had learnt a sample with its members in place (after the
        warm-up; with explicit ``models``, from the second sample), as the wrapper's map does
        once the model it wraps is warm."""
        return self._recal is not None and self.is_warm and self.n_samples_seen > 0

    def _use_map(self) -> None:
        """Put the map of the model's phase in use (see :meth:`_recalibrates_next`)."""
        if self._recal is not None:
            self._recal._use_map(self._recalibrates_next())

    def finish_warmup(self) -> Self:
        """End the warm-up now, on the samples of its window so far (at least 2), instead of
        at ``n_warmup``; the ensemble's recalibration map is then the one in use."""
        super().finish_warmup()
        self._use_map()
        return self

    def _memo_key(self, z: np.ndarray):
        """What a remembered prediction is valid for: this sample's array and the members as
        they are (every learnt or replayed sample counts); ``None`` while nothing is
        remembered (no recalibration, or the warm-up)."""
        if self._recal is None or self._engine is None:
            return None
        return z.tobytes(), self._engine.n_updates

    def _remember(self, z: np.ndarray, kind: str, value) -> None:
        # the prediction just made, so that learning the same sample next reads it instead of
        # asking the members for it again (what the weight update of that sample reads too)
        key = self._memo_key(z)
        self._memo = None if key is None else (key, kind, value)

    def _predict_z(self, z: np.ndarray) -> tuple[float, float]:
        if self._recal is None or self._engine is None:
            return super()._predict_z(z)
        assert self._adaptor is not None  # (the engine's, after the warm-up)
        mean, var, log_w, means, variances, scale, shift = self._adaptor.predictive(z)
        # (copies: the engine's arrays are its scratch, which its next prediction overwrites)
        self._remember(z, "arrays", (mean, var, np.exp(log_w), means.copy(), variances.copy(),
                                     scale, shift))
        return mean, var

    def _dist_z(self, z: np.ndarray):
        dist = super()._dist_z(z)
        if self._recal is None:
            return dist
        self._remember(z, "dist", dist)
        self._use_map()
        return _with_point(self._recal._recalibrate(dist), dist)

    def _log_density_z(self, z: np.ndarray, y: float) -> float:
        if self._recal is None:
            return super()._log_density_z(z, y)
        return float(self._dist_z(z).log_pdf(y))

    def _learn_z(self, z: np.ndarray, y: float) -> None:
        recal = self._recal
        memo, self._memo = self._memo, None
        if recal is None:
            super()._learn_z(z, y)
            return
        self._use_map()
        if not self._recalibrates_next():
            # the warm-up (the fallback predicts): its own map learns from the distribution
            # predicted for z before the model learns y, once the model took the sample
            dist = super()._dist_z(z)
            super()._learn_z(z, y)
            if not recal._is_point_mass(dist):
                recal._update(dist, y)
            self._use_map()  # (the warm model's map, if the warm-up ended with this sample)
            return
        if memo is not None and memo[0] == self._memo_key(z):
            # the prediction made for this sample by the members as they are (copies of their
            # arrays, or the distribution): the map learns from it once they took the sample
            super()._learn_z(z, y)
            if memo[1] == "dist":  # the wrapper's update, from a distribution or from arrays
                if not recal._is_point_mass(memo[2]):
                    recal._update(memo[2], y)
            else:
                recal._update_arrays(memo[2], y)
            return
        # the mixture predicted for z, as the engine's own arrays (the predict step is cached
        # for the learn step that follows), read before the engine learns y
        assert self._adaptor is not None  # (the engine's, after the warm-up)
        mean, var, log_w, means, variances, scale, shift = self._adaptor.predictive(z)
        state, knots = recal._state.copy(), recal._ku
        recal._update_arrays((mean, var, np.exp(log_w), means, variances, scale, shift), y)
        try:
            super()._learn_z(z, y)
        except BaseException:
            # a sample the members refuse changes nothing: nor the map
            recal._state, recal._ku = state, knots
            raise

    def _run_block(self, Z, ys, with_dist: bool, want: bool):
        recal = self._recal
        if recal is None:
            return super()._run_block(Z, ys, with_dist, want)
        self._memo = None
        self._use_map()
        seen = self.n_samples_seen
        targets = np.asarray(ys, dtype=np.float64)
        model = self._model
        assert model is not None  # (the engine's: a block runs after the warm-up)
        try:
            rows = model.learn_block(Z, targets, True)
        except FilterError as err:
            # a row the members refuse: the rows before it were learnt, and so the map learns
            # them too, as row by row (the refused row changes nothing)
            for t in range(err.learnt[0].shape[0]):
                self._map_learns(err.learnt, t, float(targets[t]), seen)
            raise
        means, variances, (log_prior, c_means, c_vars) = rows
        out: list = []
        # each row's mixture, made before the row was learnt, is mapped, then learnt, in order
        for t, (mean, var, target) in enumerate(zip(means.tolist(), variances.tolist(),
                                                    targets.tolist())):
            if want:
                if with_dist:
                    live = log_prior[t] > -np.inf
                    dist = self._predictive(np.exp(log_prior[t][live]), c_means[t][live],
                                            c_vars[t][live], mean, var)
                    out.append(_with_point(recal._recalibrate(dist), dist))
                else:
                    out.append(mean)
            self._map_learns(rows, t, target, seen)
        return out if want else None

    def _map_learns(self, rows: tuple, t: int, target: float, seen: int) -> None:
        """The map learns row ``t`` of a block's outputs ``rows`` (what the engine's
        ``learn_block`` returns) with its target (the block started after ``seen`` samples):
        the warm model's map, or the warm-up's for the model's first sample (explicit
        ``models``, warm from their first sample on, as :meth:`_recalibrates_next` says)."""
        recal = self._recal
        assert recal is not None  # (a model that recalibrates)
        means, variances, (log_prior, c_means, c_vars) = rows
        recal._update_arrays((float(means[t]), float(variances[t]), np.exp(log_prior[t]),
                              c_means[t], c_vars[t], 1.0, 0.0), target)
        if seen + t == 0:
            recal._use_map(True)  # (the block began with the map of the warm-up, for this row)

    def predict_one(self, x: dict, with_dist: bool = False, with_interval: bool = False):
        """The prediction for ``x``: the predictive mean; with ``with_dist=True`` the
        predictive distribution (recalibrated, a
        :class:`~river_doebe.conf.RecalibratedDistribution`, unless ``recalibrate=False``: the
        :class:`~river_doebe.distributions.GaussianMixture`); with ``with_interval=True``
        (``recalibrate=True`` only) the adaptive conformal interval at 90%, a
        ``river.conf.Interval``."""
        if not with_interval:
            return super().predict_one(x, with_dist=with_dist)
        if self._recal is None:
            raise ValueError("with_interval=True needs the recalibration: EDOEBE(recalibrate="
                             "True), or wrap the model in river_doebe.conf.Recalibrated")
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).predict_one(x, with_interval=True)
        try:
            dist = super()._dist_z(z)
            self._use_map()
            return self._recal._interval(dist)
        except FilterError as err:
            raise self._refused(err, x, "predict") from None

    def _predictive_arrays(self, x: dict):
        # the arrays are the mixture's: they are the predictive only without the recalibration
        return super()._predictive_arrays(x) if self._recal is None else None

    def _predictive_view(self, z: np.ndarray):
        # the engine behind its standardisation (None during the warm-up: the fallback)
        assert self._adaptor is not None  # (set up with the schema)
        return self._adaptor.predictive(z)

    def member_predictions(self, x: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each member's predictive ``(means, variances)`` for ``x`` in the units of the target,
        and the weights that the ensemble's prediction uses (after switching). Dropped members
        give NaN. Before the warm-up ends there are no members yet."""
        return self._member_predictions(x)

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import Linear, RandomFourierFeatures

        yield {
            "families": [RandomFourierFeatures(5, seed=1)],
            "n_warmup": 20,
            "n_samples": 2,
            "starts": (1.0,),
            "seed": 1,
        }
        models = [DOBE(Linear(), var_eps=1.0), DOBE(RandomFourierFeatures(8, seed=3))]
        yield {"models": models}
        yield {"models": models, "weighting": "stacking", "stacking_rate": 0.2, "share": 0.01}
        yield {"models": models, "recalibrate": False}
        yield {"models": models, "outlier_gate": 8.0, "noise_levels": (1.0, 10.0)}
        yield {
            "families": [RandomFourierFeatures(5, seed=1)],
            "n_warmup": 20,
            "n_samples": 2,
            "starts": (1.0,),
            "seed": 1,
            "recalibrate": False,
        }


# (river's Classifier declares **kwargs on predict_one and predict_proba_one; the classifiers of
# the package take none, so that a keyword they do not know is an error)
class EDOEBEClassifier(BaseEDOEBE, ArrayClassifier, base.MiniBatchClassifier):  # type: ignore[misc]
    """Ensemble of DOEBE classifiers (paper Sec. 4.2, App. A): the drop-in classifier.

    ``EDOEBEClassifier()`` needs no arguments. For its first ``n_warmup`` samples it predicts
    with its warm-up fallback (:class:`river_doebe.warmup.Fallback`: a Bayesian average of a
    logistic regression and a nearest-neighbour predictor, which learns from the first sample)
    while it keeps the window. At ``n_warmup`` it

    1. freezes a standardisation of ``x`` (mean and standard deviation of the window; inputs
       constant over the window wait, with a warning, until they vary; the labels are not
       transformed;
       sparse inputs and inputs seen later as for the regressor :class:`river_doebe.EDOEBE`);
    2. chooses the hyperparameters of every basis family by empirical Bayes on the window, with
       the **Gaussian evidence of the labels coded as -1/+1**: length scales (and the other basis
       hyperparameters) and ``var_theta`` are taken from the type-II maximum-likelihood fit of a
       regression of those codes on the basis, from several starting length scales, plus
       ``n_samples - 1`` draws per mode from its Laplace approximation (the same fit as the
       regressor :class:`river_doebe.EDOEBE`; the fitted noise variance is not used, a Bernoulli
       likelihood has none). The logistic evidence has no closed form, and the least-squares
       fit to the +-1 codes is the usual cheap stand-in (it is the Gaussian-process
       "label regression" criterion [^2]);
    3. gives every member a dynamic twin for each random-walk variance, in a
       :class:`~river_doebe.engine.LogisticEngine` with the E-DOEBE switching matrix, filters the
       window through the members (``replay``) and streams on with frozen hyperparameters.

    The weights switch with the block matrix of :func:`river_doebe.engine.edoebe_transition`: a
    member moves to one of its own twins with probability ``delta`` each step.

    The fallback's predictions count in :attr:`log_evidence_`. If the window holds one class
    only, its labels say nothing about length scales (the evidence of a constant target pushes
    them to their upper bound, which would leave nearly constant members): the ensemble is then
    built, with a warning, from one member per family with the template's own hyperparameters
    (fitted to the inputs only: HSGP boundaries, RBF centres) and ``var_theta = 1``, and learns
    the boundary from the stream once the other class appears.

    With ``models`` given, the warm-up is skipped: those members (their ``var_rw`` replaced by
    the levels) and their twins are used as they are, on inputs as given. For ``M`` members
    there are ``(R + 1) M`` of them: for each random-walk variance a dynamic copy of every
    member, then the ``M`` static members.

    Labels are any two hashable values, as for :class:`river_doebe.DOBEClassifier`.

    Parameters
    ----------
    families
        The basis families whose hyperparameters the warm-up fits: names (``"hsgp"``, ``"rff"``,
        ``"rbf"``, ``"poly"``, ``"linear"``, ``"bspline"``, see
        :data:`river_doebe.warmup.FAMILIES`) and/or basis templates, each family once (a name
        or a seeded template given twice is refused: its members would count twice; more
        members of a family come from ``n_samples``). The default ``None`` is the
        paper's Experiment 3 set, ``("hsgp", "rff", "rbf")``: additive HSGP (about 100
        features), random Fourier features (50 frequencies) and an RBF network (100 centres),
        all with ARD length scales; on more than 100 inputs (a bag of words) the linear family
        takes the HSGP's place, ``("linear", "rff", "rbf")``, since 100 functions cannot cover
        every input (:func:`river_doebe.warmup.default_families`).
    n_warmup
        Length of the warm-up window, in samples. Defaults to 1000.
    n_samples
        Members per empirical-Bayes mode: the mode itself and ``n_samples - 1`` draws from its
        Laplace approximation. Defaults to 5.
    rw_variances
        The random-walk variances of the dynamic twins, one block of twins per value. Defaults
        to ``(1e-3,)``.
    delta
        The probability that a member's weight switches to one of its own twins at each step.
        Defaults to 0.01.
    seed
        Seed of the random parts (random features, centres, Laplace draws, and those of a
        basis template in ``families`` without a seed of its own); the same seed gives the same
        ensemble. Defaults to ``None`` (not reproducible).
    models
        Explicit members, as :class:`~river_doebe.DOBEClassifier` learners: the warm-up is skipped
        (see above). Defaults to ``None`` (the warm-up fits the members).
    weight_floor
        Posterior weights below it (but the largest) are zeroed
        before the next switching step, and their members
        no longer updated. Defaults to 1e-100 (the paper uses 1e-16; see
        :class:`river_doebe.DOEBE` for why the default is lower).
    starts
        Starting length scales of the empirical-Bayes optimiser, as multiples of each input's
        range over the warm-up window. Defaults to ``(0.1, 1.0, 10.0)``.
    replay
        Whether the warm-up window is filtered through the members after the fit (the weights
        restart uniform either way). Defaults to ``True``.
    verbose
        Whether to print the progress of the warm-up. Defaults to ``False``.
    static
        Whether the static members are kept beside their dynamic twins. With ``static=False``
        and one random-walk variance the ensemble is the paper's DOE-X (every member dynamic,
        plain model averaging); with ``rw_variances=()`` it is OE-X (every member static).
        Defaults to ``True``.
    weighting
        The weight rule: ``"bma"``, Bayesian model averaging (the paper), or ``"stacking"``,
        online stacking of the members' predictive densities (the Soft-Bayes step, see
        :mod:`river_doebe.engine.weighting`). Defaults to ``"bma"``.
    stacking_rate
        The Soft-Bayes rate ``eta`` in ``(0, 1]`` of ``weighting="stacking"`` (1 is Bayes'
        rule); unused by ``"bma"``. Defaults to 0.05.
    share
        A fixed share in ``[0, 1)`` of the weight spread uniformly over the members after the
        switching step between twins, so that a member that fell behind can lead again.
        Defaults to 0 (none).
    update
        The members' update step: ``"laplace"`` (the paper's) or ``"ipl"``, iterated posterior
        linearisation (see :class:`~river_doebe.DOBEClassifier`); used by the members only, not
        by the warm-up fallback, whose logistic regression keeps the Laplace step. Defaults to
        ``"laplace"``.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics
    >>> from river_doebe import EDOEBEClassifier

    >>> model = EDOEBEClassifier(n_warmup=300, n_samples=2, starts=(1.0,), seed=1)
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 90...%
    >>> len(model.members), sorted({m["family"] for m in model.describe()})
    (12, ['HilbertGP', 'RBFNetwork', 'RandomFourierFeatures'])

    Explicit members, no warm-up (here behind river's own scaler):

    >>> from river import preprocessing
    >>> from river_doebe import DOBEClassifier
    >>> from river_doebe.basis import Linear, RandomFourierFeatures

    >>> ensemble = EDOEBEClassifier(
    ...     models=[
    ...         DOBEClassifier(Linear()),
    ...         DOBEClassifier(RandomFourierFeatures(50, lengthscale=3.0, seed=1), var_theta=10.0),
    ...     ],
    ...     rw_variances=(1e-3,),
    ... )
    >>> model = preprocessing.StandardScaler() | ensemble
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.60%
    >>> [(type(m.basis).__name__, m.var_rw) for m in ensemble.members]
    [('Linear', 0.001), ('RandomFourierFeatures', 0.001),
     ('Linear', 0.0), ('RandomFourierFeatures', 0.0)]

    References
    ----------
    [^1]: Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
        Transactions on Machine Learning Research.
    [^2]: Rasmussen, C. E. and Williams, C. K. I. (2006). Gaussian Processes for Machine
        Learning, Sec. 6.5 (least-squares classification). MIT Press.

    """

    task = "classification"
    _learner_type = DOBEClassifier
    _engine_type = LogisticEngine

    def __init__(
        self,
        families: list | None = None,
        n_warmup: int = 1000,
        n_samples: int = 5,
        rw_variances: tuple = (1e-3,),
        delta: float = 1e-2,
        seed: int | None = None,
        models: list | None = None,
        weight_floor: float = WEIGHT_FLOOR,
        starts: tuple = (0.1, 1.0, 10.0),
        replay: bool = True,
        verbose: bool = False,
        static: bool = True,
        weighting: str = "bma",
        stacking_rate: float = STACKING_RATE,
        share: float = 0.0,
        update: str = "laplace",
    ):
        self.update = update
        check_update(update)
        super().__init__(
            families=families, n_warmup=n_warmup, n_samples=n_samples,
            rw_variances=rw_variances, delta=delta, seed=seed, models=models,
            weight_floor=weight_floor, starts=starts, replay=replay, verbose=verbose,
            static=static, weighting=weighting, stacking_rate=stacking_rate, share=share,
        )

    def _history_targets(self, y, n: int) -> np.ndarray:
        """The codes of a history's labels (the classifier takes its labels from it)."""
        labels = y.tolist() if hasattr(y, "tolist") else list(y)
        if len(labels) != n:
            raise ValueError(f"got {n} rows of features but {len(labels)} labels")
        state = self._labels
        for label in labels:
            state, _, _ = state.encode(label)
        self._label_state = state
        return np.array([state.encode(label)[1] for label in labels], dtype=np.int64)

    def member_predictions(self, x: dict) -> tuple[list[dict], np.ndarray]:
        """Each member's predictive probabilities for ``x`` (as ``predict_proba_one`` would give
        them; NaN for dropped members) and the weights that the ensemble's prediction for ``x``
        uses (after switching). Before the warm-up ends there are no members yet."""
        return self._member_predictions(x)

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import Linear, RandomFourierFeatures

        yield {
            "families": [RandomFourierFeatures(5, seed=1)],
            "n_warmup": 20,
            "n_samples": 2,
            "starts": (1.0,),
            "seed": 1,
        }
        yield {
            "models": [
                DOBEClassifier(Linear()),
                DOBEClassifier(RandomFourierFeatures(8, seed=3), var_theta=5.0),
            ],
        }

