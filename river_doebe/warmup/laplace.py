"""Draws around a mode of the evidence: the Laplace approximation (paper Sec. 4.1).

:func:`laplace_samples` draws ``u ~ N(u*, H^{-1})``, with ``H`` the Hessian of the negative log
evidence at the mode ``u*``, repaired where it is not positive definite
(:func:`repair_covariance`), or ``u* + N(0, 1e-3 I)`` for families where the Laplace step is not
wanted (an RBF network's centres), as the paper does. The draws of a mode are one pure job of the
warm-up (:func:`river_doebe.warmup.empirical_bayes.member_sets`): its diagnostics come back as
notes, warned by the public functions here.

The curvature costs at most :data:`CURVATURE_BUDGET` Hessian-vector products (each a central
difference of the analytic gradient, two evaluations of the evidence), whatever the number ``P``
of hyperparameters, and nothing of size ``P x P`` is built for the draws:

- up to ``CURVATURE_BUDGET`` hyperparameters (every stream of the paper: ``P = D + 2`` with
  ``D <= 21``) the Hessian is computed in full, one column per product, as before;
- beyond it (ARD length scales of many inputs), a Lanczos basis of ``CURVATURE_BUDGET - 4``
  directions captures the stiff directions of ``H`` (its Ritz pairs), and four random probes
  orthogonal to that basis measure the mean curvature left in the others (a Hutchinson estimate);
  the repaired covariance is then ``I / c + Q (diag(1 / lambda) - I / c) Q'``, drawn from with
  ``O(P k)`` memory. It equals the repaired exact one when ``H`` has at most that many eigenvalues
  above the floor and the rest equal (flat directions of irrelevant inputs); otherwise the other
  directions get their mean curvature rather than their own. The draws' cost is then linear in
  ``P`` (and in the number of inputs), where the full Hessian is quadratic in time and memory;
- the perturbation is drawn as ``u* + sqrt(perturb_var) z``, without a ``P x P`` matrix (an RBF
  network's ``P = (n_centres + 1) D + 2``).

A mode whose noise variance sits at (or near) its lower bound is a mode the window cannot place:
when the window has fewer samples than the basis has features (wide inputs, a short warm-up),
the features can fit every sample, the evidence is flat in the noise variance below the smallest
signal eigenvalue, and the optimiser ends on the bound. A Gaussian around that point (its
curvature floored) keeps every draw there too: members that claim almost no noise, certain of
their predictions once the stream has pinned their weights down, and pruned by the ensemble's
weights within a few samples however good their means are (a linear target in 450 words: the
linear family's every member). There, each draw's noise variance comes instead from the profile
of the evidence over the bounded range (the other hyperparameters at the mode; the bounds' log-
uniform prior): stratified draws from that one-dimensional posterior, so that the members span
the noise levels the window cannot tell apart and the stream picks among them. A noise-free
target (a profile that keeps rising to the bound) keeps them there.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from river_doebe.evidence import HyperLayout, objective

__all__ = ["CURVATURE_BUDGET", "laplace_covariance", "laplace_samples", "repair_covariance"]

#: the most Hessian-vector products the curvature of one mode costs (the full Hessian up to this
#: many hyperparameters, a Lanczos approximation of this many products beyond)
CURVATURE_BUDGET = 64

#: of the budget of a Lanczos approximation, the random probes of the curvature its basis leaves
_PROBES = 4

#: a mode whose log noise variance is within this of its lower bound is on it (see the module's
#: docstring): the draws take their noise variance from its profile evidence
NOISE_AT_BOUND = 1.0

#: points of the grid of log noise variances over the bounds for that profile
_NOISE_GRID = 65


def _single_threaded_blas(func):
    """Run ``func`` with one BLAS thread: the fit works on F x F and N x F matrices (F ~ 100),
    too small for several threads to share, which would only compete for the cores with the
    fit's own threads."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with threadpool_limits(limits=1):
            return func(*args, **kwargs)

    return wrapper


def _warn(notes, stacklevel):
    for note in notes:
        warnings.warn(note, RuntimeWarning, stacklevel=stacklevel + 1)


