"""The placement heuristics compilers use. Each places every buffer (possibly beyond the capacity: the problem then
reports that the heuristic failed) and returns an :class:`AllocationSolution`.

* :func:`greedy_size` — largest buffer first (then longer lifetime), each at the lowest aligned offset free of the
  buffers already placed whose lifetimes overlap it: first fit (TFLite Micro's greedy planner, XLA's "greedy by
  size");
* :func:`greedy_lifetime` — by start step, longer lifetimes first, first fit (the order of a heap simulator);
* :func:`best_fit` — the buffers in time order (larger first at a tie), each into the smallest free gap among the
  buffers alive when it starts that holds it, else above them (XLA's best-fit heap).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution, align_up


def _gaps(starts: np.ndarray, ends: np.ndarray, size: int, alignment: int) -> list[tuple[int, int]]:
    """The free gaps ``(aligned start, end)`` between occupied intervals, lowest first, that hold ``size`` bytes;
    the last one is unbounded above (``end`` = -1)."""
    order = np.argsort(starts, kind="stable")
    out = []
    cand = 0
    for s, e in zip(starts[order].tolist(), ends[order].tolist(), strict=True):
        if cand + size <= s:
            out.append((cand, s))
        if e > cand:
            cand = align_up(e, alignment)
    out.append((cand, -1))
    return out


def _place(data: AllocationData, order: list[int], choose: Callable[[list[tuple[int, int]], int], int]) -> \
        AllocationSolution:
    """Place the buffers in ``order``, each at the offset ``choose`` picks among its free gaps."""
    offsets = np.zeros(data.n, dtype=np.int64)
    placed = np.zeros(data.n, dtype=bool)
    size, align, over = data.size, data.alignment, data.overlap
    for i in order:
        mask = over[i] & placed
        offsets[i] = choose(_gaps(offsets[mask], offsets[mask] + size[mask], int(size[i]), int(align[i])),
                            int(size[i]))
        placed[i] = True
    return AllocationSolution(offsets)


def _first_fit(gaps: list[tuple[int, int]], size: int) -> int:
    return gaps[0][0]


def greedy_size(data: AllocationData) -> AllocationSolution:
    """Largest first (then longer lifetime, then file order), first fit."""
    order = sorted(range(data.n), key=lambda i: (-data.buffers[i].size,
                                                 data.buffers[i].lower - data.buffers[i].upper, i))
    return _place(data, order, _first_fit)


def greedy_lifetime(data: AllocationData) -> AllocationSolution:
    """By start step (then longer lifetime, then larger), first fit."""
    order = sorted(range(data.n), key=lambda i: (data.buffers[i].lower, -data.buffers[i].upper,
                                                 -data.buffers[i].size, i))
    return _place(data, order, _first_fit)


def best_fit(data: AllocationData) -> AllocationSolution:
    """In time order (larger first at a tie), each into the smallest gap that holds it (the lowest among equals),
    else above every buffer alive (a gap reaching the capacity counts by its room below the capacity)."""
    cap = data.capacity

    def choose(gaps: list[tuple[int, int]], size: int) -> int:
        def room(g: tuple[int, int]) -> float:
            if g[1] >= 0:
                return g[1] - g[0]
            return float("inf") if cap is None or g[0] + size > cap else cap - g[0]
        return min(gaps, key=lambda g: (room(g), g[0]))[0]

    order = sorted(range(data.n), key=lambda i: (data.buffers[i].lower, -data.buffers[i].size, i))
    return _place(data, order, choose)


HEURISTICS: dict[str, Callable[[AllocationData], AllocationSolution]] = {
    "greedy_size": greedy_size,
    "greedy_lifetime": greedy_lifetime,
    "best_fit": best_fit,
}

__all__ = ["HEURISTICS", "best_fit", "greedy_lifetime", "greedy_size"]
