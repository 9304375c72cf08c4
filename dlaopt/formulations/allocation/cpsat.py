"""The CP-SAT model: a 2-D no-overlap over (time, address).

Each buffer is a rectangle: its lifetime a fixed interval in time, its addresses an interval ``[offset, offset +
size)`` with ``offset = alignment · k`` (integer ``k``). ``NoOverlap2D`` keeps rectangles disjoint; a cumulative
over time with the capacity (the live bytes) is added as a redundant constraint, and for the minimum peak an integer
``peak >= offset + size`` is minimised with the live-bytes bound as its lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution
from dlaopt.solvers.cpsat_backend import CPSAT_VERSION, solve_cpsat_native
from dlaopt.solvers.result import BackendResult, SolveOptions


@dataclass
class CpsatAllocation:
    """The CP-SAT answer: the backend result and its placement (``None``: none)."""

    result: BackendResult
    solution: AllocationSolution | None
    version: str = CPSAT_VERSION


def build_model(data: AllocationData, capacity: int, *, minimize: bool,
                hint: AllocationSolution | None = None) -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """The model and its offset variables (in buffer order); ``capacity`` is the upper end of every buffer."""
    m = cp_model.CpModel()
    offsets: list[cp_model.IntVar] = []
    x_iv, y_iv = [], []
    lo_bound = min(capacity, data.bound)
    peak = m.new_int_var(lo_bound, capacity, "peak") if minimize else None
    for i, b in enumerate(data.buffers):
        hi = capacity - b.size
        k = m.new_int_var(0, max(hi, 0) // b.alignment, f"k{i}")
        if b.alignment == 1:
            o = k
        else:
            o = m.new_int_var(0, max(hi, 0), f"o{i}")
            m.add(o == b.alignment * k)
        offsets.append(o)
        x_iv.append(m.new_fixed_size_interval_var(b.lower, b.upper - b.lower, f"t{i}"))
        y_iv.append(m.new_fixed_size_interval_var(o, b.size, f"a{i}"))
        if peak is not None:
            m.add(peak >= o + b.size)
    m.add_no_overlap_2d(x_iv, y_iv)
    if data.n:
        m.add_cumulative(x_iv, [b.size for b in data.buffers], peak if peak is not None else capacity)
    if peak is not None:
        m.minimize(peak)
    if hint is not None and len(hint.offsets) == data.n and hint.peak(data) <= capacity:
        for o, v in zip(offsets, hint.offsets.tolist(), strict=True):
            m.add_hint(o, int(v))
    return m, offsets


def solve_cpsat(data: AllocationData, capacity: int, options: SolveOptions, *, minimize: bool = False,
                hint: AllocationSolution | None = None) -> CpsatAllocation:
    """Solve the model under ``options`` (time limit, threads, seed, ``extra['deterministic_time']``)."""
    if any(b.size > capacity for b in data.buffers):
        model = cp_model.CpModel()
        model.add_bool_or([])  # trivially infeasible: a buffer larger than the capacity
        res = solve_cpsat_native(model, options)
        return CpsatAllocation(res, None)
    model, offsets = build_model(data, capacity, minimize=minimize, hint=hint)
    res = solve_cpsat_native(model, options, variables=offsets)
    sol = None if res.x is None else AllocationSolution(np.round(res.x).astype(np.int64))
    return CpsatAllocation(res, sol)


__all__ = ["CpsatAllocation", "build_model", "solve_cpsat"]
