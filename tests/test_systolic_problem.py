"""The systolic (DeepOpt) problem through the harness and the CLI: every method verified; exact = exhaustive =
brute force over every schedule choice on every design point of a small instance; the schedule limit and the true
network E·D; located errors for bad input; infeasibility with a reason."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_helpers import assert_bad_input, run_dlaopt, solve_and_verify

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "instances" / "systolic" / "tiny-codesign.yaml"
DET = SolveOptions(threads=1, deterministic=True, seed=0)


def tiny_doc(objective: str = "ed", **options: object) -> dict:
    doc = yaml.safe_load(TINY.read_text())
    doc["objective"] = objective
    doc["options"] = {**doc["options"], **options}
    return doc


def brute_force(p: harness.Prepared) -> float:
    """Every design point, every schedule of every layer, the evaluator's objective definition."""
    data = p.data
    points = data.points()
    table = data.table(points)
    k = data.options["max_schedules"]
    L, S, H = table.energy.shape
    best = np.inf
    for choice in itertools.product(range(S), repeat=L):
        if k is not None and len(set(choice)) > k:
            continue
        e = table.energy[np.arange(L), list(choice), :]
        d = table.delay[np.arange(L), list(choice), :]
        if data.objective == "network_ed":
            v = e.sum(axis=0) * d.sum(axis=0)
        else:
            v = table.figure(data.objective)[np.arange(L), list(choice), :].sum(axis=0)
        best = min(best, float(np.min(v)))
    return best


@pytest.mark.parametrize("objective", ["ed", "energy", "delay", "e2d", "ed2", "network_ed"])
@pytest.mark.parametrize("max_schedules", [None, 1, 2])
def test_exact_equals_exhaustive_equals_brute_force(objective: str, max_schedules: int | None) -> None:
    p = harness.prepare(instance_from_dict(tiny_doc(objective, max_schedules=max_schedules)))
    exact = harness.solve(p, "exact", options=DET)
    sweep = harness.solve(p, "exhaustive", options=DET)
    assert exact.status == Status.OPTIMAL and exact.verified, exact.message
    assert sweep.status == Status.OPTIMAL and sweep.verified, sweep.message
    truth = brute_force(p)
    assert exact.objective == pytest.approx(truth, rel=1e-9)
    assert sweep.objective == pytest.approx(truth, rel=1e-9)
    used = set(exact.solution_document()["solution"]["schedules"].values())
    assert max_schedules is None or len(used) <= max_schedules


def test_heuristics_on_the_instance_hardware_are_verified_and_bounded_by_exact() -> None:
    p = harness.prepare(instance_from_dict(tiny_doc(codesign=False, max_schedules=None)))
    results = {r.method: r for r in harness.compare(p, options=DET)}
    assert results["exact"].status == Status.OPTIMAL
    for name, r in results.items():
        if r.status in (Status.OPTIMAL, Status.FEASIBLE):
            assert r.verified, (name, r.message)
            assert results["exact"].objective <= r.objective * (1 + 1e-12)
    # without co-design, LOS is exact: each layer's best schedule
    assert results["los"].objective == pytest.approx(results["exact"].objective, rel=1e-12)


def test_solution_round_trip_and_tampering(tmp_path: Path) -> None:
    p = harness.prepare(instance_from_dict(tiny_doc()))
    r = harness.solve(p, "exact", options=DET)
    doc = r.solution_document()
    ev = harness.verify(p, doc)
    assert ev.feasible and ev.objective == pytest.approx(r.objective)
    bad = yaml.safe_load(yaml.safe_dump(doc))
    bad["solution"]["hardware"]["J"] = 9  # not on the grid
    ev = harness.verify(p, bad)
    assert not ev.feasible and any("multiple of 2" in v for v in ev.violations)
    bad = yaml.safe_load(yaml.safe_dump(doc))
    bad["solution"]["schedules"]["conv1"] = "XYZ"
    with pytest.raises(InputError) as exc:
        harness.verify(p, bad)
    assert exc.value.path == ("solution", "schedules", "conv1")


def test_cli_solve_and_verify(tmp_path: Path) -> None:
    out = tmp_path / "sol.yaml"
    solve_and_verify(TINY, out, "--method", "exact")


def test_missing_psum_sram_is_a_located_error(tmp_path: Path) -> None:
    doc = tiny_doc()
    doc["hardware"] = {"name": "two-srams", "pe_array": {"axes": [["rows", 16], ["cols", 16]]},
                       "dma": {"bandwidth_bytes_per_cycle": 16},
                       "memories": [{"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": 16},
                                    {"name": "f", "kind": "buffer", "capacity_bytes": 8192, "operands": ["W"]},
                                    {"name": "i", "kind": "buffer", "capacity_bytes": 8192, "operands": ["I"]}]}
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(doc))
    assert "operands [O]" in exc.value.message and exc.value.path == ("hardware", "memories")
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = run_dlaopt("solve", path)
    assert_bad_input(run.returncode, run.stderr, "operands [O]")


def test_sram_size_without_energy_figure() -> None:
    doc = tiny_doc(codesign=False)
    doc["hardware"]["params"]["psum_kb"] = 12
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(doc))
    assert "12 kB" in exc.value.message


def test_too_small_filter_sram_is_infeasible_with_a_reason() -> None:
    doc = tiny_doc(codesign=False)
    doc["hardware"]["params"].update(rows=64, cols=64, filter_kb=4)
    # conv1 with 32 channels and 64 filters: R·S·C_uv·F_uv·b_f = 3·3·21·64·8 bits > 4 kB, for every schedule
    tensors = {t["name"]: t for t in doc["workload"]["tensors"]}
    tensors["x"]["shape"] = [1, 32, 12, 12]
    tensors["w1"]["shape"] = [64, 32, 3, 3]
    tensors["y1"]["shape"] = [1, 64, 12, 12]
    tensors["w2"]["shape"] = [24, 64, 1, 1]
    p = harness.prepare(instance_from_dict(doc))
    r = harness.solve(p, "exact", options=DET)
    assert r.status == Status.INFEASIBLE
    assert "conv1" in r.message and "fSRAM" in r.message


def test_deterministic() -> None:
    a = harness.solve(harness.prepare(instance_from_dict(tiny_doc())), "exact", options=DET)
    b = harness.solve(harness.prepare(instance_from_dict(tiny_doc())), "exact", options=DET)
    assert a.solution_document()["solution"] == b.solution_document()["solution"]


def test_one_axis_pe_array_is_a_located_error() -> None:
    doc = tiny_doc()
    doc["hardware"] = {"name": "line", "pe_array": {"axes": [["pes", 64]]}, "dma": {"bandwidth_bytes_per_cycle": 16},
                       "memories": [{"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": 16}]}
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(doc))
    assert exc.value.path == ("hardware", "pe_array", "axes") and "two-axis" in exc.value.message


def test_area_budget_too_small_is_a_located_error() -> None:
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(tiny_doc(design_space={"area_budget_mm2": 0.01})))
    assert exc.value.path == ("options", "design_space") and "0.01 mm²" in exc.value.message


# ------------------------------------------------------------------- co-design heuristics pick a design point
HEURISTICS = ["los", "fixed-xyzizo", "fixed-xziyzo", "fixed-xyzozi", "fixed-xzoyzi", "fixed-zixyzo"]
GOOGLENET_CODESIGN = ROOT / "instances" / "systolic" / "googlenet-codesign.yaml"


def without_hardware_params(doc: dict, keys: tuple[str, ...]) -> dict:
    """``keys`` of ``hardware.params`` deleted (all of ``params`` when empty): the preset's defaults fill them."""
    if keys:
        for key in keys:
            del doc["hardware"]["params"][key]
    else:
        doc["hardware"].pop("params", None)
    return doc


