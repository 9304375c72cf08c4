"""The user constraints of the systolic problem as typed records: which schedules a layer may run, and fixed or
bounded array dimensions (``J`` rows, ``K`` columns) and SRAM sizes (fSRAM, iSRAM, pSRAM, in kB).

Parsing checks what a record means against the instance — a layer name that is not a conv / FC layer, an operator
kind the problem never schedules, a selector that picks no layer, bounds with ``min > max``, an SRAM size (or a
range of sizes) without an energy figure — and raises a located :class:`~dlaopt.errors.InputError`. Whether the
records can hold together is not checked here: that is a solver status.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlaopt.specs import systolic as opts
from dlaopt.specs.constraints import Constraint, KeyPath, selected

SCHEDULED_KINDS: tuple[str, ...] = ("conv2d", "depthwise_conv2d", "matmul")
"""The operator kinds the problem schedules (everything else in the workload is not a layer here)."""

HARDWARE_KEYS: dict[str, tuple[str, str]] = {"rows": ("array", "J"), "cols": ("array", "K"),
                                             "fSRAM": ("sram", "f_kb"), "iSRAM": ("sram", "i_kb"),
                                             "pSRAM": ("sram", "p_kb")}
"""A hardware constraint's key → (its kind, the solution's hardware key it bounds)."""


@dataclass(frozen=True)
class ScheduleRule:
    """``schedules``: the layers it selects (by name) may run only ``allowed``."""

    label: str
    path: KeyPath
    layers: tuple[str, ...]
    allowed: tuple[str, ...]  # canonical names, in SCHEDULE_NAMES order


@dataclass(frozen=True)
class HardwareRule:
    """One bounded hardware value of an ``array`` or ``sram`` constraint: ``lo <= hardware[key] <= hi``
    (``lo == hi`` when fixed; ``hi`` is +inf when only a minimum is given)."""

    label: str
    path: KeyPath  # the constraint's (the harness names conflicts by it)
    name: str  # as written: rows, cols, fSRAM, iSRAM, pSRAM
    key: str  # the solution's hardware key: J, K, f_kb, i_kb, p_kb
    lo: float
    hi: float

    @property
    def fixed(self) -> bool:
        return self.lo == self.hi

    @property
    def unit(self) -> str:
        return " kB" if self.key.endswith("_kb") else ""

    def requirement(self) -> str:
        """What the value must be: ``8``, ``at least 16``, ``at most 32 kB``, ``between 8 and 32 kB``."""
        if self.fixed:
            return f"{self.lo:g}{self.unit}"
        if math.isinf(self.hi):
            return f"at least {self.lo:g}{self.unit}"
        if self.lo <= 1:
            return f"at most {self.hi:g}{self.unit}"
        return f"between {self.lo:g} and {self.hi:g}{self.unit}"

    def text(self) -> str:
        """The condition, for messages: ``rows = 8``, ``fSRAM between 8 and 32 kB``."""
        return f"{self.name} {'= ' if self.fixed else ''}{self.requirement()}"


@dataclass(frozen=True)
class SystolicConstraints:
    schedules: tuple[ScheduleRule, ...] = ()
    hardware: tuple[HardwareRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.schedules or self.hardware)

    def permitted(self, layers: Sequence[str], schedules: Sequence[str]) -> np.ndarray:
        """``[l, s]``: whether layer ``l`` may run schedule ``s`` under every schedule rule selecting it."""
        out = np.ones((len(layers), len(schedules)), dtype=bool)
        index = {name: i for i, name in enumerate(layers)}
        for rule in self.schedules:
            cols = np.array([s in rule.allowed for s in schedules], dtype=bool)
            for name in rule.layers:
                out[index[name]] &= cols
        return out

    def range(self, key: str) -> tuple[float, float]:
        """The intersection of every rule's bounds on hardware ``key`` (``lo > hi``: no value meets them all)."""
        lo, hi = 0.0, math.inf
        for rule in self.hardware:
            if rule.key == key:
                lo, hi = max(lo, rule.lo), min(hi, rule.hi)
        return lo, hi

    def rules_on(self, key: str) -> list[HardwareRule]:
        return [r for r in self.hardware if r.key == key]


