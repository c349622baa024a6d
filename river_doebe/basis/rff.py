"""Random Fourier features: a Monte Carlo (or quasi-Monte Carlo) spectral approximation of a GP."""

from __future__ import annotations

import warnings
import zlib

import numba
import numpy as np

from river_doebe._checks import check_bool, check_seed
from river_doebe.basis.base import (
    _LOG_LS_BOUNDS,
    Basis,
    _check_choice,
    _check_lengthscale,
    _check_positive_int,
    _grown_per_input,
    _lengthscale_param,
    _lengthscale_vector,
)
from river_doebe.kernels.jit import stack_kernel

__all__ = ["RandomFourierFeatures"]

#: Matern smoothness of each kernel name (``None``: squared exponential)
_KERNELS = {"se": None, "matern32": 1.5, "matern52": 2.5}
_SAMPLERS = ("mc", "qmc")
_U_CLIP = 1e-12


def _rff(Z, Phi, rows, W_t, n_freq, scale):
    # the frequencies come transposed, (member, input, frequency): each input's term is added
    # to every frequency's sum in one contiguous loop (which LLVM vectorises), the sums kept in
    # the row's first slots; then each sum becomes its sine and cosine, from the last frequency
    # down so that no sum is overwritten before it is read. Each sum adds its terms in the
    # inputs' order, so the features are the same to the bit as one frequency at a time.
    B, D = Z.shape
    for kt in numba.prange(rows.shape[0] * B):  # (member, row) pairs: even runs per thread
        k, t = kt // B, kt % B
        out = Phi[rows[k], t]
        s = scale[k]
        H = n_freq[k]
        for h in range(H):
            out[h] = 0.0
        for d in range(D):
            z = Z[t, d]
            w = W_t[k, d]
            for h in range(H):
                out[h] += w[h] * z
        for h in range(H - 1, -1, -1):
            a = out[h]
            out[2 * h] = s * np.sin(a)
            out[2 * h + 1] = s * np.cos(a)


_rff_kernel, _rff_kernel_parallel = stack_kernel(_rff)


def _draw_base_frequencies(n_freq, n_inputs, kernel, sampler, seed):
    """Draw the ``(H, D)`` base frequencies ``eps`` of a unit-length-scale kernel, and the
    per-frequency divisor ``sqrt(u / (2 nu))`` of a Matern kernel (ones for the SE kernel)."""
    nu = _KERNELS[kernel]
    if sampler == "mc" or n_inputs == 0:  # (no input: only a Matern kernel's divisors to draw)
        rng = np.random.default_rng(seed)
        eps = rng.standard_normal((n_freq, n_inputs))
        if nu is None:
            return eps, np.ones(n_freq)
        mix = np.sqrt(rng.chisquare(2.0 * nu, size=n_freq) / (2.0 * nu))
        return eps / mix[:, None], mix
    # scipy.stats (a quarter of a second to import) only for the quasi-Monte Carlo draws
    import scipy.special
    import scipy.stats
    from scipy.stats import qmc

    dim = n_inputs + (nu is not None)
    with warnings.catch_warnings():
        # Sobol' points balance best for powers of two; other counts are still valid draws
        warnings.simplefilter("ignore", UserWarning)
        U = qmc.Sobol(d=dim, scramble=True, seed=seed).random(n_freq)
    U = np.clip(U, _U_CLIP, 1.0 - _U_CLIP)
    eps = scipy.special.ndtri(U[:, :n_inputs])
    if nu is None:
        return eps, np.ones(n_freq)
    mix = np.sqrt(scipy.stats.chi2.ppf(U[:, n_inputs], 2.0 * nu) / (2.0 * nu))
    return eps / mix[:, None], mix


def _new_column(n_freq, mix, seed, dim):
    """Base frequencies of input ``dim`` added to a drawn basis: Gaussian draws from a stream of
    their own (``seed`` and ``dim``), divided by the frequencies' Matern divisors, so that every
    frequency keeps its spectral density."""
    rng = np.random.default_rng(None if seed is None else [int(seed) % 2**32, 0x67726F77, dim])
    return rng.standard_normal(n_freq) / mix


