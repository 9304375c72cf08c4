"""A direct simulator of a mapping's tiled loop nest: the reference the analytical cost model is tested against.

It executes the loop nest ``T(top) S(top) T(top-1) ... S(1) T(0) S(mac) MAC`` (see :mod:`.cost`) iteration by
iteration and counts every fill, read, write and network transfer per level and operand from explicit state, without
any of the analytical model's products (visits, footprints, instance counts):

* Every MAC operation is enumerated: a temporal *step* (the values of all temporal loops, outermost loop slowest)
  times a *MAC unit* (the values of all spatial loops; the units run in lockstep). Each operation's loop indices give
  the element of every operand it touches (an integer id per element).
* A level ``j`` instance is the set of MAC units that share the values of the spatial loops above ``T(j)``; a *block*
  of level ``j`` is a run of steps during which the temporal loops above ``T(j)`` keep their values. The tile an
  instance needs during a block is the set of elements its MAC units touch in that block, collected by enumeration.
* **Residency.** Each instance of a level keeping an operand holds one tile. When the tile needed for a block is not
  the resident one the instance gets a new tile, fetched whole (fills = its distinct elements); otherwise it reuses
  the resident tile. Whether the tile is "the resident one" is decided by ``tile_identity``:

  - ``"loops"`` (the cost model's reading, default): a tile is named by the values of the loop counters above the
    level that the operand's coordinates depend on; it changes when one of them changes.
  - ``"elements"``: a tile is its set of elements; it changes when the set changes. This also reuses a tile whose
    elements happen to coincide with the previous one after a loop advanced (possible for convolution inputs, where a
    row is ``stride * p + dilation * r``: advancing ``r`` while ``p`` wraps around can land on the same rows) —
    sliding-window reuse between consecutive tiles, which the cost model documents as not modelled.

* **Parent side (I, W).** In a block in which children get new tiles, one instance of the parent (the next level
  above keeping the operand) reads the distinct elements of the union of the new tiles of its children (multicast).
  The MAC units have no storage: at every step each reads its element and the parent instance reads the distinct
  elements of its units.
* **Partial sums (O).** When a child instance leaves a tile (its tile changes, or the run ends) it drains the tile to
  the parent: child reads = its elements; parent writes = distinct elements of the union over the children that
  drain at that moment under one parent instance (spatial reduction). When a child gets a new tile, the parent
  instance sends back the elements it already holds a partial sum for: it keeps the set of elements it has already
  handed to its children (each of them came back to it as a partial sum, or it reloaded them from its own parent);
  elements not in that set start from zero (no read). A reloaded partial sum is read once per parent instance and
  written into one child (the children reducing the same element start the others from zero). The MAC units read
  their partial sum from the innermost level keeping O at every step (except an element's first touch in that level
  instance) and write it back, reduced over the units of one instance. Main memory starts with I and W and ends
  with O. With ``roots``, an operand's chain ends at its root level, which then plays main memory's part for it
  (nothing is counted for the operand above the root).
* **Network** (counted at the receiving/draining child level): fills for I and W; drains plus reloads for O.
* **PE-to-PE links.** The PE coordinates along each linked slot are built from each instance's spatial loop indices
  with the placement convention of the cost model; a PE takes a new tile over the link (not the network) when its
  link predecessor (x-1 on a straight link, (x-1, y+1) on a diagonal one, all other spatial indices equal) exists
  and gets the identical element set in the same block; for O, a PE leaving a tile hands it to its successor over
  the link when the successor leaves the identical element set at the same moment. For the MAC units this is per
  step (one element each) and the count is kept at the parent level.

The per-block state updates are batched with numpy (all instances and, for the partial-sum "already handed down"
sets, chunks of consecutive events processed in order against a bitmap), which is equivalent to the step-by-step
loop and fast enough for layers of ~10^5 MACs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, MappingArch
from dlaopt.formulations.mapping.cost import axis_digits, operand_roots
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors

TileIdentity = Literal["loops", "elements"]
_EMPTY = np.iinfo(np.int64).max  # padding of element-id rows (sorts after every real id)
_CHUNK = 1 << 16  # events per batch of the partial-sum state updates


class SimAccess(NamedTuple):
    reads: int
    writes: int
    network: int
    link: int = 0


@dataclass
class SimResult:
    """What the simulator counted. ``accesses`` mirrors :attr:`CostReport.accesses` (level name -> operand)."""

    accesses: dict[str, dict[str, SimAccess]]
    macs: int  # MAC operations executed (steps x MAC units used)
    distinct_iterations: int  # distinct loop-index vectors among them (== macs == the layer's MACs if correct)
    temporal_steps: int
    mac_units: int  # MAC units used
    new_tiles: dict[str, dict[str, int]] = field(default_factory=dict)  # level -> operand -> tiles loaded (all inst.)
    instances: dict[str, int] = field(default_factory=dict)  # level -> instances used
    link_load: dict[str, int] = field(default_factory=dict)  # linked operand -> elements over the busiest link

    def as_tuples(self, links: bool = False) -> dict[str, dict[str, tuple[int, ...]]]:
        """``(reads, writes, network)`` per level and operand, with ``link`` appended if ``links``."""
        return {lv: {t: tuple(a) if links else tuple(a)[:3] for t, a in d.items()} for lv, d in self.accesses.items()}


@dataclass
class _Counts:
    reads: int = 0
    writes: int = 0
    network: int = 0
    link: int = 0


class _Loop(NamedTuple):
    dim: str
    slot: int
    level: int  # the level of a temporal loop; the level above a spatial one
    factor: int


def simulate_mapping(nest: LoopNest, arch: MappingArch, m: Mapping, *,
                     tile_identity: TileIdentity = "loops", roots: MappingABC[str, int] | None = None) -> SimResult:
    """Execute ``m`` on ``nest`` and ``arch`` and count every access (see the module docstring). ``roots``:
    operand -> the level index where its chain ends (default: main memory), as in the cost model."""
    root = operand_roots(arch, roots)
    errors = mapping_errors(nest, arch, m)
    if errors:
        raise ValueError("invalid mapping: " + "; ".join(errors))
    if tile_identity not in ("loops", "elements"):
        raise ValueError(f"unknown tile identity '{tile_identity}'")
    sim = _Simulator(nest, arch, m, tile_identity, root)
    return sim.run()


class _Simulator:
    def __init__(self, nest: LoopNest, arch: MappingArch, m: Mapping, tile_identity: TileIdentity,
                 root: dict[str, int]) -> None:
        self.nest, self.arch, self.m, self.identity, self.root = nest, arch, m, tile_identity, root
        slots = arch.slots()
        self.slots = slots
        self.tslot = {s.level: k for k, s in enumerate(slots) if s.kind == TEMPORAL}
        f = m.factors
        # temporal loops in execution order (outermost first), spatial loops outermost first
        self.tloops = [_Loop(d, self.tslot[j], j, f[d][self.tslot[j]])
                       for j in range(arch.top, -1, -1) for d in m.orders[j] if f[d][self.tslot[j]] > 1]
        self.sloops = [_Loop(d, k, slots[k].level, f[d][k])
                       for k in range(len(slots) - 1, -1, -1) if slots[k].kind == SPATIAL
                       for d in nest.dims if f[d][k] > 1]
        self.steps = math.prod(lp.factor for lp in self.tloops)
        self.units = math.prod(lp.factor for lp in self.sloops)
        # the loop counters: tidx[l] (steps,) for temporal loop l, sidx[l] (units,) for spatial loop l
        self.tidx = _counters([lp.factor for lp in self.tloops], self.steps)
        self.sidx = _counters([lp.factor for lp in self.sloops], self.units)
        # full loop index of every dimension for every (step, unit): x[d] (steps, units)
        self.x: dict[str, np.ndarray] = {}
        for d in nest.dims:
            xt = np.zeros(self.steps, np.int64)
            for lp, idx in zip(self.tloops, self.tidx, strict=True):
                if lp.dim == d:
                    xt += idx * _stride(f[d], lp.slot)
            xs = np.zeros(self.units, np.int64)
            for lp, idx in zip(self.sloops, self.sidx, strict=True):
                if lp.dim == d:
                    xs += idx * _stride(f[d], lp.slot)
            self.x[d] = xt[:, None] + xs[None, :]
        self.elements = {t: self._element_ids(t) for t in OPERANDS}
        self.link_load: dict[str, int] = {}

    # ------------------------------------------------------------------------------------------------ geometry
    def _element_ids(self, operand: str) -> tuple[np.ndarray, int]:
        """Element id of ``operand`` for every (step, unit), and the number of possible ids."""
        ids = np.zeros((self.steps, self.units), np.int64)
        radix_total = 1
        for coord in self.nest.operand(operand).coords:
            value = sum((coef * self.x[d] for d, coef in coord.terms), np.zeros_like(ids))
            radix = 1 + sum(coef * (self.nest.sizes[d] - 1) for d, coef in coord.terms)
            ids = ids * radix + value
            radix_total *= radix
        return ids, radix_total

    def units_below(self, level: int) -> int:
        """MAC units under one instance of ``level`` (spatial loops below T(level))."""
        return math.prod(lp.factor for lp in self.sloops if lp.slot < self.tslot[level])

    def steps_per_block(self, level: int) -> int:
        """Steps during which the temporal loops above T(level) keep their values."""
        return math.prod(lp.factor for lp in self.tloops if lp.level <= level)

    # ------------------------------------------------------------------------------------------------ tiles
    def child_tiles(self, child: int | None, operand: str) -> tuple[np.ndarray, np.ndarray]:
        """Per block and instance of ``child`` (None: the MAC units): the distinct elements it needs (sorted, padded
        with _EMPTY) as ``(blocks, instances, width)``, and whether it gets a new tile then ``(blocks, instances)``."""
        ids, _ = self.elements[operand]
        if child is None:  # MAC units: one element each per step, no storage
            tiles = ids[:, :, None]
            return tiles, np.ones(tiles.shape[:2], bool)
        per_block = self.steps_per_block(child)
        blocks = self.steps // per_block
        width = self.units_below(child)
        inst = self.units // width
        raw = ids.reshape(blocks, per_block, inst, width).transpose(0, 2, 1, 3).reshape(blocks, inst, -1)
        tiles = _distinct_rows(raw)
        new = np.ones((blocks, inst), bool)
        if self.identity == "elements":
            new[1:] = np.any(tiles[1:] != tiles[:-1], axis=-1)
        else:
            relevant = self.nest.operand(operand).dims
            key = [idx[::per_block] for lp, idx in zip(self.tloops, self.tidx, strict=True)
                   if lp.level > child and lp.dim in relevant]
            changed = np.zeros(blocks, bool)
            changed[0] = True
            for k in key:
                changed[1:] |= k[1:] != k[:-1]
            new[:] = changed[:, None]
        return tiles, new

    # ------------------------------------------------------------------------------------------------ run
    def run(self) -> SimResult:
        arch = self.arch
        counts = {j: {t: _Counts() for t in lv.keeps} for j, lv in enumerate(arch.levels)}
        new_tiles = {lv.name: {t: 0 for t in lv.keeps} for lv in arch.levels}
        for t in OPERANDS:
            chain: list[int | None] = [None, *(j for j in arch.keeping_levels(t) if j <= self.root[t])]
            for child, parent in zip(chain, chain[1:], strict=False):
                assert parent is not None
                tiles, new = self.child_tiles(child, t)
                if child is not None:
                    new_tiles[arch.levels[child].name][t] += int(new.sum())
                parents = self.units // self.units_below(parent)
                if t == "O":
                    self._partial_sums(tiles, new, parents, counts, child, parent)
                else:
                    self._read_only(tiles, new, parents, counts, child, parent, t)
                link = arch.link_of(t)
                if link is not None and self._spans(child, parent, link.slots[0]):
                    self._forward(tiles, new, child, parent, t, link.slots, counts)
        accesses = {lv.name: {t: SimAccess(c.reads, c.writes, c.network, c.link) for t, c in sorted(counts[j].items())}
                    for j, lv in enumerate(arch.levels)}
        iters = np.zeros((self.steps, self.units), np.int64)
        for d in self.nest.dims:
            iters = iters * self.nest.sizes[d] + self.x[d]
        return SimResult(
            accesses=accesses,
            macs=self.steps * self.units,
            distinct_iterations=int(np.unique(iters).size),
            temporal_steps=self.steps,
            mac_units=self.units,
            new_tiles=new_tiles,
            instances={lv.name: self.units // self.units_below(j) for j, lv in enumerate(arch.levels)},
            link_load=dict(self.link_load),
        )

    # ------------------------------------------------------------------------------------------------ links
    def _spans(self, child: int | None, parent: int, slot: int) -> bool:
        return (-1 if child is None else self.tslot[child]) < slot < self.tslot[parent]

    def _predecessors(self, child: int | None, slots: tuple[int, ...]) -> np.ndarray:
        """For every instance of ``child`` (None: every MAC unit), the instance that is its link predecessor (-1:
        none): PE coordinates along each linked slot are built from the instance's spatial loop indices there with
        the placement convention (:func:`~.cost.axis_digits`); the predecessor has x-1 on a straight link,
        (x-1, y+1) on a diagonal one, and every other spatial loop index equal."""
        width = 1 if child is None else self.units_below(child)
        inst = self.units // width
        first_unit = np.arange(inst) * width
        above = [(lp, idx[first_unit]) for lp, idx in zip(self.sloops, self.sidx, strict=True)
                 if child is None or lp.slot > self.tslot[child]]
        coords = []
        for k in slots:
            x = np.zeros(inst, np.int64)
            weight = 1
            for d in axis_digits(self.nest, self.arch, self.m, k):
                digit = next(v for lp, v in above if lp.slot == k and lp.dim == d)
                x += digit * weight
                weight *= self.m.factors[d][k]
            coords.append(x)
        others = [v for lp, v in above if lp.slot not in slots]
        index = {(tuple(int(v[i]) for v in others), tuple(int(c[i]) for c in coords)): i for i in range(inst)}
        step = (-1,) if len(slots) == 1 else (-1, 1)
        pred = np.full(inst, -1, np.int64)
        for i in range(inst):
            key = (tuple(int(v[i]) for v in others), tuple(int(c[i]) + s for c, s in zip(coords, step, strict=True)))
            pred[i] = index.get(key, -1)
        return pred

    def _forward(self, tiles: np.ndarray, new: np.ndarray, child: int | None, parent: int, t: str,
                 slots: tuple[int, ...], counts: dict) -> None:
        """A PE takes its new tile over the link when its predecessor gets the identical element set in the same
        block (I, W); for O, a PE leaving a tile passes it to its successor over the link when the successor leaves
        the identical element set at the same moment (the successor adds it in). MACs: one element per step."""
        active = new
        if t == "O":
            active = np.ones_like(new)
            active[:-1] = new[1:]  # the blocks after which each instance leaves its tile
        pred = self._predecessors(child, slots)
        has = np.nonzero(pred >= 0)[0]
        if has.size == 0:
            return
        mine, theirs = tiles[:, has, :], tiles[:, pred[has], :]
        same = np.all(mine == theirs, axis=-1) & active[:, has] & active[:, pred[has]]
        per_pair = (_row_sizes(mine) * same).sum(axis=0)
        forwarded = int(per_pair.sum())
        if forwarded:
            self.link_load[t] = max(self.link_load.get(t, 0), int(per_pair.max()))
        if child is None:
            counts[parent][t].link += forwarded
        else:
            counts[child][t].link += forwarded
            counts[child][t].network -= forwarded

    def _read_only(self, tiles: np.ndarray, new: np.ndarray, parents: int, counts: dict, child: int | None,
                   parent: int, t: str) -> None:
        if child is not None:
            fills = int(_row_sizes(tiles)[new].sum())
            counts[child][t].writes += fills
            counts[child][t].network += fills
        counts[parent][t].reads += int(_row_sizes(_union_under_parents(tiles, new, parents)).sum())

    def _partial_sums(self, tiles: np.ndarray, new: np.ndarray, parents: int, counts: dict, child: int | None,
                      parent: int) -> None:
        # drains: a child leaves its tile when the next block brings a new one, and at the end of the run
        leave = np.ones_like(new)
        leave[:-1] = new[1:]
        drained = _union_under_parents(tiles, leave, parents)
        counts[parent]["O"].writes += int(_row_sizes(drained).sum())
        if child is not None:
            drains = int(_row_sizes(tiles)[leave].sum())
            counts[child]["O"].reads += drains
            counts[child]["O"].network += drains
        # reloads: elements of new tiles the parent instance has handed down before (it holds their partial sums)
        handed = _union_under_parents(tiles, new, parents)  # (blocks, parents, width), in execution order
        n_elems = self.elements["O"][1]
        owner = np.broadcast_to(np.arange(parents, dtype=np.int64)[None, :, None], handed.shape)
        valid = handed != _EMPTY
        events = owner[valid] * n_elems + handed[valid]  # row-major: block by block, parent instance, element
        seen = np.zeros(parents * n_elems, bool)  # per parent instance: elements already handed down
        reloads = 0
        for start in range(0, events.size, _CHUNK):
            chunk = events[start:start + _CHUNK]
            before = seen[chunk]
            _, first = np.unique(chunk, return_index=True)
            again = np.ones(chunk.size, bool)
            again[first] = False  # first occurrence within this chunk: not handed down earlier in the chunk
            reloads += int(np.count_nonzero(before | again))
            seen[chunk] = True
        counts[parent]["O"].reads += reloads
        if child is not None:
            counts[child]["O"].writes += reloads
            counts[child]["O"].network += reloads


def _counters(factors: list[int], total: int) -> list[np.ndarray]:
    """Values of nested loop counters (first loop outermost) over ``total`` iterations of the nest."""
    out = []
    inner = total
    n = np.arange(total, dtype=np.int64)
    for fct in factors:
        inner //= fct
        out.append((n // inner) % fct)
    return out


def _stride(factors: tuple[int, ...], slot: int) -> int:
    return math.prod(factors[:slot])


def _distinct_rows(a: np.ndarray) -> np.ndarray:
    """Each row (last axis) of ``a`` as its sorted distinct values, padded with _EMPTY to a common width."""
    if a.shape[-1] == 0:
        return a
    s = np.sort(a, axis=-1)
    dup = np.zeros(s.shape, bool)
    dup[..., 1:] = s[..., 1:] == s[..., :-1]
    s[dup] = _EMPTY
    s.sort(axis=-1)
    width = int((s != _EMPTY).sum(axis=-1).max(initial=0))
    return s[..., :max(width, 1)]


def _row_sizes(rows: np.ndarray) -> np.ndarray:
    return (rows != _EMPTY).sum(axis=-1)


def _union_under_parents(tiles: np.ndarray, active: np.ndarray, parents: int) -> np.ndarray:
    """Per block and parent instance: the distinct elements of the tiles of the active children under it (children
    of one parent instance are consecutive)."""
    blocks, inst, width = tiles.shape
    masked = np.where(active[:, :, None], tiles, _EMPTY)
    return _distinct_rows(masked.reshape(blocks, parents, (inst // parents) * width))


__all__ = ["SimAccess", "SimResult", "TileIdentity", "simulate_mapping"]
