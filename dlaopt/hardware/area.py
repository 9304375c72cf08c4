"""Area and power of a spatial accelerator: PEs (MAC lanes and their L1 SRAM), the shared L2 buffer and the NoC.

The model is the additive one of MAESTRO's design-space-exploration cost database, which the seed's hardware
co-design chapters use for their budgets (DiGamma, Chapter 6: "area of PEs, L1 and L2 buffers"; ConfuciuX,
Chapter 8: MAESTRO's area and power of each (PE, buffer) design point):

* PE array: ``num_pes · macs_per_pe · mac`` plus ``num_pes · ceil(l1_bytes_per_pe / l1_block) · l1_block_figure``;
* L2 (global buffer): ``ceil(l2_bytes / l2_block) · l2_block_figure``;
* NoC (optional, off by default): one bus of ``bw`` bytes per cycle reaching every PE,
  ``bus_unit · (bus_c1 · N + bus_c0) · bw``, and a matrix arbiter
  ``arbiter_unit · max(1, arb_c2 · N² + arb_c1 · N + arb_c0)`` for ``N`` PEs (power: the same shapes with the
  power units, divided by 1000, as MAESTRO does).

All figures live in one table, :data:`TECHNOLOGIES` (µm² and mW); sources:

``maestro-dse`` (the default):
    MAC 283 µm², 1.2223 mW per MAC lane; SRAM 0.104 µm² and 0.00345 mW per byte, for L1 and L2 alike (1-byte
    granularity). These are the figures of the DSE cost database in MAESTRO's maintained release
    (maestro-project/maestro, ``cost-model/include/design-space-exploration/DSE_cost-database.hpp``), which
    attributes them to Dally, Turakhia and Han, "Domain-specific hardware accelerators", CACM 63(7), 2020, and to a
    BF16 MAC write-up. The database does not name a node; the seed's DiGamma flow is Nangate 15 nm (logic) with
    SAED32 SRAM scaled to 15 nm (§6.3.1, §3.3), and 283 µm² per PE reproduces the PE share of the seed's Fig. 6.8
    DiGamma design (396 PEs, 56 % of 1.99·10⁵ µm²) within 1 %, so the set is labelled 15 nm-class.
    NoC: bus 101.7938 µm² / 0.8 mW per unit, arbiter 395.473 µm² / 0.34 mW per unit, with MAESTRO's scaling
    coefficients (``DSE_scaling-coefficients.hpp``, marked "28nm"): bus ``14.662 N + 28.895``, arbiter
    ``1.2886 N² + 5.5814 N − 23.711``.

``maestro-2019``:
    MAESTRO's earlier database (same file, earlier release; its coefficients file says 28 nm): MAC 4470.9014 µm²,
    1.2223 mW; L1 SRAM in 64-byte blocks of 4505.1889 µm², 0.2208 mW; L2 SRAM in 32 KiB blocks of 4161.536 µm²,
    4 mW; the same NoC figures. Kept for comparison only: its L2 is about 550× denser per byte than its L1.

DiGamma's chip-area budgets for PEs plus on-chip buffers are here too, 0.2 mm² (edge) and 7.0 mm² (cloud)
(§6.3.1); ConfuciuX's platform constraints, fractions of the maximum consumption (Table 8.2), are with its design
levels in :mod:`dlaopt.formulations.codesign.levels`. Power is MAESTRO's design-point power: a sum of
per-component figures with every component active, independent of the layer's utilisation — the figure ConfuciuX's
power constraint budgets.

Deliberate departures from MAESTRO: a buffer of 0 bytes costs nothing (MAESTRO charges one block), and the NoC is
left out of the totals unless asked for, since the seed's DiGamma budget covers PEs and buffers only (§6.1.2,
footnote 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from dlaopt.hardware.model import Accelerator, Memory, MemoryKind

UM2_PER_MM2 = 1e6

# DiGamma's chip-area budgets for PEs plus L1 and L2 (seed §6.3.1), mm².
DIGAMMA_BUDGETS_MM2: Mapping[str, float] = MappingProxyType({"edge": 0.2, "cloud": 7.0})


@dataclass(frozen=True)
class Technology:
    """Per-component area (µm²) and power (mW) figures. SRAM figures are per block of ``*_block_bytes``."""

    name: str
    node: str
    mac_um2: float
    mac_mw: float
    l1_block_bytes: int
    l1_block_um2: float
    l1_block_mw: float
    l2_block_bytes: int
    l2_block_um2: float
    l2_block_mw: float
    bus_unit_um2: float
    bus_unit_mw: float
    bus_c1: float
    bus_c0: float
    arbiter_unit_um2: float
    arbiter_unit_mw: float
    arbiter_c2: float
    arbiter_c1: float
    arbiter_c0: float
    source: str = ""

    def __post_init__(self) -> None:
        for f in ("mac_um2", "mac_mw", "l1_block_um2", "l1_block_mw", "l2_block_um2", "l2_block_mw",
                  "bus_unit_um2", "bus_unit_mw", "arbiter_unit_um2", "arbiter_unit_mw"):
            v = getattr(self, f)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"technology '{self.name}': {f} must be finite and non-negative, got {v}")
        if self.l1_block_bytes <= 0 or self.l2_block_bytes <= 0:
            raise ValueError(f"technology '{self.name}': SRAM block sizes must be positive")

    def units(self, area: bool) -> tuple[float, float, float, float, float, float]:
        """(MAC, L1 block, L2 block, bus unit, arbiter unit, NoC scale) in µm² for ``area``, else in mW — MAESTRO
        scales its NoC power figures by 1/1000."""
        if area:
            return (self.mac_um2, self.l1_block_um2, self.l2_block_um2, self.bus_unit_um2, self.arbiter_unit_um2, 1.0)
        return (self.mac_mw, self.l1_block_mw, self.l2_block_mw, self.bus_unit_mw, self.arbiter_unit_mw, 1e-3)


# MAESTRO's NoC figures (bus and matrix arbiter units, scaling coefficients; DSE_cost-database.hpp and
# DSE_scaling-coefficients.hpp, "based on 28nm technology"): the same in both releases
_MAESTRO_NOC: dict[str, float] = {
    "bus_unit_um2": 101.7938, "bus_unit_mw": 0.8, "bus_c1": 14.662, "bus_c0": 28.895,
    "arbiter_unit_um2": 395.473, "arbiter_unit_mw": 0.34, "arbiter_c2": 1.2886, "arbiter_c1": 5.5814,
    "arbiter_c0": -23.711,
}

TECHNOLOGIES: Mapping[str, Technology] = MappingProxyType({
    "maestro-dse": Technology(
        name="maestro-dse", node="15 nm-class (seed's DiGamma flow; the source names no node)",
        mac_um2=283.0, mac_mw=1.2223,
        l1_block_bytes=1, l1_block_um2=0.104, l1_block_mw=0.00345,
        l2_block_bytes=1, l2_block_um2=0.104, l2_block_mw=0.00345,
        **_MAESTRO_NOC,
        source="MAESTRO DSE cost database (maintained release), after Dally, Turakhia and Han, CACM 2020"),
    "maestro-2019": Technology(
        name="maestro-2019", node="28 nm",
        mac_um2=4470.9014, mac_mw=1.2223,
        l1_block_bytes=64, l1_block_um2=4505.1889, l1_block_mw=0.2208,
        l2_block_bytes=32768, l2_block_um2=4161.536, l2_block_mw=4.0,
        **_MAESTRO_NOC,
        source="MAESTRO DSE cost database (2019 release)"),
})
DEFAULT_TECHNOLOGY = "maestro-dse"


def technology(tech: str | Technology = DEFAULT_TECHNOLOGY) -> Technology:
    """A technology by name (one of :data:`TECHNOLOGIES`), or ``tech`` itself."""
    if isinstance(tech, Technology):
        return tech
    try:
        return TECHNOLOGIES[tech]
    except KeyError:
        raise ValueError(f"unknown technology '{tech}'; known: {', '.join(sorted(TECHNOLOGIES))}") from None


@dataclass(frozen=True)
class Breakdown:
    """Per-component figures of one accelerator (``unit``: ``mm²`` or ``mW``). ``memories``: each on-chip memory's
    share (its L1 or L2 cost); ``noc`` is part of ``total`` only when it was asked for."""

    unit: str
    mac: float
    l1: float
    l2: float
    noc: float
    memories: tuple[tuple[str, float], ...]
    noc_included: bool

    @property
    def pe(self) -> float:
        """The PE array: MAC lanes plus their L1 SRAM."""
        return self.mac + self.l1

    @property
    def buffers(self) -> float:
        return self.l1 + self.l2

    @property
    def total(self) -> float:
        return self.mac + self.l1 + self.l2 + (self.noc if self.noc_included else 0.0)

    def as_dict(self) -> dict[str, float]:
        return {"mac": self.mac, "l1": self.l1, "l2": self.l2, "noc": self.noc, "total": self.total}


AreaReport = Breakdown
PowerReport = Breakdown


# --------------------------------------------------------------------------------------------------- design points

ArrayLike = float | int | np.ndarray


def _check(name: str, values: np.ndarray, *, minimum: float, integral: bool) -> None:
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be finite")
    if np.any(values < minimum):
        raise ValueError(f"{name} must be at least {minimum:g}, got {float(np.min(values)):g}")
    if integral and np.any(values != np.floor(values)):
        raise ValueError(f"{name} must be a whole number")


def _blocks(nbytes: np.ndarray, block: int) -> np.ndarray:
    return np.ceil(nbytes / block)


def _noc_units(tech: Technology, num_pes: np.ndarray, noc_bw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bus scaling × bandwidth, arbiter scaling) for ``num_pes`` ports."""
    bus = (tech.bus_c1 * num_pes + tech.bus_c0) * noc_bw
    arbiter = np.maximum(1.0, tech.arbiter_c2 * num_pes**2 + tech.arbiter_c1 * num_pes + tech.arbiter_c0)
    return bus, arbiter


