"""User constraints of the multi-accelerator problem (seed 001 Chapter 7, MAGMA): allowed / forbidden sub-accelerators,
release and deadline windows, precedence between jobs, colocation.

The reference is brute force written here, independent of the package: every assignment with every order per
sub-accelerator, timed by a plain sequential timeline (the tables' bandwidth never binds, so every job runs its
no-stall latency; a sub-accelerator starts its next job once the previous one, the job's predecessors and its release
are past), kept when every constraint holds by the checks below. Against it: the exact method's optimum (proved: the
mode model is exact on such tables), every heuristic's schedule (meets the constraints, or reports no solution),
the evaluator (names each constraint a hand-made schedule breaks), the conflict report of an infeasible set (the
irreducible infeasible subset, found by brute force over the subsets), and located input errors.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from cli_helpers import assert_bad_input, run_dlaopt
from click.testing import CliRunner
from multiaccel_cases import all_orders

from dlaopt import harness
from dlaopt.cli import cli
from dlaopt.formulations.base import HeuristicFailure
from dlaopt.formulations.multiaccel.cpsat import (
    build_cpsat_model,
    build_mode_model,
    model_is_exact,
    solve_model,
    solve_relaxation,
)
from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, queues_from_orders, timing_violations
from dlaopt.formulations.multiaccel.heuristics import HEURISTICS
from dlaopt.formulations.multiaccel.model import Assignment, Simulation
from dlaopt.formulations.multiaccel.timeindexed import solve_time_indexed
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "instances" / "multiaccel" / "tiny-inline-constrained.yaml"
DET = SolveOptions(threads=1, seed=0, deterministic=True, extra={"deterministic_time": 5.0})
HEURISTIC_NAMES = ("magma", "herald", "lpt", "ai-mt", "random")

# no-stall latencies (µs) per sub-accelerator; bandwidth 0 (compute-bound jobs): the fluid timeline is plain
TWO = {"accelerators": ["big", "little"],
       "latency": {"A": [3, 5], "B": [4, 2], "C": [2, 2], "D": [6, 3]}}
THREE = {"accelerators": ["big", "mid", "little"],
         "latency": {"A": [4, 6, 8], "B": [5, 3, 7], "C": [2, 4, 3], "D": [6, 5, 2], "E": [3, 3, 3]}}


def _acc(name: str) -> dict[str, Any]:
    return {"name": name, "pe_array": {"axes": [["pe", 4]]},
            "dma": {"bandwidth_bytes_per_cycle": 8, "latency_cycles": 20},
            "memories": [{"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": 8},
                         {"name": "spm", "kind": "scratchpad", "capacity_bytes": 1024}]}


def make_doc(table: dict[str, Any], constraints: list[dict[str, Any]], *, bandwidth: float = 0.0,
             system_gbps: float = 1.0) -> dict[str, Any]:
    jobs = [{"name": n, "tenant": "t", "ops": 1e8, "latency_us": lat,
             "bandwidth_gbps": [bandwidth] * len(lat)} for n, lat in table["latency"].items()]
    return {"problem": "multiaccel", "name": "constrained", "objective": "makespan",
            "workload": {"name": "w", "jobs": jobs},
            "hardware": {"accelerators": [_acc(a) for a in table["accelerators"]],
                         "system_bandwidth_gbps": system_gbps},
            "options": {"magma_population": 20, "magma_epochs": 20}, "constraints": constraints}


# ---------------------------------------------------------------------------------------- the independent reference
class Reference:
    """Names, latencies (s) and the constraints of a document, read straight from it."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.jobs = [j["name"] for j in doc["workload"]["jobs"]]
        self.accs = [a["name"] for a in doc["hardware"]["accelerators"]]
        self.lat = [[x * 1e-6 for x in j["latency_us"]] for j in doc["workload"]["jobs"]]
        self.cons = doc.get("constraints", [])
        self.idx = {n: i for i, n in enumerate(self.jobs)}
        self.release = [0.0] * len(self.jobs)
        self.pairs: list[tuple[int, int]] = []
        for c in self.cons:
            if c["kind"] == "window" and "release_us" in c:
                for n in c["jobs"]:
                    self.release[self.idx[n]] = max(self.release[self.idx[n]], c["release_us"] * 1e-6)
            if c["kind"] == "precedence":
                self.pairs.append((self.idx[c["before"]], self.idx[c["after"]]))

    def acc_index(self, ref: str | int) -> int:
        return ref if isinstance(ref, int) else self.accs.index(ref)

    def timeline(self, order: Sequence[Sequence[int]], pairs: list[tuple[int, int]] | None = None,
                 release: list[float] | None = None) -> tuple[list[float], list[float]] | None:
        """Start and end of every job (each runs its latency), or ``None`` when the orders deadlock."""
        pairs = self.pairs if pairs is None else pairs
        release = self.release if release is None else release
        n = len(self.jobs)
        start, end = [math.nan] * n, [math.nan] * n
        ptr, free = [0] * len(order), [0.0] * len(order)
        done: set[int] = set()
        moved = True
        while moved:
            moved = False
            for a, jobs in enumerate(order):
                if ptr[a] < len(jobs):
                    j = jobs[ptr[a]]
                    preds = [u for u, v in pairs if v == j]
                    if all(u in done for u in preds):
                        start[j] = max([free[a], release[j], *(end[u] for u in preds)])
                        end[j] = free[a] = start[j] + self.lat[j][a]
                        ptr[a] += 1
                        done.add(j)
                        moved = True
        return (start, end) if len(done) == n else None

    def holds(self, c: dict[str, Any], order: Sequence[Sequence[int]], start: list[float], end: list[float]) -> bool:
        where = {j: a for a, jobs in enumerate(order) for j in jobs}
        if c["kind"] in ("allowed", "forbidden"):
            listed = {self.acc_index(r) for r in c["accelerators"]}
            return all((where[self.idx[n]] in listed) == (c["kind"] == "allowed") for n in c["jobs"])
        if c["kind"] == "colocate":
            return len({where[self.idx[n]] for n in c["jobs"]}) == 1
        if c["kind"] == "precedence":
            return start[self.idx[c["after"]]] >= end[self.idx[c["before"]]] - 1e-15
        ok = True
        for n in c["jobs"]:
            j = self.idx[n]
            if "release_us" in c:
                ok &= start[j] >= c["release_us"] * 1e-6 - 1e-15
            if "deadline_us" in c:
                ok &= end[j] <= c["deadline_us"] * 1e-6 * (1 + 1e-9)
        return ok

    def feasible(self, order: Sequence[Sequence[int]], cons: list[dict[str, Any]] | None = None) -> float:
        """The makespan of ``order`` when it meets every constraint of ``cons`` (default: all), else ``inf``."""
        cons = self.cons if cons is None else cons
        pairs = [(self.idx[c["before"]], self.idx[c["after"]]) for c in cons if c["kind"] == "precedence"]
        release = [0.0] * len(self.jobs)
        for c in cons:
            for n in c.get("jobs", []) if c["kind"] == "window" and "release_us" in c else []:
                release[self.idx[n]] = max(release[self.idx[n]], c["release_us"] * 1e-6)
        tl = self.timeline(order, pairs, release)
        if tl is None or not all(self.holds(c, order, *tl) for c in cons):
            return math.inf
        return max(tl[1])

    def optimum(self, cons: list[dict[str, Any]] | None = None) -> float:
        return min(self.feasible(o, cons) for o in all_orders(len(self.jobs), len(self.accs)))

    def order_of(self, solution: dict[str, Any]) -> list[list[int]]:
        return [[self.idx[n] for n in solution["order"][a]] for a in self.accs]


