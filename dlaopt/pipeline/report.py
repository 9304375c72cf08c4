"""The compile report: Markdown for people, JSON for programs, plots where they help, and every stage's instance and
solution written out so ``dlaopt verify`` can re-check each of them alone.

Files written by :func:`write_report` into the output folder::

    report.md  report.json
    stages/<stage>.yaml  stages/<stage>-solution.yaml      (instance and the solution handed on)
    plots/<stage>.png                                       (methods compared; the assignment's Gantt chart)

A report the total time limit left incomplete is written all the same: the stages that finished with their files,
the others listed with their status (``report.json``: ``complete: false``, ``not_run``), and no end-to-end figures.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from dlaopt.io.instance import save_mapping
from dlaopt.pipeline.compile import CompileReport
from dlaopt.pipeline.stages import StageOutcome
from dlaopt.results import fmt_gap, fmt_number, md_table

_PLOTS = {"mapping": ("comparison", "layers"), "pinning": ("comparison", "transfers"),
          "bankmap": ("comparison", "copies"), "assignment": ("solution", "gantt")}


def _si(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")):
        if abs(v) >= scale:
            return f"{v / scale:.4g} {prefix}{unit}"
    if v and abs(v) < 1:
        for scale, prefix in ((1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
            if abs(v) >= scale:
                return f"{v / scale:.4g} {prefix}{unit}"
    return f"{v:.4g} {unit}"


def _methods_table(stage: StageOutcome) -> str:
    rows = []
    for r in stage.rows():
        rows.append([r["method"] + (" ◀" if r["used"] else ""), r["status"], fmt_number(r["objective"]),
                     fmt_number(r["bound"]), fmt_gap(r["gap"]), f"{r['time_s']:.2f}", fmt_number(r["verified"])])
    return md_table(["method", "status", stage.chosen.objective_name, "bound", "gap", "time [s]", "verified"], rows,
                    "llrrrrl")


def _summary_lines(summary: Mapping[str, Any]) -> list[str]:
    out = []
    for k, v in summary.items():
        if k.endswith("_pj") and isinstance(v, int | float):
            k, v = k[:-3], _si(float(v) * 1e-12, "J")
        elif k.endswith("_s") and isinstance(v, int | float):
            k, v = k[:-2], _si(float(v), "s")
        elif isinstance(v, Mapping):
            v = ", ".join(f"{a}: {fmt_number(b) if isinstance(b, int | float) else b}" for a, b in v.items())
        elif isinstance(v, int | float) and not isinstance(v, bool):
            v = fmt_number(v)
        out.append(f"- {k.replace('_', ' ')}: {v}")
    return out


def _layer_table(report: CompileReport, limit: int = 12) -> str:
    top = sorted(report.layers, key=lambda f: -f.latency_cycles)[:limit]
    rows = [[f.layer, fmt_number(f.latency_cycles), fmt_number(f.onchip_cycles), _si(f.energy_pj * 1e-12, "J"),
             fmt_number(f.dram_bytes), "×".join(map(str, f.block)) + (f" / {f.reduce}" if f.reduce else "")]
            for f in top]
    return md_table(["layer", "cycles", "on-chip cycles", "energy", "DRAM bytes", "on-chip tile (out / reduction)"],
                    rows, "lrrrrl")


def _status_lines(report: CompileReport) -> list[str]:
    """The stage table at the top of an incomplete or cut-short report."""
    rows = [[s["stage"], s["status"]] for s in report.statuses()]
    limit = f" of {report.total_time_limit:g} s" if report.total_time_limit is not None else ""
    if report.complete:
        head = f"Every stage ran; the total time limit{limit} cut some short (their solutions are still verified)."
    else:
        stopped = ", ".join(n["stage"] for n in report.not_run)
        head = (f"**Incomplete**: the total time limit{limit} stopped the pipeline before every stage ran "
                f"({stopped}); the stages that finished are below, with their files.")
    lines = ["## Stages", "", head, "", md_table(["stage", "status"], rows, "ll"), ""]
    for n in report.not_run:
        if n.get("message"):
            lines += [f"- {n['stage']}: {n['message']}"]
    return lines + ([""] if any(n.get("message") for n in report.not_run) else [])


def report_markdown(report: CompileReport, *, plots: bool | Collection[str] = True) -> str:
    """The Markdown report (``plots``: link each stage's plot, or the plots of the stages named)."""
    e = report.end_to_end
    hw = report.hardware.get("preset") or report.hardware.get("name", "inline accelerator")
    title = f"# dlaopt compile: {report.network} on {hw}"
    if report.platform:
        title += f" and {report.platform.get('platform') or report.platform.get('name', 'a platform')}"
    which = "Every stage's" if report.complete else "Every finished stage's"
    lines = [title, "", f"{which} solution was verified by its problem's independent evaluator; "
             f"total time {report.time_s:.1f} s.", ""]
    if not report.complete or any(s.cut_short for s in report.stages):
        lines += _status_lines(report)
    lines += ["## End to end", ""]
    if not e:
        lines += ["Not computed: the end-to-end figures need every stage, and "
                  f"{', '.join(n['stage'] for n in report.not_run)} did not run (total time limit).", ""]
        lines += _stage_sections(report, plots)
        return "\n".join(lines)
    rows = [["latency", f"{fmt_number(e['cycles'])} cycles ({_si(e['latency_s'], 's')})"],
            ["  compute (mapped layers on chip + vector operators)", fmt_number(e["compute_cycles"])],
            ["  DMA (pinning transfers)", fmt_number(e["dma_cycles"])],
            ["  bank relayout copies", fmt_number(e["copy_cycles"])],
            ["energy", _si(e["energy_pj"] * 1e-12, "J")]]
    rows += [[f"  {k.replace('_', ' ')}", _si(v * 1e-12, "J")] for k, v in e["energy_breakdown_pj"].items()]
    rows += [["main-memory traffic", f"{fmt_number(e['transfer_bytes'])} B"]]
    if e.get("naive_cycles"):
        rows.append(["speedup over naive pinning (same mappings)", f"{e['naive_cycles'] / e['cycles']:.3f}×"])
    rows.append(["mapping cost model alone: every layer's operands from main memory, transfers overlapped with "
                 "compute (double buffering; the pinning accounting above does not overlap, as SMAUG)",
                 f"{fmt_number(e['layers_alone_cycles'])} cycles"])
    if "platform" in e:
        p = e["platform"]
        rows += [[f"platform: {p['tenants']} requests, makespan", _si(p["makespan_s"], "s")],
                 ["platform: throughput", f"{p['requests_per_s']:.4g} requests/s ({fmt_number(p['throughput_gops'])}"
                  " GOPS)"],
                 ["platform: energy of the assigned jobs", _si(p["energy_pj"] * 1e-12, "J")]]
    lines += [md_table(["", ""], rows, "lr"), ""]
    return "\n".join(lines + _stage_sections(report, plots))


def _stage_sections(report: CompileReport, plots: bool | Collection[str]) -> list[str]:
    lines: list[str] = []
    for i, stage in enumerate(report.stages, 1):
        lines += [f"## Stage {i}: {stage.name} — {stage.title}", ""]
        if stage.cut_short:
            lines += [f"Status: {stage.status}.", ""]
        lines += [_methods_table(stage), "", *_summary_lines(stage.summary), ""]
        if stage.name == "mapping":
            lines += ["Slowest layers:", "", _layer_table(report), ""]
        if stage.name == "assignment" and report.platform_jobs:
            rows = [[a, _si(v["latency_s"], "s"), fmt_number(v["dram_bytes"]), _si(v["energy_pj"] * 1e-12, "J")]
                    for a, v in report.platform_jobs["accelerators"].items()]
            lines += ["One request's layers on each sub-accelerator (job analysis):", "",
                      md_table(["sub-accelerator", "latency", "DRAM bytes", "energy"], rows, "lrrr"), ""]
        plot = report_files(stage).get("plot")
        if plot and (plots is True or (not isinstance(plots, bool) and stage.name in plots)):
            lines += [f"![{stage.name}]({plot})", ""]
    for i, n in enumerate(report.not_run, len(report.stages) + 1):
        lines += [f"## Stage {i}: {n['stage']} — {n['title']}", "", f"{n['status']}.", ""]
    return lines


def report_files(stage: StageOutcome) -> dict[str, str]:
    """Relative paths of a stage's files in the output folder."""
    out = {"instance": f"stages/{stage.name}.yaml", "solution": f"stages/{stage.name}-solution.yaml"}
    if stage.name in _PLOTS:
        out["plot"] = f"plots/{stage.name}.png"
    return out


def _json_safe(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Mapping):
        return {str(k): _json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_safe(x) for x in v]
    return v


def _plot(stage: StageOutcome, path: Path) -> None:
    from dlaopt.plots import plot_comparison, plot_solution, save

    what, kind = _PLOTS[stage.name]
    if what == "comparison":
        fig = plot_comparison(stage.results, kind=kind, prepared=stage.prepared)
    else:
        fig = plot_solution(stage.prepared, stage.chosen.solution, kind=kind)
    save(fig, path)


def write_report(report: CompileReport, out_dir: str | Path, *, plots: bool = True,
                 deadline: float | None = None) -> dict[str, Path]:
    """Write the report files (module docstring); returns the main paths. With a ``deadline`` (``time.monotonic()``
    of a total time limit) no plot is started after it (the report links only the plots drawn)."""
    out = Path(out_dir)
    (out / "stages").mkdir(parents=True, exist_ok=True)
    drawn: set[str] = set()
    for stage in report.stages:
        files = report_files(stage)
        save_mapping(stage.instance, out / files["instance"])
        save_mapping(stage.chosen.solution_document(), out / files["solution"])
        if plots and "plot" in files and (deadline is None or time.monotonic() < deadline):
            (out / "plots").mkdir(exist_ok=True)
            _plot(stage, out / files["plot"])
            drawn.add(stage.name)
    md = out / "report.md"
    md.write_text(report_markdown(report, plots=drawn) + "\n")
    js = out / "report.json"
    js.write_text(json.dumps(_json_safe(report.to_dict()), indent=1) + "\n")
    return {"markdown": md, "json": js, "folder": out}


__all__ = ["report_files", "report_markdown", "write_report"]
