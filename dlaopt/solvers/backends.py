"""One entry point for every backend: ``solve_linear(model, "highs" | "cpsat" | "pyomo:<name>", options)``.

``solve_linear`` also keeps ``options.warm_start`` as a fallback: solvers may drop a hint (or stop before using
it), so when the warm start is feasible (``model.max_violation(ws) <= 1e-6``) and the solver returned nothing
better, the warm start is returned with ``objective = model.objective_value(ws)``.
"""

from __future__ import annotations

import io
import logging
import math

import numpy as np

from dlaopt.solvers.linear import LinearModel
from dlaopt.solvers.result import BackendResult, SolveOptions, Status, relative_gap

WARM_START_TOLERANCE = 1e-6
PYOMO_PREFIX = "pyomo:"
# Pyomo solver names probed by available_solvers()
PYOMO_CANDIDATES: tuple[str, ...] = (
    "appsi_highs", "highs", "gurobi", "gurobi_direct", "cplex", "scip", "cbc", "glpk", "xpress",
)


class SolverSpecError(ValueError):
    """An unknown solver string."""


def _spec_error(solver: str) -> SolverSpecError:
    return SolverSpecError(
        f"unknown solver {solver!r}: use 'highs', 'cpsat' or 'pyomo:<name>' "
        "(e.g. 'pyomo:appsi_highs', 'pyomo:gurobi', 'pyomo:scip', 'pyomo:cbc', 'pyomo:glpk')"
    )


def parse_solver(solver: str) -> tuple[str, str | None]:
    """``"highs"`` -> ``("highs", None)``, ``"pyomo:gurobi"`` -> ``("pyomo", "gurobi")``; raises SolverSpecError."""
    s = solver.strip()
    if s in ("highs", "cpsat"):
        return s, None
    if s.startswith(PYOMO_PREFIX) and s[len(PYOMO_PREFIX):].strip():
        return "pyomo", s[len(PYOMO_PREFIX):].strip()
    raise _spec_error(solver)


def available_solvers() -> list[str]:
    """``highs``, ``cpsat`` and ``pyomo:<name>`` for every probed Pyomo solver that reports itself available."""
    out = ["highs", "cpsat"]
    import pyomo.environ  # noqa: F401  (registers the solver plugins)
    from pyomo.common.log import LoggingIntercept
    from pyomo.opt import SolverFactory

    for name in PYOMO_CANDIDATES:
        try:
            with LoggingIntercept(io.StringIO(), "pyomo", logging.WARNING):
                ok = bool(SolverFactory(name).available(exception_flag=False))
        except Exception:
            ok = False
        if ok:
            out.append(PYOMO_PREFIX + name)
    return out


def keep_warm_start(model: LinearModel, options: SolveOptions, result: BackendResult) -> BackendResult:
    """Return ``result`` with the warm start substituted when it is feasible and better than what was found.

    ERROR results are left alone (they signal a problem that the caller must see). A solver that claims
    infeasibility while the warm start is feasible is overruled (FEASIBLE, with a message).
    """
    ws = options.warm_start
    if ws is None or result.status == Status.ERROR:
        return result
    ws = np.asarray(ws, dtype=np.float64)
    if ws.shape != (model.n_cols,) or not np.all(np.isfinite(ws)):
        return result
    if model.max_violation(ws) > WARM_START_TOLERANCE:
        return result
    ws_obj = model.objective_value(ws)
    if (result.x is not None and result.objective is not None
            and result.objective <= ws_obj + 1e-9 * max(1.0, abs(ws_obj))):
        return result  # the solver found something at least as good
    note = "warm start kept (solver returned no better solution)"
    if result.status == Status.INFEASIBLE:
        note = "solver reported infeasible but the warm start is feasible; warm start kept"
        bound = None
    else:
        bound = result.bound
    if bound is not None and not math.isnan(bound) and bound > ws_obj:
        bound = ws_obj  # a bound above a feasible point is wrong (tolerances); clamp it
    gap = relative_gap(ws_obj, bound)
    status = Status.OPTIMAL if gap is not None and gap <= options.mip_rel_gap else Status.FEASIBLE
    result.status = status
    result.x = ws.copy()
    result.objective = ws_obj
    result.bound = bound
    result.message = "; ".join(p for p in (result.message, note) if p)
    return result


def solve_linear(model: LinearModel, solver: str, options: SolveOptions | None = None) -> BackendResult:
    """Solve ``model`` with ``solver`` ("highs" | "cpsat" | "pyomo:<name>"), keeping a feasible warm start."""
    options = options if options is not None else SolveOptions()
    kind, name = parse_solver(solver)
    if kind == "highs":
        from dlaopt.solvers.highs_backend import solve_highs

        result = solve_highs(model, options)
    elif kind == "cpsat":
        from dlaopt.solvers.cpsat_backend import solve_linear_cpsat

        result = solve_linear_cpsat(model, options)
    else:
        from dlaopt.solvers.pyomo_backend import solve_pyomo

        assert name is not None
        result = solve_pyomo(model, name, options)
    return keep_warm_start(model, options, result)
