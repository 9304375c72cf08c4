"""Instance options and objectives of the memory-bank mapping problem (import-light)."""

from __future__ import annotations

from typing import Any

OBJECTIVES: tuple[str, ...] = ("copy_cost",)
"""``copy_cost`` = on-chip relayout copy bytes + ``offchip_weight`` × (off-chip relayout copy bytes + spill bytes)."""

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "offchip_weight": {
            "type": "number",
            "minimum": 0,
            "default": 4.0,
            "description": "Weight of a byte moved through main memory against a byte copied between banks on chip.",
        },
        "functional_check_limit": {
            "type": "integer",
            "minimum": 0,
            "default": 2000000,
            "description": "The evaluator also runs the functional check (banked numpy execution compared with a "
            "plain one) when the workload has at most this many elements in all its tensors; 0 disables it.",
        },
        "off_chip_tensors": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
            "default": [],
            "description": "Produced tensors that live in main memory between their producer and consumers (e.g. "
            "decided by a tensor-pinning stage): they are off chip in every solution; bank mapping lays out what "
            "stays on chip. Each one spills (written once, read back by every consuming operator) and its relayout "
            "copies go through main memory, whatever its layout. Graph inputs and weights are not allowed: they are "
            "loaded from main memory by every mapping and never spill in this model.",
        },
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}

_TENSOR: dict[str, Any] = {"type": "string", "minLength": 1, "description": "A tensor of the workload, by name."}
_LAYOUT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["bank_axis"],
    "description": "A bank layout as the solution document writes it (solution.layouts): the tensor's bank axis "
    "(element i along it lives in bank i mod B), and optionally its shape (checked against the tensor's).",
    "properties": {
        "bank_axis": {"type": "integer", "minimum": 0, "description": "The tensor's bank axis (0-based)."},
        "shape": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1,
                  "description": "The tensor's shape (as a solution writes it); it must be the tensor's."},
    },
}

CONSTRAINTS: dict[str, Any] = {
    "layout": {
        "description": "A fixed layout for a tensor (e.g. the one a producer outside the instance already chose): "
        "the tensor is held on chip, in the banks, with this bank axis. It must fit a bank in that layout and may "
        "not be off chip; the operator producing it must write it in that layout (its consumers may still read "
        "copies in other layouts).",
        "required": ["tensor", "layout"],
        "properties": {"tensor": _TENSOR, "layout": _LAYOUT},
    },
    "layouts": {
        "description": "The layouts a tensor may take: it is held on chip, in the banks, in one of them (those it "
        "does not fit a bank in are out).",
        "required": ["tensor", "allowed"],
        "properties": {"tensor": _TENSOR, "allowed": {"type": "array", "minItems": 1, "items": _LAYOUT}},
    },
    "off_chip": {
        "description": "A produced tensor that stays off chip (in main memory between its producer and its "
        "consumers), as option off_chip_tensors: it spills and its relayout copies go through main memory. Graph "
        "inputs and weights are loaded from main memory by every mapping and are not allowed.",
        "required": ["tensor"],
        "properties": {"tensor": _TENSOR},
    },
}
