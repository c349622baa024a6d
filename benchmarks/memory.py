"""Peak memory and time of the E-DOEBE warm-up against the number of inputs (issue 18, part 2).

Every measurement runs in a fresh Python process of its own, and its peak resident memory is the
kernel's figure for that process (``os.wait4``'s ``ru_maxrss``, the peak over the process' whole
life: imports, the warm-up fallback, the fit, the members' replay and the samples after it), not a
tracemalloc estimate. Two kinds of rows:

- ``dense``: ``EDOEBE(seed=0)`` (the default families, ``n_warmup=1000``) through
  ``predict_one`` / ``learn_one`` on Friedman #1 with ``D`` inputs (``D - 5`` irrelevant), the
  window and ``--after`` samples beyond it; the rows give the peak memory, the fallback's time over
  the window, the fit (the ``learn_one`` that ends the window) and the time per sample after it;
- ``bow``: ``BagOfWords(on="text") | EDOEBE(n_warmup=200)`` on 1,000 short texts over a
  ``V``-word vocabulary with a target linear in the word counts, and river's
  ``BagOfWords | BayesianLinearRegression`` on the same texts (in its own process): peak memory,
  time of the 1,000 samples, MAE (predict, then learn).

    python benchmarks/memory.py [--sizes 10 30 100 150 300 1000] [--bow 450] [--after 200]
                                [--out benchmarks/results/memory.json]

The machine's load (``os.getloadavg``) is recorded before each row: figures taken beside other
CPU-bound processes are slower than a quiet machine's, while the memory figures do not depend on
the load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _common import HERE, ROOT

DEFAULT_SIZES = (10, 30, 100, 150, 300, 1000)


# ====================================================================== one row, in a child process


def _rss_mb(field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (peak so far) of this process, in MB (NaN off Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def _dense(n_inputs: int, n_warmup: int, after: int, seed: int) -> dict:
    import numpy as np

    from river_doebe import EDOEBE
    from river_doebe.datasets import Friedman1

    X, y = Friedman1(n_samples=n_warmup + after, n_features=n_inputs, seed=seed).arrays()
    names = [f"x{d}" for d in range(n_inputs)]
    rows = [dict(zip(names, map(float, x), strict=True)) for x in X]
    model = EDOEBE(n_warmup=n_warmup, seed=seed)
    rss_before = _rss_mb("VmRSS")
    start = time.perf_counter()
    for x, t in zip(rows[: n_warmup - 1], y[: n_warmup - 1], strict=True):
        model.predict_one(x)
        model.learn_one(x, float(t))
    fallback = time.perf_counter() - start
    peak_before_fit = _rss_mb("VmHWM")
    model.predict_one(rows[n_warmup - 1])
    start = time.perf_counter()
    model.learn_one(rows[n_warmup - 1], float(y[n_warmup - 1]))
    fit = time.perf_counter() - start
    start = time.perf_counter()
    err = []
    for x, t in zip(rows[n_warmup:], y[n_warmup:], strict=True):
        err.append(abs(model.predict_one(x) - t))
        model.learn_one(x, float(t))
    after_s = time.perf_counter() - start
    return {
        "kind": "dense",
        "inputs": n_inputs,
        "n_warmup": n_warmup,
        "members": len(model.members),
        "families": sorted({type(m.basis).__name__ for m in model.members}),
        "rss_mb_before_stream": rss_before,
        "peak_mb_before_fit": peak_before_fit,
        "fallback_seconds": fallback,
        "fallback_ms_per_sample": 1e3 * fallback / (n_warmup - 1),
        "fit_seconds": fit,
        "after_samples": after,
        "after_ms_per_sample": 1e3 * after_s / max(after, 1),
        "mae_after": float(np.mean(err)) if err else None,
    }


def bow_texts(vocabulary: int, n: int, seed: int, words_per_text: int = 20):
    """``n`` texts of ``words_per_text`` words drawn uniformly from ``vocabulary`` words, and a
    target linear in the word counts (a weight per word, N(0, 1)) plus noise of sd 0.5."""
    import numpy as np

    rng = np.random.default_rng(seed)
    words = [f"w{i:04d}" for i in range(vocabulary)]
    weights = rng.standard_normal(vocabulary)
    texts, targets = [], []
    for _ in range(n):
        picks = rng.integers(vocabulary, size=words_per_text)
        texts.append({"text": " ".join(words[i] for i in picks)})
        targets.append(float(weights[picks].sum() + 0.5 * rng.standard_normal()))
    return texts, targets


def _bow(vocabulary: int, n: int, n_warmup: int, model_name: str, seed: int) -> dict:
    from river import feature_extraction, linear_model

    from river_doebe import EDOEBE

    texts, targets = bow_texts(vocabulary, n, seed)
    if model_name == "edoebe":
        model = feature_extraction.BagOfWords(on="text") | EDOEBE(n_warmup=n_warmup, seed=seed)
    else:
        model = feature_extraction.BagOfWords(on="text") | linear_model.BayesianLinearRegression()
    abs_err = 0.0
    start = time.perf_counter()
    for x, t in zip(texts, targets, strict=True):
        abs_err += abs(model.predict_one(x) - t)
        model.learn_one(x, t)
    seconds = time.perf_counter() - start
    return {
        "kind": "bow",
        "model": model_name,
        "vocabulary": vocabulary,
        "samples": n,
        "n_warmup": n_warmup if model_name == "edoebe" else None,
        "seconds": seconds,
        "mae": abs_err / n,
    }


def child(args) -> None:
    warnings.simplefilter("ignore")
    if args.child == "dense":
        row = _dense(args.inputs, args.n_warmup, args.after, args.seed)
    else:
        row = _bow(args.inputs, args.samples, args.n_warmup, args.model, args.seed)
    print("ROW " + json.dumps(row), flush=True)


# ====================================================================== the parent


def run_child(argv: list[str]) -> dict:
    """One row in a fresh process: its own report plus the kernel's peak RSS of that process.

    The child is reaped with ``os.wait4``, which returns that process' resource usage
    (``Popen.wait`` would reap it without), after its output has been read to the end."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    load = os.getloadavg()
    start = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", *argv],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        err.seek(0)
        err_text = err.read()
    rows = [line[4:] for line in out.splitlines() if line.startswith("ROW ")]
    if proc.returncode != 0 or not rows:
        raise RuntimeError(f"child {argv} failed (exit {proc.returncode}):\n{err_text[-3000:]}")
    row = json.loads(rows[-1])
    row["peak_rss_mb"] = usage.ru_maxrss / 1024.0  # kilobytes on Linux
    row["process_seconds"] = wall
    row["load_before"] = [round(v, 2) for v in load]
    return row


