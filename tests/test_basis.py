"""Tests of the basis expansions: formulas, kernels, hyperparameter gradients, river conventions."""

from __future__ import annotations

import math
import pickle
import re

import numpy as np
import pytest
import scipy.integrate
import scipy.special
import scipy.stats
from river import checks
from scipy.stats import qmc

from river_doebe.basis import (
    AdditivePolynomial,
    BSpline,
    HilbertGP,
    Linear,
    RandomFourierFeatures,
    RBFNetwork,
    stack_params,
)
from river_doebe.basis.hsgp import spectral_density
from river_doebe.evidence import _takes_features

FAMILIES = [Linear, AdditivePolynomial, RandomFourierFeatures, HilbertGP, RBFNetwork, BSpline]


def _data(n=40, D=3, seed=0, scale=1.0):
    return scale * np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n, D))


def _fitted_examples():
    """One initialised, non-trivial member of each family, on 3-D inputs."""
    Z = _data(60)
    return [
        Linear(),
        AdditivePolynomial(degree=4),
        RandomFourierFeatures(n_frequencies=7, lengthscale=(0.5, 1.0, 2.0), seed=1),
        RandomFourierFeatures(n_frequencies=5, kernel="matern52", sampler="qmc", seed=2),
        HilbertGP(n_features=30, lengthscale=0.7).fit(Z),
        HilbertGP(n_features=24, lengthscale=(0.5, 0.8, 1.2), kernel="matern32").fit(Z),
        RBFNetwork(n_centres=6, lengthscale=0.8, seed=0).fit(Z),
        BSpline(n_features=30, smoothness=(0.5, 2.0, 8.0)).fit(Z),
        BSpline(n_features=24, degree=2, penalty_order=1, smoothness=3.0, boundary=(-1.5, 1.5)),
    ]


def _initialised(basis, D=3):
    basis.initialize(D)
    return basis


# ---------------------------------------------------------------------------------- exact kernels
def _se(Z1, Z2, ls):
    U = (Z1[:, None, :] - Z2[None, :, :]) / ls
    return np.exp(-0.5 * np.sum(U**2, axis=-1))


def _matern32(Z1, Z2, ls):
    r = np.sqrt(np.sum(((Z1[:, None, :] - Z2[None, :, :]) / ls) ** 2, axis=-1))
    return (1.0 + math.sqrt(3.0) * r) * np.exp(-math.sqrt(3.0) * r)


def _additive(kernel, Z, ls):
    return sum(kernel(Z[:, [d]], Z[:, [d]], ls) for d in range(Z.shape[1]))


# ---------------------------------------------------------------------------------- formulas
def test_polynomial_formula():
    Z = _data(D=2, scale=3.0)
    Phi = AdditivePolynomial(degree=3).featurize(Z)
    x0, x1 = Z[:, 0], Z[:, 1]
    expected = np.column_stack([x0, x0**2, x0**3, x1, x1**2, x1**3, np.ones(len(Z))])
    np.testing.assert_allclose(Phi, expected, rtol=1e-13, atol=0)
    no_bias = AdditivePolynomial(degree=2, bias=False).featurize(Z)
    np.testing.assert_allclose(no_bias, np.column_stack([x0, x0**2, x1, x1**2]), rtol=1e-13)


@pytest.mark.parametrize("kernel", ["se", "matern32", "matern52"])
def test_rff_formula_and_draws(kernel):
    H, D, seed = 6, 3, 11
    ls = np.array([0.5, 1.0, 2.0])
    basis = RandomFourierFeatures(n_frequencies=H, lengthscale=tuple(ls), kernel=kernel, seed=seed)
    Z = _data(D=D)
    Phi = basis.featurize(Z)

    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((H, D))
    if kernel != "se":
        dof = {"matern32": 3.0, "matern52": 5.0}[kernel]
        eps = eps / np.sqrt(rng.chisquare(dof, size=H) / dof)[:, None]
    np.testing.assert_array_equal(basis.base_frequencies_, eps)

    T = Z @ (eps / ls).T
    expected = np.empty((len(Z), 2 * H))
    expected[:, 0::2] = np.sin(T) / math.sqrt(H)
    expected[:, 1::2] = np.cos(T) / math.sqrt(H)
    np.testing.assert_allclose(Phi, expected, rtol=1e-12, atol=1e-14)
    # unit prior variance at every point
    np.testing.assert_allclose(np.sum(Phi**2, axis=1), 1.0, rtol=1e-12)


def test_rff_qmc_draws():
    H, D = 8, 2
    basis = RandomFourierFeatures(n_frequencies=H, sampler="qmc", seed=5).initialize(D)
    U = qmc.Sobol(d=D, scramble=True, seed=5).random(H)
    np.testing.assert_allclose(basis.base_frequencies_, scipy.special.ndtri(U), rtol=1e-12)

    matern = RandomFourierFeatures(n_frequencies=H, kernel="matern32", sampler="qmc", seed=5)
    U = qmc.Sobol(d=D + 1, scramble=True, seed=5).random(H)
    u = scipy.stats.chi2.ppf(U[:, D], 3.0)
    expected = scipy.special.ndtri(U[:, :D]) / np.sqrt(u / 3.0)[:, None]
    np.testing.assert_allclose(matern.initialize(D).base_frequencies_, expected, rtol=1e-12)


