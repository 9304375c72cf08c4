r"""The exact pinning model as a MILP (vectorised build).

Sets: buffers :math:`b` with size :math:`s_b` and window :math:`[lo_b, hi_b]`; scratchpads :math:`k` with capacity
:math:`Q_k`; steps :math:`m`. :math:`U_b` = steps using :math:`b`; :math:`W_b = \{w_0 < w_1 < \dots\}` its writes.
Only triples allowed by window, role, access and size get a variable.

.. math::

    x_{b,k,m} \in \{0,1\}                              &\quad b \text{ resides in } k \text{ during } m \\
    \textstyle\sum_k x_{b,k,m} = 1 \;(m \in U_b), \quad \le 1 \;(\text{otherwise})  & \\
    \textstyle\sum_b s_b\, x_{b,k,m} \le Q_k                                         & \quad \forall k, m \\
    \ell_{b,k,m} \ge x_{b,k,m} - x_{b,k,m-1}            & \quad m \ne w_0 \ (\text{loads; } x_{\cdot,\cdot,lo-1}=0) \\
    z_{b,j} \ge x_{b,k,m-1} - x_{b,k,m}                 & \quad m \in (w_j, w_{j+1}] \cap (lo, hi] \ (\text{stores}) \\
    z_{b,\text{last}} = 1                               & \quad b \text{ a graph output}

Objective ``transfers``: :math:`\min \sum c_b (\sum \ell_{b,k,m} + \sum_j z_{b,j})` with :math:`c_b = s_b`;
``dma_cycles`` uses :math:`c_b = \text{latency} + s_b / \text{bandwidth}`. ``thesis`` (seed 000 §5.2.1):
:math:`\min \sum s_b\, y_{b,k,m}`, :math:`y \ge \pm(x_{b,k,m} - x_{b,k,m-1})` over :math:`m \in [lo, hi+1]` with
:math:`x = 0` outside the window. :math:`\ell, z, y` are continuous: integral at every vertex that matters because
:math:`x` is binary and each appears with a positive cost.
"""

from __future__ import annotations

import numpy as np

from dlaopt.formulations.base import MilpFormulation
from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware.model import DMA
from dlaopt.solvers.linear import LinearModelBuilder
from dlaopt.workload.tensor import TensorRole


def allowed_mask(graph: PinningGraph, b: int, *, pin_weights: bool = True) -> np.ndarray:
    """Boolean (K, window length) array: may buffer ``b`` sit in scratchpad k at each step of its window?"""
    lo, hi = graph.window[b]
    buf = graph.buffers[b]
    length = hi - lo + 1
    steps = np.arange(lo, hi + 1)
    reads = np.isin(steps, list(graph.read_steps[b]))
    writes = np.isin(steps, graph.write_steps[b])
    mask = np.zeros((len(graph.scratchpads), length), dtype=bool)
    for k, spm in enumerate(graph.scratchpads):
        if buf.role not in spm.holds or buf.size_bytes > spm.capacity:
            continue
        ok = np.ones(length, dtype=bool)
        if spm.access.value == "input":
            ok &= ~writes
        elif spm.access.value == "output":
            ok &= ~reads
        mask[k] = ok
    if not pin_weights and buf.role == TensorRole.WEIGHT:
        mask[:, ~np.isin(steps, graph.uses[b])] = False
    return mask


