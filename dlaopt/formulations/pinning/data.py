"""The data the pinning methods work on: buffers (pinning units) and steps (operator executions) in schedule order.

A *buffer* is a tensor — or, after graph reconstruction for tiling, a chunk of one — that is resident in at most one
scratchpad at a time. A *step* is one operator execution (an original operator, or one tile of it). Semantics
(shared by every method and by the evaluator):

* input and weight buffers start in main memory;
* a produced buffer comes into existence at its first write (its producer step); later writes are in-place updates
  (partial sums of a tile split along a reduction) that also read the buffer;
* while a step runs, every buffer it reads or writes is resident, each in exactly one scratchpad, in a scratchpad
  whose ``access`` allows the direction (an ``input`` scratchpad never receives a write, an ``output`` one is
  never read) and whose ``holds`` allows the buffer's role;
* nothing is resident before it exists (inputs/weights: before their first use) or after its last use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from dlaopt.hardware.model import Accelerator, Memory, SpmAccess
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator
from dlaopt.workload.tensor import TensorRole

Box = tuple[tuple[int, int], ...]  # half-open [lo, hi) range per axis


@dataclass(frozen=True)
class Buffer:
    name: str
    size_bytes: int
    role: TensorRole
    tensor: str  # the original tensor this buffer holds (part of)
    region: Box  # the box of the original tensor it holds (the whole tensor when untiled)

    @property
    def starts_in_memory(self) -> bool:
        return self.role in (TensorRole.INPUT, TensorRole.WEIGHT)


@dataclass(frozen=True)
class Step:
    name: str
    op: str  # the original operator
    reads: tuple[int, ...]  # buffer indices
    writes: tuple[int, ...]
    compute_cycles: int
    macs: int = 0
    tile: dict[str, object] = field(default_factory=dict)  # tile geometry (output region, reduction range)

    @property
    def operands(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(self.reads + self.writes))


@dataclass(frozen=True)
class Scratchpad:
    name: str
    capacity: int
    access: SpmAccess
    holds: frozenset[TensorRole]

    @classmethod
    def from_memory(cls, m: Memory) -> Scratchpad:
        assert m.capacity_bytes is not None
        return cls(m.name, m.capacity_bytes, m.access, m.holds)

    def allows(self, role: TensorRole, *, read: bool, written: bool) -> bool:
        if role not in self.holds:
            return False
        if written and self.access == SpmAccess.INPUT:
            return False
        return not (read and self.access == SpmAccess.OUTPUT)


@dataclass(frozen=True)
class PinningGraph:
    """Buffers and steps in schedule order, plus everything derived from them that every method needs."""

    buffers: tuple[Buffer, ...]
    steps: tuple[Step, ...]
    scratchpads: tuple[Scratchpad, ...]
    tiled_ops: tuple[str, ...] = ()  # original operators rebuilt as several tile steps
    capped: tuple[str, ...] = ()  # tensors shrunk to a scratchpad's size (``oversize: cap``)
    aligned_ops: tuple[str, ...] = ()  # tiled operators whose chunks are whole multiples of a given layer tile

    @cached_property
    def uses(self) -> list[list[int]]:
        """Buffer → sorted steps that read or write it."""
        out: list[list[int]] = [[] for _ in self.buffers]
        for m, st in enumerate(self.steps):
            for b in st.operands:
                out[b].append(m)
        return out

    @cached_property
    def write_steps(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.buffers]
        for m, st in enumerate(self.steps):
            for b in dict.fromkeys(st.writes):
                out[b].append(m)
        return out

    @cached_property
    def read_steps(self) -> list[set[int]]:
        out: list[set[int]] = [set() for _ in self.buffers]
        for m, st in enumerate(self.steps):
            for b in st.reads:
                out[b].add(m)
        return out

    @cached_property
    def producer(self) -> list[int | None]:
        return [w[0] if w else None for w in self.write_steps]

    @cached_property
    def window(self) -> list[tuple[int, int]]:
        """Buffer → [first, last] steps during which it may be resident (production or first use .. last use)."""
        return [(u[0], u[-1]) if u else (0, -1) for u in self.uses]  # (0, -1): never used, never resident

    def allowed(self, b: int, k: int, m: int) -> bool:
        """May buffer ``b`` sit in scratchpad ``k`` during step ``m`` (window, role, access and size)?"""
        lo, hi = self.window[b]
        if not lo <= m <= hi:
            return False
        buf, spm = self.buffers[b], self.scratchpads[k]
        if buf.size_bytes > spm.capacity:
            return False
        return spm.allows(buf.role, read=m in self.read_steps[b], written=m in self.write_steps[b])

    def summary(self) -> dict[str, object]:
        return {
            "steps": len(self.steps),
            "buffers": len(self.buffers),
            "scratchpads": [(s.name, s.capacity, s.access.value) for s in self.scratchpads],
            "tiled_operators": len(self.tiled_ops),
            "capped_tensors": len(self.capped),
            "bytes_touched": sum(b.size_bytes for b in self.buffers),
        }


# --------------------------------------------------------------------------------------------------- packing
@dataclass(frozen=True)
class Operand:
    size: int
    role: TensorRole
    read: bool
    written: bool


def pack_operands(operands: Sequence[Operand], spms: Sequence[Scratchpad],
                  capacities: Sequence[float] | None = None,
                  allowed: Sequence[Sequence[int]] | None = None) -> list[int] | None:
    """Place every operand of one step into a scratchpad (each operand whole, capacities respected), or ``None``.
    ``capacities`` overrides the scratchpads' capacities (e.g. the room left by pinned tensors); ``allowed``
    restricts each operand to some scratchpads (e.g. the ones user constraints leave it).

    Exact depth-first search over operands in decreasing size, with symmetry breaking between identical empty
    scratchpads; operand sets of real steps are small (a handful of tensors, a few dozen chunks at most)."""
    order = sorted(range(len(operands)), key=lambda i: -operands[i].size)
    free = [s.capacity for s in spms] if capacities is None else [max(0.0, float(c)) for c in capacities]
    place = [-1] * len(operands)
    options = [
        [k for k, s in enumerate(spms) if s.allows(o.role, read=o.read, written=o.written) and o.size <= free[k]
         and (allowed is None or k in allowed[i])]
        for i, o in enumerate(operands)
    ]
    column = [tuple(k in a for a in allowed) if allowed is not None else () for k in range(len(spms))]
    budget = [200_000]  # node limit: beyond it fall back to "does not fit" (conservative)

    def dfs(j: int) -> bool:
        if j == len(order):
            return True
        budget[0] -= 1
        if budget[0] < 0:
            return False
        i = order[j]
        tried: set[tuple[float, SpmAccess, frozenset[TensorRole], tuple[bool, ...]]] = set()
        for k in sorted(options[i], key=lambda k: free[k]):
            sig = (free[k], spms[k].access, spms[k].holds, column[k])  # interchangeable scratchpads
            if free[k] < operands[i].size or sig in tried:
                continue
            tried.add(sig)
            free[k] -= operands[i].size
            place[i] = k
            if dfs(j + 1):
                return True
            free[k] += operands[i].size
        return False

    return place if dfs(0) else None


def step_operands(graph_buffers: Sequence[Buffer], step: Step) -> list[Operand]:
    return [
        Operand(graph_buffers[b].size_bytes, graph_buffers[b].role, b in step.reads, b in step.writes)
        for b in step.operands
    ]


# --------------------------------------------------------------------------------------------------- untiled
def full_box(shape: Sequence[int]) -> Box:
    return tuple((0, d) for d in shape)


@dataclass(frozen=True)
class StepCycles:
    """Compute cycles of a step with all its operands on chip: ``overrides[op]`` (e.g. the latency a mapping of the
    operator achieves) when given — a tile gets the share ``tile MACs / operator MACs`` of it, rounded up — else the
    accelerator's peak-rate estimate (:meth:`~dlaopt.hardware.model.Accelerator.compute_cycles`)."""

    accelerator: Accelerator
    overrides: Mapping[str, float] = field(default_factory=dict)

    def __call__(self, step_op: Operator, whole: Operator | None = None) -> int:
        whole = whole or step_op
        cycles = self.overrides.get(whole.name)
        if cycles is None:
            return self.accelerator.compute_cycles(step_op)
        if whole.macs and step_op.macs != whole.macs:
            return max(1, math.ceil(cycles * step_op.macs / whole.macs - 1e-9))
        return max(1, math.ceil(cycles - 1e-9))


