"""Schedule **XYZoZi** (seed 003 §2.4–2.6): rows along X, then the rows of the ofmap (Y), then the filter groups (Z_o),
then the channel groups (Z_i) outermost. Filters stay in the PEs while a row slides (the X_a stage); the psum SRAM holds
the partial sums of a whole ``E_eff × G_eff × F_eff`` block until every channel group has been added.

Notation (the paper's): ``R×S`` filter, ``C`` channels, ``E×G`` ofmap, ``F`` filters, ``U`` stride; ``C_uv``, ``F_uv``
channels and filters per cycle (Eq. 1); ``b_f, b_i, b_p, b_o`` bit widths; ``fSRAM, iSRAM, pSRAM`` capacities in bits;
``⌈·⌉_D`` is :func:`~dlaopt.formulations.systolic.counts.dram_cycles` (bits → 128-bit blocks → cycles).

**One block** (:func:`block`) of a sub-layer ``E × G × F`` (``R, S, C, U`` those of the layer):

* Depth-1 and Depth-2 are the shared row and block stages (:mod:`~dlaopt.formulations.systolic.stages`): output
  columns ``G_eff`` (Eq. 10) read ``W_eff = (G_eff−1)·U + S`` input columns, ``E_eff`` rows read
  ``H_eff = (E_eff−1)·U + R`` input rows; per row ``G_eff·R`` cycles, ``R·S·C_uv·F_uv`` filter reads, ``I_row``
  ifmap reads (``R·W_eff·C_uv`` for a sliding window, else ``G_eff·R·S·C_uv``) and ``(2R−1)·G_eff·F_uv`` psum
  accesses. ``σ_xy`` / ``τ_xy`` are the stall and slack of the XY stage (first row: filter set + ``R`` input rows;
  later rows: ``U`` new input rows, each overlapped with the previous row's compute).
* Depth-3, Z_o: the psum SRAM holds ``P = ⌊pSRAM / (G_eff·E_eff·b_p)⌋`` ofmap planes of the block, so
  ``F_eff = F`` if ``P ≥ F``, else ``F_eff = F_uv·⌊P / F_uv⌋`` (a whole number of filter groups). The block runs
  ``k_F = F_eff / F_uv`` filter groups — ``⌈k_F⌉`` passes, the last one possibly narrower.
* Depth-4, Z_i: ``k_C = C / C_uv`` channel groups, ``⌈k_C⌉`` passes.

Counts of the block (elements; ``k_F``, ``k_C`` fractional where the reference model uses them so):

* compute ``G_eff·R·E_eff·⌈k_F⌉·⌈k_C⌉``;
* SRAM filter ``R·S·C_uv·F_uv·E_eff·k_F·k_C`` (each filter element once per row);
* SRAM ifmap ``I_row·E_eff·⌈k_F⌉·k_C`` (a narrow last filter group still reads the whole ifmap vector);
* SRAM psum ``G_eff·E_eff·F_uv·k_F·((2R−1) + 2R·⌈k_C − 1⌉)`` (the first channel group only writes the first filter
  row, every later group reads and writes all ``R``);
* DRAM filter ``R·S·C·F_eff`` (each filter of the block once);
* DRAM ifmap ``k_C·V_i``. The XY stage of one filter group needs ``V = H_eff·W_eff·C_uv`` input elements. If the
  ifmap SRAM holds them (``V·b_i ≤ iSRAM``) they are loaded once, ``V_i = V``; otherwise the later filter groups run
  the rows in *reverse order* so only the rows that fell out of the SRAM are reloaded:
  ``V_i = V + ⌈k_F − 1⌉·W_eff·C_uv·(H_eff − ⌊iSRAM / (W_eff·C_uv·b_i)⌋)``;
* DRAM ofmap ``E_eff·G_eff·F_eff``, written back in ``⌈E_eff·G_eff·F_eff·b_o⌉_D`` cycles (not overlapped).

Stall of the block. ``φ = max(0, ⌈R·S·C_uv·F_uv·b_f⌉_D − G_eff·R)`` is the stall of the first row of a later filter
group, which only loads its filter set. The Z_o stage stalls

* ``τ_xy = 0`` (no slack) and the group's ifmap ``V`` fits: ``σ_xy + ⌈φ·(k_F − 1)⌉`` (later groups find their
  ifmap in the SRAM, only their filters stall);
* ``τ_xy = 0`` and ``V`` does not fit: ``⌈σ_xy·k_F⌉`` (every group stalls like the first);
* ``τ_xy > 0`` and ``σ_xy = 0``: no stall;
* ``τ_xy > 0`` and ``σ_xy > 0``: ``σ_xy + ⌈φ'·(k_F − 1)⌉`` with ``φ' = max(0, φ − τ_xy)`` when the filter SRAM can
  hold the next filter set besides the current one (``fSRAM ≥ 2·R·S·C_uv·F_uv·b_f``: it is prefetched in the slack),
  else ``φ' = φ``;

and the block stalls ``⌈σ_xyF·k_C⌉`` (the Z_i stage repeats the Z_o stage; no slack is carried past Z_o).

**The layer** (:func:`psum_tiling`, shared with XZoYZi): the block of the whole layer fixes ``F_eff``; the filters are
cut into ``n_F = ⌊F / F_eff⌋`` full groups of ``F_eff`` and a leftover group of ``F_r = F − n_F·F_eff`` filters (each
evaluated with its own ``F_uv = min(K, F_r)``). Each group of ``F_g`` filters covers the ``E × G`` ofmap with blocks:

* if ``G_eff < G`` (the psum SRAM cannot hold a whole row; then ``E_eff = 1``): ``n_x = ⌊G / G_eff⌋`` column blocks in
  each of the ``E`` rows, and a strip of the ``G_r = G − n_x·G_eff`` remaining columns; otherwise the strip is all
  ``G_r = G`` columns;
* the strip (if ``G_r > 0``) is evaluated as a sub-layer ``E × G_r × F_g``: it gives its own ``E_1 = E_eff``, and
  is covered by ``⌊E / E_1⌋`` blocks plus one block of the ``E_r = E − ⌊E / E_1⌋·E_1`` remaining rows (if any).

Every leftover piece is evaluated as its own smaller block, and only on the design points where it exists (so an
empty piece contributes nothing, and a sweep pays for the pieces it has). The full groups' whole-ofmap block is the
layer's own block (evaluated for ``F`` filters it is the same block as for ``F_eff``: same ``F_uv``, ``G_eff``,
``E_eff``, ``F_eff``). The reference model's wrapper walks X, then Y, then F, but because its ``F_eff`` is always a
whole number of filter groups (or all of ``F``), and ``E_eff = 1`` whenever ``G_eff < G``, every block it evaluates is
one of the above, so the sums are the same.

Approximations of the reference model kept on purpose (the published tables come from them): ``k_F`` and ``k_C`` are
fractional in the SRAM filter/psum and DRAM counts and inside the stall products (a narrow last group costs its
share), but rounded up for cycles, ifmap SRAM reads and the number of later groups; the stall of later filter groups
is charged per group even where reverse order leaves part of the data in the SRAM; no slack is carried past the Z_o
stage; every block starts with a full (non-overlapped) load of its first row.

Feasibility: the row stage's minimum SRAM sizes (``R·S·C_uv·F_uv·b_f ≤ fSRAM``, ``W_eff·R·C_uv·b_i ≤ iSRAM``,
``G_eff ≥ 1``) and ``C_uv ≥ 1`` (``J ≥ S``). Infeasible entries have all counts 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np

from dlaopt.formulations.systolic.counts import Array, Block, ConvShape, Counts, HardwareArrays, dram_cycles
from dlaopt.formulations.systolic.stages import block_stage


@dataclass(frozen=True)
class PsumBlock:
    """One block of a schedule: the counts of a single ``E_eff × G_eff × F_eff`` block (all ``C`` channels) of the
    sub-layer it was evaluated for, and that block's extents (arrays over the design points)."""

    counts: Counts
    G_eff: Array
    E_eff: Array
    F_eff: Array


