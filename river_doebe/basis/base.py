"""The contract every basis expansion follows, and the shared machinery behind it.

A basis ``phi: R^D -> R^F`` has two faces:

- an **array face**, used by the learners and the evidence code: :meth:`Basis.featurize` on an
  ``(n, D)`` array, :meth:`Basis.featurize_one` through the jitted kernel, and the hyperparameters
  as an unconstrained vector (:meth:`Basis.get_hyper`, :meth:`Basis.with_hyper`,
  :meth:`Basis.hyper_vjp`, :meth:`Basis.hyper_bounds`);
- a **river face**: a :class:`river.base.Transformer` whose ``transform_one`` returns a dict with
  stable feature names, so the basis can stand alone in a pipeline.

Each family writes one Numba kernel that featurises a *stack* of members of that family, for a
block of inputs at once::

    kernel(Z, Phi, rows, *stacked)

``Z`` is the ``(B, D)`` block of inputs (one row for a single sample), ``Phi`` the
``(M, B, F_max)`` output of the whole ensemble (member-major: a member's features for the block
are contiguous, as the member-major filter reads them), ``rows[k]`` the member of ``Phi`` that
member ``k`` of the family fills (it writes its first ``F_k`` columns and leaves the rest alone),
and ``stacked`` the members' parameter arrays
(from :meth:`Basis._params`), each with a leading member axis and zero-padded to the largest
member. A single learner is a stack of one. The loop over the members is a ``numba.prange``: the
kernel is compiled once for one thread (``_kernel``) and once for all of them
(``_kernel_parallel``, :func:`river_doebe.kernels.jit.stack_kernel`), with the same numbers.
"""

from __future__ import annotations

import abc
import numbers

import numpy as np
from river import base

from river_doebe._schema import Schema

__all__ = ["Basis", "stack_params"]


def stack_params(per_member: list[tuple]) -> tuple:
    """Stack per-member parameter tuples along a new leading axis, zero-padding ragged shapes."""
    n_params = len(per_member[0])
    out = []
    for i in range(n_params):
        arrays = [np.asarray(p[i]) for p in per_member]
        ndim = arrays[0].ndim
        shape = tuple(max(a.shape[d] for a in arrays) for d in range(ndim))
        dtype = np.result_type(*arrays)
        stacked = np.zeros((len(arrays), *shape), dtype=dtype)
        for k, a in enumerate(arrays):
            stacked[(k, *(slice(0, s) for s in a.shape))] = a
        out.append(np.ascontiguousarray(stacked))
    return tuple(out)


