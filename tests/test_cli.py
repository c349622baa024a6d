"""The ``river-doebe`` command line: the main job on small settings, and every error path."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from river_doebe import cli, datasets

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--n", "600", "--n-warmup", "200", "--n-samples", "1", "--no-progress"]


def _data_dir() -> Path | None:
    env = os.environ.get(datasets.ENV_VAR)
    for folder in (env, ROOT.parent / "shared" / "data"):
        if folder and Path(folder).is_dir():
            return Path(folder)
    return None


def _run(*args, env_extra=None, drop_env=()):
    env = dict(os.environ)
    for key in drop_env:
        env.pop(key, None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "river_doebe", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert lines, "expected a message on stderr"
    return lines[-1]


# --------------------------------------------------------------------------- the main job


def test_evaluate_default_model_with_peers_json_and_plot(tmp_path, capsys):
    out_json, out_png = tmp_path / "res" / "run.json", tmp_path / "res" / "run.png"
    status = cli.main(
        ["evaluate", *SMALL, "--peers", "blr,hat", "--json", str(out_json), "--plot", str(out_png)]
    )
    assert status == 0
    printed = capsys.readouterr().out
    for label in ("E-DOEBE", "BayesianLinearRegression", "HoeffdingAdaptiveTree", "samples/s"):
        assert label in printed

    doc = json.loads(out_json.read_text())
    assert doc["stream"] == "drift" and doc["n_samples"] == 600
    runs = {r["key"]: r for r in doc["results"]}
    assert list(runs) == ["edoebe", "blr", "hat"]
    for r in runs.values():
        assert 0.0 < r["scores"]["nMSE"] < 1.5 and r["samples_per_s"] > 0
        assert r["trace"]["steps"][-1] == 600
        assert r["trace"]["nMSE"][-1] == pytest.approx(r["scores"]["nMSE"])
    # PLL only where the model gives a distribution
    assert math.isfinite(runs["edoebe"]["scores"]["PLL"])
    assert math.isfinite(runs["blr"]["scores"]["PLL"])
    assert "PLL" not in runs["hat"]["scores"]
    # the E-DOEBE weights over time, by family and static/dynamic, from the end of the warm-up
    weights = runs["edoebe"]["weights"]
    assert weights["warm_at"] == 200 and weights["steps"][-1] == 600
    totals = np.sum([v for v in weights["groups"].values()], axis=0)
    np.testing.assert_allclose(totals, 1.0, atol=1e-9)
    assert any("(dynamic)" in g for g in weights["groups"]) and any(
        "(static)" in g for g in weights["groups"]
    )
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("model", ["doe-rff", "oe-linear", "dobe-hsgp"])
def test_evaluate_family_models_alone(model, capsys):
    assert cli.main(["evaluate", *SMALL, "--model", model, "--no-peers"]) == 0
    table = capsys.readouterr().out
    label = cli.MODELS[model].label
    row = next(line for line in table.splitlines() if line.startswith(label))
    nmse, _, pll = (float(v) for v in row.split()[1:4])
    assert 0.0 < nmse < 1.5 and math.isfinite(pll)


@pytest.mark.parametrize(
    "key, dynamic",
    [("doe-rff", [True] * 2), ("oe-rff", [False] * 2), ("dobe-rff", [True])],
)
def test_family_models_are_edoebes_of_one_kind(key, dynamic):
    settings = {"n_warmup": 100, "n_samples": 2, "starts": (1.0,), "seed": 0}
    model = cli.MODELS[key].factory(settings)
    for x, t in datasets.Drift(n_samples=120, seed=3):
        model.learn_one(x, t)
    assert [m["dynamic"] for m in model.describe()] == dynamic


def test_default_warmup_is_the_edoebe_default_and_fast_is_smaller():
    from river_doebe import EDOEBE

    parser = cli.build_parser()
    default = cli._settings(parser.parse_args(["evaluate"]), parser)
    reference = EDOEBE()
    assert default["n_warmup"] == reference.n_warmup
    assert default["n_samples"] == reference.n_samples
    assert tuple(default["starts"]) == tuple(reference.starts)
    fast = cli._settings(parser.parse_args(["evaluate", "--fast", "--n-samples", "2"]), parser)
    assert fast["n_warmup"] == cli.FAST["n_warmup"] and fast["n_samples"] == 2


def test_list_shows_streams_models_and_peers(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("drift", "static_then_drift", "elevators", "edoebe", "doe-rff", "knn", "arf"):
        assert word in out


def test_python_dash_m_runs_the_cli():
    done = _run("--help")
    assert done.returncode == 0
    assert "evaluate" in done.stdout and "list" in done.stdout


@pytest.mark.skipif(_data_dir() is None, reason="the data folder is not available")
def test_evaluate_a_file_stream_from_data_dir(capsys):
    status = cli.main(
        ["evaluate", "--stream", "uci_servo", "--data-dir", str(_data_dir()), "--model",
         "oe-linear", "--n-warmup", "60", "--no-progress", "--peers", "lr"]
    )
    assert status == 0
    assert "167 samples" in capsys.readouterr().out


# --------------------------------------------------------------------------- errors


def test_missing_data_file_is_one_line_and_exit_2(tmp_path):
    done = _run("evaluate", "--stream", "elevators", "--data-dir", str(tmp_path),
                drop_env=(datasets.ENV_VAR,))
    assert done.returncode == 2
    line = _error_line(done.stderr)
    assert line.startswith("error: Data file 'elevators.npz' not found")
    assert "Traceback" not in done.stderr


def test_missing_data_folder_from_the_environment(monkeypatch, capsys):
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    assert cli.main(["evaluate", "--stream", "cadata"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Data file 'cadata.npz' not found")
    assert datasets.ENV_VAR in err


def test_unknown_stream(capsys):
    assert cli.main(["evaluate", "--stream", "mnist"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown stream 'mnist'") and "drift" in err


def test_unknown_stream_in_a_subprocess():
    done = _run("evaluate", "--stream", "nope")
    assert done.returncode == 2
    assert _error_line(done.stderr).startswith("error: unknown stream 'nope'")


def test_classification_stream_is_refused(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "banana.npz", X=rng.normal(size=(20, 2)),
             y=np.where(rng.random(20) < 0.5, -1.0, 1.0))
    with pytest.warns(UserWarning, match="rows"):
        status = cli.main(["evaluate", "--stream", "banana", "--data-dir", str(tmp_path)])
    assert status == 2
    assert "classification" in capsys.readouterr().err


def test_unknown_peer(capsys):
    assert cli.main(["evaluate", "--peers", "blr", "xgboost", "--n", "300"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown peer(s) 'xgboost'")


def test_warmup_longer_than_the_stream(capsys):
    assert cli.main(["evaluate", "--n", "300", "--n-warmup", "300"]) == 2
    assert "--n-warmup (300) must be smaller" in capsys.readouterr().err


def test_plot_without_matplotlib_fails_before_running(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    status = cli.main(["evaluate", *SMALL, "--plot", str(tmp_path / "x.png")])
    assert status == 2
    assert "matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["evaluate", "--model", "xgboost"], "invalid choice"),
        (["evaluate", "--n", "0"], "expected a positive integer"),
        (["evaluate", "--n", "many"], "expected a positive integer"),
        (["evaluate", "--n-warmup", "1"], "--n-warmup: must be at least 2"),
        (["evaluate", "--n-samples", "0"], "--n-samples: must be at least 1"),
        (["evaluate", "--starts", "-1"], "expected a positive number"),
        (["evaluate", "--peers", "blr", "--no-peers"], "not allowed with"),
        (["evaluate", "--bogus"], "unrecognized arguments"),
        ([], "required"),
    ],
)
def test_bad_options_are_argparse_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
