"""How much look-ahead weights flatter an ensemble: the same run scored both ways.

The paper's public code mixes the prediction of ``y_t`` with weights that were already updated
with ``y_t``'s own likelihood. This script fits the members once (the paper's protocol, as in
``reproduce.py``: standardise on the first 1000 samples, empirical Bayes from three starts,
five members per mode, replay of the window with uniform weights after it), streams the rest
once, and scores every step three ways from the same member predictions:

- ``one-step``: the weights from before ``y_t`` (what this library does, and the only honest
  score);
- ``look-ahead``: the weights after folding ``y_t`` in (the paper code's bug);
- for both, nMSE and the PLL of the moment-matched Gaussian (the paper's figure), and for the
  one-step weights also the PLL of the exact mixture.

Models: the default ``EDOEBE()`` ensemble and DOE-RFF (the 15 dynamic RFF members under plain
Bayesian model averaging), on every paper stream present.

    python benchmarks/lookahead.py                      # every stream present, full length
    python benchmarks/lookahead.py --streams cadata --max-samples 5000

Writes ``lookahead.json`` and ``lookahead.md`` to ``--out`` (default ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np
from _common import HERE, default_data_dir

from river_doebe import datasets
from river_doebe.utils import json_safe
from river_doebe.warmup import fit_ensemble

STREAMS = ("friedman1", "friedman2", "elevators", "cadata", "cpusmall", "sarcos", "kuka1")
MODELS = {
    # name: (families, random-walk levels; the last level 0 is the static block)
    "E-DOEBE": (None, (1e-3, 0.0)),
    "DOE-RFF": (("rff",), (1e-3,)),
}


def _gauss_ll(y, mean, var):
    return -0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var)


def score(engine, Z, Y) -> dict:
    """Stream ``(Z, Y)`` through ``engine`` once; score one-step-ahead and look-ahead mixtures."""
    n = len(Y)
    out = {k: np.empty(n) for k in ("mean1", "var1", "meanL", "varL", "exact1")}
    for i in range(n):
        z, y = Z[i], float(Y[i])
        out["mean1"][i], out["var1"][i] = engine.predict(z)  # the library's own prediction
        out["exact1"][i] = engine.log_density(z, y)
        means, variances, w = engine.member_predictions(z)  # same predict step, cached
        live = w > 0
        m, v = means[live], variances[live]
        engine.learn(z, y)
        wl = engine.weights[live]  # the posterior weights: they have seen y
        muL = float(wl @ m)
        out["meanL"][i], out["varL"][i] = muL, float(wl @ (v + (m - muL) ** 2))
    var_y = float(np.var(Y))
    res = {}
    for tag, mk, vk in (("one_step", "mean1", "var1"), ("look_ahead", "meanL", "varL")):
        res[tag] = {
            "nmse": float(np.mean((Y - out[mk]) ** 2) / var_y),
            "pll": float(np.mean(_gauss_ll(Y, out[mk], out[vk]))),
        }
    res["one_step"]["pll_mixture"] = float(np.mean(out["exact1"]))
    return res


def run(name: str, X, y, cfg) -> dict:
    w = cfg.n_warmup
    results = {}
    for label, (families, levels) in MODELS.items():
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            std, engine, members = fit_ensemble(
                X[:w], y[:w], families=families, levels=levels, seed=cfg.seed,
                n_samples=cfg.n_samples, starts=tuple(cfg.starts),
            )
            Z, Y = std.x(X[w:]), std.y(y[w:])
            results[label] = score(engine, Z, Y)
        results[label]["members"] = engine.M
        results[label]["seconds"] = time.perf_counter() - t0
        r = results[label]
        print(
            f"  {name:<10} {label:<8} one-step {r['one_step']['nmse']:.4f} / "
            f"{r['one_step']['pll']:.3f} (mixture {r['one_step']['pll_mixture']:.3f})   "
            f"look-ahead {r['look_ahead']['nmse']:.4f} / {r['look_ahead']['pll']:.3f}   "
            f"[{r['seconds']:.0f} s]",
            flush=True,
        )
    return results


def markdown(results: dict, cfg) -> str:
    lines = [
        "# One-step-ahead against look-ahead weights",
        "",
        f"Same members, same run (warm-up {cfg.n_warmup}, seed {cfg.seed}"
        + (f", streams cut to {cfg.max_samples} samples" if cfg.max_samples else "")
        + "); nMSE / PLL of the standardised target, the PLL under the moment-matched Gaussian "
        "(the paper's figure). 'look-ahead' mixes each prediction with weights that have seen "
        "its target, as the paper's code does; 'one-step' is the honest score; 'mixture' is the "
        "one-step PLL under the exact predictive mixture.",
        "",
        "| stream | model | one-step | look-ahead | nMSE flattered by | mixture PLL |",
        "|---|---|---|---|---|---|",
    ]
    for stream, per in results.items():
        for label, r in per.items():
            a, b = r["one_step"], r["look_ahead"]
            gain = 1.0 - b["nmse"] / a["nmse"] if a["nmse"] > 0 else math.nan
            lines.append(
                f"| {stream} | {label} | {a['nmse']:.4f} / {a['pll']:.3f} | "
                f"{b['nmse']:.4f} / {b['pll']:.3f} | {100 * gain:.0f}% | {a['pll_mixture']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="One-step-ahead against look-ahead ensemble weights.")
    p.add_argument("--streams", nargs="+", default=None, metavar="NAME")
    p.add_argument("--max-samples", type=int, default=None, help="truncate every stream")
    p.add_argument("--n-warmup", type=int, default=1000)
    p.add_argument("--n-samples", type=int, default=5, help="members per mode (default 5)")
    p.add_argument("--starts", type=float, nargs="+", default=[0.1, 1.0, 10.0],
                   help="starting length scales, multiples of each input's range")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None,
                   help="folder of the .npz files (default: $RIVER_DOEBE_DATA, else "
                   "../shared/data beside the checkout)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    return p.parse_args(argv)


def main(argv=None) -> int:
    cfg = parse_args(argv)
    data_dir = default_data_dir(cfg.data_dir)
    results, skipped = {}, {}
    for name in cfg.streams or STREAMS:
        try:
            ds = datasets.load(name, directory=data_dir)
        except FileNotFoundError:
            skipped[name] = f"{name}.npz not found in the data folder"
            continue
        X, y = ds.arrays()
        if cfg.max_samples:
            X, y = X[: cfg.max_samples], y[: cfg.max_samples]
        results[name] = run(name, X, y, cfg)
    cfg.out.mkdir(parents=True, exist_ok=True)
    doc = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(cfg).items()
                        if k not in ("out", "data_dir")},
           "results": results, "skipped": skipped}
    (cfg.out / "lookahead.json").write_text(json.dumps(json_safe(doc), indent=1))
    text = markdown(results, cfg)
    if skipped:
        text += "\nNot run: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()) + "\n"
    (cfg.out / "lookahead.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
