"""Many keyed streams on Ray: records/s against the number of shards, next to one process.

The records are ``KeyedDrift(n_keys, n_samples)`` (every key its own drifting stream), fed in
calls of ``--call`` records (``predict_learn_many``: each record's prediction made before it is
learnt). Rows, for each template:

- ``dict, 1 thread``: one process, a dict ``{key: template.clone()}``; each call's records
  grouped by key and fed to the key's model with ``predict_learn_many`` (what a shard does with
  a batch), the library pinned to one thread as in a shard;
- ``dict, all threads``: the same with the library's every thread (the E-DOEBE warm-up's fit
  runs on both cores);
- ``1 shard``, ``2 shards``, ... up to the machine's cores: ``KeyedModels(template,
  n_shards=S)`` on a local Ray started once by the script (the actors' start is timed apart,
  ``startup_s``).

Pipelined calls (``--pipelined``, default ``2000,20000`` records per call): the same records
through ``KeyedModels.iter_predict_learn`` (up to ``max_in_flight`` calls in flight per shard),
on 1 and 2 shards, and through ``predict_learn_many`` one call at a time on 1 and 2 shards at
the smallest size (the calls waited for before: each call's slowest shard sets its pace).

State size (``--state-keys``, DOBE keys): recovery and checkpoint time against the state's size.
For each number of keys (50 records each), on 2 shards: ``checkpoint`` (snapshot of every shard,
files written by the driver), ``restore`` (new actors included), a recovery right after the
checkpoint (new actor, base loaded, nothing to replay) and one after ``--state-log`` more
records (the log replayed).

Templates: ``DOBE`` with 100 random Fourier features (``n_frequencies=50``) and
``EDOEBE(n_warmup=200)`` (the library's defaults otherwise: each key fits its members on its
first 200 records). Repeats are interleaved across the rows and the best is kept. Every run's
predictions are checked equal, bit for bit, to the first dict run's. Then one more run per
template with the most shards kills shard 0's actor halfway (``ray.kill``) and reports the
recovery: its seconds (new actor, snapshot loaded, log replayed), the rows replayed and whether
the predictions still equal the dict's. The memory per key is the pickled models' size over the
keys (``KeyedModels.memory``).

    python benchmarks/scaleout.py [--repeats 3] [--pipelined 2000,20000] [--out DIR] [--tiny]

Targets (2 cores): 2 shards >= 1.4x one shard on ``EDOEBE(n_warmup=200)``, in calls of 20,000
and, pipelined, of 2,000 and 20,000 records; one shard >= 0.8x the one-thread dict. Writes
``scaleout.json`` and ``scaleout.md`` to ``--out`` (default ``benchmarks/results``); ``--only
scaling`` or ``--only state`` runs one part.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numba
from _common import HERE

import river_doebe
from river_doebe import DOBE, EDOEBE
from river_doebe.basis import RandomFourierFeatures
from river_doebe.datasets import KeyedDrift

DOBE_NAME = "DOBE, 100 RFF features"
EDOEBE_NAME = "EDOEBE(n_warmup=200)"


def templates(args) -> dict:
    """``name: (template, n_keys, n_samples)``."""
    dobe = DOBE(RandomFourierFeatures(n_frequencies=50, lengthscale=1.0, seed=0), var_rw=1e-3)
    if args.tiny:  # the pipeline only: a small warm-up
        edoebe = EDOEBE(n_warmup=20, n_samples=1, starts=(1.0,), seed=0)
        return {DOBE_NAME: (dobe, 8, 800), EDOEBE_NAME: (edoebe, 4, 200)}
    edoebe = EDOEBE(n_warmup=200, seed=0)
    return {
        DOBE_NAME: (dobe, args.dobe_keys, args.dobe_keys * args.dobe_records),
        EDOEBE_NAME: (edoebe, args.edoebe_keys, args.edoebe_keys * args.edoebe_records),
    }


def calls_of(dataset, size: int) -> list:
    keys, X, y = map(list, zip(*dataset))
    return [
        (keys[i : i + size], X[i : i + size], y[i : i + size]) for i in range(0, len(keys), size)
    ]


def warm_rows(template):
    """Rows of one key of another seed, enough to take an E-DOEBE past its warm-up."""
    n = getattr(template, "n_warmup", 0) + 100
    _, X, y = map(list, zip(*KeyedDrift(n_keys=1, n_samples=n, seed=99)))
    return X, y


def feed_dict(template, calls) -> list:
    """One process: each call's records grouped by key, each key's fed at once."""
    models: dict = {}
    out = []
    for keys, X, y in calls:
        groups: dict = {}
        for i, key in enumerate(keys):
            groups.setdefault(key, []).append(i)
        preds = [None] * len(keys)
        for key, rows in groups.items():
            model = models.get(key)
            if model is None:
                model = models[key] = template.clone()
            got = model.predict_learn_many([X[i] for i in rows], [y[i] for i in rows])
            for i, p in zip(rows, got, strict=True):
                preds[i] = p
        out += preds
    return out


def feed_keyed(keyed, calls, kill_at: int | None = None) -> list:
    import ray

    out = []
    for c, (keys, X, y) in enumerate(calls):
        if c == kill_at:
            ray.kill(keyed.shards[0])
        out += keyed.predict_learn_many(keys, X, y)
    return out


def feed_pipelined(keyed, calls) -> list:
    out = []
    for predictions in keyed.iter_predict_learn(calls):
        out += predictions
    return out


def start_keyed(template, n_shards, args, warm_up):
    """A KeyedModels whose actors have loaded the compiled kernels (``warm``)."""
    from river_doebe.distributed import KeyedModels

    keyed = KeyedModels(
        template,
        n_shards=n_shards,
        batch_size=args.batch,
        log_limit=args.log_limit,
        max_in_flight=args.in_flight,
    )
    keyed.warm(*warm_up)
    return keyed


def timed_keyed(template, n_shards, args, warm_up, feed, calls):
    """``(seconds, startup seconds, predictions, memory)`` of one run on fresh shards."""
    start = time.perf_counter()
    keyed = start_keyed(template, n_shards, args, warm_up)
    startup = time.perf_counter() - start
    try:
        start = time.perf_counter()
        got = feed(keyed, calls)
        seconds = time.perf_counter() - start
        memory = keyed.memory()
    finally:
        keyed.close()
    return seconds, startup, got, memory


def run_template(name, template, n_keys, n_samples, args, cores):
    dataset = KeyedDrift(n_keys=n_keys, n_samples=n_samples, seed=0)
    calls = calls_of(dataset, args.call)
    sizes = [int(v) for v in args.pipelined.split(",") if v]
    piped_calls = {size: calls_of(dataset, size) for size in sizes}
    # rows of another key of another seed, for the throwaway models that load the kernels
    warm_up = warm_rows(template)
    shard_counts = list(range(1, cores + 1))
    rows = {"dict, 1 thread": [], "dict, all threads": []}
    rows.update({f"{s} shard{'s' if s > 1 else ''}": [] for s in shard_counts})
    # the pipelined runs, and one call at a time at the smallest size: (size, mode, shards)
    piped = {(size, "pipelined", s): [] for size in sizes for s in (1, 2) if s <= cores}
    if sizes:
        piped.update({(min(sizes), "one call at a time", s): [] for s in (1, 2) if s <= cores})
    piped_startup: dict = {}
    startup: dict = {}
    memory = None
    expected = None
    identical = True
    loads = []
    for _ in range(args.repeats):
        loads.append([round(x, 2) for x in os.getloadavg()])
        for label in rows:
            if label.startswith("dict"):
                threads = 1 if label == "dict, 1 thread" else None
                with river_doebe.num_threads(threads):
                    start = time.perf_counter()
                    got = feed_dict(template, calls)
                    seconds = time.perf_counter() - start
            else:
                n_shards = int(label.split()[0])
                seconds, up, got, mem = timed_keyed(
                    template, n_shards, args, warm_up, feed_keyed, calls
                )
                startup.setdefault(label, []).append(up)
                if memory is None and n_shards == cores:
                    memory = mem
            if expected is None:
                expected = got
            identical &= got == expected
            rows[label].append(seconds)
        for (size, mode, n_shards), secs in piped.items():
            feed = feed_pipelined if mode == "pipelined" else feed_keyed
            seconds, up, got, _ = timed_keyed(
                template, n_shards, args, warm_up, feed, piped_calls[size]
            )
            piped_startup.setdefault((size, mode, n_shards), []).append(up)
            identical &= got == expected
            secs.append(seconds)
    table = {
        label: {
            "records": n_samples,
            "seconds_all": secs,
            "seconds_best": min(secs),
            "records_per_s": n_samples / min(secs),
            **({"startup_s_best": min(startup[label])} if label in startup else {}),
        }
        for label, secs in rows.items()
    }
    rate = {label: row["records_per_s"] for label, row in table.items()}
    one = rate["1 shard"]
    ratios = {
        "1 shard / dict, 1 thread": one / rate["dict, 1 thread"],
        "1 shard / dict, all threads": one / rate["dict, all threads"],
    }
    for s in shard_counts[1:]:
        ratios[f"{s} shards / 1 shard"] = rate[f"{s} shards"] / one

    pipelined = {}
    for (size, mode, n_shards), secs in piped.items():
        entry = pipelined.setdefault(f"{mode}, calls of {size:,}", {})
        entry[f"{n_shards} shard{'s' if n_shards > 1 else ''}"] = {
            "calls": len(piped_calls[size]),
            "seconds_all": secs,
            "seconds_best": min(secs),
            "records_per_s": n_samples / min(secs),
            "startup_s_best": min(piped_startup[(size, mode, n_shards)]),
        }
    for entry in pipelined.values():
        if "2 shards" in entry:
            entry["2 shards / 1 shard"] = (
                entry["2 shards"]["records_per_s"] / entry["1 shard"]["records_per_s"]
            )

    # recovery: kill shard 0 halfway through, with the most shards
    keyed = start_keyed(template, cores, args, warm_up)
    try:
        start = time.perf_counter()
        got = feed_keyed(keyed, calls, kill_at=len(calls) // 2)
        seconds = time.perf_counter() - start
        recovery = {
            "shards": cores,
            "killed_shard": 0,
            "killed_before_call": len(calls) // 2,
            "calls": len(calls),
            "recoveries": keyed.recoveries,
            "seconds_with_recovery": seconds,
            "identical_to_dict": got == expected,
        }
    finally:
        keyed.close()
    n_keys_seen = sum(m["n_keys"] for m in memory)
    model_bytes = sum(m["model_bytes"] for m in memory)
    return {
        "template": repr(template),
        "n_keys": n_keys,
        "records": n_samples,
        "records_per_key": n_samples / n_keys,
        "call": args.call,
        "batch_size": args.batch,
        "log_limit": args.log_limit,
        "rows": table,
        "ratios": ratios,
        "pipelined": pipelined,
        "max_in_flight": args.in_flight,
        "load_at_repeats": loads,
        "identical": identical,
        "memory": {"per_shard": memory, "bytes_per_key": model_bytes / n_keys_seen},
        "recovery": recovery,
    }


def state_sizes(args) -> list[dict]:
    """Checkpoint, restore and recovery times against the state's size (DOBE keys, 2 shards)."""
    import tempfile

    from river_doebe.distributed import KeyedModels
    from river_doebe.distributed.shard import kill_and_wait

    template = templates(args)[DOBE_NAME][0]
    warm_up = warm_rows(template)
    out = []
    for n_keys in [int(v) for v in args.state_keys.split(",") if v]:
        keys, X, y = map(list, zip(*KeyedDrift(n_keys=n_keys, n_samples=50 * n_keys, seed=1)))
        more = KeyedDrift(n_keys=n_keys, n_samples=args.state_log, seed=2)
        more_keys, more_X, more_y = map(list, zip(*more))
        with tempfile.TemporaryDirectory() as tmp:
            keyed = KeyedModels(template, n_shards=2, batch_size=args.batch, log_limit=10**9)
            try:
                keyed.warm(*warm_up)
                keyed.learn_many(keys, X, y)
                start = time.perf_counter()
                manifest = keyed.checkpoint(tmp)
                checkpoint_s = time.perf_counter() - start
                state_bytes = sum(s["bytes"] for s in manifest["shards"])
                # a key of shard 0: a call on it finds the shard dead and rebuilds it
                i = next(i for i, k in enumerate(keys) if keyed.shard_of(k) == 0)
                kill_and_wait(keyed.shards[0])
                keyed.learn_many(keys[i : i + 1], X[i : i + 1], y[i : i + 1])
                base_only = [r for r in keyed.recoveries if r["shard"] == 0][-1]
                keyed.learn_many(more_keys, more_X, more_y)
                kill_and_wait(keyed.shards[0])
                keyed.learn_many(keys[i : i + 1], X[i : i + 1], y[i : i + 1])
                with_log = [r for r in keyed.recoveries if r["shard"] == 0][-1]
            finally:
                keyed.close()
            start = time.perf_counter()
            restored = KeyedModels.restore(tmp, batch_size=args.batch)
            restore_s = time.perf_counter() - start
            restored.close()
        out.append(
            {
                "n_keys": n_keys,
                "state_bytes": state_bytes,
                "checkpoint_s": checkpoint_s,
                "restore_s": restore_s,
                "recovery_base_only_s": base_only["seconds"],
                "recovery_with_log_s": with_log["seconds"],
                "rows_replayed": with_log["rows_replayed"],
                "load": [round(x, 2) for x in os.getloadavg()],
            }
        )
        print(json.dumps(out[-1]), flush=True)
    return out


