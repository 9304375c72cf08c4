"""Bank mapping through the harness and the CLI: every method verified (the functional check included),
exact ≤ propagate ≤ local, located errors (brute force against exact: tests/test_bankmap_mapping.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_helpers import solve_and_verify

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "instances" / "bankmap" / "residual-block-inline.yaml"
DET = SolveOptions(threads=1, deterministic=True, seed=0)


def small_doc() -> dict:
    return yaml.safe_load(SMALL.read_text())


def test_every_method_verified_with_the_functional_check() -> None:
    p = harness.prepare(instance_from_dict(small_doc()))
    results = {r.method: r for r in harness.compare(p, options=DET)}
    assert set(results) == {"local", "propagate", "exact"}
    for r in results.values():
        assert r.verified, (r.method, r.message)
        assert r.metrics["functional_check"] == "passed"
    assert results["exact"].status == Status.OPTIMAL
    assert results["exact"].objective <= results["propagate"].objective <= results["local"].objective
    assert results["local"].objective > 0  # the local baseline pays for its per-operator layouts here


def test_cli_round_trip(tmp_path: Path) -> None:
    sol = tmp_path / "s.yaml"
    solve_and_verify(SMALL, sol, "--method", "propagate")
    doc = yaml.safe_load(sol.read_text())
    assert doc["solution"]["layouts"]["c"]["bank_axis"] == 1  # the concat's output spread along its channels


def test_tampered_choice_is_located() -> None:
    p = harness.prepare(instance_from_dict(small_doc()))
    doc = harness.solve(p, "propagate", options=DET).solution_document()
    doc["solution"]["choices"]["conv1"] = 7
    with pytest.raises(InputError) as exc:
        harness.verify(p, doc)
    assert exc.value.path == ("solution", "choices", "conv1")


def test_bank_mapping_needs_an_accelerator() -> None:
    doc = small_doc()
    doc["hardware"] = {"platform": "magma-s1"}
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(doc))
    assert exc.value.path == ("hardware",)
