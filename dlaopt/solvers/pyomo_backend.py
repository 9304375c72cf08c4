"""Pyomo backend: any MILP solver Pyomo can drive (gurobi, cplex, scip, cbc, glpk, appsi_highs, highs, ...).

The :class:`~dlaopt.solvers.linear.LinearModel` becomes a ``ConcreteModel`` with one indexed variable ``x`` over the
columns and one indexed constraint ``rows`` (one ``LinearExpression`` per non-free CSR row). The common options are
translated to each solver family's own names (see ``_OPTION_NAMES``); ``options.extra["pyomo_options"]`` (a dict) is
passed through verbatim and wins.

Notes
    * ``appsi_highs`` / ``highs`` run HiGHS in this process, so HiGHS' per-process thread count applies (see
      :mod:`dlaopt.solvers.highs_backend`): if the requested ``threads`` clashes with it, the solve is retried
      without the ``threads`` option and the result message says so.
    * Warm starts set the variable values and pass ``warmstart=True`` where the interface reports
      ``warm_start_capable()``; otherwise they are ignored here (``solve_linear`` still keeps them as a fallback).
    * No incumbent trace is available through the generic interface: the trace holds the final point only.
"""

from __future__ import annotations

import io
import logging
import math
import time
from typing import Any

import numpy as np
import pyomo
import pyomo.environ as pyo
from pyomo.common.log import LoggingIntercept
from pyomo.core.expr.numeric_expr import LinearExpression
from pyomo.opt import SolverFactory, TerminationCondition

from dlaopt.solvers.linear import LinearModel
from dlaopt.solvers.result import BackendResult, SolveOptions, Status, TracePoint

_TC = TerminationCondition
_OPTIMAL_TC = {_TC.optimal, _TC.globallyOptimal, _TC.locallyOptimal}
_LIMIT_TC = {
    _TC.maxTimeLimit, _TC.maxIterations, _TC.maxEvaluations, _TC.userInterrupt, _TC.resourceInterrupt,
    _TC.minFunctionValue, _TC.minStepLength, _TC.feasible, _TC.intermediateNonInteger, _TC.other, _TC.unknown,
    _TC.noSolution,
}
_INFEASIBLE_TC = {_TC.infeasible}

# family -> option names for: time limit, relative gap, threads, seed, node limit (None: not passed)
_OPTION_NAMES: dict[str, dict[str, str | None]] = {
    "gurobi": {"time": "TimeLimit", "gap": "MIPGap", "threads": "Threads", "seed": "Seed", "nodes": "NodeLimit"},
    "cbc": {"time": "seconds", "gap": "ratioGap", "threads": "threads", "seed": "randomCbcSeed",
            "nodes": "maxNodes"},
    "scip": {"time": "limits/time", "gap": "limits/gap", "threads": None, "seed": "randomization/randomseedshift",
             "nodes": "limits/nodes"},
    "highs": {"time": "time_limit", "gap": "mip_rel_gap", "threads": "threads", "seed": "random_seed",
              "nodes": "mip_max_nodes"},
    "cplex": {"time": "timelimit", "gap": "mip_tolerances_mipgap", "threads": "threads", "seed": "randomseed",
              "nodes": "mip_limits_nodes"},
    "glpk": {"time": "tmlim", "gap": "mipgap", "threads": None, "seed": None, "nodes": None},
    "xpress": {"time": "maxtime", "gap": "miprelstop", "threads": "threads", "seed": None, "nodes": "maxnode"},
}

_log = logging.getLogger(__name__)
_LOADED_FEASIBILITY_TOL = 1e-6


