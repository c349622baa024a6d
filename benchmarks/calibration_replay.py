"""Variants of the recalibration scored fast, on the E-DOEBE's recorded predictives.

``calibration.py`` runs the E-DOEBE on each stream, which takes minutes a stream; the
recalibration only sees the E-DOEBE's one-step-ahead predictive and the target. So the
predictives are recorded once (``--record``: ``calibration.py``'s protocol and E-DOEBE, the
mixture's weights, means, variances and moments and the target of every scored sample, one
pickle a stream), then each variant of the wrapper is replayed on them (a stub regressor that
returns the recorded predictive and learns nothing), scored as ``calibration.py`` scores it
(``IntervalCoverage`` at 90% and 50%, ``CRPS``), against the E-DOEBE's own.

Variants (``--variants``):

- ``library``, ``gate-library``: ``Recalibrated(r)`` and ``Recalibrated(r, gate=True)`` as the
  library has them (what the table of ``calibration.md`` holds); these two are also scored as
  that table scores them (mean 90% width, PLL, nMSE);
- ``before``, ``gate-before``: the same with the library's settings of before the early steps
  and the gate's score (main at 9637b65: constant steps, and the gate's mean map whenever only
  its longest window departs); they reproduce that commit's numbers;
- ``early-0.1``, ``early-0.2``, ``early-0.4``, ``early-interval-only``: the early steps with
  ``EARLY_STEP`` (and ``EARLY_LEVEL_STEP``) 0.1, 0.2 or 0.4 instead of 0.3, or for the conformal
  level only; ``step-0.02``: no early steps but ``step=0.02``;
- ``gate-average-1000``: the gate's mean map over 1,000 targets instead of 4,000 (the window
  before);
- (``gate-own-score-100``, ``gate-mean-score-1000``, in the results: the gate's online scores,
  measured at commit 2d32b1b and then removed from the library, as they did not pay: while a
  short window departs, the learnt map only while its recent CRPS over 100 targets, one step
  ahead, is below the wrapped predictive's, else the wrapped predictive; while only the longest
  departs, the mean map only while its recent CRPS over 1,000 targets is);
- ``no-shape``: ``levels=()``, the conformal interval's knots only;
- ``slow-shape``: ``level_step=0.001``;
- ``gate``, ``gate-long``, ``gate-long-avg``: experiments in Python (on the library's wrapper, so
  with its steps of now), from which the library's gate came: the distribution is the wrapped
  model's own (the identity map) until the probability integral transforms of the unmapped
  predictive depart significantly from uniform, then the recalibrated one (the conformal
  interval of ``predict_one(x, with_interval=True)`` is the wrapper's own throughout, so its
  guarantee holds; the distribution's interval is then the conformal one only while the gate
  is open). The test: exponentially weighted shares of the targets below the levels 0.05, 0.25,
  0.5, 0.75, 0.95 of the predictive (``gate-long`` adds the shares inside its central 50% and 90%
  intervals), over windows of 100 and 1,000 samples (``gate-long``: and 4,000); the gate opens
  when a share is more than 4.5 (100), 3.5 (1,000) or 3.0 (4,000) of its standard deviations
  under uniform PITs from its level, and closes when every one is back within 2.5;
  ``gate-long-avg``: while only the 4,000-sample window finds a departure, the map is the
  exponentially weighted mean of the learnt maps' knots over 1,000 samples (a small, lasting
  departure: less noise), the learnt map itself otherwise (``gate-no-score`` in the compiled
  update).

    python benchmarks/calibration_replay.py --record --recordings /tmp/rec --max-samples 5000
    python benchmarks/calibration_replay.py --recordings /tmp/rec --variants library gate-library

Writes ``calibration_replay.json`` and ``calibration_replay.md`` to ``--out`` (default
``benchmarks/results/``); the recordings (tens of MB) stay in ``--recordings``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time
import warnings
from pathlib import Path

import numpy as np
from _common import HERE, default_data_dir
from river import base

from river_doebe import calibration, metrics
from river_doebe.conf import Recalibrated, RecalibratedDistribution, _kernels
from river_doebe.distributions import GaussianMixture
from river_doebe.utils import json_safe

STREAMS = ("drift", "static_then_drift", "friedman1", "friedman2", "elevators", "cadata",
           "cpusmall", "friedman_drift_gradual", "friedman_drift_global", "trump_approval")


# ---------------------------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------------------------


def record(name: str, cfg: dict, data_dir, folder: Path) -> None:
    import calibration as cal  # this folder's script: its streams and its E-DOEBE

    warm_x, warm_y, xs, ys = cal.load(name, data_dir, cfg)
    model = cal.edoebe(cfg, len(warm_y))
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y in zip(warm_x, warm_y.tolist(), strict=True):
            model.learn_one(x, y)
        for x, y in zip(xs, ys.tolist(), strict=True):
            d = model.predict_one(x, with_dist=True)
            rows.append((d.weights.copy(), d.means.copy(), d.variances.copy(), d._mv(), y))
            model.learn_one(x, y)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{name}.pkl", "wb") as f:
        pickle.dump(rows, f)


def recorded(name: str, folder: Path) -> list:
    with open(folder / f"{name}.pkl", "rb") as f:
        rows = pickle.load(f)
    return [(GaussianMixture._from_moments(w, m, v, *mv), y) for w, m, v, mv, y in rows]


# ---------------------------------------------------------------------------------------------
# The variants
# ---------------------------------------------------------------------------------------------


class Recorded(base.Regressor):
    """Returns the recorded predictive of sample ``x['i']``; learns nothing."""

    def __init__(self, dists: list):
        self.dists = dists

    def predict_one(self, x, with_dist=False):
        d = self.dists[x["i"]]
        return d if with_dist else d.mu

    def learn_one(self, x, y):
        pass


class Gated(Recalibrated):
    """The experiment of the module's docstring (in Python: slow, scores only)."""

    LEVELS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])

    def __init__(self, regressor, gate_windows=(100, 1000), z_open=(4.5, 3.5), z_close=2.5,
                 intervals=False, average=0, **kwargs):
        super().__init__(regressor, **kwargs)
        self.average = average
        self._ku_avg = self._ku.copy()
        self.slow = False
        self.gate_windows, self.z_open, self.z_close = gate_windows, z_open, z_close
        self.intervals = intervals
        self._q = np.concatenate((self.LEVELS, [0.5, 0.9])) if intervals else self.LEVELS
        self._h = np.tile(self._q, (len(gate_windows), 1))
        self._n = 0
        self.open = False
        self.n_open = 0

    def _recalibrate(self, dist):
        if self.open and self.slow and not self._is_point_mass(dist):
            return RecalibratedDistribution._unchecked(self._base(dist), self._ku_avg, self._kp)
        if self.open or self._is_point_mass(dist):
            return super()._recalibrate(dist)
        return RecalibratedDistribution._unchecked(dist, np.array([0.0, 1.0]),
                                                   np.array([0.0, 1.0]))

    def learn_one(self, x, y, **kwargs):
        memo = self._memo
        dist = (memo[1] if memo is not None and memo[0] == x and not isinstance(memo[1], tuple)
                else self.regressor.predict_one(x, with_dist=True))
        super().learn_one(x, y, **kwargs)
        if not getattr(self.regressor, "is_warm", True) or self._is_point_mass(dist):
            return
        f, _ = calibration.cdf_sf(dist, y)
        hit = (f <= self.LEVELS).astype(float)
        if self.intervals:
            hit = np.concatenate((hit, [float(0.25 < f <= 0.75), float(0.05 < f <= 0.95)]))
        self._n += 1
        q = self._q
        z = []
        for i, w in enumerate(self.gate_windows):
            rho = 1.0 - 1.0 / w
            self._h[i] = rho * self._h[i] + (1.0 - rho) * hit
            # the variance of an exponentially weighted share of n Bernoulli(q) draws
            var = q * (1.0 - q) * (1.0 - rho) * (1.0 - rho ** (2 * self._n)) / (1.0 + rho)
            z.append(float(np.max(np.abs(self._h[i] - q) / np.sqrt(var))))
        if self.average:
            r = 1.0 - 1.0 / self.average
            self._ku_avg = r * self._ku_avg + (1.0 - r) * self._ku
        if self.open:
            self.open = any(v > self.z_close for v in z)
        else:
            self.open = any(v > t for v, t in zip(z, self.z_open, strict=True))
        # with averaging: the averaged map while only the longest window finds a departure
        self.slow = bool(self.average) and not any(
            v > t for v, t in zip(z[:-1], self.z_open[:-1], strict=True))
        self.n_open += self.open


