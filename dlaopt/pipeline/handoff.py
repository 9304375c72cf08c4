"""What one pipeline stage hands to the next, computed from a verified solution and the shared data classes.

* mapping → pinning (:func:`layer_figures`): per layer, its on-chip tile (:func:`layer_tile`: the extent of every
  loop dimension over the slots at and below the scratchpad level, as an output block and a reduction block), and its
  on-chip cycles ``max(compute, on-chip level transfer cycles)`` — the latency without main-memory traffic, which the
  pinning stage prices itself — plus the energy split into on-chip and main-memory parts;
* pinning → bank mapping (:func:`off_chip_tensors`): the produced tensors that go through main memory between their
  producer and a consumer in the pinning solution (some buffer of theirs is loaded, or stored before the end);
* mapping → assignment (:func:`jobs_document`): per layer and sub-accelerator, the no-stall latency and bandwidth
  of the mapping of that layer on that sub-accelerator, as the inline job table of a multi-accelerator instance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import CostReport
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping as LayerMapping
from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.workload.graph import Workload
from dlaopt.workload.tensor import TensorRole


@dataclass(frozen=True)
class LayerFigures:
    """One mapped layer as the later stages see it."""

    layer: str
    latency_cycles: float  # the cost model's latency (main-memory traffic included)
    onchip_cycles: float  # max(compute, on-chip transfers): the layer with its operands on chip
    compute_cycles: int
    energy_pj: float
    onchip_energy_pj: float  # energy without the main-memory accesses
    dram_bytes: int
    block: tuple[int, ...]  # on-chip tile: a block per axis of the layer's output
    reduce: int | None  # on-chip tile of the reduction dimension (None: not split)

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "latency_cycles": self.latency_cycles, "onchip_cycles": self.onchip_cycles,
                "compute_cycles": self.compute_cycles, "energy_pj": self.energy_pj,
                "onchip_energy_pj": self.onchip_energy_pj, "dram_bytes": self.dram_bytes,
                "tile": {"block": list(self.block), "reduce": self.reduce}}


def dim_extents(arch: MappingArch, m: LayerMapping, level: int) -> dict[str, int]:
    """Extent of every loop dimension in one instance of ``level``: the product of its factors over the slots at and
    below the level's temporal loops (spatial slots above them belong to other instances)."""
    top = arch.temporal_slot(level)
    return {d: math.prod(fs[: top + 1]) for d, fs in m.factors.items()}


def onchip_level(arch: MappingArch) -> int:
    """The outermost level below main memory (the scratchpads or global buffer the pinning stage manages)."""
    if arch.top == 0:
        raise ValueError(f"accelerator '{arch.name}' has no on-chip level below main memory")
    return arch.top - 1


def layer_tile(nest: LoopNest, extents: Mapping[str, int], out_shape: Sequence[int]) -> tuple[tuple[int, ...],
                                                                                            int | None]:
    """The on-chip tile of a conv / depthwise / matmul layer as (output block per axis, reduction block).

    conv: output ``(N, G·K, P, Q)``, reduction ``C`` (per group); a tile spans whole groups only when it spans all
    ``K`` of one. matmul: output ``(..., M, N)`` with the broadcast batch ``B`` on the innermost batch axis (the outer
    ones whole when the tile spans all of ``B``, else one), reduction ``K``."""
    s, e = nest.real_sizes, {d: min(v, nest.real_sizes[d]) for d, v in extents.items()}
    if nest.kind == "matmul":
        rank = len(out_shape)
        batch = list(out_shape[:-2])
        if batch and e["B"] < s["B"]:
            batch = [1] * (len(batch) - 1) + [e["B"]]
        block = (*batch, e["M"], e["N"])
        assert len(block) == rank
        return tuple(int(b) for b in block), (None if e["K"] >= s["K"] else int(e["K"]))
    channels = e["K"] * e["G"] if e["K"] >= s["K"] else e["K"]
    block = (e["N"], channels, e["P"], e["Q"])
    return tuple(int(b) for b in block), (None if e["C"] >= s["C"] else int(e["C"]))


