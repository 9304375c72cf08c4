"""Sweeps (``dlaopt sweep``): workloads × a grid of hardware parameters (or options) × methods, each instance an
independent task, run on Dask distributed (a local cluster, or an existing one) or in this process.

A sweep is a YAML (or JSON) file, ``instances/sweeps/<name>.yaml`` for a named one::

    name: thesis                          # default: the file's stem
    description: Seed 000's Chapter 7 sweep.
    problem: pinning
    workloads:                            # each with a unique label (the row label)
      - {label: CNN, zoo: cifar-cnn10}                            # a zoo network, with optional params
      - {label: Resnet, zoo: resnet50, params: {image_size: 225}}
      - {label: chain, workload: {name: chain, tensors: ..., operators: ...}}   # an inline workload
      - {label: tiny, instance: pinning/tiny-inline.yaml}         # an instance file (its hardware unless the
                                                                  # sweep sets one); any entry may add an override
    hardware: {preset: smaug-nvdla, params: {}}
    objective: transfers                  # optional
    options: {oversize: tile}             # optional: the problem's options
    grid:                                 # the cartesian product of these axes (first axis outermost)
      spad_kb: [32, 64, 128]              # a bare name: a hardware parameter (hardware.params.spad_kb)
      options.oversize: [tile, cap]       # a dotted path: that key of the instance document
      objective: [transfers, thesis]      # the objective
    methods: [naive, greedy, exact]       # default: all of the problem's methods
    solve: {time_limit: 20, seed: 0, threads: 1, node_limit: 2000}   # as in bench suites; threads default 1
    report: thesis-table                  # optional: also the thesis' Table 7.1 comparison (pinning, spad_kb axis)

Every (workload, grid point) is one instance and one **task**: :func:`run_task` prepares it once and runs all the
sweep's methods on it through the solve-and-verify harness (the heuristics run once and warm-start the exact methods,
as ``dlaopt compare`` and ``dlaopt bench`` do), returning one JSON record per method (the bench record format,
:func:`dlaopt.results.result_record`, plus ``workload``, ``point``, ``run_id``, ``worker`` and ``facts``). A task takes
and returns plain JSON data and is a module-level function, so Dask workers import it from an installed dlaopt.

:func:`run_sweep` submits the tasks to Dask (``engine='dask'``: a ``LocalCluster`` of ``workers`` single-threaded
worker processes, or the scheduler at ``scheduler``) or runs them one after the other here (``engine='local'``, the
single-process reference). Each finished task's records are appended to ``results.jsonl`` at once (flushed and
synced): a run that is killed keeps every finished task, and a rerun skips the tasks whose records are all there with
the same key (a digest of the instance document, the methods and the solve options). An exception inside a task is
recorded as status ``error`` for its methods (and kept); a task whose worker died or which could not run is recorded
as ``error`` with ``failure: worker`` and run again by the next resume. At the end ``results.csv``, ``results.json``,
``results.md`` (the summary table — per workload and grid point, every method's objective with its ratio to the best
verified one — and every pair) and ``summary.png`` are written, plus ``thesis_sweep.{csv,md,png}`` for ``report:
thesis-table``.
"""

from dlaopt.sweep.files import SWEEP_SCHEMA, Sweep, SweepTask, available_sweeps, axis_path, load_sweep
from dlaopt.sweep.reports import SweepReport, main_summary, plot_summary, summary_markdown, write_reports
from dlaopt.sweep.running import DEFAULT_OUT_ROOT, SweepEvent, run_sweep
from dlaopt.sweep.tasks import run_task

__all__ = [
    "DEFAULT_OUT_ROOT",
    "SWEEP_SCHEMA",
    "Sweep",
    "SweepEvent",
    "SweepReport",
    "SweepTask",
    "available_sweeps",
    "axis_path",
    "load_sweep",
    "main_summary",
    "plot_summary",
    "run_sweep",
    "run_task",
    "summary_markdown",
    "write_reports",
]
