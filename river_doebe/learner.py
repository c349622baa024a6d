"""One Bayesian basis-expansion learner (DOBE), for regression and for classification."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from river import base

from river_doebe._checks import check_positive, check_random_walk, check_update
from river_doebe.base import ArrayClassifier, ArrayEstimator, ArrayRegressor, distributions
from river_doebe.basis import Basis, Linear
from river_doebe.engine import Engine, LogisticEngine, Member

__all__ = ["DOBE", "DOBEClassifier"]


def check_basis(basis: object) -> None:
    """``None`` or a basis expansion of :mod:`river_doebe.basis`."""
    if basis is not None and not isinstance(basis, Basis):
        raise TypeError(
            "basis must be a basis from river_doebe.basis (e.g. RandomFourierFeatures(50)) or "
            f"None, got {type(basis).__name__} {basis!r}"
        )


class BaseDOBE(ArrayEstimator):
    """What the regressor and the classifier share: one member, its engine and its posterior.

    The host stores ``basis``, ``var_theta`` and ``var_rw`` (and the regressor ``var_eps``);
    ``_engine_type`` is the likelihood.
    """

    _engine_type: type[Engine] = Engine
    # the host's parameters
    basis: Basis | None
    var_theta: float
    var_rw: float

    def _member(self, basis: Basis) -> Member:
        return Member(basis, float(self.var_theta), float(getattr(self, "var_eps", 0.0)),
                      float(self.var_rw))

    def _make_engine(self, n_inputs: int) -> Engine:
        basis = Linear() if self.basis is None else copy.deepcopy(self.basis)
        return self._engine_type([self._member(basis)], **self._likelihood_options())

    @property
    def log_evidence_(self) -> float:
        """Sum of the log predictive densities (probabilities) of every target learnt so far;
        for a static regressor, the log marginal likelihood of the data seen."""
        return 0.0 if self._engine is None else float(self._engine.log_evidence)

    @property
    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the posterior mean ``(F,)`` and covariance ``(F, F)`` of the weights (for a
        classifier, those of the Laplace approximation, for ``p(y = classes_[1])``)."""
        if self._engine is None:
            raise RuntimeError("the model has not seen any data yet")
        return self._engine.posterior(0)

    @property
    def basis_(self) -> Basis:
        """The basis in use (initialised and, if the schema grew, grown); a copy of ``basis``."""
        if self._engine is None:
            raise RuntimeError("the model has not seen any data yet")
        return self._engine.members[0].basis


class DOBE(BaseDOBE, ArrayRegressor, base.MiniBatchRegressor):
    """Dynamic online basis expansion: Bayesian linear regression on a basis, Kalman-filtered.

    The model is ``y = phi(x)' theta + eps`` with prior ``theta ~ N(0, var_theta I)`` and noise
    ``eps ~ N(0, var_eps)``. Before every step the weights may take a random-walk step of variance
    ``var_rw`` (paper Sec. 3.2); ``var_rw = 0`` is the static learner, whose online posterior is
    exactly the batch Bayesian posterior. Each step costs ``O(F^2)`` for ``F`` basis functions,
    and runs in compiled code.

    Input policy (the README's): the first sample learnt fixes the input schema (names sorted;
    an empty sample is a sample with no active feature); a feature that arrives later joins it
    exactly, every basis of the package taking new inputs (see
    :meth:`river_doebe.basis.base.Basis.grow`); ``predict_one`` never changes the schema; a
    missing feature counts as 0 (an absent feature, as river's sparse encoders mean it); NaN,
    infinity or non-numeric values raise before any state changes. Inputs are used as given: put
    a scaler in front for bases with length scales (or use :class:`river_doebe.EDOEBE`, which
    standardises by itself). Static learners keep a square root of their covariance, so unscaled
    inputs such as timestamps cannot break it.

    Parameters
    ----------
    basis
        A basis from :mod:`river_doebe.basis`. ``None`` means :class:`river_doebe.basis.Linear`
        (Bayesian linear regression with a bias).
    var_theta
        Prior variance of the weights.
    var_eps
        Observation noise variance.
    var_rw
        Random-walk variance added to the weights' covariance before each step (0: static).

    Attributes
    ----------
    log_evidence_
        Sum of the log predictive densities of every target learnt so far; for a static learner
        this is the log marginal likelihood of the data seen.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> from river_doebe.preprocessing import TargetStandardScaler

    Random Fourier features on standardised inputs and target, with a slow random walk:

    >>> model = TargetStandardScaler(
    ...     preprocessing.StandardScaler()
    ...     | DOBE(RandomFourierFeatures(50, lengthscale=5.0, seed=1), var_eps=0.1, var_rw=1e-3)
    ... )
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.37...

    The predictive distribution is a ``river.proba.Gaussian``; with a linear basis and a static
    learner it is exactly the Bayesian linear-regression posterior predictive:

    >>> blr = DOBE(Linear(), var_theta=10.0, var_eps=0.01)
    >>> for i in range(50):
    ...     blr.learn_one({"x": i / 10}, 2.0 * i / 10 + 1.0)
    >>> dist = blr.predict_one({"x": 6.0}, with_dist=True)
    >>> round(dist.mu, 2), round(dist.sigma, 2)
    (13.0, 0.11)

    References
    ----------
    [^1]: Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
        Transactions on Machine Learning Research.
    [^2]: Bishop, C. M. (2006). Pattern Recognition and Machine Learning, Chapter 3.

    """

    def __init__(
        self,
        basis: Basis | None = None,
        var_theta: float = 1.0,
        var_eps: float = 0.25,
        var_rw: float = 0.0,
    ):
        self.basis = basis
        self.var_theta = var_theta
        self.var_eps = var_eps
        self.var_rw = var_rw
        check_basis(basis)
        check_positive("var_theta", var_theta)
        check_positive("var_eps", var_eps)
        check_random_walk(var_rw, var_theta)

    def _predictive(
        self, weights: np.ndarray, means: np.ndarray, variances: np.ndarray, mean: float, var: float
    ) -> Any:
        # one member: its Gaussian
        return distributions().gaussian(mean, var)

    def _predictive_arrays(self, x: dict) -> None:
        # its predictive is a Gaussian, which river_doebe.conf.Recalibrated reads through its
        # standard deviation (the engine's variance is not that squared, to the last bit)
        return None

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {}
        yield {"basis": RandomFourierFeatures(n_frequencies=10, seed=1), "var_rw": 1e-3}


