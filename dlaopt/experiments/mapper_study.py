"""The mapper study of seed 001 Chapter 5.2, with the proven optimum as the line every curve there lacked.

On Table 5.1's accelerators (``accel-a``, ``accel-b``) and workloads (ResNet Conv_3 / Conv_4, Inception Conv_2,
BERT-large KQV / Attn / FF; :func:`dlaopt.formulations.mapping.spacesize.table_5_1_layers`), objective EDP:

* **convergence** (Fig. 5.3): each mapper's best-so-far EDP against samples and against seconds
  (:func:`dlaopt.formulations.mapping.search.run_mapper`): Random-Pruned (Timeloop's default mapper), a standard GA,
  GAMMA, and a Mind-Mappings-style surrogate (:mod:`dlaopt.formulations.mapping.surrogate`: an MLP trained with
  numpy on sampled mappings of Accel-A, one per dimension family, then used unchanged on Accel-B as the chapter
  does). The optimum is the exact method's EDP (:func:`~dlaopt.formulations.mapping.exact.solve_layer`, proven
  unless its time limit cuts it: then its bound and gap are reported and the reference is the best value known).
  Each mapper's row gives the samples and seconds it needed to come within 10 %, 1 % and 0 % of it, or ``never``.
* **ablations** (Figs. 5.5 and 5.6): GAMMA with only some of its operators (tile-only, order-only,
  parallelism-only, no crossover, crossover only) against full GAMMA and the standard GA, on the convolutions on
  Accel-B.
* **orders** (Fig. 5.7): the proven optimum of Conv_4 on Accel-B with every level given the same loop order, all
  orders of its seven loops, grouped by EDP (:func:`~dlaopt.formulations.mapping.orders.order_sensitivity`).
* **spacesize** (§5.2.2): the map space of every workload on both accelerators counted exactly per representation
  (:func:`~dlaopt.formulations.mapping.spacesize.space_sizes`).

Rows are appended to ``mapper_study.jsonl`` as they finish (nothing computed is lost when a run is cut short);
``mapper_study.csv`` / ``.md`` / ``.json`` and the figures ``convergence.png``, ``ablations.png`` and ``orders.png``
are written at the end.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlaopt.experiments.common import ExperimentReport, check_choices, check_positive, output_folder, write_report
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.exact import solve_layer
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.search import GAMMA_ABLATIONS, run_mapper, samples_to_within
from dlaopt.formulations.mapping.spacesize import table_5_1_layers
from dlaopt.hardware.presets import PRESETS
from dlaopt.results import append_records
from dlaopt.solvers.result import SolveOptions
from dlaopt.specs.mapping import EXACT_LEVERS

PARTS = ("convergence", "ablations", "orders", "spacesize")
ACCELERATORS = ("accel-a", "accel-b")
CONVERGENCE_MAPPERS = ("random-pruned", "standard-ga", "gamma", "surrogate")
ABLATION_MAPPERS = ("standard-ga", *(f"gamma:{k}" for k in GAMMA_ABLATIONS))
WITHIN = (0.10, 0.01, 0.0)
# Fig. 5.7: 16 distinct EDP values, best to worst 14.4x (Conv_4, Accel-B, GAMMA's mapping)
CHAPTER_ORDERS = {"values": 16, "spread": 14.4}


@dataclass(frozen=True)
class Scale:
    label: str
    workloads: tuple[str, ...]
    samples: int
    exact_time_limit: float
    surrogate_samples: int  # training mappings per layer
    total_time_limit: float


FULL = Scale("full", ("resnet-conv3", "resnet-conv4", "inception-conv2", "bert-kqv", "bert-attn", "bert-ff"), 5000,
             300.0, 1500, 5400.0)
QUICK = Scale("quick", ("resnet-conv4", "bert-attn"), 150, 20.0, 60, 600.0)
QUICK_SHRINK = 8  # quick scale: channel-like dimensions divided by this (shapes stay the chapter's, smaller)


def study_layers(scale: Scale) -> dict[str, LoopNest]:
    """Table 5.1's layers (quick: the same layers with channels, batch and matrix sides divided by
    :data:`QUICK_SHRINK`, so that exact solves take seconds)."""
    from dlaopt.formulations.mapping.spacesize import TABLE_5_1_CONVS, TABLE_5_1_MATMULS

    if scale.label != "quick":
        layers = table_5_1_layers()
    else:
        from dlaopt.formulations.mapping.loopnest import loopnest_from_operator
        from dlaopt.workload.builder import NetworkBuilder

        b = NetworkBuilder("table-5.1-quick", dtype_bytes=2)
        outs = []
        q = QUICK_SHRINK
        for name, (n, k, c, y, x, r, s) in TABLE_5_1_CONVS.items():
            t = b.input(f"{name}.in", (max(1, n // q), max(1, c // q), y, x))
            outs.append(b.conv2d(t, max(1, k // q), (r, s), padding=(r // 2, s // 2), name=name))
        for name, (bb, m, k, n) in TABLE_5_1_MATMULS.items():
            t = b.input(f"{name}.in", (max(1, bb // q), max(1, m // (4 * q)), max(1, k // q)))
            outs.append(b.linear(t, max(1, n // q), name=name))
        w = b.build(outs)
        layers = {op.name: loopnest_from_operator(w, op) for op in w.operators}
    return {k: layers[k] for k in scale.workloads}


def _arch(name: str) -> MappingArch:
    return arch_from_accelerator(PRESETS.create(name, {}))


def optimum(nest: LoopNest, arch: MappingArch, time_limit: float, seed: int) -> dict[str, Any]:
    """The exact EDP of ``nest`` on ``arch`` (every lever on), with its bound, status and seconds."""
    t0 = time.perf_counter()
    r = solve_layer(nest, arch, "edp", options=SolveOptions(time_limit=time_limit, threads=1, seed=seed),
                    tuning=dict.fromkeys(EXACT_LEVERS, True))
    return {"value": r.objective, "bound": r.bound, "status": r.status.value, "gap": r.gap,
            "time_s": time.perf_counter() - t0, "mapping": r.mapping}


def _within_cells(trace: Any, reference: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rel in WITHIN:
        hit = None if reference is None else samples_to_within(trace, reference, rel)
        key = f"{round(rel * 100)}pct"
        out[f"samples_{key}"] = None if hit is None else hit[0]
        out[f"seconds_{key}"] = None if hit is None else round(hit[1], 3)
    return out


def _surrogates(layers: Mapping[str, LoopNest], scale: Scale, seed: int, out: Path,
                say: Callable[[str], None]) -> dict[tuple[str, ...], Any]:
    """One surrogate per dimension family (convolutions, matrix products), trained on Accel-A's mappings of the
    study's layers of that family, encoding the slot layout of both accelerators; saved as ``.npz``."""
    from dlaopt.formulations.mapping.surrogate import TrainConfig, slot_layout, train_surrogate

    a, b = _arch("accel-a"), _arch("accel-b")
    layout = slot_layout(a, b)
    families: dict[tuple[str, ...], list[LoopNest]] = {}
    for nest in layers.values():
        families.setdefault(tuple(nest.dims), []).append(nest)
    models = {}
    for dims, nests in families.items():
        t0 = time.perf_counter()
        model, report = train_surrogate(nests, a, TrainConfig(samples=scale.surrogate_samples, seed=seed),
                                        layout=layout)
        model.save(out / f"surrogate-{''.join(dims)}.npz")
        models[dims] = model
        say(f"surrogate for {''.join(dims)} trained on accel-a in {time.perf_counter() - t0:.1f} s: {report}")
    return models


