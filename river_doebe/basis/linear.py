"""The linear basis: the inputs themselves, with an optional bias feature."""

from __future__ import annotations

import numba
import numpy as np

from river_doebe._checks import check_bool
from river_doebe.basis.base import Basis
from river_doebe.kernels.jit import stack_kernel

__all__ = ["Linear"]


def _linear(Z, Phi, rows, bias):
    B, D = Z.shape
    for k in numba.prange(rows.shape[0]):
        r = rows[k]
        for t in range(B):
            for d in range(D):
                Phi[r, t, d] = Z[t, d]
            if bias[k]:
                Phi[r, t, D] = 1.0


_linear_kernel, _linear_kernel_parallel = stack_kernel(_linear)


class Linear(Basis):
    """The identity basis ``phi(x) = [x, 1]``: with it a learner is Bayesian linear regression.

    Parameters
    ----------
    bias
        Whether to append a constant feature equal to 1.

    Examples
    --------

    >>> from river_doebe.basis import Linear
    >>> basis = Linear()
    >>> basis.transform_one({"a": 2.0, "b": -1.0})
    {'a': 2.0, 'b': -1.0, 'bias': 1.0}

    """

    _kernel = staticmethod(_linear_kernel)
    _kernel_parallel = staticmethod(_linear_kernel_parallel)

    def __init__(self, bias: bool = True):
        self.bias = bias
        check_bool("bias", bias)

    def _init(self, n_inputs):
        pass

    @property
    def can_grow(self) -> bool:
        return True

    def _grow(self, n_inputs):
        # the new inputs go before the bias, which moves to the end
        D = self.n_inputs
        return np.r_[np.arange(D), [n_inputs]] if self.bias else np.arange(D)

    @property
    def n_outputs(self):
        return self.n_inputs + int(bool(self.bias))

    def _params(self):
        return (np.array(int(bool(self.bias)), dtype=np.int64),)

    def featurize(self, Z):
        Z = np.asarray(Z, dtype=np.float64)
        self.initialize(Z.shape[1])
        if self.bias:
            return np.hstack([Z, np.ones((Z.shape[0], 1))])
        return Z.copy()

    def feature_names(self):
        schema = getattr(self, "_schema", None)
        names = (
            [str(n) for n in schema.names] if schema else [f"x{d}" for d in range(self.n_inputs)]
        )
        return names + (["bias"] if self.bias else [])
