"""User constraints of tensor pinning (pin, forbid, off_chip, dma_cap), checked against an enumeration of the
constrained placements written here, independently of the models, the heuristics and the evaluator.

The enumeration decides, step by step, where every live buffer sits (a scratchpad, or main memory at a step that does
not use it), keeps only what the declared accesses, roles, capacities and the constraints allow, and prices each
placement from its residency runs — a load when a run starts (unless the step produces the buffer), a store when a
run that wrote the buffer ends before its last use or the buffer is a graph output; an off-chip buffer starts a run
at every step. Loads count at the run's first step, stores at its last (the per-step DMA a cap bounds).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from cli_helpers import ROOT, assert_bad_input, solve_and_verify
from click.testing import CliRunner
from pinning_cases import small_accelerator

from dlaopt.cli import cli
from dlaopt.errors import InputError
from dlaopt.formulations.base import HeuristicFailure
from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.formulations.pinning.evaluator import check_constraints, count_transfers
from dlaopt.formulations.pinning.heuristics import HEURISTICS
from dlaopt.formulations.pinning.milp import build_pinning_milp
from dlaopt.formulations.pinning.milp_gaps import build_gap_milp
from dlaopt.formulations.pinning.problem import PinningData, PinningProblem
from dlaopt.formulations.pinning.rules import RuleView, cheap_conflict
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware import Accelerator
from dlaopt.harness import solve
from dlaopt.io.instance import Instance, load_instance
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs.constraints import parse_constraints
from dlaopt.workload import NetworkBuilder, Workload
from dlaopt.workload.tensor import TensorRole

DET = SolveOptions(seed=0, threads=1, deterministic=True, mip_rel_gap=0.0)
PROBLEM = PinningProblem()
SHIPPED = ROOT / "instances" / "pinning" / "tiny-inline-constrained.yaml"


# ================================================================================================ small instances
def varied_workload(seed: int, n_ops: int = 5) -> Workload:
    """A random chain whose operators also read older tensors (idle gaps between uses), of varied sizes (slices
    halve, concatenations grow), with an occasional weight."""
    rng = random.Random(seed)
    b = NetworkBuilder(f"varied{seed}", dtype_bytes=1)
    live = [b.input("x", (rng.choice([8, 12, 16]),))]
    for i in range(n_ops):
        last = live[-1]
        kind = rng.choice(["add", "add", "shrink", "grow", "mul_w", "act"])
        same = [t for t in live[:-1] if b.shape(t) == b.shape(last)]
        if kind == "add" and same:
            y = b.add(last, rng.choice(same), name=f"op{i}")
        elif kind == "grow" and len(live) > 1:
            y = b.concat([last, rng.choice(live[:-1])], axis=0, name=f"op{i}")
        elif kind == "shrink" and b.shape(last)[0] >= 8:
            y = b.slice(last, [0], [b.shape(last)[0] // 2], name=f"op{i}")
        elif kind == "mul_w":
            y = b.mul(last, b.weight(f"w{i}", b.shape(last)), name=f"op{i}")
        else:
            y = b.activation(last, "relu", name=f"op{i}")
        live.append(y)
    return b.build(outputs=[live[-1]])


def mesh_workload(seed: int, n_ops: int = 4) -> Workload:
    """Two inputs and operators reading one or two random earlier tensors, all of one size (8 bytes)."""
    rng = random.Random(seed)
    b = NetworkBuilder(f"mesh{seed}", dtype_bytes=1)
    live = [b.input("x", (8,)), b.input("z", (8,))]
    for i in range(n_ops):
        ins = rng.sample(live, k=min(len(live), rng.choice([1, 2, 2])))
        live.append(b.activation(ins[0], "relu", name=f"op{i}") if len(ins) == 1 else
                    b.add(ins[0], ins[1], name=f"op{i}"))
    return b.build(outputs=[live[-1]])


def far_reuse_workload() -> Workload:
    """x is read by the first and the last of four operators: idle at steps 1 and 2."""
    b = NetworkBuilder("far", dtype_bytes=1)
    x = b.input("x", (16,))
    a = b.activation(x, "relu", name="op0")
    c = b.activation(b.activation(a, "relu", name="op1"), "relu", name="op2")
    return b.build([b.add(c, x, name="op3")])


def tight_scratchpads(wl: Workload) -> list[int]:
    """Two scratchpads of 3/4 and 1/2 of the most bytes any operator touches: little room beyond the operands."""
    peak = max(sum(wl.tensors[t].size_bytes for t in dict.fromkeys([*op.inputs, *op.outputs])) for op in wl.operators)
    return [math.ceil(0.75 * peak), math.ceil(0.5 * peak)]


def instance(wl: Workload, acc: Accelerator, constraints: Sequence[dict[str, Any]] = (), objective: str = "transfers",
             **options: Any) -> Instance:
    return Instance(problem="pinning", name=wl.name, workload=wl, hardware=acc, objective=objective,
                    options={"oversize": "error", **options}, constraints=parse_constraints(list(constraints)))


def prepared(wl: Workload, acc: Accelerator, constraints: Sequence[dict[str, Any]] = (), **kw: Any) -> PinningData:
    return PROBLEM.prepare(instance(wl, acc, constraints, **kw))


# ================================================================================================ the enumeration
@dataclass
class Spec:
    """The constraints as this file reads them: pinned cells, forbidden scratchpads, off-chip buffers, a cap."""

    pinned: dict[tuple[int, int], int] = field(default_factory=dict)
    forbidden: dict[int, set[int]] = field(default_factory=dict)
    off_chip: set[int] = field(default_factory=set)
    cap: int | None = None
    clash: bool = False  # two pins disagree: nothing satisfies it


def spec_of(graph: PinningGraph, wl: Workload, constraints: Sequence[dict[str, Any]]) -> Spec:
    spm = {s.name: k for k, s in enumerate(graph.scratchpads)}
    ops = [op.name for op in wl.operators]
    op_of_step = [ops.index(st.op) for st in graph.steps]
    spec = Spec()
    for c in constraints:
        bufs = [b for b, buf in enumerate(graph.buffers) if buf.tensor == c.get("tensor")]
        if c["kind"] == "pin":
            first, last = (ops.index(s) if isinstance(s, str) else s for s in c.get("steps", [0, len(ops) - 1]))
            for b in bufs:
                lo, hi = graph.window[b]
                for m in range(lo, hi + 1):
                    if first <= op_of_step[m] <= last and spec.pinned.setdefault((b, m), spm[c["memory"]]) != \
                            spm[c["memory"]]:
                        spec.clash = True
        elif c["kind"] == "forbid":
            for b in bufs:
                spec.forbidden.setdefault(b, set()).add(spm[c["memory"]])
        elif c["kind"] == "off_chip":
            spec.off_chip.update(bufs)
        else:
            spec.cap = c["bytes"] if spec.cap is None else min(spec.cap, c["bytes"])
    return spec


Rows = tuple[tuple[int, ...], ...]
_ENUMERATED: dict[tuple[Any, ...], list[Rows]] = {}


def placements(graph: PinningGraph) -> list[Rows]:
    """Every placement the declared accesses, roles and capacities allow: each buffer, at each step of its window,
    in a scratchpad or (at a step that does not use it) in main memory. Decided step by step, pruned on capacity."""
    key = (tuple((b.name, b.size_bytes, b.role) for b in graph.buffers),
           tuple((s.name, s.reads, s.writes) for s in graph.steps),
           tuple((s.capacity, s.access, s.holds) for s in graph.scratchpads))
    if key in _ENUMERATED:
        return _ENUMERATED[key]
    n_steps = len(graph.steps)

    def choices(b: int, m: int) -> list[int]:
        buf, st = graph.buffers[b], graph.steps[m]
        return ([] if m in graph.uses[b] else [-1]) + [
            k for k, s in enumerate(graph.scratchpads)
            if buf.size_bytes <= s.capacity and s.allows(buf.role, read=b in st.reads, written=b in st.writes)]

    alive = [[b for b, (lo, hi) in enumerate(graph.window) if lo <= m <= hi] for m in range(n_steps)]
    rows = [[-1] * (hi - lo + 1) for lo, hi in graph.window]
    out: list[Rows] = []

    def step(m: int) -> None:
        if m == n_steps:
            out.append(tuple(tuple(r) for r in rows))
            return
        bufs = alive[m]
        for combo in itertools.product(*(choices(b, m) for b in bufs)):
            load = [0] * len(graph.scratchpads)
            for b, k in zip(bufs, combo, strict=True):
                if k >= 0:
                    load[k] += graph.buffers[b].size_bytes
            if any(v > s.capacity for v, s in zip(load, graph.scratchpads, strict=True)):
                continue
            for b, k in zip(bufs, combo, strict=True):
                rows[b][m - graph.window[b][0]] = k
            step(m + 1)

    step(0)
    _ENUMERATED[key] = out
    return out


def meets(graph: PinningGraph, rows: Rows, spec: Spec) -> bool:
    """Whether a placement keeps the pins, forbids and off-chip rules (the cap is a matter of its price)."""
    if spec.clash:
        return False
    for b, (lo, _) in enumerate(graph.window):
        for i, k in enumerate(rows[b]):
            m = lo + i
            if spec.pinned.get((b, m), k) != k or k in spec.forbidden.get(b, ()):
                return False
            if k >= 0 and b in spec.off_chip and m not in graph.uses[b]:
                return False
    return True


def price(graph: PinningGraph, rows: Sequence[Sequence[int]], off_chip: set[int], objective: str, dma: Any
          ) -> tuple[float, list[float]]:
    """(objective, bytes moved per step) of one placement, from its residency runs."""
    total, per_step = 0.0, [0.0] * len(graph.steps)
    for b, buf in enumerate(graph.buffers):
        lo, hi = graph.window[b]
        runs: list[list[int]] = []
        for i, k in enumerate(rows[b]):
            m = lo + i
            if k < 0:
                continue
            if runs and runs[-1][1] == m - 1 and runs[-1][2] == k and b not in off_chip:
                runs[-1][1] = m
            else:
                runs.append([m, m, k])
        moves = 0
        for first, last, _ in runs:
            if first != graph.producer[b]:
                moves += 1
                per_step[first] += buf.size_bytes
            wrote = any(first <= w <= last for w in graph.write_steps[b])
            if wrote and (last < hi or buf.role == TensorRole.OUTPUT):
                moves += 1
                per_step[last] += buf.size_bytes
        if objective == "thesis":
            total += 2 * buf.size_bytes * len(runs)
        elif objective == "dma_cycles":
            total += moves * (dma.latency_cycles + buf.size_bytes / dma.bandwidth_bytes_per_cycle)
        else:
            total += moves * buf.size_bytes
    return total, per_step


def brute_force(graph: PinningGraph, spec: Spec, objective: str, dma: Any) -> float | None:
    """The least objective over the placements that meet every constraint, or ``None``."""
    best = None
    for rows in placements(graph):
        if not meets(graph, rows, spec):
            continue
        value, per_step = price(graph, rows, spec.off_chip, objective, dma)
        if spec.cap is None or max(per_step) <= spec.cap:
            best = value if best is None or value < best else best
    return best


def peaks(graph: PinningGraph, spec: Spec) -> list[tuple[float, int]]:
    """(transfers, most bytes any one step moves) of every placement meeting the spec (cap aside)."""
    out = []
    for rows in placements(graph):
        if meets(graph, rows, spec):
            value, per_step = price(graph, rows, spec.off_chip, "transfers", None)
            out.append((value, int(max(per_step))))
    return out


def satisfies(graph: PinningGraph, sol: PinningSolution, spec: Spec) -> bool:
    """Whether a (physically valid) solution meets the constraints."""
    rows = tuple(tuple(map(int, r)) for r in sol.placement)
    if not meets(graph, rows, spec):
        return False
    return spec.cap is None or max(price(graph, rows, spec.off_chip, "transfers", None)[1]) <= spec.cap


def to_solution(rows: Rows) -> PinningSolution:
    return PinningSolution([np.asarray(r, dtype=np.int32) for r in rows])


# ================================================================================================ the cases
def candidates(kind: str, graph: PinningGraph, wl: Workload) -> list[list[dict[str, Any]]]:
    """Every constraint of ``kind`` on the graph (one tensor, one scratchpad, one operator range)."""
    tensors = list(dict.fromkeys(buf.tensor for b, buf in enumerate(graph.buffers) if graph.uses[b]))
    spms = [s.name for s in graph.scratchpads]
    ops = [op.name for op in wl.operators]
    if kind == "pin":
        return [[{"kind": "pin", "tensor": t, "memory": k}] for t in tensors for k in spms]
    if kind == "pin_range":
        out = []
        for b, buf in enumerate(graph.buffers):
            lo, hi = graph.window[b]
            for first, last in itertools.combinations_with_replacement(range(lo, hi + 1), 2):
                if (first, last) != (lo, hi):
                    out += [[{"kind": "pin", "tensor": buf.tensor, "memory": k, "steps": [first, ops[last]]}]
                            for k in spms]
        return out
    if kind == "forbid":
        return [[{"kind": "forbid", "tensor": t, "memory": k}] for t in tensors for k in spms]
    if kind == "off_chip":
        return [[{"kind": "off_chip", "tensor": t}] for t in tensors]
    if kind == "dma_cap":  # the largest cap some placement meets, below the peak of every free optimum
        found = peaks(graph, Spec())
        best = min(v for v, _ in found)
        floor = min(p for v, p in found if v == best)
        below = [p for _, p in found if p < floor]
        return [[{"kind": "dma_cap", "bytes": max(below) if below else floor}]]
    raise AssertionError(kind)


_CHOSEN: dict[tuple[str, str], list[dict[str, Any]]] = {}


def binding(kind: str, graph: PinningGraph, wl: Workload) -> list[dict[str, Any]]:
    """The constraint of ``kind`` that raises the least transfers the most while leaving a placement (the first of
    the best): a constraint with something to decide."""
    key = (kind, wl.name)
    if key not in _CHOSEN:
        scored = [(brute_force(graph, spec_of(graph, wl, c), "transfers", None), i, c)
                  for i, c in enumerate(candidates(kind, graph, wl))]
        _CHOSEN[key] = max((v, -i, c) for v, i, c in scored if v is not None)[2]
    return _CHOSEN[key]


KINDS = ["pin", "pin_range", "forbid", "off_chip", "dma_cap"]
GRAPHS = [f"varied{seed}" for seed in (5, 12, 13, 30, 34, 37)] + ["mesh119", "mesh186", "far"]


def case(name: str) -> tuple[Workload, Accelerator, PinningGraph]:
    """The named small case: a workload and two scratchpads that leave little room beyond the operands."""
    if name == "far":
        wl, caps = far_reuse_workload(), [32, 16]
    elif name.startswith("mesh"):
        wl, caps = mesh_workload(int(name.removeprefix("mesh"))), [16, 8]
    else:
        wl = varied_workload(int(name.removeprefix("varied")))
        caps = tight_scratchpads(wl)
    acc = small_accelerator(caps)
    return wl, acc, prepared(wl, acc).graph


def solve_model(builder: Any, data: PinningData, objective: str, solver: str = "highs"
                ) -> tuple[float | None, PinningSolution | None]:
    form = builder(data.graph, objective, data.dma, pin_weights=data.pin_weights, rules=data.rules)
    br = solve_linear(form.model, solver, DET)
    assert br.status in (Status.OPTIMAL, Status.INFEASIBLE), br.message
    if br.status == Status.INFEASIBLE:
        return None, None
    return br.objective, form.decode(br.x)


# ================================================================================================ exact == enumeration
def test_the_cases_have_something_to_decide() -> None:
    """Each kind raises the optimum of some case (the tests below would be weak otherwise)."""
    for kind in KINDS:
        raised = []
        for name in GRAPHS:
            wl, _, graph = case(name)
            raised.append(brute_force(graph, spec_of(graph, wl, binding(kind, graph, wl)), "transfers", None)
                          > brute_force(graph, Spec(), "transfers", None))
        assert sum(raised) >= 2, kind


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", GRAPHS)
def test_exact_optimum_equals_the_enumeration(kind: str, name: str) -> None:
    wl, acc, graph = case(name)
    cons = binding(kind, graph, wl)
    for objective in ("transfers", "thesis", "dma_cycles"):
        data = prepared(wl, acc, cons, objective=objective)
        spec = spec_of(data.graph, wl, cons)
        expected = brute_force(data.graph, spec, objective, data.dma)
        assert expected is not None
        builders = [build_pinning_milp] + ([build_gap_milp] if kind != "dma_cap" else [])
        solvers = ["highs"] + (["cpsat"] if objective == "transfers" else [])
        for builder, solver in itertools.product(builders, solvers):
            got, sol = solve_model(builder, data, objective, solver)
            assert got == pytest.approx(expected, abs=1e-6), (builder.__name__, solver, objective)
            assert sol is not None and check_constraints(data.graph, sol) == [] and satisfies(data.graph, sol, spec)
            ev = PROBLEM.evaluate(data, sol)
            assert ev.feasible and ev.objective == pytest.approx(expected), ev.violations


@pytest.mark.parametrize("formulation", ["gaps", "steps"])
@pytest.mark.parametrize("name", GRAPHS)
def test_all_kinds_together_through_the_harness(formulation: str, name: str) -> None:
    """A pin over a range, a forbid, an off_chip, and then the tightest cap they leave room for, solved by the exact
    method (warm starts, relaxation, model): the enumeration's optimum, verified, under each formulation."""
    wl, acc, graph = case(name)
    kinds = ("pin_range", "forbid", "off_chip")
    for drop in (None, *kinds):  # the three together, else the first two that leave a placement
        cons = [c for k in kinds if k != drop for c in binding(k, graph, wl)][:3 if drop is None else 2]
        spec = spec_of(graph, wl, cons)
        found = peaks(graph, spec)
        if found:
            break
    cons = [*cons, {"kind": "dma_cap", "bytes": min(p for _, p in found), "name": "bus"}]
    expected = brute_force(graph, spec_of(graph, wl, cons), "transfers", acc.dma)
    res = solve(instance(wl, acc, cons, formulation=formulation), "exact", options=DET)
    assert res.status == Status.OPTIMAL and res.verified, res.message
    assert res.objective == pytest.approx(expected)
    labels = [f"constraints[{i}] ({c['kind']})" for i, c in enumerate(cons[:-1])]
    labels.append(f"constraints[{len(cons) - 1}] (dma_cap 'bus')")
    assert [c["at"] for c in res.constraints] == labels
    assert PROBLEM.describe(prepared(wl, acc, cons, formulation=formulation))["exact_model"] == "steps"
    without_cap = solve(instance(wl, acc, cons[:-1], formulation=formulation), "exact", options=DET)
    assert without_cap.status == Status.OPTIMAL
    assert without_cap.objective == pytest.approx(brute_force(graph, spec, "transfers", acc.dma))