def irreducible_conflicts(ref: Reference) -> list[list[int]]:
    """Every subset of the constraints (positions) that is infeasible while each of its proper subsets is not."""
    k = len(ref.cons)
    infeasible = {s: math.isinf(ref.optimum([ref.cons[i] for i in s]))
                  for r in range(k + 1) for s in itertools.combinations(range(k), r)}
    return [list(s) for s, bad in infeasible.items()
            if bad and not any(infeasible[t] for t in itertools.combinations(s, len(s) - 1))]


# ------------------------------------------------------------------------------------- per kind, against brute force
CASES: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {
    "allowed": (TWO, [{"kind": "allowed", "jobs": ["A", "D"], "accelerators": ["little"]}]),
    "allowed-by-position": (THREE, [{"kind": "allowed", "jobs": ["D", "E"], "accelerators": [0, 1]}]),
    "forbidden": (TWO, [{"kind": "forbidden", "jobs": ["B"], "accelerators": ["little"]}]),
    "forbidden-two": (THREE, [{"kind": "forbidden", "jobs": ["C", "A"], "accelerators": ["big", "little"]}]),
    "release": (TWO, [{"kind": "window", "jobs": ["D"], "release_us": 4}]),
    "deadline": (TWO, [{"kind": "window", "jobs": ["A", "C"], "deadline_us": 3}]),
    "window": (THREE, [{"kind": "window", "jobs": ["B", "E"], "release_us": 2, "deadline_us": 6}]),
    "precedence": (TWO, [{"kind": "precedence", "before": "D", "after": "A"}]),
    "precedence-chain": (THREE, [{"kind": "precedence", "before": "C", "after": "A"},
                                 {"kind": "precedence", "before": "A", "after": "E"}]),
    "colocate": (TWO, [{"kind": "colocate", "jobs": ["B", "D"]}]),
    "colocate-three": (THREE, [{"kind": "colocate", "jobs": ["A", "B", "D"]}]),
    "every-kind": (THREE, [{"kind": "allowed", "jobs": ["A"], "accelerators": ["mid", "little"]},
                           {"kind": "forbidden", "jobs": ["D"], "accelerators": ["little"]},
                           {"kind": "window", "jobs": ["C"], "release_us": 1, "deadline_us": 4},
                           {"kind": "precedence", "before": "B", "after": "E"},
                           {"kind": "colocate", "jobs": ["C", "E"]}]),
}


