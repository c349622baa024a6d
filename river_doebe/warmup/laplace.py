"""Draws around a mode of the evidence: the Laplace approximation (paper Sec. 4.1).

:func:`laplace_samples` draws ``u ~ N(u*, H^{-1})``, with ``H`` the Hessian of the negative log
evidence at the mode ``u*`` (central finite differences of the analytic gradient, repaired where
it is not positive definite: :func:`repair_covariance`), or ``u* + N(0, 1e-3 I)`` for families
where that Hessian is too costly (an RBF network's centres), as the paper does. The draws of a
mode are one pure job of the warm-up (:func:`river_doebe.warmup.empirical_bayes.member_sets`):
its diagnostics come back as notes, warned by the public functions here.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from river_doebe.evidence import HyperLayout, objective

__all__ = ["laplace_covariance", "laplace_samples", "repair_covariance"]


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


def _resolve_method(method, basis):
    if method == "auto":
        return "laplace" if basis.laplace_ok else "perturb"
    if method not in ("laplace", "perturb"):
        raise ValueError(f"method must be 'auto', 'laplace' or 'perturb', got {method!r}")
    return method


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
        ``"laplace"``: the inverse Hessian of the negative log evidence at ``mode.u``, by
        central finite differences of the analytic gradient, symmetrised and repaired with
        :func:`repair_covariance`; ``"perturb"``: ``perturb_var * I``; ``"auto"``:
        ``"laplace"`` unless the family sets ``laplace_ok = False`` (RBF centres).
    perturb_var
        Variance of the perturbation (the paper's ``1e-3``).
    fd_step
        Relative finite-difference step, ``h_i = fd_step * max(1, |u_i|)``.
    min_eigenvalue
        Floor of the Hessian's eigenvalues (see :func:`repair_covariance`).

    Returns
    -------
    numpy.ndarray
        Covariance, shape ``(len(u), len(u))``.
    """
    cov, _, notes = _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue)
    _warn(notes, stacklevel=3)
    return cov


def _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue):
    """``(cov, root, notes)`` of the Gaussian around ``mode`` (see :func:`laplace_covariance`)."""
    basis = mode.basis if basis is None else basis
    method = _resolve_method(method, basis)
    P = len(mode.u)
    notes = []
    if method == "laplace":
        Z = np.asarray(Z, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).ravel()
        try:
            with np.errstate(all="ignore"):
                H = _hessian(mode.u, basis, Z, y, fd_step)
            if not np.all(np.isfinite(H)):
                raise FloatingPointError("non-finite Hessian entries")
        except (np.linalg.LinAlgError, FloatingPointError, ValueError, OverflowError) as err:
            notes.append(
                f"Hessian of the evidence could not be computed ({err}); falling back to a "
                f"perturbation of variance {perturb_var:g}"
            )
            method = "perturb"
        else:
            cov, root, n_clipped = repair_covariance(H, min_eigenvalue)
            n_nonpos = int(np.sum(np.linalg.eigvalsh(H) <= 0.0))
            if n_nonpos:
                # flat (small positive) directions are floored silently; a non-positive
                # curvature means the mode is a saddle or sits on a bound: say so
                notes.append(
                    f"Hessian of the negative log evidence is not positive definite "
                    f"({n_nonpos} non-positive eigenvalue(s)); {n_clipped} eigenvalue(s) were "
                    f"clipped to {min_eigenvalue:g}"
                )
            return cov, root, notes
    cov = perturb_var * np.eye(P)
    return cov, math.sqrt(perturb_var) * np.eye(P), notes


def _draws(mode, basis, Z, y, n, rng, method, perturb_var, fd_step, min_eigenvalue):
    """``(draws, notes)``: ``n`` tuples ``(basis, var_theta, var_eps)`` around ``mode``."""
    basis = mode.basis if basis is None else basis
    if n == 0:
        return [], []
    layout = mode.layout or HyperLayout.from_basis(basis)
    _, root, notes = _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue)
    rng = np.random.default_rng(rng)
    draws = mode.u[None, :] + rng.standard_normal((n, len(mode.u))) @ root.T
    out = []
    for u in draws:
        vt, ve, psi = layout.unpack(layout.clip(u))
        out.append((basis.with_hyper(psi) if psi.size else basis, vt, ve))
    return out, notes


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
    method, perturb_var, fd_step, min_eigenvalue
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
                          min_eigenvalue)
    _warn(notes, stacklevel=3)
    return draws
