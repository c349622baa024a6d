"""Ensembles of DOBE learners, for both tasks: Bayesian model averaging and switching weights.

One task-neutral :class:`BaseEnsemble` holds the members, their engine and the weights; it is
parameterised by the engine (the likelihood) and the type of learner its members are given as.
:class:`DOEBE` / :class:`SDOEBE` (regression) and :class:`DOEBEClassifier` /
:class:`SDOEBEClassifier` are thin subclasses; the E-DOEBE builds on the same base
(:mod:`river_doebe.edoebe`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import numpy as np
from river import base

from river_doebe._checks import (
    check_transition,
    check_update,
    check_weight_floor,
    check_weighting,
)
from river_doebe.base import ArrayClassifier, ArrayEstimator, ArrayRegressor
from river_doebe.basis import Linear
from river_doebe.engine import WEIGHT_FLOOR, Engine, LogisticEngine, Member
from river_doebe.engine.weighting import STACKING_RATE, Weighting
from river_doebe.learner import DOBE, DOBEClassifier

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DOEBE", "DOEBEClassifier", "SDOEBE", "SDOEBEClassifier", "BaseEnsemble"]


def check_models(models, kind: type, name: str = "DOBE") -> None:
    """A non-empty list (or tuple) of ``kind`` learners."""
    if not isinstance(models, list | tuple) or not models:
        raise ValueError(f"models must be a non-empty list of {name} learners, got {models!r}")
    for i, m in enumerate(models):
        if not isinstance(m, kind):
            raise TypeError(f"models[{i}] is a {type(m).__name__}, expected a {name} learner")


def member_records(models, n_inputs: int) -> list[Member]:
    """The members given as learners (:class:`~river_doebe.DOBE` or
    :class:`~river_doebe.DOBEClassifier`), each with its own copy of the basis."""
    records = []
    for m in models:
        basis = Linear() if m.basis is None else copy.deepcopy(m.basis)
        basis.initialize(n_inputs)
        records.append(Member(basis, float(m.var_theta), float(getattr(m, "var_eps", 0.0)),
                              float(m.var_rw)))
    return records


class BaseEnsemble(ArrayEstimator):
    """What every ensemble shares: members, weights, the engine of the task.

    ``_engine_type`` is the likelihood (:class:`~river_doebe.engine.Engine` or
    :class:`~river_doebe.engine.LogisticEngine`); the host stores ``models`` (learners),
    ``weight_floor`` and the weight rule (``weighting``, ``stacking_rate``, ``share``). The
    members' outputs come from the task's face (``_member_view``).
    """

    _engine_type: type[Engine] = Engine
    # the host's parameters
    models: list | None
    weight_floor: float
    weighting: str
    stacking_rate: float
    share: float

    def _transition(self, n_members: int):
        return None

    def _members_for(self, n_inputs: int) -> list[Member]:
        return member_records(self.models, n_inputs)

    def _make_engine(self, n_inputs: int) -> Engine:
        members = self._members_for(n_inputs)
        return self._engine_type(members, self._transition(len(members)),
                                 float(self.weight_floor), self._weighting(),
                                 **self._likelihood_options())

    def _weighting(self) -> Weighting:
        return Weighting(self.weighting, float(self.stacking_rate), float(self.share))

    def _n_members_before(self) -> int:
        """How many members the ensemble will have (its weights before any data)."""
        assert self.models is not None  # (the E-DOEBE, whose warm-up finds them, overrides this)
        return len(self.models)

    @property
    def weights(self) -> np.ndarray:
        """Normalised posterior weights of the members, after the last update.

        Aligned with :attr:`members`. Before any data they are uniform. An E-DOEBE before the
        end of its warm-up has no members yet (:attr:`members` raises) and one weight, 1: its
        warm-up fallback predicts alone.
        """
        if self._engine is None:
            n = self._n_members_before()
            return np.full(n, 1.0 / n)
        return self._engine.weights

    @property
    def members(self) -> list[Member]:
        """The members (basis, variances, random walk), in weight order."""
        if self._engine is None:
            raise RuntimeError("the ensemble builds its members at the first sample")
        return self._engine.members

    @property
    def log_evidence_(self) -> float:
        """Sum of the log predictive densities (probabilities) of the mixture for the targets
        learnt so far."""
        return 0.0 if self._engine is None else float(self._engine.log_evidence)

    def member_posterior(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Copies of member ``k``'s posterior mean ``(F_k,)`` and covariance ``(F_k, F_k)`` (for a
        classifier, those of its Laplace approximation)."""
        if self._engine is None:
            raise RuntimeError("the ensemble has not seen any data yet")
        return self._engine.posterior(k)

    def replay_window(self, X: pd.DataFrame | list[dict], y: pd.Series | list) -> None:
        """Filter the samples ``(X, y)`` through every member without letting them count for the
        weights: no weight floor drops a member half-way, the log evidence does not count them,
        and the weights restart uniform afterwards, with ``log_evidence_`` at 0 (the evidence of
        the weights' mixture, which starts again then: what came before the replay is dropped
        from both). That is what an E-DOEBE does with its warm-up window, whose predictive
        densities are in-sample for the hyperparameters fitted on it.

        ``X`` is a DataFrame or a list of dicts (under the input policy, as ``learn_one``), ``y``
        the targets or labels.
        """
        rows = X.to_dict("records") if hasattr(X, "to_dict") else list(X)
        ys = y.tolist() if hasattr(y, "tolist") else list(y)
        if len(rows) != len(ys):
            raise ValueError(f"got {len(rows)} samples but {len(ys)} targets")
        targets = self._replay_targets(ys)
        arrays = [self._learn_array(x)[0] for x in rows]
        if self._engine is None or self._schema is None:
            raise RuntimeError("the ensemble has no members before its warm-up ends")
        Z = np.full((len(arrays), len(self._schema)), self._fill)
        for i, z in enumerate(arrays):
            Z[i, : z.shape[0]] = z  # a feature that joined later is absent from the rows before
        self._model.replay(Z, np.asarray(targets))

    def member_predictions(self, x: dict) -> Any:
        """Each member's predictive for ``x`` (regression: ``(means, variances)``;
        classification: the ``predict_proba_one`` dicts) and the weights that the ensemble's
        prediction for ``x`` uses (after switching). Dropped members give NaN."""
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).member_predictions(x)
        return self._member_view(z)


