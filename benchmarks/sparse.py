"""Sparse river dicts: missing keys, categories first seen late, bags of words (issue 18, Sec. 3).

Every score is one step ahead (predict, then learn), each model against river's own pipeline on
the same stream:

- ``dropout``: a sensor stream (``temp`` around 15 with a spread of 0.5, ``hum``, ``wind``; the
  target depends on all three) whose rows lack ``temp`` with probability 0.2 after the warm-up
  (a drop-out). MAE and 90% interval coverage on the rows that lack it, ``EDOEBE()`` against
  ``StandardScaler | BayesianLinearRegression`` (river's scaler leaves a missing key missing,
  i.e. at its mean).
- ``shops``: a one-hot stream (``OneHotEncoder`` on ``shop``, plus a numeric ``u``) whose shops
  5-9 first appear after sample 700, after the warm-up (500): MAE on the last 500 samples,
  ``EDOEBE(n_warmup=500)`` against ``BayesianLinearRegression`` behind the same encoder.
- ``bow``: ``BagOfWords(on="text") | EDOEBE(n_warmup=200)`` on texts of a small vocabulary,
  the target linear in the word counts, against ``BayesianLinearRegression`` on the same
  pipeline; some texts are empty (the first one included).
- ``sweep`` (the threshold): two families of streams whose input ``a`` is present in a fraction
  ``f`` of the warm-up window's samples, scored after the warm-up with ``a`` forced to the dense
  rule (centred, a missing key at its mean) and forced to the sparse rule (scaled only, a
  missing key at 0): a drop-out sensor that drops out more after the warm-up (absent means
  unknown) and a positive weight such as a TF-IDF value (absent means 0). The presence
  threshold of the rule is where misclassing the one costs as much as misclassing the other.

    python benchmarks/sparse.py [--trials 3] [--experiments dropout shops bow sweep] [--merge]

Writes ``sparse.json`` and ``sparse.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _common import HERE
from river import compose, feature_extraction, linear_model, preprocessing

from river_doebe import EDOEBE
from river_doebe.utils import json_safe

Z90 = 1.6448536269514722


# ---------------------------------------------------------------------- streams
def dropout_stream(n=3000, n_warmup=1000, p_drop=0.2, seed=0, warm_drop=0.0):
    """``(x, y, dropped)`` triples: ``temp`` is missing from a row with probability ``p_drop``
    after the warm-up (``warm_drop`` during it)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        temp = 15.0 + 0.5 * rng.normal()
        hum = 60.0 + 10.0 * rng.normal()
        wind = abs(5.0 + 2.0 * rng.normal())
        y = (2.0 * (temp - 15.0) + math.sin((hum - 60.0) / 8.0) + 0.3 * (wind - 5.0)
             + 0.3 * rng.normal())
        x = {"temp": temp, "hum": hum, "wind": wind}
        p = warm_drop if t < n_warmup else p_drop
        dropped = bool(rng.uniform() < p)
        if dropped:
            del x["temp"]
        out.append((x, y, dropped))
    return out


def shops_stream(n=1500, seed=0, new_after=700, n_old=5, n_new=5):
    rng = np.random.default_rng(seed)
    effect = rng.normal(0.0, 2.0, size=n_old + n_new)
    out = []
    for t in range(n):
        k = int(rng.integers(n_old if t < new_after else n_old + n_new))
        u = float(rng.normal())
        out.append(({"shop": f"s{k}", "u": u}, effect[k] + 0.5 * u + 0.1 * rng.normal()))
    return out


def bow_stream(n=1200, seed=0, vocab=40, p_empty=0.03):
    rng = np.random.default_rng(seed)
    words = [f"w{i:03d}" for i in range(vocab)]
    coef = rng.normal(0.0, 1.0, size=vocab)
    freq = rng.dirichlet(np.full(vocab, 0.5))
    out = []
    for t in range(n):
        if t == 0 or rng.uniform() < p_empty:
            out.append(({"text": ""}, 0.1 * float(rng.normal())))
            continue
        k = int(rng.integers(3, 12))
        idx = rng.choice(vocab, size=k, p=freq)
        counts = np.bincount(idx, minlength=vocab)
        out.append(({"text": " ".join(words[i] for i in idx)},
                    float(counts @ coef) + 0.1 * float(rng.normal())))
    return out


