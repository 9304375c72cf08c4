"""Figures of the fusion experiments (seed 001, Appendix A: FLAT; fusion-group selection over whole networks).

* :func:`plot_flat` — per platform (columns), against the sequence length (log-log): the L-A operators' off-chip
  traffic, the end-to-end runtime and the L-A utilization of Naive, Flex-opt and FLAT-opt (one colour per model, one
  line style per dataflow; as the chapter's Figs. A.8/A.9 and A.13, with traffic in place of the bandwidth curve of
  Fig. A.15).
* :func:`plot_fusion` — per network, the off-chip traffic of the layer-by-layer optimum and of the optimal fusion
  groups (bars), with the traffic saved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from dlaopt.plots.common import byte_axis, colour, empty_note, log_axis, new_figure, set_titles

FLAT_METHODS: tuple[tuple[str, str, str, str], ...] = (
    # key, label, line style, marker
    ("naive", "Naive", ":", "s"),
    ("flex-opt", "Flex-opt", "--", "o"),
    ("flat-opt", "FLAT-opt", "-", "^"),
    ("flat-fused", "best fused tile", "-.", "v"),  # FLAT-opt rows' fused_* fields (when FLAT-opt runs unfused)
)
FLAT_PANELS: tuple[tuple[str, str], ...] = (
    ("la_offchip_bytes", "L-A off-chip traffic (bytes)"),
    ("la_latency_cycles", "L-A runtime (cycles)"),
    ("runtime_s", "end-to-end runtime (s)"),
    ("la_utilization", "L-A utilization"),
)


def _seq_label(n: float) -> str:
    n = int(n)
    return f"{n >> 10}K" if n >= 1024 and n % 1024 == 0 else str(n)


def plot_flat(rows: Sequence[Mapping[str, Any]], *, panels: Sequence[tuple[str, str]] = FLAT_PANELS) -> Figure:
    """``rows``: one per (model, platform, seq_len, method) with the fields named in ``panels`` (missing or ``None``
    values are skipped). Columns: platforms; rows: the panels."""
    platforms = list(dict.fromkeys(r["platform"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig = new_figure(max(7.0, 5.2 * max(1, len(platforms))), 3.4 * len(panels) + 0.8 + 0.15 * len(
        {r["model"] for r in rows}))
    if not platforms:
        empty_note(fig.add_subplot(1, 1, 1), "no rows")
        return fig
    seqs = sorted({int(r["seq_len"]) for r in rows})
    for c, platform in enumerate(platforms):
        for p, (field, label) in enumerate(panels):
            ax = fig.add_subplot(len(panels), len(platforms), p * len(platforms) + c + 1)
            drawn = False
            for i, model in enumerate(models):
                for key, name, style, marker in FLAT_METHODS:
                    method, f = ("flat-opt", f"fused_{field}") if key == "flat-fused" else (key, field)
                    pts = sorted((int(r["seq_len"]), float(r[f])) for r in rows
                                 if r["platform"] == platform and r["model"] == model and r["method"] == method
                                 and r.get(f) is not None and float(r[f]) > 0)
                    if not pts:
                        continue
                    ax.plot([x for x, _ in pts], [y for _, y in pts], ls=style, marker=marker, color=colour(i),
                            lw=1.3, ms=4, label=f"{model} {name}")
                    drawn = True
            if not drawn:
                empty_note(ax, "nothing to show")
                continue
            ax.set_xscale("log", base=2)
            ax.set_xticks(seqs, [_seq_label(s) for s in seqs])
            if field.endswith("utilization"):
                ax.set_ylim(0, 1.05)
            else:
                ax.set_yscale("log")
                log_axis(ax)
            ax.set_ylabel(label)
            ax.grid(alpha=0.3, which="both")
            if p == 0:
                ax.set_title(platform, fontsize=10)
            if p == len(panels) - 1:
                ax.set_xlabel("sequence length N")
            if p == 0 and c == 0:
                handles, labels = ax.get_legend_handles_labels()
                fig.legend(handles, labels, loc="outside lower center", fontsize=7, frameon=False,
                           ncol=len(FLAT_METHODS))
    set_titles(fig, "FLAT (seed 001 Appendix A): Naive, Flex-opt and FLAT-opt against the sequence length",
               "colour: model; dotted Naive (weight stationary, fixed tile), dashed Flex-opt (per-operator optimum, "
               "unfused), solid FLAT-opt (the better of fused and unfused), dash-dot the best fused tile")
    return fig


def plot_fusion(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """``rows``: one per (network, platform) with ``layerwise_offchip_bytes``, ``fused_offchip_bytes`` and
    ``groups_fused`` (the number of fused groups chosen)."""
    fig = new_figure(max(7.0, 2.2 * max(1, len(rows)) + 3.0), 5.0)
    ax = fig.add_subplot(1, 1, 1)
    if not rows:
        empty_note(ax, "no rows")
        return fig
    width = 0.38
    xs = list(range(len(rows)))
    for j, (field, label) in enumerate((("layerwise_offchip_bytes", "layer by layer (per-operator optimum)"),
                                        ("fused_offchip_bytes", "optimal fusion groups"))):
        vals = [float(r.get(field) or 0.0) for r in rows]
        ax.bar([x + (j - 0.5) * width for x in xs], vals, width=width, color=colour(j), label=label)
    for x, r in zip(xs, rows, strict=True):
        lw, fu = r.get("layerwise_offchip_bytes"), r.get("fused_offchip_bytes")
        if lw and fu is not None:
            ax.annotate(f"-{100 * (1 - fu / lw):.0f} %\n{r.get('groups_fused', 0)} groups", (x + width / 2, fu),
                        ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs, [f"{r['network']}\n{r['platform']}" for r in rows], fontsize=8)
    ax.set_yscale("log")
    byte_axis(ax)
    ax.set_ylabel("off-chip traffic")
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.legend(fontsize=8, frameon=False)
    set_titles(fig, "Optimal fusion groups against layer-by-layer execution",
               "bars: main-memory reads + writes of the whole network; label: traffic saved, fused groups chosen")
    return fig


__all__ = ["FLAT_METHODS", "FLAT_PANELS", "plot_flat", "plot_fusion"]
