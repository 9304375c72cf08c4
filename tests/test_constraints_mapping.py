"""Mapping constraints through the whole problem (resolution, every method, the evaluator, conflicts, the CLI).

A small convolution (K=4 C=2 P=2 R=2) on a small accelerator (DRAM -> shared buffer -> a register file per PE, 2x2
PEs). For each constraint kind the expected optimum is derived here: every mapping of the *unconstrained* space is
enumerated (``all_mappings``) on the architecture the constraint implies (built here: a bypassed memory, a reshaped
array), filtered by a predicate written in this file from the constraint's documented meaning, and the best one is
the reference. The 'exhaustive' method (which enumerates the constrained space with its own filter) and the exact
method must find it; every heuristic must return a mapping the predicate accepts, or no solution; the evaluator
must name the constraint a hand-made violating mapping breaks. Infeasible combinations must end ``infeasible`` with
the conflicting constraints (derived by hand) named; malformed ones are located exit-2 errors.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import assert_bad_input, run_dlaopt, solve_and_verify
from mapping_cases import small_hardware_doc

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.exhaustive import all_mappings
from dlaopt.formulations.mapping.loopnest import LoopNest, loopnest_from_operator
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.problem import MappingSolution
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "instances" / "mapping" / "small-convs-constrained.yaml"
DET = SolveOptions(threads=1, deterministic=True, seed=0)
HEURISTICS = ("random", "ga", "nvdla", "eyeriss", "shidiannao")
SLOTS = ["T0", "S1:rows", "S1:cols", "T1", "T2"]  # rf loops, the PE array's rows and columns, glb loops, DRAM loops
T_RF, ROWS, COLS, T_GLB, T_DRAM = range(5)
LEVEL = {"rf": 0, "glb": 1, "dram": 2}

HARDWARE: dict[str, Any] = small_hardware_doc("small", rf_write_bytes_per_cycle=4)


def conv_op(name: str, x: str, w: str, y: str) -> dict[str, Any]:
    return {"name": name, "kind": "conv2d", "inputs": [x, w], "outputs": [y]}


def workload(layers: int = 1) -> dict[str, Any]:
    """``layers`` identical convolutions x [1,2,3,1] * w [4,2,2,1] -> [1,4,2,1]: K=4 C=2 P=2 R=2."""
    tensors = [{"name": "x0", "shape": [1, 2, 3, 1], "role": "input"}]
    ops = []
    for i in range(layers):
        tensors.append({"name": f"w{i}", "shape": [4, 2, 2, 1], "role": "weight"})
        tensors.append({"name": f"y{i}", "shape": [1, 4, 2, 1], "role": "output"})
        ops.append(conv_op("conv" if i == 0 else f"conv{i}", "x0", f"w{i}", f"y{i}"))
    return {"name": "t", "dtype_bytes": 1, "tensors": tensors, "operators": ops}


def doc(constraints: list[dict[str, Any]], *, layers: int = 1, **options: Any) -> dict[str, Any]:
    return {"problem": "mapping", "name": "constrained", "objective": "energy", "workload": workload(layers),
            "hardware": copy.deepcopy(HARDWARE), "constraints": constraints,
            "options": {"workers": 1, "random_samples": 200, "ga_population": 10, "ga_generations": 5, **options}}


def prepared(constraints: list[dict[str, Any]], **kw: Any) -> harness.Prepared:
    return harness.prepare(instance_from_dict(doc(constraints, **kw)))


# ------------------------------------------------------------------------------------------------ the test's own world
@cache
def base() -> tuple[LoopNest, MappingArch]:
    inst = instance_from_dict(doc([]))
    arch = arch_from_accelerator(inst.accelerator)
    assert [s.name for s in arch.slots()] == SLOTS
    assert [lv.name for lv in arch.levels] == list(LEVEL)
    return loopnest_from_operator(inst.graph, inst.graph.operators[0]), arch


def nest_padded(multiples: tuple[tuple[str, int], ...]) -> LoopNest:
    inst = instance_from_dict(doc([]))
    return loopnest_from_operator(inst.graph, inst.graph.operators[0], dict(multiples))


def bypassed(arch: MappingArch, level: int, operand: str) -> MappingArch:
    levels = list(arch.levels)
    lv = levels[level]
    levels[level] = replace(lv, stores=tuple(replace(s, operands=s.operands - {operand}) for s in lv.stores))
    return replace(arch, levels=tuple(levels))


def reshaped(arch: MappingArch, rows: int, cols: int) -> MappingArch:
    levels = list(arch.levels)
    levels[1] = replace(levels[1], fanout=(("rows", rows), ("cols", cols)))
    return replace(arch, levels=tuple(levels))


_BRUTE: dict[tuple, list[tuple[Mapping, float]]] = {}


def brute(nest: LoopNest, arch: MappingArch) -> list[tuple[Mapping, float]]:
    """Every valid mapping of the unconstrained space with its energy (cached per nest and architecture)."""
    key = (nest.shape_key(), arch)
    if key not in _BRUTE:
        out = []
        for m in all_mappings(nest, arch):
            r = evaluate_mapping(nest, arch, m)
            if r.valid:
                out.append((m, r.energy_pj))
        _BRUTE[key] = out
    return _BRUTE[key]


def live_order(m: Mapping, level: int, dims: list[str]) -> list[str]:
    slot = (T_RF, T_GLB, T_DRAM)[level]
    return [d for d in m.orders[level] if d in dims and m.factors[d][slot] > 1]


def spatial_product(m: Mapping) -> int:
    return math.prod(fs[k] for fs in m.factors.values() for k in (ROWS, COLS))


Pred = Callable[[Mapping, "tuple[int, int] | None"], bool]


@dataclass
class Case:
    constraints: list[dict[str, Any]]
    pred: Pred  # the constraint's meaning, written here
    archs: Callable[[], list[tuple[tuple[int, int] | None, MappingArch]]] = lambda: [(None, base()[1])]
    nest: Callable[[], LoopNest] = lambda: base()[0]
    options: dict[str, Any] = field(default_factory=dict)


def _everything(m: Mapping, shape: tuple[int, int] | None) -> bool:
    return True


CASES: dict[str, Case] = {
    "factors-temporal": Case([{"kind": "factors", "target": "glb", "factors": {"K": 2, "P": {"max": 1}}}],
                             lambda m, s: m.factors["K"][T_GLB] == 2 and m.factors["P"][T_GLB] == 1),
    "factors-bounds-by-memory": Case([{"kind": "factors", "target": "rf", "factors": {"C": {"min": 2}, "R": 2}}],
                                     lambda m, s: m.factors["C"][T_RF] >= 2 and m.factors["R"][T_RF] == 2),
    "factors-spatial-axis": Case([{"kind": "factors", "target": "glb", "type": "spatial", "axis": "rows",
                                   "factors": {"C": 2}}], lambda m, s: m.factors["C"][ROWS] == 2),
    "factors-spatial-fanout": Case([{"kind": "factors", "target": "glb", "type": "spatial",
                                     "factors": {"K": {"min": 4}}}],
                                   lambda m, s: m.factors["K"][ROWS] * m.factors["K"][COLS] >= 4),
    "permutation": Case([{"kind": "permutation", "target": "dram", "order": ["C", "K", "P"]},
                         {"kind": "permutation", "target": "glb", "order": ["R", "K"]}],
                        lambda m, s: live_order(m, 2, ["C", "K", "P"]) == [d for d in "CKP"
                                                                             if d in live_order(m, 2, ["C", "K", "P"])]
                        and live_order(m, 1, ["R", "K"]) in ([], ["R"], ["K"], ["R", "K"])),
    "spatial-dims": Case([{"kind": "spatial", "axes": {"rows": {"dims": ["K"]}, "cols": {"dims": ["P", "R"]}}}],
                         lambda m, s: all(m.factors[d][ROWS] == 1 for d in m.factors if d != "K")
                         and all(m.factors[d][COLS] == 1 for d in m.factors if d not in ("P", "R"))),
    "spatial-max": Case([{"kind": "spatial", "target": "glb", "axes": {"cols": {"max": 1}}}],
                        lambda m, s: math.prod(fs[COLS] for fs in m.factors.values()) <= 1),
    "bypass": Case([{"kind": "bypass", "target": "rf", "operands": ["O"]}], _everything,
                   archs=lambda: [(None, bypassed(base()[1], 0, "O"))]),
    "utilization": Case([{"kind": "utilization", "min": 1.0}], lambda m, s: spatial_product(m) == 4),
    "padding-off": Case([{"kind": "padding", "allowed": False, "layers": ["conv"]}], _everything,
                        options={"padding": {"P": 4}}),
    "padding-multiples": Case([{"kind": "padding", "multiples": {"P": 3}, "op_kinds": ["conv2d"]}], _everything,
                              nest=lambda: nest_padded((("P", 3),))),
    "shape": Case([{"kind": "shape", "shapes": [[1, 4], [4, 1]]}], lambda m, s: s in ((1, 4), (4, 1)),
                  archs=lambda: [((1, 4), reshaped(base()[1], 1, 4)), ((4, 1), reshaped(base()[1], 4, 1))]),
}


def reference(case: Case) -> float:
    """The constrained optimum by brute force over the unconstrained space, filtered by the case's predicate."""
    values = [v for shape, arch in case.archs() for m, v in brute(case.nest(), arch) if case.pred(m, shape)]
    assert values, "the case must be feasible"
    return min(values)


