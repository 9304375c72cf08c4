"""What each problem accepts, stated as data: its objectives, its options (a JSON schema and the defaults) and the
kinds of hardware and workload it reads. One module per problem (``dlaopt.specs.pinning``, …) holds the options.

This catalogue sits below :mod:`dlaopt.io`, which validates instance files against it, and below
:mod:`dlaopt.formulations`, which implements the problems (:func:`dlaopt.formulations.get_problem` builds the full
problem object named by a spec's ``implementation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from dlaopt.errors import InputError
from dlaopt.specs import allocation, bankmap, codesign, fusion, mapping, multiaccel, pinning, systolic


@dataclass(frozen=True)
class ProblemSpec:
    name: str
    title: str
    objectives: tuple[str, ...]
    options_schema: Mapping[str, Any]
    default_options: Mapping[str, Any]
    implementation: str  # "module:ClassName"
    hardware: str = "accelerator"  # "accelerator", "platform" or "memory" (one arena, allocation)
    workloads: tuple[str, ...] = ("graph",)  # accepted kinds: "graph", "task" (job group), "jobs" (table), "buffers"
    constraint_kinds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # kind -> schema of its keys
    flexibility_schema: Mapping[str, Any] | None = None  # the ``flexibility`` key, for problems that take one


def _spec(name: str, title: str, options: ModuleType, problem_class: str, **kinds: Any) -> ProblemSpec:
    """The spec of problem ``name``: objectives, options and constraint kinds from ``dlaopt.specs.<name>``, the
    problem class in ``dlaopt.formulations.<name>.problem``."""
    return ProblemSpec(name=name, title=title, objectives=options.OBJECTIVES, options_schema=options.OPTIONS_SCHEMA,
                       default_options=options.DEFAULT_OPTIONS,
                       constraint_kinds=getattr(options, "CONSTRAINTS", {}),
                       flexibility_schema=getattr(options, "FLEXIBILITY_SCHEMA", None),
                       implementation=f"dlaopt.formulations.{name}.problem:{problem_class}", **kinds)


PROBLEM_SPECS: dict[str, ProblemSpec] = {s.name: s for s in (
    _spec("pinning", "Multi-scratchpad tensor pinning", pinning, "PinningProblem"),
    _spec("mapping", "Tiling and loop-order selection (mapping)", mapping, "MappingProblem"),
    _spec("systolic", "Layer-specific scheduling and hardware co-design of a systolic array (DeepOpt)",
          systolic, "SystolicProblem"),
    _spec("multiaccel", "Multi-accelerator job assignment under a shared system bandwidth (MAGMA)",
          multiaccel, "MultiAccelProblem", hardware="platform", workloads=("task", "jobs", "graph")),
    _spec("bankmap", "Global memory-bank mapping (layouts across banks, few inter-bank copies)", bankmap,
          "BankMapProblem"),
    _spec("codesign", "Hardware-mapping co-design under an area or power budget (DiGamma, ConfuciuX)", codesign,
          "CodesignProblem"),
    _spec("fusion", "Operator fusion: fused groups, outer tiles and inner mappings (FLAT)", fusion, "FusionProblem"),
    _spec("allocation", "Static memory allocation: an offset per buffer in one memory (XLA heap simulator, "
          "TelaMalloc, MiniMalloc)", allocation, "AllocationProblem", hardware="memory", workloads=("buffers",)),
)}


def problem_spec(name: str, *, path: tuple[str | int, ...] = ("problem",)) -> ProblemSpec:
    if name not in PROBLEM_SPECS:
        raise InputError(f"unknown problem '{name}'", path=path, expected="one of: " + ", ".join(PROBLEM_SPECS))
    return PROBLEM_SPECS[name]


__all__ = ["PROBLEM_SPECS", "ProblemSpec", "problem_spec"]
