"""Many keyed streams on Ray (river_doebe.distributed): the same numbers as a dict of models fed
row by row, for any number of shards and batch size; keys placed evenly and stably; checkpoints
and recovery of a killed shard; bad rows refused before any shard sees them; the command line.

Ray starts once for the module (two CPUs); every test builds its own small KeyedModels and
closes it, so that the shards' CPUs are free for the next. What fails (interrupts, dying
replacements, hung shards, threads, damaged checkpoints: issue 20) is tested in
tests/test_distributed_faults.py, a lost node in tests/test_distributed_cluster.py.
"""

from __future__ import annotations

import enum
import json
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from river_doebe import DOBEClassifier
from river_doebe.basis import RandomFourierFeatures
from river_doebe.datasets import KeyedDrift

ray = pytest.importorskip("ray")

from keyed_support import (  # noqa: E402
    dobe,
    edoebe,
    feed,
    kill,
    pickled,
    plain,
    ray_fixtures,
    records,
    reference,
    reference_states,
    states,
)

from river_doebe._schema import check_target  # noqa: E402
from river_doebe.distributed import KeyedModels, shard_of  # noqa: E402
from river_doebe.distributed.routing import Placement, canonical_key, encode_key  # noqa: E402

#: every test here runs on a Ray cluster: left out of the default run (``-m ray`` runs them)
pytestmark = pytest.mark.ray

#: the tests that run without the module's Ray (they start their own, or none)
OWN_RAY = {
    "test_an_embedded_ray_starts_with_the_models_and_stops_with_the_last_of_them",
    "test_an_address_with_nothing_behind_it_fails_fast_naming_it",
}
ray_session, ray_running = ray_fixtures(OWN_RAY)


# ---------------------------------------------------------------------------------------------
# Ray: embedded by default, joined when running
# ---------------------------------------------------------------------------------------------


def alive_shards() -> int:
    """The Shard actors alive in the running Ray."""
    from ray._private import state

    alive = 0
    for info in state.actors().values():
        status = info.get("State")
        if "Shard" in str(info.get("ActorClassName", "")) and status in ("ALIVE", 2):
            alive += 1
    return alive


def test_an_embedded_ray_starts_with_the_models_and_stops_with_the_last_of_them(tmp_path):
    """Also: a checkpoint, replaced by the next, restored: the run goes on as if uninterrupted."""
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process")
    keys, X, y = records(n_keys=10, n=600, seed=6)
    expected = reference(dobe(), keys, X, y)
    folder = tmp_path / "ckpt"
    # half a CPU a shard: the second instance needs CPUs of the Ray the first starts (two)
    first = KeyedModels(dobe(), n_shards=2, batch_size=100, cpus_per_shard=0.5)
    try:
        assert ray.is_initialized() and len(first.shards) == 2
        got = feed(first, keys[:300], X[:300], y[:300], 150)
        manifest = first.checkpoint(folder)
        manifest_again = first.checkpoint(folder)  # replaces the first one
        # joins the Ray the first started
        second = KeyedModels.restore(folder, batch_size=70, cpus_per_shard=0.5)
    finally:
        first.close()
    files = sorted(p.name for p in folder.iterdir())
    assert files == sorted(
        [
            "manifest.json",
            manifest_again["template_file"],
            *(s["file"] for s in manifest_again["shards"]),
        ]
    )
    assert {s["file"] for s in manifest["shards"]}.isdisjoint(
        {s["file"] for s in manifest_again["shards"]}
    )
    on_disk = json.loads((folder / "manifest.json").read_text())
    assert on_disk == manifest_again
    assert on_disk["n_shards"] == 2 and on_disk["n_keys"] == 10
    assert sum(s["rows_learnt"] for s in on_disk["shards"]) == 300
    assert on_disk["template"] == repr(dobe()) and "blake2b" in on_disk["hash_scheme"]
    assert len(on_disk["checksum"]) == len(on_disk["template_sha256"]) == 64
    # issue 20, 8: closing the first leaves the Ray of the second running
    assert ray.is_initialized()
    with second:
        assert [m["n_keys"] for m in second.memory()] == [s["n_keys"] for s in on_disk["shards"]]
        got += feed(second, keys[300:], X[300:], y[300:], 150)
        assert got == expected
        # a closed one refuses every use, and brings no shard back
        uses = [
            first.keys,
            first.memory,
            lambda: first.n_keys,
            lambda: first.model(keys[0]),
            lambda: first.checkpoint(tmp_path / "again"),
            lambda: first.learn_many(keys, X, y),
            lambda: first.predict_many(keys, X),
            lambda: next(first.iter_predict_learn([(keys, X, y)])),
        ]
        for use in uses:
            with pytest.raises(RuntimeError, match="closed"):
                use()
        assert alive_shards() == 2  # the second's
        assert not (tmp_path / "again").exists()
    assert not ray.is_initialized()


