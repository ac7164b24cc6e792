"""Companion notebooks execute from top to bottom, so none can rot."""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs/notebooks").glob("*.ipynb"))


def test_each_chapter_has_a_notebook():
    names = {p.name for p in NOTEBOOKS}
    assert {"ch01-experiments.ipynb", "ch02-experiments.ipynb"} <= names


@pytest.mark.slow  # starts a Jupyter kernel per notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "store notebooks without outputs"
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert errors == []
