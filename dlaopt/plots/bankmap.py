"""Bank-mapping plots: how every tensor is laid out across the banks, and where copies and spills were inserted.

``layout`` (solution) — left, a heat map with a row per tensor and a column per bank: the bytes of the tensor that
bank holds in the tensor's home layout (element ``i`` along the spread axis lives in bank ``i mod B``), as a share
of a bank's capacity (over 1: it does not fit, shown in red); the row label names the spread axis. Right, on the
same rows, the bytes of the relayout copies inserted for the tensor (on chip, off chip) and of its spills, with the
layouts the copies go to. Copies and spills are the evaluator's (:func:`dlaopt.formulations.bankmap.evaluate`).
Large graphs show the tensors with copies or spills first, then the largest, up to ``MAX_ROWS``.

``copies`` (comparison) — per method, the on-chip copy, off-chip copy and spill bytes (stacked), and the objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from dlaopt.formulations.bankmap.evaluate import BankMappingError, BankReport, evaluate
from dlaopt.formulations.bankmap.layouts import BankMapping, LayoutModel
from dlaopt.plots.common import (
    WARN_COLOUR,
    PlotKind,
    byte_axis,
    category_width,
    comparison_title,
    empty_note,
    fmt_bytes,
    fmt_num,
    join,
    missing_note,
    new_figure,
    ok,
    plural,
    set_titles,
    solved,
    tick_labels,
)

if TYPE_CHECKING:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.harness import Prepared, Result

SOLUTION_TYPE = BankMapping
MAX_ROWS = 48
ON_CHIP = "#59a14f"
OFF_CHIP = "#f28e2b"
SPILL = "#e15759"


def bank_bytes(model: LayoutModel, tensor: str, axis: int) -> np.ndarray:
    """Bytes of ``tensor`` in each bank when ``axis`` is spread across them (``i mod B``)."""
    shape = model.shape(tensor)
    dim = shape[axis]
    per_slice = model.nbytes(tensor) // dim
    b = model.banks
    counts = np.full(b, dim // b, dtype=np.int64)
    counts[: dim % b] += 1
    return counts * per_slice


def _axis_name(shape: Sequence[int], axis: int) -> str:
    return f"axis {axis}"


def plot_layout(prepared: Prepared, sol: BankMapping, evaluation: Evaluation, title: str | None,
                subject: str) -> Figure:
    model: LayoutModel = prepared.data
    try:  # copies and spills (which do not depend on the off-chip weight; the objective is the evaluation's)
        report: BankReport | None = evaluate(model, sol, validate=False)
    except BankMappingError:
        report = None
    homes = report.homes if report is not None else {}
    tensors = [t for t in model.tensor_names if t in homes]
    copies = {t: [c for c in report.copies if c.tensor == t] for t in tensors} if report else {}
    spills = {s.tensor: s for s in report.spills} if report else {}
    marked = [t for t in tensors if copies.get(t) or t in spills]
    if len(tensors) > MAX_ROWS:
        rest = sorted((t for t in tensors if t not in marked), key=lambda t: -model.nbytes(t))
        keep = set(marked[:MAX_ROWS]) | set(rest[: max(0, MAX_ROWS - len(marked))])
        rows = [t for t in tensors if t in keep]
    else:
        rows = tensors
    n = len(rows)
    banks = model.banks
    fig = new_figure(max(11.0, 8.0 + min(banks, 64) * 0.06), 2.4 + 0.3 * max(n, 4))
    ax_h, ax_c = fig.subplots(1, 2, sharey=True, width_ratios=[min(2.2, max(1.2, banks / 10)), 1.0])
    if not rows:
        empty_note(ax_h, "no tensor could be laid out (the mapping does not cover the workload)")
        ax_c.set_axis_off()
        set_titles(fig, title or f"{subject}: bank layout", evaluation=evaluation)
        return fig
    share = np.array([bank_bytes(model, t, homes[t]) / model.bank_bytes for t in rows])
    cmap = colormaps["Blues"].with_extremes(over=WARN_COLOUR)
    vmax = 1.0
    im = ax_h.imshow(share, aspect="auto", cmap=cmap, norm=Normalize(0.0, vmax), interpolation="nearest")
    if banks <= 16 and n <= 40:
        for i, t in enumerate(rows):
            per = bank_bytes(model, t, homes[t])
            for b in range(banks):
                dark = share[i, b] > 0.55
                ax_h.text(b, i, fmt_bytes(float(per[b])).replace(" ", "\u2009"), ha="center", va="center",
                          fontsize=7, color="white" if dark else "#222222")
    labels = []
    for t in rows:
        shape = model.shape(t)
        a = homes[t]
        free = " (in)" if t in model.free_tensors else ""
        labels.append(f"{t}{free} {list(shape)} · {_axis_name(shape, a)} spread")
    tick_labels(ax_h, range(n), labels, axis="y", max_labels=MAX_ROWS)
    ax_h.set_xlabel("bank")
    step = max(1, banks // 16) if banks <= 32 else max(1, banks // 8)
    ax_h.set_xticks(range(0, banks, step))
    ax_h.set_title(f"bytes per bank in the home layout ({banks} banks of {fmt_bytes(model.bank_bytes)})",
                   fontsize=9, loc="left")
    cbar = fig.colorbar(im, ax=ax_h, extend="max", fraction=0.05, pad=0.02, shrink=min(1.0, 8.0 / max(n, 1)),
                        aspect=12)
    cbar.set_label("share of a bank's capacity (red: does not fit)", fontsize=8)
    # copies and spills per tensor
    ys = np.arange(n)
    on = np.array([sum(c.nbytes for c in copies.get(t, []) if c.on_chip) for t in rows], dtype=float)
    off = np.array([sum(c.nbytes for c in copies.get(t, []) if not c.on_chip) for t in rows], dtype=float)
    sp = np.array([spills[t].nbytes if t in spills else 0 for t in rows], dtype=float)
    if (on + off + sp).any():
        for vals, left, col, lab in ((on, 0.0, ON_CHIP, "copy on chip"),
                                     (off, on, OFF_CHIP, "copy through main memory"),
                                     (sp, on + off, SPILL, "spill (write + reads back)")):
            if vals.any():
                ax_c.barh(ys, vals, left=left, color=col, height=0.7, label=lab)
        for y, t in zip(ys, rows, strict=True):
            notes = [f"→ {_axis_name(model.shape(t), c.layout)}" for c in copies.get(t, [])]
            if t in sol.off_chip:
                notes.append("kept in main memory")
            if notes:
                ax_c.annotate(", ".join(notes), (on[y] + off[y] + sp[y], y), xytext=(3, 0),
                              textcoords="offset points", va="center", fontsize=7)
        ax_c.set_xlim(0, float((on + off + sp).max()) * 1.5)
        byte_axis(ax_c, "x")
        ax_c.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=1, frameon=False)
        ax_c.grid(axis="x", alpha=0.3)
    else:
        ax_c.text(0.5, 0.5, "no copies, no spills:\nevery consumer reads its\noperands in their home layout",
                  ha="center", va="center", transform=ax_c.transAxes, fontsize=9, color="#555555")
        ax_c.set_xticks([])
    ax_c.set_title("copies and spills inserted", fontsize=9, loc="left")
    ax_c.tick_params(axis="y", left=False)
    m = evaluation.metrics
    sub = join(f"objective {fmt_num(evaluation.objective)}" if evaluation.objective is not None else "",
               f"on-chip copies {fmt_bytes(m['on_chip_copy_bytes'])}" if m else "",
               f"off-chip copies {fmt_bytes(m['off_chip_copy_bytes'])}" if m else "",
               f"spills {fmt_bytes(m['spill_bytes'])}" if m else "",
               f"functional check {m['functional_check']}" if m and "functional_check" in m else "",
               f"{n} of {len(tensors)} tensors shown" if n < len(tensors) else plural(n, "tensor"))
    set_titles(fig, title or f"{subject}: bank layout of every tensor", sub, evaluation=evaluation)
    return fig


def plot_compare_copies(results: Sequence[Result], prepared: Prepared | None, title: str | None) -> Figure:
    shown = solved(results)
    fig = new_figure(category_width(len(results), per=1.1, base=3.5), 5.2)
    ax = fig.add_subplot()
    if not shown:
        empty_note(ax, "no method has a verified solution")
        set_titles(fig, comparison_title(results, title, "copies and spills per method"),
                   missing_note(results, shown))
        return fig
    xs = np.arange(len(results))

    def get(key: str) -> np.ndarray:
        return np.array([float(r.metrics.get(key, 0.0)) if ok(r) else 0.0 for r in results])

    on, off, sp = get("on_chip_copy_bytes"), get("off_chip_copy_bytes"), get("spill_bytes")
    for vals, bottom, col, lab in ((on, 0.0, ON_CHIP, "copies on chip"),
                                   (off, on, OFF_CHIP, "copies through main memory"), (sp, on + off, SPILL, "spills")):
        if vals.any():
            ax.bar(xs, vals, bottom=bottom, color=col, width=0.6, label=lab)
    top = float((on + off + sp).max())
    for x, r in zip(xs, results, strict=True):
        y = on[x] + off[x] + sp[x]
        if ok(r):
            copies = plural(int(r.metrics.get("copies", 0)), "copy", "copies")
            text = f"objective {fmt_num(r.objective)}\n{copies}, {r.status.value}"
            ax.annotate(text, (x, y), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                        fontsize=8)
        else:
            ax.annotate(f"no solution\n{r.status.value}", (x, 0), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color=WARN_COLOUR)
    tick_labels(ax, xs, [r.method for r in results])
    if top > 0:
        byte_axis(ax)
        ax.set_ylim(0, top * 1.3)
    else:
        ax.set_ylim(0, 1)
        ax.set_yticks([0])
        ax.set_yticklabels(["0 B"])
    ax.set_ylabel("bytes moved")
    ax.grid(axis="y", alpha=0.3)
    if top > 0:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    set_titles(fig, comparison_title(results, title, "copies and spills per method"),
               join("objective = on-chip copy bytes + weight × (off-chip copy + spill bytes)",
                    missing_note(results, shown)))
    return fig


SOLUTION_KINDS: dict[str, PlotKind] = {
    "layout": PlotKind("layout", "each tensor's bytes per bank in its layout, and the copies and spills inserted",
                       plot_layout),
}
COMPARISON_KINDS: dict[str, PlotKind] = {
    "copies": PlotKind("copies", "each method's copy and spill bytes", plot_compare_copies),
}
