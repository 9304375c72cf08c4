"""Instance options and objectives of the mapping problem (kept import-light for instance validation)."""

from __future__ import annotations

from typing import Any

OBJECTIVES: tuple[str, ...] = ("energy", "latency", "edp")
"""Per layer, from the cost model (:mod:`dlaopt.formulations.mapping.cost`): ``energy`` in pJ, ``latency`` in cycles,
``edp`` = energy x latency. For several layers: total energy, total latency (layers run one after another), and the
sum of the layers' EDPs (each layer mapped for its own EDP; the product of the totals is reported as a metric)."""

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "layers": {
            "type": ["array", "null"],
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
            "default": None,
            "description": "Names of the conv / depthwise / matmul operators to map (default: all of them). Layers "
            "of identical shape are solved once.",
        },
        "padding": {
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": 1},
            "default": {},
            "description": "Round loop dimensions up to a multiple, e.g. {P: 8}: friendlier factors at the price "
            "of wasted work (counted in energy; utilization uses the real MACs).",
        },
        "workers": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Processes mapping layers in parallel (0: one per CPU, at most one per unique layer).",
        },
        "random_samples": {
            "type": "integer",
            "minimum": 1,
            "default": 10000,
            "description": "Samples of the 'random' mapper per layer (seed 001 §4.4.1 uses 10K for every method).",
        },
        "ga_population": {"type": "integer", "minimum": 2, "default": 200,
                          "description": "GAMMA population (seed 001 §4.4.1: 200)."},
        "ga_generations": {"type": "integer", "minimum": 1, "default": 50,
                           "description": "GAMMA generations (seed 001 §4.4.1: 50)."},
        "warm_start": {
            "type": "array",
            "items": {"type": "string"},
            "default": ["nvdla", "eyeriss", "shidiannao"],
            "description": "Heuristics whose best mapping warm-starts the exact method.",
        },
        "exhaustive_limit": {
            "type": "integer",
            "minimum": 1,
            "default": 2000000,
            "description": "The 'exhaustive' method refuses layers with more mappings than this.",
        },
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}
