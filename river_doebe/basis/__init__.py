"""Basis expansions, each usable as an array featuriser and as a river transformer."""

from river_doebe.basis.base import Basis, stack_params
from river_doebe.basis.bspline import BSpline
from river_doebe.basis.hsgp import HilbertGP
from river_doebe.basis.linear import Linear
from river_doebe.basis.polynomial import AdditivePolynomial
from river_doebe.basis.rbf import RBFNetwork
from river_doebe.basis.rff import RandomFourierFeatures

__all__ = [
    "AdditivePolynomial",
    "Basis",
    "BSpline",
    "HilbertGP",
    "Linear",
    "RBFNetwork",
    "RandomFourierFeatures",
    "stack_params",
]
