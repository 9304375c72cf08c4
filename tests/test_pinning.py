"""Tensor pinning: exact methods against brute force, the evaluator against the MILP, heuristics never beat exact."""

from __future__ import annotations

import numpy as np
import pytest
from pinning_cases import brute_force, random_workload, small_accelerator, tiny_graph

from dlaopt.formulations.pinning.data import untiled_graph
from dlaopt.formulations.pinning.evaluator import check_constraints, count_transfers, objective_value
from dlaopt.formulations.pinning.heuristics import HEURISTICS
from dlaopt.formulations.pinning.milp import build_pinning_milp
from dlaopt.formulations.pinning.milp_gaps import build_gap_milp, identical_bins, merged_graph
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.harness import compare, solve
from dlaopt.io.instance import Instance
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.result import SolveOptions, Status

DETERMINISTIC = SolveOptions(seed=0, threads=1, deterministic=True, mip_rel_gap=0.0)

CASES = [(seed, [48, 24], None) for seed in range(8)] + [
    (seed, [32, 32, 24], ["input", "any", "output"]) for seed in range(3)
] + [(seed, [24, 24], None) for seed in range(8, 14)]  # identical scratchpads: the packing cuts are active


def _exact(graph, objective, dma, solver, builder=build_gap_milp):
    form = builder(graph, objective, dma)
    br = solve_linear(form.model, solver, DETERMINISTIC)
    assert br.status in (Status.OPTIMAL, Status.INFEASIBLE), br.message
    if br.status == Status.INFEASIBLE:
        return None, None
    sol = form.decode(br.x)
    return br.objective, sol


@pytest.mark.parametrize("objective", ["transfers", "dma_cycles", "thesis"])
@pytest.mark.parametrize(("seed", "caps", "accesses"), CASES)
def test_exact_equals_brute_force(seed, caps, accesses, objective):
    graph, dma = tiny_graph(seed, caps, accesses, n_ops=4 if accesses is None else 3)
    expected = brute_force(graph, objective, dma)
    for solver in ("highs", "cpsat"):
        if solver == "cpsat" and objective == "dma_cycles":
            continue  # fractional per-byte costs: covered by the scaled-objective test below
        for builder in (build_gap_milp, build_pinning_milp):
            got, sol = _exact(graph, objective, dma, solver, builder)
            if expected is None:
                assert got is None
                continue
            assert got == pytest.approx(expected, abs=1e-6), (solver, builder.__name__)
            assert check_constraints(graph, sol) == []
            assert objective_value(graph, count_transfers(graph, sol), objective, dma) == pytest.approx(expected)


