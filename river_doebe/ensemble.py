"""Ensembles of DOBE learners: Bayesian model averaging, switching, and the E-DOEBE."""

from __future__ import annotations

import copy
import math

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
    check_transition,
    check_weight_floor,
)
from river_doebe._engine import WEIGHT_FLOOR, Engine, MemberSpec
from river_doebe._schema import Schema, check_frame, column_values
from river_doebe.basis import Linear
from river_doebe.distributions import GaussianMixture
from river_doebe.learner import DOBE, _ArrayRegressorMixin

__all__ = ["DOEBE", "SDOEBE", "EDOEBE", "edoebe_transition"]


def check_models(models, kind: type, name: str = "DOBE") -> None:
    """A non-empty list (or tuple) of ``kind`` learners."""
    if not isinstance(models, list | tuple) or not models:
        raise ValueError(f"models must be a non-empty list of {name} learners, got {models!r}")
    for i, m in enumerate(models):
        if not isinstance(m, kind):
            raise TypeError(f"models[{i}] is a {type(m).__name__}, expected a {name} learner")


def _member_specs(models, n_inputs: int) -> list[MemberSpec]:
    specs = []
    for m in models:
        basis = Linear() if m.basis is None else copy.deepcopy(m.basis)
        basis.initialize(n_inputs)
        specs.append(MemberSpec(basis, float(m.var_theta), float(m.var_eps), float(m.var_rw)))
    return specs


def _batch(X, feature_names) -> tuple[np.ndarray, list]:
    """A history for ``from_batch``: ``X`` as a float64 ``(n, D)`` array and the feature names
    (a DataFrame's columns, else ``feature_names``, else ``x0``, ``x1``, ...)."""
    columns = getattr(X, "columns", None)
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


def edoebe_transition(n_members: int, n_levels: int, delta: float) -> np.ndarray:
    """The E-DOEBE switching matrix (paper Sec. 4.2) for ``n_levels`` blocks of ``n_members``.

    Block ``(a, b)`` is ``(1 - (n_levels - 1) delta) I`` on the diagonal and ``delta I`` elsewhere:
    a member only ever switches to its own twins at the other random-walk levels, never across
    families, and every row sums to one.

    >>> edoebe_transition(2, 2, 0.1)
    array([[0.9, 0. , 0.1, 0. ],
           [0. , 0.9, 0. , 0.1],
           [0.1, 0. , 0.9, 0. ],
           [0. , 0.1, 0. , 0.9]])

    """
    if not 0.0 <= delta * (n_levels - 1) < 1.0:
        raise ValueError(
            f"delta={delta!r} with {n_levels} levels leaves no mass on the diagonal; "
            f"need 0 <= delta < {1.0 / max(n_levels - 1, 1)!r}"
        )
    block = np.full((n_levels, n_levels), delta)
    np.fill_diagonal(block, 1.0 - (n_levels - 1) * delta)
    return np.kron(block, np.eye(n_members))


def _check_edoebe_params(model, kind: type, name: str) -> None:
    """The checks an E-DOEBE (regressor or classifier) makes of its parameters."""
    from river_doebe.warmup import check_families

    check_families(model.families)
    check_int("n_warmup", model.n_warmup, 2)
    check_int("n_samples", model.n_samples, 1)
    if model.models is not None:
        check_models(model.models, kind, name)
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
    edoebe_transition(1, len(model._levels()), float(model.delta))
    check_seed(model.seed)
    check_weight_floor(model.weight_floor)
    check_starts(model.starts)
    check_bool("replay", model.replay)
    check_bool("verbose", model.verbose)


class _Ensemble(_ArrayRegressorMixin, base.MiniBatchRegressor):
    """Shared face of the ensembles: weights, members, mixture predictions."""

    def _transition(self, n_members: int):
        return None

    def _specs(self, n_inputs: int) -> list[MemberSpec]:
        return _member_specs(self.models, n_inputs)

    def _make_engine(self, n_inputs: int) -> Engine:
        specs = self._specs(n_inputs)
        return Engine(specs, self._transition(len(specs)), float(self.weight_floor))

    @property
    def weights(self) -> np.ndarray:
        """Normalised posterior weights of the members, after the last update.

        Aligned with :attr:`members`. Before any data they are uniform.
        """
        if self._engine is None:
            n = len(self._specs_preview())
            return np.full(n, 1.0 / n)
        return self._engine.weights

    def _specs_preview(self):
        return self.models

    @property
    def members(self) -> list[MemberSpec]:
        """The members' specifications (basis, var_theta, var_eps, var_rw), in weight order."""
        if self._engine is None:
            raise RuntimeError("the ensemble builds its members at the first sample")
        return self._engine.members

    def _dist_z(self, z):
        w, means, variances, mean, var = self._engine.mixture(z)
        return GaussianMixture._from_moments(w, means, variances, mean, var)

    def member_predictions(self, x: dict):
        """Each member's predictive ``(means, variances)`` for ``x`` and the weights that the
        ensemble's prediction for ``x`` uses (after switching). Dropped members give NaN."""
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).member_predictions(x)
        return self._engine.member_predictions(z)