class Basis(base.Transformer, abc.ABC):
    """Base class of the basis expansions: the whole contract, declared here. Abstract.

    A family must implement:

    - ``_init(n_inputs)``: everything that needs the input dimension (random draws, defaults);
    - ``n_outputs`` (property): the number of features ``F``;
    - ``_kernel`` and ``_kernel_parallel`` (a jitted stack kernel and its parallel twin, see the
      module's docstring) and ``_params()`` (this member's parameter arrays for them);
    - ``featurize(Z)`` (vectorised NumPy, equal to the kernel up to rounding) and
      ``feature_names()``.

    Optional hooks, with their defaults here:

    - ``_fit(Z)``: data-dependent settings from a batch (none);
    - the hyperparameters for the evidence, ``get_hyper()``, ``with_hyper(psi)``,
      ``hyper_bounds()``, ``hyper_names()``, ``hyper_vjp(Z, G)`` (none; a ``hyper_vjp`` that
      also takes ``Phi=None`` is given ``featurize(Z)`` by the evidence, which has it at hand,
      and must return the same as without it);
    - :attr:`laplace_ok` (``True``) and :attr:`start_floor` (``0``), read by the empirical-Bayes
      fit;
    - :meth:`hyper_start` (the empirical-Bayes starts of hyperparameters other than length
      scales: none);
    - ``_observe(z)`` and :attr:`wants_observations` (a basis that changes with the samples a
      learner learns from: none);
    - :attr:`can_grow` and ``_grow(n_inputs)`` (a basis that can take new inputs exactly: no;
      every family of the package can).

    A basis may be set up for 0 inputs (a first sample with no active feature): its features
    are then those of the empty input (none, or constants), and it grows from there.
    """

    #: whether a Laplace approximation over this family's hyperparameters is affordable
    laplace_ok: bool = True

    #: the empirical-Bayes fit keeps each start's length scales at least this fraction of their
    #: starting value (see :func:`river_doebe.warmup.empirical_bayes.fit_hyperparameters`);
    #: 0: no such bound
    start_floor: float = 0.0

    # ------------------------------------------------------------------ lifecycle
    @property
    def n_inputs(self) -> int | None:
        return getattr(self, "_n_inputs", None)

    @property
    def is_initialized(self) -> bool:
        return self.n_inputs is not None

    def initialize(self, n_inputs: int) -> Basis:
        """Fix the input dimension (idempotent for the same dimension)."""
        n_inputs = int(n_inputs)
        if n_inputs < 0:
            raise ValueError(f"the number of inputs cannot be negative, got {n_inputs}")
        if self.n_inputs is None:
            self._init(n_inputs)
            self._n_inputs = n_inputs
        elif self.n_inputs != n_inputs:
            raise ValueError(
                f"{type(self).__name__} was set up for {self.n_inputs} inputs, got {n_inputs}"
            )
        return self

    def fit(self, Z) -> Basis:
        """Set data-dependent settings (boundaries, centres) from a batch ``Z`` of shape (n, D)."""
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2:
            raise ValueError("fit expects a 2-D array of shape (n_samples, n_inputs)")
        self.initialize(Z.shape[1])
        self._fit(Z)
        return self

    @abc.abstractmethod
    def _init(self, n_inputs: int) -> None:
        """Set up everything that needs the input dimension."""

    def _fit(self, Z: np.ndarray) -> None:
        return None

    def _observe(self, z: np.ndarray) -> bool | None:
        """Online hook: a learner calls it with each sample it learns from (default: nothing).

        A family whose kernel parameters change here (the RBF network placing its centres online)
        returns ``True`` when they did, so a learner holding stacked parameters knows to restack,
        and overrides :attr:`wants_observations` to stay ``True`` while this can happen.
        """
        return None

    @property
    def wants_observations(self) -> bool:
        """Whether :meth:`_observe` can still change the basis (default: never)."""
        return False

    # ------------------------------------------------------------------ growth
    @property
    def can_grow(self) -> bool:
        """Whether the basis can take new inputs exactly (see :meth:`grow`); default: no."""
        return False

    def grow(self, n_inputs: int) -> np.ndarray:
        """Take ``n_inputs`` inputs instead of :attr:`n_inputs`; the new ones come last.

        Only for a basis whose features of any input with the new coordinates at 0 are the old
        features of that input, bit for bit and in the same relative order, with every new
        feature exactly 0 there (a learner can then add the new weights to its posterior
        exactly: the past samples had the new inputs at 0). Returns the position of each old
        feature in the new feature vector (increasing).

        A new input enters as the inputs the basis was set up with: drawn from the same prior
        (random frequencies), at the same place (centres at 0 in it), with the shared length
        scale, or with ARD length scales the value the families start from,
        :data:`NEW_INPUT_LENGTHSCALE` (``1``: the E-DOEBE's members see standardised inputs).
        An additive family whose features are not 0 at 0 (the Hilbert-space GP, the splines)
        gives a new input the component ``f_d(x_d) - f_d(0)``: its prior pinned at 0, where
        the past samples had it.
        """
        D = self._require_initialized("grow")
        n_inputs = int(n_inputs)
        if not self.can_grow:
            raise TypeError(
                f"{type(self).__name__} cannot take new inputs exactly (set up for {D})"
            )
        if n_inputs <= D:
            raise ValueError(f"cannot grow from {D} to {n_inputs} inputs")
        positions = np.asarray(self._grow(n_inputs), dtype=np.int64)
        self._n_inputs = n_inputs
        return positions

    def _grow(self, n_inputs: int) -> np.ndarray:
        """The growth of a family whose :attr:`can_grow` is true (see :meth:`grow`)."""
        raise NotImplementedError(f"{type(self).__name__} says it can grow but has no _grow")

    # ------------------------------------------------------------------ array face
    @property
    @abc.abstractmethod
    def n_outputs(self) -> int:
        """The number of features ``F``."""

    @staticmethod
    @abc.abstractmethod
    def _kernel(Z, Phi, rows, *stacked):
        """The jitted stack kernel (see the module's docstring)."""

    @staticmethod
    @abc.abstractmethod
    def _kernel_parallel(Z, Phi, rows, *stacked):
        """The stack kernel with its member loop on every thread (the same numbers)."""

    @abc.abstractmethod
    def _params(self) -> tuple:
        """This member's parameter arrays for :meth:`_kernel`."""

    @abc.abstractmethod
    def featurize(self, Z) -> np.ndarray:
        """The features of every row of ``Z (n, D)``, as an ``(n, F)`` array."""

    def featurize_one(self, z) -> np.ndarray:
        """One row through the jitted kernel (the streaming path)."""
        z = np.ascontiguousarray(z, dtype=np.float64)
        self.initialize(z.shape[0])
        out = np.zeros((1, 1, self.n_outputs))
        self._kernel(z[None, :], out, _ROW0, *stack_params([self._params()]))
        return out[0, 0]

    @abc.abstractmethod
    def feature_names(self) -> list[str]:
        """The names of the features (the keys of :meth:`transform_one`)."""

    # ------------------------------------------------------------------ hyperparameters
    def get_hyper(self) -> np.ndarray:
        return np.zeros(0)

    def with_hyper(self, psi) -> Basis:
        """A new, initialised basis with hyperparameters ``psi``; its constructor parameters
        determine it fully, so it survives ``clone``."""
        if len(psi):
            raise ValueError(f"{type(self).__name__} has no hyperparameters")
        return self

    def hyper_bounds(self) -> list[tuple[float | None, float | None]]:
        return []

    def hyper_names(self) -> list[str]:
        return []

    def hyper_vjp(self, Z, G) -> np.ndarray:
        """``sum_{n,f} G[n, f] * d Phi[n, f] / d psi``, the chain-rule step of the evidence."""
        return np.zeros(0)

    def hyper_start(self, Z, scale) -> np.ndarray | None:
        """The ``psi`` that the empirical-Bayes start ``scale`` begins from on the warm-up batch
        ``Z``, for a family whose hyperparameters are not length scales; ``None`` (the default):
        the current ``psi`` with every log length scale at ``log(scale * range(Z[:, d]))``."""
        return None

    # ------------------------------------------------------------------ river face
    def learn_one(self, x: dict) -> None:
        schema = getattr(self, "_schema", None)
        if schema is not None and self.can_grow:
            new = schema.new_names(x)
            if new:
                grown = schema.extend(new)
                z = grown.to_array(x)  # validated before anything changes
                self.grow(len(grown))
                self._schema = grown
                self._observe(z)
                return
        self._observe(self._to_array(x))

    def transform_one(self, x: dict) -> dict:
        z = self._to_array(x)
        return dict(zip(self.feature_names(), self.featurize_one(z).tolist(), strict=True))

    def transform_many(self, X):
        """Featurise a pandas DataFrame: one row of features per row of ``X``, the same values
        and column names as :meth:`transform_one` on each row, with ``X``'s index."""
        import pandas as pd

        schema = getattr(self, "_schema", None)
        if schema is None:
            schema = Schema(X.columns)
            Z = schema.frame_to_array(X)
            self.initialize(len(schema))
            self._schema = schema
        else:
            Z = schema.frame_to_array(X)
        # through the streaming kernel, a block of rows at once: what transform_one gives
        Phi = np.zeros((1, len(Z), self.n_outputs))
        self._kernel(np.ascontiguousarray(Z, dtype=np.float64), Phi, _ROW0,
                     *stack_params([self._params()]))
        return pd.DataFrame(Phi[0], index=X.index, columns=self.feature_names())

    # ------------------------------------------------------------------ shared helpers
    def _input_names(self) -> list[str]:
        """Names of the inputs: the schema's when the river face fixed one, else ``x<d>``."""
        schema = getattr(self, "_schema", None)
        if schema is not None:
            return [str(n) for n in schema.names]
        return [f"x{d}" for d in range(self.n_inputs)]

    def _require_initialized(self, what: str) -> int:
        if self.n_inputs is None:
            raise RuntimeError(
                f"{type(self).__name__}.{what} needs the input dimension: call initialize(D), "
                "fit(Z) or featurize(Z) first"
            )
        return self.n_inputs

    def _as_batch(self, Z) -> np.ndarray:
        """``Z`` as a float64 ``(n, D)`` array, initialising the basis on first sight."""
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2:
            raise ValueError("expected a 2-D array of shape (n_samples, n_inputs)")
        self.initialize(Z.shape[1])
        return Z

    def _copy_face(self, other: Basis) -> Basis:
        """Initialise ``other`` like ``self`` and give it the same river-face schema."""
        other.initialize(self.n_inputs)
        schema = getattr(self, "_schema", None)
        if schema is not None:
            other._schema = schema
        return other

    def _to_array(self, x: dict) -> np.ndarray:
        schema = getattr(self, "_schema", None)
        if schema is None:
            schema = self._schema = Schema.from_sample(x)
            self.initialize(len(schema))
        return schema.to_array(x)


