"""A sweep's report (see :mod:`dlaopt.sweep`): :class:`SweepReport`, the summary and Markdown tables, the CSV and
JSON files, the thesis table's rows, the summary plot and the one-line summary for logs."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlaopt.results import (
    CSV_COLUMNS,
    RESULTS_CSV,
    RESULTS_JSON,
    RESULTS_JSONL,
    RESULTS_MD,
    csv_text,
    environment_markdown,
    fmt_gap,
    fmt_number,
    fmt_ratio,
    json_safe,
    md_table,
    seconds_text,
    total_seconds,
)
from dlaopt.sweep.files import Sweep, axis_path
from dlaopt.sweep.tasks import TOTAL_LIMIT_FAILURE

SUMMARY_PNG = "summary.png"


@dataclass
class SweepReport:
    sweep: Sweep
    out_dir: Path
    rows: list[dict[str, Any]]  # one per (task, method) in sweep order, with ratio_to_best
    environment: dict[str, Any]
    engine: dict[str, Any]
    run_id: str
    ran: int  # tasks run by this call
    skipped: int  # tasks found finished in results.jsonl
    complete: bool
    wall_time_s: float
    paths: dict[str, Path] = field(default_factory=dict)
    thesis_table: str | None = None
    total_time_limit: float | None = None
    not_run: tuple[str, ...] = ()  # tasks not run (or not finished) because the total time limit was reached

    @property
    def summary(self) -> str:
        return summary_markdown(self.sweep, self.rows)

    @property
    def markdown(self) -> str:
        return report_markdown(self)

    @property
    def failed(self) -> int:
        return len({r["instance"] for r in self.rows if r.get("failure") not in (None, TOTAL_LIMIT_FAILURE)})


def _by_task(sweep: Sweep, rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Mapping[str, Any]]]:
    out: dict[str, dict[str, Mapping[str, Any]]] = {t.name: {} for t in sweep.tasks}
    for r in rows:
        out.setdefault(r["instance"], {})[r["method"]] = r
    return out


def summary_markdown(sweep: Sweep, rows: Sequence[Mapping[str, Any]]) -> str:
    """Per workload and grid point, every method's objective (ratio to the best verified objective of the row; the
    status when it has no verified objective) and how many methods were verified. No times: two runs with the same
    results give the same table."""
    by_task = _by_task(sweep, rows)
    body = []
    for t in sweep.tasks:
        recs = by_task.get(t.name, {})
        cells = [t.workload, *(str(t.point[a]) for a in sweep.axes)]
        for m in sweep.methods:
            r = recs.get(m)
            if r is None:
                cells.append("(not run)")
            elif r.get("verified") and r.get("objective") is not None:
                cells.append(f"{fmt_number(r['objective'])} ({fmt_ratio(r.get('ratio_to_best'))})")
            else:
                cells.append(str(r.get("status")))
        cells.append(f"{sum(1 for r in recs.values() if r.get('verified'))}/{len(sweep.methods)}"
                     if recs else "-")
        body.append(cells)
    header = ["workload", *sweep.axes, *sweep.methods, "verified"]
    align = ["l", *(["r"] * len(sweep.axes)), *(["r"] * len(sweep.methods)), "r"]
    return md_table(header, body, align)


def pairs_markdown(sweep: Sweep, rows: Sequence[Mapping[str, Any]]) -> str:
    header = ["workload", *sweep.axes, "method", "status", "objective", "bound", "gap", "time [s]", "ratio to best",
              "verified", "message"]
    body = [[r.get("workload", ""), *(str((r.get("point") or {}).get(a, "")) for a in sweep.axes), r["method"],
             r["status"], fmt_number(r.get("objective")), fmt_number(r.get("bound")), fmt_gap(r.get("gap")),
             f"{float(r.get('time_s') or 0.0):.2f}", fmt_ratio(r.get("ratio_to_best")),
             "yes" if r.get("verified") else "no", _short(str(r.get("message") or ""), 80)] for r in rows]
    return md_table(header, body, ["l", *(["r"] * len(sweep.axes)), "l", "l", "r", "r", "r", "r", "r", "l", "l"])


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _solve_text(solve: Mapping[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in solve.items() if v is not None and k != "extra"]
    if solve.get("extra"):
        parts.append(f"extra {json.dumps(solve['extra'], sort_keys=True)}")
    return ", ".join(parts) if parts else "defaults"


def report_markdown(report: SweepReport) -> str:
    sweep, rows = report.sweep, report.rows
    eng = report.engine
    engine_text = ("run in one process" if eng.get("engine") == "local" else
                   f"run on Dask ({eng['description']})" if "description" in eng else "run")
    lines = [f"# Sweep `{sweep.name}`", ""]
    if sweep.description:
        lines += [sweep.description, ""]
    n_points = len(sweep.tasks) // max(1, len(sweep.workloads))
    lines += [f"Sweep file `{sweep.file}`: {len(sweep.workloads)} workloads × {n_points} grid points "
              f"({', '.join(sweep.axes) or 'no grid'}) = "
              f"{len(sweep.tasks)} tasks × {len(sweep.methods)} methods; solve options: {_solve_text(sweep.solve)}. "
              f"This run: {report.ran} tasks {engine_text}, {report.skipped} found finished; "
              f"{seconds_text(report.wall_time_s)} wall; {seconds_text(total_seconds(rows))} of solving in all. "
              "Objectives are minimised; the ratio is to the best verified objective of the row.", "",
              environment_markdown(report.environment), ""]
    if report.not_run:
        lines += [f"**Stopped by the total time limit** ({fmt_number(report.total_time_limit)} s): "
                  f"{len(report.not_run)} tasks not run or not finished ({_short(', '.join(report.not_run), 200)}); "
                  "run `dlaopt sweep` again to run them.", ""]
    elif not report.complete:
        done = len({r['instance'] for r in rows})
        lines += [f"**Incomplete**: {done} of {len(sweep.tasks)} tasks finished; run `dlaopt sweep` again to "
                  "resume.", ""]
    lines += ["## Summary", "", summary_markdown(sweep, rows), ""]
    if report.thesis_table is not None:
        lines += ["## Thesis table (seed 000, Table 7.1)", "", report.thesis_table]
    lines += ["## Every (instance, method) pair", "", pairs_markdown(sweep, rows), ""]
    return "\n".join(lines)


def _csv_columns(sweep: Sweep) -> tuple[list[str], dict[str, str]]:
    taken = {"workload", *CSV_COLUMNS, "run_id", "worker", "failure"}
    names = {a: (f"grid.{a}" if a in taken else a) for a in sweep.axes}
    return ["workload", *names.values(), *CSV_COLUMNS, "run_id", "worker", "failure"], names


def thesis_rows_of(sweep: Sweep, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the thesis table (:func:`dlaopt.experiments.pinning.thesis_rows`) from a sweep's records, per
    task in sweep order: the network is the workload label, the size the spad_kb axis."""
    from dlaopt.experiments.pinning import thesis_rows

    axis = next(a for a in sweep.axes if axis_path(a) == ("hardware", "params", "spad_kb"))
    by_task = _by_task(sweep, rows)
    out: list[dict[str, Any]] = []
    for t in sweep.tasks:
        recs = [by_task[t.name][m] for m in sweep.methods if m in by_task.get(t.name, {})]
        if recs:
            facts = next((r.get("facts") for r in recs if r.get("facts")), None) or {}
            out += thesis_rows(t.workload, t.point[axis], recs, facts.get("steps"), facts.get("buffers"))
    return out


