"""Every heuristic of every problem is valid on every hardware shape the schema accepts.

Generated instances (``tests/strategies.py``: one to four scratchpads / banks / sub-accelerators, unequal and tiny
capacities, every access mode, small workloads; systolic arrays with params left out to the preset's defaults, with
and without hardware co-design) go through the loader and the solve-and-verify harness exactly as
``dlaopt compare`` runs them. Each heuristic must return a plan the independent evaluator accepts (``feasible``,
verified), or ``no_solution`` with a reason; the instance may be ``infeasible`` with a reason (then no method can
solve it). Never ``error``, never an exception. The exact methods, run with node / deterministic limits only (wall-clock
limits are not reproducible), must not be ``error`` either, and when proven optimal are no worse than any accepted
heuristic.

Profiles (``tests/conftest.py``): ``ci`` (default, derandomized) and ``dev`` (``HYPOTHESIS_PROFILE=dev``).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from strategies import INSTANCES, systolic_instances

from dlaopt.errors import InputError
from dlaopt.harness import Prepared, prepare, solve
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status

HEURISTIC_OPTIONS = SolveOptions(seed=0, threads=1)
EXACT_OPTIONS = SolveOptions(seed=0, threads=1, deterministic=True, node_limit=200,
                             extra={"deterministic_time": 2.0})
EXACT_METHODS = {"pinning": ["exact"], "mapping": ["exact"], "multiaccel": ["exact"], "bankmap": ["exact"],
                 "systolic": ["exact"]}


def _prepared(doc: dict) -> Prepared | None:
    """The instance as ``dlaopt compare`` prepares it, or ``None`` when the loader rejects it as bad input (exit 2:
    the schema / model does not accept that hardware, so no heuristic is asked to handle it)."""
    try:
        return prepare(instance_from_dict(doc, source="<generated>"))
    except InputError:
        return None


def check_every_method(doc: dict) -> None:
    p = _prepared(doc)
    if p is None:
        return
    accepted: dict[str, float] = {}
    for name in p.problem.heuristic_names:
        res = solve(p, name, options=HEURISTIC_OPTIONS)
        assert res.status in (Status.FEASIBLE, Status.NO_SOLUTION, Status.INFEASIBLE), (
            f"{p.problem.name} heuristic '{name}': status {res.status.value}: {res.message}")
        if res.status == Status.FEASIBLE:
            assert res.verified and res.solution is not None and res.objective is not None, name
            accepted[name] = float(res.objective)
        else:
            assert res.message, f"{p.problem.name} heuristic '{name}' gave {res.status.value} without a reason"
    for name in EXACT_METHODS[p.problem.name]:
        res = solve(p, name, options=EXACT_OPTIONS)
        assert res.status != Status.ERROR, f"{p.problem.name} '{name}': {res.message}"
        if res.status in (Status.OPTIMAL, Status.FEASIBLE):
            assert res.verified, name
        if res.status == Status.INFEASIBLE:
            assert not accepted, f"'{name}' says infeasible, yet {sorted(accepted)} found verified plans"
        if res.status == Status.OPTIMAL:
            for h, obj in accepted.items():
                assert res.objective <= obj + 1e-6 * max(1.0, abs(obj)) or math.isclose(res.objective, obj), (
                    f"{p.problem.name}: proven optimum {res.objective} > heuristic '{h}' {obj}")


# examples per problem, as multiples of the profile's max_examples (the cheap problems get more)
EXAMPLES = {"pinning": 20, "mapping": 3, "multiaccel": 4, "bankmap": 8, "systolic": 12}


@pytest.mark.parametrize("problem", sorted(INSTANCES))
def test_every_heuristic_valid_on_every_hardware_shape(problem: str) -> None:
    n = settings.default.max_examples * EXAMPLES[problem]
    settings(max_examples=n)(given(doc=INSTANCES[problem]())(check_every_method))()


@pytest.mark.parametrize("missing", ["some", "all"])
def test_systolic_codesign_without_the_instance_hardware(missing: str) -> None:
    # Co-design where the preset's defaults fill the left-out params (32 x 64 PEs, 16 / 32 / 8 kB: over every small
    # area budget). The heuristics must pick a point of the design space, or say why none runs their schedule.
    n = settings.default.max_examples * 2
    settings(max_examples=n)(given(doc=systolic_instances(codesign=True, missing=missing))(check_every_method))()


# ------------------------------------------------------------------------------------------ the naive baseline
NAIVE_INPUT_ONLY = {
    "problem": "pinning",
    "workload": {
        "name": "naive-input-only",
        "dtype_bytes": 1,
        "tensors": [{"name": "x", "shape": [1], "role": "input", "dtype_bytes": 2},
                    {"name": "t", "shape": [1], "role": "output", "dtype_bytes": 3}],
        "operators": [{"name": "op0", "kind": "activation", "inputs": ["x"], "outputs": ["t"],
                       "attrs": {"function": "relu"}}],
    },
    "hardware": {
        "name": "tiny",
        "pe_array": {"axes": [["pe", 4], ["macc", 8]], "macs_per_pe_per_cycle": 1, "vector_lanes": 8},
        "dma": {"bandwidth_bytes_per_cycle": 8, "latency_cycles": 20},
        "memories": [
            {"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": 8},
            {"name": "spad0", "kind": "scratchpad", "capacity_bytes": 8, "bandwidth_bytes_per_cycle": 32},
            {"name": "spad1", "kind": "scratchpad", "capacity_bytes": 8, "bandwidth_bytes_per_cycle": 32,
             "access": "input"},
        ],
    },
    "objective": "transfers",
}


def test_naive_never_writes_into_an_input_only_scratchpad() -> None:
    # The seed's naive baseline (seed 000 §4.2.2): inputs in the designated input scratchpad(s), outputs in the
    # designated output scratchpad, every operand on chip during its own operator only ("all outputs are assumed to
    # be saved back to memory and reloaded when needed"). Here spad1 is input-only, so the output scratchpad is the
    # one that may be written, spad0 (access any), and x goes to spad1. Transfers under that policy:
    #   load x  (input, 1 element x 2 B)   = 2 B
    #   store t (graph output, 1 x 3 B)    = 3 B
    # = 5 B, which is also the optimum (x must be loaded and t stored by any plan).
    naive_bytes = 1 * 2 + 1 * 3
    p = prepare(instance_from_dict(NAIVE_INPUT_ONLY))
    res = solve(p, "naive")
    assert res.status == Status.FEASIBLE and res.verified, res.message
    assert res.objective == naive_bytes
    rows = solve(p, "exact", options=EXACT_OPTIONS), *(solve(p, h) for h in p.problem.heuristic_names)
    assert all(r.status != Status.ERROR for r in rows), [(r.method, r.message) for r in rows]
    assert rows[0].status == Status.OPTIMAL and rows[0].objective == naive_bytes


def test_naive_layout_narrows_but_never_widens_access() -> None:
    from dlaopt.formulations.pinning.data import Scratchpad
    from dlaopt.formulations.pinning.heuristics import naive_layout
    from dlaopt.hardware.model import SpmAccess
    from dlaopt.workload.tensor import TensorRole

    roles = frozenset(TensorRole)
    for accesses in [("any", "input"), ("input", "input"), ("output", "any", "input"), ("any", "any"),
                     ("input", "any", "input"), ("output", "output")]:
        spms = [Scratchpad(f"s{i}", 8, SpmAccess(a), roles) for i, a in enumerate(accesses)]
        layout = naive_layout(spms)
        for declared, steered in zip(spms, layout, strict=True):
            assert declared.access == SpmAccess.ANY or steered.access == declared.access, (accesses, layout)
        writable = [s for s in layout if s.access != SpmAccess.INPUT]
        assert writable or all(s.access == SpmAccess.INPUT for s in spms)
