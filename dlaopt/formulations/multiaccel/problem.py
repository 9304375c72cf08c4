"""Multi-accelerator job assignment (seed 001 Chapter 7, MAGMA): a group of jobs — layers of several tenant networks —
assigned to the sub-accelerators of a platform and ordered on each, the sub-accelerators sharing one system
bandwidth.

The workload is a task group (``{task, group_size, seed, batch}``), a zoo network or inline graph (all its conv /
matmul layers, one tenant), or the job analysis table itself (``{jobs: [...]}``); the hardware is a platform
(``{platform: magma-s2, params: {system_bandwidth_gbps: 16}}`` or written out). The evaluator is the seed's bandwidth
allocator (:mod:`.evaluator`), the ground truth for every method, the exact one included.

User constraints (the instance's ``constraints:``, kinds in :data:`dlaopt.specs.multiaccel.CONSTRAINTS`): jobs only
on / never on given sub-accelerators, release and deadline windows, precedence between two jobs, colocation. They
are resolved to indices here (unknown job or sub-accelerator names are located input errors); what cannot hold on
its face (a job with nowhere to run, a precedence cycle, a window shorter than a job's least run) is reported as
infeasible before any method runs, and a conflict is named by the policy-free relaxation's assumption core.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dlaopt.errors import InputError
from dlaopt.formulations.base import Evaluation, ExactOutcome, HeuristicFailure, Method, MilpFormulation, Problem
from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, check, timing_violations
from dlaopt.formulations.multiaccel.evaluator import violations as schedule_violations
from dlaopt.formulations.multiaccel.heuristics import HEURISTICS
from dlaopt.formulations.multiaccel.model import (
    Assignment,
    ColocateRule,
    JobTable,
    MultiAccelData,
    PlacementRule,
    PrecedenceRule,
    UserConstraints,
    WindowRule,
)
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import multiaccel as opts
from dlaopt.specs.constraints import Constraint, KeyPath
from dlaopt.specs.tuning import levers
from dlaopt.workload.graph import Workload
from dlaopt.workload.jobs import InlineJobs, TaskGroup

if TYPE_CHECKING:
    from dlaopt.io.instance import Instance


def _jobs_of_workload(workload: Workload) -> list[Any]:
    """Every conv / depthwise / matmul layer of one network as a job of one tenant, in layer order."""
    from dlaopt.formulations.mapping.loopnest import loopnest_from_operator, mappable_layers
    from dlaopt.formulations.multiaccel.tasks import JobSpec

    index = {op.name: i for i, op in enumerate(workload.operators)}
    out = []
    for op in mappable_layers(workload):
        nest = loopnest_from_operator(workload, op)
        out.append(JobSpec(f"{workload.name}/{op.name}", workload.name, 0, op.name, index[op.name], nest.real_macs,
                           nest))
    return out


def _inline_table(jobs: InlineJobs, accelerators: tuple[str, ...], source: str | None) -> JobTable:
    for i, j in enumerate(jobs.jobs):
        if len(j.latency_us) != len(accelerators):
            raise InputError(f"job '{j.name}' has {len(j.latency_us)} latencies, the platform {len(accelerators)} "
                             "sub-accelerators", file=source, path=("workload", "jobs", i, "latency_us"),
                             expected=f"one per sub-accelerator: {', '.join(accelerators)}")
    return JobTable(jobs=tuple(j.name for j in jobs.jobs), tenants=tuple(j.tenant for j in jobs.jobs),
                    accelerators=accelerators, ops=np.array([j.ops for j in jobs.jobs]),
                    latency=np.array([j.latency_us for j in jobs.jobs]) * 1e-6,
                    bandwidth=np.array([j.bandwidth_gbps for j in jobs.jobs]) * 1e9)


def _precedence_of_table(table: JobTable, order: list[int]) -> list[tuple[int, int]]:
    """Consecutive jobs of the same tenant in ``order`` (the layer order)."""
    last: dict[str, int] = {}
    out = []
    for j in order:
        t = table.tenants[j]
        if t in last:
            out.append((last[t], j))
        last[t] = j
    return out


def _names(names: tuple[str, ...], shown: int = 8) -> str:
    return ", ".join(f"'{n}'" for n in names[:shown]) + (f", ... ({len(names)} in all)" if len(names) > shown else "")


def _user_constraints(instance: Instance, table: JobTable) -> UserConstraints:
    """The ``constraints`` records as indices and seconds; names that do not exist are located input errors."""
    index = {n: i for i, n in enumerate(table.jobs)}
    accs = table.accelerators

    def job(c: Constraint, name: str, *keys: str | int) -> int:
        if name not in index:
            raise c.error(f"no job named '{name}'", *keys, expected="one of the group's jobs: "
                          + _names(table.jobs)).located(file=instance.source)
        return index[name]

    def jobs(c: Constraint) -> tuple[int, ...]:
        return tuple(job(c, n, "jobs", k) for k, n in enumerate(c.params["jobs"]))

    def accelerator(c: Constraint, ref: str | int, k: int) -> int:
        if isinstance(ref, bool) or not isinstance(ref, (str, int)):
            raise c.error(f"{ref!r} is not a sub-accelerator", "accelerators", k,
                          expected="a name or a 0-based position").located(file=instance.source)
        if isinstance(ref, int):
            if ref >= len(accs):
                raise c.error(f"sub-accelerator {ref} does not exist: the platform has {len(accs)}", "accelerators",
                              k, expected=f"a position in [0, {len(accs)})").located(file=instance.source)
            return ref
        if ref not in accs:
            raise c.error(f"no sub-accelerator named '{ref}'", "accelerators", k,
                          expected="one of: " + _names(accs)).located(file=instance.source)
        return accs.index(ref)

    placement: list[PlacementRule] = []
    windows: list[WindowRule] = []
    precedence: list[PrecedenceRule] = []
    colocate: list[ColocateRule] = []
    for c in instance.constraints:
        if c.kind in ("allowed", "forbidden"):
            refs = [accelerator(c, a, k) for k, a in enumerate(c.params["accelerators"])]
            if len(set(refs)) != len(refs):
                raise c.error("a sub-accelerator is listed twice (by name and by position)", "accelerators",
                              ).located(file=instance.source)
            placement.append(PlacementRule(c.label, c.path, c.kind, jobs(c), tuple(refs)))
        elif c.kind == "window":
            release, deadline = c.params.get("release_us"), c.params.get("deadline_us")
            if release is None and deadline is None:
                raise c.error("a window needs a release, a deadline or both", expected="release_us and/or "
                              "deadline_us (µs)").located(file=instance.source)
            if release is not None and deadline is not None and deadline < release:
                raise c.error(f"the deadline ({deadline:g} µs) is before the release ({release:g} µs)", "deadline_us",
                              expected="deadline_us >= release_us").located(file=instance.source)
            windows.append(WindowRule(c.label, c.path, jobs(c), None if release is None else float(release) * 1e-6,
                                      None if deadline is None else float(deadline) * 1e-6))
        elif c.kind == "precedence":
            before, after = job(c, c.params["before"], "before"), job(c, c.params["after"], "after")
            if before == after:
                raise c.error(f"a job cannot precede itself ('{c.params['after']}')", "after",
                              expected="another job").located(file=instance.source)
            precedence.append(PrecedenceRule(c.label, c.path, before, after))
        elif c.kind == "colocate":
            colocate.append(ColocateRule(c.label, c.path, jobs(c)))
        else:  # the schema admits only the kinds above
            raise c.error(f"unknown constraint kind '{c.kind}'", "kind").located(file=instance.source)
    return UserConstraints(tuple(placement), tuple(windows), tuple(precedence), tuple(colocate))


def _constraint_infeasibility(data: MultiAccelData) -> str | None:
    """Why the user constraints cannot hold, when that shows without a search: a job with nowhere to run, a
    colocation group with no common sub-accelerator, a precedence cycle, a window shorter than a job's least run."""
    from dlaopt.formulations.multiaccel.bound import min_durations
    from dlaopt.formulations.multiaccel.evaluator import precedence_cycle

    cons, t = data.constraints, data.table
    n, m = t.n_jobs, t.n_accelerators
    mask = cons.allowed_mask(n, m)
    for j in np.flatnonzero(~mask.any(axis=1)):
        labels = [r.label for r in cons.placement if int(j) in r.jobs]
        return f"job '{t.jobs[j]}' may run on no sub-accelerator ({', '.join(labels)})"
    group = cons.group_mask(n, m)
    for j in np.flatnonzero(~group.any(axis=1)):
        labels = [r.label for r in cons.colocate if int(j) in r.jobs]
        return f"the jobs colocated with '{t.jobs[j]}' have no sub-accelerator in common ({', '.join(labels)})"
    cycle = precedence_cycle(data)
    if cycle:
        return "the precedence pairs form a cycle: " + " -> ".join(f"'{t.jobs[j]}'" for j in [*cycle, cycle[0]])
    d = np.where(group, min_durations(data), np.inf).min(axis=1)
    for r in cons.windows:
        for j in r.jobs:
            if r.deadline is not None and (r.release or 0.0) + d[j] > r.deadline * (1 + 1e-9):
                return (f"{r.label}: job '{t.jobs[j]}' needs at least {d[j] * 1e6:.6g} µs where it may run but "
                        f"its window is {(r.deadline - (r.release or 0.0)) * 1e6:.6g} µs")
    return None


