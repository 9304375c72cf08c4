r"""The fused cost model: a group of operators executed under one outer tile loop with its intermediates staged on chip.

Inputs: a :class:`~dlaopt.formulations.fusion.group.FusedGroup`, an outer tile, a *staging level* ``s`` (an on-chip
level with one instance whose memory keeps every intermediate: the producer's ``O`` and the consumer's ``I`` or
``W`` in the same store), ``buffering`` (1 or 2) and one inner :class:`~dlaopt.formulations.mapping.mapping.Mapping`
per operator, over its inner loop nest (:func:`~dlaopt.formulations.fusion.group.inner_nests`).

* **Per operator, one outer iteration**: ``evaluate_mapping(inner_nest_i, arch, m_i, roots=..., capacity_limits=...)``
  with every intermediate operand of op ``i`` (its ``O`` if it produces one, its ``I`` / ``W`` if it consumes one)
  rooted at ``s``: the staging level plays main memory's part for it, so it never goes off chip.
* **Staging capacity** (seed 001 Table A.1's accounting: the operators' operand tiles multi-buffered, the intermediate
  FLAT-tile not): while op ``i`` runs, the intermediates it produces or consumes are live, whole: ``reserved_i`` =
  the bytes of their tiles of one outer iteration (the larger of the producer's output tile and the consumer's
  operand tile, which counts zero-padding rows). Op ``i``'s other tiles at ``s`` get ``(capacity - reserved_i) /
  buffering`` (``capacity_limits``); the staging bytes needed are ``max_i(reserved_i + buffering * other tiles_i)``.
  Every other bounded store of level ``s`` gets ``capacity / buffering``.
* **Absorbed operators** (element-wise / activation / softmax / norm between two operators, in place on the
  intermediate tile of one iteration, on the special-function unit): ``vector ops = ops per element * tile
  elements``; each absorbed operator reads and writes every element of the tile once at the staging store; a side
  input (e.g. a residual) is read from main memory for every element of the tile. An intermediate also consumed
  outside the group is written to main memory once per distinct element (read once from staging). Their cycles per
  iteration: ``max(vector ops / lanes, staging bytes / staging bandwidth, main-memory bytes / main-memory
  bandwidth)``; energy: the accesses at the stores' per-byte energies plus ``sfu_energy_pj_per_op`` per vector op.
* **Totals**: ``n_outer`` times the sum over operators (energy, accesses) plus the absorbed operators; latency
  ``n_outer * (sum_i latency_i + sfu cycles)`` (the operators of one iteration run one after another, each at its
  own ``max(compute, memory)``); off-chip bytes = main-memory reads + writes of every operand not rooted on chip,
  plus side inputs and write-backs.
* **Unfused reference** (layer by layer): each operator alone on its full loop nest (no roots), every intermediate
  written to and read back from main memory by the operators themselves, the absorbed operators as their own passes
  over main memory (read the tensor and side inputs, write the result; cycles ``max(vector ops / lanes, bytes /
  main-memory bandwidth)``). With ``staging_level`` given, tiles there are ``buffering``-buffered as in the fused case.

The fused simulator (:mod:`dlaopt.formulations.fusion.simulate`) executes the fused nest element by element and must
reproduce these counts exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping as MappingABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dlaopt.formulations.fusion.group import (
    FusedGroup,
    OuterTile,
    check_tile,
    dependence_errors,
    inner_extents,
    inner_nests,
    produced_counts,
)
from dlaopt.formulations.mapping.arch import MappingArch, Store
from dlaopt.formulations.mapping.cost import CostReport, Figures, evaluate_mapping
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest
from dlaopt.formulations.mapping.mapping import Mapping

FUSED_OBJECTIVES = ("energy", "latency", "edp", "offchip")


@dataclass(frozen=True)
class InnerProblem:
    """One operator's mapping problem inside a fused group (or alone, unfused): evaluate / solve ``nest`` with
    these ``roots`` and ``capacity_limits``. ``reserved``: staging memory -> bytes of live intermediates."""

    nest: LoopNest
    roots: dict[str, int]
    capacity_limits: dict[tuple[int, str], float]
    reserved: dict[str, int] = field(default_factory=dict)


@dataclass
class FusedReport(Figures):
    """What the fused (or unfused) cost model says about a group. ``op_reports``: one outer iteration per op."""

    valid: bool
    violations: list[str]
    n_outer: int = 1
    energy_pj: float = math.inf
    latency_cycles: float = math.inf
    offchip_bytes: float = math.inf
    offchip_by_tensor: dict[str, int] = field(default_factory=dict)
    op_reports: list[CostReport] = field(default_factory=list)
    sfu_cycles: float = 0.0  # per outer iteration
    sfu_vector_ops: float = 0.0  # whole run
    sfu_energy_pj: float = 0.0  # whole run
    sfu_staging_reads: int = 0  # elements read at the staging store by absorbed operators and write-backs (run)
    sfu_staging_writes: int = 0  # elements written there by absorbed operators (run)
    staging_bytes: int = 0  # bytes needed at the staging store (max over the ops)
    staging_capacity: float | None = None
    intermediate_bytes: int = 0  # largest reserve of live intermediates
    macs: int = 0  # executed over the whole run (incl. recompute)
    real_macs: int = 0  # the operators' own MACs
    mac_units: int = 0
    produced: dict[str, int] = field(default_factory=dict)  # intermediate -> elements produced (whole run)
    distinct_produced: dict[str, int] = field(default_factory=dict)
    recomputed: dict[str, int] = field(default_factory=dict)

    def objectives(self) -> dict[str, float]:
        return {**super().objectives(), "offchip": self.offchip_bytes}

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid, "violations": list(self.violations), "n_outer": self.n_outer,
            "energy_pj": self.energy_pj, "latency_cycles": self.latency_cycles, "edp": self.edp,
            "offchip_bytes": self.offchip_bytes, "offchip_by_tensor": dict(self.offchip_by_tensor),
            "utilization": self.utilization, "sfu_cycles": self.sfu_cycles, "sfu_vector_ops": self.sfu_vector_ops,
            "sfu_energy_pj": self.sfu_energy_pj, "sfu_staging_reads": self.sfu_staging_reads,
            "sfu_staging_writes": self.sfu_staging_writes, "staging_bytes": self.staging_bytes,
            "staging_capacity": self.staging_capacity, "intermediate_bytes": self.intermediate_bytes,
            "macs": self.macs, "real_macs": self.real_macs, "mac_units": self.mac_units,
            "produced": dict(self.produced), "distinct_produced": dict(self.distinct_produced),
            "recomputed": dict(self.recomputed),
            "ops": [r.to_dict() for r in self.op_reports],
        }


# ================================================================================================ staging
def staging_index(arch: MappingArch, staging: int | str) -> int:
    """The level index of ``staging`` (an index, a level name or a memory name); ValueError unless it is an on-chip
    level with one instance."""
    if isinstance(staging, str):
        found = [j for j, lv in enumerate(arch.levels)
                 if lv.name == staging or any(s.memory == staging for s in lv.stores)]
        if not found:
            raise ValueError(f"staging: no level or memory named '{staging}' "
                             f"(levels: {[lv.name for lv in arch.levels]})")
        j = found[0]
    else:
        j = int(staging)
    if not 0 <= j < arch.top:
        raise ValueError(f"staging: level {j} is not an on-chip level (0..{arch.top - 1})")
    if arch.levels[j].instances != 1:
        raise ValueError(f"staging: level {arch.levels[j].name} has {arch.levels[j].instances} instances "
                         "(the staging buffer must be a single shared memory)")
    return j


def _rooted(group: FusedGroup, i: int) -> list[str]:
    """The operands of op ``i`` that are intermediates."""
    out = ["O"] if group.intermediate_of(i) is not None else []
    out.extend(x.consumer_operand for x in group.consumed_by(i))
    return out


def _staging_store(group: FusedGroup, arch: MappingArch, s: int) -> dict[int, Store]:
    """Per intermediate index: the store of level ``s`` keeping it (ValueError when it cannot be staged there)."""
    lv = arch.levels[s]
    out = {}
    for k, x in enumerate(group.intermediates):
        ps, cs = lv.store_of("O"), lv.store_of(x.consumer_operand)
        if ps is None or cs is None:
            missing = "O" if ps is None else x.consumer_operand
            raise ValueError(f"staging level {lv.name} does not keep operand {missing}, needed to stage "
                             f"'{x.tensor}'")
        if ps is not cs:
            raise ValueError(f"staging level {lv.name} keeps O in '{ps.memory}' and {x.consumer_operand} in "
                             f"'{cs.memory}': '{x.tensor}' would have to be copied between them")
        out[k] = ps
    return out


def _intermediate_bytes(group: FusedGroup, nests: Sequence[LoopNest]) -> list[int]:
    """Per intermediate: bytes of its tile of one outer iteration (the larger of the producer's output tile and the
    consumer's operand tile)."""
    out = []
    for x in group.intermediates:
        p, c = nests[x.producer], nests[x.consumer]
        pb = p.footprint("O", p.sizes) * p.operand("O").word_bytes
        cb = c.footprint(x.consumer_operand, c.sizes) * c.operand(x.consumer_operand).word_bytes
        out.append(max(pb, cb))
    return out


def _reserved(group: FusedGroup, arch: MappingArch, s: int, nests: Sequence[LoopNest]) -> list[dict[str, int]]:
    stores = _staging_store(group, arch, s)
    sizes = _intermediate_bytes(group, nests)
    out: list[dict[str, int]] = [{} for _ in group.ops]
    for k, x in enumerate(group.intermediates):
        for i in (x.producer, x.consumer):
            mem = stores[k].memory
            out[i][mem] = out[i].get(mem, 0) + sizes[k]
    return out


def _limits(arch: MappingArch, s: int, reserved: MappingABC[str, int], buffering: int) -> dict[tuple[int, str], float]:
    out = {}
    for store in arch.levels[s].stores:
        if store.capacity_bytes is None:
            continue
        out[(s, store.memory)] = max(0.0, (store.capacity_bytes - reserved.get(store.memory, 0)) / buffering)
    return out


def _check_buffering(buffering: int) -> None:
    if buffering not in (1, 2):
        raise ValueError(f"buffering must be 1 or 2, got {buffering}")


def inner_problems(group: FusedGroup, arch: MappingArch, tile: OuterTile, staging_level: int | str, *,
                   buffering: int = 2) -> tuple[InnerProblem, ...]:
    """Per op: the inner loop nest of one outer iteration, its roots (intermediate operands at the staging level) and
    its capacity limits at the staging level (see the module docstring)."""
    _check_buffering(buffering)
    s = staging_index(arch, staging_level)
    nests = inner_nests(group, tile)
    reserved = _reserved(group, arch, s, nests)
    return tuple(InnerProblem(nests[i], dict.fromkeys(_rooted(group, i), s),
                              _limits(arch, s, reserved[i], buffering), reserved[i])
                 for i in range(len(group.ops)))


def unfused_problems(group: FusedGroup, arch: MappingArch, *, staging_level: int | str | None = None,
                     buffering: int = 2) -> tuple[InnerProblem, ...]:
    """Per op: its full loop nest, no roots; with ``staging_level``, tiles there are ``buffering``-buffered."""
    _check_buffering(buffering)
    limits: dict[tuple[int, str], float] = {}
    if staging_level is not None:
        limits = _limits(arch, staging_index(arch, staging_level), {}, buffering)
    return tuple(InnerProblem(op.nest, {}, dict(limits)) for op in group.ops)


# ================================================================================================ evaluation
def _lanes(arch: MappingArch, lanes: float | None) -> float:
    return float(lanes) if lanes else float(arch.num_macs)


def _transfer_cycles(store: Store, read_bytes: float, write_bytes: float) -> float:
    if store.write_bandwidth is None:
        return (read_bytes + write_bytes) / store.read_bandwidth
    return max(read_bytes / store.read_bandwidth, write_bytes / store.write_bandwidth)


def _main_store(arch: MappingArch) -> Store:
    return arch.levels[arch.top].stores[0]


def _op_offchip(group: FusedGroup, arch: MappingArch, i: int, report: CostReport, roots: MappingABC[str, int],
                scale: int, into: dict[str, int]) -> int:
    top = arch.levels[arch.top].name
    nest = group.ops[i].nest
    total = 0
    for t in OPERANDS:
        if t in roots:
            continue
        a = report.accesses[top][t]
        b = (a.reads + a.writes) * nest.operand(t).word_bytes * scale
        into[nest.operand(t).tensor] = into.get(nest.operand(t).tensor, 0) + b
        total += b
    return total


def evaluate_fused(group: FusedGroup, arch: MappingArch, tile: OuterTile, staging_level: int | str,
                   mappings: Sequence[Mapping], *, buffering: int = 2, lanes: float | None = None,
                   sfu_energy_pj_per_op: float = 0.0) -> FusedReport:
    """The fused cost of ``group`` with outer tile ``tile``, intermediates staged at ``staging_level`` and one inner
    mapping per op (see the module docstring). ``lanes``: vector lanes of the special-function unit (default: the
    MAC units; pass ``Accelerator.pe_array.lanes``)."""
    if len(mappings) != len(group.ops):
        raise ValueError(f"{len(mappings)} mappings for the {len(group.ops)} operators of group '{group.name}'")
    problems = inner_problems(group, arch, tile, staging_level, buffering=buffering)
    reports = [evaluate_mapping(p.nest, arch, m, roots=p.roots, capacity_limits=p.capacity_limits)
               for p, m in zip(problems, mappings, strict=True)]
    return combine_fused(group, arch, tile, staging_level, reports, buffering=buffering, lanes=lanes,
                         sfu_energy_pj_per_op=sfu_energy_pj_per_op)



def _start_report(group: FusedGroup, arch: MappingArch, reports: Sequence[CostReport], n_outer: int) -> FusedReport:
    """A report over ``reports`` (one per operator), invalid with their violations when one of them is."""
    rep = FusedReport(True, [], n_outer=n_outer, op_reports=list(reports), real_macs=group.macs(),
                      mac_units=arch.num_macs)
    for i, r in enumerate(reports):
        if not r.valid:
            rep.violations.extend(f"{group.ops[i].name}: {v}" for v in r.violations)
    rep.valid = not rep.violations
    return rep

def combine_fused(group: FusedGroup, arch: MappingArch, tile: OuterTile, staging_level: int | str,
                  reports: Sequence[CostReport], *, buffering: int = 2, lanes: float | None = None,
                  sfu_energy_pj_per_op: float = 0.0) -> FusedReport:
    """The fused report from per-op reports of one outer iteration (``evaluate_mapping`` of :func:`inner_problems`,
    e.g. of mappings an exact solver found): absorbed operators, totals, staging requirement, dependences."""
    t = check_tile(group, tile)
    n = math.prod(t.values())
    s = staging_index(arch, staging_level)
    problems = inner_problems(group, arch, t, s, buffering=buffering)
    lv = arch.levels[s]
    rep = _start_report(group, arch, reports, n)
    if not rep.valid:
        return rep
    rep.violations.extend(dependence_errors(group, t))
    # staging requirement
    need: dict[str, int] = {}
    for i, (p, r) in enumerate(zip(problems, reports, strict=True)):
        tiles = r.tile_bytes.get(lv.name, {})
        for store in lv.stores:
            others = sum(b for op_t, b in tiles.items() if op_t in store.operands)
            bytes_i = p.reserved.get(store.memory, 0) + buffering * others
            need[store.memory] = max(need.get(store.memory, 0), bytes_i)
            if store.capacity_bytes is not None and p.reserved.get(store.memory, 0) > store.capacity_bytes:
                rep.violations.append(f"{group.ops[i].name}: the intermediates need {p.reserved[store.memory]} B "
                                      f"in '{store.memory}' of {store.capacity_bytes} B")
        rep.intermediate_bytes = max(rep.intermediate_bytes, sum(p.reserved.values()))
    main_mem = _main_store(arch)
    stores = _staging_store(group, arch, s) if group.intermediates else {}
    if group.intermediates:
        mem = stores[0].memory
        rep.staging_bytes = need.get(mem, 0)
        rep.staging_capacity = stores[0].capacity_bytes
    elif lv.stores:
        rep.staging_bytes = max(need.values(), default=0)
        rep.staging_capacity = lv.stores[0].capacity_bytes
    # operators
    energy = 0.0
    latency = 0.0
    offchip = 0
    for i, (p, r) in enumerate(zip(problems, reports, strict=True)):
        energy += r.energy_pj * n
        latency += r.latency_cycles
        rep.macs += r.macs * n
        offchip += _op_offchip(group, arch, i, r, p.roots, n, rep.offchip_by_tensor)
    # absorbed operators, side inputs, write-backs
    ext = inner_extents(group, t)
    counts = produced_counts(group, t)
    lanes_ = _lanes(arch, lanes)
    vec = 0.0
    st_r: dict[str, float] = {}
    st_w: dict[str, float] = {}
    mm_r = mm_w = 0.0  # main-memory bytes of the whole run
    sfu_energy = 0.0
    for k, x in enumerate(group.intermediates):
        nest = group.ops[x.producer].nest
        elems = math.prod(ext[x.producer][d] for d in nest.operand("O").dims)
        produced, distinct = counts[k]
        rep.produced[x.produced] = produced
        rep.distinct_produced[x.produced] = distinct
        rep.recomputed[x.produced] = produced - distinct
        word = nest.operand("O").word_bytes
        store = stores[k]
        vec += x.vector_ops_per_element * elems * n
        touched = len(x.sfu_ops) * elems * n * word
        rep.sfu_staging_reads += len(x.sfu_ops) * elems * n + distinct * len(x.written_back)
        rep.sfu_staging_writes += len(x.sfu_ops) * elems * n
        wb_bytes = sum(distinct * x.dtype_bytes.get(w, word) for w in x.written_back)
        side_bytes = sum(elems * n * x.dtype_bytes.get(si, word) for si in x.side_inputs)
        st_r[store.memory] = st_r.get(store.memory, 0.0) + touched + wb_bytes
        st_w[store.memory] = st_w.get(store.memory, 0.0) + touched
        sfu_energy += (touched + wb_bytes) * store.read_energy_pj_per_byte + touched * store.write_energy_pj_per_byte
        mm_r += side_bytes
        mm_w += wb_bytes
        for si in x.side_inputs:
            b = elems * n * x.dtype_bytes.get(si, word)
            rep.offchip_by_tensor[si] = rep.offchip_by_tensor.get(si, 0) + b
        for w in x.written_back:
            b = distinct * x.dtype_bytes.get(w, word)
            rep.offchip_by_tensor[w] = rep.offchip_by_tensor.get(w, 0) + b
    sfu_energy += mm_r * main_mem.read_energy_pj_per_byte + mm_w * main_mem.write_energy_pj_per_byte
    sfu_energy += vec * sfu_energy_pj_per_op
    cycles = vec / n / lanes_
    for store in lv.stores:
        cycles = max(cycles, _transfer_cycles(store, st_r.get(store.memory, 0.0) / n, st_w.get(store.memory, 0.0) / n))
    cycles = max(cycles, _transfer_cycles(main_mem, mm_r / n, mm_w / n))
    rep.sfu_cycles = cycles
    rep.sfu_vector_ops = vec
    rep.sfu_energy_pj = sfu_energy
    rep.energy_pj = energy + sfu_energy
    rep.latency_cycles = n * (latency + cycles)
    rep.offchip_bytes = offchip + mm_r + mm_w
    rep.offchip_bytes = int(rep.offchip_bytes) if rep.offchip_bytes == int(rep.offchip_bytes) else rep.offchip_bytes
    if rep.violations:
        rep.valid = False
    return rep


def evaluate_unfused(group: FusedGroup, arch: MappingArch, mappings: Sequence[Mapping], *,
                     staging_level: int | str | None = None, buffering: int = 2, lanes: float | None = None,
                     sfu_energy_pj_per_op: float = 0.0) -> FusedReport:
    """The layer-by-layer reference: each op alone on its full loop nest (``mappings`` of the full nests) and the
    absorbed operators as passes over main memory (see the module docstring)."""
    if len(mappings) != len(group.ops):
        raise ValueError(f"{len(mappings)} mappings for the {len(group.ops)} operators of group '{group.name}'")
    problems = unfused_problems(group, arch, staging_level=staging_level, buffering=buffering)
    reports = [evaluate_mapping(p.nest, arch, m, capacity_limits=p.capacity_limits)
               for p, m in zip(problems, mappings, strict=True)]
    return combine_unfused(group, arch, reports, lanes=lanes, sfu_energy_pj_per_op=sfu_energy_pj_per_op)


def combine_unfused(group: FusedGroup, arch: MappingArch, reports: Sequence[CostReport], *,
                    lanes: float | None = None, sfu_energy_pj_per_op: float = 0.0) -> FusedReport:
    """The unfused report from per-op reports of the full loop nests (see :func:`evaluate_unfused`)."""
    rep = _start_report(group, arch, reports, 1)
    if not rep.valid:
        return rep
    energy = latency = 0.0
    offchip = 0
    for i, r in enumerate(reports):
        energy += r.energy_pj
        latency += r.latency_cycles
        rep.macs += r.macs
        offchip += _op_offchip(group, arch, i, r, {}, 1, rep.offchip_by_tensor)
    main_mem = _main_store(arch)
    lanes_ = _lanes(arch, lanes)
    for x in group.intermediates:
        nest = group.ops[x.producer].nest
        size = nest.footprint("O", nest.sizes)
        word = nest.operand("O").word_bytes
        rep.produced[x.produced] = rep.distinct_produced[x.produced] = size
        rep.recomputed[x.produced] = 0
        if not x.sfu_ops:
            continue
        path = [x.produced, *([x.tensor] if x.tensor != x.produced else [])]
        passes = len(x.sfu_ops)
        r_bytes = passes * size * word + sum(size * x.dtype_bytes.get(si, word) for si in x.side_inputs)
        w_bytes = passes * size * word
        for si in x.side_inputs:
            rep.offchip_by_tensor[si] = rep.offchip_by_tensor.get(si, 0) + size * x.dtype_bytes.get(si, word)
        for tname in path:
            rep.offchip_by_tensor[tname] = rep.offchip_by_tensor.get(tname, 0) + passes * size * word
        vec = x.vector_ops_per_element * size
        rep.sfu_vector_ops += vec
        e = r_bytes * main_mem.read_energy_pj_per_byte + w_bytes * main_mem.write_energy_pj_per_byte
        e += vec * sfu_energy_pj_per_op
        rep.sfu_energy_pj += e
        c = max(vec / lanes_, _transfer_cycles(main_mem, r_bytes, w_bytes))
        rep.sfu_cycles += c
        offchip += r_bytes + w_bytes
    rep.energy_pj = energy + rep.sfu_energy_pj
    rep.latency_cycles = latency + rep.sfu_cycles
    rep.offchip_bytes = offchip
    return rep


__all__ = ["FUSED_OBJECTIVES", "FusedReport", "InnerProblem", "combine_fused", "combine_unfused", "evaluate_fused",
           "evaluate_unfused", "inner_problems", "staging_index", "unfused_problems"]
