"""Built-in hardware presets. Each is a factory with keyword parameters (``dlaopt presets`` lists them).

Sources of the numbers:

* ``smaug-nvdla`` — the thesis' accelerator (seed 000, §4.1.2 and §6.1): SMAUG's NVDLA-inspired convolution engine,
  8 PEs with 32-way MACC arrays, three scratchpads (two for inputs, one for outputs), 32 KB each by default and
  resized in the thesis' sweep from 32 KB to 2048 KB. SMAUG runs at 1 GHz; main memory is gem5's default DDR3-1600
  8x8 channel (12.8 GB/s, i.e. 12.8 B per accelerator cycle). The thesis' ILP puts no direction restriction on the
  scratchpads, so ``strict_roles=False`` (default) lets any scratchpad hold any tensor, which reproduces its
  formulation; ``strict_roles=True`` makes spad0/spad1 input-only and spad2 output-only.
* ``eyeriss`` — Eyeriss v1: 12x14 PEs, 0.5 KB register file per PE, 108 KB global buffer, normalised energies per
  access (MAC 1, RF 1, NoC 2, global buffer 6, DRAM 200; seed 001 Ch. 2 and the Eyeriss papers), 200 MHz.
* ``tpu`` — TPU v1-like: 256x256 weight-stationary systolic array at 700 MHz, 24 MiB unified buffer for
  activations, 4 MiB of accumulators for outputs, a 256 KiB weight FIFO, 30 GB/s DDR3.
"""

from __future__ import annotations

from dlaopt.hardware.model import DMA, Accelerator, Memory, MemoryKind, PEArray, SpmAccess
from dlaopt.registry import Registry
from dlaopt.workload.tensor import TensorRole

KiB = 1024
MiB = 1024 * 1024

PRESETS: Registry[Accelerator] = Registry("hardware preset")


def _dram(bandwidth: float, energy: float = 0.0) -> Memory:
    return Memory("dram", MemoryKind.DRAM, None, bandwidth_bytes_per_cycle=bandwidth,
                  read_energy_pj_per_byte=energy, write_energy_pj_per_byte=energy)


@PRESETS.register("smaug-nvdla", "Thesis (seed 000) SMAUG NVDLA-like DLA: 8 PEs x 32-way MACC, three scratchpads")
def smaug_nvdla(
    *,
    spad_kb: int = 32,
    num_spads: int = 3,
    strict_roles: bool = False,
    dma_bytes_per_cycle: float = 12.8,
    dma_latency_cycles: float = 0.0,
    clock_mhz: float = 1000.0,
) -> Accelerator:
    if spad_kb <= 0 or num_spads <= 0:
        raise ValueError("spad_kb and num_spads must be positive")
    spads = []
    for i in range(num_spads):
        if strict_roles:
            access = SpmAccess.OUTPUT if i == num_spads - 1 and num_spads > 1 else SpmAccess.INPUT
        else:
            access = SpmAccess.ANY
        spads.append(Memory(f"spad{i}", MemoryKind.SCRATCHPAD, spad_kb * KiB, access=access,
                            bandwidth_bytes_per_cycle=64.0))
    return Accelerator(
        name="smaug-nvdla",
        pe_array=PEArray((("pe", 8), ("macc", 32)), macs_per_pe_per_cycle=1, vector_lanes=32),
        memories=(_dram(dma_bytes_per_cycle), *spads),
        dma=DMA(dma_bytes_per_cycle, dma_latency_cycles),
        clock_hz=clock_mhz * 1e6,
        description="SMAUG's NVDLA-inspired convolution engine (seed 000, sections 4.1.2 and 6.1)",
        params={"spad_kb": spad_kb, "num_spads": num_spads, "strict_roles": strict_roles,
                "dma_bytes_per_cycle": dma_bytes_per_cycle, "dma_latency_cycles": dma_latency_cycles,
                "clock_mhz": clock_mhz},
    )


