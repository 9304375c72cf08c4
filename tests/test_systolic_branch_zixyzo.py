"""Schedule Z_i X Y Z_o of the DeepOpt systolic model: hand cases, invariants, vectorised == scalar, feasibility.

The expected numbers of the hand cases are derived in the comments from the equations in the module docstring of
:mod:`dlaopt.formulations.systolic.branch_zixyzo` (``T`` cycles per pixel, ``V_f`` filter group, ``φ = F/F_uv``,
``dram_cycles(b) = ⌈b/128⌉`` for 128-bit blocks at 128 bit/cycle)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

from dlaopt.formulations.systolic.branch_zixyzo import ifmap_dram_per_group, layer_counts, pixel_geometry
from dlaopt.formulations.systolic.counts import ConvShape, Counts, HardwareArrays

KB = 8 * 1024  # bits per kB
FIELDS = ("compute", "stall", "writeback", "sram_f", "sram_i", "sram_p", "dram_f", "dram_i", "dram_o")


def table3(**overrides: Any) -> HardwareArrays:
    """The Table 3 hardware: 32×64, fSRAM 16 kB, iSRAM 32 kB, pSRAM 8 kB, 8/8/32/8 bits, 128-bit DRAM."""
    args: dict[str, Any] = {"J": 32, "K": 64, "f_sram": 16 * KB, "i_sram": 32 * KB, "p_sram": 8 * KB}
    args.update(overrides)
    return HardwareArrays(**args)


def as_dict(c: Counts) -> dict[str, float]:
    return {name: float(getattr(c, name)) for name in FIELDS}


# ================================================================================================== hand-derived cases


def test_filter_group_fits_fractional_filter_groups() -> None:
    # 3×3, C=4, E=G=4, F=96, U=1 on Table 3: C_uv = min(⌊32/3⌋, 4) = 4, F_uv = min(64, 96) = 64, φ = 1.5, N_F = 2.
    # T = R·⌈C/C_uv⌉ = 3. W = H = 6. V_f = 3·3·4·64 = 2304 elements = 18432 bits ≤ 131072: the fSRAM holds a group.
    # compute = T·G·E·N_F = 3·16·2 = 96.
    # SRAM: filter R·S·C·F·E·G = 36·96·16 = 55296; ifmap R·S·C·E·G·N_F = 36·16·2 = 1152; psum F·E·G = 1536.
    # DRAM: filter R·S·C·F = 3456; ifmap W·H·C·b_i = 1152 bits ≤ iSRAM → once, 6·6·4 = 144; ofmap 1536.
    # write-back dram_cycles(1536·8) = 96.
    # stall: L₁ = ⌈(18432 + 36·8)/128⌉ = ⌈146.25⌉ = 147 → σ₁ = 144, s₁ = 0.
    #   L_x = ⌈1·3·4·8/128⌉ = 1 → no stall, slack 2 per pixel: σ_x = 144, s_x = 3·2 = 6.
    #   band row W·R·C·b_i = 576 ≤ iSRAM → L_y = 1 → σ_g = 144, s_g = 6 + 4·3·2 = 30.
    #   π = min(18432, 131072 − 18432) = 18432 bits → 144 cycles; saved = min(30, 144) = 30; next = 114.
    #   stall = 144 + ⌈114·0.5⌉ = 201.
    c = layer_counts(ConvShape("a", 3, 3, 4, 4, 4, 96), table3())
    assert bool(c.feasible)
    assert as_dict(c) == {"compute": 96, "stall": 201, "writeback": 96, "sram_f": 55296, "sram_i": 1152,
                          "sram_p": 1536, "dram_f": 3456, "dram_i": 144, "dram_o": 1536}


def test_filter_group_does_not_fit_gives_infinite_stall_finite_energy() -> None:
    # 3×3, C=64, E=G=4, F=64, U=1 on Table 3: C_uv = min(10, 64) = 10, F_uv = 64, φ = 1.
    # feasible: R·S·C_uv·F_uv·b_f = 46080 ≤ 131072, F_uv·b_p = 2048 ≤ 65536, R·S·C_uv·b_i = 720 ≤ 262144.
    # V_f·b_f = 9·64·64·8 = 294912 > 131072: the fSRAM does not hold R·S·C·F_uv → stall = +inf (footnote 1).
    # compute = R·⌈64/10⌉·G·E·1 = 21·16 = 336.
    # filter DRAM: n = ⌊131072/72⌋ = 1820 planes kept of C·F_uv = 4096, per group
    #   V_f + R·S·(4096 − 1820)·(E·G − 1) = 36864 + 9·2276·15 = 344124, times φ = 1.
    # ifmap DRAM: W = H = 6, W·H·C·b_i = 18432 ≤ iSRAM → 2304.
    # SRAM: filter 9·64·64·16 = 589824; ifmap 9·64·16·1 = 9216; psum 64·16 = 1024. ofmap 1024, write-back 64.
    c = layer_counts(ConvShape("b", 3, 3, 64, 4, 4, 64), table3())
    assert bool(c.feasible)
    assert np.isposinf(c.stall)
    assert np.isposinf(c.cycles)
    d = as_dict(c)
    del d["stall"]
    assert d == {"compute": 336, "writeback": 64, "sram_f": 589824, "sram_i": 9216, "sram_p": 1024,
                 "dram_f": 344124, "dram_i": 2304, "dram_o": 1024}


# 3×3, C=16, E=G=8, F=128, U=1 on J=32, K=64: C_uv = 10, F_uv = 64, φ = N_F = 2, T = 3·⌈16/10⌉ = 6, W = H = 10,
# V_f = 9·16·64 = 9216 elements = 73728 bits, window V_w = 144 elements = 1152 bits, compute = 6·64·2 = 768.
# Whole ifmap W·H·C·b_i = 12800 bits, so with iSRAM ≤ 4096 bits it never fits entirely.
# Stall pieces: L₁ = ⌈(73728 + 1152)/128⌉ = 585 → σ₁ = 579; L_x = ⌈1·3·16·8/128⌉ = 3 → slack 3 per pixel,
# σ_x = 579, s_x = 7·3 = 21. Band row W·R·C·b_i = 3840 bits.
MID = ConvShape("c", 3, 3, 16, 8, 8, 128)


@pytest.mark.parametrize(
    ("i_sram", "f_sram", "dram_i", "stall"),
    [
        # case I, iSRAM = 4096: Q = ⌊4096/384⌋ = 10 ≥ W → D_g = W·H·C = 1600;
        #   layer 1600 + (2−1)·(1600 − 3·16·10) = 2720.
        #   band row 3840 ≤ 4096 → L_y = 3 → σ_g = 579, s_g = 21 + 8·7·3 = 189; fSRAM 64 kB: π = 73728 → 576 cycles,
        #   saved = 189, stall = 579 + ⌈(579 − 189)·1⌉ = 969.
        (4096, 64 * KB, 2720, 969),
        # case II, iSRAM = 2048: Q = 5 < 10, P = ⌊2048/72⌋ = 28 ≥ 16 →
        #   D_g = 3·10·16 + (10·16 + (10−5)·(3−1)·16)·7 = 480 + 320·7 = 2720; layer 2720 + (2720 − 3·16·5) = 5200.
        #   band row 3840 > 2048 → L_y = ⌈1152/128⌉ = 9 → 3 stall per pixel: σ_g = 579 + 8·7·3 = 747, s_g = 21;
        #   saved = min(21, 576) = 21, stall = 747 + ⌈726·1⌉ = 1473.
        (2048, 64 * KB, 5200, 1473),
        # case III, iSRAM = 1024: P = 14 < 16, Q = 2 → D_row = 144 + 7·(3·1·16 + 3·(3−1)·(16−14)) = 144 + 7·60 = 564,
        #   D_g = 8·564 = 4512; layer 4512 + (4512 − 3·16·2) = 8928. Stall as in case II: 1473.
        (1024, 64 * KB, 8928, 1473),
        # fSRAM exactly V_f·b_f = 73728 bits: no prefetch room → stall = ⌈σ_g·φ⌉ = ⌈747·2⌉ = 1494 (case II ifmap).
        (2048, 73728, 5200, 1494),
    ],
)
def test_ifmap_cases_and_prefetch(i_sram: float, f_sram: float, dram_i: float, stall: float) -> None:
    c = layer_counts(MID, table3(i_sram=i_sram, f_sram=f_sram))
    assert bool(c.feasible)
    assert float(c.dram_i) == dram_i
    assert float(c.stall) == stall
    assert float(c.compute) == 768
    assert float(c.dram_f) == 3 * 3 * 16 * 128  # the group fits: every filter element once


def test_ifmap_per_group_cases() -> None:
    # D_g of the three cases above (before the filter-group reuse).
    got = ifmap_dram_per_group(MID, table3(i_sram=np.array([4096.0, 2048.0, 1024.0])))
    assert got.tolist() == [1600, 2720, 4512]


def test_zero_stall_when_compute_hides_every_load() -> None:
    # 1×1, C=64, E=G=2, F=1 on J=K=8: C_uv = 8, F_uv = 1, T = 1·8 = 8, compute = 8·4·1 = 32.
    # L₁ = ⌈(64·8 + 64·8)/128⌉ = 8 → σ₁ = 0; L_x = ⌈64·8/128⌉ = 4 ≤ 8 → σ_x = 0 → stall 0.
    c = layer_counts(ConvShape("d", 1, 1, 64, 2, 2, 1), table3(J=8, K=8))
    assert bool(c.feasible)
    assert float(c.stall) == 0.0
    assert float(c.compute) == 32


# ============================================================================ a plain scalar model from the docstring


def _dc(bits: float) -> float:
    return float(math.ceil(math.ceil(bits / 128) * 128 / 128))


def scalar_model(L: ConvShape, J: float, K: float, fs: float, is_: float, ps: float) -> dict[str, float] | None:
    """The module docstring's equations written out with if/else for one design point (b = 8/8/32/8)."""
    R, S, C, E, G, F, U, W, H = L.R, L.S, L.C, L.E, L.G, L.F, L.U, L.W, L.H
    bf = bi = bo = 8
    bp = 32
    C_uv = min(math.floor(J / S), C)
    F_uv = min(K, F)
    if C_uv < 1 or R * S * C_uv * F_uv * bf > fs or F_uv * bp > ps or R * S * C_uv * bi > is_:
        return None
    N_C, N_F, phi = math.ceil(C / C_uv), math.ceil(F / F_uv), F / F_uv
    T = R * N_C
    V_f = R * S * C * F_uv
    holds = V_f * bf <= fs
    out: dict[str, float] = {"compute": T * G * E * N_F, "writeback": _dc(E * G * F * bo), "dram_o": E * G * F,
                             "sram_f": R * S * C * F * E * G, "sram_i": R * S * C * E * G * N_F, "sram_p": F * E * G}
    if holds:
        out["dram_f"] = R * S * C * F
    else:
        n = math.floor(fs / (R * S * bf))
        out["dram_f"] = (V_f + R * S * (C * F_uv - n) * (E * G - 1)) * phi
    Q = math.floor(is_ / (R * C * bi))
    P = math.floor(is_ / (R * S * bi))
    if Q >= W:
        D_g = W * H * C
    elif P >= C:
        D_g = R * W * C + (U * W * C + (W - Q) * (R - U) * C) * (E - 1)
    else:
        D_g = E * (R * S * C + (G - 1) * (R * U * C + R * (S - U) * (C - P)))
    out["dram_i"] = W * H * C if W * H * C * bi <= is_ else D_g + (N_F - 1) * (D_g - R * C * Q)
    if not holds:
        out["stall"] = math.inf
        return out
    L1 = _dc(V_f * bf + R * S * C * bi)
    Lx = _dc(U * R * C * bi)
    sig_x = max(L1 - T, 0) + (G - 1) * max(Lx - T, 0)
    slack_x = max(T - L1, 0) + (G - 1) * max(T - Lx, 0)
    if sig_x == 0:
        out["stall"] = 0.0
        return out
    Ly = _dc(U * R * C * bi) if W * R * C * bi <= is_ else _dc(R * S * C * bi)
    sig_g = sig_x + G * (E - 1) * max(Ly - T, 0)
    slack_g = slack_x + G * (E - 1) * max(T - Ly, 0)
    if fs == V_f * bf or slack_g == 0:
        out["stall"] = math.ceil(sig_g * phi)
    else:
        saved = min(slack_g, _dc(min(V_f * bf, fs - V_f * bf)))
        out["stall"] = sig_g + math.ceil(max(sig_g - saved, 0) * (phi - 1))
    return out


