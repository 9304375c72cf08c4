"""The JSON Schema (Draft 2020-12) of instance files, and the conversion of schema violations into located errors.

The schema is generated from the code (operator kinds, tensor roles, memory kinds, the problems with their objectives
and option schemas), shipped as ``dlaopt/schema/instance.schema.json`` and kept equal to :func:`instance_schema` by a
test; regenerate the shipped copy with ``python -m dlaopt.io.schema``.

Network and preset names, and their parameters, are *not* part of the schema (those registries grow independently);
they are checked when the instance is built, with errors located at ``workload.params.<key>`` and so on.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match, by_relevance

from dlaopt.errors import InputError, format_key_path
from dlaopt.hardware.model import MemoryKind, SpmAccess
from dlaopt.specs import PROBLEM_SPECS
from dlaopt.specs.constraints import constraints_schema
from dlaopt.workload.operator import OpKind
from dlaopt.workload.tensor import TensorRole

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SHIPPED_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "instance.schema.json"

# Keys whose lower bound is a size (the message then says "sizes must be positive").
_SIZE_KEYS = frozenset({"shape", "dtype_bytes", "capacity_bytes", "capacity_kb", "axes", "size"})


def _positive_int(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "description": description}


def _scalar_params(description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "additionalProperties": {"type": ["integer", "number", "string", "boolean"]},
    }


def _defs() -> dict[str, Any]:
    roles = [r.value for r in TensorRole]
    return {
        "tensor": {
            "type": "object",
            "description": "A dense tensor of the workload.",
            "required": ["name", "shape", "role"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Unique tensor name."},
                "shape": {
                    "type": "array",
                    "items": _positive_int("A dimension in elements."),
                    "description": "Dimensions in elements (NCHW for convolution activations).",
                },
                "role": {
                    "enum": roles,
                    "description": "input/weight: in main memory at the start, never produced; activation: produced "
                    "and consumed; output: produced and needed after the graph finishes.",
                },
                "dtype_bytes": _positive_int("Bytes per element (default: the workload's dtype_bytes)."),
            },
        },
        "operator": {
            "type": "object",
            "description": "One operator; operators are listed in execution-schedule order.",
            "required": ["name", "kind", "inputs", "outputs"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Unique operator name."},
                "kind": {"enum": [k.value for k in OpKind], "description": "The operator kind."},
                "inputs": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "description": "Names of the tensors read (for conv2d: activation then weight).",
                },
                "outputs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "minLength": 1},
                    "description": "Names of the tensors produced.",
                },
                "attrs": {
                    "type": "object",
                    "description": "Kind-specific attributes (stride, padding, groups, mode, kernel, axis, ...); "
                    "checked when the workload is built.",
                },
            },
        },
        "workload_inline": {
            "type": "object",
            "description": "A workload written out: tensors and operators in execution-schedule order.",
            "required": ["tensors", "operators"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Workload name (default: instance name)."},
                "dtype_bytes": _positive_int("Default bytes per element of tensors that omit dtype_bytes."),
                "tensors": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/tensor"}},
                "operators": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/operator"}},
            },
        },
        "workload_task": {
            "type": "object",
            "description": "A multi-tenant job group (seed 001 §7.3.1): the layers of a task type's networks, "
            "group_size of them drawn with seed.",
            "required": ["task"],
            "additionalProperties": False,
            "properties": {
                "task": {"enum": ["vision", "language", "recommendation", "mix"]},
                "group_size": _positive_int("Jobs in the group (default 100)."),
                "seed": {"type": "integer", "minimum": 0, "description": "Draw of the group (default 0)."},
                "batch": _positive_int("Batch of every job (default: each network's own)."),
            },
        },
        "workload_jobs": {
            "type": "object",
            "description": "A job analysis table written out: per job its operations and, per sub-accelerator of "
            "the platform (in order), no-stall latency (µs) and no-stall bandwidth (GB/s).",
            "required": ["jobs"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "jobs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "ops", "latency_us", "bandwidth_gbps"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "tenant": {"type": "string", "minLength": 1},
                            "ops": {"type": "number", "exclusiveMinimum": 0},
                            "latency_us": {"type": "array", "minItems": 1,
                                           "items": {"type": "number", "exclusiveMinimum": 0}},
                            "bandwidth_gbps": {"type": "array", "minItems": 1,
                                               "items": {"type": "number", "minimum": 0}},
                        },
                    },
                },
            },
        },
        "buffer": {
            "type": "object",
            "description": "A buffer of a static-allocation instance: alive during the steps [lower, upper) (upper "
            "exclusive), size bytes, its offset a multiple of alignment.",
            "required": ["id", "lower", "upper", "size"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": ["string", "integer"], "minLength": 1, "description": "Unique buffer id."},
                "lower": {"type": "integer", "minimum": 0, "description": "First step it is alive."},
                "upper": {"type": "integer", "minimum": 1,
                          "description": "The step after its last one (exclusive; greater than lower)."},
                "size": _positive_int("Bytes."),
                "alignment": _positive_int("Its offset is a multiple of this (default: the memory's alignment)."),
            },
        },
        "workload_buffers": {
            "type": "object",
            "description": "Static allocation: the buffers written out (problem: allocation).",
            "required": ["buffers"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Name of the buffer list."},
                "buffers": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/buffer"}},
            },
        },
        "workload_csv": {
            "type": "object",
            "description": "Static allocation: the buffers of a CSV file with a header id,lower,upper,size (or "
            "buffer,start,end,size) and optional columns alignment and offset (problem: allocation).",
            "required": ["csv"],
            "additionalProperties": False,
            "properties": {
                "csv": {"type": "string", "minLength": 1,
                        "description": "Path of the .csv file, relative to the instance file's folder."},
                "name": {"type": "string", "minLength": 1, "description": "Name of the buffer list."},
            },
        },
        "hardware_memory": {
            "type": "object",
            "description": "Static allocation: the one memory the buffers are placed in (problem: allocation).",
            "required": ["memory"],
            "additionalProperties": False,
            "properties": {
                "memory": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string", "minLength": 1, "description": "Memory name (default: memory)."},
                        "capacity_bytes": _positive_int("Capacity in bytes (omit: unbounded, objective peak only)."),
                        "alignment": _positive_int("Default alignment of the buffers' offsets in bytes (default 1)."),
                    },
                },
            },
        },
        "hardware_platform": {
            "type": "object",
            "description": "A built-in multi-accelerator platform (`dlaopt presets` lists them).",
            "required": ["platform"],
            "additionalProperties": False,
            "properties": {
                "platform": {"type": "string", "minLength": 1, "description": "Platform name."},
                "params": _scalar_params("Parameters of the platform (e.g. system_bandwidth_gbps)."),
            },
        },
        "platform_inline": {
            "type": "object",
            "description": "A platform written out: sub-accelerators (presets or inline) sharing a system bandwidth.",
            "required": ["accelerators", "system_bandwidth_gbps"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "system_bandwidth_gbps": {"type": "number", "exclusiveMinimum": 0},
                "accelerators": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "if": {"required": ["preset"]},
                        "then": {"$ref": "#/$defs/hardware_preset"},
                        "else": {"$ref": "#/$defs/hardware_inline"},
                    },
                },
            },
        },
        "workload_onnx": {
            "type": "object",
            "description": "An ONNX model, imported with its shapes (`dlaopt import` writes the same workload inline).",
            "required": ["onnx"],
            "additionalProperties": False,
            "properties": {
                "onnx": {"type": "string", "minLength": 1,
                         "description": "Path of the .onnx file, relative to the instance file's folder."},
                "batch": _positive_int("Sets the first dimension of every graph input."),
                "dims": {
                    "type": "object",
                    "description": "Sizes of the model's symbolic input dimensions (dim_param), e.g. {seq: 128}.",
                    "additionalProperties": _positive_int("A dimension in elements."),
                },
                "name": {"type": "string", "minLength": 1, "description": "Workload name (default: the file stem)."},
                "dtype_bytes": _positive_int("Bytes per element (default: the model's floating-point type)."),
            },
        },
        "workload_zoo": {
            "type": "object",
            "description": "A network of the built-in zoo (`dlaopt zoo` lists them and their parameters).",
            "required": ["zoo"],
            "additionalProperties": False,
            "properties": {
                "zoo": {"type": "string", "minLength": 1, "description": "Zoo network name."},
                "params": _scalar_params("Parameters of the zoo network (e.g. batch, dtype_bytes)."),
            },
        },
        "memory": {
            "type": "object",
            "description": "A memory level or scratchpad.",
            "required": ["name", "kind"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Unique memory name."},
                "kind": {"enum": [k.value for k in MemoryKind], "description": "Memory kind."},
                "capacity_bytes": _positive_int("Capacity in bytes (omit for unbounded main memory)."),
                "capacity_kb": _positive_int("Capacity in KiB (alternative to capacity_bytes)."),
                "banks": _positive_int("Number of banks."),
                "access": {
                    "enum": [a.value for a in SpmAccess],
                    "description": "Operand direction served while an operator runs.",
                },
                "holds": {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"enum": roles},
                    "description": "Tensor roles this memory may hold (default: all).",
                },
                "bandwidth_bytes_per_cycle": {"type": "number", "exclusiveMinimum": 0},
                "read_energy_pj_per_byte": {"type": "number", "minimum": 0},
                "write_energy_pj_per_byte": {"type": "number", "minimum": 0},
                "instances": _positive_int("Replicated copies (e.g. one register file per PE)."),
                "operands": {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"enum": ["I", "W", "O"]},
                    "description": "Mapping problem: layer operands kept here (I input, W weight, O output; default: "
                    "derived from holds).",
                },
                "write_bandwidth_bytes_per_cycle": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "A separate write port (default: reads and writes share bandwidth_bytes_per_cycle).",
                },
                "network_energy_pj_per_byte": {
                    "type": "number",
                    "minimum": 0,
                    "description": "On-chip network energy to move a byte to or from one instance of this memory.",
                },
            },
        },
        "pe_array": {
            "type": "object",
            "description": "The spatial array of processing elements.",
            "required": ["axes"],
            "additionalProperties": False,
            "properties": {
                "axes": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "array",
                        "prefixItems": [
                            {"type": "string", "minLength": 1},
                            _positive_int("Axis size."),
                        ],
                        "minItems": 2,
                        "maxItems": 2,
                        "description": "[axis name, size]",
                    },
                },
                "macs_per_pe_per_cycle": _positive_int("MACs per PE per cycle."),
                "arrays": _positive_int("Identical instances of this array working side by side (a scale-out "
                                        "accelerator, seed 001 Table 4.3's S3; default 1): the mapping problem "
                                        "gets a spatial axis 'array' across them; PE counts are over all arrays."),
                "vector_lanes": _positive_int("Element operations per cycle of non-MAC operators."),
                "links": {
                    "type": "array",
                    "description": "Mapping problem: PE-to-PE links forwarding an operand between neighbouring PEs "
                    "(at most one per operand).",
                    "items": {"$ref": "#/$defs/pe_link"},
                },
            },
        },
        "pe_link": {
            "type": "object",
            "description": "A link along one PE-array axis (PE x receives from PE x-1) or diagonally over two axes "
            "(PE (x, y) receives from PE (x-1, y+1)); a PE takes its tile over the link when its predecessor holds "
            "the same tile (for O: partial sums are added up along the link).",
            "required": ["operand", "axes"],
            "additionalProperties": False,
            "properties": {
                "operand": {"enum": ["I", "W", "O"], "description": "I input, W weight, O output partial sums."},
                "axes": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "maxItems": 2,
                    "description": "One axis name (straight) or two (diagonal), e.g. [rows, cols].",
                },
                "energy_pj_per_byte": {"type": "number", "minimum": 0,
                                       "description": "Energy to move a byte over one link (default 0)."},
                "bandwidth_bytes_per_cycle": {"type": "number", "exclusiveMinimum": 0,
                                              "description": "Bytes per cycle of each link (default unlimited)."},
            },
        },
        "dma": {
            "type": "object",
            "description": "The DMA engine between main memory and the scratchpads.",
            "required": ["bandwidth_bytes_per_cycle"],
            "additionalProperties": False,
            "properties": {
                "bandwidth_bytes_per_cycle": {"type": "number", "exclusiveMinimum": 0},
                "latency_cycles": {"type": "number", "minimum": 0},
            },
        },
        "hardware_inline": {
            "type": "object",
            "description": "An accelerator written out; memories from main memory (kind dram) inwards.",
            "required": ["pe_array", "dma", "memories"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Accelerator name (default: custom)."},
                "description": {"type": "string"},
                "clock_mhz": {"type": "number", "exclusiveMinimum": 0, "description": "Clock (default 1000 MHz)."},
                "mac_energy_pj": {"type": "number", "minimum": 0},
                "pe_array": {"$ref": "#/$defs/pe_array"},
                "dma": {"$ref": "#/$defs/dma"},
                "memories": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/memory"}},
            },
        },
        "hardware_preset": {
            "type": "object",
            "description": "A built-in hardware preset (`dlaopt presets` lists them and their parameters).",
            "required": ["preset"],
            "additionalProperties": False,
            "properties": {
                "preset": {"type": "string", "minLength": 1, "description": "Preset name."},
                "params": _scalar_params("Parameters of the preset (e.g. spad_kb)."),
            },
        },
    }


def _problem_rules() -> list[dict[str, Any]]:
    rules = []
    for name, spec in PROBLEM_SPECS.items():
        rules.append({
            "if": {"properties": {"problem": {"const": name}}, "required": ["problem"]},
            "then": {
                "properties": {
                    "objective": {"enum": list(spec.objectives)},
                    "options": json.loads(json.dumps(spec.options_schema)),
                    "constraints": constraints_schema(spec.constraint_kinds),
                    **({"flexibility": json.loads(json.dumps(spec.flexibility_schema))}
                       if spec.flexibility_schema is not None else {}),
                },
                **({} if spec.flexibility_schema is not None else {"not": {
                    "required": ["flexibility"],
                    "description": "flexibility classes are mapping constraints (problem: mapping)"}}),
            },
        })
    return rules


def instance_schema() -> dict[str, Any]:
    """The full JSON Schema of an instance document (a fresh, JSON-serialisable dict)."""
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "dlaopt instance",
        "description": "One optimization instance: a problem, a workload and the hardware, with the objective and "
        "problem options.",
        "type": "object",
        "required": ["problem", "workload", "hardware"],
        "additionalProperties": False,
        "properties": {
            "problem": {"enum": list(PROBLEM_SPECS), "description": "The problem to solve."},
            "name": {"type": "string", "minLength": 1, "description": "Instance name (default: the file stem)."},
            "workload": {
                "type": "object",
                "description": "{zoo, params}, an inline workload {name, dtype_bytes, tensors, operators}, an ONNX "
                "model {onnx, batch, dims}, a job group {task, group_size, seed, batch}, an inline job table {jobs}, "
                "or for static allocation a buffer list {buffers} or a buffer CSV {csv}",
                "if": {"required": ["zoo"]},
                "then": {"$ref": "#/$defs/workload_zoo"},
                "else": {
                    "if": {"required": ["task"]},
                    "then": {"$ref": "#/$defs/workload_task"},
                    "else": {
                        "if": {"required": ["jobs"]},
                        "then": {"$ref": "#/$defs/workload_jobs"},
                        "else": {
                            "if": {"required": ["onnx"]},
                            "then": {"$ref": "#/$defs/workload_onnx"},
                            "else": {
                                "if": {"required": ["buffers"]},
                                "then": {"$ref": "#/$defs/workload_buffers"},
                                "else": {
                                    "if": {"required": ["csv"]},
                                    "then": {"$ref": "#/$defs/workload_csv"},
                                    "else": {"$ref": "#/$defs/workload_inline"},
                                },
                            },
                        },
                    },
                },
            },
            "hardware": {
                "type": "object",
                "description": "{preset, params} or an inline accelerator {name, pe_array, dma, memories, ...}; for "
                "multi-accelerator problems {platform, params} or an inline platform {accelerators, "
                "system_bandwidth_gbps}; for static allocation one memory {memory: {name, capacity_bytes, alignment}}",
                "if": {"required": ["preset"]},
                "then": {"$ref": "#/$defs/hardware_preset"},
                "else": {
                    "if": {"required": ["platform"]},
                    "then": {"$ref": "#/$defs/hardware_platform"},
                    "else": {
                        "if": {"required": ["accelerators"]},
                        "then": {"$ref": "#/$defs/platform_inline"},
                        "else": {
                            "if": {"required": ["memory"]},
                            "then": {"$ref": "#/$defs/hardware_memory"},
                            "else": {"$ref": "#/$defs/hardware_inline"},
                        },
                    },
                },
            },
            "objective": {"type": "string", "description": "One of the problem's objectives (default: its first)."},
            "options": {"type": "object", "description": "Problem options (defaults filled in)."},
            "constraints": {"type": "array", "description": "The user's constraints: typed records, each with a "
                            "kind of the problem's (see the README, 'Constraints')."},
            "flexibility": {"type": "object", "description": "Mapping only: a flexibility class (seed 001 Ch. 3, "
                            "Flexion) that expands to mapping constraints."},
        },
        "allOf": _problem_rules(),
        "$defs": _defs(),
    }


def schema_text() -> str:
    """The schema as it is shipped: indented JSON with a final newline."""
    return json.dumps(instance_schema(), indent=2) + "\n"


def write_schema(path: str | Path) -> Path:
    """Write :func:`instance_schema` to ``path`` (creating parent directories); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schema_text(), encoding="utf-8")
    return path