def repair_covariance(H, min_eigenvalue=1.0):
    """Covariance ``H^{-1}`` of a Laplace approximation, repaired when ``H`` is not positive
    definite.

    ``H`` is symmetrised and eigendecomposed, and its eigenvalues are clipped below at
    ``min_eigenvalue`` (negative, zero, tiny or non-finite curvature: the Laplace approximation
    is not valid there, and the floor caps the spread of the draws in that direction at a
    standard deviation of ``1 / sqrt(min_eigenvalue)`` in ``u`` coordinates).

    Parameters
    ----------
    H
        Square Hessian, shape ``(P, P)``.
    min_eigenvalue
        Positive floor of the eigenvalues of ``H``.

    Returns
    -------
    cov : numpy.ndarray
        ``V diag(1 / max(lambda, floor)) V'``, symmetric positive definite.
    root : numpy.ndarray
        A matrix ``R`` with ``R R' = cov``, for drawing.
    n_clipped : int
        How many eigenvalues were clipped.
    """
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 2 or H.shape[0] != H.shape[1]:
        raise ValueError(f"H must be square, got shape {H.shape}")
    if not min_eigenvalue > 0:
        raise ValueError("min_eigenvalue must be positive")
    if H.shape[0] == 0:
        return np.zeros((0, 0)), np.zeros((0, 0)), 0
    H = np.where(np.isfinite(H), H, 0.0)
    H = 0.5 * (H + H.T)
    lam, V = np.linalg.eigh(H)
    clipped = lam < min_eigenvalue
    lam = np.where(clipped, min_eigenvalue, lam)
    root = V / np.sqrt(lam)
    cov = (V / lam) @ V.T
    return 0.5 * (cov + cov.T), root, int(np.sum(clipped))


def _hessian(u, basis, Z, y, step):
    """Central finite differences of the analytic gradient, symmetrised."""
    u = np.asarray(u, dtype=np.float64)
    P = u.shape[0]
    H = np.empty((P, P))
    Phi = basis.featurize(Z) if P == 2 else None
    for i in range(P):
        h = step * max(1.0, abs(u[i]))
        up, um = u.copy(), u.copy()
        up[i] += h
        um[i] -= h
        _, gp = objective(up, basis, Z, y, Phi=Phi)
        _, gm = objective(um, basis, Z, y, Phi=Phi)
        H[:, i] = (gp - gm) / (2.0 * h)
    return 0.5 * (H + H.T)


def _hvp(u, basis, Z, y, step, V):
    """``H V`` for the columns of ``V (P, k)`` (unit vectors): central differences of the
    analytic gradient along each, with the step of :func:`_hessian` along a coordinate."""
    u = np.asarray(u, dtype=np.float64)
    out = np.empty_like(V)
    for j in range(V.shape[1]):
        v = V[:, j]
        h = step * max(1.0, float(np.abs(v) @ np.abs(u)))
        _, gp = objective(u + h * v, basis, Z, y)
        _, gm = objective(u - h * v, basis, Z, y)
        out[:, j] = (gp - gm) / (2.0 * h)
    return out


def _orthogonal(W, V):
    """The columns of ``W`` without their components along the orthonormal columns of ``V``
    (twice: one pass loses orthogonality in floating point), each normalised."""
    for _ in range(2):
        W = W - V @ (V.T @ W)
    norms = np.linalg.norm(W, axis=0)
    return W / np.where(norms > 0, norms, 1.0), norms


