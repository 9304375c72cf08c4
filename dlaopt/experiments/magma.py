"""Seed 001's MAGMA benchmark (Chapter 7): job groups of four task types on platforms S1, S2, S4 at 1, 16, 256 GB/s.

Per instance: MAGMA (100 × 100 = 10,000 samples, timed), Herald-like, AI-MT-like and LPT, then the exact method
warm-started from the best of them (MAGMA included) and given ``time_factor`` × MAGMA's wall time (default 10), with
its levers (``options.exact_tuning``) on. Every schedule is re-simulated by the fluid evaluator; the table reports
throughput (GOPS) per method, exact's proven bound (as a throughput ceiling) and its gap, and the ratios the seed
reports (MAGMA over Herald-like; S4 against S3 at scarce bandwidth).

:func:`benchmark_rows` runs several exact settings (:class:`ExactSetting`: levers, time factor, least time) on the
same heuristic results in one pass, e.g. :data:`BEFORE_LEVERS` (every lever off, ``max(MAGMA's time, 1 s)``) against
:func:`with_levers` — how the scale benchmark compares the method without and with its levers.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlaopt import harness
from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator
from dlaopt.formulations.multiaccel.model import Assignment
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions
from dlaopt.specs.multiaccel import EXACT_LEVERS
from dlaopt.specs.tuning import all_off

TASKS = ("vision", "language", "recommendation", "mix")
PLATFORMS = ("magma-s1", "magma-s2", "magma-s4")
BANDWIDTHS = (1.0, 16.0, 256.0)
HEURISTICS = ("magma", "herald", "ai-mt", "lpt")
DEFAULT_TIME_FACTOR = 10.0


@dataclass(frozen=True)
class ExactSetting:
    """How the exact method runs in the benchmark: ``exact_tuning`` levers (missing ones on) and its time limit,
    ``max(time_factor × MAGMA's wall time, min_time_s)``."""

    name: str
    levers: Mapping[str, bool] = field(default_factory=dict)
    time_factor: float = DEFAULT_TIME_FACTOR
    min_time_s: float = 0.0

    def time_limit(self, magma_s: float) -> float:
        return max(self.time_factor * magma_s, self.min_time_s)


BEFORE_LEVERS = ExactSetting("without levers", all_off(EXACT_LEVERS), time_factor=1.0, min_time_s=1.0)
"""The exact method without any lever, given ``max(MAGMA's wall time, 1 s)``."""


def with_levers(time_factor: float = DEFAULT_TIME_FACTOR) -> ExactSetting:
    """The exact method with every lever on, given ``time_factor`` × MAGMA's wall time."""
    return ExactSetting("with levers", {}, time_factor=time_factor)


def instance_doc(task: str, platform: str, bandwidth_gbps: float, *, group_size: int = 100, seed: int = 0,
                 cache_dir: str | None = None) -> dict[str, Any]:
    return {"problem": "multiaccel", "name": f"{task}-{platform}-{bandwidth_gbps:g}gbps",
            "workload": {"task": task, "group_size": group_size, "seed": seed},
            "hardware": {"platform": platform, "params": {"system_bandwidth_gbps": bandwidth_gbps}},
            "options": {"cache_dir": cache_dir}}


def run_one(doc: dict[str, Any], *, seed: int = 0, threads: int = 2,
            time_factor: float = DEFAULT_TIME_FACTOR) -> dict[str, Any]:
    """Every method on one instance, exact with its levers and ``time_factor`` × MAGMA's time; throughputs from the
    fluid evaluator."""
    return run_settings(doc, [with_levers(time_factor)], seed=seed, threads=threads)[0]


def run_settings(doc: dict[str, Any], settings: Sequence[ExactSetting], *, seed: int = 0,
                 threads: int = 2) -> list[dict[str, Any]]:
    """The heuristics once on one instance, then exact under every setting: one row per setting (the heuristics'
    columns repeated), ``setting`` naming it."""
    p = harness.prepare(instance_from_dict(doc))
    data = p.data
    ev = FluidEvaluator(data)
    total_ops = float(data.table.ops.sum())
    row: dict[str, Any] = {"instance": doc["name"], "task": doc["workload"]["task"],
                           "platform": doc["hardware"]["platform"],
                           "bandwidth_gbps": doc["hardware"]["params"]["system_bandwidth_gbps"],
                           "jobs": data.table.n_jobs}
    best: tuple[str, Assignment, float] | None = None
    magma_s = 0.0
    for name in HEURISTICS:
        t0 = time.perf_counter()
        a = p.problem.run_heuristic(name, data, SolveOptions(seed=seed))
        secs = time.perf_counter() - t0
        if name == "magma":
            magma_s = secs
        makespan = ev.simulate(a).makespan
        row[f"{name}_gops"] = total_ops / makespan / 1e9
        row[f"{name}_s"] = secs
        if best is None or makespan < best[2]:
            best = (name, a, makespan)
    assert best is not None
    data.options["warm_start"] = []  # the heuristics above are the warm start (their best is passed in)
    out = []
    for setting in settings:
        data.options["exact_tuning"] = dict(setting.levers)
        out.append(_exact_row(p, {**row, "setting": setting.name}, setting.time_limit(magma_s), best, total_ops,
                              seed=seed, threads=threads))
    return out


def _exact_row(p: Any, row: dict[str, Any], limit: float, best: tuple[str, Assignment, float], total_ops: float,
               *, seed: int, threads: int) -> dict[str, Any]:
    doc_name = row["instance"]
    opts = SolveOptions(seed=seed, threads=threads, time_limit=limit, extra={"warm_start_assignment": best[1]})
    r = harness.solve(p, "exact", options=opts)
    if not r.verified or r.objective is None:
        raise RuntimeError(f"{doc_name}: exact returned an unverified schedule: {r.message}")
    row["exact_gops"] = total_ops / r.objective / 1e9
    row["exact_s"] = r.time_s
    row["exact_limit_s"] = limit
    row["exact_status"] = r.status.value
    row["bound_gops"] = total_ops / r.bound / 1e9 if r.bound else None
    row["gap"] = r.gap
    row["exact_from"] = r.metrics.get("answer_from")
    row["cpsat_model_ms"] = (r.metrics.get("cpsat_model_makespan_s") or 0) * 1e3
    row["cpsat_fluid_ms"] = (r.metrics.get("cpsat_schedule_fluid_makespan_s") or 0) * 1e3
    row["warm_start"] = best[0]
    row["exact_ge_heuristics"] = all(row["exact_gops"] >= row[f"{h}_gops"] * (1 - 1e-9) for h in HEURISTICS)
    return row


def benchmark_rows(settings: Sequence[ExactSetting], *, tasks: Sequence[str] = TASKS,
                   platforms: Sequence[str] = PLATFORMS, bandwidths: Sequence[float] = BANDWIDTHS,
                   group_size: int = 100, seed: int = 0, cache_dir: str | None = None, threads: int = 2,
                   progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every instance (platform × bandwidth × task), the heuristics once and exact under every setting: one row per
    instance and setting (``row["setting"]`` is the setting's name; ``gap``, ``exact_gops``, ``bound_gops``,
    ``exact_s``, ``exact_limit_s``, ``magma_s`` ...)."""
    rows: list[dict[str, Any]] = []
    for platform in platforms:
        for bw in bandwidths:
            for task in tasks:
                doc = instance_doc(task, platform, bw, group_size=group_size, seed=seed, cache_dir=cache_dir)
                for row in run_settings(doc, settings, seed=seed, threads=threads):
                    rows.append(row)
                    if progress:
                        gap = "—" if row["gap"] is None else f"{row['gap']:.1%}"
                        label = f" [{row['setting']}]" if len(settings) > 1 else ""
                        progress(f"{row['instance']}{label}: exact {row['exact_gops']:.1f} GOPS "
                                 f"({row['exact_status']}, gap {gap}, {row['exact_s']:.1f} s), magma "
                                 f"{row['magma_gops']:.1f} ({row['magma_s']:.2f} s), herald {row['herald_gops']:.1f}")
    return rows


def run_benchmark(out_dir: str | Path, *, tasks: Sequence[str] = TASKS, platforms: Sequence[str] = PLATFORMS,
                  bandwidths: Sequence[float] = BANDWIDTHS, group_size: int = 100, seed: int = 0,
                  cache_dir: str | None = None, time_factor: float = DEFAULT_TIME_FACTOR,
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The benchmark with exact's levers on and ``time_factor`` × MAGMA's wall time; rows written as CSV, JSON and a
    markdown table."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = benchmark_rows([with_levers(time_factor)], tasks=tasks, platforms=platforms, bandwidths=bandwidths,
                          group_size=group_size, seed=seed, cache_dir=cache_dir, progress=progress)
    with (out / "magma_benchmark.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (out / "magma_benchmark.json").write_text(json.dumps(rows, indent=1, default=str))
    table = markdown(rows)
    (out / "magma_benchmark.md").write_text(table + "\n")
    return {"rows": rows, "table": table, "csv": str(out / "magma_benchmark.csv")}


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    cols = [("instance", "instance"), ("exact_gops", "exact"), ("bound_gops", "bound"), ("gap", "gap"),
            ("magma_gops", "MAGMA"), ("herald_gops", "Herald-like"), ("ai-mt_gops", "AI-MT-like"),
            ("lpt_gops", "LPT"), ("magma_s", "MAGMA s"), ("exact_limit_s", "exact limit s"), ("exact_s", "exact s"),
            ("exact_from", "exact's answer")]
    lines = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        cells = []
        for k, _ in cols:
            v = r.get(k)
            if k == "gap":
                cells.append("—" if v is None else f"{v:.1%}")
            elif isinstance(v, float):
                cells.append(f"{v:.1f}" if k.endswith("gops") else f"{v:.2f}")
            else:
                cells.append("—" if v is None else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