def write_reports(report: SweepReport) -> dict[str, Path]:
    """``results.csv``, ``results.json``, ``results.md`` and ``summary.png`` (and for a complete sweep with ``report:
    thesis-table`` the ``thesis_sweep.*`` files) in the report's folder."""
    sweep, out = report.sweep, report.out_dir
    paths = {"jsonl": out / RESULTS_JSONL, "csv": out / RESULTS_CSV, "json": out / RESULTS_JSON,
             "md": out / RESULTS_MD}
    if sweep.report == "thesis-table" and report.complete:
        from dlaopt.experiments.pinning import write_thesis_report

        oversize = str(next((t.document.get("options", {}).get("oversize") for t in sweep.tasks), "tile"))
        thesis = write_thesis_report(thesis_rows_of(sweep, report.rows), out, oversize)
        report.thesis_table = thesis.table_markdown
        paths.update(thesis_csv=thesis.csv_path, thesis_md=thesis.table_path)
        if thesis.plot_path is not None:
            paths["thesis_png"] = thesis.plot_path
    columns, names = _csv_columns(sweep)
    flat = [{**r, **{names[a]: (r.get("point") or {}).get(a) for a in sweep.axes}} for r in report.rows]
    paths["csv"].write_text(csv_text(flat, columns), encoding="utf-8")
    doc = {"sweep": sweep.name, "description": sweep.description, "file": sweep.file, "complete": report.complete,
           "run_id": report.run_id, "ran": report.ran, "skipped": report.skipped,
           "total_time_limit": report.total_time_limit, "not_run": list(report.not_run),
           "wall_time_s": report.wall_time_s, "engine": {k: v for k, v in report.engine.items()},
           "environment": report.environment, "axes": list(sweep.axes), "methods": list(sweep.methods),
           "solve": dict(sweep.solve), "tasks": len(sweep.tasks), "rows": report.rows}
    paths["json"].write_text(json.dumps(json_safe(doc), indent=1, allow_nan=False, default=str) + "\n",
                             encoding="utf-8")
    paths["md"].write_text(report.markdown, encoding="utf-8")
    png = plot_summary(sweep, report.rows, out / SUMMARY_PNG)
    if png is not None:
        paths["png"] = png
    return paths


