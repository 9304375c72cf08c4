"""The exact method: a CP-SAT scheduling model with bandwidth modes, judged by the fluid evaluator.

The mode model
    The fluid allocator of :mod:`.evaluator` changes a job's bandwidth whenever another job starts or ends; CP-SAT
    needs fixed durations. The model therefore lets every job run at one of a few *constant* allocations (its
    **modes**) for its whole run: on sub-accelerator ``a`` job ``j`` may get ``f · min(B[j, a], W)`` for ``f`` in
    ``fractions`` (default ``1, 1/2, 1/4``; ``W`` the system bandwidth) and then takes
    ``max(L[j, a], V[j, a] / allocation)`` seconds (the issue's duration rule; ``V = L·B``).

    *Integers.* Bandwidth is counted in ``capacity`` units of ``W / capacity`` (default ``capacity = 10 000``); a
    mode's demand is its allocation rounded **up** to that grid (at least 1 unit when ``B > 0``, at most
    ``capacity``), and its duration is computed from the rounded allocation. Time is counted in units of
    ``time_unit`` seconds; durations are rounded **up** (``ceil``, with a 1e-9 relative tolerance so that exact
    multiples stay exact). By default ``time_unit = H / resolution`` with ``H`` the fluid makespan of the warm start
    and ``resolution = 1000``, so a rounding costs at most 0.1 % of ``H`` per job and, over a sub-accelerator's
    ``n`` jobs, at most ``n`` units. Rounding up keeps every model schedule *physically realisable*: with the
    allocations held constant (not what the fluid allocator does) every job would finish by its model end.
    Dominated modes (no shorter and no cheaper than another of the same pair) and modes longer than the horizon are
    dropped. The **model makespan** (reported in seconds, ``units × time_unit``) is thus comparable with fluid
    makespans, but it is *not* the fluid makespan of the same assignment: see :attr:`ExactResult.message`.

The CP-SAT model
    One start variable per job; per (job, sub-accelerator, mode) an optional fixed-size interval on that start with a
    presence literal; exactly one literal per job; ``NoOverlap`` per sub-accelerator; ``Cumulative`` on system
    bandwidth (demand = the mode's integer demand, capacity ``capacity``); ``end_j = start_j + Σ duration·literal``;
    precedence ``start_v ≥ end_u``; ``makespan ≥ end_j``; minimise ``makespan`` (integer time units).
    Strengthening (all implied by the constraints above, they only help propagation and the bound): a redundant
    ``Cumulative`` over all intervals with demand 1 and capacity = the number of sub-accelerators; per
    sub-accelerator load ``Σ duration·literal ≤ makespan``; the volume (energy) cut
    ``Σ demand·duration·literal ≤ capacity·makespan`` (which implies ``W·makespan ≥ Σ V``); and
    ``makespan ≥ ceil(bound / time_unit)`` with the *policy-free* bound of :mod:`.bound` (``semantics="any"``),
    valid for the mode model too: every mode lasts at least ``D = L·max(1, B/W)`` and moves at least ``V`` through
    the link, which is all that bound uses. (The fluid bound is not: the model may beat proportional sharing.)

Warm start and hints
    The warm start (or a greedy earliest-finish assignment when none is given) is turned into a *feasible* model
    schedule by a serial schedule-generation scheme: its jobs are placed in the order of their fluid start times
    (respecting the orders and the precedence) on their sub-accelerators, each at the earliest start and in the mode
    that ends first where the bandwidth profile has room. (Full-bandwidth modes at the rounded fluid starts are not
    feasible for the model when bandwidth is over-subscribed, since the fluid allocator shares it.) That schedule
    fixes the model's horizon and is passed as a complete solution hint. CP-SAT may still lose a hint, so the warm
    start itself is also kept as a fallback.

Result
    Every improving CP-SAT solution is decoded into an :class:`~.model.Assignment` (per sub-accelerator, its jobs by
    start time) and simulated by the fluid evaluator; the returned assignment is the best by the evaluator among
    them and the warm start. Its ``bound`` is the fluid lower bound of :mod:`.bound` (``semantics="fluid"``; CP-SAT's
    own bound holds for the mode model only, not for the fluid semantics, and is reported separately); the status is
    OPTIMAL only when the fluid makespan meets that valid bound within ``options.mip_rel_gap``. Time: with
    ``options.time_limit`` the two bound MILPs get 10 % of it each (``bound_fraction = 0.2``), CP-SAT the rest.
    When the mode model is exact for the instance (:func:`model_is_exact`: the bandwidth never binds, every latency
    is a whole number of time units), CP-SAT's proven optimum is the fluid optimum and bounds it too.

User constraints (``data.constraints``)
    Placement (``allowed`` / ``forbidden``) and colocation leave a job only the options where its colocation group
    may run; colocation adds, per group and sub-accelerator, ``Σ presence(first job) = Σ presence(other job)``;
    a window bounds the start variable below by the release and the end above by the deadline (rounded up and down
    to time units); a precedence constraint is one more precedence pair. A candidate schedule counts only when the
    evaluator finds every constraint met on the fluid timeline (the model's timeline is not the fluid one). Without
    a warm start that meets them, the *policy-free relaxation* (:func:`build_relaxation`) runs first: when it is
    infeasible no schedule exists (status INFEASIBLE, no assignment); its assumption core names the constraints in
    conflict (:func:`relaxation_core`). The default time unit then divides every latency, release and deadline
    when such a unit exists and makes the mode model exact; with an exact model, CP-SAT's infeasibility over a
    horizon that holds every left-justified schedule is a proof too. Otherwise no candidate is NO_SOLUTION.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from dlaopt.formulations.multiaccel.bound import MakespanBound, makespan_bound, min_durations
from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, check, precedence_cycle, violations
from dlaopt.formulations.multiaccel.localsearch import local_search, orders_of_assignment
from dlaopt.formulations.multiaccel.localsearch import supports as ls_supports
from dlaopt.formulations.multiaccel.model import (
    Assignment,
    ColocateRule,
    MultiAccelData,
    PlacementRule,
    PrecedenceRule,
    Simulation,
    WindowRule,
)
from dlaopt.solvers.cpsat_backend import CPSAT_VERSION, configure_solver
from dlaopt.solvers.result import ProgressCallback, SolveOptions, Status, TracePoint, TraceRecorder, relative_gap

DEFAULT_FRACTIONS: tuple[float, ...] = (1.0, 0.5, 0.25)
DEFAULT_RESOLUTION = 1000  # time units over the warm start's fluid makespan
DEFAULT_CAPACITY = 10_000  # integer bandwidth units in the system bandwidth
DEFAULT_BOUND_FRACTION = 0.2  # share of options.time_limit given to the bound MILP
LOCAL_SEARCH_FRACTION = 0.8  # lever local_search: its share of the time left after the bounds
LOCAL_SEARCH_ROUNDS = 100  # lever local_search: rounds without a time limit (deterministic)
CONFIGURATIONS = 1000  # lever configurations: columns of the configuration rows in the fluid bound
MAX_RECORDED_SOLUTIONS = 200  # improving CP-SAT solutions kept for the fluid re-evaluation (the last ones)
_ROUND_RTOL = 1e-9


# ---------------------------------------------------------------------------------------------- the mode model
@dataclass(frozen=True)
class ModeModel:
    """The integer data shared by the CP-SAT model and the time-indexed MILP: one *option* per kept
    (job, sub-accelerator, mode) with its integer duration (time units) and bandwidth demand (capacity units)."""

    n_jobs: int
    n_accelerators: int
    time_unit: float  # seconds per time unit
    capacity: int  # bandwidth units in the system bandwidth
    system_bandwidth: float  # bytes/s
    job: np.ndarray  # [K]
    acc: np.ndarray  # [K]
    fraction: np.ndarray  # [K] the mode's nominal fraction of min(B, W)
    demand: np.ndarray  # [K] integer
    duration: np.ndarray  # [K] integer time units
    precedence: tuple[tuple[int, int], ...] = ()
    release: np.ndarray | None = None  # [J] earliest start (units), from the user's windows
    deadline: np.ndarray | None = None  # [J] latest end (units; a huge value where none)
    colocate: tuple[tuple[int, ...], ...] = ()  # groups of jobs that share a sub-accelerator

    @property
    def n_options(self) -> int:
        return int(self.job.shape[0])

    @property
    def allocation(self) -> np.ndarray:
        """Bytes/s each option holds for its whole run."""
        return self.demand * (self.system_bandwidth / self.capacity)

    def restrict(self, horizon: int) -> tuple[ModeModel, np.ndarray]:
        """The model without the options longer than ``horizon``, and the kept options' old indices."""
        keep = np.flatnonzero(self.duration <= horizon)
        return dataclasses.replace(self, job=self.job[keep], acc=self.acc[keep], fraction=self.fraction[keep],
                                   demand=self.demand[keep], duration=self.duration[keep]), keep

    def options_by_job(self) -> list[np.ndarray]:
        order = np.argsort(self.job, kind="stable")
        return np.split(order, np.cumsum(np.bincount(self.job, minlength=self.n_jobs))[:-1])

    def makespan_of(self, option: np.ndarray, start: np.ndarray) -> int:
        return int(np.max(start + self.duration[option], initial=0))