# ================================================================================================ heuristics
@pytest.mark.parametrize("kind", [*KINDS, "all"])
@pytest.mark.parametrize("name", GRAPHS)
def test_every_heuristic_respects_the_constraints_or_finds_nothing(kind: str, name: str) -> None:
    wl, acc, graph = case(name)
    kinds = ["pin_range", "forbid", "off_chip", "dma_cap"] if kind == "all" else [kind]
    cons = [c for k in kinds for c in binding(k, graph, wl)]
    data = prepared(wl, acc, cons)
    spec = spec_of(data.graph, wl, cons)
    for h in HEURISTICS.values():
        for pin_weights in (True, False):
            try:
                sol = h(data.graph, pin_weights, data.rules)
            except HeuristicFailure as exc:
                assert "Traceback" not in str(exc)
                continue
            assert check_constraints(data.graph, sol) == []
            assert satisfies(data.graph, sol, spec)
            assert PROBLEM.evaluate(data, sol).feasible


def test_heuristics_find_placements_under_single_constraints() -> None:
    """Not every heuristic gives up: under one pin, forbid or off_chip most cases get a placement from each."""
    for name in GRAPHS:
        wl, acc, graph = case(name)
        for kind in ("pin", "forbid", "off_chip"):
            data = prepared(wl, acc, binding(kind, graph, wl))
            ok = 0
            for h in HEURISTICS.values():
                try:
                    h(data.graph, True, data.rules)
                    ok += 1
                except HeuristicFailure:
                    pass
            assert ok >= 2, (name, kind)


