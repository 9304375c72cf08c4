"""Instance options and objectives of the multi-accelerator assignment problem (import-light)."""

from __future__ import annotations

from typing import Any

OBJECTIVES: tuple[str, ...] = ("makespan", "mean_completion")
"""``makespan``: seconds until the whole group has finished — minimising it maximises the seed's objective,
throughput (total operations / makespan), which every result reports as well; ``mean_completion``: the mean of the
jobs' finishing times (seconds)."""

HEURISTIC_NAMES: tuple[str, ...] = ("magma", "herald", "ai-mt", "lpt", "random")

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "precedence": {
            "type": "boolean",
            "default": False,
            "description": "Keep each tenant's layer order (a job starts once the tenant's previous layer in the "
            "group has finished), as a Herald-style user needs; MAGMA's groups are dependency-free.",
        },
        "cache_dir": {
            "type": ["string", "null"],
            "default": None,
            "description": "Folder for the job analysis cache (no-stall latency and bandwidth per job shape and "
            "sub-accelerator); null: in memory only.",
        },
        "magma_population": {"type": "integer", "minimum": 4, "default": 100,
                             "description": "MAGMA individuals per generation (seed 001 §7.3.2: 100)."},
        "magma_epochs": {"type": "integer", "minimum": 1, "default": 100,
                         "description": "MAGMA generations (seed 001 §7.3.2: 100, i.e. 10K samples)."},
        "exact_time_limit": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 30,
            "description": "Seconds for the exact method when no --time-limit (or deterministic limit) is given: "
            "CP-SAT rarely proves a 100-job group optimal, and the fluid bound is proved separately.",
        },
        "warm_start": {
            "type": "array",
            "items": {"enum": list(HEURISTIC_NAMES)},
            "default": ["magma", "herald", "ai-mt", "lpt", "random"],
            "description": "Heuristics whose best schedule warm-starts the exact method (and is kept if CP-SAT finds "
            "nothing better by the fluid evaluator).",
        },
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}
