"""A rigorous lower bound on the makespan of *any* solution of a multi-accelerator job group.

The bound is the optimum (or, when a limit stops HiGHS first, the MILP's own dual bound) of a relaxation of the
fluid semantics of :mod:`.evaluator` -- the seed's BW allocator, Algorithm 1 -- written as a MILP.

Notation. ``L[j, a]`` no-stall latency (s), ``B[j, a]`` no-stall bandwidth (bytes/s), ``V = L·B`` volume (bytes),
``W`` the system bandwidth (bytes/s), ``b = B/W``. ``x[j, a] = 1`` when job ``j`` runs on sub-accelerator ``a``;
``T`` the makespan; ``A`` the number of sub-accelerators.

**Fact 1 (any allocation policy).** A running job ``j`` on ``a`` that gets allocation ``r(t)`` drains its volume at
rate ``r(t)``, never runs faster than no-stall, and finishes when ``V[j, a]`` bytes have been moved; Algorithm 1
gives ``r = B`` when the running jobs ask for less than ``W`` in total and ``r = B·W/ΣB ≤ min(B, W)`` otherwise. So
``r(t) ≤ min(B, W)``, the allocations sum to at most ``W``, and the job runs for at least::

    D[j, a] = V[j, a] / min(B[j, a], W) = L[j, a] · max(1, b[j, a])            (≥ L[j, a])

**Fact 2 (the fluid allocator's common clock).** Algorithm 1 slows *all* bandwidth-consuming running jobs by the
same factor ``s(t) = min(1, W/ΣB(t))``. Let ``P(t) = ∫_0^t s`` (the evaluator's "progress clock"; ``s > 0``, so
``P`` is increasing and invertible). A job with ``B > 0`` finishes when its progress reaches ``L``: it occupies a
progress interval of length exactly ``L[j, a]``, and the intervals of one sub-accelerator are disjoint. With
``β(P)`` the sum of ``b`` over the jobs running at progress ``P``, ``dt/dP = 1/s = max(1, β)``, so a solution with
final progress ``Q = P(T*)`` has::

    T* = ∫_0^Q max(1, β(P)) dP = Q + ∫_0^Q (β - 1)^+ dP
    ∫_0^Q (β - 1)^+ ≥ ∫ β - ∫ min(1, β) ≥ Σ_j L_j b_j - Σ_j L_j min(1, b_j) = Σ_j L_j (b_j - 1)^+

(``∫ β = Σ_j L_j b_j`` because job ``j`` contributes ``b_j`` over ``L_j`` of progress; ``min(1, Σ_i b_i) ≤ Σ_i
min(1, b_i)``). Sums over jobs with ``B > 0`` (write ``L' = L·[B > 0]``); a job with ``B = 0`` runs ``L`` seconds of
real time and so spends at most ``L`` of progress, which is relaxed to ``0``. This is specific to proportional
sharing: another policy (or the mode model of :mod:`.cpsat`) can beat it.

The MILP (minimise ``T``; ``Σ_a x[j, a] = 1`` for every job, ``x`` binary; ``Q``, ``e``, ``p`` continuous)::

    (load)      T ≥ Σ_j D[j, a] · x[j, a]                                          for every a
    (volume)    W · T ≥ Σ_{j, a} V[j, a] · x[j, a]
    (job)       T ≥ Σ_a D[j, a] · x[j, a]                                          for every job j
    (chain)     e[j] ≥ Σ_a D[j, a] x[j, a];  e[k] ≥ e[j] + Σ_a D[k, a] x[k, a]  for (j, k) in the precedence;
                T ≥ e[j]                                                           (only with precedence)
  fluid only (``semantics="fluid"``, the default):
    (progress)  Q ≥ Σ_j L'[j, a] · x[j, a]                                         for every a
    (overflow)  T ≥ Q + Σ_{j, a} L'[j, a] · (b[j, a] - 1)^+ · x[j, a]
    (p-chain)   p[j] ≥ Σ_a L' x;  p[k] ≥ p[j] + Σ_a L'[k, a] x[k, a];  Q ≥ p[j]      (only with precedence)

Proofs, for an arbitrary solution (assignment + order per sub-accelerator) with fluid makespan ``T*``, setting
``x`` to its assignment:

* *load*: a sub-accelerator runs its jobs one after another (back to back, or waiting for a predecessor), so the
  running intervals of its jobs are disjoint subsets of ``[0, T*]``, each at least ``D`` long (Fact 1). (The issue's
  ``T ≥ Σ L·x`` is the weaker case ``D ≥ L``.)
* *volume*: every byte crosses the shared link, whose total allocation is at most ``W`` at every instant; so
  ``Σ V ≤ ∫_0^{T*} Σ_running r(t) dt ≤ W · T*``.
* *job*: one job's run lies inside ``[0, T*]`` -- the load row of its own sub-accelerator, kept as its own row
  because it tightens the LP; it gives ``T ≥ min_a D[j, a] ≥ min_a L[j, a]``.
* *chain*: with ``e[j]`` the completion time of ``j``: a job starts after its predecessors have finished and runs
  at least ``D``. Along a path this is at least the longest chain of ``min_a D`` (≥ the chain of min latencies).
* *progress*, *p-chain*: the same two arguments on the progress clock (Fact 2), with ``Q`` the final progress and
  ``p[j]`` the progress at which ``j`` finishes (``P`` is increasing, so precedence holds in progress too).
* *overflow*: Fact 2. (It implies *load* and *chain* when every ``B > 0``; they stay for the policy-free bound.)

So every solution's ``(x, T*, Q, completion times)`` is feasible for the MILP, and ``T* ≥ MILP optimum ≥ its dual
bound ≥ its LP relaxation``. ``semantics="any"`` leaves out the fluid rows: the bound then holds for *every*
allocation policy with ``r ≤ B`` and ``Σ r ≤ W`` -- in particular for the constant-allocation mode model of
:mod:`.cpsat`, whose makespan variable it bounds. The closed-form bound (each job on its own best sub-accelerator
term by term: ``max_j min_a D``, ``Σ_j min_a V / W``, ``Σ_j min_a D / A``, the longest chain of ``min_a D``, and for
the fluid semantics ``max(Σ_j min_a L' / A, max_j min_a L', chain of min_a L') + Σ_j min_a L'(b - 1)^+``) is implied
by the LP and computed exactly in floating point.

With an ``upper`` bound (the makespan of a known solution) the MILP may also forbid ``x[j, a]`` with
``D[j, a] > upper`` and cap ``T ≤ upper``: an optimal solution has makespan ``≤ upper``, so it uses no such pair and
remains feasible; the bound stays valid for the optimum (hence for every solution) and the LP gets tighter.

**User constraints** (``data.constraints``). A bound of the unconstrained problem stays a lower bound under any
constraint (the constrained solutions are some of the solutions); it is tightened with what is cheap and valid: a
job's ``x`` may be 1 only where its colocation group may run (placement constraints), the jobs of a group take the
same ``x`` column, and the job row becomes ``T ≥ release[j] + Σ_a D[j, a] x[j, a]`` (a job starts no earlier than its
release and runs at least ``D``); the closed form takes its minima over those sub-accelerators and adds
``max_j (release[j] + min_a D[j, a])``. Deadlines do not bound the makespan from below and are left out.

Numerics: times are divided by the closed-form bound (so ``T`` is ``O(1)``) and HiGHS' dual bound is trusted up to
its tolerances; the reported value is multiplied by ``1 - SAFETY`` (``SAFETY = 1e-6``) before it is compared with the
closed form.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dlaopt.formulations.multiaccel.model import MultiAccelData
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.linear import LinearModel, LinearModelBuilder
from dlaopt.solvers.result import SolveOptions, Status

SAFETY = 1e-6  # relative margin taken off HiGHS' dual bound (its feasibility/optimality tolerances are ~1e-7)
DEFAULT_NODE_LIMIT = 5000  # nodes when no time limit is given (keeps the bound deterministic and finite)


@dataclass(frozen=True)
class MakespanBound:
    """A valid lower bound (seconds) on the fluid makespan of every solution, and how it was proved.

    ``source``: ``"milp"`` (the relaxation solved to optimality: no stronger bound can come from it),
    ``"milp-dual"`` (a limit stopped HiGHS; its dual bound is used), ``"lp"`` (the LP relaxation) or
    ``"closed-form"``. ``status`` is HiGHS' status for the MILP (OPTIMAL = the relaxation was solved exactly).
    """

    value: float
    source: str
    status: Status
    closed_form: float
    lp: float | None = None
    milp_bound: float | None = None
    milp_objective: float | None = None  # the relaxation's own best value (not a makespan of the real problem)
    relaxed_accelerator: np.ndarray | None = None  # the relaxation's assignment, [J] (a possible warm start)
    solve_time_s: float = 0.0
    message: str = ""
    semantics: str = "fluid"  # "fluid": valid for Algorithm 1; "any": for every allocation policy

    @property
    def relaxation_optimal(self) -> bool:
        return self.source == "milp"


Semantics = Literal["fluid", "any"]


def min_durations(data: MultiAccelData) -> np.ndarray:
    """``D[j, a] = L·max(1, B/W)``: the least time job ``j`` can run on ``a`` (it never gets more than
    ``min(B, W)``)."""
    t = data.table
    return t.latency * np.maximum(1.0, t.bandwidth / float(data.system_bandwidth))


def progress_terms(data: MultiAccelData) -> tuple[np.ndarray, np.ndarray]:
    """``L' = L·[B > 0]`` (progress a job spends on the fluid clock) and ``L'·(b - 1)^+`` (its least overflow)."""
    t = data.table
    lp = np.where(t.bandwidth > 0, t.latency, 0.0)
    return lp, lp * np.maximum(0.0, t.bandwidth / float(data.system_bandwidth) - 1.0)


def _longest_chain(n_jobs: int, precedence: tuple[tuple[int, int], ...], weight: np.ndarray) -> float:
    """The heaviest path (sum of ``weight`` over its jobs) in the precedence DAG; ``max(weight)`` without edges."""
    if n_jobs == 0:
        return 0.0
    if not precedence:
        return float(weight.max())
    succ: list[list[int]] = [[] for _ in range(n_jobs)]
    indeg = np.zeros(n_jobs, dtype=int)
    for u, v in precedence:
        succ[u].append(v)
        indeg[v] += 1
    finish = weight.astype(float).copy()  # heaviest path ending at each job
    stack = [j for j in range(n_jobs) if indeg[j] == 0]
    seen = 0
    while stack:
        u = stack.pop()
        seen += 1
        for v in succ[u]:
            finish[v] = max(finish[v], finish[u] + weight[v])
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    if seen != n_jobs:
        raise ValueError("the precedence relation has a cycle")
    return float(finish.max())


def _where(data: MultiAccelData) -> np.ndarray:
    """``[J, A]``: where each job may run under the user's placement and colocation constraints."""
    t = data.table
    if not data.constraints:
        return np.ones((t.n_jobs, t.n_accelerators), dtype=bool)
    return data.constraints.group_mask(t.n_jobs, t.n_accelerators)