def _krylov_curvature(u, basis, Z, y, step, n_lanczos, n_probes):
    """A low-rank-plus-constant approximation of the Hessian at ``u`` from ``n_lanczos +
    n_probes`` Hessian-vector products: ``(theta, Q, c)`` with ``H ~ Q diag(theta) Q' + c (I -
    QQ')``.

    ``Q`` is an orthonormal basis of the Krylov space of ``H`` from a random start (Lanczos, with
    full reorthogonalisation; a fresh random direction continues it if the space closes early),
    rotated onto the Ritz vectors of the projection ``Q' H Q`` (symmetrised: finite differences
    are not exactly symmetric), and ``theta`` the Ritz values, which approximate the extreme
    eigenvalues first. ``c`` is the mean Rayleigh quotient of ``n_probes`` random directions
    orthogonal to ``Q``: the mean curvature left outside it. A fixed-step Lanczos is used, not
    scipy's ``eigsh``, whose restarts converge chosen eigenpairs at an unbounded number of
    products: here the budget is fixed and every Ritz pair is used.
    """
    u = np.asarray(u, dtype=np.float64)
    P = u.shape[0]
    m = min(int(n_lanczos), P)
    # the start and the probes are a numerical device, not the model's randomness: a fixed
    # stream, so the covariance of a mode does not depend on the seed of its draws
    rng = np.random.default_rng(0x1A9C)
    V = np.empty((P, m))
    HV = np.empty((P, m))
    v = rng.standard_normal(P)
    v /= np.linalg.norm(v)
    for j in range(m):
        V[:, j] = v
        HV[:, j] = _hvp(u, basis, Z, y, step, v[:, None])[:, 0]
        if j + 1 == m:
            break
        w, norm = _orthogonal(HV[:, j : j + 1], V[:, : j + 1])
        if not norm[0] > 1e-10 * max(1.0, float(np.linalg.norm(HV[:, j]))):
            # an invariant subspace: go on from a direction it does not hold yet
            w, _ = _orthogonal(rng.standard_normal((P, 1)), V[:, : j + 1])
        v = w[:, 0]
    T = V.T @ HV
    theta, R = np.linalg.eigh(0.5 * (T + T.T))
    Q = V @ R
    c = math.nan
    if m < P and n_probes > 0:
        W, _ = _orthogonal(rng.standard_normal((P, int(n_probes))), V)
        HW = _hvp(u, basis, Z, y, step, W)
        c = float(np.mean(np.einsum("pk,pk->k", W, HW)))
    return theta, Q, c


class _Spread:
    """The Gaussian ``N(0, cov)`` of the draws around a mode, in the form its method gives:

    - ``dense``: a ``P x P`` covariance and a root of it (the full Hessian, small ``P``);
    - ``isotropic``: ``var * I`` (the perturbation);
    - ``low-rank``: ``I / c + Q (diag(1 / lam) - I / c) Q'`` with ``Q (P, k)`` orthonormal.

    Only the first holds a ``P x P`` matrix; :meth:`covariance` builds one on request (the public
    :func:`laplace_covariance`), the draws never do.
    """

    def __init__(self, P, cov=None, root=None, var=None, Q=None, lam=None, c=None):
        self.P, self._cov, self._root, self._var = P, cov, root, var
        self._Q, self._lam, self._c = Q, lam, c

    def draw(self, u, z):
        """``u + R z'`` for the rows of ``z (n, P)``, with ``R R' = cov``."""
        if self._root is not None:
            return u[None, :] + z @ self._root.T
        if self._Q is None:
            return u[None, :] + math.sqrt(self._var) * z
        s = 1.0 / math.sqrt(self._c)
        gain = 1.0 / np.sqrt(self._lam) - s
        return u[None, :] + s * z + ((z @ self._Q) * gain) @ self._Q.T

    def covariance(self):
        if self._cov is not None:
            return self._cov
        if self._Q is None:
            return self._var * np.eye(self.P)
        cov = (self._Q * (1.0 / self._lam - 1.0 / self._c)) @ self._Q.T
        cov[np.diag_indices_from(cov)] += 1.0 / self._c
        return 0.5 * (cov + cov.T)


def _resolve_method(method, basis):
    if method == "auto":
        return "laplace" if basis.laplace_ok else "perturb"
    if method not in ("laplace", "perturb"):
        raise ValueError(f"method must be 'auto', 'laplace' or 'perturb', got {method!r}")
    return method


def _check_budget(budget):
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget <= _PROBES:
        raise ValueError(f"budget must be an integer above {_PROBES}, got {budget!r}")
    return int(budget)


