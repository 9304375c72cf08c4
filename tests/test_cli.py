"""The ``dlaopt`` command line: output contracts (--json keys), exit codes (0 / 1 / 2) and error messages.

Most tests use click's CliRunner; the exit-code tests for bad input run ``python -m dlaopt`` in a subprocess.
The solve tests use ``instances/pinning/tiny-inline.yaml`` (options.oversize: tile, so they need the pinning tiling
module) and ``make``/``show`` uses the default ``oversize: tile`` too.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import assert_bad_input, run_dlaopt
from click.testing import CliRunner, Result
from rich.console import Console

from dlaopt import __version__
from dlaopt.cli import cli
from dlaopt.cli.common import ProgressPrinter
from dlaopt.cli.experiment import EXPERIMENTS, command_from_function
from dlaopt.solvers.result import TracePoint

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"
MALFORMED = INSTANCES / "malformed"
TINY = INSTANCES / "pinning" / "tiny-inline.yaml"
OVERSIZED = MALFORMED / "oversized-no-tiling.yaml"
CONTRACT_KEYS = {"problem", "method", "status", "objective", "bound", "gap", "time_s", "verified", "solution"}
PINNING_METHODS = ["naive", "onsram", "greedy", "coloring", "exact", "cpsat"]

# what the error message must say besides the file name (the key path where the file has one)
MALFORMED_KEYS: dict[str, str] = {
    "cyclic.yaml": "key 'workload.operators'",
    "missing-key.yaml": "'hardware'",
    "negative-size.yaml": "key 'workload.tensors[1].shape[1]'",
    "unknown-key.yaml": "'objectiv'",
    "unknown-operator.yaml": "key 'workload.operators[0].kind'",
    "wrong-type.yaml": "key 'hardware.params.spad_kb'",
    "yaml-syntax.yaml": "line 3",
}


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


# ================================================================================================ basics
def test_help_and_version() -> None:
    res = run("--help")
    assert res.exit_code == 0
    for command in ("solve", "compare", "verify", "show", "zoo", "presets", "solvers", "make", "schema",
                    "experiment"):
        assert command in res.stdout
    res = run("--version")
    assert res.exit_code == 0 and __version__ in res.stdout


def test_python_m_dlaopt_version() -> None:
    proc = run_dlaopt("--version")
    assert proc.returncode == 0 and __version__ in proc.stdout


# ================================================================================================ bad input: exit 2
@pytest.mark.parametrize("path", sorted(p for p in MALFORMED.glob("*.yaml") if p != OVERSIZED), ids=lambda p: p.name)
def test_show_malformed_instance_exits_2(path: Path) -> None:
    proc = run_dlaopt("show", path.relative_to(ROOT))
    assert_bad_input(proc.returncode, proc.stderr)
    assert str(path.relative_to(ROOT)) in proc.stderr
    assert MALFORMED_KEYS.get(path.name, "") in proc.stderr
    assert proc.stdout == ""


def test_solve_oversized_without_tiling_exits_2() -> None:
    proc = run_dlaopt("solve", OVERSIZED)
    assert_bad_input(proc.returncode, proc.stderr)
    assert str(OVERSIZED) in proc.stderr
    assert "options.oversize" in proc.stderr
    assert proc.stdout == ""


def test_missing_file_exits_2(tmp_path: Path) -> None:
    proc = run_dlaopt("solve", tmp_path / "nope.yaml")
    assert_bad_input(proc.returncode, proc.stderr)
    assert "nope.yaml" in proc.stderr and "not found" in proc.stderr
    res = run("show", tmp_path / "nope.yaml")
    assert_bad_input(res.exit_code, res.stderr)


def test_usage_error_exits_2() -> None:
    proc = run_dlaopt("solve")
    assert proc.returncode == 2
    assert "Missing argument" in proc.stderr and "Traceback" not in proc.stderr
    res = run("solve", TINY, "--time-limit", "-3")
    assert res.exit_code == 2


def test_unknown_method_exits_2() -> None:
    res = run("solve", TINY, "--method", "nonexistent")
    assert_bad_input(res.exit_code, res.stderr)
    assert "unknown method 'nonexistent'" in res.stderr and "exact" in res.stderr
    res = run("compare", TINY, "--methods", "greedy,nonexistent")
    assert_bad_input(res.exit_code, res.stderr)
    assert "nonexistent" in res.stderr


def test_malformed_solver_string_exits_2() -> None:
    res = run("solve", TINY, "--solver", "gurobi")
    assert_bad_input(res.exit_code, res.stderr)
    assert "unknown solver 'gurobi'" in res.stderr


def test_unavailable_pyomo_solver_exits_2() -> None:
    """Decision: a well-formed ``pyomo:NAME`` that Pyomo does not report available is bad input (exit 2), checked
    before any work, rather than a result whose exact solve failed (which the harness would report as the
    heuristic fallback with status 'feasible')."""
    proc = run_dlaopt("solve", TINY, "--solver", "pyomo:nonexistent")
    assert_bad_input(proc.returncode, proc.stderr)
    assert "pyomo:nonexistent" in proc.stderr and "not available" in proc.stderr and "highs" in proc.stderr
    res = run("compare", TINY, "--solver", "pyomo:nonexistent", "--json")
    assert_bad_input(res.exit_code, res.stderr)
    assert res.stdout == ""


def test_make_bad_input_exits_2(tmp_path: Path) -> None:
    res = run("make", "--network", "lenet5", "--preset", "smaug-nvdla", "--param", "batch")
    assert res.exit_code == 2 and "key=value" in res.stderr
    res = run("make", "--network", "no-such-net", "--preset", "smaug-nvdla")
    assert_bad_input(res.exit_code, res.stderr)
    assert "no-such-net" in res.stderr and "workload.zoo" in res.stderr
    res = run("make", "--network", "lenet5", "--preset", "smaug-nvdla", "--hw", "spad_kb=big")
    assert_bad_input(res.exit_code, res.stderr)
    assert "hardware.params.spad_kb" in res.stderr
    assert not list(tmp_path.iterdir())


# ======================================================================================== internal errors: exit 1
def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("kaboom")


def test_internal_error_exits_1_without_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from dlaopt.zoo import ZOO

    monkeypatch.setattr(ZOO, "entries", _boom)
    monkeypatch.delenv("DLAOPT_DEBUG", raising=False)
    res = run("zoo")
    assert res.exit_code == 1
    assert "internal error: RuntimeError: kaboom" in res.stderr
    assert "Traceback" not in res.stderr
    monkeypatch.setenv("DLAOPT_DEBUG", "1")
    res = run("zoo")
    assert res.exit_code == 1
    assert "internal error: RuntimeError: kaboom" in res.stderr and "Traceback" in res.stderr


# ================================================================================================ solve / verify
@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """``dlaopt solve tiny-inline.yaml --json --seed 0 --threads 1 -o sol.yaml`` in a real process."""
    sol = tmp_path_factory.mktemp("solve") / "sol.yaml"
    proc = run_dlaopt("solve", TINY, "--json", "--seed", "0", "--threads", "1", "-o", sol)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout), sol


def test_solve_json_contract(solved: tuple[dict[str, Any], Path]) -> None:
    data, _ = solved
    assert isinstance(data, dict)
    assert set(data) >= CONTRACT_KEYS
    assert data["problem"] == "pinning" and data["method"] == "exact"
    assert data["status"] == "optimal"
    assert data["verified"] is True
    assert data["objective"] is not None and data["bound"] is not None
    assert data["objective"] >= data["bound"] - 1e-6
    assert data["gap"] == pytest.approx(0.0, abs=1e-4)
    assert data["solution"]["residency"]
    assert data["metrics"]["transfer_bytes"] == pytest.approx(data["objective"])


def test_verify_written_solution(solved: tuple[dict[str, Any], Path]) -> None:
    data, sol = solved
    doc = yaml.safe_load(sol.read_text())
    assert doc["problem"] == "pinning" and doc["objective_value"] == pytest.approx(data["objective"])
    res = run("verify", TINY, sol, "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert {"verified", "objective", "violations", "metrics"} <= set(out)
    assert out["verified"] is True and out["violations"] == []
    assert out["objective"] == pytest.approx(data["objective"])
    human = run("verify", TINY, sol)
    assert human.exit_code == 0 and "verified" in human.stdout and "yes" in human.stdout


def test_verify_tampered_solution_exits_1(solved: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    _, sol = solved
    doc = yaml.safe_load(sol.read_text())
    residency = doc["solution"]["residency"]
    del residency[next(iter(residency))]
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(doc))
    res = run("verify", TINY, bad, "--json")
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["verified"] is False and out["violations"]
    human = run("verify", TINY, bad)
    assert human.exit_code == 1 and "no" in human.stdout


def test_verify_malformed_solution_exits_2(solved: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    _, sol = solved
    doc = yaml.safe_load(sol.read_text())
    doc["solution"]["residency"]["no-such-buffer"] = [[0, 0, "spad0"]]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    res = run("verify", TINY, bad)
    assert_bad_input(res.exit_code, res.stderr)
    assert str(bad) in res.stderr and "no-such-buffer" in res.stderr


def test_solve_human_report_and_json_output_file(tmp_path: Path) -> None:
    res = run("solve", TINY, "--method", "greedy", "--quiet", "-o", tmp_path / "g.json")
    assert res.exit_code == 0, res.stderr
    for word in ("status", "feasible", "objective", "bound", "gap", "time", "solver", "verified", "warm start",
                 "metrics", "transfer_bytes"):
        assert word in res.stdout
    assert res.stderr == ""
    doc = json.loads((tmp_path / "g.json").read_text())
    assert doc["method"] == "greedy" and doc["solution"]["residency"]
    res = run("solve", TINY, "--seed", "0", "--threads", "1", "--time-limit", "60")
    assert res.exit_code == 0, res.stderr
    assert "optimal" in res.stdout and "solving tiny-inline" in res.stderr


def test_solve_json_has_nothing_else_on_stdout() -> None:
    res = run("solve", TINY, "--method", "cpsat", "--json", "--threads", "1")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["method"] == "cpsat" and data["verified"] is True and data["status"] == "optimal"
    assert res.stderr == ""


# ================================================================================================ compare
def test_compare_json() -> None:
    res = run("compare", TINY, "--json", "--seed", "0")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert isinstance(data, list)
    assert [d["method"] for d in data] == PINNING_METHODS
    for d in data:
        assert set(d) >= CONTRACT_KEYS
        assert d["solution"] is None
        assert d["verified"] is True, d
    exact = next(d["objective"] for d in data if d["method"] == "exact")
    for d in data:
        assert exact <= d["objective"] + 1e-6 * max(1.0, abs(d["objective"])), d["method"]


def test_compare_table_and_method_subset() -> None:
    res = run("compare", TINY, "--methods", "naive,exact", "--quiet")
    assert res.exit_code == 0, res.stderr
    assert "objective / best" in res.stdout
    assert "naive" in res.stdout and "exact" in res.stdout and "greedy" not in res.stdout
    assert "1.000" in res.stdout


# ================================================================================================ catalogues
def test_zoo_json() -> None:
    from dlaopt.zoo import ZOO

    res = run("zoo", "--json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert [d["name"] for d in data] == ZOO.names()
    for d in data:
        assert d["description"] and isinstance(d["params"], dict) and "batch" in d["params"]
        assert d["operators"] > 0 and d["macs"] >= 0
    assert run("zoo").exit_code == 0


def test_presets_json() -> None:
    from dlaopt.hardware.presets import PRESETS

    res = run("presets", "--json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert [d["name"] for d in data] == PRESETS.names()
    smaug = next(d for d in data if d["name"] == "smaug-nvdla")
    assert smaug["params"]["spad_kb"] == 32
    assert any(m["capacity_bytes"] == 32 * 1024 for m in smaug["memories"])
    assert run("presets").exit_code == 0


def test_solvers_json() -> None:
    res = run("solvers", "--json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert {"highs", "cpsat"} <= set(data)
    assert all(isinstance(s, str) for s in data)
    assert run("solvers").stdout.split() == data


# ================================================================================================ make / show / schema
def test_make_prints_yaml_with_typed_values() -> None:
    res = run("make", "--network", "lenet5", "--param", "batch=2", "--preset", "smaug-nvdla", "--hw", "spad_kb=64",
              "--hw", "strict_roles=true", "--option", "chunk_fraction=0.25", "--objective", "dma_cycles")
    assert res.exit_code == 0, res.stderr
    doc = yaml.safe_load(res.stdout)
    assert doc["problem"] == "pinning"
    assert doc["workload"] == {"zoo": "lenet5", "params": {"batch": 2}}
    assert doc["hardware"]["params"] == {"spad_kb": 64, "strict_roles": True}
    assert doc["options"]["chunk_fraction"] == 0.25 and doc["objective"] == "dma_cycles"


def test_make_then_show(tmp_path: Path) -> None:
    out = tmp_path / "x.yaml"
    res = run("make", "--problem", "pinning", "--network", "lenet5", "--preset", "smaug-nvdla", "-o", out)
    assert res.exit_code == 0, res.stderr
    assert out.exists()
    res = run("show", out)
    assert res.exit_code == 0, res.stderr
    assert "lenet5" in res.stdout and "spad0" in res.stdout and "32 KiB" in res.stdout
    res = run("show", out, "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["problem"] == "pinning" and data["workload"]["name"] == "lenet5"
    assert {m["name"]: m["capacity_bytes"] for m in data["hardware"]["memories"]}["spad1"] == 32 * 1024
    assert data["prepared"]["steps"] >= data["workload"]["operators"]


def test_show_tiny_inline_json() -> None:
    res = run("show", TINY, "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["name"] == "tiny-inline" and data["objective"] == "transfers"
    assert data["options"]["oversize"] == "tile"
    assert data["workload"]["operators"] == 8
    assert [m["capacity_bytes"] for m in data["hardware"]["memories"]] == [None, 4096, 4096]
    assert data["infeasible"] is None


def test_schema(tmp_path: Path) -> None:
    from dlaopt.io import instance_schema

    res = run("schema")
    assert res.exit_code == 0
    assert json.loads(res.stdout) == instance_schema()
    res = run("schema", "-o", tmp_path / "s" / "instance.schema.json")
    assert res.exit_code == 0
    assert json.loads((tmp_path / "s" / "instance.schema.json").read_text()) == instance_schema()


# ================================================================================================ experiment group
def _demo_experiment(size: int, label: str = "x", fast: bool = False, names: list[str] | None = None,
                     out: Path | None = None) -> dict[str, Any]:
    """A demo experiment (first line is the short help).

    Used to test that a plain function becomes a subcommand from its signature.
    """
    assert names is None or isinstance(names, list)
    return {"size": size, "label": label, "fast": fast, "names": names, "out": out}


def test_experiment_group_is_present() -> None:
    res = run("experiment", "--help")
    assert res.exit_code == 0 and "experiment" in res.stdout


def test_experiment_subcommand_from_function(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXPERIMENTS, "demo", f"{__name__}:_demo_experiment")
    res = run("experiment", "--help")
    assert "demo" in res.stdout and "A demo experiment" in res.stdout
    res = run("experiment", "demo", "--size", "3", "--fast", "--names", "a", "--names", "b", "--out", "r.csv")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout) == {"size": 3, "label": "x", "fast": True, "names": ["a", "b"], "out": "r.csv"}
    res = run("experiment", "demo")
    assert res.exit_code == 2 and "--size" in res.stderr
    cmd = command_from_function(_demo_experiment)
    assert cmd.name == "demo-experiment"


# ================================================================================================ progress
def test_progress_printer_is_quiet_for_short_solves_and_throttled() -> None:
    buf = io.StringIO()
    printer = ProgressPrinter(Console(file=buf, width=120), interval=0.5, delay=1.0)
    for i in range(100):
        printer(TracePoint(0.001 * i, 100.0 - i, 0.0))
    printer.flush()
    assert buf.getvalue() == ""  # a solve shorter than the delay prints nothing
    for i in range(100):
        printer(TracePoint(1.0 + 0.001 * i, 100.0 - i, 50.0))
    printer.flush()
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2  # the first point after the delay, then the final one held back by the throttle
    assert "incumbent" in lines[0] and "bound" in lines[0] and "gap" in lines[0]
