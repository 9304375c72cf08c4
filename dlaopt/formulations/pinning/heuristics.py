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

User constraints (:mod:`.rules`) are respected by construction: pinned cells are placed first and never evicted,
each operand goes only where the rules leave it room (forbidden scratchpads excluded, an off-chip tensor never kept
idle), and a buffer a user pins or keeps off chip is not one a heuristic pins on its own. A DMA cap is checked on the
result: a heuristic whose placement moves more in some step raises :class:`HeuristicFailure` (a status), as does
one that finds no room for a step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from dlaopt.formulations.base import HeuristicFailure
from dlaopt.formulations.pinning.data import Operand, PinningGraph, Scratchpad, pack_operands
from dlaopt.formulations.pinning.rules import PinningRules, RuleView, dma_overflow
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware.model import SpmAccess
from dlaopt.workload.tensor import TensorRole


def _operands(graph: PinningGraph, m: int, buffers: Sequence[int]) -> list[Operand]:
    st = graph.steps[m]
    return [Operand(graph.buffers[b].size_bytes, graph.buffers[b].role, b in st.reads, b in st.writes)
            for b in buffers]


def _place_step(view: RuleView, m: int, buffers: Sequence[int], free: Sequence[float],
                spms: Sequence[Scratchpad] | None = None) -> list[int] | None:
    """Scratchpad per buffer for step ``m`` within ``free`` bytes per scratchpad (each where the rules allow it),
    or ``None``."""
    if not buffers:
        return []
    return pack_operands(_operands(view.graph, m, buffers), spms or view.graph.scratchpads, capacities=free,
                         allowed=[view.allowed_at(b, m) for b in buffers])


def _view(graph: PinningGraph, rules: PinningRules | None, pin_weights: bool) -> RuleView:
    view = RuleView(graph, rules or PinningRules(), pin_weights)
    if view.clash:
        raise HeuristicFailure("two pins put one tensor in two scratchpads at once")
    for b, cells in enumerate(view.pinned):
        for m, k in cells.items():
            if not view.ok(b, k, m):
                raise HeuristicFailure(f"buffer '{graph.buffers[b].name}' is pinned to a scratchpad it may not use "
                                       f"at step {m}")
    return view


def _checked(name: str, view: RuleView, sol: PinningSolution, *, repair: bool = True) -> PinningSolution:
    """``sol``, unless it breaks the DMA cap; then, with ``repair``, the placement :func:`repair_dma_cap` makes of
    it, and :class:`HeuristicFailure` if that still breaks the cap. Without a cap ``sol`` is returned untouched."""
    why = dma_overflow(view.graph, sol.placement, view.rules)
    if why and repair:
        sol = repair_dma_cap(view, sol)
        why = dma_overflow(view.graph, sol.placement, view.rules)
        if why:
            why += " (after moving loads earlier and stores later wherever the scratchpads and the rules allow)"
    if why:
        raise HeuristicFailure(f"{name}: {why}")
    return sol


# ------------------------------------------------------------------------------------------------------ cap repair
def _buffer_dma(graph: PinningGraph, b: int, row: np.ndarray, streamed: bool) -> dict[int, int]:
    """Step → bytes buffer ``b`` moves there when resident as ``row`` says (loads at the step it enters a
    scratchpad for, unless produced there; a dirty exit's store at the last step before it; a graph output's final
    store at its last use; a streamed buffer exits after every step)."""
    lo, hi = graph.window[b]
    size = graph.buffers[b].size_bytes
    writes = set(graph.write_steps[b])
    out: dict[int, int] = {}
    dirty = False
    before = -1
    for i in range(hi - lo + 1):
        m = lo + i
        here = int(row[i])
        moved = here != before or streamed
        if before >= 0 and moved and dirty:
            out[m - 1] = out.get(m - 1, 0) + size
            dirty = False
        if here >= 0 and moved and m != graph.producer[b]:
            out[m] = out.get(m, 0) + size
        dirty = dirty or m in writes
        before = here
    if dirty and graph.buffers[b].role == TensorRole.OUTPUT:
        out[hi] = out.get(hi, 0) + size
    return out


