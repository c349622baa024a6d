"""The tutorial notebooks: they run from top to bottom, and they are committed without outputs.

Each notebook in ``notebooks/`` is executed with nbclient on the ``python3`` kernel, in the
notebooks folder, with this checkout first on ``PYTHONPATH`` and with ``RIVER_DOEBE_FAST=1`` so
that it shrinks its streams and ensembles to a few seconds of work. A notebook can declare data
files it cannot run without in its metadata, ``{"river_doebe": {"requires_data": ["banana"]}}``;
it is skipped when they are not available.
"""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 300  # seconds per cell; a fast run needs far less, a loaded machine more

# Where the notebooks look for data files when RIVER_DOEBE_DATA is not set (relative to the
# notebooks folder, as in their first cells).
_DATA_FALLBACKS = ("../data", "../../shared/data")


def _ids(paths):
    return [p.stem for p in paths]


def _data_dir() -> str | None:
    env = os.environ.get("RIVER_DOEBE_DATA")
    if env:
        return env
    for rel in _DATA_FALLBACKS:
        path = (NOTEBOOK_DIR / rel).resolve()
        if path.is_dir():
            return str(path)
    return None


def _missing_data(nb) -> list[str]:
    from river_doebe import datasets

    wanted = nb.metadata.get("river_doebe", {}).get("requires_data", [])
    if not wanted:
        return []
    have = set(datasets.available(_data_dir()))
    return [name for name in wanted if name not in have]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_has_no_outputs(path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not dirty, (
        f"{path.name}: code cells {dirty} carry outputs or execution counts; clear them before "
        "committing (e.g. `jupyter nbconvert --clear-output --inplace`)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("matplotlib")
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip(
            "no Jupyter kernel named 'python3' (register one with "
            "`python -m ipykernel install --user`)"
        )

    nb = nbformat.read(path, as_version=4)
    missing = _missing_data(nb)
    if missing:
        pytest.skip(
            f"{path.name} needs the data file(s) {', '.join(m + '.npz' for m in missing)}; "
            "set RIVER_DOEBE_DATA to the folder that holds them"
        )

    # the kernel inherits this process's environment; it imports river_doebe from this
    # checkout, as the tests do, not from wherever the package is installed
    path = [str(ROOT), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))
    monkeypatch.setenv("RIVER_DOEBE_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    data = _data_dir()
    if data is not None:
        monkeypatch.setenv("RIVER_DOEBE_DATA", data)

    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()  # raises CellExecutionError, with the failing cell, on any error

    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert not errors
