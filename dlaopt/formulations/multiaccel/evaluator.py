"""The seed's bandwidth allocator (seed 001 §7.1.4, Algorithm 1) as an exact event-driven fluid simulation.

Semantics (the ground truth every method of the problem is judged by):

* Every sub-accelerator ``a`` runs the jobs of ``assignment.order[a]`` back to back, in that order, starting at
  time 0. A running job ``j`` on ``a`` holds the remaining data volume ``V = L[j, a]·B[j, a]`` (bytes).
* At any moment the running jobs ask for their no-stall bandwidths ``B``. If the sum of the requests fits in the
  system bandwidth every job gets what it asks for; otherwise every job gets ``B·BW_sys / ΣB`` (Algorithm 1:
  proportional shares). A job therefore never runs faster than its no-stall latency: all bandwidth-consuming jobs
  progress at the common *speed* ``s = min(1, BW_sys / ΣB)`` (fraction of their no-stall rate) and finish after
  ``L`` seconds of progress at speed 1.
* Time advances to the next completion, computed exactly (remaining volume / allocation, i.e. remaining no-stall
  time / ``s``); volumes drop by runtime × allocation; the freed sub-accelerator starts its next job at once. Jobs
  that finish at the same instant (within a relative 1e-12) finish together — where Algorithm 1 advances one
  sub-accelerator per iteration and the others then finish after a zero runtime, which is the same schedule.
* A job with ``B = 0`` (zero volume) needs no bandwidth: it runs in exactly ``L`` and is not counted in ``ΣB``. A job
  with ``L = 0`` finishes the instant it starts.
* Precedence pairs ``(before, after)`` (an option of the problem, not of the seed): a sub-accelerator whose next job
  has an unfinished predecessor idles until the last predecessor finishes, then starts it at that instant.
* Release times (user ``window`` constraints): a sub-accelerator whose next job is not released yet idles until
  its release (the latest of its windows), then starts it at that instant. A job's *start* and *finish* are those of
  this timeline; a deadline is met when the job finishes no later than it (relative tolerance 1e-9).
* User ``precedence`` constraints are precedence pairs like the option's; the user's ``allowed`` / ``forbidden`` /
  ``colocate`` constraints restrict the assignment only. :func:`check` names each one an assignment breaks
  (``"constraints[2] (colocate): ..."``), :func:`timing_violations` each window or precedence the timeline breaks.
* **Deadlock** — the orders and the precedence pairs together form a cycle (e.g. ``after`` placed before ``before``
  on the same sub-accelerator, or crossed orders on two sub-accelerators), so some sub-accelerator would wait
  forever. :func:`check` reports it as a violation (``"deadlock: ..."``) and :func:`simulate` raises
  :class:`ScheduleError`; the batch evaluator gives such an individual an infinite makespan.

Three entry points share these semantics:

* :func:`simulate` — the full :class:`~.model.Simulation` (start, end, per-segment allocation), after :func:`check`.
* :class:`FluidEvaluator` — the same simulation prepared once per instance: :meth:`FluidEvaluator.makespan` (no
  checks, no segment recording; the fast path) and :meth:`FluidEvaluator.batch_end_times` (a numpy simulation of a
  whole population at once, one event of every individual per step).
* :func:`check` — the violations of an assignment (every job exactly once, indices valid, no deadlock, the user's
  placement and colocation constraints) and of the data (finite non-negative table, positive system bandwidth);
  :func:`violations` adds those of the simulated timeline (deadlines, and as guards releases and precedence).

The scalar simulation keeps one *virtual progress clock* ``P`` (``dP/dt = s``) for the bandwidth-consuming jobs: one
started at progress ``P0`` ends when ``P = P0 + L``, so the next completion is a heap minimum and an event costs
``O(log A)`` plus the ``O(A)`` re-summing of the requests.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from dlaopt.errors import DlaoptError
from dlaopt.formulations.multiaccel.model import Assignment, MultiAccelData, Segment, Simulation

TIE_RTOL = 1e-12
"""Jobs whose completion lies within this relative distance of the current event finish with it."""


class ScheduleError(DlaoptError, ValueError):
    """An assignment the fluid simulation cannot run: invalid (see :func:`check`) or deadlocked by precedence."""


# ------------------------------------------------------------------------------------------------------ checks
def _data_violations(data: MultiAccelData) -> list[str]:
    out: list[str] = []
    t = data.table
    lat, bw = np.asarray(t.latency, dtype=float), np.asarray(t.bandwidth, dtype=float)
    shape = (t.n_jobs, t.n_accelerators)
    if lat.shape != shape or bw.shape != shape:
        out.append(f"table: latency {lat.shape} and bandwidth {bw.shape} must both be jobs × accelerators {shape}")
        return out
    if not (np.all(np.isfinite(lat)) and np.all(lat >= 0)):
        out.append("table: every no-stall latency must be finite and non-negative")
    if not (np.all(np.isfinite(bw)) and np.all(bw >= 0)):
        out.append("table: every no-stall bandwidth must be finite and non-negative")
    if not (math.isfinite(data.system_bandwidth) and data.system_bandwidth > 0):
        out.append(f"system bandwidth must be positive and finite, got {data.system_bandwidth!r}")
    for k, pair in enumerate(data.precedence):
        if (len(pair) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in pair)
                or any(not (0 <= int(x) < t.n_jobs) for x in pair)):
            out.append(f"precedence[{k}] = {pair!r}: job indices must lie in [0, {t.n_jobs})")
        elif int(pair[0]) == int(pair[1]):
            out.append(f"precedence[{k}] = {pair!r}: a job cannot precede itself")
    return out


def _cycle(n: int, edges: Sequence[tuple[int, int]]) -> list[int] | None:
    """A directed cycle (its nodes, in order) of the graph, or ``None`` when it is acyclic."""
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        succ[u].append(v)
    colour = [0] * n  # 0 new, 1 on the stack, 2 done
    parent = [-1] * n
    for root in range(n):
        if colour[root]:
            continue
        stack = [(root, iter(succ[root]))]
        colour[root] = 1
        while stack:
            u, it = stack[-1]
            for v in it:
                if colour[v] == 0:
                    colour[v], parent[v] = 1, u
                    stack.append((v, iter(succ[v])))
                    break
                if colour[v] == 1:  # back edge u -> v: the cycle is v ... u
                    cyc = [u]
                    while cyc[-1] != v:
                        cyc.append(parent[cyc[-1]])
                    return cyc[::-1]
            else:
                colour[u] = 2
                stack.pop()
    return None


def precedence_cycle(data: MultiAccelData) -> list[int] | None:
    """A cycle of the precedence pairs alone (no assignment can run them), or ``None``."""
    return _cycle(data.table.n_jobs, [(int(u), int(v)) for u, v in data.precedence])


def _constraint_violations(data: MultiAccelData, order: Sequence[Sequence[int]]) -> list[str]:
    """The user's placement (allowed / forbidden) and colocation constraints broken by a structurally valid
    assignment, one message per broken constraint, each starting with the constraint's label."""
    cons, t = data.constraints, data.table
    where: dict[int, int] = {int(j): a for a, jobs in enumerate(order) for j in jobs}
    out: list[str] = []
    for r in cons.placement:
        listed = set(r.accelerators)
        bad = [j for j in r.jobs if (where[j] in listed) != (r.kind == "allowed")]
        if bad:
            names = ", ".join(f"'{t.jobs[j]}' on '{t.accelerators[where[j]]}'" for j in bad)
            accs = ", ".join(t.accelerators[a] for a in r.accelerators)
            rule = f"allowed only on {accs}" if r.kind == "allowed" else f"forbidden on {accs}"
            out.append(f"{r.label}: {names} ({rule})")
    for r in cons.colocate:
        used = {where[j] for j in r.jobs}
        if len(used) > 1:
            out.append(f"{r.label}: the jobs run on {len(used)} sub-accelerators, not one: "
                       + ", ".join(f"'{t.jobs[j]}' on '{t.accelerators[where[j]]}'" for j in r.jobs))
    return out


