"""Instance files: a problem, a workload (zoo network or inline graph) and the hardware (preset or inline), with the
objective and the problem's options.

Loading validates in two stages, and every bad input ends in an :class:`~dlaopt.errors.InputError` naming the file
and the key path: first the structure against the JSON Schema of :mod:`dlaopt.io.schema` (the most relevant
violation, in words), then the meaning (zoo and preset names and parameters, the workload graph, the hardware model).
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dlaopt.errors import InputError
from dlaopt.hardware import DMA, PRESETS, Accelerator, Memory, MemoryKind, PEArray, Platform
from dlaopt.hardware.arena import Arena
from dlaopt.hardware.model import LINK_OPERANDS, Link
from dlaopt.io.document import (  # noqa: F401 - load_mapping, parse_document and read_text re-exported
    MAX_NUMBER,
    MAX_NUMBER_TEXT,
    check_document,
    load_mapping,
    parse_document,
    read_text,
)
from dlaopt.io.schema import instance_validator, validate_against
from dlaopt.specs import problem_spec
from dlaopt.specs.constraints import Constraint, parse_constraints
from dlaopt.workload import Operator, OpKind, Tensor, Workload
from dlaopt.workload.buffers import AllocBuffer, BufferSet
from dlaopt.workload.jobs import InlineJob, InlineJobs, TaskGroup
from dlaopt.workload.operator import OperatorSpecError, normalize_attrs

KiB = 1024
DEFAULT_HARDWARE_NAME = "custom"
DEFAULT_CLOCK_MHZ = 1000.0


@dataclass(frozen=True)
class Instance:
    """A loaded, validated instance."""

    problem: str
    name: str
    workload: Workload | TaskGroup | InlineJobs | BufferSet  # jobs: job scheduling; buffers: allocation
    hardware: Accelerator | Platform | Arena  # a Platform or an Arena exactly for the problems whose spec says so
    objective: str
    options: Mapping[str, Any]  # defaults filled in from the ProblemSpec
    source: str | None = None  # the file it came from
    document: Mapping[str, Any] = field(default_factory=dict)  # the normalised document (re-serialisable)
    constraints: tuple[Constraint, ...] = ()  # the user's constraints, in file order (meaning checked by the problem)
    flexibility: Mapping[str, Any] | None = None  # mapping: a flexibility class that expands to constraints

    def with_constraints(self, constraints: Sequence[Constraint]) -> Instance:
        """The same instance under another list of constraints (a subset when a conflict is searched for). The list
        replaces every declared constraint, those a ``flexibility`` class expands to included: the class is dropped
        so that it does not expand again."""
        return dataclasses.replace(self, constraints=tuple(constraints), flexibility=None)

    @property
    def graph(self) -> Workload:
        """The workload graph (every problem but job scheduling has one; :meth:`_build` checks the kind)."""
        if not isinstance(self.workload, Workload):
            raise InputError("this problem needs a workload graph", file=self.source, path=("workload",),
                             expected="{zoo, params} or an inline graph")
        return self.workload

    @property
    def accelerator(self) -> Accelerator:
        if not isinstance(self.hardware, Accelerator):
            raise InputError("this problem needs one accelerator", file=self.source, path=("hardware",),
                             expected="{preset, params} or an inline accelerator")
        return self.hardware

    @property
    def buffers(self) -> BufferSet:
        """The buffers of a static-allocation instance (``problem: allocation``)."""
        if not isinstance(self.workload, BufferSet):
            raise InputError("this problem needs a buffer list", file=self.source, path=("workload",),
                             expected=_WORKLOAD_KINDS["buffers"])
        return self.workload

    @property
    def arena(self) -> Arena:
        """The one memory of a static-allocation instance (``problem: allocation``)."""
        if not isinstance(self.hardware, Arena):
            raise InputError("this problem needs one memory", file=self.source, path=("hardware",),
                             expected=_HARDWARE_KINDS["memory"])
        return self.hardware

    @property
    def platform(self) -> Platform:
        if not isinstance(self.hardware, Platform):
            raise InputError("this problem needs a platform", file=self.source, path=("hardware",),
                             expected="{platform, params} or {accelerators, system_bandwidth_gbps}")
        return self.hardware


# ================================================================================================ public API
def load_instance(path: str | Path) -> Instance:
    """Load and validate the instance file ``path`` (JSON by a ``.json`` suffix, else YAML)."""
    doc = load_mapping(path, what="an instance (keys problem, workload, hardware, ...)")
    return instance_from_dict(doc, source=str(path))


def instance_from_dict(doc: Mapping[str, Any], *, source: str | None = None) -> Instance:
    """Validate an instance document and build the :class:`Instance`; ``source`` names the file in errors."""
    if not isinstance(doc, Mapping):
        raise InputError(f"the instance is {type(doc).__name__}, not a mapping", file=source,
                         expected="a mapping with keys problem, workload, hardware, ...")
    check_document(doc, file=source)  # the limits of every input file, for documents built in code or merged
    data = _plain(doc, strict=False)
    validate_against(instance_validator(), data, file=source)
    try:
        return _build(data, source)
    except InputError as exc:
        raise exc.located(file=source) from None


def instance_from_buffers(
    buffers: BufferSet,
    *,
    capacity: int | None = None,
    alignment: int = 1,
    memory: str = "memory",
    objective: str | None = None,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> Instance:
    """A static-allocation instance (``problem: allocation``) of ``buffers`` in one memory of ``capacity`` bytes
    (``None``: unbounded, for objective ``peak``) whose default alignment is ``alignment``.

    ``buffers`` are taken as they are (their alignments already resolved, e.g. by
    :func:`dlaopt.io.buffers.read_buffers_csv` with the same ``alignment``); ``source`` is the file they came from
    (a CSV: the instance's document then refers to it by name, as ``workload: {csv: NAME}`` relative to it).
    Errors are located at the keys of the equivalent instance file (``hardware.memory.capacity_bytes``, ...).
    """
    spec = problem_spec("allocation")
    objective = objective if objective is not None else spec.objectives[0]
    if objective not in spec.objectives:
        raise InputError(f"unknown objective '{objective}' for problem 'allocation'", file=source,
                         path=("objective",), expected="one of: " + ", ".join(spec.objectives))
    for key, value in (("capacity_bytes", capacity), ("alignment", alignment)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_NUMBER:
            raise InputError(f"{value!r} is not a positive integer of at most {MAX_NUMBER_TEXT}", file=source,
                             path=("hardware", "memory", key), expected="a positive integer")
    if not buffers.buffers:
        raise InputError("there are no buffers", file=source, path=("workload",), expected="at least one buffer")
    if options:
        from jsonschema import Draft202012Validator

        validate_against(Draft202012Validator(dict(spec.options_schema)), _plain(dict(options), strict=False),
                         file=source, prefix=("options",))
    arena = Arena(memory, capacity, alignment)
    merged = {**copy.deepcopy(dict(spec.default_options)), **dict(options or {})}
    name = name or (Path(source).stem if source else buffers.name)
    if source is not None and Path(source).suffix.lower() == ".csv":
        wdoc: dict[str, Any] = {"csv": Path(source).name, "name": buffers.name}
    else:
        wdoc = {"name": buffers.name, "buffers": [
            {"id": b.id, "lower": b.lower, "upper": b.upper, "size": b.size,
             **({"alignment": b.alignment} if b.alignment != alignment else {})} for b in buffers.buffers]}
    hdoc = {"memory": {"name": memory, **({} if capacity is None else {"capacity_bytes": capacity}),
                       "alignment": alignment}}
    document = {"problem": "allocation", "name": name, "workload": wdoc, "hardware": hdoc, "objective": objective,
                "options": merged}
    return Instance(problem="allocation", name=name, workload=buffers, hardware=arena, objective=objective,
                    options=merged, source=source, document=_plain(document))


def make_instance_document(
    problem: str,
    workload_zoo_name: str,
    workload_params: Mapping[str, Any] | None,
    preset: str,
    preset_params: Mapping[str, Any] | None,
    objective: str | None = None,
    options: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """A validated, normalised instance document for a zoo network on a hardware preset (``dlaopt make``)."""
    wparams = dict(workload_params or {})
    hparams = dict(preset_params or {})
    doc: dict[str, Any] = {
        "problem": problem,
        "name": name or default_instance_name(workload_zoo_name, wparams, preset, hparams),
        "workload": {"zoo": workload_zoo_name, "params": wparams},
        "hardware": {"preset": preset, "params": hparams},
    }
    if objective is not None:
        doc["objective"] = objective
    if options is not None:
        doc["options"] = dict(options)
    return dict(instance_from_dict(doc).document)


def default_instance_name(
    workload: str, workload_params: Mapping[str, Any], preset: str, preset_params: Mapping[str, Any]
) -> str:
    """``<network>[-<params>]-<preset>[-<params>]``, e.g. ``resnet50-smaug-nvdla-spad_kb256``."""
    parts = [workload, *(_param_slug(k, v) for k, v in workload_params.items()), preset,
             *(_param_slug(k, v) for k, v in preset_params.items())]
    return "-".join(p for p in parts if p)


def save_document(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write an instance (or any) document as JSON (``.json``) or YAML (anything else); returns the path."""
    return save_mapping(doc, path)


# ================================================================================================ building
def _build(doc: dict[str, Any], source: str | None) -> Instance:
    problem = doc["problem"]
    spec = problem_spec(problem)
    workload = _build_workload(doc["workload"], doc.get("name") or (Path(source).stem if source else None), source,
                               _memory_alignment(doc["hardware"]))
    kind = "graph" if isinstance(workload, Workload) else "task" if isinstance(workload, TaskGroup) else \
        "buffers" if isinstance(workload, BufferSet) else "jobs"
    if kind not in spec.workloads:
        raise InputError(f"problem '{problem}' does not take a {kind} workload", path=("workload",),
                         expected=" or ".join(_WORKLOAD_KINDS[k] for k in spec.workloads))
    hardware = _build_hardware(doc["hardware"])
    hardware_kind = "platform" if isinstance(hardware, Platform) else "memory" if isinstance(hardware, Arena) else \
        "accelerator"
    if hardware_kind != spec.hardware:
        raise InputError(f"problem '{problem}' runs on {_HARDWARE_NAMES[spec.hardware]}", path=("hardware",),
                         expected=_HARDWARE_KINDS[spec.hardware])
    _check_model_sizes(workload, hardware, doc)
    name = doc.get("name") or (Path(source).stem if source else f"{workload.name}-{hardware.name}")
    objective = doc.get("objective", spec.objectives[0])
    options = {**copy.deepcopy(dict(spec.default_options)), **doc.get("options", {})}

    wdoc = dict(doc["workload"])
    if "zoo" in wdoc:
        wdoc.setdefault("params", {})
    elif "task" not in wdoc and "onnx" not in wdoc and "csv" not in wdoc:  # ONNX and CSV kept as written (paths
        wdoc = {"name": workload.name, **wdoc}                                 # relative to the instance file)
    hdoc = dict(doc["hardware"])
    if "preset" in hdoc or "platform" in hdoc:
        hdoc.setdefault("params", {})
    elif isinstance(hardware, Arena):
        hdoc = {"memory": {"name": hardware.name, **({} if hardware.capacity_bytes is None else
                                                      {"capacity_bytes": hardware.capacity_bytes}),
                           "alignment": hardware.alignment}}
    else:
        hdoc = {"name": hardware.name, **hdoc}
    document = {
        "problem": problem,
        "name": name,
        "workload": wdoc,
        "hardware": hdoc,
        "objective": objective,
        "options": options,
    }
    if doc.get("constraints"):
        document["constraints"] = list(doc["constraints"])
    if doc.get("flexibility") is not None:
        document["flexibility"] = dict(doc["flexibility"])
    return Instance(problem=problem, name=name, workload=workload, hardware=hardware, objective=objective,
                    options=options, source=source, document=_plain(document),
                    constraints=parse_constraints(doc.get("constraints")), flexibility=doc.get("flexibility"))


def _check_model_sizes(workload: Workload | TaskGroup | InlineJobs | BufferSet,
                       hardware: Accelerator | Platform | Arena, doc: Mapping[str, Any]) -> None:
    """Sizes that pass the per-number limit of input files but whose products do not fit a model (a tensor of
    2**60 bytes, an operator of 2**80 MACs, a scratchpad of 2**63 bytes) are bad input, located at the key that
    produced them."""
    limit = f"at most {MAX_NUMBER_TEXT}"
    wdoc = doc["workload"]
    if isinstance(workload, BufferSet) or isinstance(hardware, Arena):
        return  # buffer lists check their sizes as they are read (_build_buffers, dlaopt.io.buffers)
    if isinstance(workload, Workload):
        tensor_index = {t["name"]: i for i, t in enumerate(wdoc.get("tensors", [])) if isinstance(t, Mapping)}
        where: tuple[str | int, ...] = ("workload", "params") if "zoo" in wdoc else ("workload", "onnx") \
            if "onnx" in wdoc else ("workload",)
        for t in workload.tensors.values():
            if t.size_bytes > MAX_NUMBER:
                at = ("workload", "tensors", tensor_index[t.name], "shape") if t.name in tensor_index else where
                raise InputError(f"tensor '{t.name}' of shape {list(t.shape)} has {t.size_bytes:.3g} bytes, too many "
                                 "for a model", path=at, expected=f"tensors of {limit} bytes")
        for i, op in enumerate(workload.operators):
            if op.macs > MAX_NUMBER:
                at = ("workload", "operators", i) if "operators" in wdoc else where
                raise InputError(f"operator '{op.name}' has {op.macs:.3g} MACs, too many for a model", path=at,
                                 expected=f"operators of {limit} MACs")
    accelerators = hardware.accelerators if isinstance(hardware, Platform) else (hardware,)
    hdoc = doc["hardware"]
    for k, accel in enumerate(accelerators):
        at = ("hardware", "params") if "preset" in hdoc or "platform" in hdoc else \
            ("hardware", "accelerators", k) if "accelerators" in hdoc else ("hardware",)
        for j, m in enumerate(accel.memories):
            if m.capacity_bytes is not None and m.capacity_bytes * max(1, m.instances) > MAX_NUMBER:
                mat = (*at, "memories", j) if at[-1] != "params" else at
                raise InputError(f"memory '{m.name}' of accelerator '{accel.name}' holds {m.capacity_bytes:.3g} bytes"
                                 f"{f' in each of {m.instances} instances' if m.instances > 1 else ''}, too many for "
                                 "a model", path=mat, expected=f"capacities of {limit} bytes in all")
        pes = accel.pe_array.num_pes
        if pes * accel.pe_array.macs_per_pe_per_cycle > MAX_NUMBER:
            raise InputError(f"accelerator '{accel.name}' has {pes:.3g} PEs, too many for a model", path=at,
                             expected=f"{limit} MACs per cycle")


_WORKLOAD_KINDS = {"graph": "{zoo, params} or an inline graph", "task": "a job group {task, group_size, seed}",
                   "jobs": "an inline job table {jobs}",
                   "buffers": "a buffer list {buffers: [{id, lower, upper, size}, ...]} or {csv: PATH}"}
_HARDWARE_KINDS = {"accelerator": "{preset, params} or an inline accelerator",
                   "platform": "{platform, params} or {accelerators, system_bandwidth_gbps}",
                   "memory": "{memory: {name, capacity_bytes, alignment}}"}
_HARDWARE_NAMES = {"accelerator": "one accelerator", "platform": "a platform", "memory": "one memory"}


def _memory_alignment(hdoc: Mapping[str, Any]) -> int:
    """The default alignment of the buffers of ``hardware: {memory: {alignment}}`` (1 for other hardware)."""
    memory = hdoc.get("memory") if isinstance(hdoc, Mapping) else None
    return int(memory.get("alignment", 1)) if isinstance(memory, Mapping) else 1


def _build_workload(wdoc: Mapping[str, Any], default_name: str | None, source: str | None = None,
                    alignment: int = 1) -> Workload | TaskGroup | InlineJobs | BufferSet:
    if "zoo" in wdoc:
        import dlaopt.zoo  # noqa: F401 - registers the networks
        from dlaopt.zoo import ZOO

        ZOO.entry(wdoc["zoo"], path=("workload", "zoo"))
        return ZOO.create(wdoc["zoo"], wdoc.get("params", {}), path=("workload",))
    if "onnx" in wdoc:
        return _build_onnx_workload(wdoc, source)
    if "buffers" in wdoc:
        return _build_buffers(wdoc, default_name or "buffers", alignment)
    if "csv" in wdoc:
        return _build_csv_workload(wdoc, default_name, source, alignment)
    if "task" in wdoc:
        return TaskGroup(wdoc["task"], int(wdoc.get("group_size", 100)), int(wdoc.get("seed", 0)),
                         None if wdoc.get("batch") is None else int(wdoc["batch"]))
    if "jobs" in wdoc:
        jobs = []
        for i, j in enumerate(wdoc["jobs"]):
            if len(j["latency_us"]) != len(j["bandwidth_gbps"]):
                raise InputError(f"job '{j['name']}': {len(j['latency_us'])} latencies but "
                                 f"{len(j['bandwidth_gbps'])} bandwidths", path=("workload", "jobs", i),
                                 expected="one of each per sub-accelerator")
            jobs.append(InlineJob(j["name"], j.get("tenant", j["name"]), float(j["ops"]),
                                  tuple(float(v) for v in j["latency_us"]),
                                  tuple(float(v) for v in j["bandwidth_gbps"])))
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InputError(f"job name '{dup}' is used twice", path=("workload", "jobs"))
        return InlineJobs(tuple(jobs), wdoc.get("name", default_name or "jobs"))
    return _build_inline_workload(wdoc, default_name or "workload")


def _build_onnx_workload(wdoc: Mapping[str, Any], source: str | None) -> Workload:
    """``{onnx: PATH, batch, dims, name, dtype_bytes}``: PATH relative to the instance file's folder."""
    from dlaopt.io.onnx import import_onnx

    written = str(wdoc["onnx"])
    path = Path(written)
    if source is not None and not path.is_absolute():
        path = Path(source).parent / path
    try:
        return import_onnx(path, batch=wdoc.get("batch"), dims=wdoc.get("dims"), name=wdoc.get("name"),
                           dtype_bytes=wdoc.get("dtype_bytes"))
    except InputError as exc:
        key = exc.path[0] if exc.path and exc.path[0] in ("dims", "batch", "dtype_bytes") else "onnx"
        where = f"ONNX model '{written}'" + (f" ({path})" if str(path) != written else "")
        raise InputError(f"{where}: {exc.message}", path=("workload", key, *exc.path[1:]),
                         expected=exc.expected) from None


def _build_buffers(wdoc: Mapping[str, Any], default_name: str, alignment: int) -> BufferSet:
    """``{buffers: [{id, lower, upper, size, alignment}, ...], name}``: buffers without an alignment get the
    memory's."""
    from dlaopt.io.buffers import MAX_BUFFERS

    items = wdoc["buffers"]
    if len(items) > MAX_BUFFERS:
        raise InputError(f"{len(items):,} buffers", path=("workload", "buffers"),
                         expected=f"at most {MAX_BUFFERS:,} buffers")
    buffers: list[AllocBuffer] = []
    first: dict[str, int] = {}
    total = 0
    for i, b in enumerate(items):
        where = ("workload", "buffers", i)
        ident = str(b["id"])
        if ident in first:
            raise InputError(f"buffer id '{ident}' is already used by buffers[{first[ident]}]", path=(*where, "id"),
                             expected="a different id for every buffer")
        first[ident] = i
        if b["upper"] <= b["lower"]:
            raise InputError(f"buffer '{ident}' lives during [{b['lower']}, {b['upper']}), which is empty (upper is "
                             "exclusive)", path=(*where, "upper"), expected="upper greater than lower")
        total += b["size"]
        if total > MAX_NUMBER:
            raise InputError(f"the buffers up to '{ident}' have {total:,} bytes in all, too many for a model",
                             path=(*where, "size"), expected=f"at most {MAX_NUMBER_TEXT} bytes in all")
        try:
            buffers.append(AllocBuffer(ident, b["lower"], b["upper"], b["size"], b.get("alignment", alignment)))
        except ValueError as exc:
            raise InputError(str(exc), path=where) from None
    return BufferSet(tuple(buffers), wdoc.get("name", default_name))


def _build_csv_workload(wdoc: Mapping[str, Any], default_name: str | None, source: str | None,
                        alignment: int) -> BufferSet:
    """``{csv: PATH, name}``: PATH relative to the instance file's folder (:mod:`dlaopt.io.buffers`)."""
    from dlaopt.io.buffers import read_buffers_csv

    written = str(wdoc["csv"])
    path = Path(written)
    if source is not None and not path.is_absolute():
        path = Path(source).parent / path
    try:
        return read_buffers_csv(path, alignment=alignment, name=wdoc.get("name") or path.stem or default_name)
    except InputError as exc:
        where = f"buffer file '{written}'" + (f" ({path})" if str(path) != written else "")
        raise InputError(f"{where}: {exc.message}", path=("workload", "csv"), expected=exc.expected) from None


def _build_inline_workload(wdoc: Mapping[str, Any], default_name: str) -> Workload:
    dtype_bytes = wdoc.get("dtype_bytes", 1)
    tensors: list[Tensor] = []
    index_of: dict[str, int] = {}
    for i, t in enumerate(wdoc["tensors"]):
        try:
            tensors.append(Tensor(t["name"], tuple(t["shape"]), t["role"], t.get("dtype_bytes", dtype_bytes)))
        except ValueError as exc:
            raise InputError(str(exc), path=("workload", "tensors", i)) from None
        index_of[t["name"]] = i
    operators: list[Operator] = []
    for i, o in enumerate(wdoc["operators"]):
        kind = OpKind(o["kind"])
        attrs = dict(o.get("attrs", {}))
        try:
            normalize_attrs(kind, attrs)
        except OperatorSpecError:
            pass  # Workload.create reports it with the attribute's key
        except (ValueError, TypeError) as exc:
            raise InputError(
                f"operator '{o['name']}' ({kind.value}): invalid attribute value: {exc}",
                path=("workload", "operators", i, "attrs"),
            ) from None
        operators.append(Operator(o["name"], kind, tuple(o["inputs"]), tuple(o["outputs"]), attrs))
    try:
        return Workload.create(wdoc.get("name", default_name), tensors, operators)
    except InputError as exc:
        path = exc.path
        if len(path) >= 2 and path[0] == "tensors" and path[1] in index_of:
            path = ("tensors", index_of[str(path[1])], *path[2:])
        raise InputError(exc.message, file=exc.file, path=("workload", *path), expected=exc.expected) from None
    except (ValueError, TypeError) as exc:
        raise InputError(f"invalid workload: {exc}", path=("workload",)) from None


def _build_hardware(hdoc: Mapping[str, Any]) -> Accelerator | Platform | Arena:
    if "memory" in hdoc:
        m = hdoc["memory"]
        try:
            return Arena(m.get("name", "memory"), m.get("capacity_bytes"), m.get("alignment", 1))
        except ValueError as exc:
            raise InputError(str(exc), path=("hardware", "memory")) from None
    if "preset" in hdoc:
        PRESETS.entry(hdoc["preset"], path=("hardware", "preset"))
        return PRESETS.create(hdoc["preset"], hdoc.get("params", {}), path=("hardware",))
    if "platform" in hdoc:
        from dlaopt.hardware.platforms import PLATFORMS

        PLATFORMS.entry(hdoc["platform"], path=("hardware", "platform"))
        return PLATFORMS.create(hdoc["platform"], hdoc.get("params", {}), path=("hardware",))
    if "accelerators" in hdoc:
        accels = []
        for i, a in enumerate(hdoc["accelerators"]):
            try:
                accels.append(_build_hardware(a))
            except InputError as exc:
                raise InputError(exc.message, path=("hardware", "accelerators", i, *exc.path[1:]),
                                 expected=exc.expected) from None
        names = [a.name for a in accels]
        if len(set(names)) != len(names):
            raise InputError(f"sub-accelerator names must be unique (give inline ones a name), got {names}",
                             path=("hardware", "accelerators"))
        return Platform(hdoc.get("name", "platform"), tuple(a for a in accels if isinstance(a, Accelerator)),
                        float(hdoc["system_bandwidth_gbps"]) * 1e9)
    return _build_inline_hardware(hdoc)


_MEMORY_OPTIONAL = ("banks", "bandwidth_bytes_per_cycle", "read_energy_pj_per_byte", "write_energy_pj_per_byte",
                    "access", "instances", "write_bandwidth_bytes_per_cycle", "network_energy_pj_per_byte")


def _build_memory(i: int, m: Mapping[str, Any], seen: dict[str, int]) -> Memory:
    where = ("hardware", "memories", i)
    name = m["name"]
    if name in seen:
        raise InputError(f"memory name '{name}' is already used by memories[{seen[name]}]", path=(*where, "name"),
                         expected="unique memory names")
    seen[name] = i
    kind = MemoryKind(m["kind"])
    if i == 0 and kind != MemoryKind.DRAM:
        raise InputError(f"the first memory must be main memory (kind 'dram'), got kind '{kind.value}'",
                         path=(*where, "kind"), expected="memories listed from main memory (dram) inwards")
    if i > 0 and kind == MemoryKind.DRAM:
        raise InputError("only the first memory may be main memory (kind 'dram')", path=(*where, "kind"),
                         expected="memories listed from main memory (dram) inwards")
    if "capacity_bytes" in m and "capacity_kb" in m:
        raise InputError(f"memory '{name}' gives both 'capacity_bytes' and 'capacity_kb'", path=where,
                         expected="only one of capacity_bytes, capacity_kb")
    capacity = m.get("capacity_bytes")
    if capacity is None and "capacity_kb" in m:
        capacity = m["capacity_kb"] * KiB
    if capacity is None and kind != MemoryKind.DRAM:
        raise InputError(f"memory '{name}' ({kind.value}) has no capacity", path=where,
                         expected="capacity_bytes or capacity_kb (only main memory may be unbounded)")
    kwargs: dict[str, Any] = {k: m[k] for k in _MEMORY_OPTIONAL if k in m}
    if "holds" in m:
        kwargs["holds"] = frozenset(m["holds"])
    if "operands" in m:
        kwargs["operands"] = frozenset(m["operands"])
    try:
        return Memory(name, kind, capacity, **kwargs)
    except ValueError as exc:
        raise InputError(str(exc), path=where) from None


def _build_links(docs: Sequence[Mapping[str, Any]], axis_names: Sequence[str]) -> tuple[Link, ...]:
    """The PE-to-PE links of ``pe_array.links``, each error located at its key."""
    links: list[Link] = []
    first: dict[str, int] = {}
    for i, d in enumerate(docs):
        where = ("hardware", "pe_array", "links", i)
        operand = str(d["operand"])
        if operand not in LINK_OPERANDS:
            raise InputError(f"unknown link operand '{operand}'", path=(*where, "operand"),
                             expected="one of " + ", ".join(LINK_OPERANDS))
        if operand in first:
            raise InputError(f"operand {operand} already has a link (links[{first[operand]}])",
                             path=(*where, "operand"), expected="at most one link per operand")
        first[operand] = i
        axes = [d["axes"]] if isinstance(d["axes"], str) else list(d["axes"])
        for j, a in enumerate(axes):
            if a not in axis_names:
                raise InputError(f"unknown PE-array axis '{a}'", path=(*where, "axes", j),
                                 expected="one of the pe_array axes: " + ", ".join(axis_names))
        if len(axes) not in (1, 2) or len(set(axes)) != len(axes):
            raise InputError(f"a link runs along one axis or diagonally over two distinct axes, got {axes}",
                             path=(*where, "axes"), expected="one axis name or two distinct ones")
        kwargs = {k: d[k] for k in ("energy_pj_per_byte", "bandwidth_bytes_per_cycle") if k in d}
        for key, value in kwargs.items():
            if not (value > 0 if key == "bandwidth_bytes_per_cycle" else value >= 0):
                raise InputError(f"link {key} must be {'positive' if key.startswith('band') else 'non-negative'}, "
                                 f"got {value}", path=(*where, key))
        try:
            links.append(Link(operand, tuple(axes), **kwargs))
        except ValueError as exc:
            raise InputError(str(exc), path=where) from None
    return tuple(links)


def _build_inline_hardware(hdoc: Mapping[str, Any]) -> Accelerator:
    seen: dict[str, int] = {}
    memories = [_build_memory(i, m, seen) for i, m in enumerate(hdoc["memories"])]
    pe = hdoc["pe_array"]
    axes = tuple((str(a[0]), int(a[1])) for a in pe["axes"])
    links = _build_links(pe.get("links") or [], [a for a, _ in axes])
    try:
        pe_array = PEArray(
            axes,
            macs_per_pe_per_cycle=pe.get("macs_per_pe_per_cycle", 1),
            vector_lanes=pe.get("vector_lanes"),
            links=links,
            arrays=int(pe.get("arrays", 1)),  # the schema admits integral numbers only (2.0 among them)
        )
    except ValueError as exc:
        raise InputError(str(exc), path=("hardware", "pe_array")) from None
    try:
        dma = DMA(hdoc["dma"]["bandwidth_bytes_per_cycle"], hdoc["dma"].get("latency_cycles", 0.0))
    except ValueError as exc:
        raise InputError(str(exc), path=("hardware", "dma")) from None
    try:
        return Accelerator(
            name=hdoc.get("name", DEFAULT_HARDWARE_NAME),
            pe_array=pe_array,
            memories=tuple(memories),
            dma=dma,
            clock_hz=hdoc.get("clock_mhz", DEFAULT_CLOCK_MHZ) * 1e6,
            mac_energy_pj=hdoc.get("mac_energy_pj", 0.0),
            description=hdoc.get("description", ""),
        )
    except ValueError as exc:
        raise InputError(str(exc), path=("hardware",)) from None


def _param_slug(key: str, value: Any) -> str:
    text = (key if value else f"no_{key}") if isinstance(value, bool) else f"{key}{value}"
    return re.sub(r"[^A-Za-z0-9_.]+", "", text)


# ================================================================================================ files
def _plain(value: Any, *, strict: bool = True) -> Any:
    """``value`` copied as plain JSON/YAML data (dicts, lists, str, int, float, bool, None).

    Tuples become lists, enums their values, sets sorted lists, numpy scalars Python numbers. Anything else is a
    ``TypeError`` when ``strict``, else kept as is (so that schema validation names it).
    """
    if isinstance(value, enum.Enum):
        return _plain(value.value, strict=strict)
    if isinstance(value, Mapping):
        return {k: _plain(v, strict=strict) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, strict=strict) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v, strict=strict) for v in value), key=repr)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__ == "numpy":
        return _plain(item(), strict=strict)
    if isinstance(value, Path):
        return str(value)
    if strict:
        raise TypeError(f"cannot serialise a value of type {type(value).__name__}: {value!r}")
    return value


class _BlockDumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings (e.g. a mapping's printed loop nest) written as literal blocks."""


def _str_block(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_block)


def save_mapping(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write ``doc`` as JSON (``.json`` suffix) or YAML (anything else); creates parent directories."""
    p = Path(path)
    data = _plain(doc)
    if p.suffix.lower() == ".json":
        text = json.dumps(data, indent=2) + "\n"
    else:
        text = yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, default_flow_style=None, width=120,
                         allow_unicode=True)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the file: {exc.strerror or exc}", file=str(path)) from None
    return p
