"""The notebooks' code cells run top to bottom (from the notebooks folder, as a user would)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_runs(path, monkeypatch, capsys):
    nb = json.loads(path.read_text())
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), "outputs must be stripped"
    monkeypatch.chdir(path.parent)
    scope: dict[str, object] = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}", "exec"), scope)  # noqa: S102
    assert "optimal" in capsys.readouterr().out
    assert os.getcwd() == str(path.parent)
