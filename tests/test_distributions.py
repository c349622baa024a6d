"""The ensembles' predictive distribution: a Gaussian mixture with river's distribution face."""

import copy
import itertools
import math
import pickle

import numpy as np
import pytest
from river import proba
from scipy import integrate, stats

from river_doebe import DOBE, DOEBE, EDOEBE, SDOEBE, datasets, metrics
from river_doebe.basis import Linear, RandomFourierFeatures
from river_doebe.distributions import GaussianMixture, PredictiveGaussian, affine, gaussian


def _mix():
    return GaussianMixture([0.2, 0.5, 0.3], [-2.0, 0.5, 3.0], [0.5, 1.5, 0.25], seed=3)


def test_density_cdf_and_moments_are_the_mixtures():
    p = _mix()
    w, m, v = p.weights, p.means, p.variances
    for y in (-5.0, -2.0, 0.0, 0.7, 3.0, 9.0):
        direct = sum(wk * stats.norm.pdf(y, mk, math.sqrt(vk)) for wk, mk, vk in zip(w, m, v))
        assert p(y) == pytest.approx(direct, rel=1e-12)
        assert p.log_pdf(y) == pytest.approx(math.log(direct), rel=1e-12)
        cdf = sum(wk * stats.norm.cdf(y, mk, math.sqrt(vk)) for wk, mk, vk in zip(w, m, v))
        assert p.cdf(y) == pytest.approx(cdf, rel=1e-12, abs=1e-300)
    assert integrate.quad(p, -np.inf, np.inf)[0] == pytest.approx(1.0, rel=1e-9)
    mean = integrate.quad(lambda y: y * p(y), -np.inf, np.inf)[0]
    second = integrate.quad(lambda y: (y - mean) ** 2 * p(y), -np.inf, np.inf)[0]
    assert p.mu == pytest.approx(mean, rel=1e-9)
    assert p.sigma == pytest.approx(math.sqrt(second), rel=1e-9)
    g = p.gaussian
    assert isinstance(g, proba.Gaussian)
    assert (g.mu, g.sigma) == pytest.approx((p.mu, p.sigma), rel=1e-12)


def test_log_pdf_far_in_the_tails_stays_finite():
    p = GaussianMixture([0.5, 0.5], [0.0, 1.0], [1e-6, 1e-6])
    assert math.isfinite(p.log_pdf(1e3)) and p.log_pdf(1e3) < -1e11
    assert p(1e3) == 0.0


@pytest.mark.filterwarnings("error")  # (no overflow warning: the values are the limits)
def test_points_beyond_float64s_square_have_density_zero_and_cdf_zero_or_one():
    narrow = GaussianMixture([0.5, 0.5], [0.0, 1.0], [1.0, 1e-300])
    tiny = GaussianMixture([1.0, 5e-324], [0.0, 1.0], [1.0, 1.0])
    g = gaussian(0.3, 0.5)
    for dist in (narrow, tiny, g):
        for x in (-1e300, -1e200, 1e200, 1e300):
            assert dist.log_pdf(x) == -math.inf
            assert dist(x) == 0.0
            assert dist.cdf(x) == (1.0 if x > 0 else 0.0)
    assert narrow.log_pdf(-1e10) == pytest.approx(-0.5 * 1e20 - 0.5 * math.log(2 * math.pi)
                                                   + math.log(0.5), rel=1e-12)
    assert narrow.cdf(0.5) == pytest.approx(0.5 * stats.norm.cdf(0.5), rel=1e-12)


def test_log_densities_at_the_edge_of_float64_stay_finite_where_they_are():
    # a standard deviation near 8e153: the residual squares beyond float64, its square in
    # units of the variance does not
    var = 7.986e153 ** 2
    exact = stats.norm.logpdf(0.0, 1.341e154, math.sqrt(var))
    assert gaussian(1.341e154, var).log_pdf(0.0) == pytest.approx(exact, rel=1e-12)
    mix = GaussianMixture([1.0], [1.341e154], [var])
    assert mix.log_pdf(0.0) == pytest.approx(exact, rel=1e-12)
    from river_doebe.kernels.weights import mixture_log_density

    assert mixture_log_density(np.zeros(1), np.array([1.341e154]), np.array([var]),
                               0.0) == pytest.approx(exact, rel=1e-12)


