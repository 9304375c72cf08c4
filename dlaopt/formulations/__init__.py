"""The problems dlaopt solves. Each registers a light :class:`ProblemSpec` (enough to validate an instance file)
with a factory that imports and builds the full :class:`~dlaopt.formulations.base.Problem` on demand."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
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


PROBLEM_SPECS: dict[str, ProblemSpec] = {
    "pinning": ProblemSpec(
        name="pinning",
        title="Multi-scratchpad tensor pinning",
        objectives=pinning_options.OBJECTIVES,
        options_schema=pinning_options.OPTIONS_SCHEMA,
        default_options=pinning_options.DEFAULT_OPTIONS,
        implementation="dlaopt.formulations.pinning.problem:PinningProblem",
    ),
    "mapping": ProblemSpec(
        name="mapping",
        title="Tiling and loop-order selection (mapping)",
        objectives=mapping_options.OBJECTIVES,
        options_schema=mapping_options.OPTIONS_SCHEMA,
        default_options=mapping_options.DEFAULT_OPTIONS,
        implementation="dlaopt.formulations.mapping.problem:MappingProblem",
    ),
    "systolic": ProblemSpec(
        name="systolic",
        title="Layer-specific scheduling and hardware co-design of a systolic array (DeepOpt)",
        objectives=systolic_options.OBJECTIVES,
        options_schema=systolic_options.OPTIONS_SCHEMA,
        default_options=systolic_options.DEFAULT_OPTIONS,
        implementation="dlaopt.formulations.systolic.problem:SystolicProblem",
    ),
    "multiaccel": ProblemSpec(
        name="multiaccel",
        title="Multi-accelerator job assignment under a shared system bandwidth (MAGMA)",
        objectives=multiaccel_options.OBJECTIVES,
        options_schema=multiaccel_options.OPTIONS_SCHEMA,
        default_options=multiaccel_options.DEFAULT_OPTIONS,
        implementation="dlaopt.formulations.multiaccel.problem:MultiAccelProblem",
        hardware="platform",
        workloads=("task", "jobs", "graph"),
    ),
    "bankmap": ProblemSpec(
        name="bankmap",
        title="Global memory-bank mapping (layouts across banks, few inter-bank copies)",
        objectives=bankmap_options.OBJECTIVES,
        options_schema=bankmap_options.OPTIONS_SCHEMA,
        default_options=bankmap_options.DEFAULT_OPTIONS,
        implementation="dlaopt.formulations.bankmap.problem:BankMapProblem",
    ),
}


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
