"""Schedule **XZoYZi** (seed 003 §2.4–2.6): a row along X, then the filter groups of that row (Z_o), then the rows of
the ofmap (Y), then the channel groups (Z_i) outermost. The row's input stays in the ifmap SRAM while the filter groups
pass over it; the psum SRAM holds an ``E_eff × G_eff × F_eff`` block until every channel group has been added.

Notation as in :mod:`~dlaopt.formulations.systolic.branch_xyzozi` (``⌈·⌉_D`` = DRAM cycles of a number of bits).

**One block** (:func:`block`) of a sub-layer ``E × G × F``:

* Depth-1 is the shared row stage (:func:`~dlaopt.formulations.systolic.stages.row_stage`): ``G_eff`` output columns,
  ``W_eff`` input columns, ``G_eff·R`` cycles, ``R·S·C_uv·F_uv`` filter reads, ``I_row`` ifmap reads,
  ``(2R−1)·G_eff·F_uv`` psum accesses; the row's first load (filter set + ``R`` input rows) stalls ``σ_x`` or leaves
  slack ``τ_x``.
* Depth-2, Z_o: the psum SRAM holds the row for all filters if ``G_eff·F·b_p ≤ pSRAM`` (``F_eff = F``), else
  ``F_eff = F_uv·⌊⌊pSRAM / (G_eff·b_p)⌋ / F_uv⌋`` (whole filter groups). ``k_F = F_eff / F_uv`` groups, ``⌈k_F⌉``
  passes. Each later group of the row loads only its filter set, ``λ_f = ⌈R·S·C_uv·F_uv·b_f⌉_D`` cycles, under the
  previous group's ``G_eff·R`` compute cycles: ``φ = max(0, λ_f − G_eff·R)``; the stage adds stall
  ``σ_F = ⌈φ·(k_F − 1)⌉`` and, where ``σ_F = 0``, slack ``τ_F = (G_eff·R − λ_f)·⌈k_F − 1⌉``.
  ``σ_xF = σ_x + σ_F``, ``τ_xF = τ_x + τ_F``.
* Depth-3, Y: ``E_eff = min(E, ⌊pSRAM / (G_eff·F_eff·b_p)⌋)`` rows, ``H_eff = (E_eff−1)·U + R`` input rows.
* Depth-4, Z_i: ``k_C = C / C_uv`` channel groups, ``⌈k_C⌉`` passes.

Counts of the block (elements):

* compute ``G_eff·R·⌈k_F⌉·E_eff·⌈k_C⌉``;
* SRAM filter ``R·S·C_uv·F_uv·k_F·E_eff·k_C``; SRAM ifmap ``I_row·⌈k_F⌉·E_eff·k_C``;
  SRAM psum ``G_eff·E_eff·F_uv·k_F·((2R−1) + 2R·⌈k_C − 1⌉)``;
* DRAM filter ``k_C·V_f``. A row needs the ``C_uv·F_eff`` filter planes (``R×S`` each) of its groups. If the filter
  SRAM holds them (``⌊fSRAM / (R·S·b_f)⌋ ≥ C_uv·F_eff``) they are loaded once, ``V_f = R·S·C_uv·F_eff``; otherwise
  later rows run the groups in *reverse order* and reload only the planes that fell out:
  ``V_f = R·S·C_uv·F_eff + (E_eff − 1)·R·S·(C_uv·F_eff − ⌊fSRAM / (R·S·b_f)⌋)``;
* DRAM ifmap ``H_eff·W_eff·C`` (each input element of the block once: new rows arrive as Y advances);
* DRAM ofmap ``E_eff·G_eff·F_eff``, written back in ``⌈E_eff·G_eff·F_eff·b_o⌉_D`` cycles.

Stall of the block. A later row first loads ``U`` new input rows: ``ψ = max(0, ⌈U·W_eff·C_uv·b_i⌉_D − G_eff·R)``.
The Y stage stalls

* ``τ_xF = 0`` (no slack): ``σ_xF + (E_eff − 1)·(ψ + ρ)`` — each later row stalls on its new input rows and, unless
  the filter SRAM holds all ``R·S·C_uv·F_eff`` filters, on the filter sets that reverse order cannot keep:
  ``ρ = ⌈φ·(k_F − ⌊fSRAM / (R·S·C_uv·F_uv·b_f)⌋)⌉`` (``ρ = 0`` when they fit);
* ``τ_xF > 0`` and ``σ_xF = 0``: no stall;
* ``τ_xF > 0`` and ``σ_xF > 0``: ``σ_xF + (E_eff − 1)·ψ'`` with ``ψ' = max(0, ψ − τ_xF)`` when the ifmap SRAM can
  hold the next row's ``U`` input rows besides the current ``R`` (``iSRAM ≥ (R + U)·W_eff·C_uv·b_i``: they are
  prefetched in the slack), else ``ψ' = ψ``;

and the block stalls ``⌈σ_xFy·k_C⌉``.

**The layer**: the same block decomposition as XYZoZi (:func:`~dlaopt.formulations.systolic.branch_xyzozi.psum_tiling`):
``F_eff`` of the whole-layer block fixes ``⌊F / F_eff⌋`` full filter groups and one leftover group; each group is
covered by ``G_eff``-wide column blocks (when ``G_eff < G``), a strip of the remaining columns cut into ``E_eff``-row
blocks, and a last block of the remaining rows. Here ``F_eff`` is fixed before ``E_eff`` (Z_o is inside Y), so a
layer whose rows do not fit gives ``E_eff`` for ``F_eff`` filters; the reference model's wrapper again only ever
evaluates these blocks.

Approximations of the reference model kept on purpose, besides those listed for XYZoZi: the filter-set stall that
reverse order cannot avoid is charged per whole filter set (``k_F − ⌊fSRAM / filter set⌋``) even where part of a set
is still in the SRAM; in the no-slack case the later rows' ifmap stall ``ψ`` and filter stall ``ρ`` are simply added.

Feasibility as for XYZoZi (the row stage's minimum SRAM sizes and ``C_uv ≥ 1``). Infeasible entries have all counts 0.
"""

