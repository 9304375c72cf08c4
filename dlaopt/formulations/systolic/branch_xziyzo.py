"""Schedule XZiYZo (seed 003 §2.4–2.5): X innermost, then the input channels Zi, then Y, then the filter sets Zo.

One output row of ``F_uv`` filter planes is finished over all channel groups before the next row starts, so the psum
SRAM only ever holds one row: ``G_eff`` (the shared row stage,
:func:`~dlaopt.formulations.systolic.stages.row_stage`) limits the columns, never the rows. A *column strip* is all
``E`` rows of ``G_eff`` columns (or of the leftover columns). Symbols: ``n_C = ⌈C/C_uv⌉``, ``ρ = C/C_uv``
(fractional), ``n_F = ⌈F/F_uv⌉``, ``φ = F/F_uv`` (fractional); ``T = G_eff·R`` the cycles of one row for one channel
group; ``W_eff`` the strip's input width, ``H = (E−1)·U + R`` its input height; ``B_f = R·S·C_uv·F_uv·b_f`` and
``B_i = R·W_eff·C_uv·b_i`` the filter and input bits of one channel group of one row; ``Q_f = R·S·C·F_uv·b_f`` the
filters of one filter set; ``cyc(bits)`` is :func:`~dlaopt.formulations.systolic.counts.dram_cycles`.

**Counts of one column strip**:

* compute cycles ``T·n_C·E·n_F``;
* filter SRAM ``R·S·C·F·E``; ifmap SRAM ``A_i·ρ·E·n_F`` (``A_i`` the row stage's reads); psum SRAM
  ``(2R·n_C − 1)·E·G_eff·F`` — the same per-row rules as XYZiZo, fractional over channels, rounded up over filter sets
  for the ifmap (a partial filter set still streams every input);
* filter DRAM ``D_f·φ`` with ``D_f`` the loads of one filter set: every row sweeps all ``F_uv·C`` filter planes of
  ``R·S`` elements; the filter SRAM keeps ``p = ⌊fSRAM/(R·S·b_f)⌋`` planes and later rows sweep the channels in
  reverse order, so each of the ``E−1`` later rows reloads only the planes that did not stay:
  ``D_f = R·S·C·F_uv + R·S·max(F_uv·C − p, 0)·(E−1)``;
* ifmap DRAM: with ``t = ⌊iSRAM/(W_eff·R·b_i)⌋`` single-channel ``R``-row input bands in the SRAM, one filter set
  loads ``D_1 = W_eff·H·C`` if ``t ≥ C`` (every input once), else ``W_eff·R·C`` for the first row and, for each later
  row, its ``U`` new rows of every channel plus the ``R−U`` overlap rows of the ``C − t`` channels that did not stay:
  ``D_1 = W_eff·R·C + (W_eff·U·C + W_eff·(R−U)·(C−t))·(E−1)``. The whole strip loads ``W_eff·H·C`` if it fits
  (``W_eff·H·C·b_i ≤ iSRAM``), else ``D_1 + (D_1 − W_eff·R·t)·(n_F − 1)`` (each later filter set finds ``t`` bands
  still in the SRAM);
* ofmap DRAM ``E·G_eff·F`` elements, written back in ``cyc(E·G_eff·F·b_o)`` cycles (not overlapped).

**Stall of one column strip.** From the row stage: ``σ_x`` the stall and ``s_x`` the slack of the first row of one
channel group (filters + ``R`` input rows). Over the channel groups of the first row every group repeats it:
``σ_XZ = ⌈σ_x·ρ⌉``, slack ``s_XZ = s_x·n_C``. If ``s_XZ > 0`` nothing stalls at all (the first row does not, and the
later rows load less). Otherwise each later row's channel group loads ``I`` input bits — only the ``U`` new rows,
``U·W_eff·C_uv·b_i``, if all channels' ``R``-row bands fit (``iSRAM ≥ W_eff·R·C·b_i``), else ``B_i`` — and:

* if the filter SRAM holds the filter set (``fSRAM ≥ Q_f``) no filters are reloaded: a later row stalls
  ``σ_rev = ⌈max(cyc(I) − T, 0)·ρ⌉`` and leaves slack ``max(T − cyc(I), 0)·n_C``; the strip's slack is
  ``s_XZY = (E−1)·max(T − cyc(I), 0)·n_C``;
* otherwise ``m = ⌊fSRAM/B_f⌋`` channel groups keep their filters (reverse order) and load only ``I``, the others
  ``I + B_f``: ``σ_rev = max(cyc(I) − T, 0)·m + ⌈max(cyc(I + B_f) − T, 0)·(ρ − m)⌉`` (no slack is credited);

one filter set stalls ``σ_XZY = σ_XZ + σ_rev·(E−1)``. Over the filter sets: if the filter SRAM has room beyond one set
(``fSRAM > Q_f``) and ``s_XZY > 0``, the next set's first filters, ``min(Q_f, fSRAM − Q_f)`` bits, are prefetched in
that slack, saving ``v = min(s_XZY, cyc(min(Q_f, fSRAM − Q_f)))`` cycles of each later set:
``σ_XZY + ⌈max(σ_XZY − v, 0)·(φ−1)⌉``; otherwise every set repeats the first, ``⌈σ_XZY·φ⌉``.

**Decomposition of the layer**: ``⌊G/G_eff⌋`` column strips of ``G_eff`` columns and one strip of the ``G mod G_eff``
leftover columns, evaluated on its own (zero when there are none).

The layer is infeasible where the row stage is (one filter set of a channel group or the ``R`` input rows do not fit,
or the psum SRAM holds no full column) or where not even one channel fits the PE rows (``C_uv = 0``, i.e. ``J < S``).

**Kept from the authors' model.** The later-row ifmap term charges ``U`` new rows and ``R − U`` overlap rows even
when ``U > R`` (1×1 convolutions with stride 2), where the overlap term is negative; the stall credits no slack to the
filter-set prefetch when the filter SRAM cannot hold a whole filter set; ceilings of fractional products are
evaluated exactly as in :mod:`~dlaopt.formulations.systolic.branch_xyzizo` (*Rounding*).
"""

