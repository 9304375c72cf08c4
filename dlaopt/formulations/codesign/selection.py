"""Exact selection of design points over a given cost table (ConfuciuX's resource assignment, seed 001 Chapter 8).

Data: layers ``l = 1 … L``, design points ``p = 1 … P`` (e.g. Table 8.1's (PE, buffer) pairs), a cost ``c[l, p]``
(latency or energy of layer ``l`` on point ``p``; ``inf``: the point cannot run the layer), resources
``u[r, l, p] ≥ 0`` (area, power, PE count, buffer …; a per-point table is broadcast over the layers) and budgets
``B[r]``. The aggregate is ``sum`` (``Σ_l``) or ``max`` (``max_l``: a pipeline's throughput is set by its slowest
stage).

* **Layer-Sequential (LS)**: one point ``p`` runs every layer; it must fit, ``max_l u[r, l, p] ≤ B[r]`` (a per-point
  resource is the point's own figure; a per-layer one, e.g. power, its peak), and the value is ``agg_l c[l, p]``.
  LS is LP with a single "layer" whose cost is the aggregate and whose use is the peak, so every model below
  handles both through :func:`ls_as_lp`; :func:`ls_scan` is the direct scan.
* **Layer-Pipelined (LP)**: a multiple-choice knapsack — a point ``p_l`` per layer, ``Σ_l u[r, l, p_l] ≤ B[r]``,
  value ``agg_l c[l, p_l]``.

Exact methods, all returning a :class:`Selection`:

* :func:`brute_force` — every assignment (``itertools.product``), the reference for tests on tiny tables;
* :func:`milp` — the MILP ``min Σ c x`` (sum) or ``min t, t ≥ Σ_p c[l,p] x[l,p]`` (max) with ``Σ_p x[l,p] = 1`` and
  one knapsack row per resource, built with :class:`~dlaopt.solvers.linear.LinearModelBuilder` and solved by
  :func:`~dlaopt.solvers.backends.solve_linear` (HiGHS by default);
* :func:`cpsat` — the same model natively in CP-SAT (``AddExactlyOne`` per layer, ``AddMaxEquality`` for ``max``);
  for ``max`` the costs are replaced by their ranks (only their order matters), which is exact whatever the numbers;
* :func:`bisection` — the exact min-max algorithm for a single resource (below).

**Dominance pruning** (:func:`prune`). For layer ``l``, point ``q`` is dominated by ``p ≠ q`` when
``c[l, p] ≤ c[l, q]`` and ``u[r, l, p] ≤ u[r, l, q]`` for every ``r`` (with ties broken by index, so that of two
identical points exactly one survives). *Claim*: some optimal assignment uses no dominated ``(l, q)``. *Proof*: take
an optimal assignment with ``p_l = q`` dominated by ``p`` and switch layer ``l`` to ``p``. Every resource sum
changes by ``u[r, l, p] − u[r, l, q] ≤ 0``, so the budget still holds; the value is a sum or a maximum of per-layer
costs, both non-decreasing in every argument, and the one argument that changed did not grow — so the value does
not grow and the new assignment is optimal too. Dominance is a strict partial order refined by the index
tie-break, so repeating the switch terminates at an assignment of undominated pairs. (For LS the same argument on
the single aggregated "layer" is: a point with no less of every resource and no better cost *for every layer*
never helps.) In addition, a pair ``(l, q)`` with ``u[r, l, q] + Σ_{l' ≠ l} min_p u[r, l', p] > B[r]`` for some
``r`` is in no feasible assignment at all and is dropped. If a layer is left with no pair, the problem is proven
infeasible.

**Min-max by bisection** (:func:`bisection`, one resource). For a cap ``v`` let
``m_l(v) = min {u[l, p] : c[l, p] ≤ v}`` (``inf`` if empty) and ``F(v) ⇔ Σ_l m_l(v) ≤ B``. *Claim*: the optimum
``v*`` is the smallest candidate ``v ∈ {c[l, p]}`` with ``F(v)``, and taking each layer's minimum-use point within
the cap at ``v*`` is an optimal assignment. *Proof*: (i) if an assignment ``(p_l)`` has value ``≤ v`` and fits,
then ``u[l, p_l] ≥ m_l(v)`` for every ``l``, so ``Σ_l m_l(v) ≤ Σ_l u[l, p_l] ≤ B``: ``F(v)`` holds; conversely if
``F(v)`` holds, the minimum-use points form an assignment of value ``≤ v`` that fits. So ``F(v)`` ⇔ "value ``≤ v``
is achievable". (ii) ``F`` is monotone: raising ``v`` enlarges every set, so ``m_l`` only decreases. (iii) The
optimal value is the cost of some chosen pair, hence a candidate. By (i)–(iii) binary search over the sorted
distinct candidates finds ``v*`` with ``O(log(L·P))`` tests of ``O(L·P)`` each. The assignment it returns also has
the least total resource among all optimal ones (every optimal assignment uses at least ``m_l(v*)`` per layer).
With two or more resources the test becomes a multi-dimensional knapsack and the method does not apply.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dlaopt.solvers.linear import LinearModelBuilder
from dlaopt.solvers.result import SolveOptions, Status

Aggregate = Literal["sum", "max"]
Deployment = Literal["ls", "lp"]
AGGREGATES: tuple[str, ...] = ("sum", "max")
DEPLOYMENTS: tuple[str, ...] = ("ls", "lp")
_REL_TOL = 1e-9
MAX_BUDGET_RESOLVES = 4
# the budget is checked at 1e-9 relative: the solver must not accept more than that
HIGHS_TIGHT = {"primal_feasibility_tolerance": 1e-9, "mip_feasibility_tolerance": 1e-9}


@dataclass(frozen=True)
class SelectionProblem:
    """``cost[l, p]`` (``inf``: cannot run), ``use[r, l, p]``, ``budget[r]``, the aggregate and the deployment.
    Build it with :meth:`create`, which validates and broadcasts per-point resources."""

    cost: np.ndarray
    use: np.ndarray
    budget: np.ndarray
    aggregate: Aggregate = "sum"
    deployment: Deployment = "lp"
    resource_names: tuple[str, ...] = ()

    @classmethod
    def create(cls, cost: np.ndarray, resources: dict[str, np.ndarray], budgets: dict[str, float], *,
               aggregate: str = "sum", deployment: str = "lp") -> SelectionProblem:
        """``resources[name]`` is ``[P]`` or ``[L, P]``; ``budgets`` has one entry per resource."""
        c = np.asarray(cost, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1:
            raise ValueError("cost must be a non-empty [layers, points] array")
        if np.isnan(c).any() or (c == -np.inf).any():
            raise ValueError("cost must not hold NaN or -inf")
        if aggregate not in AGGREGATES:
            raise ValueError(f"unknown aggregate {aggregate!r}: use one of {AGGREGATES}")
        if deployment not in DEPLOYMENTS:
            raise ValueError(f"unknown deployment {deployment!r}: use one of {DEPLOYMENTS}")
        if set(resources) != set(budgets):
            raise ValueError("resources and budgets must name the same resources")
        names = tuple(sorted(resources))
        use = np.zeros((len(names), *c.shape))
        for r, name in enumerate(names):
            arr = np.asarray(resources[name], dtype=np.float64)
            if arr.shape not in ((c.shape[1],), c.shape):
                raise ValueError(f"resource {name!r}: shape {arr.shape}, expected {(c.shape[1],)} or {c.shape}")
            if not np.isfinite(arr).all() or (arr < 0).any():
                raise ValueError(f"resource {name!r} must be finite and non-negative")
            use[r] = np.broadcast_to(arr, c.shape)
        budget = np.array([float(budgets[n]) for n in names])
        if np.isnan(budget).any():
            raise ValueError("budgets must not be NaN")
        return cls(c, use, budget, aggregate, deployment, names)  # type: ignore[arg-type]

    @property
    def n_layers(self) -> int:
        return int(self.cost.shape[0])

    @property
    def n_points(self) -> int:
        return int(self.cost.shape[1])

    def value(self, choice: np.ndarray) -> float:
        """The objective of an assignment (``choice[l]`` for LP, one repeated point for LS)."""
        per_layer = self.cost[np.arange(self.n_layers), np.asarray(choice)]
        return float(per_layer.sum() if self.aggregate == "sum" else per_layer.max())

    def consumption(self, choice: np.ndarray) -> np.ndarray:
        """Resource use per resource: the LP sum over layers, or the LS peak."""
        rows = np.arange(self.n_layers)
        taken = self.use[:, rows, np.asarray(choice)]
        return taken.max(axis=1) if self.deployment == "ls" else taken.sum(axis=1)

    def feasible(self, choice: np.ndarray) -> bool:
        """Within every budget (relative tolerance ``1e-9``), every layer runnable, and one point for LS."""
        ch = np.asarray(choice)
        if ch.shape != (self.n_layers,) or ch.min() < 0 or ch.max() >= self.n_points:
            return False
        if self.deployment == "ls" and np.unique(ch).size != 1:
            return False
        if not np.isfinite(self.cost[np.arange(self.n_layers), ch]).all():
            return False
        return bool(np.all(self.consumption(ch) <= self.budget + _REL_TOL * np.maximum(1.0, np.abs(self.budget))))


@dataclass
class Selection:
    """The chosen point of every layer (all equal for LS), its value, a proven lower bound, the status and how the
    answer was found."""

    choice: np.ndarray
    value: float
    bound: float
    status: Status
    method: str
    stats: dict[str, Any] = field(default_factory=dict)


def _infeasible(problem: SelectionProblem, method: str, stats: dict[str, Any]) -> Selection:
    return Selection(np.zeros(problem.n_layers, dtype=np.int64), math.inf, math.inf, Status.INFEASIBLE, method, stats)


# ------------------------------------------------------------------------------------------------ LS reduction


def ls_as_lp(problem: SelectionProblem) -> SelectionProblem:
    """The LS problem as an LP problem with one layer: cost ``agg_l c[l, p]``, use ``max_l u[r, l, p]``."""
    c = problem.cost.sum(axis=0) if problem.aggregate == "sum" else problem.cost.max(axis=0)
    return SelectionProblem(c[None, :], problem.use.max(axis=1, keepdims=True), problem.budget, problem.aggregate,
                            "lp", problem.resource_names)


def _lift(problem: SelectionProblem, answer: Selection) -> Selection:
    """An answer of :func:`ls_as_lp`'s problem as an answer of the LS ``problem``."""
    answer.choice = np.full(problem.n_layers, int(answer.choice[0]), dtype=np.int64)
    return answer


