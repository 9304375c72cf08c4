"""Multi-accelerator platforms: several sub-accelerators sharing one system bandwidth (``dlaopt.hardware.Platform``).

``magma-s1`` … ``magma-s6`` are the six settings of MAGMA's Table 7.2 (seed 001, §7.3.1). Every sub-accelerator is
an ``h x 64`` PE array (one MAC per PE per cycle, 1-byte words, 200 MHz) with a dataflow style — **HB** (high
bandwidth, NVDLA-like: input and output channels across the array) or **LB** (low bandwidth, "inspired by Eyeriss",
parallel across the activation dimensions, §7.3.1: output rows and columns across the array, a matmul's token /
batch rows only — the mapping template ``activation``) — and an on-chip buffer of the table's size:

======  =====================  ==================================================================
S1      Small homogeneous      4 x (32, HB, 146 KB)
S2      Small heterogeneous    3 x (32, HB, 146 KB), 1 x (32, LB, 110 KB)
S3      Large homogeneous      8 x (128, HB, 580 KB)
S4      Large heterogeneous    7 x (128, HB, 580 KB), 1 x (128, LB, 434 KB)
S5      Large BigLittle        3 x (128, HB, 580 KB), 1 x (128, LB, 434 KB), 3 x (64, HB, 291 KB), 1 x (64, LB, 218 KB)
S6      Large scale-up         7 x (128, HB, 580 KB), 1 x (128, LB, 434 KB), 7 x (64, HB, 291 KB), 1 x (64, LB, 218 KB)
======  =====================  ==================================================================

Each sub-accelerator is built for dlaopt's mapping cost model with the presets' spatial template
(:func:`dlaopt.hardware.presets._spatial_accelerator`): DRAM → a shared global buffer (SG) → a local buffer per PE
(SL) → one MAC. The table gives one buffer size per sub-accelerator; MAGMA sized SL and SG from the dataflow's
target tiles (its [68]) without printing the split, so dlaopt picks one (KB = 1024 bytes):

* **SL per PE** — HB 8 B: a weight-stationary PE keeps one weight, the input word streaming past it and one partial
  sum, with room to spare; LB 16 B: an output-stationary PE keeps its partial sum and a few operand words
  (Eyeriss's 0.5 KB register file does not fit a budget of ~55 B per PE).
* **SG** — the rest of the table's size: HB 32 rows 130 KB, 64 rows 259 KB, 128 rows 516 KB; LB 32 rows 78 KB,
  64 rows 154 KB, 128 rows 306 KB (71–89 % of the table's size).

The DRAM level has unlimited bandwidth: the job analyzer (:mod:`dlaopt.formulations.multiaccel.analysis`) computes
no-stall latencies and counts the DRAM bytes a job moves; the platform's shared system bandwidth, the factory's
``system_bandwidth_gbps`` (GB = 1e9 bytes; default 16 for the Small settings S1/S2 and 256 for the Large ones, the
top of the seed's sweeps), is what the multi-accelerator evaluator shares among the running jobs. The SG moves two
words per PE per cycle (a word in from DRAM and a word out to a PE, so a layer that streams a fresh weight into every
PE each cycle — a batch-1 FC — stays compute-bound) and the SL the presets' 6 B read / 4 B write per cycle: on-chip
bandwidth never adds more than 2.5 % to a zoo layer's compute cycles. Energies are the presets' Eyeriss-normalised
ones (they only steer the tile choice of the job analyzer).

``params`` of every sub-accelerator record ``style`` ("HB"/"LB"), ``dataflow`` (the mapping template:
"nvdla"/"activation"), ``rows``, ``cols``, ``buffer_kb`` (the table's size), ``local_bytes``, ``global_bytes`` and
``clock_mhz``.
"""

from __future__ import annotations

import math

from dlaopt.hardware.model import Accelerator, Platform
from dlaopt.hardware.presets import KiB, _spatial_accelerator
from dlaopt.registry import Registry

PLATFORMS: Registry[Platform] = Registry("platform")

COLS = 64  # the fixed PE-array width of every MAGMA sub-accelerator (seed 001 §7.3.1)
CLOCK_MHZ = 200.0
STYLES = {"HB": "nvdla", "LB": "activation"}  # dataflow style -> mapping template of dlaopt.formulations.mapping
LOCAL_BYTES = {"HB": 8, "LB": 16}  # SL per PE (see the module docstring)
# (rows, style) -> the table's buffer size in KB
BUFFER_KB = {(32, "HB"): 146, (32, "LB"): 110, (64, "HB"): 291, (64, "LB"): 218, (128, "HB"): 580, (128, "LB"): 434}