def _design(num_pes: ArrayLike, l1_bytes_per_pe: ArrayLike, l2_bytes: ArrayLike, macs_per_pe: ArrayLike,
            noc_bw: ArrayLike | None, include_noc: bool) -> tuple[np.ndarray, ...]:
    n = np.asarray(num_pes, dtype=np.float64)
    l1 = np.asarray(l1_bytes_per_pe, dtype=np.float64)
    l2 = np.asarray(l2_bytes, dtype=np.float64)
    lanes = np.asarray(macs_per_pe, dtype=np.float64)
    _check("num_pes", n, minimum=1, integral=True)
    _check("macs_per_pe", lanes, minimum=1, integral=True)
    _check("l1_bytes_per_pe", l1, minimum=0, integral=False)
    _check("l2_bytes", l2, minimum=0, integral=False)
    if include_noc:
        if noc_bw is None:
            raise ValueError("include_noc needs noc_bw (NoC bandwidth, bytes per cycle)")
        bw = np.asarray(noc_bw, dtype=np.float64)
        _check("noc_bw", bw, minimum=0, integral=False)
        if np.any(bw <= 0):
            raise ValueError("noc_bw must be positive")
    else:
        bw = np.zeros(())
    try:
        return tuple(np.broadcast_arrays(n, l1, l2, lanes, bw))
    except ValueError:
        raise ValueError("design-point arrays must have broadcast-compatible shapes") from None


