"""The benchmark figures of the site, drawn from the committed results in ``benchmarks/results/``.

The site's build calls :func:`all_figures` (from ``hooks.py``), so the figures always show the
committed numbers and no image is committed. ``python docs/_ext/plots.py OUT_DIR`` writes the
same PNG files to a folder, to look at them without building the site.

Each figure reads one results file; a file that is missing (a benchmark not run yet) gives no
figure, and the page that shows it then fails the strict build on its missing image.
"""

from __future__ import annotations

import io
import json
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

STREAM_TITLES = {
    "drift": "Drift",
    "static_then_drift": "Static, then drift",
    "friedman1": "Friedman #1",
    "friedman2": "Friedman #2",
    "elevators": "Elevators",
    "cadata": "CaData",
    "cpusmall": "CPU Small",
    "sarcos": "SARCOS",
    "kuka1": "Kuka #1",
}
EDOEBE_COLOUR = "#c0392b"
STACKING_COLOUR = "#8e44ad"
PEER_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#7f7f7f", "#17becf", "#8c564b", "#bcbd22")


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def _grid(n: int, cols: int, width: float = 3.4, height: float = 2.7):
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False,
                             layout="constrained")
    flat = axes.ravel()
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _samples_axis(ax) -> None:
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _: f"{v / 1000:g}k" if abs(v) >= 1000 else f"{v:g}")
    )


def _mean_trace(trials: list[dict], key: str) -> tuple[list, list]:
    steps = trials[0]["steps"]
    n = min(len(t[key]) for t in trials)
    mean = [sum(t[key][i] for t in trials) / len(trials) for i in range(n)]
    return steps[:n], mean


