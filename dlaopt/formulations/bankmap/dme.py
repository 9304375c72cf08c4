"""Data-movement elimination: Zheng et al., "Optimizing Memory-Access Patterns for Deep Learning Accelerators" §2.1.

A data-movement operator (``reshape``, ``transpose``, ``slice`` — TVM's ``strided_slice`` —, ``split``, ``concat``,
``tile``, ``repeat``) is a loop nest whose body is one load feeding one store: ``t_s[f_s(i)] = t_l[f_l(i)]``. Every
such operator does nothing but copy, so a reader of ``t_s`` can read ``t_l`` instead through the composed access
function ``g = f_l ∘ f_s⁻¹`` (equation (1) of the paper), and ``t_s`` — with the stores that defined it — disappears.

**Access functions.** Every store here writes each element of ``t_s`` exactly once in row-major loop order, so
``f_s⁻¹`` is the identity on ``t_s``'s index space and ``g`` maps an element of ``t_s`` straight to the element of
``t_l`` it copies. :class:`IndexFn` represents such a map from a *destination* index space (the reader's side) to a
*source* index space as a chain of vectorised :class:`Step`\\ s, each an exact integer function of numpy arrays:

============  ==============================================================  =============================
operator      destination index ``j`` → source index ``i``                    step
============  ==============================================================  =============================
transpose     ``i[perm[k]] = j[k]``                                            :class:`Permute`
reshape       flatten ``j`` row-major, unflatten into the input's shape       :class:`Reshape` (floor-div/mod)
slice         ``i[k] = start[k] + step[k]·j[k]``                              :class:`Affine`
split (part)  ``i[axis] = offset + j[axis]``                                  :class:`Affine`
tile          ``i[k] = j[k] mod d[k]``                                        :class:`Modulo`
repeat        ``i[axis] = j[axis] // r``                                      :class:`FloorDiv`
concat        piecewise: input ``q`` with ``b[q] ≤ j[axis] < b[q+1]``,        :class:`Select`
              ``i[axis] = j[axis] − b[q]``
============  ==============================================================  =============================

Composition (:meth:`IndexFn.then`) concatenates chains and fuses neighbours of one kind (two affine steps, two
permutations, two reshapes, two floor-divisions of one axis), so it is exact by construction. An :data:`AccessMap`
adds the source tensors: a :class:`Gather` (one source tensor read through an :class:`IndexFn`) or a
:class:`Select` (an :class:`IndexFn` into a concatenated space, then one access map per concatenated part).
:func:`precompose` and :func:`substitute` compose access maps; :func:`simplify` drops the parts a reader never
reaches and collapses a :class:`Select` whose reader falls into a single part into that part's map — a reader of a
range inside one concat input gets a single source, one that straddles inputs keeps a piecewise source (decided
from a sound bounding box first, exactly over every element when the box is not conclusive); a select whose parts
all read one tensor through the same function — a split re-concatenated, in any grouping — becomes one gather.

**Rewriting rules** (:func:`eliminate`). The rewritten graph (:class:`RewrittenGraph`) keeps every operator with
one *view* per input: an access map from the operand's index space to the tensors that really exist. Initially
every view is the identity on the operand tensor. For a live data-movement operator ``P`` storing ``t`` (a
load/store pair), ``M_t`` is ``P``'s access function with ``P``'s own input views composed in; every reader whose
view mentions ``t`` gets ``substitute(view, t, M_t)`` — a reader that is itself a data-movement operator thus
composes its access function with its producer's (equation (2)), a compute operator (conv, matmul, elementwise …)
reads through a gather view, as the paper rewrites *every* load of ``t_s`` into a load of ``t_l``. The pass repeats
until a round rewrites nothing (the fixed point; one round in schedule order already reaches it, the second
confirms it). A tensor disappears once nothing reads it and it is not a graph output; an operator disappears once
none of its outputs is stored.

**What stays.** (1) A tensor that is a graph output: it has to exist in memory after the graph finishes, so the
operator that stores it stays (its readers are still rewritten, and its own input views read the original tensors:
the whole chain in front of it collapses into one store). This is the kind of the paper's "1 of 124" left-over —
in ``parallel-wavenet`` it is the final reshape of the audio to ``(batch, samples)``. (2) With
``consumers="data-movement"`` (a target whose compute engines read dense operands only), a tensor read by a compute
operator: those readers are never rewritten. (3) Nothing else: every data-movement reader can always be rewritten.

**Execution.** :func:`run_rewritten` runs a rewritten graph with the semantics of
:mod:`dlaopt.workload.execute`: each view is gathered with numpy fancy indexing (:func:`gather`), then the operator
is applied to the gathered arrays. Bit-identical to :func:`dlaopt.workload.execute.execute` on the original graph.

**Copy accounting** (:func:`copy_traffic`, :meth:`DMEResult.copies`). The paper's model (its §2) is a loop nest of
element-wise loads and stores; we count their bytes. A compute operator loads each element of each operand once
(``numel(view)`` elements, charged to the tensors the view reads) and stores each element of each stored output once;
a data-movement operator loads, for each element it stores, the one element its (composed) access function names —
it copies its bytes exactly once, one load and one store per stored element. A byte is an
*on-chip* copy if the tensor it touches resides on chip, an *off-chip* copy otherwise. Residence, for an on-chip
capacity ``C`` bytes: an intermediate tensor resides on chip iff its size is ≤ ``C`` (otherwise it spills and both
its store and its loads go through main memory); a graph output resides in main memory; a graph input or weight
resides in main memory and, if its size is ≤ ``C``, is staged on chip once (one off-chip load of its bytes; its
readers then load on chip) — otherwise every reader streams it from main memory. The saving of the elimination is
the difference of the totals before and after, which includes the readers whose loads move to the source tensor's
residence (for example, a reader of a small on-chip slice of a spilled tensor now loads off chip).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from dlaopt.workload.execute import run_operator
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import DATA_MOVEMENT_KINDS, Operator, OpKind, normalize_attrs
from dlaopt.workload.tensor import Tensor, TensorRole

__all__ = [
    "CONSUMER_POLICIES",
    "AccessMap",
    "Affine",
    "CopyTraffic",
    "DMEResult",
    "FloorDiv",
    "Gather",
    "IndexFn",
    "KeptPair",
    "Modulo",
    "Permute",
    "Reshape",
    "RewrittenGraph",
    "RewrittenOp",
    "Select",
    "Step",
    "copy_traffic",
    "describe",
    "eliminate",
    "evaluate",
    "gather",
    "identity_view",
    "operator_access_map",
    "per_kind_pairs",
    "precompose",
    "run_rewritten",
    "simplify",
    "sources",
    "substitute",
    "view_class",
]

Shape = tuple[int, ...]
Index = tuple[np.ndarray, ...]
"""One integer array per axis of an index space, all of one shape: a batch of multi-indices."""
Box = tuple[tuple[int, ...], tuple[int, ...]]
"""Inclusive per-axis lower and upper bounds of a set of multi-indices."""

CONSUMER_POLICIES: tuple[str, ...] = ("all", "data-movement")
"""Which readers of a stored tensor may be rewritten: ``all`` (the paper: every load), or only data-movement
operators (compute operators then keep reading dense tensors)."""


# ================================================================================================ index functions
class Step:
    """One exact integer map from a destination index space ``dst`` to a source index space ``src``."""

    dst: Shape
    src: Shape

    def apply(self, idx: Index) -> Index:
        raise NotImplementedError

    def box(self, box: Box) -> Box:
        """A bounding box of the image of ``box`` (sound: it contains every image point)."""
        raise NotImplementedError

    @property
    def is_affine(self) -> bool:
        return False

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Permute(Step):
    """Transpose: ``src[perm[k]] = dst[k]``; ``dst`` has shape ``src[perm[k]]``."""

    dst: Shape
    src: Shape
    perm: tuple[int, ...]

    def apply(self, idx: Index) -> Index:
        out: list[np.ndarray] = [idx[0]] * len(self.perm)
        for k, p in enumerate(self.perm):
            out[p] = idx[k]
        return tuple(out)

    def box(self, box: Box) -> Box:
        lo, hi = [0] * len(self.perm), [0] * len(self.perm)
        for k, p in enumerate(self.perm):
            lo[p], hi[p] = box[0][k], box[1][k]
        return tuple(lo), tuple(hi)

    @property
    def is_affine(self) -> bool:
        return True

    def describe(self) -> str:
        return f"permute{list(self.perm)}"


@dataclass(frozen=True)
class Affine(Step):
    """Per axis ``src[k] = offsets[k] + steps[k]·dst[k]`` (slice, split part, concat part shift)."""

    dst: Shape
    src: Shape
    offsets: tuple[int, ...]
    steps: tuple[int, ...]

    def apply(self, idx: Index) -> Index:
        return tuple(
            a if (o == 0 and s == 1) else o + s * a for a, o, s in zip(idx, self.offsets, self.steps, strict=True)
        )

    def box(self, box: Box) -> Box:
        ends = [
            sorted((o + s * lo, o + s * hi))
            for lo, hi, o, s in zip(box[0], box[1], self.offsets, self.steps, strict=True)
        ]
        return tuple(e[0] for e in ends), tuple(e[1] for e in ends)

    @property
    def is_affine(self) -> bool:
        return True

    def describe(self) -> str:
        return f"affine(offsets={list(self.offsets)}, steps={list(self.steps)})"


def _strides(shape: Shape) -> tuple[int, ...]:
    out = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        out[k] = out[k + 1] * shape[k + 1]
    return tuple(out)


def _unravel(flat: int, shape: Shape) -> tuple[int, ...]:
    out = []
    for s in _strides(shape):
        out.append(flat // s)
        flat %= s
    return tuple(out)


@dataclass(frozen=True)
class Reshape(Step):
    """Row-major re-indexing: flatten ``dst`` in C order, unflatten into ``src`` (quasi-affine: floor-div, mod)."""

    dst: Shape
    src: Shape

    def apply(self, idx: Index) -> Index:
        flat: np.ndarray | int = 0
        for a, s in zip(idx, _strides(self.dst), strict=True):
            flat = flat + (a * s if s != 1 else a)
        flat_arr = np.asarray(flat, dtype=np.int64)
        out = []
        for k, s in enumerate(_strides(self.src)):
            q = flat_arr // s if s != 1 else flat_arr
            out.append(q % self.src[k] if k > 0 else q)
        return tuple(out)

    def box(self, box: Box) -> Box:
        lo_flat = sum(v * s for v, s in zip(box[0], _strides(self.dst), strict=True))
        hi_flat = sum(v * s for v, s in zip(box[1], _strides(self.dst), strict=True))
        a, b = _unravel(lo_flat, self.src), _unravel(hi_flat, self.src)
        lo, hi = list(a), list(b)
        for k in range(len(self.src)):  # the outer axes on which the flat range is constant are exact
            if a[k] != b[k]:
                for m in range(k + 1, len(self.src)):
                    lo[m], hi[m] = 0, self.src[m] - 1
                break
        return tuple(lo), tuple(hi)

    def describe(self) -> str:
        return f"reshape{list(self.dst)}->{list(self.src)}"


@dataclass(frozen=True)
class Modulo(Step):
    """Tile: ``src[k] = dst[k] mod src_shape[k]`` on the axes where ``dst`` is larger."""

    dst: Shape
    src: Shape

    def apply(self, idx: Index) -> Index:
        return tuple(a if d == s else a % s for a, d, s in zip(idx, self.dst, self.src, strict=True))

    def box(self, box: Box) -> Box:
        lo, hi = [], []
        for a, b, d, s in zip(box[0], box[1], self.dst, self.src, strict=True):
            if d == s or a // s == b // s:
                lo.append(a % s if d != s else a)
                hi.append(b % s if d != s else b)
            else:
                lo.append(0)
                hi.append(s - 1)
        return tuple(lo), tuple(hi)

    def describe(self) -> str:
        return f"mod{list(self.src)}"


@dataclass(frozen=True)
class FloorDiv(Step):
    """Repeat: ``src[axis] = dst[axis] // factor``."""

    dst: Shape
    src: Shape
    axis: int
    factor: int

    def apply(self, idx: Index) -> Index:
        return tuple(a // self.factor if k == self.axis else a for k, a in enumerate(idx))

    def box(self, box: Box) -> Box:
        lo, hi = list(box[0]), list(box[1])
        lo[self.axis] //= self.factor
        hi[self.axis] //= self.factor
        return tuple(lo), tuple(hi)

    def describe(self) -> str:
        return f"floordiv(axis={self.axis}, {self.factor})"


def _fuse(a: Step, b: Step) -> Step | None:
    """``a`` then ``b`` as one step, when both are of one fusable kind; else None."""
    if isinstance(a, Affine) and isinstance(b, Affine):
        return Affine(
            a.dst,
            b.src,
            tuple(ob + sb * oa for oa, ob, sb in zip(a.offsets, b.offsets, b.steps, strict=True)),
            tuple(sa * sb for sa, sb in zip(a.steps, b.steps, strict=True)),
        )
    if isinstance(a, Permute) and isinstance(b, Permute):
        return Permute(a.dst, b.src, tuple(b.perm[p] for p in a.perm))
    if isinstance(a, Reshape) and isinstance(b, Reshape):
        return Reshape(a.dst, b.src)
    if isinstance(a, FloorDiv) and isinstance(b, FloorDiv) and a.axis == b.axis:
        return FloorDiv(a.dst, b.src, a.axis, a.factor * b.factor)  # (j // p) // q == j // (p·q)
    return None


def _is_identity(s: Step) -> bool:
    if isinstance(s, Permute):
        return s.perm == tuple(range(len(s.perm)))
    if isinstance(s, Affine):
        return s.dst == s.src and all(o == 0 for o in s.offsets) and all(v == 1 for v in s.steps)
    if isinstance(s, Reshape | Modulo):
        return s.dst == s.src
    if isinstance(s, FloorDiv):
        return s.factor == 1
    return False


@dataclass(frozen=True)
class IndexFn:
    """A chain of :class:`Step`\\ s: destination index space ``dst`` → source index space ``src``. Empty = identity."""

    dst: Shape
    src: Shape
    steps: tuple[Step, ...] = ()

    @staticmethod
    def identity(shape: Sequence[int]) -> IndexFn:
        s = tuple(int(v) for v in shape)
        return IndexFn(s, s, ())

    @staticmethod
    def of(step: Step) -> IndexFn:
        return IndexFn(step.dst, step.src, () if _is_identity(step) else (step,))

    def then(self, other: IndexFn) -> IndexFn:
        """``other ∘ self``: apply ``self`` first, then ``other`` (whose ``dst`` must be this ``src``)."""
        if other.dst != self.src:
            raise ValueError(f"cannot compose: index space {list(self.src)} feeds {list(other.dst)}")
        steps = list(self.steps)
        for s in other.steps:
            if steps and (fused := _fuse(steps[-1], s)) is not None:
                steps.pop()
                if not _is_identity(fused):
                    steps.append(fused)
            else:
                steps.append(s)
        return IndexFn(self.dst, other.src, tuple(steps))

    def __call__(self, idx: Index) -> Index:
        for s in self.steps:
            idx = s.apply(idx)
        return idx

    def box(self, box: Box) -> Box:
        for s in self.steps:
            box = s.box(box)
        return box

    @property
    def is_identity(self) -> bool:
        return not self.steps and self.dst == self.src

    @property
    def is_affine(self) -> bool:
        return all(s.is_affine for s in self.steps)

    def describe(self) -> str:
        return " ∘ ".join(s.describe() for s in reversed(self.steps)) or "id"


# ================================================================================================ access maps
@dataclass(frozen=True)
class Gather:
    """Read tensor ``source`` at ``fn(j)`` for every index ``j`` of ``fn.dst``."""

    source: str
    fn: IndexFn

    @property
    def shape(self) -> Shape:
        return self.fn.dst


@dataclass(frozen=True)
class Select:
    """Piecewise: ``c = fn(j)`` indexes a space concatenated along ``axis`` from parts ``bounds[q] ≤ c[axis] <
    bounds[q+1]``; part ``q`` is read through ``branches[q]`` at ``c`` with ``c[axis] − bounds[q]``. A branch is
    None when no index of this map's domain reaches it."""

    fn: IndexFn
    axis: int
    bounds: tuple[int, ...]
    branches: tuple[Gather | Select | None, ...]

    @property
    def shape(self) -> Shape:
        return self.fn.dst

    def shift(self, q: int) -> IndexFn:
        """The concatenated space (restricted to part ``q``) → part ``q``'s index space."""
        whole = self.fn.src
        part = tuple(self.bounds[q + 1] - self.bounds[q] if k == self.axis else d for k, d in enumerate(whole))
        offsets = tuple(-self.bounds[q] if k == self.axis else 0 for k in range(len(whole)))
        return IndexFn.of(Affine(whole, part, offsets, (1,) * len(whole)))


AccessMap = Gather | Select
"""An access map: index space of a reader's operand → (source tensor, index of that tensor), possibly piecewise."""


def identity_view(name: str, shape: Sequence[int]) -> Gather:
    """The view of an operand that reads tensor ``name`` as it is."""
    return Gather(name, IndexFn.identity(shape))


def precompose(m: AccessMap, f: IndexFn) -> AccessMap:
    """``m ∘ f``: the reader's index goes through ``f`` (into ``m``'s index space), then through ``m``."""
    if f.src != m.shape:
        raise ValueError(f"cannot compose: index space {list(f.src)} read through a map of {list(m.shape)}")
    if isinstance(m, Gather):
        return Gather(m.source, f.then(m.fn))
    return Select(f.then(m.fn), m.axis, m.bounds, m.branches)


def substitute(m: AccessMap, name: str, replacement: AccessMap) -> AccessMap:
    """Every read of tensor ``name`` in ``m`` goes through ``replacement`` (``name``'s index space → its sources)."""
    if isinstance(m, Gather):
        return precompose(replacement, m.fn) if m.source == name else m
    branches = tuple(None if b is None else substitute(b, name, replacement) for b in m.branches)
    return m if branches == m.branches else Select(m.fn, m.axis, m.bounds, branches)


def sources(m: AccessMap) -> set[str]:
    """The tensors ``m`` reads."""
    if isinstance(m, Gather):
        return {m.source}
    return set().union(*(sources(b) for b in m.branches if b is not None))


def view_class(m: AccessMap) -> str:
    """``identity``, ``affine`` (permutations and strided offsets only), ``quasi-affine`` (floor-div / mod from
    reshape, tile, repeat) or ``piecewise`` (reads several parts of a concat)."""
    if isinstance(m, Select):
        return "piecewise"
    if m.fn.is_identity:
        return "identity"
    return "affine" if m.fn.is_affine else "quasi-affine"


def describe(m: AccessMap) -> str:
    if isinstance(m, Gather):
        return f"{m.source}[{m.fn.describe()}]"
    parts = ", ".join(f"[{lo},{hi}): {'-' if b is None else describe(b)}"
                      for lo, hi, b in zip(m.bounds[:-1], m.bounds[1:], m.branches, strict=True))
    return f"select(axis {m.axis} of {m.fn.describe()}; {parts})"


def _full_box(shape: Shape) -> Box:
    return tuple(0 for _ in shape), tuple(d - 1 for d in shape)


def _grid(shape: Shape) -> Index:
    """Every multi-index of ``shape`` in row-major order, one flat int64 array per axis."""
    if not shape:
        return ()
    return tuple(a.reshape(-1) for a in np.indices(shape, dtype=np.int64))


def _collapse(m: Select, q: int, branch: AccessMap) -> AccessMap:
    return precompose(branch, m.fn.then(m.shift(q)))


def _merge_candidates(m: Select, branches: Sequence[AccessMap | None]) -> tuple[str, list[int], list[IndexFn]] | None:
    """When at least two parts are reached and every one is a gather of one source tensor: (source, the parts,
    each part's index function composed from the select's domain). Otherwise None."""
    live = [(q, b) for q, b in enumerate(branches) if b is not None]
    leaves = [(q, b) for q, b in live if isinstance(b, Gather)]
    if len(live) < 2 or len(leaves) != len(live) or len({b.source for _, b in leaves}) != 1:
        return None
    return leaves[0][1].source, [q for q, _ in leaves], [m.fn.then(m.shift(q)).then(b.fn) for q, b in leaves]


def _simplify_box(m: AccessMap, box: Box) -> AccessMap:
    """Drop parts outside a sound bounding box of the reached indices; collapse a select that reaches one part."""
    if isinstance(m, Gather):
        return m
    cbox = m.fn.box(box)
    lo, hi = cbox[0][m.axis], cbox[1][m.axis]
    branches: list[AccessMap | None] = []
    for q, b in enumerate(m.branches):
        a, z = max(lo, m.bounds[q]), min(hi, m.bounds[q + 1] - 1)
        if b is None or a > z:
            branches.append(None)
            continue
        sub_lo = tuple(a - m.bounds[q] if k == m.axis else v for k, v in enumerate(cbox[0]))
        sub_hi = tuple(z - m.bounds[q] if k == m.axis else v for k, v in enumerate(cbox[1]))
        branches.append(_simplify_box(b, (sub_lo, sub_hi)))
    live = [q for q, b in enumerate(branches) if b is not None]
    if len(live) == 1:
        q = live[0]
        branch = branches[q]
        assert branch is not None
        collapsed = _collapse(m, q, branch)
        return _simplify_box(collapsed, box) if isinstance(collapsed, Select) else collapsed
    merge = _merge_candidates(m, branches)
    if merge is not None and all(f == merge[2][0] for f in merge[2]):
        # every part reads one tensor through the same function (e.g. a split re-concatenated): no select needed
        return Gather(merge[0], merge[2][0])
    return Select(m.fn, m.axis, m.bounds, tuple(branches))


def _simplify_exact(m: AccessMap, idx: Index) -> AccessMap:
    """As :func:`_simplify_box`, deciding with the actual indices ``idx`` that reach ``m``."""
    if isinstance(m, Gather):
        return m
    c = m.fn(idx)
    part = np.searchsorted(np.asarray(m.bounds), c[m.axis], side="right") - 1
    branches: list[AccessMap | None] = []
    for q, b in enumerate(m.branches):
        mask = part == q
        if b is None or not mask.any():
            branches.append(None)
            continue
        sub = tuple(a[mask] - m.bounds[q] if k == m.axis else a[mask] for k, a in enumerate(c))
        branches.append(_simplify_exact(b, sub))
    live = [q for q, b in enumerate(branches) if b is not None]
    if len(live) == 1:
        q = live[0]
        branch = branches[q]
        assert branch is not None
        collapsed = _collapse(m, q, branch)
        return _simplify_exact(collapsed, idx) if isinstance(collapsed, Select) else collapsed
    merge = _merge_candidates(m, branches)
    if merge is not None:
        source, parts, fns = merge
        agree = True
        for q, f in zip(parts, fns, strict=True):
            mask = part == q
            pts = tuple(a[mask] for a in idx)
            if not all(np.array_equal(x, y) for x, y in zip(fns[0](pts), f(pts), strict=True)):
                agree = False
                break
        if agree:  # the first part's function gives every reached element its source index
            return Gather(source, fns[0])
    return Select(m.fn, m.axis, m.bounds, tuple(branches))


@lru_cache(maxsize=4096)
def simplify(m: AccessMap) -> AccessMap:
    """Remove the parts of ``m`` its domain never reaches and collapse single-part selects.

    A bounding box of the reached indices decides first (sound, cheap); when a select still straddles parts, every
    index of the domain is evaluated (exact). Results are cached: the same view read by many operators costs once."""
    out = _simplify_box(m, _full_box(m.shape))
    if isinstance(out, Select):
        out = _simplify_exact(out, _grid(out.shape))
    return out


def evaluate(m: AccessMap, idx: Index) -> Iterator[tuple[str, np.ndarray, Index]]:
    """For a batch ``idx`` of indices of ``m``'s domain: ``(source, positions, source indices)`` per part reached —
    ``positions`` index into the batch (flattened), the source indices are arrays of the same length."""
    flat = tuple(np.asarray(a, dtype=np.int64).reshape(-1) for a in idx)
    n = flat[0].size if flat else 1
    yield from _evaluate(m, flat, np.arange(n))


def _evaluate(m: AccessMap, idx: Index, pos: np.ndarray) -> Iterator[tuple[str, np.ndarray, Index]]:
    if isinstance(m, Gather):
        yield m.source, pos, m.fn(idx)
        return
    c = m.fn(idx)
    part = np.searchsorted(np.asarray(m.bounds), c[m.axis], side="right") - 1
    for q, b in enumerate(m.branches):
        mask = part == q
        if not mask.any():
            continue
        if b is None:
            raise ValueError(f"index reaches part {q} of a select that was simplified away")
        sub = tuple(a[mask] - m.bounds[q] if k == m.axis else a[mask] for k, a in enumerate(c))
        yield from _evaluate(b, sub, pos[mask])


def gather(m: AccessMap, values: Mapping[str, np.ndarray]) -> np.ndarray:
    """Materialise view ``m``: an array of ``m.shape`` gathered from ``values`` with numpy fancy indexing."""
    if isinstance(m, Gather) and m.fn.is_identity:
        return np.asarray(values[m.source])  # operators never modify their inputs
    srcs = sources(m)
    dtype = np.result_type(*(values[s] for s in srcs))
    out = np.empty(math.prod(m.shape), dtype=dtype)
    for src, pos, sidx in evaluate(m, _grid(m.shape)):
        out[pos] = values[src][sidx] if sidx else values[src]
    return out.reshape(m.shape)


def _piece_counts(m: AccessMap) -> dict[str, int]:
    """Elements of ``m``'s domain read from each source tensor."""
    if isinstance(m, Gather):
        return {m.source: math.prod(m.shape)}
    return _piece_counts_cached(m)


@lru_cache(maxsize=4096)
def _piece_counts_cached(m: Select) -> dict[str, int]:
    out: dict[str, int] = {}
    for src, pos, _ in evaluate(m, _grid(m.shape)):
        out[src] = out.get(src, 0) + int(pos.size)
    return out


# ================================================================================================ operator maps
def _dm_step(op: Operator, in_shape: Shape, out_shape: Shape, out_pos: int) -> Step:
    a = normalize_attrs(op.kind, op.attrs)
    rank = len(in_shape)
    if op.kind == OpKind.TRANSPOSE:
        return Permute(out_shape, in_shape, tuple(a["perm"]))
    if op.kind == OpKind.RESHAPE:
        return Reshape(out_shape, in_shape)
    if op.kind == OpKind.SLICE:
        return Affine(out_shape, in_shape, tuple(a["starts"]), tuple(a["steps"]))
    if op.kind == OpKind.SPLIT:
        ax = a["axis"] % rank
        offset = sum(a["sizes"][:out_pos])
        return Affine(out_shape, in_shape, tuple(offset if k == ax else 0 for k in range(rank)), (1,) * rank)
    if op.kind == OpKind.TILE:
        return Modulo(out_shape, in_shape)
    if op.kind == OpKind.REPEAT:
        return FloorDiv(out_shape, in_shape, a["axis"] % rank, a["repeats"])
    raise ValueError(f"operator '{op.name}' ({op.kind.value}) is not a single-input data-movement operator")


def operator_access_map(op: Operator, inputs: Sequence[AccessMap], out_shapes: Sequence[Shape],
                        out_pos: int = 0) -> AccessMap:
    """The access function of data-movement operator ``op`` for its output ``out_pos``, composed with the views
    ``inputs`` of its operands: output index space → the tensors those views read."""
    if op.kind not in DATA_MOVEMENT_KINDS:
        raise ValueError(f"operator '{op.name}' ({op.kind.value}) is not a data-movement operator")
    out_shape = tuple(out_shapes[out_pos])
    if op.kind == OpKind.CONCAT:
        ax = normalize_attrs(op.kind, op.attrs)["axis"] % len(out_shape)
        bounds = [0]
        for v in inputs:
            bounds.append(bounds[-1] + v.shape[ax])
        return simplify(Select(IndexFn.identity(out_shape), ax, tuple(bounds), tuple(inputs)))
    (view,) = inputs
    return precompose(view, IndexFn.of(_dm_step(op, view.shape, out_shape, out_pos)))


# ================================================================================================ rewritten graph
@dataclass(frozen=True)
class RewrittenOp:
    """An operator of the rewritten graph: ``op`` applied to the views ``inputs`` (one per ``op.inputs``), storing
    ``stored`` (the outputs that still exist; a data-movement operator may keep some parts of a split only)."""

    op: Operator
    inputs: tuple[AccessMap, ...]
    stored: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.op.name


@dataclass(frozen=True)
class RewrittenGraph:
    """Operators (schedule order) reading views of the tensors that exist; ``tensors`` are the original tensors
    (the eliminated ones no operator stores any more)."""

    name: str
    tensors: Mapping[str, Tensor]
    operators: tuple[RewrittenOp, ...]
    outputs: tuple[str, ...]

    @staticmethod
    def from_workload(workload: Workload) -> RewrittenGraph:
        ops = tuple(
            RewrittenOp(op, tuple(identity_view(t, workload.tensors[t].shape) for t in op.inputs), op.outputs)
            for op in workload.operators
        )
        outputs = tuple(t for t, v in workload.tensors.items() if v.role == TensorRole.OUTPUT)
        return RewrittenGraph(workload.name, workload.tensors, ops, outputs)

    @property
    def stored(self) -> list[str]:
        """Tensors some operator stores, in schedule order."""
        return [t for r in self.operators for t in r.stored]

    def readers(self) -> dict[str, list[int]]:
        """Tensor → indices of the operators whose views read it."""
        out: dict[str, list[int]] = {}
        for i, r in enumerate(self.operators):
            for t in set().union(*(sources(v) for v in r.inputs)) if r.inputs else set():
                out.setdefault(t, []).append(i)
        return out

    def load_store_pairs(self) -> list[tuple[str, str]]:
        """(data-movement operator, tensor it stores): the load/store pairs."""
        return [(r.name, t) for r in self.operators if r.op.kind in DATA_MOVEMENT_KINDS for t in r.stored]


@dataclass(frozen=True)
class KeptPair:
    operator: str
    tensor: str
    reason: str


@dataclass(frozen=True)
class CopyTraffic:
    """Load/store bytes, split by where the touched tensor resides (see the module docstring)."""

    on_chip: int
    off_chip: int

    @property
    def total(self) -> int:
        return self.on_chip + self.off_chip


@dataclass(frozen=True)
class DMEResult:
    """Outcome of :func:`eliminate` on ``original``: the rewritten graph and what disappeared."""

    original: RewrittenGraph
    graph: RewrittenGraph
    consumers: str
    pairs_total: int
    pairs_eliminated: int
    eliminated: tuple[str, ...]
    kept: tuple[KeptPair, ...]
    intermediate_bytes_total: int
    intermediate_bytes_eliminated: int
    rewrites: int
    rounds: int
    seconds: float
    view_classes: Mapping[str, int] = field(default_factory=dict)

    def copies(self, onchip_capacity: int) -> dict[str, Any]:
        """On-chip and off-chip copy bytes before and after, and the savings (bytes and fractions)."""
        before = copy_traffic(self.original, onchip_capacity)
        after = copy_traffic(self.graph, onchip_capacity)
        out: dict[str, Any] = {"onchip_capacity": onchip_capacity}
        for key in ("on_chip", "off_chip", "total"):
            b, a = getattr(before, key), getattr(after, key)
            out[key] = {"before": b, "after": a, "saved": b - a, "saved_fraction": (b - a) / b if b else 0.0}
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "graph": self.graph.name,
            "consumers": self.consumers,
            "pairs_total": self.pairs_total,
            "pairs_eliminated": self.pairs_eliminated,
            "intermediate_bytes_total": self.intermediate_bytes_total,
            "intermediate_bytes_eliminated": self.intermediate_bytes_eliminated,
            "operators_before": len(self.original.operators),
            "operators_after": len(self.graph.operators),
            "rewrites": self.rewrites,
            "rounds": self.rounds,
            "kept": [(k.operator, k.tensor, k.reason) for k in self.kept],
            "view_classes": dict(self.view_classes),
            "seconds": self.seconds,
        }


