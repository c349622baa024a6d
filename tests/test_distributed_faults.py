"""Keyed streams that lose nothing whatever fails (issue 20): each numbered defect of the issue
reproduced as an operator meets it, and the sharded run still equal to a dict of models fed row
by row, bit for bit (predictions and final states), after the fault.

Faults are injected where the driver is: ``SIGINT`` raised while it waits or sends (what Ctrl-C
does), replacement actors killed as they are made, a template that hangs on one row, row dicts
changed after a call, two threads, checkpoint folders removed, shared, damaged or edited.
A shard is rebuilt either on a new actor (killed, dead, hung) or in place (a call taken back).
"""

from __future__ import annotations

import contextlib
import json
import pickle
import shutil
import threading

import pytest

from river_doebe import DOBE
from river_doebe.basis import AdditivePolynomial

ray = pytest.importorskip("ray")

from keyed_support import (  # noqa: E402
    calls,
    differing,
    feed,
    kill,
    pickled,
    plain,
    ray_fixtures,
    records,
    reference,
    reference_states,
    sigint,
    states,
)

from river_doebe.distributed import KeyedModels  # noqa: E402
from river_doebe.distributed import keyed as keyed_module  # noqa: E402
from river_doebe.distributed.keyed import CheckpointError, ShardError  # noqa: E402
from river_doebe.distributed.shard import Shard  # noqa: E402

pytestmark = pytest.mark.ray
ray_session, ray_running = ray_fixtures()


