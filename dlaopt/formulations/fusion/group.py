"""Fused groups of operators: a chain of conv / matmul operators executed together under one shared outer tile loop.

A :class:`FusedGroup` is a chain ``op_0 -> op_1 -> ... -> op_n-1``: each *intermediate* (the output of ``op_i``,
possibly passed through element-wise / activation / softmax / norm operators, which are absorbed as in-place
special-function (SFU) work) is read by ``op_i+1`` as its input ``I`` or its second operand ``W``. The group is
executed as (seed 001 Appendix A, §A.2, Figure A.5)::

    for every outer iteration (one tile index per group outer dim):     # the shared outer loop
        op_0's inner nest  -> writes its intermediate tile into the staging buffer
        absorbed ops       -> applied in place to that tile (SFU)
        op_1's inner nest  -> reads it from the staging buffer
        ...

The *outer tile* (:data:`OuterTile`) gives, per group outer dim, the number of tiles (a divisor of its size). The
outer dims are dims of the last operator (attention: ``B`` = batch x heads and ``M`` = query rows; conv chains:
``N`` and the output rows ``P`` and columns ``Q``; matmul chains ``B`` and ``M``). How every other operator follows:

* a loop dim in :attr:`FusedOp.outer` is divided evenly: extent ``size / tiles``, offset ``index * extent``;
* a loop dim in :attr:`FusedOp.halo` is the producer side of a sliding window: for a consumer tile of ``e`` rows at
  offset ``o`` (consumer output rows), the consumer reads the padded input rows ``[s*o, s*o + s*(e-1) + add)``
  (``s`` its stride, ``add = dilation*(R-1) + 1``), i.e. the producer rows starting at ``s*o - pad``. The producer
  computes a window of ``min(s*(e-1) + add, size)`` consecutive rows, **clamped** into its real rows ``[0, size)``:
  offset ``min(max(s*o - pad, 0), size - extent)``. The window covers every real row the consumer needs; rows the
  consumer reads in the padding are zeros that nobody computes (the consumer's input tile counts them, exactly as
  the single-layer model counts a zero-padded input). Rows shared by the windows of neighbouring tiles (the halo)
  are **recomputed** in each outer iteration; rows of a window the consumer does not need (clamping at the border,
  the holes of a strided 1x1 consumer) are computed as wasted work. Every outer iteration therefore runs the same
  inner loop nests (:func:`inner_nests`) — only the offsets differ — so the fused cost is ``n_outer`` times the
  cost of one iteration.
* any other loop dim is whole in every iteration (reduction dims, channels, keys).

Nothing persists across outer iterations: each starts with the group's external inputs in main memory and ends with
its outputs written back (a weight or key tensor needed by every iteration is fetched again in every iteration, the
reuse FLAT trades away at finer granularities).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from dlaopt.formulations.mapping.loopnest import LoopNest, divisors, is_mappable, loopnest_from_operator
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind
from dlaopt.workload.tensor import TensorRole

OuterTile = Mapping[str, int]
"""Group outer dim -> number of tiles (a divisor of the dim's size); missing dims count as 1 tile."""

ABSORBABLE = frozenset({OpKind.ELEMENTWISE, OpKind.ACTIVATION, OpKind.SOFTMAX, OpKind.NORM})
Terms = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class FusedOp:
    """One operator of a group. ``outer``: group outer dim -> this op's loop dim divided evenly by the outer loop.
    ``halo``: producer loop dim -> ``(stride, add)`` of the consumer's sliding window over it (extent for a consumer
    tile of ``e`` rows: ``min(stride*(e-1) + add, size)``); ``halo_pad``: the consumer's leading padding of that dim;
    ``halo_dim``: the consumer's loop dim the window follows. Computed by the builders, not user-given."""

    nest: LoopNest
    outer: Mapping[str, str] = field(default_factory=dict)
    halo: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    halo_pad: Mapping[str, int] = field(default_factory=dict)
    halo_dim: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.nest.name


@dataclass(frozen=True)
class AxisLink:
    """One axis of an intermediate's canonical coordinates (matmul: ``(B, M, N)``; conv: ``(N, C, H, W)``): its
    value is ``sum(coef * index)`` over the producer's output terms, and ``sum(coef * index) - shift`` over the
    consumer's operand terms (``shift``: the consumer's leading padding; values outside ``[0, size)`` are padding
    zeros)."""

    size: int
    producer: Terms
    consumer: Terms
    shift: int = 0


@dataclass(frozen=True)
class Intermediate:
    """A tensor passed from ``ops[producer]`` (its ``O``) to ``ops[consumer]`` (its ``consumer_operand``, ``I`` or
    ``W``) through the staging buffer. ``tensor`` is what the consumer reads, ``produced`` what the producer writes
    (they differ when absorbed operators ``sfu_ops`` lie between). ``softmax``: the consumer loop dim of a row
    reduction (softmax / layernorm) that must be whole in every tile (FLAT: the keys). ``written_back``: tensors of
    the path also consumed outside the group (or graph outputs) — written to main memory as well. ``side_inputs``:
    tensors from outside the group read by absorbed operators (e.g. a residual add), read from main memory."""

    tensor: str
    producer: int
    consumer: int
    consumer_operand: str
    softmax: str | None = None
    produced: str = ""
    sfu_ops: tuple[str, ...] = ()
    written_back: tuple[str, ...] = ()
    side_inputs: tuple[str, ...] = ()
    vector_ops_per_element: float = 0.0
    shape: tuple[int, ...] = ()
    axes: tuple[AxisLink, ...] = ()
    softmax_axis: int | None = None
    dtype_bytes: Mapping[str, int] = field(default_factory=dict)  # bytes per element of the path / side tensors


@dataclass(frozen=True)
class FusedGroup:
    name: str
    ops: tuple[FusedOp, ...]  # execution order within one outer iteration
    intermediates: tuple[Intermediate, ...]
    outer_dims: Mapping[str, int]  # group outer dim -> size
    softmax_ops: tuple[Operator, ...] = ()  # every absorbed operator (SFU work in place on intermediates)
    params: Mapping[str, int] = field(default_factory=dict)  # e.g. attention: batch, heads, seq_q, seq_k, d, dv

    @property
    def op_names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.ops)

    def intermediate_of(self, op: int) -> Intermediate | None:
        """The intermediate ``ops[op]`` produces (None for the last op)."""
        return next((x for x in self.intermediates if x.producer == op), None)

    def consumed_by(self, op: int) -> list[Intermediate]:
        return [x for x in self.intermediates if x.consumer == op]

    def macs(self) -> int:
        """The operators' own MACs (no recompute)."""
        return sum(op.nest.real_macs for op in self.ops)


