"""How an ensemble's weights learn: Bayesian model averaging or online stacking, with an optional
fixed share. One small record, read by the engine and built from an estimator's parameters.

**Model averaging** (``"bma"``, the paper's rule) multiplies each weight by its member's predictive
density of the target: the weights are the members' posterior probabilities, which converge to
the single member with the highest evidence, so the mixture can never beat its best member in log
score.

**Online stacking** (``"stacking"``) looks for the weights of the *mixture* that maximise the
cumulative log predictive density ``sum_t log sum_m w_m p_m(y_t)`` over the simplex (Yao et al.
2018), a concave objective. The Soft-Bayes step of Orseau, Lattimore and Legg (2017),
``w_m <- w_m (1 - eta + eta r_m)`` with ``r_m = p_m(y) / sum_k w_k p_k(y)``, moves the weights a
share ``eta`` of the way that Bayes' rule would (``eta = 1`` is Bayes' rule), costs O(M) per
sample, and needs no bound on the densities. Its regret against any fixed mixture ``u`` obeys,
for ``eta <= 1/2``::

    sum_t log(<u, p_t> / <w_t, p_t>) <= KL(u || w_1) / eta + eta * sum_t sum_m u_m (r_tm - 1)^2

(``log <u, r> <= <u, r> - 1``, then ``log(1 + z) >= z - z^2`` for ``z >= -1/2`` in the
telescoping sum of ``KL(u || w_t)``). A step that mixes the weights with a switching matrix whose
diagonal is at least ``1 - a`` (the E-DOEBE's twins) or with the uniform (``share = a``) raises
each ``KL(u || w_t)`` by at most ``log(1 / (1 - a))``, which adds ``T log(1 / (1 - a)) / eta`` to
the bound: the price of tracking a mixture that drifts.

**Fixed share** (``share = a``, Herbster and Warmuth 1998) mixes the weights with the uniform
before each prediction, ``w <- (1 - a) w + a / M``, so no member's weight falls below ``a / M``
and every member stays in the stack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from river_doebe._checks import WEIGHTINGS, check_weighting

__all__ = ["STACKING_RATE", "WEIGHTINGS", "Weighting"]

#: the default Soft-Bayes rate of online stacking (benchmarks/reproduce.py, the stacking experiment)
STACKING_RATE = 0.05

@dataclass(frozen=True)
class Weighting:
    """The weight rule of an ensemble: ``rule`` (``"bma"`` or ``"stacking"``), the Soft-Bayes
    ``rate`` (used by stacking only) and the fixed ``share`` (0: none)."""

    rule: str = "bma"
    rate: float = 1.0
    share: float = 0.0

    def __post_init__(self) -> None:
        check_weighting(self.rule, self.rate, self.share)  # the estimators' own checks

    @property
    def step(self) -> tuple[float, float]:
        """``(log eta, log(1 - eta))`` for :func:`~river_doebe.kernels.weights.update_log_weights`
        (Bayes' rule: ``(0, -inf)``)."""
        eta = self.rate if self.rule == "stacking" else 1.0
        return math.log(eta), (math.log1p(-eta) if eta < 1.0 else -np.inf)

    def mixing(self, n_members: int) -> tuple[float, float]:
        """``(log(1 - share), log(share / M))`` for
        :func:`~river_doebe.kernels.weights.share_log_weights` (no share: ``(0, -inf)``)."""
        if self.share == 0.0:
            return 0.0, -np.inf
        return math.log1p(-self.share), math.log(self.share / n_members)
