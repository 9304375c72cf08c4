"""Built-in hardware presets. Each is a factory with keyword parameters (``dlaopt presets`` lists them).

Sources of the numbers:

* ``smaug-nvdla`` — the thesis' accelerator (seed 000, §4.1.2 and §6.1): SMAUG's NVDLA-inspired convolution engine,
  8 PEs with 32-way MACC arrays, three scratchpads (two for inputs, one for outputs), 32 KB each by default and
  resized in the thesis' sweep from 32 KB to 2048 KB. SMAUG runs at 1 GHz; main memory is gem5's default DDR3-1600
  8x8 channel (12.8 GB/s, i.e. 12.8 B per accelerator cycle). The thesis' ILP puts no direction restriction on the
  scratchpads, so ``strict_roles=False`` (default) lets any scratchpad hold any tensor, which reproduces its
  formulation; ``strict_roles=True`` makes spad0/spad1 input-only and spad2 output-only.
* ``eyeriss`` — Eyeriss v1: 12x14 PEs, 0.5 KB register file per PE, 108 KB global buffer, normalised energies per
  16-bit access (MAC 1, RF 1, NoC 2, global buffer 6, DRAM 200; the Eyeriss papers), 200 MHz. Energies
  are stored per byte (half the per-access figure); NoC energy is charged per byte moved into or out of a PE's RF.
* ``gamma-edge`` / ``gamma-cloud`` — GAMMA's platforms (seed 001, Table 4.2): 168 PEs, 512 B local (SL) per PE,
  108 KB global (SG); 65,536 PEs, 4 MiB of local buffers in total (64 B per PE), 24 MiB global. Energies as Eyeriss.
  The parameter ``system`` picks the target system of Table 4.3 (same PEs and buffers in all three):

  - ``"s1"`` (default) — fixed 2-D array: 12x14 (Eyeriss' shape) and 256x256 (a TPU's); two levels of parallelism,
    one per axis. The accelerator keeps the plain names ``gamma-edge`` / ``gamma-cloud``.
  - ``"s2"`` — flexible aspect ratio (§4.4.3): the array is one axis ``pes`` of all N PEs. Any rows x cols shape
    within N PEs maps onto it (a mapping on r x c fits the one axis, one with a row part rho fits rho x N//rho; the
    argument of :mod:`dlaopt.formulations.mapping.flexibility`, "Shape"), so one or two parallel dimensions are one
    axis' factors. Departure: the axis may also carry more than two dimensions, which GAMMA's S2 does not allow.
  - ``"s3"`` — scale-out (§4.4.4, Simba/Tetris-like): ``arrays`` identical flexible arrays of N/``arrays`` PEs each
    (``PEArray.arrays``), sharing the global buffer, each PE with its local buffer: the fanout into the local
    buffers is ``pes`` x ``array``, a third level of parallelism across the arrays. The chapter does not give the
    split: dlaopt's defaults are 4 arrays x 42 PEs (edge) and 16 arrays x 4096 PEs (cloud) (``arrays=0``).

  Named ``gamma-<platform>-s2`` / ``-s3``; ``arrays`` must be 0 (or 1) unless ``system`` is ``"s3"``.
* ``accel-a`` / ``accel-b`` — Demystifying-MSE's accelerators (seed 001, Table 5.1): 512 KB shared buffer, 64 KB
  private buffer per PE, 256 PEs, 1 ALU per PE; 64 KB shared, 256 B private per PE, 256 PEs, 4 ALUs per PE. The
  table gives no energies or bandwidths: the Eyeriss normalised energies are used (a 64 KB private buffer is charged
  as a global buffer access, 6 per access), DRAM 32 B/cycle, shared buffer 256 B/cycle.
* ``tpu`` — TPU v1-like: 256x256 weight-stationary systolic array at 700 MHz, 24 MiB unified buffer for
  activations, 4 MiB of accumulators for outputs, a 256 KiB weight FIFO, 30 GB/s DDR3; each PE holds one weight
  (``pe_weight``), inputs flow across rows and partial sums down columns (modelled as multicast and reduction).
* ``eyeriss-polyacc`` — ``eyeriss`` with seed 004's (PolyAcc, §4.2) PE-to-PE links: partial sums down the columns,
  weights along the rows, input rows diagonally; a link costs a fraction (default 0.5) of the NoC energy per byte.
* ``systolic-forwarding`` — ``tpu`` with explicit PE-to-PE links (default weights and partial sums down the
  columns; optionally inputs across the rows), the weight registers filled over a 1 pJ/B network, links at half that.
* ``flexion`` — Flexion's baseline accelerator (seed 001, Table 3.1): 1024 PEs as a 16x64 array and a 100 KB
  on-chip buffer. The table gives no energies, bandwidths or PE storage: the Eyeriss normalised energies are used,
  each PE has a 64 B register file, main memory delivers 64 B and the buffer 512 B per cycle (assumptions).
  ``partition="1:1:1"`` hard-partitions the buffer among inputs, weights and outputs (PartFlex-1000 of §3.4.2;
  each part gets its share of the capacity and of the bandwidth); the default ``"soft"`` is one shared buffer.
* ``flat-edge`` / ``flat-cloud`` — FLAT's accelerators (seed 001, Appendix A, Table A.3 and §A.5): 32x32 PEs,
  1 TB/s on-chip and 50 GB/s off-chip bandwidth, a 512 KB global buffer (edge-TPU-like); 256x256 PEs, 8 TB/s,
  400 GB/s, 32 MB (TPU-v3-like). The chapter gives no clock, PE storage or energies: a 1 GHz clock is assumed (so
  the bandwidths are 1000 / 50 and 8000 / 400 bytes per cycle), each PE has a 64 B register file, and the energies
  are the Eyeriss normalised scale per 16-bit access (MAC 1, RF 1, NoC 2, global buffer 6, DRAM 200; the chapter
  uses Accelergy, whose default tables keep the same ordering). Words are 2 bytes (fp16/bf16).
"""

