"""A mapping of one layer onto one accelerator: loop factors per slot and a loop order per level.

``factors[d][k]`` is the factor of dimension ``d`` at slot ``k`` of :meth:`MappingArch.slots` (innermost first);
the factors of a dimension multiply to its (padded) size — perfect factorization. ``orders[i]`` is the order of the
temporal loops of level ``i``, outermost first, a permutation of all the layer's dimensions (loops of factor 1 are
no-ops wherever they stand).
"""

from __future__ import annotations

import math
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass
from typing import Any

from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, MappingArch
from dlaopt.formulations.mapping.loopnest import LoopNest


@dataclass(frozen=True)
class Mapping:
    factors: MappingABC[str, tuple[int, ...]]
    orders: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "factors", {d: tuple(int(f) for f in fs) for d, fs in self.factors.items()})
        object.__setattr__(self, "orders", tuple(tuple(o) for o in self.orders))

    def factor(self, dim: str, slot: int) -> int:
        return self.factors[dim][slot]

    def key(self) -> tuple:
        return (tuple(sorted(self.factors.items())), self.orders)

    def to_dict(self, arch: MappingArch) -> dict[str, Any]:
        slots = arch.slots()
        levels = []
        for i, lv in enumerate(arch.levels):
            t = arch.temporal_slot(i)
            entry: dict[str, Any] = {
                "level": lv.name,
                "temporal": [[d, self.factors[d][t]] for d in self.orders[i] if self.factors[d][t] > 1],
            }
            spatial = {}
            for k, s in enumerate(slots):
                if s.kind == SPATIAL and not s.mac and s.level == i:
                    spatial[s.axis] = {d: fs[k] for d, fs in self.factors.items() if fs[k] > 1}
            if spatial:
                entry["spatial_below"] = spatial
            if i == 0 and arch.mac_fanout:
                entry["mac_spatial"] = {
                    s.axis: {d: fs[k] for d, fs in self.factors.items() if fs[k] > 1}
                    for k, s in enumerate(slots) if s.mac
                }
            levels.append(entry)
        return {
            "factors": {d: list(fs) for d, fs in self.factors.items()},
            "orders": [list(o) for o in self.orders],
            "levels": levels[::-1],  # outermost first, as a loop nest reads
        }

    @classmethod
    def from_dict(cls, doc: MappingABC[str, Any]) -> Mapping:
        return cls({d: tuple(fs) for d, fs in doc["factors"].items()}, tuple(tuple(o) for o in doc["orders"]))


def mapping_errors(nest: LoopNest, arch: MappingArch, m: Mapping) -> list[str]:
    """Structural problems of ``m`` (wrong shape, factors not multiplying to the bounds, fanout over its size,
    orders not permutations). Capacity is checked by the cost model."""
    errors: list[str] = []
    slots = arch.slots()
    if set(m.factors) != set(nest.dims):
        errors.append(f"factors must be given for exactly the dimensions {list(nest.dims)}")
        return errors
    for d in nest.dims:
        fs = m.factors[d]
        if len(fs) != len(slots):
            errors.append(f"dimension {d}: {len(fs)} factors for {len(slots)} slots")
        elif any(f < 1 for f in fs):
            errors.append(f"dimension {d}: factors must be positive")
        elif math.prod(fs) != nest.sizes[d]:
            errors.append(f"dimension {d}: factors {list(fs)} multiply to {math.prod(fs)}, not {nest.sizes[d]}")
    if errors:
        return errors
    for k, s in enumerate(slots):
        if s.kind == SPATIAL:
            used = math.prod(m.factors[d][k] for d in nest.dims)
            if used > s.size:
                errors.append(f"spatial axis {s.name}: factors multiply to {used} > axis size {s.size}")
    if len(m.orders) != len(arch.levels):
        errors.append(f"{len(m.orders)} loop orders for {len(arch.levels)} levels")
    else:
        for i, o in enumerate(m.orders):
            if sorted(o) != sorted(nest.dims):
                errors.append(f"level {arch.levels[i].name}: loop order {list(o)} is not a permutation of "
                              f"{list(nest.dims)}")
    return errors


def loop_nest_text(nest: LoopNest, arch: MappingArch, m: Mapping) -> str:
    """The mapping printed as a loop nest, outermost first (factor-1 loops omitted)."""
    slots = arch.slots()
    lines: list[str] = []
    indent = 0
    for k in range(len(slots) - 1, -1, -1):
        s = slots[k]
        if s.kind == TEMPORAL:
            lines.append("  " * indent + f"[{arch.levels[s.level].name}]")
            for d in m.orders[s.level]:
                f = m.factors[d][k]
                if f > 1:
                    lines.append("  " * indent + f"for {d.lower()}{k} in [0, {f}):")
                    indent += 1
        else:
            for d in nest.dims:
                f = m.factors[d][k]
                if f > 1:
                    lines.append("  " * indent + f"par_for {d.lower()}{k} in [0, {f}):  # {s.name}")
                    indent += 1
    lines.append("  " * indent + "O += I * W")
    return "\n".join(lines)


__all__ = ["Mapping", "loop_nest_text", "mapping_errors"]