class MultiAccelProblem(Problem[MultiAccelData, Assignment]):
    name = "multiaccel"
    title = "Multi-accelerator job assignment under a shared system bandwidth (MAGMA)"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("magma", "heuristic", "MAGMA's genetic algorithm (seed 001 §7.2): 100 x 100 samples"),
        Method("herald", "heuristic", "Herald-like greedy: each job where it would finish earliest"),
        Method("ai-mt", "heuristic", "AI-MT-like round robin, memory- and compute-intensive jobs interleaved"),
        Method("lpt", "heuristic", "Longest-processing-time-first list scheduling"),
        Method("random", "heuristic", "A random assignment and order"),
        Method("exact", "exact", "CP-SAT with bandwidth modes, warm-started, verified by the fluid evaluator; "
               "valid bound from an assignment MILP", "cpsat"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> MultiAccelData:
        options = {**opts.DEFAULT_OPTIONS, **dict(instance.options)}
        platform = instance.platform
        accelerators = tuple(a.name for a in platform.accelerators)
        w = instance.workload
        precedence: list[tuple[int, int]] = []
        if isinstance(w, InlineJobs):
            table = _inline_table(w, accelerators, instance.source)
            if options["precedence"]:
                precedence = _precedence_of_table(table, list(range(table.n_jobs)))
        else:
            from dlaopt.formulations.multiaccel.analysis import job_table
            from dlaopt.formulations.multiaccel.tasks import job_group, precedence_pairs

            if isinstance(w, TaskGroup):
                try:
                    jobs = job_group(w.task, group_size=w.group_size, seed=w.seed, batch=w.batch)
                except ValueError as exc:
                    raise InputError(str(exc), file=instance.source, path=("workload",)) from None
            else:
                jobs = _jobs_of_workload(instance.graph)
                if not jobs:
                    raise InputError(f"workload '{instance.graph.name}' has no conv or matmul layer to schedule",
                                     file=instance.source, path=("workload",))
            try:
                table = job_table(jobs, platform, cache_dir=options["cache_dir"])
            except ValueError as exc:
                raise InputError(f"job analysis failed: {exc}", file=instance.source, path=("hardware",)) from None
            if options["precedence"]:
                precedence = precedence_pairs(jobs)
        cons = _user_constraints(instance, table)
        pairs = list(dict.fromkeys([*precedence, *((r.before, r.after) for r in cons.precedence)]))
        return MultiAccelData(table, platform.system_bandwidth_bytes_per_s, tuple(pairs), instance.objective,
                              options, cons)

    def infeasibility_reason(self, data: MultiAccelData) -> str | None:
        bad = ~np.isfinite(data.table.latency).all(axis=1)
        if bad.any():
            return f"job {data.table.jobs[int(np.flatnonzero(bad)[0])]} cannot run on some sub-accelerator"
        if data.constraints:
            return _constraint_infeasibility(data)
        return None

    def conflicting_constraints(self, data: MultiAccelData, options: SolveOptions) -> list[KeyPath] | None:
        """The constraints in a core of the policy-free relaxation (:func:`.cpsat.relaxation_core`): CP-SAT with
        one assumption literal per user constraint; ``None`` when the relaxation cannot show the conflict."""
        from dlaopt.formulations.multiaccel.cpsat import relaxation_core

        return relaxation_core(data, options)

    def describe(self, data: MultiAccelData) -> dict[str, Any]:
        t = data.table
        return {"jobs": t.n_jobs, "tenants": len(set(t.tenants)), "sub_accelerators": t.n_accelerators,
                "system_bandwidth_gbps": data.system_bandwidth / 1e9, "total_gops": float(t.ops.sum()) / 1e9,
                "precedence_pairs": len(data.precedence), "user_constraints": len(data.constraints.rules),
                "mean_no_stall_latency_us": float(t.latency.mean()) * 1e6,
                "mean_no_stall_bandwidth_gbps": float(t.bandwidth.mean()) / 1e9}

    # ------------------------------------------------------------------------------------------------ methods
    def _heuristic(self, method: str, data: MultiAccelData, options: SolveOptions,
                   warm_start: Assignment | None = None) -> Assignment:
        kwargs: dict[str, Any] = {"seed": options.seed, "time_limit": options.time_limit, "warm_start": warm_start}
        if method == "magma":
            kwargs["budget"] = int(data.options["magma_population"]) * int(data.options["magma_epochs"])
        return HEURISTICS[method](data, **kwargs)

    def run_heuristic(self, method: str, data: MultiAccelData, options: SolveOptions) -> Assignment:
        if method not in HEURISTICS:
            raise HeuristicFailure(f"unknown heuristic '{method}'")
        return self._heuristic(method, data, options)

    def build_milp(self, data: MultiAccelData) -> MilpFormulation[Assignment]:
        raise NotImplementedError("the multi-accelerator problem uses its own exact driver (solve_exact)")

    def solve_exact(self, data: MultiAccelData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[Assignment] | None:
        from dlaopt.formulations.multiaccel.cpsat import relaxation_message, solve_exact, solve_relaxation
        from dlaopt.solvers.cpsat_backend import CPSAT_VERSION

        if solver not in (None, "cpsat"):
            raise InputError(f"the multi-accelerator model runs on CP-SAT, not '{solver}'", path=("solver",),
                             expected="cpsat")
        t0 = time.perf_counter()
        if options.time_limit is None and "deterministic_time" not in options.extra:
            options = dataclasses.replace(options, time_limit=float(data.options["exact_time_limit"]))
        relaxation = None
        if data.constraints:  # a quick proof that the user's constraints cannot hold, before any heuristic runs
            relaxation = solve_relaxation(data, options)
            if relaxation.infeasible:
                return ExactOutcome(None, Status.INFEASIBLE, None, "cpsat", CPSAT_VERSION,
                                    message=relaxation_message(relaxation), solve_time_s=time.perf_counter() - t0,
                                    metrics={"relaxation_status": relaxation.status})
        ev = FluidEvaluator(data)
        warm: tuple[str, Assignment, float] | None = None
        given = options.extra.get("warm_start_assignment")
        candidates: list[tuple[str, Assignment]] = []
        if isinstance(given, Assignment):
            candidates.append(("given", given))
        for name in data.options["warm_start"]:
            try:
                candidates.append((name, self._heuristic(name, data, SolveOptions(seed=options.seed))))
            except HeuristicFailure:  # nothing meeting the user's constraints
                continue
        for name, a in candidates:
            if data.constraints and schedule_violations(data, a):
                continue
            v = self._objective(data, ev, a)
            if warm is None or v < warm[2]:
                warm = (name, a, v)
        res = solve_exact(data, options=options, warm_start=warm[1] if warm else None, relaxation=relaxation,
                          levers=levers(data.options, opts.EXACT_LEVERS))
        if res.assignment is None:
            return ExactOutcome(None, res.status, None, "cpsat", res.solver_version, message=res.message,
                                solve_time_s=time.perf_counter() - t0, metrics={"cpsat_status": res.model_status})
        bound = res.bound if data.objective == "makespan" else None
        status = res.status if data.objective == "makespan" else (
            Status.FEASIBLE if res.status in (Status.OPTIMAL, Status.FEASIBLE) else res.status)
        metrics = {"cpsat_model_makespan_s": res.model_makespan, "cpsat_model_bound_s": res.model_bound,
                   "cpsat_schedule_fluid_makespan_s": res.cpsat_fluid_makespan, "answer_from": res.source,
                   "warm_start_makespan_s": res.warm_start_makespan, "time_unit_s": res.time_unit,
                   "cpsat_status": res.model_status}
        return ExactOutcome(res.assignment, status, bound, "cpsat", res.solver_version, message=res.message,
                            trace=res.trace, model_stats=res.model_stats, model_objective=None,
                            warm_start={"method": warm[0], "objective": warm[2]} if warm else None,
                            metrics=metrics, solve_time_s=time.perf_counter() - t0)

    @staticmethod
    def _value(data: MultiAccelData, makespan: float, mean_completion: float) -> float:
        return makespan if data.objective == "makespan" else mean_completion

    def _objective(self, data: MultiAccelData, ev: FluidEvaluator, a: Assignment) -> float:
        sim = ev.simulate(a)
        return self._value(data, sim.makespan, sim.mean_completion)

    # ------------------------------------------------------------------------------------------------ evaluation
    def evaluate(self, data: MultiAccelData, solution: Assignment) -> Evaluation:
        violations = check(data, solution)
        if violations:
            return Evaluation(False, None, violations)
        sim = FluidEvaluator(data).simulate(solution)
        violations = timing_violations(data, sim)
        if violations:
            return Evaluation(False, None, violations)
        t = data.table
        acc = sim.accelerator
        busy = np.array([float((sim.end - sim.start)[acc == a].sum()) for a in range(t.n_accelerators)])
        moved = sum((s.t1 - s.t0) * sum(s.allocation) for s in sim.segments)
        metrics = {
            "throughput_gops": sim.throughput / 1e9,
            "makespan_s": sim.makespan,
            "mean_completion_s": sim.mean_completion,
            "bandwidth_utilization": moved / (data.system_bandwidth * sim.makespan) if sim.makespan else 0.0,
            "accelerator_busy": {t.accelerators[a]: float(busy[a] / sim.makespan) if sim.makespan else 0.0
                                 for a in range(t.n_accelerators)},
            "jobs_per_accelerator": {t.accelerators[a]: len(solution.order[a]) for a in range(t.n_accelerators)},
        }
        return Evaluation(True, self._value(data, sim.makespan, sim.mean_completion), [], metrics)

    def solution_to_dict(self, data: MultiAccelData, solution: Assignment) -> dict[str, Any]:
        t = data.table
        return {"order": {t.accelerators[a]: [t.jobs[j] for j in jobs] for a, jobs in enumerate(solution.order)}}

    def solution_from_dict(self, data: MultiAccelData, doc: Mapping[str, Any]) -> Assignment:
        t = data.table
        order = doc.get("order")
        if not isinstance(order, Mapping):
            raise InputError("a multi-accelerator solution needs 'order': {sub-accelerator: [job names in order]}",
                             path=("solution", "order"), expected="an object keyed by sub-accelerator name")
        index = {n: i for i, n in enumerate(t.jobs)}
        out: list[list[int]] = [[] for _ in t.accelerators]
        for name, jobs in order.items():
            if name not in t.accelerators:
                raise InputError(f"no sub-accelerator named '{name}'", path=("solution", "order", name),
                                 expected=", ".join(t.accelerators))
            if not isinstance(jobs, list):
                raise InputError("expected a list of job names", path=("solution", "order", name))
            a = t.accelerators.index(name)
            for k, j in enumerate(jobs):
                if j not in index:
                    raise InputError(f"no job named '{j}'", path=("solution", "order", name, k),
                                     expected="the group's job names")
                out[a].append(index[j])
        return Assignment(out)
