"""The vocabulary of multi-accelerator job assignment (seed 001, Chapter 7: MAGMA / M3E).

A **job** is one layer of one tenant network run on a batch; a **platform** is several sub-accelerators sharing
one system bandwidth. The **job analysis table** gives, for every job ``j`` and sub-accelerator ``a``, the no-stall
latency ``L[j, a]`` (seconds: the job alone, memory never the bottleneck) and the no-stall bandwidth ``B[j, a]``
(bytes/s: the least bandwidth that keeps it compute-bound); the job's data volume there is ``V = L·B`` bytes.

A **solution** is, per sub-accelerator, the ordered list of the jobs it runs back to back (which also says where
every job runs). Its meaning is the seed's bandwidth allocator (Algorithm 1, :mod:`.evaluator`): a fluid
simulation in which the running jobs share the system bandwidth in proportion to their no-stall bandwidths when
they ask for more than there is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class JobTable:
    """Jobs × sub-accelerators. ``ops`` are operations (2 per MAC) per job; ``latency`` in seconds and
    ``bandwidth`` in bytes/s are ``[jobs, accelerators]`` arrays (finite and positive)."""

    jobs: tuple[str, ...]
    tenants: tuple[str, ...]  # the network each job belongs to
    accelerators: tuple[str, ...]
    ops: np.ndarray  # [J]
    latency: np.ndarray  # [J, A] seconds
    bandwidth: np.ndarray  # [J, A] bytes per second

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    @property
    def n_accelerators(self) -> int:
        return len(self.accelerators)

    @property
    def volume(self) -> np.ndarray:
        """Bytes each job moves on each sub-accelerator, ``L·B``."""
        return self.latency * self.bandwidth


# ------------------------------------------------------------------------------------------ user constraints
@dataclass(frozen=True)
class PlacementRule:
    """``allowed`` (the jobs run only on ``accelerators``) or ``forbidden`` (never on them); indices."""

    label: str
    path: tuple[str | int, ...]
    kind: str  # "allowed" | "forbidden"
    jobs: tuple[int, ...]
    accelerators: tuple[int, ...]


@dataclass(frozen=True)
class WindowRule:
    """Every job of ``jobs`` starts at or after ``release`` and ends at or before ``deadline`` (seconds)."""

    label: str
    path: tuple[str | int, ...]
    jobs: tuple[int, ...]
    release: float | None
    deadline: float | None


@dataclass(frozen=True)
class PrecedenceRule:
    """Job ``after`` starts once job ``before`` has finished."""

    label: str
    path: tuple[str | int, ...]
    before: int
    after: int


@dataclass(frozen=True)
class ColocateRule:
    """The jobs of ``jobs`` run on one sub-accelerator."""

    label: str
    path: tuple[str | int, ...]
    jobs: tuple[int, ...]


Rule = PlacementRule | WindowRule | PrecedenceRule | ColocateRule


@dataclass(frozen=True)
class UserConstraints:
    """The instance's constraints as indices and seconds (the problem's ``prepare`` resolves the names). The derived
    arrays below serve the models and heuristics; the evaluator reads the rules themselves."""

    placement: tuple[PlacementRule, ...] = ()
    windows: tuple[WindowRule, ...] = ()
    precedence: tuple[PrecedenceRule, ...] = ()
    colocate: tuple[ColocateRule, ...] = ()

    @property
    def rules(self) -> list[Rule]:
        """Every rule, in file order."""
        out: list[Rule] = [*self.placement, *self.windows, *self.precedence, *self.colocate]
        return sorted(out, key=lambda r: [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in r.path])

    def __bool__(self) -> bool:
        return bool(self.placement or self.windows or self.precedence or self.colocate)

    def allowed_mask(self, n_jobs: int, n_acc: int) -> np.ndarray:
        """``[J, A]``: where each job may run by the placement rules alone."""
        mask = np.ones((n_jobs, n_acc), dtype=bool)
        for r in self.placement:
            cols = np.zeros(n_acc, dtype=bool)
            cols[list(r.accelerators)] = True
            for j in r.jobs:
                mask[j] &= cols if r.kind == "allowed" else ~cols
        return mask

    def leaders(self, n_jobs: int) -> np.ndarray:
        """``[J]``: the smallest job index of each job's colocation group (itself when it is in none)."""
        parent = list(range(n_jobs))

        def find(j: int) -> int:
            while parent[j] != j:
                parent[j] = parent[parent[j]]
                j = parent[j]
            return j

        for r in self.colocate:
            for j in r.jobs[1:]:
                a, b = find(r.jobs[0]), find(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        return np.array([find(j) for j in range(n_jobs)], dtype=np.int64)

    def group_mask(self, n_jobs: int, n_acc: int) -> np.ndarray:
        """``[J, A]``: where each job may run once its colocation group is taken into account (the intersection of
        the group's placement masks)."""
        mask = self.allowed_mask(n_jobs, n_acc)
        lead = self.leaders(n_jobs)
        group = np.ones((n_jobs, n_acc), dtype=bool)
        for j in range(n_jobs):
            group[lead[j]] &= mask[j]
        return group[lead]

    def release(self, n_jobs: int) -> np.ndarray:
        """``[J]`` seconds: the latest release of each job (0 without one)."""
        out = np.zeros(n_jobs)
        for r in self.windows:
            if r.release is not None:
                for j in r.jobs:
                    out[j] = max(out[j], r.release)
        return out

    def deadline(self, n_jobs: int) -> np.ndarray:
        """``[J]`` seconds: the earliest deadline of each job (``inf`` without one)."""
        out = np.full(n_jobs, np.inf)
        for r in self.windows:
            if r.deadline is not None:
                for j in r.jobs:
                    out[j] = min(out[j], r.deadline)
        return out


@dataclass(frozen=True)
class MultiAccelData:
    """What every method of the problem sees. ``precedence`` holds every pair in force: the option's and the user's
    precedence constraints (``constraints.precedence``, kept as well to name them)."""

    table: JobTable
    system_bandwidth: float  # bytes per second, shared by all sub-accelerators
    precedence: tuple[tuple[int, int], ...] = ()  # (before, after): ``after`` starts once ``before`` has finished
    objective: str = "makespan"
    options: dict[str, object] = field(default_factory=dict)
    constraints: UserConstraints = field(default_factory=UserConstraints)

    @property
    def release(self) -> np.ndarray:
        """``[J]`` seconds: when each job may start at the earliest (0 without a window)."""
        return self.constraints.release(self.table.n_jobs)


@dataclass
class Assignment:
    """The jobs each sub-accelerator runs, in order: ``order[a]`` is a list of job indices."""

    order: list[list[int]]

    def accelerator_of(self, n_jobs: int) -> np.ndarray:
        """The sub-accelerator index of every job (-1 where a job is missing)."""
        out = np.full(n_jobs, -1, dtype=int)
        for a, jobs in enumerate(self.order):
            for j in jobs:
                out[j] = a
        return out


@dataclass(frozen=True)
class Segment:
    """An interval of the simulation in which the same jobs run with the same bandwidth allocation."""

    t0: float
    t1: float
    jobs: tuple[int, ...]  # the running jobs
    allocation: tuple[float, ...]  # bytes/s each of them gets


@dataclass(frozen=True)
class Simulation:
    """What the evaluator says a solution does: every job's start and end (seconds) and sub-accelerator, the
    piecewise-constant bandwidth allocation, and the figures derived from them."""

    start: np.ndarray  # [J]
    end: np.ndarray  # [J]
    accelerator: np.ndarray  # [J]
    segments: tuple[Segment, ...]
    total_ops: float

    @property
    def makespan(self) -> float:
        return float(self.end.max()) if self.end.size else 0.0

    @property
    def mean_completion(self) -> float:
        return float(self.end.mean()) if self.end.size else 0.0

    @property
    def throughput(self) -> float:
        """Operations per second over the whole group."""
        return self.total_ops / self.makespan if self.makespan > 0 else 0.0
