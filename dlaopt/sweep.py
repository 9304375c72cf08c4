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

from __future__ import annotations

import contextlib
import datetime as _dt
import itertools
import json
import logging
import math
import os
import signal
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dlaopt.bench import (
    METHODS_SCHEMA,
    SOLVE_SCHEMA,
    available_files,
    check_methods,
    check_solve,
    config_digest,
    display_path,
    instances_dir,
    merge_documents,
    resolve_instance_file,
    resolve_named_file,
    schema_validator,
)
from dlaopt.errors import InputError
from dlaopt.results import (
    CSV_COLUMNS,
    RESULTS_CSV,
    RESULTS_JSON,
    RESULTS_JSONL,
    RESULTS_MD,
    append_records,
    csv_text,
    environment,
    environment_markdown,
    fmt_gap,
    fmt_number,
    fmt_ratio,
    json_safe,
    md_table,
    open_results,
    record_key,
    seconds_text,
    total_seconds,
    with_ratios,
)
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE, Deadline

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

SUMMARY_PNG = "summary.png"
DEFAULT_OUT_ROOT = Path("results") / "sweeps"
DEFAULT_WORKERS = 2
DEFAULT_THREADS = 1  # solver threads per task unless the sweep's solve options say otherwise
REPORTS = ("thesis-table",)
ENGINES = ("dask", "local")
WORKER_WAIT_S = 60.0  # how long --scheduler waits for its first worker
CONNECT_TIMEOUT_S = 20.0  # and for the scheduler to answer
CLOSE_TIMEOUT_S = 20.0
STOP_CLOSE_TIMEOUT_S = 1.0  # closing a local cluster whose workers were killed (interrupted, or out of time)
TOTAL_LIMIT_FAILURE = "total_time_limit"  # ``failure`` of a record cut short by the total time limit
WORKER_PRELOAD = "dlaopt.solvers.processes"  # local workers die with this process (parent-death signal)

Engine = Literal["dask", "local"]

# ================================================================================================ sweep files
_SCALAR = {"type": ["number", "string", "boolean"]}
SWEEP_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "dlaopt sweep",
    "type": "object",
    "additionalProperties": False,
    "required": ["problem", "workloads"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "problem": {"type": "string", "minLength": 1, "description": "The problem of every instance."},
        "workloads": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["label"],
                "properties": {
                    "label": {"type": "string", "minLength": 1, "description": "The row label (unique)."},
                    "zoo": {"type": "string", "minLength": 1, "description": "A zoo network."},
                    "params": {"type": "object", "description": "The zoo network's parameters."},
                    "workload": {"type": "object", "description": "An inline workload document."},
                    "instance": {"type": "string", "minLength": 1,
                                 "description": "An instance file (relative to instances/ or to the sweep file)."},
                    "override": {"type": "object", "description": "Merged (recursively) into the instance document."},
                },
            },
        },
        "hardware": {"type": "object", "description": "The hardware of every workload: {preset, params} or inline."},
        "objective": {"type": "string", "minLength": 1},
        "options": {"type": "object", "description": "The problem's options."},
        "grid": {
            "type": "object",
            "description": "Axes: a hardware parameter name, 'objective', or a dotted path into the instance "
                           "document (options.oversize, workload.params.batch); each a list of values.",
            "additionalProperties": {"type": "array", "minItems": 1, "items": _SCALAR},
        },
        "methods": METHODS_SCHEMA,
        "solve": SOLVE_SCHEMA,
        "report": {"enum": list(REPORTS), "description": "A named report beyond the summary table."},
    },
}


@cache
def _sweep_validator() -> Draft202012Validator:
    return schema_validator(SWEEP_SCHEMA)


@dataclass(frozen=True)
class SweepTask:
    """One instance of the sweep — a workload at one grid point — and the methods to run on it."""

    index: int
    name: str  # the row label: "<workload> <axis>=<value> ..."
    workload: str
    point: Mapping[str, Any]  # axis -> value
    document: Mapping[str, Any]  # the normalised instance document
    instance_file: str  # the workload's instance file, or "zoo" / "inline"
    key: str  # digest of (document, methods, solve): resuming skips a task only on a match

    def spec(self, sweep: Sweep, run_id: str) -> dict[str, Any]:
        """The plain JSON task that :func:`run_task` runs (on a Dask worker or here)."""
        return {"index": self.index, "name": self.name, "workload": self.workload, "point": dict(self.point),
                "document": json.loads(json.dumps(self.document)), "instance_file": self.instance_file,
                "methods": list(sweep.methods), "solve": dict(sweep.solve), "key": self.key, "run_id": run_id,
                "source": sweep.file}


@dataclass(frozen=True)
class Sweep:
    name: str
    description: str
    file: str
    problem: str
    axes: tuple[str, ...]
    workloads: tuple[str, ...]
    methods: tuple[str, ...]
    solve: Mapping[str, Any]
    report: str | None
    tasks: tuple[SweepTask, ...]

    @property
    def pairs(self) -> int:
        return len(self.tasks) * len(self.methods)


def sweeps_dir() -> Path:
    return instances_dir() / "sweeps"


def available_sweeps() -> list[str]:
    return available_files(sweeps_dir())


