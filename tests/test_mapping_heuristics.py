"""Mapping heuristics (random search, GAMMA, fixed dataflows): validity on conv / depthwise / matmul layers and three
presets, determinism, GA quality against its own initial population, random search and an exhaustive optimum, and
the spatial dimensions of the dataflow templates."""

from __future__ import annotations

import itertools
import math
import random
from functools import cache

import pytest

from dlaopt.formulations.mapping import heuristics as H
from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import LoopNest, loopnest_from_operator
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.hardware.presets import PRESETS
from dlaopt.workload.builder import NetworkBuilder

ARCH_NAMES = ("eyeriss", "accel-b", "tpu")
LAYER_NAMES = ("conv", "dw", "fc")
SMALL_BUDGET = 400


@cache
def arch(name: str, **params: int) -> MappingArch:
    return arch_from_accelerator(PRESETS.create(name, dict(params)))


@cache
def layers() -> dict[str, LoopNest]:
    """A strided padded conv (input halo with holes-free stride 2 windows), a depthwise conv and a matmul."""
    b = NetworkBuilder("heur", dtype_bytes=2)
    x = b.input("x", (1, 8, 14, 14))
    conv = b.conv2d(x, 16, 3, stride=2, padding=1, name="conv")
    dw = b.depthwise_conv2d(x, 3, padding=1, name="dw")
    a = b.input("a", (6, 32))
    fc = b.linear(a, 24, name="fc")
    wl = b.build(outputs=[conv, dw, fc])
    return {op.name: loopnest_from_operator(wl, op) for op in wl.operators}


@cache
def medium_conv() -> LoopNest:
    b = NetworkBuilder("medium", dtype_bytes=2)
    x = b.input("x", (1, 16, 28, 28))
    y = b.conv2d(x, 32, 3, padding=1, name="conv")
    wl = b.build(outputs=[y])
    return loopnest_from_operator(wl, wl.operators[0])


def value(nest: LoopNest, a: MappingArch, m: Mapping | None, objective: str = "energy") -> float:
    assert m is not None
    return evaluate_mapping(nest, a, m).objective(objective)


def assert_valid(nest: LoopNest, a: MappingArch, m: Mapping | None) -> None:
    assert m is not None
    assert mapping_errors(nest, a, m) == []
    report = evaluate_mapping(nest, a, m)
    assert report.valid, report.violations


# ============================================================================================== validity
@pytest.mark.parametrize("arch_name", ARCH_NAMES)
@pytest.mark.parametrize("layer", LAYER_NAMES)
def test_every_heuristic_returns_a_valid_mapping(arch_name: str, layer: str) -> None:
    nest, a = layers()[layer], arch(arch_name)
    for name, heuristic in H.HEURISTICS.items():
        m = heuristic(nest, a, "energy", seed=3, budget=SMALL_BUDGET, time_limit=None)
        assert m is not None, name
        assert_valid(nest, a, m)


@pytest.mark.parametrize("objective", ["latency", "edp"])
def test_other_objectives(objective: str) -> None:
    nest, a = layers()["conv"], arch("accel-b")
    for heuristic in H.HEURISTICS.values():
        assert_valid(nest, a, heuristic(nest, a, objective, seed=0, budget=200, time_limit=None))


def test_nothing_fits_gives_none() -> None:
    a = arch("eyeriss", rf_bytes=2)  # the RF keeps I, W and O: one element of each needs 6 bytes
    nest = layers()["conv"]
    for heuristic in H.HEURISTICS.values():
        assert heuristic(nest, a, "energy", seed=0, budget=100, time_limit=None) is None


def test_unknown_names_raise() -> None:
    nest, a = layers()["fc"], arch("eyeriss")
    with pytest.raises(ValueError):
        H.dataflow(nest, a, "tpu-like", "energy")
    with pytest.raises(ValueError):
        H.random_search(nest, a, "power", samples=1, seed=0)


def test_time_limit_stops_early() -> None:
    nest, a = medium_conv(), arch("eyeriss")
    m = H.gamma(nest, a, "energy", seed=0, time_limit=0.3)
    assert_valid(nest, a, m)


