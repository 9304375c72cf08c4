"""The mapping benchmark (seeds 001 and 004): every unique conv layer of a network on given presets, every method.

Per layer: ``exact`` (warm-started from the three dataflow templates, its time including theirs) must prove
optimality; ``ga`` runs for the same wall time as ``exact`` took on that layer (seed 001's GAMMA with an unbounded
evaluation budget and that time limit); ``random`` draws 10,000 samples (seed 001 §4.4.1); the three fixed dataflows
run once. Every mapping is re-evaluated by the cost model. Layers are run in worker processes (each timing its own
methods back to back, so ratios within a row share one machine state).
"""

from __future__ import annotations

import csv
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.layers import run_layer_exact, run_layer_heuristic
from dlaopt.formulations.mapping.loopnest import LoopNest, loopnest_from_operator, mappable_layers, unique_layers
from dlaopt.hardware.presets import PRESETS
from dlaopt.solvers.processes import worker_pool
from dlaopt.solvers.result import SolveOptions
from dlaopt.specs import mapping as mapping_options
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator
from dlaopt.zoo import ZOO

METHODS = ("exact", "ga", "random", "nvdla", "eyeriss", "shidiannao")


@dataclass
class Layer:
    op: Operator
    nest: LoopNest
    count: int  # layers of this shape in the network


def unique_conv_layers(workload: Workload) -> list[Layer]:
    """The workload's unique conv layers (conv2d or depthwise) with how often each shape occurs."""
    nests_ops = [(loopnest_from_operator(workload, op), op) for op in mappable_layers(workload)]
    out = []
    for group in unique_layers([n for n, _ in nests_ops]).values():
        nest, op = nests_ops[group[0]]
        if nest.kind in ("conv2d", "depthwise"):
            out.append(Layer(op, nest, len(group)))
    return out


def conv_layers(network: str, params: dict[str, Any] | None = None) -> list[tuple[LoopNest, int]]:
    """A zoo network's unique conv layers as (loop nest, count)."""
    return [(la.nest, la.count) for la in unique_conv_layers(ZOO.create(network, params or {}))]


def layer_stride(nest: LoopNest) -> int:
    """The vertical stride of a convolution (the coefficient of P in the input row coordinate)."""
    return dict(nest.operand("I").coords[3].terms).get("P", 1)


def benchmark_layer(nest: LoopNest, arch: MappingArch, objective: str, time_limit: float, seed: int,
                    methods: tuple[str, ...]) -> dict[str, Any]:
    options = dict(mapping_options.DEFAULT_OPTIONS)
    out: dict[str, Any] = {"layer": nest.name, "shape": nest.shape_text, "stride": layer_stride(nest)}
    exact_time = None
    if "exact" in methods:
        r = run_layer_exact(nest, arch, objective, options, SolveOptions(time_limit=time_limit, threads=1, seed=seed),
                            "highs")
        exact_time = r["time_s"]
        out["exact"] = {"objective": r["objective"], "bound": r["bound"], "status": r["status"],
                        "time_s": r["time_s"], "warm_start_s": r["warm_start_s"], "solves": r["solves"],
                        "model": r["model_stats"]}
    for h in methods:
        if h == "exact":
            continue
        t_lim = None
        if h == "ga":
            t_lim = exact_time if exact_time is not None else time_limit
            opts = {**options, "ga_population": 200, "ga_generations": 10**6}
        else:
            opts = options
        m, secs = run_layer_heuristic(h, nest, arch, objective, opts, seed, t_lim)
        rep = evaluate_mapping(nest, arch, m) if m is not None else None
        out[h] = {"objective": rep.objective(objective) if rep is not None and rep.valid else None, "time_s": secs}
    return out