def resolve_sweep(name_or_path: str | Path) -> Path:
    """A sweep name (``instances/sweeps/<name>.yaml``) or a path to a sweep file."""
    return resolve_named_file(name_or_path, sweeps_dir(), "sweep")


def axis_path(axis: str) -> tuple[str | int, ...]:
    """Where a grid axis goes in the instance document: ``objective``; a dotted path (``options.oversize``;
    numeric parts index lists: ``hardware.memories.1.capacity_kb``); else a hardware parameter."""
    if axis == "objective":
        return ("objective",)
    if "." in axis:
        return tuple(int(p) if p.isdigit() else p for p in axis.split("."))
    return ("hardware", "params", axis)


def _set_path(doc: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    node: Any = doc
    for i, part in enumerate(path[:-1]):
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise KeyError(".".join(map(str, path[:i + 1])))
            node = node[part]
            continue
        if not isinstance(node, dict):
            raise KeyError(".".join(map(str, path[:i + 1])))
        child = node.get(part)
        if not isinstance(child, (dict, list)):
            child = node[part] = {}
        elif isinstance(child, dict):
            child = node[part] = dict(child)
        else:
            child = node[part] = list(child)
        node = child
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise KeyError(".".join(map(str, path)))
    elif not isinstance(node, dict):
        raise KeyError(".".join(map(str, path)))
    node[last] = value


def _point_text(point: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items())


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-") or "x"


def _locate(exc: InputError, point: Mapping[str, Any], instance_file: str, where: tuple[str | int, ...],
            doc: Mapping[str, Any]) -> tuple[str | int, ...]:
    """The key of the sweep file behind a key of a task's instance document (an error's location)."""
    path = exc.path
    for axis in point:
        p = axis_path(axis)
        if path[:len(p)] == p or (path and p[:len(path)] == path and str(p[-1]) in exc.message):
            return ("grid", axis)
    head = path[0] if path else None
    if head in ("hardware", "objective", "options") and head in doc:
        return path
    if head == "workload" and instance_file == "zoo":
        return (*where, *path[1:]) if len(path) > 1 else where
    if head == "workload" and instance_file == "inline":
        return (*where, *path)
    if instance_file not in ("zoo", "inline"):
        return (*where, "instance")
    return (*where, *path)


def load_sweep(name_or_path: str | Path) -> Sweep:
    """Read, validate and expand a sweep file: every task's instance document is built and checked, the methods and
    solve options too, before anything runs; every bad input is an :class:`InputError` naming the file and key."""
    from dlaopt.io.instance import instance_from_dict, load_mapping
    from dlaopt.io.schema import validate_against
    from dlaopt.specs import PROBLEM_SPECS

    path = resolve_sweep(name_or_path)
    file = display_path(path)
    doc = load_mapping(path, what="a sweep (keys name, problem, workloads, hardware, grid, methods, solve)")
    validate_against(_sweep_validator(), doc, file=file)
    problem = doc["problem"]
    if problem not in PROBLEM_SPECS:
        raise InputError(f"unknown problem '{problem}'", file=file, path=("problem",),
                         expected="one of: " + ", ".join(PROBLEM_SPECS))
    methods = tuple(check_methods(problem, doc.get("methods"), file, ("methods",)))
    solve = {"threads": DEFAULT_THREADS, **check_solve(doc.get("solve") or {}, file, ("solve",))}
    grid: dict[str, list[Any]] = {str(k): list(v) for k, v in (doc.get("grid") or {}).items()}
    for axis, values in grid.items():
        if len({json.dumps(v) for v in values}) != len(values):
            raise InputError("a value is listed twice", file=file, path=("grid", axis), expected="distinct values")
        if "." in axis and any(not p for p in axis.split(".")):
            raise InputError(f"'{axis}' is not a dotted path", file=file, path=("grid", axis),
                             expected="a hardware parameter name, 'objective' or a path like options.oversize")
    points = [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]

    bases: list[tuple[str, dict[str, Any], str, tuple[str | int, ...]]] = []
    seen: dict[str, int] = {}
    for i, wdoc in enumerate(doc["workloads"]):
        where: tuple[str | int, ...] = ("workloads", i)
        label = wdoc["label"]
        if label in seen:
            raise InputError(f"label '{label}' is used by workloads[{seen[label]}] as well", file=file,
                             path=(*where, "label"), expected="unique workload labels")
        seen[label] = i
        given = [k for k in ("zoo", "workload", "instance") if k in wdoc]
        if len(given) != 1:
            raise InputError(f"the workload has {' and '.join(given) if given else 'none'} of zoo, workload, "
                             "instance", file=file, path=where, expected="exactly one of zoo, workload, instance")
        if "params" in wdoc and "zoo" not in wdoc:
            raise InputError("'params' belongs to a zoo workload", file=file, path=(*where, "params"),
                             expected="params only beside zoo")
        base: dict[str, Any]
        if "instance" in wdoc:
            inst_path = resolve_instance_file(wdoc["instance"], path)
            if inst_path is None:
                raise InputError(f"instance file '{wdoc['instance']}' not found", file=file,
                                 path=(*where, "instance"),
                                 expected=f"a path relative to {instances_dir()} or to the sweep's folder")
            try:
                base = load_mapping(inst_path, what="an instance (keys problem, workload, hardware, ...)")
            except InputError as exc:
                raise InputError(f"the instance file is invalid: {exc.render()}", file=file,
                                 path=(*where, "instance")) from None
            if base.get("problem") != problem:
                raise InputError(f"the instance is for problem '{base.get('problem')}', the sweep for '{problem}'",
                                 file=file, path=(*where, "instance"), expected=f"a {problem} instance")
            if "hardware" in doc:
                base["hardware"] = doc["hardware"]
            instance_file = str(wdoc["instance"])
        else:
            if "hardware" not in doc:
                raise InputError(f"workload '{label}' needs the sweep's hardware", file=file, path=("hardware",),
                                 expected="{preset, params} or an inline accelerator (or platform)")
            workload = {"zoo": wdoc["zoo"], "params": dict(wdoc.get("params") or {})} if "zoo" in wdoc \
                else wdoc["workload"]
            base = {"problem": problem, "workload": workload, "hardware": doc["hardware"]}
            instance_file = "zoo" if "zoo" in wdoc else "inline"
        if "objective" in doc:
            base["objective"] = doc["objective"]
        if "options" in doc:
            base["options"] = merge_documents(base.get("options") or {}, doc["options"])
        if "override" in wdoc:
            base = merge_documents(base, wdoc["override"])
        bases.append((label, base, instance_file, where))

    tasks: list[SweepTask] = []
    for label, base, instance_file, where in bases:
        for point in points:
            d = json.loads(json.dumps(base))
            for axis, value in point.items():
                try:
                    _set_path(d, axis_path(axis), value)
                except KeyError as exc:
                    raise InputError(f"workload '{label}': the instance has no '{exc.args[0]}' to set", file=file,
                                     path=("grid", axis),
                                     expected="a hardware parameter, 'objective' or a path into the instance") \
                        from None
            name = f"{label} {_point_text(point)}".strip()
            d["name"] = _slug(f"{label}-{'-'.join(f'{k}{v}' for k, v in point.items())}".rstrip("-"))
            try:
                inst = instance_from_dict(d, source=file)
            except InputError as exc:
                at = f" at {_point_text(point)}" if point else ""
                raise InputError(f"workload '{label}'{at}: {exc.message}", file=file,
                                 path=_locate(exc, point, instance_file, where, doc), expected=exc.expected) \
                    from None
            document = json.loads(json.dumps(inst.document))
            key = config_digest({"instance": document, "methods": list(methods), "solve": solve})
            tasks.append(SweepTask(len(tasks), name, label, point, document, instance_file, key))

    report = doc.get("report")
    spad_axis = any(axis_path(a) == ("hardware", "params", "spad_kb") for a in grid)
    if report == "thesis-table" and (problem != "pinning" or not spad_axis):
        raise InputError("the thesis table needs a pinning sweep over the scratchpad size", file=file,
                         path=("report",), expected="problem: pinning and a grid axis spad_kb")
    return Sweep(doc.get("name") or path.stem, str(doc.get("description") or "").strip(), file, problem,
                 tuple(grid), tuple(seen), methods, solve, report, tuple(tasks))


# ================================================================================================ one task
def _facts(prepared: Any) -> dict[str, Any]:
    """Sizes of the prepared instance that reports use (pinning: the reconstructed graph's steps and buffers)."""
    graph = getattr(prepared.data, "graph", None)
    out: dict[str, Any] = {}
    for name in ("steps", "buffers"):
        value = getattr(graph, name, None)
        if value is not None and hasattr(value, "__len__"):
            out[name] = len(value)
    return out


def _failed_records(spec: Mapping[str, Any], message: str, failure: str) -> list[dict[str, Any]]:
    """Status ``error`` records for every method of a task that failed as a whole (``failure``: ``task`` — an
    exception in it, kept; ``worker`` — it never came back, run again on resume)."""
    from dlaopt.harness import Result
    from dlaopt.results import result_record
    from dlaopt.solvers.result import Status

    doc = spec["document"]
    out = []
    for method in spec["methods"]:
        res = Result(doc["problem"], doc.get("name") or spec["name"], method, str(doc.get("objective") or ""),
                     Status.ERROR, message=message)
        rec = result_record(spec["name"], method, res, prepare_time_s=0.0, instance_file=spec["instance_file"],
                            solve=spec["solve"], config=spec["key"])
        rec.update(_task_fields(spec, {}), failure=failure)
        out.append(rec)
    return out


def _task_fields(spec: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    return {"workload": spec["workload"], "point": dict(spec["point"]), "task": spec["index"],
            "run_id": spec["run_id"], "worker": f"{socket.gethostname()}:{os.getpid()}", "facts": dict(facts)}


def run_task(spec: Mapping[str, Any], deadline: Deadline | None = None) -> list[dict[str, Any]]:
    """Run one sweep task (a plain JSON spec from :meth:`SweepTask.spec`) and return its records, one per method.

    Never raises for a failing instance or method: the exception becomes a record with status ``error``. With a
    ``deadline`` (a total time limit, in this process) each method gets at most the time left and a method that
    would start after it is not run (status ``no_solution``); such records carry ``failure: total_time_limit`` and
    are run again on resume."""
    import dataclasses

    from dlaopt import harness
    from dlaopt.bench import restore_sigint, solve_options
    from dlaopt.io.instance import instance_from_dict
    from dlaopt.results import result_record

    try:
        prepared = harness.prepare(instance_from_dict(spec["document"], source=spec.get("source")))
    except Exception as exc:
        text = exc.render() if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        return _failed_records(spec, f"the instance could not be prepared: {text}", "task")
    facts = _facts(prepared)
    options = solve_options(spec["solve"])
    solver = spec["solve"].get("solver")
    records = []
    for method in spec["methods"]:
        opts, cut = options, False
        if deadline is not None and deadline.bounded:
            limit = deadline.limit(options.time_limit)
            cut = limit is not None and (options.time_limit is None or limit < options.time_limit)
            opts = dataclasses.replace(options, time_limit=limit, deadline=deadline.end)
            if deadline.expired:
                rec = _failed_records({**spec, "methods": [method]}, NOT_STARTED_MESSAGE, TOTAL_LIMIT_FAILURE)[0]
                rec["status"] = "no_solution"
                records.append(rec)
                continue
        try:
            res = harness.solve(prepared, method, solver=solver if method == "exact" else None, options=opts)
        except Exception as exc:
            rec = _failed_records({**spec, "methods": [method]}, f"{type(exc).__name__}: {exc}", "task")[0]
        else:
            rec = result_record(spec["name"], method, res, prepare_time_s=prepared.prepare_time_s,
                                instance_file=spec["instance_file"], solve=spec["solve"], config=spec["key"])
            rec.update(_task_fields(spec, facts))
            if cut:
                rec["failure"] = TOTAL_LIMIT_FAILURE
        finally:
            restore_sigint()
        records.append(rec)
    return records


def worker_version() -> str:
    """dlaopt's version on a worker (``Client.run`` checks the cluster's workers run the driver's version)."""
    from dlaopt import __version__

    return __version__


# ================================================================================================ running
@dataclass(frozen=True)
class SweepEvent:
    """``start`` (``done`` tasks already finished, skipped), ``engine`` (the engine is up: ``info`` describes it)
    and ``done`` (a task finished: ``task`` and its ``records``)."""

    kind: Literal["start", "engine", "done"]
    done: int
    total: int
    task: SweepTask | None = None
    records: Sequence[Mapping[str, Any]] = ()
    info: str = ""


SweepProgress = Callable[[SweepEvent], None]


@dataclass
class SweepReport:
    sweep: Sweep
    out_dir: Path
    rows: list[dict[str, Any]]  # one per (task, method) in sweep order, with ratio_to_best
    environment: dict[str, Any]
    engine: dict[str, Any]
    run_id: str
    ran: int  # tasks run by this call
    skipped: int  # tasks found finished in results.jsonl
    complete: bool
    wall_time_s: float
    paths: dict[str, Path] = field(default_factory=dict)
    thesis_table: str | None = None
    total_time_limit: float | None = None
    not_run: tuple[str, ...] = ()  # tasks not run (or not finished) because the total time limit was reached

    @property
    def summary(self) -> str:
        return summary_markdown(self.sweep, self.rows)

    @property
    def markdown(self) -> str:
        return report_markdown(self)

    @property
    def failed(self) -> int:
        return len({r["instance"] for r in self.rows if r.get("failure") not in (None, TOTAL_LIMIT_FAILURE)})


def _finished(task: SweepTask, methods: Sequence[str], previous: Mapping[str, Mapping[str, Any]]) -> bool:
    for m in methods:
        rec = previous.get(record_key(task.name, m))
        if rec is None or rec.get("config") != task.key or rec.get("failure") in ("worker", TOTAL_LIMIT_FAILURE):
            return False
    return True


def run_sweep(
    name_or_path: str | Path | Sweep,
    out_dir: str | Path | None = None,
    *,
    engine: Engine = "dask",
    scheduler: str | None = None,
    workers: int = DEFAULT_WORKERS,
    resume: bool = True,
    progress: SweepProgress | None = None,
    verbose: bool = False,
    total_time_limit: float | None = None,
) -> SweepReport:
    """Run a sweep (a name, a file or a loaded :class:`Sweep`) into ``out_dir`` (default ``results/sweeps/<name>``).

    ``engine='dask'``: on the Dask scheduler at ``scheduler``, else on a new ``LocalCluster`` of ``workers``
    single-threaded worker processes (closed at the end); ``'local'``: every task in this process, in order.
    ``resume``: skip the tasks already finished in ``results.jsonl``; otherwise start afresh. An exception or
    KeyboardInterrupt during the run cancels what is left, closes the cluster (a local cluster's workers are killed at
    once), writes the reports of what is finished (marked incomplete) and is re-raised.

    ``total_time_limit`` (seconds) bounds the whole run: at that point the tasks not finished are cancelled (a local
    cluster's workers killed), the reports list them as not run, and a resume runs them. On the local engine each
    method gets at most the time left; its records are marked ``failure: total_time_limit`` when that cut its limit.
    """
    if engine not in ENGINES:
        raise InputError(f"unknown engine '{engine}'", path=("--engine",), expected="dask or local")
    if scheduler and engine != "dask":
        raise InputError("--scheduler needs the dask engine", path=("--scheduler",), expected="--engine dask")
    sweep = name_or_path if isinstance(name_or_path, Sweep) else load_sweep(name_or_path)
    out = Path(out_dir) if out_dir is not None else DEFAULT_OUT_ROOT / sweep.name
    jsonl, previous = open_results(out, resume=resume)
    records: dict[str, dict[str, Any]] = {}
    todo: list[SweepTask] = []
    for task in sweep.tasks:
        if _finished(task, sweep.methods, previous):
            for m in sweep.methods:
                records[record_key(task.name, m)] = dict(previous[record_key(task.name, m)])
        else:
            todo.append(task)
    skipped = len(sweep.tasks) - len(todo)
    run_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    emit = progress or (lambda _ev: None)
    emit(SweepEvent("start", skipped, len(sweep.tasks)))
    t0 = time.perf_counter()
    engine_info: dict[str, Any] = {"engine": engine}
    ran = 0
    complete = False
    deadline = Deadline(total_time_limit)
    not_run: list[str] = []

    def finish(task: SweepTask, recs: Sequence[dict[str, Any]]) -> None:
        nonlocal ran
        append_records(jsonl, recs)
        for r in recs:
            records[record_key(task.name, r["method"])] = r
        ran += 1
        emit(SweepEvent("done", skipped + ran, len(sweep.tasks), task, recs))

    try:
        if todo and engine == "local":
            engine_info.update(workers=1, threads_per_worker=1)
            emit(SweepEvent("engine", skipped, len(sweep.tasks), info="in this process"))
            for task in todo:
                if deadline.expired:
                    not_run.append(task.name)
                    continue
                recs = run_task(task.spec(sweep, run_id), deadline)
                if any(r.get("failure") == TOTAL_LIMIT_FAILURE for r in recs):
                    not_run.append(task.name)
                finish(task, recs)
        elif todo:
            with _dask_client(scheduler, workers, verbose) as (client, info, stop_workers):
                engine_info.update(info)
                emit(SweepEvent("engine", skipped, len(sweep.tasks), info=info["description"]))
                not_run += _run_on_dask(client, sweep, todo, run_id, finish, deadline, stop_workers)
                if not_run:
                    stop_workers()
        complete = not not_run
    finally:
        rows = _rows(sweep, records)
        report = SweepReport(sweep, out, rows, environment(sweep.solve.get("threads")), engine_info, run_id, ran,
                             skipped, complete, time.perf_counter() - t0, total_time_limit=total_time_limit,
                             not_run=tuple(not_run))
        report.paths = write_reports(report)
    return report


def _run_on_dask(client: Any, sweep: Sweep, todo: Sequence[SweepTask], run_id: str,
                 finish: Callable[[SweepTask, Sequence[dict[str, Any]]], None], deadline: Deadline,
                 stop_workers: Callable[[], None]) -> list[str]:
    """Submit the tasks and record each as it finishes; at the deadline cancel the rest and return their names.
    Interrupted, it kills a local cluster's workers first (``stop_workers``), then cancels the tasks."""
    from distributed import wait

    specs = {t.key: t.spec(sweep, run_id) for t in todo}
    futures = {}
    for task in todo:
        fut = client.submit(run_task, specs[task.key], key=f"dlaopt-sweep-{task.key}-{run_id}", pure=False)
        futures[fut.key] = (fut, task)
    pending = {f for f, _ in futures.values()}
    try:
        while pending:
            left = deadline.left()
            try:
                done, _ = wait(list(pending), timeout=None if math.isinf(left) else left,
                               return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            if not done:
                break
            for fut in sorted(done, key=lambda f: futures[f.key][1].index):
                pending.discard(fut)
                task = futures[fut.key][1]
                try:
                    recs = fut.result()
                except Exception as exc:  # the worker died (KilledWorker), lost the task, or could not run it
                    recs = _failed_records(specs[task.key], f"the task did not finish on the cluster: "
                                                            f"{type(exc).__name__}: {exc}", "worker")
                finish(task, recs)
                fut.release()
    except BaseException:
        stop_workers()
        with contextlib.suppress(Exception):
            client.cancel([f for f, _ in futures.values()], force=True)
        raise
    if pending:
        with contextlib.suppress(Exception):
            client.cancel(list(pending), force=True)
    return [futures[f.key][1].name for f in sorted(pending, key=lambda f: futures[f.key][1].index)]


@contextlib.contextmanager
def _dask_client(scheduler: str | None, workers: int, verbose: bool
                 ) -> Iterator[tuple[Any, dict[str, Any], Callable[[], None]]]:
    """A Dask client: connected to ``scheduler``, or to a new LocalCluster of ``workers`` processes; closed (with the
    cluster) on exit, whatever happens. The third item kills a local cluster's worker processes (running tasks
    included; nothing for an existing cluster): done on any exception, so an interrupted sweep is gone at once.

    The local workers preload :mod:`dlaopt.solvers.processes`: each dies with this process, even when it is killed
    by SIGKILL while a worker is deep in a solver (Dask's own watch of its parent needs the worker's GIL).

    Logging, unless ``verbose``: distributed's messages below WARNING are silenced in this process, and the local
    worker processes log nothing (what they would say is about their own shutdown — a task's exception comes back
    to this process and is recorded; the nanny here reports a worker's memory trouble or death).

    The local workers ignore SIGINT (set by the preload): Ctrl-C in a terminal reaches the whole process group, and
    this process — not every worker with its own traceback — handles it by closing the cluster. This process keeps
    its own handler while the cluster starts, so a Ctrl-C (or SIGINT) then is not lost."""
    import dask
    from distributed import Client, LocalCluster

    loggers = [logging.getLogger(n) for n in ("distributed", "bokeh", "tornado")]
    levels = [lg.level for lg in loggers]
    if not verbose:
        for lg in loggers:
            lg.setLevel(logging.WARNING)
    cluster = None
    client = None
    ok = False
    stopped = False

    def stop_workers() -> None:
        nonlocal stopped
        if cluster is None:
            return
        stopped = True
        for nanny in list(getattr(cluster, "workers", {}).values()):
            pid = getattr(nanny, "pid", None)
            if pid:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
    # a HiGHS solve holds a worker's event loop for seconds: that is expected, not worth a warning
    settings = {"distributed.admin.tick.limit": "1h", "distributed.scheduler.allowed-failures": 1}
    try:
        with dask.config.set(settings):
            if scheduler:
                client, info = _connect(scheduler)
            else:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, preload=[WORKER_PRELOAD],
                                       silence_logs=logging.INFO if verbose else logging.CRITICAL)
                client = Client(cluster)
                info = {"scheduler": None, "workers": workers, "threads_per_worker": 1,
                        "description": f"Dask LocalCluster, {workers} worker processes x 1 thread "
                                       f"({client.scheduler.address})"}
            yield client, info, stop_workers
            ok = True
    finally:
        if not ok:
            stop_workers()
        if (not ok or stopped) and not verbose:  # closing busy workers early is expected: no warnings about it
            for lg in loggers:
                lg.setLevel(logging.CRITICAL)
        timeout = STOP_CLOSE_TIMEOUT_S if stopped else CLOSE_TIMEOUT_S
        if client is not None:
            with contextlib.suppress(Exception):
                client.close(timeout=timeout)
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=timeout)
        for lg, lvl in zip(loggers, levels, strict=True):
            lg.setLevel(lvl)


def _connect(scheduler: str) -> tuple[Any, dict[str, Any]]:
    from distributed import Client

    try:
        client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S:g}s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot connect to the Dask scheduler: {exc}", path=("--scheduler",),
                         expected="the address of a running scheduler, e.g. tcp://HOST:8786") from None
    try:
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            raise InputError(f"the scheduler at {scheduler} has no worker (waited {WORKER_WAIT_S:g} s)",
                             path=("--scheduler",), expected=f"workers started with `dask worker {scheduler}`") \
                from None
        _check_versions(client, scheduler)
        n = len(client.scheduler_info().get("workers", {}))
    except BaseException:
        with contextlib.suppress(Exception):
            client.close()
        raise
    return client, {"scheduler": scheduler, "workers": n, "description": f"Dask scheduler {scheduler} ({n} workers)"}


