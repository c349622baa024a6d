"""``river-doebe compile``: every kernel a model runs is in Numba's on-disk cache afterwards, so a
later process compiles nothing."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest
from river import base

import river_doebe
from river_doebe import precompile as pc
from river_doebe.cli import entry


def test_every_estimator_of_the_package_is_run():
    """A new estimator class must join the workloads, or its kernels would be left out."""
    public = {cls for _, cls in inspect.getmembers(river_doebe, inspect.isclass)
              if issubclass(cls, base.Estimator)}
    from river_doebe.conf import Recalibrated

    public.add(Recalibrated)
    run = {type(make()) for _, make, _ in pc._models(50)}
    assert public <= run, sorted(c.__name__ for c in public - run)


def test_the_command_line_has_the_subcommand():
    args = entry.build_parser().parse_args(["compile", "--no-threads"])
    assert args.command == "compile" and args.no_threads


# the qualified names of the functions Numba compiles (``names``), in a process' script
_COMPILES = """
from numba.core import event

names = []

class Listener(event.Listener):
    def on_start(self, ev):
        func = getattr(ev.data.get("dispatcher"), "py_func", None)
        names.append(func.__qualname__ if func else "?")

    def on_end(self, ev):
        pass
"""

# what a user's process runs after the command: the default E-DOEBE one sample at a time (with its
# distribution's reads, its threads timed against one thread) and in a block, a classifier, a
# learner on a spline basis
_USER = _COMPILES + """
import json, warnings
warnings.simplefilter("ignore")
from river_doebe import DOBE, EDOEBE, EDOEBEClassifier
from river_doebe.basis import BSpline
from river_doebe.datasets import Friedman1

data = list(Friedman1(n_samples=1400, seed=1))
with event.install_listener("numba:compile", Listener()):
    model = EDOEBE(seed=1)
    for x, y in data[:1200]:
        model.predict_one(x)
        model.predict_one(x, with_dist=True).interval(0.9)
        model.learn_one(x, y)
    model.predict_learn_many([x for x, _ in data[1200:]], [y for _, y in data[1200:]])
    clf = EDOEBEClassifier(n_warmup=300, seed=1)
    for x, y in data[:400]:
        clf.predict_proba_one(x)
        clf.learn_one(x, y > 14)
    spline = DOBE(BSpline())
    for x, y in data[:50]:
        spline.predict_one(x)
        spline.learn_one(x, y)
# the rented kernels found in the on-disk cache at their first call: compiled from the start
from river_doebe.kernels.jit import _ALL_RENTED
print(json.dumps([names, {k: v for rented in _ALL_RENTED for k, v in rented._bought.items()}]))
"""


@pytest.mark.slow  # about a minute: a fresh install's every compile, then a user's process
def test_after_the_command_a_process_compiles_nothing(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "river_doebe", "compile"], env=env,
                          capture_output=True, text=True, check=True)
    last = done.stdout.strip().splitlines()[-1]
    assert "models run:" in last and " 0 compiles" not in last, last
    user = subprocess.run([sys.executable, "-c", _USER], env=env, capture_output=True,
                          text=True, check=True)
    names, bought = json.loads(user.stdout.strip().splitlines()[-1])
    assert names == []
    assert {"update", "update_affine", "update_log_weights", "switch_log_weights", "weigh_block",
            "mixture_proba", "standardise_one"} <= set(bought), bought
    assert all(bought.values()), bought
    again = subprocess.run([sys.executable, "-m", "river_doebe", "compile", "--no-threads"],
                           env=env, capture_output=True, text=True, check=True)
    assert ": 0 compiles, 0.0 s;" in again.stdout, again.stdout


_RENTED = _COMPILES + """
import json
from river import linear_model
from river_doebe.conf import Recalibrated, recalibrated
from river_doebe.datasets import Friedman1

data = list(Friedman1(n_samples=400, seed=2))
with event.install_listener("numba:compile", Listener()):
    model = Recalibrated(linear_model.BayesianLinearRegression())
    for x, y in data[:200]:
        model.predict_one(x, with_dist=True)
        model.learn_one(x, y)
    before = list(names)
    recalibrated._UPDATE.rent = recalibrated._UPDATE.paid + 1e-4  # then the rent is paid
    for x, y in data[200:]:
        model.predict_one(x, with_dist=True)
        model.learn_one(x, y)
print(json.dumps([before, names, recalibrated._UPDATE.paid]))
"""


@pytest.mark.slow  # compiles the recalibration's update in a fresh cache: about 10 s
def test_a_fresh_install_compiles_the_recalibration_s_update_once_it_has_paid_for_it(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", _RENTED], env=env, capture_output=True,
                          text=True, check=True)
    before, after, paid = json.loads(done.stdout.strip().splitlines()[-1])
    # 200 targets learnt by the update's Python twin: nothing of it compiled ...
    assert "update" not in before and "update_affine" not in before and paid > 0
    # ... and once the twin's calls have taken the rent, the kernel
    assert "update" in after[len(before):]
