"""The brute-force reference shared by the multi-accelerator tests: every schedule of a small job table."""

from __future__ import annotations

import itertools


def all_orders(n: int, m: int) -> list[list[list[int]]]:
    """Every assignment with every order per sub-accelerator: a permutation cut into ``m`` consecutive lists."""
    out = []
    for perm in itertools.permutations(range(n)):
        for cuts in itertools.combinations_with_replacement(range(n + 1), m - 1):
            b = (0, *cuts, n)
            out.append([list(perm[b[i]:b[i + 1]]) for i in range(m)])
    return out
