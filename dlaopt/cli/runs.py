"""``dlaopt bench``, ``sweep`` and ``compile``: commands that solve many things and write a results folder."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import click

from dlaopt.cli.common import (
    EXIT_REJECTED,
    console,
    echo_json,
    fail,
    fmt,
    parse_assignments,
    total_time_limit_option,
)


# ------------------------------------------------------------------------------------------------ bench
@click.command()
@click.argument("suite", metavar="SUITE")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Output folder (default: results/bench/SUITE).")
@click.option("--no-resume", is_flag=True,
              help="Run every pair again (default: skip the pairs already finished in DIR/results.jsonl).")
@click.option("--update-readme", is_flag=True,
              help="Replace the block between <!-- bench:SUITE --> and <!-- /bench:SUITE --> in the README with "
                   "the headline table.")
@click.option("--readme", type=click.Path(dir_okay=False, path_type=Path), default=Path("README.md"),
              show_default=True, metavar="FILE", help="The README that --update-readme edits.")
@total_time_limit_option("each (instance, method) pair")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or log lines on stderr.")
def bench(suite: str, out_dir: Path | None, no_resume: bool, update_readme: bool, readme: Path,
          total_time_limit: float | None, quiet: bool) -> None:
    """Run the benchmark suite SUITE (a name from instances/suites/, or a suite file) and print its table.

    Every (instance, method) pair of the suite is solved and verified; one JSON line per finished pair is appended
    to DIR/results.jsonl, so an interrupted run (Ctrl-C) resumes where it stopped and skips finished pairs. At the
    end DIR holds results.csv, results.json and results.md (instance, method, status, objective, bound, gap, time,
    ratio to the best objective of the instance, verified, with the environment: versions, threads, machine), and
    the Markdown is printed. With --total-time-limit the run returns by then: the pairs it leaves out (or cuts
    short) are listed as not run and run by the next resume. Exit code 0 whatever the statuses; 130 when
    interrupted (Ctrl-C), 143 when terminated (SIGTERM).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dlaopt.bench import BenchEvent, load_suite, main_summary, readme_block, run_suite
    from dlaopt.bench import update_readme as write_readme_block
    from dlaopt.solvers.processes import interrupt_exit_code

    err = console(stderr=True)
    loaded = load_suite(suite)  # a bad suite (or README, below) fails here with exit 2, before anything runs
    if update_readme:
        readme_block(readme, loaded.name)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=quiet or not err.is_terminal, transient=True) as bar:
        task = bar.add_task(f"bench {loaded.name}", total=len(loaded.pairs))

        def on_event(ev: BenchEvent) -> None:
            if ev.kind == "start":
                bar.update(task, completed=ev.done, total=ev.total)
                if ev.done and not quiet:
                    err.print(f"resuming: {ev.done} of {ev.total} pairs already finished")
            elif ev.kind == "run":
                bar.update(task, description=f"{loaded.name}: {ev.entry} · {ev.method}")
            else:
                bar.update(task, completed=ev.done)

        try:
            report = run_suite(loaded, out_dir, resume=not no_resume, progress=on_event,
                               total_time_limit=total_time_limit)
        except KeyboardInterrupt as exc:
            bar.stop()
            click.echo(f"interrupted: finished pairs are kept in {out_dir or 'results/bench/' + loaded.name}; "
                       "run the same command again to resume", err=True)
            raise click.exceptions.Exit(interrupt_exit_code(exc)) from None
    click.echo(report.markdown, nl=False)
    if not quiet:
        err.print(main_summary(report))
        err.print("files: " + ", ".join(str(p) for p in report.paths.values()))
    if update_readme:
        write_readme_block(readme, report.suite.name, report.headline)
        if not quiet:
            err.print(f"{readme}: the bench:{report.suite.name} block now holds the headline table")


