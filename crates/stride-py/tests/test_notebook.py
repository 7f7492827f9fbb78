"""The notebook docs/researchers.ipynb (the paper's Fig. 9a / 9b from Python) runs to its end
with its small parameters: every cell, including its closing checks."""

import importlib.util

from conftest import REPO, need


def test_the_researchers_notebook_runs():
    for m in ("nbclient", "nbformat", "ipykernel", "pandas", "matplotlib"):
        need(importlib.util.find_spec(m) is not None, f"the notebook needs {m} (scripts/setup.sh installs it)")
    import nbformat
    from nbclient import NotebookClient

    path = REPO / "docs" / "researchers.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # the figure was drawn
    assert any("image/png" in o.get("data", {}) for o in outputs)
