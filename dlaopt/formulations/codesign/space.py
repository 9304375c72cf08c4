"""The hardware design space of co-design: a grid of design points over a template accelerator.

A **design point** is a PE array of ``rows × cols`` PEs (DiGamma's ``π_L2 × π_L1``, seed 001 §6.1.3; ConfuciuX's
1-D arrays have one row), an L1 buffer of ``l1_bytes`` in every PE and a shared L2 buffer of ``l2_bytes`` (§6.1.2:
the budgeted area is PEs + L1 + L2). The instance's hardware is the *template*: its main memory, its L1 (the one
memory replicated per PE, or a per-PE register file) and its L2 (the one shared on-chip memory, if any) supply the
energies, bandwidths, clock and word sizes; a design point only changes the array's shape and the two capacities
(:func:`accelerator_for`).

The grid is the product ``rows × cols × l1_bytes × l2_bytes`` (row-major, so point ``p`` has grid coordinates
``np.unravel_index(p, axes)``), less the points outside ``min_pes ≤ rows·cols ≤ max_pes``; an L2 size of 0 removes
the L2 (main memory feeds the L1s). Every search method and the exact method choose from the same grid, so "optimal"
means optimal over the declared grid.

Area and power of every point come from :mod:`dlaopt.hardware.area` (MAESTRO's cost figures), vectorised here;
the evaluator recomputes them through the accelerator (:func:`~dlaopt.hardware.area.area_mm2` of
:func:`accelerator_for`), a separate code path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from dlaopt.errors import InputError
from dlaopt.hardware.area import DEFAULT_TECHNOLOGY, design_area_mm2, design_power_mw
from dlaopt.hardware.model import Accelerator, Memory, MemoryKind

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class DesignPoint:
    """A PE array of ``rows × cols`` PEs with ``l1_bytes`` of L1 each and ``l2_bytes`` of shared L2."""

    rows: int
    cols: int
    l1_bytes: int
    l2_bytes: int

    @property
    def num_pes(self) -> int:
        return self.rows * self.cols

    @property
    def label(self) -> str:
        return f"{self.rows}x{self.cols} PEs, L1 {_size(self.l1_bytes)}, L2 {_size(self.l2_bytes)}"

    def to_dict(self) -> dict[str, int]:
        return {"rows": self.rows, "cols": self.cols, "l1_bytes": self.l1_bytes, "l2_bytes": self.l2_bytes}


def _size(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


@dataclass(frozen=True)
class Template:
    """Which memories of the template accelerator a design point resizes."""

    accelerator: Accelerator
    l1: str  # the per-PE memory
    l2: str | None  # the shared on-chip memory, if any

    @property
    def macs_per_pe(self) -> int:
        return self.accelerator.pe_array.macs_per_pe_per_cycle


def template_of(acc: Accelerator, path: KeyPath = ("hardware",)) -> Template:
    """Find the L1 (per PE) and L2 (shared) of ``acc``; a located error if it is not main memory + L2 + L1."""
    n = acc.pe_array.num_pes
    on_chip = [m for m in acc.memories if m.kind != MemoryKind.DRAM]
    per_pe = [m for m in on_chip if m.kind == MemoryKind.REGISTER or (m.instances > 1 and m.instances == n)]
    shared = [m for m in on_chip if m not in per_pe]
    expected = ("main memory, at most one shared on-chip buffer (L2) and one per-PE buffer (L1), e.g. the "
                "'gamma-edge' preset")
    if acc.pe_array.arrays != 1:
        raise InputError(f"co-design sizes one PE array; the template accelerator '{acc.name}' has "
                         f"{acc.pe_array.arrays} (a scale-out array)", path=path, expected="one PE array (arrays: 1)")
    if len(per_pe) != 1:
        raise InputError(f"co-design needs exactly one per-PE buffer in the template accelerator '{acc.name}', "
                         f"found {len(per_pe)}", path=path, expected=expected)
    if len(shared) > 1 or any(m.instances != 1 for m in shared):
        raise InputError(f"co-design needs at most one shared on-chip buffer in '{acc.name}', found "
                         f"{[m.name for m in shared]}", path=path, expected=expected)
    return Template(acc, per_pe[0].name, shared[0].name if shared else None)


def accelerator_for(template: Template, point: DesignPoint) -> Accelerator:
    """The template with the point's array shape and buffer sizes (an L2 of 0 bytes is removed)."""
    acc = template.accelerator
    axes = (("rows", point.rows), ("cols", point.cols)) if point.rows > 1 else (("cols", point.cols),)
    mems: list[Memory] = []
    for m in acc.memories:
        if m.name == template.l1:
            mems.append(replace(m, capacity_bytes=point.l1_bytes, instances=point.num_pes))
        elif m.name == template.l2:
            if point.l2_bytes > 0:
                mems.append(replace(m, capacity_bytes=point.l2_bytes))
        else:
            mems.append(m)
    name = f"{acc.name}-{point.rows}x{point.cols}-l1-{point.l1_bytes}-l2-{point.l2_bytes}"
    return replace(acc, name=name, pe_array=replace(acc.pe_array, axes=axes), memories=tuple(mems))


