"""Heuristic mappers: Timeloop-style random search, GAMMA's genetic algorithm and fixed-dataflow templates.

All mappers search the mapping space of :mod:`dlaopt.formulations.mapping.mapping` (a factor per dimension and slot of
:meth:`MappingArch.slots`, a loop order per level) and score candidates with
:func:`~dlaopt.formulations.mapping.cost.evaluate_mapping`; an objective is ``"energy"``, ``"latency"`` or ``"edp"``
(lower is better). Every mapper is deterministic given its ``seed`` (a ``time_limit`` makes the result depend on the
machine's speed) and returns the best *valid* mapping it evaluated, or ``None`` when it found none.

* :func:`random_search` — Timeloop's random mapper (seed 001 §5.2.3): a random perfect factorization of every
  dimension over the slots plus a random permutation per level; samples that overflow a buffer are rejected but count
  against the sample budget.
* :func:`gamma` — GAMMA (seed 001 Chapter 4) adapted to dlaopt's fixed level structure; see its docstring for the
  encoding, the operators and where it departs from the seed.
* :func:`dataflow` — the fixed dataflows GAMMA is compared with (seed 001 §4.4.1): NVDLA-like (K and C across the PE
  array, weight stationary), Eyeriss-like (row stationary: filter rows R and output rows P across the array) and
  ShiDianNao-like (output rows and columns P and Q across the array, output stationary), with tile sizes chosen
  greedily against the cost model.
* :data:`HEURISTICS` — the five mappers behind one signature ``(nest, arch, objective, *, seed, budget,
  time_limit, rules, roots, capacity_limits, initial)``; ``initial`` (warm-start mappings, e.g. a similar layer's
  adapted by :mod:`.reuse`) seeds GAMMA's population and the random mapper's first samples; the fixed dataflows
  ignore it.

Constrained map spaces (the user's mapping constraints, :mod:`dlaopt.formulations.mapping.space`): every mapper takes
``rules`` (:class:`SpaceRules`, the space compiled for one architecture) and then only ever returns a mapping inside
it — random samples, GAMMA's decoded individuals and the dataflow templates are projected into the space, capacity
repairs stay inside it, candidates outside it score ``inf`` — or ``None``. :func:`map_in_space` runs a mapper on each
architecture a layer may use (its PE-array shapes) and keeps the best, or says which constraint stopped it. Without
``rules`` every mapper behaves exactly as without constraints.

Candidates are pre-checked for buffer capacity with :func:`capacity_overflows`, which mirrors the cost model's check
exactly (tile of a level = footprint over the slots at and below its temporal slot), so overflowing candidates cost no
cost-model call; they still count as samples / evaluations, as GAMMA's cost model call would for them.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from functools import cache

from dlaopt.formulations.mapping.arch import ARRAY_AXIS, SPATIAL, MappingArch, Slot, Store
from dlaopt.formulations.mapping.cost import OBJECTIVES, evaluate_mapping, operand_roots
from dlaopt.formulations.mapping.loopnest import LoopNest, divisors, prime_factors
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.formulations.mapping.milp import effective_capacity
from dlaopt.formulations.mapping.space import LayerSpace

Factors = dict[str, tuple[int, ...]]
Orders = tuple[tuple[str, ...], ...]


# ================================================================================================== small helpers
@cache
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(divisors(n))


@cache
def _primes(n: int) -> tuple[int, ...]:
    """Distinct prime factors of ``n``, ascending."""
    return tuple(sorted(prime_factors(n)))


def _closest(candidates: Sequence[int], wish: int) -> int:
    """The candidate factor nearest ``wish`` on a log scale (the smaller one on a tie)."""
    return min(candidates, key=lambda f: (abs(math.log(f) - math.log(wish)), f))


def largest_divisor_at_most(n: int, bound: int) -> int:
    """The largest divisor of ``n`` that is ``<= bound`` (1 when ``bound < 1``)."""
    if bound >= n:
        return n
    best = 1
    for f in _divisors(n):
        if f > bound:
            break
        best = f
    return best


def _check_objective(objective: str) -> None:
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown mapping objective '{objective}' (expected one of {OBJECTIVES})")


def _tslots(arch: MappingArch) -> list[int]:
    """Index in :meth:`MappingArch.slots` of the temporal slot of each level (innermost first)."""
    return [arch.temporal_slot(i) for i in range(len(arch.levels))]


def slot_caps(arch: MappingArch) -> tuple[int | None, ...]:
    """Per slot of ``arch.slots()``: the axis size of a spatial slot, ``None`` (unbounded) for a temporal one."""
    return tuple(s.size if s.kind == SPATIAL else None for s in arch.slots())


# ================================================================================================== factorizations
def enumerate_factorizations(n: int, caps: Sequence[int | None]) -> Iterator[tuple[int, ...]]:
    """Every perfect factorization ``(f_0, ..., f_{K-1})`` of ``n`` over ``K = len(caps)`` slots with ``f_k <=
    caps[k]`` (``None``: unbounded), in lexicographic order. ``caps`` is typically :func:`slot_caps`; a spatial axis
    shared by several dimensions must additionally keep the product over dimensions within its size, which is the
    caller's concern (see :func:`enumerate_spatially_valid`)."""
    if not caps:
        if n == 1:
            yield ()
        return
    if len(caps) == 1:
        if caps[0] is None or n <= caps[0]:
            yield (n,)
        return
    for f in _divisors(n):
        if caps[0] is not None and f > caps[0]:
            break
        for rest in enumerate_factorizations(n // f, caps[1:]):
            yield (f, *rest)


def enumerate_spatially_valid(nest: LoopNest, arch: MappingArch) -> Iterator[Factors]:
    """Every assignment of perfect factorizations to all dimensions of ``nest`` whose spatial factors fit every
    axis (product over dimensions <= axis size). Exponential: meant for tiny layers (exhaustive references)."""
    slots = arch.slots()
    caps = slot_caps(arch)
    per_dim = {d: list(enumerate_factorizations(nest.sizes[d], caps)) for d in nest.dims}
    spatial = [k for k, s in enumerate(slots) if s.kind == SPATIAL]

    def rec(i: int, used: list[int], acc: Factors) -> Iterator[Factors]:
        if i == len(nest.dims):
            yield dict(acc)
            return
        d = nest.dims[i]
        for fs in per_dim[d]:
            if all(used[k] * fs[k] <= slots[k].size for k in spatial):
                acc[d] = fs
                yield from rec(i + 1, [u * f for u, f in zip(used, fs, strict=True)], acc)
        acc.pop(d, None)

    yield from rec(0, [1] * len(slots), {})


def sample_factorization(rng: random.Random, n: int, num_slots: int) -> list[int]:
    """A perfect factorization of ``n`` over ``num_slots`` slots, uniform over the factorization space (Timeloop's
    random mapper draws a uniform index into it): each prime's exponent is split by a uniform stars-and-bars
    composition, independently per prime."""
    fs = [1] * num_slots
    for p, e in sorted(prime_factors(n).items()):
        bars = sorted(rng.sample(range(e + num_slots - 1), num_slots - 1))
        prev = -1
        for k, b in enumerate([*bars, e + num_slots - 1]):
            fs[k] *= p ** (b - prev - 1)
            prev = b
    return fs


def sample_factors(nest: LoopNest, arch: MappingArch, rng: random.Random) -> Factors:
    """Random perfect factorizations of every dimension that respect the spatial axes: dimensions are drawn in a
    random order with :func:`sample_factorization`; a spatial factor that would push its axis over its size is cut to
    the largest divisor that fits and the rest moves to the outermost (main memory) temporal slot. Capacity is not
    considered."""
    slots = arch.slots()
    top = arch.temporal_slot(arch.top)
    used = [1] * len(slots)
    dims = list(nest.dims)
    rng.shuffle(dims)
    out: Factors = {}
    for d in dims:
        fs = sample_factorization(rng, nest.sizes[d], len(slots))
        for k, s in enumerate(slots):
            if s.kind == SPATIAL:
                f = largest_divisor_at_most(fs[k], s.size // used[k])
                fs[top] *= fs[k] // f
                fs[k] = f
                used[k] *= f
        out[d] = tuple(fs)
    return {d: out[d] for d in nest.dims}


def random_orders(nest: LoopNest, arch: MappingArch, rng: random.Random) -> Orders:
    """A uniformly random loop order (a permutation of all dimensions) per level."""
    orders = []
    for _ in arch.levels:
        o = list(nest.dims)
        rng.shuffle(o)
        orders.append(tuple(o))
    return tuple(orders)


def sample_mapping(nest: LoopNest, arch: MappingArch, rng: random.Random) -> Mapping:
    """One random mapping: :func:`sample_factors` plus :func:`random_orders` (structurally valid, capacity
    unchecked)."""
    return Mapping(sample_factors(nest, arch, rng), random_orders(nest, arch, rng))


def complete_mapping(
    nest: LoopNest,
    arch: MappingArch,
    factors: MappingABC[str, Sequence[int]] | None = None,
    orders: Sequence[Sequence[str]] | None = None,
) -> Mapping:
    """Turn a partial or inconsistent mapping into a structurally valid one (``mapping_errors`` empty).

    Per dimension (in ``nest.dims`` order), slots are filled innermost first: the factor at a slot is the largest
    divisor of what is left of the dimension that is ``<=`` the requested factor (missing or non-positive: 1) and, at
    a spatial slot, that still fits the axis next to the dimensions already placed on it; the outermost temporal slot
    takes the remainder. Loop orders keep the given dimensions in the given order (unknown and repeated ones dropped)
    and append the missing ones in ``nest.dims`` order; a missing order is ``nest.dims``. Capacity is not considered
    (see :func:`fit_capacity`)."""
    slots = arch.slots()
    top = arch.temporal_slot(arch.top)
    used = [1] * len(slots)
    out: Factors = {}
    for d in nest.dims:
        want = list((factors or {}).get(d, ()))
        n = nest.sizes[d]
        rest = n
        fs = [1] * len(slots)
        for k, s in enumerate(slots):
            if k == top:
                continue
            w = int(want[k]) if k < len(want) else 1
            bound = max(1, w)
            if s.kind == SPATIAL:
                bound = min(bound, s.size // used[k])
            f = largest_divisor_at_most(rest, bound)
            fs[k] = f
            rest //= f
            if s.kind == SPATIAL:
                used[k] *= f
        fs[top] = rest
        out[d] = tuple(fs)
    full: list[tuple[str, ...]] = []
    for i in range(len(arch.levels)):
        given = list(orders[i]) if orders is not None and i < len(orders) else []
        seen: list[str] = []
        for d in given:
            if d in nest.sizes and d not in seen:
                seen.append(d)
        seen.extend(d for d in nest.dims if d not in seen)
        full.append(tuple(seen))
    return Mapping(out, tuple(full))


# ================================================================================================== capacity
Roots = MappingABC[str, int] | None  # operand -> the level its chain ends at (see the cost model's "Roots")
Limits = MappingABC[tuple[int, str], float] | None  # (level, memory) -> bytes the tiles may use there


def _level_usage(nest: LoopNest, operands: Iterable[str], tile: MappingABC[str, int]) -> int:
    return sum(nest.footprint(t, tile) * nest.operand(t).word_bytes for t in sorted(operands))


def _level_tile(nest: LoopNest, factors: MappingABC[str, Sequence[int]], tslot: int) -> dict[str, int]:
    return {d: math.prod(factors[d][: tslot + 1]) for d in nest.dims}


def checked_stores(arch: MappingArch, roots: Roots = None, capacity_limits: Limits = None
                   ) -> list[tuple[int, Store, tuple[str, ...], float]]:
    """``(level, store, operands counted, capacity)`` of every store the cost model checks: levels below main memory,
    bounded by their capacity or a limit (the smaller), counting the operands held below their root."""
    root = operand_roots(arch, roots)
    out = []
    for j in range(arch.top):
        for store in arch.levels[j].stores:
            cap = effective_capacity(j, store, capacity_limits)
            held = tuple(sorted(t for t in store.operands if j < root[t]))
            if cap is not None and held:
                out.append((j, store, held, cap))
    return out


def capacity_overflows(
    nest: LoopNest, arch: MappingArch, factors: MappingABC[str, Sequence[int]], *, roots: Roots = None,
    capacity_limits: Limits = None,
) -> list[tuple[int, str, int, float]]:
    """``(level, memory, bytes needed, capacity)`` of every bounded store whose tiles do not fit — the cost model's
    capacity check (its module docstring: ``sum_{t in store} D_j(t) * bytes_t <= capacity``, with ``roots`` and
    ``capacity_limits``), without the rest of the evaluation."""
    out = []
    for j, store, held, cap in checked_stores(arch, roots, capacity_limits):
        used = _level_usage(nest, held, _level_tile(nest, factors, arch.temporal_slot(j)))
        if used > cap:
            out.append((j, store.memory, used, cap))
    return out


def fits(nest: LoopNest, arch: MappingArch, factors: MappingABC[str, Sequence[int]], *, roots: Roots = None,
         capacity_limits: Limits = None) -> bool:
    """Whether every buffer holds its tiles (see :func:`capacity_overflows`)."""
    for j, _, held, cap in checked_stores(arch, roots, capacity_limits):
        if _level_usage(nest, held, _level_tile(nest, factors, arch.temporal_slot(j))) > cap:
            return False
    return True


def fit_capacity(nest: LoopNest, arch: MappingArch, mapping: Mapping, *, roots: Roots = None,
                 capacity_limits: Limits = None) -> Mapping | None:
    """Repair a structurally valid mapping so that every buffer holds its tiles, or ``None`` if impossible.

    Levels are fixed innermost first. While a store of level ``j`` overflows, one prime factor of a dimension
    relevant to it moves from a slot at or below ``T(j)`` (the outermost such slot holding that prime, temporal or
    spatial) to ``T(j+1)``: the dimension is the one whose level-``j`` tile shrinking by its smallest prime frees the
    most bytes. Such a move shrinks the tiles of level ``j`` and below and leaves those of the levels above
    unchanged, so one pass suffices; it fails only when a level cannot hold a single element of its operands. Loop
    orders are kept. ``roots`` and ``capacity_limits`` as in the cost model."""
    ts = _tslots(arch)
    fs = {d: list(f) for d, f in mapping.factors.items()}
    for j, _, held, cap in checked_stores(arch, roots, capacity_limits):
        tj, dest = ts[j], ts[j + 1]
        relevant = [d for d in nest.dims if any(d in nest.operand(t).dims for t in held)]
        while True:
            tile = _level_tile(nest, fs, tj)
            used = _level_usage(nest, held, tile)
            if used <= cap:
                break
            best: tuple[int, str, int] | None = None  # (bytes after the move, dim, prime)
            for d in relevant:
                if tile[d] == 1:
                    continue
                p = _primes(tile[d])[0]
                after = _level_usage(nest, held, {**tile, d: tile[d] // p})
                if best is None or after < best[0]:
                    best = (after, d, p)
            if best is None:
                return None
            _, d, p = best
            k = next(k for k in range(tj, -1, -1) if fs[d][k] % p == 0)
            fs[d][k] //= p
            fs[d][dest] *= p
    return Mapping({d: tuple(f) for d, f in fs.items()}, mapping.orders)


# ================================================================================================== constrained spaces
class SpaceRules:
    """A layer's constrained map space (:class:`~dlaopt.formulations.mapping.space.LayerSpace`) compiled for the
    heuristics on one of its architectures: a check (:meth:`violations`, :meth:`ok`) and a projection
    (:meth:`project`) that brings a candidate into the space — fixed factors set, bounds met, dimensions an axis does
    not allow moved off it, loop orders reordered to respect the chains, spatial factors grown to reach the minimum
    utilization — or gives up (``None``). :attr:`rejections` counts, per constraint label, the candidates the check
    or the projection turned away (what a heuristic that finds nothing reports)."""

    def __init__(self, nest: LoopNest, arch: MappingArch, space: LayerSpace, *, roots: Roots = None,
                 capacity_limits: Limits = None) -> None:
        self.nest, self.arch, self.space = nest, arch, space
        self.roots, self.capacity_limits = roots, capacity_limits  # the cost model's, for the capacity repair
        self.slots = arch.slots()
        K = len(self.slots)
        self.ts = _tslots(arch)
        self.spatial = [k for k, s in enumerate(self.slots) if s.kind == SPATIAL]
        self.lo: dict[str, list[int]] = {d: [1] * K for d in nest.dims}
        self.hi: dict[str, list[int | None]] = {d: [None] * K for d in nest.dims}
        self.src: dict[tuple[str, int], str] = {}
        self.multi = [b for b in space.factor_bounds if len(b.slots) > 1]
        for b in space.factor_bounds:
            if len(b.slots) != 1:
                continue
            k = b.slots[0]
            if b.lo > self.lo[b.dim][k]:
                self.lo[b.dim][k] = b.lo
                self.src[b.dim, k] = b.source
            if b.hi is not None and (self.hi[b.dim][k] is None or b.hi < self.hi[b.dim][k]):  # type: ignore[operator]
                self.hi[b.dim][k] = b.hi
                self.src.setdefault((b.dim, k), b.source)
        self.cap: list[int | None] = [s.size if s.kind == SPATIAL else None for s in self.slots]
        self.cap_src: dict[int, str] = {}
        for a in space.spatial:
            if a.max_used is not None and a.max_used < (self.cap[a.slot] or 0):
                self.cap[a.slot] = a.max_used
                self.cap_src[a.slot] = a.source
            if a.dims is not None:
                for d in nest.dims:
                    if d not in a.dims:
                        self.hi[d][a.slot] = 1
                        self.src[d, a.slot] = a.source
        self.chains: dict[int, list[tuple[tuple[str, ...], str]]] = {}
        for c in space.orders:
            self.chains.setdefault(c.level, []).append((c.chain, c.source))
        self.min_util = space.min_utilization
        self.util_need = 0.0 if self.min_util is None else (
            self.min_util * space.macs_available * nest.macs * (1 - 1e-9))
        self.rejections: Counter[str] = Counter()

    # ------------------------------------------------------------------------------------------------ check
    def violations(self, m: Mapping, *, first: bool = False) -> list[str]:
        """Labels of the constraints ``m`` breaks (only the first one found with ``first``)."""
        out: list[str] = []
        f = m.factors
        for d in self.nest.dims:
            for k, (lo, hi) in enumerate(zip(self.lo[d], self.hi[d], strict=True)):
                if f[d][k] < lo or (hi is not None and f[d][k] > hi):
                    out.append(self.src[d, k])
                    if first:
                        return out
        for b in self.multi:
            p = math.prod(f[b.dim][k] for k in b.slots)
            if p < b.lo or (b.hi is not None and p > b.hi):
                out.append(b.source)
                if first:
                    return out
        for k, src in self.cap_src.items():
            if math.prod(f[d][k] for d in self.nest.dims) > self.cap[k]:  # type: ignore[operator]
                out.append(src)
                if first:
                    return out
        for j, chains in self.chains.items():
            t = self.ts[j]
            for chain, src in chains:
                inside = set(chain)
                seq = [d for d in m.orders[j] if d in inside and f[d][t] > 1]
                if seq != [d for d in chain if d in seq]:
                    out.append(src)
                    if first:
                        return out
        if self.min_util is not None and self.spatial_product(f) * self.nest.real_macs < self.util_need:
            out.append(self.space.utilization_source)
        return out

    def ok(self, m: Mapping) -> bool:
        return not self.violations(m, first=True)

    def spatial_product(self, factors: MappingABC[str, Sequence[int]]) -> int:
        return math.prod(factors[d][k] for k in self.spatial for d in self.nest.dims)

    def reject(self, label: str) -> None:
        self.rejections[label or "the constrained map space"] += 1

    # ------------------------------------------------------------------------------------------------ projection
    def project(self, m: Mapping) -> Mapping | None:
        """``m`` brought into the space (see the class docstring), or ``None`` (the reason counted)."""
        fs = self.project_factors(m.factors)
        if fs is None:
            return None
        orders = self.project_orders(fs, m.orders)
        if orders is None:
            return None
        return Mapping(fs, orders)

    def project_factors(self, want: MappingABC[str, Sequence[int]]) -> Factors | None:
        used = [1] * len(self.slots)
        out: Factors = {}
        for d in self.nest.dims:
            fs = self._project_dim(d, list(want[d]), used)
            if fs is None:
                return None
            for k in self.spatial:
                used[k] *= fs[k]
            out[d] = tuple(fs)
        for b in self.multi:
            p = math.prod(out[b.dim][k] for k in b.slots)
            if p < b.lo or (b.hi is not None and p > b.hi):
                self.reject(b.source)
                return None
        return self._raise_utilization(out)

    def _room(self, d: str, k: int, used: Sequence[int]) -> int | None:
        """The most the factor of ``d`` at slot ``k`` may be (``None``: unbounded)."""
        r = None if self.cap[k] is None else self.cap[k] // used[k]  # type: ignore[operator]
        h = self.hi[d][k]
        return h if r is None else r if h is None else min(r, h)

    def _project_dim(self, d: str, want: list[int], used: Sequence[int]) -> list[int] | None:
        n = self.nest.sizes[d]
        K = len(self.slots)
        lo, hi = self.lo[d], self.hi[d]
        fixed = [k for k in range(K) if hi[k] is not None and lo[k] == hi[k]]
        fixed_set = set(fixed)
        ranged = [k for k in range(K) if k not in fixed_set and (lo[k] > 1 or hi[k] is not None)]
        free = [k for k in range(K) if k not in fixed_set and k not in ranged]
        sink = next((k for k in reversed(self.ts) if k in free), None)
        if sink is None:
            sink = next((k for k in reversed(self.ts) if k in ranged), None)
        fs = [1] * K
        rest = n
        for k in fixed:
            v, r = lo[k], self._room(d, k, used)
            if rest % v or (r is not None and v > r):
                self.reject(self.src.get((d, k), self.cap_src.get(k, "")))
                return None
            fs[k] = v
            rest //= v
        done = set(fixed)
        for b in self.multi:
            if b.dim != d:
                continue
            part = math.prod(fs[k] for k in b.slots if k in done)
            open_slots = [k for k in b.slots if k not in done and k != sink]
            if not open_slots:
                continue
            cur = math.prod(max(1, want[k]) for k in open_slots)
            cands = [t for t in _divisors(rest) if b.lo <= t * part and (b.hi is None or t * part <= b.hi)]
            if not cands:
                self.reject(b.source)
                return None
            t = _closest(cands, cur)
            rest //= t
            for i, k in enumerate(open_slots):
                r = self._room(d, k, used)
                if i == len(open_slots) - 1:
                    if (r is not None and t > r) or t < lo[k]:
                        self.reject(b.source)
                        return None
                    fs[k] = t
                else:  # closest to the wish among the factors that leave the later slots room for the rest
                    later = [self._room(d, x, used) for x in open_slots[i + 1:]]
                    need = 1 if any(x is None for x in later) else -(-t // math.prod(later))  # type: ignore[arg-type]
                    cands = [f for f in _divisors(t) if need <= f and (r is None or f <= r)] or [1]
                    f = _closest(cands, max(1, want[k]))
                    fs[k] = f
                    t //= f
                done.add(k)
        bounded = set(ranged)
        for k in [*ranged, *free]:  # bounded slots first, then the free ones, each nearest its wish
            if k == sink or k in done:
                continue
            r = self._room(d, k, used)
            if k in bounded:
                cands = [t for t in _divisors(rest) if t >= lo[k] and (r is None or t <= r)]
                if not cands:
                    self.reject(self.src.get((d, k), ""))
                    return None
                f = _closest(cands, max(1, want[k]))
            else:
                f = largest_divisor_at_most(rest, max(1, want[k]) if r is None else min(max(1, want[k]), r))
            fs[k] = f
            rest //= f
            done.add(k)
        if sink is None:
            for k in range(K):  # no temporal slot takes the rest: spread it where there is room
                if rest == 1:
                    break
                if k in fixed_set:
                    continue
                r = self._room(d, k, used)
                f = largest_divisor_at_most(rest, rest if r is None else r // fs[k])
                fs[k] *= f
                rest //= f
            if rest > 1:
                self.reject(next((self.src[d, k] for k in fixed if (d, k) in self.src), ""))
                return None
            return fs
        fs[sink] = rest
        movable = [k for k in range(K) if k not in fixed_set and k != sink]
        while hi[sink] is not None and fs[sink] > hi[sink]:  # type: ignore[operator]
            p = _primes(fs[sink])[0]
            k = next((k for k in movable if (self._room(d, k, used) is None
                                             or fs[k] * p <= self._room(d, k, used))), None)  # type: ignore[operator]
            if k is None:
                self.reject(self.src.get((d, sink), ""))
                return None
            fs[k] *= p
            fs[sink] //= p
        while fs[sink] < lo[sink]:
            move = next(((k, p) for k in movable for p in _primes(fs[k]) if fs[k] > 1 and fs[k] // p >= lo[k]
                         and (hi[sink] is None or fs[sink] * p <= hi[sink])), None)  # type: ignore[operator]
            if move is None:
                self.reject(self.src.get((d, sink), ""))
                return None
            k, p = move
            fs[k] //= p
            fs[sink] *= p
        return fs

    def _raise_utilization(self, factors: Factors) -> Factors | None:
        """Spatial factors grown (a prime at a time, taken from a temporal loop at or above the fanout) until the
        minimum utilization holds."""
        if self.min_util is None or self.spatial_product(factors) * self.nest.real_macs >= self.util_need:
            return factors
        fs = {d: list(f) for d, f in factors.items()}
        while self.spatial_product(fs) * self.nest.real_macs < self.util_need:
            move = None  # the largest prime that fits somewhere (the first such move on ties)
            for k in sorted(self.spatial, key=lambda k: -(self.cap[k] or 0)):
                room = (self.cap[k] or 0) // math.prod(fs[d][k] for d in self.nest.dims)
                if room < 2:
                    continue
                for d in self.nest.dims:
                    h = self.hi[d][k]
                    for t in (t for t in self.ts if t > k):
                        if fs[d][t] == 1:
                            continue
                        p = next((p for p in reversed(_primes(fs[d][t])) if p <= room
                                  and fs[d][t] // p >= self.lo[d][t] and (h is None or fs[d][k] * p <= h)), None)
                        if p is not None and (move is None or p > move[3]):
                            move = (d, t, k, p)
            if move is None:
                self.reject(self.space.utilization_source)
                return None
            d, t, k, p = move
            fs[d][t] //= p
            fs[d][k] *= p
        return {d: tuple(f) for d, f in fs.items()}

    def project_orders(self, factors: MappingABC[str, Sequence[int]], orders: Sequence[Sequence[str]]) -> Orders | None:
        """Each level's order with its chains respected (a stable topological sort of the loops of factor above 1;
        ``None`` when two chains ask for opposite orders of two such loops)."""
        out = [tuple(o) for o in orders]
        for j, chains in self.chains.items():
            t = self.ts[j]
            cur = list(out[j])
            pos = {d: i for i, d in enumerate(cur)}
            after: dict[str, set[str]] = {d: set() for d in cur}
            indeg = dict.fromkeys(cur, 0)
            for chain, _ in chains:
                live = [d for d in chain if factors[d][t] > 1]
                for a, b in itertools.combinations(live, 2):
                    if b not in after[a]:
                        after[a].add(b)
                        indeg[b] += 1
            new: list[str] = []
            ready = sorted((d for d in cur if indeg[d] == 0), key=pos.__getitem__)
            while ready:
                d = ready.pop(0)
                new.append(d)
                for b in after[d]:
                    indeg[b] -= 1
                    if indeg[b] == 0:
                        ready.append(b)
                ready.sort(key=pos.__getitem__)
            if len(new) != len(cur):
                self.reject(chains[-1][1])
                return None
            out[j] = tuple(new)
        return tuple(out)

    def fit_capacity(self, m: Mapping) -> Mapping | None:
        """:func:`fit_capacity` within the space: a prime of a dimension leaves a slot at or below ``T(j)`` only when
        what is left there still meets its lower bound, for the innermost temporal slot above ``T(j)`` whose upper
        bound takes it. ``None`` when no such move frees the overflowing store (or the result leaves the space)."""
        nest, arch = self.nest, self.arch
        fs = {d: list(f) for d, f in m.factors.items()}
        for j, _, held, cap in checked_stores(arch, self.roots, self.capacity_limits):
            tj = self.ts[j]
            relevant = [d for d in nest.dims if any(d in nest.operand(t).dims for t in held)]
            while True:
                tile = _level_tile(nest, fs, tj)
                if _level_usage(nest, held, tile) <= cap:
                    break
                best: tuple[int, str, int, int, int] | None = None  # (bytes after, dim, prime, from, to)
                for d in relevant:
                    if tile[d] == 1:
                        continue
                    for p in _primes(tile[d]):
                        src = next((k for k in range(tj, -1, -1) if fs[d][k] % p == 0
                                    and fs[d][k] // p >= self.lo[d][k]), None)
                        dest = next((t for t in self.ts[j + 1:] if self.hi[d][t] is None
                                     or fs[d][t] * p <= self.hi[d][t]), None)  # type: ignore[operator]
                        if src is None or dest is None:
                            continue
                        after = _level_usage(nest, held, {**tile, d: tile[d] // p})
                        if best is None or after < best[0]:
                            best = (after, d, p, src, dest)
                        break
                if best is None:
                    return None
                _, d, p, src, dest = best
                fs[d][src] //= p
                fs[d][dest] *= p
        out = Mapping({d: tuple(f) for d, f in fs.items()}, m.orders)
        return out if self.ok(out) else None


# ================================================================================================== evaluation
def mapping_key(nest: LoopNest, arch: MappingArch, m: Mapping) -> tuple:
    """A canonical key: mappings with equal keys cost the same (loops of factor 1 are dropped from the orders)."""
    ts = _tslots(arch)
    orders = tuple(tuple(d for d in o if m.factors[d][ts[i]] > 1) for i, o in enumerate(m.orders))
    return (tuple(m.factors[d] for d in nest.dims), orders)


@dataclass
class SearchTrace:
    """The best-so-far curve of a search (seed 001 Fig. 5.3): one point ``(samples, seconds, value)`` per
    improvement of the best valid value, where ``samples`` counts evaluations (distinct mappings scored, including
    those overflowing a buffer) and ``seconds`` the wall-clock time since the evaluator was built; ``samples`` and
    ``seconds`` below are the totals when the search stopped."""

    points: list[tuple[int, float, float]] = field(default_factory=list)
    samples: int = 0
    seconds: float = 0.0

    def best_at(self, samples: int) -> float:
        """The best value found within the first ``samples`` evaluations (``inf`` before the first valid one)."""
        best = math.inf
        for n, _, v in self.points:
            if n > samples:
                break
            best = v
        return best


class Evaluator:
    """Scores mappings with the cost model, caching by :func:`mapping_key`, counting evaluations (cache misses,
    including capacity-invalid candidates, which skip the cost model) and remembering the best valid mapping.
    ``budget`` (evaluations) and ``time_limit`` (seconds from construction) make :attr:`exhausted` true. ``roots``
    and ``capacity_limits`` go to the cost model (and its capacity pre-check). ``trace``, if given, records every
    improvement (:class:`SearchTrace`)."""

    def __init__(self, nest: LoopNest, arch: MappingArch, objective: str, *, budget: int | None = None,
                 time_limit: float | None = None, rules: SpaceRules | None = None, roots: Roots = None,
                 capacity_limits: Limits = None, trace: SearchTrace | None = None) -> None:
        _check_objective(objective)
        self.nest, self.arch, self.objective = nest, arch, objective
        self.roots, self.capacity_limits = roots, capacity_limits
        self.rules = rules  # a constrained space: candidates outside it score inf (counted in rules.rejections)
        self.budget = budget
        self.trace = trace
        self.t0 = time.perf_counter()
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        self.cache: dict[tuple, float] = {}
        self.evaluations = 0
        self.cost_model_calls = 0
        self.best: Mapping | None = None
        self.best_value = math.inf

    @property
    def exhausted(self) -> bool:
        if self.budget is not None and self.evaluations >= self.budget:
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def value(self, m: Mapping) -> float:
        """The objective of ``m`` (``inf`` if it is invalid: GAMMA's fitness ``-inf``, Eq. 4.1)."""
        key = mapping_key(self.nest, self.arch, m)
        v = self.cache.get(key)
        if v is not None:
            return v
        self.evaluations += 1
        v = math.inf
        broken = self.rules.violations(m, first=True) if self.rules is not None else None
        if broken:
            self.rules.reject(broken[0])  # type: ignore[union-attr]
        elif self.fits(m.factors):
            self.cost_model_calls += 1
            report = evaluate_mapping(self.nest, self.arch, m, roots=self.roots, capacity_limits=self.capacity_limits)
            if report.valid:
                v = float(report.objective(self.objective))
        self.cache[key] = v
        if v < self.best_value:
            self.best_value, self.best = v, m
            if self.trace is not None:
                self.trace.points.append((self.evaluations, time.perf_counter() - self.t0, v))
        if self.trace is not None:
            self.trace.samples, self.trace.seconds = self.evaluations, time.perf_counter() - self.t0
        return v

    def fits(self, factors: MappingABC[str, Sequence[int]]) -> bool:
        """:func:`fits` with this evaluator's roots and capacity limits."""
        return fits(self.nest, self.arch, factors, roots=self.roots, capacity_limits=self.capacity_limits)

    def fit_capacity(self, m: Mapping) -> Mapping | None:
        """:func:`fit_capacity` (within the space, if any) with this evaluator's roots and capacity limits."""
        if self.rules is not None:
            return self.rules.fit_capacity(m)
        return fit_capacity(self.nest, self.arch, m, roots=self.roots, capacity_limits=self.capacity_limits)


# ================================================================================================== random search
def random_search(nest: LoopNest, arch: MappingArch, objective: str, *, samples: int, seed: int,
                  time_limit: float | None = None, rules: SpaceRules | None = None, roots: Roots = None,
                  capacity_limits: Limits = None, initial: Sequence[Mapping] = (),
                  trace: SearchTrace | None = None) -> Mapping | None:
    """Timeloop's random mapper: the best valid mapping among ``samples`` random ones (:func:`sample_mapping`:
    uniform random factorizations that respect the spatial axes by construction, random permutations). Samples that
    overflow a buffer are rejected but count as samples, as do repeated ones. Departure from Timeloop's
    Random-Pruned: no pruning of equivalent permutations (repeats are merely not re-evaluated).

    In a constrained space (``rules``) each sample is projected into it (:meth:`SpaceRules.project`); a sample the
    projection gives up on counts as a sample. ``roots`` and ``capacity_limits`` go to the cost model. ``initial``:
    mappings scored first (warm starts from similar layers), each counting as a sample. ``trace`` records the
    best-so-far curve (:class:`SearchTrace`)."""
    rng = random.Random(seed)
    ev = Evaluator(nest, arch, objective, time_limit=time_limit, rules=rules, roots=roots,
                   capacity_limits=capacity_limits, trace=trace)
    for m0 in initial[:samples]:
        if not mapping_errors(nest, arch, m0):
            ev.value(m0)
    for _ in range(samples - min(samples, len(initial))):
        if ev.exhausted:
            break
        m: Mapping | None = sample_mapping(nest, arch, rng)
        if rules is not None:
            m = rules.project(m)  # type: ignore[arg-type]
            if m is None:
                ev.evaluations += 1
                continue
        ev.value(m)  # type: ignore[arg-type]
    return ev.best


# ================================================================================================== GAMMA
ELITE_RATIO = 0.05  # GAMMA's open-source defaults (maestro-project/gamma, src/GAMMA/gamma_env.py)
PARENTS_RATIO = 0.15
TILE_MUTATIONS = 3  # GAMMA's num_mu_loc: tile-mutation attempts per child, each with probability ``rates``
GAMMA_OPERATORS: frozenset[str] = frozenset({"tile", "order", "parallel", "crossover", "growth"})
"""GAMMA's operators by mapping axis (seed 001 §5.2.4): ``tile`` (mutate-tile on the temporal tile genes), ``order``
(reorder), ``parallel`` (mutate-parallel, and mutate-tile's draws of parallel sizes), ``crossover`` (crossover_tile)
and ``growth`` (growth/aging). :func:`gamma` runs with a subset of them for the ablations of Figs. 5.5 and 5.6."""


@dataclass
class Genome:
    """A GAMMA individual on dlaopt's slot structure.

    Read per memory level (innermost first), level ``i``'s genome is GAMMA's list of ``(dimension, tile)`` pairs:
    first the enabled parallel genes of the fanout below it (``[dimension, parallel size]``; level 0 owns the MAC
    fanout), then ``(d, tiles[i][d])`` for ``d`` in ``orders[i]`` — the loop order, outermost first. ``tiles[i][d]``
    is the *cumulative* tile of ``d`` one instance of level ``i`` holds (a divisor of the dimension, including the
    spatial factors below the level); the outermost level's tiles are the whole dimensions and are not stored.

    ``par`` holds :data:`PAR_PER_AXIS` parallel genes per spatial axis, in *parallelism-level* order: the first gene
    of every axis (outermost axis first), then the second of every axis, ...; only ``par[:depth]`` is enabled, and
    growth / aging move ``depth``."""

    par: list[list]  # [dim, size] per parallelism level
    depth: int
    tiles: list[dict[str, int]]  # per level below main memory
    orders: list[list[str]]  # per level, outermost loop first

    def copy(self) -> Genome:
        return Genome([list(g) for g in self.par], self.depth, [dict(t) for t in self.tiles],
                      [list(o) for o in self.orders])


PAR_PER_AXIS = 3  # parallel dimensions one spatial axis may carry (Eyeriss's 12 rows = R 3 x C 4; 256-wide axes)


class _Gamma:
    """Decoding and the evolution operators of :func:`gamma`."""

    def __init__(self, nest: LoopNest, arch: MappingArch, rng: random.Random, rate: float,
                 rules: SpaceRules | None = None, ev: Evaluator | None = None) -> None:
        self.nest, self.arch, self.rng, self.rate = nest, arch, rng, rate
        self.ev = ev  # its roots and capacity limits drive the capacity repair
        self.rules = rules  # a constrained space: decoded individuals are projected into it
        self.slots: tuple[Slot, ...] = arch.slots()
        self.ts = _tslots(arch)
        self.top = arch.top
        axes = [k for k in range(len(self.slots) - 1, -1, -1) if self.slots[k].kind == SPATIAL]
        self.pslots = [a for _ in range(PAR_PER_AXIS) for a in axes]  # slot of each parallel gene
        self.dims = list(nest.dims)
        self.live = [d for d in nest.dims if nest.sizes[d] > 1] or list(nest.dims)

    def level_genes(self, g: Genome) -> list[list[tuple[str, int]]]:
        """GAMMA's view of ``g``: per level (innermost first), the enabled parallel genes of its fanout, then the
        (dimension, tile) genes in loop order (main memory's tiles are the whole dimensions)."""
        out = []
        for i, order in enumerate(g.orders):
            par = [(p[0], p[1]) for k, p in zip(self.pslots[: g.depth], g.par, strict=False)
                   if self.slots[k].level == i]
            out.append(par + [(d, self.nest.sizes[d] if i == self.top else g.tiles[i][d]) for d in order])
        return out

    # ---------------------------------------------------------------------------------------- encode / decode
    def decode(self, g: Genome) -> Mapping:
        """Genome -> mapping with perfect factorization. Slots are visited innermost first with a running product
        ``c[d]`` per dimension (1 at the start): at a spatial slot, its enabled parallel genes in order each give
        their dimension the largest divisor of ``n / c`` that is ``<=`` both the gene's parallel size and the room
        left on the axis; temporal slot ``T(i)`` gives each dimension the largest divisor ``q`` of ``n / c`` with
        ``c * q <= tiles[i][d]`` (1 if the gene is below ``c``); main memory takes ``n / c``. The factors therefore
        always multiply to ``n`` and fit the axes, and a tile gene that is not a multiple of the inner tile is
        rounded down to one."""
        genes: dict[int, list[list]] = {}
        for k, p in zip(self.pslots[: g.depth], g.par, strict=False):
            genes.setdefault(k, []).append(p)
        c = dict.fromkeys(self.dims, 1)
        fs = {d: [1] * len(self.slots) for d in self.dims}
        for k, s in enumerate(self.slots):
            if s.kind == SPATIAL:
                room = s.size
                for d, size in genes.get(k, ()):
                    f = largest_divisor_at_most(self.nest.sizes[d] // c[d], min(size, room))
                    fs[d][k] *= f
                    c[d] *= f
                    room //= f
                continue
            for d in self.dims:
                n = self.nest.sizes[d]
                left = n // c[d]
                f = left if s.level == self.top else largest_divisor_at_most(left, g.tiles[s.level][d] // c[d])
                fs[d][k] = f
                c[d] *= f
        m = Mapping({d: tuple(f) for d, f in fs.items()}, tuple(tuple(o) for o in g.orders))
        if self.rules is not None:
            return self.rules.project(m) or m  # an individual the projection gives up on scores inf
        return m

    def encode(self, m: Mapping, depth: int, par: Sequence[Sequence] | None = None) -> Genome:
        """Mapping -> genome, the inverse of :meth:`decode` when no axis carries more than :data:`PAR_PER_AXIS`
        dimensions (extra ones, the smallest factors, fall into the temporal slot above). ``depth`` and ``par`` are
        the previous parallel genes, kept where the mapping does not use them (an enabled but unused gene keeps its
        dimension at parallel size 1)."""
        tiles = [{d: math.prod(m.factors[d][: self.ts[i] + 1]) for d in self.dims} for i in range(self.top)]
        naxes = len(self.pslots) // PAR_PER_AXIS if self.pslots else 0
        on_axis = {a: sorted((d for d in self.dims if m.factors[d][a] > 1), key=lambda d, a=a: -m.factors[d][a])
                   for a in self.pslots}
        used = [(j, on_axis[a][j // naxes]) for j, a in enumerate(self.pslots) if j // naxes < len(on_axis[a])]
        depth = max(depth, *(j + 1 for j, _ in used), 1 if self.pslots else 0)
        genes: list[list] = []
        for j, a in enumerate(self.pslots):
            old = list(par[j]) if par is not None and j < len(par) else [self.rng.choice(self.live), self.slots[a].size]
            r = j // naxes
            if r < len(on_axis[a]):
                genes.append([on_axis[a][r], m.factors[on_axis[a][r]][a]])
            elif j < depth:
                genes.append([old[0], 1])
            else:
                genes.append(old)
        return Genome(genes, depth, tiles, [list(o) for o in m.orders])

    # ---------------------------------------------------------------------------------------- initialization
    def random_genome(self) -> Genome:
        """GAMMA's initialization (random parallel dimensions at full axis size, random tiles, random orders), with
        the tiles drawn as a random factorization over the levels (so they nest) and between one and one-per-axis
        enabled parallel genes; the decoded mapping is then repaired by :func:`fit_capacity` and re-encoded."""
        par = [[self.rng.choice(self.live), self.slots[a].size] for a in self.pslots]
        depth = self.rng.randint(1, len(self.pslots) // PAR_PER_AXIS) if self.pslots else 0
        tiles: list[dict[str, int]] = [{} for _ in range(self.top)]
        for d in self.dims:
            fs = sample_factorization(self.rng, self.nest.sizes[d], self.top + 1)
            c = 1
            for i in range(self.top):
                c *= fs[i]
                tiles[i][d] = c
        orders = []
        for _ in self.arch.levels:
            o = list(self.dims)
            self.rng.shuffle(o)
            orders.append(o)
        g = Genome(par, depth, tiles, orders)
        if self.ev is not None:
            fixed = self.ev.fit_capacity(self.decode(g))
        else:
            fixed = (fit_capacity(self.nest, self.arch, self.decode(g)) if self.rules is None
                     else self.rules.fit_capacity(self.decode(g)))
        return g if fixed is None else self.encode(fixed, g.depth, g.par)

    # ---------------------------------------------------------------------------------------- operators
    def crossover(self, dad: Genome, mom: Genome) -> tuple[Genome, Genome]:
        """GAMMA's crossover_tile: per level, with probability ``rate``, pick a dimension and interchange its tile
        between the two parents."""
        a, b = dad.copy(), mom.copy()
        for i in range(self.top):
            if self.rng.random() < self.rate:
                d = self.rng.choice(self.live)
                a.tiles[i][d], b.tiles[i][d] = b.tiles[i][d], a.tiles[i][d]
        return a, b

    def mutate_parallel(self, g: Genome) -> None:
        """Mutation of the parallel dimension: an enabled parallel gene gets a new random dimension (at full axis
        size)."""
        if g.depth == 0:
            return
        i = self.rng.randrange(g.depth)
        choices = [d for d in self.live if d != g.par[i][0]] or self.live
        g.par[i] = [self.rng.choice(choices), self.slots[self.pslots[i]].size]

    def mutate_tile(self, g: Genome, parallel: bool = True) -> None:
        """Mutation of a tile size: a random tile gene (or the size of an enabled parallel gene) gets a new value —
        half of the time a random divisor of the enclosing tile (GAMMA's mutate_tile bounds an inner mapper's tile by
        the outer one), otherwise the neighbouring divisor obtained by multiplying or dividing by one prime (GAMMA's
        fine-tuning mutation). Without ``parallel`` (the parallelism axis frozen) only temporal tile genes are
        drawn."""
        n_tile = self.top * len(self.live)
        pick = self.rng.randrange(n_tile + (g.depth if parallel else 0))
        if pick >= n_tile:
            gene = g.par[pick - n_tile]
            size = self.slots[self.pslots[pick - n_tile]].size
            gene[1] = self.rng.choice([f for f in _divisors(self.nest.sizes[gene[0]]) if f <= size])
            return
        i, d = divmod(pick, len(self.live))
        d = self.live[d]
        n = self.nest.sizes[d]
        outer = n if i + 1 >= self.top else max(1, math.gcd(n, g.tiles[i + 1][d]))
        cur = g.tiles[i][d]
        if self.rng.random() < 0.5:
            g.tiles[i][d] = self.rng.choice(_divisors(outer))
        else:
            moves = [cur * p for p in _primes(n // cur)] + [cur // p for p in _primes(cur)]
            if moves:
                g.tiles[i][d] = self.rng.choice(moves)

    def reorder(self, g: Genome) -> None:
        """Reorder: swap two (dimension, tile) genes of a random level, i.e. two loops of its order."""
        o = g.orders[self.rng.randrange(len(g.orders))]
        if len(o) >= 2:
            x, y = self.rng.sample(range(len(o)), 2)
            o[x], o[y] = o[y], o[x]

    def grow_or_age(self, g: Genome) -> None:
        """Growth (enable the next parallel gene, freshly randomized at full axis size: a new level of parallelism)
        or aging (disable the last enabled one), chosen with equal probability among the possible ones."""
        can_grow = g.depth < len(self.pslots)
        can_age = g.depth > 1
        if not (can_grow or can_age):
            return
        if can_grow and (not can_age or self.rng.random() < 0.5):
            g.par[g.depth] = [self.rng.choice(self.live), self.slots[self.pslots[g.depth]].size]
            g.depth += 1
        else:
            g.depth -= 1

    def offspring(self, parents: Sequence[Genome], count: int,
                  operators: frozenset[str] = GAMMA_OPERATORS) -> list[Genome]:
        """``count`` children of random pairs of ``parents``: crossover, then each mutation with probability
        ``rate``. Only the :data:`GAMMA_OPERATORS` in ``operators`` run (a disabled one draws no random number;
        without crossover the children are copies of the two parents)."""
        children: list[Genome] = []
        parallel = "parallel" in operators
        while len(children) < count:
            dad, mom = self.rng.choice(parents), self.rng.choice(parents)
            pair = self.crossover(dad, mom) if "crossover" in operators else (dad.copy(), mom.copy())
            for child in pair:
                if parallel and self.rng.random() < self.rate:
                    self.mutate_parallel(child)
                if "tile" in operators:
                    for _ in range(TILE_MUTATIONS):
                        if self.rng.random() < self.rate:
                            self.mutate_tile(child, parallel)
                if "order" in operators and self.rng.random() < self.rate:
                    self.reorder(child)
                if "growth" in operators and self.rng.random() < self.rate:
                    self.grow_or_age(child)
                children.append(child)
        return children[:count]


def gamma(
    nest: LoopNest,
    arch: MappingArch,
    objective: str,
    *,
    population: int = 200,
    generations: int = 50,
    seed: int = 0,
    rates: float = 0.5,
    time_limit: float | None = None,
    evaluations: int | None = None,
    rules: SpaceRules | None = None,
    roots: Roots = None,
    capacity_limits: Limits = None,
    initial: Sequence[Mapping] = (),
    trace: SearchTrace | None = None,
    operators: Iterable[str] = GAMMA_OPERATORS,
) -> Mapping | None:
    """GAMMA (seed 001 Chapter 4): a genetic algorithm over :class:`Genome` individuals.

    Flow (as GAMMA's open-source implementation): ``population`` random individuals; then per generation the
    population is ranked by fitness (``-objective``; ``-inf`` for an individual overflowing a buffer, Eq. 4.1), the
    top ``PARENTS_RATIO`` valid ones are the parents and the top ``ELITE_RATIO`` the elites; ``population`` children
    are bred by crossover of two random parents and then, each with probability ``rates``, a parallel-dimension
    mutation, up to ``TILE_MUTATIONS`` tile mutations, a reorder, and growth/aging; the elites plus the children are
    evaluated and ranked again, individuals decoding to an already ranked mapping being dropped (a departure that
    keeps the parents distinct: without it the population collapses onto copies of a few mappings within ~15
    generations). When no individual is valid, the population is re-initialized (GAMMA's restart).
    ``evaluations`` bounds the number of distinct mappings scored (cache misses, see :class:`Evaluator`) and
    ``time_limit`` the wall-clock seconds; the best valid mapping ever evaluated is returned. ``roots`` and
    ``capacity_limits`` go to the cost model (and the capacity repair of the initial individuals).

    ``initial``: mappings to start from (seed 001 §5.3.1's warm start: a similar layer's mapping adapted to this
    one, :mod:`.reuse`): each structurally valid one is scored as given and encoded as one of the first individuals
    (up to ``population``), the rest of the population random as usual. Without ``initial`` the run is exactly the
    one above. ``trace`` records the best-so-far curve (:class:`SearchTrace`).

    ``operators``: the :data:`GAMMA_OPERATORS` that breed children (all by default; seed 001 §5.2.4's ablations
    run subsets, e.g. ``{"tile"}`` alone: orders and parallel genes then stay as initialized, see
    :meth:`_Gamma.offspring`). The initialization and the ranking are the same for every subset.

    Departures from the seed, forced by dlaopt's fixed hierarchy or made for efficiency:

    * Genes are per memory level of the architecture instead of a variable number of GAMMA "mapper levels"; a tile
      gene is the cumulative tile a level holds, and :meth:`_Gamma.decode` rounds genes to divisors so that every
      individual is a perfect factorization (GAMMA's MAESTRO allowed edge tiles).
    * Parallelism: the spatial axes are fixed by the architecture (PE-array rows and columns, MAC fanout, ...).
      Each axis has :data:`PAR_PER_AXIS` parallel genes, ordered as levels of parallelism (first gene of every axis,
      outermost axis first, then the second ones); a prefix of them is enabled and the first is always on. GAMMA's
      growth (append a randomly initialized L1-mapper) and aging (remove the tail mapper) become enabling the next
      parallel gene with a random dimension (so, first, the second axis and the MAC fanout) and disabling the last
      enabled one: the number of memory levels is fixed, so what grows and shrinks is the number of parallel
      dimensions. Several genes per axis go beyond GAMMA (one parallel dimension per mapper level) because a single
      dimension cannot fill an axis whose size divides no dimension (Eyeriss's 12 rows: R 3 x C 4), and small layers
      need three or more dimensions to fill a 256 x 256 array (with two per axis, GAMMA lost to random search by 2x
      in EDP on a 3x3 conv on gamma-cloud).
    * Reorder swaps two temporal genes of one level; the parallel genes are outside the order (a spatial loop has no
      temporal position), so the parallel dimension changes only by mutation.
    * The initial individuals are repaired to fit the buffers (:func:`fit_capacity`), so that the search starts from
      valid mappings on tight buffers (GAMMA starts from unrepaired random individuals); offspring are not repaired.
    * Parallel and tile mutations only draw dimensions larger than 1 (a size-1 dimension leaves the mapping as is).
    """
    _check_objective(objective)
    if population < 2:
        raise ValueError("the population needs at least two individuals")
    ops = frozenset(operators)
    if not ops <= GAMMA_OPERATORS:
        raise ValueError(f"unknown GAMMA operator(s) {sorted(ops - GAMMA_OPERATORS)} (expected some of "
                         f"{sorted(GAMMA_OPERATORS)})")
    rng = random.Random(seed)
    ev = Evaluator(nest, arch, objective, budget=evaluations, time_limit=time_limit, rules=rules, roots=roots,
                   capacity_limits=capacity_limits, trace=trace)
    ga = _Gamma(nest, arch, rng, rates, rules, ev)
    num_elites = max(1, int(population * ELITE_RATIO))
    num_parents = max(2, int(population * PARENTS_RATIO))

    def score(pop: list[Genome]) -> list[tuple[float, tuple]]:
        out = []
        for g in pop:
            m = ga.decode(g)
            key = mapping_key(nest, arch, m)
            # once the budget is spent, unseen individuals score inf without evaluation
            out.append((ev.cache.get(key, math.inf) if ev.exhausted else ev.value(m), key))
        return out

    seeded: list[Genome] = []
    for m in initial:
        if len(seeded) >= population or ev.exhausted:
            break
        if set(m.factors) != set(nest.dims) or mapping_errors(nest, arch, m):
            continue
        ev.value(m)
        seeded.append(ga.encode(m, 1 if ga.pslots else 0))
    pop = seeded + [ga.random_genome() for _ in range(population - len(seeded))]
    fit = score(pop)
    for _ in range(generations):
        if ev.exhausted:
            break
        rank, seen = [], set()
        for i in sorted(range(len(pop)), key=lambda i: fit[i][0]):
            if fit[i][1] not in seen:
                seen.add(fit[i][1])
                rank.append(i)
        rank = rank[:population]
        pop, fit = [pop[i] for i in rank], [fit[i] for i in rank]
        valid = sum(1 for v, _ in fit if v < math.inf)
        if valid == 0:
            pop = [ga.random_genome() for _ in range(population)]
            fit = score(pop)
            continue
        parents = pop[: max(1, min(num_parents, valid))]
        elites, elite_fit = pop[: min(num_elites, valid)], fit[: min(num_elites, valid)]
        children = ga.offspring(parents, population, ops)
        pop = elites + children
        fit = elite_fit + score(children)
    return ev.best


# ================================================================================================== fixed dataflows
@dataclass(frozen=True)
class DataflowTemplate:
    """A fixed dataflow in convolution dimension names (``N G K C P Q R S``; matmuls are translated, see
    :data:`MATMUL_ROLES`). ``axes[a]`` lists the dimensions the ``a``-th axis of the PE-array fanout takes, in turn,
    each at the largest divisor of what is left that fits what is left of the axis (a one-axis array takes all lists
    in turn); ``mac`` does the same for each MAC-fanout axis; ``order`` is the loop order of every level (outermost
    first) and ``pe_order``, if set, that of the innermost level.

    On a scale-out accelerator (identical PE arrays side by side, seed 001 Table 4.3's S3: the spatial axis
    :data:`~dlaopt.hardware.model.ARRAY_AXIS`), each array runs the template on its own PE axes and MAC fanout,
    and the axis across the arrays then takes ``array`` from what is left (by default output channels ``K``, or a
    depthwise layer's groups ``G``; a matmul's ``N``): model parallelism as Simba splits a layer over its chiplets,
    every array computing its own outputs with its own weights from the same multicast inputs, so no partial sum
    crosses arrays."""

    axes: tuple[tuple[str, ...], ...]
    mac: tuple[str, ...]
    order: tuple[str, ...]
    pe_order: tuple[str, ...] | None = None
    spatial_matmul_roles: dict[str, str | None] | None = None  # matmul translation of ``axes`` (default: MATMUL_ROLES)
    array: tuple[str, ...] = ("K", "G")  # the axis across identical PE arrays (translated as ``axes``)


DATAFLOWS: dict[str, DataflowTemplate] = {
    # NVDLA-like: input channels down the rows (partial sums reduce along a column), output channels (or groups of a
    # depthwise layer) across the columns, as NVDLA's atomic-C x atomic-K MAC array and a TPU's weight-stationary
    # array; weight stationary: the loops irrelevant to weights (N, P, Q) innermost; MACs of a PE reduce over C.
    "nvdla": DataflowTemplate(axes=(("C",), ("K", "G")), mac=("C", "K", "G"),
                              order=("G", "K", "C", "R", "S", "N", "P", "Q")),
    # Eyeriss-like row stationary: filter rows R down the rows (their partial sums accumulate vertically), output rows
    # P across the columns; leftover rows take input channels (also accumulated vertically), leftover columns output
    # channels (Eyeriss replicates its logical PE sets over channels and filters). In a PE, a filter row and an
    # input row stay while the 1-D convolution runs: S and Q innermost at the PE level; MACs of a PE take output
    # columns of the sliding window.
    "eyeriss": DataflowTemplate(axes=(("R", "C"), ("P", "K", "G")), mac=("Q", "S", "K"),
                                order=("N", "G", "K", "C", "P", "Q", "R", "S"),
                                pe_order=("N", "G", "K", "C", "P", "R", "Q", "S")),
    # ShiDianNao-like output stationary: output rows and columns across the array, the reduction loops (C, R, S)
    # innermost so partial sums stay in the PE; MACs of a PE take further output channels.
    "shidiannao": DataflowTemplate(axes=(("P",), ("Q",)), mac=("K", "G", "C"),
                                   order=("N", "G", "K", "P", "Q", "C", "R", "S")),
    # Activation-parallel (seed 001 §7.3.1's LB style, Y-X): output rows and columns across the array as ShiDianNao,
    # but a matmul spreads only its activation rows (tokens, batch) — never its weight dimensions — so a batch-1 FC
    # layer runs on one PE: low bandwidth, long latency (Fig. 7.6's LB column).
    "activation": DataflowTemplate(axes=(("P",), ("Q",)), mac=("K", "G", "C"),
                                   order=("N", "G", "K", "P", "Q", "C", "R", "S"),
                                   spatial_matmul_roles={"N": "B", "P": "M", "Q": None, "K": None, "C": None},
                                   array=("N", "P")),  # across arrays too: batch, then output rows (tokens)
}

# a matmul (B, M, N, K) as a 1x1 convolution: batch N->B, output channels K->N, input channels C->K, output rows
# P->M and output columns Q->N (so that output stationary spreads both output dimensions); G, R, S do not exist
MATMUL_ROLES = {"N": "B", "K": "N", "C": "K", "P": "M", "Q": "N"}


def _translate(nest: LoopNest, dims: Sequence[str], roles: MappingABC[str, str | None] | None = None) -> list[str]:
    out: list[str] = []
    for d in dims:
        real = (roles or MATMUL_ROLES).get(d) if nest.kind == "matmul" else d
        if real is not None and real in nest.sizes and real not in out:
            out.append(real)
    return out


def _fanout_groups(arch: MappingArch) -> list[list[int]]:
    """Spatial slot indices grouped by fanout (each level's fanout, the MAC fanout), outermost first."""
    groups: dict[tuple[int, bool], list[int]] = {}
    for k, s in enumerate(arch.slots()):
        if s.kind == SPATIAL:
            groups.setdefault((s.level, not s.mac), []).append(k)
    return [groups[key] for key in sorted(groups, reverse=True)]


def array_fanout(arch: MappingArch) -> list[int]:
    """Slot indices of the axis across identical PE arrays (:data:`~dlaopt.hardware.model.ARRAY_AXIS`, a scale-out
    accelerator's); empty on a single array."""
    return [k for k, s in enumerate(arch.slots()) if s.kind == SPATIAL and s.axis == ARRAY_AXIS]


def pe_array_fanout(arch: MappingArch) -> list[int]:
    """Slot indices of one PE array's axes: the fanout with the most instances (the outermost on ties), without the
    axis across arrays (:func:`array_fanout`) and, when the PE axes are the MAC fanout (no level per PE), without
    its trailing ALU axis ``mac`` (the template's ``mac`` list goes there)."""
    across = set(array_fanout(arch))
    slots = arch.slots()
    groups = []
    for g in _fanout_groups(arch):
        kept = [k for k in g if k not in across]
        if len(kept) > 1 and slots[kept[-1]].mac and slots[kept[-1]].axis == "mac":
            kept.pop()
        if kept:
            groups.append(kept)
    if not groups:
        return []
    return max(groups, key=lambda g: math.prod(slots[k].size for k in g))


def dataflow_mapping(nest: LoopNest, arch: MappingArch, name: str) -> Mapping:
    """The template ``name`` (:data:`DATAFLOWS`) with its spatial factors and every temporal factor at main memory
    (structurally valid; capacity unchecked). Fill order: the PE axes, the MAC fanout, then the axis across arrays
    (a scale-out accelerator's, see :class:`DataflowTemplate`)."""
    if name not in DATAFLOWS:
        raise ValueError(f"unknown dataflow '{name}' (expected one of {sorted(DATAFLOWS)})")
    tpl = DATAFLOWS[name]
    slots = arch.slots()
    top = arch.temporal_slot(arch.top)
    fs = {d: [1] * len(slots) for d in nest.dims}
    rest = dict(nest.sizes)

    def fill(k: int, dims: Sequence[str]) -> None:
        room = slots[k].size
        for d in dims:
            f = largest_divisor_at_most(rest[d], room)
            fs[d][k] *= f
            rest[d] //= f
            room //= f

    pe, across = pe_array_fanout(arch), array_fanout(arch)
    lists = [_translate(nest, a, tpl.spatial_matmul_roles) for a in tpl.axes]
    if len(pe) == 1:
        fill(pe[0], [d for lst in lists for d in lst])
    else:
        for k, lst in zip(pe, lists, strict=False):
            fill(k, lst)
    for k, s in enumerate(slots):
        if s.kind == SPATIAL and s.mac and k not in pe and k not in across:
            fill(k, _translate(nest, tpl.mac, tpl.spatial_matmul_roles))
    for k in across:
        fill(k, _translate(nest, tpl.array, tpl.spatial_matmul_roles))
    for d in nest.dims:
        fs[d][top] = rest[d]
    order = _translate(nest, tpl.order)
    order = [d for d in nest.dims if d not in order] + order
    pe_order = order
    if tpl.pe_order is not None:
        pe_order = _translate(nest, tpl.pe_order)
        pe_order = [d for d in nest.dims if d not in pe_order] + pe_order
    orders = tuple(tuple(pe_order if i == 0 else order) for i in range(len(arch.levels)))
    return Mapping({d: tuple(f) for d, f in fs.items()}, orders)


def greedy_tiles(ev: Evaluator, start: Mapping) -> Mapping:
    """Greedy temporal tiling from a valid ``start``. A move takes one prime factor of a dimension from the temporal
    loop of a level to that of an inner level (starting with everything at main memory, this grows the inner tiles a
    prime at a time); moves whose tiles do not fit are skipped. Each step applies the move that most lowers the
    objective; when none lowers it, the first move that leaves it unchanged is applied instead (a plateau step: e.g.
    bringing the output-row loop into a weight-stationary PE changes nothing by itself but lets a later move of the
    filter-row loop pay off). Factors only ever move inwards, so this terminates; it stops when every move worsens the
    objective (or the evaluator is exhausted) and returns the best mapping evaluated. Spatial factors and orders
    stay as in ``start``."""
    arch, nest = ev.arch, ev.nest
    ts = _tslots(arch)
    cur, cur_v = start, ev.value(start)
    while not ev.exhausted:
        best, best_v, level = None, cur_v, None
        for d in nest.dims:
            for j in range(1, len(ts)):
                f = cur.factors[d][ts[j]]
                for p in _primes(f) if f > 1 else ():
                    for i in range(j):
                        fs = list(cur.factors[d])
                        fs[ts[j]] //= p
                        fs[ts[i]] *= p
                        cand = Mapping({**cur.factors, d: tuple(fs)}, cur.orders)
                        if ev.exhausted or not ev.fits(cand.factors) or (
                                ev.rules is not None and not ev.rules.ok(cand)):
                            continue
                        v = ev.value(cand)
                        if v < best_v * (1 - 1e-12):
                            best, best_v = cand, v
                        elif level is None and v <= cur_v * (1 + 1e-12):
                            level = cand
        if best is None:
            best = level
        if best is None:
            break
        cur, cur_v = best, ev.value(best)
    assert ev.best is not None
    return ev.best


def dataflow(nest: LoopNest, arch: MappingArch, name: str, objective: str, *,
             time_limit: float | None = None, rules: SpaceRules | None = None, roots: Roots = None,
             capacity_limits: Limits = None) -> Mapping | None:
    """A fixed dataflow (seed 001 §4.4.1) with greedily chosen tile sizes: :func:`dataflow_mapping` fixes the
    dimensions on the PE array's axes (the largest divisor that fits), on the MAC fanout and the loop orders, then
    :func:`greedy_tiles` moves temporal factors inwards from main memory. If the template's spatial factors alone
    overflow a buffer they are cut by :func:`fit_capacity` first. Returns ``None`` only when no mapping fits (a level
    cannot hold one element of each operand it keeps).

    Departure from the seed: GAMMA's baselines had hand-set tile sizes fitting the local buffers; here the tile sizes
    are chosen by the greedy against the cost model and ``objective``. ``roots`` and ``capacity_limits`` go to the
    cost model (and the capacity repair)."""
    _check_objective(objective)
    ev = Evaluator(nest, arch, objective, time_limit=time_limit, rules=rules, roots=roots,
                   capacity_limits=capacity_limits)
    if rules is None:
        start = ev.fit_capacity(dataflow_mapping(nest, arch, name))
    else:  # a constrained space: the template projected into it, the capacity repair kept within it
        projected = rules.project(dataflow_mapping(nest, arch, name))
        start = None if projected is None else rules.fit_capacity(projected)
    if start is None:
        return None
    if ev.value(start) == math.inf:  # the cost model disagrees with the capacity repair: nothing to improve on
        return None
    return greedy_tiles(ev, start)


# ================================================================================================== registry
Heuristic = Callable[..., Mapping | None]
DEFAULT_RANDOM_SAMPLES = 10_000  # seed 001 §4.4.1: 10K sampling points for every method
DEFAULT_POPULATION = 200
DEFAULT_GENERATIONS = 50


def _random(nest: LoopNest, arch: MappingArch, objective: str, *, seed: int = 0, budget: int | None = None,
            time_limit: float | None = None, rules: SpaceRules | None = None, roots: Roots = None,
            capacity_limits: Limits = None, initial: Sequence[Mapping] = ()) -> Mapping | None:
    return random_search(nest, arch, objective, samples=DEFAULT_RANDOM_SAMPLES if budget is None else budget,
                         seed=seed, time_limit=time_limit, rules=rules, roots=roots, capacity_limits=capacity_limits,
                         initial=initial)


def _ga(nest: LoopNest, arch: MappingArch, objective: str, *, seed: int = 0, budget: int | None = None,
        time_limit: float | None = None, rules: SpaceRules | None = None, roots: Roots = None,
        capacity_limits: Limits = None, initial: Sequence[Mapping] = ()) -> Mapping | None:
    """Default: population 200 x 50 generations. With a ``budget`` (evaluations), the population is
    ``min(200, max(8, budget // 10))`` and generations run until the budget is spent (at most 4x the budget's worth
    of generations, in case the population converges onto already-evaluated mappings)."""
    if budget is None:
        return gamma(nest, arch, objective, population=DEFAULT_POPULATION, generations=DEFAULT_GENERATIONS,
                     seed=seed, time_limit=time_limit, rules=rules, roots=roots, capacity_limits=capacity_limits,
                     initial=initial)
    population = min(DEFAULT_POPULATION, max(8, budget // 10))
    generations = max(DEFAULT_GENERATIONS, 4 * -(-budget // population))
    return gamma(nest, arch, objective, population=population, generations=generations, seed=seed,
                 time_limit=time_limit, evaluations=budget, rules=rules, roots=roots, capacity_limits=capacity_limits,
                 initial=initial)


def _dataflow_heuristic(name: str) -> Heuristic:
    def run(nest: LoopNest, arch: MappingArch, objective: str, *, seed: int = 0, budget: int | None = None,
            time_limit: float | None = None, rules: SpaceRules | None = None, roots: Roots = None,
            capacity_limits: Limits = None, initial: Sequence[Mapping] = ()) -> Mapping | None:
        del seed, budget, initial  # deterministic, self-terminating, a fixed dataflow
        return dataflow(nest, arch, name, objective, time_limit=time_limit, rules=rules, roots=roots,
                        capacity_limits=capacity_limits)

    run.__doc__ = f"The {name}-like fixed dataflow with greedy tile sizes (seed and budget unused)."
    run.__name__ = f"dataflow_{name}"
    return run


HEURISTICS: dict[str, Heuristic] = {
    "random": _random,
    "ga": _ga,
    "nvdla": _dataflow_heuristic("nvdla"),
    "eyeriss": _dataflow_heuristic("eyeriss"),
    "shidiannao": _dataflow_heuristic("shidiannao"),
}


@dataclass
class SpaceResult:
    """What a heuristic found in a constrained space: the best mapping over the architecture choices (``None``:
    nothing valid, ``reason`` says why), the PE-array shape of the choice it is for, and its objective."""

    mapping: Mapping | None
    shape: tuple[int, int] | None = None
    value: float = math.inf
    reason: str = ""


def map_in_space(method: str, nest: LoopNest, space: LayerSpace, objective: str, *, seed: int = 0,
                 budget: int | None = None, time_limit: float | None = None, roots: Roots = None,
                 capacity_limits: Limits = None, initial: Sequence[Mapping] = ()) -> SpaceResult:
    """Heuristic ``method`` on every architecture choice of ``space`` (the sample or evaluation budget and the time
    limit shared evenly among them), each run kept within the space (:class:`SpaceRules`); the best valid mapping
    (the first choice on ties). With nothing valid, ``reason`` names the layer and the constraint that turned away
    the most candidates. A space with alternatives (``one_of``) runs on every architecture choice of each.
    ``roots`` and ``capacity_limits`` go to the cost model on every choice (level indices of its architecture).
    ``initial``: warm-start mappings offered to the mapper on every choice (see :func:`gamma`)."""
    fn = HEURISTICS[method]
    more = {"initial": tuple(initial)} if initial else {}
    runs = [(alt, choice) for alt in space.choices for choice in alt.archs]
    n = len(runs)
    t0 = time.monotonic()
    best = SpaceResult(None)
    rejected: Counter[str] = Counter()
    for i, (alt, choice) in enumerate(runs):
        rules = (SpaceRules(nest, choice.arch, alt, roots=roots, capacity_limits=capacity_limits)
                 if space.constrained else None)
        share = None if budget is None else max(1, -(-budget // n))
        left = None if time_limit is None else max(0.0, (time_limit - (time.monotonic() - t0)) / (n - i))
        m = fn(nest, choice.arch, objective, seed=seed, budget=share, time_limit=left, rules=rules, roots=roots,
               capacity_limits=capacity_limits, **more)
        if rules is not None:
            rejected.update(rules.rejections)
            if m is not None and not rules.ok(m):
                m = None  # never a mapping outside the space
        if m is None:
            continue
        r = evaluate_mapping(nest, choice.arch, m, roots=roots, capacity_limits=capacity_limits)
        if r.valid and r.objective(objective) < best.value:
            best = SpaceResult(m, choice.shape, r.objective(objective))
    if best.mapping is None:
        if rejected:
            label, count = rejected.most_common(1)[0]
            best.reason = (f"no mapping of layer {nest.describe()} meets {label} ({count} candidate(s) turned away "
                           "by it)")
        else:
            best.reason = f"no valid mapping found for layer {nest.describe()}"
    return best


__all__ = ["DATAFLOWS", "HEURISTICS", "MATMUL_ROLES", "DataflowTemplate", "Evaluator", "Genome", "SearchTrace",
           "SpaceResult", "SpaceRules", "capacity_overflows", "checked_stores", "complete_mapping", "dataflow",
           "dataflow_mapping", "enumerate_factorizations", "enumerate_spatially_valid", "fit_capacity", "fits",
           "gamma", "greedy_tiles", "largest_divisor_at_most", "map_in_space", "mapping_key", "pe_array_fanout",
           "random_orders", "random_search", "sample_factorization", "sample_factors", "sample_mapping", "slot_caps",
           "GAMMA_OPERATORS", "array_fanout"]
