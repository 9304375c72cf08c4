r"""Exact sizes of Flexion's map spaces (seed 001, §3.2 and Table 3.3), per axis and per layer — counted, not sampled.

Per axis X of a flexibility class on one layer (workload ω), as the chapter defines them:

* ``C`` — the class's map space (:math:`C_X`): what a fully flexible accelerator with these resources could run,
  workload-agnostic; ``A`` — the target accelerator's (:math:`A_X \subseteq C_X`); ``W`` — the workload's
  (:math:`W_X^\omega`); ``CW`` = :math:`C_X \cap W_X^\omega`; ``AW`` = :math:`A_X \cap W_X^\omega`, the feasible map
  space, :math:`|Mappings_{supported}|` of Eq. 3.1. Hardware-dependent Flexion ``hf`` = A / C, workload-dependent
  ``wf`` = AW / W.
* **Tile** — a tile is one size per loop dimension, ``1..D`` (the chapter's workload space: "all the possible
  combinations of 6 parameters with values from 1 to its dimension size"), held in the on-chip buffer (the level
  under main memory): ``W`` is the product of the sizes, ``CW`` the tiles whose inputs, weights and outputs fit the
  buffer's total capacity (soft partition; input tiles count the sliding-window halo exactly), ``AW`` those the
  target accelerator holds (each part of a hard-partitioned buffer, within a PartFlex tile's bounds; InFlex: 1).
  The workload-agnostic tile spaces (every tile of unbounded dimensions that fits) are not counted; the tile
  axis' ``hf`` is ``AW / CW``. dlaopt's mappings factor dimensions exactly, so its tiles are divisors: ``*_div``
  count those (the space the exact method searches).
* **Order** — orders of Flexion's dimensions (6! for a conv): ``W`` = orders of the layer's dimensions of size above 1
  (orders differing only in the others are the same loop nest), ``AW`` = the distinct orders the accelerator's give
  on them.
* **Parallelism** — an ordered pair of distinct dimensions, one per array axis (6 x 5 = 30 for a conv, §3.4.4):
  ``W`` = pairs of the layer's dimensions of size above 1, ``AW`` = the accelerator's pairs among them. (dlaopt's
  FullFlex parallelism, no constraint, also unrolls several dimensions along one axis: a superset.)
* **Shape** — one shape per number of rows ``r`` = 1..N, with the columns the N PEs then allow (§3.4.5's PartFlex
  counts, 4 shapes of 16x16 blocks and 64 of 4x4 ones in 1024 PEs, give Fig. 3.11's 0.004 and 0.06): ``W`` = the
  rows the layer's row dimension (the baseline parallelism's, C for K-C) can fill, ``1..D``; ``AW`` = the
  accelerator's shapes with at most that many rows.

Every count is checked against brute-force enumeration in the tests.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.flexibility import AXES, DIM_MAP, FlexClass
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest, coordinate_extent, divisors

MAX_GRID = 4_000_000  # tile counting evaluates the grid of all dimensions but one in chunks of this many points


@dataclass(frozen=True)
class AxisSpace:
    """The sizes of one axis' map spaces on one layer (see the module docstring)."""

    axis: str
    level: str  # InFlex, PartFlex or FullFlex
    C: int | None
    A: int | None
    W: int
    CW: int
    AW: int
    W_div: int | None = None  # tile only: the same spaces over divisor tiles (dlaopt's perfect factorization)
    CW_div: int | None = None
    AW_div: int | None = None

    @property
    def hf(self) -> float | None:
        """Hardware-dependent Flexion A / C (the tile axis: AW / CW)."""
        if self.C is None or self.A is None:
            return self.AW / self.CW if self.CW else None
        return self.A / self.C if self.C else None

    @property
    def wf(self) -> float | None:
        """Workload-dependent Flexion AW / W."""
        return self.AW / self.W if self.W else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hf": self.hf, "wf": self.wf}


# ------------------------------------------------------------------------------------------------ tiles
Store = tuple[frozenset[str], int]  # the operands a memory keeps and its capacity in bytes