def untiled_graph(workload: Workload, accelerator: Accelerator, *, cap: bool = False,
                  compute_cycles: Mapping[str, float] | None = None) -> PinningGraph:
    """One buffer per tensor and one step per operator. With ``cap`` (the thesis' stop-gap, seed 000 §6.3)
    every tensor larger than the largest scratchpad it may use is shrunk to that scratchpad's capacity.
    ``compute_cycles`` overrides the accelerator's cycle estimate per operator (:class:`StepCycles`)."""
    cycles = StepCycles(accelerator, compute_cycles or {})
    spms = tuple(Scratchpad.from_memory(m) for m in accelerator.scratchpads)
    index = {name: i for i, name in enumerate(workload.tensors)}
    buffers = []
    capped = []
    for t in workload.tensors.values():
        size = t.size_bytes
        if cap:
            limit = max((s.capacity for s in spms if t.role in s.holds), default=0)
            if size > limit > 0:
                size = limit
                capped.append(t.name)
        buffers.append(Buffer(t.name, size, t.role, t.name, full_box(t.shape)))
    steps = tuple(
        Step(
            name=op.name,
            op=op.name,
            reads=tuple(index[t] for t in dict.fromkeys(op.inputs)),
            writes=tuple(index[t] for t in op.outputs),
            compute_cycles=cycles(op),
            macs=op.macs,
        )
        for op in workload.operators
    )
    return PinningGraph(tuple(buffers), steps, spms, capped=tuple(capped))


def unplaceable_steps(graph: PinningGraph) -> list[int]:
    """Steps whose operands cannot all be placed in the scratchpads at once."""
    return [
        m for m, st in enumerate(graph.steps)
        if pack_operands(step_operands(graph.buffers, st), graph.scratchpads) is None
    ]