BlockModel = Callable[[ConvShape, HardwareArrays, Array, Array, Array], PsumBlock]
"""``(layer, hw, E, G, F) -> PsumBlock``: one block of the sub-layer with ``E×G`` outputs and ``F`` filters."""


def sub_block(layer: ConvShape, E: Array, G: Array, F: Array) -> Block:
    """The layer restricted to ``E × G`` outputs and ``F`` filters (all may be per-design-point arrays; ``Block.F`` is
    used only through ``F_uv = min(K, F)``, which broadcasts)."""
    return Block(layer.R, layer.S, layer.C, F, layer.U, np.asarray(E, dtype=np.float64),  # type: ignore[arg-type]
                 np.asarray(G, dtype=np.float64))


def channel_groups(C: int, C_uv: Array) -> Array:
    """``k_C = C / C_uv`` (``C_uv = 0``, i.e. ``J < S``, is infeasible; it is counted as one group there)."""
    return C / np.maximum(C_uv, 1.0)


def psum_counts(G_eff: Array, E_eff: Array, F_uv: Array, k_F: Array, k_C: Array, R: int) -> Array:
    """Psum SRAM accesses of a block: ``(2R−1)`` per partial sum for the first channel group, ``2R`` for each later
    one (``⌈k_C − 1⌉`` of them)."""
    return G_eff * E_eff * F_uv * k_F * ((2 * R - 1) + 2 * R * np.ceil(k_C - 1))