def summary(rows: list[dict]) -> dict:
    """The issue's targets read off the rows: the dense rows' peak memory and fit time by inputs,
    and per vocabulary the E-DOEBE's MAE over river's BLR's, its time and its peak."""
    out = {
        "dense_peak_mb": {r["inputs"]: round(r["peak_rss_mb"], 1)
                          for r in rows if r["kind"] == "dense"},
        "dense_fit_seconds": {r["inputs"]: round(r["fit_seconds"], 1)
                              for r in rows if r["kind"] == "dense"},
    }
    bow = {}
    for r in rows:
        if r["kind"] == "bow":
            bow.setdefault(r["vocabulary"], {})[r["model"]] = r
    for v, pair in bow.items():
        if {"edoebe", "river-blr"} <= pair.keys():
            e, b = pair["edoebe"], pair["river-blr"]
            out[f"bow_{v}"] = {"mae_ratio_to_river_blr": round(e["mae"] / b["mae"], 3),
                               "seconds": round(e["seconds"], 1),
                               "peak_mb": round(e["peak_rss_mb"], 1)}
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(DEFAULT_SIZES),
                        help="numbers of dense inputs (Friedman #1 with D inputs)")
    parser.add_argument("--n-warmup", type=int, default=1000)
    parser.add_argument("--after", type=int, default=200, help="samples after the warm-up")
    parser.add_argument("--bow", type=int, nargs="*", default=[450],
                        help="vocabulary sizes of the bag-of-words rows")
    parser.add_argument("--bow-samples", type=int, default=1000)
    parser.add_argument("--bow-warmup", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "memory.json")
    parser.add_argument("--child", choices=("dense", "bow"), help=argparse.SUPPRESS)
    parser.add_argument("--inputs", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return {}
    # Numba compiles the kernels into its cache on first use: once here, outside the rows
    run_child(["dense", "--inputs", "5", "--n-warmup", "30", "--after", "5", "--seed", "0"])
    rows = []
    for d in args.sizes:
        row = run_child(["dense", "--inputs", str(d), "--n-warmup", str(args.n_warmup),
                         "--after", str(args.after), "--seed", str(args.seed)])
        rows.append(row)
        print(f"dense D={d:5d}: peak {row['peak_rss_mb']:8.1f} MB, fallback "
              f"{row['fallback_ms_per_sample']:.2f} ms/sample, fit {row['fit_seconds']:.1f} s, "
              f"after {row['after_ms_per_sample']:.2f} ms/sample, load {row['load_before'][0]}",
              flush=True)
    for v in args.bow:
        for name in ("edoebe", "river-blr"):
            row = run_child(["bow", "--inputs", str(v), "--samples", str(args.bow_samples),
                             "--n-warmup", str(args.bow_warmup), "--model", name,
                             "--seed", str(args.seed)])
            rows.append(row)
            print(f"bow V={v} {name}: peak {row['peak_rss_mb']:.1f} MB, {row['seconds']:.1f} s "
                  f"for {row['samples']}, MAE {row['mae']:.3f}, load {row['load_before'][0]}",
                  flush=True)
    payload = {
        "machine": {"python": platform.python_version(), "cores": os.cpu_count()},
        "command": "python benchmarks/memory.py " + " ".join(argv or sys.argv[1:]),
        "rows": rows,
        "summary": summary(rows),
    }
    for key, value in payload["summary"].items():
        print(f"{key}: {value}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    return payload


if __name__ == "__main__":
    main()