def _may_rewrite(op: Operator, consumers: str) -> bool:
    return consumers == "all" or op.kind in DATA_MOVEMENT_KINDS


def eliminate(graph: Workload | RewrittenGraph, *, consumers: str = "all") -> DMEResult:
    """Eliminate load/store pairs of data-movement operators until a fixed point (see the module docstring).

    ``graph`` is a workload or an already rewritten graph (then only what is left is considered: running on a
    result's graph eliminates nothing more). ``consumers`` is one of :data:`CONSUMER_POLICIES`."""
    if consumers not in CONSUMER_POLICIES:
        raise ValueError(f"consumers must be one of {', '.join(CONSUMER_POLICIES)}; got {consumers!r}")
    t0 = time.perf_counter()
    start = RewrittenGraph.from_workload(graph) if isinstance(graph, Workload) else graph
    tensors = start.tensors
    outputs = set(start.outputs)
    views = [list(r.inputs) for r in start.operators]
    stored = [list(r.stored) for r in start.operators]
    ops = [r.op for r in start.operators]
    shapes = [[tensors[t].shape for t in op.outputs] for op in ops]
    readers: dict[str, set[int]] = {}
    for i, vs in enumerate(views):
        for v in vs:
            for t in sources(v):
                readers.setdefault(t, set()).add(i)

    rewrites = 0
    rounds = 0
    while True:
        rounds += 1
        changed = False
        for p, op in enumerate(ops):
            if op.kind not in DATA_MOVEMENT_KINDS or not stored[p]:
                continue
            for t in list(stored[p]):
                targets = sorted(i for i in readers.get(t, ()) if _may_rewrite(ops[i], consumers))
                if not targets:
                    continue
                m_t = operator_access_map(op, views[p], shapes[p], op.outputs.index(t))
                for i in targets:
                    for k, v in enumerate(views[i]):
                        if t in sources(v):
                            nv = simplify(substitute(v, t, m_t))
                            views[i][k] = nv
                            for s in sources(nv):
                                readers.setdefault(s, set()).add(i)
                    readers[t].discard(i)
                    rewrites += 1
                    changed = True
        # tensors nobody reads any more disappear, then operators that store nothing; readers come after their
        # producers in the schedule, so one backward sweep settles the cascade
        for p in reversed(range(len(ops))):
            stored[p] = [t for t in stored[p] if t in outputs or readers.get(t)]
            if not stored[p]:
                for v in views[p]:
                    for s in sources(v):
                        readers.get(s, set()).discard(p)
        if not changed:
            break

    kept_ops = [p for p in range(len(ops)) if stored[p]]
    new = RewrittenGraph(
        start.name, tensors,
        tuple(RewrittenOp(ops[p], tuple(views[p]), tuple(stored[p])) for p in kept_ops),
        start.outputs,
    )
    before_pairs = start.load_store_pairs()
    after_pairs = set(new.load_store_pairs())
    eliminated = tuple(t for pair in before_pairs if pair not in after_pairs for t in pair[1:])
    gone = set(eliminated)
    kept: list[KeptPair] = []
    for name, t in before_pairs:
        if t in gone:
            continue
        if t in outputs:
            reason = "graph output: it must exist in memory after the graph finishes"
        else:
            blockers = sorted({ops[i].name for i in readers.get(t, ())})
            reason = (f"read by {len(blockers)} operator(s) that may not be rewritten under consumers="
                      f"{consumers!r} (e.g. {blockers[0]})" if blockers else "not reachable")
        kept.append(KeptPair(name, t, reason))
    classes: dict[str, int] = {}
    for r in new.operators:
        for v in r.inputs:
            c = view_class(v)
            classes[c] = classes.get(c, 0) + 1
    size = {t: tensors[t].size_bytes for _, t in before_pairs}
    return DMEResult(
        original=start,
        graph=new,
        consumers=consumers,
        pairs_total=len(before_pairs),
        pairs_eliminated=len(eliminated),
        eliminated=eliminated,
        kept=tuple(kept),
        intermediate_bytes_total=sum(size.values()),
        intermediate_bytes_eliminated=sum(size[t] for t in eliminated),
        rewrites=rewrites,
        rounds=rounds,
        seconds=time.perf_counter() - t0,
        view_classes=classes,
    )


