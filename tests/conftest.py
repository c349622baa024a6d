"""What the tests share: where the paper's data files are, and small synthetic streams.

The data files live next to the repository (``../shared/data`` from its root) or wherever the
environment variable ``RIVER_DOEBE_DATA`` points; a test that needs one skips cleanly without it.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest
from scipy.special import expit

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: the environment variable of :func:`river_doebe.datasets.data_dir` (not imported here, so that
#: collecting the tests does not load the datasets module)
ENV_VAR = "RIVER_DOEBE_DATA"


def find_data_dir() -> pathlib.Path | None:
    """The folder of the ``.npz`` data files, or ``None`` when there is none."""
    for candidate in (os.environ.get(ENV_VAR), ROOT.parent / "shared" / "data"):
        if candidate and pathlib.Path(candidate).is_dir():
            return pathlib.Path(candidate)
    return None


@pytest.fixture(autouse=True, scope="session")
def _rented_parts_bought():
    """The tests run as a later session does: the rented kernels (the recalibration's update,
    the weights, a sample's standardisation, the block kernels:
    ``river_doebe.kernels.jit.Rented``) compiled from their first call, whether or not this
    checkout's on-disk cache holds them yet (a clean clone's does not). The renting itself is
    tested with rented kernels of its own (``tests/test_conf.py``), by the twins' bits
    (``tests/test_conf.py``, ``tests/test_ensemble.py``), by the blocks' rows the per-sample way
    (the fixture ``block_rent``) and in fresh processes (``tests/test_precompile.py``)."""
    from river_doebe.conf import recalibrated  # noqa: F401 - (its rented update, to buy)
    from river_doebe.kernels.jit import buy_all

    buy_all()
    yield


@pytest.fixture(params=["kernel", "renting", "bought mid-block"])
def block_rent(request, monkeypatch):
    """How a block's rows run: in the block kernel (a later session: it is bought); the
    per-sample way, paying the kernel's rent (a fresh install's first blocks:
    ``river_doebe.engine.core._BLOCKS``); or the per-sample way for a block's first row, whose
    time pays the rent, and the kernel for the rest."""
    import math

    from river_doebe.engine import core, logistic

    if request.param != "kernel":
        rent = math.inf if request.param == "renting" else 1e-12
        for rented, name in ((core._BLOCKS, "gaussian_block"),
                             (logistic._BLOCKS, "logistic_block")):
            monkeypatch.setattr(rented, "_bought", {name: False})
            monkeypatch.setattr(rented, "paid", 0.0)
            monkeypatch.setattr(rented, "rent", rent)
    return request.param


@pytest.fixture
def data_dir() -> pathlib.Path:
    """The data folder; the test is skipped when there is none."""
    folder = find_data_dir()
    if folder is None:
        pytest.skip(f"data folder not found (set {ENV_VAR})")
    return folder


@pytest.fixture
def need_file(data_dir):
    """``need_file("elevators")``: the path of that data file, or skip the test."""

    def need(name: str) -> pathlib.Path:
        path = data_dir / f"{name}.npz"
        if not path.is_file():
            pytest.skip(f"{name}.npz not in the data folder")
        return path

    return need


# ------------------------------------------------------------------ synthetic streams
def dicts(X, names=None) -> list[dict]:
    """The rows of ``X`` as river dicts, named ``x0``, ``x1``, ... unless ``names`` is given."""
    names = names or [f"x{j}" for j in range(np.shape(X)[1])]
    return [dict(zip(names, map(float, row))) for row in X]


def regression_stream(n: int = 2000, d: int = 3, seed: int = 0, noise: float = 0.3):
    """``(X, y)`` of a smooth nonlinear regression: ``sin(x0) + x1 x2 / 2`` plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + noise * rng.normal(size=n)
    return X, y


def logistic_stream(n: int = 400, d: int = 2, seed: int = 0, scale: float = 2.0):
    """``(X, labels)``: bool labels drawn from a logistic model with a bias."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = scale * np.linspace(1.0, -1.0, d)
    p = expit(X @ w + 0.3)
    return X, rng.random(n) < p


# ------------------------------------------------------------------ the two tasks
class Task:
    """One task's face of the package, for the tests that hold for both: its estimators, its
    prediction (``predict_one`` or ``predict_proba_one``), a synthetic stream and a river
    dataset with a metric."""

    def __init__(self, name: str):
        import river_doebe as rd

        self.name = name
        self.is_classification = name == "classification"
        suffix = "Classifier" if self.is_classification else ""
        self.DOBE = getattr(rd, "DOBE" + suffix)
        self.DOEBE = getattr(rd, "DOEBE" + suffix)
        self.SDOEBE = getattr(rd, "SDOEBE" + suffix)
        self.EDOEBE = getattr(rd, "EDOEBE" + suffix)

    def __repr__(self) -> str:
        return self.name

    def predict(self, model, x):
        """The prediction a progressive validation scores."""
        return model.predict_proba_one(x) if self.is_classification else model.predict_one(x)

    def stream(self, n: int, seed: int = 0, d: int = 2):
        """``(X, y)``: a logistic stream's bool labels, or a linear regression with noise."""
        if self.is_classification:
            return logistic_stream(n=n, d=d, seed=seed)
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, d))
        return X, X @ np.linspace(1.5, -1.0, d) + 0.4 + 0.5 * rng.normal(size=n)

    def dataset(self):
        """A small river dataset of the task: Phishing (1,250 samples) or TrumpApproval (1,001)."""
        from river import datasets

        return datasets.Phishing() if self.is_classification else datasets.TrumpApproval()

    def metric(self):
        from river import metrics

        return metrics.Accuracy() if self.is_classification else metrics.MAE()


@pytest.fixture(params=["regression", "classification"])
def task(request) -> Task:
    """Each task in turn (the test runs twice)."""
    return Task(request.param)


def static_members_hold_the_batch_posterior(model, Z, Y) -> int:
    """Each static member's posterior is the batch posterior of its basis on the standardised
    design ``Z`` and targets ``Y``; returns how many static members were checked."""
    static = [k for k, m in enumerate(model.members) if m.var_rw == 0.0]
    for k in static:
        member = model.members[k]
        Phi = member.basis.featurize(Z)
        A = Phi.T @ Phi / member.var_eps + np.eye(Phi.shape[1]) / member.var_theta
        mu, Sigma = model.member_posterior(k)
        # (the fitted noise variances are small: the designs' precisions have condition numbers
        # up to 1e8, so the batch side is solved, not inverted, and compared at that precision)
        np.testing.assert_allclose(mu, np.linalg.solve(A, Phi.T @ Y / member.var_eps),
                                   rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(A @ Sigma, np.eye(A.shape[0]), atol=1e-6)
    return len(static)