# ============================================================================================== determinism
@pytest.mark.parametrize("name", list(H.HEURISTICS))
def test_same_seed_same_mapping(name: str) -> None:
    nest, a = layers()["conv"], arch("accel-b")
    run = lambda: H.HEURISTICS[name](nest, a, "edp", seed=11, budget=300, time_limit=None)
    m1, m2 = run(), run()
    assert m1 is not None and m2 is not None
    assert m1.key() == m2.key()


# ============================================================================================== GA quality
def test_ga_never_worse_than_its_initial_population() -> None:
    nest, a = medium_conv(), arch("eyeriss")
    values = [value(nest, a, H.gamma(nest, a, "energy", population=30, generations=g, seed=5)) for g in (0, 3, 10)]
    assert values[0] >= values[1] >= values[2]
    assert values[2] < values[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_ga_beats_random_search_at_equal_evaluations(seed: int) -> None:
    """On Accel-B (256 B private buffers), GAMMA beat random search by 7-24 % on each of seeds 0-5 (1000
    evaluations each); the seeds asserted here give ~23 %, the margin asserted is 5 %."""
    nest, a = medium_conv(), arch("accel-b")
    ga = H.gamma(nest, a, "energy", population=40, generations=100, seed=seed, evaluations=1000)
    rnd = H.random_search(nest, a, "energy", samples=1000, seed=seed)
    assert value(nest, a, ga) * 1.05 <= value(nest, a, rnd)


@pytest.mark.parametrize("objective", ["energy", "edp"])
def test_ga_near_exhaustive_optimum_on_a_tiny_layer(objective: str) -> None:
    b = NetworkBuilder("tiny", dtype_bytes=2)
    x = b.input("a", (2, 4))
    wl = b.build(outputs=[b.linear(x, 4, name="fc")])
    nest, a = loopnest_from_operator(wl, wl.operators[0]), arch("eyeriss")
    ts = [a.temporal_slot(i) for i in range(len(a.levels))]
    ev = H.Evaluator(nest, a, objective)
    for fs in H.enumerate_spatially_valid(nest, a):
        live = [[d for d in nest.dims if fs[d][t] > 1] for t in ts]
        for perms in itertools.product(*(itertools.permutations(lv) for lv in live)):
            orders = tuple(tuple([d for d in nest.dims if d not in p] + list(p)) for p in perms)
            ev.value(Mapping(fs, orders))
    assert ev.best is not None
    ga = H.gamma(nest, a, objective, population=20, generations=30, seed=0)
    assert value(nest, a, ga, objective) <= 1.05 * ev.best_value


# ============================================================================================== dataflows
def pe_axes(a: MappingArch) -> list[int]:
    return H.pe_array_fanout(a)


def spatial_dims(m: Mapping, k: int) -> set[str]:
    return {d for d, fs in m.factors.items() if fs[k] > 1}


@pytest.mark.parametrize("arch_name", ["eyeriss", "accel-b"])
def test_dataflow_spatial_dimensions_conv(arch_name: str) -> None:
    nest, a = layers()["conv"], arch(arch_name)  # K=16 C=8 P=Q=7 R=S=3
    rows, cols = pe_axes(a)
    nv = H.dataflow(nest, a, "nvdla", "energy")
    ey = H.dataflow(nest, a, "eyeriss", "energy")
    sh = H.dataflow(nest, a, "shidiannao", "energy")
    assert nv is not None and ey is not None and sh is not None
    assert spatial_dims(nv, rows) == {"C"} and spatial_dims(nv, cols) == {"K"}
    assert nv.factors["C"][rows] == 8 and nv.factors["K"][cols] == largest_fit(16, a.slots()[cols].size)
    assert "R" in spatial_dims(ey, rows) and spatial_dims(ey, rows) <= {"R", "C"}
    assert ey.factors["R"][rows] == 3 and ey.factors["P"][cols] == 7
    assert "P" in spatial_dims(ey, cols) and spatial_dims(ey, cols) <= {"P", "K", "G"}
    assert spatial_dims(sh, rows) == {"P"} and spatial_dims(sh, cols) == {"Q"}
    # temporal order fixed by the template: output stationary keeps the reduction loops innermost
    assert sh.orders[0][-3:] == ("C", "R", "S")
    assert nv.orders[0][-3:] == ("N", "P", "Q")
    for m in (nv, ey, sh):
        assert_valid(nest, a, m)


def largest_fit(n: int, size: int) -> int:
    return max(f for f in range(1, n + 1) if n % f == 0 and f <= size)


def test_dataflow_mac_fanout_and_matmul_roles() -> None:
    a = arch("accel-b")  # 16x16 PEs with 4 MACs each
    mac = next(k for k, s in enumerate(a.slots()) if s.kind == SPATIAL and s.mac)
    nest = layers()["fc"]  # matmul B=1 M=6 N=24 K=32
    rows, cols = pe_axes(a)
    nv = H.dataflow(nest, a, "nvdla", "energy")
    assert nv is not None
    assert spatial_dims(nv, rows) == {"K"} and spatial_dims(nv, cols) == {"N"}  # reduction down, outputs across
    assert nv.factors["K"][mac] == 2  # 32 = 16 on the rows x 2 on the MACs (then N fills the other 2)
    sh = H.dataflow(nest, a, "shidiannao", "energy")
    assert sh is not None
    assert spatial_dims(sh, rows) == {"M"} and spatial_dims(sh, cols) == {"N"}


def test_dataflow_on_depthwise_uses_groups() -> None:
    nest, a = layers()["dw"], arch("eyeriss")  # G=8, K=C=1
    rows, cols = pe_axes(a)
    nv = H.dataflow(nest, a, "nvdla", "energy")
    assert nv is not None and spatial_dims(nv, cols) == {"G"} and spatial_dims(nv, rows) == set()


def test_greedy_improves_on_the_template_start() -> None:
    nest, a = medium_conv(), arch("eyeriss")
    for name in H.DATAFLOWS:
        start = H.fit_capacity(nest, a, H.dataflow_mapping(nest, a, name))
        assert start is not None
        assert value(nest, a, H.dataflow(nest, a, name, "energy")) < value(nest, a, start)


# ============================================================================================== utilities
def test_enumerate_factorizations() -> None:
    caps = (4, None, 3, None)
    got = list(H.enumerate_factorizations(12, caps))
    brute = [fs for fs in itertools.product(range(1, 13), repeat=4) if math.prod(fs) == 12
             and all(c is None or f <= c for f, c in zip(fs, caps, strict=True))]
    assert sorted(got) == sorted(brute) and len(set(got)) == len(got)


def test_sampled_mappings_are_structurally_valid() -> None:
    rng = random.Random(0)
    for arch_name in ARCH_NAMES:
        a = arch(arch_name)
        for nest in layers().values():
            for _ in range(30):
                assert mapping_errors(nest, a, H.sample_mapping(nest, a, rng)) == []


def test_complete_mapping_and_fit_capacity() -> None:
    nest, a = layers()["conv"], arch("eyeriss")
    n = len(a.slots())
    garbage = {"K": [5, 100, 3], "P": [0] * n, "Q": [7] * (n + 2), "R": [3] * n}
    m = H.complete_mapping(nest, a, garbage, [["Q", "Q", "Z", "P"]])
    assert mapping_errors(nest, a, m) == []
    assert m.orders[0][:2] == ("Q", "P")
    fixed = H.fit_capacity(nest, a, m)
    assert fixed is not None and H.fits(nest, a, fixed.factors)
    assert_valid(nest, a, fixed)
    assert H.capacity_overflows(nest, a, fixed.factors) == []


def test_gamma_decoder_always_yields_perfect_factorizations() -> None:
    rng = random.Random(1)
    for arch_name in ARCH_NAMES:
        a = arch(arch_name)
        for nest in layers().values():
            ga = H._Gamma(nest, a, rng, 0.5)
            pop = [ga.random_genome() for _ in range(10)]
            for g in ga.offspring(pop, 60):
                m = ga.decode(g)
                assert mapping_errors(nest, a, m) == []
                again = ga.decode(ga.encode(m, g.depth, g.par))
                assert again.key() == m.key()
