"""Schedule selection and hardware co-design as optimisation models over a :class:`CostTable`.

The decision: one design point ``h`` (shared by all layers) and one schedule ``s_l`` per layer. With per-layer
figures ``f[l, s, h] = E^a·D^b`` the seed's network figure is separable, ``Σ_l f[l, s_l, h]``; the exhaustive sweep
(§4.2) evaluates it on every point. Two questions the sweep cannot answer cheaply are modelled exactly here:

**A limit on distinct schedules** (the control logic supports at most ``k`` of the five). As a MILP over the
design points ``H'`` that can still win, with ``y_{l,s,h}`` the share of layer ``l`` run with schedule ``s`` on
point ``h``::

    min  Σ_{l,s,h} f[l,s,h]·y_{l,s,h}
    s.t. Σ_{h∈H'} z_h = 1,   Σ_h area_h·z_h ≤ budget              (one design point, within the area budget)
         Σ_s y_{l,s,h} = z_h              for every l, h      (each layer runs once, on the chosen point)
         x_{l,s} = Σ_h y_{l,s,h},  Σ_s x_{l,s} = 1            (one schedule per layer)
         x_{l,s} ≤ u_s,  Σ_s u_s ≤ k                          (at most k supported schedules)
         z, x, u binary;  y ≥ 0

``y`` disaggregates ``x_{l,s}·z_h`` (it is integral whenever ``x`` and ``z`` are), which makes the LP relaxation
tight: on a single point it is LOS itself. ``H'`` keeps the points whose unrestricted LOS value (a lower
bound of the restricted one) is below an incumbent found by trying every allowed schedule subset on the best few
points; every other point provably cannot beat it. An infeasible ``(l, s, h)`` enters with a figure above the
incumbent, so it is never chosen.

**The true network E·D**, ``(Σ_l E_l)·(Σ_l D_l)``, is not separable. On one design point the product is
quasi-concave, so its minimum over the convex hull of achievable ``(ΣE, ΣD)`` pairs lies at a vertex of the
hull's lower-left boundary, and every such vertex minimises ``ΣE + λ·ΣD`` for some ``λ ≥ 0`` — a weighted-sum
(ε-constraint) sweep. Per layer the minimiser of ``E + λ·D`` changes only at the breakpoints
``λ = (E_i − E_j)/(D_j − D_i)``, so evaluating one ``λ`` inside each interval between consecutive breakpoints
(plus one below the first and one above the last) visits every vertex: the exact optimum on that point. Over the
design space, points are visited in order of the bound ``(Σ_l min_s E)·(Σ_l min_s D)`` and the search stops once the
bound reaches the incumbent.

Ties between design points go to the smaller area, as in the seed's sweep.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlaopt.formulations.systolic.network import CostTable
from dlaopt.solvers.linear import LinearModelBuilder
from dlaopt.solvers.result import SolveOptions, Status

NETWORK_ED = "network_ed"


@dataclass
class CodesignAnswer:
    """The chosen design point (an index into the table's points), the schedule index of every layer, the network
    figure, a proven lower bound and how the answer was found."""

    point: int
    choice: np.ndarray
    value: float
    bound: float
    status: Status
    method: str
    stats: dict[str, Any] = field(default_factory=dict)


def best_index(values: np.ndarray, area: np.ndarray) -> int:
    """The smallest value, ties to the smaller area, then to the lower index."""
    order = np.lexsort((np.arange(values.size), area, values))
    return int(order[0])


def schedule_subsets(n_schedules: int, max_schedules: int | None) -> list[tuple[int, ...]]:
    """Every non-empty subset of schedule indices with at most ``max_schedules`` members (maximal ones only:
    adding a schedule never hurts)."""
    k = n_schedules if max_schedules is None else min(max_schedules, n_schedules)
    return list(itertools.combinations(range(n_schedules), k))


def los(fig: np.ndarray, allowed: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Layer-specific optimal scheduling restricted to ``allowed`` schedules: ``(Σ_l min_s f[l, s, h], argmins)``."""
    idx = np.arange(fig.shape[1]) if allowed is None else np.asarray(allowed)
    sub = fig[:, idx, :]
    best = np.argmin(sub, axis=1)
    value = np.take_along_axis(sub, best[:, None, :], axis=1)[:, 0, :].sum(axis=0)
    return value, idx[best]


def restricted_los(fig: np.ndarray, max_schedules: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per design point, the best value using at most ``max_schedules`` distinct schedules, and its choice."""
    best_v: np.ndarray | None = None
    best_c: np.ndarray | None = None
    for subset in schedule_subsets(fig.shape[1], max_schedules):
        v, c = los(fig, subset)
        if best_v is None or best_c is None:
            best_v, best_c = v, c
            continue
        better = v < best_v
        best_v = np.where(better, v, best_v)
        best_c = np.where(better[None, :], c, best_c)
    assert best_v is not None and best_c is not None
    return best_v, best_c


def _restrict(values: np.ndarray, permitted: np.ndarray | None) -> np.ndarray:
    """``values[l, s, h]`` with every schedule a layer may not run at +inf (never chosen: not a candidate)."""
    return values if permitted is None else np.where(permitted[:, :, None], values, np.inf)


# ----------------------------------------------------------------------------------------------- separable figures


def exhaustive(table: CostTable, fom: str, area: np.ndarray, *, max_schedules: int | None = None,
               permitted: np.ndarray | None = None) -> CodesignAnswer:
    """Every design point, every allowed schedule subset: the vectorised sweep (``permitted[l, s]`` false: layer
    ``l`` may not run schedule ``s``, which is then never enumerated for it)."""
    t0 = time.perf_counter()
    values, choice = restricted_los(_restrict(table.figure(fom), permitted), max_schedules)
    h = best_index(values, area)
    if not np.isfinite(values[h]):
        return CodesignAnswer(h, choice[:, h], float("inf"), float("inf"), Status.INFEASIBLE, "exhaustive",
                              {"points": int(values.size), "time_s": time.perf_counter() - t0})
    return CodesignAnswer(h, choice[:, h], float(values[h]), float(values[h]), Status.OPTIMAL, "exhaustive",
                          {"points": int(values.size), "time_s": time.perf_counter() - t0})


def milp(table: CostTable, fom: str, area: np.ndarray, *, max_schedules: int | None = None,
         options: SolveOptions | None = None, incumbent_points: int = 64,
         area_budget: float | None = None, permitted: np.ndarray | None = None) -> CodesignAnswer:
    """The MILP of the module docstring on the design points that can still win, solved by HiGHS. A layer's
    schedule that ``permitted[l, s]`` forbids has its ``x_{l,s}`` and ``y_{l,s,h}`` columns fixed to 0 (and is left
    out of the bound and the incumbent)."""
    from dlaopt.solvers.backends import solve_linear

    t0 = time.perf_counter()
    fig = _restrict(table.figure(fom), permitted)
    n_layers, n_sched, _ = fig.shape
    lower, _ = los(fig)  # unrestricted LOS: a lower bound per point
    if area_budget is not None:
        lower = np.where(area <= area_budget, lower, np.inf)  # over budget: never a candidate
    if not np.isfinite(lower).any():
        return CodesignAnswer(0, np.zeros(n_layers, dtype=int), float("inf"), float("inf"), Status.INFEASIBLE,
                              "milp", {"time_s": time.perf_counter() - t0})
    # incumbent: every allowed subset on the most promising points
    top = np.argsort(lower, kind="stable")[:incumbent_points]
    top_v, top_c = restricted_los(fig[:, :, top], max_schedules)
    top_v = np.where(np.isfinite(lower[top]), top_v, np.inf)  # points over the budget
    j = best_index(top_v, area[top])
    inc_point, inc_value, inc_choice = int(top[j]), float(top_v[j]), top_c[:, j]
    cand = np.flatnonzero(lower <= inc_value * (1 + 1e-12))
    stats: dict[str, Any] = {"points": int(fig.shape[2]), "candidates": int(cand.size),
                             "incumbent": inc_value}
    if not np.isfinite(inc_value):
        return CodesignAnswer(inc_point, inc_choice, inc_value, float(lower.min()), Status.INFEASIBLE, "milp", stats)

    scale = inc_value
    f = fig[:, :, cand] / scale
    cap = 2.0  # an infeasible or hopeless (l, s, h) costs more than the whole incumbent (= 1 after scaling)
    f = np.where(np.isfinite(f), np.minimum(f, cap), cap)
    nH = cand.size
    b = LinearModelBuilder("systolic-codesign")
    z = b.add_vars("z", nH, upper=1, integer=True)
    u = b.add_vars("u", n_sched, upper=1, integer=True)
    allow = np.ones((n_layers, n_sched)) if permitted is None else permitted.astype(np.float64)
    y = b.add_vars("y", n_layers * n_sched * nH, upper=np.repeat(allow.ravel(), nH),
                   cost=f.ravel()).reshape(n_layers, n_sched, nH)
    b.add_rows("one_point", 1, np.zeros(nH, dtype=np.int64), z, 1.0, lower=1, upper=1)
    lh = np.arange(n_layers * nH).reshape(n_layers, nH)  # rows "Σ_s y_{l,s,h} − z_h = 0"
    b.add_rows("runs_once", lh.size,
               np.concatenate([np.broadcast_to(lh[:, None, :], y.shape).ravel(), lh.ravel()]),
               np.concatenate([y.ravel(), np.tile(z, n_layers)]),
               np.concatenate([np.ones(y.size), -np.ones(lh.size)]), lower=0, upper=0)
    x = b.add_vars("x", n_layers * n_sched, upper=allow.ravel(), integer=True).reshape(n_layers, n_sched)
    ls = np.arange(n_layers * n_sched).reshape(n_layers, n_sched)  # rows "Σ_h y_{l,s,h} − x_{l,s} = 0"
    b.add_rows("schedule_share", ls.size,
               np.concatenate([np.broadcast_to(ls[:, :, None], y.shape).ravel(), ls.ravel()]),
               np.concatenate([y.ravel(), x.ravel()]),
               np.concatenate([np.ones(y.size), -np.ones(ls.size)]), lower=0, upper=0)
    b.add_rows("one_schedule", n_layers, np.repeat(np.arange(n_layers), n_sched), x.ravel(), 1.0, lower=1, upper=1)
    b.add_rows("supported", ls.size, np.concatenate([ls.ravel(), ls.ravel()]),  # x_{l,s} − u_s ≤ 0
               np.concatenate([x.ravel(), np.tile(u, n_layers)]),
               np.concatenate([np.ones(ls.size), -np.ones(ls.size)]), upper=0)
    if area_budget is not None:
        b.add_rows("area", 1, np.zeros(nH, dtype=np.int64), z, area[cand], upper=area_budget)
    k = n_sched if max_schedules is None else min(max_schedules, n_sched)
    b.add_rows("max_schedules", 1, np.zeros(n_sched, dtype=np.int64), u, 1.0, upper=k)
    model = b.build()
    # warm start: the incumbent
    hi = int(np.flatnonzero(cand == inc_point)[0])
    ws = np.zeros(model.n_cols)
    ws[z[hi]] = 1
    ws[u[np.unique(inc_choice)]] = 1
    ws[y[np.arange(n_layers), inc_choice, hi]] = 1
    ws[x[np.arange(n_layers), inc_choice]] = 1
    opts = options or SolveOptions()
    opts = SolveOptions(time_limit=opts.time_limit, mip_rel_gap=min(opts.mip_rel_gap, 1e-7), threads=opts.threads,
                        seed=opts.seed, node_limit=opts.node_limit, deterministic=opts.deterministic,
                        warm_start=ws, extra=dict(opts.extra))
    res = solve_linear(model, "highs", opts)
    stats.update(model.stats(), solve_s=res.solve_time_s, time_s=time.perf_counter() - t0)
    if res.x is None:
        return CodesignAnswer(inc_point, inc_choice, inc_value, float(lower.min()), Status.FEASIBLE, "milp", stats)
    zi = int(np.argmax(res.x[z]))
    choice = np.argmax(res.x[x], axis=1)
    h = int(cand[zi])
    value = float(fig[np.arange(n_layers), choice, h].sum())
    # the same value on a smaller point? (ties go to the smaller area, as in the sweep)
    tied = cand[np.isclose(restricted_los(fig[:, :, cand], max_schedules)[0], value, rtol=1e-12, atol=0)]
    if tied.size > 1:
        tv, tc = restricted_los(fig[:, :, tied], max_schedules)
        j = best_index(tv, area[tied])
        h, choice, value = int(tied[j]), tc[:, j], float(tv[j])
    bound = float(res.bound * scale) if res.bound is not None else float(lower.min())
    status = Status.OPTIMAL if res.status == Status.OPTIMAL else Status.FEASIBLE
    return CodesignAnswer(h, choice, value, min(bound, value), status, "milp", stats)


# ------------------------------------------------------------------------------------------------ network E·D


def min_product_on_point(energy: np.ndarray, delay: np.ndarray) -> tuple[float, np.ndarray]:
    """Exact ``min (Σ_l E[l, s_l])·(Σ_l D[l, s_l])`` over schedule choices on one design point (``[l, s]`` arrays),
    by the breakpoint sweep of the module docstring. Returns the value and the choice."""
    finite = np.isfinite(energy) & np.isfinite(delay)
    if not finite.any(axis=1).all():
        return float("inf"), np.zeros(energy.shape[0], dtype=int)
    E = np.where(finite, energy, np.inf)
    D = np.where(finite, delay, np.inf)
    # per layer, pairwise breakpoints λ = (E_i − E_j)/(D_j − D_i) > 0
    i, j = np.triu_indices(E.shape[1], k=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = (E[:, i] - E[:, j]) / (D[:, j] - D[:, i])
    lam = np.unique(lam[np.isfinite(lam) & (lam > 0)])
    # one λ inside every interval between breakpoints (geometric means), below the first and above the last
    mids = np.concatenate([[lam[0] / 2], np.sqrt(lam[:-1] * lam[1:]), [lam[-1] * 2]]) if lam.size else np.ones(1)
    # λ → 0⁺ and λ → ∞ (lexicographic minimisers) as well
    cand_choices = [_lex_min(E, D), _lex_min(D, E)]
    w = E[None, :, :] + mids[:, None, None] * D[None, :, :]
    cand_choices.extend(np.argmin(w, axis=2))
    choices = np.unique(np.array(cand_choices), axis=0)
    rows = np.arange(E.shape[0])
    prods = np.array([E[rows, c].sum() * D[rows, c].sum() for c in choices])
    k = int(np.argmin(prods))
    return float(prods[k]), choices[k]


def _lex_min(primary: np.ndarray, secondary: np.ndarray) -> np.ndarray:
    """Per row, the column minimising ``primary`` with ties broken by ``secondary``."""
    out = np.empty(primary.shape[0], dtype=int)
    for r in range(primary.shape[0]):
        out[r] = int(np.lexsort((secondary[r], primary[r]))[0])
    return out


def network_ed(table: CostTable, area: np.ndarray, *, allowed: Sequence[int] | None = None,
               permitted: np.ndarray | None = None) -> CodesignAnswer:
    """Exact minimum of the true network E·D over design points and schedules (bound-ordered search); ``allowed``:
    the schedule indices in use, ``permitted[l, s]`` false: layer ``l`` may not run schedule ``s``."""
    t0 = time.perf_counter()
    idx = np.arange(len(table.schedules)) if allowed is None else np.asarray(allowed)
    E = _restrict(table.energy, permitted)[:, idx, :]
    D = _restrict(table.delay, permitted)[:, idx, :]
    lb = np.min(E, axis=1).sum(axis=0) * np.min(D, axis=1).sum(axis=0)
    order = np.lexsort((area, lb))
    best_v, best_h, best_c = float("inf"), int(order[0]), np.zeros(E.shape[0], dtype=int)
    visited = 0
    for h in order:
        if not lb[h] < best_v * (1 + 1e-12) or not np.isfinite(lb[h]):
            break
        visited += 1
        v, c = min_product_on_point(E[:, :, h], D[:, :, h])
        if v < best_v * (1 - 1e-12) or (np.isclose(v, best_v, rtol=1e-12, atol=0) and area[h] < area[best_h]):
            best_v, best_h, best_c = v, int(h), c
    status = Status.OPTIMAL if np.isfinite(best_v) else Status.INFEASIBLE
    return CodesignAnswer(best_h, idx[best_c], best_v, best_v, status, "weighted-sum sweep",
                          {"points": int(lb.size), "visited": visited, "time_s": time.perf_counter() - t0})
