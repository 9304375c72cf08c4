"""Schedule XZoYZi of the DeepOpt systolic model (``dlaopt.formulations.systolic.branch_xzoyzi``).

Hand-derived cases (numbers worked out from the module docstring's equations, not from running the code), the shared
invariant / vectorised == scalar / infeasibility checks of ``test_systolic_branch_xyzozi.py``.
"""

from __future__ import annotations

from test_systolic_branch_xyzozi import (
    values,
)

from dlaopt.formulations.systolic import branch_xzoyzi
from dlaopt.formulations.systolic.counts import ConvShape, HardwareArrays

# ------------------------------------------------------------------------------------------------ hand-derived cases


def test_filter_groups_split_by_psum_sram() -> None:
    """F_eff < F: the psum SRAM holds one row for only part of the filters, so rows come one at a time.

    Layer 3×3, C=4, E=G=4, F=16, U=1; J=8, K=4 → C_uv = 2, F_uv = 4, k_C = 2. pSRAM 1024 bits: 4·4·32 = 512 ≤ 1024 →
    G_eff = 4, W_eff = 6; G_eff·F·b_p = 2048 > 1024 → F_eff = 4·⌊⌊1024/128⌋/4⌋ = 8, k_F = 2;
    E_eff = min(4, ⌊1024/(4·8·32)⌋) = 1, H_eff = 3. Blocks: n_F = 2 filter groups × 4 rows = 8 blocks of 1×4×8.
    Per block: compute 4·3·⌈2⌉·1·⌈2⌉ = 48; SRAM f 9·2·4·2·1·2 = 288; SRAM i 36·2·1·2 = 144 (I_row = 3·6·2);
    SRAM p 4·1·4·2·(5 + 6) = 352; DRAM f: C_uv·F_eff = 16 planes > ⌊1024/72⌋ = 14 kept, but E_eff = 1 so nothing is
    reloaded: 9·2·8·k_C = 288; DRAM i 3·6·4 = 72; ofmap 1·4·8 = 32 elements = 256 bits → 16 cycles at 16 bit/cycle.
    Stall (16-bit DRAM): σ_x = ⌈864/16⌉ − 12 = 42, τ_x = 0; λ_f = ⌈576/16⌉ = 36 → φ = 24, σ_F = ⌈24·1⌉ = 24;
    σ_xF = 66, τ_xF = 0 → σ_xFy = 66 + 0·(…) = 66; block ⌈66·2⌉ = 132. Layer = 8 × block.
    """
    layer = ConvShape("t", R=3, S=3, C=4, E=4, G=4, F=16)
    hw = HardwareArrays(J=8, K=4, f_sram=1024, i_sram=1024, p_sram=1024, dram_bw=16, dram_block=16)
    c = branch_xzoyzi.layer_counts(layer, hw)
    assert bool(c.feasible)
    assert values(c) == {"compute": 384, "stall": 1056, "writeback": 128, "sram_f": 2304, "sram_i": 1152,
                         "sram_p": 2816, "dram_f": 2304, "dram_i": 576, "dram_o": 256}


def test_reverse_order_filter_reloads() -> None:
    """E_eff > 1 with a filter SRAM too small for the row's filters: reverse order and its stall.

    Same layer; pSRAM 4096: G_eff = 4; 4·16·32 = 2048 ≤ 4096 → F_eff = 16, k_F = 4; E_eff = min(4, ⌊4096/2048⌋) = 2,
    H_eff = 4 → 2 blocks of 2×4×16.
    Per block: compute 4·3·4·2·2 = 192; SRAM f 9·2·4·4·2·2 = 1152; SRAM i 36·4·2·2 = 576; SRAM p 4·2·4·4·11 = 1408;
    DRAM f: 32 planes, ⌊1024/72⌋ = 14 kept → 9·2·16 + (2−1)·9·(32−14) = 450, × k_C = 900; DRAM i 4·6·4 = 96;
    ofmap 2·4·16 = 128 elements = 1024 bits → 64 cycles.
    Stall: σ_x = 42, τ_x = 0; φ = 24, σ_F = ⌈24·3⌉ = 72 → σ_xF = 114, τ_xF = 0. Later row: ψ = max(0, ⌈96/16⌉ − 12) = 0;
    fSRAM 1024 < 9·2·16·8 = 2304 → ρ = ⌈24·(4 − ⌊1024/576⌋)⌉ = 72 → σ_xFy = 114 + 1·(0 + 72) = 186; block ⌈186·2⌉ = 372.
    """
    layer = ConvShape("t", R=3, S=3, C=4, E=4, G=4, F=16)
    hw = HardwareArrays(J=8, K=4, f_sram=1024, i_sram=1024, p_sram=4096, dram_bw=16, dram_block=16)
    c = branch_xzoyzi.layer_counts(layer, hw)
    assert bool(c.feasible)
    assert values(c) == {"compute": 384, "stall": 744, "writeback": 128, "sram_f": 2304, "sram_i": 1152,
                         "sram_p": 2816, "dram_f": 1800, "dram_i": 192, "dram_o": 256}


