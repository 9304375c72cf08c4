"""Half-open boxes over tensor index spaces, shared by the tiler and its independent verifier."""

from __future__ import annotations

import math

from dlaopt.formulations.pinning.data import Box

Range = tuple[int, int]


def volume(box: Box) -> int:
    return math.prod(hi - lo for lo, hi in box)


def intersection_volume(a: Box, b: Box) -> int:
    v = 1
    for (alo, ahi), (blo, bhi) in zip(a, b, strict=True):
        d = min(ahi, bhi) - max(alo, blo)
        if d <= 0:
            return 0
        v *= d
    return v


def box_text(box: Box) -> str:
    return "[" + ",".join(f"{lo}:{hi}" for lo, hi in box) + "]"