def _check_versions(client: Any, scheduler: str) -> None:
    from dlaopt import __version__

    try:
        versions = client.run(worker_version)
    except Exception as exc:
        raise InputError(f"the workers cannot run dlaopt: {type(exc).__name__}: {exc}", path=("--scheduler",),
                         expected=f"dlaopt {__version__} installed in every worker's environment") from None
    wrong = {w: v for w, v in versions.items() if v != __version__}
    if wrong:
        listed = ", ".join(f"{w} has {v}" for w, v in sorted(wrong.items()))
        raise InputError(f"workers of {scheduler} run another dlaopt version ({listed})", path=("--scheduler",),
                         expected=f"dlaopt {__version__} on every worker")


def _rows(sweep: Sweep, records: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    keys = (record_key(task.name, m) for task in sweep.tasks for m in sweep.methods)
    return with_ratios([dict(records[k]) for k in keys if k in records])


# ================================================================================================ reports
def _by_task(sweep: Sweep, rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Mapping[str, Any]]]:
    out: dict[str, dict[str, Mapping[str, Any]]] = {t.name: {} for t in sweep.tasks}
    for r in rows:
        out.setdefault(r["instance"], {})[r["method"]] = r
    return out


def summary_markdown(sweep: Sweep, rows: Sequence[Mapping[str, Any]]) -> str:
    """Per workload and grid point, every method's objective (ratio to the best verified objective of the row; the
    status when it has no verified objective) and how many methods were verified. No times: two runs with the same
    results give the same table."""
    by_task = _by_task(sweep, rows)
    body = []
    for t in sweep.tasks:
        recs = by_task.get(t.name, {})
        cells = [t.workload, *(str(t.point[a]) for a in sweep.axes)]
        for m in sweep.methods:
            r = recs.get(m)
            if r is None:
                cells.append("(not run)")
            elif r.get("verified") and r.get("objective") is not None:
                cells.append(f"{fmt_number(r['objective'])} ({fmt_ratio(r.get('ratio_to_best'))})")
            else:
                cells.append(str(r.get("status")))
        cells.append(f"{sum(1 for r in recs.values() if r.get('verified'))}/{len(sweep.methods)}"
                     if recs else "-")
        body.append(cells)
    header = ["workload", *sweep.axes, *sweep.methods, "verified"]
    align = ["l", *(["r"] * len(sweep.axes)), *(["r"] * len(sweep.methods)), "r"]
    return md_table(header, body, align)


