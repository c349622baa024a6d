"""Collection of the doctests (``--doctest-modules`` over ``river_doebe``): the modules of
``river_doebe.distributed`` need Ray, an optional dependency, so they are left out where it is
not installed (e.g. the lowest-versions environment of ``.ci/run``); where it is, their doctests
start a Ray cluster, so they carry the ``ray`` marker (left out of the default run, run by
``.ci/run`` with ``-m "slow or ray"``)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

collect_ignore = [] if importlib.util.find_spec("ray") else ["river_doebe/distributed"]

_DISTRIBUTED = pathlib.Path(__file__).resolve().parent / "river_doebe" / "distributed"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.DoctestItem) and _DISTRIBUTED in item.path.parents:
            item.add_marker(pytest.mark.ray)
