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

**Fact 3 (configuration rows; ``configurations > 0``, fluid only).** On the progress clock, ``T* = ∫_0^Q max(1,
β(P)) dP`` with ``β(P) = Σ_a b_a(P)``, ``b_a(P)`` the ``b`` of the job running on ``a`` at progress ``P`` (0 when
``a`` idles or runs a job with ``B = 0``). Group the sub-accelerators into classes of identical columns (latency,
bandwidth, placement) and round every ``b`` *down* to one of a few levels per class (``0 < λ_1 < … < λ_K``; below
``λ_1`` counts as 0): ``max(1, ·)`` is non-decreasing, so the rounded integrand is no larger. At each ``P`` the
running jobs form a *configuration* — per class, the multiset of the levels of its sub-accelerators — whose cost is
``max(1, Σ levels)``. Let ``μ_c`` be the progress time the schedule spends in configuration ``c``: ``Σ_c μ_c = Q``,
``T* ≥ Σ_c cost_c μ_c``, and for every class and positive level ``ℓ``, ``Σ_c count_c(ℓ) μ_c`` is the progress the
class's jobs of level ``ℓ`` spend running, ``Σ_{j, a in class, level ℓ} L'[j, a] x[j, a]`` (a job with ``B > 0``
occupies exactly ``L`` of progress). The MILP gets these rows with ``μ ≥ 0`` continuous; the real ``μ`` satisfies
them, so the bound stays valid. They see what the volume and overflow rows miss when hungry and frugal jobs cannot
be mixed to keep ``β`` at 1 (e.g. three jobs at ``b = 0.8`` and one at 0 on two sub-accelerators). The levels of a
class minimise the rounding loss ``Σ L·(b − level)`` (:func:`round_down_levels`, a dynamic programme), as many per
class as keep the configurations within the budget.

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
import itertools
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
                      semantics: Semantics = "fluid", scale: float | None = None,
                      configurations: int = 0) -> tuple[LinearModel, float]:
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
        if configurations > 0:
            _configuration_rows(b, data, xg, q, big_t, s, configurations)
    elif semantics != "any":
        raise ValueError(f"semantics must be 'fluid' or 'any', got {semantics!r}")
    return b.build(), s


# ------------------------------------------------------------------------------- the configuration rows
DEFAULT_MAX_CONFIGURATIONS = 4000  # columns of the configuration rows (levels are chosen to stay below it)


def accelerator_classes(data: MultiAccelData) -> list[np.ndarray]:
    """Groups of sub-accelerators with identical columns (latency, bandwidth, where jobs may run), in order."""
    t = data.table
    where = _where(data)
    classes: list[list[int]] = []
    for a in range(t.n_accelerators):
        for c in classes:
            r = c[0]
            if (np.array_equal(t.latency[:, a], t.latency[:, r])
                    and np.array_equal(t.bandwidth[:, a], t.bandwidth[:, r])
                    and np.array_equal(where[:, a], where[:, r])):
                c.append(a)
                break
        else:
            classes.append([a])
    return [np.asarray(c, dtype=np.int64) for c in classes]


