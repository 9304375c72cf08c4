"""Small pinning instances and a brute-force solver shared by the pinning tests."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable

import numpy as np

from dlaopt.formulations.pinning.data import PinningGraph, untiled_graph
from dlaopt.formulations.pinning.evaluator import check_constraints, count_transfers, objective_value
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.hardware import DMA, Accelerator, Memory, MemoryKind, PEArray, SpmAccess
from dlaopt.workload import NetworkBuilder, Workload


def small_accelerator(capacities: list[int], accesses: list[str] | None = None, latency: float = 4.0) -> Accelerator:
    accesses = accesses or ["any"] * len(capacities)
    spms = [Memory(f"s{i}", MemoryKind.SCRATCHPAD, c, access=SpmAccess(a))
            for i, (c, a) in enumerate(zip(capacities, accesses, strict=True))]
    return Accelerator("tiny", PEArray((("pe", 4),)), (Memory("dram", MemoryKind.DRAM, None), *spms),
                       DMA(8.0, latency))


def random_workload(seed: int, n_ops: int = 4) -> Workload:
    """A random DAG of elementwise/activation operators on vectors of random lengths (with a weight or two)."""
    rng = random.Random(seed)
    b = NetworkBuilder(f"rand{seed}", dtype_bytes=1)
    live = [b.input("in0", (rng.choice([8, 16, 24]),))]
    for i in range(n_ops):
        kind = rng.choice(["act", "add", "add", "mul_w"])
        x = rng.choice(live)
        if kind == "act" or len(live) < 2 and kind == "add":
            y = b.activation(x, "relu", name=f"op{i}")
        elif kind == "add":
            y2 = rng.choice([t for t in live if b.shape(t) == b.shape(x)] or [x])
            y = b.add(x, y2, name=f"op{i}")
        else:
            w = b.weight(f"w{i}", b.shape(x))
            y = b.mul(x, w, name=f"op{i}")
        live.append(y)
    return b.build(outputs=[live[-1]])


def brute_force(graph: PinningGraph, objective: str, dma: DMA,
                keep: Callable[[PinningSolution], bool] | None = None) -> float | None:
    """Minimum objective over every placement (each buffer, each step of its window: main memory or a
    scratchpad), judged by the evaluator alone; with ``keep``, only over the placements it accepts. Exponential:
    for graphs with a dozen cells at most."""
    cells: list[tuple[int, int, list[int]]] = []
    n_spm = len(graph.scratchpads)
    for b, (lo, hi) in enumerate(graph.window):
        for m in range(lo, hi + 1):
            choices = list(range(n_spm)) if m in graph.uses[b] else [-1, *range(n_spm)]
            cells.append((b, m, choices))
    best: float | None = None
    for combo in itertools.product(*(c[2] for c in cells)):
        sol = PinningSolution.empty(graph)
        for (b, m, _), k in zip(cells, combo, strict=True):
            sol.set(graph, b, m, k)
        if check_constraints(graph, sol):
            continue
        val = objective_value(graph, count_transfers(graph, sol), objective, dma)
        if (best is None or val < best) and (keep is None or keep(sol)):
            best = val
    return best


def n_cells(graph: PinningGraph) -> int:
    return int(np.sum([hi - lo + 1 for lo, hi in graph.window]))


def tiny_graph(seed: int, capacities: list[int], accesses: list[str] | None = None, n_ops: int = 3
               ) -> tuple[PinningGraph, DMA]:
    acc = small_accelerator(capacities, accesses)
    return untiled_graph(random_workload(seed, n_ops=n_ops), acc), acc.dma