def test_a_heuristic_over_the_cap_reports_no_solution() -> None:
    wl, acc, graph = case("far")
    cap = min(p for _, p in peaks(graph, Spec()))
    naive_rows = tuple(tuple(map(int, r)) for r in HEURISTICS["naive"](graph, True).placement)
    assert max(price(graph, naive_rows, set(), "transfers", None)[1]) > cap  # naive reloads x at the last step
    res = solve(instance(wl, acc, [{"kind": "dma_cap", "bytes": cap, "name": "bus"}]), "naive")
    assert res.status == Status.NO_SOLUTION and "constraints[0] (dma_cap 'bus')" in res.message


# ================================================================================================ the evaluator
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["far", "varied13"])
def test_the_evaluator_agrees_with_the_enumeration_on_every_placement(kind: str, name: str) -> None:
    """Over every physically valid placement of a small case: the evaluator flags exactly the ones that break the
    constraint, each violation naming it, and prices them as the enumeration does."""
    wl, acc, graph = case(name)
    options = [binding(kind, graph, wl), *candidates(kind, graph, wl)]
    chosen = next(c for c in options if not all(meets(graph, r, spec_of(graph, wl, c)) for r in placements(graph))
                  or kind == "dma_cap")
    cons = [{**c, "name": "rule"} for c in chosen]
    data = prepared(wl, acc, cons)
    spec = spec_of(graph, wl, cons)
    label = f"constraints[0] ({cons[0]['kind']} 'rule')"
    broken = 0
    for rows in placements(graph):
        sol = to_solution(rows)
        ev = PROBLEM.evaluate(data, sol)
        ok = satisfies(graph, sol, spec)
        assert ev.feasible == ok, (rows, ev.violations)
        assert all(v.startswith(label + ": ") for v in ev.violations)
        broken += not ok
        assert ev.objective == pytest.approx(price(graph, rows, spec.off_chip, "transfers", None)[0])
    assert broken  # the constraint rules something out


