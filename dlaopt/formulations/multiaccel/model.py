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


@dataclass(frozen=True)
class MultiAccelData:
    """What every method of the problem sees."""

    table: JobTable
    system_bandwidth: float  # bytes per second, shared by all sub-accelerators
    precedence: tuple[tuple[int, int], ...] = ()  # (before, after): ``after`` starts once ``before`` has finished
    objective: str = "makespan"
    options: dict[str, object] = field(default_factory=dict)


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