def check(data: MultiAccelData, assignment: Assignment) -> list[str]:
    """Everything wrong with ``assignment`` for ``data`` (empty: :func:`simulate` will run it), the user's
    placement and colocation constraints included."""
    out = _data_violations(data)
    n_jobs, n_acc = data.table.n_jobs, data.table.n_accelerators
    order = assignment.order
    if len(order) != n_acc:
        out.append(f"the assignment has {len(order)} job lists, the platform {n_acc} sub-accelerators")
    seen: dict[int, int] = {}
    structural_ok = len(order) == n_acc
    for a, jobs in enumerate(order):
        for k, j in enumerate(jobs):
            if isinstance(j, bool) or not isinstance(j, (int, np.integer)):
                out.append(f"order[{a}][{k}] = {j!r} is not a job index")
                structural_ok = False
                continue
            j = int(j)
            if not 0 <= j < n_jobs:
                out.append(f"order[{a}][{k}] = {j} is not a job index in [0, {n_jobs})")
                structural_ok = False
            elif j in seen:
                out.append(f"job {j} appears more than once (sub-accelerators {seen[j]} and {a})")
                structural_ok = False
            else:
                seen[j] = a
    missing = [j for j in range(n_jobs) if j not in seen]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        out.append(f"{len(missing)} job(s) assigned to no sub-accelerator: {shown}")
        structural_ok = False
    if structural_ok and data.precedence and not any(v.startswith("precedence[") for v in out):
        edges = [(int(u), int(v)) for u, v in data.precedence]
        edges += [(int(jobs[k]), int(jobs[k + 1])) for jobs in order for k in range(len(jobs) - 1)]
        cyc = _cycle(n_jobs, edges)
        if cyc is not None:
            text = ("deadlock: the orders and the precedence pairs form the cycle "
                    + " -> ".join(map(str, [*cyc, cyc[0]])) + " (some sub-accelerator would wait forever)")
            on_cycle = set(zip(cyc, [*cyc[1:], cyc[0]], strict=True))
            users = [r for r in data.constraints.precedence if (r.before, r.after) in on_cycle]
            names = data.table.jobs
            out.extend(f"{r.label}: '{names[r.after]}' must wait for '{names[r.before]}', but the orders make it "
                       f"wait forever ({text})" for r in users)
            if not users:
                out.append(text)
    if structural_ok:
        out.extend(_constraint_violations(data, order))
    return out


