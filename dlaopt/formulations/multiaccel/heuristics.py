"""Heuristic methods of the multi-accelerator assignment problem (seed 001 Chapter 7, Table 7.3).

Every method has the signature ``(data, *, seed=0, time_limit=None, budget=None, warm_start=None) -> Assignment``
(:data:`HEURISTICS`); the constructive ones ignore ``time_limit``, ``budget`` and ``warm_start``, and every one but
``random`` and ``magma`` ignores ``seed``. Each returns a valid assignment (every job exactly once); with precedence
pairs the per-sub-accelerator orders are always subsequences of one precedence-respecting global order, so the
schedule never deadlocks. The fluid evaluator (:mod:`.evaluator`) prices all of them.

Estimates used by the constructive methods: the *standalone duration* of job ``j`` on sub-accelerator ``a``,
``d[j, a] = max(L[j, a], V[j, a] / BW_sys)`` — its duration when it runs alone and may use the whole system
bandwidth (the allocator then gives it ``min(B, BW_sys)``). It accounts for a job that alone needs more than the
system bandwidth, but not for contention between concurrent jobs (which only the fluid simulation sees).

* ``herald`` — Herald-like (Kwon et al., HPCA 2021; the seed's "manual-tuned mapper for multi-core heterogeneous
  accelerators targeting vision"): the jobs are walked **breadth-first across tenants** (the first job of every
  tenant in the group, then the second of every tenant, ...; within a tenant the group's order, which is its layer
  order), and each goes to the sub-accelerator on which it would **finish earliest** given the loads so far (load
  = sum of the standalone durations already placed there; with precedence, no earlier than the estimated end of its
  predecessors). The earliest-finish rule is what makes it dataflow-aware (a layer goes to the sub-accelerator style
  that runs it fastest) and load-balancing at once; bandwidth enters only through ``d``.
* ``ai-mt`` — AI-MT-like (Baek et al., ISCA 2020). AI-MT targets *homogeneous* PE arrays: it splits layers into
  blocks, classifies them as memory-intensive (weight fetch dominates, e.g. FC / embedding layers) or
  compute-intensive (convolutions), and issues them so that memory-intensive blocks' fetches overlap
  compute-intensive blocks' execution, balancing the memory bandwidth against the PEs. The simple version here, at
  job granularity: rank the jobs by bandwidth intensity (mean no-stall bandwidth over the sub-accelerators) and
  build the issue sequence by **interleaving the most and the least bandwidth-intensive remaining jobs** (highest,
  lowest, second highest, second lowest, ...); deal the sequence **round-robin** over the sub-accelerators, the
  starting sub-accelerator rotating by one every round so that with an even count a sub-accelerator alternates
  between memory- and compute-intensive jobs. Each round thus runs about half memory-heavy and half compute-heavy
  jobs concurrently. It ignores heterogeneity (latencies are never compared), as AI-MT does.
* ``lpt`` — longest processing time first list scheduling: jobs by **decreasing work** ``min_a d[j, a]`` (with
  precedence: among the jobs whose predecessors are placed), each to the sub-accelerator where it finishes earliest
  (the usual extension of LPT to unrelated machines; with identical sub-accelerators it is Graham's LPT).
* ``random`` — a uniformly random sub-accelerator and a uniformly random priority per job, decoded like a MAGMA
  individual (seeded).
* ``magma`` — the seed's genetic algorithm (§7.2), see :func:`run_magma`.

**User constraints** (``data.constraints``). Every method keeps each job where its colocation group may run
(the placement constraints of all its members) and a group on one sub-accelerator: the earliest-finish methods
choose among those, the first job of a group where the whole group would finish first, and send the others
where it went; ``ai-mt`` deals a job to the next sub-accelerator
in its rotation that the group may use; ``random`` and ``magma`` map every sub-accelerator gene into the group's
allowed set and give the group its first job's gene. Precedence constraints are precedence pairs (the orders follow
one precedence-respecting global order); the estimates start no job before its release. ``herald`` and ``lpt``
walk the jobs with a deadline first, earliest deadline first, then by release (a job released late would keep its
sub-accelerator idle until then, so it goes after the others), and MAGMA ranks every schedule that
misses one after every schedule that does not (tardiness penalty). A method whose schedule still misses a deadline
(by the fluid evaluator) raises :class:`~dlaopt.formulations.base.HeuristicFailure`: it found nothing.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlaopt.formulations.base import HeuristicFailure
from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, check, queues_from_genomes
from dlaopt.formulations.multiaccel.model import Assignment, MultiAccelData

Heuristic = Callable[..., Assignment]

MAGMA_POPULATION = 100
MAGMA_EPOCHS = 100
MUTATION_RATE = 0.05
CROSSOVER_GEN_RATE = 0.9
CROSSOVER_RG_RATE = 0.05
CROSSOVER_ACCEL_RATE = 0.05
ELITE_RATIO = 0.05
PARENT_RATIO = 0.1


# ------------------------------------------------------------------------------------------------- helpers
def standalone_durations(data: MultiAccelData) -> np.ndarray:
    """``d[j, a] = max(L, L·B / BW_sys)``: job ``j`` alone on sub-accelerator ``a`` with the whole system bandwidth."""
    lat = np.asarray(data.table.latency, dtype=float)
    vol = lat * np.asarray(data.table.bandwidth, dtype=float)
    return np.maximum(lat, vol / float(data.system_bandwidth))


def _graph(data: MultiAccelData) -> tuple[list[list[int]], list[list[int]]]:
    n = data.table.n_jobs
    preds: list[list[int]] = [[] for _ in range(n)]
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in sorted({(int(u), int(v)) for u, v in data.precedence}):
        preds[v].append(u)
        succ[u].append(v)
    return preds, succ


def topological_order(data: MultiAccelData, key: Sequence[object] | None = None) -> list[int]:
    """All jobs in a precedence-respecting order, always taking the ready job of smallest ``key`` (default: the
    job index); without precedence simply the jobs sorted by ``key``. Raises ``ValueError`` on a precedence cycle."""
    n = data.table.n_jobs
    keys: Sequence[object] = list(range(n)) if key is None else key
    preds, succ = _graph(data)
    left = [len(p) for p in preds]
    heap = [(keys[j], j) for j in range(n) if not left[j]]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        _, j = heapq.heappop(heap)
        out.append(j)
        for v in succ[j]:
            left[v] -= 1
            if not left[v]:
                heapq.heappush(heap, (keys[v], v))
    if len(out) != n:
        raise ValueError("the precedence pairs contain a cycle")
    return out


def _where(data: MultiAccelData) -> tuple[np.ndarray, np.ndarray]:
    """``[J, A]`` where each job may run (its colocation group's placement constraints) and ``[J]`` the group
    leader of every job (itself without colocation)."""
    n, m = data.table.n_jobs, data.table.n_accelerators
    if not data.constraints:
        return np.ones((n, m), dtype=bool), np.arange(n)
    return data.constraints.group_mask(n, m), data.constraints.leaders(n)


def placement_repair(data: MultiAccelData) -> Callable[[np.ndarray], np.ndarray] | None:
    """A map of sub-accelerator genomes ``[P, J]`` onto the user's placement and colocation constraints: a job's
    gene becomes its group leader's, and a sub-accelerator the group may not use becomes one it may (the allowed
    ones in turn, so the map stays spread). ``None`` without such constraints."""
    cons = data.constraints
    if not (cons.placement or cons.colocate):
        return None
    mask, lead = _where(data)
    n, m = mask.shape
    fix = np.tile(np.arange(m), (n, 1))
    for j in range(n):
        ok = np.flatnonzero(mask[j])
        if ok.size == 0:
            raise HeuristicFailure(f"job '{data.table.jobs[j]}' may run on no sub-accelerator")
        bad = ~mask[j]
        fix[j, bad] = ok[np.arange(m)[bad] % ok.size]
    return lambda accel: fix[lead[None, :], np.asarray(accel)[:, lead]]


def _deadline_key(data: MultiAccelData) -> np.ndarray | None:
    """``[J]`` deadlines (``inf`` where none), or ``None`` when no job has one."""
    d = data.constraints.deadline(data.table.n_jobs) if data.constraints.windows else None
    return d if d is not None and np.isfinite(d).any() else None


def deliver(data: MultiAccelData, assignment: Assignment, method: str) -> Assignment:
    """``assignment`` when its fluid timeline meets every deadline of the user's windows; otherwise
    :class:`HeuristicFailure` naming the first missed one."""
    deadline = _deadline_key(data)
    if deadline is None:
        return assignment
    times = FluidEvaluator(data).times(assignment.order)
    if times is None:
        raise HeuristicFailure(f"{method}: its schedule deadlocks")
    end = times[1]
    late = np.flatnonzero(end > deadline * (1 + 1e-9) + 1e-15)
    if late.size:
        j = int(late[0])
        labels = [r.label for r in data.constraints.windows if j in r.jobs and r.deadline is not None
                  and end[j] > r.deadline * (1 + 1e-9) + 1e-15]
        raise HeuristicFailure(f"{method}: found no schedule meeting the deadlines: job '{data.table.jobs[j]}' "
                               f"finishes at {end[j] * 1e6:.6g} µs ({', '.join(labels)}; {late.size} job(s) late)")
    return assignment


def _require_accelerators(data: MultiAccelData) -> None:
    if data.table.n_accelerators == 0:
        raise ValueError("the platform has no sub-accelerator")


def _lists(sequence: Sequence[int], accel: Sequence[int], n_acc: int) -> Assignment:
    order: list[list[int]] = [[] for _ in range(n_acc)]
    for j in sequence:
        order[int(accel[j])].append(int(j))
    return Assignment(order)


def _earliest_finish(data: MultiAccelData, sequence: Sequence[int]) -> Assignment:
    """Walk ``sequence`` (precedence-respecting), each job to the sub-accelerator where it finishes earliest by the
    standalone durations (ties: lower index)."""
    _require_accelerators(data)
    d = standalone_durations(data)
    preds, _ = _graph(data)
    n_jobs, n_acc = d.shape
    mask, lead = _where(data)
    release = data.release
    placed: dict[int, int] = {}
    load = np.zeros(n_acc)
    finish = np.zeros(n_jobs)
    accel = np.zeros(n_jobs, dtype=int)
    group_work = np.zeros_like(d)  # a colocation group's total work per sub-accelerator
    np.add.at(group_work, lead, d)
    for j in sequence:
        ready = max([float(release[j]), *(finish[u] for u in preds[j])])
        ends = np.where(mask[j], np.maximum(load, ready) + d[j], np.inf)
        g = int(lead[j])
        if g not in placed:  # the group's first job: where the whole group would finish first
            placed[g] = int(np.argmin(np.where(mask[j], np.maximum(load, ready) + group_work[g], np.inf)))
        a = placed[g]
        accel[j], finish[j], load[a] = a, ends[a], ends[a]
    return _lists(sequence, accel, n_acc)


# --------------------------------------------------------------------------------------- constructive methods
def herald(data: MultiAccelData, *, seed: int = 0, time_limit: float | None = None, budget: int | None = None,
           warm_start: Assignment | None = None) -> Assignment:
    """Herald-like: breadth-first across tenants, each job to its earliest-finishing sub-accelerator."""
    tenants = data.table.tenants
    first: dict[str, int] = {}
    rank_in_tenant: list[int] = []
    count: dict[str, int] = {}
    for t in tenants:
        first.setdefault(t, len(first))
        rank_in_tenant.append(count.get(t, 0))
        count[t] = count.get(t, 0) + 1
    dl, rel = _deadline_key(data), data.release
    key = [(float(dl[j]) if dl is not None else 0.0, float(rel[j]), rank_in_tenant[j], first[tenants[j]], j)
           for j in range(data.table.n_jobs)]
    return deliver(data, _earliest_finish(data, topological_order(data, key)), "herald")


def lpt(data: MultiAccelData, *, seed: int = 0, time_limit: float | None = None, budget: int | None = None,
        warm_start: Assignment | None = None) -> Assignment:
    """Longest processing time first, each job to its earliest-finishing sub-accelerator."""
    _require_accelerators(data)
    work = standalone_durations(data).min(axis=1)
    dl, rel = _deadline_key(data), data.release
    key = [(float(dl[j]) if dl is not None else 0.0, float(rel[j]), -float(work[j]), j)
           for j in range(data.table.n_jobs)]
    return deliver(data, _earliest_finish(data, topological_order(data, key)), "lpt")


def ai_mt(data: MultiAccelData, *, seed: int = 0, time_limit: float | None = None, budget: int | None = None,
          warm_start: Assignment | None = None) -> Assignment:
    """AI-MT-like: memory- and compute-intensive jobs interleaved, dealt round-robin (rotating each round)."""
    _require_accelerators(data)
    n_jobs, n_acc = data.table.n_jobs, data.table.n_accelerators
    intensity = np.asarray(data.table.bandwidth, dtype=float).mean(axis=1)
    by_bw = sorted(range(n_jobs), key=lambda j: (-float(intensity[j]), j))
    position = [0] * n_jobs
    lo, hi = 0, n_jobs - 1
    for k in range(n_jobs):
        if k % 2 == 0:
            position[by_bw[lo]] = k
            lo += 1
        else:
            position[by_bw[hi]] = k
            hi -= 1
    sequence = topological_order(data, position)
    mask, lead = _where(data)
    placed: dict[int, int] = {}
    accel = np.zeros(n_jobs, dtype=int)
    for k, j in enumerate(sequence):
        a = (k % n_acc + k // n_acc) % n_acc
        g = int(lead[j])
        if g in placed:
            a = placed[g]
        elif not mask[j, a]:  # the next sub-accelerator of the rotation that the job's group may use
            a = next(b % n_acc for b in range(a, a + n_acc) if mask[j, b % n_acc])
        placed[g] = a
        accel[j] = a
    return deliver(data, _lists(sequence, accel, n_acc), "ai-mt")


# ------------------------------------------------------------------------------------------- genome decoding
class GenomeDecoder:
    """MAGMA's decoding (seed §7.1.1): job ``j`` runs on sub-accelerator ``accel[j]``; the jobs of a sub-accelerator
    run by increasing priority (lower = earlier). With precedence pairs the priority is first closed upwards along
    the precedence edges (``key[v] = max(prio[v], key[u])`` for every ``u → v``; ties by a fixed topological rank),
    so the orders follow one precedence-respecting global order and never deadlock; without precedence ``key =
    prio``, the seed's decoding exactly."""

    def __init__(self, data: MultiAccelData) -> None:
        self.n_jobs, self.n_acc = data.table.n_jobs, data.table.n_accelerators
        self.preds, _ = _graph(data)
        self.has_precedence = bool(data.precedence)
        topo = topological_order(data)
        self.rank = np.empty(self.n_jobs, dtype=np.int64)
        self.rank[topo] = np.arange(self.n_jobs)
        self._closure = [(v, np.asarray(self.preds[v])) for v in topo if self.preds[v]]

    def keys(self, prio: np.ndarray) -> np.ndarray:
        key = np.array(prio, dtype=float, copy=True)
        for v, ps in self._closure:
            key[:, v] = np.maximum(key[:, v], key[:, ps].max(axis=1))
        return key

    def queues(self, accel: np.ndarray, prio: np.ndarray) -> np.ndarray:
        """``[P, A, J]`` queues for :meth:`FluidEvaluator.batch_end_times`."""
        if not self.has_precedence:
            return queues_from_genomes(accel, prio, self.n_acc)
        return queues_from_genomes(accel, self.keys(prio), self.n_acc, tiebreak=self.rank)

    def assignment(self, accel: np.ndarray, prio: np.ndarray) -> Assignment:
        """One individual (``accel``, ``prio`` of shape ``[J]``) as an assignment."""
        q = self.queues(np.asarray(accel)[None, :], np.asarray(prio)[None, :])[0]
        return Assignment([[int(j) for j in row if j >= 0] for row in q])

    def encode(self, assignment: Assignment) -> tuple[np.ndarray, np.ndarray]:
        """Genomes that decode to ``assignment`` exactly (it must be valid and deadlock-free): its sub-accelerators,
        and as priorities the ranks in a global order that respects both its lists and the precedence."""
        accel = assignment.accelerator_of(self.n_jobs)
        succ: list[list[int]] = [[] for _ in range(self.n_jobs)]
        left = [len(p) for p in self.preds]
        for v, ps in enumerate(self.preds):
            for u in ps:
                succ[u].append(v)
        for jobs in assignment.order:
            for u, v in zip(jobs[:-1], jobs[1:], strict=True):
                succ[int(u)].append(int(v))
                left[int(v)] += 1
        heap = [j for j in range(self.n_jobs) if not left[j]]
        heapq.heapify(heap)
        seq: list[int] = []
        while heap:
            u = heapq.heappop(heap)
            seq.append(u)
            for v in succ[u]:
                left[v] -= 1
                if not left[v]:
                    heapq.heappush(heap, v)
        if len(seq) != self.n_jobs:
            raise ValueError("the warm start deadlocks with the precedence pairs")
        prio = np.empty(self.n_jobs)
        prio[seq] = (np.arange(self.n_jobs) + 0.5) / max(self.n_jobs, 1)
        return accel.astype(np.int64), prio


