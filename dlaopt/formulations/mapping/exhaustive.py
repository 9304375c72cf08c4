"""Brute force: every perfect factorization of every dimension over the slots, every loop order of the non-trivial
loops of every level, each evaluated by the cost model. The ground truth for small layers (no pruning, no
argument about which orders are equivalent).

Under user constraints (:class:`~dlaopt.formulations.mapping.space.LayerSpace`), :func:`constrained_mappings`
enumerates only the mappings the space allows — with its own reading of the space, shared with neither the
heuristics' projection nor the exact model — and :func:`exhaustive_in_space` takes the best over every architecture
choice (PE-array shape) of the layer."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from collections.abc import Mapping as MappingABC

from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import LoopNest, divisors
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.space import LayerSpace


class SpaceTooLarge(Exception):
    """The map space exceeds the enumeration limit."""


def factor_splits(size: int, slots: tuple, *, caps: list[int] | None = None) -> list[tuple[int, ...]]:
    """Every ordered factorization of ``size`` over the slots (spatial slots capped by their axis size)."""
    out: list[tuple[int, ...]] = []
    caps = caps or [s.size if s.kind == SPATIAL else size for s in slots]

    def rec(k: int, prefix: tuple[int, ...], remaining: int) -> None:
        if k == len(slots) - 1:
            if remaining <= caps[k]:
                out.append((*prefix, remaining))
            return
        for v in divisors(remaining):
            if v > caps[k]:
                break
            rec(k + 1, (*prefix, v), remaining // v)
    rec(0, (), size)
    return out


def all_mappings(nest: LoopNest, arch: MappingArch) -> Iterator[Mapping]:
    slots = arch.slots()
    tslot = [next(k for k, s in enumerate(slots) if s.kind != SPATIAL and s.level == j) for j in
             range(len(arch.levels))]
    per_dim = [factor_splits(nest.sizes[d], slots) for d in nest.dims]
    for combo in itertools.product(*per_dim):
        factors = dict(zip(nest.dims, combo, strict=True))
        if any(s.kind == SPATIAL and math.prod(factors[d][k] for d in nest.dims) > s.size
               for k, s in enumerate(slots)):
            continue
        level_orders = []
        for j in range(len(arch.levels)):
            live = [d for d in nest.dims if factors[d][tslot[j]] > 1]
            rest = [d for d in nest.dims if factors[d][tslot[j]] == 1]
            level_orders.append([(*rest, *p) for p in itertools.permutations(live)])
        for orders in itertools.product(*level_orders):
            yield Mapping(factors, tuple(orders))


def space_size(nest: LoopNest, arch: MappingArch, *, stop_at: int | None = None) -> int:
    """The number of mappings :func:`all_mappings` yields (counting stops early past ``stop_at``)."""
    slots = arch.slots()
    tslot = [k for k, s in enumerate(slots) if s.kind != SPATIAL]
    per_dim = [factor_splits(nest.sizes[d], slots) for d in nest.dims]
    total = 0
    for combo in itertools.product(*per_dim):
        if any(s.kind == SPATIAL and math.prod(c[k] for c in combo) > s.size for k, s in enumerate(slots)):
            continue
        total += math.prod(math.factorial(sum(1 for c in combo if c[k] > 1)) for k in tslot)
        if stop_at is not None and total > stop_at:
            break
    return total


def exhaustive(nest: LoopNest, arch: MappingArch, objective: str, *, limit: int = 2_000_000,
               roots: MappingABC[str, int] | None = None,
               capacity_limits: MappingABC[tuple[int, str], float] | None = None) -> Mapping | None:
    """The optimum by enumeration (ties broken by enumeration order); ``None`` if no mapping fits. ``roots`` and
    ``capacity_limits`` are passed to the cost model (:func:`~dlaopt.formulations.mapping.cost.evaluate_mapping`)."""
    if space_size(nest, arch, stop_at=limit) > limit:
        raise SpaceTooLarge(f"layer {nest.name}: more than {limit} mappings to enumerate")
    return best_of(all_mappings(nest, arch), nest, arch, objective, roots=roots, capacity_limits=capacity_limits)


def best_of(candidates: Iterable[Mapping], nest: LoopNest, arch: MappingArch, objective: str, *,
            roots: MappingABC[str, int] | None = None,
            capacity_limits: MappingABC[tuple[int, str], float] | None = None) -> Mapping | None:
    """The candidate the cost model finds valid with the least ``objective`` (the first of equals); ``None`` when
    none is valid. ``roots`` and ``capacity_limits`` are passed to the cost model."""
    best: tuple[float, Mapping] | None = None
    for m in candidates:
        r = evaluate_mapping(nest, arch, m, roots=roots, capacity_limits=capacity_limits)
        if r.valid:
            v = r.objective(objective)
            if best is None or v < best[0]:
                best = (v, m)
    return None if best is None else best[1]


# ------------------------------------------------------------------------------------------------ constrained spaces
def _split_allowed(dim: str, fs: tuple[int, ...], space: LayerSpace) -> bool:
    """Whether one dimension's factorization meets the bounds on that dimension and the axes' allowed dimensions
    and maxima."""
    for b in space.factor_bounds:
        if b.dim == dim:
            p = math.prod(fs[k] for k in b.slots)
            if p < b.lo or (b.hi is not None and p > b.hi):
                return False
    for a in space.spatial:
        if fs[a.slot] > 1 and a.dims is not None and dim not in a.dims:
            return False
        if a.max_used is not None and fs[a.slot] > a.max_used:
            return False
    return True


def _level_orders(live: list[str], rest: list[str], chains: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The orders of one level (factor-1 loops outermost, then every permutation of the live loops) in which the
    live loops of every chain keep the chain's relative order."""
    out = []
    for p in itertools.permutations(live):
        if all([d for d in p if d in chain] == [d for d in chain if d in p] for chain in chains):
            out.append((*rest, *p))
    return out


