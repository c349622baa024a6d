"""The rented kernels' Python twins give their kernels' bits on random inputs (hypothesis).

A fresh install runs the weights' steps and a sample's standardisation by their Python twins
until they have paid for their compile (``river_doebe.kernels.jit.Rented``), on NumPy's arrays
or, for the weights, on Python lists; the switch to the compiled kernel must change no number.
The model streams of ``tests/test_ensemble.py`` check it end to end; here each kernel meets
weights that are zero, tiny or dominant, likelihoods far apart, sparse switching matrices and
every weight rule, and a standardisation meets missing values, late inputs and overflows.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from river_doebe.kernels import stack, weights
from river_doebe.kernels.jit import _on_lists, python_twin
from river_doebe.warmup.standardise import _standardise_one

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

_SETTINGS = hypothesis.settings(max_examples=60, deadline=None,
                                suppress_health_check=[hypothesis.HealthCheck.too_slow])


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    return a == b or (a != a and b != b)


def _check(kernel, args, lists=True):
    """The kernel, its twin on the arrays and (``lists``) its twin on lists, each on its own
    copy of ``args``: the same return value and the same arrays afterwards."""
    compiled = copy.deepcopy(args)
    out = kernel(*compiled)
    runs = [python_twin(kernel)]
    if lists:
        runs.append(lambda *a: _on_lists(python_twin(kernel), a))
    for run in runs:
        mine = copy.deepcopy(args)
        with np.errstate(all="ignore"):
            got = run(*mine)
        assert _same(out, got), (kernel, out, got)
        for before, after in zip(compiled, mine, strict=True):
            assert _same(before, after)


@st.composite
def _log_weights(draw, M):
    """Log weights (not normalised) with some zero weights, at least one positive."""
    values = draw(st.lists(st.floats(-60.0, 5.0), min_size=M, max_size=M))
    dead = draw(st.lists(st.booleans(), min_size=M, max_size=M))
    keep = draw(st.integers(0, M - 1))
    return np.array([-np.inf if d and m != keep else v
                     for m, (v, d) in enumerate(zip(values, dead, strict=True))])


@st.composite
def _transition(draw, M):
    """A switching matrix in compressed columns: column ``j`` from row ``j`` and a few others,
    each with a positive probability (its log), so that the weights never all vanish. (The
    library takes row-stochastic matrices only, under which they cannot; a strategy that let
    every row of a block lose its weight made the mixture's moments divide by zero, an input
    no stream reaches.)"""
    indptr, indices, log_q = [0], [], []
    for j in range(M):
        rows = [j] + draw(st.lists(st.integers(0, M - 1).filter(lambda i, j=j: i != j),
                                   max_size=min(M - 1, 2), unique=True))
        indices += rows
        log_q += [math.log(draw(st.floats(1e-6, 1.0))) for _ in rows]
        indptr.append(len(indices))
    return (np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int64),
            np.array(log_q))


@st.composite
def _rule(draw):
    """``(log_rate, log_keep, log_floor, share_keep, share_each)`` of Bayes' rule or
    Soft-Bayes, with or without a floor and a fixed share (for 4 members)."""
    eta = draw(st.sampled_from((1.0, 0.5, 0.1, 1e-3)))
    floor = draw(st.sampled_from((0.0, 1e-8, 1e-3)))
    share = draw(st.sampled_from((0.0, 0.01, 0.2)))
    return (math.log(eta), -np.inf if eta == 1.0 else math.log1p(-eta),
            -np.inf if floor == 0.0 else math.log(floor),
            0.0 if share == 0.0 else math.log1p(-share),
            -np.inf if share == 0.0 else math.log(share / 4.0))


@_SETTINGS
@hypothesis.given(st.data())
def test_the_weights_twins_give_the_kernels_bits(data):
    draw = data.draw
    M = draw(st.integers(1, 8))
    B = draw(st.integers(1, 4))
    log_w = draw(_log_weights(M))
    indptr, indices, log_q = draw(_transition(M))
    log_rate, log_keep, log_floor, share_keep, share_each = draw(_rule())
    finite = st.floats(-1e3, 1e3)

    def row(elements):
        return np.array(draw(st.lists(elements, min_size=M, max_size=M)))

    loglik = row(st.floats(-1e3, 50.0))
    mean, var, logit = row(finite), row(st.floats(1e-6, 1e6)), row(finite)
    y = draw(finite)
    _check(weights.switch_log_weights, (log_w, indptr, indices, log_q, np.empty(M)))
    _check(weights.update_log_weights, (log_w, loglik, log_rate, log_keep, log_floor,
                                        np.empty(M)))
    _check(weights.share_log_weights, (log_w.copy(), share_keep, share_each))
    _check(weights.mixture_moments, (log_w, mean, var))
    _check(weights.mixture_log_density, (log_w, mean, var, y))
    _check(weights.mixture_proba, (log_w, logit))
    _check(stack.reachable, (log_w, indptr, indices, np.ones(M, dtype=np.bool_)))
    mean_b, var_b, loglik_b = (np.array([row(e) for _ in range(B)])
                               for e in (finite, st.floats(1e-6, 1e6), st.floats(-1e3, 50.0)))
    logit_b = np.array([row(finite) for _ in range(B)]) if draw(st.booleans()) else None
    keep = draw(st.booleans())
    _check(weights.weigh_block, (
        log_w.copy(), np.empty(M), np.empty(M), draw(st.booleans()), indptr, indices, log_q,
        log_floor, log_rate, log_keep, share_keep, share_each, mean_b, var_b, logit_b,
        loglik_b, np.empty(B), np.empty(B), np.empty((B if keep else 0, M)),
        draw(st.floats(-1e3, 0.0)),
    ))


@_SETTINGS
@hypothesis.given(st.data())
def test_the_standardisation_twin_gives_the_kernel_s_bits(data):
    draw = data.draw
    D = draw(st.integers(1, 6))
    value = st.one_of(st.floats(-1e12, 1e12), st.just(np.nan), st.just(0.0),
                      st.floats(-1e-300, 1e-300))
    x = np.array(draw(st.lists(value, min_size=D, max_size=D)))
    cols = np.array(draw(st.permutations(range(D))), dtype=np.int64)[:draw(st.integers(1, D))]
    n = cols.shape[0]
    mean = np.array(draw(st.lists(st.floats(-1e6, 1e6), min_size=n, max_size=n)))
    scale = np.array(draw(st.lists(st.one_of(st.floats(1e-300, 1e12), st.just(np.nan)),
                                   min_size=n, max_size=n)))
    _check(_standardise_one, (x, cols, mean, scale, draw(st.sampled_from((3.0, 30.0))),
                              draw(st.booleans())), lists=False)