def pairs_markdown(sweep: Sweep, rows: Sequence[Mapping[str, Any]]) -> str:
    header = ["workload", *sweep.axes, "method", "status", "objective", "bound", "gap", "time [s]", "ratio to best",
              "verified", "message"]
    body = [[r.get("workload", ""), *(str((r.get("point") or {}).get(a, "")) for a in sweep.axes), r["method"],
             r["status"], fmt_number(r.get("objective")), fmt_number(r.get("bound")), fmt_gap(r.get("gap")),
             f"{float(r.get('time_s') or 0.0):.2f}", fmt_ratio(r.get("ratio_to_best")),
             "yes" if r.get("verified") else "no", _short(str(r.get("message") or ""), 80)] for r in rows]
    return md_table(header, body, ["l", *(["r"] * len(sweep.axes)), "l", "l", "r", "r", "r", "r", "r", "l", "l"])


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _solve_text(solve: Mapping[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in solve.items() if v is not None and k != "extra"]
    if solve.get("extra"):
        parts.append(f"extra {json.dumps(solve['extra'], sort_keys=True)}")
    return ", ".join(parts) if parts else "defaults"


def report_markdown(report: SweepReport) -> str:
    sweep, rows = report.sweep, report.rows
    eng = report.engine
    engine_text = ("run in one process" if eng.get("engine") == "local" else
                   f"run on Dask ({eng['description']})" if "description" in eng else "run")
    lines = [f"# Sweep `{sweep.name}`", ""]
    if sweep.description:
        lines += [sweep.description, ""]
    n_points = len(sweep.tasks) // max(1, len(sweep.workloads))
    lines += [f"Sweep file `{sweep.file}`: {len(sweep.workloads)} workloads × {n_points} grid points "
              f"({', '.join(sweep.axes) or 'no grid'}) = "
              f"{len(sweep.tasks)} tasks × {len(sweep.methods)} methods; solve options: {_solve_text(sweep.solve)}. "
              f"This run: {report.ran} tasks {engine_text}, {report.skipped} found finished; "
              f"{seconds_text(report.wall_time_s)} wall; {seconds_text(total_seconds(rows))} of solving in all. "
              "Objectives are minimised; the ratio is to the best verified objective of the row.", "",
              environment_markdown(report.environment), ""]
    if report.not_run:
        lines += [f"**Stopped by the total time limit** ({fmt_number(report.total_time_limit)} s): "
                  f"{len(report.not_run)} tasks not run or not finished ({_short(', '.join(report.not_run), 200)}); "
                  "run `dlaopt sweep` again to run them.", ""]
    elif not report.complete:
        done = len({r['instance'] for r in rows})
        lines += [f"**Incomplete**: {done} of {len(sweep.tasks)} tasks finished; run `dlaopt sweep` again to "
                  "resume.", ""]
    lines += ["## Summary", "", summary_markdown(sweep, rows), ""]
    if report.thesis_table is not None:
        lines += ["## Thesis table (seed 000, Table 7.1)", "", report.thesis_table]
    lines += ["## Every (instance, method) pair", "", pairs_markdown(sweep, rows), ""]
    return "\n".join(lines)


def _csv_columns(sweep: Sweep) -> tuple[list[str], dict[str, str]]:
    taken = {"workload", *CSV_COLUMNS, "run_id", "worker", "failure"}
    names = {a: (f"grid.{a}" if a in taken else a) for a in sweep.axes}
    return ["workload", *names.values(), *CSV_COLUMNS, "run_id", "worker", "failure"], names


def thesis_rows_of(sweep: Sweep, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the thesis table (:func:`dlaopt.experiments.pinning.thesis_rows`) from a sweep's records, per
    task in sweep order: the network is the workload label, the size the spad_kb axis."""
    from dlaopt.experiments.pinning import thesis_rows

    axis = next(a for a in sweep.axes if axis_path(a) == ("hardware", "params", "spad_kb"))
    by_task = _by_task(sweep, rows)
    out: list[dict[str, Any]] = []
    for t in sweep.tasks:
        recs = [by_task[t.name][m] for m in sweep.methods if m in by_task.get(t.name, {})]
        if recs:
            facts = next((r.get("facts") for r in recs if r.get("facts")), None) or {}
            out += thesis_rows(t.workload, t.point[axis], recs, facts.get("steps"), facts.get("buffers"))
    return out


def write_reports(report: SweepReport) -> dict[str, Path]:
    """``results.csv``, ``results.json``, ``results.md`` and ``summary.png`` (and for a complete sweep with ``report:
    thesis-table`` the ``thesis_sweep.*`` files) in the report's folder."""
    sweep, out = report.sweep, report.out_dir
    paths = {"jsonl": out / RESULTS_JSONL, "csv": out / RESULTS_CSV, "json": out / RESULTS_JSON,
             "md": out / RESULTS_MD}
    if sweep.report == "thesis-table" and report.complete:
        from dlaopt.experiments.pinning import write_thesis_report

        oversize = str(next((t.document.get("options", {}).get("oversize") for t in sweep.tasks), "tile"))
        thesis = write_thesis_report(thesis_rows_of(sweep, report.rows), out, oversize)
        report.thesis_table = thesis.table_markdown
        paths.update(thesis_csv=thesis.csv_path, thesis_md=thesis.table_path)
        if thesis.plot_path is not None:
            paths["thesis_png"] = thesis.plot_path
    columns, names = _csv_columns(sweep)
    flat = [{**r, **{names[a]: (r.get("point") or {}).get(a) for a in sweep.axes}} for r in report.rows]
    paths["csv"].write_text(csv_text(flat, columns), encoding="utf-8")
    doc = {"sweep": sweep.name, "description": sweep.description, "file": sweep.file, "complete": report.complete,
           "run_id": report.run_id, "ran": report.ran, "skipped": report.skipped,
           "total_time_limit": report.total_time_limit, "not_run": list(report.not_run),
           "wall_time_s": report.wall_time_s, "engine": {k: v for k, v in report.engine.items()},
           "environment": report.environment, "axes": list(sweep.axes), "methods": list(sweep.methods),
           "solve": dict(sweep.solve), "tasks": len(sweep.tasks), "rows": report.rows}
    paths["json"].write_text(json.dumps(json_safe(doc), indent=1, allow_nan=False, default=str) + "\n",
                             encoding="utf-8")
    paths["md"].write_text(report.markdown, encoding="utf-8")
    png = plot_summary(sweep, report.rows, out / SUMMARY_PNG)
    if png is not None:
        paths["png"] = png
    return paths


def plot_summary(sweep: Sweep, rows: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """Each method's ratio to the best verified objective against the first grid axis, one panel per workload (one
    line per method and value of the other axes); without a grid, one panel over the workloads."""
    ok = [r for r in rows if r.get("ratio_to_best") is not None and math.isfinite(float(r["ratio_to_best"]))]
    if not ok:
        return None
    from dlaopt.plots.common import colour, new_figure

    panels = list(sweep.workloads) if sweep.axes else [sweep.name]
    ncols = min(4, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = new_figure(4.2 * ncols, 3.2 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    x_axis = sweep.axes[0] if sweep.axes else None
    xs_all = [t.point[x_axis] for t in sweep.tasks] if x_axis else list(sweep.workloads)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs_all)
    cats = list(dict.fromkeys(xs_all))
    log_x = numeric and min(xs_all) > 0 and max(xs_all) / min(xs_all) >= 8
    handles: dict[str, Any] = {}
    for k, panel in enumerate(panels):
        ax = axes[k // ncols][k % ncols]
        mine = [r for r in ok if not sweep.axes or r.get("workload") == panel]
        series: dict[str, list[tuple[Any, float]]] = {}
        for r in mine:
            point = r.get("point") or {}
            rest = " ".join(f"{a}={point.get(a)}" for a in sweep.axes[1:])
            label = f"{r['method']} {rest}".strip()
            x = point.get(x_axis) if x_axis else r.get("workload")
            series.setdefault(label, []).append((x, float(r["ratio_to_best"])))
        for j, (label, pts) in enumerate(series.items()):
            m = label.split(" ")[0]
            c = colour(list(sweep.methods).index(m) if m in sweep.methods else j)
            pts.sort(key=lambda p: p[0] if numeric else cats.index(p[0]))
            px = [p[0] if numeric else cats.index(p[0]) for p in pts]
            (line,) = ax.plot(px, [p[1] for p in pts], marker="o", ms=3, lw=1.2, color=c, label=label,
                              linestyle="-" if label == m else "--")
            handles.setdefault(label, line)
        if log_x:
            ax.set_xscale("log", base=2)
        if numeric:
            ticks = sorted(set(xs_all))
            ax.set_xticks(ticks, [fmt_number(v) for v in ticks])
            ax.minorticks_off()
        else:
            ax.set_xticks(range(len(cats)), [str(c) for c in cats], rotation=30, ha="right")
        ax.set_title(panel if sweep.axes else "every workload", fontsize=10)
        ax.set_xlabel(x_axis or "workload")
        ax.set_ylabel("ratio to best")
        ax.grid(True, alpha=0.3)
    for k in range(len(panels), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=min(6, len(handles)),
               fontsize=8)
    fig.suptitle(f"Sweep {sweep.name}: each method's objective over the best verified one (1 = best)", fontsize=11)
    fig.savefig(path)
    return path


def main_summary(report: SweepReport) -> str:
    """One line for logs: what ran, what was skipped, where the files are."""
    failed = f", {report.failed} failed" if report.failed else ""
    if report.not_run:
        failed += f", {len(report.not_run)} not run (total time limit)"
    return (f"sweep {report.sweep.name}: {report.ran} tasks run, {report.skipped} skipped (already finished){failed};"
            f" {len({r['instance'] for r in report.rows})} of {len(report.sweep.tasks)} tasks in "
            f"{seconds_text(report.wall_time_s)}; results in {report.out_dir}")


__all__ = [
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
