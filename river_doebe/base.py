"""The river face of the array estimators: the input policy and the learn/predict plumbing.

:class:`ArrayEstimator` is task-neutral: it turns dicts and DataFrames into arrays under the
input policy (:mod:`river_doebe._schema`), builds the engine (:mod:`river_doebe.engine`) at the
first sample learnt, grows it when new features arrive, predicts without fixing anything before,
and reports a sample the filters refuse. :class:`ArrayRegressor` and :class:`ArrayClassifier` add
the two tasks' river methods on top; every model of the package is one of them plus river's own
``base.MiniBatchRegressor`` / ``base.MiniBatchClassifier``.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from river_doebe._schema import Schema, check_frame, check_target, check_targets
from river_doebe.batch import BatchPath, _blame
from river_doebe.engine import Engine, FilterError
from river_doebe.labels import Labels, argmax, check_label, same_label

if TYPE_CHECKING:
    import pandas as pd
    from river.proba.base import ContinuousDistribution

__all__ = ["ArrayClassifier", "ArrayEstimator", "ArrayRegressor"]


def distributions():
    """:mod:`river_doebe.distributions`, imported when a first predictive distribution is asked
    for: it loads river's ``proba`` and with it ``scipy.stats``, most of the import time of the
    package otherwise."""
    from river_doebe import distributions as module

    return module


class ArrayEstimator(BatchPath):
    """The river face shared by every estimator of the package, for both tasks.

    The input policy (see :mod:`river_doebe._schema`): the first sample learnt fixes the schema
    and calls ``_on_schema`` (by default: build the engine with ``_make_engine`` and set it up);
    a later sample with new features grows it (``_grow``) while ``_schema_is_free()``, else the
    new features are ignored with one warning each. Predictions never change the schema: before
    the first sample is learnt they come from a throwaway copy (the prior predictive). Every
    river method goes through the array hooks ``_predict_z``, ``_learn_z`` and
    ``_log_density_z``, which a model that transforms arrays or targets (the warm-up E-DOEBE)
    overrides. A sample the filters refuse (:class:`river_doebe.engine.FilterError`) is
    reported naming its largest input (and, learning a regression target, the target), with
    the model unchanged.
    """

    _engine: Engine | None = None
    _schema: Schema | None = None
    _ignored: frozenset = frozenset()

    #: the value of a schema feature that a sample lacks: 0 for a model that uses its inputs as
    #: given (a missing key is an absent, zero feature, as river's sparse encoders mean it); a
    #: model that standardises its inputs asks for NaN and resolves it itself (the E-DOEBE)
    _fill = 0.0

    # hooks ---------------------------------------------------------------
    def _make_engine(self, n_inputs: int) -> Engine:  # pragma: no cover - abstract
        raise NotImplementedError

    def _likelihood_options(self) -> dict:
        """The task's own keyword arguments of the engine (a classifier: its update step)."""
        return {}

    def _member_view(self, z: np.ndarray) -> Any:  # pragma: no cover - the task's face
        raise NotImplementedError

    def _replay_targets(self, ys: list) -> list:  # pragma: no cover - the task's face
        raise NotImplementedError

    def _on_schema(self, schema: Schema) -> None:
        engine = self._make_engine(len(schema))
        engine.setup(len(schema))
        self._engine = engine

    def _schema_is_free(self) -> bool:
        """Whether a new feature may still join the schema."""
        return self._engine is None or self._engine.can_grow

    def _fixed_because(self) -> str:
        """Why the schema no longer grows, for the warning."""
        assert self._engine is not None  # (a schema is fixed by its engine's bases)
        rigid = sorted(
            {type(m.basis).__name__ for m in self._engine.members if not m.basis.can_grow}
        )
        return f"the basis {', '.join(rigid)} cannot take new inputs exactly"

    def _grow(self, n_inputs: int) -> None:
        assert self._engine is not None  # (only a schema that exists grows)
        self._engine.grow(n_inputs)

    @property
    def _model(self) -> Any:
        """What the array hooks learn from and predict with: the engine (the E-DOEBE puts its
        standardisation in front of it, a
        :class:`~river_doebe.warmup.standardise.StandardisedModel`)."""
        return self._engine

    # dict / frame -> array -----------------------------------------------
    def _learn_array(self, x: dict):
        """The sample as an array for learning, and an undo for a schema that had to grow (a
        callable, or None): the caller undoes the growth if the sample is then refused."""
        schema = self._schema
        fill = self._fill
        if schema is None:
            schema = Schema.from_sample(x)
            z = schema.to_array(x, fill)
            undo = self._snapshot()
            self._on_schema(schema)
            self._schema = schema
            return z, undo
        z, new = schema.to_array_and_new(x, fill)
        if not new:
            return z, None
        if not self._schema_is_free():
            self._ignore(new)
            return z, None
        grown = schema.extend(new)
        z = grown.to_array(x, fill)  # the new values are validated before anything changes
        undo = self._snapshot()
        self._grow(len(grown))
        self._schema = grown
        return z, undo

    def _revives(self, z: Any) -> bool:
        """Whether learning the values ``z`` (schema order) first brings back an input the
        model left out (an E-DOEBE's input that was constant over its warm-up): such a row
        takes the per-sample path of a batch."""
        return False

    def _snapshot(self):
        """A callable that puts the model's state back as it is now (rarely needed: a sample
        that grew the schema and was then refused)."""
        saved = copy.deepcopy(self.__dict__)

        def restore():
            self.__dict__.clear()
            self.__dict__.update(saved)

        return restore

    def _ignore(self, names) -> None:
        fresh = [n for n in names if n not in self._ignored]
        if fresh:
            warnings.warn(
                f"{type(self).__name__}: feature(s) {fresh} are not in the input schema, which "
                f"no longer grows ({self._fixed_because()}); they are ignored",
                RuntimeWarning,
                stacklevel=4,
            )
            self._ignored = self._ignored | frozenset(fresh)

    def _predict_array(self, x: dict) -> np.ndarray | None:
        """The sample as an array for predicting (``None`` before any schema)."""
        if self._schema is None:
            if not isinstance(x, dict):
                raise TypeError(f"expected a dict of features, got {type(x).__name__}")
            return None
        return self._schema.to_array(x, self._fill)

    def _ghost(self, names):
        """A fresh copy of the model with the schema ``names`` and nothing learnt: what the
        model predicts before it has learnt anything (its prior predictive), without fixing
        its own schema."""
        ghost = self.clone()
        schema = Schema(names)
        ghost._on_schema(schema)
        ghost._schema = schema
        return ghost

    def _frame_for_learning(self, X):
        """The DataFrame ``X`` as an array for learning, and a callable that commits the schema
        (fixed, grown or with ignored columns) once everything has been validated."""
        check_frame(X)
        schema = self._schema
        fill = self._fill
        if schema is None:
            schema = Schema(X.columns)  # (no columns: rows with no active feature)
            Z = schema.frame_to_array(X, fill)

            def commit():
                self._on_schema(schema)
                self._schema = schema

            return Z, commit
        new = schema.frame_new_names(X)
        if new and self._schema_is_free():
            grown = schema.extend(new)
            Z = grown.frame_to_array(X, fill)

            def commit():
                self._grow(len(grown))
                self._schema = grown

            return Z, commit
        Z = schema.frame_to_array(X, fill)
        return Z, (lambda: self._ignore(new)) if new else (lambda: None)

    def _refused(self, err: FilterError, x: dict, what: str, y: Any = None) -> FilterError:
        """The engine's refusal, reworded for the user: what was refused, and what is most
        likely to blame: the largest input and, when a regression target was being learnt,
        the target (a huge target makes the update overflow whatever the inputs)."""
        hint, scale = _blame(x, y)
        return FilterError(
            f"{type(self).__name__} cannot {what} this sample safely ({err}){hint}. The model "
            f"is unchanged; scale {scale} or drop the sample"
        )

    if TYPE_CHECKING:  # river's Base, which every estimator of the package mixes in after this

        def _get_params(self) -> dict[str, Any]: ...

    def clone(self, new_params: dict | None = None, include_attributes: bool = False) -> Any:
        # river's Base.clone looks at the first item of every tuple parameter, which fails on an
        # empty one (``rw_variances=()``, stored or new): clone with a stand-in, then restore it
        params = {**self._get_params(), **(new_params or {})}
        empty = [k for k, v in params.items() if isinstance(v, tuple) and not v]
        # (river's Base, which every estimator of the package mixes in after this class)
        clone = super().clone(  # type: ignore[misc]
            {**(new_params or {}), **dict.fromkeys(empty, [])}, False
        )
        for k in empty:
            setattr(clone, k, ())
        if include_attributes:
            # river deep-copies each attribute on its own, which makes two copies of an object
            # that two attributes name (an E-DOEBE's warm-up fallback is also its adaptor's
            # model): one deep copy of them all keeps it one object, as the original has it
            attributes = {k: v for k, v in self.__dict__.items() if k not in params}
            clone.__dict__.update(copy.deepcopy(attributes))
        return clone

    @property
    def n_samples_seen(self) -> int:
        """How many samples the model has learnt from."""
        model = self._model
        return 0 if model is None else model.n_updates

    @property
    def feature_names_in_(self) -> tuple:
        """The input features the model uses, in its order (see the input policy): empty before
        the first sample is learnt."""
        return () if self._schema is None else self._schema.names


