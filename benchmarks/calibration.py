"""How well calibrated the predictive distributions are, with and without online recalibration.

Protocol (``peers.py``'s, the paper's): ``X`` and ``y`` standardised with the mean and standard
deviation of the first ``--n-warmup`` samples (1,000), which every model learns unscored (the
E-DOEBE warms up on exactly them); the rest, up to ``--max-samples`` (10,000) samples in all, is
scored strictly one step ahead (predict, score, learn).

Streams: the seven paper / drift streams of ``peers.md`` that are present (``drift``,
``static_then_drift``, Friedman #1 and #2, Elevators, CaData, CPU Small) and three of river's:
``FriedmanDrift`` with global slow gradual drift (``drift_type='gsg'``, drifts at 3,500 and
7,000, transition windows of 1,000) and with global recurring abrupt drift
(``drift_type='gra'``, at 3,500 and 7,000), and ``TrumpApproval`` (1,001 samples).

Models: ``EDOEBE(seed=0, recalibrate=False)`` (the ensemble's own mixture: named ``EDOEBE`` in
the tables, which were measured before recalibration became ``EDOEBE()``'s default),
``Recalibrated(EDOEBE(seed=0, recalibrate=False))`` (``river_doebe.conf``, its defaults) and
river's ``conf.RegressionJackknife(model, confidence_level=0.9, window_size=1000)`` around the
best river regressor of the stream (lowest nMSE in ``results/peers.json`` where that has the
stream, else among river's linear regression, Hoeffding adaptive tree, k-nearest neighbours and
adaptive random forest, run here: see ``--anchors``); its 50% interval is a second jackknife at
0.5 on the same regressor.

Scores: the share of the targets inside the central 90% and 50% intervals (the model's own
predictive through ``metrics.IntervalCoverage``, or the jackknife's interval), the mean width of
the 90% interval, the CRPS and the PLL (``metrics.CRPS``, ``metrics.PredictiveLogLikelihood``,
exact for the mixture and for the recalibrated distribution), the nMSE of the point prediction
and, for the recalibrated model, that of its distribution's mean.

Two experiments beside the table:

- ``shift``: Friedman #1 with a jump of ``--jump`` (1,000) warm-up standard deviations added to
  every target from 1,000 samples after the warm-up on; the 90% coverage and mean width over
  windows after the jump (with ``--gate`` also of ``Recalibrated(EDOEBE(), gate=True)``);
- ``overhead``: ``EDOEBE(recalibrate=False)``, ``Recalibrated(EDOEBE(recalibrate=False),
  gate=True)`` and ``EDOEBE()`` (the same recalibration built in, the default) warmed up on the
  same samples, then timed on the same samples in interleaved chunks of 250 in this process
  (predict with the distribution, then learn; and predict the point, then learn), each chunk's
  best of ``--repeats`` (and the best whole run beside it): the ratios of their samples/s to
  the first's. The load (``os.getloadavg``) is
  written beside it. ``--skip table shift --out DIR`` measures it alone.

    python benchmarks/calibration.py                 # everything (about an hour on 2 cores)
    python benchmarks/calibration.py --quick         # short streams, a small E-DOEBE
    python benchmarks/calibration.py --quick --streams drift --skip shift overhead --out /tmp/c

Writes ``calibration.json`` and ``calibration.md`` to ``--out`` (default ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import pickle
import time
import warnings
from pathlib import Path

import numpy as np
from _common import HERE, default_data_dir
from river import conf as river_conf

from river_doebe import EDOEBE, datasets, metrics
from river_doebe.calibration import in_central_interval
from river_doebe.cli.registry import PEERS
from river_doebe.conf import Recalibrated, RecalibratedDistribution
from river_doebe.utils import json_safe
from river_doebe.warmup import Standardizer

PAPER_STREAMS = ("drift", "static_then_drift", "friedman1", "friedman2", "elevators", "cadata",
                 "cpusmall")
RIVER_STREAMS = ("friedman_drift_gradual", "friedman_drift_global", "trump_approval")
STREAMS = PAPER_STREAMS + RIVER_STREAMS
#: the river regressors a jackknife may wrap, by their key in the command line's registry
ANCHOR_KEYS = ("lr", "hat", "knn", "arf")
EXPERIMENTS = ("table", "shift", "overhead")


# ---------------------------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------------------------


def river_arrays(name: str, n: int, seed: int):
    """``(X, y, feature names)`` of one of river's streams, its first ``n`` samples."""
    from river import datasets as river_datasets
    from river.datasets import synth

    if name == "trump_approval":
        dataset = river_datasets.TrumpApproval()
    elif name == "friedman_drift_gradual":
        dataset = synth.FriedmanDrift(drift_type="gsg", position=(3500, 7000),
                                      transition_window=1000, seed=seed)
    elif name == "friedman_drift_global":
        dataset = synth.FriedmanDrift(drift_type="gra", position=(3500, 7000), seed=seed)
    else:
        raise ValueError(f"unknown river stream {name!r}")
    rows = []
    for i, (x, y) in enumerate(dataset):
        if i >= n:
            break
        rows.append((x, y))
    names = list(rows[0][0])
    X = np.array([[float(x[k]) for k in names] for x, _ in rows])
    y = np.array([float(y) for _, y in rows])
    return X, y, names


