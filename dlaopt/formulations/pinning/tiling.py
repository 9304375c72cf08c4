"""Graph reconstruction for tiling: the pinning graph at tile (chunk) granularity.

The thesis (seed 000, §6.3) could not place an operator whose operands do not fit the scratchpads together, and
capped every oversized tensor to the scratchpad size as a stop-gap; its future work (§8.2, Figure 6.1) is a *graph
reconstructor* that breaks such an operator into a sequence of tile operators, scheduled next to each other, whose
inputs and outputs fit. :func:`tiled_graph` is that reconstructor:

1. **Which operators.** An operator is *oversized* when its whole operands cannot be packed into the scratchpads
   together (:func:`~dlaopt.formulations.pinning.data.pack_operands`). Oversized operators are tiled; so is every
   operator that touches a tensor some tiled operator chunked (a producer and its consumers read and write the same
   chunks). Everything else stays one step on whole-tensor buffers, exactly as in
   :func:`~dlaopt.formulations.pinning.data.untiled_graph` — with nothing oversized the result *is* that graph.
2. **Tile shape per operator.** A tiled operator gets a block size per output axis plus a block of its reduction
   dimension (conv input channels ``C``, matmul contraction ``K``, pool window rows ``R``). Axes are split in the
   preferred order — batch, then the outermost spatial/row axis (H of NCHW, M of a matrix), then channels/columns
   — by keeping the least-preferred axes as large as possible; for an operator with a large weight the weight's
   output-side block (conv ``K``, matmul ``N``) and the reduction block are enumerated, so a reduction split is
   taken only when it is cheaper or the only way to fit input + weight chunks. A candidate is admissible when every
   chunk it implies is at most the chunk target (``chunk_fraction`` × the smallest scratchpad; halved while nothing
   fits, exceeded only by an indivisible row) and the operands of a worst-case tile pack — positions are stepped
   along every axis so tiles straddling chunk boundaries count. Among admissible candidates the one moving the
   fewest bytes wins: every tile's input chunks plus the outputs once (a proxy for DMA traffic without reuse; a
   partial sum stays on chip across the consecutive tiles that accumulate it).
3. **Chunks.** Every tensor gets one uniform grid of chunks. Operators are planned in schedule order: a tiled
   producer's output chunks are its output blocks; a consumer plans around the chunks of its inputs as already
   decided (it reads the chunks that overlap what it needs) and decides the chunks of inputs nobody decided yet —
   graph inputs and weights follow their first tiled consumer (output-channel block × reduction block for a
   weight), and a weight shared by several operators, as in an unrolled LSTM, has one chunking all of them read.
   When no tile shape fits the decided chunks, or adapting to them is far costlier than chunks of its own choosing,
   a consumer asks for its own chunking; requests are merged by taking the finer block per axis (they only ever
   refine) and planning starts over.
4. **Tile steps.** A tiled operator becomes consecutive steps at its place in the schedule, one per output chunk
   (chunks along an axis the operator cannot split — the softmax / layer-norm axis — are merged into one tile) and,
   when the reduction is split, one per reduction block, innermost: the first tile of an output chunk produces
   it, later ones read and update it in place (partial sums). Each tile reads every chunk that overlaps the input
   region its output box and reduction range need, recomputed from the operator's index map (conv rows with
   stride, dilation and padding halo and the channels of its groups, matmul row/column/contraction blocks with
   broadcast batch dims, pool windows, broadcasting, whole reduced axes, concat/split offsets, slice steps,
   transpose permutations, tile wrap-arounds (``o mod d``: one or two ranges per axis), repeat blocks
   (``o // repeats``), and for a reshape the bounding box of the flat index range within each group of axes
   the reshape merges or splits). Output chunks are visited weight-stationary (output-channel blocks outermost)
   when the weight is the larger operand, input-stationary otherwise. A tile's ``macs`` are its share of the
   operator's loop nest (they sum exactly to the operator's MACs) and its ``compute_cycles`` the accelerator's
   cycles for that share (at least one).
5. **Fix-point.** Every tile is packed for real; an operator with a tile that does not pack is re-planned with half
   the chunk target (and, once that cannot help, asks for finer input chunks) until everything packs. When even the
   smallest tile of an operator cannot be placed (a single indivisible row larger than the scratchpads, or an
   operand role no scratchpad holds) :class:`~dlaopt.errors.InfeasibleInstanceError` names the operator, the
   tensor, its bytes and the scratchpad capacities.

Buffers of a chunked tensor are named by their box, e.g. ``conv1.out[0:1,0:64,0:28,0:112]``; tile steps
``conv1/t3``, with ``Step.tile = {"out": {tensor: box}, "reduce": (lo, hi) or None, "dim": "C" | "K" | "R" | None}``.

:func:`~dlaopt.formulations.pinning.tiling_check.verify_tiling` checks a reconstructed graph independently of the
tiler: it rederives every tile's input
needs from the operator's loop nest (interval arithmetic on the affine index expressions, exact flat-index runs for
reshapes) and checks partitions, reduction ranges, coverage and MAC totals.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import product
from typing import Any

import numpy as np

from dlaopt.errors import InfeasibleInstanceError
from dlaopt.formulations.pinning.boxes import Range, box_text, volume
from dlaopt.formulations.pinning.data import (
    Box,
    Buffer,
    Operand,
    PinningGraph,
    Scratchpad,
    Step,
    StepCycles,
    full_box,
    pack_operands,
    untiled_graph,
)
from dlaopt.hardware.model import Accelerator
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind
from dlaopt.workload.tensor import Tensor, TensorRole

__all__ = ["LayerTile", "tiled_graph"]

_CONV_KINDS = (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D)


# ================================================================================================== box helpers
def _clip(lo: int, hi: int, size: int) -> Range | None:
    lo, hi = max(lo, 0), min(hi, size)
    return (lo, hi) if lo < hi else None


# ================================================================================================== operator geometry
@dataclass(frozen=True)
class _Geo:
    """What the tiler needs to know about one operator's loop nest."""

    op: Operator
    ins: tuple[Tensor, ...]
    outs: tuple[Tensor, ...]
    red_dim: str | None  # reduction dimension a tile may split ("C", "K", "R")
    red_size: int
    unsplit: frozenset[int]  # output axes a tile never splits
    priority: tuple[int, ...]  # splittable output axes, the one to split first first
    weight_pos: int | None  # input whose chunking follows this operator's output-side block (conv/matmul)
    weight_axis: int | None  # the output axis indexing that input (conv K, matmul N)

    @property
    def main(self) -> int:
        """The largest output (the one a representative tile is drawn from)."""
        return max(range(len(self.outs)), key=lambda j: self.outs[j].numel)


