"""Property tests over random dict streams, the inputs a river user really sends: random keys
that come and go, values from 1e-12 to 1e12 in magnitude, ints and bools, now and then a bad
value or target. For every model:

- only ``ValueError`` and ``TypeError`` escape;
- a refused sample leaves the pickled state identical;
- every prediction that is returned for finite input is finite, with a finite positive sigma;
- pickling mid-stream changes nothing later (the restored copy predicts bit for bit as the
  original).

The default profile keeps the run short; ``-m slow`` adds a larger one.
"""

from __future__ import annotations

import math
import pickle
import warnings

import pytest

from river_doebe import DOBE, DOEBE, EDOEBE, DOBEClassifier, EDOEBEClassifier
from river_doebe.basis import (
    AdditivePolynomial,
    HilbertGP,
    Linear,
    RandomFourierFeatures,
    RBFNetwork,
)

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

KEYS = ("a", "b", "c", "d", "e")

_magnitude = st.builds(
    lambda sign, exp, mant: sign * mant * 10.0**exp,
    st.sampled_from((-1.0, 1.0)),
    st.integers(-12, 12),
    st.floats(1.0, 9.999),
)
_value = st.one_of(
    _magnitude,
    st.integers(-(10**12), 10**12),
    st.booleans(),
    st.just(0.0),
)
_bad_value = st.sampled_from((float("nan"), float("inf"), "1.0", None, 10**400))
_sample = st.tuples(
    st.dictionaries(st.sampled_from(KEYS), st.one_of(_value, _value, _value, _value, _bad_value),
                    min_size=1, max_size=len(KEYS)),
    st.one_of(_magnitude, _magnitude, _magnitude, st.sampled_from((float("nan"), "3"))),
)
_stream = st.lists(_sample, min_size=4, max_size=24)


def _rff():
    return RandomFourierFeatures(6, lengthscale=2.0, seed=1)


REGRESSORS = {
    "linear": lambda: DOBE(Linear()),
    "linear-dynamic": lambda: DOBE(Linear(), var_rw=1e-3),
    "poly": lambda: DOBE(AdditivePolynomial(2), var_eps=1e-4),
    "poly-dynamic": lambda: DOBE(AdditivePolynomial(3), var_rw=1e-2),
    "rff": lambda: DOBE(_rff(), var_eps=0.05),
    "rff-dynamic": lambda: DOBE(_rff(), var_rw=1e-3),
    "hsgp": lambda: DOBE(HilbertGP(10)),
    "hsgp-dynamic": lambda: DOBE(HilbertGP(10), var_rw=1e-3),
    "rbf": lambda: DOBE(RBFNetwork(4, lengthscale=3.0)),
    "doebe": lambda: DOEBE([DOBE(Linear(), var_eps=0.5), DOBE(_rff(), var_rw=1e-3)]),
    "edoebe": lambda: EDOEBE(families=[_rff()], n_warmup=8, n_samples=1, starts=(1.0,), seed=0),
}
CLASSIFIERS = {
    "classifier": lambda: DOBEClassifier(),
    "classifier-rff": lambda: DOBEClassifier(_rff(), var_rw=1e-3),
    "edoebe-classifier": lambda: EDOEBEClassifier(families=[_rff()], n_warmup=8, n_samples=1,
                                                  starts=(1.0,), seed=0),
}


def _predict(model, x, is_clf):
    if is_clf:
        p = model.predict_proba_one(x)
        assert all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in p.values())
        assert math.isclose(sum(p.values()), 1.0, abs_tol=1e-12)
        return tuple(sorted((str(k), v) for k, v in p.items()))
    dist = model.predict_one(x, with_dist=True)
    assert math.isfinite(dist.mu) and math.isfinite(dist.sigma) and dist.sigma > 0
    return dist.mu, dist.sigma


def _run(make, stream, is_clf):
    model = make()
    half = len(stream) // 2
    restored = None
    trace, trace_restored = [], []
    for i, (x, y) in enumerate(stream):
        if is_clf and not isinstance(y, str):
            y = isinstance(y, float) and y > 0
        for m, out in ((model, trace), (restored, trace_restored)):
            if m is None:
                continue
            before = pickle.dumps(m)
            try:
                out.append(_predict(m, x, is_clf))
            except (ValueError, TypeError):
                assert pickle.dumps(m) == before
                out.append("refused")
            before = pickle.dumps(m)
            try:
                m.learn_one(x, y)
            except (ValueError, TypeError):
                assert pickle.dumps(m) == before
                out.append("not learnt")
        if i == half:
            restored = pickle.loads(pickle.dumps(model))
            trace_restored.extend(trace)
    assert trace_restored == trace


def _check(name, stream):
    is_clf = name in CLASSIFIERS
    make = {**REGRESSORS, **CLASSIFIERS}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _run(make, stream, is_clf)


@pytest.mark.parametrize("name", [*REGRESSORS, *CLASSIFIERS])
@hypothesis.settings(max_examples=12, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(stream=_stream)
def test_random_dict_streams(name, stream):
    _check(name, stream)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*REGRESSORS, *CLASSIFIERS])
@hypothesis.settings(max_examples=150, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(stream=st.lists(_sample, min_size=4, max_size=80))
def test_random_dict_streams_long(name, stream):
    _check(name, stream)
