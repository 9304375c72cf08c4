r"""The analytical cost model of a mapping: access counts, energy, latency, utilization, EDP.

Notation. Slots ``k`` are numbered innermost first (:meth:`MappingArch.slots`); ``f[d][k]`` is the factor of
dimension ``d`` at slot ``k`` and the loop index of ``d`` is ``x_d = sum_k i_{d,k} * prod_{k'<k} f[d][k']``. The loop
nest, outermost first, is ``T(top) S(top) T(top-1) ... S(1) T(0) S(mac) MAC`` where ``T(j)`` are the temporal loops of
level ``j`` in the mapping's order and ``S(j)`` the fanout below level ``j``. All quantities are element counts;
bytes multiply by the operand's word size.

* **Tile** ``D_j(t)``: the distinct elements of operand ``t`` one instance of level ``j`` holds — the footprint of
  ``t`` over the slots at and below ``T(j)``. Convolution inputs count the sliding-window halo exactly (the rows
  ``{stride*p + dilation*r}`` of a ``p x r`` slice). Capacity: for every store of every level below main memory,
  ``sum_{t in store} D_j(t) * bytes_t <= capacity`` (the sum runs over the operands below their root, see Roots).
* **Instances used** ``N_j``: product of the spatial factors above ``T(j)``; ``N_mac`` of all spatial factors.
* **Visits** ``R_c(t)``: a child ``c`` (a level keeping ``t``, or the MACs) gets a new tile of ``t`` when a
  temporal loop above it advances, except loops in the innermost run of loops irrelevant to ``t`` (temporal reuse;
  loops of factor 1 are ignored). ``R_c(t)`` is the product of the factors of the temporal loops above ``c``, in
  nest order, without that run. The MACs have no storage: ``R_mac`` is the product of every temporal factor.
* **Delivery** ``U_c(t)``: what the parent ``p`` (the next level above ``c`` keeping ``t``) sends per visit to all
  the instances of ``c`` under one instance of ``p`` — the footprint of ``t`` over the slots at and below ``T(c)``
  (for the MACs: none) plus the spatial slots between ``c`` and ``p``. Spatial factors irrelevant to ``t`` thus
  multicast (inputs, weights) or reduce (partial sums) in the network.

Access counts per (level, operand), for each child/parent pair ``c -> p`` of operand ``t``:

* ``I``, ``W`` (read only): ``reads[p] += U_c * R_c * N_p``; if ``c`` is a level, ``writes[c] += D_c * R_c * N_c``
  (fills) and the network into ``c`` carries the same elements.
* ``O`` (read-modify-write): each visit drains the (reduced) tile to the parent, ``writes[p] += U_c * R_c * N_p``
  (updates); the partial sums come back down on every visit but the first of each element in each instance of
  ``p``: ``reads[p] += U_c * R_c * N_p - first_p`` with ``first_p = |O| * prod(spatial factors above T(p) of
  dimensions irrelevant to O)``. If ``c`` is a level, ``reads[c] += D_c * R_c * N_c`` (drains) and
  ``writes[c] +=`` the reloads; the network into/out of ``c`` carries drains plus reloads.
* Main memory starts with ``I`` and ``W`` and ends with ``O``; nothing else is counted for it.

**Roots** (``roots={operand: level}``, used for operator fusion, where an intermediate tensor lives in an on-chip
staging buffer): the operand's chain ends at the root level instead of main memory. The root plays main memory's
part for that operand: it starts with ``I`` / ``W`` and ends with ``O`` (its counts are the parent-side counts above;
the first touch of a partial sum needs no read), and nothing is counted for the operand at the levels above it (no
accesses, network, tile or capacity). The root's own tile of the operand is not in the root's capacity check nor in
``tile_bytes`` (the caller reserves room for it, e.g. with ``capacity_limits``). A root must be a level keeping the
operand with one instance. ``capacity_limits={(level, memory): bytes}`` lowers the capacity checked for a store.

**PE-to-PE links** (``MappingArch.links``, seed 004 §3.1's "Connect" relations): a link forwards one operand ``t``
between neighbouring PEs of a fanout, straight along one spatial slot (PE ``x`` receives from ``x-1``) or diagonally
over two slots of one fanout (PE ``(x, y)`` receives from ``(x-1, y+1)``, PolyAcc's Eyeriss input feature maps).

* *Placement convention.* Along one slot, a PE's position is the mixed-radix number of its spatial loop indices
  there, with the dimensions irrelevant to the slot's placement operand (the first link using the slot) fastest,
  then the relevant ones, each group in the layer's dimension order (:func:`axis_digits`).
* *Same tile.* All instances of a child get their tiles in the same deliveries, and their tiles are translates of
  each other: two PEs hold the same tile of ``t`` iff the offsets their spatial indices add to every coordinate of
  ``t`` are equal. Of the ``positions`` used PE positions over the link's slot(s), ``matched`` have a link
  predecessor (which then exists and is used) with the same tile (:func:`link_matches`, by enumeration of the
  positions). For a straight link whose slot is placed by ``t`` and on which no coordinate of ``t`` has two
  dimensions (always so for matmuls; for a convolution input, unless ``P`` and ``R``, or ``Q`` and ``S``, share the
  slot), runs of ``u = prod_{d irrelevant to t} f[d][k]`` consecutive PEs share a tile and
  ``matched / positions = 1 - 1/u``. Diagonal (rows <- ``R``, cols <- ``P`` of a convolution): the neighbours hold
  the same input rows iff ``stride * (P-stride of the slot) == dilation * (R-stride of the slot)``.
* *Counts.* Let ``moved`` be what crosses the fanouts between the child ``c`` and its parent ``p`` (the pair of the
  operand's chain the link's slots lie between): the fills ``D_c * R_c * N_c`` for ``I`` / ``W``, the drains for
  ``O``, or, when ``c`` is the MACs, the per-unit operand reads (``I``, ``W``) or partial-sum writes (``O``): one
  per unit and temporal step. ``link = moved * matched / positions``: a PE with a matching predecessor receives its
  tile over the link instead of the network (``I``, ``W``), or a PE sends its drained partial sums to its matching
  successor, which adds them in (``O``: a spatial reduction along the link; reloads still come over the network).
  ``Access.link`` counts them at ``c`` (at ``p`` when ``c`` is the MACs) and ``Access.network`` is the network part
  only (fills, or drains plus reloads, minus ``link``). Parent-side reads and writes do not change.
* *Energy and latency.* ``link * bytes * e_link`` as breakdown key ``"<level>/link"``. Every matched pair carries
  one tile per delivery, so the busiest single link carries ``moved / N_c`` elements (MACs: one per step); over its
  bandwidth it is ``memory_cycles["link:<operand>"]``, a term of the latency max.

Composition:

* **Energy** (pJ) = sum over levels, operands of ``bytes * (reads * e_read + writes * e_write)`` of the store keeping
  the operand, plus network bytes times the level's network energy, plus ``MACs * e_mac`` (padded MACs count:
  padding is wasted work).
* **Latency** (cycles) = ``max(compute, max_j memory_j)``: compute and every level's transfers overlap (double
  buffering is assumed, as in Timeloop's and ZigZag's steady-state models). ``compute`` is the number of temporal
  iterations (each MAC unit does one MAC per cycle); ``memory_j`` is, for the busiest store of level ``j``, its
  per-instance traffic over its bandwidth — ``(reads + writes) / bw`` for a shared port, ``max(reads / bw_read,
  writes / bw_write)`` for separate ports; links add their ``link:<operand>`` terms.
* **Utilization** = real (unpadded) MACs / (latency * MAC units). **EDP** = energy (pJ) * latency (cycles).

Not modelled (documented differences from Timeloop / ZigZag): sliding-window reuse *between* consecutive temporal
tiles (a refetched input tile is fetched whole), network bandwidth limits (link bandwidths are modelled), the
skew (pipeline fill) of forwarding along links, and per-access (rather than per-byte) energy granularity. The
loop nest simulator in :mod:`dlaopt.formulations.mapping.simulate` executes mappings element by element and must
reproduce every count here exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping as MappingABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, ArchLink, MappingArch
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest, coordinate_extent
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors

MAC = -1  # the MAC units as a pseudo child level
OBJECTIVES = ("energy", "latency", "edp")


@dataclass
class Access:
    """Element counts of one operand at one level: reads and writes of its store, elements moved over the network
    into / out of it (``network``) and over PE-to-PE links (``link``, see the module docstring)."""

    reads: int = 0
    writes: int = 0
    network: int = 0
    link: int = 0


class Figures:
    """The figures every cost report derives the same way: EDP, utilization and an objective by name."""

    valid: bool
    energy_pj: float
    latency_cycles: float
    real_macs: int
    mac_units: int

    @property
    def edp(self) -> float:
        return self.energy_pj * self.latency_cycles

    @property
    def utilization(self) -> float:
        if not self.valid or not 0 < self.latency_cycles < math.inf:
            return 0.0
        return self.real_macs / (self.latency_cycles * self.mac_units)

    def objectives(self) -> dict[str, float]:
        """Every objective this report can be ranked by, by name."""
        return {"energy": self.energy_pj, "latency": self.latency_cycles, "edp": self.edp}

    def objective(self, name: str) -> float:
        values = self.objectives()
        if name not in values:
            raise ValueError(f"unknown objective '{name}' (expected one of {tuple(values)})")
        return values[name]


@dataclass
class CostReport(Figures):
    """Everything the cost model says about one mapping."""

    valid: bool
    violations: list[str]
    energy_pj: float = math.inf
    latency_cycles: float = math.inf
    compute_cycles: int = 0
    memory_cycles: dict[str, float] = field(default_factory=dict)
    accesses: dict[str, dict[str, Access]] = field(default_factory=dict)  # level name -> operand -> counts
    energy_breakdown: dict[str, float] = field(default_factory=dict)  # "level/operand", "level/network", "mac"
    tile_bytes: dict[str, dict[str, int]] = field(default_factory=dict)  # level name -> operand -> bytes per instance
    macs: int = 0
    real_macs: int = 0
    mac_units: int = 0
    spatial_used: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "violations": list(self.violations),
            "energy_pj": self.energy_pj,
            "latency_cycles": self.latency_cycles,
            "edp": self.edp,
            "utilization": self.utilization,
            "compute_cycles": self.compute_cycles,
            "memory_cycles": dict(self.memory_cycles),
            "macs": self.macs,
            "real_macs": self.real_macs,
            "spatial_used": self.spatial_used,
            "mac_units": self.mac_units,
            "accesses": {lv: {t: {"reads": a.reads, "writes": a.writes, "network": a.network, "link": a.link}
                              for t, a in d.items()} for lv, d in self.accesses.items()},
            "energy_breakdown": dict(self.energy_breakdown),
            "tile_bytes": {lv: dict(d) for lv, d in self.tile_bytes.items()},
        }


def evaluate_mapping(nest: LoopNest, arch: MappingArch, m: Mapping, *, check_capacity: bool = True,
                     roots: MappingABC[str, int] | None = None,
                     capacity_limits: MappingABC[tuple[int, str], float] | None = None) -> CostReport:
    """Access counts, energy, latency and capacity check of ``m`` (see the module docstring).

    ``roots``: operand -> index of the level where that operand's chain ends (default: main memory); see
    "Roots" in the module docstring. ``capacity_limits``: (level index, memory name) -> bytes; the capacity checked
    for that store is the smaller of its own capacity and the limit. Both raise ValueError when malformed."""
    root = operand_roots(arch, roots)
    limits = _capacity_limits(arch, capacity_limits)
    errors = mapping_errors(nest, arch, m)
    if errors:
        return CostReport(False, errors)
    ctx = _Context(nest, arch, m)
    report = CostReport(True, [], macs=nest.macs, real_macs=nest.real_macs, mac_units=arch.num_macs,
                        spatial_used=ctx.instances(MAC))
    acc: dict[int, dict[str, Access]] = {j: {t: Access() for t in lv.keeps} for j, lv in enumerate(arch.levels)}
    link_elems: dict[str, int] = {}  # operand -> elements carried by the busiest single link
    for t in OPERANDS:
        chain = [MAC, *(j for j in arch.keeping_levels(t) if j <= root[t])]
        link = arch.link_of(t)
        for c, p in zip(chain, chain[1:], strict=False):
            visits = ctx.visits(c, t)
            delivered = ctx.delivery(c, p, t) * visits * ctx.instances(p)
            # what crosses the fanouts between c and p, one transfer per instance of c (MACs: per unit and step)
            moved = (1 if c == MAC else ctx.tile(c, t)) * visits * ctx.instances(c)
            forwarded = 0
            if link is not None and ctx.spans(c, p, link.slots[0]):
                matched, positions = link_matches(nest, arch, m, link)
                forwarded = moved // positions * matched
                if matched:
                    link_elems[t] = moved // ctx.instances(c)
                acc[p if c == MAC else c][t].link += forwarded
            if t == "O":
                first = nest.footprint("O", nest.sizes) * ctx.irrelevant_spatial_above(p, "O")
                acc[p][t].writes += delivered
                acc[p][t].reads += delivered - first
                if c != MAC:
                    acc[c][t].reads += moved
                    acc[c][t].writes += delivered - first
                    acc[c][t].network += moved - forwarded + delivered - first
            else:
                acc[p][t].reads += delivered
                if c != MAC:
                    acc[c][t].writes += moved
                    acc[c][t].network += moved - forwarded
    word = {t: nest.operand(t).word_bytes for t in OPERANDS}
    energy = 0.0
    for j, lv in enumerate(arch.levels):
        report.accesses[lv.name] = acc[j]
        net_bytes = 0
        link_energy = 0.0
        for t, a in acc[j].items():
            store = lv.store_of(t)
            assert store is not None
            e = word[t] * (a.reads * store.read_energy_pj_per_byte + a.writes * store.write_energy_pj_per_byte)
            report.energy_breakdown[f"{lv.name}/{t}"] = e
            energy += e
            net_bytes += a.network * word[t]
            if a.link:
                link_energy += a.link * word[t] * arch.link_of(t).energy_pj_per_byte  # type: ignore[union-attr]
        if link_energy:
            report.energy_breakdown[f"{lv.name}/link"] = link_energy
            energy += link_energy
        if lv.network_energy_pj_per_byte and net_bytes:
            e = net_bytes * lv.network_energy_pj_per_byte
            report.energy_breakdown[f"{lv.name}/network"] = e
            energy += e
        cycles = 0.0
        n = ctx.instances(j)
        for store in lv.stores:
            r = sum(acc[j][t].reads * word[t] for t in store.operands) / n
            w = sum(acc[j][t].writes * word[t] for t in store.operands) / n
            if store.write_bandwidth is None:
                c = (r + w) / store.read_bandwidth
            else:
                c = max(r / store.read_bandwidth, w / store.write_bandwidth)
            cycles = max(cycles, c)
        report.memory_cycles[lv.name] = cycles
        if j < arch.top:
            held = [t for t in OPERANDS if t in lv.keeps and j < root[t]]  # a root does not count its own tile
            report.tile_bytes[lv.name] = {t: ctx.tile(j, t) * word[t] for t in held}
            if check_capacity:
                for store in lv.stores:
                    cap = min(math.inf if store.capacity_bytes is None else store.capacity_bytes,
                              limits.get((j, store.memory), math.inf))
                    if cap == math.inf:
                        continue
                    used = sum(ctx.tile(j, t) * word[t] for t in store.operands if t in held)
                    if used > cap:
                        what = "+".join(sorted(store.operands))
                        shown = int(cap) if cap == int(cap) else cap
                        report.violations.append(
                            f"level {lv.name}: tiles of {what} need {used} B in '{store.memory}' of {shown} B"
                            + ("" if cap == store.capacity_bytes else " (capacity limit)"))
    e_mac = nest.macs * arch.mac_energy_pj
    report.energy_breakdown["mac"] = e_mac
    energy += e_mac
    for t, elems in link_elems.items():
        report.memory_cycles[f"link:{t}"] = elems * word[t] / arch.link_of(t).bandwidth_bytes_per_cycle  # type: ignore
    report.compute_cycles = ctx.temporal_iterations()
    report.energy_pj = energy
    report.latency_cycles = max([float(report.compute_cycles), *report.memory_cycles.values()])
    if report.violations:
        report.valid = False
    return report


def reuse_visits(nest: LoopNest, arch: MappingArch, m: Mapping,
                 roots: MappingABC[str, int] | None = None) -> dict[tuple[int, str], int]:
    """The visits ``R_c(t)`` of every child ``c`` (a level index, or :data:`MAC`) of every operand ``t`` along its
    chain (see the module docstring): the only place the loop orders enter the access counts, so two mappings with
    the same factors and the same visits have the same counts, energy and latency."""
    root = operand_roots(arch, roots)
    ctx = _Context(nest, arch, m)
    out: dict[tuple[int, str], int] = {}
    for t in OPERANDS:
        chain = [MAC, *(j for j in arch.keeping_levels(t) if j <= root[t])]
        for c in chain[:-1]:
            out[(c, t)] = ctx.visits(c, t)
    return out


def operand_roots(arch: MappingArch, roots: MappingABC[str, int] | None = None) -> dict[str, int]:
    """Every operand's root level index (main memory unless ``roots`` says otherwise); ValueError for an unknown
    operand or a root that is not a level keeping the operand with one instance."""
    out = dict.fromkeys(OPERANDS, arch.top)
    for t, j in (roots or {}).items():
        if t not in OPERANDS:
            raise ValueError(f"roots: unknown operand '{t}' (expected one of {OPERANDS})")
        if not isinstance(j, int) or isinstance(j, bool) or not 0 <= j <= arch.top:
            raise ValueError(f"roots: level {j!r} of operand {t} does not exist (levels 0..{arch.top})")
        lv = arch.levels[j]
        if t not in lv.keeps:
            raise ValueError(f"roots: level {lv.name} does not keep operand {t}")
        if lv.instances != 1:
            raise ValueError(f"roots: level {lv.name} of operand {t} has {lv.instances} instances (a root needs one)")
        out[t] = j
    return out


def _capacity_limits(arch: MappingArch,
                     limits: MappingABC[tuple[int, str], float] | None) -> dict[tuple[int, str], float]:
    out: dict[tuple[int, str], float] = {}
    for key, value in (limits or {}).items():
        j, mem = key
        if not 0 <= j <= arch.top or all(s.memory != mem for s in arch.levels[j].stores):
            raise ValueError(f"capacity_limits: no store '{mem}' at level {j}")
        if value < 0:
            raise ValueError(f"capacity_limits: negative limit {value} for '{mem}' at level {j}")
        out[(j, mem)] = value
    return out


class _Context:
    """Per-mapping helpers: index sets, footprints, visits and instance counts."""

    def __init__(self, nest: LoopNest, arch: MappingArch, m: Mapping) -> None:
        self.nest, self.arch, self.m = nest, arch, m
        self.slots = arch.slots()
        self.tslot = {s.level: k for k, s in enumerate(self.slots) if s.kind == TEMPORAL}

    def instances(self, level: int) -> int:
        start = 0 if level == MAC else self.tslot[level] + 1
        return math.prod(self.m.factors[d][k] for k in range(start, len(self.slots))
                         if self.slots[k].kind == SPATIAL for d in self.nest.dims)

    def spans(self, child: int, parent: int, slot: int) -> bool:
        """Whether spatial ``slot`` lies between ``child`` (or the MACs) and ``parent``."""
        return (-1 if child == MAC else self.tslot[child]) < slot < self.tslot[parent]

    def irrelevant_spatial_above(self, level: int, operand: str) -> int:
        rel = self.nest.operand(operand).dims
        return math.prod(self.m.factors[d][k] for k in range(self.tslot[level] + 1, len(self.slots))
                         if self.slots[k].kind == SPATIAL for d in self.nest.dims if d not in rel)

    def temporal_iterations(self) -> int:
        return math.prod(self.m.factors[d][k] for k, s in enumerate(self.slots) if s.kind == TEMPORAL
                         for d in self.nest.dims)

    def tile(self, level: int, operand: str) -> int:
        top = self.tslot[level]
        return self.nest.footprint(operand, {d: math.prod(self.m.factors[d][: top + 1]) for d in self.nest.dims})

    def delivery(self, child: int, parent: int, operand: str) -> int:
        """Footprint over the slots at/below T(child) plus the spatial slots between child and parent."""
        lo = 0 if child == MAC else self.tslot[child] + 1
        include = [k < lo or (self.slots[k].kind == SPATIAL and k < self.tslot[parent])
                   for k in range(len(self.slots))]
        if child == MAC:
            include = [self.slots[k].kind == SPATIAL and k < self.tslot[parent] for k in range(len(self.slots))]
        return self._footprint(operand, include)

    def _footprint(self, operand: str, include: Sequence[bool]) -> int:
        sets: dict[str, tuple[int, ...] | int] = {}
        for d in self.nest.dims:
            fs = self.m.factors[d]
            prefix = 0
            while prefix < len(fs) and (include[prefix] or fs[prefix] == 1):
                prefix += 1
            if all(not include[k] or fs[k] == 1 for k in range(prefix, len(fs))):
                sets[d] = math.prod(fs[:prefix])  # a contiguous range [0, n)
            else:
                sets[d] = _index_set(tuple(fs), tuple(include))
        total = 1
        for coord in self.nest.operand(operand).coords:
            terms = tuple((coef, sets[d]) for d, coef in coord.terms)
            if all(isinstance(s, int) for _, s in terms):
                total *= coordinate_extent(tuple((c, s) for c, s in terms))  # type: ignore[misc]
            else:
                total *= _set_extent(tuple((c, _as_set(s)) for c, s in terms))
        return total

    def visits(self, child: int, operand: str) -> int:
        loops: list[tuple[str, int]] = []  # outermost first
        lo = 0 if child == MAC else child + 1
        for j in range(self.arch.top, lo - 1, -1):
            k = self.tslot[j]
            loops.extend((d, self.m.factors[d][k]) for d in self.m.orders[j] if self.m.factors[d][k] > 1)
        if child == MAC:
            return math.prod(f for _, f in loops)
        rel = self.nest.operand(operand).dims
        end = len(loops)
        while end > 0 and loops[end - 1][0] not in rel:
            end -= 1
        return math.prod(f for _, f in loops[:end])


def axis_digits(nest: LoopNest, arch: MappingArch, m: Mapping, slot: int) -> list[str]:
    """The placement convention of the PEs along spatial ``slot``: the dimensions unrolled on it (factor > 1), fastest
    first — those irrelevant to the slot's placement operand (:meth:`MappingArch.placement_operand`) first, then the
    relevant ones, each group in the layer's dimension order. A PE's position along the axis is the mixed-radix
    number of its spatial loop indices in this order."""
    ref = arch.placement_operand(slot)
    rel = nest.operand(ref).dims if ref is not None else frozenset()
    dims = [d for d in nest.dims if m.factors[d][slot] > 1]
    return sorted(dims, key=lambda d: (d in rel, nest.dims.index(d)))


def _axis_digits(nest: LoopNest, arch: MappingArch, m: Mapping, slot: int,
                 operand: str) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The digits of the PE position along ``slot`` (fastest first, see :func:`axis_digits`): per digit its radix
    and the offset one step of it adds to each coordinate of ``operand``."""
    digits = []
    for d in axis_digits(nest, arch, m, slot):
        stride = math.prod(m.factors[d][:slot])
        coefs = tuple(sum(coef for dd, coef in c.terms if dd == d) for c in nest.operand(operand).coords)
        digits.append((m.factors[d][slot], tuple(c * stride for c in coefs)))
    return tuple(digits)


