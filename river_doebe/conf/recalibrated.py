"""The online recalibration wrapper: adaptive conformal steps on a grid of levels of the wrapped
model's predictive CDF (see :mod:`river_doebe.conf`)."""

from __future__ import annotations

import math
import numbers

import numpy as np
from river import base
from river.conf import Interval

from river_doebe._compat import gives_distributions, is_regressor, last_step
from river_doebe.conf import _kernels
from river_doebe.conf.distribution import RecalibratedDistribution
from river_doebe.distributions import gaussian
from river_doebe.kernels.jit import Rented

__all__ = ["Recalibrated"]

#: the weight of a Gaussian read as a one-component mixture
_ONE = np.ones(1)
#: the knots of the identity map
_IDENTITY = np.array([0.0, 1.0])

#: about what a fresh install's compile of the recalibration's update takes (the update and the
#: functions it calls: 3.0 s in ``benchmarks/results/throughput.json``, ``first_use``)
UPDATE_COMPILE_SECONDS = 3.0
#: the update, by its Python twin (about 0.2 ms a target, the same bits) until the twin's calls
#: have taken ``UPDATE_COMPILE_SECONDS``, then compiled (at once when it is in Numba's on-disk
#: cache): a first stream on a fresh install, the quick start's included, no longer waits for a
#: compile that its targets would not pay back (see :class:`river_doebe.kernels.jit.Rented`)
_UPDATE = Rented(UPDATE_COMPILE_SECONDS, update=_kernels.update,
                 update_affine=_kernels.update_affine)


def _has_point_mass(weights, variances) -> bool:
    """Whether a mixture gives weight to a component without a positive, finite variance
    (a warm-up fallback's nearest neighbours that all had one target): its PIT and log density
    at a target cannot be computed, so the map does not learn from it. (Only distributions need
    the check: the arrays of :meth:`Recalibrated._update_arrays` are an engine's members, whose
    variances the engine keeps positive and finite, and no model gives arrays in its warm-up.)"""
    w, v = np.asarray(weights), np.asarray(variances)
    return bool(np.any((w > 0.0) & ~((v > 0.0) & (v < np.inf))))


# ---------------------------------------------------------------------------------------------
# The wrapper
# ---------------------------------------------------------------------------------------------


