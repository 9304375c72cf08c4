"""Schedule XZiYZo of the DeepOpt systolic model: hand-derived cases, vectorised == scalar, feasibility and NaN
freedom."""

from __future__ import annotations

import numpy as np
import pytest
from test_systolic_branch_xyzizo import FIELDS, KB, LAYERS, SMALL, point, random_hardware, values

from dlaopt.formulations.systolic import branch_xyzizo, branch_xziyzo
from dlaopt.formulations.systolic.counts import ConvShape, HardwareArrays

# Hand cases on SMALL: R = S = 3, C = 4, E = G = 4, F = 8, U = 1 (W = H = 6); J = 6, K = 4 → C_uv = 2, F_uv = 4,
# n_C = ρ = 2, n_F = φ = 2; pSRAM 512 bits holds one row of 4·4·32 psums → G_eff = 4, one strip. T = 12 cycles;
# B_f = 3·3·2·4·8 = 576 bits; B_i = 3·6·2·8 = 288 bits; Q_f = R·S·C·F_uv·b_f = 3·3·4·4·8 = 1152 bits.


def test_sram_and_dram_counts() -> None:
    # compute 12·2·4·2 = 192; SRAM f R·S·C·F·E = 9·4·8·4 = 1152; SRAM i 3·6·2 = 36 per row ·ρ 2·E 4·n_F 2 = 576;
    # SRAM p (2·3·2 − 1)·4·4·8 = 1408; DRAM o 128, written in 4·4·8·8/128 = 8 cycles.
    # Filter DRAM: ⌊fSRAM/(R·S·b_f)⌋ planes of F_uv·C = 16 stay.
    #   fSRAM 2048: 28 ≥ 16 → D_f = 9·4·4 = 144, ·φ 2 = 288.
    #   fSRAM 1024: 14 planes → D_f = 144 + 9·(16 − 14)·(E − 1 = 3) = 198, ·2 = 396.
    # Ifmap DRAM (W_eff·H·C = 144 elements, 1152 bits): t = ⌊iSRAM/(6·3·8)⌋ bands.
    #   iSRAM 2048: fits → 144.
    #   iSRAM 600: t = 4 ≥ C → D_1 = 144; the later set keeps 6·3·4 = 72 → 144 + 72 = 216.
    #   iSRAM 400: t = 2 → D_1 = 6·3·4 + (6·1·4 + 6·2·2)·3 = 72 + 144 = 216; later set 216 − 6·3·2 = 180 → 396.
    # Stall at 128 bit/cycle: the first row loads 864 bits → 7 cycles < 12 → slack, no stall anywhere.
    hw = HardwareArrays(J=6, K=4, f_sram=np.array([2048.0, 1024.0, 2048.0, 2048.0]),
                        i_sram=np.array([2048.0, 2048.0, 600.0, 400.0]), p_sram=512)
    c = branch_xziyzo.layer_counts(SMALL, hw)
    assert c.feasible.all()
    assert c.dram_f.tolist() == [288, 396, 288, 288]
    assert c.dram_i.tolist() == [144, 144, 216, 396]
    for name, expected in {"compute": 192, "stall": 0, "writeback": 8, "sram_f": 1152, "sram_i": 576,
                           "sram_p": 1408, "dram_o": 128}.items():
        assert getattr(c, name).tolist() == [expected] * 4, name


def test_stall_cases() -> None:
    # DRAM 16 bit/cycle: the first row's channel group loads 864 bits → 54 cycles: σ_x = 42, s_x = 0, so
    # σ_XZ = ⌈42·2⌉ = 84 and s_XZ = 0 (stalling case).
    # (a) fSRAM 2048 ≥ Q_f, iSRAM 1152 ≥ W_eff·R·C·b_i = 576: a later row loads U·W_eff·C_uv·b_i = 96 bits → 6
    #     cycles < T: σ_rev = 0, s_XZY = (12 − 6)·2·3 = 36; σ_XZY = 84. Prefetch: min(1152, 2048 − 1152) = 896 bits
    #     → 56 cycles, v = min(36, 56) = 36 → 84 + ⌈(84 − 36)·1⌉ = 132.
    # (b) fSRAM 1024 < Q_f, iSRAM 1152: m = ⌊1024/576⌋ = 1; I = 96 bits → 6 cycles, I + B_f = 672 → 42 cycles:
    #     σ_rev = 0·1 + ⌈30·(2 − 1)⌉ = 30, σ_XZY = 84 + 30·3 = 174, no prefetch → ⌈174·2⌉ = 348.
    # (c) fSRAM 1024, iSRAM 400 < 576: I = B_i = 288 bits → 18 cycles, I + B_f = 864 → 54 cycles:
    #     σ_rev = 6·1 + ⌈42·1⌉ = 48, σ_XZY = 84 + 48·3 = 228 → ⌈228·2⌉ = 456.
    # Write-back 1024 bits at 16 bit/cycle: 64 cycles.
    hw = HardwareArrays(J=6, K=4, f_sram=np.array([2048.0, 1024.0, 1024.0]),
                        i_sram=np.array([1152.0, 1152.0, 400.0]), p_sram=512, dram_bw=16, dram_block=16)
    c = branch_xziyzo.layer_counts(SMALL, hw)
    assert c.stall.tolist() == [132, 348, 456]
    assert c.writeback.tolist() == [64, 64, 64]