@cache
def _positions(digits: tuple[tuple[int, tuple[int, ...]], ...]) -> tuple[tuple[int, ...], ...]:
    """Per position along an axis, the offset of every coordinate."""
    n = len(digits[0][1]) if digits else 0
    out = [(0,) * n]
    for radix, step in reversed(digits):  # slowest digit first
        out = [tuple(o + i * s for o, s in zip(base, step, strict=True)) for base in out for i in range(radix)]
    return tuple(out)


@cache
def _matches(x: tuple[tuple[int, tuple[int, ...]], ...],
             y: tuple[tuple[int, tuple[int, ...]], ...] | None) -> tuple[int, int]:
    ox = _positions(x)
    if y is None:
        return sum(ox[i] == ox[i - 1] for i in range(1, len(ox))), len(ox)
    oy = _positions(y)
    dx = [tuple(a - b for a, b in zip(ox[i], ox[i - 1], strict=True)) for i in range(1, len(ox))]
    dy = [tuple(b - a for a, b in zip(oy[j], oy[j + 1], strict=True)) for j in range(len(oy) - 1)]
    # off(i, j) == off(i-1, j+1) iff ox[i] - ox[i-1] == oy[j+1] - oy[j]
    return sum(a == b for a in dx for b in dy), len(ox) * len(oy)


