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
