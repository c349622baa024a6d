"""Online binary classification with basis expansions: Laplace-filtered logistic members.

Each member is a Bayesian logistic regression on a basis, ``p(y = 1 | theta) = sigmoid(phi'
theta)``, whose Gaussian belief about ``theta`` is carried from one sample to the next by a
per-step Laplace approximation (paper Sec. 3.4 and Appendix A), with an optional random walk on
``theta``. The predictive probability is the probit approximation of ``E[sigmoid(f)]`` under the
latent Gaussian. Everything else (featurisation, the member stack, the ensemble weights, switching,
the weight floor and the predict -> learn cache) is the regression engine's, through
:class:`LogisticEngine`, a subclass of :class:`river_doebe._engine.Engine` that only swaps the
per-member likelihood step (kernels in :mod:`river_doebe._logistic`).

Labels: a classifier is binary and accepts any two hashable labels. The first two distinct labels
it learns from are mapped to the codes 0 and 1, in sorted order when they can be compared (so
``False``/``True`` and ``0``/``1`` keep their natural meaning), else in order of appearance; a
third distinct label raises ``ValueError``. Like river's ``linear_model.LogisticRegression``, the
probabilities are reported for ``False`` and ``True`` until two labels are known, unless the one
label seen so far is not a ``bool``, in which case it is the only key (with probability 1).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers

import numpy as np
from river import base
from scipy.special import expit

from river_doebe import _logistic
from river_doebe._engine import Engine, MemberSpec
from river_doebe.basis import Basis, Linear
from river_doebe.ensemble import EDOEBE, _Ensemble, edoebe_transition
from river_doebe.learner import _ArrayRegressorMixin

__all__ = [
    "DOBEClassifier",
    "DOEBEClassifier",
    "EDOEBEClassifier",
    "LogisticEngine",
    "SDOEBEClassifier",
]


# ---------------------------------------------------------------------------------------- engine
class LogisticEngine(Engine):
    """The member stack of :class:`river_doebe._engine.Engine` with a Bernoulli-logistic likelihood.

    Members are given as :class:`river_doebe._engine.MemberSpec` whose ``var_eps`` is ignored (a
    Bernoulli likelihood has no noise variance). Labels enter as codes ``0``/``1``.

    Per member and step: the latent predictive ``N(a, s2)`` comes from the Gaussian predict kernel
    with ``var_eps = 0``; the member's predictive is ``p(y = 1) = sigmoid(a / sqrt(1 + pi s2 / 8))``
    and its log predictive of the observed label is what the weights use; the update is the
    one-sample Laplace step of :func:`river_doebe._logistic.laplace_update_stack`.
    """

    _positive_params = ("var_theta",)

    def __init__(self, members: list[MemberSpec], transition=None, weight_floor: float = 0.0):
        members = [dataclasses.replace(m, var_eps=0.0) for m in members]
        super().__init__(members, transition, weight_floor)

    def setup(self, n_inputs: int) -> None:
        super().setup(n_inputs)
        self.logit = np.zeros(self.M)

    def _predict_members(self) -> None:
        super()._predict_members()  # with var_eps = 0: the latent predictive N(a, s2)
        _logistic.probit_logits(self.mean, self.var, self.active, self.logit)

    def _update_members(self, code: int) -> None:
        """Laplace step of every live member; writes ``self.loglik``."""
        _logistic.laplace_update_stack(
            self.F,
            self.mu,
            self.Sigma,
            self.var_rw,
            self.V,
            self.mean,
            self.var,
            self.logit,
            code,
            self.active,
            self.loglik,
        )

    # ------------------------------------------------------------------ classifier views
    def predict_proba(self, z: np.ndarray) -> tuple[float, float]:
        """``(p(code 0), p(code 1))`` of the weighted stack, before learning the label of ``z``."""
        self._prepare(z)
        return _logistic.mixture_proba(self.log_prior, self.logit)

    def member_probas(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each member's ``(p(code 0), p(code 1))`` as an ``(M, 2)`` array (NaN rows for dropped
        members) and the weights used for the prediction for ``z``."""
        self._prepare(z)
        P = expit(np.stack([-self.logit, self.logit], axis=1))
        P[~self.active] = np.nan
        return P, np.exp(self.log_prior)

    def flip(self) -> None:
        """Swap the meaning of the codes 0 and 1.

        With a zero-mean prior the logistic filter is symmetric under ``theta -> -theta``,
        ``y -> 1 - y``: negating the means (and the cached latent means) is an exact relabelling.
        """
        self.mu *= -1.0
        self.mean *= -1.0
        self.logit *= -1.0


