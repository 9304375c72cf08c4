"""The compile-pipeline benchmark: ResNet-50 through every stage on the SMAUG-like preset (three 256 KB
scratchpads, here split into 8 banks each so the bank stage has layouts to choose) and a MAGMA S2 platform (three HB
and one LB 32x64 sub-accelerators at 16 GB/s) for four requests; every stage verified.

:func:`run_compile_benchmark` returns the report and a Markdown table of the figures: per stage the solution handed on,
the best heuristic, their ratio, the proven gap and the wall time; then the end-to-end estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlaopt.pipeline import CompileOptions, CompileReport, compile_network, hardware_document, workload_document
from dlaopt.pipeline.report import write_report
from dlaopt.results import fmt_gap, fmt_number, md_table

NETWORK = "resnet50"
HARDWARE = ("smaug-nvdla", {"spad_kb": 256, "banks": 8})
PLATFORM = ("magma-s2", {"system_bandwidth_gbps": 16.0})


def stage_rows(report: CompileReport) -> list[dict[str, Any]]:
    rows = []
    for s in report.stages:
        heur = [r for r in s.results if r.verified and r.method != s.chosen.method and r.objective is not None
                and s.prepared.problem.method(r.method).kind == "heuristic"]
        best = min(heur, key=lambda r: float(r.objective)) if heur else None  # type: ignore[arg-type]
        rows.append({"stage": s.name, "objective_name": s.chosen.objective_name, "used": s.chosen.method,
                     "status": s.chosen.status.value, "objective": s.chosen.objective, "gap": s.chosen.gap,
                     "best_heuristic": best.method if best else None,
                     "heuristic_objective": best.objective if best else None,
                     "heuristic_over_used": (float(best.objective) / float(s.chosen.objective)
                                             if best and s.chosen.objective else None),
                     "verified": all(r.verified for r in s.results), "time_s": s.time_s})
    return rows


def figures_markdown(report: CompileReport) -> str:
    rows = stage_rows(report)
    table = md_table(
        ["stage", "objective", "used", "status", "value", "gap", "best heuristic", "heuristic / used",
         "all verified", "time [s]"],
        [[r["stage"], r["objective_name"], r["used"], r["status"], fmt_number(r["objective"]), fmt_gap(r["gap"]),
          f"{r['best_heuristic']} {fmt_number(r['heuristic_objective'])}" if r["best_heuristic"] else "-",
          f"{r['heuristic_over_used']:.3f}" if r["heuristic_over_used"] else "-", fmt_number(r["verified"]),
          f"{r['time_s']:.1f}"] for r in rows], "llllrrlrlr")
    e = report.end_to_end
    lines = [table, "", f"End to end on {HARDWARE[0]}: {fmt_number(e['cycles'])} cycles "
             f"({e['latency_s'] * 1e3:.3f} ms), {e['energy_pj'] * 1e-9:.3f} mJ, "
             f"{fmt_number(e['transfer_bytes'])} B main-memory traffic; naive pinning "
             f"{fmt_number(e['naive_cycles'])} cycles ({e['naive_cycles'] / e['cycles']:.3f}x)."]
    if "platform" in e:
        p = e["platform"]
        lines.append(f"On {PLATFORM[0]}: {p['tenants']} requests in {p['makespan_s'] * 1e3:.3f} ms, "
                     f"{p['requests_per_s']:.1f} requests/s, {p['energy_pj'] * 1e-9:.3f} mJ.")
    lines.append(f"Total {report.time_s:.1f} s.")
    return "\n".join(lines)


def run_compile_benchmark(out_dir: str | Path = "results/compile-benchmark", *, time_limit: float = 60.0,
                          threads: int | None = None,
                          progress: Callable[[str], None] | None = None) -> tuple[CompileReport, str]:
    def on_stage(stage: str, event: str, outcome: Any) -> None:
        if progress is not None and outcome is not None:
            progress(f"{stage}: {outcome.chosen.method} {fmt_number(outcome.chosen.objective)} "
                     f"({outcome.chosen.status.value}) in {outcome.time_s:.1f} s")

    report = compile_network(workload_document(NETWORK), hardware_document(*HARDWARE),
                             hardware_document(*PLATFORM, platform=True),
                             CompileOptions(time_limit=time_limit, threads=threads, progress=on_stage))
    write_report(report, out_dir)
    return report, figures_markdown(report)


__all__ = ["figures_markdown", "run_compile_benchmark", "stage_rows"]
