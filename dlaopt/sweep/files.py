"""Sweep files (see :mod:`dlaopt.sweep`): their JSON Schema, loading and checking them, and their expansion into
tasks — one instance document per (workload, grid point), each checked before anything runs."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

DEFAULT_THREADS = 1  # solver threads per task unless the sweep's solve options say otherwise
REPORTS = ("thesis-table",)

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