def test_an_address_with_nothing_behind_it_fails_fast_naming_it(monkeypatch):
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process")
    import socket

    from river_doebe.distributed import keyed as keyed_module

    # a port bound then freed: nothing behind it, on this machine
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(keyed_module, "CONNECT_TIMEOUT", 2.0)
    start = time.monotonic()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}", f"localhost:{port}"):
        with pytest.raises(ConnectionError, match=re.escape(repr(address))):
            KeyedModels(dobe(), n_shards=1, address=address)
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(ConnectionError, match=str(port)):
        KeyedModels(dobe(), n_shards=1)
    assert time.monotonic() - start < 30
    assert not ray.is_initialized()


# ---------------------------------------------------------------------------------------------
# Keys to shards
# ---------------------------------------------------------------------------------------------


def test_the_shard_of_a_key_is_stable_across_processes_and_hash_seeds():
    keys = ["sensor-1", 7, ("fleet", 3), b"raw", 10**5000]
    here = [shard_of(k, 5) for k in keys]
    code = (
        "import sys; sys.set_int_max_str_digits(0); "
        "from river_doebe.distributed.routing import shard_of; "
        "print([shard_of(k, 5) for k in [eval(line) for line in sys.stdin.read().split('|')]])"
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
        input="|".join(["'sensor-1'", "7", "('fleet', 3)", "b'raw'", "10**5000"]),
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
    # issue 20, 9: an int past Python's decimal digits is encoded by its hexadecimal ones
    assert encode_key(10**5000) == b"x" + format(10**5000, "x").encode()
    assert encode_key(-(2**12999)) == b"i" + str(-(2**12999)).encode()


def test_the_checks_of_a_call_take_every_valid_row_and_name_the_first_bad_one():
    # the usual call is checked in passes over the whole call; a call those passes do not
    # clear goes row by row: both must accept the same rows and keep the same targets
    keyed = KeyedModels.__new__(KeyedModels)  # the checks only: no shard is started
    keyed._strict, keyed._check_y = True, check_target
    big = 1.5e308  # finite, but two of them sum to infinity
    keys = ["a", 7, b"k", ("t", 1)]
    X = [{"x": 1.0}, {"x": big, "z": big}, {}, {"x": -big}]
    y = [1.0, big, big, 0.5]
    ckeys, rows, targets = keyed._checked(keys, X, y)
    assert ckeys == keys and rows == X and targets == y
    assert keyed._checked(keys, X, np.array(y))[2] == y
    int_y = keyed._checked(keys, X, [1, 2, 3, 4])[2]
    assert int_y == [1.0, 2.0, 3.0, 4.0] and all(type(t) is float for t in int_y)
    for bad, kind, word in [
        ({"x": float("nan")}, ValueError, "row 2, key b'k'.*'x'"),
        ({"x": True}, None, None),  # a bool counts as 0/1
        ({"x": "1"}, TypeError, "row 2, key b'k'.*'x'"),
    ]:
        rows = X[:2] + [bad] + X[3:]
        if kind is None:
            keyed._checked(keys, rows, y)
        else:
            with pytest.raises(kind, match=word):
                keyed._checked(keys, rows, y)
    with pytest.raises(ValueError, match="row 3, key .*target"):
        keyed._checked(keys, X, y[:3] + [float("inf")])
    with pytest.raises(TypeError, match="float"):
        keyed._checked(keys[:3] + [2.5], X, y)


def test_keys_equal_as_dict_keys_share_a_shard_and_types_are_tagged():
    assert shard_of(np.int64(12), 7) == shard_of(12, 7) == shard_of(True + 11, 7)
    assert canonical_key(np.int64(3)) == 3 and type(canonical_key(np.int64(3))) is int

    # a str Enum's member is the dict key of its value (str() of it would be 'Colour.RED')
    class Colour(str, enum.Enum):  # noqa: UP042 (StrEnum prints its value: no report)
        RED = "r"

    assert type(canonical_key(Colour.RED)) is str and canonical_key(Colour.RED) == "r"
    assert canonical_key(("a", Colour.RED)) == ("a", "r")
    assert shard_of(Colour.RED, 7) == shard_of("r", 7)
    assert encode_key("1") != encode_key(1) != encode_key(b"1")
    assert encode_key(("a", "bc")) != encode_key(("ab", "c"))  # items are length-prefixed
    bad_keys = [(1.5, "float"), (7.0, "float"), (None, "NoneType"), (frozenset(), "frozenset")]
    for bad, word in bad_keys:
        with pytest.raises(TypeError, match=word):
            shard_of(bad, 3)


def test_a_key_is_placed_on_the_shard_with_fewest_keys_from_its_hash_shard():
    placement = Placement(3)
    keys = [f"k{i}" for i in range(10)]
    got = [placement.place(k) for k in keys]
    assert sorted(placement.counts) == [3, 3, 4]
    assert [placement.place(k) for k in keys] == got  # kept
    # the first key of an empty placement takes its hash's shard; later ones search from theirs
    assert got[0] == shard_of("k0", 3)
    fresh = Placement(3)
    assert fresh.choose("zz") == shard_of("zz", 3) and len(fresh) == 0
    with pytest.raises(ValueError, match="shard"):
        placement.assign("k0", (got[0] + 1) % 3)


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
    "make, n_shards, batch_size, call_size", [(dobe, 1, 7, 100), (plain, 3, 1000, 1500)]
)
def test_keys_equal_a_dict_of_models_bit_for_bit(make, n_shards, batch_size, call_size):
    """One shard and three (the DOBE's two shards: the killed-shard test below)."""
    keys, X, y = records()
    expected = reference(make(), keys, X, y)
    with KeyedModels(
        make(), n_shards=n_shards, batch_size=batch_size, log_limit=max(batch_size, 200)
    ) as keyed:
        assert len(keyed.shards) == n_shards
        got = feed(keyed, keys, X, y, call_size)
        assert got == expected
        assert keyed.n_keys == 30 and sorted(keyed.keys()) == sorted(set(keys))
        per_shard = keyed.memory()
        assert sum(m["rows_learnt"] for m in per_shard) == len(keys)
        assert all(m["model_bytes"] > 0 for m in per_shard if m["n_keys"])
        assert all(m["threads"] == 1 for m in per_shard)  # one library thread per shard
        for m in per_shard:  # every key sits on its placement's shard, and they are even
            assert m["n_keys"] == len({k for k in keys if keyed.shard_of(k) == m["shard"]})
        counts = [m["n_keys"] for m in per_shard]
        assert max(counts) - min(counts) <= 1
    assert ray.is_initialized()  # a Ray running before is left running