class _PositiveHyperBasis(Basis):
    """A family whose hyperparameters are the logs of one positive parameter, shared (a number)
    or one per input (a sequence): the length scales of the Hilbert-space GP, the smoothness of
    the P-splines.

    The family sets ``_hyper_name`` and ``_hyper_bound`` (the bounds of each log), holds the
    validated value in ``_hyper_value`` (0-d or 1-d) and its per-input broadcast in
    ``_hyper_per_input`` once initialised, and builds its tuned copy in ``_rebuilt(value)``
    (``value`` in the constructor's form, a float or a tuple of floats).
    """

    _hyper_name: str
    _hyper_bound: tuple[float, float]

    @property
    def _ard(self) -> bool:
        return self._hyper_value.ndim == 1

    def _rebuilt(self, value) -> Basis:
        raise NotImplementedError

    def get_hyper(self):
        self._require_initialized("get_hyper")
        return _log_positive(self._hyper_value, self._hyper_per_input)

    def with_hyper(self, psi):
        D = self._require_initialized("with_hyper")
        if self._n_base != D:
            raise RuntimeError(
                f"{type(self).__name__} grew from {self._n_base} to {D} inputs: its later "
                "inputs are pinned at 0, which its constructor cannot express; refit a basis set "
                f"up for all {D} inputs instead"
            )
        psi = _psi_vector(psi, D if self._ard else 1)
        return self._copy_face(self._rebuilt(_lengthscale_param(psi, self._ard)))

    def hyper_bounds(self):
        D = self._require_initialized("hyper_bounds")
        return [self._hyper_bound] * (D if self._ard else 1)

    def hyper_names(self):
        self._require_initialized("hyper_names")
        if self._ard:
            return [f"{self._hyper_name}_{n}" for n in self._input_names()]
        return [self._hyper_name]