def test_columns_split_by_psum_sram() -> None:
    """G_eff < G: column blocks and a strip.

    1×1, C=4, E=2, G=5, F=4; J=K=4 → C_uv = F_uv = 4, k_C = k_F = 1. pSRAM 256: G_eff = ⌊256/128⌋ = 2; 2·4·32 = 256 ≤
    256 → F_eff = 4; E_eff = min(2, ⌊256/256⌋) = 1. n_x = 2 column blocks × E = 2 rows, strip of 1 column: G_eff 1,
    F_eff 4, E_1 = min(2, ⌊256/128⌋) = 2 → one block.
    Column block: compute 2, SRAM f 16, SRAM i 8, SRAM p 8, DRAM f 16 (16 planes ≤ ⌊1024/8⌋ kept), DRAM i 1·2·4 = 8,
    ofmap 8 (1 cycle), stall 0 (load ⌈192/128⌉ = 2 = compute; λ_f = 1 → φ = 0; E_eff = 1).
    Strip block: compute 2, SRAM f 32, SRAM i 8, SRAM p 8, DRAM f 16, DRAM i 2·1·4 = 8, ofmap 8 (1 cycle); stall:
    σ_x = ⌈160/128⌉ − 1 = 1, τ_x = 0, φ = 0 → σ_xF = 1, τ_xF = 0; ψ = ⌈32/128⌉ − 1 = 0, filters fit (ρ = 0) → 1.
    """
    layer = ConvShape("t", R=1, S=1, C=4, E=2, G=5, F=4)
    hw = HardwareArrays(J=4, K=4, f_sram=1024, i_sram=1024, p_sram=256)
    c = branch_xzoyzi.layer_counts(layer, hw)
    assert bool(c.feasible)
    assert values(c) == {"compute": 10, "stall": 1, "writeback": 5, "sram_f": 96, "sram_i": 40, "sram_p": 40,
                         "dram_f": 80, "dram_i": 40, "dram_o": 40}


def test_leftover_filter_group() -> None:
    """F_eff < F with a leftover filter group of its own shape.

    1×1, C=4, E=3, G=2, F=5; J=4, K=2 → C_uv = 4, F_uv = 2. pSRAM 256: G_eff = 2 (2·2·32 = 128); 2·5·32 = 320 > 256 →
    F_eff = 2·⌊⌊256/64⌋/2⌋ = 4, k_F = 2; E_eff = min(3, ⌊256/(2·4·32)⌋) = 1 → full group: 3 row blocks of 1×2×4.
    Leftover F_r = 1 (F_uv = 1): G_eff 2, F_eff 1, E_eff = min(3, ⌊256/64⌋) = 3 → one block 3×2×1.
    Row block / leftover: compute 2·2·1 = 4 / 2·1·3 = 6; SRAM f 4·2·2 = 16 / 4·1·3 = 12; SRAM i 8·2 = 16 / 8·3 = 24;
    SRAM p 2·1·2·2 = 8 / 2·3·1 = 6; DRAM f 4·4 = 16 / 4; DRAM i 1·2·4 = 8 / 3·2·4 = 24; ofmap 8 / 6 (1 cycle each);
    no stall (loads of 1 cycle under 2 compute cycles: τ > 0, σ = 0).
    Layer = 3 × row block + leftover.
    """
    layer = ConvShape("t", R=1, S=1, C=4, E=3, G=2, F=5)
    hw = HardwareArrays(J=4, K=2, f_sram=1024, i_sram=1024, p_sram=256)
    c = branch_xzoyzi.layer_counts(layer, hw)
    assert bool(c.feasible)
    assert values(c) == {"compute": 18, "stall": 0, "writeback": 4, "sram_f": 60, "sram_i": 72, "sram_p": 30,
                         "dram_f": 52, "dram_i": 48, "dram_o": 30}


# ------------------------------------------------------------------------------------------ invariants and contract