@contextlib.contextmanager
def interrupt_on(monkeypatch, owner, name: str, nth: int):
    """Ctrl-C at the ``nth`` call of ``owner.name`` by the main thread, before it runs: the
    ``KeyboardInterrupt`` Python raises there on SIGINT, raised at that very step (the OS
    signal itself, whose handler runs at the main thread's next step wherever that is, is
    tested by the pipelined case below). Calls by other threads (Ray's, or a thread an earlier
    test left) are not counted."""
    real = getattr(owner, name)
    count = [0]

    def wrapper(*args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            count[0] += 1
            if count[0] == nth:
                raise KeyboardInterrupt
        return real(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(owner, name, wrapper)
        yield count


def notes(err) -> str:
    return "\n".join(getattr(err, "__notes__", []))


# ---------------------------------------------------------------------------------------------
# A part is applied at most once, in order (the shard's sequence numbers; no Ray)
# ---------------------------------------------------------------------------------------------


def test_a_shard_applies_each_numbered_part_once_and_in_order():
    shard = Shard(pickle.dumps(DOBE(AdditivePolynomial(degree=3))), 0, threads=None)
    rows = [{"u": 0.1 * i} for i in range(4)]

    def part(keys, X, y):
        return pickle.dumps((keys, X, y))

    first = shard.apply(1, part(["a", "b"], rows[:2], [0.0, 1.0]), want=True)
    assert first[0] == "ok" and len(first[1]) == 2
    state = shard.dump()[0]
    # a retry of part 1: skipped, with the answer it gave then
    assert shard.apply(1, part(["a"], rows[:1], [5.0]), want=True) == ("duplicate", 1, first)
    assert shard.dump()[0] == state
    # part 3 before part 2: refused, nothing changes
    assert shard.apply(3, part(["a"], rows[2:3], [2.0])) == ("gap", 1)
    assert shard.dump()[0] == state
    # a row the model refuses (its cube overflows): every later part is refused until the
    # shard is loaded again, as the keys before it in the part have learnt their rows
    status, key, err = shard.apply(2, part(["a", "b"], [rows[2], {"u": 1e154}], [2.0, 3.0]))
    assert (status, key) == ("refused", "b") and isinstance(err, ValueError)
    assert shard.apply(2, part(["a"], rows[2:3], [2.0]))[0] == "broken"
    assert shard.load(state, 1)["n_keys"] == 2
    assert shard.apply(2, part(["a"], rows[2:3], [2.0]))[0] == "ok"
    assert shard.seq == 2 and shard.rows_learnt == 3 and shard.rows == {"a": 2, "b": 1}


# ---------------------------------------------------------------------------------------------
# 1. An interrupted call
# ---------------------------------------------------------------------------------------------


def test_an_interrupted_call_is_taken_back_whole_and_sending_it_again_is_safe(monkeypatch):
    keys, X, y = records(n_keys=12, n=1000, seed=11)
    models = {}
    expected = reference(plain(), keys, X, y, models=models)
    with KeyedModels(plain(), n_shards=2, batch_size=40, log_limit=150) as keyed:
        got = feed(keyed, keys[:300], X[:300], y[:300], 100)
        before = states(keyed)
        call = (keys[300:500], X[300:500], y[300:500])
        # Ctrl-C while the driver waits for the shards, then between two parts' sending
        for owner, name, nth in [(ray, "wait", 1), (keyed, "_submit_part", 2)]:
            with interrupt_on(monkeypatch, owner, name, nth) as count:
                with pytest.raises(KeyboardInterrupt) as info:
                    keyed.predict_learn_many(*call)
            assert count[0] >= nth
            text = notes(info.value)
            assert "not applied" in text and "safe to send it again" in text
            assert states(keyed) == before  # the shards that had started it: rebuilt
        got += keyed.predict_learn_many(*call)  # sent again: learnt once
        # Ctrl-C in the loop of a pipelined stream: the calls read ahead are taken back
        stream = calls(keys[500:800], X[500:800], y[500:800], 50)
        with pytest.raises(KeyboardInterrupt):
            for i, predictions in enumerate(keyed.iter_predict_learn(stream)):
                got += predictions
                if i == 1:
                    sigint()
        got += feed(keyed, keys[600:800], X[600:800], y[600:800], 100)
        # then a shard dies: its snapshot and log rebuild it, nothing lost or doubled
        kill(keyed.shards[1])
        got += feed(keyed, keys[800:], X[800:], y[800:], 100)
        assert got == expected
        assert not differing(states(keyed), pickled(models))
        assert sum(m["rows_learnt"] for m in keyed.memory()) == len(keys)


# ---------------------------------------------------------------------------------------------
# 2. A replacement actor dies during recovery
# ---------------------------------------------------------------------------------------------


def test_a_replacement_that_dies_is_replaced_and_past_max_retries_the_call_is_taken_back(
    monkeypatch,
):
    keys, X, y = records(n_keys=12, n=900, seed=12)
    models = {}
    expected = reference(plain(), keys, X, y, models=models)
    with KeyedModels(plain(), n_shards=2, batch_size=40, log_limit=150, max_retries=2) as keyed:
        real = keyed._new_actor
        doomed = [1]  # how many of the next replacements die at once

        def new_actor(s):
            actor = real(s)
            if doomed[0] > 0:
                doomed[0] -= 1
                ray.kill(actor)
            return actor

        monkeypatch.setattr(keyed, "_new_actor", new_actor)
        got = feed(keyed, keys[:300], X[:300], y[:300], 100)
        kill(keyed.shards[0])
        got += keyed.predict_learn_many(keys[300:500], X[300:500], y[300:500])
        assert doomed == [0]  # the first replacement died as it started: a second one
        assert [(r["shard"], r["seconds"] is None) for r in keyed.recoveries] == [
            (0, True),
            (0, False),
        ]
        # every replacement dies: past max_retries (now one) the call is taken back on every
        # shard (each replacement is an actor's start: one is enough to show it)
        keyed.max_retries = 1
        before = states(keyed)
        doomed[0] = 10
        kill(keyed.shards[1])
        with pytest.raises(ShardError, match="shard 1 failed 2 times") as info:
            keyed.predict_learn_many(keys[500:700], X[500:700], y[500:700])
        text = notes(info.value)
        assert "not applied" in text and "safe to send it again" in text
        assert doomed == [9]  # one replacement was started (and died), then the call aborted
        doomed[0] = 0
        assert states(keyed) == before  # shard 0, which had learnt its rows, rebuilt
        got += keyed.predict_learn_many(keys[500:700], X[500:700], y[500:700])  # again
        got += feed(keyed, keys[700:], X[700:], y[700:], 100)
        assert got == expected
        assert not differing(states(keyed), pickled(models))


# ---------------------------------------------------------------------------------------------
# 3. The caller changes its row dicts after a call
# ---------------------------------------------------------------------------------------------


def test_rows_are_frozen_when_logged_so_a_reused_buffer_changes_nothing():
    keys, X, y = records(n_keys=10, n=600, seed=13)
    expected = reference_states(plain(), keys, X, y)
    with KeyedModels(plain(), n_shards=2, batch_size=30, log_limit=10_000) as keyed:
        buffer = [dict(x) for x in X[:100]]  # one buffer for every call, as a reader does
        for i in range(0, 600, 100):
            for row, x in zip(buffer, X[i : i + 100], strict=True):
                row.update(x)
            keyed.learn_many(keys[i : i + 100], buffer, y[i : i + 100])
        for row in buffer:
            row.update({name: 0.0 for name in row})
        # a part a shard holds is skipped by its number, whatever it carries
        answer = ray.get(keyed.shards[1].apply.remote(1, b"not even rows"))
        assert answer[:2] == ("duplicate", 1)
        # the logs hold every row (no snapshot yet): a rebuild replays them. Shard 0 dies; a
        # call with a row the model refuses (a target past what the filter can take) is taken
        # back on both shards, rebuilt in place from the same logs
        kill(keyed.shards[0])
        on = {keyed.shard_of(k): k for k in set(keys)}
        with pytest.raises(ValueError, match="safely"):
            keyed.learn_many([on[0], on[1]], [X[0], X[0]], [0.0, 1.7e308])
        assert not differing(states(keyed), expected)
        causes = [(r["shard"], r["cause"]) for r in keyed.recoveries]
        assert (0, "rolled back an aborted call") in causes
        assert (1, "rolled back an aborted call") in causes and "died" in causes[0][1]
        assert all(r["rows_replayed"] == 300 for r in keyed.recoveries)


# ---------------------------------------------------------------------------------------------
# 4. Two threads at once
# ---------------------------------------------------------------------------------------------


def test_calls_from_threads_are_serialised_whole():
    keys, X, y = records(n_keys=12, n=1200, seed=14)
    # two streams with keys of their own: any interleaving of the calls gives the dict's numbers
    first = {k for k in set(keys) if int(k[3:]) % 2 == 0}
    streams = [[i for i, k in enumerate(keys) if (k in first) == side] for side in (True, False)]
    expected = reference(plain(), keys, X, y)
    with KeyedModels(plain(), n_shards=2, batch_size=20, log_limit=10_000) as keyed:
        start = threading.Barrier(2)
        got: dict = {}
        errors: list = []

        def run(rows):
            try:
                start.wait()
                for lo in range(0, len(rows), 30):
                    part = rows[lo : lo + 30]
                    answers = keyed.predict_learn_many(
                        [keys[i] for i in part], [X[i] for i in part], [y[i] for i in part]
                    )
                    got.update(zip(part, answers, strict=True))
            except Exception as err:  # pragma: no cover - reported below
                errors.append(err)

        threads = [threading.Thread(target=run, args=(rows,)) for rows in streams]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert [got[i] for i in range(len(keys))] == expected
        # both threads on the same keys: the log's order is the shards' order, so a rebuild
        # gives the models the shards had
        twice = list(range(len(keys)))

        def run_shared(offset):
            start.wait()
            for lo in range(offset, len(twice), 60):
                part = twice[lo : lo + 30]
                rows = [X[i] for i in part]
                keyed.learn_many([keys[i] for i in part], rows, [y[i] for i in part])

        threads = [threading.Thread(target=run_shared, args=(off,)) for off in (0, 30)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        live = states(keyed)
        kill(keyed.shards[0])
        assert states(keyed) == live
        assert sum(m["rows_learnt"] for m in keyed.memory()) == 2 * len(keys)
        # a stream holds the object: another thread's call is refused, not interleaved
        stream = keyed.iter_predict_learn(calls(keys, X, y, 50))
        next(stream)
        refused: list = []
        other = threading.Thread(target=lambda: refused.append(_refusal(keyed, keys, X, y)))
        other.start()
        other.join()
        assert "iter_predict_learn" in refused[0]
        stream.close()


def _refusal(keyed, keys, X, y) -> str:
    try:
        keyed.learn_many(keys[:5], X[:5], y[:5])
    except RuntimeError as err:
        return str(err)
    return ""  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# 5. Recovery needs nothing outside the driver; 8. checkpoint paths that cannot be written
# ---------------------------------------------------------------------------------------------


def test_recovery_does_not_read_the_checkpoint_folder_and_bad_paths_leave_nothing(
    tmp_path, monkeypatch
):
    keys, X, y = records(n_keys=10, n=800, seed=15)
    expected = reference(plain(), keys, X, y)
    folder = tmp_path / "ckpt"
    # (half a CPU a shard: the other instance below needs one of Ray's two)
    with KeyedModels(
        plain(), n_shards=2, batch_size=40, log_limit=120, cpus_per_shard=0.5
    ) as keyed:
        got = feed(keyed, keys[:300], X[:300], y[:300], 100)
        keyed.checkpoint(folder)
        got += feed(keyed, keys[300:400], X[300:400], y[300:400], 100)
        shutil.rmtree(folder)  # retention removed it
        kill(keyed.shards[0])
        got += feed(keyed, keys[400:500], X[400:500], y[400:500], 100)
        # another instance checkpoints into the same folder after this one: its files win,
        # and the first one's recovery does not care
        other_keys, other_X, other_y = records(n_keys=3, n=90, seed=16)
        with KeyedModels(plain(), n_shards=1) as other:
            other.learn_many(other_keys, other_X, other_y)
            keyed.checkpoint(folder)
            other_manifest = other.checkpoint(folder)
        kill(keyed.shards[1])
        got += feed(keyed, keys[500:600], X[500:600], y[500:600], 100)
        assert json.loads((folder / "manifest.json").read_text()) == other_manifest
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            ["manifest.json", other_manifest["template_file"], other_manifest["shards"][0]["file"]]
        )
        # 8: a path that cannot be written names it, and leaves no file
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        with pytest.raises(OSError, match="a-file"):
            keyed.checkpoint(blocker / "ckpt")
        real = keyed_module._atomic_write
        writes = [0]

        def full_disk(path, data):
            writes[0] += 1
            if writes[0] == 2:
                raise OSError(28, "No space left on device")
            real(path, data)

        monkeypatch.setattr(keyed_module, "_atomic_write", full_disk)
        with pytest.raises(OSError, match="No space left") as info:
            keyed.checkpoint(folder)
        assert str(folder) in str(info.value)
        monkeypatch.undo()
        assert json.loads((folder / "manifest.json").read_text()) == other_manifest
        assert len(list(folder.iterdir())) == 3  # the other's checkpoint, whole; nothing else
        got += feed(keyed, keys[600:], X[600:], y[600:], 100)
        assert got == expected


# ---------------------------------------------------------------------------------------------
# 6. Checkpoints checked end to end; restored into another number of shards
# ---------------------------------------------------------------------------------------------


def test_a_checkpoint_that_does_not_match_its_manifest_is_refused_naming_the_file(
    tmp_path, monkeypatch
):
    keys, X, y = records(n_keys=40, n=800, seed=17)
    models = {}
    expected = reference(plain(), keys, X, y, models=models)
    folder = tmp_path / "ckpt"
    with KeyedModels(plain(), n_shards=2, batch_size=100) as keyed:
        got = feed(keyed, keys[:400], X[:400], y[:400], 200)
        manifest = keyed.checkpoint(folder)
        # a crash after the template and before the manifest of the next checkpoint (of
        # another template): the folder keeps the first checkpoint, whole
        keyed.template = DOBE(AdditivePolynomial(degree=2))
        keyed._template_bytes = pickle.dumps(keyed.template)

        def crash(path, data, real=keyed_module._atomic_write):
            if path.name == "manifest.json":
                raise KeyboardInterrupt  # the process dies here
            real(path, data)

        monkeypatch.setattr(keyed_module, "_atomic_write", crash)
        with pytest.raises(KeyboardInterrupt):
            keyed.checkpoint(folder)
        monkeypatch.undo()
    assert json.loads((folder / "manifest.json").read_text()) == manifest

    def damaged(edit):
        copy = tmp_path / f"copy-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(folder, copy)
        edit(copy)
        return copy

    def edit_manifest(change):
        def edit(copy):
            doc = json.loads((copy / "manifest.json").read_text())
            change(doc)
            (copy / "manifest.json").write_text(json.dumps(doc))

        return edit

    shard0, shard1 = (s["file"] for s in manifest["shards"])
    cases = [
        (edit_manifest(lambda d: d.update(n_shards=1)), "manifest.json", "checksum"),
        (lambda c: (c / "manifest.json").write_text("{\"format\": 2, "), "manifest.json", "JSON"),
        (lambda c: (c / shard1).unlink(), shard1, "cannot be read"),
        (lambda c: shutil.copy(c / shard0, c / shard1), shard1, "SHA-256"),
        (lambda c: (c / manifest["template_file"]).write_bytes(b"x"), "template", "SHA-256"),
        (edit_manifest(lambda d: d.update(format=1)), "manifest.json", "format"),
        (edit_manifest(lambda d: d.pop("shards")), "manifest.json", "checksum"),
    ]
    for edit, name, word in cases:
        copy = damaged(edit)
        with pytest.raises(CheckpointError, match=word) as info:
            KeyedModels.restore(copy)
        assert name in str(info.value) and str(copy) in str(info.value)
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        KeyedModels.restore(tmp_path / "nothing-here")
    # restored into one shard: the keys of both placed there, none lost
    with KeyedModels.restore(folder, n_shards=1) as restored:
        assert restored.n_keys == 40 and len(restored.shards) == 1
        got += feed(restored, keys[400:], X[400:], y[400:], 200)
        assert got == expected
        assert not differing(states(restored), pickled(models))
        assert repr(restored.template) == repr(plain())  # the first checkpoint's template


# ---------------------------------------------------------------------------------------------
# Bounded waits: a hung shard is a dead one
# ---------------------------------------------------------------------------------------------


def test_a_hung_shard_is_killed_and_rebuilt_and_past_max_retries_the_call_is_taken_back(
    tmp_path,
):
    flag = tmp_path / "stall"
    keys = [f"k{i % 4}" for i in range(60)]
    X = [{"u": float(i % 9) / 9} for i in range(60)]
    y = [float(i % 7) for i in range(60)]
    X[45] = {"u": 0.5, "stall": 1.0}
    X[55] = {"u": 0.5, "stall": 1.0}
    expected = reference(plain(), keys, X, y)
    # (one second: a part of this test takes milliseconds, and each hang waits it out)
    with KeyedModels(plain(str(flag)), n_shards=1, timeout=1.0, max_retries=1) as keyed:
        got = feed(keyed, keys[:40], X[:40], y[:40], 20)
        flag.write_text("1")  # the next row with "stall" hangs its shard, once
        got += keyed.predict_learn_many(keys[40:50], X[40:50], y[40:50])
        (hung,) = keyed.recoveries
        assert "timeout=1 s" in hung["cause"] and flag.read_text() == "0"
        # it hangs every time: past max_retries (now none), the call is taken back
        keyed.max_retries = 0
        before = states(keyed)
        flag.write_text("5")
        with pytest.raises(ShardError, match="timeout=1 s") as info:
            keyed.predict_learn_many(keys[50:], X[50:], y[50:])
        assert "safe to send it again" in notes(info.value)
        flag.unlink()
        assert states(keyed) == before
        got += keyed.predict_learn_many(keys[50:], X[50:], y[50:])
    assert got == expected


# ---------------------------------------------------------------------------------------------
# Pipelined calls
# ---------------------------------------------------------------------------------------------


def test_pipelined_calls_equal_the_dict_and_stop_at_a_call_cleanly():
    keys, X, y = records(n_keys=16, n=1200, seed=18)
    models = {}
    expected = reference(plain(), keys, X, y, models=models)
    stream = calls(keys, X, y, 50)  # 24 calls
    with KeyedModels(plain(), n_shards=2, batch_size=20, log_limit=200, max_in_flight=3) as keyed:
        got = []
        # a bad key in call 6: calls 0-5 come out, then the error says where to resume
        bad = [list(c) for c in stream[:8]]
        bad[6][0] = list(bad[6][0])
        bad[6][0][3] = 2.5  # a float key
        with pytest.raises(TypeError, match="row 3: key 2.5") as info:
            for predictions in keyed.iter_predict_learn(map(tuple, bad)):
                got.append(predictions)
        assert len(got) == 6 and "resume from call 6" in notes(info.value)
        # stopped by its reader after two calls: the calls read ahead are taken back
        reader = keyed.iter_predict_learn(stream[6:])
        got += [next(reader), next(reader)]
        reader.close()
        # then to the end, a shard killed on the way
        for i, predictions in enumerate(keyed.iter_predict_learn(stream[8:])):
            got.append(predictions)
            if i == 5:
                kill(keyed.shards[0])
        assert [p for call in got for p in call] == expected
        assert not differing(states(keyed), pickled(models))
        assert [r["shard"] for r in keyed.recoveries if "died" in r["cause"]] == [0]


# ---------------------------------------------------------------------------------------------
# 9. Edges, through the driver: float keys, huge int keys, unseen keys, placement
# ---------------------------------------------------------------------------------------------


def test_key_edges_through_the_driver():
    keys, X, y = records(n_keys=5, n=200, seed=21)
    huge = 10**5000  # Python prints at most 4,300 digits: it raised a raw ValueError
    keys = [huge if k == keys[0] else k for k in keys]
    expected = reference_states(plain(), keys, X, y)
    with KeyedModels(plain(), n_shards=2, batch_size=40) as keyed:
        # 7.0 is refused before 7 is seen, and after
        with pytest.raises(TypeError, match="float"):
            keyed.learn_many([7.0], [X[0]], [y[0]])
        keyed.learn_many([7], [X[0]], [y[0]])
        with pytest.raises(TypeError, match="float"):
            keyed.learn_many([7.0], [X[0]], [y[0]])
        keyed.learn_many(keys, X, y)
        # five keys and 7 on two shards: three and three, however they hash
        assert sorted(m["n_keys"] for m in keyed.memory()) == [3, 3]
        # predictions for keys never seen create nothing and grow no route table (not by one
        # entry: a thousand keys show it as well as more; each is a clone on its shard)
        placed = len(keyed._placement)
        unseen = [f"unseen-{i}" for i in range(1_000)]
        keyed.predict_many(unseen, [X[0]] * len(unseen))
        assert len(keyed._placement) == placed == 6 and keyed.n_keys == 6
        got = states(keyed)
        assert got.pop(7) is not None
        assert not differing(got, expected)