@dataclass(frozen=True)
class DesignSpace:
    """The grid of design points (see the module docstring)."""

    rows: tuple[int, ...]
    cols: tuple[int, ...]
    l1_bytes: tuple[int, ...]
    l2_bytes: tuple[int, ...]
    min_pes: int = 1
    max_pes: int | None = None

    @property
    def axes(self) -> tuple[int, int, int, int]:
        return (len(self.rows), len(self.cols), len(self.l1_bytes), len(self.l2_bytes))

    @cached_property
    def grid(self) -> list[tuple[int, int, int, int]]:
        """Grid coordinates of the points kept, in row-major order."""
        out = []
        for i, r in enumerate(self.rows):
            for j, c in enumerate(self.cols):
                n = r * c
                if n < self.min_pes or (self.max_pes is not None and n > self.max_pes):
                    continue
                for a in range(len(self.l1_bytes)):
                    for b in range(len(self.l2_bytes)):
                        out.append((i, j, a, b))
        return out

    @cached_property
    def points(self) -> list[DesignPoint]:
        return [DesignPoint(self.rows[i], self.cols[j], self.l1_bytes[a], self.l2_bytes[b])
                for i, j, a, b in self.grid]

    def __len__(self) -> int:
        return len(self.grid)

    def index(self, point: DesignPoint) -> int | None:
        """The index of ``point`` in :attr:`points`, or ``None`` if it is not on the grid."""
        return self._index.get(point)

    @cached_property
    def _index(self) -> dict[DesignPoint, int]:
        return {p: k for k, p in enumerate(self.points)}

    @cached_property
    def arrays(self) -> dict[str, np.ndarray]:
        """Per point: ``rows``, ``cols``, ``pes``, ``l1``, ``l2`` as integer arrays."""
        pts = self.points
        rows = np.array([p.rows for p in pts], dtype=np.int64)
        cols = np.array([p.cols for p in pts], dtype=np.int64)
        return {"rows": rows, "cols": cols, "pes": rows * cols,
                "l1": np.array([p.l1_bytes for p in pts], dtype=np.int64),
                "l2": np.array([p.l2_bytes for p in pts], dtype=np.int64)}

    def area_mm2(self, template: Template, tech: str = DEFAULT_TECHNOLOGY) -> np.ndarray:
        a = self.arrays
        return np.asarray(design_area_mm2(a["pes"], a["l1"], a["l2"], macs_per_pe=template.macs_per_pe, tech=tech),
                          dtype=np.float64).reshape(len(self))

    def power_mw(self, template: Template, tech: str = DEFAULT_TECHNOLOGY) -> np.ndarray:
        a = self.arrays
        return np.asarray(design_power_mw(a["pes"], a["l1"], a["l2"], macs_per_pe=template.macs_per_pe, tech=tech),
                          dtype=np.float64).reshape(len(self))

    def same_structure(self, p: int) -> np.ndarray:
        """Mask of points whose accelerator has the levels and array axes of ``p``'s: as many array axes (a one-row
        array is one-dimensional) and an L2 exactly when ``p`` has one (an L2 of 0 bytes removes the level, which
        changes the mappings and their costs, so such points are not comparable by capacity)."""
        a = self.arrays
        pt = self.points[p]
        return ((a["rows"] == 1) == (pt.rows == 1)) & ((a["l2"] == 0) == (pt.l2_bytes == 0))

    def dominated_by_caps(self, p: int) -> np.ndarray:
        """Mask of points of ``p``'s structure (:meth:`same_structure`) no larger than ``p`` in every coordinate
        (rows, cols, L1, L2): every mapping valid on such a point is valid on ``p``, at the same cost."""
        a = self.arrays
        pt = self.points[p]
        return (self.same_structure(p) & (a["rows"] <= pt.rows) & (a["cols"] <= pt.cols)
                & (a["l1"] <= pt.l1_bytes) & (a["l2"] <= pt.l2_bytes))


