"""Hardware vocabulary shared by every problem: memories, PE arrays, DMA, accelerators, platforms."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

from dlaopt.workload.operator import Operator
from dlaopt.workload.tensor import TensorRole

ALL_ROLES = frozenset(TensorRole)


class MemoryKind(StrEnum):
    DRAM = "dram"  # off-chip main memory
    SCRATCHPAD = "scratchpad"  # software-managed on-chip SRAM shared by the PE array (what pinning manages)
    BUFFER = "buffer"  # other on-chip buffer level (e.g. a global buffer inside the mapping hierarchy)
    REGISTER = "register"  # per-PE register file


class SpmAccess(StrEnum):
    """Which operand direction a scratchpad serves while an operator runs.

    ``input``: may hold a tensor at a step unless that step produces it; ``output``: may hold a tensor at a step
    unless that step reads it; ``any``: no restriction. Idle (pinned) tensors may sit in either.
    """

    ANY = "any"
    INPUT = "input"
    OUTPUT = "output"


@dataclass(frozen=True)
class Memory:
    """One memory level or scratchpad. ``capacity_bytes`` is ``None`` only for unbounded main memory."""

    name: str
    kind: MemoryKind
    capacity_bytes: int | None
    banks: int = 1
    bandwidth_bytes_per_cycle: float = math.inf
    read_energy_pj_per_byte: float = 0.0
    write_energy_pj_per_byte: float = 0.0
    holds: frozenset[TensorRole] = ALL_ROLES
    access: SpmAccess = SpmAccess.ANY
    instances: int = 1  # replicated copies (e.g. one register file per PE)
    # Mapping-level attributes (the tiling/loop-order problem; other problems ignore them):
    operands: frozenset[str] | None = None  # layer operands kept here ("I", "W", "O"); default: derived from holds
    write_bandwidth_bytes_per_cycle: float | None = None  # a separate write port; None: reads and writes share
    network_energy_pj_per_byte: float = 0.0  # on-chip network energy to move a byte to or from one instance

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", MemoryKind(self.kind))
        if self.operands is not None:
            ops = frozenset(str(o) for o in self.operands)
            if not ops or not ops <= {"I", "W", "O"}:
                raise ValueError(f"memory '{self.name}': 'operands' must be a non-empty subset of I, W, O")
            object.__setattr__(self, "operands", ops)
        if self.write_bandwidth_bytes_per_cycle is not None and self.write_bandwidth_bytes_per_cycle <= 0:
            raise ValueError(f"memory '{self.name}': write bandwidth must be positive")
        if self.network_energy_pj_per_byte < 0:
            raise ValueError(f"memory '{self.name}': network energy must be non-negative")
        object.__setattr__(self, "access", SpmAccess(self.access))
        object.__setattr__(self, "holds", frozenset(TensorRole(r) for r in self.holds))
        if self.capacity_bytes is None and self.kind != MemoryKind.DRAM:
            raise ValueError(f"memory '{self.name}': only DRAM may have unbounded capacity")
        if self.capacity_bytes is not None and self.capacity_bytes <= 0:
            raise ValueError(f"memory '{self.name}': capacity must be positive, got {self.capacity_bytes}")
        if self.banks <= 0 or self.instances <= 0:
            raise ValueError(f"memory '{self.name}': banks and instances must be positive")
        if self.bandwidth_bytes_per_cycle <= 0:
            raise ValueError(f"memory '{self.name}': bandwidth must be positive")
        if not self.holds:
            raise ValueError(f"memory '{self.name}': 'holds' must name at least one tensor role")

    @property
    def mapping_operands(self) -> frozenset[str]:
        """Layer operands (I = input activation, W = weight, O = output) this memory keeps in a mapping."""
        if self.operands is not None:
            return self.operands
        ops = set()
        if self.holds & {TensorRole.INPUT, TensorRole.ACTIVATION}:
            ops.add("I")
        if TensorRole.WEIGHT in self.holds:
            ops.add("W")
        if self.holds & {TensorRole.OUTPUT, TensorRole.ACTIVATION}:
            ops.add("O")
        return frozenset(ops)


LINK_OPERANDS = ("I", "W", "O")


@dataclass(frozen=True)
class Link:
    """Neighbour links of the PE array that forward one operand between adjacent PEs (seed 004 §3.1, the "Connect"
    attribute of a memory level: a relation from a PE's coordinates to its neighbour's).

    ``operand``: "I", "W" or "O" (for O, partial sums are added up along the link). ``axes``: one PE-array axis name
    (a straight link: PE x receives from PE x-1 along that axis) or two distinct ones (a diagonal link: PE (x, y)
    receives from PE (x-1, y+1), PolyAcc's input feature maps on an Eyeriss-like array). A PE takes a tile over the
    link instead of the network when its predecessor holds the same tile in the same delivery (see the mapping cost
    model). ``energy_pj_per_byte``: energy of moving one byte over one link; ``bandwidth_bytes_per_cycle``: per link.
    """

    operand: str
    axes: tuple[str, ...]
    energy_pj_per_byte: float = 0.0
    bandwidth_bytes_per_cycle: float = math.inf

    def __post_init__(self) -> None:
        axes = (self.axes,) if isinstance(self.axes, str) else tuple(str(a) for a in self.axes)
        object.__setattr__(self, "axes", axes)
        if self.operand not in LINK_OPERANDS:
            raise ValueError(f"link operand must be one of {', '.join(LINK_OPERANDS)}, got {self.operand!r}")
        if len(axes) not in (1, 2) or len(set(axes)) != len(axes):
            raise ValueError(f"link of {self.operand}: one axis (straight) or two distinct axes (diagonal), got "
                             f"{list(axes)}")
        if not self.energy_pj_per_byte >= 0:
            raise ValueError(f"link of {self.operand}: energy must be non-negative")
        if not self.bandwidth_bytes_per_cycle > 0:
            raise ValueError(f"link of {self.operand}: bandwidth must be positive")

    @property
    def diagonal(self) -> bool:
        return len(self.axes) == 2


ARRAY_AXIS = "array"  # the name of the scale-out fanout over the identical PE-array instances


@dataclass(frozen=True)
class PEArray:
    """A spatial array of processing elements, optionally replicated. ``axes`` are (name, size) pairs of one array,
    e.g. (("rows", 16), ("cols", 16)); ``links`` forward operands between neighbouring PEs of one array (at most one
    link per operand).

    ``arrays`` identical instances of that array work side by side (a scale-out accelerator such as Simba or Tetris,
    seed 001 Table 4.3's S3: "multiple 2D PE array instances, enabling parallelism across PE arrays"): a third level
    of parallelism above the array's own axes, the spatial axis :data:`ARRAY_AXIS` of size ``arrays`` in the mapping
    view. Links never cross from one array to another.

    Counts are over the whole accelerator: :attr:`num_pes` = ``arrays`` x :attr:`pes_per_array` (what a memory
    replicated once per PE has as ``instances``), :attr:`peak_macs_per_cycle` = ``num_pes`` x
    ``macs_per_pe_per_cycle`` (the rate other problems divide MACs by) and :attr:`lanes` defaults to ``num_pes``."""

    axes: tuple[tuple[str, int], ...]
    macs_per_pe_per_cycle: int = 1
    vector_lanes: int | None = None  # element operations per cycle for non-MAC operators (default: number of PEs)
    links: tuple[Link, ...] = ()
    arrays: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "axes", tuple((str(n), int(s)) for n, s in self.axes))
        object.__setattr__(self, "links", tuple(self.links))
        if not self.axes or any(s <= 0 for _, s in self.axes):
            raise ValueError("PE array needs at least one axis, every axis size positive")
        if self.macs_per_pe_per_cycle <= 0:
            raise ValueError("macs_per_pe_per_cycle must be positive")
        if isinstance(self.arrays, bool) or not isinstance(self.arrays, int) or self.arrays <= 0:
            raise ValueError(f"arrays (identical PE-array instances) must be a positive integer, got {self.arrays!r}")
        names = [n for n, _ in self.axes]
        if ARRAY_AXIS in names:
            raise ValueError(f"a PE-array axis may not be named '{ARRAY_AXIS}' (the name of the axis across the array "
                             "instances)")
        seen: set[str] = set()
        for link in self.links:
            for a in link.axes:
                if a not in names:
                    raise ValueError(f"link of {link.operand}: unknown PE-array axis '{a}' (axes: {', '.join(names)})")
            if link.operand in seen:
                raise ValueError(f"two links for operand {link.operand} (at most one per operand)")
            seen.add(link.operand)

    @property
    def pes_per_array(self) -> int:
        """PEs of one array instance: the product of the axis sizes."""
        return math.prod(s for _, s in self.axes)

    @property
    def num_pes(self) -> int:
        """PEs of the whole accelerator, over all ``arrays`` instances."""
        return self.arrays * self.pes_per_array

    @property
    def peak_macs_per_cycle(self) -> int:
        """MACs per cycle of the whole accelerator (every PE of every array busy)."""
        return self.num_pes * self.macs_per_pe_per_cycle

    @property
    def lanes(self) -> int:
        return self.vector_lanes or self.num_pes


@dataclass(frozen=True)
class DMA:
    """The DMA engine between main memory and the scratchpads."""

    bandwidth_bytes_per_cycle: float
    latency_cycles: float = 0.0  # fixed cost of every transfer

    def __post_init__(self) -> None:
        if self.bandwidth_bytes_per_cycle <= 0 or self.latency_cycles < 0:
            raise ValueError("DMA bandwidth must be positive and latency non-negative")

    def transfer_cycles(self, nbytes: float) -> float:
        return self.latency_cycles + nbytes / self.bandwidth_bytes_per_cycle


@dataclass(frozen=True)
class Accelerator:
    """One accelerator: memories listed from main memory inwards, a PE array, a DMA engine and a clock."""

    name: str
    pe_array: PEArray
    memories: tuple[Memory, ...]
    dma: DMA
    clock_hz: float = 1e9
    mac_energy_pj: float = 0.0
    description: str = ""
    params: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "memories", tuple(self.memories))
        names = [m.name for m in self.memories]
        if len(set(names)) != len(names):
            raise ValueError(f"accelerator '{self.name}': memory names must be unique, got {names}")
        if self.clock_hz <= 0:
            raise ValueError("clock_hz must be positive")

    @property
    def scratchpads(self) -> tuple[Memory, ...]:
        return tuple(m for m in self.memories if m.kind == MemoryKind.SCRATCHPAD)

    def memory(self, name: str) -> Memory:
        for m in self.memories:
            if m.name == name:
                return m
        raise KeyError(name)

    def compute_cycles(self, op: Operator) -> int:
        """Cycles to execute ``op`` when all its operands are on chip: MACs over the array's peak MAC rate,
        other element operations over its vector lanes (at least one cycle per operator)."""
        if op.macs:
            return max(1, math.ceil(op.macs / self.pe_array.peak_macs_per_cycle))
        return max(1, math.ceil(op.vector_ops / self.pe_array.lanes))


@dataclass(frozen=True)
class Platform:
    """Several sub-accelerators sharing one system bandwidth (bytes per second)."""

    name: str
    accelerators: tuple[Accelerator, ...]
    system_bandwidth_bytes_per_s: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "accelerators", tuple(self.accelerators))
        if not self.accelerators:
            raise ValueError("a platform needs at least one accelerator")
        if self.system_bandwidth_bytes_per_s <= 0:
            raise ValueError("system bandwidth must be positive")