def solution_mapping(res: harness.Result) -> tuple[Mapping, tuple[int, int] | None]:
    layer = res.solution["layers"]["conv"]
    shape = layer.get("pe_array_shape")
    return Mapping.from_dict(layer), (None if shape is None else (shape[0], shape[1]))


def label(c: int, kind: str) -> str:
    return f"constraints[{c}] ({kind})"


# ------------------------------------------------------------------------------------------------ per kind
@pytest.mark.parametrize("name", list(CASES))
def test_every_method_keeps_the_constraint(name: str) -> None:
    case = CASES[name]
    p = prepared(case.constraints, **case.options)
    want = reference(case)
    brute_res = harness.solve(p, "exhaustive", options=DET)
    assert brute_res.status == Status.OPTIMAL and brute_res.verified, brute_res.message
    assert brute_res.objective == pytest.approx(want, rel=1e-9)
    assert case.pred(*solution_mapping(brute_res))
    assert [c["at"] for c in brute_res.constraints] == [label(i, c["kind"]) for i, c in enumerate(case.constraints)]
    exact = harness.solve(p, "exact", options=DET)
    assert exact.status == Status.OPTIMAL and exact.verified, exact.message
    assert exact.objective == pytest.approx(want, rel=1e-6)
    assert case.pred(*solution_mapping(exact))
    for h in HEURISTICS:
        res = harness.solve(p, h, options=DET)
        assert res.status in (Status.FEASIBLE, Status.NO_SOLUTION), (h, res.status, res.message)
        if res.status == Status.FEASIBLE:
            assert res.verified, (h, res.message)
            assert case.pred(*solution_mapping(res)), h
            assert res.objective >= want * (1 - 1e-9), h
        else:
            assert "constraints[" in res.message or "no valid mapping" in res.message, (h, res.message)


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n].pred is not _everything])
def test_the_evaluator_names_a_broken_constraint(name: str) -> None:
    case = CASES[name]
    p = prepared(case.constraints, **case.options)
    nest, arch = base()
    bad = next(m for m, _ in brute(nest, arch) if not case.pred(m, (2, 2) if name == "shape" else None))
    sol = MappingSolution({"conv": bad}, shapes={"conv": (2, 2)} if name == "shape" else {})
    ev = p.problem.evaluate(p.data, sol)
    assert not ev.feasible
    labels = {label(i, c["kind"]) for i, c in enumerate(case.constraints)}
    assert any(v.split(":")[0] in labels for v in ev.violations), ev.violations
    # a mapping the predicate accepts passes
    shape, good_arch = case.archs()[0]
    good = next(m for m, _ in brute(case.nest(), good_arch) if case.pred(m, shape))
    ok = p.problem.evaluate(p.data, MappingSolution({"conv": good}, shapes={"conv": shape} if shape else {}))
    assert ok.feasible, ok.violations


