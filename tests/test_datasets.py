"""Tests of river_doebe.datasets: generators, file-based streams, registry and error messages."""

from __future__ import annotations

import doctest
import inspect
import pydoc

import numpy as np
import pytest
from river.datasets import base as river_base

from river_doebe import datasets
from river_doebe.datasets.base import NpzDataset


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)


# ---------------------------------------------------------------------------------------------
# Generated streams
# ---------------------------------------------------------------------------------------------


def test_friedman1_equals_sklearn():
    sk = pytest.importorskip("sklearn.datasets")
    X, y = datasets.Friedman1().arrays()
    X_ref, y_ref = sk.make_friedman1(n_samples=40000, n_features=10, noise=0.1, random_state=0)
    assert np.array_equal(X, X_ref)
    assert np.array_equal(y, y_ref)


def test_friedman2_equals_sklearn():
    sk = pytest.importorskip("sklearn.datasets")
    X, y = datasets.Friedman2().arrays()
    X_ref, y_ref = sk.make_friedman2(n_samples=40000, noise=1, random_state=0)
    assert np.array_equal(X, X_ref)
    assert np.array_equal(y, y_ref)


@pytest.mark.parametrize("n, d, noise, seed", [(300, 5, 0.0, 1), (257, 13, 2.5, 42)])
def test_friedman1_equals_sklearn_other_settings(n, d, noise, seed):
    sk = pytest.importorskip("sklearn.datasets")
    X, y = datasets.Friedman1(n_samples=n, n_features=d, noise=noise, seed=seed).arrays()
    X_ref, y_ref = sk.make_friedman1(n_samples=n, n_features=d, noise=noise, random_state=seed)
    assert np.array_equal(X, X_ref) and np.array_equal(y, y_ref)


def test_friedman2_equals_sklearn_other_settings():
    sk = pytest.importorskip("sklearn.datasets")
    X, y = datasets.Friedman2(n_samples=123, noise=0.0, seed=7).arrays()
    X_ref, y_ref = sk.make_friedman2(n_samples=123, noise=0.0, random_state=7)
    assert np.array_equal(X, X_ref) and np.array_equal(y, y_ref)


def test_friedman1_needs_five_features():
    with pytest.raises(ValueError, match="at least 5"):
        datasets.Friedman1(n_features=4)


GENERATED = [
    datasets.Friedman1(n_samples=200),
    datasets.Friedman1(n_samples=50, n_features=12),
    datasets.Friedman2(n_samples=200),
    datasets.Drift(n_samples=300),
    datasets.StaticThenDrift(n_samples=300, n_static=100),
]


@pytest.mark.parametrize("dataset", GENERATED, ids=lambda d: type(d).__name__)
def test_iteration_matches_arrays(dataset):
    X, y = dataset.arrays()
    assert X.shape == (dataset.n_samples, dataset.n_features)
    assert y.shape == (dataset.n_samples,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert dataset.task == river_base.REG
    assert isinstance(dataset, river_base.Dataset)
    pairs = list(dataset)
    assert len(pairs) == dataset.n_samples
    names = dataset.feature_names
    # sorting the names keeps the column order (this package's estimators sort feature names)
    assert list(names) == sorted(names)
    for i in (0, dataset.n_samples // 2, dataset.n_samples - 1):
        x_i, y_i = pairs[i]
        assert list(x_i) == list(names)
        assert all(type(v) is float for v in x_i.values()) and type(y_i) is float
        assert np.array_equal([x_i[k] for k in names], X[i]) and y_i == y[i]
    # iterating twice gives the same stream; arrays() hands out copies
    assert list(dataset)[:5] == pairs[:5]
    X[:] = 0.0
    assert not np.array_equal(dataset.arrays()[0], X)
    assert repr(dataset).startswith("Synthetic data generator")


def test_feature_names_are_zero_padded():
    assert datasets.Friedman1(n_samples=5, n_features=12).feature_names[:3] == ("x00", "x01", "x02")
    assert datasets.Friedman1(n_samples=5).feature_names[-1] == "x9"


def test_drift_is_deterministic_per_seed():
    a = datasets.Drift(n_samples=400, seed=3).arrays()
    b = datasets.Drift(n_samples=400, seed=3).arrays()
    c = datasets.Drift(n_samples=400, seed=4).arrays()
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])


