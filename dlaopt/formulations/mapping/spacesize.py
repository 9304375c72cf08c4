r"""Exact sizes of a layer's map space on an accelerator, per representation (seed 001 §5.2.2) — counted, not
estimated.

The chapter sizes Timeloop's map space of a CONV2D on a 3-level hierarchy as "tile combinations" x
:math:`(7!)^3` loop orders x :math:`2^{7 \times 2}` parallelism choices and calls it :math:`O(10^{21})`. Here the
space is counted exactly (Python integers) for dlaopt's slot structure (:meth:`MappingArch.slots`: per level ``j``
a *band* of slots — the spatial axes of the fanout below it (the MAC fanout for level 0) and its temporal slot
``T(j)``), in four representations (:data:`REPRESENTATIONS`):

1. ``timeloop`` — every perfect factorization of every dimension over the slots with the spatial factors of every
   axis multiplying to at most its size, times a full permutation of the problem's dimensions at every level:
   :math:`F \cdot (D!)^L`. ``D`` counts Timeloop's problem dimensions (a convolution's seven: dlaopt's group
   dimension ``G`` of size 1 is left out, see :func:`problem_dims`).
2. ``pruned`` — Timeloop's Random-Pruned space (§5.2.3: "permutations do not matter for the innermost tiling level
   and for tile sizes that are one"): the factorizations, with orders of the loops of factor above 1 only and no
   order at level 0: :math:`\sum_{f} \prod_{j \ge 1} c_j(f)!`, ``c_j`` the number of dimensions with ``f[d][T(j)] >
   1``.
3. ``dlaopt`` — distinct :func:`~.heuristics.mapping_key` values (orders of the loops of factor above 1 at every
   level): :math:`\sum_{f} \prod_{j} c_j(f)!`; the number of mappings :func:`~.exhaustive.all_mappings` yields.
4. ``valid`` — those of ``dlaopt`` whose tiles fit every bounded store (the cost model's capacity check,
   :func:`~.heuristics.capacity_overflows`; convolution inputs with their halo).

``chapter`` is the chapter's own formula with exact ingredients: tile combinations :math:`\prod_d \prod_{p^e \| n_d}
\binom{e + L - 1}{L - 1}` (a chain of tiles per dimension over the ``L`` levels), times :math:`(D!)^L`, times
:math:`2^{D \cdot F}` with ``F`` the fanouts (compute levels) of the accelerator.

**How it is counted.** Without spatial axes a dimension ``n = \prod p^{e_p}`` has :math:`\tau_K(n) = \prod_p
\binom{e_p + K - 1}{K - 1}` factorizations over ``K`` slots (each prime's exponent split by stars and bars); the
axis sizes couple the dimensions. Write the mapping per dimension as a chain of tiles ``t_0 | t_1 | ... | t_{L-2} |
n_d`` (``t_j`` = the product of the factors at the slots of bands ``0..j``, the tile of level ``j``) and band ``j``'s
share ``r_j = t_j / t_{j-1}``. Given the chains of all dimensions the bands are independent, so

.. math:: |S| = \sum_{\text{chains}} \prod_j B_j(r_j) \cdot [\text{capacity}(t_0, \dots, t_{L-2})],
   \qquad B_j(r) = \sum_{\text{splits of } r \text{ over band } j} w_j(c_j),

the sum over splits of every dimension's ``r_{j,d}`` into the band's spatial axes (products over dimensions within
each axis' size) and its temporal slot (the rest), ``c_j`` the number of dimensions whose temporal factor exceeds
1 and ``w_j(c) = c!`` (``pruned``: 1 at level 0; ``timeloop``: 1, the orders are the separate :math:`(D!)^L`).
``B_j`` is computed for every vector ``r`` of divisors at once by a dynamic program over the dimensions on the state
(used size of every axis of the band, ``c``), meet-in-the-middle: the dimensions split in two halves whose tables
are joined by a matrix product. Capacity depends on the tile of each level only, so the chain sum is a sequence
of convolutions on the lattice of prime exponents, ``G_j(t) = [t \text{ fits level } j] \sum_{s \le t} G_{j-1}(s)
B_j(t - s)``, evaluated modulo several primes below :math:`2^{31}` (int64 arithmetic) and recombined by the Chinese
remainder theorem into the exact integer (enough primes that their product exceeds a proven upper bound).

Every count is checked against brute-force enumeration in the tests (``tests/test_mapping_spacesize.py``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping as MappingABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.heuristics import checked_stores
from dlaopt.formulations.mapping.loopnest import LoopNest, coordinate_extent, loopnest_from_operator, prime_factors
from dlaopt.hardware.presets import PRESETS
from dlaopt.workload.builder import NetworkBuilder

REPRESENTATIONS = ("timeloop", "pruned", "dlaopt", "valid")


# ================================================================================================== the workloads
TABLE_5_1_CONVS: dict[str, tuple[int, int, int, int, int, int, int]] = {
    # (B, K, C, Y, X, R, S) of seed 001 Table 5.1
    "resnet-conv3": (16, 128, 128, 28, 28, 3, 3),
    "resnet-conv4": (16, 256, 256, 14, 14, 3, 3),
    "inception-conv2": (16, 192, 192, 27, 27, 5, 5),
}
TABLE_5_1_MATMULS: dict[str, tuple[int, int, int, int]] = {
    # (B, M, K, N) of seed 001 Table 5.1
    "bert-kqv": (16, 1024, 1024, 512),
    "bert-attn": (16, 512, 1024, 512),
    "bert-ff": (16, 4096, 1024, 512),
}


def table_5_1_layers(dtype_bytes: int = 2) -> dict[str, LoopNest]:
    """The workloads of seed 001 Table 5.1 as dlaopt loop nests: the three convolutions (``same`` padding, so the
    output is ``Y x X``) and the three BERT-large matrix products built as dlaopt builds a linear layer (input
    ``(B, M, K)``, weight ``(K, N)``; dimensions ``B, M, N, K``)."""
    b = NetworkBuilder("table-5.1", dtype_bytes=dtype_bytes)
    outs = []
    for name, (n, k, c, y, x, r, s) in TABLE_5_1_CONVS.items():
        t = b.input(f"{name}.in", (n, c, y, x))
        outs.append(b.conv2d(t, k, (r, s), padding=(r // 2, s // 2), name=name))
    for name, (bb, m, k, n) in TABLE_5_1_MATMULS.items():
        t = b.input(f"{name}.in", (bb, m, k))
        outs.append(b.linear(t, n, name=name))
    w = b.build(outs)
    return {op.name: loopnest_from_operator(w, op) for op in w.operators}


# ================================================================================================== helpers
def problem_dims(nest: LoopNest) -> int:
    """The number of loop dimensions Timeloop's problem shape has for this layer: a convolution's group dimension
    ``G`` of size 1 is dlaopt's own (Timeloop's CNN layer has seven dimensions), every other dimension counts."""
    return sum(1 for d in nest.dims if not (nest.kind == "conv2d" and d == "G" and nest.sizes[d] == 1))


def stars_and_bars(n: int, slots: int) -> int:
    """Perfect factorizations of ``n`` over ``slots`` unbounded slots: :math:`\\prod_p \\binom{e_p + K - 1}{K - 1}`."""
    return math.prod(math.comb(e + slots - 1, slots - 1) for e in prime_factors(n).values())


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % p for p in range(2, math.isqrt(n) + 1))


@cache
def _moduli(count: int) -> tuple[int, ...]:
    """The ``count`` largest primes below :math:`2^{31}` (products of two stay within int64)."""
    out: list[int] = []
    n = 2 ** 31 - 1
    while len(out) < count:
        if _is_prime(n):
            out.append(n)
        n -= 2
    return tuple(out)


def _crt(residues: Sequence[int], moduli: Sequence[int]) -> int:
    x, m = 0, 1
    for r, p in zip(residues, moduli, strict=True):
        # x + m * k = r (mod p)
        k = ((r - x) * pow(m, -1, p)) % p
        x, m = x + m * k, m * p
    return x


@dataclass(frozen=True)
class _Lattice:
    """The divisors of every dimension above 1 (``dims``), each dimension's in lexicographic order of its prime
    exponents (ascending primes), so that the grid of divisor indices reshapes to the box of prime exponents."""

    dims: tuple[str, ...]
    primes: tuple[tuple[int, ...], ...]  # per dimension, its distinct primes ascending
    exps: tuple[tuple[int, ...], ...]  # per dimension, their exponents
    divisors: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, nest: LoopNest) -> _Lattice:
        dims, primes, exps, divs = [], [], [], []
        for d in nest.dims:
            n = nest.sizes[d]
            if n == 1:
                continue
            pf = sorted(prime_factors(n).items())
            ps, es = tuple(p for p, _ in pf), tuple(e for _, e in pf)
            dv = tuple(math.prod(p ** x for p, x in zip(ps, xs, strict=True))
                       for xs in itertools.product(*(range(e + 1) for e in es)))
            dims.append(d)
            primes.append(ps)
            exps.append(es)
            divs.append(dv)
        return cls(tuple(dims), tuple(primes), tuple(exps), tuple(divs))

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.divisors)

    @property
    def box(self) -> tuple[int, ...]:
        return tuple(e + 1 for es in self.exps for e in es)


# ================================================================================================== band tables
def _bands(arch: MappingArch) -> list[tuple[int, ...]]:
    """Per level (innermost first), the sizes of the spatial axes of its band (the slots after the previous
    temporal slot up to its own)."""
    out: list[tuple[int, ...]] = []
    cur: list[int] = []
    for s in arch.slots():
        if s.kind == SPATIAL:
            cur.append(s.size)
        else:
            out.append(tuple(cur))
            cur = []
    return out


def _reachable(caps: Sequence[int], lat: _Lattice) -> list[list[int]]:
    """Per axis, the used sizes products of the dimensions' divisors can reach within the axis size."""
    out = []
    pool = sorted({v for dv in lat.divisors for v in dv})
    for cap in caps:
        seen = {1}
        frontier = [1]
        while frontier:
            nxt = []
            for u in frontier:
                for v in pool:
                    w = u * v
                    if w <= cap and w not in seen:
                        seen.add(w)
                        nxt.append(w)
            frontier = nxt
        out.append(sorted(seen))
    return out


