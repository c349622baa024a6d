"""A Griffe extension that lets mkdocstrings render river-doebe's docstrings as river's site does.

The docstrings follow river's conventions (numpydoc sections, ``>>>`` examples, references as
``[^1]:`` lines) and cross-reference with Sphinx roles (``:class:`~river_doebe.DOBE```). Griffe
reads the numpydoc sections itself; this extension does the rest, once the package is loaded:

- **Runtime docstrings.** A few docstrings are completed when their module is imported (the
  datasets build theirs from class attributes). Griffe reads the source, so such an object gets
  the docstring that Python sees.
- **Roles.** ``:class:`X```, ``:func:``, ``:meth:``, ``:attr:``, ``:mod:`` and ``:data:`` become
  links to the API reference. ``X`` is resolved as Python would in the docstring's scope (the
  module's names and imports, the class's members), so ``:class:`Engine``` in the engine's
  modules links to ``river_doebe.engine.core.Engine``. A public target must be on the site (else
  the strict build fails on the missing reference); a private one (a name starting with ``_``)
  links when it is rendered and is plain code otherwise; one outside the package (NumPy, river) is
  plain code. A role whose target does not resolve at all is reported, which fails the strict
  build.
- **References.** The ``[^k]`` footnotes of a docstring cannot work as Markdown footnotes, since
  mkdocstrings renders each docstring section on its own: the markers become superscript links
  to a numbered list under the References heading.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re

import griffe

logger = griffe.get_logger("griffe_river")

PACKAGE = "river_doebe"

_ROLE = re.compile(r":(class|func|meth|attr|mod|data|obj|exc):`(~?)([.\w{}]+)`")
_REF_DEFINITION = re.compile(r"^(\s*)\[\^(\d+)\]:\s?", re.MULTILINE)
_REF_MARKER = re.compile(r"\[\^(\d+)\]")


class RiverDocstrings(griffe.Extension):
    """Runtime docstrings, Sphinx roles as links, and references (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._done: set[int] = set()

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs) -> None:
        if pkg.name != PACKAGE or id(pkg) in self._done:
            return
        self._done.add(id(pkg))
        self.loader = loader
        self.pkg = pkg
        for obj in _walk(pkg):
            self._runtime_docstring(obj)
            if obj.docstring is not None:
                value = _references(_doctests(obj.docstring.value), obj.path)
                obj.docstring.value = _ROLE.sub(lambda m, o=obj: self._role(o, m), value)

    # Griffe 1.x names the event of a loaded package so
    on_package_loaded = on_package

    # ------------------------------------------------------------------ runtime docstrings
    def _runtime_docstring(self, obj) -> None:
        if not (obj.is_class or obj.is_function):
            return
        runtime = _runtime_object(obj.path)
        doc = getattr(runtime, "__doc__", None)
        if not isinstance(doc, str):
            return
        doc = inspect.cleandoc(doc)
        if obj.docstring is not None and _same(obj.docstring.value, doc):
            return
        if obj.docstring is None and obj.is_function:
            return  # a function without a docstring of its own (a Numba wrapper's, say)
        old = obj.docstring
        obj.docstring = griffe.Docstring(
            doc,
            lineno=old.lineno if old else None,
            endlineno=old.endlineno if old else None,
            parent=obj,
            parser=self.loader.docstring_parser,
            parser_options=self.loader.docstring_options,
        )

    # ------------------------------------------------------------------ roles
    def _role(self, obj, match: re.Match) -> str:
        role, tilde, target = match.groups()
        shown = target.lstrip(".").rsplit(".", 1)[-1] if tilde else target.lstrip(".")
        label = f"<code>{html.escape(shown)}</code>"
        if "{" in target:  # a template (the E-DOEBE's shared section before it is filled)
            return label
        path, rendered = self._resolve(obj, target)
        if path is None:
            if target.startswith(PACKAGE + "."):
                # a full path into the package that names nothing: a broken reference
                logger.warning(
                    "%s: the cross-reference :%s:`%s` does not resolve", obj.path, role, target
                )
            # a short name outside its scope (Sphinx would leave it unlinked too)
            return label
        if not path.startswith(PACKAGE + "."):
            return label  # outside the package: NumPy, river
        optional = "" if rendered else " optional"
        return f'<autoref identifier="{path}"{optional}>{label}</autoref>'

    def _resolve(self, obj, target: str) -> tuple[str | None, bool]:
        """The path of ``target`` as seen from ``obj``'s docstring (or None), and whether it is
        an object that the API reference renders (public, in a public module)."""
        if target.startswith("."):  # relative to the enclosing package
            module = obj if obj.is_module else obj.module
            base = module.path if module.is_package else module.parent.path
            return self._existing(f"{base}.{target[1:]}")
        head, _, rest = target.partition(".")
        if head == PACKAGE:
            return self._existing(target)
        scope = obj
        while scope is not None:
            members = scope.all_members if scope.is_class else scope.members
            if head in members:
                found = members[head]
                path = found.target_path if found.is_alias else found.path
                return self._existing(f"{path}.{rest}" if rest else path)
            if scope.is_module and head in scope.imports:
                path = scope.imports[head]
                full = f"{path}.{rest}" if rest else path
                if not path.startswith(PACKAGE):
                    return full, False
                return self._existing(full)
            scope = scope.parent
        return None, False

    def _existing(self, path: str) -> tuple[str | None, bool]:
        found = _lookup(self.pkg, path)
        if found is None:
            # made at import time (a lazy attribute, a kernel compiled twice): where Python
            # finds it, which the reference does not render
            runtime = _runtime_object(path)
            if runtime is None:
                return None, False
            module = getattr(runtime, "__module__", None)
            name = getattr(runtime, "__qualname__", None)
            canonical = f"{module}.{name}" if module and name else path
            found = _lookup(self.pkg, canonical)
            if found is None:
                return canonical, False
        return found.path, _rendered(found)


