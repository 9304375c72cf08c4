"""Figures of the search-based mappers measured against the proven optimum (seed 001, Chapters 4.4 and 5.2).

* :func:`plot_gamma_settings` — per platform, system (S1–S3) and objective, each method's network total relative to
  the proven optimum (as Figs. 4.4–4.5, with the optimum as the line at 1 those figures never had).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from dlaopt.plots.common import colour, empty_note, log_axis, new_figure, set_titles

GAMMA_METHODS: tuple[tuple[str, str], ...] = (("gamma", "GAMMA"), ("random", "random"), ("nvdla", "NVDLA-like"),
                                              ("eyeriss", "Eyeriss-like"), ("shidiannao", "ShiDianNao-like"))


def plot_gamma_settings(totals: Sequence[Mapping[str, Any]]) -> Figure:
    """One panel per objective: for every (platform, system), each method's total over ResNet-18's layers divided by
    the exact total (log scale; 1 = the proven optimum, drawn as a line)."""
    rows = [t for t in totals if t.get("part") == "settings"]
    objectives = [o for o in ("latency", "energy") if any(t["objective"] == o for t in rows)] or ["latency"]
    fig = new_figure(12.0, 3.6 * len(objectives))
    for k, objective in enumerate(objectives):
        ax = fig.add_subplot(len(objectives), 1, k + 1)
        group = [t for t in rows if t["objective"] == objective]
        if not group:
            empty_note(ax, "no layer finished")
            continue
        labels = [f"{t['platform']} {t['system'].upper()}" for t in group]
        width = 0.8 / len(GAMMA_METHODS)
        for i, (m, label) in enumerate(GAMMA_METHODS):
            ys = [t.get(f"{m}_vs_exact") for t in group]
            xs = [j + (i - (len(GAMMA_METHODS) - 1) / 2) * width for j in range(len(group))]
            shown = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
            if shown:
                ax.bar([x for x, _ in shown], [y for _, y in shown], width=width, color=colour(i), label=label)
        ax.axhline(1.0, color="black", linewidth=1.2, label="proven optimum")
        ax.set_xticks(range(len(group)), labels)
        ax.set_ylabel(f"{objective} / optimum")
        ax.set_yscale("log")
        log_axis(ax)
        ax.legend(fontsize=8, ncols=3)
    set_titles(fig, "ResNet-18 on GAMMA's platforms: search and fixed dataflows against the proven optimum",
               "seed 001 Figs. 4.4-4.5; network totals, layers weighted by occurrence")
    return fig


__all__ = ["plot_gamma_settings"]
