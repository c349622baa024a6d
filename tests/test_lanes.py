"""The four-lane dot products of ``river_doebe.kernels.lanes`` give the scalar sum's bits."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.errors import TypingError

from river_doebe.kernels.lanes import dot, dot_rows4

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


def _scalar_rows(L, b, n):
    """Every row's :func:`dot` with its own length, as the stack kernels took them before."""
    return np.array([dot(L[j], b, j + 1) for j in range(n)])


def _lane_rows(L, b, n):
    out = np.full(L.shape[0], np.nan)
    for j0 in range(0, n - n % 4, 4):
        dot_rows4(L, j0, b, out)
    for j in range(n - n % 4, n):
        out[j] = dot(L[j], b, j + 1)
    return out[:n]


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(
    n=st.integers(1, 41),
    pad=st.integers(0, 5),
    scale=st.sampled_from([1e-300, 1e-8, 1.0, 1e8, 1e150]),
    seed=st.integers(0, 2**32 - 1),
)
def test_four_rows_in_lanes_give_the_scalar_bits(n, pad, scale, seed):
    """Every row length, zero padding beyond the member's features (``F_max > F``), magnitudes
    where the order of the sums shows in the last bits, and sums that overflow."""
    rng = np.random.default_rng(seed)
    L = np.zeros((n + pad, n + pad))
    L[:n, :n] = np.tril(rng.standard_normal((n, n)) * scale)
    b = np.zeros(n + pad)
    b[:n] = rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3], n)
    assert np.array_equal(_lane_rows(L, b, n), _scalar_rows(L, b, n), equal_nan=True)


def test_non_finite_values_pass_through_each_lane_as_in_the_scalar_sum():
    n = 12
    L = np.tril(np.ones((n, n)))
    b = np.ones(n)
    L[9, 2] = np.inf
    L[10, 5] = np.nan
    L[11, 3] = np.inf
    L[11, 7] = -np.inf
    assert np.array_equal(_lane_rows(L, b, n), _scalar_rows(L, b, n), equal_nan=True)


def test_a_strided_array_is_refused_when_typed():
    """The lanes load four neighbouring elements at once: only C-contiguous rows will do."""
    L = np.tril(np.ones((8, 16)))[:, ::2]
    with pytest.raises(TypingError):
        dot_rows4(L, 0, np.ones(8), np.zeros(8))