def ls_scan(problem: SelectionProblem) -> Selection:
    """LS by scanning every point: the smallest value within the budgets, ties to the smaller total resource
    (resources in budget units), then to the lower index."""
    t0 = time.perf_counter()
    one = ls_as_lp(problem) if problem.deployment == "ls" else problem
    if one.n_layers != 1:
        raise ValueError("ls_scan needs an LS problem")
    use = one.use[:, 0, :]
    fits = np.all(use <= problem.budget[:, None] * (1 + _REL_TOL) + _REL_TOL, axis=0)
    values = np.where(fits, one.cost[0], np.inf)
    stats = {"points": problem.n_points, "time_s": time.perf_counter() - t0}
    if not np.isfinite(values).any():
        return _infeasible(problem, "ls-scan", stats)
    scale = np.where(np.abs(problem.budget) > 0, np.abs(problem.budget), 1.0)
    total = (use / scale[:, None]).sum(axis=0)
    p = int(np.lexsort((np.arange(values.size), total, values))[0])
    return Selection(np.full(problem.n_layers, p, dtype=np.int64), float(values[p]), float(values[p]),
                     Status.OPTIMAL, "ls-scan", stats)


# ------------------------------------------------------------------------------------------------- pruning


def prune(problem: SelectionProblem) -> np.ndarray:
    """``keep[l, p]``: the pairs that survive dominance and the budget test of the module docstring (for LS, call it
    on :func:`ls_as_lp`'s problem). Some optimal assignment uses only kept pairs; a layer without one proves the
    problem infeasible."""
    c, u, b = problem.cost, problem.use, problem.budget
    n_points = problem.n_points
    finite = np.isfinite(c)
    # budget test: the pair plus every other layer's cheapest use must fit
    min_use = np.where(finite[None], u, np.inf).min(axis=2)  # [r, l]
    lacking = ~np.isfinite(min_use)  # a layer no point can run: nothing fits
    finite_use = np.where(lacking, 0.0, min_use)
    others = finite_use.sum(axis=1, keepdims=True) - finite_use  # [r, l]
    others = np.where(lacking.sum(axis=1, keepdims=True) - lacking > 0, np.inf, others)
    slack = _REL_TOL * np.maximum(1.0, np.abs(b))[:, None, None]
    fits = np.all(u + others[:, :, None] <= b[:, None, None] + slack, axis=0)
    keep = finite & fits
    # dominance: dom[l, p, q] — p dominates q for layer l
    cp, cq = c[:, :, None], c[:, None, :]
    no_worse = (cp <= cq) & np.all(u[:, :, :, None] <= u[:, :, None, :], axis=0)
    strictly = (cp < cq) | np.any(u[:, :, :, None] < u[:, :, None, :], axis=0)
    lower_index = np.arange(n_points)[:, None] < np.arange(n_points)[None, :]
    dom = no_worse & (strictly | lower_index[None]) & keep[:, :, None]
    dom &= ~np.eye(n_points, dtype=bool)[None]
    return keep & ~dom.any(axis=1)