def test_cpsat_with_fractional_costs_matches_highs():
    graph, dma = tiny_graph(3, [48, 24], n_ops=4)
    a, _ = _exact(graph, "dma_cycles", dma, "highs")
    b, _ = _exact(graph, "dma_cycles", dma, "cpsat")
    assert a == pytest.approx(b, rel=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_gap_model_prices_heuristics_like_the_evaluator(seed):
    """The gap model's encoding drops partial residencies inside a gap: feasible, priced exactly as the evaluator
    prices the decoded solution, and never costlier than the heuristic's own placement."""
    acc = small_accelerator([64, 40, 32])
    graph = untiled_graph(random_workload(seed, n_ops=7), acc)
    for objective in ("transfers", "dma_cycles", "thesis"):
        form = build_gap_milp(graph, objective, acc.dma)
        for name, h in HEURISTICS.items():
            sol = h(graph, True)
            x = form.encode(sol)
            assert form.model.max_violation(x) < 1e-9, name
            decoded = form.decode(x)
            assert check_constraints(graph, decoded) == []
            priced = objective_value(graph, count_transfers(graph, decoded), objective, acc.dma)
            assert form.model.objective_value(x) == pytest.approx(priced), (objective, name)
            assert priced <= objective_value(graph, count_transfers(graph, sol), objective, acc.dma) + 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_merged_relaxation_with_packing_cuts_bounds_the_optimum(seed):
    graph, dma = tiny_graph(seed, [24, 24], n_ops=4)
    expected = brute_force(graph, "transfers", dma)
    form = build_gap_milp(merged_graph(graph), "transfers", dma, bins=identical_bins(graph))
    br = solve_linear(form.model, "highs", DETERMINISTIC)
    if expected is not None:
        assert br.status == Status.OPTIMAL and br.objective <= expected + 1e-9


def test_packing_cuts_are_valid_and_bind():
    """Three 10-byte operands at one step cannot share two 16-byte scratchpads (each holds one): the cut
    (u^(1)(10/16) = 1 per operand, at most 2 bins) makes the merged relaxation infeasible, like the full model."""
    from dlaopt.workload import NetworkBuilder

    b = NetworkBuilder("three", dtype_bytes=1)
    x, y = b.input("x", (10,)), b.input("y", (10,))
    wl = b.build([b.add(x, y, name="sum")])
    g = untiled_graph(wl, small_accelerator([16, 16]))
    merged = build_gap_milp(merged_graph(g), "transfers", small_accelerator([16]).dma, bins=(2, 16))
    assert "packing_dff1" in merged.model.row_blocks
    assert solve_linear(merged.model, "highs", DETERMINISTIC).status == Status.INFEASIBLE
    plain = build_gap_milp(merged_graph(g), "transfers", small_accelerator([16]).dma, bins=(1, 32))
    assert solve_linear(plain.model, "highs", DETERMINISTIC).status == Status.OPTIMAL  # 30 <= 32 without cuts


@pytest.mark.parametrize("seed", range(6))
def test_milp_objective_equals_evaluator_on_every_heuristic(seed):
    """Encoding a heuristic's placement into the MILP's columns is feasible and prices it exactly as the
    evaluator does — the model and the evaluator implement the same cost semantics."""
    acc = small_accelerator([64, 40, 32])
    graph = untiled_graph(random_workload(seed, n_ops=7), acc)
    for objective in ("transfers", "dma_cycles", "thesis"):
        form = build_pinning_milp(graph, objective, acc.dma)
        for name, h in HEURISTICS.items():
            sol = h(graph, True)
            assert check_constraints(graph, sol) == [], name
            x = form.encode(sol)
            assert form.model.max_violation(x) < 1e-9, name
            expected = objective_value(graph, count_transfers(graph, sol), objective, acc.dma)
            assert form.model.objective_value(x) == pytest.approx(expected), (objective, name)


def _instance(workload, acc, objective="transfers", options=None):
    return Instance(problem="pinning", name=workload.name, workload=workload, hardware=acc, objective=objective,
                    options={"oversize": "tile", "chunk_fraction": 0.5, "pin_weights": True, **(options or {})})


@pytest.mark.parametrize("seed", range(5))
def test_exact_never_worse_than_any_heuristic_and_all_verified(seed):
    acc = small_accelerator([64, 40, 32])
    inst = _instance(random_workload(seed, n_ops=8), acc)
    results = compare(inst, options=DETERMINISTIC)
    by = {r.method: r for r in results}
    for r in results:
        assert r.verified, (r.method, r.message)
        assert r.verification["violations"] == []
    assert by["exact"].status == Status.OPTIMAL
    assert by["cpsat"].objective == pytest.approx(by["exact"].objective)
    for h in ("naive", "onsram", "greedy", "coloring"):
        assert by["exact"].objective <= by[h].objective + 1e-9
    assert by["naive"].metrics["reduction_factor"] == pytest.approx(0.0)
    assert by["exact"].gap == 0.0


def test_known_optimum_of_a_chain_with_reuse():
    """x -> a -> b, plus a consumed again at the end: with room for everything the only transfers are the
    input load and the output store; with one small scratchpad the reused tensor must be stored and reloaded."""
    from dlaopt.workload import NetworkBuilder

    b = NetworkBuilder("chain", dtype_bytes=1)
    x = b.input("x", (10,))
    a = b.activation(x, "relu", name="a")
    c = b.activation(a, "relu", name="b")
    d = b.add(c, a, name="c")
    wl = b.build([d])
    roomy = solve(_instance(wl, small_accelerator([100])), "exact", options=DETERMINISTIC)
    assert roomy.objective == 20  # load x (10) + store the output (10)
    # 20 bytes: step b needs a and b.out (20); step c needs a, b.out, c.out (30) -> does not fit
    tight = solve(_instance(wl, small_accelerator([20]), options={"oversize": "cap"}), "exact", options=DETERMINISTIC)
    assert tight.status == Status.INFEASIBLE and "do not fit" in tight.message
    tiled = solve(_instance(wl, small_accelerator([20])), "exact", options=DETERMINISTIC)
    assert tiled.status == Status.OPTIMAL and tiled.verified  # rebuilt into tiles, it fits
    assert len(tiled.solution["steps"]) > 3
    two = solve(_instance(wl, small_accelerator([20, 10])), "exact", options=DETERMINISTIC)
    assert two.status == Status.OPTIMAL and two.objective == 20


def test_infeasible_instance_says_why():
    from dlaopt.workload import NetworkBuilder

    b = NetworkBuilder("big", dtype_bytes=1)
    x = b.input("x", (4096,))
    wl = b.build([b.activation(x, "relu", name="r")])
    res = solve(_instance(wl, small_accelerator([512, 512]), options={"oversize": "cap"}), "exact")
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE)  # capped: fits
    res = solve(_instance(wl, small_accelerator([16])), "exact")
    assert res.status == Status.OPTIMAL  # rebuilt into 16-byte tiles
    b = NetworkBuilder("wide", dtype_bytes=64)  # one element is larger than the scratchpad: no tiling helps
    x = b.input("x", (4,))
    wl = b.build([b.activation(x, "relu", name="relu_op")])
    res = solve(_instance(wl, small_accelerator([32, 32])), "exact")
    assert res.status == Status.INFEASIBLE
    assert "relu_op" in res.message and res.solution is None


