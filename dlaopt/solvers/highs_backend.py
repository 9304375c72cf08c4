"""HiGHS backend: a :class:`~dlaopt.solvers.linear.LinearModel` is handed to ``highspy`` in one ``passModel`` call.

The CSR arrays of the model are passed as they are (row-wise format), so building a model with 100k+ columns costs
a few array conversions and no Python loop.

Threads
    HiGHS creates one global task scheduler per process at the first solve and fixes its thread count then. A later
    solve that asks for a *different* explicit ``threads`` value fails with ``kError`` ("global scheduler has already
    been initialized"). This backend handles that gracefully: it retries with ``threads=0`` (use the existing
    scheduler), notes it in ``BackendResult.message``, and only resets the scheduler
    (``Highs.resetGlobalScheduler``) when ``options.extra["highs_reset_scheduler"]`` is true -- resetting is unsafe
    while another HiGHS solve runs in another thread of the same process.

Trace
    highspy 1.14 exposes per-event callback hubs on the ``Highs`` object (``h.cbMipImprovingSolution``,
    ``h.cbMipInterrupt``, ``h.cbMipLogging``, ...; each with ``.subscribe(fn)``; ``fn`` receives a
    ``HighsCallbackEvent`` whose ``data_out`` carries ``objective_function_value``, ``mip_primal_bound``,
    ``mip_dual_bound``, ``running_time``, ``mip_node_count``). ``cbMipLogging`` only fires when output is on, so the
    trace uses ``cbMipImprovingSolution`` for incumbents and the (frequent) ``cbMipInterrupt`` for dual-bound
    moves, throttled.

Extra options
    ``options.extra["highs"]``: a dict of raw HiGHS option names and values, set after the standard ones.
"""

from __future__ import annotations

import math
import time
from typing import Any

import highspy
import numpy as np

from dlaopt.solvers.linear import LinearModel
from dlaopt.solvers.result import BackendResult, SolveOptions, Status, TracePoint, TraceRecorder

SOLVER_NAME = "highs"
HIGHS_VERSION = f"{highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}.{highspy.HIGHS_VERSION_PATCH}"

_MS = highspy.HighsModelStatus
_LIMIT_STATUSES = {
    _MS.kTimeLimit,
    _MS.kIterationLimit,
    _MS.kSolutionLimit,  # HiGHS reports mip_max_nodes / leaves / improving-solution limits as this
    _MS.kObjectiveBound,
    _MS.kObjectiveTarget,
    _MS.kInterrupt,
    _MS.kHighsInterrupt,
    _MS.kMemoryLimit,
}
_BOUND_TRACE_MIN_INTERVAL_S = 0.01  # at most one bound-only trace point per this many seconds
_INT32_MAX = 2**31 - 1


class _Tracer(TraceRecorder):
    """Collects TracePoints from HiGHS callbacks and forwards them to ``options.progress``."""

    def __init__(self, options: SolveOptions) -> None:
        super().__init__(options.progress)
        self._last_bound_time = -math.inf

    @staticmethod
    def _finite_or_none(v: float) -> float | None:
        return None if math.isnan(v) or math.isinf(v) else float(v)

    def on_improving(self, event: Any) -> None:
        d = event.data_out
        now = time.perf_counter() - self.t0
        inc = self._finite_or_none(d.objective_function_value)
        bound = float(d.mip_dual_bound)
        self.incumbent = inc
        self.bound = None if math.isnan(bound) or bound == -math.inf else bound
        self._emit(TracePoint(now, self.incumbent, self.bound))

    def on_interrupt(self, event: Any) -> None:
        d = event.data_out
        bound = float(d.mip_dual_bound)
        if math.isnan(bound) or bound == -math.inf:
            return
        if self.bound is not None and bound <= self.bound + 1e-9 * max(1.0, abs(self.bound)):
            return
        now = time.perf_counter() - self.t0
        if now - self._last_bound_time < _BOUND_TRACE_MIN_INTERVAL_S:
            return
        self._last_bound_time = now
        self.bound = bound
        self._emit(TracePoint(now, self.incumbent, bound))

    def finish(self, incumbent: float | None, bound: float | None) -> None:
        last = self.points[-1] if self.points else None
        if last is None or last.incumbent != incumbent or last.bound != bound:
            self._emit(TracePoint(time.perf_counter() - self.t0, incumbent, bound))


def _set_option(h: highspy.Highs, name: str, value: Any, errors: list[str]) -> None:
    if h.setOptionValue(name, value) != highspy.HighsStatus.kOk:
        errors.append(f"HiGHS rejected option {name}={value!r}")


def _error(message: str, t0: float, raw: Any = None) -> BackendResult:
    return BackendResult(Status.ERROR, None, None, None, SOLVER_NAME, HIGHS_VERSION, time.perf_counter() - t0,
                         message=message, raw=raw)