class DOEBE(_Ensemble):
    """Bayesian model averaging of DOBE learners (OEBE when all are static; paper Sec. 3.1-3.2).

    Each member predicts ``N(mean_m, var_m)``; the ensemble's predictive is the mixture
    ``sum w_m N(mean_m, var_m)``. ``predict_one(x)`` returns its mean ``sum w_m mean_m``, and
    ``predict_one(x, with_dist=True)`` the whole mixture as a
    :class:`river_doebe.distributions.GaussianMixture`, whose ``mu`` and ``sigma`` are the
    moment-matched ``mean`` and ``sqrt(sum w_m (var_m + (mean_m - mean)^2))``. Once the target
    is seen, each weight is multiplied by the member's predictive density of it. The weights
    are kept in the log domain; a weight that falls below ``weight_floor`` is set to zero and its
    member is not updated any more. For static members the weights are the normalised model
    evidences.

    Parameters
    ----------
    models
        The members, as :class:`river_doebe.DOBE` learners (their parameters are used; each
        member gets its own copy of the basis).
    weight_floor
        Weights below it are zeroed and their members no longer updated, to save their work;
        0 keeps every member. The paper uses 1e-16, but a member that far behind can still come
        back under model averaging (37 nats of evidence), and pruning it there can drop a whole
        family that would have led later (CaData); the default 1e-100 prunes only members that
        would need 230 nats to return.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE, DOEBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures

    >>> ensemble = DOEBE([
    ...     DOBE(Linear(), var_eps=0.5),
    ...     DOBE(RandomFourierFeatures(20, lengthscale=2.0, seed=1), var_eps=0.1, var_rw=1e-3),
    ... ])
    >>> model = preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | ensemble)
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.36...
    >>> ensemble.weights.round(3)
    array([0., 1.])

    """

    def __init__(self, models: list, weight_floor: float = WEIGHT_FLOOR):
        self.models = models
        self.weight_floor = weight_floor
        check_models(models, DOBE)
        check_weight_floor(weight_floor)

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {
            "models": [
                DOBE(Linear(), var_eps=1.0),
                DOBE(RandomFourierFeatures(8, seed=3), var_rw=1e-3),
            ]
        }


class SDOEBE(_Ensemble):
    """Switching DOEBE: the weights take a Markov-chain step before each prediction (Sec. 3.3).

    Before predicting ``y_t`` the weights become ``w <- Q' w`` for the row-stochastic matrix
    ``transition`` (``Q[i, j]`` is the probability of switching from member ``i`` to member
    ``j``), computed in the log domain. A weight that collapsed to zero can therefore come back
    once its member predicts well again. With the identity matrix this is :class:`DOEBE`.

    Parameters
    ----------
    models
        The members, as :class:`river_doebe.DOBE` learners.
    transition
        A row-stochastic ``(M, M)`` matrix (nested lists or an array).
    weight_floor
        Posterior weights below it are zeroed before the next switching step.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE, SDOEBE
    >>> from river_doebe.basis import Linear

    >>> model = preprocessing.TargetStandardScaler(
    ...     preprocessing.StandardScaler()
    ...     | SDOEBE(
    ...         [DOBE(Linear(), var_eps=0.5), DOBE(Linear(), var_eps=0.5, var_rw=1e-2)],
    ...         transition=[[0.99, 0.01], [0.01, 0.99]],
    ...     )
    ... )
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.51...

    """

    def __init__(self, models: list, transition, weight_floor: float = WEIGHT_FLOOR):
        self.models = models
        self.transition = transition
        self.weight_floor = weight_floor
        check_models(models, DOBE)
        check_transition(transition, len(models))
        check_weight_floor(weight_floor)

    def _transition(self, n_members: int):
        return self.transition

    @classmethod
    def _unit_test_params(cls):
        yield {
            "models": [DOBE(Linear(), var_eps=1.0), DOBE(Linear(), var_eps=1.0, var_rw=1e-2)],
            "transition": ((0.95, 0.05), (0.05, 0.95)),
        }


