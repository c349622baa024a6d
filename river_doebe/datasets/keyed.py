"""A keyed stream: many drifting regression streams, one per key, interleaved.

:class:`KeyedDrift` is what :class:`river_doebe.distributed.KeyedModels` and ``river-doebe
evaluate --keys N`` run on: a sensor, a machine or a customer per key, each with its own
nonlinear function, its own drift and its own noise, its records arriving mixed with the other
keys'. Its docstring is completed by :mod:`river_doebe.datasets.base`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from river_doebe.datasets.base import GeneratedDataset

__all__ = ["KeyedDrift"]


class KeyedDrift(GeneratedDataset):
    """Many keys, each its own drifting nonlinear regression stream, interleaved at random.

    Iterating yields ``(key, x, y)`` records (not river's ``(x, y)`` pairs): ``key`` a string
    (``"key0000"``, ...), ``x`` a dict of ``n_features`` floats, ``y`` a float. Every key gets
    ``n_samples // n_keys`` records (the first ``n_samples % n_keys`` keys one more), and the
    order in which the keys' records arrive is a random permutation; within a key, its records
    come in its own time order $t = 0, 1, \\dots, m_k - 1$.

    Key $k$ draws, from its own generator (``np.random.default_rng([seed, 0, k])``, so a key's
    function does not depend on how many keys there are):

    1. a length scale $\\ell_k \\sim \\mathcal{U}[0.5, 1.5]$, random features
       $\\omega_j \\sim \\mathcal{N}(0, \\ell_k^{-2} I_d)$, $b_j \\sim \\mathcal{U}[0, 2\\pi)$,
       $j = 1..K$, an amplitude $A_k \\sim \\mathcal{U}[0.5, 2]$ and an offset
       $\\mu_k \\sim \\mathcal{N}(0, 1)$;
    2. coefficients $a_0 \\sim \\mathcal{N}(0, I_K)$, fixed until the key's drift starts at
       $s_k = \\lfloor u\\, m_k \\rfloor$, $u \\sim \\mathcal{U}[0.1, 0.3]$; from there a random
       walk with steps $\\delta_k \\epsilon_t$, $\\log_{10} \\delta_k \\sim \\mathcal{U}[-3, -1.7]$;
    3. a regime change at $c_k = \\lfloor v\\, m_k \\rfloor$, $v \\sim \\mathcal{U}[0.4, 0.8]$: the
       coefficients jump to an independent draw $a' \\sim \\mathcal{N}(0, I_K)$ (the walk
       continues from there);
    4. a noise level $\\log_{10} \\sigma_k \\sim \\mathcal{U}[-1.7, -0.5]$ (0.02 to 0.32);
    5. inputs $x_t \\sim \\mathcal{U}[-1, 1]^d$ and targets
       $y_t = \\mu_k + A_k K^{-1/2} \\sum_j a_{t,j} \\sqrt{2}\\cos(\\omega_j^\\top x_t + b_j)
       + \\sigma_k \\eta_t$.

    The interleaving comes from ``np.random.default_rng([seed, 1])``. ``keys()`` lists the keys,
    ``record_keys()`` gives each record's key, ``arrays()`` the inputs and targets in record
    order, ``noiseless()`` the targets without noise, ``drifts()`` each key's drift start and
    regime change (as the key's own record index) and its noise level, and ``function(key)``
    the key's noise-free function of its time index and inputs.
    """

    _doc_parameters = (
        ("n_keys", "Number of keys."),
        ("n_samples", "Number of records, over all the keys (at least ``n_keys``)."),
        (
            "seed",
            "Seed of every key's generator and of the interleaving (``np.random.default_rng``).",
        ),
        "n_features",
        ("n_components", "Number of random features $K$ of each key's function."),
    )
    _doc_examples = """
    >>> from river_doebe import datasets
    >>> dataset = datasets.KeyedDrift(n_keys=3, n_samples=600, seed=0)
    >>> key, x, y = next(iter(dataset))
    >>> key in dataset.keys(), sorted(x)
    (True, ['x0', 'x1', 'x2'])
    >>> from collections import Counter
    >>> sorted(Counter(k for k, _, _ in dataset).values())
    [200, 200, 200]

    Each key has its own drift times and noise level:

    >>> {k: d["change_at"] for k, d in dataset.drifts().items()}
    {'key0000': ..., 'key0001': ..., 'key0002': ...}
    """

    def __init__(self, n_keys=100, n_samples=50_000, seed=0, n_features=3, n_components=20):
        if isinstance(n_keys, bool) or not isinstance(n_keys, int | np.integer) or n_keys < 1:
            raise ValueError(f"n_keys must be a positive integer, got {n_keys!r}")
        if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
            raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
        if isinstance(n_components, bool) or not isinstance(n_components, int) or n_components < 1:
            raise ValueError(f"n_components must be a positive integer, got {n_components!r}")
        super().__init__(n_samples, n_features)
        if n_samples < n_keys:
            raise ValueError(
                f"n_samples ({n_samples!r}) must be at least n_keys ({n_keys!r}): every key "
                "gets a record"
            )
        self.n_keys = n_keys
        self.seed = seed
        self.n_components = n_components
        width = max(4, len(str(n_keys - 1)))
        self._keys = tuple(f"key{k:0{width}d}" for k in range(n_keys))

    # ------------------------------------------------------------------ the keys' processes
    def keys(self) -> tuple[str, ...]:
        """The keys, in order."""
        return self._keys

    def _counts(self) -> np.ndarray:
        base, extra = divmod(self.n_samples, self.n_keys)
        counts = np.full(self.n_keys, base)
        counts[:extra] += 1
        return counts

    def _key_draw(self, k: int, m: int) -> dict:
        """Key ``k``'s parameters and its ``m`` inputs, coefficients and noise."""
        d, K = self.n_features, self.n_components
        rng = np.random.default_rng([self.seed, 0, k])
        lengthscale = rng.uniform(0.5, 1.5)
        draw = {
            "omega": rng.standard_normal((K, d)) / lengthscale,
            "phase": rng.uniform(0.0, 2 * np.pi, size=K),
            "amplitude": rng.uniform(0.5, 2.0),
            "offset": rng.standard_normal(),
            "a0": rng.standard_normal(K),
            "a_new": rng.standard_normal(K),
            "drift_start": int(rng.uniform(0.1, 0.3) * m),
            "change_at": int(rng.uniform(0.4, 0.8) * m),
            "step": 10.0 ** rng.uniform(-3.0, -1.7),
            "noise": 10.0 ** rng.uniform(-1.7, -0.5),
        }
        draw["X"] = rng.uniform(-1.0, 1.0, size=(m, d))
        draw["steps"] = rng.standard_normal((m, K))
        draw["eta"] = rng.standard_normal(m)
        return draw

    @staticmethod
    def _coefficients(draw: dict, m: int) -> np.ndarray:
        """The key's coefficients at each of its ``m`` time steps, ``(m, K)``."""
        steps = draw["steps"][:m] * draw["step"]
        steps[: draw["drift_start"]] = 0.0
        walk = np.cumsum(steps, axis=0)
        coef = draw["a0"] + walk
        change = draw["change_at"]
        if change < m:
            before = walk[change - 1] if change > 0 else 0.0
            coef[change:] = draw["a_new"] + (walk[change:] - before)
        return coef

    @staticmethod
    def _evaluate(draw: dict, coef: np.ndarray, X: np.ndarray) -> np.ndarray:
        K = coef.shape[1]
        features = np.sqrt(2.0) * np.cos(X @ draw["omega"].T + draw["phase"])
        signal = np.einsum("tk,tk->t", coef, features) / math.sqrt(K)
        return draw["offset"] + draw["amplitude"] * signal

    def function(self, key: str) -> Callable[[Any, Any], np.ndarray]:
        """Key ``key``'s noise-free function ``f(t, X)``: its target at its own time index
        ``t`` (an int, or an array with one per row) for the inputs ``X`` of shape
        ``(n, n_features)``."""
        k = self._index(key)
        m = int(self._counts()[k])
        draw = self._key_draw(k, m)
        coef = self._coefficients(draw, m)

        def f(t: Any, X: Any) -> np.ndarray:
            X = np.atleast_2d(np.asarray(X, dtype=np.float64))
            t = np.broadcast_to(np.asarray(t), (X.shape[0],))
            return self._evaluate(draw, coef[t], X)

        return f

    def _index(self, key: str) -> int:
        try:
            return self._keys.index(key)
        except ValueError:
            raise KeyError(f"{key!r} is not a key of this stream") from None

    def _stream(self):
        """Record order, inputs, noise-free targets and targets, cached."""
        cached = self.__dict__.get("_stream_cache")
        if cached is not None:
            return cached
        counts = self._counts()
        owner = np.random.default_rng([self.seed, 1]).permutation(
            np.repeat(np.arange(self.n_keys), counts)
        )
        X = np.empty((self.n_samples, self.n_features))
        f = np.empty(self.n_samples)
        y = np.empty(self.n_samples)
        info = {}
        for k, m in enumerate(counts.tolist()):
            rows = np.flatnonzero(owner == k)  # the key's records, in its time order
            draw = self._key_draw(k, m)
            signal = self._evaluate(draw, self._coefficients(draw, m), draw["X"])
            X[rows] = draw["X"]
            f[rows] = signal
            y[rows] = signal + draw["noise"] * draw["eta"]
            info[self._keys[k]] = {
                "records": m,
                "drift_start": draw["drift_start"],
                "change_at": draw["change_at"],
                "step": float(draw["step"]),
                "noise": float(draw["noise"]),
            }
        cached = (owner, X, f, y, info)
        self.__dict__["_stream_cache"] = cached
        return cached

    def _build(self):
        _, X, _, y, _ = self._stream()
        return X, y

    # ------------------------------------------------------------------ views
    def record_keys(self) -> list[str]:
        """Each record's key, in stream order."""
        owner = self._stream()[0]
        return [self._keys[k] for k in owner.tolist()]

    def noiseless(self) -> np.ndarray:
        """The noise-free targets, in stream order."""
        return self._stream()[2].copy()

    def drifts(self) -> dict:
        """For each key: its number of records, where its random walk starts
        (``drift_start``) and where its regime changes (``change_at``), both as the key's own
        record index, the walk's step ``step`` and the noise level ``noise``."""
        return {k: dict(v) for k, v in self._stream()[4].items()}

    def __iter__(self):
        owner, X, _, y, _ = self._stream()
        names, keys = self.feature_names, self._keys
        for k, row, target in zip(owner.tolist(), X.tolist(), y.tolist(), strict=True):
            yield keys[k], dict(zip(names, row, strict=True)), target
