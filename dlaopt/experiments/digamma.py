"""DiGamma (seed 001, Chapter 6) against the proven optimum of hardware–mapping co-design.

Under a chip-area budget for PEs + L1 + L2 (§6.3.1: 0.2 mm² edge, 7.0 mm² cloud) choose the PE array (rows ×
columns), the L1 and L2 sizes and every layer's mapping, minimising the model's latency (layer-sequential: one design
runs every layer). The chapter compares (Fig. 6.7): HW-opt (a grid search over the hardware with a fixed dla-, shi- or
eye-like mapping), Mapping-opt (GAMMA on three fixed designs: compute-focused, buffer-focused, medium) and DiGamma (a
GA over hardware and mappings, 40K samples). Here the same problem is solved exactly on a declared grid and every
method is measured against the proven optimum:

* **exact** — :func:`~dlaopt.formulations.codesign.exact.solve_codesign` with free mappings: the LS selection over a
  per-(layer shape, design point) table refined lazily from bounds, each needed entry a mapping MILP (proven within
  the grid, up to each entry's MILP time limit);
* **DiGamma** — :func:`~dlaopt.formulations.codesign.digamma.digamma` (the seed's 40K samples with ``full``);
* **Mapping-opt** — :func:`~dlaopt.formulations.codesign.digamma.mapping_opt` on the compute-, buffer-focused and
  medium designs of the grid (GAMMA per layer);
* **HW-opt** — the exact LS solve with a fixed dataflow (``nvdla``, ``shidiannao``, ``eyeriss``): the best design
  of the grid for that mapping style, i.e. the seed's grid search.

Every answer is re-checked by the independent evaluator
(:func:`~dlaopt.formulations.codesign.check.evaluate_design`). Reported per method: latency, latency relative to the
proven optimum and to Mapping-opt (compute-focused; Fig. 6.7's normalisation), the design (rows × cols, L1, L2,
area, PE share of the area as Fig. 6.8's "PE area : buffer area"), the samples and the time.

The grids (powers of two for rows and columns within the budget's PE ceiling, three L1 and three L2 sizes) keep the
exact solve to minutes; the report states the grid used. Outputs: ``digamma.md``, ``digamma.csv``,
``digamma.json`` and ``digamma.png``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from dlaopt.experiments.common import ExperimentReport, check_choices, experiment_scale, write_report
from dlaopt.hardware.area import DIGAMMA_BUDGETS_MM2, max_pes_within
from dlaopt.results import environment, environment_markdown, md_table, sci_text

KiB, MiB = 1 << 10, 1 << 20
MODELS: tuple[str, ...] = ("resnet18", "resnet50", "mobilenet-v2", "mnasnet", "bert-base", "ncf", "dlrm")
QUICK_MODELS: tuple[str, ...] = ("mobilenet-v2", "ncf")
MODEL_LABEL: dict[str, str] = {"resnet18": "Resnet18", "resnet50": "Resnet50", "mobilenet-v2": "Mbnet-V2",
                               "mnasnet": "Mnasnet", "bert-base": "BERT", "ncf": "NCF", "dlrm": "DLRM"}
PLATFORMS: dict[str, dict[str, Any]] = {
    "edge": {"preset": "gamma-edge", "area_mm2": DIGAMMA_BUDGETS_MM2["edge"],
             "grid": {"rows": [4, 8, 16, 32], "cols": [4, 8, 16, 32], "l1_bytes": [64, 256, 1024],
                      "l2_bytes": [64 * KiB, 256 * KiB, 1 * MiB],
                      "max_pes": max_pes_within(DIGAMMA_BUDGETS_MM2["edge"], 0)}},
    "cloud": {"preset": "gamma-cloud", "area_mm2": DIGAMMA_BUDGETS_MM2["cloud"],
              "grid": {"rows": [16, 32, 64, 128], "cols": [16, 32, 64, 128, 256], "l1_bytes": [64, 256, 1024],
                       "l2_bytes": [1 * MiB, 4 * MiB, 16 * MiB],
                       "max_pes": max_pes_within(DIGAMMA_BUDGETS_MM2["cloud"], 0)}},
}
HW_OPT: tuple[tuple[str, str], ...] = (("nvdla", "dla"), ("shidiannao", "shi"), ("eyeriss", "eye"))
MAPPING_OPT: tuple[str, ...] = ("buffer", "medium", "compute")
METHODS: tuple[str, ...] = ("exact", "digamma", *(f"mapping-opt-{d}" for d in MAPPING_OPT),
                            *(f"hw-opt-{s}" for _, s in HW_OPT))
QUICK = {"samples": 10_000, "mapping_samples": 500}
FULL = {"samples": 40_000, "mapping_samples": 40_000}

# Seed 001 Fig. 6.7: latency normalised to Compute-focused + Gamma, per platform and model:
# (HW-opt dla, shi, eye, Mapping-opt buffer, medium, compute, DiGamma).
SEED_FIG_6_7: dict[str, dict[str, tuple[float, ...]]] = {
    "edge": {"resnet18": (7.8, 94.8, 29.8, 3.7, 2.4, 1.0, 0.8), "resnet50": (3.6, 88.4, 27.8, 3.7, 1.9, 1.0, 0.8),
             "mobilenet-v2": (2.4, 48.5, 15.9, 2.9, 1.8, 1.0, 0.7), "mnasnet": (2.5, 61.2, 20.5, 3.5, 2.0, 1.0, 0.7),
             "bert-base": (1.3, 4.1, 1.1, 5.6, 2.8, 1.0, 0.8), "ncf": (1.8, 908.0, 482.4, 5.2, 2.7, 1.0, 0.8),
             "dlrm": (1.8, 890.8, 473.4, 4.7, 2.4, 1.0, 1.0)},
    "cloud": {"resnet18": (8.6, 877.6, 275.7, 1.1, 1.2, 1.0, 0.2), "resnet50": (3.4, 786.9, 141.0, 1.1, 0.9, 1.0, 0.4),
              "mobilenet-v2": (3.2, 276.4, 90.6, 1.1, 0.9, 1.0, 0.4),
              "mnasnet": (3.6, 322.6, 107.9, 1.1, 0.9, 1.0, 0.4),
              "bert-base": (1.0, 100.3, 26.6, 3.0, 1.5, 1.0, 0.7),
              "ncf": (1.0, 12288.1, 6528.1, 2.3, 1.2, 1.0, 0.9), "dlrm": (1.3, 10846.3, 5763.9, 1.8, 1.1, 1.0, 0.7)},
}
SEED_FIG_6_7_COLUMNS = ("hw-opt-dla", "hw-opt-shi", "hw-opt-eye", "mapping-opt-buffer", "mapping-opt-medium",
                        "mapping-opt-compute", "digamma")
# §6.3.3: DiGamma's geomean gain over the best HW-opt (Grid-S + dla) and the best Mapping-opt (compute-focused).
SEED_GAINS: dict[str, dict[str, float]] = {"edge": {"hw-opt": 3.25, "mapping-opt": 1.25},
                                           "cloud": {"hw-opt": 4.8, "mapping-opt": 2.0}}
# Fig. 6.8 (Mnasnet, edge): scheme -> (PE array, PEs, latency cycles, area µm², PE share %).
SEED_FIG_6_8: dict[str, tuple[str, int, float, float, int]] = {
    "hw-opt-dla": ("7×64", 448, 3.74e6, 1.99e5, 67),
    "mapping-opt-compute": ("56×9", 504, 1.14e6, 1.83e5, 39),
    "digamma": ("33×12", 396, 9.80e5, 1.99e5, 56),
}


def instance_doc(model: str, platform: str, dataflow: str = "free", *, workers: int = 0,
                 entry_time_limit: float | None = 60.0) -> dict[str, Any]:
    """The ``problem: codesign`` document of one DiGamma case (module docstring)."""
    p = PLATFORMS[platform]
    return {
        "problem": "codesign", "name": f"{model}-digamma-{platform}", "objective": "latency",
        "workload": {"zoo": model, "params": {"batch": 1}},
        "hardware": {"preset": p["preset"]},
        "options": {"deployment": "ls", "dataflow": dataflow, "workers": workers,
                    "entry_time_limit": entry_time_limit, "design_space": dict(p["grid"]),
                    "budget": {"area_mm2": p["area_mm2"]}},
    }


DigammaReport = ExperimentReport


CSV_FIELDS = ("model", "platform", "budget_mm2", "method", "latency", "relative", "vs_mapping_opt_compute", "status",
              "verified", "rows", "cols", "pes", "l1_bytes", "l2_bytes", "area_mm2", "pe_area_share", "samples",
              "time_s", "note")


def _validate(models: Sequence[str], platforms: Sequence[str], methods: Sequence[str]) -> None:
    from dlaopt.zoo import ZOO

    check_choices(models, ZOO.names(), "--models", "model", "a zoo network, e.g. " + ", ".join(MODELS))
    check_choices(platforms, list(PLATFORMS), "--platforms", "platform", "edge, cloud")
    check_choices(methods, METHODS, "--methods", "method")


def run_digamma(
    out_dir: str | Path = "results/digamma",
    *,
    models: Sequence[str] = QUICK_MODELS,
    platforms: Sequence[str] = ("edge", "cloud"),
    full: bool = False,
    samples: int | None = None,
    mapping_samples: int | None = None,
    methods: Sequence[str] = METHODS,
    seed: int = 0,
    workers: int = 0,
    time_limit: float = 900.0,
    entry_time_limit: float = 60.0,
    plot: bool = True,
    progress: Callable[[str], None] | None = None,
) -> DigammaReport:
    """Run every (model, platform) case (module docstring) and write the tables and figure into ``out_dir``.

    ``samples``: DiGamma's budget (default 10,000; 40K with ``full``); ``mapping_samples``: GAMMA's mappings per layer
    in Mapping-opt (500; 40K with ``full``); ``time_limit``: seconds for each exact solve (free and HW-opt);
    ``entry_time_limit``: seconds per mapping MILP."""
    from dlaopt.formulations.base import HeuristicFailure
    from dlaopt.formulations.codesign import digamma as dg
    from dlaopt.formulations.codesign.check import evaluate_design
    from dlaopt.formulations.codesign.exact import solve_codesign
    from dlaopt.formulations.codesign.problem import CodesignProblem
    from dlaopt.formulations.codesign.space import accelerator_for
    from dlaopt.hardware.area import area_mm2
    from dlaopt.io.instance import instance_from_dict

    _validate(models, platforms, methods)
    scale = experiment_scale(QUICK, FULL, full, samples=samples, mapping_samples=mapping_samples)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pb = CodesignProblem()
    rows: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    for model in models:
        for platform in platforms:
            doc = instance_doc(model, platform, workers=workers, entry_time_limit=entry_time_limit)
            data = pb.prepare(instance_from_dict(doc))
            case = {"model": model, "platform": platform, "budget_mm2": PLATFORMS[platform]["area_mm2"]}
            if progress:
                progress(f"digamma: {model} {platform}: {data.n_layers} layers ({len(data.nests)} shapes), "
                         f"{len(data.space)} design points")
            found: dict[str, dict[str, Any]] = {}
            for method in methods:
                t0 = time.perf_counter()
                sol, value, status, samples_used, note, d = None, None, "", None, "", data
                try:
                    if method == "exact" or method.startswith("hw-opt-"):
                        if method != "exact":
                            style = next(full_name for full_name, s in HW_OPT if method == f"hw-opt-{s}")
                            d = replace(data, dataflow=style)
                        tables = pb.tables(d, workers=workers or None)
                        ans = solve_codesign(d.setup(), tables, time_limit=time_limit)
                        status = ans.status.value
                        note = f"{tables.computed} of {tables.lb.size} table entries computed"
                        if ans.choice is not None:
                            sol = pb.solution_from_choice(d, tables, ans.choice)
                            value = ans.value
                            if ans.status.value != "optimal":
                                note += f"; bound {ans.bound:.4g}"
                    elif method == "digamma":
                        o = dg.digamma(data, samples=scale["samples"], seed=seed)
                        sol, value, samples_used, status = o.solution, o.value, o.samples, "found"
                    else:
                        design = method.rsplit("-", 1)[1]
                        o = dg.mapping_opt(data, design, samples=scale["mapping_samples"], seed=seed)
                        sol, value, samples_used, status = o.solution, o.value, o.samples, "found"
                except HeuristicFailure as exc:
                    status, note = "none found", str(exc)
                secs = time.perf_counter() - t0
                row: dict[str, Any] = {**case, "method": method, "latency": value, "status": status,
                                       "samples": samples_used, "time_s": round(secs, 2), "note": note,
                                       "verified": None}
                if sol is not None:
                    ev = evaluate_design(d, sol)
                    row["verified"] = bool(ev.feasible and ev.objective is not None
                                           and abs(ev.objective - value) <= 1e-6 * max(1.0, abs(value)))
                    p = sol.points[0]
                    br = area_mm2(accelerator_for(d.template, p), d.technology)
                    row.update({"rows": p.rows, "cols": p.cols, "pes": p.num_pes, "l1_bytes": p.l1_bytes,
                                "l2_bytes": p.l2_bytes, "area_mm2": br.total,
                                "pe_area_share": br.mac / br.total if br.total else None})
                found[method] = row
                rows.append(row)
                if progress:
                    progress(f"  {method}: {_num(value)} ({status}, {secs:.1f} s)"
                             + (f" on {sol.points[0].label}" if sol is not None else ""))
            opt = found.get("exact", {}).get("latency")
            ref = found.get("mapping-opt-compute", {}).get("latency")
            for r in found.values():
                v = r["latency"]
                r["relative"] = v / opt if v is not None and opt else None
                r["vs_mapping_opt_compute"] = v / ref if v is not None and ref else None
    wall = time.perf_counter() - t_start
    summary = {"scale": "full" if full else "quick", **scale, "seed": seed, "models": list(models),
               "platforms": list(platforms), "time_limit_s": time_limit, "entry_time_limit_s": entry_time_limit,
               "wall_s": round(wall, 1), "environment": environment(1)}
    table = report_markdown(rows, summary)
    def figure() -> Any:
        from dlaopt.plots.codesign import plot_digamma

        return plot_digamma(rows)

    details = ("digamma.json", {"summary": summary, "rows": rows})
    csv_path, md_path, plot_path = write_report(out, "digamma", rows, CSV_FIELDS, table, details,
                                                figure if plot and rows else None)
    return DigammaReport(rows, csv_path, md_path, plot_path, table, summary)


# ------------------------------------------------------------------------------------------------ report
def _num(v: float | None) -> str:
    return sci_text(v, 4)


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _size(n: int | None) -> str:
    if n is None:
        return "—"
    return f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB" if n >= KiB else f"{n} B"


def _geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def report_markdown(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> str:
    lines = ["# DiGamma against the proven optimum (seed 001, Chapter 6)", ""]
    lines.append(
        f"Layer-sequential co-design, objective latency (cycles), area budget PEs + L1 + L2 (edge 0.2 mm², cloud "
        f"7.0 mm², §6.3.1). DiGamma: {summary['samples']:,} samples; Mapping-opt: GAMMA with "
        f"{summary['mapping_samples']:,} mappings per layer on the grid's compute-focused, medium and buffer-focused "
        f"designs; HW-opt: the exact solve with the fixed dataflow (the best grid point for that mapping style); "
        f"exact: free mappings, proven over the grid (each mapping MILP within {summary['entry_time_limit_s']} s). "
        f"`÷ opt`: latency ÷ the proven optimum; `÷ MO-c`: ÷ Mapping-opt compute-focused (Fig. 6.7's normalisation).")
    if summary["scale"] == "quick":
        lines += ["", "*Quick scale: sample budgets below the seed's 40K (use `--full`).*"]
    lines += ["", "Grids:"]
    for name in summary["platforms"]:
        g = PLATFORMS[name]["grid"]
        lines.append(f"- {name} ({PLATFORMS[name]['preset']} template, {PLATFORMS[name]['area_mm2']} mm²): rows "
                     f"{g['rows']}, cols {g['cols']} (at most {g['max_pes']:,} PEs: the budget's ceiling for bare "
                     f"PEs), L1 {[_size(b) for b in g['l1_bytes']]}, L2 {[_size(b) for b in g['l2_bytes']]}")
    lines.append("")
    keys = list(dict.fromkeys((r["model"], r["platform"]) for r in rows))
    header = ["method", "latency", "÷ opt", "÷ MO-c", "seed ÷ MO-c", "design", "L1", "L2", "area mm²", "PE share",
              "samples", "time s", "verified"]
    for model, platform in keys:
        lines.append(f"## {MODEL_LABEL.get(model, model)}, {platform}")
        lines.append("")
        seed = dict(zip(SEED_FIG_6_7_COLUMNS, SEED_FIG_6_7.get(platform, {}).get(model, ()), strict=False))
        body = []
        for r in rows:
            if (r["model"], r["platform"]) != (model, platform):
                continue
            design = f"{r['rows']}×{r['cols']} = {r['pes']}" if r.get("pes") else r["status"]
            share = r.get("pe_area_share")
            body.append([r["method"] + ("" if r["status"] in ("optimal", "found") or r["method"] != "exact"
                                        else f" ({r['status']})"),
                         _num(r["latency"]), _x(r.get("relative")), _x(r.get("vs_mapping_opt_compute")),
                         _x(seed.get(r["method"])), design, _size(r.get("l1_bytes")), _size(r.get("l2_bytes")),
                         "—" if r.get("area_mm2") is None else f"{r['area_mm2']:.4f}",
                         "—" if share is None else f"{100 * share:.0f} : {100 - 100 * share:.0f}",
                         "—" if r["samples"] is None else f"{r['samples']:,}", f"{r['time_s']:.1f}",
                         {True: "yes", False: "NO", None: "—"}[r["verified"]]])
        lines.append(md_table(header, body, ["l"] + ["r"] * (len(header) - 1)))
        lines.append("")
    lines += _gains(rows, keys)
    lines += ["## Next to the seed: Fig. 6.8 (Mnasnet, edge)", "",
              md_table(["scheme", "PE array", "PEs", "latency (cy.)", "area µm²", "PE : buffer area"],
                       [[k, v[0], str(v[1]), _num(v[2]), f"{v[3]:.3g}", f"{v[4]} : {100 - v[4]}"]
                        for k, v in SEED_FIG_6_8.items()], ["l", "r", "r", "r", "r", "r"]),
              "", "(Our designs' PE share is in the tables above; run with `--models mnasnet` for the same model.)", ""]
    lines.append("## Run")
    lines.append("")
    unverified = [r for r in rows if r["verified"] is False]
    lines.append(f"- {len(keys)} cases in {summary['wall_s']} s of wall time; answers rejected by the evaluator: "
                 f"{len(unverified)}; exact time limit {summary['time_limit_s']} s per solve")
    lines.append("")
    lines.append(environment_markdown(summary["environment"]))
    return "\n".join(lines) + "\n"


def _gains(rows: Sequence[Mapping[str, Any]], keys: Sequence[tuple[str, str]]) -> list[str]:
    """§6.3.3's summary: geomean gains over the best HW-opt and the best Mapping-opt, per platform."""
    out = ["## Next to the seed: §6.3.3 (geomean over the models run)", "",
           "Gain = (best HW-opt or best Mapping-opt latency) ÷ (DiGamma's, or the proven optimum's). The seed's "
           "figures are geomeans over its seven models.", ""]
    body = []
    for platform in dict.fromkeys(k[1] for k in keys):
        per: dict[str, list[float]] = {"hw/dg": [], "mo/dg": [], "hw/opt": [], "mo/opt": []}
        for model, plat in keys:
            if plat != platform:
                continue
            by = {r["method"]: r["latency"] for r in rows if (r["model"], r["platform"]) == (model, plat)}
            hw = min((v for m, v in by.items() if m.startswith("hw-opt") and v), default=None)
            mo = min((v for m, v in by.items() if m.startswith("mapping-opt") and v), default=None)
            for name, best in (("hw", hw), ("mo", mo)):
                if best is None:
                    continue
                if by.get("digamma"):
                    per[f"{name}/dg"].append(best / by["digamma"])
                if by.get("exact"):
                    per[f"{name}/opt"].append(best / by["exact"])
        seed = SEED_GAINS.get(platform, {})
        body.append([platform, f"{seed.get('hw-opt', '—')}×", _x(_geomean(per["hw/dg"])), _x(_geomean(per["hw/opt"])),
                     f"{seed.get('mapping-opt', '—')}×", _x(_geomean(per["mo/dg"])), _x(_geomean(per["mo/opt"]))])
    out.append(md_table(["platform", "seed: DiGamma over best HW-opt", "ours: DiGamma", "ours: optimum",
                         "seed: DiGamma over best Mapping-opt", "ours: DiGamma", "ours: optimum"], body,
                        ["l"] + ["r"] * 6))
    out.append("")
    return out


__all__ = ["FULL", "HW_OPT", "METHODS", "MODELS", "PLATFORMS", "QUICK", "QUICK_MODELS", "SEED_FIG_6_7",
           "SEED_FIG_6_8", "SEED_GAINS", "DigammaReport", "instance_doc", "run_digamma"]