def test_rff_explicit_frequencies_used_verbatim():
    eps = np.arange(6.0).reshape(3, 2) / 10
    basis = RandomFourierFeatures(n_frequencies=3, lengthscale=2.0, frequencies=eps, seed=99)
    Z = _data(D=2)
    T = Z @ (eps / 2.0).T
    np.testing.assert_allclose(basis.featurize(Z)[:, 0::2], np.sin(T) / math.sqrt(3), rtol=1e-12)
    with pytest.raises(ValueError, match="columns"):
        RandomFourierFeatures(n_frequencies=3, frequencies=eps).initialize(3)


def _se_density(w, l):
    return math.sqrt(2 * math.pi) * l * np.exp(-0.5 * (l * w) ** 2)


def _matern_density(w, l, nu):
    c = 2 * math.sqrt(math.pi) * math.gamma(nu + 0.5) / math.gamma(nu) * (2 * nu) ** nu
    return c / l ** (2 * nu) * (2 * nu / l**2 + w**2) ** (-(nu + 0.5))


@pytest.mark.parametrize("kernel", ["se", "matern32", "matern52"])
def test_hsgp_formula(kernel):
    J, D = 7, 3
    Z = _data(D=D)
    ls = (0.5, 1.0, 2.0)
    basis = HilbertGP(n_features=J * D + 2, lengthscale=ls, kernel=kernel).fit(Z)
    L = 1.5 * np.max(np.abs(Z), axis=0)
    np.testing.assert_allclose(basis.boundary_, L, rtol=1e-15)
    Phi = basis.featurize(Z)
    assert Phi.shape == (len(Z), J * D)
    for d in range(D):
        for j in range(1, J + 1):
            w = j * math.pi / (2 * L[d])
            if kernel == "se":
                S = _se_density(w, ls[d])
            else:
                S = _matern_density(w, ls[d], {"matern32": 1.5, "matern52": 2.5}[kernel])
            expected = math.sqrt(S) * np.sin(w * (Z[:, d] + L[d])) / math.sqrt(L[d])
            np.testing.assert_allclose(Phi[:, d * J + j - 1], expected, rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("kernel", ["se", "matern32", "matern52"])
def test_spectral_density_integrates_to_kernel(kernel):
    """(1/2pi) int S(w) cos(w r) dw recovers the kernel: the normalisation is right."""
    l, r = 0.8, 0.6
    val, _ = scipy.integrate.quad(
        lambda w: spectral_density(w, l, kernel) * math.cos(w * r), -np.inf, np.inf, limit=400
    )
    a = r / l
    exact = {
        "se": math.exp(-0.5 * a**2),
        "matern32": (1 + math.sqrt(3) * a) * math.exp(-math.sqrt(3) * a),
        "matern52": (1 + math.sqrt(5) * a + 5 * a**2 / 3) * math.exp(-math.sqrt(5) * a),
    }[kernel]
    assert abs(val / (2 * math.pi) - exact) < 1e-7


def test_rbf_formula():
    Z = _data(D=2)
    C = np.array([[0.0, 0.0], [0.5, -0.5], [-1.0, 1.0]])
    basis = RBFNetwork(n_centres=3, lengthscale=(0.5, 2.0), centres=C)
    expected = np.exp(
        -0.5
        * (
            ((Z[:, None, 0] - C[None, :, 0]) / 0.5) ** 2
            + ((Z[:, None, 1] - C[None, :, 1]) / 2.0) ** 2
        )
    )
    np.testing.assert_allclose(basis.featurize(Z), expected, rtol=1e-13)


def test_rbf_kernel_sums_each_centre_in_the_inputs_order():
    """The stack kernel adds each input's term to all the centres' sums at once (a loop along
    the centres): each centre's sum must still be the one taken input after input, to the bit
    (the features, hence every later number, do not depend on how the loop runs)."""
    rng = np.random.default_rng(7)
    D, n_centres = 7, 13
    Z = rng.normal(size=(9, D)) * 3.0
    C = rng.normal(size=(n_centres, D))
    ls = rng.uniform(0.3, 3.0, size=D)
    basis = RBFNetwork(n_centres=n_centres, lengthscale=tuple(ls), centres=C)
    basis.featurize(Z)  # (initialises the basis)
    inv = basis._inv_ls
    for z in Z:
        expected = []
        for c in range(n_centres):
            acc = 0.0
            for d in range(D):
                u = (float(z[d]) - float(C[c, d])) * float(inv[d])
                acc += u * u
            expected.append(math.exp(-0.5 * acc))
        assert basis.featurize_one(z).tolist() == expected


@pytest.mark.parametrize("kernel", ["se", "matern32"])
def test_rff_kernel_sums_each_frequency_in_the_inputs_order(kernel):
    """As the RBF network's: the stack kernel sums all frequencies input after input, and each
    frequency's sum must be the one taken input after input, its sine and cosine in its pair of
    slots, to the bit."""
    rng = np.random.default_rng(8)
    D = 6
    Z = rng.normal(size=(9, D)) * 2.0
    basis = RandomFourierFeatures(n_frequencies=11, lengthscale=0.7, kernel=kernel, seed=3)
    basis.featurize(Z)  # (initialises the basis)
    W, s = basis._W, float(basis._scale)
    for z in Z:
        expected = []
        for h in range(W.shape[0]):
            a = 0.0
            for d in range(D):
                a += float(W[h, d]) * float(z[d])
            expected += [s * math.sin(a), s * math.cos(a)]
        assert basis.featurize_one(z).tolist() == expected


# ---------------------------------------------------------------------------------- faces agree
@pytest.mark.parametrize("basis", _fitted_examples(), ids=lambda b: type(b).__name__)
def test_featurize_matches_kernel_and_transform_one(basis):
    Z = _data(25, seed=3, scale=2.0)
    Phi = basis.featurize(Z)
    assert Phi.shape == (len(Z), basis.n_outputs)
    one = np.array([basis.featurize_one(z) for z in Z])
    np.testing.assert_allclose(one, Phi, rtol=1e-12, atol=1e-12)
    names = basis.feature_names()
    assert len(names) == basis.n_outputs == len(set(names))
    for z, row in zip(Z[:5], Phi[:5], strict=True):
        out = basis.transform_one({f"x{d}": float(v) for d, v in enumerate(z)})
        assert list(out) == names
        np.testing.assert_allclose(list(out.values()), row, rtol=1e-12, atol=1e-12)


def test_feature_names_use_schema():
    x = {"b": 1.0, "a": 2.0}
    assert list(AdditivePolynomial(degree=2).transform_one(x)) == [
        "poly_a_1",
        "poly_a_2",
        "poly_b_1",
        "poly_b_2",
        "bias",
    ]
    assert list(HilbertGP(n_features=4).transform_one(x)) == [
        "hsgp_a_1",
        "hsgp_a_2",
        "hsgp_b_1",
        "hsgp_b_2",
    ]
    assert list(RandomFourierFeatures(n_frequencies=2, seed=0).transform_one(x)) == [
        "rff_sin_0",
        "rff_cos_0",
        "rff_sin_1",
        "rff_cos_1",
    ]
    assert list(RBFNetwork(n_centres=2).transform_one(x)) == ["rbf_0", "rbf_1"]
    assert list(BSpline(n_features=4, degree=1, penalty_order=1).transform_one(x)) == [
        "bspline_a_0",
        "bspline_a_1",
        "bspline_b_0",
        "bspline_b_1",
    ]
    smooth = BSpline(n_features=6, degree=1, smoothness=(1.0, 2.0))
    smooth.transform_one(x)
    assert smooth.hyper_names() == ["log_smoothness_a", "log_smoothness_b"]
    assert HilbertGP(n_features=4).initialize(2).feature_names()[0] == "hsgp_x0_1"
    ard = RBFNetwork(n_centres=1, lengthscale=(1.0, 2.0))
    ard.transform_one(x)
    assert ard.hyper_names() == [
        "log_lengthscale_a",
        "log_lengthscale_b",
        "centre_0_a",
        "centre_0_b",
    ]


def _stack_pairs():
    Z = _data(50)
    partial = RBFNetwork(n_centres=4, lengthscale=0.9).initialize(3)
    partial._observe(Z[0])
    partial._observe(Z[1])
    return [
        (Linear(bias=True), Linear(bias=False)),
        (AdditivePolynomial(degree=2), AdditivePolynomial(degree=4, bias=False)),
        (
            RandomFourierFeatures(n_frequencies=3, seed=0),
            RandomFourierFeatures(n_frequencies=8, lengthscale=(0.3, 1, 2), seed=1),
        ),
        (HilbertGP(n_features=7).fit(Z), HilbertGP(n_features=31, lengthscale=0.4, boundary=2.0)),
        (RBFNetwork(n_centres=7, seed=0).fit(Z), partial),
        (BSpline(n_features=15).fit(Z), BSpline(n_features=36, degree=2, smoothness=(0.3, 1, 2))),
    ]


@pytest.mark.parametrize("pair", _stack_pairs(), ids=lambda p: type(p[0]).__name__)
def test_stacked_kernel_matches_members(pair):
    a, b = (_initialised(m) for m in pair)
    assert a.n_outputs != b.n_outputs
    F = max(a.n_outputs, b.n_outputs)
    stacked = stack_params([a._params(), b._params()])
    rows = np.array([2, 0], dtype=np.int64)
    Z = _data(6, seed=4, scale=1.5)
    for kernel in (a._kernel, a._kernel_parallel):
        Phi = np.full((3, len(Z), F), np.nan)
        kernel(Z, Phi, rows, *stacked)
        for t, z in enumerate(Z):
            np.testing.assert_allclose(Phi[2, t, : a.n_outputs], a.featurize_one(z), rtol=1e-14)
            np.testing.assert_allclose(Phi[0, t, : b.n_outputs], b.featurize_one(z), rtol=1e-14)
            # one row at a time: the same numbers as in a block, bit for bit
            one = np.full((3, 1, F), np.nan)
            kernel(Z[t : t + 1], one, rows, *stacked)
            np.testing.assert_array_equal(one[:, 0], Phi[:, t])
        # columns past a member's width, and members nobody owns, are left alone
        assert np.isnan(Phi[2, :, a.n_outputs :]).all() and np.isnan(Phi[0, :, b.n_outputs :]).all()
        assert np.isnan(Phi[1]).all()


def test_hsgp_recurrence_accuracy():
    """The kernel's Chebyshev recurrence against direct sines, J = 100."""
    L = 2.0
    basis = HilbertGP(n_features=100, lengthscale=1e-3, boundary=L)  # flat spectrum: weights ~ 1
    z_grid = np.concatenate([np.linspace(-L, L, 2001), [-L + 1e-9, L - 1e-9, 0.0]])
    j = np.arange(1, 101)
    worst = 0.0
    for z in z_grid:
        direct = np.sin(j * math.pi * (z + L) / (2 * L))
        via_kernel = basis.featurize_one(np.array([z])) / basis._weights[0]
        err = np.max(np.abs(via_kernel - direct))
        assert err < 1e-12
        # at the box's ends every sin(j t) vanishes and only rounding noise is left to compare
        if np.max(np.abs(direct)) > 1e-6:
            worst = max(worst, err / np.max(np.abs(direct)))
    assert worst < 1e-10


# ---------------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("kernel, exact", [("se", _se), ("matern32", _matern32)])
def test_rff_kernel_approximation_improves(kernel, exact):
    Z = _data(30, D=2, seed=1)
    ls = np.array([0.7, 1.3])
    K = exact(Z, Z, ls)
    errors = {}
    for F in (50, 200, 2000):
        basis = RandomFourierFeatures(
            n_frequencies=F // 2, lengthscale=tuple(ls), kernel=kernel, seed=3
        )
        Phi = basis.featurize(Z)
        errors[F] = np.max(np.abs(Phi @ Phi.T - K))
    assert errors[2000] < errors[50] / 3
    assert errors[2000] < 0.1


@pytest.mark.parametrize("kernel, exact", [("se", _se), ("matern32", _matern32)])
def test_hsgp_kernel_approximation_improves(kernel, exact):
    Z = _data(30, D=2, seed=1)
    ls = 0.15 if kernel == "se" else 0.5
    K = _additive(exact, Z, ls)
    errors = {}
    for F in (20, 50, 200, 2000):
        Phi = HilbertGP(n_features=F, lengthscale=ls, kernel=kernel, boundary=4.0).featurize(Z)
        errors[F] = np.max(np.abs(Phi @ Phi.T - K))
    assert errors[50] < errors[20] and errors[200] < errors[50]
    assert errors[2000] < errors[50] / 3
    assert errors[2000] < (1e-8 if kernel == "se" else 5e-3)


def test_hsgp_fitted_boundary_well_inside():
    """Fitted on a wide warm-up batch, the approximation is accurate well inside the box."""
    basis = HilbertGP(n_features=120, lengthscale=0.5).fit(_data(200, D=2, seed=2, scale=3.0))
    Z = _data(30, D=2, seed=5)
    Phi = basis.featurize(Z)
    assert np.max(np.abs(Phi @ Phi.T - _additive(_se, Z, 0.5))) < 1e-6


def test_hsgp_beats_rff_in_one_dimension():
    x = np.linspace(-1.0, 1.0, 41)[:, None]
    ls, F = 0.5, 20
    K = _se(x, x, ls)
    hsgp = HilbertGP(n_features=F, lengthscale=ls, boundary_factor=3.0).fit(x)
    Phi = hsgp.featurize(x)
    err_hsgp = np.max(np.abs(Phi @ Phi.T - K))
    err_rff = []
    for seed in range(5):
        R = RandomFourierFeatures(n_frequencies=F // 2, lengthscale=ls, seed=seed).featurize(x)
        err_rff.append(np.max(np.abs(R @ R.T - K)))
    assert err_hsgp < min(err_rff)
    assert err_hsgp < 1e-3


def test_rff_qmc_reproducible_and_accurate():
    Z = _data(30, D=2, seed=7)
    K = _se(Z, Z, 1.0)
    a = RandomFourierFeatures(n_frequencies=64, sampler="qmc", seed=3).featurize(Z)
    b = RandomFourierFeatures(n_frequencies=64, sampler="qmc", seed=3).featurize(Z)
    c = RandomFourierFeatures(n_frequencies=64, sampler="qmc", seed=4).featurize(Z)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)

    def rms(sampler, seed):
        Phi = RandomFourierFeatures(n_frequencies=64, sampler=sampler, seed=seed).featurize(Z)
        return np.sqrt(np.mean((Phi @ Phi.T - K) ** 2))

    mc = np.mean([rms("mc", s) for s in range(6)])
    quasi = np.mean([rms("qmc", s) for s in range(6)])
    assert np.isfinite(quasi) and quasi < 0.1
    assert quasi <= mc


# ---------------------------------------------------------------------------------- hyperparameters
def _vjp_cases():
    Z = _data(30, seed=8)
    return [
        RandomFourierFeatures(n_frequencies=4, lengthscale=0.8, seed=0).initialize(3),
        RandomFourierFeatures(n_frequencies=4, lengthscale=(0.5, 1.0, 1.5), seed=0).initialize(3),
        RandomFourierFeatures(
            n_frequencies=3,
            lengthscale=(0.5, 1.0, 1.5),
            kernel="matern32",
            seed=0,
            optimize_frequencies=True,
        ).initialize(3),
        HilbertGP(n_features=15, lengthscale=0.6).fit(Z),
        HilbertGP(n_features=15, lengthscale=(0.4, 0.9, 2.0), kernel="matern32").fit(Z),
        HilbertGP(n_features=15, lengthscale=0.7, kernel="matern52").fit(Z),
        RBFNetwork(n_centres=4, lengthscale=0.7, seed=0).fit(Z),
        RBFNetwork(n_centres=4, lengthscale=(0.5, 0.9, 1.3), seed=0).fit(Z),
        BSpline(n_features=24, smoothness=0.7).fit(Z),
        BSpline(n_features=30, smoothness=(0.05, 1.0, 30.0), penalty_order=3, ridge=0.3).fit(Z),
    ]


@pytest.mark.parametrize("basis", _vjp_cases(), ids=lambda b: repr(b).split("(")[0].strip())
def test_hyper_vjp_matches_finite_differences(basis):
    Z = _data(30, seed=9, scale=1.2)
    G = np.random.default_rng(1).normal(size=(len(Z), basis.n_outputs))
    psi = basis.get_hyper()
    assert len(psi) == len(basis.hyper_bounds()) == len(basis.hyper_names())
    grad = basis.hyper_vjp(Z, G)
    assert grad.shape == psi.shape

    def f(p):
        return np.sum(G * basis.with_hyper(p).featurize(Z))

    h = 1e-5
    fd = np.empty_like(psi)
    for i in range(len(psi)):
        e = np.zeros_like(psi)
        e[i] = h
        fd[i] = (f(psi + e) - f(psi - e)) / (2 * h)
    assert np.linalg.norm(grad - fd) / np.linalg.norm(fd) < 1e-6


@pytest.mark.parametrize("basis", [b for b in _vjp_cases() if _takes_features(type(b))],
                         ids=lambda b: repr(b).split("(")[0].strip())
def test_hyper_vjp_given_the_features_is_the_same_to_the_bit(basis):
    """The evidence hands ``hyper_vjp`` the features it computed where the basis takes them
    (``Phi=``): the gradient, and so every fit, is the one without them, to the last bit."""
    Z = _data(30, seed=9, scale=1.2)
    G = np.random.default_rng(1).normal(size=(len(Z), basis.n_outputs))
    np.testing.assert_array_equal(basis.hyper_vjp(Z, G, Phi=basis.featurize(Z)),
                                  basis.hyper_vjp(Z, G))


def test_the_bases_that_would_featurize_again_take_the_features():
    assert _takes_features(RBFNetwork) and _takes_features(HilbertGP)
    assert not _takes_features(RandomFourierFeatures)  # (its gradient from them: other bits)


@pytest.mark.parametrize("basis", [Linear(), AdditivePolynomial()], ids=lambda b: type(b).__name__)
def test_no_hyperparameters(basis):
    basis.initialize(2)
    assert basis.get_hyper().shape == (0,)
    assert basis.with_hyper(np.zeros(0)) is basis
    assert basis.hyper_vjp(np.zeros((3, 2)), np.zeros((3, basis.n_outputs))).shape == (0,)
    with pytest.raises(ValueError):
        basis.with_hyper(np.zeros(1))


def test_hyper_layout_and_bounds():
    rff = RandomFourierFeatures(n_frequencies=3, lengthscale=(1.0, 2.0), seed=0).initialize(2)
    assert rff.laplace_ok
    np.testing.assert_allclose(rff.get_hyper(), np.log([1.0, 2.0]))
    lo, hi = rff.hyper_bounds()[0]
    assert lo == pytest.approx(math.log(1e-6)) and hi == pytest.approx(math.log(1e2))
    off = RandomFourierFeatures(n_frequencies=3, seed=0, optimize_frequencies=True).initialize(2)
    assert not off.laplace_ok
    psi = off.get_hyper()
    assert psi.shape == (1 + 3 * 2,)
    np.testing.assert_array_equal(psi[1:], off.base_frequencies_.ravel())
    assert off.hyper_bounds()[1:] == [(None, None)] * 6
    assert off.hyper_names()[:3] == ["log_lengthscale", "frequency_0_x0", "frequency_0_x1"]

    hsgp = HilbertGP(n_features=10).initialize(2)
    assert hsgp.laplace_ok and hsgp.get_hyper().shape == (1,)

    rbf = RBFNetwork(n_centres=3, lengthscale=(1.0, 2.0)).fit(_data(20, D=2))
    assert not rbf.laplace_ok
    psi = rbf.get_hyper()
    assert psi.shape == (2 + 3 * 2,)
    np.testing.assert_array_equal(psi[2:], rbf.centres_.ravel())
    assert rbf.hyper_bounds()[2:] == [(None, None)] * 6

    spline = BSpline(n_features=20, smoothness=(1.0, 2.0)).initialize(2)
    assert spline.laplace_ok and spline.start_floor == 0.0
    np.testing.assert_allclose(spline.get_hyper(), np.log([1.0, 2.0]))
    assert spline.hyper_bounds() == [(math.log(1e-6), math.log(1e10))] * 2

    with pytest.raises(RuntimeError, match="initialize"):
        RandomFourierFeatures().get_hyper()
    with pytest.raises(ValueError, match="hyperparameters"):
        rff.with_hyper(np.zeros(5))


def test_with_hyper_sets_constructor_params_and_survives_clone():
    Z = _data(40, D=2)
    rff = RandomFourierFeatures(n_frequencies=4, lengthscale=(1.0, 2.0), seed=None).initialize(2)
    new = rff.with_hyper(np.log([0.5, 3.0]))
    assert new.lengthscale == pytest.approx((0.5, 3.0)) and isinstance(new.lengthscale, tuple)
    np.testing.assert_array_equal(new.frequencies, rff.base_frequencies_)  # same draws, unseeded
    assert new.is_initialized

    off = RandomFourierFeatures(n_frequencies=2, seed=0, optimize_frequencies=True).initialize(2)
    psi = off.get_hyper() + 0.1
    new_off = off.with_hyper(psi)
    assert isinstance(new_off.lengthscale, float)
    np.testing.assert_allclose(new_off.frequencies.ravel(), psi[1:])

    hsgp = HilbertGP(n_features=10, lengthscale=0.5).fit(Z)
    new_hsgp = hsgp.with_hyper([math.log(0.25)])
    assert new_hsgp.lengthscale == pytest.approx(0.25)
    assert isinstance(new_hsgp.boundary, tuple)
    np.testing.assert_allclose(new_hsgp.boundary, hsgp.boundary_)

    rbf = RBFNetwork(n_centres=3, seed=0).fit(Z)
    new_rbf = rbf.with_hyper(rbf.get_hyper())
    np.testing.assert_array_equal(new_rbf.centres, rbf.centres_)

    spline = BSpline(n_features=20, smoothness=(1.0, 3.0)).fit(Z)
    new_spline = spline.with_hyper(np.log([0.5, 40.0]))
    assert new_spline.smoothness == pytest.approx((0.5, 40.0))
    np.testing.assert_array_equal(new_spline.boundary, spline.boundary_)

    for basis, tuned in [(rff, new), (off, new_off), (hsgp, new_hsgp), (rbf, new_rbf),
                         (spline, new_spline)]:
        # the round trip with unchanged psi reproduces the basis
        same = basis.with_hyper(basis.get_hyper())
        np.testing.assert_allclose(same.featurize(Z), basis.featurize(Z), rtol=1e-13, atol=1e-15)
        # clone and pickle keep the tuned basis
        expected = tuned.featurize(Z)
        np.testing.assert_array_equal(tuned.clone().featurize(Z), expected)
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(tuned)).featurize(Z), expected)


