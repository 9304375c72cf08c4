"""What every plot shares: figures (no pyplot, no window), colours, number formats, and the two comparison kinds
every problem has — ``objective`` (each method's objective, bound and status) and ``trace`` (the exact solver's
incumbent and bound over time against the heuristics' values).

Figures are :class:`matplotlib.figure.Figure` objects created directly, never through ``pyplot``: nothing is
registered with a GUI backend, nothing can open a window, and a figure is freed when it is no longer referenced.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, Locator, LogLocator, NullFormatter

if TYPE_CHECKING:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.harness import Result

DPI = 100
MAX_WIDTH_IN = 22.0
MAX_HEIGHT_IN = 30.0

# Tableau 10 (methods, tenants) and a second, lighter set (for what is stacked beside them)
PALETTE: tuple[str, ...] = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                            "#9c755f", "#bab0ac")
PALETTE20: tuple[str, ...] = ("#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
                              "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7",
                              "#bcbd22", "#dbdb8d", "#17becf", "#9edae5")
WARN_COLOUR = "#c0392b"


def colour(i: int, palette: Sequence[str] = PALETTE) -> str:
    return palette[i % len(palette)]


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches (clamped to a sane range) with the constrained layout engine, which
    keeps titles, tick labels and legends from overlapping."""
    w = min(max(width, 4.0), MAX_WIDTH_IN)
    h = min(max(height, 3.0), MAX_HEIGHT_IN)
    return Figure(figsize=(w, h), dpi=DPI, layout="constrained")


def set_titles(fig: Figure, title: str, subtitle: str = "", *, evaluation: Evaluation | None = None) -> None:
    """The figure's title (bold), an optional second line of key figures, and — for a solution the evaluator
    rejects — a warning in red at the bottom."""
    width = max(40, int(fig.get_figwidth() * 11))
    lines = [title] + (textwrap.wrap(subtitle, width) if subtitle else [])
    fig.suptitle("\n".join(lines), fontsize=11)
    if evaluation is not None and not evaluation.feasible:
        first = evaluation.violations[0] if evaluation.violations else "rejected"
        more = f" (and {len(evaluation.violations) - 1} more)" if len(evaluation.violations) > 1 else ""
        fig.supxlabel(f"NOT VERIFIED — the evaluator rejects this solution: {shorten(first, 110)}{more}",
                      color=WARN_COLOUR, fontsize=9)


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# ================================================================================================ number formats
def fmt_num(v: float | None, digits: int = 4) -> str:
    """A number for a label: thousands separators for large integers, ``digits`` significant digits otherwise."""
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return "-"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if 1e5 <= abs(v) < 1e13:
        return f"{v:,.0f}"
    if abs(v) >= 1e13 or (v != 0 and abs(v) < 1e-3):
        return f"{v:.{digits - 1}e}"
    return f"{v:.{digits}g}"


def fmt_bytes(n: float) -> str:
    """A byte count in the largest binary unit it reaches (one decimal when not whole)."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= size:
            v = n / size
            return f"{v:,.0f} {unit}" if float(v).is_integer() else f"{v:,.1f} {unit}"
    return f"{n:,.0f} B"


class ByteLocator(Locator):
    """Ticks at multiples of a power of two bytes (4 to 8 of them), so byte labels come out round (1 KiB, 2 KiB)."""

    def __call__(self) -> Sequence[float]:
        assert self.axis is not None
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        lo, hi = min(vmin, vmax), max(vmin, vmax)
        span = hi - lo
        if span <= 0 or not math.isfinite(span):
            return [lo]
        step = 2.0 ** math.floor(math.log2(span / 4))
        if span / step > 8:
            step *= 2
        first = math.ceil(lo / step) * step
        return [first + i * step for i in range(int((hi - first) / step) + 1)]


def byte_axis(ax: Axes, which: str = "y") -> None:
    """Byte tick labels (B, KiB, MiB) at round binary positions."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    axis.set_major_locator(ByteLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_bytes(v)))


def log_axis(ax: Axes, which: str = "y") -> None:
    """A log axis labelled at powers of ten with plain numbers (1, 10, 100, 1,000, then 1e+04 ...)."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_num(v, 2)))
    axis.set_minor_formatter(NullFormatter())


def number_axis(ax: Axes, which: str = "y") -> None:
    """Tick labels with thousands separators (and short scientific notation for very large or small values)."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_num(v, 3)))


