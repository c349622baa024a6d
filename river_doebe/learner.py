"""One Bayesian basis-expansion learner (DOBE), as a river regressor."""

from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np
from river import base

from river_doebe._checks import check_positive, check_random_walk
from river_doebe._engine import Engine, FilterError, MemberSpec
from river_doebe._schema import Schema, check_frame, check_target, check_targets
from river_doebe.basis import Basis, Linear
from river_doebe.distributions import gaussian

__all__ = ["DOBE"]


def check_basis(basis) -> None:
    """``None`` or a basis expansion of :mod:`river_doebe.basis`."""
    if basis is not None and not isinstance(basis, Basis):
        raise TypeError(
            "basis must be a basis from river_doebe.basis (e.g. RandomFourierFeatures(50)) or "
            f"None, got {type(basis).__name__} {basis!r}"
        )


class _ArrayRegressorMixin:
    """dict <-> array plumbing shared by every estimator of the package (the classifiers too).

    The input policy (see :mod:`river_doebe._schema`): the first sample learnt fixes the schema
    and calls ``_on_schema`` (by default: build the engine with ``_make_engine`` and set it up);
    a later sample with new features grows it (``_grow``) while ``_schema_is_free()``, else the
    new features are ignored with one warning each. Predictions never change the schema: before
    the first sample is learnt they come from a throwaway copy (the prior predictive). Every
    river method goes through the array hooks ``_predict_z``, ``_learn_z`` and
    ``_log_density_z``, which a model that transforms arrays or targets (the warm-up E-DOEBE)
    overrides. A sample the filters refuse (:class:`river_doebe._engine.FilterError`) is
    reported naming its largest input, with the model unchanged.
    """

    _engine: Engine | None = None
    _schema: Schema | None = None
    _ignored: frozenset = frozenset()

    # hooks ---------------------------------------------------------------
    def _make_engine(self, n_inputs: int) -> Engine:  # pragma: no cover - abstract
        raise NotImplementedError

    def _on_schema(self, schema: Schema) -> None:
        engine = self._make_engine(len(schema))
        engine.setup(len(schema))
        self._engine = engine

    def _schema_is_free(self) -> bool:
        """Whether a new feature may still join the schema."""
        return self._engine is None or self._engine.can_grow

    def _fixed_because(self) -> str:
        """Why the schema no longer grows, for the warning."""
        rigid = sorted(
            {type(m.basis).__name__ for m in self._engine.members if not m.basis.can_grow}
        )
        return f"the basis {', '.join(rigid)} cannot take new inputs exactly"

    def _grow(self, n_inputs: int) -> None:
        self._engine.grow(n_inputs)

    def _predict_z(self, z: np.ndarray) -> tuple[float, float]:
        return self._engine.predict(z)

    def _learn_z(self, z: np.ndarray, y: float) -> None:
        self._engine.learn(z, y)

    def _log_density_z(self, z: np.ndarray, y: float) -> float:
        return self._engine.log_density(z, y)

    # dict / frame -> array -----------------------------------------------
    def _learn_array(self, x: dict):
        """The sample as an array for learning, and an undo for a schema that had to grow (a
        callable, or None): the caller undoes the growth if the sample is then refused."""
        schema = self._schema
        if schema is None:
            schema = Schema.from_sample(x)
            z = schema.to_array(x)
            undo = self._snapshot()
            self._on_schema(schema)
            self._schema = schema
            return z, undo
        z, new = schema.to_array_and_new(x)
        if not new:
            return z, None
        if not self._schema_is_free():
            self._ignore(new)
            return z, None
        grown = schema.extend(new)
        z = grown.to_array(x)  # the new values are validated before anything changes
        undo = self._snapshot()
        self._grow(len(grown))
        self._schema = grown
        return z, undo

    def _snapshot(self):
        """A callable that puts the model's state back as it is now (rarely needed: a sample
        that grew the schema and was then refused)."""
        saved = copy.deepcopy(self.__dict__)

        def restore():
            self.__dict__.clear()
            self.__dict__.update(saved)

        return restore

    def _ignore(self, names) -> None:
        fresh = [n for n in names if n not in self._ignored]
        if fresh:
            warnings.warn(
                f"{type(self).__name__}: feature(s) {fresh} are not in the input schema, which "
                f"no longer grows ({self._fixed_because()}); they are ignored",
                RuntimeWarning,
                stacklevel=4,
            )
            self._ignored = self._ignored | frozenset(fresh)

    def _predict_array(self, x: dict) -> np.ndarray | None:
        """The sample as an array for predicting (``None`` before any schema)."""
        if self._schema is None:
            if not isinstance(x, dict):
                raise TypeError(f"expected a dict of features, got {type(x).__name__}")
            return None
        return self._schema.to_array(x)

    def _ghost(self, names):
        """A fresh copy of the model with the schema ``names`` and nothing learnt: what the
        model predicts before it has learnt anything (its prior predictive), without fixing
        its own schema."""
        ghost = self.clone()
        schema = Schema(names)
        ghost._on_schema(schema)
        ghost._schema = schema
        return ghost

    def _frame_for_learning(self, X):
        """The DataFrame ``X`` as an array for learning, and a callable that commits the schema
        (fixed, grown or with ignored columns) once everything has been validated."""
        check_frame(X)
        schema = self._schema
        if schema is None:
            if X.shape[1] == 0:
                raise ValueError("the batch has no features, so no input schema can be fixed")
            schema = Schema(X.columns)
            Z = schema.frame_to_array(X)

            def commit():
                self._on_schema(schema)
                self._schema = schema

            return Z, commit
        new = schema.frame_new_names(X)
        if new and self._schema_is_free():
            grown = schema.extend(new)
            Z = grown.frame_to_array(X)

            def commit():
                self._grow(len(grown))
                self._schema = grown

            return Z, commit
        Z = schema.frame_to_array(X)
        return Z, (lambda: self._ignore(new)) if new else (lambda: None)

    def _refused(self, err: FilterError, x: dict, what: str) -> FilterError:
        """The engine's refusal, reworded for the user: what was refused, and the input most
        likely to blame."""
        largest = None
        for name, v in x.items():
            if isinstance(v, numbers.Real) and (largest is None or abs(v) > abs(largest[1])):
                largest = (name, v)
        hint = f"; its largest input is {largest[0]!r} = {largest[1]!r}" if largest else ""
        return FilterError(
            f"{type(self).__name__} cannot {what} this sample safely ({err}){hint}. The model "
            "is unchanged; scale the inputs (e.g. preprocessing.StandardScaler) or drop the "
            "sample"
        )

    def clone(self, new_params: dict | None = None, include_attributes: bool = False):
        # river's Base.clone looks at the first item of every tuple parameter, which fails on an
        # empty one (``rw_variances=()``): clone with a stand-in, then restore the value
        empty = [k for k, v in self._get_params().items() if isinstance(v, tuple) and not v]
        stand_in = {k: [] for k in empty if k not in (new_params or {})}
        clone = super().clone({**stand_in, **(new_params or {})}, include_attributes)
        for k in stand_in:
            setattr(clone, k, ())
        return clone

    # river API -----------------------------------------------------------
    def predict_one(self, x: dict, with_dist: bool = False):
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).predict_one(x, with_dist=with_dist)
        try:
            if with_dist:
                return self._dist_z(z)
            return self._predict_z(z)[0]
        except FilterError as err:
            raise self._refused(err, x, "predict") from None

    def learn_one(self, x: dict, y: float) -> None:
        y = check_target(y)
        z, undo = self._learn_array(x)
        try:
            self._learn_z(z, y)
        except FilterError as err:
            if undo is not None:
                undo()
            raise self._refused(err, x, "learn") from None

    def learn_many(self, X, y) -> None:
        """Learn the rows of a DataFrame in order. Everything is validated first (the batch is
        refused as a whole, with the model unchanged); a row the filters cannot take safely
        raises :class:`river_doebe._engine.FilterError` naming its position, with the rows
        before it learnt."""
        ys = check_targets(y, len(X))
        Z, commit = self._frame_for_learning(X)
        commit()
        for i in range(Z.shape[0]):
            try:
                self._learn_z(Z[i], float(ys[i]))
            except FilterError as err:
                raise FilterError(f"row {i} of the batch cannot be learnt safely ({err}); the "
                                  f"{i} rows before it were learnt") from None

    def predict_many(self, X):
        import pandas as pd

        check_frame(X)
        if self._schema is None:
            return self._ghost(X.columns).predict_many(X)
        Z = self._schema.frame_to_array(X)
        means = [self._predict_z(Z[i])[0] for i in range(Z.shape[0])]
        return pd.Series(means, index=X.index, dtype=float)

    def log_density_one(self, x: dict, y: float) -> float:
        """Exact log density of ``y`` under the predictive for ``x``, before learning it.

        For an ensemble this is the mixture density ``log sum_m w_m N(y; mean_m, var_m)``, which
        is at least as high as the density of the moment-matched Gaussian of ``predict_one``.
        """
        y = check_target(y)
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).log_density_one(x, y)
        try:
            return self._log_density_z(z, y)
        except FilterError as err:
            raise self._refused(err, x, "predict") from None

    def _dist_z(self, z: np.ndarray):
        """The predictive distribution for ``z`` (a Gaussian; the ensembles return their
        mixture)."""
        mean, var = self._predict_z(z)
        return gaussian(mean, var)

    @property
    def n_samples_seen(self) -> int:
        """How many samples the model has learnt from."""
        return 0 if self._engine is None else self._engine.n_updates