def buffer_stores(arch: MappingArch) -> tuple[list[Store], list[Store]]:
    """The on-chip buffer's stores (the level under main memory) and the same capacity as one soft-partitioned
    store."""
    lv = arch.levels[-2]
    stores = [(frozenset(s.operands), int(s.capacity_bytes or 0)) for s in lv.stores]
    return stores, [(frozenset(lv.keeps), sum(c for _, c in stores))]


def _extent_table(coef_a: int, va: np.ndarray, coef_b: int, vb: np.ndarray) -> np.ndarray:
    return np.array([[coordinate_extent(((coef_a, int(a)), (coef_b, int(b)))) for b in vb] for a in va],
                    dtype=np.int64)


def count_tiles(nest: LoopNest, stores: Sequence[Store], values: Mapping[str, Sequence[int]]) -> int:
    """Tiles (one value per dimension from ``values[d]``, default ``1..size``) whose operand footprints fit every
    store: ``sum over the store's operands of footprint x word bytes <= capacity``."""
    dims = list(nest.dims)
    vals = {d: np.array(sorted(values.get(d, range(1, nest.sizes[d] + 1))), dtype=np.int64) for d in dims}
    if any(len(v) == 0 for v in vals.values()):
        return 0
    single = {d for d in dims if all(len(c.terms) == 1 or d not in c.dims
                                     for t in OPERANDS for c in nest.operand(t).coords)}
    free = max((d for d in dims if d in single), key=lambda d: len(vals[d]))
    grid_dims = [d for d in dims if d != free]
    sizes = [len(vals[d]) for d in grid_dims]
    total_points = math.prod(sizes)
    word = {t: nest.operand(t).word_bytes for t in OPERANDS}
    tables = {}
    for t in OPERANDS:
        for c in nest.operand(t).coords:
            if len(c.terms) == 2:
                (da, ca), (db, cb) = c.terms
                tables[c] = _extent_table(ca, vals[da], cb, vals[db])
    lin = vals[free]
    total = 0
    step = max(1, MAX_GRID)
    for start in range(0, total_points, step):
        flat = np.arange(start, min(total_points, start + step), dtype=np.int64)
        idx = np.unravel_index(flat, sizes) if sizes else ()
        pos = dict(zip(grid_dims, idx, strict=True))
        a = {}  # per operand: footprint without the free dimension, and whether the free one multiplies it
        for t in OPERANDS:
            fp = np.ones(len(flat), dtype=np.int64)
            for c in nest.operand(t).coords:
                if len(c.terms) == 1:
                    d = c.terms[0][0]
                    if d != free:
                        fp = fp * vals[d][pos[d]]
                elif len(c.terms) == 2:
                    (da, _), (db, _) = c.terms
                    fp = fp * tables[c][pos[da], pos[db]]
                else:
                    raise ValueError(f"layer {nest.name}: coordinates of more than two terms are not counted")
            a[t] = (fp * word[t], free in nest.operand(t).dims)
        tmax = np.full(len(flat), np.iinfo(np.int64).max, dtype=np.int64)
        for ops, cap in stores:
            fixed = sum((a[t][0] for t in ops if not a[t][1]), np.zeros(len(flat), dtype=np.int64))
            slope = sum((a[t][0] for t in ops if a[t][1]), np.zeros(len(flat), dtype=np.int64))
            room = cap - fixed
            with np.errstate(divide="ignore"):
                lim = np.where(slope > 0, np.floor_divide(room, np.maximum(slope, 1)),
                               np.where(room >= 0, np.iinfo(np.int64).max, -1))
            lim = np.where(room < 0, -1, lim)
            tmax = np.minimum(tmax, lim)
        total += int(np.searchsorted(lin, tmax, side="right").sum())
    return total


def _bounded(nest: LoopNest, fc: FlexClass, div: bool) -> dict[str, list[int]]:
    """Per dimension the tile values a PartFlex tile's bounds allow (all of ``1..D`` or its divisors otherwise)."""
    out = {d: divisors(nest.sizes[d]) if div else list(range(1, nest.sizes[d] + 1)) for d in nest.dims}
    if fc.bits["tile"] and fc.tile is not None:
        dmap = DIM_MAP[nest.kind]
        for f, (lo, hi) in fc.tile.items():
            d = dmap.get(f)
            if d is None or d not in out:
                continue
            size = nest.sizes[d]
            lo, hi = min(lo, size), min(hi if hi is not None else size, size)
            out[d] = [v for v in out[d] if lo <= v <= hi]
    return out


