"""A layer as a perfectly nested loop with per-operand index projections.

Every mappable layer (conv2d with batch, groups, stride and dilation; depthwise conv; gemm / batched matmul) is a
loop nest over named dimensions whose body is ``O[...] += I[...] * W[...]``. Each operand coordinate is an affine
projection ``sum(coef * dim)`` of the loop indices; a convolution input row is ``stride * P + dilation * R``, so the
input tile of a ``p x r`` slice holds the rows ``{stride * i + dilation * j : i < p, j < r}`` (the sliding-window
halo). :func:`coordinate_extent` counts that set exactly, also when ``stride > dilation * (r - 1) + 1`` leaves holes.
A matmul ``O[B, M, N] += I[B, M, K] * W[B, K, N]`` drops ``B`` from an operand broadcast over the batch: a linear
layer's weight ``W[K, N]`` applied to a ``(B, M, K)`` input is one weight, fetched once for all ``B``.

Padding (an explicit option): a dimension may be rounded up to a multiple of a chosen value; the extra iterations are
wasted work, counted by the cost model, and the input is assumed zero-padded accordingly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property

from dlaopt.errors import InputError
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind

OPERANDS = ("I", "W", "O")  # input activation, weight (second input), output (read-modify-write)


@dataclass(frozen=True)
class Coordinate:
    """One coordinate of an operand: ``sum(coef * index[dim])`` over ``terms``."""

    terms: tuple[tuple[str, int], ...]

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.terms)


@dataclass(frozen=True)
class Operand:
    name: str  # "I", "W" or "O"
    tensor: str  # the workload tensor it reads or writes
    coords: tuple[Coordinate, ...]
    word_bytes: int

    @cached_property
    def dims(self) -> frozenset[str]:
        """Loop dimensions this operand is relevant to (its index changes when they advance)."""
        return frozenset(d for c in self.coords for d in c.dims)


@dataclass(frozen=True)
class LoopNest:
    """``name`` is the layer (operator) name; ``sizes`` the (possibly padded) loop bounds, ``real_sizes`` the
    layer's own bounds (they differ only when padding was requested)."""

    name: str
    kind: str
    dims: tuple[str, ...]
    sizes: Mapping[str, int]
    operands: tuple[Operand, ...]
    real_sizes: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", dict(self.sizes))
        object.__setattr__(self, "real_sizes", dict(self.real_sizes or self.sizes))
        if tuple(o.name for o in self.operands) != OPERANDS:
            raise ValueError(f"layer '{self.name}': operands must be {OPERANDS}")
        for d in self.dims:
            if self.sizes[d] < 1 or self.real_sizes[d] < 1 or self.real_sizes[d] > self.sizes[d]:
                raise ValueError(f"layer '{self.name}': bad size for dimension {d}")

    def operand(self, name: str) -> Operand:
        return self.operands[OPERANDS.index(name)]

    @property
    def macs(self) -> int:
        """MACs executed (padded bounds)."""
        return math.prod(self.sizes[d] for d in self.dims)

    @property
    def real_macs(self) -> int:
        return math.prod(self.real_sizes[d] for d in self.dims)

    def footprint(self, operand: str, tile: Mapping[str, int]) -> int:
        """Distinct elements of ``operand`` touched by a tile of ``tile[d]`` consecutive indices per dimension
        (dimensions missing from ``tile`` count as 1)."""
        return math.prod(
            coordinate_extent(tuple((coef, tile.get(d, 1)) for d, coef in c.terms))
            for c in self.operand(operand).coords
        )

    def shape_key(self) -> tuple:
        """Layers with equal keys have identical mapping problems (used to solve unique shapes once)."""
        return (self.kind, tuple(sorted(self.sizes.items())), tuple(sorted(self.real_sizes.items())),
                tuple((o.name, o.coords, o.word_bytes) for o in self.operands))

    @property
    def shape_text(self) -> str:
        """The loop bounds other than 1, e.g. ``K=64 C=64 P=56 Q=56 R=3 S=3``."""
        return " ".join(f"{d}={self.sizes[d]}" for d in self.dims if self.sizes[d] > 1) or "1"

    def describe(self) -> str:
        return f"{self.name} ({self.kind}: {self.shape_text})"


@cache
def coordinate_extent(terms: tuple[tuple[int, int], ...]) -> int:
    """Number of distinct values of ``sum(coef_i * x_i)`` with ``0 <= x_i < n_i``; ``terms`` is ``((coef, n), ...)``."""
    terms = tuple((c, n) for c, n in terms if n > 1)
    if not terms:
        return 1
    if len(terms) == 1:
        return terms[0][1]
    values = {0}
    for coef, n in terms:
        values = {v + coef * i for v in values for i in range(n)}
    return len(values)


