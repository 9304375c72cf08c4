"""Instance options and objectives of the tensor-pinning problem (kept import-light for instance validation)."""

from __future__ import annotations

from typing import Any

OBJECTIVES: tuple[str, ...] = ("transfers", "dma_cycles", "thesis")
"""* ``transfers`` — bytes moved between main memory and the scratchpads (loads + stores), the default;
* ``dma_cycles`` — DMA time: every transfer costs the DMA's fixed latency plus its bytes over the DMA bandwidth;
* ``thesis`` — seed 000 §5.2.1: Σ_n Σ_k Σ_m S_n·|x[n,k,m+1] − x[n,k,m]| (entries and exits of every scratchpad)."""

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "oversize": {
            "enum": ["tile", "cap", "error"],
            "default": "tile",
            "description": "Operators whose operands cannot be placed in the scratchpads together: 'tile' rebuilds "
            "the graph into tile operators (seed 000 Fig. 6.1), 'cap' shrinks oversized tensors to the scratchpad "
            "size (the thesis' stop-gap, §6.3), 'error' rejects the instance.",
        },
        "chunk_fraction": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
            "default": 0.5,
            "description": "Target size of a tile's operand chunks as a fraction of the smallest scratchpad.",
        },
        "formulation": {
            "enum": ["gaps", "steps"],
            "default": "gaps",
            "description": "Exact model: 'gaps' (default) decides per use and per gap between uses; 'steps' is "
            "the thesis' x[n,k,m] per-step model (seed 000 §5.2). Both have the same optimum.",
        },
        "layer_tiles": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["block"],
                "properties": {
                    "block": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1},
                    "reduce": {"type": ["integer", "null"], "minimum": 1},
                },
            },
            "default": {},
            "description": "Operator name -> the on-chip tile a mapping chose for it ({block: one size per axis "
            "of its output, reduce: block of its reduction dimension}); with oversize 'tile', an operator that "
            "must be tiled gets chunks that are whole multiples of it whenever they fit (dlaopt compile passes "
            "the mapping stage's tiles).",
        },
        "compute_cycles": {
            "type": "object",
            "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
            "default": {},
            "description": "Operator name -> cycles with its operands on chip (e.g. the latency of its mapping), "
            "replacing the accelerator's peak-rate estimate; a tile gets its share of the operator's MACs.",
        },
        "pin_weights": {
            "type": "boolean",
            "default": True,
            "description": "Allow weights to stay resident between uses (OnSRAM never pins weights; shared "
            "weights such as an unrolled LSTM's do get reused).",
        },
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}