class ArrayRegressor(ArrayEstimator):
    """The regression face: float targets, Gaussian or mixture predictive distributions.

    Array hooks (``z`` a sample's array, ``y`` its target): ``_predict_z(z) -> (mean, var)``,
    ``_dist_z(z)``, ``_learn_z(z, y)`` and ``_log_density_z(z, y)``.
    """

    def _predict_z(self, z: np.ndarray) -> tuple[float, float]:
        return self._model.predict(z)

    def _learn_z(self, z: np.ndarray, y: float) -> None:
        self._model.learn(z, y)

    def _log_density_z(self, z: np.ndarray, y: float) -> float:
        return self._model.log_density(z, y)

    def _dist_z(self, z: np.ndarray):
        """The predictive distribution for ``z``."""
        return self._predictive(*self._model.mixture(z))

    def _predictive(self, weights, means, variances, mean: float, var: float):
        """The predictive distribution from the mixture of the members that carry weight and
        its moments (what the engine's ``mixture`` gives, per sample or per row of a block): an
        ensemble's is the mixture of its members' Gaussians; a one-member learner overrides it
        with its Gaussian."""
        return distributions().GaussianMixture._from_moments(weights, means, variances, mean,
                                                             var)

    # river API -----------------------------------------------------------
    @overload
    def predict_one(self, x: dict, with_dist: Literal[False] = ...) -> float: ...

    @overload
    def predict_one(self, x: dict, with_dist: Literal[True]) -> ContinuousDistribution: ...

    @overload
    def predict_one(self, x: dict, with_dist: bool) -> float | ContinuousDistribution: ...

    def predict_one(self, x: dict, with_dist: bool = False) -> float | ContinuousDistribution:
        """The prediction for ``x``: the predictive mean, or with ``with_dist`` the predictive
        distribution (a ``river.proba.Gaussian`` for one learner, a
        :class:`~river_doebe.distributions.GaussianMixture` for an ensemble)."""
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).predict_one(x, with_dist=with_dist)
        try:
            if with_dist:
                return self._dist_z(z)
            return self._predict_z(z)[0]
        except FilterError as err:
            raise self._refused(err, x, "predict") from None

    def _predictive_arrays(self, x: dict):
        """The predictive for ``x`` as arrays, without building a distribution: ``(mean, var,
        log_weights, means, variances, scale, shift)``, whose mixture is ``sum_k
        exp(log_weights_k) N(means_k * scale + shift, variances_k * (scale * scale))`` (a
        log weight of ``-inf``: no component), and ``(mean, var)`` its moments; bit for bit the
        distribution of ``predict_one(x, with_dist=True)``, and its ``mu`` the value of
        ``predict_one(x)``. ``None`` when the model has no such view (then ask
        ``predict_one``). The arrays are the model's own, valid until it next predicts or
        learns.

        A private protocol of :class:`river_doebe.conf.Recalibrated`: a point prediction then
        needs no distribution object, and the recalibration's compiled update reads the
        arrays."""
        z = self._predict_array(x)
        if z is None:
            return None
        try:
            return self._predictive_view(z)
        except FilterError as err:
            raise self._refused(err, x, "predict") from None

    def _predictive_view(self, z: np.ndarray):
        """:meth:`_predictive_arrays` for the sample's array ``z`` (an engine in the target's
        units)."""
        return (*self._model.predictive(z), 1.0, 0.0)

    def learn_one(self, x: dict, y: float) -> None:
        y = check_target(y)
        z, undo = self._learn_array(x)
        try:
            self._learn_z(z, y)
        except FilterError as err:
            if undo is not None:
                undo()
            raise self._refused(err, x, "learn", y) from None

    def learn_many(self, X: pd.DataFrame | list[dict], y: pd.Series | list) -> None:
        """Learn the rows of a DataFrame (or a list of dicts) in order, in blocks: the model ends
        bit for bit as after ``learn_one`` row by row. Everything is validated first (a bad
        batch is refused as a whole, with the model unchanged); a row the filters cannot take
        safely raises :class:`river_doebe.engine.FilterError` naming its position, with the
        rows before it learnt."""
        self._many(X, y, False, want=False)

    # the block path (river_doebe.batch) -------------------------------------
    def _batch_targets(self, y, n: int):
        return check_targets(y, n)

    def _block_target_ok(self, target) -> bool:
        return True

    def _row(self, row, y, with_dist: bool, want: bool, is_frame: bool):
        if not is_frame:
            pred = self.predict_one(row, with_dist=with_dist) if want else None
            self.learn_one(row, float(y))
            return pred
        pred = None
        if want:
            pred = self._dist_z(row) if with_dist else self._predict_z(row)[0]
        self._learn_z(row, float(y))
        return pred

    def _run_block(self, Z, ys, with_dist: bool, want: bool):
        keep = want and with_dist
        a, b, extra = self._model.learn_block(Z, np.asarray(ys, dtype=np.float64), keep)
        if not want:
            return None
        if not with_dist:
            return a.tolist()
        log_prior, means, variances = extra
        out = []
        for t, (mean, var) in enumerate(zip(a.tolist(), b.tolist())):
            live = log_prior[t] > -np.inf
            out.append(self._predictive(np.exp(log_prior[t][live]), means[t][live],
                                        variances[t][live], mean, var))
        return out

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        """The predictive means of the rows of ``X``, each as ``predict_one`` gives it."""
        import pandas as pd

        check_frame(X)
        if self._schema is None:
            return self._ghost(X.columns).predict_many(X)
        Z = self._schema.frame_to_array(X, self._fill)
        means = [self._predict_z(Z[i])[0] for i in range(Z.shape[0])]
        return pd.Series(means, index=X.index, dtype=float)

    def log_density_one(self, x: dict, y: float) -> float:
        """Exact log density of ``y`` under the predictive for ``x``, before learning it.

        For an ensemble this is the mixture density ``log sum_m w_m N(y; mean_m, var_m)``, which
        is at least as high as the density of the moment-matched Gaussian of ``predict_one``.
        """
        y = check_target(y)
        z = self._predict_array(x)
        if z is None:
            return self._ghost(x.keys()).log_density_one(x, y)
        try:
            return self._log_density_z(z, y)
        except FilterError as err:
            raise self._refused(err, x, "predict") from None

    def _member_view(self, z: np.ndarray):
        """Each member's predictive ``(means, variances)`` and the weights for ``z``."""
        return self._model.member_predictions(z)

    def _replay_targets(self, ys: list) -> list[float]:
        return [check_target(t) for t in ys]


