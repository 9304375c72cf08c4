"""GAMMA's evaluation (seed 001, Chapter 4.4) with the proven optimum beside every searched figure.

GAMMA's chapter compares search-based mappers on its Edge and Cloud platforms (Table 4.2) as three target systems
(Table 4.3: S1 a fixed 2-D array, S2 a flexible one, S3 several arrays with a third level of parallelism across
them; the presets ``gamma-edge`` / ``gamma-cloud`` with ``system``). Every figure there is the best a search found;
here the exact method proves the optimum of the same cost model, so each searched figure gets its distance to it.

* **settings** (Figs. 4.4 and 4.5): ResNet-18's 20 convolutions (11 unique shapes) on both platforms as S1, S2 and
  S3, for latency and for energy: ``exact`` (proven, or its bound and gap when the per-layer time limit cuts it),
  ``gamma`` (GAMMA, seed 001 §4.4.1's 10,000 samples), ``random`` (Timeloop's random mapper, the same budget; the
  black-box baseline) and the NVDLA-, Eyeriss- and ShiDianNao-like dataflows.
* **table45** (Table 4.5): MobileNet-V2, MnasNet, ShuffleNet V2 and ResNet-50 end to end — the sum over all their
  mappable layers (convolutions, depthwise convolutions and the classifier), each layer counted as often as it
  occurs — on S3 of both platforms, latency (cycles) and energy (nJ): exact, GAMMA and the three dataflows, next to
  the chapter's figures.
* **pipeline** (Table 4.6): the two-stage optimisation of a layer-wise pipeline
  (:mod:`dlaopt.formulations.mapping.pipeline`) on ResNet-18 and VGG16's convolutions, one layer per array of S3
  (:func:`dlaopt.hardware.presets.gamma_array`: one array with its share of the global buffer): stage I the least
  pipeline latency (the slowest layer's least latency), stage II each layer's least energy (Latency-Energy) or
  least running power (Latency-Power) within it, with the chapter's reductions beside them. In a pipeline every
  layer runs once per period ``L*``, so its average power is ``energy / L*``: the least energy also minimises the
  pipeline's average power, which stage II of Latency-Energy proves; the running power ``energy / latency`` of
  Latency-Power is proven only where the walk reaches its bound (:mod:`dlaopt.formulations.mapping.exact`).

Every mapping is re-evaluated by the cost model. Layers run in worker processes (``workers``); each finished layer is
appended to ``gamma.jsonl`` at once, so a run cut short by its total time limit or an interruption keeps what it
computed; layers not started in time are reported as skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlaopt.experiments.common import ExperimentReport, check_choices, check_positive, output_folder, write_report
from dlaopt.formulations.mapping.arch import arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import HEURISTICS
from dlaopt.formulations.mapping.layers import run_layer_exact
from dlaopt.formulations.mapping.loopnest import LoopNest, loopnest_from_operator, mappable_layers, unique_layers
from dlaopt.hardware.presets import PRESETS, gamma_array
from dlaopt.results import append_records
from dlaopt.solvers.processes import worker_pool
from dlaopt.solvers.result import SolveOptions
from dlaopt.specs import mapping as mapping_options
from dlaopt.zoo import ZOO

PARTS = ("settings", "table45", "pipeline")
PLATFORMS = ("edge", "cloud")
SYSTEMS = ("s1", "s2", "s3")
METHODS = ("exact", "gamma", "random", "nvdla", "eyeriss", "shidiannao")
DATAFLOWS = ("nvdla", "eyeriss", "shidiannao")
TABLE45_NETWORKS = ("mobilenet-v2", "mnasnet", "shufflenet-v2", "resnet50")
PIPELINE_NETWORKS = ("resnet18", "vgg16")

# seed 001 Table 4.5: network -> (objective, platform) -> (GAMMA, NVDLA-like, Eyeriss-like, ShiDianNao-like);
# latency in cycles, energy in nJ
TABLE45: dict[str, dict[tuple[str, str], tuple[float, float, float, float]]] = {
    "mobilenet-v2": {("latency", "edge"): (9.67e5, 1.46e7, 4.06e7, 7.23e6),
                     ("latency", "cloud"): (1.85e5, 9.33e5, 4.04e7, 6.04e6),
                     ("energy", "edge"): (5.23e8, 3.31e9, 9.62e9, 1.02e10),
                     ("energy", "cloud"): (4.12e8, 8.13e8, 9.61e9, 1.02e10)},
    "mnasnet": {("latency", "edge"): (8.31e5, 1.43e7, 5.00e7, 8.44e6),
                ("latency", "cloud"): (1.39e5, 4.03e6, 4.97e7, 7.46e6),
                ("energy", "edge"): (4.58e8, 3.41e9, 9.707e9, 1.031e10),
                ("energy", "cloud"): (3.72e8, 7.71e8, 9.706e9, 1.030e10)},
    "shufflenet-v2": {("latency", "edge"): (5.20e5, 8.41e6, 2.29e7, 3.89e6),
                      ("latency", "cloud"): (3.41e4, 6.28e5, 2.28e7, 3.37e6),
                      ("energy", "edge"): (1.59e8, 1.52e9, 4.647e9, 4.984e9),
                      ("energy", "cloud"): (1.17e8, 2.57e8, 4.646e9, 4.978e9)},
    "resnet50": {("latency", "edge"): (6.49e6, 1.04e11, 4.57e8, 1.31e8),
                 ("latency", "cloud"): (3.84e4, 2.91e6, 4.55e8, 1.13e8),
                 ("energy", "edge"): (1.19e9, 3.53e10, 1.1753e11, 1.245e11),
                 ("energy", "cloud"): (1.13e9, 2.14e9, 1.1751e11, 1.244e11)},
}
# seed 001 Table 4.6: network -> experiment -> the average's reduction from stage I to stage II (§4.4.5's text)
TABLE46_REDUCTION: dict[str, dict[str, float]] = {"resnet18": {"power": 0.95, "energy": 0.58},
                                                  "vgg16": {"power": 0.99, "energy": 0.78}}


@dataclass(frozen=True)
class Scale:
    """How much of the chapter a run covers: layers per network (``None``: all), search samples, seconds per exact
    solve and the total time limit."""

    label: str
    layers: int | None
    samples: int
    time_limit: float
    total_time_limit: float
    table45_networks: tuple[str, ...]
    pipeline_networks: tuple[str, ...]
    pipeline_platforms: tuple[str, ...]


FULL = Scale("full", None, 10_000, 60.0, 3600.0, TABLE45_NETWORKS, PIPELINE_NETWORKS, ("cloud",))
QUICK = Scale("quick", 2, 200, 10.0, 300.0, ("shufflenet-v2",), ("resnet18",), ("cloud",))


def network_layers(network: str, kinds: Sequence[str] | None = None) -> list[tuple[LoopNest, int]]:
    """A zoo network's unique mappable layers (of ``kinds``, default all) as (loop nest, occurrences)."""
    wl = ZOO.create(network, {})
    nests = [loopnest_from_operator(wl, op) for op in mappable_layers(wl)]
    out = []
    for group in unique_layers(nests).values():
        nest = nests[group[0]]
        if kinds is None or nest.kind in kinds:
            out.append((nest, len(group)))
    return out


