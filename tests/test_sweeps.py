"""The member sweeps (``river_doebe.kernels.stack``) take a static member's square roots ahead
of its rows, its dot products four rows at a time in vector lanes and, with an owed update,
four rows' steps of Carlson's update and their products together (the rows past the last four
one at a time, each step with its product in vector lanes), and a dynamic
member's rows four at a time or, with a zero feature among them, row by row in vector lanes
(``river_doebe.kernels.lanes``): the same bits as the row-by-row sweep with scalar sums that the
formulas of ``kernels/stack.py`` describe."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError

from river_doebe.kernels import lanes
from river_doebe.kernels.stack import Params, State, flush_stack, predict_stack

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


#: rows of every length ``n`` (and ``pad`` entries beyond), with magnitudes ``scale`` where the
#: order of the sums shows in the last bits and where they overflow
_ROWS = dict(
    n=st.integers(1, 41),
    pad=st.integers(0, 5),
    scale=st.sampled_from([1e-300, 1e-8, 1.0, 1e8, 1e150]),
    seed=st.integers(0, 2**32 - 1),
)


def dot(a, b, n):
    """``sum_i a[i] b[i]`` over ``i < n`` in the four-sum order of ``kernels/lanes.py``, as
    scalar code (Python's floats are IEEE doubles: the bits of the scalar loop)."""
    s = [0.0, 0.0, 0.0, 0.0]
    i = 0
    while i + 3 < n:
        for k in range(4):
            s[k] += float(a[i + k]) * float(b[i + k])
        i += 4
    while i < n:
        s[0] += float(a[i]) * float(b[i])
        i += 1
    return (s[0] + s[1]) + (s[2] + s[3])


# the intrinsics, called from jitted code as the kernels call them
@numba.njit
def triangular_products(L, n, b, out):
    lanes.triangular_products(L, n, b, out)


@numba.njit
def carlson_dot(row, n, e, fj, beta, gam, b):
    return lanes.carlson_dot(row, n, e, fj, beta, gam, b)


@numba.njit
def carlson_rows4(L, start, e, pf, b, out, sa):
    return lanes.carlson_rows4(L, start, e, pf, b, out, sa)


@numba.njit
def dynamic_sweep(S, f, pu, phi, v, rw, owes, want):
    lanes.dynamic_sweep(S, f, pu, phi, v, rw, owes, want)


def _scalar_rows(L, b, n):
    """Every row's :func:`dot` with its own length."""
    return np.array([dot(L[j], b, j + 1) for j in range(n)])


def _lane_rows(L, b, n):
    out = np.full(L.shape[0], np.nan)
    triangular_products(L, n, b, out)
    assert np.isnan(out[n:]).all()  # (nothing written beyond the rows asked for)
    return out[:n]


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(**_ROWS)
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
        triangular_products(L, 8, np.ones(8), np.zeros(8))
    with pytest.raises(TypingError):
        carlson_dot(L[0], 4, np.ones(8), 0.5, 0.9, 0.1, np.ones(8))


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(**_ROWS)
def test_a_carlson_row_in_lanes_gives_the_scalar_bits(n, pad, scale, seed):
    """One row's step of Carlson's update with its product, against the step entry by entry
    and :func:`dot`: every length, entries beyond ``n`` left alone, magnitudes where the order of
    the sums shows in the last bits, and products that overflow."""
    rng = np.random.default_rng(seed)
    row = rng.standard_normal(n + pad) * scale
    e = rng.standard_normal(n + pad) * scale
    b = rng.standard_normal(n + pad) * rng.choice([1e-3, 1.0, 1e3], n + pad)
    fj, beta, gam = rng.standard_normal(3)
    row_ref, e_ref = row.copy(), e.copy()
    for i in range(n):
        u = row_ref[i]
        row_ref[i] = beta * u - gam * e_ref[i]
        e_ref[i] += fj * u
    got = carlson_dot(row, n, e, fj, beta, gam, b)
    want = dot(row_ref, b, n)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(row, row_ref) and np.array_equal(e, e_ref)


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(groups=st.integers(0, 10), pad=st.integers(0, 5),
                  scale=_ROWS["scale"], seed=_ROWS["seed"])
def test_four_carlson_rows_in_lanes_give_the_row_by_row_bits(groups, pad, scale, seed):
    """Four rows of Carlson's step together (the entries left of their triangle in vector lanes
    through the four rows), against the rows one after the other, each entry's step in turn and
    each row's product in :func:`dot`'s order: the factor, the running vector (each row's
    ``sqrt(alpha_j)`` in it until that row zeroes it), the products and the next ``sa``, at
    magnitudes where the order of the sums shows in the last bits, and where they overflow."""
    rng = np.random.default_rng(seed)
    start = 4 * groups
    n = start + 4 + pad
    L = np.tril(rng.standard_normal((n, n))) * scale
    pf = rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3], n)
    e = rng.standard_normal(n) * scale
    e[start:start + 4] = rng.uniform(0.5, 3.0, 4)  # the rows' sqrt(alpha_j)
    b = rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3], n)
    sa = float(rng.uniform(0.1, 2.0))
    out = np.full(n, -1.0)
    L_ref, e_ref, out_ref = L.copy(), e.copy(), out.copy()
    sa_ref = sa
    for j in range(start, start + 4):
        sb = e_ref[j]
        e_ref[j] = 0.0
        beta, gam = sa_ref / sb, pf[j] / (sa_ref * sb)
        for i in range(j + 1):
            u = L_ref[j, i]
            L_ref[j, i] = beta * u - gam * e_ref[i]
            e_ref[i] += pf[j] * u
        out_ref[j] = dot(L_ref[j], b, j + 1)
        sa_ref = sb
    got = carlson_rows4(L, start, e, pf, b, out, sa)
    assert got == sa_ref
    assert np.array_equal(out, out_ref, equal_nan=True)
    assert np.array_equal(L, L_ref, equal_nan=True) and np.array_equal(e, e_ref, equal_nan=True)