def random_assignment(data: MultiAccelData, *, seed: int = 0, time_limit: float | None = None,
                      budget: int | None = None, warm_start: Assignment | None = None) -> Assignment:
    """A uniformly random sub-accelerator and priority per job (seeded), decoded like a MAGMA individual."""
    _require_accelerators(data)
    rng = np.random.default_rng(seed)
    n_jobs, n_acc = data.table.n_jobs, data.table.n_accelerators
    accel = rng.integers(0, n_acc, n_jobs)
    prio = rng.random(n_jobs)
    repair = placement_repair(data)
    if repair is not None:
        accel = repair(accel[None, :])[0]
    return deliver(data, GenomeDecoder(data).assignment(accel, prio), "random")


# ---------------------------------------------------------------------------------------------------- MAGMA
@dataclass
class MagmaResult:
    """What a MAGMA run found and how: the best assignment and its fitness (the evaluator's makespan, or mean
    completion for that objective), the best fitness after the initial population and after every generation,
    the evaluations spent."""

    assignment: Assignment
    fitness: float
    initial_best: float
    history: list[float] = field(default_factory=list)  # best so far: [initial population, generation 1, ...]
    evaluations: int = 0
    generations: int = 0
    elapsed_s: float = 0.0
    stopped_by_time: bool = False
    meets_deadlines: bool = True  # False: every schedule it saw misses a deadline of the user's windows