def _extensions(view: RuleView, b: int, row: np.ndarray, free: np.ndarray) -> list[tuple[int, int, int]]:
    """Ways to change one residency run of buffer ``b``, each ``(first, last, scratchpad)`` (the steps to put it in
    that scratchpad). Lengthen the run into idle cells backwards from the step it enters for (its load comes
    earlier: a prefetch; reaching an earlier run in the same scratchpad, the buffer stays resident instead of being
    stored and reloaded), or forwards from the step it exits after (its write-back comes later). Or move the whole
    run to another scratchpad (next to a run there, the move between scratchpads disappears). Only cells where the
    rules let it be and the scratchpad has room."""
    graph = view.graph
    lo, hi = graph.window[b]
    size = graph.buffers[b].size_bytes
    out: list[tuple[int, int, int]] = []
    n = hi - lo + 1
    for i in range(n):
        k = int(row[i])
        if k < 0:
            continue
        if i > 0 and row[i - 1] < 0:  # a run starts at lo + i: prefetch / keep resident
            j = i - 1
            while j >= 0 and row[j] < 0 and view.ok(b, k, lo + j) and free[k, lo + j] >= size:
                out.append((lo + j, lo + i - 1, k))
                j -= 1
        if i < n - 1 and row[i + 1] < 0:  # a run ends at lo + i: write back later / keep resident
            j = i + 1
            while j < n and row[j] < 0 and view.ok(b, k, lo + j) and free[k, lo + j] >= size:
                out.append((lo + i + 1, lo + j, k))
                j += 1
        if i == 0 or row[i - 1] != k:  # a run starts at lo + i: move it whole to another scratchpad
            e = i
            while e + 1 < n and row[e + 1] == k:
                e += 1
            for k2 in range(len(graph.scratchpads)):
                if k2 != k and all(view.ok(b, k2, lo + j) and free[k2, lo + j] >= size for j in range(i, e + 1)):
                    out.append((lo + i, lo + e, k2))
    return out


def repair_dma_cap(view: RuleView, sol: PinningSolution) -> PinningSolution:
    """A copy of ``sol`` with steps over the tightest DMA cap relieved, greedily: among every way to lengthen one
    residency run into idle cells (a load moved to an earlier step with spare room and spare cap, a store moved to a
    later one, or a store + reload replaced by staying resident — see :func:`_extensions`), take the one that
    removes the most bytes above the cap (ties: fewer bytes moved in all, then fewer cells), until no step is over
    or no move helps; a whole run may also move to another scratchpad (e.g. next to the buffer's following run
    there, so the move between scratchpads and its reload disappear). Cells only ever change to a scratchpad the
    rules allow there with room for the buffer, and no cell is emptied, so every operand stays resident at its
    uses, pins hold and off-chip tensors stay off chip. The result may still break the cap; the caller checks."""
    graph, cap_rule = view.graph, view.rules.dma_cap
    out = PinningSolution([row.copy() for row in sol.placement])
    if cap_rule is None:
        return out
    cap = cap_rule.bytes
    n_steps = len(graph.steps)
    size = [buf.size_bytes for buf in graph.buffers]
    capacity = np.array([s.capacity for s in graph.scratchpads], dtype=float)
    occ = np.zeros((len(graph.scratchpads), n_steps))
    per_buf: list[dict[int, int]] = []
    per_step = np.zeros(n_steps)
    for b in range(len(graph.buffers)):
        lo, hi = graph.window[b]
        for i in range(hi - lo + 1):
            if out.placement[b][i] >= 0:
                occ[out.placement[b][i], lo + i] += size[b]
        moves = _buffer_dma(graph, b, out.placement[b], b in view.streamed) if hi >= lo else {}
        per_buf.append(moves)
        for m, v in moves.items():
            per_step[m] += v

    def excess(vec: np.ndarray) -> float:
        return float(np.maximum(vec - cap, 0.0).sum())

    while excess(per_step) > 0:
        free = capacity[:, None] - occ
        current = excess(per_step)
        best: tuple[float, float, int, int, int, int, int] | None = None  # (-relief, total, cells, b, first, last, k)
        for b in range(len(graph.buffers)):
            lo, hi = graph.window[b]
            if hi < lo or b in view.streamed:
                continue
            row = out.placement[b]
            base = per_buf[b]
            for first, last, k in _extensions(view, b, row, free):
                trial = row.copy()
                trial[first - lo:last - lo + 1] = k
                moves = _buffer_dma(graph, b, trial, False)
                vec = per_step.copy()
                for m, v in base.items():
                    vec[m] -= v
                for m, v in moves.items():
                    vec[m] += v
                relief = current - excess(vec)
                if relief <= 0:
                    continue
                key = (-relief, float(vec.sum()), last - first + 1, b, first, last, k)
                if best is None or key < best:
                    best = key
        if best is None:
            break
        _, _, _, b, first, last, k = best
        lo, _ = graph.window[b]
        for m in range(first, last + 1):
            was = int(out.placement[b][m - lo])
            if was >= 0:
                occ[was, m] -= size[b]
            occ[k, m] += size[b]
        out.placement[b][first - lo:last - lo + 1] = k
        for m, v in per_buf[b].items():
            per_step[m] -= v
        per_buf[b] = _buffer_dma(graph, b, out.placement[b], False)
        for m, v in per_buf[b].items():
            per_step[m] += v
    return out


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


