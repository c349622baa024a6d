"""Streaming binary classification on the banana data (Waxman & Djuric, TMLR 2024, App. A).

Models, all run in this one process on the same streams:

- ``E-DOEBE``            the drop-in ``EDOEBEClassifier(seed=...)``: it warms up on the first
                         ``n_warmup`` samples itself (standardisation, hyperparameters, replay of
                         the window) and sees raw inputs;
- ``E-DOEBE (stacking)`` the same with online stacking of the members' predictive densities in
                         place of model averaging and switching (``weighting="stacking",
                         delta=0``);
- ``E-DOEBE (IPL)``      the drop-in E-DOEBE with its members updated by iterated posterior
                         linearisation instead of the Laplace step (``update="ipl"``; same
                         hyperparameter fit, same weights and switching);
- ``OE-X`` / ``DOE-X``   for X in HSGP, RFF, RBF: one family alone, static (``var_rw = 0``) or
                         dynamic (``var_rw = 1e-3``), built like the paper from the warm-up fit
                         (``river_doebe.warmup.fit_members`` on the standardised window with the
                         labels coded -1/+1, the criterion of ``EDOEBEClassifier``) as a
                         ``DOEBEClassifier`` of ``DOBEClassifier`` members (the modes and their
                         Laplace draws); they see inputs standardised with the window's statistics.
                         The fit uses the same families and seed as the E-DOEBE, so these are
                         exactly its members (checked, ``members_match`` in the JSON);
- river's ``StandardScaler | LogisticRegression``, ``HoeffdingAdaptiveTreeClassifier`` and
  ``ARFClassifier`` (default settings, seeded).

Protocol (paper Sec. 5 and App. A): the first ``n_warmup`` (1000) samples fix the input
standardisation and the hyperparameters; every model learns from them (the basis-expansion
models by filtering the window after the fit, ``--no-replay`` to start them from their prior;
river's models learn online from the first sample); error rate and log loss are measured on the
rest, strictly one step ahead (each prediction before its label is learnt). Log loss is
``-log max(p(y), 1e-15)``; the error counts the most probable label. ``samples/s`` is
``predict_proba_one`` + ``learn_one`` over the scored part; ``warm-up s`` is the time a model
spent on the window, which for the E-DOEBE includes its hyperparameter fit (the family models'
shared fit is reported separately, as ``fit s``).

Orders of the stream (``--orders``):

- ``shuffled``       a permutation seeded by the trial (i.i.d.; static models should do well);
- ``file``           the order of ``banana.npz`` (the KEEL file, itself in no meaningful order);
- ``left-to-right``  rows sorted by the first input, the stand-in for the paper's unshuffled,
                     left-to-right order (see ``river_doebe.datasets.Banana``); dynamic models
                     should do better here.

Trials (``--trials``) change the seeds of the random parts (random features, RBF centres, Laplace
draws, river's trees) and, for ``shuffled``, the permutation.

Data: ``--data-dir``, else ``$RIVER_DOEBE_DATA``, else ``../shared/data`` beside the checkout.
Writes ``classification.json`` (every number, per trial, with error traces every 100 scored
samples) and ``classification.md`` (tables: mean +- std over trials) to ``--out``
(default ``benchmarks/results/``).

    python benchmarks/classification.py                 # a few minutes
    python benchmarks/classification.py --trials 5 --orders shuffled left-to-right
    python benchmarks/classification.py --quick         # smoke run, well under a minute
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import river
from _common import HERE, default_data_dir, predict_then_learn
from river import forest, linear_model, preprocessing, tree
from threadpoolctl import threadpool_limits

from river_doebe import (
    DOBEClassifier,
    DOEBEClassifier,
    EDOEBEClassifier,
    datasets,
)
from river_doebe.utils import json_safe
from river_doebe.warmup import (
    DEFAULT_FAMILIES,
    FAMILIES,
    Standardizer,
    family_templates,
    fit_members,
    resolve_families,
)

ORDERS = ("shuffled", "file", "left-to-right")


def _basis_class(family: str) -> str:
    """The class name of a registry family's basis (fitted members and ``describe()`` name their
    basis, not their family)."""
    return type(family_templates(family, 1)[0]).__name__


#: the E-DOEBE classifier's families (the registry's default set), each also run alone, by the
#: class name of their basis
FAMILY_OF_BASIS = {_basis_class(name): name for name in DEFAULT_FAMILIES}
MODELS = {
    "edoebe": "E-DOEBE",
    "edoebe-stacking": "E-DOEBE (stacking)",
    "edoebe-ipl": "E-DOEBE (IPL)",
    **{f"{kind}-{name}": f"{kind.upper()}-{FAMILIES[name].tag}" for name in DEFAULT_FAMILIES
       for kind in ("oe", "doe")},
    "logreg": "LogisticRegression (river)",
    "hat": "HoeffdingAdaptiveTree (river)",
    "arf": "ARF (river)",
}
LOG_FLOOR = 1e-15
#: the rows of the drop-in E-DOEBE (its own warm-up on raw inputs)
EDOEBE_KEYS = ("edoebe", "edoebe-stacking", "edoebe-ipl")


@dataclass
class Config:
    n_warmup: int = 1000
    n_samples: int = 5
    starts: tuple = (0.1, 1.0, 10.0)
    var_rw: float = 1e-3
    delta: float = 1e-2
    trials: int = 3
    seed: int = 0
    orders: tuple = ORDERS
    models: tuple = tuple(MODELS)
    replay: bool = True
    max_samples: int | None = None
    quick: bool = False

    @classmethod
    def from_args(cls, args) -> Config:
        cfg = cls()
        if args.quick:
            cfg = cls(n_warmup=300, n_samples=2, starts=(1.0,), trials=1, max_samples=1500,
                      quick=True)
        for name in ("n_warmup", "n_samples", "trials", "seed", "max_samples"):
            value = getattr(args, name)
            if value is not None:
                setattr(cfg, name, value)
        if args.starts is not None:
            cfg.starts = tuple(args.starts)
        if args.orders is not None:
            cfg.orders = tuple(args.orders)
        if args.models is not None:
            cfg.models = tuple(args.models)
        cfg.replay = not args.no_replay
        return cfg




def load(order: str, seed: int, data_dir, cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    if order == "shuffled":
        dataset = datasets.Banana(directory=data_dir, shuffle=True, seed=seed)
    elif order == "file":
        dataset = datasets.Banana(directory=data_dir)
    elif order == "left-to-right":
        dataset = datasets.Banana(directory=data_dir, left_to_right=True)
    else:
        raise ValueError(f"unknown order {order!r}")
    X, y = dataset.arrays()
    if cfg.max_samples is not None:
        X, y = X[: cfg.max_samples], y[: cfg.max_samples]
    return X, y.astype(bool)


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


def fit_families(Xw: np.ndarray, yw: np.ndarray, cfg: Config, seed: int):
    """The E-DOEBE classifier's warm-up fit, done once for the family models: the frozen
    standardisation and the members of every default family (same families, same seed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        std = Standardizer.fit(Xw, yw.astype(float), names=["x0", "x1"])
    Zw = std.x(Xw)
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        fitted = fit_members(Zw, 2.0 * yw - 1.0, resolve_families(None, Zw.shape[1], seed),
                             n_samples=cfg.n_samples, starts=cfg.starts, seed=seed)
    return std, fitted, time.perf_counter() - t0


def build_models(cfg: Config, seed: int, fitted) -> dict:
    """``key -> (model, inputs)`` where inputs is ``"raw"`` or ``"std"`` (standardised)."""
    models = {}
    for key in cfg.models:
        if key in EDOEBE_KEYS:
            # the stacking row: online stacking in place of model averaging and switching (no
            # twins' switching, as in the regressors' stacking experiment); the IPL row: the
            # E-DOEBE row with the other update step of the members
            weighting = ({"weighting": "stacking", "delta": 0.0} if key == "edoebe-stacking"
                         else {"delta": cfg.delta})
            if key == "edoebe-ipl":
                weighting["update"] = "ipl"
            models[key] = (
                EDOEBEClassifier(n_warmup=cfg.n_warmup, n_samples=cfg.n_samples,
                                 rw_variances=(cfg.var_rw,), seed=seed, starts=cfg.starts,
                                 replay=cfg.replay, **weighting),
                "raw",
            )
        elif key in ("logreg", "hat", "arf"):
            model = {
                "logreg": lambda: preprocessing.StandardScaler()
                | linear_model.LogisticRegression(),
                "hat": lambda: tree.HoeffdingAdaptiveTreeClassifier(seed=seed),
                "arf": lambda: forest.ARFClassifier(seed=seed),
            }[key]()
            models[key] = (model, "raw")
        else:
            kind, fam = key.split("-")
            basis = _basis_class(fam)
            var_rw = cfg.var_rw if kind == "doe" else 0.0
            members = [DOBEClassifier(m.basis, var_theta=m.var_theta, var_rw=var_rw)
                       for m in fitted if type(m.basis).__name__ == basis]
            models[key] = (DOEBEClassifier(members), "std")
    return models


def members_match(edoebe: EDOEBEClassifier, fitted) -> bool:
    """Whether the E-DOEBE's static members are the benchmark's fitted members."""
    static = edoebe.describe()[-len(fitted):]
    return len(static) == len(fitted) and all(
        d["var_theta"] == m.var_theta
        and np.array_equal(list(d["hyper"].values()), m.basis.get_hyper())
        for d, m in zip(static, fitted, strict=True)
    )


def edoebe_weights(edoebe: EDOEBEClassifier) -> dict:
    """The E-DOEBE's final weight of each family, static and dynamic."""
    out: dict = defaultdict(float)
    for d in edoebe.describe():
        tag = FAMILIES[FAMILY_OF_BASIS[d["family"]]].tag
        out[f"{'DOE' if d['dynamic'] else 'OE'}-{tag}"] += d["weight"]
    return dict(out)


# ---------------------------------------------------------------------------------------------
# One trial: every model on one stream, interleaved sample by sample
# ---------------------------------------------------------------------------------------------


def run_trial(order: str, trial: int, cfg: Config, data_dir, log) -> dict:
    seed = cfg.seed + trial
    X, y = load(order, seed, data_dir, cfg)
    W = cfg.n_warmup
    if len(y) <= W:
        raise ValueError(f"the stream has {len(y)} samples, too few for a warm-up of {W}")
    labels = y.tolist()
    std, fitted, fit_s = None, [], 0.0
    if any(k not in (*EDOEBE_KEYS, "logreg", "hat", "arf") for k in cfg.models):
        std, fitted, fit_s = fit_families(X[:W], y[:W], cfg, seed)
    models = build_models(cfg, seed, fitted)
    raw = [{"x0": a, "x1": b} for a, b in X.tolist()]
    stdd = [{"x0": a, "x1": b} for a, b in std.x(X).tolist()] if std is not None else None

    n_scored = len(y) - W
    errors = {k: np.zeros(n_scored, dtype=bool) for k in models}
    losses = {k: np.zeros(n_scored) for k in models}
    t_warm = dict.fromkeys(models, 0.0)
    t_stream = dict.fromkeys(models, 0.0)
    clock = time.perf_counter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # warm-up diagnostics
        for key, (model, inputs) in models.items():
            xs = raw if inputs == "raw" else stdd
            if inputs == "raw" or cfg.replay:
                t0 = clock()
                for x, t in zip(xs[:W], labels[:W], strict=True):
                    model.learn_one(x, t)
                t_warm[key] += clock() - t0
            t0 = clock()
            probas = predict_then_learn(model, xs[W:], labels[W:])
            t_stream[key] += clock() - t0
            for j, (proba, t) in enumerate(zip(probas, labels[W:], strict=True)):
                p = proba.get(t, 0.0)
                errors[key][j] = (max(proba, key=proba.get) if proba else (not t)) != t
                losses[key][j] = -math.log(max(p, LOG_FLOOR))

    out = {"seed": seed, "n_warmup": W, "n_scored": n_scored, "fit_seconds": fit_s}
    for key, (model, _) in models.items():
        err = errors[key]
        cum = np.cumsum(err) / np.arange(1, n_scored + 1)
        entry = {
            "error": float(err.mean()),
            "log_loss": float(losses[key].mean()),
            "samples_per_s": n_scored / t_stream[key] if t_stream[key] > 0 else float("nan"),
            "warmup_seconds": t_warm[key],
            "error_trace": cum[99::100].round(5).tolist(),
        }
        if key in EDOEBE_KEYS:
            entry["weights"] = edoebe_weights(model)
            entry["n_members"] = len(model.members)
            if fitted:
                entry["members_match"] = members_match(model, fitted)
        out[key] = entry
    line = "  ".join(f"{MODELS[k]} {out[k]['error']:.3f}" for k in models)
    log(f"  {order:<13} trial {trial}: {line}")
    return out


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def summarise(trials: list[dict], keys) -> dict:
    out = {}
    for key in keys:
        rows = [t[key] for t in trials]
        out[key] = {
            metric: {"mean": float(np.mean([r[metric] for r in rows])),
                     "std": float(np.std([r[metric] for r in rows]))}
            for metric in ("error", "log_loss", "samples_per_s", "warmup_seconds")
        }
    return out


def _pm(mean, std, scale=1.0, digits=2, bold=False):
    text = f"{mean * scale:.{digits}f} ± {std * scale:.{digits}f}"
    return f"**{text}**" if bold else text


def markdown(doc: dict) -> str:
    cfg = doc["config"]
    lines = [
        "# Banana: streaming binary classification (paper App. A)",
        "",
        f"Warm-up {cfg['n_warmup']} samples (input standardisation and hyperparameters; every "
        f"model learns from them{'' if cfg['replay'] else ', except the family models'}), "
        "metrics on the rest, one step ahead. "
        f"{cfg['trials']} trial(s) per order, mean ± std over trials; "
        f"{cfg['n_samples']} members per mode, starts {list(cfg['starts'])}, "
        f"var_rw {cfg['var_rw']:g}, delta {cfg['delta']:g}."
        + (" **Quick run: rough numbers only.**" if cfg["quick"] else ""),
        "",
        "Error in %; log loss in nats per sample; samples/s over the scored part "
        "(predict_proba_one + learn_one); warm-up s = time on the window (for the E-DOEBE "
        "including its hyperparameter fit).",
        "",
    ]
    for order, entry in doc["orders"].items():
        summ = entry["summary"]
        best = min(v["error"]["mean"] for v in summ.values())
        fit = np.mean([t["fit_seconds"] for t in entry["trials"]])
        lines += [f"## {order}", ""]
        lines += ["| model | error (%) | log loss | samples/s | warm-up s |",
                  "|---|---|---|---|---|"]
        for key, v in summ.items():
            e = v["error"]
            lines.append(
                f"| {MODELS[key]} | {_pm(e['mean'], e['std'], 100, 2, e['mean'] == best)} | "
                f"{_pm(v['log_loss']['mean'], v['log_loss']['std'], 1, 3)} | "
                f"{v['samples_per_s']['mean']:,.0f} | {v['warmup_seconds']['mean']:.1f} |"
            )
        lines.append("")
        if fit > 0:
            lines.append(f"Shared fit of the family models: {fit:.1f} s per trial.")
        for key in EDOEBE_KEYS:
            ed = [t[key] for t in entry["trials"] if key in t]
            if not ed:
                continue
            w = defaultdict(list)
            for t in ed:
                for k, v in t["weights"].items():
                    w[k].append(v)
            text = ", ".join(f"{k} {np.mean(v):.2f}" for k, v in sorted(w.items()))
            lines.append(f"{MODELS[key]} final weights (mean over trials): {text}.")
            if any("members_match" in t for t in ed):
                ok = all(t.get("members_match", False) for t in ed)
                lines.append(f"{MODELS[key]} members identical to the family models' "
                             f"members: {'yes' if ok else 'NO'}.")
        lines.append("")
    lines.append(f"river {doc['env']['river']}, numpy {doc['env']['numpy']}, "
                 f"Python {doc['env']['python']}; total {doc['elapsed_seconds']:.0f} s.")
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None, help="folder with banana.npz")
    ap.add_argument("--out", default=str(HERE / "results"), help="output folder")
    ap.add_argument("--trials", type=int, default=None, help="trials per order (default 3)")
    ap.add_argument("--seed", type=int, default=None, help="base seed (trial t uses seed + t)")
    ap.add_argument("--orders", nargs="+", choices=ORDERS, default=None)
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=None)
    ap.add_argument("--n-warmup", dest="n_warmup", type=int, default=None)
    ap.add_argument("--n-samples", dest="n_samples", type=int, default=None,
                    help="members per mode (default 5)")
    ap.add_argument("--starts", type=float, nargs="+", default=None)
    ap.add_argument("--max-samples", dest="max_samples", type=int, default=None,
                    help="stream only the first N samples")
    ap.add_argument("--no-replay", action="store_true",
                    help="basis-expansion models start from their prior after the warm-up")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: warm-up 300, 1500 samples, one start, 2 members per mode, "
                         "one trial")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = Config.from_args(args)
    data_dir = default_data_dir(args.data_dir)
    try:
        datasets.Banana(directory=data_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"banana.npz not available: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    log(f"banana benchmark: orders {list(cfg.orders)}, {cfg.trials} trial(s), data {data_dir}")
    t0 = time.perf_counter()
    doc = {
        "config": asdict(cfg),
        "models": {k: MODELS[k] for k in cfg.models},
        "env": {"river": river.__version__, "numpy": np.__version__,
                "python": platform.python_version()},
        "orders": {},
    }
    for order in cfg.orders:
        trials = [run_trial(order, t, cfg, data_dir, log) for t in range(cfg.trials)]
        doc["orders"][order] = {"trials": trials, "summary": summarise(trials, cfg.models)}
    doc["elapsed_seconds"] = time.perf_counter() - t0
    (out / "classification.json").write_text(json.dumps(json_safe(doc), indent=1))
    text = markdown(doc)
    (out / "classification.md").write_text(text)
    log("")
    log(text)
    log(f"wrote {out / 'classification.json'} and {out / 'classification.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