def _splits(r: int, caps: Sequence[int]) -> list[tuple[tuple[int, ...], bool]]:
    """The splits of ``r`` over a band: spatial factors (each dividing what is left and within its axis size) and
    whether the temporal rest exceeds 1."""
    out: list[tuple[tuple[int, ...], bool]] = []

    def rec(k: int, left: int, prefix: tuple[int, ...]) -> None:
        if k == len(caps):
            out.append((prefix, left > 1))
            return
        for a in range(1, min(left, caps[k]) + 1):
            if left % a == 0:
                rec(k + 1, left // a, (*prefix, a))

    rec(0, r, ())
    return out


def _half_table(lat: _Lattice, dims: Sequence[int], caps: Sequence[int], values: list[list[int]], C: int,
                dtype: type) -> np.ndarray:
    """``X[p, s, c]``: over the dimensions ``dims`` (lattice indices) with divisor indices ``p`` (C order), the
    number of band splits with used axis sizes ``s`` (state index over ``values``) and ``c`` live temporal loops."""
    shape = tuple(len(v) for v in values)
    S = math.prod(shape)
    states = list(itertools.product(*values))
    index = {st: i for i, st in enumerate(states)}
    X = np.zeros((1, S, C), dtype=dtype)
    X[0, index[tuple(1 for _ in caps)], 0] = 1
    moves: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
    for di in dims:
        divs = lat.divisors[di]
        Xn = np.zeros((X.shape[0], len(divs), S, C), dtype=dtype)
        for q, r in enumerate(divs):
            for a, live in _splits(r, caps):
                if a not in moves:
                    src, tgt = [], []
                    for i, st in enumerate(states):
                        nxt = tuple(u * f for u, f in zip(st, a, strict=True))
                        if nxt in index:
                            src.append(i)
                            tgt.append(index[nxt])
                    moves[a] = (np.array(src, dtype=int), np.array(tgt, dtype=int))
                src, tgt = moves[a]
                if len(src):
                    lv = int(live)
                    Xn[:, q, tgt, lv:] += X[:, src, :C - lv]
        X = Xn.reshape(-1, S, C)
    return X


def band_table(lat: _Lattice, caps: Sequence[int], weight: Sequence[int]) -> np.ndarray:
    """``B[r]`` over the grid of divisor vectors: the splits of every dimension's ``r_d`` over a band with spatial
    axes ``caps``, each weighted by ``weight[c]`` (``c`` the live temporal loops); see the module docstring."""
    D = len(lat.dims)
    C = D + 1
    bound = math.prod(len(_splits(n, caps)) for n in (max(dv) for dv in lat.divisors)) * max(weight)
    dtype: type = np.int64 if bound < 2 ** 62 else object
    values = _reachable(caps, lat)
    grid = lat.grid
    # split the dimensions where the two halves' grids are closest in size
    cut = min(range(D + 1), key=lambda i: abs(math.prod(grid[:i]) - math.prod(grid[i:])))
    left = _half_table(lat, range(cut), caps, values, C, dtype)
    right = _half_table(lat, range(cut, D), caps, values, C, dtype)
    states = list(itertools.product(*values))
    S = len(states)
    caps_t = tuple(caps)
    fits = np.array([[all(u * v <= c for u, v, c in zip(a, b, caps_t, strict=True)) for b in states] for a in states])
    w = np.array([[weight[c1 + c2] if c1 + c2 < len(weight) else 0 for c2 in range(C)] for c1 in range(C)],
                 dtype=dtype)
    K = (fits[:, None, :, None] * w[None, :, None, :]).reshape(S * C, S * C).astype(dtype)
    out = left.reshape(left.shape[0], S * C) @ K @ right.reshape(right.shape[0], S * C).T
    return out.reshape(grid)


# ================================================================================================== capacity
def capacity_mask(nest: LoopNest, arch: MappingArch, lat: _Lattice, level: int) -> np.ndarray | None:
    """Over the grid of divisor vectors (tiles of level ``level``): whether every checked store of the level holds
    its operands' tiles (``None``: nothing to check there). Footprints as the cost model's: a product over each
    operand's coordinates of its extent (:func:`~.loopnest.coordinate_extent`, the halo of a two-term one)."""
    stores = [(held, cap) for j, _, held, cap in checked_stores(arch) if j == level]
    if not stores:
        return None
    grid = lat.grid
    D = len(lat.dims)
    pos = {d: i for i, d in enumerate(lat.dims)}

    def axis_values(d: str) -> np.ndarray:
        shape = [1] * D
        shape[pos[d]] = grid[pos[d]]
        return np.array(lat.divisors[pos[d]], dtype=np.int64).reshape(shape)

    usage = {}
    for t in ("I", "W", "O"):
        op = nest.operand(t)
        fp = np.ones([1] * D, dtype=np.int64)
        for c in op.coords:
            live = [(d, coef) for d, coef in c.terms if d in pos]
            if not live:
                continue
            if len(live) == 1:
                fp = fp * axis_values(live[0][0])
                continue
            if len(live) > 2:
                raise ValueError(f"layer {nest.name}: coordinates of more than two dimensions are not counted")
            (da, ca), (db, cb) = live
            table = np.array([[coordinate_extent(((ca, va), (cb, vb))) for vb in lat.divisors[pos[db]]]
                              for va in lat.divisors[pos[da]]], dtype=np.int64)
            shape = [1] * D
            shape[pos[da]], shape[pos[db]] = table.shape
            if pos[da] > pos[db]:  # the grid's axes come in lattice order
                table = table.T
            fp = fp * table.reshape(shape)
        usage[t] = fp * op.word_bytes
    ok = np.ones(grid, dtype=bool)
    for held, cap in stores:
        used = sum((usage[t] for t in held), np.zeros([1] * D, dtype=np.int64))
        ok &= np.broadcast_to(used <= cap, grid)
    return ok


# ================================================================================================== the chain sum
def chain_sum(lat: _Lattice, tables: Sequence[np.ndarray], masks: Sequence[np.ndarray | None], bound: int) -> int:
    r"""``\sum_{t_0 | t_1 | ... | n} \prod_j B_j(t_j / t_{j-1}) \prod_{j<L-1} mask_j(t_j)`` exactly: convolutions on
    the box of prime exponents modulo primes whose product exceeds ``bound`` (an upper bound of the sum), then the
    Chinese remainder theorem."""
    box = lat.box
    k = 1
    while math.prod(_moduli(k)) <= 2 * bound:
        k += 1
    mods = np.array(_moduli(k), dtype=np.int64)
    mshape = (k,) + (1,) * len(box)

    def residues(a: np.ndarray) -> np.ndarray:
        flat = a.reshape(box)
        if flat.dtype == object:
            return np.stack([np.array(flat % int(p), dtype=np.int64) for p in mods])
        return np.stack([flat % p for p in mods]).astype(np.int64)

    G = residues(tables[0])
    if masks and masks[0] is not None:
        G = G * masks[0].reshape(box)
    full = tuple(e - 1 for e in box)
    for j in range(1, len(tables)):
        B = residues(tables[j])
        if j == len(tables) - 1:
            flipped = B[(slice(None),) + (slice(None, None, -1),) * len(box)]
            res = [int(((G[i] * flipped[i]) % mods[i]).sum() % mods[i]) for i in range(k)]
            return _crt(res, [int(p) for p in mods])
        Gn = np.zeros_like(G)
        nz = np.argwhere((G != 0).any(axis=0))
        for t in nz:
            hi = (slice(None),) + tuple(slice(int(x), None) for x in t)
            lo = (slice(None),) + tuple(slice(0, e - int(x)) for x, e in zip(t, box, strict=True))
            g = G[(slice(None),) + tuple(int(x) for x in t)].reshape(mshape)
            Gn[hi] = (Gn[hi] + g * B[lo]) % mods.reshape(mshape)
        mask = masks[j] if j < len(masks) else None
        G = Gn * mask.reshape(box) if mask is not None else Gn
    # a single level (main memory only): its band covers the whole dimension
    return _crt([int(G[(i, *full)]) for i in range(k)], [int(p) for p in mods])


# ================================================================================================== the counts
@dataclass
class SpaceSize:
    """The map-space sizes of one layer on one accelerator (module docstring); ``chapter`` is the chapter's formula
    with exact ingredients, ``log10`` the decimal exponents."""

    layer: str
    arch: str
    counts: dict[str, int] = field(default_factory=dict)
    chapter: int = 0

    def log10(self) -> dict[str, float]:
        out = {r: math.log10(v) if v > 0 else -math.inf for r, v in self.counts.items()}
        out["chapter"] = math.log10(self.chapter) if self.chapter > 0 else -math.inf
        return out

    def to_dict(self) -> dict[str, object]:
        return {"layer": self.layer, "arch": self.arch, "counts": {r: str(v) for r, v in self.counts.items()},
                "chapter": str(self.chapter), "log10": self.log10()}


def _weights(rep: str, level: int, D: int) -> list[int]:
    if rep == "timeloop" or (rep == "pruned" and level == 0):
        return [1] * (D + 1)
    return [math.factorial(c) for c in range(D + 1)]


def space_sizes(nest: LoopNest, arch: MappingArch, representations: Sequence[str] = REPRESENTATIONS) -> SpaceSize:
    """The exact size of ``nest``'s map space on ``arch`` in each of ``representations`` (module docstring)."""
    unknown = [r for r in representations if r not in REPRESENTATIONS]
    if unknown:
        raise ValueError(f"unknown representations {unknown} (expected some of {REPRESENTATIONS})")
    lat = _Lattice.of(nest)
    bands = _bands(arch)
    L = len(arch.levels)
    D = len(lat.dims)
    K = len(arch.slots())
    Dp = problem_dims(nest)
    fanouts = sum(1 for b in bands if b)
    tiles = math.prod(stars_and_bars(nest.sizes[d], L) for d in nest.dims)
    out = SpaceSize(nest.name, arch.name, chapter=tiles * math.factorial(Dp) ** L * 2 ** (Dp * fanouts))
    if D == 0:  # nothing to factor: one mapping (orders of size-1 loops only in Timeloop's count)
        for rep in representations:
            out.counts[rep] = math.factorial(Dp) ** L if rep == "timeloop" else 1
        return out
    free = math.prod(stars_and_bars(nest.sizes[d], K) for d in lat.dims)
    masks: list[np.ndarray | None] = [capacity_mask(nest, arch, lat, j) for j in range(L - 1)]
    cache_tables: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}
    for rep in representations:
        tables = []
        for j, caps in enumerate(bands):
            w = _weights("dlaopt" if rep == "valid" else rep, j, D)
            key = (j, tuple(w))
            if key not in cache_tables:
                cache_tables[key] = band_table(lat, caps, w)
            tables.append(cache_tables[key])
        bound = free * math.prod(max(_weights(rep, j, D)) for j in range(L))
        use = masks if rep == "valid" else [None] * (L - 1)
        n = chain_sum(lat, tables, use, bound)
        out.counts[rep] = n * math.factorial(Dp) ** L if rep == "timeloop" else n
    return out


def study_sizes(arch_names: Sequence[str] = ("accel-a", "accel-b"),
                layers: MappingABC[str, LoopNest] | None = None) -> list[SpaceSize]:
    """:func:`space_sizes` of every Table 5.1 workload on every named preset (seed 001 §5.2.2)."""
    nests = layers if layers is not None else table_5_1_layers()
    out = []
    for name in arch_names:
        arch = arch_from_accelerator(PRESETS.create(name, {}))
        out.extend(space_sizes(nest, arch) for nest in nests.values())
    return out


__all__ = ["REPRESENTATIONS", "TABLE_5_1_CONVS", "TABLE_5_1_MATMULS", "SpaceSize", "band_table", "capacity_mask",
           "chain_sum", "problem_dims", "space_sizes", "stars_and_bars", "study_sizes", "table_5_1_layers"]