# ------------------------------------------------------------------------------------------------ sweep
@click.command()
@click.argument("sweep_file", metavar="SWEEP.yaml")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Output folder (default: results/sweeps/NAME).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on the Dask cluster of this scheduler (e.g. tcp://HOST:8786) instead of a local one.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Worker processes of the local Dask cluster (one thread each).")
@click.option("--engine", type=click.Choice(["dask", "local"]), default="dask", show_default=True,
              help="dask: tasks on a Dask cluster; local: one after the other in this process.")
@click.option("--no-resume", is_flag=True,
              help="Run every task again (default: skip the tasks already finished in DIR/results.jsonl).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or log lines on stderr.")
@click.option("--verbose", "-v", is_flag=True, help="Also Dask's informational log messages.")
@total_time_limit_option("each task")
def sweep(sweep_file: str, out_dir: Path | None, scheduler: str | None, workers: int, engine: str, no_resume: bool,
          quiet: bool, verbose: bool, total_time_limit: float | None) -> None:
    """Run the sweep SWEEP.yaml (a file, or a name from instances/sweeps/): workloads x grid x methods, one task per
    (workload, grid point) on Dask, and print the summary table.

    Each finished task's records are appended to DIR/results.jsonl at once, so a killed or interrupted run keeps
    them and the next run skips them. At the end DIR holds results.csv, results.json, results.md and summary.png
    (and thesis_sweep.* for `report: thesis-table`). With --total-time-limit the run returns by then: the tasks not
    finished are cancelled (a local cluster's workers killed), listed as not run and run by the next resume. Exit
    code 0 whatever the statuses; 130 when interrupted (Ctrl-C), 143 when terminated (SIGTERM).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dlaopt.results import fmt_number
    from dlaopt.solvers.processes import interrupt_exit_code
    from dlaopt.sweep import DEFAULT_OUT_ROOT, SweepEvent, load_sweep, main_summary, run_sweep

    err = console(stderr=True)
    sweep = load_sweep(sweep_file)
    out = out_dir if out_dir is not None else DEFAULT_OUT_ROOT / sweep.name
    tty = err.is_terminal

    def log(text: str) -> None:
        if not quiet:
            err.print(text)

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=quiet or not tty, transient=True) as bar:
        bar_task = bar.add_task(f"sweep {sweep.name}", total=len(sweep.tasks))

        def on_event(ev: SweepEvent) -> None:
            if ev.kind == "start":
                bar.update(bar_task, completed=ev.done, total=ev.total)
                if ev.done:
                    log(f"resuming: {ev.done} of {ev.total} tasks already finished")
            elif ev.kind == "engine":
                log(f"running {ev.total - ev.done} tasks {ev.info}")
            else:
                name = ev.task.name if ev.task else ""
                bar.update(bar_task, completed=ev.done, description=f"sweep {sweep.name}: {name}")
                if not tty and ev.task is not None:
                    last = ev.records[-1] if ev.records else None
                    exact = next((r for r in ev.records if r["method"] == "exact"), last)
                    what = (f"{exact['method']} {exact['status']} {fmt_number(exact.get('objective'))}"
                            if exact is not None else "")
                    secs = sum(float(r.get("time_s") or 0.0) for r in ev.records)
                    log(f"[{ev.done}/{ev.total}] {ev.task.name}: {what} ({secs:.1f} s)")

        try:
            report = run_sweep(sweep, out, engine=typing.cast(Any, engine), scheduler=scheduler, workers=workers,
                               resume=not no_resume, progress=on_event, verbose=verbose,
                               total_time_limit=total_time_limit)
        except KeyboardInterrupt as exc:
            bar.stop()
            click.echo(f"interrupted: finished tasks are kept in {out}; run the same command again to resume",
                       err=True)
            raise click.exceptions.Exit(interrupt_exit_code(exc)) from None
    click.echo(report.summary)
    if report.thesis_table is not None:
        click.echo("")
        click.echo(report.thesis_table, nl=False)
    log(main_summary(report))
    log("files: " + ", ".join(str(p) for p in report.paths.values()))


# ================================================================================================ compile
@click.command(name="compile")
@click.argument("workload", metavar="WORKLOAD")
@click.option("--hardware", required=True, metavar="PRESET|FILE",
              help="The accelerator: a preset name (see `dlaopt presets`) or a hardware / instance file.")
@click.option("--platform", default=None, metavar="NAME|FILE",
              help="A multi-accelerator platform (e.g. magma-s2): adds the job-assignment stage.")
@click.option("--param", "params", multiple=True, callback=parse_assignments, metavar="K=V",
              help="A network parameter (repeatable; zoo networks, or batch / dims of an ONNX model).")
@click.option("--hw", "hw_params", multiple=True, callback=parse_assignments, metavar="K=V",
              help="A preset parameter (repeatable), e.g. --hw spad_kb=256.")
@click.option("--platform-param", "platform_params", multiple=True, callback=parse_assignments, metavar="K=V",
              help="A platform parameter (repeatable), e.g. --platform-param system_bandwidth_gbps=16.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Where the report goes (default: compile-<network>/).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              metavar="SEC", help="Limit of every exact solve (the mapping stage spreads it over the layers).")
@click.option("--tenants", type=click.IntRange(min=1), default=None, metavar="N",
              help="Requests of the network scheduled on the platform (default: one per sub-accelerator).")
@click.option("--mapping-objective", type=click.Choice(["edp", "energy", "latency"]), default="edp",
              show_default=True, help="Objective of the mapping stage.")
@click.option("--methods", "stage_methods", multiple=True, callback=parse_assignments, metavar="STAGE=A,B",
              help="Methods of a stage (repeatable), e.g. --methods pinning=greedy,exact.")
@click.option("--seed", type=int, default=0, show_default=True, help="Solver random seed.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Solver threads (default: the solver's).")
@total_time_limit_option("each solve of every stage")
@click.option("--no-plots", is_flag=True, help="Skip the plots.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report to stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
def compile_(workload: str, hardware: str, platform: str | None, params: dict[str, Any], hw_params: dict[str, Any],
             platform_params: dict[str, Any], out_dir: Path | None, time_limit: float, tenants: int | None,
             mapping_objective: str, stage_methods: dict[str, Any], seed: int, threads: int | None,
             total_time_limit: float | None, no_plots: bool, as_json: bool, quiet: bool) -> None:
    """Compile WORKLOAD (a zoo name, .onnx model, workload or instance file): mapping -> tensor pinning -> bank
    mapping -> (with --platform) job assignment, every stage verified; writes report.md, report.json, each stage's
    instance and solution (re-check with `dlaopt verify`) and plots.

    With --total-time-limit the command returns by then with what it has, exit code 0: every solve gets at most
    the time left, and the report is written all the same. A stage cut short inside (methods not started, mapping
    layers completed by a heuristic) still hands on its verified solution and its status says so; a stage not
    started, or left without a verified solution, by the limit is listed as not run (or not finished) with the
    stages after it, and the end-to-end figures are left out. Scripts check report.json's `complete` (false then)
    or stdout's `incomplete:` line. No plot is started once the limit has passed. Exit code 1 when a stage fails
    for any other reason (the message names it), 2 for bad input.
    """
    import time

    started = time.monotonic()  # the total time limit counts from here, input loading included
    from dlaopt.pipeline import (
        DEFAULT_METHODS,
        CompileOptions,
        StageFailed,
        compile_network,
        hardware_document,
        workload_document,
        write_report,
    )

    methods = {k: tuple(m.strip() for m in str(v).split(",") if m.strip()) for k, v in stage_methods.items()}
    for k in methods:
        if k not in DEFAULT_METHODS:
            fail(f"--methods: unknown stage '{k}' (expected one of {', '.join(DEFAULT_METHODS)})")
    err = console(stderr=True)

    def progress(stage: str, event: str, outcome: Any) -> None:
        if quiet or as_json:
            return
        if event == "start":
            err.print(f"{stage} ...")
        elif event == "stopped":
            err.print(f"  {stage}: {outcome['status']}")
        else:
            err.print(f"  {stage}: {outcome.chosen.method} {fmt(outcome.chosen.objective)} "
                      f"({outcome.chosen.status.value}, verified) in {outcome.time_s:.1f} s"
                      + (f"; {outcome.status}" if outcome.cut_short else ""))

    wdoc = workload_document(workload, params)
    hdoc = hardware_document(hardware, hw_params)
    pdoc = hardware_document(platform, platform_params, platform=True) if platform else None
    opts = CompileOptions(mapping_objective=mapping_objective, methods={**DEFAULT_METHODS, **methods},
                          time_limit=time_limit, seed=seed, threads=threads, tenants=tenants, progress=progress,
                          total_time_limit=total_time_limit,
                          deadline=None if total_time_limit is None else started + total_time_limit)
    try:
        report = compile_network(wdoc, hdoc, pdoc, opts)
    except StageFailed as exc:
        click.echo(f"error: {exc}", err=True)
        raise click.exceptions.Exit(EXIT_REJECTED) from None
    folder = out_dir or Path(f"compile-{report.network}")
    paths = write_report(report, folder, plots=not no_plots, deadline=opts.deadline)
    if as_json:
        echo_json(json.loads(paths["json"].read_text()))
        return
    e = report.end_to_end
    out = console()
    if not report.complete:
        out.print(f"{report.network}: incomplete: the total time limit ({total_time_limit:g} s) stopped the pipeline: "
                  + "; ".join(f"{s['stage']} {s['status']}" for s in report.statuses()))
        out.print(f"report: {paths['markdown']} (and report.json, stages/ of the finished stages)")
        return
    out.print(f"{report.network}: {fmt(e['cycles'])} cycles ({e['latency_s'] * 1e3:.4g} ms), "
              f"{e['energy_pj'] * 1e-9:.4g} mJ, {fmt(e['transfer_bytes'])} B to/from main memory")
    if "platform" in e:
        p = e["platform"]
        out.print(f"platform: {p['tenants']} requests in {p['makespan_s'] * 1e3:.4g} ms "
                  f"({p['requests_per_s']:.4g} requests/s)")
    for s in report.stages:
        if s.cut_short:
            out.print(f"{s.name}: {s.status}")
    plots = ", plots/" if (paths["folder"] / "plots").is_dir() else ""
    out.print(f"report: {paths['markdown']} (and report.json, stages/{plots})")




COMMANDS = [bench, sweep, compile_]