def solver_family(solver_name: str) -> str:
    """``appsi_highs`` -> ``highs``, ``gurobi_direct`` -> ``gurobi``, ``cplex_persistent`` -> ``cplex``, ..."""
    name = solver_name.lower()
    for prefix in ("appsi_",):
        if name.startswith(prefix):
            name = name[len(prefix):]
    for suffix in ("_direct", "_persistent", "_shell"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def solver_options_for(solver_name: str, options: SolveOptions) -> dict[str, Any]:
    """The solver-specific option dict implementing ``options`` for ``solver_name``."""
    names = _OPTION_NAMES.get(solver_family(solver_name), {})
    out: dict[str, Any] = {}
    values: dict[str, Any] = {
        "time": None if options.time_limit is None else float(options.time_limit),
        "gap": float(options.mip_rel_gap),
        "threads": None if options.threads is None else int(options.threads),
        "seed": int(options.seed),
        "nodes": None if options.node_limit is None else int(options.node_limit),
    }
    if solver_family(solver_name) == "glpk" and values["time"] is not None:
        values["time"] = max(1, math.ceil(values["time"]))  # glpsol takes whole seconds
    for key, value in values.items():
        opt_name = names.get(key)
        if opt_name is not None and value is not None:
            out[opt_name] = value
    out.update(dict(options.extra.get("pyomo_options", {})))
    return out


def _is_new_interface(opt: Any) -> bool:
    """APPSI / pyomo.contrib.solver wrappers take ``timelimit=`` as a solver time limit (shell solvers do not)."""
    return type(opt).__module__.startswith("pyomo.contrib")


def build_pyomo_model(model: LinearModel) -> pyo.ConcreteModel:
    """A ``ConcreteModel`` with ``x[j]`` per column, ``rows[i]`` per non-free row and ``obj``."""
    n = model.n_cols
    m = pyo.ConcreteModel(name=model.name)
    m.x = pyo.Var(range(n), domain=pyo.Reals)
    lo = [None if not math.isfinite(v) else v for v in model.col_lower.tolist()]
    up = [None if not math.isfinite(v) else v for v in model.col_upper.tolist()]
    binary = model.integrality & (model.col_lower >= 0.0) & (model.col_upper <= 1.0)
    integ = model.integrality.tolist()
    binl = binary.tolist()
    xs = [m.x[j] for j in range(n)]
    for j, v in enumerate(xs):
        if binl[j]:
            v.domain = pyo.Binary
        elif integ[j]:
            v.domain = pyo.Integers
        v.setlb(lo[j])
        v.setub(up[j])

    indptr = model.indptr.tolist()
    cols = model.indices.tolist()
    vals = model.data.tolist()
    rlo = [None if not math.isfinite(v) else v for v in model.row_lower.tolist()]
    rup = [None if not math.isfinite(v) else v for v in model.row_upper.tolist()]

    def row_rule(_m: pyo.ConcreteModel, i: int) -> Any:
        a, b = indptr[i], indptr[i + 1]
        if (rlo[i] is None and rup[i] is None) or a == b:
            return pyo.Constraint.Skip  # free or empty (empty rows are checked before building)
        expr = LinearExpression(constant=0, linear_coefs=vals[a:b], linear_vars=[xs[k] for k in cols[a:b]])
        if rlo[i] is not None and rlo[i] == rup[i]:
            return expr == rlo[i]
        return (rlo[i], expr, rup[i])

    m.rows = pyo.Constraint(range(model.n_rows), rule=row_rule)
    nz = np.flatnonzero(model.c).tolist()
    if not nz and n:
        nz = [0]  # a constant objective still needs one (zero) term for some interfaces
    coefs = model.c[nz].tolist()
    m.obj = pyo.Objective(expr=LinearExpression(constant=float(model.c0), linear_coefs=coefs,
                                                linear_vars=[xs[j] for j in nz]), sense=pyo.minimize)
    return m


def _as_float(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _extract_x(m: pyo.ConcreteModel, model: LinearModel) -> np.ndarray:
    """Variable values; columns the solver never saw (value None) get the in-bounds value closest to 0."""
    vals = [v.value for v in m.x.values()]
    x = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
    missing = np.isnan(x)
    if missing.any():
        fill = np.clip(0.0, model.col_lower, model.col_upper)
        fill = np.where(model.integrality, np.ceil(fill - 1e-9), fill)
        x[missing] = fill[missing]
    return x


def _result(status: Status, solver_name: str, t0: float, message: str = "", **kw: Any) -> BackendResult:
    return BackendResult(status=status, x=kw.pop("x", None), objective=kw.pop("objective", None),
                         bound=kw.pop("bound", None), solver=f"pyomo:{solver_name}",
                         solver_version=kw.pop("version", ""), solve_time_s=time.perf_counter() - t0,
                         message=message, **kw)


def _solver_version(opt: Any) -> str:
    try:
        v = opt.version()
    except Exception:  # some interfaces need the executable / license to answer
        v = None
    if isinstance(v, tuple):
        v = ".".join(str(p) for p in v)
    return f"{v} (pyomo {pyomo.version.version})" if v else f"pyomo {pyomo.version.version}"


def solve_pyomo(model: LinearModel, solver_name: str, options: SolveOptions) -> BackendResult:
    """Build a Pyomo model for ``model`` and solve it with ``SolverFactory(solver_name)``.

    Termination mapping: optimal -> OPTIMAL; infeasible -> INFEASIBLE; limits / feasible / unknown -> FEASIBLE with a
    solution, NO_SOLUTION without; unbounded, infeasible-or-unbounded, errors, unavailable solver -> ERROR.
    ``bound`` is ``results.problem.lower_bound`` when the interface reports it (the objective for optimal LPs).
    """
    t0 = time.perf_counter()
    try:
        with LoggingIntercept(io.StringIO(), "pyomo", logging.WARNING):  # unknown names log a traceback
            opt = SolverFactory(solver_name)
            available = bool(opt.available(exception_flag=False))
    except Exception:
        available = False
    if not available:
        return _result(Status.ERROR, solver_name, t0,
                       f"solver '{solver_name}' is not available through Pyomo (install it or pick another)")
    version = _solver_version(opt)

    # empty rows cannot be sent to a solver: decide them here
    empty = np.diff(model.indptr) == 0
    if np.any(empty & ((model.row_lower > 0.0) | (model.row_upper < 0.0))):
        return _result(Status.INFEASIBLE, solver_name, t0, "an empty row excludes activity 0", version=version)
    if np.any(model.col_lower > model.col_upper):
        return _result(Status.INFEASIBLE, solver_name, t0, "a column has lower bound > upper bound", version=version)

    m = build_pyomo_model(model)
    build_time = time.perf_counter() - t0

    kwargs: dict[str, Any] = {"tee": bool(options.verbose), "load_solutions": False}
    messages: list[str] = []
    if options.time_limit is not None and _is_new_interface(opt):
        kwargs["timelimit"] = float(options.time_limit)
    if options.warm_start is not None:
        ws = np.asarray(options.warm_start, dtype=np.float64)
        if ws.shape != (model.n_cols,):
            messages.append(f"warm start ignored: shape {ws.shape} != ({model.n_cols},)")
        else:
            for v, val in zip(m.x.values(), ws.tolist(), strict=True):
                v.set_value(val, skip_validation=True)
            capable = getattr(opt, "warm_start_capable", None)
            try:
                ok = bool(capable()) if callable(capable) else False
            except Exception:
                ok = False
            if ok:
                kwargs["warmstart"] = True
            else:
                messages.append(f"'{solver_name}' takes no warm start through Pyomo")
    solver_opts = solver_options_for(solver_name, options)

    if hasattr(opt, "set_instance") and solver_name.endswith("_persistent"):
        opt.set_instance(m)

    def run(opts: dict[str, Any]) -> Any:
        return opt.solve(m, options=opts, **kwargs)

    try:
        try:
            results = run(solver_opts)
            rerun = (solver_family(solver_name) == "highs" and "threads" in solver_opts
                     and results.solver.termination_condition in (_TC.error, _TC.solverFailure, _TC.unknown)
                     and len(results.solution) == 0)
        except Exception:
            if solver_family(solver_name) != "highs" or "threads" not in solver_opts:
                raise
            rerun = True
        if rerun:  # in-process HiGHS keeps the thread count of the first solve in this process
            solver_opts = {**solver_opts, "threads": 0}  # 0: use the scheduler that exists
            messages.append("threads ignored: HiGHS fixes its thread count per process at the first solve")
            results = run(solver_opts)
    except Exception as exc:
        return _result(Status.ERROR, solver_name, t0, f"pyomo/{solver_name} failed: {type(exc).__name__}: {exc}",
                       version=version, raw={"model": m})

    tc = results.solver.termination_condition
    has_solution = len(results.solution) > 0
    x: np.ndarray | None = None
    if has_solution and tc not in _INFEASIBLE_TC:
        try:
            with LoggingIntercept(io.StringIO(), "pyomo.core", logging.WARNING):  # "aborted status" chatter
                m.solutions.load_from(results)
            x = _extract_x(m, model)
        except Exception as exc:  # a result that cannot be loaded is treated as no solution
            _log.debug("could not load pyomo solution: %s", exc)
            x = None
    if x is None and not has_solution and tc not in _INFEASIBLE_TC and hasattr(opt, "load_vars"):
        # direct / persistent interfaces may keep the solution in the solver object instead of the results
        try:
            opt.load_vars()
            x = _extract_x(m, model)
            if model.max_violation(x) > _LOADED_FEASIBILITY_TOL:  # not a solution, just the solver's last iterate
                x = None
        except Exception as exc:
            _log.debug("no solution to load from %s: %s", solver_name, exc)
            x = None
    objective = None if x is None else model.objective_value(x)
    bound = _as_float(getattr(results.problem, "lower_bound", None))
    if bound is not None and math.isinf(bound) and bound > 0:
        bound = None

    if tc in _OPTIMAL_TC and x is not None:
        status = Status.OPTIMAL
        if bound is None or (model.n_integer == 0 and math.isinf(bound)):
            bound = objective
    elif tc in _INFEASIBLE_TC:
        status, x, objective, bound = Status.INFEASIBLE, None, None, None
    elif tc in _LIMIT_TC or (tc in _OPTIMAL_TC and x is None):
        status = Status.FEASIBLE if x is not None else Status.NO_SOLUTION
        messages.insert(0, f"pyomo/{solver_name}: {tc}")
    else:
        status, x, objective, bound = Status.ERROR, None, None, None
        messages.insert(0, f"pyomo/{solver_name}: {tc}")

    trace = [TracePoint(time.perf_counter() - t0, objective, bound)] if x is not None else []
    if options.progress is not None and trace:
        options.progress(trace[-1])
    return _result(status, solver_name, t0, "; ".join(messages), x=x, objective=objective, bound=bound, trace=trace,
                   version=version, raw={"model": m, "results": results, "build_time_s": build_time})