class ArrayClassifier(ArrayEstimator):
    """The classification face: two labels of any kind (:mod:`river_doebe.labels`), probabilities.

    Subclasses build ``self._engine`` (a :class:`river_doebe.engine.LogisticEngine`). Labels are
    coded 0/1; every river method goes through the array hooks ``_learn_z(z, code)`` and
    ``_predict_proba_z(z) -> (p0, p1)``.
    """

    _label_state: Labels | None = None
    update: str  # the host's parameter: the members' update step

    def _likelihood_options(self) -> dict:
        return {"update": self.update}

    @property
    def _labels(self) -> Labels:
        return self._label_state if self._label_state is not None else Labels()

    def _commit(self, state: Labels, flip: bool) -> None:
        if flip:
            self._model.flip()
        self._label_state = state

    def _predict_proba_z(self, z: np.ndarray) -> tuple[float, float]:
        return self._model.predict_proba(z)

    def _learn_z(self, z: np.ndarray, code: int) -> None:
        self._model.learn(z, code)

    def _replay_targets(self, ys: list) -> list[int]:
        """The label codes of a batch (the labels join the classifier's, as in learning)."""
        state = self._labels
        for label in ys:
            state, _, flip = state.encode(label)
            if flip:
                raise ValueError("a replay cannot relabel what the model has learnt")
        self._label_state = state
        return [state.encode(label)[1] for label in ys]

    def _member_view(self, z: np.ndarray):
        """Each member's ``predict_proba_one`` dict and the weights for ``z``."""
        P, w = self._model.member_probas(z)
        return [self._proba_dict(p0, p1) for p0, p1 in P.tolist()], w

    # river API -----------------------------------------------------------
    def learn_one(self, x: dict, y: Any) -> None:
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

    def learn_many(self, X: pd.DataFrame | list[dict], y: pd.Series | list) -> None:
        """Learn the rows of a DataFrame (or a list of dicts) in order, in blocks, bit for bit as
        ``learn_one`` row by row; everything is validated first (see
        :meth:`river_doebe.DOBE.learn_many`)."""
        self._many(X, y, False, want=False)

    # the block path (river_doebe.batch) -------------------------------------
    def _batch_targets(self, y, n: int) -> list:
        labels = y.tolist() if hasattr(y, "tolist") else list(y)
        if len(labels) != n:
            raise ValueError(f"got {n} rows of features but {len(labels)} labels")
        state = self._labels
        for i, label in enumerate(labels):  # refuses a bad (a missing) or a third label
            try:  # before anything changes
                state, _, _ = state.encode(label)
            except (TypeError, ValueError) as err:
                raise type(err)(f"row {i}: {err}; the batch is refused whole") from None
        return labels

    def _block_target_ok(self, label) -> bool:
        # a label that is not known yet may flip the codes: the per-sample path takes it
        return self._labels.encode(label)[0] is self._labels

    def _row(self, row, label, with_dist: bool, want: bool, is_frame: bool):
        if not is_frame:
            pred = self.predict_proba_one(row) if want else None
            self.learn_one(row, label)
            return pred
        pred = self._proba_dict(*self._predict_proba_z(row)) if want else None
        state, code, flip = self._labels.encode(label)
        self._commit(state, flip)
        self._learn_z(row, code)
        return pred

    def _run_block(self, Z, labels, with_dist: bool, want: bool):
        codes = np.array([self._labels.encode(label)[1] for label in labels], dtype=np.int64)
        p0, p1, _ = self._model.learn_block(Z, codes, False)
        if want:
            return [self._proba_dict(a, b) for a, b in zip(p0.tolist(), p1.tolist())]
        return None

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

    def predict_one(self, x: dict) -> Any:
        return argmax(self.predict_proba_one(x))

    def log_density_one(self, x: dict, y: Any) -> float:
        """Log predictive probability of the label ``y`` for ``x``, before learning it.

        For an ensemble this is ``log sum_m w_m p_m(y)``. ``y`` must be one of the labels that
        :meth:`predict_proba_one` reports.
        """
        y = check_label(y)
        proba = self.predict_proba_one(x)
        for label, p in proba.items():
            if same_label(label, y):
                return math.log(p) if p > 0 else -math.inf
        raise ValueError(f"{y!r} is not one of the labels {tuple(proba)!r} of this classifier")

    def predict_proba_many(self, X: pd.DataFrame) -> pd.DataFrame:
        """The probabilities of the labels for the rows of ``X``, each as
        ``predict_proba_one`` gives them."""
        import pandas as pd

        check_frame(X)
        if self._schema is None:
            return self._ghost(X.columns).predict_proba_many(X)
        Z = self._schema.frame_to_array(X, self._fill)
        P = np.array([self._predict_proba_z(Z[i]) for i in range(Z.shape[0])]).reshape(-1, 2)
        keys = self._labels.keys()
        if keys is None:
            return pd.DataFrame({self._labels.labels[0]: 1.0}, index=X.index, dtype=float)
        return pd.DataFrame({keys[0]: P[:, 0], keys[1]: P[:, 1]}, index=X.index)

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        """The most probable label of each row of ``X``."""
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
