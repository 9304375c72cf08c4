"""Figures of the hardware–mapping co-design experiments (seed 001: ConfuciuX, Chapter 8; DiGamma, Chapter 6).

* :func:`plot_confuciux` — one ConfuciuX case: the per-layer PEs and buffer of the proven optimum next to
  ConfuciuX's design (as Fig. 8.7), and every search's best value against its samples with the optimum as a line
  (as Fig. 8.6/8.8).
* :func:`plot_digamma` — per model and budget, the designs each method found: PE count against the PE share of the
  area (as Fig. 6.8's "PE area : buffer area"), and latency relative to the proven optimum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from dlaopt.plots.common import colour, empty_note, log_axis, new_figure, set_titles

CONFUCIUX_METHODS: tuple[tuple[str, str], ...] = (("exact", "proven optimum"), ("confuciux", "ConfuciuX (RL + GA)"),
                                                   ("rl", "RL (first stage)"), ("ga", "GA"), ("random", "random"))


def plot_confuciux(case: Mapping[str, Any]) -> Figure:
    """Per-layer PEs and L1 bytes of the optimum and of ConfuciuX (bars), and value against samples per search."""
    fig = new_figure(15.0, 7.5)
    grid = fig.add_gridspec(2, 2, width_ratios=[2.2, 1])
    designs: Mapping[str, Sequence[Sequence[int]]] = case.get("designs", {})
    shown = [(m, label) for m, label in CONFUCIUX_METHODS[:2] if m in designs]
    for row, (k, what) in enumerate(((0, "PEs"), (1, "L1 bytes per PE"))):
        ax = fig.add_subplot(grid[row, 0])
        if not shown:
            empty_note(ax, "no design found")
            continue
        n = len(next(iter(designs.values())))
        width = 0.8 / len(shown)
        for i, (m, label) in enumerate(shown):
            xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(n)]
            ax.bar(xs, [d[k] for d in designs[m]], width=width, color=colour(i), label=label)
        ax.set_ylabel(what)
        ax.set_xlim(-0.8, n - 0.2)
        if row == 0:
            ax.legend(fontsize=8, frameon=False, loc="upper left")
        else:
            ax.set_xlabel("layer")
    ax = fig.add_subplot(grid[:, 1])
    traces: Mapping[str, Sequence[Sequence[float]]] = case.get("traces", {})
    drawn = False
    for i, (m, label) in enumerate(CONFUCIUX_METHODS[1:]):
        tr = [t for t in traces.get(m, []) if math.isfinite(t[1])]
        if not tr:
            continue
        xs = [max(1, t[0]) for t in tr] + [max(1, tr[-1][0])]
        ys = [t[1] for t in tr] + [tr[-1][1]]
        ax.step(xs, ys, where="post", color=colour(i + 1), label=label, lw=1.4)
        drawn = True
    opt = case.get("optimum")
    if opt:
        ax.axhline(opt, color="black", ls="--", lw=1.0, label="proven optimum")
        ax.axhline(opt * 1.01, color="grey", ls=":", lw=0.8, label="optimum + 1 %")
    if drawn:
        ax.set_xscale("log")
        log_axis(ax, "y")
        ax.legend(fontsize=8, frameon=False)
    else:
        empty_note(ax, "no search found a design within the budget")
    ax.set_xlabel("samples (RL episodes, GA genomes)")
    ax.set_ylabel(f"best {case.get('objective', 'value')} found")
    agg = f", {case.get('aggregate')}" if case.get("deployment") == "lp" else ""
    set_titles(fig, f"ConfuciuX vs the proven optimum: {case.get('model')}, {case.get('objective')}, "
                    f"{str(case.get('deployment', '')).upper()}{agg}, {case.get('resource')} {case.get('platform')}",
               "left: per-layer PEs and L1 buffer of each design (as seed 001 Fig. 8.7); right: best value found "
               "against samples (as Fig. 8.6/8.8)")
    return fig


def plot_digamma(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """Per (model, budget): each method's design as PEs against its PE share of the area (marker size: latency
    relative to the optimum)."""
    keys = list(dict.fromkeys((r["model"], r["platform"]) for r in rows))
    fig = new_figure(max(8.0, 4.6 * max(1, len(keys))), 5.2)
    if not keys:
        empty_note(fig.add_subplot(1, 1, 1), "no rows")
        return fig
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for i, (model, platform) in enumerate(keys):
        ax = fig.add_subplot(1, len(keys), i + 1)
        for j, m in enumerate(methods):
            for r in rows:
                if (r["model"], r["platform"], r["method"]) != (model, platform, m) or not r.get("pes"):
                    continue
                share = r.get("pe_area_share")
                if share is None:
                    continue
                rel = r.get("relative")
                ax.scatter([100.0 * share], [r["pes"]], s=40 + 30 * min(10.0, rel or 1.0), color=colour(j),
                           edgecolor="black", lw=0.5, label=f"{m} ({rel:.2f}×)" if rel else m, zorder=3)
        ax.set_yscale("log", base=2)
        ax.set_xlim(0, 100)
        ax.set_xlabel("PE area share of the design (%)")
        ax.set_ylabel("PEs")
        ax.set_title(f"{model}, {platform}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, frameon=False, loc="best")
    set_titles(fig, "Designs found per method (DiGamma setting, seed 001 Chapter 6)",
               "x: PE area ÷ (PE + buffer) area (Fig. 6.8's ratio); y: PE count; legend: latency ÷ proven optimum")
    return fig


__all__ = ["plot_confuciux", "plot_digamma"]