# ================================================================================================ execution
def run_rewritten(result: DMEResult | RewrittenGraph, values: Mapping[str, Any],
                  *, keep_all: bool = False) -> dict[str, np.ndarray]:
    """Run a rewritten graph on ``values`` (graph inputs and weights, as for
    :func:`dlaopt.workload.execute.execute`): gather every view, apply the operator with the executor's semantics.
    Returns the graph outputs (every stored tensor too with ``keep_all``)."""
    graph = result.graph if isinstance(result, DMEResult) else result
    env: dict[str, np.ndarray] = {k: np.asarray(v) for k, v in values.items()}
    for r in graph.operators:
        outs = run_operator(r.op, [gather(v, env) for v in r.inputs])
        for t, arr in zip(r.op.outputs, outs, strict=True):
            if t in r.stored:
                env[t] = arr
    names = graph.stored if keep_all else list(graph.outputs)
    return {t: env[t] for t in names}


# ================================================================================================ copy accounting
def copy_traffic(graph: RewrittenGraph | Workload, onchip_capacity: int) -> CopyTraffic:
    """Load/store bytes of every operator of ``graph``, on chip and off chip (rules in the module docstring)."""
    g = RewrittenGraph.from_workload(graph) if isinstance(graph, Workload) else graph
    if onchip_capacity < 0:
        raise ValueError(f"onchip_capacity must be non-negative, got {onchip_capacity}")
    outputs = set(g.outputs)
    on = off = 0

    def resident(name: str) -> bool:
        t = g.tensors[name]
        return name not in outputs and t.size_bytes <= onchip_capacity

    staged: set[str] = set()
    for r in g.operators:
        if r.op.kind in DATA_MOVEMENT_KINDS:  # one load per stored element, through the operator's access function
            shapes = [g.tensors[t].shape for t in r.op.outputs]
            loads = [operator_access_map(r.op, r.inputs, shapes, r.op.outputs.index(t)) for t in r.stored]
        else:  # every element of every operand once
            loads = list(r.inputs)
        for v in loads:
            for src, n in _piece_counts(v).items():
                t = g.tensors[src]
                nbytes = n * t.dtype_bytes
                if not t.role.is_produced and resident(src) and src not in staged:
                    staged.add(src)
                    off += t.size_bytes  # staged on chip once
                if resident(src):
                    on += nbytes
                else:
                    off += nbytes
        for t in r.stored:
            if resident(t):
                on += g.tensors[t].size_bytes
            else:
                off += g.tensors[t].size_bytes
    return CopyTraffic(on, off)


def per_kind_pairs(graph: RewrittenGraph) -> dict[str, int]:
    """Load/store pairs per data-movement kind."""
    out: dict[str, int] = {}
    for r in graph.operators:
        if r.op.kind in DATA_MOVEMENT_KINDS:
            out[r.op.kind.value] = out.get(r.op.kind.value, 0) + len(r.stored)
    return out