@cache
def instance_validator() -> Draft202012Validator:
    schema = instance_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


# ------------------------------------------------------------------------------------------------ error conversion
# An unknown key is usually the cause of a missing one at the same place (a misspelling): report it first.
_RELEVANCE = by_relevance(strong=frozenset({"additionalProperties"}))


def validate_against(
    validator: Draft202012Validator,
    doc: Any,
    *,
    file: str | None = None,
    prefix: Sequence[str | int] = (),
) -> None:
    """Validate ``doc``; the most relevant violation becomes an :class:`InputError` (path prefixed by ``prefix``)."""
    error = best_match(validator.iter_errors(doc), key=_RELEVANCE)
    if error is not None:
        raise schema_error_to_input_error(error, file=file, prefix=prefix, root=validator.schema)


def schema_error_to_input_error(
    error: ValidationError,
    *,
    file: str | None = None,
    prefix: Sequence[str | int] = (),
    root: Mapping[str, Any] | None = None,
) -> InputError:
    """A human, located :class:`InputError` for one ``jsonschema`` violation (``root``: the whole schema, used to
    suggest keys of the other form of an either/or mapping such as ``workload``)."""
    path = tuple(prefix) + tuple(error.absolute_path)
    node = _node_at(root, tuple(error.absolute_path)) if isinstance(root, Mapping) else None
    message, expected = _describe(error, path, node or {}, root or {})
    return InputError(message, file=file, path=path, expected=expected)


