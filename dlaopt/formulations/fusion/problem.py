"""Operator fusion (seed 001 Appendix A, FLAT): which adjacent operators run as one fused group, each group's outer
tile, and every operator's inner mapping, on one accelerator.

A fused group (:mod:`.group`) is a chain of conv / matmul operators under one shared outer tile loop, its
intermediates staged in an on-chip memory (``staging``) and never sent off chip; the element-wise, activation,
softmax and norm operators between its operators are applied in place (:mod:`.cost`). An operator in no group runs
layer by layer (its full loop nest, operands in main memory); any other operator not absorbed by a group runs as a
pass of its own over main memory (:func:`.check.pass_cost`).

Methods:

* ``exact`` — every candidate group's exact optimum (:mod:`.exact`: per outer tile, each operator's inner optimum by
  the mapping MILP with roots and capacity limits; bounds prune tiles), every single operator's layer-wise optimum,
  then the exact cover of the operators by candidates (:mod:`.select`, HiGHS). With explicit ``groups`` the
  candidates are those groups and the single operators.
* ``exhaustive`` — the same selection with every group valued by enumeration (:func:`.exact.exhaustive_group`; small
  cases only: the ground truth).
* ``layerwise`` — no fusion: every operator's layer-wise optimum (the unfused baseline).
* ``naive-fused`` — fused groups only at one outer iteration (M-Gran: the whole intermediate on chip), exact inner
  mappings, selected like ``exact`` (a group whose whole intermediate does not fit is not used).
* ``random``, ``ga`` — the same selection and tile search with each inner mapping found by the random mapper or
  GAMMA instead of the MILP.

The evaluator (:mod:`.check`) recomputes legality, capacity and cost from the instance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping as MappingABC
from typing import TYPE_CHECKING, Any

from dlaopt.errors import InputError
from dlaopt.formulations.base import Evaluation, ExactOutcome, HeuristicFailure, Method, MilpFormulation, Problem
from dlaopt.formulations.fusion.check import build_group, evaluate_solution, flat_tile_set, pass_cost
from dlaopt.formulations.fusion.cost import InnerProblem, staging_index
from dlaopt.formulations.fusion.data import FusionData, FusionSolution, GroupChoice
from dlaopt.formulations.fusion.exact import GroupOptimum, GroupSolver, InnerSolve, exhaustive_group, offchip_arch
from dlaopt.formulations.fusion.group import FusedGroup, check_tile, inner_nests
from dlaopt.formulations.fusion.select import Candidate, Selection, candidate_chains, schedule_cycle, select_groups
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import is_mappable, loopnest_from_operator, require_mappable
from dlaopt.formulations.mapping.mapping import Mapping, loop_nest_text, mapping_errors
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import fusion as opts

if TYPE_CHECKING:
    from dlaopt.io.instance import Instance

INNER_HEURISTICS = ("random", "ga")


def _default_staging(arch: MappingArch) -> int | None:
    """The outermost on-chip level with one instance."""
    for j in range(arch.top - 1, -1, -1):
        if arch.levels[j].instances == 1:
            return j
    return None


class FusionProblem(Problem[FusionData, FusionSolution]):
    name = "fusion"
    title = "Operator fusion: fused groups, outer tiles and inner mappings (FLAT)"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("exact", "exact", "Every candidate group optimal (outer tiles x inner-mapping MILPs, bound pruning), "
               "then the exact cover of the operators by groups (HiGHS)", "highs"),
        Method("exhaustive", "exact", "The same selection with every group valued by enumerating every outer tile "
               "and every combination of inner mappings (small cases only; ground truth)"),
        Method("layerwise", "heuristic", "No fusion: every operator's own optimum, intermediates through main "
               "memory (the unfused baseline)"),
        Method("naive-fused", "heuristic", "Fused groups at one outer iteration only (FLAT's naive fusion, M-Gran: "
               "the whole intermediate on chip), exact inner mappings"),
        Method("random", "heuristic", "Group selection and outer-tile search with random inner mappers "
               "(Timeloop-style, per operator and tile)"),
        Method("ga", "heuristic", "Group selection and outer-tile search with GAMMA as the inner mapper"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> FusionData:
        options = {**opts.DEFAULT_OPTIONS, **dict(instance.options)}
        src = instance.source
        wl = instance.graph
        ops = require_mappable(wl, src)
        acc = instance.accelerator
        try:
            arch = arch_from_accelerator(acc)
        except ValueError as exc:
            raise InputError(str(exc), file=src, path=("hardware",)) from None
        if options["staging"] is not None:
            try:
                staging = staging_index(arch, options["staging"])
            except ValueError as exc:
                raise InputError(str(exc), file=src, path=("options", "staging"),
                                 expected="an on-chip memory with one instance: "
                                 + ", ".join(s.memory for lv in arch.levels[:-1] if lv.instances == 1
                                             for s in lv.stores)) from None
        else:
            found = _default_staging(arch)
            if found is None:
                raise InputError(f"accelerator '{acc.name}' has no on-chip memory with one instance to stage "
                                 "intermediates in", file=src, path=("hardware",),
                                 expected="a shared on-chip buffer")
            staging = found
        staging_memory = arch.levels[staging].stores[0].memory
        heads = options["heads"] or int(wl.params.get("heads", 1) or 1)  # type: ignore[call-overload]
        nests = {op.name: loopnest_from_operator(wl, op) for op in ops}
        items = [op.name for op in ops]
        by_name = {op.name: op for op in wl.operators}
        groups: dict[tuple[str, ...], FusedGroup] = {}
        rejected: dict[tuple[str, ...], str] = {}
        fixed = options["groups"] != "auto"
        if fixed:
            candidates: list[Candidate] = []
            placed: dict[str, int] = {}
            for i, names in enumerate(options["groups"]):
                for j, n in enumerate(names):
                    where = ("options", "groups", i, j)
                    if n not in by_name:
                        raise InputError(f"no operator named '{n}' in workload '{wl.name}'", file=src, path=where,
                                         expected="names of conv2d / depthwise conv / matmul operators")
                    if not is_mappable(by_name[n]):
                        raise InputError(f"operator '{n}' is a {by_name[n].kind.value}: list the conv / matmul "
                                         "operators of a group (the ones between them are absorbed)", file=src,
                                         path=where, expected="conv2d, depthwise_conv2d or matmul operators")
                    if n in placed:
                        raise InputError(f"operator '{n}' is already in group {placed[n]}", file=src, path=where,
                                         expected="each operator in one group")
                    placed[n] = i
                key = tuple(names)
                if len(key) > 1:
                    try:
                        g = build_group(wl, key, heads)
                    except ValueError as exc:
                        raise InputError(f"operators {list(key)} cannot be fused: {exc}", file=src,
                                         path=("options", "groups", i), expected="a chain of operators") from None
                    key = g.op_names
                    groups[key] = g
                if len(key) > 1:
                    candidates.append(Candidate(key))
            candidates = [c for c in candidates if c.fused] + [Candidate((n,)) for n in items]
        else:
            def accept(chain: tuple[str, ...]) -> bool:
                try:
                    g = build_group(wl, chain, heads)
                except ValueError as exc:
                    rejected[chain] = str(exc)
                    return False
                if g.op_names != chain:
                    rejected[chain] = f"the chain runs {' -> '.join(g.op_names)}"
                    return False
                groups[chain] = g
                return True

            candidates = candidate_chains(wl, int(options["max_group"]), accept=accept)
        lanes = acc.pe_array.lanes
        passes = {op.name: pass_cost(wl, op, arch, lanes) for op in wl.operators if not is_mappable(op)}
        return FusionData(instance.name, wl, acc, arch, instance.objective, options, items, nests, candidates,
                          groups, staging, staging_memory, int(options["buffering"]), options["granularity"], lanes,
                          heads, passes, fixed, rejected, src)

    def infeasibility_reason(self, data: FusionData) -> str | None:
        return None

    def describe(self, data: FusionData) -> dict[str, Any]:
        return {"operators": len(data.items), "candidates": len(data.candidates),
                "fused_candidates": sum(1 for c in data.candidates if c.fused),
                "groups": "given" if data.fixed else "auto", "staging": data.staging_memory,
                "buffering": data.buffering, "granularity": data.granularity, "objective": data.objective,
                "passes": len(data.passes)}

    # ------------------------------------------------------------------------------------------------ methods
    def _solver(self, data: FusionData, options: SolveOptions, inner: str | None = None) -> GroupSolver:
        mapper = None
        if inner is not None:
            mapper = _heuristic_mapper(inner, data, options)
        return GroupSolver(data.arch, data.objective, buffering=data.buffering, lanes=data.lanes, options=options,
                           entry_time_limit=data.options["entry_time_limit"], inner=mapper)

    def _tiles(self, data: FusionData, group: FusedGroup, naive: bool) -> list[dict[str, int]] | None:
        if naive:
            return [check_tile(group, {})]
        return flat_tile_set(data, group)

    def _plan(self, data: FusionData, method: str, options: SolveOptions) -> tuple[FusionSolution, dict[str, Any]]:
        """Value every candidate the method may use, select, and assemble the solution (see the module
        docstring). Raises HeuristicFailure when no partition is possible."""
        t0 = time.perf_counter()
        deadline = options.end_by()
        inner = method if method in INNER_HEURISTICS else None
        gs = self._solver(data, options, inner)
        fuse = method != "layerwise"
        cands = [c for c in data.candidates if fuse or not c.fused]
        values: list[float | None] = []
        seconds: list[float | None] = []
        bounds: list[float | None] = []
        results: list[tuple[Any, ...]] = []
        proven = True
        notes: list[str] = []
        for c in cands:
            if not c.fused:
                nest = data.nests[c.ops[0]]
                s = gs.inner(InnerProblem(nest, {}, {}), deadline)
                if s.mapping is None or s.report is None or not s.report.valid:
                    values.append(None)
                    seconds.append(None)
                    bounds.append(s.bound)
                    results.append((None,))
                    if s.status != Status.INFEASIBLE:
                        proven = False
                    notes.append(f"{c.ops[0]}: {s.status.value}" + (f" ({s.message})" if s.message else ""))
                    continue
                if s.status != Status.OPTIMAL:
                    proven = False
                values.append(s.value)
                seconds.append(s.report.latency_cycles)
                bounds.append(s.bound if s.bound is not None else 0.0)
                results.append((None, (s.mapping,)))
                continue
            group = data.groups[c.ops]
            tiles = self._tiles(data, group, method == "naive-fused")
            if method == "exhaustive":
                try:
                    res: GroupOptimum = exhaustive_group(
                        group, data.arch, data.objective, data.staging, tiles=tiles, buffering=data.buffering,
                        lanes=data.lanes, limit=int(data.options["exhaustive_limit"]))
                except Exception as exc:  # SpaceTooLarge: this method does not apply
                    raise HeuristicFailure(str(exc)) from None
            else:
                res = gs.solve(group, data.staging, tiles, deadline=deadline)
            if res.status not in (Status.OPTIMAL, Status.INFEASIBLE):
                proven = False
            if res.value is None:
                values.append(None)
                seconds.append(None)
                bounds.append(res.bound)
                results.append((None,))
                notes.append(res.message)
                continue
            absorbed = data.absorbed(c.ops)
            values.append(res.value - sum(data.passes[o].value(data.objective) for o in absorbed))
            seconds.append(res.latency - sum(data.passes[o].latency_cycles for o in absorbed))  # type: ignore[operator]
            b = res.bound if res.bound is not None else 0.0
            bounds.append(b - sum(data.passes[o].value(data.objective) for o in absorbed))
            results.append((res.tile, res.mappings))
        constant = sum(p.value(data.objective) for p in data.passes.values())
        sec_constant = sum(p.latency_cycles for p in data.passes.values())
        lex = data.objective == "offchip"
        absorbs = [data.absorbed(c.ops) if c.fused else () for c in cands]
        cycle = _cycle_finder(data, cands, absorbs)
        sel: Selection = select_groups(data.items, cands, values, secondary=seconds if lex else None,
                                       constant=constant, secondary_constant=sec_constant, options=options,
                                       absorbs=absorbs, cycle=cycle)
        if not sel.chosen:
            raise HeuristicFailure(sel.message or "no partition of the operators into usable groups"
                                   + (": " + "; ".join(n for n in notes if n) if notes else ""))
        chosen = [cands[j] for j in sel.chosen]
        chosen.sort(key=lambda c: data.items.index(c.ops[0]))
        out = []
        for c in chosen:
            r = results[cands.index(c)]
            out.append(GroupChoice(c.ops, dict(r[0]) if r[0] is not None else None, tuple(r[1])))
        bound: float | None = sel.bound
        if not proven:
            usable = [b is not None for b in bounds]
            bsel = select_groups(data.items, cands, [b if u else None for b, u in zip(bounds, usable, strict=True)],
                                 constant=constant, options=options, absorbs=absorbs,
                                 cycle=cycle) if all(usable) else None
            bound = None if bsel is None or bsel.value is None else min(bsel.value, sel.value or math.inf)
        info = {"value": sel.value, "bound": bound, "proven": proven and sel.status == Status.OPTIMAL,
                "selection_status": sel.status.value, "candidates": len(cands),
                "candidate_values": {c.label: v for c, v in zip(cands, values, strict=True)},
                "inner_solves": gs.solves, "cache_hits": gs.hits, "time_s": time.perf_counter() - t0,
                "notes": [n for n in notes if n]}
        sol = FusionSolution(out, {"method": method, "inner_solves": gs.solves, "cache_hits": gs.hits,
                                   "candidates": len(cands)})
        return sol, info

    def run_heuristic(self, method: str, data: FusionData, options: SolveOptions) -> FusionSolution:
        if method not in ("layerwise", "naive-fused", *INNER_HEURISTICS):
            raise HeuristicFailure(f"unknown method '{method}'")
        sol, _ = self._plan(data, method, options)
        return sol

    def build_milp(self, data: FusionData) -> MilpFormulation[FusionSolution]:
        raise NotImplementedError("fusion is solved by its own exact driver (solve_exact)")

    def solve_exact(self, data: FusionData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[FusionSolution] | None:
        t0 = time.perf_counter()
        try:
            sol, info = self._plan(data, method, options)
        except HeuristicFailure as exc:
            msg = str(exc)
            status = Status.INFEASIBLE if "no usable candidate" in msg or "no partition" in msg else \
                Status.NO_SOLUTION
            if method == "exhaustive" and "combinations" in msg:
                status = Status.NO_SOLUTION
            return ExactOutcome(None, status, None, "highs" if method == "exact" else "enumeration", message=msg,
                                solve_time_s=time.perf_counter() - t0)
        status = Status.OPTIMAL if info["proven"] else Status.FEASIBLE
        metrics = {k: info[k] for k in ("candidates", "inner_solves", "cache_hits", "selection_status")}
        metrics["candidate_values"] = info["candidate_values"]
        return ExactOutcome(sol, status, info["bound"], "highs" if method == "exact" else "enumeration",
                            message="; ".join(info["notes"]), model_objective=info["value"],
                            objective_tolerance=1e-6, metrics=metrics, solve_time_s=time.perf_counter() - t0)

    # ------------------------------------------------------------------------------------------------ evaluation
    def evaluate(self, data: FusionData, solution: FusionSolution) -> Evaluation:
        return evaluate_solution(data, solution)

    def solution_to_dict(self, data: FusionData, solution: FusionSolution) -> dict[str, Any]:
        groups = []
        for g in solution.groups:
            if g.fused:
                group = data.groups.get(g.ops) or build_group(data.workload, g.ops, data.heads)
                nests = inner_nests(group, g.tile or {})
            else:
                nests = (data.nests[g.ops[0]],)
            maps = {}
            for nest, m in zip(nests, g.mappings, strict=True):
                maps[nest.name] = {**m.to_dict(data.arch), "loop_nest": loop_nest_text(nest, data.arch, m)}
            doc: dict[str, Any] = {"ops": list(g.ops)}
            if g.fused:
                doc["tile"] = dict(g.tile or {})
            doc["mappings"] = maps
            groups.append(doc)
        out: dict[str, Any] = {"staging": data.staging_memory, "buffering": data.buffering, "groups": groups}
        if solution.notes:
            out["notes"] = dict(solution.notes)
        return out

    def solution_from_dict(self, data: FusionData, doc: MappingABC[str, Any]) -> FusionSolution:
        groups = doc.get("groups")
        if not isinstance(groups, list):
            raise InputError("a fusion solution needs 'groups': [{ops, tile, mappings}, ...]",
                             path=("solution", "groups"), expected="a list of groups")
        out: list[GroupChoice] = []
        for k, gd in enumerate(groups):
            where: tuple[str | int, ...] = ("solution", "groups", k)
            if not isinstance(gd, MappingABC):
                raise InputError("a group must be an object {ops, tile, mappings}", path=where)
            names = gd.get("ops")
            if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
                raise InputError("'ops' must be a non-empty list of operator names", path=(*where, "ops"))
            for j, n in enumerate(names):
                if n not in data.nests:
                    raise InputError(f"'{n}' is not a mappable operator of the workload", path=(*where, "ops", j),
                                     expected="conv2d / depthwise conv / matmul operator names")
            ops = tuple(names)
            tile = None
            if len(ops) > 1:
                t = gd.get("tile")
                if not isinstance(t, MappingABC) or not all(
                        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in t.values()):
                    raise InputError("a fused group needs 'tile': {outer dim: number of tiles}", path=(*where, "tile"),
                                     expected="positive integers per outer dim")
                tile = {str(a): int(v) for a, v in t.items()}
            maps = gd.get("mappings")
            if not isinstance(maps, MappingABC):
                raise InputError("'mappings' must be an object {operator: {factors, orders}}",
                                 path=(*where, "mappings"))
            ms = []
            for n in ops:
                md = maps.get(n)
                if not isinstance(md, MappingABC):
                    raise InputError(f"the mapping of '{n}' is missing", path=(*where, "mappings", n),
                                     expected="{factors, orders}")
                try:
                    ms.append(Mapping.from_dict(md))
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise InputError(f"operator '{n}': bad mapping ({exc})", path=(*where, "mappings", n)) from None
            out.append(GroupChoice(ops, tile, tuple(ms)))
        return FusionSolution(out)


def _cycle_finder(data: FusionData, cands: list[Candidate],
                  absorbs: list[tuple[str, ...]]):  # noqa: ANN202 (chosen indices -> cyclic subset or None)
    """The selection's schedule check: the chosen fused candidates that depend on each other in a cycle."""

    def find(chosen: list[int]) -> list[int] | None:
        fused = [j for j in chosen if cands[j].fused]
        found = schedule_cycle(data.workload, [(*cands[j].ops, *absorbs[j]) for j in fused])
        return None if found is None else [fused[k] for k in found]

    return find