# ------------------------------------------------------------------------- data-dependent defaults
def test_hsgp_boundary_defaults():
    unfitted = HilbertGP(n_features=6, boundary_factor=2.0).initialize(2)
    np.testing.assert_array_equal(unfitted.boundary_, [6.0, 6.0])  # assumes standardised inputs
    Z = np.column_stack([np.linspace(-4.0, 2.0, 10), np.zeros(10)])
    fitted = HilbertGP(n_features=6, boundary_factor=2.0).fit(Z)
    np.testing.assert_array_equal(fitted.boundary_, [8.0, 2.0])  # zero column: factor * 1
    explicit = HilbertGP(n_features=6, boundary=(1.0, 5.0)).fit(Z)
    np.testing.assert_array_equal(explicit.boundary_, [1.0, 5.0])
    # the unfitted box is used on a stream
    stream = HilbertGP(n_features=2)
    stream.transform_one({"a": 0.3})
    np.testing.assert_array_equal(stream.boundary_, [4.5])


def test_rbf_online_centres():
    basis = RBFNetwork(n_centres=3, lengthscale=1.0)
    assert basis.wants_observations
    assert basis.transform_one({"a": 1.0, "b": 2.0}) == {"rbf_0": 0.0, "rbf_1": 0.0, "rbf_2": 0.0}
    basis.learn_one({"a": 1.0, "b": 2.0})
    basis.learn_one({"a": 1.0, "b": 2.0})  # duplicate: not a new centre
    out = basis.transform_one({"a": 1.0, "b": 2.0})
    assert out == {"rbf_0": 1.0, "rbf_1": 0.0, "rbf_2": 0.0}
    assert basis.n_placed_ == 1
    assert basis._observe(np.array([0.0, 2.0])) is True
    basis.learn_one({"a": 3.0, "b": 2.0})
    assert basis._observe(np.array([5.0, 5.0])) is False  # full
    assert not basis.wants_observations
    np.testing.assert_array_equal(basis.centres_, [[1.0, 2.0], [0.0, 2.0], [3.0, 2.0]])
    out = basis.transform_one({"a": 1.0, "b": 2.0})
    np.testing.assert_allclose(list(out.values()), [1.0, math.exp(-0.5), math.exp(-2.0)])


