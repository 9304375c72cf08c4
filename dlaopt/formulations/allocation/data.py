"""Static memory allocation: buffers with lifetimes and sizes placed at offsets in one memory.

A buffer ``i`` lives during the steps ``[lower_i, upper_i)`` (half open) and occupies the addresses
``[offset_i, offset_i + size_i)``. A placement is valid when

* every offset is a non-negative multiple of the buffer's alignment,
* every buffer ends within the capacity: ``offset_i + size_i <= capacity`` (when a capacity is given), and
* two buffers whose lifetimes overlap never overlap in address.

The *peak* of a placement is ``max_i offset_i + size_i`` (0 without buffers). The live bytes of a step are the sum
of the sizes of the buffers alive during it; their maximum over the steps is a lower bound on every peak (the bound
every method reports), and a capacity below it is infeasible for the reason this module names
(:func:`live_bytes_reason`).

This is the problem of XLA's heap simulator, TFLite Micro's greedy planner, TelaMalloc (ASPLOS 2023) and MiniMalloc
(ASPLOS 2024); the CSV interchange format of that literature is read and written by :mod:`dlaopt.io.buffers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dlaopt.workload.buffers import AllocBuffer

OBJECTIVES = ("feasibility", "peak")


def align_up(value: int, alignment: int) -> int:
    """The smallest multiple of ``alignment`` that is at least ``value``."""
    return -(-value // alignment) * alignment


@dataclass(frozen=True)
class AllocationData:
    """Buffers and one memory: what every allocation method works on (``capacity`` ``None``: unbounded, only with
    objective ``peak``)."""

    buffers: tuple[AllocBuffer, ...]
    capacity: int | None
    objective: str = "feasibility"
    memory: str = "memory"  # the memory's name (reports, plots)
    source: str | None = None
    step_names: tuple[str, ...] = field(default=())  # optional names of the steps (pinning: the operators)

    @property
    def n(self) -> int:
        return len(self.buffers)

    @cached_property
    def lower(self) -> np.ndarray:
        return np.array([b.lower for b in self.buffers], dtype=np.int64)

    @cached_property
    def upper(self) -> np.ndarray:
        return np.array([b.upper for b in self.buffers], dtype=np.int64)

    @cached_property
    def size(self) -> np.ndarray:
        return np.array([b.size for b in self.buffers], dtype=np.int64)

    @cached_property
    def alignment(self) -> np.ndarray:
        return np.array([b.alignment for b in self.buffers], dtype=np.int64)

    @cached_property
    def overlap(self) -> np.ndarray:
        """``overlap[i, j]``: the lifetimes of ``i`` and ``j`` intersect (``i != j``)."""
        lo, hi = self.lower, self.upper
        m = (lo[:, None] < hi[None, :]) & (lo[None, :] < hi[:, None])
        np.fill_diagonal(m, False)
        return m

    @cached_property
    def live_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, bytes)``: the distinct steps at which some lifetime starts, and the live bytes from each of them
        to the next (the live bytes only change there)."""
        if not self.buffers:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        points = np.unique(np.concatenate([self.lower, self.upper]))
        delta = np.zeros(len(points), dtype=np.int64)
        np.add.at(delta, np.searchsorted(points, self.lower), self.size)
        np.subtract.at(delta, np.searchsorted(points, self.upper), self.size)
        return points, np.cumsum(delta)

    @cached_property
    def bound(self) -> int:
        """The maximum live bytes over the steps: no placement has a lower peak."""
        _, live = self.live_bytes
        return int(max(int(live.max()) if len(live) else 0, int(self.size.max()) if self.n else 0))

    @cached_property
    def bound_step(self) -> int | None:
        """A step at which the live bytes reach :attr:`bound` (``None`` without buffers)."""
        points, live = self.live_bytes
        return int(points[int(np.argmax(live))]) if len(live) else None

    def step_name(self, step: int) -> str:
        return f"step {step} ('{self.step_names[step]}')" if 0 <= step < len(self.step_names) else f"step {step}"

    def live_at(self, step: int) -> list[int]:
        """The buffers alive during ``step``."""
        return [i for i, b in enumerate(self.buffers) if b.lower <= step < b.upper]


def live_bytes_reason(data: AllocationData) -> str | None:
    """Why no placement fits the capacity, when the live bytes say so: the step whose live buffers need more bytes
    than the capacity, or a buffer larger than it on its own; ``None`` when they fit (which does not prove that a
    placement exists)."""
    if data.capacity is None or not data.buffers:
        return None
    big = [i for i, b in enumerate(data.buffers) if b.size > data.capacity]
    if big:
        b = data.buffers[big[0]]
        return f"buffer '{b.id}' has {b.size} bytes, more than the capacity of {data.capacity} bytes"
    if data.bound > data.capacity:
        step = data.bound_step
        assert step is not None
        live = data.live_at(step)
        names = ", ".join(f"'{data.buffers[i].id}'" for i in live[:8]) + (", ..." if len(live) > 8 else "")
        return (f"at {data.step_name(step)} the {len(live)} live buffers ({names}) need {data.bound} bytes, more "
                f"than the capacity of {data.capacity} bytes")
    return None


@dataclass
class AllocationSolution:
    """An offset per buffer (bytes from the start of the memory), in the order of :attr:`AllocationData.buffers`."""

    offsets: np.ndarray

    @classmethod
    def of(cls, offsets: Sequence[int]) -> AllocationSolution:
        return cls(np.asarray(list(offsets), dtype=np.int64))

    def peak(self, data: AllocationData) -> int:
        return int((self.offsets + data.size).max()) if data.n else 0


__all__ = ["OBJECTIVES", "AllocBuffer", "AllocationData", "AllocationSolution", "align_up", "live_bytes_reason"]
