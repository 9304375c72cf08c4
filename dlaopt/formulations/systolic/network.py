"""Energy and delay of every layer under every schedule on every design point, and the figures of merit.

For layer ``l`` (``n`` copies, batch ``B``), schedule ``s`` and design point ``h`` with :class:`Counts` ``c``:

    E = n·[ N·(e_mul + e_add) + N·(b_f + b_i + 2·b_p)·e_reg
            + c.sram_f·b_f·e_S(fSRAM) + c.sram_i·b_i·e_S(iSRAM) + c.sram_p·b_p·e_S(pSRAM)
            + (c.dram_f·b_f + c.dram_i·b_i + c.dram_o·b_o)·e_DRAM ] / B            (Eqs. 12–16)
    D = n·( c.compute + c.stall + c.writeback )                                         (§3.2)

with ``N`` the layer's MACs (per image). For an FC layer on a batch (``B > 1``) each cycle component is
``⌈·/B⌉`` and every access count is divided by ``B`` (figures per image). Energies are in joules, delays in cycles.

A layer's figure of merit is ``E^a·D^b`` — ``(a, b)`` = (1,0) energy, (0,1) delay, (1,1) E·D, (2,1) E²·D,
(1,2) E·D² — and the network's, as in the seed, is the **sum over layers** of the layer figures; layer-specific
optimal scheduling (LOS) picks each layer's best schedule. :func:`network_product_ed` gives the true network
``(ΣE)·(ΣD)``.

An FC layer (a 1×1 convolution whose output row is the batch, ``E = 1``) has only two distinct schedules: the
input channels inside the filters (``XYZiZo``; ``XZiYZo`` and ``ZiXYZo`` coincide with it, the X/Y order being moot
and the batch row playing X) or outside (``XYZoZi``; ``XZoYZi`` coincides) — :data:`FC_SCHEDULE` maps each name to
the one evaluated, as the published model does.

``reference_fc_compute`` reproduces one detail of the published model: the MAC and register energy of a batched FC
layer are those of the whole batch (not divided by ``B``), while its memory energy is per image.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from dlaopt.formulations.systolic.counts import ConvShape, Counts, HardwareArrays
from dlaopt.formulations.systolic.layers import SystolicLayer
from dlaopt.formulations.systolic.technology import KB_BITS, Technology

SCHEDULES: tuple[str, ...] = ("XYZiZo", "XZiYZo", "XYZoZi", "XZoYZi", "ZiXYZo")
_MODULES = {"XYZiZo": "branch_xyzizo", "XZiYZo": "branch_xziyzo", "XYZoZi": "branch_xyzozi",
            "XZoYZi": "branch_xzoyzi", "ZiXYZo": "branch_zixyzo"}
FIGURES: dict[str, tuple[int, int]] = {"energy": (1, 0), "delay": (0, 1), "ed": (1, 1), "e2d": (2, 1),
                                       "ed2": (1, 2)}

FC_SCHEDULE: dict[str, str] = {"XYZiZo": "XYZiZo", "XZiYZo": "XYZiZo", "ZiXYZo": "XYZiZo", "XYZoZi": "XYZoZi",
                               "XZoYZi": "XYZoZi"}


@cache
def schedule_function(name: str) -> Callable[[ConvShape, HardwareArrays], Counts]:
    """The cost function of a schedule (``layer_counts`` of its module)."""
    if name not in _MODULES:
        raise KeyError(name)
    module = importlib.import_module(f"dlaopt.formulations.systolic.{_MODULES[name]}")
    return module.layer_counts  # type: ignore[no-any-return]


def layer_schedule_counts(layer: SystolicLayer, schedule: str, hw: HardwareArrays) -> Counts:
    """A layer's counts per image (FC batch divided out), infeasible points at +inf."""
    if layer.fc:
        schedule = FC_SCHEDULE[schedule]
    c = schedule_function(schedule)(layer.shape, hw).masked()
    if layer.batch == 1:
        return c
    b = layer.batch
    return Counts(compute=np.ceil(c.compute / b), stall=np.ceil(c.stall / b), writeback=np.ceil(c.writeback / b),
                  sram_f=c.sram_f / b, sram_i=c.sram_i / b, sram_p=c.sram_p / b, dram_f=c.dram_f / b,
                  dram_i=c.dram_i / b, dram_o=c.dram_o / b, feasible=c.feasible)


@dataclass(frozen=True)
class EnergyDelay:
    energy: np.ndarray  # J
    delay: np.ndarray  # cycles


