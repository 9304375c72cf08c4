"""The exact allocation driver: a proven answer, fast on the instances compilers produce.

:func:`allocate` runs, in order, until one stage settles the instance:

1. the live bytes: a step whose live buffers need more than the capacity proves infeasibility (naming the step);
2. the heuristics (:mod:`.heuristics`): a placement whose peak meets the live-bytes bound is optimal (and for the
   feasibility objective any placement within the capacity is);
3. the canonical depth-first search (:mod:`.search`) under the node and time budget: a placement found is
   feasible, an exhausted search proves infeasibility (or, for the minimum peak, optimality);
4. CP-SAT with a 2-D no-overlap (:mod:`.cpsat`): when nothing is placed yet and the capacity exceeds the live-bytes
   bound, first a short probe at the bound (a quarter of the time left; a placement there fits and is optimal for
   either objective, and the tighter model finds it sooner when one exists), then at the capacity, hinted with the
   best placement so far, under what is left of the budget.

:func:`infeasible_core` reduces a proven-infeasible instance to a minimal set of buffers that still cannot be placed
(a deletion filter; each test a live-bytes check or an exhausted search).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution, live_bytes_reason
from dlaopt.formulations.allocation.heuristics import HEURISTICS
from dlaopt.formulations.allocation.search import search
from dlaopt.solvers.result import SolveOptions, Status

DEFAULT_CORE_NODE_LIMIT = 20_000
SEARCH_NODES_PER_BUFFER = 4  # the search's own budget before CP-SAT takes over (no node_limit given)
MIN_SEARCH_NODES = 2_000
TIGHT_PROBE_SHARE = 0.25  # of the time left, for CP-SAT at the live-bytes bound before CP-SAT at the capacity


@dataclass
class AllocationOutcome:
    """The answer of :func:`allocate`.

    ``status``: ``optimal`` (a placement, optimal for the objective), ``feasible`` (a placement, optimality not
    proven within the budget), ``infeasible`` (proven: ``reason`` says how), ``no_solution`` (the budget ended
    first). ``peak``: the placement's peak; ``bound``: a proven lower bound on the peak (the live bytes, or the
    peak itself once optimal); ``stage``: what settled it (``live-bytes``, ``heuristic:<name>``, ``search``,
    ``cpsat``); ``nodes``: search nodes."""

    solution: AllocationSolution | None
    status: Status
    peak: int | None
    bound: int
    reason: str
    stage: str
    nodes: int = 0
    time_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)


def fragmented_reason(data: AllocationData, proof: str) -> str:
    """Why a capacity the live bytes fit still admits no placement."""
    return (f"no placement of the {data.n} buffers fits {data.capacity} bytes: proven by {proof}; the live bytes "
            f"({data.bound} at {data.step_name(data.bound_step or 0)}) fit, so the space is fragmented")


def allocate(data: AllocationData, *, time_limit: float | None = None, node_limit: int | None = None, seed: int = 0,
             threads: int = 1, deterministic: bool = True, use_cpsat: bool = True,
             cpsat_deterministic_time: float | None = None) -> AllocationOutcome:
    """Place ``data``'s buffers with a proven answer when the budget allows (see the module docstring).

    ``node_limit`` bounds the search (without one: ``max(2000, 4 n)`` nodes when CP-SAT follows — the search
    settles most instances in a dive of about ``n`` nodes or proves small ones infeasible, and the CP-SAT model's
    propagation is the stronger tool on the rest — and no bound with ``use_cpsat`` false); ``time_limit`` (seconds)
    the whole call; ``cpsat_deterministic_time`` CP-SAT's deterministic time (reproducible runs)."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    minimize = data.objective == "peak"
    cap = data.capacity
    stats: dict[str, Any] = {}

    def done(sol: AllocationSolution | None, status: Status, bound: int, reason: str, stage: str,
             nodes: int = 0) -> AllocationOutcome:
        peak = None if sol is None else sol.peak(data)
        if status == Status.OPTIMAL and peak is not None:
            bound = peak if minimize else bound
        return AllocationOutcome(sol, status, peak, bound, reason, stage, nodes, time.perf_counter() - t0, stats)

    if data.n == 0:
        return done(AllocationSolution.of([]), Status.OPTIMAL, 0, "no buffers", "live-bytes")
    why = live_bytes_reason(data)
    if why is not None:
        return done(None, Status.INFEASIBLE, data.bound, why, "live-bytes")
    if cap is None and not minimize:
        raise ValueError("the feasibility objective needs a capacity")

    # ---- heuristics: the best placement within the capacity
    best: AllocationSolution | None = None
    best_name = ""
    peaks: dict[str, int] = {}
    for name, h in HEURISTICS.items():
        sol = h(data)
        peaks[name] = sol.peak(data)
        if (cap is None or peaks[name] <= cap) and (best is None or peaks[name] < best.peak(data)):
            best, best_name = sol, name
    stats["heuristics"] = peaks
    if best is not None and (not minimize or best.peak(data) <= data.bound):
        return done(best, Status.OPTIMAL, data.bound, f"the '{best_name}' placement meets the live-bytes bound"
                    if minimize else f"the '{best_name}' placement fits", f"heuristic:{best_name}")

    # ---- the canonical search
    upper = cap if best is None else best.peak(data) - 1
    assert upper is not None
    budget = node_limit if node_limit is not None or not use_cpsat else max(MIN_SEARCH_NODES,
                                                                              SEARCH_NODES_PER_BUFFER * data.n)
    res = search(data, upper, minimize=minimize, target=data.bound, node_limit=budget, deadline=deadline)
    stats["search"] = {"nodes": res.nodes, "exhausted": res.exhausted, "time_s": res.time_s}
    if res.offsets is not None:
        best, best_name = AllocationSolution(res.offsets), "search"
    if res.exhausted:
        if best is None:
            return done(None, Status.INFEASIBLE, data.bound, fragmented_reason(data, "search"), "search", res.nodes)
        why = ("the search found a placement within the capacity" if not minimize else
               f"the search proved that no placement has a lower peak ({best_name})")
        return done(best, Status.OPTIMAL, data.bound, why, "search" if best_name == "search" else
                    f"heuristic:{best_name}", res.nodes)
    if not minimize and best is not None:
        return done(best, Status.OPTIMAL, data.bound, "the search found a placement within the capacity", "search",
                    res.nodes)

    # ---- CP-SAT on what is left of the budget
    left = None if deadline is None else deadline - time.monotonic()
    if not use_cpsat or (left is not None and left <= 0.05):
        return _unsettled(done, best, data, res.nodes, "the search budget ended")
    from dlaopt.formulations.allocation.cpsat import solve_cpsat

    model_cap = cap if not minimize else (best.peak(data) if best is not None else cap)
    if best is None and model_cap is not None and model_cap > data.bound:
        # a placement at the live-bytes bound fits any larger capacity and is optimal for the peak: the tighter
        # model propagates more, and finds it far sooner when one exists; a short probe first
        probe_left = None if left is None else left * TIGHT_PROBE_SHARE
        probe = SolveOptions(time_limit=probe_left, threads=threads, seed=seed, deterministic=deterministic,
                             mip_rel_gap=0.0)
        if cpsat_deterministic_time is not None:
            probe = replace(probe, extra={"deterministic_time": cpsat_deterministic_time * TIGHT_PROBE_SHARE})
        tight = solve_cpsat(data, data.bound, probe, minimize=False, hint=None)
        stats["cpsat_at_bound"] = {"status": tight.result.status.value, "time_s": tight.result.solve_time_s}
        if tight.solution is not None:
            return done(tight.solution, Status.OPTIMAL, data.bound, "CP-SAT placed the buffers within the "
                        "live-bytes bound", "cpsat", res.nodes)
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0.05:
            return _unsettled(done, best, data, res.nodes, "the budget ended")
    opts = SolveOptions(time_limit=left, threads=threads, seed=seed, deterministic=deterministic, mip_rel_gap=0.0)
    if cpsat_deterministic_time is not None:
        opts = replace(opts, extra={"deterministic_time": cpsat_deterministic_time})
    assert model_cap is not None
    cp = solve_cpsat(data, model_cap, opts, minimize=minimize, hint=best)
    r = cp.result
    stats["cpsat"] = {"status": r.status.value, "time_s": r.solve_time_s, "bound": r.bound}
    if r.status == Status.INFEASIBLE:
        if best is not None:  # cannot happen: the hint is a placement within the model's capacity
            return done(best, Status.FEASIBLE, data.bound, "CP-SAT contradicted a verified placement", "cpsat",
                        res.nodes)
        return done(None, Status.INFEASIBLE, data.bound, fragmented_reason(data, "CP-SAT"), "cpsat", res.nodes)
    if cp.solution is not None and (best is None or cp.solution.peak(data) <= best.peak(data)):
        best, best_name = cp.solution, "cpsat"
    if r.status == Status.OPTIMAL and best is not None:
        return done(best, Status.OPTIMAL, data.bound, "CP-SAT proved the placement optimal", "cpsat", res.nodes)
    bound = max(data.bound, int(r.bound) if r.bound is not None and minimize else 0)
    return _unsettled(done, best, data, res.nodes, "the budget ended before a proof", bound)