from __future__ import annotations

import numpy as np

from dlaopt.formulations.systolic.branch_xyzizo import ceil_ratio, on_points
from dlaopt.formulations.systolic.counts import (
    Array,
    Block,
    ConvShape,
    Counts,
    HardwareArrays,
    dram_cycles,
    safe_div,
)
from dlaopt.formulations.systolic.stages import RowStage, row_stage

__all__ = ["layer_counts"]


def _filter_dram(row: RowStage, b: Block, hw: HardwareArrays) -> Array:
    """Filter elements loaded for the strip: ``D_f·φ``."""
    planes_kept = np.floor(hw.f_sram / (b.R * b.S * hw.b_f))
    reloaded = np.maximum(row.F_uv * b.C - planes_kept, 0.0)
    per_set = b.R * b.S * b.C * row.F_uv + b.R * b.S * reloaded * (b.E - 1)
    return per_set * b.F / row.F_uv


def _ifmap_dram(row: RowStage, b: Block, hw: HardwareArrays) -> Array:
    """Ifmap elements loaded for the strip (first filter set ``D_1``, later sets ``D_1 − W_eff·R·t``)."""
    R, C, U, W = b.R, b.C, b.U, row.W_eff
    volume = W * b.H * C
    bands = np.floor(safe_div(hw.i_sram, W * R * hw.b_i))
    first_set = np.where(bands >= C, volume, W * R * C + (W * U * C + W * (R - U) * (C - bands)) * (b.E - 1))
    n_F = np.ceil(b.F / row.F_uv)
    return np.where(volume * hw.b_i <= hw.i_sram, volume, first_set + (first_set - W * R * bands) * (n_F - 1))


