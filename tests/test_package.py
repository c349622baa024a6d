"""The package's face: what `from river_doebe import *` brings in, and what importing it loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import river_doebe

ROOT = Path(__file__).resolve().parents[1]
ESTIMATORS = ["DOBE", "DOBEClassifier", "DOEBE", "DOEBEClassifier", "EDOEBE",
              "EDOEBEClassifier", "SDOEBE", "SDOEBEClassifier"]


def test_star_import_brings_the_estimators_only():
    assert sorted(river_doebe.__all__) == ESTIMATORS
    namespace: dict = {}
    exec("from river import datasets, metrics\nfrom river_doebe import *", namespace)
    assert sorted(k for k in namespace if not k.startswith("__")) == sorted(
        ["datasets", "metrics", *ESTIMATORS]
    )
    # river's modules are not shadowed
    assert namespace["metrics"].__name__ == "river.metrics"
    assert namespace["datasets"].__name__ == "river.datasets"
    for name in ESTIMATORS:
        assert namespace[name] is getattr(river_doebe, name)


def test_submodules_import_by_name_and_as_attributes():
    from river_doebe import basis, datasets, distributions, metrics

    for module, name in ((basis, "basis"), (datasets, "datasets"),
                         (distributions, "distributions"), (metrics, "metrics")):
        assert isinstance(module, types.ModuleType)
        assert module.__name__ == f"river_doebe.{name}"
        assert getattr(river_doebe, name) is module
    assert river_doebe.cli.main is not None
    assert {"metrics", "datasets", "cli", "EDOEBE"} <= set(dir(river_doebe))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        river_doebe.nope  # noqa: B018


def test_importing_the_package_loads_neither_datasets_nor_metrics_nor_the_cli():
    code = (
        "import json, sys, river_doebe\n"
        "mods = ['river_doebe.datasets', 'river_doebe.metrics', 'river_doebe.cli',"
        " 'river.datasets', 'river.metrics', 'tqdm', 'sklearn']\n"
        "print(json.dumps([m for m in mods if m in sys.modules]))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []
