"""User constraints of the systolic (DeepOpt) problem — the schedules a layer may run, fixed or bounded array
dimensions and SRAM sizes — against brute force: on small co-design instances every permitted schedule of every
layer on every design point inside the bounds is evaluated with the problem's cost model, independently of the
solvers' own restriction of the space. Exact and exhaustive reach that minimum; every heuristic's answer meets the
constraints or is no solution; the evaluator names a broken constraint; an infeasible set reports the constraints
that cannot hold together (derived here as the unique minimal infeasible subset); malformed records are located
exit-2 errors."""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from cli_helpers import assert_bad_input, solve_and_verify
from click.testing import CliRunner

from dlaopt import harness
from dlaopt.cli import cli
from dlaopt.formulations.base import HeuristicFailure
from dlaopt.formulations.systolic import codesign
from dlaopt.formulations.systolic.counts import ConvShape
from dlaopt.formulations.systolic.layers import SystolicLayer
from dlaopt.formulations.systolic.network import FIGURES, CostTable, layer_energy_delay
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "instances" / "systolic" / "tiny-codesign.yaml"
SHIPPED = ROOT / "instances" / "systolic" / "googlenet-constrained.yaml"
DET = SolveOptions(threads=1, deterministic=True, seed=0)
SCHEDULES = ("XYZiZo", "XZiYZo", "XYZoZi", "XZoYZi", "ZiXYZo")
HEURISTICS = ["los", *(f"fixed-{s.lower()}" for s in SCHEDULES)]
HW_OF = {"rows": "J", "cols": "K", "fSRAM": "f_kb", "iSRAM": "i_kb", "pSRAM": "p_kb"}


def doc_with(constraints: Sequence[dict[str, Any]], *, objective: str = "ed", budget: float = 2.0,
             wide_conv1: bool = False, **options: Any) -> dict[str, Any]:
    """The tiny instance (conv1, conv2, fc) co-designed on a ``budget`` mm² grid (393 points at 2 mm²: J, K from 8
    to 20, SRAMs 4 to 32 kB) under ``constraints``. ``wide_conv1``: conv1 reads 256 channels, so that ZiXYZo needs
    3·3·256·F_uv·8 bits of filter SRAM (32 kB) for a bounded delay."""
    doc = yaml.safe_load(TINY.read_text())
    doc["objective"] = objective
    doc["options"] = {**doc["options"], "design_space": {"area_budget_mm2": budget}, **options}
    if wide_conv1:
        tensors = {t["name"]: t for t in doc["workload"]["tensors"]}
        tensors["x"]["shape"] = [1, 256, 12, 12]
        tensors["w1"]["shape"] = [16, 256, 3, 3]
    doc["constraints"] = [copy.deepcopy(c) for c in constraints]
    return doc


# --------------------------------------------------------------------------------------------- brute force
def _range(value: Any) -> tuple[float, float]:
    if isinstance(value, dict):
        return float(value.get("min", -math.inf)), float(value.get("max", math.inf))
    return float(value), float(value)


def brute_force(doc: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """The minimum of the objective over every design point of the unconstrained grid (or the instance's hardware)
    that meets every array / SRAM record, and every choice of one permitted schedule per layer (at most
    ``max_schedules`` distinct), each layer costed by the problem's cost model; and one minimiser."""
    free = copy.deepcopy(doc)
    constraints = free.pop("constraints", [])
    data = harness.prepare(instance_from_dict(free)).data
    points = data.space.points(data.tech) if data.space is not None else data.base
    keep = np.ones(len(points), dtype=bool)
    for c in constraints:
        if c["kind"] in ("array", "sram"):
            for key, value in c.items():
                if key in HW_OF:
                    lo, hi = _range(value)
                    v = getattr(points, HW_OF[key])
                    keep &= (v >= lo) & (v <= hi)
    points = points.subset(np.flatnonzero(keep))
    if not len(points):
        return math.inf, None
    kinds = op_kinds(doc)
    layers = data.layers
    options = {s for s in SCHEDULES if s in doc["options"].get("schedules", SCHEDULES)}
    allowed = []
    for layer in layers:
        ok = set(options)
        for c in constraints:
            if c["kind"] == "schedules" and layer.name in c.get("layers", [layer.name]) and \
                    kinds[layer.name] in c.get("op_kinds", [kinds[layer.name]]):
                ok &= {s for s in SCHEDULES if s.lower() in {a.lower() for a in c["allowed"]}}
        allowed.append(sorted(ok))
    hw = points.hardware(b_f=data.bits.b_f, b_i=data.bits.b_i, b_p=data.bits.b_p, b_o=data.bits.b_o,
                         dram_bw=data.bits.dram_bw, dram_block=128)
    cost = {}
    for layer, ok in zip(layers, allowed, strict=True):
        for s in ok:
            ed = layer_energy_delay(layer, s, hw, data.tech,
                                    reference_fc_compute=bool(doc["options"].get("reference_fc_compute")))
            n = len(points)
            cost[layer.name, s] = (np.broadcast_to(ed.energy, (n,)), np.broadcast_to(ed.delay, (n,)))
    k = doc["options"].get("max_schedules")
    best, arg = math.inf, None
    for choice in itertools.product(*allowed):
        if k is not None and len(set(choice)) > k:
            continue
        E = [cost[la.name, s][0] for la, s in zip(layers, choice, strict=True)]
        D = [cost[la.name, s][1] for la, s in zip(layers, choice, strict=True)]
        with np.errstate(invalid="ignore", over="ignore"):
            if doc["objective"] == "network_ed":
                value = np.sum(E, axis=0) * np.sum(D, axis=0)
            else:
                a, b = FIGURES[doc["objective"]]
                value = np.sum([e ** a * d ** b for e, d in zip(E, D, strict=True)], axis=0)
        value = np.where(np.isnan(value), np.inf, value)
        h = int(np.argmin(value))
        if value[h] < best:
            best = float(value[h])
            arg = {"hardware": points.point(h), "schedules": dict(zip([la.name for la in layers], choice, strict=True))}
    return best, arg


def op_kinds(doc: dict[str, Any]) -> dict[str, str]:
    return {op.name: str(op.kind) for op in instance_from_dict({**doc, "constraints": []}).graph.operators}


def meets(doc: dict[str, Any], solution: dict[str, Any]) -> list[str]:
    """The constraints (by index) a solution document breaks, read from the records themselves."""
    kinds = op_kinds(doc)
    broken = []
    for i, c in enumerate(doc["constraints"]):
        if c["kind"] == "schedules":
            for layer, s in solution["schedules"].items():
                if layer in c.get("layers", [layer]) and kinds[layer] in c.get("op_kinds", [kinds[layer]]) and \
                        s.lower() not in {a.lower() for a in c["allowed"]}:
                    broken.append(f"constraints[{i}]")
        else:
            for key, value in c.items():
                if key in HW_OF:
                    lo, hi = _range(value)
                    if not lo <= solution["hardware"][HW_OF[key]] <= hi:
                        broken.append(f"constraints[{i}]")
    return broken


def minimal_infeasible_subsets(doc: dict[str, Any]) -> list[list[int]]:
    """Every subset of the constraint list that brute force finds infeasible while each of its proper subsets is
    feasible."""
    cons = doc["constraints"]
    infeasible: list[tuple[int, ...]] = []
    for size in range(len(cons) + 1):
        for subset in itertools.combinations(range(len(cons)), size):
            if any(set(m) <= set(subset) for m in infeasible):
                continue
            trial = {**doc, "constraints": [cons[i] for i in subset]}
            if not math.isfinite(brute_force(trial)[0]):
                infeasible.append(subset)
    return [list(m) for m in infeasible]


def check_all_methods(doc: dict[str, Any]) -> float:
    """Exact and exhaustive reach the brute-force minimum under the constraints (and their solutions meet them);
    every heuristic's solution meets them or it found none. Returns the minimum."""
    truth, _ = brute_force(doc)
    assert math.isfinite(truth)
    p = harness.prepare(instance_from_dict(doc))
    for method in ("exact", "exhaustive"):
        r = harness.solve(p, method, options=DET)
        assert r.status == Status.OPTIMAL and r.verified, (method, r.message)
        assert r.objective == pytest.approx(truth, rel=1e-9), method
        assert meets(doc, r.solution_document()["solution"]) == [], method
        assert len(r.constraints) == len(doc["constraints"])
    for method in HEURISTICS:
        r = harness.solve(p, method, options=DET)
        if r.status == Status.NO_SOLUTION:
            assert r.message, method
            continue
        assert r.status == Status.FEASIBLE and r.verified, (method, r.message)
        assert meets(doc, r.solution_document()["solution"]) == [], method
        assert r.objective >= truth * (1 - 1e-12), method
    return truth


# --------------------------------------------------------------------------------------------- schedules
SCHEDULE_CASES: dict[str, list[dict[str, Any]]] = {
    "one-layer": [{"kind": "schedules", "layers": ["conv1"], "allowed": ["XYZoZi"]}],
    "by-kind-lowercase": [{"kind": "schedules", "op_kinds": ["conv2d"], "allowed": ["xyzizo", "zixyzo"]}],
    "intersecting": [{"kind": "schedules", "allowed": ["XYZiZo", "XZoYZi", "XYZoZi"]},
                     {"kind": "schedules", "layers": ["fc", "conv2"], "allowed": ["XZoYZi", "XZiYZo"]}],
    "fc-only": [{"kind": "schedules", "op_kinds": ["matmul"], "allowed": ["ZiXYZo"]}],
}


@pytest.mark.parametrize("case", list(SCHEDULE_CASES))
@pytest.mark.parametrize(("objective", "max_schedules"), [("ed", None), ("ed", 1), ("energy", 2),
                                                           ("network_ed", 2)])
def test_schedules_exact_equals_brute_force(case: str, objective: str, max_schedules: int | None) -> None:
    doc = doc_with(SCHEDULE_CASES[case], objective=objective, budget=1.2, max_schedules=max_schedules)
    check_all_methods(doc)


def test_schedules_change_the_optimum() -> None:
    # the unconstrained optimum runs conv1 with some schedule; forbidding it changes the answer (and costs)
    free, arg = brute_force(doc_with([], budget=1.2))
    assert arg is not None
    others = [s for s in SCHEDULES if s != arg["schedules"]["conv1"]]
    doc = doc_with([{"kind": "schedules", "layers": ["conv1"], "allowed": others}], budget=1.2)
    constrained = check_all_methods(doc)
    assert constrained > free


def test_fixed_heuristic_of_a_forbidden_schedule_reports_the_constraint() -> None:
    doc = doc_with([{"kind": "schedules", "name": "stem", "layers": ["conv1"], "allowed": ["XZiYZo"]}], budget=1.2)
    r = harness.solve(harness.prepare(instance_from_dict(doc)), "fixed-xyzizo", options=DET)
    assert r.status == Status.NO_SOLUTION
    assert r.message.startswith("constraints[0] (schedules 'stem'): layer conv1")


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [None, 2])
def test_codesign_models_under_a_schedule_mask_equal_brute_force(seed: int, k: int | None) -> None:
    # random cost tables: the MILP (forbidden columns fixed to 0), the sweep and the network E·D search
    rng = np.random.default_rng(seed)
    L, S, H = 4, 4, 6
    energy, delay = rng.uniform(1, 3, (L, S, H)), rng.uniform(1, 3, (L, S, H))
    delay[rng.random(delay.shape) < 0.1] = np.inf
    area = rng.integers(1, 4, H).astype(float)
    permitted = rng.random((L, S)) < 0.6
    permitted[np.arange(L), rng.integers(0, S, L)] = True  # every layer keeps a schedule
    layers = tuple(SystolicLayer(ConvShape(f"l{i}", 1, 1, 1, 1, 1, 1)) for i in range(L))
    table = CostTable(layers, tuple(f"s{i}" for i in range(S)), energy, delay)
    fig = table.figure("ed")
    best_sum, best_prod = math.inf, math.inf
    for choice in itertools.product(*[np.flatnonzero(permitted[i]) for i in range(L)]):
        if k is not None and len(set(choice)) > k:
            continue
        for h in range(H):
            best_sum = min(best_sum, sum(fig[i, s, h] for i, s in enumerate(choice)))
            if k is None:
                e = sum(energy[i, s, h] for i, s in enumerate(choice))
                best_prod = min(best_prod, e * sum(delay[i, s, h] for i, s in enumerate(choice)))
    answers = [codesign.exhaustive(table, "ed", area, max_schedules=k, permitted=permitted),
               codesign.milp(table, "ed", area, max_schedules=k, permitted=permitted, incumbent_points=1,
                             options=DET)]
    if k is None:
        answers.append(codesign.network_ed(table, area, permitted=permitted))
    for ans, truth in zip(answers, [best_sum, best_sum, best_prod], strict=False):
        assert ans.value == pytest.approx(truth, rel=1e-9), ans.method
        assert permitted[np.arange(L), ans.choice].all(), ans.method


# --------------------------------------------------------------------------------------------- array and sram
HARDWARE_CASES: dict[str, list[dict[str, Any]]] = {
    "rows-fixed": [{"kind": "array", "rows": 14}],
    "cols-bounded": [{"kind": "array", "cols": {"min": 10, "max": 14}}],
    "both": [{"kind": "array", "rows": {"max": 10}, "cols": 16}],
    "fsram-fixed": [{"kind": "sram", "fSRAM": 16}],
    "psram-isram-bounded": [{"kind": "sram", "pSRAM": {"min": 8}, "iSRAM": {"max": 8}}],
    "array-and-sram": [{"kind": "array", "rows": {"min": 16}}, {"kind": "sram", "pSRAM": 4, "fSRAM": {"max": 8}}],
    "with-schedules": [{"kind": "array", "cols": {"min": 12}},
                       {"kind": "schedules", "op_kinds": ["conv2d"], "allowed": ["XYZoZi", "XZoYZi"]}],
}


@pytest.mark.parametrize("case", list(HARDWARE_CASES))
@pytest.mark.parametrize("objective", ["ed", "network_ed"])
def test_hardware_bounds_exact_equals_brute_force(case: str, objective: str) -> None:
    doc = doc_with(HARDWARE_CASES[case], objective=objective, max_schedules=2)
    truth = check_all_methods(doc)
    assert truth >= brute_force(doc_with([], objective=objective, max_schedules=2))[0] * (1 - 1e-12)


def test_bounds_on_the_instance_hardware_without_codesign() -> None:
    # the instance's array is 8 x 8 with 4 kB SRAMs: bounds it meets change nothing
    met = [{"kind": "array", "rows": 8, "cols": {"max": 8}}, {"kind": "sram", "fSRAM": 4},
           {"kind": "schedules", "layers": ["conv2"], "allowed": ["XYZoZi"]}]
    truth = check_all_methods(doc_with(met, codesign=False))
    assert truth == pytest.approx(brute_force(doc_with(met[2:], codesign=False))[0], rel=1e-12)


# --------------------------------------------------------------------------------------------- evaluator
def test_evaluator_names_each_broken_constraint() -> None:
    cons = [{"kind": "schedules", "name": "stem", "layers": ["conv1"], "allowed": ["XYZiZo"]},
            {"kind": "array", "rows": 10, "cols": {"min": 10}},
            {"kind": "sram", "fSRAM": {"max": 4}, "pSRAM": 8}]
    doc = doc_with(cons)
    p = harness.prepare(instance_from_dict(doc))
    r = harness.solve(p, "exact", options=DET)
    assert r.status == Status.OPTIMAL and r.verified
    good = r.solution_document()
    assert harness.verify(p, good).feasible
    # each tampering (a grid point within the budget, a supported schedule) breaks exactly one constraint
    tampering = [
        ("constraints[0] (schedules 'stem'): layer conv1 runs XZoYZi", ("schedules", "conv1", "XZoYZi")),
        ("constraints[1] (array): rows is 12, not 10", ("hardware", "J", 12)),
        ("constraints[1] (array): cols is 8, not at least 10", ("hardware", "K", 8)),
        ("constraints[2] (sram): fSRAM is 8 kB, not at most 4 kB", ("hardware", "f_kb", 8)),
        ("constraints[2] (sram): pSRAM is 4 kB, not 8 kB", ("hardware", "p_kb", 4)),
    ]
    for expected, (part, key, value) in tampering:
        bad = copy.deepcopy(good)
        bad["solution"][part][key] = value
        assert meets(doc, bad["solution"]) == [expected.split(" ")[0]]
        ev = harness.verify(p, bad)
        assert not ev.feasible
        assert any(v.startswith(expected) for v in ev.violations), (expected, ev.violations)


# --------------------------------------------------------------------------------------------- conflicts
CONFLICTS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    # rows fixed to 8 and bounded to >= 10 (certain from the records alone)
    "array-bounds": ([{"kind": "array", "rows": 8}, {"kind": "sram", "fSRAM": 8},
                      {"kind": "array", "rows": {"min": 10}, "cols": 10}], {}),
    # conv1 by name vs every conv by kind: no schedule left for conv1
    "schedule-sets": ([{"kind": "schedules", "op_kinds": ["matmul"], "allowed": ["XYZoZi"]},
                       {"kind": "schedules", "layers": ["conv1"], "allowed": ["XYZiZo", "ZiXYZo"]},
                       {"kind": "schedules", "op_kinds": ["conv2d"], "allowed": ["XZiYZo", "XYZoZi"]}], {}),
    # ZiXYZo on a 256-channel conv1 needs a 32 kB filter SRAM for a bounded delay: only the search finds it
    "schedule-vs-sram": ([{"kind": "array", "cols": {"max": 12}},
                          {"kind": "schedules", "layers": ["conv1"], "allowed": ["ZiXYZo"]},
                          {"kind": "sram", "fSRAM": {"max": 16}}], {"wide_conv1": True}),
    # a schedule the hardware does not support (options.schedules): that constraint alone
    "unsupported-schedule": ([{"kind": "sram", "iSRAM": {"min": 8}},
                              {"kind": "schedules", "layers": ["conv2"], "allowed": ["ZiXYZo", "XYZoZi"]}],
                             {"schedules": ["XYZiZo", "XZiYZo"]}),
    # co-design off: the instance's 8-row array against a fixed 16
    "instance-hardware": ([{"kind": "schedules", "layers": ["fc"], "allowed": ["XYZiZo"]},
                           {"kind": "array", "rows": 16}], {"codesign": False}),
}


@pytest.mark.parametrize("case", list(CONFLICTS))
@pytest.mark.parametrize("method", ["exact", "exhaustive"])
def test_conflict_names_the_constraints_that_cannot_hold_together(case: str, method: str) -> None:
    cons, extra = CONFLICTS[case]
    doc = doc_with(cons, budget=2.0, max_schedules=2, **extra)
    cores = minimal_infeasible_subsets(doc)
    assert len(cores) == 1, cores  # the expected answer: the one minimal infeasible subset
    expected = [f"constraints[{i}] ({cons[i]['kind']})" for i in cores[0]]
    p = harness.prepare(instance_from_dict(doc))
    r = harness.solve(p, method, options=DET)
    assert r.status == Status.INFEASIBLE
    assert r.conflict == expected
    assert all(label in r.message for label in expected)
    for name in HEURISTICS:  # no heuristic invents an answer
        assert harness.solve(p, name, options=DET).status in (Status.NO_SOLUTION, Status.INFEASIBLE)


@pytest.mark.parametrize("case", ["array-bounds", "schedule-sets", "schedule-vs-sram"])
def test_exact_and_heuristics_enforce_without_the_early_check(case: str) -> None:
    # past infeasibility_reason: the exact driver's own restriction proves infeasibility, the heuristics fail
    cons, extra = CONFLICTS[case]
    doc = doc_with(cons, max_schedules=2, **extra)
    p = harness.prepare(instance_from_dict(doc))
    for method in ("exact", "exhaustive"):
        out = p.problem.solve_exact(p.data, method, solver=None, options=DET)
        assert out is not None and out.status == Status.INFEASIBLE and out.solution is None
    for name in HEURISTICS:
        with pytest.raises(HeuristicFailure):
            p.problem.run_heuristic(name, p.data, DET)


# --------------------------------------------------------------------------------------------- malformed
MALFORMED: list[tuple[dict[str, Any], tuple[str, ...]]] = [
    ({"kind": "schedules", "layers": ["conv9"], "allowed": ["XYZiZo"]}, ("constraints[0].layers[0]", "conv9")),
    ({"kind": "schedules", "op_kinds": ["pool"], "allowed": ["XYZiZo"]}, ("constraints[0].op_kinds[0]", "pool")),
    ({"kind": "schedules", "op_kinds": ["depthwise_conv2d"], "allowed": ["XYZiZo"]}, ("constraints[0]",
                                                                                        "selects no layer")),
    ({"kind": "schedules", "allowed": ["XYZ"]}, ("constraints[0].allowed[0]", "XYZiZo, XZiYZo")),
    ({"kind": "schedules", "allowed": []}, ("constraints[0].allowed",)),
    ({"kind": "array", "rows": {"min": 20, "max": 10}}, ("constraints[0].rows", "min 20 is above max 10")),
    ({"kind": "array"}, ("constraints[0]", "names none of rows, cols")),
    ({"kind": "sram", "name": "s"}, ("constraints[0]", "names none of fSRAM, iSRAM, pSRAM")),
    ({"kind": "array", "rows": 0}, ("constraints[0].rows",)),
    ({"kind": "array", "depth": 4}, ("constraints[0]", "depth")),
    ({"kind": "sram", "fSRAM": 12}, ("constraints[0].fSRAM", "12 kB", "4, 8, 16")),
    ({"kind": "sram", "pSRAM": {"min": 5, "max": 7}}, ("constraints[0].pSRAM", "within [5, 7] kB")),
    ({"kind": "sram", "psum": 8}, ("constraints[0]", "psum")),
    ({"kind": "pin", "tensor": "x"}, ("constraints[0].kind",)),
]


@pytest.mark.parametrize(("record", "needles"), MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_malformed_constraint_is_a_located_exit_2_error(tmp_path: Path, record: dict[str, Any],
                                                        needles: tuple[str, ...]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc_with([record])))
    run = CliRunner().invoke(cli, ["solve", str(path)])
    assert_bad_input(run.exit_code, run.stderr, "bad.yaml", *needles)


# --------------------------------------------------------------------------------------------- shipped example
def test_shipped_constrained_instance_solves_and_verifies(tmp_path: Path) -> None:
    solve_and_verify(SHIPPED, tmp_path / "sol.yaml", "--method", "exact")
    sol = yaml.safe_load((tmp_path / "sol.yaml").read_text())
    doc = yaml.safe_load(SHIPPED.read_text())
    assert meets(doc, sol["solution"]) == []
    assert [c["at"] for c in sol["constraints"]] == ["constraints[0] (array 'fixed-height')",
                                                    "constraints[1] (sram 'small-psum')",
                                                    "constraints[2] (schedules 'stem')"]
