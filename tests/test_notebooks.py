"""The notebooks' code cells run top to bottom (from the notebooks folder, as a user would), with matplotlib on the
Agg backend. Each notebook asserts what it shows and ends by printing one final line, checked here: a notebook that
stops early, prints something else last, or is added without an entry in ``FINAL_LINES`` fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

# notebook -> how its last printed line starts
FINAL_LINES = {
    "quickstart.ipynb": "quickstart: OK",
    "pinning.ipynb": "pinning: OK",
    "mapping.ipynb": "mapping: OK",
    "multiaccel.ipynb": "multiaccel: OK",
    "bankmap.ipynb": "bankmap: OK",
    "constraints.ipynb": "constraints: OK",
    "systolic.ipynb": "systolic: OK",
    "codesign.ipynb": "codesign: OK",
    "fusion.ipynb": "fusion: OK",
    "search.ipynb": "search: OK",
}


def _code_cells(nb: dict) -> list[str]:
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_every_notebook_is_checked():
    assert {p.name for p in NOTEBOOKS} == set(FINAL_LINES)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stripped(path):
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            assert not c.get("outputs") and c.get("execution_count") is None, "outputs must be stripped"
    assert _code_cells(nb), "a notebook without code"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_runs(path, monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(path.parent)
    scope: dict[str, object] = {"__name__": "__main__"}
    try:
        for i, source in enumerate(_code_cells(json.loads(path.read_text()))):
            exec(compile(source, f"{path.name}, code cell {i}", "exec"), scope)  # noqa: S102
    finally:
        plt.close("all")
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines, "the notebook printed nothing"
    assert lines[-1].startswith(FINAL_LINES[path.name]), lines[-1]
    assert os.getcwd() == str(path.parent)
