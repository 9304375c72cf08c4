"""Pinning plots: scratchpad occupancy over the operator schedule, and each method's DMA transfers side by side.

``occupancy`` — one panel per scratchpad; at every step a stacked bar of the tensors (buffers) resident there,
coloured by the original tensor, with the capacity as a dashed line; a load into the scratchpad is a ▼ on the left
of the tensor's segment at the step it enters, a store (write-back to main memory) a ▲ on the right of its segment
at the last step before it leaves (or, for a graph output, at its last use). The events follow the evaluator's cost
semantics (:mod:`dlaopt.formulations.pinning.evaluator`).

``transfers`` (comparison) — per method, the bytes loaded and stored (stacked), with the compulsory traffic of an
infinite scratchpad as a reference line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.plots.addresses import scratchpad_panels
from dlaopt.plots.common import (
    WARN_COLOUR,
    PlotKind,
    byte_axis,
    category_width,
    comparison_title,
    empty_note,
    fmt_bytes,
    join,
    missing_note,
    new_figure,
    ok,
    plural,
    set_titles,
    solved,
    tick_labels,
)
from dlaopt.workload.tensor import TensorRole

if TYPE_CHECKING:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.harness import Prepared, Result

SOLUTION_TYPE = PinningSolution
LOAD_COLOUR = "#1b4f72"
STORE_COLOUR = "#b03a2e"
MAX_TENSOR_LEGEND = 24


@dataclass(frozen=True)
class Event:
    buffer: int
    step: int
    scratchpad: int
    load: bool  # False: store


def transfer_events(graph: PinningGraph, sol: PinningSolution) -> list[Event]:
    """Every load and store of ``sol`` (where and when), by the evaluator's rules: entering a scratchpad other than
    by being produced there is a load; leaving one while dirty and still live is a store (marked at the last step
    before leaving), and a graph output still dirty after its last use is stored then."""
    out: list[Event] = []
    for b, buf in enumerate(graph.buffers):
        lo, hi = graph.window[b]
        if hi < lo:
            continue
        row = sol.placement[b]
        writes = set(graph.write_steps[b])
        first_write = graph.producer[b]
        prev, dirty = -1, False
        for i in range(hi - lo + 1):
            m, k = lo + i, int(row[i])
            if k != prev:
                if prev >= 0 and dirty:
                    out.append(Event(b, m - 1, prev, False))
                    dirty = False
                if k >= 0 and m != first_write:
                    out.append(Event(b, m, k, True))
            if m in writes:
                dirty = True
            prev = k
        if dirty and buf.role == TensorRole.OUTPUT and prev >= 0:
            out.append(Event(b, hi, prev, False))
    return out


def plot_occupancy(prepared: Prepared, sol: PinningSolution, evaluation: Evaluation, title: str | None,
                   subject: str) -> Figure:
    graph: PinningGraph = prepared.data.graph
    spms = graph.scratchpads
    n_steps, n_spm = len(graph.steps), len(spms)
    fig, axes, tensors, tcolour = scratchpad_panels(graph, 2.6)
    # bottom[k][m]: stacked height so far; centre[(b, k, m)]: the middle of buffer b's segment
    bottom = np.zeros((n_spm, n_steps))
    centre: dict[tuple[int, int, int], tuple[float, float]] = {}
    label_steps = n_steps <= 40
    for b, buf in enumerate(graph.buffers):
        lo, hi = graph.window[b]
        if hi < lo:
            continue
        row = np.asarray(sol.placement[b])
        for k in range(n_spm):
            steps = lo + np.flatnonzero(row == k)
            if steps.size == 0:
                continue
            ax = axes[k]
            ax.bar(steps, buf.size_bytes, bottom=bottom[k, steps], width=0.84, color=tcolour[buf.tensor],
                   edgecolor="white", linewidth=0.6)
            for m in steps.tolist():
                y0 = bottom[k, m]
                centre[(b, k, m)] = (y0, y0 + buf.size_bytes)
            bottom[k, steps] += buf.size_bytes
    events = transfer_events(graph, sol)
    for k, (ax, spm) in enumerate(zip(axes, spms, strict=True)):
        top = max(float(spm.capacity), float(bottom[k].max()) if n_steps else 0.0)
        ax.set_ylim(0, top * 1.12)
        ax.axhline(spm.capacity, color="#555555", ls="--", lw=1.0)
        ax.text(1.0, spm.capacity, f" capacity {fmt_bytes(spm.capacity)}", transform=ax.get_yaxis_transform(),
                va="center", ha="left", fontsize=8, color="#555555")
        # names inside segments tall enough to hold them
        if label_steps:
            for (b, kk, m), (y0, y1) in centre.items():
                if kk == k and (y1 - y0) >= 0.09 * top:
                    ax.text(m, (y0 + y1) / 2, _short(graph.buffers[b].name), ha="center", va="center", fontsize=7,
                            clip_on=True)
        ev_k = [e for e in events if e.scratchpad == k and (e.buffer, k, e.step) in centre]
        for load, marker, dx, col in ((True, "v", -0.42, LOAD_COLOUR), (False, "^", 0.42, STORE_COLOUR)):
            pts = [(e.step + dx, sum(centre[(e.buffer, k, e.step)]) / 2) for e in ev_k if e.load == load]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], ls="none", marker=marker, ms=8, color=col,
                        mec="white", mew=0.8, zorder=5)
        used = bottom[k]
        ax.set_ylabel(f"{spm.name}\n({spm.access.value}; {', '.join(sorted(r.value for r in spm.holds))})",
                      fontsize=9)
        byte_axis(ax)
        ax.grid(axis="y", alpha=0.25)
        n_loads = sum(e.load for e in events if e.scratchpad == k)
        n_stores = sum(not e.load for e in events if e.scratchpad == k)
        ax.set_title(f"{spm.name}: peak {fmt_bytes(float(used.max()) if n_steps else 0)} of "
                     f"{fmt_bytes(spm.capacity)}, {plural(n_loads, 'load')}, {plural(n_stores, 'store')}",
                     fontsize=9, loc="left")
    axes[-1].set_xlim(-0.7, n_steps - 0.3)
    step_labels = [s.name for s in graph.steps]
    tick_labels(axes[-1], range(n_steps), step_labels)
    axes[-1].set_xlabel("operator schedule (steps)")
    handles: list[Line2D | Patch] = [
        Line2D([], [], ls="none", marker="v", color=LOAD_COLOUR, ms=7, label="load (DMA in)"),
        Line2D([], [], ls="none", marker="^", color=STORE_COLOUR, ms=7, label="store (DMA out)")]
    shown = [t for t in tensors if any(graph.buffers[b].tensor == t for (b, _, _) in centre)]
    if len(shown) <= MAX_TENSOR_LEGEND:
        handles += [Patch(color=tcolour[t], label=t) for t in shown]
    ncol = 1 if len(handles) <= 16 else 2
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, ncol=ncol)
    met = evaluation.metrics
    sub = join(f"objective {prepared.instance.objective} = {_fmt_value(evaluation.objective)}",
               f"loads {fmt_bytes(met['load_bytes'])}, stores {fmt_bytes(met['store_bytes'])}" if met else "",
               f"naive {fmt_bytes(met['naive_transfer_bytes'])}" if met else "",
               f"{len(graph.tiled_ops)} operators tiled" if graph.tiled_ops else "")
    set_titles(fig, title or f"{subject}: scratchpad occupancy", sub, evaluation=evaluation)
    return fig


def _addresses(prepared: Prepared, sol: PinningSolution, evaluation: Evaluation, title: str | None,
               subject: str) -> Figure:
    from dlaopt.plots.addresses import plot_addresses

    return plot_addresses(prepared, sol, evaluation, title, subject)


def _short(name: str, width: int = 12) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _fmt_value(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}" if float(v).is_integer() else f"{v:,.4g}"


def plot_transfers(results: Sequence[Result], prepared: Prepared | None, title: str | None) -> Figure:
    shown = solved(results)
    fig = new_figure(category_width(len(results), per=1.0, base=3.0), 5.2)
    ax = fig.add_subplot()
    if not shown:
        empty_note(ax, "no method has a verified solution")
        set_titles(fig, comparison_title(results, title, "DMA transfers per method"), missing_note(results, shown))
        return fig
    xs = np.arange(len(results))
    loads = np.array([r.metrics.get("load_bytes", 0.0) if ok(r) else 0.0 for r in results], dtype=float)
    stores = np.array([r.metrics.get("store_bytes", 0.0) if ok(r) else 0.0 for r in results], dtype=float)
    ax.bar(xs, loads, width=0.62, color=LOAD_COLOUR, label="loaded (main memory → scratchpads)")
    ax.bar(xs, stores, bottom=loads, width=0.62, color=STORE_COLOUR, label="stored (scratchpads → main memory)")
    best = min(r.metrics["transfer_bytes"] for r in shown)
    for x, r in zip(xs, results, strict=True):
        if ok(r):
            total = r.metrics["transfer_bytes"]
            ratio = f" (×{total / best:.2f})" if best and total != best else ""
            ax.annotate(f"{fmt_bytes(total)}{ratio}\n{r.metrics['transfers']} transfers, {r.status.value}",
                        (x, total), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8)
        else:
            ax.annotate(f"no solution\n({r.status.value})", (x, 0), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color=WARN_COLOUR)
    inf = shown[0].metrics.get("inf_spm_transfer_bytes")
    if inf is not None and math.isfinite(inf):
        ax.axhline(inf, color="#333333", ls=":", lw=1.2,
                   label=f"compulsory (infinite scratchpad): {fmt_bytes(inf)}")
    tick_labels(ax, xs, [r.method for r in results])
    byte_axis(ax)
    ax.set_ylabel("DMA traffic")
    ax.margins(y=0.2)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    set_titles(fig, comparison_title(results, title, "DMA transfers per method"), missing_note(results, shown))
    return fig


SOLUTION_KINDS: dict[str, PlotKind] = {
    "occupancy": PlotKind("occupancy", "per-scratchpad occupancy over the schedule, loads and stores marked",
                          plot_occupancy),
    "addresses": PlotKind("addresses", "per-scratchpad (step x address) picture: each residency run at its offset",
                          lambda prepared, sol, evaluation, title, subject: _addresses(prepared, sol, evaluation,
                                                                                       title, subject)),
}
COMPARISON_KINDS: dict[str, PlotKind] = {
    "transfers": PlotKind("transfers", "bytes loaded and stored by each method", plot_transfers),
}
