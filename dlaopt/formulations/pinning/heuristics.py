"""Heuristic pinning methods. Each returns a :class:`PinningSolution`; the evaluator prices it.

* ``naive`` — the thesis' baseline (seed 000 §4.2.2): operands resident only during their own step, inputs in the
  input scratchpads and outputs in a designated output scratchpad: every input loaded, every output stored.
* ``onsram`` — OnSRAM-Static ported to several scratchpads: rank non-weight tensors by the transfer cost pinning
  saves, pin a tensor into one scratchpad for its whole lifetime if it fits there at every step without leaving
  any step's other operands without room (seed 000 §3.3.2).
* ``greedy`` — the thesis' naive multi-SPM greedy (§4.2.1): pin every output into the scratchpad with the most room,
  evict (farthest next use first) when an operator's operands do not fit.
* ``coloring`` — TOpLib-style interference-graph colouring (§3.2.1, §3.3.1): tensors whose lifetimes do not
  overlap share a static partition ("pseudo-register") of a scratchpad; the space outside the partitions streams
  the other operands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from dlaopt.formulations.base import HeuristicFailure
from dlaopt.formulations.pinning.data import Operand, PinningGraph, Scratchpad, pack_operands
from dlaopt.formulations.pinning.milp import allowed_mask
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware.model import SpmAccess
from dlaopt.workload.tensor import TensorRole


def _operands(graph: PinningGraph, m: int, buffers: Sequence[int]) -> list[Operand]:
    st = graph.steps[m]
    return [Operand(graph.buffers[b].size_bytes, graph.buffers[b].role, b in st.reads, b in st.writes)
            for b in buffers]


def _place_step(graph: PinningGraph, m: int, buffers: Sequence[int], free: Sequence[float],
                spms: Sequence[Scratchpad] | None = None) -> list[int] | None:
    """Scratchpad per buffer for step ``m`` within ``free`` bytes per scratchpad, or ``None``."""
    if not buffers:
        return []
    return pack_operands(_operands(graph, m, buffers), spms or graph.scratchpads, capacities=free)


def _benefit(graph: PinningGraph, b: int) -> float:
    """Bytes a whole-lifetime pin saves against the naive strategy: every extra use reloads, a produced
    non-output tensor avoids its store."""
    buf = graph.buffers[b]
    saved_loads = len(graph.uses[b]) - 1  # inputs: all loads but the first; produced: every read
    saved_store = 1 if buf.role == TensorRole.ACTIVATION else 0
    return float(buf.size_bytes * (saved_loads + saved_store))


# ------------------------------------------------------------------------------------------------------ naive
def naive_layout(spms: Sequence[Scratchpad]) -> list[Scratchpad]:
    """The seed's designated layout (§4.2.2): one *output* scratchpad takes every write, the others every read.

    The output scratchpad is the last ``output``-only one, else the last one that may be written (``any``); the
    layout only ever *narrows* a scratchpad's declared access (``any`` → ``output`` for the designated one, ``any`` →
    ``input`` for the others), never widens it: an ``input``-only scratchpad is never chosen for writes, an
    ``output``-only one never serves reads. With a single scratchpad, or none that may be written, the declared
    accesses are kept as they are."""
    writable = [k for k, s in enumerate(spms) if s.access != SpmAccess.INPUT]
    if len(spms) < 2 or not writable:
        return list(spms)
    outs = [k for k in writable if spms[k].access == SpmAccess.OUTPUT]
    designated = outs[-1] if outs else writable[-1]
    return [
        dataclasses.replace(s, access=SpmAccess.OUTPUT) if k == designated and s.access == SpmAccess.ANY else
        dataclasses.replace(s, access=SpmAccess.INPUT) if k != designated and s.access == SpmAccess.ANY else s
        for k, s in enumerate(spms)
    ]


def naive(graph: PinningGraph) -> PinningSolution:
    """Every operand resident during its own step only (every input loaded, every output stored), placed in the
    designated layout of :func:`naive_layout`; a step whose operands do not fit that layout (e.g. an in-place
    update, read and written at once, or a designated scratchpad too small) is placed under the declared accesses.
    Every placement honours the declared access, role and capacity of each scratchpad."""
    spms = list(graph.scratchpads)
    steered = naive_layout(spms)
    sol = PinningSolution.empty(graph)
    free = [s.capacity for s in spms]
    for m, st in enumerate(graph.steps):
        ops = list(st.operands)
        place = _place_step(graph, m, ops, free, steered) or _place_step(graph, m, ops, free)
        if place is None:
            raise HeuristicFailure(f"naive: the operands of step '{st.name}' do not fit the scratchpads together "
                                   "(honouring each scratchpad's access mode, roles and capacity)")
        for b, k in zip(ops, place, strict=True):
            sol.set(graph, b, m, k)
    return sol


# ------------------------------------------------------------------------------------------------------ onsram
def _pinned_plan(graph: PinningGraph, pinned: dict[int, int], occupancy: np.ndarray) -> PinningSolution:
    """Pinned buffers resident over their whole window; every other operand only during its own step."""
    sol = PinningSolution.empty(graph)
    for b, k in pinned.items():
        sol.placement[b][:] = k
    cap = np.array([s.capacity for s in graph.scratchpads], dtype=float)
    for m, st in enumerate(graph.steps):
        rest = [b for b in st.operands if b not in pinned]
        place = _place_step(graph, m, rest, cap - occupancy[:, m])
        if place is None:
            raise HeuristicFailure(f"the unpinned operands of step '{st.name}' do not fit")
        for b, k in zip(rest, place, strict=True):
            sol.set(graph, b, m, k)
    return sol


def _fits_pinned(graph: PinningGraph, b: int, k: int, pinned: dict[int, int], occupancy: np.ndarray,
                 mask: np.ndarray) -> bool:
    lo, hi = graph.window[b]
    size = graph.buffers[b].size_bytes
    if not mask[k].all():
        return False
    cap = np.array([s.capacity for s in graph.scratchpads], dtype=float)
    if (occupancy[k, lo:hi + 1] + size > cap[k]).any():
        return False
    for m in range(lo, hi + 1):
        rest = [o for o in graph.steps[m].operands if o not in pinned and o != b]
        free = cap - occupancy[:, m]
        free[k] -= size
        if _place_step(graph, m, rest, free) is None:
            return False
    return True


def onsram(graph: PinningGraph, *, pin_weights: bool = False) -> PinningSolution:
    n_steps = len(graph.steps)
    occupancy = np.zeros((len(graph.scratchpads), n_steps))
    candidates = [b for b, buf in enumerate(graph.buffers)
                  if (pin_weights or buf.role != TensorRole.WEIGHT) and _benefit(graph, b) > 0]
    candidates.sort(key=lambda b: (-_benefit(graph, b), graph.window[b][1] - graph.window[b][0], b))
    pinned: dict[int, int] = {}
    for b in candidates:
        mask = allowed_mask(graph, b)
        lo, hi = graph.window[b]
        order = sorted(range(len(graph.scratchpads)), key=lambda k: occupancy[k, lo:hi + 1].max())
        for k in order:
            if _fits_pinned(graph, b, k, pinned, occupancy, mask):
                pinned[b] = k
                occupancy[k, lo:hi + 1] += graph.buffers[b].size_bytes
                break
    return _pinned_plan(graph, pinned, occupancy)


# ------------------------------------------------------------------------------------------------------ greedy
def greedy(graph: PinningGraph, *, pin_weights: bool = True, keep: PinningSolution | None = None,
           best_fit: bool = False) -> PinningSolution:
    """With ``keep`` (e.g. a relaxation's solution over the same buffers and steps), an idle buffer stays resident
    only at the steps where ``keep`` has it resident ("relax-and-pack"); otherwise every buffer stays until evicted.
    ``best_fit``: place an operand in the tightest scratchpad that holds it without evicting, else where the fewest
    idle bytes must go (the thesis' greedy takes the scratchpad with the most room)."""
    spms = graph.scratchpads
    cap = [s.capacity for s in spms]
    sol = PinningSolution.empty(graph)
    resident: dict[int, int] = {}
    masks = {b: allowed_mask(graph, b, pin_weights=pin_weights) for b in range(len(graph.buffers))}
    next_use_ptr = {b: 0 for b in range(len(graph.buffers))}

    def next_use(b: int, m: int) -> int:
        uses = graph.uses[b]
        i = next_use_ptr[b]
        while i < len(uses) and uses[i] < m:
            i += 1
        next_use_ptr[b] = i
        return uses[i] if i < len(uses) else 1 << 40

    def ok(b: int, k: int, m: int) -> bool:
        lo, hi = graph.window[b]
        return lo <= m <= hi and bool(masks[b][k, m - lo])

    for m, st in enumerate(graph.steps):
        ops = list(st.operands)
        # drop dead buffers and idle ones that may not stay where they are
        for b in list(resident):
            idle = b not in ops
            if graph.window[b][1] < m or (idle and not ok(b, resident[b], m)) or (
                    idle and keep is not None and keep.at(graph, b, m) < 0):
                del resident[b]
        free = [cap[k] - sum(graph.buffers[b].size_bytes for b, kk in resident.items() if kk == k)
                for k in range(len(spms))]
        # operands already resident in a scratchpad that may not serve them now must move
        for b in ops:
            if b in resident and not ok(b, resident[b], m):
                free[resident[b]] += graph.buffers[b].size_bytes
                del resident[b]
        failed = False
        for b in sorted((b for b in ops if b not in resident), key=lambda b: -graph.buffers[b].size_bytes):
            size = graph.buffers[b].size_bytes
            allowed_k = [k for k in range(len(spms)) if ok(b, k, m)]
            if best_fit:
                choices = sorted(allowed_k, key=lambda k: (free[k] < size, free[k] if free[k] >= size else -free[k]))
            else:
                choices = sorted(allowed_k, key=lambda k: -free[k])
            placed = False
            for k in choices:
                victims = sorted((v for v, kk in resident.items() if kk == k and v not in ops),
                                 key=lambda v: -next_use(v, m))
                while free[k] < size and victims:
                    v = victims.pop(0)
                    free[k] += graph.buffers[v].size_bytes
                    del resident[v]
                if free[k] >= size:
                    resident[b] = k
                    free[k] -= size
                    placed = True
                    break
            if not placed:
                failed = True
                break
        if failed:  # fragmentation: evict every idle buffer and repack this step's operands from scratch
            for v in [v for v in resident if v not in ops]:
                del resident[v]
            place = _place_step(graph, m, ops, cap)
            if place is None:
                raise HeuristicFailure(f"greedy: the operands of step '{st.name}' do not fit the scratchpads")
            for b in ops:
                resident.pop(b, None)
            resident.update(zip(ops, place, strict=True))
        for b, k in resident.items():
            sol.set(graph, b, m, k)
    return sol


# ------------------------------------------------------------------------------------------------------ coloring
def coloring(graph: PinningGraph, *, pin_weights: bool = True) -> PinningSolution:
    spms = graph.scratchpads
    cap = np.array([s.capacity for s in spms], dtype=float)
    n_steps = len(graph.steps)
    candidates = [b for b, buf in enumerate(graph.buffers)
                  if (pin_weights or buf.role != TensorRole.WEIGHT) and _benefit(graph, b) > 0]
    candidates.sort(key=lambda b: -_benefit(graph, b))
    partitions: list[tuple[int, int, np.ndarray]] = []  # (scratchpad, size, steps some member is live)
    reserved = np.zeros(len(spms))
    pinned: dict[int, int] = {}
    # slack[m, k]: room left in scratchpad k by the current streaming placement of step m's unpinned operands
    slack = np.zeros((n_steps, len(spms)))
    for m, st in enumerate(graph.steps):
        place = _place_step(graph, m, list(st.operands), cap)
        if place is None:
            raise HeuristicFailure(f"coloring: the operands of step '{st.name}' do not fit the scratchpads")
        slack[m] = cap
        for o, k in zip(st.operands, place, strict=True):
            slack[m, k] -= graph.buffers[o].size_bytes

    def restream(m: int, free: np.ndarray, pinned_now: dict[int, int]) -> np.ndarray | None:
        rest = [o for o in graph.steps[m].operands if o not in pinned_now]
        place = _place_step(graph, m, rest, free)
        if place is None:
            return None
        out = free.copy()
        for o, k in zip(rest, place, strict=True):
            out[k] -= graph.buffers[o].size_bytes
        return out

    for b in candidates:
        lo, hi = graph.window[b]
        size = graph.buffers[b].size_bytes
        mask = allowed_mask(graph, b, pin_weights=pin_weights)
        # reuse a partition (a colour) whose members' lifetimes do not interfere with b's
        for k, psize, busy in partitions:
            if psize >= size and mask[k].all() and not busy[lo:hi + 1].any():
                busy[lo:hi + 1] = True
                pinned[b] = k
                break
        if b in pinned:
            continue
        # otherwise open a new partition where the remaining streaming space still serves every step
        for k in sorted(range(len(spms)), key=lambda k: reserved[k]):
            if not mask[k].all() or reserved[k] + size > cap[k]:
                continue
            trial_pinned = {**pinned, b: k}
            free = cap - reserved
            free[k] -= size
            new_slack = slack.copy()
            new_slack[:, k] -= size
            ok = True
            redo = set(np.flatnonzero(new_slack[:, k] < 0).tolist()) | set(graph.uses[b])
            for m in sorted(redo):
                row = restream(m, free, trial_pinned)
                if row is None:
                    ok = False
                    break
                new_slack[m] = row
            if ok:
                busy = np.zeros(n_steps, dtype=bool)
                busy[lo:hi + 1] = True
                partitions.append((k, size, busy))
                reserved[k] += size
                pinned[b] = k
                slack = new_slack
                break
    sol = PinningSolution.empty(graph)
    for b, k in pinned.items():
        sol.placement[b][:] = k
    free = cap - reserved
    for m, st in enumerate(graph.steps):
        rest = [o for o in st.operands if o not in pinned]
        place = _place_step(graph, m, rest, free)
        if place is None:
            raise HeuristicFailure(f"coloring: the streamed operands of step '{st.name}' do not fit")
        for o, k in zip(rest, place, strict=True):
            sol.set(graph, o, m, k)
    return sol


HEURISTICS = {
    "naive": lambda g, pin_weights: naive(g),
    "onsram": lambda g, pin_weights: onsram(g),
    "greedy": lambda g, pin_weights: greedy(g, pin_weights=pin_weights),
    "coloring": lambda g, pin_weights: coloring(g, pin_weights=pin_weights),
}