def timing_violations(data: MultiAccelData, sim: Simulation) -> list[str]:
    """The user's windows and precedence constraints broken by a simulated timeline, each message starting with the
    constraint's label. (The timeline waits for releases and predecessors, so only a deadline can be missed by a
    valid assignment; the other checks guard the simulation itself.)"""
    t, out = data.table, []
    us = 1e6
    for r in data.constraints.windows:
        for j in r.jobs:
            s_j, e_j = float(sim.start[j]), float(sim.end[j])
            if r.release is not None and s_j < r.release * (1 - 1e-9) - 1e-15:
                out.append(f"{r.label}: job '{t.jobs[j]}' starts at {s_j * us:.6g} µs, before its release "
                           f"{r.release * us:.6g} µs")
            if r.deadline is not None and e_j > r.deadline * (1 + 1e-9) + 1e-15:
                out.append(f"{r.label}: job '{t.jobs[j]}' finishes at {e_j * us:.6g} µs, after its deadline "
                           f"{r.deadline * us:.6g} µs")
    for r in data.constraints.precedence:
        s_a, e_b = float(sim.start[r.after]), float(sim.end[r.before])
        if s_a < e_b * (1 - 1e-9) - 1e-15:
            out.append(f"{r.label}: job '{t.jobs[r.after]}' starts at {s_a * us:.6g} µs, before "
                       f"'{t.jobs[r.before]}' finishes at {e_b * us:.6g} µs")
    return out


def violations(data: MultiAccelData, assignment: Assignment) -> list[str]:
    """Every violation of ``assignment``: :func:`check`, then (when it runs) :func:`timing_violations` of its
    simulation. Empty: the assignment is a solution."""
    out = check(data, assignment)
    if out:
        return out
    return timing_violations(data, FluidEvaluator(data).simulate(assignment, validate=False))


