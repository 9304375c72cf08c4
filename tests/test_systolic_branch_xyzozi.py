"""Schedule XYZoZi of the DeepOpt systolic model (``dlaopt.formulations.systolic.branch_xyzozi``).

Hand-derived cases (numbers worked out from the module docstring's equations, not from running the code), invariants
that any correct model keeps, vectorised == scalar on random design points, infeasibility and NaN checks. The random
design points and layer list are shared with ``test_systolic_branch_xzoyzi.py``.
"""

from __future__ import annotations

import math
import warnings
from types import ModuleType

import numpy as np
import pytest

from dlaopt.formulations.systolic import branch_xyzozi, branch_xzoyzi
from dlaopt.formulations.systolic.counts import ConvShape, Counts, HardwareArrays

KB = 8 * 1024  # bits per kB
FIELDS = ("compute", "stall", "writeback", "sram_f", "sram_i", "sram_p", "dram_f", "dram_i", "dram_o")

# layers covering stride 2, 1×1, 7×7/2, 5×5, FC-as-1×1 (E = 1, G = 16) and shapes whose psum needs split G, E or F
LAYERS = [
    ConvShape("alexnet-conv3", R=3, S=3, C=256, E=13, G=13, F=384),
    ConvShape("stem-7x7/2", R=7, S=7, C=3, E=112, G=112, F=64, U=2),
    ConvShape("1x1/2", R=1, S=1, C=256, E=28, G=28, F=512, U=2),
    ConvShape("5x5", R=5, S=5, C=48, E=27, G=27, F=128),
    ConvShape("wide-rows", R=3, S=3, C=64, E=56, G=224, F=64),  # G_eff < G on small psum SRAMs
    ConvShape("odd", R=3, S=3, C=100, E=17, G=23, F=200),  # E_eff < E, F_eff < F, leftovers in all three
    ConvShape("3x3/2", R=3, S=3, C=7, E=9, G=31, F=70, U=2),
    ConvShape("fc-batch16", R=1, S=1, C=4096, E=1, G=16, F=1000),
]


def random_hardware(n: int = 200, seed: int = 0) -> HardwareArrays:
    """``n`` design points: J, K in 8..80 step 2, each SRAM a power of two from 4 to 256 kB."""
    rng = np.random.default_rng(seed)
    J = rng.integers(4, 41, n) * 2.0
    K = rng.integers(4, 41, n) * 2.0
    sram = [2.0 ** rng.integers(2, 9, n) * KB for _ in range(3)]
    return HardwareArrays(J=J, K=K, f_sram=sram[0], i_sram=sram[1], p_sram=sram[2])


def point(hw: HardwareArrays, t: int) -> HardwareArrays:
    """Design point ``t`` of ``hw`` as a 0-d hardware point."""
    return HardwareArrays(J=hw.J[t], K=hw.K[t], f_sram=hw.f_sram[t], i_sram=hw.i_sram[t], p_sram=hw.p_sram[t])


def values(c: Counts) -> dict[str, float]:
    return {k: float(getattr(c, k)) for k in FIELDS}


def assert_vectorised_equals_scalar(layer_counts: object, layer: ConvShape) -> None:
    assert callable(layer_counts)
    hw = random_hardware()
    vec = layer_counts(layer, hw)
    for t in range(hw.size):
        one = layer_counts(layer, point(hw, t))
        assert one.compute.shape == ()
        assert bool(one.feasible) == bool(vec.feasible[t]), (layer.name, t)
        for k in FIELDS:
            assert float(getattr(one, k)) == pytest.approx(float(getattr(vec, k)[t]), rel=1e-12, abs=1e-9), \
                (layer.name, t, k)


