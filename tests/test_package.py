"""The package's face: what `from river_doebe import *` brings in, and what importing it loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import river_doebe

ROOT = Path(__file__).resolve().parents[1]
ESTIMATORS = ["DOBE", "DOBEClassifier", "DOEBE", "DOEBEClassifier", "EDOEBE",
              "EDOEBEClassifier", "SDOEBE", "SDOEBEClassifier"]


def test_star_import_brings_the_estimators_only():
    assert sorted(river_doebe.__all__) == ESTIMATORS
    namespace: dict = {}
    exec("from river import datasets, metrics\nfrom river_doebe import *", namespace)
    assert sorted(k for k in namespace if not k.startswith("__")) == sorted(
        ["datasets", "metrics", *ESTIMATORS]
    )
    # river's modules are not shadowed
    assert namespace["metrics"].__name__ == "river.metrics"
    assert namespace["datasets"].__name__ == "river.datasets"
    for name in ESTIMATORS:
        assert namespace[name] is getattr(river_doebe, name)


def test_submodules_import_by_name_and_as_attributes():
    from river_doebe import basis, datasets, distributions, metrics

    for module, name in ((basis, "basis"), (datasets, "datasets"),
                         (distributions, "distributions"), (metrics, "metrics")):
        assert isinstance(module, types.ModuleType)
        assert module.__name__ == f"river_doebe.{name}"
        assert getattr(river_doebe, name) is module
    assert river_doebe.cli.main is not None
    assert {"metrics", "datasets", "cli", "EDOEBE"} <= set(dir(river_doebe))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        river_doebe.nope  # noqa: B018


def test_importing_the_package_loads_only_what_streaming_needs():
    """No datasets, metrics, command line, warm-up fit or predictive distributions (river.proba,
    scipy.stats): a river user pays for them only when used."""
    code = (
        "import json, sys, river_doebe\n"
        "mods = ['river_doebe.datasets', 'river_doebe.metrics', 'river_doebe.cli',"
        " 'river_doebe.warmup.fit', 'river_doebe.distributions', 'river.datasets',"
        " 'river.metrics', 'river.proba', 'scipy.stats', 'scipy.optimize', 'tqdm', 'sklearn']\n"
        "print(json.dumps([m for m in mods if m in sys.modules]))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []


# ------------------------------------------------------------------ the layers
PACKAGE = ROOT / "river_doebe"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, name: str, modules) -> set[str]:
    """The package's modules that ``name`` imports anywhere (inside functions too)."""
    import ast

    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def test_no_import_cycle_among_the_modules():
    """Counting imports inside functions: the layers only ever import downwards."""
    modules = _modules()
    graph = {name: _imports(path, name, modules) for name, path in modules.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)

