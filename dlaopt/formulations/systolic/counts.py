"""The shared vocabulary of the DeepOpt systolic-array cost model (seed ``003_4d574fb517e52781.txt``).

A layer is a convolution :class:`ConvShape` (FC layers as 1×1 convolutions); a hardware point is a
:class:`HardwareArrays` whose fields are numpy arrays (one entry per design point, or scalars — everything
broadcasts); a schedule ("branch") turns the two into :class:`Counts`: cycles and element accesses per memory, each an
array over the design points. Every branch is written with numpy element-wise operations only, so one call evaluates a
layer on the whole design grid (the vectorised sweep) and the same call on a 0-d hardware point is the scalar model
that the evaluator uses.

Notation (the paper's): ``R×S`` filter rows×columns, ``H×W`` input rows×columns (the rows the outputs need,
``(E−1)·U + R``), ``C`` input channels, ``E×G`` output rows×columns, ``F`` filters, ``U`` stride; ``J×K`` PE rows ×
columns; ``C_uv = min(⌊J/S⌋, C)`` channels and ``F_uv = min(K, F)`` filters per cycle (Eq. 1); bit widths
``b_f, b_i, b_p, b_o``; SRAM capacities in bits; DRAM bandwidth and transfer block in bits per cycle / bits.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

Array = np.ndarray


@dataclass(frozen=True)
class ConvShape:
    """One convolution as DeepOpt sees it (square or not). ``W`` and ``H`` are the input extent that the outputs
    need: ``W = (G−1)·U + S``, ``H = (E−1)·U + R``."""

    name: str
    R: int
    S: int
    C: int
    E: int
    G: int
    F: int
    U: int = 1

    @property
    def H(self) -> int:
        return (self.E - 1) * self.U + self.R

    @property
    def W(self) -> int:
        return (self.G - 1) * self.U + self.S

    @property
    def macs(self) -> int:
        return self.R * self.S * self.C * self.E * self.G * self.F


@dataclass(frozen=True)
class Block:
    """A sub-volume of a layer that a schedule computes in one piece: the layer's ``R, S, C, F, U`` with output rows
    ``E`` and columns ``G`` that may differ per design point (arrays), e.g. the leftover columns when the psum SRAM
    holds only ``G_eff`` of them. ``W = (G−1)·U + S`` and ``H = (E−1)·U + R`` are the input extent it reads."""

    R: int
    S: int
    C: int
    F: int
    U: int
    E: Array
    G: Array

    @staticmethod
    def of(layer: ConvShape) -> Block:
        return Block(layer.R, layer.S, layer.C, layer.F, layer.U, np.asarray(float(layer.E)),
                     np.asarray(float(layer.G)))

    def with_size(self, E: Any = None, G: Any = None) -> Block:
        return replace(self, E=self.E if E is None else np.asarray(E, dtype=np.float64),
                       G=self.G if G is None else np.asarray(G, dtype=np.float64))

    @property
    def W(self) -> Array:
        return (self.G - 1) * self.U + self.S

    @property
    def H(self) -> Array:
        return (self.E - 1) * self.U + self.R


@dataclass(frozen=True)
class HardwareArrays:
    """Design points as broadcastable arrays. SRAM sizes are in **bits**; ``J``, ``K`` are PE rows and columns."""

    J: Array
    K: Array
    f_sram: Array  # filter SRAM, bits
    i_sram: Array  # ifmap SRAM, bits
    p_sram: Array  # psum SRAM, bits
    b_f: int = 8
    b_i: int = 8
    b_p: int = 32
    b_o: int = 8
    dram_bw: int = 128  # bits per cycle
    dram_block: int = 128  # bits per DRAM transfer

    def __post_init__(self) -> None:
        for name in ("J", "K", "f_sram", "i_sram", "p_sram"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.float64))

    @property
    def size(self) -> int:
        return int(np.broadcast(self.J, self.K, self.f_sram, self.i_sram, self.p_sram).size)


@dataclass(frozen=True)
class Counts:
    """What one schedule costs on one layer, per design point. Accesses count **elements** (not bits); cycles are the
    ideal compute cycles, the DRAM stall cycles and the ofmap write-back cycles. ``feasible`` is False where the
    schedule cannot run at all (a minimum SRAM size is not met); the other fields are then meaningless (use
    :meth:`masked`)."""

    compute: Array
    stall: Array
    writeback: Array
    sram_f: Array
    sram_i: Array
    sram_p: Array
    dram_f: Array
    dram_i: Array
    dram_o: Array
    feasible: Array

    @staticmethod
    def zeros(shape: tuple[int, ...] = ()) -> Counts:
        z = np.zeros(shape)
        return Counts(z, z, z, z, z, z, z, z, z, np.ones(shape, dtype=bool))

    def _numeric(self) -> dict[str, Array]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "feasible"}

    def scaled(self, k: Any) -> Counts:
        """Every count multiplied by ``k`` (an array or a number); feasibility unchanged."""
        return replace(self, **{n: v * k for n, v in self._numeric().items()})

    def plus(self, other: Counts) -> Counts:
        """Element-wise sum; feasible where both are."""
        return Counts(**{n: v + getattr(other, n) for n, v in self._numeric().items()},
                      feasible=np.logical_and(self.feasible, other.feasible))

    def where(self, mask: Any, other: Counts) -> Counts:
        """``self`` where ``mask`` is true, else ``other`` (every field, feasibility included)."""
        return Counts(**{n: np.where(mask, v, getattr(other, n)) for n, v in self._numeric().items()},
                      feasible=np.where(mask, self.feasible, other.feasible))

    def masked(self) -> Counts:
        """Infeasible entries set to +inf (so that no minimum picks them)."""
        return replace(self, **{n: np.where(self.feasible, v, np.inf) for n, v in self._numeric().items()})

    @property
    def cycles(self) -> Array:
        """Delay in cycles: compute + DRAM stall + ofmap write-back (not overlapped)."""
        return self.compute + self.stall + self.writeback


# ------------------------------------------------------------------------------------------------ small shared helpers


def dram_cycles(bits: Any, hw: HardwareArrays) -> Array:
    """Cycles to move ``bits`` over the DRAM interface: rounded up to whole transfer blocks, then to whole cycles."""
    blocks = np.ceil(np.asarray(bits, dtype=np.float64) / hw.dram_block)
    return np.ceil(blocks * hw.dram_block / hw.dram_bw)


def safe_div(num: Any, den: Any) -> Array:
    """``num / den`` with 0 where ``den`` is 0 (used for block counts of empty leftover blocks)."""
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def unit_volume(layer: ConvShape | Block, hw: HardwareArrays) -> tuple[Array, Array]:
    """Eq. 1: channels ``C_uv = min(⌊J/S⌋, C)`` and filters ``F_uv = min(K, F)`` processed per cycle."""
    return np.minimum(np.floor(hw.J / layer.S), layer.C), np.minimum(hw.K, layer.F)