def test_the_evaluator_checks_padding_shape_record_and_bypass() -> None:
    nest, arch = base()
    m, _ = brute(nest, arch)[0]
    # padding: a mapping of the padded layer (P = 4) where padding is not allowed
    p = prepared(CASES["padding-off"].constraints, padding={"P": 4})
    padded = Mapping({**m.factors, "P": (*m.factors["P"][:-1], m.factors["P"][-1] * 2)}, m.orders)
    ev = p.problem.evaluate(p.data, MappingSolution({"conv": padded}))
    assert any(v.startswith(label(0, "padding") + ": layer conv: dimension P") for v in ev.violations), ev.violations
    # shape: a solution that does not say which shape it uses
    p = prepared(CASES["shape"].constraints)
    ev = p.problem.evaluate(p.data, MappingSolution({"conv": m}))
    assert any(v.startswith(label(0, "shape")) for v in ev.violations), ev.violations
    # bypass: the evaluator costs the mapping on the architecture without O in the register file
    p = prepared(CASES["bypass"].constraints)
    by = bypassed(arch, 0, "O")
    m2 = next(x for x, _ in brute(nest, by))
    ev = p.problem.evaluate(p.data, MappingSolution({"conv": m2}))
    assert ev.feasible and ev.objective == pytest.approx(evaluate_mapping(nest, by, m2).energy_pj, rel=1e-12)
    rep = p.problem.reports(p.data, MappingSolution({"conv": m2}))["conv"]
    assert set(rep.accesses["rf"]) == {"I", "W"}