def test_rbf_fit():
    Z = _data(300, D=2, seed=3)
    a = RBFNetwork(n_centres=10, seed=0).fit(Z)
    b = RBFNetwork(n_centres=10, seed=0).fit(Z)
    np.testing.assert_array_equal(a.centres_, b.centres_)
    assert a.n_placed_ == 10 and len(np.unique(a.centres_, axis=0)) == 10
    assert np.all(np.abs(a.centres_) <= 1.0)
    # fewer distinct rows than centres: the distinct rows, padded by jittered copies
    few = np.array([[0.0, 1.0], [2.0, 3.0], [0.0, 1.0]])
    c = RBFNetwork(n_centres=5, seed=0).fit(few)
    np.testing.assert_array_equal(c.centres_[:2], [[0.0, 1.0], [2.0, 3.0]])
    assert np.all(np.isfinite(c.featurize(few)))
    assert (
        np.max(np.min(np.abs(c.centres_[2:, None, :] - c.centres_[None, :2, :]).max(-1), 1)) < 0.1
    )
    single = RBFNetwork(n_centres=3, seed=0).fit(np.ones((1, 2)))
    assert single.n_placed_ == 3 and not single.wants_observations
    assert not RBFNetwork(n_centres=1, centres=[[0.0]]).wants_observations
    # explicit centres are never replaced
    C = np.zeros((2, 2))
    np.testing.assert_array_equal(RBFNetwork(n_centres=2, centres=C).fit(Z).centres_, C)