class _Switching:
    """The switching ensembles' transition: their ``transition`` parameter."""

    transition: Any

    def _transition(self, n_members: int):
        return self.transition


class DOEBE(BaseEnsemble, ArrayRegressor, base.MiniBatchRegressor):
    """Bayesian model averaging of DOBE learners (OEBE when all are static; paper Sec. 3.1-3.2).

    Each member predicts ``N(mean_m, var_m)``; the ensemble's predictive is the mixture
    ``sum w_m N(mean_m, var_m)``. ``predict_one(x)`` returns its mean ``sum w_m mean_m``, and
    ``predict_one(x, with_dist=True)`` the whole mixture as a
    :class:`river_doebe.distributions.GaussianMixture`, whose ``mu`` and ``sigma`` are the
    moment-matched ``mean`` and ``sqrt(sum w_m (var_m + (mean_m - mean)^2))``. Once the target
    is seen, each weight is multiplied by the member's predictive density of it. The weights
    are kept in the log domain; a weight that falls below ``weight_floor`` is set to zero and its
    member is not updated any more. For static members the weights are the normalised model
    evidences.

    Parameters
    ----------
    models
        The members, as :class:`river_doebe.DOBE` learners (their parameters are used; each
        member gets its own copy of the basis).
    weight_floor
        Weights below it (but the largest) are zeroed
        and their members no longer updated, to save their work;
        0 keeps every member. The paper uses 1e-16, but a member that far behind can still come
        back under model averaging (37 nats of evidence), and pruning it there can drop a whole
        family that would have led later; the default 1e-100 prunes only members that would need
        230 nats to return.
    weighting
        ``"bma"``: Bayesian model averaging, as above. ``"stacking"``: online stacking, the
        weights of the mixture that predicts best (the Soft-Bayes step, see
        :mod:`river_doebe.engine.weighting`), which can beat every member.
    stacking_rate
        The Soft-Bayes rate ``eta`` in ``(0, 1]`` of ``"stacking"`` (1 is Bayes' rule).
    share
        A fixed share in ``[0, 1)``: before each prediction the weights are mixed with the
        uniform, ``w <- (1 - share) w + share / M``, so a member that fell behind can lead again.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE, DOEBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> from river_doebe.preprocessing import TargetStandardScaler

    >>> ensemble = DOEBE([
    ...     DOBE(Linear(), var_eps=0.5),
    ...     DOBE(RandomFourierFeatures(20, lengthscale=2.0, seed=1), var_eps=0.1, var_rw=1e-3),
    ... ])
    >>> model = TargetStandardScaler(preprocessing.StandardScaler() | ensemble)
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.36...
    >>> ensemble.weights.round(3)
    array([0., 1.])

    """

    def __init__(self, models: list, weight_floor: float = WEIGHT_FLOOR,
                 weighting: str = "bma", stacking_rate: float = STACKING_RATE,
                 share: float = 0.0):
        self.models = models
        self.weight_floor = weight_floor
        self.weighting = weighting
        self.stacking_rate = stacking_rate
        self.share = share
        check_models(models, DOBE)
        check_weight_floor(weight_floor)
        check_weighting(weighting, stacking_rate, share)

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        models = [DOBE(Linear(), var_eps=1.0), DOBE(RandomFourierFeatures(8, seed=3), var_rw=1e-3)]
        yield {"models": models}
        yield {"models": models, "weighting": "stacking", "stacking_rate": 0.2, "share": 0.01}


