"""Instance options and objectives of hardware–mapping co-design (seed 001: DiGamma, Chapter 6; ConfuciuX, Chapter 8)
(import-light)."""

from __future__ import annotations

from typing import Any

from dlaopt.specs.constraints import LAYER_SELECTOR, fixed_or_bounded

OBJECTIVES: tuple[str, ...] = ("latency", "energy", "edp")
"""Per-layer figures (cycles, pJ, pJ·cycles) summed over the layers — or, for ``latency`` with ``aggregate: max``,
the slowest layer (a layer-pipelined design's throughput is set by its slowest stage)."""

DATAFLOWS: tuple[str, ...] = ("free", "nvdla", "eyeriss", "shidiannao")

_LEVELS: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "maxItems": 4097},
        {"type": "object", "additionalProperties": False, "required": ["min", "max"],
         "properties": {"min": {"type": "integer", "minimum": 0}, "max": {"type": "integer", "minimum": 0},
                        "step": {"type": "integer", "minimum": 1}, "ratio": {"type": "number", "exclusiveMinimum": 1}}},
    ],
    "description": "A list of values, or a range {min, max, step} (arithmetic) or {min, max, ratio} (geometric).",
}

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "deployment": {
            "enum": ["ls", "lp"],
            "default": "ls",
            "description": "ls (layer-sequential): one design runs every layer; lp (layer-pipelined): every layer "
            "gets its own design and the budget caps their sum (seed 001 §8.1.1).",
        },
        "aggregate": {
            "enum": ["sum", "max"],
            "default": "sum",
            "description": "How per-layer figures combine: sum, or max (the slowest pipeline stage; with lp).",
        },
        "dataflow": {
            "enum": list(DATAFLOWS),
            "default": "free",
            "description": "free: every layer's mapping is optimised with the hardware (DiGamma); nvdla / eyeriss / "
            "shidiannao: the mapping is the fixed dataflow's, tiles chosen greedily (ConfuciuX's styles dla, eye, "
            "shi; DiGamma's HW-opt).",
        },
        "design_space": {
            "type": "object",
            "additionalProperties": False,
            "default": {},
            "properties": {
                "rows": _LEVELS, "cols": _LEVELS, "l1_bytes": _LEVELS, "l2_bytes": _LEVELS,
                "min_pes": {"type": "integer", "minimum": 1},
                "max_pes": {"type": "integer", "minimum": 1},
            },
            "description": "The grid: PE-array rows and columns (one row: a 1-D array), L1 bytes per PE, L2 bytes "
            "(0: no L2); points with rows x cols outside [min_pes, max_pes] are left out. Missing axes keep the "
            "template's value.",
        },
        "budget": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "default": {},
            "properties": {
                "area_mm2": {"type": "number", "exclusiveMinimum": 0},
                "power_mw": {"type": "number", "exclusiveMinimum": 0},
                "area_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "power_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            },
            "description": "Caps on the design's area (PEs + L1 + L2, seed 001 §6.1.2: 0.2 mm² edge, 7.0 mm² "
            "cloud) and power; a fraction is of the consumption with every layer on the largest point (Table 8.2: "
            "0.5 cloud, 0.1 IoT, 0.05 IoTx). LS caps the design, LP the sum over layers.",
        },
        "technology": {
            "enum": ["maestro-dse", "maestro-2019"],
            "default": "maestro-dse",
            "description": "Area and power figures (dlaopt.hardware.area).",
        },
        "entry_time_limit": {
            "type": ["number", "null"],
            "exclusiveMinimum": 0,
            "default": 60.0,
            "description": "Seconds for each per-layer mapping MILP of the exact method with free mappings (an entry "
            "cut short keeps its gap and the final bound says so).",
        },
        "workers": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Worker processes computing table entries (0: one per CPU).",
        },
        "search": {
            "type": "object",
            "additionalProperties": False,
            "default": {},
            "properties": {
                "samples": {"type": "integer", "minimum": 1,
                            "description": "Designs a search evaluates (digamma: 40,000 as in §6.3.1; random, "
                            "ga; mapping-opt: mappings per layer)."},
                "epochs": {"type": "integer", "minimum": 1,
                           "description": "ConfuciuX's RL episodes (5,000 as in §8.2.1)."},
                "generations": {"type": "integer", "minimum": 1,
                                "description": "Generations of ConfuciuX's fine-tuning GA (2,000 as in §8.2.5)."},
            },
            "description": "Budgets of the search methods (the seed's settings by default).",
        },
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}

_BOUND: dict[str, Any] = fixed_or_bounded("A fixed value, or {min, max} bounds on it (inclusive).")

CONSTRAINTS: dict[str, Any] = {
    "design": {
        "description": "Restricts the design points the selected layers may use: PE-array rows, cols, PE count, "
        "L1 bytes per PE and L2 bytes, each fixed or bounded (at least one). With ls every layer shares the point, "
        "so a restriction on some layers restricts the design.",
        "properties": {**LAYER_SELECTOR, "rows": _BOUND, "cols": _BOUND, "pes": _BOUND, "l1_bytes": _BOUND,
                       "l2_bytes": _BOUND},
        "anyOf": [{"required": [k]} for k in ("rows", "cols", "pes", "l1_bytes", "l2_bytes")],
    },
    "layer_cap": {
        "description": "Caps the objective's per-layer figure (cycles, pJ or pJ·cycles) of the selected layers, "
        "e.g. a pipeline stage's latency.",
        "required": ["max"],
        "properties": {**LAYER_SELECTOR, "max": {"type": "number", "exclusiveMinimum": 0}},
    },
}
