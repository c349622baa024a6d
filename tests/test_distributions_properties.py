"""Property tests of the affine map of the predictive distributions, over random mixtures and
maps: the plain tests check a few fixed cases against scipy; these look for a mixture, scale,
shift or point where the mapped distribution parts from the change-of-variables formula
(narrow components, far tails, scales from 1e-3 to 1e3)."""

import math

import numpy as np
import pytest

from river_doebe.distributions import GaussianMixture, affine

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

_components = st.lists(
    st.tuples(
        st.floats(1e-3, 1.0),  # weight
        st.floats(-10.0, 10.0),  # mean
        st.floats(1e-4, 1e2),  # variance
    ),
    min_size=1,
    max_size=6,
)
_scales = st.floats(1e-3, 1e3)
_shifts = st.floats(-1e4, 1e4)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(_components, _scales, _shifts, st.floats(-30.0, 30.0))
def test_the_mapped_mixture_obeys_the_change_of_variables(components, a, b, x):
    w, m, v = map(list, zip(*components))
    p = GaussianMixture(w, m, v)
    q = affine(p, a, b)
    y = a * x + b
    # y is rounded once and the mapped means once: compared with p at the x that y stands for,
    # the error in the standardised residual is about eps * (|b| + |a x|) / (a * sd); its effect
    # on the log density is that times the largest standardised residual
    x_back = (y - b) / a
    z = np.abs(x_back - p.means) / np.sqrt(p.variances)
    eps = 4 * np.finfo(float).eps
    slack = eps * (abs(b) + abs(y) + 1.0) / (a * np.sqrt(p.variances.min()))
    tol = 1e-12 * (1.0 + abs(p.log_pdf(x_back))) + slack * (float(z.max()) + 1.0)
    assert q.log_pdf(y) == pytest.approx(p.log_pdf(x_back) - math.log(a), abs=tol)
    assert q.cdf(y) == pytest.approx(p.cdf(x_back), abs=1e-12 + slack)
    assert q.mu == p.mu * a + b
    assert q.sigma == pytest.approx(a * p.sigma, rel=1e-14)
    np.testing.assert_array_equal(q.weights, p.weights)


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(_components, _scales, _shifts)
def test_mapping_back_with_the_inverse_map_returns_the_mixture(components, a, b):
    w, m, v = map(list, zip(*components))
    p = GaussianMixture(w, m, v)
    back = affine(affine(p, a, b), 1.0 / a, -b / a)
    scale = np.abs(p.means) + abs(b) / a + np.sqrt(p.variances)
    np.testing.assert_allclose(back.means, p.means, rtol=0, atol=1e-14 * scale.max() * 4)
    np.testing.assert_allclose(back.variances, p.variances, rtol=1e-14)
    assert back.mu == pytest.approx(p.mu, abs=1e-13 * scale.max() * 4)