def round_down_levels(values: np.ndarray, weights: np.ndarray, k: int) -> np.ndarray:
    """At most ``k`` positive levels, each one of ``values``, minimising ``Σ weight·(value − level below it)`` (values
    under the lowest level round down to 0): a dynamic programme over the sorted distinct values. Returns the levels,
    increasing."""
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    keep = (v > 0) & (w > 0)
    v, w = v[keep], w[keep]
    if v.size == 0 or k <= 0:
        return np.zeros(0)
    u, inv = np.unique(v, return_inverse=True)
    wu = np.bincount(inv, weights=w, minlength=u.size)
    if u.size <= k:
        return u
    n = u.size
    cw = np.concatenate([[0.0], np.cumsum(wu)])
    cwv = np.concatenate([[0.0], np.cumsum(wu * u)])

    def loss(i: int, j: int, level: float) -> float:  # values u[i:j] rounded down to ``level``
        return float(cwv[j] - cwv[i] - level * (cw[j] - cw[i]))

    # best[m][i]: least loss of u[i:] with the level of u[i] taken and m more levels at most
    inf = math.inf
    best = np.full((k, n + 1), inf)
    nxt = np.full((k, n + 1), n, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        best[0, i] = loss(i, n, float(u[i]))
    for m in range(1, k):
        for i in range(n - 1, -1, -1):
            b0, arg = best[m - 1, i], n
            for j in range(i + 1, n):
                c = loss(i, j, float(u[i])) + best[m - 1, j]
                if c < b0:
                    b0, arg = c, j
            best[m, i], nxt[m, i] = b0, arg
    # the first level: values below it round to 0
    first = min(range(n), key=lambda i: loss(0, i, 0.0) + best[k - 1, i])
    levels = [first]
    m = k - 1
    while m > 0 and nxt[m, levels[-1]] < n:
        levels.append(int(nxt[m, levels[-1]]))
        m -= 1
    return u[levels]


def _multisets(n_levels: int, size: int) -> np.ndarray:
    """Every multiset of ``size`` levels out of ``n_levels``, as counts per level ``[M, n_levels]``."""
    out = [np.bincount(c, minlength=n_levels)
           for c in itertools.combinations_with_replacement(range(n_levels), size)]
    return np.asarray(out, dtype=np.int64).reshape(-1, n_levels)


def configuration_levels(data: MultiAccelData, max_configurations: int = DEFAULT_MAX_CONFIGURATIONS
                         ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The sub-accelerator classes and, per class, the positive bandwidth levels ``b = B/W`` of the configuration
    rows: the same number of levels per class, as many as keep the configurations within ``max_configurations``."""
    t = data.table
    classes = accelerator_classes(data)
    b = t.bandwidth / float(data.system_bandwidth)
    lp, _ = progress_terms(data)

    def count(k: list[int]) -> int:
        return math.prod(math.comb(kc + c.size, c.size) for kc, c in zip(k, classes, strict=True))

    distinct = [np.unique(b[:, c[0]][b[:, c[0]] > 0]).size for c in classes]
    k = [min(1, d) for d in distinct]
    while True:
        grow = [i for i in range(len(k)) if k[i] < distinct[i]]
        trial = [k[i] + (i in grow) for i in range(len(k))]
        if not grow or count(trial) > max_configurations:
            break
        k = trial
    levels = [round_down_levels(b[:, c[0]], lp[:, c[0]], kc) for c, kc in zip(classes, k, strict=True)]
    return classes, levels


def _configuration_rows(b: LinearModelBuilder, data: MultiAccelData, xg: np.ndarray, q: int, big_t: int,
                        s: float, max_configurations: int) -> None:
    """The configuration rows (module docstring, Fact 3): occupation measures ``μ`` of the configurations, their
    per-class level marginals equal to the progress the assignment puts there, ``T ≥ Σ cost·μ``."""
    t = data.table
    classes, levels = configuration_levels(data, max_configurations)
    bb = t.bandwidth / float(data.system_bandwidth)
    lp, _ = progress_terms(data)
    per_class = [_multisets(lv.size + 1, c.size) for c, lv in zip(classes, levels, strict=True)]
    sizes = [pc.shape[0] for pc in per_class]
    n_conf = math.prod(sizes)
    grid = np.indices(sizes).reshape(len(sizes), -1)  # [C, K]: the multiset of each class in each configuration
    load = np.zeros(n_conf)
    for ci, (pc, lv) in enumerate(zip(per_class, levels, strict=True)):
        load += pc[grid[ci]] @ np.concatenate([[0.0], lv])
    cost = np.maximum(1.0, load)
    mu = b.add_vars("mu", n_conf)
    b.add_rows("configuration-cost", 1, np.zeros(n_conf + 1, dtype=np.int64), np.concatenate([mu, [big_t]]),
               np.concatenate([cost, [-1.0]]), upper=0.0)
    b.add_rows("configuration-time", 1, np.zeros(n_conf + 1, dtype=np.int64), np.concatenate([mu, [q]]),
               np.concatenate([np.ones(n_conf), [-1.0]]), lower=0.0, upper=0.0)
    for ci, (c, lv, pc) in enumerate(zip(classes, levels, per_class, strict=True)):
        counts = pc[grid[ci]]  # [K, levels + 1]
        # the level of every (job, sub-accelerator of the class): the largest level <= b (0: below every level)
        lev = np.searchsorted(lv, bb[:, c], side="right")  # [J, |c|] in 0..len(lv)
        for ell in range(1, lv.size + 1):
            kk = np.flatnonzero(counts[:, ell])
            jj, aa = np.nonzero((lev == ell) & (lp[:, c] > 0))
            b.add_rows(f"configuration-level-{ci}-{ell}", 1, np.zeros(kk.size + jj.size, dtype=np.int64),
                       np.concatenate([mu[kk], xg[jj, c[aa]]]),
                       np.concatenate([counts[kk, ell].astype(float), -lp[jj, c[aa]] / s]), lower=0.0, upper=0.0)


def _bound_options(options: SolveOptions | None) -> SolveOptions:
    base = options if options is not None else SolveOptions()
    node_limit = base.node_limit
    if node_limit is None and base.time_limit is None:
        node_limit = DEFAULT_NODE_LIMIT
    return dataclasses.replace(base, warm_start=None, progress=None, node_limit=node_limit)


def lp_bound(data: MultiAccelData, options: SolveOptions | None = None, *, upper: float | None = None,
             semantics: Semantics = "fluid", configurations: int = 0) -> float | None:
    """The LP relaxation's optimum (seconds, with the safety margin), or ``None`` when HiGHS fails."""
    model, s = build_bound_model(data, integer=False, upper=upper, semantics=semantics,
                                 configurations=configurations)
    res = solve_linear(model, "highs", _bound_options(options))
    if res.status != Status.OPTIMAL or res.objective is None:
        return None
    return float(res.objective) * s * (1.0 - SAFETY)


def makespan_bound(data: MultiAccelData, options: SolveOptions | None = None, *, upper: float | None = None,
                   semantics: Semantics = "fluid", configurations: int = 0) -> MakespanBound:
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
    model, s = build_bound_model(data, integer=True, upper=upper, semantics=semantics,
                                 configurations=configurations if semantics == "fluid" else 0)
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
        lp = lp_bound(data, options, upper=upper, semantics=semantics,
                      configurations=configurations if semantics == "fluid" else 0)
        source, value = ("lp", lp) if lp is not None else ("closed-form", closed)
    value = closed if value is None else max(value, closed)  # the closed form is exact; never report less
    return MakespanBound(value=float(value), source=source, status=res.status, closed_form=closed, lp=lp,
                         milp_bound=milp_bound, milp_objective=milp_obj, relaxed_accelerator=relaxed,
                         solve_time_s=time.perf_counter() - t0, message="; ".join(notes), semantics=semantics)
