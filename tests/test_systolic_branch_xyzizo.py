"""Schedule XYZiZo of the DeepOpt systolic model: the issue's per-layer check, hand-derived cases, vectorised ==
scalar, feasibility and NaN freedom."""

from __future__ import annotations

import numpy as np
import pytest

from dlaopt.formulations.systolic import branch_xyzizo
from dlaopt.formulations.systolic.counts import Block, ConvShape, Counts, HardwareArrays
from dlaopt.formulations.systolic.stages import row_stage

KB = 8 * 1024  # bits per kB
FIELDS = ("compute", "stall", "writeback", "sram_f", "sram_i", "sram_p", "dram_f", "dram_i", "dram_o")

# Layers for the vectorised == scalar comparison (stride 2, 1×1, 7×7/2, 5×5, wide enough that the psum SRAM forces
# G_eff < G on part of the grid, FC-as-1×1 with the batch of 16 as X, and a ragged odd-sized one).
LAYERS = [
    ConvShape("alexnet_conv3", 3, 3, 256, 13, 13, 384, 1),
    ConvShape("stride2_3x3", 3, 3, 64, 28, 28, 128, 2),
    ConvShape("pointwise", 1, 1, 256, 14, 14, 1024, 1),
    ConvShape("pointwise_s2", 1, 1, 512, 7, 7, 2048, 2),
    ConvShape("stem_7x7_s2", 7, 7, 3, 112, 112, 64, 2),
    ConvShape("conv_5x5", 5, 5, 48, 27, 27, 128, 1),
    ConvShape("wide_psum_limited", 3, 3, 64, 224, 224, 64, 1),
    ConvShape("fc_batch16", 1, 1, 4096, 1, 16, 1000, 1),
    ConvShape("ragged", 3, 3, 37, 9, 17, 70, 1),
]


def random_hardware(n: int, seed: int) -> HardwareArrays:
    """``n`` design points: J, K from 8..80 in steps of 2, SRAMs 4..256 kB in powers of two."""
    rng = np.random.default_rng(seed)
    return HardwareArrays(J=rng.integers(4, 41, n) * 2.0, K=rng.integers(4, 41, n) * 2.0,
                          f_sram=KB * 2.0 ** rng.integers(2, 9, n), i_sram=KB * 2.0 ** rng.integers(2, 9, n),
                          p_sram=KB * 2.0 ** rng.integers(2, 9, n))


def point(hw: HardwareArrays, i: int) -> HardwareArrays:
    return HardwareArrays(J=hw.J[i], K=hw.K[i], f_sram=hw.f_sram[i], i_sram=hw.i_sram[i], p_sram=hw.p_sram[i])


def values(c: Counts) -> dict[str, float]:
    return {name: float(getattr(c, name)) for name in FIELDS}


def test_alexnet_conv3_on_table3_hardware() -> None:
    # The per-layer check: C_uv = 10, F_uv = 64, G_eff = 13, E_eff = 2 → 6 blocks of 2 rows + 1 block of 1.
    hw = HardwareArrays(J=32, K=64, f_sram=16 * KB, i_sram=32 * KB, p_sram=8 * KB)
    c = branch_xyzizo.layer_counts(ConvShape("conv3", 3, 3, 256, 13, 13, 384, 1), hw)
    assert bool(c.feasible)
    assert float(c.compute) == 79_092
    assert float(c.writeback) == 4_056
    assert float(c.dram_f) == 6_193_152
    assert float(c.dram_i) == 103_680
    assert float(c.dram_o) == 64_896


# Hand cases. Layer R = S = 3, C = 4, E = G = 4, F = 8, U = 1 (W = H = 6); J = 6, K = 4 → C_uv = 2, F_uv = 4,
# n_C = ρ = 2, n_F = φ = 2. One row: T = G_eff·R = 12 cycles; B_f = 3·3·2·4·8 = 576 filter bits; R input rows
# R·W_eff·C_uv·b_i = 3·6·2·8 = 288 bits; a later row's U new rows 1·6·2·8 = 96 bits.
SMALL = ConvShape("small", 3, 3, 4, 4, 4, 8, 1)


def test_two_full_blocks_no_stall() -> None:
    # pSRAM 1024 bits: a row's psums 4·4·32 = 512 → G_eff = 4, ⌊1024/512⌋ = 2 rows → 2 blocks of E_eff = 2, H_eff = 4.
    # DRAM 128 bit/cycle: first row loads 576 + 288 = 864 bits → 7 cycles < T (slack 5), later rows 1 cycle: no stall.
    # Per block: compute 12·2·2·2 = 96; SRAM f R·S·C·F·E_eff = 9·4·8·2 = 576; SRAM i (sliding) 3·6·2 = 36 per row
    # ·E_eff 2·ρ 2·n_F 2 = 288; SRAM p (2·3·2 − 1)·2·4·8 = 704; DRAM f 9·4·8 = 288; V_i = 6·4·4 = 96 (768 bits fit
    # in 1024); DRAM o 2·4·8 = 64, written in 512/128 = 4 cycles. Two blocks double everything.
    hw = HardwareArrays(J=6, K=4, f_sram=1024, i_sram=1024, p_sram=1024)
    assert values(branch_xyzizo.layer_counts(SMALL, hw)) == {
        "compute": 192, "stall": 0, "writeback": 8, "sram_f": 1152, "sram_i": 576, "sram_p": 1408,
        "dram_f": 576, "dram_i": 192, "dram_o": 128}