def link_matches(nest: LoopNest, arch: MappingArch, m: Mapping, link: ArchLink) -> tuple[int, int]:
    """``(matched, positions)``: of the ``positions`` used PE positions over the link's slot(s), how many have a
    link predecessor (x-1; diagonal: (x-1, y+1)) holding the same tile of the link's operand (equal offsets)."""
    x = _axis_digits(nest, arch, m, link.slots[0], link.operand)
    y = _axis_digits(nest, arch, m, link.slots[1], link.operand) if link.diagonal else None
    return _matches(x, y)


def _as_set(s: tuple[int, ...] | int) -> tuple[int, ...]:
    return tuple(range(s)) if isinstance(s, int) else s


@cache
def _index_set(factors: tuple[int, ...], include: tuple[bool, ...]) -> tuple[int, ...]:
    """Loop index values reached when the included slots range and the others stay at 0."""
    values = [0]
    stride = 1
    for f, inc in zip(factors, include, strict=True):
        if inc and f > 1:
            values = [v + i * stride for i in range(f) for v in values]
        stride *= f
    return tuple(sorted(values))


@cache
def _set_extent(terms: tuple[tuple[int, tuple[int, ...]], ...]) -> int:
    values = {0}
    for coef, idx in terms:
        values = {v + coef * i for v in values for i in idx}
    return len(values)


__all__ = ["MAC", "OBJECTIVES", "Access", "CostReport", "Figures", "axis_digits", "evaluate_mapping", "link_matches",
           "operand_roots", "reuse_visits"]
