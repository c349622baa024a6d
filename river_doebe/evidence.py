"""Empirical Bayes for Bayesian linear basis expansions: the evidence, its gradient, the
type-II maximum-likelihood fit from several starts, and Laplace sampling around each mode.

The model (paper Sec. 2.1.2) is ``y = Phi theta + eps`` with ``theta ~ N(0, var_theta I_F)`` and
``eps ~ N(0, var_eps I_N)``, so the marginal likelihood (evidence) is
``N(y; 0, var_theta Phi Phi' + var_eps I_N)``. The hyperparameters live in one unconstrained vector

    u = [log var_theta, log var_eps, psi]

where ``psi`` is the basis' own vector (:meth:`Basis.get_hyper`, already unconstrained: log length
scales, centres, frequencies). :class:`HyperLayout` names the entries of ``u`` and holds their
bounds. The warm-up of the paper (Sec. 4.1) is:

1. :func:`fit_hyperparameters`: L-BFGS-B on the negative log evidence from several starting length
   scales ``s * range(z_d)``; each start gives a :class:`Mode`;
2. :func:`laplace_samples`: draws from ``N(u*, H^{-1})`` with ``H`` the Hessian of the negative log
   evidence at the mode (or ``u* + N(0, 1e-3 I)`` for families where that Hessian is too costly);
3. :func:`build_members`: the modes and their draws as a flat list of :class:`MemberSpec`, what an
   ensemble's warm-up instantiates learners from.

Numerics. Both forms of the evidence factor a matrix of the form ``I + c M`` with ``M`` positive
semi-definite and ``c = var_theta / var_eps``: when ``F < N`` the ``F x F`` matrix
``B = I_F + c Phi'Phi = var_theta A`` (``A`` the posterior precision of Bishop's eq. 3.81),
otherwise the ``N x N`` matrix ``I_N + c Phi Phi'``. Their eigenvalues are at least 1, so the
Cholesky factorisation succeeds for any finite design matrix short of extreme conditioning, and
jitter is added progressively if it ever does not. Everything is float64 and in the log domain.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, optimize
from threadpoolctl import threadpool_limits

__all__ = [
    "HyperLayout",
    "MemberSpec",
    "Mode",
    "build_members",
    "fit_hyperparameters",
    "laplace_covariance",
    "laplace_samples",
    "log_evidence",
    "objective",
    "repair_covariance",
]

_LOG_2PI = math.log(2.0 * math.pi)
_LENGTHSCALE_PREFIX = "log_lengthscale"


# ====================================================================== linear algebra helpers


def _single_threaded_blas(func):
    """Run ``func`` with one BLAS thread: the fit works on F x F and N x F matrices (F ~ 100),
    where several threads only fight over the cores (tens of times slower on a busy machine)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with threadpool_limits(limits=1):
            return func(*args, **kwargs)

    return wrapper



