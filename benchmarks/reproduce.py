"""Rerun the experiments of Waxman & Djuric (TMLR 2024), "Dynamic Online Ensembles of Basis
Expansions", with river-doebe, on the streams that are present.

Experiments (``--experiments``, default: all):

- ``exp1``      Sec. 5.1: static (OE-X) and dynamic (DOE-X) ensembles of one basis family each:
                additive HSGP, RFF, Poly (additive degrees 2, 3 and 4 in one ensemble), Linear
                and RBF, on the paper's seven streams, and this package's additive P-splines
                (BSpline), which the paper left out.
- ``exp2``      Sec. 5.2: a two-member ensemble of additive HSGPs, one dynamic and one static,
                run as a DOEBE (Bayesian model averaging) and as an E-DOEBE (switching twins,
                delta = 0.01), on ``StaticThenDrift`` (static until the weights collapse onto
                the static member, then drifting) and on Kuka #1 and SARCOS when their files
                exist. Plots the dynamic member's weight over time.
- ``exp3``      Sec. 5.3: E-DOEBE on the HSGP, RFF and RBF members against those families alone,
                and an E-DOEBE with the P-splines' members as well ("E-DOEBE + BSpline").
- ``sampling``  App. C: DOE-HSGP and DOE-RFF with the empirical-Bayes modes only ("MLE",
                ``n_samples = 1``) against the modes plus Laplace draws ("Sample"), on
                Elevators, SARCOS and CaData; one-sided Wilcoxon signed-rank tests when there are
                at least 5 trials.
- ``delta``     App. D: E-DOEBE with delta in 0.01, 0.05, 0.1, 0.2.
- ``uci``       App. E: (D)OE-HSGP (``floor(500 / D)`` functions per input) against (D)OE-RFF
                (250 frequencies) on the UCI sets, warm-up 100.
- ``off``       App. G: DOE-RFF against DOE-OFF (optimised Fourier features), both sampled with
                the Gaussian perturbation strategy.
- ``stacking``  Beyond the paper: the E-DOEBE's members (Exp. 3) weighted by model averaging with
                switching between twins (the paper) against online stacking of their predictive
                densities (``weighting="stacking"``), with the twins' switching, without any
                tracking, and with a fixed share with the uniform instead.

Protocol (paper Sec. 5; DESIGN.md Sec. 6): standardise ``X`` and ``y`` with the mean and standard
deviation of the first ``n_warmup`` samples (1000; 100 for ``uci``), fit every family's
hyperparameters by empirical Bayes on those samples (starts 0.1, 1 and 10 times each input's
range, then ``n_samples - 1`` Laplace draws per mode), stream the rest strictly one step ahead
(each prediction is made before its target is learnt), with ``var_rw = 1e-3`` for dynamic
members and the library's weight floor, 1e-100 (the paper's 1e-16 can prune a whole family
for good on CaData; see ``DOEBE``). The PLL under the moment-matched Gaussian is the paper's
figure; each run also scores the model's own predictive (for an ensemble, the mixture of its
members' Gaussians) as ``pll_mixture``. nMSE = MSE / Var(y over the streamed part); PLL = mean log
density of the standardised target under the moment-matched Gaussian prediction. As
``EDOEBE()`` does, the members' filters learn the warm-up window before the stream while the
weights start uniform; ``--no-replay`` starts the members from their prior instead, as the
paper's code does (with a weight floor and no switching across families, the families that learn
fastest in the first few samples can then push the others out for good).

Outputs in ``--out`` (default ``benchmarks/results/``): ``<experiment>.json`` with every number
behind every figure (per trial: final nMSE and PLL, the nMSE and PLL traces, timings; Exp. 2: the
weight traces), ``results.md`` (for each experiment whose JSON is in ``--out``, this run's or an
earlier one's, method x stream tables of nMSE and PLL, mean and standard deviation over trials,
under the settings it was run with) and PNG plots: ``<experiment>_<stream>_nmse.png`` (nMSE
against samples seen, mean and +-1 std over trials) and ``exp2_<stream>_weights.png``.

    python benchmarks/reproduce.py --quick                     # a few minutes
    python benchmarks/reproduce.py --experiments exp1 exp3 --trials 10
    python benchmarks/reproduce.py --streams friedman1 elevators --trials 3
    python benchmarks/reproduce.py --experiments exp1 exp3 --trials 3 --methods DOE-BSpline \
        OE-BSpline "E-DOEBE + BSpline" --merge   # add rows to the results already there

``--methods`` runs only the methods of those labels; ``--merge`` adds what a run measured to the
``<experiment>.json`` already in ``--out`` (its other methods, streams and experiments are kept)
and rewrites ``results.md`` from every experiment file there.

``--quick`` shortens everything (streams cut to 3,000 samples, StaticThenDrift 6,000, warm-up 500
(UCI: 100), one start, two members per mode, one trial); it checks that the pipeline works and
gives rough numbers only (about a minute on two cores).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
import warnings
import zlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
from _common import HERE, default_data_dir
from threadpoolctl import threadpool_limits

from river_doebe import DOBE, DOEBE, EDOEBE, datasets
from river_doebe import metrics as rd_metrics
from river_doebe.evaluate import progressive_scores
from river_doebe.utils import json_safe
from river_doebe.warmup import (
    DEFAULT_FAMILIES,
    FAMILIES,
    Standardizer,
    empirical_bayes,
    family_templates,
)

EXPERIMENTS = ("exp1", "exp2", "exp3", "sampling", "delta", "uci", "off", "stacking")
TITLES = {
    "exp1": "Experiment 1: comparing basis expansions (static OE-X and dynamic DOE-X)",
    "exp2": "Experiment 2: collapse of the BMA weights (DOEBE) and E-DOEBE",
    "exp3": "Experiment 3: E-DOEBE against its families alone",
    "sampling": "Appendix C: empirical-Bayes modes only (MLE) against Laplace samples",
    "delta": "Appendix D: sensitivity of E-DOEBE to the switching probability delta",
    "uci": "Appendix E: additive HSGP against RFF on the UCI sets",
    "off": "Appendix G: random (DOE-RFF) against optimised (DOE-OFF) Fourier features",
    "stacking": "Beyond the paper: model averaging with switching against online stacking",
}
PAPER_STREAMS = datasets.PAPER_NAMES
STREAMS = {
    "exp1": PAPER_STREAMS,
    "exp2": ("static_then_drift", "kuka1", "sarcos"),
    "exp3": PAPER_STREAMS,
    "sampling": ("elevators", "sarcos", "cadata"),
    "delta": PAPER_STREAMS,
    "uci": datasets.UCI_NAMES,
    "off": PAPER_STREAMS,
    "stacking": PAPER_STREAMS,
}
QUICK_STREAMS = STREAMS  # every stream present, cut short
DELTAS = (0.01, 0.05, 0.1, 0.2)
VAR_RW = 1e-3


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


@dataclass
class Config:
    n_warmup: int = 1000
    uci_warmup: int = 100
    n_samples: int = 5
    starts: tuple = (0.1, 1.0, 10.0)
    trials: int = 10
    max_samples: int | None = None
    seed: int = 0
    replay: bool = True
    maxiter: int = 200
    quick: bool = False
    exp2_samples: int = 10000
    methods: tuple = ()  # labels to run (empty: every method of each experiment)

    @classmethod
    def from_args(cls, args) -> Config:
        cfg = cls()
        if args.quick:
            cfg = cls(n_warmup=500, n_samples=2, starts=(1.0,), trials=1, max_samples=3000,
                      quick=True, exp2_samples=6000)
        for name in ("n_warmup", "n_samples", "trials", "max_samples", "seed"):
            value = getattr(args, name)
            if value is not None:
                setattr(cfg, name, value)
        if args.starts is not None:
            cfg.starts = tuple(args.starts)
        cfg.replay = bool(args.replay)
        cfg.methods = tuple(args.methods or ())
        return cfg




def _seed(*parts) -> int:
    """A stable 31-bit seed from ints and strings."""
    words = [p if isinstance(p, int) else zlib.crc32(str(p).encode()) for p in parts]
    return int(np.random.SeedSequence(words).generate_state(1)[0] % (2**31 - 1))


# ---------------------------------------------------------------------------------------------
# Streams, standardised with the warm-up window
# ---------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """A stream under the paper's protocol: the standardised warm-up window and the rest."""

    name: str
    Zw: np.ndarray
    Yw: np.ndarray
    Zs: np.ndarray
    Ys: np.ndarray
    names: list
    n_features: int
    dropped: list = field(default_factory=list)

    @property
    def n_stream(self) -> int:
        return len(self.Ys)

    def dicts(self):
        """The streamed part as river dicts, made on the fly (long streams stay small)."""
        names = self.names
        for row in self.Zs.tolist():
            yield dict(zip(names, row, strict=True))

    def warm_dicts(self) -> list[dict]:
        return [dict(zip(self.names, row, strict=True)) for row in self.Zw.tolist()]


