"""Basis expansions, each usable as an array featuriser and as a river transformer."""

from river_doebe.basis.base import Basis, stack_params
from river_doebe.basis.linear import Linear

__all__ = ["Basis", "Linear", "stack_params"]