def plot_summary(sweep: Sweep, rows: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """Each method's ratio to the best verified objective against the first grid axis, one panel per workload (one
    line per method and value of the other axes); without a grid, one panel over the workloads."""
    ok = [r for r in rows if r.get("ratio_to_best") is not None and math.isfinite(float(r["ratio_to_best"]))]
    if not ok:
        return None
    from dlaopt.plots.common import colour, new_figure

    panels = list(sweep.workloads) if sweep.axes else [sweep.name]
    ncols = min(4, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = new_figure(4.2 * ncols, 3.2 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    x_axis = sweep.axes[0] if sweep.axes else None
    xs_all = [t.point[x_axis] for t in sweep.tasks] if x_axis else list(sweep.workloads)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs_all)
    cats = list(dict.fromkeys(xs_all))
    log_x = numeric and min(xs_all) > 0 and max(xs_all) / min(xs_all) >= 8
    handles: dict[str, Any] = {}
    for k, panel in enumerate(panels):
        ax = axes[k // ncols][k % ncols]
        mine = [r for r in ok if not sweep.axes or r.get("workload") == panel]
        series: dict[str, list[tuple[Any, float]]] = {}
        for r in mine:
            point = r.get("point") or {}
            rest = " ".join(f"{a}={point.get(a)}" for a in sweep.axes[1:])
            label = f"{r['method']} {rest}".strip()
            x = point.get(x_axis) if x_axis else r.get("workload")
            series.setdefault(label, []).append((x, float(r["ratio_to_best"])))
        for j, (label, pts) in enumerate(series.items()):
            m = label.split(" ")[0]
            c = colour(list(sweep.methods).index(m) if m in sweep.methods else j)
            pts.sort(key=lambda p: p[0] if numeric else cats.index(p[0]))
            px = [p[0] if numeric else cats.index(p[0]) for p in pts]
            (line,) = ax.plot(px, [p[1] for p in pts], marker="o", ms=3, lw=1.2, color=c, label=label,
                              linestyle="-" if label == m else "--")
            handles.setdefault(label, line)
        if log_x:
            ax.set_xscale("log", base=2)
        if numeric:
            ticks = sorted(set(xs_all))
            ax.set_xticks(ticks, [fmt_number(v) for v in ticks])
            ax.minorticks_off()
        else:
            ax.set_xticks(range(len(cats)), [str(c) for c in cats], rotation=30, ha="right")
        ax.set_title(panel if sweep.axes else "every workload", fontsize=10)
        ax.set_xlabel(x_axis or "workload")
        ax.set_ylabel("ratio to best")
        ax.grid(True, alpha=0.3)
    for k in range(len(panels), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=min(6, len(handles)),
               fontsize=8)
    fig.suptitle(f"Sweep {sweep.name}: each method's objective over the best verified one (1 = best)", fontsize=11)
    fig.savefig(path)
    return path


def main_summary(report: SweepReport) -> str:
    """One line for logs: what ran, what was skipped, where the files are."""
    failed = f", {report.failed} failed" if report.failed else ""
    if report.not_run:
        failed += f", {len(report.not_run)} not run (total time limit)"
    return (f"sweep {report.sweep.name}: {report.ran} tasks run, {report.skipped} skipped (already finished){failed};"
            f" {len({r['instance'] for r in report.rows})} of {len(report.sweep.tasks)} tasks in "
            f"{seconds_text(report.wall_time_s)}; results in {report.out_dir}")