def test_solution_round_trip_keeps_the_shape() -> None:
    p = prepared(CASES["shape"].constraints)
    res = harness.solve(p, "exhaustive", options=DET)
    layer = res.solution["layers"]["conv"]
    assert tuple(layer["pe_array_shape"]) in ((1, 4), (4, 1))
    sol = p.problem.solution_from_dict(p.data, res.solution)
    assert sol.shapes["conv"] == tuple(layer["pe_array_shape"])
    assert p.problem.evaluate(p.data, sol).objective == pytest.approx(res.objective, rel=1e-12)
    bad = copy.deepcopy(res.solution)
    bad["layers"]["conv"]["pe_array_shape"] = [0, "x"]
    with pytest.raises(InputError) as info:
        p.problem.solution_from_dict(p.data, bad)
    assert info.value.path == ("solution", "layers", "conv", "pe_array_shape")


# ------------------------------------------------------------------------------------------------ selectors, grouping
def test_a_constraint_on_one_of_two_identical_layers_splits_the_group() -> None:
    p = prepared([{"kind": "factors", "target": "glb", "factors": {"K": 4}, "layers": ["conv1"]}], layers=2)
    assert p.problem.describe(p.data)["unique_layers"] == 2
    free = prepared([], layers=2)
    assert free.problem.describe(free.data)["unique_layers"] == 1
    res = harness.solve(p, "exhaustive", options=DET)
    assert res.status == Status.OPTIMAL and res.verified
    got = {n: Mapping.from_dict(d).factors["K"][T_GLB] for n, d in res.solution["layers"].items()}
    assert got["conv1"] == 4
    nest, arch = base()
    free_best = min(v for _, v in brute(nest, arch))
    k4_best = min(v for m, v in brute(nest, arch) if m.factors["K"][T_GLB] == 4)
    assert res.objective == pytest.approx(free_best + k4_best, rel=1e-9)
    # an operator-kind selector that picks nothing mapped changes nothing
    none = prepared([{"kind": "factors", "target": "glb", "factors": {"K": 4}, "op_kinds": ["matmul"]}])
    assert not none.data.spaces[0].constrained