def test_hand_made_violations_are_named() -> None:
    wl, acc = far_reuse_workload(), small_accelerator([32, 16])
    cons = [{"kind": "pin", "tensor": "x", "memory": "s1", "name": "x-home"},
            {"kind": "forbid", "tensor": "op0.out", "memory": "s0"},
            {"kind": "off_chip", "tensor": "op2.out"},
            {"kind": "dma_cap", "bytes": 16}]
    data = prepared(wl, acc, cons)
    g = data.graph
    index = {b.name: i for i, b in enumerate(g.buffers)}
    placed = {"x": {0: 0, 3: 1}, "op0.out": {0: 0, 1: 0}, "op1.out": {1: 0, 2: 0}, "op2.out": {2: 1, 3: 0},
              "op3.out": {3: 0}}

    def solution() -> PinningSolution:
        sol = PinningSolution.empty(g)
        for name, cells in placed.items():
            for m, k in cells.items():
                sol.set(g, index[name], m, k)
        assert check_constraints(g, sol) == []  # physically valid: only the user's constraints are broken
        return sol

    ev = PROBLEM.evaluate(data, solution())
    assert ev.violations == [
        "constraints[0] (pin 'x-home'): tensor 'x' is in 's0' at step 0 ('op0'), pinned to 's1'",
        "constraints[0] (pin 'x-home'): tensor 'x' is not on chip at step 1 ('op1'), pinned to 's1'",
        "constraints[0] (pin 'x-home'): tensor 'x' is not on chip at step 2 ('op2'), pinned to 's1'",
        "constraints[1] (forbid): tensor 'op0.out' is in 's0' at step 0 ('op0')",
        "constraints[1] (forbid): tensor 'op0.out' is in 's0' at step 1 ('op1')",
        # step 3 loads x and op2.out (moved from s1 to s0) and stores op3.out
        "constraints[3] (dma_cap): step 3 ('op3') moves 48 bytes, above the cap of 16"]
    placed.update({"x": dict.fromkeys(range(4), 1), "op2.out": {2: 0, 3: 0}})
    ev = PROBLEM.evaluate(data, solution())
    # x now stays in s1; op2.out is in s0 at both its uses, steps 2 and 3: allowed off chip, but as two residencies,
    # a store after step 2 and a load for step 3, where op3.out's final store also goes
    assert ev.violations == [
        "constraints[1] (forbid): tensor 'op0.out' is in 's0' at step 0 ('op0')",
        "constraints[1] (forbid): tensor 'op0.out' is in 's0' at step 1 ('op1')",
        "constraints[3] (dma_cap): step 3 ('op3') moves 32 bytes, above the cap of 16"]
    t = count_transfers(g, solution(), data.rules.streamed)
    c = index["op2.out"]
    assert t.loads[c] == 1 and t.stores[c] == 1
    assert count_transfers(g, solution()).loads[c] == 0  # as an ordinary tensor it would simply stay


