"""Benchmark suites: named lists of (instance, methods, solve options) run, verified and tabulated (``dlaopt bench``).

A suite is a YAML (or JSON) file, ``instances/suites/<name>.yaml`` for a named one::

    name: pinning                         # default: the file's stem
    description: The shipped pinning instances, every method.
    methods: [naive, greedy, exact]       # default of every entry (default: all of the problem's methods)
    solve: {time_limit: 20, seed: 0, threads: 2}   # default solve options of every entry
    entries:
      - instance: pinning/lenet5-smaug-32k.yaml     # relative to the instances/ folder (or to the suite file)
      - instance: pinning/resnet50-smaug-3x256k.yaml
        name: resnet50                              # the row label (default: the instance's name)
        methods: [greedy, exact]
        solve: {time_limit: 60}                     # merged over the suite's solve options
      - instance: {problem: pinning, workload: ..., hardware: ...}   # an inline instance document

``solve`` keys: ``time_limit`` (seconds, every method: the heuristics with a budget — GA, MAGMA — honour it too),
``seed``, ``threads``, ``deterministic``, ``gap`` (relative MIP gap), ``node_limit``, ``solver`` (the backend of the
``exact`` method: ``highs``, ``cpsat``, ``pyomo:NAME``) and ``extra`` (backend-specific, e.g.
``{deterministic_time: 5}`` for CP-SAT).

:func:`run_suite` runs every (entry, method) pair with the solve-and-verify harness (the methods of one entry share
one prepared instance, so the heuristics run once and warm-start the exact methods, as in ``dlaopt compare``),
appends one JSON line per finished pair to ``results.jsonl`` — a run that is interrupted resumes where it stopped:
pairs already there with the same configuration (instance document, method, solve options) are skipped — and then
writes ``results.csv``, ``results.json`` and ``results.md`` (the environment and one row per pair: instance, method,
status, objective, bound, gap, time, ratio to the best verified objective of that instance — infinite, and null in
the JSON, when that best is 0 and the row's objective is not — verified).
:func:`headline_markdown` is the compact table the README shows, and :func:`update_readme` replaces the block
between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` with it.

The suite-file pieces sweeps (:mod:`dlaopt.sweep`) share are public: the ``solve`` and ``methods`` schemas and
checks (:data:`SOLVE_SCHEMA`, :func:`check_solve`, :func:`check_methods`, :func:`solve_options`) and
:func:`config_digest`. The record format, its file and the tables are :mod:`dlaopt.results`.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dlaopt.errors import InputError
from dlaopt.results import (
    RECORD_VERSION,
    RESULTS_CSV,
    RESULTS_JSON,
    RESULTS_JSONL,
    RESULTS_MD,
    TABLE_COLUMNS,
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
    ram_text,
    ratio_to_best,
    read_records,
    record_key,
    result_record,
    results_table_markdown,
    seconds_text,
    total_seconds,
    with_ratios,
)

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

    from dlaopt.harness import Prepared, Result
    from dlaopt.io.instance import Instance
    from dlaopt.solvers.result import SolveOptions

SUITE_SUFFIXES = (".yaml", ".yml", ".json")
DEFAULT_OUT_ROOT = Path("results") / "bench"
MARKER_START = "<!-- bench:{name} -->"
MARKER_END = "<!-- /bench:{name} -->"
SOLVE_KEYS: tuple[str, ...] = ("time_limit", "seed", "threads", "deterministic", "gap", "node_limit", "solver",
                               "extra")


# ================================================================================================ suite files
SOLVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "time_limit": {"type": ["number", "null"], "exclusiveMinimum": 0,
                       "description": "Seconds per (instance, method); null: none."},
        "seed": {"type": "integer", "description": "Random seed of solvers and randomized heuristics."},
        "threads": {"type": ["integer", "null"], "minimum": 1, "description": "Solver threads; null: the solver's."},
        "deterministic": {"type": "boolean", "description": "Reproducible parallel search where the solver has it."},
        "gap": {"type": "number", "minimum": 0, "description": "Relative MIP gap at which exact solvers stop."},
        "node_limit": {"type": ["integer", "null"], "minimum": 1, "description": "Branch-and-bound node limit."},
        "solver": {"type": ["string", "null"], "minLength": 1,
                   "description": "Backend of the exact method: highs, cpsat or pyomo:NAME."},
        "extra": {"type": "object", "description": "Backend-specific options (SolveOptions.extra)."},
    },
}
METHODS_SCHEMA: dict[str, Any] = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}

SUITE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "dlaopt benchmark suite",
    "type": "object",
    "additionalProperties": False,
    "required": ["entries"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "methods": METHODS_SCHEMA,
        "solve": SOLVE_SCHEMA,
        "entries": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["instance"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "instance": {"type": ["string", "object"], "minLength": 1,
                                 "description": "An instance file (relative to instances/) or an inline document."},
                    "override": {"type": "object",
                                 "description": "Merged (recursively) into the instance document, e.g. "
                                                "{objective: energy} or {hardware: {params: {bank_kb: 16}}}."},
                    "methods": METHODS_SCHEMA,
                    "solve": SOLVE_SCHEMA,
                },
            },
        },
    },
}


def schema_validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` (itself checked first)."""
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@cache
def _suite_validator() -> Draft202012Validator:
    return schema_validator(SUITE_SCHEMA)