def _conditional_column(eps, nu, seed):
    """Base frequencies of a new input given the ``(H, D)`` base frequencies ``eps`` whose
    Matern divisors are not known (given or fitted frequencies): for the squared exponential
    kernel standard normal draws; for a Matern kernel, whose frequencies are multivariate
    Student-t with ``2 nu`` degrees of freedom, the conditional of one more coordinate given
    the others, a Student-t with ``2 nu + D`` degrees of freedom and scale
    ``sqrt((2 nu + |eps_h|^2) / (2 nu + D))``: either way every frequency keeps its spectral
    density. The stream is that of ``seed`` (or of ``eps`` itself when ``seed`` is ``None``,
    so that copies of a basis grow alike) and of ``D``."""
    H, D = eps.shape
    key = zlib.crc32(np.ascontiguousarray(eps).tobytes()) if seed is None else int(seed) % 2**32
    rng = np.random.default_rng([key, 0x67726F77, D])
    g = rng.standard_normal(H)
    if nu is None:
        return g
    dof = 2.0 * nu + D
    scale = np.sqrt((2.0 * nu + np.einsum("hd,hd->h", eps, eps)) / dof)
    return scale * g / np.sqrt(rng.chisquare(dof, size=H) / dof)


class RandomFourierFeatures(Basis):
    """Random Fourier features (sparse-spectrum GP) for a stationary kernel with ARD length scales.

    With ``H = n_frequencies`` base draws ``eps_h`` from the kernel's spectral density at unit
    length scale and ``w_h = eps_h / lengthscale`` (elementwise), the ``F = 2H`` features are

        ``phi(x) = sqrt(1/H) [sin(w_1.x), cos(w_1.x), ..., sin(w_H.x), cos(w_H.x)]``,

    so that ``phi(x).phi(x')`` is a Monte Carlo estimate of the unit-variance kernel
    ``k(x - x')`` (paper Sec. 2.3.1). Squared-exponential frequencies are standard normal;
    Matern-nu frequencies are multivariate Student-t with ``2 nu`` degrees of freedom
    (``eps = g / sqrt(u / (2 nu))`` with ``g ~ N(0, I)`` and ``u ~ chi2(2 nu)``).

    Hyperparameters (the unconstrained vector ``psi``): the log length scales (one value if
    ``lengthscale`` is a number, one per input if it is a sequence), followed, when
    ``optimize_frequencies`` is set, by the base frequencies ``eps`` flattened row by row
    (``H * D`` values; the "optimised Fourier features" of the paper's appendix). The basis
    returned by :meth:`with_hyper` stores its frequencies in the ``frequencies`` parameter, so
    ``clone`` keeps them.

    Fitted by empirical Bayes
    (:func:`river_doebe.warmup.empirical_bayes.fit_hyperparameters`, the warm-up of
    :class:`river_doebe.EDOEBE`), each start keeps length scales of at least a tenth of its
    starting value (``start_floor = 0.1``): the widest start, ten times each input's warm-up
    range, stays a smooth mode of at least that range. Every feature mixes every input, so at
    length scales shorter than the warm-up window's spread the features turn into noise once
    later inputs leave the window's box, and the smooth mode is the one that still extrapolates;
    on streams that stay in the box the weights pick the others.

    Parameters
    ----------
    n_frequencies
        Number of frequencies ``H``; the basis has ``2H`` features.
    lengthscale
        Length scale: a positive number (isotropic) or one per input dimension (ARD).
    kernel
        ``"se"`` (squared exponential), ``"matern32"`` or ``"matern52"``.
    sampler
        ``"mc"``: i.i.d. draws from ``numpy.random.default_rng(seed)``; ``"qmc"``: scrambled Sobol'
        points (``scipy.stats.qmc.Sobol``) pushed through the inverse CDFs.
    seed
        Seed of the draws.
    frequencies
        Explicit ``(n_frequencies, D)`` base frequencies ``eps`` (before dividing by the length
        scale). When given they are used verbatim and ``seed``/``sampler`` play no part.
    optimize_frequencies
        Whether the base frequencies are part of the hyperparameters. Their number makes a
        Laplace approximation too costly, so ``laplace_ok`` is then ``False``.

    Examples
    --------

    >>> from river import datasets
    >>> from river_doebe.basis import RandomFourierFeatures
    >>> basis = RandomFourierFeatures(n_frequencies=3, seed=42)
    >>> x, y = next(iter(datasets.TrumpApproval()))
    >>> features = basis.transform_one(x)
    >>> list(features)[:4]
    ['rff_sin_0', 'rff_cos_0', 'rff_sin_1', 'rff_cos_1']

    Every point has unit prior variance, ``phi(x).phi(x) = k(0) = 1``:

    >>> round(sum(v * v for v in features.values()), 12)
    1.0

    With many frequencies the features approximate the kernel:

    >>> import numpy as np
    >>> basis = RandomFourierFeatures(n_frequencies=4000, lengthscale=2.0, seed=0)
    >>> Phi = basis.featurize(np.array([[0.0, 0.0], [1.0, 1.0]]))
    >>> exact = np.exp(-0.5 * 2 / 2.0**2)
    >>> bool(abs(Phi[0] @ Phi[1] - exact) < 0.05)
    True

    References
    ----------
    [^1]: Rahimi, A. and Recht, B. (2007). Random features for large-scale kernel machines. NeurIPS.
    [^2]: Lazaro-Gredilla, M., Quinonero-Candela, J., Rasmussen, C. E. and Figueiras-Vidal, A. R.
        (2010). Sparse spectrum Gaussian process regression. JMLR 11.
    [^3]: Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
        Transactions on Machine Learning Research.

    """

    _kernel = staticmethod(_rff_kernel)
    _kernel_parallel = staticmethod(_rff_kernel_parallel)

    def __init__(
        self,
        n_frequencies: int = 50,
        lengthscale: float | tuple = 1.0,
        kernel: str = "se",
        sampler: str = "mc",
        seed: int | None = None,
        frequencies=None,
        optimize_frequencies: bool = False,
    ):
        self.n_frequencies = n_frequencies
        self.lengthscale = lengthscale
        self.kernel = kernel
        self.sampler = sampler
        self.seed = seed
        self.frequencies = frequencies
        self.optimize_frequencies = optimize_frequencies

        _check_positive_int(n_frequencies, "n_frequencies")
        self._ls = _check_lengthscale(lengthscale)
        _check_choice(kernel, "kernel", _KERNELS)
        _check_choice(sampler, "sampler", _SAMPLERS)
        check_seed(seed)
        check_bool("optimize_frequencies", optimize_frequencies)
        if frequencies is not None:
            eps = np.array(frequencies, dtype=np.float64)
            if eps.ndim != 2 or eps.shape[0] != n_frequencies:
                raise ValueError(
                    f"frequencies must have shape (n_frequencies={n_frequencies}, n_inputs), "
                    f"got {eps.shape}"
                )
            if not np.all(np.isfinite(eps)):
                raise ValueError("frequencies must be finite")

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"n_frequencies": 5, "seed": 1}
        yield {"n_frequencies": 4, "kernel": "matern32", "sampler": "qmc", "seed": 2}

    start_floor = 0.1

    @property
    def laplace_ok(self):
        return not self.optimize_frequencies

    # ------------------------------------------------------------------ setup
    def _init(self, n_inputs):
        H = int(self.n_frequencies)
        if self.frequencies is not None:
            eps = np.array(self.frequencies, dtype=np.float64)
            if eps.shape[1] != n_inputs:
                raise ValueError(
                    f"frequencies has {eps.shape[1]} columns, the input has {n_inputs} dimensions"
                )
            self._mix = None
        else:
            eps, self._mix = _draw_base_frequencies(
                H, n_inputs, self.kernel, self.sampler, self.seed
            )
        self._ls_vec = _lengthscale_vector(self._ls, n_inputs)
        self._eps = np.ascontiguousarray(eps)
        self._W = np.ascontiguousarray(eps / self._ls_vec)
        self._scale = np.sqrt(1.0 / H)

    @property
    def can_grow(self) -> bool:
        """Always: a new input gets a new column of frequencies from the same spectral density
        (with ARD, a length scale of 1); at 0 it leaves every feature as it was."""
        return True

    def _grow(self, n_inputs):
        D = self.n_inputs
        eps = self._eps
        for d in range(D, n_inputs):
            if self._mix is not None:  # drawn here: the divisors are known
                col = _new_column(int(self.n_frequencies), self._mix, self.seed, d)
            else:
                col = _conditional_column(eps, _KERNELS[self.kernel], self.seed)
            eps = np.column_stack([eps, col])
        self._eps = np.ascontiguousarray(eps)
        self._ls_vec = _grown_per_input(self._ls_vec, self._ls, n_inputs)
        # (element by element: the old columns of W keep their values to the bit)
        self._W = np.ascontiguousarray(self._eps / self._ls_vec)
        return np.arange(self.n_outputs)

    @property
    def base_frequencies_(self) -> np.ndarray:
        """The ``(H, D)`` base draws ``eps`` (a copy); the basis must be initialised."""
        self._require_initialized("base_frequencies_")
        return self._eps.copy()

    @property
    def n_outputs(self):
        return 2 * int(self.n_frequencies)

    def _params(self):
        return (
            self._W.T,  # (input, frequency): the kernel's loop runs along the frequencies
            np.array(int(self.n_frequencies), dtype=np.int64),
            np.array(self._scale, dtype=np.float64),
        )

    # ------------------------------------------------------------------ array face
    def featurize(self, Z):
        Z = self._as_batch(Z)
        T = Z @ self._W.T
        Phi = np.empty((Z.shape[0], self.n_outputs))
        Phi[:, 0::2] = self._scale * np.sin(T)
        Phi[:, 1::2] = self._scale * np.cos(T)
        return Phi

    def feature_names(self):
        names = []
        for h in range(int(self.n_frequencies)):
            names += [f"rff_sin_{h}", f"rff_cos_{h}"]
        return names

    # ------------------------------------------------------------------ hyperparameters
    @property
    def _ard(self):
        return self._ls.ndim == 1

    def get_hyper(self):
        self._require_initialized("get_hyper")
        log_ls = np.log(self._ls_vec) if self._ard else np.log(self._ls).reshape(1)
        if self.optimize_frequencies:
            return np.concatenate([log_ls, self._eps.ravel()])
        return log_ls.copy()

    def _split_hyper(self, psi):
        D = self._require_initialized("with_hyper")
        psi = np.asarray(psi, dtype=np.float64).ravel()
        n_ls = D if self._ard else 1
        n_total = n_ls + (self._eps.size if self.optimize_frequencies else 0)
        if psi.shape[0] != n_total:
            raise ValueError(f"expected {n_total} hyperparameters, got {psi.shape[0]}")
        eps = psi[n_ls:].reshape(self._eps.shape) if self.optimize_frequencies else self._eps
        return psi[:n_ls], eps

    def with_hyper(self, psi):
        log_ls, eps = self._split_hyper(psi)
        new = type(self)(
            n_frequencies=self.n_frequencies,
            lengthscale=_lengthscale_param(log_ls, self._ard),
            kernel=self.kernel,
            sampler=self.sampler,
            seed=self.seed,
            frequencies=np.array(eps, dtype=np.float64),
            optimize_frequencies=self.optimize_frequencies,
        )
        return self._copy_face(new)

    def hyper_bounds(self):
        D = self._require_initialized("hyper_bounds")
        bounds = [_LOG_LS_BOUNDS] * (D if self._ard else 1)
        if self.optimize_frequencies:
            bounds += [(None, None)] * self._eps.size
        return bounds

    def hyper_names(self):
        self._require_initialized("hyper_names")
        inputs = self._input_names()
        names = [f"log_lengthscale_{n}" for n in inputs] if self._ard else ["log_lengthscale"]
        if self.optimize_frequencies:
            names += [f"frequency_{h}_{n}" for h in range(int(self.n_frequencies)) for n in inputs]
        return names

    def hyper_vjp(self, Z, G):
        Z = self._as_batch(Z)
        G = np.asarray(G, dtype=np.float64)
        if G.shape != (Z.shape[0], self.n_outputs):
            raise ValueError(f"G must have shape {(Z.shape[0], self.n_outputs)}, got {G.shape}")
        T = Z @ self._W.T
        # A[n, h] = d(sum_f G[n, f] Phi[n, f]) / d t[n, h]
        A = self._scale * (G[:, 0::2] * np.cos(T) - G[:, 1::2] * np.sin(T))
        AZ = A.T @ Z  # (H, D): sum_n A[n, h] z[n, d]
        # t = sum_d eps_hd z_d / l_d, so dt/dlog l_d = -w_hd z_d and dt/deps_hd = z_d / l_d
        g_log_ls = -np.sum(self._W * AZ, axis=0)
        if not self._ard:
            g_log_ls = np.array([g_log_ls.sum()])
        if self.optimize_frequencies:
            return np.concatenate([g_log_ls, (AZ / self._ls_vec).ravel()])
        return g_log_ls