def _ceil_units(x: np.ndarray) -> np.ndarray:
    """``ceil`` with a relative tolerance, so that values a rounding error above an integer stay on it."""
    return np.ceil(x - _ROUND_RTOL * np.maximum(1.0, np.abs(x))).astype(np.int64)


def _floor_units(x: np.ndarray) -> np.ndarray:
    """``floor`` with a relative tolerance, so that values a rounding error below an integer stay on it."""
    return np.floor(x + _ROUND_RTOL * np.maximum(1.0, np.abs(x))).astype(np.int64)


NO_DEADLINE = 2**40  # units: "no deadline" in the integer models


def exact_unit(values: np.ndarray, max_units: float) -> float | None:
    """The largest time unit (seconds) of which every positive value is a whole multiple — on a picosecond grid,
    to a relative 1e-9 — when the largest value is at most ``max_units`` of it; ``None`` otherwise."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return None
    ps = v * 1e12
    ints = np.rint(ps)
    if np.any(np.abs(ps - ints) > 1e-9 * ps + 1e-6) or np.any(ints < 1) or ints.max() > 2**62:
        return None
    g = 0
    for i in np.unique(ints.astype(np.int64)).tolist():
        g = math.gcd(g, int(i))
    unit = g * 1e-12
    return unit if v.max() / unit <= max_units else None


def _windows(data: MultiAccelData, unit: float) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The user's releases (rounded up to units) and deadlines (rounded down) per job, or ``None`` without any."""
    n = data.table.n_jobs
    release, deadline = np.zeros(n), np.full(n, np.inf)
    for r in data.constraints.windows:
        for j in r.jobs:
            if r.release is not None:
                release[j] = max(release[j], r.release)
            if r.deadline is not None:
                deadline[j] = min(deadline[j], r.deadline)
    rel = _ceil_units(release / unit) if release.any() else None
    dl = (np.where(np.isfinite(deadline), _floor_units(np.where(np.isfinite(deadline), deadline, 0.0) / unit),
                   NO_DEADLINE) if np.isfinite(deadline).any() else None)
    return rel, dl


def _colocate_groups(data: MultiAccelData) -> tuple[tuple[int, ...], ...]:
    lead = data.constraints.leaders(data.table.n_jobs)
    groups: dict[int, list[int]] = {}
    for j, g in enumerate(lead.tolist()):
        groups.setdefault(g, []).append(j)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)


def build_mode_model(data: MultiAccelData, time_unit: float, *, fractions: tuple[float, ...] = DEFAULT_FRACTIONS,
                     capacity: int = DEFAULT_CAPACITY) -> ModeModel:
    """All options of ``data`` (see the module docstring for the rounding), dominated ones removed."""
    if not time_unit > 0:
        raise ValueError(f"time_unit must be positive, got {time_unit!r}")
    if not fractions or any(not 0 < f <= 1 for f in fractions):
        raise ValueError(f"bandwidth mode fractions must lie in (0, 1], got {fractions!r}")
    t = data.table
    n, m = t.n_jobs, t.n_accelerators
    w = float(data.system_bandwidth)
    lat, bw = np.asarray(t.latency, dtype=float), np.asarray(t.bandwidth, dtype=float)
    vol = lat * bw
    base = np.minimum(bw, w)
    f = np.asarray(sorted(set(fractions), reverse=True), dtype=float)
    target = base[:, :, None] * f[None, None, :]  # [J, A, M] bytes/s
    demand = np.clip(_ceil_units(target * capacity / w), 1, capacity)
    demand = np.where(bw[:, :, None] > 0, demand, 0)
    alloc = demand * (w / capacity)
    with np.errstate(divide="ignore", invalid="ignore"):
        secs = np.where(bw[:, :, None] > 0, np.maximum(lat[:, :, None], vol[:, :, None] / alloc), lat[:, :, None])
    duration = np.maximum(_ceil_units(secs / time_unit), 0)
    # dominance within each (job, accelerator): another mode no longer and no hungrier (strictly better in one, or
    # an identical earlier one)
    d1, d2 = duration[:, :, :, None], duration[:, :, None, :]  # [J, A, M(this), M(other)]
    q1, q2 = demand[:, :, :, None], demand[:, :, None, :]
    better = (d2 <= d1) & (q2 <= q1) & ((d2 < d1) | (q2 < q1))
    mm = f.size
    earlier_same = (d2 == d1) & (q2 == q1) & (np.arange(mm)[None, :] < np.arange(mm)[:, None])[None, None]
    keep = ~np.any(better | earlier_same, axis=3)
    if data.constraints:  # the user's placement and colocation: a job keeps the options where its group may run
        keep &= data.constraints.group_mask(n, m)[:, :, None]
    jj, aa, kk = np.nonzero(keep)
    release, deadline = _windows(data, float(time_unit))
    return ModeModel(n_jobs=n, n_accelerators=m, time_unit=float(time_unit), capacity=int(capacity),
                     system_bandwidth=w, job=jj.astype(np.int64), acc=aa.astype(np.int64),
                     fraction=f[kk], demand=demand[jj, aa, kk].astype(np.int64),
                     duration=duration[jj, aa, kk].astype(np.int64),
                     precedence=tuple((int(u), int(v)) for u, v in data.precedence),
                     release=release, deadline=deadline, colocate=_colocate_groups(data))


