"""The evidence of a Bayesian linear basis expansion, in closed form, and its gradient.

The model (paper Sec. 2.1.2) is ``y = Phi theta + eps`` with ``theta ~ N(0, var_theta I_F)`` and
``eps ~ N(0, var_eps I_N)``, so the marginal likelihood (evidence) is
``N(y; 0, var_theta Phi Phi' + var_eps I_N)``. The hyperparameters live in one unconstrained vector

    u = [log var_theta, log var_eps, psi]

where ``psi`` is the basis' own vector (:meth:`Basis.get_hyper`, already unconstrained: log length
scales, centres, frequencies). :class:`HyperLayout` names the entries of ``u`` and holds their
bounds; :func:`objective` is the negative log evidence and its gradient in ``u``, through the
basis' :meth:`~river_doebe.basis.Basis.hyper_vjp`. The type-II maximum-likelihood fit and the
Laplace draws built on it are :mod:`river_doebe.warmup.empirical_bayes`.

Numerics. Both forms of the evidence factor a matrix of the form ``I + c M`` with ``M`` positive
semi-definite and ``c = var_theta / var_eps``: when ``F < N`` the ``F x F`` matrix
``B = I_F + c Phi'Phi = var_theta A`` (``A`` the posterior precision of Bishop's eq. 3.81),
otherwise the ``N x N`` matrix ``I_N + c Phi Phi'``. Their eigenvalues are at least 1, so the
Cholesky factorisation succeeds for any finite design matrix short of extreme conditioning, and
jitter is added progressively if it ever does not. Everything is float64 and in the log domain.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg

__all__ = ["HyperLayout", "log_evidence", "objective"]

_LOG_2PI = math.log(2.0 * math.pi)
_LENGTHSCALE_PREFIX = "log_lengthscale"


# ====================================================================== linear algebra helpers


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


def _log_det_factor(L: np.ndarray) -> float:
    """``log |L L'|`` from a Cholesky factor: twice the sum of the logs of its diagonal.

    The diagonal is copied to contiguous memory before its logs are taken. NumPy 1.x takes the
    logs of a strided array in its vectorised loop unless the output it allocates starts within
    one stride past the input's end, and then in a scalar loop whose last bits differ; where the
    output lands is the allocator's choice (other threads move it: the warm-up fits on a pool),
    so a view of the diagonal gave the evidence of the same hyperparameters two values one ulp
    apart from run to run. A contiguous input has no such gap.
    """
    return 2.0 * float(np.sum(np.log(np.diagonal(L).copy())))


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
        logdet = N * math.log(ve) + _log_det_factor(Lc)
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
    logdet = N * math.log(ve) + _log_det_factor(Lc)
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


def log_evidence(
    Phi: np.ndarray, y: np.ndarray, var_theta: float, var_eps: float, grad: bool = False
) -> Any:
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


def _ranges(Z: ArrayLike) -> np.ndarray:
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
    def from_basis(cls, basis: Any, bounds: tuple[float, float] = (1e-6, 1e2)) -> HyperLayout:
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

    def pack(self, var_theta: float, var_eps: float, psi: ArrayLike) -> np.ndarray:
        """``u`` from the two variances and the basis vector ``psi``."""
        psi = np.asarray(psi, dtype=np.float64).ravel()
        return np.concatenate([[math.log(var_theta), math.log(var_eps)], psi])

    def unpack(self, u: np.ndarray) -> tuple[float, float, np.ndarray]:
        """``(var_theta, var_eps, psi)`` from ``u``."""
        u = np.asarray(u, dtype=np.float64)
        return math.exp(u[0]), math.exp(u[1]), u[2:].copy()

    def clip(self, u: np.ndarray) -> np.ndarray:
        """``u`` clipped to the bounds."""
        return np.clip(np.asarray(u, dtype=np.float64), self.lower, self.upper)

    def scipy_bounds(self) -> list[tuple[float | None, float | None]]:
        """Bounds in the form ``scipy.optimize.minimize`` takes (``None`` = unbounded)."""
        return [
            (None if not np.isfinite(lo) else float(lo), None if not np.isfinite(hi) else float(hi))
            for lo, hi in zip(self.lower, self.upper, strict=True)
        ]

    def with_lengthscale_floor(self, Z: ArrayLike, ratio: float) -> HyperLayout:
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

    def start(
        self, basis: Any, Z: ArrayLike, var_theta: float, var_eps: float, scale: float
    ) -> np.ndarray:
        """Starting ``u``: the basis' current ``psi`` with every log length scale set to
        ``log(scale * range(Z[:, d]))`` (a zero or non-finite range counts as 1), clipped to
        the bounds; a basis whose :meth:`~river_doebe.basis.Basis.hyper_start` gives its own
        ``psi`` for the start (the spline's smoothness) starts there instead."""
        psi = basis.hyper_start(Z, scale)
        u = self.pack(var_theta, var_eps, basis.get_hyper() if psi is None else psi)
        ranges = _ranges(Z)
        for i, d in zip(self.lengthscale_index, self.lengthscale_dim, strict=True):
            rng_d = float(np.mean(ranges)) if d < 0 else float(ranges[d])
            u[i] = math.log(scale * rng_d)
        return self.clip(u)


# ====================================================================== objective


def objective(
    u: np.ndarray, basis: Any, Z: np.ndarray, y: np.ndarray, Phi: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
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
        vjp = b.hyper_vjp(Z, dPhi, Phi=Phi) if _takes_features(type(b)) else b.hyper_vjp(Z, dPhi)
        g[2:] = -np.asarray(vjp, dtype=np.float64)
    return -value, g


_TAKES_FEATURES: dict[Any, bool] = {}


def _takes_features(cls: Any) -> bool:
    """Whether ``cls.hyper_vjp`` takes the features of its ``Z`` as ``Phi=`` (a basis that would
    otherwise compute them again: the RBF network, the HSGP); a basis written without it is called
    without them. (Looked up once per class.)"""
    takes = _TAKES_FEATURES.get(cls)
    if takes is None:
        takes = _TAKES_FEATURES[cls] = "Phi" in inspect.signature(cls.hyper_vjp).parameters
    return takes


class _Objective:
    """Stateful wrapper of :func:`objective` for the optimiser: caches the design matrix when the
    basis has no hyperparameters and turns failures into a large finite penalty (L-BFGS-B's line
    search handles a large value far better than ``inf``/``nan``)."""

    def __init__(self, basis: Any, Z: np.ndarray, y: np.ndarray) -> None:
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
