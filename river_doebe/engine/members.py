"""What an engine is built from: the member record and the switching matrices."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from river_doebe.basis.base import Basis

__all__ = [
    "WEIGHT_FLOOR",
    "FilterError",
    "Member",
    "csc_transition",
    "edoebe_transition",
    "twin_members",
]


@dataclass
class Member:
    """One member of a stack: its basis, its variances and its random walk.

    A member found by an empirical-Bayes warm-up also says where it came from: its basis
    ``family`` (the class name), the index of the evidence mode (start) it belongs to, and
    whether it is that mode or a draw around it.
    """

    basis: Basis
    var_theta: float
    var_eps: float
    var_rw: float = 0.0
    family: str | None = None
    mode_index: int | None = None
    is_mode: bool | None = None


class FilterError(ValueError):
    """A sample the filters cannot take safely; the model's state is unchanged."""

    #: set by a block path (:meth:`~river_doebe.engine.Engine.learn_block`) only: how many rows
    #: of the block, those before the refused one, were learnt
    rows_learnt: int
    #: with it: what :meth:`~river_doebe.engine.Engine.learn_block` returns for those rows (their
    #: one-step-ahead predictions, made before each was learnt)
    learnt: tuple
    #: with it: why the refused row was refused (the message without the row)
    reason: str
    #: set by a batch of a model (``learn_many``, ``predict_learn_many``): the refused row's
    #: position in the batch, and the message without it (``detail``)
    row: int
    detail: str


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


def twin_members(members: list[Member], levels: Iterable[float],
                 noise_levels: Iterable[float] = (1.0,)) -> list[Member]:
    """The E-DOEBE's blocks: one copy of every member per random-walk level (the last level is
    the static one), each with its own basis; :func:`edoebe_transition` switches between them.
    With several ``noise_levels`` (multipliers of each member's noise variance), those blocks
    once per noise level, in its order."""
    levels = list(levels)
    return [
        dataclasses.replace(m, basis=copy.deepcopy(m.basis), var_rw=level,
                            var_eps=m.var_eps * scale if scale != 1.0 else m.var_eps)
        for scale in noise_levels
        for level in levels
        for m in members
    ]


#: the ensembles' default weight floor: a member is dropped only when it would need
#: ``-log(1e-100)``, about 230 nats, of relative evidence to come back (the paper: 1e-16)
WEIGHT_FLOOR = 1e-100


def csc_transition(Q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Q``'s positive entries column by column, in logs: the switching kernel's form (no
    checks: a stack that lost members keeps the rows and columns of the others)."""
    M = Q.shape[0]
    indptr = np.zeros(M + 1, dtype=np.int64)
    indices, log_q = [], []
    for j in range(M):
        rows = np.flatnonzero(Q[:, j] > 0)
        indices.extend(rows.tolist())
        log_q.extend(np.log(Q[rows, j]).tolist())
        indptr[j + 1] = len(indices)
    return indptr, np.asarray(indices, dtype=np.int64), np.asarray(log_q, dtype=np.float64)