def test_targets_by_memory_name_on_a_partitioned_level() -> None:
    d = doc([{"kind": "factors", "target": "accumulators", "factors": {"C": 2}},
             {"kind": "bypass", "target": "weight_fifo", "operands": ["W"]}])
    d["hardware"]["memories"][1:] = [
        {"name": "unified_buffer", "kind": "scratchpad", "capacity_bytes": 256, "operands": ["I"]},
        {"name": "accumulators", "kind": "scratchpad", "capacity_bytes": 256, "operands": ["O"]},
        {"name": "weight_fifo", "kind": "scratchpad", "capacity_bytes": 256, "operands": ["W"]},
        {"name": "pe_weight", "kind": "register", "capacity_bytes": 4, "instances": 4, "operands": ["W"]},
    ]
    p = harness.prepare(instance_from_dict(d))
    space = p.data.spaces[0]
    arch = space.archs[0].arch
    level = next(j for j, lv in enumerate(arch.levels) if "accumulators" in [s.memory for s in lv.stores])
    assert [(b.dim, b.slots, b.lo, b.hi) for b in space.factor_bounds] == [("C", (arch.temporal_slot(level),), 2, 2)]
    assert [s.memory for s in arch.levels[level].stores] == ["unified_buffer", "accumulators"]
    assert "W" not in arch.levels[level].keeps and "W" in p.data.arch.levels[level].keeps
    res = harness.solve(p, "exhaustive", options=DET)
    assert res.status == Status.OPTIMAL and res.verified
    assert Mapping.from_dict(res.solution["layers"]["conv"]).factors["C"][arch.temporal_slot(level)] == 2


def test_a_missing_dimension_has_size_one() -> None:
    ok = prepared([{"kind": "factors", "target": "glb", "factors": {"B": 1, "M": {"max": 3}}}])
    assert not ok.data.spaces[0].constrained
    res = harness.solve(prepared([{"kind": "factors", "target": "glb", "factors": {"B": 2}},
                                  {"kind": "permutation", "target": "glb", "order": ["K", "C"]}]),
                        "exhaustive", options=DET)
    assert res.status == Status.INFEASIBLE
    assert res.conflict == [label(0, "factors")]


# ------------------------------------------------------------------------------------------------ conflicts
CONFLICTS = {
    # two fixed factors of the same loop (seen before any method runs)
    "same-loop": ([{"kind": "permutation", "target": "dram", "order": ["K", "C"]},
                   {"kind": "factors", "target": "glb", "factors": {"K": 4}},
                   {"kind": "factors", "target": "glb", "factors": {"K": 2}}], [1, 2]),
    # opposite orders of two loops that must both run at the level (found by the methods)
    "orders": ([{"kind": "permutation", "target": "glb", "order": ["K", "C"]},
                {"kind": "utilization", "min": 0.25},
                {"kind": "permutation", "target": "glb", "order": ["C", "K"]},
                {"kind": "factors", "target": "glb", "factors": {"K": 2, "C": 2}}], [0, 2, 3]),
    # every PE busy, but the rows may unroll nothing
    "utilization": ([{"kind": "spatial", "axes": {"rows": {"dims": []}}},
                     {"kind": "bypass", "target": "glb", "operands": ["W"]},
                     {"kind": "utilization", "min": 1.0}], [0, 2]),
}


@pytest.mark.parametrize("name", list(CONFLICTS))
@pytest.mark.parametrize("method", ["exhaustive", "exact"])
def test_infeasible_constraints_are_named(name: str, method: str) -> None:
    constraints, members = CONFLICTS[name]
    p = prepared(constraints)
    res = harness.solve(p, method, options=DET)
    assert res.status == Status.INFEASIBLE, res.message
    assert res.conflict == [label(i, constraints[i]["kind"]) for i in members]
    assert "cannot hold together" in res.message
    # without any one member the rest holds
    for i in members:
        rest = [c for j, c in enumerate(constraints) if j != i]
        assert harness.solve(prepared(rest), "exhaustive", options=DET, explain=False).status == Status.OPTIMAL