def assert_verified_or_reasoned(r: harness.Result) -> None:
    assert r.status in (Status.FEASIBLE, Status.NO_SOLUTION), (r.method, r.status, r.message)
    if r.status == Status.FEASIBLE:
        assert r.verified and r.solution is not None, (r.method, r.message)
    else:
        assert r.message, f"{r.method}: no_solution without a reason"


@pytest.mark.parametrize("keys", [("rows",), ("cols",), ("filter_kb",), ()],
                         ids=["rows", "cols", "filter_kb", "params"])
def test_codesign_heuristics_without_hardware_params(keys: tuple[str, ...]) -> None:
    # The preset's defaults (32 x 64 PEs, 16 / 32 / 8 kB SRAMs) lie outside the 1.2 mm² design space; under co-design
    # the instance's sizes are no candidate, so every heuristic picks the best design point for its schedules, the
    # same one whatever params the instance gives.
    reference = harness.prepare(instance_from_dict(tiny_doc()))
    p = harness.prepare(instance_from_dict(without_hardware_params(tiny_doc(), keys)))
    exact = harness.solve(p, "exact", options=DET)
    assert exact.status == Status.OPTIMAL and exact.verified
    for name in HEURISTICS:
        r = harness.solve(p, name, options=DET)
        assert_verified_or_reasoned(r)
        assert r.status == Status.FEASIBLE, (name, r.message)  # every schedule runs on some point of this space
        assert exact.objective <= r.objective * (1 + 1e-12), name
        same = harness.solve(reference, name, options=DET)
        assert same.status == Status.FEASIBLE and same.objective == pytest.approx(r.objective, rel=1e-12), name
    # LOS over the design space (at most two schedules) is the seed's sweep: the optimum
    assert harness.solve(p, "los", options=DET).objective == pytest.approx(exact.objective, rel=1e-12)


def test_codesign_fixed_schedule_no_design_point_is_no_solution_with_a_reason() -> None:
    # 256 input channels: ZiXYZo needs R·S·C·F_uv·b_f = 3·3·256·8·8 bits = 18 kB of filter SRAM, and the 0.9 mm²
    # budget holds only the 8 x 8, 4 / 4 / 4 kB point: unbounded delay, so no E·D.
    doc = without_hardware_params(tiny_doc(design_space={"area_budget_mm2": 0.9}), ())
    tensors = {t["name"]: t for t in doc["workload"]["tensors"]}
    tensors["x"]["shape"] = [1, 256, 12, 12]
    tensors["w1"]["shape"] = [16, 256, 3, 3]
    p = harness.prepare(instance_from_dict(doc))
    results = {name: harness.solve(p, name, options=DET) for name in HEURISTICS}
    for r in results.values():
        assert_verified_or_reasoned(r)
    r = results["fixed-zixyzo"]
    assert r.status == Status.NO_SOLUTION and "unbounded delay" in r.message and "0.9 mm²" in r.message
    assert results["los"].status == Status.FEASIBLE
    assert results["los"].solution_document()["solution"]["hardware"] == {"J": 8, "K": 8, "f_kb": 4, "i_kb": 4,
                                                                          "p_kb": 4}


@pytest.mark.slow
def test_googlenet_codesign_heuristics_on_the_default_hardware() -> None:
    # The shipped instance names no params: the preset's default (seed 003 Table 3's 32 x 64 array, 17.03 mm²) is
    # over the 16 mm² budget. LOS over the design space is the seed's §4.2 sweep: Table 4's E·D point.
    p = harness.prepare(instance_from_dict(yaml.safe_load(GOOGLENET_CODESIGN.read_text())))
    for name in HEURISTICS:
        r = harness.solve(p, name, options=DET)
        assert_verified_or_reasoned(r)
        assert r.status == Status.FEASIBLE, (name, r.message)
        assert r.metrics["area_mm2"] <= 16.0
        if name == "los":
            assert r.solution_document()["solution"]["hardware"] == {"J": 48, "K": 32, "f_kb": 32, "i_kb": 64,
                                                                      "p_kb": 32}
