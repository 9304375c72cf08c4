"""FLAT's execution granularities of fused attention (seed 001 Appendix A, §A.2, Table A.1).

On the attention group (:func:`~dlaopt.formulations.fusion.group.attention_group`, outer dims ``B`` = batch x heads
and ``M`` = query rows) the four granularities are outer tiles:

* **M-Gran** (batched multi-head): one outer iteration — the whole logit tensor ``B·H·N²`` is staged;
* **B-Gran** (batch): one sample per iteration — ``B`` tiles = batch (each tile holds the heads of one sample);
* **H-Gran** (head): one head per iteration — ``B`` tiles = batch x heads;
* **R-Gran** (row): one head and ``Rx`` query rows per iteration — ``B`` tiles = batch x heads, ``M`` tiles =
  seq / Rx (the minimal unit is one row: softmax needs the row's keys whole, which the outer loop never splits).

Table A.1 gives each granularity's on-chip buffer requirement as an order of magnitude
(:func:`table_a1_requirement`, in elements): the operands of L (Q and K tiles) and of A (V and output tiles) double
buffered and added up, plus the intermediate FLAT-tile, not double-buffered. :func:`exact_requirement` is the
staging bytes our fused cost model needs for given inner mappings (intermediate + ``buffering`` x the larger of the
two operators' other tiles: the operators run one after the other, so their operand buffers are reused);
:func:`staged_whole_mappings` gives the inner mappings that keep whole operand tiles at the staging level, the
setting Table A.1 assumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from dlaopt.formulations.fusion.cost import evaluate_fused, inner_problems, staging_index
from dlaopt.formulations.fusion.group import FusedGroup, OuterTile, check_tile
from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.loopnest import divisors
from dlaopt.formulations.mapping.mapping import Mapping

GRANULARITIES = ("M", "B", "H", "R")
GRANULARITY_NAMES = {"M": "batched multi-head (M-Gran)", "B": "batch (B-Gran)", "H": "head (H-Gran)",
                     "R": "row (R-Gran)"}


def _attention_params(group: FusedGroup) -> tuple[int, int, int]:
    try:
        return int(group.params["batch"]), int(group.params["heads"]), int(group.params["seq_q"])
    except KeyError:
        raise ValueError(f"group '{group.name}' is not an attention group (FLAT granularities need batch, heads "
                         "and seq_q)") from None


def as_attention(group: FusedGroup, heads: int) -> FusedGroup:
    """A two-matmul group ``L -> softmax -> A`` from a workload (e.g. a zoo encoder's ``attn.qk`` and ``attn.av``,
    whose ``B`` is batch x heads) with the attention parameters FLAT's granularities need; ValueError otherwise."""
    if len(group.ops) != 2 or len(group.intermediates) != 1 or group.intermediates[0].softmax_axis is None \
            or group.intermediates[0].consumer_operand != "I" or group.ops[0].nest.kind != "matmul":
        raise ValueError(f"group '{group.name}' is not L = Q·Kᵀ -> softmax over the keys -> A = S·V")
    lsz, asz = group.ops[0].nest.sizes, group.ops[1].nest.sizes
    if heads < 1 or lsz["B"] % heads:
        raise ValueError(f"heads = {heads} does not divide the batch x heads dim {lsz['B']} of '{group.name}'")
    params = {"batch": lsz["B"] // heads, "heads": heads, "seq_q": lsz["M"], "seq_k": lsz["N"], "d": lsz["K"],
              "dv": asz["N"]}
    return replace(group, params=params)


