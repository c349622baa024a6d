"""What the tests of ``river_doebe.distributed`` share: small templates, keyed records, the
one-process reference (a dict of models fed row by row), the keys' states, and Ray started with
two CPUs for a test module and shut down after it.

Not a test module: ``tests/test_distributed*.py`` import it.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import time
import warnings

import pytest
from river import base

from river_doebe import DOBE, EDOEBE
from river_doebe._compat import is_classifier
from river_doebe.basis import RandomFourierFeatures
from river_doebe.datasets import KeyedDrift

# Ray starts its workers at niceness 15: on a machine shared with other jobs the shards would
# wait for every other process; the tests' workers run at the normal priority
os.environ.setdefault("RAY_worker_niceness", "0")


def start_ray() -> None:
    """Ray for the tests: two CPUs, no dashboard, the workers' output not copied here."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")


_started: list = []  # a Ray these fixtures started, still running


def ray_fixtures(own_ray=()):
    """``(module fixture, per-test fixture)``: Ray starts at the first test that needs it and
    stops after the module, unless the next test is a Ray test too (a Ray start costs seconds
    of CPU); the tests named in ``own_ray`` run without it (they start their own, or none)."""
    import ray
    from ray import cloudpickle

    # Ray's workers cannot import this module (it lives in tests/): its classes travel by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    @pytest.fixture(scope="module", autouse=True)
    def ray_session(request):
        yield
        items = request.session.items
        mine = [i for i, it in enumerate(items) if getattr(it, "module", None) is request.module]
        after = items[mine[-1] + 1] if mine and mine[-1] + 1 < len(items) else None
        if _started and (after is None or after.get_closest_marker("ray") is None):
            ray.shutdown()
            _started.clear()

    @pytest.fixture(autouse=True)
    def ray_running(request):
        if request.function.__name__ in own_ray:
            if ray.is_initialized() and _started:
                ray.shutdown()
                _started.clear()
        elif not ray.is_initialized():
            start_ray()
            _started.append(True)

    return ray_session, ray_running


def dobe():
    return DOBE(RandomFourierFeatures(n_frequencies=8, seed=0), var_rw=1e-3)


def edoebe():
    return EDOEBE(
        families=[RandomFourierFeatures(5, seed=1)], n_warmup=20, n_samples=2, starts=(1.0,), seed=1
    )


def records(n_keys=30, n=1500, seed=0):
    keys, X, y = map(list, zip(*KeyedDrift(n_keys=n_keys, n_samples=n, seed=seed)))
    return keys, X, y


def reference(template, keys, X, y, with_dist=False, models=None):
    """The one-process answer: a dict of models, predict_one then learn_one row by row (the
    models left in ``models`` when given: :func:`pickled` gives their states)."""
    models = {} if models is None else models
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for key, x, target in zip(keys, X, y, strict=True):
            model = models.get(key)
            if model is None:  # (a clone at the key's first row only: river's clone is slow)
                model = models[key] = template.clone()
            if is_classifier(model):
                out.append(model.predict_proba_one(x))
            else:
                # (river's own models take no with_dist in older river versions)
                out.append(
                    model.predict_one(x, with_dist=True) if with_dist else model.predict_one(x)
                )
            model.learn_one(x, target)
    return out


def feed(keyed, keys, X, y, call_size, with_dist=False):
    out = []
    for i in range(0, len(keys), call_size):
        s = slice(i, i + call_size)
        out += keyed.predict_learn_many(keys[s], X[s], y[s], with_dist=with_dist)
    return out


def calls(keys, X, y, size):
    starts = range(0, len(keys), size)
    return [(keys[i : i + size], X[i : i + size], y[i : i + size]) for i in starts]


def states(keyed) -> dict:
    """Every key's model, pickled, from the shards."""
    return {k: pickle.dumps(keyed.model(k)) for k in keyed.keys()}


def pickled(models: dict) -> dict:
    """The states of a dict of models (:func:`reference`'s), pickled as a shard's copy would
    be (a model that has crossed a pickle, as every shard's model has)."""
    return {k: pickle.dumps(pickle.loads(pickle.dumps(m))) for k, m in models.items()}


def reference_states(template, keys, X, y) -> dict:
    """The dict of models' states after the rows (:func:`pickled`)."""
    models: dict = {}
    reference(template, keys, X, y, models=models)
    return pickled(models)


def differing(got: dict, expected: dict) -> list:
    """The keys whose states differ (or that one side lacks)."""
    return sorted(
        (k for k in set(got) | set(expected) if got.get(k) != expected.get(k)), key=repr
    )


def sigint() -> None:
    """What Ctrl-C does: SIGINT to this process; Python raises KeyboardInterrupt in the main
    thread at its next step."""
    signal.raise_signal(signal.SIGINT)
    time.sleep(0.01)  # (the handler runs here at the latest)


class Plain(base.Regressor):
    """A linear regressor fitted by plain SGD (every row moves the weights, in order, so a row
    lost, doubled or moved shows in the last bits), taken row by row as any river estimator
    that is not this library's (``predict_one`` then ``learn_one``), with two faults on demand:
    a target above 1e300 is refused with a ValueError (as this library's filters refuse a step
    they cannot take), and a row with the feature ``"stall"`` hangs it (an hour's sleep) while
    the file ``flag`` holds a count above zero, which it counts down. It loads no compiled
    kernels and imports nothing but ``river.base``, so its shards start fast (river's own
    LinearRegression imports ``scipy.stats``: about a second more at every actor's start, and
    the Ray tests start some thirty of them); it travels to them by value (see
    ray_fixtures)."""

    #: the step size (SGD on these tests' rows, with |x|^2 + 1 below 4, is stable for steps
    #: below 0.5)
    lr = 0.01

    def __init__(self, flag: str = ""):
        self.flag = flag
        self.weights: dict = {}
        self.intercept = 0.0

    def predict_one(self, x):
        weights = self.weights
        return self.intercept + sum(weights.get(name, 0.0) * value for name, value in x.items())

    def learn_one(self, x, y):
        if y > 1e300:
            raise ValueError(f"the target {y!r} is too large to learn safely")
        if "stall" in x and self.flag and os.path.exists(self.flag):
            with open(self.flag) as fh:
                left = int(fh.read() or 0)
            if left > 0:
                with open(self.flag, "w") as fh:
                    fh.write(str(left - 1))
                time.sleep(3600)
        step = self.lr * (self.predict_one(x) - y)
        self.intercept -= step
        for name, value in x.items():
            self.weights[name] = self.weights.get(name, 0.0) - step * value


def plain(flag: str = ""):
    return Plain(flag)


def kill(actor) -> None:
    """``ray.kill`` the actor and wait until it is dead."""
    from river_doebe.distributed.shard import kill_and_wait

    kill_and_wait(actor)
