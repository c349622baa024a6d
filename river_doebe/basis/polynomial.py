"""The additive polynomial basis: powers of each input on its own, no cross terms."""

from __future__ import annotations

import numba
import numpy as np

from river_doebe._checks import check_bool
from river_doebe.basis.base import Basis, _check_positive_int
from river_doebe.kernels.jit import stack_kernel

__all__ = ["AdditivePolynomial"]


def _poly(Z, Phi, rows, degree, bias):
    B, D = Z.shape
    for k in numba.prange(rows.shape[0]):
        r = rows[k]
        P = degree[k]
        for t in range(B):
            for d in range(D):
                v = 1.0
                for p in range(P):
                    v = v * Z[t, d]
                    Phi[r, t, d * P + p] = v
            if bias[k]:
                Phi[r, t, D * P] = 1.0


_poly_kernel, _poly_kernel_parallel = stack_kernel(_poly)


class AdditivePolynomial(Basis):
    """Additive polynomial basis ``phi(x) = [x_1, ..., x_1^P, ..., x_D, ..., x_D^P, 1]``.

    Each input is raised to the powers ``1..degree`` on its own (a generalised additive model, no
    cross terms), so ``F = D * degree + bias``. Feature ``d * degree + (p - 1)`` is ``x_d^p``; the
    bias comes last. The paper's polynomial ensemble (Sec. 5) mixes degrees 2, 3 and 4.

    The basis has no hyperparameters. Powers grow fast, so feed it standardised inputs.

    Parameters
    ----------
    degree
        Highest power of each input (at least 1; ``degree=1`` is the linear basis).
    bias
        Whether to append a constant feature equal to 1.

    Examples
    --------

    >>> from river_doebe.basis import AdditivePolynomial
    >>> basis = AdditivePolynomial(degree=2)
    >>> basis.transform_one({"a": 2.0, "b": -1.0})
    {'poly_a_1': 2.0, 'poly_a_2': 4.0, 'poly_b_1': -1.0, 'poly_b_2': 1.0, 'bias': 1.0}

    >>> basis.featurize([[3.0, 0.5]])
    array([[3.  , 9.  , 0.5 , 0.25, 1.  ]])

    References
    ----------
    [^1]: Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
        Transactions on Machine Learning Research.

    """

    _kernel = staticmethod(_poly_kernel)
    _kernel_parallel = staticmethod(_poly_kernel_parallel)

    def __init__(self, degree: int = 3, bias: bool = True):
        self.degree = degree
        self.bias = bias
        _check_positive_int(degree, "degree")
        check_bool("bias", bias)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"degree": 2}
        yield {"degree": 3, "bias": False}

    def _init(self, n_inputs):
        pass

    @property
    def can_grow(self) -> bool:
        return True

    def _grow(self, n_inputs):
        # the powers of a new input go before the bias, which moves to the end
        old = np.arange(self.n_inputs * int(self.degree))
        return np.r_[old, [n_inputs * int(self.degree)]] if self.bias else old

    @property
    def n_outputs(self):
        return self.n_inputs * int(self.degree) + int(bool(self.bias))

    def _params(self):
        return (
            np.array(int(self.degree), dtype=np.int64),
            np.array(int(bool(self.bias)), dtype=np.int64),
        )

    def featurize(self, Z):
        Z = self._as_batch(Z)
        n, D = Z.shape
        P = int(self.degree)
        # repeated multiplication, exactly as the kernel does it
        powers = np.cumprod(np.repeat(Z[:, :, None], P, axis=2), axis=2).reshape(n, D * P)
        if self.bias:
            return np.hstack([powers, np.ones((n, 1))])
        return powers

    def feature_names(self):
        names = [
            f"poly_{name}_{p}" for name in self._input_names() for p in range(1, self.degree + 1)
        ]
        return names + (["bias"] if self.bias else [])
