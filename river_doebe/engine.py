"""The engine: a stack of members, their filters and their weights (an internal layer).

Every estimator of the package is thin over this module: it turns dicts into arrays
(:mod:`river_doebe._schema`) and calls :meth:`Engine.predict` / :meth:`Engine.learn` (regression)
or :meth:`LogisticEngine.predict_proba` / :meth:`LogisticEngine.learn` (classification). One
sample costs one featurisation call per basis family, one predict sweep over the whole stack, one
likelihood update and the weight steps, all in Numba (:mod:`river_doebe.kernels`).

Here are also what the engine is built from: :class:`Member`, the one record of a member (basis,
variances, random walk, and where the warm-up found it), and the switching matrices
(:func:`edoebe_transition`, :func:`sparse_transition`).

The work of a predict is cached: a ``learn`` that follows with the same ``z`` (as in progressive
validation) reuses the features, the predict sweep and the switched weights instead of
recomputing them. Covariance updates are applied lazily, inside the next predict sweep; the
arithmetic does not depend on when they are applied, so the views (:attr:`Engine.mu`,
:attr:`Engine.Sigma`, :meth:`Engine.posterior`) and pickling never change the engine.

A sample that cannot be filtered safely (features so large that a predictive moment or an update
would not be finite) raises :class:`FilterError` before any state changes that a pickle would
see.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from river_doebe._checks import check_transition
from river_doebe.basis.base import Basis, stack_params
from river_doebe.kernels.gaussian import gaussian_update
from river_doebe.kernels.logistic import laplace_update_stack, mixture_proba, probit_logits
from river_doebe.kernels.stack import flush_stack, predict_stack, repair_covariance
from river_doebe.kernels.weights import (
    bma_log_weights,
    mixture_log_density,
    mixture_moments,
    switch_log_weights,
)

__all__ = [
    "twin_members",
    "Engine",
    "FilterError",
    "LogisticEngine",
    "Member",
    "WEIGHT_FLOOR",
    "edoebe_transition",
    "sparse_transition",
]


@dataclass
class Member:
    """One member of a stack: its basis, its variances and its random walk.

    A member found by an empirical-Bayes warm-up also says where it came from: its basis
    ``family`` (the class name), the index of the evidence mode (start) it belongs to, and
    whether it is that mode or a draw around it.
    """

    basis: Basis
    var_theta: float
    var_eps: float
    var_rw: float = 0.0
    family: str | None = None
    mode_index: int | None = None
    is_mode: bool | None = None


class FilterError(ValueError):
    """A sample the filters cannot take safely; the model's state is unchanged."""


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


def twin_members(members: list[Member], levels) -> list[Member]:
    """The E-DOEBE's blocks: one copy of every member per random-walk level (the last level is
    the static one), each with its own basis; :func:`edoebe_transition` switches between them."""
    return [
        dataclasses.replace(m, basis=copy.deepcopy(m.basis), var_rw=level)
        for level in levels
        for m in members
    ]


