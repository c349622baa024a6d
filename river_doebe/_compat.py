"""What differs between the river versions the package supports (``river>=0.22``)."""

from __future__ import annotations

from river import base

__all__ = ["is_classifier", "is_regressor"]


def _ends_in(model, kind: type, name: str) -> bool:
    # river >= 0.23 lets isinstance see through a pipeline to its last step; river 0.22 has
    # river.utils.inspect for that instead
    if isinstance(model, kind):
        return True
    try:
        from river.utils import inspect
    except ImportError:  # pragma: no cover - recent river: isinstance said it all
        return False
    return bool(getattr(inspect, name)(model))


def is_regressor(model) -> bool:
    """Whether ``model`` (a pipeline included) is a river regressor."""
    return _ends_in(model, base.Regressor, "isregressor")


def is_classifier(model) -> bool:
    """Whether ``model`` (a pipeline included) is a river classifier."""
    return _ends_in(model, base.Classifier, "isclassifier")
