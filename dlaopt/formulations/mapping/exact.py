"""The exact method for one layer: the MILP of :mod:`.milp` warm-started from the best heuristic mapping, with the
incumbent's value cutting the counts' value tables; EDP as a walk along the energy/latency Pareto front.

EDP (``energy x latency``) is not linear in the counts. Write ``E(c)`` for the least energy of any mapping with
latency ``<= c`` (an energy MILP under a latency cap). Every mapping with latency in ``(a, b]`` has EDP
``>= E(b) * a``. The driver keeps the caps it has solved, ``L_min = c0 < c1 < ... < cn`` (``L_min`` from a latency
MILP, ``cn`` the latency of the least-energy mapping: anything slower is dominated by it), and repeatedly bisects
(geometrically) the interval with the least such bound, offering every mapping found as an incumbent; a solved cap
whose mapping has latency ``l < c`` also closes ``(l, c]``. It stops when no interval's bound is below the best EDP
(within the gap): the best EDP is then optimal. Intervals narrower than ``LATENCY_STEP`` (relative) are closed
as they stand, so the proven bound carries that factor. When the least-energy solve is cut short, mappings slower
than the one it found keep its energy bound (an interval up to ``best / E_min``), so a walk cut short never claims
more than it proved.

Levers (``options.exact_tuning``, :data:`dlaopt.specs.mapping.EXACT_LEVERS`; all off is the walk above):
``near_first`` solves ``E(c)`` at ``c = L_min (1 + NEAR_STEP)`` first (with at most ``NEAR_SHARE`` of the time
left): fast, frugal mappings lie there, and the EDP of the one it finds cuts the value tables of the least-energy
MILP after it (``energy_cap = best / L_min``); ``tight_top`` bisects an interval only up to ``best / E_min`` (nothing
slower beats the best: the walk is bounded from both sides) and lets a cap's energy bound also bound every smaller
cap (``E`` is non-increasing). ``ga_race`` belongs to the per-layer driver
(:func:`dlaopt.formulations.mapping.layers.run_layer_exact`): a GA racing in another process, whose mapping the
walk takes through ``incumbents`` (polled before each MILP solve) as soon as it is in.

Power (``energy / latency``, pJ per cycle; seed 001 §4.4.5's second stage) shares the walk's driver
(:class:`WalkGoal`), under a latency cap ``C`` it needs (without one the least power is the slowest mapping's, a
question the caps cannot bound): every mapping with latency in ``(a, b]`` has power ``>= E(b) / b``, the walk's upper
end is ``C`` itself (nothing is dominated by the least-energy mapping's latency: a slower mapping may draw less
power) and the first point is ``(C, E(C))``. That point already bounds everything: for ``b <= C``, ``E(b) >= E(C)``
so ``E(b) / b >= E(C) / C``, and bisecting an interval keeps its bound in its upper half. No cap helps after it: the
walk stops at its first point, proven optimal when a mapping found (the least-energy mapping under ``C``, the warm
starts, the near cap's) draws at most ``E(C) / C`` within the gap, and otherwise reports that bound (``FEASIBLE``).
Energy MILPs give no lower bound on a mapping's latency beyond its compute cycles, so a slow, frugal mapping's power
cannot be bounded any closer this way.

A :class:`~dlaopt.formulations.mapping.space.LayerSpace` (the user's constraints on the layer, for the one
architecture given) is enforced inside the MILP; warm starts outside it are dropped (neither hints nor caps), and a
space no mapping satisfies ends ``INFEASIBLE``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from typing import Any

from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch
from dlaopt.formulations.mapping.cost import Figures, evaluate_mapping
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.milp import UTILIZATION_TOLERANCE, MappingMilp, effective_capacity, restricts
from dlaopt.formulations.mapping.space import LayerSpace
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.result import BackendResult, SolveOptions, Status, TracePoint, relative_gap

# HiGHS' default feasibility tolerances are kept: tightening them to 1e-9 makes its LPs on these models (secant
# slopes up to ~1e9) numerically unreliable (measured: wrong "optimal" answers). A capacity row satisfied only within
# tolerance is caught when the decoded mapping is evaluated and the row is tightened (see solve_single).
HIGHS_TOLERANCES: dict[str, float] = {}
# EDP: latency intervals narrower than this (relative) are not bisected further (well above the solvers' feasibility
# tolerance on the latency cap)
LATENCY_STEP = 1e-6
MAX_CAPACITY_RESOLVES = 5
# EDP, lever near_first: the first latency cap lies this far (relative) above the least latency. Not closer: the
# solver's presolve is unreliable on caps within ~1e-6 of a latency it must reach (measured: wrong "optimal"), and the
# energy MILP grows slower as the cap nears the least latency (x3 at 1e-4 against 1e-3 on ResNet-50's conv2)
NEAR_STEP = 0.01
# ... and it gets at most this share of the time left: the least-energy solve after it bounds every latency
NEAR_SHARE = 0.5
# without an incumbent, the counts' value tables are cut at this multiple of a lower bound of the objective (a guessed
# cap: exact whenever the optimum lies below it; otherwise the mapping found becomes the incumbent and caps a re-solve)
CAP_GUESS = 4.0
# the MILP's value of its solution and the cost model's must agree to this (relative): the secant rows hold within the
# solver's feasibility tolerance (1e-7 on counts scaled to at most 1), which sums to ~1e-6 of the objective
MODEL_TOLERANCE = 1e-5
BROKEN_SPACE = "the MILP's mapping breaks the constraints"
RootsArg = MappingABC[str, int] | None  # operand -> the level its chain ends at (see the cost model)
LimitsArg = MappingABC[tuple[int, str], float] | None  # (level, memory) -> bytes the tiles may use there
Incumbents = Callable[[], Sequence[Mapping]]  # mappings found elsewhere meanwhile (polled between sub-solves)


def _unscaled(br: BackendResult, scale: float) -> BackendResult:
    """The backend result in the objective's own units (the model is scaled by ``scale``)."""
    return dataclasses.replace(
        br, objective=None if br.objective is None else br.objective * scale,
        bound=None if br.bound is None else br.bound * scale,
        trace=[dataclasses.replace(p, incumbent=None if p.incumbent is None else p.incumbent * scale,
                                   bound=None if p.bound is None else p.bound * scale) for p in br.trace])