# ------------------------------------------------------------------------------------------------- brute force


def brute_force(problem: SelectionProblem, max_assignments: int = 2_000_000) -> Selection:
    """Every assignment (LP) or every point (LS); the reference for tests. Ties: the first in product order."""
    t0 = time.perf_counter()
    n_layers, n_points = problem.n_layers, problem.n_points
    if problem.deployment == "ls":
        candidates: Any = ([p] * n_layers for p in range(n_points))
        count = n_points
    else:
        count = n_points**n_layers
        if count > max_assignments:
            raise ValueError(f"{count} assignments exceed max_assignments={max_assignments}")
        candidates = itertools.product(range(n_points), repeat=n_layers)
    best_v, best_c = math.inf, None
    for cand in candidates:
        ch = np.asarray(cand, dtype=np.int64)
        if not problem.feasible(ch):
            continue
        v = problem.value(ch)
        if v < best_v:
            best_v, best_c = v, ch
    stats = {"assignments": count, "time_s": time.perf_counter() - t0}
    if best_c is None:
        return _infeasible(problem, "brute-force", stats)
    return Selection(best_c, best_v, best_v, Status.OPTIMAL, "brute-force", stats)


# --------------------------------------------------------------------------------------------------- bisection


def bisection(problem: SelectionProblem) -> Selection:
    """Exact min-max over one resource by binary search on the cap (module docstring); LS or LP."""
    t0 = time.perf_counter()
    if problem.aggregate != "max":
        raise ValueError("bisection solves the max aggregate only")
    if problem.use.shape[0] != 1:
        raise ValueError("bisection needs exactly one resource")
    one = ls_as_lp(problem) if problem.deployment == "ls" else problem
    c, u, b = one.cost, one.use[0], float(one.budget[0])
    cand = np.unique(c[np.isfinite(c)])
    slack = _REL_TOL * max(1.0, abs(b))

    def min_use(cap: float) -> np.ndarray:
        return np.where(c <= cap, u, np.inf).min(axis=1)

    def ok(cap: float) -> bool:
        return bool(min_use(cap).sum() <= b + slack)

    stats: dict[str, Any] = {"candidates": int(cand.size)}
    if cand.size == 0 or not ok(float(cand[-1])):
        stats["time_s"] = time.perf_counter() - t0
        return _infeasible(problem, "bisection", stats)
    lo, hi, tests = 0, cand.size - 1, 1
    while lo < hi:  # invariant: ok(cand[hi]); every candidate below lo fails
        mid = (lo + hi) // 2
        tests += 1
        if ok(float(cand[mid])):
            hi = mid
        else:
            lo = mid + 1
    cap = float(cand[hi])
    masked = np.where(c <= cap, u, np.inf)
    # the minimum-use point within the cap; ties to the smaller cost, then the lower index
    choice = np.array([int(np.lexsort((np.arange(c.shape[1]), c[i], masked[i]))[0]) for i in range(c.shape[0])])
    stats.update(tests=tests, time_s=time.perf_counter() - t0)
    answer = Selection(choice.astype(np.int64), cap, cap, Status.OPTIMAL, "bisection", stats)
    return _lift(problem, answer) if problem.deployment == "ls" else answer