LAYERS = [
    ConvShape("3x3_s2", 3, 3, 64, 28, 28, 128, U=2),
    ConvShape("1x1", 1, 1, 256, 14, 14, 64),
    ConvShape("7x7_s2", 7, 7, 3, 112, 112, 64, U=2),
    ConvShape("5x5", 5, 5, 32, 28, 28, 96),
    ConvShape("late_1x1", 1, 1, 832, 7, 7, 384),
    ConvShape("late_3x3", 3, 3, 160, 7, 7, 320),
    ConvShape("1x1_s2", 1, 1, 256, 28, 28, 512, U=2),
    ConvShape("11x11_s4", 11, 11, 3, 55, 55, 96, U=4),
    ConvShape("small", 3, 3, 16, 8, 8, 128),
    ConvShape("vgg_3x3", 3, 3, 512, 14, 14, 512),  # ifmap case III on a 4 kB iSRAM
]


def random_points(n: int = 200, seed: int = 4) -> HardwareArrays:
    rng = np.random.default_rng(seed)
    even = np.arange(8, 82, 2)
    sizes = 2.0 ** np.arange(2, 9) * KB  # 4 … 256 kB
    return HardwareArrays(J=rng.choice(even, n), K=rng.choice(even, n), f_sram=rng.choice(sizes, n),
                          i_sram=rng.choice(sizes, n), p_sram=rng.choice(sizes, n))


