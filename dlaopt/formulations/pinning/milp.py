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

User constraints (:mod:`.rules`): a ``pin`` leaves only its scratchpad a column at the pinned steps, whose residency
rows become equalities; a ``forbid`` removes the scratchpad's columns; an ``off_chip`` (streamed) buffer has columns
only at its uses and no transition columns — its transfers are fixed by the schedule and enter as a constant. A
``dma_cap`` adds one row per step, over the loads :math:`\ell` (zero-cost columns under ``thesis``) and the stores,
timed exactly: :math:`e_{b,k,m} = x_{b,k,m-1}(1 - x_{b,k,m})` (three rows) marks an exit, and
:math:`S_{b,m} = S_{b,m-1} \lor \sum_k e_{b,k,m}` (three rows, reset at every write) says whether the dirty segment
was stored by transition :math:`m`; its store counts at step :math:`m-1` as :math:`s_b (S_{b,m} - S_{b,m-1})`, a graph
output's final store at its last use as :math:`s_b (1 - S_{b,hi})`. Under a cap the columns :math:`\ell, e, S` are
declared integral (they are 0/1 at every solution anyway; HiGHS' presolve was seen to cut off the optimum of such
models when they were continuous).
"""

from __future__ import annotations

import numpy as np

from dlaopt.formulations.base import MilpFormulation
from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.formulations.pinning.rules import PinningRules, RuleView, allowed_mask, streamed_transfers
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware.model import DMA
from dlaopt.solvers.linear import LinearModelBuilder
from dlaopt.workload.tensor import TensorRole


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


def build_pinning_milp(graph: PinningGraph, objective: str, dma: DMA, *, pin_weights: bool = True,
                       rules: PinningRules | None = None) -> MilpFormulation[PinningSolution]:
    view = RuleView(graph, rules or PinningRules(), pin_weights)
    streamed = view.streamed
    cap_rule = view.rules.dma_cap
    n_spm = len(graph.scratchpads)
    n_steps = len(graph.steps)
    cost = transfer_costs(graph, objective, dma)
    sizes = np.array([b.size_bytes for b in graph.buffers], dtype=float)
    mb = LinearModelBuilder(f"pinning-{objective}")

    # ---- x variables: one block, indexed per buffer by a (K, L) table of column ids (-1 = no variable)
    masks = [view.mask(b) for b in range(len(graph.buffers))]
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

    # ---- residency rows: for each buffer and step of its window, sum_k x = 1 on uses and pinned steps, <= 1 else
    rr, rc, lo_r, up_r = [], [], [], []
    n_res = 0
    for b, t in enumerate(tables):
        lo, _ = graph.window[b]
        length = t.shape[1]
        must = np.zeros(length, dtype=bool)
        must[np.asarray(graph.uses[b], dtype=np.int64) - lo] = True
        must[np.asarray(list(view.pinned[b]), dtype=np.int64) - lo] = True
        k_idx, m_idx = np.nonzero(t >= 0)
        rr.append(n_res + m_idx)
        rc.append(t[k_idx, m_idx])
        lo_r.append(np.where(must, 1.0, 0.0))
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

    # ---- streamed (off-chip) buffers: transfers fixed by the schedule
    dma_const = np.zeros(n_steps)
    for b in sorted(streamed):
        loads, stores = streamed_transfers(graph, b)
        mb.c0 += 2 * sizes[b] * len(graph.uses[b]) if objective == "thesis" else cost[b] * (len(loads) + len(stores))
        for m in loads + stores:
            dma_const[m] += sizes[b]

    # ---- transition structure: for every (b, k, m) in [lo, hi+1], columns of x at m and m-1 (or -1)
    cur_l, prev_l, buf_l, step_l = [], [], [], []
    for b, t in enumerate(tables):
        if b in streamed:
            continue
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
    cat = (lambda parts: np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64))
    cur_a, prev_a, buf_a, step_a = cat(cur_l), cat(prev_l), cat(buf_l), cat(step_l)

    enc_load: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    enc_store: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    enc_abs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    if objective == "thesis":
        n = cur_a.size
        y = mb.add_vars("y", n, lower=0.0, upper=1.0, cost=sizes[buf_a])
        add_excess_rows(mb, "abs_pos", y, cur_a, prev_a)  # y >= x_m - x_{m-1}
        add_excess_rows(mb, "abs_neg", y, prev_a, cur_a)  # y >= x_{m-1} - x_m
        enc_abs = (y, cur_a, prev_a)
    load_steps, load_bytes = np.zeros(0, dtype=np.int64), np.zeros(0)
    if objective != "thesis" or cap_rule is not None:
        # loads: an entry at m (x at m exists) that is not the production step (priced unless the objective is
        # the thesis' transitions; then only the DMA cap reads them)
        producer = np.array([p if p is not None else -1 for p in graph.producer], dtype=np.int64)
        is_entry = (cur_a >= 0) & (step_a != producer[buf_a])
        li = np.flatnonzero(is_entry)
        n_l = li.size
        lvar = mb.add_vars("load", n_l, lower=0.0, upper=1.0, integer=cap_rule is not None,
                           cost=0.0 if objective == "thesis" else cost[buf_a[li]])
        add_excess_rows(mb, "load", lvar, cur_a[li], prev_a[li])  # l >= x_m - x_{m-1}
        enc_load = (lvar, cur_a[li], prev_a[li])
        load_steps, load_bytes = step_a[li], sizes[buf_a[li]]
    if objective != "thesis":
        # stores: one variable per dirty segment; an exit from k at m in (w_j, w_{j+1}] needs z_j
        seg_of = np.full(cur_a.size, -1, dtype=np.int64)
        z_cost, z_lower, seg_count = [], [], 0
        his = np.array([w[1] for w in graph.window], dtype=np.int64)
        exit_mask = (prev_a >= 0) & (step_a <= his[buf_a]) if buf_a.size else np.zeros(0, dtype=bool)
        for b, writes in enumerate(graph.write_steps):
            if not writes or b in streamed:
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

    enc_cap = None
    if cap_rule is not None:
        enc_cap = _add_dma_cap(mb, graph, tables, streamed, sizes, load_steps,
                               enc_load[0] if enc_load is not None else np.zeros(0, dtype=np.int64), load_bytes,
                               dma_const, cap_rule.bytes)

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
        if enc_cap is not None:
            one, ex, ex_prev, ex_cur, svar, s_exits = enc_cap
            x[one] = 1.0
            x[ex] = val(ex_prev) * (1.0 - val(ex_cur))
            for col, prev_s, exits in zip(svar, *s_exits, strict=True):
                x[col] = max(x[prev_s] if prev_s >= 0 else 0.0, float(x[exits].sum()))
        return x

    return MilpFormulation(model=model, decode=decode, encode=encode)


def _add_dma_cap(mb: LinearModelBuilder, graph: PinningGraph, tables: list[np.ndarray], streamed: frozenset[int],
                 sizes: np.ndarray, load_steps: np.ndarray, load_cols: np.ndarray, load_bytes: np.ndarray,
                 dma_const: np.ndarray,
                 cap: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                    tuple[list[int], list[np.ndarray]]]:
    """The per-step DMA rows (see the module text); returns what :func:`encode` needs to fill the new columns."""
    n_spm = len(graph.scratchpads)
    # pass 1: exits (b, k, m) inside dirty segments, and the segments' transitions that may store
    ex_prev: list[int] = []
    ex_cur: list[int] = []
    trans: list[tuple[int, int, list[int], bool]] = []  # (buffer, transition m, its exit ids, first of segment)
    finals: list[tuple[int, int]] = []  # (buffer, index into trans of the segment's last S or -1): final stores
    for b, writes in enumerate(graph.write_steps):
        if not writes or b in streamed:
            continue
        lo, hi = graph.window[b]
        t = tables[b]
        output = graph.buffers[b].role == TensorRole.OUTPUT
        for j, w in enumerate(writes):
            end = writes[j + 1] if j + 1 < len(writes) else hi
            first = True
            last_s = -1
            for m in range(w + 1, end + 1):
                ids = []
                for k in range(n_spm):
                    c_prev = int(t[k, m - 1 - lo])
                    if c_prev < 0:
                        continue
                    ids.append(len(ex_prev))
                    ex_prev.append(c_prev)
                    ex_cur.append(int(t[k, m - lo]))
                if ids:
                    trans.append((b, m, ids, first))
                    first = False
                    last_s = len(trans) - 1
            if output and j == len(writes) - 1:
                finals.append((b, last_s))
    one = int(mb.add_vars("one", 1, lower=1.0, upper=1.0)[0])
    ex = mb.add_vars("dma_exit", len(ex_prev), lower=0.0, upper=1.0, integer=True)
    svar = mb.add_vars("dma_stored", len(trans), lower=0.0, upper=1.0, integer=True)
    prev_a, cur_a = np.array(ex_prev, dtype=np.int64), np.array(ex_cur, dtype=np.int64)
    # e = x_prev (1 - x_cur): e >= x_prev - x_cur, e <= x_prev, e <= 1 - x_cur
    add_excess_rows(mb, "dma_exit", ex, prev_a, cur_a)
    n = ex.size
    mb.add_rows("dma_exit_prev", n, np.concatenate([np.arange(n), np.arange(n)]), np.concatenate([ex, prev_a]),
                np.concatenate([np.ones(n), -np.ones(n)]), upper=0.0)
    has = np.flatnonzero(cur_a >= 0)
    mb.add_rows("dma_exit_cur", has.size, np.concatenate([np.arange(has.size), np.arange(has.size)]),
                np.concatenate([ex[has], cur_a[has]]), 1.0, upper=1.0)
    # S_m = S_{m-1} or E_m: S_m >= S_{m-1}, S_m >= E_m, S_m <= S_{m-1} + E_m
    r_ge: list[tuple[list[int], list[float]]] = []
    r_le: list[tuple[list[int], list[float]]] = []
    prev_s: list[int] = []
    s_exits: list[np.ndarray] = []
    terms: list[tuple[int, int, float]] = []  # (step, column, coefficient) of the DMA rows
    const = dma_const.copy()
    for i, (b, m, ids, first) in enumerate(trans):
        s = int(svar[i])
        e_cols = [int(ex[d]) for d in ids]
        p = -1 if first else int(svar[i - 1])
        prev_s.append(p)
        s_exits.append(np.array(e_cols, dtype=np.int64))
        r_ge.append(([s, *e_cols], [1.0] + [-1.0] * len(e_cols)))
        r_le.append(([s, *e_cols, *([p] if p >= 0 else [])], [1.0] + [-1.0] * (len(e_cols) + (p >= 0))))
        if p >= 0:
            r_ge.append(([s, p], [1.0, -1.0]))
        terms.append((m - 1, s, sizes[b]))
        if p >= 0:
            terms.append((m - 1, p, -sizes[b]))
    for b, last in finals:
        hi = graph.window[b][1]
        const[hi] += sizes[b]
        if last >= 0:
            terms.append((hi, int(svar[last]), -sizes[b]))
    for name, rows, kw in (("dma_stored_ge", r_ge, {"lower": 0.0}), ("dma_stored_le", r_le, {"upper": 0.0})):
        rr = np.concatenate([np.full(len(c), i) for i, (c, _) in enumerate(rows)]) if rows else np.zeros(0)
        cc = np.concatenate([np.array(c) for c, _ in rows]) if rows else np.zeros(0)
        vv = np.concatenate([np.array(v) for _, v in rows]) if rows else np.zeros(0)
        mb.add_rows(name, len(rows), rr, cc, vv, **kw)
    # one row per step: loads + stores + constants <= cap
    steps = np.concatenate([load_steps, np.array([t[0] for t in terms], dtype=np.int64), np.arange(len(const))])
    cols = np.concatenate([load_cols, np.array([t[1] for t in terms], dtype=np.int64), np.full(len(const), one)])
    vals = np.concatenate([load_bytes, np.array([t[2] for t in terms]), const])
    mb.add_rows("dma_cap", len(const), steps, cols, vals, upper=float(cap))
    return one, ex, prev_a, cur_a, svar, (prev_s, s_exits)


__all__ = ["add_capacity_rows", "add_excess_rows", "allowed_mask", "build_pinning_milp", "transfer_costs"]
