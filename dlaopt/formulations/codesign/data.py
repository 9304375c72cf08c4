"""The prepared co-design instance and its solution (plain data shared by the exact method, the searches and the
evaluator)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlaopt.formulations.codesign.exact import Budget, SelectionSetup
from dlaopt.formulations.codesign.space import DesignPoint, DesignSpace, Template
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping


@dataclass(frozen=True)
class DesignRule:
    """A user restriction on the design points some layers may use (``constraints`` of kind ``design``): bounds
    on rows, columns, PEs, L1 and L2 bytes (``None``: free)."""

    label: str
    layers: frozenset[int]  # layer indices it applies to
    bounds: dict[str, tuple[int | None, int | None]]  # key (rows, cols, pes, l1_bytes, l2_bytes) -> (min, max)

    def allows(self, point: DesignPoint) -> bool:
        for key, (lo, hi) in self.bounds.items():
            v = point.num_pes if key == "pes" else getattr(point, key)
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                return False
        return True


@dataclass(frozen=True)
class CapRule:
    """A user cap on the selected layers' figure (``constraints`` of kind ``layer_cap``)."""

    label: str
    layers: frozenset[int]
    metric: str  # latency (cycles) or energy (pJ)
    limit: float


@dataclass
class CodesignData:
    """Everything a method needs: the layers (every mappable layer, in order, and their unique shapes), the design
    grid over the template, the fixed dataflow (or ``free``), the deployment (``ls``/``lp``), the objective (a
    per-layer figure, aggregated by ``aggregate``), per-point area and power with their budgets, and the user's
    restrictions."""

    name: str
    layer_names: list[str]
    layers: list[LoopNest]
    unique_of: np.ndarray  # [L] -> index into ``nests``
    nests: list[LoopNest]  # unique shapes
    template: Template
    space: DesignSpace
    dataflow: str
    deployment: str
    objective: str  # latency, energy or edp (per layer)
    aggregate: str  # sum or max
    technology: str
    area_mm2: np.ndarray  # [P]
    power_mw: np.ndarray  # [P]
    budgets: dict[str, float]  # "area_mm2" / "power_mw" -> cap on the LS peak or LP sum
    design_rules: list[DesignRule] = field(default_factory=list)
    cap_rules: list[CapRule] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def multiplicity(self) -> np.ndarray:
        return np.bincount(self.unique_of, minlength=len(self.nests))

    def allowed(self) -> np.ndarray:
        """``[L, P]``: the points each layer may use under the design rules."""
        out = np.ones((self.n_layers, len(self.space)), dtype=bool)
        for rule in self.design_rules:
            ok = np.array([rule.allows(p) for p in self.space.points], dtype=bool)
            for k in rule.layers:
                out[k] &= ok
        return out

    def caps(self) -> np.ndarray:
        """``[L]``: the cap on each layer's objective figure implied by the cap rules on that figure (other metrics'
        caps are enforced by entry masks, see :meth:`cap_violations`)."""
        out = np.full(self.n_layers, math.inf)
        for rule in self.cap_rules:
            if rule.metric == self.objective:
                for k in rule.layers:
                    out[k] = min(out[k], rule.limit)
        return out

    def budget(self) -> Budget:
        use = {"area_mm2": self.area_mm2, "power_mw": self.power_mw}
        return Budget({k: use[k] for k in self.budgets}, dict(self.budgets))

    def setup(self) -> SelectionSetup:
        return SelectionSetup(self.unique_of, self.allowed(), self.caps(), self.deployment, self.aggregate,
                              self.budget())

    def aggregate_values(self, per_layer: np.ndarray) -> float:
        return float(per_layer.max() if self.aggregate == "max" else per_layer.sum())


@dataclass
class CodesignSolution:
    """The design point and mapping of every layer (LS: one point repeated) and notes from the method."""

    points: list[DesignPoint]
    mappings: list[Mapping]
    notes: dict[str, Any] = field(default_factory=dict)
