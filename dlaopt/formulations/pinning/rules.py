"""User constraints of tensor pinning: the records an instance's ``constraints`` list becomes, and what the exact
models and the heuristics make of them (the evaluator checks them with its own code, in :mod:`.evaluator`).

Kinds (JSON Schema and the full wording in :mod:`dlaopt.specs.pinning`):

* ``pin`` ``{tensor, memory, steps?}`` — resident in scratchpad ``memory`` at every step of the operators
  ``steps = [first, last]`` (schedule order, inclusive) within its lifetime, or over its whole lifetime;
* ``forbid`` ``{tensor, memory}`` — never in that scratchpad;
* ``off_chip`` ``{tensor}`` — never kept on chip: resident only at the steps that use it (every operand is on chip
  while its operator runs, seed 000 §5.2.2), and every use goes through main memory. Such a buffer is *streamed*:
  each step it is resident at is a residency of its own (a load unless the step produces it; a store after it when
  it was written there and is read later or is a graph output), so its transfers are fixed by the schedule;
* ``dma_cap`` ``{bytes}`` — at most ``bytes`` move between main memory and the scratchpads in any one step. A
  load counts at the step the buffer enters a scratchpad for; a store at the last step it was resident before the
  exit (a graph output's final store: at its last use).

A constraint on a tensor applies to each of its buffers (the chunks oversize tiling makes of it), each over its own
lifetime. :func:`parse_rules` checks meaning when an instance is prepared (an unknown tensor or scratchpad, a step
range that is reversed, outside the schedule or misses the tensor's lifetime) and raises a located
:class:`~dlaopt.errors.InputError`. What is merely impossible is a status: :func:`cheap_conflict` finds the certain
cases quickly (two pins at once, a pin where the tensor may not be, an operand left nowhere to go, pinned tensors
overflowing a scratchpad, a step whose unavoidable transfers exceed a cap); the exact model proves the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dlaopt.formulations.pinning.data import Operand, PinningGraph, pack_operands
from dlaopt.specs.constraints import Constraint, KeyPath
from dlaopt.workload.graph import Workload
from dlaopt.workload.tensor import TensorRole

KINDS = ("pin", "forbid", "off_chip", "dma_cap")


@dataclass(frozen=True)
class PinRule:
    """Buffers ``buffers`` (the chunks of ``tensor``) are in scratchpad ``memory`` at graph steps ``steps``
    (inclusive, clipped to each buffer's lifetime; ``None``: the whole lifetime)."""

    label: str
    path: KeyPath
    tensor: str
    memory: int
    steps: tuple[int, int] | None
    buffers: tuple[int, ...]

    def cells(self, graph: PinningGraph, b: int) -> range:
        """The steps at which buffer ``b`` must be in ``memory``."""
        lo, hi = graph.window[b]
        if self.steps is not None:
            lo, hi = max(lo, self.steps[0]), min(hi, self.steps[1])
        return range(lo, hi + 1)


@dataclass(frozen=True)
class ForbidRule:
    label: str
    path: KeyPath
    tensor: str
    memory: int
    buffers: tuple[int, ...]


@dataclass(frozen=True)
class OffChipRule:
    label: str
    path: KeyPath
    tensor: str
    buffers: tuple[int, ...]


@dataclass(frozen=True)
class DmaCapRule:
    label: str
    path: KeyPath
    bytes: int


@dataclass(frozen=True)
class PinningRules:
    """The typed user constraints of one prepared pinning instance (graph buffer and scratchpad indices)."""

    pins: tuple[PinRule, ...] = ()
    forbids: tuple[ForbidRule, ...] = ()
    off_chip: tuple[OffChipRule, ...] = ()
    dma_caps: tuple[DmaCapRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pins or self.forbids or self.off_chip or self.dma_caps)

    @property
    def dma_cap(self) -> DmaCapRule | None:
        """The tightest cap (the one every step must meet), or ``None``."""
        return min(self.dma_caps, key=lambda r: r.bytes) if self.dma_caps else None

    @property
    def streamed(self) -> frozenset[int]:
        return frozenset(b for r in self.off_chip for b in r.buffers)

    def merged(self) -> PinningRules:
        """The rules of the merged-scratchpad relaxation (one scratchpad, index 0): a pin keeps the tensor on chip,
        a forbid says nothing, off_chip stays, a DMA cap is left out (the relaxation stays a relaxation)."""
        return PinningRules(pins=tuple(dataclasses.replace(p, memory=0) for p in self.pins),
                            off_chip=self.off_chip)


# ------------------------------------------------------------------------------------------------- parsing
def _names(items: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def parse_rules(constraints: Sequence[Constraint], workload: Workload, graph: PinningGraph,
                memory_names: Sequence[str] = ()) -> PinningRules:
    """The typed records of a pinning instance's constraints (meaning checked: located InputErrors).
    ``memory_names``: every memory of the accelerator (to say that main memory is not a scratchpad)."""
    spm_index = {s.name: k for k, s in enumerate(graph.scratchpads)}
    spm_names = list(spm_index)
    tensors = list(workload.tensors)
    chunks: dict[str, list[int]] = {}
    for b, buf in enumerate(graph.buffers):
        chunks.setdefault(buf.tensor, []).append(b)
    op_names = [op.name for op in workload.operators]
    op_index = {n: i for i, n in enumerate(op_names)}
    step_op = [op_index[st.op] for st in graph.steps]

    def tensor(c: Constraint) -> tuple[str, tuple[int, ...]]:
        name = str(c.params["tensor"])
        if name not in workload.tensors:
            raise c.error(f"no tensor named '{name}' in workload '{workload.name}' (tensors: {_names(tensors)})",
                          "tensor", expected="the name of one of the workload's tensors")
        return name, tuple(chunks.get(name, ()))

    def memory(c: Constraint) -> int:
        name = str(c.params["memory"])
        if name not in spm_index:
            what = ("is not a scratchpad (main memory, or another kind of memory)" if name in memory_names
                    else "is not a memory of the accelerator")
            raise c.error(f"'{name}' {what} (scratchpads: {', '.join(spm_names)})", "memory",
                          expected="one of: " + ", ".join(spm_names))
        return spm_index[name]

    def operator(c: Constraint, i: int) -> int:
        value = c.params["steps"][i]
        if isinstance(value, str):
            if value not in op_index:
                raise c.error(f"no operator named '{value}' in workload '{workload.name}'", "steps", i,
                              expected=f"an operator name or index 0..{len(op_names) - 1}")
            return op_index[value]
        if not 0 <= int(value) < len(op_names):
            raise c.error(f"operator index {value} is outside the schedule (operators 0..{len(op_names) - 1})",
                          "steps", i, expected=f"an operator index 0..{len(op_names) - 1} or an operator name")
        return int(value)

    pins, forbids, off, caps = [], [], [], []
    for c in constraints:
        if c.kind == "pin":
            name, bufs = tensor(c)
            k = memory(c)
            used = [b for b in bufs if graph.uses[b]]
            if not used:
                raise c.error(f"tensor '{name}' is used by no operator: it is never anywhere to pin", "tensor",
                              expected="a tensor some operator reads or writes")
            steps = None
            if c.params.get("steps") is not None:
                first, last = operator(c, 0), operator(c, 1)
                if first > last:
                    raise c.error(f"the step range [{first}, {last}] is reversed", "steps",
                                  expected="[first, last] with first <= last (schedule order)")
                in_range = [m for m, i in enumerate(step_op) if first <= i <= last]
                steps = (in_range[0], in_range[-1])
                if not any(graph.window[b][0] <= steps[1] and steps[0] <= graph.window[b][1] for b in used):
                    life = (min(step_op[graph.window[b][0]] for b in used),
                            max(step_op[graph.window[b][1]] for b in used))
                    raise c.error(f"tensor '{name}' lives from operator {life[0]} ('{op_names[life[0]]}') to "
                                  f"{life[1]} ('{op_names[life[1]]}'); the steps [{first}, {last}] miss its "
                                  "lifetime", "steps", expected=f"a range that meets [{life[0]}, {life[1]}]")
            pins.append(PinRule(c.label, c.path, name, k, steps, tuple(used)))
        elif c.kind == "forbid":
            name, bufs = tensor(c)
            forbids.append(ForbidRule(c.label, c.path, name, memory(c), bufs))
        elif c.kind == "off_chip":
            name, bufs = tensor(c)
            off.append(OffChipRule(c.label, c.path, name, bufs))
        elif c.kind == "dma_cap":
            caps.append(DmaCapRule(c.label, c.path, int(c.params["bytes"])))
        else:  # the schema admits only the kinds above
            raise c.error(f"unknown constraint kind '{c.kind}'", "kind", expected="one of: " + ", ".join(KINDS))
    return PinningRules(tuple(pins), tuple(forbids), tuple(off), tuple(caps))


# ------------------------------------------------------------------------------------------------- the view
def allowed_mask(graph: PinningGraph, b: int, *, pin_weights: bool = True) -> np.ndarray:
    """Boolean (K, window length) array: may buffer ``b`` sit in scratchpad k at each step of its window (role,
    access, size; with ``pin_weights`` off, a weight only at its uses)? User constraints: :class:`RuleView`."""
    lo, hi = graph.window[b]
    buf = graph.buffers[b]
    length = hi - lo + 1
    steps = np.arange(lo, hi + 1)
    reads = np.isin(steps, list(graph.read_steps[b]))
    writes = np.isin(steps, graph.write_steps[b])
    mask = np.zeros((len(graph.scratchpads), length), dtype=bool)
    for k, spm in enumerate(graph.scratchpads):
        if buf.role not in spm.holds or buf.size_bytes > spm.capacity:
            continue
        ok = np.ones(length, dtype=bool)
        if spm.access.value == "input":
            ok &= ~writes
        elif spm.access.value == "output":
            ok &= ~reads
        mask[k] = ok
    if not pin_weights and buf.role == TensorRole.WEIGHT:
        mask[:, ~np.isin(steps, graph.uses[b])] = False
    return mask


@dataclass
class RuleView:
    """The user constraints as the exact models and the heuristics use them: per buffer, where it may be at each
    step of its window (:meth:`mask`), where it must be (:attr:`pinned`), whether it is streamed."""

    graph: PinningGraph
    rules: PinningRules = field(default_factory=PinningRules)
    pin_weights: bool = True

    @cached_property
    def pinned(self) -> list[dict[int, int]]:
        """Buffer → {step: scratchpad} of its pinned cells; ``-1`` where two pins disagree (no scratchpad is
        allowed there, so every model is infeasible; :func:`cheap_conflict` names the pins)."""
        out: list[dict[int, int]] = [{} for _ in self.graph.buffers]
        for p in self.rules.pins:
            for b in p.buffers:
                for m in p.cells(self.graph, b):
                    if out[b].setdefault(m, p.memory) != p.memory:
                        out[b][m] = -1
        return out

    @cached_property
    def clash(self) -> bool:
        """Do two pins put one buffer in two scratchpads at once?"""
        return any(k < 0 for cells in self.pinned for k in cells.values())

    @cached_property
    def forbidden(self) -> list[frozenset[int]]:
        out: list[set[int]] = [set() for _ in self.graph.buffers]
        for f in self.rules.forbids:
            for b in f.buffers:
                out[b].add(f.memory)
        return [frozenset(s) for s in out]

    @cached_property
    def streamed(self) -> frozenset[int]:
        return self.rules.streamed

    @cached_property
    def _masks(self) -> list[np.ndarray]:
        g = self.graph
        out = []
        for b in range(len(g.buffers)):
            lo, hi = g.window[b]
            mask = allowed_mask(g, b, pin_weights=True)
            steps = np.arange(lo, hi + 1)
            if not self.pin_weights and g.buffers[b].role == TensorRole.WEIGHT:
                mask[:, ~np.isin(steps, [*g.uses[b], *self.pinned[b]])] = False
            for k in self.forbidden[b]:
                mask[k] = False
            if b in self.streamed:
                mask[:, ~np.isin(steps, g.uses[b])] = False
            for m, k in self.pinned[b].items():
                keep_k = k >= 0 and bool(mask[k, m - lo])
                mask[:, m - lo] = False
                if k >= 0:
                    mask[k, m - lo] = keep_k
            out.append(mask)
        return out

    def mask(self, b: int) -> np.ndarray:
        """(K, window length): may buffer ``b`` be in scratchpad k at each step of its window, all rules applied?"""
        return self._masks[b]

    def ok(self, b: int, k: int, m: int) -> bool:
        lo, hi = self.graph.window[b]
        return lo <= m <= hi and bool(self._masks[b][k, m - lo])

    def allowed_at(self, b: int, m: int) -> list[int]:
        lo, hi = self.graph.window[b]
        if not lo <= m <= hi:
            return []
        return [int(k) for k in np.flatnonzero(self._masks[b][:, m - lo])]

    @cached_property
    def pinned_by_step(self) -> list[dict[int, int]]:
        """Step → {buffer: scratchpad} of the pinned cells at that step."""
        out: list[dict[int, int]] = [{} for _ in self.graph.steps]
        for b, cells in enumerate(self.pinned):
            for m, k in cells.items():
                out[m][b] = k
        return out

    def pinned_occupancy(self) -> np.ndarray:
        """(K, steps): bytes the pinned cells take in each scratchpad at each step."""
        occ = np.zeros((len(self.graph.scratchpads), len(self.graph.steps)))
        for b, cells in enumerate(self.pinned):
            for m, k in cells.items():
                if k >= 0:
                    occ[k, m] += self.graph.buffers[b].size_bytes
        return occ

    def pack(self, m: int, buffers: Sequence[int], free: Sequence[float]) -> list[int] | None:
        """Scratchpad per buffer for step ``m`` within ``free`` bytes per scratchpad, each where it may be, or
        ``None``."""
        if not buffers:
            return []
        st = self.graph.steps[m]
        ops = [Operand(self.graph.buffers[b].size_bytes, self.graph.buffers[b].role, b in st.reads, b in st.writes)
               for b in buffers]
        return pack_operands(ops, self.graph.scratchpads, capacities=free,
                             allowed=[self.allowed_at(b, m) for b in buffers])


# ------------------------------------------------------------------------------------------------- transfers
def streamed_transfers(graph: PinningGraph, b: int) -> tuple[list[int], list[int]]:
    """(load steps, store steps) of a streamed (off-chip) buffer resident exactly at its uses: a load at every use
    but its production, a store after every write that is read later or belongs to a graph output."""
    _, hi = graph.window[b]
    producer = graph.producer[b]
    output = graph.buffers[b].role == TensorRole.OUTPUT
    loads = [m for m in graph.uses[b] if m != producer]
    stores = [m for m in graph.write_steps[b] if m < hi or output]
    return loads, stores


def step_dma_bytes(graph: PinningGraph, placement: Sequence[np.ndarray], streamed: frozenset[int]) -> np.ndarray:
    """Bytes moved at each step by a placement (loads at the step a buffer enters a scratchpad for, stores at the
    last step before the exit, a graph output's final store at its last use) — what heuristics check a cap on."""
    out = np.zeros(len(graph.steps))
    for b, buf in enumerate(graph.buffers):
        lo, hi = graph.window[b]
        if hi < lo:
            continue
        row = np.asarray(placement[b])
        writes = set(graph.write_steps[b])
        dirty = False
        for i in range(hi - lo + 1):
            m = lo + i
            here, before = int(row[i]), int(row[i - 1]) if i else -1
            exit_ = before >= 0 and (here != before or b in streamed)
            if exit_ and dirty:
                out[m - 1] += buf.size_bytes
                dirty = False
            if here >= 0 and (here != before or b in streamed) and m != graph.producer[b]:
                out[m] += buf.size_bytes
            dirty = dirty or m in writes
        if dirty and buf.role == TensorRole.OUTPUT:
            out[hi] += buf.size_bytes
    return out


def dma_overflow(graph: PinningGraph, placement: Sequence[np.ndarray], rules: PinningRules) -> str | None:
    """Why a placement breaks the tightest DMA cap (first step over it), or ``None``."""
    cap = rules.dma_cap
    if cap is None:
        return None
    per = step_dma_bytes(graph, placement, rules.streamed)
    over = np.flatnonzero(per > cap.bytes)
    if over.size == 0:
        return None
    m = int(over[0])
    return f"{cap.label}: step {m} ('{graph.steps[m].name}') moves {int(per[m])} bytes, above the cap of {cap.bytes}"


# ------------------------------------------------------------------------------------------------- conflicts
def cheap_conflict(view: RuleView) -> str | None:
    """A reason the constraints cannot hold, found without a solver (the certain cases), or ``None``."""
    g, rules = view.graph, view.rules
    names = [s.name for s in g.scratchpads]
    # two pins placing one buffer in two scratchpads at once
    seen: dict[tuple[int, int], PinRule] = {}
    for p in rules.pins:
        for b in p.buffers:
            for m in p.cells(g, b):
                q = seen.setdefault((b, m), p)
                if q.memory != p.memory:
                    return (f"{q.label} and {p.label} put buffer '{g.buffers[b].name}' in '{names[q.memory]}' and "
                            f"'{names[p.memory]}' at step {m} ('{g.steps[m].name}')")
    # a pinned cell where the buffer may not be
    base = RuleView(g, PinningRules(), view.pin_weights)
    for p in rules.pins:
        for b in p.buffers:
            for m in p.cells(g, b):
                if not view.ok(b, p.memory, m):
                    return (f"{p.label}: buffer '{g.buffers[b].name}' may not be in '{names[p.memory]}' at step "
                            f"{m} ('{g.steps[m].name}'): {_why_not(view, base, b, p.memory, m)}")
    # an operand with nowhere to go
    for m, st in enumerate(g.steps):
        for b in st.operands:
            if not view.allowed_at(b, m):
                who = [f.label for f in rules.forbids if b in f.buffers]
                return (f"{', '.join(who) or 'the constraints'} leave buffer '{g.buffers[b].name}' no scratchpad "
                        f"at step {m} ('{st.name}'), which uses it")
    # pinned cells overflowing a scratchpad, or leaving a step's other operands no room
    occ = view.pinned_occupancy()
    cap = np.array([s.capacity for s in g.scratchpads], dtype=float)
    for m, st in enumerate(g.steps):
        pinned = view.pinned_by_step[m]
        if not pinned:
            continue
        who = sorted({p.label for p in rules.pins for b in pinned if b in p.buffers and m in p.cells(g, b)})
        over = np.flatnonzero(occ[:, m] > cap)
        if over.size:
            k = int(over[0])
            return (f"{', '.join(who)}: the tensors pinned to '{names[k]}' at step {m} ('{st.name}') take "
                    f"{int(occ[k, m])} bytes, its capacity is {int(cap[k])}")
        rest = [b for b in st.operands if b not in pinned]
        if view.pack(m, rest, cap - occ[:, m]) is None:
            return (f"{', '.join(who)}: with the pinned tensors in place, the other operands of step {m} "
                    f"('{st.name}') do not fit the scratchpads")
    # transfers no placement avoids, above a DMA cap
    capr = rules.dma_cap
    if capr is not None:
        must = np.zeros(len(g.steps))
        for b, buf in enumerate(g.buffers):
            if not g.uses[b]:
                continue
            if b in view.streamed:
                loads, stores = streamed_transfers(g, b)
                for m in loads + stores:
                    must[m] += buf.size_bytes
                continue
            lo, hi = g.window[b]
            if g.producer[b] != lo:  # not produced at its first use: loaded then
                must[lo] += buf.size_bytes
            if buf.role == TensorRole.OUTPUT and g.write_steps[b] and g.write_steps[b][-1] == hi:
                must[hi] += buf.size_bytes  # written at its last use: the final store follows that step
        over = np.flatnonzero(must > capr.bytes)
        if over.size:
            m = int(over[0])
            return (f"{capr.label}: step {m} ('{g.steps[m].name}') must move at least {int(must[m])} bytes "
                    f"(loads of the tensors it uses first, stores of the outputs it finishes, off-chip tensors), "
                    f"above the cap of {capr.bytes}")
    return None


def _why_not(view: RuleView, base: RuleView, b: int, k: int, m: int) -> str:
    g, rules = view.graph, view.rules
    if not base.ok(b, k, m):
        spm, buf = g.scratchpads[k], g.buffers[b]
        if buf.size_bytes > spm.capacity:
            return f"it takes {buf.size_bytes} bytes, the scratchpad {spm.capacity}"
        if buf.role not in spm.holds:
            return f"the scratchpad does not hold {buf.role.value} tensors"
        if not view.pin_weights and buf.role == TensorRole.WEIGHT:
            return "weights stay only at their uses (options.pin_weights is false)"
        verb = "writes" if m in g.write_steps[b] else "reads"
        return f"the scratchpad is {spm.access.value}-only and the step {verb} it"
    who = [f.label for f in rules.forbids if b in f.buffers and f.memory == k]
    if who:
        return f"{', '.join(who)} forbids it"
    who = [o.label for o in rules.off_chip if b in o.buffers]
    if who:
        return f"{', '.join(who)} keeps it off chip at the steps that do not use it"
    return "another constraint excludes it"


__all__ = ["KINDS", "DmaCapRule", "ForbidRule", "OffChipRule", "PinRule", "PinningRules", "RuleView",
           "allowed_mask", "cheap_conflict", "dma_overflow", "parse_rules", "step_dma_bytes", "streamed_transfers"]