def closed_form_bound(data: MultiAccelData, semantics: Semantics = "fluid") -> float:
    """The term-by-term bound of the module docstring (each job on its best sub-accelerator in every term)."""
    t = data.table
    if t.n_jobs == 0:
        return 0.0
    m = t.n_accelerators
    where = _where(data)

    def best(x: np.ndarray) -> np.ndarray:
        return np.where(where, x, np.inf).min(axis=1)

    d_min = best(min_durations(data))
    v_min = best(t.volume)
    out = max(float(d_min.max()), float(v_min.sum()) / float(data.system_bandwidth), float(d_min.sum()) / m,
              _longest_chain(t.n_jobs, data.precedence, d_min), float((data.release + d_min).max()))
    if semantics == "fluid":
        lp, over = progress_terms(data)
        lp_min = best(lp)
        q = max(float(lp_min.sum()) / m, float(lp_min.max()), _longest_chain(t.n_jobs, data.precedence, lp_min))
        out = max(out, q + float(best(over).sum()))
    return out


def _chain_rows(b: LinearModelBuilder, name: str, prec: np.ndarray, xg: np.ndarray, w: np.ndarray,
                top: int) -> None:
    """``c[j] ≥ Σ_a w[j, a] x[j, a]``, ``c[v] ≥ c[u] + Σ_a w[v, a] x[v, a]``, ``top ≥ c[j]`` for the jobs of
    ``prec``."""
    m = xg.shape[1]
    jobs = np.unique(prec)
    k = jobs.size
    c = b.add_vars(name, k)
    c_of = np.full(xg.shape[0], -1, dtype=np.int64)
    c_of[jobs] = c
    b.add_rows(f"{name}-first", k, np.concatenate([np.arange(k), np.repeat(np.arange(k), m)]),
               np.concatenate([c, xg[jobs].ravel()]), np.concatenate([np.ones(k), -w[jobs].ravel()]), lower=0.0)
    p = prec.shape[0]
    b.add_rows(f"{name}-step", p, np.concatenate([np.arange(p), np.arange(p), np.repeat(np.arange(p), m)]),
               np.concatenate([c_of[prec[:, 1]], c_of[prec[:, 0]], xg[prec[:, 1]].ravel()]),
               np.concatenate([np.ones(p), -np.ones(p), -w[prec[:, 1]].ravel()]), lower=0.0)
    b.add_rows(f"{name}-last", k, np.concatenate([np.arange(k), np.arange(k)]),
               np.concatenate([np.full(k, top), c]), np.concatenate([np.ones(k), -np.ones(k)]), lower=0.0)


