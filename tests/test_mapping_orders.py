"""Loop-order sensitivity (seed 001 Fig. 5.7): every same-order variant of a mapping, grouped by value."""

from __future__ import annotations

import math
import random

import pytest
from mapping_cases import LAYERS, arch_three_level, arch_two_level, matmul_layer, random_mapping

from dlaopt.formulations.mapping.arch import TEMPORAL
from dlaopt.formulations.mapping.cost import MAC, evaluate_mapping, reuse_visits
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.orders import order_sensitivity, with_order


def valid_mapping(nest, arch, seed: int) -> Mapping:
    rng = random.Random(seed)
    for _ in range(500):
        m = random_mapping(nest, arch, rng)
        if evaluate_mapping(nest, arch, m).valid:
            return m
    raise AssertionError("no valid random mapping")


@pytest.mark.parametrize("layer", ["conv-1x1-s2", "grouped", "matmul-batch"])
@pytest.mark.parametrize("arch_fn", [arch_two_level, arch_three_level])
def test_classes_partition_the_orders_and_values_match_the_evaluator(layer, arch_fn):
    nest, arch = LAYERS[layer](), arch_fn()
    m = valid_mapping(nest, arch, 7)
    s = order_sensitivity(nest, arch, m)
    assert s.orders == math.factorial(len(s.dims)) == sum(c.count for c in s.classes)
    assert s.signature_determines_value
    assert s.signatures >= s.distinct_values == len({c.value for c in s.classes})
    assert [c.value for c in s.classes] == sorted(c.value for c in s.classes)
    for c in s.classes:
        assert evaluate_mapping(nest, arch, with_order(m, c.example, nest.dims)).edp == c.value
    # the mapping's own (per-level) orders give one of the same-order values only if some order reproduces them;
    # its value is at least the best class's whenever the levels' orders agree
    if len(set(m.orders)) == 1:
        assert s.original in {c.value for c in s.classes}


def test_with_order_sets_every_level_and_puts_unit_dimensions_outermost():
    nest, arch = LAYERS["conv-1x1-s2"](), arch_two_level()
    m = valid_mapping(nest, arch, 1)
    dims = tuple(d for d in nest.dims if nest.sizes[d] > 1)
    order = dims[::-1]
    v = with_order(m, order, nest.dims)
    unit = tuple(d for d in nest.dims if nest.sizes[d] == 1)
    assert v.factors == m.factors
    assert all(o == unit + order for o in v.orders)


def test_matmul_with_loops_at_one_level_only_has_three_signatures():
    """Derived: a matmul's three operands are each irrelevant to exactly one loop, so with every loop of size above
    1 at one temporal level (and none elsewhere) the innermost irrelevant run of any operand is at most that
    level's innermost loop: the visits depend only on which loop is innermost, 3 signatures of 2 orders each
    (batch 2 is a fourth loop: it is relevant to every operand, so it never joins a run; 4 loops, 4 innermost
    choices of which the batch one gives no reuse)."""
    nest, arch = matmul_layer(), arch_two_level()
    slots = arch.slots()
    top = next(k for k, s in enumerate(slots) if s.kind == TEMPORAL and s.level == arch.top)
    factors = {d: tuple(nest.sizes[d] if k == top else 1 for k in range(len(slots))) for d in nest.dims}
    m = Mapping(factors, tuple(tuple(nest.dims) for _ in arch.levels))
    s = order_sensitivity(nest, arch, m)
    moving = [d for d in nest.dims if nest.sizes[d] > 1]
    assert s.signatures == len(moving)  # one per innermost loop
    assert s.orders == math.factorial(len(moving))
    top_name = arch.levels[arch.top].name
    for c in s.classes:
        assert c.count % math.factorial(len(moving) - 1) == 0
        # a class of one signature is one innermost loop at the top level, and stationary the operands it skips
        if c.signatures == 1:
            (inner,) = c.innermost[top_name][-1:]
            assert c.stationary[top_name] == tuple(t for t in "IWO" if inner not in nest.operand(t).dims)


def test_reuse_visits_follow_the_innermost_irrelevant_run():
    """Hand-derived on the matmul: all loops at the top level, order (..., N innermost): the child level's A input
    (irrelevant to N) is visited prod(factors) / N times, B and C every iteration but the run of loops irrelevant to
    them (none: N is relevant to both)."""
    nest, arch = matmul_layer(), arch_two_level()
    slots = arch.slots()
    top = next(k for k, s in enumerate(slots) if s.kind == TEMPORAL and s.level == arch.top)
    factors = {d: tuple(nest.sizes[d] if k == top else 1 for k in range(len(slots))) for d in nest.dims}
    dims = [d for d in nest.dims if nest.sizes[d] > 1]
    total = math.prod(nest.sizes[d] for d in dims)
    for inner in dims:
        order = tuple(d for d in dims if d != inner) + (inner,)
        m = with_order(Mapping(factors, tuple(tuple(nest.dims) for _ in arch.levels)), order, nest.dims)
        child = arch.top - 1
        while child >= 0 and not all(t in arch.levels[child].keeps for t in "IWO"):
            child -= 1
        visits = reuse_visits(nest, arch, m)
        for t in "IWO":
            expect = total // nest.sizes[inner] if inner not in nest.operand(t).dims else total
            assert visits[(child, t)] == expect, (inner, t)
        assert visits[(MAC, "I")] == total


def test_invalid_mapping_is_refused():
    nest, arch = LAYERS["conv-1x1-s2"](), arch_two_level()
    slots = arch.slots()
    bottom = next(k for k, s in enumerate(slots) if s.kind == TEMPORAL and s.level == 0)
    factors = {d: tuple(nest.sizes[d] if k == bottom else 1 for k in range(len(slots))) for d in nest.dims}
    m = Mapping(factors, tuple(tuple(nest.dims) for _ in arch.levels))
    assert not evaluate_mapping(nest, arch, m).valid  # the whole layer in a 64-byte PE buffer
    with pytest.raises(ValueError, match="not valid"):
        order_sensitivity(nest, arch, m)