def _over_capacity(nest: LoopNest, arch: MappingArch, m: Mapping, roots: RootsArg = None,
                   capacity_limits: LimitsArg = None) -> dict[tuple[int, str], int]:
    """Stores whose tiles exceed their capacity (or limit) under ``m``: (level, memory) -> bytes used (an operand's
    tile at or above its root is not counted)."""
    r = evaluate_mapping(nest, arch, m, check_capacity=False, roots=roots, capacity_limits=capacity_limits)
    top = {t: (roots or {}).get(t, arch.top) for t in "IWO"}
    out: dict[tuple[int, str], int] = {}
    for j, lv in enumerate(arch.levels[:-1]):
        for store in lv.stores:
            cap = effective_capacity(j, store, capacity_limits)
            if cap is None:
                continue
            used = sum(r.tile_bytes.get(lv.name, {}).get(t, 0) for t in store.operands if j < top[t])
            if used > cap:
                out[j, store.memory] = used
    return out


@dataclass
class LayerExact:
    mapping: Mapping | None
    objective: float | None  # evaluator value of ``mapping``
    model_objective: float | None  # the MILP's value for it (>= objective; equal at a proven optimum)
    bound: float | None
    status: Status
    time_s: float
    solves: int = 0
    message: str = ""
    model_stats: dict[str, int] = field(default_factory=dict)
    trace: list[TracePoint] = field(default_factory=list)

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)


def _options(options: SolveOptions, time_left: float | None, warm: Any = None) -> SolveOptions:
    extra = dict(options.extra)
    extra["highs"] = {**HIGHS_TOLERANCES, **dict(extra.get("highs", {}))}
    return SolveOptions(time_limit=time_left, mip_rel_gap=options.mip_rel_gap, threads=options.threads,
                        seed=options.seed, node_limit=options.node_limit, deterministic=options.deterministic,
                        verbose=options.verbose, warm_start=warm, extra=extra)