def test_leftover_column_strip() -> None:
    # G = 5 (W = 7), pSRAM 256 bits: G_eff = ⌊256/(4·32)⌋ = 2 → 2 strips of 2 columns (W_eff = 4) and one strip of
    # 1 column (W_eff = 3), each of all E = 4 rows (H = 6). fSRAM 2048, iSRAM 1024, 128 bit/cycle.
    # compute 2·(2·3·2·4·2) + 1·3·2·4·2 = 192 + 48 = 240; DRAM f 3·288 = 864 (28 planes ≥ 16);
    # DRAM i 2·(4·6·4) + 3·6·4 = 192 + 72 = 264 (768 and 576 bits fit); DRAM o 4·5·8 = 160;
    # SRAM p (2·3·2 − 1)·4·5·8 = 1760; SRAM f 9·4·8·4 per strip = 3456; SRAM i R·W_eff·C_uv·ρ·E·n_F = 3·W_eff·2·16:
    # 2·384 + 288 = 1056. Write-back 4·2·8·8 = 512 bits → 4 cycles per wide strip, 256 → 2: 10.
    # Stall: 2-column strips: T = 6, first row 576 + 192 = 768 bits → 6 cycles: σ_x = s_x = 0 (stalling case with
    #   nothing to stall): later rows 4·2·8 = 64 bits → 1 cycle, σ_rev = 0 → σ_XZY = 0 → 0.
    # 1-column strip: T = 3, first row 576 + 144 = 720 bits → 6 cycles: σ_x = 3, σ_XZ = 6; later rows 48 bits → 1
    #   cycle: σ_rev = 0, s_XZY = (3 − 1)·2·3 = 12; prefetch 896 bits → 7 cycles, v = 7 → 6 + ⌈max(6 − 7, 0)⌉ = 6.
    layer = ConvShape("ragged_small", 3, 3, 4, 4, 5, 8, 1)
    hw = HardwareArrays(J=6, K=4, f_sram=2048, i_sram=1024, p_sram=256)
    assert values(branch_xziyzo.layer_counts(layer, hw)) == {
        "compute": 240, "stall": 6, "writeback": 10, "sram_f": 3456, "sram_i": 1056, "sram_p": 1760,
        "dram_f": 864, "dram_i": 264, "dram_o": 160}


def test_same_sram_counts_as_xyzizo() -> None:
    # Both schedules read the SRAMs with the same per-row pattern; only DRAM traffic and stalls differ.
    hw = random_hardware(500, seed=3)
    for layer in LAYERS:
        a = branch_xziyzo.layer_counts(layer, hw)
        b = branch_xyzizo.layer_counts(layer, hw)
        both = a.feasible & b.feasible
        assert np.array_equal(a.feasible, b.feasible)
        for name in ("compute", "sram_f", "sram_i", "sram_p", "dram_o"):
            assert np.allclose(getattr(a, name)[both], getattr(b, name)[both], rtol=1e-12), (layer.name, name)


@pytest.mark.parametrize("layer", LAYERS, ids=[layer.name for layer in LAYERS])
def test_vectorised_equals_scalar(layer: ConvShape) -> None:
    hw = random_hardware(200, seed=len(layer.name) + 1)
    together = branch_xziyzo.layer_counts(layer, hw)
    assert together.compute.shape == (200,)
    for i in range(200):
        alone = branch_xziyzo.layer_counts(layer, point(hw, i))
        assert alone.compute.shape == ()
        assert bool(alone.feasible) == bool(together.feasible[i])
        if bool(alone.feasible):
            for name in FIELDS:
                assert float(getattr(alone, name)) == float(getattr(together, name)[i]), (name, i)


def test_minimum_sram_sizes_make_it_infeasible() -> None:
    layer = ConvShape("c", 5, 5, 32, 10, 20, 48, 1)  # J = 16 → C_uv = 3; K = 64 → F_uv = 48; G_eff = G = 20
    filter_min = 5 * 5 * 3 * 48 * 8  # R·S·C_uv·F_uv·b_f bits
    ifmap_min = 24 * 5 * 3 * 8  # W_eff·R·C_uv·b_i bits
    big = 256 * KB
    hw = HardwareArrays(J=16, K=64,
                        f_sram=np.array([filter_min - 8, filter_min, big, big]),
                        i_sram=np.array([big, big, ifmap_min - 8, ifmap_min]),
                        p_sram=big)
    assert branch_xziyzo.layer_counts(layer, hw).feasible.tolist() == [False, True, False, True]


def test_too_few_pe_rows_for_one_channel_is_infeasible() -> None:
    hw = HardwareArrays(J=np.array([10.0, 12.0]), K=16, f_sram=256 * KB, i_sram=256 * KB, p_sram=256 * KB)
    c = branch_xziyzo.layer_counts(ConvShape("alexnet_conv1", 11, 11, 3, 55, 55, 96, 4), hw)
    assert c.feasible.tolist() == [False, True]


def test_no_nan_and_nonnegative_on_feasible_points() -> None:
    hw = random_hardware(3000, seed=11)
    for layer in LAYERS:
        c = branch_xziyzo.layer_counts(layer, hw)
        assert c.feasible.shape == (3000,) and c.feasible.any()
        for name in FIELDS:
            v = getattr(c, name)[c.feasible]
            assert np.all(np.isfinite(v)) and np.all(v >= 0), (layer.name, name)
        assert np.all(c.dram_o[c.feasible] == layer.E * layer.G * layer.F)
        # Filters are loaded at least once; with stride 1 every input element at least once.
        assert np.all(c.dram_f[c.feasible] >= layer.R * layer.S * layer.C * layer.F - 1e-6)
        if layer.U == 1:
            assert np.all(c.dram_i[c.feasible] >= layer.W * layer.H * layer.C - 1e-6)