# ================================================================================================ tiles
def check_tile(group: FusedGroup, tile: OuterTile) -> dict[str, int]:
    """The full outer tile (every outer dim, default 1 tile); ValueError for unknown dims or non-divisors."""
    out = {}
    for g in tile:
        if g not in group.outer_dims:
            raise ValueError(f"group '{group.name}': unknown outer dim '{g}' (outer dims: {sorted(group.outer_dims)})")
    for g, n in group.outer_dims.items():
        t = int(tile.get(g, 1))
        if t < 1 or n % t:
            raise ValueError(f"group '{group.name}': {t} tiles do not divide outer dim {g} = {n}")
        out[g] = t
    return out


def n_outer(group: FusedGroup, tile: OuterTile) -> int:
    """Number of outer iterations."""
    return math.prod(check_tile(group, tile).values())


def outer_tiles(group: FusedGroup) -> list[dict[str, int]]:
    """Every outer tile (all divisor choices per outer dim)."""
    dims = list(group.outer_dims)
    return [dict(zip(dims, c, strict=True)) for c in itertools.product(*(divisors(group.outer_dims[g]) for g in dims))]


def outer_iterations(group: FusedGroup, tile: OuterTile) -> Iterator[dict[str, int]]:
    """The tile index of every outer dim, for every outer iteration (first outer dim slowest)."""
    t = check_tile(group, tile)
    dims = list(t)
    for idx in itertools.product(*(range(t[g]) for g in dims)):
        yield dict(zip(dims, idx, strict=True))


def _geometry(group: FusedGroup, tile: Mapping[str, int],
              index: Mapping[str, int] | None) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    """Per op: the extent and (if ``index`` is given) the global offset of every loop dim in one outer iteration."""
    n = len(group.ops)
    ext: list[dict[str, int]] = [{} for _ in range(n)]
    off: list[dict[str, int]] = [{} for _ in range(n)]
    for i in range(n - 1, -1, -1):
        op = group.ops[i]
        nest = op.nest
        divided = {d: g for g, d in op.outer.items()}
        inter = group.intermediate_of(i)
        for d in nest.dims:
            size = nest.sizes[d]
            if d in divided:
                g = divided[d]
                e = size // tile[g]
                ext[i][d] = e
                off[i][d] = (index[g] if index is not None else 0) * e
            elif d in op.halo:
                assert inter is not None, f"op {op.name}: a halo needs a consumer"
                c = inter.consumer
                s, add = op.halo[d]
                dc = op.halo_dim.get(d, d)
                e = min(s * (ext[c][dc] - 1) + add, size)
                ext[i][d] = e
                start = s * off[c][dc] - op.halo_pad.get(d, 0)
                off[i][d] = min(max(start, 0), size - e)
            else:
                ext[i][d] = size
                off[i][d] = 0
    return ext, off


def inner_extents(group: FusedGroup, tile: OuterTile) -> list[dict[str, int]]:
    """Per op: the loop bounds of one outer iteration (see the module docstring)."""
    return _geometry(group, check_tile(group, tile), None)[0]


