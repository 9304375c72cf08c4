"""Click commands of ``dlaopt experiment`` (registered lazily in :data:`dlaopt.cli.experiment.EXPERIMENTS`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _progress(quiet: bool) -> Callable[[str], None] | None:
    """Progress lines on stderr, unless the output is JSON."""
    return None if quiet else (lambda s: click.echo(s, err=True))


def _echo_report(report: Any) -> None:
    """The Markdown table, then where the rows, the table and the figure were written."""
    click.echo(report.table)
    click.echo(f"rows: {report.csv_path}\ntable: {report.markdown_path}\nplot: {report.plot_path}")


def _print_json(as_json: bool, data: Any) -> bool:
    """Print ``data`` as JSON on stdout when asked; whether it did."""
    if as_json:
        json.dump(data, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    return as_json


@click.command("thesis-sweep")
@click.option("--out", "out_dir", default="results/thesis-sweep", show_default=True, help="Output folder.")
@click.option("--networks", help="Comma-separated subset of: CNN, Lenet5, Lstm, Minerva, Elu, Large-Elu, Resnet, VGG.")
@click.option("--sizes", help="Comma-separated scratchpad sizes in KB (default 32,64,...,2048).")
@click.option("--methods", help="Comma-separated methods (default naive,onsram,greedy,coloring,exact).")
@click.option("--time-limit", type=float, default=60.0, show_default=True, help="Per exact solve, seconds.")
@click.option("--oversize", type=click.Choice(["tile", "cap"]), default="tile", show_default=True,
              help="'cap' reproduces the thesis' accounting (tensors shrunk to the scratchpad size); 'tile' rebuilds "
              "oversized operators into tiles.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Exact solver threads (default: HiGHS').")
@click.option("--node-limit", type=click.IntRange(min=1), default=None,
              help="Branch-and-bound node limit of the exact solves (HiGHS counts nodes after the root; a run "
              "stopped by it, not by the time limit, is reproducible).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def thesis_sweep(out_dir: str, networks: str | None, sizes: str | None, methods: str | None, time_limit: float,
                 oversize: str, threads: int | None, node_limit: int | None, as_json: bool) -> None:
    """Seed 000's Chapter 7 sweep: networks x scratchpad sizes on the three-scratchpad SMAUG preset."""
    from dlaopt.errors import InputError
    from dlaopt.experiments.pinning import SWEEP_METHODS, THESIS_NETWORKS, run_thesis_sweep

    nets = _csv(networks)
    for n in nets or []:
        if n not in THESIS_NETWORKS:
            raise InputError(f"unknown thesis network '{n}'", path=("--networks",),
                             expected="one of: " + ", ".join(THESIS_NETWORKS))
    try:
        kbs = [int(s) for s in _csv(sizes) or []] or None
    except ValueError:
        raise InputError(f"sizes must be integers, got '{sizes}'", path=("--sizes",)) from None
    report = run_thesis_sweep(out_dir, networks=nets, sizes_kb=kbs, methods=_csv(methods) or SWEEP_METHODS,
                              time_limit=time_limit, oversize=oversize, threads=threads, node_limit=node_limit,
                              progress=_progress(as_json))
    if _print_json(as_json, report.rows):
        return
    click.echo(report.table_markdown)
    click.echo(f"rows: {report.csv_path}\ntable: {report.table_path}\nplot: {report.plot_path}")


@click.command("pinning-benchmark")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def pinning_benchmark(as_json: bool) -> None:
    """ResNet-50 (3x256 KB, proven optimum) and BERT-base (12 layers, seq 128, 1 % gap in 60 s): the figures."""
    from dlaopt.experiments.pinning import run_pinning_benchmark

    rows = run_pinning_benchmark(progress=_progress(as_json))
    if _print_json(as_json, rows):
        return
    for r in rows:
        click.echo(f"\n{r['benchmark']}")
        for k, v in r.items():
            if k != "benchmark":
                click.echo(f"  {k:>24}: {v}")


