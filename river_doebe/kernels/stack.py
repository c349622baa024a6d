"""The member stack: covariance forms, the predict sweep and the owed updates. Numba, no river.

A *stack* holds ``M`` Bayesian linear learners of possibly different feature counts ``F[m]``,
zero-padded to ``F_max``: means ``mu (M, F_max)`` and covariance factors ``C (M, F_max,
F_max)``. Member ``m`` only ever reads and writes its leading ``F[m]`` entries. The kernels take
the stack as two records of arrays with one row per member: its parameters :class:`Params` and
its state :class:`State`, everything that learning changes; the engine pickles, compacts and
rolls back a stack field by field of :class:`State`. A kernel called from Python takes each
record as a plain tuple of its fields in the record's order (``tuple(state)``) and names it on
entry (``State(*state)``): Numba's dispatcher types a plain tuple of arrays from a cached
fingerprint, but encodes a named tuple's class and field names again at every call, which cost
a per-sample step more than the rest of its dispatch (``benchmarks/results/engine.md``).

One step of member ``m`` with features ``phi`` (paper Sec. 3.1-3.2; a Kalman filter with a random
walk of variance ``var_rw`` on the weights), ``Sigma_pred = Sigma + var_rw I``:

- predict: ``v = Sigma_pred phi``; ``mean = phi' mu``; ``var = phi' v + var_eps``
- update with a likelihood step that gives a gain ``g`` and a curvature ``c``:
  ``mu += v g``; ``Sigma = Sigma_pred - c v v'``. The Gaussian likelihood has ``g = (y - mean) /
  var`` and ``c = 1 / var``; the logistic one its Laplace step.

**Two covariance forms.** The standard form above subtracts ``c v v'``, which cancels badly when
``c v v'`` is nearly ``Sigma_pred`` in some direction (unscaled inputs such as timestamps, or a
tiny noise variance): the computed ``Sigma`` can lose positive definiteness and a later
predictive variance can come out negative. Members are therefore kept in one of two forms:

- *static* members (``var_rw = 0``) keep an upper-triangular square root ``U`` with ``Sigma =
  U U'``, stored as ``C[m] = U'`` (lower triangular, so that a column of ``U`` is a contiguous
  row). The predictive variance ``|U' phi|^2 + var_eps`` is a sum of squares, and the update is
  Carlson's triangular square-root step (Carlson 1973), which never subtracts covariances: with
  ``f = U' phi``, ``alpha_0 = 1 / c - |f|^2`` (``var_eps`` for the Gaussian, ``1 / lambda`` for
  the logistic step) and ``alpha_j = alpha_{j-1} + f_j^2``, column ``j`` of ``U`` becomes
  ``sqrt(alpha_{j-1} / alpha_j) U_j - f_j / sqrt(alpha_{j-1} alpha_j) e_{j-1}`` with ``e_j =
  e_{j-1} + f_j U_j``; then ``e_F = Sigma phi = v``. So ``Sigma`` stays positive semi-definite
  whatever the inputs, and only half of ``C`` is touched.
- *dynamic* members (``var_rw > 0``) cannot have an ``O(F^2)`` square-root step (the random walk
  adds a full-rank ``var_rw I``); they keep ``Sigma`` itself, updated as ``Sigma += var_rw I -
  u u'`` with ``u = v sqrt(c)`` (symmetric to the last bit, and no ``v v'`` that could overflow).
  The random walk keeps ``Sigma_pred`` at least ``var_rw I``; if rounding ever breaks that
  (``phi' Sigma_pred phi < var_rw |phi|^2``, detected in the predict sweep), the sweep repairs
  the member's ``Sigma`` (:func:`repair_covariance`) and predicts again; only a repaired
  covariance that still gives a negative quadratic form refuses the sample (status 3 of
  :func:`predict_member`).

**Deferred updates.** A member's ``O(F^2)`` covariance update is not applied at once: the update
step records it (``pend``, ``pvec``, ``alpha0``, ``pg``) and the next predict sweep applies it row
by row in the same pass that reads the row for the next prediction, so ``C`` is read and written
once per step. The mean update is deferred too: a static member's needs ``e_F``, and a dynamic
member's (with the scaling of its owed vector) goes through rows the sweep reads anyway, so the
update step touches no member's rows but to keep its owed vector. Whether a mean step stays
finite is checked by the update from scalars alone (:func:`step_is_finite`). The arithmetic
is exactly the same whether a pending update is applied inside a predict sweep or on its own
(:func:`flush_stack`), so *when* it is applied never changes any later number: a model may be
pickled, copied or inspected at any time.

References
----------
[^1]: Carlson, N. A. (1973). Fast triangular formulation of the square root filter. AIAA Journal,
    11(9), 1259-1265.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numba
import numpy as np

from river_doebe.kernels.jit import kernel, stack_kernel
from river_doebe.kernels.lanes import (
    carlson_dot,
    carlson_rows4,
    dynamic_sweep,
    triangular_products,
)

__all__ = [
    "NEEDS_REPAIR",
    "Params",
    "State",
    "flush_stack",
    "owe_update",
    "predict_member",
    "predict_stack",
    "predict_stack_parallel",
    "reachable",
    "record_update",
    "repair_covariance",
    "settle_step",
    "step_is_finite",
]

#: the members' parameters: feature counts ``F`` (int64), ``static`` (bool: ``var_rw == 0``), the
#: random-walk, prior and noise variances ``var_rw``, ``var_theta``, ``var_eps`` (float64)
Params = namedtuple("Params", ("F", "static", "var_rw", "var_theta", "var_eps"))

#: what learning changes in the members: means ``mu (M, F_max)``, covariance factors ``C (M,
#: F_max, F_max)``, the owed update (its vector ``pvec (M, F_max)``, its mean gain ``pg``, and
#: ``alpha0``: a static member's ``alpha_0``, a dynamic member's ``sqrt(c)`` that scales
#: ``pvec``; ``pend``: whether one is owed) and ``n_filtered``, the steps each
#: member filtered
State = namedtuple("State", ("mu", "C", "pvec", "alpha0", "pg", "pend", "n_filtered"))

#: a dynamic member's ``phi' Sigma_pred phi`` may fall short of ``var_rw |phi|^2`` by this
#: relative amount (rounding) before its covariance counts as broken
_PSD_SLACK = 1e-8

#: the bound on ``|Sigma_pred phi| |g|`` (a mean step) beyond which an update is refused
_MAX_STEP = 1e300

#: the status of :func:`predict_member` run without its repair for a member that needs it
NEEDS_REPAIR = 4


@kernel(inline="always")
def _static_sweep(f, owes, want, phi, mu, L, fv, e, pf, alpha0, g):
    """One pass over a static member's factor ``L = U'``: apply the owed update (``pf`` = the
    ``f`` of the update, ``alpha0``, mean gain ``g``; ``alpha0 = inf``: the covariance does not
    change, only the mean), and with ``want`` write ``fv = U' phi`` for the new ``phi``."""
    if owes and alpha0 != np.inf:
        # every row's sqrt(alpha_j) first, each in e[j] until its row zeroes it: computed
        # together the square roots overlap, where one a row would hold up that row
        a_j = alpha0
        for j in range(f):
            a_j = a_j + pf[j] * pf[j]
            e[j] = math.sqrt(a_j)
        sa = math.sqrt(alpha0)
        start = 0
        if want:  # rows four at a time, then the rest row by row
            start = f - f % 4
            for j in range(0, start, 4):
                sa = carlson_rows4(L, j, e, pf, phi, fv, sa)
        for j in range(start, f):
            row = L[j]
            fj = pf[j]
            sb = e[j]
            e[j] = 0.0
            beta = sa / sb
            gam = fj / (sa * sb)
            if want:  # the row's step and its product with phi in one pass
                fv[j] = carlson_dot(row, j + 1, e, fj, beta, gam, phi)
            else:
                for i in range(j + 1):
                    u = row[i]
                    row[i] = beta * u - gam * e[i]
                    e[i] += fj * u
            sa = sb
    else:
        if owes:  # the covariance stays: only the mean's step e = U f (= Sigma phi)
            for i in range(f):
                e[i] = 0.0
            for j in range(f):
                row = L[j]
                fj = pf[j]
                for i in range(j + 1):
                    e[i] += fj * row[i]
        if want:
            triangular_products(L, f, phi, fv)
    if owes and g != 0.0:
        for i in range(f):
            mu[i] += e[i] * g