# ---------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "make",
    [
        lambda: AdditivePolynomial(degree=0),
        lambda: RandomFourierFeatures(kernel="rq"),
        lambda: RandomFourierFeatures(sampler="halton"),
        lambda: RandomFourierFeatures(lengthscale=0.0),
        lambda: RandomFourierFeatures(lengthscale=(1.0, -1.0)),
        lambda: RandomFourierFeatures(n_frequencies=0),
        lambda: RandomFourierFeatures(n_frequencies=2, frequencies=np.zeros((3, 2))),
        lambda: HilbertGP(kernel="periodic"),
        lambda: HilbertGP(lengthscale=-1.0),
        lambda: HilbertGP(boundary_factor=0.0),
        lambda: HilbertGP(boundary=(1.0, 0.0)),
        lambda: HilbertGP(n_features=2).initialize(3),
        lambda: HilbertGP(lengthscale=(1.0, 2.0)).initialize(3),
        lambda: RBFNetwork(n_centres=2, centres=np.zeros((3, 2))),
        lambda: RBFNetwork(lengthscale="wide"),
        lambda: BSpline(degree=0),
        lambda: BSpline(smoothness=-1.0),
        lambda: BSpline(boundary=(2.0, 1.0)),
        lambda: BSpline(n_features=3).initialize(1),
    ],
)
def test_invalid_arguments(make):
    with pytest.raises(ValueError):
        make()


