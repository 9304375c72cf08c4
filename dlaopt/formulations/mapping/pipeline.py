"""GAMMA's two-stage optimisation of a layer-wise pipeline (seed 001 §4.4.5, Table 4.6), solved by the exact method
instead of searched with a penalty.

A multi-array system runs one layer per array instance, the layers as a pipeline: every instance works on its layer
of a different input at the same time, so an input leaves the pipeline every ``L* = max_l L_l`` cycles (the
slowest layer's latency; throughput ``clock / L*`` inputs per second). The ``arch`` given is *one* array instance
(the caller picks it, e.g. one of S3's sub-accelerators); every layer gets an instance of its own, so the layers'
mappings are independent and each layer is a problem of its own.

* **Stage I** (latency): every layer's least latency ``L_l`` (a latency MILP per layer, :func:`~.exact.solve_layer`);
  ``L* = max_l L_l``, the bottleneck is the layer attaining it.
* **Stage II** (power or energy): every layer independently, the least power (``energy / latency``) or energy among
  its mappings with latency ``<= L*`` — the other layers may slow down to the bottleneck's pace for free. Energy
  under a latency cap is one proven MILP; power is the latency-cap walk of :mod:`.exact` (whose proof covers only
  mappings that reach its bound: see there). The stage-I mapping is within ``L*`` and warm-starts it, so stage II
  is never worse than stage I.

Every figure is the cost model's of the mapping found (:func:`~.cost.evaluate_mapping`), never a MILP's value.
Power is reported in mW: ``energy_pJ / latency_cycles * clock_hz * 1e-9``. The max and average rows are Table 4.6's:
over all the network's layers, a repeated shape counted as often as it occurs (the table's footnote: "calculated
based on all 20 layers of ResNet-18"); each unique shape is solved once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping as MappingABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.exact import LayerExact, solve_layer
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.solvers.result import SolveOptions, Status, relative_gap

SECOND_OBJECTIVES = ("power", "energy")
TEMPLATES = ("nvdla", "eyeriss", "shidiannao")  # the dataflow templates warm-starting stage I


@dataclass
class StageFigures:
    """One layer after one stage: the mapping and its cost-model figures; ``bound``, ``gap`` and ``status`` are the
    solve's, for the stage's objective in the units reported (cycles, pJ, or mW for power)."""

    mapping: Mapping | None
    latency_cycles: float | None
    energy_pj: float | None
    power_mw: float | None
    objective: float | None
    bound: float | None
    status: Status
    time_s: float
    solves: int = 0
    message: str = ""

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)


@dataclass
class PipelineRow:
    """A unique layer shape: ``count`` layers of the network have it."""

    name: str
    shape: str
    count: int
    first: StageFigures
    second: StageFigures


@dataclass
class PipelineResult:
    """Both stages for every unique layer shape, with the pipeline latency ``L*`` (stage I's slowest layer)."""

    arch: str
    clock_hz: float
    second_objective: str
    rows: list[PipelineRow]
    pipeline_latency: float | None  # L*: the largest stage-I latency (cycles)
    pipeline_latency_bound: float | None  # no mapping of the bottleneck is faster: the largest stage-I bound
    bottleneck: int | None  # the row attaining L*
    time_s: float
    notes: list[str] = field(default_factory=list)

    @property
    def throughput_per_s(self) -> float | None:
        """Inputs per second leaving the pipeline: ``clock / L*``."""
        return None if not self.pipeline_latency else self.clock_hz / self.pipeline_latency

    def summary(self) -> dict[str, Any]:
        """Table 4.6's max and average rows for both stages (``first_*``, ``second_*`` per figure), weighted by the
        layer counts, and the reduction of the average of the second objective (``1 - second / first``)."""
        out: dict[str, Any] = {"layers": sum(r.count for r in self.rows), "unique_layers": len(self.rows),
                               "pipeline_latency": self.pipeline_latency, "bottleneck": None if self.bottleneck is None
                               else self.rows[self.bottleneck].name}
        for stage in ("first", "second"):
            for fig in ("latency_cycles", "energy_pj", "power_mw"):
                vals = [(getattr(getattr(r, stage), fig), r.count) for r in self.rows]
                if any(v is None for v, _ in vals):
                    out[f"{stage}_max_{fig}"] = out[f"{stage}_avg_{fig}"] = None
                    continue
                out[f"{stage}_max_{fig}"] = max(v for v, _ in vals)
                out[f"{stage}_avg_{fig}"] = sum(v * c for v, c in vals) / sum(c for _, c in vals)
        fig = "power_mw" if self.second_objective == "power" else "energy_pj"
        a, b = out[f"first_avg_{fig}"], out[f"second_avg_{fig}"]
        out["reduction"] = None if a is None or b is None or a <= 0 else 1 - b / a
        out["proven_second"] = sum(r.second.status == Status.OPTIMAL for r in self.rows)
        return out


def _figures(nest: LoopNest, arch: MappingArch, r: LayerExact, objective: str, t: float,
             fallback: Mapping | None = None, limit: float | None = None) -> StageFigures:
    """A solve's answer as stage figures, re-evaluated by the cost model. A mapping over ``limit`` (a latency row
    held only within the solver's tolerance) is replaced by ``fallback``."""
    m, status, message, bound = r.mapping, r.status, r.message, r.bound
    rep = evaluate_mapping(nest, arch, m) if m is not None else None
    if rep is not None and limit is not None and rep.valid and rep.latency_cycles > limit:
        message = f"the mapping found runs {rep.latency_cycles:g} cycles, over L* = {limit:g}: the stage-I mapping kept"
        m, status = fallback, Status.FEASIBLE if fallback is not None else Status.ERROR
        rep = evaluate_mapping(nest, arch, m) if m is not None else None
    if rep is None or not rep.valid:
        return StageFigures(None, None, None, None, None, None, status if m is None else Status.ERROR, t, r.solves,
                            message or "no valid mapping")
    scale = arch.clock_hz * 1e-9 if objective == "power" else 1.0  # pJ per cycle -> mW
    power = rep.energy_pj / rep.latency_cycles * arch.clock_hz * 1e-9
    value = {"latency": rep.latency_cycles, "energy": rep.energy_pj, "power": power}[objective]
    return StageFigures(m, rep.latency_cycles, rep.energy_pj, power, value,
                        None if bound is None else min(bound * scale, value), status, t, r.solves, message)


def two_stage(layers: Sequence[tuple[LoopNest, int]], arch: MappingArch, second: str, options: SolveOptions, *,
              solver: str = "highs", templates: Sequence[str] = TEMPLATES,
              tuning: MappingABC[str, bool] | None = None, max_solves: int = 500,
              tie_break: bool = True) -> PipelineResult:
    """Seed 001 §4.4.5's two stages on ``layers`` (unique layer shapes with how often each occurs, e.g.
    :func:`dlaopt.experiments.mapping.conv_layers`; equal shapes given twice are merged) mapped on ``arch``, one
    array instance per layer (see the module docstring). ``second``: ``"power"`` or ``"energy"``. ``options`` apply
    to every solve (one per unique shape and stage; its time limit is per solve). ``templates``: the dataflow
    heuristics warm-starting stage I. ``tuning``: the power walk's levers (:func:`~.exact.solve_layer`).
    ``tie_break``: stage I keeps, among the mappings at a layer's least latency, one of least energy (an energy MILP
    under that latency; GAMMA's stage I keeps whichever its search met), so that stage I's energy and power — and the
    reductions stage II is measured by — do not depend on which of the tied mappings a solver happens to return."""
    from dlaopt.formulations.mapping.heuristics import HEURISTICS

    if second not in SECOND_OBJECTIVES:
        raise ValueError(f"the second stage minimises one of {SECOND_OBJECTIVES}, not '{second}'")
    t0 = time.perf_counter()
    merged: dict[tuple, tuple[LoopNest, int]] = {}
    for nest, count in layers:
        key = nest.shape_key()
        merged[key] = (merged[key][0], merged[key][1] + count) if key in merged else (nest, count)
    unique = list(merged.values())
    first: list[StageFigures] = []
    for nest, _ in unique:
        ts = time.perf_counter()
        warm = [m for h in templates
                if (m := HEURISTICS[h](nest, arch, "latency", seed=options.seed, budget=None, time_limit=None))
                is not None]
        r = solve_layer(nest, arch, "latency", warm=warm, options=options, solver=solver)
        f = _figures(nest, arch, r, "latency", time.perf_counter() - ts)
        if tie_break and f.mapping is not None and f.latency_cycles is not None:
            # many mappings share the least latency: the least energy among them makes stage I well defined
            tie = solve_layer(nest, arch, "energy", warm=[f.mapping], options=options, solver=solver,
                              latency_limit=f.latency_cycles)
            g = _figures(nest, arch, tie, "energy", 0.0, fallback=f.mapping, limit=f.latency_cycles)
            if g.mapping is not None and g.energy_pj is not None and f.energy_pj is not None \
                    and g.energy_pj < f.energy_pj:
                f = StageFigures(g.mapping, g.latency_cycles, g.energy_pj, g.power_mw, g.latency_cycles, f.bound,
                                 f.status, time.perf_counter() - ts, f.solves + tie.solves, f.message)
        first.append(f)
    lats = [f.latency_cycles for f in first]
    notes: list[str] = []
    if any(v is None for v in lats) or not lats:
        return PipelineResult(arch.name, arch.clock_hz, second, [
            PipelineRow(n.name, n.shape_text, c, f, f) for (n, c), f in zip(unique, first, strict=True)],
            None, None, None, time.perf_counter() - t0, ["a layer has no mapping: no pipeline latency"])
    l_star = max(v for v in lats if v is not None)
    neck = next(i for i, v in enumerate(lats) if v == l_star)
    bounds = [f.bound for f in first]
    l_bound = max(b for b in bounds if b is not None) if all(b is not None for b in bounds) else None
    if first[neck].status != Status.OPTIMAL:
        notes.append(f"the bottleneck's least latency is not proven (bound {first[neck].bound}): L* may be lower")
    rows = []
    for (nest, count), f in zip(unique, first, strict=True):
        ts = time.perf_counter()
        assert f.mapping is not None
        r = solve_layer(nest, arch, second, warm=[f.mapping], options=options, solver=solver,
                        latency_limit=l_star, tuning=tuning, max_solves=max_solves)
        s = _figures(nest, arch, r, second, time.perf_counter() - ts, fallback=f.mapping, limit=l_star)
        rows.append(PipelineRow(nest.name, nest.shape_text, count, f, s))
    return PipelineResult(arch.name, arch.clock_hz, second, rows, l_star, l_bound, neck, time.perf_counter() - t0,
                          notes)


def table_rows(result: PipelineResult) -> list[dict[str, Any]]:
    """Table 4.6's rows: per unique layer, stage I's latency and second-stage figure, stage II's latency and figure
    (the bottleneck marked), then the max and average rows (over all layers, counts included)."""
    fig = "power_mw" if result.second_objective == "power" else "energy_pj"
    out: list[dict[str, Any]] = []
    for i, r in enumerate(result.rows):
        out.append({"layer": r.name, "count": r.count, "bottleneck": i == result.bottleneck,
                    "first_latency_cycles": r.first.latency_cycles, f"first_{fig}": getattr(r.first, fig),
                    "second_latency_cycles": r.second.latency_cycles, f"second_{fig}": getattr(r.second, fig),
                    "second_status": r.second.status.value, "second_gap": r.second.gap})
    s = result.summary()
    for kind in ("max", "avg"):
        out.append({"layer": kind, "count": s["layers"], "bottleneck": False,
                    "first_latency_cycles": s[f"first_{kind}_latency_cycles"], f"first_{fig}": s[f"first_{kind}_{fig}"],
                    "second_latency_cycles": s[f"second_{kind}_latency_cycles"],
                    f"second_{fig}": s[f"second_{kind}_{fig}"], "second_status": "", "second_gap": None})
    return out


__all__ = ["SECOND_OBJECTIVES", "TEMPLATES", "PipelineResult", "PipelineRow", "StageFigures", "table_rows",
           "two_stage"]