def _split_priority(rank: int) -> tuple[int, ...]:
    if rank == 4:  # NCHW: batch, rows, channels, columns
        return (0, 2, 1, 3)
    return tuple(range(rank))  # batch dims, rows (M), columns


def _pool_geometry(op: Operator, x: Sequence[int]) -> tuple[int, int, int, int, int, int, int, int]:
    """(R, S, sh, sw, pt, pl) of a pool, global pools as a window over the whole plane."""
    if op.attrs["global"]:
        return x[2], x[3], 1, 1, 0, 0, 0, 0
    (r, s), (sh, sw) = op.attrs["kernel"], op.attrs["stride"]
    pt, pl, pb, pr = op.attrs["padding"]
    return r, s, sh, sw, pt, pl, pb, pr


def _make_geo(op: Operator, tensors: dict[str, Tensor]) -> _Geo:
    ins = tuple(tensors[t] for t in op.inputs)
    outs = tuple(tensors[t] for t in op.outputs)
    rank = len(outs[0].shape)
    red_dim: str | None = None
    red_size = 0
    unsplit: set[int] = set()
    weight_pos = weight_axis = None
    if op.kind in _CONV_KINDS:
        red_dim, red_size = "C", ins[1].shape[1]
        weight_pos, weight_axis = 1, 1
    elif op.kind == OpKind.MATMUL:
        red_dim, red_size = "K", ins[0].shape[-1]
        weight_pos, weight_axis = 1, rank - 1
    elif op.kind == OpKind.POOL:
        red_dim, red_size = "R", _pool_geometry(op, ins[0].shape)[0]
    elif op.kind == OpKind.SOFTMAX or (op.kind == OpKind.NORM and op.attrs["norm"] == "layernorm"):
        unsplit.add(op.attrs["axis"] % rank)
    # a reshape splits outermost axes first so its tiles stay contiguous runs of the flat index
    priority = tuple(range(rank)) if op.kind == OpKind.RESHAPE else _split_priority(rank)
    priority = tuple(a for a in priority if a not in unsplit)
    return _Geo(op, ins, outs, red_dim, red_size, frozenset(unsplit), priority, weight_pos, weight_axis)


def _window(o: Range, stride: int, pad: int, taps: Range, dil: int, size: int) -> Range | None:
    """Input positions read by output positions ``o`` through filter taps ``taps`` (clipped: padding)."""
    return _clip(o[0] * stride - pad + taps[0] * dil, (o[1] - 1) * stride - pad + (taps[1] - 1) * dil + 1, size)


def _wrapped(o: Range, size: int) -> list[Range]:
    """Input positions ``{i mod size : i in o}`` (a tile's index map) as one or two ranges."""
    if o[1] - o[0] >= size:
        return [(0, size)]
    lo, last = o[0] % size, (o[1] - 1) % size
    return [(lo, last + 1)] if lo <= last else [(0, last + 1), (lo, size)]


def _unravel(flat: int, shape: Sequence[int]) -> list[int]:
    idx = []
    for d in reversed(shape):
        flat, r = divmod(flat, d)
        idx.append(r)
    return idx[::-1]


def _ravel(idx: Sequence[int], shape: Sequence[int]) -> int:
    flat = 0
    for i, d in zip(idx, shape, strict=True):
        flat = flat * d + i
    return flat


def _flat_bbox(shape: Sequence[int], f0: int, f1: int) -> Box:
    """Bounding box of the flat index range [f0, f1) of ``shape`` (row-major)."""
    lo, hi = _unravel(f0, shape), _unravel(f1 - 1, shape)
    box: list[Range] = []
    for d in range(len(shape)):
        if lo[d] == hi[d]:
            box.append((lo[d], lo[d] + 1))
            continue
        box.append((lo[d], hi[d] + 1))
        box.extend((0, s) for s in shape[d + 1:])
        break
    return tuple(box)


