"""Per-operand roots and capacity limits of the mapping cost model (cost.py) and the loop-nest simulator
(simulate.py): an operand rooted at an on-chip level ends its chain there (operator fusion keeps an intermediate
tensor in a staging buffer); a capacity limit lowers the capacity checked for one store."""

from __future__ import annotations

import random

import pytest
from mapping_cases import ARCHS, LAYERS, assert_same, dram_level, make_store, random_mapping

from dlaopt.formulations.mapping.arch import Level, MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import OPERANDS, Coordinate, LoopNest, Operand
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.formulations.mapping.simulate import simulate_mapping


def root_choices(arch: MappingArch, operand: str) -> list[int]:
    return [j for j in arch.keeping_levels(operand) if arch.levels[j].instances == 1]


def random_roots(arch: MappingArch, rng: random.Random) -> dict[str, int]:
    return {t: rng.choice(root_choices(arch, t)) for t in OPERANDS if rng.random() < 0.8}


@pytest.mark.parametrize("arch_name", sorted(ARCHS))
def test_rooted_cost_model_matches_simulation(arch_name: str) -> None:
    arch = ARCHS[arch_name]()
    rng = random.Random(f"roots/{arch_name}")
    rooted_below_top = 0
    for layer_name in sorted(LAYERS):
        nest = LAYERS[layer_name]()
        for i in range(4):
            m = random_mapping(nest, arch, rng)
            roots = random_roots(arch, rng)
            rooted_below_top += sum(j < arch.top for j in roots.values())
            report = evaluate_mapping(nest, arch, m, check_capacity=False, roots=roots)
            sim = simulate_mapping(nest, arch, m, roots=roots)
            assert_same(report, sim, f"{arch_name}/{layer_name} mapping {i} roots {roots}: {m}")
            base = evaluate_mapping(nest, arch, m, check_capacity=False)
            for t in OPERANDS:
                r = roots.get(t, arch.top)
                for j in arch.keeping_levels(t):
                    got, full = report.accesses[arch.levels[j].name][t], base.accesses[arch.levels[j].name][t]
                    if j > r:  # nothing above the root
                        assert (got.reads, got.writes, got.network) == (0, 0, 0)
                    elif j < r:  # nothing changes below it
                        assert got == full
    assert rooted_below_top > 10


def test_root_at_the_top_equals_no_roots() -> None:
    for arch_name in sorted(ARCHS):
        arch = ARCHS[arch_name]()
        rng = random.Random(f"top/{arch_name}")
        for layer_name in ("conv-s2-d2", "matmul-batch"):
            nest = LAYERS[layer_name]()
            for _ in range(3):
                m = random_mapping(nest, arch, rng)
                base = evaluate_mapping(nest, arch, m)
                top = evaluate_mapping(nest, arch, m, roots=dict.fromkeys(OPERANDS, arch.top))
                assert top.to_dict() == base.to_dict()
                assert (simulate_mapping(nest, arch, m, roots={"O": arch.top}).as_tuples()
                        == simulate_mapping(nest, arch, m).as_tuples())


# ---------------------------------------------------------------------------------------------------- by hand
def conv1d(q: int, s: int) -> LoopNest:
    """O[q] += W[s] * I[q + s] as a conv2d loop nest (the other dimensions 1)."""
    dims = ("N", "G", "K", "C", "P", "Q", "R", "S")
    sizes = {d: 1 for d in dims} | {"Q": q, "S": s}

    def c(*terms: tuple[str, int]) -> Coordinate:
        return Coordinate(terms)

    i = Operand("I", "in", (c(("N", 1)), c(("G", 1)), c(("C", 1)), c(("P", 1), ("R", 1)), c(("Q", 1), ("S", 1))), 1)
    w = Operand("W", "w", (c(("G", 1)), c(("K", 1)), c(("C", 1)), c(("R", 1)), c(("S", 1))), 1)
    o = Operand("O", "out", (c(("N", 1)), c(("G", 1)), c(("K", 1)), c(("P", 1)), c(("Q", 1))), 1)
    return LoopNest("conv1d", "conv2d", dims, sizes, (i, w, o))


def arch_1d(glb_bytes: int = 1024) -> MappingArch:
    return MappingArch("1d", (
        Level("pe", (make_store("pe", "IWO", 64, 1.0),), 3, 2.0),
        Level("glb", (make_store("glb", "IWO", glb_bytes, 6.0),), 1, 0.0, (("x", 3),)),
        dram_level(),
    ), (), 1.0, 1e9)


def fig_2_5_mapping(nest: LoopNest, arch: MappingArch) -> Mapping:
    """Seed 001, Fig. 2.5's output-stationary 1-D convolution (Q = S = 9 on 3 PEs): T(glb) over (q1, s1), the PEs
    over q0, T(pe) over s0."""
    place = {"Q": {"S1:x": 3, "T1": 3}, "S": {"T0": 3, "T1": 3}}
    slots = arch.slots()
    factors = {d: tuple(place.get(d, {}).get(s.name, 1) for s in slots) for d in nest.dims}
    glb_order = ("Q", "S", *(d for d in nest.dims if d not in "QS"))
    m = Mapping(factors, (nest.dims, glb_order, nest.dims))
    assert not mapping_errors(nest, arch, m)
    return m


