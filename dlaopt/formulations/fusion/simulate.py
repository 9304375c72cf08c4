"""A direct simulator of a fused group's loop nest: the reference the fused cost model is tested against.

It executes the outer tile loop iteration by iteration and, in each, every operator's inner nest over GLOBAL element
ids: each inner loop index is offset by the operator's tile offset of that iteration
(:func:`~dlaopt.formulations.fusion.group.tile_offsets`) and pushed through the operator's real index arithmetic
(a convolution input row is ``stride * P + dilation * R`` in padded coordinates; the intermediate's canonical row
subtracts the consumer's padding). From these explicit element sets it counts, without the cost model's formulas:

* per intermediate and iteration: the set of elements the producer wrote into the staging buffer; a **dependence
  check** that every real element the consumer reads is in it (elements in the zero padding are counted apart, they
  are never produced), and that every softmax / layernorm row the consumer reads was produced whole (all keys) in
  this iteration; the elements produced, the distinct elements over the run and hence the **recomputed** ones;
* the absorbed operators: vector operations and staging reads/writes from the produced set of each iteration; side
  inputs read from main memory per produced element; write-backs of intermediates also consumed outside the group
  as the union of the produced sets over the run;
* per operator and main-memory operand: the distinct global elements touched per iteration (compulsory traffic) and
  over the run; a check that every iteration's sets are translates of the first one's (same sizes), so every
  iteration runs the same inner nest;
* the MACs executed (distinct global iteration vectors per iteration, summed).

The on-chip and main-memory access counts of each operator within one outer iteration come from the single-layer
simulator (:func:`~dlaopt.formulations.mapping.simulate.simulate_mapping` with the intermediate operands rooted at
the staging level), which executes the inner nest element by element; every iteration runs that same nest, so the
whole run's counts are ``n_outer`` times those.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dlaopt.formulations.fusion.cost import inner_problems, staging_index
from dlaopt.formulations.fusion.group import FusedGroup, OuterTile, check_tile, outer_iterations, tile_offsets
from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.simulate import SimResult, TileIdentity, simulate_mapping


@dataclass
class FusedSimResult:
    n_outer: int
    op_sims: list[SimResult]  # one outer iteration per op
    offchip_bytes: int = 0
    offchip_by_tensor: dict[str, int] = field(default_factory=dict)
    macs: int = 0
    produced: dict[str, int] = field(default_factory=dict)  # intermediate -> elements produced over the run
    distinct_produced: dict[str, int] = field(default_factory=dict)
    recomputed: dict[str, int] = field(default_factory=dict)
    padding_read: dict[str, int] = field(default_factory=dict)  # zero-padding elements consumers read (per run)
    compulsory: dict[str, int] = field(default_factory=dict)  # main-memory tensor -> sum over iterations of distinct
    distinct: dict[str, int] = field(default_factory=dict)  # main-memory tensor -> distinct elements over the run
    sfu_vector_ops: float = 0.0
    sfu_staging_reads: int = 0  # elements
    sfu_staging_writes: int = 0
    dependence_violations: list[str] = field(default_factory=list)


def _box(ext: dict[str, int], off: dict[str, int], dims: Sequence[str]) -> dict[str, np.ndarray]:
    """Global loop indices of every point of the inner box (one flat array per dim)."""
    grids = np.meshgrid(*(np.arange(ext[d], dtype=np.int64) + off[d] for d in dims), indexing="ij")
    return {d: g.ravel() for d, g in zip(dims, grids, strict=True)}


def _coords(x: dict[str, np.ndarray], terms_list: Sequence[Sequence[tuple[str, int]]]) -> list[np.ndarray]:
    n = next(iter(x.values())).size
    return [sum((coef * x[d] for d, coef in terms), np.zeros(n, np.int64)) for terms in terms_list]


def _encode(coords: Sequence[np.ndarray], radices: Sequence[int]) -> np.ndarray:
    ids = np.zeros(coords[0].size if coords else 1, np.int64)
    for c, r in zip(coords, radices, strict=True):
        ids = ids * r + c
    return ids


def simulate_fused(group: FusedGroup, arch: MappingArch, tile: OuterTile, staging_level: int | str,
                   mappings: Sequence[Mapping], *, tile_identity: TileIdentity = "loops",
                   buffering: int = 2) -> FusedSimResult:
    """Execute the fused nest of ``group`` (see the module docstring)."""
    if len(mappings) != len(group.ops):
        raise ValueError(f"{len(mappings)} mappings for the {len(group.ops)} operators of group '{group.name}'")
    t = check_tile(group, tile)
    n = math.prod(t.values())
    s = staging_index(arch, staging_level)
    problems = inner_problems(group, arch, t, s, buffering=buffering)
    nests: list[LoopNest] = [p.nest for p in problems]
    sims = [simulate_mapping(p.nest, arch, m, tile_identity=tile_identity, roots=p.roots)
            for p, m in zip(problems, mappings, strict=True)]
    res = FusedSimResult(n, sims)
    produces = {x.producer: k for k, x in enumerate(group.intermediates)}
    consumes = {(x.consumer, x.consumer_operand): k for k, x in enumerate(group.intermediates)}
    union_produced: list[set[int]] = [set() for _ in group.intermediates]
    external_union: dict[str, set[int]] = {}
    first_sizes: dict[tuple[int, str], int] = {}
    for index in outer_iterations(group, t):
        off = tile_offsets(group, t, index)
        produced_ids: dict[int, np.ndarray] = {}
        produced_rows: dict[int, dict[int, int]] = {}
        for i, op in enumerate(group.ops):
            nest = nests[i]
            x = _box(nest.sizes, off[i], nest.dims)
            it_ids = _encode([x[d] for d in nest.dims], [op.nest.sizes[d] for d in nest.dims])
            macs = int(np.unique(it_ids).size)
            res.macs += macs
            _same(first_sizes, (i, "mac"), macs, op.name, index, res)
            for operand in OPERANDS:
                if operand == "O" and i in produces:
                    k = produces[i]
                    inter = group.intermediates[k]
                    c = _coords(x, [ax.producer for ax in inter.axes])
                    sizes = [ax.size for ax in inter.axes]
                    inside = np.all([(v >= 0) & (v < sz) for v, sz in zip(c, sizes, strict=True)], axis=0)
                    if not inside.all():
                        res.dependence_violations.append(
                            f"{inter.produced}: iteration {index}: {op.name} computes elements outside the tensor")
                    ids = np.unique(_encode([v[inside] for v in c], sizes))
                    produced_ids[k] = ids
                    union_produced[k].update(ids.tolist())
                    res.produced[inter.produced] = res.produced.get(inter.produced, 0) + ids.size
                    res.sfu_vector_ops += inter.vector_ops_per_element * ids.size
                    res.sfu_staging_reads += len(inter.sfu_ops) * ids.size
                    res.sfu_staging_writes += len(inter.sfu_ops) * ids.size
                    word = nest.operand("O").word_bytes
                    for si in inter.side_inputs:
                        b = ids.size * inter.dtype_bytes.get(si, word)
                        res.offchip_by_tensor[si] = res.offchip_by_tensor.get(si, 0) + b
                    if inter.softmax_axis is not None:  # distinct produced elements per row
                        a = inter.softmax_axis
                        full_ids = _encode([v[inside] for v in c], sizes)
                        rows = _encode([v[inside] for j, v in enumerate(c) if j != a],
                                       [sz for j, sz in enumerate(sizes) if j != a])
                        _, first = np.unique(full_ids, return_index=True)
                        r, cnt = np.unique(rows[first], return_counts=True)
                        produced_rows[k] = dict(zip(r.tolist(), cnt.tolist(), strict=True))
                    _same(first_sizes, (i, operand), int(ids.size), op.name, index, res)
                elif (i, operand) in consumes:
                    k = consumes[(i, operand)]
                    inter = group.intermediates[k]
                    c = _coords(x, [ax.consumer for ax in inter.axes])
                    c = [v - ax.shift for v, ax in zip(c, inter.axes, strict=True)]
                    sizes = [ax.size for ax in inter.axes]
                    inside = np.all([(v >= 0) & (v < sz) for v, sz in zip(c, sizes, strict=True)], axis=0)
                    outside = np.stack([v[~inside] for v in c])
                    pad = int(np.unique(outside, axis=1).shape[1]) if outside.shape[1] else 0
                    res.padding_read[inter.tensor] = res.padding_read.get(inter.tensor, 0) + pad
                    need = np.unique(_encode([v[inside] for v in c], sizes))
                    have = produced_ids.get(k, np.zeros(0, np.int64))
                    missing = np.setdiff1d(need, have)
                    if missing.size:
                        res.dependence_violations.append(
                            f"{inter.tensor}: iteration {index}: {op.name} reads {missing.size} elements not "
                            "produced in this iteration")
                    if inter.softmax_axis is not None:
                        a = inter.softmax_axis
                        rows = np.unique(_encode([v[inside] for j, v in enumerate(c) if j != a],
                                                 [sz for j, sz in enumerate(sizes) if j != a]))
                        got = produced_rows.get(k, {})
                        short = sum(1 for r in rows.tolist() if got.get(r, 0) != sizes[a])
                        if short:
                            res.dependence_violations.append(
                                f"{inter.tensor}: iteration {index}: {op.name} reads {short} softmax rows that were "
                                "not produced whole")
                else:
                    operand_def = nest.operand(operand)
                    full = op.nest
                    c = _coords(x, [cd.terms for cd in operand_def.coords])
                    radices = [1 + sum(coef * (full.sizes[d] - 1) for d, coef in cd.terms)
                               for cd in operand_def.coords]
                    ids = np.unique(_encode(c, radices))
                    key = f"{op.name}:{operand}"
                    res.compulsory[operand_def.tensor] = res.compulsory.get(operand_def.tensor, 0) + ids.size
                    external_union.setdefault(key, set()).update(ids.tolist())
                    _same(first_sizes, (i, operand), int(ids.size), op.name, index, res)
                    res.distinct[operand_def.tensor] = len(external_union[key])
    # main-memory traffic: the single-layer simulation of each iteration's inner nest, n_outer times
    top = arch.levels[arch.top].name
    for i, (p, sim) in enumerate(zip(problems, sims, strict=True)):
        for operand in OPERANDS:
            if operand in p.roots:
                continue
            a = sim.accesses[top][operand]
            b = (a.reads + a.writes) * nests[i].operand(operand).word_bytes * n
            tensor = nests[i].operand(operand).tensor
            res.offchip_by_tensor[tensor] = res.offchip_by_tensor.get(tensor, 0) + b
    for k, inter in enumerate(group.intermediates):
        distinct = len(union_produced[k])
        res.distinct_produced[inter.produced] = distinct
        res.recomputed[inter.produced] = res.produced.get(inter.produced, 0) - distinct
        res.sfu_staging_reads += distinct * len(inter.written_back)
        word = group.ops[inter.producer].nest.operand("O").word_bytes
        for w in inter.written_back:
            b = distinct * inter.dtype_bytes.get(w, word)
            res.offchip_by_tensor[w] = res.offchip_by_tensor.get(w, 0) + b
    res.offchip_bytes = sum(res.offchip_by_tensor.values())
    res.dependence_violations = sorted(set(res.dependence_violations))
    return res


def _same(first: dict, key: tuple, value: int, name: str, index: dict, res: FusedSimResult) -> None:
    if key not in first:
        first[key] = value
    elif first[key] != value:
        res.dependence_violations.append(f"{name}: iteration {index}: {key[1]} set of {value} elements, the first "
                                         f"iteration's had {first[key]} (the inner nests differ)")


__all__ = ["FusedSimResult", "simulate_fused"]