# (river's Classifier declares **kwargs on predict_one and predict_proba_one; the classifiers of
# the package take none, so that a keyword they do not know is an error)
class DOBEClassifier(BaseDOBE, ArrayClassifier, base.MiniBatchClassifier):  # type: ignore[misc]
    """Dynamic online basis expansion for binary classification (logistic, Laplace-filtered).

    The model is ``p(y = 1 | x, theta) = sigmoid(phi(x)' theta)`` with prior ``theta ~ N(0,
    var_theta I)``; before each sample the weights may take a random-walk step of variance
    ``var_rw`` (``0``: static). The Gaussian belief ``N(mu, Sigma)`` about ``theta`` is updated by a
    Laplace approximation of the one-sample posterior (paper Sec. 3.4): Newton's method finds its
    mode, which lies on a line through ``mu``, and the covariance takes a rank-one update, so a step
    costs ``O(F^2)`` for ``F`` basis functions, in compiled code. Predictions use the probit
    approximation ``p(y = 1) ~= sigmoid(a / sqrt(1 + pi s2 / 8))`` of the latent predictive
    ``N(a, s2)``, ``a = phi' mu``, ``s2 = phi' (Sigma + var_rw I) phi``.

    The classifier is binary: any two hashable labels, mapped to 0/1 in sorted order when
    comparable; a third label raises ``ValueError``. Until two labels are known the probabilities
    are reported for ``False`` and ``True``, as by river's ``linear_model.LogisticRegression``
    (unless the one label seen is not a ``bool``). Input policy as for the regressors: the schema is
    fixed by the first sample and grows with the features that arrive later, missing features
    count as 0, and NaN, infinity or non-numeric values raise before any state changes.

    Parameters
    ----------
    basis
        A basis from :mod:`river_doebe.basis`. ``None`` means :class:`river_doebe.basis.Linear`
        (Bayesian logistic regression with a bias).
    var_theta
        Prior variance of the weights.
    var_rw
        Random-walk variance added to the weights' covariance before each step (0: static).
    update
        The update step of the weights: ``"laplace"`` (the paper's, above) or ``"ipl"``, iterated
        posterior linearisation (a statistical linear regression of the label on the latent
        ``phi' theta``, by Gauss-Hermite quadrature, re-done with respect to the posterior until
        it settles; :mod:`river_doebe.kernels.ipl`). Same ``O(F^2)`` per step; the predictive
        probabilities are the same probit approximation either way.

    Attributes
    ----------
    log_evidence_
        Sum of the log predictive probabilities of every label learnt so far (a negative
        cumulative log loss).

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe.basis import RandomFourierFeatures
    >>> from river_doebe import DOBEClassifier

    >>> model = preprocessing.StandardScaler() | DOBEClassifier()
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.28%

    A nonlinear basis, and weights that drift:

    >>> model = preprocessing.StandardScaler() | DOBEClassifier(
    ...     basis=RandomFourierFeatures(n_frequencies=50, lengthscale=3.0, seed=1),
    ...     var_theta=10.0,
    ...     var_rw=1e-4,
    ... )
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.36%

    >>> x, y = next(iter(datasets.Phishing()))
    >>> proba = model.predict_proba_one(x)
    >>> sorted(proba), round(sum(proba.values()), 12)
    ([False, True], 1.0)

    References
    ----------
    [^1]: Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
        Transactions on Machine Learning Research.
    [^2]: MacKay, D. J. C. (1992). The evidence framework applied to classification networks.
        Neural Computation, 4(5), 720-736.

    """

    _engine_type = LogisticEngine

    def __init__(self, basis: Basis | None = None, var_theta: float = 1.0, var_rw: float = 0.0,
                 update: str = "laplace"):
        self.basis = basis
        self.var_theta = var_theta
        self.var_rw = var_rw
        self.update = update
        check_basis(basis)
        check_positive("var_theta", var_theta)
        check_random_walk(var_rw, var_theta)
        check_update(update)

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {}
        yield {
            "basis": RandomFourierFeatures(n_frequencies=10, seed=1),
            "var_theta": 5.0,
            "var_rw": 1e-3,
        }
        yield {"basis": RandomFourierFeatures(n_frequencies=10, seed=1), "update": "ipl"}