def _resolve(root: Mapping[str, Any], schema: Any) -> Mapping[str, Any]:
    """Follow local ``$ref`` s (``#/$defs/name``)."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/"):
        target: Any = root
        for part in schema["$ref"][2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        schema = target
    return schema if isinstance(schema, Mapping) else {}


def _branches(root: Mapping[str, Any], schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``schema`` and the subschemas that apply to the same value (then/else branches, allOf parts)."""
    out = [schema]
    for key in ("then", "else"):
        if key in schema:
            out.append(_resolve(root, schema[key]))
    for part in schema.get("allOf", []):
        out.append(_resolve(root, part))
    return out


def _node_at(root: Mapping[str, Any], path: tuple[str | int, ...]) -> Mapping[str, Any] | None:
    """The schema node of the value at ``path`` (the first that declares it, following refs and branches)."""
    node = _resolve(root, root)
    for part in path:
        found: Mapping[str, Any] | None = None
        for branch in _branches(root, node):
            if isinstance(part, str):
                child = branch.get("properties", {}).get(part, branch.get("additionalProperties"))
            else:
                prefix_items = branch.get("prefixItems", [])
                child = prefix_items[part] if part < len(prefix_items) else branch.get("items")
            if isinstance(child, Mapping):
                found = _resolve(root, child)
                break
        if found is None:
            return None
        node = found
    return node


