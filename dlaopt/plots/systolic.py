"""Systolic (DeepOpt) plots: every layer's energy and delay with the schedule chosen for it.

``layers`` (solution) — two panels, energy and delay per conv / FC layer, bars coloured by the layer's schedule
(the same colour per schedule in every plot), the hardware point (array size, SRAM sizes, area) in the title.

``layers`` (comparison) — the same per method: grouped bars coloured by method, hatched by schedule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from dlaopt.formulations.systolic.network import layer_energy_delay
from dlaopt.formulations.systolic.problem import SystolicData, SystolicSolution
from dlaopt.formulations.systolic.technology import DesignPoints
from dlaopt.plots.common import (
    PlotKind,
    category_width,
    colour,
    comparison_title,
    empty_note,
    fmt_num,
    join,
    layer_comparison_frame,
    layer_scales,
    layer_values,
    missing_note,
    new_figure,
    plural,
    set_titles,
    si_scale,
    tick_labels,
)
from dlaopt.specs.systolic import SCHEDULE_NAMES

if TYPE_CHECKING:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.harness import Prepared, Result

SOLUTION_TYPE = SystolicSolution
SCHEDULE_COLOURS = dict(zip(SCHEDULE_NAMES, ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759"), strict=True))
SCHEDULE_HATCHES = dict(zip(SCHEDULE_NAMES, ("", "////", "....", "xxxx", "\\\\\\\\"), strict=True))


def hardware_text(hw: dict[str, Any], area_mm2: float | None = None) -> str:
    text = (f"{hw['J']}×{hw['K']} PEs, filter {hw['f_kb']} kB, ifmap {hw['i_kb']} kB, psum {hw['p_kb']} kB")
    return text + (f", {area_mm2:.3f} mm²" if area_mm2 is not None else "")


def layer_figures(data: SystolicData, sol: SystolicSolution) -> list[dict[str, Any]]:
    """Energy (J) and delay (cycles) of every layer with its schedule on the solution's hardware — computed with
    the cost model as the evaluator does, also for a solution it rejects (e.g. a point over the area budget);
    ``nan`` where the layer has no schedule or cannot run it."""
    hw = sol.hardware
    point = DesignPoints.single(hw["J"], hw["K"], hw["f_kb"], hw["i_kb"], hw["p_kb"], data.tech)
    b = data.bits
    try:
        arrays = point.hardware(b_f=b.b_f, b_i=b.b_i, b_p=b.b_p, b_o=b.b_o, dram_bw=b.dram_bw, dram_block=128)
    except Exception:  # an SRAM size without an energy figure: nothing can be computed
        arrays = None
    out = []
    for layer in data.layers:
        s = sol.schedules.get(layer.name)
        e = d = math.nan
        if arrays is not None and s in SCHEDULE_NAMES:
            ed = layer_energy_delay(layer, s, arrays, data.tech,
                                    reference_fc_compute=bool(data.options["reference_fc_compute"]))
            e, d = float(ed.energy.ravel()[0]), float(ed.delay.ravel()[0])
        out.append({"layer": layer.name, "schedule": s, "energy_j": e, "delay_cycles": d})
    return out


def _finite(v: float) -> float:
    return v if math.isfinite(v) else 0.0


def plot_layers(prepared: Prepared, sol: SystolicSolution, evaluation: Evaluation, title: str | None,
                subject: str) -> Figure:
    data: SystolicData = prepared.data
    per = evaluation.metrics.get("layers") or layer_figures(data, sol)
    n = len(per)
    fig = new_figure(category_width(n, per=0.42, base=3.5, minimum=9.0), 7.2)
    ax_e, ax_d = fig.subplots(2, 1, sharex=True)
    if not per:
        empty_note(ax_e, "the workload has no conv / FC layer")
        ax_d.set_axis_off()
        set_titles(fig, title or f"{subject}: per-layer energy and delay", evaluation=evaluation)
        return fig
    xs = np.arange(n)
    scheds = [p["schedule"] for p in per]
    cols = [SCHEDULE_COLOURS.get(s or "", "#cccccc") for s in scheds]
    energy = [float(p["energy_j"]) for p in per]
    delay = [float(p["delay_cycles"]) for p in per]
    es, eu = si_scale(energy, "J")
    ds, du = si_scale(delay, "cycles")
    ax_e.bar(xs, [_finite(v) / es for v in energy], color=cols, width=0.75)
    ax_d.bar(xs, [_finite(v) / ds for v in delay], color=cols, width=0.75)
    for ax, vals in ((ax_e, energy), (ax_d, delay)):
        for x, v in zip(xs, vals, strict=True):
            if not math.isfinite(v):
                ax.annotate("∞" if v > 0 else "n/a", (x, 0), ha="center", va="bottom", fontsize=9, color="#c0392b")
        ax.grid(axis="y", alpha=0.3)
    if n < 4:
        ax_d.set_xlim(-1.5, n + 0.5)
    ax_e.set_ylabel(f"energy [{eu}]")
    ax_d.set_ylabel(f"delay [{du}]")
    tick_labels(ax_d, xs, [p["layer"] for p in per])
    ax_d.set_xlabel("layer")
    used = [s for s in SCHEDULE_NAMES if s in scheds]
    handles = [Patch(color=SCHEDULE_COLOURS[s], label=f"{s} ({plural(scheds.count(s), 'layer')})") for s in used]
    ax_e.legend(handles=handles, title="schedule", fontsize=8, title_fontsize=8, loc="upper left",
                bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    m = evaluation.metrics
    area = m.get("area_mm2")
    sub = join(hardware_text(sol.hardware, area),
               f"objective {prepared.instance.objective} = {fmt_num(evaluation.objective)}"
               if evaluation.objective is not None else "",
               f"Σ energy {sum(_finite(v) for v in energy) / es:.4g} {eu}",
               f"Σ delay {sum(_finite(v) for v in delay) / ds:.4g} {du}")
    set_titles(fig, title or f"{subject}: per-layer energy and delay by schedule", sub,
               evaluation=evaluation)
    return fig


def plot_compare_layers(results: Sequence[Result], prepared: Prepared | None, title: str | None) -> Figure:
    fig, ax_e, ax_d, shown, names, any_shown = layer_comparison_frame(
        results, title, "per-layer energy and delay per method", per=0.2, base=5.0, minimum=10.0)
    if not any_shown:
        return fig
    n = len(names)
    (es, eu), (ds, du) = layer_scales(shown, names, ("energy_j", "J"), ("delay_cycles", "cycles"))
    xs = np.arange(n)
    width = 0.84 / len(shown)
    used: set[str] = set()
    for i, r in enumerate(shown):
        off = (i - (len(shown) - 1) / 2) * width
        per = {p["layer"]: p for p in r.metrics["layers"]}
        hatches = [SCHEDULE_HATCHES.get(per[x]["schedule"], "") if x in per else "" for x in names]
        used |= {per[x]["schedule"] for x in names if x in per}
        c = colour(results.index(r))
        for ax, key, sc in ((ax_e, "energy_j", es), (ax_d, "delay_cycles", ds)):
            vals = [_finite(v) / sc for v in layer_values(r, names, key)]
            bars = ax.bar(xs + off, vals, width=width, color=c, edgecolor="white", linewidth=0.4)
            for bar, h in zip(bars, hatches, strict=True):
                bar.set_hatch(h)
    method_handles = [Patch(color=colour(results.index(r)),
                            label=f"{r.method}: {hardware_text(r.solution['hardware']) if r.solution else ''}")
                      for r in shown]
    sched_handles = [Patch(facecolor="#777777", edgecolor="white", hatch=SCHEDULE_HATCHES[s], label=s)
                     for s in SCHEDULE_NAMES if s in used]
    ax_e.legend(handles=method_handles, title="method: hardware", fontsize=8, title_fontsize=8, loc="upper left",
                bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax_d.legend(handles=sched_handles, title="schedule (hatch)", fontsize=8, title_fontsize=8, loc="upper left",
                bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax_e.set_ylabel(f"energy [{eu}]")
    ax_d.set_ylabel(f"delay [{du}]")
    for ax in (ax_e, ax_d):
        ax.grid(axis="y", alpha=0.3)
    tick_labels(ax_d, xs, names)
    ax_d.set_xlabel("layer")
    set_titles(fig, comparison_title(results, title, "per-layer energy and delay per method"),
               join(f"objective {results[0].objective_name}", missing_note(results, shown)))
    return fig


SOLUTION_KINDS: dict[str, PlotKind] = {
    "layers": PlotKind("layers", "each layer's energy and delay, coloured by its schedule; hardware in the title",
                       plot_layers),
}
COMPARISON_KINDS: dict[str, PlotKind] = {
    "layers": PlotKind("layers", "each method's per-layer energy and delay (hatched by schedule)",
                       plot_compare_layers),
}