def assert_invariants(layer_counts: object, layer: ConvShape) -> None:
    """On random design points: the work is independent of how the psum SRAM cuts the layer (compute cycles
    ``G·R·E·⌈C/C_uv⌉·⌈F/F_uv⌉``; ofmap writes ``E·G·F``; psum accesses ``(2R−1)`` per ofmap element for the first
    channel group, ``2R`` for every later one); no NaN or infinity anywhere; no floating-point warning."""
    assert callable(layer_counts)
    hw = random_hardware(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = layer_counts(layer, hw)
    ok = c.feasible
    assert ok.shape == (hw.size,) and ok.any()
    for k in FIELDS:
        v = getattr(c, k)
        assert v.shape == (hw.size,)
        assert np.isfinite(v).all(), k
        assert (v[ok] >= 0).all(), k
        assert (v[~ok] == 0).all(), k
    C_uv = np.minimum(np.floor(hw.J / layer.S), layer.C)
    F_uv = np.minimum(hw.K, layer.F)
    k_C = np.ceil(layer.C / C_uv[ok])
    compute = layer.G * layer.R * layer.E * k_C * np.ceil(layer.F / F_uv[ok])
    np.testing.assert_array_equal(c.compute[ok], compute)
    np.testing.assert_array_equal(c.dram_o[ok], layer.E * layer.G * layer.F)
    psum = layer.E * layer.G * layer.F * ((2 * layer.R - 1) + 2 * layer.R * (k_C - 1))
    np.testing.assert_allclose(c.sram_p[ok], psum, rtol=1e-12)
    assert (c.stall[ok] == np.round(c.stall[ok])).all() and (c.writeback[ok] >= 1).all()


def assert_unsplit_layer(layer_counts: object) -> None:
    """SRAMs large enough that nothing is split: the paper's Table 2 × Eq. 9 totals (here C/C_uv = 1, F/F_uv = 2, a
    1×1 layer so the ifmap vector is read every cycle) and a single DRAM pass over filters and ifmap."""
    assert callable(layer_counts)
    layer = ConvShape("1x1", R=1, S=1, C=16, E=6, G=5, F=32)
    hw = HardwareArrays(J=16, K=16, f_sram=64 * KB, i_sram=64 * KB, p_sram=64 * KB)
    c = values(layer_counts(layer, hw))
    R, S, C, E, G, F = layer.R, layer.S, layer.C, layer.E, layer.G, layer.F
    C_uv, F_uv = 16, 16
    cycles = R * G * E * (C / C_uv) * (F / F_uv)  # Eq. 9
    assert c["compute"] == cycles == 60
    assert c["sram_f"] == S * C_uv * F_uv * cycles / G == R * S * C * F * E  # Eq. 2 × Eq. 9
    assert c["sram_i"] == S * C_uv * cycles  # Eq. 3 × Eq. 9
    assert c["sram_p"] == (2 * R - 1) * F_uv / R * cycles == E * G * F  # Eq. 5 × Eq. 9
    assert c["dram_f"] == R * S * C * F
    assert c["dram_i"] == G * E * C  # W = G, H = E for a 1×1 stride-1 layer
    assert c["dram_o"] == E * G * F
    assert c["writeback"] == math.ceil(E * G * F * 8 / 128)


# ------------------------------------------------------------------------------------------------ hand-derived cases


def test_filter_groups_split_by_psum_sram() -> None:
    """F_eff < F, with stalls and reverse-order ifmap reloads.

    Layer 3×3, C=4, E=G=4, F=16, U=1; J=8, K=4 → C_uv = min(⌊8/3⌋, 4) = 2, F_uv = 4, k_C = 2.
    pSRAM 4096 bits: G·F_uv·b_p = 512 ≤ 4096 → G_eff = 4, W_eff = 6; rows ⌊4096/512⌋ = 8 ≥ 4 → E_eff = 4, H_eff = 6;
    planes ⌊4096/(4·4·32)⌋ = 8 < 16 → F_eff = 4·⌊8/4⌋ = 8, k_F = 2 → n_F = 2 blocks, no leftover.
    Per block: compute 4·3·4·⌈2⌉·⌈2⌉ = 192; SRAM f 9·2·4·4·2·2 = 1152; I_row = R·W_eff·C_uv = 36 (sliding) → SRAM i
    36·4·2·2 = 576; SRAM p 4·4·4·2·(5 + 6·1) = 1408; DRAM f 9·4·8 = 288.
    DRAM ifmap: V = 6·6·2 = 72 elements = 576 bits > iSRAM 400 → rows kept ⌊400/(6·2·8)⌋ = 4, V_i = 72 + ⌈2−1⌉·6·2·(6−4)
    = 96, × k_C = 192. Ofmap 4·4·8 = 128 elements = 1024 bits → 64 cycles at 16 bit/cycle.
    Stall (16-bit DRAM): row load ⌈(576 + 288)/16⌉ = 54 vs 12 cycles → σ_x = 42; later rows ⌈96/16⌉ = 6 ≤ 12, slack
    (12−6)·3 = 18 → σ_xy = 42, τ_xy = 18. φ = ⌈576/16⌉ − 12 = 24; fSRAM 4096 ≥ 2·576 → prefetch, φ' = 24 − 18 = 6;
    σ_xyF = 42 + ⌈6·(2−1)⌉ = 48; block ⌈48·2⌉ = 96. Layer = 2 × block.
    """
    layer = ConvShape("t", R=3, S=3, C=4, E=4, G=4, F=16)
    hw = HardwareArrays(J=8, K=4, f_sram=4096, i_sram=400, p_sram=4096, dram_bw=16, dram_block=16)
    c = branch_xyzozi.layer_counts(layer, hw)
    assert bool(c.feasible)
    assert values(c) == {"compute": 384, "stall": 192, "writeback": 128, "sram_f": 2304, "sram_i": 1152,
                         "sram_p": 2816, "dram_f": 576, "dram_i": 384, "dram_o": 256}


def test_columns_split_by_psum_sram() -> None:
    """G_eff < G: column blocks and a strip.

    1×1, C=4, E=2, G=5, F=4; J=K=4 → C_uv = 4, F_uv = 4, k_C = k_F = 1. pSRAM 256 bits: 5·4·32 > 256 →
    G_eff = ⌊256/128⌋ = 2, E_eff = ⌊256/256⌋ = 1, planes ⌊256/64⌋ = 4 ≥ 4 → F_eff = 4.
    Tiling: n_x = ⌊5/2⌋ = 2 column blocks in each of E = 2 rows (4 blocks), strip of G_r = 1 column: sub-layer 2×1×4
    with G_eff = 1, E_1 = min(2, ⌊256/128⌋) = 2, F_eff = 4 → one block, no rows left.
    Column block: compute 2·1·1 = 2, SRAM f 4·4 = 16, SRAM i G_eff·C_uv = 8 (1×1: read every cycle), SRAM p 2·1·4·1 = 8,
    DRAM f 16, DRAM i 1·2·4 = 8, ofmap 8 (64 bits → 1 cycle); stall: load ⌈(128 + 64)/128⌉ = 2 = compute → 0.
    Strip block: compute 1·1·2 = 2, SRAM f 16·2 = 32, SRAM i 4·2 = 8, SRAM p 1·2·4 = 8, DRAM f 16, DRAM i 2·1·4 = 8,
    ofmap 8 (1 cycle); stall: first row ⌈(128 + 32)/128⌉ = 2 vs 1 → σ_x = 1, later row ⌈32/128⌉ = 1 ≤ 1, τ = 0;
    ifmap 64 bits fits → σ_xyF = 1 + ⌈0·0⌉ = 1, block ⌈1·1⌉ = 1.
    Layer = 4 × column block + strip.
    """
    layer = ConvShape("t", R=1, S=1, C=4, E=2, G=5, F=4)
    hw = HardwareArrays(J=4, K=4, f_sram=1024, i_sram=1024, p_sram=256)
    c = branch_xyzozi.layer_counts(layer, hw)
    assert bool(c.feasible)
    assert values(c) == {"compute": 10, "stall": 1, "writeback": 5, "sram_f": 96, "sram_i": 40, "sram_p": 40,
                         "dram_f": 80, "dram_i": 40, "dram_o": 40}


def test_leftover_rows_and_filters() -> None:
    """E_eff < E with a leftover row, and a leftover filter group.

    1×1, C=4, E=3, G=2, F=5; J=4, K=2 → C_uv = 4, F_uv = 2. pSRAM 256: 2·2·32 = 128 → G_eff = 2; rows ⌊256/128⌋ = 2
    → E_eff = 2; planes ⌊256/(2·2·32)⌋ = 2 < 5 → F_eff = 2 → n_F = 2 groups, F_r = 1.
    Full group (F_g = 2): block 2×2×2 once (⌊3/2⌋), last row 1×2×2 (its planes ⌊256/64⌋ = 4 ≥ 2).
    Leftover group (F = 1, F_uv = 1): G_eff 2, E_eff min(3, ⌊256/64⌋) = 3, F_eff 1: one block 3×2×1.
    compute 4 / 2 / 6; SRAM f (R·S·C_uv·F_uv·E_eff) 16 / 8 / 12; SRAM i (G_eff·C_uv·E_eff) 16 / 8 / 24;
    SRAM p (G_eff·E_eff·F_eff) 8 / 4 / 6; DRAM f (C·F_eff) 8 / 8 / 4; DRAM i (H_eff·W_eff·C_uv) 16 / 8 / 24;
    ofmap 8 / 4 / 6 elements, 1 / 1 / 1 write-back cycles; no stall (every load ≤ 1 cycle < 2 compute cycles per row).
    Layer = 2 × (block + last row) + leftover group.
    """
    layer = ConvShape("t", R=1, S=1, C=4, E=3, G=2, F=5)
    hw = HardwareArrays(J=4, K=2, f_sram=1024, i_sram=1024, p_sram=256)
    c = branch_xyzozi.layer_counts(layer, hw)
    assert bool(c.feasible)
    assert values(c) == {"compute": 18, "stall": 0, "writeback": 5, "sram_f": 60, "sram_i": 72, "sram_p": 30,
                         "dram_f": 36, "dram_i": 72, "dram_o": 30}


def test_alexnet_conv3_reference_hardware() -> None:
    """AlexNet conv3 on the Table 3 hardware: the branch-independent figures of the issue's per-layer check
    (79,092 compute cycles, 4,056 write-back cycles, 64,896 ofmap elements) and the filter traffic: G_eff = 13,
    E_eff = ⌊65536/(13·64·32)⌋ = 2, F_eff = 64 → 7 row blocks × 6 filter groups, each loading 3·3·256·64 filters."""
    layer = ConvShape("alexnet-conv3", R=3, S=3, C=256, E=13, G=13, F=384)
    hw = HardwareArrays(J=32, K=64, f_sram=16 * KB, i_sram=32 * KB, p_sram=8 * KB)
    c = values(branch_xyzozi.layer_counts(layer, hw))
    assert (c["compute"], c["writeback"], c["dram_o"]) == (79_092, 4_056, 64_896)
    assert c["dram_f"] == 42 * 9 * 256 * 64 == 6_193_152


# ------------------------------------------------------------------------------------------ invariants and contract


BRANCHES = [branch_xyzozi, branch_xzoyzi]
BRANCH_IDS = ["XYZoZi", "XZoYZi"]


@pytest.mark.parametrize("branch", BRANCHES, ids=BRANCH_IDS)
def test_unsplit_layer_matches_paper_totals(branch: ModuleType) -> None:
    assert_unsplit_layer(branch.layer_counts)


@pytest.mark.parametrize("branch", BRANCHES, ids=BRANCH_IDS)
@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_invariants_on_random_hardware(branch: ModuleType, layer: ConvShape) -> None:
    assert_invariants(branch.layer_counts, layer)


@pytest.mark.parametrize("branch", BRANCHES, ids=BRANCH_IDS)
@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_vectorised_equals_scalar(branch: ModuleType, layer: ConvShape) -> None:
    assert_vectorised_equals_scalar(branch.layer_counts, layer)


@pytest.mark.parametrize("branch", BRANCHES, ids=BRANCH_IDS)
def test_random_layers_exercise_every_split(branch: ModuleType) -> None:
    """The random design points do cut the test layers in every direction (so the checks above cover the tiling)."""
    hw = random_hardware()
    seen = set()
    for layer in LAYERS:
        with np.errstate(divide="ignore", invalid="ignore"):
            top = branch.block(layer, hw, np.asarray(float(layer.E)), np.asarray(float(layer.G)),
                                      np.asarray(float(layer.F)))
        ok = top.counts.feasible
        seen |= {("G", bool(v)) for v in (top.G_eff < layer.G)[ok]}
        seen |= {("E", bool(v)) for v in (top.E_eff < layer.E)[ok]}
        seen |= {("F", bool(v)) for v in (layer.F % top.F_eff[ok] > 0)}
    assert seen == {(d, b) for d in "GEF" for b in (False, True)}


@pytest.mark.parametrize("branch", BRANCHES, ids=BRANCH_IDS)
def test_infeasible_points_are_flagged(branch: ModuleType) -> None:
    layer = ConvShape("t", R=3, S=3, C=64, E=8, G=8, F=64)
    # fSRAM below one filter set R·S·C_uv·F_uv·b_f (3·3·10·64·8 bits); iSRAM below R input rows W·R·C_uv·b_i;
    # J < S (no channel fits a PE column); a feasible point last
    hw = HardwareArrays(J=np.array([32, 32, 2, 32]), K=64, f_sram=np.array([4 * KB, 64 * KB, 64 * KB, 64 * KB]),
                        i_sram=np.array([64 * KB, 1000, 64 * KB, 64 * KB]), p_sram=64 * KB)
    c = branch.layer_counts(layer, hw)
    np.testing.assert_array_equal(c.feasible, [False, False, False, True])
    for k in FIELDS:
        assert (getattr(c, k)[:3] == 0).all()
        assert np.isfinite(getattr(c, k)).all()
    assert (c.masked().compute[:3] == np.inf).all()


def test_broadcast_grid_shape() -> None:
    """Hardware fields broadcast: a J × K × pSRAM grid gives counts of that shape."""
    layer = LAYERS[0]
    hw = HardwareArrays(J=np.arange(8, 40, 8.0)[:, None, None], K=np.arange(8, 80, 24.0)[None, :, None],
                        f_sram=64 * KB, i_sram=64 * KB, p_sram=np.array([4, 16, 64]) * KB)
    c = branch_xyzozi.layer_counts(layer, hw)
    assert c.compute.shape == c.feasible.shape == (4, 3, 3)
    flat = branch_xyzozi.layer_counts(layer, HardwareArrays(
        J=np.broadcast_to(hw.J, (4, 3, 3)).ravel(), K=np.broadcast_to(hw.K, (4, 3, 3)).ravel(),
        f_sram=64 * KB, i_sram=64 * KB, p_sram=np.broadcast_to(hw.p_sram, (4, 3, 3)).ravel()))
    for k in FIELDS:
        np.testing.assert_array_equal(getattr(c, k).ravel(), getattr(flat, k))