def tile_offsets(group: FusedGroup, tile: OuterTile, index: Mapping[str, int]) -> list[dict[str, int]]:
    """Per op: the global offset of every loop dim in the outer iteration ``index`` (tile index per outer dim)."""
    t = check_tile(group, tile)
    for g, i in index.items():
        if not 0 <= i < t[g]:
            raise ValueError(f"tile index {g}={i} outside [0, {t[g]})")
    return _geometry(group, t, {g: int(index.get(g, 0)) for g in t})[1]


def inner_nests(group: FusedGroup, tile: OuterTile) -> tuple[LoopNest, ...]:
    """Per op: the loop nest of one outer iteration (the op's nest with the extents of :func:`inner_extents`)."""
    out = []
    for op, ext in zip(group.ops, inner_extents(group, tile), strict=True):
        nest = op.nest
        out.append(LoopNest(nest.name, nest.kind, nest.dims, ext, nest.operands, dict(ext)))
    return tuple(out)


def _union_length(intervals: Sequence[tuple[int, int]]) -> int:
    total, end = 0, None
    for lo, hi in sorted(intervals):
        if end is None or lo >= end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


def _follows(group: FusedGroup) -> list[dict[str, str]]:
    """Per op: loop dim -> the group outer dim whose tile index moves its offset (dims not listed are at offset 0 in
    every iteration). A divided dim follows its outer dim; a halo dim follows what its consumer's dim follows."""
    out: list[dict[str, str]] = [{} for _ in group.ops]
    for i in range(len(group.ops) - 1, -1, -1):
        op = group.ops[i]
        out[i].update({d: g for g, d in op.outer.items()})
        inter = group.intermediate_of(i)
        for d in op.halo:
            if inter is not None and (g := out[inter.consumer].get(op.halo_dim.get(d, d))) is not None:
                out[i][d] = g
    return out


class _Offsets:
    """Offsets of one outer dim's tile positions (the other outer dims at index 0), computed on demand and kept."""

    def __init__(self, group: FusedGroup, tile: dict[str, int], g: str) -> None:
        self.group, self.tile, self.g = group, tile, g
        self.seen: dict[int, list[dict[str, int]]] = {}

    def __call__(self, k: int) -> list[dict[str, int]]:
        if k not in self.seen:
            self.seen[k] = tile_offsets(self.group, self.tile, {self.g: k})
        return self.seen[k]


def _first(pred: Callable[[int], bool], n: int) -> int:
    """The least ``k`` in ``[0, n)`` with ``pred(k)`` (``n`` if none), ``pred`` monotone (false ... false true ...):
    the two ends, then bisection when the answer lies between."""
    if n == 0 or pred(0):
        return 0
    if not pred(n - 1):
        return n
    lo, hi = 1, n - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _segments(group: FusedGroup, tile: dict[str, int], g: str, at: _Offsets,
              extra: Sequence[Callable[[int], bool]] = ()) -> list[tuple[int, int]]:
    """The tile positions ``0 .. tile[g]-1`` of outer dim ``g`` cut into runs on which every op's offsets are affine
    in the position (the *position classes*: a first / interior / last run per clamp of a halo window).

    Offsets are non-decreasing in the position: a divided dim's is ``k * extent``; a halo dim's is the clamp of
    ``stride * (its consumer's offset) - pad`` into ``[0, size - extent]``, affine wherever the consumer's offset is
    and the clamp is in one regime. The regime changes where the unclamped value reaches 0 and passes ``size -
    extent``: monotone, so each is found by bisection. ``extra``: further monotone predicates whose first true
    position is a cut as well (the dependence check's own clamps)."""
    n = tile[g]
    cuts = {0, n}
    if n > 1:
        ext = inner_extents(group, tile)
        follows = _follows(group)
        for i, op in enumerate(group.ops):
            inter = group.intermediate_of(i)
            for d, (s, _add) in op.halo.items():
                if follows[i].get(d) != g or inter is None:
                    continue
                c, dc, pad = inter.consumer, op.halo_dim.get(d, d), op.halo_pad.get(d, 0)
                top = op.nest.sizes[d] - ext[i][d]

                def raw(k: int, c: int = c, dc: str = dc, s: int = s, pad: int = pad) -> int:
                    return s * at(k)[c][dc] - pad

                cuts.add(_first(lambda k, raw=raw: raw(k) >= 0, n))
                cuts.add(_first(lambda k, raw=raw, top=top: raw(k) > top, n))
        for pred in extra:
            cuts.add(_first(pred, n))
    edges = sorted(cuts)
    return [(a, b) for a, b in zip(edges, edges[1:], strict=False) if a < b]


