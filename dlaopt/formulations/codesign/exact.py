r"""The proven optimum of co-design: selection over a lazily refined cost table.

The problem is a selection over the table ``f[u, p]`` of :mod:`.tables` (:mod:`.selection` states LS and LP):
LS picks one point ``p`` for all layers, LP a point ``p_l`` per layer under the summed budget. Computing every
entry would mean a mapping MILP per (layer shape, design point); instead the table starts at its lower bounds and is
refined where the selection looks:

1. Solve the selection exactly on the lower-bound table ``lb`` (with the user's restrictions: disallowed or capped
   entries are ``inf``). Its value ``v`` is a lower bound on the optimum, because ``lb ≤ f`` entry-wise and the
   selection value is non-decreasing in every entry (a sum or a maximum); if it is infeasible, so is the problem
   (the budget rows do not depend on the table, and an ``inf`` in ``lb`` is an ``inf`` in ``f``).
2. If every entry the answer uses is settled, its true value is known: it is optimal when it equals ``v`` (up to the
   solvers' tolerance); if some used entry still has a gap (its MILP ran out of time), the answer stands with the
   bound ``v``.
3. Otherwise compute the unsettled entries it uses (which also tightens others, :mod:`.tables`) and go to 1.

Each round settles at least one entry, so the loop ends after at most ``U·P`` rounds; in practice the bounds keep it
to the few points that could still win. The best assignment whose entries are all known (by upper bounds ``ub``) is
kept as the incumbent, so a run cut short by its time limit still returns a valid design with a gap.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlaopt.formulations.codesign.selection import Selection, SelectionProblem, solve
from dlaopt.formulations.codesign.tables import CostTables
from dlaopt.solvers.result import Status, relative_gap

TOLERANCE = 1e-6  # relative: the selection MILP's values are compared with the recomputed sums at this precision


@dataclass
class Budget:
    """Per-point resource use (area mm², power mW) and the caps on their LS peak / LP sum."""

    use: dict[str, np.ndarray]
    caps: dict[str, float]


@dataclass
class SelectionSetup:
    """What the selection sees besides the table: the unique layer of every layer, multiplicities, the points each
    layer may use (``allowed[l, p]``), per-layer caps on the figure (``cap[l]``, ``inf``: none), the deployment and
    how LP latency aggregates."""

    unique_of: np.ndarray  # [L] -> u
    allowed: np.ndarray  # [L, P] bool
    cap: np.ndarray  # [L]
    deployment: str
    aggregate: str
    budget: Budget

    @property
    def n_layers(self) -> int:
        return int(self.unique_of.size)


def selection_problem(setup: SelectionSetup, table: np.ndarray) -> SelectionProblem:
    """The selection over ``table[u, p]`` (LS: one row per unique layer weighted by its multiplicity for sums; LP:
    one row per layer)."""
    per_layer = table[setup.unique_of]  # [L, P]
    per_layer = np.where(setup.allowed & (per_layer <= setup.cap[:, None] * (1 + 1e-12)), per_layer, math.inf)
    if setup.deployment == "ls" and setup.aggregate == "sum":
        # layers of one shape have equal rows: fold them into one row per shape, weighted (a point is usable by
        # LS only if every layer can run on it, which the inf entries keep)
        order = np.unique(setup.unique_of)
        rows = []
        for u in order:
            members = np.flatnonzero(setup.unique_of == u)
            block = per_layer[members]
            rows.append(np.where(np.isinf(block).any(axis=0), math.inf, block.sum(axis=0)))
        cost = np.array(rows)
    else:
        cost = per_layer
    return SelectionProblem.create(cost, dict(setup.budget.use), dict(setup.budget.caps),
                                   aggregate=setup.aggregate, deployment=setup.deployment)


def assignment_value(setup: SelectionSetup, table: np.ndarray, choice: np.ndarray) -> float:
    """The objective of a per-layer assignment over ``table`` (inf if any entry is inf or not allowed)."""
    vals = table[setup.unique_of, choice]
    ok = setup.allowed[np.arange(setup.n_layers), choice] & (vals <= setup.cap * (1 + 1e-12))
    if not ok.all() or not np.isfinite(vals).all():
        return math.inf
    return float(vals.max() if setup.aggregate == "max" else vals.sum())


@dataclass
class CodesignAnswer:
    """The chosen point of every layer, its value (from known entries), a proven lower bound, the status."""

    choice: np.ndarray | None
    value: float
    bound: float
    status: Status
    rounds: int = 0
    time_s: float = 0.0
    message: str = ""
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        if self.choice is None:
            return None
        return relative_gap(self.value, self.bound)


def _expand(setup: SelectionSetup, problem: SelectionProblem, sel: Selection) -> np.ndarray:
    """A per-layer choice from a selection answer (LS: the one point for every layer)."""
    if setup.deployment == "ls":
        return np.full(setup.n_layers, int(sel.choice[0]), dtype=np.int64)
    return np.asarray(sel.choice, dtype=np.int64)


def _incumbent(setup: SelectionSetup, tables: CostTables, method: str) -> tuple[np.ndarray | None, float]:
    """The best assignment over the known upper bounds (entries with a mapping)."""
    ub = tables.ub
    if not np.isfinite(ub).any():
        return None, math.inf
    sel = solve(selection_problem(setup, ub), method)
    if sel.status not in (Status.OPTIMAL, Status.FEASIBLE) or not math.isfinite(sel.value):
        return None, math.inf
    choice = _expand(setup, selection_problem(setup, ub), sel)
    return choice, assignment_value(setup, ub, choice)


def solve_codesign(setup: SelectionSetup, tables: CostTables, *, time_limit: float | None = None,
                   method: str = "auto", max_rounds: int = 100_000) -> CodesignAnswer:
    """Refine ``tables`` until the selection on its lower bounds is attained (module docstring)."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    bound = -math.inf
    rounds = 0
    best: tuple[np.ndarray | None, float] = (None, math.inf)
    status: Status | None = None  # None: stopped by the time limit
    message = ""
    while rounds < max_rounds:
        rounds += 1
        problem = selection_problem(setup, tables.values())
        sel = solve(problem, method)
        if sel.status == Status.INFEASIBLE:
            status, message = Status.INFEASIBLE, "no assignment of design points fits the budget and the restrictions"
            best = (None, math.inf)
            bound = math.inf
            break
        if sel.status not in (Status.OPTIMAL, Status.FEASIBLE):
            status, message = sel.status, f"the selection model ended {sel.status.value}"
            break
        bound = max(bound, float(sel.bound))
        choice = _expand(setup, problem, sel)
        pairs = [(int(setup.unique_of[k]), int(choice[k])) for k in range(setup.n_layers)]
        open_pairs = [(u, p) for u, p in pairs if not tables.settled[u, p]]
        if not open_pairs:
            value = assignment_value(setup, tables.ub, choice)
            if value < best[1]:
                best = (choice, value)
            status = Status.OPTIMAL if value <= bound * (1 + TOLERANCE) + 1e-9 else Status.FEASIBLE
            if status == Status.FEASIBLE:
                message = "some entries of the chosen design were not proven optimal within their time limit"
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
        tables.compute(open_pairs, deadline)
    else:
        message = f"stopped after {max_rounds} refinement rounds"
    if status != Status.INFEASIBLE:
        inc = _incumbent(setup, tables, method)
        if inc[1] < best[1]:
            best = inc
        if status == Status.OPTIMAL and best[1] < bound * (1 - TOLERANCE) - 1e-9:
            status, message = Status.ERROR, "an assignment beats the proven lower bound: the table's bounds are wrong"
        if status is None and best[0] is None:
            status = Status.NO_SOLUTION
            message = message or "the time limit came before any design was evaluated in full"
        if status is None:
            status = Status.FEASIBLE
            message = message or "time limit reached; the best design found so far is returned with its bound"
    assert status is not None
    return CodesignAnswer(best[0], best[1], bound, status, rounds, time.perf_counter() - t0, message, tables.stats())