def test_off_chip_tensor_kept_idle_is_a_violation() -> None:
    wl, acc = far_reuse_workload(), small_accelerator([32, 16])
    data = prepared(wl, acc, [{"kind": "off_chip", "tensor": "x"}])
    g = data.graph
    sol = PinningSolution.empty(g)
    for b, (lo, hi) in enumerate(g.window):
        for m in range(lo, hi + 1):
            if m in g.uses[b]:
                sol.set(g, b, m, 0)
    x = [b.name for b in g.buffers].index("x")
    sol.placement[x][:] = 1  # kept in s1 through steps 1 and 2
    ev = PROBLEM.evaluate(data, sol)
    assert ev.violations == [
        "constraints[0] (off_chip): tensor 'x' is kept in 's1' at step 1 ('op1'), which does not use it",
        "constraints[0] (off_chip): tensor 'x' is kept in 's1' at step 2 ('op2'), which does not use it"]


# ================================================================================================ conflicts
def minimal_infeasible_subsets(graph: PinningGraph, wl: Workload, cons: Sequence[dict[str, Any]]) -> list[set[int]]:
    """Every subset of the constraints that no placement satisfies while each proper subset is satisfiable."""
    def feasible(idx: Sequence[int]) -> bool:
        return brute_force(graph, spec_of(graph, wl, [cons[i] for i in idx]), "transfers", None) is not None

    bad: list[set[int]] = []
    for r in range(1, len(cons) + 1):
        for idx in itertools.combinations(range(len(cons)), r):
            if not any(s <= set(idx) for s in bad) and not feasible(idx):
                bad.append(set(idx))
    return bad