def compute_bound(network: str, platform: str) -> float:
    """The network's MACs (every mappable layer, at its real size) over the platform's PEs: a lower bound on its
    latency in cycles on that platform (one MAC per PE per cycle), whatever the mapping."""
    pes = PRESETS.create(f"gamma-{platform}", {}).pe_array.peak_macs_per_cycle
    return sum(n.real_macs * c for n, c in network_layers(network)) / pes


def _platform_accelerator(platform: str, system: str) -> Any:
    return PRESETS.create(f"gamma-{platform}", {"system": system})


def _value(nest: LoopNest, arch: Any, m: Any, objective: str) -> float | None:
    if m is None:
        return None
    r = evaluate_mapping(nest, arch, m)
    return float(r.objective(objective)) if r.valid else None


def layer_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """One layer on one platform and system for one objective, every method (a worker's job); the row it returns
    holds each method's cost-model value and seconds, and the exact method's status, bound and gap."""
    nest: LoopNest = task["nest"]
    row: dict[str, Any] = {k: task[k] for k in ("part", "network", "platform", "system", "objective", "count")}
    row.update({"layer": nest.name, "shape": nest.shape_text})
    if time.monotonic() >= task["deadline"]:
        row["status"] = "skipped"
        return row
    arch = arch_from_accelerator(_platform_accelerator(task["platform"], task["system"]))
    objective, seed = task["objective"], task["seed"]
    for method in task["methods"]:
        t0 = time.perf_counter()
        if method == "exact":
            limit = max(0.1, min(task["time_limit"], task["deadline"] - time.monotonic()))
            r = run_layer_exact(nest, arch, objective, dict(mapping_options.DEFAULT_OPTIONS),
                                SolveOptions(time_limit=limit, threads=1, seed=seed), "highs")
            m = None if r is None else r["mapping"]
            row["exact_status"] = "skipped" if r is None else r["status"]
            row["exact_bound"] = None if r is None else r["bound"]
        else:
            budget = task["samples"] if method in ("gamma", "random") else None
            m = HEURISTICS["ga" if method == "gamma" else method](nest, arch, objective, seed=seed, budget=budget)
        row[method] = _value(nest, arch, m, objective)
        row[f"{method}_s"] = round(time.perf_counter() - t0, 3)
    row["status"] = "done"
    best = row.get("exact")
    if best is not None and row.get("exact_bound") is not None:
        row["exact_gap"] = (best - row["exact_bound"]) / best if best else 0.0
    return row