def _check_level(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


#: how deep the checks of ``regressor`` look through pipelines and wrappers (a cycle of
#: wrappers would otherwise never end)
_MAX_DEPTH = 8


def _describe(model, depth: int = 0) -> str:
    """``model`` in a line, for an error message (river's repr of a pipeline takes dozens):
    ``StandardScaler | LinearRegression``, ``TargetStandardScaler(DOBE)``."""
    steps = getattr(model, "steps", None)
    if depth < _MAX_DEPTH and isinstance(steps, dict) and steps:
        return " | ".join(_describe(step, depth + 1) for step in steps.values())
    inner = getattr(model, "regressor", None)
    if depth < _MAX_DEPTH and hasattr(inner, "predict_one"):
        return f"{type(model).__name__}({_describe(inner, depth + 1)})"
    if not isinstance(model, base.Base):  # not an estimator at all (None, a class, a string)
        text = repr(model)
        return text if len(text) <= 60 else text[:57] + "..."
    return type(model).__name__


def _recalibrating(model, depth: int = 0):
    """The model that recalibrates its own predictive, found in ``model``, the last step of a
    pipeline or the regressor of a wrapper it is (outermost first): a ``Recalibrated`` or an
    ``EDOEBE(recalibrate=True)``; ``None`` when there is none. Its distribution is not one this
    wrapper can map (a second map would learn from PITs the first has made uniform)."""
    if depth > _MAX_DEPTH:
        return None
    # not isinstance: river's metaclass makes a pipeline an instance of its last step's class
    if issubclass(type(model), Recalibrated) or getattr(model, "recalibration_", None) is not None:
        return model
    steps = getattr(model, "steps", None)
    if isinstance(steps, dict) and steps:
        return _recalibrating(list(steps.values())[-1], depth + 1)
    inner = getattr(model, "regressor", None)
    return None if inner is None else _recalibrating(inner, depth + 1)


class Recalibrated(base.Wrapper, base.Regressor):
    """Recalibrate a regressor's predictive distribution online, with a coverage guarantee.

    The wrapped regressor's one-step-ahead predictive ``F_t`` (``predict_one(x,
    with_dist=True)``: a ``river.proba.Gaussian`` or a
    :class:`~river_doebe.distributions.GaussianMixture`) is mapped to ``G_t = g_t o F'_t``, a
    :class:`RecalibratedDistribution`, so that the probability integral transforms of recent
    targets are uniform at the tracked levels. Everything used to predict ``y_t`` was learnt
    from ``y_1 .. y_{t-1}`` only.

    **The central interval (adaptive conformal inference).** The central ``confidence_level``
    interval of ``G_t`` runs from ``F'_t``'s quantile at level ``alpha_t * beta_t`` to its
    quantile at ``1 - alpha_t (1 - beta_t)``: ``g_t`` maps these levels to ``(1 -
    confidence_level) / 2`` and ``(1 + confidence_level) / 2``. The miscoverage level
    ``alpha_t`` follows the step of Gibbs & Candès (2021), ``alpha_{t+1} = alpha_t + g_t *
    ((1 - confidence_level) - err_t)``, where ``err_t`` is 1 when ``y_t`` falls outside the
    interval, with the decaying steps of Angelopoulos, Barber & Bates (2024): at the ``t``-th
    target learnt ``g_t = max(step, 0.3 / sqrt(t))``, larger for the first ``(0.3 / step)^2``
    targets (900 with the default ``step``), so that a model far off at the start (or a short
    stream) is recalibrated within tens of targets, then ``step``. ``beta_t`` (the share of the
    misses put below, kept in ``[0.05, 0.95]``) moves by the same steps towards the side the
    misses fall on. The interval returned by ``predict_one(x, with_interval=True)`` is that
    interval, the whole line when ``alpha_t <= 0`` and empty when ``alpha_t >= 1``.
    **Guarantee**: for any sequence of targets and of wrapped predictions (adversarial ones
    included), after ``T`` predictions,

    ``| (1/T) sum_t err_t - (1 - c) | <= ((1 + 2 g_1) / g_T - (min(c, 1 - c) + g_1) / g_1) / T``,

    ``c = confidence_level``, ``g_1 = max(step, 0.3)`` the first (largest) step and ``g_T =
    max(step, 0.3 / sqrt(T))`` the last: with the default ``step=0.01`` and ``c = 0.9``, ``(160
    - 4/3) / T`` (158.7 / T) from ``T = 900`` on (1.59 percentage points after 10,000
    predictions; ``(16 sqrt(T) / 3 - 4/3) / T`` before); with a ``step`` of 0.3 or more the
    steps are constant and the bound is ``(max(c, 1 - c) + step) / (step * T)``. It holds
    because ``alpha_t`` cannot leave ``[-g_1, 1 + g_1]`` (below 0 the interval covers, above 1
    it misses, and no step is larger than ``g_1``) and ``1 / g_t`` does not decrease: summed by
    parts, ``sum_t (1 - c) - err_t = sum_t (alpha_{t+1} - alpha_t) / g_t = alpha_{T+1} / g_T -
    alpha_1 / g_1 - sum_{t=2..T} alpha_t (1 / g_t - 1 / g_{t-1})``, with ``alpha_1 = 1 - c``
    and the weights of the last sum non-negative and adding up to ``1 / g_T - 1 / g_1``. The
    recalibrated distribution's own central ``confidence_level`` interval is that interval at
    every step where ``0 < alpha_t < 1``; at the other steps (a proper distribution cannot
    cover the whole line) its ``alpha`` is held just inside, so the distribution's long-run
    miscoverage obeys the bound plus the share of those steps, ``n_outside / T`` (the
    attribute ``n_outside_``).

    **The shape.** Each level ``p`` of ``levels`` (between the interval's ends) has a knot of
    ``g_t`` tracked by a one-sided conformal step, ``v <- v + h_t * (p - 1{G_t(y_t) <= p})``
    with ``h_t = max(level_step, 0.3 / sqrt(t))`` (early steps as above), kept inside the
    interval's knots and in order; ``g_t`` is linear between knots, so it corrects the spread
    of the middle of the distribution (the default levels 0.25, 0.5, 0.75
    correct its 50% interval and its median) without a guarantee of its own.

    **Gross errors.** When the wrapped model's predictive is far off (an abrupt shift of the
    target, a variance that explodes), no map of its levels can help: its PITs are all 0 or
    all 1 (an ensemble whose most trusted member is sure and wrong, say). Then ``F'_t`` is the
    Gaussian ``N(mu_t + c sigma_t, (s sigma_t)^2)`` built on the wrapped predictive's mean
    ``mu_t`` and standard deviation ``sigma_t``, where ``(c, s)`` is one of these corrections
    of the standardised
    residuals ``z = (y - mu_t) / sigma_t``: their exponentially weighted mean and standard
    deviation over the last ``windows`` targets (one pair per window), or a random walk
    (``c`` the last residual, ``s`` the weighted root mean square of the steps between
    residuals over ``min(windows)`` targets, over the square root of 2). Each correction's
    recent log score (the log density at the targets, each sample's deficit to the best capped
    at 30 nats, averaged
    over the last ``min(windows)`` of them) is compared with the unmoved predictive's, and the
    best is used only when it beats the unmoved one by ``margin`` nats a sample. On a
    well-calibrated model the unmoved predictive is kept, and with it the mixture's shape.
    The guarantee above holds whatever ``F'_t`` is.

    **The gate** (``gate=True``; off by default). A well-calibrated model loses a little CRPS to
    any map that learns from noise. With the gate, the distribution returned is the wrapped
    model's own (the identity map) until its probability integral transforms depart
    significantly from uniform: exponentially weighted shares of the targets below its levels
    0.05, 0.25, 0.5, 0.75 and 0.95 and inside its central 50% and 90% intervals, over 100, 1,000
    and 4,000 targets, each compared with its probability in standard deviations under uniform
    PITs; it opens beyond 4.5, 3.5 or 3.0 of them (by window) and closes when every share is back
    within 2.5. A share counts once its window weighs enough targets for that comparison (their
    effective number times the event's probability, or its complement's, at least 5: the
    median's from about 10 targets, the tails' from about 100), so that one target in a tail is
    not taken for a departure. While only the 4,000-target window departs (a small, lasting
    miscalibration) the map is the mean of the learnt maps over the last 4,000 targets
    (exponentially weighted), else ``g_t`` itself. The
    interval of ``predict_one(x, with_interval=True)`` is the conformal one whatever the gate
    does, and keeps the guarantee; the distribution's central interval is the conformal one
    only at the steps where ``g_t`` itself is used, so its long-run miscoverage obeys the bound
    plus ``(n_outside + n_gated) / T`` (the attribute ``n_gated_``).

    ``predict_one(x)`` returns the wrapped model's point prediction, the mean of its
    predictive (not the recalibrated distribution's mean: see the README for which measures
    better). **The warm-up.** While the wrapped model is warming up (``is_warm`` false: an
    ``EDOEBE``'s first ``n_warmup`` samples, predicted by its fallback), its predictive is
    another model's, calibrated otherwise (the fallback's is too wide), so it has a map of its
    own: the same steps, started afresh and learnt from the warm-up's targets only. Once the
    model is warm, the map above starts afresh and learns from the warm model's targets only,
    and the warm-up's is set aside. The guarantee holds for each: over the targets after the
    warm-up (``T`` counting those), and over the warm-up's. The attributes (``alpha_``,
    ``n_updates_``, ...) read the map in use.
    A predictive with zero variance (a point mass) is returned unchanged, and not learnt from;
    nor is a mixture with such a component.

    The state is a few numbers per level and per window, independent of the stream's length.

    Parameters
    ----------
    regressor
        The regressor to recalibrate: its ``predict_one`` (its last step's, for a pipeline)
        must name ``with_dist`` (this package's regressors, river's
        ``linear_model.BayesianLinearRegression``, a pipeline ending in one). A model that
        recalibrates itself is refused: a ``Recalibrated`` (or a pipeline or wrapper ending in
        one), and ``EDOEBE()``, whose default ``recalibrate=True`` does (wrap
        ``EDOEBE(recalibrate=False)``).
    confidence_level
        The coverage of the interval of ``predict_one(x, with_interval=True)``, whose
        long-run miscoverage is guaranteed.
    step
        The step of the adaptive conformal update of the interval's miscoverage level after its
        first ``(0.3 / step)^2`` targets (larger ones before), in ``(0, 1)``: larger adapts
        faster, and noisier; the bound on the long-run error is of order ``1 / (step * T)``
        (above).
    levels
        The levels of the shape knots, strictly between ``(1 - confidence_level) / 2`` and
        ``(1 + confidence_level) / 2``; may be empty.
    level_step
        The step of the shape knots' updates after their first ``(0.3 / level_step)^2``
        targets (larger ones before), in ``(0, 1)``.
    windows
        The effective window lengths (each at least 2) of the location-scale corrections of a
        grossly wrong predictive; empty turns them off.
    margin
        By how much a location-scale correction's recent mean log score must beat the unmoved
        predictive's before it is used, in nats a sample, non-negative.
    gate
        Whether the distribution stays the wrapped model's own until its PITs depart
        significantly from uniform (see above).

    Examples
    --------
    >>> from river import datasets, linear_model, preprocessing
    >>> from river_doebe import metrics
    >>> from river_doebe.conf import Recalibrated

    river's ``BayesianLinearRegression`` on the TrumpApproval stream: its own 90% intervals hold
    too few of the targets (68%), the recalibrated distribution's and the intervals hold about
    the stated share, and the CRPS is halved.

    >>> plain = preprocessing.StandardScaler() | linear_model.BayesianLinearRegression()
    >>> model = Recalibrated(
    ...     preprocessing.StandardScaler() | linear_model.BayesianLinearRegression(),
    ...     confidence_level=0.9,
    ... )
    >>> own = metrics.IntervalCoverage(0.9) + metrics.CRPS()
    >>> recalibrated = metrics.IntervalCoverage(0.9) + metrics.CRPS()
    >>> inside = 0
    >>> for x, y in datasets.TrumpApproval():
    ...     own.update(y, plain.predict_one(x, with_dist=True))
    ...     recalibrated.update(y, model.predict_one(x, with_dist=True))
    ...     inside += y in model.predict_one(x, with_interval=True)
    ...     plain.learn_one(x, y)
    ...     model.learn_one(x, y)
    >>> round(own[0].get(), 2), round(recalibrated[0].get(), 2)  # 90% coverage
    (0.68, 0.91)
    >>> recalibrated[1].get() < 0.55 * own[1].get()  # CRPS
    True
    >>> round(inside / 1001, 2)
    0.91

    References
    ----------
    Gibbs, I. and Candès, E. (2021). Adaptive conformal inference under distribution shift.
    NeurIPS. Angelopoulos, A. N., Barber, R. F. and Bates, S. (2024). Online conformal
    prediction with decaying step sizes. ICML. Kuleshov, V., Fenner, N. and Ermon, S. (2018).
    Accurate uncertainties for deep learning using calibrated regression. ICML.

    """

    def __init__(
        self,
        regressor,
        confidence_level: float = 0.9,
        step: float = 0.01,
        levels: tuple = (0.25, 0.5, 0.75),
        level_step: float = 0.01,
        windows: tuple = (20, 200),
        margin: float = 1.0,
        gate: bool = False,
    ):
        self.regressor = regressor
        self.confidence_level = confidence_level
        self.step = step
        self.levels = levels
        self.level_step = level_step
        self.windows = windows
        self.margin = margin
        self.gate = gate

        c = _check_level("confidence_level", confidence_level)
        _check_level("step", step)
        _check_level("level_step", level_step)
        # a model that is not a regressor, or gives no distribution, would pass here and fail
        # at its first prediction, on an argument it does not take (with_dist)
        if not (hasattr(regressor, "predict_one") and hasattr(regressor, "learn_one")
                and is_regressor(regressor)):
            raise TypeError(
                f"regressor must be a river regressor (river.base.Regressor, or a pipeline "
                f"ending in one), got {_describe(regressor)}: Recalibrated maps a regressor's "
                "predictive distribution of the target; wrap a regressor whose predict_one "
                "takes with_dist, such as DOBE() or EDOEBE(recalibrate=False)"
            )
        itself = _recalibrating(regressor)
        if issubclass(type(itself), Recalibrated):
            raise ValueError(
                f"regressor={_describe(regressor)} recalibrates its predictive distribution "
                "itself (it is or ends in a Recalibrated): use it as it is, or wrap that "
                f"Recalibrated's own regressor ({_describe(itself.regressor)}) in a single "
                "Recalibrated with the settings wanted"
            )
        if itself is not None:
            raise ValueError(
                f"regressor={_describe(regressor)} recalibrates its predictive distribution "
                f"itself ({type(itself).__name__} with recalibrate=True, EDOEBE()'s default): "
                "wrap EDOEBE(recalibrate=False) instead"
            )
        if not gives_distributions(regressor):
            raise TypeError(
                f"regressor={_describe(regressor)} gives no predictive distribution: the "
                f"predict_one of {type(last_step(regressor)).__name__} takes no with_dist "
                "(river's convention, predict_one(x, with_dist=True)). Wrap a regressor that "
                "has one (DOBE(), EDOEBE(recalibrate=False), river's "
                "linear_model.BayesianLinearRegression(), or a pipeline ending in one); for "
                "intervals around a point regressor's predictions, use "
                "river.conf.RegressionJackknife"
            )
        if isinstance(levels, str | bytes) or not hasattr(levels, "__iter__") or any(
                isinstance(p, bool) or not isinstance(p, numbers.Real) for p in levels):
            raise ValueError(f"levels must be a sequence of numbers, got {levels!r}")
        shape = [float(p) for p in levels]
        lo, hi = 0.5 * (1.0 - c), 0.5 * (1.0 + c)
        if any(not (0.0 < p < 1.0) for p in shape) or len(set(shape)) != len(shape):
            raise ValueError(
                f"levels must be distinct numbers strictly between 0 and 1, got {levels!r}"
            )
        # a level at an end of the interval is that end's knot already
        shape = [p for p in shape if p not in (lo, hi)]
        if isinstance(windows, str | bytes) or not hasattr(windows, "__iter__"):
            raise ValueError(f"windows must be a sequence of numbers, got {windows!r}")
        wins = list(windows)
        if any(isinstance(w, bool) or not isinstance(w, numbers.Real) or not 2 <= w < math.inf
               for w in wins):
            raise ValueError(f"windows must be finite numbers of at least 2, got {windows!r}")
        if (isinstance(margin, bool) or not isinstance(margin, numbers.Real)
                or not 0.0 <= margin < math.inf):
            raise ValueError(f"margin must be a finite non-negative number, got {margin!r}")
        if not isinstance(gate, bool):
            raise ValueError(f"gate must be True or False, got {gate!r}")

        self._p_lo, self._p_hi = lo, hi
        self._shape_p = sorted(shape)
        # which of the three segments of g each shape knot lies in: below, inside, above the
        # interval's knots
        self._segment_arr = np.searchsorted([lo, hi], self._shape_p).astype(np.int64)
        self._shape_arr = np.array(self._shape_p, dtype=np.float64)
        # the map's images of its knots: 0, the levels and the interval's levels, 1
        self._kp = np.sort(np.concatenate(([0.0, lo, hi, 1.0], self._shape_p)))
        self._rho = np.array([1.0 - 1.0 / w for w in wins], dtype=np.float64)
        settings_ = np.zeros(_kernels.N_SETTINGS)
        settings_[_kernels.S_LEVEL] = c
        settings_[_kernels.S_STEP] = step
        settings_[_kernels.S_LEVEL_STEP] = level_step
        settings_[_kernels.S_RHO_SCORE] = 1.0 - 1.0 / min(wins) if wins else 0.0
        settings_[_kernels.S_MARGIN] = margin
        settings_[_kernels.S_GATE] = 1.0 if gate else 0.0
        settings_[_kernels.S_EARLY] = _kernels.EARLY_STEP
        settings_[_kernels.S_LEVEL_EARLY] = _kernels.EARLY_LEVEL_STEP
        settings_[_kernels.S_GATE_AVERAGE] = _kernels.GATE_AVERAGE
        self._settings = settings_
        self._reset()

    def __getstate__(self) -> dict:
        # The knots come back from a compiled kernel as a new array whose float64 dtype is, when
        # the kernel was loaded from Numba's on-disk cache, an unpickled copy of numpy's: pickle
        # memoises dtypes by identity, so two equal wrappers would pickle to other bytes
        # depending on where their kernels came from. The knots go with numpy's own dtype.
        state = self.__dict__.copy()
        state["_ku"] = self._ku.view(np.float64)
        state["_held"] = (self._held[0], self._held[1].view(np.float64))
        return state

    def __setstate__(self, state: dict) -> None:
        # the compiled update reads its settings by position, unchecked: a wrapper pickled with
        # another layout would be updated from the wrong slots
        settings = state.get("_settings")
        if settings is None or len(settings) != _kernels.N_SETTINGS:
            raise ValueError(
                "this Recalibrated was pickled by an earlier version of river-doebe, whose "
                "recalibration state this version cannot read: make a new one"
            )
        self.__dict__.update(state)
        if "_held" not in state:
            # pickled before the warm-up had a map of its own: the map in use is the warm
            # model's (it learnt nothing while the model warmed up)
            self._held = self._new_map()
            self._cold = False

    def _reset(self) -> None:
        self._state, self._ku = self._new_map()
        # the map not in use (``_state``, ``_ku``: the one in use) and whether the one in use
        # is the warm-up's (see :meth:`_use_map`)
        self._held = self._new_map()
        self._cold = False
        self._memo = None

    def _new_map(self) -> tuple[np.ndarray, np.ndarray]:
        """A map's state before any update and its knots for the first prediction."""
        state = _kernels.new_state(self.confidence_level, self._shape_p, len(self._rho))
        # (its Python twin: the same arithmetic, and making a model compiles nothing; the
        # compiled update computes the knots from then on)
        ku = _kernels.knots.py_func(state, self._settings, self._shape_arr, self._segment_arr)
        state[-ku.shape[0]:] = ku  # the gate's mean map starts there
        return state, ku

    def _use_map(self, warm: bool) -> None:
        """Put in use the map of the wrapped model's phase: the warm-up's while it is not
        ``warm``, the warm model's once it is; the other keeps its state, unused."""
        if warm == self._cold:
            (self._state, self._ku), self._held = self._held, (self._state, self._ku)
            self._cold = not warm

    def _warm(self) -> bool:
        return bool(getattr(self.regressor, "is_warm", True))

    # the state, read by name (it lives in one vector the compiled update writes)
    @property
    def alpha_(self) -> float:
        """The conformal step's miscoverage level."""
        return float(self._state[_kernels.ALPHA])

    @property
    def beta_(self) -> float:
        """The share of the interval's misses put below."""
        return float(self._state[_kernels.BETA])

    @property
    def n_updates_(self) -> int:
        """The targets learnt."""
        return int(self._state[_kernels.N_UPDATES])

    @property
    def n_outside_(self) -> int:
        """The targets learnt while ``alpha_`` was outside ``(0, 1)``."""
        return int(self._state[_kernels.N_OUTSIDE])

    @property
    def n_gated_(self) -> int:
        """With ``gate=True``: the targets learnt while the distribution was not the conformal
        map (the gate closed, or the mean map in use)."""
        return int(self._state[self._gate_at + _kernels.G_CLOSED])

    @property
    def gate_open_(self) -> bool:
        """With ``gate=True``: whether the next prediction's distribution is recalibrated."""
        return bool(self._state[self._gate_at + _kernels.G_OPEN])

    @property
    def _gate_at(self) -> int:
        return self._state.shape[0] - _kernels.GATE_SIZE - self._ku.shape[0]

    @property
    def _shape_v(self) -> list:
        k = len(self._shape_p)
        return self._state[_kernels.FIXED:_kernels.FIXED + k].tolist()

    def _window_stats(self, which: int) -> list:
        k, w = len(self._shape_p), len(self._rho)
        at = _kernels.FIXED + k + which * w
        return self._state[at:at + w].tolist()

    @property
    def _loc(self) -> list:
        return self._window_stats(0)

    @property
    def _var(self) -> list:
        return self._window_stats(1)

    @property
    def _score(self) -> list:
        return self._state[_kernels.FIXED + len(self._shape_p) + 2 * len(self._rho):
                           self._gate_at].tolist()

    @property
    def _last(self) -> float:
        return float(self._state[_kernels.LAST])

    @property
    def _step2(self) -> float:
        return float(self._state[_kernels.STEP2])

    @property
    def _wrapped_model(self):
        return self.regressor

    @classmethod
    def _unit_test_params(cls):
        from river import linear_model, preprocessing

        from river_doebe.learner import DOBE

        yield {"regressor": preprocessing.StandardScaler()
               | linear_model.BayesianLinearRegression()}
        yield {"regressor": DOBE(), "confidence_level": 0.8, "levels": (0.5,),
               "windows": (10,), "margin": 0.0, "gate": True}

    def _unit_test_skips(self):
        # the feature order of the wrapped model's arithmetic changes its predictions in the
        # last digit, which this check compares exactly; it is the wrapped model's property
        return {"check_shuffle_features_no_impact"}

    # ------------------------------------------------------------------ the map of a prediction
    def _base(self, dist):
        """``F'_t``: the wrapped predictive, or, when a correction is in use, the Gaussian with
        its mean moved by ``c`` standard deviations and its standard deviation scaled by
        ``s``."""
        state = self._state
        if state[_kernels.CORR] == 0.0:
            return dist
        mu, sigma = float(dist.mu), float(dist.sigma)
        sd = sigma * float(state[_kernels.CSCALE])
        if not (0.0 < sd * sd < math.inf):
            return dist
        return gaussian(mu + sigma * float(state[_kernels.CLOC]), sd * sd)

    @staticmethod
    def _is_point_mass(dist) -> bool:
        sigma = getattr(dist, "sigma", None)
        return sigma is not None and not (0.0 < float(sigma) < math.inf)

    def _conformal(self, dist):
        """``G_t``: the learnt map of ``F'_t``, whose central interval is the conformal one."""
        if self._is_point_mass(dist):
            return dist
        return RecalibratedDistribution._unchecked(self._base(dist), self._ku, self._kp)

    def _recalibrate(self, dist):
        """The distribution predicted: ``G_t``, or with ``gate=True`` the wrapped predictive
        (the identity map) while the gate is closed and the mean map while it is open on the
        longest window only."""
        if not self.gate or self._is_point_mass(dist):
            return self._conformal(dist)
        at = self._gate_at
        which = self._state[at + _kernels.G_SLOW]
        if self._state[at + _kernels.G_OPEN] == 0.0:
            return RecalibratedDistribution._unchecked(dist, _IDENTITY, _IDENTITY)
        if which == _kernels.G_MEAN:
            return RecalibratedDistribution._unchecked(
                self._base(dist), self._state[at + _kernels.GATE_SIZE:].copy(), self._kp)
        return self._conformal(dist)

    # ------------------------------------------------------------------ river's API
    def _arrays(self, x):
        """The wrapped model's predictive for ``x`` as arrays (its private
        ``_predictive_arrays``, this package's ensembles), copied so that they stay the
        prediction made now; ``None`` for a regressor without that view."""
        view = getattr(self.regressor, "_predictive_arrays", None)
        parts = None if view is None else view(x)
        if parts is None:
            return None
        mu, var, log_w, means, variances, scale, shift = parts
        # the weights as the model's mixture computes them (NumPy's exp, bit for bit)
        return mu, var, np.exp(log_w), means.copy(), variances.copy(), scale, shift

    def predict_one(self, x, with_dist: bool = False, with_interval: bool = False, **kwargs):
        """The wrapped model's point prediction; with ``with_dist=True`` the recalibrated
        distribution (a :class:`RecalibratedDistribution`); with ``with_interval=True`` the
        adaptive conformal interval at ``confidence_level`` (a ``river.conf.Interval``)."""
        self._use_map(self._warm())
        if not (with_dist or with_interval or kwargs):
            # a point: this package's ensembles give their predictive as arrays, and no
            # distribution is built for a prediction that does not need one
            parts = self._arrays(x)
            if parts is not None:
                self._memo = (dict(x), parts)
                return float(parts[0])
        dist = self.regressor.predict_one(x, with_dist=True, **kwargs)
        # learn_one reuses this prediction if it is asked for the same features
        self._memo = (dict(x), dist)
        if with_interval:
            return self._interval(dist)
        if with_dist:
            return self._recalibrate(dist)
        return float(dist.mu)

    def _interval(self, dist) -> Interval:
        """The adaptive conformal interval at ``confidence_level`` from the wrapped predictive
        ``dist``: the whole line while ``alpha_ <= 0``, empty while ``alpha_ >= 1``."""
        if self._is_point_mass(dist):
            return Interval(float(dist.mu), float(dist.mu))
        alpha = self.alpha_
        if alpha <= 0.0:
            return Interval(-math.inf, math.inf)
        if alpha >= 1.0:
            return Interval(math.inf, -math.inf)  # empty
        return self._conformal(dist).interval(self.confidence_level)

    def learn_one(self, x, y, **kwargs):
        if isinstance(y, bool) or not isinstance(y, numbers.Real) or not math.isfinite(y):
            raise ValueError(f"the target must be a finite number, got {y!r}")
        y = float(y)
        memo, self._memo = self._memo, None
        # the map of the phase the prediction was made in learns it (the warm-up's while the
        # model warms up), once the model took the sample (a sample it refuses changes nothing)
        self._use_map(self._warm())
        if memo is not None and memo[0] == x:
            pred = memo[1]
        else:
            pred = self._arrays(x)
            if pred is None:
                pred = self.regressor.predict_one(x, with_dist=True)
        self.regressor.learn_one(x, y, **kwargs)
        if isinstance(pred, tuple):
            self._update_arrays(pred, y)
        elif not self._is_point_mass(pred):
            self._update(pred, y)
        self._use_map(self._warm())

    def predict_learn_many(self, X, y, with_dist: bool = False) -> list:
        """For each row of ``X`` (a DataFrame or a list of dicts, in stream order), the
        prediction made before the row is learnt, then learn it: bit for bit what
        ``predict_one(x, with_dist=with_dist)`` then ``learn_one(x, y)`` row after row return
        and leave behind. Once the wrapped model is warm, its rows go through its own
        ``predict_learn_many`` (this package's block path) when it has one, and the
        recalibration takes their predictives in order."""
        return self._many(X, y, with_dist, want=True)

    def learn_many(self, X, y, **kwargs) -> None:
        """Learn the rows of ``X`` in order, as ``learn_one`` row after row would (bit for
        bit), the wrapped model's rows in its blocks once it is warm. (Keyword arguments are
        accepted, as river asks of a wrapper's methods, and not used, as by ``learn_one``.)"""
        self._many(X, y, False, want=False)

    def _many(self, X, y, with_dist: bool, want: bool):
        is_frame = hasattr(X, "columns")
        rows = (X.to_dict(orient="records") if is_frame
                else (X if isinstance(X, list) else list(X)))
        targets = list(y.tolist() if hasattr(y, "tolist") else y)
        if len(targets) != len(rows):
            raise ValueError(f"{len(rows)} rows and {len(targets)} targets")
        for i, t in enumerate(targets):
            if isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(t):
                raise ValueError(f"the target of row {i} must be a finite number, got {t!r}")
        out = []
        i = 0
        # the warm-up and a model without a block path: per sample
        block = getattr(self.regressor, "predict_learn_many", None)
        while i < len(rows) and (block is None or not getattr(self.regressor, "is_warm", True)):
            x, t = rows[i], float(targets[i])
            pred = self.predict_one(x, with_dist=with_dist) if want else None
            self.learn_one(x, t)
            out.append(pred)
            i += 1
        if i < len(rows):
            # warm for good: the wrapped model predicts then learns in blocks, and each of its
            # predictives, made before its row was learnt, is mapped then learnt in order
            rest = rows[i:] if not is_frame else X.iloc[i:]
            ys = [float(t) for t in targets[i:]]
            self._memo = None
            self._use_map(True)
            for dist, t in zip(block(rest, ys, with_dist=True), ys, strict=True):
                if want:
                    out.append(self._recalibrate(dist) if with_dist else float(dist.mu))
                if not self._is_point_mass(dist):
                    self._update(dist, t)
        return out if want else None

    def _update(self, dist, y: float) -> None:
        """The conformal steps and the corrections' statistics, from the
        prediction made before ``y`` was seen (one call of
        :func:`river_doebe.conf._kernels.update`, compiled or its Python twin: the same bits),
        and the knots for the next prediction."""
        weights = getattr(dist, "weights", None)
        if weights is None:  # a Gaussian
            mu, sigma = float(dist.mu), float(dist.sigma)
            weights, means, variances = _ONE, np.array([mu]), np.array([sigma * sigma])
        else:
            means, variances = dist.means, dist.variances
            mu, sigma = float(dist.mu), float(dist.sigma)
            if _has_point_mass(weights, variances):
                return
        self._ku = _UPDATE.update(
            self._state, self._settings, self._shape_arr, self._segment_arr, self._rho,
            self._ku, self._kp, weights, means, variances, mu, sigma, y)

    def _update_arrays(self, parts, y: float) -> None:
        """:meth:`_update` from the arrays of :meth:`_arrays`: the same numbers as from the
        distribution they make (its mixture is mapped to the target's units in the compiled
        update, with the model's arithmetic)."""
        mu, var, weights, means, variances, scale, shift = parts
        sigma = math.sqrt(var)
        if not 0.0 < sigma < math.inf:  # a point mass: not learnt from
            return
        self._ku = _UPDATE.update_affine(
            self._state, self._settings, self._shape_arr, self._segment_arr, self._rho,
            self._ku, self._kp, weights, means, variances, scale, shift, float(mu), sigma, y)