def layer_figures(workload: Workload, nest: LoopNest, arch: MappingArch, m: LayerMapping,
                  report: CostReport) -> LayerFigures:
    """:class:`LayerFigures` of one layer from its mapping and the mapping's cost report."""
    top = arch.levels[arch.top].name
    level = onchip_level(arch)
    onchip = max([float(report.compute_cycles)] + [c for lv, c in report.memory_cycles.items() if lv != top])
    dram_energy = sum(v for k, v in report.energy_breakdown.items() if k.startswith(f"{top}/"))
    dram_bytes = sum((a.reads + a.writes) * nest.operand(t).word_bytes
                     for t, a in report.accesses[top].items())
    op = next(o for o in workload.operators if o.name == nest.name)
    out_shape = workload.tensors[op.outputs[0]].shape
    block, reduce = layer_tile(nest, dim_extents(arch, m, level), out_shape)
    return LayerFigures(nest.name, float(report.latency_cycles), onchip, int(report.compute_cycles),
                        float(report.energy_pj), float(report.energy_pj - dram_energy), int(dram_bytes), block,
                        reduce)


def pinning_options(figures: Sequence[LayerFigures]) -> dict[str, Any]:
    """The pinning instance options that carry the mapping stage's choices: layer tiles and compute cycles."""
    return {"layer_tiles": {f.layer: {"block": list(f.block), "reduce": f.reduce} for f in figures},
            "compute_cycles": {f.layer: max(1.0, math.ceil(f.onchip_cycles)) for f in figures}}


def off_chip_tensors(workload: Workload, graph: PinningGraph, loads: np.ndarray, stores: np.ndarray) -> list[str]:
    """Produced tensors (activations and graph outputs) that some consumer gets from main memory in a pinning
    solution: a buffer of theirs is loaded, or stored other than a graph output's final store."""
    out: set[str] = set()
    for b, buf in enumerate(graph.buffers):
        if buf.role in (TensorRole.INPUT, TensorRole.WEIGHT):
            continue
        final = 1 if buf.role == TensorRole.OUTPUT else 0
        if loads[b] > 0 or stores[b] > final:
            out.add(buf.tensor)
    return [t for t in workload.tensors if t in out]


@dataclass(frozen=True)
class JobFigures:
    """One layer on one sub-accelerator: no-stall latency (s), DRAM bytes and energy."""

    latency_s: float
    dram_bytes: int
    energy_pj: float


def jobs_document(layers: Sequence[tuple[str, int]], tenants: int, accelerators: Sequence[str],
                  figures: Mapping[tuple[str, str], JobFigures], network: str) -> dict[str, Any]:
    """The inline job table (``workload: {jobs: [...]}``) of ``tenants`` requests of a network whose mappable layers
    are ``(name, MACs)``, from per (layer, sub-accelerator name) figures; ops = 2·MACs, bandwidth = bytes / latency."""
    jobs = []
    for r in range(tenants):
        tenant = f"{network}#{r}" if tenants > 1 else network
        for name, macs in layers:
            lat = [figures[name, a].latency_s for a in accelerators]
            bw = [figures[name, a].dram_bytes / figures[name, a].latency_s for a in accelerators]
            jobs.append({"name": f"{tenant}/{name}", "tenant": tenant, "ops": float(2 * macs),
                         "latency_us": [v * 1e6 for v in lat], "bandwidth_gbps": [v / 1e9 for v in bw]})
    return {"name": f"{network}-x{tenants}", "jobs": jobs}


__all__ = ["JobFigures", "LayerFigures", "dim_extents", "jobs_document", "layer_figures", "layer_tile",
           "off_chip_tensors", "onchip_level", "pinning_options"]
