"""Pinning plans with concrete scratchpad addresses: every residency run gets an aligned offset, co-resident
buffers never overlap, and the exact method is the optimum among address-feasible plans (checked against a brute
force over residency x offsets)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pinning_cases import brute_force, random_workload, small_accelerator

from dlaopt.formulations.pinning.addresses import residency_runs
from dlaopt.formulations.pinning.evaluator import check_addresses
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.harness import compare, prepare, solve, verify
from dlaopt.io.instance import Instance
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload import NetworkBuilder

DETERMINISTIC = SolveOptions(seed=0, threads=1, deterministic=True, mip_rel_gap=0.0)


def _aligned_workload():
    """Input ``a`` is read at steps 0 and 2; step 1 has three operands of its own. With 2-byte tensors in a 12-byte
    scratchpad aligned to 4 bytes there are three slots (0, 4, 8): keeping ``a`` through step 1 needs four, although
    the bytes (8) fit the capacity."""
    b = NetworkBuilder("aligned", dtype_bytes=1)
    a = b.input("a", (2,))
    x = b.input("b", (2,))
    y = b.input("c", (2,))
    y0 = b.activation(a, "relu", name="op0")
    y1 = b.add(x, y, name="op1")
    y2 = b.add(a, y1, name="op2")
    return b.build(outputs=[y0, y2])


def _instance(workload, capacities, options=None):
    return Instance(problem="pinning", name=workload.name, workload=workload, hardware=small_accelerator(capacities),
                    objective="transfers", options={"oversize": "error", **(options or {})})


def _fits(graph, sol, alignment):
    """Brute force: some aligned offset per run, within capacity, no overlap between co-resident runs."""
    for k, runs in enumerate(residency_runs(graph, sol)):
        cap = graph.scratchpads[k].capacity
        choices = [range(0, cap - r.size + 1, alignment) for r in runs]
        if not any(all(not (p.first <= q.last and q.first <= p.last and o < oq + q.size and oq < o + p.size)
                       for (p, o), (q, oq) in itertools.combinations(zip(runs, offs, strict=True), 2))
                   for offs in itertools.product(*choices)):
            return False
    return True


def _brute(graph, dma, alignment):
    """(capacity-sum optimum, address-feasible optimum) over every residency."""
    return (brute_force(graph, "transfers", dma),
            brute_force(graph, "transfers", dma, keep=lambda sol: _fits(graph, sol, alignment)))


@pytest.mark.parametrize("capacities", [[12], [8, 8]])
def test_exact_is_the_optimum_among_address_feasible_plans(capacities):
    inst = _instance(_aligned_workload(), capacities, {"alignment_bytes": 4})
    p = prepare(inst)
    cap_opt, addr_opt = _brute(p.data.graph, p.data.dma, 4)
    res = solve(p, "exact", options=DETERMINISTIC)
    assert res.status == Status.OPTIMAL, res.message
    assert res.verified and res.verification["violations"] == []
    assert res.objective == pytest.approx(addr_opt)
    if capacities == [12]:  # the capacity sums fit, the addresses do not: the address optimum costs more
        assert addr_opt > cap_opt
        plain = solve(prepare(_instance(_aligned_workload(), capacities, {"alignment_bytes": 4, "addresses": False})),
                      "exact", options=DETERMINISTIC)
        assert plain.objective == pytest.approx(cap_opt)
    # the solution document carries offsets, and they verify independently
    runs = [r for rs in res.solution["residency"].values() for r in rs]
    assert runs and all(len(r) == 4 and r[3] % 4 == 0 for r in runs)
    doc = res.solution_document()
    assert verify(p, doc).feasible


def test_heuristics_are_repaired_into_address_feasible_plans():
    inst = _instance(_aligned_workload(), [12], {"alignment_bytes": 4})
    p = prepare(inst)
    for r in compare(p, options=DETERMINISTIC):
        assert r.status in (Status.OPTIMAL, Status.FEASIBLE), (r.method, r.message)
        assert r.verified, (r.method, r.verification)
        sol = p.problem.solution_from_dict(p.data, r.solution)
        assert sol.offsets is not None
        assert _fits(p.data.graph, sol, 4)


@pytest.mark.parametrize("seed", range(4))
def test_addresses_on_random_instances_verify_and_match_plain_optimum_without_alignment(seed):
    """Random instances: the exact plan with addresses is verified (offsets included), proven optimal, and never
    below the optimum without addresses (address-feasible plans are a subset)."""
    wl = random_workload(seed, n_ops=6)
    with_addr = solve(prepare(_instance(wl, [64, 40])), "exact", options=DETERMINISTIC)
    plain = solve(prepare(_instance(wl, [64, 40], {"addresses": False})), "exact", options=DETERMINISTIC)
    assert with_addr.verified and with_addr.status == Status.OPTIMAL, with_addr.message
    assert with_addr.objective >= plain.objective - 1e-9
    assert "address_peak" in with_addr.metrics


def test_evaluator_flags_every_kind_of_address_violation():
    inst = _instance(_aligned_workload(), [12], {"alignment_bytes": 4})
    p = prepare(inst)
    g = p.data.graph
    res = solve(p, "greedy", options=DETERMINISTIC)
    sol = p.problem.solution_from_dict(p.data, res.solution)
    assert check_addresses(g, sol, 4)[0] == []
    names = [b.name for b in g.buffers]

    def broken(edit):
        s = PinningSolution([r.copy() for r in sol.placement], [o.copy() for o in sol.offsets])
        edit(s)
        return check_addresses(g, s, 4)[0]

    a = names.index("a")
    resident = np.flatnonzero(sol.placement[a] >= 0)

    def misalign(s):
        s.offsets[a][resident] = 2

    def beyond(s):
        s.offsets[a][resident] = 12

    def missing(s):
        s.offsets[a][resident[0]] = -1

    assert any("alignment" in v for v in broken(misalign))
    assert any("beyond its capacity" in v for v in broken(beyond))
    assert any("no address" in v for v in broken(missing))
    # two operands of one step at the same offset
    st = g.steps[1]
    b0, b1 = st.operands[:2]

    def clash(s):
        lo0, lo1 = g.window[b0][0], g.window[b1][0]
        s.offsets[b1][1 - lo1] = s.offsets[b0][1 - lo0]

    assert any("overlap" in v for v in broken(clash))
    # an offset that changes inside a run
    runs = [r for r in residency_runs(g, sol)[0] if r.last > r.first]
    if runs:
        r = runs[0]

        def moved(s):
            lo = g.window[r.buffer][0]
            s.offsets[r.buffer][r.last - lo] += 4

        assert any("changes address" in v for v in broken(moved))
    # the evaluation reports the peak per scratchpad
    ev = p.problem.evaluate(p.data, sol)
    assert ev.metrics["address_peak"]["s0"] <= 12


def test_three_element_runs_still_read_without_addresses():
    inst = _instance(_aligned_workload(), [12], {"alignment_bytes": 4})
    p = prepare(inst)
    res = solve(p, "greedy", options=DETERMINISTIC)
    doc = res.solution_document()
    doc["solution"] = {**doc["solution"], "residency": {k: [r[:3] for r in v]
                                                        for k, v in doc["solution"]["residency"].items()}}
    sol = p.problem.solution_from_dict(p.data, doc["solution"])
    assert sol.offsets is None
    assert verify(p, doc).feasible
