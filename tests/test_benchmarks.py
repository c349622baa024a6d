"""Smoke runs of the benchmark scripts on tiny settings, so that they cannot rot.

Only that they run end to end and write their outputs is checked here; their numbers are what
the scripts themselves are for.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    if str(BENCH) not in sys.path:  # as when the script runs: its folder first on the path
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_reproduce_runs_and_writes_its_outputs(tmp_path):
    pytest.importorskip("matplotlib")
    reproduce = _load("reproduce")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        code = reproduce.main([
            "--quick", "--experiments", "exp2", "exp3", "--streams", "friedman1",
            "static_then_drift", "--max-samples", "900", "--n-warmup", "300",
            "--out", str(tmp_path),
        ])
    assert code in (0, None)
    table = (tmp_path / "results.md").read_text()
    assert "E-DOEBE" in table and "Experiment 2" in table
    exp2 = json.loads((tmp_path / "exp2.json").read_text())
    assert exp2


def test_peers_runs_and_writes_its_outputs(tmp_path):
    peers = _load("peers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        code = peers.main(["--quick", "--streams", "drift", "--max-samples", "700",
                           "--out", str(tmp_path)])
    assert code in (0, None)
    assert "EDOEBE" in (tmp_path / "peers.md").read_text()


def test_lookahead_runs_and_writes_its_outputs(tmp_path):
    lookahead = _load("lookahead")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        code = lookahead.main(["--streams", "friedman1", "--max-samples", "700", "--n-warmup",
                               "300", "--n-samples", "2", "--starts", "1", "--out",
                               str(tmp_path)])
    assert code == 0
    doc = json.loads((tmp_path / "lookahead.json").read_text())
    r = doc["results"]["friedman1"]["E-DOEBE"]
    assert set(r) >= {"one_step", "look_ahead", "members"}
    assert "look-ahead" in (tmp_path / "lookahead.md").read_text()


def test_throughput_runs_and_writes_its_outputs(tmp_path, monkeypatch):
    throughput = _load("throughput")
    # a smaller ensemble and warm-up keep the smoke run short; the script's own defaults
    # are what its results file reports
    monkeypatch.setattr(throughput, "time_warmup", lambda repeats: {"seconds_best": 0.0,
                                                                   "samples": 0, "inputs": 0,
                                                                   "members": 0})
    out = tmp_path / "throughput.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        payload = throughput.main(["--n", "1400", "--repeats", "1", "--out", str(out)])
    assert out.exists()
    assert payload["results"]["DOBE, 100 RFF features"]["samples_per_second"] > 0
