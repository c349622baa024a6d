"""Empirical Bayes for the warm-up: type-II maximum likelihood from several starts, and draws
from the Laplace approximation around each mode (paper Sec. 4.1).

On a warm-up batch ``(Z, y)`` and a basis template:

1. :func:`fit_hyperparameters`: L-BFGS-B on the negative log evidence
   (:func:`river_doebe.evidence.objective`) from several starting length scales ``s * range(z_d)``;
   each start gives a :class:`Mode`;
2. :func:`~river_doebe.warmup.laplace.laplace_samples` (in :mod:`.laplace`, re-exported here):
   draws from ``N(u*, H^{-1})`` with ``H`` the Hessian of the negative log evidence at the mode (or
   ``u* + N(0, 1e-3 I)`` for families where that Hessian is too costly);
3. :func:`build_members`: the modes and their draws as a flat list of
   :class:`river_doebe.engine.Member` records, what an ensemble's warm-up builds its learners from;
   :func:`member_sets` does it for several templates on a pool of threads.

Each start and each mode's draws are independent jobs; the warm-up runs them on every core
(:func:`member_sets`), with the same members as a serial run. BLAS runs single-threaded inside
these functions: the matrices are small (``F ~ 100``), and its threads would only fight the jobs
(and each other) over the cores.
"""

from __future__ import annotations

import math
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from threadpoolctl import threadpool_limits

from river_doebe.engine import Member
from river_doebe.evidence import HyperLayout, _Objective
from river_doebe.warmup.laplace import (
    _draws,
    _single_threaded_blas,
    _warn,
    laplace_covariance,
    laplace_samples,
    repair_covariance,
)

__all__ = [
    "Mode",
    "build_members",
    "fit_hyperparameters",
    "laplace_covariance",
    "laplace_samples",
    "member_sets",
    "repair_covariance",
]


# ====================================================================== modes


@dataclass
class Mode:
    """One local optimum of the evidence (the result of one start).

    Attributes
    ----------
    basis
        The basis at the optimum (``template.with_hyper(psi*)``).
    var_theta, var_eps
        The optimal variances.
    u
        The optimum in unconstrained coordinates ``[log var_theta, log var_eps, psi*]``.
    neg_log_evidence
        ``-log p(y | u*)``.
    success
        The optimiser's convergence flag (a mode that ran out of iterations is kept, flagged).
    message
        The optimiser's message.
    n_iter
        Number of L-BFGS-B iterations.
    start_scale
        The ``s`` of the start that produced it (length scales started at ``s * range``).
    layout
        The :class:`HyperLayout` of ``u``.
    """

    basis: object
    var_theta: float
    var_eps: float
    u: np.ndarray
    neg_log_evidence: float
    success: bool
    message: str
    n_iter: int
    start_scale: float = float("nan")
    layout: HyperLayout | None = field(default=None, repr=False)


def _prepare(basis, Z, y, fit_basis):
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    if Z.ndim == 1:
        Z = Z[:, None]
    if Z.ndim != 2 or Z.shape[0] != y.shape[0]:
        raise ValueError(f"Z must be (N, D) and y (N,), got {Z.shape} and {y.shape}")
    if Z.shape[0] == 0:
        raise ValueError("the warm-up batch is empty")
    if not (np.all(np.isfinite(Z)) and np.all(np.isfinite(y))):
        raise ValueError("the warm-up batch contains NaN or infinite values")
    if fit_basis:
        basis.fit(Z)
    else:
        basis.initialize(Z.shape[1])
    return Z, y


# The fit is split into pure steps that return their diagnostics as notes instead of warning:
# the warm-up runs the starts (and the Laplace draws) of every family on a pool of threads, where
# warnings would interleave and ``warnings.catch_warnings`` is not thread-safe; the notes are then
# warned (or relayed) in the order of a serial run, from the calling thread.


