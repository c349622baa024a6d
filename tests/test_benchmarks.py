"""The benchmark scripts: runs on tiny settings, so that they cannot rot, and the registries they
build their models from.

The runs (marked ``slow``) check that each script ends with status 0 and writes every row and
field it reports, with the derived figures (ratios, rates) computed from the ones it reports;
the figures themselves are what the scripts are for.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from river_doebe.cli.entry import recalibrated_spec
from river_doebe.cli.registry import MODELS, PEERS
from river_doebe.warmup import FAMILIES

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    if str(BENCH) not in sys.path:  # as when the script runs: its folder first on the path
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _run_main(name, argv):
    """The script ``name`` and what its ``main(argv)`` returns, its RuntimeWarnings silenced."""
    module = _load(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return module, module.main(argv)


# ---------------------------------------------------------------------------------------------
# The registries: one for the families, one for river's peers
# ---------------------------------------------------------------------------------------------


def test_peers_builds_the_command_line_s_models_under_the_names_of_its_reports():
    peers = _load("peers")
    cfg = {"n_warmup": 300, "n_samples": 2, "starts": (1.0,), "seed": 4}
    built = peers.models(cfg)
    # the names of benchmarks/results/peers.md, in its order
    assert list(built) == [
        "BayesianLinearRegression", "BayesianLinearRegression(smoothing=0.999)",
        "LinearRegression", "KNNRegressor", "HoeffdingAdaptiveTreeRegressor", "ARFRegressor",
        "EDOEBE", "EDOEBE(weighting='stacking', delta=0)", "EDOEBE(recalibrate=False)",
    ]
    specs = [PEERS[key] for key in peers.PEER_KEYS] + [MODELS["edoebe"],
                                                        MODELS["edoebe-stacking"],
                                                        recalibrated_spec(MODELS["edoebe"])]
    for (make, has_dist), spec in zip(built.values(), specs, strict=True):
        model = make()
        assert has_dist == spec.has_dist
        assert repr(model) == repr(spec.factory(cfg))  # the same estimator, the same settings
    edoebe = built["EDOEBE"][0]()
    assert (edoebe.n_warmup, edoebe.n_samples, tuple(edoebe.starts), edoebe.seed) == (
        300, 2, (1.0,), 4
    )
    stacking = built["EDOEBE(weighting='stacking', delta=0)"][0]()
    assert (stacking.weighting, stacking.delta, stacking.n_warmup) == ("stacking", 0.0, 300)
    # the E-DOEBE recalibrates itself (the default), and `river-doebe evaluate --recalibrate`
    # runs it beside the same model without
    assert edoebe.recalibrate and stacking.recalibrate
    raw = built["EDOEBE(recalibrate=False)"][0]()
    assert repr(raw) == repr(edoebe.clone({"recalibrate": False})) and not raw.recalibrate


def test_reproduce_s_families_are_the_registry_s_with_options():
    reproduce = _load("reproduce")
    keys = {key for e in reproduce.EXPERIMENTS for m in reproduce.methods_for(e)
            for key in m.families}
    assert keys == set(FAMILIES) | set(reproduce.VARIANTS)
    for key in keys:
        family, options = reproduce.variant(key)
        assert family in FAMILIES
        built = reproduce.templates(key, 3, 7)
        reference = FAMILIES[family].templates(3, 7, **options)
        assert [repr(b) for b in built] == [repr(b) for b in reference]
    assert reproduce.templates("hsgp500", 3, 0)[0].n_features == 500
    assert reproduce.templates("rff250", 3, 0)[0].n_frequencies == 250
    assert reproduce.templates("off", 3, 0)[0].optimize_frequencies
    labels = [m.label for m in reproduce.methods_for("uci")]
    assert labels == ["DOE-HSGP", "OE-HSGP", "DOE-RFF", "OE-RFF"]


def test_classification_s_family_models_are_the_default_families():
    classification = _load("classification")
    assert set(classification.FAMILY_OF_BASIS) == {"HilbertGP", "RandomFourierFeatures",
                                                   "RBFNetwork"}
    assert [label for key, label in classification.MODELS.items()
            if key.startswith(("oe-", "doe-"))] == [
        "OE-HSGP", "DOE-HSGP", "OE-RFF", "DOE-RFF", "OE-RBF", "DOE-RBF"
    ]
    assert classification.MODELS["edoebe-stacking"] == "E-DOEBE (stacking)"
    assert classification.MODELS["edoebe-ipl"] == "E-DOEBE (IPL)"
    model, inputs = classification.build_models(
        classification.Config(models=("edoebe-ipl",)), 0, []
    )["edoebe-ipl"]
    assert (model.update, model.delta, model.weighting, inputs) == ("ipl", 1e-2, "bma", "raw")


# ---------------------------------------------------------------------------------------------
# The scripts, end to end
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
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
    assert code == 0
    table = (tmp_path / "results.md").read_text()
    assert "E-DOEBE" in table and "Experiment 2" in table
    exp3 = json.loads((tmp_path / "exp3.json").read_text())
    labels = [m.label for m in reproduce.methods_for("exp3")]
    assert exp3["methods"] == labels and set(exp3["streams"]) == {"friedman1",
                                                                   "static_then_drift"}
    for stream in exp3["streams"].values():
        assert list(stream["methods"]) == labels
        for entry in stream["methods"].values():
            (trial,) = entry["trials"]
            assert math.isfinite(trial["nmse"]) and math.isfinite(trial["pll"])
            assert entry["nmse_mean"] == trial["nmse"] and entry["nmse_std"] == 0.0
    exp2 = json.loads((tmp_path / "exp2.json").read_text())
    for entry in exp2["streams"]["static_then_drift"]["methods"].values():
        weight = entry["trials"][0]["dynamic_weight"]
        assert 0.0 <= weight["min"] <= weight["final"] <= weight["max"] <= 1.0
    # a later run of another experiment keeps the earlier ones in results.md, and their JSON
    before = (tmp_path / "exp3.json").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert reproduce.main([
            "--quick", "--experiments", "stacking", "--streams", "friedman1", "--max-samples",
            "900", "--n-warmup", "300", "--out", str(tmp_path),
        ]) == 0
    table = (tmp_path / "results.md").read_text()
    for experiment in ("exp2", "exp3", "stacking"):
        assert reproduce.TITLES[experiment] in table
    assert (tmp_path / "exp3.json").read_text() == before
    stacking = json.loads((tmp_path / "stacking.json").read_text())
    assert stacking["methods"] == [m.label for m in reproduce.methods_for("stacking")]
    for entry in stacking["streams"]["friedman1"]["methods"].values():
        assert math.isfinite(entry["pll_mixture_mean"])


@pytest.mark.slow
def test_peers_runs_and_writes_its_outputs(tmp_path):
    peers, code = _run_main("peers", ["--quick", "--streams", "drift", "--max-samples", "700",
                                      "--out", str(tmp_path)])
    assert code == 0
    doc = json.loads((tmp_path / "peers.json").read_text())
    rows = doc["results"]["drift"]
    assert list(rows) == list(peers.models(doc["config"]))
    for name, row in rows.items():
        assert row["samples_per_s"] == pytest.approx(200 / row["stream_s"])  # 700 - 500 warm-up
        has_dist = peers.models(doc["config"])[name][1]
        for key in ("pll", "coverage_90", "coverage_50", "crps"):
            assert (row[key] is None) == (not has_dist), (name, key)
        if has_dist:
            assert 0.0 <= row["coverage_50"] <= row["coverage_90"] <= 1.0 and row["crps"] > 0
        assert row["nmse_trace"][-1] == pytest.approx(row["nmse"])
    table = (tmp_path / "peers.md").read_text()
    assert all(f"| {name} |" in table for name in rows)
    assert "**90% interval coverage" in table and "**CRPS" in table


@pytest.mark.slow
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


@pytest.mark.slow
def test_throughput_writes_every_model_with_its_rate_and_ratio(tmp_path):
    throughput = _load("throughput")
    out = tmp_path / "throughput.json"
    n, repeats = 1400, 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        payload = throughput.main(["--n", str(n), "--repeats", str(repeats), "--out", str(out),
                                   "--no-threshold", "--no-busy", "--no-limit"])
    assert json.loads(out.read_text()) == json.loads(json.dumps(payload))
    results = payload["results"]
    drop_in = [throughput.drop_in_name(model, n, path) for model in throughput.DROP_INS
               for path in ("sample", "block")]
    assert list(results) == [*throughput.candidates(), *drop_in]
    fields = {"seconds", "samples_per_second", "mae_second_half", "state_bytes_half",
              "state_bytes_end", "speed_ratio_vs_river_blr", "path", "threads"}
    reference = results["river BayesianLinearRegression"]["samples_per_second"]
    for name, row in results.items():
        assert set(row) >= fields, name
        streamed = n - 1000 if name in drop_in else n
        assert row["samples_per_second"] == pytest.approx(streamed / row["seconds"])
        assert row["speed_ratio_vs_river_blr"] == pytest.approx(
            row["samples_per_second"] / reference
        )
        assert row["state_bytes_end"] > 0 and math.isfinite(row["mae_second_half"])
        assert row["threads"] >= 1 and row["path"] in ("sample", "block")
    # the block path makes the per-sample predictions: the same errors, for any thread count
    e90 = "E-DOEBE, 90 members x 100 features (no floor: all live)"
    pairs = [tuple(drop_in[:2]), tuple(drop_in[2:]),
             (f"{e90}, per sample, 1 thread", f"{e90}, blocks, all threads"),
             (f"{e90}, per sample, 1 thread", f"{e90}, per sample, all threads")]
    for a, b in pairs:
        assert results[a]["mae_second_half"] == results[b]["mae_second_half"]
    for name in drop_in:
        assert results[name]["members"] >= results[name]["live_members_at_end"] > 0
    warmup = payload["warmup"]
    for kind in ("serial", "parallel"):
        assert (warmup[kind]["samples"], warmup[kind]["inputs"]) == (1000, 21)
        assert warmup[kind]["members"] == warmup["serial"]["members"] > 0
        assert len(warmup[kind]["seconds_all"]) == repeats
        assert warmup[kind]["seconds_best"] == min(warmup[kind]["seconds_all"]) > 0
    assert warmup["serial"]["threads"] == 1
    machine = payload["machine"]
    assert machine["cores"] >= 1 and machine["numba_threads"] >= 1
    assert payload["ratios"] and all(v > 0 for v in payload["ratios"].values())


@pytest.mark.slow
def test_throughput_limit_rows():
    throughput = _load("throughput")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = throughput.limit_rows(n=512, repeats=1, members=6, features=12)
    assert set(out["samples_per_second_best"]) == {
        "minimal sweep, per sample, 1 thread", "minimal sweep, blocked, 1 thread",
        "library, per sample, 1 thread", "library, blocks, 1 thread"}
    assert all(v > 0 for v in out["samples_per_second_best"].values())
    assert len(out["fractions"]) == 2 and all(v > 0 for v in out["fractions"].values())
    assert out["fractions_after_first_block"].keys() == out["fractions"].keys()
    assert all(v > 0 for v in out["fractions_after_first_block"].values())


@pytest.mark.slow
def test_throughput_quiet_pair_rows_are_the_ratios_of_their_paired_times():
    throughput = _load("throughput")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = throughput.quiet_pair_rows(n=300, repeats=1)
    assert out["samples"] == 300 and len(out["rows"]) == 2
    for row in out["rows"].values():
        one, default = row["1 thread"], row["default threads"]
        assert row["default / 1 thread"] == one["seconds_total"] / default["seconds_total"] > 0
        assert default["samples_per_second"] == pytest.approx(300 / default["seconds_total"])


def test_the_busy_processes_end_with_the_block_whatever_ends_it():
    throughput = _load("throughput")
    with pytest.raises(KeyboardInterrupt):
        with throughput.busy_machine(2, deadline=60) as hogs:
            assert all(h.poll() is None for h in hogs)
            raise KeyboardInterrupt
    assert all(h.poll() is not None for h in hogs)


@pytest.mark.slow
def test_throughput_threshold_rows():
    throughput = _load("throughput")
    data = list(throughput.Friedman1(n_samples=300, seed=0))
    rows = throughput.threshold(data, sizes=(1, 3), features=(10,))
    assert [(r["members"], r["features"], r["work"]) for r in rows] == [(1, 10, 100),
                                                                       (3, 10, 300)]
    for r in rows:
        assert r["ratio"] == pytest.approx(r["all_threads_per_s"] / r["one_thread_per_s"])


@pytest.mark.slow
def test_fallback_scores_every_model_from_the_first_sample(tmp_path):
    fallback = _load("fallback")
    results = fallback.main(["--out", str(tmp_path), "--n-regression", "1100"])
    assert (tmp_path / "fallback.md").exists()
    assert json.loads((tmp_path / "fallback.json").read_text()) == json.loads(
        json.dumps(results))
    for task, rows in results.items():
        for name, row in rows.items():
            assert math.isfinite(row["first"]) and math.isfinite(row["whole"]), (task, name)
        assert {row["n"] for row in rows.values()} == {1100 if "regression" in task else 5300}


@pytest.mark.slow
def test_distribution_reads_times_every_protocol_against_the_point_prediction(tmp_path):
    out = tmp_path / "reads.json"
    row = _run_main("distribution_reads", ["--n", "200", "--repeats", "1", "--n-warmup", "300",
                                           "--label", "tiny", "--out", str(out)])[1]
    assert json.loads(out.read_text()) == {"tiny": json.loads(json.dumps(row))}
    assert "| tiny | " in out.with_suffix(".md").read_text()
    reads = _load("distribution_reads")
    assert set(row["samples_per_s"]) == set(reads.PROTOCOLS)
    for protocol, rate in row["samples_per_s"].items():
        assert rate > 0 and row["ratio_to_point"][protocol] == rate / row["samples_per_s"]["point"]


@pytest.mark.slow
def test_warmup_fit_times_both_variants_and_finds_the_same_model(tmp_path):
    result = _run_main("warmup_fit", ["--rounds", "1", "--n-warmup", "200", "--out",
                                      str(tmp_path)])[1]
    assert json.loads((tmp_path / "warmup_fit.json").read_text()) == json.loads(json.dumps(result))
    assert len(result["rows"]) == 4 and all(row["same_predictions"] for row in result["rows"])
    assert "| drift | 1 |" in (tmp_path / "warmup_fit.md").read_text() and not result["busy"]


@pytest.mark.slow
def test_memory_measures_each_row_in_its_own_process(tmp_path):
    out = tmp_path / "memory.json"
    payload = _run_main("memory", ["--sizes", "6", "8", "--n-warmup", "40", "--after", "5",
                                   "--bow", "30", "--bow-samples", "60", "--bow-warmup", "20",
                                   "--out", str(out)])[1]
    assert json.loads(out.read_text()) == json.loads(json.dumps(payload))
    dense = [r for r in payload["rows"] if r["kind"] == "dense"]
    bow = [r for r in payload["rows"] if r["kind"] == "bow"]
    assert [r["inputs"] for r in dense] == [6, 8]
    assert [r["model"] for r in bow] == ["edoebe", "river-blr"]
    for r in payload["rows"]:
        # the kernel's peak of that process: at least what the process saw before its fit
        assert r["peak_rss_mb"] > 10 and len(r["load_before"]) == 3
        assert r["peak_rss_mb"] >= r.get("peak_mb_before_fit", 0) - 1
    for r in dense:
        assert r["members"] > 0 and r["fit_seconds"] > 0 and math.isfinite(r["mae_after"])
    for r in bow:
        assert r["samples"] == 60 and math.isfinite(r["mae"]) and r["seconds"] > 0
    assert payload["summary"]["dense_peak_mb"] == {6: round(dense[0]["peak_rss_mb"], 1),
                                                   8: round(dense[1]["peak_rss_mb"], 1)}
    ratio = payload["summary"]["bow_30"]["mae_ratio_to_river_blr"]
    assert ratio == round(bow[0]["mae"] / bow[1]["mae"], 3)


@pytest.mark.slow
@pytest.mark.ray
def test_scaleout_writes_every_row_its_rates_ratios_and_the_recovery(tmp_path):
    pytest.importorskip("ray")
    scaleout = _load("scaleout")
    payload = scaleout.main(["--tiny", "--cores", "2", "--out", str(tmp_path)])
    assert json.loads((tmp_path / "scaleout.json").read_text()) == json.loads(
        json.dumps(payload))
    assert "records/s" in (tmp_path / "scaleout.md").read_text()
    assert payload["machine"]["cores"] == 2 and payload["machine"]["cpu_count"] >= 1
    assert list(payload["results"]) == [scaleout.DOBE_NAME, scaleout.EDOEBE_NAME]
    for r in payload["results"].values():
        assert list(r["rows"]) == ["dict, 1 thread", "dict, all threads", "1 shard", "2 shards"]
        for row in r["rows"].values():
            assert row["seconds_best"] == min(row["seconds_all"]) > 0
            assert row["records_per_s"] == pytest.approx(r["records"] / row["seconds_best"])
        rate = {k: v["records_per_s"] for k, v in r["rows"].items()}
        assert r["ratios"]["2 shards / 1 shard"] == pytest.approx(rate["2 shards"]
                                                                  / rate["1 shard"])
        assert r["identical"] and r["recovery"]["identical_to_dict"]
        (recovery,) = r["recovery"]["recoveries"]
        assert recovery["shard"] == 0 and recovery["seconds"] > 0
        assert r["memory"]["bytes_per_key"] > 0
        # the pipelined calls and the calls one at a time, on 1 and 2 shards (--tiny: calls of 100)
        assert set(r["pipelined"]) == {
            "pipelined, calls of 100", "one call at a time, calls of 100"}
        for entry in r["pipelined"].values():
            one, two = entry["1 shard"], entry["2 shards"]
            assert one["calls"] == two["calls"] == -(-r["records"] // 100)
            assert entry["2 shards / 1 shard"] == pytest.approx(
                two["records_per_s"] / one["records_per_s"])
    # the state-size rows: each key's shard rebuilt from its base, then with the log replayed
    (state,) = payload["state_size"]
    assert state["n_keys"] == 8 and state["state_bytes"] > 0 and state["rows_replayed"] > 0
    assert min(state[k] for k in ("checkpoint_s", "restore_s", "recovery_base_only_s",
                                  "recovery_with_log_s")) > 0
    assert "against the state's size" in (tmp_path / "scaleout.md").read_text()


def _doc(methods, streams):
    trial = {"nmse": 0.5, "steps": [1, 2], "nmse_trace": [0.6, 0.5], "pll_trace": [-1.1, -1.0]}
    entry = {"trials": [trial], "nmse_mean": 0.5, "nmse_std": 0.0, "pll_mean": -1.0,
             "pll_std": 0.0}
    return {"title": "t", "n_warmup": 10, "trials": 1, "methods": list(methods),
            "streams": {s: {"methods": {m: dict(entry) for m in methods}} for s in streams},
            "skipped": {}}


def test_reproduce_merge_adds_rows_and_keeps_everything_else(tmp_path):
    reproduce = _load("reproduce")
    cfg = reproduce.Config(trials=1)
    old = {"experiment": "exp1", "config": json.loads(json.dumps(
        reproduce.asdict(cfg), default=list)), **_doc(["DOE-HSGP", "OE-HSGP"], ["a", "b"])}
    (tmp_path / "exp1.json").write_text(json.dumps(old))
    other = {"experiment": "off", "config": old["config"], **_doc(["DOE-OFF"], ["a"])}
    (tmp_path / "off.json").write_text(json.dumps(other))
    new = _doc(["DOE-BSpline"], ["a", "c"])
    new["streams"]["a"]["methods"]["DOE-BSpline"]["nmse_mean"] = 0.25
    merged, merged_cfg = reproduce.merge_into(
        tmp_path, {"exp1": new}, reproduce.replace(cfg, methods=("DOE-BSpline",)))
    exp1 = merged["exp1"]
    assert exp1["methods"] == ["DOE-HSGP", "OE-HSGP", "DOE-BSpline"]  # methods_for's order
    assert set(exp1["streams"]) == {"a", "b", "c"}
    assert exp1["streams"]["a"]["methods"]["DOE-BSpline"]["nmse_mean"] == 0.25
    assert exp1["streams"]["a"]["methods"]["DOE-HSGP"] == old["streams"]["a"]["methods"][
        "DOE-HSGP"]
    assert merged["off"]["streams"] == other["streams"] and merged_cfg.methods == ()
    written = reproduce.write_outputs(tmp_path, merged, merged_cfg, touched={"exp1"})
    # another experiment's file is left as it was
    assert tmp_path / "off.json" not in written and tmp_path / "exp1.json" in written
    assert json.loads((tmp_path / "off.json").read_text()) == other
    md = (tmp_path / "results.md").read_text()
    assert "| DOE-BSpline |" in md and "| DOE-OFF |" in md
    assert md.count("Settings: warm-up 1000 samples") == 2  # each experiment under its own
    with pytest.raises(SystemExit, match="other settings"):
        reproduce.merge_into(tmp_path, {"exp1": new}, reproduce.replace(cfg, trials=3))


@pytest.mark.slow
def test_splines_times_both_ensembles(tmp_path):
    splines = _load("splines")
    out = tmp_path / "splines.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert splines.main(["--repeats", "1", "--n-samples", "1100", "--streams", "friedman2",
                             "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    entry = doc["streams"]["friedman2"]
    a, b = entry["models"]["EDOEBE()"], entry["models"]["EDOEBE(+bspline)"]
    assert entry["ratio_total"] == pytest.approx(b["total_s"] / a["total_s"])
    assert b["members"] > a["members"]
    assert all(math.isfinite(m["nmse"]) and math.isfinite(m["pll"]) for m in (a, b))


@pytest.mark.slow
def test_calibration_scores_every_model_on_each_stream(tmp_path):
    calibration, doc = _run_main("calibration", [
        "--quick", "--streams", "trump_approval", "nope", "--max-samples", "600",
        "--anchors", "lr", "hat", "--skip", "shift", "overhead", "--out", str(tmp_path)])
    assert json.loads((tmp_path / "calibration.json").read_text()) == json.loads(
        json.dumps(doc))
    assert doc["skipped"] == {"nope": "unknown stream"}
    rows = doc["results"]["trump_approval"]
    assert list(rows) == ["EDOEBE", "Recalibrated(EDOEBE)", "RegressionJackknife(best river)"]
    jackknife = rows["RegressionJackknife(best river)"]
    assert jackknife["anchor"] in ("LinearRegression", "HoeffdingAdaptiveTreeRegressor")
    assert jackknife["nmse"] == min(jackknife["anchors_tried"].values())
    for name, row in rows.items():
        assert row["n_scored"] == 480, name  # 600 - a warm-up of a fifth
        assert 0.0 <= row["coverage_50"] <= row["coverage_90"] <= 1.0
        assert row["width_90"] > 0 and math.isfinite(row["nmse"])
        if name != "RegressionJackknife(best river)":
            assert row["crps"] > 0 and math.isfinite(row["pll"])
    # the recalibrated model's point prediction is the E-DOEBE's
    assert rows["Recalibrated(EDOEBE)"]["nmse"] == pytest.approx(rows["EDOEBE"]["nmse"])
    table = (tmp_path / "calibration.md").read_text()
    assert all(f"| trump_approval | {name} |" in table for name in rows)


@pytest.mark.slow
def test_calibration_overhead_times_the_wrapper_and_the_built_in_recalibration(tmp_path):
    _, doc = _run_main("calibration", ["--quick", "--skip", "table", "shift", "--repeats", "1",
                                       "--out", str(tmp_path)])
    o = doc["overhead"]
    raw, wrapped, built = o["models"]
    assert (raw, built) == ("EDOEBE(recalibrate=False)", "EDOEBE()")
    for protocol in ("dist", "point"):
        rate = o[protocol]["samples_per_s"]
        assert set(rate) == set(o["models"]) and all(v > 0 for v in rate.values())
        assert o[protocol]["ratio"] == pytest.approx(rate[wrapped] / rate[raw])
        assert o[protocol]["ratio_built_in"] == pytest.approx(rate[built] / rate[raw])
    table = (tmp_path / "calibration.md").read_text()
    assert "| stream | model |" not in table  # (no stream was scored)
    assert f"`{built}`" in table and "built-in ratio" in table


def test_sparse_streams_are_what_their_rows_claim_and_the_report_reads_its_json(tmp_path):
    sparse = _load("sparse")
    dropout = sparse.dropout_stream(n=400, n_warmup=100, seed=1)
    assert not any(dropped for _, _, dropped in dropout[:100])
    assert all(("temp" in x) != dropped for x, _, dropped in dropout)
    shops = sparse.shops_stream(n=800, seed=1)
    first = {x["shop"] for x, _ in shops[:700]}
    assert len(first) == 5 and {x["shop"] for x, _ in shops} - first
    texts = [x["text"] for x, _ in sparse.bow_stream(n=200, seed=1)]
    assert texts[0] == "" and all(isinstance(t, str) for t in texts)
    for kind in ("sensor", "tight sensor", "weight"):
        rows = sparse.sweep_stream(kind, 0.9, seed=1, n=2000, n_warmup=1000)
        window = np.mean([absent for _, _, absent in rows[:1000]])
        assert window == pytest.approx(0.1, abs=0.03)
        assert all(("a" in x) != absent for x, _, absent in rows)
    results = {
        "runs": [{"args": "--trials 1", "load": 1.0}],
        "dropout": {"trials": [{"EDOEBE": {"mae_dropped": 0.5, "cover90_dropped": 0.4},
                                "StandardScaler | BLR": {"mae_dropped": 0.4,
                                                         "cover90_dropped": 0.9}}]},
        "sweep": [{"kind": "weight", "presence": 0.9, "seed": 0, "dense_mae": 0.3,
                   "dense_mae_absent": 1.0, "sparse_mae": 0.2, "sparse_mae_absent": None}],
    }
    results["dropout"]["summary"] = sparse._summary(results["dropout"]["trials"], "mae_dropped")
    (tmp_path / "sparse.json").write_text(json.dumps(results))
    assert sparse.main(["--report", "--out", str(tmp_path)]) is None
    report = (tmp_path / "sparse.md").read_text()
    assert "| StandardScaler \\| BLR | 0.400 |" in report and "Ratio of the means" in report
    assert "| weight | 0.9 | 0.300 | 0.200 | 1.000 | - |" in report


@pytest.mark.slow
def test_outliers_scores_every_model_on_every_event(tmp_path):
    outliers, results = _run_main("outliers", ["--quick", "--data-dir", str(tmp_path),
                                               "--out", str(tmp_path)])
    assert json.loads((tmp_path / "outliers.json").read_text()) == json.loads(
        json.dumps(results))
    models = list(outliers.event_models(200))
    assert [(r["event"], r["model"]) for r in results["events"]] == [
        (e, m) for e in outliers.EVENTS for m in models]
    rows = {(r["event"], r["model"]): r for r in results["events"]}
    for r in rows.values():
        assert all(math.isfinite(v) for v in r["mae"].values())
    gated = "EDOEBE(outlier_gate=8)"
    assert rows[("spike", gated)]["kept_out"] == 1
    assert rows[("clean", gated)]["kept_out"] == 0
    assert rows[("spike", gated)]["mae"]["+1..+50"] < 1.0 < rows[("spike", "EDOEBE()")]["mae"][
        "+1..+50"]
    # (no data folder here: the built-in streams only, each with and without the gate)
    streams = [r["stream"] for r in results["streams"]][::2]
    assert streams[:2] == ["drift", "static_then_drift"] and "elevators" not in streams
    assert [(r["stream"], r["outlier_gate"]) for r in results["streams"]] == [
        (s, g) for s in streams for g in (None, 8.0)]
    table = (tmp_path / "outliers.md").read_text()
    assert all(f"| {e} | {m} |" in table for e, m in rows)
    assert "| drift | 8 |" in table


@pytest.mark.slow
def test_noise_levels_scores_every_model_on_every_stream(tmp_path):
    noise, results = _run_main("noise_levels", ["--quick", "--data-dir", str(tmp_path),
                                                "--out", str(tmp_path)])
    assert json.loads((tmp_path / "noise_levels.json").read_text()) == json.loads(
        json.dumps(results))
    models = list(noise.event_models(200))
    assert [(r["event"], r["model"]) for r in results["events"]] == [
        (e, m) for e in noise.EVENTS for m in models]
    assert all(math.isfinite(r["distance_to_f"]) and r["seconds"] > 0
               for r in results["events"])
    streams = [r["stream"] for r in results["streams"]][::2]
    assert streams[:2] == ["drift", "static_then_drift"] and "elevators" not in streams
    assert [(r["stream"], r["noise_levels"]) for r in results["streams"]] == [
        (s, levels) for s in streams for levels in ([1.0], list(noise.LEVELS))]
    table = (tmp_path / "noise_levels.md").read_text()
    assert all(f"| {r['event']} | {r['model']} |" in table for r in results["events"])
    assert "| drift | (1, 10, 100) |" in table
