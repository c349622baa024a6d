"""Calibration: the CRPS against numerical integration of its definition, its properness by
simulation, the central-interval coverage against quantiles, and both metrics on streams through
`progressive_scores` (one learner, an E-DOEBE's mixture, river's Bayesian linear regression)."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from river import linear_model, preprocessing
from river import metrics as river_metrics
from scipy import integrate, optimize, stats
from scipy.special import ndtr

from river_doebe import DOBE, EDOEBE, calibration, datasets, metrics
from river_doebe.basis import HilbertGP, RandomFourierFeatures
from river_doebe.distributions import GaussianMixture, affine, gaussian
from river_doebe.evaluate import WithDist, progressive_scores

# ---------------------------------------------------------------------------------------------
# The reference: the CRPS's definition, integrated by scipy
# ---------------------------------------------------------------------------------------------


def _reference_crps(weights, means, sds, y) -> float:
    """``int (F(z) - 1[z >= y])^2 dz`` by quadrature, with scipy's normal CDF and survival
    function (``1 - F`` right of ``y``, computed as such: ``ndtr`` of minus the z-score), on
    pieces cut at ``y`` and around every component, so that no piece hides a component far
    narrower than itself. The integration runs over ``u = z - y``: near ``z = 1e8`` the floats
    are 1.5e-8 apart, too coarse for a component 1e-3 wide."""
    w, s = (np.asarray(a, dtype=float) for a in (weights, sds))
    m = np.asarray(means, dtype=float) - y
    y = 0.0

    # scipy's normal CDF and survival function are ndtr(+-(z - m) / s); called directly, without
    # the per-call overhead of scipy.stats
    def below(z):
        return float(w @ ndtr((z - m) / s)) ** 2

    def above(z):
        return float(w @ ndtr((m - z) / s)) ** 2

    cuts = {y, *(m - 40 * s), *(m + 40 * s)}
    for k in (-8, -4, -2, -1, 0, 1, 2, 4, 8):
        cuts.update(m + k * s)
    cuts = sorted(cuts)
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:]):
        if b > a:
            f = below if b <= y else above
            total += integrate.quad(f, a, b, epsabs=0.0, epsrel=1e-11, limit=200)[0]
    return total


GAUSSIANS = [
    (0.0, 1.0, 0.0),
    (3.0, 0.5, -1.0),
    (-2.0, 1.0, 40.0),  # far in the tail: the score is nearly the absolute error
    (1e8, 1e-3, 1e8 + 2e-3),  # a narrow predictive far from 0
    (0.0, 1e6, 3e6),  # a very wide one
    (5.0, 1e-9, 5.0 + 3e-9),  # a very narrow one
]


@pytest.mark.parametrize(("mu", "sigma", "y"), GAUSSIANS)
def test_gaussian_crps_equals_the_integral_of_its_definition(mu, sigma, y):
    expected = _reference_crps([1.0], [mu], [sigma], y)
    assert calibration.crps_gaussian(mu, sigma, y) == pytest.approx(expected, rel=1e-8)
    assert calibration.crps(gaussian(mu, sigma**2), y) == pytest.approx(expected, rel=1e-8)
    # the tuple form, and the mixture form of the same Gaussian
    assert calibration.crps((mu, sigma**2), y) == pytest.approx(expected, rel=1e-8)
    one = GaussianMixture([1.0], [mu], [sigma**2])
    assert calibration.crps(one, y) == pytest.approx(expected, rel=1e-8)


def _random_mixture(rng, k, spread=3.0, scales=(0.2, 2.0)):
    w = rng.dirichlet(np.ones(k))
    m = rng.normal(scale=spread, size=k)
    s = np.exp(rng.uniform(np.log(scales[0]), np.log(scales[1]), size=k))
    return w, m, s


MIXTURES = {
    "two": ([0.75, 0.25], [0.0, 4.0], [1.0, 1.0]),
    "five": _random_mixture(np.random.default_rng(1), 5),
    "thirty": _random_mixture(np.random.default_rng(2), 30),
    # components of scales 1e-4 to 1e3 side by side
    "scales": ([0.3, 0.3, 0.4], [0.0, 1.0, 50.0], [1e-4, 1.0, 1e3]),
    # narrow components far apart, far from 0
    "far": ([0.5, 0.5], [1e6, 1e6 + 10.0], [1e-3, 2e-3]),
    # a heavy component with tiny weight
    "tiny weight": ([1.0 - 1e-9, 1e-9], [0.0, 0.0], [1.0, 1e4]),
}


@pytest.mark.parametrize("name", list(MIXTURES))
def test_mixture_crps_equals_the_integral_of_its_definition(name):
    w, m, s = (np.asarray(a, dtype=float) for a in MIXTURES[name])
    mixture = GaussianMixture(w, m, s**2)
    centre, width = float(w @ m), float(np.max(s) + np.ptp(m))
    for y in (centre, centre + 0.3 * width, centre - 2.0 * width, float(m[0])):
        expected = _reference_crps(w, m, s, y)
        assert calibration.crps(mixture, y) == pytest.approx(expected, rel=1e-8, abs=1e-12)


def test_crps_identities():
    p = GaussianMixture([0.2, 0.5, 0.3], [-1.0, 0.5, 3.0], [0.5, 1.0, 4.0])
    for y in (-3.0, 0.0, 2.5):
        # equivariance under an affine map of the target: the score is in the target's units
        q = affine(p, scale=7.0, shift=-3.0)
        assert calibration.crps(q, 7.0 * y - 3.0) == pytest.approx(
            7.0 * calibration.crps(p, y), rel=1e-12
        )
        # identical components are one Gaussian
        same = GaussianMixture([0.1, 0.9], [1.0, 1.0], [2.0, 2.0])
        assert calibration.crps(same, y) == pytest.approx(
            calibration.crps_gaussian(1.0, math.sqrt(2.0), y), rel=1e-12
        )
    # a point mass scores the absolute error, the limit of narrower and narrower Gaussians
    assert calibration.crps(gaussian(1.0, 0.0), 3.5) == 2.5
    assert calibration.crps(gaussian(1.0, 1e-20), 3.5) == pytest.approx(2.5, rel=1e-9)
    # far from every component: E|X - y| - sigma / sqrt(pi) for a Gaussian
    assert calibration.crps_gaussian(0.0, 1.0, 1e3) == pytest.approx(1e3 - 1 / math.sqrt(math.pi))


def test_components_without_weight_are_skipped():
    """An engine-built mixture may hold a member whose weight is exactly 0; it adds nothing
    (here its variance is even nonsensical), and the score is the mixture's without it."""
    kept = GaussianMixture([0.4, 0.6], [0.0, 2.0], [1.0, 0.5])
    padded = GaussianMixture._from_moments([0.4, 0.0, 0.6], [0.0, 9.0, 2.0], [1.0, -1.0, 0.5],
                                           kept.mu, kept.sigma**2)
    for y in (-1.0, 1.0, 5.0):
        assert calibration.crps(padded, y) == calibration.crps(kept, y)
        assert calibration.cdf_sf(padded, y) == calibration.cdf_sf(kept, y)