def _degenerate_notes(Z, y, n_features) -> list[str]:
    N = Z.shape[0]
    notes = []
    if N < n_features:
        notes.append(
            f"warm-up batch has fewer samples ({N}) than features ({n_features}): the "
            "evidence is weakly identified"
        )
    if N > 1 and float(np.ptp(y)) == 0.0:
        notes.append(
            "warm-up target is constant: the noise and prior variances will go to their "
            "lower bounds"
        )
    const = np.flatnonzero(np.ptp(Z, axis=0) == 0.0) if N > 1 else np.arange(0)
    if const.size:
        notes.append(
            f"warm-up inputs {const.tolist()} are constant: their length scales start from a "
            "range of 1 and are not identified"
        )
    return notes


@dataclass
class _Start:
    """One start of the evidence maximisation, as planned (the starting point and its bounds)."""

    u0: np.ndarray
    scale: float
    layout: HyperLayout


@dataclass
class _Fit:
    """The plan of one basis' fit: the prepared batch, its starts, and notes on the data."""

    basis: object
    Z: np.ndarray
    y: np.ndarray
    starts: list
    maxiter: int
    seed: object
    notes: list


def _plan(basis, Z, y, var_theta, var_eps, starts, bounds, maxiter, seed, fit_basis,
          start_floor) -> _Fit:
    """Prepare the batch and the basis, and lay out the distinct starts (nothing optimised)."""
    Z, y = _prepare(basis, Z, y, fit_basis)
    layout = HyperLayout.from_basis(basis, bounds)
    notes = _degenerate_notes(Z, y, basis.n_outputs)
    starts = tuple(float(s) for s in starts)
    if not starts or any(not (np.isfinite(s) and s > 0) for s in starts):
        raise ValueError(f"starts must be positive numbers, got {starts}")
    if start_floor is None:
        start_floor = basis.start_floor
    start_floor = float(start_floor)
    if not (math.isfinite(start_floor) and 0.0 <= start_floor <= 1.0):
        raise ValueError(f"start_floor must be in [0, 1], got {start_floor!r}")
    planned: list[_Start] = []
    for s in starts:
        lay = layout.with_lengthscale_floor(Z, start_floor * s)
        u0 = lay.start(basis, Z, var_theta, var_eps, s)
        if not any(np.array_equal(u0, p.u0) for p in planned):
            planned.append(_Start(u0, s, lay))
    return _Fit(basis, Z, y, planned, int(maxiter), seed, notes)


