"""One pipeline stage: an instance document of one problem, every requested method run through the solve-and-verify
harness, and the verified solution handed on.

A stage **fails** — :class:`StageFailed`, naming the stage — when its instance is rejected or infeasible, when a
method returns a solution the independent evaluator rejects (``status: error``: a defect, never papered over), or
when no method produced a verified solution. Otherwise the solution handed on is the exact method's when it is
verified, else the best verified heuristic's (a time limit without an incumbent is reported, not fatal).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlaopt.errors import DlaoptError
from dlaopt.harness import Prepared, Result, not_started, prepare, solve
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status


class StageFailed(DlaoptError):
    """A pipeline stage that could not hand a verified solution on."""

    def __init__(self, stage: str, message: str) -> None:
        self.stage = stage
        self.message = message
        super().__init__(f"stage '{stage}' failed: {message}")


@dataclass
class StageOutcome:
    """What one stage did: its instance document, every method's verified result and the one handed on."""

    name: str
    title: str
    instance: dict[str, Any]
    results: list[Result]
    chosen: Result
    prepared: Prepared
    summary: dict[str, Any] = field(default_factory=dict)
    time_s: float = 0.0

    def result(self, method: str) -> Result | None:
        return next((r for r in self.results if r.method == method), None)

    def rows(self) -> list[dict[str, Any]]:
        """One row per method: status, objective, bound, gap, time, verified, and whether it was handed on."""
        return [{"method": r.method, "status": r.status.value, "objective": r.objective, "bound": r.bound,
                 "gap": r.gap, "time_s": r.time_s, "verified": r.verified, "used": r is self.chosen}
                for r in self.results]

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.name, "title": self.title, "time_s": self.time_s, "instance": self.instance,
                "methods": self.rows(), "used": self.chosen.method, "objective_name": self.chosen.objective_name,
                "summary": self.summary, "solution": self.chosen.solution_document()}


def run_stage(name: str, title: str, document: Mapping[str, Any], methods: Sequence[str],
              options: SolveOptions) -> StageOutcome:
    """Run ``methods`` on the instance ``document`` (heuristics first: they warm-start the exact methods)."""
    t0 = time.perf_counter()
    try:
        instance = instance_from_dict(document, source=f"<{name} stage>")
        prepared = prepare(instance)
    except DlaoptError as exc:
        raise StageFailed(name, str(exc)) from None
    kinds = {m.name: m.kind for m in prepared.problem.methods}
    unknown = [m for m in methods if m not in kinds]
    if unknown:
        raise StageFailed(name, f"unknown method(s) {', '.join(unknown)} (the {prepared.problem.name} problem has "
                                f"{', '.join(kinds)})")
    ordered = [m for m in methods if kinds[m] == "heuristic"] + [m for m in methods if kinds[m] != "heuristic"]
    results = []
    for m in ordered:  # with a total time limit (options.deadline): at most the time left, nothing after it
        opts = options
        if options.deadline is not None:
            left = options.deadline - time.monotonic()
            if left <= 0:
                results.append(not_started(prepared, m))
                continue
            opts = dataclasses.replace(options, time_limit=left if options.time_limit is None else min(
                options.time_limit, left))
        results.append(solve(prepared, m, options=opts))
    broken = [r for r in results if r.status == Status.ERROR]
    if broken:
        r = broken[0]
        why = "; ".join(r.verification.get("violations", [])[:3]) or r.message
        raise StageFailed(name, f"method '{r.method}' returned a solution the evaluator rejects or failed: {why}")
    verified = [r for r in results if r.verified and r.objective is not None]
    if not verified:
        why = "; ".join(f"{r.method}: {r.status.value}{' (' + r.message + ')' if r.message else ''}" for r in results)
        raise StageFailed(name, f"no method produced a verified solution ({why})")
    exact = [r for r in verified if kinds[r.method] != "heuristic"]
    chosen = min(exact or verified, key=lambda r: float(r.objective))  # type: ignore[arg-type]
    return StageOutcome(name, title, dict(document), results, chosen, prepared, time_s=time.perf_counter() - t0)


__all__ = ["StageFailed", "StageOutcome", "run_stage"]