def test_non_finite_values_pass_through_a_carlson_row_as_in_the_scalar_step():
    n = 11
    row, e, b = np.ones(n), np.ones(n), np.ones(n)
    row[2], e[5], b[9], row[10] = np.inf, np.nan, -np.inf, -np.inf
    row_ref, e_ref = row.copy(), e.copy()
    for i in range(n):
        u = row_ref[i]
        row_ref[i] = 0.5 * u - 0.25 * e_ref[i]
        e_ref[i] += 2.0 * u
    got = carlson_dot(row, n, e, 2.0, 0.5, 0.25, b)
    assert np.array_equal(got, dot(row_ref, b, n), equal_nan=True)
    assert np.array_equal(row, row_ref, equal_nan=True)
    assert np.array_equal(e, e_ref, equal_nan=True)


@hypothesis.settings(max_examples=120, deadline=None)
@hypothesis.given(**_ROWS, owes=st.booleans(), want=st.booleans(),
                  zeros=st.sampled_from(["none", "some", "all"]), signed_zeros=st.booleans())
def test_a_dynamic_sweep_in_lanes_gives_the_row_by_row_bits(n, pad, scale, seed, owes, want,
                                                            zeros, signed_zeros):
    """A dynamic member's owed update and product against the rows one at a time in scalar
    code: every length, rows and entries beyond ``n`` untouched, groups of four rows with and
    without a zero feature (a sparse input), the update alone or the product alone, and entries
    whose update leaves a signed zero (the diagonal's lane is selected, not added to the
    others)."""
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((n + pad, n + pad)) * scale
    pu = rng.standard_normal(n + pad) * np.sqrt(scale)
    phi = rng.standard_normal(n + pad) * rng.choice([1e-3, 1.0, 1e3], n + pad)
    if zeros != "none":
        # (-0.0 with signed zeros: v's entry starts at -0.0, which adding a row would lose)
        phi[rng.random(n + pad) < (0.3 if zeros == "some" else 1.0)] = -0.0 if signed_zeros else 0.0
    v = rng.standard_normal(n + pad)
    if signed_zeros:  # entries that the update leaves at -0.0
        S[:, : n // 2] = -0.0
        pu[: n // 2] = 0.0
    rw = 1e-3
    S_ref, v_ref = S.copy(), v.copy()
    if want:
        for i in range(n):
            v_ref[i] = rw * float(phi[i])
    for j in range(n):
        if owes:
            for i in range(n):
                S_ref[j, i] = float(S_ref[j, i]) - float(pu[j]) * float(pu[i])
            S_ref[j, j] = float(S_ref[j, j]) + rw
        if want and phi[j] != 0.0:
            for i in range(n):
                v_ref[i] = float(v_ref[i]) + float(S_ref[j, i]) * float(phi[j])
    dynamic_sweep(S, n, pu, phi, v, rw, owes, want)
    assert np.array_equal(S, S_ref, equal_nan=True) and np.array_equal(v, v_ref, equal_nan=True)
    assert np.array_equal(np.signbit(S), np.signbit(S_ref))
    assert np.array_equal(np.signbit(v), np.signbit(v_ref))


# ------------------------------------------------------------------ the sweeps, row by row


def _static_rows(f, phi, mu, L, fv, pf, alpha0, g):
    """Carlson's step row after row, then ``U' phi`` (the owed update applied), each row's
    product in :func:`dot`'s order."""
    e = np.zeros(f)
    frozen = alpha0 == np.inf
    a_prev = alpha0
    sa = np.sqrt(a_prev)
    for j in range(f):
        row = L[j]
        fj = pf[j]
        if frozen:
            e[:j + 1] += fj * row[:j + 1]
        else:
            a_j = a_prev + fj * fj
            sb = np.sqrt(a_j)
            beta, gam = sa / sb, fj / (sa * sb)
            u = row[:j + 1].copy()
            row[:j + 1] = beta * u - gam * e[:j + 1]
            e[:j + 1] += fj * u
            a_prev, sa = a_j, sb
    for j in range(f):
        fv[j] = dot(L[j], phi, j + 1)
    if g != 0.0:
        mu[:f] += e * g


def _dynamic_rows(f, phi, S, v, pu, rw):
    """``Sigma += rw I - pu pu'`` row after row, each row then added to ``v = Sigma_pred phi``."""
    v[:f] = rw * phi[:f]
    for j in range(f):
        row = S[j]
        row[:f] -= pu[j] * pu[:f]
        row[j] += rw
        if phi[j] != 0.0:
            v[:f] += row[:f] * phi[j]


def _stack(rng, F, static, frozen):
    M, Fm = len(F), max(F) + 1
    C = np.zeros((M, Fm, Fm))
    mu, pvec = np.zeros((M, Fm)), np.zeros((M, Fm))
    for m, f in enumerate(F):
        A = rng.standard_normal((f, f))
        C[m, :f, :f] = np.tril(A) if static[m] else A @ A.T + f * np.eye(f)
        pvec[m, :f] = rng.standard_normal(f) * (0.3 if static[m] else 0.1)
        mu[m, :f] = rng.standard_normal(f)
    alpha0 = np.where(frozen, np.inf, rng.uniform(0.05, 2.0, M))
    state = State(mu, C, pvec, alpha0, rng.standard_normal(M), np.ones(M, dtype=np.bool_),
                  np.zeros(M, dtype=np.int64))
    params = Params(np.array(F, dtype=np.int64), np.array(static), np.where(static, 0.0, 1e-3),
                    np.ones(M), np.full(M, 0.25))
    return params, state


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    F=st.lists(st.integers(1, 14), min_size=1, max_size=5),
    kinds=st.lists(st.sampled_from(["static", "frozen", "dynamic"]), min_size=5, max_size=5),
    zeros=st.lists(st.booleans(), min_size=15, max_size=15),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_sweeps_give_the_row_by_row_bits(F, kinds, zeros, seed):
    """Every feature count around the rows' groups of four, static members with a Gaussian step and
    frozen ones (the logistic step whose curvature vanished), dynamic members, and features that
    are exactly 0 (a sparse input): the predict sweep and the flush give the row-by-row bits."""
    rng = np.random.default_rng(seed)
    kinds = kinds[:len(F)]
    static = [k != "dynamic" for k in kinds]
    params, state = _stack(rng, F, static, [k == "frozen" for k in kinds])
    M, Fm = state.mu.shape
    Phi = rng.standard_normal((1, Fm)) * np.where(zeros[:Fm], 0.0, 1.0)
    ref = State(*(a.copy() for a in state))
    flushed = State(*(a.copy() for a in state))

    V, E = np.zeros((M, Fm)), np.zeros((M, Fm))
    status = np.zeros(M, dtype=np.int64)
    predict_stack(np.arange(M, dtype=np.int64), Phi, np.zeros(M, dtype=np.int64), tuple(params),
                  tuple(state), V, E, np.zeros(M), np.zeros(M), status, None)
    flush_stack(tuple(params), tuple(flushed), np.zeros((M, Fm)))

    V_ref = np.zeros((M, Fm))
    for m, f in enumerate(F):
        if static[m]:
            _static_rows(f, Phi[0], ref.mu[m], ref.C[m], V_ref[m], ref.pvec[m],
                         ref.alpha0[m], ref.pg[m])
        else:
            # the owed mean step with the vector as the update left it, then its scale (the
            # alpha0 of a dynamic member: sqrt of the curvature)
            ref.mu[m, :f] += ref.pvec[m, :f] * ref.pg[m]
            ref.pvec[m, :f] *= ref.alpha0[m]
            _dynamic_rows(f, Phi[0], ref.C[m], V_ref[m], ref.pvec[m], 1e-3)
    assert not status.any()
    for got in (state, flushed):
        assert np.array_equal(got.C, ref.C)
        assert np.array_equal(got.mu, ref.mu)
        assert np.array_equal(got.pvec, ref.pvec)
    assert np.array_equal(V, V_ref)
