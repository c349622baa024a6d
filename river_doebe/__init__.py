"""river-doebe: dynamic online ensembles of basis expansions for river.

The estimators are river regressors: :class:`DOBE` (one Bayesian basis-expansion learner),
:class:`DOEBE` (Bayesian model averaging), :class:`SDOEBE` (switching weights) and
:class:`EDOEBE` (the ensemble of static and dynamic twins of Waxman & Djuric, 2024), and their
classifiers (a logistic likelihood with a per-step Laplace approximation).
"""

from river_doebe import basis, datasets, distributions, metrics
from river_doebe.classification import (
    DOBEClassifier,
    DOEBEClassifier,
    EDOEBEClassifier,
    SDOEBEClassifier,
)
from river_doebe.ensemble import DOEBE, EDOEBE, SDOEBE
from river_doebe.learner import DOBE

__all__ = [
    "DOBE",
    "DOBEClassifier",
    "DOEBE",
    "DOEBEClassifier",
    "EDOEBE",
    "EDOEBEClassifier",
    "SDOEBE",
    "SDOEBEClassifier",
    "basis",
    "datasets",
    "distributions",
    "metrics",
]
__version__ = "0.1.0"