# ------------------------------------------------------------------------------------------------- evaluator
class FluidEvaluator:
    """The fluid simulation prepared for one instance (the table as Python lists, the precedence graph)."""

    def __init__(self, data: MultiAccelData) -> None:
        self.data = data
        t = data.table
        self.n_jobs, self.n_acc = t.n_jobs, t.n_accelerators
        self.latency = np.asarray(t.latency, dtype=float)
        self.bandwidth = np.asarray(t.bandwidth, dtype=float)
        self._lat: list[list[float]] = self.latency.tolist()
        self._bw: list[list[float]] = self.bandwidth.tolist()
        self.system_bandwidth = float(data.system_bandwidth)
        self.total_ops = float(np.sum(t.ops)) if len(t.ops) else 0.0
        self.succ: list[list[int]] = [[] for _ in range(self.n_jobs)]
        self.indegree: list[int] = [0] * self.n_jobs
        for u, v in {(int(u), int(v)) for u, v in data.precedence}:
            self.succ[u].append(v)
            self.indegree[v] += 1
        for s in self.succ:
            s.sort()
        self.has_precedence = any(self.indegree)
        release = [0.0] * self.n_jobs
        for r in data.constraints.windows:
            if r.release is not None:
                for j in r.jobs:
                    release[j] = max(release[j], float(r.release))
        self._release = release
        self.release = np.asarray(release, dtype=float)
        self.has_release = any(x > 0.0 for x in release)

    # ---------------------------------------------------------------------------------------------- scalar
    def _run(self, order: Sequence[Sequence[int]], record: bool
             ) -> tuple[list[float], list[float], list[Segment], bool]:
        """Start and end per job, the segments (if ``record``) and whether every job ran (``False``: deadlock)."""
        lat, bw, bw_sys, release = self._lat, self._bw, self.system_bandwidth, self._release
        n_acc = len(order)
        start = [math.nan] * self.n_jobs
        end = [math.nan] * self.n_jobs
        segments: list[Segment] = []
        preds_left = list(self.indegree)
        succ = self.succ
        ptr = [0] * n_acc
        cur = [-1] * n_acc  # running job per sub-accelerator
        bcur = [0.0] * n_acc  # its request (0 when idle or a zero-bandwidth job)
        bw_heap: list[tuple[float, int]] = []  # (progress at which it ends, sub-accelerator)
        rt_heap: list[tuple[float, int]] = []  # (time at which it ends, sub-accelerator): zero-bandwidth jobs
        rel_heap: list[tuple[float, int]] = []  # (release, sub-accelerator): idle until its next job is released
        waiting = [False] * n_acc
        t = 0.0
        prog = 0.0

        def try_start(a: int) -> None:
            jobs = order[a]
            if cur[a] >= 0 or ptr[a] >= len(jobs):
                return
            j = jobs[ptr[a]]
            if preds_left[j]:
                return
            if release[j] > t:
                if not waiting[a]:
                    waiting[a] = True
                    heapq.heappush(rel_heap, (release[j], a))
                return
            ptr[a] += 1
            cur[a] = j
            start[j] = t
            b = bw[j][a]
            if b > 0.0:
                bcur[a] = b
                heapq.heappush(bw_heap, (prog + lat[j][a], a))
            else:
                heapq.heappush(rt_heap, (t + lat[j][a], a))

        for a in range(n_acc):
            try_start(a)
        while bw_heap or rt_heap or rel_heap:
            total = sum(bcur)
            s = bw_sys / total if total > bw_sys else 1.0
            t_bw = t + (bw_heap[0][0] - prog) / s if bw_heap else math.inf
            t_rt = rt_heap[0][0] if rt_heap else math.inf
            t_rel = rel_heap[0][0] if rel_heap else math.inf
            if t_rel < min(t_bw, t_rt):  # a release comes first: the waiting sub-accelerators start then
                t_next = max(t, t_rel)
                if record and t_next > t:
                    run = [a for a in range(n_acc) if cur[a] >= 0]
                    segments.append(Segment(t, t_next, tuple(cur[a] for a in run), tuple(bcur[a] * s for a in run)))
                prog += (t_next - t) * s
                t = t_next
                while rel_heap and rel_heap[0][0] <= t:
                    a = heapq.heappop(rel_heap)[1]
                    waiting[a] = False
                    try_start(a)
                continue
            if t_bw <= t_rt:
                t_next = max(t, t_bw)
                new_prog = max(prog, bw_heap[0][0])
            else:
                t_next = max(t, t_rt)
                new_prog = prog + (t_next - t) * s
            if record and t_next > t:
                run = [a for a in range(n_acc) if cur[a] >= 0]
                segments.append(Segment(t, t_next, tuple(cur[a] for a in run), tuple(bcur[a] * s for a in run)))
            t, prog = t_next, new_prog
            freed: list[int] = []
            lim = prog + TIE_RTOL * prog
            while bw_heap and bw_heap[0][0] <= lim:
                freed.append(heapq.heappop(bw_heap)[1])
            lim = t + TIE_RTOL * t
            while rt_heap and rt_heap[0][0] <= lim:
                freed.append(heapq.heappop(rt_heap)[1])
            unlocked = False
            for a in freed:
                j = cur[a]
                end[j] = t
                cur[a] = -1
                bcur[a] = 0.0
                for v in succ[j]:
                    preds_left[v] -= 1
                    unlocked = True
            if unlocked:
                for a in range(n_acc):
                    try_start(a)
            else:
                for a in freed:
                    try_start(a)
        complete = all(ptr[a] == len(order[a]) for a in range(n_acc))
        return start, end, segments, complete

    def times(self, order: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray] | None:
        """Start and end of every job of a *valid* assignment's orders (no checks; ``None`` when it deadlocks)."""
        start, end, _, complete = self._run(order, record=False)
        if not complete:
            return None
        return np.asarray(start, dtype=float), np.asarray(end, dtype=float)

    def makespan(self, order: Sequence[Sequence[int]]) -> float:
        """The makespan of a *valid* assignment's orders (no checks; ``inf`` when it deadlocks)."""
        if not self.system_bandwidth > 0:
            raise ScheduleError(f"system bandwidth must be positive, got {self.system_bandwidth!r}")
        _, end, _, complete = self._run(order, record=False)
        if not complete:
            return math.inf
        return max(end) if end else 0.0

    def simulate(self, assignment: Assignment, *, validate: bool = True) -> Simulation:
        """The full simulation; raises :class:`ScheduleError` on an invalid or deadlocked assignment."""
        if validate:
            problems = check(self.data, assignment)
            if problems:
                raise ScheduleError("cannot simulate the assignment: " + "; ".join(problems))
        order = [[int(j) for j in jobs] for jobs in assignment.order]
        start, end, segments, complete = self._run(order, record=True)
        if not complete:
            raise ScheduleError("the assignment deadlocks: a sub-accelerator waits forever for a predecessor")
        return Simulation(start=np.asarray(start, dtype=float), end=np.asarray(end, dtype=float),
                          accelerator=assignment.accelerator_of(self.n_jobs), segments=tuple(segments),
                          total_ops=self.total_ops)

    # ----------------------------------------------------------------------------------------------- batch
    def batch_end_times(self, queues: np.ndarray) -> np.ndarray:
        """End time of every job of every individual, ``[P, J]`` (``inf`` for the jobs of a deadlocked individual).

        ``queues[p, a, k]`` is the ``k``-th job of sub-accelerator ``a`` in individual ``p``, padded with ``-1``;
        every individual must hold every job exactly once (see :func:`queues_from_orders`,
        :func:`queues_from_genomes`). Same semantics as the scalar simulation: all individuals advance one event
        per step.
        """
        q = np.asarray(queues, dtype=np.int64)
        n_pop, n_acc, _ = q.shape
        if n_acc != self.n_acc:
            raise ValueError(f"queues have {n_acc} sub-accelerators, the platform {self.n_acc}")
        if self.system_bandwidth <= 0:
            raise ValueError("the system bandwidth must be positive")
        q = np.concatenate([q, np.full((n_pop, n_acc, 1), -1, dtype=np.int64)], axis=2)  # sentinel column
        lat, bwt, bw_sys = self.latency, self.bandwidth, self.system_bandwidth
        rows = np.arange(n_pop)[:, None]
        cols = np.arange(n_acc)[None, :]
        ptr = np.zeros((n_pop, n_acc), dtype=np.int64)
        cur = np.full((n_pop, n_acc), -1, dtype=np.int64)
        tau = np.zeros((n_pop, n_acc))  # remaining no-stall time of the running job
        bcur = np.zeros((n_pop, n_acc))
        t = np.zeros(n_pop)
        end = np.full((n_pop, self.n_jobs), np.inf)
        prec = self.has_precedence
        rel = self.has_release
        release = self.release
        if prec:
            # counts kept as floats so that the decrement is one BLAS product (exact for these small integers)
            preds_left = np.tile(np.asarray(self.indegree, dtype=float), (n_pop, 1))
            succ_mat = np.zeros((self.n_jobs, self.n_jobs))
            for u, vs in enumerate(self.succ):
                succ_mat[u, vs] = 1.0
        while True:
            # start the next job wherever a sub-accelerator is free and its next job is ready
            head = q[rows, cols, ptr]
            can = (cur < 0) & (head >= 0)
            if prec:
                can &= preds_left[rows, np.maximum(head, 0)] == 0
            wait = np.zeros_like(can)
            if rel:  # a head not released yet keeps its sub-accelerator idle until its release
                r_head = release[np.maximum(head, 0)]
                wait = can & (r_head > t[:, None])
                can &= ~wait
            if can.any():
                h = np.where(can, head, 0)
                cur = np.where(can, head, cur)
                ptr = ptr + can
                tau = np.where(can, lat[h, cols], tau)
                bcur = np.where(can, bwt[h, cols], bcur)
            running = cur >= 0
            if not running.any() and not wait.any():
                break
            total = bcur.sum(axis=1)
            over = total > bw_sys
            s = np.where(over, bw_sys / np.where(over, total, 1.0), 1.0)
            speed = np.where(bcur > 0, s[:, None], 1.0)
            ft = np.where(running, tau / speed, np.inf)
            dt = ft.min(axis=1)
            if rel:
                r_next = np.where(wait, r_head, np.inf).min(axis=1)
                first = r_next - t < dt
                dt = np.where(first, r_next - t, dt)
            active = np.isfinite(dt)
            dt = np.where(active, dt, 0.0)
            t_new = t + dt
            if rel:
                t_new = np.where(first, r_next, t_new)  # land on the release exactly
            done = running & (ft <= (t_new + TIE_RTOL * t_new)[:, None] - t[:, None])
            tau = np.where(running, tau - dt[:, None] * speed, tau)
            pr, pa = np.nonzero(done)
            jobs = cur[pr, pa]
            end[pr, jobs] = t_new[pr]
            cur = np.where(done, -1, cur)
            bcur = np.where(done, 0.0, bcur)
            if prec and jobs.size:
                uniq, col = np.unique(jobs, return_inverse=True)
                fin = np.zeros((n_pop, uniq.size))
                fin[pr, col] = 1.0
                preds_left -= fin @ succ_mat[uniq]
            t = t_new
        return end

    def batch_makespan(self, queues: np.ndarray) -> np.ndarray:
        """Makespan per individual, ``[P]`` (``inf`` where it deadlocks)."""
        end = self.batch_end_times(queues)
        return end.max(axis=1) if end.shape[1] else np.zeros(end.shape[0])


