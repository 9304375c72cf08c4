"""Which adjacent operators to fuse: candidate chains over a workload and an exact cover of its mappable operators.

The FLAT chapter (seed 001 Appendix A) fixes the fused pair (the logit and attend operators); here the groups are
chosen. A *candidate* is a chain of mappable operators (conv2d, depthwise conv, matmul) ``o1 -> o2 -> ... -> ok``,
``k <= max_group``, in which each ``o(i+1)`` reads what ``o(i)`` wrote, directly or through element-wise,
activation, softmax or norm operators applied to that tensor: those *between* operators are absorbed by the group as
in-place work on the staged intermediate. An absorbed operator may read a *side input* from outside the group (a
residual add's skip), but never one computed from the group's own output (a residual add several blocks down, whose
other input the blocks in between compute from ``o(i)``'s output): the group could not run as one step
(:func:`links` stops there; :func:`~dlaopt.formulations.fusion.group.group_from_workload` refuses such a group, and
a chain it rejects is no candidate). Every single mappable operator is a candidate too (run layer by layer).

Each candidate has a value (its exact fused optimum; a single operator its layer-wise optimum). Operators between two
fused operators are absorbed only when both are in one group; otherwise each runs as its own pass with a cost of its
own. With ``C_e`` the cost of such a pass, the network's objective is

    sum over chosen candidates c of value(c)  +  sum over non-mappable operators e not absorbed of C_e
  = sum_c (value(c) - sum_{e absorbed by c} C_e) x_c  +  sum_e C_e

which holds when no operator is absorbed by two chosen groups. Two groups that both absorb ``e`` each read the
other's path into ``e`` as a side input, so each would have to run first: a row ``sum_{c absorbs e} x_c <= 1`` per
such operator excludes it. More generally the chosen groups (each one step, every other operator a step of its own)
must have an execution order; a chosen set of groups that depend on each other in a cycle
(:func:`schedule_cycle`) is cut off (``sum_{c in cycle} x_c <= |cycle| - 1``: merging other operators into groups
never breaks a cycle) and the model solved again. The selection is the set partition of the mappable operators by
candidates minimising the net values: a binary ``x_c`` per candidate, one row ``sum_{c ∋ o} x_c = 1`` per operator,
solved by HiGHS (:func:`select_groups`). For a lexicographic objective (off-chip bytes, then latency) a second model
adds the row ``primary <= optimum`` and minimises the secondary values. :func:`brute_force_selection` enumerates
every partition (the reference in the tests).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlaopt.formulations.fusion.group import ABSORBABLE, descendants
from dlaopt.formulations.mapping.loopnest import is_mappable
from dlaopt.solvers.linear import LinearModelBuilder
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload.graph import Workload

# kinds of operators a chain may pass through between two fused operators: those a group applies in place
THROUGH_KINDS = ABSORBABLE
MAX_THROUGH = 8  # the most non-mappable operators a link between two mappable ones may pass through
SELECTION_GAP = 1e-9


@dataclass(frozen=True)
class Candidate:
    """A chain of mappable operators (in execution order) and the non-mappable operators between them."""

    ops: tuple[str, ...]
    between: frozenset[str] = frozenset()

    @property
    def fused(self) -> bool:
        return len(self.ops) > 1

    @property
    def label(self) -> str:
        return " + ".join(self.ops)


def links(workload: Workload, ops: Sequence[str] | None = None) -> dict[str, dict[str, frozenset[str]]]:
    """``a -> b -> between``: mappable ``b`` reads the output of mappable ``a``, directly or through at most
    :data:`MAX_THROUGH` operators of :data:`THROUGH_KINDS` applied to that tensor (``between``: those operators, on
    every such path). A path does not pass an operator whose other inputs are computed from ``a``'s output (a
    residual add blocks further down, its other input made by the operators in between): fusing across it would
    make the group wait for itself (:func:`~dlaopt.formulations.fusion.group.group_from_workload` refuses it)."""
    allowed = None if ops is None else set(ops)
    consumers = workload.consumers
    producer = workload.producer
    out: dict[str, dict[str, frozenset[str]]] = {}
    for ia, op in enumerate(workload.operators):
        if not is_mappable(op) or (allowed is not None and op.name not in allowed):
            continue
        below: set[int] | None = None
        found: dict[str, set[str]] = {}
        # depth-first over paths through non-mappable operators
        stack: list[tuple[str, tuple[str, ...]]] = [(t, ()) for t in op.outputs]
        while stack:
            tensor, path = stack.pop()
            for ci in consumers.get(tensor, []):
                c = workload.operators[ci]
                if is_mappable(c):
                    if allowed is None or c.name in allowed:
                        found.setdefault(c.name, set()).update(path)
                    continue
                if c.kind not in THROUGH_KINDS or len(path) >= MAX_THROUGH or c.name in path:
                    continue
                side = [producer[t] for t in c.inputs if t != tensor and t in producer]
                if side:
                    below = descendants(workload, [ia]) if below is None else below
                    if any(p in below for p in side):
                        continue
                stack.extend((t, (*path, c.name)) for t in c.outputs)
        out[op.name] = {b: frozenset(p) for b, p in found.items()}
    return out


def candidate_chains(workload: Workload, max_group: int, ops: Sequence[str] | None = None,
                     accept: Callable[[tuple[str, ...]], bool] | None = None) -> list[Candidate]:
    """Every single mappable operator (of ``ops``, default all), then every chain of 2 .. ``max_group`` of them
    along :func:`links` that ``accept`` (e.g. "the group builder takes it") allows, in workload order."""
    graph = links(workload, ops)
    order = {op.name: i for i, op in enumerate(workload.operators)}
    names = sorted(graph, key=order.__getitem__)
    out = [Candidate((n,)) for n in names]
    if max_group < 2:
        return out

    def grow(chain: tuple[str, ...], between: frozenset[str]) -> None:
        for nxt, via in sorted(graph[chain[-1]].items(), key=lambda kv: order[kv[0]]):
            if nxt in chain:
                continue
            c = (*chain, nxt)
            if accept is None or accept(c):
                out.append(Candidate(c, between | via))
            if len(c) < max_group:
                grow(c, between | via)

    for n in names:
        grow((n,), frozenset())
    return out


@dataclass
class Selection:
    """The chosen candidates (indices), the objective (net values plus the constant), the secondary figure when
    there is one, and how the answer was found."""

    chosen: list[int]
    value: float | None
    secondary: float | None
    status: Status
    bound: float | None = None
    solver: str = "highs"
    message: str = ""
    time_s: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)


def schedule_cycle(workload: Workload, groups: Sequence[Collection[str]]) -> list[int] | None:
    """Groups (each a set of operator names: its operators and the ones it absorbs) that depend on each other in a
    cycle once every group runs as one step (each other operator a step of its own): their indices in ``groups``,
    or ``None`` when the steps have an execution order."""
    node = {op.name: ("op", op.name) for op in workload.operators}
    for k, g in enumerate(groups):
        for o in g:
            node[o] = ("group", k)
    succ: dict[tuple, set[tuple]] = {}
    for op in workload.operators:
        for t in op.inputs:
            p = workload.producer.get(t)
            if p is None:
                continue
            u, v = node[workload.operators[p].name], node[op.name]
            if u != v:
                succ.setdefault(u, set()).add(v)
    state: dict[tuple, int] = {}  # 1 on the stack, 2 done
    for root in list(succ):
        if root in state:
            continue
        stack: list[tuple[tuple, list[tuple]]] = [(root, sorted(succ.get(root, ())))]
        path = [root]
        state[root] = 1
        while stack:
            u, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                state[u] = 2
                continue
            v = todo.pop()
            if state.get(v) == 1:
                cycle = path[path.index(v):]
                return sorted(k for kind, k in cycle if kind == "group")  # type: ignore[misc]
            if v not in state:
                state[v] = 1
                path.append(v)
                stack.append((v, sorted(succ.get(v, ()))))
    return None


def _cover_model(items: Sequence[str], candidates: Sequence[Candidate], usable: np.ndarray, cost: np.ndarray,
                 cap_row: tuple[np.ndarray, float] | None, name: str, shared: Sequence[Sequence[int]],
                 cuts: Sequence[Sequence[int]]):  # noqa: ANN202 (a LinearModel)
    """One binary per candidate: every item covered once; at most one chosen candidate per ``shared`` list (an
    operator two groups would both absorb); ``cuts``: candidate sets that may not all be chosen (they depend on
    each other in a cycle); ``cap_row``: (coefficients, upper bound) of the primary figure."""
    b = LinearModelBuilder(name)
    idx = {o: i for i, o in enumerate(items)}
    x = b.add_vars("x", len(candidates), upper=usable.astype(float), cost=cost, integer=True)
    rows, cols = [], []
    for j, c in enumerate(candidates):
        for o in c.ops:
            rows.append(idx[o])
            cols.append(x[j])
    b.add_rows("cover", len(items), np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), 1.0,
               lower=1.0, upper=1.0)
    for name_, sets, hi in (("absorbed-once", shared, None), ("schedule", cuts, -1)):
        if not sets:
            continue
        r = np.array([i for i, js in enumerate(sets) for _ in js], dtype=np.int64)
        cc = np.array([x[j] for js in sets for j in js], dtype=np.int64)
        upper = np.ones(len(sets)) if hi is None else np.array([len(js) + hi for js in sets], dtype=float)
        b.add_rows(name_, len(sets), r, cc, 1.0, upper=upper)
    if cap_row is not None:
        coef, hi_ = cap_row
        b.add_rows("primary", 1, np.zeros(len(candidates), dtype=np.int64), x, coef, upper=hi_)
    return b.build()


MAX_CUTS = 1000  # schedule cuts added before the selection gives up


def _shared(candidates: Sequence[Candidate], absorbs: Sequence[Collection[str]] | None) -> list[list[int]]:
    if absorbs is None:
        return []
    by_op: dict[str, list[int]] = {}
    for j, ops in enumerate(absorbs):
        for o in ops:
            by_op.setdefault(o, []).append(j)
    return [js for _, js in sorted(by_op.items()) if len(js) > 1]


def select_groups(items: Sequence[str], candidates: Sequence[Candidate], values: Sequence[float | None], *,
                  secondary: Sequence[float | None] | None = None, constant: float = 0.0,
                  secondary_constant: float = 0.0, options: SolveOptions | None = None,
                  absorbs: Sequence[Collection[str]] | None = None,
                  cycle: Callable[[list[int]], list[int] | None] | None = None) -> Selection:
    """The set partition of ``items`` by ``candidates`` minimising the sum of their ``values`` (``None``: the
    candidate cannot be used), plus ``constant``; with ``secondary``, among the partitions of least value, one of
    least secondary value (lexicographic). Solved exactly by HiGHS.

    ``absorbs``: per candidate, the non-mappable operators it applies in place; two chosen groups never absorb the
    same one (each would need the other's output first). ``cycle``: given the chosen candidates, the ones among them
    that depend on each other in a cycle (``None``: they can be ordered); each such set is cut off (``sum x <= |set|
    - 1``: a cycle of steps stays a cycle whatever the other operators are grouped with) and the model solved
    again."""
    from dlaopt.solvers.backends import solve_linear

    t0 = time.perf_counter()
    for c in candidates:
        for o in c.ops:
            if o not in items:
                raise ValueError(f"candidate {c.label}: '{o}' is not an item to cover")
    usable = np.array([v is not None and math.isfinite(v) for v in values], dtype=bool)
    if secondary is not None:
        usable &= np.array([v is not None and math.isfinite(v) for v in secondary], dtype=bool)
    covered = {o for c, u in zip(candidates, usable, strict=True) if u for o in c.ops}
    missing = [o for o in items if o not in covered]
    if missing:
        return Selection([], None, None, Status.INFEASIBLE, message=f"no usable candidate covers {missing[0]}",
                         time_s=time.perf_counter() - t0)
    v = np.array([float(x) if u else 0.0 for x, u in zip(values, usable, strict=True)])
    scale = max(1.0, float(np.abs(v).max(initial=0.0)))
    opts = options or SolveOptions()
    run = SolveOptions(time_limit=opts.time_limit, mip_rel_gap=SELECTION_GAP, threads=opts.threads, seed=opts.seed,
                       deterministic=opts.deterministic)
    shared = _shared(candidates, absorbs)
    cuts: list[list[int]] = []

    def solve(cost: np.ndarray, cap_row: tuple[np.ndarray, float] | None, name: str,
              warm: list[int] | None):  # noqa: ANN202 (the backend result and the model)
        while True:
            model = _cover_model(items, candidates, usable, cost, cap_row, name, shared, cuts)
            o = run
            if warm is not None:
                x0 = np.zeros(model.n_cols)
                x0[warm] = 1.0
                if model.max_violation(x0) <= 1e-9:
                    o = SolveOptions(**{**run.__dict__, "warm_start": x0})
            br = solve_linear(model, "highs", o)
            if br.x is None or cycle is None or len(cuts) >= MAX_CUTS:
                return br, model
            found = cycle([j for j in range(len(candidates)) if br.x[j] > 0.5])
            if not found:
                return br, model
            cuts.append(sorted(found))
            warm = None

    br, model = solve(v / scale, None, "fusion-selection", None)
    stats = model.stats()
    if br.x is None:
        return Selection([], None, None, br.status, message=br.message, time_s=time.perf_counter() - t0,
                         stats=stats)
    chosen = [j for j in range(len(candidates)) if br.x[j] > 0.5]
    status = br.status
    message = br.message
    if cycle is not None and cycle(chosen):
        return Selection([], None, None, Status.NO_SOLUTION, message=f"more than {MAX_CUTS} schedule cuts",
                         time_s=time.perf_counter() - t0, stats=stats)
    bound = None if br.bound is None else br.bound * scale + constant
    second = None
    if secondary is not None:
        s = np.array([float(x) if u else 0.0 for x, u in zip(secondary, usable, strict=True)])
        best = float(v[chosen].sum())
        s_scale = max(1.0, float(np.abs(s).max(initial=0.0)))
        hi = (best + 1e-9 * max(1.0, abs(best))) / scale
        br2, _ = solve(s / s_scale, (v / scale, hi), "fusion-selection-ties", chosen)
        chosen2 = [] if br2.x is None else [j for j in range(len(candidates)) if br2.x[j] > 0.5]
        if br2.x is not None and float(v[chosen2].sum()) <= hi * scale and not (cycle and cycle(chosen2)):
            chosen = chosen2
            if br2.status != Status.OPTIMAL:
                status = Status.FEASIBLE
        else:
            status = Status.FEASIBLE
        second = float(s[chosen].sum()) + secondary_constant
    value = float(v[chosen].sum()) + constant
    if bound is not None:
        bound = min(bound, value)
    stats = {**stats, "schedule_cuts": len(cuts)}
    return Selection(chosen, value, second, status, bound, br.solver, message, time.perf_counter() - t0, stats)


def brute_force_selection(items: Sequence[str], candidates: Sequence[Candidate], values: Sequence[float | None], *,
                          secondary: Sequence[float | None] | None = None,
                          absorbs: Sequence[Collection[str]] | None = None,
                          cycle: Callable[[list[int]], list[int] | None] | None = None,
                          ) -> tuple[list[int], float, float] | None:
    """Every partition of ``items`` by usable candidates enumerated (those in which two candidates absorb the same
    operator or ``cycle`` finds a cycle left out): the least (value, secondary) as (chosen, value, secondary);
    ``None`` when no partition exists. Exponential: for tests on small networks."""
    sec = list(secondary) if secondary is not None else [0.0] * len(candidates)
    usable = [j for j in range(len(candidates))
              if values[j] is not None and math.isfinite(values[j]) and sec[j] is not None  # type: ignore[arg-type]
              and math.isfinite(sec[j])]  # type: ignore[arg-type]
    by_item: dict[str, list[int]] = {o: [] for o in items}
    for j in usable:
        for o in candidates[j].ops:
            by_item[o].append(j)
    best: tuple[float, float, list[int]] | None = None

    def rec(covered: frozenset[str], chosen: list[int], total: float, total2: float) -> None:
        nonlocal best
        rest = [o for o in items if o not in covered]
        if not rest:
            taken = [o for j in chosen for o in (absorbs[j] if absorbs is not None else ())]
            if len(taken) != len(set(taken)) or (cycle is not None and cycle(sorted(chosen))):
                return
            if best is None or (total, total2) < (best[0], best[1]):
                best = (total, total2, list(chosen))
            return
        for j in by_item[rest[0]]:
            ops = candidates[j].ops
            if any(o in covered for o in ops):
                continue
            rec(covered | set(ops), [*chosen, j], total + float(values[j]),  # type: ignore[arg-type]
                total2 + float(sec[j]))  # type: ignore[arg-type]

    rec(frozenset(), [], 0.0, 0.0)
    if best is None:
        return None
    return best[2], best[0], best[1]


__all__ = ["MAX_THROUGH", "THROUGH_KINDS", "Candidate", "Selection", "brute_force_selection", "candidate_chains",
           "links", "schedule_cycle", "select_groups"]
