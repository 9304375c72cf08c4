"""Exact map-space sizes (seed 001 §5.2.2): every representation's count against brute-force enumeration (of every
mapping, or of every factorization with its orders counted), hand-derived small cases, and the Chinese-remainder
path on counts beyond int64."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from mapping_cases import ARCHS, LAYERS, dram_level, make_store

from dlaopt.formulations.mapping import heuristics as H
from dlaopt.formulations.mapping import spacesize as Z
from dlaopt.formulations.mapping.arch import Level, MappingArch
from dlaopt.formulations.mapping.exhaustive import all_mappings, factor_splits
from dlaopt.formulations.mapping.loopnest import Coordinate, LoopNest, Operand


def by_mappings(nest: LoopNest, arch: MappingArch) -> dict[str, int]:
    """Every representation counted from the mappings themselves: distinct keys, with level 0's order dropped for
    Random-Pruned, and the factorizations times full permutations for Timeloop."""
    keys, pruned, valid = set(), set(), set()
    for m in all_mappings(nest, arch):
        k = H.mapping_key(nest, arch, m)
        keys.add(k)
        pruned.add((k[0], k[1][1:]))
        if H.fits(nest, arch, m.factors):
            valid.add(k)
    combos = sum(1 for _ in H.enumerate_spatially_valid(nest, arch))
    timeloop = combos * math.factorial(Z.problem_dims(nest)) ** len(arch.levels)
    return {"timeloop": timeloop, "pruned": len(pruned), "dlaopt": len(keys), "valid": len(valid)}


def by_factorizations(nest: LoopNest, arch: MappingArch) -> dict[str, int]:
    """Every representation from the enumerated factorizations: each contributes the number of orders of its live
    loops per level (``c_j!``; none at level 0 for Random-Pruned), if it fits for ``valid``."""
    ts = [arch.temporal_slot(i) for i in range(len(arch.levels))]
    out = dict.fromkeys(Z.REPRESENTATIONS, 0)
    for f in H.enumerate_spatially_valid(nest, arch):
        live = [sum(1 for d in nest.dims if f[d][k] > 1) for k in ts]
        orders = math.prod(math.factorial(c) for c in live)
        out["timeloop"] += math.factorial(Z.problem_dims(nest)) ** len(arch.levels)
        out["pruned"] += orders // math.factorial(live[0])
        out["dlaopt"] += orders
        out["valid"] += orders if H.fits(nest, arch, f) else 0
    return out


@pytest.mark.parametrize("arch_name", ["glb-pe", "glb-pe-mac", "tpu-like", "acc-tpu"])
def test_counts_equal_the_distinct_mappings_enumerated(arch_name: str) -> None:
    nest, arch = LAYERS["matmul-batch"](), ARCHS[arch_name]()
    want = by_mappings(nest, arch)
    assert want["valid"] < want["dlaopt"]  # the capacity filter bites on these
    assert Z.space_sizes(nest, arch).counts == want


@pytest.mark.parametrize(("layer", "arch_name"), [
    ("conv-holes", "tpu-like"),  # input rows 5p + r with holes, partitioned on-chip stores
    ("conv-s2-d2", "acc-tpu"),  # stride-2 dilation-2 halo
    ("depthwise", "acc-tpu"),
    ("grouped", "tpu-like"),
    ("matmul-batch", "three-level"),  # four levels, fanouts at two levels and a MAC fanout, W bypassing one level
])
def test_counts_equal_the_factorizations_enumerated(layer: str, arch_name: str) -> None:
    nest, arch = LAYERS[layer](), ARCHS[arch_name]()
    want = by_factorizations(nest, arch)
    assert 0 < want["valid"] < want["dlaopt"]
    assert Z.space_sizes(nest, arch).counts == want


def one_dim_nest(n: int) -> LoopNest:
    """A matmul nest with ``M = n`` and every other dimension 1."""
    def c(d: str) -> Coordinate:
        return Coordinate(((d, 1),))

    ops = (Operand("I", "i", (c("B"), c("M"), c("K")), 1), Operand("W", "w", (c("B"), c("K"), c("N")), 1),
           Operand("O", "o", (c("B"), c("M"), c("N")), 1))
    return LoopNest("m", "matmul", ("B", "M", "N", "K"), {"B": 1, "M": n, "N": 1, "K": 1}, ops)


def test_hand_derived_single_dimension() -> None:
    # slots T0, S1:x (size 2), T1, T2: 4 = 2^2 splits over 4 slots in C(5, 3) = 10 ways, one of which puts 4 on the
    # 2-wide axis: 9. One live loop per level at most, so every order count is 1; Timeloop permutes all 4 matmul
    # dimensions at each of the 3 levels: 9 * 24^3. Capacity: level 0 holds 1 + 0 + 1 bytes per unit of its M tile
    # (I and O are M-relevant, W is not: 1 byte) -> 2 * t0 + 1 <= 5 keeps t0 in {1, 2}: of the 9 splits, those with
    # t0 = 4 (T0 = 4) are 1, so 8 remain.
    arch = MappingArch("hand", (Level("pe", (make_store("pe", "IWO", 5, 1.0),), 2),
                                Level("glb", (make_store("glb", "IWO", 1000, 1.0),), 1, 0.0, (("x", 2),)),
                                dram_level()), (), 1.0, 1e9)
    got = Z.space_sizes(one_dim_nest(4), arch).counts
    assert got == {"timeloop": 9 * 24 ** 3, "pruned": 9, "dlaopt": 9, "valid": 8}


def test_stars_and_bars_matches_enumerated_factorizations() -> None:
    arch = ARCHS["three-level"]()
    temporal = tuple(s for s in arch.slots() if s.kind == "temporal")
    for n in (1, 12, 16, 30, 81, 360):
        assert Z.stars_and_bars(n, len(temporal)) == len(factor_splits(n, temporal))
    assert Z.stars_and_bars(12, 3) == 6 * 3  # 2^2: C(4, 2); 3^1: C(3, 2)


def test_beyond_int64_the_remainders_recombine_exactly() -> None:
    # five levels, no fanout: every factorization over the five temporal slots counts, so Timeloop's count is the
    # closed form prod_d tau_5(n_d) * (7!)^5, far beyond 2^63, and the unweighted sum needs two moduli
    nest = Z.table_5_1_layers()["resnet-conv4"]
    levels = tuple(Level(f"l{i}", (make_store(f"l{i}", "IWO", 10 ** 9, 1.0),), 1) for i in range(4))
    arch = MappingArch("deep", (*levels, dram_level()), (), 1.0, 1e9)
    free = math.prod(Z.stars_and_bars(n, 5) for n in nest.sizes.values())
    assert free > 2 ** 31
    got = Z.space_sizes(nest, arch, ("timeloop",)).counts["timeloop"]
    assert got == free * math.factorial(7) ** 5 > 2 ** 63


def test_chinese_remainders_reconstruct_random_integers() -> None:
    rng = random.Random(3)
    for k in (1, 2, 4):
        mods = Z._moduli(k)
        for _ in range(20):
            x = rng.randrange(math.prod(mods))
            assert Z._crt([x % p for p in mods], mods) == x


def test_table_5_1_workloads_have_the_table_shapes() -> None:
    layers = Z.table_5_1_layers()
    conv = {n: tuple(layers[n].sizes[d] for d in ("N", "K", "C", "P", "Q", "R", "S")) for n in Z.TABLE_5_1_CONVS}
    assert conv == Z.TABLE_5_1_CONVS
    mm = {n: tuple(layers[n].sizes[d] for d in ("B", "M", "K", "N")) for n in Z.TABLE_5_1_MATMULS}
    assert mm == Z.TABLE_5_1_MATMULS
    assert Z.problem_dims(layers["resnet-conv4"]) == 7 and Z.problem_dims(layers["bert-kqv"]) == 4


def test_representations_nest_and_the_chapter_formula_uses_exact_tile_chains() -> None:
    nest, arch = LAYERS["conv-holes"](), ARCHS["glb-pe-mac"]()
    s = Z.space_sizes(nest, arch)
    c = s.counts
    assert c["valid"] <= c["dlaopt"] and c["pruned"] <= c["dlaopt"] <= c["timeloop"]
    # chains t0 | t1 | n per dimension over the 3 levels: prod_p C(e + 2, 2); 7 problem dimensions; 2 fanouts
    tiles = math.prod(math.comb(e + 2, 2) for n in nest.sizes.values() for e in _exponents(n))
    assert s.chapter == tiles * math.factorial(7) ** 3 * 2 ** (7 * 2)


def _exponents(n: int) -> list[int]:
    out = []
    for p in range(2, n + 1):
        e = 0
        while n % p == 0:
            n //= p
            e += 1
        if e:
            out.append(e)
    return out


def test_unknown_representation_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown representations"):
        Z.space_sizes(LAYERS["matmul-batch"](), ARCHS["glb-pe"](), ("everything",))


def test_orders_of_a_level_with_c_live_loops_count_c_factorial() -> None:
    # the key of a mapping keeps the live loops' order only: c live loops give c! keys at that level
    nest, arch = LAYERS["matmul-batch"](), ARCHS["glb-pe"]()
    m = next(m for m in all_mappings(nest, arch)
             if sum(1 for d in nest.dims if m.factors[d][arch.temporal_slot(2)] > 1) == 3)
    keys = {H.mapping_key(nest, arch, type(m)(m.factors, (m.orders[0], m.orders[1], p)))
            for p in itertools.permutations(nest.dims)}
    assert len(keys) == math.factorial(3)
