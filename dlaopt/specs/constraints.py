"""User constraints as the instance declares them: a ``constraints:`` list of typed records, each with a ``kind``.

This module holds what every problem shares — the record (:class:`Constraint`), the layer/operator selector of the
mapping-style constraints, and the JSON Schema of a problem's constraint list built from the kinds its spec module
declares (``CONSTRAINTS``: kind → JSON Schema of the record's other keys). What a kind *means* is the problem's:
its formulation turns the records into typed data when it prepares an instance, enforces them in its exact models
and heuristics, and its independent evaluator names each one a solution breaks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlaopt.errors import InputError

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Constraint:
    """One declared constraint: its ``kind``, its keys (``params``, without ``kind`` and ``name``) and where it was
    written (``path``: ``("constraints", i)`` for the i-th item of the list, ``("flexibility", axis)`` for one that a
    flexibility class expands to)."""

    kind: str
    params: Mapping[str, Any]
    path: KeyPath
    name: str | None = None
    doc: Mapping[str, Any] = field(default_factory=dict)  # the record as written (for the solution document)

    @property
    def label(self) -> str:
        """How reports name it: ``constraints[2] (pin 'x')``, by position and kind (and its name, if it has one)."""
        where = self.path[0] + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path[1:])
        return f"{where} ({self.kind}{f' {self.name!r}' if self.name else ''})"

    def at(self, *keys: str | int) -> KeyPath:
        """The key path of one of its keys, for located errors."""
        return (*self.path, *keys)

    def error(self, message: str, *keys: str | int, expected: str | None = None) -> InputError:
        """An :class:`InputError` located at this constraint (or one of its keys)."""
        return InputError(f"{self.label}: {message}", path=self.at(*keys), expected=expected)

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.label, **json.loads(json.dumps(dict(self.doc) or {"kind": self.kind, **self.params}))}


def parse_constraints(items: Sequence[Mapping[str, Any]] | None) -> tuple[Constraint, ...]:
    """The records of an instance's (schema-validated) ``constraints`` list."""
    out = []
    for i, item in enumerate(items or ()):
        params = {k: v for k, v in item.items() if k not in ("kind", "name")}
        out.append(Constraint(str(item["kind"]), params, ("constraints", i), item.get("name"), dict(item)))
    return tuple(out)


def by_kind(constraints: Sequence[Constraint], *kinds: str) -> list[Constraint]:
    return [c for c in constraints if c.kind in kinds]


# ------------------------------------------------------------------------------------------------ schema
NAME_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1,
                               "description": "A name for the constraint, used when it is reported."}

LAYER_SELECTOR: dict[str, Any] = {
    "layers": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "uniqueItems": True,
               "description": "Operator names it applies to (default: every layer the problem maps)."},
    "op_kinds": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "uniqueItems": True,
                 "description": "Operator kinds it applies to (conv2d, depthwise_conv2d, matmul, ...)."},
}


def fixed_or_bounded(description: str) -> dict[str, Any]:
    """The schema of a positive integer that a constraint fixes (``4``) or bounds (``{min: 2, max: 16}``)."""
    return {
        "anyOf": [
            {"type": "integer", "minimum": 1},
            {"type": "object", "additionalProperties": False, "minProperties": 1,
             "properties": {"min": {"type": "integer", "minimum": 1}, "max": {"type": "integer", "minimum": 1}}},
        ],
        "description": description,
    }


def constraints_schema(kinds: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of a problem's ``constraints`` list: each item an object whose ``kind`` is one of ``kinds``
    and whose other keys follow that kind's schema (``{"properties", "required", "description"}``)."""
    if not kinds:
        return {"type": "array", "maxItems": 0, "description": "no constraints: this problem takes none"}
    rules = []
    for kind, spec in kinds.items():
        rules.append({
            "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
            "then": {
                "description": spec.get("description", ""),
                "required": ["kind", *spec.get("required", [])],
                "additionalProperties": False,
                "properties": {"kind": {"const": kind}, "name": NAME_SCHEMA,
                               **json.loads(json.dumps(spec.get("properties", {})))},
                **({"anyOf": spec["anyOf"]} if "anyOf" in spec else {}),
            },
        })
    return {
        "type": "array",
        "description": "Constraints the solution must meet (see the README, 'Constraints'). Every exact model, "
        "heuristic and the evaluator enforce them; an infeasible combination is reported by position and kind.",
        "items": {
            "type": "object",
            "required": ["kind"],
            "properties": {"kind": {"enum": list(kinds)}},
            "allOf": rules,
        },
    }


def selected(constraint: Constraint, name: str, op_kind: str) -> bool:
    """Whether a layer/operator selector (``layers``, ``op_kinds``; neither means all) picks operator ``name`` of
    kind ``op_kind``."""
    layers = constraint.params.get("layers")
    kinds = constraint.params.get("op_kinds")
    return (layers is None or name in layers) and (kinds is None or op_kind in kinds)


__all__ = ["LAYER_SELECTOR", "NAME_SCHEMA", "Constraint", "KeyPath", "by_kind", "constraints_schema",
           "fixed_or_bounded", "parse_constraints", "selected"]