def divisors(n: int) -> list[int]:
    small, large = [], []
    i = 1
    while i * i <= n:
        if n % i == 0:
            small.append(i)
            if i * i != n:
                large.append(n // i)
        i += 1
    return small + large[::-1]


def prime_factors(n: int) -> dict[int, int]:
    """``{prime: exponent}`` of ``n``."""
    out: dict[int, int] = {}
    p = 2
    while p * p <= n:
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
        p += 1
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


# ------------------------------------------------------------------------------------------------ from workloads
MAPPABLE = (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.MATMUL)


def is_mappable(op: Operator) -> bool:
    return op.kind in MAPPABLE


def loopnest_from_operator(workload: Workload, op: Operator, padding: Mapping[str, int] | None = None) -> LoopNest:
    """The loop nest of a conv2d / depthwise conv / matmul operator. ``padding`` maps a dimension to a multiple its
    bound is rounded up to."""
    if not is_mappable(op):
        raise ValueError(f"operator '{op.name}' ({op.kind}) is not a conv2d, depthwise conv or matmul")
    real = dict(op.dims)
    sizes = {d: _round_up(n, (padding or {}).get(d, 1)) for d, n in real.items()}
    in_bytes = workload.tensors[op.inputs[0]].dtype_bytes
    w_bytes = workload.tensors[op.inputs[1]].dtype_bytes
    out_bytes = workload.tensors[op.outputs[0]].dtype_bytes
    if op.kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
        sh, sw = op.attrs["stride"]
        dh, dw = op.attrs["dilation"]
        dims = ("N", "G", "K", "C", "P", "Q", "R", "S")
        i = Operand("I", op.inputs[0], (_c("N"), _c("G"), _c("C"), Coordinate((("P", sh), ("R", dh))),
                                        Coordinate((("Q", sw), ("S", dw)))), in_bytes)
        w = Operand("W", op.inputs[1], (_c("G"), _c("K"), _c("C"), _c("R"), _c("S")), w_bytes)
        o = Operand("O", op.outputs[0], (_c("N"), _c("G"), _c("K"), _c("P"), _c("Q")), out_bytes)
        kind = "depthwise" if op.kind == OpKind.DEPTHWISE_CONV2D else "conv2d"
    else:
        dims = ("B", "M", "N", "K")

        def batched(name: str) -> tuple[Coordinate, ...]:
            # an operand broadcast over the batch (a linear layer's weight on a (B, M, K) input) does not vary
            # with B: B is irrelevant to it (kept when B is 1, where it changes nothing)
            shape = workload.tensors[name].shape
            return (_c("B"),) if sizes["B"] == 1 or math.prod(shape[:-2]) > 1 else ()

        i = Operand("I", op.inputs[0], (*batched(op.inputs[0]), _c("M"), _c("K")), in_bytes)
        w = Operand("W", op.inputs[1], (*batched(op.inputs[1]), _c("K"), _c("N")), w_bytes)
        o = Operand("O", op.outputs[0], (_c("B"), _c("M"), _c("N")), out_bytes)
        kind = "matmul"
    return LoopNest(op.name, kind, dims, sizes, (i, w, o), real)


def mappable_layers(workload: Workload, names: Iterable[str] | None = None) -> list[Operator]:
    ops = [op for op in workload.operators if is_mappable(op)]
    if names is None:
        return ops
    wanted = list(names)
    by_name = {op.name: op for op in ops}
    return [by_name[n] for n in wanted]


def require_mappable(workload: Workload, file: str | None, names: Iterable[str] | None = None) -> list[Operator]:
    """:func:`mappable_layers`, or an :class:`InputError` at ``workload`` when there is none."""
    ops = mappable_layers(workload, names)
    if not ops:
        raise InputError(f"workload '{workload.name}' has no conv2d, depthwise conv or matmul operator", file=file,
                         path=("workload",), expected="at least one conv2d, depthwise_conv2d or matmul operator")
    return ops


def unique_layers(nests: Sequence[LoopNest]) -> dict[tuple, list[int]]:
    """Indices of ``nests`` grouped by identical mapping problem (first index is the representative)."""
    groups: dict[tuple, list[int]] = {}
    for i, n in enumerate(nests):
        groups.setdefault(n.shape_key(), []).append(i)
    return groups


def _c(dim: str) -> Coordinate:
    return Coordinate(((dim, 1),))


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


__all__ = ["OPERANDS", "Coordinate", "LoopNest", "Operand", "coordinate_extent", "divisors", "is_mappable",
           "loopnest_from_operator", "mappable_layers", "prime_factors", "unique_layers"]
