"""Tiling and loop-order selection (mapping): every conv / depthwise / matmul layer of a workload on one accelerator.

A solution maps each layer (layers of identical shape share a mapping problem and are solved once, in parallel over
worker processes). The evaluator is the cost model, :func:`~dlaopt.formulations.mapping.cost.evaluate_mapping`,
itself checked against a loop-nest simulator in the tests.

User constraints (``constraints:`` records of the kinds in :mod:`dlaopt.specs.mapping`, and those a ``flexibility``
class expands to) are resolved per layer into a constrained map space (:mod:`.constraints`, :mod:`.space`); layers
are grouped by identical loop nest *and* space. Every method keeps to the space — the exact model takes it as
rows, the enumeration filters by it, the heuristics project into it or report which constraint stopped them — and
the evaluator checks each record again with its own code (:mod:`.check`), naming every constraint a solution
breaks. A layer restricted to PE-array shapes records the shape its mapping uses (``pe_array_shape``).

This module holds the problem itself (its data, options, methods, evaluator and solution files); the per-layer
workers are in :mod:`.layers` (the exact method's GA race in :mod:`.race`), and running them over the layers —
in parallel, under the total time limit, reusing solved layers — in :mod:`.dispatch`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dlaopt.errors import InputError
from dlaopt.formulations.base import Evaluation, ExactOutcome, HeuristicFailure, Method, MilpFormulation, Problem
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.check import constraint_violations, layer_arch, pe_shape
from dlaopt.formulations.mapping.constraints import Conflict, resolve
from dlaopt.formulations.mapping.cost import CostReport, evaluate_mapping
from dlaopt.formulations.mapping.dispatch import Reused, map_layers, map_layers_reusing
from dlaopt.formulations.mapping.exact import MODEL_TOLERANCE
from dlaopt.formulations.mapping.layers import (
    capped,
    run_layer_exact,
    run_layer_exhaustive,
    run_layer_in_space,
)
from dlaopt.formulations.mapping.loopnest import LoopNest, require_mappable
from dlaopt.formulations.mapping.mapping import Mapping, loop_nest_text, mapping_errors
from dlaopt.formulations.mapping.race import LAYER_WORKERS_KEY
from dlaopt.formulations.mapping.space import ArchChoice, LayerSpace
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE
from dlaopt.solvers.result import SolveOptions, Status, TracePoint
from dlaopt.specs import mapping as opts
from dlaopt.specs.constraints import Constraint, KeyPath, selected

if TYPE_CHECKING:
    from dlaopt.hardware.model import Accelerator
    from dlaopt.io.instance import Instance

HEURISTIC_METHODS = ("random", "ga", "nvdla", "eyeriss", "shidiannao")
FILL_HEURISTICS = ("nvdla", "eyeriss", "shidiannao")  # cheap, deterministic: they complete a cut-short exact solve
REUSE_HEURISTICS = ("ga", "random")  # the heuristics a similar layer's mapping warm-starts (lever ``reuse``)


@dataclass
class MappingData:
    nests: list[LoopNest]  # every layer to map, in workload order (padded as options and constraints say)
    groups: list[list[int]]  # indices of nests with an identical mapping problem (first = representative)
    arch: MappingArch  # the instance's accelerator, unconstrained
    objective: str
    options: dict[str, Any]
    source: str | None = None
    spaces: list[LayerSpace] = field(default_factory=list)  # per group: its constrained map space
    constraints: tuple[Constraint, ...] = ()  # the mapping constraints in force (file order, presets first)
    op_kinds: list[str] = field(default_factory=list)  # per nest: its operator kind (for the layer selectors)
    conflicts: list[Conflict] = field(default_factory=list)  # constraints that certainly cannot hold
    accelerator: Accelerator | None = None

    def __post_init__(self) -> None:
        if not self.spaces:
            self.spaces = [LayerSpace((ArchChoice(None, self.arch),), mac_units=self.arch.num_macs)
                           for _ in self.groups]

    @property
    def representatives(self) -> list[LoopNest]:
        return [self.nests[g[0]] for g in self.groups]

    def layer_constraints(self, i: int) -> list[Constraint]:
        """The constraints selecting nest ``i``."""
        kind = self.op_kinds[i] if i < len(self.op_kinds) else ""
        return [c for c in self.constraints if selected(c, self.nests[i].name, kind)]

    def layer_arch(self, name: str, shape: tuple[int, int] | None = None) -> MappingArch:
        """The architecture layer ``name`` is mapped on (its bypasses; the PE array resized to ``shape``)."""
        i = next(i for i, n in enumerate(self.nests) if n.name == name)
        cs = self.layer_constraints(i)
        return layer_arch(self.arch, self.accelerator, cs, shape) if cs or shape is not None else self.arch


@dataclass
class MappingSolution:
    mappings: dict[str, Mapping]  # layer name -> mapping
    per_layer: dict[str, dict[str, Any]] = field(default_factory=dict)  # solver notes per representative layer
    shapes: dict[str, tuple[int, int]] = field(default_factory=dict)  # layer name -> PE-array shape it uses


def aggregate(reports: list[CostReport], objective: str) -> float:
    if objective == "energy":
        return sum(r.energy_pj for r in reports)
    if objective == "latency":
        return sum(r.latency_cycles for r in reports)
    return sum(r.edp for r in reports)


def _aggregate_values(values: list[float], mult: list[int]) -> float:
    """Network value from per-unique-layer values (every objective is a sum over layers)."""
    return sum(k * v for k, v in zip(mult, values, strict=True))


def _workers(data: MappingData) -> int:
    w = int(data.options.get("workers", 0))
    if w <= 0:
        w = os.cpu_count() or 1
    return max(1, min(w, len(data.groups)))


def _reuse_on(data: MappingData) -> bool:
    """The ``reuse`` lever of ``exact_tuning`` (seed 001 §5.3.1's warm start; also the GA's and random mapper's)."""
    from dlaopt.specs.tuning import levers

    return levers(data.options, opts.EXACT_LEVERS).get("reuse", False)


class MappingProblem(Problem[MappingData, MappingSolution]):
    name = "mapping"
    title = "Tiling and loop-order selection (mapping)"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("random", "heuristic", "Random mapper: best of N random valid mappings (Timeloop-style)"),
        Method("ga", "heuristic", "GAMMA genetic algorithm (seed 001 Ch. 4), population x generations budget"),
        Method("nvdla", "heuristic", "NVDLA-like fixed dataflow (K-C parallel, weight stationary), greedy tiles"),
        Method("eyeriss", "heuristic", "Eyeriss-like fixed dataflow (row stationary), greedy tiles"),
        Method("shidiannao", "heuristic", "ShiDianNao-like fixed dataflow (output stationary), greedy tiles"),
        Method("exact", "exact", "MILP over the exact cost model, warm-started; EDP by bisection over latency caps",
               "highs"),
        Method("exhaustive", "exact", "Enumeration of every mapping (small layers only; ground truth)"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> MappingData:
        options = {**opts.DEFAULT_OPTIONS, **dict(instance.options)}
        wl = instance.graph
        names = options.get("layers")
        all_ops = {op.name: op for op in wl.operators}
        if names is not None:
            for i, n in enumerate(names):
                if n not in all_ops:
                    raise InputError(f"no operator named '{n}' in workload '{wl.name}'", file=instance.source,
                                     path=("options", "layers", i), expected="names of conv2d / matmul operators")
                if all_ops[n].kind.value not in ("conv2d", "depthwise_conv2d", "matmul"):
                    raise InputError(f"operator '{n}' is a {all_ops[n].kind.value}, not a mappable layer",
                                     file=instance.source, path=("options", "layers", i),
                                     expected="conv2d, depthwise_conv2d or matmul operators")
        ops = require_mappable(wl, instance.source, names)
        padding = dict(options.get("padding") or {})
        for d in padding:
            if d not in {"N", "G", "K", "C", "P", "Q", "R", "S", "B", "M"}:
                raise InputError(f"unknown loop dimension '{d}' in padding", file=instance.source,
                                 path=("options", "padding", d), expected="one of N G K C P Q R S B M")
        acc = instance.accelerator
        try:
            arch = arch_from_accelerator(acc)
        except ValueError as exc:
            raise InputError(str(exc), file=instance.source, path=("hardware",)) from None
        declared = tuple(self.declared_constraints(instance))
        try:
            res = resolve(declared, wl, ops, arch, acc, padding)
        except InputError as exc:
            raise exc.located(file=instance.source) from None
        groups: dict[tuple, list[int]] = {}
        for i, (n, sp) in enumerate(zip(res.nests, res.spaces, strict=True)):
            groups.setdefault((n.shape_key(), sp), []).append(i)
        return MappingData(res.nests, list(groups.values()), arch, instance.objective, options, instance.source,
                           spaces=[res.spaces[g[0]] for g in groups.values()], constraints=declared,
                           op_kinds=[op.kind.value for op in ops], conflicts=res.conflicts, accelerator=acc)

    def declared_constraints(self, instance: Instance) -> tuple[Constraint, ...]:
        """The constraints a ``flexibility`` class expands to, then the ``constraints`` list."""
        from dlaopt.formulations.mapping.flexibility import expand

        return (*expand(instance), *instance.constraints)

    def infeasibility_reason(self, data: MappingData) -> str | None:
        """A layer whose single elements do not fit (every level must hold one element of each operand it keeps,
        on the architecture the layer is mapped on), or constraints that certainly cannot hold together
        (:func:`~dlaopt.formulations.mapping.constraints.certain_conflicts`)."""
        for g, space in zip(data.groups, data.spaces, strict=True):
            nest = data.nests[g[0]]
            for lv in space.archs[0].arch.levels[:-1]:
                for store in lv.stores:
                    if store.capacity_bytes is None:
                        continue
                    need = sum(nest.operand(t).word_bytes for t in store.operands)
                    if need > store.capacity_bytes:
                        return (f"memory '{store.memory}' ({store.capacity_bytes} B) cannot hold one element each "
                                f"of {'+'.join(sorted(store.operands))} ({need} B) for layer {nest.name}")
        if data.conflicts:
            return "these constraints cannot hold: " + data.conflicts[0].message
        return None

    def conflicting_constraints(self, data: MappingData, options: SolveOptions) -> list[KeyPath] | None:
        """The constraints of the first certain conflict (:meth:`infeasibility_reason`), where there is one."""
        return list(data.conflicts[0].paths) if data.conflicts and data.conflicts[0].paths else None

    def describe(self, data: MappingData) -> dict[str, Any]:
        return {
            "layers": len(data.nests),
            "unique_layers": len(data.groups),
            "macs": sum(n.macs for n in data.nests),
            "levels": [lv.name for lv in data.arch.levels],
            "slots": [s.name for s in data.arch.slots()],
            "mac_units": data.arch.num_macs,
            "objective": data.objective,
            "constraints": len(data.constraints),
            "constrained_layers": sum(len(g) for g, sp in zip(data.groups, data.spaces, strict=True) if sp.sources),
        }

    # ------------------------------------------------------------------------------------------------ methods
    def _expand(self, data: MappingData, per_rep: list[Mapping | None],
                shapes: list[tuple[int, int] | None] | None = None, reasons: list[str] | None = None
                ) -> MappingSolution:
        out: dict[str, Mapping] = {}
        out_shapes: dict[str, tuple[int, int]] = {}
        for j, (g, m) in enumerate(zip(data.groups, per_rep, strict=True)):
            if m is None:
                why = reasons[j] if reasons is not None and reasons[j] else ""
                raise HeuristicFailure(why or f"no valid mapping found for layer {data.nests[g[0]].describe()}")
            shape = shapes[j] if shapes is not None else None
            for i in g:
                out[data.nests[i].name] = m
                if shape is not None:
                    out_shapes[data.nests[i].name] = shape
        return MappingSolution(out, shapes=out_shapes)

    def run_heuristic(self, method: str, data: MappingData, options: SolveOptions) -> MappingSolution:
        per_limit = None if options.time_limit is None else options.time_limit / max(1, math.ceil(
            len(data.groups) / _workers(data)))
        per_limit = capped(per_limit, options.deadline)
        if per_limit is not None and per_limit <= 0:
            raise HeuristicFailure(NOT_STARTED_MESSAGE)
        args = [(method, n, sp, data.objective, data.options, options.seed, per_limit)
                for n, sp in zip(data.representatives, data.spaces, strict=True)]
        reused: Reused | None = None
        if method in REUSE_HEURISTICS and _reuse_on(data):
            results, reused = self._map_reusing(data, run_layer_in_space, args, options.deadline, None,
                                                method=method, mip_rel_gap=None)
        else:
            results = map_layers(run_layer_in_space, args, _workers(data), options.deadline)
        missing = [n for n, r in zip(data.representatives, results, strict=True) if r is None]
        if missing:
            raise HeuristicFailure(f"{NOT_STARTED_MESSAGE} or finished: {len(missing)} of {len(results)} layers "
                                   f"not mapped ({', '.join(n.name for n in missing[:3])}"
                                   f"{', ...' if len(missing) > 3 else ''})")
        sol = self._expand(data, [r[0] for r in results], [r[2] for r in results], [r[3] for r in results])
        for g, r in zip(data.groups, results, strict=True):
            sol.per_layer[data.nests[g[0]].name] = {"time_s": r[1]}
            if reused is not None and data.nests[g[0]].name in reused.seeded:
                sol.per_layer[data.nests[g[0]].name]["warm_starts"] = reused.seeded[data.nests[g[0]].name]
        return sol

    def build_milp(self, data: MappingData) -> MilpFormulation[MappingSolution]:
        raise NotImplementedError("the mapping problem uses its own exact driver (solve_exact)")

    def solve_exact(self, data: MappingData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[MappingSolution] | None:
        t0 = time.perf_counter()
        reps = data.representatives
        if method == "exhaustive":
            results = map_layers(run_layer_exhaustive,
                                 [(n, data.arch, data.objective, int(data.options["exhaustive_limit"]), sp)
                                  for n, sp in zip(reps, data.spaces, strict=True)],
                                 _workers(data), options.deadline)
            unfinished = self._unfinished(reps, results)
            if unfinished:
                return ExactOutcome(None, Status.NO_SOLUTION, None, "enumeration", message=unfinished,
                                    solve_time_s=time.perf_counter() - t0)
            too_large = next((r["message"] for r in results if r["mapping"] is None and r["message"]), "")
            if too_large:
                return ExactOutcome(None, Status.NO_SOLUTION, None, "enumeration", message=too_large,
                                    solve_time_s=time.perf_counter() - t0)
            empty = next((n for n, r in zip(reps, results, strict=True) if r["mapping"] is None), None)
            if empty is not None:  # every mapping enumerated, none valid: proven infeasible
                space = data.spaces[reps.index(empty)]
                within = f" within its constraints ({', '.join(space.sources)})" if space.sources else ""
                return ExactOutcome(None, Status.INFEASIBLE, None, "enumeration",
                                    message=f"no mapping of layer {empty.describe()} is valid{within}",
                                    solve_time_s=time.perf_counter() - t0)
            sol = self._expand(data, [r["mapping"] for r in results], [r["shape"] for r in results])
            for g, r in zip(data.groups, results, strict=True):
                sol.per_layer[data.nests[g[0]].name] = {"time_s": r["time_s"]}
            value = self.evaluate(data, sol).objective
            return ExactOutcome(sol, Status.OPTIMAL, value, "enumeration", message="every mapping enumerated",
                                solve_time_s=time.perf_counter() - t0)
        backend = solver or "highs"
        if backend != "highs" and not backend.startswith("pyomo:"):
            raise InputError(f"the mapping model needs a MILP solver (highs or pyomo:NAME), not '{backend}'",
                             path=("solver",), expected="highs or pyomo:NAME")
        per_layer_opts = SolveOptions(
            time_limit=options.time_limit, mip_rel_gap=options.mip_rel_gap,
            threads=1 if _workers(data) > 1 else options.threads, seed=options.seed, node_limit=options.node_limit,
            deterministic=options.deterministic, extra={**options.extra, LAYER_WORKERS_KEY: _workers(data)},
            deadline=options.deadline)
        if options.time_limit is not None:
            per_layer_opts.time_limit = options.time_limit / max(1, math.ceil(len(reps) / _workers(data)))
        reasons: list[str] = []
        exact_args = [(n, data.arch, data.objective, data.options, per_layer_opts, backend, sp)
                      for n, sp in zip(reps, data.spaces, strict=True)]
        reused: Reused | None = None
        if _reuse_on(data):
            results, reused = self._map_reusing(data, run_layer_exact, exact_args, options.deadline, reasons,
                                                method="exact", mip_rel_gap=options.mip_rel_gap)
        else:
            results = map_layers(run_layer_exact, exact_args, _workers(data), options.deadline, reasons)
        infeasible = next((n for n, r in zip(reps, results, strict=True)
                           if r is not None and r["status"] == Status.INFEASIBLE.value), None)
        if infeasible is not None:
            r = results[reps.index(infeasible)]
            return ExactOutcome(None, Status.INFEASIBLE, None, backend, message=r["message"] or
                                f"no mapping of layer {infeasible.describe()} meets its constraints",
                                solve_time_s=time.perf_counter() - t0)
        cut: dict[str, Any] = {}
        cut_msg = ""
        if any(r is None for r in results):  # cut short by the total time limit: complete it, or no solution
            filled = self._complete(data, results, reasons)
            if filled is None:
                return ExactOutcome(None, Status.NO_SOLUTION, None, backend,
                                    message=self._unfinished(reps, results) + "; no fixed-dataflow heuristic maps "
                                    "the layers left, so no complete mapping", solve_time_s=time.perf_counter() - t0)
            results, cut, cut_msg = filled
        mult = [len(g) for g in data.groups]
        if any(r["mapping"] is None for r in results):
            bad = next(n for n, r in zip(reps, results, strict=True) if r["mapping"] is None)
            return ExactOutcome(None, Status.NO_SOLUTION, None, backend,
                                message=f"no mapping found for layer {bad.describe()}",
                                solve_time_s=time.perf_counter() - t0)
        sol = self._expand(data, [r["mapping"] for r in results], [r.get("shape") for r in results])
        statuses = [r["status"] for r in results]
        status = Status.OPTIMAL if all(s == Status.OPTIMAL.value for s in statuses) else Status.FEASIBLE
        bound = None
        if all(r["bound"] is not None for r in results):
            bound = sum(k * r["bound"] for k, r in zip(mult, results, strict=True))
        model_obj = None
        if all(r["model_objective"] is not None for r in results):
            model_obj = sum(k * r["model_objective"] for k, r in zip(mult, results, strict=True))
        for g, r in zip(data.groups, results, strict=True):
            sol.per_layer[data.nests[g[0]].name] = {
                k: r[k] for k in ("status", "objective", "bound", "time_s", "warm_start_s", "solves", "message",
                                  "model_stats")}
            sol.per_layer[data.nests[g[0]].name]["warm_start"] = r["warm_start"]
            if r.get("completed_by"):
                sol.per_layer[data.nests[g[0]].name]["completed_by"] = r["completed_by"]
        trace: list[TracePoint] = []
        if len(results) == 1:
            trace = [TracePoint(t, i, b) for t, i, b in results[0]["trace"]]
        times = sorted(r["time_s"] for r in results if not r.get("completed_by")) or [0.0]
        metrics: dict[str, Any] = {"layer_time_median_s": times[len(times) // 2], "layer_time_max_s": times[-1],
                                   **cut}
        if reused is not None:
            metrics["reuse"] = reused.metrics()
        msgs = sorted({r["message"] for r in results if r["message"] and not r.get("completed_by")})
        if cut_msg:
            msgs.insert(0, cut_msg)
        from dlaopt.solvers.highs_backend import HIGHS_VERSION

        warm_start = None
        if all(r["warm_start"] is not None for r in results):
            names = sorted({r["warm_start"][0] for r in results})
            warm_start = {"method": "/".join(names) + (" (best per layer)" if len(results) > 1 else ""),
                          "objective": _aggregate_values([r["warm_start"][1] for r in results], mult)}

        return ExactOutcome(sol, status, bound, backend, HIGHS_VERSION if backend == "highs" else "",
                            message="; ".join(msgs), trace=trace, model_objective=model_obj, metrics=metrics,
                            warm_start=warm_start, objective_tolerance=MODEL_TOLERANCE,
                            solve_time_s=time.perf_counter() - t0,
                            model_stats=results[0]["model_stats"] if len(results) == 1 else None)

    @staticmethod
    def _map_reusing(data: MappingData, fn: Callable[..., Any], args: list[tuple], deadline: float | None,
                     reasons: list[str] | None, *, method: str, mip_rel_gap: float | None
                     ) -> tuple[list[Any], Reused]:
        """``fn(*args[i], seeds)`` per representative layer, reusing solved layers
        (:func:`~dlaopt.formulations.mapping.dispatch.map_layers_reusing`; the cache at option ``cache_dir``)."""
        return map_layers_reusing(fn, args, data.representatives, data.spaces, data.objective,
                                  workers=_workers(data), cache_dir=data.options.get("cache_dir"), deadline=deadline,
                                  reasons=reasons, method=method, mip_rel_gap=mip_rel_gap)

    def _complete(self, data: MappingData, results: list[Any], reasons: list[str]
                  ) -> tuple[list[dict[str, Any]], dict[str, Any], str] | None:
        """An exact run cut short by the total time limit, completed: every layer it left unsolved gets the first
        valid mapping of the cheap fixed-dataflow heuristics (:data:`FILL_HEURISTICS`, in the order of the
        ``warm_start`` option), marked ``completed_by`` with status ``no_solution`` and the reason in its per-layer
        notes, so the solution is whole (never a partial mapping) and the run at best ``feasible`` without a
        bound. Also the metrics saying which layers were left out, and why (``layers_not_solved``,
        ``layers_completed_by_heuristic``), and the message. ``None`` when some layer left out has no such mapping."""
        order = [h for h in data.options.get("warm_start", ()) if h in FILL_HEURISTICS]
        order += [h for h in FILL_HEURISTICS if h not in order]
        out: list[dict[str, Any]] = []
        not_solved: dict[str, str] = {}
        completed: dict[str, str] = {}
        for g, r, why, space in zip(data.groups, results, reasons or [""] * len(results), data.spaces, strict=True):
            if r is not None:
                out.append(r)
                continue
            nest = data.nests[g[0]]
            why = why or NOT_STARTED_MESSAGE
            found = None
            for h in order:
                t0 = time.perf_counter()
                m, _, shape, _ = run_layer_in_space(h, nest, space, data.objective, data.options, 0, None)
                arch = next((c.arch for c in space.archs if c.shape == shape), space.archs[0].arch)
                rep = evaluate_mapping(nest, arch, m) if m is not None else None
                if rep is not None and rep.valid:
                    found = (h, m, rep, time.perf_counter() - t0, shape)
                    break
            if found is None:
                return None
            h, m, rep, secs, shape = found
            value = rep.objective(data.objective)  # its "model" value is the evaluator's: the check stays exact
            out.append({"mapping": m, "shape": shape, "objective": value, "model_objective": value,
                        "bound": None, "status": Status.NO_SOLUTION.value, "time_s": secs, "warm_start_s": 0.0,
                        "solves": 0, "message": f"{why}; completed by the '{h}' heuristic", "model_stats": None,
                        "warm_start": None, "trace": [], "completed_by": h})
            for i in g:
                not_solved[data.nests[i].name] = why
                completed[data.nests[i].name] = h
        n_cut = sum(r is None for r in results)
        names = [data.nests[g[0]].name for g, r in zip(data.groups, results, strict=True) if r is None]
        msg = (f"total time limit: {n_cut} of {len(results)} unique layers not solved by the exact method "
               f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}), completed by fixed-dataflow "
               "heuristics (metrics: layers_completed_by_heuristic)")
        return out, {"layers_not_solved": not_solved, "layers_completed_by_heuristic": completed}, msg

    @staticmethod
    def _unfinished(reps: list[LoopNest], results: list[Any]) -> str:
        """The message of a run stopped by the total time limit ('' when every layer came back)."""
        missing = [n.name for n, r in zip(reps, results, strict=True) if r is None]
        if not missing:
            return ""
        return (f"{NOT_STARTED_MESSAGE} or finished: {len(missing)} of {len(reps)} layers not solved "
                f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")

    # ------------------------------------------------------------------------------------------------ evaluation
    def reports(self, data: MappingData, solution: MappingSolution) -> dict[str, CostReport]:
        return {n.name: evaluate_mapping(n, data.layer_arch(n.name, solution.shapes.get(n.name)),
                                         solution.mappings[n.name])
                for n in data.nests if n.name in solution.mappings}

    def evaluate(self, data: MappingData, solution: MappingSolution) -> Evaluation:
        """The cost model on each layer's architecture (its bypasses; the PE-array shape the solution says it uses),
        and every constraint checked again from the records (:mod:`.check`), each broken one named."""
        violations: list[str] = []
        reps: list[CostReport] = []
        per_layer = []
        for i, n in enumerate(data.nests):
            m = solution.mappings.get(n.name)
            if m is None:
                violations.append(f"layer {n.name}: no mapping")
                continue
            cs = data.layer_constraints(i)
            shape = solution.shapes.get(n.name)
            arch = layer_arch(data.arch, data.accelerator, cs, shape) if cs or shape is not None else data.arch
            r = evaluate_mapping(n, arch, m)
            violations.extend(f"layer {n.name}: {v}" for v in r.violations)
            violations.extend(constraint_violations(n.name, n, arch, data.arch, data.accelerator, m, shape, cs,
                                                    data.op_kinds[i] if i < len(data.op_kinds) else ""))
            if shape is not None and not any(c.kind == "shape" for c in cs) and tuple(shape) != pe_shape(
                    data.arch, data.accelerator):
                violations.append(f"layer {n.name}: PE-array shape {shape[0]}x{shape[1]} is not the accelerator's "
                                  "and no shape constraint allows another")
            reps.append(r)
            per_layer.append({"layer": n.name, "kind": n.kind, "shape": n.shape_text, "energy_pj": r.energy_pj,
                              "latency_cycles": r.latency_cycles, "edp": r.edp, "utilization": r.utilization,
                              "valid": r.valid})
        feasible = not violations
        objective = aggregate(reps, data.objective) if feasible else None
        energy = sum(r.energy_pj for r in reps)
        latency = sum(r.latency_cycles for r in reps)
        metrics = {
            "energy_pj": energy,
            "latency_cycles": latency,
            "edp_sum": sum(r.edp for r in reps),
            "edp_total": energy * latency,
            "macs": sum(r.real_macs for r in reps),
            "utilization": (sum(r.real_macs for r in reps) / (latency * data.arch.num_macs)) if latency else 0.0,
            "latency_s": latency / data.arch.clock_hz,
            "layers": per_layer,
        }
        return Evaluation(feasible, objective, violations, metrics)

    def solution_to_dict(self, data: MappingData, solution: MappingSolution) -> dict[str, Any]:
        layers: dict[str, Any] = {}
        for n in data.nests:
            m = solution.mappings.get(n.name)
            if m is None:
                continue
            shape = solution.shapes.get(n.name)
            arch = data.layer_arch(n.name, shape)
            doc = m.to_dict(arch)
            doc["loop_nest"] = loop_nest_text(n, arch, m)
            if shape is not None:
                doc["pe_array_shape"] = list(shape)
            if n.name in solution.per_layer:
                doc["solver"] = solution.per_layer[n.name]
            layers[n.name] = doc
        return {"layers": layers}

    def solution_from_dict(self, data: MappingData, doc: MappingABC[str, Any]) -> MappingSolution:
        layers = doc.get("layers")
        if not isinstance(layers, MappingABC):
            raise InputError("a mapping solution needs 'layers': {layer name: {factors, orders}}",
                             path=("solution", "layers"), expected="an object keyed by layer name")
        out: dict[str, Mapping] = {}
        shapes: dict[str, tuple[int, int]] = {}
        for name, ld in layers.items():
            where = ("solution", "layers", name)
            if not isinstance(ld, MappingABC) or not isinstance(ld.get("factors"), MappingABC) or not isinstance(
                    ld.get("orders"), list):
                raise InputError(f"layer '{name}': expected 'factors' (dim -> list of ints per slot) and 'orders' "
                                 "(list of dim lists per level)", path=where,
                                 expected="{factors: {...}, orders: [[...], ...]}")
            try:
                m = Mapping.from_dict(ld)
            except (TypeError, ValueError) as exc:
                raise InputError(f"layer '{name}': {exc}", path=where) from None
            nest = next((n for n in data.nests if n.name == name), None)
            if nest is None:
                raise InputError(f"no layer named '{name}' in this instance", path=where,
                                 expected="names of the instance's mapped layers")
            shape = ld.get("pe_array_shape")
            if shape is not None:
                if (not isinstance(shape, list) or len(shape) != 2
                        or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in shape)):
                    raise InputError(f"layer '{name}': 'pe_array_shape' must be [rows, columns]",
                                     path=(*where, "pe_array_shape"), expected="two positive integers")
                shapes[name] = (shape[0], shape[1])
            arch = data.layer_arch(name, shapes.get(name))
            errs = mapping_errors(nest, arch, m)
            if errs:
                raise InputError(f"layer '{name}': {errs[0]}", path=where,
                                 expected=f"factors over the slots {[s.name for s in arch.slots()]}")
            out[name] = m
        return MappingSolution(out, shapes=shapes)


__all__ = ["HEURISTIC_METHODS", "MappingData", "MappingProblem", "MappingSolution", "aggregate"]
