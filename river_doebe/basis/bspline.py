"""Additive Bayesian P-splines: B-splines on equally spaced knots with a difference prior."""

from __future__ import annotations

import math
import numbers

import numba
import numpy as np

from river_doebe.basis.base import (
    _ROW0,
    _check_lengthscale,
    _check_positive_int,
    _cotangent,
    _grown_per_input,
    _lengthscale_vector,
    _PositiveHyperBasis,
    stack_params,
)
from river_doebe.kernels.jit import stack_kernel

__all__ = ["BSpline", "penalty_eigen"]

#: boundary factor times this is the half-width of the box when the basis never saw a batch
_UNFITTED_EXTENT = 3.0

#: bounds of a log smoothness: below ``ridge / 16`` the difference penalty no longer shapes the
#: prior (its eigenvalues are at most ``4^order``), far above ``ridge`` times the inverse of its
#: smallest non-zero eigenvalue only the polynomial trend is left; the optimiser needs neither end
_LOG_SMOOTHNESS_BOUNDS = (float(np.log(1e-6)), float(np.log(1e10)))


def penalty_eigen(n_basis: int, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues ``s`` (ascending) and orthonormal eigenvectors ``V`` of ``D'D``, with ``D``
    the ``order``-th difference matrix on ``n_basis`` coefficients.

    ``D'D`` has a null space of exactly ``order`` dimensions (the polynomials of degree below
    ``order``); those eigenvalues are set to 0 exactly, so that rounding does not let a large
    smoothness penalise them.
    """
    Dk = np.diff(np.eye(n_basis), order, axis=0)
    s, V = np.linalg.eigh(Dk.T @ Dk)
    s = np.maximum(s, 0.0)
    s[:order] = 0.0
    return s, np.ascontiguousarray(V)


def _bspline(Z, Phi, rows, n_basis, degree, lo, width, weights, n_base, shift):
    B, D = Z.shape
    for k in numba.prange(rows.shape[0]):
        r = rows[k]
        n = n_basis[k]
        p = degree[k]
        K = n - p  # knot intervals inside the boundary
        N = np.empty(p + 1)
        for i in range(B):
            for d in range(D):
                # position in units of knot intervals, clamped to the boundary: outside it the
                # features are those of the nearest end (finite for any finite input)
                t = (Z[i, d] - lo[k, d]) / width[k, d] * K
                t = min(max(t, 0.0), float(K))
                j = min(int(math.floor(t)), K - 1)
                u = t - j
                # Cox-de Boor on uniform knots: every denominator of the recursion is q
                N[0] = 1.0
                for q in range(1, p + 1):
                    saved = 0.0
                    for a in range(q):
                        tmp = N[a] / q
                        N[a] = saved + (a + 1 - u) * tmp
                        saved = (u + q - a - 1) * tmp
                    N[q] = saved
                # the p + 1 non-zero B-splines j..j+p times the whitening rows
                base = d * n
                pinned = d >= n_base[k]  # an input that joined later: f_d(x_d) - f_d(0)
                for f in range(n):
                    acc = 0.0
                    for a in range(p + 1):
                        acc += N[a] * weights[k, d, j + a, f]
                    if pinned:
                        acc = acc - shift[k, d, f]
                    Phi[r, i, base + f] = acc


_bspline_kernel, _bspline_kernel_parallel = stack_kernel(_bspline, allocates=True)


def _check_boundary(value):
    """Validate ``boundary``: one ``(lo, hi)`` pair, or one pair per input (a 2-D array)."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if (
        arr is None
        or isinstance(value, str | bytes)
        or arr.ndim not in (1, 2)
        or arr.shape[-1] != 2
        or arr.size == 0
        or not np.all(np.isfinite(arr))
        or np.any(arr[..., 1] <= arr[..., 0])
    ):
        raise ValueError(
            "boundary must be a pair (lo, hi) with lo < hi, or a sequence of such pairs (one per "
            f"input), got {value!r}"
        )
    return arr


