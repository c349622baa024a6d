"""Streams for the DOEBE paper's experiments, as river datasets.

Every dataset here is an ordinary river dataset: iterating it yields ``(x, y)`` pairs where ``x``
is a ``dict`` of floats with stable feature names and ``y`` is a float (a ``bool`` for
:class:`Banana`). Every dataset also has a fast array accessor, ``arrays()``, which returns
``(X, y)`` as NumPy arrays in stream order, for benchmarks that feed arrays to a model.

There are two kinds of datasets.

- **Generated** (no files needed): :class:`Friedman1` and :class:`Friedman2` (the paper's
  synthetic benchmarks), :class:`Drift` (a drifting stream with a regime change, for the quick
  start and the command-line default) and :class:`StaticThenDrift` (a stream in the style of the
  paper's Experiment 2: static first, drifting afterwards).
- **File-based**: the real streams are read from ``<name>.npz`` files holding two float64 arrays,
  ``X`` of shape ``(n, d)`` and ``y`` of shape ``(n,)``, rows in stream order. The package does not
  ship them. Pass the folder holding them as ``directory=...``, or set the environment variable
  ``RIVER_DOEBE_DATA`` to it. See :func:`data_dir`.

Feature names are ``"x0"``, ``"x1"``, ... zero-padded to a common width (``"x00"`` to ``"x16"``
for 17 features), so that sorting the names, as this package's estimators do, keeps the column
order of ``arrays()``. Datasets whose columns have documented names use them instead
(:class:`CaData`, :class:`CPUSmall`, :class:`Sarcos`, :class:`SarcosTest`); their
``feature_names`` attribute gives the column order of ``arrays()``.

Nothing is standardised here. The paper standardises ``X`` and ``y`` with the mean and standard
deviation of the first 1000 samples; that belongs to the experiment code.

A registry gives every dataset a short name (`NAMES`; `PAPER_NAMES` are the paper's seven
regression streams; `available` lists those that can be loaded now):

>>> from river_doebe import datasets
>>> "friedman1" in datasets.NAMES and "uci_concrete" in datasets.NAMES
True
>>> dataset = datasets.load("friedman2", n_samples=100)
>>> dataset.n_samples, dataset.n_features
(100, 4)

"""

from __future__ import annotations

import math
import os
import pathlib
import warnings
import zipfile

import numpy as np
from river.datasets import base

__all__ = [
    "ENV_VAR",
    "GENERATED_NAMES",
    "NAMES",
    "PAPER_NAMES",
    "UCI_NAMES",
    "UCI",
    "Banana",
    "CPUSmall",
    "CaData",
    "Drift",
    "Elevators",
    "Friedman1",
    "Friedman2",
    "Kuka1",
    "Sarcos",
    "SarcosTest",
    "StaticThenDrift",
    "available",
    "data_dir",
    "load",
]

#: Environment variable naming the folder that holds the ``.npz`` data files.
ENV_VAR = "RIVER_DOEBE_DATA"

# name -> (rows, features) of the UCI regression sets of Delbridge et al. (2020).
_UCI_SHAPES = {
    "autos": (159, 25),
    "servo": (167, 4),
    "machine": (209, 7),
    "yacht": (308, 6),
    "autompg": (392, 7),
    "housing": (506, 13),
    "stock": (536, 11),
    "energy": (768, 8),
    "concrete": (1030, 8),
    "airfoil": (1503, 5),
    "gas": (2565, 128),
    "skillcraft": (3338, 19),
    "sml": (4137, 26),
    "pol": (15000, 26),
    "bike": (17379, 17),
    "kin40k": (40000, 8),
}

#: Names accepted by :class:`UCI` (with or without the ``uci_`` prefix).
UCI_NAMES = tuple(f"uci_{name}" for name in _UCI_SHAPES)


def _generic_names(d: int) -> tuple[str, ...]:
    width = len(str(d - 1)) if d > 1 else 1
    return tuple(f"x{j:0{width}d}" for j in range(d))


# ---------------------------------------------------------------------------------------------
# Locating data files
# ---------------------------------------------------------------------------------------------


def _how_to_supply(filename: str) -> str:
    return (
        f"Pass the folder that holds {filename!r} as `directory=...`, or set the environment "
        f"variable {ENV_VAR} to it. The file must be a NumPy .npz archive with float64 arrays "
        "'X' (n, d) and 'y' (n,), rows in stream order."
    )


