"""Schedule XYZiZo (seed 003, Fig. 5 and Fig. 8; Eqs. 10–11): X innermost, then Y, then the input channels Zi, then
the filter sets Zo outermost.

A *block* is ``E_eff × G_eff`` outputs that the psum SRAM holds at once (Depth-1 and Depth-2 are the shared
:func:`~dlaopt.formulations.systolic.stages.block_stage`). For one filter set of ``F_uv`` filters the block is
computed for every channel group of ``C_uv`` channels (Depth-3), which completes its outputs; then the next filter set
starts over (Depth-4). Symbols: ``n_C = ⌈C/C_uv⌉``, ``ρ = C/C_uv`` (fractional), ``n_F = ⌈F/F_uv⌉``, ``φ = F/F_uv``
(fractional); ``T = G_eff·R`` the cycles of one output row; ``W_eff, H_eff`` the input extent of the block;
``B_f = R·S·C_uv·F_uv·b_f`` the filter bits of one channel group; ``V_i = W_eff·H_eff·C`` the block's input elements.
``cyc(bits)`` is :func:`~dlaopt.formulations.systolic.counts.dram_cycles`.

**Counts of one block** (the model rounds the channel and filter loops up where a partial group still costs a full
pass, and keeps them fractional where a partial group costs proportionally less):

* compute cycles ``T·E_eff·n_C·n_F``;
* filter SRAM ``R·S·C·F·E_eff`` (every filter element once per output row: ``R·S·C_uv·F_uv`` per row × ``ρ·φ``);
* ifmap SRAM ``A_i·E_eff·ρ·n_F`` with ``A_i`` the row's reads (a partial filter set still streams every input);
* psum SRAM ``(2R·n_C − 1)·E_eff·G_eff·F`` (``2R−1`` accesses per output for the first channel group, ``2R`` for each
  later one);
* filter DRAM ``R·S·C·F`` (all filters once per block: X and Y are inside, so filters are reused across the block);
* ifmap DRAM ``V_i`` when ``V_i·b_i ≤ iSRAM`` (loaded once for all filter sets); otherwise the first filter set loads
  ``V_i`` and every later one traverses the channels in reverse order, so the whole input rows still in the SRAM,
  ``W_eff·⌊iSRAM/(W_eff·b_i)⌋`` elements, are not fetched again: ``V_i + (V_i − W_eff·⌊iSRAM/(W_eff·b_i)⌋)·(n_F−1)``;
* ofmap DRAM ``E_eff·G_eff·F`` elements, written back in ``cyc(E_eff·G_eff·F·b_o)`` cycles (not overlapped).

**Stall of one block.** From the block stage: ``σ`` the stall and ``s`` the slack of one channel group (its first row
loads filters and ``R`` input rows, every later row ``U`` new rows).

* Depth-3 (the ``ρ`` channel groups of one filter set): a group's loads can hide in the previous group's slack only if
  the filter SRAM holds the filters of two channel groups (``fSRAM ≥ 2·B_f``, the next group's filters are
  prefetched) and there is slack (``s > 0``); then the first group stalls ``σ`` and each later one ``max(σ − s, 0)``:
  ``σ_Z = σ + ⌈max(σ − s, 0)·(ρ−1)⌉``; otherwise every group stalls alike, ``σ_Z = ⌈σ·ρ⌉``.
* Depth-4 (the ``φ`` filter sets): with slack (``s > 0``) every set repeats the first, ``⌈σ_Z·φ⌉``. Without slack
  (``s ≤ 0``), a later set finds part of the input still in the SRAM (reverse channel order) and for those channel
  groups only the filter load can stall, ``σ_f = max(cyc(B_f) − T, 0)`` (once per group: the later rows load nothing).
  If the block's whole input fits (``V_i·b_i ≤ iSRAM``) that holds for all groups, ``σ_rev = ⌈σ_f·ρ⌉``; otherwise
  only for the ``k = ⌊iSRAM/(W_eff·H_eff·C_uv·b_i)⌋`` groups that fit, the rest stall ``σ``:
  ``σ_rev = σ_f·k + ⌈σ·(ρ − k)⌉``. The block stalls ``σ_Z + ⌈σ_rev·(φ−1)⌉``.

**Block decomposition of the layer.** The row stage of the whole layer gives ``G_eff`` (the columns the psum SRAM
holds in one row). The layer is ``n_x = ⌊G/G_eff⌋`` column strips of width ``G_eff`` and one leftover strip of
``G mod G_eff`` columns. A strip of width ``w`` (which fits one row) holds ``E_w = min(E, ⌊pSRAM/(w·F_uv·b_p)⌋)``
rows per block and is ``⌊E/E_w⌋`` blocks of ``E_w × w`` plus one leftover block of ``(E mod E_w) × w``; every block,
leftovers included, is evaluated on its own with the counts above (leftover blocks of zero size count zero). When
``G_eff < G`` a strip of width ``G_eff`` holds one row per block (``E_w = 1``).

The layer is infeasible where the row stage is (one filter set or the ``R`` input rows of a row do not fit, or the
psum SRAM holds no full column) or where not even one channel fits the PE rows (``C_uv = 0``, i.e. ``J < S``).

**Rounding.** Every ``⌈x·ρ⌉``-type product is evaluated exactly as ``⌈x·C/C_uv⌉`` (one division). The authors' model
multiplies by the floating-point ratio, so where ``x·C/C_uv`` is an integer it sometimes rounds up one cycle more
(e.g. ``225·(51.2 − 22)``); stalls can differ from it by those few cycles, all other counts are identical.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from dlaopt.formulations.systolic.counts import (
    Array,
    Block,
    ConvShape,
    Counts,
    HardwareArrays,
    dram_cycles,
    safe_div,
)
from dlaopt.formulations.systolic.stages import BlockStage, block_stage

__all__ = ["layer_counts"]


def ceil_ratio(x: Array, num: Any, den: Any) -> Array:
    """``⌈x·num/den⌉``, evaluated as one division so that an integer result stays exact (0 where ``den`` is 0)."""
    return np.ceil(safe_div(x * num, den))


def on_points(present: Array, b: Block, hw: HardwareArrays,
              evaluate: Callable[[Block, HardwareArrays], Counts]) -> Counts:
    """``evaluate(b, hw)`` where ``present`` and exactly zero (and feasible) elsewhere. Only the present design points
    are evaluated: leftover blocks are absent on much of the grid, and a block of zero size must count nothing."""
    shape = np.broadcast(hw.J, hw.K, hw.f_sram, hw.i_sram, hw.p_sram, b.E, b.G, present).shape
    mask = np.broadcast_to(present, shape)
    if mask.all():
        return evaluate(b, hw)
    if not mask.any():
        return Counts.zeros(shape)

    def pick(a: Array) -> Array:
        return np.broadcast_to(a, shape)[mask]

    sub = evaluate(b.with_size(E=pick(b.E), G=pick(b.G)),
                   replace(hw, J=pick(hw.J), K=pick(hw.K), f_sram=pick(hw.f_sram), i_sram=pick(hw.i_sram),
                           p_sram=pick(hw.p_sram)))
    out: dict[str, Array] = {}
    for name, value in sub._numeric().items():
        out[name] = np.zeros(shape)
        out[name][mask] = value
    feasible = np.ones(shape, dtype=bool)
    feasible[mask] = sub.feasible
    return Counts(**out, feasible=feasible)


def _block_stall(st: BlockStage, b: Block, hw: HardwareArrays, ifmap_fits: Array) -> Array:
    """The stall of one block over its channel groups and filter sets (module docstring, *Stall of one block*)."""
    row = st.row
    sigma, slack = st.stall, st.slack
    C, F, C_uv, F_uv = b.C, b.F, row.C_uv, row.F_uv
    # Depth-3: prefetch of the next channel group's filters into a second filter-set slot, hidden in the slack.
    prefetch = (slack > 0) & (hw.f_sram >= 2 * row.filter_bits)
    sigma_z = np.where(prefetch,
                       sigma + ceil_ratio(np.maximum(sigma - slack, 0.0), C - C_uv, C_uv),
                       ceil_ratio(sigma, C, C_uv))
    # Depth-4 without slack: later filter sets reuse the channel groups still in the ifmap SRAM.
    sigma_f = np.maximum(dram_cycles(row.filter_bits, hw) - row.cycles, 0.0)
    k = np.floor(safe_div(hw.i_sram, st.H_eff * row.W_eff * C_uv * hw.b_i))
    sigma_rev = np.where(ifmap_fits,
                         ceil_ratio(sigma_f, C, C_uv),
                         sigma_f * k + ceil_ratio(sigma, C - k * C_uv, C_uv))
    return np.where(slack > 0,
                    ceil_ratio(sigma_z, F, F_uv),
                    sigma_z + ceil_ratio(sigma_rev, F - F_uv, F_uv))


def _block_counts(st: BlockStage, b: Block, hw: HardwareArrays) -> Counts:
    """Counts of one block of ``st.E_eff × st.row.G_eff`` outputs and all ``F`` filters."""
    row = st.row
    R, S, C, F = b.R, b.S, b.C, b.F
    n_C = np.ceil(safe_div(C, row.C_uv))
    n_F = np.ceil(F / row.F_uv)
    outputs = st.E_eff * row.G_eff
    v_i = row.W_eff * st.H_eff * C
    ifmap_fits = v_i * hw.b_i <= hw.i_sram
    rows_kept = np.floor(safe_div(hw.i_sram, row.W_eff * hw.b_i))
    dram_i = np.where(ifmap_fits, v_i, v_i + (v_i - row.W_eff * rows_kept) * (n_F - 1))
    return Counts(
        compute=st.cycles * n_C * n_F,
        stall=_block_stall(st, b, hw, ifmap_fits),
        writeback=dram_cycles(outputs * F * hw.b_o, hw),
        sram_f=R * S * C * F * st.E_eff,
        sram_i=safe_div(st.sram_i * C, row.C_uv) * n_F,
        sram_p=(2 * R * n_C - 1) * outputs * F,
        dram_f=np.full_like(outputs, float(R * S * C * F)),
        dram_i=dram_i,
        dram_o=outputs * F,
        feasible=row.feasible & (row.C_uv >= 1),
    )


def _one_block(b: Block, hw: HardwareArrays) -> Counts:
    """One block of ``b.E × b.G`` outputs, a size the psum SRAM holds."""
    return _block_counts(block_stage(b, hw), b, hw)


def _strip(st: BlockStage, b: Block, hw: HardwareArrays) -> Counts:
    """All ``b.E`` rows of a column strip whose block stage is ``st`` (width ``st.row.G_eff``, holding
    ``E_w = st.E_eff`` rows per block): ``⌊E/E_w⌋`` full blocks and one leftover block of ``E mod E_w`` rows."""
    E_w = np.maximum(st.E_eff, 1.0)  # ≥ 1 wherever feasible
    full = np.floor(b.E / E_w)
    blocks = _block_counts(st, b, hw).scaled(full)
    rows_left = b.E - full * E_w
    leftover = on_points((rows_left > 0) & (st.row.G_eff > 0), b.with_size(E=rows_left, G=st.row.G_eff), hw,
                         _one_block)
    return blocks.plus(leftover)


def _new_strip(b: Block, hw: HardwareArrays) -> Counts:
    """All ``b.E`` rows of a column strip of ``b.G`` columns (a width that fits one row)."""
    return _strip(block_stage(b, hw), b, hw)


def layer_counts(layer: ConvShape, hw: HardwareArrays) -> Counts:
    """Whole-layer counts of schedule XYZiZo on every design point of ``hw`` (fields broadcast over ``hw``)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        whole = Block.of(layer)
        # The block stage of the whole layer is that of a strip of G_eff columns (it sees G only through G_eff).
        st = block_stage(whole, hw)
        G_eff = np.maximum(st.row.G_eff, 1.0)  # the infeasible G_eff = 0 is masked below
        n_x = np.floor(whole.G / G_eff)
        total = _strip(st, whole, hw).scaled(n_x)
        cols_left = whole.G - n_x * G_eff
        total = total.plus(on_points(cols_left > 0, whole.with_size(G=cols_left), hw, _new_strip))
        feasible = total.feasible & st.row.feasible & (st.row.C_uv >= 1)
    shape = np.broadcast(hw.J, hw.K, hw.f_sram, hw.i_sram, hw.p_sram).shape
    fields = {name: np.broadcast_to(value, shape).copy() for name, value in total._numeric().items()}
    return Counts(**fields, feasible=np.broadcast_to(feasible, shape).copy())