def test_edoebe_keys_with_their_warm_ups_equal_a_dict_with_distributions():
    keys, X, y = records(n_keys=5, n=400, seed=3)
    models = {}
    expected = reference(edoebe(), keys, X, y, with_dist=True, models=models)
    with KeyedModels(edoebe(), n_shards=2, batch_size=50, log_limit=100) as keyed:
        got = feed(keyed, keys, X, y, 130, with_dist=True)
        # EDOEBE() recalibrates (the default): the same map of the same mixture, row by row
        assert [_recalibrated(d) for d in got] == [_recalibrated(d) for d in expected]
        assert [(d.mu, d.sigma) for d in got[::25]] == [(d.mu, d.sigma) for d in expected[::25]]
        # a shard's state holds each key's map: each as the dict's model's, learnt (compared
        # by value: a model that crossed a pickle pickles its members to other bytes)
        for k in set(keys):
            got_recal, own = keyed.model(k).recalibration_, models[k].recalibration_
            assert got_recal._state.tolist() == own._state.tolist() and got_recal.n_updates_ > 0
            assert got_recal._ku.tolist() == own._ku.tolist()
            np.testing.assert_array_equal(keyed.model(k).weights, models[k].weights)
        # a local copy of a key's model is that key's model
        copy = keyed.model(keys[0])
        probe = X[0]
        assert copy.predict_one(probe) == models[keys[0]].predict_one(probe)
        assert copy.n_samples_seen == models[keys[0]].n_samples_seen
        # issue 20, 9: five keys on two shards go three and two
        assert sorted(m["n_keys"] for m in keyed.memory()) == [2, 3]