# ----------------------------------------------------------------------------------------------------- MILP


def _prepared(problem: SelectionProblem, use_pruning: bool) -> tuple[SelectionProblem, np.ndarray]:
    one = ls_as_lp(problem) if problem.deployment == "ls" else problem
    keep = prune(one) if use_pruning else np.isfinite(one.cost)
    return one, keep


def _decode(problem: SelectionProblem, one: SelectionProblem, pairs: tuple[np.ndarray, np.ndarray],
            x: np.ndarray) -> np.ndarray:
    """The chosen point per layer from the pair values ``x`` (the largest per layer)."""
    layer, point = pairs
    choice = np.zeros(one.n_layers, dtype=np.int64)
    best = np.full(one.n_layers, -np.inf)
    for k in np.argsort(-x, kind="stable"):
        if best[layer[k]] == -np.inf:
            best[layer[k]] = x[k]
            choice[layer[k]] = point[k]
    return np.full(problem.n_layers, int(choice[0]), dtype=np.int64) if problem.deployment == "ls" else choice


def milp(problem: SelectionProblem, *, solver: str = "highs", options: SolveOptions | None = None,
         use_pruning: bool = True) -> Selection:
    """The selection MILP of the module docstring through :func:`~dlaopt.solvers.backends.solve_linear`. Costs are
    scaled by their largest finite value; variables only exist for kept pairs. The warm start is each layer's
    least-use pair (when it fits). An answer the solver's feasibility tolerance let over a budget (by ~1e-7) is
    rejected and the model solved again with that budget tightened by twice the overshoot (at most
    :data:`MAX_BUDGET_RESOLVES` times); the bound stays the first solve's, which is valid for the true budget, and
    the answer is reported optimal only when it attains it."""
    t0 = time.perf_counter()
    one, keep = _prepared(problem, use_pruning)
    stats: dict[str, Any] = {"pairs": int(keep.sum()), "pairs_total": int(one.cost.size)}
    if not keep.any(axis=1).all():
        stats["time_s"] = time.perf_counter() - t0
        return _infeasible(problem, "milp", stats)
    layer, point = np.nonzero(keep)
    cost = one.cost[layer, point]
    scale = float(np.max(np.abs(cost))) or 1.0
    budget = one.budget.copy()
    first_bound: float | None = None
    for _attempt in range(MAX_BUDGET_RESOLVES + 1):
        res, x = _milp_once(problem, one, layer, point, cost, scale, budget, solver, options)
        stats.update(res.stats, time_s=time.perf_counter() - t0)
        if res.status == Status.INFEASIBLE and first_bound is None:
            return _infeasible(problem, "milp", stats)
        if res.x is None:
            bound = first_bound if first_bound is not None else (
                -math.inf if res.bound is None else float(res.bound) * scale)
            return Selection(np.zeros(problem.n_layers, dtype=np.int64), math.inf, bound,
                             res.status if first_bound is None else Status.NO_SOLUTION, "milp", stats)
        if first_bound is None:
            first_bound = -math.inf if res.bound is None else float(res.bound) * scale
        choice = _decode(problem, one, (layer, point), res.x[x])
        if problem.feasible(choice):
            value = problem.value(choice)
            stats["budget_resolves"] = _attempt
            status = Status.OPTIMAL if res.status == Status.OPTIMAL and _attempt == 0 else Status.FEASIBLE
            bound = min(value, first_bound)
            if _attempt and value <= first_bound * (1 + _REL_TOL) + _REL_TOL:
                status = Status.OPTIMAL  # the tightened budget cost nothing: the first bound is attained
            return Selection(choice, value, bound, status, "milp", stats)
        # the solver's feasibility tolerance let a budget row through by a hair: tighten it by the overshoot
        over = problem.consumption(choice) - problem.budget
        budget = np.where(over > 0, budget - 2 * over, budget)
    return Selection(np.zeros(problem.n_layers, dtype=np.int64), math.inf, first_bound or -math.inf,
                     Status.NO_SOLUTION, "milp", stats)


