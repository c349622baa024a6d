"""The generated streams, which need no data file.

:class:`Friedman1` and :class:`Friedman2` are the paper's synthetic benchmarks, bit for bit;
:class:`Drift` (a drifting stream with a regime change) is the quick start's and the command
line's default; :class:`StaticThenDrift` is static first and drifts afterwards, as the paper's
Experiment 2 needs. Their docstrings are completed by :mod:`river_doebe.datasets.base`.
"""

from __future__ import annotations

import math

import numpy as np

from river_doebe.datasets.base import GeneratedDataset

__all__ = ["Drift", "Friedman1", "Friedman2", "StaticThenDrift"]

_FRIEDMAN = (
    "J. H. Friedman (1991). Multivariate adaptive regression splines. The Annals of Statistics, "
    "19(1), 1-67."
)
_BREIMAN = "L. Breiman (1996). Bagging predictors. Machine Learning, 24, 123-140."


class Friedman1(GeneratedDataset):
    """Friedman #1 regression stream, exactly as the DOEBE paper generated it.

    Inputs are i.i.d. uniform on ``[0, 1]^d`` and the target is

    $$y = 10 \\sin(\\pi x_0 x_1) + 20 (x_2 - 0.5)^2 + 10 x_3 + 5 x_4 + \\sigma \\varepsilon,$$

    with $\\varepsilon \\sim \\mathcal{N}(0, 1)$; features beyond ``x4`` are irrelevant. The
    stream is i.i.d. (no drift). With the defaults, the arrays are identical to
    ``sklearn.datasets.make_friedman1(n_samples=40000, n_features=10, noise=0.1,
    random_state=0)``, which the paper's code uses: the generator draws from NumPy's legacy
    ``np.random.RandomState(seed)`` in the same order (all inputs, then all noise). scikit-learn
    is not needed.
    """

    _doc_parameters = ("n_samples", ("n_features", "Number of inputs (at least 5)."), "noise",
                       "seed")
    _doc_examples = """
    >>> from river_doebe import datasets
    >>> dataset = datasets.Friedman1()
    >>> dataset.n_samples, dataset.n_features
    (40000, 10)
    >>> x, y = next(iter(dataset))
    >>> round(x["x0"], 4), round(y, 4)
    (0.5488, 17.2233)
    >>> X, y = dataset.arrays()
    >>> X.shape, y.shape
    ((40000, 10), (40000,))
    """
    _doc_references = (_FRIEDMAN, _BREIMAN)
    _doc_paper = "Table 1, Friedman #1"

    def __init__(self, n_samples=40000, n_features=10, noise=0.1, seed=0):
        if n_features < 5:
            raise ValueError(f"Friedman #1 needs at least 5 features, got n_features={n_features}")
        super().__init__(n_samples, n_features)
        self.noise = noise
        self.seed = seed

    def _build(self):
        rng = np.random.RandomState(self.seed)
        U = rng.uniform(size=(self.n_samples, self.n_features))
        eps = rng.standard_normal(size=self.n_samples)
        # Same arithmetic, in the same order, as the reference generator: bitwise equal output.
        signal = (
            10 * np.sin(np.pi * U[:, 0] * U[:, 1])
            + 20 * (U[:, 2] - 0.5) ** 2
            + 10 * U[:, 3]
            + 5 * U[:, 4]
        )
        return U, signal + self.noise * eps


