"""OR-Tools CP-SAT backend.

Two entry points share one solver configuration, callback and status mapping:

* :func:`solve_cpsat_native` solves a ``cp_model.CpModel`` a formulation built itself (intervals, cumulative, ...);
* :func:`solve_linear_cpsat` translates a :class:`~dlaopt.solvers.linear.LinearModel` and calls it.

Translation rules (CP-SAT is integer-only):

* continuous columns are treated as integer columns. This is only exact when the formulation guarantees integral
  optima for them (e.g. start times over integer durations); their bounds must then be integral, otherwise ERROR;
* integer columns with fractional bounds are tightened (``ceil`` lower, ``floor`` upper) -- exact;
* infinite column bounds are rejected (ERROR) unless ``options.extra["cpsat_infinite_bound"]`` gives a finite value
  to clamp them to;
* constraint coefficients must be integral (ERROR otherwise); fractional finite row bounds are tightened to the
  integers inside them (exact, since all activities are integral);
* a fractional objective is multiplied by the smallest power of ten ``10**k`` (``k <= 6``) that makes every
  coefficient integral; the objective value, bound and trace are divided by it on the way out. If no such power
  exists, ERROR. The constant ``c0`` goes into the proto's (floating) objective offset, so CP-SAT's relative gap
  sees the true objective.

Limits:

* ``time_limit`` -> ``max_time_in_seconds``; ``mip_rel_gap`` -> ``relative_gap_limit``; ``seed`` -> ``random_seed``;
  ``threads`` -> ``num_workers`` (default 2);
* ``node_limit``: CP-SAT has no branch-and-bound node count. It is mapped to ``max_number_of_conflicts`` (the
  number of search conflicts, CP-SAT's closest deterministic measure of search effort) **and forces
  ``num_workers=1``**: in CP-SAT 9.15 the conflict limit is only enforced by the workers that do conflict-driven
  search, so with several workers the LNS / heuristic workers keep running (measured: a 120-column knapsack with
  ``max_number_of_conflicts=100`` and 2, 4 or 8 workers ran to the 10 s wall-clock limit, and without one would not
  stop at all; the same with ``interleave_search``). With one plain worker (no ``interleave_search``) the limit is
  global and the run reproducible. ``node_limit=0`` allows presolve but
  no conflict, so usually no solution (``solve_linear`` then still returns a feasible warm start). For a
  reproducible effort limit with several workers use ``options.extra["deterministic_time"]`` instead;
* ``deterministic``: ``interleave_search=True`` with the fixed ``num_workers`` makes the parallel search
  reproducible; ``options.extra["deterministic_time"]`` -> ``max_deterministic_time`` (honoured in any mode);
* ``options.extra["cpsat"]``: a dict of raw ``SatParameters`` fields set last.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import ortools
from ortools.sat.python import cp_model

from dlaopt.solvers.linear import LinearModel
from dlaopt.solvers.result import BackendResult, SolveOptions, Status, TracePoint, TraceRecorder

SOLVER_NAME = "cpsat"
CPSAT_VERSION: str = ortools.__version__
DEFAULT_WORKERS = 2
MAX_OBJECTIVE_SCALE_EXPONENT = 6
_INT_TOL = 1e-9
_MAX_SAFE_INT = 2.0**53  # larger magnitudes cannot be represented exactly through float64


class _TraceCallback(cp_model.CpSolverSolutionCallback, TraceRecorder):
    """Records (wall time, incumbent, bound) at every improving solution and at every bound improvement."""

    def __init__(self, options: SolveOptions, scale: float, has_objective: bool) -> None:
        cp_model.CpSolverSolutionCallback.__init__(self)
        TraceRecorder.__init__(self, options.progress)
        self.scale = scale
        self.has_objective = has_objective

    def _unscale(self, v: float) -> float | None:
        return None if math.isnan(v) or math.isinf(v) else v / self.scale

    def on_solution_callback(self) -> None:
        if self.has_objective:
            self.incumbent = self._unscale(float(self.objective_value))
            self.bound = self._unscale(float(self.best_objective_bound))
        else:
            self.incumbent, self.bound = 0.0, 0.0
        self._emit(TracePoint(time.perf_counter() - self.t0, self.incumbent, self.bound))
        if self.error is not None:
            self.stop_search()

    def on_bound(self, bound: float) -> None:  # called from CP-SAT's best_bound_callback
        b = self._unscale(float(bound))
        if b is None or (self.bound is not None and b <= self.bound):
            return
        self.bound = b
        self._emit(TracePoint(time.perf_counter() - self.t0, self.incumbent, b))


def _result(status: Status, t0: float, message: str = "", **kw: Any) -> BackendResult:
    return BackendResult(status=status, x=kw.pop("x", None), objective=kw.pop("objective", None),
                         bound=kw.pop("bound", None), solver=SOLVER_NAME, solver_version=CPSAT_VERSION,
                         solve_time_s=time.perf_counter() - t0, message=message, **kw)


def configure_solver(options: SolveOptions) -> tuple[cp_model.CpSolver, list[str]]:
    """A ``CpSolver`` whose parameters implement ``options`` (see the module docstring for the mapping), and notes
    about options that could not be honoured as given."""
    solver = cp_model.CpSolver()
    notes: list[str] = []
    p = solver.parameters
    p.num_workers = int(options.threads) if options.threads else DEFAULT_WORKERS
    p.random_seed = int(options.seed)
    p.relative_gap_limit = float(options.mip_rel_gap)
    p.log_search_progress = bool(options.verbose)
    # CP-SAT would install its own SIGINT handler and leave the default action behind, so that a later Ctrl-C kills
    # the process instead of raising KeyboardInterrupt (the harness and `dlaopt bench` report interruptions)
    p.catch_sigint_signal = False
    if options.time_limit is not None:
        p.max_time_in_seconds = float(options.time_limit)
    if options.node_limit is not None:
        # a single plain worker: the only configuration in which the conflict limit stops the whole search
        # (one worker is deterministic by itself, so interleave_search is not needed)
        p.max_number_of_conflicts = int(options.node_limit)
        if p.num_workers != 1:
            notes.append(f"node_limit maps to max_number_of_conflicts, which only bounds a single worker: "
                         f"num_workers {p.num_workers} -> 1")
            p.num_workers = 1
    elif options.deterministic:
        p.interleave_search = True
    det_time = options.extra.get("deterministic_time")
    if det_time is not None:
        p.max_deterministic_time = float(det_time)
    for name, value in dict(options.extra.get("cpsat", {})).items():
        setattr(p, name, value)
    return solver, notes


def solve_cpsat_native(
    model: cp_model.CpModel,
    options: SolveOptions,
    objective_scale: float = 1.0,
    variables: Sequence[cp_model.IntVar] | None = None,
) -> BackendResult:
    """Solve a native CP-SAT model with the shared configuration, trace callback and status mapping.

    ``objective_scale``: the factor the model's objective was multiplied by; objective, bound and trace are divided
    by it. ``variables``: the variables whose values form ``x`` (in order); ``None`` returns the whole proto
    solution. ``options.warm_start`` is added as a hint for ``variables`` when given and the model has no hint yet.
    The ``CpSolver`` is returned in ``raw["solver"]`` so callers can read other values with ``solver.value(...)``.
    """
    t0 = time.perf_counter()
    messages: list[str] = []
    var_idx = None if variables is None else np.fromiter((v.index for v in variables), dtype=np.int64)
    if options.warm_start is not None and var_idx is None:
        messages.append("warm start ignored: pass `variables` to map it onto the native model")
    if options.warm_start is not None and var_idx is not None and not model.proto.has_solution_hint():
        ws = np.asarray(options.warm_start, dtype=np.float64)
        if ws.shape != var_idx.shape or not np.all(np.isfinite(ws)):
            messages.append(f"warm start ignored: shape {ws.shape} does not match {var_idx.shape[0]} variables")
        else:
            hint = model.proto.solution_hint
            hint.vars.extend(var_idx.tolist())
            hint.values.extend(np.round(ws).astype(np.int64).tolist())
    try:
        solver, notes = configure_solver(options)
        messages.extend(notes)
    except (AttributeError, TypeError, ValueError) as exc:
        return _result(Status.ERROR, t0, f"invalid CP-SAT parameter: {exc}")

    has_objective = bool(model.has_objective())
    cb = _TraceCallback(options, float(objective_scale), has_objective)
    if has_objective:
        solver.best_bound_callback = cb.on_bound
    cb.t0 = time.perf_counter()
    status = solver.solve(model, cb)
    if cb.error is not None:
        raise cb.error

    raw = {"solver": solver, "status_name": solver.status_name(status), "model": model}
    if status == cp_model.MODEL_INVALID:
        detail = model.validate() or "model invalid"
        return _result(Status.ERROR, t0, f"CP-SAT: {detail}", trace=cb.points, raw=raw)
    if status == cp_model.INFEASIBLE:
        return _result(Status.INFEASIBLE, t0, "; ".join(messages), trace=cb.points, raw=raw)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        # UNKNOWN: a limit was hit before any solution was found
        return _result(Status.NO_SOLUTION, t0, "; ".join([f"CP-SAT: {solver.status_name(status)}", *messages]),
                       bound=cb.bound,  # only bounds CP-SAT reported while searching (the response's may be 0)
                       trace=cb.points, raw=raw)

    solution = np.asarray(list(solver.response_proto.solution), dtype=np.float64)
    x = solution if var_idx is None else solution[var_idx]
    if has_objective:
        objective = float(solver.objective_value) / objective_scale
        bound = float(solver.best_objective_bound) / objective_scale
    else:
        objective, bound = 0.0, 0.0
    if not cb.points or cb.points[-1].incumbent != objective or cb.points[-1].bound != bound:
        cb._emit(TracePoint(time.perf_counter() - cb.t0, objective, bound))
    res_status = Status.OPTIMAL if status == cp_model.OPTIMAL else Status.FEASIBLE
    return _result(res_status, t0, "; ".join(messages), x=x, objective=objective, bound=bound, trace=cb.points,
                   raw=raw)


def _is_integral(a: np.ndarray) -> np.ndarray:
    """Elementwise: integral within a relative tolerance (infinite entries count as not integral)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(a) & (np.abs(a - np.round(a)) <= _INT_TOL * np.maximum(1.0, np.abs(a)))