# ---------------------------------------------------------------------- scoring
def _gauss(model, x):
    dist = model.predict_one(x, with_dist=True)
    return float(dist.mu), float(dist.sigma)


def run_dropout(seed: int, n_warmup: int = 1000, n: int = 3000, **edoebe) -> dict:
    data = dropout_stream(n=n, n_warmup=n_warmup, seed=seed)
    models = {
        "EDOEBE": EDOEBE(n_warmup=n_warmup, seed=seed, **edoebe),
        # the family whose members a -30 sigma input hurt most (their features vanish there)
        "EDOEBE(families=['rbf'])": EDOEBE(families=["rbf"], n_warmup=n_warmup, seed=seed,
                                           **edoebe),
        "StandardScaler | BLR": preprocessing.StandardScaler()
        | linear_model.BayesianLinearRegression(),
    }
    out = {}
    for name, model in models.items():
        err, inside, t0 = [], [], time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for x, y, dropped in data:
                mu, sigma = _gauss(model, x)
                if dropped:
                    err.append(abs(y - mu))
                    inside.append(abs(y - mu) <= Z90 * sigma)
                model.learn_one(x, y)
        out[name] = {"mae_dropped": float(np.mean(err)), "cover90_dropped": float(np.mean(inside)),
                     "n_dropped": len(err), "seconds": time.perf_counter() - t0}
    return out


def _one_hot(model):
    return (compose.Select("shop") | preprocessing.OneHotEncoder()) + compose.Select("u") | model


def run_shops(seed: int, n_warmup: int = 500, **edoebe) -> dict:
    data = shops_stream(seed=seed)
    models = {"EDOEBE": _one_hot(EDOEBE(n_warmup=n_warmup, seed=seed, **edoebe)),
              "BLR": _one_hot(linear_model.BayesianLinearRegression())}
    out = {}
    for name, model in models.items():
        err, t0 = [], time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for t, (x, y) in enumerate(data):
                mu = model.predict_one(x)
                if t >= len(data) - 500:
                    err.append(abs(y - mu))
                model.learn_one(x, y)
        out[name] = {"mae_last500": float(np.mean(err)), "seconds": time.perf_counter() - t0}
    return out


class _SkipEmptyFirst(linear_model.BayesianLinearRegression):
    """river's BayesianLinearRegression, which cannot learn an empty first sample (river 0.26:
    "unexpected array size"): such a sample is skipped."""

    def learn_one(self, x, y):
        if x or self._n_samples_seen:
            super().learn_one(x, y)
            self._n_samples_seen += 1

    _n_samples_seen = 0


def run_bow(seed: int, n_warmup: int = 200, **edoebe) -> dict:
    data = bow_stream(seed=seed)
    models = {
        "EDOEBE": feature_extraction.BagOfWords(on="text")
        | EDOEBE(n_warmup=n_warmup, seed=seed, **edoebe),
        "BLR": feature_extraction.BagOfWords(on="text") | _SkipEmptyFirst(),
    }
    out = {}
    for name, model in models.items():
        err, t0 = [], time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                for t, (x, y) in enumerate(data):
                    mu = model.predict_one(x)
                    if t >= n_warmup:
                        err.append(abs(y - mu))
                    model.learn_one(x, y)
            out[name] = {"mae_after_warmup": float(np.mean(err)),
                         "seconds": time.perf_counter() - t0}
        except Exception as exc:  # the "before" code fails on the first empty text
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