class Friedman2(GeneratedDataset):
    """Friedman #2 regression stream, exactly as the DOEBE paper generated it.

    The target is the impedance of an AC circuit with four inputs drawn uniformly from
    $x_0 \\in [0, 100]$, $x_1 \\in [40\\pi, 560\\pi]$, $x_2 \\in [0, 1]$, $x_3 \\in [1, 11]$:

    $$y = \\sqrt{x_0^2 + \\left(x_1 x_2 - \\frac{1}{x_1 x_3}\\right)^2} + \\sigma\\varepsilon.$$

    The stream is i.i.d. With the defaults, the arrays are identical to
    ``sklearn.datasets.make_friedman2(n_samples=40000, noise=1, random_state=0)``, as used by the
    paper's code: the generator draws from NumPy's legacy ``np.random.RandomState(seed)`` in the
    same order (a uniform ``(n, 4)`` block, then the noise). scikit-learn is not needed.
    """

    _doc_parameters = ("n_samples", "noise", "seed")
    _doc_examples = """
    >>> from river_doebe import datasets
    >>> dataset = datasets.Friedman2()
    >>> dataset.n_samples, dataset.n_features
    (40000, 4)
    >>> x, y = next(iter(dataset))
    >>> sorted(x)
    ['x0', 'x1', 'x2', 'x3']
    >>> round(y, 2)
    782.49
    """
    _doc_references = (_FRIEDMAN, _BREIMAN)
    _doc_paper = "Table 1, Friedman #2"

    def __init__(self, n_samples=40000, noise=1.0, seed=0):
        super().__init__(n_samples, 4)
        self.noise = noise
        self.seed = seed

    def _build(self):
        rng = np.random.RandomState(self.seed)
        X = rng.uniform(size=(self.n_samples, 4))
        X[:, 0] *= 100
        X[:, 1] *= 520 * np.pi
        X[:, 1] += 40 * np.pi
        X[:, 3] *= 10
        X[:, 3] += 1
        eps = rng.standard_normal(size=self.n_samples)
        impedance = (X[:, 0] ** 2 + (X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])) ** 2) ** 0.5
        return X, impedance + self.noise * eps


