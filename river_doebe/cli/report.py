"""What the command line shows and writes: the table of scores, the JSON of every number and
trace, and the plot of nMSE and of the E-DOEBE's weights over time."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from river_doebe.cli.base import PROG, CLIError
from river_doebe.cli.run import Run
from river_doebe.utils import json_safe

__all__ = ["check_plot_path", "format_table", "import_pyplot", "write_json", "write_plot"]


def _fmt(v: Any, spec: str = ".4f") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec)


def format_table(runs: list[Run]) -> str:
    header = ["model", "nMSE", "MAE", "PLL", "cov90", "cov50", "CRPS", "time [s]", "samples/s"]
    rows = [
        [
            r.label,
            _fmt(r.scores.get("nMSE")),
            _fmt(r.scores.get("MAE")),
            _fmt(r.scores.get("PLL")),
            _fmt(r.scores.get("cov90"), ".1%"),
            _fmt(r.scores.get("cov50"), ".1%"),
            _fmt(r.scores.get("CRPS")),
            _fmt(r.elapsed, ".1f"),
            _fmt(r.rate, ",.0f"),
        ]
        for r in runs
    ]
    widths = [max(len(h), *(len(row[j]) for row in rows)) for j, h in enumerate(header)]
    lines = []
    for k, row in enumerate([header, *rows]):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(path: Path, stream: str, n: int, var_y: float, settings: dict, runs: list[Run],
               source: dict | None = None) -> None:
    doc = {
        "command": f"{PROG} evaluate",
        "stream": stream,
        "source": source,
        "n_samples": n,
        "var_y": var_y,
        "settings": settings,
        "scoring": "progressive (predict, then learn), every sample scored; nMSE = MSE / Var(y) "
        "over the stream; PLL = mean log predictive density of y as given (not standardised); "
        "cov90 / cov50 = share of y inside the central 90% / 50% interval of the predictive "
        "(calibrated: 0.9 / 0.5); CRPS = mean continuous ranked probability score, in y's units",
        "results": [
            {
                "key": r.key,
                "model": r.label,
                "scores": r.scores,
                "elapsed_s": r.elapsed,
                "samples_per_s": r.rate,
                "trace": {"steps": r.steps, "nMSE": r.nmse_trace},
                "weights": r.weights,
                "warnings": r.warnings,
            }
            for r in runs
        ],
    }
    path.write_text(json.dumps(json_safe(doc), indent=2) + "\n")


def import_pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise CLIError(
            "--plot needs matplotlib, which is not installed; install it with "
            "`pip install matplotlib` (or `pip install 'river-doebe[plot]'`)"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def check_plot_path(path: Path) -> None:
    """Refuse a ``--plot`` file that matplotlib cannot write (before any model runs): its
    suffix names the format (none: PNG)."""
    plt = import_pyplot()
    suffix = Path(path).suffix.lower().lstrip(".")
    if not suffix:
        return
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if suffix not in formats:
        raise CLIError(
            f"--plot {str(path)!r}: matplotlib cannot write .{suffix} files; use one of "
            f"{', '.join('.' + f for f in sorted(formats))}"
        )


def write_plot(path: Path, stream: str, runs: list[Run]) -> None:
    plt = import_pyplot()
    weighted = [r for r in runs if r.weights]
    n_rows = 1 + len(weighted)
    fig, axes = plt.subplots(n_rows, 1, figsize=(8, 3.2 * n_rows), squeeze=False)
    ax = axes[0, 0]
    top = 0.0
    for r in runs:
        trace = np.asarray(r.nmse_trace, dtype=float)
        ax.plot(r.steps, trace, label=r.label, lw=1.4)
        tail = trace[len(trace) // 10 :]
        if tail.size and np.isfinite(tail).any():
            top = max(top, float(np.nanmax(tail)))
    ax.set_ylim(0.0, min(1.5, 1.05 * top) if top > 0 else 1.0)
    ax.set_xlabel("samples seen")
    ax.set_ylabel("nMSE (cumulative)")
    ax.set_title(f"Progressive nMSE on {stream}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    for k, r in enumerate(weighted, start=1):
        ax = axes[k, 0]
        w = r.weights
        assert w is not None  # (the runs in `weighted` have weights)
        labels = list(w["groups"])
        ax.stackplot(w["steps"], *[w["groups"][lab] for lab in labels], labels=labels, alpha=0.85)
        ax.set_xlim(0, r.n)
        ax.set_ylim(0.0, 1.0)
        if w.get("warm_at"):
            ax.axvline(w["warm_at"], color="k", ls=":", lw=1)
        ax.set_xlabel("samples seen")
        ax.set_ylabel("weight")
        ax.set_title(f"{r.label} weights by family (warm-up ends at the dotted line)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

