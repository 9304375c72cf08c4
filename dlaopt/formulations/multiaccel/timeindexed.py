"""A time-indexed MILP of the *same* mode model as :mod:`.cpsat`, for small groups: a cross-check of the CP-SAT
model (both must find the same optimal makespan on the same :class:`~.cpsat.ModeModel` and horizon).

Columns ``y[k, t] ∈ {0, 1}``: option ``k`` (a job on a sub-accelerator in one bandwidth mode, integer duration
``d_k`` time units and demand ``q_k`` bandwidth units) starts in slot ``t ∈ [0, H - d_k]``; ``C`` the makespan (time
units, continuous; its optimum is integral since every end ``t + d_k`` is). Rows::

    Σ_{k of j, t} y[k, t] = 1                                        every job runs once
    Σ_{k on a} Σ_{t ≤ τ < t + d_k} y[k, t] ≤ 1                       every sub-accelerator a, slot τ ∈ [0, H)
    Σ_k q_k Σ_{t ≤ τ < t + d_k} y[k, t] ≤ capacity                   system bandwidth, every slot τ
    C ≥ Σ_{k of j, t} (t + d_k) · y[k, t]                            every job j
    Σ_{k of v, t} t · y[k, t] ≥ Σ_{k of u, t} (t + d_k) · y[k, t]    every precedence pair (u, v)

and, from the user's constraints, start slots only in ``[release_j, deadline_j - d_k]`` and, per colocation group
and sub-accelerator, ``Σ_{k of v on a, t} y[k, t] = Σ_{k of u on a, t} y[k, t]`` for its first job ``u`` and every
other ``v`` (placement constraints already removed the options). Minimise ``C``. Slot ``τ`` is the time interval
``[τ, τ + 1)``; an option running over ``[t, t + d)`` occupies slots ``t .. t + d - 1``, which is exactly CP-SAT's
interval semantics for ``NoOverlap`` and ``Cumulative`` (intervals touching at an end do not overlap). Size:
``Σ_k (H - d_k + 1)`` binaries and ``(A + 1)·H`` capacity rows -- small groups only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dlaopt.formulations.multiaccel.cpsat import ModeModel
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.linear import LinearModel, LinearModelBuilder
from dlaopt.solvers.result import SolveOptions, Status


@dataclass(frozen=True)
class TimeIndexedModel:
    model: LinearModel
    option: np.ndarray  # [N] the option of every y column
    slot: np.ndarray  # [N] its start slot
    horizon: int


@dataclass(frozen=True)
class TimeIndexedResult:
    """Times in units of the mode model's ``time_unit``."""

    status: Status
    makespan: float | None
    bound: float | None
    option: np.ndarray | None  # [J] the chosen option of every job
    start: np.ndarray | None  # [J] its start slot
    stats: dict[str, int]
    solve_time_s: float
    message: str = ""


def build_time_indexed(mm: ModeModel, horizon: int, lower: float = 0.0) -> TimeIndexedModel:
    """The MILP of the module docstring over ``[0, horizon)`` slots, ``C ≥ lower``."""
    h = int(horizon)
    d = mm.duration.astype(np.int64)
    lo = mm.release[mm.job].astype(np.int64) if mm.release is not None else np.zeros_like(d)
    hi = np.minimum(h, mm.deadline[mm.job]).astype(np.int64) if mm.deadline is not None else np.full_like(d, h)
    n_start = np.maximum(hi - d - lo + 1, 0)  # start slots per option: lo .. hi - d
    opt = np.repeat(np.arange(mm.n_options, dtype=np.int64), n_start)
    first = np.cumsum(n_start) - n_start
    slot = np.arange(opt.size, dtype=np.int64) - np.repeat(first, n_start) + np.repeat(lo, n_start)
    dur = d[opt]
    job = mm.job[opt]
    b = LinearModelBuilder("multiaccel-time-indexed")
    y = b.add_vars("y", opt.size, upper=1.0, integer=True)
    c = int(b.add_vars("C", 1, lower=float(lower), upper=float(h), cost=1.0)[0])
    b.add_rows("once", mm.n_jobs, job, y, 1.0, lower=1.0, upper=1.0)
    # coverage: column i occupies slots slot[i] .. slot[i] + dur[i] - 1
    cov_col = np.repeat(np.arange(opt.size, dtype=np.int64), dur)
    cov_first = np.cumsum(dur) - dur
    cov_slot = np.repeat(slot, dur) + (np.arange(cov_col.size, dtype=np.int64) - np.repeat(cov_first, dur))
    acc = mm.acc[opt][cov_col]
    b.add_rows("machine", mm.n_accelerators * h, acc * h + cov_slot, y[cov_col], 1.0, upper=1.0)
    q = mm.demand[opt][cov_col].astype(float)
    nz = q > 0
    b.add_rows("bandwidth", h, cov_slot[nz], y[cov_col[nz]], q[nz], upper=float(mm.capacity))
    pairs = [(g[0], v, a) for g in mm.colocate for v in g[1:] for a in range(mm.n_accelerators)]
    if pairs:
        acc_col = mm.acc[opt]
        rows_c: list[np.ndarray] = []
        cols_c: list[np.ndarray] = []
        vals_c: list[np.ndarray] = []
        for r, (u, v, a) in enumerate(pairs):
            iv = np.flatnonzero((job == v) & (acc_col == a))
            iu = np.flatnonzero((job == u) & (acc_col == a))
            rows_c.append(np.full(iv.size + iu.size, r))
            cols_c += [y[iv], y[iu]]
            vals_c += [np.ones(iv.size), -np.ones(iu.size)]
        b.add_rows("colocate", len(pairs), np.concatenate(rows_c), np.concatenate(cols_c), np.concatenate(vals_c),
                   lower=0.0, upper=0.0)
    ends = (slot + dur).astype(float)
    b.add_rows("makespan", mm.n_jobs, np.concatenate([job, np.arange(mm.n_jobs)]),
               np.concatenate([y, np.full(mm.n_jobs, c)]), np.concatenate([ends, -np.ones(mm.n_jobs)]), upper=0.0)
    if mm.precedence:
        prec = np.asarray(mm.precedence, dtype=np.int64).reshape(-1, 2)
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        for r, (u, v) in enumerate(prec.tolist()):
            iv = np.flatnonzero(job == v)
            iu = np.flatnonzero(job == u)
            rows += [np.full(iv.size + iu.size, r)]
            cols += [y[iv], y[iu]]
            vals += [slot[iv].astype(float), -ends[iu]]
        b.add_rows("precedence", prec.shape[0], np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                   lower=0.0)
    return TimeIndexedModel(b.build(), opt, slot, h)


def solve_time_indexed(mm: ModeModel, horizon: int, options: SolveOptions | None = None, *,
                       lower: float = 0.0) -> TimeIndexedResult:
    """Build and solve the time-indexed MILP on HiGHS; decode every job's option and start slot."""
    t0 = time.perf_counter()
    ti = build_time_indexed(mm, horizon, lower)
    res = solve_linear(ti.model, "highs", options if options is not None else SolveOptions())
    option = start = None
    if res.x is not None:
        y = res.x[: ti.option.size] > 0.5
        option = np.full(mm.n_jobs, -1, dtype=np.int64)
        start = np.full(mm.n_jobs, -1, dtype=np.int64)
        option[mm.job[ti.option[y]]] = ti.option[y]
        start[mm.job[ti.option[y]]] = ti.slot[y]
    return TimeIndexedResult(status=res.status, makespan=res.objective, bound=res.bound, option=option, start=start,
                             stats=ti.model.stats(), solve_time_s=time.perf_counter() - t0, message=res.message)