def _constrained_combos(nest: LoopNest, arch: MappingArch, space: LayerSpace) -> Iterator[dict[str, tuple[int, ...]]]:
    slots = arch.slots()
    per_dim = [[fs for fs in factor_splits(nest.sizes[d], slots) if _split_allowed(d, fs, space)] for d in nest.dims]
    caps = [s.size for s in slots]
    for a in space.spatial:
        if a.max_used is not None:
            caps[a.slot] = min(caps[a.slot], a.max_used)
    spatial = [k for k, s in enumerate(slots) if s.kind == SPATIAL]
    need = None if space.min_utilization is None else (
        space.min_utilization * space.macs_available * nest.macs * (1 - 1e-9))
    for combo in itertools.product(*per_dim):
        if any(math.prod(c[k] for c in combo) > caps[k] for k in spatial):
            continue
        if need is not None and math.prod(c[k] for c in combo for k in spatial) * nest.real_macs < need:
            continue
        yield dict(zip(nest.dims, combo, strict=True))


def constrained_mappings(nest: LoopNest, arch: MappingArch, space: LayerSpace) -> Iterator[Mapping]:
    """Every mapping of ``nest`` on ``arch`` (one of ``space``'s choices) that ``space`` allows."""
    slots = arch.slots()
    tslot = [next(k for k, s in enumerate(slots) if s.kind != SPATIAL and s.level == j) for j in
             range(len(arch.levels))]
    chains = {j: [c.chain for c in space.orders if c.level == j] for j in range(len(arch.levels))}
    for factors in _constrained_combos(nest, arch, space):
        level_orders = []
        for j in range(len(arch.levels)):
            live = [d for d in nest.dims if factors[d][tslot[j]] > 1]
            rest = [d for d in nest.dims if factors[d][tslot[j]] == 1]
            level_orders.append(_level_orders(live, rest, chains[j]))
        for orders in itertools.product(*level_orders):
            yield Mapping(factors, tuple(orders))


def constrained_space_size(nest: LoopNest, space: LayerSpace, *, stop_at: int | None = None) -> int:
    """The number of mappings :func:`constrained_mappings` yields over every architecture choice of ``space``
    (counting stops early past ``stop_at``)."""
    total = 0
    for choice in space.archs:
        arch = choice.arch
        slots = arch.slots()
        tslot = [(k, s.level) for k, s in enumerate(slots) if s.kind != SPATIAL]
        chains = {j: [c.chain for c in space.orders if c.level == j] for _, j in tslot}
        for factors in _constrained_combos(nest, arch, space):
            n = 1
            for k, j in tslot:
                live = [d for d in nest.dims if factors[d][k] > 1]
                n *= len(_level_orders(live, [], chains[j])) if chains[j] else math.factorial(len(live))
            total += n
            if stop_at is not None and total > stop_at:
                return total
    return total


def exhaustive_in_space(nest: LoopNest, space: LayerSpace, objective: str, *, limit: int = 2_000_000,
                        roots: MappingABC[str, int] | None = None,
                        capacity_limits: MappingABC[tuple[int, str], float] | None = None
                        ) -> tuple[Mapping, tuple[int, int] | None] | None:
    """The optimum over ``space`` by enumeration, with the PE-array shape of its architecture choice (ties broken by
    choice, then enumeration order); ``None`` if no mapping in the space fits. A space with alternatives
    (``one_of``) enumerates each: the optimum over their union."""
    if sum(constrained_space_size(nest, alt, stop_at=limit) for alt in space.choices) > limit:
        raise SpaceTooLarge(f"layer {nest.name}: more than {limit} mappings to enumerate")
    best: tuple[float, Mapping, tuple[int, int] | None] | None = None
    for alt, choice in [(a, c) for a in space.choices for c in a.archs]:
        for m in constrained_mappings(nest, choice.arch, alt):
            r = evaluate_mapping(nest, choice.arch, m, roots=roots, capacity_limits=capacity_limits)
            if r.valid:
                v = r.objective(objective)
                if best is None or v < best[0]:
                    best = (v, m, choice.shape)
    return None if best is None else (best[1], best[2])


__all__ = ["SpaceTooLarge", "all_mappings", "best_of", "constrained_mappings", "constrained_space_size", "exhaustive",
           "exhaustive_in_space", "factor_splits", "space_size"]