def si_scale(values: Sequence[float], unit: str) -> tuple[float, str]:
    """``(divisor, label)`` that brings the largest value to [1, 1000) with an SI prefix (``unit`` ``"J"`` ->
    ``"µJ"``); ``unit`` ``"cycles"`` uses k/M/G."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    peak = max(finite) if finite else 0.0
    if unit in ("s", "J", "pJ"):
        base = {"s": 0, "J": 0, "pJ": -12}[unit]
        sym = unit if unit != "pJ" else "J"
        prefixes = ((-12, "p"), (-9, "n"), (-6, "µ"), (-3, "m"), (0, ""), (3, "k"), (6, "M"), (9, "G"))
        exp = 0
        if peak > 0:
            exp = 3 * math.floor((math.log10(peak) + base) / 3)
        exp = min(max(exp, -12), 9)
        name = dict(prefixes)[exp]
        return 10.0 ** (exp - base), f"{name}{sym}"
    for exp, name in ((9, "G"), (6, "M"), (3, "k")):
        if peak >= 10.0 ** exp:
            return 10.0 ** exp, f"{name} {unit}" if unit else name
    return 1.0, unit


def time_scale(span_s: float) -> tuple[float, str]:
    """``(multiplier, unit)`` to show seconds in s, ms, µs or ns."""
    for mult, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs"), (1e9, "ns")):
        if span_s * mult >= 1.0:
            return mult, unit
    return 1e9, "ns"


def empty_note(ax: Axes, text: str) -> None:
    """A message in the middle of a panel that has nothing to show (instead of a blank panel)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=10, color="#555555",
            wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def tick_labels(ax: Axes, positions: Iterable[float], labels: Sequence[str], *, axis: str = "x",
                max_labels: int = 60) -> None:
    """Category tick labels, rotated when many or long, thinned to at most ``max_labels``."""
    n = len(labels)
    step = max(1, math.ceil(n / max_labels))
    pos = list(positions)[::step]
    lab = list(labels)[::step]
    longest = max((len(s) for s in lab), default=0)
    size = 9 if n <= 12 else 8 if n <= 30 else 7
    if axis == "x":
        ax.set_xticks(pos)
        rotate = n * max(longest, 1) > 70
        ax.set_xticklabels(lab, rotation=60 if rotate else 0, ha="right" if rotate else "center",
                           rotation_mode="anchor", fontsize=size)
    else:
        ax.set_yticks(pos)
        ax.set_yticklabels(lab, fontsize=size)


def category_width(n: int, per: float = 0.45, base: float = 3.0, minimum: float = 8.0) -> float:
    return max(minimum, base + per * n)


# units of the objectives (for axis labels): problem -> objective -> unit
OBJECTIVE_UNITS: dict[str, dict[str, str]] = {
    "pinning": {"transfers": "B", "dma_cycles": "cycles", "thesis": "B"},
    "mapping": {"energy": "pJ", "latency": "cycles", "edp": "pJ·cycles"},
    "systolic": {"energy": "J", "delay": "cycles", "ed": "J·cycles", "network_ed": "J·cycles"},
    "multiaccel": {"makespan": "s", "mean_completion": "s"},
    "bankmap": {"copy_cost": "B, off-chip weighted"},
}


def objective_scale(problem: str, objective: str, values: Sequence[float]) -> tuple[float, str]:
    """``(divisor, axis label)`` for objective values: seconds and joules get an SI prefix, other figures a power
    of a thousand when they are very large or small (so the ticks stay short)."""
    unit = OBJECTIVE_UNITS.get(problem, {}).get(objective, "")
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    if unit == "s":
        mult, name = time_scale(max(finite, default=1.0))
        return 1.0 / mult, f"{objective} [{name}]"
    if unit in ("pJ", "J"):
        div, name = si_scale(finite, unit)
        return div, f"{objective} [{name}]"
    peak = max(finite, default=1.0)
    exp = 0
    if peak >= 1e7 or peak < 1e-2:
        exp = 3 * math.floor(math.log10(peak) / 3)
    label = objective + (f" [{unit}]" if unit else "")
    if exp:
        label += f" (×1e{exp})"
    return 10.0 ** exp, label


# ================================================================================================ results
def ok(result: Result) -> bool:
    """A result with a verified objective (what can be compared)."""
    return result.verified and result.objective is not None


def solved(results: Sequence[Result]) -> list[Result]:
    """Results with a verified objective (what can be compared)."""
    return [r for r in results if ok(r)]


def method_labels(results: Sequence[Result]) -> list[str]:
    return [r.method for r in results]


def missing_note(results: Sequence[Result], shown: Sequence[Result]) -> str:
    """A subtitle fragment naming the methods without a verified solution."""
    ids = {id(r) for r in shown}
    missing = [f"{r.method} ({r.status.value})" for r in results if id(r) not in ids]
    return ("no verified solution: " + ", ".join(missing)) if missing else ""


