r"""Loop-order sensitivity of one mapping (seed 001, §5.2, Fig. 5.7): keep the factors, give every level the same
loop order, try every order, and see how many different costs come out.

The chapter takes the mapping GAMMA found for ResNet Conv_4 on Accel-B, sets all three buffer levels to one of the
7! = 5,040 orders of the seven loops and finds only 16 distinct EDP values (best to worst 14.4×). Here the mapping
is any mapping (the proven optimum, typically) and the orders are those of the layer's dimensions of size above 1
(dimensions of size 1 are no-ops wherever they stand).

**Why so few values.** In the cost model (:mod:`.cost`) the order enters the access counts only through the visits
``R_c(t)``: a child ``c`` of operand ``t`` gets a new tile whenever a temporal loop above it advances, except the loops
of the innermost run of loops irrelevant to ``t`` (temporal reuse). So an order matters only through, for every
child and operand, *which irrelevant loops sit innermost* — the reuse signature :func:`~.cost.reuse_visits`.
Orders with the same signature have the same counts, energy, latency and EDP (checked for every order here:
:attr:`OrderSensitivity.signature_determines_value`); distinct signatures can still tie in value.
Each class lists, per level, the loops its orders all end with there (among the level's loops of factor above 1,
innermost last) and the operands the level keeps stationary (its innermost loop is irrelevant to them).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from dlaopt.formulations.mapping.arch import TEMPORAL, MappingArch
from dlaopt.formulations.mapping.cost import MAC, evaluate_mapping, reuse_visits
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest
from dlaopt.formulations.mapping.mapping import Mapping

MAX_ORDERS = 40_320  # 8!: a layer with more dimensions of size above 1 is refused


@dataclass(frozen=True)
class OrderClass:
    """The orders that give one value, with what they share."""

    value: float
    count: int
    signatures: int  # distinct reuse signatures among them
    innermost: dict[str, tuple[str, ...]]  # level -> the loops (factor above 1 there) all its orders end with there
    stationary: dict[str, tuple[str, ...]]  # level -> operands whose reuse every order of the class gets there
    example: tuple[str, ...]  # one of its orders, outermost first


@dataclass
class OrderSensitivity:
    """Every same-order variant of one mapping, grouped by value (smallest first)."""

    objective: str
    dims: tuple[str, ...]  # the dimensions permuted (size above 1)
    orders: int
    original: float  # the mapping's own value (its own per-level orders)
    classes: list[OrderClass] = field(default_factory=list)
    signatures: int = 0
    signature_determines_value: bool = True

    @property
    def distinct_values(self) -> int:
        return len(self.classes)

    @property
    def spread(self) -> float:
        """Worst over best value."""
        return self.classes[-1].value / self.classes[0].value if self.classes and self.classes[0].value else math.inf


def with_order(m: Mapping, order: tuple[str, ...], dims: tuple[str, ...]) -> Mapping:
    """``m`` with every level's order set to ``order`` (outermost first); ``dims`` missing from ``order`` (size 1)
    go outermost, in the layer's order."""
    rest = tuple(d for d in dims if d not in order)
    return Mapping(m.factors, tuple(rest + tuple(order) for _ in m.orders))


def _level_loops(arch: MappingArch, m: Mapping, order: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Per level, ``order`` restricted to the level's temporal loops of factor above 1."""
    slots = arch.slots()
    out = {}
    for j, lv in enumerate(arch.levels):
        k = next(k for k, s in enumerate(slots) if s.kind == TEMPORAL and s.level == j)
        out[lv.name] = tuple(d for d in order if m.factors[d][k] > 1)
    return out


def _common_tail(seqs: list[tuple[str, ...]]) -> tuple[str, ...]:
    tail: list[str] = []
    for i in range(1, min(len(q) for q in seqs) + 1):
        if len({q[-i] for q in seqs}) != 1:
            break
        tail.insert(0, seqs[0][-i])
    return tuple(tail)


def _stationary(nest: LoopNest, loops: dict[str, tuple[str, ...]]) -> dict[str, frozenset[str]]:
    """Per level, the operands its innermost loop (of factor above 1) is irrelevant to: they stay while it runs."""
    return {lv: frozenset(t for t in OPERANDS if ds and ds[-1] not in nest.operand(t).dims) for lv, ds in loops.items()}


def order_sensitivity(nest: LoopNest, arch: MappingArch, m: Mapping, objective: str = "edp") -> OrderSensitivity:
    """Evaluate ``m`` with every level given the same order, for every order of the layer's dimensions of size above 1
    (ValueError for an invalid ``m`` or more than 8 such dimensions)."""
    base = evaluate_mapping(nest, arch, m)
    if not base.valid:
        raise ValueError(f"mapping of {nest.name} is not valid: {'; '.join(base.violations)}")
    dims = tuple(d for d in nest.dims if nest.sizes[d] > 1)
    if math.factorial(len(dims)) > MAX_ORDERS:
        raise ValueError(f"{len(dims)} dimensions of size above 1: {math.factorial(len(dims))} orders (at most "
                         f"{MAX_ORDERS})")
    by_value: dict[float, list[tuple[tuple[str, ...], tuple]]] = {}
    value_of_signature: dict[tuple, float] = {}
    determines = True
    count = 0
    for order in itertools.permutations(dims):
        v = with_order(m, order, nest.dims)
        value = evaluate_mapping(nest, arch, v).objective(objective)
        sig = tuple(sorted(reuse_visits(nest, arch, v).items(), key=lambda kv: (kv[0][0] == MAC, kv[0])))
        if value_of_signature.setdefault(sig, value) != value:
            determines = False
        by_value.setdefault(value, []).append((order, sig))
        count += 1
    classes = []
    for value in sorted(by_value):
        members = by_value[value]
        loops = [_level_loops(arch, m, o) for o, _ in members]
        stat = [_stationary(nest, lp) for lp in loops]
        names = [lv.name for lv in arch.levels]
        innermost = {lv: _common_tail([lp[lv] for lp in loops]) for lv in names}
        stationary = {lv: tuple(t for t in OPERANDS if all(t in st[lv] for st in stat)) for lv in names}
        classes.append(OrderClass(value, len(members), len({s for _, s in members}), innermost, stationary,
                                  members[0][0]))
    return OrderSensitivity(objective, dims, count, base.objective(objective), classes, len(value_of_signature),
                            determines)


__all__ = ["MAX_ORDERS", "OrderClass", "OrderSensitivity", "order_sensitivity", "with_order"]