# ------------------------------------------------------------------------------------------ queue builders
def queues_from_orders(orders: Sequence[Sequence[Sequence[int]]], n_acc: int) -> np.ndarray:
    """``[P, A, K]`` job queues (padded with ``-1``) from per-individual orders (``Assignment.order`` lists)."""
    depth = max((len(jobs) for order in orders for jobs in order), default=0)
    q = np.full((len(orders), n_acc, max(depth, 1)), -1, dtype=np.int64)
    for p, order in enumerate(orders):
        for a, jobs in enumerate(order):
            q[p, a, : len(jobs)] = jobs
    return q


def queues_from_genomes(accel: np.ndarray, key: np.ndarray, n_acc: int,
                        tiebreak: np.ndarray | None = None) -> np.ndarray:
    """``[P, A, J]`` job queues from MAGMA genomes: job ``j`` of individual ``p`` runs on ``accel[p, j]``, and the
    jobs of one sub-accelerator run by increasing ``key`` (ties: increasing ``tiebreak[j]``, default the job
    index)."""
    accel = np.asarray(accel, dtype=np.int64)
    n_pop, n_jobs = accel.shape
    tie = np.arange(n_jobs) if tiebreak is None else np.asarray(tiebreak)
    idx = np.lexsort((np.broadcast_to(tie, accel.shape), np.asarray(key, dtype=float), accel), axis=1)  # per row
    acc_sorted = np.take_along_axis(accel, idx, axis=1)
    counts = np.zeros((n_pop, n_acc), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n_pop), n_jobs), accel.ravel()), 1)
    first = np.cumsum(counts, axis=1) - counts  # position of each accelerator's first job in the sorted row
    slot = np.arange(n_jobs)[None, :] - np.take_along_axis(first, acc_sorted, axis=1)
    q = np.full((n_pop, n_acc, max(n_jobs, 1)), -1, dtype=np.int64)
    q[np.arange(n_pop)[:, None], acc_sorted, slot] = idx
    return q


def orders_from_queues(queues: np.ndarray) -> list[list[list[int]]]:
    """The per-individual orders of ``[P, A, K]`` queues."""
    return [[[int(j) for j in row if j >= 0] for row in ind] for ind in np.asarray(queues)]


# ---------------------------------------------------------------------------------------- module functions
def simulate(data: MultiAccelData, assignment: Assignment) -> Simulation:
    """The seed's bandwidth allocator run on ``assignment`` (see the module docstring); raises
    :class:`ScheduleError` when :func:`check` finds a violation (a deadlock included)."""
    return FluidEvaluator(data).simulate(assignment)


def makespan(data: MultiAccelData, assignment: Assignment) -> float:
    """Seconds until the last job finishes (after :func:`check`)."""
    return simulate(data, assignment).makespan


__all__ = ["TIE_RTOL", "FluidEvaluator", "ScheduleError", "check", "makespan", "orders_from_queues",
           "queues_from_genomes", "queues_from_orders", "simulate"]