def produced_counts(group: FusedGroup, tile: OuterTile) -> list[tuple[int, int]]:
    """Per intermediate: ``(elements produced over the whole run, distinct elements among them)``. Producer windows
    are boxes of real elements (clamped), one axis per output dim, each following at most one outer dim, so the
    distinct elements are the product over dims of the union of that dim's windows. A window's offset is
    non-decreasing in the tile position, so the union of the windows of one dim is ``extent + sum_k min(offset(k) -
    offset(k-1), extent)``, summed in closed form per position class (:func:`_segments`, where the steps are
    constant): the cost is independent of the number of outer iterations."""
    t = check_tile(group, tile)
    ext = inner_extents(group, t)
    follows = _follows(group)
    total_iters = math.prod(t.values())
    at = {g: _Offsets(group, t, g) for g in t if t[g] > 1}
    segs = {g: _segments(group, t, g, at[g]) for g in at}
    out = []
    for x in group.intermediates:
        p = x.producer
        nest = group.ops[p].nest
        dims = sorted(nest.operand("O").dims, key=nest.dims.index)
        moving = [follows[p][d] for d in dims if follows[p].get(d) in at]
        if len(moving) != len(set(moving)):  # pragma: no cover - the builders never link two dims to one outer dim
            raise ValueError(f"{x.produced}: two output dims follow one outer dim")
        per_iter = math.prod(ext[p][d] for d in dims)
        distinct = 1
        for d in dims:
            e = ext[p][d]
            g = follows[p].get(d)
            if g not in at:
                distinct *= e
                continue
            off = at[g]
            union = e
            for a, b in segs[g]:
                if a > 0:
                    union += min(off(a)[p][d] - off(a - 1)[p][d], e)
                if b - a > 1:
                    union += (b - a - 1) * min(off(a + 1)[p][d] - off(a)[p][d], e)
            distinct *= union
        out.append((per_iter * total_iters, distinct))
    return out


@dataclass(frozen=True)
class DependenceFailure:
    """Outer iterations at which a consumer reads an element of an intermediate axis its producer did not produce
    in the same iteration (``kind`` "read"), or a row-reduction axis is not produced whole ("softmax"): positions
    ``lo .. hi-1`` of outer dim ``dim``, the other outer dims at any index (``dim`` None: the iterations whose tile
    indices are those of ``first``, any index for the outer dims it leaves out; ``{}``: every iteration).
    ``first``: the first such iteration's tile indices; ``detail``: the ranges there."""

    intermediate: int
    axis: int
    kind: str
    dim: str | None
    lo: int
    hi: int
    first: dict[str, int]
    detail: str