def build_bound_model(data: MultiAccelData, *, integer: bool = True, upper: float | None = None,
                      semantics: Semantics = "fluid", scale: float | None = None) -> tuple[LinearModel, float]:
    """The relaxation MILP (or its LP when ``integer`` is false) with times divided by ``scale`` (default: the
    closed-form bound). Returns the model and the scale; column blocks ``x`` (row-major ``[J, A]``), ``T`` and,
    as needed, ``Q``, ``e``, ``p``."""
    t = data.table
    n, m = t.n_jobs, t.n_accelerators
    lb0 = closed_form_bound(data, semantics)
    s = float(scale) if scale is not None else (lb0 if lb0 > 0 else 1.0)
    d = min_durations(data) / s
    vol = t.volume / (float(data.system_bandwidth) * s)
    x_upper = _where(data).astype(float)
    t_upper = math.inf
    if upper is not None and math.isfinite(upper):
        u = float(upper) * (1.0 + 1e-9) / s
        x_upper = np.where(d <= u, x_upper, 0.0)
        t_upper = u
    b = LinearModelBuilder(f"multiaccel-bound-{semantics}" + ("" if integer else "-lp"))
    x = b.add_vars("x", n * m, upper=x_upper.ravel(), integer=integer)
    big_t = int(b.add_vars("T", 1, lower=lb0 / s * (1.0 - SAFETY), upper=t_upper, cost=1.0)[0])
    xg = x.reshape(n, m)
    jj = np.repeat(np.arange(n), m)
    aa = np.tile(np.arange(m), n)
    b.add_rows("assign", n, jj, x, 1.0, lower=1.0, upper=1.0)
    b.add_rows("load", m, np.concatenate([aa, np.arange(m)]), np.concatenate([x, np.full(m, big_t)]),
               np.concatenate([d.ravel(), -np.ones(m)]), upper=0.0)
    b.add_rows("volume", 1, np.zeros(n * m + 1, dtype=np.int64), np.concatenate([x, [big_t]]),
               np.concatenate([vol.ravel(), [-1.0]]), upper=0.0)
    b.add_rows("job", n, np.concatenate([jj, np.arange(n)]), np.concatenate([x, np.full(n, big_t)]),
               np.concatenate([d.ravel(), -np.ones(n)]), upper=-data.release / s)
    lead = data.constraints.leaders(n)
    follow = np.flatnonzero(lead != np.arange(n))
    if follow.size:  # a colocation group shares its leader's column
        k = follow.size * m
        b.add_rows("colocate", k, np.concatenate([np.arange(k), np.arange(k)]),
                   np.concatenate([xg[follow].ravel(), xg[lead[follow]].ravel()]),
                   np.concatenate([np.ones(k), -np.ones(k)]), lower=0.0, upper=0.0)
    prec = np.asarray(data.precedence, dtype=np.int64).reshape(-1, 2)
    if prec.size:
        _chain_rows(b, "e", prec, xg, d, big_t)
    if semantics == "fluid":
        lp, over = progress_terms(data)
        lp, over = lp / s, over / s
        q = int(b.add_vars("Q", 1, upper=t_upper)[0])
        b.add_rows("progress", m, np.concatenate([aa, np.arange(m)]), np.concatenate([x, np.full(m, q)]),
                   np.concatenate([lp.ravel(), -np.ones(m)]), upper=0.0)
        b.add_rows("overflow", 1, np.zeros(n * m + 2, dtype=np.int64), np.concatenate([x, [q, big_t]]),
                   np.concatenate([over.ravel(), [1.0, -1.0]]), upper=0.0)
        if prec.size:
            _chain_rows(b, "p", prec, xg, lp, q)
    elif semantics != "any":
        raise ValueError(f"semantics must be 'fluid' or 'any', got {semantics!r}")
    return b.build(), s


