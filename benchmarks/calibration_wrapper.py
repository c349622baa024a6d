"""The recalibration wrapper's own time a sample, this checkout against an earlier commit.

``Recalibrated`` around a stub regressor that returns one of 200 fixed 80-component mixtures
(the size of the E-DOEBE's) and learns nothing, so only the wrapper's work is timed:
``predict_one(x, with_dist=...)`` then ``learn_one(x, y)`` over 3,000 samples, the two versions
interleaved in one process, best of the repeats. The earlier version is read with ``git show``.
The stub also gives its predictive as arrays (``_predictive_arrays``, the private view of this
package's ensembles), which a point prediction of a wrapper that knows the view reads instead of
the distribution (the time the model saves by not building it is not in this figure: the stub's
distributions are made in advance).

    python benchmarks/calibration_wrapper.py --before 51c21ce
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from river import base

from river_doebe.conf import Recalibrated
from river_doebe.distributions import GaussianMixture

HERE = Path(__file__).resolve().parent


def earlier(rev: str):
    source = subprocess.run(["git", "show", f"{rev}:river_doebe/conf/recalibrated.py"],
                            check=True, capture_output=True, text=True, cwd=HERE).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("recalibrated_before", f.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.unlink(f.name)
    return module.Recalibrated


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="the earlier commit")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    dists, views = [], []
    for _ in range(200):
        w, m, v = rng.dirichlet(np.ones(80)), rng.normal(0, 0.3, 80), rng.uniform(0.5, 1.5, 80)
        mu = float(w @ m)
        var = float(w @ (v + m * m) - mu * mu)
        dists.append(GaussianMixture._from_moments(w, m, v, mu, var))
        views.append((mu, var, np.log(w), m, v, 1.0, 0.0))

    class Stub(base.Regressor):
        def predict_one(self, x, with_dist=False):
            d = dists[x["i"] % 200]
            return d if with_dist else d.mu

        def _predictive_arrays(self, x):
            return views[x["i"] % 200]

        def learn_one(self, x, y):
            pass

    ys = rng.normal(size=3000).tolist()
    xs = [{"i": i} for i in range(3000)]

    def run(cls, with_dist):
        model = cls(Stub())
        t0 = time.perf_counter()
        for x, y in zip(xs, ys, strict=True):
            model.predict_one(x, with_dist=with_dist)
            model.learn_one(x, y)
        return (time.perf_counter() - t0) / len(xs) * 1e6

    versions = {"before": earlier(args.before), "now": Recalibrated}
    for cls in versions.values():  # compile, warm the caches
        run(cls, True)
    doc = {"before": args.before, "repeats": args.repeats, "cpus": os.cpu_count(),
           "load_avg_start": list(os.getloadavg())}
    for with_dist in (True, False):
        best = dict.fromkeys(versions, float("inf"))
        for _ in range(args.repeats):
            for name, cls in versions.items():
                best[name] = min(best[name], run(cls, with_dist))
        doc["dist" if with_dist else "point"] = {"us_per_sample": best,
                                                 "ratio_now_before": best["now"] / best["before"]}
        print(f"with_dist={with_dist}: {best['before']:.1f} -> {best['now']:.1f} us a sample",
              flush=True)
    doc["load_avg_end"] = list(os.getloadavg())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "calibration_wrapper.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


if __name__ == "__main__":
    main()