class BSpline(_PositiveHyperBasis):
    """Additive Bayesian P-splines: B-splines of each input on equally spaced knots, with the
    difference prior of Eilers & Marx turned into the learner's isotropic prior.

    Each input ``d`` gets ``n = floor(n_features / D)`` B-splines of degree ``degree`` on
    ``K = n - degree`` equal intervals of its boundary ``[lo_d, hi_d]``; ``F = D * n``, ordered
    input-major. Their coefficients ``c_d`` carry the P-spline prior, a difference penalty of order
    ``penalty_order`` plus a small ridge that makes it proper:

        ``c_d ~ N(0, var_theta * Q_d^{-1})``,  ``Q_d = lambda_d * P'P + ridge * I``,

    with ``P`` the difference matrix. The learners assume ``theta ~ N(0, var_theta I)``, so the
    basis whitens: with ``P'P = V diag(s) V'`` (fixed), the features are ``phi_d(x) = B_d(x_d) W_d``
    with ``W_d = V diag((lambda_d s / ridge + 1)^-1/2) V'``, the symmetric square root of
    ``ridge * Q_d^{-1}``, so that ``phi(x) . phi(x') = ridge * sum_d B_d(x_d) Q_d^{-1} B_d(x'_d)'``.
    The smoothness ``lambda_d`` shrinks the wiggly directions; the polynomials of degree below
    ``penalty_order`` (constant and linear trend by default), which the penalty leaves free, get
    the ridge's prior. The factor ``ridge`` puts the features on the scale of the other bases
    (prior variance at most about 1 per input, ``var_theta`` for the trend), so that ``var_theta``
    and a random walk on the weights mean the same for a spline as for a kernel basis: only the
    ratio ``lambda_d / ridge`` shapes the prior.

    The boundaries are, in order of precedence:

    - ``boundary`` when given (one ``(lo, hi)`` pair, or one per input), used verbatim;
    - after :meth:`fit` on a batch ``Z``: the range of ``Z[:, d]`` widened by ``boundary_factor``
      about its middle (a constant input: half-width ``boundary_factor * 1``);
    - otherwise (pure online use): ``[-3 c, 3 c]`` with ``c = boundary_factor``, which assumes
      roughly standardised inputs.

    **Outside the boundary the features are clamped**: an input beyond ``hi_d`` has the features
    of ``hi_d`` (and below ``lo_d`` those of ``lo_d``), so the fitted function is continued as a
    constant and the features stay bounded (and finite for any finite input), where a linear
    continuation would let a far input blow up the prediction and its variance.

    Hyperparameters (``psi``): the log smoothness, one value if ``smoothness`` is a number, one
    per input if it is a sequence, with analytic gradients through the whitening. For the
    empirical-Bayes starts (:meth:`hyper_start`), a start ``s`` sets ``lambda_d`` so that the
    prior's wiggles have a span of about ``s`` times the input's warm-up range.

    **New inputs** (:meth:`~river_doebe.basis.base.Basis.grow`): an input that joins later gets
    the same ``n`` B-splines on the boundary of an unfitted input (``boundary`` if it is one
    pair, else ``[-3 c, 3 c]``), with the shared smoothness or, with one per input, a
    smoothness of 1. Its component is pinned at 0, ``phi_d(x) - phi_d(0)``, so that the past
    samples, which lacked it, keep their features exactly; the inputs the basis was set up with
    keep theirs unchanged.

    Parameters
    ----------
    n_features
        Feature budget; each of the ``D`` inputs gets ``floor(n_features / D)`` B-splines, at
        least ``degree + 1`` and more than ``penalty_order``.
    smoothness
        The smoothness ``lambda`` of the difference prior: a positive number (shared) or one per
        input.
    degree
        Degree of the B-splines (3: cubic), at least 1 (the features are continuous).
    penalty_order
        Order of the differences in the penalty (2: second differences).
    ridge
        The ridge that makes the prior proper (only ``smoothness / ridge`` matters).
    boundary_factor
        The factor widening the data range into the boundary (room for drift).
    boundary
        Explicit boundaries: one ``(lo, hi)`` pair, or one per input.

    Examples
    --------

    The whitened features reproduce the P-spline prior covariance (in units of ``ridge``):

    >>> import numpy as np
    >>> from scipy import interpolate
    >>> from river_doebe.basis import BSpline
    >>> basis = BSpline(n_features=10, smoothness=4.0, ridge=0.1, boundary=(-1.0, 1.0))
    >>> x = np.array([[-0.3], [0.5]])
    >>> Phi = basis.featurize(x)
    >>> Phi.shape
    (2, 10)
    >>> knots = -1.0 + 2.0 / 7 * np.arange(-3, 11)  # 7 intervals, 3 more knots at each end
    >>> B = interpolate.BSpline.design_matrix(x[:, 0], knots, 3).toarray()
    >>> P = np.diff(np.eye(10), 2, axis=0)
    >>> prior = 0.1 * B @ np.linalg.inv(4.0 * P.T @ P + 0.1 * np.eye(10)) @ B.T
    >>> bool(np.allclose(Phi @ Phi.T, prior))
    True

    On a stream, features are named by input and spline; beyond the boundary they are clamped:

    >>> basis = BSpline(n_features=10)
    >>> list(basis.transform_one({"a": 0.1, "b": -0.2}))[:3]
    ['bspline_a_0', 'bspline_a_1', 'bspline_a_2']
    >>> basis.boundary_
    array([[-3.6,  3.6],
           [-3.6,  3.6]])
    >>> basis.transform_one({"a": 1e300, "b": 0.0}) == basis.transform_one({"a": 3.6, "b": 0.0})
    True

    References
    ----------
    [^1]: Eilers, P. H. C. and Marx, B. D. (1996). Flexible smoothing with B-splines and
        penalties. Statistical Science 11(2).
    [^2]: Lang, S. and Brezger, A. (2004). Bayesian P-splines. Journal of Computational and
        Graphical Statistics 13(1).

    """

    _kernel = staticmethod(_bspline_kernel)
    _kernel_parallel = staticmethod(_bspline_kernel_parallel)

    def __init__(
        self,
        n_features: int = 100,
        smoothness: float | tuple = 1.0,
        degree: int = 3,
        penalty_order: int = 2,
        ridge: float = 1e-2,
        boundary_factor: float = 1.2,
        boundary: tuple | None = None,
    ):
        self.n_features = n_features
        self.smoothness = smoothness
        self.degree = degree
        self.penalty_order = penalty_order
        self.ridge = ridge
        self.boundary_factor = boundary_factor
        self.boundary = boundary

        _check_positive_int(n_features, "n_features")
        self._lam = _check_lengthscale(smoothness, name="smoothness")
        _check_positive_int(degree, "degree")
        _check_positive_int(penalty_order, "penalty_order")
        # too few for one input is too few for any number of inputs: refused now, not at the
        # first sample (the count per input is checked again once the inputs are known)
        if n_features < degree + 1 or n_features <= penalty_order:
            raise ValueError(
                f"n_features={n_features!r} is too few: BSpline needs at least degree + 1 = "
                f"{degree + 1} and more than penalty_order = {penalty_order} B-splines per input"
            )
        for name, value in (("ridge", ridge), ("boundary_factor", boundary_factor)):
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Real)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        self._boundary_param = None if boundary is None else _check_boundary(boundary)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"n_features": 30}
        yield {"n_features": 24, "degree": 1, "penalty_order": 1, "smoothness": 10.0,
               "boundary": (-200.0, 200.0)}

    # ------------------------------------------------------------------ setup
    def _init(self, n_inputs):
        self._n_base = n_inputs  # the inputs it is set up with; later ones are pinned at 0
        if n_inputs:
            self._set_count(n_inputs)
        else:  # nothing to set up yet: the B-splines per input are counted at the first growth
            self._n, self._s, self._V = 0, np.zeros(0), np.zeros((0, 0))
        self._lam_vec = _lengthscale_vector(self._lam, n_inputs, name="smoothness")
        if self._boundary_param is not None:
            if self._boundary_param.ndim == 2 and self._boundary_param.shape[0] != n_inputs:
                raise ValueError(
                    f"boundary has {self._boundary_param.shape[0]} pairs but the input has "
                    f"{n_inputs} dimensions"
                )
            box = np.broadcast_to(self._boundary_param, (n_inputs, 2))
        else:
            half = float(self.boundary_factor) * _UNFITTED_EXTENT
            box = np.tile([-half, half], (n_inputs, 1))
        self._set_boundary(box)
        self._set_weights()

    def _set_count(self, n_inputs: int) -> None:
        n = int(self.n_features) // n_inputs
        if n < self.degree + 1 or n <= self.penalty_order:
            raise ValueError(
                f"n_features={self.n_features} gives {n} B-splines for each of {n_inputs} inputs: "
                f"BSpline needs at least degree + 1 = {self.degree + 1} and more than "
                f"penalty_order = {self.penalty_order} per input"
            )
        self._n = n
        self._s, self._V = penalty_eigen(n, int(self.penalty_order))

    def _fit(self, Z):
        if self._boundary_param is not None:
            return
        if Z.shape[0] == 0:
            return
        lo, hi = np.min(Z, axis=0), np.max(Z, axis=0)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError("fit got NaN or infinite values")
        mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        half = float(self.boundary_factor) * np.where(half > 0, half, 1.0)
        self._set_boundary(np.column_stack([mid - half, mid + half]))
        self._pin()

    def _set_boundary(self, box):
        box = np.asarray(box, dtype=np.float64)
        self._lo = np.ascontiguousarray(box[:, 0])
        self._width = np.ascontiguousarray(box[:, 1] - box[:, 0])
        if not np.all(np.isfinite(self._width)) or np.any(self._width <= 0):
            raise ValueError(f"the boundary must be finite with lo < hi, got {box.tolist()}")

    def _set_weights(self):
        self._scale, self._weights = self._whitening(self._lam_vec)
        self._pin()

    def _whitening(self, lam):
        """``(scale, W)`` of inputs with smoothness ``lam``: ``W_d = V diag((lambda_d s / ridge +
        1)^-1/2) V'``, the symmetric square root of ``ridge * Q_d^{-1}``."""
        prec = lam[:, None] * self._s[None, :] / float(self.ridge) + 1.0  # (D, n)
        scale = prec**-0.5
        return scale, np.ascontiguousarray(np.einsum("ik,dk,jk->dij", self._V, scale, self._V))

    def _pin(self):
        """The features at 0 of the inputs that joined later, as the kernel computes them, so
        that it subtracts them exactly (0 at 0, bit for bit)."""
        D, base = self._lo.shape[0], self._n_base
        self._shift = np.zeros((D, self._n))
        if base < D:
            out = np.zeros((1, 1, D * self._n))
            self._kernel(np.zeros((1, D)), out, _ROW0, *stack_params([self._params()]))
            self._shift[base:] = out[0, 0].reshape(D, self._n)[base:]

    @property
    def can_grow(self) -> bool:
        """Always: a new input's component is pinned at 0 (see the class docstring)."""
        return True

    def _grow(self, n_inputs):
        D = self.n_inputs
        if D == 0:
            self._set_count(n_inputs)
        n, k = self._n, n_inputs - D
        param = self._boundary_param
        if param is not None and param.ndim == 1:
            box = np.tile(param, (k, 1))
        else:
            half = float(self.boundary_factor) * _UNFITTED_EXTENT
            box = np.tile([-half, half], (k, 1))
        lam = _grown_per_input(self._lam_vec, self._lam, n_inputs)
        scale, weights = self._whitening(lam[D:])
        # the old inputs' arrays are kept as they are (their features must not move by a bit)
        self._lam_vec = lam
        self._lo = np.ascontiguousarray(np.r_[self._lo, box[:, 0]])
        self._width = np.ascontiguousarray(np.r_[self._width, box[:, 1] - box[:, 0]])
        self._scale = np.vstack([self._scale.reshape(D, n), scale])
        self._weights = np.ascontiguousarray(np.concatenate([self._weights.reshape(D, n, n),
                                                             weights]))
        self._pin()
        return np.arange(D * n)

    @property
    def boundary_(self) -> np.ndarray:
        """The boundaries ``[lo_d, hi_d]`` in use, one row per input (a copy)."""
        self._require_initialized("boundary_")
        return np.column_stack([self._lo, self._lo + self._width])

    @property
    def n_outputs(self):
        return self.n_inputs * self._n

    @property
    def _n_intervals(self) -> int:
        return self._n - int(self.degree)

    def _params(self):
        return (np.array(self._n, dtype=np.int64), np.array(self.degree, dtype=np.int64),
                self._lo, self._width, self._weights, np.array(self._n_base, dtype=np.int64),
                self._shift)

    # ------------------------------------------------------------------ array face
    def _knots(self, d: int) -> np.ndarray:
        p, K = int(self.degree), self._n_intervals
        return self._lo[d] + self._width[d] * np.arange(-p, K + p + 1, dtype=np.float64) / K

    def design_matrix(self, Z) -> list:
        """The B-splines of each input (before whitening), clamped to the boundary: for each
        ``d`` a sparse ``(n_samples, n)`` matrix (``scipy.interpolate.BSpline.design_matrix``)."""
        # SciPy's interpolate loads its optimisers: imported here, off the streaming path (the
        # stream featurises through the kernel)
        from scipy import interpolate

        Z = self._as_batch(Z)
        p = int(self.degree)
        out = []
        for d in range(Z.shape[1]):
            t = self._knots(d)
            x = np.clip(Z[:, d], t[p], t[self._n])
            out.append(interpolate.BSpline.design_matrix(x, t, p))
        return out

    def featurize(self, Z):
        Z = self._as_batch(Z)
        blocks = [Bd @ self._weights[d] for d, Bd in enumerate(self.design_matrix(Z))]
        for d, b0 in self._pins():
            blocks[d] = blocks[d] - b0 @ self._weights[d]
        return np.hstack(blocks) if blocks else np.zeros((Z.shape[0], 0))

    def _pins(self):
        """``(d, B_d(0))`` for each input that joined later (its B-splines at 0, a dense row)."""
        D, base = self.n_inputs, self._n_base
        if base == D:
            return []
        rows = self.design_matrix(np.zeros((1, D)))
        return [(d, rows[d].toarray()) for d in range(base, D)]

    def feature_names(self):
        return [f"bspline_{name}_{j}" for name in self._input_names() for j in range(self._n)]

    # ------------------------------------------------------------------ hyperparameters
    _hyper_name = "log_smoothness"
    _hyper_bound = _LOG_SMOOTHNESS_BOUNDS

    @property
    def _hyper_value(self):
        return self._lam

    @property
    def _hyper_per_input(self):
        return self._lam_vec

    def _rebuilt(self, value):
        return type(self)(
            n_features=self.n_features,
            smoothness=value,
            degree=self.degree,
            penalty_order=self.penalty_order,
            ridge=self.ridge,
            boundary_factor=self.boundary_factor,
            boundary=tuple(tuple(float(v) for v in row) for row in self.boundary_),
        )

    def hyper_vjp(self, Z, G):
        Z = self._as_batch(Z)
        G = _cotangent(G, Z.shape[0], self.n_outputs)
        n = self._n
        # Phi_d = B_d W_d, and with r = lambda_d s / ridge, d W_d / d log lambda_d =
        # V diag(-r / 2 (r + 1)^-3/2) V', so the step is <B_d' G_d, dW_d> (Frobenius)
        r = self._lam_vec[:, None] * self._s[None, :] / float(self.ridge)
        dscale = -0.5 * r * self._scale**3  # (D, n)
        g = np.empty(Z.shape[1])
        pins = dict(self._pins())
        for d, Bd in enumerate(self.design_matrix(Z)):
            M = np.asarray(Bd.T @ G[:, d * n : (d + 1) * n])  # (n, n)
            if d in pins:  # a pinned input's features are (B_d - B_d(0)) W_d
                M = M - np.outer(pins[d], G[:, d * n : (d + 1) * n].sum(axis=0))
            g[d] = np.sum(dscale[d] * np.einsum("ik,ij,jk->k", self._V, M, self._V))
        return g if self._ard else np.array([g.sum()])

    def hyper_start(self, Z, scale):
        """The smoothness a start ``scale`` of the empirical-Bayes fit begins from.

        Under the prior, the coefficients depart from a polynomial of degree
        ``penalty_order - 1`` by about ``sqrt(m^(2 q - 1) / lambda)`` over ``m`` knots
        (``q = penalty_order``), and the ridge bounds them by ``sqrt(1 / ridge)``: the two meet at
        ``m = (lambda / ridge)^(1 / (2 q - 1))`` knots, the prior's wiggle span. Start ``s`` sets
        it to ``s`` times the input's range in ``Z`` (a constant input: a range of 1), so the
        starts 0.1, 1 and 10 begin at wiggly, smooth and nearly polynomial fits, as they begin
        the kernels' length scales at 0.1, 1 and 10 times the range.
        """
        D = self._require_initialized("hyper_start")
        Z = np.asarray(Z, dtype=np.float64)
        ranges = np.ptp(Z, axis=0) if Z.shape[0] else np.ones(D)
        ranges = np.where(np.isfinite(ranges) & (ranges > 0), ranges, 1.0)
        knots = float(scale) * ranges / self._width * self._n_intervals
        q = int(self.penalty_order)
        log_lam = math.log(float(self.ridge)) + (2 * q - 1) * np.log(knots)
        lo, hi = _LOG_SMOOTHNESS_BOUNDS
        log_lam = np.clip(log_lam, lo, hi)
        return log_lam if self._ard else np.array([float(np.mean(log_lam))])