@PRESETS.register("eyeriss", "Eyeriss v1-like: 12x14 PEs, 0.5 KB RF per PE, 108 KB global buffer, normalised energies")
def eyeriss(
    *,
    glb_kb: int = 108,
    rf_bytes: int = 512,
    rows: int = 12,
    cols: int = 14,
    dram_bytes_per_cycle: float = 16.0,
    clock_mhz: float = 200.0,
) -> Accelerator:
    if min(glb_kb, rf_bytes, rows, cols) <= 0:
        raise ValueError("sizes must be positive")
    return Accelerator(
        name="eyeriss",
        pe_array=PEArray((("rows", rows), ("cols", cols))),
        memories=(
            _dram(dram_bytes_per_cycle, energy=200.0),
            Memory("glb", MemoryKind.SCRATCHPAD, glb_kb * KiB, bandwidth_bytes_per_cycle=64.0,
                   read_energy_pj_per_byte=6.0, write_energy_pj_per_byte=6.0),
            Memory("rf", MemoryKind.REGISTER, rf_bytes, instances=rows * cols, bandwidth_bytes_per_cycle=2.0,
                   read_energy_pj_per_byte=1.0, write_energy_pj_per_byte=1.0),
        ),
        dma=DMA(dram_bytes_per_cycle, 0.0),
        clock_hz=clock_mhz * 1e6,
        mac_energy_pj=1.0,
        description="Eyeriss v1-like row-stationary accelerator with normalised energies (MAC 1, RF 1, NoC 2, "
        "global buffer 6, DRAM 200)",
        params={"glb_kb": glb_kb, "rf_bytes": rf_bytes, "rows": rows, "cols": cols,
                "dram_bytes_per_cycle": dram_bytes_per_cycle, "clock_mhz": clock_mhz},
    )


@PRESETS.register("tpu", "TPU v1-like: 256x256 systolic array, 24 MiB unified buffer, 4 MiB accumulators")
def tpu(
    *,
    array: int = 256,
    unified_buffer_mib: int = 24,
    accumulator_mib: int = 4,
    weight_fifo_kib: int = 256,
    dram_gb_per_s: float = 30.0,
    clock_mhz: float = 700.0,
) -> Accelerator:
    if min(array, unified_buffer_mib, accumulator_mib, weight_fifo_kib) <= 0 or dram_gb_per_s <= 0:
        raise ValueError("sizes and bandwidth must be positive")
    bpc = dram_gb_per_s * 1e9 / (clock_mhz * 1e6)
    return Accelerator(
        name="tpu",
        pe_array=PEArray((("rows", array), ("cols", array))),
        memories=(
            _dram(bpc),
            Memory("unified_buffer", MemoryKind.SCRATCHPAD, unified_buffer_mib * MiB,
                   holds=frozenset({TensorRole.INPUT, TensorRole.ACTIVATION, TensorRole.OUTPUT}),
                   bandwidth_bytes_per_cycle=float(array)),
            Memory("accumulators", MemoryKind.SCRATCHPAD, accumulator_mib * MiB, access=SpmAccess.OUTPUT,
                   holds=frozenset({TensorRole.ACTIVATION, TensorRole.OUTPUT}), bandwidth_bytes_per_cycle=float(array)),
            Memory("weight_fifo", MemoryKind.SCRATCHPAD, weight_fifo_kib * KiB, access=SpmAccess.INPUT,
                   holds=frozenset({TensorRole.WEIGHT}), bandwidth_bytes_per_cycle=float(array)),
        ),
        dma=DMA(bpc, 0.0),
        clock_hz=clock_mhz * 1e6,
        description="TPU v1-like weight-stationary systolic accelerator",
        params={"array": array, "unified_buffer_mib": unified_buffer_mib, "accumulator_mib": accumulator_mib,
                "weight_fifo_kib": weight_fifo_kib, "dram_gb_per_s": dram_gb_per_s, "clock_mhz": clock_mhz},
    )
