"""The thesis' experiment (seed 000, Chapter 7) and the pinning benchmark.

``run_thesis_sweep``: the eight SMAUG networks × scratchpad sizes 32 … 2048 KB on the three-scratchpad SMAUG
preset, every method, writing ``thesis_sweep.csv``, ``thesis_sweep.md`` (the Table 7.1 comparison) and
``thesis_sweep.png`` (transfers saved and speedup per network and size). The same table comes out of a sweep file
with ``report: thesis-table`` (``dlaopt sweep instances/sweeps/thesis.yaml``, possibly on a Dask cluster): both paths
turn the harness' records (:func:`dlaopt.results.result_record`) into rows with :func:`thesis_rows` and write the files
with :func:`write_thesis_report`, so the same records give byte-identical tables (which hold no times).

``run_pinning_benchmark``: ResNet-50 (batch 1, three 256 KB scratchpads) solved to proven optimality, and BERT-base
(12 layers, sequence 128) to a 1 % gap within 60 s — with the wall times including the model build.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlaopt.harness import compare, prepare, solve
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions

# The thesis' eight models as SMAUG defines them (seed 000 §6.1). SMAUG's "Resnet" is ResNet-50 on a 225x225
# input and its LSTM has 4 time steps, 2 layers, 32 hidden units.
THESIS_NETWORKS: dict[str, tuple[str, dict[str, Any]]] = {
    "CNN": ("cifar-cnn10", {}),
    "Lenet5": ("lenet5", {}),
    "Lstm": ("lstm", {"time_steps": 4, "hidden": 32, "input_size": 32, "layers": 2}),
    "Minerva": ("minerva", {}),
    "Elu": ("elu", {}),
    "Large-Elu": ("large-elu", {}),
    "Resnet": ("resnet50", {"image_size": 225}),
    "VGG": ("vgg-cifar", {}),
}
THESIS_SIZES_KB = (32, 64, 128, 256, 512, 1024, 2048)
SWEEP_METHODS = ("naive", "onsram", "greedy", "coloring", "exact")

# Seed 000, Table 7.1 (percentages): memory boundness, theoretical speedup, infinite-SPM speedup, average speedup.
THESIS_TABLE_7_1: dict[str, tuple[float, float, float, float]] = {
    "CNN": (39.83, 66.20, 45.16, 41.81),
    "Lenet5": (40.79, 68.89, 47.30, 42.91),
    "Lstm": (42.27, 73.21, 47.76, 42.93),
    "Minerva": (47.65, 91.04, 60.46, 43.10),
    "Elu": (43.81, 77.96, 52.66, 42.08),
    "Large-Elu": (45.21, 82.51, 55.81, 42.55),
    "Resnet": (41.50, 70.95, 48.01, 43.10),
    "VGG": (44.12, 78.95, 53.65, 43.71),
}

CSV_FIELDS = ("network", "spad_kb", "method", "status", "verified", "objective", "bound", "gap", "time_s",
              "gap_to_exact", "transfer_bytes", "naive_transfer_bytes", "reduction_factor", "memory_boundness",
              "theoretical_speedup", "speedup", "inf_spm_speedup", "fraction_of_inf_spm_speedup", "steps",
              "buffers")


def thesis_instance(label: str, spad_kb: int, objective: str = "transfers", oversize: str = "tile") -> dict[str, Any]:
    """``oversize='cap'`` is the thesis' own accounting (§6.3: tensors larger than a scratchpad shrunk to its
    size); ``'tile'`` rebuilds oversized operators into tiles and counts every byte that really moves."""
    zoo_name, params = THESIS_NETWORKS[label]
    return {
        "problem": "pinning",
        "name": f"{zoo_name}-smaug-3x{spad_kb}k-{oversize}",
        "workload": {"zoo": zoo_name, "params": dict(params)},
        "hardware": {"preset": "smaug-nvdla", "params": {"spad_kb": spad_kb}},
        "objective": objective,
        "options": {"oversize": oversize},
    }


@dataclass
class SweepReport:
    rows: list[dict[str, Any]]
    csv_path: Path
    table_path: Path
    plot_path: Path | None
    table_markdown: str


def thesis_rows(label: str, kb: int, records: Sequence[Mapping[str, Any]], steps: int | None,
                buffers: int | None) -> list[dict[str, Any]]:
    """The table rows of one (network, scratchpad size) instance from its methods' records (the JSON lines of
    :func:`dlaopt.results.result_record`: method, status, verified, objective, bound, gap, time_s, metrics)."""
    exact = next((r for r in records if r["method"] == "exact"), None)
    exact_obj = exact.get("objective") if exact is not None else None
    rows = []
    for r in records:
        m = r.get("metrics") or {}
        obj = r.get("objective")
        rows.append({
            "network": label, "spad_kb": kb, "method": r["method"], "status": r["status"],
            "verified": bool(r.get("verified")), "objective": obj, "bound": r.get("bound"), "gap": r.get("gap"),
            "time_s": round(float(r.get("time_s") or 0.0), 3),
            "gap_to_exact": (obj / exact_obj - 1.0) if (obj is not None and exact_obj) else None,
            "transfer_bytes": m.get("transfer_bytes"), "naive_transfer_bytes": m.get("naive_transfer_bytes"),
            "reduction_factor": m.get("reduction_factor"), "memory_boundness": m.get("memory_boundness"),
            "theoretical_speedup": m.get("theoretical_speedup"), "speedup": m.get("speedup"),
            "inf_spm_speedup": m.get("inf_spm_speedup"),
            "fraction_of_inf_spm_speedup": m.get("fraction_of_inf_spm_speedup"), "steps": steps, "buffers": buffers,
        })
    return rows


def write_thesis_report(rows: Sequence[dict[str, Any]], out_dir: str | Path, oversize: str = "tile") -> SweepReport:
    """``thesis_sweep.csv``, ``thesis_sweep.md`` (:func:`thesis_table`) and ``thesis_sweep.png`` in ``out_dir``."""
    out = Path(out_dir)
    csv_path = out / "thesis_sweep.csv"
    with csv_path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(rows)
    table = thesis_table(rows)
    table_path = out / "thesis_sweep.md"
    table_path.write_text(table)
    plot_path = plot_sweep(rows, out / "thesis_sweep.png", oversize)
    return SweepReport(list(rows), csv_path, table_path, plot_path, table)


def run_thesis_sweep(
    out_dir: str | Path,
    *,
    networks: Sequence[str] | None = None,
    sizes_kb: Sequence[int] | None = None,
    methods: Sequence[str] = SWEEP_METHODS,
    time_limit: float = 60.0,
    oversize: str = "tile",
    threads: int | None = None,
    node_limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> SweepReport:
    """Every network × size × method in this process (``instances/sweeps/thesis.yaml`` is the same sweep for
    ``dlaopt sweep``, which can spread it over a Dask cluster). ``threads`` and ``node_limit`` go to the exact
    solver (a node limit makes the exact results reproducible where the time limit would cut them)."""
    from dlaopt.bench import solve_options
    from dlaopt.results import result_record

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = list(networks or THESIS_NETWORKS)
    sizes = list(sizes_kb or THESIS_SIZES_KB)
    rows: list[dict[str, Any]] = []
    solve_doc = {"time_limit": time_limit, "seed": 0, "threads": threads, "node_limit": node_limit}
    opts = solve_options(solve_doc)
    for label in labels:
        for kb in sizes:
            t0 = time.perf_counter()
            p = prepare(instance_from_dict(thesis_instance(label, kb, oversize=oversize)))
            results = compare(p, [m for m in methods], options=opts)
            records = [result_record(p.instance.name, r.method, r, prepare_time_s=p.prepare_time_s,
                                     instance_file="inline", solve=solve_doc, config="") for r in results]
            g = p.data.graph
            rows += thesis_rows(label, kb, records, len(g.steps), len(g.buffers))
            if progress:
                exact = next((r for r in results if r.method == "exact"), None)
                ex = f"exact {exact.status.value} gap {exact.gap}" if exact else ""
                progress(f"{label:>9} {kb:>5} KB  steps {len(g.steps):>5}  {ex}  ({time.perf_counter() - t0:.1f}s)")
    return write_thesis_report(rows, out, oversize)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.2f}%"


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def rows_from_csv(path: str | Path) -> list[dict[str, Any]]:
    """Read a sweep CSV back (numbers as floats) — e.g. to rebuild the table with :func:`thesis_table`."""
    out = []
    with Path(path).open() as fh:
        for r in csv.DictReader(fh):
            row: dict[str, Any] = {}
            for k, v in r.items():
                try:
                    row[k] = float(v) if v not in ("", "None") else None
                except ValueError:
                    row[k] = v
            out.append(row)
    return out


def thesis_table(rows: Sequence[dict[str, Any]]) -> str:
    """Per network, averaged over the scratchpad sizes: ours (exact) next to the thesis' Table 7.1, plus every
    method's mean gap to exact."""
    lines = [
        "| Network | Memory boundness (ours / thesis) | Theoretical speedup (ours / thesis) | Inf-SPM speedup "
        "(ours / thesis) | Average speedup, exact (ours / thesis) | Min–max speedup, exact | Mean gap to exact: "
        "naive / onsram / greedy / coloring |",
        "|---|---|---|---|---|---|---|",
    ]
    for label in dict.fromkeys(r["network"] for r in rows):
        ex = [r for r in rows if r["network"] == label and r["method"] == "exact" and r["speedup"] is not None]
        if not ex:
            continue
        th = THESIS_TABLE_7_1.get(label)
        mb = _mean([r["memory_boundness"] for r in ex])
        theo = _mean([r["theoretical_speedup"] - 1 for r in ex])
        inf = _mean([r["inf_spm_speedup"] - 1 for r in ex])
        sp = [r["speedup"] - 1 for r in ex]
        gaps = []
        for m in ("naive", "onsram", "greedy", "coloring"):
            g = [r["gap_to_exact"] for r in rows if r["network"] == label and r["method"] == m
                 and r["gap_to_exact"] is not None]
            gaps.append(_pct(sum(g) / len(g)) if g else "—")
        t = [f"{v:.2f}%" for v in th] if th else ["—"] * 4
        lines.append(
            f"| {label} | {_pct(mb)} / {t[0]} | {_pct(theo)} / {t[1]} | {_pct(inf)} / {t[2]} | "
            f"{_pct(sum(sp) / len(sp))} / {t[3]} | {_pct(min(sp))} – {_pct(max(sp))} | {' / '.join(gaps)} |"
        )
    lines.append("")
    lines.append("Speedups are increases over the naive strategy (seed 000 Table 7.1 convention: 66.20% = 1.662x); "
                 "every column of ours is the mean over the scratchpad sizes swept.")
    return "\n".join(lines) + "\n"