@kernel(inline="always")
def _moments(f, is_static, phi, mu, v):
    """``(mean, q, pp)``: ``phi' mu``, the quadratic form of the prediction (``|U' phi|^2`` or
    ``phi' Sigma_pred phi``) and, for a dynamic member, ``|phi|^2``."""
    s = 0.0
    q = 0.0
    pp = 0.0
    if is_static:
        for i in range(f):
            q += v[i] * v[i]
            s += phi[i] * mu[i]
    else:
        for i in range(f):
            q += phi[i] * v[i]
            s += phi[i] * mu[i]
            pp += phi[i] * phi[i]
    return s, q, pp


# not inlined: a kernel's prange body calls it with the records whole (Numba loses the writes
# through a record's arrays when they are inlined into a parallel loop)
@kernel(no_cpython_wrapper=True)
def predict_member(m, phi, p, s, V, E, mean, var, repair):
    """Member ``m``'s step (parameters ``p``, state ``s``): apply its owed update and write its
    predictive ``mean[m]``, ``var[m]`` and ``V[m]`` (``U' phi`` static, ``Sigma_pred phi``
    dynamic); ``E[m]`` is its scratch.

    Returns a status: 0 fine; 2 the moments are not finite (the features are too large); 3 a
    dynamic member's covariance lost its positive definiteness along ``phi`` (rounding) and even
    the repaired one (:func:`repair_covariance`, then predicting again) gives a negative
    ``phi' Sigma_pred phi``. A repair whose prediction falls short of ``var_rw |phi|^2`` only by
    rounding is accepted: the variance is still at least the noise variance.

    ``repair`` is ``None`` or ``True``: with ``None`` a member whose covariance needs the repair
    returns :data:`NEEDS_REPAIR` instead, its owed update applied and nothing else written, and
    its caller runs the step again with ``True`` (the owed update is not applied twice, and the
    prediction comes out as if it had been repaired at once). Numba compiles a function once per
    argument type and leaves out a branch on an argument that is ``None``: the repair (an
    eigendecomposition, seconds of a fresh install's first use for a step that almost never
    runs) is compiled with the ``True`` variant, on the first repair of the process.
    """
    f = p.F[m]
    pend = s.pend
    owes = pend[m]
    if owes:
        pend[m] = False
    is_static = p.static[m]
    mu, C, pvec = s.mu, s.C, s.pvec
    if is_static:
        _static_sweep(f, owes, True, phi, mu[m], C[m], V[m], E[m], pvec[m], s.alpha0[m],
                      s.pg[m])
    else:
        if owes:
            settle_step(f, mu[m], pvec[m], s.pg[m], s.alpha0[m])
        dynamic_sweep(C[m], f, pvec[m], phi, V[m], p.var_rw[m], owes, True)
    sm, q, pp = _moments(f, is_static, phi, mu[m], V[m])
    if math.isfinite(sm) and math.isfinite(q) and not is_static:
        if not q >= p.var_rw[m] * pp * (1.0 - _PSD_SLACK):
            if repair is None:
                return NEEDS_REPAIR
            repair_covariance(C[m, :f, :f])
            dynamic_sweep(C[m], f, pvec[m], phi, V[m], p.var_rw[m], False, True)
            sm, q, pp = _moments(f, False, phi, mu[m], V[m])
            if q < 0.0:
                return 3
    mean[m] = sm
    var[m] = q + p.var_eps[m]
    if not (math.isfinite(sm) and math.isfinite(var[m])):
        return 2
    return 0