@dataclass
class _Once:
    status: Status
    x: np.ndarray | None
    bound: float | None
    stats: dict[str, Any]


def _milp_once(problem: SelectionProblem, one: SelectionProblem, layer: np.ndarray, point: np.ndarray,
               cost: np.ndarray, scale: float, budget: np.ndarray, solver: str,
               options: SolveOptions | None) -> tuple[_Once, np.ndarray]:
    """One solve of the selection MILP with the given budget row bounds."""
    from dlaopt.solvers.backends import solve_linear

    n_layers, n_res = one.n_layers, one.use.shape[0]
    b = LinearModelBuilder("codesign-selection")
    is_sum = problem.aggregate == "sum"
    x = b.add_vars("x", layer.size, upper=1, integer=True, cost=cost / scale if is_sum else 0.0)
    b.add_rows("one_point", n_layers, layer, x, 1.0, lower=1, upper=1)
    # budget rows in units of the budget, so that the solver's absolute feasibility tolerance is a relative one
    unit = np.where(np.isfinite(budget) & (np.abs(budget) > 0), np.abs(budget), 1.0)
    b.add_rows("budget", n_res, np.repeat(np.arange(n_res), layer.size), np.tile(x, n_res),
               (one.use[:, layer, point] / unit[:, None]).ravel(), upper=budget / unit)
    if not is_sum:
        t = b.add_vars("t", 1, lower=0.0 if cost.min() >= 0 else -np.inf, cost=1.0)
        b.add_rows("bottleneck", n_layers, np.concatenate([layer, np.arange(n_layers)]),
                   np.concatenate([x, np.repeat(t, n_layers)]),
                   np.concatenate([cost / scale, -np.ones(n_layers)]), upper=0)
    model = b.build()
    opts = options or SolveOptions()
    # warm start: the least-use kept pair per layer (first resource in budget units), when it fits
    ws = np.zeros(model.n_cols)
    norm = one.use[:, layer, point] / np.where(np.abs(budget) > 0, np.abs(budget), 1.0)[:, None]
    order = np.lexsort((cost, norm.sum(axis=0), layer))
    first = order[np.concatenate([[True], layer[order][1:] != layer[order][:-1]])]
    ws[x[first]] = 1
    if not is_sum:
        ws[-1] = float(np.max(cost[first])) / scale
    warm = ws if model.max_violation(ws) <= 1e-9 else None
    opts = SolveOptions(time_limit=opts.time_limit, mip_rel_gap=min(opts.mip_rel_gap, 1e-9), threads=opts.threads,
                        seed=opts.seed, node_limit=opts.node_limit, deterministic=opts.deterministic,
                        warm_start=warm,
                        extra={**opts.extra, "highs": {**HIGHS_TIGHT, **dict(opts.extra.get("highs", {}))}})
    res = solve_linear(model, solver, opts)
    stats = {**model.stats(), "solve_s": res.solve_time_s, "solver": res.solver}
    return _Once(res.status, res.x, res.bound, stats), x