@pytest.mark.parametrize(
    ("true", "others"),
    [
        (([1.0], [0.0], [1.0]),
         {"shifted": ([1.0], [0.5], [1.0]), "wider": ([1.0], [0.0], [1.5]),
          "narrower": ([1.0], [0.0], [0.7])}),
        (([0.7, 0.3], [0.0, 3.0], [1.0, 0.5]),
         {"shifted": ([0.7, 0.3], [0.4, 3.4], [1.0, 0.5]),
          "wider": ([0.7, 0.3], [0.0, 3.0], [1.5, 0.75]),
          "moment-matched": ([1.0], [0.9], [math.sqrt(0.7 + 0.3 * 0.25 + 0.21 * 9.0)]),
          "other weights": ([0.5, 0.5], [0.0, 3.0], [1.0, 0.5])}),
    ],
    ids=["gaussian", "mixture"],
)
def test_crps_is_proper_by_simulation(true, others):
    """Targets drawn from the true predictive score better under it, on average, than under a
    shifted, wider, narrower or otherwise wrong one (the same draws for all: a paired test)."""
    rng = np.random.default_rng(2024)
    w, m, s = (np.asarray(a) for a in true)
    k = rng.choice(len(w), size=4000, p=w)
    ys = rng.normal(m[k], s[k])

    def mean_score(parts):
        p = GaussianMixture(parts[0], parts[1], np.square(parts[2]))
        return np.array([calibration.crps(p, y) for y in ys])

    truth = mean_score(true)
    for name, parts in others.items():
        diff = mean_score(parts) - truth
        # a margin of four standard errors: not a chance ordering
        assert diff.mean() > 4.0 * diff.std() / math.sqrt(diff.size), name