def _predict_stack(order, Phi, src, params, state, V, E, mean, var, status, repair):
    """:func:`predict_member` for every member of ``order`` (parameters ``params``, state
    ``state``: plain tuples of the fields of :class:`Params` and :class:`State`) on the features
    of its slot ``Phi[src[m]]``, each member on its own (``prange``: the parallel twin spreads them
    over the threads, in contiguous runs of ``order``, a permutation of the members that mixes
    their costs evenly, see :func:`river_doebe.engine.threads.balanced_order`); writes
    ``status`` and returns how many are not 0 (``repair``: see :func:`predict_member`)."""
    p = Params(*params)
    s = State(*state)
    M = order.shape[0]
    for j in numba.prange(M):
        m = order[j]
        status[m] = predict_member(m, Phi[src[m]], p, s, V, E, mean, var, repair)
    n_bad = 0
    for j in range(M):
        if status[order[j]]:
            n_bad += 1
    return n_bad


predict_stack, predict_stack_parallel = stack_kernel(_predict_stack)


@kernel()
def flush_stack(params, state, E):
    """Apply every owed update of the state now (bit for bit what the next predict sweep would
    do); ``params``, ``state``: plain tuples of the fields of :class:`Params` and :class:`State`
    (its ``mu``, ``C``, ``pvec`` and ``pend`` are written: a caller that wants the state as it
    is passes copies of them); ``E`` is scratch of the shape of ``mu``."""
    p = Params(*params)
    s = State(*state)
    mu, C, pvec, pend = s.mu, s.C, s.pvec, s.pend
    for m in range(mu.shape[0]):
        if not pend[m]:
            continue
        pend[m] = False
        if p.static[m]:
            _static_sweep(p.F[m], True, False, mu[m], mu[m], C[m], mu[m], E[m], pvec[m],
                          s.alpha0[m], s.pg[m])
        else:
            settle_step(p.F[m], mu[m], pvec[m], s.pg[m], s.alpha0[m])
            dynamic_sweep(C[m], p.F[m], pvec[m], mu[m], mu[m], p.var_rw[m], True, False)


