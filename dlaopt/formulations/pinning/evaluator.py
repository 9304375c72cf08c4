"""The independent evaluator of pinning solutions: recomputes transfers and checks every constraint from the
buffers, steps and scratchpads alone — it knows nothing of the MILP or of any heuristic.

Cost semantics (the MILP must agree with these, the tests check it does):

* a buffer *entering* a scratchpad costs one load of its size, unless it enters by being produced there
  (its first write); moving from one scratchpad to another is an exit plus an entry;
* a buffer is *dirty* from each write until it is stored; an exit from a scratchpad while dirty and still live costs
  one store (after which it is clean); a graph output still dirty after its last use costs its final store;
* the thesis objective (seed 000 §5.2.1) instead charges ``size`` for every change of ``x[n,k,m]`` between
  consecutive steps, with an empty step before the first and after the last, i.e. ``2·size`` per residency run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlaopt.formulations.pinning.data import PinningGraph
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware.model import DMA
from dlaopt.workload.tensor import TensorRole


@dataclass
class Transfers:
    loads: np.ndarray  # per buffer: number of loads
    stores: np.ndarray  # per buffer: number of stores
    runs: np.ndarray  # per buffer: number of residency runs (thesis objective counts 2 transitions per run)

    def bytes(self, sizes: np.ndarray) -> float:
        return float(((self.loads + self.stores) * sizes).sum())

    def count(self) -> int:
        return int(self.loads.sum() + self.stores.sum())


def count_transfers(graph: PinningGraph, sol: PinningSolution) -> Transfers:
    n = len(graph.buffers)
    loads = np.zeros(n, dtype=np.int64)
    stores = np.zeros(n, dtype=np.int64)
    runs = np.zeros(n, dtype=np.int64)
    for b, buf in enumerate(graph.buffers):
        lo, hi = graph.window[b]
        row = sol.placement[b]
        writes = set(graph.write_steps[b])
        first_write = graph.producer[b]
        prev = -1
        dirty = False
        for i in range(hi - lo + 1):
            m = lo + i
            k = int(row[i])
            if k != prev:
                if prev >= 0 and dirty:  # exit from prev while live and dirty: store
                    stores[b] += 1
                    dirty = False
                if k >= 0:
                    runs[b] += 1
                    if m != first_write:
                        loads[b] += 1
            if m in writes:
                dirty = True
            prev = k
        if dirty and buf.role == TensorRole.OUTPUT:
            stores[b] += 1
    return Transfers(loads, stores, runs)


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
