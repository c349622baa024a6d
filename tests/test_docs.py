"""The API reference of the site covers every public class and function of the package.

The pages under ``docs/api/`` render objects with mkdocstrings directives (``::: path``, with an
optional ``members`` list). A name is public when a public module (no part of its path starts
with ``_``) defines it and lists it in its ``__all__``; every such name must be rendered by some
directive: the module's own (which renders its ``__all__``), one naming it in ``members``, or one
on the object itself. Read from the sources, without importing the package or building the site
(``mkdocs build --strict`` in ``.ci/run`` checks the rest: references, links, notebooks).
"""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "river_doebe"
API = ROOT / "docs" / "api"

_DIRECTIVE = re.compile(r"^::: ([\w.]+)\n((?:[ \t]+.*\n|\n)*)", re.MULTILINE)
_MEMBERS = re.compile(r"^\s+members:\s*(.+)$", re.MULTILINE)


def _module_path(file: pathlib.Path) -> str:
    parts = list(file.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _defined_exports(file: pathlib.Path) -> set[str]:
    """The names of ``__all__`` that the module defines itself (not re-exports)."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    exports: set[str] = set()
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if "__all__" in names and node.value is not None:
                exports = {ast.literal_eval(e) for e in node.value.elts}
            defined |= names
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
    return exports & defined


def public_names() -> set[str]:
    names = set()
    for file in PACKAGE.rglob("*.py"):
        module = _module_path(file)
        if any(part.startswith("_") for part in module.split(".")):
            continue
        names |= {f"{module}.{name}" for name in _defined_exports(file)}
    return names


def rendered_names() -> set[str]:
    names = set()
    for page in API.glob("*.md"):
        for target, options in _DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            members = _MEMBERS.search(options)
            if members is None:
                names.add(target)  # the object itself, or a module and its __all__
                file = PACKAGE.parent / (target.replace(".", "/") + ".py")
                package = PACKAGE.parent / target.replace(".", "/") / "__init__.py"
                for source in (file, package):
                    if source.is_file():
                        names |= {f"{target}.{n}" for n in _defined_exports(source)}
            elif members.group(1).strip().startswith("["):
                listed = members.group(1).strip()[1:-1].split(",")
                names |= {f"{target}.{n.strip()}" for n in listed if n.strip()}
    return names


def test_the_api_reference_renders_every_public_name():
    missing = sorted(public_names() - rendered_names())
    assert not missing, (
        "public classes and functions missing from the API reference (docs/api/*.md): "
        + ", ".join(missing)
    )


def _defined_names(module: str) -> set[str]:
    """Every top-level name that ``module`` defines (a class, a function, an assignment)."""
    base = PACKAGE.parent / module.replace(".", "/")
    file = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not file.is_file():
        return set()
    names = set()
    for node in ast.parse(file.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_the_api_reference_names_only_what_exists():
    modules = {_module_path(f) for f in PACKAGE.rglob("*.py")}
    unknown = sorted(
        name
        for name in rendered_names()
        if name not in modules and name.rpartition(".")[2] not in _defined_names(
            name.rpartition(".")[0]
        )
    )
    assert not unknown, f"the API pages render names the package does not define: {unknown}"


README = ROOT / "README.md"
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_fits_a_newcomer_and_links_into_the_site():
    """The README is what a newcomer reads on one screen or three (the manual is the site):
    at most 1,500 words, and every relative link it makes leads to a file of the repository."""
    text = README.read_text(encoding="utf-8")
    assert len(text.split()) <= 1500
    targets = [t for t in _LINK.findall(text) if not t.startswith(("http://", "https://"))]
    assert any(t.startswith("docs/") for t in targets)
    assert [t for t in targets if not (ROOT / t).exists()] == []


def test_the_readme_quick_start_is_what_ci_runs():
    """The README's test command is the first command of ``.ci/run`` (the quick start stays
    true)."""
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = 'pip install ".[test,notebooks]" && python -m pytest'
    assert command in readme
    assert command in ci
    assert "pip install . && river-doebe evaluate" in readme
