"""Instance options and objectives of the multi-accelerator assignment problem (import-light)."""

from __future__ import annotations

from typing import Any

from dlaopt.specs.tuning import tuning_schema

OBJECTIVES: tuple[str, ...] = ("makespan", "mean_completion")
"""``makespan``: seconds until the whole group has finished — minimising it maximises the seed's objective,
throughput (total operations / makespan), which every result reports as well; ``mean_completion``: the mean of the
jobs' finishing times (seconds)."""

HEURISTIC_NAMES: tuple[str, ...] = ("magma", "herald", "ai-mt", "lpt", "random")

EXACT_LEVERS: dict[str, str] = {
    "relaxation_start": "Offer the fluid bound MILP's assignment (its jobs ordered several ways, the best by the "
    "fluid evaluator) as a schedule and as CP-SAT's warm start when it beats the heuristics'.",
    "local_search": "Improve the best schedule with a local search on the fluid evaluator (jobs moved and swapped, "
    "whole batches simulated at once, kicked when stuck) for 80 % of the time left after the bounds, before CP-SAT.",
    "configurations": "Add configuration rows to the fluid bound: the progress time spent in each combination of "
    "bandwidth levels (one per sub-accelerator) costs max(1, their sum), which bounds how well hungry and frugal "
    "jobs can be mixed.",
}
"""Levers of the exact method (``options.exact_tuning``, each on by default; all off is the method without them)."""

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
        "exact_tuning": tuning_schema(EXACT_LEVERS),
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}

_JOBS: dict[str, Any] = {
    "type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "uniqueItems": True,
    "description": "Job names, as the job table names them (an inline table's names; 'network/layer' or "
    "'network#k/layer' in a task group; 'network/layer' for a whole network).",
}
_ACCELERATORS: dict[str, Any] = {
    "type": "array", "minItems": 1, "uniqueItems": True,
    "items": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "integer", "minimum": 0}]},
    "description": "Sub-accelerators by name (dlaopt show lists a platform's), or by 0-based position.",
}
_JOB: dict[str, Any] = {"type": "string", "minLength": 1, "description": "A job name."}

CONSTRAINTS: dict[str, Any] = {
    "allowed": {
        "description": "The listed jobs run only on the listed sub-accelerators (e.g. 'job 7 runs on the big core').",
        "required": ["jobs", "accelerators"],
        "properties": {"jobs": _JOBS, "accelerators": _ACCELERATORS},
    },
    "forbidden": {
        "description": "The listed jobs never run on the listed sub-accelerators.",
        "required": ["jobs", "accelerators"],
        "properties": {"jobs": _JOBS, "accelerators": _ACCELERATORS},
    },
    "window": {
        "description": "Each listed job starts no earlier than release_us and finishes no later than deadline_us "
        "(one of them or both; microseconds from the start of the group, on the evaluator's timeline: a "
        "sub-accelerator whose next job is not released yet idles until it is).",
        "required": ["jobs"],  # and release_us or deadline_us or both (checked when the instance is prepared)
        "properties": {
            "jobs": _JOBS,
            "release_us": {"type": "number", "minimum": 0, "description": "Earliest start (µs)."},
            "deadline_us": {"type": "number", "exclusiveMinimum": 0, "description": "Latest finish (µs)."},
        },
    },
    "precedence": {
        "description": "Job 'after' starts no earlier than job 'before' has finished (its sub-accelerator idles "
        "until then), as the option precedence does for a tenant's consecutive layers.",
        "required": ["before", "after"],
        "properties": {"before": _JOB, "after": _JOB},
    },
    "colocate": {
        "description": "The listed jobs all run on the same sub-accelerator (any one).",
        "required": ["jobs"],
        "properties": {"jobs": {**_JOBS, "minItems": 2}},
    },
}
"""The user constraints of the problem (the instance's ``constraints:`` list), enforced by the CP-SAT model, every
heuristic and the fluid evaluator; an infeasible combination is reported by position and kind."""