def test_solution_round_trip_and_verify():
    from dlaopt.harness import prepare, verify

    acc = small_accelerator([64, 40, 32])
    p = prepare(_instance(random_workload(2, n_ops=6), acc))
    res = solve(p, "exact", options=DETERMINISTIC)
    doc = res.solution_document()
    ev = verify(p, doc)
    assert ev.feasible and ev.objective == pytest.approx(res.objective)
    # corrupt: drop a buffer's residency entirely -> a use is uncovered
    bad = {**doc, "solution": {**doc["solution"], "residency": dict(list(doc["solution"]["residency"].items())[1:])}}
    ev = verify(p, bad)
    assert not ev.feasible and any("not resident" in v for v in ev.violations)


def test_evaluator_counts_moves_and_partial_sum_stores():
    """Hand-built residency: a produced tensor moved between scratchpads costs a store and a load."""
    from dlaopt.workload import NetworkBuilder

    b = NetworkBuilder("mv", dtype_bytes=1)
    x = b.input("x", (8,))
    a = b.activation(x, "relu", name="a")
    c = b.activation(a, "relu", name="b")
    d = b.add(a, c, name="c")
    wl = b.build([d])
    acc = small_accelerator([64, 64])
    g = untiled_graph(wl, acc)
    names = [buf.name for buf in g.buffers]
    sol = PinningSolution.empty(g)
    ia, ix, ic, idd = names.index("a.out"), names.index("x"), names.index("b.out"), names.index("c.out")
    sol.set(g, ix, 0, 0)
    sol.set(g, ia, 0, 0)
    sol.set(g, ia, 1, 1)  # moved: store (dirty) + load
    sol.set(g, ia, 2, 1)
    sol.set(g, ic, 1, 0)
    sol.set(g, ic, 2, 0)
    sol.set(g, idd, 2, 1)
    assert check_constraints(g, sol) == []
    t = count_transfers(g, sol)
    assert t.loads[ix] == 1 and t.loads[ia] == 1 and t.stores[ia] == 1
    assert t.stores[idd] == 1 and t.stores[ic] == 0
    assert objective_value(g, t, "transfers", acc.dma) == 8 * 4
    assert objective_value(g, t, "thesis", acc.dma) == 2 * 8 * (1 + 2 + 1 + 1)
    assert np.sum(t.runs) == 5