class Streams:
    def __init__(self, data_dir, cfg: Config):
        self.data_dir = data_dir
        self.cfg = cfg
        self.cache: dict = {}
        try:
            self.present = set(datasets.available(data_dir))
        except FileNotFoundError:
            self.present = set(datasets.available(None))

    def why_missing(self, name: str) -> str | None:
        if name not in datasets.NAMES:
            return f"unknown stream {name!r}"
        if name in self.present:
            return None
        return f"{name}.npz not found in the data folder"

    def load(self, name: str, warmup: int) -> Prepared:
        key = (name, warmup)
        if key in self.cache:
            return self.cache[key]
        cap = self.cfg.max_samples
        if name == "static_then_drift":  # its own length: static half, drifting half
            n = self.cfg.exp2_samples
            dataset = datasets.StaticThenDrift(n_samples=n, n_static=n // 2)
        else:
            dataset = datasets.load(name, directory=self.data_dir)
        X, y = dataset.arrays()
        if cap is not None and name != "static_then_drift":
            X, y = X[:cap], y[:cap]
        if len(y) <= warmup + 10:
            raise ValueError(f"{name} has {len(y)} samples, too few for a warm-up of {warmup}")
        names = [str(n) for n in dataset.feature_names]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # constant inputs are reported below
            std = Standardizer.fit(X[:warmup], y[:warmup], names=names)
        Z, Y = std.x(X), std.y(y)
        # The members are fitted on the columns of Z, in this order, and stream dicts whose
        # keys the models sort: name the columns so that sorting keeps their order.
        kept = [f"z{i:03d}" for i in range(Z.shape[1])]
        prep = Prepared(
            name=name, Zw=Z[:warmup], Yw=Y[:warmup], Zs=Z[warmup:], Ys=Y[warmup:], names=kept,
            n_features=Z.shape[1],
            dropped=[names[j] for j in std.idle.tolist()],
        )
        self.cache[key] = prep
        return prep


# ---------------------------------------------------------------------------------------------
# Families and fits
# ---------------------------------------------------------------------------------------------


#: The experiments' variants of the registry's families: key -> (family, options). Every other
#: key is a family of the registry with its defaults (river_doebe.warmup.families).
VARIANTS = {
    "hsgp500": ("hsgp", {"size": 500}),  # App. E: floor(500 / D) functions per input
    "rff250": ("rff", {"size": 250}),  # App. E: 250 frequencies
    "off": ("rff", {"optimize_frequencies": True}),  # App. G: optimised Fourier features
    "rff-perturb": ("rff", {}),  # App. G: the same RFF, sampled by Gaussian perturbation
    "hsgp-exp2": ("hsgp", {}),  # Exp. 2: the same HSGP, fitted once from length scales ~1
}


def variant(key: str) -> tuple[str, dict]:
    """The registry family behind a family key, and the options it is built with."""
    return VARIANTS.get(key, (key, {}))


def templates(key: str, D: int, seed: int) -> list:
    """Basis templates of one family key, for ``D`` standardised inputs."""
    family, options = variant(key)
    return family_templates(family, D, seed, **options)


#: the Gaussian-perturbation ("gaussian") sampling strategy of App. G
PERTURB = {"rff-perturb", "off"}


class Fits:
    """Empirical-Bayes fits, cached per (stream, warm-up, trial, family)."""

    def __init__(self, cfg: Config, log):
        self.cfg = cfg
        self.log = log
        self.cache: dict = {}

    def get(self, prep: Prepared, key: str, trial: int) -> list:
        ck = (prep.name, len(prep.Yw), trial, key)
        if ck in self.cache:
            return self.cache[ck]
        cfg = self.cfg
        # RFF and OFF share their random frequencies within a trial (App. G compares them)
        fam_seed = _seed(cfg.seed, trial, prep.name, "rff" if key in PERTURB else key)
        draw_seed = _seed(cfg.seed, trial, prep.name, key, "draws")
        starts, n_samples = tuple(cfg.starts), int(cfg.n_samples)
        if key == "hsgp-exp2":  # Exp. 2: one fit from length scales of about 1, no draws
            ranges = np.ptp(prep.Zw, axis=0)
            starts, n_samples = (1.0 / float(np.mean(ranges[ranges > 0])),), 1
        method = "perturb" if key in PERTURB else "auto"
        t0 = time.perf_counter()
        members, errors = [], []
        for template in templates(key, prep.n_features, fam_seed):
            try:
                # single-threaded BLAS, as the library's own warm-up (small matrices: several
                # threads only fight over the cores)
                with warnings.catch_warnings(), threadpool_limits(limits=1):
                    warnings.simplefilter("ignore", RuntimeWarning)
                    specs = empirical_bayes.build_members(
                        copy.deepcopy(template), prep.Zw, prep.Yw, n_samples=n_samples,
                        starts=starts, seed=draw_seed, method=method, maxiter=cfg.maxiter,
                    )
            except (RuntimeError, np.linalg.LinAlgError, ValueError) as err:
                errors.append(f"{type(template).__name__}: {err}")
                continue
            members.extend(
                s for s in specs if math.isfinite(s.var_theta) and math.isfinite(s.var_eps)
            )
        if not members:
            raise RuntimeError(f"no usable member for {key} on {prep.name}: {errors}")
        took = time.perf_counter() - t0
        self.log(f"    fit {key:<11} {len(members):3d} members in {took:6.1f} s")
        self.cache[ck] = members
        return members


def doebe(members, var_rw: float) -> DOEBE:
    return DOEBE([DOBE(m.basis, m.var_theta, m.var_eps, var_rw=var_rw) for m in members])


def edoebe(members, delta: float, **weighting) -> EDOEBE:
    # the paper's E-DOEBE: the members' mixture, without the recalibration EDOEBE() adds
    return EDOEBE(
        models=[DOBE(m.basis, m.var_theta, m.var_eps) for m in members],
        rw_variances=(VAR_RW,), delta=delta, recalibrate=False, **weighting,
    )


# ---------------------------------------------------------------------------------------------
# Methods: how to build each model from the fits
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    label: str
    families: tuple  # family keys whose fits the model uses
    kind: str  # "doe", "oe", "doe-mle", "edoebe", "pair-doebe", "pair-edoebe"
    delta: float = 0.01
    weighting: tuple = ()  # the E-DOEBE's weight rule, as (name, value) pairs

    @property
    def key(self):
        return (self.kind, self.families, self.delta, self.weighting)

    def build(self, fitted: list):
        if self.kind == "doe":
            return doebe(fitted, VAR_RW)
        if self.kind == "oe":
            return doebe(fitted, 0.0)
        if self.kind == "doe-mle":
            return doebe([m for m in fitted if m.is_mode], VAR_RW)
        if self.kind == "edoebe":
            return edoebe(fitted, self.delta, **dict(self.weighting))
        if self.kind == "pair-doebe":  # member 0 dynamic, member 1 static
            (m,) = fitted[:1]
            return DOEBE([DOBE(m.basis, m.var_theta, m.var_eps, var_rw=VAR_RW),
                          DOBE(m.basis, m.var_theta, m.var_eps, var_rw=0.0)])
        if self.kind == "pair-edoebe":  # twins: dynamic first, then static
            return edoebe(fitted[:1], self.delta)
        raise ValueError(self.kind)


def _tag(key):
    return FAMILIES[variant(key)[0]].tag


def methods_for(experiment: str) -> list[Method]:
    if experiment == "exp1":
        out = []
        for fam in ("hsgp", "rff", "poly", "linear", "rbf", "bspline"):
            out += [Method(f"DOE-{_tag(fam)}", (fam,), "doe"),
                    Method(f"OE-{_tag(fam)}", (fam,), "oe")]
        return out
    if experiment == "exp3":
        out = [Method("E-DOEBE", DEFAULT_FAMILIES, "edoebe", 0.01)]
        splines = (*DEFAULT_FAMILIES, "bspline") if "bspline" not in DEFAULT_FAMILIES else None
        if splines:  # does the E-DOEBE gain from the P-splines' members?
            out.append(Method("E-DOEBE + BSpline", splines, "edoebe", 0.01))
        for fam in (*DEFAULT_FAMILIES, *(("bspline",) if splines else ())):
            out += [Method(f"DOE-{_tag(fam)}", (fam,), "doe"),
                    Method(f"OE-{_tag(fam)}", (fam,), "oe")]
        return out
    if experiment == "sampling":
        out = []
        for fam in ("hsgp", "rff"):
            out += [Method(f"DOE-{_tag(fam)}-MLE", (fam,), "doe-mle"),
                    Method(f"DOE-{_tag(fam)}-Sample", (fam,), "doe")]
        return out
    if experiment == "delta":
        return [Method(f"E-DOEBE delta={d:g}", DEFAULT_FAMILIES, "edoebe", d)
                for d in DELTAS]
    if experiment == "uci":
        out = []
        for fam in ("hsgp500", "rff250"):
            out += [Method(f"DOE-{_tag(fam)}", (fam,), "doe"),
                    Method(f"OE-{_tag(fam)}", (fam,), "oe")]
        return out
    if experiment == "off":
        return [Method("DOE-RFF", ("rff-perturb",), "doe"), Method("DOE-OFF", ("off",), "doe")]
    if experiment == "stacking":
        stack = (("weighting", "stacking"),)
        return [
            Method("E-DOEBE (BMA, switching)", DEFAULT_FAMILIES, "edoebe", 0.01),
            Method("stacking, switching", DEFAULT_FAMILIES, "edoebe", 0.01, stack),
            Method("stacking", DEFAULT_FAMILIES, "edoebe", 0.0, stack),
            Method("stacking, share 1e-3", DEFAULT_FAMILIES, "edoebe", 0.0,
                   (*stack, ("share", 1e-3))),
        ]
    if experiment == "exp2":
        return [Method("DOEBE", ("hsgp-exp2",), "pair-doebe"),
                Method("E-DOEBE", ("hsgp-exp2",), "pair-edoebe", 0.01)]
    raise ValueError(experiment)


# ---------------------------------------------------------------------------------------------
# Streaming one model, strictly one step ahead
# ---------------------------------------------------------------------------------------------


class _DynamicWeight:
    """Weight of member 0 (the dynamic one in Exp. 2's pairs) after every step."""

    def __init__(self, model, n):
        self.model = model
        self.w = np.empty(n)

    def __call__(self, t):
        self.w[t - 1] = self.model.weights[0]


def _moving_average(a, n=10):
    c = np.cumsum(np.insert(a, 0, 0.0))
    return (c[n:] - c[:-n]) / n


#: the calibration scores of the stacking experiment (by their key in the JSON)
CALIBRATION = {"coverage_90": lambda: rd_metrics.IntervalCoverage(0.9),
               "coverage_50": lambda: rd_metrics.IntervalCoverage(0.5),
               "crps": rd_metrics.CRPS}


def run_one(model, prep: Prepared, cfg: Config, record_weight=False,
            calibration=False) -> dict:
    if cfg.replay:
        # as EDOEBE() does: every member filters the window, and the weights start uniform
        # after it (the window is in-sample for the fitted hyperparameters, so its predictive
        # densities must not set them, nor drop a member half-way)
        model.replay_window(prep.warm_dicts(), prep.Yw)
    n = prep.n_stream
    every = max(1, n // 200)
    hook = _DynamicWeight(model, n) if record_weight else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # the paper's PLL scores the moment-matched Gaussian; an ensemble's own predictive is
        # the mixture of its members (the same for a single learner)
        # in blocks of rows (the same predictions), but one sample at a time where the weight
        # after every step is recorded
        scores = {"nMSE": rd_metrics.NMSE(var_y=float(prep.Ys.var())),
                  "PLL": rd_metrics.PredictiveLogLikelihood(moment_matched=True),
                  "PLL_mixture": rd_metrics.PredictiveLogLikelihood()}
        if calibration:  # (the CRPS of a mixture is quadratic in its members: only where asked)
            scores.update({key: make() for key, make in CALIBRATION.items()})
        res = progressive_scores(
            zip(prep.dicts(), prep.Ys.tolist(), strict=True), model, scores,
            every=every, on_learnt=hook, block_size=1 if hook is not None else 256,
        )
    out = {
        "nmse": float(res.scores["nMSE"]),
        "pll": float(res.scores["PLL"]),
        "pll_mixture": float(res.scores["PLL_mixture"]),
        "elapsed_s": res.elapsed,
        "samples_per_s": n / res.elapsed if res.elapsed > 0 else None,
        "steps": res.steps.tolist(),
        "nmse_trace": res.traces["nMSE"].tolist(),
        "pll_trace": res.traces["PLL"].tolist(),
        **{key: float(res.scores[key]) for key in CALIBRATION if calibration},
    }
    if hook is not None:
        w = hook.w
        ma = _moving_average(w, 10)
        idx = np.unique(np.geomspace(1, len(ma), num=min(len(ma), 1500)).astype(int)) - 1
        out["dynamic_weight"] = {
            "moving_average_10": {"step": (idx + 10).tolist(), "weight": ma[idx].tolist()},
            "min": float(w.min()),
            "max": float(w.max()),
            "final": float(w[-1]),
            "first_step_below_1e-3": int(np.argmax(w < 1e-3)) + 1 if (w < 1e-3).any() else None,
        }
    return out


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------


class Runner:
    def __init__(self, cfg: Config, streams: Streams, out: Path):
        self.cfg = cfg
        self.streams = streams
        self.out = out
        self.fits = Fits(cfg, self.log)
        # (stream, warmup, trial, method.key, calibration scored) -> result
        self.runs: dict = {}
        self.t0 = time.perf_counter()

    def log(self, msg: str) -> None:
        print(f"[{time.perf_counter() - self.t0:7.1f} s] {msg}", flush=True)

    def run_experiment(self, experiment: str, stream_names) -> dict:
        cfg = self.cfg
        warmup = cfg.uci_warmup if experiment == "uci" else cfg.n_warmup
        methods = methods_for(experiment)
        if cfg.methods:
            methods = [m for m in methods if m.label in cfg.methods]
        trials = 1 if experiment == "exp2" else cfg.trials  # Exp. 2 is deterministic
        t_start = time.perf_counter()
        doc = {"title": TITLES[experiment], "n_warmup": warmup, "trials": trials,
               "methods": [m.label for m in methods], "streams": {}, "skipped": {}}
        for name in stream_names:
            missing = self.streams.why_missing(name)
            if missing:
                doc["skipped"][name] = missing
                self.log(f"{experiment}: skip {name} ({missing})")
                continue
            try:
                prep = self.streams.load(name, warmup)
            except (ValueError, OSError) as err:
                doc["skipped"][name] = str(err)
                self.log(f"{experiment}: skip {name} ({err})")
                continue
            self.log(f"{experiment}: {name} ({len(prep.Yw)} warm-up + {prep.n_stream} streamed "
                     f"samples, {prep.n_features} inputs"
                     + (f", constant inputs dropped: {prep.dropped}" if prep.dropped else "")
                     + ")")
            per_method = {m.label: {"trials": []} for m in methods}
            for trial in range(trials):
                for m in methods:
                    # (a run reused from another experiment must have scored what this one
                    # reports: the stacking experiment's calibration)
                    key = (name, warmup, trial, m.key, experiment == "stacking")
                    if key not in self.runs:
                        try:
                            fitted = [mem for fam in m.families
                                      for mem in self.fits.get(prep, fam, trial)]
                            model = m.build(fitted)
                            result = run_one(model, prep, cfg,
                                             record_weight=experiment == "exp2",
                                             calibration=experiment == "stacking")
                            result["n_members"] = len(model.models) * (
                                2 if isinstance(model, EDOEBE) else 1
                            )
                        except Exception as err:  # noqa: BLE001 - one failure must not end a run
                            result = {"error": f"{type(err).__name__}: {err}"}
                        self.runs[key] = result
                    result = self.runs[key]
                    per_method[m.label]["trials"].append(result)
                    if "error" in result:
                        self.log(f"  trial {trial + 1}/{trials} {m.label:<20} FAILED "
                                 f"{result['error']}")
                    else:
                        self.log(f"  trial {trial + 1}/{trials} {m.label:<20} nMSE "
                                 f"{result['nmse']:8.4f}  PLL {result['pll']:9.4f}  "
                                 f"({result['elapsed_s']:.1f} s)")
            for entry in per_method.values():
                ok = [t for t in entry["trials"] if "error" not in t]
                for metric in ("nmse", "pll", "pll_mixture", *CALIBRATION):
                    if experiment != "stacking" and metric in CALIBRATION:
                        continue
                    vals = np.array([t[metric] for t in ok], dtype=float)
                    entry[f"{metric}_mean"] = float(vals.mean()) if len(vals) else None
                    entry[f"{metric}_std"] = float(vals.std()) if len(vals) else None
            doc["streams"][name] = {
                "n_warmup": len(prep.Yw), "n_streamed": prep.n_stream,
                "n_features": prep.n_features, "methods": per_method,
            }
            if experiment == "sampling":
                doc["streams"][name]["wilcoxon"] = wilcoxon_tests(per_method)
        doc["elapsed_s"] = time.perf_counter() - t_start
        return doc


def wilcoxon_tests(per_method: dict) -> dict:
    """One-sided Wilcoxon signed-rank tests, Sample better than MLE, paired by trial."""
    from scipy import stats

    out = {}
    for fam in ("HSGP", "RFF"):
        a = per_method.get(f"DOE-{fam}-Sample", {}).get("trials", [])
        b = per_method.get(f"DOE-{fam}-MLE", {}).get("trials", [])
        pairs = [(x, y) for x, y in zip(a, b, strict=False)
                 if "error" not in x and "error" not in y]
        res = {}
        for metric, alternative in (("pll", "greater"), ("nmse", "less")):
            if len(pairs) < 5:
                res[metric] = None
                continue
            d = np.array([x[metric] - y[metric] for x, y in pairs])
            try:
                res[metric] = float(stats.wilcoxon(d, alternative=alternative).pvalue)
            except ValueError:  # every difference is zero
                res[metric] = 1.0
        out[fam] = res
    return out


# ---------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------


def _closest(level: float):
    """The "best" of coverages: the one closest to its level."""
    return lambda vals: min(vals, key=lambda v: abs(v - level))


def _cell(mean, std, n_trials, bold=False, fmt=".3f"):
    if mean is None:
        return "failed"
    text = f"{mean:{fmt}} ± {std:{fmt}}" if n_trials > 1 else f"{mean:{fmt}}"
    return f"**{text}**" if bold else text


def settings(cfg: dict) -> str:
    """One line of the settings an experiment ran with (its JSON's ``config``)."""
    length = (f"at most {cfg['max_samples']} samples per stream" if cfg.get("max_samples")
              else "full streams")
    return (
        f"Settings: warm-up {cfg['n_warmup']} samples (UCI: {cfg['uci_warmup']}), "
        f"{cfg['n_samples']} members per mode, starts {list(cfg['starts'])}, {cfg['trials']} "
        f"trial(s), {length} (StaticThenDrift: {cfg['exp2_samples']}), replay of the warm-up "
        f"window: {'yes' if cfg['replay'] else 'no'}"
        + (" — **quick mode: rough numbers only**" if cfg.get("quick") else "") + "."
    )


def markdown(docs: dict) -> str:
    """``results.md``: every experiment of ``docs`` (each with the ``config`` it ran with)."""
    lines = [
        "# Reproduction of Waxman & Djuric (TMLR 2024) with river-doebe",
        "",
        "Scoring: strictly one step ahead on the samples after the warm-up; nMSE = MSE / Var(y) "
        "over those samples (lower is better); PLL = mean log density of the standardised target "
        "under the moment-matched Gaussian prediction, the paper's figure (higher is better); "
        "for the ensembles of Exp. 3 also under their own predictive, the mixture of the members' "
        "Gaussians (`PredictiveLogLikelihood()`). Cells: mean ± std over "
        "trials (the mean alone for one trial); best per stream in bold.",
        "",
    ]
    for experiment, doc in docs.items():
        lines += [f"## {doc['title']}", "", settings(doc["config"])
                  + (f" Time: {doc['elapsed_s'] / 60:.1f} min." if doc.get("elapsed_s") else ""),
                  ""]
        streams = list(doc["streams"])
        if not streams:
            lines += ["No stream was available.", ""]
        table_metrics = [("nmse", "nMSE", min), ("pll", "PLL", max)]
        if experiment in ("exp3", "delta", "stacking"):
            table_metrics.append(("pll_mixture", "PLL of the exact predictive mixture", max))
        if experiment == "stacking":
            table_metrics += [
                ("coverage_90", "90% interval coverage of the mixture (best: closest to 90%)",
                 _closest(0.9)),
                ("coverage_50", "50% interval coverage of the mixture (best: closest to 50%)",
                 _closest(0.5)),
                ("crps", "CRPS of the mixture (standardised target; lower is better)", min),
            ]
        for metric, label, better in table_metrics:
            if not streams:
                break
            lines += [f"**{label}**", "", "| method | " + " | ".join(streams) + " |",
                      "|---|" + "---|" * len(streams)]
            best = {}
            for s in streams:
                vals = [e[f"{metric}_mean"] for e in doc["streams"][s]["methods"].values()
                        if e[f"{metric}_mean"] is not None]
                best[s] = better(vals) if vals else None
            for mlabel in doc["methods"]:
                cells = []
                for s in streams:
                    e = doc["streams"][s]["methods"].get(mlabel)
                    if e is None:  # a merged method not run on this stream
                        cells.append("-")
                        continue
                    mean, std = e[f"{metric}_mean"], e[f"{metric}_std"]
                    n_ok = sum("error" not in t for t in e["trials"])
                    cells.append(_cell(mean, std, n_ok, mean is not None and mean == best[s],
                                       ".4f" if metric == "crps" else ".3f"))
                lines.append(f"| {mlabel} | " + " | ".join(cells) + " |")
            lines.append("")
        if experiment == "exp2":
            for s in streams:
                for mlabel, e in doc["streams"][s]["methods"].items():
                    t = e["trials"][0]
                    if "dynamic_weight" in t:
                        dw = t["dynamic_weight"]
                        lines.append(
                            f"- {s}, {mlabel}: weight of the dynamic member min {dw['min']:.3g}, "
                            f"final {dw['final']:.3g}"
                            + (f", first below 1e-3 at step {dw['first_step_below_1e-3']}"
                               if dw["first_step_below_1e-3"] else "")
                        )
            lines.append("")
        if experiment == "sampling":
            for s in streams:
                tests = doc["streams"][s].get("wilcoxon", {})
                for fam, res in tests.items():
                    if res.get("pll") is None:
                        lines.append(f"- {s}, DOE-{fam}: Wilcoxon tests need at least 5 trials.")
                    else:
                        lines.append(
                            f"- {s}, DOE-{fam}: one-sided Wilcoxon signed-rank p-values, Sample "
                            f"better than MLE: PLL p = {res['pll']:.3g}, nMSE p = {res['nmse']:.3g}"
                        )
            lines.append("")
        if doc["skipped"]:
            lines.append("Not run: " + "; ".join(f"{k} ({v})" for k, v in doc["skipped"].items()))
            lines.append("")
    return "\n".join(lines) + "\n"


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_nmse(plt, path: Path, experiment: str, stream: str, entry: dict) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    top = 0.0
    for mlabel, e in entry["methods"].items():
        ok = [t for t in e["trials"] if "error" not in t]
        if not ok:
            continue
        steps = np.asarray(ok[0]["steps"])
        traces = np.array([t["nmse_trace"] for t in ok], dtype=float)
        mean, std = traces.mean(axis=0), traces.std(axis=0)
        (line,) = ax.plot(steps, mean, label=mlabel, lw=1.3)
        if len(ok) > 1:
            ax.fill_between(steps, mean - std, mean + std, color=line.get_color(), alpha=0.2)
        tail = mean[len(mean) // 10 :]
        if np.isfinite(tail).any():
            top = max(top, float(np.nanmax(tail)))
    ax.set_ylim(0.0, min(1.0, 1.05 * top) if top > 0 else 1.0)
    ax.set_xlabel("samples seen after the warm-up")
    ax.set_ylabel("nMSE")
    ax.set_title(f"{experiment}: {stream}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_weights(plt, path: Path, stream: str, entry: dict) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for mlabel, e in entry["methods"].items():
        t = e["trials"][0]
        if "dynamic_weight" not in t:
            continue
        ma = t["dynamic_weight"]["moving_average_10"]
        ax.plot(ma["step"], ma["weight"], label=mlabel, lw=1.3)
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("samples seen after the warm-up")
    ax.set_ylabel("weight of the dynamic model")
    ax.set_title(f"Experiment 2: weight of the dynamic HSGP on {stream} (10-sample average)")
    ax.title.set_fontsize(9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def merge_into(out: Path, docs: dict, cfg: Config) -> tuple[dict, Config]:
    """Every experiment file in ``out`` with this run's methods added (a method measured again
    replaces its old entry), and the settings they share.

    The runs merged must share the protocol (warm-up, members, starts, trials, stream length,
    seed, replay): their rows are then comparable, and the run's ``results.md`` header holds for
    every table. ``methods`` is the union.
    """
    same = ("n_warmup", "uci_warmup", "n_samples", "starts", "trials", "max_samples", "seed",
            "replay", "maxiter", "quick")
    merged: dict = {}
    for experiment in EXPERIMENTS:
        path = out / f"{experiment}.json"
        old = json.loads(path.read_text()) if path.exists() else None
        new = docs.get(experiment)
        if old is None:
            if new is not None:
                merged[experiment] = new
            continue
        old_cfg = old.pop("config")
        old.pop("experiment", None)
        clash = [k for k in same if json_safe(old_cfg.get(k)) != json_safe(getattr(cfg, k))]
        if clash:
            raise SystemExit(f"--merge: {path} was run with other settings ({', '.join(clash)}); "
                             "rerun with the same ones or write to another --out")
        if new is not None:
            order = [m.label for m in methods_for(experiment)]
            labels = set(old["methods"]) | set(new["methods"])
            old["methods"] = [m for m in order if m in labels] + sorted(labels - set(order))
            for stream, entry in new["streams"].items():
                if stream in old["streams"]:
                    old["streams"][stream]["methods"].update(entry["methods"])
                else:
                    old["streams"][stream] = entry
            for stream, why in new["skipped"].items():
                if stream not in old["streams"]:
                    old["skipped"][stream] = why
        old["config"] = old_cfg  # (a touched experiment is written with this run's)
        merged[experiment] = old
    cfg = replace(cfg, methods=())
    return merged, cfg


def write_outputs(out: Path, docs: dict, cfg: Config, touched=None) -> list[Path]:
    """This run's ``<experiment>.json`` files and plots (after a merge, ``touched``: only the
    experiments this run measured), and ``results.md`` over every experiment whose JSON is in
    ``out`` (an earlier run's stay, under their own settings)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for experiment, doc in docs.items():
        if touched is not None and experiment not in touched:
            continue
        doc["config"] = asdict(cfg)
        path = out / f"{experiment}.json"
        payload = {"experiment": experiment, **doc}
        path.write_text(json.dumps(json_safe(payload), indent=1) + "\n")
        written.append(path)
    every = {}
    for experiment in EXPERIMENTS:
        path = out / f"{experiment}.json"
        if experiment in docs:
            every[experiment] = docs[experiment]
        elif path.exists():
            every[experiment] = json.loads(path.read_text())
    md = out / "results.md"
    md.write_text(markdown(every))
    written.append(md)
    if touched is not None:
        docs = {k: v for k, v in docs.items() if k in touched}
    plt = _pyplot()
    if plt is None:
        print("matplotlib is not installed: no plots (pip install matplotlib)", file=sys.stderr)
        return written
    for experiment, doc in docs.items():
        for stream, entry in doc["streams"].items():
            path = out / f"{experiment}_{stream}_nmse.png"
            plot_nmse(plt, path, experiment, stream, entry)
            written.append(path)
            if experiment == "exp2":
                path = out / f"exp2_{stream}_weights.png"
                plot_weights(plt, path, stream, entry)
                written.append(path)
    return written


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Rerun the experiments of the DOEBE paper with river-doebe.",
        epilog="See the module docstring and benchmarks/README.md for what each experiment does.",
    )
    p.add_argument("--experiments", nargs="+", choices=EXPERIMENTS, default=list(EXPERIMENTS),
                   metavar="EXP", help="which experiments: " + ", ".join(EXPERIMENTS))
    p.add_argument("--streams", nargs="+", default=None, metavar="NAME",
                   help="override the streams of every selected experiment")
    p.add_argument("--trials", type=_positive_int, default=None,
                   help="random trials (default 10, the paper's; 1 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="short streams, few members, one trial: a few minutes")
    p.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    p.add_argument("--data-dir", default=None,
                   help="folder of the .npz files (default: $RIVER_DOEBE_DATA, else "
                   "../shared/data beside the checkout)")
    p.add_argument("--n-warmup", type=_positive_int, default=None,
                   help="warm-up window (default 1000; 500 with --quick)")
    p.add_argument("--n-samples", type=_positive_int, default=None,
                   help="members per empirical-Bayes mode (default 5; 2 with --quick)")
    p.add_argument("--starts", type=float, nargs="+", default=None,
                   help="starting length scales, multiples of each input's range "
                   "(default 0.1 1 10; 1 with --quick)")
    p.add_argument("--max-samples", type=_positive_int, default=None,
                   help="truncate every stream (default: full; 3000 with --quick)")
    p.add_argument("--seed", type=int, default=None, help="base seed (default 0)")
    p.add_argument("--methods", nargs="+", default=None, metavar="LABEL",
                   help="run only the methods of these labels (e.g. DOE-BSpline)")
    p.add_argument("--merge", action="store_true",
                   help="add the results to the experiment files already in --out (keeping "
                   "their other methods, streams and experiments) and rewrite results.md "
                   "from all of them")
    p.add_argument("--no-replay", dest="replay", action="store_false",
                   help="start the members from their prior after the fit (the paper's code) "
                   "instead of filtering the warm-up window through them first")
    args = p.parse_args(argv)
    if args.n_warmup is not None and args.n_warmup < 2:
        p.error("--n-warmup must be at least 2")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = Config.from_args(args)
    data_dir = default_data_dir(args.data_dir)
    streams = Streams(data_dir, cfg)
    runner = Runner(cfg, streams, args.out)
    runner.log(f"config: {asdict(cfg)}; data folder: {data_dir}")
    docs = {}
    for experiment in [e for e in EXPERIMENTS if e in args.experiments]:
        if args.streams:
            names = [s.strip().lower().replace("-", "_") for s in args.streams]
        else:
            names = (QUICK_STREAMS if cfg.quick else STREAMS)[experiment]
        runner.log(f"=== {TITLES[experiment]}")
        docs[experiment] = runner.run_experiment(experiment, names)
    touched = set(docs) if args.merge else None
    if args.merge:
        docs, cfg = merge_into(args.out, docs, cfg)
    written = write_outputs(args.out, docs, cfg, touched=touched)
    print((args.out / "results.md").read_text())
    print("wrote:", *[str(p) for p in written], sep="\n  ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