def test_linear_bias_is_true_or_false():
    with pytest.raises(TypeError, match="bias must be True or False, got 'x'"):
        Linear(bias="x")
    assert Linear(bias=np.False_).bias == np.False_


# every basis refuses a bad parameter at construction, naming it and the bad value (a bad seed
# used to fail at the first learn_one with NumPy's message, inside an E-DOEBE only at the end of
# its warm-up; a flag took any truthy value as True; a list kernel gave "unhashable type")
_SEEDED = [
    lambda seed: RandomFourierFeatures(n_frequencies=3, seed=seed),
    lambda seed: RBFNetwork(n_centres=3, seed=seed),
]


@pytest.mark.parametrize("make", _SEEDED, ids=["RandomFourierFeatures", "RBFNetwork"])
@pytest.mark.parametrize(
    "seed, error, message",
    [
        ("a", TypeError, "seed must be None or an integer, got str 'a'"),
        (1.5, TypeError, "seed must be None or an integer, got float 1.5"),
        (True, TypeError, "seed must be None or an integer, got bool True"),
        ([1, 2], TypeError, r"seed must be None or an integer, got list \[1, 2\]"),
        (-1, ValueError, "seed must be non-negative, got -1"),
        (np.int64(-3), ValueError, "seed must be non-negative, got "),
    ],
)
def test_bad_seed_is_refused_at_construction(make, seed, error, message):
    with pytest.raises(error, match=message):
        make(seed)


