"""The independent evaluator of a fusion solution: everything recomputed from the instance, nothing taken from a
method.

* **Partition.** Every mappable operator of the workload is in exactly one group; with explicit ``groups`` every
  fused group is one of those (each listed group is fused as a whole or its operators run alone); with ``groups:
  auto`` a fused group has at most ``max_group`` operators.
* **Legality.** A fused group is rebuilt from the workload by the group builder
  (:func:`~dlaopt.formulations.fusion.group.group_from_workload`): its operators must form a chain, each intermediate
  consumed inside the group once (a tensor also used outside is written back to main memory and its traffic
  counted), softmax / layernorm rows whole in every tile (a reduction dim is never an outer dim; the dependence check
  :func:`~dlaopt.formulations.fusion.group.dependence_errors` confirms every element read was produced in the same
  outer iteration). The outer tile must divide every outer dim and, with a FLAT ``granularity``, be one of its tiles
  for a group with a softmax intermediate.
* **Capacity with buffering.** Each inner mapping is evaluated by the single-layer cost model with its intermediates
  rooted at the staging level and its other tiles there limited to ``(capacity - live intermediates) / buffering``;
  the fused model (:func:`~dlaopt.formulations.fusion.cost.evaluate_fused`) adds the absorbed operators, write-backs
  and side inputs. A single operator is the single-layer cost model on its full loop nest.
* **Order.** Each fused group runs as one step: no operator is absorbed by two groups, and the groups and the other
  operators can be ordered (:func:`~dlaopt.formulations.fusion.select.schedule_cycle`).
* **Passes.** Every non-mappable operator not absorbed by a chosen fused group runs as a pass of its own
  (:func:`pass_cost`).

The objective is the sum over groups and passes of energy (pJ), latency (cycles) or main-memory bytes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dlaopt.formulations.base import Evaluation
from dlaopt.formulations.fusion.cost import evaluate_fused
from dlaopt.formulations.fusion.group import (
    FusedGroup,
    check_tile,
    dependence_errors,
    group_from_workload,
    inner_nests,
    n_outer,
)
from dlaopt.formulations.fusion.select import schedule_cycle
from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.mapping import mapping_errors
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind

if TYPE_CHECKING:
    from dlaopt.formulations.fusion.data import FusionData, FusionSolution, PassCost


def pass_cost(workload: Workload, op: Operator, arch: MappingArch, lanes: float,
              sfu_energy_pj_per_op: float = 0.0) -> PassCost:
    """A non-mappable operator run on its own over main memory: it reads every input and writes every output once
    (a reshape is a view: nothing moves), ``vector_ops / lanes`` cycles of work overlapped with the transfers
    (``max`` of the two, as the unfused passes of :mod:`.cost`); energy at main memory's per-byte figures."""
    from dlaopt.formulations.fusion.data import PassCost

    if op.kind == OpKind.RESHAPE:
        return PassCost(0.0, 0.0, 0.0)
    top = arch.levels[arch.top]
    rd = next((s for s in top.stores if "I" in s.operands), top.stores[0])
    wr = next((s for s in top.stores if "O" in s.operands), top.stores[0])
    r = float(sum(workload.tensors[t].size_bytes for t in op.inputs))
    w = float(sum(workload.tensors[t].size_bytes for t in op.outputs))
    vec = float(op.vector_ops)
    if rd is wr:
        mem = (r + w) / rd.read_bandwidth if rd.write_bandwidth is None else max(r / rd.read_bandwidth,
                                                                                   w / rd.write_bandwidth)
    else:
        mem = max(r / rd.read_bandwidth, w / (wr.write_bandwidth or wr.read_bandwidth))
    energy = r * rd.read_energy_pj_per_byte + w * wr.write_energy_pj_per_byte + vec * sfu_energy_pj_per_op
    return PassCost(energy, max(vec / lanes, mem), r + w)


def build_group(workload: Workload, ops: tuple[str, ...] | list[str], heads: int) -> FusedGroup:
    """The fused group of a chain of operators (ValueError when it is none); an attention pair (``L -> softmax ->
    A``) carries FLAT's parameters, ``heads`` splitting its batch dim (1 when it does not divide it)."""
    from dlaopt.formulations.fusion.flat import as_attention

    group = group_from_workload(workload, list(ops), name=" + ".join(ops))
    try:
        return as_attention(group, heads)
    except ValueError:
        try:
            return as_attention(group, 1)
        except ValueError:
            return group


def flat_tile_set(data: FusionData, group: FusedGroup) -> list[dict[str, int]] | None:
    """The outer tiles the ``granularity`` option allows for ``group`` (``None``: every divisor tiling)."""
    if data.granularity == "any" or not group.params:
        return None
    from dlaopt.formulations.fusion.flat import flat_tiles

    return [dict(t) for _, t in flat_tiles(group, data.granularity)]