def _bound_options(options: SolveOptions | None) -> SolveOptions:
    base = options if options is not None else SolveOptions()
    node_limit = base.node_limit
    if node_limit is None and base.time_limit is None:
        node_limit = DEFAULT_NODE_LIMIT
    return dataclasses.replace(base, warm_start=None, progress=None, node_limit=node_limit)


def lp_bound(data: MultiAccelData, options: SolveOptions | None = None, *, upper: float | None = None,
             semantics: Semantics = "fluid") -> float | None:
    """The LP relaxation's optimum (seconds, with the safety margin), or ``None`` when HiGHS fails."""
    model, s = build_bound_model(data, integer=False, upper=upper, semantics=semantics)
    res = solve_linear(model, "highs", _bound_options(options))
    if res.status != Status.OPTIMAL or res.objective is None:
        return None
    return float(res.objective) * s * (1.0 - SAFETY)


def makespan_bound(data: MultiAccelData, options: SolveOptions | None = None, *, upper: float | None = None,
                   semantics: Semantics = "fluid") -> MakespanBound:
    """The valid lower bound: the MILP relaxation on HiGHS (its dual bound when a limit stops it), the LP relaxation
    when the MILP gives nothing, and never less than the closed-form bound.

    ``options``: time/node limits, threads and seed for HiGHS (without any limit, ``DEFAULT_NODE_LIMIT`` nodes).
    ``upper``: the makespan of a known solution under ``semantics`` (see the module docstring). ``semantics``:
    ``"fluid"`` (Algorithm 1's proportional sharing, the ground truth) or ``"any"`` (every allocation policy with
    ``r ≤ B``, ``Σ r ≤ W``: valid for the CP-SAT mode model too).
    """
    t0 = time.perf_counter()
    closed = closed_form_bound(data, semantics)
    if data.table.n_jobs == 0:
        return MakespanBound(0.0, "closed-form", Status.OPTIMAL, 0.0, semantics=semantics)
    model, s = build_bound_model(data, integer=True, upper=upper, semantics=semantics)
    res = solve_linear(model, "highs", _bound_options(options))
    notes: list[str] = []
    milp_bound = None
    if res.bound is not None and math.isfinite(res.bound) and res.status != Status.ERROR:
        milp_bound = float(res.bound) * s * (1.0 - SAFETY)
    milp_obj = float(res.objective) * s if res.objective is not None else None
    relaxed = None
    if res.x is not None:
        xa = np.asarray(res.x[: data.table.n_jobs * data.table.n_accelerators]).reshape(data.table.n_jobs, -1)
        relaxed = np.argmax(xa, axis=1)
    if res.status == Status.INFEASIBLE:
        notes.append("bound MILP infeasible under the upper bound (tolerances?); closed form used")
    elif res.message:
        notes.append(res.message)
    lp: float | None = None
    if milp_bound is not None:
        source = "milp" if res.status == Status.OPTIMAL else "milp-dual"
        value = milp_bound
    else:
        lp = lp_bound(data, options, upper=upper, semantics=semantics)
        source, value = ("lp", lp) if lp is not None else ("closed-form", closed)
    value = closed if value is None else max(value, closed)  # the closed form is exact; never report less
    return MakespanBound(value=float(value), source=source, status=res.status, closed_form=closed, lp=lp,
                         milp_bound=milp_bound, milp_objective=milp_obj, relaxed_accelerator=relaxed,
                         solve_time_s=time.perf_counter() - t0, message="; ".join(notes), semantics=semantics)