def point(hw: HardwareArrays, i: int) -> HardwareArrays:
    return HardwareArrays(J=hw.J[i], K=hw.K[i], f_sram=hw.f_sram[i], i_sram=hw.i_sram[i], p_sram=hw.p_sram[i])


@pytest.mark.parametrize("layer", LAYERS, ids=lambda L: L.name)
def test_vectorised_equals_scalar(layer: ConvShape) -> None:
    hw = random_points()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vec = layer_counts(layer, hw)
    assert vec.feasible.shape == (200,)
    for i in range(200):
        one = layer_counts(layer, point(hw, i))
        assert one.feasible.shape == ()
        assert bool(one.feasible) == bool(vec.feasible[i])
        ref = scalar_model(layer, *(float(getattr(hw, n)[i]) for n in ("J", "K", "f_sram", "i_sram", "p_sram")))
        assert (ref is not None) == bool(vec.feasible[i])
        if ref is None:
            continue
        for name in FIELDS:
            v, s = float(getattr(vec, name)[i]), float(getattr(one, name))
            assert v == s, (name, i)
            assert v == pytest.approx(ref[name], rel=1e-12), (name, i)


def test_broadcasting_grid() -> None:
    # J as a column, the SRAMs as a row: the result has the broadcast shape and matches the flat evaluation.
    J = np.array([[16.0], [32.0], [48.0]])
    sizes = 2.0 ** np.arange(2, 9) * KB
    c = layer_counts(LAYERS[0], HardwareArrays(J=J, K=32, f_sram=sizes, i_sram=sizes, p_sram=8 * KB))
    assert c.compute.shape == c.dram_o.shape == c.feasible.shape == (3, 7)
    flat = layer_counts(LAYERS[0], HardwareArrays(J=np.repeat(J[:, 0], 7), K=32, f_sram=np.tile(sizes, 3),
                                                  i_sram=np.tile(sizes, 3), p_sram=8 * KB))
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(c, name).ravel(), getattr(flat, name))