def outside_space(nest: LoopNest, arch: MappingArch, space: LayerSpace | None, m: Mapping) -> list[str]:
    """How ``m`` breaks ``space`` (empty if it keeps it): the exact method's own check, on warm starts and on the
    mappings it decodes."""
    if not restricts(space):
        return []
    assert space is not None
    slots = arch.slots()
    out: list[str] = []
    for b in space.factor_bounds:
        v = math.prod(m.factors[b.dim][k] for k in b.slots) if b.dim in m.factors else 1
        if v < b.lo or (b.hi is not None and v > b.hi):
            out.append(f"{b.source}: {b.dim} has {v} on slots {list(b.slots)}")
    for a in space.spatial:
        used = [d for d, fs in m.factors.items() if fs[a.slot] > 1]
        if a.dims is not None and set(used) - a.dims:
            out.append(f"{a.source}: {sorted(set(used) - a.dims)} unrolled on {slots[a.slot].name}")
        total = math.prod(fs[a.slot] for fs in m.factors.values())
        if a.max_used is not None and total > a.max_used:
            out.append(f"{a.source}: {total} used on {slots[a.slot].name}")
    for ch in space.orders:
        k = arch.temporal_slot(ch.level)
        live = [d for d in m.orders[ch.level] if m.factors[d][k] > 1 and d in ch.chain]
        if live != [d for d in dict.fromkeys(ch.chain) if d in live]:
            out.append(f"{ch.source}: level {ch.level} orders {live}")
    if space.min_utilization:
        used = math.prod(fs[k] for fs in m.factors.values() for k, s in enumerate(slots) if s.kind == SPATIAL)
        u = used * nest.real_macs / (nest.macs * space.macs_available)
        if u < space.min_utilization * (1 - UTILIZATION_TOLERANCE):
            out.append(f"{space.utilization_source}: utilization {u:.4g}")
    return out


def figure(r: Figures, objective: str) -> float:
    """``objective`` of a cost report: energy, latency, edp, or power (``energy / latency``, pJ per cycle; times
    the clock in GHz it is mW)."""
    if objective == "power":
        return r.energy_pj / r.latency_cycles
    return r.objective(objective)


def _value(nest: LoopNest, arch: MappingArch, m: Mapping | None, objective: str, roots: RootsArg = None,
           capacity_limits: LimitsArg = None) -> float | None:
    if m is None:
        return None
    r = evaluate_mapping(nest, arch, m, roots=roots, capacity_limits=capacity_limits)
    return figure(r, objective) if r.valid else None


