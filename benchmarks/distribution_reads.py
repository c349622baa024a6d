"""What reading ``EDOEBE()``'s predictive distribution costs, against its point prediction, in one
process.

After the warm-up on Friedman #1 (``river_doebe.datasets.Friedman1``, seed 0), the same fitted
``EDOEBE()`` is copied once per protocol and each copy streams the same samples (predict, then
learn), the protocols taking turns a chunk of samples at a time:

- ``point``: ``predict_one(x)``;
- ``dist``: ``predict_one(x, with_dist=True)`` (a ``RecalibratedDistribution``, nothing read);
- ``moments``: and its ``mu`` and ``sigma`` (what a Gaussian-reading metric asks);
- ``density``: and its ``log_pdf(y)`` (the predictive log-likelihood);
- ``interval``: and its ``interval(0.9)`` (``predict_one(x, with_interval=True)`` reads the same
  quantiles).

Reported: samples/s of each (its chunks' best over the repeats, summed) and its ratio to
``point``, with the load average. ``--distribution-module FILE`` replaces the methods of
``river_doebe.conf.distribution`` that compute the moments, the density and the quantiles by
those of another version of that module (an A/B of two versions in separate processes).

    python benchmarks/distribution_reads.py [--n 3000] [--repeats 5] [--busy]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.util
import json
import os
import time
import warnings
from pathlib import Path

import river_doebe.conf.distribution as distribution
from river_doebe import EDOEBE
from river_doebe.datasets import Friedman1

HERE = Path(__file__).resolve().parent
PROTOCOLS = ("point", "dist", "moments", "density", "interval")


def _use_module(path: str) -> None:
    """The moments, density and quantiles of the module at ``path`` (another version of
    ``river_doebe/conf/distribution.py``) in place of this version's."""
    spec = importlib.util.spec_from_file_location("other_distribution", path)
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    for name in ("_mv", "log_pdf"):
        setattr(distribution.RecalibratedDistribution, name,
                other.RecalibratedDistribution.__dict__[name])
    for name in ("quantile", "log_pdf", "cdf_sf"):
        setattr(distribution._Components, name, other._Components.__dict__[name])


def _step(model, x, y, protocol: str) -> None:
    if protocol == "point":
        model.predict_one(x)
    else:
        dist = model.predict_one(x, with_dist=True)
        if protocol == "moments":
            _ = dist.mu, dist.sigma
        elif protocol == "density":
            dist.log_pdf(y)
        elif protocol == "interval":
            dist.interval(0.9)
    model.learn_one(x, y)


def run(n: int, repeats: int, n_warmup: int = 1000, chunk: int = 100) -> dict:
    data = list(Friedman1(n_samples=n_warmup + n, seed=0))
    warm = EDOEBE(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y in data[:n_warmup]:
            warm.learn_one(x, y)
    stream = data[n_warmup:]
    loads = [list(os.getloadavg())]
    times = {p: [] for p in PROTOCOLS}
    for _ in range(repeats):
        models = {p: copy.deepcopy(warm) for p in PROTOCOLS}
        spent = {p: [] for p in PROTOCOLS}
        for i in range(0, n, chunk):
            rows = stream[i:i + chunk]
            for p, model in models.items():
                t0 = time.perf_counter()
                for x, y in rows:
                    _step(model, x, y, p)
                spent[p].append(time.perf_counter() - t0)
        for p in PROTOCOLS:
            times[p].append(spent[p])
        loads.append(list(os.getloadavg()))
    rate = {p: n / sum(min(c) for c in zip(*v)) for p, v in times.items()}
    return {"samples": n, "repeats": repeats, "chunk": chunk, "loads": loads,
            "samples_per_s": rate,
            "ratio_to_point": {p: rate[p] / rate["point"] for p in PROTOCOLS}}


def markdown(doc: dict) -> str:
    """A table of every run in ``doc`` (label: row): samples/s and the ratio to ``point``."""
    lines = [
        "# What reading EDOEBE()'s predictive distribution costs",
        "",
        "`python benchmarks/distribution_reads.py` (Friedman #1 after the warm-up; the protocols "
        "take turns a chunk of samples at a time in one process; samples/s, and in brackets the "
        "ratio to `predict_one(x)`'s). `dist`: `predict_one(x, with_dist=True)`; `moments`: "
        "and its `mu`, `sigma`; `density`: and its `log_pdf(y)`; `interval`: and its "
        "`interval(0.9)`; each then `learn_one`.",
        "",
        "| run | " + " | ".join(PROTOCOLS) + " | load |",
        "|---|" + "---|" * (len(PROTOCOLS) + 1),
    ]
    for label, row in doc.items():
        cells = [f"{row['samples_per_s'][p]:,.0f} ({row['ratio_to_point'][p]:.3f})"
                 for p in PROTOCOLS]
        loads = [v[0] for v in row["loads"]]
        lines.append(f"| {label} | " + " | ".join(cells)
                     + f" | {min(loads):.1f}-{max(loads):.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=3000, help="samples streamed after the warm-up")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--n-warmup", type=int, default=1000, help="EDOEBE()'s warm-up")
    p.add_argument("--distribution-module", default=None, metavar="FILE",
                   help="another version of river_doebe/conf/distribution.py to measure")
    p.add_argument("--label", default="this version")
    p.add_argument("--busy", action="store_true",
                   help="with two CPU-bound processes of another program beside it "
                   "(throughput.py's busy rows' processes, ended by the script)")
    p.add_argument("--out", type=Path, default=HERE / "results" / "distribution_reads.json",
                   help="the JSON file; each run adds its label's row (and the table of all "
                   "its rows, beside it as .md)")
    a = p.parse_args(argv)
    if a.distribution_module:
        _use_module(a.distribution_module)
    from throughput import busy_machine

    with busy_machine(2) if a.busy else contextlib.nullcontext():
        row = run(a.n, a.repeats, a.n_warmup)
    row["busy"] = a.busy
    for proto in PROTOCOLS:
        print(f"  {a.label}: {proto:9s} {row['samples_per_s'][proto]:8,.0f} samples/s "
              f"({row['ratio_to_point'][proto]:.3f} of point)", flush=True)
    doc = json.loads(a.out.read_text()) if a.out.exists() else {}
    doc[a.label] = row
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    a.out.with_suffix(".md").write_text(markdown(doc))
    return row


if __name__ == "__main__":
    main()