from __future__ import annotations

from typing import Any

from dlaopt.hardware.model import DMA, Accelerator, Link, Memory, MemoryKind, PEArray, SpmAccess
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
    banks: int = 1,
) -> Accelerator:
    """The thesis counts bytes and cycles only; the energies (per 16-bit access: DRAM 200, scratchpad 6, MAC 1) are
    the normalised Eyeriss scale the spatial presets use, so mapping and compile reports can estimate energy.

    For mapping (tiling), the scratchpads are one on-chip level: with three of them, as SMAUG's NVDLA-like engine
    has, they keep the input activations, the weights and the outputs (spad0, spad1, spad2); with two, inputs and
    weights share spad0. Tensor pinning may place any tensor in any scratchpad unless ``strict_roles``. ``banks``
    splits every scratchpad into that many banks (for bank mapping; the thesis' scratchpads are not banked)."""
    if spad_kb <= 0 or num_spads <= 0 or banks <= 0:
        raise ValueError("spad_kb, num_spads and banks must be positive")
    kept = {1: [None], 2: [frozenset({"I", "W"}), frozenset({"O"})],
            3: [frozenset({"I"}), frozenset({"W"}), frozenset({"O"})]}.get(num_spads, [None] * num_spads)
    spads = []
    for i in range(num_spads):
        if strict_roles:
            access = SpmAccess.OUTPUT if i == num_spads - 1 and num_spads > 1 else SpmAccess.INPUT
        else:
            access = SpmAccess.ANY
        spads.append(Memory(f"spad{i}", MemoryKind.SCRATCHPAD, spad_kb * KiB, access=access, banks=banks,
                            bandwidth_bytes_per_cycle=64.0, operands=kept[i], read_energy_pj_per_byte=3.0,
                            write_energy_pj_per_byte=3.0))
    return Accelerator(
        name="smaug-nvdla",
        pe_array=PEArray((("pe", 8), ("macc", 32)), macs_per_pe_per_cycle=1, vector_lanes=32),
        memories=(_dram(dma_bytes_per_cycle, energy=100.0), *spads),
        mac_energy_pj=1.0,
        dma=DMA(dma_bytes_per_cycle, dma_latency_cycles),
        clock_hz=clock_mhz * 1e6,
        description="SMAUG's NVDLA-inspired convolution engine (seed 000, sections 4.1.2 and 6.1)",
        params={"spad_kb": spad_kb, "num_spads": num_spads, "strict_roles": strict_roles,
                "dma_bytes_per_cycle": dma_bytes_per_cycle, "dma_latency_cycles": dma_latency_cycles,
                "clock_mhz": clock_mhz, "banks": banks},
    )



