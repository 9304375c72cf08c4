r"""Concrete scratchpad addresses for pinning plans: every maximal residency run gets an offset.

A pinning solution says which scratchpad holds a buffer at each step; a compiler also needs *where*. A *run* is a
maximal stretch of consecutive steps during which one buffer stays in one scratchpad; it keeps one offset for its
whole length (moving it would be a copy). Per scratchpad, the runs are the buffers of a static memory-allocation
instance (:mod:`dlaopt.formulations.allocation`): lifetime ``[first, last + 1)``, the buffer's size, the
``alignment_bytes`` option, the scratchpad's capacity. Resident bytes that add up to at most the capacity at every
step may still not fit in addresses once the space is fragmented.

* **Placement** (:func:`place_addresses`): per scratchpad, :func:`~dlaopt.formulations.allocation.solve.allocate`
  (live-bytes proof, compilers' heuristics, then an exact search under a node/time budget).
* **Repair** (:func:`with_addresses`, used for every heuristic plan): when a scratchpad's runs do not fit, the
  compilers' placement with the lowest peak names the runs that end beyond the capacity; for each, the largest idle
  stretch (steps between two uses, where the buffer is not an operand) of a run alive at the same time is dropped,
  and the placement tried again; a run split this way becomes two runs with offsets of their own. Operand residency
  and the user's pinned steps are never dropped. A plan that still does not fit is a heuristic failure.
* **Exact** (:func:`solve_exact_with_addresses`): the capacity-sum optimum (the identical-scratchpad driver of
  :mod:`.exact` when it applies) is placed; when a scratchpad's runs do not fit, a minimal infeasible subset of them
  (:func:`~dlaopt.formulations.allocation.solve.infeasible_core`) is cut off the per-scratchpad model,

  .. math:: \textstyle\sum_{(b, m) \in R} y_{b,k',m} \le |R| - 1 \quad \text{for every scratchpad } k'
            \text{ with } Q_{k'} \le Q_k,

  written over the model's residency columns (:math:`y`: the per-step :math:`x_{b,k,m}`, or in the per-gap model the
  use columns :math:`x_{b,k,j}` and the kept-gap columns :math:`g_{b,k,j}` covering the run), and the model is solved
  again, until the plan it returns fits. The cut is valid: address infeasibility is monotone — a plan whose
  residency contains those runs (longer lifetimes, more buffers, or two of the runs joined into one buffer with one
  offset) has no placement either, and a smaller scratchpad of the same alignment none either. The per-gap model
  stays exact among address-feasible plans, since dropping a buffer right after a use (its canonical gap pattern)
  only shrinks lifetimes. Every bound on the way (the driver's, the relaxation's, each cut model's) is a lower bound
  of the address-feasible optimum, so the answer is still proven. When the budget ends first, the best verified plan
  with addresses (a repaired one) is returned as feasible and the message says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlaopt.formulations.allocation.data import AllocationData
from dlaopt.formulations.base import ExactOutcome, HeuristicFailure, Problem
from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.formulations.pinning.rules import PinningRules, RuleView
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.solvers.linear import LinearModel
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload.buffers import AllocBuffer

PinningProblem = Problem[Any, PinningSolution]
PinningData = Any

PLACE_NODE_LIMIT = 20_000  # exact-search nodes per scratchpad when the heuristics do not place its runs
PLACE_TIME_S = 2.0  # and seconds (capped by the time left)
CORE_NODE_LIMIT = 5_000  # nodes per test of the deletion filter that finds a minimal infeasible set of runs
CORE_MAX_RUNS = 300  # past this many runs in a scratchpad the deletion filter costs too many searches
REPAIR_NODE_LIMIT = 2_000  # search nodes per scratchpad in the repair rounds after the first (no CP-SAT there)
REPAIR_ROUNDS = 60
MAX_CUT_ROUNDS = 200
ALL_HEURISTICS_MAX_STEPS = 5_000


@dataclass(frozen=True)
class Run:
    """Buffer ``buffer`` in scratchpad ``spm`` from step ``first`` to ``last`` (inclusive), ``size`` bytes."""

    buffer: int
    spm: int
    first: int
    last: int
    size: int


@dataclass
class Failure:
    """A scratchpad whose runs were not placed: ``core`` indexes a subset of ``runs`` proven not to fit (``None``:
    not proven within the budget)."""

    runs: list[Run]
    core: list[int] | None
    reason: str


@dataclass
class Placement:
    solution: PinningSolution | None  # with offsets, when every scratchpad's runs were placed
    failed: dict[int, Failure] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


def residency_runs(graph: PinningGraph, sol: PinningSolution) -> list[list[Run]]:
    """Per scratchpad, the maximal runs of the solution (in buffer order)."""
    out: list[list[Run]] = [[] for _ in graph.scratchpads]
    for b, row in enumerate(sol.placement):
        row = np.asarray(row)
        if row.size == 0 or (row < 0).all():
            continue
        lo = graph.window[b][0]
        size = graph.buffers[b].size_bytes
        change = np.flatnonzero(np.diff(row) != 0) + 1
        starts = np.concatenate([[0], change])
        ends = np.concatenate([change - 1, [row.size - 1]])
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            k = int(row[s])
            if k >= 0:
                out[k].append(Run(b, k, lo + s, lo + e, size))
    return out


def allocation_data(graph: PinningGraph, runs: Sequence[Run], k: int, alignment: int) -> AllocationData:
    """The runs of scratchpad ``k`` as a static-allocation instance (lifetimes ``[first, last + 1)``)."""
    spm = graph.scratchpads[k]
    bufs = tuple(AllocBuffer(f"{graph.buffers[r.buffer].name}@{r.first}", r.first, r.last + 1, r.size, alignment)
                 for r in runs)
    return AllocationData(bufs, spm.capacity, "feasibility", spm.name, step_names=tuple(s.name for s in graph.steps))


def place_addresses(graph: PinningGraph, sol: PinningSolution, alignment: int, *, time_limit: float | None = None,
                    node_limit: int = PLACE_NODE_LIMIT, core: bool = False, seed: int = 0,
                    use_cpsat: bool = True) -> Placement:
    """Offsets for every run of ``sol``, scratchpad by scratchpad; ``core``: for a scratchpad proven not to fit,
    also find a minimal set of runs that does not fit (for cuts; at most :data:`CORE_MAX_RUNS` runs are reduced,
    a larger set is cut whole)."""
    from dlaopt.formulations.allocation.solve import allocate, infeasible_core

    t0 = time.perf_counter()
    end = None if time_limit is None else time.monotonic() + time_limit
    per_spm = residency_runs(graph, sol)
    offsets = [np.full(np.asarray(row).size, -1, dtype=np.int64) for row in sol.placement]
    failed: dict[int, Failure] = {}
    stats: dict[str, Any] = {"runs": sum(len(r) for r in per_spm), "stages": {}}
    for k, runs in enumerate(per_spm):
        if not runs:
            continue
        data = allocation_data(graph, runs, k, alignment)
        left = None if end is None else max(0.01, end - time.monotonic())
        limit = PLACE_TIME_S if left is None else min(PLACE_TIME_S, left)
        out = allocate(data, time_limit=limit, node_limit=node_limit, seed=seed, threads=1, deterministic=True,
                       use_cpsat=use_cpsat)
        stats["stages"][graph.scratchpads[k].name] = out.stage
        if out.solution is None:
            found: list[int] | None = None
            if out.status == Status.INFEASIBLE:
                found = list(range(len(runs)))
                if core and len(runs) <= CORE_MAX_RUNS:
                    with contextlib.suppress(Exception):  # a smaller core only strengthens the cut
                        found = infeasible_core(data, node_limit=CORE_NODE_LIMIT) or found
            failed[k] = Failure(runs, found, out.reason)
            continue
        offs = np.asarray(out.solution.offsets, dtype=np.int64)
        for r, o in zip(runs, offs.tolist(), strict=True):
            lo = graph.window[r.buffer][0]
            offsets[r.buffer][r.first - lo:r.last - lo + 1] = o
    stats["time_s"] = round(time.perf_counter() - t0, 4)
    if failed:
        return Placement(None, failed, stats)
    return Placement(PinningSolution([np.asarray(row).copy() for row in sol.placement], offsets), {}, stats)


# --------------------------------------------------------------------------------------------------- repair
def _idle_steps(graph: PinningGraph, view: RuleView, run: Run) -> list[int]:
    """The steps of ``run`` at which its buffer may leave: not an operand there, not pinned there."""
    uses = set(graph.uses[run.buffer])
    pinned = view.pinned[run.buffer]
    return [m for m in range(run.first, run.last + 1) if m not in uses and m not in pinned]


def with_addresses(graph: PinningGraph, sol: PinningSolution, alignment: int, *, rules: PinningRules | None = None,
                   pin_weights: bool = True, time_limit: float | None = None, name: str = "plan") -> PinningSolution:
    """``sol`` with an offset for every run, repaired (idle stretches dropped, runs split) until its residency fits
    in addresses; :class:`HeuristicFailure` when even that does not fit."""
    end = None if time_limit is None else time.monotonic() + time_limit
    view = RuleView(graph, rules or PinningRules(), pin_weights)
    cur = sol.residency_only()
    for rnd in range(REPAIR_ROUNDS):
        left = None if end is None else max(0.05, end - time.monotonic())
        rep = place_addresses(graph, cur, alignment, time_limit=left, use_cpsat=rnd == 0,
                              node_limit=PLACE_NODE_LIMIT if rnd == 0 else REPAIR_NODE_LIMIT)
        if rep.solution is not None:
            return rep.solution
        evicted = 0
        for k, fail in rep.failed.items():
            evicted += _evict_for(graph, view, cur, fail, k, alignment)
        if not evicted:
            why = next(iter(rep.failed.values())).reason
            raise HeuristicFailure(f"{name}: its residency does not fit in scratchpad addresses even with every "
                                   f"idle stretch dropped ({why})")
        if end is not None and time.monotonic() >= end:
            break
    raise HeuristicFailure(f"{name}: no scratchpad addresses found for its residency within the budget")


def _idle_gaps(graph: PinningGraph, view: RuleView, run: Run) -> list[tuple[int, int]]:
    """The maximal stretches ``[first, last]`` of :func:`_idle_steps` of ``run``."""
    out: list[tuple[int, int]] = []
    for m in _idle_steps(graph, view, run):
        if out and out[-1][1] == m - 1:
            out[-1] = (out[-1][0], m)
        else:
            out.append((m, m))
    return out


def _evict_for(graph: PinningGraph, view: RuleView, cur: PinningSolution, fail: Failure, k: int,
               alignment: int) -> int:
    """Drop idle stretches where scratchpad ``k``'s runs overflow: the compilers' placement with the lowest peak
    (which may exceed the capacity) names the runs that end beyond it; for each (largest first) the largest idle
    stretch of a run alive then (itself included, the proven core's runs first) is dropped. Returns the number of
    stretches dropped (0: nothing left to drop)."""
    from dlaopt.formulations.allocation.heuristics import HEURISTICS as PLACERS

    runs = fail.runs
    data = allocation_data(graph, runs, k, alignment)
    cap = graph.scratchpads[k].capacity
    placed = min((h(data) for h in PLACERS.values()), key=lambda sol: sol.peak(data))
    ends = np.asarray(placed.offsets, dtype=np.int64) + data.size
    over = sorted(np.flatnonzero(ends > cap).tolist(), key=lambda i: -runs[i].size)
    in_core = set(fail.core or ())
    gaps = [(i, gap) for i, r in enumerate(runs) for gap in _idle_gaps(graph, view, r)]
    used: set[tuple[int, tuple[int, int]]] = set()
    dropped = 0
    for o in over:
        ro = runs[o]
        live = [(i, gap) for i, gap in gaps if gap[0] <= ro.last and ro.first <= gap[1] and (i, gap) not in used]
        if not live:
            continue
        i, gap = max(live, key=lambda c: (c[0] in in_core, runs[c[0]].size * (c[1][1] - c[1][0] + 1)))
        used.add((i, gap))
        r = runs[i]
        lo = graph.window[r.buffer][0]
        cur.placement[r.buffer][gap[0] - lo:gap[1] - lo + 1] = -1
        dropped += 1
    if dropped or not over:
        return dropped
    # nothing idle where it overflows: drop the largest idle stretch anywhere in the scratchpad
    if gaps:
        i, gap = max(gaps, key=lambda c: runs[c[0]].size * (c[1][1] - c[1][0] + 1))
        lo = graph.window[runs[i].buffer][0]
        cur.placement[runs[i].buffer][gap[0] - lo:gap[1] - lo + 1] = -1
        return 1
    return 0


# --------------------------------------------------------------------------------------------------- cuts
class CellColumns:
    """The residency columns of a pinning model: which columns, all at 1, make buffer ``b`` resident in ``k`` at
    every step of ``[first, last]``."""

    def __init__(self, graph: PinningGraph, *, gap: Any = None, tables: list[np.ndarray] | None = None) -> None:
        self.graph = graph
        self.gap = gap
        self.tables = tables
        if gap is not None:
            self.x = {(int(b), int(k), int(j)): int(c) for b, k, j, c in zip(gap.xb, gap.xk, gap.xj, gap.x,
                                                                             strict=True)}
            self.g = {(int(b), int(k), int(j)): int(c) for b, k, j, c in zip(gap.gb, gap.gk, gap.gj, gap.g,
                                                                             strict=True)}

    @classmethod
    def steps_model(cls, graph: PinningGraph, model: LinearModel, rules: PinningRules,
                    pin_weights: bool) -> CellColumns:
        """The per-step model's ``x`` block (per buffer a (K, L) table, row-major over the allowed cells)."""
        view = RuleView(graph, rules, pin_weights)
        start, stop = model.col_blocks["x"]
        tables = []
        offset = start
        for b in range(len(graph.buffers)):
            mask = view.mask(b)
            t = np.full(mask.shape, -1, dtype=np.int64)
            n = int(mask.sum())
            t[mask] = np.arange(offset, offset + n)
            offset += n
            tables.append(t)
        if offset != stop:
            raise ValueError("the per-step model's residency columns are not laid out as expected")
        return cls(graph, tables=tables)

    def columns(self, b: int, k: int, first: int, last: int) -> np.ndarray | None:
        """``None`` when some cell has no column in ``k`` (the residency cannot happen there)."""
        lo = self.graph.window[b][0]
        if self.tables is not None:
            cols = self.tables[b][k, first - lo:last - lo + 1]
            return None if (cols < 0).any() else cols.copy()
        u = self.gap.uses[b]
        out = []
        for j, m in enumerate(u.tolist()):
            if first <= m <= last:
                c = self.x.get((b, k, j))
                if c is None:
                    return None
                out.append(c)
        for j in range(u.size - 1):
            a, z = int(u[j]), int(u[j + 1])
            if z - a > 1 and a + 1 <= last and z - 1 >= first:  # the gap's interior meets the run
                c = self.g.get((b, k, j))
                if c is None:
                    return None
                out.append(c)
        return np.unique(np.asarray(out, dtype=np.int64)) if out else None

    def cut_rows(self, runs: Sequence[Run]) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """``runs`` (all in one scratchpad, not placeable together) cut off in every scratchpad no larger."""
        k0 = runs[0].spm
        cap = self.graph.scratchpads[k0].capacity
        rows = []
        for k, spm in enumerate(self.graph.scratchpads):
            if spm.capacity > cap:
                continue
            cols = [self.columns(r.buffer, k, r.first, r.last) for r in runs]
            if any(c is None for c in cols):
                continue
            allc = np.unique(np.concatenate([c for c in cols if c is not None]))
            rows.append((allc, np.ones(allc.size), float(allc.size - 1)))
        return rows


# --------------------------------------------------------------------------------------------------- exact
def solve_exact_with_addresses(problem: PinningProblem, data: PinningData, method: str, *, backend: str,
                               options: SolveOptions) -> ExactOutcome[PinningSolution]:
    """The optimum among address-feasible plans (module text): the capacity-sum optimum placed, then no-good cuts
    on the residency patterns that do not fit, solved again until the plan fits."""
    from dlaopt.formulations.pinning.exact import Incumbent, applies, solve_identical, with_rows
    from dlaopt.formulations.pinning.heuristics import HEURISTICS
    from dlaopt.formulations.pinning.milp import build_pinning_milp
    from dlaopt.formulations.pinning.milp_gaps import build_gap_model
    from dlaopt.solvers.backends import solve_linear
    from dlaopt.specs import pinning as opts
    from dlaopt.specs.tuning import levers

    t0 = time.perf_counter()
    deadline = options.end_by()

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    g = data.graph
    align = data.alignment
    log: dict[str, Any] = {"rounds": [], "cuts": 0, "address_placements": 0}
    status = Status.FEASIBLE
    notes: list[str] = []

    incumbent = Incumbent(problem, data, t0)
    offer, raise_bound = incumbent.offer, incumbent.raise_bound

    def place(sol: PinningSolution) -> Placement:
        log["address_placements"] += 1
        lim = left()
        return place_addresses(g, sol, align, time_limit=None if lim is None else max(0.1, 0.2 * lim), core=True,
                               seed=options.seed)

    def repaired(sol: PinningSolution, name: str) -> None:
        with contextlib.suppress(HeuristicFailure):
            lim = left()
            offer(with_addresses(g, sol, align, rules=data.rules, pin_weights=data.pin_weights,
                                 time_limit=None if lim is None else max(0.1, 0.2 * lim), name=name), name)

    def gap_ok() -> bool:
        return incumbent.within(options.mip_rel_gap)

    cut_runs: list[list[Run]] = []
    first: PinningSolution | None = None
    driver_msg = ""
    tuning = data.tuning or levers({}, opts.EXACT_LEVERS)
    metrics: dict[str, Any] = {}
    driver = (tuning["assignment"] or tuning["pattern_cuts"]) and applies(data)
    # ---- quick incumbents: the heuristics, each with addresses (the driver runs its own greedy first)
    names = [] if driver else list(HEURISTICS) if len(g.steps) <= ALL_HEURISTICS_MAX_STEPS else ["greedy"]
    for h in names:
        with contextlib.suppress(HeuristicFailure):
            offer(problem.run_heuristic(h, data, options), h)
    if driver:
        lim = left()
        out = solve_identical(problem, data, backend=backend, tuning=tuning, options=dataclasses.replace(
            options, time_limit=None if lim is None else 0.8 * lim, deadline=None))
        metrics.update(out.metrics)
        incumbent.trace.extend(out.trace)
        driver_msg = out.message
        if out.status == Status.INFEASIBLE:
            return ExactOutcome(None, Status.INFEASIBLE, out.bound, backend, out.solver_version, out.message,
                                incumbent.trace, metrics=metrics, solve_time_s=time.perf_counter() - t0)
        if out.bound is not None and out.status in (Status.OPTIMAL, Status.FEASIBLE, Status.NO_SOLUTION):
            raise_bound(out.bound)
        first = out.solution
    else:
        for name, rf in problem.relaxations(data):  # as the harness does: a bound, and a repaired incumbent
            lim = left()
            rb = solve_linear(rf.model, backend, dataclasses.replace(
                options, warm_start=None, progress=None, time_limit=None if lim is None else 0.25 * lim))
            if rb.bound is not None and rb.status in (Status.OPTIMAL, Status.FEASIBLE):
                raise_bound(rb.bound + rf.objective_offset)
            if rb.x is not None:
                rep = problem.repair(data, name, rf.decode(rb.x))
                if rep is not None:
                    repaired(rep, f"{name}+repair")

    if first is not None:
        pl = place(first)
        if pl.solution is not None:
            offer(pl.solution, "driver")
            if gap_ok():
                status = Status.OPTIMAL
        else:
            repaired(first, "driver+repair")
            for f in pl.failed.values():
                if f.core is not None:
                    cut_runs.append([f.runs[i] for i in f.core])
            notes.append(f"the capacity-sum optimum did not fit in addresses ({len(pl.failed)} scratchpad(s))")
    if status != Status.OPTIMAL and gap_ok():
        status = Status.OPTIMAL

    # ---- the per-scratchpad model with no-good cuts on residency patterns that do not fit in addresses
    need_model = status != Status.OPTIMAL and (first is None or cut_runs)
    if need_model and (left() is None or (left() or 0.0) > 0.2):
        steps_model = data.formulation == "steps" or data.rules.dma_cap is not None
        if steps_model:
            form = build_pinning_milp(g, data.objective, data.dma, pin_weights=data.pin_weights, rules=data.rules)
            cols = CellColumns.steps_model(g, form.model, data.rules, data.pin_weights)
        else:
            gm = build_gap_model(g, data.objective, data.dma, pin_weights=data.pin_weights, rules=data.rules)
            form = gm.formulation
            cols = CellColumns(g, gap=gm)
        rows: list[tuple[np.ndarray, np.ndarray, float]] = []
        for runs in cut_runs:
            rows += cols.cut_rows(runs)
        for rnd in range(MAX_CUT_ROUNDS):
            lim = left()
            if lim is not None and lim <= 0.05:
                break
            model = with_rows(form.model, rows, block="address_nogood")
            warm = None
            if incumbent.best is not None:
                try:
                    warm = form.encode(incumbent.best[1])
                except ValueError:
                    warm = None
            r = solve_linear(model, backend, dataclasses.replace(options, time_limit=lim, warm_start=warm,
                                                                 deadline=None))
            entry: dict[str, Any] = {"round": rnd, "status": r.status.value, "objective": r.objective,
                                     "bound": r.bound, "cuts": len(rows), "time_s": round(r.solve_time_s, 3)}
            log["rounds"].append(entry)
            if r.status == Status.INFEASIBLE:
                if incumbent.best is None:
                    msg = ("no plan fits in scratchpad addresses: the model with "
                           f"{len(rows)} no-good cut(s) on residency patterns that do not fit is infeasible")
                    return ExactOutcome(None, Status.INFEASIBLE, None, r.solver, r.solver_version, msg, incumbent.trace,
                                        metrics={**metrics, "addresses": log},
                                        solve_time_s=time.perf_counter() - t0)
                break
            if r.bound is not None and r.status in (Status.OPTIMAL, Status.FEASIBLE, Status.NO_SOLUTION):
                raise_bound(r.bound + form.objective_offset)
            if r.x is None:
                break
            sol = form.decode(r.x)
            pl = place(sol)
            if pl.solution is not None:
                offer(pl.solution, "model")
                entry["fits"] = True
                break
            entry["fits"] = False
            repaired(sol, "model+repair")
            new = [[f.runs[i] for i in f.core] for f in pl.failed.values() if f.core is not None]
            if not new:
                notes.append("a plan's addresses were neither found nor proven impossible within the budget")
                break
            added = [row for runs in new for row in cols.cut_rows(runs)]
            if not added:
                break
            rows += added
            entry["new_cuts"] = len(added)
        log["cuts"] = len(rows)
        if gap_ok():
            status = Status.OPTIMAL
    log["time_s"] = round(time.perf_counter() - t0, 3)
    metrics["addresses"] = log
    if incumbent.best is None:
        return ExactOutcome(None, Status.NO_SOLUTION, incumbent.bound, backend, "", "no plan with addresses found" + (
            f" ({'; '.join(notes)})" if notes else ""), incumbent.trace, metrics=metrics,
            solve_time_s=time.perf_counter() - t0)
    obj, sol, name = incumbent.best
    if incumbent.bound is not None and incumbent.bound > obj:
        incumbent.bound = obj
    if status == Status.OPTIMAL and not gap_ok():
        status = Status.FEASIBLE
    msg = f"optimal among address-feasible plans; best plan from {name}" if status == Status.OPTIMAL else (
        f"best plan with addresses from {name}, optimality among address-feasible plans not proven"
        + ("" if deadline is None else " within the time limit"))
    if log["cuts"]:
        msg += f"; {log['cuts']} no-good cut(s) on residency patterns that do not fit in addresses"
    if notes:
        msg += "; " + "; ".join(notes)
    if driver_msg:
        msg += f" ({driver_msg})"
    return ExactOutcome(sol, status, incumbent.bound, backend, "", msg, incumbent.trace,
                        warm_start={"method": name, "objective": obj}, metrics=metrics,
                        solve_time_s=time.perf_counter() - t0)


__all__ = ["CellColumns", "Placement", "Run", "allocation_data", "place_addresses", "residency_runs",
           "solve_exact_with_addresses", "with_addresses"]
