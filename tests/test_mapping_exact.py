"""The exact mapping method against brute force: on small layers and small architectures, the MILP's optimum (and
the EDP Pareto walk's) equals the best of every mapping enumerated, for every objective; the MILP's own value of its
optimum equals the cost model's."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from mapping_cases import ARCHS, layer_from

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import OBJECTIVES, evaluate_mapping
from dlaopt.formulations.mapping.exact import solve_layer
from dlaopt.formulations.mapping.exhaustive import all_mappings
from dlaopt.formulations.mapping.heuristics import HEURISTICS
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.solvers.result import SolveOptions, Status

LAYERS = {
    # a strided 3-tap window: input rows 2p + r overlap between neighbouring outputs (halo)
    "conv-halo": lambda: layer_from(lambda b, x: b.conv2d(x, 2, (3, 1), stride=(2, 1)), (1, 2, 9, 1)),
    "conv-1x1": lambda: layer_from(lambda b, x: b.conv2d(x, 4, 1), (1, 2, 2, 2)),
    # one input channel: the output is far larger than input and weights
    "conv-1x1-c1": lambda: layer_from(lambda b, x: b.conv2d(x, 8, 1), (1, 1, 2, 4)),
    # a dilated window: rows p + 2r
    "conv-dilated": lambda: layer_from(lambda b, x: b.conv2d(x, 2, (2, 1), dilation=(2, 1)), (1, 2, 6, 1)),
    "depthwise": lambda: layer_from(lambda b, x: b.depthwise_conv2d(x, (3, 1)), (1, 4, 4, 1)),
    "matmul": lambda: small_matmul(),
}


def small_matmul() -> LoopNest:
    from dlaopt.formulations.mapping.loopnest import loopnest_from_operator
    from dlaopt.workload.builder import NetworkBuilder

    b = NetworkBuilder("mm", dtype_bytes=2)
    a = b.input("a", (2, 2, 4))
    c = b.input("c", (2, 4, 3))
    w = b.build([b.matmul(a, c)])
    return loopnest_from_operator(w, w.operators[0])


def tight(arch: MappingArch, pe_bytes: int, glb_bytes: int) -> MappingArch:
    """The same architecture with small buffers, so that capacity decides."""
    levels = []
    for j, lv in enumerate(arch.levels):
        if j == arch.top:
            levels.append(lv)
            continue
        cap = pe_bytes if j == 0 else glb_bytes
        levels.append(replace(lv, stores=tuple(replace(s, capacity_bytes=cap) for s in lv.stores)))
    return replace(arch, levels=tuple(levels))


def expensive_reads(arch: MappingArch) -> MappingArch:
    """Main-memory reads far dearer than writes: partial-sum deliveries then cost much more than the energy they
    add (each first visit discounts a read), the case where an incumbent cap must use the net coefficient."""
    top = arch.levels[-1]
    stores = tuple(replace(s, read_energy_pj_per_byte=1000.0, write_energy_pj_per_byte=1.0) for s in top.stores)
    return replace(arch, levels=(*arch.levels[:-1], replace(top, stores=stores)))


CASES = [
    ("glb-pe", "conv-halo", None),
    ("glb-pe", "conv-1x1", (8, 32)),
    ("glb-pe-mac", "conv-halo", (12, 40)),
    ("glb-bypass-w", "conv-1x1", None),
    ("glb-bypass-w", "depthwise", (6, 24)),
    ("tpu-like", "conv-halo", None),
    ("tpu-like", "matmul", None),
    ("glb-pe-mac", "matmul", (10, 48)),
    ("three-level", "conv-1x1", None),
    ("acc-eyeriss", "conv-halo", (16, 64)),
    ("acc-tpu", "depthwise", None),
    ("tpu-like", "conv-1x1", (2, 16)),
    ("glb-pe", "conv-dilated", (12, 64)),
    ("glb-pe/expensive-reads", "conv-1x1-c1", None),
    ("glb-pe-mac/expensive-reads", "conv-1x1-c1", (8, 24)),
]


def brute_force(nest: LoopNest, arch: MappingArch) -> tuple[dict[str, float], dict[str, Mapping]]:
    best = {o: math.inf for o in OBJECTIVES}
    arg: dict[str, Mapping] = {}
    for m in all_mappings(nest, arch):
        r = evaluate_mapping(nest, arch, m)
        if r.valid:
            for o in OBJECTIVES:
                if r.objective(o) < best[o]:
                    best[o], arg[o] = r.objective(o), m
    return best, arg


@pytest.mark.parametrize(("arch_name", "layer_name", "caps"), CASES)
def test_exact_equals_exhaustive(arch_name: str, layer_name: str, caps: tuple[int, int] | None) -> None:
    base, _, variant = arch_name.partition("/")
    arch, nest = ARCHS[base](), LAYERS[layer_name]()
    if variant == "expensive-reads":
        arch = expensive_reads(arch)
    if caps is not None:
        arch = tight(arch, *caps)
    truth, optimum = brute_force(nest, arch)
    opts = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True)
    for objective in OBJECTIVES:
        # cold; warm-started from the dataflow templates; and warm-started from an optimum itself, so that the
        # incumbent caps on the counts' value tables are as tight as they can be and must still keep the optimum
        templates = [m for h in ("nvdla", "eyeriss", "shidiannao")
                     if (m := HEURISTICS[h](nest, arch, objective, seed=0, budget=None, time_limit=None)) is not None]
        for warm in ([], templates, [optimum[objective]]):
            r = solve_layer(nest, arch, objective, options=opts, warm=warm)
            assert r.status == Status.OPTIMAL, (objective, r.message)
            assert r.mapping is not None
            value = evaluate_mapping(nest, arch, r.mapping).objective(objective)
            assert value == pytest.approx(truth[objective], rel=1e-6), (objective, len(warm))
            assert r.bound is not None and truth[objective] * (1 - 2e-6) <= r.bound <= truth[objective] * (1 + 1e-9)
            if r.model_objective is not None:
                assert r.model_objective == pytest.approx(value, rel=1e-6), objective


def write_port_case(name: str) -> tuple[LoopNest, MappingArch]:
    """Layers whose least latency is set by a register file with separate read and write ports, on many PEs: a per-PE
    count is then far below the largest value its table holds, the case where the solver's feasibility tolerance on
    secant rows scaled by that largest value let the model claim less than the cost model."""
    from dlaopt.formulations.mapping.arch import arch_from_accelerator
    from dlaopt.formulations.mapping.loopnest import loopnest_from_operator
    from dlaopt.hardware.model import DMA, Accelerator, Memory, MemoryKind, PEArray
    from dlaopt.hardware.presets import PRESETS
    from dlaopt.workload.builder import NetworkBuilder
    from dlaopt.zoo import ZOO

    if name == "flexion-mnasnet":
        wl = ZOO.create("mnasnet")
        op = next(o for o in wl.operators if o.name == "stack6.0.project")
        return loopnest_from_operator(wl, op), arch_from_accelerator(PRESETS.create("flexion"))
    b = NetworkBuilder("t", dtype_bytes=2)
    x = b.input("x", (1, 8, 7, 7))
    w = b.build([b.conv2d(x, 16, 3, padding=1)])
    mems = (
        Memory("dram", MemoryKind.DRAM, None, bandwidth_bytes_per_cycle=8.0, read_energy_pj_per_byte=100.0,
               write_energy_pj_per_byte=100.0),
        Memory("glb", MemoryKind.SCRATCHPAD, 2048, bandwidth_bytes_per_cycle=64.0, read_energy_pj_per_byte=6.0,
               write_energy_pj_per_byte=6.0),
        Memory("rf", MemoryKind.REGISTER, 32, instances=32, bandwidth_bytes_per_cycle=6.0,
               write_bandwidth_bytes_per_cycle=4.0, read_energy_pj_per_byte=1.0, write_energy_pj_per_byte=1.0,
               network_energy_pj_per_byte=1.0),
    )
    acc = Accelerator("small-write-port", PEArray((("rows", 4), ("cols", 8))), mems, DMA(8.0), mac_energy_pj=1.0)
    op = next(o for o in w.operators if o.kind.value == "conv2d")
    return loopnest_from_operator(w, op), arch_from_accelerator(acc)


@pytest.mark.parametrize("name", ["small-write-port", "flexion-mnasnet"])
def test_model_latency_never_below_the_cost_model(name: str) -> None:
    """The MILP's latency of its decoded mapping is the cost model's, never below it (here it was, by up to 0.05 %)."""
    nest, arch = write_port_case(name)
    warm = [m for h in ("nvdla", "eyeriss", "shidiannao")
            if (m := HEURISTICS[h](nest, arch, "latency", seed=0, budget=None, time_limit=None)) is not None]
    r = solve_layer(nest, arch, "latency", warm=warm,
                    options=SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True, time_limit=60))
    assert r.status == Status.OPTIMAL, r.message
    assert r.mapping is not None and r.model_objective is not None
    value = evaluate_mapping(nest, arch, r.mapping).latency_cycles
    assert r.model_objective >= value * (1 - 1e-7)
    assert r.model_objective == pytest.approx(value, rel=1e-6)