@pytest.mark.parametrize("make", _SEEDED, ids=["RandomFourierFeatures", "RBFNetwork"])
@pytest.mark.parametrize("seed", [None, 0, 7, 2**40, np.int64(3), np.uint32(5)])
def test_good_seed_is_accepted_and_survives_clone(make, seed):
    basis = make(seed)
    assert basis.seed is seed
    twin = basis.clone()
    assert twin.seed == seed
    Z = _data(5)
    if seed is not None:
        np.testing.assert_array_equal(basis.featurize(Z), twin.featurize(Z))


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda v: RandomFourierFeatures(kernel=v), "kernel"),
        (lambda v: RandomFourierFeatures(sampler=v), "sampler"),
        (lambda v: HilbertGP(kernel=v), "kernel"),
        (lambda v: spectral_density(1.0, kernel=v), "kernel"),
    ],
    ids=["RandomFourierFeatures-kernel", "RandomFourierFeatures-sampler", "HilbertGP-kernel",
         "spectral_density-kernel"],
)
@pytest.mark.parametrize("value", [["se"], ("mc",), "SE", "", None, 1, {"se": 1}])
def test_bad_choice_is_refused_with_its_name(make, name, value):
    with pytest.raises(ValueError, match=f"unknown {name} {re.escape(repr(value))}; choose one of"):
        make(value)


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda v: Linear(bias=v), "bias"),
        (lambda v: AdditivePolynomial(bias=v), "bias"),
        (lambda v: RandomFourierFeatures(optimize_frequencies=v), "optimize_frequencies"),
    ],
    ids=["Linear-bias", "AdditivePolynomial-bias", "RandomFourierFeatures-optimize_frequencies"],
)
@pytest.mark.parametrize("value", ["no", "", 0, 1, None, [True]])
def test_bad_flag_is_refused_with_its_name(make, name, value):
    message = f"{name} must be True or False, got {re.escape(repr(value))}"
    with pytest.raises(TypeError, match=message):
        make(value)