def data_dir(directory=None) -> pathlib.Path:
    """Resolve the folder that holds the ``.npz`` data files.

    The folder is ``directory`` when it is given; otherwise the value of the environment variable
    ``RIVER_DOEBE_DATA``. A leading ``~`` is expanded.

    Parameters
    ----------
    directory
        A folder, as a string or path, or ``None`` to use the environment variable.

    Returns
    -------
    The folder, as a ``pathlib.Path``.

    Raises
    ------
    FileNotFoundError
        If neither is set, or the folder does not exist. The message says where it looked and
        how to supply the folder.

    Examples
    --------
    >>> import tempfile
    >>> from river_doebe import datasets
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     datasets.data_dir(folder).is_dir()
    True

    """
    if directory is not None:
        path = pathlib.Path(directory).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"The data folder {str(path)!r} (the `directory` argument) does not exist."
            )
        return path
    env = os.environ.get(ENV_VAR)
    if not env:
        raise FileNotFoundError(
            f"No data folder given: the `directory` argument is None and the environment "
            f"variable {ENV_VAR} is not set. Pass `directory=...` or set {ENV_VAR} to the folder "
            "that holds the .npz data files."
        )
    path = pathlib.Path(env).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"The data folder {str(path)!r} (from the environment variable {ENV_VAR}) does not "
            "exist."
        )
    return path


def _find_file(filename: str, directory=None, hint: str = "") -> pathlib.Path:
    """Return the path of ``filename``, or raise a FileNotFoundError naming every place looked."""
    hint = f" {hint}" if hint else ""
    if directory is not None:
        path = pathlib.Path(directory).expanduser() / filename
        if path.is_file():
            return path
        raise FileNotFoundError(
            f"Data file {filename!r} not found: looked for {str(path)!r} (from the `directory` "
            f"argument).{hint} {_how_to_supply(filename)}"
        )
    env = os.environ.get(ENV_VAR)
    if env:
        path = pathlib.Path(env).expanduser() / filename
        if path.is_file():
            return path
        where = f"looked for {str(path)!r} (from the environment variable {ENV_VAR})"
    else:
        where = f"the `directory` argument is None and the environment variable {ENV_VAR} is unset"
    raise FileNotFoundError(
        f"Data file {filename!r} not found: {where}.{hint} " + _how_to_supply(filename)
    )


def _npz_shapes(path: pathlib.Path) -> dict[str, tuple[int, ...]]:
    """Read the shapes of the arrays of a ``.npz`` file from their headers (no decompression)."""
    shapes = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if not member.endswith(".npy"):
                    continue
                with archive.open(member) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, _ = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, _, _ = np.lib.format.read_array_header_2_0(fh)
                shapes[member[: -len(".npy")]] = tuple(shape)
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise ValueError(f"{str(path)!r} is not a readable NumPy .npz archive: {err}") from err
    return shapes


# ---------------------------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------------------------