def naive(graph: PinningGraph, *, rules: PinningRules | None = None, pin_weights: bool = True) -> PinningSolution:
    """Every operand resident during its own step only (every input loaded, every output stored), placed in the
    designated layout of :func:`naive_layout`; a step whose operands do not fit that layout (e.g. an in-place
    update, read and written at once, or a designated scratchpad too small) is placed under the declared accesses.
    Every placement honours the declared access, role and capacity of each scratchpad; pinned cells stay where
    they are pinned."""
    view = _view(graph, rules, pin_weights)
    spms = list(graph.scratchpads)
    steered = naive_layout(spms)
    sol = PinningSolution.empty(graph)
    cap = np.array([s.capacity for s in spms], dtype=float)
    for m, st in enumerate(graph.steps):
        fixed = view.pinned_by_step[m]
        free = cap.copy()
        for b, k in fixed.items():
            free[k] -= graph.buffers[b].size_bytes
            sol.set(graph, b, m, k)
        ops = [b for b in st.operands if b not in fixed]
        place = None
        if (free >= 0).all():
            place = _place_step(view, m, ops, free, steered)
            if place is None:
                place = _place_step(view, m, ops, free)
        if place is None:
            raise HeuristicFailure(f"naive: the operands of step '{st.name}' do not fit the scratchpads together "
                                   "(honouring each scratchpad's access mode, roles and capacity, and the pins)")
        for b, k in zip(ops, place, strict=True):
            sol.set(graph, b, m, k)
    return _checked("naive", view, sol, repair=False)


# ------------------------------------------------------------------------------------------------------ onsram
def _pinned_plan(view: RuleView, pinned: dict[int, int], occupancy: np.ndarray) -> PinningSolution:
    """Pinned buffers resident over their whole window, the user's pinned cells where they are pinned; every other
    operand only during its own step."""
    graph = view.graph
    sol = PinningSolution.empty(graph)
    for b, k in pinned.items():
        sol.placement[b][:] = k
    cap = np.array([s.capacity for s in graph.scratchpads], dtype=float)
    for m, st in enumerate(graph.steps):
        fixed = view.pinned_by_step[m]
        for b, k in fixed.items():
            sol.set(graph, b, m, k)
        rest = [b for b in st.operands if b not in pinned and b not in fixed]
        place = _place_step(view, m, rest, cap - occupancy[:, m])
        if place is None:
            raise HeuristicFailure(f"the unpinned operands of step '{st.name}' do not fit")
        for b, k in zip(rest, place, strict=True):
            sol.set(graph, b, m, k)
    return sol


def _fits_pinned(view: RuleView, b: int, k: int, pinned: dict[int, int], occupancy: np.ndarray,
                 mask: np.ndarray) -> bool:
    graph = view.graph
    lo, hi = graph.window[b]
    size = graph.buffers[b].size_bytes
    if not mask[k].all():
        return False
    cap = np.array([s.capacity for s in graph.scratchpads], dtype=float)
    if (occupancy[k, lo:hi + 1] + size > cap[k]).any():
        return False
    for m in range(lo, hi + 1):
        fixed = view.pinned_by_step[m]
        rest = [o for o in graph.steps[m].operands if o not in pinned and o != b and o not in fixed]
        free = cap - occupancy[:, m]
        free[k] -= size
        if _place_step(view, m, rest, free) is None:
            return False
    return True


