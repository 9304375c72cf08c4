"""The accelerator as the mapper sees it: a tree of storage levels with spatial fanouts (seed 004's memory-centric
hardware tree, flattened to one path since all instances of a level are identical).

Levels are indexed from the innermost (0, next to the MACs) to the outermost (main memory). A level holds one or
more *stores* — physical memories serving disjoint operand sets (one store for a shared buffer; one per operand for
a partitioned one, e.g. a TPU's unified buffer, accumulators and weight FIFO) — and is replicated ``instances``
times. Below each level sits a *fanout* to the next inner level: the spatial axes (one or more) over which its
instances are laid out; below level 0 sits the MAC fanout (MAC units sharing the innermost level, e.g. the ALUs of
a PE). A mapping has a temporal slot per level and a spatial slot per fanout axis (:meth:`MappingArch.slots`).

Built from the shared :class:`~dlaopt.hardware.model.Accelerator` by :func:`arch_from_accelerator`: consecutive
memories with the same instance count and disjoint operand sets form one level; the ratio of a level's instances to
those of the level above is the fanout into it:

* the PE array's axes form the fanout into the first level replicated once per PE (or the MAC fanout when no level
  is per PE); ``macs_per_pe_per_cycle`` MAC units per PE form a further MAC fanout axis;
* a scale-out accelerator (``PEArray.arrays`` = ``A`` > 1 identical arrays, seed 001 Table 4.3's S3) adds the axis
  ``("array", A)`` (:data:`~dlaopt.hardware.model.ARRAY_AXIS`). It is the fanout into a level replicated once per
  array (Simba's global buffer per chiplet), under which the PE axes fan out to the per-PE level (or form the MAC
  fanout, when no level is per PE). Without a per-array level it follows the PE axes in the fanout into the per-PE
  level — three spatial axes for a 2-D array (GAMMA's platforms: one shared global buffer, a local buffer per PE) —
  or in the MAC fanout when no level is per PE either;
* any other ratio is one anonymous axis ``x<i>`` (``i``: the level's index from main memory).

With ``arrays`` = 1 there is no array axis and the view is that of a single array. The PE array's neighbour links
(:class:`~dlaopt.hardware.model.Link`) become :class:`ArchLink` objects on the spatial slots of the PE axes only —
never the array axis: links join PEs of one array (their semantics: :mod:`.cost`, "PE-to-PE links").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dlaopt.hardware.model import ARRAY_AXIS, Accelerator, MemoryKind

TEMPORAL = "temporal"
SPATIAL = "spatial"


@dataclass(frozen=True)
class Store:
    """One physical memory (per instance of its level) and the operands it keeps."""

    memory: str
    operands: frozenset[str]
    capacity_bytes: int | None  # None: unbounded (main memory)
    read_energy_pj_per_byte: float
    write_energy_pj_per_byte: float
    read_bandwidth: float  # bytes per cycle per instance (inf: unconstrained)
    write_bandwidth: float | None  # None: one port shared by reads and writes


@dataclass(frozen=True)
class Level:
    name: str
    stores: tuple[Store, ...]
    instances: int
    network_energy_pj_per_byte: float = 0.0
    fanout: tuple[tuple[str, int], ...] = ()  # spatial axes between this level and the next inner one (or MACs)

    @property
    def keeps(self) -> frozenset[str]:
        return frozenset().union(*(s.operands for s in self.stores))

    def store_of(self, operand: str) -> Store | None:
        for s in self.stores:
            if operand in s.operands:
                return s
        return None


@dataclass(frozen=True)
class Slot:
    """A place a loop factor can go: a level's temporal loop or one axis of a fanout."""

    kind: str  # TEMPORAL or SPATIAL
    level: int  # temporal: the level; spatial: the level *above* the fanout (-1 never used; MAC fanout is level 0's)
    axis: str = ""
    size: int = 0  # spatial: axis size
    mac: bool = False  # spatial slot of the MAC fanout (below level 0)

    @property
    def name(self) -> str:
        if self.kind == TEMPORAL:
            return f"T{self.level}"
        return f"S{'mac' if self.mac else self.level}:{self.axis}"


@dataclass(frozen=True)
class ArchLink:
    """A PE-to-PE link (:class:`~dlaopt.hardware.model.Link`) in the mapping view: ``slots`` are the indices in
    :meth:`MappingArch.slots` of the spatial slot it runs along (straight) or of the two slots (x, y) of a diagonal
    link (PE (x, y) receives from PE (x-1, y+1))."""

    operand: str
    slots: tuple[int, ...]
    energy_pj_per_byte: float = 0.0
    bandwidth_bytes_per_cycle: float = math.inf

    @property
    def diagonal(self) -> bool:
        return len(self.slots) == 2