def _run_search(name: str, nest: LoopNest, arch: MappingArch, samples: int, seed: int,
                models: Mapping[tuple[str, ...], Any]) -> tuple[float, Any]:
    if name == "surrogate":
        from dlaopt.formulations.mapping.heuristics import SearchTrace
        from dlaopt.formulations.mapping.surrogate import surrogate_search

        trace = SearchTrace()
        surrogate_search(nest, arch, "edp", models[tuple(nest.dims)], samples=samples, seed=seed, trace=trace)
        return (trace.points[-1][2] if trace.points else math.inf), trace
    run = run_mapper(name, nest, arch, "edp", samples=samples, seed=seed)
    return run.value, run.trace


CSV_FIELDS = ("part", "workload", "accelerator", "mapper", "edp", "ratio", "reference", "reference_status",
              "reference_gap", "samples", "seconds", *(f"{w}_{round(r * 100)}pct" for r in WITHIN
                                                        for w in ("samples", "seconds")))


def run_mapper_study(out_dir: str | Path = "results/mapper-study", *, quick: bool = False,
                     parts: Sequence[str] | None = None, workloads: Sequence[str] | None = None,
                     samples: int | None = None, exact_time_limit: float | None = None,
                     total_time_limit: float | None = None, seed: int = 0,
                     progress: Callable[[str], None] | None = None) -> ExperimentReport:
    """Run the parts (module docstring) at the scale (:data:`QUICK` or :data:`FULL`, with the overrides)."""
    scale = QUICK if quick else FULL
    parts = list(parts or PARTS)
    check_choices(parts, PARTS, "--parts", "part")
    if workloads:
        check_choices(list(workloads), FULL.workloads, "--workloads", "workload")
    check_positive(samples=samples, exact_time_limit=exact_time_limit, total_time_limit=total_time_limit)
    scale = Scale(scale.label, tuple(workloads or scale.workloads), int(samples or scale.samples),
                  exact_time_limit or scale.exact_time_limit, scale.surrogate_samples,
                  total_time_limit or scale.total_time_limit)
    out, log = output_folder(out_dir, "mapper_study.jsonl")
    say = progress or (lambda _s: None)
    t0 = time.monotonic()

    def left() -> float:
        return scale.total_time_limit - (time.monotonic() - t0)

    layers = study_layers(scale)
    rows: list[dict[str, Any]] = []
    curves: dict[str, dict[str, Any]] = {}
    optima: dict[tuple[str, str], dict[str, Any]] = {}

    def reference(workload: str, accel: str) -> dict[str, Any]:
        if (workload, accel) not in optima:
            lim = max(1.0, min(scale.exact_time_limit, left()))
            optima[workload, accel] = optimum(layers[workload], _arch(accel), lim, seed)
            o = optima[workload, accel]
            say(f"{workload} on {accel}: exact EDP {o['value']:.4g} ({o['status']}, gap {o['gap']}, "
                f"{o['time_s']:.1f} s)")
        return optima[workload, accel]

    def keep(part: str, workload: str, accel: str, mapper: str, value: float, trace: Any) -> None:
        ref = reference(workload, accel)
        refv = ref["value"]
        row = {"part": part, "workload": workload, "accelerator": accel, "mapper": mapper,
               "edp": None if not math.isfinite(value) else value,
               "ratio": None if refv is None or not math.isfinite(value) else value / refv,
               "reference": refv, "reference_status": ref["status"], "reference_gap": ref["gap"],
               "samples": trace.samples, "seconds": round(trace.seconds, 3), **_within_cells(trace, refv)}
        rows.append(row)
        append_records(log, [row])
        curves[f"{part}|{workload}|{accel}|{mapper}"] = {"points": trace.points, "reference": refv,
                                                         "end": [trace.samples, trace.seconds]}
        say(f"{part} {workload} {accel} {mapper}: EDP {value:.4g}" + (f" ({row['ratio']:.3f}x the optimum)"
                                                                     if row["ratio"] else ""))

    skipped: list[str] = []
    if "convergence" in parts:
        mappers = list(CONVERGENCE_MAPPERS)
        models = {}
        try:
            models = _surrogates(layers, scale, seed, out, say)
        except (ImportError, ValueError) as exc:  # pragma: no cover - reported, the other mappers still run
            mappers.remove("surrogate")
            skipped.append(f"surrogate: {exc}")
        for workload in layers:
            for accel in ACCELERATORS:
                for mapper in mappers:
                    if left() <= 0:
                        skipped.append(f"convergence {workload} {accel} {mapper}")
                        continue
                    value, trace = _run_search(mapper, layers[workload], _arch(accel), scale.samples, seed, models)
                    keep("convergence", workload, accel, mapper, value, trace)
    if "ablations" in parts:
        for workload in [w for w in layers if layers[w].kind == "conv2d"]:
            for mapper in ABLATION_MAPPERS:
                if left() <= 0:
                    skipped.append(f"ablations {workload} {mapper}")
                    continue
                value, trace = _run_search(mapper, layers[workload], _arch("accel-b"), scale.samples, seed, {})
                keep("ablations", workload, "accel-b", mapper, value, trace)
    order_study: dict[str, Any] | None = None
    if "orders" in parts:
        conv = "resnet-conv4" if "resnet-conv4" in layers else next(
            (w for w in layers if layers[w].kind == "conv2d"), None)
        if conv is not None and left() > 0:
            from dlaopt.formulations.mapping.orders import order_sensitivity

            ref = reference(conv, "accel-b")
            if ref["mapping"] is not None:
                s = order_sensitivity(layers[conv], _arch("accel-b"), ref["mapping"], "edp")
                order_study = {"workload": conv, "accelerator": "accel-b", "orders": s.orders,
                               "distinct": s.distinct_values, "spread": s.spread, "optimum_status": ref["status"],
                               "signature_determines_value": s.signature_determines_value,
                               "classes": [{"value": c.value, "count": c.count, "innermost": c.innermost,
                                            "stationary": c.stationary, "example": list(c.example)}
                                           for c in s.classes], "chapter": CHAPTER_ORDERS}
                say(f"orders: {s.orders} orders of {conv}'s optimum give {s.distinct_values} EDP values, spread "
                    f"{s.spread:.3g}x")
        elif conv is not None:
            skipped.append("orders")
    sizes: list[dict[str, Any]] = []
    if "spacesize" in parts:
        from dlaopt.formulations.mapping.spacesize import space_sizes

        for accel in ACCELERATORS:
            for workload, nest in layers.items():
                if left() <= 0:
                    skipped.append(f"spacesize {workload} {accel}")
                    continue
                sizes.append(space_sizes(nest, _arch(accel)).to_dict() | {"workload": workload})
    seconds = time.monotonic() - t0
    table = markdown(scale, rows, order_study, sizes, optima, skipped, seconds)
    details = {"scale": scale.__dict__, "optima": {f"{w}|{a}": {k: v for k, v in o.items() if k != "mapping"}
                                                   for (w, a), o in optima.items()},
               "curves": curves, "orders": order_study, "spacesize": sizes, "skipped": skipped, "seconds": seconds}
    csv_path, md_path, _ = write_report(out, "mapper_study", rows, CSV_FIELDS, table + "\n",
                                        ("mapper_study.json", details), None)
    plot_path = None
    if rows or order_study:
        from dlaopt.plots import save
        from dlaopt.plots.search import plot_ablations, plot_convergence, plot_orders

        if any(r["part"] == "convergence" for r in rows):
            plot_path = save(plot_convergence(curves, "convergence"), out / "convergence.png")
        if any(r["part"] == "ablations" for r in rows):
            save(plot_ablations(curves), out / "ablations.png")
        if order_study is not None:
            save(plot_orders(order_study), out / "orders.png")
    return ExperimentReport(rows, csv_path, md_path, plot_path, table,
                            {"optima": details["optima"], "orders": order_study, "spacesize": sizes,
                             "skipped": skipped, "seconds": seconds})