@pytest.mark.parametrize(
    "make",
    [
        lambda v: Linear(bias=v),
        lambda v: AdditivePolynomial(bias=v),
        lambda v: RandomFourierFeatures(n_frequencies=3, seed=0, optimize_frequencies=v),
    ],
    ids=["Linear", "AdditivePolynomial", "RandomFourierFeatures"],
)
@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_flags_take_python_and_numpy_booleans_and_survive_clone(make, value):
    basis = make(value)
    twin = basis.clone()
    Z = _data(5)
    np.testing.assert_array_equal(basis.featurize(Z), twin.featurize(Z))
    assert basis.n_outputs == twin.n_outputs


def test_a_bad_basis_seed_is_refused_before_an_edoebe_is_built():
    from river_doebe import EDOEBE

    with pytest.raises(TypeError, match="seed must be None or an integer, got str 'a'"):
        EDOEBE(families=[RandomFourierFeatures(10, seed="a")], n_warmup=30)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_default_bases_construct_and_clone(family):
    basis = family()
    twin = basis.clone()
    assert type(twin) is family
    assert twin._get_params() == basis._get_params()


# ------------------------------------------------------------------------- river conventions
# (every basis is checked with its _unit_test_params in test_estimators.py)
def test_check_estimator_after_with_hyper():
    """A tuned basis carries per-input parameters (frequencies, box, centres), so it needs the
    first sample to have all D features; river's check whose first samples lack some is skipped."""
    Z = _data(30, D=6)  # TrumpApproval, river's stream for transformer checks, has 6 features
    for basis in [
        RandomFourierFeatures(n_frequencies=3, seed=0, optimize_frequencies=True).initialize(6),
        HilbertGP(n_features=12).fit(Z),
        RBFNetwork(n_centres=3, seed=0).fit(Z),
        BSpline(n_features=30, smoothness=tuple(range(1, 7))).fit(Z),
    ]:
        tuned = basis.with_hyper(basis.get_hyper())
        for check in checks.yield_checks(tuned):
            if "check_disappearing_features" not in getattr(check, "__name__", ""):
                check(tuned.clone())


@pytest.mark.parametrize("basis", _fitted_examples(), ids=lambda b: type(b).__name__)
def test_pickle_keeps_state(basis):
    Z = _data(10, seed=6)
    restored = pickle.loads(pickle.dumps(basis))
    np.testing.assert_array_equal(restored.featurize(Z), basis.featurize(Z))


# ------------------------------------------------------------------------- transform_many
@pytest.mark.parametrize(
    "make",
    [
        lambda: Linear(),
        lambda: AdditivePolynomial(3),
        lambda: RandomFourierFeatures(5, seed=1),
        lambda: HilbertGP(8),
        lambda: RBFNetwork(4, seed=0),
        lambda: BSpline(8),
    ],
    ids=["linear", "poly", "rff", "hsgp", "rbf", "bspline"],
)
def test_transform_many_equals_transform_one_row_by_row(make):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(7, 2)), columns=["b", "a"], index=range(10, 17))
    one, many = make(), make()
    for x in frame.to_dict("records")[:4]:
        one.learn_one(x)
        many.learn_one(x)
    out = many.transform_many(frame)
    rows = [one.transform_one(x) for x in frame.to_dict("records")]
    assert list(out.columns) == list(rows[0]) and list(out.index) == list(frame.index)
    np.testing.assert_array_equal(out.to_numpy(), np.array([list(r.values()) for r in rows]))


def test_rbf_places_each_distinct_sample_once_and_pickles_do_not_carry_the_lookup():
    basis = RBFNetwork(n_centres=4, lengthscale=1.0)
    for x in ({"a": 0.0, "b": 1.0}, {"a": -0.0, "b": 1.0}, {"a": 0.0, "b": 1.0},
              {"a": 2.0, "b": 0.5}):
        basis.learn_one(x)
    assert basis.n_placed_ == 2  # (-0.0 is 0.0: the same centre)
    copy = pickle.loads(pickle.dumps(basis))
    assert pickle.dumps(copy) == pickle.dumps(basis)  # the lookup is a cache, not state
    for b in (basis, copy):
        for x in ({"a": 2.0, "b": 0.5}, {"a": 3.0, "b": 0.5}, {"a": -0.0, "b": 1.0}):
            b.learn_one(x)
    assert basis.n_placed_ == copy.n_placed_ == 3
    np.testing.assert_array_equal(basis.centres_, copy.centres_)


def test_online_centres_keep_the_engines_stacked_parameters_those_of_its_bases():
    from river_doebe import DOBE, EDOEBE
    from river_doebe.basis.base import stack_params

    model = EDOEBE(models=[DOBE(RBFNetwork(6, lengthscale=ls), var_eps=0.1)
                           for ls in (0.5, 1.0)], rw_variances=(1e-3,))
    rng = np.random.default_rng(0)
    for _ in range(12):
        x = {"a": float(rng.integers(0, 3)), "b": float(rng.integers(0, 2))}
        model.learn_one(x, x["a"] - x["b"])
        engine = model._model.model if hasattr(model._model, "model") else model._model
        for _, _, params, owners in engine.groups:
            expected = stack_params([engine.stack[k].basis._params() for k in owners])
            for got, want in zip(params, expected, strict=True):
                np.testing.assert_array_equal(got, want)
    assert not engine._observers  # every centre placed (6 distinct inputs)