from __future__ import annotations

import numpy as np

from dlaopt.formulations.systolic.branch_xyzozi import (
    PsumBlock,
    channel_groups,
    ofmap_counts,
    psum_counts,
    psum_tiling,
    sub_block,
)
from dlaopt.formulations.systolic.counts import Array, ConvShape, Counts, HardwareArrays, dram_cycles
from dlaopt.formulations.systolic.stages import row_stage


def row_filter_groups(G_eff: Array, F: Array, F_uv: Array, hw: HardwareArrays) -> Array:
    """Depth-2: ``F_eff``, the filters whose partial sums for one ``G_eff``-wide row the psum SRAM holds."""
    whole_row = G_eff * F * hw.b_p <= hw.p_sram
    return np.where(whole_row, F, np.floor(np.floor(hw.p_sram / (G_eff * hw.b_p)) / F_uv) * F_uv)


def block(layer: ConvShape, hw: HardwareArrays, E: Array, G: Array, F: Array) -> PsumBlock:
    """One XZoYZi block of the sub-layer ``E × G × F`` (see the module docstring)."""
    R, S, C, U = layer.R, layer.S, layer.C, layer.U
    row = row_stage(sub_block(layer, E, G, F), hw)
    C_uv, F_uv, G_eff, W_eff = row.C_uv, row.F_uv, row.G_eff, row.W_eff

    # Depth-2 (Z_o): filter groups of the row, each later one loading its filter set under the previous compute
    F_eff = row_filter_groups(G_eff, F, F_uv, hw)
    k_F = F_eff / F_uv
    filter_load = dram_cycles(row.filter_bits, hw)
    phi = np.maximum(filter_load - row.cycles, 0.0)
    stall_F = np.ceil(phi * (k_F - 1))
    slack_F = np.where(stall_F == 0, (row.cycles - filter_load) * np.ceil(k_F - 1), 0.0)
    sigma = row.stall + stall_F
    tau = row.slack + slack_F

    # Depth-3 (Y): the rows whose psums for F_eff filters fit
    rows_fit = np.floor(hw.p_sram / (G_eff * F_eff * hw.b_p))
    E_eff = np.where(rows_fit >= E, E, rows_fit)
    H_eff = (E_eff - 1) * U + R
    k_C = channel_groups(C, C_uv)

    # DRAM filter: once if the row's C_uv·F_eff planes fit, else reverse-order reloads of the planes that fell out
    planes = C_uv * F_eff
    planes_kept = np.floor(hw.f_sram / (R * S * hw.b_f))
    row_filters = R * S * C_uv * F_eff
    dram_f = np.where(planes_kept >= planes, row_filters,
                      row_filters + R * S * (planes - planes_kept) * (E_eff - 1)) * k_C

    # stall of the later rows (Y stage)
    new_rows_bits = U * W_eff * C_uv * hw.b_i
    psi = np.maximum(dram_cycles(new_rows_bits, hw) - row.cycles, 0.0)
    sets_kept = np.floor(hw.f_sram / row.filter_bits)
    all_filters_fit = hw.f_sram >= R * S * C_uv * F_eff * hw.b_f
    rho = np.where(all_filters_fit, 0.0, np.ceil(phi * (k_F - sets_kept)))
    prefetch = hw.i_sram >= row.ifmap_bits + new_rows_bits
    psi_later = np.where(prefetch, np.maximum(psi - tau, 0.0), psi)
    stall_y = np.where(
        tau <= 0,
        sigma + (psi + rho) * (E_eff - 1),
        np.where(sigma <= 0, 0.0, sigma + psi_later * (E_eff - 1)),
    )

    dram_o, writeback = ofmap_counts(G_eff, E_eff, F_eff, hw)
    counts = Counts(
        compute=row.cycles * np.ceil(k_F) * E_eff * np.ceil(k_C),
        stall=np.ceil(stall_y * k_C),
        writeback=writeback,
        sram_f=row.sram_f * k_F * E_eff * k_C,
        sram_i=row.sram_i * np.ceil(k_F) * E_eff * k_C,
        sram_p=psum_counts(G_eff, E_eff, F_uv, k_F, k_C, R),
        dram_f=dram_f,
        dram_i=H_eff * W_eff * C,
        dram_o=dram_o,
        feasible=row.feasible & (C_uv >= 1),
    )
    return PsumBlock(counts, G_eff, E_eff, F_eff)


def layer_counts(layer: ConvShape, hw: HardwareArrays) -> Counts:
    """Whole-layer counts of schedule XZoYZi on every design point of ``hw``."""
    return psum_tiling(layer, hw, block)