def _levels(value: object, path: KeyPath, *, minimum: int) -> tuple[int, ...]:
    """A list of integers, or ``{min, max, step}`` (arithmetic) or ``{min, max, ratio}`` (geometric)."""
    if isinstance(value, list):
        vals = value
    elif isinstance(value, dict):
        lo, hi = value.get("min"), value.get("max")
        if not isinstance(lo, int) or not isinstance(hi, int) or lo > hi:
            raise InputError("a range needs integers min <= max", path=path, expected="{min, max, step} or "
                             "{min, max, ratio}")
        if "ratio" in value:
            ratio = value["ratio"]
            if not isinstance(ratio, int | float) or ratio <= 1:
                raise InputError(f"ratio must be a number above 1, got {ratio!r}", path=(*path, "ratio"))
            vals, v = [], float(max(lo, 1))
            while v <= hi * (1 + 1e-12) and len(vals) <= 4096:
                vals.append(round(v))
                v *= ratio
            if lo == 0:
                vals.insert(0, 0)
        else:
            step = value.get("step", 1)
            if not isinstance(step, int) or step < 1:
                raise InputError(f"step must be a positive integer, got {step!r}", path=(*path, "step"))
            if (hi - lo) // step > 4096:
                raise InputError("the range has more than 4097 values", path=path, expected="a coarser step")
            vals = list(range(lo, hi + 1, step))
    else:
        raise InputError(f"expected a list of integers or a range, got {type(value).__name__}", path=path)
    out: list[int] = []
    for k, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum or v > 1 << 40:
            raise InputError(f"expected an integer in [{minimum}, 2^40], got {v!r}", path=(*path, k))
        if v not in out:
            out.append(v)
    if not out:
        raise InputError("the list of levels is empty", path=path)
    return tuple(sorted(out))


def design_space_from_options(doc: dict, template: Template, path: KeyPath) -> DesignSpace:
    """Parse ``options.design_space``; missing axes default to the template's own value."""
    acc = template.accelerator
    axes = dict(acc.pe_array.axes)
    l1 = next(m for m in acc.memories if m.name == template.l1)
    l2 = next((m for m in acc.memories if m.name == template.l2), None)
    shape = [v for _, v in acc.pe_array.axes]
    default_rows = shape[0] if len(shape) == 2 else 1
    default_cols = shape[-1] if shape else axes.get("cols", 1)

    def get(key: str, default: Sequence[int], minimum: int) -> tuple[int, ...]:
        return _levels(doc[key], (*path, key), minimum=minimum) if key in doc else tuple(default)

    space = DesignSpace(
        rows=get("rows", [default_rows], 1),
        cols=get("cols", [default_cols], 1),
        l1_bytes=get("l1_bytes", [l1.capacity_bytes or 1], 1),
        l2_bytes=get("l2_bytes", [l2.capacity_bytes or 0] if l2 is not None else [0], 0),
        min_pes=int(doc.get("min_pes", 1)),
        max_pes=doc.get("max_pes"),
    )
    if template.l2 is None and space.l2_bytes != (0,):
        raise InputError("the template accelerator has no shared buffer to size", path=(*path, "l2_bytes"),
                         expected="no l2_bytes, or a template with one shared on-chip buffer")
    if not len(space):
        raise InputError("no design point has a PE count within min_pes and max_pes", path=path)
    if len(space) > 2_000_000:
        raise InputError(f"the design space has {len(space):,} points", path=path, expected="at most 2,000,000")
    return space


def grid_coordinates(space: DesignSpace) -> np.ndarray:
    """``[P, 4]`` grid coordinates of the points (for searches that move along the axes)."""
    return np.array(space.grid, dtype=np.int64).reshape(len(space), 4)


__all__ = ["DesignPoint", "DesignSpace", "Template", "accelerator_for", "design_space_from_options",
           "grid_coordinates", "template_of"]