def objective_scale_for(c: np.ndarray) -> int | None:
    """Smallest ``10**k`` (k <= 6) making every entry of ``c`` integral, or ``None``."""
    for k in range(MAX_OBJECTIVE_SCALE_EXPONENT + 1):
        scaled = c * 10.0**k
        if np.all(_is_integral(scaled)) and np.all(np.abs(scaled) < _MAX_SAFE_INT):
            return 10**k
    return None


def _to_int_list(a: np.ndarray) -> list[int]:
    return np.round(a).astype(np.int64).tolist()


def translate_to_cpsat(model: LinearModel, options: SolveOptions) -> tuple[cp_model.CpModel, list[cp_model.IntVar],
                                                                            int] | str:
    """Translate ``model`` to CP-SAT; returns ``(cp_model, variables, objective_scale)`` or an error message."""
    lo = model.col_lower.astype(np.float64).copy()
    up = model.col_upper.astype(np.float64).copy()
    cap = options.extra.get("cpsat_infinite_bound")
    if cap is not None:
        lo = np.where(np.isneginf(lo), -float(cap), lo)
        up = np.where(np.isposinf(up), float(cap), up)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(up))):
        bad = int(np.sum(~np.isfinite(lo) | ~np.isfinite(up)))
        return (f"CP-SAT needs finite column bounds: {bad} column(s) are unbounded "
                "(set options.extra['cpsat_infinite_bound'] to clamp them)")
    cont = ~model.integrality
    frac = cont & ~(_is_integral(lo) & _is_integral(up))
    if np.any(frac):
        return (f"CP-SAT treats continuous columns as integers and needs integral bounds: {int(frac.sum())} "
                f"continuous column(s) have fractional bounds (first: {int(np.flatnonzero(frac)[0])})")
    lo = np.where(_is_integral(lo), np.round(lo), np.ceil(lo))
    up = np.where(_is_integral(up), np.round(up), np.floor(up))
    if np.any(np.abs(lo) >= _MAX_SAFE_INT) or np.any(np.abs(up) >= _MAX_SAFE_INT):
        return "CP-SAT: column bounds too large to be represented exactly (|bound| >= 2**53)"

    data = model.data.astype(np.float64)
    bad_coef = ~_is_integral(data)
    if np.any(bad_coef):
        k = int(np.flatnonzero(bad_coef)[0])
        row = int(np.searchsorted(model.indptr, k, side="right") - 1)
        return (f"CP-SAT needs integral constraint coefficients: {int(bad_coef.sum())} fractional coefficient(s), "
                f"first {float(data[k])!r} in row {row} (scale the constraint rows in the formulation)")
    if np.any(np.abs(data) >= _MAX_SAFE_INT):
        return "CP-SAT: constraint coefficients too large (|a| >= 2**53)"

    scale = objective_scale_for(model.c)
    if scale is None:
        return (f"CP-SAT needs an integral objective: no power of ten up to 1e{MAX_OBJECTIVE_SCALE_EXPONENT} makes "
                "the objective coefficients integral")

    rlo = model.row_lower.astype(np.float64)
    rup = model.row_upper.astype(np.float64)
    rlo = np.where(np.isfinite(rlo), np.where(_is_integral(rlo), np.round(rlo), np.ceil(rlo)), -np.inf)
    rup = np.where(np.isfinite(rup), np.where(_is_integral(rup), np.round(rup), np.floor(rup)), np.inf)
    if np.any(np.abs(rlo[np.isfinite(rlo)]) >= _MAX_SAFE_INT) or np.any(np.abs(rup[np.isfinite(rup)]) >= _MAX_SAFE_INT):
        return "CP-SAT: row bounds too large to be represented exactly (|bound| >= 2**53)"
    rlo_i = [cp_model.INT_MIN if not math.isfinite(v) else int(v) for v in rlo.tolist()]
    rup_i = [cp_model.INT_MAX if not math.isfinite(v) else int(v) for v in rup.tolist()]

    cpm = cp_model.CpModel()
    cpm.name = model.name
    variables = [cpm.new_int_var(a, b, "") for a, b in zip(_to_int_list(lo), _to_int_list(up), strict=True)]
    if variables and variables[-1].index != len(variables) - 1:
        return "internal error: CP-SAT variable indices do not match column indices"

    proto = cpm.proto
    cols = model.indices.astype(np.int64).tolist()
    coefs = _to_int_list(data)
    indptr = model.indptr.tolist()
    for i in range(model.n_rows):
        a, b = indptr[i], indptr[i + 1]
        if rlo_i[i] == cp_model.INT_MIN and rup_i[i] == cp_model.INT_MAX:
            continue  # free row
        lin = proto.constraints.add().linear
        lin.vars.extend(cols[a:b])
        lin.coeffs.extend(coefs[a:b])
        lin.domain.extend([rlo_i[i], rup_i[i]])

    nz = np.flatnonzero(model.c)
    if nz.size:  # a constant objective is left out (feasibility problem); the objective is recomputed from x
        obj = proto.objective
        obj.vars.extend(nz.tolist())
        obj.coeffs.extend(_to_int_list(model.c[nz] * scale))
        obj.offset = float(model.c0) * scale
    return cpm, variables, scale


def solve_linear_cpsat(model: LinearModel, options: SolveOptions) -> BackendResult:
    """Translate ``model`` to CP-SAT (see the module docstring for the rules) and solve it.

    Returns ERROR with a message, never raises, when the model cannot be represented (fractional constraint
    coefficients, non-scalable objective, unbounded or fractional continuous columns).
    """
    t0 = time.perf_counter()
    translated = translate_to_cpsat(model, options)
    if isinstance(translated, str):
        return _result(Status.ERROR, t0, translated)
    cpm, variables, scale = translated
    build_time = time.perf_counter() - t0
    res = solve_cpsat_native(cpm, options, objective_scale=float(scale), variables=variables)
    res.solve_time_s = time.perf_counter() - t0
    if isinstance(res.raw, dict):
        res.raw["build_time_s"] = build_time
        res.raw["objective_scale"] = scale
    if res.x is not None:
        # exact objective from the float data, not the scaled integer one
        res.objective = model.objective_value(res.x)
        if not cpm.has_objective():  # constant objective: every solution is optimal at c0
            res.bound = res.objective
            res.trace = [TracePoint(p.time_s, res.objective, res.objective) for p in res.trace]
    return res
