"""The independent evaluator of a co-design: everything recomputed from the instance, nothing taken from a model.

For every layer: its design point must lie on the instance's grid (LS: one point for all layers), the accelerator
is rebuilt from the template (:func:`~.space.accelerator_for`), the mapping must be valid on it (the mapping cost
model checks factors, fanouts and capacities) and — for a fixed dataflow — must be the dataflow's own mapping on
that point (recomputed). Latency and energy come from the cost model; area and power from the accelerator
(:func:`~dlaopt.hardware.area.area_mm2`, :func:`~dlaopt.hardware.area.power_mw` — not the vectorised grid figures
the methods use), summed over layers for LP. The budgets and the user's restrictions (``design``, ``layer_cap``) are
checked again, each broken one named by its label.

The report also gives the buffers the design actually needs: the largest L1 and L2 tiles of its mappings (DiGamma's
allocation by minimum requirement), and the area such a trimmed design would take.
"""

from __future__ import annotations

import math
from typing import Any

from dlaopt.formulations.base import Evaluation
from dlaopt.formulations.codesign.data import CodesignData, CodesignSolution
from dlaopt.formulations.codesign.space import DesignPoint, accelerator_for
from dlaopt.formulations.codesign.tables import FREE
from dlaopt.formulations.mapping.arch import arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import dataflow
from dlaopt.hardware.area import area_mm2, power_mw

_TOL = 1e-9


def _figure(objective: str, latency: float, energy: float) -> float:
    return {"latency": latency, "energy": energy, "edp": latency * energy}[objective]


def evaluate_design(data: CodesignData, solution: CodesignSolution) -> Evaluation:
    violations: list[str] = []
    n = data.n_layers
    if len(solution.points) != n or len(solution.mappings) != n:
        return Evaluation(False, None, [f"the solution has {len(solution.points)} designs and "
                                        f"{len(solution.mappings)} mappings for {n} layers"])
    if data.deployment == "ls" and len(set(solution.points)) > 1:
        violations.append(f"layer-sequential deployment uses {len(set(solution.points))} different designs")
    on_grid = set(data.space.points)
    figures: list[float] = []
    per_layer: list[dict[str, Any]] = []
    reports_by_point: dict[DesignPoint, list[Any]] = {}
    style_cache: dict[tuple[int, DesignPoint], Any] = {}
    for k, (name, nest, p, m) in enumerate(zip(data.layer_names, data.layers, solution.points, solution.mappings,
                                                 strict=True)):
        if p not in on_grid:
            violations.append(f"layer {name}: design {p.label} is not a point of the design grid")
        for rule in data.design_rules:
            if k in rule.layers and not rule.allows(p):
                violations.append(f"{rule.label}: layer {name} runs on {p.label}")
        arch = arch_from_accelerator(accelerator_for(data.template, p))
        r = evaluate_mapping(nest, arch, m)
        if not r.valid:
            violations.extend(f"layer {name}: {v}" for v in r.violations)
            figures.append(math.inf)
            continue
        if data.dataflow != FREE:
            key = (int(data.unique_of[k]), p)
            if key not in style_cache:
                style_cache[key] = dataflow(nest, arch, data.dataflow, data.objective)
            want = style_cache[key]
            if want is None or want.factors != m.factors or want.orders != m.orders:
                violations.append(f"layer {name}: the mapping is not the {data.dataflow} dataflow's on {p.label}")
        fig = _figure(data.objective, r.latency_cycles, r.energy_pj)
        for rule in data.cap_rules:
            if k in rule.layers and fig > rule.limit * (1 + _TOL):
                violations.append(f"{rule.label}: layer {name} has {data.objective} {fig:.6g} above {rule.limit:.6g}")
        figures.append(fig)
        reports_by_point.setdefault(p, []).append(r)
        per_layer.append({"layer": name, "design": p.label, "latency_cycles": r.latency_cycles,
                          "energy_pj": r.energy_pj, "utilization": r.utilization})
    # area and power: one design (LS), or the sum over the layers' designs (LP)
    designs = [solution.points[0]] if data.deployment == "ls" else list(solution.points)
    area = power = 0.0
    for p in designs:
        acc = accelerator_for(data.template, p)
        area += area_mm2(acc, data.technology).total
        power += power_mw(acc, data.technology).total
    used = {"area_mm2": area, "power_mw": power}
    for key, cap in data.budgets.items():
        if used[key] > cap * (1 + _TOL):
            violations.append(f"budget: {key} {used[key]:.6g} is above the cap {cap:.6g}")
    feasible = not violations
    objective = None
    if feasible:
        objective = float(max(figures)) if data.aggregate == "max" else float(sum(figures))
    latency = sum(x["latency_cycles"] for x in per_layer)
    energy = sum(x["energy_pj"] for x in per_layer)
    needs = _minimum_buffers(data, reports_by_point)
    metrics: dict[str, Any] = {
        "area_mm2": area, "power_mw": power, "latency_cycles": latency, "energy_pj": energy,
        "max_layer_latency_cycles": max((x["latency_cycles"] for x in per_layer), default=0.0),
        "edp_sum": sum(x["latency_cycles"] * x["energy_pj"] for x in per_layer),
        "budgets": dict(data.budgets), "designs": len(set(solution.points)), "layers": per_layer, **needs,
    }
    if data.deployment == "ls" and solution.points:
        metrics["design"] = solution.points[0].to_dict()
        metrics["pes"] = solution.points[0].num_pes
    else:
        metrics["pes"] = sum(p.num_pes for p in solution.points)
    return Evaluation(feasible, objective, violations, metrics)


def _minimum_buffers(data: CodesignData, reports: dict[DesignPoint, list[Any]]) -> dict[str, Any]:
    """The largest L1 and L2 tiles the mappings on each design hold (bytes), and, for LS, the area of the design
    trimmed to them."""
    out: dict[str, Any] = {}
    if data.deployment != "ls" or len(reports) != 1:
        return out
    (p, rs), = reports.items()
    acc = accelerator_for(data.template, p)
    arch = arch_from_accelerator(acc)
    l1 = l2 = 0
    for r in rs:
        for lv in arch.levels[:-1]:
            mems = {st.memory for st in lv.stores}
            total = sum(r.tile_bytes.get(lv.name, {}).values())
            if data.template.l1 in mems:
                l1 = max(l1, total)
            if data.template.l2 is not None and data.template.l2 in mems:
                l2 = max(l2, total)
    trimmed = DesignPoint(p.rows, p.cols, max(l1, 1), l2 if p.l2_bytes else 0)
    out["l1_bytes_needed"] = l1
    out["l2_bytes_needed"] = l2
    out["area_mm2_trimmed"] = area_mm2(accelerator_for(data.template, trimmed), data.technology).total
    return out