def exp3_nmse(results: pathlib.Path) -> bytes:
    """nMSE against samples seen: the E-DOEBE and its families run alone (Experiment 3)."""
    data = json.loads((results / "exp3.json").read_text())
    streams = list(data["streams"])
    fig, axes = _grid(len(streams), 3)
    styles = {
        "E-DOEBE": dict(color=EDOEBE_COLOUR, lw=2.2, zorder=5),
        "OE-HSGP": dict(color="#2e86c1"),
        "DOE-HSGP": dict(color="#2e86c1", ls="--"),
        "OE-RFF": dict(color="#27ae60"),
        "DOE-RFF": dict(color="#27ae60", ls="--"),
        "OE-RBF": dict(color="#d68910"),
        "DOE-RBF": dict(color="#d68910", ls="--"),
    }
    for ax, stream in zip(axes, streams):
        methods = data["streams"][stream]["methods"]
        for method, style in styles.items():
            if method not in methods:
                continue
            steps, mean = _mean_trace(methods[method]["trials"], "nmse_trace")
            ax.plot(steps, mean, label=method, lw=style.pop("lw", 1.2), **style)
        ax.set_yscale("log")
        ax.set_title(STREAM_TITLES.get(stream, stream), fontsize=10)
        ax.set_xlabel("samples streamed", fontsize=8)
        ax.tick_params(which="both", labelsize=7)
        _samples_axis(ax)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("running nMSE (log)", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", fontsize=8, ncol=7, frameon=False)
    fig.suptitle(f"Experiment 3: E-DOEBE against its families alone "
                 f"(mean of {data['trials']} trials; dashed: dynamic)", fontsize=11)
    return _png(fig)


def exp2_weight(results: pathlib.Path) -> bytes:
    """The dynamic member's weight over time, plain model averaging against the E-DOEBE."""
    data = json.loads((results / "exp2.json").read_text())
    streams = list(data["streams"])
    fig, axes = _grid(len(streams), len(streams), width=6.0, height=3.2)
    for ax, stream in zip(axes, streams):
        methods = data["streams"][stream]["methods"]
        for method, colour in (("DOEBE", "#7f8c8d"), ("E-DOEBE", EDOEBE_COLOUR)):
            curve = methods[method]["trials"][0]["dynamic_weight"]["moving_average_10"]
            weights = [max(w, 1e-18) for w in curve["weight"]]
            ax.plot(curve["step"], weights, color=colour, label=method, lw=1.6)
        ax.set_yscale("log")
        ax.set_xscale("log")
        ax.set_ylim(1e-18, 3)
        ax.set_xlabel("samples streamed", fontsize=9)
        ax.set_ylabel("weight of the dynamic member", fontsize=9)
        ax.set_title(f"Experiment 2: {STREAM_TITLES.get(stream, stream)}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.tick_params(which="both", labelsize=8)
        ax.legend(fontsize=8, frameon=False)
    return _png(fig)


def peers_nmse(results: pathlib.Path) -> bytes:
    """nMSE against samples seen: river's regressors against ``EDOEBE()``."""
    data = json.loads((results / "peers.json").read_text())["results"]
    streams = list(data)
    fig, axes = _grid(len(streams), 4, width=3.2, height=2.6)
    for ax, stream in zip(axes, streams):
        peer_colours = iter(PEER_COLOURS)
        for model, run in data[stream].items():
            if not run.get("nmse_trace"):
                continue
            if model == "EDOEBE":
                style = dict(color=EDOEBE_COLOUR, lw=2.0, zorder=5)
            elif model.startswith("EDOEBE("):
                style = dict(color=STACKING_COLOUR, lw=1.6, ls="--", zorder=4)
            else:
                style = dict(lw=1.0, color=next(peer_colours, None))
            ax.plot(run["steps"], run["nmse_trace"], label=model, **style)
        ax.set_yscale("log")
        ax.set_title(STREAM_TITLES.get(stream, stream), fontsize=10)
        ax.tick_params(which="both", labelsize=7)
        _samples_axis(ax)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", fontsize=8, ncol=3, frameon=False)
    fig.suptitle("Running nMSE (log) against samples streamed: river's regressors and EDOEBE()",
                 fontsize=11)
    return _png(fig)


def peers_coverage(results: pathlib.Path) -> bytes:
    """Coverage of the central 90% and 50% intervals, per stream, for the models with a
    distribution (the calibration page)."""
    data = json.loads((results / "peers.json").read_text())["results"]
    streams = list(data)
    models = [m for m in data[streams[0]] if data[streams[0]][m].get("coverage_90") is not None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True, layout="constrained")
    markers = "osD^v"
    for ax, level in zip(axes, (90, 50)):
        for k, model in enumerate(models):
            values = [data[s][model].get(f"coverage_{level}") for s in streams]
            xs = [i + (k - (len(models) - 1) / 2) * 0.12 for i in range(len(streams))]
            colour = (EDOEBE_COLOUR if model == "EDOEBE"
                      else STACKING_COLOUR if model.startswith("EDOEBE(") else None)
            ax.scatter(xs, [100 * v if v is not None else math.nan for v in values],
                       label=model, marker=markers[k % len(markers)], color=colour, s=28)
        ax.axhline(level, color="black", lw=1, ls=":")
        ax.set_xticks(range(len(streams)))
        ax.set_xticklabels([STREAM_TITLES.get(s, s) for s in streams], rotation=35, ha="right",
                           fontsize=8)
        ax.set_title(f"share of targets inside the central {level}% interval", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("coverage [%]")
    axes[1].legend(fontsize=8, frameon=False, loc="lower right")
    return _png(fig)


def throughput(results: pathlib.Path) -> bytes:
    """Samples per second of the throughput benchmark (one process, Friedman #1)."""
    data = json.loads((results / "throughput.json").read_text())
    rows = [(name, r["samples_per_second"]) for name, r in data["results"].items()]
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.0), layout="constrained")
    names = [name for name, _ in rows][::-1]
    speeds = [speed for _, speed in rows][::-1]
    colours = [EDOEBE_COLOUR if "E-DOEBE" in n or "EDOEBE" in n else "#2e86c1" for n in names]
    ax.barh(range(len(rows)), speeds, color=colours)
    for i, speed in enumerate(speeds):
        ax.text(speed * 1.05, i, f"{speed:,.0f}", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(names, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("samples per second (log)")
    ax.set_xlim(right=max(speeds) * 4)
    ax.set_title(f"Throughput: {data['stream']}, {data['machine']['cores']} cores", fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    return _png(fig)


def scaleout(results: pathlib.Path) -> bytes:
    """Records per second of the keyed streams on Ray, against a dict of models."""
    data = json.loads((results / "scaleout.json").read_text())["results"]
    fig, axes = plt.subplots(1, len(data), figsize=(5.2 * len(data), 3.0), squeeze=False,
                             layout="constrained")
    for ax, (template, run) in zip(axes[0], data.items()):
        names = list(run["rows"])
        speeds = [run["rows"][n]["records_per_s"] for n in names]
        colours = ["#7f8c8d" if n.startswith("dict") else "#2e86c1" for n in names]
        ax.bar(range(len(names)), speeds, color=colours)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=8, rotation=15)
        ax.set_title(f"{template}: {run['n_keys']} keys x {run['records_per_key']:.0f}",
                     fontsize=9)
        ax.set_ylabel("records per second", fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    return _png(fig)


def throughput_tables(results: pathlib.Path) -> str:
    """The throughput benchmark's rows, ratios and thread threshold as Markdown tables."""
    data = json.loads((results / "throughput.json").read_text())
    lines = [
        "| model | path | threads | samples/s | x river's BLR | pickled |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, r in data["results"].items():
        lines.append(
            f"| {name} | {r['path']} | {r['threads']} | {r['samples_per_second']:,.0f} | "
            f"{r['speed_ratio_vs_river_blr']:.2f} | {r['state_bytes_end'] / 1024:,.0f} kB |"
        )
    lines += ["", "| ratio | value |", "|---|---:|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in data["ratios"].items()]
    lines += [
        "",
        "| members | features | covariance entries | 1 thread, samples/s | all threads | ratio |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {t['members']} | {t['features']} | {t['work']:,} | {t['one_thread_per_s']:,.0f} | "
        f"{t['all_threads_per_s']:,.0f} | {t['ratio']:.2f} |"
        for t in data["threshold"]
    ]
    return "\n".join(lines)


def splines_table(results: pathlib.Path) -> str:
    """What the P-splines cost the E-DOEBE, per stream, as a Markdown table."""
    data = json.loads((results / "splines.json").read_text())
    lines = [
        "| stream | `EDOEBE()` s | with splines s | total ratio | warm-up ratio | "
        "stream ratio | nMSE | nMSE with splines |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for stream, run in data["streams"].items():
        base, spl = run["models"]["EDOEBE()"], run["models"]["EDOEBE(+bspline)"]
        lines.append(
            f"| {STREAM_TITLES.get(stream, stream)} | {base['total_s']:.1f} | "
            f"{spl['total_s']:.1f} | {run['ratio_total']:.2f} | {run['ratio_warmup']:.2f} | "
            f"{run['ratio_stream']:.2f} | {base['nmse']:.4g} | {spl['nmse']:.4g} |"
        )
    return "\n".join(lines)


#: tables written into the pages where their marker ``<!-- table:NAME -->`` stands
TABLES = {"throughput": throughput_tables, "splines": splines_table}

FIGURES = {
    "exp3_nmse": exp3_nmse,
    "exp2_weight": exp2_weight,
    "peers_nmse": peers_nmse,
    "peers_coverage": peers_coverage,
    "throughput": throughput,
    "scaleout": scaleout,
}


def all_figures(results: pathlib.Path):
    """``(name, png bytes)`` of every figure whose results file is there."""
    for name, draw in FIGURES.items():
        try:
            png = draw(results)
        except FileNotFoundError:
            continue
        yield name, png


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "site-plots")
    out.mkdir(parents=True, exist_ok=True)
    root = pathlib.Path(__file__).resolve().parents[2]
    for name, png in all_figures(root / "benchmarks" / "results"):
        (out / f"{name}.png").write_bytes(png)
        print(out / f"{name}.png")
