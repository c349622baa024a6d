"""Ensembles of DOBE learners: Bayesian model averaging, switching, and the E-DOEBE."""

from __future__ import annotations

import copy

import numpy as np
from river import base

from river_doebe._engine import Engine, MemberSpec
from river_doebe.basis import Linear
from river_doebe.learner import DOBE, _ArrayRegressorMixin

__all__ = ["DOEBE", "SDOEBE", "EDOEBE", "edoebe_transition"]


def _member_specs(models, n_inputs: int) -> list[MemberSpec]:
    if not isinstance(models, list | tuple) or not models:
        raise ValueError("models must be a non-empty list of DOBE learners")
    specs = []
    for i, m in enumerate(models):
        if not isinstance(m, DOBE):
            raise TypeError(f"models[{i}] is a {type(m).__name__}, expected a DOBE learner")
        basis = Linear() if m.basis is None else copy.deepcopy(m.basis)
        basis.initialize(n_inputs)
        specs.append(MemberSpec(basis, float(m.var_theta), float(m.var_eps), float(m.var_rw)))
    return specs


def edoebe_transition(n_members: int, n_levels: int, delta: float) -> np.ndarray:
    """The E-DOEBE switching matrix (paper Sec. 4.2) for ``n_levels`` blocks of ``n_members``.

    Block ``(a, b)`` is ``(1 - (n_levels - 1) delta) I`` on the diagonal and ``delta I`` elsewhere:
    a member only ever switches to its own twins at the other random-walk levels, never across
    families, and every row sums to one.

    >>> edoebe_transition(2, 2, 0.1)
    array([[0.9, 0. , 0.1, 0. ],
           [0. , 0.9, 0. , 0.1],
           [0.1, 0. , 0.9, 0. ],
           [0. , 0.1, 0. , 0.9]])

    """
    if not 0.0 <= delta * (n_levels - 1) < 1.0:
        raise ValueError(
            f"delta={delta!r} with {n_levels} levels leaves no mass on the diagonal; "
            f"need 0 <= delta < {1.0 / max(n_levels - 1, 1)!r}"
        )
    block = np.full((n_levels, n_levels), delta)
    np.fill_diagonal(block, 1.0 - (n_levels - 1) * delta)
    return np.kron(block, np.eye(n_members))


class _Ensemble(_ArrayRegressorMixin, base.MiniBatchRegressor):
    """Shared face of the ensembles: weights, members, mixture predictions."""

    def _transition(self, n_members: int):
        return None

    def _specs(self, n_inputs: int) -> list[MemberSpec]:
        return _member_specs(self.models, n_inputs)

    def _make_engine(self, n_inputs: int) -> Engine:
        specs = self._specs(n_inputs)
        return Engine(specs, self._transition(len(specs)), float(self.weight_floor))

    @property
    def weights(self) -> np.ndarray:
        """Normalised posterior weights of the members, after the last update.

        Aligned with :attr:`members`. Before any data they are uniform.
        """
        if self._engine is None:
            n = len(self._specs_preview())
            return np.full(n, 1.0 / n)
        return self._engine.weights

    def _specs_preview(self):
        return self.models

    @property
    def members(self) -> list[MemberSpec]:
        """The members' specifications (basis, var_theta, var_eps, var_rw), in weight order."""
        if self._engine is None:
            raise RuntimeError("the ensemble builds its members at the first sample")
        return self._engine.members

    def member_predictions(self, x: dict):
        """Each member's predictive ``(means, variances)`` for ``x`` and the weights that the
        ensemble's prediction for ``x`` uses (after switching). Dropped members give NaN."""
        z = self._ready(x)
        return self._engine.member_predictions(z)


class DOEBE(_Ensemble):
    """Bayesian model averaging of DOBE learners (OEBE when all are static; paper Sec. 3.1-3.2).

    Each member predicts ``N(mean_m, var_m)``; the ensemble predicts the moment-matched mixture
    ``mean = sum w_m mean_m`` and ``var = sum w_m (var_m + (mean_m - mean)^2)`` and, once the
    target is seen, multiplies each weight by the member's predictive density of it. The weights
    are kept in the log domain; a weight that falls below ``weight_floor`` is set to zero and its
    member is not updated any more. For static members the weights are the normalised model
    evidences.

    Parameters
    ----------
    models
        The members, as :class:`river_doebe.DOBE` learners (their parameters are used; each
        member gets its own copy of the basis).
    weight_floor
        Weights below it are zeroed (the paper uses 1e-16); 0 keeps every member.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE, DOEBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures

    >>> ensemble = DOEBE([
    ...     DOBE(Linear(), var_eps=0.5),
    ...     DOBE(RandomFourierFeatures(20, lengthscale=2.0, seed=1), var_eps=0.1, var_rw=1e-3),
    ... ])
    >>> model = preprocessing.StandardScaler() | ensemble
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.5...
    >>> ensemble.weights.round(3)
    array([0., 1.])

    """

    def __init__(self, models: list, weight_floor: float = 1e-16):
        self.models = models
        self.weight_floor = weight_floor
        Engine([MemberSpec(Linear(), 1.0, 1.0, 0.0)], None, float(weight_floor))

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {
            "models": [
                DOBE(Linear(), var_eps=1.0),
                DOBE(RandomFourierFeatures(8, seed=3), var_rw=1e-3),
            ]
        }