def solve_highs(model: LinearModel, options: SolveOptions) -> BackendResult:
    """Solve ``model`` with HiGHS (MILP or pure LP).

    Status mapping: Optimal -> OPTIMAL; time/node/iteration/other limits -> FEASIBLE with a solution, NO_SOLUTION
    without; Infeasible -> INFEASIBLE; unbounded, unbounded-or-infeasible and solver errors -> ERROR with a message.
    ``bound`` is ``mip_dual_bound`` for MIPs and the objective for LPs solved to optimality.
    """
    t0 = time.perf_counter()
    n, m, nnz = model.n_cols, model.n_rows, model.n_nonzeros
    if max(n, m, nnz) > _INT32_MAX:
        return _error(f"model too large for 32-bit HiGHS indices ({n} columns, {m} rows, {nnz} nonzeros)", t0)
    is_mip = model.n_integer > 0

    h = highspy.Highs()
    errors: list[str] = []
    _set_option(h, "output_flag", bool(options.verbose), errors)
    if options.time_limit is not None:
        _set_option(h, "time_limit", float(options.time_limit), errors)
    _set_option(h, "mip_rel_gap", float(options.mip_rel_gap), errors)
    _set_option(h, "random_seed", int(options.seed), errors)
    if options.node_limit is not None:
        _set_option(h, "mip_max_nodes", int(options.node_limit), errors)
    if options.threads is not None:
        _set_option(h, "threads", int(options.threads), errors)
    for name, value in dict(options.extra.get("highs", {})).items():
        _set_option(h, name, value, errors)
    if errors:
        return _error("; ".join(errors), t0)

    status = h.passModel(
        n, m, nnz,
        int(highspy.MatrixFormat.kRowwise), int(highspy.ObjSense.kMinimize), float(model.c0),
        np.ascontiguousarray(model.c, dtype=np.float64),
        np.ascontiguousarray(model.col_lower, dtype=np.float64),
        np.ascontiguousarray(model.col_upper, dtype=np.float64),
        np.ascontiguousarray(model.row_lower, dtype=np.float64),
        np.ascontiguousarray(model.row_upper, dtype=np.float64),
        np.ascontiguousarray(model.indptr[:m], dtype=np.int32),
        np.ascontiguousarray(model.indices, dtype=np.int32),
        np.ascontiguousarray(model.data, dtype=np.float64),
        np.where(model.integrality, int(highspy.HighsVarType.kInteger), int(highspy.HighsVarType.kContinuous))
        .astype(np.int32),
    )
    if status == highspy.HighsStatus.kError:
        return _error("HiGHS passModel failed (inconsistent model arrays?)", t0)
    build_time = time.perf_counter() - t0

    messages: list[str] = []
    if options.warm_start is not None:
        ws = np.asarray(options.warm_start, dtype=np.float64)
        if ws.shape != (n,):
            messages.append(f"warm start ignored: shape {ws.shape} != ({n},)")
        else:
            st = h.setSolution(n, np.arange(n, dtype=np.int32), np.ascontiguousarray(ws))
            if st == highspy.HighsStatus.kError:
                messages.append("HiGHS rejected the warm start")

    tracer = _Tracer(options)
    if is_mip:
        h.cbMipImprovingSolution.subscribe(tracer.on_improving)
        h.cbMipInterrupt.subscribe(tracer.on_interrupt)

    tracer.t0 = time.perf_counter()
    run_status = h.run()
    if (run_status == highspy.HighsStatus.kError and h.getModelStatus() == _MS.kNotset
            and options.threads is not None):
        # Most likely the process-wide scheduler was created earlier with another thread count.
        if options.extra.get("highs_reset_scheduler"):
            highspy.Highs.resetGlobalScheduler(True)
            messages.append("HiGHS global scheduler reset to honour threads")
        else:
            h.setOptionValue("threads", 0)
            messages.append(f"threads={options.threads} ignored: HiGHS fixes its thread count per process at the "
                            "first solve (set extra['highs_reset_scheduler']=True to reset it)")
        run_status = h.run()
    if tracer.error is not None:
        raise tracer.error

    ms = h.getModelStatus()
    info = h.getInfo()
    has_solution = int(info.primal_solution_status) == int(highspy.SolutionStatus.kSolutionStatusFeasible)
    x: np.ndarray | None = None
    objective: float | None = None
    if has_solution:
        x = np.asarray(h.getSolution().col_value, dtype=np.float64)
        objective = float(info.objective_function_value)

    bound: float | None = None
    if is_mip:
        b = float(info.mip_dual_bound)
        if not math.isnan(b) and ms != _MS.kInfeasible:
            bound = b
    elif ms == _MS.kOptimal:
        bound = objective

    message = ""
    if ms == _MS.kOptimal:
        result_status = Status.OPTIMAL
    elif ms == _MS.kModelEmpty:
        # no columns: the objective is the constant; feasible iff every row admits activity 0
        feasible = bool(np.all(model.row_lower <= 0.0) and np.all(model.row_upper >= 0.0))
        if feasible:
            result_status, x, objective, bound = Status.OPTIMAL, np.zeros(n), float(model.c0), float(model.c0)
        else:
            result_status, x, objective, bound = Status.INFEASIBLE, None, None, None
    elif ms == _MS.kInfeasible:
        result_status, x, objective = Status.INFEASIBLE, None, None
    elif ms in _LIMIT_STATUSES:
        result_status = Status.FEASIBLE if has_solution else Status.NO_SOLUTION
        message = f"HiGHS stopped: {h.modelStatusToString(ms)}"
    else:
        result_status, x, objective, bound = Status.ERROR, None, None, None
        message = f"HiGHS: {h.modelStatusToString(ms)} (run status {run_status.name})"

    if is_mip or result_status in (Status.OPTIMAL, Status.FEASIBLE):
        tracer.finish(objective, bound)
    solve_time = time.perf_counter() - t0
    return BackendResult(
        status=result_status,
        x=x,
        objective=objective,
        bound=bound,
        solver=SOLVER_NAME,
        solver_version=HIGHS_VERSION,
        solve_time_s=solve_time,
        trace=tracer.points,
        message="; ".join(p for p in [message, *messages] if p),
        raw={"highs": h, "model_status": h.modelStatusToString(ms), "build_time_s": build_time,
             "mip_node_count": int(info.mip_node_count) if is_mip else 0},
    )