# ========================================================================================================== invariants


@pytest.mark.parametrize("layer", LAYERS, ids=lambda L: L.name)
def test_invariants(layer: ConvShape) -> None:
    hw = random_points(seed=11)
    c = layer_counts(layer, hw)
    ok = c.feasible
    g = pixel_geometry(layer, hw)
    C_uv, F_uv = np.floor(hw.J / layer.S), np.minimum(hw.K, layer.F)
    C_uv = np.minimum(C_uv, layer.C)
    pixels = layer.E * layer.G
    with np.errstate(divide="ignore"):
        expected_compute = layer.G * layer.R * layer.E * np.ceil(layer.C / C_uv) * np.ceil(layer.F / F_uv)
    np.testing.assert_array_equal(c.compute[ok], expected_compute[ok])
    np.testing.assert_array_equal(c.dram_o, pixels * layer.F)
    np.testing.assert_array_equal(c.writeback, np.ceil(pixels * layer.F * 8 / 128))
    # Table 2, Z_i: psum Eq. (6)/(C/C_uv) = F_uv·b_p/(R·C/C_uv) per cycle over (R·G)·E·(C/C_uv)·(F/F_uv) cycles of
    # the Eq. (9) multiplier → F·E·G elements (one write per output); filter Eq. (2)·G = S·C_uv·F_uv per cycle → the
    # MAC count R·S·C·F·E·G.
    np.testing.assert_array_equal(c.sram_p, pixels * layer.F)
    np.testing.assert_array_equal(c.sram_f, layer.macs)
    np.testing.assert_array_equal(c.sram_i, layer.R * layer.S * layer.C * pixels * np.ceil(layer.F / F_uv))
    holds = layer.R * layer.S * layer.C * F_uv * 8 <= hw.f_sram
    np.testing.assert_array_equal(g.holds_group, holds)
    np.testing.assert_array_equal(np.isinf(c.stall[ok]), ~holds[ok])
    np.testing.assert_array_equal(c.dram_f[ok & holds], layer.R * layer.S * layer.C * layer.F)
    # Without a whole filter group in the fSRAM the filters are reloaded: at least the layer's filters.
    assert np.all(c.dram_f[ok & ~holds] >= layer.R * layer.S * layer.C * layer.F)
    # Every ifmap element comes from DRAM at least once.
    assert np.all(c.dram_i[ok] >= layer.W * layer.H * layer.C)
    assert np.all(c.stall[ok] >= 0)


