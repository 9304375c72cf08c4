"""Mapping plots: the loop nest per memory level, the energy and access breakdown per level and operand, and the
per-layer latency and energy of a network — for one solution, and per method for a comparison.

Solution kinds:

* ``mapping`` (default) — one layer (the only one, or the one with the largest objective value): its loop nest as
  text (memory levels outermost first, temporal loops in order with their factors, ``par_for`` for spatial factors
  and the array axis they use) beside its energy per level (stacked by operand, network and MACs) and its accesses
  per level and operand (reads and writes, log scale);
* ``loopnest`` — the loop nest of every distinct layer mapping (layers of one shape share it), as text panels;
* ``breakdown`` — energy and accesses per level and operand summed over every layer of the network;
* ``layers`` — each layer's energy and latency (and utilization).

Comparison kind ``layers`` (default): each method's per-layer energy and latency as grouped bars (one bar group per
method when the instance has one layer).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from dlaopt.formulations.mapping.cost import Access, CostReport, evaluate_mapping
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest
from dlaopt.formulations.mapping.mapping import loop_nest_text
from dlaopt.formulations.mapping.problem import MappingData, MappingSolution
from dlaopt.plots.common import (
    WARN_COLOUR,
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
    log_axis,
    missing_note,
    new_figure,
    number_axis,
    plural,
    set_titles,
    si_scale,
    tick_labels,
)

if TYPE_CHECKING:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.harness import Prepared, Result

SOLUTION_TYPE = MappingSolution
OPERAND_COLOURS = {"I": "#4e79a7", "W": "#f28e2b", "O": "#59a14f", "network": "#bab0ac", "mac": "#b07aa1"}
OPERAND_NAMES = {"I": "inputs (I)", "W": "weights (W)", "O": "outputs / partial sums (O)", "network": "on-chip network",
                 "mac": "MACs"}
MAX_NEST_PANELS = 9


def _reports(data: MappingData, sol: MappingSolution) -> dict[str, CostReport]:
    return {n.name: evaluate_mapping(n, data.layer_arch(n.name, sol.shapes.get(n.name)), sol.mappings[n.name])
            for n in data.nests if n.name in sol.mappings}


def _value(report: CostReport, objective: str) -> float:
    v = report.objective(objective) if report.valid else math.inf
    return v if math.isfinite(v) else -1.0


def _subtitle(prepared: Prepared, evaluation: Evaluation) -> str:
    m = evaluation.metrics
    if not m:
        return ""
    unit = {"energy": "pJ", "latency": "cycles", "edp": "pJ·cycles"}.get(prepared.instance.objective, "")
    obj = prepared.instance.objective
    return join(f"objective {obj} = {fmt_num(evaluation.objective)} {unit}",
                f"energy {fmt_num(m['energy_pj'])} pJ" if obj != "energy" else "",
                f"latency {fmt_num(m['latency_cycles'])} cycles" if obj != "latency" else "",
                f"utilization {100 * m['utilization']:.1f} %", plural(len(m["layers"]), "layer"))


# ================================================================================================ pieces
def _nest_text(nest: LoopNest, data: MappingData, sol: MappingSolution, report: CostReport | None,
               layers: Sequence[str] = ()) -> str:
    head = f"{nest.name} — {nest.kind}\n{nest.shape_text}"
    if len(layers) > 1:
        others = [x for x in layers if x != nest.name]
        also = "also " + ", ".join(others[:6]) + (f" and {len(others) - 6} more" if len(others) > 6 else "")
        head += "\n" + "\n".join(textwrap.wrap(also, 44))
    arch = data.layer_arch(nest.name, sol.shapes.get(nest.name))  # its bypasses and PE-array shape
    body = loop_nest_text(nest, arch, sol.mappings[nest.name])
    tail = ""
    if report is not None and report.valid:
        tiles = []
        for lv in arch.levels[::-1][1:]:
            tb = report.tile_bytes.get(lv.name, {})
            if tb:
                tiles.append(f"  {lv.name}: " + ", ".join(f"{t} {tb[t]:,} B" for t in OPERANDS if t in tb))
        tail = "\n\ntile bytes per instance:\n" + "\n".join(tiles) if tiles else ""
    return f"{head}\n\n{body}{tail}"


def _fit_size(fig: Figure, width_in: float, height_in: float, texts: Sequence[str], max_size: float) -> float:
    """The largest monospace font size (pt) at which every text fits a ``width_in`` x ``height_in`` box: a
    character is ~0.6 em wide and a line ~1.3 em high (1 pt = 1/72 in)."""
    longest = max((len(line) for t in texts for line in t.splitlines()), default=1)
    lines = max((len(t.splitlines()) for t in texts), default=1)
    size = min(max_size, 72 * width_in / (0.62 * max(longest, 1)), 72 * height_in / (1.3 * max(lines, 1)))
    return max(size, 4.5)


def _draw_text(ax: Axes, text: str, size: float) -> None:
    ax.set_axis_off()
    ax.text(0.0, 1.0, text, family="monospace", fontsize=size, va="top", ha="left", transform=ax.transAxes)


def _level_order(data: MappingData) -> list[str]:
    return [lv.name for lv in data.arch.levels][::-1]  # outermost (main memory) first


def _sum_breakdown(reports: Sequence[tuple[CostReport, int]]) -> tuple[dict[str, float], dict[str, dict[str, Access]]]:
    energy: dict[str, float] = {}
    acc: dict[str, dict[str, Access]] = {}
    for r, mult in reports:
        for k, v in r.energy_breakdown.items():
            energy[k] = energy.get(k, 0.0) + mult * v
        for lv, d in r.accesses.items():
            for t, a in d.items():
                cur = acc.setdefault(lv, {}).setdefault(t, Access())
                cur.reads += mult * a.reads
                cur.writes += mult * a.writes
                cur.network += mult * a.network
    return energy, acc


def _draw_energy(ax: Axes, levels: Sequence[str], energy: dict[str, float]) -> None:
    cats = [*levels, "MACs"]
    xs = np.arange(len(cats))
    parts = [*OPERANDS, "network"]
    scale, unit = si_scale([sum(energy.values())], "pJ")
    bottom = np.zeros(len(cats))
    for part in parts:
        vals = np.array([energy.get(f"{lv}/{part}", 0.0) for lv in levels] + [0.0]) / scale
        if vals.any():
            ax.bar(xs, vals, bottom=bottom, color=OPERAND_COLOURS[part], width=0.6, label=OPERAND_NAMES[part])
            bottom += vals
    mac = energy.get("mac", 0.0) / scale
    ax.bar([xs[-1]], [mac], color=OPERAND_COLOURS["mac"], width=0.6, label=OPERAND_NAMES["mac"])
    bottom[-1] += mac
    total = sum(energy.values())
    for x, v in zip(xs, bottom, strict=True):
        share = 100 * v * scale / total if total else 0.0
        ax.annotate(f"{v:.3g}\n{share:.0f} %", (x, v), xytext=(0, 2), textcoords="offset points", ha="center",
                    va="bottom", fontsize=8)
    tick_labels(ax, xs, cats)
    ax.set_ylabel(f"energy [{unit}]")
    ax.set_title("energy per level (stacked by operand)", fontsize=10)
    ax.set_ylim(0, max(float(bottom.max()), 1e-12) * 1.18)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3, frameon=False)


def _draw_accesses(ax: Axes, levels: Sequence[str], acc: dict[str, dict[str, Access]]) -> None:
    xs = np.arange(len(levels))
    width = 0.8 / (2 * len(OPERANDS))
    drawn: list[float] = []
    for i, t in enumerate(OPERANDS):
        for j, (what, hatch) in enumerate((("reads", ""), ("writes", "////"))):
            off = (2 * i + j - (2 * len(OPERANDS) - 1) / 2) * width
            vals = np.array([float(getattr(acc.get(lv, {}).get(t, Access()), what)) for lv in levels])
            vals[vals <= 0] = np.nan
            if np.isfinite(vals).any():
                drawn += vals[np.isfinite(vals)].tolist()
                ax.bar(xs + off, vals, width=width, color=OPERAND_COLOURS[t], hatch=hatch, edgecolor="white",
                       linewidth=0.5)
    if not drawn:
        empty_note(ax, "no accesses")
        return
    log = max(drawn) / min(drawn) > 50
    if log:
        ax.set_yscale("log")
        log_axis(ax)
        ax.set_ylim(min(drawn) / 2, max(drawn) * 3)
    else:
        number_axis(ax)
        ax.set_ylim(0, max(drawn) * 1.1)
    tick_labels(ax, xs, list(levels))
    ax.set_ylabel("accesses [elements]")
    ax.set_title("accesses per level and operand" + (" (log scale)" if log else ""), fontsize=10)
    ax.grid(axis="y", alpha=0.3, which="major")
    handles = [Patch(color=OPERAND_COLOURS[t], label=OPERAND_NAMES[t]) for t in OPERANDS]
    handles += [Patch(facecolor="#999999", label="reads"),
                Patch(facecolor="#999999", hatch="////", edgecolor="white", label="writes")]
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3, frameon=False)


# ================================================================================================ solution kinds
def plot_mapping(prepared: Prepared, sol: MappingSolution, evaluation: Evaluation, title: str | None,
                 subject: str) -> Figure:
    data: MappingData = prepared.data
    reports = _reports(data, sol)
    fig = new_figure(14.0, 6.0)
    if not reports:
        ax = fig.add_subplot()
        empty_note(ax, "the solution maps no layer of this instance")
        set_titles(fig, title or f"{subject}: mapping", evaluation=evaluation)
        return fig
    name = max(reports, key=lambda n: _value(reports[n], data.objective))
    nest = next(n for n in data.nests if n.name == name)
    report = reports[name]
    group = next(g for g in data.groups if any(data.nests[i].name == name for i in g))
    grid = fig.add_gridspec(1, 3, width_ratios=[1.0, 1.0, 1.15])
    ax_text = fig.add_subplot(grid[0, 0])
    ax_e = fig.add_subplot(grid[0, 1])
    ax_a = fig.add_subplot(grid[0, 2])
    levels = _level_order(data)
    text = _nest_text(nest, data, sol, report, [data.nests[i].name for i in group])
    _draw_text(ax_text, text, _fit_size(fig, 0.95 * fig.get_figwidth() / 3.15, 0.8 * fig.get_figheight(), [text],
                                        10.0))
    ax_text.set_title("loop nest (outermost first)", fontsize=10, loc="left")
    if report.valid:
        _draw_energy(ax_e, levels, report.energy_breakdown)
        _draw_accesses(ax_a, levels, report.accesses)
    else:
        for ax in (ax_e, ax_a):
            empty_note(ax, "invalid mapping: " + "; ".join(report.violations[:2]))
    which = "" if len(data.nests) == 1 else f" — layer {name} (largest {data.objective} of {len(data.nests)})"
    set_titles(fig, title or f"{subject}: mapping{which}",
               join(f"layer energy {fmt_num(report.energy_pj)} pJ",
                    f"latency {fmt_num(report.latency_cycles)} cycles",
                    f"utilization {100 * report.utilization:.1f} %") if report.valid else "",
               evaluation=evaluation)
    return fig


def plot_loopnests(prepared: Prepared, sol: MappingSolution, evaluation: Evaluation, title: str | None,
                   subject: str) -> Figure:
    data: MappingData = prepared.data
    reports = _reports(data, sol)
    groups = [g for g in data.groups if data.nests[g[0]].name in sol.mappings]
    groups.sort(key=lambda g: -len(g) * _value(reports[data.nests[g[0]].name], data.objective))
    shown = groups[:MAX_NEST_PANELS]
    texts = [_nest_text(data.nests[g[0]], data, sol, reports[data.nests[g[0]].name],
                        [data.nests[i].name for i in g]) for g in shown]
    n = max(len(texts), 1)
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    rows = math.ceil(n / cols)
    longest = max((max(len(x) for x in t.splitlines()) for t in texts), default=40)
    height = max((len(t.splitlines()) for t in texts), default=10)
    fig = new_figure(cols * max(5.5, 0.085 * longest + 0.8), 1.2 + rows * max(2.2, 0.155 * height + 0.3))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    size = _fit_size(fig, 0.95 * fig.get_figwidth() / cols, (fig.get_figheight() - 1.2) / rows, texts, 9.0)
    for ax, text in zip(axes, texts, strict=False):
        _draw_text(ax, text, size)
    for ax in axes[len(texts):]:
        ax.set_axis_off()
    if not texts:
        empty_note(axes[0], "the solution maps no layer of this instance")
    more = len(groups) - len(shown)
    set_titles(fig, title or f"{subject}: loop nests per memory level (outermost first)",
               join(f"objective {prepared.instance.objective} = {fmt_num(evaluation.objective)}",
                    plural(len(groups), "distinct layer mapping") + (f", the {len(shown)} costliest shown" if more
                                                                      else "")),
               evaluation=evaluation)
    return fig


def plot_breakdown(prepared: Prepared, sol: MappingSolution, evaluation: Evaluation, title: str | None,
                   subject: str) -> Figure:
    data: MappingData = prepared.data
    reports = _reports(data, sol)
    valid = [(r, 1) for r in reports.values() if r.valid]
    fig = new_figure(13.0, 5.6)
    ax_e, ax_a = fig.subplots(1, 2)
    if not valid:
        for ax in (ax_e, ax_a):
            empty_note(ax, "no valid layer mapping")
    else:
        energy, acc = _sum_breakdown(valid)
        levels = _level_order(data)
        _draw_energy(ax_e, levels, energy)
        _draw_accesses(ax_a, levels, acc)
    scope = "one layer" if len(data.nests) == 1 else f"summed over {len(valid)} layers"
    set_titles(fig, title or f"{subject}: energy and accesses per level and operand ({scope})",
               _subtitle(prepared, evaluation), evaluation=evaluation)
    return fig


def plot_layers(prepared: Prepared, sol: MappingSolution, evaluation: Evaluation, title: str | None,
                subject: str) -> Figure:
    data: MappingData = prepared.data
    reports = _reports(data, sol)
    names = [n.name for n in data.nests if n.name in reports]
    fig = new_figure(category_width(len(names), per=0.32, base=3.0, minimum=9.0), 7.5)
    ax_e, ax_l = fig.subplots(2, 1, sharex=True)
    if not names:
        empty_note(ax_e, "the solution maps no layer of this instance")
        set_titles(fig, title or f"{subject}: per-layer energy and latency", evaluation=evaluation)
        return fig
    xs = np.arange(len(names))
    energy = [reports[n].energy_pj if reports[n].valid else 0.0 for n in names]
    latency = [reports[n].latency_cycles if reports[n].valid else 0.0 for n in names]
    util = [reports[n].utilization for n in names]
    es, eu = si_scale(energy, "pJ")
    ls, lu = si_scale(latency, "cycles")
    ax_e.bar(xs, np.array(energy) / es, color="#4e79a7", width=0.75)
    ax_l.bar(xs, np.array(latency) / ls, color="#f28e2b", width=0.75)
    ax_u = ax_l.twinx()
    ax_u.plot(xs, [100 * u for u in util], color="#333333", marker="o", ms=4, lw=1 if len(xs) > 1 else 0)
    ax_u.set_ylim(0, 105)
    ax_u.set_ylabel("MAC utilization [%] (black dots)")
    if len(xs) < 4:
        ax_l.set_xlim(-1.5, len(xs) + 0.5)
    for i, n in enumerate(names):
        if not reports[n].valid:
            ax_e.annotate("invalid", (i, 0), ha="center", va="bottom", color=WARN_COLOUR, fontsize=7)
    ax_e.set_ylabel(f"energy [{eu}]")
    ax_l.set_ylabel(f"latency [{lu}]")
    for ax in (ax_e, ax_l):
        ax.grid(axis="y", alpha=0.3)
    tick_labels(ax_l, xs, names)
    ax_l.set_xlabel("layer (workload order)")
    set_titles(fig, title or f"{subject}: per-layer energy and latency",
               _subtitle(prepared, evaluation), evaluation=evaluation)
    return fig


# ================================================================================================ comparison
def plot_compare_layers(results: Sequence[Result], prepared: Prepared | None, title: str | None) -> Figure:
    fig, ax_e, ax_l, shown, layer_names, any_shown = layer_comparison_frame(
        results, title, "per-layer energy and latency per method", per=0.22, base=4.0, minimum=9.0)
    if not any_shown:
        return fig
    n_layers = len(layer_names)

    def values(r: Result, key: str) -> list[float]:
        return layer_values(r, layer_names, key)

    (es, eu), (ls, lu) = layer_scales(shown, layer_names, ("energy_pj", "pJ"), ("latency_cycles", "cycles"))
    if n_layers == 1:  # one layer: one bar per method, labelled with its value
        xs = np.arange(len(shown))
        cols = [colour(results.index(r)) for r in shown]
        for ax, key, sc in ((ax_e, "energy_pj", es), (ax_l, "latency_cycles", ls)):
            vals = np.array([values(r, key)[0] for r in shown]) / sc
            bars = ax.bar(xs, vals, color=cols, width=0.6)
            best = np.nanmin(vals)
            for b, v in zip(bars, vals, strict=True):
                ratio = f" (×{v / best:.3f})" if best > 0 and v != best else ""
                ax.annotate(f"{v:.4g}{ratio}", (b.get_x() + b.get_width() / 2, v), xytext=(0, 2),
                            textcoords="offset points", ha="center", va="bottom", fontsize=8)
            ax.margins(y=0.15)
        tick_labels(ax_l, xs, [r.method for r in shown])
        ax_l.set_xlabel(f"method (layer {layer_names[0]})")
    else:
        xs = np.arange(n_layers)
        width = 0.84 / len(shown)
        for i, r in enumerate(shown):
            off = (i - (len(shown) - 1) / 2) * width
            c = colour(results.index(r))
            ax_e.bar(xs + off, np.array(values(r, "energy_pj")) / es, width=width, color=c,
                     label=f"{r.method} (total {fmt_num(r.metrics['energy_pj'])} pJ)")
            ax_l.bar(xs + off, np.array(values(r, "latency_cycles")) / ls, width=width, color=c,
                     label=f"{r.method} (total {fmt_num(r.metrics['latency_cycles'])} cycles)")
        ax_e.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        ax_l.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        tick_labels(ax_l, xs, layer_names)
        ax_l.set_xlabel("layer (workload order)")
    ax_e.set_ylabel(f"energy [{eu}]")
    ax_l.set_ylabel(f"latency [{lu}]")
    for ax in (ax_e, ax_l):
        ax.grid(axis="y", alpha=0.3)
    set_titles(fig, comparison_title(results, title, "per-layer energy and latency per method"),
               join(f"objective {results[0].objective_name}", missing_note(results, shown)))
    return fig


SOLUTION_KINDS: dict[str, PlotKind] = {
    "mapping": PlotKind("mapping", "the costliest layer's loop nest with its energy and accesses per level and "
                        "operand", plot_mapping),
    "loopnest": PlotKind("loopnest", "the loop nest of every distinct layer mapping, per memory level",
                         plot_loopnests),
    "breakdown": PlotKind("breakdown", "energy and accesses per level and operand, summed over the network",
                          plot_breakdown),
    "layers": PlotKind("layers", "each layer's energy, latency and utilization", plot_layers),
}
COMPARISON_KINDS: dict[str, PlotKind] = {
    "layers": PlotKind("layers", "each method's per-layer energy and latency", plot_compare_layers),
}