CONFLICTS: dict[str, list[dict[str, Any]]] = {
    "pin and forbid": [{"kind": "forbid", "tensor": "op0.out", "memory": "s1"},
                       {"kind": "pin", "tensor": "x", "memory": "s0", "name": "x-home"},
                       {"kind": "forbid", "tensor": "x", "memory": "s0"}],
    "two pins at once": [{"kind": "pin", "tensor": "x", "memory": "s0", "steps": [0, 1]},
                         {"kind": "pin", "tensor": "x", "memory": "s1", "steps": ["op1", "op3"]},
                         {"kind": "off_chip", "tensor": "op1.out"}],
    "pin and off_chip": [{"kind": "off_chip", "tensor": "x"},
                         {"kind": "pin", "tensor": "x", "memory": "s1"}],
    "cap below the must-move bytes": [{"kind": "pin", "tensor": "x", "memory": "s1"},
                                      {"kind": "dma_cap", "bytes": 15}],
    "forbidden everywhere": [{"kind": "forbid", "tensor": "op1.out", "memory": "s0"},
                             {"kind": "dma_cap", "bytes": 48},
                             {"kind": "forbid", "tensor": "op1.out", "memory": "s1"}],
    # no cheap test sees this one: with x kept out of s0 and s1 taken by op1.out at step 2, x cannot stay on chip
    # until step 3 (nor come back before it), and reloading it there with the final store of the output moves 32
    "only the model sees it": [{"kind": "pin", "tensor": "op2.out", "memory": "s0"},
                               {"kind": "forbid", "tensor": "x", "memory": "s0"},
                               {"kind": "pin", "tensor": "op1.out", "memory": "s1", "steps": [2, 2]},
                               {"kind": "dma_cap", "bytes": 16, "name": "bus"}],
}


