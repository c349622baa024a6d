"""A one-layer network of Gaussian radial basis functions with ARD length scales."""

from __future__ import annotations

import warnings

import numba
import numpy as np

from river_doebe._checks import check_seed
from river_doebe.basis.base import (
    _LOG_LS_BOUNDS,
    Basis,
    _check_lengthscale,
    _check_positive_int,
    _grown_per_input,
    _lengthscale_param,
    _lengthscale_vector,
)
from river_doebe.kernels.jit import stack_kernel

__all__ = ["RBFNetwork"]


def _rbf(Z, Phi, rows, centres_t, inv_ls, n_set, n_centres):
    # the centres come transposed, (member, input, centre): each input's term is added to
    # every centre's sum in one contiguous loop over the centres, which LLVM vectorises; a sum
    # over the inputs one centre at a time is a chain of dependent additions. Each centre's sum
    # still adds its terms in the inputs' order, so the features are the same to the bit.
    B, D = Z.shape
    for kt in numba.prange(rows.shape[0] * B):  # (member, row) pairs: even runs per thread
        k, t = kt // B, kt % B
        out = Phi[rows[k], t]
        m = n_set[k]
        for c in range(m):
            out[c] = 0.0
        for d in range(D):
            z = Z[t, d]
            scale = inv_ls[k, d]
            centre_d = centres_t[k, d]
            for c in range(m):
                u = (z - centre_d[c]) * scale
                out[c] += u * u
        for c in range(m):
            out[c] = np.exp(-0.5 * out[c])
        for c in range(m, n_centres[k]):
            out[c] = 0.0


_rbf_kernel, _rbf_kernel_parallel = stack_kernel(_rbf)


