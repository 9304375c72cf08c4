"""Local search on the fluid evaluator: the exact method's incumbent improver.

From a starting schedule (per sub-accelerator, its jobs in order), every round draws a batch of neighbours — a job
moved to another position or sub-accelerator, two jobs swapped, a job moved within its own order — simulates the
whole batch at once with :meth:`~.evaluator.FluidEvaluator.batch_makespan` (the ground truth, so every value is a
real fluid makespan) and moves to the best neighbour when it is strictly better; after ``patience`` rounds without
an improvement it restarts from the best schedule found, kicked by a few random moves (iterated local search). A job
only goes where the user's
placement constraints let it; a neighbour that deadlocks under precedence pairs has an infinite makespan and is never
taken. The search stops after ``rounds`` rounds (deterministic for a seed) or at a wall-clock ``deadline``, whichever
comes first.

Starting points: the exact method's best schedules (warm start, the bound relaxation's assignment, CP-SAT's decoded
schedules). :func:`orders_of_assignment` turns a bare assignment (a sub-accelerator per job, as the bound MILP gives)
into orders: several job orders are tried and the best by the evaluator is kept.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, queues_from_orders
from dlaopt.formulations.multiaccel.model import Assignment, MultiAccelData

DEFAULT_BATCH = 128  # neighbours simulated per round
DEFAULT_ROUNDS = 200  # rounds when no deadline is given
DEFAULT_PATIENCE = 15  # rounds without improvement before a kick


@dataclass(frozen=True)
class SearchResult:
    assignment: Assignment
    makespan: float
    start_makespan: float
    rounds: int
    evaluations: int
    improvements: int
    time_s: float


def supports(data: MultiAccelData) -> bool:
    """Whether the search applies: no colocation and no window constraints (their schedules are left to the other
    methods); placement constraints and precedence pairs are honoured."""
    cons = data.constraints
    return not cons.colocate and not cons.windows


def _allowed(data: MultiAccelData) -> np.ndarray:
    t = data.table
    if not data.constraints:
        return np.ones((t.n_jobs, t.n_accelerators), dtype=bool)
    return data.constraints.group_mask(t.n_jobs, t.n_accelerators)


def _neighbours(order: list[list[int]], rng: np.random.Generator, k: int, allowed: np.ndarray
                ) -> list[list[list[int]]]:
    m = len(order)
    sizes = np.array([len(x) for x in order], dtype=float)
    total = sizes.sum()
    out: list[list[list[int]]] = []
    if total == 0:
        return out
    p = sizes / total
    tries = 0
    while len(out) < k and tries < 4 * k:
        tries += 1
        o = [list(x) for x in order]
        r = rng.random()
        a = int(rng.choice(m, p=p))
        i = int(rng.integers(len(o[a])))
        if r < 0.4:  # move a job to a position on any sub-accelerator it may use
            j = o[a].pop(i)
            cand = np.flatnonzero(allowed[j])
            b = int(cand[rng.integers(cand.size)])
            o[b].insert(int(rng.integers(len(o[b]) + 1)), j)
        elif r < 0.8:  # swap two jobs
            b = int(rng.choice(m, p=p))
            k2 = int(rng.integers(len(o[b])))
            j1, j2 = o[a][i], o[b][k2]
            if j1 == j2 or not (allowed[j1, b] and allowed[j2, a]):
                continue
            o[a][i], o[b][k2] = j2, j1
        else:  # move a job within its own order
            if len(o[a]) < 2:
                continue
            j = o[a].pop(i)
            o[a].insert(int(rng.integers(len(o[a]) + 1)), j)
        out.append(o)
    return out


def local_search(data: MultiAccelData, start: Assignment, *, seed: int = 0, rounds: int | None = DEFAULT_ROUNDS,
                 deadline: float | None = None, batch: int = DEFAULT_BATCH, patience: int | None = DEFAULT_PATIENCE,
                 target: float = 0.0, evaluator: FluidEvaluator | None = None) -> SearchResult:
    """Iterated best-neighbour descent from ``start`` (module docstring). ``deadline`` is a ``time.perf_counter()``
    value; ``rounds=None`` runs until the deadline (one of the two must be given); ``patience=None``: no kicks; the
    search stops as soon as a makespan ``<= target`` is found (e.g. a proven lower bound)."""
    if rounds is None and deadline is None:
        raise ValueError("local_search needs rounds or a deadline")
    t0 = time.perf_counter()
    ev = evaluator if evaluator is not None else FluidEvaluator(data)
    m = data.table.n_accelerators
    allowed = _allowed(data)
    rng = np.random.default_rng(seed)
    cur = [[int(j) for j in jobs] for jobs in start.order]
    value = ev.makespan(cur)
    first = best_value = value
    best = cur
    done = evals = improved = stale = 0
    while ((rounds is None or done < rounds) and (deadline is None or time.perf_counter() < deadline)
           and best_value > target):
        nb = _neighbours(cur, rng, batch, allowed)
        done += 1
        if not nb:
            break
        ms = ev.batch_makespan(queues_from_orders(nb, m))
        evals += len(nb)
        i = int(np.argmin(ms))
        if math.isfinite(ms[i]) and ms[i] < value:
            cur, value = nb[i], float(ms[i])
            stale = 0
            if value < best_value:
                best, best_value = cur, value
                improved += 1
        else:
            stale += 1
        if patience is not None and stale >= patience:  # kick the best schedule by a few random moves
            kicked = best
            for _ in range(int(rng.integers(2, 6))):
                step = _neighbours(kicked, rng, 1, allowed)
                kicked = step[0] if step else kicked
            cur, value, stale = kicked, ev.makespan(kicked), 0
            evals += 1
    return SearchResult(Assignment(best), best_value, first, done, evals, improved, time.perf_counter() - t0)


def orders_of_assignment(data: MultiAccelData, accelerator: np.ndarray,
                         evaluator: FluidEvaluator | None = None) -> Assignment:
    """Orders for a bare assignment (``accelerator[j]``): the jobs by index, by decreasing and by increasing
    no-stall bandwidth, by decreasing latency, alternating hungry and frugal jobs; the best by the evaluator."""
    ev = evaluator if evaluator is not None else FluidEvaluator(data)
    t = data.table
    m = t.n_accelerators
    acc = np.asarray(accelerator, dtype=np.int64)
    jobs = np.arange(t.n_jobs)
    bw = t.bandwidth[jobs, acc]
    lat = t.latency[jobs, acc]
    keys = [jobs, -bw, bw, -lat]
    orders: list[list[list[int]]] = []
    for key in keys:
        orders.append([[int(j) for j in jobs[acc == a][np.argsort(key[acc == a], kind="stable")]]
                       for a in range(m)])
    alt = []
    for a in range(m):
        js = [int(j) for j in jobs[acc == a][np.argsort(-bw[acc == a], kind="stable")]]
        mixed = [js[k // 2] if k % 2 == 0 else js[-1 - k // 2] for k in range(len(js))]
        alt.append(mixed)
    orders.append(alt)
    ms = ev.batch_makespan(queues_from_orders(orders, m))
    return Assignment(orders[int(np.argmin(ms))])


__all__ = ["SearchResult", "local_search", "orders_of_assignment", "supports"]