# ---------------------------------------------------------------------------------------------
# The central interval
# ---------------------------------------------------------------------------------------------


def _mixture_quantile(p, q):
    return optimize.brentq(lambda z: p.cdf(z) - q, -1e3, 1e3, xtol=1e-14, rtol=1e-15)


@pytest.mark.parametrize("level", [0.5, 0.9, 0.99])
def test_the_cdf_test_agrees_with_the_quantiles(level):
    rng = np.random.default_rng(3)
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    g = gaussian(1.0, 4.0)
    lo, hi = stats.norm.ppf([lo_q, hi_q], loc=1.0, scale=2.0)
    mixture = GaussianMixture(*_random_mixture(rng, 6)[:2], _random_mixture(rng, 6)[2] ** 2)
    mlo, mhi = _mixture_quantile(mixture, lo_q), _mixture_quantile(mixture, hi_q)
    for y in rng.uniform(-12.0, 12.0, size=400):
        if min(abs(y - lo), abs(y - hi)) > 1e-9:
            assert calibration.in_central_interval(g, y, level) == (lo <= y <= hi)
        if min(abs(y - mlo), abs(y - mhi)) > 1e-9:
            assert calibration.in_central_interval(mixture, y, level) == (mlo <= y <= mhi)
    # any object with a CDF: scipy's frozen normal, by the same test
    frozen = stats.norm(1.0, 2.0)
    for y in (lo - 0.01, lo + 0.01, 1.0, hi - 0.01, hi + 0.01):
        assert calibration.in_central_interval(frozen, y, level) == (lo <= y <= hi)


def test_the_upper_end_is_read_on_the_survival_function():
    """With a level within 2^-50 of 1, 1 - F(y) has no correct digit left: the survival
    function, computed directly, still places y at 8.0 sd inside and at 8.2 sd outside."""
    level = 1.0 - 2.0**-50  # the tails hold 4.4e-16 each
    for p in (gaussian(0.0, 1.0), GaussianMixture([1.0], [0.0], [1.0])):
        assert calibration.in_central_interval(p, 8.0, level)
        assert not calibration.in_central_interval(p, 8.2, level)
        assert calibration.in_central_interval(p, -8.0, level)
        assert not calibration.in_central_interval(p, -8.2, level)


def test_a_point_mass_covers_its_mean_only():
    p = gaussian(2.0, 0.0)
    assert calibration.in_central_interval(p, 2.0, 0.5)
    assert not calibration.in_central_interval(p, 2.0 + 1e-12, 0.5)
    assert not calibration.in_central_interval(p, 1.9, 0.99)


@pytest.mark.parametrize("level", [0.5, 0.9])
def test_a_calibrated_predictive_covers_its_level(level):
    """Draws from the predictive itself: the coverage is binomial around the level; a predictive
    half as wide covers less, one twice as wide more."""
    rng = np.random.default_rng(7)
    p = GaussianMixture([0.6, 0.4], [0.0, 2.5], [1.0, 0.25])
    k = rng.choice(2, size=5000, p=p.weights)
    ys = rng.normal(p.means[k], np.sqrt(p.variances[k]))
    n = ys.size
    se = math.sqrt(level * (1 - level) / n)
    covered = {}
    for scale in (0.5, 1.0, 2.0):
        metric = metrics.IntervalCoverage(level)
        q = affine(p, scale=scale, shift=(1 - scale) * p.mu)  # widened about the mean
        for y in ys:
            metric.update(y, q)
        covered[scale] = metric.get()
    assert abs(covered[1.0] - level) < 4 * se
    assert covered[0.5] < level - 4 * se and covered[2.0] > level + 4 * se


# ---------------------------------------------------------------------------------------------
# The metrics: river's conventions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 1, 0.0, 1.0, -0.1, 1.5, math.nan, math.inf, True, "0.9",
                                 None])
