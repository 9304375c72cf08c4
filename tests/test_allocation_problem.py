"""The allocation problem through the common harness: prepare, every method verified, infeasibility with the step
named, the solution round trip and bad input located at its key."""

from __future__ import annotations

from typing import Any

import pytest

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.formulations.allocation.data import AllocBuffer
from dlaopt.hardware.arena import Arena
from dlaopt.io.instance import Instance
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload.buffers import BufferSet

# the example of the static-allocation literature: 5 buffers, 12 bytes live at step 0
EXAMPLE = (("b1", 0, 3, 4), ("b2", 3, 9, 4), ("b3", 0, 9, 4), ("b4", 9, 21, 4), ("b5", 0, 21, 4))
# 4 live bytes, but with offsets multiples of 2 the 3-byte 'w' and the 1-byte 'x' need 5: w at 0 pushes x to 4,
# x at 0 pushes w to 2
FRAGMENTED = (("x", 0, 1, 1, 2), ("w", 0, 1, 3, 2))
METHODS = ("greedy_size", "greedy_lifetime", "best_fit", "exact", "cpsat", "milp")
OPTS = SolveOptions(time_limit=20, threads=1)


def instance(rows: tuple[tuple[Any, ...], ...], capacity: int | None, objective: str = "feasibility",
             alignment: int = 1) -> Instance:
    bufs = BufferSet(tuple(AllocBuffer(*r) for r in rows))
    return Instance("allocation", "test", bufs, Arena("spm", capacity, alignment), objective, {})


@pytest.mark.parametrize("method", METHODS)
def test_every_method_verified(method: str) -> None:
    r = harness.solve(instance(EXAMPLE, 12), method, options=OPTS)
    assert r.verified and r.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert r.solution is not None and r.solution["peak"] <= 12 and r.solution["memory"] == "spm"
    peak = harness.solve(instance(EXAMPLE, None, "peak"), method, options=OPTS)
    assert peak.verified and peak.objective is not None and peak.objective >= 12
    if method in ("exact", "cpsat", "milp"):
        assert peak.status == Status.OPTIMAL and peak.objective == 12 and peak.bound == 12


def test_live_bytes_infeasibility_names_the_step() -> None:
    for method in METHODS:
        r = harness.solve(instance(EXAMPLE, 11), method, options=OPTS)
        assert r.status == Status.INFEASIBLE
        assert "step 0" in r.message and "12 bytes" in r.message


def test_fragmented_instance_proven_infeasible() -> None:
    inst = instance(FRAGMENTED, 4)
    prep = harness.prepare(inst)
    assert prep.data.bound == 4  # the live bytes fit
    r = harness.solve(inst, "exact", options=OPTS)
    assert r.status == Status.INFEASIBLE and "fragmented" in r.message and "search" in r.message
    for method in ("cpsat", "milp"):
        assert harness.solve(inst, method, options=OPTS).status == Status.INFEASIBLE
    ok = harness.solve(instance(FRAGMENTED, 5), "exact", options=OPTS)
    assert ok.status == Status.OPTIMAL and ok.verified


def test_arena_alignment_applies_to_unaligned_buffers() -> None:
    rows = (("a", 0, 2, 3), ("b", 1, 3, 3))
    r = harness.solve(instance(rows, None, "peak", alignment=4), "exact", options=OPTS)
    assert r.status == Status.OPTIMAL and r.objective == 7
    assert sorted(r.solution["offsets"].values()) == [0, 4]  # type: ignore[index]


def test_solution_round_trip_and_verify() -> None:
    inst = instance(EXAMPLE, 12)
    r = harness.solve(inst, "exact", options=OPTS)
    ev = harness.verify(inst, r.solution_document())
    assert ev.feasible and ev.objective == 0.0
    doc = r.solution_document()
    doc["solution"] = {"offsets": {**doc["solution"]["offsets"], "b1": 1}}
    bad = harness.verify(inst, doc)
    assert not bad.feasible and bad.violations
    for offsets, key in (({"zz": 0}, "zz"), ({"b1": "x"}, "b1")):
        with pytest.raises(InputError) as exc:
            harness.verify(inst, {"problem": "allocation", "solution": {"offsets": offsets}})
        assert exc.value.path == ("solution", "offsets", key)
    with pytest.raises(InputError, match="no offset"):
        harness.verify(inst, {"problem": "allocation", "solution": {"offsets": {"b1": 0}}})


def test_prepare_errors_are_located() -> None:
    with pytest.raises(InputError) as exc:
        harness.prepare(instance(EXAMPLE, None, "feasibility"))
    assert exc.value.path == ("hardware",)
    with pytest.raises(InputError) as exc:
        harness.prepare(instance((("a", 0, 1, 1), ("a", 1, 2, 1)), 4))
    assert exc.value.path == ("workload", "buffers", 1)


def test_node_limited_exact_is_reproducible() -> None:
    rows = tuple((f"t{k}", k % 5, k % 5 + 1 + k % 3, 1 + (7 * k) % 5) for k in range(14))
    opts = SolveOptions(node_limit=500, threads=1, extra={"deterministic_time": 2.0})
    a = harness.solve(instance(rows, None, "peak"), "exact", options=opts)
    b = harness.solve(instance(rows, None, "peak"), "exact", options=opts)
    assert a.verified and a.solution == b.solution and a.status == b.status
