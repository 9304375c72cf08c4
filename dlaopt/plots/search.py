"""Figures of the search-based mappers measured against the proven optimum (seed 001, Chapters 4.4 and 5.2).

* :func:`plot_gamma_settings` — per platform, system (S1–S3) and objective, each method's network total relative to
  the proven optimum (as Figs. 4.4–4.5, with the optimum as the line at 1 those figures never had).
* :func:`plot_convergence` — per workload and accelerator, each mapper's best-so-far EDP against samples (top row)
  and seconds (bottom row), the optimum as a horizontal line (Fig. 5.3).
* :func:`plot_ablations` — the same against samples for GAMMA's operator ablations (Figs. 5.5-5.6).
* :func:`plot_orders` — the EDP values of a mapping's same-order variants and how many orders give each (Fig. 5.7).
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
        top = max((t.get(f"{m}_vs_exact") or 1.0 for t in group for m, _ in GAMMA_METHODS), default=1.0)
        for i, (m, label) in enumerate(GAMMA_METHODS):
            ys = [t.get(f"{m}_vs_exact") for t in group]
            xs = [j + (i - (len(GAMMA_METHODS) - 1) / 2) * width for j in range(len(group))]
            shown = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
            if shown:
                ax.bar([x for x, _ in shown], [y for _, y in shown], width=width, color=colour(i), label=label)
        ax.axhline(1.0, color="black", linewidth=1.2, label="proven optimum")
        ax.set_xticks(range(len(group)), labels)
        ax.set_ylabel(f"{objective} / optimum")
        if top > 10:  # several decades: a log axis; within one, a linear one keeps its labels
            ax.set_yscale("log")
            log_axis(ax)
        else:
            ax.set_ylim(0.0, top * 1.08)
        ax.legend(fontsize=8, ncols=3)
    set_titles(fig, "ResNet-18 on GAMMA's platforms: search and fixed dataflows against the proven optimum",
               "seed 001 Figs. 4.4-4.5; network totals, layers weighted by occurrence")
    return fig


def _curve_groups(curves: Mapping[str, Mapping[str, Any]], part: str) -> dict[tuple[str, str], dict[str, Any]]:
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for key, c in curves.items():
        p, workload, accel, mapper = key.split("|")
        if p == part:
            groups.setdefault((workload, accel), {})[mapper] = c
    return groups


def _draw_curves(ax: Any, runs: Mapping[str, Mapping[str, Any]], axis: int, xlabel: str) -> None:
    reference = None
    for i, (mapper, c) in enumerate(runs.items()):
        pts = c["points"]
        reference = c.get("reference", reference)
        if not pts:
            continue
        xs = [p[axis] for p in pts]
        ys = [p[2] for p in pts]
        if c.get("end") is not None and c["end"][axis] > xs[-1]:  # the curve stays flat until the search stopped
            xs.append(c["end"][axis])
            ys.append(ys[-1])
        ax.step(xs, ys, where="post", color=colour(i), label=mapper)
    if reference:
        ax.axhline(reference, color="black", linewidth=1.2, linestyle="--", label="optimum")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("best EDP")


def plot_convergence(curves: Mapping[str, Mapping[str, Any]], part: str = "convergence") -> Figure:
    """Fig. 5.3's two rows per (workload, accelerator): best-so-far EDP against samples and against seconds."""
    groups = _curve_groups(curves, part)
    fig = new_figure(4.2 * max(1, len(groups)), 7.0)
    if not groups:
        empty_note(fig.add_subplot(1, 1, 1), "no mapper finished")
        return fig
    for j, ((workload, accel), runs) in enumerate(groups.items()):
        for row, (axis, label) in enumerate(((0, "samples"), (1, "seconds"))):
            ax = fig.add_subplot(2, len(groups), row * len(groups) + j + 1)
            _draw_curves(ax, runs, axis, label)
            if row == 0:
                ax.set_title(f"{workload}, {accel}", fontsize=9)
        if j == 0:
            ax.legend(fontsize=7)
    set_titles(fig, "Mappers against the proven optimum (seed 001 Fig. 5.3)", "best-so-far EDP; dashed: optimum")
    return fig


def plot_ablations(curves: Mapping[str, Mapping[str, Any]]) -> Figure:
    """Figs. 5.5-5.6: GAMMA's operator ablations and the standard GA, best-so-far EDP against samples."""
    groups = _curve_groups(curves, "ablations")
    fig = new_figure(4.5 * max(1, len(groups)), 4.0)
    if not groups:
        empty_note(fig.add_subplot(1, 1, 1), "no ablation finished")
        return fig
    for j, ((workload, accel), runs) in enumerate(groups.items()):
        ax = fig.add_subplot(1, len(groups), j + 1)
        _draw_curves(ax, runs, 0, "samples")
        ax.set_title(f"{workload}, {accel}", fontsize=9)
        if j == 0:
            ax.legend(fontsize=7)
    set_titles(fig, "GAMMA's operators against the proven optimum (seed 001 Figs. 5.5-5.6)", "dashed: optimum")
    return fig


def plot_orders(study: Mapping[str, Any]) -> Figure:
    """Fig. 5.7: each distinct EDP value of the same-order variants (relative to the best) and its number of orders."""
    classes = sorted(study["classes"], key=lambda c: c["value"])
    fig = new_figure(max(6.0, 0.6 * len(classes) + 3), 4.0)
    ax = fig.add_subplot(1, 1, 1)
    if not classes:
        empty_note(ax, "no order class")
        return fig
    best = classes[0]["value"]
    ax.bar(range(len(classes)), [c["value"] / best for c in classes], color=colour(0))
    for i, c in enumerate(classes):
        ax.text(i, c["value"] / best, f"{c['count']:,}", ha="center", va="bottom", fontsize=8)
    # label each class by the levels whose innermost loops tell the classes apart (and what they keep stationary)
    levels = [lv for lv in classes[0]["innermost"] if len({tuple(c["innermost"][lv]) for c in classes}) > 1]
    labels = ["\n".join(f"{lv}: ..{''.join(c['innermost'][lv])} ({''.join(c['stationary'][lv]) or '-'} stat.)"
                        for lv in levels) or f"class {i + 1}" for i, c in enumerate(classes)]
    ax.set_xticks(range(len(classes)), labels, fontsize=8)
    ax.set_ylabel("EDP / best order's")
    set_titles(fig, f"Loop orders of the optimum of {study['workload']} on {study['accelerator']} (seed 001 Fig. 5.7)",
               f"{study['orders']:,} orders, {study['distinct']} EDP values (bar labels: orders per value)")
    return fig


__all__ = ["plot_ablations", "plot_convergence", "plot_gamma_settings", "plot_orders"]