class SDOEBE(_Switching, BaseEnsemble, ArrayRegressor, base.MiniBatchRegressor):
    """Switching DOEBE: the weights take a Markov-chain step before each prediction (Sec. 3.3).

    Before predicting ``y_t`` the weights become ``w <- Q' w`` for the row-stochastic matrix
    ``transition`` (``Q[i, j]`` is the probability of switching from member ``i`` to member
    ``j``), computed in the log domain. A weight that collapsed to zero can therefore come back
    once its member predicts well again. With the identity matrix this is :class:`DOEBE`.

    Parameters
    ----------
    models
        The members, as :class:`river_doebe.DOBE` learners.
    transition
        A row-stochastic ``(M, M)`` matrix (nested lists or an array).
    weight_floor
        Posterior weights below it (but the largest) are zeroed
        before the next switching step, and their members
        no longer updated. Defaults to 1e-100 (see :class:`DOEBE`).
    weighting
        The weight rule, ``"bma"`` (model averaging) or ``"stacking"`` (online stacking), as in
        :class:`DOEBE`. Defaults to ``"bma"``.
    stacking_rate
        The Soft-Bayes rate in ``(0, 1]`` of ``"stacking"``. Defaults to 0.05.
    share
        A fixed share in ``[0, 1)`` of the weight spread uniformly over the members after the
        switching step. Defaults to 0.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE, SDOEBE
    >>> from river_doebe.basis import Linear
    >>> from river_doebe.preprocessing import TargetStandardScaler

    >>> model = TargetStandardScaler(
    ...     preprocessing.StandardScaler()
    ...     | SDOEBE(
    ...         [DOBE(Linear(), var_eps=0.5), DOBE(Linear(), var_eps=0.5, var_rw=1e-2)],
    ...         transition=[[0.99, 0.01], [0.01, 0.99]],
    ...     )
    ... )
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.51...

    """

    def __init__(self, models: list, transition, weight_floor: float = WEIGHT_FLOOR,
                 weighting: str = "bma", stacking_rate: float = STACKING_RATE,
                 share: float = 0.0):
        self.models = models
        self.transition = transition
        self.weight_floor = weight_floor
        self.weighting = weighting
        self.stacking_rate = stacking_rate
        self.share = share
        check_models(models, DOBE)
        check_transition(transition, len(models))
        check_weight_floor(weight_floor)
        check_weighting(weighting, stacking_rate, share)

    @classmethod
    def _unit_test_params(cls):
        yield {
            "models": [DOBE(Linear(), var_eps=1.0), DOBE(Linear(), var_eps=1.0, var_rw=1e-2)],
            "transition": ((0.95, 0.05), (0.05, 0.95)),
        }