@_single_threaded_blas
def laplace_covariance(
    mode,
    basis,
    Z,
    y,
    method="auto",
    perturb_var=1e-3,
    fd_step=1e-4,
    min_eigenvalue=1.0,
    budget=CURVATURE_BUDGET,
):
    """Covariance of the Gaussian from which :func:`laplace_samples` draws ``u``.

    Parameters
    ----------
    mode
        A :class:`Mode` from :func:`fit_hyperparameters`.
    basis
        The template basis (``None``: ``mode.basis``); draws are ``basis.with_hyper(psi)``.
    Z, y
        The warm-up batch the mode was fitted on.
    method
        ``"laplace"``: the inverse Hessian of the negative log evidence at ``mode.u``, from
        central finite differences of the analytic gradient, symmetrised and repaired with
        :func:`repair_covariance`; ``"perturb"``: ``perturb_var * I``; ``"auto"``:
        ``"laplace"`` unless the family sets ``laplace_ok = False`` (RBF centres).
    perturb_var
        Variance of the perturbation (the paper's ``1e-3``).
    fd_step
        Relative finite-difference step, ``h_i = fd_step * max(1, |u_i|)`` (along a direction
        ``v``: ``fd_step * max(1, |v|'|u|)``).
    min_eigenvalue
        Floor of the Hessian's eigenvalues (see :func:`repair_covariance`).
    budget
        The most Hessian-vector products the curvature costs: with at most ``budget``
        hyperparameters the Hessian is computed in full; beyond, it is approximated from
        ``budget - 4`` Lanczos directions and 4 random probes of the others (see the module's
        docstring).

    Returns
    -------
    numpy.ndarray
        Covariance, shape ``(len(u), len(u))`` (built here on request: the draws of
        :func:`laplace_samples` never hold a matrix of that size).
    """
    spread, notes = _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue,
                                budget)
    _warn(notes, stacklevel=3)
    return spread.covariance()


def _not_pd_note(n_nonpos, n_clipped, min_eigenvalue, what="Hessian"):
    # flat (small positive) directions are floored silently; a non-positive curvature means the
    # mode is a saddle or sits on a bound: say so
    return (
        f"{what} of the negative log evidence is not positive definite ({n_nonpos} non-positive "
        f"eigenvalue(s)); {n_clipped} eigenvalue(s) were clipped to {min_eigenvalue:g}"
    )


def _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue,
                budget=CURVATURE_BUDGET):
    """``(spread, notes)``: the Gaussian around ``mode`` (see :func:`laplace_covariance`)."""
    basis = mode.basis if basis is None else basis
    method = _resolve_method(method, basis)
    budget = _check_budget(budget)
    P = len(mode.u)
    notes = []
    if method == "laplace":
        Z = np.asarray(Z, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).ravel()
        try:
            with np.errstate(all="ignore"):
                if P <= budget:
                    H = _hessian(mode.u, basis, Z, y, fd_step)
                    finite = np.all(np.isfinite(H))
                else:
                    theta, Q, c = _krylov_curvature(mode.u, basis, Z, y, fd_step,
                                                    budget - _PROBES, _PROBES)
                    finite = np.all(np.isfinite(theta)) and np.all(np.isfinite(Q))
                    finite = finite and (Q.shape[1] == P or math.isfinite(c))
            if not finite:
                raise FloatingPointError("non-finite Hessian entries")
        except (np.linalg.LinAlgError, FloatingPointError, ValueError, OverflowError) as err:
            notes.append(
                f"Hessian of the evidence could not be computed ({err}); falling back to a "
                f"perturbation of variance {perturb_var:g}"
            )
            method = "perturb"
        else:
            if not min_eigenvalue > 0:
                raise ValueError("min_eigenvalue must be positive")
            if P <= budget:
                cov, root, n_clipped = repair_covariance(H, min_eigenvalue)
                n_nonpos = int(np.sum(np.linalg.eigvalsh(H) <= 0.0))
                if n_nonpos:
                    notes.append(_not_pd_note(n_nonpos, n_clipped, min_eigenvalue))
                return _Spread(P, cov=cov, root=root), notes
            # the directions outside Q (if any) all get the probes' mean curvature
            c_eff = max(c, min_eigenvalue) if Q.shape[1] < P else 1.0
            lam = np.maximum(theta, min_eigenvalue)
            n_rest = P - Q.shape[1]
            n_nonpos = int(np.sum(theta <= 0.0)) + (n_rest if c <= 0.0 else 0)
            if n_nonpos:
                n_clipped = int(np.sum(theta < min_eigenvalue)) + (
                    n_rest if c < min_eigenvalue else 0)
                notes.append(_not_pd_note(n_nonpos, n_clipped, min_eigenvalue,
                                          "Lanczos estimate of the Hessian"))
            return _Spread(P, Q=Q, lam=lam, c=c_eff), notes
    return _Spread(P, var=float(perturb_var)), notes


