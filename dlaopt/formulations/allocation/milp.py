"""The allocation MILP (the harness path: HiGHS or any Pyomo solver).

Columns: ``k_i`` integer (the offset is ``o_i = a_i · k_i``), ``peak`` and, for every pair ``i < j`` whose lifetimes
overlap, a binary ``z_ij`` (1: ``i`` below ``j``). Rows, with ``M`` the capacity (or the sum of the sizes without
one)::

    a_i k_i + s_i - a_j k_j + M z_ij <= M        (z_ij = 1: i ends at or below j's offset)
    a_j k_j + s_j - a_i k_i - M z_ij <= 0        (z_ij = 0: j ends at or below i's offset)
    a_i k_i + s_i - peak <= 0

and ``k_i <= (M - s_i) / a_i``. Objective: ``peak`` (objective ``peak``) or nothing (``feasibility``, value 0).
"""

from __future__ import annotations

import numpy as np

from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution
from dlaopt.formulations.base import MilpFormulation
from dlaopt.solvers.linear import LinearModelBuilder


def big_m(data: AllocationData) -> int:
    return int(data.capacity) if data.capacity is not None else int(data.size.sum())


def build_allocation_milp(data: AllocationData) -> MilpFormulation[AllocationSolution]:
    n = data.n
    m = big_m(data)
    size, align = data.size.astype(float), data.alignment.astype(float)
    minimize = data.objective == "peak"
    b = LinearModelBuilder(f"allocation-{data.memory}")
    k = b.add_vars("k", n, lower=0.0, upper=np.floor((m - size) / align), integer=True)
    peak = b.add_vars("peak", 1, lower=float(min(data.bound, m)), upper=float(m), cost=1.0 if minimize else 0.0)
    ii, jj = np.nonzero(np.triu(data.overlap, 1))
    z = b.add_vars("z", len(ii), lower=0.0, upper=1.0, integer=True)
    q = len(ii)
    r = np.arange(q)
    # i below j: a_i k_i - a_j k_j + M z <= M - s_i
    b.add_rows("i_below_j", q, np.concatenate([r, r, r]), np.concatenate([k[ii], k[jj], z]),
               np.concatenate([align[ii], -align[jj], np.full(q, float(m))]), upper=m - size[ii])
    # j below i: a_j k_j - a_i k_i - M z <= -s_j
    b.add_rows("j_below_i", q, np.concatenate([r, r, r]), np.concatenate([k[jj], k[ii], z]),
               np.concatenate([align[jj], -align[ii], np.full(q, -float(m))]), upper=-size[jj])
    rn = np.arange(n)
    b.add_rows("peak", n, np.concatenate([rn, rn]), np.concatenate([k, np.full(n, peak[0])]),
               np.concatenate([align, -np.ones(n)]), upper=-size)
    model = b.build()

    def decode(x: np.ndarray) -> AllocationSolution:
        return AllocationSolution(np.round(x[k]).astype(np.int64) * data.alignment)

    def encode(sol: AllocationSolution) -> np.ndarray:
        off = sol.offsets
        if len(off) != n or np.any(off % data.alignment) or np.any(off < 0) or np.any(off + data.size > m):
            raise ValueError("the placement does not fit the model's capacity and alignment")
        x = np.zeros(model.n_cols)
        x[k] = off // data.alignment
        x[peak[0]] = max(float((off + data.size).max()) if n else 0.0, float(min(data.bound, m)))
        x[z] = (off[ii] + data.size[ii] <= off[jj]).astype(float)
        return x

    return MilpFormulation(model, decode, encode)


__all__ = ["big_m", "build_allocation_milp"]