def _scalars(*values: object) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _scalar_design(tech: Technology, area: bool, num_pes: float, l1: float, l2: float, lanes: float) -> float:
    """The design-point figure for plain numbers, without numpy (a search may call it millions of times)."""
    for name, v, lo in (("num_pes", num_pes, 1), ("macs_per_pe", lanes, 1), ("l1_bytes_per_pe", l1, 0),
                        ("l2_bytes", l2, 0)):
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite")
        if v < lo:
            raise ValueError(f"{name} must be at least {lo:g}, got {v:g}")
    if num_pes != math.floor(num_pes):
        raise ValueError("num_pes must be a whole number")
    if lanes != math.floor(lanes):
        raise ValueError("macs_per_pe must be a whole number")
    mac, l1_block, l2_block, _, _, _ = tech.units(area)
    value = (num_pes * (lanes * mac + math.ceil(l1 / tech.l1_block_bytes) * l1_block)
             + math.ceil(l2 / tech.l2_block_bytes) * l2_block)
    return value / UM2_PER_MM2 if area else value


def _result(x: np.ndarray) -> float | np.ndarray:
    return float(x) if x.ndim == 0 else x


def _design_figure(area: bool, num_pes: ArrayLike, l1_bytes_per_pe: ArrayLike, l2_bytes: ArrayLike,
                   macs_per_pe: ArrayLike, tech: str | Technology, noc_bw: ArrayLike | None,
                   include_noc: bool) -> float | np.ndarray:
    t = technology(tech)
    if not include_noc and _scalars(num_pes, l1_bytes_per_pe, l2_bytes, macs_per_pe):
        return _scalar_design(t, area, num_pes, l1_bytes_per_pe, l2_bytes, macs_per_pe)  # type: ignore[arg-type]
    n, l1, l2, lanes, bw = _design(num_pes, l1_bytes_per_pe, l2_bytes, macs_per_pe, noc_bw, include_noc)
    mac, l1_block, l2_block, bus_unit, arbiter_unit, noc_scale = t.units(area)
    value = (n * (lanes * mac + _blocks(l1, t.l1_block_bytes) * l1_block)
             + _blocks(l2, t.l2_block_bytes) * l2_block)
    if include_noc:
        bus, arbiter = _noc_units(t, n, bw)
        value = value + (bus * bus_unit + arbiter * arbiter_unit) * noc_scale
    return _result(value / UM2_PER_MM2 if area else value)