class DOBE(_ArrayRegressorMixin, base.MiniBatchRegressor):
    """Dynamic online basis expansion: Bayesian linear regression on a basis, Kalman-filtered.

    The model is ``y = phi(x)' theta + eps`` with prior ``theta ~ N(0, var_theta I)`` and noise
    ``eps ~ N(0, var_eps)``. Before every step the weights may take a random-walk step of variance
    ``var_rw`` (paper Sec. 3.2); ``var_rw = 0`` is the static learner, whose online posterior is
    exactly the batch Bayesian posterior. Each step costs ``O(F^2)`` for ``F`` basis functions,
    and runs in compiled code.

    Input policy (the README's): the first sample learnt fixes the input schema (names sorted);
    a feature that arrives later joins it when the basis can take it exactly (``Linear``,
    ``AdditivePolynomial``, and random Fourier features or RBF networks with one length scale),
    else it is ignored with a warning; ``predict_one`` never changes the schema; missing features
    count as 0; NaN, infinity or non-numeric values raise before any state changes. Inputs are
    used as given: put a scaler in front for bases with length scales (or use
    :class:`river_doebe.EDOEBE`, which standardises by itself). Static learners keep a square
    root of their covariance, so unscaled inputs such as timestamps cannot break it.

    Parameters
    ----------
    basis
        A basis from :mod:`river_doebe.basis`. ``None`` means :class:`river_doebe.basis.Linear`
        (Bayesian linear regression with a bias).
    var_theta
        Prior variance of the weights.
    var_eps
        Observation noise variance.
    var_rw
        Random-walk variance added to the weights' covariance before each step (0: static).

    Attributes
    ----------
    log_evidence_
        Sum of the log predictive densities of every target learnt so far; for a static learner
        this is the log marginal likelihood of the data seen.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures

    Random Fourier features on standardised inputs and target, with a slow random walk:

    >>> model = preprocessing.TargetStandardScaler(
    ...     preprocessing.StandardScaler()
    ...     | DOBE(RandomFourierFeatures(50, lengthscale=5.0, seed=1), var_eps=0.1, var_rw=1e-3)
    ... )
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.37...

    The predictive distribution is a ``river.proba.Gaussian``; with a linear basis and a static
    learner it is exactly the Bayesian linear-regression posterior predictive:

    >>> blr = DOBE(Linear(), var_theta=10.0, var_eps=0.01)
    >>> for i in range(50):
    ...     blr.learn_one({"x": i / 10}, 2.0 * i / 10 + 1.0)
    >>> dist = blr.predict_one({"x": 6.0}, with_dist=True)
    >>> round(dist.mu, 2), round(dist.sigma, 2)
    (13.0, 0.11)

    References
    ----------
    1. Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
       Transactions on Machine Learning Research.
    2. Bishop, C. M. (2006). Pattern Recognition and Machine Learning, Chapter 3.

    """

    def __init__(
        self,
        basis: Basis | None = None,
        var_theta: float = 1.0,
        var_eps: float = 0.25,
        var_rw: float = 0.0,
    ):
        self.basis = basis
        self.var_theta = var_theta
        self.var_eps = var_eps
        self.var_rw = var_rw
        check_basis(basis)
        check_positive("var_theta", var_theta)
        check_positive("var_eps", var_eps)
        check_random_walk(var_rw, var_theta)

    def _spec(self, basis) -> MemberSpec:
        return MemberSpec(basis, float(self.var_theta), float(self.var_eps), float(self.var_rw))

    def _make_engine(self, n_inputs: int) -> Engine:
        basis = Linear() if self.basis is None else copy.deepcopy(self.basis)
        return Engine([self._spec(basis)])

    @property
    def _basis(self):
        return self._engine.members[0].basis if self._engine is not None else self.basis

    @property
    def log_evidence_(self) -> float:
        return 0.0 if self._engine is None else float(self._engine.log_evidence)

    @property
    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the posterior mean ``(F,)`` and covariance ``(F, F)`` of the weights."""
        if self._engine is None:
            raise RuntimeError("the model has not seen any data yet")
        return self._engine.posterior(0)

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {}
        yield {"basis": RandomFourierFeatures(n_frequencies=10, seed=1), "var_rw": 1e-3}