@dataclass(frozen=True)
class MappingArch:
    name: str
    levels: tuple[Level, ...]  # innermost first; the last is main memory
    mac_fanout: tuple[tuple[str, int], ...]
    mac_energy_pj: float
    clock_hz: float
    links: tuple[ArchLink, ...] = ()

    def __post_init__(self) -> None:
        if not self.levels:
            raise ValueError("an accelerator needs at least main memory")
        top = self.levels[-1]
        if top.instances != 1 or top.keeps != frozenset({"I", "W", "O"}):
            raise ValueError("the outermost level must be one main memory keeping every operand")
        for lv in self.levels:
            if sum(len(s.operands) for s in lv.stores) != len(lv.keeps):
                raise ValueError(f"level '{lv.name}': its memories must keep disjoint operands")
        object.__setattr__(self, "links", tuple(self.links))
        slots = self.slots()
        seen: set[str] = set()
        for link in self.links:
            if link.operand not in ("I", "W", "O") or link.operand in seen:
                raise ValueError(f"links: operand {link.operand!r} unknown or linked twice")
            seen.add(link.operand)
            if len(link.slots) not in (1, 2) or len(set(link.slots)) != len(link.slots):
                raise ValueError(f"link of {link.operand}: one slot (straight) or two distinct slots (diagonal)")
            for k in link.slots:
                if not 0 <= k < len(slots) or slots[k].kind != SPATIAL:
                    raise ValueError(f"link of {link.operand}: slot {k} is not a spatial slot")
            if len({(slots[k].level, slots[k].mac) for k in link.slots}) != 1:
                raise ValueError(f"link of {link.operand}: a diagonal link joins two axes of one fanout")
            if link.energy_pj_per_byte < 0 or not link.bandwidth_bytes_per_cycle > 0:
                raise ValueError(f"link of {link.operand}: energy must be non-negative and bandwidth positive")

    def link_of(self, operand: str) -> ArchLink | None:
        return next((lk for lk in self.links if lk.operand == operand), None)

    def placement_operand(self, slot: int) -> str | None:
        """The operand whose link decides the PE order along spatial ``slot`` (the first link using the slot)."""
        return next((lk.operand for lk in self.links if slot in lk.slots), None)

    @property
    def top(self) -> int:
        return len(self.levels) - 1

    @property
    def num_macs(self) -> int:
        return self.levels[0].instances * math.prod(s for _, s in self.mac_fanout)

    def slots(self) -> tuple[Slot, ...]:
        """Innermost first: MAC fanout axes, T0, fanout below level 1, T1, ..., T(top)."""
        out = [Slot(SPATIAL, 0, a, s, mac=True) for a, s in self.mac_fanout]
        for i, lv in enumerate(self.levels):
            if i > 0:
                out.extend(Slot(SPATIAL, i, a, s) for a, s in lv.fanout)
            out.append(Slot(TEMPORAL, i))
        return tuple(out)

    def temporal_slot(self, level: int) -> int:
        return next(k for k, s in enumerate(self.slots()) if s.kind == TEMPORAL and s.level == level)

    def keeping_levels(self, operand: str) -> list[int]:
        return [i for i, lv in enumerate(self.levels) if operand in lv.keeps]