def layer_energy_delay(layer: SystolicLayer, schedule: str, hw: HardwareArrays, tech: Technology, *,
                       reference_fc_compute: bool = False) -> EnergyDelay:
    c = layer_schedule_counts(layer, schedule, hw)
    macs = layer.shape.macs if (reference_fc_compute or layer.batch == 1) else layer.shape.macs / layer.batch
    compute_pj = macs * (tech.mul8_pj * hw.b_f * hw.b_i / 64 + tech.add32_pj * hw.b_p / 32)
    compute_pj += macs * (hw.b_f + hw.b_i + 2 * hw.b_p) * tech.register_pj_per_bit
    sram_pj = (c.sram_f * hw.b_f * tech.sram_energy(hw.f_sram / KB_BITS)
               + c.sram_i * hw.b_i * tech.sram_energy(hw.i_sram / KB_BITS)
               + c.sram_p * hw.b_p * tech.sram_energy(hw.p_sram / KB_BITS))
    dram_pj = (c.dram_f * hw.b_f + c.dram_i * hw.b_i + c.dram_o * hw.b_o) * tech.dram_pj_per_bit
    energy = layer.count * (compute_pj + sram_pj + dram_pj) * 1e-12
    return EnergyDelay(energy=energy, delay=layer.count * c.cycles)


@dataclass(frozen=True)
class CostTable:
    """``energy[l, s, h]`` and ``delay[l, s, h]`` for layers × schedules × design points (+inf where a schedule
    cannot run)."""

    layers: tuple[SystolicLayer, ...]
    schedules: tuple[str, ...]
    energy: np.ndarray
    delay: np.ndarray

    def figure(self, fom: str) -> np.ndarray:
        """The per-layer figure of merit ``E^a·D^b`` (inf where either factor used is inf)."""
        a, b = FIGURES[fom]
        with np.errstate(invalid="ignore", over="ignore"):
            out = np.ones_like(self.energy)
            if a:
                out = out * self.energy ** a
            if b:
                out = out * self.delay ** b
        return np.where(np.isnan(out), np.inf, out)

    def los(self, fom: str) -> tuple[np.ndarray, np.ndarray]:
        """Layer-specific optimal scheduling: per design point, the network figure Σ_l min_s and the argmins."""
        f = self.figure(fom)
        best = np.argmin(f, axis=1)
        return np.take_along_axis(f, best[:, None, :], axis=1)[:, 0, :].sum(axis=0), best

    def fixed(self, fom: str) -> np.ndarray:
        """Per schedule and design point, the network figure when every layer uses that schedule: ``[s, h]``."""
        return self.figure(fom).sum(axis=0)


def cost_table(layers: Sequence[SystolicLayer], hw: HardwareArrays, tech: Technology | None = None, *,
               schedules: Sequence[str] = SCHEDULES, reference_fc_compute: bool = False) -> CostTable:
    """Evaluate every layer under every schedule on every design point of ``hw`` (identical layers once)."""
    tech = tech or Technology()
    n = int(np.broadcast(hw.J, hw.K, hw.f_sram, hw.i_sram, hw.p_sram).size)
    energy = np.empty((len(layers), len(schedules), n))
    delay = np.empty_like(energy)
    done: dict[SystolicLayer, int] = {}
    for li, layer in enumerate(layers):
        key = SystolicLayer(ConvShape("", *_shape_key(layer.shape)), layer.count, layer.batch, layer.fc)
        if key in done:
            energy[li], delay[li] = energy[done[key]], delay[done[key]]
            continue
        done[key] = li
        for si, s in enumerate(schedules):
            ed = layer_energy_delay(layer, s, hw, tech, reference_fc_compute=reference_fc_compute)
            energy[li, si], delay[li, si] = np.broadcast_to(ed.energy, (n,)), np.broadcast_to(ed.delay, (n,))
    return CostTable(tuple(layers), tuple(schedules), energy, delay)


def _shape_key(s: ConvShape) -> tuple[int, ...]:
    return (s.R, s.S, s.C, s.E, s.G, s.F, s.U)


def network_product_ed(table: CostTable, choice: np.ndarray) -> np.ndarray:
    """The true network ``(ΣE)·(ΣD)`` of a schedule choice ``choice[l, h]`` per design point."""
    e = np.take_along_axis(table.energy, choice[:, None, :], axis=1)[:, 0, :].sum(axis=0)
    d = np.take_along_axis(table.delay, choice[:, None, :], axis=1)[:, 0, :].sum(axis=0)
    return e * d
