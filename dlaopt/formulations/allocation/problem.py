"""Static memory allocation as a dlaopt problem: buffers with lifetimes placed at offsets in one memory.

The instance's workload is a :class:`~dlaopt.workload.buffers.BufferSet` and its hardware an
:class:`~dlaopt.hardware.arena.Arena` (capacity and default alignment). Methods: the compilers' heuristics
(``greedy_size``, ``greedy_lifetime``, ``best_fit``), ``exact`` (the driver of :mod:`.solve`: live bytes, heuristics,
the canonical search, CP-SAT), ``cpsat`` (the plain 2-D no-overlap model alone, for comparison) and ``milp`` (the
model of :mod:`.milp` on HiGHS or ``--solver pyomo:NAME``). The evaluator (:mod:`.evaluator`) recomputes alignment,
capacity and address overlaps from the buffers alone.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dlaopt.errors import InputError
from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution, live_bytes_reason
from dlaopt.formulations.allocation.evaluator import check_placement
from dlaopt.formulations.allocation.heuristics import HEURISTICS
from dlaopt.formulations.allocation.milp import big_m, build_allocation_milp
from dlaopt.formulations.base import Evaluation, ExactOutcome, HeuristicFailure, Method, MilpFormulation, Problem
from dlaopt.hardware.arena import Arena
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import allocation as opts
from dlaopt.workload.buffers import AllocBuffer, BufferSet

if TYPE_CHECKING:
    from dlaopt.io.instance import Instance


def allocation_data(buffers: BufferSet, arena: Arena, objective: str = "feasibility", source: str | None = None,
                    step_names: tuple[str, ...] = ()) -> AllocationData:
    """The prepared data of ``buffers`` in ``arena``: a buffer without its own alignment (1) takes the arena's."""
    bufs = tuple(b if b.alignment != 1 or arena.alignment == 1 else
                 AllocBuffer(b.id, b.lower, b.upper, b.size, arena.alignment) for b in buffers.buffers)
    return AllocationData(bufs, arena.capacity_bytes, objective, arena.name, source, step_names)


