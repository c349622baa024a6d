"""Collection of the doctests (``--doctest-modules`` over ``river_doebe``): the modules of
``river_doebe.distributed`` need Ray, an optional dependency, so they are left out where it is
not installed (e.g. the lowest-versions environment of ``.ci/run``)."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("ray") else ["river_doebe/distributed"]