def tile_space(fc: FlexClass, nest: LoopNest, arch: MappingArch) -> AxisSpace:
    stores, soft = buffer_stores(arch)
    level = fc.level("tile")
    counts = {}
    for div in (False, True):
        full = {d: divisors(nest.sizes[d]) if div else range(1, nest.sizes[d] + 1) for d in nest.dims}
        w = math.prod(len(v) for v in full.values())
        cw = count_tiles(nest, soft, full)
        aw = 1 if level == "InFlex" else count_tiles(nest, stores, _bounded(nest, fc, div))
        counts[div] = (w, cw, aw)
    (w, cw, aw), (wd, cwd, awd) = counts[False], counts[True]
    return AxisSpace("tile", level, None, None, w, cw, aw, wd, cwd, awd)


# ------------------------------------------------------------------------------------------------ other axes
def _flex_dims(nest: LoopNest) -> tuple[list[str], list[str]]:
    """Flexion's dimensions of the layer's kind, and those of size above 1."""
    dmap = DIM_MAP[nest.kind]
    dims = list(dmap)
    return dims, [f for f in dims if nest.sizes.get(dmap[f], 1) > 1]


def _consistent(order: Sequence[str], partial: Sequence[str]) -> bool:
    pos = [order.index(d) for d in partial if d in order]
    return pos == sorted(pos)


def order_space(fc: FlexClass, nest: LoopNest) -> AxisSpace:
    dims, live = _flex_dims(nest)
    c = math.factorial(len(dims))
    w = math.factorial(len(live))
    listed = fc.choices("order")
    if listed is None:
        return AxisSpace("order", "FullFlex", c, c, w, w, w)
    full = [o for o in itertools.permutations(dims) if any(_consistent(o, p) for p in listed)]
    proj = {tuple(d for d in o if d in live) for o in full}
    return AxisSpace("order", fc.level("order"), c, len(full), w, w, len(proj))


def parallel_space(fc: FlexClass, nest: LoopNest) -> AxisSpace:
    dims, live = _flex_dims(nest)
    c = len(dims) * (len(dims) - 1)
    w = len(live) * (len(live) - 1)
    listed = fc.choices("parallel")
    if listed is None:
        return AxisSpace("parallel", "FullFlex", c, c, w, w, w)
    pairs = {tuple(p) for p in listed if p[0] in dims and p[1] in dims}
    aw = sum(1 for p in pairs if p[0] in live and p[1] in live)
    return AxisSpace("parallel", fc.level("parallel"), c, len(pairs), w, w, aw)


def rows_size(fc: FlexClass, nest: LoopNest) -> int:
    """The size of the layer's dimension the baseline parallelism unrolls along the rows (§3.4.5's first ParSize)."""
    d = DIM_MAP[nest.kind].get(fc.baseline_parallel[0])
    return nest.sizes.get(d, 1) if d is not None else 1


def shape_space(fc: FlexClass, nest: LoopNest) -> AxisSpace:
    n = fc.num_pes
    rows = rows_size(fc, nest)
    cw = min(n, rows)
    shapes = fc.choices("shape")
    if shapes is None:
        return AxisSpace("shape", "FullFlex", n, n, rows, cw, cw)
    listed = {tuple(s) for s in shapes}
    return AxisSpace("shape", fc.level("shape"), n, len(listed), rows, cw, sum(1 for s in listed if s[0] <= rows))


def axis_spaces(fc: FlexClass, nest: LoopNest, arch: MappingArch) -> dict[str, AxisSpace]:
    """The four axes' map-space sizes of class ``fc`` (on the target accelerator ``arch``) for layer ``nest``."""
    return {"tile": tile_space(fc, nest, arch), "order": order_space(fc, nest),
            "parallel": parallel_space(fc, nest), "shape": shape_space(fc, nest)}


__all__ = ["AXES", "AxisSpace", "axis_spaces", "buffer_stores", "count_tiles", "order_space", "parallel_space",
           "rows_size", "shape_space", "tile_space"]
