"""The additive Hilbert-space GP basis (Solin & Sarkka, 2020): Laplacian eigenfunctions on a box."""

from __future__ import annotations

import math
import numbers

import numba
import numpy as np

from river_doebe.basis.base import (
    _LOG_LS_BOUNDS,
    _ROW0,
    _check_choice,
    _check_lengthscale,
    _check_positive_int,
    _cotangent,
    _grown_per_input,
    _lengthscale_vector,
    _PositiveHyperBasis,
    stack_params,
)
from river_doebe.kernels.jit import stack_kernel

__all__ = ["HilbertGP", "spectral_density"]

#: Matern smoothness of each kernel name (``None``: squared exponential)
_KERNELS = {"se": None, "matern32": 1.5, "matern52": 2.5}

#: boundary factor times this is the half-width of the box when the basis never saw a batch
_UNFITTED_EXTENT = 3.0


def _log_spectral_density(omega, lengthscale, kernel):
    """Log of the 1-D unit-variance spectral density and its derivative w.r.t. log length scale."""
    l = lengthscale
    nu = _KERNELS[kernel]
    if nu is None:
        lw2 = (l * omega) ** 2
        return 0.5 * math.log(2.0 * math.pi) + np.log(l) - 0.5 * lw2, 1.0 - lw2
    a = 2.0 * nu / l**2
    log_c = (
        math.log(2.0)
        + 0.5 * math.log(math.pi)
        + math.lgamma(nu + 0.5)
        - math.lgamma(nu)
        + nu * math.log(2.0 * nu)
    )
    log_s = log_c - 2.0 * nu * np.log(l) - (nu + 0.5) * np.log(a + omega**2)
    dlog_s = -2.0 * nu + (2.0 * nu + 1.0) * a / (a + omega**2)
    return log_s, dlog_s


def spectral_density(omega, lengthscale=1.0, kernel="se"):
    """The 1-D spectral density ``S(omega)`` of a unit-variance stationary kernel.

    Convention: ``k(r) = (1 / 2 pi) * integral S(omega) exp(i omega r) d omega``, so that
    ``S(omega) = sqrt(2 pi) l exp(-(l omega)^2 / 2)`` for the squared exponential kernel.
    """
    _check_choice(kernel, "kernel", _KERNELS)
    l = np.asarray(lengthscale, dtype=np.float64)
    return np.exp(_log_spectral_density(np.asarray(omega, dtype=np.float64), l, kernel)[0])


def _hsgp(Z, Phi, rows, n_eig, boundary, weights, n_base, shift):
    B, D = Z.shape
    for ki in numba.prange(rows.shape[0] * B):  # (member, row) pairs: even runs per thread
        k, i = ki // B, ki % B
        r = rows[k]
        J = n_eig[k]
        for d in range(D):
            L = boundary[k, d]
            t = 0.5 * np.pi * (Z[i, d] + L) / L
            c2 = 2.0 * np.cos(t)
            s_prev = 0.0
            s = np.sin(t)
            base = d * J
            pinned = d >= n_base[k]  # an input that joined later: f_d(x_d) - f_d(0)
            for j in range(J):
                v = weights[k, d, j] * s
                if pinned:
                    v = v - shift[k, d, j]
                Phi[r, i, base + j] = v
                # Chebyshev recurrence: sin((j+1) t) = 2 cos(t) sin(j t) - sin((j-1) t)
                s_next = c2 * s - s_prev
                s_prev = s
                s = s_next


_hsgp_kernel, _hsgp_kernel_parallel = stack_kernel(_hsgp)