def tuned(gate: bool = False, params=None, **slots):
    """``Recalibrated(r, gate=gate)`` with some of its compiled update's settings changed
    (``early``, ``level_early``, ``gate_average``: the slots ``S_EARLY``, ``S_LEVEL_EARLY``,
    ``S_GATE_AVERAGE`` of :mod:`river_doebe.conf._kernels`): the library's choices measured
    against others."""
    def make(r):
        model = Recalibrated(r, gate=gate, **(params or {}))
        for name, value in slots.items():
            model._settings[getattr(_kernels, "S_" + name.upper())] = value
        return model
    return make


#: the library's wrapper as it was before the early steps and the gate's score (main at 9637b65)
BEFORE = {"early": 0.0, "level_early": 0.0, "gate_average": 1000.0}

VARIANTS = {
    "library": lambda r: Recalibrated(r),
    "gate-library": lambda r: Recalibrated(r, gate=True),
    "before": tuned(**BEFORE),
    "gate-before": tuned(gate=True, **BEFORE),
    "early-0.1": tuned(early=0.1, level_early=0.1),
    "early-0.2": tuned(early=0.2, level_early=0.2),
    "early-0.4": tuned(early=0.4, level_early=0.4),
    "early-interval-only": tuned(level_early=0.0),
    "step-0.02": tuned(params={"step": 0.02}),
    "gate-average-1000": tuned(gate=True, gate_average=1000.0),
    "no-shape": lambda r: Recalibrated(r, levels=()),
    "slow-shape": lambda r: Recalibrated(r, level_step=0.001),
    "gate": lambda r: Gated(r),
    "gate-long": lambda r: Gated(r, gate_windows=(100, 1000, 4000), z_open=(4.5, 3.5, 3.0),
                                 intervals=True),
    "gate-long-avg": lambda r: Gated(r, gate_windows=(100, 1000, 4000), z_open=(4.5, 3.5, 3.0),
                                     intervals=True, average=1000),
}