def model_is_exact(data: MultiAccelData, mm: ModeModel) -> bool:
    """Whether the mode model *is* the fluid semantics on ``data``: no set of jobs running at once (one per
    sub-accelerator) asks for more than the system bandwidth, and neither do their fastest modes for the model's
    capacity; every fastest mode lasts exactly the no-stall latency; releases and deadlines are whole units. Then
    every model schedule can run its jobs in their fastest modes at the same starts, the fluid timeline of its
    orders starts every job no later, and every fluid timeline is a model schedule: the two optima coincide, and
    the model's infeasibility (over a horizon that holds every left-justified schedule) is the instance's."""
    t = data.table
    n, m = t.n_jobs, t.n_accelerators
    if n == 0 or mm.n_options == 0:
        return False
    mask = data.constraints.group_mask(n, m) if data.constraints else np.ones((n, m), dtype=bool)
    bw = np.where(mask, np.asarray(t.bandwidth, dtype=float), 0.0)
    if float(bw.max(axis=0).sum()) > float(data.system_bandwidth):
        return False
    fastest_dur = np.full((n, m), -1, dtype=np.int64)
    fastest_dem = np.zeros((n, m), dtype=np.int64)
    for k in np.argsort(-mm.duration, kind="stable"):  # shortest last: it wins
        j, a = int(mm.job[k]), int(mm.acc[k])
        fastest_dur[j, a], fastest_dem[j, a] = mm.duration[k], mm.demand[k]
    if np.any((fastest_dur < 0) & mask) or int(fastest_dem.max(axis=0).sum()) > mm.capacity:
        return False
    lat = np.asarray(t.latency, dtype=float) / mm.time_unit
    if np.any(mask & (np.abs(fastest_dur - lat) > 1e-9 * np.maximum(1.0, lat))):
        return False
    for r in data.constraints.windows:
        for x in (r.release, r.deadline):
            if x is not None and abs(x / mm.time_unit - round(x / mm.time_unit)) > 1e-9 * max(1.0, x / mm.time_unit):
                return False
    return True


# ----------------------------------------------------------------------------------------- warm start, hints
def greedy_assignment(data: MultiAccelData) -> Assignment:
    """Earliest finish on the least-time durations ``D``: jobs in a topological order of the precedence (longest
    ``min_a D`` first among the ready ones), each appended to the sub-accelerator where it would finish first (no
    earlier than its release; among those its colocation group may use; a group's first job where the whole group
    would finish first, the others where it went). Deadlines are not looked at: the result may miss them."""
    t = data.table
    n, m = t.n_jobs, t.n_accelerators
    d = min_durations(data)
    prio = -d.min(axis=1)
    succ: list[list[int]] = [[] for _ in range(n)]
    preds: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for u, v in data.precedence:
        succ[u].append(v)
        preds[v].append(u)
        indeg[v] += 1
    heap = [(float(prio[j]), j) for j in range(n) if indeg[j] == 0]
    heapq.heapify(heap)
    free = np.zeros(m)
    done = np.zeros(n)
    order: list[list[int]] = [[] for _ in range(m)]
    # the user's constraints: where each job's colocation group may run, the group's sub-accelerator once one of
    # its jobs is placed, the releases
    mask = data.constraints.group_mask(n, m) if data.constraints else np.ones((n, m), dtype=bool)
    lead = data.constraints.leaders(n)
    release = data.release
    placed: dict[int, int] = {}
    group_work = np.zeros_like(d)  # a colocation group's total work per sub-accelerator
    np.add.at(group_work, lead, d)
    while heap:
        _, j = heapq.heappop(heap)
        ready = max([release[j], *(done[u] for u in preds[j])])
        fin = np.where(mask[j], np.maximum(free, ready) + d[j], np.inf)
        g = int(lead[j])
        if g not in placed:  # the group's first job: where the whole group would finish first
            placed[g] = int(np.argmin(np.where(mask[j], np.maximum(free, ready) + group_work[g], np.inf)))
        a = placed[g]
        free[a] = fin[a]
        done[j] = fin[a]
        order[a].append(j)
        for v in succ[j]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (float(prio[v]), v))
    if sum(len(o) for o in order) != n:
        raise ValueError("the precedence relation has a cycle")
    return Assignment(order)


def _placement_order(data: MultiAccelData, assignment: Assignment, sim: Simulation) -> list[int]:
    """Jobs in a topological order of (precedence ∪ the sub-accelerator orders), earliest fluid start first."""
    n = data.table.n_jobs
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    edges = [(int(u), int(v)) for u, v in data.precedence]
    edges += [(int(o[k]), int(o[k + 1])) for o in assignment.order for k in range(len(o) - 1)]
    for u, v in edges:
        succ[u].append(v)
        indeg[v] += 1
    heap = [(float(sim.start[j]), float(sim.end[j]), j) for j in range(n) if indeg[j] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        _, _, j = heapq.heappop(heap)
        out.append(j)
        for v in succ[j]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (float(sim.start[v]), float(sim.end[v]), v))
    return out


