"""The independent evaluator of pinning solutions: recomputes transfers and checks every constraint from the
buffers, steps and scratchpads alone — it knows nothing of the MILP or of any heuristic.

Cost semantics (the MILP must agree with these, the tests check it does):

* a buffer *entering* a scratchpad costs one load of its size, unless it enters by being produced there
  (its first write); moving from one scratchpad to another is an exit plus an entry;
* a buffer is *dirty* from each write until it is stored; an exit from a scratchpad while dirty and still live costs
  one store (after which it is clean); a graph output still dirty after its last use costs its final store;
* the thesis objective (seed 000 §5.2.1) instead charges ``size`` for every change of ``x[n,k,m]`` between
  consecutive steps, with an empty step before the first and after the last, i.e. ``2·size`` per residency run;
* a *streamed* buffer (a tensor the user keeps off chip) has a residency of its own at every step: it exits after
  each step it is resident at (a store if dirty) and enters again for the next (a load);
* a load counts at the step the buffer enters for, a store at the last step it was resident before its exit, a
  graph output's final store at its last step (the per-step DMA a ``dma_cap`` bounds).

The user's constraints (:func:`check_user_constraints`) are checked from their records alone, each violation
starting with the constraint's label.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.formulations.pinning.rules import PinningRules
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware.model import DMA
from dlaopt.workload.tensor import TensorRole


@dataclass
class Transfers:
    loads: np.ndarray  # per buffer: number of loads
    stores: np.ndarray  # per buffer: number of stores
    runs: np.ndarray  # per buffer: number of residency runs (thesis objective counts 2 transitions per run)
    step_bytes: np.ndarray | None = None  # per step: bytes loaded for it and stored after it

    def bytes(self, sizes: np.ndarray) -> float:
        return float(((self.loads + self.stores) * sizes).sum())

    def count(self) -> int:
        return int(self.loads.sum() + self.stores.sum())


def count_transfers(graph: PinningGraph, sol: PinningSolution, streamed: frozenset[int] = frozenset()
                    ) -> Transfers:
    """Loads, stores and runs per buffer, and the bytes moved at each step; buffers in ``streamed`` (kept off chip)
    start a new residency at every step."""
    n = len(graph.buffers)
    loads = np.zeros(n, dtype=np.int64)
    stores = np.zeros(n, dtype=np.int64)
    runs = np.zeros(n, dtype=np.int64)
    per_step = np.zeros(len(graph.steps))
    for b, buf in enumerate(graph.buffers):
        lo, hi = graph.window[b]
        row = sol.placement[b]
        writes = set(graph.write_steps[b])
        first_write = graph.producer[b]
        fresh = b in streamed
        prev = -1
        dirty = False
        for i in range(hi - lo + 1):
            m = lo + i
            k = int(row[i])
            if k != prev or (fresh and prev >= 0):
                if prev >= 0 and dirty:  # exit from prev while live and dirty: store (after step m - 1)
                    stores[b] += 1
                    per_step[m - 1] += buf.size_bytes
                    dirty = False
                if k >= 0:
                    runs[b] += 1
                    if m != first_write:
                        loads[b] += 1
                        per_step[m] += buf.size_bytes
            if m in writes:
                dirty = True
            prev = k
        if dirty and buf.role == TensorRole.OUTPUT:
            stores[b] += 1
            per_step[hi] += buf.size_bytes
    return Transfers(loads, stores, runs, per_step)


def check_user_constraints(graph: PinningGraph, sol: PinningSolution, rules: PinningRules,
                           transfers: Transfers | None = None, limit: int = 5) -> list[str]:
    """Every broken user constraint, by its label (at most ``limit`` messages per constraint, then a count)."""
    names = [s.name for s in graph.scratchpads]
    out: list[str] = []

    def where(b: int) -> str:
        buf = graph.buffers[b]
        return f"tensor '{buf.tensor}'" + (f" (chunk '{buf.name}')" if buf.name != buf.tensor else "")

    def step(m: int) -> str:
        return f"step {m} ('{graph.steps[m].name}')"

    def report(label: str, found: list[str]) -> None:
        out.extend(f"{label}: {f}" for f in found[:limit])
        if len(found) > limit:
            out.append(f"{label}: ... and {len(found) - limit} more")

    for p in rules.pins:
        found = []
        for b in p.buffers:
            lo, hi = graph.window[b]
            first, last = (lo, hi) if p.steps is None else (max(lo, p.steps[0]), min(hi, p.steps[1]))
            for m in range(first, last + 1):
                k = sol.at(graph, b, m)
                if k != p.memory:
                    now = "not on chip" if k < 0 else f"in '{names[k]}'"
                    found.append(f"{where(b)} is {now} at {step(m)}, pinned to '{names[p.memory]}'")
        report(p.label, found)
    for f in rules.forbids:
        found = []
        for b in f.buffers:
            lo, hi = graph.window[b]
            found += [f"{where(b)} is in '{names[f.memory]}' at {step(m)}" for m in range(lo, hi + 1)
                      if sol.at(graph, b, m) == f.memory]
        report(f.label, found)
    for o in rules.off_chip:
        found = []
        for b in o.buffers:
            lo, hi = graph.window[b]
            uses = set(graph.uses[b])
            found += [f"{where(b)} is kept in '{names[sol.at(graph, b, m)]}' at {step(m)}, which does not use it"
                      for m in range(lo, hi + 1) if m not in uses and sol.at(graph, b, m) >= 0]
        report(o.label, found)
    if rules.dma_caps:
        t = transfers if transfers is not None and transfers.step_bytes is not None else count_transfers(
            graph, sol, rules.streamed)
        assert t.step_bytes is not None
        for c in rules.dma_caps:
            report(c.label, [f"{step(int(m))} moves {int(t.step_bytes[m])} bytes, above the cap of {c.bytes}"
                             for m in np.flatnonzero(t.step_bytes > c.bytes)])
    return out


def check_constraints(graph: PinningGraph, sol: PinningSolution, limit: int = 50) -> list[str]:
    """Every violated constraint, described (at most ``limit`` messages, then a count)."""
    out: list[str] = []
    n_spm = len(graph.scratchpads)
    n_steps = len(graph.steps)
    occupancy = np.zeros((n_spm, n_steps), dtype=np.int64)
    if len(sol.placement) != len(graph.buffers):
        return [f"the solution places {len(sol.placement)} buffers, the instance has {len(graph.buffers)}"]
    for b, buf in enumerate(graph.buffers):
        lo, hi = graph.window[b]
        row = np.asarray(sol.placement[b])
        if row.shape != (hi - lo + 1,):
            out.append(f"buffer '{buf.name}': residency covers {row.size} steps, its lifetime has {hi - lo + 1}")
            continue
        bad = (row < -1) | (row >= n_spm)
        if bad.any():
            out.append(f"buffer '{buf.name}': unknown scratchpad index {int(row[bad][0])}")
            continue
        for i in np.flatnonzero(row >= 0):
            m, k = lo + int(i), int(row[i])
            spm = graph.scratchpads[k]
            written = m in graph.write_steps[b]
            if buf.role not in spm.holds:
                out.append(f"buffer '{buf.name}' ({buf.role.value}) in '{spm.name}' at step {m}, which may not hold "
                           f"{buf.role.value} tensors")
            elif not spm.allows(buf.role, read=m in graph.read_steps[b], written=written):
                out.append(f"buffer '{buf.name}' in {spm.access.value}-only '{spm.name}' at step {m} "
                           f"('{graph.steps[m].name}'), which {'writes' if written else 'reads'} it")
            occupancy[k, m] += buf.size_bytes
        for m in graph.uses[b]:
            if row[m - lo] < 0:
                out.append(f"buffer '{buf.name}' is not resident at step {m} ('{graph.steps[m].name}'), which uses it")
    for k, spm in enumerate(graph.scratchpads):
        for m in np.flatnonzero(occupancy[k] > spm.capacity):
            out.append(f"scratchpad '{spm.name}' holds {int(occupancy[k, m])} bytes at step {int(m)} "
                       f"('{graph.steps[int(m)].name}'), capacity {spm.capacity}")
    if len(out) > limit:
        out = out[:limit] + [f"... and {len(out) - limit} more violations"]
    return out


def objective_value(graph: PinningGraph, transfers: Transfers, objective: str, dma: DMA) -> float:
    sizes = np.array([b.size_bytes for b in graph.buffers], dtype=float)
    if objective == "transfers":
        return transfers.bytes(sizes)
    if objective == "dma_cycles":
        per = dma.latency_cycles + sizes / dma.bandwidth_bytes_per_cycle
        return float(((transfers.loads + transfers.stores) * per).sum())
    if objective == "thesis":
        return float((2 * transfers.runs * sizes).sum())
    raise ValueError(f"unknown pinning objective '{objective}'")


def dma_cycles(graph: PinningGraph, transfers: Transfers, dma: DMA) -> float:
    return objective_value(graph, transfers, "dma_cycles", dma)


def check_addresses(graph: PinningGraph, sol: PinningSolution, alignment: int = 1,
                    limit: int = 50) -> tuple[list[str], dict[str, int]]:
    """The addresses of a solution, checked from the residency and the offsets alone: every resident cell has an
    offset, constant over each maximal run (consecutive steps in one scratchpad), a multiple of ``alignment``, the
    buffer ends within the scratchpad's capacity, and two buffers resident in one scratchpad at one step never
    overlap in address. Returns the violations (at most ``limit``, then a count) and the highest end address used
    per scratchpad (``address_peak``)."""
    names = [s.name for s in graph.scratchpads]
    peaks = {n: 0 for n in names}
    if sol.offsets is None:
        return [], peaks
    out: list[str] = []
    if len(sol.offsets) != len(sol.placement):
        return [f"the solution gives offsets for {len(sol.offsets)} buffers, the instance has "
                f"{len(sol.placement)}"], peaks
    ks, ms, offs, ends, bufs = [], [], [], [], []
    for b, buf in enumerate(graph.buffers):
        row = np.asarray(sol.placement[b])
        off = np.asarray(sol.offsets[b], dtype=np.int64)
        if off.shape != row.shape:
            out.append(f"buffer '{buf.name}': offsets cover {off.size} steps, its residency {row.size}")
            continue
        lo = graph.window[b][0]
        on = np.flatnonzero(row >= 0)
        if on.size == 0:
            continue
        o = off[on]
        missing = on[o < 0]
        if missing.size:
            out.append(f"buffer '{buf.name}' has no address at step {lo + int(missing[0])} while resident in "
                       f"'{names[int(row[missing[0]])]}'")
            continue
        # same run: consecutive steps, same scratchpad; the offset may not change inside it
        same = (np.diff(on) == 1) & (row[on[1:]] == row[on[:-1]])
        moved = np.flatnonzero(same & (o[1:] != o[:-1]))
        if moved.size:
            i = int(on[moved[0] + 1])
            out.append(f"buffer '{buf.name}' changes address inside one residency run of '{names[int(row[i])]}' at "
                       f"step {lo + i} ({int(off[i - 1])} -> {int(off[i])})")
        bad = o % alignment != 0
        if bad.any():
            i = int(on[np.argmax(bad)])
            out.append(f"buffer '{buf.name}' at offset {int(off[i])} in '{names[int(row[i])]}' (step {lo + i}) is not "
                       f"a multiple of the alignment {alignment}")
        end = o + buf.size_bytes
        ks.append(row[on].astype(np.int64))
        ms.append(on + lo)
        offs.append(o)
        ends.append(end)
        bufs.append(np.full(on.size, b, dtype=np.int64))
    if ks:
        k_a, m_a, o_a, e_a, b_a = (np.concatenate(a) for a in (ks, ms, offs, ends, bufs))
        caps = np.array([s.capacity for s in graph.scratchpads], dtype=np.int64)
        over = np.flatnonzero(e_a > caps[k_a])
        for i in over[:limit].tolist():
            out.append(f"buffer '{graph.buffers[int(b_a[i])].name}' ends at byte {int(e_a[i])} of "
                       f"'{names[int(k_a[i])]}' (step {int(m_a[i])}), beyond its capacity {int(caps[k_a[i]])}")
        for k in range(len(names)):
            sel = k_a == k
            if sel.any():
                peaks[names[k]] = int(e_a[sel].max())
        # overlap: sorted by (scratchpad, step, offset), a cell overlaps another iff it overlaps its successor
        order = np.lexsort((o_a, m_a, k_a))
        k_s, m_s, o_s, e_s, b_s = k_a[order], m_a[order], o_a[order], e_a[order], b_a[order]
        clash = np.flatnonzero((k_s[1:] == k_s[:-1]) & (m_s[1:] == m_s[:-1]) & (o_s[1:] < e_s[:-1]))
        seen: set[tuple[int, int, int]] = set()
        for i in clash.tolist():
            key = (int(k_s[i]), int(b_s[i]), int(b_s[i + 1]))
            if key in seen:
                continue
            seen.add(key)
            out.append(f"buffers '{graph.buffers[key[1]].name}' [{int(o_s[i])}, {int(e_s[i])}) and "
                       f"'{graph.buffers[key[2]].name}' [{int(o_s[i + 1])}, {int(e_s[i + 1])}) overlap in "
                       f"'{names[key[0]]}' at step {int(m_s[i])}")
    if len(out) > limit:
        out = out[:limit] + [f"... and {len(out) - limit} more address violations"]
    return out, peaks
