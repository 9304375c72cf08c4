"""The protocol every problem implements, so that one harness and one CLI serve all of them.

Data flows one way::

    instance ──prepare──▶ data ──heuristic──▶ solution ─┐
                           └──build_milp──▶ MilpFormulation ──backend──▶ x ──decode──▶ solution
    solution ──evaluate (independent of the model)──▶ Evaluation

A problem subclass declares its ``name``, its ``objectives`` (first = default), a JSON-Schema fragment for its
``options``, its heuristic methods, and the exact model builders it supports.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from dlaopt.solvers.linear import LinearModel
from dlaopt.solvers.result import SolveOptions, Status, TracePoint

if TYPE_CHECKING:
    from dlaopt.io.instance import Instance
    from dlaopt.specs.constraints import Constraint, KeyPath

D = TypeVar("D")  # prepared data
S = TypeVar("S")  # solution


@dataclass
class Evaluation:
    """What the independent evaluator says about a solution."""

    feasible: bool
    objective: float | None
    violations: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"verified": self.feasible, "objective": self.objective, "violations": list(self.violations),
                "metrics": dict(self.metrics)}


@dataclass
class MilpFormulation(Generic[S]):
    """A MILP built for one prepared instance, with the maps between its columns and the problem's solutions."""

    model: LinearModel
    decode: Callable[[np.ndarray], S]
    encode: Callable[[S], np.ndarray]  # a solution as a column vector (warm start); must be feasible for the model
    objective_offset: float = 0.0  # evaluator objective = model objective + offset (documented per problem)


@dataclass
class ExactOutcome(Generic[S]):
    """What a problem's own exact driver returns (see :meth:`Problem.solve_exact`)."""

    solution: S | None
    status: Status
    bound: float | None
    solver: str
    solver_version: str = ""
    message: str = ""
    trace: list[TracePoint] = field(default_factory=list)
    model_stats: dict[str, int] | None = None
    model_objective: float | None = None  # the model's value of ``solution``; checked against the evaluator
    objective_tolerance: float | None = None  # relative, for that check (default: the harness' own)
    warm_start: dict[str, Any] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    solve_time_s: float = 0.0


@dataclass(frozen=True)
class Method:
    name: str
    kind: str  # "heuristic" or "exact"
    description: str
    default_solver: str | None = None  # for exact methods: "highs", "cpsat", "pyomo:<name>"


class Problem(ABC, Generic[D, S]):
    name: str
    title: str
    objectives: tuple[str, ...]
    options_schema: Mapping[str, Any]  # JSON Schema of the instance's ``options`` object
    methods: tuple[Method, ...]

    # -------------------------------------------------------------------------------------------- data
    @abstractmethod
    def prepare(self, instance: Instance) -> D:
        """Derive everything the methods need from the instance (raises InputError for unusable input)."""

    @abstractmethod
    def infeasibility_reason(self, data: D) -> str | None:
        """A reason the instance cannot have any solution, when one can be found cheaply; else ``None``."""

    def declared_constraints(self, instance: Instance) -> tuple[Constraint, ...]:
        """Every user constraint in force, in the order they are reported: the ``constraints`` list, and for a
        problem that takes presets (the mapping problem's ``flexibility``) the constraints they expand to. A
        conflict is searched for among these, each trial solving ``instance.with_constraints(subset)``."""
        return instance.constraints

    def conflicting_constraints(self, data: D, options: SolveOptions) -> list[KeyPath] | None:
        """The paths of user constraints that cannot hold together, found by the problem's own means (CP-SAT's
        assumptions and its sufficient-assumptions core), or ``None`` (the default): the harness then filters the
        whole list by deletion. A core returned here is still reduced by deletion filtering."""
        return None

    # -------------------------------------------------------------------------------------------- methods
    @abstractmethod
    def run_heuristic(self, method: str, data: D, options: SolveOptions) -> S:
        """Run the heuristic ``method`` (may raise ``HeuristicFailure`` when it finds no feasible solution)."""

    @abstractmethod
    def build_milp(self, data: D) -> MilpFormulation[S]:
        """The exact model as a MILP (solved by HiGHS, CP-SAT or any Pyomo solver)."""

    def solve_exact(self, data: D, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[S] | None:
        """A problem-specific exact driver (decomposition, sequences of models); ``None`` (the default) means the
        harness' own path: warm-start heuristics, relaxations, then :meth:`build_milp`. The harness still verifies
        the returned solution with :meth:`evaluate` and checks ``model_objective`` against it."""
        return None

    def relaxations(self, data: D) -> list[tuple[str, MilpFormulation[S]]]:
        """Relaxations whose proven bound is a valid lower bound of the exact optimum (solved first by the
        harness; when the warm start already meets such a bound it is optimal and the full model is skipped)."""
        return []

    def repair(self, data: D, relaxation: str, relaxed: S) -> S | None:
        """A feasible solution built from a relaxation's solution (a primal heuristic), or ``None``."""
        return None

    # -------------------------------------------------------------------------------------------- evaluation
    @abstractmethod
    def evaluate(self, data: D, solution: S) -> Evaluation:
        """Recompute the objective and check every constraint from the instance data, not from any model."""

    @abstractmethod
    def solution_to_dict(self, data: D, solution: S) -> dict[str, Any]:
        ...

    @abstractmethod
    def solution_from_dict(self, data: D, doc: Mapping[str, Any]) -> S:
        """Parse a serialized solution (raises InputError with a key path on malformed input)."""

    def describe(self, data: D) -> dict[str, Any]:
        """A short summary of the prepared instance (for ``dlaopt show``)."""
        return {}

    def method(self, name: str) -> Method:
        for m in self.methods:
            if m.name == name:
                return m
        raise KeyError(name)

    def methods_for(self, data: D) -> list[str]:
        """The methods that apply to this prepared instance (what ``compare`` runs by default): all of them unless
        a problem says otherwise."""
        return [m.name for m in self.methods]

    @property
    def heuristic_names(self) -> list[str]:
        return [m.name for m in self.methods if m.kind == "heuristic"]

    @property
    def exact_names(self) -> list[str]:
        return [m.name for m in self.methods if m.kind == "exact"]


class HeuristicFailure(Exception):
    """A heuristic found no feasible solution (a status, not a crash)."""