def _recalibrated(d):
    """A recalibrated distribution's map and what it maps (the warm-up's Gaussian, then the
    mixture), as numbers."""
    from river_doebe import calibration

    parts = calibration._read(d.base, "test")
    return (type(d).__name__, type(d.base).__name__, d.knots_u.tolist(), d.knots_p.tolist(),
            [np.asarray(p).tolist() for p in parts])


def test_classifier_and_river_estimators_equal_a_dict():
    from river import compose, linear_model, preprocessing

    keys, X, y = records(n_keys=4, n=200, seed=5)
    labels = [target > 0 for target in y]
    template = DOBEClassifier(RandomFourierFeatures(n_frequencies=6, seed=2))
    expected = reference(template, keys, X, labels)
    with KeyedModels(template, n_shards=1, batch_size=90) as keyed:
        assert feed(keyed, keys, X, labels, 90) == expected
        # issue 20, 9: with_dist means nothing to a classifier: refused, not ignored
        with pytest.raises(ValueError, match="with_dist"):
            keyed.predict_learn_many(keys, X, labels, with_dist=True)
        with pytest.raises(ValueError, match="with_dist"):
            keyed.predict_many(keys, X, with_dist=True)
    # issue 20, 9: a river pipeline whose features are strings (one-hot encoded): the driver
    # leaves the features to the model. (A river Select of several features iterates a set,
    # whose order follows the process's string hashing: its sums differ in the last bit from
    # one process to another, so the pipeline selects one numeric feature.)
    colours, sizes = ["red", "green", "blue"], ["S", "M", "L", "XL"]
    rows = [
        {"colour": colours[i % 3], "size": sizes[7 * i % 4], "x0": x["x0"]} for i, x in enumerate(X)
    ]
    river_model = (
        compose.Select("x0") + (compose.Select("colour", "size") | preprocessing.OneHotEncoder())
    ) | linear_model.LinearRegression()
    expected = reference(river_model, keys, rows, y)
    with KeyedModels(river_model, n_shards=1, batch_size=90) as keyed:
        assert feed(keyed, keys, rows, y, 90) == expected
        with pytest.raises(TypeError, match="expected a dict"):
            keyed.learn_many(keys[:2], [rows[0], [1.0]], y[:2])


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
        snapshot = states(keyed)
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
        with pytest.raises(TypeError, match="not hashable|has type list"):
            keyed.learn_many(rest_keys[:-1] + [["a"]], rest_X, rest_y)
        with pytest.raises(ValueError, match="targets"):
            keyed.learn_many(rest_keys, rest_X, rest_y[:-1])
        # issue 20, 7: no targets is refused, not sent
        for learn in (keyed.learn_many, keyed.predict_learn_many):
            with pytest.raises(TypeError, match="y is None"):
                learn(rest_keys, rest_X, None)
        assert keyed.memory() == before
        assert states(keyed) == snapshot
        # a row the model itself refuses (a target past what its filter can take) aborts the
        # whole call: the other keys' rows, on both shards, before and after it, are taken back
        bad_y = list(rest_y)
        bad_y[100] = 1.7e308
        with pytest.raises(ValueError, match="safely") as info:
            keyed.predict_learn_many(rest_keys, rest_X, bad_y)
        notes = "\n".join(info.value.__notes__)
        assert f"key {rest_keys[100]!r}" in notes and "not applied" in notes
        assert "safe to send it again" in notes
        assert states(keyed) == snapshot
        keyed.learn_many(rest_keys, rest_X, rest_y)  # sent again, fixed
        assert states(keyed) == reference_states(dobe(), keys, X, y)
        assert {r["cause"] for r in keyed.recoveries} == {"rolled back an aborted call"}


