r"""The exact optimum of one fused group: the outer tile, and every operator's inner mapping (seed 001 Appendix A:
FLAT's co-exploration of the inter-operator tile and the intra-operator dataflows, proven here instead of searched).

For a fixed outer tile the group's cost is separable (:mod:`.cost`): every outer iteration runs the same inner nests
one after another, so energy, latency and off-chip bytes are ``n_outer * (sum_i cost_i + SFU) + constant`` with
``cost_i`` the single-layer cost of operator ``i``'s inner nest, its intermediates rooted at the staging level and
its tiles there limited to what the intermediates leave (:func:`~.cost.inner_problems`). The group optimum is
therefore

    min over outer tiles T of  n_outer(T) * (sum_i min over mappings m_i of cost_i(m_i; T) + SFU(T)) + constant(T)

and each inner minimum is the mapping MILP (:func:`~dlaopt.formulations.mapping.exact.solve_layer`, exact for the
cost model) with ``roots`` and ``capacity_limits``. Inner solves are cached by (loop nest shape, roots, limits):
tiles that give an operator the same inner problem share the solve.

Objectives: ``energy`` (pJ), ``latency`` (cycles) and ``offchip`` (main-memory bytes read and written), the last
lexicographic with latency: among the mappings of least off-chip traffic, one of least latency. Off-chip bytes of
one operator are its energy on :func:`offchip_arch` (every energy zero but main memory's, one pJ per byte), so the
energy MILP finds the least traffic; a second MILP minimises latency under the row ``traffic <= that least value``
(both lexicographic parts are additive over operators and iterations, so per-operator lexicographic optima add up
to the group's).

Pruning: a tile is skipped when its lower bound cannot beat the incumbent. The bound is the compulsory part of
every inner nest: each element of an operand chained to main memory crosses it at least once, each MAC is done
once (at most ``num_macs`` per cycle): energy ``>= n_outer * sum_i (MACs_i e_mac + sum_t bytes_t e_main)``,
latency ``>= n_outer * sum_i max(ceil(MACs_i / num_macs), compulsory main-memory time_i)``, traffic ``>= n_outer *
sum_i sum_t bytes_t`` (the SFU work and the constant terms are left out: they are non-negative).

:func:`exhaustive_group` is the reference for small cases: every outer tile times every combination of inner
mappings (:func:`~dlaopt.formulations.mapping.exhaustive.all_mappings`, those the cost model rejects on their own
left out), each combination scored by :func:`~.cost.evaluate_fused` as a whole.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlaopt.formulations.fusion.cost import FusedReport, InnerProblem, combine_fused, evaluate_fused, inner_problems
from dlaopt.formulations.fusion.group import FusedGroup, check_tile, n_outer, outer_tiles
from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import CostReport, evaluate_mapping
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.solvers.result import SolveOptions, Status

OBJECTIVES = ("latency", "energy", "offchip")
TIE_TOLERANCE = 1e-9  # relative: the off-chip row of the latency tie-break admits this much above the least traffic

InnerMapper = Callable[[InnerProblem, MappingArch, str], "InnerSolve"]


def offchip_arch(arch: MappingArch) -> MappingArch:
    """``arch`` with every energy zero except main memory's reads and writes, one pJ per byte: a mapping's energy on
    it is the bytes it moves to and from main memory (latency is unchanged)."""
    top = arch.top
    levels = []
    for j, lv in enumerate(arch.levels):
        e = 1.0 if j == top else 0.0
        stores = tuple(dataclasses.replace(s, read_energy_pj_per_byte=e, write_energy_pj_per_byte=e)
                       for s in lv.stores)
        levels.append(dataclasses.replace(lv, stores=stores, network_energy_pj_per_byte=0.0))
    changes: dict[str, Any] = {"levels": tuple(levels), "mac_energy_pj": 0.0}
    links = getattr(arch, "links", None)
    if links:
        changes["links"] = tuple(dataclasses.replace(k, energy_pj_per_byte=0.0) for k in links)
    return dataclasses.replace(arch, **changes)


def offchip_bytes(arch: MappingArch, nest: LoopNest, report: CostReport) -> float:
    """Bytes one inner nest reads from and writes to main memory (from a cost report)."""
    top = report.accesses.get(arch.levels[arch.top].name, {})
    return float(sum((a.reads + a.writes) * nest.operand(t).word_bytes for t, a in top.items()))


def _int_limits(limits: dict[tuple[int, str], float]) -> dict[tuple[int, str], int]:
    """Byte limits as integers (tiles are whole bytes: ``floor`` admits exactly the same tiles)."""
    return {k: int(math.floor(v + 1e-9)) for k, v in limits.items()}


def _key(objective: str, value: float, latency: float) -> tuple[float, float]:
    return (value, latency) if objective == "offchip" else (value, 0.0)


@dataclass
class InnerSolve:
    """One operator's inner optimum for one inner problem: its mapping, its cost report (roots and limits
    applied), the objective value, the proven bound, the status and the solver effort."""

    mapping: Mapping | None
    report: CostReport | None
    value: float | None
    bound: float | None
    status: Status
    message: str = ""
    solves: int = 0
    time_s: float = 0.0


@dataclass
class TileOutcome:
    tile: dict[str, int]
    lower_bound: float
    state: str  # solved | pruned | infeasible | unfinished
    value: float | None = None
    latency: float | None = None
    bound: float | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"tile": dict(self.tile), "lower_bound": self.lower_bound, "state": self.state, "value": self.value,
                "bound": self.bound, **({"message": self.message} if self.message else {})}


@dataclass
class GroupOptimum:
    """The best outer tile of a group and its operators' inner mappings, with the fused report, the proven bound
    and what was done per tile."""

    group: FusedGroup
    objective: str
    tile: dict[str, int] | None
    mappings: tuple[Mapping, ...]
    report: FusedReport | None
    value: float | None
    bound: float | None
    status: Status
    message: str = ""
    tiles: list[TileOutcome] = field(default_factory=list)
    inner_solves: int = 0
    cache_hits: int = 0
    time_s: float = 0.0

    @property
    def latency(self) -> float | None:
        return None if self.report is None else self.report.latency_cycles

    def stats(self) -> dict[str, Any]:
        count = {s: sum(1 for t in self.tiles if t.state == s) for s in ("solved", "pruned", "infeasible",
                                                                          "unfinished")}
        return {"tiles": len(self.tiles), **{f"tiles_{k}": v for k, v in count.items()},
                "inner_solves": self.inner_solves, "cache_hits": self.cache_hits, "time_s": round(self.time_s, 3)}


def compulsory(arch: MappingArch, prob: InnerProblem) -> tuple[float, float, float]:
    """(energy, latency, off-chip bytes) no mapping of the inner problem can go below (see the module docstring)."""
    nest = prob.nest
    top = arch.top
    main = arch.levels[top]
    reads: dict[str, float] = {}
    writes: dict[str, float] = {}
    energy = nest.macs * arch.mac_energy_pj
    traffic = 0.0
    for t in OPERANDS:
        if prob.roots.get(t, top) != top:
            continue
        store = main.store_of(t)
        assert store is not None
        b = float(nest.footprint(t, nest.sizes) * nest.operand(t).word_bytes)
        traffic += b
        if t == "O":
            writes[store.memory] = writes.get(store.memory, 0.0) + b
            energy += b * store.write_energy_pj_per_byte
        else:
            reads[store.memory] = reads.get(store.memory, 0.0) + b
            energy += b * store.read_energy_pj_per_byte
    mem = 0.0
    for s in main.stores:
        r, w = reads.get(s.memory, 0.0), writes.get(s.memory, 0.0)
        if s.write_bandwidth is None:
            mem = max(mem, (r + w) / s.read_bandwidth)
        else:
            mem = max(mem, r / s.read_bandwidth, w / s.write_bandwidth)
    compute = math.ceil(nest.macs / arch.num_macs)
    return energy, max(float(compute), mem), traffic


def tile_lower_bound(group: FusedGroup, arch: MappingArch, tile: dict[str, int], probs: Sequence[InnerProblem],
                     objective: str) -> tuple[float, float]:
    """A lower bound on (objective, latency) of ``tile`` (see the module docstring)."""
    n = n_outer(group, tile)
    parts = [compulsory(arch, p) for p in probs]
    lat = n * sum(p[1] for p in parts)
    if objective == "energy":
        return n * sum(p[0] for p in parts), lat
    if objective == "offchip":
        return n * sum(p[2] for p in parts), lat
    return lat, lat


def _energies_nonnegative(arch: MappingArch) -> bool:
    return arch.mac_energy_pj >= 0 and all(
        s.read_energy_pj_per_byte >= 0 and s.write_energy_pj_per_byte >= 0 and lv.network_energy_pj_per_byte >= 0
        for lv in arch.levels for s in lv.stores)


class GroupSolver:
    """Exact fused-group optimisation on one architecture for one objective, with a cache of inner solves shared by
    every group and tile it is asked about (see the module docstring).

    ``inner``: a replacement inner mapper (a heuristic, see :mod:`.problem`); the result is then not proven and the
    status is at best ``feasible``."""

    def __init__(self, arch: MappingArch, objective: str, *, buffering: int = 2, lanes: int | None = None,
                 sfu_energy_pj_per_op: float = 0.0, options: SolveOptions | None = None,
                 entry_time_limit: float | None = None, solver: str = "highs",
                 inner: InnerMapper | None = None, prune: bool = True) -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"unknown fusion objective '{objective}' (expected one of {OBJECTIVES})")
        self.arch, self.objective = arch, objective
        self.buffering, self.lanes, self.sfu_energy = buffering, lanes, sfu_energy_pj_per_op
        self.options = options or SolveOptions()
        self.entry_time_limit = entry_time_limit
        self.solver = solver
        self.inner_mapper = inner
        self.prune = prune and (objective != "energy" or _energies_nonnegative(arch))
        self.off_arch = offchip_arch(arch) if objective == "offchip" else None
        self.cache: dict[tuple, InnerSolve] = {}
        self.solves = 0
        self.hits = 0

    # ------------------------------------------------------------------------------------------ inner problems
    def _cache_key(self, prob: InnerProblem) -> tuple:
        return (prob.nest.shape_key(), tuple(sorted(prob.roots.items())),
                tuple(sorted(_int_limits(dict(prob.capacity_limits)).items())))

    def inner(self, prob: InnerProblem, deadline: float | None = None) -> InnerSolve:
        """The optimum of one inner problem (cached)."""
        key = self._cache_key(prob)
        if key in self.cache:
            self.hits += 1
            return self.cache[key]
        t0 = time.perf_counter()
        if self.inner_mapper is not None:
            out = self.inner_mapper(prob, self.arch, self.objective)
        else:
            out = self._exact_inner(prob, deadline)
        out.time_s = time.perf_counter() - t0
        self.solves += 1
        if out.status != Status.NO_SOLUTION or out.mapping is not None:  # a solve cut short by time is not kept
            self.cache[key] = out
        return out

    def _solve_options(self, deadline: float | None) -> SolveOptions:
        limit = self.entry_time_limit
        if self.options.time_limit is not None:
            limit = self.options.time_limit if limit is None else min(limit, self.options.time_limit)
        if deadline is not None:
            left = max(0.1, deadline - time.monotonic())
            limit = left if limit is None else min(limit, left)
        return SolveOptions(time_limit=limit, mip_rel_gap=min(self.options.mip_rel_gap, 1e-9),
                            threads=self.options.threads, seed=self.options.seed,
                            node_limit=self.options.node_limit, deterministic=self.options.deterministic,
                            extra=dict(self.options.extra))

    def _exact_inner(self, prob: InnerProblem, deadline: float | None) -> InnerSolve:
        from dlaopt.formulations.mapping.exact import solve_layer

        nest, roots, limits = prob.nest, dict(prob.roots), _int_limits(dict(prob.capacity_limits))
        if any(v < 0 for v in limits.values()):
            return InnerSolve(None, None, None, None, Status.INFEASIBLE,
                              "the intermediates leave no room at the staging memory")
        opts = self._solve_options(deadline)
        if self.objective != "offchip":
            r = solve_layer(nest, self.arch, self.objective, options=opts, solver=self.solver, roots=roots,
                            capacity_limits=limits)
            rep = None if r.mapping is None else evaluate_mapping(nest, self.arch, r.mapping, roots=roots,
                                                                  capacity_limits=limits)
            return InnerSolve(r.mapping, rep, r.objective, r.bound, r.status, r.message, r.solves)
        assert self.off_arch is not None
        r = solve_layer(nest, self.off_arch, "energy", options=opts, solver=self.solver, roots=roots,
                        capacity_limits=limits)
        if r.mapping is None or r.objective is None:
            return InnerSolve(None, None, None, r.bound, r.status, r.message, r.solves)
        best, solves, message = r.mapping, r.solves, r.message
        if r.status == Status.OPTIMAL:
            tied = _least_latency_within(nest, self.off_arch, roots, limits, r.objective, best,
                                         self._solve_options(deadline), self.solver)
            solves += tied[1]
            if tied[0] is not None:
                best = tied[0]
            else:
                message = tied[2]
        rep = evaluate_mapping(nest, self.arch, best, roots=roots, capacity_limits=limits)
        value = offchip_bytes(self.arch, nest, rep)
        return InnerSolve(best, rep, value, r.bound, r.status, message, solves)

    # ------------------------------------------------------------------------------------------ one group
    def solve(self, group: FusedGroup, staging_level: int, tiles: Sequence[dict[str, int]] | None = None, *,
              deadline: float | None = None) -> GroupOptimum:
        """The optimum of ``group`` over ``tiles`` (default: every divisor tiling), intermediates staged at level
        ``staging_level``."""
        t0 = time.perf_counter()
        solves0, hits0 = self.solves, self.hits
        obj = self.objective
        candidates = [check_tile(group, t) for t in (tiles if tiles is not None else outer_tiles(group))]
        outcomes: list[TileOutcome] = []
        staged: list[tuple[tuple[float, float], dict[str, int], tuple[InnerProblem, ...]]] = []
        for tile in candidates:
            try:
                probs = inner_problems(group, self.arch, tile, staging_level, buffering=self.buffering)
            except ValueError as exc:
                outcomes.append(TileOutcome(tile, math.inf, "infeasible", message=str(exc)))
                continue
            bad = [v for p in probs for v in p.capacity_limits.values() if v < 0]
            if bad:
                outcomes.append(TileOutcome(tile, math.inf, "infeasible", message=(
                    "the intermediate tile does not fit the staging memory")))
                continue
            staged.append((tile_lower_bound(group, self.arch, tile, probs, obj), tile, probs))
        staged.sort(key=lambda s: s[0])
        best: tuple[tuple[float, float], dict[str, int], tuple[Mapping, ...], FusedReport] | None = None
        bound = math.inf
        proven = True
        messages: list[str] = []
        for lb, tile, probs in staged:
            if self.prune and best is not None and (lb[0] > best[0][0] or (lb[0] == best[0][0] and lb[1] >= best[0][1])
                                                     if obj == "offchip" else lb[0] >= best[0][0]):
                outcomes.append(TileOutcome(tile, lb[0], "pruned"))
                continue
            if deadline is not None and time.monotonic() >= deadline:
                outcomes.append(TileOutcome(tile, lb[0], "unfinished", message="time limit reached"))
                bound = min(bound, lb[0])
                proven = False
                continue
            sols = []
            failed: InnerSolve | None = None
            for p in probs:
                s = self.inner(p, deadline)
                if s.mapping is None or s.report is None or not s.report.valid:
                    failed = s
                    break
                sols.append(s)
            if failed is not None:
                if failed.status == Status.INFEASIBLE:
                    outcomes.append(TileOutcome(tile, lb[0], "infeasible", message=failed.message or (
                        "an operator has no mapping within the room the intermediates leave")))
                else:
                    outcomes.append(TileOutcome(tile, lb[0], "unfinished", message=failed.message or
                                                failed.status.value))
                    bound = min(bound, lb[0])
                    proven = False
                continue
            rep = combine_fused(group, self.arch, tile, staging_level, [s.report for s in sols],  # type: ignore[misc]
                                buffering=self.buffering, lanes=self.lanes, sfu_energy_pj_per_op=self.sfu_energy)
            if not rep.valid:
                outcomes.append(TileOutcome(tile, lb[0], "infeasible", message="; ".join(rep.violations[:3])))
                continue
            value = rep.objective(obj)
            n = n_outer(group, tile)
            slack = n * sum(s.value - s.bound if (s.value is not None and s.bound is not None) else 0.0
                            for s in sols)
            tile_bound = value - slack
            if any(s.status != Status.OPTIMAL for s in sols):
                proven = False
                messages.extend(s.message for s in sols if s.message)
                if any(s.bound is None for s in sols):
                    tile_bound = lb[0]
            bound = min(bound, max(tile_bound, lb[0]))
            outcomes.append(TileOutcome(tile, lb[0], "solved", value, rep.latency_cycles, tile_bound))
            key = _key(obj, value, rep.latency_cycles)
            if best is None or key < best[0]:
                best = (key, tile, tuple(s.mapping for s in sols), rep)  # type: ignore[misc]
        elapsed = time.perf_counter() - t0
        common = {"tiles": outcomes, "inner_solves": self.solves - solves0, "cache_hits": self.hits - hits0,
                  "time_s": elapsed}
        if best is None:
            if proven:
                reasons = sorted({o.message for o in outcomes if o.message})
                return GroupOptimum(group, obj, None, (), None, None, None, Status.INFEASIBLE,
                                    f"group {group.name}: no outer tile fits"
                                    + (f" ({reasons[0]})" if reasons else ""), **common)
            return GroupOptimum(group, obj, None, (), None, None, None if not math.isfinite(bound) else bound,
                                Status.NO_SOLUTION, "; ".join(dict.fromkeys(messages)) or "time limit reached",
                                **common)
        value = best[0][0]
        bound = min(bound, value)
        status = Status.OPTIMAL if proven and self.inner_mapper is None else Status.FEASIBLE
        return GroupOptimum(group, obj, best[1], best[2], best[3], value, bound if self.inner_mapper is None else None,
                            status, "; ".join(dict.fromkeys(messages)), **common)


def _least_latency_within(nest: LoopNest, off_arch: MappingArch, roots: dict[str, int],
                          limits: dict[tuple[int, str], int], traffic: float, warm: Mapping, options: SolveOptions,
                          solver: str) -> tuple[Mapping | None, int, str]:
    """Among the mappings whose main-memory traffic is at most ``traffic``, one of least latency: the latency MILP
    with the row ``energy on off_arch <= traffic`` (its energy terms are upper bounds of the true counts, exact at
    integer points, so the row admits every such mapping and no other). Returns (mapping or ``None``, solves,
    message); the mapping is checked against the cost model."""
    from dlaopt.formulations.mapping.exact import _options, _over_capacity, _unscaled
    from dlaopt.formulations.mapping.milp import MappingMilp
    from dlaopt.solvers.backends import solve_linear

    def check(m: Mapping) -> tuple[float, float] | None:
        r = evaluate_mapping(nest, off_arch, m, roots=roots, capacity_limits=limits)
        return (r.energy_pj, r.latency_cycles) if r.valid else None

    w = check(warm)
    if w is None:
        return None, 0, "the least-traffic mapping is rejected by the cost model"
    cap = traffic * (1 + TIE_TOLERANCE) + 1e-9
    mlimits = dict(limits)
    solves = 0
    while solves < 5:
        mm = MappingMilp(nest, off_arch, "latency", cap=w[1], energy_cap=cap, capacity_limits=mlimits, roots=roots)
        if mm.infeasible is not None:
            return None, solves, mm.infeasible
        row = {k: v / mm.energy_scale for k, v in mm.energy_expr.items()}
        mm._row(row, hi=(cap - mm.energy_const) / mm.energy_scale)
        model = mm.build()
        x0 = mm.encode(warm)
        if model.max_violation(x0) > 1e-6:
            x0 = None
        br = _unscaled(solve_linear(model, solver, _options(options, options.time_limit, x0)), mm.objective_scale)
        solves += 1
        if br.x is None:
            return None, solves, f"latency tie-break: {br.status.value} {br.message}".strip()
        m = mm.decode(br.x)
        got = check(m)
        if got is None:  # a capacity row held only within tolerance: tighten that store and solve again
            over = _over_capacity(nest, off_arch, m, roots, mlimits)
            if not over:
                return None, solves, "latency tie-break: the decoded mapping is rejected by the cost model"
            for key, used in over.items():
                mlimits[key] = min(mlimits.get(key, used), used - 1)
            continue
        if got[0] > traffic * (1 + TIE_TOLERANCE) or got[1] > w[1] * (1 + 1e-12):
            return warm, solves, ""
        if br.status != Status.OPTIMAL:
            return m, solves, f"latency tie-break not proven ({br.status.value})"
        return m, solves, ""
    return None, solves, "latency tie-break: capacity rows not settled"


def solve_group(group: FusedGroup, arch: MappingArch, objective: str, staging_level: int, *,
                tiles: Sequence[dict[str, int]] | None = None, buffering: int = 2, lanes: int | None = None,
                sfu_energy_pj_per_op: float = 0.0, options: SolveOptions | None = None,
                entry_time_limit: float | None = None, solver: str = "highs") -> GroupOptimum:
    """The exact optimum of one group (a fresh :class:`GroupSolver`; see the module docstring)."""
    gs = GroupSolver(arch, objective, buffering=buffering, lanes=lanes, sfu_energy_pj_per_op=sfu_energy_pj_per_op,
                     options=options, entry_time_limit=entry_time_limit, solver=solver)
    deadline = None if options is None or options.time_limit is None else time.monotonic() + options.time_limit
    return gs.solve(group, staging_level, tiles, deadline=deadline)


def _report_key(r: CostReport) -> tuple:
    """Everything of a single-operator report the fused model reads: mappings with equal keys are interchangeable
    in :func:`~.cost.combine_fused` (one of them stands for all in the enumeration)."""
    acc = tuple(sorted((lv, t, a.reads, a.writes, getattr(a, "network", 0), getattr(a, "link", 0))
                       for lv, per in r.accesses.items() for t, a in per.items()))
    tiles = tuple(sorted((lv, t, b) for lv, per in r.tile_bytes.items() for t, b in per.items()))
    return (r.energy_pj, r.latency_cycles, r.macs, tuple(sorted(r.memory_cycles.items())), acc, tiles)


class SpaceTooLarge(Exception):
    """More combinations of inner mappings than the enumeration limit."""


def exhaustive_group(group: FusedGroup, arch: MappingArch, objective: str, staging_level: int, *,
                     tiles: Sequence[dict[str, int]] | None = None, buffering: int = 2, lanes: int | None = None,
                     sfu_energy_pj_per_op: float = 0.0, limit: int = 200_000) -> GroupOptimum:
    """Every outer tile x every combination of the operators' inner mappings, each scored by
    :func:`~.cost.evaluate_fused` as a whole; the least (objective, then latency for ``offchip``). Before the
    product, each operator's mappings the single-layer cost model rejects on their own (with the tile's roots and
    limits) are left out, and mappings with identical single-operator reports (:func:`_report_key`: what the fused
    model reads of them) are enumerated once. Raises :class:`SpaceTooLarge` past ``limit`` combinations for one
    tile."""
    from dlaopt.formulations.mapping.exhaustive import all_mappings

    if objective not in OBJECTIVES:
        raise ValueError(f"unknown fusion objective '{objective}'")
    t0 = time.perf_counter()
    best: tuple[tuple[float, float], dict[str, int], tuple[Mapping, ...], FusedReport] | None = None
    outcomes: list[TileOutcome] = []
    for tile in [check_tile(group, t) for t in (tiles if tiles is not None else outer_tiles(group))]:
        try:
            probs = inner_problems(group, arch, tile, staging_level, buffering=buffering)
        except ValueError as exc:
            outcomes.append(TileOutcome(tile, math.inf, "infeasible", message=str(exc)))
            continue
        per_op: list[list[tuple[Mapping, CostReport]]] = []
        for p in probs:
            ok: dict[tuple, tuple[Mapping, CostReport]] = {}
            for m in all_mappings(p.nest, arch):
                r = evaluate_mapping(p.nest, arch, m, roots=p.roots, capacity_limits=p.capacity_limits)
                if r.valid:
                    ok.setdefault(_report_key(r), (m, r))
            per_op.append(list(ok.values()))
        if math.prod(len(x) for x in per_op) > limit:
            raise SpaceTooLarge(f"group {group.name}, tile {tile}: more than {limit} combinations")
        tile_best: tuple[float, float] | None = None
        for combo in itertools.product(*per_op):
            # evaluate_fused(mappings) is combine_fused of the mappings' own reports: computed once per mapping
            rep = combine_fused(group, arch, tile, staging_level, [r for _, r in combo], buffering=buffering,
                                lanes=lanes, sfu_energy_pj_per_op=sfu_energy_pj_per_op)
            if not rep.valid:
                continue
            key = _key(objective, rep.objective(objective), rep.latency_cycles)
            if tile_best is None or key < tile_best:
                tile_best = key
            if best is None or key < best[0]:
                best = (key, tile, tuple(m for m, _ in combo), rep)
        outcomes.append(TileOutcome(tile, 0.0, "solved" if tile_best else "infeasible",
                                    None if tile_best is None else tile_best[0]))
    elapsed = time.perf_counter() - t0
    if best is None:
        return GroupOptimum(group, objective, None, (), None, None, None, Status.INFEASIBLE,
                            f"group {group.name}: no outer tile fits", outcomes, time_s=elapsed)
    rep = evaluate_fused(group, arch, best[1], staging_level, best[2], buffering=buffering, lanes=lanes,
                         sfu_energy_pj_per_op=sfu_energy_pj_per_op)
    best = (best[0], best[1], best[2], rep)
    return GroupOptimum(group, objective, best[1], best[2], best[3], best[0][0], best[0][0], Status.OPTIMAL, "",
                        outcomes, time_s=elapsed)


__all__ = ["OBJECTIVES", "GroupOptimum", "GroupSolver", "InnerSolve", "SpaceTooLarge", "TileOutcome", "compulsory",
           "exhaustive_group", "offchip_arch", "offchip_bytes", "solve_group", "tile_lower_bound"]
