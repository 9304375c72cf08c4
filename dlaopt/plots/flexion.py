"""The Flexion figure (seed 001, Chapter 3): per isolation study, the proven optima of runtime, energy and EDP of each
flexibility class normalised to the study's InFlex accelerator (bars, per layer and for the network; the thesis'
GA figures as black markers), and the workload's map space drawn to scale as in the chapter's Venn diagrams: per
class, the workload-dependent map space W (outline, area 1) and the part the accelerator supports, A∩W (filled,
area W-F; dashed: the thesis' W-F).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from dlaopt.plots.common import colour, empty_note, new_figure, set_titles, tick_labels

METRICS: tuple[tuple[str, str], ...] = (("latency", "runtime"), ("energy", "energy"), ("edp", "EDP"))
STUDY_NAMES: dict[str, str] = {"tile": "Tile", "order": "Order", "parallel": "Parallelism", "shape": "Shape"}


def _bars(ax: Axes, rows: Sequence[Mapping[str, Any]], classes: Sequence[str], layers: Sequence[str],
          objective: str, label: str) -> None:
    idx = {(r["layer"], r["class"]): r for r in rows if r["objective"] == objective}
    n = len(classes)
    width = 0.8 / max(1, n)
    values = []
    for j, c in enumerate(classes):
        xs, ys, ts, txs = [], [], [], []
        for i, la in enumerate(layers):
            r = idx.get((la, c))
            x = i - 0.4 + width * (j + 0.5)
            if r is not None and r.get("normalised") is not None and r["normalised"] > 0:
                xs.append(x)
                ys.append(r["normalised"])
                values.append(r["normalised"])
            if r is not None and r.get("thesis_value") is not None and r["thesis_value"] > 0:
                txs.append(x)
                ts.append(r["thesis_value"])
                values.append(r["thesis_value"])
        ax.bar(xs, ys, width * 0.92, color=colour(j), label=c if objective == "latency" else None)
        ax.plot(txs, ts, linestyle="none", marker="_", markersize=9, markeredgewidth=2, color="black",
                label="thesis (GA)" if objective == "latency" and j == 0 else None)
    if not values:
        empty_note(ax, "no results")
        return
    ax.set_yscale("log")
    lo, hi = min(values), max(values)
    ax.set_ylim(10 ** math.floor(math.log10(lo) - 0.05), 10 ** math.ceil(math.log10(hi) + 0.05))
    ax.axhline(1.0, color="#888888", linewidth=0.8)
    tick_labels(ax, range(len(layers)), list(layers))
    ax.set_title(f"{label} (÷ InFlex)", fontsize=10)


def _venn(ax: Axes, spaces: Sequence[Mapping[str, Any]], classes: Sequence[str], layer: str, axis: str) -> None:
    """Per class: W (outline, area 1), A∩W (filled, area W-F) and the thesis' W-F (``thesis_wf``, dashed), drawn to
    scale."""
    idx = {d["class"]: d for d in spaces if d["layer"] == layer and d["axis"] == axis}
    ax.set_aspect("equal")
    ax.axis("off")
    r_w = 0.42
    for j, c in enumerate(classes):
        cx = j + 0.5
        ax.add_patch(Circle((cx, 0.5), r_w, fill=False, edgecolor="#555555", linewidth=1.0))
        d = idx.get(c)
        wf = d.get("wf") if d is not None else None
        if wf:
            ax.add_patch(Circle((cx, 0.5), r_w * math.sqrt(min(1.0, wf)), color=colour(j), alpha=0.85))
        th = d.get("thesis_wf") if d is not None else None
        if th:
            ax.add_patch(Circle((cx, 0.5), r_w * math.sqrt(min(1.0, th)), fill=False, edgecolor="black",
                                linestyle="--", linewidth=0.9))
        text = f"{c}\nW-F {wf:.2g}" if wf is not None else c
        ax.text(cx, -0.05, text, ha="center", va="top", fontsize=7)
    ax.set_xlim(0, max(1, len(classes)))
    ax.set_ylim(-0.35, 1.45)
    ax.set_title(f"map space, {layer}: W (outline) and A∩W", fontsize=10)


def plot_flexion(rows: Sequence[Mapping[str, Any]], spaces: Sequence[Mapping[str, Any]],
                 studies: Sequence[str]) -> Figure:
    """One row per study: runtime, energy and EDP normalised to InFlex (log scale) and the map-space diagram."""
    studies = [s for s in studies if any(r["study"] == s for r in rows)]
    fig = new_figure(19.0, 3.6 * max(1, len(studies)) + 0.8)
    if not studies:
        ax = fig.add_subplot(1, 1, 1)
        empty_note(ax, "no studies")
        return fig
    grid = fig.add_gridspec(len(studies), 4, width_ratios=[1, 1, 1, 1.3])
    for i, s in enumerate(studies):
        srows = [r for r in rows if r["study"] == s]
        classes = list(dict.fromkeys(r["class"] for r in srows))
        layers = list(dict.fromkeys(r["layer"] for r in srows))
        first = None
        for j, (obj, label) in enumerate(METRICS):
            ax = fig.add_subplot(grid[i, j])
            _bars(ax, srows, classes, layers, obj, label)
            if j == 0:
                ax.set_ylabel(STUDY_NAMES.get(s, s), fontsize=11, fontweight="bold")
                first = ax
        ax = fig.add_subplot(grid[i, 3])
        venn_layer = "network" if "network" in layers else layers[0]
        _venn(ax, [d for d in spaces if d["study"] == s], classes, venn_layer, s)
        if first is not None:
            handles, labels = first.get_legend_handles_labels()
            ax.legend(handles, labels, loc="upper center", ncol=3, fontsize=7, frameon=False)
    set_titles(fig, "Flexion isolation studies: proven optima per flexibility class (seed 001, Chapter 3)",
               "bars: dlaopt's exact optimum of each objective ÷ the study's InFlex; black marks: the thesis' GA "
               "(best runtime and that mapping's energy, EDP); circles: workload map space W and the supported A∩W "
               "to scale (dashed: thesis)")
    return fig


__all__ = ["plot_flexion"]
