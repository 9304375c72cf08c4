"""The prepared fusion instance and its solution (plain data shared by the methods and the evaluator)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dlaopt.formulations.fusion.group import FusedGroup
from dlaopt.formulations.fusion.select import Candidate
from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.hardware.model import Accelerator
from dlaopt.workload.graph import Workload


@dataclass(frozen=True)
class PassCost:
    """An operator run on its own, outside any fused group: energy (pJ), latency (cycles), main-memory bytes."""

    energy_pj: float
    latency_cycles: float
    offchip_bytes: float

    def value(self, objective: str) -> float:
        return {"energy": self.energy_pj, "latency": self.latency_cycles, "offchip": self.offchip_bytes}[objective]


@dataclass
class FusionData:
    """Everything a method needs: the workload's mappable operators (``items``, in workload order) and their full
    loop nests; the candidate groups (every single operator, then the chains the group builder accepts; with
    explicit ``groups`` only those and the operators they leave out) with their :class:`FusedGroup`; the staging
    level; the cost of every other operator run as its own pass; the options in force."""

    name: str
    workload: Workload
    accelerator: Accelerator
    arch: MappingArch
    objective: str
    options: dict[str, Any]
    items: list[str]
    nests: dict[str, LoopNest]
    candidates: list[Candidate]
    groups: dict[tuple[str, ...], FusedGroup]  # fused candidates' groups (chains of two or more operators)
    staging: int  # level index in ``arch``
    staging_memory: str
    buffering: int
    granularity: str
    lanes: int
    heads: int  # attention heads folded into a batched matmul's batch dim (FLAT's B-Gran / H-Gran)
    passes: dict[str, PassCost]  # non-mappable operator -> its cost as a pass of its own
    fixed: bool = False  # explicit groups: the partition is given
    rejected: dict[tuple[str, ...], str] = field(default_factory=dict)  # chains the group builder refused, and why
    source: str | None = None

    def absorbed(self, ops: tuple[str, ...]) -> tuple[str, ...]:
        """The non-mappable operators a fused group of ``ops`` applies in place (none for one operator)."""
        g = self.groups.get(ops)
        if g is None:
            return ()
        return tuple(dict.fromkeys(o.name for o in g.softmax_ops))


@dataclass(frozen=True)
class GroupChoice:
    """One group of a solution: its operators in execution order; for a fused group (two or more operators) the
    outer tile (outer dim -> number of tiles), and one inner mapping per operator (for one operator: its mapping of
    the full layer)."""

    ops: tuple[str, ...]
    tile: dict[str, int] | None
    mappings: tuple[Mapping, ...]

    @property
    def fused(self) -> bool:
        return len(self.ops) > 1


@dataclass
class FusionSolution:
    groups: list[GroupChoice]
    notes: dict[str, Any] = field(default_factory=dict)


__all__ = ["FusionData", "FusionSolution", "GroupChoice", "PassCost"]
