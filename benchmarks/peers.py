"""river's own regressors against ``EDOEBE()``, on every stream present, in one process.

Models: river's ``BayesianLinearRegression`` (without and with ``smoothing``), ``LinearRegression``,
``KNNRegressor``, ``HoeffdingAdaptiveTreeRegressor`` and ``ARFRegressor``, each behind a
``StandardScaler`` (the trees' leaves hold linear models, which need scaled inputs), and
river-doebe's drop-in ``EDOEBE()`` (default families; in full mode its own defaults, the paper's
warm-up settings).

Protocol, the paper's (Sec. 5), so that the numbers compare with ``reproduce.py``: ``X`` and ``y``
are standardised with the mean and standard deviation of the first ``n_warmup`` samples (1000);
every model learns those samples unscored (the E-DOEBE warms up on exactly them, with
``n_warmup`` equal to the window), then the rest is streamed strictly one step ahead (predict,
score, learn). nMSE = MSE / Var(y over the streamed part); PLL = mean log density of the
standardised target under the moment-matched Gaussian of the model's prediction (the paper's
figure), and ``pll_mixture`` under the model's own predictive (the E-DOEBE's is the mixture of
its members' Gaussians), for the models that give one (``predict_one(x, with_dist=True)``: the
Bayesian linear regressions and the E-DOEBE); for the same models, their calibration on their own
predictive: the share of targets inside its central 90% and 50% intervals (``coverage_90``,
``coverage_50``; the closer to 90% and 50% the better) and the CRPS of the standardised target
(``crps``, lower is better);
``EDOEBE`` is ``EDOEBE()`` as a user gets it: since recalibration became its default
(``recalibrate=True``: its distribution scored exactly, the CRPS by quadrature of its CDF), the
recalibrated mixture (the results of runs before that are the raw mixture's, and their
``Recalibrated(EDOEBE)`` row the E-DOEBE wrapped in ``river_doebe.conf.Recalibrated`` with its
defaults); ``EDOEBE(recalibrate=False)`` is the ensemble's own mixture, what ``river-doebe
evaluate --recalibrate`` runs beside it;
samples/s counts the streamed part only (predict + learn per sample, and the nMSE, MAE and PLL;
not the calibration scores, timed apart as ``calibration_s``; the E-DOEBE's warm-up fit is
reported separately as ``warm-up [s]``).

    python benchmarks/peers.py --quick                # a few minutes
    python benchmarks/peers.py                        # every stream present, full length
    python benchmarks/peers.py --streams elevators cadata --out /tmp/peers

Writes ``peers.json`` (every score, trace and timing) and ``peers.md`` (a table per metric,
model x stream) to ``--out`` (default ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from functools import partial
from pathlib import Path

from _common import HERE, default_data_dir
from river import metrics as river_metrics

from river_doebe import datasets
from river_doebe import metrics as rd_metrics
from river_doebe.cli.entry import recalibrated_spec
from river_doebe.cli.registry import MODELS, PEERS
from river_doebe.evaluate import progressive_scores
from river_doebe.utils import json_safe
from river_doebe.warmup import Standardizer

STREAMS = ("drift", "static_then_drift", *datasets.PAPER_NAMES)
QUICK_STREAMS = STREAMS  # cut to 2000 samples


#: river's peers, by their key in the command line's registry, in the order of the report
PEER_KEYS = ("blr", "blr-smooth", "lr", "knn", "hat", "arf")


def calibration_metrics() -> dict:
    """The calibration metrics of a model that gives a distribution, by their key in the JSON."""
    return {"coverage_90": rd_metrics.IntervalCoverage(0.9),
            "coverage_50": rd_metrics.IntervalCoverage(0.5), "crps": rd_metrics.CRPS()}


def _clocked(metric, clock: list):
    """``metric``, the time of its updates added to ``clock[0]``: the calibration scores are the
    benchmark's work, not the model's (an E-DOEBE's CRPS costs about as much as its step, being
    quadratic in the members), so their time is taken out of the stream's, which keeps
    samples/s comparable with the runs before they were scored."""
    update = metric.update

    def timed(y_true, y_pred, w=1.0):
        start = time.perf_counter()
        update(y_true, y_pred, w)
        clock[0] += time.perf_counter() - start

    metric.update = timed  # progressive_scores calls the instance's `update`
    return metric


def _closest_to(level):
    return lambda vals: min(vals, key=lambda v: abs(v - level))


def models(cfg: dict) -> dict:
    """name -> (factory, gives a predictive distribution): river's peers, named by their
    estimator, and the drop-in E-DOEBE with ``cfg``'s warm-up, all built by the command line's
    registry (the same models as ``river-doebe evaluate --peers ...``)."""
    out = {
        PEERS[key].estimator: (partial(PEERS[key].factory, cfg), PEERS[key].has_dist)
        for key in PEER_KEYS
    }
    for key, name in (("edoebe", "EDOEBE"),
                      ("edoebe-stacking", "EDOEBE(weighting='stacking', delta=0)")):
        out[name] = (partial(MODELS[key].factory, cfg), MODELS[key].has_dist)
    # what `river-doebe evaluate --recalibrate` runs beside the E-DOEBE
    out["EDOEBE(recalibrate=False)"] = (partial(recalibrated_spec(MODELS["edoebe"]).factory,
                                                cfg), True)
    return out


def load(name: str, data_dir, cfg: dict):
    """Standardised ``(warm-up dicts, warm-up y, stream dicts, stream y)`` of a stream."""
    cap = cfg["max_samples"]
    if cap is not None and name == "drift":  # keep its static/drift/change structure
        dataset = datasets.Drift(n_samples=cap)
    elif cap is not None and name == "static_then_drift":
        dataset = datasets.StaticThenDrift(n_samples=cap, n_static=cap // 2)
    else:
        dataset = datasets.load(name, directory=data_dir)
    X, y = dataset.arrays()
    if cap is not None:
        X, y = X[:cap], y[:cap]
    w = cfg["n_warmup"]
    if len(y) <= w + 10:
        raise ValueError(f"{len(y)} samples, too few for a warm-up of {w}")
    names = [str(n) for n in dataset.feature_names]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        std = Standardizer.fit(X[:w], y[:w], names=names)
    Z, Y = std.x(X), std.y(y)
    kept = [names[j] for j in std.cols.tolist()]
    dicts = [dict(zip(kept, row, strict=True)) for row in Z.tolist()]
    return dicts[:w], Y[:w], dicts[w:], Y[w:]


def run(make, has_dist, data, every) -> dict:
    warm_x, warm_y, xs, ys = data
    model = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t0 = time.perf_counter()
        for x, y in zip(warm_x, warm_y.tolist(), strict=True):
            model.learn_one(x, y)
        warm_s = time.perf_counter() - t0
        metric_list = {"nMSE": rd_metrics.NMSE(var_y=float(ys.var())),
                       "MAE": river_metrics.MAE()}
        clock = [0.0]
        if has_dist:
            metric_list["PLL"] = rd_metrics.PredictiveLogLikelihood(moment_matched=True)
            metric_list["PLL_mixture"] = rd_metrics.PredictiveLogLikelihood()
            metric_list.update({name: _clocked(metric, clock)
                                for name, metric in calibration_metrics().items()})
        res = progressive_scores(
            zip(xs, ys.tolist(), strict=True), model, metric_list, every=every
        )
    dist_scores = {key: float(res.scores[name]) if has_dist else None
                   for name, key in (("PLL", "pll"), ("PLL_mixture", "pll_mixture"),
                                     *((name, name) for name in calibration_metrics()))}
    stream_s = res.elapsed - clock[0]
    return {
        "nmse": float(res.scores["nMSE"]),
        "mae_standardised": float(res.scores["MAE"]),
        **dist_scores,
        "warmup_s": warm_s,
        "stream_s": stream_s,
        "calibration_s": clock[0],
        "samples_per_s": len(ys) / stream_s if stream_s > 0 else None,
        "steps": res.steps.tolist(),
        "nmse_trace": res.traces["nMSE"].tolist(),
    }


def markdown(results: dict, cfg: dict, skipped: dict, elapsed: float) -> str:
    streams = list(results)
    names = list(models(cfg))
    lines = [
        "# river peers against EDOEBE()",
        "",
        f"Warm-up {cfg['n_warmup']} samples (learnt by every model, not scored; standardisation "
        f"of X and y frozen on it); E-DOEBE with n_samples={cfg['n_samples']}, starts="
        f"{list(cfg['starts'])}; "
        + (f"streams cut to {cfg['max_samples']} samples" if cfg["max_samples"] else
           "full streams")
        + (" — **quick mode: rough numbers only**" if cfg["quick"] else "") + ".",
        "nMSE = MSE / Var(y) on the streamed part (lower is better); PLL = mean log density of "
        "the standardised target (higher is better; '-' where the model gives no distribution); "
        "coverage = share of the targets inside the central 90% (50%) interval of the model's "
        "own predictive (best: the closest to 90% (50%)); CRPS = mean continuous ranked "
        "probability score of the standardised target under the model's own predictive (lower "
        "is better); samples/s on the streamed part (predict + learn).",
        f"Total time: {elapsed / 60:.1f} min.",
        "",
    ]
    for key, label, fmt, better in (
        ("nmse", "nMSE", "{:.4f}", min),
        ("pll", "PLL (moment-matched Gaussian, the paper's protocol)", "{:.3f}", max),
        ("pll_mixture", "PLL (the model's own predictive: for the E-DOEBE, its mixture)",
         "{:.3f}", max),
        ("coverage_90", "90% interval coverage (the model's own predictive)", "{:.1%}",
         _closest_to(0.9)),
        ("coverage_50", "50% interval coverage (the model's own predictive)", "{:.1%}",
         _closest_to(0.5)),
        ("crps", "CRPS (the model's own predictive)", "{:.4f}", min),
        ("samples_per_s", "samples/s", "{:,.0f}", None),
        ("warmup_s", "warm-up [s]", "{:.1f}", None),
    ):
        lines += [f"**{label}**", "", "| model | " + " | ".join(streams) + " |",
                  "|---|" + "---|" * len(streams)]
        best = {}
        for s in streams:
            vals = [r[key] for r in results[s].values() if r.get(key) is not None]
            best[s] = better(vals) if (better and vals) else None
        for name in names:
            cells = []
            for s in streams:
                r = results[s].get(name, {})
                v = r.get(key)
                if "error" in r:
                    cells.append("failed")
                elif v is None or (isinstance(v, float) and not math.isfinite(v)):
                    cells.append("-")
                else:
                    text = fmt.format(v)
                    cells.append(f"**{text}**" if best[s] is not None and v == best[s] else text)
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    if skipped:
        lines.append("Not run: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
        lines.append("")
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="river regressors against EDOEBE() on every stream.")
    p.add_argument("--streams", nargs="+", default=None, metavar="NAME",
                   help="streams (default: drift, static_then_drift and the paper's seven, "
                   "those present)")
    p.add_argument("--quick", action="store_true",
                   help="streams cut to 2000 samples, warm-up 500, a small E-DOEBE")
    p.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    p.add_argument("--data-dir", default=None,
                   help="folder of the .npz files (default: $RIVER_DOEBE_DATA, else "
                   "../shared/data beside the checkout)")
    p.add_argument("--max-samples", type=int, default=None, help="truncate every stream")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--models", nargs="+", default=None, metavar="NAME",
                   help="run only these models and add their rows to the peers.json already "
                   "in --out (run with the same settings)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.quick:
        cfg = {"n_warmup": 500, "n_samples": 2, "starts": (1.0,), "max_samples": 2000}
    else:
        cfg = {"n_warmup": 1000, "n_samples": 5, "starts": (0.1, 1.0, 10.0), "max_samples": None}
    if args.max_samples is not None:
        cfg["max_samples"] = args.max_samples
    cfg.update(seed=args.seed, quick=bool(args.quick))
    data_dir = default_data_dir(args.data_dir)
    try:
        present = set(datasets.available(data_dir))
    except FileNotFoundError:
        present = set(datasets.available(None))
    wanted = args.streams or (QUICK_STREAMS if args.quick else STREAMS)
    t_start = time.perf_counter()
    results, skipped, earlier = {}, {}, None
    chosen = models(cfg)
    if args.models:
        unknown = sorted(set(args.models) - set(chosen))
        if unknown:
            raise SystemExit(f"unknown model(s) {unknown}; the models are {list(chosen)}")
        earlier = json.loads((args.out / "peers.json").read_text())
        if earlier["config"] != json_safe({**cfg, "starts": list(cfg["starts"])}):
            raise SystemExit(f"--models: {args.out / 'peers.json'} was run with other settings")
        chosen = {k: v for k, v in chosen.items() if k in args.models}
    for name in [s.strip().lower().replace("-", "_") for s in wanted]:
        if name not in present:
            skipped[name] = "unknown stream" if name not in datasets.NAMES else "file not found"
            print(f"skip {name}: {skipped[name]}", flush=True)
            continue
        try:
            data = load(name, data_dir, cfg)
        except (ValueError, OSError) as err:
            skipped[name] = str(err)
            print(f"skip {name}: {err}", flush=True)
            continue
        every = max(1, len(data[3]) // 200)
        print(f"{name}: {len(data[1])} warm-up + {len(data[3])} streamed samples", flush=True)
        results[name] = {}
        for model_name, (make, has_dist) in chosen.items():
            try:
                r = run(make, has_dist, data, every)
            except Exception as err:  # noqa: BLE001 - one failure must not end the run
                r = {"error": f"{type(err).__name__}: {err}"}
                print(f"  {model_name:<42} FAILED {r['error']}", flush=True)
            else:
                pll = "-" if r["pll"] is None else f"{r['pll']:.3f}"
                cov = "-" if r["coverage_90"] is None else f"{r['coverage_90']:.1%}"
                print(f"  {model_name:<42} nMSE {r['nmse']:.4f}  PLL {pll:>8}  cov90 {cov:>6}  "
                      f"{r['samples_per_s']:>9,.0f} samples/s  (warm-up {r['warmup_s']:.1f} s)",
                      flush=True)
            results[name][model_name] = r
    elapsed = time.perf_counter() - t_start
    if earlier is not None:  # the new rows join the earlier run's (its time is kept)
        for name, rows in results.items():
            earlier["results"].setdefault(name, {}).update(rows)
        results, skipped, elapsed = earlier["results"], earlier["skipped"], earlier["elapsed_s"]
        results = {s: {m: results[s][m] for m in models(cfg) if m in results[s]}
                   for s in results}
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"config": {**cfg, "starts": list(cfg["starts"])}, "results": results,
           "skipped": skipped, "elapsed_s": elapsed}
    (args.out / "peers.json").write_text(json.dumps(json_safe(doc), indent=1) + "\n")
    md = markdown(results, cfg, skipped, elapsed)
    (args.out / "peers.md").write_text(md)
    print()
    print(md)
    print(f"wrote {args.out / 'peers.json'} and {args.out / 'peers.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
