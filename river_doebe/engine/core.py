"""The engine of the regressors: a stack of members, filtered together and weighted."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from river_doebe._checks import check_transition
from river_doebe.basis.base import stack_params
from river_doebe.engine.members import FilterError, Member, csc_transition
from river_doebe.engine.threads import Pace, backward_runs, balanced_order, running_threads
from river_doebe.engine.weighting import Weighting
from river_doebe.kernels.gaussian import gaussian_block, gaussian_block_parallel, gaussian_update
from river_doebe.kernels.jit import Rented
from river_doebe.kernels.stack import (
    NEEDS_REPAIR,
    Params,
    State,
    flush_stack,
    predict_stack,
    predict_stack_parallel,
    reachable,
)
from river_doebe.kernels.weights import (
    mixture_log_density,
    mixture_moments,
    mixture_proba,
    share_log_weights,
    switch_log_weights,
    update_log_weights,
    weigh_block,
)

__all__ = ["Engine"]

#: about what a fresh install's compile of the weights' kernels takes: between those a sample
#: calls (1.7 s) and those with the block's, which compiles them as it calls them (2.5 s;
#: ``benchmarks/results/engine.md``)
WEIGHTS_COMPILE_SECONDS = 2.0
#: the weights' steps, by their Python twins (loops over the members with ``math``'s functions,
#: on lists: the same bits, slower than compiled but without a compile) until the twins' calls
#: have taken ``WEIGHTS_COMPILE_SECONDS``, then compiled (at once when they are in Numba's
#: on-disk cache): a first stream on a fresh install does not wait for a compile its samples
#: would not pay back (see :class:`river_doebe.kernels.jit.Rented`)
_WEIGHTS = Rented(WEIGHTS_COMPILE_SECONDS, as_lists=True, switch_log_weights=switch_log_weights,
                  share_log_weights=share_log_weights, mixture_moments=mixture_moments,
                  mixture_log_density=mixture_log_density, mixture_proba=mixture_proba,
                  update_log_weights=update_log_weights, reachable=reachable,
                  weigh_block=weigh_block)

#: about what a fresh install's compile of a block kernel takes, once a sample's kernels are
#: compiled (``benchmarks/results/engine.md``)
BLOCK_COMPILE_SECONDS = 2.0
#: the regressors' block kernel, rented: the rows of a block go the per-sample way (the same
#: bits, :meth:`Engine.learn_block`) until they have taken ``BLOCK_COMPILE_SECONDS``, then the
#: kernel is compiled (at once when it is in Numba's on-disk cache): a first stream on a fresh
#: install that learns a few blocks does not wait for a compile they would not pay back
_BLOCKS = Rented(BLOCK_COMPILE_SECONDS, gaussian_block=gaussian_block)

#: why a member refused a sample (the status of :func:`river_doebe.kernels.stack.predict_member`)
_REFUSALS = {
    2: "its basis expansion or predictive moments are not finite",
    3: "it lost the positive definiteness of its covariance even after a repair",
}


#: the log weight of a one-member stack's member (read-only: shared by every engine)
_LOG_ONE = np.zeros(1)
_LOG_ONE.flags.writeable = False


def _row_of(out: tuple, t: int) -> tuple:
    """Row ``t`` of :meth:`Engine.learn_block`'s outputs, as a block of one row."""
    rows = slice(t, t + 1)
    a, b, extra = out
    return a[rows], b[rows], None if extra is None else tuple(e[rows] for e in extra)


def _joined(parts: list) -> tuple:
    """The outputs of :meth:`Engine.learn_block` over consecutive parts of a block, as one."""
    if len(parts) == 1:
        return parts[0]
    a, b = (np.concatenate([p[i] for p in parts]) for i in (0, 1))
    extras = [p[2] for p in parts if p[2] is not None]
    if not extras:
        return a, b, None
    prior, means, variances = (np.concatenate([e[i] for e in extras]) for i in range(3))
    return a, b, (prior, means, variances)


