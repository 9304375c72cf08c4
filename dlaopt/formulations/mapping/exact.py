"""The exact method for one layer: the MILP of :mod:`.milp` warm-started from the best heuristic mapping, with the
incumbent's value cutting the counts' value tables; EDP as a walk along the energy/latency Pareto front.

EDP (``energy x latency``) is not linear in the counts. The driver minimises energy under a latency cap ``tau``
(every mapping with latency ``<= tau``), evaluates the optimum ``m`` (latency ``L(m) <= tau``), and lowers the cap
below ``L(m)``: every mapping with latency in ``(L(m)', tau]`` has energy ``>= E(m)`` and latency ``> L(m)'``...
precisely, every mapping not yet excluded with latency ``>= L(m)`` has EDP ``>= E(m) L(m)``. It stops when the energy
lower bound under the current cap times the least latency of any mapping (its own MILP) reaches the best EDP found:
nothing left can beat it. The proven bound at any point is ``min(best EDP, E_bound(tau) * L_min)`` (times
``1 - LATENCY_STEP``, the relative step by which each cap undercuts the last latency).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.milp import MappingMilp
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.result import SolveOptions, Status, TracePoint, relative_gap

# HiGHS' default feasibility tolerances are kept: tightening them to 1e-9 makes its LPs on these models (secant
# slopes up to ~1e9) numerically unreliable (measured: wrong "optimal" answers). A capacity row satisfied only within
# tolerance is caught when the decoded mapping is evaluated and the row is tightened (see solve_single).
HIGHS_TOLERANCES: dict[str, float] = {}
# EDP walk: each latency cap is the last optimum's latency lowered by this relative step (well above the solvers'
# feasibility tolerance, so the same mapping cannot reappear)
LATENCY_STEP = 1e-6


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


def _value(nest: LoopNest, arch: MappingArch, m: Mapping | None, objective: str) -> float | None:
    if m is None:
        return None
    r = evaluate_mapping(nest, arch, m)
    return r.objective(objective) if r.valid else None


def solve_single(nest: LoopNest, arch: MappingArch, objective: str, *, warm: Mapping | None,
                 options: SolveOptions, solver: str = "highs", latency_limit: float | None = None,
                 energy_cap: float | None = None) -> LayerExact:
    """Minimise energy or latency with one MILP (optionally under a latency cap)."""
    t0 = time.perf_counter()
    warm_value = _value(nest, arch, warm, objective)
    if warm is not None and latency_limit is not None:
        lat = _value(nest, arch, warm, "latency")
        if lat is None or lat > latency_limit:
            warm, warm_value = None, None
    mm = MappingMilp(nest, arch, objective, cap=warm_value, latency_limit=latency_limit, energy_cap=energy_cap)
    model = mm.build()
    x0 = None
    if warm is not None:
        x0 = mm.encode(warm)
        if model.max_violation(x0) > 1e-6:
            x0 = None
    left = None if options.time_limit is None else max(0.1, options.time_limit - (time.perf_counter() - t0))
    br = solve_linear(model, solver, _options(options, left, x0))
    out = LayerExact(None, None, None, br.bound, br.status, 0.0, 1, br.message, model.stats(), list(br.trace))
    if br.x is not None:
        m = mm.decode(br.x)
        out.mapping, out.model_objective = m, br.objective
        out.objective = _value(nest, arch, m, objective)
        if out.objective is None:
            out.status, out.message = Status.ERROR, "the decoded mapping is rejected by the cost model"
    if out.objective is not None and out.model_objective is not None:
        tol = 1e-6 * max(1.0, abs(out.objective))
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
                options: SolveOptions | None = None, solver: str = "highs", max_front: int = 200) -> LayerExact:
    """The optimum of one layer for ``objective`` (energy, latency or edp)."""
    options = options or SolveOptions()
    warm = [m for m in (warm or []) if _value(nest, arch, m, objective) is not None]
    best_warm = min(warm, key=lambda m: _value(nest, arch, m, objective)) if warm else None  # type: ignore[arg-type,return-value]
    if objective in ("energy", "latency"):
        return solve_single(nest, arch, objective, warm=best_warm, options=options, solver=solver)
    if objective != "edp":
        raise ValueError(f"unknown mapping objective '{objective}'")
    t0 = time.perf_counter()

    def left() -> float | None:
        return None if options.time_limit is None else options.time_limit - (time.perf_counter() - t0)

    best_m, best = best_warm, _value(nest, arch, best_warm, "edp")
    lat_warm = min(warm, key=lambda m: _value(nest, arch, m, "latency")) if warm else None  # type: ignore[arg-type,return-value]
    lmin = solve_single(nest, arch, "latency", warm=lat_warm, options=options, solver=solver)
    solves = lmin.solves
    trace: list[TracePoint] = []
    if lmin.mapping is None or lmin.bound is None:
        return LayerExact(best_m, best, None, None, Status.NO_SOLUTION if best_m is None else Status.FEASIBLE,
                          time.perf_counter() - t0, solves, "no mapping found for the least latency")
    l_lb = lmin.bound
    for cand in (lmin.mapping,):
        v = _value(nest, arch, cand, "edp")
        if v is not None and (best is None or v < best):
            best_m, best = cand, v
    tau: float | None = None
    e_bound = 0.0
    status = Status.OPTIMAL
    message = ""
    for _ in range(max_front):
        tl = left()
        if tl is not None and tl <= 0.05:
            status, message = Status.FEASIBLE, "time limit reached during the Pareto walk"
            break
        assert best is not None
        sub = solve_single(nest, arch, "energy", warm=best_m, options=_with_time(options, tl), solver=solver,
                           latency_limit=tau, energy_cap=best / l_lb)
        solves += sub.solves
        if sub.status == Status.INFEASIBLE or sub.mapping is None:
            if sub.status not in (Status.INFEASIBLE, Status.OPTIMAL):
                status, message = Status.FEASIBLE, f"energy model under latency cap: {sub.status.value}"
            break
        e_bound = sub.bound if sub.bound is not None else 0.0
        rep = evaluate_mapping(nest, arch, sub.mapping)
        if rep.edp < best:
            best_m, best = sub.mapping, rep.edp
        trace.append(TracePoint(time.perf_counter() - t0, best, min(best, e_bound * l_lb)))
        if e_bound * l_lb >= best * (1 - options.mip_rel_gap):
            break
        if sub.status != Status.OPTIMAL:
            status, message = Status.FEASIBLE, f"energy model under latency cap: {sub.status.value}"
            break
        # the next cap excludes this latency; mappings skipped by the relative step (latency within LATENCY_STEP of
        # it, energy >= this one's) cannot beat the best by more than that factor: the bound below accounts for it
        tau = rep.latency_cycles * (1 - LATENCY_STEP)
    else:
        status, message = Status.FEASIBLE, f"Pareto walk stopped after {max_front} points"
    bound = best * (1 - LATENCY_STEP) if status == Status.OPTIMAL else min(  # type: ignore[operator]
        best * (1 - LATENCY_STEP), e_bound * l_lb)  # type: ignore[operator]
    return LayerExact(best_m, best, None, bound, status, time.perf_counter() - t0, solves, message, {}, trace)


def _with_time(options: SolveOptions, t: float | None) -> SolveOptions:
    o = _options(options, t)
    o.extra = options.extra
    return o


__all__ = ["HIGHS_TOLERANCES", "LayerExact", "solve_layer", "solve_single"]