def list_schedule(mm: ModeModel, assignment: Assignment, placement: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """A feasible mode-model schedule of ``assignment``: jobs placed in ``placement`` order (a topological order of
    the precedence and the sub-accelerator orders), each at the earliest start after its sub-accelerator's previous
    job and its predecessors, in the option of its sub-accelerator that ends first with room in the bandwidth
    profile (ties: the smaller demand). Returns the option index and the start (time units) of every job."""
    acc_of = assignment.accelerator_of(mm.n_jobs)
    preds: list[list[int]] = [[] for _ in range(mm.n_jobs)]
    for u, v in mm.precedence:
        preds[v].append(u)
    by_job = mm.options_by_job()
    usage = np.zeros(max(16, int(mm.duration.sum()) + 1), dtype=np.int64)
    free = np.zeros(mm.n_accelerators, dtype=np.int64)
    option = np.full(mm.n_jobs, -1, dtype=np.int64)
    start = np.zeros(mm.n_jobs, dtype=np.int64)
    end = np.zeros(mm.n_jobs, dtype=np.int64)
    cap = mm.capacity
    for j in placement:
        a = int(acc_of[j])
        ready = max([int(free[a]), *(int(end[u]) for u in preds[j])])
        if mm.release is not None:
            ready = max(ready, int(mm.release[j]))
        best: tuple[int, int, int, int] | None = None  # (end, demand, option, start)
        for k in by_job[j]:
            if mm.acc[k] != a:
                continue
            d, q = int(mm.duration[k]), int(mm.demand[k])
            s = ready
            while True:
                if s + d > usage.size:
                    usage = np.concatenate([usage, np.zeros(max(usage.size, s + d), dtype=np.int64)])
                bad = np.flatnonzero(usage[s:s + d] + q > cap)
                if bad.size == 0:
                    break
                s += int(bad[-1]) + 1
            cand = (s + d, q, int(k), s)
            if best is None or cand < best:
                best = cand
        if best is None:
            raise ValueError(f"job {j} has no option on sub-accelerator {a}")
        e, q, k, s = best
        usage[s:e] += q
        option[j], start[j], end[j] = k, s, e
        free[a] = e
    return option, start


# ------------------------------------------------------------------------------------------------ CP-SAT model
@dataclass
class CpsatModel:
    """The CP-SAT model of a :class:`ModeModel` and the handles needed to hint and decode it."""

    model: cp_model.CpModel
    mm: ModeModel
    horizon: int
    start: list[cp_model.IntVar]
    end: list[cp_model.IntVar]
    present: list[cp_model.IntVar]  # [K] presence literals
    makespan: cp_model.IntVar

    def stats(self) -> dict[str, int]:
        p = self.model.proto
        return {"options": self.mm.n_options, "variables": len(p.variables), "constraints": len(p.constraints),
                "horizon_units": self.horizon}

    def hint(self, option: np.ndarray, start: np.ndarray) -> None:
        """A complete solution hint: every job's option and start, every literal, ends and makespan."""
        self.model.clear_hints()
        chosen = np.zeros(self.mm.n_options, dtype=bool)
        chosen[option] = True
        for k, lit in enumerate(self.present):
            self.model.add_hint(lit, bool(chosen[k]))
        end = start + self.mm.duration[option]
        for j in range(self.mm.n_jobs):
            self.model.add_hint(self.start[j], int(start[j]))
            self.model.add_hint(self.end[j], int(end[j]))
        self.model.add_hint(self.makespan, int(np.max(end, initial=0)))


def build_cpsat_model(mm: ModeModel, horizon: int, lower: int = 0, *, redundant: bool = True) -> CpsatModel:
    """The CP-SAT model of the module docstring over ``[0, horizon]`` time units, ``makespan ≥ lower``.
    ``redundant=False`` leaves out the strengthening (for comparisons)."""
    horizon = int(horizon)
    lower = max(0, min(int(lower), horizon))
    model = cp_model.CpModel()
    model.name = "multiaccel-modes"
    by_job = mm.options_by_job()
    dur = mm.duration.tolist()
    dem = mm.demand.tolist()
    present = [model.new_bool_var(f"p{k}") for k in range(mm.n_options)]
    starts: list[cp_model.IntVar] = []
    ends: list[cp_model.IntVar] = []
    intervals: list[cp_model.IntervalVar | None] = [None] * mm.n_options
    makespan = model.new_int_var(lower, horizon, "makespan")
    for j in range(mm.n_jobs):
        ks = by_job[j].tolist()
        if not ks:  # nowhere to run (the placement constraints, or the horizon): no schedule
            model.add_bool_or([model.new_constant(0)])
        dmin = min((dur[k] for k in ks), default=0)
        # the user's window: start no earlier than the release, end no later than the deadline (an empty domain
        # makes the model infeasible)
        r0 = int(mm.release[j]) if mm.release is not None else 0
        d0 = min(horizon, int(mm.deadline[j])) if mm.deadline is not None else horizon
        s = model.new_int_var(r0, max(r0, d0 - dmin), f"s{j}")
        e = model.new_int_var(r0 + dmin, max(r0 + dmin, d0), f"e{j}")
        model.add(e <= d0)
        starts.append(s)
        ends.append(e)
        for k in ks:
            intervals[k] = model.new_optional_fixed_size_interval_var(s, dur[k], present[k], f"i{k}")
        model.add_exactly_one(present[k] for k in ks)
        model.add(e == s + sum(dur[k] * present[k] for k in ks))
        model.add(makespan >= e)
    ivs: list[cp_model.IntervalVar] = [iv for iv in intervals if iv is not None]
    acc = mm.acc.tolist()
    for a in range(mm.n_accelerators):
        model.add_no_overlap([ivs[k] for k in range(mm.n_options) if acc[k] == a])
    bw_k = [k for k in range(mm.n_options) if dem[k] > 0]
    if bw_k:
        model.add_cumulative([ivs[k] for k in bw_k], [dem[k] for k in bw_k], mm.capacity)
    for u, v in mm.precedence:
        model.add(starts[v] >= ends[u])
    for group in mm.colocate:  # the same sub-accelerator for every job of a group
        for a in range(mm.n_accelerators):
            lead = [present[k] for k in by_job[group[0]].tolist() if acc[k] == a]
            for j in group[1:]:
                model.add(sum(present[k] for k in by_job[j].tolist() if acc[k] == a) == sum(lead))
    if redundant:
        model.add_cumulative(ivs, [1] * mm.n_options, mm.n_accelerators)
        for a in range(mm.n_accelerators):
            ka = [k for k in range(mm.n_options) if acc[k] == a]
            if ka:
                model.add(sum(dur[k] * present[k] for k in ka) <= makespan)
        if bw_k:
            model.add(sum(dem[k] * dur[k] * present[k] for k in bw_k) <= mm.capacity * makespan)
    model.minimize(makespan)
    return CpsatModel(model, mm, horizon, starts, ends, present, makespan)


def decode(mm: ModeModel, option: np.ndarray, start: np.ndarray) -> Assignment:
    """Per sub-accelerator, its jobs by model start (ties: shorter first, then job index)."""
    order: list[list[int]] = [[] for _ in range(mm.n_accelerators)]
    keys = sorted(range(mm.n_jobs), key=lambda j: (int(start[j]), int(mm.duration[option[j]]), j))
    for j in keys:
        order[int(mm.acc[option[j]])].append(j)
    return Assignment(order)


class _Recorder(cp_model.CpSolverSolutionCallback, TraceRecorder):
    """Keeps the last improving solutions (option and start of every job) and the model's trace in seconds."""

    def __init__(self, cm: CpsatModel, progress: ProgressCallback | None) -> None:
        cp_model.CpSolverSolutionCallback.__init__(self)
        TraceRecorder.__init__(self, progress)
        self.unit = cm.mm.time_unit
        self.n_jobs = cm.mm.n_jobs
        self.lit_idx = np.asarray([v.index for v in cm.present], dtype=np.int64)
        self.start_idx = np.asarray([v.index for v in cm.start], dtype=np.int64)
        self.job = cm.mm.job
        self.solutions: list[tuple[np.ndarray, np.ndarray, int]] = []

    def on_solution_callback(self) -> None:
        sol = np.asarray(self.response_proto.solution, dtype=np.int64)
        chosen = np.flatnonzero(sol[self.lit_idx] > 0)
        option = np.full(self.n_jobs, -1, dtype=np.int64)
        option[self.job[chosen]] = chosen
        obj = float(self.objective_value)
        self.solutions.append((option, sol[self.start_idx].copy(), int(round(obj))))
        if len(self.solutions) > MAX_RECORDED_SOLUTIONS:
            del self.solutions[0]
        self.incumbent = obj * self.unit
        self.bound = float(self.best_objective_bound) * self.unit
        self._emit(TracePoint(time.perf_counter() - self.t0, self.incumbent, self.bound))
        if self.error is not None:
            self.stop_search()

    def on_bound(self, bound: float) -> None:
        b = float(bound) * self.unit
        if math.isnan(b) or (self.bound is not None and b <= self.bound):
            return
        self.bound = b
        self._emit(TracePoint(time.perf_counter() - self.t0, self.incumbent, b))


@dataclass
class ModelSolution:
    """CP-SAT's answer on a :class:`CpsatModel` (times in units): its status name, best makespan and bound, the
    final option and start of every job, and the last improving solutions (option, start, makespan)."""

    status: str
    makespan: int | None
    bound: int | None
    option: np.ndarray | None
    start: np.ndarray | None
    solutions: list[tuple[np.ndarray, np.ndarray, int]]
    trace: list[TracePoint]
    time_s: float
    notes: list[str]

    @property
    def optimal(self) -> bool:
        return self.status == "OPTIMAL"


def solve_model(cm: CpsatModel, options: SolveOptions) -> ModelSolution:
    """Solve ``cm`` with the project's CP-SAT configuration (:func:`~dlaopt.solvers.cpsat_backend.configure_solver`:
    ``threads`` -> workers (default 2), ``seed``, ``time_limit``, ``extra["deterministic_time"]``, ...)."""
    solver, notes = configure_solver(dataclasses.replace(options, warm_start=None))
    rec = _Recorder(cm, options.progress)
    solver.best_bound_callback = rec.on_bound
    t0 = time.perf_counter()
    rec.t0 = t0
    st = solver.solve(cm.model, rec)
    elapsed = time.perf_counter() - t0
    if rec.error is not None:
        raise rec.error
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return ModelSolution(solver.status_name(st), None, None, None, None, rec.solutions, rec.points, elapsed, notes)
    sol = np.asarray(solver.response_proto.solution, dtype=np.int64)
    chosen = np.flatnonzero(sol[rec.lit_idx] > 0)
    option = np.full(cm.mm.n_jobs, -1, dtype=np.int64)
    option[cm.mm.job[chosen]] = chosen
    return ModelSolution(solver.status_name(st), int(round(solver.objective_value)),
                         int(math.floor(solver.best_objective_bound + 1e-9)), option, sol[rec.start_idx].copy(),
                         rec.solutions, rec.points, elapsed, notes)


# ------------------------------------------------------------------------- the policy-free relaxation (proofs)
RELAXATION_MAX_UNITS = 10_000_000  # finest grid of the relaxation: its horizon in units
RELAXATION_TIME_LIMIT = 10.0  # seconds, when the solve has no time limit (else a tenth of it)


@dataclass
class Relaxation:
    """A CP-SAT feasibility model that every solution of the instance satisfies (so its infeasibility proves the
    instance's), with one assumption literal per user constraint.

    Each job runs once, on one sub-accelerator, for at least ``D = L·max(1, B/W)`` (no allocation policy runs it
    faster; :func:`.bound.min_durations`); the jobs of a sub-accelerator do not overlap; the precedence pairs hold.
    Times are rounded *down* to ``unit`` (a start ``s`` to ``floor(s/u)``, a duration to ``floor(D/u)``), which
    keeps every real timeline a model schedule: ``floor(s/u) + floor(D/u) ≤ floor((s + D)/u)``. Under its literal,
    each user constraint adds: placement — the options it excludes; window — the rounded release and deadline,
    the sub-accelerators where ``release + D > deadline`` (exactly, in seconds), and the volume cut
    ``Σ V ≤ W·(deadline − release)`` over its jobs; precedence — ``start(after) ≥ end(before)``; colocate — equal
    placements. ``exact``: the bandwidth never binds and ``unit`` is exact, so the relaxation *is* the instance."""

    model: cp_model.CpModel
    unit: float
    horizon: int
    literals: list[tuple[tuple[str | int, ...], cp_model.IntVar]]
    present: list[list[cp_model.IntVar]]  # [J][A]
    start: list[cp_model.IntVar]
    exact: bool


def build_relaxation(data: MultiAccelData) -> Relaxation:
    t, cons = data.table, data.constraints
    n, m = t.n_jobs, t.n_accelerators
    w = float(data.system_bandwidth)
    d_sec = min_durations(data)
    release = [r.release for r in cons.windows if r.release is not None]
    deadline = [r.deadline for r in cons.windows if r.deadline is not None]
    span = max(release, default=0.0) + float(d_sec.max(axis=1).sum()) if n else 0.0
    span = max(span, max(deadline, default=0.0), 1e-12)
    exact_u = exact_unit(np.concatenate([d_sec.ravel(), release, deadline, [span]]), RELAXATION_MAX_UNITS)
    unit = exact_u if exact_u is not None else span / 1e6
    dur = _floor_units(d_sec / unit)
    horizon = int(_ceil_units(np.array([span / unit]))[0]) + 1
    model = cp_model.CpModel()
    model.name = "multiaccel-relaxation"
    present = [[model.new_bool_var(f"x{j}_{a}") for a in range(m)] for j in range(n)]
    starts, ends = [], []
    for j in range(n):
        s_j = model.new_int_var(0, horizon, f"s{j}")
        e_j = model.new_int_var(0, horizon, f"e{j}")
        model.add_exactly_one(present[j])
        model.add(e_j == s_j + sum(int(dur[j, a]) * present[j][a] for a in range(m)))
        starts.append(s_j)
        ends.append(e_j)
    for a in range(m):
        model.add_no_overlap([model.new_optional_fixed_size_interval_var(starts[j], int(dur[j, a]), present[j][a],
                                                                         f"i{j}_{a}") for j in range(n)])
    user_pairs = {(r.before, r.after) for r in cons.precedence}
    for u, v in data.precedence:  # the option's pairs always hold; the user's under their literals
        if (u, v) not in user_pairs:
            model.add(starts[v] >= ends[u])
    literals: list[tuple[tuple[str | int, ...], cp_model.IntVar]] = []
    vol = t.volume / (w * unit)
    for rule in cons.rules:
        lit = model.new_bool_var(rule.label)
        literals.append((rule.path, lit))
        if isinstance(rule, PlacementRule):
            listed = set(rule.accelerators)
            for j in rule.jobs:
                for a in range(m):
                    if (a in listed) != (rule.kind == "allowed"):
                        model.add_implication(lit, present[j][a].negated())
        elif isinstance(rule, WindowRule):
            r0 = rule.release or 0.0
            for j in rule.jobs:
                if rule.release is not None:
                    model.add(starts[j] >= int(_floor_units(np.array([rule.release / unit]))[0])).only_enforce_if(lit)
                if rule.deadline is not None:
                    model.add(ends[j] <= int(_floor_units(np.array([rule.deadline / unit]))[0])).only_enforce_if(lit)
                    for a in range(m):
                        if r0 + d_sec[j, a] > rule.deadline * (1 + 1e-9):
                            model.add_implication(lit, present[j][a].negated())
            if rule.deadline is not None:
                room = int(_floor_units(np.array([(rule.deadline - r0) / unit]))[0])
                model.add(sum(int(_floor_units(np.array([vol[j, a]]))[0]) * present[j][a]
                              for j in rule.jobs for a in range(m)) <= room).only_enforce_if(lit)
        elif isinstance(rule, PrecedenceRule):
            model.add(starts[rule.after] >= ends[rule.before]).only_enforce_if(lit)
        elif isinstance(rule, ColocateRule):
            for j in rule.jobs[1:]:
                for a in range(m):
                    model.add(present[j][a] == present[rule.jobs[0]][a]).only_enforce_if(lit)
    model.add_assumptions([lit for _, lit in literals])
    bw = np.asarray(t.bandwidth, dtype=float)
    exact = exact_u is not None and (m == 0 or float(bw.max(axis=0).sum()) <= w)
    return Relaxation(model, unit, horizon, literals, present, starts, exact)


@dataclass
class RelaxationOutcome:
    """What the relaxation says: ``status`` (CP-SAT's name), the user constraints of a core when INFEASIBLE, a
    schedule's assignment (per sub-accelerator by start) when it found one, whether the model is exact."""

    status: str
    core: list[tuple[str | int, ...]] | None
    assignment: Assignment | None
    exact: bool
    time_s: float

    @property
    def infeasible(self) -> bool:
        return self.status == "INFEASIBLE"


def solve_relaxation(data: MultiAccelData, options: SolveOptions | None = None) -> RelaxationOutcome:
    """Solve :func:`build_relaxation` under all its assumptions (a tenth of ``options.time_limit``, at most
    :data:`RELAXATION_TIME_LIMIT` seconds without one)."""
    t0 = time.perf_counter()
    options = options if options is not None else SolveOptions()
    limit = RELAXATION_TIME_LIMIT if options.time_limit is None else 0.1 * options.time_limit
    rel = build_relaxation(data)
    solver, _ = configure_solver(dataclasses.replace(options, warm_start=None, progress=None, time_limit=limit))
    st = solver.solve(rel.model)
    name = solver.status_name(st)
    core = assignment = None
    if st == cp_model.INFEASIBLE:
        chosen = set(solver.sufficient_assumptions_for_infeasibility())
        core = [path for path, lit in rel.literals if lit.index in chosen]
    elif st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        n, m = data.table.n_jobs, data.table.n_accelerators
        acc = [next(a for a in range(m) if solver.boolean_value(rel.present[j][a])) for j in range(n)]
        start = [solver.value(rel.start[j]) for j in range(n)]
        order: list[list[int]] = [[] for _ in range(m)]
        for j in sorted(range(n), key=lambda j: (start[j], j)):
            order[acc[j]].append(j)
        assignment = Assignment(order)
    return RelaxationOutcome(name, core, assignment, rel.exact, time.perf_counter() - t0)


def relaxation_core(data: MultiAccelData, options: SolveOptions | None = None
                    ) -> list[tuple[str | int, ...]] | None:
    """The paths of user constraints that cannot hold together by the relaxation's core (a precedence cycle: the
    user's pairs on it); ``None`` when the relaxation does not show a conflict."""
    cycle = precedence_cycle(data)
    if cycle:
        on = set(zip(cycle, [*cycle[1:], cycle[0]], strict=True))
        paths = [r.path for r in data.constraints.precedence if (r.before, r.after) in on]
        return paths or None
    out = solve_relaxation(data, options)
    return out.core if out.infeasible else None


# --------------------------------------------------------------------------------------------------- the driver
@dataclass
class ExactResult:
    """What :func:`solve_exact` returns. Times in seconds; ``makespan``/``simulation`` are the fluid evaluator's."""

    assignment: Assignment | None  # None: no schedule meeting the user's constraints (``status`` says why)
    simulation: Simulation | None
    makespan: float | None  # fluid makespan of ``assignment``
    source: str  # "cpsat", "warm-start" or "none"
    bound: float | None  # valid lower bound on the fluid makespan of every solution
    status: Status
    message: str
    cpsat_fluid_makespan: float | None  # fluid makespan of CP-SAT's final (model-best) schedule
    model_makespan: float | None  # CP-SAT's objective, units × time_unit
    model_bound: float | None  # CP-SAT's bound on the mode model (not valid for the fluid semantics)
    model_status: str
    warm_start_makespan: float | None  # None: no warm start met the user's constraints
    bound_detail: MakespanBound | None  # the fluid bound (``bound`` is its value)
    floor_detail: MakespanBound | None  # the policy-free bound, floor of the model's makespan
    time_unit: float
    model_stats: dict[str, int] = field(default_factory=dict)
    trace: list[TracePoint] = field(default_factory=list)  # CP-SAT's incumbents and bounds: *model* makespans (s)
    solve_time_s: float = 0.0
    cpsat_time_s: float = 0.0
    solver_version: str = CPSAT_VERSION

    @property
    def gap(self) -> float | None:
        return relative_gap(self.makespan, self.bound)


def _extra(options: SolveOptions, key: str, value: Any, default: Any) -> Any:
    if value is not None:
        return value
    return options.extra.get(key, default)


def solve_exact(data: MultiAccelData, *, options: SolveOptions | None = None, warm_start: Assignment | None = None,
                fractions: tuple[float, ...] | None = None, resolution: int | None = None,
                time_unit: float | None = None, capacity: int | None = None,
                bound_fraction: float | None = None, relaxation: RelaxationOutcome | None = None,
                levers: dict[str, bool] | None = None) -> ExactResult:
    """Solve the mode model with CP-SAT and return the best schedule by the fluid evaluator (module docstring).

    ``options``: ``threads`` -> CP-SAT workers (default 2), ``seed``, ``time_limit`` (total: ``bound_fraction`` of
    it, default 0.2, for the bound MILP on HiGHS, the rest for CP-SAT), ``extra["deterministic_time"]`` (CP-SAT),
    ``deterministic`` (interleaved search), ``mip_rel_gap``, ``node_limit`` (bound MILP nodes; CP-SAT conflicts).
    The keyword arguments (or ``options.extra["multiaccel_<name>"]``) set the mode model: mode ``fractions``,
    ``resolution`` (time units over the warm start's fluid makespan) or an explicit ``time_unit`` in seconds,
    bandwidth ``capacity`` units.

    With user constraints (``data.constraints``) every candidate schedule must meet them by the evaluator;
    without a warm start that does, the policy-free relaxation (:func:`solve_relaxation`, or ``relaxation`` when
    already solved) runs first: its infeasibility is returned as INFEASIBLE (no assignment), its schedule becomes
    the warm start when it meets them. No candidate at the end gives NO_SOLUTION, or INFEASIBLE when the mode
    model is exact (:func:`model_is_exact`) and infeasible over a horizon that holds every left-justified schedule.

    ``levers`` (:data:`dlaopt.specs.multiaccel.EXACT_LEVERS`; missing ones off, which is the method without them):
    ``configurations`` adds the configuration rows to the fluid bound (:func:`.bound.build_bound_model`);
    ``relaxation_start`` offers the fluid bound MILP's assignment (ordered by :func:`.localsearch.orders_of_assignment`)
    as a candidate; ``local_search`` runs :func:`.localsearch.local_search` from the best schedule so far for
    ``LOCAL_SEARCH_FRACTION`` of the time CP-SAT would have had (``LOCAL_SEARCH_ROUNDS`` rounds without a time
    limit). The best schedule so far then warm-starts CP-SAT, which gets the rest.
    """
    t0 = time.perf_counter()
    lever = {k: bool(v) for k, v in (levers or {}).items()}
    options = options if options is not None else SolveOptions()
    fractions = tuple(_extra(options, "multiaccel_fractions", fractions, DEFAULT_FRACTIONS))
    resolution = int(_extra(options, "multiaccel_resolution", resolution, DEFAULT_RESOLUTION))
    time_unit = _extra(options, "multiaccel_time_unit", time_unit, None)
    capacity = int(_extra(options, "multiaccel_capacity", capacity, DEFAULT_CAPACITY))
    bound_fraction = float(_extra(options, "multiaccel_bound_fraction", bound_fraction, DEFAULT_BOUND_FRACTION))
    notes: list[str] = []
    ev = FluidEvaluator(data)
    n = data.table.n_jobs
    constrained = bool(data.constraints)
    if n == 0:
        empty = ev.simulate(Assignment([[] for _ in range(data.table.n_accelerators)]))
        return ExactResult(
            assignment=Assignment([[] for _ in range(data.table.n_accelerators)]), simulation=empty, makespan=0.0,
            source="warm-start", bound=0.0, status=Status.OPTIMAL, message="empty job group",
            cpsat_fluid_makespan=None, model_makespan=None, model_bound=None, model_status="not run",
            warm_start_makespan=0.0, bound_detail=makespan_bound(data),
            floor_detail=makespan_bound(data, semantics="any"), time_unit=1.0, solve_time_s=time.perf_counter() - t0)

    def broken(a: Assignment) -> list[str]:
        return violations(data, a) if constrained else check(data, a)

    if warm_start is not None:
        problems = broken(warm_start)
        if problems:
            notes.append("warm start ignored: " + "; ".join(problems))
            warm_start = None
    greedy = greedy_assignment(data) if warm_start is None else warm_start
    if warm_start is None and not (constrained and broken(greedy)):
        warm_start = greedy
    if warm_start is None:  # the user's constraints and no schedule meeting them yet: the relaxation first
        if relaxation is None:
            relaxation = solve_relaxation(data, options)
        if relaxation.infeasible:
            return _no_schedule(data, Status.INFEASIBLE, relaxation_message(relaxation), t0)
        if relaxation.assignment is not None and not broken(relaxation.assignment):
            warm_start = relaxation.assignment
            notes.append("warm start: the policy-free relaxation's schedule")
    warm_valid = warm_start is not None
    warm = warm_start if warm_start is not None else greedy
    warm_sim = ev.simulate(warm)
    h_fluid = warm_makespan = warm_sim.makespan
    upper = h_fluid if warm_valid else None

    # the bounds first (HiGHS), each with half of their share of the time limit: the fluid one is the valid bound
    # of the result, the policy-free one floors the mode model's makespan
    bound_opts = dataclasses.replace(
        options, warm_start=None, progress=None, extra={},
        time_limit=None if options.time_limit is None else 0.5 * bound_fraction * options.time_limit)
    bound = makespan_bound(data, bound_opts, upper=upper, semantics="fluid",
                           configurations=CONFIGURATIONS if lever.get("configurations") else 0)
    floor = makespan_bound(data, bound_opts, upper=upper, semantics="any")

    # better starts for CP-SAT (and candidates of their own): the bound relaxation's assignment, a local search
    start_source = "warm-start"
    improved: list[tuple[str, Assignment, float]] = []  # (source, schedule, fluid makespan), each better than the last
    if lever.get("relaxation_start") and warm_valid and bound.relaxed_accelerator is not None:
        ra = orders_of_assignment(data, bound.relaxed_accelerator, ev)
        v = ev.makespan(ra.order)
        if v < h_fluid and not (constrained and broken(ra)):
            improved.append(("relaxation", ra, v))
    if lever.get("local_search") and warm_valid and ls_supports(data):
        base_src, base, base_v = improved[-1] if improved else ("warm-start", warm, h_fluid)
        deadline = rounds = None
        if options.time_limit is not None:
            left_ls = max(0.0, options.time_limit - (time.perf_counter() - t0))
            deadline = time.perf_counter() + LOCAL_SEARCH_FRACTION * left_ls
        else:
            rounds = LOCAL_SEARCH_ROUNDS
        found = local_search(data, base, seed=options.seed or 0, rounds=rounds, deadline=deadline, evaluator=ev,
                             target=bound.value * (1.0 + options.mip_rel_gap))
        notes.append(f"local search from the {base_src} schedule: {found.rounds} rounds, {found.evaluations} "
                     f"schedules simulated, fluid makespan {base_v:.6g} -> {found.makespan:.6g} s")
        if found.makespan < base_v and not (constrained and broken(found.assignment)):
            improved.append(("local-search", found.assignment, found.makespan))
    if improved:  # the best schedule so far warm-starts CP-SAT (time unit, horizon, hint)
        start_source, warm, h_fluid = improved[-1]
        warm_sim = ev.simulate(warm)

    unit = float(time_unit) if time_unit is not None else (h_fluid / resolution if h_fluid > 0 else 1.0)
    mm_all = build_mode_model(data, unit, fractions=fractions, capacity=capacity)
    if time_unit is None and constrained:
        # a unit of which every latency, release and deadline is a whole multiple makes the mode model exact when
        # the bandwidth never binds (model_is_exact): the model's optimum and infeasibility are then the instance's
        rel_dl = [x for r in data.constraints.windows for x in (r.release, r.deadline) if x is not None]
        fine = exact_unit(np.concatenate([np.asarray(data.table.latency, dtype=float).ravel(), rel_dl,
                                          [h_fluid]]), 20 * resolution)
        if fine is not None:
            mm_fine = build_mode_model(data, fine, fractions=fractions, capacity=capacity)
            if model_is_exact(data, mm_fine):
                unit, mm_all = fine, mm_fine
    exact = model_is_exact(data, mm_all)
    opt_all, start_hint = list_schedule(mm_all, warm, _placement_order(data, warm, warm_sim))
    hint_end = start_hint + mm_all.duration[opt_all]
    hint_ok = warm_valid and (mm_all.deadline is None or bool(np.all(hint_end <= mm_all.deadline)))
    horizon = max(1, mm_all.makespan_of(opt_all, start_hint))
    if not hint_ok:  # the horizon must hold every left-justified schedule: the hint's may miss a deadline
        by_job = mm_all.options_by_job()
        longest = sum(int(mm_all.duration[ks].max()) for ks in by_job if ks.size)
        first = int(mm_all.release.max()) if mm_all.release is not None else 0
        horizon = max(horizon, first + longest)
    mm, kept = mm_all.restrict(horizon)
    remap = np.full(mm_all.n_options, -1, dtype=np.int64)
    remap[kept] = np.arange(kept.size)
    opt_hint = remap[opt_all]
    lower = int(math.ceil(floor.value / unit * (1.0 - 1e-6)))
    if lower > horizon:
        notes.append(f"bound {floor.value:.6g} s above the hint's model makespan; makespan floor clamped")
        lower = horizon
    cm = build_cpsat_model(mm, horizon, lower)
    cm.hint(opt_hint, start_hint)

    # CP-SAT with the rest of the time
    left = None
    if options.time_limit is not None:
        left = max(0.0, options.time_limit - (time.perf_counter() - t0))
    if ((lever.get("local_search") or lever.get("relaxation_start")) and not exact
            and h_fluid <= bound.value * (1.0 + options.mip_rel_gap)):  # the start is proven optimal already
        # (an exact mode model still runs: its proven optimum lifts the bound to the optimum itself)
        ms = ModelSolution("NOT_RUN", None, None, None, None, [], [], 0.0,
                           ["CP-SAT not run: the best schedule before it meets the valid bound"])
    else:
        ms = solve_model(cm, dataclasses.replace(options, time_limit=left))
    notes.extend(ms.notes)

    def fluid_value(a: Assignment) -> float:
        """The fluid makespan, ``inf`` for a schedule that breaks a user constraint."""
        return math.inf if constrained and broken(a) else ev.makespan(a.order)

    model_makespan = model_bound = cpsat_fluid = None
    candidates: list[tuple[float, int, str, Assignment]] = []
    if ms.option is not None and ms.start is not None and ms.makespan is not None and ms.bound is not None:
        model_makespan, model_bound = ms.makespan * unit, ms.bound * unit
        final = decode(mm, ms.option, ms.start)
        cpsat_fluid = fluid_value(final)
        candidates.append((cpsat_fluid, 0, "cpsat", final))
        for rank, (o, s, _) in enumerate(reversed(ms.solutions[:-1]), start=1):
            a = decode(mm, o, s)
            candidates.append((fluid_value(a), rank, "cpsat", a))
    elif warm_valid and ms.status != "NOT_RUN":
        notes.append(f"CP-SAT returned {ms.status} (no model solution); the warm start is kept")
    if warm_valid:
        candidates.append((h_fluid, len(candidates) + 1, start_source, warm))
    candidates = [c for c in candidates if math.isfinite(c[0])]
    if not candidates:
        if exact and ms.status == "INFEASIBLE":
            return _no_schedule(data, Status.INFEASIBLE, "no schedule meets the constraints: the mode model, exact "
                                f"for this instance (time unit {unit:.6g} s), is infeasible", t0)
        return _no_schedule(data, Status.NO_SOLUTION, "no schedule found that meets the constraints (CP-SAT: "
                            f"{ms.status}; its schedules, run by the fluid evaluator, miss a constraint), and none "
                            "proved impossible", t0)
    _, _, source, best = min(candidates, key=lambda c: (c[0], c[1]))
    sim = warm_sim if best is warm else ev.simulate(best)
    fluid = sim.makespan

    valid = bound.value
    if exact and ms.optimal and model_makespan is not None:  # the model's optimum is the fluid optimum
        valid = max(valid, model_makespan * (1.0 - 1e-9))
    if valid > fluid * (1.0 + 1e-6):
        notes.append(f"bound {valid:.9g} s above a simulated makespan {fluid:.9g} s (numerics); clamped")
    valid = min(valid, fluid)
    gap = relative_gap(fluid, valid)
    status = Status.OPTIMAL if gap is not None and gap <= options.mip_rel_gap else Status.FEASIBLE
    notes.insert(0, _explain(model_makespan, model_bound, cpsat_fluid, fluid, source, unit, mm, fractions, bound))
    if exact:
        notes.insert(1, f"the mode model is exact for this instance (the bandwidth never binds; time unit {unit:.6g} "
                     "s divides every latency, release and deadline)"
                     + (": CP-SAT's proven optimum is the fluid optimum and bounds it" if ms.optimal else ""))
    trace = ms.trace
    return ExactResult(
        assignment=best, simulation=sim, makespan=fluid, source=source, bound=valid, status=status,
        message="; ".join(p for p in notes if p), cpsat_fluid_makespan=cpsat_fluid, model_makespan=model_makespan,
        model_bound=model_bound, model_status=ms.status, warm_start_makespan=warm_makespan if warm_valid else None,
        bound_detail=bound, floor_detail=floor, time_unit=unit, model_stats=cm.stats(), trace=trace,
        solve_time_s=time.perf_counter() - t0, cpsat_time_s=ms.time_s)


def relaxation_message(rel: RelaxationOutcome) -> str:
    return ("no schedule meets the constraints: the policy-free relaxation (every job at least L·max(1, B/W) on "
            f"one sub-accelerator, no overlap, the constraints) is infeasible ({rel.time_s:.2g} s)")


def _no_schedule(data: MultiAccelData, status: Status, message: str, t0: float) -> ExactResult:
    return ExactResult(assignment=None, simulation=None, makespan=None, source="none", bound=None, status=status,
                       message=message, cpsat_fluid_makespan=None, model_makespan=None, model_bound=None,
                       model_status="not run" if status == Status.INFEASIBLE else "no valid schedule",
                       warm_start_makespan=None, bound_detail=None, floor_detail=None, time_unit=0.0,
                       solve_time_s=time.perf_counter() - t0)


def _explain(model_makespan: float | None, model_bound: float | None, cpsat_fluid: float | None, fluid: float,
             source: str, unit: float, mm: ModeModel, fractions: tuple[float, ...], bound: MakespanBound) -> str:
    parts = [f"returned schedule from {source}: fluid makespan {fluid:.6g} s; valid bound {bound.value:.6g} s "
             f"({bound.source})"]
    if model_makespan is not None and cpsat_fluid is not None:
        diff = cpsat_fluid - model_makespan
        parts.append(
            f"CP-SAT's schedule: model makespan {model_makespan:.6g} s (model bound {model_bound:.6g} s), fluid "
            f"makespan of the same assignment and orders {cpsat_fluid:.6g} s ({diff:+.3g} s, "
            f"{diff / max(model_makespan, 1e-300):+.2%}). The model holds each job at one constant allocation out of "
            f"{len(fractions)} modes ({', '.join(f'{f:g}' for f in sorted(fractions, reverse=True))} × min(B, W)) "
            f"and rounds durations up to {unit:.3g} s units and demands up to W/{mm.capacity}; the fluid allocator "
            "re-shares the bandwidth in proportion to B at every start and end and keeps no idle gaps, so it can "
            "be faster (no rounding, work-conserving) or slower (proportional shares slow compute-bound jobs that "
            "the model would run at full speed beside a throttled one)")
    return "; ".join(parts)
