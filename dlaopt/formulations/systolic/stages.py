"""The innermost stages shared by the four X-first schedules (seed 003 §2.2, Eqs. 2–6, and Fig. 8).

**Depth-1, X** (one output row of ``F_uv`` filter planes from ``C_uv`` channels, filters stationary — the paper's
``X_a``). The psum SRAM must hold the row's partial sums, ``G·F_uv·b_p`` bits; if it cannot, only
``G_eff = ⌊pSRAM / (F_uv·b_p)⌋`` columns are computed at a time (Eq. 10) and the input row is
``W_eff = (G_eff−1)·U + S`` wide. The schedule needs ``R·S·C_uv·F_uv·b_f ≤ fSRAM`` (one filter set) and
``W_eff·R·C_uv·b_i ≤ iSRAM`` (the R input rows of the row), and ``J ≥ S``, else it cannot run. Per output row:

* cycles ``G_eff·R`` (one psum per column per cycle, for each of the R filter rows);
* filter SRAM reads ``R·S·C_uv·F_uv`` (each filter element once: it stays in the PEs while the row slides);
* ifmap SRAM reads ``R·W_eff·C_uv`` when ``U = 1`` and ``R, S > 1`` (the window slides: each input element of the R
  rows is read once), else ``S·C_uv`` per cycle, ``G_eff·R·S·C_uv``;
* psum SRAM accesses ``(2R−1)·G_eff·F_uv`` (the first filter row only writes, the other ``R−1`` read and write);
* DRAM: the filter set and the ``R`` input rows, ``R·S·C_uv·F_uv`` and ``R·W_eff·C_uv`` elements; loading them takes
  :func:`~dlaopt.formulations.systolic.counts.dram_cycles` of their bits, and the array stalls by what exceeds the
  row's compute cycles; what is left over is *slack* (cycles in which later loads can hide).

**Depth-2, XY** (the rows of the block). The psum SRAM holds ``⌊pSRAM / (G_eff·F_uv·b_p)⌋`` rows: ``E_eff`` is that,
or ``E`` when all rows fit. The block repeats the row ``E_eff`` times: SRAM reads and cycles scale by ``E_eff``; the
filters stay (no new filter DRAM traffic); DRAM brings the block's ``H_eff·W_eff·C_uv`` input elements
(``H_eff = (E_eff−1)·U + R``); every row after the first loads ``U`` new input rows, ``U·W_eff·C_uv·b_i`` bits,
overlapped with the row's compute — the excess is stall, the rest slack.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlaopt.formulations.systolic.counts import Array, Block, HardwareArrays, dram_cycles, safe_div, unit_volume


@dataclass(frozen=True)
class RowStage:
    """Depth-1 (X): one output row of a block (all fields arrays over the design points)."""

    C_uv: Array
    F_uv: Array
    feasible: Array
    G_eff: Array  # output columns computed at a time
    W_eff: Array  # input columns they read
    psum: Array  # partial sums the row produces, G_eff·F_uv
    cycles: Array  # G_eff·R
    sram_f: Array
    sram_i: Array
    sram_p: Array
    dram_f: Array  # elements
    dram_i: Array
    filter_bits: Array  # the filter set R·S·C_uv·F_uv·b_f
    ifmap_bits: Array  # the R input rows R·W_eff·C_uv·b_i
    load: Array  # cycles to load filter set + input rows
    stall: Array
    slack: Array


@dataclass(frozen=True)
class BlockStage:
    """Depth-2 (XY): the ``E_eff`` output rows of a block that the psum SRAM holds."""

    row: RowStage
    E_eff: Array
    H_eff: Array
    cycles: Array
    sram_f: Array
    sram_i: Array
    sram_p: Array
    dram_f: Array
    dram_i: Array
    row_load: Array  # cycles to load the U new input rows of each later row
    stall: Array  # stall of the whole block (first row + later rows)
    slack: Array


def row_stage(block: Block, hw: HardwareArrays) -> RowStage:
    C_uv, F_uv = unit_volume(block, hw)
    R, S, U = block.R, block.S, block.U
    fits_row = block.G * F_uv * hw.b_p <= hw.p_sram
    G_eff = np.where(fits_row, block.G, np.floor(hw.p_sram / (F_uv * hw.b_p)))
    W_eff = (G_eff - 1) * U + S
    feasible = (R * S * C_uv * F_uv * hw.b_f <= hw.f_sram) & (W_eff * R * C_uv * hw.b_i <= hw.i_sram) & (G_eff >= 1)
    feasible &= C_uv >= 1  # J >= S: at least one channel's window fits a PE column
    cycles = G_eff * R
    sliding = U == 1 and R > 1 and S > 1
    sram_i = R * W_eff * C_uv if sliding else cycles * S * C_uv
    filter_bits = R * S * C_uv * F_uv * hw.b_f
    ifmap_bits = R * W_eff * C_uv * hw.b_i
    load = dram_cycles(filter_bits + ifmap_bits, hw)
    stall = np.maximum(load - cycles, 0.0)
    slack = np.where(stall == 0, cycles - load, 0.0)
    return RowStage(C_uv=C_uv, F_uv=F_uv, feasible=feasible, G_eff=G_eff, W_eff=W_eff, psum=G_eff * F_uv,
                    cycles=cycles, sram_f=R * S * C_uv * F_uv, sram_i=sram_i, sram_p=(2 * R - 1) * G_eff * F_uv,
                    dram_f=R * S * C_uv * F_uv, dram_i=R * W_eff * C_uv, filter_bits=filter_bits,
                    ifmap_bits=ifmap_bits, load=load, stall=stall, slack=slack)


def block_stage(block: Block, hw: HardwareArrays) -> BlockStage:
    row = row_stage(block, hw)
    rows_fit = np.floor(safe_div(hw.p_sram, row.G_eff * row.F_uv * hw.b_p))
    E_eff = np.where(rows_fit >= block.E, block.E, rows_fit)
    H_eff = (E_eff - 1) * block.U + block.R
    row_load = dram_cycles(block.U * row.W_eff * row.C_uv * hw.b_i, hw)
    row_stall = np.maximum(row_load - row.cycles, 0.0)
    later_stall = row_stall * (E_eff - 1)
    later_slack = np.where(later_stall == 0, (row.cycles - row_load) * (E_eff - 1), 0.0)
    return BlockStage(row=row, E_eff=E_eff, H_eff=H_eff, cycles=row.cycles * E_eff, sram_f=row.sram_f * E_eff,
                      sram_i=row.sram_i * E_eff, sram_p=row.sram_p * E_eff, dram_f=row.dram_f,
                      dram_i=H_eff * row.W_eff * row.C_uv, row_load=row_load, stall=row.stall + later_stall,
                      slack=row.slack + later_slack)
