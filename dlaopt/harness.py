"""The solve-and-verify harness: one path for every problem and every method.

``solve(instance, method)``: prepare the data; run the heuristics and verify each; for an exact method build the
model, warm-start it from the best verified heuristic, solve, decode to a backend-independent solution and verify
it with the problem's independent evaluator. A solution the evaluator rejects, or whose recomputed objective differs
from the solver's, is an ``error`` — never a silent answer. When the exact solve finds nothing, the verified
heuristic solution is returned as ``feasible``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlaopt.errors import InputError
from dlaopt.formulations import get_problem
from dlaopt.formulations.base import Evaluation, ExactOutcome, HeuristicFailure, Problem
from dlaopt.io.instance import Instance
from dlaopt.solvers.conflicts import deletion_filter
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE, Deadline
from dlaopt.solvers.result import SolveOptions, Status, TracePoint, relative_gap

OBJECTIVE_TOLERANCE = 1e-6  # relative; solver and evaluator objectives must agree to this
RELAXATION_TIME_SHARE = 0.25  # at most this share of the time limit goes to the relaxations


@dataclass
class Result:
    problem: str
    instance: str
    method: str
    objective_name: str
    status: Status
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    time_s: float = 0.0
    prepare_time_s: float = 0.0
    build_time_s: float = 0.0
    solve_time_s: float = 0.0
    solver: str | None = None
    solver_version: str | None = None
    verified: bool = False
    verification: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    solution: dict[str, Any] | None = None
    trace: list[TracePoint] = field(default_factory=list)
    warm_start: dict[str, Any] | None = None
    model_stats: dict[str, int] | None = None
    relaxations: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""
    constraints: list[dict[str, Any]] = field(default_factory=list)  # the user constraints in force
    conflict: list[str] | None = None  # infeasible: the constraints (by position and kind) that cannot hold together

    def to_dict(self, *, with_solution: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "problem": self.problem,
            "instance": self.instance,
            "method": self.method,
            "objective_name": self.objective_name,
            "status": self.status.value,
            "objective": _num(self.objective),
            "bound": _num(self.bound),
            "gap": _num(self.gap),
            "time_s": self.time_s,
            "prepare_time_s": self.prepare_time_s,
            "build_time_s": self.build_time_s,
            "solve_time_s": self.solve_time_s,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "verified": self.verified,
            "verification": self.verification,
            "metrics": self.metrics,
            "warm_start": self.warm_start,
            "model_stats": self.model_stats,
            "relaxations": self.relaxations,
            "trace": [dataclasses.asdict(t) for t in self.trace],
            "message": self.message,
            "constraints": self.constraints,
            "conflict": self.conflict,
        }
        if with_solution:
            d["solution"] = self.solution
        return d

    def solution_document(self) -> dict[str, Any]:
        """The envelope written by ``dlaopt solve -o`` and read by ``dlaopt verify``."""
        doc = {"problem": self.problem, "instance": self.instance, "method": self.method,
               "objective": self.objective_name, "objective_value": _num(self.objective),
               "solution": self.solution or {}}
        if self.constraints:
            doc["constraints"] = self.constraints
        return doc


def _num(v: float | None) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, float) and math.isinf(v):
        return None
    return v


@dataclass
class Prepared:
    """An instance with its problem and prepared data, shared between the methods of one comparison."""

    instance: Instance
    problem: Problem[Any, Any]
    data: Any
    prepare_time_s: float
    heuristic_cache: dict[str, tuple[Any, Evaluation | None, float, str]] = field(default_factory=dict)


def prepare(instance: Instance) -> Prepared:
    problem = get_problem(instance.problem)
    t0 = time.perf_counter()
    data = problem.prepare(instance)
    return Prepared(instance, problem, data, time.perf_counter() - t0)


def _run_heuristic(p: Prepared, method: str, options: SolveOptions) -> tuple[Any, Evaluation | None, float, str]:
    """(solution, evaluation, seconds, message); cached per prepared instance (heuristics are deterministic)."""
    if method not in p.heuristic_cache:
        t0 = time.perf_counter()
        try:
            sol = p.problem.run_heuristic(method, p.data, options)
            ev = p.problem.evaluate(p.data, sol)
            msg = "" if ev.feasible else "the evaluator rejected the solution: " + "; ".join(ev.violations[:3])
        except HeuristicFailure as exc:
            sol, ev, msg = None, None, str(exc)
        p.heuristic_cache[method] = (sol, ev, time.perf_counter() - t0, msg)
    return p.heuristic_cache[method]


def solve(
    instance: Instance | Prepared,
    method: str = "exact",
    *,
    solver: str | None = None,
    options: SolveOptions | None = None,
    warm_start_methods: Sequence[str] | None = None,
    explain: bool = True,
) -> Result:
    """Solve ``instance`` with ``method`` and return a verified :class:`Result` (never raises for solver trouble).

    An exact method that proves a constrained instance infeasible reports the user constraints that cannot hold
    together (``Result.conflict``, named in the message) unless ``explain`` is off."""
    p = instance if isinstance(instance, Prepared) else prepare(instance)
    res = _solve(p, method, solver=solver, options=options or SolveOptions(), warm_start_methods=warm_start_methods)
    res.constraints = [c.to_dict() for c in p.problem.declared_constraints(p.instance)]
    if explain and res.status == Status.INFEASIBLE and res.constraints and p.problem.method(method).kind == "exact":
        t0 = time.perf_counter()
        _explain_conflict(p, method, solver, options or SolveOptions(), res)
        res.time_s += time.perf_counter() - t0
    return res


def _explain_conflict(p: Prepared, method: str, solver: str | None, options: SolveOptions, res: Result) -> None:
    """Find the smallest set of the user's constraints that cannot hold together (the problem's own core, e.g.
    CP-SAT's assumptions, reduced by deletion filtering over the list) and name it in ``res``."""
    declared = p.problem.declared_constraints(p.instance)
    by_path = {c.path: c for c in declared}
    start = list(declared)
    core_paths = p.problem.conflicting_constraints(p.data, options)
    if core_paths is not None:
        start = [by_path[q] for q in core_paths if q in by_path] or start
    deadline = options.deadline
    if options.time_limit is not None:
        end = time.monotonic() + options.time_limit
        deadline = end if deadline is None else min(deadline, end)

    def infeasible(subset: Sequence[Any]) -> bool | None:
        trial_opts = within(options, Deadline(None if deadline is None else deadline - time.monotonic()))
        if trial_opts is None:
            return None
        try:
            trial = prepare(p.instance.with_constraints(subset))
        except InputError:
            return None
        r = solve(trial, method, solver=solver, options=trial_opts, explain=False)
        if r.status == Status.INFEASIBLE:
            return True
        return False if r.status in (Status.OPTIMAL, Status.FEASIBLE) and r.verified else None

    without = infeasible([])
    if without is True:
        res.conflict = []
        res.message = (f"infeasible even without the {len(declared)} user constraint(s): " + res.message).rstrip(": ")
        return
    found = deletion_filter(start, infeasible, deadline=deadline)
    res.conflict = [c.label for c in found.members]
    res.metrics["conflict_tests"] = found.tests
    names = ", ".join(res.conflict)
    res.message = (f"these constraints cannot hold together: {names}"
                   + ("" if found.minimal else " (not shown minimal: some tests were not decided in time)")
                   + (f" — {res.message}" if res.message else ""))


