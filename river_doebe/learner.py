"""One Bayesian basis-expansion learner (DOBE), as a river regressor."""

from __future__ import annotations

import copy

import numpy as np
from river import base

from river_doebe._engine import Engine, MemberSpec
from river_doebe._schema import Schema, check_target
from river_doebe.basis import Basis, Linear
from river_doebe.distributions import gaussian

__all__ = ["DOBE"]


class _ArrayRegressorMixin:
    """dict <-> array plumbing shared by the learner and the ensembles.

    The schema is fixed at the first sample (``_ready``), which then calls ``_on_schema`` (by
    default: build the engine with ``_make_engine`` and set it up). Every river method goes
    through the array hooks ``_predict_z``, ``_learn_z`` and ``_log_density_z``, which a model
    that transforms arrays or targets (the warm-up E-DOEBE) overrides.
    """

    _engine: Engine | None = None
    _schema: Schema | None = None

    # hooks ---------------------------------------------------------------
    def _make_engine(self, n_inputs: int) -> Engine:  # pragma: no cover - abstract
        raise NotImplementedError

    def _on_schema(self, schema: Schema) -> None:
        engine = self._make_engine(len(schema))
        engine.setup(len(schema))
        self._engine = engine

    def _predict_z(self, z: np.ndarray) -> tuple[float, float]:
        return self._engine.predict(z)

    def _learn_z(self, z: np.ndarray, y: float) -> None:
        self._engine.learn(z, y)

    def _log_density_z(self, z: np.ndarray, y: float) -> float:
        return self._engine.log_density(z, y)

    def _ready(self, x: dict) -> np.ndarray:
        if self._schema is None:
            schema = Schema.from_sample(x)
            z = schema.to_array(x)
            self._on_schema(schema)
            self._schema = schema
            return z
        return self._schema.to_array(x)

    def _ready_frame(self, X) -> np.ndarray:
        if self._schema is None:
            if X.shape[1] == 0:
                raise ValueError("the batch has no features, so no input schema can be fixed")
            schema = Schema(X.columns)
            Z = schema.frame_to_array(X)
            self._on_schema(schema)
            self._schema = schema
            return Z
        return self._schema.frame_to_array(X)

    # river API -----------------------------------------------------------
    def predict_one(self, x: dict, with_dist: bool = False):
        z = self._ready(x)
        if with_dist:
            return self._dist_z(z)
        return self._predict_z(z)[0]

    def learn_one(self, x: dict, y: float) -> None:
        y = check_target(y)
        self._learn_z(self._ready(x), y)

    def learn_many(self, X, y) -> None:
        Z = self._ready_frame(X)
        ys = np.asarray(y, dtype=np.float64)
        if ys.shape != (Z.shape[0],):
            raise ValueError(f"got {Z.shape[0]} rows of features but {ys.size} targets")
        if not np.isfinite(ys).all():
            raise ValueError("the targets contain NaN or infinite values")
        for i in range(Z.shape[0]):
            self._learn_z(Z[i], float(ys[i]))

    def predict_many(self, X):
        import pandas as pd

        Z = self._ready_frame(X)
        means = [self._predict_z(Z[i])[0] for i in range(Z.shape[0])]
        return pd.Series(means, index=X.index, dtype=float)

    def log_density_one(self, x: dict, y: float) -> float:
        """Exact log density of ``y`` under the predictive distribution for ``x``, before learning.

        For an ensemble this is the mixture density ``log sum_m w_m N(y; mean_m, var_m)``, which
        is at least as high as the density of the moment-matched Gaussian of ``predict_one``.
        """
        y = check_target(y)
        return self._log_density_z(self._ready(x), y)

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

    Input policy: the schema is fixed by the first sample (names sorted); missing features count
    as 0; features not in the first sample are ignored; NaN, infinity or non-numeric values raise
    before any state changes. Inputs are used as given: put a scaler in front for bases with
    length scales (or use :class:`river_doebe.EDOEBE`, which standardises by itself).

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
        # validate early, with the message the engine would give later
        Engine([self._spec(Linear())])

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
