"""The ``river-doebe`` command line: the main job on small settings, and every error path.

The runs go through ``cli.main`` in this process; a few go through ``python -m river_doebe`` in
a subprocess, to check what a user's shell sees (those are marked ``slow``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from river import metrics as river_metrics

from river_doebe import cli, datasets, metrics
from river_doebe.cli import entry, registry, streams
from river_doebe.evaluate import progressive_scores

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--n", "600", "--n-warmup", "200", "--n-samples", "1", "--no-progress"]
# the settings SMALL gives a model (the starts are the default ones)
SMALL_SETTINGS = {"n_warmup": 200, "n_samples": 1, "starts": registry.DEFAULT["starts"], "seed": 0}


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


@pytest.mark.slow  # about 4 s: three models, each run twice
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
    for key, r in runs.items():
        # the scores of the same model on the same stream, computed apart from the CLI; the
        # PLL, coverage and CRPS only where the model gives a distribution (not the tree)
        _the_same_scores(r, _independent_scores(key))
        assert r["samples_per_s"] == pytest.approx(600 / r["elapsed_s"])
        assert r["trace"]["steps"][-1] == 600
        assert r["trace"]["nMSE"][-1] == pytest.approx(r["scores"]["nMSE"])
    assert not {"PLL", "cov90", "cov50", "CRPS"} & set(runs["hat"]["scores"])
    # the E-DOEBE weights over time, by family and static/dynamic, from the end of the warm-up
    weights = runs["edoebe"]["weights"]
    assert weights["warm_at"] == 200 and weights["steps"][-1] == 600
    totals = np.sum([v for v in weights["groups"].values()], axis=0)
    np.testing.assert_allclose(totals, 1.0, atol=1e-9)
    assert any("(dynamic)" in g for g in weights["groups"]) and any(
        "(static)" in g for g in weights["groups"]
    )
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _independent_scores(key: str, n: int = 600) -> dict:
    """The scores of the model or peer ``key`` on the first ``n`` samples of the drift stream,
    computed apart from the command line: the same model from the registry, streamed by
    ``progressive_scores``, and the nMSE of its point predictions written out."""
    spec = {**registry.MODELS, **registry.PEERS}[key]
    dataset = datasets.Drift(n_samples=n)
    _, y = dataset.arrays()
    scores = {"MAE": river_metrics.MAE()}
    if spec.has_dist:
        scores["PLL"] = metrics.PredictiveLogLikelihood()
        scores.update(cov90=metrics.IntervalCoverage(0.9), cov50=metrics.IntervalCoverage(0.5),
                      CRPS=metrics.CRPS())
    result = progressive_scores(dataset, spec.factory(SMALL_SETTINGS), scores,
                                keep_predictions=True)
    nmse = float(np.mean((y - result.predictions) ** 2) / np.var(y))
    return {"nMSE": nmse, **result.scores}


def _the_same_scores(run: dict, expected: dict) -> None:
    assert set(run["scores"]) == set(expected)
    for name, value in expected.items():
        assert run["scores"][name] == pytest.approx(value, rel=1e-9, abs=1e-12), name


@pytest.mark.parametrize("model", ["doe-rff", "oe-linear", "dobe-hsgp"])
def test_evaluate_family_models_alone(model, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert cli.main(["evaluate", *SMALL, "--model", model, "--no-peers", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    expected = _independent_scores(model)
    (run,) = json.loads(out.read_text())["results"]
    assert run["key"] == model
    _the_same_scores(run, expected)
    # the table shows the same numbers, rounded
    row = next(line for line in table.splitlines() if line.startswith(cli.MODELS[model].label))
    assert row.split()[1:4] == [f"{expected[name]:.4f}" for name in ("nMSE", "MAE", "PLL")]
    assert row.split()[4:7] == [f"{expected['cov90']:.1%}", f"{expected['cov50']:.1%}",
                                f"{expected['CRPS']:.4f}"]


@pytest.mark.parametrize(
    "key, dynamic",
    [("doe-rff", [True] * 2), ("oe-rff", [False] * 2), ("dobe-rff", [True])],
)
def test_family_models_are_edoebes_of_one_kind(key, dynamic):
    settings = {"n_warmup": 100, "n_samples": 2, "starts": (1.0,), "seed": 0}
    model = registry.MODELS[key].factory(settings)
    for x, t in datasets.Drift(n_samples=120, seed=3):
        model.learn_one(x, t)
    assert [m["dynamic"] for m in model.describe()] == dynamic


def test_the_models_are_those_of_the_family_registry():
    from river_doebe.warmup.families import DEFAULT_FAMILIES, FAMILIES

    assert list(registry.MODELS) == [
        "edoebe",
        "edoebe-stacking",
        *(f"{kind}-{name}" for name in FAMILIES for kind in ("doe", "oe")),
        *(f"dobe-{name}" for name in DEFAULT_FAMILIES),
    ]
    for name, family in FAMILIES.items():
        for kind, label in (("doe", "DOE"), ("oe", "OE"), ("dobe", "DOBE")):
            spec = registry.MODELS.get(f"{kind}-{name}")
            if spec is not None:
                assert spec.label == f"{label}-{family.tag}"
                assert family.description in spec.help and spec.warms_up
    assert cli.MODELS is registry.MODELS and cli.PEERS is registry.PEERS


def test_default_warmup_is_the_edoebe_default_and_fast_is_smaller():
    from river_doebe import EDOEBE

    parser = cli.build_parser()
    default = entry.warmup_settings(parser.parse_args(["evaluate"]), parser)
    reference = EDOEBE()
    assert default["n_warmup"] == reference.n_warmup
    assert default["n_samples"] == reference.n_samples
    assert tuple(default["starts"]) == tuple(reference.starts)
    fast = entry.warmup_settings(parser.parse_args(["evaluate", "--fast", "--n-samples", "2"]),
                                 parser)
    assert fast["n_warmup"] == registry.FAST["n_warmup"] and fast["n_samples"] == 2


def test_list_shows_streams_models_and_peers(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("drift", "static_then_drift", "elevators", "edoebe", "doe-rff", "knn", "arf",
                 "--csv FILE --target COLUMN"):
        assert word in out
    # every model's and peer's description starts in one column (edoebe-stacking pushed its
    # own one character to the right)
    lines = out.split("Models (--model):")[1].splitlines()
    rows = [line for line in lines if line.startswith("  ")]
    keys = [*registry.MODELS, *registry.PEERS]
    assert len(rows) == len(keys)
    starts = {len(line) - len(line[2:].split(" ", 1)[1].lstrip()) for line in rows}
    assert starts == {2 + max(map(len, keys)) + 1}


@pytest.mark.slow
def test_python_dash_m_runs_the_cli():
    done = _run("--help")
    assert done.returncode == 0
    assert "evaluate" in done.stdout and "list" in done.stdout


def test_evaluate_a_file_stream_from_data_dir(data_dir, need_file, capsys):
    need_file("uci_servo")
    status = cli.main(
        ["evaluate", "--stream", "uci_servo", "--data-dir", str(data_dir), "--model",
         "oe-linear", "--n-warmup", "60", "--no-progress", "--peers", "lr"]
    )
    assert status == 0
    assert "167 samples" in capsys.readouterr().out


# --------------------------------------------------------------------------- errors


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_a_plot_format_matplotlib_cannot_write_fails_before_running(tmp_path, capsys):
    status = cli.main(["evaluate", *SMALL, "--plot", str(tmp_path / "out.txt")])
    assert status == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: --plot") and "cannot write .txt files" in captured.err
    assert ".png" in captured.err and captured.out == ""  # no model ran


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


# --------------------------------------------------------------------------- short streams


def test_generated_streams_are_known_without_a_temporary_folder(monkeypatch, tmp_path):
    # the generated streams are those that load from an empty data folder
    assert datasets.GENERATED_NAMES == datasets.available(tmp_path)
    import tempfile

    def refuse(*args, **kwargs):
        raise AssertionError("no temporary folder should be made")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", refuse)
    assert streams.is_generated("drift") and streams.is_generated("friedman1")
    assert not streams.is_generated("elevators") and not streams.is_generated("uci_yacht")


@pytest.mark.parametrize("n, expected", [(5000, 1000), (40000, 1000), (2000, 400), (600, 120),
                                         (308, 61), (249, 50), (60, 50)])
def test_the_fitted_warmup_is_a_fifth_of_a_short_stream_at_least_50(n, expected):
    assert streams.fitted_warmup(registry.DEFAULT["n_warmup"], n) == expected
    fast = registry.FAST["n_warmup"]
    assert streams.fitted_warmup(fast, n) == min(expected, fast)


def test_the_static_then_drift_stream_runs_on_any_length(capsys):
    # its drift starts halfway whatever --n is (a fixed 5,000 refused every shorter stream)
    assert datasets.StaticThenDrift(n_samples=1000).n_static_ == 500
    assert datasets.StaticThenDrift().n_static_ == 5000  # the paper's setting, as before
    status = cli.main(["evaluate", "--stream", "static_then_drift", "--n", "300", "--n-samples",
                       "1", "--starts", "1", "--no-progress", "--peers", "blr"])
    assert status == 0
    assert "static_then_drift" in capsys.readouterr().out


def test_a_stream_shorter_than_the_default_warmup_runs_with_a_fitted_one(tmp_path, capsys):
    out = tmp_path / "short.json"
    status = cli.main(["evaluate", "--n", "300", "--n-samples", "1", "--starts", "1",
                       "--no-progress", "--peers", "blr", "--json", str(out)])
    assert status == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "n_warmup=60," in header
    assert "the warm-up is fitted to the stream: 60 samples, a fifth of it (at least 50)" in header
    assert "--n-warmup sets it" in header
    doc = json.loads(out.read_text())
    assert doc["settings"]["n_warmup"] == 60
    assert doc["settings"]["n_warmup_rule"] == "a fifth of the stream, at least 50"
    weights = next(r for r in doc["results"] if r["key"] == "edoebe")["weights"]
    assert weights["warm_at"] == 60


def test_a_given_warmup_is_kept_and_the_default_one_is_not_mentioned(capsys):
    assert cli.main(["evaluate", "--n", "300", "--n-warmup", "250", "--n-samples", "1",
                     "--starts", "1", "--no-progress", "--no-peers"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "n_warmup=250," in header and "fitted" not in header
    parser = cli.build_parser()
    args = parser.parse_args(["evaluate"])
    settings = entry.warmup_settings(args, parser)
    assert entry.fit_warmup(args, settings, registry.MODELS["edoebe"], "drift", 5000) == ""
    assert settings["n_warmup"] == 1000 and settings["n_warmup_rule"] == "default"


def test_a_stream_too_short_for_any_fitted_warmup(capsys):
    assert cli.main(["evaluate", "--n", "40", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: stream 'drift' has 40 samples, too few for a warm-up of at "
                          "least 50; give --n-warmup N with 2 <= N < 40")
    assert len(err.strip().splitlines()) == 1


def test_uci_yacht_with_the_default_settings(data_dir, need_file, capsys):
    # the example: 308 samples, shorter than the default warm-up of 1,000
    need_file("uci_yacht")
    status = cli.main(["evaluate", "--stream", "uci_yacht", "--data-dir", str(data_dir),
                       "--no-progress", "--peers", "blr"])
    assert status == 0
    out = capsys.readouterr().out
    assert "(308 samples, 6 features)" in out and "n_warmup=61," in out
    row = next(line for line in out.splitlines() if line.startswith("E-DOEBE"))
    assert 0.0 < float(row.split()[1]) < 0.5


# --------------------------------------------------------------------------- a user's CSV


def _write_csv(path, rows, header):
    import csv

    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def drift_csv(tmp_path_factory):
    """The Drift stream of 250 samples as a CSV file, with a text column besides."""
    dataset = datasets.Drift(n_samples=250)
    names = list(dataset.feature_names)
    rows = [[repr(x[k]) for k in names[:2]] + ["site-a"] + [repr(x[k]) for k in names[2:]]
            + [repr(y)] for x, y in dataset]
    header = [*names[:2], "site", *names[2:], "target"]
    return _write_csv(tmp_path_factory.mktemp("csv") / "drift.csv", rows, header)


def test_csv_gives_the_same_table_json_and_plot_as_the_built_in_stream(drift_csv, tmp_path,
                                                                        capsys):
    common = ["--n-samples", "1", "--starts", "1", "--no-progress", "--peers", "blr", "hat"]
    out = {}
    for key, source in (("csv", ["--csv", str(drift_csv), "--target", "target", "--drop",
                                 "site"]),
                        ("stream", ["--stream", "drift", "--n", "250"])):
        status = cli.main(["evaluate", *source, *common, "--json", str(tmp_path / f"{key}.json"),
                           "--plot", str(tmp_path / f"{key}.png")])
        assert status == 0
        out[key] = capsys.readouterr().out
        assert (tmp_path / f"{key}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    header = out["csv"].splitlines()[0]
    assert "stream 'drift.csv' (250 samples, 4 features)" in header and "n_warmup=50," in header
    csv_doc, stream_doc = (json.loads((tmp_path / f"{k}.json").read_text())
                           for k in ("csv", "stream"))
    assert csv_doc["stream"] == "drift.csv" and csv_doc["n_samples"] == 250
    assert csv_doc["source"] == {"csv": str(drift_csv), "target": "target",
                                 "features": ["x0", "x1", "x2", "x3"], "dropped": ["site"]}
    assert stream_doc["source"] is None
    # the same numbers, read from the file or generated: the CSV path loses nothing
    for a, b in zip(csv_doc["results"], stream_doc["results"], strict=True):
        assert a["key"] == b["key"] and a["scores"] == b["scores"]
        assert a["trace"] == b["trace"] and a["weights"] == b["weights"]


def test_csv_first_rows_and_comma_separated_drop(drift_csv, capsys):
    status = cli.main(["evaluate", "--csv", str(drift_csv), "--target", "target", "--drop",
                       "site,x3", "--n", "200", "--n-warmup", "100", "--model", "oe-linear",
                       "--no-progress", "--no-peers"])
    assert status == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "(200 samples, 3 features)" in header and "n_warmup=100," in header


def test_an_empty_feature_cell_is_a_missing_value(tmp_path, capsys):
    rng = np.random.default_rng(3)
    rows, blanks = [], (40, 150)
    for i in range(1, 301):
        a, b = rng.normal(size=2)
        rows.append([f"{a:.5f}", "" if i in blanks else f"{b:.5f}", f"{a + 2 * b:.5f}"])
    path = _write_csv(tmp_path / "gaps.csv", rows, ["a", "b", "y"])
    _, stream, n, _ = streams.load_csv(path, "y")
    assert n == 300 and stream.empty_cells == (2, "b", 40)
    xs = [x for x, _ in stream]
    assert [i + 1 for i, x in enumerate(xs) if "b" not in x] == list(blanks)
    assert xs[0] == {"a": float(rows[0][0]), "b": float(rows[0][1])}
    status = cli.main(["evaluate", "--csv", str(path), "--target", "y", "--n-warmup", "100",
                       "--n-samples", "1", "--starts", "1", "--no-progress", "--peers", "blr",
                       "--verbose"])
    assert status == 0
    out = capsys.readouterr().out
    assert ("note: 2 empty cells in the feature columns (the first: column 'b', row 40) are read "
            "as a missing value") in out


def test_a_csv_stream_cut_short_closes_its_file(drift_csv, capsys):
    """river's iter_csv closes a file it opened only when its rows run out: a stream cut at
    --n left it open, and --verbose listed a ResourceWarning under every model."""
    status = cli.main(["evaluate", "--csv", str(drift_csv), "--target", "target", "--drop",
                       "site", "--n", "200", "--n-warmup", "100", "--model", "oe-linear",
                       "--no-progress", "--peers", "blr", "hat", "--verbose"])
    assert status == 0
    assert "ResourceWarning" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "rows, header, extra, message",
    [
        ([["1", "abc", "2"]], ["a", "b", "y"], [],
         "column 'b' of 'bad.csv' is not numeric ('abc' in row 1); leave it out with --drop b"),
        ([["1", "2", "3"], ["1", "2", " "]], ["a", "b", "y"], [],
         "the target column 'y' of 'bad.csv' is empty in row 2; every row needs a target"),
        ([["1", "2", "high"]], ["a", "b", "y"], [],
         "the target column 'y' of 'bad.csv' is not numeric ('high' in row 1)"),
        ([["1", "nan", "3"]], ["a", "b", "y"], [],
         "column 'b' of 'bad.csv' holds 'nan' in row 1; the models take finite numbers only"),
        ([["1", "2", "3"]], ["a", "b", "y"], ["--target", "z"],
         "--target 'z' is not a column of 'bad.csv'; its columns: a, b, y"),
        ([["1", "2", "3"]], ["a", "b", "y"], ["--drop", "c"],
         "--drop 'c': not a column of 'bad.csv'; its columns: a, b, y"),
        ([["1", "2", "3"]], ["a", "b", "y"], ["--drop", "y"],
         "--drop lists the target column 'y'"),
        ([["1", "2", "3"]], ["a", "b", "y"], ["--drop", "a", "b"],
         "'bad.csv' has no feature column left besides the target"),
        ([["1", "2", "3"], ["4", "5"]], ["a", "b", "y"], [],
         "row 2 of 'bad.csv' has 2 fields, its header 3"),
        ([], ["a", "b", "y"], [], "'bad.csv' has no data rows"),
        ([["1", "2", "3"], ["4", "5", "3"]], ["a", "b", "y"], [],
         "the target column 'y' of 'bad.csv' is constant"),
        ([["1", "2", "3"]], ["a", "a", "y"], [],
         "'bad.csv' names the column 'a' more than once; give each column its own name"),
    ],
    ids=["text-feature", "empty-target", "text-target", "nan", "no-target", "unknown-drop",
         "drop-target", "no-features", "short-row", "no-rows", "constant-target",
         "repeated-column"],
)
def test_bad_csv_files_are_one_line_errors(tmp_path, capsys, rows, header, extra, message):
    path = _write_csv(tmp_path / "bad.csv", rows, header)
    argv = ["evaluate", "--csv", str(path), "--target", "y", "--no-progress", *extra]
    if "--target" in extra:
        argv.remove("y")
        argv.remove("--target")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--csv", "{csv}", "--target", "target", "--stream", "drift"],
         "give either --stream or --csv, not both"),
        (["--csv", "{csv}"], "--csv needs --target COLUMN"),
        (["--csv", "{csv}", "--target", "target", "--data-dir", "."],
         "--data-dir is the folder of the built-in streams"),
        (["--target", "y"], "--target goes with --csv FILE"),
        (["--stream", "drift", "--drop", "a"], "--drop goes with --csv FILE"),
        (["--csv", "{missing}", "--target", "y"], "no such file:"),
    ],
)
def test_csv_option_errors(drift_csv, tmp_path, capsys, argv, message):
    argv = [a.format(csv=drift_csv, missing=tmp_path / "nope.csv") for a in argv]
    assert cli.main(["evaluate", *argv, "--no-progress"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {message}")


@pytest.mark.slow
def test_csv_error_in_a_subprocess_is_one_line_and_exit_2(tmp_path):
    path = _write_csv(tmp_path / "data.csv", [["1", "red", "2"], ["2", "blue", "3"]],
                      ["a", "colour", "y"])
    done = _run("evaluate", "--csv", str(path), "--target", "y")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == ("error: column 'colour' of 'data.csv' is not numeric ('red' "
                                   "in row 1); leave it out with --drop colour")


def test_the_progress_bar_says_when_numba_compiles():
    """A fresh install's first model compiles for seconds: its bar says so meanwhile, and the
    note goes when the compile ends (a run from the on-disk cache compiles nothing: no note)."""
    import numba

    from river_doebe.cli import run

    class Bar:
        def __init__(self):
            self.notes = []

        def set_postfix_str(self, text, refresh=True):
            self.notes.append((text, refresh))

    bar = Bar()

    @numba.njit  # (not cached: a compile every time the test runs)
    def twice(v):
        return 2.0 * v

    with run._compile_note(bar):
        assert twice(1.5) == 3.0
        assert twice(2.5) == 5.0  # (compiled already: nothing more said)
    assert bar.notes == [(run.COMPILING, True), ("", False)]
    twice(np.int64(3))  # after the block: no listener
    assert len(bar.notes) == 2
