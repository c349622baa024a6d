"""The engine of the classifiers: the member stack with a Bernoulli-logistic likelihood."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from river_doebe._checks import check_update
from river_doebe.engine.core import _WEIGHTS, BLOCK_COMPILE_SECONDS, Engine
from river_doebe.engine.members import Member
from river_doebe.engine.weighting import Weighting
from river_doebe.kernels.jit import Rented
from river_doebe.kernels.logistic import (
    logistic_block,
    logistic_block_parallel,
    logistic_update_stack,
    probit_logits,
)
from river_doebe.kernels.stack import flush_stack

__all__ = ["LogisticEngine"]

#: the classifiers' block kernel, rented as the regressors' is (see
#: :data:`river_doebe.engine.core._BLOCKS`)
_BLOCKS = Rented(BLOCK_COMPILE_SECONDS, logistic_block=logistic_block)


class LogisticEngine(Engine):
    """The member stack of :class:`Engine` with a Bernoulli-logistic likelihood.

    Members are given as :class:`Member` records whose ``var_eps`` is ignored (a
    Bernoulli likelihood has no noise variance). Labels enter as codes ``0``/``1``.

    Per member and step: the latent predictive ``N(a, s2)`` comes from the Gaussian predict kernel
    with ``var_eps = 0``; the member's predictive is ``p(y = 1) = sigmoid(a / sqrt(1 + pi s2 / 8))``
    and its log predictive of the observed label is what the weights use; the update is the
    one-sample Laplace step of :func:`river_doebe.kernels.logistic.logistic_update_stack`, or with
    ``update="ipl"`` its iterated posterior linearisation (:mod:`river_doebe.kernels.ipl`).
    """

    _positive_params = ("var_theta",)
    _scratch = Engine._scratch | {"logit", "_t", "_lam"}

    #: the members' update step (a class default: pickles from before the option load as it)
    update = "laplace"

    def __init__(self, members: list[Member], transition: ArrayLike | None = None,
                 weight_floor: float = 0.0, weighting: Weighting | None = None,
                 update: str = "laplace") -> None:
        check_update(update)
        members = [dataclasses.replace(m, var_eps=0.0) for m in members]
        super().__init__(members, transition, weight_floor, weighting)
        self.update = update

    def _allocate_scratch(self) -> None:
        super()._allocate_scratch()
        self.logit = np.zeros(self.M)
        self._t = np.zeros(self.M)
        self._lam = np.zeros(self.M)

    def _predict_extra(self) -> None:
        probit_logits(self.mean, self.var, self.logit)

    def _update_members(self, code: float) -> int:
        """Laplace step of every live member; writes ``self.loglik``."""
        return logistic_update_stack(
            self._kernel_params, self._kernel_state, self.V, self.mean, self.var, self.logit, code,
            self.loglik, self._t, self._lam, self.update == "ipl",
        )

    # ------------------------------------------------------------------ classifier views
    def predict_proba(self, z: np.ndarray) -> tuple[float, float]:
        """``(p(code 0), p(code 1))`` of the weighted stack, before learning the label of ``z``."""
        self._prepare(z)
        return _WEIGHTS.mixture_proba(self.log_prior, self.logit)

    def member_probas(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each member's ``(p(code 0), p(code 1))`` as an ``(M, 2)`` array (NaN rows for dead
        members) and the weights used for the prediction for ``z``, in the members' original
        order."""
        from scipy.special import expit

        self._prepare(z)
        P = expit(np.stack([-self.logit, self.logit], axis=1))
        return self._full(P), self._full(np.exp(self.log_prior), 0.0)

    def flip(self) -> None:
        """Swap the meaning of the codes 0 and 1.

        With a zero-mean prior the logistic filter is symmetric under ``theta -> -theta``,
        ``y -> 1 - y``: negating the means (and the cached latent means) is an exact relabelling.
        The owed updates are applied first, bit for bit as the next sweep would apply them:
        negating a mean and its owed step apart gives a zero another sign than negating their
        sum, which is what a prediction made before the flip (it applies them) leads to.
        """
        s = self.state
        if s.pend.any():
            flush_stack(self._kernel_params, self._kernel_state, self.E)
        s.mu[...] *= -1.0
        self.mean *= -1.0
        self.logit *= -1.0

    # ------------------------------------------------------------------ blocks
    _block_rent = (_BLOCKS, "logistic_block")

    def _block_kernel(self, parallel: bool) -> Callable[..., Any]:
        return logistic_block_parallel if parallel else logistic_block

    def _block_targets(self, Y: np.ndarray) -> np.ndarray:
        return np.asarray(Y, dtype=np.int64)

    def _block_outputs(self, B: int) -> tuple[np.ndarray, ...]:
        """``(mean, var, logit, loglik)``, each ``(B, M)``."""
        M = self.M
        return np.empty((B, M)), np.empty((B, M)), np.empty((B, M)), np.empty((B, M))

    def _block_args(self, order: np.ndarray, Phi3: np.ndarray, Y: np.ndarray,
                    outs: tuple[np.ndarray, ...], bad: np.ndarray, repair: bool | None) -> tuple:
        return (order, Phi3, self.src, Y, self._kernel_params, self._kernel_state, self.V, self.E,
                *outs, bad, self.status, self.update == "ipl", repair)

    def _row_prediction(self, z: np.ndarray) -> tuple[float, float]:
        return self.predict_proba(z)

    def _block_logits(self, out: tuple[np.ndarray, ...]) -> np.ndarray:
        return out[2]