def test_rooting_every_operand_at_the_buffer_by_hand() -> None:
    """Fig. 2.5's counts (derived in test_mapping_simulate.py) with I, W and O rooted at the shared buffer: the
    buffer no longer gets I (17) and W (9) from DRAM nor drains O (9) to it; what it sends to and receives from the
    PEs is unchanged (reads I 45, W 27, O 9 drained into it, never reloaded); DRAM sees nothing."""
    nest, arch = conv1d(9, 9), arch_1d()
    m = fig_2_5_mapping(nest, arch)
    roots = {"I": 1, "W": 1, "O": 1}
    report = evaluate_mapping(nest, arch, m, roots=roots)
    sim = simulate_mapping(nest, arch, m, roots=roots)
    assert_same(report, sim)
    expected = {
        "dram": {"I": (0, 0, 0), "W": (0, 0, 0), "O": (0, 0, 0)},
        "glb": {"I": (45, 0, 0), "W": (27, 0, 0), "O": (0, 9, 0)},
        "pe": {"I": (81, 81, 81), "W": (81, 81, 81), "O": (81, 81, 9)},
    }
    assert sim.as_tuples() == {lv: dict(sorted(d.items())) for lv, d in expected.items()}
    assert report.tile_bytes["glb"] == {}  # the root does not count its own tiles
    assert report.tile_bytes["pe"] == {"I": 3, "W": 3, "O": 1}


def test_root_excludes_its_own_tile_from_the_capacity_check() -> None:
    """The buffer holds the whole tensors (I 17 + W 9 + O 9 = 35 bytes): 30 bytes overflow, unless I is rooted
    there (then 18 bytes are checked)."""
    nest, arch = conv1d(9, 9), arch_1d(glb_bytes=30)
    m = fig_2_5_mapping(nest, arch)
    plain = evaluate_mapping(nest, arch, m)
    assert not plain.valid and "need 35 B in 'glb' of 30 B" in plain.violations[0]
    rooted = evaluate_mapping(nest, arch, m, roots={"I": 1})
    assert rooted.valid, rooted.violations
    assert rooted.tile_bytes["glb"] == {"W": 9, "O": 9}


def test_capacity_limits_tighten_the_check() -> None:
    nest, arch = conv1d(9, 9), arch_1d()
    m = fig_2_5_mapping(nest, arch)
    assert evaluate_mapping(nest, arch, m).valid
    at_limit = evaluate_mapping(nest, arch, m, capacity_limits={(1, "glb"): 35})
    assert at_limit.valid and at_limit.to_dict() == evaluate_mapping(nest, arch, m).to_dict()
    over = evaluate_mapping(nest, arch, m, capacity_limits={(1, "glb"): 34})
    assert not over.valid and over.violations == ["level glb: tiles of I+O+W need 35 B in 'glb' of 34 B "
                                                  "(capacity limit)"]
    assert evaluate_mapping(nest, arch, m, capacity_limits={(1, "glb"): 34}, check_capacity=False).valid
    # a limit above the store's capacity changes nothing; the PE tile (3 + 3 + 1 bytes) against a limit of 6
    assert evaluate_mapping(nest, arch, m, capacity_limits={(1, "glb"): 10**9}).valid
    pe = evaluate_mapping(nest, arch, m, capacity_limits={(0, "pe"): 6})
    assert not pe.valid and "need 7 B in 'pe' of 6 B" in pe.violations[0]
    # rooted I at the buffer and a limit of 18 = W 9 + O 9: fits; 17 does not
    assert evaluate_mapping(nest, arch, m, roots={"I": 1}, capacity_limits={(1, "glb"): 18}).valid
    assert not evaluate_mapping(nest, arch, m, roots={"I": 1}, capacity_limits={(1, "glb"): 17}).valid


def test_random_capacity_limits_agree_with_tile_bytes() -> None:
    """The check is exactly: the sum of the checked tiles (tile_bytes) against min(capacity, limit)."""
    arch = ARCHS["three-level"]()
    rng = random.Random("limits")
    for layer_name in sorted(LAYERS):
        nest = LAYERS[layer_name]()
        for _ in range(5):
            m = random_mapping(nest, arch, rng)
            roots = random_roots(arch, rng)
            limits = {(j, s.memory): rng.randint(1, 200) for j, lv in enumerate(arch.levels[:-1]) for s in lv.stores
                      if rng.random() < 0.5}
            report = evaluate_mapping(nest, arch, m, roots=roots, capacity_limits=limits)
            over = 0
            for j, lv in enumerate(arch.levels[:-1]):
                for s in lv.stores:
                    used = sum(report.tile_bytes[lv.name].get(t, 0) for t in s.operands)
                    over += used > min(s.capacity_bytes, limits.get((j, s.memory), float("inf")))
            assert len(report.violations) == over


def test_bad_roots_and_limits_raise() -> None:
    nest, arch = conv1d(9, 9), arch_1d()
    m = fig_2_5_mapping(nest, arch)
    with pytest.raises(ValueError, match="instances"):
        evaluate_mapping(nest, arch, m, roots={"I": 0})  # the PE buffers: 3 instances
    with pytest.raises(ValueError, match="instances"):
        simulate_mapping(nest, arch, m, roots={"I": 0})
    with pytest.raises(ValueError, match="unknown operand"):
        evaluate_mapping(nest, arch, m, roots={"X": 1})
    with pytest.raises(ValueError, match="does not exist"):
        evaluate_mapping(nest, arch, m, roots={"O": 3})
    bypass = ARCHS["glb-bypass-w"]()
    with pytest.raises(ValueError, match="does not keep"):
        evaluate_mapping(LAYERS["matmul-batch"](), bypass, random_mapping(LAYERS["matmul-batch"](), bypass,
                                                                          random.Random(0)), roots={"W": 1})
    with pytest.raises(ValueError, match="no store"):
        evaluate_mapping(nest, arch, m, capacity_limits={(1, "rf"): 10})
