"""The XYZiZo and XZiYZo cost models against a direct execution of their loop nests.

The simulator walks the schedule cycle by cycle (filter groups, channel groups, output rows, filter rows, output
columns) and counts what the hardware does: a cycle per column per filter row; the filter row loaded into the PEs
once per sweep (S·C_uv·F_uv SRAM reads); input reads (a sliding window reads each element of the swept row once at
stride 1, else S·C_uv per cycle); a partial-sum write per output per cycle-row and a read unless it is the first
contribution; input rows fetched from DRAM through an SRAM of whole single-channel rows kept least-recently-used,
the traversal reversed for every other filter group (the reference's "reverse order"). The cases are the ones where
the analytical model is exact: the psum SRAM holds the whole layer (one block) and C, F are multiples of C_uv, F_uv.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from dlaopt.formulations.systolic import branch_xyzizo, branch_xziyzo
from dlaopt.formulations.systolic.counts import ConvShape, HardwareArrays

KB = 8192


def simulate_xyzizo(layer: ConvShape, J: int, K: int, i_sram_bits: int, b_i: int = 8) -> dict[str, int]:
    R, S, C, E, G, F, U = layer.R, layer.S, layer.C, layer.E, layer.G, layer.F, layer.U
    C_uv, F_uv = min(J // S, C), min(K, F)
    W = layer.W
    sliding = U == 1 and R > 1 and S > 1
    n = dict.fromkeys(("compute", "sram_f", "sram_i", "sram_p", "dram_f", "dram_i", "dram_o"), 0)
    cache: OrderedDict[tuple[int, int], None] = OrderedDict()  # (channel, input row) -> resident
    cap_rows = i_sram_bits // (W * b_i)
    seen_filters: set[tuple[int, int, int]] = set()
    written: set[tuple[int, int, int]] = set()
    for fo in range(F // F_uv):
        groups = range(C // C_uv) if fo % 2 == 0 else reversed(range(C // C_uv))
        for ci in groups:
            rows = range(E) if fo % 2 == 0 else reversed(range(E))
            for y in rows:
                # DRAM: the R input rows of this output row, per channel of the group
                fetch = [(c, y * U + r) for c in range(ci * C_uv, (ci + 1) * C_uv) for r in range(R)]
                for key in fetch if fo % 2 == 0 else fetch[::-1]:
                    if key in cache:
                        cache.move_to_end(key)
                        continue
                    n["dram_i"] += W
                    cache[key] = None
                    if len(cache) > cap_rows:
                        cache.popitem(last=False)
                for r in range(R):
                    n["sram_f"] += S * C_uv * F_uv
                    if (fo, ci, r) not in seen_filters:
                        seen_filters.add((fo, ci, r))
                        n["dram_f"] += S * C_uv * F_uv
                    if sliding:
                        n["sram_i"] += W * C_uv
                    for x in range(G):
                        n["compute"] += 1
                        if not sliding:
                            n["sram_i"] += S * C_uv
                        first = ci == 0 and r == 0
                        n["sram_p"] += F_uv * (1 if first else 2)
                        if ci == C // C_uv - 1 and r == R - 1:
                            for f in range(F_uv):
                                written.add((fo * F_uv + f, y, x))
    n["dram_o"] = len(written)
    return n


CASES = [
    # layer, J, K, iSRAM kB: whole input fits / only part of it (reverse-order reuse) / stride 2 / 1x1
    (ConvShape("fits", R=3, S=3, C=8, E=6, G=6, F=16, U=1), 12, 8, 64),
    (ConvShape("reuse", R=3, S=3, C=8, E=6, G=6, F=16, U=1), 12, 8, 0.25),
    (ConvShape("stride2", R=3, S=3, C=4, E=4, G=5, F=8, U=2), 6, 4, 0.125),
    (ConvShape("pointwise", R=1, S=1, C=6, E=5, G=5, F=6, U=1), 3, 3, 0.0625),
]


@pytest.mark.parametrize(("layer", "J", "K", "i_kb"), CASES, ids=[c[0].name for c in CASES])
def test_xyzizo_counts_equal_the_simulated_loop_nest(layer: ConvShape, J: int, K: int, i_kb: float) -> None:
    hw = HardwareArrays(J=J, K=K, f_sram=64 * KB, i_sram=i_kb * KB, p_sram=256 * KB)
    c = branch_xyzizo.layer_counts(layer, hw)
    assert bool(c.feasible)
    sim = simulate_xyzizo(layer, J, K, int(i_kb * KB))
    for key, value in sim.items():
        assert float(getattr(c, key)) == value, key


@pytest.mark.parametrize(("layer", "J", "K", "i_kb"), CASES, ids=[c[0].name for c in CASES])
def test_xziyzo_does_the_same_work(layer: ConvShape, J: int, K: int, i_kb: float) -> None:
    """XZiYZo reorders the same MACs: compute, SRAM and ofmap counts equal the simulated XYZiZo nest's."""
    hw = HardwareArrays(J=J, K=K, f_sram=64 * KB, i_sram=i_kb * KB, p_sram=256 * KB)
    c = branch_xziyzo.layer_counts(layer, hw)
    sim = simulate_xyzizo(layer, J, K, int(i_kb * KB))
    for key in ("compute", "sram_f", "sram_i", "sram_p", "dram_o"):
        assert float(getattr(c, key)) == sim[key], key
    assert np.isfinite(c.stall)