def _draws(mode, basis, Z, y, n, rng, method, perturb_var, fd_step, min_eigenvalue,
           budget=CURVATURE_BUDGET):
    """``(draws, notes)``: ``n`` tuples ``(basis, var_theta, var_eps)`` around ``mode``."""
    basis = mode.basis if basis is None else basis
    if n == 0:
        return [], []
    layout = mode.layout or HyperLayout.from_basis(basis)
    spread, notes = _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue,
                                budget)
    rng = np.random.default_rng(rng)
    draws = spread.draw(mode.u, rng.standard_normal((n, len(mode.u))))
    if mode.u[1] <= layout.lower[1] + NOISE_AT_BOUND and np.isfinite(layout.upper[1]):
        draws[:, 1] = _profile_noise(mode, basis, Z, y, layout, n, rng)
    out = []
    for u in draws:
        vt, ve, psi = layout.unpack(layout.clip(u))
        out.append((basis.with_hyper(psi) if psi.size else basis, vt, ve))
    return out, notes


def _profile_noise(mode, basis, Z, y, layout, n, rng) -> np.ndarray:
    """``n`` log noise variances, stratified draws from the profile posterior of the log noise
    variance over the layout's bounds, the other hyperparameters at the mode (see the module's
    docstring): the ``k``-th from the ``k``-th of ``n`` equal slices of its probability."""
    from river_doebe.evidence import log_evidence

    b = mode.basis
    Phi = b.featurize(np.asarray(Z, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64).ravel()
    grid = np.linspace(layout.lower[1], layout.upper[1], _NOISE_GRID)
    ll = np.full(grid.shape, -np.inf)
    with np.errstate(all="ignore"):
        for i, g in enumerate(grid.tolist()):
            try:
                ll[i] = log_evidence(Phi, y, mode.var_theta, math.exp(g))
            except (np.linalg.LinAlgError, ValueError, FloatingPointError):
                continue
    if not np.isfinite(ll).any():
        return np.full(n, mode.u[1])
    w = np.exp(np.where(np.isfinite(ll), ll - np.max(ll[np.isfinite(ll)]), -np.inf))
    # the density, linear between the grid's points: its cumulative probability at each point
    cdf = np.r_[0.0, np.cumsum(0.5 * (w[1:] + w[:-1]) * np.diff(grid))]
    cdf /= cdf[-1]
    q = (np.arange(n) + rng.uniform(size=n)) / n
    return np.interp(q, cdf, grid)


@_single_threaded_blas
def laplace_samples(
    mode,
    basis,
    Z,
    y,
    n,
    seed=None,
    method="auto",
    perturb_var=1e-3,
    fd_step=1e-4,
    min_eigenvalue=1.0,
    budget=CURVATURE_BUDGET,
):
    """Hyperparameter draws around a mode: ``u ~ N(u*, H^{-1})`` (Laplace approximation of the
    evidence in unconstrained coordinates, paper Sec. 4.1) or ``u* + N(0, perturb_var I)``.

    Parameters
    ----------
    mode
        A :class:`Mode` from :func:`fit_hyperparameters`.
    basis
        The template basis (``None``: ``mode.basis``).
    Z, y
        The warm-up batch the mode was fitted on.
    n
        Number of draws.
    seed
        Seed or :class:`numpy.random.Generator`; the same seed gives the same draws.
    method, perturb_var, fd_step, min_eigenvalue, budget
        See :func:`laplace_covariance`.

    Returns
    -------
    list of tuple
        ``n`` tuples ``(basis, var_theta, var_eps)``. Draws are clipped to the layout's bounds.
    """
    n = int(n)
    if n < 0:
        raise ValueError("n must be non-negative")
    draws, notes = _draws(mode, basis, Z, y, n, seed, method, perturb_var, fd_step,
                          min_eigenvalue, budget)
    _warn(notes, stacklevel=3)
    return draws