def _cholesky(M: np.ndarray, max_tries: int = 8) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of the symmetric matrix ``M``, adding jitter if needed.

    Returns the factor and the jitter that was added to the diagonal (0.0 if none). The jitter
    starts at ``1e-10 * mean(diag(M))`` and grows tenfold per failure.
    """
    if not np.all(np.isfinite(M)):
        raise np.linalg.LinAlgError("matrix to factorise has non-finite entries")
    try:
        return linalg.cholesky(M, lower=True, check_finite=False), 0.0
    except linalg.LinAlgError:
        pass
    scale = float(np.mean(np.abs(np.diag(M)))) or 1.0
    jitter = 1e-10 * scale
    for _ in range(max_tries):
        try:
            L = linalg.cholesky(M + jitter * np.eye(M.shape[0]), lower=True, check_finite=False)
            return L, jitter
        except linalg.LinAlgError:
            jitter *= 10.0
    raise np.linalg.LinAlgError(
        f"Cholesky factorisation failed even with jitter {jitter / 10.0:.3g}"
    )


def _check_inputs(Phi, y, var_theta, var_eps):
    Phi = np.asarray(Phi, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if Phi.ndim != 2:
        raise ValueError(f"Phi must be 2-D (n_samples, n_features), got shape {Phi.shape}")
    if y.ndim != 1 or y.shape[0] != Phi.shape[0]:
        raise ValueError(f"y must be 1-D of length {Phi.shape[0]}, got shape {y.shape}")
    if Phi.shape[0] == 0:
        raise ValueError("the evidence needs at least one sample")
    var_theta = float(var_theta)
    var_eps = float(var_eps)
    if not (np.isfinite(var_theta) and var_theta > 0.0):
        raise ValueError(f"var_theta must be positive and finite, got {var_theta}")
    if not (np.isfinite(var_eps) and var_eps > 0.0):
        raise ValueError(f"var_eps must be positive and finite, got {var_eps}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values")
    if not np.all(np.isfinite(Phi)):
        raise ValueError("Phi contains NaN or infinite values")
    return Phi, y, var_theta, var_eps


def _evidence(Phi, y, vt, ve, want_grad, want_dphi):
    """Core of :func:`log_evidence` on validated inputs: ``(L, dPhi or None, dvt, dve)``."""
    N, F = Phi.shape
    c = vt / ve
    if F < N:
        # B = I_F + c Phi'Phi = var_theta * A, A = Phi'Phi / var_eps + I / var_theta.
        B = c * (Phi.T @ Phi)
        B[np.diag_indices_from(B)] += 1.0
        Lc, _ = _cholesky(B)
        b = Phi.T @ y
        m = c * linalg.cho_solve((Lc, True), b, check_finite=False)  # posterior mean
        r = y - Phi @ m
        rr = float(r @ r)
        mm = float(m @ m)
        quad = rr / ve + mm / vt  # = y' C^{-1} y (Bishop 3.86)
        logdet = N * math.log(ve) + 2.0 * float(np.sum(np.log(np.diag(Lc))))
        value = -0.5 * (quad + logdet + N * _LOG_2PI)
        if not want_grad:
            return value, None, None, None
        Binv = linalg.cho_solve((Lc, True), np.eye(F), check_finite=False)
        gamma = F - float(np.trace(Binv))  # effective number of parameters
        dvt = 0.5 * (mm / vt**2 - gamma / vt)
        dve = 0.5 * (rr / ve**2 - (N - gamma) / ve)
        dPhi = None
        if want_dphi:
            # dL/dPhi = [r m' - Phi A^{-1}] / var_eps, with A^{-1} = var_theta B^{-1}
            dPhi = (np.outer(r, m) - vt * (Phi @ Binv)) / ve
        return value, dPhi, dvt, dve
    # N x N form: K = var_eps (I_N + c Phi Phi')
    Kp = c * (Phi @ Phi.T)
    Kp[np.diag_indices_from(Kp)] += 1.0
    Lc, _ = _cholesky(Kp)
    w = linalg.solve_triangular(Lc, y, lower=True, check_finite=False)
    quad = float(w @ w) / ve
    logdet = N * math.log(ve) + 2.0 * float(np.sum(np.log(np.diag(Lc))))
    value = -0.5 * (quad + logdet + N * _LOG_2PI)
    if not want_grad:
        return value, None, None, None
    alpha = linalg.solve_triangular(Lc, w, lower=True, trans="T", check_finite=False) / ve
    Kinv = linalg.cho_solve((Lc, True), np.eye(N), check_finite=False) / ve
    KinvPhi = Kinv @ Phi
    pa = Phi.T @ alpha
    dvt = 0.5 * (float(pa @ pa) - float(np.sum(Phi * KinvPhi)))
    dve = 0.5 * (float(alpha @ alpha) - float(np.trace(Kinv)))
    dPhi = vt * (np.outer(alpha, pa) - KinvPhi) if want_dphi else None
    return value, dPhi, dvt, dve


def log_evidence(Phi, y, var_theta, var_eps, grad=False):
    r"""Log marginal likelihood of a Bayesian linear basis expansion.

    Computes :math:`\log \mathcal{N}(y; 0, \sigma_\theta^2 \Phi\Phi^\top + \sigma_\epsilon^2 I_N)`.
    When ``F < N`` it uses the ``F x F`` form of Bishop (2006, eq. 3.86),

    .. math::

        \log p(y) = -\tfrac{1}{2}\Big(\frac{\lVert y - \Phi m\rVert^2}{\sigma_\epsilon^2}
        + \frac{\lVert m \rVert^2}{\sigma_\theta^2} + N\log\sigma_\epsilon^2
        + F\log\sigma_\theta^2 + \log|A| + N\log 2\pi\Big),

    with :math:`A = \Phi^\top\Phi/\sigma_\epsilon^2 + I/\sigma_\theta^2` and
    :math:`m = A^{-1}\Phi^\top y/\sigma_\epsilon^2` (note the full, not halved, log-determinant
    of ``A``: the value equals the ``N x N`` Gaussian density exactly); otherwise the ``N x N``
    Cholesky form. Both factor a matrix ``I + c M`` whose eigenvalues are at least 1, adding jitter
    progressively should the factorisation still fail.

    Parameters
    ----------
    Phi
        Design matrix, shape ``(N, F)``.
    y
        Targets, shape ``(N,)``.
    var_theta
        Prior variance of the weights, positive.
    var_eps
        Noise variance, positive.
    grad
        Whether to return the gradient as well.

    Returns
    -------
    float or tuple
        The log evidence; with ``grad=True`` the tuple ``(value, dPhi, dvar_theta, dvar_eps)``
        where ``dPhi`` (shape ``(N, F)``) is the derivative with respect to the design matrix
        and ``dvar_theta``, ``dvar_eps`` the derivatives with respect to the two variances.

    Raises
    ------
    ValueError
        On shape mismatches, non-positive variances or non-finite inputs.

    Notes
    -----
    With ``m`` as above, ``r = y - Phi m`` and ``gamma = F - tr(A^{-1}) / var_theta`` (the
    effective number of parameters):
    ``dL/dPhi = (r m' - Phi A^{-1}) / var_eps``,
    ``dL/dvar_theta = (|m|^2 / var_theta - gamma) / (2 var_theta)`` and
    ``dL/dvar_eps = (|r|^2 / var_eps - (N - gamma)) / (2 var_eps)``.

    Examples
    --------

    >>> import numpy as np
    >>> from scipy.stats import multivariate_normal
    >>> from river_doebe.evidence import log_evidence
    >>> rng = np.random.default_rng(0)
    >>> Phi = rng.normal(size=(20, 3))
    >>> y = Phi @ np.array([1.0, -0.5, 0.2]) + 0.1 * rng.normal(size=20)
    >>> value = log_evidence(Phi, y, var_theta=1.0, var_eps=0.01)
    >>> exact = multivariate_normal.logpdf(y, np.zeros(20), Phi @ Phi.T + 0.01 * np.eye(20))
    >>> bool(np.isclose(value, exact, rtol=1e-12))
    True
    >>> value, dPhi, dvt, dve = log_evidence(Phi, y, 1.0, 0.01, grad=True)
    >>> dPhi.shape
    (20, 3)

    """
    Phi, y, vt, ve = _check_inputs(Phi, y, var_theta, var_eps)
    value, dPhi, dvt, dve = _evidence(Phi, y, vt, ve, grad, grad)
    if not grad:
        return value
    return value, dPhi, dvt, dve


# ====================================================================== hyperparameter layout


def _ranges(Z) -> np.ndarray:
    """Range of every input of ``Z`` (a zero or non-finite range counts as 1)."""
    Z = np.asarray(Z, dtype=np.float64)
    ranges = np.ptp(Z, axis=0) if Z.shape[0] else np.ones(Z.shape[1])
    return np.where(np.isfinite(ranges) & (ranges > 0), ranges, 1.0)


def _lengthscale_dim(position: int, n_ls: int, n_inputs: int) -> int:
    """Input dimension a length-scale entry refers to (-1: isotropic, use the mean range).

    One log length scale per input (ARD) is taken to follow the input order, as the basis
    contract lays them out; any other count is treated as isotropic.
    """
    return position if n_ls == n_inputs else -1


@dataclass(frozen=True)
class HyperLayout:
    """Layout of the unconstrained hyperparameter vector ``u = [log var_theta, log var_eps, psi]``.

    Parameters
    ----------
    names
        Name of every entry of ``u``: ``"log_var_theta"``, ``"log_var_eps"``, then the basis'
        :meth:`~river_doebe.basis.Basis.hyper_names`.
    lower, upper
        Bounds of every entry in ``u`` coordinates (``-inf``/``inf`` when unbounded).
    lengthscale_index
        Indices into ``u`` of the log length scales (basis names starting with
        ``"log_lengthscale"``).
    lengthscale_dim
        For each of those, the input dimension whose range sets its starting value: with one
        log length scale per input (ARD) they follow the input order; otherwise (``-1``) the
        length scale is isotropic and starts from the mean range.
    """

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    lengthscale_index: tuple[int, ...]
    lengthscale_dim: tuple[int, ...]

    @classmethod
    def from_basis(cls, basis, bounds=(1e-6, 1e2)) -> HyperLayout:
        """Build the layout of an initialised basis.

        Parameters
        ----------
        basis
            A :class:`~river_doebe.basis.Basis` whose input dimension is fixed.
        bounds
            ``(lo, hi)`` applied, in log space, to both variances and to every log length scale
            (intersected with the basis' own :meth:`hyper_bounds` for the latter). Other basis
            parameters keep the basis' bounds (``None`` means unbounded).

        Returns
        -------
        HyperLayout
        """
        lo_v, hi_v = (math.log(float(b)) for b in bounds)
        if not lo_v < hi_v:
            raise ValueError(f"bounds must satisfy 0 < lo < hi, got {bounds}")
        names = list(basis.hyper_names())
        basis_bounds = list(basis.hyper_bounds())
        P = len(np.asarray(basis.get_hyper()))
        if len(names) != P or len(basis_bounds) != P:
            raise ValueError(
                f"{type(basis).__name__}: get_hyper has {P} entries but hyper_names has "
                f"{len(names)} and hyper_bounds {len(basis_bounds)}"
            )
        lower = [lo_v, lo_v]
        upper = [hi_v, hi_v]
        ls_pos = [i for i, n in enumerate(names) if str(n).startswith(_LENGTHSCALE_PREFIX)]
        n_inputs = basis.n_inputs or 1
        ls_index, ls_dim = [], []
        for i, (blo, bhi) in enumerate(basis_bounds):
            blo = -np.inf if blo is None else float(blo)
            bhi = np.inf if bhi is None else float(bhi)
            if i in ls_pos:
                nlo, nhi = max(blo, lo_v), min(bhi, hi_v)
                if nlo < nhi:
                    blo, bhi = nlo, nhi
                ls_index.append(i + 2)
                ls_dim.append(_lengthscale_dim(ls_pos.index(i), len(ls_pos), n_inputs))
            lower.append(blo)
            upper.append(bhi)
        return cls(
            names=("log_var_theta", "log_var_eps", *map(str, names)),
            lower=np.asarray(lower, dtype=np.float64),
            upper=np.asarray(upper, dtype=np.float64),
            lengthscale_index=tuple(ls_index),
            lengthscale_dim=tuple(ls_dim),
        )

    @property
    def size(self) -> int:
        """Length of ``u``."""
        return len(self.names)

    def pack(self, var_theta, var_eps, psi) -> np.ndarray:
        """``u`` from the two variances and the basis vector ``psi``."""
        psi = np.asarray(psi, dtype=np.float64).ravel()
        return np.concatenate([[math.log(var_theta), math.log(var_eps)], psi])

    def unpack(self, u) -> tuple[float, float, np.ndarray]:
        """``(var_theta, var_eps, psi)`` from ``u``."""
        u = np.asarray(u, dtype=np.float64)
        return math.exp(u[0]), math.exp(u[1]), u[2:].copy()

    def clip(self, u) -> np.ndarray:
        """``u`` clipped to the bounds."""
        return np.clip(np.asarray(u, dtype=np.float64), self.lower, self.upper)

    def scipy_bounds(self) -> list[tuple[float | None, float | None]]:
        """Bounds in the form ``scipy.optimize.minimize`` takes (``None`` = unbounded)."""
        return [
            (None if not np.isfinite(lo) else float(lo), None if not np.isfinite(hi) else float(hi))
            for lo, hi in zip(self.lower, self.upper, strict=True)
        ]

    def with_lengthscale_floor(self, Z, ratio: float) -> HyperLayout:
        """The layout with every length scale bounded below by ``ratio`` times the range of
        its input in ``Z`` (the mean range for an isotropic one); ``ratio = 0`` changes
        nothing. A floor above a length scale's upper bound leaves that entry as it was."""
        ratio = float(ratio)
        if not (math.isfinite(ratio) and ratio >= 0):
            raise ValueError(f"the length-scale floor must be a number >= 0, got {ratio!r}")
        if ratio == 0 or not self.lengthscale_index:
            return self
        ranges = _ranges(Z)
        lower = self.lower.copy()
        for i, d in zip(self.lengthscale_index, self.lengthscale_dim, strict=True):
            rng_d = float(np.mean(ranges)) if d < 0 else float(ranges[d])
            floor = math.log(ratio * rng_d)
            if lower[i] < floor < self.upper[i]:
                lower[i] = floor
        return HyperLayout(self.names, lower, self.upper, self.lengthscale_index,
                           self.lengthscale_dim)

    def start(self, basis, Z, var_theta, var_eps, scale) -> np.ndarray:
        """Starting ``u``: the basis' current ``psi`` with every log length scale set to
        ``log(scale * range(Z[:, d]))`` (a zero or non-finite range counts as 1), clipped to
        the bounds."""
        u = self.pack(var_theta, var_eps, basis.get_hyper())
        ranges = _ranges(Z)
        for i, d in zip(self.lengthscale_index, self.lengthscale_dim, strict=True):
            rng_d = float(np.mean(ranges)) if d < 0 else float(ranges[d])
            u[i] = math.log(scale * rng_d)
        return self.clip(u)


# ====================================================================== objective


def objective(u, basis, Z, y, Phi=None):
    """Negative log evidence and its gradient in the unconstrained coordinates ``u``.

    Parameters
    ----------
    u
        ``[log var_theta, log var_eps, psi]`` (see :class:`HyperLayout`).
    basis
        The basis (template); ``basis.with_hyper(psi)`` gives the basis at ``u``.
    Z
        Inputs, shape ``(N, D)``.
    y
        Targets, shape ``(N,)``.
    Phi
        Optional precomputed design matrix, only valid for bases without hyperparameters
        (``psi`` empty); saves the featurisation.

    Returns
    -------
    value : float
        ``-log p(y | u)``.
    grad : numpy.ndarray
        Its gradient with respect to ``u``, shape ``(2 + P,)``. The basis part is
        ``-basis.hyper_vjp(Z, dL/dPhi)``; the variance parts are chained through the log.

    Notes
    -----
    One featurisation per call (plus what the basis' ``hyper_vjp`` needs), and no ``N x N`` matrix
    when ``F < N``.
    """
    u = np.asarray(u, dtype=np.float64)
    vt, ve = math.exp(u[0]), math.exp(u[1])
    psi = u[2:]
    b = basis.with_hyper(psi) if psi.size else basis
    if Phi is None:
        Phi = b.featurize(Z)
    Phi, y, vt, ve = _check_inputs(Phi, y, vt, ve)
    value, dPhi, dvt, dve = _evidence(Phi, y, vt, ve, True, psi.size > 0)
    g = np.empty(u.shape[0])
    g[0] = -vt * dvt
    g[1] = -ve * dve
    if psi.size:
        g[2:] = -np.asarray(b.hyper_vjp(Z, dPhi), dtype=np.float64)
    return -value, g


class _Objective:
    """Stateful wrapper of :func:`objective` for the optimiser: caches the design matrix when the
    basis has no hyperparameters and turns failures into a large finite penalty (L-BFGS-B's line
    search handles a large value far better than ``inf``/``nan``)."""

    def __init__(self, basis, Z, y):
        self.basis = basis
        self.Z = Z
        self.y = y
        self.Phi = None
        if len(np.asarray(basis.get_hyper())) == 0:
            with np.errstate(all="ignore"):
                Phi = np.asarray(basis.featurize(Z), dtype=np.float64)
            if np.all(np.isfinite(Phi)):  # otherwise every call fails, and says why
                self.Phi = Phi
        self.best = np.inf
        self.n_failed = 0
        self.last_error: str | None = None

    def penalty(self) -> float:
        return 1e10 if not np.isfinite(self.best) else max(1e10, 1e3 * abs(self.best))

    def __call__(self, u):
        try:
            with np.errstate(all="ignore"):
                f, g = objective(u, self.basis, self.Z, self.y, Phi=self.Phi)
            if not (np.isfinite(f) and np.all(np.isfinite(g))):
                raise FloatingPointError("non-finite negative log evidence or gradient")
        except (np.linalg.LinAlgError, FloatingPointError, ValueError, OverflowError) as err:
            self.n_failed += 1
            self.last_error = f"{type(err).__name__}: {err}"
            return self.penalty(), np.zeros(np.shape(u)[0])
        self.best = min(self.best, f)
        return f, g


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


def _warn_degenerate(Z, y, n_features):
    N = Z.shape[0]
    if N < n_features:
        warnings.warn(
            f"warm-up batch has fewer samples ({N}) than features ({n_features}): the "
            "evidence is weakly identified",
            RuntimeWarning,
            stacklevel=3,
        )
    if N > 1 and float(np.ptp(y)) == 0.0:
        warnings.warn(
            "warm-up target is constant: the noise and prior variances will go to their "
            "lower bounds",
            RuntimeWarning,
            stacklevel=3,
        )
    const = np.flatnonzero(np.ptp(Z, axis=0) == 0.0) if N > 1 else np.arange(0)
    if const.size:
        warnings.warn(
            f"warm-up inputs {const.tolist()} are constant: their length scales start from a "
            "range of 1 and are not identified",
            RuntimeWarning,
            stacklevel=3,
        )


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
    Z, y = _prepare(basis, Z, y, fit_basis)
    layout = HyperLayout.from_basis(basis, bounds)
    obj = _Objective(basis, Z, y)
    _warn_degenerate(Z, y, basis.n_outputs)

    starts = tuple(float(s) for s in starts)
    if not starts or any(not (np.isfinite(s) and s > 0) for s in starts):
        raise ValueError(f"starts must be positive numbers, got {starts}")
    if start_floor is None:
        start_floor = getattr(basis, "start_floor", 0.0)
    start_floor = float(start_floor)
    if not (math.isfinite(start_floor) and 0.0 <= start_floor <= 1.0):
        raise ValueError(f"start_floor must be in [0, 1], got {start_floor!r}")
    u0s, scales, layouts = [], [], []
    for s in starts:
        lay = layout.with_lengthscale_floor(Z, start_floor * s)
        u0 = lay.start(basis, Z, var_theta, var_eps, s)
        if not any(np.array_equal(u0, v) for v in u0s):
            u0s.append(u0)
            scales.append(s)
            layouts.append(lay)

    def run(u0, s, layout):
        obj.n_failed, obj.last_error = 0, None
        try:
            res = optimize.minimize(
                obj,
                u0,
                jac=True,
                method="L-BFGS-B",
                bounds=layout.scipy_bounds(),
                options={"maxiter": int(maxiter)},
            )
        except Exception as err:  # noqa: BLE001 - any failure of a start is reported, not raised
            return None, f"optimiser raised {type(err).__name__}: {err}"
        x = np.asarray(res.x, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            return None, "optimum has non-finite hyperparameters"
        obj.last_error = None
        f, _ = obj(x)  # re-evaluate: res.fun may be a penalty value
        if obj.last_error is not None:
            return None, f"evidence could not be evaluated at the optimum ({obj.last_error})"
        vt, ve, psi = layout.unpack(x)
        try:
            fitted = basis.with_hyper(psi) if psi.size else basis
        except Exception as err:  # noqa: BLE001
            return None, f"with_hyper failed at the optimum: {err}"
        if not (np.isfinite(vt) and np.isfinite(ve) and np.isfinite(f)):
            return None, "non-finite variances or evidence at the optimum"
        msg = res.message if isinstance(res.message, str) else str(res.message)
        if res.success and int(res.nit) == 0:
            warnings.warn(
                f"start s={s:g} of {type(basis).__name__} did not move: the evidence is flat "
                "there (e.g. features vanish at these length scales); keeping it as a mode",
                RuntimeWarning,
                stacklevel=3,
            )
        if not res.success:
            warnings.warn(
                f"start s={s:g} of {type(basis).__name__} did not converge ({msg}); keeping "
                "the last iterate",
                RuntimeWarning,
                stacklevel=3,
            )
        return (
            Mode(
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
            ),
            None,
        )

    modes, failures = [], []
    for u0, s, lay in zip(u0s, scales, layouts, strict=True):
        mode, reason = run(u0, s, lay)
        if mode is None:
            warnings.warn(
                f"start s={s:g} of {type(basis).__name__} failed and is skipped: {reason}",
                RuntimeWarning,
                stacklevel=2,
            )
            failures.append(f"s={s:g}: {reason}")
        else:
            modes.append(mode)
    if not modes:
        rng = np.random.default_rng(seed)
        for u0, s, lay in zip(u0s, scales, layouts, strict=True):
            u1 = lay.clip(u0 + 0.5 * rng.standard_normal(u0.shape))
            mode, reason = run(u1, s, lay)
            if mode is not None:
                modes.append(mode)
            else:
                failures.append(f"s={s:g} (retry): {reason}")
    if not modes:
        raise RuntimeError(
            f"every start of the evidence maximisation for {type(basis).__name__} failed: "
            + "; ".join(failures)
        )
    return modes


# ====================================================================== Laplace sampling


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
        return "laplace" if getattr(basis, "laplace_ok", True) else "perturb"
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
    return _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue)[0]


def _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue):
    basis = mode.basis if basis is None else basis
    method = _resolve_method(method, basis)
    P = len(mode.u)
    if method == "laplace":
        Z = np.asarray(Z, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).ravel()
        try:
            with np.errstate(all="ignore"):
                H = _hessian(mode.u, basis, Z, y, fd_step)
            if not np.all(np.isfinite(H)):
                raise FloatingPointError("non-finite Hessian entries")
        except (np.linalg.LinAlgError, FloatingPointError, ValueError, OverflowError) as err:
            warnings.warn(
                f"Hessian of the evidence could not be computed ({err}); falling back to a "
                f"perturbation of variance {perturb_var:g}",
                RuntimeWarning,
                stacklevel=3,
            )
            method = "perturb"
        else:
            cov, root, n_clipped = repair_covariance(H, min_eigenvalue)
            n_nonpos = int(np.sum(np.linalg.eigvalsh(H) <= 0.0))
            if n_nonpos:
                # flat (small positive) directions are floored silently; a non-positive
                # curvature means the mode is a saddle or sits on a bound: say so
                warnings.warn(
                    f"Hessian of the negative log evidence is not positive definite "
                    f"({n_nonpos} non-positive eigenvalue(s)); {n_clipped} eigenvalue(s) were "
                    f"clipped to {min_eigenvalue:g}",
                    RuntimeWarning,
                    stacklevel=3,
                )
            return cov, root
    cov = perturb_var * np.eye(P)
    return cov, math.sqrt(perturb_var) * np.eye(P)


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
    basis = mode.basis if basis is None else basis
    if n == 0:
        return []
    layout = mode.layout or HyperLayout.from_basis(basis)
    _, root = _covariance(mode, basis, Z, y, method, perturb_var, fd_step, min_eigenvalue)
    rng = np.random.default_rng(seed)
    draws = mode.u[None, :] + rng.standard_normal((n, len(mode.u))) @ root.T
    out = []
    for u in draws:
        vt, ve, psi = layout.unpack(layout.clip(u))
        out.append((basis.with_hyper(psi) if psi.size else basis, vt, ve))
    return out


# ====================================================================== ensemble members


@dataclass
class MemberSpec:
    """Hyperparameters of one ensemble member, as produced by :func:`build_members`.

    Attributes
    ----------
    basis
        The basis with its hyperparameters set.
    var_theta, var_eps
        The member's variances.
    mode_index
        Index of the mode (start) the member comes from.
    is_mode
        Whether it is the mode itself (the empirical Bayes estimate) or a draw around it.
    family
        Name of the basis family (its class name).
    """

    basis: object
    var_theta: float
    var_eps: float
    mode_index: int
    is_mode: bool
    family: str


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
    list of MemberSpec
        ``n_modes * n_samples`` members, grouped by mode, each group starting with the mode.
    """
    n_samples = int(n_samples)
    if n_samples < 1:
        raise ValueError("n_samples must be at least 1")
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    modes = fit_hyperparameters(
        basis,
        Z,
        y,
        var_theta=var_theta,
        var_eps=var_eps,
        starts=starts,
        bounds=bounds,
        maxiter=maxiter,
        seed=seed,
        fit_basis=fit_basis,
        start_floor=start_floor,
    )
    if Z.ndim == 1:
        Z = Z[:, None]
    family = type(basis).__name__
    seeds = np.random.SeedSequence(seed).spawn(len(modes))
    members = []
    for k, (mode, ss) in enumerate(zip(modes, seeds, strict=True)):
        members.append(MemberSpec(mode.basis, mode.var_theta, mode.var_eps, k, True, family))
        draws = laplace_samples(
            mode,
            basis,
            Z,
            y,
            n_samples - 1,
            seed=np.random.default_rng(ss),
            method=method,
            perturb_var=perturb_var,
            min_eigenvalue=min_eigenvalue,
        )
        members.extend(MemberSpec(b, vt, ve, k, False, family) for b, vt, ve in draws)
    return members