def add_capacity_rows(mb: LinearModelBuilder, graph: PinningGraph, spm: np.ndarray, step: np.ndarray,
                      col: np.ndarray, size: np.ndarray) -> None:
    """Capacity rows sum(size * col) <= Q_k for each (scratchpad, step), given as parallel arrays of occupancy
    terms; rows whose terms could never exceed the capacity are left out."""
    n_steps = len(graph.steps)
    cap = np.array([s.capacity for s in graph.scratchpads], dtype=float)
    key = spm * n_steps + step
    total = np.bincount(key, weights=size, minlength=len(cap) * n_steps)
    binding = np.flatnonzero(total > np.repeat(cap, n_steps) + 1e-9)
    row_of_key = np.full(len(cap) * n_steps, -1, dtype=np.int64)
    row_of_key[binding] = np.arange(binding.size)
    sel = row_of_key[key] >= 0
    mb.add_rows("capacity", int(binding.size), row_of_key[key[sel]], col[sel], size[sel],
                upper=cap[binding // n_steps])


def add_excess_rows(mb: LinearModelBuilder, name: str, t: np.ndarray, plus: np.ndarray, minus: np.ndarray) -> None:
    """Rows ``t[i] >= x[plus[i]] - x[minus[i]]`` (a column index of -1 stands for a variable fixed at 0)."""
    n = t.size
    hp, hm = plus >= 0, minus >= 0
    rows = np.concatenate([np.arange(n), np.flatnonzero(hp), np.flatnonzero(hm)])
    cols = np.concatenate([t, plus[hp], minus[hm]])
    vals = np.concatenate([np.ones(n), -np.ones(int(hp.sum())), np.ones(int(hm.sum()))])
    mb.add_rows(name, n, rows, cols, vals, lower=0.0)


def transfer_costs(graph: PinningGraph, objective: str, dma: DMA) -> np.ndarray:
    sizes = np.array([b.size_bytes for b in graph.buffers], dtype=float)
    if objective == "dma_cycles":
        return dma.latency_cycles + sizes / dma.bandwidth_bytes_per_cycle
    return sizes


def build_pinning_milp(graph: PinningGraph, objective: str, dma: DMA, *, pin_weights: bool = True
                       ) -> MilpFormulation[PinningSolution]:
    n_spm = len(graph.scratchpads)
    cost = transfer_costs(graph, objective, dma)
    sizes = np.array([b.size_bytes for b in graph.buffers], dtype=float)
    mb = LinearModelBuilder(f"pinning-{objective}")

    # ---- x variables: one block, indexed per buffer by a (K, L) table of column ids (-1 = no variable)
    masks = [allowed_mask(graph, b, pin_weights=pin_weights) for b in range(len(graph.buffers))]
    counts = np.array([int(m.sum()) for m in masks])
    x_cols = mb.add_vars("x", int(counts.sum()), lower=0.0, upper=1.0, integer=True)
    tables: list[np.ndarray] = []
    offset = 0
    for mask in masks:
        t = np.full(mask.shape, -1, dtype=np.int64)
        n = int(mask.sum())
        t[mask] = x_cols[offset:offset + n]  # row-major: k outer, m inner
        offset += n
        tables.append(t)

    # ---- residency rows: for each buffer and step of its window, sum_k x = 1 on uses, <= 1 elsewhere
    rr, rc, lo_r, up_r = [], [], [], []
    n_res = 0
    for b, t in enumerate(tables):
        lo, _ = graph.window[b]
        length = t.shape[1]
        uses = np.zeros(length, dtype=bool)
        uses[np.asarray(graph.uses[b], dtype=np.int64) - lo] = True
        k_idx, m_idx = np.nonzero(t >= 0)
        rr.append(n_res + m_idx)
        rc.append(t[k_idx, m_idx])
        lo_r.append(np.where(uses, 1.0, 0.0))
        up_r.append(np.ones(length))
        n_res += length
    mb.add_rows("residency", n_res, np.concatenate(rr), np.concatenate(rc), 1.0,
                lower=np.concatenate(lo_r), upper=np.concatenate(up_r))

    # ---- capacity rows: only (k, m) pairs where the candidates could exceed the capacity
    cap_k, cap_m, cap_col, cap_val = [], [], [], []
    for b, t in enumerate(tables):
        lo, _ = graph.window[b]
        k_idx, m_idx = np.nonzero(t >= 0)
        cap_k.append(k_idx)
        cap_m.append(m_idx + lo)
        cap_col.append(t[k_idx, m_idx])
        cap_val.append(np.full(k_idx.size, sizes[b]))
    if cap_k:
        add_capacity_rows(mb, graph, np.concatenate(cap_k), np.concatenate(cap_m), np.concatenate(cap_col),
                          np.concatenate(cap_val))

    # ---- transition structure: for every (b, k, m) in [lo, hi+1], columns of x at m and m-1 (or -1)
    cur_l, prev_l, buf_l, step_l = [], [], [], []
    for b, t in enumerate(tables):
        lo, _ = graph.window[b]
        padded = np.concatenate([np.full((n_spm, 1), -1), t, np.full((n_spm, 1), -1)], axis=1)
        cur = padded[:, 1:]  # x at m for m = lo .. hi+1
        prev = padded[:, :-1]  # x at m-1
        keep = (cur >= 0) | (prev >= 0)
        k_idx, i_idx = np.nonzero(keep)
        cur_l.append(cur[k_idx, i_idx])
        prev_l.append(prev[k_idx, i_idx])
        buf_l.append(np.full(k_idx.size, b))
        step_l.append(i_idx + lo)
    cur_a, prev_a = np.concatenate(cur_l), np.concatenate(prev_l)
    buf_a, step_a = np.concatenate(buf_l), np.concatenate(step_l)

    enc_load: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    enc_store: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    enc_abs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    if objective == "thesis":
        n = cur_a.size
        y = mb.add_vars("y", n, lower=0.0, upper=1.0, cost=sizes[buf_a])
        add_excess_rows(mb, "abs_pos", y, cur_a, prev_a)  # y >= x_m - x_{m-1}
        add_excess_rows(mb, "abs_neg", y, prev_a, cur_a)  # y >= x_{m-1} - x_m
        enc_abs = (y, cur_a, prev_a)
    else:
        # loads: an entry at m (x at m exists) that is not the production step
        producer = np.array([p if p is not None else -1 for p in graph.producer])
        is_entry = (cur_a >= 0) & (step_a != producer[buf_a])
        li = np.flatnonzero(is_entry)
        n_l = li.size
        lvar = mb.add_vars("load", n_l, lower=0.0, upper=1.0, cost=cost[buf_a[li]])
        add_excess_rows(mb, "load", lvar, cur_a[li], prev_a[li])  # l >= x_m - x_{m-1}
        enc_load = (lvar, cur_a[li], prev_a[li])

        # stores: one variable per dirty segment; an exit from k at m in (w_j, w_{j+1}] needs z_j
        seg_of = np.full(cur_a.size, -1, dtype=np.int64)
        z_cost, z_lower, seg_count = [], [], 0
        exit_mask = (prev_a >= 0) & (step_a <= np.array([w[1] for w in graph.window])[buf_a])
        for b, writes in enumerate(graph.write_steps):
            if not writes:
                continue
            lo, hi = graph.window[b]
            bounds = list(writes) + [hi]
            output = graph.buffers[b].role == TensorRole.OUTPUT
            sel_b = np.flatnonzero((buf_a == b) & exit_mask)
            for j, w in enumerate(writes):
                end = bounds[j + 1]
                last = j == len(writes) - 1
                sel = sel_b[(step_a[sel_b] > w) & (step_a[sel_b] <= end)]
                if last and output:
                    z_cost.append(cost[b])
                    z_lower.append(1.0)
                    seg_count += 1
                    continue  # a final store is paid anyway: exits in the last segment are free
                if sel.size == 0:
                    continue
                seg_of[sel] = seg_count
                z_cost.append(cost[b])
                z_lower.append(0.0)
                seg_count += 1
        z = mb.add_vars("store", seg_count, lower=np.array(z_lower), upper=1.0, cost=np.array(z_cost))
        si = np.flatnonzero(seg_of >= 0)
        add_excess_rows(mb, "store", z[seg_of[si]], prev_a[si], cur_a[si])  # z_s >= x_{m-1} - x_m
        enc_store = (z, seg_of[si], np.stack([prev_a[si], cur_a[si]]))

    model = mb.build()

    def decode(x: np.ndarray) -> PinningSolution:
        sol = PinningSolution.empty(graph)
        for b, t in enumerate(tables):
            vals = np.where(t >= 0, x[np.maximum(t, 0)], 0.0)
            best = vals.argmax(axis=0)
            present = vals.max(axis=0) > 0.5
            sol.placement[b] = np.where(present, best, -1).astype(np.int32)
        return sol

    def encode(sol: PinningSolution) -> np.ndarray:
        x = np.zeros(model.n_cols)
        for b, t in enumerate(tables):
            row = sol.placement[b]
            idx = np.flatnonzero(row >= 0)
            cols = t[row[idx], idx]
            if (cols < 0).any():
                raise ValueError(f"solution places buffer '{graph.buffers[b].name}' where the model has no variable")
            x[cols] = 1.0
        val = lambda cols: np.where(cols >= 0, x[np.maximum(cols, 0)], 0.0)
        if enc_abs is not None:
            y, cur, prev = enc_abs
            x[y] = np.abs(val(cur) - val(prev))
        if enc_load is not None:
            lvar, cur, prev = enc_load
            x[lvar] = np.maximum(0.0, val(cur) - val(prev))
        if enc_store is not None:
            zvar, seg, pc = enc_store
            need = np.maximum(0.0, val(pc[0]) - val(pc[1]))
            zval = np.zeros(zvar.size)
            np.maximum.at(zval, seg, need)
            x[zvar] = np.maximum(zval, model.col_lower[zvar])
        return x

    return MilpFormulation(model=model, decode=decode, encode=encode)