def test_drift_segments():
    n, n_static, change = 2000, 400, 1200
    kw = dict(n_samples=n, n_static=n_static, seed=5)
    base = datasets.Drift(change_at=change, **kw)
    f = base.noiseless()
    # no drift: the static function throughout, until the change
    f_static = datasets.Drift(change_at=change, drift=0.0, **{**kw}).noiseless()
    assert np.array_equal(f[:n_static], f_static[:n_static])
    assert not np.allclose(f[n_static:change], f_static[n_static:change])
    # the function drifts slowly: it is close to the static one just after the drift starts
    assert np.max(np.abs(f[n_static : n_static + 20] - f_static[n_static : n_static + 20])) < 0.2
    # no regime change: identical before the change point, different after it
    f_nochange = datasets.Drift(change_at=n, **kw).noiseless()
    assert np.array_equal(f[:change], f_nochange[:change])
    assert not np.allclose(f[change:], f_nochange[change:])
    # the regime change is sudden: the function right after it is unrelated to the one before
    diff = f[change : change + 200] - f_nochange[change : change + 200]
    assert np.std(diff) > 0.5
    # noise has the stated scale and the signal is of unit order
    X, y = datasets.Drift(n_samples=n, noise=0.3, seed=5, n_static=n_static).arrays()
    assert abs(np.std(y - f) - 0.3) < 0.03
    assert 0.2 < np.var(f) < 5.0
    assert X.min() >= -1.0 and X.max() <= 1.0
    assert base.n_static_ == n_static and base.change_at_ == change


def test_drift_defaults_and_validation():
    ds = datasets.Drift()
    assert (ds.n_samples, ds.n_features, ds.n_static_, ds.change_at_) == (5000, 4, 1000, 3000)
    with pytest.raises(ValueError):
        datasets.Drift(n_samples=10, n_static=11)
    with pytest.raises(ValueError):
        datasets.Drift(lengthscale=0.0)
    with pytest.raises(ValueError):
        datasets.Drift(n_samples=0)


def test_static_then_drift():
    ds = datasets.StaticThenDrift(n_samples=3000, n_static=1000, seed=2, noise=0.2)
    X, y = ds.arrays()
    f = ds.noiseless()
    assert abs(np.std(y - f) - 0.2) < 0.02
    # the static part is one fixed function: a different drift changes nothing before n_static
    other = datasets.StaticThenDrift(n_samples=3000, n_static=1000, seed=2, drift=0.0).noiseless()
    assert np.array_equal(f[:1000], other[:1000])
    assert not np.allclose(f[1000:], other[1000:])
    # the static function is the documented additive sine expansion (c0 is the first draw)
    static = datasets.StaticThenDrift(n_samples=10, n_static=10, n_features=2, seed=1)
    c0 = np.random.RandomState(1).standard_normal(size=(2, static.n_basis))
    k = np.arange(1, static.n_basis + 1)
    s = (1 / k) / np.sqrt(2 * np.sum(1 / k**2))

    def f_static(x):
        return sum(
            np.sum(c0[j] * s * np.sqrt(2) * np.sin(np.pi * k * (x[j] + 1) / 2)) for j in (0, 1)
        )

    Xs = static.arrays()[0]
    assert np.allclose([f_static(x) for x in Xs], static.noiseless())
    with pytest.raises(ValueError):
        datasets.StaticThenDrift(n_samples=10, n_static=20)


# ---------------------------------------------------------------------------------------------
# Locating files and error messages
# ---------------------------------------------------------------------------------------------


def test_data_dir_unset(no_env):
    with pytest.raises(FileNotFoundError, match=datasets.ENV_VAR):
        datasets.data_dir()