def _solve(p: Prepared, method: str, *, solver: str | None, options: SolveOptions,
           warm_start_methods: Sequence[str] | None) -> Result:
    t_start = time.perf_counter()
    problem = p.problem
    try:
        spec = problem.method(method)
    except KeyError:
        raise InputError(f"unknown method '{method}' for problem '{problem.name}'", path=("method",),
                         expected="one of: " + ", ".join(m.name for m in problem.methods)) from None
    res = Result(problem.name, p.instance.name, method, p.instance.objective, Status.ERROR,
                 prepare_time_s=p.prepare_time_s)

    reason = problem.infeasibility_reason(p.data)
    if reason:
        res.status = Status.INFEASIBLE
        res.message = reason
        res.time_s = time.perf_counter() - t_start
        return res

    if spec.kind == "heuristic":
        sol, ev, secs, msg = _run_heuristic(p, method, options)
        res.solve_time_s = secs
        res.solver = method
        if sol is None:
            res.status, res.message = Status.NO_SOLUTION, msg
        else:
            _attach(res, problem, p.data, sol, ev)
            res.status = Status.FEASIBLE if res.verified else Status.ERROR
            res.message = msg
        res.time_s = time.perf_counter() - t_start
        return res

    outcome = problem.solve_exact(p.data, method, solver=solver, options=options)
    if outcome is not None:
        _finish_outcome(res, problem, p.data, outcome, options)
        res.time_s = time.perf_counter() - t_start
        return res

    # ---- exact: warm start from the best verified heuristic
    best: tuple[str, Any, Evaluation] | None = None
    for h in warm_start_methods if warm_start_methods is not None else problem.heuristic_names:
        sol, ev, _, _ = _run_heuristic(p, h, options)
        if sol is not None and ev is not None and ev.feasible and ev.objective is not None and (
                best is None or ev.objective < best[2].objective):  # type: ignore[operator]
            best = (h, sol, ev)
    if options.deadline is not None:  # the warm start's time counts against the total time limit
        left = max(0.1, options.deadline - time.monotonic())
        options = dataclasses.replace(options, time_limit=left if options.time_limit is None else min(
            options.time_limit, left))

    from dlaopt.solvers.backends import solve_linear

    backend = solver or spec.default_solver or "highs"
    # ---- relaxations first: a valid lower bound, and a proof of optimality when the warm start meets it
    relax_bound: float | None = None
    t_relax = time.perf_counter()
    for name, rf in problem.relaxations(p.data):
        t0 = time.perf_counter()
        relax_limit = None if options.time_limit is None else RELAXATION_TIME_SHARE * options.time_limit
        rb = solve_linear(rf.model, backend, dataclasses.replace(options, warm_start=None, progress=None,
                                                                 time_limit=relax_limit))
        res.build_time_s += time.perf_counter() - t0 - rb.solve_time_s
        res.solve_time_s += rb.solve_time_s
        b = rb.bound + rf.objective_offset if rb.bound is not None else None
        res.relaxations.append({"name": name, "status": rb.status.value, "bound": b, "time_s": rb.solve_time_s,
                                "model_stats": rf.model.stats()})
        if b is not None and rb.status in (Status.OPTIMAL, Status.FEASIBLE):
            relax_bound = b if relax_bound is None else max(relax_bound, b)
        if rb.x is not None:  # primal heuristic: repair the relaxed solution into a feasible one
            repaired = problem.repair(p.data, name, rf.decode(rb.x))
            if repaired is not None:
                ev = problem.evaluate(p.data, repaired)
                res.relaxations[-1]["repaired_objective"] = ev.objective if ev.feasible else None
                if ev.feasible and ev.objective is not None and (best is None or ev.objective < best[2].objective):
                    best = (f"{name}+repair", repaired, ev)
    early_gap = relative_gap(best[2].objective, relax_bound) if best is not None else None
    if best is not None and relax_bound is not None and early_gap is not None and early_gap <= max(
            options.mip_rel_gap, 1e-9):
        _attach(res, problem, p.data, best[1], best[2])
        res.status, res.bound, res.solver = Status.OPTIMAL, min(relax_bound, res.objective), backend
        res.gap = relative_gap(res.objective, res.bound)
        res.warm_start = {"method": best[0], "objective": best[2].objective}
        res.message = (f"the '{best[0]}' warm start is within the requested gap ({options.mip_rel_gap:g}) of the "
                       "relaxation bound: optimal within tolerance without the full model")
        res.time_s = time.perf_counter() - t_start
        return res
    if options.time_limit is not None:
        left = options.time_limit - (time.perf_counter() - t_relax)
        options = dataclasses.replace(options, time_limit=max(0.1, left))

    t0 = time.perf_counter()
    form = problem.build_milp(p.data)
    res.build_time_s += time.perf_counter() - t0
    res.model_stats = form.model.stats()
    run_opts = dataclasses.replace(options)
    if best is not None:
        try:
            run_opts.warm_start = form.encode(best[1])
            res.warm_start = {"method": best[0], "objective": best[2].objective}
        except ValueError as exc:  # a heuristic placement the model cannot represent: solve cold
            res.warm_start = {"method": best[0], "objective": best[2].objective, "rejected": str(exc)}
    br = solve_linear(form.model, backend, run_opts)
    res.solver, res.solver_version = br.solver, br.solver_version
    res.solve_time_s += br.solve_time_s
    res.trace = list(br.trace)
    res.bound = br.bound + form.objective_offset if br.bound is not None else None
    if relax_bound is not None and (res.bound is None or relax_bound > res.bound):
        res.bound = relax_bound

    if br.x is not None:
        sol = form.decode(br.x)
        ev = problem.evaluate(p.data, sol)
        _attach(res, problem, p.data, sol, ev)
        solver_obj = (br.objective + form.objective_offset) if br.objective is not None else None
        if not ev.feasible:
            res.status = Status.ERROR
            res.message = "the evaluator rejected the solver's solution: " + "; ".join(ev.violations[:5])
        elif solver_obj is None or ev.objective is None or abs(ev.objective - solver_obj) > OBJECTIVE_TOLERANCE * max(
                1.0, abs(ev.objective)):
            res.status = Status.ERROR
            res.message = (f"objective mismatch: the solver reports {solver_obj}, the evaluator recomputes "
                           f"{ev.objective}")
        else:
            res.status = Status.OPTIMAL if br.status == Status.OPTIMAL else Status.FEASIBLE
            res.message = br.message
            if best is not None and best[2].objective < ev.objective - OBJECTIVE_TOLERANCE * max(  # type: ignore[operator]
                    1.0, abs(ev.objective)):
                # the solver lost the warm start and stopped on something worse: keep the heuristic's answer
                _attach(res, problem, p.data, best[1], best[2])
                res.status = Status.FEASIBLE
                res.message = f"solver incumbent worse than the '{best[0]}' warm start; returning the warm start"
    elif best is not None and br.status != Status.INFEASIBLE:
        _attach(res, problem, p.data, best[1], best[2])
        res.status = Status.FEASIBLE
        res.message = (f"{br.solver} found no solution ({br.status.value}: {br.message}); "
                       f"returning the verified '{best[0]}' heuristic solution")
    elif br.status == Status.INFEASIBLE and best is not None:
        res.status = Status.ERROR
        res.message = f"the model is reported infeasible although '{best[0]}' found a verified solution"
    else:
        res.status = br.status if br.status != Status.OPTIMAL else Status.ERROR
        res.message = br.message or "no solution"
    if res.objective is not None and res.bound is not None and res.bound > res.objective:
        res.bound = res.objective  # numerical noise in the dual bound
    res.gap = relative_gap(res.objective, res.bound)
    if res.status == Status.FEASIBLE and res.gap == 0.0 and res.verified:
        res.status = Status.OPTIMAL  # the incumbent meets a proven bound (e.g. a relaxation's)
    if res.status == Status.OPTIMAL and res.gap is not None and res.gap > max(options.mip_rel_gap, 1e-9) * 1.0001:
        res.status = Status.FEASIBLE
    res.time_s = time.perf_counter() - t_start
    return res