def onsram(graph: PinningGraph, *, pin_weights: bool = False, rules: PinningRules | None = None) -> PinningSolution:
    view = _view(graph, rules, pin_weights)
    occupancy = view.pinned_occupancy()  # the user's pins first
    if (occupancy > np.array([s.capacity for s in graph.scratchpads], dtype=float)[:, None]).any():
        raise HeuristicFailure("onsram: the pinned tensors overflow a scratchpad")
    user = {b for b, cells in enumerate(view.pinned) if cells} | view.streamed
    candidates = [b for b, buf in enumerate(graph.buffers)
                  if (pin_weights or buf.role != TensorRole.WEIGHT) and _benefit(graph, b) > 0 and b not in user]
    candidates.sort(key=lambda b: (-_benefit(graph, b), graph.window[b][1] - graph.window[b][0], b))
    pinned: dict[int, int] = {}
    for b in candidates:
        mask = view.mask(b)
        lo, hi = graph.window[b]
        order = sorted(range(len(graph.scratchpads)), key=lambda k: occupancy[k, lo:hi + 1].max())
        for k in order:
            if _fits_pinned(view, b, k, pinned, occupancy, mask):
                pinned[b] = k
                occupancy[k, lo:hi + 1] += graph.buffers[b].size_bytes
                break
    try:
        sol = _pinned_plan(view, pinned, occupancy)
    except HeuristicFailure as exc:
        raise HeuristicFailure(f"onsram: {exc}") from None
    return _checked("onsram", view, sol)


# ------------------------------------------------------------------------------------------------------ greedy
def greedy(graph: PinningGraph, *, pin_weights: bool = True, keep: PinningSolution | None = None,
           best_fit: bool = False, rules: PinningRules | None = None) -> PinningSolution:
    """With ``keep`` (e.g. a relaxation's solution over the same buffers and steps), an idle buffer stays resident
    only at the steps where ``keep`` has it resident ("relax-and-pack"); otherwise every buffer stays until evicted.
    ``best_fit``: place an operand in the tightest scratchpad that holds it without evicting, else where the fewest
    idle bytes must go (the thesis' greedy takes the scratchpad with the most room). Pinned cells are placed first
    and never evicted."""
    view = _view(graph, rules, pin_weights)
    spms = graph.scratchpads
    cap = [s.capacity for s in spms]
    sol = PinningSolution.empty(graph)
    resident: dict[int, int] = {}
    next_use_ptr = {b: 0 for b in range(len(graph.buffers))}
    size = [buf.size_bytes for buf in graph.buffers]

    def next_use(b: int, m: int) -> int:
        uses = graph.uses[b]
        i = next_use_ptr[b]
        while i < len(uses) and uses[i] < m:
            i += 1
        next_use_ptr[b] = i
        return uses[i] if i < len(uses) else 1 << 40

    def make_room(k: int, need: int, free: list[float], protected: set[int], m: int) -> bool:
        """Evict idle, unprotected buffers from ``k`` (farthest next use first) until ``need`` bytes are free."""
        victims = sorted((v for v, kk in resident.items() if kk == k and v not in protected),
                         key=lambda v: -next_use(v, m))
        while free[k] < need and victims:
            v = victims.pop(0)
            free[k] += size[v]
            del resident[v]
        return free[k] >= need

    for m, st in enumerate(graph.steps):
        ops = list(st.operands)
        must = view.pinned_by_step[m]
        protected = set(ops) | set(must)
        # drop dead buffers and idle ones that may not stay where they are
        for b in list(resident):
            idle = b not in ops
            if graph.window[b][1] < m or (idle and not view.ok(b, resident[b], m)) or (
                    idle and b not in must and keep is not None and keep.at(graph, b, m) < 0):
                del resident[b]
        free = [cap[k] - sum(size[b] for b, kk in resident.items() if kk == k) for k in range(len(spms))]
        # operands and pinned buffers resident where they may not be now must move
        for b in list(resident):
            if (b in protected and not view.ok(b, resident[b], m)) or (b in must and resident[b] != must[b]):
                free[resident[b]] += size[b]
                del resident[b]
        failed = False
        for b, k in must.items():  # the user's pins first
            if b in resident:
                continue
            if not make_room(k, size[b], free, protected, m):
                failed = True
                break
            resident[b] = k
            free[k] -= size[b]
        for b in sorted((b for b in ops if b not in resident), key=lambda b: -size[b]):
            if failed:
                break
            allowed_k = view.allowed_at(b, m)
            if best_fit:
                choices = sorted(allowed_k, key=lambda k: (free[k] < size[b], free[k] if free[k] >= size[b]
                                                           else -free[k]))
            else:
                choices = sorted(allowed_k, key=lambda k: -free[k])
            for k in choices:
                if make_room(k, size[b], free, protected, m):
                    resident[b] = k
                    free[k] -= size[b]
                    break
            else:
                failed = True
        if failed:  # fragmentation: evict every idle buffer and repack this step's operands from scratch
            resident.clear()
            room = list(map(float, cap))
            for b, k in must.items():
                room[k] -= size[b]
            rest = [b for b in ops if b not in must]
            place = _place_step(view, m, rest, room) if min(room) >= 0 else None
            if place is None:
                raise HeuristicFailure(f"greedy: the operands of step '{st.name}' do not fit the scratchpads")
            resident.update(must)
            resident.update(zip(rest, place, strict=True))
        for b, k in resident.items():
            sol.set(graph, b, m, k)
    return _checked("greedy", view, sol)


