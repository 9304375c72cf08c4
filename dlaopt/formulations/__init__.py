"""The problems dlaopt solves. Each registers a light :class:`ProblemSpec` (enough to validate an instance file)
with a factory that imports and builds the full :class:`~dlaopt.formulations.base.Problem` on demand."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from dlaopt.errors import InputError
from dlaopt.formulations.bankmap import options as bankmap_options
from dlaopt.formulations.mapping import options as mapping_options
from dlaopt.formulations.multiaccel import options as multiaccel_options
from dlaopt.formulations.pinning import options as pinning_options
from dlaopt.formulations.systolic import options as systolic_options


@dataclass(frozen=True)
class ProblemSpec:
    name: str
    title: str
    objectives: tuple[str, ...]
    options_schema: Mapping[str, Any]
    default_options: Mapping[str, Any]
    implementation: str  # "module:ClassName"
    hardware: str = "accelerator"  # "accelerator" or "platform"
    workloads: tuple[str, ...] = ("graph",)  # accepted workload kinds: "graph", "task" (job group), "jobs" (table)


def _spec(name: str, title: str, options: ModuleType, problem_class: str, **kinds: Any) -> ProblemSpec:
    """The spec of ``dlaopt.formulations.<name>``: objectives and options from its ``options`` module, the problem
    class in its ``problem`` module."""
    return ProblemSpec(name=name, title=title, objectives=options.OBJECTIVES, options_schema=options.OPTIONS_SCHEMA,
                       default_options=options.DEFAULT_OPTIONS,
                       implementation=f"dlaopt.formulations.{name}.problem:{problem_class}", **kinds)


PROBLEM_SPECS: dict[str, ProblemSpec] = {s.name: s for s in (
    _spec("pinning", "Multi-scratchpad tensor pinning", pinning_options, "PinningProblem"),
    _spec("mapping", "Tiling and loop-order selection (mapping)", mapping_options, "MappingProblem"),
    _spec("systolic", "Layer-specific scheduling and hardware co-design of a systolic array (DeepOpt)",
          systolic_options, "SystolicProblem"),
    _spec("multiaccel", "Multi-accelerator job assignment under a shared system bandwidth (MAGMA)",
          multiaccel_options, "MultiAccelProblem", hardware="platform", workloads=("task", "jobs", "graph")),
    _spec("bankmap", "Global memory-bank mapping (layouts across banks, few inter-bank copies)", bankmap_options,
          "BankMapProblem"),
)}


def problem_spec(name: str, *, path: tuple[str | int, ...] = ("problem",)) -> ProblemSpec:
    if name not in PROBLEM_SPECS:
        raise InputError(f"unknown problem '{name}'", path=path, expected="one of: " + ", ".join(PROBLEM_SPECS))
    return PROBLEM_SPECS[name]


@cache
def get_problem(name: str) -> Any:
    """The full Problem object for ``name`` (imported lazily)."""
    spec = problem_spec(name)
    module, cls = spec.implementation.split(":")
    return getattr(importlib.import_module(module), cls)()


__all__ = ["PROBLEM_SPECS", "ProblemSpec", "get_problem", "problem_spec"]