# (river's Classifier declares **kwargs on predict_one and predict_proba_one; the classifiers of
# the package take none, so that a keyword they do not know is an error)
class DOEBEClassifier(BaseEnsemble, ArrayClassifier, base.MiniBatchClassifier):  # type: ignore[misc]
    """Bayesian model averaging of logistic DOBE classifiers (paper Sec. 3.1-3.4).

    Each member predicts ``p_m(y)`` (probit-approximated, see :class:`DOBEClassifier`); the
    ensemble predicts ``sum_m w_m p_m(y)`` and, once the label is seen, multiplies each weight by
    the member's predictive probability of it. The weights are kept in the log domain; a weight
    that falls below ``weight_floor`` is set to zero and its member is not updated any more. For
    static members the weights are the normalised products of the members' one-step-ahead
    predictive probabilities (their approximate evidences).

    Parameters
    ----------
    models
        The members, as :class:`DOBEClassifier` learners (their parameters are used; each member
        gets its own copy of the basis).
    weight_floor
        Weights below it (but the largest) are zeroed
        and their members no longer updated; 0 keeps every member.
        Defaults to 1e-100 (see :class:`DOEBE`).
    weighting
        ``"bma"``: Bayesian model averaging. ``"stacking"``: online stacking of the members'
        predictive probabilities (the Soft-Bayes step, see :mod:`river_doebe.engine.weighting`).
        Defaults to ``"bma"``.
    stacking_rate
        The Soft-Bayes rate in ``(0, 1]`` of ``"stacking"``. Defaults to 0.05.
    share
        A fixed share in ``[0, 1)``: before each prediction the weights are mixed with the
        uniform, ``w <- (1 - share) w + share / M``. Defaults to 0.
    update
        The members' update step, ``"laplace"`` or ``"ipl"`` (see :class:`DOBEClassifier`; the
        members' own ``update`` is not used).

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> from river_doebe import DOBEClassifier, DOEBEClassifier

    >>> ensemble = DOEBEClassifier([
    ...     DOBEClassifier(Linear()),
    ...     DOBEClassifier(RandomFourierFeatures(50, lengthscale=3.0, seed=1), var_theta=10.0),
    ... ])
    >>> model = preprocessing.StandardScaler() | ensemble
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.20%
    >>> ensemble.weights.round(3)
    array([0., 1.])

    """

    _engine_type = LogisticEngine

    def __init__(self, models: list, weight_floor: float = WEIGHT_FLOOR,
                 weighting: str = "bma", stacking_rate: float = STACKING_RATE,
                 share: float = 0.0, update: str = "laplace"):
        self.models = models
        self.weight_floor = weight_floor
        self.weighting = weighting
        self.stacking_rate = stacking_rate
        self.share = share
        self.update = update
        check_models(models, DOBEClassifier, "DOBEClassifier")
        check_weight_floor(weight_floor)
        check_weighting(weighting, stacking_rate, share)
        check_update(update)

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {
            "models": [
                DOBEClassifier(Linear()),
                DOBEClassifier(RandomFourierFeatures(8, seed=3), var_theta=5.0, var_rw=1e-3),
            ]
        }


class SDOEBEClassifier(  # type: ignore[misc]  # (**kwargs: see DOEBEClassifier)
    _Switching, BaseEnsemble, ArrayClassifier, base.MiniBatchClassifier
):
    """Switching DOEBE classifier: the weights take a Markov-chain step before each prediction.

    Before predicting a label the weights become ``w <- Q' w`` for the row-stochastic matrix
    ``transition`` (``Q[i, j]`` is the probability of switching from member ``i`` to member
    ``j``; paper Sec. 3.3), in the log domain, so a weight that collapsed to zero can come back.
    With the identity matrix this is :class:`DOEBEClassifier`.

    Parameters
    ----------
    models
        The members, as :class:`DOBEClassifier` learners.
    transition
        A row-stochastic ``(M, M)`` matrix (nested lists or an array).
    weight_floor
        Posterior weights below it (but the largest) are zeroed
        before the next switching step, and their members
        no longer updated. Defaults to 1e-100 (see :class:`DOEBE`).
    weighting
        The weight rule, ``"bma"`` (model averaging) or ``"stacking"`` (online stacking of the
        members' predictive probabilities), as in :class:`DOEBEClassifier`. Defaults to
        ``"bma"``.
    stacking_rate
        The Soft-Bayes rate in ``(0, 1]`` of ``"stacking"``. Defaults to 0.05.
    share
        A fixed share in ``[0, 1)`` of the weight spread uniformly over the members after the
        switching step. Defaults to 0.
    update
        The members' update step, ``"laplace"`` or ``"ipl"``, as in :class:`DOEBEClassifier`.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe.basis import Linear
    >>> from river_doebe import DOBEClassifier, SDOEBEClassifier

    >>> model = preprocessing.StandardScaler() | SDOEBEClassifier(
    ...     [DOBEClassifier(Linear()), DOBEClassifier(Linear(), var_rw=1e-2)],
    ...     transition=[[0.99, 0.01], [0.01, 0.99]],
    ... )
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.12%

    """

    _engine_type = LogisticEngine

    def __init__(self, models: list, transition, weight_floor: float = WEIGHT_FLOOR,
                 weighting: str = "bma", stacking_rate: float = STACKING_RATE,
                 share: float = 0.0, update: str = "laplace"):
        self.models = models
        self.transition = transition
        self.weight_floor = weight_floor
        self.weighting = weighting
        self.stacking_rate = stacking_rate
        self.share = share
        self.update = update
        check_models(models, DOBEClassifier, "DOBEClassifier")
        check_transition(transition, len(models))
        check_weight_floor(weight_floor)
        check_weighting(weighting, stacking_rate, share)
        check_update(update)

    @classmethod
    def _unit_test_params(cls):
        yield {
            "models": [DOBEClassifier(Linear()), DOBEClassifier(Linear(), var_rw=1e-2)],
            "transition": ((0.95, 0.05), (0.05, 0.95)),
        }