def test_a_mixture_s_cdf_never_passes_one():
    # weights that sum to 1 only to rounding (the engine's: normalised in the log domain)
    w = np.full(20, 1.0 / 20.0)
    assert w.sum() > 1.0
    mix = GaussianMixture._from_moments(w, np.linspace(-1, 1, 20), np.ones(20), 0.0, 1.0)
    assert mix.cdf(50.0) == 1.0 and mix.cdf(-50.0) == 0.0


def test_samples_follow_the_mixture():
    p = _mix()
    draws = np.array([p.sample() for _ in range(40_000)])
    assert draws.mean() == pytest.approx(p.mu, abs=4 * p.sigma / 200)
    assert draws.std() == pytest.approx(p.sigma, rel=0.03)
    again = _mix()
    assert [again.sample() for _ in range(5)] == draws[:5].tolist()


def test_mode_is_a_maximum_of_the_density():
    single = GaussianMixture([1.0], [1.5], [2.0])
    assert single.mode == pytest.approx(1.5)
    p = _mix()
    # the density on a fine grid, computed here from the components (p(y) equals it: above)
    grid = np.linspace(-6, 6, 200_001)
    density = stats.norm.pdf(grid[:, None], p.means, np.sqrt(p.variances)) @ p.weights
    best = grid[np.argmax(density)]
    assert p.mode == pytest.approx(best, abs=1e-4)
    # and a local maximum of p itself, not only near the grid's
    assert p(p.mode) >= max(p(p.mode - 1e-6), p(p.mode + 1e-6))


def test_zero_weights_are_dropped_and_bad_components_refused():
    p = GaussianMixture([0.0, 2.0, 2.0], [5.0, 0.0, 1.0], [1.0, 1.0, 1.0])
    assert p.n_components == 2
    np.testing.assert_allclose(p.weights, [0.5, 0.5])
    for bad in (
        ([], [], []),
        ([1.0], [0.0, 1.0], [1.0, 1.0]),
        ([0.0], [0.0], [1.0]),
        ([-1.0, 2.0], [0.0, 1.0], [1.0, 1.0]),
        ([1.0], [np.nan], [1.0]),
        ([1.0], [0.0], [0.0]),
        ([1.0], [0.0], [np.inf]),
    ):
        with pytest.raises(ValueError):
            GaussianMixture(*bad)
    with pytest.raises(NotImplementedError):
        p.update(1.0)
    with pytest.raises(NotImplementedError):
        p.revert(1.0)


def test_pickle_and_clone():
    p = _mix()
    q = pickle.loads(pickle.dumps(p))
    assert q.log_pdf(0.3) == p.log_pdf(0.3) and (q.mu, q.sigma) == (p.mu, p.sigma)
    c = p.clone()
    assert c.log_pdf(0.3) == p.log_pdf(0.3)
    assert repr(p).startswith("GaussianMixture(3 components, μ=")


def _rff_members():
    return [
        DOBE(RandomFourierFeatures(10, lengthscale=ls, seed=1), var_eps=0.1, var_rw=rw)
        for ls in (0.5, 2.0)
        for rw in (0.0, 1e-3)
    ]