def markdown(payload) -> str:
    m = payload["machine"]
    lines = [
        "# Many keyed streams on Ray: records/s against shards",
        "",
        f"{m['cores']} cores, Python {m['python']}, Ray {m['ray']}; load average before the "
        f"run {m['load_before']}, after {m['load_after']}. Best of {payload['repeats']} "
        "interleaved repeats; every run's predictions equal the one-process dict's, bit for "
        "bit. `python benchmarks/scaleout.py`.",
        "",
    ]
    # what a results file merged from several runs says about where each part comes from
    for note in payload.get("notes", []):
        lines += [note, ""]
    for name, r in payload["results"].items():
        lines += [
            f"## {name}",
            "",
            f"{r['n_keys']} keys, {r['records']:,} records ({r['records_per_key']:.0f} per key), "
            f"calls of {r['call']:,} records, batches of {r['batch_size']:,}.",
            "",
            "| run | records/s | best [s] | actors' start [s] |",
            "|---|---:|---:|---:|",
        ]
        for label, row in r["rows"].items():
            start = row.get("startup_s_best")
            lines.append(
                f"| {label} | {row['records_per_s']:,.0f} | {row['seconds_best']:.2f} "
                f"| {'-' if start is None else f'{start:.1f}'} |"
            )
        lines += ["", "| ratio | value |", "|---|---:|"]
        lines += [f"| {k} | {v:.2f}x |" for k, v in r["ratios"].items()]
        if r.get("pipelined"):
            lines += [
                "",
                f"Calls of fewer records (up to {r['max_in_flight']} calls in flight per shard "
                "when pipelined; one call at a time: each call waits for its slowest shard):",
                "",
                "| calls | 1 shard [records/s] | 2 shards [records/s] | 2 shards / 1 shard |",
                "|---|---:|---:|---:|",
            ]
            for label, entry in r["pipelined"].items():
                one, two = entry.get("1 shard"), entry.get("2 shards")
                ratio = entry.get("2 shards / 1 shard")
                two_rate = "-" if two is None else f"{two['records_per_s']:,.0f}"
                ratio_text = "-" if ratio is None else f"{ratio:.2f}x"
                lines.append(
                    f"| {label} | {one['records_per_s']:,.0f} | {two_rate} | {ratio_text} |"
                )
        rec = r["recovery"]
        secs = ", ".join(
            f"{x['seconds']:.2f} s ({x['rows_replayed']:,} rows replayed)"
            for x in rec["recoveries"]
        )
        lines += [
            "",
            f"Memory: {r['memory']['bytes_per_key'] / 1e3:,.1f} kB per key (pickled models). "
            f"Recovery after `ray.kill` of shard 0 of {rec['shards']}: {secs or 'none'}; "
            f"predictions identical to the dict's: {rec['identical_to_dict']}.",
            "",
        ]
    if payload.get("state_size"):
        lines += [
            "## Recovery and checkpoint time against the state's size",
            "",
            "DOBE keys (50 records each) on 2 shards; the state is the shards' models pickled. "
            "Checkpoint: every shard snapshot and its file written by the driver. Restore: new "
            "actors included. Recovery: from the failure to the end of the replay, a new actor "
            "included, right after a checkpoint (base only) and after more records (replayed).",
            "",
            "| keys | state [MB] | checkpoint [s] | restore [s] | recovery, base only [s] "
            "| recovery with log [s] (rows) | load |",
            "|---:|---:|---:|---:|---:|---:|---|",
        ]
        for row in payload["state_size"]:
            lines.append(
                f"| {row['n_keys']:,} | {row['state_bytes'] / 1e6:,.1f} | "
                f"{row['checkpoint_s']:.2f} | {row['restore_s']:.2f} | "
                f"{row['recovery_base_only_s']:.2f} | {row['recovery_with_log_s']:.2f} "
                f"({row['rows_replayed']:,}) | {row['load'][0]} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--call", type=int, default=20_000, help="records per call")
    parser.add_argument("--batch", type=int, default=8192, help="KeyedModels batch_size")
    parser.add_argument("--log-limit", type=int, default=50_000)
    parser.add_argument("--dobe-keys", type=int, default=400)
    parser.add_argument("--dobe-records", type=int, default=250, help="records per key")
    parser.add_argument("--edoebe-keys", type=int, default=48)
    parser.add_argument("--edoebe-records", type=int, default=500, help="records per key")
    parser.add_argument("--cores", type=int, default=None, help="default: os.cpu_count()")
    parser.add_argument(
        "--pipelined", default="2000,20000", help="records per call of the pipelined rows"
    )
    parser.add_argument("--in-flight", type=int, default=4, help="KeyedModels max_in_flight")
    parser.add_argument(
        "--state-keys", default="100,400,1600", help="DOBE keys of the state-size rows"
    )
    parser.add_argument("--state-log", type=int, default=20_000, help="records replayed")
    parser.add_argument(
        "--only", choices=["all", "scaling", "state"], default="all", help="sections to run"
    )
    parser.add_argument(
        "--templates", default="dobe,edoebe", help="the templates of the scaling rows: dobe, edoebe"
    )
    parser.add_argument("--tiny", action="store_true", help="a seconds-long run of the pipeline")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    if args.tiny:
        args.repeats, args.call, args.batch, args.log_limit = 1, 300, 128, 256
        args.pipelined, args.state_keys, args.state_log = "100", "8", 200

    import ray

    cores = args.cores or os.cpu_count() or 1
    # Ray starts its workers at niceness 15 (to keep its own services responsive), so on a
    # machine shared with other jobs the shards would get the cores last while the dict runs
    # at the normal priority: run the shards at the driver's priority, for a like-for-like
    # comparison (the variable is read by the workers this script's Ray starts)
    os.environ.setdefault("RAY_worker_niceness", "0")
    load_before = [round(x, 2) for x in os.getloadavg()]
    start = time.perf_counter()
    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    ray_init_s = time.perf_counter() - start
    results = {}
    states = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            chosen = {DOBE_NAME: "dobe", EDOEBE_NAME: "edoebe"}
            wanted = {t.strip() for t in args.templates.split(",")}
            for name, (template, n_keys, n_samples) in templates(args).items():
                if args.only == "state":
                    break
                if chosen[name] not in wanted:
                    continue
                # compile (or load) the kernels in this process first, untimed
                feed_dict(template, [(["warm"] * len(X), X, y) for X, y in [warm_rows(template)]])
                results[name] = run_template(name, template, n_keys, n_samples, args, cores)
                print(json.dumps({name: results[name]["ratios"]}), flush=True)
                print(json.dumps({name: results[name]["pipelined"]}), flush=True)
            if args.only != "scaling" and cores >= 2:
                states = state_sizes(args)
    finally:
        ray.shutdown()
    payload = {
        "machine": {
            "cores": cores,
            "cpu_count": os.cpu_count(),
            "numba_threads": numba.config.NUMBA_NUM_THREADS,
            "python": platform.python_version(),
            "ray": ray.__version__,
            "load_before": load_before,
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "ray_init_s": ray_init_s,
            "ray_worker_niceness": os.environ["RAY_worker_niceness"],
        },
        "repeats": args.repeats,
        "results": results,
        "state_size": states,
    }
    if EDOEBE_NAME in results and cores >= 2:
        r = results[EDOEBE_NAME]["ratios"]
        payload["targets"] = {
            "2 shards >= 1.4x 1 shard, EDOEBE(n_warmup=200)": r["2 shards / 1 shard"] >= 1.4,
            "1 shard >= 0.8x dict (1 thread), EDOEBE(n_warmup=200)": r["1 shard / dict, 1 thread"]
            >= 0.8,
        }
        for label, entry in results[EDOEBE_NAME]["pipelined"].items():
            if label.startswith("pipelined") and "2 shards / 1 shard" in entry:
                target = f"2 shards >= 1.4x 1 shard, {label}, EDOEBE(n_warmup=200)"
                payload["targets"][target] = entry["2 shards / 1 shard"] >= 1.4
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaleout.json").write_text(json.dumps(payload, indent=2) + "\n")
    (args.out / "scaleout.md").write_text(markdown(payload))
    print(markdown(payload))
    return payload


if __name__ == "__main__":
    main()