def flat_tile(group: FusedGroup, gran: str, rx: int | None = None) -> dict[str, int]:
    """The outer tile of granularity ``gran`` (``rx``: query rows per tile, R-Gran only)."""
    batch, heads, seq = _attention_params(group)
    if gran == "M":
        tile = {"B": 1, "M": 1}
    elif gran == "B":
        tile = {"B": batch, "M": 1}
    elif gran == "H":
        tile = {"B": batch * heads, "M": 1}
    elif gran == "R":
        if rx is None or rx < 1 or seq % rx:
            raise ValueError(f"R-Gran needs rows per tile Rx dividing the sequence length {seq}, got {rx}")
        tile = {"B": batch * heads, "M": seq // rx}
    else:
        raise ValueError(f"unknown granularity '{gran}' (expected one of {GRANULARITIES})")
    if gran != "R" and rx is not None:
        raise ValueError(f"Rx is only meaningful for R-Gran, not {gran}-Gran")
    return check_tile(group, tile)


def granularity_of(group: FusedGroup, tile: OuterTile) -> str | None:
    """The FLAT granularity of an outer tile (the coarsest name when two coincide, e.g. B = M for batch 1), or None
    when the tile is none of FLAT's (e.g. several heads with split rows)."""
    batch, heads, _ = _attention_params(group)
    t = check_tile(group, tile)
    if t["M"] > 1:
        return "R" if t["B"] == batch * heads else None
    for gran, b in (("M", 1), ("B", batch), ("H", batch * heads)):
        if t["B"] == b:
            return gran
    return None


def flat_tiles(group: FusedGroup, granularity: str = "any") -> list[tuple[str, dict[str, int]]]:
    """``(granularity, tile)`` of every distinct FLAT outer tile of ``granularity`` (``any``: all four; R-Gran: every
    divisor Rx < seq of the sequence length)."""
    if granularity != "any" and granularity not in GRANULARITIES:
        raise ValueError(f"unknown granularity '{granularity}' (expected any or one of {GRANULARITIES})")
    _, _, seq = _attention_params(group)
    wanted = GRANULARITIES if granularity == "any" else (granularity,)
    out: list[tuple[str, dict[str, int]]] = []
    seen: set[tuple] = set()
    for gran in wanted:
        tiles = [flat_tile(group, "R", rx) for rx in divisors(seq) if rx < seq] if gran == "R" \
            else [flat_tile(group, gran)]
        for tile in tiles:
            key = tuple(sorted(tile.items()))
            if key not in seen:
                seen.add(key)
                out.append((granularity_of(group, tile) or gran, tile))
    return out


def table_a1_requirement(gran: str, B: int, H: int, N: int, d: int, Rx: int | None = None) -> int:  # noqa: N803
    """Seed 001 Table A.1's buffer requirement (elements; the expression inside the O()): ``B`` batch, ``H`` heads,
    ``N`` sequence length, ``d`` head size (``D = H·d``), ``Rx`` rows per R-Gran tile.
    M: ``8BDN + BHN²``; B: ``8DN + HN²``; H: ``8Nd + N²``; R: ``4Rx·d + 4Nd + Rx·N``."""
    D = H * d  # noqa: N806
    if gran == "M":
        return 8 * B * D * N + B * H * N * N
    if gran == "B":
        return 8 * D * N + H * N * N
    if gran == "H":
        return 8 * N * d + N * N
    if gran == "R":
        if Rx is None:
            raise ValueError("R-Gran needs Rx")
        return 4 * Rx * d + 4 * N * d + Rx * N
    raise ValueError(f"unknown granularity '{gran}' (expected one of {GRANULARITIES})")


def staged_whole_mappings(group: FusedGroup, arch: MappingArch, tile: OuterTile,
                          staging_level: int | str) -> list[Mapping]:
    """Per op, the inner mapping with every loop at the staging level's temporal slot: whole operand tiles staged,
    one element at a time below, nothing re-fetched from main memory (loop order: the nest's)."""
    s = staging_index(arch, staging_level)
    slot = arch.temporal_slot(s)
    n_slots = len(arch.slots())
    out = []
    for p in inner_problems(group, arch, tile, s, buffering=1):
        factors = {d: tuple(p.nest.sizes[d] if k == slot else 1 for k in range(n_slots)) for d in p.nest.dims}
        out.append(Mapping(factors, tuple(tuple(p.nest.dims) for _ in arch.levels)))
    return out


def exact_requirement(group: FusedGroup, arch: MappingArch, tile: OuterTile, staging_level: int | str,
                      mappings: Sequence[Mapping], *, buffering: int = 2) -> int:
    """Staging bytes the fused mapping needs (:attr:`FusedReport.staging_bytes`), whether or not they fit."""
    s = staging_index(arch, staging_level)
    unbounded = _unbounded(arch)
    rep = evaluate_fused(group, unbounded, tile, s, mappings, buffering=buffering)
    if not rep.valid:
        raise ValueError("; ".join(rep.violations))
    return rep.staging_bytes


def _unbounded(arch: MappingArch) -> MappingArch:
    levels = tuple(replace(lv, stores=tuple(replace(st, capacity_bytes=None) if j < arch.top else st
                                           for st in lv.stores))
                   for j, lv in enumerate(arch.levels))
    return replace(arch, levels=levels)


__all__ = ["GRANULARITIES", "GRANULARITY_NAMES", "as_attention", "exact_requirement", "flat_tile", "flat_tiles",
           "granularity_of", "staged_whole_mappings", "table_a1_requirement"]