def parse(constraints: Sequence[Constraint], layers: Sequence[str], op_kinds: Mapping[str, str],
          sram_sizes: Sequence[float]) -> SystolicConstraints:
    """The typed records of the instance's ``schedules``, ``array`` and ``sram`` constraints. ``layers``: the
    scheduled layers' names, ``op_kinds``: each one's operator kind, ``sram_sizes``: the SRAM sizes (kB) with an
    energy figure."""
    schedules: list[ScheduleRule] = []
    hardware: list[HardwareRule] = []
    canonical = {s.lower(): s for s in opts.SCHEDULE_NAMES}
    for c in constraints:
        if c.kind == "schedules":
            picked = _selection(c, layers, op_kinds)
            names: set[str] = set()
            for i, name in enumerate(c.params["allowed"]):
                s = canonical.get(str(name).lower())
                if s is None:
                    raise c.error(f"unknown schedule '{name}'", "allowed", i,
                                  expected="one of: " + ", ".join(opts.SCHEDULE_NAMES))
                names.add(s)
            schedules.append(ScheduleRule(c.label, c.path, picked, tuple(s for s in opts.SCHEDULE_NAMES if s in names)))
        elif c.kind in ("array", "sram"):
            keys = [name for name, (kind, _) in HARDWARE_KEYS.items() if kind == c.kind]
            if not any(name in c.params for name in keys):
                raise c.error(f"names none of {', '.join(keys)}",
                              expected=" and/or ".join(keys) + ", each a value or {min, max}")
            for name, (kind, key) in HARDWARE_KEYS.items():
                if kind != c.kind or name not in c.params:
                    continue
                lo, hi = _bounds(c, name)
                if kind == "sram":
                    sizes = [s for s in sram_sizes if lo <= s <= hi]
                    if not sizes:
                        raise c.error(f"{name}: no SRAM size with an energy figure is "
                                      + (f"{lo:g} kB" if lo == hi else f"within [{lo:g}, {hi:g}] kB"), name,
                                      expected="SRAM sizes among " + ", ".join(f"{s:g}" for s in sram_sizes) + " kB")
                hardware.append(HardwareRule(c.label, c.path, name, key, lo, hi))
        else:
            raise c.error(f"the systolic problem has no '{c.kind}' constraint", "kind",
                          expected="schedules, array or sram")
    return SystolicConstraints(tuple(schedules), tuple(hardware))


def _selection(c: Constraint, layers: Sequence[str], op_kinds: Mapping[str, str]) -> tuple[str, ...]:
    for i, name in enumerate(c.params.get("layers") or ()):
        if name not in op_kinds:
            raise c.error(f"no conv / FC layer named '{name}' in this instance", "layers", i,
                          expected="one of: " + ", ".join(layers))
    for i, kind in enumerate(c.params.get("op_kinds") or ()):
        if kind not in SCHEDULED_KINDS:
            raise c.error(f"operator kind '{kind}' is not scheduled on the systolic array", "op_kinds", i,
                          expected="one of: " + ", ".join(SCHEDULED_KINDS))
    picked = tuple(n for n in layers if selected(c, n, op_kinds[n]))
    if not picked:
        raise c.error("selects no layer of this instance (no listed layer has a listed operator kind)",
                      expected="layers / op_kinds that pick at least one conv / FC layer")
    return picked


def _bounds(c: Constraint, name: str) -> tuple[float, float]:
    value: Any = c.params[name]
    if isinstance(value, Mapping):
        lo, hi = float(value.get("min", 1)), float(value.get("max", math.inf))
        if lo > hi:
            raise c.error(f"{name}: min {lo:g} is above max {hi:g}", name, expected="min <= max")
        return lo, hi
    return float(value), float(value)


__all__ = ["HARDWARE_KEYS", "SCHEDULED_KINDS", "HardwareRule", "ScheduleRule", "SystolicConstraints",
           "parse"]