def test_stall_with_slack_and_filter_prefetch() -> None:
    # DRAM 16 bit/cycle, same blocks as above (E_eff = 2). First row loads 864 bits → 54 cycles: σ_x = 42, no slack;
    # the later row loads 96 bits → 6 cycles: slack 6. So σ = 42, s = 6 > 0.
    # fSRAM 1024 < 2·B_f = 1152: no prefetch, σ_Z = ⌈42·2⌉ = 84, block ⌈84·2⌉ = 168, two blocks 336.
    # fSRAM 2048: prefetch, σ_Z = 42 + ⌈(42 − 6)·(2 − 1)⌉ = 78, block ⌈78·2⌉ = 156, two blocks 312.
    # Write-back 512 bits per block at 16 bit/cycle: 32 cycles, 64 in all.
    hw = HardwareArrays(J=6, K=4, f_sram=np.array([1024.0, 2048.0]), i_sram=1024, p_sram=1024,
                        dram_bw=16, dram_block=16)
    c = branch_xyzizo.layer_counts(SMALL, hw)
    assert c.stall.tolist() == [336, 312]
    assert c.writeback.tolist() == [64, 64]
    assert c.compute.tolist() == [192, 192]


def test_stall_without_slack_reverse_order_reuse() -> None:
    # pSRAM 512 bits: G_eff = 4 and one row per block (E_eff = 1, H_eff = 3) → 4 blocks; DRAM 16 bit/cycle.
    # σ = 42, s = 0: σ_Z = ⌈42·2⌉ = 84. Filter-only stall σ_f = cyc(576) − 12 = 36 − 12 = 24.
    # iSRAM 1024: V_i = 6·3·4 = 72 elements (576 bits) fit → σ_rev = ⌈24·2⌉ = 48, block 84 + ⌈48·1⌉ = 132, ·4 = 528;
    #   ifmap DRAM 72 per block, 288.
    # iSRAM 400 bits (≥ the row's 288): no fit, k = ⌊400/(6·3·2·8)⌋ = 1 → σ_rev = 24·1 + ⌈42·(2 − 1)⌉ = 66,
    #   block 84 + 66 = 150, ·4 = 600; ⌊400/(6·8)⌋ = 8 input rows stay → DRAM 72 + (72 − 48)·(2 − 1) = 96, ·4 = 384.
    hw = HardwareArrays(J=6, K=4, f_sram=1024, i_sram=np.array([1024.0, 400.0]), p_sram=512,
                        dram_bw=16, dram_block=16)
    c = branch_xyzizo.layer_counts(SMALL, hw)
    assert c.stall.tolist() == [528, 600]
    assert c.dram_i.tolist() == [288, 384]
    assert c.dram_f.tolist() == [4 * 288, 4 * 288]


def test_leftover_columns_and_rows_are_blocks_of_their_own() -> None:
    # E = G = 5 (W = H = 7), pSRAM 256 bits: G_eff = ⌊256/(4·32)⌋ = 2 → n_x = 2 strips of 2 columns with one row per
    # block (10 blocks 1×2, W_eff = 4, H_eff = 3) and a leftover strip of 1 column holding ⌊256/128⌋ = 2 rows
    # (2 blocks 2×1 with W = 3, H = 4, and 1 block 1×1 with W = H = 3): 13 blocks.
    # compute 10·(2·3·1·4) + 2·(1·3·2·4) + 1·(1·3·1·4) = 240 + 48 + 12 = 300 (= E·G·R·n_C·n_F);
    # DRAM f 13·288 = 3744; DRAM i (all fit in 1024 bits) 10·(4·3·4) + 2·(3·4·4) + 3·3·4 = 480 + 96 + 36 = 612;
    # DRAM o 5·5·8 = 200; SRAM f R·S·C·F = 288 per block row: 288·(10 + 2·2 + 1) = 4320; SRAM p (2·3·2 − 1)·25·8 =
    # 2200; SRAM i: a row reads R·W_eff·C_uv (stride 1, sliding window), times E_eff·ρ·n_F = 4·E_eff:
    # 10·(3·4·2·4) + 2·(3·3·2·8) + 3·3·2·4 = 960 + 288 + 72 = 1320.
    # Write-back: 128, 128 and 64 bits → 1 cycle each, 13. Stall (128 bit/cycle):
    #   1×2 blocks: T = 6, load 576 + 4·3·2·8 = 768 bits → 6 cycles: σ = s = 0; σ_f = max(5 − 6, 0) = 0 → 0.
    #   2×1 blocks: T = 3, load 576 + 144 = 720 bits → 6 cycles: σ_x = 3; later row 48 bits → 1 cycle, slack 2:
    #     s = 2 > 0, fSRAM 1024 < 1152 → σ_Z = ⌈3·2⌉ = 6, ⌈6·2⌉ = 12 each, 24.
    #   1×1 block: σ = 3, s = 0 → σ_Z = 6, σ_f = 5 − 3 = 2, input fits → σ_rev = ⌈2·2⌉ = 4 → 6 + 4 = 10.
    #   Total 34.
    layer = ConvShape("ragged_small", 3, 3, 4, 5, 5, 8, 1)
    hw = HardwareArrays(J=6, K=4, f_sram=1024, i_sram=1024, p_sram=256)
    assert values(branch_xyzizo.layer_counts(layer, hw)) == {
        "compute": 300, "stall": 34, "writeback": 13, "sram_f": 4320, "sram_i": 1320, "sram_p": 2200,
        "dram_f": 3744, "dram_i": 612, "dram_o": 200}