@kernel(inline="always")
def step_is_finite(is_static, q, var_theta, var_rw, n, g):
    """Whether the mean step ``mu += Sigma_pred phi g`` is certain to stay within
    :data:`_MAX_STEP` (``q = phi' Sigma_pred phi``, or ``|U' phi|^2`` for a static member), from
    scalars alone: each entry of ``Sigma_pred phi`` is at most ``sqrt(lambda q)`` in size
    (Cauchy-Schwarz in the inner product of ``Sigma_pred``), where ``lambda`` bounds the
    largest eigenvalue of ``Sigma_pred``. A static member has ``Sigma <= var_theta I`` (an
    update only takes away); a dynamic one after ``n`` steps ``Sigma_pred <= (var_theta + n
    var_rw) I`` (each step takes away, then adds the random walk's ``var_rw I``), doubled here
    against rounding. So the step's vectors are not read: the update of a large stack touches
    none of its members' rows."""
    lam = var_theta if is_static else 2.0 * (var_theta + (n + 1.0) * var_rw)
    return math.sqrt(lam * q) * abs(g) <= _MAX_STEP


@kernel(inline="always")
def record_update(is_static, g, c, a0, alpha0, pg, m):
    """Record member ``m``'s owed update for gain ``g`` and curvature ``c``: its mean gain
    ``pg[m] = g`` and, for a static member, ``alpha0[m] = a0 = 1/c - |f|^2`` (computed by the
    likelihood without cancellation), for a dynamic one ``alpha0[m] = sqrt(c)``: the next
    sweep takes the mean step ``mu += v g`` and scales the owed vector ``v`` by ``sqrt(c)``
    (:func:`settle_step`), on rows it reads anyway."""
    pg[m] = g
    alpha0[m] = a0 if is_static else math.sqrt(c)


@kernel(inline="always")
def settle_step(f, mu, pv, g, r):
    """A dynamic member's owed mean step and the owed vector's scale (see
    :func:`record_update`): ``mu += pv g``, then ``pv *= r``."""
    for i in range(f):
        mu[i] += pv[i] * g
        pv[i] *= r


@kernel(inline="always")
def owe_update(m, f, V, s):
    """After :func:`record_update`: member ``m`` owes the update it recorded in ``V[m]``, kept in
    ``s.pvec`` until the next predict sweep applies it (``V`` is the sweep's scratch)."""
    pvec = s.pvec
    for i in range(f):
        pvec[m, i] = V[m, i]
    s.pend[m] = True
    s.n_filtered[m] += 1


@kernel(allocates=True, no_cpython_wrapper=True)
def repair_covariance(S):
    """Replace ``S`` (in place) by the nearest positive semi-definite matrix to its symmetric
    part (eigenvalues clipped at 0), exactly symmetric: a dynamic member's rare repair after
    rounding broke it. (Loops rather than array expressions or a slice assignment: each of those
    compiles its own helpers, a slice assignment Numba's shape-mismatch message with its string
    formatting, seconds of a fresh install's first use for a step that almost never runs.)"""
    n = S.shape[0]
    A = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            A[i, j] = 0.5 * (S[i, j] + S[j, i])
    lam, Q = np.linalg.eigh(A)
    for i in range(n):
        for j in range(i + 1):
            acc = 0.0
            for k in range(n):
                if lam[k] > 0.0:
                    acc += Q[i, k] * lam[k] * Q[j, k]
            S[i, j] = acc
            S[j, i] = acc


@kernel()
def reachable(log_w, indptr, indices, out):
    """The members that can still carry weight: those with weight (``log_w > -inf``) and those a
    switching matrix (CSC ``indptr``, ``indices`` of its non-zero entries) lets weight reach
    from them, step after step. Writes the mask ``out``; returns how many there are."""
    M = log_w.shape[0]
    for j in range(M):
        out[j] = log_w[j] > -np.inf
    changed = indptr.shape[0] == M + 1
    while changed:
        changed = False
        for j in range(M):
            if out[j]:
                continue
            for p in range(indptr[j], indptr[j + 1]):
                if out[indices[p]]:
                    out[j] = True
                    changed = True
                    break
    n = 0
    for j in range(M):
        if out[j]:
            n += 1
    return n