def _heuristic_mapper(method: str, data: FusionData, options: SolveOptions):  # noqa: ANN202 (an InnerMapper)
    """An inner mapper running the random mapper or GAMMA on one inner problem (off-chip bytes as energy on the
    off-chip view of the architecture)."""
    from dlaopt.formulations.mapping.heuristics import HEURISTICS, gamma

    arch_for = offchip_arch(data.arch) if data.objective == "offchip" else data.arch
    objective = "energy" if data.objective == "offchip" else data.objective

    def run(prob: InnerProblem, arch: MappingArch, _objective: str) -> InnerSolve:
        limits = {k: int(math.floor(v + 1e-9)) for k, v in prob.capacity_limits.items()}
        if any(v < 0 for v in limits.values()):
            return InnerSolve(None, None, None, None, Status.INFEASIBLE, "no room at the staging memory")
        if method == "random":
            m = HEURISTICS["random"](prob.nest, arch_for, objective, seed=options.seed,
                                     budget=int(data.options["random_samples"]), roots=prob.roots,
                                     capacity_limits=limits)
        else:
            m = gamma(prob.nest, arch_for, objective, population=int(data.options["ga_population"]),
                      generations=int(data.options["ga_generations"]), seed=options.seed, roots=prob.roots,
                      capacity_limits=limits)
        if m is None or mapping_errors(prob.nest, arch, m):
            return InnerSolve(None, None, None, None, Status.NO_SOLUTION, f"{method} found no mapping")
        rep = evaluate_mapping(prob.nest, arch, m, roots=prob.roots, capacity_limits=limits)
        if not rep.valid:
            return InnerSolve(None, None, None, None, Status.NO_SOLUTION, f"{method} found no valid mapping")
        if data.objective == "offchip":
            from dlaopt.formulations.fusion.exact import offchip_bytes

            value = offchip_bytes(arch, prob.nest, rep)
        else:
            value = rep.objective(data.objective)
        return InnerSolve(m, rep, value, None, Status.FEASIBLE)

    return run


__all__ = ["FusionProblem"]
