"""datasets.KeyedDrift: reproducible from its seed, each key its own drifting function, its own
drift times and noise level, the keys' records interleaved."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from river_doebe import datasets


def test_the_stream_is_the_seed_s():
    a, b = datasets.KeyedDrift(8, 2000, seed=3), datasets.KeyedDrift(8, 2000, seed=3)
    assert list(a) == list(b)
    other = datasets.KeyedDrift(8, 2000, seed=4)
    assert a.record_keys() != other.record_keys()
    assert not np.array_equal(a.arrays()[1], other.arrays()[1])


def test_records_are_key_x_y_and_every_key_gets_its_share_interleaved():
    dataset = datasets.KeyedDrift(n_keys=7, n_samples=1003, seed=0)
    rows = list(dataset)
    assert len(rows) == 1003
    key, x, y = rows[0]
    assert isinstance(key, str) and sorted(x) == ["x0", "x1", "x2"] and isinstance(y, float)
    counts = Counter(k for k, _, _ in rows)
    assert [counts[k] for k in dataset.keys()] == [144] * 2 + [143] * 5
    X, y_all = dataset.arrays()
    assert np.array_equal(X, np.array([list(r[1].values()) for r in rows]))
    assert np.array_equal(y_all, [r[2] for r in rows])
    # interleaved: the first 100 records already hold every key
    assert set(dataset.record_keys()[:100]) == set(dataset.keys())


def test_a_key_s_function_is_its_own_and_does_not_depend_on_the_other_keys():
    small = datasets.KeyedDrift(n_keys=3, n_samples=300, seed=1)
    large = datasets.KeyedDrift(n_keys=6, n_samples=600, seed=1)
    probe = np.random.default_rng(0).uniform(-1, 1, size=(50, 3))
    f_small, f_large = small.function("key0002"), large.function("key0002")
    assert np.array_equal(f_small(0, probe), f_large(0, probe))  # 100 records each
    assert not np.allclose(f_small(0, probe), small.function("key0001")(0, probe))


def test_each_key_is_static_then_drifts_then_changes_regime():
    dataset = datasets.KeyedDrift(n_keys=5, n_samples=5000, seed=2)
    probe = np.random.default_rng(1).uniform(-1, 1, size=(200, 3))
    drifts = dataset.drifts()
    assert len({d["change_at"] for d in drifts.values()}) > 1  # its own times
    assert len({d["noise"] for d in drifts.values()}) == 5  # and noise levels
    for key, d in drifts.items():
        f = dataset.function(key)
        start, change = d["drift_start"], d["change_at"]
        assert 0 < start < change < d["records"]
        # static up to the drift's start, exactly
        assert np.array_equal(f(0, probe), f(start - 1, probe))
        # a slow walk afterwards: small moves per step
        walk = np.abs(f(change - 1, probe) - f(change - 2, probe)).max()
        assert 0 < walk < 0.2
        # the regime change: a new function, far from the old one
        jump = np.sqrt(np.mean((f(change, probe) - f(change - 1, probe)) ** 2))
        assert jump > 10 * walk


def test_each_key_s_noise_is_its_own():
    dataset = datasets.KeyedDrift(n_keys=4, n_samples=40_000, seed=5)
    residual = dataset.arrays()[1] - dataset.noiseless()
    keys = np.array(dataset.record_keys())
    for key, d in dataset.drifts().items():
        assert np.std(residual[keys == key]) == pytest.approx(d["noise"], rel=0.05)


def test_noiseless_is_each_key_s_function_at_its_own_time():
    dataset = datasets.KeyedDrift(n_keys=3, n_samples=90, seed=6)
    X, f = dataset.arrays()[0], dataset.noiseless()
    keys = dataset.record_keys()
    for key in dataset.keys():
        rows = [i for i, k in enumerate(keys) if k == key]
        expected = dataset.function(key)(np.arange(len(rows)), X[rows])
        assert np.array_equal(f[rows], expected)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"n_keys": 0}, "n_keys"),
        ({"n_keys": 2.0}, "n_keys"),
        ({"n_keys": 10, "n_samples": 5}, "at least n_keys"),
        ({"n_features": 0}, "n_features"),
        ({"n_components": 0}, "n_components"),
        ({"n_samples": 0}, "n_samples"),
    ],
)
def test_bad_parameters_are_refused(kwargs, word):
    with pytest.raises(ValueError, match=word):
        datasets.KeyedDrift(**kwargs)


def test_unknown_key_and_the_repr():
    dataset = datasets.KeyedDrift(n_keys=2, n_samples=10)
    with pytest.raises(KeyError, match="nope"):
        dataset.function("nope")
    text = repr(dataset)
    assert "KeyedDrift" in text and "n_keys" in text
    assert "n_keys" in datasets.KeyedDrift.__doc__ and "Examples" in datasets.KeyedDrift.__doc__
