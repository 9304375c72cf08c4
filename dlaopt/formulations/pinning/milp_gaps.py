r"""The default exact pinning model: decisions per *use* and per *gap between uses* (vectorised build).

Observation: between two consecutive uses :math:`u_j < u_{j+1}` of a buffer, some optimal solution either keeps the
buffer in one scratchpad through the whole gap or drops it right after :math:`u_j`. Any other pattern exits a
scratchpad inside the gap and so pays the reload at (or before) :math:`u_{j+1}` and the store (if dirty) anyway,
while occupying more capacity. Hence no variable is needed at idle steps:

.. math::

    x_{b,k,j} \in \{0,1\}   &\quad b \text{ sits in } k \text{ at its use } u_j, \quad \textstyle\sum_k x_{b,k,j} = 1\\
    g_{b,k,j} \in \{0,1\}   &\quad b \text{ kept in } k \text{ through the gap } (u_j, u_{j+1}),\quad
                               g_{b,k,j} \le x_{b,k,j},\ g_{b,k,j} \le x_{b,k,j+1} \\
    \textstyle\sum_{(b,j): u_j = m} s_b x_{b,k,j} + \sum_{(b,j): u_j < m < u_{j+1}} s_b g_{b,k,j} \le Q_k
                            &\quad \forall k, m \\
    z_{b,s} \ge 1 - \textstyle\sum_k g_{b,k,j} &\quad \text{gap } j \text{ exits in dirty segment } s
                               \ (w_s \le u_j < w_{s+1})

Cost (``transfers``/``dma_cycles`` with per-transfer cost :math:`c_b`): a load at the first use of an input or
weight, a reload after every gap not kept (:math:`c_b (1 - \sum_k g_{b,k,j})`), one store per dirty segment with a
dropped gap (:math:`c_b z_{b,s}`), and the final store of a graph output. ``thesis``: :math:`2 s_b` per residency run,
i.e. :math:`2 s_b (1 + \sum_j (1 - \sum_k g_{b,k,j}))`.

The same model over one merged scratchpad (capacity :math:`\sum_k Q_k`, any access) is a relaxation: its bound is a
valid lower bound of the multi-scratchpad optimum (moves between scratchpads become free, packing is relaxed).

Packing cuts: when the :math:`K` scratchpads have one capacity :math:`Q`, whatever is resident at step :math:`m`
must pack into :math:`K` bins, so for every dual-feasible function :math:`u` (Fekete & Schepers:
:math:`u^{(k)}(x) = x` if :math:`(k+1)x \in \mathbb{Z}`, else :math:`\lfloor (k+1)x \rfloor / k`)
:math:`\sum_{\text{resident}} u(s_b / Q) \le K`. Added for :math:`k = 1, 2, 3` on every step where they can bind,
aggregated over the scratchpads (valid in the full model, and the part of packing the merged relaxation forgets).

User constraints (:mod:`.rules`) keep the model exact. A ``pin`` over steps :math:`[f, l]` makes :math:`f` and
:math:`l` decision points of the buffer as if they were uses (residency required there, in the pinned scratchpad
only); the argument above holds between any two steps where residency is required, and the gaps inside
:math:`[f, l]` are kept (:math:`\sum_k g = 1`). A ``forbid`` removes the scratchpad's columns. An ``off_chip``
(streamed) buffer keeps no gap: a reload after every use, the store of every dirty segment — the transfers of one
residency per use, as the evaluator prices it; each of its pinned steps is a decision point of its own. A
``dma_cap`` is not modelled here (the canonical gap pattern fixes the step of every transfer; under a cap
prefetching and late write-back matter): the problem uses the per-step model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlaopt.formulations.base import MilpFormulation
from dlaopt.formulations.pinning.data import PinningGraph, Scratchpad
from dlaopt.formulations.pinning.milp import transfer_costs
from dlaopt.formulations.pinning.packing import PackingCut
from dlaopt.formulations.pinning.rules import PinningRules, RuleView
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware.model import DMA, SpmAccess
from dlaopt.solvers.linear import LinearModelBuilder
from dlaopt.workload.tensor import TensorRole


def merged_graph(graph: PinningGraph) -> PinningGraph:
    """The relaxation: every scratchpad merged into one of the total capacity that holds anything."""
    holds = frozenset().union(*(s.holds for s in graph.scratchpads))
    spm = Scratchpad("merged", sum(s.capacity for s in graph.scratchpads), SpmAccess.ANY, holds)
    return dataclasses.replace(graph, scratchpads=(spm,))


DFF_ORDERS = (1, 2, 3)


def dff(x: np.ndarray, k: int) -> np.ndarray:
    """Fekete-Schepers dual-feasible function u^(k) applied to item sizes x (fractions of a bin)."""
    y = (k + 1) * x
    integral = np.abs(y - np.round(y)) < 1e-9
    return np.where(integral, x, np.floor(y) / k)


def identical_bins(graph: PinningGraph) -> tuple[int, int] | None:
    caps = {s.capacity for s in graph.scratchpads}
    return (len(graph.scratchpads), caps.pop()) if len(caps) == 1 else None


@dataclass
class Occupancy:
    r"""The terms of rows "what is resident at step m weighs at most U" per group (a scratchpad, or one group for
    every scratchpad): *point* terms (a column at one step: a use) and *span* terms (a column at every step of
    ``[start, end)``: a kept gap's interior).

    Written directly, a span adds one term per step it covers, so a gap kept across a long idle stretch costs a term
    per idle step. Aggregated (:meth:`add_rows` with ``aggregate``), each group gets an occupancy column
    :math:`L_m` per step of its range, chained along the schedule
    :math:`L_m = L_{m-1} + \sum_{\text{start}=m} v\,c - \sum_{\text{end}=m} v\,c` (:math:`L_m \ge 0`), and the
    row at step :math:`m` is its point terms plus :math:`L_m`: a span enters twice, at its ends. :math:`L_m` equals the
    spans' sum at every solution, so the two forms have the same feasible set and the same LP relaxation."""

    n_steps: int
    pt_group: np.ndarray
    pt_m: np.ndarray
    pt_col: np.ndarray
    sp_group: np.ndarray
    sp_start: np.ndarray
    sp_end: np.ndarray
    sp_col: np.ndarray

    def totals(self, n_groups: int, pt_val: np.ndarray, sp_val: np.ndarray) -> np.ndarray:
        """(group, step) → the sum of the coefficients of the terms there (the most the row's left side can be)."""
        n = self.n_steps
        diff = np.bincount(self.sp_group * (n + 1) + self.sp_start, weights=sp_val, minlength=n_groups * (n + 1))
        diff -= np.bincount(self.sp_group * (n + 1) + self.sp_end, weights=sp_val, minlength=n_groups * (n + 1))
        spans = np.cumsum(diff.reshape(n_groups, n + 1), axis=1)[:, :n]
        points = np.bincount(self.pt_group * n + self.pt_m, weights=pt_val, minlength=n_groups * n)
        return spans + points.reshape(n_groups, n)

    def add_rows(self, mb: LinearModelBuilder, name: str, n_groups: int, pt_val: np.ndarray, sp_val: np.ndarray,
                 upper: np.ndarray, *, aggregate: bool, reach: int = 1) -> int:
        """Rows ``terms(group, m) @ val <= upper[group]`` where the terms' total over ``reach`` exceeds the upper
        side (elsewhere they cannot bind); returns the number of rows."""
        n = self.n_steps
        need = self.totals(n_groups, pt_val, sp_val) / reach > upper[:, None] + 1e-9
        keys = np.flatnonzero(need.ravel())
        if keys.size == 0:
            return 0
        row_of_key = np.full(n_groups * n, -1, dtype=np.int64)
        row_of_key[keys] = np.arange(keys.size)
        pt = pt_val > 0
        pt_row = row_of_key[self.pt_group[pt] * n + self.pt_m[pt]]
        rows, cols, vals = [pt_row], [self.pt_col[pt]], [pt_val[pt]]
        sp = np.flatnonzero(sp_val > 0)
        if aggregate:
            for grp in np.unique(self.sp_group[sp]).tolist():
                mine = sp[self.sp_group[sp] == grp]
                lo, hi = int(self.sp_start[mine].min()), int(self.sp_end[mine].max())
                occ = mb.add_vars(f"{name}_occupancy{grp}", hi - lo, lower=0.0)
                # chain row m - lo: L_m - L_{m-1} - (spans starting at m) + (spans ending at m) = 0
                st, en = self.sp_start[mine] - lo, self.sp_end[mine] - lo
                ends = en < hi - lo
                steps = np.arange(hi - lo)
                mb.add_rows(f"{name}_chain{grp}", hi - lo,
                            np.concatenate([steps, steps[1:], st, en[ends]]),
                            np.concatenate([occ, occ[:-1], self.sp_col[mine], self.sp_col[mine][ends]]),
                            np.concatenate([np.ones(hi - lo), -np.ones(hi - lo - 1), -sp_val[mine],
                                            sp_val[mine][ends]]), lower=0.0, upper=0.0)
                at = np.arange(lo, hi)
                r = row_of_key[grp * n + at]
                rows.append(r[r >= 0])
                cols.append(occ[r >= 0])
                vals.append(np.ones(int((r >= 0).sum())))
        else:
            lens = self.sp_end[sp] - self.sp_start[sp]
            rep = np.repeat(sp, lens)
            offs = np.arange(rep.size) - np.repeat(np.cumsum(lens) - lens, lens)
            rows.append(row_of_key[self.sp_group[rep] * n + self.sp_start[rep] + offs])
            cols.append(self.sp_col[rep])
            vals.append(sp_val[rep])
        r_all, c_all, v_all = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
        keep = r_all >= 0
        mb.add_rows(name, int(keys.size), r_all[keep], c_all[keep], v_all[keep], upper=upper[keys // n])
        return int(keys.size)


@dataclass
class GapModel:
    """The per-gap MILP and the index arrays behind it (for drivers that add cuts or read residency off it).

    ``x``: columns (buffer ``xb``, scratchpad ``xk``, use number ``xj``, step ``xm``); ``g``: kept-gap columns
    (buffer ``gb``, scratchpad ``gk``, gap number ``gj``); ``occ_*``: the capacity rows' terms (scratchpad, step,
    column, bytes); ``uses``: each buffer's decision points."""

    formulation: MilpFormulation[PinningSolution]
    uses: list[np.ndarray]
    x: np.ndarray
    xb: np.ndarray
    xk: np.ndarray
    xj: np.ndarray
    xm: np.ndarray
    g: np.ndarray
    gb: np.ndarray
    gk: np.ndarray
    gj: np.ndarray
    occ_k: np.ndarray
    occ_m: np.ndarray
    occ_col: np.ndarray
    occ_size: np.ndarray


def build_gap_milp(graph: PinningGraph, objective: str, dma: DMA, *, pin_weights: bool = True,
                   bins: tuple[int, int] | None = None,
                   rules: PinningRules | None = None, aggregate: bool = False) -> MilpFormulation[PinningSolution]:
    """``bins=(K, Q)``: add the packing cuts for K bins of capacity Q (default: the graph's scratchpads when they
    all have one capacity; for the merged relaxation pass the original scratchpads' (K, Q)). ``rules``: the user
    constraints (for the merged relaxation, :meth:`PinningRules.merged`); a DMA cap is refused (ValueError)."""
    return build_gap_model(graph, objective, dma, pin_weights=pin_weights, bins=bins, rules=rules,
                           aggregate=aggregate).formulation


def build_gap_model(graph: PinningGraph, objective: str, dma: DMA, *, pin_weights: bool = True,
                    bins: tuple[int, int] | None = None, rules: PinningRules | None = None,
                    cuts: Sequence[PackingCut] = (), cut_steps: np.ndarray | None = None,
                    cut_at: Sequence[np.ndarray] | None = None, aggregate: bool = False) -> GapModel:
    """:func:`build_gap_milp` with its index arrays; ``cuts``: pattern packing cuts (:mod:`.packing`, valid for
    ``bins``) added on every step where they can bind (``cut_steps``: only on these steps; ``cut_at``: per cut,
    only on its own steps). ``aggregate``: capacity and Fekete-Schepers rows over occupancy variables chained along
    the schedule (:class:`Occupancy`; the same LP, a kept gap enters at its two ends instead of once per idle
    step)."""
    view = RuleView(graph, rules or PinningRules(), pin_weights)
    if view.rules.dma_cap is not None:
        raise ValueError("the per-gap model does not time transfers: a dma_cap needs the per-step model")
    bins = bins if bins is not None else identical_bins(graph)
    n_spm = len(graph.scratchpads)
    sizes = np.array([b.size_bytes for b in graph.buffers], dtype=float)
    unit = 2 * sizes if objective == "thesis" else transfer_costs(graph, objective, dma)
    mb = LinearModelBuilder(f"pinning-gaps-{objective}")
    const = 0.0

    # decision points: the uses, and the ends of every pinned range (residency is required at all of them)
    uses = []
    for b, u in enumerate(graph.uses):
        pinned = view.pinned[b]
        ends = {m for m in pinned if m - 1 not in pinned or pinned[m - 1] != pinned[m]}
        ends |= {m for m in pinned if m + 1 not in pinned or pinned[m + 1] != pinned[m]}
        if b in view.streamed:  # keeps no gap: every pinned step is a point of its own
            ends = set(pinned)
        uses.append(np.array(sorted(set(u) | ends), dtype=np.int64))
    masks = [view.mask(b) for b in range(len(graph.buffers))]
    streamed = view.streamed

    # ---- x: (buffer, spm, use) ----------------------------------------------------------------------------
    xb, xk, xj, xm = [], [], [], []
    for b, u in enumerate(uses):
        if u.size == 0:
            continue
        lo = graph.window[b][0]
        ok = masks[b][:, u - lo]  # (K, n_uses)
        k_idx, j_idx = np.nonzero(ok)
        xb.append(np.full(k_idx.size, b))
        xk.append(k_idx)
        xj.append(j_idx)
        xm.append(u[j_idx])
    xb_a, xk_a, xj_a, xm_a = (np.concatenate(a) if a else np.zeros(0, np.int64) for a in (xb, xk, xj, xm))
    x = mb.add_vars("x", xb_a.size, lower=0.0, upper=1.0, integer=True)
    use_offset = np.zeros(len(uses) + 1, dtype=np.int64)
    use_offset[1:] = np.cumsum([u.size for u in uses])
    use_row = use_offset[xb_a] + xj_a  # global (buffer, use) id
    n_use_rows = int(use_offset[-1])
    mb.add_rows("assign", n_use_rows, use_row, x, 1.0, lower=1.0, upper=1.0)
    x_lookup = {(int(b), int(k), int(j)): int(c) for b, k, j, c in zip(xb_a, xk_a, xj_a, x, strict=True)}

    # ---- g: (buffer, spm, gap) where the buffer may stay through the whole gap -------------------------------
    gb, gk, gj = [], [], []
    for b, u in enumerate(uses):
        if u.size < 2 or b in streamed:  # a streamed buffer keeps no gap
            continue
        lo = graph.window[b][0]
        m = masks[b]
        # idle-allowed prefix sums to test "allowed at every interior step" per gap in O(1)
        allowed_cum = np.concatenate([np.zeros((n_spm, 1), dtype=np.int64), np.cumsum(m, axis=1)], axis=1)
        start, end = u[:-1] - lo, u[1:] - lo  # interior = (start, end)
        interior_len = end - start - 1
        interior_ok = (allowed_cum[:, end] - allowed_cum[:, start + 1]) == interior_len[None, :]
        ends_ok = m[:, start] & m[:, end]
        k_idx, j_idx = np.nonzero(interior_ok & ends_ok)
        gb.append(np.full(k_idx.size, b))
        gk.append(k_idx)
        gj.append(j_idx)
    gb_a, gk_a, gj_a = (np.concatenate(a) if a else np.zeros(0, np.int64) for a in (gb, gk, gj))
    g = mb.add_vars("keep", gb_a.size, lower=0.0, upper=1.0, integer=True, cost=-unit[gb_a])
    # a gap inside a pinned range (both ends pinned to one scratchpad, and every step between them) is kept there
    forced = []
    for b, u in enumerate(uses):
        if b in streamed:  # a residency per use anyway: its pins only ask for residency at each step
            continue
        pinned = view.pinned[b]
        for j in range(u.size - 1):
            k = pinned.get(int(u[j]))
            if k is not None and k >= 0 and all(pinned.get(m) == k for m in range(int(u[j]) + 1, int(u[j + 1]) + 1)):
                forced.append((b, j))
    # every gap not kept costs one reload (thesis: one more run)
    n_gaps = np.array([max(0, u.size - 1) for u in uses])
    const += float((n_gaps * unit).sum())
    # first use: inputs/weights are loaded (thesis: the first run)
    for b, buf in enumerate(graph.buffers):
        if uses[b].size == 0:
            continue
        if objective == "thesis" or buf.starts_in_memory:
            const += unit[b]
    # g <= x at both ends
    x_start = np.array([x_lookup[(int(b), int(k), int(j))] for b, k, j in zip(gb_a, gk_a, gj_a, strict=True)],
                       dtype=np.int64)
    x_end = np.array([x_lookup[(int(b), int(k), int(j) + 1)] for b, k, j in zip(gb_a, gk_a, gj_a, strict=True)],
                     dtype=np.int64)
    n_g = g.size
    for name, xe in (("keep_start", x_start), ("keep_end", x_end)):
        mb.add_rows(name, n_g, np.concatenate([np.arange(n_g), np.arange(n_g)]), np.concatenate([g, xe]),
                    np.concatenate([np.ones(n_g), -np.ones(n_g)]), upper=0.0)
    # at most one scratchpad per gap (implied by the above, kept explicit for the LP)
    gap_id = np.zeros(len(uses) + 1, dtype=np.int64)
    gap_id[1:] = np.cumsum(n_gaps)
    gap_row = gap_id[gb_a] + gj_a
    mb.add_rows("keep_one", int(gap_id[-1]), gap_row, g, 1.0, upper=1.0)
    if forced:
        forced_row = np.full(int(gap_id[-1]), -1, dtype=np.int64)
        forced_row[[gap_id[b] + j for b, j in forced]] = np.arange(len(forced))
        sel = forced_row[gap_row] >= 0
        mb.add_rows("keep_pinned", len(forced), forced_row[gap_row[sel]], g[sel], 1.0, lower=1.0)

    # ---- stores (not for the thesis objective) -------------------------------------------------------------
    enc_store: tuple[np.ndarray, np.ndarray] | None = None
    if objective != "thesis":
        seg_of_gap = np.full(int(gap_id[-1]), -1, dtype=np.int64)
        z_cost, z_lower, n_z = [], [], 0
        for b, writes in enumerate(graph.write_steps):
            if not writes or uses[b].size == 0:
                continue
            output = graph.buffers[b].role == TensorRole.OUTPUT
            w = np.asarray(writes, dtype=np.int64)
            u = uses[b]
            seg = np.searchsorted(w, u[:-1], side="right") - 1  # segment of the exit after each gap's start
            for s in range(len(writes)):
                last = s == len(writes) - 1
                if last and output:
                    const += unit[b]  # the final write-back, paid whatever happens
                    continue
                sel = np.flatnonzero(seg == s)
                if sel.size == 0:
                    continue
                seg_of_gap[gap_id[b] + sel] = n_z
                z_cost.append(unit[b])
                z_lower.append(0.0)
                n_z += 1
        z = mb.add_vars("store", n_z, lower=np.array(z_lower), upper=1.0, cost=np.array(z_cost))
        # z_s + sum_k g_{b,k,j} >= 1 for every gap j exiting in segment s
        gaps_with_seg = np.flatnonzero(seg_of_gap >= 0)
        row_of_gap = np.full(seg_of_gap.size, -1, dtype=np.int64)
        row_of_gap[gaps_with_seg] = np.arange(gaps_with_seg.size)
        g_sel = row_of_gap[gap_row] >= 0
        rows = np.concatenate([np.arange(gaps_with_seg.size), row_of_gap[gap_row[g_sel]]])
        cols = np.concatenate([z[seg_of_gap[gaps_with_seg]], g[g_sel]])
        mb.add_rows("store", gaps_with_seg.size, rows, cols, 1.0, lower=1.0)
        enc_store = (z, seg_of_gap)

    # ---- capacity (k, m) -----------------------------------------------------------------------------------
    # occupancy terms: a use occupies its step (point terms), a kept gap its interior steps u_j+1 .. u_{j+1}-1
    g_start = np.array([uses[b][j] for b, j in zip(gb_a, gj_a, strict=True)], dtype=np.int64) + 1
    g_end = np.array([uses[b][j + 1] for b, j in zip(gb_a, gj_a, strict=True)], dtype=np.int64)
    span = g_end > g_start
    sp_k, sp_start, sp_end, sp_col = gk_a[span], g_start[span], g_end[span], g[span]
    sp_size = sizes[gb_a[span]]
    pt_size = sizes[xb_a]
    lens = sp_end - sp_start
    rep = np.repeat(np.arange(lens.size), lens)
    offs = np.arange(rep.size) - np.repeat(np.cumsum(lens) - lens, lens)
    occ_k = np.concatenate([xk_a, sp_k[rep]])
    occ_m = np.concatenate([xm_a, sp_start[rep] + offs])
    occ_col = np.concatenate([x, sp_col[rep]])
    occ_size = np.concatenate([pt_size, sp_size[rep]])
    n_steps = len(graph.steps)
    occ = Occupancy(n_steps, xk_a, xm_a, x, sp_k, sp_start, sp_end, sp_col)
    cap = np.array([s.capacity for s in graph.scratchpads], dtype=float)
    occ.add_rows(mb, "capacity", n_spm, pt_size, sp_size, cap, aggregate=aggregate)
    if bins is not None and bins[0] > 1:
        n_bins, q = bins
        one = Occupancy(n_steps, np.zeros_like(xk_a), xm_a, x, np.zeros_like(sp_k), sp_start, sp_end, sp_col)
        for order in DFF_ORDERS:
            # u^(k) takes values j/(k+1) or j/k: scaled by k(k+1) the cut has integer coefficients (CP-SAT needs them)
            scale = order * (order + 1)
            w_pt = np.round(dff(np.minimum(pt_size / q, 1.0), order) * scale)
            w_sp = np.round(dff(np.minimum(sp_size / q, 1.0), order) * scale)
            # a buffer has one term per scratchpad it may use: estimate the most a step can hold by total / n_spm
            one.add_rows(mb, f"packing_dff{order}", 1, w_pt, w_sp, np.array([float(n_bins * scale)]),
                         aggregate=aggregate, reach=n_spm)

    if bins is not None and cuts:
        allowed_steps = None
        if cut_steps is not None:
            allowed_steps = np.zeros(n_steps, dtype=bool)
            allowed_steps[cut_steps] = True
        for i, cut in enumerate(cuts):
            w = cut.weight_of(occ_size)
            total = np.bincount(occ_m, weights=w, minlength=n_steps) / n_spm
            can_bind = total > cut.rhs + 1e-9
            if allowed_steps is not None:
                can_bind &= allowed_steps
            if cut_at is not None:
                at = np.zeros(n_steps, dtype=bool)
                at[np.asarray(cut_at[i], dtype=np.int64)] = True
                can_bind &= at
            need = np.flatnonzero(can_bind)
            if need.size == 0:
                continue
            row_of = np.full(n_steps, -1, dtype=np.int64)
            row_of[need] = np.arange(need.size)
            sel = (row_of[occ_m] >= 0) & (w > 0)
            mb.add_rows(f"packing_pattern{i}", int(need.size), row_of[occ_m[sel]], occ_col[sel], w[sel],
                        upper=float(cut.rhs))

    mb.c0 = const
    model = mb.build()

    def decode(sol_x: np.ndarray) -> PinningSolution:
        sol = PinningSolution.empty(graph)
        on = sol_x[x] > 0.5
        for b, k, m in zip(xb_a[on], xk_a[on], xm_a[on], strict=True):
            sol.set(graph, int(b), int(m), int(k))
        kept = sol_x[g] > 0.5
        for b, k, j in zip(gb_a[kept], gk_a[kept], gj_a[kept], strict=True):
            lo = graph.window[b][0]
            sol.placement[b][uses[b][j] + 1 - lo:uses[b][j + 1] - lo] = k
        return sol

    def encode(sol: PinningSolution) -> np.ndarray:
        """The solution with every gap not kept whole in one scratchpad dropped (never costlier)."""
        v = np.zeros(model.n_cols)
        at = np.array([sol.at(graph, int(b), int(m)) for b, m in zip(xb_a, xm_a, strict=True)], dtype=np.int64)
        v[x] = (at == xk_a).astype(float)
        if (np.bincount(use_row, weights=v[x], minlength=n_use_rows) != 1).any():
            raise ValueError("the solution does not place every buffer at each of its uses in an allowed scratchpad")
        for c, b, k, j in zip(g, gb_a, gk_a, gj_a, strict=True):
            lo = graph.window[b][0]
            seg = sol.placement[b][uses[b][j] - lo:uses[b][j + 1] - lo + 1]
            v[c] = float(bool((seg == k).all()))
        if enc_store is not None:
            z, seg_of_gap = enc_store
            kept = np.bincount(gap_row, weights=v[g], minlength=seg_of_gap.size)
            need = np.zeros(z.size)
            has = seg_of_gap >= 0
            np.maximum.at(need, seg_of_gap[has], 1.0 - kept[has])
            v[z] = np.maximum(need, model.col_lower[z])
        return v

    form = MilpFormulation(model=model, decode=decode, encode=encode)
    return GapModel(form, uses, x, xb_a, xk_a, xj_a, xm_a, g, gb_a, gk_a, gj_a, occ_k, occ_m, occ_col, occ_size)