def ofmap_counts(G_eff: Array, E_eff: Array, F_eff: Array, hw: HardwareArrays) -> tuple[Array, Array]:
    """The block's ofmap: elements written to DRAM and the write-back cycles."""
    elements = E_eff * G_eff * F_eff
    return elements, dram_cycles(elements * hw.b_o, hw)


# ------------------------------------------------------------------------------------------------------ one block


def psum_planes(G_eff: Array, E_eff: Array, F: Array, F_uv: Array, hw: HardwareArrays) -> Array:
    """Depth-3: ``F_eff``, the filter planes of an ``E_eff × G_eff`` block the psum SRAM holds (whole groups)."""
    planes = np.floor(hw.p_sram / (G_eff * E_eff * hw.b_p))
    return np.where(planes >= F, F, np.floor(planes / F_uv) * F_uv)


def block(layer: ConvShape, hw: HardwareArrays, E: Array, G: Array, F: Array) -> PsumBlock:
    """One XYZoZi block of the sub-layer ``E × G × F`` (see the module docstring)."""
    R, S, C = layer.R, layer.S, layer.C
    xy = block_stage(sub_block(layer, E, G, F), hw)
    row = xy.row
    C_uv, F_uv, G_eff, W_eff, E_eff = row.C_uv, row.F_uv, row.G_eff, row.W_eff, xy.E_eff
    F_eff = psum_planes(G_eff, E_eff, F, F_uv, hw)
    k_F = F_eff / F_uv
    k_C = channel_groups(C, C_uv)

    # DRAM ifmap: once if the group's input fits, else reverse-order reloads of the rows that fell out
    group_ifmap = xy.H_eff * W_eff * C_uv
    ifmap_fits = group_ifmap * hw.b_i <= hw.i_sram
    rows_kept = np.floor(hw.i_sram / (W_eff * C_uv * hw.b_i))
    reloads = np.ceil(k_F - 1) * W_eff * C_uv * (xy.H_eff - rows_kept)
    dram_i = np.where(ifmap_fits, group_ifmap, group_ifmap + reloads) * k_C

    # stall: Z_o stage from the XY stage's stall σ and slack τ, then repeated over the channel groups
    sigma, tau = xy.stall, xy.slack
    phi = np.maximum(dram_cycles(row.filter_bits, hw) - row.cycles, 0.0)
    prefetch = hw.f_sram >= 2 * row.filter_bits
    phi_later = np.where(prefetch, np.maximum(phi - tau, 0.0), phi)
    stall_zo = np.where(
        tau <= 0,
        np.where(ifmap_fits, sigma + np.ceil(phi * (k_F - 1)), np.ceil(sigma * k_F)),
        np.where(sigma <= 0, 0.0, sigma + np.ceil(phi_later * (k_F - 1))),
    )

    dram_o, writeback = ofmap_counts(G_eff, E_eff, F_eff, hw)
    counts = Counts(
        compute=xy.cycles * np.ceil(k_F) * np.ceil(k_C),
        stall=np.ceil(stall_zo * k_C),
        writeback=writeback,
        sram_f=xy.sram_f * k_F * k_C,
        sram_i=xy.sram_i * np.ceil(k_F) * k_C,
        sram_p=psum_counts(G_eff, E_eff, F_uv, k_F, k_C, R),
        dram_f=R * S * C * F_eff,
        dram_i=dram_i,
        dram_o=dram_o,
        feasible=row.feasible & (C_uv >= 1),
    )
    return PsumBlock(counts, G_eff, E_eff, F_eff)