class RBFNetwork(Basis):
    """Gaussian radial basis functions ``phi_c(x) = exp(-0.5 sum_d ((x_d - c_d) / l_d)^2)``.

    One feature per centre, ``F = n_centres`` (paper Sec. 2.1.3). Where the centres come from, in
    order of precedence:

    - ``centres`` when given (an ``(n_centres, D)`` array), used verbatim;
    - :meth:`fit` on a warm-up batch ``Z``: k-means (``scipy.cluster.vq.kmeans2`` with k-means++
      initialisation, seeded by ``seed``). If ``Z`` has no more distinct rows than ``n_centres``,
      the distinct rows are the centres and the rest are jittered copies of them;
    - otherwise, online: the first ``n_centres`` distinct samples the basis learns from
      (``learn_one`` of the river face, or a learner calling ``_observe``) become the centres, in
      order. Until centre ``c`` is placed its feature is exactly ``0``. ``_observe`` returns
      ``True`` when it placed a centre, so a learner holding stacked kernel parameters knows to
      restack them, and ``wants_observations`` is ``False`` once all centres are placed.

    Hyperparameters (``psi``): the log length scales (one value if ``lengthscale`` is a number,
    one per input if it is a sequence) followed by the centres flattened row by row
    (``n_centres * D`` values). The Hessian over that many parameters is too costly for a Laplace
    approximation, so ``laplace_ok`` is ``False`` (the paper perturbs the mode with Gaussian noise
    instead). :meth:`with_hyper` stores the centres in ``centres``, so a clone keeps them.

    Parameters
    ----------
    n_centres
        Number of centres (and features).
    lengthscale
        Length scale: a positive number (shared) or one per input dimension (ARD).
    seed
        Seed of the k-means initialisation and of the jitter of padded centres.
    centres
        Explicit ``(n_centres, D)`` centres.

    Examples
    --------

    >>> from river import datasets
    >>> from river_doebe.basis import RBFNetwork
    >>> basis = RBFNetwork(n_centres=3, lengthscale=10.0, seed=0)
    >>> stream = iter(datasets.TrumpApproval())
    >>> x, _ = next(stream)
    >>> basis.transform_one(x)
    {'rbf_0': 0.0, 'rbf_1': 0.0, 'rbf_2': 0.0}

    Learning from a sample places it as the next centre:

    >>> basis.learn_one(x)
    >>> basis.transform_one(x)
    {'rbf_0': 1.0, 'rbf_1': 0.0, 'rbf_2': 0.0}

    With a warm-up batch the centres come from k-means:

    >>> import numpy as np
    >>> Z = np.random.default_rng(0).normal(size=(200, 2))
    >>> basis = RBFNetwork(n_centres=5, seed=0).fit(Z)
    >>> basis.featurize(Z).shape
    (200, 5)

    References
    ----------
    [^1]: Bishop, C. M. (2006). Pattern Recognition and Machine Learning, Sec. 6.3. Springer.
    [^2]: Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
        Transactions on Machine Learning Research.

    """

    _kernel = staticmethod(_rbf_kernel)
    _kernel_parallel = staticmethod(_rbf_kernel_parallel)
    laplace_ok = False

    def __init__(
        self,
        n_centres: int = 100,
        lengthscale: float | tuple = 1.0,
        seed: int | None = None,
        centres=None,
    ):
        self.n_centres = n_centres
        self.lengthscale = lengthscale
        self.seed = seed
        self.centres = centres

        _check_positive_int(n_centres, "n_centres")
        self._ls = _check_lengthscale(lengthscale)
        check_seed(seed)
        if centres is not None:
            C = np.array(centres, dtype=np.float64)
            if C.ndim != 2 or C.shape[0] != n_centres:
                raise ValueError(
                    f"centres must have shape (n_centres={n_centres}, n_inputs), got {C.shape}"
                )
            if not np.all(np.isfinite(C)):
                raise ValueError("centres must be finite")

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"n_centres": 5, "lengthscale": 10.0, "seed": 1}
        yield {"n_centres": 3}

    # ------------------------------------------------------------------ setup
    def _init(self, n_inputs):
        self._ls_vec = _lengthscale_vector(self._ls, n_inputs)
        self._inv_ls = 1.0 / self._ls_vec
        C = int(self.n_centres)
        if self.centres is not None:
            centres = np.array(self.centres, dtype=np.float64)
            if centres.shape[1] != n_inputs:
                raise ValueError(
                    f"centres has {centres.shape[1]} columns, the input has {n_inputs} dimensions"
                )
            self._centres = np.ascontiguousarray(centres)
            self._n_set = C
        else:
            self._centres = np.zeros((C, n_inputs))
            self._n_set = 0
        self._placed = None

    def _fit(self, Z):
        if self.centres is not None or Z.shape[0] == 0:
            return
        if not np.all(np.isfinite(Z)):
            raise ValueError("fit got NaN or infinite values")
        C = int(self.n_centres)
        distinct = np.unique(Z, axis=0)
        if distinct.shape[0] <= C:
            rng = np.random.default_rng(self.seed)
            pick = rng.integers(distinct.shape[0], size=C - distinct.shape[0])
            spread = Z.std(axis=0)
            spread = np.where(spread > 0, spread, 1.0)
            jitter = 1e-3 * spread * rng.standard_normal((pick.shape[0], Z.shape[1]))
            centres = np.vstack([distinct, distinct[pick] + jitter])
        else:
            from scipy.cluster.vq import kmeans2  # only a warm-up fits centres

            with warnings.catch_warnings():
                # an empty cluster keeps its initial centre, which is a data point: harmless here
                warnings.simplefilter("ignore", UserWarning)
                centres, _ = kmeans2(Z, C, minit="++", seed=self.seed)
        self._centres = np.ascontiguousarray(centres, dtype=np.float64)
        self._n_set = C
        self._placed = None

    def _observe(self, z):
        n = self._n_set
        C = int(self.n_centres)
        if n >= C:
            return False
        z = np.asarray(z, dtype=np.float64)
        # the centres placed so far as bytes (with -0.0 as 0.0: equal values, equal keys), so
        # that a sample is checked against them in one set lookup, not a pass over them all
        placed = getattr(self, "_placed", None)
        if placed is None:
            placed = self._placed = {(c + 0.0).tobytes() for c in self._centres[:n]}
        key = (z + 0.0).tobytes()
        if key in placed:
            return False
        self._centres[n] = z
        self._n_set = n + 1
        if n + 1 == C:
            self._placed = None  # every centre is placed: the keys are of no more use
        else:
            placed.add(key)
        return True

    def __getstate__(self):
        # the keys of the placed centres are a cache, rebuilt from the centres when needed: out
        # of pickles and copies, which then do not depend on when it was built
        state = self.__dict__.copy()
        state.pop("_placed", None)
        return state

    @property
    def can_grow(self) -> bool:
        """Always: a new input puts every centre at 0 in its coordinate (with ARD, a length
        scale of 1), where a sample that lacks it adds nothing to any distance."""
        return True

    def _grow(self, n_inputs):
        k = n_inputs - self.n_inputs
        self._centres = np.ascontiguousarray(
            np.hstack([self._centres, np.zeros((self._centres.shape[0], k))])
        )
        self._placed = None  # (the keys are of the shorter centres)
        self._ls_vec = _grown_per_input(self._ls_vec, self._ls, n_inputs)
        self._inv_ls = 1.0 / self._ls_vec
        return np.arange(self.n_outputs)

    @property
    def wants_observations(self) -> bool:
        """Whether :meth:`_observe` can still change the basis (centres left to place online)."""
        if self.centres is not None:
            return False
        return getattr(self, "_n_set", 0) < int(self.n_centres)

    @property
    def centres_(self) -> np.ndarray:
        """The centres in use (a copy; rows not yet placed online are zero)."""
        self._require_initialized("centres_")
        return self._centres.copy()

    @property
    def n_placed_(self) -> int:
        """How many centres are placed (``n_centres`` once fitted or given)."""
        self._require_initialized("n_placed_")
        return self._n_set

    @property
    def n_outputs(self):
        return int(self.n_centres)

    def _params(self):
        return (
            self._centres.T,  # (input, centre): the kernel's loop runs along the centres
            self._inv_ls,
            np.array(self._n_set, dtype=np.int64),
            np.array(int(self.n_centres), dtype=np.int64),
        )

    # ------------------------------------------------------------------ array face
    def featurize(self, Z):
        Z = self._as_batch(Z)
        n, D = Z.shape
        C = int(self.n_centres)
        m = self._n_set
        Phi = np.zeros((n, C))
        if m:
            Phi[:, :m] = np.exp(-0.5 * self._sq_dist(Z, self._centres[:m]))
        return Phi

    def _sq_dist(self, Z, c):
        """Squared scaled distances ``sum_d ((z_d - c_d) / l_d)^2``, shape (n, m), by matmul."""
        Zs = Z * self._inv_ls
        Cs = c * self._inv_ls
        sq = np.einsum("nd,nd->n", Zs, Zs)[:, None] + np.einsum("cd,cd->c", Cs, Cs)[None, :]
        sq -= 2.0 * (Zs @ Cs.T)
        return np.maximum(sq, 0.0, out=sq)

    def feature_names(self):
        return [f"rbf_{c}" for c in range(int(self.n_centres))]

    # ------------------------------------------------------------------ hyperparameters
    @property
    def _ard(self):
        return self._ls.ndim == 1

    def get_hyper(self):
        self._require_initialized("get_hyper")
        log_ls = np.log(self._ls_vec) if self._ard else np.log(self._ls).reshape(1)
        return np.concatenate([log_ls, self._centres.ravel()])

    def with_hyper(self, psi):
        D = self._require_initialized("with_hyper")
        psi = np.asarray(psi, dtype=np.float64).ravel()
        n_ls = D if self._ard else 1
        n_total = n_ls + int(self.n_centres) * D
        if psi.shape[0] != n_total:
            raise ValueError(f"expected {n_total} hyperparameters, got {psi.shape[0]}")
        new = type(self)(
            n_centres=self.n_centres,
            lengthscale=_lengthscale_param(psi[:n_ls], self._ard),
            seed=self.seed,
            centres=psi[n_ls:].reshape(int(self.n_centres), D).copy(),
        )
        return self._copy_face(new)

    def hyper_bounds(self):
        D = self._require_initialized("hyper_bounds")
        return [_LOG_LS_BOUNDS] * (D if self._ard else 1) + [(None, None)] * (self.n_centres * D)

    def hyper_names(self):
        self._require_initialized("hyper_names")
        inputs = self._input_names()
        names = [f"log_lengthscale_{n}" for n in inputs] if self._ard else ["log_lengthscale"]
        return names + [f"centre_{c}_{n}" for c in range(int(self.n_centres)) for n in inputs]

    def hyper_vjp(self, Z, G, Phi=None):
        Z = self._as_batch(Z)
        G = np.asarray(G, dtype=np.float64)
        if G.shape != (Z.shape[0], self.n_outputs):
            raise ValueError(f"G must have shape {(Z.shape[0], self.n_outputs)}, got {G.shape}")
        n, D = Z.shape
        m = self._n_set  # unplaced centres have Phi = 0, hence no gradient
        c = self._centres[:m]
        inv2 = self._inv_ls**2
        g_log_ls = np.zeros(D)
        g_centres = np.zeros_like(self._centres)
        if m:
            # W = G * Phi; dPhi/dc_d = Phi (z_d - c_d) / l_d^2 and
            # dPhi/dlog l_d = Phi (z_d - c_d)^2 / l_d^2, summed by matrix products
            # (the features of Z, the evidence's own when it passes them: the same numbers)
            W = G[:, :m] * (np.exp(-0.5 * self._sq_dist(Z, c)) if Phi is None else Phi[:, :m])
            r = W.sum(axis=1)  # per sample
            q = W.sum(axis=0)  # per centre
            WZ = W.T @ Z  # (m, D)
            g_centres[:m] = (WZ - q[:, None] * c) * inv2
            g_log_ls = (r @ (Z * Z) - 2.0 * np.einsum("cd,cd->d", WZ, c) + q @ (c * c)) * inv2
        if not self._ard:
            g_log_ls = np.array([g_log_ls.sum()])
        return np.concatenate([g_log_ls, g_centres.ravel()])
