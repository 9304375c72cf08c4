"""Energy, area and the hardware design space of the DeepOpt study (seed 003 §3.1 and §4.2).

Energies are 65 nm figures scaled from Horowitz's 45 nm ones (seed 003 ref. [18]) by
``s = (65/45)·(1/0.9)² ≈ 1.78327``:

* a MAC is one 8-bit multiply ``0.2·s`` pJ (scaling with ``(b_f·b_i)/64``) plus one 32-bit add ``0.1·s`` pJ;
* a register access ``0.86·s/16 ≈ 0.09585`` pJ/bit (a 16-bit MAC's energy per bit, after Eyeriss), four per MAC
  (filter, ifmap and psum read, psum write — Eq. 14);
* DRAM ``200×`` that, ``≈ 19.170`` pJ/bit (Eyeriss' relative cost);
* SRAM pJ/bit by capacity (CACTI projected to 65 nm), 4 kB … 512 kB.

Area: SRAM ``32.54567`` µm² per byte (a 65 nm memory compiler); a PE ``7,405.9`` µm² (its logic is 10 % of a
PE-with-2-kB-SRAM layout). The design space (§4.2): ``J`` and ``K`` from 8 in steps of 2 with
``min(J, K) ≥ ½·max(J, K)``; SRAM sizes powers of two from 4 kB; chip area ≤ the budget (16 mm²); and the SRAMs at
least as large as what the array's registers hold: ``fSRAM ≥ J·K·b_f``, ``iSRAM ≥ J·b_i``, ``pSRAM ≥ K·b_p``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dlaopt.errors import InputError
from dlaopt.formulations.systolic.counts import HardwareArrays

SCALE_45_TO_65 = (65 / 45) * (1 / 0.9) ** 2
KB_BITS = 1024 * 8

# CACTI-derived SRAM access energy at 65 nm, pJ per bit, by capacity in kB (the figures).
SRAM_PJ_PER_BIT: dict[int, float] = {4: 0.11452, 8: 0.16874, 16: 0.20668, 32: 0.28141, 64: 0.46034, 128: 0.68892,
                                     256: 1.21396, 512: 1.64220}


@dataclass(frozen=True)
class Technology:
    """Per-operation energies (pJ) and areas (µm²)."""

    mul8_pj: float = 0.2 * SCALE_45_TO_65
    add32_pj: float = 0.1 * SCALE_45_TO_65
    register_pj_per_bit: float = 0.86 * SCALE_45_TO_65 / 16
    dram_pj_per_bit: float = 200 * 0.86 * SCALE_45_TO_65 / 16
    sram_pj_per_bit: dict[int, float] = field(default_factory=lambda: dict(SRAM_PJ_PER_BIT))
    sram_um2_per_byte: float = 32.545670202636720
    pe_um2: float = 0.1 * (32.545670202636720 * 2 * 1024 / 0.9)

    def sram_energy(self, kb: np.ndarray | float) -> np.ndarray:
        """pJ/bit of SRAMs of ``kb`` kB (must be sizes in the table)."""
        kb_arr = np.asarray(kb, dtype=np.float64)
        sizes = np.array(sorted(self.sram_pj_per_bit), dtype=np.float64)
        idx = np.searchsorted(sizes, kb_arr)
        bad = (idx >= len(sizes)) | (sizes[np.minimum(idx, len(sizes) - 1)] != kb_arr)
        if np.any(bad):
            wrong = sorted(set(np.atleast_1d(kb_arr)[np.atleast_1d(bad)].tolist()))
            raise InputError(f"no SRAM energy for {wrong} kB", path=("hardware",),
                             expected="SRAM sizes among " + ", ".join(f"{s:g}" for s in sizes) + " kB")
        return np.array([self.sram_pj_per_bit[int(s)] for s in sizes])[idx]

    def area_um2(self, J: np.ndarray, K: np.ndarray, f_kb: np.ndarray, i_kb: np.ndarray,
                 p_kb: np.ndarray) -> np.ndarray:
        return J * K * self.pe_um2 + (f_kb + i_kb + p_kb) * 1024 * self.sram_um2_per_byte


@dataclass(frozen=True)
class DesignPoints:
    """Hardware points as parallel arrays (SRAM sizes in kB) with their area in mm²."""

    J: np.ndarray
    K: np.ndarray
    f_kb: np.ndarray
    i_kb: np.ndarray
    p_kb: np.ndarray
    area_mm2: np.ndarray

    def __len__(self) -> int:
        return int(self.J.size)

    def hardware(self, *, b_f: int = 8, b_i: int = 8, b_p: int = 32, b_o: int = 8, dram_bw: int = 128,
                 dram_block: int = 128) -> HardwareArrays:
        return HardwareArrays(self.J, self.K, self.f_kb * KB_BITS, self.i_kb * KB_BITS, self.p_kb * KB_BITS,
                              b_f=b_f, b_i=b_i, b_p=b_p, b_o=b_o, dram_bw=dram_bw, dram_block=dram_block)

    def point(self, index: int) -> dict[str, float]:
        return {"J": int(self.J[index]), "K": int(self.K[index]), "f_kb": int(self.f_kb[index]),
                "i_kb": int(self.i_kb[index]), "p_kb": int(self.p_kb[index]),
                "area_mm2": float(self.area_mm2[index])}

    def subset(self, index: np.ndarray) -> DesignPoints:
        return DesignPoints(self.J[index], self.K[index], self.f_kb[index], self.i_kb[index], self.p_kb[index],
                            self.area_mm2[index])

    @staticmethod
    def single(J: int, K: int, f_kb: float, i_kb: float, p_kb: float, tech: Technology | None = None) -> DesignPoints:
        tech = tech or Technology()
        a = np.array
        return DesignPoints(a([J], float), a([K], float), a([f_kb], float), a([i_kb], float), a([p_kb], float),
                            tech.area_um2(a([J]), a([K]), a([f_kb]), a([i_kb]), a([p_kb])) / 1e6)


MAX_ARRAY_SIZES = 2048  # J (and K) values of the design-space grid (the default 16 mm² budget has 128)


@dataclass(frozen=True)
class DesignSpace:
    """The §4.2 grid. ``min_sram_kb`` is the smallest SRAM; the largest is the biggest power of two that fits the
    budget next to two minimum SRAMs and an ``min_pe × min_pe`` array (and has an energy figure)."""

    area_budget_mm2: float = 16.0
    min_pe: int = 8
    pe_step: int = 2
    min_sram_kb: int = 4
    aspect_min: float = 0.5  # min(J, K) >= aspect_min * max(J, K)
    b_f: int = 8
    b_i: int = 8
    b_p: int = 32
    # Ranges (inclusive) the points must lie in — a user's fixed or bounded array dimensions and SRAM sizes (kB);
    # the grid is enumerated only within them.
    rows: tuple[float, float] = (0.0, math.inf)
    cols: tuple[float, float] = (0.0, math.inf)
    f_kb: tuple[float, float] = (0.0, math.inf)
    i_kb: tuple[float, float] = (0.0, math.inf)
    p_kb: tuple[float, float] = (0.0, math.inf)

    def points(self, tech: Technology | None = None) -> DesignPoints:
        tech = tech or Technology()
        budget = self.area_budget_mm2 * 1e6
        min_sram_area = self.min_sram_kb * 1024 * tech.sram_um2_per_byte
        if budget < 3 * min_sram_area + self.min_pe ** 2 * tech.pe_um2:
            raise InputError(f"the area budget of {self.area_budget_mm2} mm² cannot hold the smallest design",
                             path=("options", "design_space"))
        max_sram_kb = (budget - 2 * min_sram_area - self.min_pe ** 2 * tech.pe_um2) / tech.sram_um2_per_byte / 1024
        sizes = [2 ** p for p in range(math.ceil(math.log2(self.min_sram_kb)), math.floor(math.log2(max_sram_kb)) + 1)
                 if 2 ** p in tech.sram_pj_per_bit]
        max_pe = math.floor((budget - 3 * min_sram_area) / tech.pe_um2)
        steps = (max_pe // self.min_pe + 1 - self.min_pe) // self.pe_step + 1
        if steps > MAX_ARRAY_SIZES:  # the J x K grid below is steps² values: bounded memory
            raise InputError(f"the design space has {steps} array sizes per axis (area budget {self.area_budget_mm2} "
                             f"mm², J and K from {self.min_pe} in steps of {self.pe_step}), more than the limit of "
                             f"{MAX_ARRAY_SIZES}", path=("options", "design_space"),
                             expected="a smaller area_budget_mm2, or a larger min_pe or pe_step")
        dims = np.arange(self.min_pe, max_pe // self.min_pe + 1, self.pe_step, dtype=np.float64)
        J, K = np.meshgrid(_within(dims, self.rows), _within(dims, self.cols), indexing="ij")
        keep = np.minimum(J, K) >= self.aspect_min * np.maximum(J, K)
        keep &= J * K * tech.pe_um2 + 3 * min_sram_area <= budget
        J, K = J[keep], K[keep]
        s = np.array(sizes, dtype=np.float64)
        jj, ff, ii, pp = (a.ravel() for a in np.meshgrid(np.arange(J.size), _within(s, self.f_kb),
                                                         _within(s, self.i_kb), _within(s, self.p_kb), indexing="ij"))
        Jv, Kv = J[jj], K[jj]
        area = tech.area_um2(Jv, Kv, ff, ii, pp)
        ok = (area <= budget) & (ff * KB_BITS >= Jv * Kv * self.b_f) & (ii * KB_BITS >= Jv * self.b_i)
        ok &= pp * KB_BITS >= Kv * self.b_p
        return DesignPoints(Jv[ok], Kv[ok], ff[ok], ii[ok], pp[ok], area[ok] / 1e6)


def _within(values: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    return values[(values >= bounds[0]) & (values <= bounds[1])]