def _finish_outcome(res: Result, problem: Problem[Any, Any], data: Any, outcome: ExactOutcome[Any],
                    options: SolveOptions) -> None:
    """Verify a problem driver's answer: the evaluator must accept it, and the model's value of it must equal the
    evaluator's at a proven optimum (and may not be below it anywhere: the model never claims less than the truth)."""
    res.solver, res.solver_version = outcome.solver, outcome.solver_version
    res.trace = list(outcome.trace)
    res.model_stats = outcome.model_stats
    res.warm_start = outcome.warm_start
    res.message = outcome.message
    res.solve_time_s = outcome.solve_time_s
    res.bound = outcome.bound
    if outcome.solution is None:
        res.status = outcome.status if outcome.status != Status.OPTIMAL else Status.ERROR
        res.message = outcome.message or "no solution"
        return
    ev = problem.evaluate(data, outcome.solution)
    _attach(res, problem, data, outcome.solution, ev)
    res.metrics.update(outcome.metrics)
    res.status = outcome.status
    tol = (outcome.objective_tolerance or OBJECTIVE_TOLERANCE) * max(1.0, abs(ev.objective or 0.0))
    if not ev.feasible:
        res.status = Status.ERROR
        res.message = "the evaluator rejected the solver's solution: " + "; ".join(ev.violations[:5])
    elif outcome.model_objective is not None and ev.objective is not None and (
            ev.objective > outcome.model_objective + tol
            or (outcome.status == Status.OPTIMAL and abs(ev.objective - outcome.model_objective) > tol)):
        res.status = Status.ERROR
        res.message = (f"objective mismatch: the model reports {outcome.model_objective}, the evaluator recomputes "
                       f"{ev.objective}")
    if res.objective is not None and res.bound is not None and res.bound > res.objective:
        res.bound = res.objective
    res.gap = relative_gap(res.objective, res.bound)
    if res.status == Status.OPTIMAL and res.gap is not None and res.gap > max(options.mip_rel_gap, 1e-9) * 1.0001:
        res.status = Status.FEASIBLE