def _check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_choice(value, name: str, choices) -> str:
    """Validate a string option: one of ``choices`` (a list, dict or set is refused with a
    message naming the parameter, not NumPy's or Python's own)."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose one of {sorted(choices)}")
    return value


def _check_lengthscale(value, name: str = "lengthscale") -> np.ndarray:
    """Validate a scalar or ARD length scale; return it as a float64 array (0-d or 1-d)."""
    if isinstance(value, str | bytes | bool):
        raise ValueError(f"{name} must be a positive number or a sequence of them, got {value!r}")
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a positive number or a sequence of them, got {value!r}"
        ) from None
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(f"{name} must be a positive number or a 1-D sequence of them")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and positive, got {value!r}")
    return arr


def _lengthscale_vector(arr: np.ndarray, n_inputs: int, name: str = "lengthscale") -> np.ndarray:
    """Broadcast a validated length scale to one value per input dimension."""
    if arr.ndim == 1 and arr.shape[0] != n_inputs:
        raise ValueError(
            f"{name} has {arr.shape[0]} values but the input has {n_inputs} dimensions"
        )
    return np.broadcast_to(arr, (n_inputs,)).astype(np.float64)


def _lengthscale_param(log_ls: np.ndarray, ard: bool):
    """The constructor value for log length scales: a float, or a tuple of floats (ARD)."""
    ls = np.exp(np.asarray(log_ls, dtype=np.float64))
    return tuple(float(v) for v in ls) if ard else float(ls[0])


def _log_positive(values: np.ndarray, per_input: np.ndarray) -> np.ndarray:
    """``psi`` of a positive parameter given as a number or one per input: its log, or the logs
    of its per-input values."""
    return np.log(per_input) if values.ndim == 1 else np.log(values).reshape(1)


def _psi_vector(psi, n: int) -> np.ndarray:
    """``psi`` as a float64 vector, refused unless it has ``n`` entries."""
    psi = np.asarray(psi, dtype=np.float64).ravel()
    if psi.shape[0] != n:
        raise ValueError(f"expected {n} hyperparameters, got {psi.shape[0]}")
    return psi


def _cotangent(G, n_rows: int, n_outputs: int) -> np.ndarray:
    """The ``G`` of :meth:`Basis.hyper_vjp` as a float64 array, refused unless it is
    ``(n_rows, n_outputs)``."""
    G = np.asarray(G, dtype=np.float64)
    if G.shape != (n_rows, n_outputs):
        raise ValueError(f"G must have shape {(n_rows, n_outputs)}, got {G.shape}")
    return G


_LOG_LS_BOUNDS = (float(np.log(1e-6)), float(np.log(1e2)))

#: the length scale (a spline's smoothness) of an input that joins a basis with one value per
#: input: where the families' templates start (:mod:`river_doebe.warmup.families`), in the
#: standardised units an E-DOEBE's members see
NEW_INPUT_LENGTHSCALE = 1.0


def _grown_per_input(values: np.ndarray, shared: np.ndarray, n_inputs: int) -> np.ndarray:
    """Per-input values of a shared (0-d) or per-input (1-d) parameter after growth to
    ``n_inputs``: the shared value for every input, or the old values (untouched) followed by
    :data:`NEW_INPUT_LENGTHSCALE`."""
    if shared.ndim == 0:
        return np.broadcast_to(shared, (n_inputs,)).astype(np.float64)
    return np.r_[values, np.full(n_inputs - values.shape[0], NEW_INPUT_LENGTHSCALE)]

_ROW0 = np.zeros(1, dtype=np.int64)