@pytest.mark.parametrize("formulation", ["gaps", "steps"])
@pytest.mark.parametrize("case", sorted(CONFLICTS))
def test_conflicting_constraints_are_named(case: str, formulation: str) -> None:
    wl, acc = far_reuse_workload(), small_accelerator([32, 16])
    cons = CONFLICTS[case]
    inst = instance(wl, acc, cons, formulation=formulation)
    graph = PROBLEM.prepare(inst).graph
    iis = minimal_infeasible_subsets(graph, wl, cons)
    assert len(iis) == 1  # one answer to expect
    expected = [inst.constraints[i].label for i in sorted(iis[0])]
    res = solve(inst, "exact", options=DET)
    assert res.status == Status.INFEASIBLE and res.solution is None
    assert res.conflict == expected, res.message
    assert res.message.startswith("these constraints cannot hold together: " + ", ".join(expected))
    data = PROBLEM.prepare(inst)
    cheap = cheap_conflict(RuleView(data.graph, data.rules, data.pin_weights))
    assert (cheap is None) == (case == "only the model sees it"), cheap
    for h in HEURISTICS:
        assert solve(inst, h).status in (Status.INFEASIBLE, Status.NO_SOLUTION)


# ================================================================================================ tiling
def test_a_constraint_on_a_tiled_tensor_applies_to_every_chunk() -> None:
    b = NetworkBuilder("big", dtype_bytes=1)
    x = b.input("x", (64,))
    wl = b.build([b.activation(b.activation(x, "relu", name="r1"), "relu", name="r2")])
    acc = small_accelerator([48, 48])
    cons = [{"kind": "pin", "tensor": "x", "memory": "s1"}, {"kind": "forbid", "tensor": "r2.out", "memory": "s1"}]
    data = prepared(wl, acc, cons, oversize="tile")
    g = data.graph
    chunks = [i for i, buf in enumerate(g.buffers) if buf.tensor == "x"]
    assert len(chunks) > 1 and g.tiled_ops
    assert data.rules.pins[0].buffers == tuple(chunks)
    res = solve(instance(wl, acc, cons, oversize="tile"), "exact", options=DET)
    assert res.status == Status.OPTIMAL and res.verified, res.message
    for name, runs in res.solution["residency"].items():
        if name.startswith("x"):
            assert {r[2] for r in runs} == {"s1"}
        if name.startswith("r2.out"):
            assert {r[2] for r in runs} == {"s0"}
    sol = PROBLEM.solution_from_dict(data, res.solution)
    sol.placement[chunks[-1]][:] = 0
    assert any(v.startswith("constraints[0] (pin): tensor 'x' (chunk 'x[")
               for v in PROBLEM.evaluate(data, sol).violations)


# ================================================================================================ bad input
def write_case(tmp_path: Path, constraints: list[dict[str, Any]]) -> Path:
    doc = yaml.safe_load((ROOT / "instances" / "pinning" / "tiny-inline.yaml").read_text())
    doc["constraints"] = constraints
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


BAD: list[tuple[list[dict[str, Any]], tuple[str, ...]]] = [
    ([{"kind": "pin", "tensor": "nope", "memory": "spad0"}], ("constraints[0].tensor", "no tensor named 'nope'", "a1")),
    ([{"kind": "forbid", "tensor": "a1", "memory": "spad9"}], ("constraints[0].memory", "spad0, spad1")),
    ([{"kind": "forbid", "tensor": "a1", "memory": "spad0"}, {"kind": "pin", "tensor": "a1", "memory": "dram"}],
     ("constraints[1].memory", "'dram' is not a scratchpad")),
    ([{"kind": "off_chip", "tensor": "zz"}], ("constraints[0].tensor", "zz")),
    ([{"kind": "pin", "tensor": "a1", "memory": "spad0", "steps": [3, 1]}], ("constraints[0].steps", "reversed")),
    ([{"kind": "pin", "tensor": "a1", "memory": "spad0", "steps": [0, 8]}], ("constraints[0].steps[1]", "0..7")),
    ([{"kind": "pin", "tensor": "a1", "memory": "spad0", "steps": ["conv1", "nope"]}],
     ("constraints[0].steps[1]", "no operator named 'nope'")),
    ([{"kind": "pin", "tensor": "a1", "memory": "spad0", "steps": [5, 7]}],
     ("constraints[0].steps", "lives from operator 0 ('conv1') to 4 ('add2')")),
    ([{"kind": "pin", "tensor": "a1"}], ("constraints[0]", "memory")),
    ([{"kind": "dma_cap", "bytes": 0}], ("constraints[0].bytes",)),
    ([{"kind": "off_chip", "tensor": "a1", "memory": "spad0"}], ("constraints[0]", "memory")),
    ([{"kind": "pin", "tensor": "a1", "memory": "spad0", "steps": [1]}], ("constraints[0].steps",)),
]


@pytest.mark.parametrize(("constraints", "needles"), BAD, ids=lambda v: str(v)[:60])
def test_malformed_constraints_are_located_input_errors(tmp_path: Path, constraints: list[dict[str, Any]],
                                                        needles: tuple[str, ...]) -> None:
    path = write_case(tmp_path, constraints)
    result = CliRunner().invoke(cli, ["solve", str(path), "-m", "naive"])
    assert_bad_input(result.exit_code, result.stderr, str(path), *needles)


