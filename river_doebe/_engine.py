"""The array engine behind every regressor: a stack of members, their filters and their weights.

River estimators (:mod:`river_doebe.learner`, :mod:`river_doebe.ensemble`) are thin over this: they
turn dicts into arrays with :class:`river_doebe._schema.Schema` and call :meth:`Engine.predict`
and :meth:`Engine.learn`. One sample costs one call per basis family (featurise), one Kalman
predict over the whole stack, one update, and the weight steps, all in Numba.

The work of a predict is cached: a ``learn`` that follows with the same ``z`` (as in progressive
validation) reuses the features, ``Sigma phi`` and the switched weights instead of recomputing them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from river_doebe import filtering
from river_doebe.basis.base import Basis, stack_params

__all__ = ["Engine", "MemberSpec", "sparse_transition"]


@dataclass
class MemberSpec:
    """What the engine needs of one member."""

    basis: Basis
    var_theta: float
    var_eps: float
    var_rw: float


def sparse_transition(Q: np.ndarray):
    """Validate a row-stochastic matrix; store it column-wise, in logs, for the switching step."""
    Q = np.asarray(Q, dtype=np.float64)
    if Q.ndim != 2 or Q.shape[0] != Q.shape[1]:
        raise ValueError(f"the transition matrix must be square, got shape {Q.shape}")
    if not np.isfinite(Q).all() or (Q < 0).any():
        raise ValueError("the transition matrix must have finite, non-negative entries")
    sums = Q.sum(axis=1)
    if not np.allclose(sums, 1.0, rtol=0, atol=1e-10):
        bad = int(np.argmax(np.abs(sums - 1.0)))
        raise ValueError(
            f"the transition matrix must be row-stochastic; row {bad} sums to {sums[bad]!r}"
        )
    M = Q.shape[0]
    indptr = np.zeros(M + 1, dtype=np.int64)
    indices, log_q = [], []
    for j in range(M):
        rows = np.flatnonzero(Q[:, j] > 0)
        indices.extend(rows.tolist())
        log_q.extend(np.log(Q[rows, j]).tolist())
        indptr[j + 1] = len(indices)
    return indptr, np.asarray(indices, dtype=np.int64), np.asarray(log_q, dtype=np.float64)


#: the ensembles' default weight floor: a member is dropped only when it would need
#: ``-log(1e-100)``, about 230 nats, of relative evidence to come back (the paper: 1e-16)
WEIGHT_FLOOR = 1e-100


class Engine:
    """``M`` Bayesian basis-expansion learners filtered together, optionally weighted and switched.

    Parameters
    ----------
    members
        The members' specifications. Their bases are used (and initialised) in place.
    transition
        ``None`` for no switching, else a row-stochastic ``(M, M)`` matrix.
    weight_floor
        Posterior weights below it are set to zero, and a member whose weight is zero is no
        longer updated (paper Sec. 3.1). ``0`` disables the floor.
    """

    #: member parameters that must be positive (a likelihood without noise drops ``var_eps``)
    _positive_params: tuple[str, ...] = ("var_theta", "var_eps")

    def __init__(self, members: list[MemberSpec], transition=None, weight_floor: float = 0.0):
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.members = members
        self.M = len(members)
        self.var_theta = np.array([m.var_theta for m in members], dtype=np.float64)
        self.var_eps = np.array([m.var_eps for m in members], dtype=np.float64)
        self.var_rw = np.array([m.var_rw for m in members], dtype=np.float64)
        for name in self._positive_params:
            vals = getattr(self, name)
            if not (np.isfinite(vals).all() and (vals > 0).all()):
                raise ValueError(f"{name} must be positive and finite, got {vals.tolist()}")
        if not (np.isfinite(self.var_rw).all() and (self.var_rw >= 0).all()):
            raise ValueError(f"var_rw must be non-negative and finite, got {self.var_rw.tolist()}")
        self.transition = (
            None if transition is None else sparse_transition(np.asarray(transition, dtype=float))
        )
        if self.transition is not None and self.transition[0].shape[0] != self.M + 1:
            raise ValueError(
                f"the transition matrix is for {self.transition[0].shape[0] - 1} members, "
                f"the ensemble has {self.M}"
            )
        if not 0.0 <= weight_floor < 1.0:
            raise ValueError(f"weight_floor must be in [0, 1), got {weight_floor!r}")
        self.log_floor = math.log(weight_floor) if weight_floor > 0 else -np.inf
        self.n_inputs: int | None = None

    # ------------------------------------------------------------------ set-up
    def setup(self, n_inputs: int) -> None:
        """Initialise the bases for ``n_inputs`` inputs and allocate the stacked state."""
        for m in self.members:
            m.basis.initialize(n_inputs)
        self.n_inputs = n_inputs
        M = self.M
        self.F = np.array([m.basis.n_outputs for m in self.members], dtype=np.int64)
        Fmax = int(self.F.max())
        self.mu = np.zeros((M, Fmax))
        self._Sigma = np.zeros((M, Fmax, Fmax))
        for k in range(M):
            idx = np.arange(self.F[k])
            self._Sigma[k, idx, idx] = self.var_theta[k]
        # the covariance update owed since the last learn (see filtering.predict_stack)
        self.Vp = np.zeros((M, Fmax))
        self.inv_sp = np.zeros(M)
        self.pend = np.zeros(M, dtype=np.bool_)
        self._pending = False
        self.log_w = np.full(M, -math.log(M))
        self.log_prior = self.log_w.copy()
        self.Phi = np.zeros((M, Fmax))
        self.V = np.zeros((M, Fmax))
        self.mean = np.zeros(M)
        self.var = np.zeros(M)
        self.loglik = np.zeros(M)
        self.new_log_w = np.empty(M)
        self.active = np.ones(M, dtype=np.bool_)
        self._build_groups()
        self.n_updates = 0
        self.log_evidence = 0.0
        self._cache_z = None

    def _build_groups(self) -> None:
        groups: dict[type, list[int]] = {}
        for k, m in enumerate(self.members):
            groups.setdefault(type(m.basis), []).append(k)
        self.groups = []
        for cls, rows in groups.items():
            params = stack_params([self.members[k].basis._params() for k in rows])
            self.groups.append([cls._kernel, np.asarray(rows, dtype=np.int64), params])
        self._observers = [
            (gi, k)
            for gi, (_, rows, _) in enumerate(self.groups)
            for k in rows.tolist()
            if getattr(self.members[k].basis, "wants_observations", False)
        ]

    # ------------------------------------------------------------------ steps
    def _prepare(self, z: np.ndarray) -> None:
        """Switch the weights and run every live member's predict step for ``z`` (cached)."""
        key = z.tobytes()
        if key == self._cache_z:
            return
        if self.M > 1:
            if self.transition is not None:
                filtering.switch_log_weights(self.log_w, *self.transition, self.log_prior)
            else:
                self.log_prior[:] = self.log_w
            np.greater(self.log_prior, -np.inf, out=self.active)
        for kernel, rows, params in self.groups:
            kernel(z, self.Phi, rows, self.active, *params)
        self._predict_members()
        self._cache_z = key

    # the likelihood-specific steps: a subclass (classification) overrides these two
    def _predict_members(self) -> None:
        """Predict step of every live member for the features in ``self.Phi`` (and the owed
        covariance updates of every member)."""
        filtering.predict_stack(
            self.Phi, self.F, self.mu, self._Sigma, self.var_rw, self.var_eps, self.active,
            self.V, self.mean, self.var, self.Vp, self.inv_sp, self.pend,
        )
        self._pending = False

    def _update_members(self, y) -> None:
        """Fold the target into every live member; writes the log-likelihoods ``self.loglik``.

        The means are updated now; the covariance update is owed to the next predict step.
        """
        filtering.update_means(
            self.F, self.mu, self.V, self.mean, self.var, y, self.active, self.loglik,
            self.inv_sp, self.pend,
        )
        self.V, self.Vp = self.Vp, self.V
        self._pending = True

    @property
    def Sigma(self) -> np.ndarray:
        """The members' covariances ``(M, F_max, F_max)``, with every owed update applied."""
        if self._pending:
            filtering.flush_stack(self.F, self._Sigma, self.var_rw, self.Vp, self.inv_sp,
                                  self.pend)
            self._pending = False
        return self._Sigma

    def predict(self, z: np.ndarray) -> tuple[float, float]:
        """Moment-matched predictive mean and variance of the (weighted) stack."""
        self._prepare(z)
        if self.M == 1:
            return float(self.mean[0]), float(self.var[0])
        return filtering.mixture_moments(self.log_prior, self.mean, self.var)

    def member_predictions(self, z: np.ndarray):
        """Per-member predictive means and variances (NaN for dropped members) and the weights
        used for this prediction."""
        self._prepare(z)
        mean = np.where(self.active, self.mean, np.nan)
        var = np.where(self.active, self.var, np.nan)
        return mean, var, np.exp(self.log_prior)

    def mixture(self, z: np.ndarray):
        """The predictive mixture for ``z``: ``(weights, means, variances)`` of the members
        that carry weight, and the moment-matched ``(mean, var)`` that :meth:`predict` gives."""
        mean, var = self.predict(z)
        if self.M == 1:
            return np.ones(1), self.mean.copy(), self.var.copy(), mean, var
        live = self.log_prior > -np.inf
        return np.exp(self.log_prior[live]), self.mean[live], self.var[live], mean, var

    def log_density(self, z: np.ndarray, y: float) -> float:
        """Exact log density of ``y`` under the predictive mixture (before learning ``y``)."""
        self._prepare(z)
        return filtering.mixture_log_density(self.log_prior, self.mean, self.var, y)

    def learn(self, z: np.ndarray, y: float) -> None:
        """Fold ``(z, y)`` into every live member and into the weights."""
        self._prepare(z)
        self._update_members(y)
        if self.M == 1:
            self.log_evidence += float(self.loglik[0])
        else:
            lse = filtering.bma_log_weights(
                self.log_prior, self.loglik, self.log_floor, self.new_log_w
            )
            self.log_w, self.new_log_w = self.new_log_w, self.log_w
            self.log_evidence += lse
        self.n_updates += 1
        self._cache_z = None
        if self._observers:
            self._observe(z)

    def _observe(self, z: np.ndarray) -> None:
        still = []
        for gi, k in self._observers:
            basis = self.members[k].basis
            if basis._observe(z):
                rows = self.groups[gi][1]
                self.groups[gi][2] = stack_params(
                    [self.members[int(r)].basis._params() for r in rows]
                )
            if getattr(basis, "wants_observations", False):
                still.append((gi, k))
        self._observers = still

    def posterior(self, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Copies of member ``k``'s posterior mean ``(F_k,)`` and covariance ``(F_k, F_k)``."""
        f = int(self.F[k])
        return self.mu[k, :f].copy(), self.Sigma[k, :f, :f].copy()

    def replay(self, Z: np.ndarray, Y) -> None:
        """Filter a window ``(Z, Y)`` through every member, then restart the weights uniform.

        The weights take no part: no floor drops a member half-way through the window (its
        filter would then miss the rest of it), and the window's densities do not count.
        """
        Y = Y.tolist() if isinstance(Y, np.ndarray) else list(Y)
        floor = self.log_floor
        self.log_floor = -np.inf
        try:
            for z, y in zip(Z, Y, strict=True):
                self.learn(z, y)
        finally:
            self.log_floor = floor
        self.reset_weights()

    def reset_weights(self) -> None:
        """Back to uniform weights (and an empty log evidence); the members' states are kept."""
        self.log_w[:] = -math.log(self.M)
        self.log_evidence = 0.0
        self._cache_z = None

    # ------------------------------------------------------------------ views
    @property
    def weights(self) -> np.ndarray:
        """Normalised posterior weights after the last update (before the next switch)."""
        return np.exp(self.log_w)

    def __getstate__(self):
        if getattr(self, "_pending", False):
            self.Sigma  # noqa: B018 - apply the owed covariance updates before saving
        state = self.__dict__.copy()
        if "groups" in state:
            # Numba dispatchers pickle by reference to their module function; keep it explicit
            state["groups"] = [(rows, params) for _, rows, params in self.groups]
        return state

    def __setstate__(self, state):
        groups = state.pop("groups", None)
        self.__dict__.update(state)
        if groups is not None:
            kernels: dict[type, object] = {}
            for k, m in enumerate(self.members):
                kernels.setdefault(k, type(m.basis)._kernel)
            self.groups = [[kernels[int(rows[0])], rows, params] for rows, params in groups]