def sparse_transition(Q: np.ndarray):
    """Validate a row-stochastic matrix; store it column-wise, in logs, for the switching step."""
    Q = check_transition(Q)
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

    #: per-step buffers, rebuilt rather than pickled
    _scratch: frozenset = frozenset(
        ("Phi", "V", "E", "mean", "var", "loglik", "new_log_w", "active", "log_prior", "status",
         "_cache_z")
    )

    def __init__(self, members: list[Member], transition=None, weight_floor: float = 0.0):
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
        self.static = self.var_rw == 0.0
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
        self._mu = np.zeros((M, Fmax))
        # a static member keeps the square root U' (lower triangular), a dynamic one Sigma
        self._C = np.zeros((M, Fmax, Fmax))
        for k in range(M):
            idx = np.arange(self.F[k])
            vt = self.var_theta[k]
            self._C[k, idx, idx] = math.sqrt(vt) if self.static[k] else vt
        # the update owed since the last learn (see kernels.stack.predict_stack)
        self.pvec = np.zeros((M, Fmax))
        self.pc = np.zeros(M)
        self.pg = np.zeros(M)
        self.pend = np.zeros(M, dtype=np.bool_)
        self.n_filtered = np.zeros(M, dtype=np.int64)
        self.log_w = np.full(M, -math.log(M))
        self._build_groups()
        self._allocate_scratch()
        self.n_updates = 0
        self.log_evidence = 0.0

    def _allocate_scratch(self) -> None:
        M, Fmax = self._mu.shape
        self.Phi = np.zeros((M, Fmax))
        self.V = np.zeros((M, Fmax))
        self.E = np.zeros((M, Fmax))
        self.mean = np.zeros(M)
        self.var = np.zeros(M)
        self.loglik = np.zeros(M)
        self.new_log_w = np.empty(M)
        self.log_prior = self.log_w.copy()
        self.active = np.greater(self.log_prior, -np.inf)
        self.status = np.zeros(M, dtype=np.int8)
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
            if self.members[k].basis.wants_observations
        ]

    # ------------------------------------------------------------------ steps
    def _predict_var_eps(self) -> np.ndarray:
        """The noise variance the predict sweep adds (the logistic engine: none)."""
        return self.var_eps

    def _prepare(self, z: np.ndarray) -> None:
        """Switch the weights and run every live member's predict step for ``z`` (cached)."""
        key = z.tobytes()
        if key == self._cache_z:
            return
        if self.M > 1:
            if self.transition is not None:
                switch_log_weights(self.log_w, *self.transition, self.log_prior)
            else:
                self.log_prior[:] = self.log_w
            np.greater(self.log_prior, -np.inf, out=self.active)
        for kernel, rows, params in self.groups:
            kernel(z, self.Phi, rows, self.active, *params)
        if self._sweep():
            self._mend()
        self._predict_extra()
        self._cache_z = key

    def _sweep(self) -> int:
        return predict_stack(
            self.Phi, self.F, self.static, self._mu, self._C, self.var_rw,
            self._predict_var_eps(), self.active, self.V, self.E, self.mean, self.var, self.pvec,
            self.pc, self.pg, self.pend, self.status,
        )

    def _mend(self) -> None:
        """Refuse a sample whose moments are not finite (``status`` 2); repair the dynamic members
        whose covariance rounding broke (``status`` 1) and predict again. A repaired member whose
        ``phi' Sigma_pred phi`` still falls short of ``var_rw |phi|^2`` only by rounding is
        accepted as long as it is not negative (its variance is then still at least its noise
        variance); a negative one is refused."""
        for attempt in range(2):
            bad = np.flatnonzero(self.status)
            broken = bad[self.status[bad] == 2]
            if broken.size:
                k = int(broken[0])
                raise FilterError(
                    f"member {k} ({type(self.members[k].basis).__name__}) cannot predict this "
                    "sample: its basis expansion or predictive moments are not finite"
                )
            if attempt == 0:
                for k in bad.tolist():
                    f = int(self.F[k])
                    self._C[k, :f, :f] = repair_covariance(self._C[k, :f, :f])
                if not self._sweep():
                    return
        q = self.var[bad] - self._predict_var_eps()[bad]
        if (q < 0).any():
            k = int(bad[np.argmax(q < 0)])
            raise FilterError(
                f"member {k} ({type(self.members[k].basis).__name__}) lost the positive "
                "definiteness of its covariance on this sample even after a repair"
            )

    def _predict_extra(self) -> None:
        """What a likelihood adds to the predict step (the logistic engine: probit logits)."""

    def _update_members(self, y) -> int:
        """Fold the target into every live member; writes ``self.loglik``; 0 or a member + 1
        that refused the sample (nothing changed then)."""
        return gaussian_update(
            self.F, self.static, self._mu, self.V, self.mean, self.var, self.var_theta,
            self.var_eps, y, self.active, self.loglik, self.pc, self.pg, self.pend,
            self.n_filtered,
        )

    def predict(self, z: np.ndarray) -> tuple[float, float]:
        """Moment-matched predictive mean and variance of the (weighted) stack."""
        self._prepare(z)
        if self.M == 1:
            return float(self.mean[0]), float(self.var[0])
        return mixture_moments(self.log_prior, self.mean, self.var)

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
        return mixture_log_density(self.log_prior, self.mean, self.var, y)

    def learn(self, z: np.ndarray, y) -> None:
        """Fold ``(z, y)`` into every live member and into the weights."""
        self._prepare(z)
        refused = self._update_members(y)
        if refused:
            k = refused - 1
            raise FilterError(
                f"member {k} ({type(self.members[k].basis).__name__}) cannot learn this sample: "
                "its update would not be finite"
            )
        self.V, self.pvec = self.pvec, self.V
        if self.M == 1:
            self.log_evidence += float(self.loglik[0])
        else:
            lse = bma_log_weights(
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
            if basis.wants_observations:
                still.append((gi, k))
        self._observers = still

    # ------------------------------------------------------------------ growth
    @property
    def can_grow(self) -> bool:
        """Whether every member's basis can take new inputs exactly (see :meth:`grow`)."""
        return all(m.basis.can_grow for m in self.members)

    def grow(self, n_inputs: int) -> None:
        """Take ``n_inputs`` inputs instead of ``self.n_inputs``, the new ones last.

        Exact: every past sample had the new inputs at 0, where each growable basis leaves the
        features of the old inputs as they were and gives the new features the value 0 (or, for
        random Fourier features, new frequency columns that 0 ignores). The new weights have
        never been informed by data, so they join the posterior with their prior: variance
        ``var_theta`` (plus the random walk of every step filtered so far), independent of the
        rest. The weights of the ensemble do not change.
        """
        if n_inputs <= self.n_inputs:
            raise ValueError(f"cannot grow from {self.n_inputs} to {n_inputs} inputs")
        mu, C = self._flushed()
        positions = [np.asarray(m.basis.grow(n_inputs), dtype=np.int64) for m in self.members]
        F_new = np.array([m.basis.n_outputs for m in self.members], dtype=np.int64)
        M, Fmax = self.M, int(F_new.max())
        self._mu = np.zeros((M, Fmax))
        self._C = np.zeros((M, Fmax, Fmax))
        for k in range(M):
            f, pos = int(self.F[k]), positions[k]
            fresh = np.setdiff1d(np.arange(F_new[k]), pos)
            self._mu[k, pos] = mu[k, :f]
            self._C[k][np.ix_(pos, pos)] = C[k, :f, :f]
            vt = self.var_theta[k]
            if self.static[k]:
                self._C[k, fresh, fresh] = math.sqrt(vt)
            else:
                self._C[k, fresh, fresh] = vt + self.n_filtered[k] * self.var_rw[k]
        self.F = F_new
        self.n_inputs = n_inputs
        self.pvec = np.zeros((M, Fmax))
        self.pend = np.zeros(M, dtype=np.bool_)
        self._build_groups()
        self._allocate_scratch()

    # ------------------------------------------------------------------ views
    def _flushed(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the means and covariance factors with every owed update applied."""
        mu, C = self._mu.copy(), self._C.copy()
        if self.pend.any():
            flush_stack(self.F, self.static, mu, C, self.var_rw, np.zeros_like(mu),
                                  self.pvec, self.pc, self.pg, self.pend.copy())
        return mu, C

    @property
    def mu(self) -> np.ndarray:
        """The members' posterior means ``(M, F_max)`` (a copy; zero-padded)."""
        return self._flushed()[0]

    @property
    def Sigma(self) -> np.ndarray:
        """The members' posterior covariances ``(M, F_max, F_max)`` (a copy; zero-padded)."""
        _, C = self._flushed()
        for k in np.flatnonzero(self.static).tolist():
            L = C[k]
            S = L.T @ L
            C[k] = np.triu(S) + np.triu(S, 1).T  # exactly symmetric
        return C

    def posterior(self, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Copies of member ``k``'s posterior mean ``(F_k,)`` and covariance ``(F_k, F_k)``."""
        f = int(self.F[k])
        mu, C = self._flushed()
        S = C[k, :f, :f]
        if self.static[k]:
            S = S.T @ S
            S = np.triu(S) + np.triu(S, 1).T
        return mu[k, :f].copy(), S.copy()

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

    @property
    def weights(self) -> np.ndarray:
        """Normalised posterior weights after the last update (before the next switch)."""
        return np.exp(self.log_w)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self):
        # in a fixed order, so that equal states pickle to equal bytes however they were built
        state = {k: self.__dict__[k] for k in sorted(self.__dict__) if k not in self._scratch}
        if "groups" in state:
            # Numba dispatchers pickle by reference to their module function; keep it explicit
            state["groups"] = [(rows, params) for _, rows, params in self.groups]
        if "_mu" in state:
            # the owed updates applied (on copies): the same numbers as applying them later
            state["_mu"], state["_C"] = self._flushed()
            state["pend"] = np.zeros_like(self.pend)
        return state

    def __setstate__(self, state):
        groups = state.pop("groups", None)
        self.__dict__.update(state)
        if groups is not None:
            self.groups = [
                [type(self.members[int(rows[0])].basis)._kernel, rows, params]
                for rows, params in groups
            ]
        if "_mu" in state:
            self._allocate_scratch()


class LogisticEngine(Engine):
    """The member stack of :class:`Engine` with a Bernoulli-logistic likelihood.

    Members are given as :class:`Member` records whose ``var_eps`` is ignored (a
    Bernoulli likelihood has no noise variance). Labels enter as codes ``0``/``1``.

    Per member and step: the latent predictive ``N(a, s2)`` comes from the Gaussian predict kernel
    with ``var_eps = 0``; the member's predictive is ``p(y = 1) = sigmoid(a / sqrt(1 + pi s2 / 8))``
    and its log predictive of the observed label is what the weights use; the update is the
    one-sample Laplace step of :func:`river_doebe.kernels.logistic.laplace_update_stack`.
    """

    _positive_params = ("var_theta",)
    _scratch = Engine._scratch | {"logit", "_t", "_lam"}

    def __init__(self, members: list[Member], transition=None, weight_floor: float = 0.0):
        members = [dataclasses.replace(m, var_eps=0.0) for m in members]
        super().__init__(members, transition, weight_floor)

    def _allocate_scratch(self) -> None:
        super()._allocate_scratch()
        self.logit = np.zeros(self.M)
        self._t = np.zeros(self.M)
        self._lam = np.zeros(self.M)

    def _predict_var_eps(self) -> np.ndarray:
        return self.var_eps  # zeros: the predict sweep gives the latent predictive N(a, s2)

    def _predict_extra(self) -> None:
        probit_logits(self.mean, self.var, self.active, self.logit)

    def _update_members(self, code: int) -> int:
        """Laplace step of every live member; writes ``self.loglik``."""
        return laplace_update_stack(
            self.F, self.static, self._mu, self.V, self.mean, self.var, self.logit,
            self.var_theta, code, self.active, self.loglik, self.pc, self.pg, self.pend,
            self.n_filtered, self._t, self._lam,
        )

    # ------------------------------------------------------------------ classifier views
    def predict_proba(self, z: np.ndarray) -> tuple[float, float]:
        """``(p(code 0), p(code 1))`` of the weighted stack, before learning the label of ``z``."""
        self._prepare(z)
        return mixture_proba(self.log_prior, self.logit)

    def member_probas(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each member's ``(p(code 0), p(code 1))`` as an ``(M, 2)`` array (NaN rows for dropped
        members) and the weights used for the prediction for ``z``."""
        from scipy.special import expit

        self._prepare(z)
        P = expit(np.stack([-self.logit, self.logit], axis=1))
        P[~self.active] = np.nan
        return P, np.exp(self.log_prior)

    def flip(self) -> None:
        """Swap the meaning of the codes 0 and 1.

        With a zero-mean prior the logistic filter is symmetric under ``theta -> -theta``,
        ``y -> 1 - y``: negating the means (and the cached latent means) is an exact relabelling.
        """
        self._mu *= -1.0
        self.pg *= -1.0  # a static member's owed mean step flips with its mean
        self.mean *= -1.0
        self.logit *= -1.0
