"""Instance options and objectives of the systolic scheduling / co-design problem (import-light)."""

from __future__ import annotations

from typing import Any

from dlaopt.specs.constraints import LAYER_SELECTOR, fixed_or_bounded

SCHEDULE_NAMES: tuple[str, ...] = ("XYZiZo", "XZiYZo", "XYZoZi", "XZoYZi", "ZiXYZo")

OBJECTIVES: tuple[str, ...] = ("ed", "energy", "delay", "e2d", "ed2", "network_ed")
"""Seed 003's figures of merit, each the sum over layers of the layer's figure (``ed`` = Σ E_l·D_l, energy in J,
delay in cycles per image); ``network_ed`` is the true network product (Σ E_l)·(Σ D_l)."""

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "codesign": {
            "type": "boolean",
            "default": False,
            "description": "Choose the hardware too: J, K and the three SRAM sizes from the design space (the "
            "instance's hardware then only supplies bit widths and DRAM bandwidth).",
        },
        "design_space": {
            "type": "object",
            "additionalProperties": False,
            "default": {},
            "properties": {
                "area_budget_mm2": {"type": "number", "exclusiveMinimum": 0},
                "min_pe": {"type": "integer", "minimum": 1},
                "pe_step": {"type": "integer", "minimum": 1},
                "min_sram_kb": {"type": "integer", "minimum": 1},
                "aspect_min": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "description": "Seed 003 §4.2 grid (defaults: 16 mm², J and K from 8 in steps of 2, SRAMs from 4 kB, "
            "min(J,K) >= 0.5·max(J,K)).",
        },
        "schedules": {
            "type": "array",
            "items": {"enum": list(SCHEDULE_NAMES)},
            "minItems": 1,
            "uniqueItems": True,
            "default": list(SCHEDULE_NAMES),
            "description": "The schedules the hardware supports.",
        },
        "max_schedules": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "At most this many distinct schedules over the whole network (control-logic limit).",
        },
        "fc_batch": {
            "type": "integer",
            "minimum": 1,
            "default": 16,
            "description": "FC layers run on this many images as a 1×1 convolution; figures are per image.",
        },
        "reference_fc_compute": {
            "type": "boolean",
            "default": False,
            "description": "Count a batched FC layer's MAC and register energy for the whole batch, as the "
            "published model does (true reproduces seed 003's tables; false is per image).",
        },
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}

_BOUND: dict[str, Any] = fixed_or_bounded("A fixed value, or {min, max} bounds on it (inclusive).")

CONSTRAINTS: dict[str, Any] = {
    "schedules": {
        "description": "The schedules (seed 003's branches) the selected layers may run; several such constraints "
        "on one layer intersect. Names as in options.schedules (the lower-case spelling of the fixed-<schedule> "
        "methods is accepted too).",
        "required": ["allowed"],
        "properties": {
            **LAYER_SELECTOR,
            "allowed": {"type": "array", "minItems": 1, "uniqueItems": True,
                        "items": {"enum": [*SCHEDULE_NAMES, *(s.lower() for s in SCHEDULE_NAMES)]}},
        },
    },
    "array": {
        "description": "The PE array's dimensions, fixed or bounded (at least one of them): rows J and columns K "
        "(seed 003's J x K). "
        "Under co-design they restrict the design space; otherwise the instance's array must meet them.",
        "properties": {"rows": _BOUND, "cols": _BOUND},
    },
    "sram": {
        "description": "On-chip SRAM sizes in kB, fixed or bounded (at least one of seed 003's fSRAM, iSRAM, pSRAM: "
        "the filter, ifmap and psum SRAMs). Under co-design they restrict the design space; otherwise the "
        "instance's SRAMs must meet them.",
        "properties": {"fSRAM": _BOUND, "iSRAM": _BOUND, "pSRAM": _BOUND},
    },
}