def load(name: str, data_dir, cfg: dict):
    """Standardised ``(warm-up dicts, warm-up y, stream dicts, stream y)``."""
    cap = cfg["max_samples"]
    if name in RIVER_STREAMS:
        X, y, names = river_arrays(name, cap, cfg["seed"])
    else:
        if name == "drift":
            dataset = datasets.Drift(n_samples=cap)
        elif name == "static_then_drift":
            dataset = datasets.StaticThenDrift(n_samples=cap, n_static=cap // 2)
        else:
            dataset = datasets.load(name, directory=data_dir)
        X, y = dataset.arrays()
        X, y = X[:cap], y[:cap]
        names = [str(n) for n in dataset.feature_names]
    w = min(cfg["n_warmup"], len(y) // 5) if name == "trump_approval" else cfg["n_warmup"]
    if len(y) <= w + 10:
        raise ValueError(f"{len(y)} samples, too few for a warm-up of {w}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        std = Standardizer.fit(X[:w], y[:w], names=names)
    Z, Y = std.x(X), std.y(y)
    kept = [names[j] for j in std.cols.tolist()]
    dicts = [dict(zip(kept, row, strict=True)) for row in Z.tolist()]
    return dicts[:w], Y[:w], dicts[w:], Y[w:]


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


def edoebe(cfg: dict, n_warmup: int, recalibrate: bool = False) -> EDOEBE:
    """The E-DOEBE of the experiments: by default its own mixture (``recalibrate=False``), which
    the wrappers recalibrate."""
    kw = {"seed": cfg["seed"], "n_warmup": n_warmup, "recalibrate": recalibrate}
    if cfg["quick"]:
        kw.update(n_samples=2, starts=(1.0,))
    return EDOEBE(**kw)


class _Shared:
    """A view of a regressor that predicts with it and learns nothing: the 50% jackknife reads
    the 90% jackknife's regressor without training it twice."""

    def __init__(self, model):
        self.model = model

    def predict_one(self, x, **kwargs):
        return self.model.predict_one(x, **kwargs)

    def learn_one(self, x, y, **kwargs):
        pass


def width_90(dist) -> float:
    """The width of the central 90% interval of a predictive distribution."""
    if not isinstance(dist, RecalibratedDistribution):
        dist = RecalibratedDistribution(dist, [0.0, 1.0], [0.0, 1.0])
    return dist.interval(0.9).width


def score_edoebe(model: Recalibrated, data) -> dict:
    """``EDOEBE`` and ``Recalibrated(EDOEBE)`` scored from one run: the wrapper's predictive
    and the wrapped E-DOEBE's own (which the wrapper computed, before either learnt the
    target, for the same sample) are both scored one step ahead."""
    warm_x, warm_y, xs, ys = data
    chosen = {name: {"coverage_90": metrics.IntervalCoverage(0.9),
                     "coverage_50": metrics.IntervalCoverage(0.5), "crps": metrics.CRPS(),
                     "pll": metrics.PredictiveLogLikelihood()} for name in ("plain", "recal")}
    sse = sse_mean = 0.0
    width = {"plain": 0.0, "recal": 0.0}
    model_s = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y in zip(warm_x, warm_y.tolist(), strict=True):
            model.learn_one(x, y)
        for x, y in zip(xs, ys.tolist(), strict=True):
            t0 = time.perf_counter()
            dist = model.predict_one(x, with_dist=True)
            model_s += time.perf_counter() - t0
            plain = model._memo[1]  # the E-DOEBE's own predictive for this sample
            for name, d in (("plain", plain), ("recal", dist)):
                for m in chosen[name].values():
                    m.update(y, d)
                width[name] += width_90(d)
            # the point prediction of both is the E-DOEBE's mean
            sse += (y - plain.mu) ** 2
            sse_mean += (y - dist.mu) ** 2
            t0 = time.perf_counter()
            model.learn_one(x, y)
            model_s += time.perf_counter() - t0
    n, var = len(ys), float(ys.var())
    out = {}
    for name, key in (("plain", "EDOEBE"), ("recal", "Recalibrated(EDOEBE)")):
        r = {k: float(m.get()) for k, m in chosen[name].items()}
        r.update(width_90=width[name] / n, nmse=sse / n / var, n_scored=n)
        out[key] = r
    out["Recalibrated(EDOEBE)"].update(nmse_dist_mean=sse_mean / n / var,
                                       n_outside=model.n_outside_, alpha_end=model.alpha_,
                                       model_s=model_s)
    return out


def score_jackknife(key: str, cfg: dict, data) -> dict:
    """``river.conf.RegressionJackknife`` at 90% (and 50%) around the peer ``key``."""
    warm_x, warm_y, xs, ys = data
    regressor = PEERS[key].factory(cfg)
    jk90 = river_conf.RegressionJackknife(regressor, confidence_level=0.9, window_size=1000)
    jk50 = river_conf.RegressionJackknife(_Shared(regressor), confidence_level=0.5,
                                          window_size=1000)
    in90 = in50 = 0
    width = sse = 0.0
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y in zip(warm_x, warm_y.tolist(), strict=True):
            jk50.learn_one(x, y)
            jk90.learn_one(x, y)
        for x, y in zip(xs, ys.tolist(), strict=True):
            i90 = jk90.predict_one(x, with_interval=True)
            i50 = jk50.predict_one(x, with_interval=True)
            # the jackknife's point prediction, from its interval (not a third prediction)
            point = i90.lower - (jk90._lower.get() or 0.0)
            in90 += y in i90
            in50 += y in i50
            width += i90.width
            sse += (y - point) ** 2
            jk50.learn_one(x, y)
            jk90.learn_one(x, y)
    n = len(ys)
    return {"coverage_90": in90 / n, "coverage_50": in50 / n, "width_90": width / n,
            "crps": None, "pll": None, "nmse": sse / n / float(ys.var()), "n_scored": n,
            "model_s": time.perf_counter() - start, "anchor": PEERS[key].estimator}


def anchor_of(name: str, cfg: dict, data, out_dir: Path) -> tuple[str, dict]:
    """The key of the best river regressor of the stream: from ``peers.json`` when it has the
    stream (full mode), else the lowest nMSE of the jackknives run here."""
    peers_file = out_dir / "peers.json"
    if not cfg["quick"] and peers_file.exists():
        rows = json.loads(peers_file.read_text())["results"].get(name)
        if rows:
            by_name = {spec.estimator: key for key, spec in PEERS.items()}
            scored = [(r["nmse"], by_name[m]) for m, r in rows.items()
                      if m in by_name and by_name[m] in ANCHOR_KEYS + ("blr", "blr-smooth")
                      and r.get("nmse") is not None]
            if scored:
                return min(scored)[1], {}
    tried = {key: score_jackknife(key, cfg, data) for key in cfg["anchors"]}
    best = min(tried, key=lambda k: tried[k]["nmse"])
    return best, tried


# ---------------------------------------------------------------------------------------------
# The experiments
# ---------------------------------------------------------------------------------------------


def table(cfg: dict, data_dir, out_dir: Path) -> tuple[dict, dict]:
    try:
        present = set(datasets.available(data_dir))
    except FileNotFoundError:
        present = set(datasets.available(None))
    results, skipped = {}, {}
    for name in cfg["streams"]:
        if name not in RIVER_STREAMS and name not in present:
            skipped[name] = "unknown stream" if name not in datasets.NAMES else "file not found"
            print(f"skip {name}: {skipped[name]}", flush=True)
            continue
        try:
            data = load(name, data_dir, cfg)
        except (ValueError, OSError) as err:
            skipped[name] = str(err)
            continue
        w = len(data[1])
        print(f"{name}: {w} warm-up + {len(data[3])} scored", flush=True)
        t_stream = time.perf_counter()
        rows = score_edoebe(Recalibrated(edoebe(cfg, w)), data)
        key, tried = anchor_of(name, cfg, data, out_dir)
        jk = tried.get(key) or score_jackknife(key, cfg, data)
        print(f"  ({time.perf_counter() - t_stream:.0f} s)", flush=True)
        rows["RegressionJackknife(best river)"] = jk
        if tried:
            rows["RegressionJackknife(best river)"]["anchors_tried"] = {
                PEERS[k].estimator: v["nmse"] for k, v in tried.items()}
        for model_name, r in rows.items():
            crps = "-" if r["crps"] is None else f"{r['crps']:.4f}"
            print(f"  {model_name:<34} 90%: {r['coverage_90']:6.1%}  50%: "
                  f"{r['coverage_50']:6.1%}  width {r['width_90']:.3f}  CRPS {crps}", flush=True)
        results[name] = rows
    return results, skipped


def shift(cfg: dict) -> dict:
    """Coverage and width of the 90% intervals after a jump of ``cfg['jump']`` warm-up
    standard deviations."""
    w = cfg["n_warmup"]
    after = 1000 if not cfg["quick"] else 500
    n = w + after + cfg["shift_horizon"]
    X, y = datasets.Friedman1(n_samples=n).arrays()
    names = [f"x{i}" for i in range(X.shape[1])]
    std = Standardizer.fit(X[:w], y[:w], names=names)
    Z, Y = std.x(X), std.y(y)
    Y[w + after:] += cfg["jump"]
    dicts = [dict(zip(names, row, strict=True)) for row in Z.tolist()]
    models = {"EDOEBE": edoebe(cfg, w), "Recalibrated(EDOEBE)": Recalibrated(edoebe(cfg, w))}
    if cfg.get("gate"):
        models["Recalibrated(EDOEBE, gate=True)"] = Recalibrated(edoebe(cfg, w), gate=True)
    models["RegressionJackknife(HoeffdingAdaptiveTree)"] = river_conf.RegressionJackknife(
        PEERS["hat"].factory(cfg), confidence_level=0.9, window_size=1000)
    out = {}
    for name, model in models.items():
        covered, widths = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for t, (x, target) in enumerate(zip(dicts, Y.tolist(), strict=True)):
                if t >= w + after - 100:
                    if isinstance(model, river_conf.RegressionJackknife):
                        interval = model.predict_one(x, with_interval=True)
                        covered.append(target in interval)
                        widths.append(interval.width)
                    else:
                        dist = model.predict_one(x, with_dist=True)
                        covered.append(in_central_interval(dist, target, 0.9))
                        widths.append(width_90(dist))
                model.learn_one(x, target)
        covered, widths = np.array(covered[100:], float), np.array(widths[100:])
        windows = {}
        for lo, hi in ((0, 100), (100, 200), (200, 300), (300, 600), (600, cfg["shift_horizon"])):
            if hi <= len(covered):
                windows[f"{lo}-{hi}"] = {"coverage_90": float(covered[lo:hi].mean()),
                                         "width_90": float(widths[lo:hi].mean())}
        trail = np.convolve(covered, np.ones(50) / 50, mode="valid")
        back = np.flatnonzero(trail >= 0.8)
        out[name] = {"windows": windows,
                     "first_50_window_at_80pct": int(back[0]) + 50 if back.size else None}
        print(f"shift {name:<42} " + "  ".join(
            f"{k}: {v['coverage_90']:.0%} ({v['width_90']:.3g})" for k, v in windows.items()),
            flush=True)
    return {"jump_in_warmup_sd": cfg["jump"], "samples_before_jump": after, "results": out}


#: the models of the overhead experiment: the reference first
OVERHEAD_MODELS = ("EDOEBE(recalibrate=False)",
                   "Recalibrated(EDOEBE(recalibrate=False), gate=True)", "EDOEBE()")


def overhead(cfg: dict) -> dict:
    """samples/s of ``Recalibrated(EDOEBE(recalibrate=False), gate=True)`` and of ``EDOEBE()``
    (the same recalibration, built in) over ``EDOEBE(recalibrate=False)``'s after the warm-up,
    timed in interleaved chunks of the same samples, each chunk's best of the repeats."""
    w = cfg["n_warmup"]
    n = cfg["overhead_samples"]
    X, y = datasets.Friedman1(n_samples=w + n).arrays()
    names = [f"x{i}" for i in range(X.shape[1])]
    std = Standardizer.fit(X[:w], y[:w], names=names)
    Z, Y = std.x(X), std.y(y)
    dicts = [dict(zip(names, row, strict=True)) for row in Z.tolist()]
    frozen = {}
    for recalibrate in (False, True):
        warm = edoebe(cfg, w, recalibrate=recalibrate)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for x, target in zip(dicts[:w], Y[:w].tolist(), strict=True):
                warm.learn_one(x, target)
        frozen[recalibrate] = pickle.dumps(warm)
    raw, wrapped, built = OVERHEAD_MODELS
    # the same ensemble (the seed): the built-in recalibration changes no point prediction
    probe = dicts[w]
    assert pickle.loads(frozen[False]).predict_one(probe) == pickle.loads(
        frozen[True]).predict_one(probe)
    chunk = 250
    best = {}
    load_avg = [list(os.getloadavg())]
    for protocol in ("dist", "point"):
        # per model, per repeat, the time of each chunk: every repeat starts from the same state,
        # so a chunk is the same work in each, and its best time is the least disturbed one
        times = {name: [] for name in OVERHEAD_MODELS}
        for _ in range(cfg["repeats"]):
            models = {raw: pickle.loads(frozen[False]),
                      wrapped: Recalibrated(pickle.loads(frozen[False]), gate=True),
                      built: pickle.loads(frozen[True])}
            spent = {name: [] for name in models}
            for i in range(w, w + n, chunk):
                rows = list(zip(dicts[i:i + chunk], Y[i:i + chunk].tolist()))
                for name, model in models.items():
                    t0 = time.perf_counter()
                    for x, target in rows:
                        if protocol == "dist":
                            model.predict_one(x, with_dist=True)
                        else:
                            model.predict_one(x)
                        model.learn_one(x, target)
                    spent[name].append(time.perf_counter() - t0)
            for name in models:
                times[name].append(spent[name])
            load_avg.append(list(os.getloadavg()))
        rate = {name: n / sum(min(c) for c in zip(*v)) for name, v in times.items()}
        whole = {name: n / min(sum(r) for r in v) for name, v in times.items()}
        best[protocol] = {"samples_per_s": rate,
                          "samples_per_s_best_whole_run": whole,
                          "ratio_best_whole_run": whole[wrapped] / whole[raw],
                          "ratio_built_in_best_whole_run": whole[built] / whole[raw],
                          "ratio": rate[wrapped] / rate[raw],
                          "ratio_built_in": rate[built] / rate[raw],
                          "built_in_over_wrapper": rate[built] / rate[wrapped]}
        print(f"overhead ({protocol}): wrapper {best[protocol]['ratio']:.3f}, built in "
              f"{best[protocol]['ratio_built_in']:.3f} ({rate[wrapped]:.0f}, {rate[built]:.0f} "
              f"/ {rate[raw]:.0f} samples/s; load {os.getloadavg()[0]:.2f})", flush=True)
    return {"samples": n, "repeats": cfg["repeats"], "load_avg": list(os.getloadavg()),
            "load_avg_each_repeat": load_avg, "cpus": os.cpu_count(),
            "models": list(OVERHEAD_MODELS), **best}


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _fmt(v, spec):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return format(v, spec)


def _loads(values) -> str:
    """The 1-minute load averages of a run, or the range of those of merged runs."""
    if not values:
        return "-"
    if isinstance(values[0], list):
        ones = [v[0] for v in values]
        return f"{min(ones):.1f}-{max(ones):.1f}"
    return f"{values[0]:.1f}"


def markdown(doc: dict) -> str:
    cfg = doc["config"]
    # the overhead experiment alone (``--skip table shift``): its own page
    alone = bool(doc.get("overhead")) and not doc.get("results") and not doc.get("shift")
    protocol = (
        f"Protocol of `peers.md`: X and y standardised on the first {cfg['n_warmup']:,} samples, "
        f"learnt unscored; the rest of the first {cfg['max_samples']:,} samples scored one step "
        "ahead (TrumpApproval: a warm-up of a fifth of its 1,001 samples). Coverage: share of "
        "the targets inside the central 90% / 50% interval (calibrated: 90% / 50%); width: mean "
        "width of the 90% interval, in warm-up standard deviations of y; CRPS (lower is better) "
        "and PLL (higher is better) of the model's own predictive, exact for the mixture and for "
        "the recalibrated distribution; nMSE of the point prediction (the recalibrated model's "
        "is the E-DOEBE's mean), and in brackets that of the recalibrated distribution's mean. "
        "RegressionJackknife: river's `conf.RegressionJackknife(model, 0.9, window_size=1000)` "
        "around the river regressor with the lowest nMSE on the stream (named in the last "
        "column), no distribution. "
    )
    lines = [
        "# The cost of the online recalibration" if alone
        else "# Calibration, with and without online recalibration",
        "",
        ("" if alone else protocol)
        + ("**Quick mode: rough numbers only.** " if cfg["quick"] else "")
        + f"Command: `python benchmarks/calibration.py{' --quick' if cfg['quick'] else ''}"
        + (f" --max-samples {cfg['max_samples']}" if cfg["max_samples"] != (
            2500 if cfg["quick"] else 10000) else "")
        + (" --skip table shift" if alone else "")
        + (f" --repeats {cfg['repeats']}" if alone and cfg["repeats"] != 3 else "") + "`"
        + (" (parts run side by side, then `--merge`)" if doc.get("merged_from") else "")
        + f". Load average (1 minute) while it ran: {_loads(doc.get('load_avg_start'))} at the "
        f"start, {_loads(doc.get('load_avg_end'))} at the end (2 cores).",
        "",
    ]
    if doc.get("results"):
        lines += ["| stream | model | 90% | 50% | width 90% | CRPS | PLL | nMSE | anchor |",
                  "|---|---|---|---|---|---|---|---|---|"]
    for stream, rows in doc.get("results", {}).items():
        for name, r in rows.items():
            nmse = _fmt(r["nmse"], ".4f")
            if r.get("nmse_dist_mean") is not None:
                nmse += f" ({r['nmse_dist_mean']:.4f})"
            lines.append(
                f"| {stream} | {name} | {r['coverage_90']:.1%} | {r['coverage_50']:.1%} | "
                f"{r['width_90']:.4g} | {_fmt(r['crps'], '.4f')} | {_fmt(r['pll'], '.3f')} | "
                f"{nmse} | {r.get('anchor', '')} |")
    lines.append("")
    if doc.get("shift"):
        s = doc["shift"]
        lines += [
            f"**After a jump of {s['jump_in_warmup_sd']:,.0f} warm-up standard deviations** "
            f"(Friedman #1, {s['samples_before_jump']:,} samples after the warm-up): 90% "
            "coverage (mean width) over windows of samples after the jump; 'back at 80%': "
            "samples after the jump until the first 50 consecutive ones of which 80% are "
            "covered.",
            "",
        ]
        names = list(s["results"])
        keys = list(next(iter(s["results"].values()))["windows"])
        lines += ["| model | " + " | ".join(keys) + " | back at 80% |",
                  "|---|" + "---|" * (len(keys) + 1)]
        for name in names:
            r = s["results"][name]
            cells = [f"{r['windows'][k]['coverage_90']:.0%} ({r['windows'][k]['width_90']:.3g})"
                     for k in keys]
            lines.append(f"| {name} | " + " | ".join(cells) + " | "
                         + _fmt(r["first_50_window_at_80pct"], "d") + " |")
        lines.append("")
    if doc.get("overhead"):
        o = doc["overhead"]
        if o.get("models"):
            names = o["models"]
            lines += [
                "**Overhead** (Friedman #1, after the warm-up, "
                f"{o['samples']:,} samples timed in interleaved chunks of 250, each chunk's best "
                f"of {o['repeats']} repeats; load average {o['load_avg'][0]:.1f} on "
                f"{o['cpus']} cores at the end, "
                f"{min(v[0] for v in o['load_avg_each_repeat']):.1f}-"
                f"{max(v[0] for v in o['load_avg_each_repeat']):.1f} during): samples/s of "
                f"each model, and as a ratio of `{names[0]}`'s (in brackets: the best whole "
                "run's).",
                "",
                "| protocol | " + " | ".join(f"`{m}`" for m in names)
                + " | wrapper ratio | built-in ratio |",
                "|---|" + "---|" * (len(names) + 2),
            ]
        else:  # (a run before the recalibration was built in)
            names = ["EDOEBE", "Recalibrated(EDOEBE)"]
            lines += [
                "**Overhead** (Friedman #1, after the warm-up, "
                f"{o['samples']:,} samples timed in interleaved chunks, best of {o['repeats']}; "
                f"load average {o['load_avg'][0]:.1f} on {o['cpus']} cores): samples/s of "
                "`Recalibrated(EDOEBE())` over `EDOEBE()`'s.",
                "",
                "| protocol | EDOEBE samples/s | Recalibrated samples/s | ratio |",
                "|---|---|---|---|",
            ]
        for protocol, label in (("dist", "predict_one(x, with_dist=True), learn_one"),
                                ("point", "predict_one(x), learn_one")):
            r = o[protocol]
            cells = [f"{r['samples_per_s'][m]:,.0f}" for m in names] + [f"{r['ratio']:.3f}"]
            if "ratio_built_in" in r:
                cells.append(f"{r['ratio_built_in']:.3f}")
            if "ratio_best_whole_run" in r:
                cells[-2] += f" ({r['ratio_best_whole_run']:.3f})"
                cells[-1] += f" ({r['ratio_built_in_best_whole_run']:.3f})"
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
        # runs kept beside the main one (added to the json by hand, with a note)
        others = [f"{key.replace('_', ' ')}{' (' + r['commit'] + ')' if r.get('commit') else ''}"
                  f", load {r['load_avg'][0]:.1f}: {r['dist']['ratio']:.3f} with distributions, "
                  f"{r['point']['ratio']:.3f} with points"
                  for key, r in o.items() if key.endswith("_run")]
        if others:
            lines += ["Other runs: " + "; ".join(others) + ".", ""]
        if o.get("note"):
            lines += [f"Note: {o['note']}.", ""]
    if doc.get("skipped"):
        lines += ["Not run: " + "; ".join(f"{k} ({v})" for k, v in doc["skipped"].items()), ""]
    return "\n".join(lines)


def merge(folders: list, out: Path) -> dict:
    """One report from the ``calibration.json`` of runs of parts of the streams and
    experiments."""
    docs = [json.loads((Path(f) / "calibration.json").read_text()) for f in folders]
    settings = [{k: v for k, v in d["config"].items() if k != "streams"} for d in docs]
    if any(s != settings[0] for s in settings):
        raise SystemExit("--merge: the runs were made with different settings")
    doc = {"config": {**docs[0]["config"],
                      "streams": [s for d in docs for s in d["config"]["streams"]]},
           "results": {}, "skipped": {}, "merged_from": [str(f) for f in folders],
           "load_avg_start": [d["load_avg_start"] for d in docs],
           "load_avg_end": [d["load_avg_end"] for d in docs],
           "elapsed_s": [d["elapsed_s"] for d in docs]}
    for d in docs:
        doc["results"].update(d.get("results", {}))
        doc["skipped"].update(d.get("skipped", {}))
        for key in ("shift", "overhead"):
            if d.get(key):
                doc[key] = d[key]
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(json_safe(doc), indent=1) + "\n")
    md = markdown(doc)
    (out / "calibration.md").write_text(md)
    print(md)
    return doc


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", nargs="+", default=list(STREAMS), metavar="NAME")
    p.add_argument("--skip", nargs="+", default=[], choices=EXPERIMENTS,
                   help="experiments to leave out")
    p.add_argument("--max-samples", type=int, default=None,
                   help="samples taken from each stream (default 10000; quick: 2500)")
    p.add_argument("--n-warmup", type=int, default=None,
                   help="samples learnt unscored (default 1000; quick: 500)")
    p.add_argument("--anchors", nargs="+", default=list(ANCHOR_KEYS), choices=list(PEERS),
                   help="river regressors a jackknife may wrap where peers.json does not tell "
                   "the best (default: lr hat knn arf)")
    p.add_argument("--jump", type=float, default=1000.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="short streams and a small E-DOEBE")
    p.add_argument("--gate", action="store_true",
                   help="the shift experiment adds Recalibrated(EDOEBE(), gate=True)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    p.add_argument("--data-dir", default=None,
                   help="folder of the .npz files (default: $RIVER_DOEBE_DATA, else "
                   "../shared/data beside the checkout)")
    p.add_argument("--merge", nargs="+", type=Path, default=None, metavar="DIR",
                   help="run nothing: combine the calibration.json files of these folders "
                   "(runs of parts of the streams and experiments with the same settings, "
                   "e.g. side by side) into --out")
    args = p.parse_args(argv)
    if args.merge:
        return merge(args.merge, args.out)
    cfg = {
        "max_samples": args.max_samples or (2500 if args.quick else 10000),
        "n_warmup": args.n_warmup or (500 if args.quick else 1000),
        "seed": args.seed,
        "quick": bool(args.quick),
        "streams": [s.strip().lower().replace("-", "_") for s in args.streams],
        "anchors": list(args.anchors),
        "jump": args.jump,
        "shift_horizon": 600 if args.quick else 1500,
        "repeats": args.repeats,
        "overhead_samples": 1000 if args.quick else 3000,
        # (only when asked: runs without it merge with the earlier ones)
        **({"gate": True} if args.gate else {}),
        # the peers' registry reads these
        "n_samples": 2 if args.quick else 5,
        "starts": (1.0,) if args.quick else (0.1, 1.0, 10.0),
    }
    data_dir = default_data_dir(args.data_dir)
    doc = {"config": copy.deepcopy(cfg), "load_avg_start": [round(v, 2) for v in os.getloadavg()]}
    start = time.perf_counter()
    if "table" not in args.skip:
        doc["results"], doc["skipped"] = table(cfg, data_dir, args.out)
    if "shift" not in args.skip:
        doc["shift"] = shift(cfg)
    if "overhead" not in args.skip:
        doc["overhead"] = overhead(cfg)
    doc["elapsed_s"] = time.perf_counter() - start
    doc["load_avg_end"] = [round(v, 2) for v in os.getloadavg()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "calibration.json").write_text(json.dumps(json_safe(doc), indent=1) + "\n")
    md = markdown(doc)
    (args.out / "calibration.md").write_text(md)
    print(md)
    return doc


if __name__ == "__main__":
    main()