def _spatial_accelerator(
    name: str,
    description: str,
    *,
    rows: int,
    cols: int,
    local_bytes: int,
    global_bytes: int,
    alus: int = 1,
    local_energy: float = 1.0,
    global_energy: float = 6.0,
    dram_energy: float = 200.0,
    noc_energy: float = 2.0,
    mac_energy: float = 1.0,
    dram_bytes_per_cycle: float,
    global_bytes_per_cycle: float,
    clock_mhz: float,
    params: dict[str, object],
    axes: tuple[tuple[str, int], ...] | None = None,
    arrays: int = 1,
) -> Accelerator:
    """DRAM -> shared global buffer -> a private buffer per PE -> ``alus`` MAC units per PE. Energies are given per
    16-bit access (the normalised Eyeriss scale) and stored per byte. The PE array is ``rows`` x ``cols``, or one
    array of ``axes`` replicated ``arrays`` times (a scale-out array sharing the global buffer)."""
    axes = (("rows", rows), ("cols", cols)) if axes is None else axes
    if min(*(n for _, n in axes), local_bytes, global_bytes, alus, arrays) <= 0:
        raise ValueError("sizes must be positive")
    pe_array = PEArray(axes, macs_per_pe_per_cycle=alus, arrays=arrays)
    # a private buffer feeds its ALUs every cycle: per ALU, 3 words read (input, weight, partial sum) and 1 written,
    # plus as much again for fills from the global buffer
    return Accelerator(
        name=name,
        pe_array=pe_array,
        memories=(
            _dram(dram_bytes_per_cycle, energy=dram_energy / 2),
            Memory("glb", MemoryKind.SCRATCHPAD, global_bytes, bandwidth_bytes_per_cycle=global_bytes_per_cycle,
                   read_energy_pj_per_byte=global_energy / 2, write_energy_pj_per_byte=global_energy / 2),
            Memory("local", MemoryKind.REGISTER, local_bytes, instances=pe_array.num_pes,
                   bandwidth_bytes_per_cycle=6.0 * alus, write_bandwidth_bytes_per_cycle=4.0 * alus,
                   read_energy_pj_per_byte=local_energy / 2, write_energy_pj_per_byte=local_energy / 2,
                   network_energy_pj_per_byte=noc_energy / 2),
        ),
        dma=DMA(dram_bytes_per_cycle, 0.0),
        clock_hz=clock_mhz * 1e6,
        mac_energy_pj=mac_energy,
        description=description,
        params=params,
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
    acc = _spatial_accelerator(
        "eyeriss", "Eyeriss v1-like accelerator with normalised energies per 16-bit access (MAC 1, RF 1, NoC 2, "
        "global buffer 6, DRAM 200)",
        rows=rows, cols=cols, local_bytes=rf_bytes, global_bytes=glb_kb * KiB,
        dram_bytes_per_cycle=dram_bytes_per_cycle,
        global_bytes_per_cycle=64.0, clock_mhz=clock_mhz,
        params={"glb_kb": glb_kb, "rf_bytes": rf_bytes, "rows": rows, "cols": cols,
                "dram_bytes_per_cycle": dram_bytes_per_cycle, "clock_mhz": clock_mhz},
    )
    return _rename_local(acc, "rf")


@PRESETS.register("eyeriss-polyacc", "Eyeriss-like with PolyAcc's PE-to-PE links (seed 004 §4.2): psums down "
                  "the columns, weights along rows, inputs diagonally")
def eyeriss_polyacc(
    *,
    glb_kb: int = 108,
    rf_bytes: int = 512,
    rows: int = 12,
    cols: int = 14,
    dram_bytes_per_cycle: float = 16.0,
    clock_mhz: float = 200.0,
    link_energy_fraction: float = 0.5,
) -> Accelerator:
    """The ``eyeriss`` preset with the interconnect seed 004 (PolyAcc, §4.2) gives its Eyeriss-like validation
    accelerator: "the connection relationship of the output feature downward, the weight to the left, and the input
    feature multicast communication along the diagonal line". The seed's 14x12 PEs are Eyeriss v1's 168-PE array,
    14 columns by 12 rows, as in the ``eyeriss`` preset. Links (row stationary: filter rows on the rows, output rows
    on the columns):

    * partial sums (O) along ``rows``: a PE adds its partial sums into the PE below it when both hold the same
      outputs (a column reduces over the filter rows);
    * weights (W) along ``cols``: a PE takes its filter row from its neighbour in the row when both use the same one;
    * input feature maps (I) diagonally over (``rows``, ``cols``): PE (r, p) takes its input row from PE (r-1, p+1)
      when it is the same row (row = stride * p + dilation * r: stride == dilation).

    Link energy: the Eyeriss normalised table has one figure, 2 per 16-bit word (1 pJ per byte here), for moving data
    within the array ("NoC"/inter-PE); a neighbour link is a short point-to-point wire without the multicast bus's
    fan-out and ID matching, so it is charged ``link_energy_fraction`` of the NoC energy per byte (default 0.5, an
    assumption: wire energy grows with wire length; 1.0 charges links as the NoC). Link bandwidth is not limited
    separately: a link writes into the receiving PE's register file, whose write port (4 B/cycle) already bounds the
    transfer in the latency model."""
    if link_energy_fraction < 0:
        raise ValueError("link_energy_fraction must be non-negative")
    acc = eyeriss(glb_kb=glb_kb, rf_bytes=rf_bytes, rows=rows, cols=cols, dram_bytes_per_cycle=dram_bytes_per_cycle,
                  clock_mhz=clock_mhz)
    noc = max(m.network_energy_pj_per_byte for m in acc.memories)
    e = noc * link_energy_fraction
    links = (Link("O", ("rows",), e), Link("W", ("cols",), e), Link("I", ("rows", "cols"), e))
    from dataclasses import replace

    return replace(acc, name="eyeriss-polyacc", pe_array=replace(acc.pe_array, links=links),
                   description="Eyeriss v1-like accelerator with PolyAcc's PE-to-PE links (seed 004 §4.2): partial "
                   "sums down the columns, weights along the rows, input rows diagonally; normalised energies",
                   params={**acc.params, "link_energy_fraction": link_energy_fraction})


def _rename_local(acc: Accelerator, name: str) -> Accelerator:
    from dataclasses import replace

    mems = tuple(replace(m, name=name) if m.name == "local" else m for m in acc.memories)
    return replace(acc, memories=mems)


def _register_spatial(name: str, title: str, description: str, *, dram: float, clock: float,
                      **hardware: Any) -> None:
    """Register a fixed spatial-array preset whose DRAM bandwidth and clock are its parameters."""

    def factory(*, dram_bytes_per_cycle: float = dram, clock_mhz: float = clock) -> Accelerator:
        return _spatial_accelerator(name, description, dram_bytes_per_cycle=dram_bytes_per_cycle,
                                    clock_mhz=clock_mhz, params={"dram_bytes_per_cycle": dram_bytes_per_cycle,
                                                                 "clock_mhz": clock_mhz}, **hardware)

    factory.__name__ = name.replace("-", "_")
    PRESETS.register(name, title)(factory)


GAMMA_SYSTEMS = ("s1", "s2", "s3")
GAMMA_PLATFORMS: dict[str, dict[str, Any]] = {
    # seed 001 Table 4.2; S1's aspect ratio (Eyeriss' 12x14, a TPU's 256x256) and S3's default split are dlaopt's
    "edge": {"pes": 168, "shape": (12, 14), "arrays": 4, "local_bytes": 512, "global_bytes": 108 * KiB,
             "global_bytes_per_cycle": 64.0, "dram": 16.0, "clock": 200.0},
    "cloud": {"pes": 65_536, "shape": (256, 256), "arrays": 16, "local_bytes": 64, "global_bytes": 24 * MiB,
              "global_bytes_per_cycle": 4096.0, "dram": 1024.0, "clock": 940.0},
}


def gamma_accelerator(platform: str, *, system: str = "s1", arrays: int = 0, dram_bytes_per_cycle: float | None = None,
                      clock_mhz: float | None = None) -> Accelerator:
    """GAMMA's ``platform`` ("edge" or "cloud", seed 001 Table 4.2) as target ``system`` of Table 4.3 (module
    docstring: ``gamma-edge``); ``arrays`` is S3's number of PE arrays (0: the platform's default, 4 on edge, 16 on
    cloud; it must divide the platform's PEs)."""
    if platform not in GAMMA_PLATFORMS:
        raise ValueError(f"unknown GAMMA platform {platform!r} (expected edge or cloud)")
    hw = GAMMA_PLATFORMS[platform]
    system = str(system).lower()
    if system not in GAMMA_SYSTEMS:
        raise ValueError(f"system must be one of {', '.join(GAMMA_SYSTEMS)} (seed 001 Table 4.3), not {system!r}")
    n: int = hw["pes"]
    if system != "s3" and arrays not in (0, 1):
        raise ValueError(f"arrays is S3's number of PE arrays; system {system} has one array (use system 's3')")
    count = (hw["arrays"] if arrays == 0 else arrays) if system == "s3" else 1
    if count <= 0 or n % count:
        raise ValueError(f"arrays must be a positive divisor of the platform's {n} PEs, got {arrays}")
    rows, cols = hw["shape"]
    axes = (("rows", rows), ("cols", cols)) if system == "s1" else (("pes", n // count),)
    dram = hw["dram"] if dram_bytes_per_cycle is None else dram_bytes_per_cycle
    clock = hw["clock"] if clock_mhz is None else clock_mhz
    shape = {"s1": f"a fixed {rows}x{cols} array",
             "s2": "one flexible array (any aspect ratio, one or two parallel dimensions, §4.4.3)",
             "s3": f"{count} flexible arrays of {n // count} sharing the global buffer (scale-out, §4.4.4; the "
                   "split is dlaopt's choice)"}[system]
    local = {"edge": "512 B local buffer per PE", "cloud": "4 MiB of local buffers (64 B per PE)"}[platform]
    glob = {"edge": "108 KB global buffer", "cloud": "24 MiB global buffer"}[platform]
    description = (f"GAMMA's {platform} platform as {system.upper()} (seed 001, Table 4.2 and Table 4.3): {n:,} PEs "
                   f"in {shape}, {local}, {glob}; Eyeriss normalised energies")
    name = f"gamma-{platform}" + ("" if system == "s1" else f"-{system}")
    return _spatial_accelerator(
        name, description, rows=rows, cols=cols, axes=axes, arrays=count, local_bytes=hw["local_bytes"],
        global_bytes=hw["global_bytes"], global_bytes_per_cycle=hw["global_bytes_per_cycle"],
        dram_bytes_per_cycle=dram, clock_mhz=clock,
        params={"dram_bytes_per_cycle": dram, "clock_mhz": clock, "system": system, "arrays": count})


def gamma_array(platform: str, *, arrays: int = 0) -> Accelerator:
    """One array of GAMMA's S3 system on ``platform`` as an accelerator of its own: ``N / arrays`` PEs as one flexible
    array (S2-like), each with the platform's local buffer, and ``1 / arrays`` of the global buffer, of its
    bandwidth and of the DRAM bandwidth (every array runs at once; ``arrays`` 0: the platform's default split).
    Seed 001 §4.4.5's layer-wise pipeline gives every layer one such array (``dlaopt experiment gamma``'s Table 4.6)."""
    if platform not in GAMMA_PLATFORMS:
        raise ValueError(f"unknown GAMMA platform {platform!r} (expected edge or cloud)")
    hw = GAMMA_PLATFORMS[platform]
    count = hw["arrays"] if arrays == 0 else arrays
    if count <= 0 or hw["pes"] % count:
        raise ValueError(f"arrays must be a positive divisor of the platform's {hw['pes']} PEs, got {arrays}")
    pes = hw["pes"] // count
    glb = hw["global_bytes"] // count
    return _spatial_accelerator(
        f"gamma-{platform}-array", f"One of the {count} arrays of GAMMA's {platform} platform as S3 (seed 001, Tables "
        f"4.2-4.3, §4.4.5's pipeline stage): {pes:,} PEs as one flexible array, {hw['local_bytes']} B local buffer "
        f"per PE, {glb:,} B of the global buffer; Eyeriss normalised energies",
        rows=1, cols=pes, axes=(("pes", pes),), local_bytes=hw["local_bytes"], global_bytes=glb,
        global_bytes_per_cycle=hw["global_bytes_per_cycle"] / count, dram_bytes_per_cycle=hw["dram"] / count,
        clock_mhz=hw["clock"], params={"platform": platform, "arrays": count, "pes": pes, "global_bytes": glb})


@PRESETS.register("gamma-edge", "GAMMA edge platform (seed 001 Tables 4.2-4.3): 168 PEs, 512 B local, 108 KB global; "
                  "system s1 (12x14), s2 (flexible) or s3 (scale-out)")
def gamma_edge(*, system: str = "s1", arrays: int = 0, dram_bytes_per_cycle: float = GAMMA_PLATFORMS["edge"]["dram"],
               clock_mhz: float = GAMMA_PLATFORMS["edge"]["clock"]) -> Accelerator:
    return gamma_accelerator("edge", system=system, arrays=arrays, dram_bytes_per_cycle=dram_bytes_per_cycle,
                             clock_mhz=clock_mhz)


@PRESETS.register("gamma-cloud", "GAMMA cloud platform (seed 001 Tables 4.2-4.3): 65,536 PEs, 4 MiB local, 24 MiB "
                  "global; system s1 (256x256), s2 (flexible) or s3 (scale-out)")
def gamma_cloud(*, system: str = "s1", arrays: int = 0,
                dram_bytes_per_cycle: float = GAMMA_PLATFORMS["cloud"]["dram"],
                clock_mhz: float = GAMMA_PLATFORMS["cloud"]["clock"]) -> Accelerator:
    return gamma_accelerator("cloud", system=system, arrays=arrays, dram_bytes_per_cycle=dram_bytes_per_cycle,
                             clock_mhz=clock_mhz)


_register_spatial(
    "accel-a", "Demystifying-MSE Accel-A (seed 001 Table 5.1): 256 PEs, 64 KB private, 512 KB shared",
    "Accel-A (seed 001, Table 5.1): 16x16 PEs with 1 ALU, 64 KB private buffer per PE, 512 KB shared buffer; Eyeriss "
    "normalised energies (private buffer charged as a global-buffer access)",
    dram=32.0, clock=1000.0, rows=16, cols=16, local_bytes=64 * KiB, global_bytes=512 * KiB, local_energy=6.0,
    global_bytes_per_cycle=256.0)
_register_spatial(
    "accel-b", "Demystifying-MSE Accel-B (seed 001 Table 5.1): 256 PEs x 4 ALUs, 256 B private, 64 KB shared",
    "Accel-B (seed 001, Table 5.1): 16x16 PEs with 4 ALUs each, 256 B private buffer per PE, 64 KB shared buffer; "
    "Eyeriss normalised energies",
    dram=32.0, clock=1000.0, rows=16, cols=16, alus=4, local_bytes=256, global_bytes=64 * KiB,
    global_bytes_per_cycle=256.0)


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
            _dram(bpc, energy=100.0),
            Memory("unified_buffer", MemoryKind.SCRATCHPAD, unified_buffer_mib * MiB,
                   holds=frozenset({TensorRole.INPUT, TensorRole.ACTIVATION, TensorRole.OUTPUT}), operands={"I"},
                   bandwidth_bytes_per_cycle=float(array), read_energy_pj_per_byte=3.0, write_energy_pj_per_byte=3.0),
            Memory("accumulators", MemoryKind.SCRATCHPAD, accumulator_mib * MiB, access=SpmAccess.OUTPUT,
                   holds=frozenset({TensorRole.ACTIVATION, TensorRole.OUTPUT}), operands={"O"},
                   bandwidth_bytes_per_cycle=float(4 * array), read_energy_pj_per_byte=3.0,
                   write_energy_pj_per_byte=3.0),
            Memory("weight_fifo", MemoryKind.SCRATCHPAD, weight_fifo_kib * KiB, access=SpmAccess.INPUT,
                   holds=frozenset({TensorRole.WEIGHT}), operands={"W"}, bandwidth_bytes_per_cycle=float(array),
                   read_energy_pj_per_byte=3.0, write_energy_pj_per_byte=3.0),
            Memory("pe_weight", MemoryKind.REGISTER, 2, instances=array * array, holds=frozenset({TensorRole.WEIGHT}),
                   operands={"W"}, bandwidth_bytes_per_cycle=2.0, read_energy_pj_per_byte=0.5,
                   write_energy_pj_per_byte=0.5),
        ),
        dma=DMA(bpc, 0.0),
        clock_hz=clock_mhz * 1e6,
        mac_energy_pj=1.0,
        description="TPU v1-like weight-stationary systolic accelerator (energies on the Eyeriss normalised scale)",
        params={"array": array, "unified_buffer_mib": unified_buffer_mib, "accumulator_mib": accumulator_mib,
                "weight_fifo_kib": weight_fifo_kib, "dram_gb_per_s": dram_gb_per_s, "clock_mhz": clock_mhz},
    )


@PRESETS.register("systolic-forwarding", "TPU v1-like systolic array whose weights and partial sums are forwarded "
                  "over PE-to-PE links")
def systolic_forwarding(
    *,
    array: int = 256,
    unified_buffer_mib: int = 24,
    accumulator_mib: int = 4,
    weight_fifo_kib: int = 256,
    dram_gb_per_s: float = 30.0,
    clock_mhz: float = 700.0,
    links: str = "W+O",
    noc_energy_pj_per_byte: float = 1.0,
    link_energy_fraction: float = 0.5,
) -> Accelerator:
    """The ``tpu`` preset with its PE-to-PE connections explicit (seed 004 §2.1: "spatial-temporal reuse: adjacent
    units with point-to-point connections access the same data set in a skewed schedule"). ``links`` is a
    ``+``-separated subset of:

    * ``O``: partial sums flow down the columns (a link along ``rows``): a PE adds its partial sum into the PE below
      when both compute the same outputs (the reduction dimension on the rows);
    * ``W``: weights shift down the columns (along ``rows``) into the per-PE weight registers: a PE takes its weight
      from the PE above when both hold the same one (a dimension irrelevant to the weights on the rows);
    * ``I``: activations flow across the rows (along ``cols``): a PE takes its input from its left neighbour when
      both use the same one (a dimension irrelevant to the inputs on the columns).

    The PE order along ``rows`` follows the partial-sum link when present. Without links the ``tpu`` preset models
    this movement as free multicast and reduction; here the weight registers are filled over a network charged
    ``noc_energy_pj_per_byte`` (default 1 pJ/B: the Eyeriss normalised NoC figure, 2 per 16-bit word, the scale of
    the other presets) and a link costs ``link_energy_fraction`` of it per byte (default 0.5, an assumption: a
    neighbour wire is shorter than the array-wide bus). Link bandwidth is not limited separately (one word per
    PE and cycle, as the per-PE register ports and the one-MAC-per-cycle compute already bound it)."""
    chosen = [t.strip() for t in links.split("+") if t.strip()] if links not in ("", "none") else []
    if any(t not in ("I", "W", "O") for t in chosen) or len(set(chosen)) != len(chosen):
        raise ValueError(f"links must be 'none' or a '+'-separated subset of I, W, O such as 'W+O', not {links!r}")
    if noc_energy_pj_per_byte < 0 or link_energy_fraction < 0:
        raise ValueError("energies must be non-negative")
    from dataclasses import replace

    acc = tpu(array=array, unified_buffer_mib=unified_buffer_mib, accumulator_mib=accumulator_mib,
              weight_fifo_kib=weight_fifo_kib, dram_gb_per_s=dram_gb_per_s, clock_mhz=clock_mhz)
    e = noc_energy_pj_per_byte * link_energy_fraction
    axis = {"O": ("rows",), "W": ("rows",), "I": ("cols",)}
    made = tuple(Link(t, axis[t], e) for t in ("O", "W", "I") if t in chosen)
    mems = tuple(replace(m, network_energy_pj_per_byte=noc_energy_pj_per_byte) if m.name == "pe_weight" else m
                 for m in acc.memories)
    return replace(acc, name="systolic-forwarding", memories=mems, pe_array=replace(acc.pe_array, links=made),
                   description="TPU v1-like weight-stationary systolic array with PE-to-PE links (" +
                   ("none" if not made else ", ".join(f"{lk.operand} along {lk.axes[0]}" for lk in made)) +
                   "); energies on the Eyeriss normalised scale",
                   params={**acc.params, "links": links, "noc_energy_pj_per_byte": noc_energy_pj_per_byte,
                           "link_energy_fraction": link_energy_fraction})


@PRESETS.register("flexion", "Flexion baseline (seed 001 Table 3.1): 16x64 PEs, 100 KB buffer, soft or 1:1:1")
def flexion(
    *,
    rows: int = 16,
    cols: int = 64,
    buffer_kb: float = 100.0,
    partition: str = "soft",
    rf_bytes: int = 64,
    dram_bytes_per_cycle: float = 64.0,
    buffer_bytes_per_cycle: float = 512.0,
    clock_mhz: float = 1000.0,
) -> Accelerator:
    """``partition`` is ``"soft"`` (one buffer any operand may fill) or ``"I:W:O"`` ratios such as ``"1:1:1"`` (three
    buffers, inputs, weights and outputs, with those shares of the capacity and the bandwidth)."""
    if min(rows, cols, rf_bytes) <= 0 or buffer_kb <= 0 or dram_bytes_per_cycle <= 0 or buffer_bytes_per_cycle <= 0:
        raise ValueError("sizes and bandwidths must be positive")
    total = int(buffer_kb * KiB)
    energy = {"read_energy_pj_per_byte": 3.0, "write_energy_pj_per_byte": 3.0}
    if partition == "soft":
        buffers = [Memory("buffer", MemoryKind.SCRATCHPAD, total, bandwidth_bytes_per_cycle=buffer_bytes_per_cycle,
                          **energy)]
    else:
        try:
            shares = [float(v) for v in partition.split(":")]
        except ValueError:
            shares = []
        if len(shares) != 3 or min(shares) <= 0:
            raise ValueError(f"partition must be 'soft' or three positive I:W:O ratios such as '1:1:1', not "
                             f"{partition!r}")
        buffers = [Memory(f"buffer_{t.lower()}", MemoryKind.SCRATCHPAD, max(1, int(total * r / sum(shares))),
                          operands=frozenset({t}), bandwidth_bytes_per_cycle=buffer_bytes_per_cycle * r / sum(shares),
                          **energy) for t, r in zip("IWO", shares, strict=True)]
    return Accelerator(
        name="flexion",
        pe_array=PEArray((("rows", rows), ("cols", cols))),
        memories=(
            _dram(dram_bytes_per_cycle, energy=100.0),
            *buffers,
            Memory("rf", MemoryKind.REGISTER, rf_bytes, instances=rows * cols, bandwidth_bytes_per_cycle=6.0,
                   write_bandwidth_bytes_per_cycle=4.0, read_energy_pj_per_byte=0.5, write_energy_pj_per_byte=0.5,
                   network_energy_pj_per_byte=1.0),
        ),
        dma=DMA(dram_bytes_per_cycle, 0.0),
        clock_hz=clock_mhz * 1e6,
        mac_energy_pj=1.0,
        description="Flexion's baseline accelerator (seed 001, Table 3.1; energies on the Eyeriss normalised scale)",
        params={"rows": rows, "cols": cols, "buffer_kb": buffer_kb, "partition": partition, "rf_bytes": rf_bytes,
                "dram_bytes_per_cycle": dram_bytes_per_cycle, "buffer_bytes_per_cycle": buffer_bytes_per_cycle,
                "clock_mhz": clock_mhz},
    )


@PRESETS.register("deepopt", "DeepOpt (seed 003) systolic array: J x K PEs, separate filter, ifmap and psum SRAMs")
def deepopt(
    *,
    rows: int = 32,
    cols: int = 64,
    filter_kb: int = 16,
    ifmap_kb: int = 32,
    psum_kb: int = 8,
    filter_bits: int = 8,
    ifmap_bits: int = 8,
    psum_bits: int = 32,
    dram_bits_per_cycle: int = 128,
    clock_mhz: float = 200.0,
) -> Accelerator:
    """Defaults: the configuration of seed 003's Table 3 (b_i = b_f = 8, b_p = 32, 32×64, 16/32/8 kB, DRAM
    128 bit/cycle). Each SRAM serves one operand (filters W, ifmaps I, partial sums O); the ofmap is ``ifmap_bits``
    wide. Energies live in the systolic problem's technology model, not here."""
    if min(rows, cols, filter_kb, ifmap_kb, psum_kb, filter_bits, ifmap_bits, psum_bits, dram_bits_per_cycle) <= 0:
        raise ValueError("every size and bit width must be positive")
    dram = _dram(dram_bits_per_cycle / 8)

    def sram(name: str, kb: int, operand: str) -> Memory:
        return Memory(name, MemoryKind.BUFFER, kb * KiB, operands=frozenset({operand}))

    return Accelerator(
        name="deepopt",
        pe_array=PEArray((("rows", rows), ("cols", cols))),
        memories=(dram, sram("filter_sram", filter_kb, "W"), sram("ifmap_sram", ifmap_kb, "I"),
                  sram("psum_sram", psum_kb, "O")),
        dma=DMA(dram_bits_per_cycle / 8),
        clock_hz=clock_mhz * 1e6,
        description="seed 003 (DeepOpt) systolic accelerator",
        params={"rows": rows, "cols": cols, "filter_kb": filter_kb, "ifmap_kb": ifmap_kb, "psum_kb": psum_kb,
                "filter_bits": filter_bits, "ifmap_bits": ifmap_bits, "psum_bits": psum_bits,
                "dram_bits_per_cycle": dram_bits_per_cycle, "clock_mhz": clock_mhz},
    )


@PRESETS.register("banked", "Inferentia-like (seed 002): an on-chip memory of B banks with disjoint address spaces")
def banked(
    *,
    banks: int = 128,
    bank_kb: float = 16.0,
    rows: int = 128,
    cols: int = 128,
    dram_bytes_per_cycle: float = 32.0,
    clock_mhz: float = 1000.0,
) -> Accelerator:
    """A systolic array whose every row is fed by its own bank (``banks`` = ``rows`` by default, as seed 002
    describes: "each of which connects to one portion of the compute units (e.g. a specific row of the systolic
    array)"); the banks together are one scratchpad of ``banks × bank_kb`` KB. Bank mapping decides which tensor
    dimension is spread across the banks."""
    if min(banks, rows, cols) <= 0 or bank_kb <= 0 or dram_bytes_per_cycle <= 0:
        raise ValueError("banks, rows, cols, bank_kb and dram_bytes_per_cycle must be positive")
    return Accelerator(
        name="banked",
        pe_array=PEArray((("rows", rows), ("cols", cols))),
        memories=(_dram(dram_bytes_per_cycle),
                  Memory("sram", MemoryKind.SCRATCHPAD, int(banks * bank_kb * KiB), banks=banks)),
        dma=DMA(dram_bytes_per_cycle),
        clock_hz=clock_mhz * 1e6,
        description="seed 002 banked on-chip memory",
        params={"banks": banks, "bank_kb": bank_kb, "rows": rows, "cols": cols,
                "dram_bytes_per_cycle": dram_bytes_per_cycle, "clock_mhz": clock_mhz},
    )


def _flat(name: str, description: str, *, rows: int, cols: int, buffer_kb: float, rf_bytes: int,
          onchip_gb_per_s: float, offchip_gb_per_s: float, clock_mhz: float) -> Accelerator:
    """FLAT's DRAM -> global buffer -> 64 B register file per PE accelerator (module docstring: ``flat-edge``)."""
    if min(rows, cols, rf_bytes) <= 0 or min(buffer_kb, onchip_gb_per_s, offchip_gb_per_s, clock_mhz) <= 0:
        raise ValueError("sizes, bandwidths and the clock must be positive")
    cycles_per_s = clock_mhz * 1e6
    acc = _spatial_accelerator(
        name, description, rows=rows, cols=cols, local_bytes=rf_bytes, global_bytes=int(buffer_kb * KiB),
        dram_bytes_per_cycle=offchip_gb_per_s * 1e9 / cycles_per_s,
        global_bytes_per_cycle=onchip_gb_per_s * 1e9 / cycles_per_s, clock_mhz=clock_mhz,
        params={"rows": rows, "cols": cols, "buffer_kb": buffer_kb, "rf_bytes": rf_bytes,
                "onchip_gb_per_s": onchip_gb_per_s, "offchip_gb_per_s": offchip_gb_per_s, "clock_mhz": clock_mhz})
    return _rename_local(acc, "rf")


@PRESETS.register("flat-edge", "FLAT edge accelerator (seed 001 Table A.3): 32x32 PEs, 512 KB buffer, 50 GB/s off chip")
def flat_edge(*, rows: int = 32, cols: int = 32, buffer_kb: float = 512.0, rf_bytes: int = 64,
              onchip_gb_per_s: float = 1000.0, offchip_gb_per_s: float = 50.0, clock_mhz: float = 1000.0
              ) -> Accelerator:
    return _flat("flat-edge", "FLAT's edge accelerator (seed 001, Table A.3, §A.5): 32x32 PEs, 1 TB/s on chip, "
                 "50 GB/s off chip, 512 KB global buffer; 1 GHz and Eyeriss normalised energies assumed",
                 rows=rows, cols=cols, buffer_kb=buffer_kb, rf_bytes=rf_bytes, onchip_gb_per_s=onchip_gb_per_s,
                 offchip_gb_per_s=offchip_gb_per_s, clock_mhz=clock_mhz)


@PRESETS.register("flat-cloud", "FLAT cloud accelerator (seed 001 Table A.3): 256x256 PEs, 32 MB buffer, 400 GB/s off "
                  "chip")
def flat_cloud(*, rows: int = 256, cols: int = 256, buffer_kb: float = 32 * 1024.0, rf_bytes: int = 64,
               onchip_gb_per_s: float = 8000.0, offchip_gb_per_s: float = 400.0, clock_mhz: float = 1000.0
               ) -> Accelerator:
    return _flat("flat-cloud", "FLAT's cloud accelerator (seed 001, Table A.3, §A.5): 256x256 PEs, 8 TB/s on chip, "
                 "400 GB/s off chip, 32 MB global buffer; 1 GHz and Eyeriss normalised energies assumed",
                 rows=rows, cols=cols, buffer_kb=buffer_kb, rf_bytes=rf_bytes, onchip_gb_per_s=onchip_gb_per_s,
                 offchip_gb_per_s=offchip_gb_per_s, clock_mhz=clock_mhz)