def _unsettled(done: Any, best: AllocationSolution | None, data: AllocationData, nodes: int, why: str,
               bound: int | None = None) -> AllocationOutcome:
    b = data.bound if bound is None else bound
    if best is None:
        return done(None, Status.NO_SOLUTION, b, f"{why}: no placement found, none proven impossible", "budget",
                    nodes)
    return done(best, Status.FEASIBLE, b, f"{why}: peak {best.peak(data)}, bound {b}", "budget", nodes)


def proven_infeasible(data: AllocationData, node_limit: int | None) -> bool:
    """No placement fits ``data.capacity``, proven by the live bytes or an exhausted search."""
    if data.capacity is None:
        return False
    if live_bytes_reason(data) is not None:
        return True
    res = search(data, data.capacity, node_limit=node_limit)
    return res.exhausted and res.offsets is None


def infeasible_core(data: AllocationData, *, node_limit: int | None = DEFAULT_CORE_NODE_LIMIT) -> list[int] | None:
    """A minimal set of buffer positions (increasing) whose placement within ``data.capacity`` is proven
    impossible: every buffer of it needed (removing any one leaves a set not proven infeasible within
    ``node_limit`` nodes per test). ``None`` when the whole set is not proven infeasible."""
    if data.capacity is None or data.n == 0:
        return None
    cap = data.capacity

    def sub(idx: list[int]) -> AllocationData:
        return AllocationData(tuple(data.buffers[i] for i in idx), cap, "feasibility", data.memory, data.source,
                              data.step_names)

    big = [i for i, b in enumerate(data.buffers) if b.size > cap]
    if big:
        return big[:1]
    if data.bound > cap:
        members = data.live_at(data.bound_step or 0)
    elif proven_infeasible(data, node_limit):
        members = list(range(data.n))
    else:
        return None
    # larger buffers are the likelier members of a small core: try to remove the small ones first
    members.sort(key=lambda i: (data.buffers[i].size * (data.buffers[i].upper - data.buffers[i].lower), i))
    k = 0
    while k < len(members):
        trial = members[:k] + members[k + 1:]
        if trial and proven_infeasible(sub(sorted(trial)), node_limit):
            members = trial
        else:
            k += 1
    return sorted(members)


__all__ = ["DEFAULT_CORE_NODE_LIMIT", "AllocationOutcome", "allocate", "fragmented_reason", "infeasible_core",
           "proven_infeasible"]