def test_data_dir_resolution(tmp_path, monkeypatch):
    assert datasets.data_dir(tmp_path) == tmp_path
    assert datasets.data_dir(str(tmp_path)) == tmp_path
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))
    assert datasets.data_dir() == tmp_path
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match="nope"):
        datasets.data_dir(missing)
    monkeypatch.setenv(datasets.ENV_VAR, str(missing))
    with pytest.raises(FileNotFoundError, match=datasets.ENV_VAR):
        datasets.data_dir()


def test_missing_file_without_any_location(no_env):
    with pytest.raises(FileNotFoundError) as info:
        datasets.Elevators()
    msg = str(info.value)
    assert "elevators.npz" in msg
    assert datasets.ENV_VAR in msg and "directory" in msg


def test_missing_file_in_given_directory(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError) as info:
        datasets.CaData(directory=tmp_path)
    msg = str(info.value)
    assert "cadata.npz" in msg and str(tmp_path / "cadata.npz") in msg
    assert "directory" in msg and datasets.ENV_VAR in msg  # says how to supply it


def test_missing_file_in_env_directory(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        datasets.Sarcos()
    msg = str(info.value)
    assert str(tmp_path / "sarcos.npz") in msg and datasets.ENV_VAR in msg
    assert "not shipped" in msg and "sarcos_test" in msg
    with pytest.raises(FileNotFoundError, match="kuka1.npz"):
        datasets.Kuka1()
    with pytest.raises(FileNotFoundError, match="uci_concrete.npz"):
        datasets.UCI("concrete")


def _write(path, X, y):
    np.savez_compressed(path, X=X, y=y)


def test_user_supplied_file(tmp_path):
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(30, 21)), rng.normal(size=30)
    _write(tmp_path / "sarcos.npz", X, y)
    with pytest.warns(UserWarning, match="44484"):
        ds = datasets.Sarcos(directory=tmp_path)
    assert (ds.n_samples, ds.n_features) == (30, 21)
    X2, y2 = ds.arrays()
    assert np.array_equal(X2, X) and np.array_equal(y2, y)
    x0, y0 = next(iter(ds))
    assert list(x0)[:2] == ["pos1", "pos2"] and x0["acc7"] == X[0, 20] and y0 == y[0]
    assert "sarcos.npz" in repr(ds)


def test_malformed_files(tmp_path):
    _write(tmp_path / "kuka1.npz", np.zeros((5, 20)), np.zeros(5))
    with pytest.raises(ValueError, match="21 feature columns"):
        datasets.Kuka1(directory=tmp_path)
    _write(tmp_path / "kuka1.npz", np.zeros((5, 21)), np.zeros(4))
    with pytest.raises(ValueError, match="shape"):
        datasets.Kuka1(directory=tmp_path)
    np.savez_compressed(tmp_path / "kuka1.npz", X=np.zeros((5, 21)))
    with pytest.raises(ValueError, match="'y'"):
        datasets.Kuka1(directory=tmp_path)
    (tmp_path / "kuka1.npz").write_text("not an archive")
    with pytest.raises(ValueError, match="npz"):
        datasets.Kuka1(directory=tmp_path)
    X = np.zeros((5, 21))
    X[3, 4] = np.nan
    _write(tmp_path / "kuka1.npz", X, np.zeros(5))
    with pytest.warns(UserWarning, match="197920"):
        ds = datasets.Kuka1(directory=tmp_path)
    with pytest.raises(ValueError, match="NaN"):
        ds.arrays()


def test_uci_name_validation():
    with pytest.raises(ValueError) as info:
        datasets.UCI("iris")
    msg = str(info.value)
    assert all(name in msg for name in datasets.UCI_NAMES)


