"""Instance options and objectives of operator fusion (seed 001 Appendix A: FLAT fused attention, and fusion-group
selection over a network) (import-light)."""

from __future__ import annotations

from typing import Any

OBJECTIVES: tuple[str, ...] = ("latency", "energy", "offchip")
"""Of the whole workload (its mappable operators, and the other operators either absorbed in a fused group as
in-place work or run as passes of their own): ``latency`` in cycles (operators and outer iterations run one after
another), ``energy`` in pJ, ``offchip`` the bytes read from and written to main memory (ties broken by latency)."""

GRANULARITIES: tuple[str, ...] = ("any", "M", "B", "H", "R")

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "groups": {
            "anyOf": [
                {"const": "auto"},
                {"type": "array", "minItems": 1,
                 "items": {"type": "array", "minItems": 1, "uniqueItems": True,
                           "items": {"type": "string", "minLength": 1}}},
            ],
            "default": "auto",
            "description": "auto: the fusion groups are chosen (an exact cover of the mappable operators by chains "
            "of at most max_group of them); or a list of chains of conv / matmul operator names, in execution "
            "order: the only groups that may be fused (each fused as a whole, or its operators run layer by layer, "
            "whichever is better; operators listed nowhere run layer by layer).",
        },
        "max_group": {
            "type": "integer", "minimum": 1, "maximum": 8, "default": 3,
            "description": "The most mappable operators in one candidate group (groups: auto).",
        },
        "staging": {
            "type": ["string", "null"], "minLength": 1, "default": None,
            "description": "The on-chip memory the intermediates of a fused group stay in (one instance, keeping "
            "every operand kind an intermediate plays); default the outermost such memory.",
        },
        "buffering": {
            "enum": [1, 2], "default": 2,
            "description": "Buffers per operand tile at the staging memory: 2 doubles the room the operators' own "
            "tiles take (FLAT Table A.1: operands double-buffered, the intermediate tile not).",
        },
        "granularity": {
            "enum": list(GRANULARITIES), "default": "any",
            "description": "The outer tiles of an attention group (FLAT §A.2.3): any divisor tiling, or only M-Gran "
            "(whole batch and heads), B-Gran (one sample's heads), H-Gran (one head) or R-Gran (one head, a divisor "
            "of the query rows). Groups without a softmax intermediate take every divisor tiling.",
        },
        "heads": {
            "type": ["integer", "null"], "minimum": 1, "default": None,
            "description": "Attention heads folded into the batch dim of the logit / attend matmuls (for FLAT's "
            "B-Gran and H-Gran); default the workload's own 'heads' parameter (zoo transformers), else 1.",
        },
        "entry_time_limit": {
            "type": ["number", "null"], "exclusiveMinimum": 0, "default": 60.0,
            "description": "Seconds for each operator's inner mapping MILP in the exact method (a solve cut short "
            "keeps its gap and the result says so).",
        },
        "exhaustive_limit": {
            "type": "integer", "minimum": 1, "default": 200000,
            "description": "The 'exhaustive' method refuses a group with more combinations of inner mappings than "
            "this (per outer tile).",
        },
        "random_samples": {
            "type": "integer", "minimum": 1, "default": 300,
            "description": "Samples of the 'random' inner mapper per operator and outer tile.",
        },
        "ga_population": {"type": "integer", "minimum": 2, "default": 20,
                          "description": "GAMMA population of the 'ga' inner mapper (per operator and outer tile)."},
        "ga_generations": {"type": "integer", "minimum": 1, "default": 10,
                           "description": "GAMMA generations of the 'ga' inner mapper."},
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}