def join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def comparison_title(results: Sequence[Result], title: str | None, what: str) -> str:
    if title:
        return title
    r = results[0]
    return f"{r.instance} ({r.problem}): {what}"


def plot_objective(results: Sequence[Result], *, title: str | None = None) -> Figure:
    """Each method's verified objective (bar), proven bound (black tick) and status (above the bar)."""
    fig = new_figure(category_width(len(results), per=0.9, base=2.5), 5.0)
    ax = fig.add_subplot()
    r0 = results[0]
    xs = list(range(len(results)))
    objectives = [r.objective for r in results if ok(r) and r.objective is not None]
    div, label = objective_scale(r0.problem, r0.objective_name, objectives)
    values = [r.objective / div if ok(r) and r.objective is not None else 0.0 for r in results]
    best = min(objectives, default=None)
    bars = ax.bar(xs, values, color=[colour(i) for i in xs], width=0.65)
    bound_labelled = False
    for x, r, bar in zip(xs, results, bars, strict=True):
        if r.bound is not None and math.isfinite(r.bound):
            ax.plot([x - 0.38, x + 0.38], [r.bound / div] * 2, color="black", lw=2,
                    label=None if bound_labelled else "proven bound")
            bound_labelled = True
        if ok(r) and r.objective is not None:
            ratio = f"\n×{r.objective / best:.4g}" if best not in (None, 0) and r.objective != best else ""
            ax.annotate(f"{fmt_num(r.objective / div)}{ratio}\n{r.status.value}", (x, bar.get_height()),
                        xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8)
        else:
            ax.annotate(f"no solution\n{r.status.value}", (x, 0), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color=WARN_COLOUR)
    tick_labels(ax, xs, [r.method for r in results])
    ax.set_ylabel(f"{label}, minimised")
    number_axis(ax)
    ax.margins(y=0.22)
    if bound_labelled:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
    ax.grid(axis="y", alpha=0.3)
    set_titles(fig, comparison_title(results, title, f"objective '{r0.objective_name}' per method"),
               missing_note(results, solved(results)))
    return fig


def plot_trace(results: Sequence[Result], *, title: str | None = None) -> Figure:
    """The exact methods' incumbent (solid step line) and bound (dashed) over solve time, and every other method's
    objective as a horizontal line (with a dot at the time it took). A method without a trace (solved at the root,
    by a relaxation, or by enumeration) is drawn as its final objective and bound at its finishing time."""
    fig = new_figure(11.0, 5.5)
    ax = fig.add_subplot()
    r0 = results[0]
    traced = [r for r in results if r.trace]
    notes: list[str] = []
    t_max = max([r.time_s for r in results] + [p.time_s for r in traced for p in r.trace] + [1e-3])
    raw = [r.objective for r in results if ok(r) and r.objective is not None]
    raw += [v for r in traced for p in r.trace for v in (p.incumbent, p.bound) if v is not None]
    div, label = objective_scale(r0.problem, r0.objective_name, raw)

    def sc(v: float | None) -> float | None:
        return None if v is None or not math.isfinite(v) else v / div

    values: list[float] = []
    for i, r in enumerate(results):
        c = colour(i)
        if r.trace:
            ts = [p.time_s for p in r.trace]
            inc = [sc(p.incumbent) for p in r.trace]
            bnd = [sc(p.bound) for p in r.trace]
            _step(ax, ts, inc, t_max, color=c, lw=2.0, label=f"{r.method}: incumbent")
            _step(ax, ts, bnd, t_max, color=c, lw=1.5, ls="--", label=f"{r.method}: bound")
            values += [v for v in inc + bnd if v is not None]
            if ok(r) and r.objective is not None:
                ax.plot([r.time_s], [r.objective / div], marker="*", ms=13, color=c, mec="black", ls="none",
                        label=f"{r.method}: returned {fmt_num(r.objective / div)} ({r.status.value})")
                values.append(r.objective / div)
            if r.bound is not None and math.isfinite(r.bound):
                ax.plot([r.time_s], [r.bound / div], marker="_", ms=16, mew=2.5, color=c, ls="none",
                        label=f"{r.method}: proven bound {fmt_num(r.bound / div)}")
                values.append(r.bound / div)
            if r.objective is not None and _differs(r):
                notes.append(f"{r.method}: the trace is the solver model's own incumbent and bound; the returned "
                             "objective and proven bound (star, bar) are the evaluator's")
        elif ok(r) and r.objective is not None:
            exact_like = r.bound is not None
            ax.axhline(r.objective / div, color=c, lw=1.3, ls="-." if exact_like else ":", alpha=0.9)
            ax.plot([r.time_s], [r.objective / div], marker="o", color=c, ls="none",
                    label=f"{r.method}: {fmt_num(r.objective / div)} ({r.status.value}, {r.time_s:.3g} s)")
            values.append(r.objective / div)
            if exact_like and r.bound is not None and math.isfinite(r.bound):
                ax.plot([r.time_s], [r.bound / div], marker="_", ms=14, mew=2, color=c, ls="none")
                values.append(r.bound / div)
                notes.append(f"{r.method}: no solver trace ({shorten(r.message, 70)})" if r.message
                             else f"{r.method}: no solver trace")
        else:
            notes.append(f"{r.method}: {r.status.value}, no objective")
    if not values:
        empty_note(ax, "no method has a verified objective or a solver trace")
    else:
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.08 or max(abs(hi) * 0.05, 1e-9)
        ax.set_ylim(lo - pad, hi + pad)
        ax.set_xlim(0, t_max * 1.05)
        ax.set_xlabel("solve time [s]")
        ax.set_ylabel(f"{label}, minimised")
        number_axis(ax)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
    if not traced:
        notes.insert(0, "no method recorded a solver trace")
    set_titles(fig, comparison_title(results, title, "incumbent and bound over time"),
               shorten("; ".join(notes), 160))
    return fig