class HilbertGP(_PositiveHyperBasis):
    """Additive Hilbert-space approximation of a GP with a stationary kernel on each input.

    Each input dimension ``d`` gets ``J = floor(n_features / D)`` Laplacian eigenfunctions on the
    interval ``[-L_d, L_d]`` (Dirichlet boundary conditions), weighted by the square root of the
    kernel's spectral density: for ``j = 1..J``, ``omega_j = j pi / (2 L_d)`` and

        ``phi_{d,j}(x) = sqrt(S_d(omega_j)) sin(omega_j (x_d + L_d)) / sqrt(L_d)``.

    Then ``phi(x).phi(x')`` approximates the additive kernel ``sum_d k_d(x_d - x'_d)`` (unit
    variance per dimension) for points well inside the box (paper Sec. 2.3.2 and 4.3). Features are
    ordered dimension-major: feature ``d * J + (j - 1)`` is ``phi_{d,j}``; ``F = D * J``.

    The box half-widths ``L_d`` are, in order of precedence:

    - ``boundary`` when given (a number, or one per input), used verbatim;
    - after :meth:`fit` on a batch ``Z``: ``L_d = boundary_factor * max_n |Z[n, d]|`` (or
      ``boundary_factor * 1`` for an input that is identically zero), as in Riutort-Mayol et al.;
    - otherwise (pure online use, never fitted): ``L_d = boundary_factor * 3``, which assumes
      roughly standardised inputs (most of the mass within three standard deviations). Inputs far
      outside the box are still featurised, but the approximation there is poor (the sines are
      periodic), so standardise the inputs or fit the basis on a warm-up batch.

    Hyperparameters (``psi``): the log length scales, one value if ``lengthscale`` is a number, one
    per input if it is a sequence. :meth:`with_hyper` stores the box in ``boundary``, so a clone
    keeps it.

    **New inputs** (:meth:`~river_doebe.basis.base.Basis.grow`): an input that joins later gets
    the same ``J`` eigenfunctions, on the box of an unfitted input (``boundary`` if it is one
    number, else ``boundary_factor * 3``), with the shared length scale or, with ARD, a length
    scale of 1. Its component is pinned at 0, ``phi_{d,j}(x) - phi_{d,j}(0)``: the past samples,
    which lacked it, keep their features exactly, and its prior is that of ``f_d(x_d) -
    f_d(0)``, a GP that is 0 at the input's absence. The inputs the basis was set up with keep
    their features unchanged.

    Parameters
    ----------
    n_features
        Feature budget; each of the ``D`` inputs gets ``floor(n_features / D)`` eigenfunctions.
    lengthscale
        Length scale: a positive number (shared) or one per input dimension.
    kernel
        ``"se"`` (squared exponential), ``"matern32"`` or ``"matern52"``.
    boundary_factor
        The factor ``c`` scaling the data extent into the box half-width (``c > 1`` recommended;
        the larger the length scale relative to the data, the larger ``c`` should be).
    boundary
        Explicit box half-widths ``L``: a positive number or one per input dimension.

    Examples
    --------

    >>> import numpy as np
    >>> from river_doebe.basis import HilbertGP
    >>> basis = HilbertGP(n_features=40, lengthscale=0.5, boundary=3.0)
    >>> Z = np.array([[0.0, 0.2], [0.5, -0.3]])
    >>> Phi = basis.featurize(Z)
    >>> Phi.shape
    (2, 40)
    >>> exact = sum(np.exp(-0.5 * (Z[0, d] - Z[1, d]) ** 2 / 0.5**2) for d in range(2))
    >>> bool(abs(Phi[0] @ Phi[1] - exact) < 1e-6)
    True

    On a stream, with roughly standardised inputs and no warm-up batch, the box is
    ``[-1.5 * 3, 1.5 * 3]``:

    >>> basis = HilbertGP(n_features=4)
    >>> basis.transform_one({"a": 0.1, "b": -0.2}).keys()
    dict_keys(['hsgp_a_1', 'hsgp_a_2', 'hsgp_b_1', 'hsgp_b_2'])
    >>> basis.boundary_
    array([4.5, 4.5])

    References
    ----------
    [^1]: Solin, A. and Sarkka, S. (2020). Hilbert space methods for reduced-rank Gaussian process
        regression. Statistics and Computing 30.
    [^2]: Riutort-Mayol, G., Burkner, P.-C., Andersen, M. R., Solin, A. and Vehtari, A. (2023).
        Practical Hilbert space approximate Bayesian Gaussian processes for probabilistic
        programming. Statistics and Computing 33.
    [^3]: Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
        Transactions on Machine Learning Research.

    """

    _kernel = staticmethod(_hsgp_kernel)
    _kernel_parallel = staticmethod(_hsgp_kernel_parallel)

    def __init__(
        self,
        n_features: int = 100,
        lengthscale: float | tuple = 1.0,
        kernel: str = "se",
        boundary_factor: float = 1.5,
        boundary: float | tuple | None = None,
    ):
        self.n_features = n_features
        self.lengthscale = lengthscale
        self.kernel = kernel
        self.boundary_factor = boundary_factor
        self.boundary = boundary

        _check_positive_int(n_features, "n_features")
        self._ls = _check_lengthscale(lengthscale)
        _check_choice(kernel, "kernel", _KERNELS)
        if (
            isinstance(boundary_factor, bool)
            or not isinstance(boundary_factor, numbers.Real)
            or not math.isfinite(boundary_factor)
            or boundary_factor <= 0
        ):
            raise ValueError(f"boundary_factor must be a positive number, got {boundary_factor!r}")
        self._boundary_param = (
            None if boundary is None else _check_lengthscale(boundary, name="boundary")
        )

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"n_features": 12}
        yield {"n_features": 18, "kernel": "matern52", "lengthscale": 2.0, "boundary": 200.0}

    # ------------------------------------------------------------------ setup
    def _init(self, n_inputs):
        self._n_base = n_inputs  # the inputs it is set up with; later ones are pinned at 0
        self._J = self._eigen_count(n_inputs) if n_inputs else 0
        self._ls_vec = _lengthscale_vector(self._ls, n_inputs)
        if self._boundary_param is not None:
            L = _lengthscale_vector(self._boundary_param, n_inputs, name="boundary")
        else:
            L = np.full(n_inputs, float(self.boundary_factor) * _UNFITTED_EXTENT)
        self._set_boundary(L)

    def _eigen_count(self, n_inputs: int) -> int:
        J = int(self.n_features) // n_inputs
        if J == 0:
            raise ValueError(
                f"n_features={self.n_features} is smaller than the number of inputs ({n_inputs}): "
                "HilbertGP needs at least one eigenfunction per input"
            )
        return J

    def _fit(self, Z):
        if self._boundary_param is not None:
            return
        extent = np.max(np.abs(Z), axis=0) if Z.shape[0] else np.zeros(Z.shape[1])
        if not np.all(np.isfinite(extent)):
            raise ValueError("fit got NaN or infinite values")
        extent = np.where(extent > 0, extent, 1.0)
        self._set_boundary(float(self.boundary_factor) * extent)

    def _set_boundary(self, L):
        self._L = np.ascontiguousarray(L, dtype=np.float64)
        self._omega, self._weights, self._dlog_s = self._components(self._L, self._ls_vec)
        self._pin()

    def _components(self, L, ls):
        """The angular frequencies, feature weights and ``dlog S / dlog l`` of inputs with box
        half-widths ``L`` and length scales ``ls``, each ``(len(L), J)``."""
        j = np.arange(1, self._J + 1, dtype=np.float64)
        omega = j[None, :] * np.pi / (2.0 * L[:, None])  # (D, J)
        log_s, dlog_s = _log_spectral_density(omega, ls[:, None], self.kernel)
        return omega, np.ascontiguousarray(np.exp(0.5 * log_s) / np.sqrt(L)[:, None]), dlog_s

    def _pin(self):
        """The features at 0 of the inputs that joined later, as the kernel computes them, so
        that it subtracts them exactly (0 at 0, bit for bit)."""
        D, base = self._L.shape[0], getattr(self, "_n_base", self._L.shape[0])
        self._shift = np.zeros((D, self._J))
        if base < D:
            out = np.zeros((1, 1, D * self._J))
            self._kernel(np.zeros((1, D)), out, _ROW0, *stack_params([self._params()]))
            self._shift[base:] = out[0, 0].reshape(D, self._J)[base:]

    @property
    def can_grow(self) -> bool:
        """Always: a new input's component is pinned at 0 (see the class docstring)."""
        return True

    def _grow(self, n_inputs):
        D = self.n_inputs
        if D == 0:  # nothing was set up: the eigenfunctions per input are counted now
            self._J = self._eigen_count(n_inputs)
        param = self._boundary_param
        width = float(param) if param is not None and param.ndim == 0 else (
            float(self.boundary_factor) * _UNFITTED_EXTENT)
        L_new = np.full(n_inputs - D, width)
        ls = _grown_per_input(self._ls_vec, self._ls, n_inputs)
        omega, weights, dlog_s = self._components(L_new, ls[D:])
        # the old inputs' arrays are kept as they are (their features must not move by a bit)
        self._ls_vec = ls
        self._L = np.ascontiguousarray(np.r_[self._L, L_new])
        self._omega = np.vstack([self._omega.reshape(D, self._J), omega])
        self._weights = np.ascontiguousarray(np.vstack([self._weights.reshape(D, self._J),
                                                        weights]))
        self._dlog_s = np.vstack([np.reshape(self._dlog_s, (D, self._J)), dlog_s])
        self._n_inputs = n_inputs  # (the kernel of _pin reads it)
        self._pin()
        return np.arange(D * self._J)

    @property
    def boundary_(self) -> np.ndarray:
        """The box half-widths ``L_d`` in use (a copy); the basis must be initialised."""
        self._require_initialized("boundary_")
        return self._L.copy()

    @property
    def n_outputs(self):
        return self.n_inputs * self._J

    def _params(self):
        return (np.array(self._J, dtype=np.int64), self._L, self._weights,
                np.array(self._n_base, dtype=np.int64), self._shift)

    # ------------------------------------------------------------------ array face
    def featurize(self, Z):
        Z = self._as_batch(Z)
        n, D = Z.shape
        j = np.arange(1, self._J + 1, dtype=np.float64)
        t = 0.5 * np.pi * (Z + self._L) / self._L  # (n, D): the angle of j = 1
        Phi = self._weights[None, :, :] * np.sin(t[:, :, None] * j[None, None, :])
        base = self._n_base
        if base < D:  # the inputs that joined later, pinned at 0
            L = self._L[base:]
            t0 = 0.5 * np.pi * (0.0 + L) / L
            Phi[:, base:, :] -= self._weights[None, base:, :] * np.sin(t0[None, :, None] * j)
        return Phi.reshape(n, D * self._J)

    def feature_names(self):
        return [f"hsgp_{name}_{j}" for name in self._input_names() for j in range(1, self._J + 1)]

    # ------------------------------------------------------------------ hyperparameters
    _hyper_name = "log_lengthscale"
    _hyper_bound = _LOG_LS_BOUNDS

    @property
    def _hyper_value(self):
        return self._ls

    @property
    def _hyper_per_input(self):
        return self._ls_vec

    def _rebuilt(self, value):
        return type(self)(n_features=self.n_features, lengthscale=value, kernel=self.kernel,
                          boundary_factor=self.boundary_factor,
                          boundary=tuple(float(v) for v in self._L))

    def hyper_vjp(self, Z, G, Phi=None):
        Z = self._as_batch(Z)
        G = _cotangent(G, Z.shape[0], self.n_outputs)
        # Phi = sqrt(S(omega; l)) * (...), so dPhi/dlog l = 0.5 * dlog S/dlog l * Phi (the
        # features of Z: the evidence's own when it passes them, the same numbers)
        if Phi is None:
            Phi = self.featurize(Z)
        GPhi = np.sum(G * Phi, axis=0).reshape(Z.shape[1], self._J)
        g = 0.5 * np.sum(self._dlog_s * GPhi, axis=1)
        return g if self._ard else np.array([g.sum()])
