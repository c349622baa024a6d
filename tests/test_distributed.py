"""Many keyed streams on Ray (river_doebe.distributed): the same numbers as a dict of models fed
row by row, for any number of shards and batch size; checkpoints, recovery of a killed shard,
and bad rows refused before any shard sees them.

Ray starts once for the module (two CPUs); every test builds its own small KeyedModels and
closes it, so that the shards' CPUs are free for the next.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

from river_doebe import DOBE, EDOEBE, DOBEClassifier
from river_doebe._compat import is_classifier
from river_doebe.basis import AdditivePolynomial, RandomFourierFeatures
from river_doebe.datasets import KeyedDrift

ray = pytest.importorskip("ray")

#: every test here runs on a Ray cluster: left out of the default run (``-m ray`` runs them)
pytestmark = pytest.mark.ray

from river_doebe.distributed import KeyedModels, shard_of  # noqa: E402
from river_doebe.distributed.routing import canonical_key, encode_key  # noqa: E402

# Ray starts its workers at niceness 15: on a machine shared with other jobs the shards would
# wait for every other process; the tests' workers run at the normal priority
os.environ.setdefault("RAY_worker_niceness", "0")

#: the tests that start Ray themselves (the rest share one Ray, started at the first of them)
OWN_RAY = {"test_an_embedded_ray_starts_with_the_models_and_stops_with_them"}
_started: list = []


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    yield
    if _started:
        ray.shutdown()
        _started.clear()


@pytest.fixture(autouse=True)
def ray_running(request):
    if request.function.__name__ not in OWN_RAY and not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        _started.append(True)


def dobe():
    return DOBE(RandomFourierFeatures(n_frequencies=8, seed=0), var_rw=1e-3)


def edoebe():
    return EDOEBE(
        families=[RandomFourierFeatures(5, seed=1)], n_warmup=20, n_samples=2, starts=(1.0,), seed=1
    )


def records(n_keys=30, n=1500, seed=0):
    keys, X, y = map(list, zip(*KeyedDrift(n_keys=n_keys, n_samples=n, seed=seed)))
    return keys, X, y


def reference(template, keys, X, y, with_dist=False, models=None):
    """The one-process answer: a dict of models, predict_one then learn_one row by row."""
    models = {} if models is None else models
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for key, x, target in zip(keys, X, y, strict=True):
            model = models.setdefault(key, template.clone())
            if is_classifier(model):
                out.append(model.predict_proba_one(x))
            else:
                # (river's own models take no with_dist in older river versions)
                out.append(model.predict_one(x, with_dist=True) if with_dist
                           else model.predict_one(x))
            model.learn_one(x, target)
    return out


def feed(keyed, keys, X, y, call_size, with_dist=False):
    out = []
    for i in range(0, len(keys), call_size):
        s = slice(i, i + call_size)
        out += keyed.predict_learn_many(keys[s], X[s], y[s], with_dist=with_dist)
    return out


# ---------------------------------------------------------------------------------------------
# Ray: embedded by default, joined when running
# ---------------------------------------------------------------------------------------------


def test_an_embedded_ray_starts_with_the_models_and_stops_with_them():
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process")
    keys, X, y = records(n_keys=3, n=60)
    with KeyedModels(dobe(), n_shards=2) as keyed:
        assert ray.is_initialized() and len(keyed.shards) == 2
        assert keyed.predict_learn_many(keys, X, y) == reference(dobe(), keys, X, y)
    assert not ray.is_initialized()


def test_a_running_ray_is_joined_and_left_running():
    with KeyedModels(dobe(), n_shards=1) as keyed:
        keyed.learn_many(["a"], [{"x0": 1.0}], [2.0])
    assert ray.is_initialized()


# ---------------------------------------------------------------------------------------------
# Keys to shards
# ---------------------------------------------------------------------------------------------


def test_the_shard_of_a_key_is_stable_across_processes_and_hash_seeds():
    keys = ["sensor-1", 7, ("fleet", 3), b"raw"]
    here = [shard_of(k, 5) for k in keys]
    code = (
        "from river_doebe.distributed.routing import shard_of; "
        f"print([shard_of(k, 5) for k in {keys!r}])"
    )
    # another process, another salt of Python's own hash
    assert hash("sensor-1") != int(
        subprocess.run(
            [sys.executable, "-c", "print(hash('sensor-1'))"],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": "12345"},
            check=True,
        ).stdout
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
        check=True,
    )
    assert out.stdout.strip() == str(here)
    # the encoding is the documented one, so the shard is BLAKE2b of it
    import hashlib

    digest = hashlib.blake2b(b"ssensor-1", digest_size=8).digest()
    assert shard_of("sensor-1", 5) == int.from_bytes(digest, "little") % 5


def test_keys_equal_as_dict_keys_share_a_shard_and_types_are_tagged():
    assert shard_of(np.int64(12), 7) == shard_of(12, 7) == shard_of(True + 11, 7)
    assert canonical_key(np.int64(3)) == 3 and type(canonical_key(np.int64(3))) is int
    assert encode_key("1") != encode_key(1) != encode_key(b"1")
    assert encode_key(("a", "bc")) != encode_key(("ab", "c"))  # items are length-prefixed
    for bad, word in [(1.5, "float"), (None, "NoneType"), (frozenset(), "frozenset")]:
        with pytest.raises(TypeError, match=word):
            shard_of(bad, 3)


def test_importing_without_ray_says_how_to_install_it():
    code = "import sys; sys.modules['ray'] = None; import river_doebe.distributed"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError") and 'pip install "river-doebe[ray]"' in last


# ---------------------------------------------------------------------------------------------
# Identical to one process
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n_shards, batch_size, call_size", [(1, 7, 100), (2, 64, 500), (3, 1000, 1500)]
)
def test_dobe_keys_equal_a_dict_of_models_bit_for_bit(n_shards, batch_size, call_size):
    keys, X, y = records()
    expected = reference(dobe(), keys, X, y)
    with KeyedModels(
        dobe(), n_shards=n_shards, batch_size=batch_size, log_limit=max(batch_size, 200)
    ) as keyed:
        assert len(keyed.shards) == n_shards
        got = feed(keyed, keys, X, y, call_size)
        assert got == expected
        assert keyed.n_keys == 30 and sorted(keyed.keys()) == sorted(set(keys))
        per_shard = keyed.memory()
        assert sum(m["rows_learnt"] for m in per_shard) == len(keys)
        assert all(m["model_bytes"] > 0 for m in per_shard if m["n_keys"])
        for m in per_shard:  # every key sits on its hash's shard
            assert m["n_keys"] == len({k for k in keys if shard_of(k, n_shards) == m["shard"]})


def test_edoebe_keys_with_their_warm_ups_equal_a_dict_with_distributions():
    keys, X, y = records(n_keys=5, n=400, seed=3)
    expected = reference(edoebe(), keys, X, y, with_dist=True)
    with KeyedModels(edoebe(), n_shards=2, batch_size=50, log_limit=100) as keyed:
        got = feed(keyed, keys, X, y, 130, with_dist=True)
        assert [(d.mu, d.sigma) for d in got] == [(d.mu, d.sigma) for d in expected]
        # a local copy of a key's model is that key's model
        models = {}
        reference(edoebe(), keys, X, y, models=models)
        copy = keyed.model(keys[0])
        probe = X[0]
        assert copy.predict_one(probe) == models[keys[0]].predict_one(probe)
        assert copy.n_samples_seen == models[keys[0]].n_samples_seen


def test_classifier_and_river_estimators_equal_a_dict():
    from river import linear_model, preprocessing

    keys, X, y = records(n_keys=4, n=200, seed=5)
    labels = [target > 0 for target in y]
    template = DOBEClassifier(RandomFourierFeatures(n_frequencies=6, seed=2))
    expected = reference(template, keys, X, labels)
    with KeyedModels(template, n_shards=2, batch_size=90) as keyed:
        assert feed(keyed, keys, X, labels, 90) == expected
    river_model = preprocessing.StandardScaler() | linear_model.LinearRegression()
    expected = reference(river_model, keys, X, y)
    with KeyedModels(river_model, n_shards=2, batch_size=90) as keyed:
        assert feed(keyed, keys, X, y, 90) == expected


# ---------------------------------------------------------------------------------------------
# Bad input: refused on the driver, nothing changes
# ---------------------------------------------------------------------------------------------


def test_a_bad_row_names_key_and_feature_and_no_shard_changes():
    pd = pytest.importorskip("pandas")
    keys, X, y = records(n_keys=6, n=300, seed=4)
    models = {}
    reference(dobe(), keys[:150], X[:150], y[:150], models=models)
    with KeyedModels(dobe(), n_shards=2, batch_size=50) as keyed:
        # a DataFrame and a Series, learn_many: the dict's models
        keyed.learn_many(keys[:60], pd.DataFrame(X[:60]), pd.Series(y[:60]))
        keyed.learn_many(keys[60:150], X[60:150], y[60:150])
        probe = [{"x0": 0.1, "x1": -0.2, "x2": 0.3}] * 3
        asked = [keys[0], "never-seen", keys[1]]
        got = keyed.predict_many(asked, pd.DataFrame(probe))
        assert got[0] == models[keys[0]].predict_one(probe[0])
        assert got[1] == dobe().predict_one(probe[1])  # the untrained template
        assert got[2] == models[keys[1]].predict_one(probe[2])
        assert "never-seen" not in keyed.keys() and keyed.n_keys == 6
        with pytest.raises(KeyError):
            keyed.model("never-seen")
        before = keyed.memory()
        snapshot = {k: pickle.dumps(keyed.model(k)) for k in keyed.keys()}
        rest_keys, rest_X, rest_y = keys[150:], [dict(x) for x in X[150:]], y[150:]
        last = len(rest_keys) - 1
        cases = [
            ({"x1": float("nan")}, None, ValueError, "'x1'"),
            ({"x2": "3.0"}, None, TypeError, "'x2'"),
            (None, float("inf"), ValueError, "target"),
        ]
        for patch, target, kind, word in cases:
            bad_X, bad_y = [dict(x) for x in rest_X], list(rest_y)
            if patch:
                bad_X[last].update(patch)
            if target is not None:
                bad_y[last] = target
            with pytest.raises(kind, match=word) as info:
                keyed.predict_learn_many(rest_keys, bad_X, bad_y)
            assert f"key {rest_keys[last]!r}" in str(info.value)
        with pytest.raises(TypeError, match="expected a dict"):
            keyed.learn_many(rest_keys, rest_X[:-1] + [[1.0, 2.0]], rest_y)
        with pytest.raises(TypeError, match="float"):
            keyed.learn_many(rest_keys[:-1] + [2.5], rest_X, rest_y)
        with pytest.raises(TypeError, match="not hashable"):
            keyed.learn_many(rest_keys[:-1] + [["a"]], rest_X, rest_y)
        with pytest.raises(ValueError, match="targets"):
            keyed.learn_many(rest_keys, rest_X, rest_y[:-1])
        assert keyed.memory() == before
        assert {k: pickle.dumps(keyed.model(k)) for k in keyed.keys()} == snapshot


def test_a_row_a_model_refuses_names_its_key():
    template = DOBE(AdditivePolynomial(degree=3))
    keys = ["a", "b"] * 20
    X = [{"u": 0.1 * i} for i in range(40)]
    y = [float(i) for i in range(40)]
    X[31] = {"u": 1e154}  # finite, but its cube is not: the filter refuses it
    with KeyedModels(template, n_shards=2, batch_size=16) as keyed:
        with pytest.raises(ValueError) as info:
            keyed.learn_many(keys, X, y)
        assert any("key 'b'" in note for note in info.value.__notes__)
        # the refusing shard's state was snapshot as it is: its recovery loses nothing
        learnt = {k: pickle.dumps(keyed.model(k)) for k in keyed.keys()}
        ray.kill(keyed.shards[keyed.shard_of("b")])
        assert {k: pickle.dumps(keyed.model(k)) for k in keyed.keys()} == learnt
        assert len(keyed.recoveries) == 1


def test_bad_parameters_are_refused():
    for kwargs, word in [
        ({"n_shards": 0}, "n_shards"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"log_limit": 10, "batch_size": 20}, "log_limit"),
        ({"cpus_per_shard": -1}, "cpus_per_shard"),
        ({"address": 3}, "address"),
    ]:
        with pytest.raises((ValueError, TypeError), match=word):
            KeyedModels(dobe(), **kwargs)
    with pytest.raises(TypeError, match="river estimator"):
        KeyedModels(lambda x: x)


# ---------------------------------------------------------------------------------------------
# Checkpoints and recovery
# ---------------------------------------------------------------------------------------------


def test_checkpoint_then_restore_continues_as_an_uninterrupted_run(tmp_path):
    keys, X, y = records(n_keys=10, n=600, seed=6)
    expected = reference(dobe(), keys, X, y)
    with KeyedModels(dobe(), n_shards=2, batch_size=100) as keyed:
        first = feed(keyed, keys[:300], X[:300], y[:300], 150)
        manifest = keyed.checkpoint(tmp_path / "ckpt")
        manifest_again = keyed.checkpoint(tmp_path / "ckpt")  # replaces the first one
    files = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    assert files == sorted(
        ["manifest.json", "template.pkl", *(s["file"] for s in manifest_again["shards"])]
    )
    assert {s["file"] for s in manifest["shards"]}.isdisjoint(
        {s["file"] for s in manifest_again["shards"]}
    )
    on_disk = json.loads((tmp_path / "ckpt" / "manifest.json").read_text())
    assert on_disk == manifest_again
    assert on_disk["n_shards"] == 2 and on_disk["n_keys"] == 10
    assert sum(s["rows_learnt"] for s in on_disk["shards"]) == 300
    assert on_disk["template"] == repr(dobe()) and "blake2b" in on_disk["hash_scheme"]
    with KeyedModels.restore(tmp_path / "ckpt", batch_size=70) as restored:
        rest = feed(restored, keys[300:], X[300:], y[300:], 150)
    assert first + rest == expected


def test_a_killed_shard_is_rebuilt_and_nothing_is_lost(tmp_path):
    keys, X, y = records(n_keys=12, n=1200, seed=7)
    expected = reference(dobe(), keys, X, y)
    # log_limit 100: the logs pass it and the shards are snapshot in the object store
    with KeyedModels(dobe(), n_shards=2, batch_size=50, log_limit=100) as keyed:
        got = feed(keyed, keys[:400], X[:400], y[:400], 100)
        ray.kill(keyed.shards[0])
        got += feed(keyed, keys[400:600], X[400:600], y[400:600], 200)
        (first,) = keyed.recoveries
        assert first["shard"] == 0 and first["seconds"] > 0
        assert 0 <= first["rows_replayed"] <= 100
        keyed.checkpoint(tmp_path / "ckpt")  # now the snapshot is the checkpoint's file
        got += feed(keyed, keys[600:900], X[600:900], y[600:900], 300)
        ray.kill(keyed.shards[1])
        got += feed(keyed, keys[900:], X[900:], y[900:], 300)
        assert [r["shard"] for r in keyed.recoveries] == [0, 1]
        assert got == expected
        assert keyed.n_keys == 12


# ---------------------------------------------------------------------------------------------
# The command line: river-doebe evaluate --keys N
# ---------------------------------------------------------------------------------------------


def test_evaluate_keys_prints_the_per_key_summary_and_writes_json(tmp_path, capsys):
    from river_doebe.cli import entry

    out = tmp_path / "keyed.json"
    argv = [
        "evaluate",
        "--keys",
        "4",
        "--n",
        "400",
        "--shards",
        "2",
        "--n-warmup",
        "30",
        "--n-samples",
        "1",
        "--starts",
        "1",
        "--no-progress",
        "--json",
        str(out),
    ]
    assert entry.main(argv) == 0
    printed = capsys.readouterr().out
    assert "KeyedDrift (4 keys, 400 records" in printed and "records/s:" in printed
    assert "nMSE" in printed and "PLL" in printed and "shard 1:" in printed
    doc = json.loads(out.read_text())
    assert doc["shards"] == 2 and doc["settings"]["n_warmup"] == 30
    assert sum(m["n_keys"] for m in doc["memory"]) == 4
    for name in ("nMSE", "PLL"):
        row = doc["scores_over_keys"][name]
        assert row["keys"] == 4 and row["q05"] <= row["q50"] <= row["q95"]
    assert doc["records_per_s"] == pytest.approx(400 / doc["elapsed_s"])
    # the scores are those of a dict of E-DOEBEs fed the same records
    from river_doebe.cli import keyed as cli_keyed
    from river_doebe.cli.registry import MODELS

    keys, X, y = map(list, zip(*KeyedDrift(n_keys=4, n_samples=400, seed=0)))
    template = MODELS["edoebe"].factory(doc["settings"])
    expected = reference(template, keys, X, y, with_dist=True)
    stats = cli_keyed.summary(cli_keyed._scores(keys, y, expected, True))
    assert stats == doc["scores_over_keys"]


@pytest.mark.parametrize(
    "argv, word",
    [
        (["--shards", "2"], "--shards goes with --keys"),
        (["--address", "auto"], "--address goes with --keys"),
        (["--keys", "3", "--stream", "drift"], "drop --stream"),
        (["--keys", "3", "--no-peers", "--peers", "blr"], None),
        (["--keys", "5", "--n", "4"], "at least --keys"),
    ],
)
def test_evaluate_keys_refuses_options_that_do_not_go_with_it(argv, word, capsys):
    from river_doebe.cli import entry

    try:
        status = entry.main(["evaluate", *argv])
    except SystemExit as stop:  # argparse's own refusal
        status = stop.code
    assert status == 2
    if word is not None:
        assert word in capsys.readouterr().err
