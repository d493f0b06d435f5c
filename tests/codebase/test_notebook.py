"""docs/notebooks/explore.ipynb runs from top to bottom in a fresh Jupyter kernel, in an empty
directory: every cell without an error or anything written to stderr, its sweep stored, its
figure saved. It is committed without outputs, so that its diffs show code and prose only.

The kernel is this interpreter's own, named by a kernelspec written into a temporary Jupyter
path for the test: a fresh clone has no user-level Jupyter, and a user's kernels are left alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "docs" / "notebooks" / "explore.ipynb"
KERNEL = "bufferlab-test"


def test_the_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "the notebook has no code cell"
    for index, cell in enumerate(code):
        assert cell.outputs == [] and cell.execution_count is None, f"code cell {index} holds outputs"


@pytest.mark.engine
@pytest.mark.slow
def test_the_notebook_runs_from_top_to_bottom_in_a_fresh_kernel(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    jupyter = tmp_path / "jupyter"
    write_kernel_spec(jupyter / "kernels" / KERNEL)  # argv: this interpreter, -m ipykernel_launcher
    spec = json.loads((jupyter / "kernels" / KERNEL / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    # jupyter_core's own directories, without its warning that they are about to move.
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    work = tmp_path / "work"
    work.mkdir()

    nb = nbformat.read(NOTEBOOK, as_version=4)
    # Raises CellExecutionError, with the cell and its traceback, at the first cell that fails.
    NotebookClient(nb, kernel_name=KERNEL, timeout=300, resources={"metadata": {"path": str(work)}}).execute()

    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            stderr = [o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
            assert not stderr, f"cell {index} wrote to stderr:\n{''.join(stderr)}"
    printed = "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs)
    assert "16 runs simulated, 0 found in the store, 0 failed" in printed, printed
    figure = work / "buffer_vs_cca.png"
    assert figure.is_file() and figure.read_bytes().startswith(b"\x89PNG"), sorted(p.name for p in work.iterdir())
    # The last code cell draws the figure: the notebook shows it inline as well.
    last = [cell for cell in nb.cells if cell.cell_type == "code"][-1]
    assert any("image/png" in o.get("data", {}) for o in last.outputs), last.outputs