class Engine:
    """``M`` Bayesian basis-expansion learners filtered together, optionally weighted and switched.

    Parameters
    ----------
    members
        The members' records. Their bases are used (and initialised) in place.
    transition
        ``None`` for no switching, else a row-stochastic ``(M, M)`` matrix.
    weight_floor
        Posterior weights below it are set to zero (paper Sec. 3.1). ``0`` disables the floor.
    weighting
        How the weights learn (:class:`~river_doebe.engine.weighting.Weighting`): Bayesian model
        averaging (the default) or online stacking, and the fixed share.

    Notes
    -----
    A member is filtered while it can still carry weight: under model averaging while its weight
    is positive, under switching while weight can still flow to it from a member that has some
    (its twins, in an E-DOEBE). A member that can never carry weight again is dead: it leaves the
    stack, and its memory and time with it; :attr:`weights` reports it with weight 0 and the
    views keep the members' original order (:attr:`live` maps stack rows to it).
    """

    #: member parameters that must be positive (a likelihood without noise drops ``var_eps``)
    _positive_params: tuple[str, ...] = ("var_theta", "var_eps")

    #: the outlier gate of a regression stack (see :meth:`learn`): a target further than
    #: ``gate`` predictive standard deviations from the moment-matched prediction, when the
    #: target before it was not, is kept out of the members and the weights; ``None``: every
    #: target is learnt. Its run (``_extremes``: the targets in a row beyond it) and count
    #: (``n_skipped``) are part of the state.
    gate: float | None = None
    _extremes = 0
    n_skipped = 0

    #: per-step buffers, rebuilt rather than pickled
    _scratch: frozenset = frozenset(
        ("Phi", "V", "E", "mean", "var", "loglik", "new_log_w", "log_prior", "status",
         "_cache_z", "_reach", "src", "n_slots", "order", "params", "_kernel_params",
         "_kernel_state", "_pace", "_block_pace", "_backward", "_turn")
    )

    def __init__(self, members: list[Member], transition: ArrayLike | None = None,
                 weight_floor: float = 0.0, weighting: Weighting | None = None) -> None:
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.members = list(members)
        for name in self._positive_params:
            vals = np.array([getattr(m, name) for m in members], dtype=np.float64)
            if not (np.isfinite(vals).all() and (vals > 0).all()):
                raise ValueError(f"{name} must be positive and finite, got {vals.tolist()}")
        rw = np.array([m.var_rw for m in members], dtype=np.float64)
        if not (np.isfinite(rw).all() and (rw >= 0).all()):
            raise ValueError(f"var_rw must be non-negative and finite, got {rw.tolist()}")
        self._Q = None
        if transition is not None:
            self._Q = check_transition(transition)
            if self._Q.shape[0] != len(members):
                raise ValueError(
                    f"the transition matrix is for {self._Q.shape[0]} members, "
                    f"the ensemble has {len(members)}"
                )
        if not 0.0 <= weight_floor < 1.0:
            raise ValueError(f"weight_floor must be in [0, 1), got {weight_floor!r}")
        self.log_floor = math.log(weight_floor) if weight_floor > 0 else -np.inf
        self.weighting = Weighting() if weighting is None else weighting
        # the kernels' constants of the weight step and of the share (a share keeps every member)
        self.log_rate, self.log_keep = self.weighting.step
        self.share_keep, self.share_each = self.weighting.mixing(len(members))
        self.live = np.arange(len(members), dtype=np.int64)
        self._per_member()
        self.n_inputs: int | None = None

    def _per_member(self) -> None:
        """The per-row parameters of the live members (again after a compaction)."""
        rows = [self.members[i] for i in self.live.tolist()]
        self.M = len(rows)
        self.var_theta = np.array([m.var_theta for m in rows], dtype=np.float64)
        self.var_eps = np.array([m.var_eps for m in rows], dtype=np.float64)
        self.var_rw = np.array([m.var_rw for m in rows], dtype=np.float64)
        self.static = self.var_rw == 0.0
        self.transition = (
            None if self._Q is None else csc_transition(self._Q[np.ix_(self.live, self.live)])
        )

    @property
    def stack(self) -> list[Member]:
        """The live members, in stack order."""
        return [self.members[i] for i in self.live.tolist()]

    @property
    def state(self) -> State:
        """What learning changes in the live members (:class:`river_doebe.kernels.stack.State`:
        their means, covariance factors and owed updates), in stack order."""
        return self._state

    @state.setter
    def state(self, state: State | tuple) -> None:
        self._state = State(*state)
        # the kernels take it as a plain tuple (see river_doebe.kernels.stack): made here, so
        # that it always holds the arrays of the record
        self._kernel_state = tuple(self._state)

    # ------------------------------------------------------------------ set-up
    def setup(self, n_inputs: int) -> None:
        """Initialise the bases for ``n_inputs`` inputs and allocate the stacked state."""
        for m in self.members:
            m.basis.initialize(n_inputs)
        self.n_inputs = n_inputs
        M = self.M
        self.F = np.array([m.basis.n_outputs for m in self.stack], dtype=np.int64)
        Fmax = int(self.F.max())
        # a static member keeps the square root U' (lower triangular), a dynamic one Sigma
        C = np.zeros((M, Fmax, Fmax))
        for k in range(M):
            idx = np.arange(self.F[k])
            vt = self.var_theta[k]
            C[k, idx, idx] = math.sqrt(vt) if self.static[k] else vt
        # no update owed yet (see kernels.stack.predict_stack)
        self.state = State(mu=np.zeros((M, Fmax)), C=C, pvec=np.zeros((M, Fmax)),
                           alpha0=np.zeros(M), pg=np.zeros(M), pend=np.zeros(M, dtype=np.bool_),
                           n_filtered=np.zeros(M, dtype=np.int64))
        self.log_w = np.full(M, -math.log(M))
        self._build_groups()
        self._allocate_scratch()
        self.n_updates = 0
        self.log_evidence = 0.0

    def _allocate_scratch(self) -> None:
        M, Fmax = self.state.mu.shape
        self.params = Params(self.F, self.static, self.var_rw, self.var_theta, self.var_eps)
        self._kernel_params = tuple(self.params)  # (a plain tuple, as the state's)
        self.Phi = np.zeros((self.n_slots, Fmax))  # one row per distinct basis
        self.V = np.zeros((M, Fmax))
        self.E = np.zeros((M, Fmax))
        self.mean = np.zeros(M)
        self.var = np.zeros(M)
        self.loglik = np.zeros(M)
        self.new_log_w = np.empty(M)
        self.log_prior = self.log_w.copy()
        self._reach = np.ones(M, dtype=np.bool_)
        self.status = np.zeros(M, dtype=np.int8)
        self._cache_z: bytes | None = None  # the input of the cached predict step
        self.work = int(np.sum(self.F * self.F))
        self.order = balanced_order(self.static, self.F)
        # every other predict sweep takes each thread's members backwards (see backward_runs):
        # those orders by thread count, and whether the next sweep is one of them
        self._backward: dict[int, np.ndarray] = {}
        self._turn = False
        # which kernels run (one thread or all) is timed on the stream (kept out of pickles and
        # copies: it changes no number)
        if "_pace" in self.__dict__:
            self._pace.restack()
            self._block_pace.restack()
        else:
            self._pace: Pace = Pace()  # one sample at a time: chunks of 8 samples
            self._block_pace: Pace = Pace(chunk=1, rounds=1, first=8, longest=64, probe_rows=64)

    def _build_groups(self) -> None:
        """The featurisation plan: members whose bases give the same features (an E-DOEBE's
        static and dynamic twins: the same class and kernel parameters, so the same numbers for
        every input) share one feature slot, computed once; ``src[k]`` is stack row ``k``'s slot.
        ``groups`` holds, per basis class, ``[class, slots, stacked parameters, owners]`` (the
        stack row whose basis stands for each slot)."""
        stack = self.stack
        slots: dict[tuple, int] = {}
        owners: dict[type, list[tuple[int, int]]] = {}
        self.src = np.empty(len(stack), dtype=np.int64)
        for k, m in enumerate(stack):
            arrays = [np.asarray(p) for p in m.basis._params()]
            key = (type(m.basis), *((p.dtype.str, p.shape, p.tobytes()) for p in arrays))
            slot = slots.get(key)
            if slot is None:
                slot = slots[key] = len(slots)
                owners.setdefault(type(m.basis), []).append((slot, k))
            self.src[k] = slot
        self.n_slots = len(slots)
        self.groups: list[list[Any]] = []
        for cls, pairs in owners.items():
            params = stack_params([stack[k].basis._params() for _, k in pairs])
            self.groups.append([cls, np.array([s for s, _ in pairs], dtype=np.int64), params,
                                [k for _, k in pairs]])
        # every basis that learns from the samples observes them (each keeps its own state);
        # a slot's parameters follow its owner's
        group_of = {k: gi for gi, group in enumerate(self.groups) for k in group[3]}
        self._observers = [
            (group_of.get(k, -1), k) for k, m in enumerate(stack) if m.basis.wants_observations
        ]

    # ------------------------------------------------------------------ steps
    def _featurize(self, Z: np.ndarray, Phi: np.ndarray, parallel: bool) -> None:
        """The features of the rows ``Z (B, D)`` for every member, into ``Phi (M, B, F_max)``."""
        for cls, slots, params, _ in self.groups:
            kernel = cls._kernel_parallel if parallel else cls._kernel
            kernel(Z, Phi, slots, *params)

    def _switch(self) -> None:
        """The weights for the next prediction (the switching step, or the weights as they
        are; then the fixed share)."""
        if self.M > 1:
            if self.transition is not None:
                _WEIGHTS.switch_log_weights(self.log_w, *self.transition, self.log_prior)
            else:
                self.log_prior[:] = self.log_w
            if self.share_each > -np.inf:
                _WEIGHTS.share_log_weights(self.log_prior, self.share_keep, self.share_each)

    def _prepare(self, z: np.ndarray, switch: bool = True) -> None:
        """Switch the weights and run every member's predict step for ``z`` (cached; without
        ``switch``, the members' step alone, not cached: the weights for ``z`` are not made)."""
        key = z.tobytes()
        if key == self._cache_z:
            return
        if switch:
            self._switch()
        # a stack on the parallel sweep featurises on every thread too: the threads are awake
        # already (benchmarks/results/engine.md)
        parallel = self.M > 1 and self._pace.start(self.work, self.M)  # (a single learner: never)
        self._featurize(z[None, :], self.Phi[:, None, :], parallel)
        sweep = predict_stack_parallel if parallel else predict_stack
        order = self.order
        self._turn = not self._turn
        if self._turn and self.M > 1:
            n = running_threads() if parallel else 1
            backward = self._backward.get(n)
            if backward is None:
                backward = self._backward[n] = backward_runs(self.order, n)
            order = backward
        if sweep(order, self.Phi, self.src, self._kernel_params, self._kernel_state, self.V,
                 self.E, self.mean, self.var, self.status, None):
            need = np.flatnonzero(self.status == NEEDS_REPAIR)
            if need.size:
                # their step again, with the covariance repair (compiled on the first repair of
                # the process: see river_doebe.kernels.stack.predict_member)
                predict_stack(need, self.Phi, self.src, self._kernel_params, self._kernel_state,
                              self.V, self.E, self.mean, self.var, self.status, True)
            if self.status.any():
                k = int(np.flatnonzero(self.status)[0])
                raise FilterError(
                    f"member {int(self.live[k])} ({type(self.stack[k].basis).__name__}) cannot "
                    f"predict this sample: {_REFUSALS[int(self.status[k])]}"
                )
        self._predict_extra()
        self._cache_z = key if switch else None

    def _predict_extra(self) -> None:
        """What a likelihood adds to the predict step (the logistic engine: probit logits)."""

    def _update_members(self, y: float) -> int:
        """Fold the target into every member; writes ``self.loglik``; 0 or a member + 1 that
        refused the sample (nothing changed then)."""
        return gaussian_update(self._kernel_params, self._kernel_state, self.V, self.mean,
                               self.var, y, self.loglik)

    def predict(self, z: np.ndarray) -> tuple[float, float]:
        """Moment-matched predictive mean and variance of the (weighted) stack."""
        self._prepare(z)
        if self.M == 1:
            return float(self.mean[0]), float(self.var[0])
        return _WEIGHTS.mixture_moments(self.log_prior, self.mean, self.var)

    def _full(self, values: np.ndarray, fill: float = np.nan) -> np.ndarray:
        """Per-row values in the members' original order (``fill`` for the dead)."""
        out = np.full((len(self.members), *values.shape[1:]), fill, dtype=np.float64)
        out[self.live] = values
        return out

    def member_predictions(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-member predictive means and variances (NaN for dead members) and the weights used
        for this prediction, in the members' original order."""
        self._prepare(z)
        return (self._full(self.mean), self._full(self.var),
                self._full(np.exp(self.log_prior), 0.0))

    def mixture(
        self, z: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
        """The predictive mixture for ``z``: ``(weights, means, variances)`` of the members
        that carry weight, and the moment-matched ``(mean, var)`` that :meth:`predict` gives."""
        mean, var = self.predict(z)
        if self.M == 1:
            return np.ones(1), self.mean.copy(), self.var.copy(), mean, var
        live = self.log_prior > -np.inf
        return np.exp(self.log_prior[live]), self.mean[live], self.var[live], mean, var

    def predictive(
        self, z: np.ndarray
    ) -> tuple[float, float, np.ndarray, np.ndarray, np.ndarray]:
        """The predictive for ``z`` as the predict sweep leaves it, nothing copied or built:
        ``(mean, var, log_weights, means, variances)``, the moment-matched mean and variance of
        :meth:`predict` and every member's log weight (``-inf``: none) and Gaussian. The arrays
        are the engine's own, valid until it next predicts or learns (a caller that keeps them
        longer copies them). Their weights, ``exp(log_weights)``, are those of
        :meth:`mixture`."""
        mean, var = self.predict(z)
        return mean, var, (_LOG_ONE if self.M == 1 else self.log_prior), self.mean, self.var

    def log_density(self, z: np.ndarray, y: float) -> float:
        """Exact log density of ``y`` under the predictive mixture (before learning ``y``)."""
        self._prepare(z)
        return _WEIGHTS.mixture_log_density(self.log_prior, self.mean, self.var, y)

    def _beyond(self, y: float, mean: float, var: float) -> bool:
        """Whether ``y`` is beyond the gate of the prediction ``(mean, var)``."""
        assert self.gate is not None  # (asked only of a gated stack)
        return not abs(y - mean) <= self.gate * math.sqrt(var)

    def _kept_out(self, y: float) -> bool:
        """The gate on the target of the sample just predicted: whether it is kept out (an
        isolated extreme); counts the run of extremes either way."""
        mean, var = ((float(self.mean[0]), float(self.var[0])) if self.M == 1
                     else _WEIGHTS.mixture_moments(self.log_prior, self.mean, self.var))
        if not self._beyond(y, mean, var):
            self._extremes = 0
            return False
        self._extremes += 1
        if self._extremes > 1:
            return False  # a second extreme in a row: the stream moved, not one value
        self.n_skipped += 1
        self.n_updates += 1
        return True

    def learn(self, z: np.ndarray, y: float) -> None:
        """Fold ``(z, y)`` into every member and into the weights.

        With a :attr:`gate`, a target beyond it whose predecessor was within it is kept out
        instead, exactly as if the sample had not come (the predict step it had changes no
        number: its owed updates are applied, and the weights' switch is made from the same
        weights again); it still counts among :attr:`n_updates`. A second target in a row beyond
        the gate is learnt, and so are those after it while they stay beyond: a stream that
        moved is followed from its second sample on."""
        if self._learn(z, y):
            self._bury()

    def _learn(self, z: np.ndarray, y: float, weigh: bool = True) -> bool:
        """:meth:`learn` without burying the members that died (a block's row the per-sample
        way buries them with the block's); whether the sample was learnt (not kept out).
        Without ``weigh`` (an ungated stack's :meth:`replay`), the members alone learn it: the
        weights are neither switched nor updated."""
        self._prepare(z, switch=weigh)
        if weigh and self.gate is not None and self._kept_out(y):
            return False
        refused = self._update_members(y)
        if refused:
            k = refused - 1
            raise FilterError(
                f"member {int(self.live[k])} ({type(self.stack[k].basis).__name__}) cannot "
                "learn this sample: its update would not be finite (or its mean step could "
                "pass 1e300)"
            )
        if self.M == 1:
            self.log_evidence += float(self.loglik[0])
        elif weigh:
            lse = _WEIGHTS.update_log_weights(self.log_prior, self.loglik, self.log_rate,
                                              self.log_keep, self.log_floor, self.new_log_w)
            self.log_w, self.new_log_w = self.new_log_w, self.log_w
            self.log_evidence += lse
        self.n_updates += 1
        self._cache_z = None
        if self._observers:
            self._observe(z)
        return True

    def _observe(self, z: np.ndarray) -> None:
        stack = self.stack
        still = []
        changed = []
        for gi, k in self._observers:
            basis = stack[k].basis
            if basis._observe(z) and gi >= 0:
                changed.append((gi, k))
            if basis.wants_observations:
                still.append((gi, k))
        # the slots of the members that changed are rewritten in their group's stacked
        # parameters (twins observe the same samples: a slot's members stay alike); a parameter
        # whose shape or type is not its stacked row's (a ragged group) restacks the group
        for gi, k in changed:
            group = self.groups[gi]
            owners = group[3]
            slot = owners.index(k)  # (``gi`` is set for a slot's owner only)
            stacked = group[2]
            for i, a in enumerate(stack[k].basis._params()):
                a = np.asarray(a)
                if a.shape != stacked[i].shape[1:] or a.dtype != stacked[i].dtype:
                    group[2] = stack_params([stack[j].basis._params() for j in owners])
                    break
                stacked[i][slot] = a
        self._observers = still

    # ------------------------------------------------------------------ dead members
    def _bury(self) -> None:
        """Remove the members that can never carry weight again (see the class docstring)."""
        if self.M == 1 or self.share_each > -np.inf:
            return  # (under a share every member keeps a weight)
        indptr, indices = (
            (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
            if self.transition is None
            else self.transition[:2]
        )
        if _WEIGHTS.reachable(self.log_w, indptr, indices, self._reach) < self.M:
            self._compact(self._reach.copy())

    def _compact(self, keep: np.ndarray) -> None:
        """Keep only the stack rows ``keep``; the numbers of the others never mattered again."""
        self.live = self.live[keep]
        F = self.F[keep]
        Fmax = int(F.max())
        # every field of the state: its rows ``keep``, cut to the new widest member
        self.state = State(*(np.ascontiguousarray(a[keep][(slice(None),)
                                                          + (slice(0, Fmax),) * (a.ndim - 1)])
                             for a in self.state))
        self.log_w = self.log_w[keep].copy()
        self.F = F
        self._per_member()
        self._build_groups()
        self._allocate_scratch()

    # ------------------------------------------------------------------ blocks
    @property
    def can_block(self) -> bool:
        """Whether the block path is exact now (no basis changes with the samples it learns)."""
        return not self._observers

    #: the block kernel's rent and its name there (see :data:`_BLOCKS`)
    _block_rent: tuple[Rented, str] = (_BLOCKS, "gaussian_block")

    def _block_kernel(self, parallel: bool) -> Callable[..., Any]:
        return gaussian_block_parallel if parallel else gaussian_block

    def _block_bought(self) -> bool:
        """Whether the rows of a block run in the block kernel now (else the per-sample way,
        paying its rent: :data:`_BLOCKS`)."""
        rented, name = self._block_rent
        Fmax = self.state.mu.shape[1]
        # (arguments of the kernel's types, for a first look into the on-disk cache)
        return rented.ready(name, self._block_args(
            self.order, np.empty((self.n_slots, 0, Fmax)), self._block_targets(np.empty(0)),
            self._block_outputs(0), np.empty(self.M, dtype=np.int64), None))

    def learn_block(
        self, Z: np.ndarray, Y: np.ndarray, keep_weights: bool = False, bury: bool = True
    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """Learn the rows ``(Z, Y)`` member by member, then the weights row by row: bit for bit
        what ``predict``/``learn`` row after row give (the members' filters do not depend on the
        weights, and each member's arithmetic is the same). Returns the one-step-ahead
        predictions ``(a, b, extra)``: for each row the mixture's ``(mean, var)`` (a classifier:
        ``(p0, p1)``) made before the row was learnt, and with ``keep_weights`` the mixtures
        themselves, ``extra = (log_weights, means, variances)``, each ``(B, M)`` over the stack
        as the block ran (else ``None``). Until the block kernel is bought (:data:`_BLOCKS`) the
        rows go one by one, :meth:`predict` and :meth:`learn`, to the same numbers.

        A row that a member cannot take safely raises :class:`FilterError` naming it, with the
        rows before it learnt and nothing of it or after it. ``bury``: whether the members that
        died are removed at the end (a caller inside a block leaves that to the block, whose
        outputs have one column per member of the stack it ran on).
        """
        B = Z.shape[0]
        self._pace.forget()  # the time of a block is not a sample's
        parts, done = [], 0
        while done < B:  # (more than one part while the pace probes, see Pace.split, or the
            # rows rent the kernel until it is bought)
            try:
                if self._block_bought():
                    n = self._block_pace.split(self.work, self.M, B - done)
                    parts.append(self._learn_part(Z[done:done + n], Y[done:done + n],
                                                  keep_weights, done))
                else:
                    parts.append(self._rows_renting(Z[done:], Y[done:], keep_weights, done))
                    n = parts[-1][0].shape[0]
            except FilterError as err:
                err.learnt = _joined([*parts, err.learnt])
                if bury:
                    self._bury()  # (the rows before the refused one were learnt)
                raise
            done += n
        if bury:  # (after the parts: a member buried later changes no number)
            self._bury()
        return _joined(parts)

    def _learn_part(self, Z: np.ndarray, Y: np.ndarray, keep_weights: bool,
                    offset: int) -> tuple:
        """:meth:`_learn_rows`, with the :attr:`gate`: the rows run as a block, and if the gate
        keeps one out (see :meth:`learn`; the block's predictions are the ones the rows had one
        by one), the stack goes back to before the block, learns the rows before it again
        (exact: the same arithmetic), keeps it out with the prediction it had, and goes on
        after it. A row the members refuse is asked of the gate first, one by one, as
        :meth:`learn` would."""
        if self.gate is None:
            return self._learn_rows(Z, Y, keep_weights, offset)
        parts: list = []
        while Z.shape[0]:
            saved = State(*(a.copy() for a in self.state))
            before = (self.log_w.copy(), self.log_evidence, self.n_updates)
            try:
                out = self._learn_rows(Z, Y, keep_weights, offset, saved)
            except FilterError as err:
                # the rows before the refused one are learnt (gated); the gate may keep the
                # refused row out, which one by one is asked before its update is
                t = err.rows_learnt - offset
                parts.append(err.learnt)
                try:
                    parts.append(self._one_row(Z[t], float(Y[t]), keep_weights))
                except FilterError:
                    err.learnt = _joined(parts)
                    raise err from None
                Z, Y, offset = Z[t + 1:], Y[t + 1:], offset + t + 1
                continue
            t, run = self._first_kept_out(out[0], out[1], Y)
            if t < 0:
                self._extremes = run
                parts.append(out)
                break
            self.state = saved
            self.log_w, self.log_evidence, self.n_updates = before
            self._cache_z = None
            if t:
                parts.append(self._learn_rows(Z[:t], Y[:t], keep_weights, offset))
            parts.append(_row_of(out, t))
            self._extremes = 1
            self.n_skipped += 1
            self.n_updates += 1
            Z, Y, offset = Z[t + 1:], Y[t + 1:], offset + t + 1
        return _joined(parts) if parts else self._empty_outputs(keep_weights)

    def _rows_renting(self, Z: np.ndarray, Y: np.ndarray, keep_weights: bool,
                      offset: int) -> tuple:
        """Rows ``offset ..`` of a block the per-sample way (:meth:`_one_row`), paying the block
        kernel's rent with their time, until it is paid or the rows end; their outputs as
        :meth:`learn_block` gives them. A row the members refuse raises :class:`FilterError` as
        the kernel's would: naming the row, with the rows before it learnt."""
        rented, name = self._block_rent
        # (each row as a sample's array: contiguous, the type the featurisers were compiled for)
        Z = np.ascontiguousarray(Z)
        parts: list = []
        for t in range(Z.shape[0]):
            if t and rented.ready(name, ()):  # (the first look was the caller's)
                break
            start = time.perf_counter()
            try:
                parts.append(self._one_row(Z[t], float(Y[t]), keep_weights))
            except FilterError as refused:
                err = FilterError(f"row {offset + t} of the block cannot be learnt safely: "
                                  f"{refused}")
                err.reason = str(refused)
                err.rows_learnt = offset + t
                err.learnt = _joined(parts) if parts else self._empty_outputs(keep_weights)
                raise err from None
            finally:
                rented.pay(time.perf_counter() - start)
        return _joined(parts)

    def _first_kept_out(self, a: np.ndarray, b: np.ndarray, Y: np.ndarray) -> tuple[int, int]:
        """The first row whose target the gate keeps out given the block's predictions ``(a,
        b)`` (-1: none), and the run of extremes after the last row when none is."""
        run = self._extremes
        for t, (mean, var, y) in enumerate(zip(a.tolist(), b.tolist(), Y.tolist())):
            if not self._beyond(y, mean, var):
                run = 0
                continue
            run += 1
            if run == 1:
                return t, 0
        return -1, run

    def _row_prediction(self, z: np.ndarray) -> tuple[float, float]:
        """A block's row's prediction as :meth:`learn_block` returns it: :meth:`predict`."""
        return self.predict(z)

    def _one_row(self, z: np.ndarray, y: float, keep_weights: bool) -> tuple:
        """A block's row the per-sample way (:meth:`_row_prediction`, :meth:`learn`), with its
        outputs as :meth:`learn_block` gives them."""
        mean, var = self._row_prediction(z)
        extra = ((self.log_prior[None, :].copy(), self.mean[None, :].copy(),
                  self.var[None, :].copy()) if keep_weights else None)
        self._learn(z, y)
        return np.array([mean]), np.array([var]), extra

    def _empty_outputs(self, keep_weights: bool) -> tuple:
        M = self.M
        return (np.empty(0), np.empty(0),
                tuple(np.empty((0, M)) for _ in range(3)) if keep_weights else None)

    def _learn_rows(
        self, Z: np.ndarray, Y: np.ndarray, keep_weights: bool, offset: int,
        saved: State | None = None,
    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """:meth:`learn_block` on rows ``offset ..`` of its block, in one call of the kernels,
        without burying the members that died (the caller does, after its last part);
        ``saved``: a copy of the state before the rows, if the caller made one."""
        B = Z.shape[0]
        M, Fmax = self.state.mu.shape
        parallel = self._block_pace.start(self.work, self.M, B)
        # slot-major, as the kernels read it (each fills the columns its members read)
        Phi3 = np.empty((self.n_slots, B, Fmax))
        self._featurize(np.ascontiguousarray(Z), Phi3, parallel)
        if saved is None:
            saved = State(*(a.copy() for a in self.state))  # what a refused row puts back
        out = self._member_pass(Phi3, Y, parallel)
        self._block_pace.stop()
        bad = out[-1]
        if (bad >= 0).any():
            t_bad = int(bad[bad >= 0].min())
            k = int(np.flatnonzero(bad == t_bad)[0])
            self.state = saved
            self._cache_z = None
            # the rows before it, learnt again (exact: none of them was refused), and their
            # predictions, which the error carries (``learnt``, as this method returns them)
            # (not burying the dead: the rest of the block, if the gate keeps this row out, runs
            # on the same stack, and its outputs have one column per member of it)
            learnt = (self.learn_block(Z[:t_bad], Y[:t_bad], keep_weights, bury=False) if t_bad
                      else self._empty_outputs(keep_weights))
            reason = (f"member {int(self.live[k])} ({type(self.stack[k].basis).__name__}) "
                      "refuses it")
            err = FilterError(f"row {offset + t_bad} of the block cannot be learnt safely: "
                              f"{reason}")
            err.reason = reason
            err.rows_learnt = offset + t_bad
            err.learnt = learnt
            raise err
        a, b = np.empty(B), np.empty(B)
        prior = np.empty((B if keep_weights else 0, M))
        self.log_evidence = _WEIGHTS.weigh_block(
            self.log_w, self.new_log_w, self.log_prior, self.transition is not None,
            *(self.transition if self.transition is not None else _NO_TRANSITION),
            self.log_floor, self.log_rate, self.log_keep, self.share_keep, self.share_each,
            out[0], out[1], self._block_logits(out), out[-2], a, b, prior, self.log_evidence,
        )
        self.n_updates += B
        self._cache_z = None
        return a, b, ((prior, out[0], out[1]) if keep_weights else None)

    def _member_pass(self, Phi3: np.ndarray, Y: np.ndarray,
                     parallel: bool) -> tuple[np.ndarray, ...]:
        """The block kernel over every member: the outputs of :meth:`_block_outputs` and each
        member's first row refused (-1: none), its status in ``self.status``."""
        B = Phi3.shape[1]
        Y = self._block_targets(Y)
        outs = self._block_outputs(B)
        bad = np.empty(self.M, dtype=np.int64)
        self._run_block(self._block_kernel(parallel), self.order, Phi3, Y, outs, bad, None)
        for k in np.flatnonzero(self.status == NEEDS_REPAIR).tolist():
            # member k stopped at row t for a covariance repair: its rows from t again, with the
            # repair (compiled on the first repair of the process; row t's owed update is applied
            # already, so the rows run as they would have: predict_member)
            t = int(bad[k])
            self._run_block(self._block_kernel(False), np.array([k], dtype=np.int64),
                            np.ascontiguousarray(Phi3[:, t:]), Y[t:], tuple(o[t:] for o in outs),
                            bad, True)
            if bad[k] >= 0:
                bad[k] += t
        return (*outs, bad)

    def _block_targets(self, Y: np.ndarray) -> np.ndarray:
        return np.asarray(Y, dtype=np.float64)

    def _block_outputs(self, B: int) -> tuple[np.ndarray, ...]:
        """The block kernel's per-row outputs: ``(mean, var, loglik)``, each ``(B, M)``."""
        M = self.M
        return np.empty((B, M)), np.empty((B, M)), np.empty((B, M))

    def _run_block(self, kernel: Callable[..., Any], order: np.ndarray, Phi3: np.ndarray,
                   Y: np.ndarray, outs: tuple[np.ndarray, ...], bad: np.ndarray,
                   repair: bool | None) -> None:
        kernel(*self._block_args(order, Phi3, Y, outs, bad, repair))

    def _block_args(self, order: np.ndarray, Phi3: np.ndarray, Y: np.ndarray,
                    outs: tuple[np.ndarray, ...], bad: np.ndarray, repair: bool | None) -> tuple:
        """The block kernel's arguments."""
        return (order, Phi3, self.src, Y, self._kernel_params, self._kernel_state, self.V, self.E,
                *outs, bad, self.status, repair)

    def _block_logits(self, out: tuple[np.ndarray, ...]) -> np.ndarray | None:
        """The members' logits of a block (a regressor has none)."""
        return None

    # ------------------------------------------------------------------ growth
    @property
    def can_grow(self) -> bool:
        """Whether every member's basis can take new inputs exactly (see :meth:`grow`)."""
        return all(m.basis.can_grow for m in self.stack)

    def grow(self, n_inputs: int) -> None:
        """Take ``n_inputs`` inputs instead of ``self.n_inputs``, the new ones last.

        Exact: every past sample had the new inputs at 0, where each growable basis leaves the
        features of the old inputs as they were and gives the new features the value 0 (or, for
        random Fourier features, new frequency columns that 0 ignores). The new weights have
        never been informed by data, so they join the posterior with their prior: variance
        ``var_theta`` (plus the random walk of every step filtered so far), independent of the
        rest. The weights of the ensemble do not change.
        """
        if self.n_inputs is None or n_inputs <= self.n_inputs:  # (None: not set up yet)
            raise ValueError(f"cannot grow from {self.n_inputs} to {n_inputs} inputs")
        mu, C, _ = self._flushed()
        stack = self.stack
        positions = [np.asarray(m.basis.grow(n_inputs), dtype=np.int64) for m in stack]
        F_new = np.array([m.basis.n_outputs for m in stack], dtype=np.int64)
        M, Fmax = self.M, int(F_new.max())
        mu_new = np.zeros((M, Fmax))
        C_new = np.zeros((M, Fmax, Fmax))
        n_filtered = self.state.n_filtered
        for k in range(M):
            f, pos = int(self.F[k]), positions[k]
            fresh = np.setdiff1d(np.arange(F_new[k]), pos)
            mu_new[k, pos] = mu[k, :f]
            C_new[k][np.ix_(pos, pos)] = C[k, :f, :f]
            vt = self.var_theta[k]
            if self.static[k]:
                C_new[k, fresh, fresh] = math.sqrt(vt)
            else:
                C_new[k, fresh, fresh] = vt + n_filtered[k] * self.var_rw[k]
        self.F = F_new
        self.n_inputs = n_inputs
        # every owed update is applied: nothing owed
        self.state = self.state._replace(mu=mu_new, C=C_new, pvec=np.zeros((M, Fmax)),
                                         pend=np.zeros(M, dtype=np.bool_))
        self._build_groups()
        self._allocate_scratch()

    # ------------------------------------------------------------------ views
    def _flushed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of the means, covariance factors and owed vectors with every owed update
        applied."""
        s = self.state
        mu, C, pvec = s.mu.copy(), s.C.copy(), s.pvec.copy()
        if s.pend.any():
            flush_stack(self._kernel_params,
                        tuple(s._replace(mu=mu, C=C, pvec=pvec, pend=s.pend.copy())),
                        np.zeros_like(mu))
        return mu, C, pvec

    @property
    def mu(self) -> np.ndarray:
        """The live members' posterior means ``(M, F_max)``, in stack order (a copy)."""
        return self._flushed()[0]

    @property
    def Sigma(self) -> np.ndarray:
        """The live members' posterior covariances ``(M, F_max, F_max)``, in stack order (a
        copy; zero-padded)."""
        _, C, _ = self._flushed()
        for k in np.flatnonzero(self.static).tolist():
            L = C[k]
            S = L.T @ L
            C[k] = np.triu(S) + np.triu(S, 1).T  # exactly symmetric
        return C

    def posterior(self, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Copies of member ``k``'s posterior mean ``(F_k,)`` and covariance ``(F_k, F_k)``
        (``k`` in the members' original order)."""
        rows = np.flatnonzero(self.live == k)
        if not rows.size:
            raise ValueError(f"member {k} is dead (it can never carry weight again): no posterior")
        row = int(rows[0])
        f = int(self.F[row])
        mu, C, _ = self._flushed()
        S = C[row, :f, :f]
        if self.static[row]:
            S = S.T @ S
            S = np.triu(S) + np.triu(S, 1).T
        return mu[row, :f].copy(), S.copy()

    def replay(self, Z: np.ndarray, Y: np.ndarray | Iterable[float]) -> None:
        """Filter a window ``(Z, Y)`` through every member, then restart the weights uniform.

        The weights take no part: no floor drops a member half-way through the window (its
        filter would then miss the rest of it), and the window's densities do not count.
        """
        Y = Y.tolist() if isinstance(Y, np.ndarray) else list(Y)
        # rows of a C-ordered array, as every other sample: a strided row (the warm-up's window
        # is Fortran-ordered) would compile each featurisation kernel once more, for nothing
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        if self.gate is None:
            # the members alone learn the rows: the weights' steps would be reset below (and
            # without a floor nothing dies); a gated stack's weights decide what it keeps out
            for z, y in zip(Z, Y, strict=True):
                self._learn(z, y, weigh=False)
            self.reset_weights()
            return
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
        """Normalised posterior weights after the last update (before the next switch), in the
        members' original order (0 for the dead)."""
        return self._full(np.exp(self.log_w), 0.0)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        # in a fixed order, so that equal states pickle to equal bytes however they were built
        state = {k: self.__dict__[k] for k in sorted(self.__dict__) if k not in self._scratch}
        # the kernels' parameters are the live bases' own: rebuilt on loading
        state.pop("groups", None)
        state.pop("_observers", None)
        if "_state" in state:
            # the owed updates applied (on copies): the same numbers as applying them later
            mu, C, pvec = self._flushed()
            members = state.pop("_state")._replace(mu=mu, C=_pack_covariances(C, self.static),
                                                   pvec=pvec, pend=np.zeros_like(self.state.pend))
            state["state"] = dict(zip(State._fields, members, strict=True))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.pop("groups", None)  # (pickles of an earlier version)
        if "_mu" in state:
            # (pickles from before the stack state was one record: its fields one by one)
            state["state"] = {field: state.pop(old) for field, old in _STATE_BEFORE_0_X.items()}
        fields = state.pop("state", None)
        self.__dict__.update(state)
        if fields is not None:
            if isinstance(fields["C"], tuple):
                fields["C"] = _unpack_covariances(fields["C"], state["static"])
            self.state = State(**fields)
            self._build_groups()
            self._allocate_scratch()


#: the engine attributes that held the state's fields before :class:`State` (older pickles)
_STATE_BEFORE_0_X = {"mu": "_mu", "C": "_C", "pvec": "pvec", "alpha0": "pc", "pg": "pg",
                     "pend": "pend", "n_filtered": "n_filtered"}


def _pack_covariances(C: np.ndarray,
                      static: np.ndarray) -> np.ndarray | tuple[str, int, np.ndarray]:
    """The lower triangles of the stacked ``C`` (half the bytes of a pickle), or ``C`` itself when
    that would lose a bit: a static member's ``U'`` is lower triangular and a dynamic member's
    ``Sigma`` symmetric to the last bit (its update is ``u_i u_j`` on both sides), which is
    checked rather than assumed."""
    Fmax = C.shape[1]
    upper = np.triu_indices(Fmax, 1)
    above = C[:, upper[0], upper[1]]
    below = C[:, upper[1], upper[0]]
    if not (np.all(above[static] == 0.0) and np.array_equal(above[~static], below[~static])):
        return C
    lower = np.tril_indices(Fmax)
    return ("tril", Fmax, C[:, lower[0], lower[1]])


def _unpack_covariances(packed: tuple[str, int, np.ndarray], static: np.ndarray) -> np.ndarray:
    _, Fmax, tri = packed
    C = np.zeros((tri.shape[0], Fmax, Fmax))
    rows, cols = np.tril_indices(Fmax)
    C[:, rows, cols] = tri
    dynamic = np.flatnonzero(~np.asarray(static, dtype=bool))
    C[dynamic[:, None], cols, rows] = tri[dynamic]  # Sigma's upper half from its lower half
    return C


#: (annotated: it is used above its definition, where mypy cannot infer its length)
_NO_TRANSITION: tuple[np.ndarray, np.ndarray, np.ndarray] = (
    np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
)