# ------------------------------------------------------------------------------------------- blocks → whole layer


NUMERIC = tuple(f.name for f in fields(Counts) if f.name != "feasible")


def on_points(arr: Array | float, n: int) -> Array:
    """A block field (possibly broadcast) as a length-``n`` array aligned with its design points."""
    return np.broadcast_to(arr, (n,))


def points(hw: HardwareArrays, sel: Array) -> HardwareArrays:
    """The design points ``sel`` (indices) of a flat ``hw``."""
    return replace(hw, J=hw.J[sel], K=hw.K[sel], f_sram=hw.f_sram[sel], i_sram=hw.i_sram[sel],
                   p_sram=hw.p_sram[sel])


class Totals:
    """Running whole-layer counts on ``n`` design points: ``copies`` of a first block, to which the copies of the
    blocks that only some of the points need are added (on those points only)."""

    def __init__(self, piece: Counts, n: int, copies: Array) -> None:
        self.n = n
        self.values = {k: on_points(getattr(piece, k), n) * copies for k in NUMERIC}
        self.feasible = on_points(piece.feasible, n).copy()

    def add(self, sel: Array, piece: Counts, copies: Array | float) -> None:
        """Add ``copies`` of a block evaluated on the points ``sel`` (distinct indices) to those points."""
        m = sel.size
        for k in NUMERIC:
            self.values[k][sel] += on_points(getattr(piece, k), m) * copies
        self.feasible[sel] &= on_points(piece.feasible, m)

    def counts(self) -> Counts:
        return Counts(**self.values, feasible=self.feasible)