def _positive(alpha: int, beta: int, n: int) -> tuple[int, int]:
    """The integers ``j`` in ``[0, n)`` with ``alpha + beta * j > 0``, as a half-open range."""
    if beta == 0:
        return (0, n) if alpha > 0 else (0, 0)
    if beta > 0:
        return max(0, (-alpha) // beta + 1), n
    return 0, min(n, -((-alpha) // -beta))


_PLO, _PHI, _CLO, _CHI = 0, 1, 4, 5  # positions in _axis_ranges' answer


def _axis_ranges(group: FusedGroup, x: Intermediate, ax: AxisLink, ext: list[dict[str, int]],
                 off: list[dict[str, int]]) -> tuple[int, int, int, int, int, int]:
    """(produced lo, hi, consumer's unclamped read lo, hi, clamped read lo, hi) of one axis in one iteration."""
    p, c = x.producer, x.consumer
    plo = sum(coef * off[p][d] for d, coef in ax.producer)
    phi = sum(coef * (off[p][d] + ext[p][d] - 1) for d, coef in ax.producer)
    rlo = sum(coef * off[c][d] for d, coef in ax.consumer) - ax.shift
    rhi = sum(coef * (off[c][d] + ext[c][d] - 1) for d, coef in ax.consumer) - ax.shift
    return plo, phi, rlo, rhi, max(rlo, 0), min(rhi, ax.size - 1)


def dependence_failures(group: FusedGroup, tile: OuterTile) -> list[DependenceFailure]:
    """Analytical dependence check of every outer iteration: the hull of the real elements each consumer reads lies
    in its producer's window, and a row-reduction axis (softmax, layernorm) is produced whole. An axis depends only
    on the outer dims its loop dims follow; with one such dim its positions are cut into classes on which every
    bound is affine in the position (:func:`_segments`, with the clamps of the read range as extra cuts) and each
    condition holds on an interval of a class, solved exactly; with several (no builder makes such a group) their
    index combinations are enumerated. The cost does not grow with the number of outer iterations."""
    t = check_tile(group, tile)
    ext = inner_extents(group, t)
    follows = _follows(group)
    base = tile_offsets(group, t, {})
    at = {g: _Offsets(group, t, g) for g in t if t[g] > 1}
    out: list[DependenceFailure] = []
    for k, x in enumerate(group.intermediates):
        p, c = x.producer, x.consumer
        for a, ax in enumerate(x.axes):
            terms = [(p, d) for d, _ in ax.producer] + [(c, d) for d, _ in ax.consumer]
            dims = sorted({follows[i][d] for i, d in terms if follows[i].get(d) in at}, key=list(t).index)
            softmax = a == x.softmax_axis
            if len(dims) == 1:
                g = dims[0]
                at_g = at[g]

                def rng(j: int, at_g: _Offsets = at_g, ax: AxisLink = ax, x: Intermediate = x) -> tuple[int, ...]:
                    return _axis_ranges(group, x, ax, ext, at_g(j))

                extra = [lambda j, rng=rng: rng(j)[2] >= 0, lambda j, rng=rng, top=ax.size - 1: rng(j)[3] > top]
                for lo, hi in _segments(group, t, g, at_g, extra):
                    v0 = rng(lo)
                    v1 = rng(lo + 1) if hi - lo > 1 else v0
                    slope = [b - a_ for a_, b in zip(v0, v1, strict=True)]

                    def where(i_pos: int, i_neg: int, const: int, v0: tuple[int, ...] = v0,
                              slope: list[int] = slope, lo: int = lo, hi: int = hi) -> tuple[int, int]:
                        """Positions of the class with ``v[i_pos] - v[i_neg] + const > 0``."""
                        alpha = (v0[i_pos] if i_pos >= 0 else 0) - (v0[i_neg] if i_neg >= 0 else 0) + const
                        beta = (slope[i_pos] if i_pos >= 0 else 0) - (slope[i_neg] if i_neg >= 0 else 0)
                        j0, j1 = _positive(alpha, beta, hi - lo)
                        return lo + j0, lo + j1

                    reads = where(_CHI, _CLO, 1)
                    found = [("read", _meet(reads, where(_PLO, _CLO, 0))),
                             ("read", _meet(reads, where(_CHI, _PHI, 0)))]
                    if softmax:
                        found += [("softmax", where(_PLO, -1, 0)), ("softmax", where(-1, _PHI, ax.size - 1))]
                    for kind, (f0, f1) in found:
                        if f0 < f1:
                            out.append(_failure(group, x, k, a, ax, kind, g, f0, f1, {g: f0}, ext, at_g(f0)))
                continue
            for combo in itertools.product(*(range(t[g]) for g in dims)):
                index = dict(zip(dims, combo, strict=True))
                off = tile_offsets(group, t, index) if dims else base
                plo, phi, _, _, clo, chi = _axis_ranges(group, x, ax, ext, off)
                bad = clo <= chi and (clo < plo or chi > phi)
                for kind, hit in (("read", bad), ("softmax", softmax and (plo > 0 or phi < ax.size - 1))):
                    if hit:
                        out.append(_failure(group, x, k, a, ax, kind, None, 0, 1, index, ext, off))
    return _merge_failures(out)


def _meet(r: tuple[int, int], s: tuple[int, int]) -> tuple[int, int]:
    return max(r[0], s[0]), min(r[1], s[1])


def _failure(group: FusedGroup, x: Intermediate, k: int, a: int, ax: AxisLink, kind: str, g: str | None, lo: int,
             hi: int, first: dict[str, int], ext: list[dict[str, int]],
             off: list[dict[str, int]]) -> DependenceFailure:
    plo, phi, _, _, clo, chi = _axis_ranges(group, x, ax, ext, off)
    if kind == "read":
        detail = (f"{group.ops[x.consumer].name} reads axis {a} [{clo}, {chi}] but {group.ops[x.producer].name} "
                  f"produced [{plo}, {phi}]")
    else:
        detail = f"the softmax rows are split (axis {a} produced [{plo}, {phi}] of [0, {ax.size - 1}])"
    return DependenceFailure(k, a, kind, g, lo, hi, dict(first), detail)


def _merge_failures(failures: list[DependenceFailure]) -> list[DependenceFailure]:
    """One failure per (intermediate, axis, kind) run of positions: the two read conditions of a class may report
    overlapping ranges, and neighbouring classes adjacent ones."""
    out: list[DependenceFailure] = []
    def order(f: DependenceFailure) -> tuple:
        return f.intermediate, f.axis, f.kind, f.dim or "", f.lo, sorted(f.first.items())

    for f in sorted(failures, key=order):
        last = out[-1] if out else None
        if (f.dim is not None and last is not None and f.lo <= last.hi
                and (last.intermediate, last.axis, last.kind, last.dim) == (f.intermediate, f.axis, f.kind, f.dim)):
            out[-1] = replace(last, hi=max(last.hi, f.hi))
            continue
        out.append(f)
    return out


def dependence_errors(group: FusedGroup, tile: OuterTile) -> list[str]:
    """The failures of :func:`dependence_failures` as messages (the first iteration of each run, and its length)."""
    msgs = []
    for f in dependence_failures(group, tile):
        x = group.intermediates[f.intermediate]
        more = f" (and {f.hi - f.lo - 1} more positions of {f.dim})" if f.hi - f.lo > 1 else ""
        msgs.append(f"{x.tensor}: outer iteration {f.first}{more}: {f.detail}")
    return sorted(set(msgs))


# ================================================================================================ builders
def _matmul_axes(prod: LoopNest, cons: LoopNest, operand: str) -> tuple[AxisLink, ...]:
    pairs = (("B", "B"), ("M", "M"), ("N", "K")) if operand == "I" else (("B", "B"), ("M", "K"), ("N", "N"))
    return tuple(AxisLink(prod.sizes[dp], ((dp, 1),), ((dc, 1),)) for dp, dc in pairs)


def _conv_axes(prod: LoopNest, cons: LoopNest, op: Operator) -> tuple[AxisLink, ...]:
    pt, pl = op.attrs["padding"][0], op.attrs["padding"][1]
    ci = cons.operand("I").coords
    ps = prod.sizes
    return (
        AxisLink(ps["N"], (("N", 1),), (("N", 1),)),
        AxisLink(ps["G"] * ps["K"], (("G", ps["K"]), ("K", 1)), (("G", cons.sizes["C"]), ("C", 1))),
        AxisLink(ps["P"], (("P", 1),), ci[3].terms, pt),
        AxisLink(ps["Q"], (("Q", 1),), ci[4].terms, pl),
    )


def _trace(workload: Workload, start: str, target: int, group: set[int], path: list[int],
           side: list[str]) -> bool:
    """Walk back from tensor ``start`` through absorbable operators to the output of operator ``target``; record
    the absorbed operators (``path``, consumer side first) and the other inputs they read (``side``)."""
    i = workload.producer.get(start)
    if i is None:
        return False
    if i == target:
        return True
    op = workload.operators[i]
    if op.kind not in ABSORBABLE:
        return False
    hits = []
    for t in dict.fromkeys(op.inputs):
        sub_path: list[int] = []
        sub_side: list[str] = []
        if _trace(workload, t, target, group, sub_path, sub_side):
            hits.append((t, sub_path, sub_side))
    if len(hits) != 1:
        if len(hits) > 1:
            raise ValueError(f"'{op.name}' reads the output of '{workload.operators[target].name}' more than once: "
                             "not a chain")
        return False
    t, sub_path, sub_side = hits[0]
    path.append(i)
    path.extend(sub_path)
    side.extend(s for s in op.inputs if s != t)
    side.extend(sub_side)
    return True


def descendants(workload: Workload, start: Iterable[int]) -> set[int]:
    """Schedule indices of the operators that read, directly or through other operators, an output of the operators
    ``start`` (those themselves only when reached that way)."""
    seen: set[int] = set()
    stack = [t for i in start for t in workload.operators[i].outputs]
    while stack:
        for c in workload.consumers.get(stack.pop(), []):
            if c not in seen:
                seen.add(c)
                stack.extend(workload.operators[c].outputs)
    return seen


def _reduction_axis(op: Operator, rank: int) -> int | None:
    """The tensor axis a softmax / layernorm reduces over (None: element-wise, incl. inference batchnorm)."""
    if op.kind == OpKind.SOFTMAX or (op.kind == OpKind.NORM and op.attrs.get("norm") == "layernorm"):
        return int(op.attrs.get("axis", -1)) % rank
    return None


def group_from_workload(workload: Workload, op_names: Sequence[str], *, name: str | None = None) -> FusedGroup:
    """The fused group of a chain of conv / matmul operators of ``workload`` (``op_names``: the chain's operators;
    element-wise / activation / softmax / norm operators between consecutive ones are absorbed whether listed or
    not). Raises ValueError (the problem layer turns it into an InputError) when the operators are not a chain, when
    an intermediate is consumed twice by the chain, or when shapes are inconsistent. An intermediate that is also
    consumed outside the group is allowed: it is recorded in :attr:`Intermediate.written_back` and written to main
    memory as well."""
    index = {op.name: i for i, op in enumerate(workload.operators)}
    names = list(dict.fromkeys(op_names))
    for n in names:
        if n not in index:
            raise ValueError(f"unknown operator '{n}'")
    listed = sorted(index[n] for n in names)
    chain = [i for i in listed if is_mappable(workload.operators[i])]
    for i in listed:
        op = workload.operators[i]
        if not is_mappable(op) and op.kind not in ABSORBABLE:
            raise ValueError(f"operator '{op.name}' ({op.kind.value}) cannot be fused: a group holds conv / matmul "
                             "operators and the element-wise / activation / softmax / norm operators between them")
    if not chain:
        raise ValueError("a fused group needs at least one conv or matmul operator")
    ops = [workload.operators[i] for i in chain]
    kinds = {"matmul" if op.kind == OpKind.MATMUL else "conv" for op in ops}
    if len(kinds) > 1:
        raise ValueError(f"operators {[op.name for op in ops]} mix convolutions and matmuls: fusing a conv with a "
                         "matmul is not supported")
    conv = kinds == {"conv"}
    nests = [loopnest_from_operator(workload, op) for op in ops]
    members = set(chain)
    links: list[tuple[str, list[int], list[str], str]] = []  # (consumer operand, path, side inputs, read tensor)
    for a, b in zip(chain, chain[1:], strict=False):
        op_b = workload.operators[b]
        found = []
        for operand, t in zip(("I", "W"), op_b.inputs[:2], strict=True):
            path: list[int] = []
            side: list[str] = []
            if _trace(workload, t, a, members, path, side):
                found.append((operand, path[::-1], side, t))
        if not found:
            raise ValueError(f"not a chain: '{op_b.name}' does not consume the output of "
                             f"'{workload.operators[a].name}' (directly or through element-wise operators)")
        if len(found) > 1:
            raise ValueError(f"'{op_b.name}' reads the output of '{workload.operators[a].name}' as both operands")
        if conv and found[0][0] != "I":
            raise ValueError(f"'{op_b.name}' reads the output of '{workload.operators[a].name}' as its weights")
        links.append(found[0])
    absorbed = {i for link in links for i in link[1]}
    inside_all = members | absorbed
    for k, b in enumerate(chain):
        read = links[k - 1][3] if k > 0 else None
        for tname in workload.operators[b].inputs:
            p = workload.producer.get(tname)
            if tname != read and p is not None and p in inside_all:
                raise ValueError(f"not a chain: '{workload.operators[b].name}' reads '{tname}', produced inside "
                                 "the group but not by the operator before it")
    for i in listed:
        if i not in members and i not in absorbed:
            raise ValueError(f"operator '{workload.operators[i].name}' is not between two operators of the chain")
    inside = members | absorbed
    # the group runs as one step: nothing it reads may be computed outside it from its own outputs (e.g. a residual
    # add several blocks down, whose other input the blocks in between compute from the producer's output)
    below = descendants(workload, inside)
    for i in sorted(inside):
        for tname in workload.operators[i].inputs:
            p = workload.producer.get(tname)
            if p is not None and p not in inside and p in below:
                raise ValueError(f"not a chain: '{workload.operators[i].name}' reads '{tname}', which "
                                 f"'{workload.operators[p].name}' computes outside the group from the group's own "
                                 "output (the group would wait for itself)")
    intermediates: list[Intermediate] = []
    for k, (a, b) in enumerate(zip(chain, chain[1:], strict=False)):
        operand, path, side, read = links[k]
        produced = workload.operators[a].outputs[0]
        tensors = [produced] + [workload.operators[i].outputs[0] for i in path]
        shape = workload.tensors[produced].shape
        for t in tensors + side:
            if workload.tensors[t].shape != shape:
                raise ValueError(f"tensor '{t}' has shape {list(workload.tensors[t].shape)}, the intermediate "
                                 f"'{produced}' {list(shape)}: broadcasting inside a fused group is not supported")
        for s in side:
            p = workload.producer.get(s)
            if p is not None and p in inside:
                raise ValueError(f"not a chain: '{s}' is produced inside the group and read by an absorbed operator")
        written = tuple(t for t in tensors if workload.tensors[t].role == TensorRole.OUTPUT
                        or any(c not in inside for c in workload.consumers[t]))
        for t in tensors:
            readers = [c for c in workload.consumers[t] if c in members and c != b]
            if readers:
                raise ValueError(f"not a chain: '{t}' is read by '{workload.operators[readers[0]].name}' too")
            if t != read and any(c == b for c in workload.consumers[t]):
                raise ValueError(f"not a chain: '{workload.operators[b].name}' reads '{t}' twice")
        prod, cons = nests[k], nests[k + 1]
        if conv:
            axes = _conv_axes(prod, cons, workload.operators[b])
            canon = (prod.sizes["N"], prod.sizes["G"] * prod.sizes["K"], prod.sizes["P"], prod.sizes["Q"])
        else:
            axes = _matmul_axes(prod, cons, operand)
            canon = (prod.sizes["B"], prod.sizes["M"], prod.sizes["N"])
            batch = math.prod(shape[:-2]) if len(shape) > 2 else 1
            want = {d: cons.sizes[d] for d in (("B", "M", "K") if operand == "I" else ("B", "K", "N"))}
            if (batch, shape[-2], shape[-1]) != canon or tuple(want.values()) != canon:
                raise ValueError(f"shapes inconsistent: '{workload.operators[a].name}' produces {list(canon)} "
                                 f"(B, M, N) but '{workload.operators[b].name}' reads "
                                 + ", ".join(f"{d}={v}" for d, v in want.items()))
        red_axis = None
        vec = 0.0
        for i in path:
            op = workload.operators[i]
            vec += op.vector_ops / max(1, op.dims.get("E", 1))
            ax = _reduction_axis(op, len(shape))
            if ax is None:
                continue
            if not conv:
                ax = 2 if ax == len(shape) - 1 else 1 if ax == len(shape) - 2 else 0
                if ax == 0:
                    raise ValueError(f"'{op.name}' reduces over a batch axis: it cannot be fused")
            if red_axis is not None and red_axis != ax:
                raise ValueError(f"absorbed operators reduce '{produced}' over two different axes")
            red_axis = ax
        softmax_dim = axes[red_axis].consumer[0][0] if red_axis is not None else None
        intermediates.append(Intermediate(
            tensor=read, producer=k, consumer=k + 1, consumer_operand=operand, softmax=softmax_dim,
            produced=produced, sfu_ops=tuple(workload.operators[i].name for i in path), written_back=written,
            side_inputs=tuple(dict.fromkeys(side)), vector_ops_per_element=vec, shape=canon, axes=axes,
            softmax_axis=red_axis,
            dtype_bytes={t: workload.tensors[t].dtype_bytes for t in dict.fromkeys(tensors + side)}))
    # outer dims of the last op; a dim is left out when splitting it would split a reduction axis
    last = nests[-1]
    candidates = ("N", "P", "Q") if conv else ("B", "M")
    fused_ops = [FusedOp(nest) for nest in nests]
    fused_ops[-1] = FusedOp(last, {g: g for g in candidates})
    for k in range(len(nests) - 2, -1, -1):
        x = intermediates[k]
        cons_op = fused_ops[k + 1]
        varying = set(cons_op.outer.values()) | set(cons_op.halo)
        outer: dict[str, str] = {}
        halo: dict[str, tuple[int, int]] = {}
        pad: dict[str, int] = {}
        hdim: dict[str, str] = {}
        for ax in x.axes:
            cterms = tuple((d, c) for d, c in ax.consumer if nests[k + 1].sizes[d] > 1 or d in varying)
            moving = [(d, c) for d, c in cterms if d in varying]
            if not moving:
                continue
            if len(ax.producer) != 1 or len(moving) != 1:
                raise ValueError(f"internal: axis {ax} cannot follow the consumer")  # pragma: no cover
            dp = ax.producer[0][0]
            dc, s = moving[0]
            gdiv = {d: g for g, d in cons_op.outer.items()}
            if cterms == ((dc, 1),) and ax.shift == 0 and dc in gdiv and nests[k].sizes[dp] == nests[k + 1].sizes[dc]:
                outer[gdiv[dc]] = dp
            else:
                add = 1 + sum(c * (nests[k + 1].sizes[d] - 1) for d, c in cterms if d != dc)
                halo[dp], pad[dp], hdim[dp] = (s, add), ax.shift, dc
        fused_ops[k] = FusedOp(nests[k], outer, halo, pad, hdim)
    outer_dims = {g: last.sizes[g] for g in candidates}
    group = FusedGroup(name or "+".join(op.name for op in ops), tuple(fused_ops), tuple(intermediates), outer_dims,
                       tuple(workload.operators[i] for i in sorted(absorbed)))
    # drop outer dims whose splitting would split a reduction axis (e.g. a layernorm over the width of a conv map)
    keep = {}
    for g, size in outer_dims.items():
        if size > 1:
            probe = {g: min(d for d in divisors(size) if d > 1)}
            if any("softmax rows are split" in e for e in dependence_errors(group, probe)):
                continue
        keep[g] = size
    return replace(group, outer_dims=keep)


def attention_group(batch: int, heads: int, seq_q: int, seq_k: int, d: int, dv: int, word_bytes: int = 2, *,
                    name: str = "attention") -> FusedGroup:
    """FLAT's fused attention (seed 001 Appendix A): the logit operator ``L = Q·Kᵀ`` (``(B·H, seq_q, d) x (B·H, d,
    seq_k)``), the softmax over the keys and the attend operator ``A = S·V`` (``x (B·H, seq_k, dv)``). Outer dims:
    ``B`` (batch x heads) and ``M`` (query rows); the keys are never tiled by the outer loop (softmax needs whole
    rows)."""
    from dlaopt.workload.builder import NetworkBuilder

    b = NetworkBuilder(name, dtype_bytes=word_bytes)
    q = b.input("Q", (batch * heads, seq_q, d))
    kt = b.input("Kt", (batch * heads, d, seq_k))
    v = b.input("V", (batch * heads, seq_k, dv))
    s = b.matmul(q, kt, name="L")
    p = b.softmax(s, -1, name="softmax")
    o = b.matmul(p, v, name="A")
    group = group_from_workload(b.build([o]), ["L", "softmax", "A"], name=name)
    return replace(group, params={"batch": batch, "heads": heads, "seq_q": seq_q, "seq_k": seq_k, "d": d, "dv": dv})


__all__ = ["ABSORBABLE", "AxisLink", "DependenceFailure", "FusedGroup", "FusedOp", "Intermediate", "OuterTile",
           "attention_group", "check_tile", "dependence_errors", "dependence_failures", "descendants",
           "group_from_workload", "inner_extents", "inner_nests", "n_outer", "outer_iterations", "outer_tiles",
           "produced_counts", "tile_offsets"]
