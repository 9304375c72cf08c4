"""The (step x address) picture of a pinning plan with addresses: per scratchpad, every residency run is a rectangle
from its first to its last step and from its offset to its offset + size (colour per tensor), the capacity a line.
Overlapping rectangles would be a violation; the evaluator's first one is printed in red at the bottom."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from dlaopt.formulations.pinning.addresses import residency_runs
from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.plots.common import (
    PALETTE20,
    WARN_COLOUR,
    byte_axis,
    category_width,
    colour,
    empty_note,
    fmt_bytes,
    join,
    new_figure,
    plural,
    set_titles,
    tick_labels,
)

if TYPE_CHECKING:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.harness import Prepared

MAX_TENSOR_LEGEND = 24


def scratchpad_panels(graph: PinningGraph, panel_height: float) -> tuple[Figure, np.ndarray, list[str], dict[str, str]]:
    """A figure with one panel per scratchpad over the steps (shared x axis), the tensors in first-use order and a
    colour per tensor: the frame of the occupancy and the address pictures."""
    tensors = list(dict.fromkeys(b.tensor for b in graph.buffers))
    tcolour = {t: colour(i, PALETTE20) for i, t in enumerate(tensors)}
    n_spm = len(graph.scratchpads)
    fig = new_figure(category_width(len(graph.steps), per=0.5, base=4.5, minimum=9.0), 1.6 + panel_height * n_spm)
    axes = fig.subplots(n_spm, 1, sharex=True, squeeze=False)[:, 0]
    return fig, axes, tensors, tcolour


def plot_addresses(prepared: Prepared, sol: PinningSolution, evaluation: Evaluation, title: str | None,
                   subject: str) -> Figure:
    graph = prepared.data.graph
    spms = graph.scratchpads
    n_steps = len(graph.steps)
    fig, axes, tensors, tcolour = scratchpad_panels(graph, 2.8)
    per_spm = residency_runs(graph, sol)
    shown: set[str] = set()
    for k, (ax, spm) in enumerate(zip(axes, spms, strict=True)):
        ax.axhline(spm.capacity, color=WARN_COLOUR, lw=1.0, ls="--")
        runs = per_spm[k]
        if sol.offsets is None:
            empty_note(ax, "no addresses in this solution (options.addresses false, or 3-element runs)")
            ax.set_ylim(0, spm.capacity * 1.05)
            ax.set_title(f"{spm.name}: capacity {fmt_bytes(spm.capacity)}", fontsize=9, loc="left")
            continue
        polys, colours = [], []
        peak = 0
        for r in runs:
            lo = graph.window[r.buffer][0]
            off = int(sol.offsets[r.buffer][r.first - lo])
            x0, x1, y0, y1 = r.first - 0.45, r.last + 0.45, off, off + r.size
            polys.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
            t = graph.buffers[r.buffer].tensor
            colours.append(tcolour[t])
            shown.add(t)
            peak = max(peak, y1)
        if polys:
            ax.add_collection(PolyCollection(polys, facecolors=colours, edgecolors="#333333",
                                             linewidths=0.4 if len(polys) < 400 else 0.0, alpha=0.9))
            if len(polys) <= 60:
                for r, p in zip(runs, polys, strict=True):
                    (x0, y0), (x1, y1) = p[0], p[2]
                    ax.text((x0 + x1) / 2, (y0 + y1) / 2, graph.buffers[r.buffer].name, ha="center", va="center",
                            fontsize=6, clip_on=True)
        else:
            empty_note(ax, "nothing resident")
        ax.set_ylim(0, spm.capacity * 1.05)
        byte_axis(ax)
        ax.set_ylabel("address")
        ax.set_title(f"{spm.name}: {plural(len(runs), 'run')}, highest address {fmt_bytes(peak)} of "
                     f"{fmt_bytes(spm.capacity)}", fontsize=9, loc="left")
    axes[-1].set_xlim(-0.7, n_steps - 0.3)
    tick_labels(axes[-1], range(n_steps), [s.name for s in graph.steps])
    axes[-1].set_xlabel("operator schedule (steps)")
    names = [t for t in tensors if t in shown]
    if 0 < len(names) <= MAX_TENSOR_LEGEND:
        fig.legend(handles=[Patch(color=tcolour[t], label=t) for t in names], loc="outside right upper", fontsize=8,
                   ncol=1 if len(names) <= 16 else 2)
    peaks = evaluation.metrics.get("address_peak") or {}
    sub = join(f"alignment {prepared.data.alignment} B", ", ".join(f"{n} peak {fmt_bytes(v)}"
                                                                   for n, v in peaks.items()))
    set_titles(fig, title or f"{subject}: scratchpad addresses", sub, evaluation=evaluation)
    return fig


__all__ = ["plot_addresses"]