def test_heuristics_report_which_constraint_stopped_them() -> None:
    p = prepared(CONFLICTS["orders"][0])
    for h in HEURISTICS:
        res = harness.solve(p, h, options=DET)
        assert res.status == Status.NO_SOLUTION, (h, res.status)
        assert "layer conv" in res.message and "constraints[" in res.message, (h, res.message)


def test_certain_conflicts_are_seen_before_solving() -> None:
    cases = [
        ([{"kind": "factors", "target": "glb", "factors": {"K": 3}}], "does not divide"),
        ([{"kind": "factors", "target": "glb", "factors": {"K": {"min": 4, "max": 2}}}], "at most 2"),
        ([{"kind": "factors", "target": "glb", "type": "spatial", "axis": "rows", "factors": {"K": 4}}], "more than"),
        ([{"kind": "factors", "target": "dram", "factors": {"K": 2}},
          {"kind": "factors", "target": "glb", "factors": {"K": 4}}], "multiply to 8"),
        ([{"kind": "shape", "shapes": [[1, 4]]}, {"kind": "shape", "shapes": [[4, 1]]}], "no PE-array shape"),
        ([{"kind": "padding", "allowed": False}, {"kind": "padding", "multiples": {"K": 8}}], "padded"),
    ]
    for constraints, needle in cases:
        p = prepared(constraints)
        reason = p.problem.infeasibility_reason(p.data)
        assert reason is not None and needle in reason, (constraints, reason)
        res = harness.solve(p, "exact", options=DET)
        assert res.status == Status.INFEASIBLE
        assert res.conflict == [label(i, c["kind"]) for i, c in enumerate(constraints)], res.conflict


# ------------------------------------------------------------------------------------------------ malformed
MALFORMED = [
    ({"kind": "factors", "target": "l2", "factors": {"K": 2}}, "constraints[0].target", "glb"),
    ({"kind": "factors", "target": "glb", "factors": {"K": 2}, "layers": ["nope"]}, "constraints[0].layers[0]",
     "no operator named"),
    ({"kind": "factors", "target": "glb", "axis": "rows", "factors": {"K": 2}}, "constraints[0].axis", "spatial"),
    ({"kind": "factors", "target": "rf", "type": "spatial", "factors": {"K": 2}}, "constraints[0].type", "fanout"),
    ({"kind": "spatial", "axes": {"diag": {"dims": ["K"]}}}, "constraints[0].axes.diag", "rows"),
    ({"kind": "bypass", "target": "dram", "operands": ["I"]}, "constraints[0].target", "main memory"),
    ({"kind": "shape", "shapes": [[2, 4]]}, "constraints[0].shapes[0]", "at most 4 PEs"),
    ({"kind": "padding", "allowed": False, "multiples": {"P": 4}}, "constraints[0].multiples", "padding"),
    ({"kind": "utilization", "min": 1.0, "op_kinds": ["relu"]}, "constraints[0].op_kinds[0]", "matmul"),
    ({"kind": "factors", "target": "glb", "factors": {"Z": 2}}, "constraints[0]", ""),  # the schema's
]


@pytest.mark.parametrize("record,where,needle", MALFORMED)
def test_malformed_constraints_are_located_errors(record: dict, where: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        harness.prepare(instance_from_dict(doc([record])))
    assert where in info.value.render() and needle in info.value.render()


def test_malformed_constraints_through_the_cli(tmp_path: Path) -> None:
    for record, where, needle in MALFORMED[:2]:
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(doc([record])))
        run = run_dlaopt("solve", path, "--method", "exhaustive")
        assert_bad_input(run.returncode, run.stderr, where, needle, "bad.yaml")


# ------------------------------------------------------------------------------------------------ shipped example
def test_shipped_example_solves_and_verifies(tmp_path: Path) -> None:
    solve_and_verify(EXAMPLE, tmp_path / "sol.yaml", "--method", "exact")
    sol = yaml.safe_load((tmp_path / "sol.yaml").read_text())
    assert sol["constraints"], "the solution document lists the constraints in force"