def _differs(r: Result) -> bool:
    """Whether the trace's last incumbent or bound disagrees with the returned objective (a solver model whose
    values are not the evaluator's, e.g. CP-SAT's bandwidth modes for multiaccel)."""
    assert r.objective is not None
    tol = 1e-6 * max(1.0, abs(r.objective))
    last_inc = next((p.incumbent for p in reversed(r.trace) if p.incumbent is not None), None)
    last_bnd = next((p.bound for p in reversed(r.trace) if p.bound is not None), None)
    return bool((last_bnd is not None and last_bnd > r.objective + tol)
                or (last_inc is not None and abs(last_inc - r.objective) > tol))


def _step(ax: Axes, ts: Sequence[float], ys: Sequence[float | None], t_end: float, **kw: Any) -> None:
    """A post-step line through the points with a value, extended to ``t_end``."""
    pts = [(t, y) for t, y in zip(ts, ys, strict=True) if y is not None and math.isfinite(y)]
    if not pts:
        return
    xs = [t for t, _ in pts] + [max(t_end, pts[-1][0])]
    yv = [y for _, y in pts] + [pts[-1][1]]
    ax.step(xs, yv, where="post", **kw)


Drawer = Callable[..., Figure]


class PlotKind:
    """One plot kind of a problem: its name, a one-line description (for help and error messages) and the function
    that draws it. Solution kinds are called ``draw(prepared, solution, evaluation, title, subject)`` (``subject``:
    the instance, and the method when known, for the default title); comparison kinds
    ``draw(results, prepared, title)`` (``prepared`` may be ``None`` unless ``needs_prepared``)."""

    def __init__(self, name: str, description: str, draw: Drawer, *, needs_prepared: bool = False) -> None:
        self.name = name
        self.description = description
        self.draw = draw
        self.needs_prepared = needs_prepared

    def __repr__(self) -> str:
        return f"PlotKind({self.name!r})"


def layer_values(result: Result, names: Sequence[str], key: str) -> list[float]:
    """``result.metrics["layers"][…][key]`` in the order of ``names`` (NaN where a layer is missing)."""
    per = {rec["layer"]: rec for rec in result.metrics["layers"]}
    return [float(per[n][key]) if n in per else math.nan for n in names]


def layer_comparison_frame(results: Sequence[Result], title: str | None, what: str, *, per: float, base: float,
                           minimum: float) -> tuple[Figure, Axes, Axes, list[Result], list[str], bool]:
    """The two stacked panels of a per-layer comparison, the methods with per-layer metrics and the layer names
    (workload order); the last item is False when no method has any (the figure then carries the note)."""
    shown = [r for r in solved(results) if r.metrics.get("layers")]
    names: list[str] = list(dict.fromkeys(rec["layer"] for r in shown for rec in r.metrics["layers"]))
    fig = new_figure(category_width(max(len(names), 1) * max(len(shown), 1), per=per, base=base, minimum=minimum),
                     7.5)
    top, bottom = fig.subplots(2, 1, sharex=True)
    if not shown:
        empty_note(top, "no method has a verified solution")
        bottom.set_axis_off()
        set_titles(fig, comparison_title(results, title, what), missing_note(results, shown))
    return fig, top, bottom, shown, names, bool(shown)


def layer_scales(shown: Sequence[Result], names: Sequence[str], *series: tuple[str, str]) -> list[tuple[float, str]]:
    """For each ``(metric key, unit)``: the SI scale and unit of that per-layer metric over every shown method."""
    return [si_scale([v for r in shown for v in layer_values(r, names, key)], unit) for key, unit in series]