# ================================================================================================== feasibility, NaN


def test_infeasible_points_flagged() -> None:
    sizes = {"f_sram": 16 * KB, "i_sram": 32 * KB, "p_sram": 8 * KB}
    # J < S: C_uv = ⌊8/11⌋ = 0, the array cannot hold one filter row.
    alex1 = ConvShape("11x11_s4", 11, 11, 3, 55, 55, 96, U=4)
    c = layer_counts(alex1, HardwareArrays(J=np.array([8.0, 10.0, 12.0]), K=32, **sizes))
    assert c.feasible.tolist() == [False, False, True]
    # fSRAM: 3×3, J = K = 80 → C_uv = 26, F_uv = 80: R·S·C_uv·F_uv·b_f = 149760 bits > 16 kB, ≤ 32 kB.
    mid = ConvShape("3x3", 3, 3, 256, 14, 14, 256)
    c = layer_counts(mid, HardwareArrays(J=80, K=80, f_sram=np.array([16.0, 32.0]) * KB, i_sram=32 * KB,
                                         p_sram=8 * KB))
    assert c.feasible.tolist() == [False, True]
    # pSRAM: F_uv·b_p = 64·32 = 2048 bits.
    c = layer_counts(mid, table3(p_sram=np.array([1024.0, 2048.0])))
    assert c.feasible.tolist() == [False, True]
    # iSRAM: 7×7, J = 80 → C_uv = 11: R·S·C_uv·b_i = 4312 bits (F = 16: the filter row set needs only 68992 bits).
    c7 = ConvShape("7x7", 7, 7, 64, 14, 14, 16)
    c = layer_counts(c7, table3(J=80, i_sram=np.array([4096.0, 4312.0])))
    assert c.feasible.tolist() == [False, True]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda L: L.name)
def test_no_nan_and_no_warnings(layer: ConvShape) -> None:
    hw = random_points(n=2000, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = layer_counts(layer, hw)
    for name in FIELDS:
        values = getattr(c, name)
        assert not np.isnan(values).any(), name
        if name != "stall":
            assert np.isfinite(values[c.feasible]).all(), name
    masked = c.masked()
    assert np.isposinf(masked.compute[~c.feasible]).all()
