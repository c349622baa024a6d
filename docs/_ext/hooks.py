"""MkDocs hooks of the site: the notebooks and the benchmark plots, made at build time.

- **Notebooks.** The four tutorials live in ``notebooks/`` (the tests run them from there); they
  join the site as ``notebooks/<name>.ipynb`` pages without a copy, and mkdocs-jupyter executes
  them in the fast mode that the tests use (``RIVER_DOEBE_FAST=1``: shorter streams, smaller
  ensembles), with this checkout first on the kernel's path. A notebook that declares data files
  it needs (``{"river_doebe": {"requires_data": [...]}}`` in its metadata) is executed only when
  they are found (``RIVER_DOEBE_DATA``, else ``../shared/data`` beside the repository, as the
  tests look), and rendered without outputs otherwise, with a note on its page.
- **Plots and tables.** The figures of the benchmarks pages, and the tables of the results that
  have no Markdown file, are made from the committed results (``benchmarks/results/*.json``) by
  :mod:`plots`, into the built site only.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import re
import sys

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import plots  # noqa: E402  (beside this file)

log = logging.getLogger("mkdocs.hooks.river_doebe")

# notebooks rendered without outputs because their data files are missing
_NOT_EXECUTED: dict[str, list[str]] = {}


def _data_dir() -> str | None:
    env = os.environ.get("RIVER_DOEBE_DATA")
    if env:
        return env
    for candidate in (ROOT / "data", ROOT.parent / "shared" / "data"):
        if candidate.is_dir():
            return str(candidate)
    return None


def on_config(config):
    # the kernels that execute the notebooks inherit this environment
    os.environ["RIVER_DOEBE_FAST"] = "1"
    os.environ["MPLBACKEND"] = "Agg"
    path = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    data = _data_dir()
    if data is not None:
        os.environ["RIVER_DOEBE_DATA"] = data

    sys.path.insert(0, str(ROOT))
    from river_doebe import datasets

    have = set(datasets.available(data)) if data else set()
    jupyter = config["plugins"]["mkdocs-jupyter"].config
    _NOT_EXECUTED.clear()
    for nb in sorted(NOTEBOOKS.glob("*.ipynb")):
        meta = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {})
        wanted = meta.get("river_doebe", {}).get("requires_data", [])
        missing = [name for name in wanted if name not in have]
        if missing:
            _NOT_EXECUTED[f"notebooks/{nb.name}"] = missing
            jupyter["execute_ignore"] = [*jupyter["execute_ignore"], f"*/{nb.name}"]
            log.info("%s is not executed: %s.npz not found", nb.name, ", ".join(missing))
    return config


@event_priority(100)  # before mkdocs-jupyter turns .ipynb files into pages
def on_files(files, config):
    for nb in sorted(NOTEBOOKS.glob("*.ipynb")):
        files.append(
            File(
                f"notebooks/{nb.name}",
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    for name, png in plots.all_figures(ROOT / "benchmarks" / "results"):
        files.append(File.generated(config, f"benchmarks/img/{name}.png", content=png))
    return files


_TABLE = re.compile(r"<!-- table:(\w+) -->")


def on_page_markdown(markdown, page, config, files):
    """Write the generated tables where their markers stand (``<!-- table:NAME -->``)."""
    results = ROOT / "benchmarks" / "results"
    return _TABLE.sub(lambda m: plots.TABLES[m.group(1)](results), markdown)


def on_page_content(html, page, config, files):
    missing = _NOT_EXECUTED.get(page.file.src_uri)
    if missing:
        names = ", ".join(f"<code>{m}.npz</code>" for m in missing)
        note = (
            '<div class="admonition note"><p class="admonition-title">Not executed</p>'
            f"<p>This build did not find the data file(s) {names}, so the notebook is shown "
            "without its outputs. Set <code>RIVER_DOEBE_DATA</code> to the folder that holds "
            "them and build again.</p></div>"
        )
        return note + html
    return html