def test_level_is_validated(bad):
    with pytest.raises(ValueError, match=f"level must be .* got {bad!r}"):
        metrics.IntervalCoverage(level=bad)


@pytest.fixture
def predictions():
    rng = np.random.default_rng(11)
    ys = rng.normal(size=120)
    dists = []
    for t in range(120):
        if t % 2:
            dists.append(gaussian(float(rng.normal(scale=0.5)), float(rng.uniform(0.3, 2.0))))
        else:
            dists.append(GaussianMixture(*_random_mixture(rng, 3)[:2],
                                         _random_mixture(rng, 3)[2] ** 2))
    return ys, dists


@pytest.mark.parametrize("make", [metrics.CRPS, lambda: metrics.IntervalCoverage(0.8)],
                         ids=["CRPS", "IntervalCoverage"])
def test_update_revert_weights_clone_pickle(make, predictions):
    ys, dists = predictions
    terms = [make() for _ in ys]
    for metric, y, d in zip(terms, ys, dists, strict=True):
        metric.update(y, d)
    metric = make()
    assert metric.get() == 0.0  # river's convention before any sample
    for y, d in zip(ys, dists, strict=True):
        metric.update(y, d)
    assert metric.get() == pytest.approx(np.mean([m.get() for m in terms]), rel=1e-12)
    # a weight of 2 counts a sample twice
    weighted, doubled = make(), make()
    for y, d in zip(ys[:30], dists[:30], strict=True):
        weighted.update(y, d, w=2.0)
        doubled.update(y, d)
        doubled.update(y, d)
    weighted.update(ys[30], dists[30])
    doubled.update(ys[30], dists[30])
    assert weighted.get() == pytest.approx(doubled.get(), rel=1e-12)
    # reverting the last 100 leaves the first 20; reverting all resets
    for y, d in zip(ys[20:], dists[20:], strict=True):
        metric.revert(y, d)
    assert metric.get() == pytest.approx(np.mean([m.get() for m in terms[:20]]), rel=1e-10)
    clone = metric.clone()
    assert clone.get() == 0.0 and repr(clone.clone()) == repr(make())
    restored = pickle.loads(pickle.dumps(metric))
    assert restored.get() == metric.get()
    for y, d in zip(ys[:20], dists[:20], strict=True):
        metric.revert(y, d)
    assert metric.get() == 0.0


def test_conventions_and_repr():
    crps, coverage = metrics.CRPS(), metrics.IntervalCoverage(level=0.9)
    assert not crps.bigger_is_better and crps.requires_distribution
    assert coverage.requires_distribution and coverage.clone().level == 0.9
    crps.update(0.0, gaussian(0.0, 1.0))
    assert repr(crps) == "CRPS: 0.233695"
    coverage.update(0.0, gaussian(0.0, 1.0))
    coverage.update(3.0, gaussian(0.0, 1.0))
    assert repr(coverage) == "IntervalCoverage(level=0.9): 50.00%"
    # a coverage is better the closer it is to its level, from either side
    over, under = metrics.IntervalCoverage(0.5), metrics.IntervalCoverage(0.5)
    for y in (0.0, 0.1, 0.2, 3.0):  # 3 in 4 inside
        over.update(y, gaussian(0.0, 1.0))
    for y in (0.0, 3.0, 3.0, 3.0, 3.0):  # 1 in 5 inside
        under.update(y, gaussian(0.0, 1.0))
    assert over.gap == pytest.approx(0.25) and under.gap == pytest.approx(0.3)
    assert over.is_better_than(under) and not under.is_better_than(over) and over > under


def test_works_with_models_that_give_a_distribution():
    for metric in (metrics.CRPS(), metrics.IntervalCoverage(), metrics.PLL()):
        assert metric.works_with(linear_model.BayesianLinearRegression())
        assert metric.works_with(WithDist(linear_model.BayesianLinearRegression()))
        assert metric.works_with(preprocessing.StandardScaler()
                                 | linear_model.BayesianLinearRegression())
        assert metric.works_with(DOBE(RandomFourierFeatures(4, seed=0)))
        assert not metric.works_with(linear_model.LinearRegression())  # no distribution
        assert not metric.works_with(linear_model.LogisticRegression())


@pytest.mark.parametrize("make", [metrics.CRPS, metrics.IntervalCoverage],
                         ids=["CRPS", "IntervalCoverage"])