def _cell(v: Any) -> str:
    return "never" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:.3g}"


def markdown(scale: Scale, rows: Sequence[Mapping[str, Any]], orders: Mapping[str, Any] | None,
             sizes: Sequence[Mapping[str, Any]], optima: Mapping[tuple[str, str], Mapping[str, Any]],
             skipped: Sequence[str], seconds: float) -> str:
    lines = [f"# The mapper study (seed 001 Chapter 5.2) against the proven optimum — {scale.label} scale", "",
             f"EDP; {scale.samples:,} samples per mapper (seed 0); exact up to {scale.exact_time_limit:g} s per "
             f"layer; {seconds:.0f} s in all.", "", "## Optima", "",
             "| workload | accelerator | EDP | status | gap | seconds |", "|---|---|---|---|---|---|"]
    for (w, a), o in optima.items():
        lines.append(f"| {w} | {a} | {_cell(o['value'])} | {o['status']} | {_cell(o['gap'])} | {o['time_s']:.1f} |")
    for part, title in (("convergence", "Convergence (Fig. 5.3)"), ("ablations", "GAMMA's operators (Figs. 5.5-5.6)")):
        part_rows = [r for r in rows if r["part"] == part]
        if not part_rows:
            continue
        lines += ["", f"## {title}", "",
                  "Samples (and seconds) to come within 10 %, 1 % and 0 % of the optimum; 'never' within the budget.",
                  "", "| workload | accelerator | mapper | EDP / optimum | 10 % | 1 % | 0 % |",
                  "|---|---|---|---|---|---|---|"]
        for r in part_rows:
            cells = [f"{_cell(r[f'samples_{k}'])} ({_cell(r[f'seconds_{k}'])} s)" if r[f"samples_{k}"] is not None
                     else "never" for k in ("10pct", "1pct", "0pct")]
            lines.append(f"| {r['workload']} | {r['accelerator']} | {r['mapper']} | {_cell(r['ratio'])} | "
                         + " | ".join(cells) + " |")
    if orders is not None:
        lines += ["", "## Loop orders of the optimum (Fig. 5.7)", "",
                  f"{orders['orders']:,} same-order variants of the optimum of {orders['workload']} on "
                  f"{orders['accelerator']} ({orders['optimum_status']}) give {orders['distinct']} distinct EDP "
                  f"values, best to worst {orders['spread']:.3g}x (the chapter: {CHAPTER_ORDERS['values']} values, "
                  f"{CHAPTER_ORDERS['spread']}x on GAMMA's mapping).", "",
                  "| EDP | orders | innermost loops per level | stationary per level |", "|---|---|---|---|"]
        for c in orders["classes"]:
            inner = "; ".join(f"{lv}: {''.join(t) or '-'}" for lv, t in c["innermost"].items())
            stat = "; ".join(f"{lv}: {''.join(t) or '-'}" for lv, t in c["stationary"].items())
            lines.append(f"| {_cell(c['value'])} | {c['count']:,} | {inner} | {stat} |")
    if sizes:
        reps = list(sizes[0]["counts"])
        lines += ["", "## Map-space size (§5.2.2), log10 of the exact count", "",
                  "| workload | accelerator | " + " | ".join(reps) + " | chapter's formula |",
                  "|" + "---|" * (len(reps) + 3)]
        for s in sizes:
            lg = s["log10"]
            lines.append(f"| {s['workload']} | {s['arch']} | " + " | ".join(f"{lg[r]:.2f}" for r in reps)
                         + f" | {lg['chapter']:.2f} |")
    if skipped:
        lines += ["", "Skipped (total time limit, or not available): " + ", ".join(skipped) + "."]
    return "\n".join(lines)


__all__ = ["ABLATION_MAPPERS", "ACCELERATORS", "CONVERGENCE_MAPPERS", "FULL", "PARTS", "QUICK", "optimum",
           "run_mapper_study", "study_layers"]
