"""Packing cuts for identical scratchpads, derived from the patterns a scratchpad can hold.

Whatever is resident at one step must pack into the :math:`K` scratchpads of capacity :math:`Q`. For any weights
:math:`w \\ge 0` over item sizes with :math:`\\sum_i p_i w_i \\le D` for every *pattern* :math:`p` (a multiset of
sizes that fits one scratchpad), :math:`\\sum_{\\text{resident}} w(s_b) \\le K D` holds at every step of every
feasible solution (a dual-feasible function, scaled by :math:`D` to integer coefficients). The Fekete–Schepers
functions of :mod:`.milp_gaps` are fixed members of this family; here the weights are computed for the sizes that
actually occur: the most violated weights for a given multiset of resident sizes are the optimal dual of the
fractional bin-packing (Gilmore–Gomory) LP over its patterns, found by enumerating the maximal patterns.

Every weight vector returned is checked exactly (integer arithmetic) against every maximal pattern, so a cut is
valid whatever the LP solver's tolerances; sizes a cut does not mention weigh 0 (never invalidates it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

MAX_PATTERNS = 20_000  # enumeration budget per call (beyond it no cut is derived)
SCALES = (2, 3, 4, 6, 8, 12, 24, 60, 120)


@dataclass(frozen=True)
class PackingCut:
    """``sum over resident items of weights.get(size, 0) <= rhs`` at every step (``rhs = n_bins * scale``)."""

    weights: tuple[tuple[int, int], ...]  # (size in bytes, integer weight), weights > 0 only
    scale: int
    rhs: int

    def weight_of(self, sizes: np.ndarray) -> np.ndarray:
        table = dict(self.weights)
        return np.array([table.get(int(s), 0) for s in sizes], dtype=float)


def maximal_patterns(sizes: Sequence[int], cap: int, limit: int = MAX_PATTERNS) -> list[tuple[int, ...]] | None:
    """Every maximal multiset (as counts per entry of ``sizes``, which are distinct and positive) that fits ``cap``;
    ``None`` past ``limit`` patterns."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    s = [int(sizes[i]) for i in order]
    smallest = min(s) if s else 0
    out: list[tuple[int, ...]] = []
    counts = [0] * len(s)

    def rec(i: int, room: int) -> bool:
        if i == len(s):
            # maximal: nothing more fits (any size, also earlier ones)
            if room < smallest or not any(sz <= room for sz in s):
                pat = [0] * len(s)
                for j, c in enumerate(counts):
                    pat[order[j]] = c
                out.append(tuple(pat))
            return len(out) <= limit
        for c in range(room // s[i], -1, -1):
            counts[i] = c
            if not rec(i + 1, room - c * s[i]):
                return False
        counts[i] = 0
        return True

    if not rec(0, int(cap)):
        return None
    return out


def _solve_dual(counts: np.ndarray, patterns: np.ndarray) -> np.ndarray | None:
    """max counts @ u  s.t.  patterns @ u <= 1, u >= 0 (HiGHS LP)."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    n = counts.size
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = patterns.shape[0]
    lp.col_cost_ = -counts.astype(float)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.ones(n)
    lp.row_lower_ = np.full(patterns.shape[0], -highspy.kHighsInf)
    lp.row_upper_ = np.ones(patterns.shape[0])
    a = patterns.astype(float)
    rows, cols = np.nonzero(a)
    order = np.lexsort((rows, cols))  # column-wise
    rows, cols = rows[order], cols[order]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=n))]).astype(np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = a[rows, cols]
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(h.getSolution().col_value, dtype=float)


def packing_cut(items: Mapping[int, float], n_bins: int, cap: int, *, min_fraction: float = 0.1) -> PackingCut | None:
    """The integer dual-feasible weights most violated by ``items`` (size in bytes → how many, possibly fractional
    LP values) packed into ``n_bins`` bins of capacity ``cap``; ``None`` when no such cut is violated (the items'
    fractional bin-packing bound is at most ``n_bins``) or the patterns are too many. Sizes below ``min_fraction``
    of a bin get weight 0."""
    sizes = sorted(s for s, c in items.items() if c > 1e-9 and min_fraction * cap < s <= cap)
    if not sizes:
        return None
    pats = maximal_patterns(sizes, cap)
    if pats is None:
        return None
    p = np.array(pats, dtype=np.int64)
    n = np.array([items[s] for s in sizes], dtype=float)
    u = _solve_dual(n, p)
    if u is None or n @ u <= n_bins + 1e-6:
        return None
    for scale in SCALES:
        w = np.floor(u * scale + 1e-7).astype(np.int64)
        while True:  # exact validity: every maximal pattern weighs at most `scale`
            load = p @ w
            bad = np.flatnonzero(load > scale)
            if bad.size == 0:
                break
            worst = p[bad[0]] > 0  # lower the heaviest weight in a violated pattern
            j = int(np.argmax(np.where(worst, w, -1)))
            w[j] -= 1
        if n @ w > n_bins * scale + 1e-6:
            keep = w > 0
            return PackingCut(tuple((int(s), int(x)) for s, x in zip(np.array(sizes)[keep], w[keep], strict=True)),
                              scale, n_bins * scale)
    return None


def packable(sizes: Sequence[int], n_bins: int, cap: int, budget: int = 200_000) -> bool | None:
    """Do the items fit ``n_bins`` bins of capacity ``cap``? Exact depth-first search (largest first, identical
    loads tried once); ``None`` when the node budget runs out."""
    items = sorted((int(s) for s in sizes), reverse=True)
    if sum(items) > n_bins * cap:
        return False
    if items and items[0] > cap:
        return False
    loads = [0] * n_bins
    left = [budget]

    def dfs(i: int) -> bool | None:
        if i == len(items):
            return True
        left[0] -= 1
        if left[0] < 0:
            return None
        seen: set[int] = set()
        unknown = False
        for k in range(n_bins):
            if loads[k] in seen or loads[k] + items[i] > cap:
                continue
            seen.add(loads[k])
            loads[k] += items[i]
            r = dfs(i + 1)
            loads[k] -= items[i]
            if r:
                return True
            unknown |= r is None
        return None if unknown else False

    return dfs(0)


__all__ = ["PackingCut", "maximal_patterns", "packable", "packing_cut"]