def _lookup(pkg, path: str):
    """The object at ``path`` (aliases followed, inherited members included), or None."""
    parts = path.split(".")
    if parts[0] != pkg.name:
        return None
    obj = pkg
    try:
        for part in parts[1:]:
            if obj.is_alias:
                obj = obj.final_target
            members = obj.all_members if obj.is_class else obj.members
            if part not in members:
                return None
            obj = members[part]
        if obj.is_alias:
            obj = obj.final_target
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    return obj


def _rendered(obj) -> bool:
    """Whether the API reference shows ``obj``: every part of its path public (in its module's
    ``__all__`` where there is one, no leading underscore)."""
    while obj is not None and obj.parent is not None:
        if obj.name.startswith("_") or not obj.is_public:
            return False
        obj = obj.parent
    return True


def _walk(obj):
    """Every module, class, function and attribute of the package, each once, no aliases."""
    yield obj
    for member in list(obj.members.values()):
        if member.is_alias:
            continue
        yield from _walk(member)


def _runtime_object(path: str):
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        obj = module
        for name in parts[cut:]:
            try:
                obj = getattr(obj, name)
            except Exception:  # noqa: BLE001  (a lazy submodule whose import fails: no Ray)
                return None
        return obj
    return None


def _same(a: str, b: str) -> bool:
    return a.split() == b.split()


def _doctests(text: str) -> str:
    """``>>>`` examples outside an Examples section (in a summary, say) as ``pycon`` code blocks,
    as Griffe makes those inside one; Markdown would read them as quotes."""
    lines = text.split("\n")
    out: list[str] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and set(lines[i + 1].strip()) == {"-"}:
            section = line.strip().lower()
        if section != "examples" and line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            if out and out[-1].strip():
                out.append("")
            out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _references(text: str, anchor: str) -> str:
    """``[^k]:`` definitions become a numbered list with anchors, ``[^k]`` markers links to it."""
    if not _REF_DEFINITION.search(text):
        return _REF_MARKER.sub(r"<sup>\1</sup>", text)
    anchor = anchor.replace(".", "-")

    def definition(match: re.Match) -> str:
        indent, k = match.groups()
        return f'{indent}<span id="{anchor}-ref-{k}"></span>**[{k}]** '

    def marker(match: re.Match) -> str:
        k = match.group(1)
        return f'<sup><a href="#{anchor}-ref-{k}">[{k}]</a></sup>'

    text = _REF_MARKER.sub(marker, _REF_DEFINITION.sub(definition, text))
    # one paragraph per reference: a definition's continuation lines stay with it
    return re.sub(r"\n(\s*)(<span id=)", r"\n\n\1\2", text)
