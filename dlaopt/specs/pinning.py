"""Instance options and objectives of the tensor-pinning problem (kept import-light for instance validation)."""

from __future__ import annotations

from typing import Any

from dlaopt.specs.tuning import tuning_schema

OBJECTIVES: tuple[str, ...] = ("transfers", "dma_cycles", "thesis")
"""* ``transfers`` — bytes moved between main memory and the scratchpads (loads + stores), the default;
* ``dma_cycles`` — DMA time: every transfer costs the DMA's fixed latency plus its bytes over the DMA bandwidth;
* ``thesis`` — seed 000 §5.2.1: Σ_n Σ_k Σ_m S_n·|x[n,k,m+1] − x[n,k,m]| (entries and exits of every scratchpad)."""

EXACT_LEVERS: dict[str, str] = {
    "pattern_cuts": "identical scratchpads: packing cuts from the patterns one scratchpad can hold, separated where "
    "a step's residents do not pack (LP rounds, then MILP rounds of the merged-scratchpad model)",
    "assignment": "identical scratchpads: solve the merged-scratchpad residency and assign its pieces to the "
    "scratchpads (first fit, else CP-SAT) instead of the symmetric per-scratchpad model; optimal when it assigns",
    "split_assignment": "assign the pieces of the schedule that no residency crosses one part at a time",
    "lazy_rows": "identical scratchpads: the merged model's packing rows (Fekete-Schepers and pattern cuts) enter "
    "only at the steps where a solution violates them, over LP rounds of one warm LP; off: on every step where they "
    "can bind, the model rebuilt each round",
    "race": "when the per-scratchpad model is still needed and two cores are there, HiGHS and CP-SAT solve it side "
    "by side (one process each) and the better answer and bound are kept",
}

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
            "the thesis' x[n,k,m] per-step model (seed 000 §5.2). Both have the same optimum. Under a dma_cap "
            "constraint the per-step model is used whatever this says: the per-gap model fixes the step of every "
            "transfer, and a cap per step makes prefetching and late write-back worth having.",
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
        "addresses": {
            "type": "boolean",
            "default": True,
            "description": "Give every solution concrete scratchpad addresses: an offset per maximal residency run "
            "(consecutive steps in one scratchpad), aligned, within the capacity, never overlapping another buffer "
            "resident at the same time. Heuristic plans whose residency does not fit in addresses are repaired "
            "(idle stretches between uses dropped); the exact method returns the optimum among address-feasible "
            "plans. false: residency only (capacity sums), without addresses.",
        },
        "alignment_bytes": {
            "type": "integer",
            "minimum": 1,
            "maximum": 2**40,
            "default": 1,
            "description": "Every offset is a multiple of this many bytes (with options.addresses).",
        },
        "exact_tuning": tuning_schema(EXACT_LEVERS),
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}

_TENSOR: dict[str, Any] = {
    "type": "string", "minLength": 1,
    "description": "A tensor of the workload, by name. When options.oversize 'tile' splits it into chunks, the "
    "constraint applies to every chunk (each over its own lifetime)."}
_MEMORY: dict[str, Any] = {"type": "string", "minLength": 1,
                           "description": "A scratchpad of the accelerator, by name (dlaopt show lists them)."}
_STEP: dict[str, Any] = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}],
                         "description": "An operator: its index in schedule order (0 = the first operator of the "
                         "workload), or its name."}

CONSTRAINTS: dict[str, Any] = {
    "pin": {
        "description": "The tensor is in this scratchpad during the steps of the operators 'steps' = [first, last] "
        "(inclusive; every tile step of a tiled operator) that fall within its lifetime, or, without 'steps', its "
        "whole lifetime: from its production (or first use) to its last use, idle steps included. A pin names "
        "steps the tensor is alive at; it also holds a weight resident there when options.pin_weights is false.",
        "required": ["tensor", "memory"],
        "properties": {
            "tensor": _TENSOR,
            "memory": _MEMORY,
            "steps": {"type": "array", "items": _STEP, "minItems": 2, "maxItems": 2,
                      "description": "[first, last] operators, inclusive, in schedule order."},
        },
    },
    "forbid": {
        "description": "The tensor is never in this scratchpad.",
        "required": ["tensor", "memory"],
        "properties": {"tensor": _TENSOR, "memory": _MEMORY},
    },
    "off_chip": {
        "description": "The tensor is never kept on chip: it lives in main memory. Every operand is in a "
        "scratchpad while its operator runs (seed 000 §5.2.2), so the tensor is staged into a scratchpad for each "
        "step that uses it and only then, and every use goes through main memory: each use loads it (unless that "
        "step produces it) and each write is stored back after its step (unless nothing reads it later and it is "
        "not a graph output), even between two consecutive uses.",
        "required": ["tensor"],
        "properties": {"tensor": _TENSOR},
    },
    "dma_cap": {
        "description": "At most this many bytes move between main memory and the scratchpads in any one step. "
        "A step's transfers are the loads of the tensors that enter a scratchpad for it and the stores of the "
        "tensors written back after it (an exit, or a graph output's final store after its last use).",
        "required": ["bytes"],
        "properties": {"bytes": {"type": "integer", "minimum": 1}},
    },
}