def arch_from_accelerator(acc: Accelerator) -> MappingArch:
    """The mapping view of ``acc`` (see the module docstring)."""
    mems = list(acc.memories)
    if not mems or mems[0].kind != MemoryKind.DRAM:
        raise ValueError(f"accelerator '{acc.name}': the first memory must be main memory")
    groups: list[list] = []
    for m in mems:
        ops = m.mapping_operands
        if not ops:
            continue
        g = groups[-1] if groups else None
        if (g is not None and g[0].kind != MemoryKind.DRAM and g[0].instances == m.instances
                and not any(ops & x.mapping_operands for x in g)):
            g.append(m)
        else:
            groups.append([m])
    if groups[0][0].kind != MemoryKind.DRAM or groups[0][0].mapping_operands != frozenset({"I", "W", "O"}):
        raise ValueError(f"accelerator '{acc.name}': main memory must keep every operand")
    arrays = acc.pe_array.arrays
    per_array = acc.pe_array.pes_per_array
    num_pes = acc.pe_array.num_pes
    pe_axes = acc.pe_array.axes
    array_axis = ((ARRAY_AXIS, arrays),) if arrays > 1 else ()
    outer_first: list[Level] = []
    pe_fanout_used = array_fanout_used = False
    pe_level = -1  # outer-first index of the level replicated once per PE (whose fanout the PE axes are)
    prev_instances = 1
    for g in groups:
        inst = g[0].instances
        if inst % prev_instances:
            raise ValueError(f"accelerator '{acc.name}': memory '{g[0].name}' has {inst} instances, not a multiple "
                             f"of the {prev_instances} of the level above")
        ratio = inst // prev_instances
        if ratio == 1:
            fanout: tuple[tuple[str, int], ...] = ()
        elif arrays > 1 and not array_fanout_used and not pe_fanout_used and prev_instances == 1 and ratio == arrays:
            fanout, array_fanout_used = array_axis, True  # a level replicated once per array
        elif not pe_fanout_used and ratio == per_array and (prev_instances == arrays if array_fanout_used
                                                              else arrays == 1):
            fanout, pe_fanout_used = pe_axes, True  # the PE axes of each array, under its per-array level
            pe_level = len(outer_first)
        elif not pe_fanout_used and not array_fanout_used and prev_instances == 1 and ratio == num_pes:
            fanout, pe_fanout_used = pe_axes + array_axis, True  # every PE of every array, under a shared level
            array_fanout_used = arrays > 1
            pe_level = len(outer_first)
        else:
            fanout = ((f"x{len(outer_first)}", ratio),)
        stores = tuple(
            Store(m.name, m.mapping_operands, m.capacity_bytes, m.read_energy_pj_per_byte,
                  m.write_energy_pj_per_byte, m.bandwidth_bytes_per_cycle, m.write_bandwidth_bytes_per_cycle)
            for m in g
        )
        name = "+".join(m.name for m in g)
        net = max(m.network_energy_pj_per_byte for m in g)
        outer_first.append(Level(name, stores, inst, net, fanout))
        prev_instances = inst
    # the fanout attribute of each level is the fanout *below* it: shift by one
    levels_outer: list[Level] = []
    for i, lv in enumerate(outer_first):
        below = outer_first[i + 1].fanout if i + 1 < len(outer_first) else ()
        levels_outer.append(Level(lv.name, lv.stores, lv.instances, lv.network_energy_pj_per_byte, below))
    mac_axes: list[tuple[str, int]] = []
    innermost = outer_first[-1].instances
    pe_in_mac = False  # the PE axes head the MAC fanout
    if not pe_fanout_used:
        if innermost == 1:
            mac_axes.extend(pe_axes + array_axis)
            pe_in_mac = True
        elif array_fanout_used and innermost == arrays:
            mac_axes.extend(pe_axes)
            pe_in_mac = True
        elif num_pes % innermost == 0 and num_pes > innermost:
            mac_axes.append(("pe", num_pes // innermost))
    if acc.pe_array.macs_per_pe_per_cycle > 1:
        mac_axes.append(("mac", acc.pe_array.macs_per_pe_per_cycle))
    arch = MappingArch(acc.name, tuple(reversed(levels_outer)), tuple(mac_axes), acc.mac_energy_pj, acc.clock_hz)
    if not acc.pe_array.links:
        return arch
    # the spatial slots the PE axes became: the fanout into the per-PE level, or the first MAC fanout axes
    slots = arch.slots()
    names = {a for a, _ in pe_axes}
    if pe_fanout_used:
        level = len(outer_first) - 1 - pe_level  # innermost-first index of the per-PE level; its fanout is above it
        pe_slots = {s.axis: k for k, s in enumerate(slots)
                    if not s.mac and s.level == level + 1 and s.kind == SPATIAL and s.axis in names}
    elif pe_in_mac:
        pe_slots = {s.axis: k for k, s in list(enumerate(slots))[:len(pe_axes)]}
    else:
        raise ValueError(f"accelerator '{acc.name}': PE-to-PE links need the PE-array axes as a fanout (a level "
                         "replicated once per PE, or none)")
    links = tuple(ArchLink(lk.operand, tuple(pe_slots[a] for a in lk.axes), lk.energy_pj_per_byte,
                           lk.bandwidth_bytes_per_cycle) for lk in acc.pe_array.links)
    return replace(arch, links=links)


__all__ = ["SPATIAL", "TEMPORAL", "ArchLink", "Level", "MappingArch", "Slot", "Store", "arch_from_accelerator"]
