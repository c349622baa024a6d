"""The additive Bayesian P-splines: B-splines against SciPy, the whitened prior against the
P-spline precision, clamping outside the boundary, starts, growth policy, learners and warm-up.
(The generic checks of every basis, kernel against featurize, parallel twin, hyper_vjp against
finite differences, pickling, run on BSpline in test_basis.py.)"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import dicts
from scipy import interpolate

from river_doebe import DOBE, EDOEBE
from river_doebe.basis import BSpline, stack_params
from river_doebe.basis.bspline import penalty_eigen
from river_doebe.evidence import HyperLayout


def _data(n=40, D=3, seed=0, scale=1.0):
    return scale * np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n, D))


def _knots(lo, hi, n, p):
    K = n - p
    return lo + (hi - lo) * np.arange(-p, K + p + 1) / K


def _precision(n, order, lam, ridge):
    P = np.diff(np.eye(n), order, axis=0)
    return lam * P.T @ P + ridge * np.eye(n)


def _unwhitened(basis, Phi):
    """The B-splines behind the features: Phi_d W_d^{-1}, input by input."""
    n = basis._n
    return [Phi[:, d * n:(d + 1) * n] @ np.linalg.inv(basis._weights[d])
            for d in range(basis.n_inputs)]


@pytest.mark.parametrize("degree", [1, 2, 3, 4, 5])
def test_kernel_cox_de_boor_equals_scipy_design_matrix(degree):
    n, lo, hi = 11, -1.5, 2.0
    basis = BSpline(n_features=n, degree=degree, boundary=(lo, hi)).initialize(1)
    t = _knots(lo, hi, n, degree)
    # inside, on every knot, at both ends
    x = np.concatenate([np.linspace(lo, hi, 301), t[degree:n + 1]])
    Phi = np.array([basis.featurize_one(np.array([v])) for v in x])
    [B] = _unwhitened(basis, Phi)
    expected = interpolate.BSpline.design_matrix(x, t, degree).toarray()
    np.testing.assert_allclose(B, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(B.sum(axis=1), 1.0, rtol=1e-12)  # a partition of unity
    # B-splines of degree >= 1 reproduce straight lines through the Greville abscissae
    greville = np.array([t[j + 1:j + degree + 1].mean() for j in range(n)])
    np.testing.assert_allclose(B @ greville, x, rtol=0, atol=1e-12)


def test_features_are_the_whitened_p_spline_prior():
    Z = _data(30, D=2, scale=2.0)
    lam, ridge, order = (0.3, 50.0), 0.05, 2
    basis = BSpline(n_features=24, smoothness=lam, ridge=ridge, penalty_order=order).fit(Z)
    n, p = 12, 3
    Phi = basis.featurize(Z)
    K = np.zeros((len(Z), len(Z)))
    for d in range(2):
        lo, hi = basis.boundary_[d]
        B = interpolate.BSpline.design_matrix(Z[:, d], _knots(lo, hi, n, p), p).toarray()
        K += ridge * B @ np.linalg.inv(_precision(n, order, lam[d], ridge)) @ B.T
    np.testing.assert_allclose(Phi @ Phi.T, K, rtol=1e-10, atol=1e-12)
    # W_d is the symmetric square root of ridge * Q_d^{-1}
    for d in range(2):
        W = basis._weights[d]
        np.testing.assert_allclose(W, W.T, rtol=0, atol=1e-15)
        np.testing.assert_allclose(
            W @ W, ridge * np.linalg.inv(_precision(n, order, lam[d], ridge)), atol=1e-12
        )


@pytest.mark.parametrize("order", [1, 2, 3])
def test_penalty_null_space_is_the_low_degree_polynomials(order):
    n = 9
    s, V = penalty_eigen(n, order)
    assert np.all(s[:order] == 0.0) and np.all(s[order:] > 1e-8)
    np.testing.assert_allclose(V.T @ V, np.eye(n), atol=1e-12)
    P = np.diff(np.eye(n), order, axis=0)
    np.testing.assert_allclose(V @ np.diag(s) @ V.T, P.T @ P, atol=1e-12)
    # the polynomials of degree < order lie in span(V[:, :order])
    j = np.arange(n, dtype=float)
    null = V[:, :order]
    for k in range(order):
        poly = j**k
        np.testing.assert_allclose(null @ (null.T @ poly), poly, atol=1e-9)
    # the smoothness leaves them alone: their prior variance stays var_theta whatever lambda
    for lam in (1e-3, 1.0, 1e8):
        basis = BSpline(n_features=n, smoothness=lam, penalty_order=order, degree=1,
                        boundary=(0.0, 1.0)).initialize(1)
        np.testing.assert_allclose(basis._weights[0] @ null, null, atol=1e-9)


def test_features_are_clamped_outside_the_boundary_and_always_finite():
    basis = BSpline(n_features=16, smoothness=(2.0, 0.5), boundary=((-1.0, 1.0), (0.0, 5.0)))
    basis.initialize(2)
    ends = {
        (-1.0, 0.0): [(-1.0 - 1e-9, 0.0), (-7.0, -3.0), (-1e300, -1.7e308)],
        (1.0, 5.0): [(1.0 + 1e-12, 5.0 + 1e-12), (8.0, 1e10), (1.7e308, 1.7e308)],
    }
    for edge, outside in ends.items():
        at_edge = basis.featurize_one(np.array(edge))
        for z in outside:
            z = np.array(z)
            np.testing.assert_array_equal(basis.featurize_one(z), at_edge)
            np.testing.assert_allclose(basis.featurize(z[None])[0], at_edge, rtol=1e-13,
                                       atol=1e-15)
    rng = np.random.default_rng(0)
    wild = rng.standard_normal((200, 2)) * 10.0 ** rng.integers(-300, 308, size=(200, 2))
    Phi = basis.featurize(wild)
    assert np.all(np.isfinite(Phi))
    np.testing.assert_allclose(Phi, [basis.featurize_one(z) for z in wild], rtol=1e-12,
                               atol=1e-13)
    # the prior variance never exceeds that of the ridge alone (at most 1 per input)
    assert np.all(np.sum(Phi**2, axis=1) <= 2.0 + 1e-12)


def test_serial_and_parallel_kernels_give_the_same_numbers():
    Z = _data(60)
    members = [BSpline(n_features=30, smoothness=(0.1, 1.0, 10.0)).fit(Z),
               BSpline(n_features=45, degree=2, penalty_order=3).fit(Z),
               BSpline(n_features=12, degree=1, smoothness=100.0, boundary=(-0.5, 0.5))]
    for m in members:
        m.initialize(3)
    stacked = stack_params([m._params() for m in members])
    F = max(m.n_outputs for m in members)
    rows = np.array([1, 2, 0], dtype=np.int64)
    Zt = _data(17, seed=2, scale=1.7)
    out = []
    for kernel in (BSpline._kernel, BSpline._kernel_parallel):
        Phi = np.full((3, len(Zt), F), np.nan)
        kernel(Zt, Phi, rows, *stacked)
        out.append(Phi)
    np.testing.assert_array_equal(out[0], out[1])
    for k, m in enumerate(members):
        np.testing.assert_allclose(out[0][rows[k], :, : m.n_outputs], m.featurize(Zt),
                                   rtol=1e-12, atol=1e-13)


def test_boundaries_fitted_given_or_assumed():
    Z = np.column_stack([np.linspace(-4.0, 2.0, 10), np.full(10, 3.0), np.linspace(0, 1, 10)])
    fitted = BSpline(n_features=15, boundary_factor=2.0).fit(Z)
    np.testing.assert_allclose(fitted.boundary_, [[-7.0, 5.0], [1.0, 5.0], [-0.5, 1.5]])
    unfitted = BSpline(n_features=15, boundary_factor=2.0).initialize(3)
    np.testing.assert_array_equal(unfitted.boundary_, [[-6.0, 6.0]] * 3)
    pairs = ((0.0, 1.0), (-2.0, 2.0), (5.0, 6.0))
    explicit = BSpline(n_features=15, boundary=pairs).fit(Z)
    np.testing.assert_array_equal(explicit.boundary_, pairs)
    shared = BSpline(n_features=15, boundary=(-1.0, 3.0)).fit(Z)
    np.testing.assert_array_equal(shared.boundary_, [[-1.0, 3.0]] * 3)
    # with_hyper keeps the fitted box, so a clone of the tuned basis has it too
    tuned = fitted.with_hyper(fitted.get_hyper() + 1.0)
    assert tuned.boundary == tuple(tuple(r) for r in fitted.boundary_.tolist())
    np.testing.assert_array_equal(tuned.clone().initialize(3).boundary_, fitted.boundary_)
    assert tuned.smoothness == pytest.approx(math.e)


def test_the_starts_are_the_spline_s_own():
    Z = _data(200, D=2, scale=np.array([1.0, 4.0]))
    basis = BSpline(n_features=40, smoothness=(1.0, 1.0), ridge=0.01).fit(Z)
    K = basis._n - 3
    layout = HyperLayout.from_basis(basis)
    starts = []
    for s in (0.1, 1.0, 10.0):
        psi = basis.hyper_start(Z, s)
        span = s * np.ptp(Z, axis=0) / np.diff(basis.boundary_, axis=1)[:, 0] * K
        np.testing.assert_allclose(psi, np.log(0.01 * span**3), rtol=1e-12)
        u0 = layout.start(basis, Z, 1.0, 0.25, s)
        np.testing.assert_array_equal(u0[2:], psi)  # the layout starts where the spline says
        starts.append(psi)
    assert np.all(np.diff(np.array(starts), axis=0) > 0)  # wider starts, smoother splines
    shared = BSpline(n_features=40).fit(Z)
    assert shared.hyper_start(Z, 1.0).shape == (1,)


def test_a_new_input_is_taken_with_its_component_pinned_at_0():
    """A spline's features at 0 are not 0: a new input's are shifted so that they are, and the
    past samples keep theirs (exactness is tested for every basis in test_schema.py)."""
    assert BSpline().can_grow
    assert np.any(BSpline(n_features=20).initialize(1).featurize_one(np.zeros(1)) != 0.0)
    model = DOBE(BSpline(n_features=20))
    model.learn_one({"a": 0.1, "b": 0.2}, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.learn_one({"a": 0.1, "b": 0.2, "c": 3.0}, 1.0)
    assert model.feature_names_in_ == ("a", "b", "c")
    basis = model.basis_
    assert basis.n_outputs == 30 and not basis.featurize_one(np.array([0.1, 0.2, 0.0]))[20:].any()
    with pytest.raises(RuntimeError, match="grew from 2 to 3"):
        basis.with_hyper(basis.get_hyper())


def _stream(n=400, D=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, D))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    return X, y


def test_static_learner_equals_the_batch_posterior_row_by_row_and_in_blocks():
    X, y = _stream()
    xs = dicts(X)
    var_theta, var_eps = 2.0, 0.05
    make = lambda: DOBE(BSpline(n_features=24, smoothness=(0.5, 20.0), boundary=(-2.0, 2.0)),  # noqa: E731
                        var_theta=var_theta, var_eps=var_eps)
    rows, block = make(), make()
    preds = []
    for x, t in zip(xs, y):
        preds.append(rows.predict_one(x, with_dist=True))
        rows.learn_one(x, t)
    many = block.predict_learn_many(xs, y.tolist(), with_dist=True)
    assert [(d.mu, d.sigma) for d in many] == [(d.mu, d.sigma) for d in preds]

    Phi = rows.basis_.featurize(X)
    cov = np.linalg.inv(Phi.T @ Phi / var_eps + np.eye(Phi.shape[1]) / var_theta)
    mean = cov @ Phi.T @ y / var_eps
    for model in (rows, block):
        mu, Sigma = model.posterior
        np.testing.assert_allclose(mu, mean, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(Sigma, cov, rtol=1e-7, atol=1e-11)


def test_edoebe_warms_up_with_the_spline_family():
    X, y = _stream(n=260, D=2, seed=3)
    xs = [{"a": float(r[0]), "b": float(r[1])} for r in X]
    model = EDOEBE(families=("hsgp", "rff", "rbf", "bspline"), n_warmup=150, n_samples=2,
                   starts=(0.1, 1.0), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, t in zip(xs, y):
            model.predict_one(x)
            model.learn_one(x, t)
    splines = [m for m in model._engine.members if isinstance(m.basis, BSpline)]
    assert splines, "the warm-up kept no spline member"
    # the two starts gave two smoothness modes, each the first of its group
    assert len({tuple(m.basis.get_hyper()) for m in splines if m.is_mode}) == 2
    dist = model.predict_one(xs[0], with_dist=True)
    assert math.isfinite(dist.mu) and math.isfinite(dist.sigma)
    alone = EDOEBE(families=("bspline",), n_warmup=150, n_samples=2, starts=(0.1, 1.0), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, t in zip(xs[:151], y[:151]):
            alone.learn_one(x, t)
    # a family's members do not depend on the other families of the ensemble
    assert [tuple(m.basis.get_hyper()) for m in alone._engine.members if m.is_mode] == [
        tuple(m.basis.get_hyper()) for m in splines if m.is_mode
    ]


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: BSpline(n_features=0), "n_features"),
        (lambda: BSpline(degree=0), "degree"),
        (lambda: BSpline(degree=2.5), "degree"),
        (lambda: BSpline(penalty_order=0), "penalty_order"),
        (lambda: BSpline(smoothness=0.0), "smoothness"),
        (lambda: BSpline(smoothness=(1.0, -2.0)), "smoothness"),
        (lambda: BSpline(ridge=0.0), "ridge"),
        (lambda: BSpline(ridge=float("nan")), "ridge"),
        (lambda: BSpline(boundary_factor=-1.0), "boundary_factor"),
        (lambda: BSpline(boundary=(1.0, 1.0)), "boundary"),
        (lambda: BSpline(boundary=(0.0, float("inf"))), "boundary"),
        (lambda: BSpline(boundary="wide"), "boundary"),
        (lambda: BSpline(boundary=((0.0, 1.0), (0.0, 1.0))).initialize(3), "boundary"),
        (lambda: BSpline(n_features=9).initialize(3), "n_features=9"),
        # too few for a single input: refused at construction, whatever the inputs
        (lambda: BSpline(n_features=2), "n_features=2 is too few"),
        (lambda: BSpline(n_features=3, degree=3), "n_features=3 is too few"),
        (lambda: BSpline(n_features=4, degree=1, penalty_order=4).initialize(1), "penalty_order"),
        (lambda: BSpline(smoothness=(1.0, 2.0)).initialize(3), "smoothness"),
    ],
)
def test_bad_parameters_are_refused_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()