def solve_single(nest: LoopNest, arch: MappingArch, objective: str, *, warm: Mapping | None,
                 options: SolveOptions, solver: str = "highs", latency_limit: float | None = None,
                 energy_cap: float | None = None, space: LayerSpace | None = None, roots: RootsArg = None,
                 capacity_limits: LimitsArg = None) -> LayerExact:
    """Minimise energy or latency with one MILP (optionally under a latency cap), within ``space``; ``roots`` and
    ``capacity_limits`` as in :func:`~dlaopt.formulations.mapping.cost.evaluate_mapping`."""
    t0 = time.perf_counter()

    def value(m: Mapping | None, obj: str) -> float | None:
        return _value(nest, arch, m, obj, roots, capacity_limits)

    if warm is not None and outside_space(nest, arch, space, warm):
        warm = None
    warm_value = value(warm, objective)
    if warm is not None and latency_limit is not None:
        lat = value(warm, "latency")
        if lat is None or lat > latency_limit:
            warm, warm_value = None, None
    limits: dict[tuple[int, str], float] = dict(capacity_limits or {})
    solves = 0
    while True:
        mm = MappingMilp(nest, arch, objective, cap=warm_value, latency_limit=latency_limit, energy_cap=energy_cap,
                         capacity_limits=limits, space=space, roots=roots,
                         cap_guess=CAP_GUESS if warm_value is None else None)
        if mm.infeasible is not None:
            return LayerExact(None, None, None, None, Status.INFEASIBLE, time.perf_counter() - t0, solves,
                              mm.infeasible)
        model = mm.build()
        x0 = None
        if warm is not None:
            x0 = mm.encode(warm)
            if model.max_violation(x0) > 1e-6:
                x0 = None
        left = None if options.time_limit is None else max(0.1, options.time_limit - (time.perf_counter() - t0))
        br = solve_linear(model, solver, _options(options, left, x0))
        br = _unscaled(br, mm.objective_scale)
        solves += 1
        out = LayerExact(None, None, None, br.bound, br.status, 0.0, solves, br.message, model.stats(),
                         list(br.trace))
        if br.x is None:
            break
        m = mm.decode(br.x)
        over = _over_capacity(nest, arch, m, roots, limits)
        if over and solves < MAX_CAPACITY_RESOLVES:
            # a capacity row held only within the solver's tolerance: exclude that usage and solve again
            for key, used in over.items():
                limits[key] = min(limits.get(key, used), used - 1)
            continue
        if mm.cap_guessed and br.objective is not None and br.objective > mm.cap * (1 + 1e-9):
            # the optimum lies above the guessed cap, where the model may claim less than the counts: the mapping
            # found is an incumbent, whose value caps the tables of the next solve (the next solve is proven)
            found = value(m, objective)
            if found is not None and (latency_limit is None or (value(m, "latency") or math.inf) <= latency_limit):
                warm, warm_value = m, found
                continue
            if out.status == Status.OPTIMAL:  # not proven: the model may claim less than the counts above the cap
                out.status, out.bound = Status.FEASIBLE, None
        out.mapping, out.model_objective = m, br.objective
        out.objective = value(m, objective)
        if out.objective is None:
            out.status, out.message = Status.ERROR, "the decoded mapping is rejected by the cost model"
        elif broken := outside_space(nest, arch, space, m):  # never returned: the model is wrong
            out.mapping, out.objective, out.model_objective, out.bound = None, None, None, None
            out.status, out.message = Status.ERROR, f"{BROKEN_SPACE}: {broken}"
            out.time_s = time.perf_counter() - t0
            return out
        break
    if out.objective is not None and out.model_objective is not None:
        tol = MODEL_TOLERANCE * max(1.0, abs(out.objective))
        within_cap = warm_value is None or out.objective <= warm_value * (1 + 1e-9)
        if within_cap and (out.objective > out.model_objective + tol or (
                out.status == Status.OPTIMAL and abs(out.objective - out.model_objective) > tol)):
            out.status = Status.ERROR
            out.message = (f"model/cost-model mismatch on layer {nest.name}: the MILP values its optimum at "
                           f"{out.model_objective}, the cost model at {out.objective}")
            return out
    if warm is not None and warm_value is not None and (out.objective is None or warm_value < out.objective):
        out.mapping, out.objective, out.model_objective = warm, warm_value, None
        if out.status == Status.NO_SOLUTION:
            out.status = Status.FEASIBLE
    if out.bound is not None and out.objective is not None:
        out.bound = min(out.bound, out.objective)
    out.time_s = time.perf_counter() - t0
    return out


def solve_layer(nest: LoopNest, arch: MappingArch, objective: str, *, warm: list[Mapping] | None = None,
                options: SolveOptions | None = None, solver: str = "highs", max_solves: int = 500,
                space: LayerSpace | None = None, roots: RootsArg = None,
                capacity_limits: LimitsArg = None, tuning: MappingABC[str, bool] | None = None,
                incumbents: Incumbents | None = None, latency_limit: float | None = None) -> LayerExact:
    """The optimum of one layer for ``objective`` (energy, latency, edp, or power: ``energy / latency`` in pJ per
    cycle) on ``arch``, among the mappings that keep ``space`` (its factor bounds, spatial allowances, order chains
    and minimum utilization; its ``archs`` are the caller's business) and, with ``latency_limit``, whose latency is
    at most it (power needs one: ValueError without). Warm starts outside the space or over the limit are ignored.
    ``roots`` (operand -> the level its chain ends at) and ``capacity_limits`` ((level, memory) -> bytes) are the
    cost model's (:func:`~dlaopt.formulations.mapping.cost.evaluate_mapping`). ``tuning``: the walk's levers
    (:data:`dlaopt.specs.mapping.EXACT_LEVERS`; a lever missing is off, so ``None`` is the walk without any).
    ``incumbents``: polled by the walk (edp, power) before each of its MILP solves; the mappings it returns (e.g. a
    heuristic racing in another process) are offered as incumbents (those invalid, outside ``space`` or over the
    limit are ignored) and so cut the value tables of the solves after them and end the walk sooner. The caller
    offers them after the solve as well (energy and latency make a single solve, which does not poll)."""
    options = options or SolveOptions()
    if objective not in ("energy", "latency", "edp", "power"):
        raise ValueError(f"unknown mapping objective '{objective}'")
    if objective == "power" and latency_limit is None:
        raise ValueError("power needs a latency limit: without one the least power is that of the slowest mapping, "
                         "which latency caps cannot bound")

    def fits(m: Mapping) -> bool:
        if _value(nest, arch, m, objective, roots, capacity_limits) is None or outside_space(nest, arch, space, m):
            return False
        return latency_limit is None or (_value(nest, arch, m, "latency", roots, capacity_limits)
                                         or math.inf) <= latency_limit
    warm = [m for m in (warm or []) if fits(m)]
    best_warm = min(warm, key=lambda m: _value(nest, arch, m, objective, roots, capacity_limits)) if warm else None  # type: ignore[arg-type,return-value]
    if objective in ("energy", "latency"):
        return solve_single(nest, arch, objective, warm=best_warm, options=options, solver=solver, space=space,
                            roots=roots, capacity_limits=capacity_limits, latency_limit=latency_limit)
    return _walk(WALK_GOALS[objective], nest, arch, warm, options, solver, max_solves, space, roots, capacity_limits,
                 tuning, incumbents, latency_limit)