def tile_filter_group(layer: ConvShape, hw: HardwareArrays, model: BlockModel, F_g: Array, whole: PsumBlock,
                      copies: Array | float) -> Totals:
    """``copies`` of one group of ``F_g`` filters on the (flat) design points ``hw``; ``whole`` is the group's block
    for the whole ``E × G`` ofmap there. ``whole`` is repeated ``E·⌊G / G_eff⌋`` times where ``G_eff < G`` (column
    blocks) and ``⌊E / E_eff⌋`` times where not (row blocks of the strip, which is then all ``G`` columns); where
    columns were cut off, their strip ``E × G_r`` is a sub-layer of its own in ``⌊E / E_1⌋`` row blocks; last, the
    ``E_r`` rows left of the strip form one block."""
    E, G = float(layer.E), float(layer.G)
    n = hw.J.size
    copies = on_points(copies, n)
    G_eff = on_points(whole.G_eff, n)
    E_eff = on_points(whole.E_eff, n)
    split = G_eff < G
    n_x = np.where(split, np.floor(G / np.maximum(G_eff, 1.0)), 0.0)
    n_y = np.floor(E / E_eff)
    totals = Totals(whole.counts, n, copies * np.where(split, E * n_x, n_y))
    G_r = G - n_x * G_eff  # columns of the strip: all G where nothing was split
    E_r = np.where(split, 0.0, E - n_y * E_eff)  # rows left below the strip's row blocks

    cut = np.flatnonzero(split & (G_r > 0))
    if cut.size:
        strip = model(layer, points(hw, cut), np.asarray(E), G_r[cut], F_g[cut])
        E_1 = on_points(strip.E_eff, cut.size)
        n_1 = np.floor(E / E_1)
        totals.add(cut, strip.counts, copies[cut] * n_1)
        E_r[cut] = E - n_1 * E_1

    rows_left = np.flatnonzero(E_r > 0)
    if rows_left.size:
        last = model(layer, points(hw, rows_left), E_r[rows_left], G_r[rows_left], F_g[rows_left])
        totals.add(rows_left, last.counts, copies[rows_left])
    return totals


def psum_tiling(layer: ConvShape, hw: HardwareArrays, model: BlockModel) -> Counts:
    """The whole layer from blocks of ``model``: ``n_F`` full filter groups of ``F_eff`` and one leftover group of
    ``F_r`` filters, each tiled by :func:`tile_filter_group`. Every field is an array over the design points
    (infeasible entries 0); each sub-block is evaluated only on the design points where it occurs."""
    shape = np.broadcast(hw.J, hw.K, hw.f_sram, hw.i_sram, hw.p_sram).shape
    flat = [np.broadcast_to(a, shape).ravel() for a in (hw.J, hw.K, hw.f_sram, hw.i_sram, hw.p_sram)]
    hw = replace(hw, J=flat[0], K=flat[1], f_sram=flat[2], i_sram=flat[3], p_sram=flat[4])
    size = flat[0].size
    E, G, F = (np.asarray(float(v)) for v in (layer.E, layer.G, layer.F))
    with np.errstate(divide="ignore", invalid="ignore"):  # only infeasible points divide by zero; they are dropped
        top = model(layer, hw, E, G, F)
        ok = np.flatnonzero(on_points(top.counts.feasible, size))
        hw_ok = points(hw, ok)
        whole = PsumBlock(Counts(**{k: on_points(getattr(top.counts, k), size)[ok] for k in NUMERIC},
                                 feasible=np.ones(ok.size, dtype=bool)),
                          *(on_points(a, size)[ok] for a in (top.G_eff, top.E_eff, top.F_eff)))
        n_F = np.floor(F / whole.F_eff)
        F_r = F - n_F * whole.F_eff
        totals = tile_filter_group(layer, hw_ok, model, whole.F_eff, whole, n_F)
        rest = np.flatnonzero(F_r > 0)
        if rest.size:
            hw_rest = points(hw_ok, rest)
            rest_whole = model(layer, hw_rest, E, G, F_r[rest])
            totals.add(rest, tile_filter_group(layer, hw_rest, model, F_r[rest], rest_whole, 1.0).counts(), 1.0)
    feasible = np.zeros(size, dtype=bool)
    feasible[ok] = totals.feasible
    numeric = {}
    for k in NUMERIC:
        v = np.zeros(size)
        v[ok] = np.where(totals.feasible, totals.values[k], 0.0)
        numeric[k] = v.reshape(shape)
    return Counts(**numeric, feasible=feasible.reshape(shape))


def layer_counts(layer: ConvShape, hw: HardwareArrays) -> Counts:
    """Whole-layer counts of schedule XYZoZi on every design point of ``hw``."""
    return psum_tiling(layer, hw, block)