def sub_accelerator(rows: int, style: str, index: int = 0, *, buffer_kb: int | None = None) -> Accelerator:
    """One MAGMA sub-accelerator: ``rows x 64`` PEs of ``style`` ("HB" or "LB"), named e.g. ``hb128-0``.
    ``buffer_kb`` defaults to Table 7.2's size for ``(rows, style)``; the SL/SG split is the module docstring's."""
    if style not in STYLES:
        raise ValueError(f"dataflow style must be one of {sorted(STYLES)}, got {style!r}")
    if rows <= 0:
        raise ValueError("rows must be positive")
    if buffer_kb is None:
        if (rows, style) not in BUFFER_KB:
            raise ValueError(f"Table 7.2 has no {style} sub-accelerator with {rows} rows; give buffer_kb")
        buffer_kb = BUFFER_KB[rows, style]
    local = LOCAL_BYTES[style]
    total = buffer_kb * KiB
    global_bytes = total - rows * COLS * local
    if global_bytes <= 0:
        raise ValueError(f"{buffer_kb} KB cannot hold {local} B per PE plus a global buffer")
    name = f"{style.lower()}{rows}-{index}"
    return _spatial_accelerator(
        name,
        f"MAGMA {style} sub-accelerator (seed 001 Table 7.2): {rows}x{COLS} PEs, {STYLES[style]}-like dataflow, "
        f"{buffer_kb} KB ({local} B per PE + {global_bytes} B global), {CLOCK_MHZ:g} MHz, unlimited DRAM bandwidth",
        rows=rows, cols=COLS, local_bytes=local, global_bytes=global_bytes,
        dram_bytes_per_cycle=math.inf, global_bytes_per_cycle=float(2 * rows * COLS), clock_mhz=CLOCK_MHZ,
        params={"style": style, "dataflow": STYLES[style], "rows": rows, "cols": COLS, "buffer_kb": buffer_kb,
                "local_bytes": local, "global_bytes": global_bytes, "clock_mhz": CLOCK_MHZ},
    )


def build_platform(name: str, groups: list[tuple[int, int, str]], system_bandwidth_gbps: float) -> Platform:
    """A platform of ``(count, rows, style)`` groups; sub-accelerators of one (rows, style) are numbered 0, 1, …"""
    if not system_bandwidth_gbps > 0:
        raise ValueError(f"system_bandwidth_gbps must be positive, got {system_bandwidth_gbps!r}")
    seen: dict[tuple[int, str], int] = {}
    accs = []
    for count, rows, style in groups:
        for _ in range(count):
            i = seen.get((rows, style), 0)
            seen[rows, style] = i + 1
            accs.append(sub_accelerator(rows, style, i))
    return Platform(name, tuple(accs), system_bandwidth_gbps * 1e9)


# Table 7.2: setting -> (title, (count, rows, style) groups, default system bandwidth in GB/s)
SETTINGS: dict[str, tuple[str, list[tuple[int, int, str]], float]] = {
    "magma-s1": ("Small homogeneous", [(4, 32, "HB")], 16.0),
    "magma-s2": ("Small heterogeneous", [(3, 32, "HB"), (1, 32, "LB")], 16.0),
    "magma-s3": ("Large homogeneous", [(8, 128, "HB")], 256.0),
    "magma-s4": ("Large heterogeneous", [(7, 128, "HB"), (1, 128, "LB")], 256.0),
    "magma-s5": ("Large heterogeneous BigLittle", [(3, 128, "HB"), (1, 128, "LB"), (3, 64, "HB"), (1, 64, "LB")],
                 256.0),
    "magma-s6": ("Large scale-up", [(7, 128, "HB"), (1, 128, "LB"), (7, 64, "HB"), (1, 64, "LB")], 256.0),
}


def _register(name: str) -> None:
    title, groups, default_bw = SETTINGS[name]
    text = ", ".join(f"{c}x({r}, {s}, {BUFFER_KB[r, s]}KB)" for c, r, s in groups)

    def factory(*, system_bandwidth_gbps: float = default_bw) -> Platform:
        return build_platform(name, groups, system_bandwidth_gbps)

    factory.__name__ = name.replace("-", "_")
    factory.__doc__ = f"MAGMA {name[-2:].upper()} ({title}): {text}; system bandwidth in GB/s."
    PLATFORMS.register(name, f"MAGMA {name[-2:].upper()} (seed 001 Table 7.2) {title}: {text}")(factory)


for _name in SETTINGS:
    _register(_name)


__all__ = ["BUFFER_KB", "CLOCK_MHZ", "COLS", "LOCAL_BYTES", "PLATFORMS", "SETTINGS", "STYLES", "build_platform",
           "sub_accelerator"]
