"""Schedule ``Z_i X Y Z_o`` (seed 003 §2.2 "candidate subpath Z_i", §2.4, Table 3 footnote 1): output stationary.

Loop nest, innermost first: **Z_i** (all input channels of one output position), **X** (the output columns of a
row), **Y** (the output rows), **Z_o** (the groups of ``F_uv`` filters). Notation as in
:mod:`~dlaopt.formulations.systolic.counts`; in addition

* ``N_C = ⌈C/C_uv⌉`` channel passes and ``N_F = ⌈F/F_uv⌉`` filter passes; ``φ = F/F_uv`` (fractional, ``≥ 1``);
* ``T = R·N_C`` cycles per *output pixel*: one output position of ``F_uv`` filters, one filter row of ``S``
  columns for ``C_uv`` channels per cycle, ``R`` rows, ``N_C`` channel passes;
* ``V_f = R·S·C·F_uv`` the filter elements of one group, ``V_w = R·S·C`` one input window over all channels;
* ``W = (G−1)·U + S``, ``H = (E−1)·U + R`` the input extent (never a separately padded size).

**No blocking.** The output of a pixel is complete after the ``Z_i`` loop, so the psum SRAM only ever holds the
``F_uv`` sums of one pixel: there is no ``G_eff``/``E_eff`` (``G_eff = G``, ``E_eff = E``) and no leftover blocks.

**Feasibility** (otherwise the branch cannot run): ``C_uv ≥ 1`` (i.e. ``J ≥ S``), ``R·S·C_uv·F_uv·b_f ≤ fSRAM``
(the filters of one channel pass), ``F_uv·b_p ≤ pSRAM`` and ``R·S·C_uv·b_i ≤ iSRAM``. The array-size
checks of the design sweep (``fSRAM ≥ J·K·b_f`` …) are not part of a branch.

**Compute cycles** ``T·G·E·N_F = G·R·E·⌈C/C_uv⌉·⌈F/F_uv⌉`` (Eq. 17 with the passes rounded up).

**SRAM accesses** (elements; Table 2 column ``Z_i`` times the loop multiplier Eq. 9, whose ``C/C_uv`` and
``F/F_uv`` are fractional except where the last pass still costs a full pass):

* filter ``R·S·C·F·E·G``: every cycle loads a new ``S·C_uv × F_uv`` filter matrix (the last, partial channel pass
  and filter pass load only what they use);
* ifmap ``R·S·C·E·G·N_F``: a new ``S·C_uv`` input vector every cycle, and a partial last filter pass still
  broadcasts full vectors;
* psum ``F·E·G``: one write per output, after the whole ``Z_i`` loop.

**Filter DRAM.** Let ``holds = V_f·b_f ≤ fSRAM`` (the filter SRAM holds a whole filter group, ``R·S·C·F_uv``).
If it holds, every filter element is loaded once: ``R·S·C·F``. Otherwise the SRAM keeps
``n = ⌊fSRAM/(R·S·b_f)⌋`` of the group's ``C·F_uv`` 2-D filter planes and every output pixel after the group's first
reloads the others: per group ``V_f + R·S·(C·F_uv − n)·(E·G − 1)``, times ``φ`` (fractional) for the layer.

**Ifmap DRAM.** ``Q = ⌊iSRAM/(R·C·b_i)⌋`` input columns of ``R`` rows × ``C`` channels ("bands") fit, and
``P = ⌊iSRAM/(R·S·b_i)⌋`` window planes ``R×S``. One filter group loads ``D_g``:

* case I, ``Q ≥ W`` (a whole ``R``-row band fits): the input once, ``W·H·C``;
* case II, ``Q < W`` and ``P ≥ C``: the first output row loads its band ``R·W·C``; each later row loads ``U`` new
  input rows ``U·W·C`` and reloads the ``R−U`` overlapping rows of the ``W−Q`` evicted columns, ``(W−Q)·(R−U)·C``;
* case III, ``P < C`` (not even one all-channel window fits): every output row costs ``D_row`` and
  ``D_g = E·D_row``, where the row's first pixel loads the window ``R·S·C`` and each later pixel loads ``U`` new
  columns ``R·U·C`` and reloads the ``S−U`` overlapping columns of the ``C−P`` evicted channels,
  ``D_row = R·S·C + (G−1)·(R·U·C + R·(S−U)·(C−P))``.

(With ``U > R`` or ``U > S`` the overlap terms are negative; the model keeps the formulas as they are.)
For the layer: ``W·H·C`` if ``W·H·C·b_i ≤ iSRAM`` (the whole ifmap fits and is loaded once), else each later filter
group reuses the ``Q`` bands still in the SRAM: ``D_g + (N_F − 1)·(D_g − R·C·Q)``.

**Ofmap.** ``E·G·F`` elements written to DRAM, taking ``dram_cycles(E·G·F·b_o)`` write-back cycles (not
overlapped). ``dram_cycles`` rounds the bits up to whole DRAM blocks, then to whole cycles.

**Stall** (pixel by pixel: the load for the next pixel overlaps the current pixel's ``T`` compute cycles; a pixel
whose load takes ``L`` cycles stalls ``max(L − T, 0)`` and leaves ``max(T − L, 0)`` slack cycles):

* the first pixel loads its filter group and window, ``L₁ = dram_cycles(V_f·b_f + V_w·b_i)``;
* each later pixel of the first output row loads ``U`` new input columns, ``L_x = dram_cycles(U·R·C·b_i)``;
  first-row stall ``σ_x = σ₁ + (G−1)·max(L_x − T, 0)``, slack ``s_x = s₁ + (G−1)·max(T − L_x, 0)``;
* if ``σ_x = 0`` the whole layer has stall 0 (the model stops there);
* otherwise every pixel of the ``E−1`` later rows loads ``L_y = dram_cycles(U·R·C·b_i)`` if the iSRAM holds a band
  row ``W·R·C·b_i``, else the whole window ``dram_cycles(V_w·b_i)`` (independent of the DRAM cases above); the first
  filter group stalls ``σ_g = σ_x + G·(E−1)·max(L_y − T, 0)`` with slack ``s_g = s_x + G·(E−1)·max(T − L_y, 0)``;
* the ``φ − 1`` later groups repeat ``σ_g`` except that the filters of the next group can be prefetched during the
  slack when the fSRAM has room beyond one group: ``π = min(V_f·b_f, fSRAM − V_f·b_f)`` bits, saving
  ``min(s_g, dram_cycles(π))`` cycles per group. If ``fSRAM = V_f·b_f`` or ``s_g = 0``: stall ``⌈σ_g·φ⌉``; else
  ``σ_g + ⌈max(σ_g − saved, 0)·(φ − 1)⌉``.

**Infinite delay (footnote 1).** When the filter SRAM does not hold a filter group (``V_f·b_f > fSRAM``) the
reference model gives this branch an infinite DRAM stall while its accesses (hence its energy) stay finite: the
branch competes on energy only. Here: ``stall = +inf`` with ``feasible`` True, all other fields finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlaopt.formulations.systolic.counts import Array, ConvShape, Counts, HardwareArrays, dram_cycles, unit_volume

BRANCH = "ZiXYZo"


@dataclass(frozen=True)
class PixelGeometry:
    """Per-design-point quantities of the ``Z_i`` pixel shared by the equations (all arrays, broadcast)."""

    C_uv: Array  # channels per cycle, clamped to ≥ 1 so that nothing divides by zero (see ``feasible``)
    F_uv: Array
    channel_passes: Array  # N_C = ⌈C/C_uv⌉
    filter_passes: Array  # N_F = ⌈F/F_uv⌉
    filter_groups: Array  # φ = F/F_uv, fractional
    pixel_cycles: Array  # T = R·N_C
    group_filters: Array  # V_f = R·S·C·F_uv
    holds_group: Array  # V_f·b_f ≤ fSRAM
    feasible: Array


def pixel_geometry(layer: ConvShape, hw: HardwareArrays) -> PixelGeometry:
    C_uv_raw, F_uv = unit_volume(layer, hw)
    C_uv = np.maximum(C_uv_raw, 1.0)
    R, S = layer.R, layer.S
    feasible = ((C_uv_raw >= 1) & (R * S * C_uv * F_uv * hw.b_f <= hw.f_sram) & (F_uv * hw.b_p <= hw.p_sram)
                & (R * S * C_uv * hw.b_i <= hw.i_sram))
    channel_passes = np.ceil(layer.C / C_uv)
    group_filters = R * S * layer.C * F_uv
    return PixelGeometry(C_uv=C_uv, F_uv=F_uv, channel_passes=channel_passes,
                         filter_passes=np.ceil(layer.F / F_uv), filter_groups=layer.F / F_uv,
                         pixel_cycles=R * channel_passes, group_filters=group_filters,
                         holds_group=group_filters * hw.b_f <= hw.f_sram, feasible=feasible)


def compute_cycles(layer: ConvShape, g: PixelGeometry) -> Array:
    """``T·G·E·N_F``."""
    return g.pixel_cycles * layer.G * layer.E * g.filter_passes


def sram_accesses(layer: ConvShape, g: PixelGeometry) -> tuple[Array, Array, Array]:
    """Filter, ifmap and psum SRAM accesses (elements)."""
    pixels = layer.E * layer.G
    window = layer.R * layer.S * layer.C
    return (np.asarray(float(window * layer.F * pixels)), window * pixels * g.filter_passes,
            np.asarray(float(layer.F * pixels)))


def filter_dram(layer: ConvShape, hw: HardwareArrays, g: PixelGeometry) -> Array:
    """Filter elements loaded from DRAM: ``R·S·C·F`` if the fSRAM holds a group, else the plane reloads."""
    plane = layer.R * layer.S
    kept_planes = np.floor(hw.f_sram / (plane * hw.b_f))
    evicted_planes = layer.C * g.F_uv - kept_planes
    per_group = g.group_filters + plane * evicted_planes * (layer.E * layer.G - 1)
    return np.where(g.holds_group, float(plane * layer.C * layer.F), per_group * g.filter_groups)


def ifmap_dram_per_group(layer: ConvShape, hw: HardwareArrays) -> Array:
    """``D_g``: ifmap elements one filter group loads from DRAM (cases I–III)."""
    R, S, C, U, E, G, W, H = layer.R, layer.S, layer.C, layer.U, layer.E, layer.G, layer.W, layer.H
    bands = np.floor(hw.i_sram / (R * C * hw.b_i))  # Q
    planes = np.floor(hw.i_sram / (R * S * hw.b_i))  # P
    case_1 = np.asarray(float(W * H * C))
    case_2 = R * W * C + (U * W * C + (W - bands) * (R - U) * C) * (E - 1)
    row_3 = R * S * C + (G - 1) * (R * U * C + R * (S - U) * (C - planes))
    return np.where(bands >= W, case_1, np.where(planes >= C, case_2, E * row_3))


def ifmap_dram(layer: ConvShape, hw: HardwareArrays, g: PixelGeometry) -> Array:
    """Ifmap elements loaded from DRAM for the layer: once if it fits, else ``D_g`` less the kept bands per group."""
    whole = float(layer.W * layer.H * layer.C)
    per_group = ifmap_dram_per_group(layer, hw)
    kept = layer.R * layer.C * np.floor(hw.i_sram / (layer.R * layer.C * hw.b_i))
    repeated = per_group + (g.filter_passes - 1) * (per_group - kept)
    return np.where(whole * hw.b_i <= hw.i_sram, whole, repeated)


def _stall_and_slack(load: Array, cycles: Array) -> tuple[Array, Array]:
    return np.maximum(load - cycles, 0.0), np.maximum(cycles - load, 0.0)


def stall_cycles(layer: ConvShape, hw: HardwareArrays, g: PixelGeometry) -> Array:
    """DRAM stall cycles of the layer; ``+inf`` where the fSRAM does not hold a filter group (footnote 1)."""
    R, S, C, U, E, G = layer.R, layer.S, layer.C, layer.U, layer.E, layer.G
    T = g.pixel_cycles
    window_bits = R * S * C * hw.b_i
    column_bits = U * R * C * hw.b_i
    group_bits = g.group_filters * hw.b_f

    stall_1, slack_1 = _stall_and_slack(dram_cycles(group_bits + window_bits, hw), T)
    stall_x, slack_x = _stall_and_slack(dram_cycles(column_bits, hw), T)
    row_stall = stall_1 + (G - 1) * stall_x
    row_slack = slack_1 + (G - 1) * slack_x

    band_fits = layer.W * R * C * hw.b_i <= hw.i_sram
    later_load = dram_cycles(np.where(band_fits, column_bits, window_bits), hw)
    stall_y, slack_y = _stall_and_slack(later_load, T)
    group_stall = row_stall + G * (E - 1) * stall_y
    group_slack = row_slack + G * (E - 1) * slack_y

    prefetch_bits = np.minimum(group_bits, hw.f_sram - group_bits)
    saved = np.minimum(group_slack, dram_cycles(np.maximum(prefetch_bits, 0.0), hw))
    next_stall = np.maximum(group_stall - saved, 0.0)
    with_prefetch = group_stall + np.ceil(next_stall * (g.filter_groups - 1))
    without_prefetch = np.ceil(group_stall * g.filter_groups)
    no_prefetch = (hw.f_sram <= group_bits) | (group_slack <= 0)
    layer_stall = np.where(row_stall <= 0, 0.0, np.where(no_prefetch, without_prefetch, with_prefetch))
    return np.where(g.holds_group, layer_stall, np.inf)


def _full(value: Array | float, shape: tuple[int, ...]) -> Array:
    return np.array(np.broadcast_to(value, shape), dtype=np.float64)


def layer_counts(layer: ConvShape, hw: HardwareArrays) -> Counts:
    """The whole layer on every design point of ``hw`` under ``Z_i X Y Z_o`` (see the module docstring).

    ``stall`` is ``+inf`` (with ``feasible`` True and finite accesses) where the filter SRAM cannot hold
    ``R·S·C·F_uv·b_f`` bits: the reference model then scores the branch on energy only."""
    shape = np.broadcast(hw.J, hw.K, hw.f_sram, hw.i_sram, hw.p_sram).shape
    g = pixel_geometry(layer, hw)
    sram_f, sram_i, sram_p = sram_accesses(layer, g)
    ofmap = float(layer.E * layer.G * layer.F)
    return Counts(compute=_full(compute_cycles(layer, g), shape), stall=_full(stall_cycles(layer, hw, g), shape),
                  writeback=_full(dram_cycles(ofmap * hw.b_o, hw), shape), sram_f=_full(sram_f, shape),
                  sram_i=_full(sram_i, shape), sram_p=_full(sram_p, shape),
                  dram_f=_full(filter_dram(layer, hw, g), shape), dram_i=_full(ifmap_dram(layer, hw, g), shape),
                  dram_o=_full(ofmap, shape), feasible=np.array(np.broadcast_to(g.feasible, shape)))