# ---------------------------------------------------------------------------------------- labels
def _is_bool(y) -> bool:
    return isinstance(y, bool | np.bool_)


def _check_label(y):
    """Validate a class label; return it (numpy booleans become ``bool``)."""
    if y is None:
        raise ValueError("the label is None; labels must be hashable values such as bool or str")
    if _is_bool(y):
        return bool(y)
    if isinstance(y, numbers.Real) and not math.isfinite(float(y)):
        raise ValueError(f"the label is {y!r}; NaN and infinity are not accepted as labels")
    try:
        hash(y)
    except TypeError:
        raise TypeError(f"labels must be hashable, got a {type(y).__name__} ({y!r})") from None
    return y


def _ordered(first, second) -> bool:
    """Whether the pair ``(first, second)`` swaps when sorted; order of appearance if the two
    labels cannot be compared."""
    try:
        return bool(second < first)
    except TypeError:
        return False


class _LabelState:
    """The labels known to a binary classifier and their codes (a small, picklable value)."""

    __slots__ = ("labels", "code")

    def __init__(self, labels: tuple = (), code: int = 0):
        self.labels = labels  # () / (one label) / (code-0 label, code-1 label)
        self.code = code  # the code of the single label while only one is known

    def __getstate__(self):
        return self.labels, self.code

    def __setstate__(self, state):
        self.labels, self.code = state

    def encode(self, y) -> tuple[_LabelState, int, bool]:
        """``(new state, code of y, whether the codes of earlier labels flip)``; pure."""
        y = _check_label(y)
        labels = self.labels
        if not labels:
            code = int(y) if _is_bool(y) else 0
            return _LabelState((y,), code), code, False
        if len(labels) == 2:
            for code, known in enumerate(labels):
                if _same(known, y):
                    return self, code, False
            raise ValueError(
                f"this classifier is binary and has seen the labels {labels[0]!r} and "
                f"{labels[1]!r}; got a third label {y!r}"
            )
        (known,) = labels
        if _same(known, y):
            return self, self.code, False
        if _ordered(known, y):
            return _LabelState((y, known)), 0, self.code != 1
        return _LabelState((known, y)), 1, self.code != 0

    def keys(self) -> tuple | None:
        """The labels of codes 0 and 1 to report, or None when one non-bool label is known."""
        if len(self.labels) == 2:
            return self.labels
        if not self.labels or _is_bool(self.labels[0]):
            return (False, True)
        return None


