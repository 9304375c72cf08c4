"""The ``exact_tuning`` option every problem with a tunable exact method shares: one boolean per lever of the exact
method (a bound, a cut family, a decomposition, a warm start, a cache …), each on by default.

A lever never changes what is optimal, only how fast it is proven: switching one off reproduces the exact method
without it (the scale benchmark measures each problem with and without them in one run). A problem's spec module
declares its levers (``EXACT_LEVERS``: name → what it does) and puts :func:`tuning_schema` under
``options.exact_tuning``; its formulation reads them with :func:`levers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def tuning_schema(levers: Mapping[str, str]) -> dict[str, Any]:
    """The JSON Schema of ``options.exact_tuning`` for a problem with these levers (name → description)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {name: {"type": "boolean", "default": True, "description": text}
                       for name, text in levers.items()},
        "default": {},
        "description": "Levers of the exact method, each on by default; false switches one off (the optimum is "
        "the same, only the time to prove it changes): " + ", ".join(levers) + ".",
    }


def levers(options: Mapping[str, Any], declared: Mapping[str, str]) -> dict[str, bool]:
    """Every declared lever's state under an instance's options (missing ones on)."""
    given = options.get("exact_tuning") or {}
    return {name: bool(given.get(name, True)) for name in declared}


def all_off(declared: Mapping[str, str]) -> dict[str, bool]:
    """``exact_tuning`` with every lever off: the exact method as it runs without any of them."""
    return dict.fromkeys(declared, False)


__all__ = ["all_off", "levers", "tuning_schema"]
