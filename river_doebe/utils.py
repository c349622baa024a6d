"""Small helpers shared by the command line and the benchmark scripts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["json_safe"]


def json_safe(obj: Any) -> Any:
    """A copy of nested results that ``json.dumps`` writes as strict JSON.

    NaN and infinities become ``None`` (JSON has no literal for them), NumPy scalars become
    Python numbers, dict keys become strings and tuples become lists. Other values are returned
    as they are.

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> from river_doebe.utils import json_safe

    >>> json.dumps(json_safe({"nMSE": np.float64(0.25), "PLL": float("-inf"), 3: (1, np.int64(2))}))
    '{"nMSE": 0.25, "PLL": null, "3": [1, 2]}'

    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    return obj