@pytest.mark.parametrize(
    "make",
    [
        lambda: DOEBE(_rff_members()),
        lambda: SDOEBE(_rff_members(), transition=np.full((4, 4), 0.25)),
        # (the mixture itself: EDOEBE() recalibrates it by default, tests/test_recalibrate.py)
        lambda: EDOEBE(models=[DOBE(Linear(), var_eps=0.1), DOBE(Linear(), var_eps=1.0)],
                       recalibrate=False),
        lambda: EDOEBE(n_warmup=60, n_samples=2, seed=2, families=("rff", "linear"),
                       recalibrate=False),
    ],
)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_an_ensembles_distribution_is_its_exact_predictive(make):
    model = make()
    for i, (x, y) in enumerate(itertools.islice(datasets.Drift(n_samples=300, seed=4), 150)):
        dist = model.predict_one(x, with_dist=True)
        assert isinstance(dist, GaussianMixture)
        # the moments are bit for bit the point prediction and its variance
        assert dist.mu == model.predict_one(x)
        assert dist.log_pdf(y) == pytest.approx(model.log_density_one(x, y), rel=1e-10, abs=1e-10)
        if i > 100 and dist.n_components > 1:
            means, variances, w = model.member_predictions(x)
            live = w > 0
            np.testing.assert_allclose(np.sort(dist.means), np.sort(means[live]), rtol=1e-12)
            assert dist.weights.sum() == pytest.approx(1.0)
        model.learn_one(x, y)
    # a distribution handed out earlier is not changed by later learning
    before = copy.deepcopy(dist)
    model.learn_one(x, y)
    assert dist.log_pdf(0.1) == before.log_pdf(0.1)


def test_a_single_learner_still_gives_a_river_gaussian():
    model = DOBE(Linear(), var_eps=0.1)
    model.learn_one({"x": 1.0}, 2.0)
    assert isinstance(model.predict_one({"x": 1.0}, with_dist=True), proba.Gaussian)


def test_the_metric_scores_the_mixture_or_its_moment_match():
    mix = GaussianMixture([0.5, 0.5], [-1.0, 1.0], [0.01, 0.01])
    exact, matched = metrics.PLL(), metrics.PLL(moment_matched=True)
    exact.update(1.0, mix)
    matched.update(1.0, mix)
    assert exact.get() == pytest.approx(mix.log_pdf(1.0))
    assert matched.get() == pytest.approx(stats.norm.logpdf(1.0, mix.mu, mix.sigma))
    assert exact.get() > matched.get() + 2
    # a Gaussian, or a (mean, var) tuple, scores the same either way
    g = gaussian(0.3, 0.5)
    for pred in (g, (0.3, 0.5)):
        a, b = metrics.PLL(), metrics.PLL(moment_matched=True)
        a.update(1.0, pred)
        b.update(1.0, pred)
        assert a.get() == pytest.approx(b.get(), rel=1e-12)
    matched.revert(1.0, mix)
    assert matched.get() == 0.0


# ------------------------------------------------------------------ the affine map y -> a y + b

_MAPS = [(2.5, -1.0), (0.01, 3.0), (40.0, 1e3), (1.0, 0.0)]


@pytest.mark.parametrize("a, b", _MAPS)
def test_affine_gaussian_is_the_change_of_variables(a, b):
    g = proba.Gaussian._from_state(1, 0.3, 0.7, 0)
    h = affine(g, a, b)
    assert isinstance(h, proba.Gaussian)
    assert h.mu == g.mu * a + b
    assert h.sigma == pytest.approx(a * g.sigma, rel=1e-15)
    for x in (-4.0, -0.5, 0.3, 1.1, 5.0):
        y = a * x + b
        # log p_Y(y) = log p_X((y - b) / a) - log a, with p_X from scipy
        expected = stats.norm.logpdf((y - b) / a, 0.3, math.sqrt(0.7)) - math.log(a)
        assert h.log_pdf(y) == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert h(y) == pytest.approx(math.exp(expected), rel=1e-12)
        assert h.cdf(y) == pytest.approx(stats.norm.cdf(x, 0.3, math.sqrt(0.7)), rel=1e-12)
    # the input is left as it was
    assert (g.mu, g.sigma) == (0.3, math.sqrt(0.7))


