"""Memory and time of the warm-up on wide inputs (issue 18, part 2): the curvature of the Laplace
draws costs a bounded number of gradient evaluations and no ``P x P`` matrix beyond its budget,
the full Hessian is kept (bit for bit) within it, and the warm-up fallback's linear member solves
the smaller of its two systems."""

from __future__ import annotations

import math
import tracemalloc
import warnings

import numpy as np
import pytest

from river_doebe.basis import HilbertGP, RBFNetwork
from river_doebe.warmup import laplace
from river_doebe.warmup.empirical_bayes import (
    build_members,
    fit_hyperparameters,
    laplace_covariance,
    laplace_samples,
    repair_covariance,
)
from river_doebe.warmup.laplace import CURVATURE_BUDGET


@pytest.fixture(autouse=True)
def _single_threaded_blas():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _wide(n_inputs, n=80, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1, 1, size=(n, n_inputs))
    y = np.sin(2 * Z[:, 0]) + Z[:, 1] - 0.5 * Z[:, 2] + 0.1 * rng.standard_normal(n)
    return Z, y


def _mode(basis, Z, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fit_hyperparameters(basis, Z, y, starts=(1.0,), maxiter=15)[0]


@pytest.fixture(scope="module")
def narrow():
    Z, y = _wide(4, n=120)
    basis = HilbertGP(n_features=24, lengthscale=(1.0,) * 4)
    return basis, Z, y, _mode(basis, Z, y)


@pytest.fixture(scope="module")
def wide():
    n_inputs = CURVATURE_BUDGET + 6  # P = D + 2 hyperparameters, beyond the budget
    Z, y = _wide(n_inputs)
    basis = HilbertGP(n_features=n_inputs, lengthscale=(1.0,) * n_inputs)
    return basis, Z, y, _mode(basis, Z, y)


def _u(draws):
    return np.array([[math.log(vt), math.log(ve), *b.get_hyper()] for b, vt, ve in draws])


def _as_draws(mode, basis, U):
    """Rows of ``u`` as the draws' tuples, through the same clip and unpacking."""
    out = []
    for u in U:
        vt, ve, psi = mode.layout.unpack(mode.layout.clip(u))
        out.append((basis.with_hyper(psi), vt, ve))
    return out


# ====================================================================== within the budget


def test_full_hessian_within_the_budget_is_unchanged(narrow):
    basis, Z, y, mode = narrow
    P = len(mode.u)
    assert P <= CURVATURE_BUDGET
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cov = laplace_covariance(mode, basis, Z, y)
        draws = laplace_samples(mode, basis, Z, y, 6, seed=5)
        H = laplace._hessian(mode.u, basis, Z, y, 1e-4)
    ref_cov, root, _ = repair_covariance(H)
    np.testing.assert_array_equal(cov, ref_cov)
    # the draws of the previous release, bit for bit: u* + z R'
    z = np.random.default_rng(5).standard_normal((6, P))
    ref = _as_draws(mode, basis, mode.u[None, :] + z @ root.T)
    np.testing.assert_array_equal(_u(draws), _u(ref))


def test_perturbation_is_drawn_without_an_identity_and_bit_for_bit(narrow):
    basis, Z, y, mode = narrow
    P = len(mode.u)
    draws = laplace_samples(mode, basis, Z, y, 5, seed=2, method="perturb", perturb_var=1e-3)
    z = np.random.default_rng(2).standard_normal((5, P))
    ref = _as_draws(mode, basis, mode.u[None, :] + z @ (math.sqrt(1e-3) * np.eye(P)).T)
    np.testing.assert_array_equal(_u(draws), _u(ref))


def test_budget_is_checked(narrow):
    basis, Z, y, mode = narrow
    for bad in (4, 0, 2.5, True):
        with pytest.raises(ValueError, match="budget"):
            laplace_covariance(mode, basis, Z, y, budget=bad)


# ====================================================================== beyond the budget


def test_lanczos_curvature_equals_the_hessian_with_a_full_basis(narrow):
    """With as many Lanczos directions as hyperparameters the approximation is the Hessian
    (up to the finite differences, taken along other directions)."""
    basis, Z, y, mode = narrow
    P = len(mode.u)
    with np.errstate(all="ignore"):
        H = laplace._hessian(mode.u, basis, Z, y, 1e-4)
        theta, Q, _ = laplace._krylov_curvature(mode.u, basis, Z, y, 1e-4, P, 0)
    assert Q.shape == (P, P)
    np.testing.assert_allclose(Q.T @ Q, np.eye(P), atol=1e-10)
    approx = (Q * theta) @ Q.T
    assert np.linalg.norm(approx - H) / np.linalg.norm(H) < 1e-4


def _injected(monkeypatch, H):
    calls = []

    def hvp(u, basis, Z, y, step, V):
        calls.append(V.shape[1])
        return H @ V

    monkeypatch.setattr(laplace, "_hvp", hvp)
    return calls


@pytest.mark.parametrize("rest", [0.0, 0.4, 3.0])
def test_lanczos_covariance_is_exact_for_few_stiff_directions(wide, monkeypatch, rest):
    """A Hessian with fewer stiff directions than the Lanczos basis holds, and every other
    direction at one curvature (flat, below the floor, or above it): the approximate repaired
    covariance is the exact one, from ``budget`` products."""
    basis, Z, y, mode = wide
    P = len(mode.u)
    rng = np.random.default_rng(3)
    V, _ = np.linalg.qr(rng.standard_normal((P, 12)))
    stiff = np.geomspace(2.0, 5e4, 12)
    H = (V * (stiff - rest)) @ V.T + rest * np.eye(P)
    calls = _injected(monkeypatch, H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # flat directions: rounding signs
        cov = laplace_covariance(mode, basis, Z, y)
    assert sum(calls) == CURVATURE_BUDGET
    exact, _, _ = repair_covariance(H)
    np.testing.assert_allclose(cov, exact, rtol=1e-7, atol=1e-9)


def test_lanczos_draws_have_the_approximate_covariance(wide, monkeypatch):
    basis, Z, y, mode = wide
    P = len(mode.u)
    rng = np.random.default_rng(4)
    A = rng.standard_normal((P, P))
    H = A @ A.T / P + np.diag(np.geomspace(1.0, 1e3, P))  # every direction stiff: approximated
    _injected(monkeypatch, H)
    spread, _ = laplace._covariance(mode, basis, Z, y, "laplace", 1e-3, 1e-4, 1.0)
    cov = spread.covariance()
    z = np.random.default_rng(0).standard_normal((40_000, P))
    D = spread.draw(np.zeros(P), z)
    emp = D.T @ D / len(D)
    assert np.linalg.norm(emp - cov) / np.linalg.norm(cov) < 0.05
    assert np.all(np.linalg.eigvalsh(cov) > 0)
    # no direction wider than the floor allows, none narrower than the stiffest curvature
    lam = np.linalg.eigvalsh(cov)
    assert lam.max() <= 1.0 + 1e-12 and lam.min() >= 1.0 / np.linalg.eigvalsh(H).max() - 1e-12


def test_wide_draws_bounded_cost_in_bounds_and_reproducible(wide, monkeypatch):
    basis, Z, y, mode = wide
    P = len(mode.u)
    assert P > CURVATURE_BUDGET
    evaluations = []
    real = laplace.objective

    def counted(*args, **kwargs):
        evaluations.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(laplace, "objective", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a = _u(laplace_samples(mode, basis, Z, y, 5, seed=11))
        assert len(evaluations) == 2 * CURVATURE_BUDGET  # not 2 P
        b = _u(laplace_samples(mode, basis, Z, y, 5, seed=11))
        c = _u(laplace_samples(mode, basis, Z, y, 5, seed=12))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert np.all(np.isfinite(a))
    assert np.all(a >= mode.layout.lower - 1e-12) and np.all(a <= mode.layout.upper + 1e-12)
    assert np.all(np.abs(a - mode.u).max(axis=1) > 0)


def test_a_non_finite_curvature_falls_back_to_the_perturbation(wide, monkeypatch):
    basis, Z, y, mode = wide
    P = len(mode.u)
    _injected(monkeypatch, np.full((P, P), np.nan))
    with pytest.warns(RuntimeWarning, match="perturbation"):
        cov = laplace_covariance(mode, basis, Z, y)
    np.testing.assert_allclose(np.diag(cov), 1e-3)


# ====================================================================== no P x P anywhere


def test_wide_rbf_family_never_builds_p_by_p():
    """An RBF network's hyperparameters include its centres: P = (100 + 1) 40 + 2 = 4,042, whose
    P x P identity alone is 130 MB. The whole family's fit and draws stay far below it."""
    Z, y = _wide(40, n=60)
    basis = RBFNetwork(n_centres=100, lengthscale=tuple([1.0] * 40), seed=0)
    P = 101 * 40 + 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tracemalloc.start()
        try:
            members = build_members(basis, Z, y, n_samples=3, starts=(1.0,), maxiter=3, seed=0)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert len(members) == 3
    assert peak < 0.1 * P * P * 8, f"peak {peak / 2**20:.1f} MB"


# ====================================================================== the warm-up fallback


def _reference_linear(fb, z):
    """The linear member's predictive in its D x D form, from the fallback's moments."""
    mo = fb._moments
    inv = 1.0 / mo.x_scale()
    sy = math.sqrt(max(mo.syy / mo.n, 0.0))
    ve = min(max(fb._sq_err / fb._n_err, 1e-3), 1.0) if fb._n_err else 1.0
    A = mo.Cxx * np.outer(inv, inv) / ve + np.eye(len(inv))
    w = np.linalg.solve(A, mo.cxy * inv / (sy * ve))
    u = mo.standardise(z)
    return mo.my + sy * float(u @ w), sy * sy * (float(u @ np.linalg.solve(A, u)) + ve)


def test_wide_fallback_solves_the_smaller_system_with_the_same_predictive():
    from river_doebe.warmup.fallback import WIDE, Fallback

    D = WIDE + 16
    rng = np.random.default_rng(7)
    X = rng.poisson(0.3, size=(2 * D, D)).astype(float) * rng.uniform(0.5, 3.0, size=D)
    X[:, 5] = 0.0  # an input that stays 0 (no unit) and one that is constant
    X[:, 6] = 2.5
    y = X @ rng.standard_normal(D) + 0.3 * rng.standard_normal(2 * D)
    fb = Fallback(D)
    forms = set()
    for i in range(2 * D):
        mean, var = fb.predict(X[i])
        assert np.isfinite(mean) and var > 0
        if fb._moments.n >= 2:
            got = fb._linear_regression(X[i])
            forms.add(fb._post[2][0])
            ref = _reference_linear(fb, X[i])
            np.testing.assert_allclose(got, ref, rtol=1e-7)
        fb.learn(X[i], y[i])
    assert forms == {"dual", "primal"}
    # without its window (given up), the D x D form
    fb.drop_window()
    fb._post = None
    fb._linear_regression(X[0])
    assert fb._post[2][0] == "primal"


# ---------------------------------------------------------------- noise the window cannot place


def _underdetermined(n=60, n_inputs=150, noise=0.5, seed=0):
    """A linear target in sparse count-like inputs with more inputs than samples: the features
    fit every sample and the evidence is flat in the noise variance below its signal."""
    rng = np.random.default_rng(seed)
    Z = (rng.uniform(size=(n, n_inputs)) < 0.1) * 3.0
    y = Z @ (0.1 * rng.standard_normal(n_inputs)) + noise * 0.1 * rng.standard_normal(n)
    return Z, y - y.mean()


def test_noise_at_its_bound_is_drawn_from_its_profile():
    from river_doebe.basis import Linear

    Z, y = _underdetermined()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        members = build_members(Linear(), Z, y, n_samples=5, starts=(1.0,), seed=0)
    mode = members[0]
    assert mode.is_mode and mode.var_eps < math.exp(math.log(1e-6) + laplace.NOISE_AT_BOUND)
    draws = [m.var_eps for m in members[1:]]
    # stratified over the profile, which is flat from the bound up to the signal's scale: the
    # draws span it, and the largest is at the noise level the stream needs (0.05^2 here)
    assert len(draws) == 4 and max(draws) > 1e-3 and min(draws) < 1e-4
    assert sorted(draws) == draws
    again = build_members(Linear(), Z, y, n_samples=5, starts=(1.0,), seed=0)
    assert [m.var_eps for m in again] == [m.var_eps for m in members]


def test_noise_free_target_keeps_its_draws_at_the_bound():
    from river_doebe.basis import Linear

    rng = np.random.default_rng(1)
    Z = rng.standard_normal((200, 5))
    y = Z @ np.array([1.0, -0.5, 0.3, 0.0, 2.0])  # no noise, more samples than features
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        members = build_members(Linear(), Z, y, n_samples=5, starts=(1.0,), seed=0)
    assert all(m.var_eps < 1e-5 for m in members)


def test_identified_noise_keeps_the_laplace_draws(monkeypatch):
    """A mode away from the bound: the draws do not look at the profile (the paper's streams)."""
    from river_doebe.basis import Linear

    Z, y = _wide(5, n=200)

    def refuse(*args):
        raise AssertionError("profile of an identified noise")

    monkeypatch.setattr(laplace, "_profile_noise", refuse)
    members = build_members(Linear(), Z, y, n_samples=5, starts=(1.0,), seed=0)
    assert 1e-3 < members[0].var_eps < 0.1 and len(members) == 5


def test_default_families_swap_the_hsgp_for_the_linear_family_on_wide_inputs():
    from river_doebe.warmup import WIDE_INPUTS, default_families, resolve_families

    assert default_families(WIDE_INPUTS) == ("hsgp", "rff", "rbf")
    assert default_families(WIDE_INPUTS + 1) == ("linear", "rff", "rbf")
    names = [type(b).__name__ for b in resolve_families(None, 450, seed=0)]
    assert names == ["Linear", "RandomFourierFeatures", "RBFNetwork"]
    # every template of a fixed size but the linear one: its streaming memory is linear in D
    # beside the linear member's (D + 1)^2, the cost of a weight per input, as river's BLR
    rff, rbf = resolve_families(None, 450, seed=0)[1:]
    assert rff.n_frequencies == 50 and rbf.n_centres == 100


@pytest.mark.slow
def test_bag_of_words_within_one_and_a_half_river_blr():
    """The issue's reproduction, shortened: BagOfWords | EDOEBE on a vocabulary wider than the
    HSGP's 100 functions, a target linear in the word counts (the benchmark's stream)."""
    import sys
    from pathlib import Path

    from river import feature_extraction, linear_model

    from river_doebe import EDOEBE

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from memory import bow_texts
    finally:
        sys.path.pop(0)
    texts, targets = bow_texts(160, 500, seed=0)
    maes = {}
    for name, model in {
        "edoebe": feature_extraction.BagOfWords(on="text") | EDOEBE(n_warmup=100, seed=0),
        "blr": feature_extraction.BagOfWords(on="text") | linear_model.BayesianLinearRegression(),
    }.items():
        err = 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for x, t in zip(texts, targets, strict=True):
                err += abs(model.predict_one(x) - t)
                model.learn_one(x, t)
        maes[name] = err / len(texts)
    assert maes["edoebe"] <= 1.5 * maes["blr"], maes