def _reshape_groups(ishape: Sequence[int], oshape: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """The finest split of a reshape into consecutive axis groups of equal element counts (input axes, output
    axes): within a group the flat index is shared, across groups the reshape is a plain product."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(ishape) or j < len(oshape):
        ia: list[int] = []
        oa: list[int] = []
        pi = po = 1
        while True:
            if pi <= po and i < len(ishape) and (pi < po or not ia or ishape[i] == 1):
                ia.append(i)
                pi *= ishape[i]
                i += 1
            elif j < len(oshape) and (po < pi or not oa or oshape[j] == 1):
                oa.append(j)
                po *= oshape[j]
                j += 1
            else:
                break
        groups.append((ia, oa))
    return groups


def _regions(g: _Geo, j: int, box: Box, red: Range | None) -> list[list[Box]]:
    """Per input of the operator: the boxes a tile writing ``box`` of output ``j`` over reduction ``red`` reads."""
    op, ins, a = g.op, g.ins, g.op.attrs
    kind = op.kind
    if kind in _CONV_KINDS:
        _, _, h, w = ins[0].shape
        k_all, cg, r, s = ins[1].shape
        kpg = k_all // a["groups"]
        (sh, sw), (dh, dw), (pt, pl, _, _) = a["stride"], a["dilation"], a["padding"]
        n, k, p, q = box
        c = red or (0, cg)
        rows, cols = _window(p, sh, pt, (0, r), dh, h), _window(q, sw, pl, (0, s), dw, w)
        g0, g1 = k[0] // kpg, (k[1] - 1) // kpg
        chans = [(g0 * cg, (g1 + 1) * cg)] if c == (0, cg) else [(gi * cg + c[0], gi * cg + c[1]) for gi in
                                                                 range(g0, g1 + 1)]
        xb = [] if rows is None or cols is None else [(n, ch, rows, cols) for ch in chans]
        return [xb, [(k, c, (0, r), (0, s))]]
    if kind == OpKind.MATMUL:
        bo = len(g.outs[0].shape) - 2
        kr = red or (0, g.red_size)

        def operand(t: Tensor, last: tuple[Range, Range]) -> Box:
            rb = len(t.shape) - 2
            return tuple((0, 1) if t.shape[i] == 1 else box[bo - rb + i] for i in range(rb)) + last

        return [[operand(ins[0], (box[-2], kr))], [operand(ins[1], (kr, box[-1]))]]
    if kind == OpKind.POOL:
        x = ins[0].shape
        r, s, sh, sw, pt, pl, _, _ = _pool_geometry(op, x)
        rows = _window(box[2], sh, pt, red or (0, r), 1, x[2])
        cols = _window(box[3], sw, pl, (0, s), 1, x[3])
        return [[] if rows is None or cols is None else [(box[0], box[1], rows, cols)]]
    if kind == OpKind.ELEMENTWISE:
        out: list[list[Box]] = []
        for t in ins:
            off = len(box) - len(t.shape)
            out.append([tuple((0, 1) if d == 1 else box[off + i] for i, d in enumerate(t.shape))])
        return out
    if kind == OpKind.ACTIVATION:
        return [[box]]
    if kind in (OpKind.SOFTMAX, OpKind.NORM):
        ax = a["axis"] % len(box)
        xbox = box
        if kind == OpKind.SOFTMAX or a["norm"] == "layernorm":
            xbox = box[:ax] + ((0, ins[0].shape[ax]),) + box[ax + 1:]
        res = [[xbox]]
        for t in ins[1:]:
            res.append([_flat_bbox(t.shape, box[ax][0], box[ax][1])])
        return res
    if kind == OpKind.CONCAT:
        ax = a["axis"] % len(box)
        res, off = [], 0
        for t in ins:
            d = t.shape[ax]
            lo, hi = max(box[ax][0], off), min(box[ax][1], off + d)
            res.append([box[:ax] + ((lo - off, hi - off),) + box[ax + 1:]] if lo < hi else [])
            off += d
        return res
    if kind == OpKind.SPLIT:
        ax = a["axis"] % len(box)
        off = sum(a["sizes"][:j])
        return [[box[:ax] + ((box[ax][0] + off, box[ax][1] + off),) + box[ax + 1:]]]
    if kind == OpKind.SLICE:
        return [[tuple((st + lo * sp, st + (hi - 1) * sp + 1)
                       for (lo, hi), st, sp in zip(box, a["starts"], a["steps"], strict=True))]]
    if kind == OpKind.TRANSPOSE:
        inv = [(0, 0)] * len(box)
        for i, p in enumerate(a["perm"]):
            inv[p] = box[i]
        return [[tuple(inv)]]
    if kind == OpKind.RESHAPE:
        ishape, oshape = ins[0].shape, g.outs[0].shape
        res_box: list[Range] = []
        for ia, oa in _reshape_groups(ishape, oshape):
            sub_o = [oshape[x] for x in oa]
            f0 = _ravel([box[x][0] for x in oa], sub_o)
            f1 = _ravel([box[x][1] - 1 for x in oa], sub_o) + 1
            res_box.extend(_flat_bbox([ishape[x] for x in ia], f0, f1))
        return [[tuple(res_box)]]
    if kind == OpKind.TILE:  # output index o reads input index o mod d: a range that wraps reads two pieces
        per_axis = [_wrapped(r, d) for r, d in zip(box, ins[0].shape, strict=True)]
        return [[tuple(b) for b in product(*per_axis)]]
    if kind == OpKind.REPEAT:  # output index o reads input index o // repeats along the axis
        ax, rep = a["axis"] % len(box), a["repeats"]
        return [[box[:ax] + ((box[ax][0] // rep, (box[ax][1] - 1) // rep + 1),) + box[ax + 1:]]]
    raise AssertionError(f"no tiling rule for {kind}")  # pragma: no cover - exhaustive over OpKind


def _proposals(g: _Geo, ob: Sequence[int], rb: int) -> list[tuple[int, ...]]:
    """Per input: the chunk block this tile shape would like it to have (chunks aligned with the tiles)."""
    op, ins, a = g.op, g.ins, g.op.attrs
    kind = op.kind
    res: list[tuple[int, ...]]
    if kind in _CONV_KINDS:
        n, c, h, w = ins[0].shape
        k_all, cg, r, s = ins[1].shape
        kpg = k_all // a["groups"]
        _, _, p, q = g.outs[0].shape
        (sh, sw) = a["stride"]
        chans = cg * -(-ob[1] // kpg) if rb >= cg else rb
        rows = h if ob[2] >= p else ob[2] * sh
        cols = w if ob[3] >= q else ob[3] * sw
        res = [(ob[0], chans, rows, cols), (ob[1], rb, r, s)]
    elif kind == OpKind.MATMUL:
        bo = len(g.outs[0].shape) - 2

        def batch(t: Tensor) -> tuple[int, ...]:
            rbk = len(t.shape) - 2
            return tuple(1 if t.shape[i] == 1 else ob[bo - rbk + i] for i in range(rbk))

        res = [batch(ins[0]) + (ob[-2], rb), batch(ins[1]) + (rb, ob[-1])]
    elif kind == OpKind.POOL:
        x = ins[0].shape
        r, _, sh, sw, *_ = _pool_geometry(op, x)
        _, _, p, q = g.outs[0].shape
        split_rows = rb < r if a["global"] else ob[2] < p or rb < r
        rows = (rb if a["global"] else ob[2] * sh) if split_rows else x[2]
        res = [(ob[0], ob[1], rows, x[3] if ob[3] >= q else ob[3] * sw)]
    elif kind == OpKind.ELEMENTWISE:
        res = []
        for t in ins:
            off = len(ob) - len(t.shape)
            res.append(tuple(1 if d == 1 else ob[off + i] for i, d in enumerate(t.shape)))
    elif kind in (OpKind.ACTIVATION, OpKind.SOFTMAX, OpKind.NORM, OpKind.CONCAT, OpKind.SPLIT):
        res = [tuple(ob) for _ in ins]
        if kind == OpKind.NORM:
            ax = a["axis"] % len(ob)
            res = res[:1] + [(ob[ax],) if len(t.shape) == 1 else t.shape for t in ins[1:]]
    elif kind == OpKind.SLICE:
        res = [tuple(b * sp for b, sp in zip(ob, a["steps"], strict=True))]
    elif kind == OpKind.TRANSPOSE:
        inv = [1] * len(ob)
        for i, p in enumerate(a["perm"]):
            inv[p] = ob[i]
        res = [tuple(inv)]
    elif kind == OpKind.RESHAPE:
        box = tuple((0, min(b, d)) for b, d in zip(ob, g.outs[0].shape, strict=True))
        res = [tuple(hi - lo for lo, hi in _regions(g, 0, box, None)[0][0])]
    elif kind == OpKind.TILE:
        res = [tuple(ob)]  # capped to the input's shape below
    elif kind == OpKind.REPEAT:
        ax = a["axis"] % len(ob)
        res = [tuple(max(1, b // a["repeats"]) if i == ax else b for i, b in enumerate(ob))]
    else:  # pragma: no cover - exhaustive over OpKind
        raise AssertionError(kind)
    return [tuple(max(1, min(b, d)) for b, d in zip(blk, t.shape, strict=True)) for blk, t in zip(res, ins,
                                                                                                   strict=True)]


def _tile_dims(g: _Geo, boxes: dict[int, Box], red: Range | None) -> dict[str, int]:
    """The loop dimensions of one tile (their product is its MACs / pool window operations)."""
    op = g.op
    ext = [hi - lo for lo, hi in next(iter(boxes.values()))]
    rext = (red[1] - red[0]) if red else g.red_size
    if op.kind in _CONV_KINDS:
        _, _, r, s = g.ins[1].shape
        return {"N": ext[0], "G": 1, "K": ext[1], "C": rext, "P": ext[2], "Q": ext[3], "R": r, "S": s}
    if op.kind == OpKind.MATMUL:
        return {"B": math.prod(ext[:-2]), "M": ext[-2], "N": ext[-1], "K": rext}
    if op.kind == OpKind.POOL:
        s = _pool_geometry(op, g.ins[0].shape)[1]
        return {"N": ext[0], "C": ext[1], "P": ext[2], "Q": ext[3], "R": rext, "S": s}
    return {"E": sum(volume(b) for b in boxes.values())}


# ================================================================================================== grids
@dataclass(frozen=True)
class _Grid:
    """A uniform chunk grid over a tensor (the last chunk of an axis may be smaller)."""

    tensor: Tensor
    block: tuple[int, ...]

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(-(-d // b) for d, b in zip(self.tensor.shape, self.block, strict=True))

    @property
    def whole(self) -> bool:
        return self.block == self.tensor.shape

    @property
    def n(self) -> int:
        return math.prod(self.counts)

    def region(self, flat: int) -> Box:
        idx = _unravel(flat, self.counts)
        return tuple((i * b, min(d, (i + 1) * b)) for i, b, d in zip(idx, self.block, self.tensor.shape,
                                                                     strict=True))

    @cached_property
    def sizes(self) -> list[int]:
        """Bytes of every chunk, by flat index."""
        ext = [np.minimum(b, d - np.arange(n) * b) for b, d, n in zip(self.block, self.tensor.shape, self.counts,
                                                                      strict=True)]
        vol = np.ones(1, dtype=np.int64)
        for e in ext:
            vol = np.multiply.outer(vol, e).ravel()
        return (vol * self.tensor.dtype_bytes).tolist()

    def size(self, flat: int) -> int:
        return self.sizes[flat]

    def ids(self, box: Box) -> list[int]:
        """Flat indices of the chunks overlapping ``box`` (row-major)."""
        ranges = [range(lo // b, (hi - 1) // b + 1) for (lo, hi), b in zip(box, self.block, strict=True)]
        counts = self.counts
        return [_ravel(idx, counts) for idx in product(*ranges)]


# ================================================================================================== planning
@dataclass(frozen=True)
class _Plan:
    ob: tuple[int, ...]  # block per axis of the main output (capped to each output's shape)
    rb: int  # reduction block (== red_size: not split; 0 when the operator has no reduction dimension)
    target: float  # chunk target it was planned for
    score: float = 0.0  # estimated operand bytes over all its tiles
    aligned: bool = False  # blocks are whole multiples of the operator's layer tile


def _candidates(size: int) -> list[int]:
    """Block sizes to try along an axis of ``size``: ceil(size / n) for n = 1, 2, 3, 4, 6, 8, 12, … (descending)."""
    vals = {size, 1}
    n = 1
    while n < size:
        vals.add(-(-size // n))
        vals.add(-(-size // (n + n // 2)) if n > 1 else -(-size // 2))
        n *= 2
    return sorted(vals, reverse=True)


def _candidates_with(size: int, unit: int | None) -> list[int]:
    """:func:`_candidates`, plus the multiples ``unit · ceil(size / (unit · n))`` of a layer tile's block."""
    vals = set(_candidates(size))
    if unit is not None and 1 < unit < size:
        groups = -(-size // unit)
        vals.update(unit * c for c in _candidates(groups) if unit * c < size)
    return sorted(vals, reverse=True)


@dataclass(frozen=True)
class LayerTile:
    """The on-chip tile a mapping chose for one layer: a block per axis of its (main) output and a block of its
    reduction dimension (None: not split). Chunks of a tiled operator are whole multiples of it when that fits."""

    block: tuple[int, ...]
    reduce: int | None = None


class _Packer:
    """Memoised placement checks: exact (``pack_operands``) for real steps, best-fit-decreasing for estimates."""

    def __init__(self, spms: Sequence[Scratchpad]) -> None:
        self.spms = tuple(spms)
        self.total = sum(s.capacity for s in spms)
        self.exact_memo: dict[tuple[tuple[int, TensorRole, bool, bool], ...], bool] = {}
        self.quick_memo: dict[tuple[Operand, ...], bool] = {}

    def exact(self, key: tuple[tuple[int, TensorRole, bool, bool], ...]) -> bool:
        """Do operands (size, role, read, written) — in step order, as ``step_operands`` lists them — pack?"""
        res = self.exact_memo.get(key)
        if res is None:
            res = (sum(k[0] for k in key) <= self.total
                   and pack_operands([Operand(*k) for k in key], self.spms) is not None)
            self.exact_memo[key] = res
        return res

    def quick(self, ops: tuple[Operand, ...]) -> bool:
        key = tuple(sorted(ops, key=lambda o: (-o.size, o.role, o.read, o.written)))
        res = self.quick_memo.get(key)
        if res is None:
            res = self._best_fit(key)
            self.quick_memo[key] = res
        return res

    def _best_fit(self, ops: tuple[Operand, ...]) -> bool:
        if sum(o.size for o in ops) > self.total:
            return False
        free = [s.capacity for s in self.spms]
        for o in ops:
            best = -1
            for k, s in enumerate(self.spms):
                if free[k] >= o.size and s.allows(o.role, read=o.read, written=o.written) and (
                        best < 0 or free[k] < free[best]):
                    best = k
            if best < 0:
                return False
            free[best] -= o.size
        return True


Fixed = tuple[tuple[int, ...] | None, ...]  # per input: its chunk block if already decided, else None (free)
_REFINE_RATIO = 4.0  # a consumer whose decided input chunks forced tiny tiles asks for its own chunks when those
# would cut its bytes by this factor (by four times it otherwise: finer chunks cost their producer too)
_MAX_OPERANDS = 256  # a tile reading more chunks than this is not admissible (keeps placement checks cheap)


def _worst_count(lo: int, hi: int, shift: int, positions: int, block: int, size: int) -> int:
    """Most chunks of ``block`` an interval [lo + shift·(i-1), hi + shift·(i-1)) overlaps over tile positions
    i = 0 … positions-1 (clipped to the axis); the start's offset in its chunk repeats every block / gcd(shift,
    block) positions, and beyond a few positions the worst offset of that cycle is taken."""
    if shift == 0 or positions <= 1:
        x, y = max(lo, 0), min(hi, size)
        return (y - 1) // block - x // block + 1 if x < y else 0
    g = math.gcd(shift, block)
    if positions > 64 or (positions > 8 and positions > block // g):
        worst_offset = block - g + lo % g
        return min(-(-size // block), (worst_offset + hi - lo - 1) // block + 1)
    worst = 0
    for i in range(positions):
        x, y = max(lo + shift * (i - 1), 0), min(hi + shift * (i - 1), size)
        if x < y:
            worst = max(worst, (y - 1) // block - x // block + 1)
    return worst


def _estimate(g: _Geo, ob: Sequence[int], rb: int, target: float, strict: bool, fixed: Fixed,
              packer: _Packer) -> tuple[float, int] | None:
    """(bytes moved without reuse — every tile's input chunks, plus the outputs once, as a partial sum stays on
    chip across its consecutive tiles —, number of tiles) of a tile shape, or None if it is not admissible.

    The operands are those of a worst-case tile: its output block, and for each input the most chunks of its
    decided grid (``fixed``), of the grid this tile shape proposes (free inputs above the target) or the whole
    tensor, that the input region of any tile position overlaps (positions are stepped along each output axis and
    the reduction, which catches tiles straddling chunk boundaries)."""
    j = g.main
    out_t = g.outs[j]
    oshape = out_t.shape
    bl = [min(b, d) for b, d in zip(ob, oshape, strict=True)]
    counts = [-(-d // b) for b, d in zip(bl, oshape, strict=True)]
    out_bytes = math.prod(bl) * out_t.dtype_bytes
    if strict and out_bytes > target:
        return None
    nred = -(-g.red_size // rb) if g.red_dim and rb < g.red_size else 1
    ntiles = nred * sum(math.prod(-(-d // min(b, d)) for b, d in zip(ob, o.shape, strict=True)) for o in g.outs)

    def at(idx: Sequence[int], r: int) -> tuple[Box, Range | None]:
        box = tuple((i * b, min(d, (i + 1) * b)) for i, b, d in zip(idx, bl, oshape, strict=True))
        return box, ((r * rb, min(g.red_size, (r + 1) * rb)) if nred > 1 else None)

    base_idx = [1 if n > 1 else 0 for n in counts]
    base_r = 1 if nred > 1 else 0
    box, red = at(base_idx, base_r)
    base = _regions(g, j, box, red)
    moves: list[tuple[list[list[Box]], int, int]] | None = None
    items = [Operand(out_bytes, out_t.role, red is not None, True)]
    total = 0  # input bytes of one tile (a partial sum stays on chip across its consecutive tiles)
    props = _proposals(g, ob, rb)
    seen: set[str] = set()
    for i, t in enumerate(g.ins):
        if t.name in seen or not base[i]:
            continue
        seen.add(t.name)
        blk = fixed[i]
        if blk is None:
            if t.size_bytes <= target:
                blk = t.shape
            else:
                blk = props[i]
                if strict and math.prod(blk) * t.dtype_bytes > target:
                    return None
        csize = math.prod(blk) * t.dtype_bytes
        if blk == t.shape:
            count = 1
        else:
            if moves is None:
                # neighbouring positions along every axis with several blocks: (regions there, step, positions)
                moves = []
                for a, n in enumerate(counts):
                    if n > 1:
                        idx = list(base_idx)
                        idx[a] = 2 if n > 2 else 0
                        moves.append((_regions(g, j, *at(idx, base_r)), idx[a] - 1, n))
                if nred > 1:
                    r = 2 if nred > 2 else 0
                    moves.append((_regions(g, j, *at(base_idx, r)), r - 1, nred))
            count = 0
            for k, rbox in enumerate(base[i]):
                n_chunks = 1
                for dim, ((lo, hi), c, size) in enumerate(zip(rbox, blk, t.shape, strict=True)):
                    worst = _worst_count(lo, hi, 0, 1, c, size)
                    for regs, step, positions in moves:
                        if len(regs[i]) > k:
                            shift = (regs[i][k][dim][0] - lo) * step
                            if shift > 0:
                                worst = max(worst, _worst_count(lo, hi, shift, positions, c, size))
                    n_chunks *= worst
                count += n_chunks
        total += csize * count
        if count + len(items) > _MAX_OPERANDS or total + out_bytes > packer.total * 2:
            return None
        items.extend([Operand(csize, t.role, True, False)] * count)
    if not packer.quick(tuple(items)):
        return None
    return float(total) * ntiles + sum(o.size_bytes for o in g.outs), ntiles


def _aligned(values: list[int], unit: int | None, size: int) -> list[int]:
    """The values that are whole multiples of ``unit`` (or the whole extent ``size``); all of them without a unit."""
    if unit is None or unit <= 1:
        return values
    return [v for v in values if v % unit == 0 or v == size]


def _search(g: _Geo, target: float, strict: bool, fixed: Fixed, cap: tuple[int, ...] | None,
            packer: _Packer, align: LayerTile | None = None) -> _Plan | None:
    """The best admissible tile shape (see the module docstring) with blocks at most ``cap`` (the output chunks
    consumers asked for) and, with ``align``, whole multiples of a layer tile along every axis, or None."""
    oshape = g.outs[g.main].shape
    rank = len(oshape)
    units = align.block if align is not None else (None,) * rank
    cands = {a: _aligned([v for v in _candidates_with(oshape[a], units[a]) if cap is None or v <= cap[a]], units[a],
                         oshape[a]) for a in g.priority}
    red_unit = align.reduce if align is not None else None
    red_cands = _aligned(_candidates_with(g.red_size, red_unit), red_unit, g.red_size) if g.red_dim else [0]
    w = g.ins[g.weight_pos] if g.weight_pos is not None else None
    enum_w = (w is not None and g.weight_axis in cands and fixed[g.weight_pos] is None  # type: ignore[index]
              and w.size_bytes > target)
    greedy = [a for a in reversed(g.priority) if not (enum_w and a == g.weight_axis)]
    smallest = [1 if a in cands else d for a, d in enumerate(oshape)]
    if all(_estimate(g, smallest, r, target, strict, fixed, packer) is None for r in {red_cands[0], red_cands[-1]}):
        return None  # not even the smallest tiles are admissible
    best: tuple[tuple[float, int, tuple[int, ...], int], _Plan] | None = None
    stale = 0
    for rb in red_cands:
        if best is not None and stale >= 3:  # smaller reduction blocks stopped paying off
            break
        stale += 1
        wvals: list[int | None] = [None]
        if enum_w:
            assert w is not None and g.weight_axis is not None and g.weight_pos is not None
            props = [(v, _proposals(g, [v if a == g.weight_axis else 1 for a in range(rank)], rb)[g.weight_pos])
                     for v in cands[g.weight_axis]]
            ok = [v for v, blk in props if math.prod(blk) * w.dtype_bytes <= target]
            wvals = list(ok[:3] if strict else [v for v, _ in props])
        for v in wvals:
            ob = list(oshape)
            if v is not None:
                ob[g.weight_axis] = v  # type: ignore[index]
            feasible = True
            for idx, a in enumerate(greedy):
                trial = list(ob)
                for b in greedy[idx + 1:]:  # axes to be split before this one: as small as need be
                    trial[b] = 1
                for val in cands[a]:  # the largest admissible block (not monotone: alignment with chunks)
                    trial[a] = val
                    if _estimate(g, trial, rb, target, strict, fixed, packer) is not None:
                        ob[a] = val
                        break
                else:
                    feasible = False
                    break
            if not feasible:
                continue
            est = _estimate(g, ob, rb, target, strict, fixed, packer)
            if est is None:
                continue
            key = (est[0], est[1], tuple(-ob[a] for a in reversed(g.priority)), -rb)
            if best is None or key < best[0]:
                best = (key, _Plan(tuple(ob), rb if g.red_dim else 0, target, est[0]))
                stale = 0
    return best[1] if best else None


# ================================================================================================== the tiler
def _propose(blocks: dict[str, list[int]], t: Tensor, blk: Sequence[int]) -> bool:
    """Merge a chunk-block proposal for ``t`` (the element-wise minimum of all proposals); True if it got finer."""
    cur = blocks.setdefault(t.name, list(t.shape))
    changed = False
    for a, b in enumerate(blk):
        b = max(1, min(b, t.shape[a]))
        if b < cur[a]:
            cur[a] = b
            changed = True
    return changed


class _Tiler:
    def __init__(self, workload: Workload, accelerator: Accelerator, chunk_fraction: float,
                 layer_tiles: Mapping[str, LayerTile], cycles: StepCycles) -> None:
        if not 0 < chunk_fraction <= 1:
            raise ValueError(f"chunk_fraction must be in (0, 1], got {chunk_fraction}")
        self.wl = workload
        self.acc = accelerator
        self.layer_tiles = dict(layer_tiles)
        self.cycles = cycles
        self.aligned_ops: set[str] = set()  # operators whose chunks follow their layer tile
        self.spms = tuple(Scratchpad.from_memory(m) for m in accelerator.scratchpads)
        if not self.spms:
            raise InfeasibleInstanceError("the accelerator has no scratchpad to place operands in")
        self.target0 = chunk_fraction * min(s.capacity for s in self.spms)
        self.packer = _Packer(self.spms)
        self.tensors = dict(workload.tensors)
        self.geos = [_make_geo(op, self.tensors) for op in workload.operators]
        self.plan_memo: dict[tuple[Any, ...], _Plan | None] = {}

    # ------------------------------------------------------------------------------------------- helpers
    def _caps(self) -> str:
        return ", ".join(f"{s.name} {s.capacity} B" for s in self.spms)

    def _whole_fits(self, op: Operator) -> bool:
        return self.packer.exact(tuple((self.tensors[t].size_bytes, self.tensors[t].role, t in op.inputs,
                                        t in op.outputs) for t in dict.fromkeys(op.inputs + op.outputs)))

    def _signature(self, g: _Geo) -> tuple[Any, ...]:
        return (g.op.kind, tuple(sorted((k, repr(v)) for k, v in g.op.attrs.items())),
                tuple((t.shape, t.dtype_bytes, t.role, g.op.inputs.index(t.name)) for t in g.ins),
                tuple((t.shape, t.dtype_bytes, t.role) for t in g.outs))

    def plan(self, i: int, target: float, fixed: Fixed, cap: tuple[int, ...] | None = None) -> _Plan | None:
        """The tile shape of operator ``i`` for a chunk target, its inputs' decided grids fixed and its output
        blocks capped (None if none fits: the target is halved while that helps, then chunks above the target are
        allowed if they pack)."""
        g = self.geos[i]
        align = self._layer_tile(g)
        key = (self._signature(g), target, fixed, cap, align)
        if key not in self.plan_memo:
            plan = None
            for unit in ((align, None) if align is not None else (None,)):  # the layer tile's multiples first
                for strict in (True, False):
                    t = target
                    while plan is None and t >= 0.5:
                        plan = _search(g, t, strict, fixed, cap, self.packer, unit)
                        t /= 2
                    if plan is not None:
                        break
                if plan is not None:
                    plan = replace(plan, aligned=unit is not None)
                    break
            self.plan_memo[key] = plan
        return self.plan_memo[key]

    def _layer_tile(self, g: _Geo) -> LayerTile | None:
        """The layer tile of ``g``'s operator, clipped to its output and reduction (None when none was given)."""
        lt = self.layer_tiles.get(g.op.name)
        if lt is None:
            return None
        oshape = g.outs[g.main].shape
        if len(lt.block) != len(oshape):
            raise ValueError(f"layer tile of '{g.op.name}': {len(lt.block)} blocks for a rank-{len(oshape)} output")
        block = tuple(max(1, min(b, d)) for b, d in zip(lt.block, oshape, strict=True))
        red = None if lt.reduce is None or not g.red_dim else max(1, min(lt.reduce, g.red_size))
        return LayerTile(block, red)

    def request_finer(self, requests: dict[str, list[int]], i: int, target: float) -> bool:
        """Ask for the input chunks operator ``i`` would choose were all its inputs free (an upstream grid that
        makes every tile of it too big gets refined); True if some request got finer."""
        g = self.geos[i]
        plan = self.plan(i, target, (None,) * len(g.ins))
        if plan is None:
            raise self._infeasible(g)
        changed = False
        for t, blk in zip(g.ins, _proposals(g, plan.ob, plan.rb), strict=True):
            if t.size_bytes > plan.target:
                changed |= _propose(requests, t, blk)
        return changed

    def _infeasible(self, g: _Geo, detail: str = "") -> InfeasibleInstanceError:
        """Explain why the smallest tile of ``g`` cannot be placed."""
        op = g.op
        for t in dict.fromkeys(g.ins + g.outs):
            written = t in g.outs
            if not any(s.allows(t.role, read=not written, written=written) for s in self.spms):
                return InfeasibleInstanceError(
                    f"operator '{op.name}': no scratchpad may hold its {'output' if written else 'input'} tensor "
                    f"'{t.name}' ({t.size_bytes} B, role {t.role.value}): none both holds role {t.role.value} and "
                    f"may be {'written' if written else 'read'} (access "
                    f"{', '.join(f'{s.name} {s.access.value}' for s in self.spms)}); scratchpads: {self._caps()}")
        oshape = g.outs[g.main].shape  # the smallest tile, in the middle (away from clipping padding)
        box = tuple((0, d) if a in g.unsplit else (d // 2, d // 2 + 1) for a, d in enumerate(oshape))
        out = g.outs[g.main]
        accumulate = any(s.allows(out.role, read=True, written=True) for s in self.spms)  # partial sums possible?
        red = (g.red_size // 2, g.red_size // 2 + 1) if g.red_dim and accumulate else None
        regions = _regions(g, g.main, box, red)
        need: dict[Tensor, int] = {}
        for t, boxes in zip(g.ins, regions, strict=True):
            if boxes:
                need[t] = need.get(t, 0) + sum(volume(b) for b in boxes) * t.dtype_bytes
        need[out] = volume(box) * out.dtype_bytes
        worst_t = max(need, key=lambda t: need[t])  # the first (an input) among equals
        worst = need[worst_t]
        if g.red_dim and not accumulate:
            detail = "; ".join(filter(None, [detail, f"no scratchpad both reads and writes {out.role.value} tensors, "
                                                     "so its reduction cannot be split into partial sums"]))
        return InfeasibleInstanceError(
            f"operator '{op.name}' ({op.kind.value}) cannot be tiled to fit the scratchpads: even its smallest tile "
            f"needs {worst} B of tensor '{worst_t.name}' ({worst_t.size_bytes} B in all) together with "
            f"{sum(need.values()) - worst} B of other operands; scratchpad capacities: {self._caps()}"
            + (f" ({detail})" if detail else ""))

    # ------------------------------------------------------------------------------------------- tiles
    def _out_cells(self, g: _Geo, j: int, grid: _Grid, order: Sequence[int]) -> Iterator[tuple[Box, list[int]]]:
        """Tile output boxes of output ``j`` (grid cells, merged along unsplittable axes) and their chunk ids."""
        shape = grid.tensor.shape
        per_axis: list[list[Range]] = []
        for a, (d, b) in enumerate(zip(shape, grid.block, strict=True)):
            per_axis.append([(0, d)] if a in g.unsplit else [(lo, min(d, lo + b)) for lo in range(0, d, b)])
        rank = len(shape)
        for combo in product(*(per_axis[a] for a in order)):
            box_l: list[Range] = [(0, 0)] * rank
            for a, r in zip(order, combo, strict=True):
                box_l[a] = r
            box = tuple(box_l)
            yield box, grid.ids(box)

    def _order(self, g: _Geo) -> tuple[int, ...]:
        rank = len(g.outs[g.main].shape)
        if g.weight_pos is None or g.weight_axis is None:
            return tuple(range(rank))
        w = g.ins[g.weight_pos].size_bytes
        other = sum(t.size_bytes for i, t in enumerate(g.ins) if i != g.weight_pos)
        rest = tuple(a for a in range(rank) if a != g.weight_axis)
        return (g.weight_axis, *rest) if w >= other else (*rest, g.weight_axis)

    def build_tiles(self, i: int, plan: _Plan, grids: dict[str, _Grid]) -> list[dict[str, Any]]:
        g = self.geos[i]
        reds: list[Range | None] = [None]
        if g.red_dim and plan.rb < g.red_size:
            reds = [(lo, min(g.red_size, lo + plan.rb)) for lo in range(0, g.red_size, plan.rb)]
        order = self._order(g)
        tiles = []
        for j, out in enumerate(g.outs):
            for box, out_ids in self._out_cells(g, j, grids[out.name], order):
                writes = [(out.name, f) for f in out_ids]
                for n, red in enumerate(reds):
                    reads: dict[tuple[str, int], None] = {}
                    for t, boxes in zip(g.ins, _regions(g, j, box, red), strict=True):
                        grid = grids[t.name]
                        for rbox in boxes:
                            for f in grid.ids(rbox):
                                reads[(t.name, f)] = None
                    if n > 0:
                        for w in writes:
                            reads[w] = None
                    tiles.append({"out": {out.name: box}, "j": j, "reduce": red, "reads": list(reads),
                                  "writes": writes})
        return tiles

    def tile_fits(self, tile: dict[str, Any], grids: dict[str, _Grid]) -> bool:
        reads, writes = tile["reads"], tile["writes"]
        wset, rset = set(writes), set(reads)
        refs = list(dict.fromkeys(reads + writes))
        if len(refs) > 2 * _MAX_OPERANDS:
            return False
        key = []
        for ref in refs:
            grid = grids[ref[0]]
            key.append((grid.sizes[ref[1]], grid.tensor.role, ref in rset, ref in wset))
        return self.packer.exact(tuple(key))

    # ------------------------------------------------------------------------------------------- driver
    def run(self) -> PinningGraph:
        ops = self.wl.operators
        oversized = {i for i, op in enumerate(ops) if not self._whole_fits(op)}
        if not oversized:
            return untiled_graph(self.wl, self.acc, compute_cycles=self.cycles.overrides)
        tiled = set(oversized)
        targets: dict[int, float] = {}
        requests: dict[str, list[int]] = {}  # chunk blocks asked for by consumers (min-merged, persistent)
        tile_memo: dict[tuple[Any, ...], tuple[list[dict[str, Any]], bool]] = {}
        for _ in range(100_000):
            # one pass in schedule order: a producer decides its outputs' chunks, consumers adapt to them
            blocks: dict[str, list[int]] = {}
            plans: dict[int, _Plan] = {}
            restart = False
            for i in sorted(tiled):
                g = self.geos[i]
                fixed = tuple(tuple(blocks[t.name]) if t.name in blocks else
                              (tuple(requests.get(t.name, t.shape)) if t.role.is_produced else None) for t in g.ins)
                cap = None  # output chunks consumers asked for bound the output blocks
                for out in g.outs:
                    if out.name in requests:
                        cap = tuple(min(c, r) for c, r in zip(cap or g.outs[g.main].shape, requests[out.name],
                                                                strict=True))
                plan = self.plan(i, targets.get(i, self.target0), fixed, cap)
                if plan is None:
                    if not self.request_finer(requests, i, targets.get(i, self.target0)):
                        raise self._infeasible(g, "no tiling fits the chunks of its inputs")
                    restart = True
                    break
                target = targets.get(i, self.target0)
                if any(fx is not None for fx in fixed):
                    # adapt to the chunks upstream decided, unless that is far costlier than chunks of this
                    # operator's own choosing (or forced tiny tiles): then ask for those (a producer's chunks only
                    # ever get finer, which costs the producer too, hence the high bar)
                    free = self.plan(i, target, (None,) * len(fixed), cap)
                    ratio = _REFINE_RATIO if plan.target < target / 2 else 4 * _REFINE_RATIO
                    if (free is not None and plan.score > ratio * free.score
                            and self.request_finer(requests, i, target)):
                        restart = True
                        break
                plans[i] = plan
                for out in g.outs:
                    _propose(blocks, out, plan.ob)
                    _propose(blocks, out, requests.get(out.name, out.shape))
                for t, blk, fx in zip(g.ins, _proposals(g, plan.ob, plan.rb), fixed, strict=True):
                    if fx is None and t.name not in blocks:
                        _propose(blocks, t, blk if t.size_bytes > plan.target else t.shape)
                        _propose(blocks, t, requests.get(t.name, t.shape))
            if restart:
                continue
            grids = {name: _Grid(t, tuple(blocks.get(name, requests.get(name, t.shape))))
                     for name, t in self.tensors.items()}
            chunked = {name for name, gr in grids.items() if not gr.whole}
            touched = {i for i, op in enumerate(ops) if any(t in chunked for t in op.tensors)} - tiled
            if touched:
                tiled |= touched
                continue
            failing = []
            all_tiles: dict[int, list[dict[str, Any]]] = {}
            for i in sorted(tiled):
                g = self.geos[i]
                key = (i, plans[i], tuple(grids[t.name].block for t in g.ins + g.outs))
                if key not in tile_memo:
                    tiles = self.build_tiles(i, plans[i], grids)
                    ok = all(self.tile_fits(t, grids) for t in tiles)
                    tile_memo[key] = (tiles, ok)
                tiles, ok = tile_memo[key]
                all_tiles[i] = tiles
                if not ok:
                    failing.append(i)
            if not failing:
                self.aligned_ops = {ops[i].name for i, plan in plans.items() if plan.aligned}
                return self._assemble(grids, all_tiles)
            for i in failing:
                new = plans[i].target / 2
                if new >= 0.5:
                    targets[i] = new
                elif not self.request_finer(requests, i, plans[i].target):
                    raise self._infeasible(self.geos[i], "a tile still does not fit after shrinking every chunk")
        raise AssertionError("tiling did not converge")  # pragma: no cover

    def _assemble(self, grids: dict[str, _Grid], all_tiles: dict[int, list[dict[str, Any]]]) -> PinningGraph:
        buffers: list[Buffer] = []
        base: dict[str, int] = {}
        for name, t in self.tensors.items():
            grid = grids[name]
            base[name] = len(buffers)
            if grid.whole:
                buffers.append(Buffer(name, t.size_bytes, t.role, name, full_box(t.shape)))
                continue
            for f in range(grid.n):
                region = grid.region(f)
                buffers.append(Buffer(f"{name}{box_text(region)}", volume(region) * t.dtype_bytes, t.role, name,
                                      region))
        steps: list[Step] = []
        for i, op in enumerate(self.wl.operators):
            if i not in all_tiles:
                steps.append(Step(
                    name=op.name,
                    op=op.name,
                    reads=tuple(base[t] for t in dict.fromkeys(op.inputs)),
                    writes=tuple(base[t] for t in op.outputs),
                    compute_cycles=self.cycles(op),
                    macs=op.macs,
                ))
                continue
            g = self.geos[i]
            for n, tile in enumerate(all_tiles[i]):
                box = next(iter(tile["out"].values()))
                dims = _tile_dims(g, {tile["j"]: box}, tile["reduce"])
                pseudo = Operator(op.name, op.kind, op.inputs, op.outputs, op.attrs, dims)
                steps.append(Step(
                    name=f"{op.name}/t{n}",
                    op=op.name,
                    reads=tuple(base[t] + f for t, f in tile["reads"]),
                    writes=tuple(base[t] + f for t, f in tile["writes"]),
                    compute_cycles=self.cycles(pseudo, op),
                    macs=pseudo.macs,
                    tile={"out": dict(tile["out"]), "reduce": tile["reduce"],
                          "dim": self.geos[i].red_dim if tile["reduce"] else None},
                ))
        tiled_ops = tuple(self.wl.operators[i].name for i in sorted(all_tiles))
        aligned = tuple(n for n in tiled_ops if n in self.aligned_ops)
        return PinningGraph(tuple(buffers), tuple(steps), self.spms, tiled_ops=tiled_ops, aligned_ops=aligned)


def tiled_graph(workload: Workload, accelerator: Accelerator, *, chunk_fraction: float = 0.5,
                layer_tiles: Mapping[str, LayerTile] | None = None,
                compute_cycles: Mapping[str, float] | None = None) -> PinningGraph:
    """The pinning graph with every operator whose operands do not fit together rebuilt as tile steps.

    See the module docstring. ``tiled_ops`` lists every operator rebuilt as tile steps (all of them read or write
    chunk buffers; almost all have several tiles). Raises :class:`~dlaopt.errors.InfeasibleInstanceError` when an
    operator cannot be tiled to fit (its message names the operator, the tensor, its bytes and the scratchpad
    capacities).

    ``layer_tiles`` (operator name → :class:`LayerTile`, e.g. the on-chip tiles a mapping chose): a tiled operator's
    blocks are whole multiples of its layer tile along every axis (and its reduction block a multiple of the layer
    tile's) whenever such a tile shape is admissible, so its chunks are groups of the mapping's tiles; otherwise it
    is planned freely. ``aligned_ops`` of the result lists the operators whose chunks follow their layer tile.
    ``compute_cycles`` (operator name → cycles with all operands on chip, e.g. a mapping's) replaces the
    accelerator's peak-rate estimate; a tile step gets its share of the MACs (:class:`StepCycles`)."""
    cycles = StepCycles(accelerator, compute_cycles or {})
    return _Tiler(workload, accelerator, chunk_fraction, layer_tiles or {}, cycles).run()
