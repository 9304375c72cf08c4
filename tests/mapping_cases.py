"""Small architectures, layers and random mappings shared by the mapping tests."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, Level, MappingArch, Store, arch_from_accelerator
from dlaopt.formulations.mapping.cost import CostReport
from dlaopt.formulations.mapping.loopnest import LoopNest, loopnest_from_operator, prime_factors
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.formulations.mapping.simulate import SimResult
from dlaopt.hardware.model import DMA, Accelerator, Memory, MemoryKind, PEArray
from dlaopt.workload.builder import NetworkBuilder

INF = float("inf")


# ---------------------------------------------------------------------------------------------------- architectures
def make_store(name: str, operands: str, capacity: int | None, energy: float) -> Store:
    return Store(name, frozenset(operands), capacity, energy, energy * 1.5, INF, None)


def dram_level() -> Level:
    return Level("dram", (make_store("dram", "IWO", None, 100.0),), 1)


def arch_two_level(mac_fanout: tuple[tuple[str, int], ...] = (), glb_keeps: str = "IWO") -> MappingArch:
    """DRAM -> shared buffer -> a buffer per PE (2x3 PEs), optionally several MAC units per PE."""
    return MappingArch(
        f"glb-{glb_keeps}-pe-mac{len(mac_fanout)}",
        (
            Level("pe", (make_store("pe", "IWO", 64, 1.0),), 6, 2.0),
            Level("glb", (make_store("glb", glb_keeps, 4096, 6.0),), 1, 0.5, (("rows", 2), ("cols", 3))),
            dram_level(),
        ),
        mac_fanout,
        1.0,
        1e9,
    )


def arch_tpu_like() -> MappingArch:
    """A partitioned on-chip level (unified buffer I, accumulators O, weight FIFO W) and a weight register per PE:
    I and O go from the partitioned level straight to the MAC units."""
    return MappingArch(
        "tpu-like",
        (
            Level("pe_w", (make_store("pe_w", "W", 2, 0.5),), 6, 1.0),
            Level("ub+acc+wfifo", (make_store("ub", "I", 4096, 3.0), make_store("acc", "O", 4096, 3.0),
                                   make_store("wfifo", "W", 4096, 3.0)), 1, 0.0, (("rows", 2), ("cols", 3))),
            dram_level(),
        ),
        (),
        1.0,
        1e9,
    )


def arch_three_level() -> MappingArch:
    """DRAM -> global buffer -> per-cluster buffer (2 clusters, keeps I and O only) -> per-PE buffer (2 per cluster)
    -> 2 MAC units per PE: W bypasses the cluster level, fanouts at two levels."""
    return MappingArch(
        "three-level",
        (
            Level("pe", (make_store("pe", "IWO", 64, 1.0),), 4, 1.0),
            Level("cluster", (make_store("cluster", "IO", 512, 3.0),), 2, 1.5, (("pe", 2),)),
            Level("glb", (make_store("glb", "IWO", 4096, 6.0),), 1, 0.0, (("cl", 2),)),
            dram_level(),
        ),
        (("mac", 2),),
        1.0,
        1e9,
    )


def accelerator_small(tpu: bool = False) -> Accelerator:
    """Small accelerators of the shared hardware model, mapped by ``arch_from_accelerator``."""
    dram = Memory("dram", MemoryKind.DRAM, None, read_energy_pj_per_byte=100.0, write_energy_pj_per_byte=100.0)
    if tpu:
        mems = (
            dram,
            Memory("unified_buffer", MemoryKind.SCRATCHPAD, 4096, operands=frozenset("I"), read_energy_pj_per_byte=3),
            Memory("accumulators", MemoryKind.SCRATCHPAD, 4096, operands=frozenset("O"), read_energy_pj_per_byte=3),
            Memory("weight_fifo", MemoryKind.SCRATCHPAD, 4096, operands=frozenset("W"), read_energy_pj_per_byte=3),
            Memory("pe_weight", MemoryKind.REGISTER, 2, instances=4, operands=frozenset("W")),
        )
        pes = PEArray((("rows", 2), ("cols", 2)))
    else:
        mems = (
            dram,
            Memory("glb", MemoryKind.SCRATCHPAD, 4096, read_energy_pj_per_byte=6.0, write_energy_pj_per_byte=6.0),
            Memory("rf", MemoryKind.REGISTER, 64, instances=6, read_energy_pj_per_byte=1.0,
                   write_energy_pj_per_byte=1.0, network_energy_pj_per_byte=1.0),
        )
        pes = PEArray((("rows", 2), ("cols", 3)), macs_per_pe_per_cycle=2)
    return Accelerator("tpu-small" if tpu else "eyeriss-small", pes, mems, DMA(16.0), mac_energy_pj=1.0)


ARCHS: dict[str, Callable[[], MappingArch]] = {
    "glb-pe": arch_two_level,
    "glb-pe-mac": lambda: arch_two_level((("mac", 2),)),
    "glb-bypass-w": lambda: arch_two_level((("mac", 2),), glb_keeps="IO"),
    "tpu-like": arch_tpu_like,
    "three-level": arch_three_level,
    "acc-eyeriss": lambda: arch_from_accelerator(accelerator_small()),
    "acc-tpu": lambda: arch_from_accelerator(accelerator_small(tpu=True)),
}


# ---------------------------------------------------------------------------------------------------- layers
def layer_from(build: Callable[[NetworkBuilder, str], str], shape: tuple[int, ...]) -> LoopNest:
    b = NetworkBuilder("t", dtype_bytes=1)
    x = b.input("x", shape)
    y = build(b, x)
    w = b.build([y])
    op = next(o for o in w.operators if o.kind.value in ("conv2d", "depthwise_conv2d", "matmul"))
    return loopnest_from_operator(w, op)


def matmul_layer() -> LoopNest:
    b = NetworkBuilder("mm", dtype_bytes=2)
    a = b.input("a", (2, 4, 4))
    c = b.input("c", (2, 4, 6))
    w = b.build([b.matmul(a, c)])
    return loopnest_from_operator(w, w.operators[0])


LAYERS: dict[str, Callable[[], LoopNest]] = {
    # P = Q = 4 from an 11x11 input with a dilated 3x3 window: input tiles have holes / halos
    "conv-s2-d2": lambda: layer_from(lambda b, x: b.conv2d(x, 4, 3, stride=2, dilation=2), (1, 2, 11, 11)),
    "conv-1x1-s2": lambda: layer_from(lambda b, x: b.conv2d(x, 4, 1, stride=2), (2, 4, 8, 8)),
    "depthwise": lambda: layer_from(lambda b, x: b.depthwise_conv2d(x, 3), (1, 4, 8, 8)),
    "grouped": lambda: layer_from(lambda b, x: b.conv2d(x, 6, 3, groups=2), (1, 4, 6, 6)),
    # rows 5p + r (stride 5 > window 2: input tiles with holes), columns 3q + 2s (overlapping dilated windows)
    "conv-holes": lambda: layer_from(lambda b, x: b.conv2d(x, 2, (2, 3), stride=(5, 3), dilation=(1, 2)),
                                     (2, 2, 12, 16)),
    "matmul-batch": matmul_layer,
}


# ---------------------------------------------------------------------------------------------------- mappings
def random_mapping(nest: LoopNest, arch: MappingArch, rng: random.Random) -> Mapping:
    """A random perfect factorization of every dimension over the slots (spatial products within the axis sizes)
    and a random loop order per level."""
    slots = arch.slots()
    factors = {d: [1] * len(slots) for d in nest.dims}
    used = [1] * len(slots)
    for d in nest.dims:
        primes = [p for p, e in prime_factors(nest.sizes[d]).items() for _ in range(e)]
        rng.shuffle(primes)
        for p in primes:
            fits = [k for k, s in enumerate(slots) if s.kind == TEMPORAL or used[k] * p <= s.size]
            # favour spatial slots a little so that multicast and reduction get exercised
            spatial = [k for k in fits if slots[k].kind == SPATIAL]
            k = rng.choice(spatial) if spatial and rng.random() < 0.4 else rng.choice(fits)
            factors[d][k] *= p
            used[k] *= p
    orders = []
    for _ in arch.levels:
        order = list(nest.dims)
        rng.shuffle(order)
        orders.append(tuple(order))
    m = Mapping({d: tuple(fs) for d, fs in factors.items()}, tuple(orders))
    assert not mapping_errors(nest, arch, m)
    return m


def assert_same(report: CostReport, sim: SimResult, context: str = "") -> None:
    assert report.valid, report.violations
    expected = {lv: {t: (a.reads, a.writes, a.network) for t, a in d.items()} for lv, d in report.accesses.items()}
    assert sim.as_tuples() == expected, context
    assert sim.macs == report.macs == sim.distinct_iterations, context
    assert sim.temporal_steps == report.compute_cycles, context
    assert sim.mac_units == report.spatial_used, context


def small_hardware_doc(name: str = "small", *, dram_bytes_per_cycle: float = 4,
                       rf_write_bytes_per_cycle: float | None = None) -> dict[str, Any]:
    """The instance document of a 2x2-PE accelerator: DRAM, a 256-byte shared buffer (glb) and a 24-byte register
    file per PE (rf)."""
    rf: dict[str, Any] = {"name": "rf", "kind": "register", "capacity_bytes": 24, "instances": 4,
                          "bandwidth_bytes_per_cycle": 8, "read_energy_pj_per_byte": 0.5,
                          "write_energy_pj_per_byte": 0.5, "network_energy_pj_per_byte": 1}
    if rf_write_bytes_per_cycle is not None:
        rf["write_bandwidth_bytes_per_cycle"] = rf_write_bytes_per_cycle
    return {
        "name": name, "clock_mhz": 200, "mac_energy_pj": 1.0, "pe_array": {"axes": [["rows", 2], ["cols", 2]]},
        "dma": {"bandwidth_bytes_per_cycle": dram_bytes_per_cycle},
        "memories": [
            {"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": dram_bytes_per_cycle,
             "read_energy_pj_per_byte": 100, "write_energy_pj_per_byte": 100},
            {"name": "glb", "kind": "buffer", "capacity_bytes": 256, "bandwidth_bytes_per_cycle": 16,
             "read_energy_pj_per_byte": 3, "write_energy_pj_per_byte": 3},
            rf,
        ],
    }


def pointwise_workload_doc(name: str, side: int, convs: Sequence[tuple[str, str, str, int, int]]) -> dict[str, Any]:
    """An inline workload of 1x1 convolutions on ``side x side`` feature maps, batch 1, 1-byte words: each
    ``(operator, input, output, in channels, out channels)`` reads its input and a weight ``w<k>`` (k from 1). A
    tensor no operator writes is an input, one no operator reads an output, the rest activations."""
    written = {c[2] for c in convs}
    read = {c[1] for c in convs}
    tensors: list[dict[str, Any]] = []
    seen: set[str] = set()
    for k, (_, src, dst, cin, cout) in enumerate(convs, start=1):
        if src not in seen:
            seen.add(src)
            tensors.append({"name": src, "shape": [1, cin, side, side],
                            "role": "activation" if src in written else "input"})
        tensors.append({"name": f"w{k}", "shape": [cout, cin, 1, 1], "role": "weight"})
        if dst not in seen:
            seen.add(dst)
            tensors.append({"name": dst, "shape": [1, cout, side, side],
                            "role": "activation" if dst in read else "output"})
    ops = [{"name": op, "kind": "conv2d", "inputs": [src, f"w{k}"], "outputs": [dst]}
           for k, (op, src, dst, _, _) in enumerate(convs, start=1)]
    return {"name": name, "dtype_bytes": 1, "tensors": tensors, "operators": ops}