def _attach(res: Result, problem: Problem[Any, Any], data: Any, sol: Any, ev: Evaluation | None) -> None:
    if ev is None:
        ev = problem.evaluate(data, sol)
    res.verified = ev.feasible
    res.objective = ev.objective
    res.verification = {"verified": ev.feasible, "objective": ev.objective, "violations": list(ev.violations)}
    res.metrics = dict(ev.metrics)
    res.solution = problem.solution_to_dict(data, sol)


def within(options: SolveOptions | None, deadline: Deadline | None) -> SolveOptions | None:
    """``options`` bounded by a total time limit: the time limit capped by the time left and the deadline set (for
    work split over worker processes); ``None`` once the deadline has passed (the piece is not to be started)."""
    options = options or SolveOptions()
    if deadline is None or not deadline.bounded:
        return options
    if deadline.expired:
        return None
    return dataclasses.replace(options, time_limit=deadline.limit(options.time_limit), deadline=deadline.end)


def not_started(instance: Prepared, method: str) -> Result:
    """The result of a method the total time limit left out: ``no_solution``, saying so."""
    return Result(instance.problem.name, instance.instance.name, method, instance.instance.objective,
                  Status.NO_SOLUTION, prepare_time_s=instance.prepare_time_s, message=NOT_STARTED_MESSAGE)


