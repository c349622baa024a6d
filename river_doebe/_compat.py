"""What differs between the river versions the package supports (``river>=0.22``), and river's
conventions read off a model: what kind it is, the step of a pipeline that predicts, whether it
gives predictive distributions."""

from __future__ import annotations

import inspect

from river import base

__all__ = ["gives_distributions", "is_classifier", "is_regressor", "last_step"]

#: how deep :func:`last_step` looks through pipelines of pipelines
_MAX_DEPTH = 8


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


def last_step(model):
    """The step that predicts: the last step of a pipeline (of a pipeline ending in one ...),
    else ``model`` itself."""
    for _ in range(_MAX_DEPTH):
        steps = getattr(model, "steps", None)
        if not (isinstance(steps, dict) and steps):
            break
        model = list(steps.values())[-1]
    return model


def gives_distributions(model) -> bool:
    """Whether ``model``'s last step names ``with_dist`` in its ``predict_one`` (through a
    wrapper whose class sets ``_asks_with_dist``, its wrapped model's last step): river's
    convention for a regressor with a predictive distribution (``BayesianLinearRegression``,
    this package's models). A ``**kwargs`` does not count: river's ``KNNRegressor`` takes one
    and returns a number, and a pipeline drops an argument its last step does not name, so the
    number would pass for a distribution. The signature is read off the class, as river's
    pipeline reads it (an instance's methods may be patched, by ``utils.log_method_calls``)."""
    step = last_step(model)
    for _ in range(_MAX_DEPTH):
        # a wrapper that always asks its model for the distribution (evaluate.WithDist) gives
        # one when that model does
        if not getattr(type(step), "_asks_with_dist", False):
            break
        step = last_step(step._wrapped_model)
    try:
        params = inspect.signature(type(step).predict_one).parameters
    except (TypeError, ValueError):
        # a signature Python cannot read (a compiled method) says nothing either way: the
        # model is taken at its word, as before this check
        return True
    param = params.get("with_dist")
    return param is not None and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