def design_area_mm2(num_pes: ArrayLike, l1_bytes_per_pe: ArrayLike, l2_bytes: ArrayLike, *,
                    macs_per_pe: ArrayLike = 1, tech: str | Technology = DEFAULT_TECHNOLOGY,
                    noc_bw: ArrayLike | None = None, include_noc: bool = False) -> float | np.ndarray:
    """Area (mm²) of design points given as numbers or numpy arrays (broadcast together): ``num_pes`` PEs of
    ``macs_per_pe`` MAC lanes and ``l1_bytes_per_pe`` bytes of L1 each, and an L2 of ``l2_bytes``; plus the NoC of
    ``noc_bw`` bytes per cycle when ``include_noc``. A float for scalar inputs, else an array."""
    return _design_figure(True, num_pes, l1_bytes_per_pe, l2_bytes, macs_per_pe, tech, noc_bw, include_noc)


def design_power_mw(num_pes: ArrayLike, l1_bytes_per_pe: ArrayLike, l2_bytes: ArrayLike, *,
                    macs_per_pe: ArrayLike = 1, tech: str | Technology = DEFAULT_TECHNOLOGY,
                    noc_bw: ArrayLike | None = None, include_noc: bool = False) -> float | np.ndarray:
    """Design-point power (mW), every component active, for the same arguments as :func:`design_area_mm2`."""
    return _design_figure(False, num_pes, l1_bytes_per_pe, l2_bytes, macs_per_pe, tech, noc_bw, include_noc)


def max_pes_within(budget: float, l1_bytes_per_pe: float, l2_bytes: float = 0, *, macs_per_pe: int = 1,
                   tech: str | Technology = DEFAULT_TECHNOLOGY, metric: str = "area") -> int:
    """The most PEs (each with ``l1_bytes_per_pe`` of L1, beside an L2 of ``l2_bytes``) whose area (mm²) or power
    (mW) stays within ``budget``; 0 when not even one fits. NoC excluded, as in the seed's area budgets."""
    if metric not in ("area", "power"):
        raise ValueError(f"metric must be 'area' or 'power', got '{metric}'")
    if not (math.isfinite(budget) and budget > 0):
        raise ValueError(f"budget must be positive and finite, got {budget}")
    f = design_area_mm2 if metric == "area" else design_power_mw
    fixed = float(f(1, l1_bytes_per_pe, l2_bytes, macs_per_pe=macs_per_pe, tech=tech))
    per_pe = float(f(2, l1_bytes_per_pe, l2_bytes, macs_per_pe=macs_per_pe, tech=tech)) - fixed
    if fixed > budget:
        return 0
    n = 1 + math.floor((budget - fixed) / per_pe + 1e-12)
    while n > 1 and float(f(n, l1_bytes_per_pe, l2_bytes, macs_per_pe=macs_per_pe, tech=tech)) > budget:
        n -= 1  # guard against rounding in the closed form
    return n