def evaluate_solution(data: FusionData, solution: FusionSolution) -> Evaluation:
    violations: list[str] = []
    wl = data.workload
    arch = data.arch
    obj = data.objective
    items = set(data.items)
    seen: dict[str, int] = {}
    for k, g in enumerate(solution.groups):
        for o in g.ops:
            if o not in items:
                violations.append(f"group {k}: '{o}' is not a mappable operator of the workload")
            elif o in seen:
                violations.append(f"group {k}: '{o}' is already in group {seen[o]}")
            else:
                seen[o] = k
    for o in data.items:
        if o not in seen:
            violations.append(f"operator '{o}' is in no group")
    if data.fixed:
        want = {c.ops for c in data.candidates if c.fused}
        for k, g in enumerate(solution.groups):
            if g.fused and g.ops not in want:
                violations.append(f"group {k} ({' + '.join(g.ops)}) is not one of the instance's groups")
    if violations:
        return Evaluation(False, None, violations)
    totals = {"energy": 0.0, "latency": 0.0, "offchip": 0.0}
    absorbed: set[str] = set()
    per_group: list[dict[str, Any]] = []
    for k, g in enumerate(solution.groups):
        label = " + ".join(g.ops)
        if len(g.mappings) != len(g.ops):
            violations.append(f"group {k} ({label}): {len(g.mappings)} mappings for {len(g.ops)} operators")
            continue
        if not g.fused:
            nest = data.nests[g.ops[0]]
            errs = mapping_errors(nest, arch, g.mappings[0])
            if errs:
                violations.extend(f"{g.ops[0]}: {e}" for e in errs)
                continue
            r = evaluate_mapping(nest, arch, g.mappings[0])
            if not r.valid:
                violations.extend(f"{g.ops[0]}: {v}" for v in r.violations)
                continue
            top = r.accesses.get(arch.levels[arch.top].name, {})
            off = float(sum((a.reads + a.writes) * nest.operand(t).word_bytes for t, a in top.items()))
            figs = {"energy": r.energy_pj, "latency": r.latency_cycles, "offchip": off}
            per_group.append({"ops": list(g.ops), "fused": False, "energy_pj": r.energy_pj,
                              "latency_cycles": r.latency_cycles, "offchip_bytes": off})
        else:
            if not data.fixed and len(g.ops) > int(data.options["max_group"]):
                violations.append(f"group {k} ({label}): {len(g.ops)} operators, more than max_group "
                                  f"{data.options['max_group']}")
            try:
                group = build_group(wl, g.ops, data.heads)
            except ValueError as exc:
                violations.append(f"group {k} ({label}): {exc}")
                continue
            if group.op_names != g.ops:
                violations.append(f"group {k} ({label}): the chain runs {' -> '.join(group.op_names)}")
                continue
            try:
                tile = check_tile(group, g.tile or {})
            except ValueError as exc:
                violations.append(f"group {k} ({label}): {exc}")
                continue
            allowed = flat_tile_set(data, group)
            if allowed is not None and tile not in allowed:
                violations.append(f"group {k} ({label}): tile {tile} is not a {data.granularity}-Gran tile")
            deps = dependence_errors(group, tile)
            if deps:
                violations.extend(f"group {k} ({label}): {e}" for e in deps)
                continue
            bad = False
            for nest, m in zip(inner_nests(group, tile), g.mappings, strict=True):
                errs = mapping_errors(nest, arch, m)
                if errs:
                    violations.extend(f"group {k} ({label}), {nest.name}: {e}" for e in errs)
                    bad = True
            if bad:
                continue
            try:
                rep = evaluate_fused(group, arch, tile, data.staging, g.mappings, buffering=data.buffering,
                                     lanes=data.lanes)
            except ValueError as exc:
                violations.append(f"group {k} ({label}): {exc}")
                continue
            if not rep.valid:
                violations.extend(f"group {k} ({label}): {v}" for v in rep.violations)
                continue
            figs = {"energy": rep.energy_pj, "latency": rep.latency_cycles, "offchip": float(rep.offchip_bytes)}
            twice = sorted(absorbed & {o.name for o in group.softmax_ops})
            if twice:
                violations.append(f"group {k} ({label}): '{twice[0]}' is absorbed by another group too (each would "
                                  "need the other's output first)")
            absorbed.update(o.name for o in group.softmax_ops)
            from dlaopt.formulations.fusion.flat import granularity_of

            per_group.append({"ops": list(g.ops), "fused": True, "tile": tile, "n_outer": n_outer(group, tile),
                              "granularity": granularity_of(group, tile) if group.params else None,
                              "energy_pj": rep.energy_pj, "latency_cycles": rep.latency_cycles,
                              "offchip_bytes": rep.offchip_bytes, "staging_bytes": rep.staging_bytes,
                              "intermediate_bytes": rep.intermediate_bytes, "recomputed": dict(rep.recomputed),
                              "absorbed": [o.name for o in group.softmax_ops]})
        for key in totals:
            totals[key] += figs[key]
    if violations:
        return Evaluation(False, None, violations)
    inside = [[*g["ops"], *g["absorbed"]] for g in per_group if g["fused"]]
    cyc = schedule_cycle(wl, inside)
    if cyc is not None:
        fused = [g for g in per_group if g["fused"]]
        names = "; ".join(" + ".join(fused[k]["ops"]) for k in cyc)
        return Evaluation(False, None, [f"groups {names} depend on each other: no order runs each group as one "
                                        "step"])
    passes = 0
    for op in wl.operators:
        if op.name in data.nests or op.name in absorbed:
            continue
        pc = pass_cost(wl, op, arch, data.lanes)
        totals["energy"] += pc.energy_pj
        totals["latency"] += pc.latency_cycles
        totals["offchip"] += pc.offchip_bytes
        passes += 1
    objective = totals[obj]
    metrics: dict[str, Any] = {
        "energy_pj": totals["energy"], "latency_cycles": totals["latency"], "offchip_bytes": totals["offchip"],
        "edp": totals["energy"] * totals["latency"],
        "fused_groups": sum(1 for g in solution.groups if g.fused),
        "fused_operators": sum(len(g.ops) for g in solution.groups if g.fused),
        "passes": passes, "absorbed": sorted(absorbed), "staging": data.staging_memory, "buffering": data.buffering,
        "groups": per_group,
    }
    if not math.isfinite(objective):
        return Evaluation(False, None, ["the objective is not finite"], metrics)
    return Evaluation(True, float(objective), [], metrics)


__all__ = ["build_group", "evaluate_solution", "flat_tile_set", "pass_cost"]
