"""Instance options and objectives of static memory allocation (buffers at offsets in one memory; import-light)."""

from __future__ import annotations

from typing import Any

OBJECTIVES: tuple[str, ...] = ("feasibility", "peak")
"""* ``feasibility`` — every buffer placed within the capacity (objective value 0 for every valid placement), the
  default;
* ``peak`` — the smallest peak address ``max offset + size`` (within the capacity when one is given)."""

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {},
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}