def _run_start(fit: _Fit, start: _Start, u0=None):
    """L-BFGS-B from one start: ``(mode or None, why it failed, notes)``.

    Each start has its own objective (its penalty for a failed evaluation is relative to its own
    best value), so a start's result does not depend on which starts ran before it or beside it.
    """
    basis, s, layout = fit.basis, start.scale, start.layout
    obj = _Objective(basis, fit.Z, fit.y)
    try:
        res = optimize.minimize(
            obj,
            start.u0 if u0 is None else u0,
            jac=True,
            method="L-BFGS-B",
            bounds=layout.scipy_bounds(),
            options={"maxiter": fit.maxiter},
        )
    except Exception as err:  # noqa: BLE001 - any failure of a start is reported, not raised
        return None, f"optimiser raised {type(err).__name__}: {err}", []
    x = np.asarray(res.x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        return None, "optimum has non-finite hyperparameters", []
    obj.last_error = None
    f, _ = obj(x)  # re-evaluate: res.fun may be a penalty value
    if obj.last_error is not None:
        return None, f"evidence could not be evaluated at the optimum ({obj.last_error})", []
    vt, ve, psi = layout.unpack(x)
    try:
        fitted = basis.with_hyper(psi) if psi.size else basis
    except Exception as err:  # noqa: BLE001
        return None, f"with_hyper failed at the optimum: {err}", []
    if not (np.isfinite(vt) and np.isfinite(ve) and np.isfinite(f)):
        return None, "non-finite variances or evidence at the optimum", []
    msg = res.message if isinstance(res.message, str) else str(res.message)
    notes = []
    if res.success and int(res.nit) == 0:
        notes.append(
            f"start s={s:g} of {type(basis).__name__} did not move: the evidence is flat "
            "there (e.g. features vanish at these length scales); keeping it as a mode"
        )
    if not res.success:
        notes.append(
            f"start s={s:g} of {type(basis).__name__} did not converge ({msg}); keeping "
            "the last iterate"
        )
    mode = Mode(
        basis=fitted,
        var_theta=vt,
        var_eps=ve,
        u=x,
        neg_log_evidence=float(f),
        success=bool(res.success),
        message=msg,
        n_iter=int(res.nit),
        start_scale=s,
        layout=layout,
    )
    return mode, None, notes


def _collect(fit: _Fit, results) -> tuple[list, list, str | None]:
    """The modes of a fit from its starts' results (in the starts' order), its notes, and why it
    failed (``None`` when some start gave a mode): if every start failed, each is retried once
    from a random perturbation of its starting point, and the reason is set when the retries
    fail too.
    """
    name = type(fit.basis).__name__
    notes = list(fit.notes)
    modes, failures = [], []
    for start, (mode, reason, start_notes) in zip(fit.starts, results, strict=True):
        notes.extend(start_notes)
        if mode is None:
            notes.append(f"start s={start.scale:g} of {name} failed and is skipped: {reason}")
            failures.append(f"s={start.scale:g}: {reason}")
        else:
            modes.append(mode)
    if not modes:
        rng = np.random.default_rng(fit.seed)
        for start in fit.starts:
            u1 = start.layout.clip(start.u0 + 0.5 * rng.standard_normal(start.u0.shape))
            mode, reason, start_notes = _run_start(fit, start, u1)
            notes.extend(start_notes)
            if mode is not None:
                modes.append(mode)
            else:
                failures.append(f"s={start.scale:g} (retry): {reason}")
    if not modes:
        return [], notes, (
            f"every start of the evidence maximisation for {name} failed: " + "; ".join(failures)
        )
    return modes, notes, None


@_single_threaded_blas
def fit_hyperparameters(
    basis,
    Z,
    y,
    var_theta=1.0,
    var_eps=0.25,
    starts=(0.1, 1.0, 10.0),
    bounds=(1e-6, 1e2),
    maxiter=500,
    seed=None,
    fit_basis=True,
    start_floor=None,
):
    """Type-II maximum likelihood of ``var_theta``, ``var_eps`` and the basis' hyperparameters
    from several starts (paper Sec. 4.1).

    Each start sets every log length scale of the basis to ``log(s * range(Z[:, d]))`` for ``s``
    in ``starts`` (other basis parameters start at their current value, the variances at
    ``var_theta`` and ``var_eps``) and runs L-BFGS-B with the analytic gradient. Each start gives
    one :class:`Mode`; starts that coincide (a basis without length scales) are run once.

    Parameters
    ----------
    basis
        A :class:`~river_doebe.basis.Basis`; it is fitted to ``Z`` in place when ``fit_basis``.
    Z
        Warm-up inputs, shape ``(N, D)``.
    y
        Warm-up targets, shape ``(N,)``.
    var_theta, var_eps
        Starting variances.
    starts
        Multipliers ``s`` of the input ranges for the starting length scales.
    bounds
        ``(lo, hi)`` for the variances and the length scales (applied in log space).
    maxiter
        Maximum number of L-BFGS-B iterations per start.
    seed
        Seed of the random perturbation used to retry, once, the starts when every start failed.
    fit_basis
        Whether to call ``basis.fit(Z)`` first (data-dependent settings such as boundaries or
        centres).
    start_floor
        Each start searches length scales of at least ``start_floor`` times its starting value
        (``0``: only ``bounds``; ``None``: the basis family's own ``start_floor``, 0.1 for
        random Fourier features and 0 for the others), so that the starts stay distinct modes
        at their own scales: with the starts 0.1, 1 and 10 and ``0.1``, the widest start keeps
        length scales of at least each input's warm-up range. Unbounded, every start may end at
        the same short scales, and hyperparameters frozen after the warm-up cannot vouch for
        variation on scales shorter than the window's spread once later inputs leave its box
        (a random Fourier feature, which mixes every input, then responds with what is
        effectively noise); the smooth mode is the one that extrapolates, and the ensemble's
        weights choose between the modes on the stream.

    Returns
    -------
    list of Mode
        One per successful start, in the order of ``starts``.

    Raises
    ------
    RuntimeError
        If every start (and its retry) failed.

    Warns
    -----
    RuntimeWarning
        For a start that failed (skipped), did not converge (kept, ``success=False``) or did not
        move from its starting point (kept: a flat evidence), and for degenerate warm-up data
        (constant target or inputs, fewer samples than features).
    """
    fit = _plan(basis, Z, y, var_theta, var_eps, starts, bounds, maxiter, seed, fit_basis,
                start_floor)
    modes, notes, failure = _collect(fit, [_run_start(fit, start) for start in fit.starts])
    _warn(notes, stacklevel=3)
    if failure is not None:
        raise RuntimeError(failure)
    return modes


# ====================================================================== ensemble members


@_single_threaded_blas
def build_members(
    basis,
    Z,
    y,
    n_samples=5,
    starts=(0.1, 1.0, 10.0),
    seed=None,
    method="auto",
    var_theta=1.0,
    var_eps=0.25,
    bounds=(1e-6, 1e2),
    maxiter=500,
    fit_basis=True,
    perturb_var=1e-3,
    min_eigenvalue=1.0,
    start_floor=None,
):
    """Members of one basis family for an ensemble's warm-up: every mode of the evidence plus
    ``n_samples - 1`` draws around each (paper Sec. 4.1).

    Parameters
    ----------
    basis
        Template basis of the family; fitted to ``Z`` in place when ``fit_basis``.
    Z, y
        Warm-up batch, shapes ``(N, D)`` and ``(N,)``.
    n_samples
        Members per mode (the mode itself and ``n_samples - 1`` draws).
    starts
        Starting length-scale multipliers, see :func:`fit_hyperparameters`.
    seed
        Seed of the draws (each mode gets an independent stream); same seed, same members.
    method
        ``"auto"``, ``"laplace"`` or ``"perturb"``, see :func:`laplace_covariance`.
    var_theta, var_eps, bounds, maxiter, fit_basis, start_floor
        Passed to :func:`fit_hyperparameters`.
    perturb_var, min_eigenvalue
        Passed to :func:`laplace_samples`.

    Returns
    -------
    list of Member
        ``n_modes * n_samples`` members, grouped by mode, each group starting with the mode.
    """
    [(members, notes)] = member_sets(
        [basis],
        Z,
        y,
        n_samples=n_samples,
        starts=starts,
        seeds=[seed],
        method=method,
        var_theta=var_theta,
        var_eps=var_eps,
        bounds=bounds,
        maxiter=maxiter,
        fit_basis=fit_basis,
        perturb_var=perturb_var,
        min_eigenvalue=min_eigenvalue,
        start_floor=start_floor,
        n_threads=1,
    )
    _warn(notes, stacklevel=3)
    if isinstance(members, Exception):
        raise members
    return members


class _Inline:
    """An executor that runs each job when it is submitted, in the calling thread: the serial
    warm-up, with the same code path (and so the same numbers) as the pool."""

    def submit(self, fn, *args):
        future = Future()
        try:
            future.set_result(fn(*args))
        except Exception as err:  # noqa: BLE001 - handed over as the pool would
            future.set_exception(err)
        return future

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


#: what a family's own failure raises (it is then skipped, not the whole warm-up)
FAMILY_ERRORS = (RuntimeError, np.linalg.LinAlgError, ValueError, FloatingPointError)


def member_sets(
    templates,
    Z,
    y,
    n_samples=5,
    starts=(0.1, 1.0, 10.0),
    seeds=None,
    method="auto",
    var_theta=1.0,
    var_eps=0.25,
    bounds=(1e-6, 1e2),
    maxiter=500,
    fit_basis=True,
    perturb_var=1e-3,
    min_eigenvalue=1.0,
    start_floor=None,
    n_threads=1,
):
    """:func:`build_members` for several templates at once, on ``n_threads`` threads.

    Every ``(template, start)`` optimisation and then every mode's Laplace draws is a job of its
    own (pure: its own objective, its own random stream), so the members do not depend on the
    number of threads or on the order in which the jobs finish. BLAS is held to one thread for
    the duration (the jobs are the parallelism). Each template is fitted in place, like
    ``build_members``' ``basis``.

    Parameters
    ----------
    templates
        The basis templates.
    seeds
        One seed per template (``None``: fresh randomness for each).
    n_threads
        Threads of the pool (``1``: every job in the calling thread).
    n_samples, starts, method, var_theta, var_eps, bounds, maxiter, fit_basis, perturb_var,
    min_eigenvalue, start_floor
        As in :func:`build_members`.

    Returns
    -------
    list of tuple
        For each template, ``(members, notes)``: its members (grouped by mode, each group
        starting with the mode), or the exception that made it fail (one of
        :data:`FAMILY_ERRORS`), and the diagnostics of its fit (messages, in the order of a serial
        run), which the caller warns or relays.
    """
    n_samples = int(n_samples)
    if n_samples < 1:
        raise ValueError("n_samples must be at least 1")
    templates = list(templates)
    seeds = [None] * len(templates) if seeds is None else list(seeds)
    if len(seeds) != len(templates):
        raise ValueError(f"{len(seeds)} seeds for {len(templates)} templates")
    pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else _Inline()
    out: list = [None] * len(templates)
    with threadpool_limits(limits=1), pool:
        # 1. every start of every template (planned in this thread: it fits the bases)
        fits = []
        for i, (basis, seed) in enumerate(zip(templates, seeds, strict=True)):
            try:
                fit = _plan(basis, Z, y, var_theta, var_eps, starts, bounds, maxiter, seed,
                            fit_basis, start_floor)
            except FAMILY_ERRORS as err:
                out[i] = (err, [])
                continue
            fits.append((i, fit, [pool.submit(_run_start, fit, start) for start in fit.starts]))
        # 2. the modes of each template, in order, and the draws around them (queued behind the
        # starts still running)
        drawing = []
        for i, fit, futures in fits:
            modes, notes, failure = _collect(fit, [f.result() for f in futures])
            if failure is not None:
                out[i] = (RuntimeError(failure), notes)
                continue
            streams = np.random.SeedSequence(fit.seed).spawn(len(modes))
            jobs = [
                pool.submit(_draws, mode, fit.basis, fit.Z, fit.y, n_samples - 1,
                            np.random.default_rng(ss), method, perturb_var, 1e-4, min_eigenvalue)
                for mode, ss in zip(modes, streams, strict=True)
            ]
            drawing.append((i, fit, modes, notes, jobs))
        # 3. the members
        for i, fit, modes, notes, jobs in drawing:
            family = type(fit.basis).__name__
            members = []
            try:
                for k, (mode, job) in enumerate(zip(modes, jobs, strict=True)):
                    draws, draw_notes = job.result()
                    notes.extend(draw_notes)
                    members.append(
                        Member(mode.basis, mode.var_theta, mode.var_eps, 0.0, family, k, True)
                    )
                    members.extend(Member(b, vt, ve, 0.0, family, k, False) for b, vt, ve in draws)
            except FAMILY_ERRORS as err:
                out[i] = (err, notes)
                continue
            out[i] = (members, notes)
    return out
