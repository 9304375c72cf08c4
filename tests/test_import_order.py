"""highspy and OR-Tools CP-SAT must load and solve in one process in either import order.

highspy 1.15.x cannot live beside ortools 9.15 (which bundles its own HiGHS); pyproject pins ``highspy<1.15``.
Each order runs in a fresh interpreter because the first import decides which shared objects are loaded.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

_HIGHS = """
import highspy
import numpy as np
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.passModel(2, 1, 2, 2, 1, 0.0, np.array([-1.0, -2.0]), np.zeros(2), np.ones(2), np.array([-np.inf]),
            np.array([1.0]), np.array([0], dtype=np.int32), np.array([0, 1], dtype=np.int32), np.ones(2),
            np.ones(2, dtype=np.int32))
h.run()
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.getModelStatus()
assert abs(h.getInfo().objective_function_value + 2.0) < 1e-9
"""

_CPSAT = """
from ortools.sat.python import cp_model
m = cp_model.CpModel()
a, b = m.new_bool_var("a"), m.new_bool_var("b")
m.add(a + b <= 1)
m.maximize(a + 2 * b)
s = cp_model.CpSolver()
s.parameters.num_workers = 1
assert s.solve(m) == cp_model.OPTIMAL
assert s.objective_value == 2
"""

_IMPORT_HIGHS = "import highspy\n"
_IMPORT_CPSAT = "from ortools.sat.python import cp_model\n"


@pytest.mark.parametrize(
    ("label", "code"),
    [
        ("highspy-then-ortools", _IMPORT_HIGHS + _IMPORT_CPSAT + _HIGHS + _CPSAT),
        ("ortools-then-highspy", _IMPORT_CPSAT + _IMPORT_HIGHS + _CPSAT + _HIGHS),
    ],
)
def test_import_order(label: str, code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{label}: exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
