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
import warnings

import numpy as np
from river import base
from scipy.special import expit

from river_doebe import _logistic
from river_doebe._checks import (
    check_positive,
    check_random_walk,
    check_transition,
    check_weight_floor,
)
from river_doebe._engine import WEIGHT_FLOOR, Engine, FilterError, MemberSpec
from river_doebe._schema import Schema, check_frame
from river_doebe.basis import Basis, Linear
from river_doebe.ensemble import (
    _batch,
    _check_edoebe_params,
    _Ensemble,
    _WarmupFace,
    check_models,
    edoebe_transition,
)
from river_doebe.learner import _ArrayRegressorMixin, check_basis

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
    _scratch = Engine._scratch | {"logit", "_t", "_lam"}

    def __init__(self, members: list[MemberSpec], transition=None, weight_floor: float = 0.0):
        members = [dataclasses.replace(m, var_eps=0.0) for m in members]
        super().__init__(members, transition, weight_floor)

    def _allocate_scratch(self) -> None:
        super()._allocate_scratch()
        self.logit = np.zeros(self.M)
        self._t = np.zeros(self.M)
        self._lam = np.zeros(self.M)

    def _predict_var_eps(self) -> np.ndarray:
        return self.var_eps  # zeros: the predict sweep gives the latent predictive N(a, s2)

    def _predict_extra(self) -> None:
        _logistic.probit_logits(self.mean, self.var, self.active, self.logit)

    def _update_members(self, code: int) -> int:
        """Laplace step of every live member; writes ``self.loglik``."""
        return _logistic.laplace_update_stack(
            self.F, self.static, self._mu, self.V, self.mean, self.var, self.logit,
            self.var_theta, code, self.active, self.loglik, self.pc, self.pg, self.pend,
            self.n_filtered, self._t, self._lam,
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
        self._mu *= -1.0
        self.pg *= -1.0  # a static member's owed mean step flips with its mean
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
        z, undo = self._learn_array(x)
        if undo is None and state is not self._labels:
            undo = self._snapshot()  # a new label (at most twice in a model's life)
        self._commit(state, flip)
        try:
            self._learn_z(z, code)
        except FilterError as err:
            if undo is not None:
                undo()
            raise self._refused(err, x, "learn") from None

    def learn_many(self, X, y) -> None:
        """Learn the rows of a DataFrame in order; everything is validated first (see
        :meth:`river_doebe.DOBE.learn_many`)."""
        ys = y.tolist() if hasattr(y, "tolist") else list(y)
        if len(ys) != len(X):
            raise ValueError(f"got {len(X)} rows of features but {len(ys)} labels")
        before = self._labels
        state = before
        for label in ys:
            state, _, _ = state.encode(label)
        Z, commit = self._frame_for_learning(X)
        commit()
        # learning the batch one by one would flip the earlier codes at most once, when the
        # second label appears; by symmetry that equals flipping first and using the final codes
        flip = len(before.labels) == 1 and state.encode(before.labels[0])[1] != before.code
        self._commit(state, flip)
        for i, label in enumerate(ys):
            try:
                self._learn_z(Z[i], state.encode(label)[1])
            except FilterError as err:
                raise FilterError(f"row {i} of the batch cannot be learnt safely ({err}); the "
                                  f"{i} rows before it were learnt") from None

    def _proba_dict(self, p0: float, p1: float) -> dict:
        keys = self._labels.keys()
        if keys is None:
            return {self._labels.labels[0]: 1.0}
        return {keys[0]: p0, keys[1]: p1}

    def predict_proba_one(self, x: dict) -> dict:
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).predict_proba_one(x)
        try:
            return self._proba_dict(*self._predict_proba_z(z))
        except FilterError as err:
            raise self._refused(err, x, "predict") from None

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

        check_frame(X)
        if self._schema is None:
            return self._ghost(X.columns).predict_proba_many(X)
        Z = self._schema.frame_to_array(X)
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
        check_basis(basis)
        check_positive("var_theta", var_theta)
        check_random_walk(var_rw, var_theta)

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
        return self._engine.posterior(0)

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
    ``var_eps``.
    """
    specs = []
    for m in models:
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
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).member_predictions(x)
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
        Weights below it are zeroed and their members no longer updated, to save their work;
        0 keeps every member. The paper uses 1e-16, but a member that far behind can still come
        back under model averaging (37 nats of evidence), and pruning it there can drop a whole
        family that would have led later (CaData); the default 1e-100 prunes only members that
        would need 230 nats to return.

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

    def __init__(self, models: list, weight_floor: float = WEIGHT_FLOOR):
        self.models = models
        self.weight_floor = weight_floor
        check_models(models, DOBEClassifier, "DOBEClassifier")
        check_weight_floor(weight_floor)

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

    def __init__(self, models: list, transition, weight_floor: float = WEIGHT_FLOOR):
        self.models = models
        self.transition = transition
        self.weight_floor = weight_floor
        check_models(models, DOBEClassifier, "DOBEClassifier")
        check_transition(transition, len(models))
        check_weight_floor(weight_floor)

    def _transition(self, n_members: int):
        return self.transition

    @classmethod
    def _unit_test_params(cls):
        yield {
            "models": [DOBEClassifier(Linear()), DOBEClassifier(Linear(), var_rw=1e-2)],
            "transition": ((0.95, 0.05), (0.05, 0.95)),
        }


class _WarmupFallback:
    """What :class:`EDOEBEClassifier` predicts with during its warm-up, and the window it keeps.

    A Bayesian logistic regression with a bias (a one-member :class:`LogisticEngine` on
    :class:`river_doebe.basis.Linear`, prior variance 1, static), Laplace-filtered like
    :class:`DOBEClassifier`, on inputs standardised with the running mean and standard deviation
    of the samples *before* the current one (an input that has been constant so far is only
    centred), clipped to ``+-1e3``. The prediction for a sample and the update with its label
    therefore see the same standardised input. The window keeps the raw inputs and the label
    codes.
    """

    def __init__(self, n_inputs: int):
        self.n = 0
        self._X: list[np.ndarray] = []
        self._codes: list[int] = []
        self._mean = np.zeros(n_inputs)
        self._m2 = np.zeros(n_inputs)
        self.engine = LogisticEngine([MemberSpec(Linear(), 1.0, 0.0, 0.0)])
        self.engine.setup(n_inputs)

    def _z(self, x: np.ndarray) -> np.ndarray:
        z = x - self._mean
        if self.n >= 2:
            std = np.sqrt(self._m2 / self.n)
            z /= np.where(std > 1e-12 * np.maximum(1.0, np.abs(self._mean)), std, 1.0)
        return np.clip(z, -1e3, 1e3, out=z)

    def predict_proba(self, x: np.ndarray) -> tuple[float, float]:
        return self.engine.predict_proba(self._z(x))

    def learn(self, x: np.ndarray, code: int) -> None:
        self.engine.learn(self._z(x), code)
        if self.keep_window:
            self._X.append(x.copy())
            self._codes.append(int(code))
        self.n += 1
        delta = x - self._mean
        self._mean += delta / self.n
        self._m2 += delta * (x - self._mean)

    def flip(self) -> None:
        """The codes 0 and 1 swap meaning (a second label arrived and sorts first)."""
        self.engine.flip()
        self._codes = [1 - c for c in self._codes]

    keep_window = True

    def drop_window(self) -> None:
        """Stop keeping the samples (the warm-up was given up: the fallback is the model)."""
        self.keep_window = False
        self._X, self._codes = [], []

    def grow(self, n_inputs: int) -> None:
        """Take ``n_inputs`` inputs; the new ones last, 0 in every past sample."""
        k = n_inputs - self._mean.shape[0]
        self._mean = np.r_[self._mean, np.zeros(k)]
        self._m2 = np.r_[self._m2, np.zeros(k)]
        self.engine.grow(n_inputs)

    @property
    def log_evidence(self) -> float:
        return float(self.engine.log_evidence)

    def window(self) -> tuple[np.ndarray, np.ndarray]:
        X = np.zeros((len(self._X), self._mean.shape[0]))
        for i, z in enumerate(self._X):
            X[i, : z.shape[0]] = z
        return X, np.asarray(self._codes, dtype=np.int64)


def _unfitted_members(Z: np.ndarray, families: list) -> list:
    """One member per family with the template's own hyperparameters and ``var_theta = 1``,
    fitted to the inputs only (boundaries, centres): the members of a one-class warm-up."""
    from river_doebe.warmup import FittedMember

    members = []
    for template in families:
        name = type(template).__name__
        try:
            basis = copy.deepcopy(template).fit(Z)
        except (ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
            warnings.warn(f"{name} cannot be set up and is skipped: {exc}", RuntimeWarning,
                          stacklevel=3)
            continue
        members.append(FittedMember(basis, 1.0, math.nan, name, 0, True))
    if not members:
        raise RuntimeError("no basis family could be set up on the warm-up window")
    return members


class EDOEBEClassifier(_WarmupFace, _ClassifierEnsemble):
    """Ensemble of DOEBE classifiers (paper Sec. 4.2, App. A): the drop-in classifier.

    ``EDOEBEClassifier()`` needs no arguments. For its first ``n_warmup`` samples it predicts
    with a simple fallback (Bayesian logistic regression on inputs standardised with running
    statistics, see below) while it keeps the window. At ``n_warmup`` it

    1. freezes a standardisation of ``x`` (mean and standard deviation of the window; inputs
       constant over the window are dropped with a warning; the labels are not transformed);
    2. chooses the hyperparameters of every basis family by empirical Bayes on the window, with
       the **Gaussian evidence of the labels coded as -1/+1**: length scales (and the other basis
       hyperparameters) and ``var_theta`` are taken from the type-II maximum-likelihood fit of a
       regression of those codes on the basis, from several starting length scales, plus
       ``n_samples - 1`` draws per mode from its Laplace approximation (the same fit as the
       regressor :class:`river_doebe.EDOEBE`; the fitted noise variance is not used, a Bernoulli
       likelihood has none). The logistic evidence has no closed form, and the least-squares
       fit to the +-1 codes is the usual cheap stand-in (it is the Gaussian-process
       "label regression" criterion);
    3. gives every member a dynamic twin for each random-walk variance, in a
       :class:`LogisticEngine` with the E-DOEBE switching matrix, filters the window through
       the members (``replay``) and streams on with frozen hyperparameters.

    The weights switch with the block matrix of :func:`river_doebe.ensemble.edoebe_transition`:
    a member moves to one of its own twins with probability ``delta`` each step.

    The fallback of the warm-up is not part of the ensemble: it gives valid probabilities from
    the first sample on (0.5 before any label) and its predictions count in
    :attr:`log_evidence_`. If the window holds one class only, its labels say nothing about
    length scales (the evidence of a constant target pushes them to their upper bound, which
    would leave nearly constant members): the ensemble is then built, with a warning, from one
    member per family with the template's own hyperparameters (fitted to the inputs only:
    HSGP boundaries, RBF centres) and ``var_theta = 1``, and learns the boundary from the
    stream once the other class appears.

    With ``models`` given, the warm-up is skipped: those members (as :class:`DOBEClassifier`
    learners, their ``var_rw`` replaced by the levels) and their twins are used as they are, on
    inputs as given. For ``M`` members there are ``(R + 1) M`` of them: for each random-walk
    variance a dynamic copy of every member, then the ``M`` static members.

    Labels are any two hashable values, as for :class:`DOBEClassifier`.

    Parameters
    ----------
    families
        The basis families: names (``"hsgp"``, ``"rff"``, ``"rbf"``, ``"poly"``, ``"linear"``)
        and/or basis templates, as for :class:`river_doebe.EDOEBE`. ``None`` means the paper's
        Experiment 3 set ``("hsgp", "rff", "rbf")``.
    n_warmup
        Length of the warm-up window.
    n_samples
        Members per mode: the empirical Bayes estimate and ``n_samples - 1`` draws.
    rw_variances
        The random-walk variances of the dynamic twins.
    delta
        Switching probability between twins.
    seed
        Seed of the random parts (random features, centres, draws); same seed, same ensemble.
    models
        Explicit members, as :class:`DOBEClassifier` learners (skips the warm-up, see above).
    weight_floor
        Posterior weights below it are zeroed before the next switching step, and their
        members no longer updated (the paper: 1e-16; see :class:`DOEBEClassifier` for the
        default 1e-100).
    starts
        Starting length scales of the optimiser, as multiples of each input's warm-up range.
    replay
        Whether the warm-up window is filtered through the members after the fit.
    verbose
        Print the progress of the warm-up.
    static
        Whether the static members are kept (``False`` with one random-walk level: DOE-X).

    Examples
    --------

    >>> from river import datasets, evaluate, metrics
    >>> from river_doebe.classification import EDOEBEClassifier

    >>> model = EDOEBEClassifier(n_warmup=300, n_samples=2, starts=(1.0,), seed=1)
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89...%
    >>> len(model.members), sorted({m["family"] for m in model.describe()})
    (12, ['HilbertGP', 'RBFNetwork', 'RandomFourierFeatures'])

    Explicit members, no warm-up (here behind river's own scaler):

    >>> from river import preprocessing
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> from river_doebe.classification import DOBEClassifier

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

    References
    ----------
    1. Waxman, D. and Djuric, P. M. (2024). Dynamic Online Ensembles of Basis Expansions.
       Transactions on Machine Learning Research.
    2. Rasmussen, C. E. and Williams, C. K. I. (2006). Gaussian Processes for Machine Learning,
       Sec. 6.5 (least-squares classification). MIT Press.

    """

    def __init__(
        self,
        families: list | None = None,
        n_warmup: int = 1000,
        n_samples: int = 5,
        rw_variances: tuple = (1e-3,),
        delta: float = 1e-2,
        seed: int | None = None,
        models: list | None = None,
        weight_floor: float = WEIGHT_FLOOR,
        starts: tuple = (0.1, 1.0, 10.0),
        replay: bool = True,
        verbose: bool = False,
        static: bool = True,
    ):
        self.families = families
        self.n_warmup = n_warmup
        self.n_samples = n_samples
        self.rw_variances = rw_variances
        self.delta = delta
        self.seed = seed
        self.models = models
        self.weight_floor = weight_floor
        self.starts = starts
        self.replay = replay
        self.verbose = verbose
        self.static = static
        _check_edoebe_params(self, DOBEClassifier, "DOBEClassifier")
        self._std = None
        self._warm = None
        self._fitted: list = []
        self._n_seen = 0
        self._warm_log_evidence = 0.0

    # ------------------------------------------------------------------ explicit members
    def _specs(self, n_inputs: int) -> list[MemberSpec]:
        base_specs = _classifier_specs(self.models, n_inputs)
        return [
            dataclasses.replace(s, basis=copy.deepcopy(s.basis), var_rw=level)
            for level in self._levels()
            for s in base_specs
        ]

    # ------------------------------------------------------------------ warm-up mode
    def _on_schema(self, schema) -> None:
        if self.models is not None:
            return super()._on_schema(schema)
        self._warm = _WarmupFallback(len(schema))

    def _commit(self, state: _LabelState, flip: bool) -> None:
        if flip:
            (self._engine if self._engine is not None else self._warm).flip()
        self._label_state = state

    def _predict_proba_z(self, z: np.ndarray) -> tuple[float, float]:
        if self._engine is None:
            return self._warm.predict_proba(z)
        if self._std is not None:
            z = self._std.x(z)
        return self._engine.predict_proba(z)

    def _learn_z(self, z: np.ndarray, code: int) -> None:
        self._n_seen += 1
        if self._engine is None:
            self._warm.learn(z, code)
            if self._warmup_due():
                self._end_warmup()
            return
        if self._std is not None:
            z = self._std.x(z)
        self._engine.learn(z, code)

    def _finish_warmup(self) -> None:
        import time

        from river_doebe.warmup import Standardizer, fit_members, resolve_families, twin_specs

        t0 = time.perf_counter()
        X, codes = self._warm.window()
        names = self._schema.names if self._schema is not None else None
        if X.shape[0] < X.shape[1]:
            warnings.warn(
                f"the warm-up window has {X.shape[0]} samples for {X.shape[1]} inputs; the "
                "fitted hyperparameters will be poorly determined",
                RuntimeWarning,
                stacklevel=3,
            )
        one_class = bool(codes.min() == codes.max())
        if one_class:
            warnings.warn(
                f"the warm-up window holds one class only ({self._labels.labels[0]!r} in all "
                f"{len(codes)} samples), which says nothing about the decision boundary; the "
                "families are used with their template hyperparameters and var_theta = 1",
                RuntimeWarning,
                stacklevel=3,
            )
        with warnings.catch_warnings():
            # the label codes only ride along: the target is never standardised here
            warnings.filterwarnings("ignore", "the target is constant", RuntimeWarning)
            std = Standardizer.fit(X, codes.astype(np.float64), names=names)
        Z = std.x(X)
        families = resolve_families(self.families, Z.shape[1], self.seed)
        if one_class:
            fitted = _unfitted_members(Z, list(families))
        else:
            fitted = fit_members(
                Z, 2.0 * codes - 1.0, list(families), n_samples=int(self.n_samples),
                starts=tuple(self.starts), seed=self.seed, verbose=bool(self.verbose),
            )
        levels = self._levels()
        engine = LogisticEngine(
            twin_specs(fitted, levels),
            edoebe_transition(len(fitted), len(levels), float(self.delta)),
            float(self.weight_floor),
        )
        engine.setup(Z.shape[1])
        if self.replay:
            engine.replay(Z, codes)  # in-sample densities must not set the weights (see warmup)
        if self.verbose:
            print(
                f"[river-doebe] warm-up done: {engine.M} members from {X.shape[0]} samples in "
                f"{time.perf_counter() - t0:.1f} s",
                flush=True,
            )
        self._warm_log_evidence = self._warm.log_evidence
        self._std, self._engine, self._fitted = std, engine, fitted
        self._warm = None

    @classmethod
    def from_batch(cls, X, y, feature_names=None, **params) -> EDOEBEClassifier:
        """Warm a classifier up on a history ``X (n, D)`` with labels ``y (n,)`` and return it,
        ready to stream; the same as streaming the rows through ``learn_one``. Features are named
        ``feature_names`` (default ``x0``, ``x1``, ...), which the dicts of the stream must use.
        ``params`` are the constructor's (``models`` excluded); ``n_warmup`` defaults to ``n``
        (a smaller one warms up on the first ``n_warmup`` rows and learns the rest online).
        """
        if params.get("models") is not None:
            raise ValueError("from_batch warms a model up; explicit models need no warm-up")
        X, names = _batch(X, feature_names)
        labels = y.tolist() if hasattr(y, "tolist") else list(y)
        if X.shape[0] != len(labels):
            raise ValueError(f"X must be (n, D) and y (n,), got {X.shape} and {len(labels)} labels")
        if X.shape[0] < 2 or not np.isfinite(X).all():
            raise ValueError("X must be finite, with at least 2 rows")
        params.setdefault("n_warmup", max(2, X.shape[0]))
        model = cls(**params)
        schema = Schema(names)
        model._on_schema(schema)
        model._schema = schema
        Z = X[:, [names.index(n) for n in schema.names]]
        for z, label in zip(Z, labels, strict=True):
            state, code, flip = model._labels.encode(label)
            model._commit(state, flip)
            model._learn_z(z, code)
        if model._engine is None:
            model._finish_warmup()
        return model

    # ------------------------------------------------------------------ views
    def member_predictions(self, x: dict) -> tuple[list[dict], np.ndarray]:
        z = self._predict_array(x)
        if self._engine is None:
            raise RuntimeError("the ensemble has no members before its warm-up ends")
        if self._std is not None:
            z = self._std.x(z)
        P, w = self._engine.member_probas(z)
        return [self._proba_dict(p0, p1) for p0, p1 in P.tolist()], w

    member_predictions.__doc__ = _ClassifierEnsemble.member_predictions.__doc__

    @property
    def members(self) -> list[MemberSpec]:
        """The members' specifications (basis, var_theta, var_rw), in weight order: the dynamic
        twins first, the static members last."""
        if self._engine is None:
            raise RuntimeError(
                "the ensemble has no members before its warm-up ends"
                if self.models is None
                else "the ensemble builds its members at the first sample"
            )
        return self._engine.members

    @property
    def log_evidence_(self) -> float:
        """Sum of the log probabilities that the model gave to the labels it learnt, before
        learning each: the fallback's during the warm-up, the ensemble's after (the replay of
        the window through the members does not count)."""
        if self._engine is None:
            return 0.0 if self._warm is None else self._warm.log_evidence
        return self._warm_log_evidence + float(self._engine.log_evidence)

    def describe(self) -> list[dict]:
        """One dict per member: family, random-walk variance, ``var_theta``, basis
        hyperparameters, mode, and current weight (the fitted noise variance of the warm-up's
        regression is not used by a logistic member and is not reported)."""
        out = super().describe()
        for d in out:
            d.pop("var_eps")
        return out

    @classmethod
    def _unit_test_params(cls):
        from river_doebe.basis import RandomFourierFeatures

        yield {
            "families": [RandomFourierFeatures(5, seed=1)],
            "n_warmup": 20,
            "n_samples": 2,
            "starts": (1.0,),
            "seed": 1,
        }
        yield {
            "models": [
                DOBEClassifier(Linear()),
                DOBEClassifier(RandomFourierFeatures(8, seed=3), var_theta=5.0),
            ],
        }
