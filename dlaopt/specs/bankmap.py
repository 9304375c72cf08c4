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
