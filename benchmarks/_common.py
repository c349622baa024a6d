"""What the benchmark scripts share: the package imported from this checkout, and the data folder.

The scripts run as ``python benchmarks/<name>.py`` (this folder is then first on ``sys.path``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))


def default_data_dir(given) -> Path | None:
    """``--data-dir``, else ``$RIVER_DOEBE_DATA``, else ``../shared/data`` beside the checkout
    (``None`` if none is there: the streams that need a file are then skipped)."""
    from river_doebe import datasets

    if given:
        return Path(given)
    if os.environ.get(datasets.ENV_VAR):
        return Path(os.environ[datasets.ENV_VAR])
    beside = ROOT.parent / "shared" / "data"
    return beside if beside.is_dir() else None


def predict_then_learn(model, xs: list, ys: list, block_size: int = 256) -> list:
    """Each row's prediction (a classifier: its ``predict_proba_one``) made before the row is
    learnt: through ``predict_learn_many`` in blocks for this package's models (the same numbers
    as the loop), else ``predict_proba_one`` / ``predict_one`` then ``learn_one``."""
    many = getattr(model, "predict_learn_many", None)
    if many is not None:
        out = []
        for i in range(0, len(xs), block_size):
            out.extend(many(xs[i:i + block_size], ys[i:i + block_size]))
        return out
    predict = getattr(model, "predict_proba_one", None) or model.predict_one
    out = []
    for x, y in zip(xs, ys, strict=True):
        out.append(predict(x))
        model.learn_one(x, y)
    return out


def paper_stream(name: str, data_dir, cap: int | None, n_warmup: int):
    """``(rows, targets)`` of a stream under the paper's protocol (``peers.py``'s: ``X`` and
    ``y`` standardised with the first ``n_warmup`` samples, the kept inputs named ``z000``, ...
    in order), cut to ``cap`` samples; ``None`` if its file is absent."""
    import warnings

    from river_doebe import datasets
    from river_doebe.warmup import Standardizer

    if name == "drift":
        ds = datasets.Drift()
    elif name == "static_then_drift":
        ds = datasets.StaticThenDrift()
    else:
        try:
            ds = datasets.load(name, directory=data_dir)
        except (FileNotFoundError, ValueError):
            return None
    X, y = ds.arrays()
    if cap is not None:
        X, y = X[:cap], y[:cap]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        std = Standardizer.fit(X[:n_warmup], y[:n_warmup])
    Z, Y = std.x(X), std.y(y)
    names = [f"z{i:03d}" for i in range(Z.shape[1])]
    return [dict(zip(names, row, strict=True)) for row in Z.tolist()], Y.tolist()
