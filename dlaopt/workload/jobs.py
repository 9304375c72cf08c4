"""Multi-tenant job groups: what an instance's ``workload`` says when the problem schedules jobs (layers of several
tenant networks) rather than one network's graph.

* :class:`TaskGroup` — a task type of seed 001 §7.3.1 (``vision``, ``language``, ``recommendation``, ``mix``): its
  networks' layers, a dependency-free group of ``group_size`` drawn with ``seed``;
* :class:`InlineJobs` — the job analysis table written out: per job its operations and, per sub-accelerator, the
  no-stall latency and bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskGroup:
    task: str
    group_size: int = 100
    seed: int = 0
    batch: int | None = None  # images / sequences per job (None: each network's default)

    @property
    def name(self) -> str:
        return f"{self.task}-{self.group_size}-s{self.seed}"


@dataclass(frozen=True)
class InlineJob:
    name: str
    tenant: str
    ops: float
    latency_us: tuple[float, ...]  # per sub-accelerator, in the platform's order
    bandwidth_gbps: tuple[float, ...]  # per sub-accelerator, GB/s (1e9 bytes per second)


@dataclass(frozen=True)
class InlineJobs:
    jobs: tuple[InlineJob, ...]
    name: str = "jobs"