def compare(
    instance: Instance | Prepared,
    methods: Sequence[str] | None = None,
    *,
    solver: str | None = None,
    options: SolveOptions | None = None,
    deadline: Deadline | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Every method that applies to one prepared instance (:meth:`Problem.methods_for`; heuristics run once and are
    shared as warm starts), or the ``methods`` named.

    ``deadline`` (a total time limit): each method gets at most the time left; the methods it leaves out are
    ``no_solution`` with the message that the limit was reached before they started. ``on_result`` sees each
    result as it is finished (a caller interrupted part-way keeps them)."""
    p = instance if isinstance(instance, Prepared) else prepare(instance)
    names = list(methods) if methods else p.problem.methods_for(p.data)
    out = []
    for name in names:  # --solver picks the backend of the default exact method; others keep their own
        opts = within(options, deadline)
        res = not_started(p, name) if opts is None else solve(p, name, solver=solver if name == "exact" else None,
                                                              options=opts)
        out.append(res)
        if on_result is not None:
            on_result(res)
    return out


def verify(instance: Instance | Prepared, document: Mapping[str, Any]) -> Evaluation:
    """Check a serialized solution against an instance with the problem's independent evaluator."""
    p = instance if isinstance(instance, Prepared) else prepare(instance)
    if document.get("problem") != p.problem.name:
        raise InputError(f"the solution is for problem '{document.get('problem')}', the instance is "
                         f"'{p.problem.name}'", path=("problem",))
    sol = p.problem.solution_from_dict(p.data, document.get("solution") or {})
    return p.problem.evaluate(p.data, sol)