@dataclass(frozen=True)
class SuiteEntry:
    """One instance of a suite, with the methods to run on it and their solve options."""

    name: str
    instance: Instance
    instance_file: str  # as written in the suite ("inline" for an inline document)
    methods: tuple[str, ...]
    solve: Mapping[str, Any]  # the merged solve options (keys of SOLVE_KEYS)

    def options(self) -> SolveOptions:
        return solve_options(self.solve)

    def config_key(self, method: str) -> str:
        """A digest of everything that determines the result of ``method`` here (resume skips only on a match)."""
        return config_digest({"instance": self.instance.document, "method": method, "solve": dict(self.solve)})


def solve_options(solve: Mapping[str, Any]) -> SolveOptions:
    """The :class:`SolveOptions` of a (checked) ``solve`` mapping of a suite or sweep file."""
    from dlaopt.solvers.result import SolveOptions

    opts = SolveOptions(time_limit=solve.get("time_limit"), seed=int(solve.get("seed", 0)),
                        threads=solve.get("threads"), deterministic=bool(solve.get("deterministic")),
                        node_limit=solve.get("node_limit"), extra=dict(solve.get("extra") or {}))
    if solve.get("gap") is not None:
        opts.mip_rel_gap = float(solve["gap"])
    return opts


def config_digest(doc: Mapping[str, Any]) -> str:
    """A short digest of a configuration document (with the record version), the key that resuming matches."""
    text = json.dumps({**doc, "version": RECORD_VERSION}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    file: str
    entries: tuple[SuiteEntry, ...]
    solve: Mapping[str, Any]  # the suite-level defaults

    @property
    def pairs(self) -> list[tuple[SuiteEntry, str]]:
        return [(e, m) for e in self.entries for m in e.methods]


def instances_dir() -> Path:
    """The ``instances/`` folder: ``./instances`` when it exists, else the one beside the dlaopt package (a source
    checkout or an editable install)."""
    here = Path.cwd() / "instances"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parent.parent / "instances"


def suites_dir() -> Path:
    return instances_dir() / "suites"


def available_files(folder: Path) -> list[str]:
    """The names (stems) of the YAML / JSON files in ``folder``."""
    return sorted(p.stem for p in folder.iterdir() if p.suffix in SUITE_SUFFIXES) if folder.is_dir() else []


def resolve_named_file(name_or_path: str | Path, folder: Path, kind: str) -> Path:
    """A path to a file, or the name of one in ``folder`` (``<folder>/<name>.yaml``); else an InputError listing
    the ``kind`` files there."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    text = str(name_or_path)
    if p.suffix not in SUITE_SUFFIXES and "/" not in text and os.sep not in text:
        for suffix in SUITE_SUFFIXES:
            cand = folder / f"{text}{suffix}"
            if cand.is_file():
                return cand
    names = available_files(folder)
    raise InputError(f"no {kind} '{text}'", file=text if p.suffix in SUITE_SUFFIXES else None,
                     expected=f"a {kind} file, or one of the {kind}s in "
                              f"{folder}: {', '.join(names) if names else '(none)'}")


def available_suites() -> list[str]:
    return available_files(suites_dir())


def resolve_suite(name_or_path: str | Path) -> Path:
    """A suite name (``instances/suites/<name>.yaml``) or a path to a suite file."""
    return resolve_named_file(name_or_path, suites_dir(), "suite")


def load_suite(name_or_path: str | Path) -> Suite:
    """Read, validate and load a suite: every instance is loaded and every method checked before anything runs;
    every bad input is an :class:`InputError` naming the suite file and the key."""
    from dlaopt.io.instance import instance_from_dict, load_instance, load_mapping
    from dlaopt.io.schema import validate_against

    path = resolve_suite(name_or_path)
    file = display_path(path)
    doc = load_mapping(path, what="a benchmark suite (keys name, description, methods, solve, entries)")
    validate_against(_suite_validator(), doc, file=file)
    defaults = check_solve(doc.get("solve") or {}, file, ("solve",))
    entries: list[SuiteEntry] = []
    seen: dict[str, int] = {}
    for i, edoc in enumerate(doc["entries"]):
        where: tuple[str | int, ...] = ("entries", i)
        spec = edoc["instance"]
        override = edoc.get("override")
        inst: Instance
        if isinstance(spec, str):
            inst_path = resolve_instance_file(spec, path)
            if inst_path is None:
                raise InputError(f"instance file '{spec}' not found", file=file, path=(*where, "instance"),
                                 expected=f"a path relative to {instances_dir()} or to the suite's folder")
            try:
                if override:
                    base = load_mapping(inst_path, what="an instance (keys problem, workload, hardware, ...)")
                    inst = instance_from_dict(merge_documents(base, override), source=str(inst_path))
                else:
                    inst = load_instance(inst_path)
            except InputError as exc:
                what = "with the entry's override " if override else ""
                raise InputError(f"the instance {what}is invalid: {exc.render()}", file=file,
                                 path=(*where, "override" if override else "instance")) from None
            instance_file = spec
        else:
            try:
                inst = instance_from_dict(merge_documents(spec, override or {}), source=file)
            except InputError as exc:
                raise exc.located(file=file, prefix=(*where, "instance")) from None
            instance_file = "inline"
        name = edoc.get("name") or inst.name or f"entry{i}"
        if name in seen:
            raise InputError(f"entry name '{name}' is used by entries[{seen[name]}] as well", file=file,
                             path=(*where, "name"), expected="unique entry names (give the entry a 'name')")
        seen[name] = i
        methods_doc = edoc.get("methods")
        mpath: tuple[str | int, ...] = (*where, "methods") if methods_doc else ("methods",)
        methods = check_methods(inst.problem, methods_doc or doc.get("methods"), file, mpath)
        solve = {**defaults, **check_solve(edoc.get("solve") or {}, file, (*where, "solve"))}
        entries.append(SuiteEntry(name, inst, instance_file, tuple(methods), solve))
    return Suite(doc.get("name") or path.stem, str(doc.get("description") or "").strip(), display_path(path),
                 tuple(entries), defaults)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it (tables name files as users typed them)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def merge_documents(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` merged in: mappings recursively, anything else replaced."""
    out = dict(base)
    for k, v in override.items():
        out[k] = merge_documents(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def check_methods(problem_name: str, methods: Sequence[str] | None, file: str,
                  where: tuple[str | int, ...]) -> list[str]:
    """``methods`` checked against the problem's (default: all of them, in the problem's order)."""
    from dlaopt.formulations import get_problem

    known = [m.name for m in get_problem(problem_name).methods]
    chosen = list(methods or known)
    for j, m in enumerate(chosen):
        if m not in known:
            raise InputError(f"unknown method '{m}' for problem '{problem_name}'", file=file, path=(*where, j),
                             expected="one of: " + ", ".join(known))
    if len(set(chosen)) != len(chosen):
        raise InputError("a method is listed twice", file=file, path=where, expected="distinct method names")
    return chosen


def check_solve(solve: Mapping[str, Any], file: str, where: tuple[str | int, ...]) -> dict[str, Any]:
    out = dict(solve)
    if out.get("solver") is not None:
        from dlaopt.solvers.backends import SolverSpecError, parse_solver

        try:
            kind, name = parse_solver(str(out["solver"]))
        except SolverSpecError as exc:
            raise InputError(str(exc), file=file, path=(*where, "solver"),
                             expected="highs, cpsat or pyomo:NAME") from None
        out["solver"] = kind if name is None else f"{kind}:{name}"
    return out


def resolve_instance_file(spec: str, suite_path: Path) -> Path | None:
    p = Path(spec)
    if p.is_absolute():
        return p if p.is_file() else None
    for base in (instances_dir(), suite_path.parent):
        cand = base / p
        if cand.is_file():
            return cand
    return None


# ================================================================================================ environment


# ================================================================================================ running
@dataclass(frozen=True)
class BenchEvent:
    """A progress event: ``start`` (before the first pair; ``done`` pairs were already finished and are skipped),
    ``run`` (a pair starts) and ``done`` (a pair finished: ``record`` is its JSON line)."""

    kind: Literal["start", "run", "done"]
    done: int
    total: int
    entry: str | None = None
    method: str | None = None
    record: Mapping[str, Any] | None = None


ProgressFn = Callable[[BenchEvent], None]


@dataclass
class BenchReport:
    suite: Suite
    out_dir: Path
    rows: list[dict[str, Any]]  # one per (entry, method) in suite order, with ratio_to_best
    environment: dict[str, Any]
    ran: int  # pairs run by this call
    skipped: int  # pairs found finished in results.jsonl
    complete: bool
    paths: dict[str, Path] = field(default_factory=dict)
    total_time_limit: float | None = None
    not_run: tuple[str, ...] = ()  # "instance · method" of the pairs the total time limit left out or cut short

    @property
    def markdown(self) -> str:
        return report_markdown(self.suite, self.rows, self.environment, complete=self.complete,
                               total_time_limit=self.total_time_limit, not_run=self.not_run)

    @property
    def headline(self) -> str:
        return headline_markdown(self.suite, self.rows, self.environment)


def _record(entry: SuiteEntry, method: str, res: Result, prepare_time_s: float) -> dict[str, Any]:
    return result_record(entry.name, method, res, prepare_time_s=prepare_time_s, instance_file=entry.instance_file,
                         solve=entry.solve, config=entry.config_key(method))


def run_suite(
    name_or_path: str | Path | Suite,
    out_dir: str | Path | None = None,
    *,
    resume: bool = True,
    progress: ProgressFn | None = None,
    total_time_limit: float | None = None,
) -> BenchReport:
    """Run a suite (a name, a file or a loaded :class:`Suite`; see the module docstring) into ``out_dir`` (default
    ``results/bench/<suite>``).

    ``resume``: skip the pairs already in ``results.jsonl`` with the same configuration; otherwise start afresh.
    ``progress`` receives a :class:`BenchEvent` before the run, before and after every pair. An exception (or
    KeyboardInterrupt) during the run still writes the reports of what is finished, marked incomplete, and is
    re-raised; the next run resumes from there.

    ``total_time_limit`` (seconds) bounds the whole run: each pair gets at most the time left, and once it is spent
    the remaining pairs are not run. The report lists them (and the pairs whose limit it cut, recorded with
    ``failure: total_time_limit``) as not run; a resume runs them.
    """
    import dataclasses

    from dlaopt import harness
    from dlaopt.solvers.processes import Deadline

    suite = name_or_path if isinstance(name_or_path, Suite) else load_suite(name_or_path)
    out = Path(out_dir) if out_dir is not None else DEFAULT_OUT_ROOT / suite.name
    jsonl, previous = open_results(out, resume=resume)
    pairs = suite.pairs
    records: dict[str, dict[str, Any]] = {}
    todo: list[tuple[SuiteEntry, str]] = []
    for entry, method in pairs:
        rec = previous.get(record_key(entry.name, method))
        if rec is not None and rec.get("config") == entry.config_key(method) and not rec.get("failure"):
            records[record_key(entry.name, method)] = rec
        else:
            todo.append((entry, method))
    skipped = len(records)
    env = environment(suite.solve.get("threads"))
    total = len(pairs)
    emit = progress or (lambda _ev: None)
    emit(BenchEvent("start", skipped, total))
    remaining = {e.name: sum(1 for e2, _ in todo if e2.name == e.name) for e in suite.entries}
    prepared: dict[str, tuple[Prepared, float]] = {}
    ran = 0
    complete = False
    deadline = Deadline(total_time_limit)
    not_run: list[str] = []
    try:
        for entry, method in todo:
            if deadline.expired:
                not_run.append(f"{entry.name} · {method}")
                continue
            emit(BenchEvent("run", len(records), total, entry.name, method))
            if entry.name not in prepared:
                p = _prepare(entry, suite.file)
                prepared[entry.name] = (p, p.prepare_time_s)
            p, prep_s = prepared[entry.name]
            solver = entry.solve.get("solver") if method == "exact" else None  # others keep their own, as compare
            options = entry.options()
            limit = deadline.limit(options.time_limit)
            cut = limit is not None and (options.time_limit is None or limit < options.time_limit)
            if deadline.bounded:
                options = dataclasses.replace(options, time_limit=limit, deadline=deadline.end)
            res = harness.solve(p, method, solver=solver, options=options)
            restore_sigint()
            rec = _record(entry, method, res, prep_s)
            if cut:
                rec["failure"] = "total_time_limit"
                not_run.append(f"{entry.name} · {method}")
            append_records(jsonl, [rec])
            records[record_key(entry.name, method)] = rec
            ran += 1
            remaining[entry.name] -= 1
            if remaining[entry.name] == 0:
                prepared.pop(entry.name, None)  # free the prepared data of a finished entry
            emit(BenchEvent("done", len(records), total, entry.name, method, rec))
        complete = not not_run
    finally:
        rows = _rows(pairs, records)
        report = BenchReport(suite, out, rows, env, ran, skipped, complete, total_time_limit=total_time_limit,
                             not_run=tuple(not_run))
        report.paths = write_reports(report)
    return report


def restore_sigint() -> None:
    """Re-install Python's SIGINT handler at the C level: CP-SAT (``catch_sigint_signal``, on by default) replaces it
    during a solve and leaves SIG_DFL behind, after which Ctrl-C would kill the process without the reports of the
    finished pairs being written."""
    if threading.current_thread() is not threading.main_thread():
        return
    handler = signal.getsignal(signal.SIGINT)
    if handler is not None:
        signal.signal(signal.SIGINT, handler)


def _prepare(entry: SuiteEntry, suite_file: str) -> Prepared:
    """Prepare an entry's instance; an InputError of the problem's prepare step names the entry and its file."""
    from dlaopt.harness import prepare

    try:
        return prepare(entry.instance)
    except InputError as exc:
        raise InputError(f"entry '{entry.name}': the problem cannot use the instance: {exc.render()}",
                         file=suite_file) from None


def _rows(pairs: Sequence[tuple[SuiteEntry, str]], records: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    return with_ratios([dict(records[k]) for k in (record_key(e.name, m) for e, m in pairs) if k in records])


# ================================================================================================ reports


def _limits_text(suite: Suite) -> str:
    limits = sorted({e.solve.get("time_limit") for e in suite.entries}, key=lambda x: (x is None, x or 0))
    parts = ["none" if t is None else f"{fmt_number(t)} s" for t in limits]
    return "time limit " + " / ".join(parts) + " per (instance, method)"


def report_markdown(suite: Suite, rows: Sequence[Mapping[str, Any]], env: Mapping[str, Any], *,
                    complete: bool = True, total_time_limit: float | None = None,
                    not_run: Sequence[str] = ()) -> str:
    lines = [f"# Benchmark suite `{suite.name}`", ""]
    if suite.description:
        lines += [suite.description, ""]
    lines += [f"Suite file `{suite.file}`; {_limits_text(suite)}; {len(rows)} pairs in "
              f"{seconds_text(total_seconds(rows))}; objectives are minimised, the ratio is to the best verified "
              "objective of the instance.", "", environment_markdown(env), ""]
    if not_run:
        listed = ", ".join(not_run)
        lines += [f"**Stopped by the total time limit** ({fmt_number(total_time_limit)} s): {len(not_run)} (instance, "
                  f"method) pairs not run or cut short ({listed if len(listed) <= 300 else listed[:299] + '…'}); "
                  "run `dlaopt bench` again to run them.", ""]
    elif not complete:
        lines += [f"**Incomplete**: {len(rows)} of {len(suite.pairs)} (instance, method) pairs finished; run "
                  "`dlaopt bench` again to resume.", ""]
    lines += [results_table_markdown(rows), ""]
    return "\n".join(lines)


def headline_markdown(suite: Suite, rows: Sequence[Mapping[str, Any]], env: Mapping[str, Any]) -> str:
    """The compact table of the README: per instance, each method's objective (ratio to the best), exact's gap and
    time; with one line of provenance (command, date, versions, machine, time limits)."""
    methods: list[str] = []
    for e in suite.entries:
        methods += [m for m in e.methods if m not in methods]
    by_key = {(r["instance"], r["method"]): r for r in rows}
    body: list[list[str]] = []
    for e in suite.entries:
        cells = [e.name, e.instance.objective]
        for m in methods:
            r = by_key.get((e.name, m))
            if r is None:
                cells.append("-" if m not in e.methods else "(not run)")
            elif r.get("verified") and r.get("objective") is not None:
                cells.append(f"{fmt_number(r['objective'])} ({fmt_ratio(r.get('ratio_to_best'))})")
            else:
                cells.append(str(r.get("status")))
        ex = by_key.get((e.name, "exact"))
        cells += [fmt_gap(ex.get("gap")) if ex else "-", f"{float(ex.get('time_s') or 0):.2f}" if ex else "-"]
        body.append(cells)
    header = ["instance", "objective", *methods, "exact gap", "exact time [s]"]
    align = ["l", "l", *(["r"] * len(methods)), "r", "r"]
    threads = env.get("threads")
    prov = (f"`dlaopt bench {suite.name}` on {str(env.get('date', ''))[:10]}: dlaopt {env.get('dlaopt')}, "
            f"OR-Tools {env.get('ortools')}, highspy {env.get('highspy')}, "
            f"solver threads {threads if threads is not None else 'default'}, {env.get('cpu_count')} CPUs, "
            f"{ram_text(env.get('ram_bytes'))} RAM; {_limits_text(suite)}; {len(rows)} pairs in "
            f"{seconds_text(total_seconds(rows))}. Each cell: objective (ratio to the best verified objective of the "
            "row; minimised).")
    return prov + "\n\n" + md_table(header, body, align)


def write_reports(report: BenchReport) -> dict[str, Path]:
    """``results.csv``, ``results.json`` and ``results.md`` in the report's folder (``results.jsonl`` is written as
    the run goes)."""
    out = report.out_dir
    paths = {"jsonl": out / RESULTS_JSONL, "csv": out / RESULTS_CSV, "json": out / RESULTS_JSON,
             "md": out / RESULTS_MD}
    paths["csv"].write_text(csv_text(report.rows), encoding="utf-8")
    doc = {"suite": report.suite.name, "description": report.suite.description, "file": report.suite.file,
           "complete": report.complete, "total_time_limit": report.total_time_limit,
           "not_run": list(report.not_run), "environment": report.environment, "columns": list(TABLE_COLUMNS),
           "rows": report.rows}
    paths["json"].write_text(json.dumps(json_safe(doc), indent=1, allow_nan=False, default=str) + "\n",
                             encoding="utf-8")
    paths["md"].write_text(report.markdown, encoding="utf-8")
    return paths


# ================================================================================================ README
def readme_block(readme: str | Path, suite_name: str) -> tuple[str, int, int]:
    """The README's text and the span between its ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` markers
    (each must occur exactly once, the start before the end)."""
    from dlaopt.io.instance import read_text

    text = read_text(readme)
    start, end = MARKER_START.format(name=suite_name), MARKER_END.format(name=suite_name)
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise InputError(f"the README needs exactly one '{start}' followed by one '{end}' marker "
                         f"(found {text.count(start)} and {text.count(end)})", file=str(readme),
                         expected=f"a block {start} ... {end} where the table of suite '{suite_name}' goes")
    return text, text.index(start) + len(start), text.index(end)


def update_readme(readme: str | Path, suite_name: str, block: str) -> None:
    """Replace what lies between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` in ``readme`` by ``block``;
    nothing else in the file changes."""
    text, i, j = readme_block(readme, suite_name)
    new = text[:i] + "\n" + block.strip("\n") + "\n" + text[j:]
    try:
        Path(readme).write_text(new, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the file: {exc.strerror or exc}", file=str(readme)) from None


def main_summary(report: BenchReport) -> str:
    """One line for logs: what ran, what was skipped, where the files are."""
    return (f"suite {report.suite.name}: {report.ran} run, {report.skipped} skipped (already finished), "
            f"{len(report.rows)} of {len(report.suite.pairs)} pairs; results in {report.out_dir}")


__all__ = [
    "METHODS_SCHEMA",
    "SOLVE_SCHEMA",
    "BenchEvent",
    "BenchReport",
    "Suite",
    "SuiteEntry",
    "append_records",
    "available_suites",
    "check_methods",
    "check_solve",
    "config_digest",
    "csv_text",
    "environment",
    "environment_markdown",
    "fmt_gap",
    "fmt_number",
    "fmt_ratio",
    "headline_markdown",
    "json_safe",
    "load_suite",
    "md_table",
    "merge_documents",
    "ratio_to_best",
    "read_records",
    "readme_block",
    "restore_sigint",
    "result_record",
    "run_suite",
    "solve_options",
    "update_readme",
    "write_reports",
]
