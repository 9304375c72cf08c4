"""The independent check of a placement: recomputed from the buffers alone, never from a model.

Alignment and capacity are checked buffer by buffer; address overlaps by a sweep over time: the lifetimes' start
and end events in step order (ends first at a tie, lifetimes being half open), each starting buffer compared with
the buffers alive at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution

MAX_LISTED = 20  # violations listed in full; more are counted


@dataclass
class AllocationReport:
    """What the evaluator finds: the violations (empty: valid), the peak and the metrics."""

    violations: list[str] = field(default_factory=list)
    peak: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.violations


def check_placement(data: AllocationData, solution: AllocationSolution) -> AllocationReport:
    """Every violated rule of a valid placement (alignment, capacity, address overlap of buffers alive together),
    the peak ``max offset + size`` and the metrics ``peak``, ``bound``, ``bound_step`` and ``fragmentation``
    (``peak / bound - 1``)."""
    bufs = data.buffers
    offsets = [int(v) for v in solution.offsets.tolist()]
    out = AllocationReport()
    extra = 0

    def violation(text: str) -> None:
        nonlocal extra
        if len(out.violations) < MAX_LISTED:
            out.violations.append(text)
        else:
            extra += 1

    if len(offsets) != len(bufs):
        return AllocationReport([f"{len(offsets)} offsets for {len(bufs)} buffers"])
    for b, o in zip(bufs, offsets, strict=True):
        if o < 0:
            violation(f"buffer '{b.id}' has a negative offset {o}")
        elif o % b.alignment:
            violation(f"buffer '{b.id}' at offset {o} is not a multiple of its alignment {b.alignment}")
        if data.capacity is not None and o + b.size > data.capacity:
            violation(f"buffer '{b.id}' ends at {o + b.size}, beyond the capacity of {data.capacity} bytes")
    events = sorted([(b.upper, 0, i) for i, b in enumerate(bufs)] + [(b.lower, 1, i) for i, b in enumerate(bufs)])
    alive: set[int] = set()
    for step, kind, i in events:
        if kind == 0:
            alive.discard(i)
            continue
        lo, hi = offsets[i], offsets[i] + bufs[i].size
        for j in sorted(alive):
            if offsets[j] < hi and lo < offsets[j] + bufs[j].size:
                violation(f"buffers '{bufs[j].id}' [{offsets[j]}, {offsets[j] + bufs[j].size}) and '{bufs[i].id}' "
                          f"[{lo}, {hi}) overlap in address while both are alive (from {data.step_name(step)})")
        alive.add(i)
    if extra:
        out.violations.append(f"... and {extra} more violations")
    out.peak = max((o + b.size for b, o in zip(bufs, offsets, strict=True)), default=0)
    bound = data.bound
    out.metrics = {"peak": out.peak, "bound": bound, "bound_step": data.bound_step,
                   "fragmentation": (out.peak / bound - 1.0) if bound else 0.0, "buffers": len(bufs)}
    if data.capacity is not None:
        out.metrics["capacity"] = data.capacity
    return out


__all__ = ["AllocationReport", "check_placement"]
