"""Execute every notebook in ``notebooks/`` and fail on any cell error.

Notebooks run from the ``notebooks`` directory in a fresh kernel of the interpreter running the tests
(the ``python3`` kernelspec's ``python`` argv is resolved by jupyter_client to ``sys.executable``;
``test_kernel_is_this_interpreter`` checks that). ``pytest --nbmake notebooks/`` runs the same
notebooks through nbmake.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
KERNEL = "python3"
TIMEOUT_S = 120  # per cell


def _execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    env_backend = os.environ.pop("MPLBACKEND", None)  # a display-only backend must not leak in
    try:
        client = NotebookClient(
            nb,
            timeout=TIMEOUT_S,
            kernel_name=KERNEL,
            allow_errors=False,
            resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
        )
        return client.execute()
    finally:
        if env_backend is not None:
            os.environ["MPLBACKEND"] = env_backend


def test_notebooks_exist():
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs before saving"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path):
    nb = nbformat.read(path, as_version=4)
    executed = _execute(nb)  # raises CellExecutionError on the first failing cell
    errors = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_kernel_is_this_interpreter():
    """The kernel runs in this environment (same prefix, e.g. the venv), from the notebooks folder."""
    source = "import os, sys\nprint(sys.prefix)\nprint(sys.executable)\nprint(os.getcwd())"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    executed = _execute(nb)
    prefix, executable, cwd = executed.cells[0].outputs[0]["text"].splitlines()
    assert prefix == sys.prefix
    assert Path(executable).parent == Path(sys.executable).parent
    assert Path(cwd).resolve() == NOTEBOOK_DIR