class _WarmupFace:
    """What the E-DOEBE regressor and classifier share about their member blocks and warm-up.

    The host stores the constructor parameters ``rw_variances``, ``static``, ``delta``,
    ``models`` and ``n_warmup``, counts samples in ``_n_seen``, keeps its warm-up state in
    ``_warm`` (with a sample count ``n``) and builds ``_engine`` in ``_finish_warmup``.
    """

    @property
    def n_samples_seen(self) -> int:
        """How many samples the model has learnt from (warm-up included)."""
        return self._n_seen

    @property
    def is_warm(self) -> bool:
        """Whether the warm-up is over (always true with explicit ``models`` once the first
        sample has been seen)."""
        return self._engine is not None

    def _levels(self) -> list[float]:
        """The random-walk variance of each block of members: the dynamic levels, then 0 for the
        static block (when ``static``)."""
        return [float(v) for v in self.rw_variances] + ([0.0] if self.static else [])

    # the input schema: free while the fallback learns, fixed by the members' fit
    def _schema_is_free(self) -> bool:
        if self.models is not None:
            return super()._schema_is_free()
        return self._engine is None

    def _fixed_because(self) -> str:
        if self.models is not None:
            return super()._fixed_because()
        return "the members were fitted on the warm-up window's inputs"

    def _grow(self, n_inputs: int) -> None:
        if self._engine is None:
            self._warm.grow(n_inputs)
        else:
            super()._grow(n_inputs)

    def _end_warmup(self) -> None:
        """Fit the members; if that fails on the window's data, say so once and go on with the
        fallback, which then is the model (it keeps learning, and no longer keeps samples)."""
        import warnings

        try:
            self._finish_warmup()
        except (RuntimeError, ValueError, ArithmeticError, np.linalg.LinAlgError) as err:
            warnings.warn(
                f"{type(self).__name__}: the warm-up failed on its window ({err}); the model "
                "goes on with its warm-up fallback, which keeps learning",
                RuntimeWarning,
                stacklevel=4,
            )
            self._warm.drop_window()

    def _warmup_due(self) -> bool:
        return self._warm.keep_window and self._warm.n >= self.n_warmup

    def _transition(self, n_members: int):
        levels = len(self._levels())
        return edoebe_transition(n_members // levels, levels, float(self.delta))

    def _specs_preview(self):
        if self.models is None:
            return [None]
        return [None] * (len(self.models) * len(self._levels()))

    def finish_warmup(self):
        """End the warm-up now, on the samples seen so far (at least 2), instead of at
        ``n_warmup``. Useful when a stream is shorter than the window."""
        if self._engine is not None:
            return self
        if self._warm is None or self._warm.n < 2:
            raise RuntimeError("the warm-up needs at least 2 samples")
        if not self._warm.keep_window:
            raise RuntimeError("the warm-up failed already; the model is its fallback")
        import warnings

        warnings.warn(
            f"warm-up ended early on {self._warm.n} samples instead of {self.n_warmup}",
            RuntimeWarning,
            stacklevel=2,
        )
        self._finish_warmup()
        return self

    def describe(self) -> list[dict]:
        """One dict per member: family, random-walk variance, variances, hyperparameters, mode,
        and current weight."""
        if self._engine is None:
            raise RuntimeError("the ensemble has no members before its warm-up ends")
        out = []
        weights = self._engine.weights
        fitted = self._fitted or [None] * self._engine.M
        for k, m in enumerate(self._engine.members):
            info = fitted[k % len(fitted)] if self._fitted else None
            out.append(
                {
                    "family": type(m.basis).__name__,
                    "var_rw": m.var_rw,
                    "dynamic": m.var_rw > 0,
                    "var_theta": m.var_theta,
                    "var_eps": m.var_eps,
                    "hyper": dict(zip(m.basis.hyper_names(), m.basis.get_hyper().tolist())),
                    "mode_index": None if info is None else info.mode_index,
                    "is_mode": None if info is None else info.is_mode,
                    "weight": float(weights[k]),
                }
            )
        return out


class EDOEBE(_WarmupFace, _Ensemble):
    """Ensemble of DOEBEs (paper Sec. 4.2): the drop-in model of river-doebe.

    ``EDOEBE()`` needs no arguments. For its first ``n_warmup`` samples it predicts with a simple
    Bayesian fallback (linear regression on inputs and target standardised with running
    statistics) while it keeps the window. At ``n_warmup`` it freezes a standardisation of ``x``
    and ``y`` (mean and standard deviation of the window), fits the hyperparameters of every basis
    family by empirical Bayes from several starting length scales, draws ``n_samples - 1`` more
    members around each mode from its Laplace approximation, gives every member a dynamic twin
    per random-walk variance, replays the window through the members' filters and streams on.
    The weights start uniform after the warm-up: the window's predictive densities are
    in-sample for the fitted hyperparameters and would favour whichever family overfits it.
    Predictions and distributions are in the original units of ``y``.

    The weights switch with the block matrix of :func:`edoebe_transition`: a member moves to one
    of its own twins with probability ``delta`` each step, so a collapse of the static/dynamic
    weights early in a stream can be undone later.

    With ``models`` given, the warm-up is skipped: those members (as :class:`river_doebe.DOBE`
    learners) and their twins are used as they are, on inputs and targets as given.

    Parameters
    ----------
    families
        The basis families: names (``"hsgp"``, ``"rff"``, ``"rbf"``, ``"poly"``, ``"linear"``,
        see :func:`river_doebe.warmup.family_templates`) and/or basis templates whose
        hyperparameters are fitted. ``None`` means the paper's Experiment 3 set, ``("hsgp",
        "rff", "rbf")``: additive HSGP (about 100 features), random Fourier features (50
        frequencies) and an RBF network (100 centres), all with ARD length scales.
    n_warmup
        Length of the warm-up window.
    n_samples
        Members per mode: the empirical Bayes estimate and ``n_samples - 1`` draws.
    rw_variances
        The random-walk variances of the dynamic twins.
    delta
        Switching probability between twins.
    seed
        Seed of the random parts (random features, centres, draws); same seed, same ensemble.
    models
        Explicit members (skips the warm-up, see above).
    weight_floor
        Posterior weights below it are zeroed before the next switching step, and their
        members no longer updated (the paper: 1e-16; see :class:`river_doebe.DOEBE` for the
        default 1e-100).
    starts
        Starting length scales of the optimiser, as multiples of each input's warm-up range.
    replay
        Whether the warm-up window is filtered through the members after the fit.
    verbose
        Print the progress of the warm-up.
    static
        Whether the static members are kept. With ``static=False`` and one random-walk level
        the ensemble is the paper's DOE-X (every member dynamic, plain model averaging); with
        ``rw_variances=()`` it is OE-X (every member static).

    Examples
    --------

    >>> from river import evaluate, metrics
    >>> from river_doebe import EDOEBE
    >>> from river_doebe.datasets import Friedman1

    >>> model = EDOEBE(n_warmup=300, n_samples=2, seed=1)
    >>> evaluate.progressive_val_score(Friedman1(n_samples=1500), model, metrics.R2())
    R2: 0.9...
    >>> len(model.members), sorted({m["family"] for m in model.describe()})
    (36, ['HilbertGP', 'RBFNetwork', 'RandomFourierFeatures'])

    The predictive distribution is the mixture of the members' Gaussians, in the units of ``y``;
    its ``mu`` is the point prediction:

    >>> x = {i: 0.5 for i in range(10)}
    >>> dist = model.predict_one(x, with_dist=True)
    >>> import math
    >>> dist.mu == model.predict_one(x)
    True
    >>> math.isclose(dist.log_pdf(15.0), model.log_density_one(x, 15.0))
    True

    Explicit members, no warm-up:

    >>> from river import datasets, preprocessing
    >>> from river_doebe import DOBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> ensemble = EDOEBE(
    ...     models=[DOBE(Linear(), var_eps=0.5), DOBE(RandomFourierFeatures(20, seed=1))],
    ...     rw_variances=(1e-3,),
    ... )
    >>> for m in ensemble.clone()._build_specs(3):
    ...     print(type(m.basis).__name__, m.var_rw)
    Linear 0.001
    RandomFourierFeatures 0.001
    Linear 0.0
    RandomFourierFeatures 0.0

    References
    ----------
    1. Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
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
        _check_edoebe_params(self, DOBE, "DOBE")
        self._std = None
        self._warm = None
        self._fitted: list = []
        self._n_seen = 0

    # ------------------------------------------------------------------ explicit members
    def _build_specs(self, n_inputs: int) -> list[MemberSpec]:
        base_specs = _member_specs(self.models, n_inputs)
        return [
            MemberSpec(copy.deepcopy(s.basis), s.var_theta, s.var_eps, level)
            for level in self._levels()
            for s in base_specs
        ]

    def _specs(self, n_inputs: int) -> list[MemberSpec]:
        return self._build_specs(n_inputs)

    # ------------------------------------------------------------------ warm-up mode
    def _on_schema(self, schema) -> None:
        if self.models is not None:
            return super()._on_schema(schema)
        from river_doebe.warmup import Fallback

        self._warm = Fallback(len(schema))

    def _predict_z(self, z):
        if self._engine is None:
            return self._warm.predict(z)
        if self._std is None:
            return self._engine.predict(z)
        mean, var = self._engine.predict(self._std.x(z))
        return self._std.y_back(mean, var)

    def _dist_z(self, z):
        if self._engine is None:
            mean, var = self._warm.predict(z)
            return GaussianMixture._from_moments([1.0], [mean], [var], mean, var)
        if self._std is None:
            return super()._dist_z(z)
        w, means, variances, mean, var = self._engine.mixture(self._std.x(z))
        return GaussianMixture._from_moments(
            w, *self._std.y_back(means, variances), *self._std.y_back(mean, var)
        )

    def _learn_z(self, z, y):
        self._n_seen += 1
        if self._engine is None:
            self._warm.learn(z, y)
            if self._warmup_due():
                self._end_warmup()
            return
        if self._std is None:
            self._engine.learn(z, y)
        else:
            self._engine.learn(self._std.x(z), self._std.y(y))

    def _log_density_z(self, z, y):
        if self._engine is None:
            mean, var = self._warm.predict(z)
            return -0.5 * (math.log(2 * math.pi * var) + (y - mean) ** 2 / var)
        if self._std is None:
            return self._engine.log_density(z, y)
        return float(
            self._engine.log_density(self._std.x(z), self._std.y(y)) - math.log(self._std.y_scale)
        )

    def member_predictions(self, x: dict):
        """Each member's predictive ``(means, variances)`` for ``x`` in the units of the target,
        and the weights that the ensemble's prediction uses (after switching). Dropped members
        give NaN. Before the warm-up ends there are no members yet."""
        z = self._predict_array(x)
        if self._engine is None:
            raise RuntimeError("the ensemble has no members before its warm-up ends")
        if self._std is None:
            return self._engine.member_predictions(z)
        mean, var, w = self._engine.member_predictions(self._std.x(z))
        return *self._std.y_back(mean, var), w

    def _finish_warmup(self) -> None:
        from river_doebe.warmup import fit_ensemble

        X, y = self._warm.window()
        names = self._schema.names if self._schema is not None else None
        self._std, self._engine, self._fitted = fit_ensemble(
            X, y, names=names, families=self.families, n_samples=int(self.n_samples),
            levels=self._levels(), delta=float(self.delta), weight_floor=float(self.weight_floor),
            starts=tuple(self.starts), seed=self.seed, replay=bool(self.replay),
            verbose=bool(self.verbose),
        )
        self._warm = None

    @classmethod
    def from_batch(cls, X, y, feature_names=None, **params) -> EDOEBE:
        """Warm an E-DOEBE up on a history ``X (n, D)``, ``y (n,)`` and return it, ready to
        stream. The features are named by ``X``'s columns when it is a DataFrame, else by
        ``feature_names`` (default ``x0``, ``x1``, ...); the dicts of the stream must use those
        names. ``params`` are the constructor's (``models`` excluded).
        """
        from river_doebe.warmup import Fallback

        if params.get("models") is not None:
            raise ValueError("from_batch warms a model up; explicit models need no warm-up")
        X, names = _batch(X, feature_names)
        y = np.asarray(y, dtype=np.float64).ravel()
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"X must be (n, D) and y (n,), got {X.shape} and {y.shape}")
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ValueError("X and y must be finite")
        params.setdefault("n_warmup", max(2, X.shape[0]))
        model = cls(**params)
        model._schema = Schema(names)
        order = [names.index(n) for n in model._schema.names]
        model._warm = Fallback.from_window(X[:, order], y)
        model._n_seen = X.shape[0]
        model._finish_warmup()
        return model

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {
            "families": [RandomFourierFeatures(5, seed=1)],
            "n_warmup": 20,
            "n_samples": 2,
            "starts": (1.0,),
            "seed": 1,
        }
        yield {
            "models": [DOBE(Linear(), var_eps=1.0), DOBE(RandomFourierFeatures(8, seed=3))],
        }
