"""Running one model: progressive validation with a progress bar, the nMSE trace, the
E-DOEBE's weights over time and the warnings raised on the way, kept in a `Run`."""

from __future__ import annotations

import contextlib
import itertools
import math
import sys
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["COMPILING", "Run", "WeightRecorder", "run_model"]


@dataclass
class Run:
    """The outcome of one model's progressive validation."""

    key: str
    label: str
    scores: dict
    elapsed: float
    n: int
    steps: list
    nmse_trace: list
    weights: dict | None = None
    warnings: list = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.n / self.elapsed if self.elapsed > 0 else math.inf


class WeightRecorder:
    """Records an E-DOEBE's weights, summed by family and static/dynamic, every ``every``
    samples once it is warm."""

    def __init__(self, model: Any, every: int) -> None:
        self.model = model
        self.every = every
        self.labels: list[str] | None = None
        self.index: np.ndarray | None = None
        self.steps: list[int] = []
        self.rows: list[np.ndarray] = []
        self.warm_at: int | None = None

    def __call__(self, t: int) -> None:
        model = self.model
        if not getattr(model, "is_warm", True):
            return
        if self.labels is None:
            self.warm_at = t
            described = model.describe()
            labels = [
                f"{m['family']} ({'dynamic' if m['dynamic'] else 'static'})" for m in described
            ]
            self.labels = list(dict.fromkeys(labels))
            self.index = np.array([self.labels.index(lab) for lab in labels])
        if t % self.every == 0 or t == self.warm_at:
            w = np.asarray(model.weights, dtype=float)
            self.steps.append(t)
            assert self.index is not None and self.labels is not None  # (set when warm)
            self.rows.append(np.bincount(self.index, weights=w, minlength=len(self.labels)))

    def result(self) -> dict | None:
        if not self.steps:
            return None
        table = np.vstack(self.rows)
        return {
            "steps": list(self.steps),
            "warm_at": self.warm_at,
            "groups": {lab: table[:, j].tolist() for j, lab in enumerate(self.labels or ())},
        }


def _iterate(dataset: Iterable, n: int, bar: Any) -> Iterator[tuple[Any, Any]]:
    """The first ``n`` samples of ``dataset``, advancing the bar as they are read."""
    for x, y in itertools.islice(dataset, n):
        yield x, y
        if bar is not None:
            bar.update(1)


#: the progress bar's note while Numba compiles (a fresh install's first model: the bar would
#: otherwise stand still for seconds with nothing said)
COMPILING = "compiling the kernels, once per install (river-doebe compile does it ahead)"


@contextlib.contextmanager
def _compile_note(bar: Any) -> Iterator[None]:
    """While the block runs, the bar says so when Numba compiles (its outermost compiles)."""
    from numba.core import event

    depth = [0]

    class Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            if depth[0] == 0:
                bar.set_postfix_str(COMPILING, refresh=True)
            depth[0] += 1

        def on_end(self, ev: Any) -> None:
            depth[0] -= 1
            if depth[0] == 0:
                bar.set_postfix_str("", refresh=False)  # (gone at the bar's next refresh)

    with event.install_listener("numba:compile", Listener()):
        yield


def run_model(key: str, spec: Any, model: Any, dataset: Iterable, n: int, var_y: float,
              every: int, progress: bool = True, record_weights: bool = False,
              width: int = 28) -> Run:
    """Progressive validation of ``model`` on the first ``n`` samples of ``dataset``."""
    # the metrics (river's among them) and the progress bar load when a model runs, not for
    # `river-doebe --help` or `list`
    from river import metrics as river_metrics
    from tqdm import tqdm

    from river_doebe import evaluate, metrics

    metric_list = {"nMSE": metrics.NMSE(var_y=var_y), "MAE": river_metrics.MAE()}
    if spec.has_dist:
        metric_list["PLL"] = metrics.PredictiveLogLikelihood()
        # calibration: the share of targets in the central 90% and 50% intervals, and the CRPS
        metric_list["cov90"] = metrics.IntervalCoverage(0.9)
        metric_list["cov50"] = metrics.IntervalCoverage(0.5)
        metric_list["CRPS"] = metrics.CRPS()
    recorder = WeightRecorder(model, every) if record_weights else None
    bar = tqdm(total=n, desc=spec.label.ljust(width), unit="sample", disable=not progress,
               file=sys.stderr, leave=True, dynamic_ncols=True, mininterval=0.5)
    try:
        with warnings.catch_warnings(record=True) as caught, _compile_note(bar):
            warnings.simplefilter("always")
            # the recorder reads the weights once the samples before it are learnt (in blocks,
            # the progressive loop ends a block where it records)
            result = evaluate.progressive_scores(
                _iterate(dataset, n, bar), model, metric_list, every=every, on_learnt=recorder
            )
    finally:
        bar.close()
    messages = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    return Run(
        key=key,
        label=spec.label,
        scores={k: float(v) for k, v in result.scores.items()},
        elapsed=result.elapsed,
        n=result.n_samples,
        steps=result.steps.tolist(),
        nmse_trace=result.traces["nMSE"].tolist(),
        weights=recorder.result() if recorder is not None else None,
        warnings=messages,
    )

