"""Brute force: every perfect factorization of every dimension over the slots, every loop order of the non-trivial
loops of every level, each evaluated by the cost model. The ground truth for small layers (no pruning, no
argument about which orders are equivalent)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import LoopNest, divisors
from dlaopt.formulations.mapping.mapping import Mapping


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


def exhaustive(nest: LoopNest, arch: MappingArch, objective: str, *, limit: int = 2_000_000) -> Mapping | None:
    """The optimum by enumeration (ties broken by enumeration order); ``None`` if no mapping fits."""
    if space_size(nest, arch, stop_at=limit) > limit:
        raise SpaceTooLarge(f"layer {nest.name}: more than {limit} mappings to enumerate")
    best: tuple[float, Mapping] | None = None
    for m in all_mappings(nest, arch):
        r = evaluate_mapping(nest, arch, m)
        if r.valid:
            v = r.objective(objective)
            if best is None or v < best[0]:
                best = (v, m)
    return None if best is None else best[1]


__all__ = ["SpaceTooLarge", "all_mappings", "exhaustive", "factor_splits", "space_size"]
