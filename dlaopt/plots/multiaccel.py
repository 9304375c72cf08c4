"""Multi-accelerator (MAGMA) plots: the schedule as the fluid evaluator simulates it.

``gantt`` (solution) — a lane per sub-accelerator with its jobs in order (coloured by tenant, named where there is
room), and under it the system bandwidth each sub-accelerator is allocated over time (stacked), against the system
bandwidth; the simulation is :meth:`FluidEvaluator.simulate` (the problem's ground truth).

Comparison kinds: ``gantt`` — one Gantt panel per method on a shared time axis, each with its makespan (needs the
prepared instance, to re-simulate; the default when it is given); ``makespan`` — each method's makespan and the
share of it every sub-accelerator is busy (from the results' metrics alone; the default otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, check
from dlaopt.formulations.multiaccel.model import Assignment, JobTable, MultiAccelData, Simulation
from dlaopt.plots.common import (
    PALETTE,
    PALETTE20,
    WARN_COLOUR,
    PlotKind,
    category_width,
    colour,
    comparison_title,
    empty_note,
    join,
    missing_note,
    new_figure,
    ok,
    set_titles,
    solved,
    tick_labels,
    time_scale,
)

if TYPE_CHECKING:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.harness import Prepared, Result

SOLUTION_TYPE = Assignment
MAX_TENANT_LEGEND = 20


def _tenant_colours(table: JobTable) -> dict[str, str]:
    tenants = list(dict.fromkeys(sorted(set(table.tenants))))
    pal = PALETTE if len(tenants) <= len(PALETTE) else PALETTE20
    return {t: colour(i, pal) for i, t in enumerate(tenants)}


def _accelerator_colours(n: int) -> list[str]:
    from matplotlib import colormaps

    cmap = colormaps["Set2" if n <= 8 else "tab20b"]
    return [cmap(i % cmap.N) for i in range(n)]  # type: ignore[misc]


def _draw_lanes(ax: Axes, sim: Simulation, table: JobTable, tcol: dict[str, str], scale: float,
                span: float) -> None:
    """Lanes per sub-accelerator; the lane names on the colour of the sub-accelerator in the bandwidth panel."""
    n_acc = table.n_accelerators
    for j in range(table.n_jobs):
        a = int(sim.accelerator[j])
        if a < 0:
            continue
        x0, x1 = float(sim.start[j]) * scale, float(sim.end[j]) * scale
        ax.broken_barh([(x0, max(x1 - x0, 0.0))], (a - 0.38, 0.76), facecolors=tcol[table.tenants[j]],
                       edgecolor="white", linewidth=0.6)
        if (x1 - x0) >= 0.05 * span * scale:
            name = table.jobs[j].removeprefix(f"{table.tenants[j]}/")  # the colour says the tenant
            ax.text((x0 + x1) / 2, a, _short(name, max(3, int(60 * (x1 - x0) / (span * scale)))),
                    ha="center", va="center", fontsize=7, clip_on=True)
    ax.set_yticks(range(n_acc))
    ax.set_yticklabels(table.accelerators, fontsize=8)
    for label, c in zip(ax.get_yticklabels(), _accelerator_colours(n_acc), strict=True):
        label.set_bbox({"facecolor": c, "edgecolor": "none", "pad": 1.5})
    ax.set_ylim(n_acc - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: max(width - 1, 1)] + "…"


def _draw_bandwidth(ax: Axes, sim: Simulation, table: JobTable, system_bandwidth: float, scale: float,
                    acol: Sequence[str]) -> None:
    n_acc = table.n_accelerators
    segs = [s for s in sim.segments if s.t1 > s.t0]
    if not segs:
        empty_note(ax, "no bandwidth used")
        return
    t0 = np.array([s.t0 for s in segs]) * scale
    width = np.array([s.t1 - s.t0 for s in segs]) * scale
    per = np.zeros((len(segs), n_acc))
    for i, s in enumerate(segs):
        for j, alloc in zip(s.jobs, s.allocation, strict=True):
            per[i, int(sim.accelerator[j])] += alloc
    per /= 1e9  # GB/s
    bottom = np.zeros(len(segs))
    for a in range(n_acc):
        if per[:, a].any():
            ax.bar(t0, per[:, a], width=width, bottom=bottom, align="edge", color=acol[a], linewidth=0,
                   label=table.accelerators[a])
            bottom += per[:, a]
    ax.axhline(system_bandwidth / 1e9, color="#333333", ls="--", lw=1.2,
               label=f"system bandwidth {system_bandwidth / 1e9:.4g} GB/s")
    ax.set_ylim(0, max(system_bandwidth / 1e9, float(bottom.max())) * 1.12)
    ax.set_ylabel("bandwidth [GB/s]")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              title="allocated to", title_fontsize=8)


def _simulate(data: MultiAccelData, sol: Assignment) -> tuple[Simulation | None, str]:
    problems = check(data, sol)
    if problems:
        return None, problems[0]
    try:
        return FluidEvaluator(data).simulate(sol), ""
    except ValueError as exc:
        return None, str(exc)


def plot_gantt(prepared: Prepared, sol: Assignment, evaluation: Evaluation, title: str | None,
               subject: str) -> Figure:
    data: MultiAccelData = prepared.data
    table = data.table
    n_acc = table.n_accelerators
    fig = new_figure(13.0, 2.6 + 0.42 * n_acc + 2.6)
    ax_g, ax_b = fig.subplots(2, 1, sharex=True, height_ratios=[max(1.2, 0.42 * n_acc), 2.4])
    sim, why = _simulate(data, sol)
    if sim is None:
        empty_note(ax_g, f"the schedule cannot be simulated: {why}")
        ax_b.set_axis_off()
        set_titles(fig, title or f"{subject}: schedule", evaluation=evaluation)
        return fig
    span = sim.makespan or 1e-12
    scale, unit = time_scale(span)
    tcol = _tenant_colours(table)
    _draw_lanes(ax_g, sim, table, tcol, scale, span)
    ax_g.axvline(span * scale, color="#333333", lw=1.0, ls=":")
    if len(tcol) <= MAX_TENANT_LEGEND:
        ax_g.legend(handles=[Patch(color=c, label=t) for t, c in tcol.items()], title="tenant", fontsize=8,
                    title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax_g.set_title("jobs per sub-accelerator, in order (coloured by tenant)", fontsize=9, loc="left")
    _draw_bandwidth(ax_b, sim, table, data.system_bandwidth, scale, _accelerator_colours(n_acc))
    ax_b.set_title("system bandwidth allocated over time (stacked by sub-accelerator)", fontsize=9, loc="left")
    ax_b.set_xlim(0, span * scale * 1.01)
    ax_b.set_xlabel(f"time [{unit}]")
    m = evaluation.metrics
    sub = join(f"makespan {sim.makespan * scale:.4g} {unit}",
               f"mean completion {sim.mean_completion * scale:.4g} {unit}",
               f"throughput {sim.throughput / 1e9:.4g} GOPS",
               f"bandwidth utilization {100 * m['bandwidth_utilization']:.1f} %" if m else "",
               f"{table.n_jobs} jobs on {n_acc} sub-accelerators")
    set_titles(fig, title or f"{subject}: schedule", sub, evaluation=evaluation)
    return fig


def plot_compare_gantt(results: Sequence[Result], prepared: Prepared | None, title: str | None) -> Figure:
    assert prepared is not None
    data: MultiAccelData = prepared.data
    table = data.table
    shown = [r for r in solved(results) if r.solution]
    sims: list[tuple[Result, Simulation]] = []
    for r in shown:
        sim, _ = _simulate(data, prepared.problem.solution_from_dict(data, r.solution or {}))
        if sim is not None:
            sims.append((r, sim))
    n_acc = table.n_accelerators
    fig = new_figure(13.0, 1.6 + max(len(sims), 1) * (0.75 + 0.3 * n_acc))
    if not sims:
        ax = fig.add_subplot()
        empty_note(ax, "no method has a verified schedule")
        set_titles(fig, comparison_title(results, title, "schedules per method"), missing_note(results, shown))
        return fig
    best = min(s.makespan for _, s in sims)
    worst = max(s.makespan for _, s in sims)
    shared = worst <= 2.5 * best  # else every panel gets its own time axis, or the good schedules vanish
    axes = fig.subplots(len(sims), 1, sharex=shared, squeeze=False)[:, 0]
    tcol = _tenant_colours(table)
    for ax, (r, sim) in zip(axes, sims, strict=True):
        span = (worst if shared else sim.makespan) or 1e-12
        scale, unit = time_scale(span)
        _draw_lanes(ax, sim, table, tcol, scale, span)
        ax.axvline(sim.makespan * scale, color=WARN_COLOUR if sim.makespan > best * (1 + 1e-9) else "#333333",
                   lw=1.4, ls="--")
        ratio = f", ×{sim.makespan / best:.3f} the best" if best > 0 and sim.makespan > best * (1 + 1e-9) else ""
        own = "" if shared else f" — time axis [{unit}] of its own"
        ax.set_title(f"{r.method} ({r.status.value}): makespan {sim.makespan * scale:.4g} {unit}{ratio}{own}",
                     fontsize=9, loc="left")
        ax.set_xlim(0, span * scale * 1.02)
    if shared:
        axes[-1].set_xlabel(f"time [{time_scale(worst or 1e-12)[1]}]")
    if len(tcol) <= MAX_TENANT_LEGEND:
        axes[0].legend(handles=[Patch(color=c, label=t) for t, c in tcol.items()], title="tenant", fontsize=8,
                       title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    set_titles(fig, comparison_title(results, title, "schedules per method (dashed: makespan)"),
               join(f"system bandwidth {data.system_bandwidth / 1e9:.4g} GB/s", missing_note(results, shown)))
    return fig


def plot_compare_makespan(results: Sequence[Result], prepared: Prepared | None, title: str | None) -> Figure:
    shown = solved(results)
    fig = new_figure(category_width(len(results), per=1.2, base=4.0, minimum=10.0), 5.5)
    ax_m, ax_b = fig.subplots(1, 2, width_ratios=[1.0, 1.4])
    if not shown:
        empty_note(ax_m, "no method has a verified solution")
        ax_b.set_axis_off()
        set_titles(fig, comparison_title(results, title, "makespan per method"), missing_note(results, shown))
        return fig
    xs = np.arange(len(results))
    spans = [r.metrics.get("makespan_s", math.nan) if ok(r) else math.nan for r in results]
    scale, unit = time_scale(max(v for v in spans if math.isfinite(v)))
    bars = ax_m.bar(xs, [v * scale if math.isfinite(v) else 0.0 for v in spans],
                    color=[colour(i) for i in range(len(results))], width=0.65)
    best = min(v for v in spans if math.isfinite(v))
    for bar, v, r in zip(bars, spans, results, strict=True):
        text = (f"{v * scale:.4g}" + (f"\n×{v / best:.3f}" if v > best else "") if math.isfinite(v)
                else f"no solution\n{r.status.value}")
        ax_m.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 2),
                      textcoords="offset points", ha="center", va="bottom", fontsize=8)
        if r.bound is not None and r.objective_name == "makespan" and math.isfinite(r.bound):
            ax_m.plot([bar.get_x(), bar.get_x() + bar.get_width()], [r.bound * scale] * 2, color="black", lw=2)
    tick_labels(ax_m, xs, [r.method for r in results])
    ax_m.set_ylabel(f"makespan [{unit}]")
    ax_m.margins(y=0.18)
    ax_m.grid(axis="y", alpha=0.3)
    ax_m.set_title("makespan (black: proven bound)", fontsize=9, loc="left")
    accs = list(dict.fromkeys(a for r in shown for a in r.metrics.get("accelerator_busy", {})))
    width = 0.84 / max(len(shown), 1)
    xa = np.arange(len(accs))
    for i, r in enumerate(shown):
        busy = r.metrics.get("accelerator_busy", {})
        ax_b.bar(xa + (i - (len(shown) - 1) / 2) * width, [100 * busy.get(a, 0.0) for a in accs], width=width,
                 color=colour(results.index(r)), label=r.method)
    tick_labels(ax_b, xa, accs)
    ax_b.set_ylim(0, 110)
    ax_b.set_ylabel("busy [% of the makespan]")
    ax_b.set_title("busy share per sub-accelerator", fontsize=9, loc="left")
    ax_b.grid(axis="y", alpha=0.3)
    ax_b.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    set_titles(fig, comparison_title(results, title, "makespan and sub-accelerator use per method"),
               missing_note(results, shown))
    return fig


def default_comparison_kind(prepared: Prepared | None) -> str:
    """``gantt`` when the prepared instance is at hand (to re-simulate), else ``makespan``."""
    return "gantt" if prepared is not None else "makespan"


SOLUTION_KINDS: dict[str, PlotKind] = {
    "gantt": PlotKind("gantt", "jobs per sub-accelerator over time (by tenant) and the bandwidth each is allocated",
                      plot_gantt),
}
COMPARISON_KINDS: dict[str, PlotKind] = {
    "gantt": PlotKind("gantt", "each method's schedule on a shared time axis (needs the prepared instance)",
                      plot_compare_gantt, needs_prepared=True),
    "makespan": PlotKind("makespan", "each method's makespan and per-sub-accelerator busy share",
                         plot_compare_makespan),
}