def test_a_bad_constraint_is_an_input_error_from_the_api() -> None:
    wl, acc = far_reuse_workload(), small_accelerator([32, 16])
    with pytest.raises(InputError) as info:
        prepared(wl, acc, [{"kind": "dma_cap", "bytes": 8}, {"kind": "pin", "tensor": "y", "memory": "s0"}])
    assert info.value.path == ("constraints", 1, "tensor")
    assert "x, op0.out" in info.value.message


# ================================================================================================ shipped instance
def test_shipped_constrained_instance_solves_in_seconds(tmp_path: Path) -> None:
    inst = load_instance(SHIPPED)
    assert {c.kind for c in inst.constraints} == {"pin", "forbid", "off_chip", "dma_cap"}
    free = solve(inst.with_constraints(()), "exact", options=DET)
    res = solve(inst, "exact", options=DET)
    assert res.status == Status.OPTIMAL and res.verified and res.time_s < 30
    assert res.objective > free.objective  # the constraints cost something
    assert len(res.constraints) == len(inst.constraints)
    solve_and_verify(SHIPPED, tmp_path / "sol.json")
    doc = yaml.safe_load((tmp_path / "sol.json").read_text())
    assert [c["at"] for c in doc["constraints"]] == [c.label for c in inst.constraints]


# ================================================================================================ cap repair
REPAIRED = ["onsram", "greedy", "coloring"]  # naive is the baseline: every operand only at its own step


def test_cap_repair_meets_the_shipped_cap_at_no_less_than_the_exact_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the shipped instance (cap at the least any placement can do) every heuristic's own placement breaks the
    cap; the repair brings onsram, greedy and coloring under it, and the evaluator verifies the result."""
    inst = load_instance(SHIPPED)
    data = PROBLEM.prepare(inst)
    cap = data.rules.dma_cap
    assert cap is not None
    exact = solve(inst, "exact", options=DET)
    assert exact.status == Status.OPTIMAL and exact.objective is not None
    for name in REPAIRED:
        res = solve(inst, name)
        assert res.status == Status.FEASIBLE and res.verified, (name, res.message)
        assert res.objective is not None and res.objective >= exact.objective - 1e-6, name
        sol = HEURISTICS[name](data.graph, data.pin_weights, data.rules)
        step_bytes = count_transfers(data.graph, sol, data.rules.streamed).step_bytes
        assert step_bytes is not None and step_bytes.max() <= cap.bytes, name
    import dlaopt.formulations.pinning.heuristics as heuristics

    monkeypatch.setattr(heuristics, "repair_dma_cap", lambda view, s: s)
    for name in HEURISTICS:  # without the repair every heuristic's own placement is over the cap
        with pytest.raises(HeuristicFailure, match="dma_cap"):
            HEURISTICS[name](data.graph, data.pin_weights, data.rules)


def test_cap_repair_leaves_placements_under_no_cap_untouched() -> None:
    """Without a cap, or with one no step reaches, a heuristic's placement is what it was."""
    from dlaopt.formulations.pinning.heuristics import repair_dma_cap

    inst = load_instance(SHIPPED)
    rest = [c for c in inst.constraints if c.kind != "dma_cap"]
    free = PROBLEM.prepare(inst.with_constraints(tuple(rest)))
    loose = PROBLEM.prepare(inst.with_constraints((*rest, *parse_constraints([{"kind": "dma_cap", "bytes": 1 << 30}]))))
    for name, h in HEURISTICS.items():
        try:
            a = h(free.graph, True, free.rules)
        except HeuristicFailure:
            with pytest.raises(HeuristicFailure):
                h(loose.graph, True, loose.rules)
            continue
        b = h(loose.graph, True, loose.rules)
        assert all(np.array_equal(x, y) for x, y in zip(a.placement, b.placement, strict=True)), name
        view = RuleView(free.graph, free.rules)
        same = repair_dma_cap(view, a)
        assert all(np.array_equal(x, y) for x, y in zip(a.placement, same.placement, strict=True)), name


@pytest.mark.parametrize("name", GRAPHS)
def test_repaired_heuristics_meet_every_cap_they_return_under(name: str) -> None:
    """The four tightest caps some placement meets (the least any placement can do first): each heuristic's result
    through the harness is verified and meets the cap (by this file's own pricing), or there is none."""
    wl, acc, graph = case(name)
    found = peaks(graph, Spec())
    least = min(p for _, p in found)
    caps = sorted({p for _, p in found if p >= least})[:4]
    for cap in caps:
        inst = instance(wl, acc, [{"kind": "dma_cap", "bytes": cap}])
        data = PROBLEM.prepare(inst)
        for h in HEURISTICS:
            res = solve(inst, h)
            if res.status == Status.NO_SOLUTION:
                assert "dma_cap" in res.message or "fit" in res.message, res.message
                continue
            assert res.verified, (h, cap, res.message)
            sol = HEURISTICS[h](data.graph, data.pin_weights, data.rules)
            rows = tuple(tuple(map(int, r)) for r in sol.placement)
            assert max(price(data.graph, rows, set(), "transfers", None)[1]) <= cap, (h, cap)