def run_mapping_benchmark(
    out_dir: str | Path = "results/mapping-benchmark",
    *,
    network: str = "resnet50",
    presets: tuple[str, ...] = ("eyeriss", "accel-b"),
    objective: str = "energy",
    methods: tuple[str, ...] = METHODS,
    time_limit: float = 60.0,
    seed: int = 0,
    workers: int = 2,
    layers: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    convs = conv_layers(network)[: layers]
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for preset in presets:
        arch = arch_from_accelerator(PRESETS.create(preset, {}))
        args = [(n, arch, objective, time_limit, seed, methods) for n, _ in convs]
        t0 = time.perf_counter()
        if workers > 1:
            with worker_pool(workers) as pool:
                results = list(pool.map(benchmark_layer, *zip(*args, strict=True)))
        else:
            results = [benchmark_layer(*a) for a in args]
        wall = time.perf_counter() - t0
        for (_, count), res in zip(convs, results, strict=True):
            row: dict[str, Any] = {"preset": preset, "layer": res["layer"], "shape": res["shape"],
                                   "stride": res["stride"], "count": count}
            best = min((res[m]["objective"] for m in methods if res[m]["objective"] is not None), default=None)
            for m in methods:
                r = res[m]
                row[f"{m}_objective"] = r["objective"]
                row[f"{m}_time_s"] = round(r["time_s"], 3)
                row[f"{m}_ratio"] = (r["objective"] / best) if r["objective"] is not None and best else None
            if "exact" in methods:
                row["exact_status"] = res["exact"]["status"]
                row["exact_bound"] = res["exact"]["bound"]
                row["exact_warm_start_s"] = round(res["exact"]["warm_start_s"], 3)
            rows.append(row)
            if progress:
                progress(f"{preset} {res['layer']} ({res['shape']}): " + ", ".join(
                    f"{m} {_g(res[m]['objective'])} ({res[m]['time_s']:.2f} s)" for m in methods))
        prow = [r for r in rows if r["preset"] == preset]
        s: dict[str, Any] = {"layers": len(prow), "wall_s": round(wall, 1)}
        if "exact" in methods:
            times = [r["exact_time_s"] for r in prow]
            s.update({"exact_optimal": sum(r["exact_status"] == "optimal" for r in prow),
                      "exact_time_median_s": round(statistics.median(times), 3),
                      "exact_time_max_s": round(max(times), 3)})
        for m in methods:
            vals = [r[f"{m}_objective"] for r in prow]
            if all(v is not None for v in vals):
                s[f"{m}_total_unique"] = sum(vals)
                s[f"{m}_total_network"] = sum(v * r["count"] for v, r in zip(vals, prow, strict=True))
        if "exact" in methods:
            # a heuristic strictly better than a *proven* optimum would expose a wrong bound: count them
            s["heuristic_beats_exact"] = sum(
                1 for r in prow for m in methods if m != "exact" and r[f"{m}_objective"] is not None
                and r["exact_status"] == "optimal" and r["exact_objective"] is not None
                and r[f"{m}_objective"] < r["exact_objective"] * (1 - 1e-9))
            base = s.get("exact_total_network")
            for m in methods:
                if base and s.get(f"{m}_total_network") is not None:
                    s[f"{m}_vs_exact"] = s[f"{m}_total_network"] / base
        summary[preset] = s
    csv_path = out / f"{network}-{objective}.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    md = markdown_table(rows, methods, objective, summary)
    md_path = out / f"{network}-{objective}.md"
    md_path.write_text(md)
    return {"rows": rows, "summary": summary, "csv": str(csv_path), "markdown": str(md_path), "table": md}


def _g(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def markdown_table(rows: list[dict[str, Any]], methods: tuple[str, ...], objective: str,
                   summary: dict[str, Any]) -> str:
    lines = []
    for preset, s in summary.items():
        lines.append(f"### {preset} — {objective} per unique layer (ratio to the best method; exact: status, time)")
        lines.append("")
        head = ["layer", "shape", "x"] + [m for m in methods]
        if "exact" in methods:
            head += ["exact s", "status"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in rows:
            if r["preset"] != preset:
                continue
            cells = [r["layer"], r["shape"] + (f" /{r['stride']}" if r["stride"] > 1 else ""), str(r["count"])]
            for m in methods:
                v, ratio = r[f"{m}_objective"], r[f"{m}_ratio"]
                cells.append(_g(v) if m == "exact" else ("-" if ratio is None else f"{ratio:.3f}"))
            if "exact" in methods:
                cells += [f"{r['exact_time_s']:.2f}", r["exact_status"]]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        tot = [f"{m}: {_g(s.get(f'{m}_total_network'))}" + (
            f" ({s[f'{m}_vs_exact']:.3f}x exact)" if f"{m}_vs_exact" in s else "") for m in methods]
        lines.append("Network total (each layer times its count): " + "; ".join(tot) + ".")
        if "exact" in methods:
            lines.append(f"Exact: {s['exact_optimal']}/{s['layers']} layers proven optimal; time per layer median "
                         f"{s['exact_time_median_s']} s, max {s['exact_time_max_s']} s (including the dataflow "
                         f"warm starts); heuristic results better than a proven optimum: {s['heuristic_beats_exact']}. "
                         f"Wall time {s['wall_s']} s.")
        lines.append("")
    return "\n".join(lines)


__all__ = ["METHODS", "Layer", "benchmark_layer", "conv_layers", "layer_stride", "markdown_table",
           "run_mapping_benchmark", "unique_conv_layers"]
