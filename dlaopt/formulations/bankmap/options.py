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
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}