#: the variants scored as calibration.md's table scores them (width, PLL, nMSE too)
FULL = ("library", "gate-library")


def _width_90(dist) -> float:
    if not isinstance(dist, RecalibratedDistribution):
        dist = RecalibratedDistribution(dist, [0.0, 1.0], [0.0, 1.0])
    return dist.interval(0.9).width


def replay(make, data: list, full: bool = False) -> dict:
    """Score one variant on one stream's recorded predictives; with ``full`` also as
    ``calibration.py``'s table does (the mean 90% width, the PLL, the nMSE of the point
    prediction and of the distribution's mean), the E-DOEBE's own beside it."""
    model = make(Recorded([d for d, _ in data]))
    scores = {who: [metrics.IntervalCoverage(0.9), metrics.IntervalCoverage(0.5), metrics.CRPS()]
              for who in ("plain", "recal")}
    if full:
        for who in scores:
            scores[who].append(metrics.PredictiveLogLikelihood())
        sums = {"plain_width": 0.0, "recal_width": 0.0, "sse": 0.0, "sse_mean": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, (d, y) in enumerate(data):
            x = {"i": i}
            g = model.predict_one(x, with_dist=True)
            for m in scores["recal"]:
                m.update(y, g)
            for m in scores["plain"]:
                m.update(y, d)
            if full:
                sums["plain_width"] += _width_90(d)
                sums["recal_width"] += _width_90(g)
                sums["sse"] += (y - d.mu) ** 2
                sums["sse_mean"] += (y - g.mu) ** 2
            model.learn_one(x, y)
    (p90, p50, pc, *pp), (r90, r50, rc, *rp) = ([m.get() for m in v] for v in scores.values())
    out = {"coverage_90": r90, "coverage_50": r50, "crps": rc,
           "crps_change_pct": 100.0 * (rc / pc - 1.0),
           "plain": {"coverage_90": p90, "coverage_50": p50, "crps": pc}, "n_scored": len(data)}
    if full:
        n = len(data)
        var = float(np.var([y for _, y in data]))
        out.update(pll=rp[0], width_90=sums["recal_width"] / n, nmse=sums["sse"] / n / var,
                   nmse_dist_mean=sums["sse_mean"] / n / var)
        out["plain"].update(pll=pp[0], width_90=sums["plain_width"] / n,
                            nmse=sums["sse"] / n / var)
        out.update(n_outside=model.n_outside_, alpha_end=model.alpha_)
    if isinstance(model, Gated):
        out["n_open"] = model.n_open
    elif model.gate:
        out["n_gated"] = model.n_gated_
    return out


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def markdown(doc: dict) -> str:
    variants = doc["variants"]
    lines = [
        "# Recalibration variants replayed on recorded E-DOEBE predictives",
        "",
        "The E-DOEBE's one-step-ahead predictives of `calibration.py`'s protocol, recorded once, "
        "replayed through each variant of the wrapper (see `calibration_replay.py`). A cell: "
        "90% / 50% coverage of the variant's distribution, and its CRPS change against the "
        "E-DOEBE's own (negative: better); for the gates, the share of the samples with the "
        "gate open (for the library's gate: the share predicted with the learnt map itself, "
        "not the identity or the mean map).",
        f"Command: `python benchmarks/calibration_replay.py --recordings DIR --variants "
        f"{' '.join(variants)}`. Load average (1 minute): {doc['load_avg_start'][0]:.1f} at "
        f"the start, {doc['load_avg_end'][0]:.1f} at the end (2 cores). Recordings: "
        f"{doc.get('recordings_note', '-')}",
        "",
        "| stream | E-DOEBE | " + " | ".join(variants) + " |",
        "|---|---|" + "---|" * len(variants),
    ]
    for stream, rows in doc["results"].items():
        p = next(iter(rows.values()))["plain"]
        cells = [f"{p['coverage_90']:.1%} / {p['coverage_50']:.1%}"]
        for v in variants:
            r = rows[v]
            cell = (f"{r['coverage_90']:.1%} / {r['coverage_50']:.1%}, "
                    f"{r['crps_change_pct']:+.2f}%")
            if "n_open" in r:
                cell += f", open {r['n_open'] / r['n_scored']:.0%}"
            if "n_gated" in r:
                cell += f", own map {1.0 - r['n_gated'] / r['n_scored']:.0%}"
            cells.append(cell)
        lines.append(f"| {stream} | " + " | ".join(cells) + " |")
    lines.append("")
    full = [v for v in variants if v in FULL]
    if full:
        lines += [
            "Scored as `calibration.md`'s table scores them (the same predictives, so the same "
            "numbers as a run of `calibration.py` with this wrapper): coverage of the central 90% "
            "/ 50% intervals, mean width of the 90% interval (warm-up standard deviations of y), "
            "CRPS, PLL, nMSE of the point prediction (the E-DOEBE's mean) and in brackets of the "
            "distribution's mean.",
            "",
            "| stream | model | 90% | 50% | width 90% | CRPS | PLL | nMSE |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for stream, rows in doc["results"].items():
            p = rows[full[0]]["plain"]
            lines.append(f"| {stream} | E-DOEBE | {p['coverage_90']:.1%} | "
                         f"{p['coverage_50']:.1%} | {p['width_90']:.4g} | {p['crps']:.4f} | "
                         f"{p['pll']:.3f} | {p['nmse']:.4f} |")
            for v in full:
                r = rows[v]
                lines.append(f"| {stream} | {v} | {r['coverage_90']:.1%} | "
                             f"{r['coverage_50']:.1%} | {r['width_90']:.4g} | {r['crps']:.4f} | "
                             f"{r['pll']:.3f} | {r['nmse']:.4f} ({r['nmse_dist_mean']:.4f}) |")
        lines.append("")
    if doc.get("note"):
        lines += [f"Note: {doc['note']}", ""]
    if doc.get("before_md"):
        lines += ["## Before the early steps and the gate's 4,000-target mean map", "",
                  doc["before_md"], ""]
    return "\n".join(lines)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", nargs="+", default=list(STREAMS), metavar="NAME")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--recordings", type=Path, required=True,
                   help="folder of the recorded predictives (one <stream>.pkl each)")
    p.add_argument("--record", action="store_true",
                   help="record the streams' predictives into --recordings, replay nothing")
    p.add_argument("--max-samples", type=int, default=5000)
    p.add_argument("--n-warmup", type=int, default=1000)
    p.add_argument("--note", default="", help="where the recordings come from, for the report")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    if args.record:
        cfg = {"max_samples": args.max_samples, "n_warmup": args.n_warmup, "seed": 0,
               "quick": False, "n_samples": 5, "starts": (0.1, 1.0, 10.0)}
        data_dir = default_data_dir(args.data_dir)
        for name in args.streams:
            t0 = time.perf_counter()
            record(name, cfg, data_dir, args.recordings)
            print(f"{name}: recorded ({time.perf_counter() - t0:.0f} s)", flush=True)
        return {}
    doc = {"variants": list(args.variants), "recordings_note": args.note,
           "load_avg_start": list(os.getloadavg()), "results": {}}
    for name in args.streams:
        if not (args.recordings / f"{name}.pkl").exists():
            print(f"skip {name}: not recorded", flush=True)
            continue
        data = recorded(name, args.recordings)
        doc["results"][name] = {v: replay(VARIANTS[v], data, full=v in FULL)
                                for v in args.variants}
        print(name, {v: f"{r['coverage_90']:.3f}/{r['coverage_50']:.3f} "
                     f"{r['crps_change_pct']:+.2f}%" for v, r in doc["results"][name].items()},
              flush=True)
    doc["load_avg_end"] = list(os.getloadavg())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "calibration_replay.json").write_text(json.dumps(json_safe(doc), indent=1) + "\n")
    (args.out / "calibration_replay.md").write_text(markdown(doc))
    return doc


if __name__ == "__main__":
    main()