@dataclass(frozen=True)
class WalkGoal:
    """What the walk over latency caps minimises, and what it may conclude about an interval of latencies
    ``(lo, hi]`` whose least energy is at least ``e`` (see the module docstring).

    ``name``: the objective the incumbents are valued by. ``interval``: the least value any mapping with latency in
    ``(lo, hi]`` may have (EDP ``e * lo``; power ``e / hi``). ``cut``: the energy above which no mapping under latency
    cap ``cap`` beats the incumbent ``best``, given the least latency ``l_min`` (EDP ``best / l_min``; power ``best *
    cap``). ``slower_dominated``: a mapping slower than the least-energy one is worse (EDP), so the walk ends at that
    mapping's latency once its energy is proven; otherwise the walk ends at the latency cap. ``bisects``: bisecting an
    interval can raise its bound (EDP: the lower half's ``lo`` rises; power: the upper half keeps ``e / hi``, so a
    walk that bisects cannot prove more than its first point)."""

    name: str
    interval: Callable[[float, float, float], float]
    cut: Callable[[float, float, float | None], float | None]
    slower_dominated: bool
    bisects: bool


EDP_GOAL = WalkGoal("edp", lambda e, lo, hi: e * lo, lambda best, l_min, cap: best / l_min, True, True)
POWER_GOAL = WalkGoal("power", lambda e, lo, hi: e / hi,
                      lambda best, l_min, cap: None if cap is None else best * cap, False, False)
WALK_GOALS: dict[str, WalkGoal] = {"edp": EDP_GOAL, "power": POWER_GOAL}