def plot_sweep(rows: Sequence[dict[str, Any]], path: Path, oversize: str = "tile") -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ex = [r for r in rows if r["method"] == "exact" and r["reduction_factor"] is not None]
    if not ex:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for label in dict.fromkeys(r["network"] for r in ex):
        pts = sorted((r["spad_kb"], r["reduction_factor"], r["speedup"]) for r in ex if r["network"] == label)
        xs = [p[0] for p in pts]
        axes[0].plot(xs, [100 * p[1] for p in pts], marker="o", label=label)
        axes[1].plot(xs, [100 * (p[2] - 1) for p in pts], marker="o", label=label)
    for ax, title in zip(axes, ("DMA transfers saved vs naive (%)", "Estimated speedup over naive (%)"),
                         strict=True):
        ax.set_xscale("log", base=2)
        sizes = sorted({r["spad_kb"] for r in ex})
        ax.set_xticks(sizes, [str(int(k)) for k in sizes])
        ax.minorticks_off()
        ax.set_xlabel("scratchpad size (KB, three scratchpads)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    axes[1].legend(fontsize=8, ncol=2)
    mode = "oversized tensors capped (thesis accounting)" if oversize == "cap" else "oversized operators tiled"
    fig.suptitle(f"Exact multi-scratchpad pinning, SMAUG NVDLA-like preset, {mode} (cf. seed 000 Fig. 7.1, 7.3)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


BENCHMARKS = (
    ("ResNet-50, batch 1, fp16, 3x256 KB (target: optimal, < 10 s incl. build)",
     {"workload": {"zoo": "resnet50", "params": {"batch": 1}}, "spad_kb": 256, "time_limit": 60.0, "gap": 1e-4}),
    ("ResNet-50, batch 1, int8, 3x256 KB (target: optimal, < 10 s incl. build)",
     {"workload": {"zoo": "resnet50", "params": {"batch": 1, "dtype_bytes": 1}}, "spad_kb": 256,
      "time_limit": 60.0, "gap": 1e-4}),
    ("BERT-base, 12 layers, seq 128, fp16, 3x256 KB (target: gap <= 1 % within 60 s)",
     {"workload": {"zoo": "bert-base", "params": {"layers": 12, "seq_len": 128}}, "spad_kb": 256,
      "time_limit": 60.0, "gap": 0.01}),
    ("BERT-base, 12 layers, seq 128, int8, 3x256 KB (target: gap <= 1 % within 60 s)",
     {"workload": {"zoo": "bert-base", "params": {"layers": 12, "seq_len": 128, "dtype_bytes": 1}},
      "spad_kb": 256, "time_limit": 60.0, "gap": 0.01}),
)


def run_pinning_benchmark(progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    out = []
    for title, spec in BENCHMARKS:
        doc = {"problem": "pinning", "name": title.split(",")[0], "workload": spec["workload"],
               "hardware": {"preset": "smaug-nvdla", "params": {"spad_kb": spec["spad_kb"]}}}
        t0 = time.perf_counter()
        p = prepare(instance_from_dict(doc))
        heur = {h: solve(p, h) for h in p.problem.heuristic_names}
        t_heur = time.perf_counter() - t0
        r = solve(p, "exact", options=SolveOptions(time_limit=spec["time_limit"], mip_rel_gap=spec["gap"], seed=0))
        wall = time.perf_counter() - t0
        row = {
            "benchmark": title, "steps": len(p.data.graph.steps), "buffers": len(p.data.graph.buffers),
            "tiled_operators": len(p.data.graph.tiled_ops), "status": r.status.value, "objective": r.objective,
            "bound": r.bound, "gap": r.gap, "verified": r.verified, "prepare_s": round(p.prepare_time_s, 2),
            "heuristics_s": round(t_heur - p.prepare_time_s, 2), "build_s": round(r.build_time_s, 2),
            "solve_s": round(r.solve_time_s, 2), "exact_wall_incl_build_s": round(r.build_time_s + r.solve_time_s, 2),
            "total_wall_s": round(wall, 2), "model": r.model_stats,
            "heuristics": {h: x.objective for h, x in heur.items()},
            "reduction_factor": r.metrics.get("reduction_factor"), "speedup": r.metrics.get("speedup"),
            "warm_start": r.warm_start, "relaxation_bound": (r.relaxations[0]["bound"] if r.relaxations else None),
        }
        out.append(row)
        if progress:
            progress(f"{title}: {row['status']} objective {row['objective']} gap {row['gap']} "
                     f"exact {row['exact_wall_incl_build_s']} s (build {row['build_s']} s)")
    return out