def test_bad_parameters_are_refused():
    from river import anomaly, cluster

    for kwargs, word in [
        ({"n_shards": 0}, "n_shards"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"log_limit": 10, "batch_size": 20}, "log_limit"),
        ({"cpus_per_shard": -1}, "cpus_per_shard"),
        ({"address": 3}, "address"),
        ({"max_in_flight": 0}, "max_in_flight"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"threads_per_shard": 0}, "threads_per_shard"),
        ({"actor_options": 3}, "actor_options"),
    ]:
        with pytest.raises((ValueError, TypeError), match=word):
            KeyedModels(dobe(), **kwargs)
    with pytest.raises(TypeError, match="river estimator"):
        KeyedModels(lambda x: x)
    # issue 20, 9: an unsupervised template would fail on the shards: refused here
    for template in (anomaly.HalfSpaceTrees(), cluster.KMeans()):
        with pytest.raises(TypeError, match="regressor or classifier"):
            KeyedModels(template)


# ---------------------------------------------------------------------------------------------
# Checkpoints and recovery
# ---------------------------------------------------------------------------------------------


def test_a_killed_shard_is_rebuilt_and_nothing_is_lost(tmp_path):
    keys, X, y = records(n_keys=12, n=1200, seed=7)
    models = {}
    expected = reference(dobe(), keys, X, y, models=models)
    # log_limit 100: the logs pass it and the shards are snapshot (Ray objects the driver
    # owns, on its node)
    with KeyedModels(dobe(), n_shards=2, batch_size=50, log_limit=100) as keyed:
        got = feed(keyed, keys[:400], X[:400], y[:400], 100)
        kill(keyed.shards[0])
        got += feed(keyed, keys[400:600], X[400:600], y[400:600], 200)
        (first,) = keyed.recoveries
        assert first["shard"] == 0 and first["seconds"] > 0 and "died" in first["cause"]
        assert 0 <= first["rows_replayed"] <= 100 + 50
        keyed.checkpoint(tmp_path / "ckpt")  # a snapshot too
        got += feed(keyed, keys[600:900], X[600:900], y[600:900], 300)
        kill(keyed.shards[1])
        got += feed(keyed, keys[900:], X[900:], y[900:], 300)
        assert [r["shard"] for r in keyed.recoveries] == [0, 1]
        assert got == expected
        assert keyed.n_keys == 12
        assert states(keyed) == pickled(models)


def test_a_template_without_a_seed_is_rebuilt_to_the_same_models(tmp_path):
    """The report: with ``seed=None`` (``EDOEBE()``'s default) a refused call and a rebuilt
    shard replayed the keys' warm-ups with new random draws, and their models changed."""
    from river_doebe import EDOEBEClassifier

    template = EDOEBEClassifier(n_warmup=30, n_samples=1, starts=(1.0,))
    keys, X, _ = records(n_keys=2, n=120, seed=3)
    y = [x[next(iter(x))] > 0 for x in X]
    with KeyedModels(template, n_shards=2) as keyed:
        assert isinstance(keyed.seed_, int) and keyed.template.seed is None
        keyed.learn_many(keys, X, y)
        probe = list(keys[:2]), X[:2]
        before = keyed.predict_many(*probe)
        with pytest.raises(ValueError, match="label"):
            keyed.predict_learn_many(keys[:1], X[:1], ["a third label"])
        assert keyed.predict_many(*probe) == before
        kill(keyed.shards[0])
        assert keyed.predict_many(*probe) == before
        keyed.checkpoint(tmp_path / "ckpt")
    with KeyedModels.restore(tmp_path / "ckpt") as again:
        assert again.predict_many(*probe) == before
    # a template with its own seed is shipped as it is
    with KeyedModels(EDOEBEClassifier(n_warmup=30, seed=4), n_shards=1) as keyed:
        assert keyed.seed_ is None


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