def test_registry_names():
    assert len(set(datasets.NAMES)) == len(datasets.NAMES)
    for name in (
        "friedman1",
        "friedman2",
        "drift",
        "static_then_drift",
        "elevators",
        "cadata",
        "cpusmall",
        "sarcos",
        "sarcos_test",
        "kuka1",
        "banana",
        "uci_kin40k",
    ):
        assert name in datasets.NAMES
    assert set(datasets.PAPER_NAMES) <= set(datasets.NAMES)
    with pytest.raises(ValueError) as info:
        datasets.load("mnist")
    assert all(name in str(info.value) for name in datasets.NAMES)
    assert isinstance(datasets.load("Friedman1", n_samples=10), datasets.Friedman1)
    assert isinstance(
        datasets.load("static-then-drift", n_samples=10, n_static=5), datasets.StaticThenDrift
    )
    # generated datasets ignore the data folder
    assert datasets.load("drift", directory="/nonexistent", n_samples=10).n_samples == 10


def test_available_without_data(no_env):
    assert datasets.available() == ("friedman1", "friedman2", "drift", "static_then_drift")


# ---------------------------------------------------------------------------------------------
# The real files
# ---------------------------------------------------------------------------------------------

SHIPPED = {
    "elevators": (16599, 17),
    "cadata": (20640, 8),
    "cpusmall": (8192, 12),
    "sarcos_test": (4449, 21),
    "banana": (5300, 2),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_files(name, data_dir, need_file):
    need_file(name)
    ds = datasets.load(name, directory=data_dir)
    assert (ds.n_samples, ds.n_features) == SHIPPED[name]
    X, y = ds.arrays()
    with np.load(data_dir / f"{name}.npz") as raw:
        assert np.array_equal(X, raw["X"])
        if name == "banana":
            assert np.array_equal(y, raw["y"] == 1)
        else:
            assert np.array_equal(y, raw["y"])
    first, target = next(iter(ds))
    assert list(first) == list(ds.feature_names)
    assert np.array_equal([first[k] for k in ds.feature_names], X[0]) and target == y[0]


def test_env_var_lookup(data_dir, need_file, monkeypatch):
    path = need_file("cpusmall")
    monkeypatch.setenv(datasets.ENV_VAR, str(data_dir))
    ds = datasets.CPUSmall()
    assert ds.path == path
    x, y = next(iter(ds))
    assert x["freeswap"] == 1851864.0 and y == 90.0


def test_cadata_names(data_dir, need_file):
    need_file("cadata")
    ds = datasets.CaData(directory=data_dir)
    x, y = next(iter(ds))
    assert ds.feature_names[0] == "medianIncome" and ds.feature_names[-1] == "longitude"
    assert (x["medianIncome"], x["housingMedianAge"], x["latitude"], x["longitude"]) == (
        8.3252,
        41.0,
        37.88,
        -122.23,
    )
    assert y == 452600.0


def test_banana_orders(data_dir, need_file):
    need_file("banana")
    plain = datasets.Banana(directory=data_dir)
    assert plain.task == river_base.BINARY_CLF
    X, y = plain.arrays()
    assert y.dtype == bool and int(y.sum()) == 2376
    _, label = next(iter(plain))
    assert type(label) is bool
    a = datasets.Banana(directory=data_dir, shuffle=True, seed=0)
    b = datasets.Banana(directory=data_dir, shuffle=True, seed=0)
    c = datasets.Banana(directory=data_dir, shuffle=True, seed=1)
    Xa, ya = a.arrays()
    assert np.array_equal(Xa, b.arrays()[0]) and not np.array_equal(Xa, c.arrays()[0])
    # a permutation of the rows, labels travelling with their inputs
    order = np.random.RandomState(0).permutation(5300)
    assert np.array_equal(Xa, X[order]) and np.array_equal(ya, y[order])
    assert [p for p in a][:3] == [p for p in a][:3]
    ltr = datasets.Banana(directory=data_dir, left_to_right=True).arrays()[0]
    assert np.all(np.diff(ltr[:, 0]) >= 0)
    with pytest.raises(ValueError):
        datasets.Banana(directory=data_dir, shuffle=True, left_to_right=True)


@pytest.mark.parametrize("name", datasets.UCI_NAMES)
def test_uci_files(name, data_dir, need_file):
    need_file(name)
    ds = datasets.UCI(name, directory=data_dir)
    short = datasets.UCI(name.removeprefix("uci_"), directory=data_dir)
    assert ds.n_samples == short.n_samples
    X, y = ds.arrays()
    assert X.shape == (ds.n_samples, ds.n_features) and np.isfinite(X).all()


def test_available_with_data(data_dir):
    names = datasets.available(data_dir)
    for name in SHIPPED:
        if (data_dir / f"{name}.npz").is_file():
            assert name in names


# ---------------------------------------------------------------------------------------------
# The documentation examples that need data files run here, when the files are present.
# ---------------------------------------------------------------------------------------------

FILE_DOCS = {
    datasets.Elevators: "elevators",
    datasets.CaData: "cadata",
    datasets.CPUSmall: "cpusmall",
    datasets.SarcosTest: "sarcos_test",
    datasets.Sarcos: "sarcos",
    datasets.Kuka1: "kuka1",
    datasets.UCI: "uci_concrete",
    datasets.Banana: "banana",
}


@pytest.mark.parametrize("cls", list(FILE_DOCS), ids=lambda c: c.__name__)
def test_skipped_doc_examples_run_with_data(cls, data_dir, need_file, monkeypatch):
    need_file(FILE_DOCS[cls])
    monkeypatch.setenv(datasets.ENV_VAR, str(data_dir))
    assert "# doctest: +SKIP" in cls.__doc__
    text = cls.__doc__.replace("# doctest: +SKIP", "")
    test = doctest.DocTestParser().get_doctest(text, {}, cls.__name__, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0


# ---------------------------------------------------------------------------------------------
# The docstrings, completed by the base from each class's attributes
# ---------------------------------------------------------------------------------------------

CLASSES = [obj for obj in map(datasets.__dict__.get, datasets.__all__) if inspect.isclass(obj)]


def _section(doc: str, title: str) -> str:
    return doc.split(f"{title}\n    {'-' * len(title)}\n", 1)[1].split("\n\n    ")[0]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_dataset_documents_its_parameters_and_has_an_example(cls):
    doc = cls.__doc__
    # the parameters of the constructor, each once, in their order
    entries = [line[4:] for line in _section(doc, "Parameters").splitlines()
               if line.startswith("    ") and not line.startswith("     ")]
    assert entries == list(inspect.signature(cls).parameters)
    # an example: runnable for a generated stream, skipped but for its import for a file
    examples = doctest.DocTestParser().get_examples(doc)
    assert len(examples) >= 2
    skipped = [doctest.SKIP in e.options for e in examples]
    if issubclass(cls, NpzDataset):
        assert skipped == [False] + [True] * (len(examples) - 1)
        assert examples[1].source.startswith("dataset = datasets.")
    else:
        assert not any(skipped)
    # what help() shows
    shown = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    for part in (doc.splitlines()[0], "Parameters", "Examples", examples[-1].source.strip()):
        assert part in shown


def test_the_paper_is_cited_last_with_where_it_uses_the_stream():
    references = _section(datasets.Elevators.__doc__, "References")
    assert [line.strip() for line in references.splitlines()[-2:]] == [
        "[^2]: D. Waxman and P. M. Djurić (2024). Dynamic online ensembles of basis expansions.",
        "Transactions on Machine Learning Research (Table 1, Elevators).",
    ]
    assert "References" not in datasets.Drift.__doc__


def test_river_reads_the_description_and_parameters_back(tmp_path):
    np.savez(tmp_path / "elevators.npz", X=np.zeros((3, 17)), y=np.arange(3.0))
    with pytest.warns(UserWarning, match="16599"):
        dataset = datasets.Elevators(directory=tmp_path)
    assert dataset.desc.startswith("Elevators: controlling the elevators of an F16 aircraft")
    assert dataset.desc.endswith('Features are named ``"x00"`` to ``"x16"``.')
    shown = repr(dataset)
    assert "Parameters\n----------\n    directory\n        Folder that holds ``elevators.npz``" in (
        shown
    )
    assert f"Path  {tmp_path / 'elevators.npz'}" in shown