class AllocationProblem(Problem[AllocationData, AllocationSolution]):
    name = "allocation"
    title = "Static memory allocation: an offset per buffer in one memory (XLA heap simulator, TelaMalloc, MiniMalloc)"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("greedy_size", "heuristic", "Largest buffer first, each at the lowest free offset (TFLite Micro's "
               "greedy planner, XLA's greedy by size)"),
        Method("greedy_lifetime", "heuristic", "By start step, longer lifetimes first, lowest free offset (a heap "
               "simulator's order)"),
        Method("best_fit", "heuristic", "In time order, each buffer into the smallest free gap that holds it "
               "(XLA's best-fit heap)"),
        Method("exact", "exact", "Proven answer: live-bytes bound, heuristics, the canonical depth-first search, "
               "then CP-SAT with a 2-D no-overlap", "search"),
        Method("cpsat", "exact", "The plain CP-SAT model (2-D no-overlap over time and address) alone", "cpsat"),
        Method("milp", "exact", "Offsets and pairwise order binaries as a MILP (HiGHS or pyomo:NAME)", "highs"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> AllocationData:
        workload, hardware = instance.workload, instance.hardware
        if not isinstance(workload, BufferSet):
            raise InputError("static memory allocation needs buffers", file=instance.source, path=("workload",),
                             expected="{buffers: [{id, lower, upper, size}, ...]} or {csv: PATH}")
        if not isinstance(hardware, Arena):
            raise InputError("static memory allocation needs one memory", file=instance.source, path=("hardware",),
                             expected="{memory: {capacity_bytes, alignment?}}")
        if instance.objective not in self.objectives:
            raise InputError(f"unknown objective '{instance.objective}'", file=instance.source, path=("objective",),
                             expected="one of: " + ", ".join(self.objectives))
        if instance.objective == "feasibility" and hardware.capacity_bytes is None:
            raise InputError("the feasibility objective needs the memory's capacity", file=instance.source,
                             path=("hardware",), expected="memory.capacity_bytes (or objective 'peak')")
        seen: set[str] = set()
        for k, b in enumerate(workload.buffers):
            if b.id in seen:
                raise InputError(f"buffer '{b.id}' is listed twice", file=instance.source,
                                 path=("workload", "buffers", k), expected="unique buffer ids")
            seen.add(b.id)
        return allocation_data(workload, hardware, instance.objective, instance.source)

    def infeasibility_reason(self, data: AllocationData) -> str | None:
        return live_bytes_reason(data)

    def describe(self, data: AllocationData) -> dict[str, Any]:
        return {"buffers": data.n, "memory": data.memory, "capacity_bytes": data.capacity,
                "live_bytes_bound": data.bound, "bound_step": data.bound_step,
                "steps": int(data.upper.max()) if data.n else 0, "total_bytes": int(data.size.sum()),
                "overlapping_pairs": int(data.overlap.sum()) // 2}

    # ------------------------------------------------------------------------------------------------ methods
    def run_heuristic(self, method: str, data: AllocationData, options: SolveOptions) -> AllocationSolution:
        sol = HEURISTICS[method](data)
        if data.capacity is not None and sol.peak(data) > data.capacity:
            raise HeuristicFailure(f"{method}'s placement needs {sol.peak(data)} bytes, more than the capacity of "
                                   f"{data.capacity} bytes")
        return sol

    def build_milp(self, data: AllocationData) -> MilpFormulation[AllocationSolution]:
        return build_allocation_milp(data)

    def solve_exact(self, data: AllocationData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[AllocationSolution] | None:
        if method == "milp" or (method == "exact" and solver not in (None, "search")):
            if method == "exact" and solver == "cpsat":
                return self._cpsat(data, options)
            return None  # the harness' MILP path (HiGHS, pyomo:NAME)
        if method == "cpsat":
            return self._cpsat(data, options)
        from dlaopt.formulations.allocation.solve import allocate

        out = allocate(data, time_limit=options.time_limit, node_limit=options.node_limit, seed=options.seed,
                       threads=options.threads or 1, deterministic=options.deterministic or options.node_limit
                       is not None, cpsat_deterministic_time=options.extra.get("deterministic_time"))
        minimize = data.objective == "peak"
        model_obj = None if out.peak is None else (float(out.peak) if minimize else 0.0)
        bound = float(out.bound) if minimize else (0.0 if out.solution is not None else None)
        return ExactOutcome(out.solution, out.status, bound, "search" if out.stage != "cpsat" else "search+cpsat",
                            message=out.reason, model_objective=model_obj,
                            metrics={"stage": out.stage, "search_nodes": out.nodes, **_heuristic_peaks(out.stats)},
                            solve_time_s=out.time_s)

    def _cpsat(self, data: AllocationData, options: SolveOptions) -> ExactOutcome[AllocationSolution]:
        from dlaopt.formulations.allocation.cpsat import CPSAT_VERSION, solve_cpsat

        t0 = time.perf_counter()
        minimize = data.objective == "peak"
        cp = solve_cpsat(data, big_m(data), options, minimize=minimize)
        r = cp.result
        status = r.status if r.status != Status.OPTIMAL or cp.solution is not None else Status.ERROR
        model_obj = None if cp.solution is None else (float(cp.solution.peak(data)) if minimize else 0.0)
        bound = (max(float(data.bound), r.bound) if r.bound is not None else float(data.bound)) if minimize else (
            0.0 if cp.solution is not None else None)
        return ExactOutcome(cp.solution, status, bound, "cpsat", CPSAT_VERSION, message=r.message,
                            trace=list(r.trace), model_objective=model_obj, solve_time_s=time.perf_counter() - t0)

    # ------------------------------------------------------------------------------------------------ evaluation
    def evaluate(self, data: AllocationData, solution: AllocationSolution) -> Evaluation:
        rep = check_placement(data, solution)
        objective = (float(rep.peak) if data.objective == "peak" else 0.0) if rep.valid else None
        return Evaluation(rep.valid, objective, rep.violations, rep.metrics)

    def solution_to_dict(self, data: AllocationData, solution: AllocationSolution) -> dict[str, Any]:
        return {"offsets": {b.id: int(o) for b, o in zip(data.buffers, solution.offsets.tolist(), strict=True)},
                "peak": solution.peak(data), "memory": data.memory}

    def solution_from_dict(self, data: AllocationData, doc: Mapping[str, Any]) -> AllocationSolution:
        offsets = doc.get("offsets")
        if not isinstance(offsets, Mapping):
            raise InputError("an allocation needs 'offsets': {buffer id: offset}", path=("solution", "offsets"),
                             expected="an object of integers")
        ids = {b.id for b in data.buffers}
        for k, v in offsets.items():
            if k not in ids:
                raise InputError(f"no buffer named '{k}'", path=("solution", "offsets", k))
            if not isinstance(v, int) or isinstance(v, bool):
                raise InputError(f"offset {v!r} of buffer '{k}' is not an integer", path=("solution", "offsets", k),
                                 expected="a non-negative integer")
        missing = [b.id for b in data.buffers if b.id not in offsets]
        if missing:
            raise InputError(f"no offset for buffer '{missing[0]}'" + (f" and {len(missing) - 1} more"
                             if len(missing) > 1 else ""), path=("solution", "offsets"),
                             expected="an offset for every buffer")
        return AllocationSolution.of([offsets[b.id] for b in data.buffers])


def _heuristic_peaks(stats: dict[str, Any]) -> dict[str, Any]:
    return {f"{k}_peak": v for k, v in stats.get("heuristics", {}).items()}


__all__ = ["AllocationProblem", "allocation_data"]
