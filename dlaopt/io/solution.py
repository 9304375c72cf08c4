"""Solution documents: an envelope naming the problem, the instance, the method and the objective, around a
problem-specific ``solution`` payload (parsed by the problem's ``solution_from_dict``)::

    problem: pinning
    instance: resnet50-smaug-3x256k
    method: milp
    objective: transfers
    objective_value: 123456.0      # or null when there is none
    solution: {...}

Other top-level keys (status, timings, evaluation, ...) are kept as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from dlaopt.io.document import load_mapping
from dlaopt.io.instance import save_mapping
from dlaopt.io.schema import SCHEMA_DIALECT, validate_against

SOLUTION_ENVELOPE_KEYS: tuple[str, ...] = ("problem", "instance", "method", "objective", "objective_value", "solution")


def solution_envelope_schema() -> dict[str, Any]:
    """The JSON Schema of a solution document's envelope (the payload is checked by the problem)."""
    name = {"type": "string", "minLength": 1}
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "dlaopt solution",
        "type": "object",
        "required": list(SOLUTION_ENVELOPE_KEYS),
        "properties": {
            "problem": {**name, "description": "The problem the solution is for."},
            "instance": {**name, "description": "Name of the instance solved."},
            "method": {**name, "description": "The method (heuristic or exact model) that produced it."},
            "objective": {**name, "description": "The objective the value refers to."},
            "objective_value": {"type": ["number", "null"], "description": "Objective value, null if none."},
            "solution": {"type": "object", "description": "The problem-specific solution payload."},
        },
    }


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(solution_envelope_schema())


def validate_solution_document(doc: Any, *, source: str | None = None) -> dict[str, Any]:
    """Check the envelope of ``doc``; a violation is an :class:`~dlaopt.errors.InputError` with file and key."""
    validate_against(_validator(), doc, file=source)
    return dict(doc)


def load_solution_document(path: str | Path) -> dict[str, Any]:
    """Load a solution document (JSON by a ``.json`` suffix, else YAML) and check its envelope."""
    doc = load_mapping(path, what="a solution (keys " + ", ".join(SOLUTION_ENVELOPE_KEYS) + ")")
    return validate_solution_document(doc, source=str(path))


def save_solution_document(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write a solution document as JSON (``.json``) or YAML (anything else); returns the path."""
    return save_mapping(doc, path)