# ------------------------------------------------------------------------------------------------------ coloring
def coloring(graph: PinningGraph, *, pin_weights: bool = True, rules: PinningRules | None = None) -> PinningSolution:
    view = _view(graph, rules, pin_weights)
    spms = graph.scratchpads
    cap = np.array([s.capacity for s in spms], dtype=float)
    n_steps = len(graph.steps)
    fixed_occ = view.pinned_occupancy()  # the user's pinned cells, step by step
    user = {b for b, cells in enumerate(view.pinned) if cells} | view.streamed
    candidates = [b for b, buf in enumerate(graph.buffers)
                  if (pin_weights or buf.role != TensorRole.WEIGHT) and _benefit(graph, b) > 0 and b not in user]
    candidates.sort(key=lambda b: -_benefit(graph, b))
    partitions: list[tuple[int, int, np.ndarray]] = []  # (scratchpad, size, steps some member is live)
    reserved = np.zeros(len(spms))
    pinned: dict[int, int] = {}

    def streamed_ops(m: int, pinned_now: dict[int, int]) -> list[int]:
        return [o for o in graph.steps[m].operands if o not in pinned_now and o not in view.pinned_by_step[m]]

    # slack[m, k]: room left in scratchpad k by the current streaming placement of step m's unpinned operands
    slack = np.zeros((n_steps, len(spms)))
    for m, st in enumerate(graph.steps):
        rest = streamed_ops(m, pinned)
        free = cap - fixed_occ[:, m]
        place = _place_step(view, m, rest, free) if (free >= 0).all() else None
        if place is None:
            raise HeuristicFailure(f"coloring: the operands of step '{st.name}' do not fit the scratchpads")
        slack[m] = free
        for o, k in zip(rest, place, strict=True):
            slack[m, k] -= graph.buffers[o].size_bytes

    def restream(m: int, free: np.ndarray, pinned_now: dict[int, int]) -> np.ndarray | None:
        rest = streamed_ops(m, pinned_now)
        place = _place_step(view, m, rest, free)
        if place is None:
            return None
        out = free.copy()
        for o, k in zip(rest, place, strict=True):
            out[k] -= graph.buffers[o].size_bytes
        return out

    for b in candidates:
        lo, hi = graph.window[b]
        size = graph.buffers[b].size_bytes
        mask = view.mask(b)
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
            if not mask[k].all() or reserved[k] + size + fixed_occ[k].max(initial=0.0) > cap[k]:
                continue
            trial_pinned = {**pinned, b: k}
            free = cap - reserved
            free[k] -= size
            new_slack = slack.copy()
            new_slack[:, k] -= size
            ok = True
            redo = set(np.flatnonzero(new_slack[:, k] < 0).tolist()) | set(graph.uses[b])
            for m in sorted(redo):
                row = restream(m, free - fixed_occ[:, m], trial_pinned)
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
        for o, k in view.pinned_by_step[m].items():
            sol.set(graph, o, m, k)
        rest = streamed_ops(m, pinned)
        place = _place_step(view, m, rest, free - fixed_occ[:, m])
        if place is None:
            raise HeuristicFailure(f"coloring: the streamed operands of step '{st.name}' do not fit")
        for o, k in zip(rest, place, strict=True):
            sol.set(graph, o, m, k)
    return _checked("coloring", view, sol)


HEURISTICS = {
    "naive": lambda g, pin_weights, rules=None: naive(g, rules=rules, pin_weights=pin_weights),
    "onsram": lambda g, pin_weights, rules=None: onsram(g, rules=rules),
    "greedy": lambda g, pin_weights, rules=None: greedy(g, pin_weights=pin_weights, rules=rules),
    "coloring": lambda g, pin_weights, rules=None: coloring(g, pin_weights=pin_weights, rules=rules),
}
"""Name → ``(graph, pin_weights, rules=None) -> PinningSolution`` (raises :class:`HeuristicFailure`)."""