class _WithNoiseless(GeneratedDataset):
    """A generated stream that also gives its noise-free targets: ``_draw`` returns the inputs,
    the noise-free targets and the targets, all from one draw of the seed."""

    def _draw(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _build(self):
        X, _, y = self._draw()
        return X, y

    def noiseless(self) -> np.ndarray:
        """Return the noise-free targets $f_t(x_t)$, in stream order."""
        return self._draw()[1]


class Drift(_WithNoiseless):
    """A drifting nonlinear regression stream with a sudden regime change; no download needed.

    This is the package's built-in demonstration stream (quick start, command-line default). It
    has the three situations the DOEBE family is built for: a static stretch (where static
    learners are best), slow drift (where a random walk on the weights pays off) and an abrupt
    change (where ensemble weights must be able to move). It is deterministic for a given seed.

    Generating process, with $d$ = ``n_features``, $K$ = ``n_components``, $\\ell$ =
    ``lengthscale``, and $t = 0, 1, \\dots$ the position in the stream:

    1. Fixed random features: $\\omega_k \\sim \\mathcal{N}(0, \\ell^{-2} I_d)$ and
       $b_k \\sim \\mathcal{U}[0, 2\\pi)$ for $k = 1..K$, so
       $\\phi_k(x) = \\sqrt{2} \\cos(\\omega_k^\\top x + b_k)$.
    2. Inputs: $x_t \\sim \\mathcal{U}[-1, 1]^d$, i.i.d.
    3. Function: $f_t(x) = K^{-1/2} \\sum_k a_{t,k} \\phi_k(x)$, which for $a \\sim
       \\mathcal{N}(0, I_K)$ is a random-Fourier-feature draw from a Gaussian process with a
       squared-exponential kernel of length scale $\\ell$ and unit variance.
    4. Coefficients: $a_0 \\sim \\mathcal{N}(0, I_K)$. They stay fixed for $t <$ ``n_static``;
       afterwards they follow a random walk,
       $a_t = a_{t-1} + \\delta\\, \\epsilon_t$ with $\\delta$ = ``drift`` and
       $\\epsilon_t \\sim \\mathcal{N}(0, I_K)$.
    5. Regime change: at $t$ = ``change_at`` the coefficients are replaced by an independent
       draw $a' \\sim \\mathcal{N}(0, I_K)$ (the random walk, if active, continues from there).
    6. Target: $y_t = f_t(x_t) + \\sigma \\eta_t$ with $\\sigma$ = ``noise`` and
       $\\eta_t \\sim \\mathcal{N}(0, 1)$.

    The randomness comes from ``np.random.RandomState(seed)``, drawn in this order: $\\omega$,
    $b$, $a_0$, $a'$, all inputs, the random-walk steps, the noise. ``noiseless()`` returns
    $f_t(x_t)$.
    """

    _doc_parameters = (
        "n_samples",
        "n_features",
        "seed",
        ("n_static", "Number of samples before the drift starts. Defaults to ``n_samples // 5`` "
         "(1000 with the defaults, the size of the paper's warm-up batch, so a warm-up fit sees "
         "a static function)."),
        ("change_at", "Position of the regime change. Defaults to ``3 * n_samples // 5``. Pass "
         "a value of at least ``n_samples`` for no change."),
        "drift",
        "noise",
        ("n_components", "Number of random features $K$."),
        ("lengthscale", "Length scale $\\ell$ of the features."),
    )
    _doc_examples = """
    >>> from river_doebe import datasets
    >>> dataset = datasets.Drift()
    >>> dataset.n_samples, dataset.n_features
    (5000, 4)
    >>> x, y = next(iter(dataset))
    >>> sorted(x)
    ['x0', 'x1', 'x2', 'x3']
    >>> X, y = dataset.arrays()
    >>> X.shape
    (5000, 4)

    The stream only depends on the seed:

    >>> import numpy as np
    >>> bool(np.array_equal(datasets.Drift(seed=1).arrays()[1], datasets.Drift(seed=1).arrays()[1]))
    True
    """

    def __init__(
        self,
        n_samples=5000,
        n_features=4,
        seed=0,
        n_static=None,
        change_at=None,
        drift=0.01,
        noise=0.1,
        n_components=20,
        lengthscale=1.0,
    ):
        super().__init__(n_samples, n_features)
        self.seed = seed
        self.n_static = n_static
        self.change_at = change_at
        self.drift = drift
        self.noise = noise
        self.n_components = n_components
        self.lengthscale = lengthscale
        if n_features < 1 or n_components < 1:
            raise ValueError("n_features and n_components must be positive")
        if not 0 <= self.n_static_ <= n_samples:
            raise ValueError(f"n_static must lie in [0, n_samples], got {n_static}")
        if self.change_at_ < 0:
            raise ValueError(f"change_at must be non-negative, got {change_at}")
        if drift < 0 or noise < 0 or lengthscale <= 0:
            raise ValueError("drift and noise must be non-negative and lengthscale positive")

    @property
    def n_static_(self) -> int:
        """The number of static samples in effect."""
        return self.n_samples // 5 if self.n_static is None else int(self.n_static)

    @property
    def change_at_(self) -> int:
        """The position of the regime change in effect."""
        return 3 * self.n_samples // 5 if self.change_at is None else int(self.change_at)

    def _draw(self):
        n, d, K = self.n_samples, self.n_features, self.n_components
        n_static, change = self.n_static_, self.change_at_
        rng = np.random.RandomState(self.seed)
        omega = rng.standard_normal(size=(K, d)) / self.lengthscale
        phase = rng.uniform(0.0, 2 * np.pi, size=K)
        a0 = rng.standard_normal(size=K)
        a_new = rng.standard_normal(size=K)
        X = rng.uniform(-1.0, 1.0, size=(n, d))
        steps = np.zeros((n, K))
        steps[n_static:] = self.drift * rng.standard_normal(size=(n - n_static, K))
        eps = rng.standard_normal(size=n)

        walk = np.cumsum(steps, axis=0)  # walk[t] = sum of the steps up to and including t
        coef = a0 + walk
        if change < n:
            before = walk[change - 1] if change > 0 else np.zeros(K)
            coef[change:] = a_new + (walk[change:] - before)
        features = np.sqrt(2.0) * np.cos(X @ omega.T + phase)
        signal = np.einsum("tk,tk->t", coef, features) / math.sqrt(K)
        return X, signal, signal + self.noise * eps


class StaticThenDrift(_WithNoiseless):
    """An additive regression stream that is static at first and drifts afterwards.

    The DOEBE paper's Experiment 2 shows that a Bayesian model average of a static and a dynamic
    additive HSGP can collapse onto the static model while the data look static, and then fail
    to recover when they stop being so; E-DOEBE avoids the collapse. The paper uses the Kuka #1
    robot data. This generator gives the same situation in a controlled, download-free form.

    Generating process, with $d$ = ``n_features``, $K$ = ``n_basis`` and $t = 0, 1, \\dots$:

    1. Inputs: $x_t \\sim \\mathcal{U}[-1, 1]^d$, i.i.d.
    2. Basis: the sine eigenfunctions an additive Hilbert-space GP uses on $[-1, 1]$,
       $\\psi_k(u) = \\sqrt{2} \\sin(\\pi k (u + 1) / 2)$, $k = 1..K$, with unit mean square
       under the input distribution, and scales $s_k \\propto 1/k$ (smooth functions), normalised so
       that $d \\sum_k s_k^2 = 1$.
    3. Function: $f_t(x) = \\sum_{j=1}^{d} \\sum_{k=1}^{K} c_{t,j,k}\\, s_k\\, \\psi_k(x_j)$, an
       additive function whose mean square, over the prior of $c$ and the inputs, is 1.
    4. Coefficients: $c_0 \\sim \\mathcal{N}(0, I)$, fixed for $t <$ ``n_static``; afterwards a
       random walk $c_t = c_{t-1} + \\delta\\, \\epsilon_t$, $\\delta$ = ``drift``,
       $\\epsilon_t \\sim \\mathcal{N}(0, I)$.
    5. Target: $y_t = f_t(x_t) + \\sigma \\eta_t$ with $\\sigma$ = ``noise``.

    The randomness comes from ``np.random.RandomState(seed)``, drawn in this order: $c_0$, all
    inputs, the random-walk steps, the noise. ``noiseless()`` returns $f_t(x_t)$.
    """

    _doc_parameters = (
        "n_samples",
        ("n_static", "Number of samples drawn from the fixed function before the drift starts "
                     "(``None``: the first half of the stream)."),
        "n_features",
        ("n_basis", "Number of sine functions per input $K$."),
        "drift",
        "noise",
        "seed",
    )
    _doc_examples = """
    >>> import numpy as np
    >>> from river_doebe import datasets
    >>> dataset = datasets.StaticThenDrift(n_samples=2000, n_static=1000)
    >>> X, y = dataset.arrays()
    >>> X.shape
    (2000, 4)

    The noise-free function is the same on the static part, whatever the drift:

    >>> f_slow = datasets.StaticThenDrift(n_samples=2000, n_static=1000, drift=0.001).noiseless()
    >>> f_fast = datasets.StaticThenDrift(n_samples=2000, n_static=1000, drift=0.1).noiseless()
    >>> bool(np.array_equal(f_slow[:1000], f_fast[:1000]))
    True
    >>> bool(np.array_equal(f_slow[1000:], f_fast[1000:]))
    False
    """
    _doc_references = (
        "A. Solin and S. Särkkä (2020). Hilbert space methods for reduced-rank Gaussian process "
        "regression. Statistics and Computing, 30, 419-446.",
    )
    _doc_paper = "Section 5.2, Experiment 2"

    def __init__(
        self,
        n_samples=10000,
        n_static=None,
        n_features=4,
        n_basis=5,
        drift=0.01,
        noise=0.1,
        seed=0,
    ):
        super().__init__(n_samples, n_features)
        self.n_static = n_static
        if not 0 <= self.n_static_ <= n_samples:
            raise ValueError(f"n_static must lie in [0, n_samples], got {n_static}")
        if n_features < 1 or n_basis < 1:
            raise ValueError("n_features and n_basis must be positive")
        if drift < 0 or noise < 0:
            raise ValueError("drift and noise must be non-negative")
        self.n_basis = n_basis
        self.drift = drift
        self.noise = noise
        self.seed = seed

    @property
    def n_static_(self) -> int:
        """The number of static samples in effect."""
        return self.n_samples // 2 if self.n_static is None else int(self.n_static)

    def _draw(self):
        n, d, K, n_static = self.n_samples, self.n_features, self.n_basis, self.n_static_
        rng = np.random.RandomState(self.seed)
        c0 = rng.standard_normal(size=(d, K))
        X = rng.uniform(-1.0, 1.0, size=(n, d))
        steps = self.drift * rng.standard_normal(size=(n - n_static, d, K))
        eps = rng.standard_normal(size=n)

        k = np.arange(1, K + 1)
        scale = (1.0 / k) / math.sqrt(d * np.sum(1.0 / k**2))
        # psi[t, j, k] = sqrt(2) sin(pi k (x_tj + 1) / 2), weighted by s_k
        psi = np.sqrt(2.0) * np.sin(np.pi * k * (X[:, :, None] + 1.0) / 2.0) * scale
        signal = np.einsum("tjk,jk->t", psi, c0)
        if n > n_static:
            walk = np.cumsum(steps, axis=0)
            signal[n_static:] += np.einsum("tjk,tjk->t", psi[n_static:], walk)
        return X, signal, signal + self.noise * eps