def _all_keys(root: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    keys: list[str] = []
    for branch in _branches(root, node):
        keys += [k for k in branch.get("properties", {}) if k not in keys]
    return keys


_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "a boolean (true/false)",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def _label(path: Sequence[str | int]) -> str:
    """The name of the value at ``path`` for messages: its key, with any list indices after it (``shape[2]``)."""
    for i in range(len(path) - 1, -1, -1):
        if isinstance(path[i], str):
            return "'" + format_key_path(path[i:]) + "'"
    return "the document" if not path else "'" + format_key_path(path) + "'"


def _key(path: Sequence[str | int]) -> str:
    for part in reversed(path):
        if isinstance(part, str):
            return part
    return "value"


def _enum_noun(path: Sequence[str | int]) -> str:
    key = _key(path)
    if key == "kind":
        return "operator kind" if "operators" in path else "memory kind" if "memories" in path else key
    if key in ("role", "holds"):
        return "tensor role"
    if key == "access":
        return "scratchpad access"
    return key


def _type_name(kind: Any) -> str:
    kinds = [kind] if isinstance(kind, str) else list(kind)
    if "number" in kinds and "integer" in kinds:
        kinds.remove("integer")
    names = [_TYPE_NAMES.get(k, str(k)) for k in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _describe_value(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return repr(value)


def _describe(
    error: ValidationError, path: tuple[str | int, ...], node: Mapping[str, Any], root: Mapping[str, Any]
) -> tuple[str, str | None]:
    kw = error.validator
    value = error.instance
    rule = error.validator_value
    label = _label(path)
    if kw == "type":
        return f"{label} must be {_type_name(rule)}, got {_describe_value(value)}", None
    if kw in ("minItems", "maxItems") and "description" in error.schema:
        count = f"{len(value)} item(s)" if isinstance(value, list) else "a value"
        return f"{label} has {count}", str(error.schema["description"])
    if kw == "required" and isinstance(value, Mapping):
        missing = [k for k in rule if k not in value]
        either = node.get("description") if "if" in node else None
        if len(missing) == 1:
            return f"missing required key '{missing[0]}'", either
        return "missing required keys " + ", ".join(f"'{k}'" for k in missing), either
    if kw == "additionalProperties" and isinstance(value, Mapping):
        props = list(error.schema.get("properties", {}))
        extra = [k for k in value if k not in props]
        if extra:
            message = "unknown key " + ", ".join(f"'{k}'" for k in extra)
            others = [k for k in _all_keys(root, node) if k not in props]
            close = difflib.get_close_matches(str(extra[0]), props, n=1) or difflib.get_close_matches(
                str(extra[0]), others, n=1
            )
            if close:
                message += f"; did you mean '{close[0]}'?"
            expected = "one of: " + ", ".join(props) if props else "no keys"
            if others:
                expected += " (or, in the other form, " + ", ".join(others) + ")"
            return message, expected
    if kw == "enum":
        return f"unknown {_enum_noun(path)} {value!r}", "one of: " + ", ".join(str(v) for v in rule)
    if kw == "const":
        return f"{label} must be {rule!r}, got {value!r}", None
    if kw in ("minimum", "exclusiveMinimum"):
        what = "sizes" if _key(path) in _SIZE_KEYS else label
        if kw == "minimum" and rule == 1 and value <= 0:
            return f"{value} is {'negative' if value < 0 else 'zero'}: {what} must be positive", "a positive integer"
        if kw == "minimum" and rule >= 1:
            return f"{value} is too small: {what} must be at least {rule}", None
        if rule == 0:
            if value < 0:
                must = "non-negative" if kw == "minimum" else "positive"
                return f"{value} is negative: {what} must be {must}", None
            return f"{value} is zero: {what} must be positive", None
        return f"{value} is too small: {label} must be {'>' if kw == 'exclusiveMinimum' else '>='} {rule}", None
    if kw in ("maximum", "exclusiveMaximum"):
        return f"{value} is too large: {label} must be {'<' if kw == 'exclusiveMaximum' else '<='} {rule}", None
    if kw == "minItems":
        if not value:
            return f"{label} must not be empty", f"at least {rule} item(s)"
        return f"{label} has {len(value)} item(s), needs at least {rule}", None
    if kw == "maxItems":
        return f"{label} has {len(value)} items, allows at most {rule}", None
    if kw == "uniqueItems":
        return f"{label} lists the same value twice", "distinct values"
    if kw == "minLength":
        return f"{label} must not be empty", None
    if kw == "not" and isinstance(value, Mapping) and isinstance(rule, Mapping) and rule.get("required"):
        keys = [k for k in rule["required"] if k in value]
        return (f"key {', '.join(repr(k) for k in keys)} is not taken by problem {value.get('problem')!r}",
                str(rule.get("description")) if rule.get("description") else None)
    return error.message, None


if __name__ == "__main__":  # pragma: no cover - developer tool
    print(write_schema(SHIPPED_SCHEMA_PATH))
