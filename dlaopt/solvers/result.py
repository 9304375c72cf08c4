"""Solve options, statuses, the one gap definition, and what backends and the harness return."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np


class Status(StrEnum):
    OPTIMAL = "optimal"  # proven optimal within the requested relative gap
    FEASIBLE = "feasible"  # a verified solution, optimality not proven (time/node limit, or a heuristic)
    INFEASIBLE = "infeasible"  # proven to have no solution
    NO_SOLUTION = "no_solution"  # the limit was hit before any solution was found
    ERROR = "error"  # solver failure, or a solution the independent evaluator rejected


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """The one gap definition used everywhere (minimisation): ``(objective - bound) / max(|objective|, 1e-9)``.

    ``0`` when objective and bound coincide (including both zero); ``None`` when either is missing;
    ``inf`` when the bound is ``-inf``.
    """
    if objective is None or bound is None or math.isnan(objective) or math.isnan(bound):
        return None
    if bound == -math.inf:
        return math.inf
    diff = objective - bound
    if abs(diff) <= 1e-9 * max(1.0, abs(objective)):
        return 0.0
    return max(0.0, diff) / max(abs(objective), 1e-9)


@dataclass(frozen=True)
class TracePoint:
    time_s: float
    incumbent: float | None
    bound: float | None


ProgressCallback = Callable[[TracePoint], None]


class TraceRecorder:
    """Incumbent/bound trace shared by the backends' callbacks: records points and forwards them to ``progress``.

    A user callback that raises is remembered in ``error`` (and not called again) instead of unwinding through the
    solver's C++ frames; the backend re-raises it after the solve."""

    def __init__(self, progress: ProgressCallback | None) -> None:
        self.progress = progress
        self.points: list[TracePoint] = []
        self.t0 = time.perf_counter()
        self.incumbent: float | None = None
        self.bound: float | None = None
        self.error: BaseException | None = None

    def _emit(self, point: TracePoint) -> None:
        self.points.append(point)
        if self.progress is not None and self.error is None:
            try:
                self.progress(point)
            except Exception as exc:
                self.error = exc


@dataclass
class SolveOptions:
    """What every backend honours. ``node_limit`` and ``deterministic`` make runs reproducible in tests
    (wall-clock limits never are)."""

    time_limit: float | None = None
    mip_rel_gap: float = 1e-4
    threads: int | None = None
    seed: int = 0
    node_limit: int | None = None
    deterministic: bool = False
    verbose: bool = False
    warm_start: np.ndarray | None = None
    progress: ProgressCallback | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # backend-specific options passed through
    # time.monotonic() by which the whole command must be done (--total-time-limit); work that splits itself over
    # worker processes caps each piece by it and stops waiting for pieces not back by then
    deadline: float | None = None

    def end_by(self) -> float | None:
        """The ``time.monotonic()`` by which a solve started now must end: its own time limit from now, capped by
        the command's :attr:`deadline` (``None``: neither is set)."""
        own = None if self.time_limit is None else time.monotonic() + self.time_limit
        if self.deadline is None:
            return own
        return self.deadline if own is None else min(own, self.deadline)


@dataclass
class BackendResult:
    """What a backend returns for a :class:`~dlaopt.solvers.linear.LinearModel` (or native model)."""

    status: Status
    x: np.ndarray | None
    objective: float | None
    bound: float | None
    solver: str
    solver_version: str
    solve_time_s: float
    trace: list[TracePoint] = field(default_factory=list)
    message: str = ""
    raw: Any = None  # the native solver object or result, for callers that need more