# ---------------------------------------------------------------------------------------------------- CP-SAT


def _integral_scale(values: np.ndarray, max_exponent: int = 6) -> int | None:
    """The smallest ``10**k`` (``k ≤ max_exponent``) making every value integral (and not huge), or ``None``."""
    for k in range(max_exponent + 1):
        scaled = values * 10.0**k
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))) \
                and np.all(np.abs(scaled) < 2.0**52):
            return 10**k
    return None


def cpsat(problem: SelectionProblem, *, options: SolveOptions | None = None, use_pruning: bool = True) -> Selection:
    """The selection model natively in CP-SAT. Resources and budgets must be integral after scaling by some
    ``10**k`` (``k ≤ 6``; otherwise ValueError: round the table first). For ``max`` the costs enter as ranks (exact);
    for ``sum`` they enter scaled the same way when possible, otherwise rounded to ``~1e-9`` of the largest total,
    and the answer is then reported FEASIBLE with the rounding error subtracted from the bound."""
    from ortools.sat.python import cp_model

    from dlaopt.solvers.cpsat_backend import solve_cpsat_native

    t0 = time.perf_counter()
    one, keep = _prepared(problem, use_pruning)
    stats: dict[str, Any] = {"pairs": int(keep.sum()), "pairs_total": int(one.cost.size)}
    if not keep.any(axis=1).all():
        stats["time_s"] = time.perf_counter() - t0
        return _infeasible(problem, "cpsat", stats)
    layer, point = np.nonzero(keep)
    cost = one.cost[layer, point]
    use = one.use[:, layer, point]
    r_scale = _integral_scale(np.concatenate([use.ravel(), one.budget[np.isfinite(one.budget)]]))
    if r_scale is None:
        raise ValueError("CP-SAT needs resources and budgets integral after scaling by 10**k, k <= 6")
    rounded = False
    if problem.aggregate == "max":
        ranks = np.unique(cost, return_inverse=True)[1].astype(np.int64)
        coef, c_scale = ranks, 1.0
    else:
        s = _integral_scale(cost)
        if s is not None and np.abs(cost).max() * s * one.n_layers < 2.0**52:
            c_scale = float(s)
        else:
            c_scale = 1e9 / max(float(np.abs(cost).max()) * one.n_layers, 1e-300)
            rounded = True
        coef = np.round(cost * c_scale).astype(np.int64)
    m = cp_model.CpModel()
    xs = [m.new_bool_var(f"x{k}") for k in range(layer.size)]
    per_layer: list[list[int]] = [[] for _ in range(one.n_layers)]
    for k, lay in enumerate(layer.tolist()):
        per_layer[lay].append(k)
    for ks in per_layer:
        m.add_exactly_one(xs[k] for k in ks)
    for r in range(one.use.shape[0]):
        if not np.isfinite(one.budget[r]):
            continue
        w = np.round(use[r] * r_scale).astype(np.int64).tolist()
        cap = math.floor(float(one.budget[r]) * r_scale + 1e-9 * max(1.0, abs(float(one.budget[r]) * r_scale)))
        m.add(sum(wk * xs[k] for k, wk in enumerate(w) if wk) <= cap)
    coef_list = coef.tolist()
    terms = [sum(coef_list[k] * xs[k] for k in ks) for ks in per_layer]
    if problem.aggregate == "max":
        t = m.new_int_var(int(coef.min()), int(coef.max()), "t")
        m.add_max_equality(t, terms)
        m.minimize(t)
    else:
        m.minimize(sum(terms))
    res = solve_cpsat_native(m, options or SolveOptions(mip_rel_gap=0.0), variables=xs)
    stats.update(solve_s=res.solve_time_s, rounded_costs=rounded, time_s=time.perf_counter() - t0)
    if res.status == Status.INFEASIBLE:
        return _infeasible(problem, "cpsat", stats)
    if res.x is None:
        return Selection(np.zeros(problem.n_layers, dtype=np.int64), math.inf, -math.inf, res.status, "cpsat", stats)
    choice = _decode(problem, one, (layer, point), res.x)
    value = problem.value(choice)
    proven = res.status == Status.OPTIMAL
    if problem.aggregate == "max":
        levels = np.unique(cost)
        if proven:
            bound = value
        elif res.bound is None:
            bound = -math.inf
        else:
            bound = float(levels[min(levels.size - 1, max(0, math.ceil(float(res.bound) - 1e-9)))])
    else:
        err = 0.5 * one.n_layers / c_scale if rounded else 0.0
        bound = min(value, float(res.bound) / c_scale - err) if res.bound is not None else -math.inf
    status = Status.OPTIMAL if proven and not rounded else Status.FEASIBLE
    return Selection(choice, value, bound, status, "cpsat", stats)


# ---------------------------------------------------------------------------------------------------- dispatch

METHODS = {"brute-force": brute_force, "bisection": bisection, "milp": milp, "cpsat": cpsat, "ls-scan": ls_scan}


def solve(problem: SelectionProblem, method: str = "auto", **kwargs: Any) -> Selection:
    """``auto``: LS → the scan; LP with ``max`` and one resource → bisection; otherwise the MILP."""
    if method == "auto":
        if problem.deployment == "ls":
            method = "ls-scan"
        elif problem.aggregate == "max" and problem.use.shape[0] == 1:
            method = "bisection"
        else:
            method = "milp"
    try:
        fn = METHODS[method]
    except KeyError:
        raise ValueError(f"unknown method {method!r}: use 'auto' or one of {sorted(METHODS)}") from None
    return fn(problem, **kwargs)  # type: ignore[operator]