class _ArrayStream:
    """Mixin: a dataset backed by two arrays, built once and cached."""

    feature_names: tuple[str, ...]

    def _build(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _get(self) -> tuple[np.ndarray, np.ndarray]:
        cached = self.__dict__.get("_cached")
        if cached is None:
            cached = self._build()
            self.__dict__["_cached"] = cached
        return cached

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the whole stream as arrays ``(X, y)``, rows in stream order.

        ``X`` has shape ``(n_samples, n_features)`` with columns in the order of
        ``feature_names``; ``y`` has shape ``(n_samples,)``. They are fresh copies, so they may be
        modified freely.

        """
        X, y = self._get()
        return X.copy(), y.copy()

    def __iter__(self):
        X, y = self._get()
        names = self.feature_names
        for row, target in zip(X.tolist(), y.tolist(), strict=True):
            yield dict(zip(names, row, strict=True)), target


class _Generated(_ArrayStream, base.SyntheticDataset):
    """A generated regression stream."""


class _NpzFile(_ArrayStream, base.Dataset):
    """A stream read from ``<filename>`` with arrays ``X`` (n, d) and ``y`` (n,)."""

    _filename: str = ""
    _n_rows: int | None = None  # documented row count; a mismatch only warns
    _n_cols: int = 0
    _names: tuple[str, ...] | None = None
    _hint: str = ""

    def __init__(self, directory=None):
        self.directory = directory
        self.path = _find_file(self._filename, directory, self._hint)
        shapes = _npz_shapes(self.path)
        if "X" not in shapes or "y" not in shapes:
            raise ValueError(
                f"{str(self.path)!r} must hold arrays 'X' and 'y'; it holds {sorted(shapes)}."
            )
        sx, sy = shapes["X"], shapes["y"]
        if len(sx) != 2 or len(sy) != 1 or sx[0] != sy[0]:
            raise ValueError(
                f"{str(self.path)!r}: expected X of shape (n, d) and y of shape (n,), got X "
                f"{sx} and y {sy}."
            )
        if sx[1] != self._n_cols:
            raise ValueError(
                f"{str(self.path)!r}: expected {self._n_cols} feature columns in X, got {sx[1]}."
            )
        if self._n_rows is not None and sx[0] != self._n_rows:
            warnings.warn(
                f"{str(self.path)!r} has {sx[0]} rows; the documented stream has {self._n_rows}.",
                stacklevel=2,
            )
        self.feature_names = self._names or _generic_names(self._n_cols)
        super().__init__(task=base.REG, n_features=sx[1], n_samples=sx[0])

    def _build(self):
        with np.load(self.path, allow_pickle=False) as data:
            X = np.asarray(data["X"], dtype=np.float64)
            y = np.asarray(data["y"], dtype=np.float64)
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ValueError(f"{str(self.path)!r} holds NaN or infinite values.")
        return X, y

    @property
    def _repr_content(self):
        content = super()._repr_content
        content["Path"] = str(self.path)
        return content


# ---------------------------------------------------------------------------------------------
# Generated streams
# ---------------------------------------------------------------------------------------------


class Friedman1(_Generated):
    """Friedman #1 regression stream, exactly as the DOEBE paper generated it.

    Inputs are i.i.d. uniform on ``[0, 1]^d`` and the target is

    $$y = 10 \\sin(\\pi x_0 x_1) + 20 (x_2 - 0.5)^2 + 10 x_3 + 5 x_4 + \\sigma \\varepsilon,$$

    with $\\varepsilon \\sim \\mathcal{N}(0, 1)$; features beyond ``x4`` are irrelevant. The
    stream is i.i.d. (no drift). With the defaults, the arrays are identical to
    ``sklearn.datasets.make_friedman1(n_samples=40000, n_features=10, noise=0.1,
    random_state=0)``, which the paper's code uses: the generator draws from NumPy's legacy
    ``np.random.RandomState(seed)`` in the same order (all inputs, then all noise). scikit-learn
    is not needed.

    Parameters
    ----------
    n_samples
        Length of the stream.
    n_features
        Number of inputs (at least 5).
    noise
        Standard deviation $\\sigma$ of the Gaussian noise.
    seed
        Seed of ``np.random.RandomState``.

    Examples
    --------
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

    References
    ----------
    [^1]: J. H. Friedman (1991). Multivariate adaptive regression splines. The Annals of
        Statistics, 19(1), 1-67.
    [^2]: L. Breiman (1996). Bagging predictors. Machine Learning, 24, 123-140.
    [^3]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Table 1, Friedman #1).

    """

    def __init__(self, n_samples=40000, n_features=10, noise=0.1, seed=0):
        if n_features < 5:
            raise ValueError(f"Friedman #1 needs at least 5 features, got n_features={n_features}")
        _check_n(n_samples)
        super().__init__(task=base.REG, n_features=n_features, n_samples=n_samples)
        self.noise = noise
        self.seed = seed
        self.feature_names = _generic_names(n_features)

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


class Friedman2(_Generated):
    """Friedman #2 regression stream, exactly as the DOEBE paper generated it.

    The target is the impedance of an AC circuit with four inputs drawn uniformly from
    $x_0 \\in [0, 100]$, $x_1 \\in [40\\pi, 560\\pi]$, $x_2 \\in [0, 1]$, $x_3 \\in [1, 11]$:

    $$y = \\sqrt{x_0^2 + \\left(x_1 x_2 - \\frac{1}{x_1 x_3}\\right)^2} + \\sigma\\varepsilon.$$

    The stream is i.i.d. With the defaults, the arrays are identical to
    ``sklearn.datasets.make_friedman2(n_samples=40000, noise=1, random_state=0)``, as used by the
    paper's code: the generator draws from NumPy's legacy ``np.random.RandomState(seed)`` in the
    same order (a uniform ``(n, 4)`` block, then the noise). scikit-learn is not needed.

    Parameters
    ----------
    n_samples
        Length of the stream.
    noise
        Standard deviation $\\sigma$ of the Gaussian noise.
    seed
        Seed of ``np.random.RandomState``.

    Examples
    --------
    >>> from river_doebe import datasets
    >>> dataset = datasets.Friedman2()
    >>> dataset.n_samples, dataset.n_features
    (40000, 4)
    >>> x, y = next(iter(dataset))
    >>> sorted(x)
    ['x0', 'x1', 'x2', 'x3']
    >>> round(y, 2)
    782.49

    References
    ----------
    [^1]: J. H. Friedman (1991). Multivariate adaptive regression splines. The Annals of
        Statistics, 19(1), 1-67.
    [^2]: L. Breiman (1996). Bagging predictors. Machine Learning, 24, 123-140.
    [^3]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Table 1, Friedman #2).

    """

    def __init__(self, n_samples=40000, noise=1.0, seed=0):
        _check_n(n_samples)
        super().__init__(task=base.REG, n_features=4, n_samples=n_samples)
        self.noise = noise
        self.seed = seed
        self.feature_names = _generic_names(4)

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


def _check_n(n_samples):
    if int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")


class Drift(_Generated):
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

    Parameters
    ----------
    n_samples
        Length of the stream.
    n_features
        Number of inputs $d$.
    seed
        Seed of ``np.random.RandomState``.
    n_static
        Number of samples before the drift starts. Defaults to ``n_samples // 5`` (1000 with the
        defaults, the size of the paper's warm-up batch, so a warm-up fit sees a static
        function).
    change_at
        Position of the regime change. Defaults to ``3 * n_samples // 5``. Pass a value of at
        least ``n_samples`` for no change.
    drift
        Standard deviation $\\delta$ of each random-walk step of each coefficient.
    noise
        Standard deviation $\\sigma$ of the observation noise.
    n_components
        Number of random features $K$.
    lengthscale
        Length scale $\\ell$ of the features.

    Examples
    --------
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
        _check_n(n_samples)
        super().__init__(task=base.REG, n_features=n_features, n_samples=n_samples)
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
        self.feature_names = _generic_names(n_features)

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

    def _build(self):
        X, _, y = self._draw()
        return X, y

    def noiseless(self) -> np.ndarray:
        """Return the noise-free targets $f_t(x_t)$, in stream order."""
        return self._draw()[1]


class StaticThenDrift(_Generated):
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

    Parameters
    ----------
    n_samples
        Length of the stream.
    n_static
        Number of samples drawn from the fixed function before the drift starts.
    n_features
        Number of inputs $d$.
    n_basis
        Number of sine functions per input $K$.
    drift
        Standard deviation $\\delta$ of each random-walk step of each coefficient.
    noise
        Standard deviation $\\sigma$ of the observation noise.
    seed
        Seed of ``np.random.RandomState``.

    Examples
    --------
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

    References
    ----------
    [^1]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Section 5.2, Experiment 2).
    [^2]: A. Solin and S. Särkkä (2020). Hilbert space methods for reduced-rank Gaussian process
        regression. Statistics and Computing, 30, 419-446.

    """

    def __init__(
        self,
        n_samples=10000,
        n_static=5000,
        n_features=4,
        n_basis=5,
        drift=0.01,
        noise=0.1,
        seed=0,
    ):
        _check_n(n_samples)
        if not 0 <= n_static <= n_samples:
            raise ValueError(f"n_static must lie in [0, n_samples], got {n_static}")
        if n_features < 1 or n_basis < 1:
            raise ValueError("n_features and n_basis must be positive")
        if drift < 0 or noise < 0:
            raise ValueError("drift and noise must be non-negative")
        super().__init__(task=base.REG, n_features=n_features, n_samples=n_samples)
        self.n_static = n_static
        self.n_basis = n_basis
        self.drift = drift
        self.noise = noise
        self.seed = seed
        self.feature_names = _generic_names(n_features)

    def _draw(self):
        n, d, K, n_static = self.n_samples, self.n_features, self.n_basis, self.n_static
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

    def _build(self):
        X, _, y = self._draw()
        return X, y

    def noiseless(self) -> np.ndarray:
        """Return the noise-free targets $f_t(x_t)$, in stream order."""
        return self._draw()[1]


# ---------------------------------------------------------------------------------------------
# File-based streams
# ---------------------------------------------------------------------------------------------


class Elevators(_NpzFile):
    """Elevators: controlling the elevators of an F16 aircraft (16,599 samples, 17 features).

    File ``elevators.npz``. It is Wilson et al.'s UCI ``elevators.mat`` (the file the paper and
    the GPyTorch tutorials load; its inputs are mean-centred and its target rescaled), with the
    paper's column selection: inputs are columns 0-15 and 17 of the 19-column matrix (column 16
    is dropped, as the paper's code does) and the target is the last column. Rows are in file
    order. Features are named ``"x00"`` to ``"x16"``.

    Parameters
    ----------
    directory
        Folder that holds ``elevators.npz``. Defaults to the ``RIVER_DOEBE_DATA`` environment
        variable (see `data_dir`).

    Examples
    --------
    This example needs the data file, so it is skipped when the documentation is tested.

    >>> from river_doebe import datasets
    >>> dataset = datasets.Elevators()  # doctest: +SKIP
    >>> dataset.n_samples, dataset.n_features  # doctest: +SKIP
    (16599, 17)
    >>> x, y = next(iter(dataset))  # doctest: +SKIP
    >>> len(x), type(y).__name__  # doctest: +SKIP
    (17, 'float')

    References
    ----------
    [^1]: L. Torgo. Regression datasets (Delve elevators). https://www.dcc.fc.up.pt/~ltorgo/Regression/DataSets.html
    [^2]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Table 1, Elevators).

    """

    _filename = "elevators.npz"
    _n_rows = 16599
    _n_cols = 17


class CaData(_NpzFile):
    """CaData: California housing prices (20,640 samples, 8 features).

    File ``cadata.npz``: the StatLib "houses" data of Pace and Barry (1997), with the features in
    the order of LIBSVM's ``cadata`` file (the paper loads that file):

    ``medianIncome, housingMedianAge, totalRooms, totalBedrooms, population, households,
    latitude, longitude``.

    The target is the median house value, in dollars. Rows are in the source file's order, which
    is assumed, not proven, to be LIBSVM's order (the first record matches).

    Parameters
    ----------
    directory
        Folder that holds ``cadata.npz``. Defaults to the ``RIVER_DOEBE_DATA`` environment
        variable (see `data_dir`).

    Examples
    --------
    This example needs the data file, so it is skipped when the documentation is tested.

    >>> from river_doebe import datasets
    >>> dataset = datasets.CaData()  # doctest: +SKIP
    >>> x, y = next(iter(dataset))  # doctest: +SKIP
    >>> x["medianIncome"], x["latitude"], y  # doctest: +SKIP
    (8.3252, 37.88, 452600.0)

    References
    ----------
    [^1]: R. K. Pace and R. Barry (1997). Sparse spatial autoregressions. Statistics &
        Probability Letters, 33(3), 291-297.
    [^2]: C.-C. Chang and C.-J. Lin (2011). LIBSVM: a library for support vector machines. ACM
        TIST, 2(3). Data sets: https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/
    [^3]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Table 1, CaData).

    """

    _filename = "cadata.npz"
    _n_rows = 20640
    _n_cols = 8
    _names = (
        "medianIncome",
        "housingMedianAge",
        "totalRooms",
        "totalBedrooms",
        "population",
        "households",
        "latitude",
        "longitude",
    )


class CPUSmall(_NpzFile):
    """CPU Small: predicting user CPU time from system activity (8,192 samples, 12 features).

    File ``cpusmall.npz``: the raw (unscaled) LIBSVM ``cpusmall`` file, i.e. the Delve
    comp-activ ``cpuSmall`` task. Features, in column order:
    ``lread, lwrite, scall, sread, swrite, fork, exec, rchar, wchar, runqsz, freemem,
    freeswap``; the target is ``usr``, the percentage of time the CPUs run in user mode.

    Parameters
    ----------
    directory
        Folder that holds ``cpusmall.npz``. Defaults to the ``RIVER_DOEBE_DATA`` environment
        variable (see `data_dir`).

    Examples
    --------
    This example needs the data file, so it is skipped when the documentation is tested.

    >>> from river_doebe import datasets
    >>> dataset = datasets.CPUSmall()  # doctest: +SKIP
    >>> x, y = next(iter(dataset))  # doctest: +SKIP
    >>> x["freeswap"], y  # doctest: +SKIP
    (1851864.0, 90.0)

    References
    ----------
    [^1]: C. E. Rasmussen et al. (1996). The DELVE manual (comp-activ).
        https://www.cs.toronto.edu/~delve/data/comp-activ/desc.html
    [^2]: C.-C. Chang and C.-J. Lin (2011). LIBSVM: a library for support vector machines. ACM
        TIST, 2(3).
    [^3]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Table 1, CPU Small).

    """

    _filename = "cpusmall.npz"
    _n_rows = 8192
    _n_cols = 12
    _names = (
        "lread",
        "lwrite",
        "scall",
        "sread",
        "swrite",
        "fork",
        "exec",
        "rchar",
        "wchar",
        "runqsz",
        "freemem",
        "freeswap",
    )


_SARCOS_NAMES = tuple(f"{kind}{joint}" for kind in ("pos", "vel", "acc") for joint in range(1, 8))


class Sarcos(_NpzFile):
    """SARCOS inverse dynamics, the paper's 44,484-sample training stream (21 features).

    File ``sarcos.npz``, **not shipped**: supply it yourself. Build it from the GPML book's
    ``sarcos_inv.mat`` (key ``sarcos_inv``, a 44484 x 28 matrix) as ``X = d[:, :21]`` and
    ``y = d[:, 21]``, rows in file order, and save it with ``numpy.savez_compressed(path, X=X,
    y=y)``. A file with another row count is accepted with a warning.

    The 21 inputs are the 7 joint positions, 7 joint velocities and 7 joint accelerations of a
    SARCOS anthropomorphic robot arm, named ``pos1..pos7``, ``vel1..vel7``, ``acc1..acc7``; the
    target is the torque of the first joint. For a real-data stand-in that is available, see
    `SarcosTest` (the 4,449-sample test split).

    Parameters
    ----------
    directory
        Folder that holds ``sarcos.npz``. Defaults to the ``RIVER_DOEBE_DATA`` environment
        variable (see `data_dir`).

    Examples
    --------
    This example needs the data file, so it is skipped when the documentation is tested.

    >>> from river_doebe import datasets
    >>> dataset = datasets.Sarcos()  # doctest: +SKIP
    >>> dataset.n_samples, dataset.n_features  # doctest: +SKIP
    (44484, 21)

    References
    ----------
    [^1]: C. E. Rasmussen and C. K. I. Williams (2006). Gaussian Processes for Machine Learning.
        MIT Press. Data: http://www.gaussianprocess.org/gpml/data/
    [^2]: S. Vijayakumar and S. Schaal (2000). Locally weighted projection regression. ICML.
    [^3]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Table 1, SARCOS).

    """

    _filename = "sarcos.npz"
    _n_rows = 44484
    _n_cols = 21
    _names = _SARCOS_NAMES
    _hint = (
        "sarcos.npz is not shipped: build it from GPML's sarcos_inv.mat as X = d[:, :21], "
        "y = d[:, 21]. The 4,449-row test split is available as 'sarcos_test'."
    )


class SarcosTest(_NpzFile):
    """SARCOS inverse dynamics, official **test** split (4,449 samples, 21 features).

    File ``sarcos_test.npz``: the GPML book's ``sarcos_inv_test.mat`` with ``X = d[:, :21]`` and
    ``y = d[:, 21]`` (the first joint's torque). This is **not** the paper's SARCOS stream, which
    is the 44,484-sample training file (see `Sarcos`); it is a small real-data stand-in for
    smoke tests and examples. Features are named as in `Sarcos`: ``pos1..pos7``,
    ``vel1..vel7``, ``acc1..acc7``.

    Parameters
    ----------
    directory
        Folder that holds ``sarcos_test.npz``. Defaults to the ``RIVER_DOEBE_DATA`` environment
        variable (see `data_dir`).

    Examples
    --------
    This example needs the data file, so it is skipped when the documentation is tested.

    >>> from river_doebe import datasets
    >>> dataset = datasets.SarcosTest()  # doctest: +SKIP
    >>> dataset.n_samples, dataset.n_features  # doctest: +SKIP
    (4449, 21)
    >>> dataset.feature_names[:3]  # doctest: +SKIP
    ('pos1', 'pos2', 'pos3')

    References
    ----------
    [^1]: C. E. Rasmussen and C. K. I. Williams (2006). Gaussian Processes for Machine Learning.
        MIT Press. Data: http://www.gaussianprocess.org/gpml/data/
    [^2]: S. Vijayakumar and S. Schaal (2000). Locally weighted projection regression. ICML.

    """

    _filename = "sarcos_test.npz"
    _n_rows = 4449
    _n_cols = 21
    _names = _SARCOS_NAMES


class Kuka1(_NpzFile):
    """Kuka #1 robot inverse dynamics (197,920 samples, 21 features).

    File ``kuka1.npz``, **not shipped**: supply it yourself. Build it from Meier et al.'s
    ``kuka1_offline.txt`` followed by ``kuka1_online.txt`` (space-separated, 28 columns), as the
    paper's code does: stack the rows of both files in that order, ``X`` = the first 21 columns,
    ``y`` = column 21; save with ``numpy.savez_compressed(path, X=X, y=y)``. Features are named
    ``"x00"`` to ``"x20"``. A file with another row count is accepted with a warning.

    Parameters
    ----------
    directory
        Folder that holds ``kuka1.npz``. Defaults to the ``RIVER_DOEBE_DATA`` environment
        variable (see `data_dir`).

    Examples
    --------
    This example needs the data file, so it is skipped when the documentation is tested.

    >>> from river_doebe import datasets
    >>> dataset = datasets.Kuka1()  # doctest: +SKIP
    >>> dataset.n_samples, dataset.n_features  # doctest: +SKIP
    (197920, 21)

    References
    ----------
    [^1]: F. Meier, P. Hennig and S. Schaal (2014). Incremental local Gaussian regression.
        NeurIPS.
    [^2]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Table 1, Kuka #1).

    """

    _filename = "kuka1.npz"
    _n_rows = 197920
    _n_cols = 21
    _hint = (
        "kuka1.npz is not shipped: stack kuka1_offline.txt and kuka1_online.txt, "
        "X = first 21 columns, y = column 21."
    )


def _uci_key(name: str) -> str:
    key = str(name).strip().lower()
    key = key[len("uci_") :] if key.startswith("uci_") else key
    if key not in _UCI_SHAPES:
        raise ValueError(
            f"Unknown UCI dataset {name!r}. Valid names: {', '.join(UCI_NAMES)} "
            "(the 'uci_' prefix is optional)."
        )
    return key


class UCI(_NpzFile):
    """One of the UCI regression sets of Delbridge et al. (2020), used in the paper's appendix.

    File ``uci_<name>.npz``: the copy in Trefor Evans's ``uci_datasets`` collection, with
    ``X`` = all columns but the last and ``y`` = the last column. As stored there, most columns
    are mean-centred and values are rounded to about 5 significant digits. Rows are in file
    order. Features are named ``"x0"``, ``"x1"``, ... (zero-padded).

    Valid names (the ``uci_`` prefix is optional), with rows x features: autos (159 x 25),
    servo (167 x 4), machine (209 x 7), yacht (308 x 6), autompg (392 x 7), housing (506 x 13),
    stock (536 x 11), energy (768 x 8), concrete (1030 x 8), airfoil (1503 x 5), gas (2565 x
    128), skillcraft (3338 x 19), sml (4137 x 26), pol (15000 x 26), bike (17379 x 17), kin40k
    (40000 x 8).

    Parameters
    ----------
    name
        Which data set, e.g. ``"concrete"`` or ``"uci_concrete"``.
    directory
        Folder that holds ``uci_<name>.npz``. Defaults to the ``RIVER_DOEBE_DATA`` environment
        variable (see `data_dir`).

    Examples
    --------
    This example needs the data file, so it is skipped when the documentation is tested.

    >>> from river_doebe import datasets
    >>> dataset = datasets.UCI("concrete")  # doctest: +SKIP
    >>> dataset.n_samples, dataset.n_features  # doctest: +SKIP
    (1030, 8)

    References
    ----------
    [^1]: I. Delbridge, D. Bindel and A. G. Wilson (2020). Randomly projected additive Gaussian
        processes for regression. ICML.
    [^2]: T. Evans. uci_datasets. https://github.com/treforevans/uci_datasets
    [^3]: D. Dua and C. Graff (2019). UCI Machine Learning Repository. http://archive.ics.uci.edu/ml

    """

    def __init__(self, name, directory=None):
        key = _uci_key(name)
        self.name = name
        self._filename = f"uci_{key}.npz"
        self._n_rows, self._n_cols = _UCI_SHAPES[key]
        super().__init__(directory=directory)


class Banana(_NpzFile):
    """Banana: a two-dimensional binary classification benchmark (5,300 samples).

    File ``banana.npz``: the KEEL copy of Rätsch's banana data, ``X = [At1, At2]`` (named
    ``"x0"``, ``"x1"``) and labels $\\pm 1$. The stream yields ``(x, y)`` with ``y`` a ``bool``:
    **label +1 is mapped to True and -1 to False**; ``arrays()`` returns ``y`` as a boolean
    array likewise.

    The paper runs its classification experiment on two orders of the data: shuffled (i.i.d.,
    where static models should do well) and unshuffled. Its copy of the data is ordered "from
    left to right"; the KEEL file used here is in a different, seemingly random order. Three
    orders are therefore offered:

    - file order (default);
    - ``shuffle=True``: a permutation drawn from ``np.random.RandomState(seed)`` (fixed for the
      lifetime of the object, and reproducible when ``seed`` is an integer);
    - ``left_to_right=True``: rows stably sorted by the first feature, a stand-in for the
      paper's unshuffled, left-to-right order.

    Parameters
    ----------
    directory
        Folder that holds ``banana.npz``. Defaults to the ``RIVER_DOEBE_DATA`` environment
        variable (see `data_dir`).
    shuffle
        Whether to stream the rows in a random order.
    seed
        Seed of the permutation when ``shuffle=True``.
    left_to_right
        Whether to stream the rows sorted by ``x0``. Cannot be combined with ``shuffle``.

    Examples
    --------
    This example needs the data file, so it is skipped when the documentation is tested.

    >>> from river_doebe import datasets
    >>> dataset = datasets.Banana(shuffle=True, seed=0)  # doctest: +SKIP
    >>> dataset.n_samples, dataset.n_features  # doctest: +SKIP
    (5300, 2)
    >>> x, y = next(iter(dataset))  # doctest: +SKIP
    >>> sorted(x), type(y).__name__  # doctest: +SKIP
    (['x0', 'x1'], 'bool')
    >>> X, y = dataset.arrays()  # doctest: +SKIP
    >>> int(y.sum())  # doctest: +SKIP
    2376

    References
    ----------
    [^1]: G. Rätsch, T. Onoda and K.-R. Müller (2001). Soft margins for AdaBoost. Machine
        Learning, 42(3), 287-320.
    [^2]: J. Alcalá-Fdez et al. (2011). KEEL data-mining software tool: data set repository.
        Journal of Multiple-Valued Logic and Soft Computing, 17, 255-287.
    [^3]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.
        Transactions on Machine Learning Research (Appendix, classification).

    """

    _filename = "banana.npz"
    _n_rows = 5300
    _n_cols = 2

    def __init__(self, directory=None, shuffle=False, seed=None, left_to_right=False):
        if shuffle and left_to_right:
            raise ValueError("Choose one order: shuffle=True or left_to_right=True, not both.")
        super().__init__(directory=directory)
        self.task = base.BINARY_CLF
        self.n_classes = 2
        self.shuffle = shuffle
        self.seed = seed
        self.left_to_right = left_to_right
        self._order = np.random.RandomState(seed).permutation(self.n_samples) if shuffle else None

    def _build(self):
        X, y = super()._build()
        if not np.isin(y, (-1.0, 1.0)).all():
            raise ValueError(f"{str(self.path)!r}: labels must be -1 or +1.")
        if self._order is not None:
            X, y = X[self._order], y[self._order]
        elif self.left_to_right:
            order = np.argsort(X[:, 0], kind="stable")
            X, y = X[order], y[order]
        return X, y == 1.0


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------

_GENERATED = {
    "friedman1": Friedman1,
    "friedman2": Friedman2,
    "drift": Drift,
    "static_then_drift": StaticThenDrift,
}

_FILES = {
    "elevators": Elevators,
    "cadata": CaData,
    "cpusmall": CPUSmall,
    "sarcos": Sarcos,
    "sarcos_test": SarcosTest,
    "kuka1": Kuka1,
    "banana": Banana,
}

#: Every name `load` accepts.
NAMES = tuple(_GENERATED) + tuple(_FILES) + UCI_NAMES

#: The names of the generated streams, which need no data file.
GENERATED_NAMES = tuple(_GENERATED)

#: The paper's seven regression streams (Table 1), in the paper's order.
PAPER_NAMES = ("friedman1", "friedman2", "elevators", "sarcos", "kuka1", "cadata", "cpusmall")


def _normalise(name) -> str:
    return str(name).strip().lower().replace("-", "_").replace(" ", "_")


def load(name, directory=None, **kwargs):
    """Return the dataset registered under ``name``.

    Parameters
    ----------
    name
        One of `NAMES` (case-insensitive; ``-`` and spaces count as ``_``).
    directory
        Folder holding the data file, for file-based datasets (see `data_dir`). Ignored by
        generated datasets.
    kwargs
        Passed on to the dataset's constructor, e.g. ``shuffle=True, seed=0`` for ``"banana"``
        or ``n_samples=1000`` for ``"friedman1"``.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid ones.
    FileNotFoundError
        When a file-based dataset's file cannot be found.

    Examples
    --------
    >>> from river_doebe import datasets
    >>> datasets.load("drift", n_samples=300).n_samples
    300
    >>> datasets.load("mnist")
    Traceback (most recent call last):
    ...
    ValueError: Unknown dataset 'mnist'. Valid names: friedman1, friedman2, drift, ...

    """
    key = _normalise(name)
    if key in _GENERATED:
        return _GENERATED[key](**kwargs)
    if key in _FILES:
        return _FILES[key](directory=directory, **kwargs)
    if key in UCI_NAMES:
        return UCI(key, directory=directory, **kwargs)
    raise ValueError(f"Unknown dataset {name!r}. Valid names: {', '.join(NAMES)}.")


def available(directory=None) -> tuple[str, ...]:
    """Return the names of `NAMES` that can be loaded now: generated ones, and those whose file
    is in the data folder (see `data_dir`; none when no folder is configured).

    Examples
    --------
    >>> import tempfile
    >>> from river_doebe import datasets
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     datasets.available(folder)
    ('friedman1', 'friedman2', 'drift', 'static_then_drift')

    """
    try:
        folder = data_dir(directory)
    except FileNotFoundError:
        folder = None
    names = list(_GENERATED)
    for name in NAMES[len(_GENERATED) :]:
        if folder is not None and (folder / f"{name}.npz").is_file():
            names.append(name)
    return tuple(names)