@pytest.mark.parametrize("layer", LAYERS, ids=[layer.name for layer in LAYERS])
def test_vectorised_equals_scalar(layer: ConvShape) -> None:
    hw = random_hardware(200, seed=len(layer.name))
    together = branch_xyzizo.layer_counts(layer, hw)
    assert together.compute.shape == (200,)
    for i in range(200):
        alone = branch_xyzizo.layer_counts(layer, point(hw, i))
        assert alone.compute.shape == ()
        assert bool(alone.feasible) == bool(together.feasible[i])
        if bool(alone.feasible):
            for name in FIELDS:
                assert float(getattr(alone, name)) == float(getattr(together, name)[i]), (name, i)


def test_psum_limited_layer_covers_leftover_columns() -> None:
    # The wide layer of the comparison above really exercises G_eff < G with leftover columns on that grid.
    layer = next(layer for layer in LAYERS if layer.name == "wide_psum_limited")
    hw = random_hardware(200, seed=len(layer.name))
    row = row_stage(Block.of(layer), hw)
    assert np.any(row.feasible & (row.G_eff < layer.G) & (layer.G % np.maximum(row.G_eff, 1) > 0))


def test_minimum_sram_sizes_make_it_infeasible() -> None:
    layer = ConvShape("c", 3, 3, 64, 14, 14, 64, 1)  # J = 32 → C_uv = 10; K = 32 → F_uv = 32; G_eff = G = 14
    filter_min = 3 * 3 * 10 * 32 * 8  # R·S·C_uv·F_uv·b_f bits
    ifmap_min = 16 * 3 * 10 * 8  # W_eff·R·C_uv·b_i bits
    big = 256 * KB
    hw = HardwareArrays(J=32, K=32,
                        f_sram=np.array([filter_min - 8, filter_min, big, big]),
                        i_sram=np.array([big, big, ifmap_min - 8, ifmap_min]),
                        p_sram=big)
    assert branch_xyzizo.layer_counts(layer, hw).feasible.tolist() == [False, True, False, True]


def test_too_few_pe_rows_for_one_channel_is_infeasible() -> None:
    # J = 10 < S = 11: C_uv = 0, not even one channel fits a PE column.
    hw = HardwareArrays(J=np.array([10.0, 12.0]), K=16, f_sram=256 * KB, i_sram=256 * KB, p_sram=256 * KB)
    c = branch_xyzizo.layer_counts(ConvShape("alexnet_conv1", 11, 11, 3, 55, 55, 96, 4), hw)
    assert c.feasible.tolist() == [False, True]


def test_no_nan_and_nonnegative_on_feasible_points() -> None:
    hw = random_hardware(3000, seed=7)
    for layer in LAYERS:
        c = branch_xyzizo.layer_counts(layer, hw)
        assert c.feasible.shape == (3000,) and c.feasible.any()
        for name in FIELDS:
            v = getattr(c, name)[c.feasible]
            assert np.all(np.isfinite(v)) and np.all(v >= 0), (layer.name, name)
        # Compute cycles are the schedule-independent G·R·E·n_C·n_F.
        C_uv = np.minimum(np.floor(hw.J / layer.S), layer.C)
        F_uv = np.minimum(hw.K, layer.F)
        expected = layer.G * layer.R * layer.E * np.ceil(layer.C / np.maximum(C_uv, 1)) * np.ceil(layer.F / F_uv)
        assert np.array_equal(c.compute[c.feasible], expected[c.feasible])
        assert np.all(c.dram_o[c.feasible] == layer.E * layer.G * layer.F)
