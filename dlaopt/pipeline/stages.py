"""One pipeline stage: an instance document of one problem, every requested method run through the solve-and-verify
harness, and the verified solution handed on.

A stage **fails** — :class:`StageFailed`, naming the stage — when its instance is rejected or infeasible, when a
method returns a solution the independent evaluator rejects (``status: error``: a defect, never papered over), or
when no method produced a verified solution. Otherwise the solution handed on is the exact method's when it is
verified, else the best verified heuristic's (a time limit without an incumbent is reported, not fatal); in a stage cut
short by the total time limit, the best verified solution of any method (the exact one on a tie).

With a total time limit (``options.deadline``) a stage that still hands on a verified solution but was cut short by
it — methods not started, a solve stopped by it, mapping layers completed by a heuristic — says so in its
:attr:`StageOutcome.status`; a stage left without a verified solution only because of it raises
:class:`StageFailed` with ``total_time_limit=True`` (the pipeline then reports it as not finished).
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
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE
from dlaopt.solvers.result import SolveOptions, Status

DONE = "done"
CUT_SHORT = "done, cut short by the total time limit"


class StageFailed(DlaoptError):
    """A pipeline stage that could not hand a verified solution on."""

    def __init__(self, stage: str, message: str, *, total_time_limit: bool = False) -> None:
        self.stage = stage
        self.message = message
        self.total_time_limit = total_time_limit  # the only reason is the total time limit (nothing is wrong)
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
    status: str = DONE  # or CUT_SHORT + ": what the total time limit left out" (the solution is still verified)

    @property
    def cut_short(self) -> bool:
        return self.status != DONE

    def result(self, method: str) -> Result | None:
        return next((r for r in self.results if r.method == method), None)

    def rows(self) -> list[dict[str, Any]]:
        """One row per method: status, objective, bound, gap, time, verified, and whether it was handed on."""
        return [{"method": r.method, "status": r.status.value, "objective": r.objective, "bound": r.bound,
                 "gap": r.gap, "time_s": r.time_s, "verified": r.verified, "used": r is self.chosen}
                for r in self.results]

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.name, "title": self.title, "status": self.status, "time_s": self.time_s,
                "instance": self.instance,
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
    capped: set[str] = set()  # methods whose time limit the time left cut down
    for m in ordered:  # with a total time limit (options.deadline): at most the time left, nothing after it
        opts = options
        if options.deadline is not None:
            left = options.deadline - time.monotonic()
            if left <= 0:
                results.append(not_started(prepared, m))
                continue
            if options.time_limit is None or left < options.time_limit:
                capped.add(m)
            opts = dataclasses.replace(options, time_limit=left if options.time_limit is None else min(
                options.time_limit, left))
        results.append(solve(prepared, m, options=opts))
    broken = [r for r in results if r.status == Status.ERROR]
    if broken:
        r = broken[0]
        why = "; ".join(r.verification.get("violations", [])[:3]) or r.message
        raise StageFailed(name, f"method '{r.method}' returned a solution the evaluator rejects or failed: {why}")
    verified = [r for r in results if r.verified and r.objective is not None]
    expired = options.deadline is not None and time.monotonic() >= options.deadline
    limited = expired or any(r.method in capped and kinds[r.method] != "heuristic" and r.status != Status.OPTIMAL
                             for r in results)  # an exact solve the time left stopped short of optimal
    if not verified:
        why = "; ".join(f"{r.method}: {r.status.value}{' (' + r.message + ')' if r.message else ''}" for r in results)
        by_limit = expired and not any(r.status == Status.INFEASIBLE for r in results)
        raise StageFailed(name, f"no method produced a verified solution ({why})", total_time_limit=by_limit)
    exact = [r for r in verified if kinds[r.method] != "heuristic"]
    if limited:  # an exact solve cut short may be worse than a heuristic: the best verified (exact on a tie)
        chosen = min(verified, key=lambda r: (float(r.objective or 0.0), kinds[r.method] == "heuristic"))
    else:
        chosen = min(exact or verified, key=lambda r: float(r.objective))  # type: ignore[arg-type]
    out = StageOutcome(name, title, dict(document), results, chosen, prepared, time_s=time.perf_counter() - t0)
    if limited:
        out.status = f"{CUT_SHORT}: {_cut_short(results, kinds)}"
    return out


def _cut_short(results: Sequence[Result], kinds: Mapping[str, str]) -> str:
    """What the total time limit left out of a stage's methods."""
    notes = []
    skipped = [r.method for r in results if r.message == NOT_STARTED_MESSAGE]
    if skipped:
        notes.append(f"not started: {', '.join(skipped)}")
    for r in results:
        if r.message == NOT_STARTED_MESSAGE:
            continue
        left = r.metrics.get("layers_not_solved")
        if left:
            done_by = r.metrics.get("layers_completed_by_heuristic") or {}
            notes.append(f"{r.method}: {len(left)} layer{'s' if len(left) != 1 else ''} not solved, completed by the "
                         f"{'/'.join(sorted(set(done_by.values())))} heuristic")
        elif kinds.get(r.method) != "heuristic" and r.status != Status.OPTIMAL:
            notes.append(f"{r.method}: stopped {r.status.value}")
        elif r.status == Status.NO_SOLUTION and "total time limit" in r.message:
            notes.append(f"{r.method}: stopped without a solution")
    return "; ".join(notes) or "the time left ran out as it finished"


__all__ = ["StageFailed", "StageOutcome", "run_stage"]