@click.command("mapping-benchmark")
@click.option("--out", "out_dir", default="results/mapping-benchmark", show_default=True, help="Output folder.")
@click.option("--network", default="resnet50", show_default=True, help="A zoo network (its unique conv layers).")
@click.option("--presets", default="eyeriss,accel-b", show_default=True, help="Comma-separated hardware presets.")
@click.option("--objective", type=click.Choice(["energy", "latency", "edp"]), default="energy", show_default=True)
@click.option("--methods", help="Comma-separated subset of exact,ga,random,nvdla,eyeriss,shidiannao (default all).")
@click.option("--time-limit", type=float, default=60.0, show_default=True, help="Per layer for exact, seconds.")
@click.option("--workers", type=int, default=2, show_default=True, help="Layers run in parallel processes.")
@click.option("--layers", type=int, default=None, help="Only the first N unique layers (a quick look).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
def mapping_benchmark(out_dir: str, network: str, presets: str, objective: str, methods: str | None,
                      time_limit: float, workers: int, layers: int | None, seed: int, as_json: bool) -> None:
    """Mapping benchmark (seeds 001 GAMMA and 004 PolyAcc): every unique conv layer of NETWORK on each preset — exact
    (proven optimum) versus GA (same wall time), random (10K samples) and the NVDLA-, Eyeriss- and ShiDianNao-like
    dataflows."""
    from dlaopt.errors import InputError
    from dlaopt.experiments.mapping import METHODS, run_mapping_benchmark
    from dlaopt.hardware.presets import PRESETS
    from dlaopt.zoo import ZOO

    ZOO.entry(network, path=("--network",))
    preset_list = tuple(_csv(presets) or [])
    for p in preset_list:
        PRESETS.entry(p, path=("--presets",))
    chosen = tuple(_csv(methods) or METHODS)
    for m in chosen:
        if m not in METHODS:
            raise InputError(f"unknown method '{m}'", path=("--methods",), expected="one of: " + ", ".join(METHODS))
    report = run_mapping_benchmark(out_dir, network=network, presets=preset_list, objective=objective,
                                   methods=chosen, time_limit=time_limit, seed=seed, workers=workers, layers=layers,
                                   progress=_progress(as_json))
    if _print_json(as_json, {"rows": report["rows"], "summary": report["summary"]}):
        return
    click.echo(report["table"])
    click.echo(f"rows: {report['csv']}\ntable: {report['markdown']}")


@click.command("zigzag-compare")
@click.option("--zigzag-python", "zigzag_python", help="A Python interpreter with zigzag-dse 3.9.1 installed.")
@click.option("--setup", "setup_dir", help="Create a virtualenv in this folder (if missing) and pip-install "
              "zigzag-dse==3.9.1 and six into it; use it as the ZigZag interpreter.")
@click.option("--out", "out_dir", default="results/zigzag-compare", show_default=True, help="Output folder.")
@click.option("--objectives", default="energy,latency", show_default=True, help="Comma-separated: energy, latency.")
@click.option("--layers", type=int, default=None, help="Only the first N unique conv layers (a quick look).")
@click.option("--time-limit", type=float, default=60.0, show_default=True, help="Per layer for dlaopt exact, s.")
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
def zigzag_compare(zigzag_python: str | None, setup_dir: str | None, out_dir: str, objectives: str,
                   layers: int | None, time_limit: float, as_json: bool) -> None:
    """dlaopt's exact mapper beside ZigZag: ResNet-18's unique conv layers on the Eyeriss preset — ZigZag's search (in
    its own environment, not a dependency) versus dlaopt's exact method: search times, and each best mapping's energy
    and latency in dlaopt's cost model, with the differences between the two models."""
    from dlaopt.errors import InputError
    from dlaopt.experiments.zigzag_compare import OBJECTIVES, run_zigzag_compare

    objs = tuple(_csv(objectives) or ())
    if not objs or any(o not in OBJECTIVES for o in objs):
        raise InputError(f"bad objectives '{objectives}'", path=("--objectives",),
                         expected="a comma-separated subset of: " + ", ".join(OBJECTIVES))
    if layers is not None and layers < 1:
        raise InputError("--layers must be at least 1", path=("--layers",))
    report = run_zigzag_compare(out_dir, zigzag_python=zigzag_python, setup=setup_dir, objectives=objs,
                                layers=layers, time_limit=time_limit,
                                progress=_progress(as_json))
    if _print_json(as_json, {"rows": report["rows"], "summary": report["summary"], "meta": report["meta"]}):
        return
    click.echo(report["table"])
    click.echo(f"rows: {report['csv']}\ntable: {report['markdown']}\ndetails: {report['json']}")


@click.command("deepopt-reproduce")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON instead of Markdown.")
def deepopt_reproduce(as_json: bool) -> None:
    """Seed 003 (DeepOpt) reproduced: Tables 3, 4 and 5, the E·D ranges and the AlexNet conv3 check, next to the
    published values (five networks × 70,631 design points, vectorised; about a minute)."""
    from dlaopt.experiments.deepopt import reproduce

    text, rows = reproduce()
    if _print_json(as_json, rows):
        return
    click.echo(text)


@click.command("deepopt-benchmark")
@click.option("--network", default="GoogleNet-v1", show_default=True,
              help="AlexNet, VGG16, GoogleNet-v1, SqueezeNet-v1.1 or ResNet-50.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON instead of Markdown.")
def deepopt_benchmark(network: str, as_json: bool) -> None:
    """Seed 003 (DeepOpt, Section 4.2): hardware co-design by the vectorised sweep and by the exact models (MILP with a
    schedule limit, weighted-sum sweep for the true network E·D), same optimum, with times."""
    from dlaopt.errors import InputError
    from dlaopt.experiments.deepopt import NETWORKS, benchmark_markdown, codesign_benchmark

    if network not in NETWORKS:
        raise InputError(f"unknown network '{network}'", path=("--network",), expected=", ".join(NETWORKS))
    rows = codesign_benchmark(network)
    if _print_json(as_json, rows):
        return
    click.echo(benchmark_markdown(rows))


@click.command("magma-benchmark")
@click.option("--out", "out_dir", default="results/magma-benchmark", show_default=True, help="Output folder.")
@click.option("--tasks", default="vision,language,recommendation,mix", show_default=True)
@click.option("--platforms", default="magma-s1,magma-s2,magma-s4", show_default=True)
@click.option("--bandwidths", default="1,16,256", show_default=True, help="System bandwidths, GB/s.")
@click.option("--group-size", type=int, default=100, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--cache-dir", default=None, help="Job analysis cache folder.")
@click.option("--time-factor", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Exact's time limit as a multiple of MAGMA's measured wall time on the instance.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def magma_benchmark(out_dir: str, tasks: str, platforms: str, bandwidths: str, group_size: int, seed: int,
                    cache_dir: str | None, time_factor: float, as_json: bool) -> None:
    """Seed 001 (MAGMA, Chapter 7): MAGMA, Herald-like, AI-MT-like and LPT, and exact warm-started from their best and
    given --time-factor × MAGMA's wall time, on every task type × platform × system bandwidth; throughputs (GOPS),
    exact's bound and gap."""
    from dlaopt.errors import InputError
    from dlaopt.experiments.magma import run_benchmark
    from dlaopt.hardware.platforms import PLATFORMS

    plats = _csv(platforms) or []
    for p in plats:
        PLATFORMS.entry(p, path=("--platforms",))
    task_list = _csv(tasks) or []
    for t in task_list:
        if t not in ("vision", "language", "recommendation", "mix"):
            raise InputError(f"unknown task '{t}'", path=("--tasks",), expected="vision, language, recommendation, mix")
    try:
        bws = [float(b) for b in _csv(bandwidths) or []]
    except ValueError:
        raise InputError(f"bandwidths must be numbers (GB/s), got {bandwidths!r}", path=("--bandwidths",)) from None
    report = run_benchmark(out_dir, tasks=task_list, platforms=plats, bandwidths=bws, group_size=group_size,
                           seed=seed, cache_dir=cache_dir, time_factor=time_factor,
                           progress=_progress(as_json))
    if _print_json(as_json, report["rows"]):
        return
    click.echo(report["table"])


@click.command("bankmap-benchmark")
@click.option("--banks", type=int, default=128, show_default=True)
@click.option("--bank-kb", "bank_kb", default="8,16,64", show_default=True, help="Comma-separated KB per bank.")
@click.option("--offchip-weight", type=float, default=4.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def bankmap_benchmark(banks: int, bank_kb: str, offchip_weight: float, as_json: bool) -> None:
    """Seed 002 (AWS Inferentia): ResNet-50 bank mapping (local, propagate, exact) on a banked memory, and data-movement
    elimination on the Parallel-WaveNet flow."""
    from dlaopt.errors import InputError
    from dlaopt.experiments.bankmap import dme_summary, mapping_rows, report_markdown

    try:
        kbs = tuple(float(v) for v in _csv(bank_kb) or [])
    except ValueError:
        raise InputError(f"bank sizes must be numbers (KB), got {bank_kb!r}", path=("--bank-kb",)) from None
    rows = mapping_rows(banks=banks, bank_kbs=kbs, offchip_weight=offchip_weight)
    dme = dme_summary()
    if _print_json(as_json, {"mapping": rows, "dme": dme}):
        return
    click.echo(report_markdown(rows, dme))


@click.command("compile-benchmark")
@click.option("--out", "out_dir", default="results/compile-benchmark", show_default=True,
              help="Where the compile report goes.")
@click.option("--time-limit", type=float, default=60.0, show_default=True, help="Per exact solve, seconds.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Solver threads (default: the solver's).")
@click.option("--json", "as_json", is_flag=True, help="Print the per-stage figures as JSON.")
def compile_benchmark(out_dir: str, time_limit: float, threads: int | None, as_json: bool) -> None:
    """The compile pipeline's benchmark: ResNet-50 through `dlaopt compile` on the SMAUG-like preset and a MAGMA S2
    platform, every stage verified: per-stage figures and the end-to-end estimate."""
    from dlaopt.experiments.compile import run_compile_benchmark, stage_rows

    report, text = run_compile_benchmark(out_dir, time_limit=time_limit, threads=threads,
                                         progress=_progress(as_json))
    if _print_json(as_json, {"stages": stage_rows(report), "end_to_end": report.end_to_end}):
        return
    click.echo(text)
    click.echo(f"report: {out_dir}/report.md")


@click.command("flexion")
@click.option("--out", "out_dir", default="results/flexion", show_default=True, help="Output folder.")
@click.option("--studies", default="tile,order,parallel,shape", show_default=True,
              help="Comma-separated subset of: tile, order, parallel, shape, classes (all sixteen classes).")
@click.option("--objectives", default="latency,energy,edp", show_default=True,
              help="Comma-separated subset of: latency, energy, edp.")
@click.option("--layers", help="Comma-separated MnasNet layers for every study: thesis numbers (1-based conv layers) "
              "or layer names (default: each study's three layers of the chapter).")
@click.option("--network", is_flag=True, help="Also solve every MnasNet layer, for the whole-network rows.")
@click.option("--time-limit", type=float, default=60.0, show_default=True, help="Per exact solve, seconds.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Solves run in parallel processes.")
@click.option("--quick", is_flag=True, help="One small convolution on a 4x4 array instead of MnasNet (seconds).")
@click.option("--resume", is_flag=True, help="Keep the solves already in OUT/results.jsonl.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def flexion(out_dir: str, studies: str, objectives: str, layers: str | None, network: bool, time_limit: float,
            workers: int, quick: bool, resume: bool, as_json: bool) -> None:
    """Seed 001's Chapter 3 (Flexion): the isolation studies of the Tile, Order, Parallelism and Shape axes on MnasNet
    and Table 3.1's accelerator — per flexibility class the proven optimum of runtime, energy and EDP per layer (and
    network), normalised to InFlex beside the thesis' figures, the exact map-space sizes and Table 3.2's area."""
    from dlaopt.experiments.flexion import run_flexion

    report = run_flexion(out_dir, studies=_csv(studies) or [], objectives=_csv(objectives) or [],
                         layers=_csv(layers), network=network, time_limit=time_limit, workers=workers, quick=quick,
                         resume=resume, progress=_progress(as_json))
    if _print_json(as_json, {"rows": report.rows, "spaces": report.spaces, "summary": report.summary}):
        return
    _echo_report(report)


@click.command("confuciux")
@click.option("--out", "out_dir", default="results/confuciux", show_default=True, help="Output folder.")
@click.option("--models", default="mobilenet-v2", show_default=True,
              help="Comma-separated zoo networks (the chapter's: mobilenet-v2, mnasnet, resnet50, ncf).")
@click.option("--objectives", default="latency,energy", show_default=True, help="Comma-separated: latency, energy.")
@click.option("--constraints", help="Comma-separated subset of: unlimited, area-cloud, area-iot, area-iotx, "
              "power-cloud, power-iot, power-iotx (default all, Table 8.2).")
@click.option("--full", is_flag=True, help="The seed's scale: 5000 RL epochs, 2000 fine-tuning generations "
              "(default: 1000 / 500).")
@click.option("--epochs", type=click.IntRange(min=1), help="RL epochs (and GA / random samples); overrides the scale.")
@click.option("--generations", type=click.IntRange(min=1), help="Fine-tuning GA generations; overrides the scale.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every search.")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Processes computing the cost table (0: one per CPU).")
@click.option("--no-verify", is_flag=True, help="Skip the evaluator's re-check of the exact and ConfuciuX designs.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def confuciux(out_dir: str, models: str, objectives: str, constraints: str | None, full: bool, epochs: int | None,
              generations: int | None, seed: int, workers: int, no_verify: bool, as_json: bool) -> None:
    """Seed 001's Chapter 8 (ConfuciuX): LS and LP PE/buffer assignment under Table 8.2's area and power budgets
    with the NVDLA-style dataflow — the proven optimum next to ConfuciuX (RL + local GA), RL alone, GA and random
    search, with the samples each needed to come within 1 % of the optimum, beside Tables 8.3, 8.4 and 8.7."""
    from dlaopt.experiments.confuciux import parse_constraints, run_confuciux

    report = run_confuciux(out_dir, models=_csv(models) or [], objectives=_csv(objectives) or [],
                           constraints=parse_constraints(_csv(constraints)), full=full, epochs=epochs,
                           generations=generations, seed=seed, workers=workers, verify=not no_verify,
                           progress=_progress(as_json))
    if _print_json(as_json, report.rows):
        return
    _echo_report(report)


@click.command("digamma")
@click.option("--out", "out_dir", default="results/digamma", show_default=True, help="Output folder.")
@click.option("--models", default="mobilenet-v2,ncf", show_default=True,
              help="Comma-separated zoo networks (the chapter's: resnet18, resnet50, mobilenet-v2, mnasnet, bert-base, "
              "ncf, dlrm).")
@click.option("--platforms", default="edge,cloud", show_default=True, help="Comma-separated: edge (0.2 mm²), "
              "cloud (7.0 mm²).")
@click.option("--methods", help="Comma-separated subset of: exact, digamma, mapping-opt-buffer, mapping-opt-medium, "
              "mapping-opt-compute, hw-opt-dla, hw-opt-shi, hw-opt-eye (default all).")
@click.option("--full", is_flag=True, help="The seed's sample budget: 40K for DiGamma and for Mapping-opt's GAMMA "
              "(default: 10,000 / 500).")
@click.option("--samples", type=click.IntRange(min=1), help="DiGamma's samples; overrides the scale.")
@click.option("--mapping-samples", type=click.IntRange(min=1), help="Mapping-opt's mappings per layer; overrides the "
              "scale.")
@click.option("--time-limit", type=float, default=900.0, show_default=True, help="Per exact solve, seconds.")
@click.option("--entry-time-limit", type=float, default=60.0, show_default=True, help="Per mapping MILP, seconds.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every search.")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Processes computing table entries (0: one per CPU).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def digamma(out_dir: str, models: str, platforms: str, methods: str | None, full: bool, samples: int | None,
            mapping_samples: int | None, time_limit: float, entry_time_limit: float, seed: int, workers: int,
            as_json: bool) -> None:
    """Seed 001's Chapter 6 (DiGamma): layer-sequential co-design of PE array, L1, L2 and mappings under the edge
    and cloud area budgets — the proven optimum next to DiGamma, Mapping-opt on three fixed designs and HW-opt
    (the best grid design for a fixed dataflow), beside Fig. 6.7, 6.8 and §6.3.3's gains."""
    from dlaopt.experiments.digamma import METHODS, run_digamma

    report = run_digamma(out_dir, models=_csv(models) or [], platforms=_csv(platforms) or [],
                         methods=_csv(methods) or METHODS, full=full, samples=samples,
                         mapping_samples=mapping_samples, time_limit=time_limit, entry_time_limit=entry_time_limit,
                         seed=seed, workers=workers, progress=_progress(as_json))
    if _print_json(as_json, report.rows):
        return
    _echo_report(report)


@click.command("polyacc")
@click.option("--out", "out_dir", default="results/polyacc", show_default=True, help="Output folder.")
@click.option("--studies", default="table3,eyeriss", show_default=True,
              help="Comma-separated: table3 (Table 3's six dataflows, Figs. 5-7), eyeriss (§4.2: AlexNet on the "
              "Eyeriss-like array, Fig. 8's setting).")
@click.option("--benchmarks", help="Comma-separated subset of Table 3's cases: gemm-os, gemm-ws, gemm-vector, "
              "alexnet-conv2, mobilenetv2-2, resnet50-1 (default all).")
@click.option("--layers", help="Comma-separated AlexNet layers of the Eyeriss study (default conv1,...,conv5).")
@click.option("--objective", default="energy", show_default=True, help="Each exact solve's objective: energy, "
              "latency or edp.")
@click.option("--gemm-size", type=int, default=256, show_default=True, help="i = j = k of the GEMM cases.")
@click.option("--batch", type=int, default=1, show_default=True, help="Batch of the convolution layers.")
@click.option("--link-energy-ratio", type=float, default=0.5, show_default=True,
              help="Energy per byte over a PE-to-PE link ÷ the NoC's.")
@click.option("--link-bandwidth", type=float, default=None, help="Bytes per cycle per link (default unlimited, as "
              "the NoC).")
@click.option("--time-limit", type=float, default=60.0, show_default=True, help="Per exact solve, seconds.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Solver threads (default: HiGHS').")
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
def polyacc(out_dir: str, studies: str, benchmarks: str | None, layers: str | None, objective: str, gemm_size: int,
            batch: int, link_energy_ratio: float, link_bandwidth: float | None, time_limit: float,
            threads: int | None, as_json: bool) -> None:
    """Seed 004 (PolyAcc): Table 3's six dataflows (GEMM OS/WS/vector, AlexNet conv2 row stationary, MobileNet-V2
    weight stationary, ResNet-50 ShiDianNao) and §4.2's Eyeriss setting (AlexNet conv1-conv5), each layer's
    proven-optimal mapping under its fixed dataflow with and without PE-to-PE forwarding links: access volumes
    (temporal, multicast, forwarded, unique), energy per level, NoC and links, latency against MACs ÷ PEs and PE
    utilization, beside the seed's claims."""
    from dlaopt.experiments.polyacc import ALEXNET_LAYERS, TABLE3, run_polyacc

    report = run_polyacc(out_dir, studies=_csv(studies) or [], benchmarks=_csv(benchmarks) or tuple(TABLE3),
                         layers=_csv(layers) or ALEXNET_LAYERS, objective=objective, gemm_size=gemm_size,
                         batch=batch, link_energy_ratio=link_energy_ratio, link_bandwidth=link_bandwidth,
                         time_limit=time_limit, threads=threads, progress=_progress(as_json))
    if _print_json(as_json, {"rows": report.rows, "summary": report.summary}):
        return
    _echo_report(report)


def _ints(value: str | None, option: str) -> list[int] | None:
    """Comma-separated integers (``K`` suffix: x1024), or a located error naming ``option``."""
    from dlaopt.errors import InputError

    out = []
    for v in _csv(value) or []:
        try:
            out.append(int(v[:-1]) * 1024 if v[-1:] in "kK" else int(v))
        except ValueError:
            raise InputError(f"not an integer: '{v}'", path=(option,), expected="e.g. 512,4K,16K") from None
    return out or None


@click.command("flat")
@click.option("--out", "out_dir", default="results/flat", show_default=True, help="Output folder.")
@click.option("--scale", default="quick", show_default=True,
              help="quick: BERT and XLM at N = 512, 4K, 16K, 64K; full: BERT, TrXL, FlauBERT, T5, XLM up to 256K.")
@click.option("--models", help="Comma-separated subset of: bert-base, trxl, flaubert, t5, xlm (overrides the scale).")
@click.option("--seq-lens", help="Comma-separated sequence lengths, e.g. 512,4K,16K (overrides the scale).")
@click.option("--platforms", default="edge,cloud", show_default=True,
              help="Comma-separated: edge (flat-edge preset), cloud (flat-cloud preset).")
@click.option("--batch", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--time-limit", type=float, default=60.0, show_default=True, help="Per operator MILP, seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def flat(out_dir: str, scale: str, models: str | None, seq_lens: str | None, platforms: str, batch: int,
         time_limit: float, as_json: bool) -> None:
    """Seed 001's Appendix A (FLAT): attention models on the edge and cloud accelerators of Table A.3 — off-chip
    traffic, runtime, energy and utilization of Naive, Flex-opt (per-operator optimum, unfused) and FLAT-opt (fused
    L-softmax-A, optimal granularity, tile and mappings), L-A and end to end, the longest sequence each granularity
    fits, beside Fig. A.14's speedups and energy ratios."""
    from dlaopt.experiments.flat import run_flat

    report = run_flat(out_dir, scale=scale, models=_csv(models), platforms=_csv(platforms) or [],
                      seq_lens=_ints(seq_lens, "--seq-lens"), batch=batch, time_limit=time_limit,
                      progress=_progress(as_json))
    if _print_json(as_json, report.rows):
        return
    _echo_report(report)


@click.command("fusion")
@click.option("--out", "out_dir", default="results/fusion", show_default=True, help="Output folder.")
@click.option("--scale", default="quick", show_default=True,
              help="quick: MobileNet-V2 and a BERT-base block, groups of at most 2; full: ResNet-50 too, at most 3.")
@click.option("--networks", help="Comma-separated subset of: resnet50, mobilenet-v2, bert-base (overrides the scale).")
@click.option("--platforms", default="edge", show_default=True,
              help="Comma-separated: edge (flat-edge preset), cloud (flat-cloud preset).")
@click.option("--objectives", default="offchip", show_default=True,
              help="Comma-separated: offchip (ties by latency), latency, energy.")
@click.option("--max-group", type=int, default=None, help="Most operators per fused group (overrides the scale).")
@click.option("--time-limit", type=float, default=1800.0, show_default=True, help="Per exact solve, seconds.")
@click.option("--entry-time-limit", type=float, default=60.0, show_default=True, help="Per inner MILP, seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def fusion(out_dir: str, scale: str, networks: str | None, platforms: str, objectives: str, max_group: int | None,
           time_limit: float, entry_time_limit: float, as_json: bool) -> None:
    """Optimal fusion groups (seed 001 Appendix A, generalised from FLAT's fixed L-A pair): for ResNet-50,
    MobileNet-V2 and a BERT-base encoder block, the proven best cover of the operators by fused chains against
    layer-by-layer execution — off-chip traffic saved, latency, energy and the groups chosen."""
    from dlaopt.experiments.fusion import run_fusion

    report = run_fusion(out_dir, scale=scale, networks=_csv(networks), platforms=_csv(platforms) or [],
                        objectives=_csv(objectives) or [], max_group=max_group, time_limit=time_limit,
                        entry_time_limit=entry_time_limit, progress=_progress(as_json))
    if _print_json(as_json, report.rows):
        return
    _echo_report(report)


@click.command("scale-benchmark")
@click.option("--out", "out_dir", default="results/scale-benchmark", show_default=True, help="Output folder.")
@click.option("--quick", is_flag=True, help="Tiny instances and budgets (seconds in all), for tests.")
@click.option("--cases", help="Comma-separated subset of: pinning, mapping, magma, large-pinning, large-mapping, "
              "reuse (default: all).")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Exact solver threads (default: the solver's).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--guard", "guard_s", type=float, default=None,
              help="Stop a solve after this many seconds (default: twice its budget plus 120 s); the profile shows "
              "where its time went.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def scale_benchmark(out_dir: str, quick: bool, cases: str | None, threads: int | None, seed: int,
                    guard_s: float | None, as_json: bool) -> None:
    """Proofs at scale: each exact method with its levers off at the old budget and on at the target budget,
    measured in one run — pinning ResNet-50 at 3 x 256 KB, mapping EDP of ResNet-50's conv2 on Accel-B (against GA),
    the 36 MAGMA job groups (seed 001 Chapter 7), BERT-large, GPT-2 (seq 1024) and a Llama-style block (seq 4096)
    pinned and mapped, and reuse of solved layers (seed 001 Chapter 5) — with the target, whether it is met and
    where the time goes (prepare, build, solver, heuristics, verification)."""
    from dlaopt.experiments.scale import run_scale_benchmark

    report = run_scale_benchmark(out_dir, quick=quick, cases=_csv(cases), threads=threads, seed=seed,
                                 guard_s=guard_s, progress=_progress(as_json))
    if _print_json(as_json, report.rows):
        return
    click.echo(report.table)
    click.echo(f"rows: {report.csv_path}\ntable: {report.markdown_path}")


@click.command("allocation-benchmark")
@click.option("--out", "out_dir", default="results/allocation-benchmark", show_default=True, help="Output folder.")
@click.option("--quick", is_flag=True, help="Tiny instances and budgets (seconds in all), for tests.")
@click.option("--time-limit", type=float, default=None,
              help="Seconds for each of exact and cpsat on one instance (default: 10; quick: 2).")
@click.option("--total-time-limit", type=float, default=None,
              help="Seconds for the whole run; solves not started by then are reported as skipped (default: 1800; "
              "quick: 120).")
@click.option("--sizes", help="Comma-separated buffer counts of the generated instances (default: 100,200,500,1000; "
              "quick: 24).")
@click.option("--seeds", type=int, default=None, help="Instances of each generated setting (default: 2; quick: 1).")
@click.option("--families", help="Comma-separated subset of: zoo, planted, random (default: all).")
@click.option("--methods", help="Comma-separated subset of: greedy_size, greedy_lifetime, best_fit, exact, cpsat "
              "(default: all).")
@click.option("--objective", default="feasibility", show_default=True,
              help="feasibility (a placement within the capacity) or peak (the smallest peak within it).")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True, help="Solver threads.")
@click.option("--seed", type=int, default=0, show_default=True, help="First seed of the generated instances.")
@click.option("--save-instances", is_flag=True, help="Also write every instance as a buffer CSV to OUT/instances "
              "(dlaopt solve FILE --capacity C solves it again).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary and the rows as JSON.")
def allocation_benchmark(out_dir: str, quick: bool, time_limit: float | None, total_time_limit: float | None,
                         sizes: str | None, seeds: int | None, families: str | None, methods: str | None,
                         objective: str, threads: int, seed: int, save_instances: bool, as_json: bool) -> None:
    """Static memory allocation at tight capacities: the compilers' heuristics (greedy by size, greedy by lifetime,
    best fit), the proven exact driver and plain CP-SAT on the residency of the zoo's pinning solutions (seed 000)
    per scratchpad and on generated instances of up to 1,000 buffers (planted: a placement with little or no waste
    exists; random: at 1.00-1.01 x the live-bytes bound) — status, peak, bound and time of every method, and the
    target: 500 buffers within 1 % of the bound, proven in under 1 s each."""
    from dlaopt.experiments.allocation import run_allocation_benchmark

    report = run_allocation_benchmark(out_dir, quick=quick, time_limit=time_limit,
                                      total_time_limit=total_time_limit, sizes=_ints(sizes, "--sizes"),
                                      seeds=seeds, families=_csv(families), methods=_csv(methods),
                                      objective=objective, threads=threads, seed=seed,
                                      save_instances=save_instances, progress=_progress(as_json))
    if _print_json(as_json, {"summary": report.summary, "rows": report.rows}):
        return
    click.echo(report.table)
    click.echo(f"rows: {report.csv_path}\ntable: {report.markdown_path}")


@click.command("gamma")
@click.option("--out", "out_dir", default="results/gamma", show_default=True, help="Output folder.")
@click.option("--quick", is_flag=True, help="Two layers per network, 200 search samples, 10 s per exact solve.")
@click.option("--parts", help="Comma-separated subset of: settings (S1-S3 on ResNet-18, Figs. 4.4-4.5), table45 "
              "(end to end on S3, Table 4.5), pipeline (the two-stage pipeline, Table 4.6) (default: all).")
@click.option("--platforms", help="Comma-separated subset of: edge, cloud (Table 4.2; default both).")
@click.option("--systems", help="Comma-separated subset of: s1, s2, s3 (Table 4.3; default all) for the settings.")
@click.option("--networks", help="Networks of the end-to-end table (default: mobilenet-v2, mnasnet, shufflenet-v2, "
              "resnet50).")
@click.option("--samples", type=int, default=None, help="Samples of GAMMA and random search per layer (default "
              "10,000 as seed 001 §4.4.1; quick: 200).")
@click.option("--time-limit", type=float, default=None, help="Seconds per exact solve (default 60; quick: 10).")
@click.option("--total-time-limit", type=float, default=None,
              help="Seconds for the whole run; layers not started by then are reported as skipped (default 3600; "
              "quick: 300).")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Worker processes (one layer each).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the totals and the pipelines as JSON.")
def gamma(out_dir: str, quick: bool, parts: str | None, platforms: str | None, systems: str | None,
          networks: str | None, samples: int | None, time_limit: float | None, total_time_limit: float | None,
          workers: int, seed: int, as_json: bool) -> None:
    """GAMMA's evaluation (seed 001 Chapter 4.4) against the proven optimum: S1-S3 on ResNet-18 for latency and
    energy on the Edge and Cloud platforms (Figs. 4.4-4.5), MobileNet-V2, MnasNet, ShuffleNet V2 and ResNet-50 end
    to end on S3 (Table 4.5), and the two-stage pipeline of ResNet-18 and VGG16 (Table 4.6) — exact, GAMMA, random
    search and the NVDLA-, Eyeriss- and ShiDianNao-like dataflows, with the chapter's figures beside them."""
    from dlaopt.experiments.gamma import run_gamma

    report = run_gamma(out_dir, quick=quick, parts=_csv(parts), platforms=_csv(platforms), systems=_csv(systems),
                       networks=_csv(networks), samples=samples, time_limit=time_limit,
                       total_time_limit=total_time_limit, workers=workers, seed=seed, progress=_progress(as_json))
    if not _print_json(as_json, report.summary):
        _echo_report(report)


@click.command("mapper-study")
@click.option("--out", "out_dir", default="results/mapper-study", show_default=True, help="Output folder.")
@click.option("--quick", is_flag=True, help="Two of Table 5.1's workloads at an eighth of their channels, 150 "
              "samples per mapper.")
@click.option("--parts", help="Comma-separated subset of: convergence (Fig. 5.3), ablations (Figs. 5.5-5.6), orders "
              "(Fig. 5.7), spacesize (§5.2.2) (default: all).")
@click.option("--workloads", help="Comma-separated subset of Table 5.1's: resnet-conv3, resnet-conv4, "
              "inception-conv2, bert-kqv, bert-attn, bert-ff (default: all; quick: resnet-conv4, bert-attn).")
@click.option("--samples", type=int, default=None, help="Samples per mapper (default 5,000 as Fig. 5.3; quick 150).")
@click.option("--exact-time-limit", type=float, default=None,
              help="Seconds for each proven optimum (default 300; quick 20); a cut solve reports its gap.")
@click.option("--total-time-limit", type=float, default=None,
              help="Seconds for the whole run; what is not started by then is listed as skipped (default 5400; "
              "quick 600).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the optima, the order study and the sizes as JSON.")
def mapper_study(out_dir: str, quick: bool, parts: str | None, workloads: str | None, samples: int | None,
                 exact_time_limit: float | None, total_time_limit: float | None, seed: int, as_json: bool) -> None:
    """The mapper study of seed 001 Chapter 5.2 with the proven optimum: Random-Pruned, a standard GA, GAMMA and a
    Mind-Mappings-style surrogate on Table 5.1's workloads and accelerators (Fig. 5.3, samples and seconds to come
    within 10 %, 1 % and 0 % of the optimum), GAMMA's operator ablations (Figs. 5.5-5.6), the loop orders of the
    optimum (Fig. 5.7) and the exact map-space sizes (§5.2.2)."""
    import os

    # the surrogate's small matrix products run several times slower on a threaded BLAS (measured here); numpy is
    # not imported yet, so this takes effect for this command only
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from dlaopt.experiments.mapper_study import run_mapper_study

    report = run_mapper_study(out_dir, quick=quick, parts=_csv(parts), workloads=_csv(workloads), samples=samples,
                              exact_time_limit=exact_time_limit, total_time_limit=total_time_limit, seed=seed,
                              progress=_progress(as_json))
    if not _print_json(as_json, report.summary):
        _echo_report(report)
