"""The canonical depth-first search: a complete branch and bound over the order in which buffers are placed.

**Canonical placements.** Take any valid placement, sort its buffers by offset and re-place them in that order, each
at the lowest aligned offset that is at least the previous buffer's new offset and free of the buffers re-placed
before it. By induction every new offset is at most the old one (the old offset is still free: an earlier buffer
``j`` alive at the same time ended at or below it, and ``j`` only moved down), so the result is valid and its peak is
not higher. Searching over the orders, with each buffer at that lowest offset, is therefore complete.

**The skyline state.** Every placed buffer starts at or below the *floor* (the last offset), so above the floor the
occupied addresses at a step ``t`` form the single interval ``[floor, top_t)``, ``top_t`` the highest end of a placed
buffer alive at ``t``. The state is ``(floor, top)``; an unplaced buffer ``j`` goes to
``p_j = align(max(floor, max top over j's lifetime))``, kept incrementally as the highest end among the placed
buffers whose lifetimes overlap ``j``'s.

**Pruning.** (1) ``p_j + size_j <= C`` for every unplaced ``j``; (2) at every step the unplaced bytes alive there fit
between the lowest ``p_j`` among them and ``C``; (3) identical buffers (same lifetime, size and alignment) are placed
in index order; (4) dominance: a buffer ``i`` may be next only if every unplaced buffer that could go strictly lower
(``p_j < p_i``) has a lifetime meeting ``i``'s (otherwise placing ``i`` lifts the floor over ``j``); (5) commuting
placements: two buffers with disjoint lifetimes placed one after the other at the same offset give the same state in
either order, so only the index order is explored (when both were children of the same node). Every rule is checked
against brute force in the tests. Children are tried by ``p``, then larger area (size × lifetime) first.

For the minimum peak the search is a branch and bound: each placement found lowers the capacity to its peak − 1.
Steps are compressed to the distinct lifetime end points (the live bytes only change there).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dlaopt.formulations.allocation.data import AllocationData


@dataclass
class SearchResult:
    """What one search returns: the best placement found (``None``: none), whether the search space was exhausted
    (then no placement with a lower peak exists, or none at all when ``offsets`` is ``None``) and the node count."""

    offsets: np.ndarray | None
    exhausted: bool
    nodes: int
    peak: int | None = None
    time_s: float = 0.0
    depth: int = 0  # the most buffers placed at once (diagnostics)


def compress(data: AllocationData) -> tuple[np.ndarray, np.ndarray, int]:
    """``(first, stop, slots)``: each lifetime as a half-open range of slots between distinct end points."""
    points = np.unique(np.concatenate([data.lower, data.upper])) if data.n else np.zeros(1, dtype=np.int64)
    return (np.searchsorted(points, data.lower).astype(np.int64), np.searchsorted(points, data.upper).astype(np.int64),
            max(len(points) - 1, 0))


def identical_predecessor(data: AllocationData) -> np.ndarray:
    """For each buffer the previous buffer with the same lifetime, size and alignment (``-1``: none)."""
    prev = np.full(data.n, -1, dtype=np.int64)
    last: dict[tuple[int, int, int, int], int] = {}
    for i, b in enumerate(data.buffers):
        key = (b.lower, b.upper, b.size, b.alignment)
        prev[i] = last.get(key, -1)
        last[key] = i
    return prev


class _Frame:
    __slots__ = ("cand", "children", "floor", "k", "last", "maxtop", "parent_cand", "placed", "rem", "top")

    def __init__(self, floor: int, top: np.ndarray, maxtop: np.ndarray, rem: np.ndarray, placed: np.ndarray,
                 last: int = -1, parent_cand: np.ndarray | None = None) -> None:
        self.floor, self.top, self.maxtop, self.rem, self.placed = floor, top, maxtop, rem, placed
        self.last, self.parent_cand = last, parent_cand  # the buffer just placed; its siblings (bool mask)
        self.children: list[tuple[int, int]] | None = None
        self.cand: np.ndarray | None = None  # this node's children as a bool mask over the buffers
        self.k = 0


class _Static:
    """The arrays a search reads at every node."""

    def __init__(self, data: AllocationData, dominance: bool) -> None:
        n = data.n
        self.first, self.stop, self.slots = compress(data)
        self.size, self.align, self.over = data.size, data.alignment, data.overlap
        self.area = self.size * (data.upper - data.lower)
        self.prev = identical_predecessor(data)
        self.dominance = dominance
        lengths = self.stop - self.first
        # (buffer, slot) pairs sorted by slot, one sentinel (index n) per slot: the lowest offset per slot by reduceat
        pb = np.concatenate([np.repeat(np.arange(n), lengths), np.full(self.slots, n)])
        ps = np.concatenate([np.concatenate([np.arange(a, b) for a, b in zip(self.first.tolist(), self.stop.tolist(),
                                                                             strict=True)] or [np.zeros(0, int)]),
                             np.arange(self.slots)])
        order = np.argsort(ps, kind="stable")
        self.pair_buf = pb[order]
        self.slot_start = np.searchsorted(ps[order], np.arange(self.slots))
        rem = np.zeros(self.slots + 1, dtype=np.int64)
        np.add.at(rem, self.first, self.size)
        np.subtract.at(rem, self.stop, self.size)
        self.rem0 = np.cumsum(rem)[:self.slots]


def search(data: AllocationData, capacity: int, *, minimize: bool = False, target: int = 0,
           node_limit: int | None = None, deadline: float | None = None, dominance: bool = True) -> SearchResult:
    """Search for a placement within ``capacity`` bytes.

    ``minimize``: after each placement found, look for one with a lower peak, until the peak reaches ``target`` (a
    proven lower bound) or the space is exhausted. ``node_limit`` / ``deadline`` (``time.monotonic()``) stop the
    search early (then ``exhausted`` is false). ``dominance`` switches rules (4) and (5) (for tests)."""
    t0 = time.perf_counter()
    n = data.n
    if n == 0:
        return SearchResult(np.zeros(0, dtype=np.int64), True, 0, 0)
    st = _Static(data, dominance)
    size, first, stop, over = st.size, st.first, st.stop, st.over
    cap = int(capacity)
    best: np.ndarray | None = None
    best_peak: int | None = None
    offsets = np.zeros(n, dtype=np.int64)
    nodes = depth = 0
    stack = [_Frame(0, np.zeros(st.slots, dtype=np.int64), np.zeros(n, dtype=np.int64), st.rem0,
                    np.zeros(n, dtype=bool))]
    while stack:
        f = stack[-1]
        if f.children is None:  # entering the node
            nodes += 1
            depth = max(depth, len(stack) - 1)
            if (node_limit is not None and nodes > node_limit) or (
                    deadline is not None and nodes % 64 == 0 and time.monotonic() > deadline):
                return SearchResult(best, False, nodes, best_peak, time.perf_counter() - t0, depth)
            f.children = _children(f, cap, st)
            if f.children is None:  # a complete placement
                peak = int((offsets + size).max())
                best, best_peak = offsets.copy(), peak
                if not minimize or peak <= target:
                    return SearchResult(best, True, nodes, best_peak, time.perf_counter() - t0, depth)
                cap = peak - 1
                f.children = []
        if f.k >= len(f.children):
            stack.pop()
            continue
        i, p = f.children[f.k]
        f.k += 1
        end = p + int(size[i])
        if end > cap:  # the capacity fell (branch and bound) since the children were listed
            continue
        a, b = int(first[i]), int(stop[i])
        top = f.top.copy()
        top[a:b] = end
        rem = f.rem.copy()
        rem[a:b] -= size[i]
        maxtop = np.where(over[i], np.maximum(f.maxtop, end), f.maxtop)
        placed = f.placed.copy()
        placed[i] = True
        offsets[i] = p
        stack.append(_Frame(p, top, maxtop, rem, placed, i, f.cand))
    return SearchResult(best, True, nodes, best_peak, time.perf_counter() - t0, depth)


def _children(f: _Frame, cap: int, st: _Static) -> list[tuple[int, int]] | None:
    """The children ``(buffer, offset)`` of a node in the order they are tried (``[]``: pruned); ``None`` when
    every buffer is placed."""
    unplaced = np.flatnonzero(~f.placed)
    if unplaced.size == 0:
        return None
    al = st.align[unplaced]
    p = -(-np.maximum(f.maxtop[unplaced], f.floor) // al) * al
    if np.any(p + st.size[unplaced] > cap):
        return []
    # every unplaced buffer alive at a step goes at or above the lowest offset among them: the rest must fit above
    pfull = np.full(st.size.shape[0] + 1, cap, dtype=np.int64)
    pfull[unplaced] = p
    low = np.minimum.reduceat(pfull[st.pair_buf], st.slot_start) if st.slots else pfull[:0]
    if np.any(f.rem > cap - low):
        return []
    ok = st.prev[unplaced] < 0
    if not ok.all():
        ok |= f.placed[np.maximum(st.prev[unplaced], 0)]
    lo, up = st.first[unplaced], st.stop[unplaced]
    order = np.lexsort((unplaced, -st.area[unplaced], p))
    if st.dominance:
        # i may be next only if its lifetime meets that of every unplaced buffer that could go strictly lower
        ps = p[order]
        k = np.searchsorted(ps, p, side="left")  # how many go strictly lower than each
        min_up = np.minimum.accumulate(up[order])
        max_lo = np.maximum.accumulate(lo[order])
        has = k > 0
        kk = np.maximum(k - 1, 0)
        ok &= ~has | ((lo < min_up[kk]) & (max_lo[kk] < up))
    if st.dominance and f.parent_cand is not None:
        # commuting placements: a buffer placed right after ``last`` at the same offset, with a disjoint lifetime,
        # that was a sibling of ``last`` and comes before it in index order reaches a state its sibling reaches
        j = f.last
        ok &= ~((unplaced < j) & (p == f.floor) & ~st.over[j, unplaced] & f.parent_cand[unplaced])
    cand = order[ok[order]]
    f.cand = np.zeros(st.size.shape[0], dtype=bool)
    f.cand[unplaced[cand]] = True
    return list(zip(unplaced[cand].tolist(), p[cand].tolist(), strict=True))


__all__ = ["SearchResult", "compress", "identical_predecessor", "search"]