# --------------------------------------------------------------------------------------------------- accelerators


def _is_per_pe(memory: Memory, num_pes: int) -> bool:
    """L1: a per-PE register file, or a memory replicated once per PE; everything else on chip is L2-class."""
    return memory.kind == MemoryKind.REGISTER or (memory.instances > 1 and memory.instances == num_pes)


def _noc_bandwidth(acc: Accelerator, noc_bw: float | None) -> float:
    if noc_bw is not None:
        return noc_bw
    shared = [m for m in acc.memories if m.kind != MemoryKind.DRAM and not _is_per_pe(m, acc.pe_array.num_pes)]
    finite = [m.bandwidth_bytes_per_cycle for m in shared if math.isfinite(m.bandwidth_bytes_per_cycle)]
    if not finite:
        raise ValueError(f"accelerator '{acc.name}': include_noc needs noc_bw (no shared on-chip memory states a "
                         "finite bandwidth)")
    return max(finite)


def _breakdown(acc: Accelerator, t: Technology, metric: str, noc_bw: float | None, include_noc: bool) -> Breakdown:
    area = metric == "area"
    n = acc.pe_array.num_pes
    lanes = acc.pe_array.macs_per_pe_per_cycle
    scale = 1 / UM2_PER_MM2 if area else 1.0
    mac_unit, l1_block, l2_block, bus_unit, arbiter_unit, noc_scale = t.units(area)
    mac = n * lanes * mac_unit * scale
    memories: list[tuple[str, float]] = []
    l1 = l2 = 0.0
    for m in acc.memories:
        if m.kind == MemoryKind.DRAM:
            continue
        assert m.capacity_bytes is not None
        if _is_per_pe(m, n):
            blocks = m.instances * math.ceil(m.capacity_bytes / t.l1_block_bytes)
            cost = blocks * l1_block * scale
            l1 += cost
        else:
            blocks = m.instances * math.ceil(m.capacity_bytes / t.l2_block_bytes)
            cost = blocks * l2_block * scale
            l2 += cost
        memories.append((m.name, cost))
    noc = 0.0
    if include_noc:
        bw = _noc_bandwidth(acc, noc_bw)
        if not (math.isfinite(bw) and bw > 0):
            raise ValueError(f"noc_bw must be positive and finite, got {bw}")
        bus, arbiter = _noc_units(t, np.asarray(float(n)), np.asarray(float(bw)))
        noc = float(bus * bus_unit + arbiter * arbiter_unit) * noc_scale * scale
    return Breakdown(unit="mm²" if area else "mW", mac=mac, l1=l1, l2=l2, noc=noc, memories=tuple(memories),
                     noc_included=include_noc)


def area_mm2(acc: Accelerator, tech: str | Technology = DEFAULT_TECHNOLOGY, *, noc_bw: float | None = None,
             include_noc: bool = False) -> AreaReport:
    """Area breakdown (mm²) of ``acc``: MAC lanes, L1 (per-PE register files and per-PE replicated memories), L2
    (every other on-chip memory, all instances), and the NoC (counted in the total only with ``include_noc``; its
    bandwidth is ``noc_bw`` or the widest shared on-chip memory's). DRAM is off chip and costs nothing here."""
    if not isinstance(acc, Accelerator):
        raise ValueError(f"area_mm2 needs an Accelerator, got {type(acc).__name__}")
    return _breakdown(acc, technology(tech), "area", noc_bw, include_noc)


def power_mw(acc: Accelerator, tech: str | Technology = DEFAULT_TECHNOLOGY, *, noc_bw: float | None = None,
             include_noc: bool = False) -> PowerReport:
    """Design-point power breakdown (mW) of ``acc``, every component active (the figure a power budget such as
    ConfuciuX's constrains); components as in :func:`area_mm2`."""
    if not isinstance(acc, Accelerator):
        raise ValueError(f"power_mw needs an Accelerator, got {type(acc).__name__}")
    return _breakdown(acc, technology(tech), "power", noc_bw, include_noc)