def _same(a, b) -> bool:
    """Whether two labels are the same dictionary key."""
    try:
        return hash(a) == hash(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------------------- faces
class _ArrayClassifierMixin(_ArrayRegressorMixin):
    """The regressors' dict <-> array plumbing (schema, engine set-up) with a classifier's face.

    Subclasses build ``self._engine`` (a :class:`LogisticEngine`) in ``_make_engine``. Labels are
    encoded by a :class:`_LabelState`; every river method goes through the array hooks
    ``_learn_z(z, code)`` and ``_predict_proba_z(z)``.
    """

    _engine: LogisticEngine | None = None
    _label_state: _LabelState | None = None

    def _make_engine(self, n_inputs: int) -> LogisticEngine:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def _labels(self) -> _LabelState:
        return self._label_state if self._label_state is not None else _LabelState()

    def _commit(self, state: _LabelState, flip: bool) -> None:
        if flip:
            self._engine.flip()
        self._label_state = state

    def _predict_proba_z(self, z: np.ndarray) -> tuple[float, float]:
        return self._engine.predict_proba(z)

    # river API -----------------------------------------------------------
    def learn_one(self, x: dict, y) -> None:
        state, code, flip = self._labels.encode(y)
        z = self._ready(x)
        self._commit(state, flip)
        self._learn_z(z, code)

    def learn_many(self, X, y) -> None:
        ys = list(y)
        if len(ys) != len(X):
            raise ValueError(f"got {len(X)} rows of features but {len(ys)} labels")
        before = self._labels
        state = before
        for label in ys:
            state, _, _ = state.encode(label)
        Z = self._ready_frame(X)
        # learning the batch one by one would flip the earlier codes at most once, when the
        # second label appears; by symmetry that equals flipping first and using the final codes
        flip = len(before.labels) == 1 and state.encode(before.labels[0])[1] != before.code
        self._commit(state, flip)
        for i, label in enumerate(ys):
            self._learn_z(Z[i], state.encode(label)[1])

    def _proba_dict(self, p0: float, p1: float) -> dict:
        keys = self._labels.keys()
        if keys is None:
            return {self._labels.labels[0]: 1.0}
        return {keys[0]: p0, keys[1]: p1}

    def predict_proba_one(self, x: dict) -> dict:
        return self._proba_dict(*self._predict_proba_z(self._ready(x)))

    def predict_one(self, x: dict):
        return _argmax(self.predict_proba_one(x))

    def log_density_one(self, x: dict, y) -> float:
        """Log predictive probability of the label ``y`` for ``x``, before learning it.

        For an ensemble this is ``log sum_m w_m p_m(y)``. ``y`` must be one of the labels that
        :meth:`predict_proba_one` reports.
        """
        y = _check_label(y)
        proba = self.predict_proba_one(x)
        for label, p in proba.items():
            if _same(label, y):
                return math.log(p) if p > 0 else -math.inf
        raise ValueError(f"{y!r} is not one of the labels {tuple(proba)!r} of this classifier")

    def predict_proba_many(self, X):
        import pandas as pd

        Z = self._ready_frame(X)
        P = np.array([self._predict_proba_z(Z[i]) for i in range(Z.shape[0])]).reshape(-1, 2)
        keys = self._labels.keys()
        if keys is None:
            return pd.DataFrame({self._labels.labels[0]: 1.0}, index=X.index, dtype=float)
        return pd.DataFrame({keys[0]: P[:, 0], keys[1]: P[:, 1]}, index=X.index)

    def predict_many(self, X):
        import pandas as pd

        proba = self.predict_proba_many(X)
        keys = list(proba.columns)
        if len(keys) == 1:
            return pd.Series([keys[0]] * len(proba), index=X.index)
        P = proba.to_numpy()
        labels = [keys[1] if p1 > p0 else keys[0] for p0, p1 in P]
        return pd.Series(labels, index=X.index)

    @property
    def classes_(self) -> tuple:
        """The labels learnt from so far: none, one, or the labels of codes 0 and 1."""
        return self._labels.labels


def _argmax(proba: dict):
    """The most probable label; the first (code 0) on a tie, as ``predict_many`` does."""
    best, best_p = None, -1.0
    for label, p in proba.items():
        if p > best_p:
            best, best_p = label, p
    return best


class DOBEClassifier(_ArrayClassifierMixin, base.MiniBatchClassifier):
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
    fixed by the first sample, missing features count as 0, new ones are ignored, and NaN,
    infinity or non-numeric values raise before any state changes.

    Parameters
    ----------
    basis
        A basis from :mod:`river_doebe.basis`. ``None`` means :class:`river_doebe.basis.Linear`
        (Bayesian logistic regression with a bias).
    var_theta
        Prior variance of the weights.
    var_rw
        Random-walk variance added to the weights' covariance before each step (0: static).

    Attributes
    ----------
    log_evidence_
        Sum of the log predictive probabilities of every label learnt so far (a negative
        cumulative log loss).

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe.basis import RandomFourierFeatures
    >>> from river_doebe.classification import DOBEClassifier

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
    1. Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
       Transactions on Machine Learning Research.
    2. MacKay, D. J. C. (1992). The evidence framework applied to classification networks.
       Neural Computation, 4(5), 720-736.

    """

    def __init__(self, basis: Basis | None = None, var_theta: float = 1.0, var_rw: float = 0.0):
        self.basis = basis
        self.var_theta = var_theta
        self.var_rw = var_rw
        # validate early, with the message the engine would give later
        LogisticEngine([self._spec(Linear())])

    def _spec(self, basis) -> MemberSpec:
        return MemberSpec(basis, float(self.var_theta), 0.0, float(self.var_rw))

    def _make_engine(self, n_inputs: int) -> LogisticEngine:
        basis = Linear() if self.basis is None else copy.deepcopy(self.basis)
        return LogisticEngine([self._spec(basis)])

    @property
    def log_evidence_(self) -> float:
        return 0.0 if self._engine is None else float(self._engine.log_evidence)

    @property
    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the (Laplace) posterior mean ``(F,)`` and covariance ``(F, F)`` of the weights,
        for ``p(y = classes_[1])`` (the code-1 label)."""
        if self._engine is None:
            raise RuntimeError("the model has not seen any data yet")
        f = int(self._engine.F[0])
        return self._engine.mu[0, :f].copy(), self._engine.Sigma[0, :f, :f].copy()

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {}
        yield {
            "basis": RandomFourierFeatures(n_frequencies=10, seed=1),
            "var_theta": 5.0,
            "var_rw": 1e-3,
        }


# ---------------------------------------------------------------------------------------- ensembles
def _classifier_specs(models, n_inputs: int) -> list[MemberSpec]:
    """Member specifications from DOBEClassifier learners (each with its own copy of the basis).

    The classification counterpart of :func:`river_doebe.ensemble._member_specs`, which reads
    ``var_eps`` and accepts regressors only.
    """
    if not isinstance(models, list | tuple) or not models:
        raise ValueError("models must be a non-empty list of DOBEClassifier learners")
    specs = []
    for i, m in enumerate(models):
        if not isinstance(m, DOBEClassifier):
            raise TypeError(
                f"models[{i}] is a {type(m).__name__}, expected a DOBEClassifier learner"
            )
        basis = Linear() if m.basis is None else copy.deepcopy(m.basis)
        basis.initialize(n_inputs)
        specs.append(MemberSpec(basis, float(m.var_theta), 0.0, float(m.var_rw)))
    return specs


class _ClassifierEnsemble(_ArrayClassifierMixin, base.MiniBatchClassifier):
    """Shared face of the classifier ensembles (weights and members as in the regressors)."""

    # the regression ensembles' views, reused as they are
    weights = _Ensemble.weights
    members = _Ensemble.members

    def _specs_preview(self):
        return self.models

    def _transition(self, n_members: int):
        return None

    def _specs(self, n_inputs: int) -> list[MemberSpec]:
        return _classifier_specs(self.models, n_inputs)

    def _make_engine(self, n_inputs: int) -> LogisticEngine:
        specs = self._specs(n_inputs)
        return LogisticEngine(specs, self._transition(len(specs)), float(self.weight_floor))

    def member_predictions(self, x: dict) -> tuple[list[dict], np.ndarray]:
        """Each member's predictive probabilities for ``x`` (as ``predict_proba_one`` would give
        them; NaN for dropped members) and the weights that the ensemble's prediction for ``x``
        uses (after switching)."""
        z = self._ready(x)
        P, w = self._engine.member_probas(z)
        return [self._proba_dict(p0, p1) for p0, p1 in P.tolist()], w

    @property
    def log_evidence_(self) -> float:
        """Sum of the log predictive probabilities (of the mixture) of the labels learnt so far."""
        return 0.0 if self._engine is None else float(self._engine.log_evidence)


class DOEBEClassifier(_ClassifierEnsemble):
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
        Weights below it are zeroed (the paper uses 1e-16); 0 keeps every member.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> from river_doebe.classification import DOBEClassifier, DOEBEClassifier

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

    def __init__(self, models: list, weight_floor: float = 1e-16):
        self.models = models
        self.weight_floor = weight_floor
        LogisticEngine([MemberSpec(Linear(), 1.0, 0.0, 0.0)], None, float(weight_floor))

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {
            "models": [
                DOBEClassifier(Linear()),
                DOBEClassifier(RandomFourierFeatures(8, seed=3), var_theta=5.0, var_rw=1e-3),
            ]
        }


class SDOEBEClassifier(_ClassifierEnsemble):
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
        Posterior weights below it are zeroed before the next switching step.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe.basis import Linear
    >>> from river_doebe.classification import DOBEClassifier, SDOEBEClassifier

    >>> model = preprocessing.StandardScaler() | SDOEBEClassifier(
    ...     [DOBEClassifier(Linear()), DOBEClassifier(Linear(), var_rw=1e-2)],
    ...     transition=[[0.99, 0.01], [0.01, 0.99]],
    ... )
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.12%

    """

    def __init__(self, models: list, transition, weight_floor: float = 1e-16):
        self.models = models
        self.transition = transition
        self.weight_floor = weight_floor
        n = len(models) if isinstance(models, list | tuple) else 0
        LogisticEngine(
            [MemberSpec(Linear(), 1.0, 0.0, 0.0)] * max(n, 1), transition, float(weight_floor)
        )

    def _transition(self, n_members: int):
        return self.transition

    @classmethod
    def _unit_test_params(cls):
        yield {
            "models": [DOBEClassifier(Linear()), DOBEClassifier(Linear(), var_rw=1e-2)],
            "transition": ((0.95, 0.05), (0.05, 0.95)),
        }


_NO_WARMUP = (
    "EDOEBEClassifier needs its members for now: pass models=[DOBEClassifier(...), ...]. The "
    "drop-in version that chooses its members from a warm-up on the first samples (models=None) "
    "is not available for classification yet."
)


class EDOEBEClassifier(_ClassifierEnsemble):
    """Ensemble of DOEBE classifiers (paper Sec. 4.2, App. A): static members, dynamic twins.

    From ``M`` member specifications it builds ``(R + 1) M`` members: for each random-walk
    variance in ``rw_variances`` a dynamic copy of every member, then the ``M`` static members.
    The weights switch with the block matrix of :func:`river_doebe.ensemble.edoebe_transition`: a
    member moves to one of its own twins with probability ``delta`` each step.

    ``models`` is required for now. (The drop-in version for regression, which picks its members
    by type-II maximum likelihood on a warm-up batch, will come to classification too; until then
    ``models=None`` raises a ``ValueError`` at the first sample.)

    Parameters
    ----------
    models
        The member specifications, as :class:`DOBEClassifier` learners (their ``var_rw`` is
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
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> from river_doebe.classification import DOBEClassifier, EDOEBEClassifier

    >>> ensemble = EDOEBEClassifier(
    ...     models=[
    ...         DOBEClassifier(Linear()),
    ...         DOBEClassifier(RandomFourierFeatures(50, lengthscale=3.0, seed=1), var_theta=10.0),
    ...     ],
    ...     rw_variances=(1e-3,),
    ... )
    >>> model = preprocessing.StandardScaler() | ensemble
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.60%
    >>> [(type(m.basis).__name__, m.var_rw) for m in ensemble.members]
    [('Linear', 0.001), ('RandomFourierFeatures', 0.001),
     ('Linear', 0.0), ('RandomFourierFeatures', 0.0)]

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
        edoebe_transition(1, len(self._levels()), float(delta))
        LogisticEngine([MemberSpec(Linear(), 1.0, 0.0, 0.0)], None, float(weight_floor))

    _levels = EDOEBE._levels
    _transition = EDOEBE._transition

    def _specs(self, n_inputs: int) -> list[MemberSpec]:
        if self.models is None:
            raise ValueError(_NO_WARMUP)
        base_specs = _classifier_specs(self.models, n_inputs)
        return [
            dataclasses.replace(s, basis=copy.deepcopy(s.basis), var_rw=level)
            for level in self._levels()
            for s in base_specs
        ]

    def _specs_preview(self):
        if self.models is None:
            raise ValueError(_NO_WARMUP)
        return [None] * (len(self.models) * len(self._levels()))

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {
            "models": [
                DOBEClassifier(Linear()),
                DOBEClassifier(RandomFourierFeatures(8, seed=3), var_theta=5.0),
            ],
        }