def _stall(row: RowStage, b: Block, hw: HardwareArrays) -> Array:
    """DRAM stall cycles of the strip (module docstring, *Stall of one column strip*)."""
    C, F, C_uv, F_uv, T, E = b.C, b.F, row.C_uv, row.F_uv, row.cycles, b.E
    n_C = np.ceil(safe_div(C, C_uv))
    sigma_xz = ceil_ratio(row.stall, C, C_uv)
    slack_xz = row.slack * n_C
    # Later rows: the input bits one channel group loads, with or without the channel group's filters.
    bands_fit = hw.i_sram >= row.W_eff * b.R * C * hw.b_i
    later_i = np.where(bands_fit, b.U * row.W_eff * C_uv * hw.b_i, row.ifmap_bits)
    load_i = dram_cycles(later_i, hw)
    load_if = dram_cycles(later_i + row.filter_bits, hw)
    set_bits = b.R * b.S * C * F_uv * hw.b_f
    set_fits = hw.f_sram >= set_bits
    kept = np.floor(safe_div(hw.f_sram, row.filter_bits))
    sigma_rev = np.where(set_fits,
                         ceil_ratio(np.maximum(load_i - T, 0.0), C, C_uv),
                         np.maximum(load_i - T, 0.0) * kept
                         + ceil_ratio(np.maximum(load_if - T, 0.0), C - kept * C_uv, C_uv))
    slack_xzy = np.where(set_fits, slack_xz + np.maximum(T - load_i, 0.0) * n_C * (E - 1), 0.0)
    sigma_xzy = sigma_xz + sigma_rev * (E - 1)
    # Filter sets: prefetch of the next set's filters into the room beyond one set, hidden in the strip's slack.
    prefetch = (hw.f_sram > set_bits) & (slack_xzy > 0)
    saved = np.minimum(slack_xzy, dram_cycles(np.minimum(set_bits, np.maximum(hw.f_sram - set_bits, 0.0)), hw))
    with_prefetch = sigma_xzy + ceil_ratio(np.maximum(sigma_xzy - saved, 0.0), F - F_uv, F_uv)
    no_slack = np.where(prefetch, with_prefetch, ceil_ratio(sigma_xzy, F, F_uv))
    return np.where(slack_xz > 0, 0.0, no_slack)


def _strip_counts(row: RowStage, b: Block, hw: HardwareArrays) -> Counts:
    """Counts of one column strip of ``b.E`` rows and ``row.G_eff`` columns (``row`` is its row stage)."""
    R, S, C, F, E = b.R, b.S, b.C, b.F, b.E
    n_C = np.ceil(safe_div(C, row.C_uv))
    n_F = np.ceil(F / row.F_uv)
    outputs = E * row.G_eff
    return Counts(
        compute=row.cycles * n_C * E * n_F,
        stall=_stall(row, b, hw),
        writeback=dram_cycles(outputs * F * hw.b_o, hw),
        sram_f=R * S * C * F * E * np.ones_like(outputs),
        sram_i=safe_div(row.sram_i * C, row.C_uv) * E * n_F,
        sram_p=(2 * R * n_C - 1) * outputs * F,
        dram_f=_filter_dram(row, b, hw),
        dram_i=_ifmap_dram(row, b, hw),
        dram_o=outputs * F,
        feasible=row.feasible & (row.C_uv >= 1),
    )


def _new_strip(b: Block, hw: HardwareArrays) -> Counts:
    """One column strip of ``b.G`` columns (a width that fits one row)."""
    return _strip_counts(row_stage(b, hw), b, hw)


def layer_counts(layer: ConvShape, hw: HardwareArrays) -> Counts:
    """Whole-layer counts of schedule XZiYZo on every design point of ``hw`` (fields broadcast over ``hw``)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        whole = Block.of(layer)
        # The row stage of the whole layer is that of a strip of G_eff columns (it sees G only through G_eff).
        row = row_stage(whole, hw)
        G_eff = np.maximum(row.G_eff, 1.0)  # the infeasible G_eff = 0 is masked below
        n_x = np.floor(whole.G / G_eff)
        total = _strip_counts(row, whole, hw).scaled(n_x)
        cols_left = whole.G - n_x * G_eff
        total = total.plus(on_points(cols_left > 0, whole.with_size(G=cols_left), hw, _new_strip))
        feasible = total.feasible & row.feasible & (row.C_uv >= 1)
    shape = np.broadcast(hw.J, hw.K, hw.f_sram, hw.i_sram, hw.p_sram).shape
    fields = {name: np.broadcast_to(value, shape).copy() for name, value in total._numeric().items()}
    return Counts(**fields, feasible=np.broadcast_to(feasible, shape).copy())