# ---------------------------------------------------------------------- the threshold sweep
def sweep_stream(kind: str, f: float, seed: int, n=1000, n_warmup=300):
    """Two inputs: ``a`` (the one whose presence varies) and ``b`` (always present).

    ``"sensor"``: ``a`` around 10 with spread 1, present in a fraction ``f`` of the warm-up's
    samples and in 80% after it (a drop-out that gets worse: absent means unknown);
    ``"tight sensor"``: the same around 15 with spread 0.5 (the drop-out stream's ``temp``);
    ``"weight"``: ``a`` a positive weight (log-normal around 1, as a TF-IDF weight), present
    in a fraction ``f`` of all samples, absent meaning 0 (the target is 2a)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        b = float(rng.normal())
        if kind in ("sensor", "tight sensor"):
            present = rng.uniform() < (f if t < n_warmup else 0.8)
            u = float(rng.normal())
            a = 10.0 + u if kind == "sensor" else 15.0 + 0.5 * u
            y = 1.5 * u + math.sin(2.0 * b) + 0.2 * rng.normal()
        else:
            present = rng.uniform() < f
            a = math.exp(0.3 * float(rng.normal())) if present else 0.0
            y = 2.0 * a + math.sin(2.0 * b) + 0.2 * rng.normal()
        x = {"b": b}
        if present:
            x["a"] = a
        out.append((x, y, not present))
    return out


def run_sweep(seed: int, fractions, n_warmup: int = 300,
              kinds=("sensor", "tight sensor", "weight")) -> list[dict]:
    from river_doebe.warmup import fallback

    rows = []
    if not hasattr(fallback, "DENSE_PRESENCE"):
        return rows  # (the rule does not exist before the fix)
    saved = fallback.DENSE_PRESENCE
    try:
        for kind in kinds:
            for f in fractions:
                row = {"kind": kind, "presence": f, "seed": seed}
                for rule, threshold in (("dense", 0.0), ("sparse", 1.01)):
                    fallback.DENSE_PRESENCE = threshold
                    data = sweep_stream(kind, f, seed, n_warmup=n_warmup)
                    model = EDOEBE(families=["hsgp", "rff"], n_warmup=n_warmup, n_samples=2,
                                   seed=seed)
                    err, err_absent = [], []
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        for t, (x, y, absent) in enumerate(data):
                            mu = model.predict_one(x)
                            if t >= n_warmup:
                                err.append(abs(y - mu))
                                if absent:
                                    err_absent.append(abs(y - mu))
                            model.learn_one(x, y)
                    row[f"{rule}_mae"] = float(np.mean(err))
                    row[f"{rule}_mae_absent"] = float(np.mean(err_absent)) if err_absent else None
                rows.append(row)
                print(row, flush=True)
    finally:
        fallback.DENSE_PRESENCE = saved
    return rows


# ---------------------------------------------------------------------- report
def _summary(per_trial: list[dict], key: str) -> dict:
    out = {}
    for name in per_trial[0]:
        vals = [t[name].get(key) for t in per_trial if key in t[name]]
        if vals:
            out[name] = {"mean": float(np.mean(vals)), "min": float(np.min(vals)),
                         "max": float(np.max(vals))}
    return out


def markdown(results: dict) -> str:
    lines = ["# Sparse river dicts (issue 18, Sec. 3)", "", "Runs (the load average at the start):",
             ""]
    lines += [f"- `python benchmarks/sparse.py {run['args']}` ("
              + ("load not recorded" if run["load"] is None else f"load {run['load']:.1f}") + ")"
              for run in results.get("runs", [])]
    lines.append("")
    for exp, theirs, what in (
        ("dropout", "StandardScaler | BLR", "MAE on the rows that lack `temp` (after the warm-up)"),
        ("shops", "BLR", "MAE on the last 500 samples"),
        ("bow", "BLR", "MAE after the warm-up (200)"),
    ):
        if exp not in results:
            continue
        s = results[exp]["summary"]
        lines += [f"## {exp}: {what}", "", "| model | mean | min | max |", "|---|---|---|---|"]
        for name, v in s.items():
            cell = name.replace("|", "\\|")
            lines.append(f"| {cell} | {v['mean']:.3f} | {v['min']:.3f} | {v['max']:.3f} |")
        for name in s:
            if name != theirs and theirs in s:
                lines += ["", f"Ratio of the means, `{name}` / `{theirs}`: "
                          f"{s[name]['mean'] / s[theirs]['mean']:.2f}"]
        if exp == "dropout":
            c = _summary(results[exp]["trials"], "cover90_dropped")
            lines += ["", "90% interval coverage on those rows: "
                      + ", ".join(f"`{k}` {v['mean']:.2f}" for k, v in c.items())]
        lines.append("")
    if results.get("sweep"):
        lines += ["## sweep: MAE after the warm-up, the input `a` forced dense or sparse", "",
                  f"Mean of {len({r['seed'] for r in results['sweep']})} seeds; the rule's "
                  "threshold is where the two costs cross (README, \"Input policy\").", "",
                  "| stream | presence in the window | dense | sparse | dense (absent rows) | "
                  "sparse (absent rows) |", "|---|---|---|---|---|---|"]
        rows = results["sweep"]
        for kind in ("sensor", "tight sensor", "weight"):
            for f in sorted({r["presence"] for r in rows}):
                sel = [r for r in rows if r["kind"] == kind and r["presence"] == f]
                if not sel:
                    continue

                def mean(key, sel=sel):
                    vals = [r[key] for r in sel if r[key] is not None]
                    return f"{np.mean(vals):.3f}" if vals else "-"

                lines.append(f"| {kind} | {f:g} | {mean('dense_mae')} | {mean('sparse_mae')} | "
                             f"{mean('dense_mae_absent')} | {mean('sparse_mae_absent')} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--experiments", nargs="+", default=["dropout", "shops", "bow", "sweep"])
    parser.add_argument("--fractions", nargs="+", type=float,
                        default=[0.8, 0.9, 0.95, 0.98, 0.995])
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--kinds", nargs="+", default=["sensor", "tight sensor", "weight"],
                        help="the sweep's streams")
    parser.add_argument("--merge", action="store_true",
                        help="keep the experiments of the sparse.json already in --out")
    parser.add_argument("--report", action="store_true",
                        help="only rewrite sparse.md from the sparse.json in --out")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.report:
        (out / "sparse.md").write_text(markdown(json.loads((out / "sparse.json").read_text()))
                                       + "\n")
        return
    results = {}
    if args.merge and (out / "sparse.json").is_file():
        results = json.loads((out / "sparse.json").read_text())
    results.update({"trials": args.trials, "load": os.getloadavg()[0]})
    results.setdefault("runs", []).append(
        {"args": " ".join(argv if argv is not None else sys.argv[1:]), "load": results["load"]})
    runs = {"dropout": run_dropout, "shops": run_shops, "bow": run_bow}
    keys = {"dropout": "mae_dropped", "shops": "mae_last500", "bow": "mae_after_warmup"}
    for exp in args.experiments:
        if exp == "sweep":
            rows = []
            for seed in range(args.trials):
                rows += run_sweep(seed, args.fractions, kinds=tuple(args.kinds))
            keep = [r for r in results.get("sweep", [])
                    if r["kind"] not in args.kinds or r["presence"] not in args.fractions]
            results["sweep"] = keep + rows
            continue
        trials = []
        for seed in range(args.trials):
            trials.append(runs[exp](seed))
            print(exp, seed, trials[-1], flush=True)
        results[exp] = {"trials": trials, "summary": _summary(trials, keys[exp])}
    results["load_end"] = os.getloadavg()[0]
    out.mkdir(parents=True, exist_ok=True)
    (out / "sparse.json").write_text(json.dumps(json_safe(results), indent=1) + "\n")
    (out / "sparse.md").write_text(markdown(results) + "\n")
    print(markdown(results))


if __name__ == "__main__":
    main()
