"""The problems dlaopt solves, each a :class:`~dlaopt.formulations.base.Problem` in ``dlaopt.formulations.<name>``:
its data, heuristics, models and independent evaluator. What an instance of each may say (objectives, options) is
the catalogue :mod:`dlaopt.specs`; :func:`get_problem` imports and builds the full problem object on demand."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from dlaopt.specs import problem_spec


@cache
def get_problem(name: str) -> Any:
    """The full Problem object for ``name`` (imported lazily)."""
    module, cls = problem_spec(name).implementation.split(":")
    return getattr(importlib.import_module(module), cls)()


__all__ = ["get_problem"]