class _Magma:
    def __init__(self, data: MultiAccelData, rng: np.random.Generator, *, population: int,
                 rates: tuple[float, float, float, float], elite_ratio: float, parent_ratio: float) -> None:
        self.data = data
        self.rng = rng
        self.n_jobs, self.n_acc = data.table.n_jobs, data.table.n_accelerators
        self.ev = FluidEvaluator(data)
        self.decoder = GenomeDecoder(data)
        self.population = population
        self.mutation, self.x_gen, self.x_rg, self.x_acc = rates
        self.n_elite = max(1, int(round(population * elite_ratio)))
        self.n_parent = min(population, max(2, int(math.ceil(population * parent_ratio))))
        self.mean_objective = data.objective == "mean_completion"
        self.evaluations = 0
        self.repair = placement_repair(data)
        self.deadline = _deadline_key(data)
        self.penalty = 0.0
        if self.deadline is not None:
            # more than the makespan of any schedule: every job at its slowest fluid speed, one after another,
            # after the last release
            lat = np.asarray(data.table.latency, dtype=float)
            bw = np.asarray(data.table.bandwidth, dtype=float)
            slow = max(1.0, float(bw.max(axis=0).sum()) / float(data.system_bandwidth))
            self.penalty = 2.0 * (float(data.release.max()) + float(lat.max(axis=1).sum()) * slow) + 1e-9

    def fitness(self, accel: np.ndarray, prio: np.ndarray) -> np.ndarray:
        end = self.ev.batch_end_times(self.decoder.queues(accel, prio))
        self.evaluations += accel.shape[0]
        if not self.n_jobs:
            return np.zeros(accel.shape[0])
        value = end.mean(axis=1) if self.mean_objective else end.max(axis=1)
        if self.deadline is not None:  # a schedule that misses a deadline ranks after every one that does not
            late = np.maximum(0.0, end - self.deadline[None, :] * (1 + 1e-9) - 1e-15).sum(axis=1)
            value = value + np.where(late > 0, self.penalty + late, 0.0)
        return value

    def feasible(self, fitness: float) -> bool:
        return self.deadline is None or fitness < self.penalty

    def fixed(self, accel: np.ndarray) -> np.ndarray:
        return accel if self.repair is None else self.repair(accel)

    # --------------------------------------------------------------------------------------------- operators
    def random_genes(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return self.fixed(self.rng.integers(0, self.n_acc, (n, self.n_jobs))), self.rng.random((n, self.n_jobs))

    def mutate(self, accel: np.ndarray, prio: np.ndarray, rate: float) -> None:
        """Every gene of either genome replaced by a random value with probability ``rate`` (in place)."""
        m = self.rng.random(accel.shape) < rate
        accel[m] = self.rng.integers(0, self.n_acc, int(m.sum()))
        m = self.rng.random(prio.shape) < rate
        prio[m] = self.rng.random(int(m.sum()))

    def pick_pairs(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` pairs of distinct parents among the best ``n_parent`` (linear rank weights: best most likely)."""
        w = np.arange(self.n_parent, 0, -1, dtype=float)
        w /= w.sum()
        a = self.rng.choice(self.n_parent, n, p=w)
        b = self.rng.choice(self.n_parent, n, p=w)
        clash = a == b
        while clash.any():
            b[clash] = self.rng.choice(self.n_parent, int(clash.sum()), p=w)
            clash = a == b
        return a, b

    def children(self, accel: np.ndarray, prio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One generation of ``population`` children from the sorted population (best first)."""
        n, n_jobs = self.population, self.n_jobs
        n_pairs = (n + 1) // 2
        cols = np.arange(n_jobs)[None, :]
        # crossover-gen: per pair, with probability x_gen, one genome (chosen at random) exchanges the genes before
        # a random pivot; otherwise the children are copies of the parents
        dad, mom = self.pick_pairs(n_pairs)
        ca, cb = accel[dad].copy(), accel[mom].copy()
        pa, pb = prio[dad].copy(), prio[mom].copy()
        do = self.rng.random(n_pairs) < self.x_gen
        which = self.rng.integers(0, 2, n_pairs)
        pivot = self.rng.integers(1, max(n_jobs, 2), n_pairs)
        cut = cols < pivot[:, None]
        for g, (x, y) in enumerate(((ca, cb), (pa, pb))):
            m = cut & (do & (which == g))[:, None]
            x[m], y[m] = y[m], x[m]
        # crossover-rg: per pair, with probability x_rg, the pair is replaced by two fresh parents exchanging a
        # random range [lo, hi) of both genomes at once (a job's sub-accelerator and priority travel together)
        do = self.rng.random(n_pairs) < self.x_rg
        k = int(do.sum())
        if k and n_jobs:
            d2, m2 = self.pick_pairs(k)
            lo = self.rng.integers(0, n_jobs, k)
            hi = self.rng.integers(lo + 1, n_jobs + 1)
            rg = (cols >= lo[:, None]) & (cols < hi[:, None])
            xa, ya = accel[d2].copy(), accel[m2].copy()
            xp, yp = prio[d2].copy(), prio[m2].copy()
            xa[rg], ya[rg] = accel[m2][rg], accel[d2][rg]
            xp[rg], yp[rg] = prio[m2][rg], prio[d2][rg]
            ca[do], cb[do], pa[do], pb[do] = xa, ya, xp, yp
        c_acc = np.concatenate([ca, cb])[:n]
        c_pri = np.concatenate([pa, pb])[:n]
        # crossover-accel: per child, with probability x_acc, it is replaced by a fresh dad that takes from a fresh
        # mom every gene (both genomes) of the jobs mom runs on one random sub-accelerator k; dad's own jobs that
        # were on k go to a random other sub-accelerator (load balancing, seed §7.2.2)
        do = self.rng.random(n) < self.x_acc
        for i in np.nonzero(do)[0]:
            d3, m3 = self.pick_pairs(1)
            k_acc = int(self.rng.integers(0, self.n_acc))
            child_a, child_p = accel[d3[0]].copy(), prio[d3[0]].copy()
            from_mom = accel[m3[0]] == k_acc
            child_a[from_mom] = accel[m3[0]][from_mom]
            child_p[from_mom] = prio[m3[0]][from_mom]
            moved = (accel[d3[0]] == k_acc) & ~from_mom
            if self.n_acc > 1 and moved.any():
                r = self.rng.integers(0, self.n_acc - 1, int(moved.sum()))
                child_a[moved] = r + (r >= k_acc)
            c_acc[i], c_pri[i] = child_a, child_p
        # mutation of every child
        self.mutate(c_acc, c_pri, self.mutation)
        return self.fixed(c_acc), c_pri


def run_magma(data: MultiAccelData, *, seed: int = 0, time_limit: float | None = None, budget: int | None = None,
              warm_start: Assignment | None = None, population: int | None = None,
              mutation_rate: float = MUTATION_RATE, crossover_gen_rate: float = CROSSOVER_GEN_RATE,
              crossover_rg_rate: float = CROSSOVER_RG_RATE, crossover_accel_rate: float = CROSSOVER_ACCEL_RATE,
              elite_ratio: float = ELITE_RATIO, parent_ratio: float = PARENT_RATIO) -> MagmaResult:
    """MAGMA (seed 001 §7.2): a genetic algorithm over two genomes per individual — the sub-accelerator of every job
    and its priority in [0, 1] (lower runs earlier on its sub-accelerator; :class:`GenomeDecoder`).

    * **Budget.** ``budget`` evaluations (default ``population × epochs`` from the instance options
      ``magma_population`` / ``magma_epochs``, 100 × 100 = 10K as in §7.3.2): the initial population is the first
      epoch, every generation evaluates ``population`` children. ``time_limit`` (seconds) stops before a
      generation that would end past it (estimated from the previous one); the initial population always runs.
    * **Generation.** The population is sorted by fitness; the best ``ceil(parent_ratio × population)`` (10%, at
      least 2) are the parents, drawn with linear rank weights. Children: crossover-gen (rate 0.9 per pair: one
      genome, single pivot), crossover-rg (0.05 per pair: a range of both genomes), crossover-accel (0.05 per child:
      one sub-accelerator's jobs copied from mom, dad's jobs that were there moved to random others), then
      mutation (0.05 per gene). The rates are the seed's; the elite and parent ratios (5% and 10%) are those of the
      authors' public implementation, which the seed's Bayesian hyper-parameter search does not report.
    * **Elitism.** The best ``round(elite_ratio × population)`` (at least 1) individuals survive unchanged; the next
      population is the best ``population`` of elites ∪ children, so the best fitness never gets worse.
    * **Warm start** (§7.2.3): the population holds the warm start itself (encoded so that it decodes exactly), half
      the population as its mutants (rate 0.05 per gene), the rest random. The result is never worse than it.
    * **Fitness:** the fluid evaluator's makespan (lower is better; = maximum throughput), or the mean completion
      time when the instance's objective is ``mean_completion``. Deterministic for a ``seed`` unless the time limit
      cuts the run.
    """
    t0 = time.perf_counter()
    _require_accelerators(data)
    rng = np.random.default_rng(seed)
    opts = data.options or {}
    pop = int(population if population is not None else opts.get("magma_population", MAGMA_POPULATION))
    if budget is None:
        budget = pop * int(opts.get("magma_epochs", MAGMA_EPOCHS))
    pop = max(1, min(pop, int(budget)))
    ga = _Magma(data, rng, population=pop,
                rates=(mutation_rate, crossover_gen_rate, crossover_rg_rate, crossover_accel_rate),
                elite_ratio=elite_ratio, parent_ratio=parent_ratio)
    accel, prio = ga.random_genes(pop)
    if warm_start is not None:
        problems = check(data, warm_start)
        if problems:
            raise ValueError("invalid warm start: " + "; ".join(problems))
        wa, wp = ga.decoder.encode(warm_start)
        accel[0], prio[0] = wa, wp
        n_mut = pop // 2
        if n_mut > 1:
            ma, mp = np.tile(wa, (n_mut - 1, 1)), np.tile(wp, (n_mut - 1, 1))
            ga.mutate(ma, mp, mutation_rate)
            accel[1:n_mut], prio[1:n_mut] = ga.fixed(ma), mp
    fit = ga.fitness(accel, prio)
    order = np.argsort(fit, kind="stable")
    accel, prio, fit = accel[order], prio[order], fit[order]
    initial_best = float(fit[0])
    history = [initial_best]
    generations = 0
    stopped = False
    can_breed = pop >= 2 and ga.n_parent >= 2
    last = 0.0
    while can_breed and ga.evaluations + pop <= budget:
        now = time.perf_counter()
        if time_limit is not None and (now - t0) + last > time_limit:
            stopped = True
            break
        c_acc, c_pri = ga.children(accel, prio)
        c_fit = ga.fitness(c_acc, c_pri)
        e = ga.n_elite
        accel = np.concatenate([accel[:e], c_acc])
        prio = np.concatenate([prio[:e], c_pri])
        fit = np.concatenate([fit[:e], c_fit])
        order = np.argsort(fit, kind="stable")[:pop]
        accel, prio, fit = accel[order], prio[order], fit[order]
        generations += 1
        history.append(float(fit[0]))
        last = time.perf_counter() - now
    best = ga.decoder.assignment(accel[0], prio[0])
    return MagmaResult(assignment=best, fitness=float(fit[0]), initial_best=initial_best, history=history,
                       evaluations=ga.evaluations, generations=generations,
                       elapsed_s=time.perf_counter() - t0, stopped_by_time=stopped,
                       meets_deadlines=ga.feasible(float(fit[0])))


def magma(data: MultiAccelData, *, seed: int = 0, time_limit: float | None = None, budget: int | None = None,
          warm_start: Assignment | None = None) -> Assignment:
    """MAGMA's best assignment (:func:`run_magma` with the seed's settings)."""
    res = run_magma(data, seed=seed, time_limit=time_limit, budget=budget, warm_start=warm_start)
    return deliver(data, res.assignment, "magma")


HEURISTICS: dict[str, Heuristic] = {
    "magma": magma,
    "herald": herald,
    "ai-mt": ai_mt,
    "lpt": lpt,
    "random": random_assignment,
}

__all__ = ["HEURISTICS", "GenomeDecoder", "MagmaResult", "ai_mt", "deliver", "herald", "lpt", "magma",
           "placement_repair", "random_assignment", "run_magma", "standalone_durations", "topological_order"]