def _walk(goal: WalkGoal, nest: LoopNest, arch: MappingArch, warm: list[Mapping], options: SolveOptions, solver: str,
          max_solves: int, space: LayerSpace | None = None, roots: RootsArg = None,
          capacity_limits: LimitsArg = None, tuning: MappingABC[str, bool] | None = None,
          incumbents: Incumbents | None = None, cap: float | None = None) -> LayerExact:
    """``goal`` (EDP or power) by bisection over latency caps, under latency cap ``cap`` if given (see the module
    docstring); ``tuning`` switches the levers on."""
    t0 = time.perf_counter()
    lever = dict(tuning or {})
    near_first, tight_top = lever.get("near_first", False), lever.get("tight_top", False)

    def value(m: Mapping | None, objective: str) -> float | None:
        return _value(nest, arch, m, objective, roots, capacity_limits)

    def left() -> float | None:
        return None if options.time_limit is None else options.time_limit - (time.perf_counter() - t0)

    best_m: Mapping | None = None
    best = math.inf

    def offer(m: Mapping | None) -> None:
        nonlocal best_m, best
        v = value(m, goal.name)
        if v is not None and v < best and (cap is None or (value(m, "latency") or math.inf) <= cap):
            best_m, best = m, v

    def take() -> None:
        """Offer the mappings ``incumbents`` hands over now (valid ones within the space)."""
        if incumbents is None:
            return
        for m in incumbents():
            if not outside_space(nest, arch, space, m):
                offer(m)

    failure = ""

    def note(sub: LayerExact) -> None:
        nonlocal failure
        if sub.status == Status.ERROR and sub.message.startswith(BROKEN_SPACE):
            failure = failure or sub.message

    for m in warm:
        offer(m)
    trace: list[TracePoint] = []
    solves = 0

    def energy_under(sub_cap: float | None, share: float = 1.0) -> LayerExact:
        """The energy MILP under latency cap ``sub_cap``, warm-started from the best mapping within it, its energy
        tables cut where the goal could no longer beat the best; within ``share`` of the time left."""
        nonlocal solves
        take()
        fitting = [m for m in ([best_m] if best_m is not None else []) + warm
                   if sub_cap is None or (value(m, "latency") or math.inf) <= sub_cap]
        tl = left()
        sub = solve_single(nest, arch, "energy", warm=fitting[0] if fitting else None,
                           options=_with_time(options, None if tl is None else tl * share), solver=solver,
                           latency_limit=sub_cap,
                           energy_cap=goal.cut(best, l_lb, sub_cap) if math.isfinite(best) else None, space=space,
                           roots=roots, capacity_limits=capacity_limits)
        solves += sub.solves
        note(sub)
        offer(sub.mapping)
        return sub

    take()
    lat_warm = min(warm, key=lambda m: value(m, "latency")) if warm else None  # type: ignore[arg-type,return-value]
    lmin = solve_single(nest, arch, "latency", warm=lat_warm, options=options, solver=solver, space=space,
                        roots=roots, capacity_limits=capacity_limits)
    solves += lmin.solves
    note(lmin)
    if lmin.status == Status.INFEASIBLE and best_m is None:
        return LayerExact(None, None, None, None, Status.INFEASIBLE, time.perf_counter() - t0, solves,
                          lmin.message or "no mapping satisfies the constraints")
    if cap is not None and lmin.bound is not None and lmin.bound > cap and best_m is None:
        return LayerExact(None, None, None, None, Status.INFEASIBLE, time.perf_counter() - t0, solves,
                          f"no mapping is as fast as the latency cap {cap:g} (least latency >= {lmin.bound:g})")
    if lmin.mapping is None or lmin.bound is None or not 0 < lmin.bound < math.inf:  # no (positive) bound yet
        return LayerExact(best_m, best if best_m else None, None, None,
                          Status.NO_SOLUTION if best_m is None else Status.FEASIBLE, time.perf_counter() - t0, solves,
                          "no mapping found for the least latency")
    offer(lmin.mapping)
    l_lb = lmin.bound  # no mapping is faster
    # near_first: a first cap just above the least latency (below the latency cap), solved before the least energy
    # (whose tables the value of the mapping it finds then cuts)
    near_cap = l_lb * (1 + NEAR_STEP) if near_first and (cap is None or l_lb * (1 + NEAR_STEP) < cap) else None
    near = energy_under(near_cap, NEAR_SHARE) if near_cap is not None else None
    top = energy_under(cap)  # the least energy at any latency (within the cap)
    if top.mapping is None or top.bound is None:
        return LayerExact(best_m, best, None, None, Status.FEASIBLE, time.perf_counter() - t0, solves,
                          "no mapping found for the least energy")
    # points (cap, e): every mapping with latency <= cap has energy >= e; interval (c[i-1], c[i]] is bounded by
    # goal.interval(e[i], c[i-1], c[i]). EDP: mappings slower than the least-energy mapping are dominated by it.
    l_top = value(top.mapping, "latency")
    assert l_top is not None
    e_min = top.bound  # no mapping (within the cap) uses less energy
    # the walk's upper end: the least-energy mapping's latency when it dominates everything slower, else the cap
    # (EDP without a cap: when the least energy is not proven, mappings slower than the one found are not dominated
    # by it; they keep the energy bound, and nothing slower than best / e_min beats the best (bisected up to there))
    end = l_top if goal.slower_dominated and top.status == Status.OPTIMAL else (math.inf if cap is None else cap)
    points: list[tuple[float, float]] = [(l_top, top.bound)]
    if end > l_top:
        points.append((end, e_min))
    status, message = Status.OPTIMAL, ""
    exact_points = top.status == Status.OPTIMAL
    if near is not None and near_cap is not None and near_cap < end:
        found: list[tuple[float, float]] = []
        if near.status == Status.INFEASIBLE or (near.mapping is None and near.status == Status.OPTIMAL):
            found.append((near_cap, math.inf))
        elif near.bound is not None:
            exact_points = exact_points and near.status == Status.OPTIMAL
            found.append((near_cap, near.bound))
            l_near = value(near.mapping, "latency") if near.mapping is not None else None
            if l_near is not None and l_near < near_cap and near.status == Status.OPTIMAL:
                found.append((l_near, near.bound))
        points = sorted(points + found)

    closed: set[tuple[float, float]] = set()  # points that close their interval at the best (no energy bound)

    def interval_bounds() -> list[float]:
        lows = [l_lb] + [c for c, _ in points[:-1]]
        out = []
        floor_e = 0.0  # tight_top: a cap's energy bound holds below every larger cap too (a closed mark does not)
        for (c, e), lo in reversed(list(zip(points, lows, strict=True))):
            if not tight_top:
                out.append(goal.interval(e, lo, c))
            elif (c, e) in closed:
                out.append(goal.interval(max(floor_e, e), lo, c))
            else:
                floor_e = max(floor_e, e)
                out.append(goal.interval(floor_e, lo, c))
        return out[::-1]

    while True:
        take()
        lows = [l_lb] + [c for c, _ in points[:-1]]
        bounds = interval_bounds()
        i = min(range(len(points)), key=lambda j: bounds[j])
        lower = min(bounds[i], best)
        trace.append(TracePoint(time.perf_counter() - t0, best, lower))
        if bounds[i] >= best * (1 - options.mip_rel_gap):
            break
        if not goal.bisects:
            status, message = Status.FEASIBLE, (f"no mapping found reaches the {goal.name} bound of the least energy "
                                                "under the latency cap (latency caps bound it no closer)")
            break
        lo, (hi, _) = lows[i], points[i]
        if tight_top or math.isinf(hi):
            hi = min(hi, best / e_min if e_min > 0 else math.inf)
        if math.isinf(hi):
            status, message = Status.FEASIBLE, "no energy bound above the least latency"
            break
        if hi <= lo * (1 + LATENCY_STEP):
            # an interval this narrow holds nothing better than LATENCY_STEP below its cap's mapping: close it
            points[i] = (points[i][0], best / lo if lo > 0 else math.inf)
            closed.add(points[i])
            continue
        tl = left()
        if (tl is not None and tl <= 0.05) or solves >= max_solves:
            status = Status.FEASIBLE
            message = "time limit reached" if solves < max_solves else f"stopped after {solves} MILP solves"
            break
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 2
        sub = energy_under(mid)
        if sub.status == Status.INFEASIBLE or (sub.mapping is None and sub.status == Status.OPTIMAL):
            points.insert(i, (mid, math.inf))  # nothing is that fast
            continue
        if sub.bound is None:
            status, message = Status.FEASIBLE, f"energy model under a latency cap: {sub.status.value}"
            break
        exact_points = exact_points and sub.status == Status.OPTIMAL
        new = [(mid, sub.bound)]
        l_sub = value(sub.mapping, "latency") if sub.mapping is not None else None
        if l_sub is not None and l_sub < mid and sub.status == Status.OPTIMAL:
            new.insert(0, (l_sub, sub.bound))  # (l_sub, mid] holds nothing better than that mapping
        points[i:i] = new
    bound: float | None = min(min(interval_bounds()), best) * (1 - LATENCY_STEP)
    if bound is not None and not math.isfinite(bound):  # a sub-solve cut short before any bound
        bound = None
    if not exact_points and status == Status.OPTIMAL:
        message = "some energy bounds within the MILP gap"
    if failure:
        status, message = Status.ERROR, failure
    return LayerExact(best_m, best if best_m is not None else None, None, bound, status, time.perf_counter() - t0,
                      solves, message, {}, trace)


def _with_time(options: SolveOptions, t: float | None) -> SolveOptions:
    o = _options(options, t)
    o.extra = options.extra
    return o


__all__ = ["EDP_GOAL", "HIGHS_TOLERANCES", "POWER_GOAL", "WALK_GOALS", "LayerExact", "WalkGoal", "figure",
           "outside_space", "solve_layer", "solve_single"]