class SDOEBE(_Ensemble):
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
        Posterior weights below it are zeroed before the next switching step.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE, SDOEBE
    >>> from river_doebe.basis import Linear

    >>> model = preprocessing.StandardScaler() | SDOEBE(
    ...     [DOBE(Linear(), var_eps=0.5), DOBE(Linear(), var_eps=0.5, var_rw=1e-2)],
    ...     transition=[[0.99, 0.01], [0.01, 0.99]],
    ... )
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.9...

    """

    def __init__(self, models: list, transition, weight_floor: float = 1e-16):
        self.models = models
        self.transition = transition
        self.weight_floor = weight_floor
        n = len(models) if isinstance(models, list | tuple) else 0
        Engine([MemberSpec(Linear(), 1.0, 1.0, 0.0)] * max(n, 1), transition, float(weight_floor))

    def _transition(self, n_members: int):
        return self.transition

    @classmethod
    def _unit_test_params(cls):
        yield {
            "models": [DOBE(Linear(), var_eps=1.0), DOBE(Linear(), var_eps=1.0, var_rw=1e-2)],
            "transition": ((0.95, 0.05), (0.05, 0.95)),
        }


class EDOEBE(_Ensemble):
    """Ensemble of DOEBEs (paper Sec. 4.2): static members, their dynamic twins, and switching.

    From ``M`` member specifications it builds ``(R + 1) M`` members: for each random-walk
    variance in ``rw_variances`` a dynamic copy of every member (sharing its basis), then the
    ``M`` static members. The weights switch with the block matrix of
    :func:`edoebe_transition`: a member moves to one of its own twins with probability ``delta``
    each step, so a collapse of the static/dynamic weights early in a stream can be undone later.

    Parameters
    ----------
    models
        The member specifications, as :class:`river_doebe.DOBE` learners (their ``var_rw`` is
        replaced by the levels below).
    rw_variances
        The random-walk variances of the dynamic twins.
    delta
        Switching probability between twins.
    weight_floor
        Posterior weights below it are zeroed before the next switching step.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE, EDOEBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures

    >>> ensemble = EDOEBE(
    ...     models=[DOBE(Linear(), var_eps=0.5), DOBE(RandomFourierFeatures(20, seed=1))],
    ...     rw_variances=(1e-3,),
    ... )
    >>> model = preprocessing.StandardScaler() | ensemble
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.5...
    >>> [(type(m.basis).__name__, m.var_rw) for m in ensemble.members]
    [('Linear', 0.001), ('RandomFourierFeatures', 0.001), ('Linear', 0.0), ('RandomFourierFeatures', 0.0)]

    """

    def __init__(
        self,
        models: list | None = None,
        rw_variances: tuple = (1e-3,),
        delta: float = 1e-2,
        weight_floor: float = 1e-16,
    ):
        self.models = models
        self.rw_variances = rw_variances
        self.delta = delta
        self.weight_floor = weight_floor
        levels = self._levels()
        edoebe_transition(1, len(levels), float(delta))
        Engine([MemberSpec(Linear(), 1.0, 1.0, 0.0)], None, float(weight_floor))

    def _levels(self) -> list[float]:
        levels = [float(v) for v in self.rw_variances]
        if not levels or any(not np.isfinite(v) or v <= 0 for v in levels):
            raise ValueError(f"rw_variances must be positive, got {self.rw_variances!r}")
        return [*levels, 0.0]

    def _specs(self, n_inputs: int) -> list[MemberSpec]:
        base_specs = _member_specs(self.models, n_inputs)
        specs = []
        for level in self._levels():
            for s in base_specs:
                specs.append(MemberSpec(copy.deepcopy(s.basis), s.var_theta, s.var_eps, level))
        return specs

    def _specs_preview(self):
        return [None] * (len(self.models) * len(self._levels()))

    def _transition(self, n_members: int):
        levels = len(self._levels())
        return edoebe_transition(n_members // levels, levels, float(self.delta))

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {
            "models": [DOBE(Linear(), var_eps=1.0), DOBE(RandomFourierFeatures(8, seed=3))],
        }