def _tasks(part: str, scale: Scale, platforms: Sequence[str], systems: Sequence[str], objectives: Sequence[str],
           networks: Sequence[str], methods: Sequence[str], kinds: Sequence[str] | None, seed: int,
           deadline: float) -> list[dict[str, Any]]:
    out = []
    for network in networks:
        layers = network_layers(network, kinds)[: scale.layers]
        for platform in platforms:
            for system in systems:
                for objective in objectives:
                    for nest, count in layers:
                        out.append({"part": part, "network": network, "platform": platform, "system": system,
                                    "objective": objective, "count": count, "nest": nest, "methods": tuple(methods),
                                    "samples": scale.samples, "time_limit": scale.time_limit, "seed": seed,
                                    "deadline": deadline})
    return out


def _run(tasks: list[dict[str, Any]], workers: int, log: Path, say: Callable[[str], None]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def keep(row: dict[str, Any]) -> None:
        rows.append(row)
        append_records(log, [row])
        say(f"{row['part']} {row['network']} {row['platform']} {row['system']} {row['objective']} {row['layer']}: "
            + ("skipped" if row["status"] == "skipped" else
               ", ".join(f"{m} {_g(row.get(m))}" for m in METHODS if f"{m}_s" in row)))

    if workers <= 1:
        for t in tasks:
            keep(layer_task(t))
        return rows
    from concurrent.futures import as_completed

    with worker_pool(workers) as pool:
        for f in as_completed([pool.submit(layer_task, t) for t in tasks]):
            keep(f.result())
    return rows


def _g(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def totals(rows: Sequence[Mapping[str, Any]], methods: Sequence[str]) -> list[dict[str, Any]]:
    """Per (part, network, platform, system, objective): each method's total over the layers (value times count;
    ``None`` when a layer lacks it), its ratio to the exact total, how many layers it got within 1 % of the exact
    value, and how many exact values are proven. A heuristic below a proven optimum would expose a wrong bound:
    ``beats_proven`` counts them."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in ("part", "network", "platform", "system", "objective")), []).append(r)
    out = []
    for key, rs in groups.items():
        s: dict[str, Any] = dict(zip(("part", "network", "platform", "system", "objective"), key, strict=True))
        done = [r for r in rs if r["status"] == "done"]
        s.update({"layers": len(rs), "done": len(done),
                  "proven": sum(r.get("exact_status") == "optimal" for r in done)})
        for m in methods:
            vals = [r.get(m) for r in done]
            s[m] = sum(v * r["count"] for v, r in zip(vals, done, strict=True)) if done and None not in vals else None
        for m in methods:
            if m != "exact" and s[m] is not None and s.get("exact"):
                s[f"{m}_vs_exact"] = s[m] / s["exact"]
                s[f"{m}_within_1pct"] = sum(r[m] <= r["exact"] * 1.01 for r in done if r.get("exact"))
        s["beats_proven"] = sum(1 for r in done for m in methods if m != "exact" and r.get(m) is not None
                                and r.get("exact_status") == "optimal" and r.get("exact") is not None
                                and r[m] < r["exact"] * (1 - 1e-9))
        out.append(s)
    return out


def _pipeline(networks: Sequence[str], platforms: Sequence[str], scale: Scale, seed: int, deadline: float,
              say: Callable[[str], None]) -> list[dict[str, Any]]:
    from dlaopt.formulations.mapping.pipeline import table_rows, two_stage

    out = []
    for network in networks:
        layers = network_layers(network, ("conv2d",))[: scale.layers]
        for platform in platforms:
            arch = arch_from_accelerator(gamma_array(platform))
            for second in ("power", "energy"):
                left = deadline - time.monotonic()
                if left <= 0:
                    out.append({"network": network, "platform": platform, "second": second, "status": "skipped"})
                    continue
                res = two_stage(layers, arch, second, SolveOptions(time_limit=min(scale.time_limit, left), threads=1,
                                                                   seed=seed))
                summary = res.summary()
                out.append({"network": network, "platform": platform, "second": second, "status": "done",
                            "arch": res.arch, "summary": summary, "rows": table_rows(res), "notes": res.notes,
                            "published_reduction": TABLE46_REDUCTION.get(network, {}).get(second)})
                say(f"pipeline {network} {platform} latency-{second}: L* {_g(summary['pipeline_latency'])}, "
                    f"reduction {_pct(summary['reduction'])}")
    return out


CSV_FIELDS = ("part", "network", "platform", "system", "objective", "layer", "shape", "count", "status",
              *(f for m in METHODS for f in (m, f"{m}_s")), "exact_status", "exact_bound", "exact_gap")


def markdown(scale: Scale, summary: Sequence[Mapping[str, Any]], pipelines: Sequence[Mapping[str, Any]],
             methods: Sequence[str], seconds: float) -> str:
    lines = [f"# GAMMA's evaluation (seed 001 Chapter 4.4) against the proven optimum — {scale.label} scale", "",
             f"Search budget {scale.samples:,} samples (GAMMA, random), exact {scale.time_limit:g} s per layer; "
             f"{seconds:.0f} s in all. Totals sum each layer's value times its occurrences; ratios are to the exact "
             "total (1 = optimal); 'within 1 %' counts layers.", ""]
    settings = [s for s in summary if s["part"] == "settings"]
    if settings:
        lines += ["## S1–S3 on ResNet-18 (Figs. 4.4–4.5)", "",
                  "| platform | system | objective | proven | " + " | ".join(methods) + " | GAMMA within 1 % |",
                  "|" + "---|" * (len(methods) + 5)]
        for s in settings:
            cells = [_g(s["exact"])] + [_ratio(s, m) for m in methods if m != "exact"]
            lines.append(f"| {s['platform']} | {s['system'].upper()} | {s['objective']} | {s['proven']}/{s['done']} | "
                         + " | ".join(cells) + f" | {s.get('gamma_within_1pct', '-')}/{s['done']} |")
        lines.append("")
    t45 = [s for s in summary if s["part"] == "table45"]
    if t45:
        lines += ["## End to end on S3 (Table 4.5)", "",
                  "Latency in cycles, energy in nJ. Each method's cell is dlaopt's total and, in brackets, its "
                  "multiple of the optimum; the chapter's cells give its figure and its multiple of GAMMA's. The "
                  "chapter's energies (MAESTRO's scale) and dlaopt's (Eyeriss' normalised scale) differ in unit, so "
                  "compare multiples. 'bound' is the compute bound, the network's MACs over the platform's PEs: no "
                  "mapping on these PEs (one MAC per PE per cycle) is faster.", "",
                  "| network | objective | platform | proven | exact | bound | GAMMA | NVDLA-like | Eyeriss-like | "
                  "ShiDianNao-like | chapter: GAMMA | NVDLA-like | Eyeriss-like | ShiDianNao-like |", "|" + "---|" * 14]
        for s in t45:
            scale_by = 1e-3 if s["objective"] == "energy" else 1.0
            pub = TABLE45.get(s["network"], {}).get((s["objective"], s["platform"]))
            ex = s.get("exact")
            cells = [("-" if ex is None else f"{ex * scale_by:.3g}"),
                     f"{compute_bound(s['network'], s['platform']):.3g}" if s["objective"] == "latency" else ""]
            for m in ("gamma", *DATAFLOWS):
                v = s.get(m)
                cells.append("-" if v is None else f"{v * scale_by:.3g}" + (f" ({v / ex:.2f}x)" if ex else ""))
            cells += [f"{p:.3g} ({p / pub[0]:.1f}x)" for p in pub] if pub else ["-"] * 4
            lines.append(f"| {s['network']} | {s['objective']} | {s['platform']} | {s['proven']}/{s['done']} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    if pipelines:
        lines += ["## Two-stage pipeline (Table 4.6)", "",
                  "One layer per array of S3; averages over all layers (repeated shapes counted). Power in mW, "
                  "energy in nJ; 'proven' counts the unique layers whose stage II is optimal.", "",
                  "| network | array | experiment | L* (cycles) | bottleneck | average stage I | average stage II "
                  "| reduction | chapter | proven |", "|" + "---|" * 10]
        for p in pipelines:
            if p["status"] != "done":
                lines.append(f"| {p['network']} | {p['platform']} | latency-{p['second']} | skipped | | | | | | |")
                continue
            s = p["summary"]
            fig, unit = ("power_mw", 1.0) if p["second"] == "power" else ("energy_pj", 1e-3)
            a, b = s[f"first_avg_{fig}"], s[f"second_avg_{fig}"]
            lines.append(f"| {p['network']} | {p['arch']} | latency-{p['second']} | {_g(s['pipeline_latency'])} "
                         f"| {s['bottleneck']} | {_g(None if a is None else a * unit)} | "
                         f"{_g(None if b is None else b * unit)} | {_pct(s['reduction'])} | "
                         f"{_pct(p['published_reduction'])} | {s['proven_second']}/{s['unique_layers']} |")
        lines.append("")
    return "\n".join(lines)


def _ratio(s: Mapping[str, Any], m: str) -> str:
    v = s.get(f"{m}_vs_exact")
    return "-" if v is None else f"{v:.3g}x"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"-{100 * v:.0f} %"


def run_gamma(out_dir: str | Path = "results/gamma", *, quick: bool = False, parts: Sequence[str] | None = None,
              platforms: Sequence[str] | None = None, systems: Sequence[str] | None = None,
              networks: Sequence[str] | None = None, samples: int | None = None, time_limit: float | None = None,
              total_time_limit: float | None = None, workers: int = 2, seed: int = 0,
              progress: Callable[[str], None] | None = None) -> ExperimentReport:
    """Run the parts (module docstring) at the scale (:data:`QUICK` or :data:`FULL`, with the overrides) and write
    ``gamma.csv`` (a row per layer), ``gamma.md``, ``gamma.json`` (totals and the pipelines) and ``gamma.jsonl``
    (the rows as they finished)."""
    scale = QUICK if quick else FULL
    parts = list(parts or PARTS)
    platforms = list(platforms or PLATFORMS)
    systems = list(systems or SYSTEMS)
    check_choices(parts, PARTS, "--parts", "part")
    check_choices(platforms, PLATFORMS, "--platforms", "platform")
    check_choices(systems, SYSTEMS, "--systems", "system")
    check_positive(samples=samples, time_limit=time_limit, total_time_limit=total_time_limit)
    if networks:
        check_choices(list(networks), ZOO.names(), "--networks", "network")
    scale = Scale(scale.label, scale.layers, samples or scale.samples, time_limit or scale.time_limit,
                  total_time_limit or scale.total_time_limit, tuple(networks or scale.table45_networks),
                  scale.pipeline_networks, scale.pipeline_platforms)
    out, log = output_folder(out_dir, "gamma.jsonl")
    say = progress or (lambda _s: None)
    t0 = time.monotonic()
    deadline = t0 + scale.total_time_limit
    tasks: list[dict[str, Any]] = []
    if "settings" in parts:
        tasks += _tasks("settings", scale, platforms, systems, ("latency", "energy"), ("resnet18",), METHODS,
                        ("conv2d",), seed, deadline)
    if "table45" in parts:
        tasks += _tasks("table45", scale, platforms, ("s3",), ("latency", "energy"), scale.table45_networks,
                        ("exact", "gamma", *DATAFLOWS), None, seed, deadline)
    rows = _run(tasks, workers, log, say)
    rows.sort(key=lambda r: (PARTS.index(r["part"]), r["network"], r["platform"], r["system"], r["objective"],
                             r["layer"]))
    summary = totals(rows, METHODS)
    pipelines = (_pipeline(scale.pipeline_networks, [p for p in scale.pipeline_platforms if p in platforms] or
                           platforms[:1], scale, seed, deadline, say) if "pipeline" in parts else [])
    seconds = time.monotonic() - t0
    table = markdown(scale, summary, pipelines, METHODS, seconds)
    figure = None
    if any(s["part"] == "settings" for s in summary):
        from dlaopt.plots.search import plot_gamma_settings

        def figure() -> Any:
            return plot_gamma_settings(summary)
    csv_path, md_path, plot_path = write_report(
        out, "gamma", rows, CSV_FIELDS, table + "\n",
        ("gamma.json", {"scale": scale.__dict__, "totals": summary, "pipelines": pipelines, "seconds": seconds}),
        figure)
    return ExperimentReport(rows, csv_path, md_path, plot_path, table,
                            {"totals": summary, "pipelines": pipelines, "seconds": seconds,
                             "skipped": sum(r["status"] == "skipped" for r in rows)})


__all__ = ["FULL", "METHODS", "PARTS", "QUICK", "TABLE45", "TABLE46_REDUCTION", "layer_task", "network_layers",
           "run_gamma", "totals"]