def test_point_predictions_are_refused_as_by_the_pll(make):
    metric = make()
    for bad in (1.0, 2, np.float64(0.5), True, None):
        with pytest.raises(TypeError, match="needs a predictive distribution"):
            metric.update(1.0, bad)
    with pytest.raises(TypeError, match="cannot read"):
        metric.update(1.0, {"mean": 1.0})
    for bad in ((0.0, 0.0), (0.0, -1.0)):
        with pytest.raises(ValueError, match="variance"):
            metric.update(1.0, bad)
    assert metric.get() == 0.0  # nothing was counted
    # the CRPS needs a closed form: a distribution known by its CDF only is not enough
    if make is metrics.CRPS:
        with pytest.raises(TypeError, match="cannot read"):
            metric.update(1.0, stats.norm(0.0, 1.0))


def test_combined_with_point_metrics():
    combined = metrics.CRPS() + river_metrics.MAE() + metrics.IntervalCoverage(0.5)
    assert isinstance(combined, metrics.Metrics) and combined.requires_distribution
    combined.update(1.0, gaussian(0.5, 0.25))
    crps, mae, coverage = combined
    assert mae.get() == 0.5 and coverage.get() == 0.0
    assert crps.get() == pytest.approx(calibration.crps_gaussian(0.5, 0.5, 1.0))


# ---------------------------------------------------------------------------------------------
# On streams, through progressive_scores
# ---------------------------------------------------------------------------------------------


STREAM_MODELS = {
    "DOBE": lambda: DOBE(RandomFourierFeatures(20, lengthscale=1.5, seed=0), var_eps=0.1,
                         var_rw=1e-3),
    # a small E-DOEBE: its warm-up's fallback, then the mixture of its members
    "EDOEBE": lambda: EDOEBE(families=[RandomFourierFeatures(12, seed=2), HilbertGP(12)],
                             n_warmup=90, n_samples=2, starts=(1.0,), seed=1, recalibrate=False),
    # the same, recalibrated (the default): scored from the CDF of the mapped mixture
    "EDOEBE-recalibrated": lambda: EDOEBE(families=[RandomFourierFeatures(12, seed=2),
                                                    HilbertGP(12)],
                                          n_warmup=90, n_samples=2, starts=(1.0,), seed=1),
    "BayesianLinearRegression": lambda: linear_model.BayesianLinearRegression(),
}


@pytest.mark.parametrize("name", list(STREAM_MODELS))
def test_progressive_scores_feeds_the_distribution(name):
    """The metrics' values equal the mean of their terms over the predictive distributions of a
    predict-then-learn loop on a twin model, and the coverage agrees with each predictive's own
    CDF method (for the mixture, an independent code path)."""
    stream = list(datasets.Friedman1(n_samples=300, n_features=5, seed=4))
    chosen = {"CRPS": metrics.CRPS(), "90%": metrics.IntervalCoverage(0.9),
              "50%": metrics.IntervalCoverage(0.5), "MAE": river_metrics.MAE()}
    result = progressive_scores(stream, STREAM_MODELS[name](), copy.deepcopy(chosen))
    twin, dists = STREAM_MODELS[name](), []
    for x, y in stream:
        dists.append(twin.predict_one(x, with_dist=True))
        twin.learn_one(x, y)
    ys = [y for _, y in stream]
    if name == "EDOEBE":
        assert isinstance(dists[-1], GaussianMixture) and dists[-1].n_components > 1
    if name == "EDOEBE-recalibrated":
        assert isinstance(dists[-1].base, GaussianMixture) and dists[-1].base.n_components > 1
    scores = [calibration.crps(d, y) for d, y in zip(dists, ys, strict=True)]
    assert result["CRPS"] == pytest.approx(np.mean(scores), rel=1e-9)
    assert result["CRPS"] > 0.0
    cdf = np.array([d.cdf(y) for d, y in zip(dists, ys, strict=True)])
    for level, key in ((0.9, "90%"), (0.5, "50%")):
        inside = (cdf >= (1 - level) / 2) & (cdf <= (1 + level) / 2)
        assert result[key] == pytest.approx(inside.mean(), abs=1e-12)
    assert result["90%"] >= result["50%"]  # nested intervals
