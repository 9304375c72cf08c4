"""Figures of the PE-to-PE forwarding experiment (seed 004, PolyAcc: Figs. 5–8).

:func:`plot_polyacc` takes the rows of :func:`dlaopt.experiments.polyacc.run_polyacc` and draws four panels:

* data access volumes per level (rf, glb, DRAM) of each Table 3 case with links, split into temporal reuse,
  multicast, forwarded and unique (as Fig. 5; shares of the level's accesses);
* energy per level, NoC, links and MACs, without and with links (as Fig. 6; relative to the no-links total);
* execution time over the ideal ``MACs / PEs`` and PE utilization, without and with links (as Fig. 7);
* the Eyeriss setting (as Fig. 8): per AlexNet layer the energy saved by forwarding (same mapping and optimum), the
  share of the NoC traffic moved to links, and the utilization.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dlaopt.plots.common import colour, empty_note, new_figure, set_titles

CATEGORIES: tuple[str, ...] = ("temporal", "multicast", "forwarded", "unique")
LEVELS: tuple[str, ...] = ("rf", "glb", "dram")
ENERGY_PARTS: tuple[tuple[str, str], ...] = (("dram", "DRAM"), ("glb", "glb"), ("rf", "rf"), ("noc", "NoC"),
                                             ("links", "links"), ("mac", "MAC"))


def _by_case(rows: Sequence[Mapping[str, Any]], study: str) -> dict[str, dict[str, Mapping[str, Any]]]:
    out: dict[str, dict[str, Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("study") == study and r.get("energy_pj") is not None:
            out.setdefault(str(r["case"]), {})[str(r["variant"])] = r
    return out



def _stack(ax: Axes, x: float, values: Sequence[float], names: Sequence[str] | None) -> None:
    """One stacked bar at ``x``, part ``i`` in colour ``i``; ``names`` label the parts (first bar only)."""
    bottom = 0.0
    for i, val in enumerate(values):
        ax.bar(x, val, bottom=bottom, width=0.8, color=colour(i), label=names[i] if names else None)
        bottom += val

def _volumes(ax: Axes, cases: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
    if not cases:
        empty_note(ax, "no Table 3 case run")
        return
    x, labels = 0.0, []
    ticks = []
    for case, v in cases.items():
        r = v.get("links") or v.get("no links")
        assert r is not None
        for lv in LEVELS:
            vals = [max(0.0, float(r.get(f"{lv}_{c}") or 0.0)) for c in CATEGORIES]
            total = sum(vals) or 1.0
            _stack(ax, x, [100.0 * v / total for v in vals], CATEGORIES if not ticks else None)
            ticks.append(x)
            labels.append(f"{lv}\n{case}" if lv == "glb" else lv)
            x += 1.0
        x += 0.6
    _finish_bars(ax, ticks, labels, "share of the level's accesses (%)", 112, "data access volumes with links (Fig. 5)",
                 4)



def _finish_bars(ax: Axes, ticks: list[float], labels: list[str], ylabel: str, ymax: float, title: str,
                 legend_columns: int) -> None:
    """Tick labels, axis label, height, title and legend of a stacked-bar panel."""
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, fontsize=6)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, ymax)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="upper center", ncol=legend_columns)

def _energy(ax: Axes, cases: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
    if not cases:
        empty_note(ax, "no Table 3 case run")
        return
    ticks, labels = [], []
    x = 0.0
    for n, (case, v) in enumerate(cases.items()):
        base = v.get("no links")
        ref = float(base["energy_pj"]) if base else 1.0
        for variant, tag in (("no links", "no"), ("links", "links")):
            r = v.get(variant)
            if r is None:
                x += 1.0
                continue
            _stack(ax, x, [float(r.get(f"energy_{key}") or 0.0) / ref for key, _ in ENERGY_PARTS],
                   [name for _, name in ENERGY_PARTS] if n == 0 and tag == "no" else None)
            ticks.append(x)
            labels.append(f"{case}\n{tag}" if tag == "no" else tag)
            x += 1.0
        x += 0.6
    _finish_bars(ax, ticks, labels, "energy ÷ no-links total", 1.15, "energy by level, NoC and links (Fig. 6)", 6)


def _time(ax: Axes, cases: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
    if not cases:
        empty_note(ax, "no Table 3 case run")
        return
    names = list(cases)
    width = 0.38
    for j, variant in enumerate(("no links", "links")):
        xs = [i + (j - 0.5) * width for i in range(len(names))]
        ys = [float(cases[c][variant]["vs_ideal"]) if variant in cases[c] else 0.0 for c in names]
        ax.bar(xs, ys, width=width, color=colour(j), label=f"latency ÷ ideal, {variant}")
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.3)
    ax.set_ylabel("latency ÷ ideal (MACs ÷ PEs)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=7, rotation=20)
    twin = ax.twinx()
    for j, variant in enumerate(("no links", "links")):
        ys = [100.0 * float(cases[c][variant]["utilization"]) if variant in cases[c] else float("nan") for c in names]
        twin.plot(range(len(names)), ys, marker="o" if j == 0 else "x", color=colour(j + 2), lw=0.8,
                  label=f"utilization, {variant}")
    twin.set_ylabel("PE utilization (%)")
    twin.set_ylim(0, 130)
    ax.set_title("execution time and PE utilization (Fig. 7)", fontsize=10)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, frameon=False, loc="upper center", ncol=2)


def _eyeriss(ax: Axes, cases: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
    if not cases:
        empty_note(ax, "Eyeriss study not run")
        return
    names = list(cases)
    layers = [str(next(iter(cases[c].values()))["layer"]) for c in names]
    width = 0.22
    series = (("same mapping", "energy saved, same mapping"), ("links", "energy saved, optimum"))
    for j, (variant, label) in enumerate(series):
        xs, ys = [i + (j - 1.5) * width for i in range(len(names))], []
        for c in names:
            base, r = cases[c].get("no links"), cases[c].get(variant)
            ys.append(100.0 * (1 - float(r["energy_pj"]) / float(base["energy_pj"])) if base and r else 0.0)
        ax.bar(xs, ys, width=width, color=colour(j), label=label)
        for x, y in zip(xs, ys, strict=True):
            ax.text(x, y, f"{y:.1f}", ha="center", va="bottom", fontsize=6)
    ax.set_ylabel("energy saved by forwarding (%)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(layers)
    twin = ax.twinx()
    fw = [100.0 * float(cases[c]["links"]["forwarded_share"]) if "links" in cases[c] else 0.0 for c in names]
    twin.bar([i + 0.5 * width for i in range(len(names))], fw, width=width, color=colour(2),
             label="NoC traffic moved to links")
    util = [100.0 * float(cases[c]["no links"]["utilization"]) if "no links" in cases[c] else float("nan")
            for c in names]
    twin.bar([i + 1.5 * width for i in range(len(names))], util, width=width, color=colour(3),
             label="PE utilization")
    twin.set_ylim(0, 115)
    twin.set_ylabel("NoC traffic on links, PE utilization (%)")
    ax.set_title("Eyeriss 14×12, AlexNet, row stationary (Fig. 8 setting)", fontsize=10)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, frameon=False, loc="upper center", ncol=2)
    ax.set_ylim(0, max(1.0, ax.get_ylim()[1]) * 1.4)


def plot_polyacc(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """The four panels of the module docstring."""
    fig = new_figure(16.0, 10.0)
    t3, ey = _by_case(rows, "table3"), _by_case(rows, "eyeriss")
    axes = [fig.add_subplot(2, 2, i + 1) for i in range(4)]
    _volumes(axes[0], t3)
    _energy(axes[1], t3)
    _time(axes[2], t3)
    _eyeriss(axes[3], ey)
    set_titles(fig, "Fixed dataflows with and without PE-to-PE forwarding (seed 004, PolyAcc)",
               "proven-optimal mappings under each dataflow's spatial unrolling; links forward an operand between "
               "neighbouring PEs instead of the NoC")
    return fig


__all__ = ["plot_polyacc"]