@pytest.mark.parametrize("a, b", _MAPS)
def test_affine_mixture_is_the_change_of_variables(a, b):
    p = _mix()
    q = affine(p, a, b)
    assert isinstance(q, GaussianMixture)
    np.testing.assert_array_equal(q.weights, p.weights)
    np.testing.assert_allclose(q.means, a * p.means + b, rtol=1e-15)
    np.testing.assert_allclose(q.variances, a * a * p.variances, rtol=1e-15)
    sd = np.sqrt(p.variances)
    for x in (-5.0, -2.0, 0.0, 0.7, 3.0, 9.0):
        y = a * x + b
        density = sum(w * stats.norm.pdf(x, m, s) for w, m, s in zip(p.weights, p.means, sd))
        assert q.log_pdf(y) == pytest.approx(math.log(density) - math.log(a), rel=1e-12)
        assert q(y) == pytest.approx(density / a, rel=1e-12)
        cdf = sum(w * stats.norm.cdf(x, m, s) for w, m, s in zip(p.weights, p.means, sd))
        assert q.cdf(y) == pytest.approx(cdf, rel=1e-12)
    # the moments are the mapped ones, the mean bit for bit; and they are the moments of the
    # mapped density
    assert q.mu == p.mu * a + b
    assert q.sigma == pytest.approx(a * p.sigma, rel=1e-15)
    lo, hi = b - 40 * a, b + 40 * a
    mean = integrate.quad(lambda y: y * q(y), lo, hi, points=[q.mu], limit=200)[0]
    second = integrate.quad(lambda y: (y - mean) ** 2 * q(y), lo, hi, points=[q.mu], limit=200)[0]
    assert mean == pytest.approx(q.mu, rel=1e-9, abs=1e-9 * a)
    assert math.sqrt(second) == pytest.approx(q.sigma, rel=1e-9)
    assert q.mode == pytest.approx(a * p.mode + b, rel=1e-9, abs=1e-9 * a)
    # the seed of the sampler is kept, so the mapped samples are the mapped samples
    r = _mix()
    draws = [q.sample() for _ in range(5)]
    np.testing.assert_allclose(draws, [a * r.sample() + b for _ in range(5)], rtol=1e-12)
    assert q.n_components == p.n_components and q.gaussian.mu == q.mu


def test_affine_maps_a_mixture_whose_moments_came_from_the_engine():
    # the engine's mixtures carry their moments; the mapped mean is computed from them
    p = GaussianMixture._from_moments([0.4, 0.6], [1.0, 2.0], [0.5, 0.25], 1.6, 0.54)
    q = affine(p, 3.0, 0.1)
    assert q.mu == 1.6 * 3.0 + 0.1
    assert q.sigma == pytest.approx(3.0 * math.sqrt(0.54), rel=1e-15)
    # and composing with the inverse map gives the distribution back
    back = affine(q, 1 / 3.0, -0.1 / 3.0)
    np.testing.assert_allclose(back.means, p.means, rtol=1e-15)
    np.testing.assert_allclose(back.variances, p.variances, rtol=1e-15)
    assert back.mu == pytest.approx(p.mu, rel=1e-15)


def test_affine_keeps_a_point_mass_a_point_mass():
    h = affine(proba.Gaussian._from_state(1, 2.0, 0.0, 0), 3.0, 1.0)
    assert (h.mu, h.sigma) == (7.0, 0.0)
    assert h.log_pdf(7.0) == -math.inf


def test_affine_refuses_bad_maps_and_other_distributions():
    g = proba.Gaussian._from_state(1, 0.0, 1.0, 0)
    for scale in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="scale must be positive"):
            affine(g, scale, 0.0)
    for shift in (math.nan, -math.inf):
        with pytest.raises(ValueError, match="shift must be finite"):
            affine(_mix(), 1.0, shift)
    with pytest.raises(ValueError, match="overflow"):
        affine(_mix(), 1e200, 0.0)
    with pytest.raises(ValueError, match="underflow"):
        affine(g, 1e-200, 0.0)
    for other in (1.5, (0.0, 1.0), proba.Multinomial(["a", "b"])):
        with pytest.raises(TypeError, match="affine maps"):
            affine(other, 1.0, 0.0)


# --------------------------------------------------------------------------- gaussian()