@pytest.fixture(scope="module")
def optima() -> dict[str, tuple[float, float]]:
    """Per case: the brute-force optimum with and without its constraints."""
    return {k: (Reference(make_doc(t, c)).optimum(), Reference(make_doc(t, [])).optimum())
            for k, (t, c) in CASES.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_exact_equals_brute_force_and_heuristics_meet_the_constraints(
        case: str, optima: dict[str, tuple[float, float]]) -> None:
    table, cons = CASES[case]
    doc = make_doc(table, cons)
    ref = Reference(doc)
    truth, free = optima[case]
    assert math.isfinite(truth)
    assert truth >= free  # a constraint never helps
    p = harness.prepare(instance_from_dict(doc))
    res = harness.solve(p, "exact", options=DET)
    assert res.status == Status.OPTIMAL and res.verified, res.message
    assert res.objective == pytest.approx(truth, rel=1e-9)
    assert res.bound == pytest.approx(truth, rel=1e-6)
    assert ref.feasible(ref.order_of(res.solution)) == pytest.approx(truth, rel=1e-9)
    assert [c["at"] for c in res.constraints] == [f"constraints[{i}] ({c['kind']})" for i, c in enumerate(cons)]
    for method in HEURISTIC_NAMES:
        r = harness.solve(p, method, options=DET)
        if r.status == Status.NO_SOLUTION:
            assert "deadline" in r.message, (method, r.message)
            continue
        assert r.status == Status.FEASIBLE and r.verified, (method, r.message)
        value = ref.feasible(ref.order_of(r.solution))
        assert math.isfinite(value), (method, r.solution)
        assert r.objective == pytest.approx(value, rel=1e-9) and value >= truth * (1 - 1e-12)


def test_the_constraints_bind_in_these_cases(optima: dict[str, tuple[float, float]]) -> None:
    """Most cases change the optimum (else they would test little)."""
    assert sum(truth > free * (1 + 1e-9) for truth, free in optima.values()) >= 8


def test_constructive_heuristics_report_a_missed_deadline() -> None:
    """Both jobs that fit the deadline only on 'little' must go first there: the greedy estimates miss it."""
    doc = make_doc(TWO, [{"kind": "window", "jobs": ["B", "D"], "deadline_us": 5},
                         {"kind": "forbidden", "jobs": ["D"], "accelerators": ["big"]}])
    ref = Reference(doc)
    data = harness.prepare(instance_from_dict(doc)).data
    for name, fn in HEURISTICS.items():
        try:
            a = fn(data)
        except HeuristicFailure as exc:
            assert "deadline" in str(exc) and "constraints[0] (window)" in str(exc)
        else:
            assert math.isfinite(ref.feasible(a.order)), name


# ------------------------------------------------------------------------------------------------ a binding bandwidth
def test_binding_bandwidth_exact_is_valid_and_never_below_brute_force() -> None:
    """With 2 GB/s asked on 1 GB/s the fluid allocator shares; brute force by the evaluator's timeline with the
    constraints checked here. Exact meets them, is never below the optimum, and is at most 10 % above it."""
    cons = [{"kind": "allowed", "jobs": ["A"], "accelerators": ["big"]}, {"kind": "colocate", "jobs": ["B", "C"]},
            {"kind": "window", "jobs": ["D"], "release_us": 1, "deadline_us": 12},
            {"kind": "precedence", "before": "C", "after": "A"}]
    doc = make_doc(TWO, cons, bandwidth=2.0, system_gbps=1.0)
    ref = Reference(doc)
    p = harness.prepare(instance_from_dict(doc))
    ev = FluidEvaluator(p.data)
    best = math.inf
    for order in all_orders(4, 2):
        times = ev.times(order)
        if times is not None and all(ref.holds(c, order, list(times[0]), list(times[1])) for c in cons):
            best = min(best, float(times[1].max()))
    assert math.isfinite(best)
    res = harness.solve(p, "exact", options=DET)
    assert res.verified and res.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert best * (1 - 1e-9) <= res.objective <= best * 1.1
    assert res.bound is not None and res.bound <= best * (1 + 1e-9)
    order = ref.order_of(res.solution)
    times = ev.times(order)
    assert times is not None and all(ref.holds(c, order, list(times[0]), list(times[1])) for c in cons)


# ----------------------------------------------------------------------------------------------------- the evaluator
def _violations(doc: dict[str, Any], order: dict[str, list[str]]) -> list[str]:
    p = harness.prepare(instance_from_dict(doc))
    return p.problem.evaluate(p.data, p.problem.solution_from_dict(p.data, {"order": order})).violations


@pytest.mark.parametrize(("cons", "order", "needle"), [
    ({"kind": "allowed", "jobs": ["A"], "accelerators": ["little"]}, {"big": ["A", "B"], "little": ["C", "D"]},
     "'A' on 'big' (allowed only on little)"),
    ({"kind": "forbidden", "jobs": ["C", "D"], "accelerators": [1]}, {"big": ["A", "B", "C"], "little": ["D"]},
     "'D' on 'little' (forbidden on little)"),
    ({"kind": "colocate", "jobs": ["A", "C"]}, {"big": ["A", "B"], "little": ["C", "D"]},
     "the jobs run on 2 sub-accelerators"),
    ({"kind": "window", "jobs": ["B"], "deadline_us": 6}, {"big": ["A", "B"], "little": ["C", "D"]},
     "job 'B' finishes at 7 µs, after its deadline 6 µs"),
    ({"kind": "precedence", "before": "B", "after": "A"}, {"big": ["A", "B"], "little": ["C", "D"]},
     "'A' must wait for 'B', but the orders make it wait forever"),
])
def test_the_evaluator_names_the_broken_constraint(cons: dict[str, Any], order: dict[str, list[str]],
                                                   needle: str) -> None:
    other = {"kind": "window", "name": "slack", "jobs": ["C"], "deadline_us": 100}
    found = _violations(make_doc(TWO, [other, cons]), order)
    assert len(found) == 1 and found[0].startswith(f"constraints[1] ({cons['kind']}): "), found
    assert needle in found[0], found
    assert Reference(make_doc(TWO, [cons])).feasible([[Reference(make_doc(TWO, [])).idx[n] for n in order[a]]
                                                      for a in ("big", "little")]) == math.inf


def test_releases_and_precedence_shape_the_timeline_and_a_forged_one_is_named() -> None:
    """An order cannot start a job before its release or its predecessor (the timeline waits), so the evaluator's
    own timeline meets both; a forged timeline that does not is named by the timing checks."""
    cons = [{"kind": "window", "jobs": ["D"], "release_us": 4}, {"kind": "precedence", "before": "B", "after": "C"}]
    p = harness.prepare(instance_from_dict(make_doc(TWO, cons)))
    a = Assignment([[0, 3], [1, 2]])  # big: A, D; little: B, C
    sim = FluidEvaluator(p.data).simulate(a)
    ref = Reference(make_doc(TWO, cons))
    start, end = ref.timeline(a.order)  # type: ignore[misc]
    assert np.allclose(sim.start, start) and np.allclose(sim.end, end)
    assert sim.start[3] == pytest.approx(4e-6) and sim.start[2] == pytest.approx(sim.end[1])
    assert not timing_violations(p.data, sim)
    forged = Simulation(np.zeros(4), sim.end, sim.accelerator, sim.segments, sim.total_ops)
    found = timing_violations(p.data, forged)
    assert any(v.startswith("constraints[0] (window): job 'D' starts at 0 µs, before its release 4 µs") for v in found)
    assert any(v.startswith("constraints[1] (precedence): job 'C' starts at 0 µs, before 'B' finishes") for v in found)


def test_batch_and_scalar_evaluators_agree_with_releases() -> None:
    """The batch simulation (MAGMA's) waits for releases like the scalar one, bandwidth shared or not."""
    cons = [{"kind": "window", "jobs": ["B"], "release_us": 1.5}, {"kind": "window", "jobs": ["D"], "release_us": 7},
            {"kind": "precedence", "before": "A", "after": "C"}]
    for bandwidth in (0.0, 1.5):
        p = harness.prepare(instance_from_dict(make_doc(TWO, cons, bandwidth=bandwidth, system_gbps=2.0)))
        ev = FluidEvaluator(p.data)
        orders = all_orders(4, 2)
        batch = ev.batch_end_times(queues_from_orders(orders, 2))
        for order, ends in zip(orders, batch, strict=True):
            times = ev.times(order)
            if times is None:
                assert np.all(np.isinf(ends.max()))
            else:
                assert np.allclose(ends, times[1], rtol=1e-12), order


def test_verify_rejects_a_solution_file_that_breaks_a_constraint(tmp_path: Path) -> None:
    doc = make_doc(TWO, [{"kind": "colocate", "name": "pair", "jobs": ["A", "B"]}])
    inst, sol = tmp_path / "inst.yaml", tmp_path / "sol.yaml"
    inst.write_text(yaml.safe_dump(doc))
    sol.write_text(yaml.safe_dump({"problem": "multiaccel", "instance": "constrained", "method": "hand",
                                   "objective": "makespan", "objective_value": None,
                                   "solution": {"order": {"big": ["A", "C"], "little": ["B", "D"]}}}))
    run = run_dlaopt("verify", inst, sol)
    assert run.returncode == 1, run.stderr
    assert "constraints[0] (colocate 'pair'): the jobs run on 2 sub-accelerators" in run.stdout


# ----------------------------------------------------------------------------------------------------- conflicts
CONFLICTS: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {
    # the colocated pair has no sub-accelerator in common; the release is unrelated
    "placement": (TWO, [{"kind": "colocate", "jobs": ["A", "B"]},
                        {"kind": "allowed", "jobs": ["A"], "accelerators": ["big"]},
                        {"kind": "allowed", "jobs": ["B"], "accelerators": ["little"]},
                        {"kind": "window", "jobs": ["C"], "release_us": 1}]),
    # D needs 3 µs at best
    "short-window": (TWO, [{"kind": "forbidden", "jobs": ["A"], "accelerators": ["little"]},
                           {"kind": "window", "name": "too-short", "jobs": ["D"], "deadline_us": 2.5}]),
    # A and D both on big need 9 µs; a deadline of 8 for both cannot hold (only the search shows it)
    "timing": (TWO, [{"kind": "forbidden", "jobs": ["C"], "accelerators": ["big"]},
                     {"kind": "allowed", "jobs": ["A", "D"], "accelerators": ["big"]},
                     {"kind": "colocate", "jobs": ["B", "C"]},
                     {"kind": "window", "jobs": ["A", "D"], "deadline_us": 8}]),
    # a precedence cycle
    "cycle": (THREE, [{"kind": "precedence", "before": "A", "after": "B"},
                      {"kind": "colocate", "jobs": ["C", "D"]},
                      {"kind": "precedence", "before": "B", "after": "A"}]),
    # the release pushes C past its successor's deadline
    "release-deadline": (THREE, [{"kind": "window", "jobs": ["C"], "release_us": 5},
                                 {"kind": "allowed", "jobs": ["B"], "accelerators": ["mid"]},
                                 {"kind": "precedence", "before": "C", "after": "E"},
                                 {"kind": "window", "jobs": ["E"], "deadline_us": 7}]),
}


@pytest.mark.parametrize("case", list(CONFLICTS))
def test_an_infeasible_set_reports_its_conflicting_constraints(case: str) -> None:
    table, cons = CONFLICTS[case]
    doc = make_doc(table, cons)
    ref = Reference(doc)
    expected = irreducible_conflicts(ref)
    assert len(expected) == 1, expected  # the cases are built with one conflict
    labels = [f"constraints[{i}] ({cons[i]['kind']}{' ' + repr(cons[i]['name']) if 'name' in cons[i] else ''})"
              for i in expected[0]]
    res = harness.solve(instance_from_dict(doc), "exact", options=DET)
    assert res.status == Status.INFEASIBLE, res.message
    assert res.conflict == labels, (res.conflict, res.message)
    assert all(label in res.message for label in labels)
    for method in HEURISTIC_NAMES:  # a heuristic finds nothing, or the instance is infeasible on its face
        r = harness.solve(instance_from_dict(doc), method, options=DET)
        assert r.status in (Status.NO_SOLUTION, Status.INFEASIBLE) and r.solution is None, (method, r.status)


def test_the_relaxation_core_and_its_exactness() -> None:
    """CP-SAT's sufficient assumptions name the constraints of the timing conflict; on a compute-bound table the
    relaxation is exact and its schedule meets the constraints."""
    table, cons = CONFLICTS["timing"]
    p = harness.prepare(instance_from_dict(make_doc(table, cons)))
    out = solve_relaxation(p.data, DET)
    assert out.infeasible and out.exact
    assert set(out.core or []) <= {("constraints", 0), ("constraints", 1), ("constraints", 2), ("constraints", 3)}
    assert {("constraints", 1), ("constraints", 3)} <= set(out.core or [])
    assert p.problem.conflicting_constraints(p.data, DET) == out.core
    table, cons = CASES["every-kind"]
    p = harness.prepare(instance_from_dict(make_doc(table, cons)))
    out = solve_relaxation(p.data, DET)
    assert out.status in ("OPTIMAL", "FEASIBLE") and out.assignment is not None and out.exact
    assert p.problem.evaluate(p.data, out.assignment).feasible


def test_constrained_mode_model_equals_time_indexed_milp() -> None:
    """The CP-SAT model and the time-indexed MILP of the same constrained mode model reach the same optimum."""
    table, cons = CASES["every-kind"]
    p = harness.prepare(instance_from_dict(make_doc(table, cons)))
    mm = build_mode_model(p.data, 1e-6)
    assert model_is_exact(p.data, mm)
    horizon = 30
    cp = solve_model(build_cpsat_model(mm, horizon), DET)
    ti = solve_time_indexed(mm, horizon)
    assert cp.optimal and ti.status == Status.OPTIMAL and cp.makespan == round(ti.makespan or -1)
    assert cp.makespan * 1e-6 == pytest.approx(Reference(make_doc(table, cons)).optimum(), rel=1e-9)


# ------------------------------------------------------------------------------------------------- malformed input
@pytest.mark.parametrize(("cons", "where", "what"), [
    ({"kind": "allowed", "jobs": ["A", "Z"], "accelerators": ["big"]}, "constraints[0].jobs[1]", "no job named 'Z'"),
    ({"kind": "forbidden", "jobs": ["A"], "accelerators": ["huge"]}, "constraints[0].accelerators[0]",
     "no sub-accelerator named 'huge'"),
    ({"kind": "allowed", "jobs": ["A"], "accelerators": [2]}, "constraints[0].accelerators[0]",
     "sub-accelerator 2 does not exist"),
    ({"kind": "allowed", "jobs": ["A"], "accelerators": ["big", 0]}, "constraints[0].accelerators",
     "listed twice"),
    ({"kind": "window", "jobs": ["A"]}, "constraints[0]", "release_us"),
    ({"kind": "window", "jobs": ["A"], "release_us": 5, "deadline_us": 4}, "constraints[0].deadline_us",
     "is before the release"),
    ({"kind": "window", "jobs": ["A"], "deadline_us": -1}, "constraints[0].deadline_us", ""),
    ({"kind": "precedence", "before": "A", "after": "A"}, "constraints[0].after", "cannot precede itself"),
    ({"kind": "precedence", "before": "Q", "after": "A"}, "constraints[0].before", "no job named 'Q'"),
    ({"kind": "colocate", "jobs": ["A"]}, "constraints[0].jobs", ""),
    ({"kind": "colocate", "jobs": ["A", "B"], "accelerators": ["big"]}, "constraints[0]", "accelerators"),
    ({"kind": "pin", "jobs": ["A"]}, "constraints[0].kind", "unknown kind 'pin'"),
])
def test_malformed_constraints_are_located_exit_2(tmp_path: Path, cons: dict[str, Any], where: str,
                                                  what: str) -> None:
    path = tmp_path / "inst.yaml"
    path.write_text(yaml.safe_dump(make_doc(TWO, [{"kind": "colocate", "jobs": ["C", "D"]}, cons])))
    where = where.replace("constraints[0]", "constraints[1]")
    result = CliRunner().invoke(cli, ["solve", str(path), "-m", "lpt"])
    assert_bad_input(result.exit_code, result.stderr, "inst.yaml", f"key '{where}", what)


def test_a_malformed_constraint_through_the_real_command_line(tmp_path: Path) -> None:
    path = tmp_path / "inst.yaml"
    path.write_text(yaml.safe_dump(make_doc(TWO, [{"kind": "allowed", "jobs": ["nope"], "accelerators": [0]}])))
    run = run_dlaopt("solve", path)
    assert_bad_input(run.returncode, run.stderr, "key 'constraints[0].jobs[0]'", "no job named 'nope'")


# ------------------------------------------------------------------------------------------------ the shipped example
def test_the_shipped_example_solves_to_the_brute_force_optimum() -> None:
    """``tiny-inline-constrained.yaml`` (bandwidth shared): exact is optimal in seconds and equals the best of every
    assignment and order by the evaluator's timeline whose constraints hold by the checks here."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    p = harness.prepare(instance_from_dict(doc, source=str(EXAMPLE)))
    res = harness.solve(p, "exact", options=DET)
    assert res.status == Status.OPTIMAL and res.verified and res.time_s < 30
    assert len(res.constraints) == 6
    ref = Reference({**doc, "hardware": {"accelerators": [{"name": n} for n in p.data.table.accelerators]}})
    ev = FluidEvaluator(p.data)
    orders = all_orders(p.data.table.n_jobs, p.data.table.n_accelerators)
    ends = ev.batch_end_times(queues_from_orders(orders, p.data.table.n_accelerators))
    best = math.inf
    for order, end in zip(orders, ends, strict=True):
        if np.isfinite(end).all() and end.max() < best:
            times = ev.times(order)
            assert times is not None and np.allclose(times[1], end, rtol=1e-12)
            if all(ref.holds(c, order, list(times[0]), list(times[1])) for c in ref.cons):
                best = float(end.max())
    unconstrained = float(ends.max(axis=1).min())
    assert res.objective == pytest.approx(best, rel=1e-9)
    assert best > unconstrained  # the constraints cost something here