def test_gaussian_is_river_s_gaussian_with_that_mean_and_variance():
    g = gaussian(0.3, 0.5)
    assert isinstance(g, proba.Gaussian) and isinstance(g, PredictiveGaussian)
    assert g.mu == 0.3 and g.sigma**2 == pytest.approx(0.5, rel=1e-15)
    assert g.n_samples == 1 and g.mode == 0.3
    assert g(1.0) == pytest.approx(stats.norm.pdf(1.0, 0.3, math.sqrt(0.5)), rel=1e-12)
    assert g.cdf(1.0) == pytest.approx(stats.norm.cdf(1.0, 0.3, math.sqrt(0.5)), rel=1e-12)
    # the same state as river's own constructor (positional: the variance is `sig` in 0.22)
    river_made = proba.Gaussian._from_state(1, 0.3, 0.5, 0)
    assert (g.mu, g.sigma, g(0.9)) == (river_made.mu, river_made.sigma, river_made(0.9))
    zero = gaussian(1.0, 0.0)
    assert zero.sigma == 0.0 and zero(1.0) == 0.0
    for mu, var in ((0.0, -1.0), (0.0, math.nan), (0.0, math.inf), (math.nan, 1.0),
                    (math.inf, 1.0)):
        with pytest.raises(ValueError, match="mu must be finite|var must be finite"):
            gaussian(mu, var)


def test_gaussian_samples_pickles_and_clones_like_river_s():
    g = gaussian(2.0, 9.0)
    g.seed = 7
    draws = np.array([g.sample() for _ in range(20_000)])
    assert draws.mean() == pytest.approx(2.0, abs=0.1) and draws.std() == pytest.approx(3.0, 0.03)
    again = gaussian(2.0, 9.0)
    again.seed = 7
    assert [again.sample() for _ in range(3)] == draws[:3].tolist()
    restored = pickle.loads(pickle.dumps(g))
    assert (restored.mu, restored.sigma) == (g.mu, g.sigma)
    assert restored.sample() == g.sample()  # the generator's state travels too
    fresh = g.clone()  # river's clone: a new, empty Gaussian of the same class
    assert isinstance(fresh, PredictiveGaussian) and fresh.n_samples == 0
    fresh.update(1.0)
    fresh.update(3.0)
    assert fresh.mu == 2.0


def test_a_learner_predicts_a_gaussian_built_by_the_helper():
    model = DOBE(Linear(), var_eps=0.1)
    for x, y in itertools.islice(datasets.Drift(n_samples=50, seed=1), 50):
        model.learn_one(x, y)
    x = {"x0": 0.2, "x1": -0.4}
    dist = model.predict_one(x, with_dist=True)
    assert type(dist) is PredictiveGaussian
    assert dist.mu == model.predict_one(x)


@pytest.mark.parametrize(
    "dist", [gaussian(1.0, 4.0), GaussianMixture([0.5, 0.5], [0.0, 2.0], [1.0, 1.0])],
    ids=["gaussian", "mixture"],
)
@pytest.mark.parametrize(
    "op",
    [
        lambda d: 3.0 - d, lambda d: d - 3.0, lambda d: d + 1, lambda d: 1 + d,
        lambda d: 2 * d, lambda d: d / 2, lambda d: abs(d), lambda d: -d, lambda d: float(d),
        lambda d: d**2,
    ],
)
def test_a_predictive_distribution_is_not_a_number(dist, op):
    with pytest.raises(TypeError, match=r"not a number.*PredictiveLogLikelihood\(\) \+ MAE\(\)"):
        op(dist)


def test_gaussian_log_pdf_on_every_river_version():
    g = gaussian(0.3, 0.5)
    for y in (-2.0, 0.3, 1.7):
        assert g.log_pdf(y) == pytest.approx(stats.norm.logpdf(y, 0.3, math.sqrt(0.5)), rel=1e-13)
        if hasattr(proba.Gaussian, "log_pdf"):  # where river has one: bit for bit the same
            assert g.log_pdf(y) == proba.Gaussian._from_state(1, 0.3, 0.5, 0).log_pdf(y)
    assert gaussian(1.0, 0.0).log_pdf(1.0) == -math.inf
