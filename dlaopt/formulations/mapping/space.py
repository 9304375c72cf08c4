"""The constrained map space of one layer: what the user's mapping constraints allow, resolved against the
architecture's slots (see :mod:`dlaopt.formulations.mapping.arch`).

A :class:`LayerSpace` is plain data. The constraint records of the instance (``kind`` factors, permutation,
spatial, bypass, utilization, padding, shape; :mod:`dlaopt.specs.mapping`) become, per layer that they select:

* :class:`FactorBound` — the product of a dimension's factors over some slots lies in ``[lo, hi]`` (one slot for a
  temporal level or one fanout axis; every axis of a fanout when no axis is named). ``dim`` is always one of the
  layer's dimensions (a bound on a dimension the layer lacks holds when ``lo`` is 1 and is dropped; otherwise the
  layer is infeasible, which :meth:`MappingProblem.infeasibility_reason` reports before any method runs); ``lo`` may
  exceed ``hi`` or the dimension's size (an infeasible, well-formed constraint: also reported there);
* :class:`SpatialAllow` — at one spatial slot, only ``dims`` may have a factor above 1, and the product of all
  factors there is at most ``max_used``;
* :class:`OrderChain` — at one level, the loops of factor above 1 among ``chain`` appear in this relative order,
  outermost first (a chain of every dimension fixes the order);
* ``min_utilization`` — the share of the MAC units the mapping keeps busy is at least this: ``U = S * real_macs /
  (macs * mac_units) >= min_utilization`` with ``S`` the product of all spatial factors (of every dimension, on every
  spatial slot), ``macs`` / ``real_macs`` the nest's padded / real MACs (so a padded layer counts its real work)
  and ``mac_units`` the field of that name: the MAC units of the instance's accelerator, the same for every arch
  choice (a PE-array shape with fewer PEs than the array leaves the others idle);
* bypass and shape change the architecture the layer is mapped on: ``archs`` lists the candidates (one per allowed
  PE-array shape, each with the bypassed operands removed from the levels' stores), and a mapping is made for one
  of them — the one its ``shape`` names. Every choice has the same slots (same levels, same axes, in the same order:
  a slot index means the same place in each); only the sizes of the PE array's two axes and the levels' stores
  differ. ``archs[0]`` is the instance's own architecture (with the bypasses) when no shape constraint applies.

A ``one_of`` record (a disjunction) makes ``alternatives``: one complete space per combination of its options
(pieces from an option keep the ``one_of``'s label as their source); a mapping must lie in one of them, and each
method solves them all and keeps the best.

Every piece keeps ``source``: the label of the constraint it came from, for violations and conflicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlaopt.formulations.mapping.arch import MappingArch


@dataclass(frozen=True)
class FactorBound:
    dim: str
    slots: tuple[int, ...]  # slot indices of MappingArch.slots() whose factors of ``dim`` multiply to the bounded value
    lo: int
    hi: int | None  # None: no upper bound
    source: str


@dataclass(frozen=True)
class SpatialAllow:
    slot: int
    dims: frozenset[str] | None  # None: any dimension
    max_used: int | None  # None: the axis size
    source: str


@dataclass(frozen=True)
class OrderChain:
    level: int
    chain: tuple[str, ...]  # outermost first
    source: str


@dataclass(frozen=True)
class ArchChoice:
    """One architecture a layer may be mapped on: ``shape`` is the PE-array shape (rows, columns), ``None`` for the
    instance's own; ``arch`` already has the bypassed operands removed."""

    shape: tuple[int, int] | None
    arch: MappingArch
    source: str = ""


@dataclass(frozen=True)
class LayerSpace:
    archs: tuple[ArchChoice, ...]
    factor_bounds: tuple[FactorBound, ...] = ()
    spatial: tuple[SpatialAllow, ...] = ()
    orders: tuple[OrderChain, ...] = ()
    min_utilization: float | None = None
    utilization_source: str = ""
    sources: tuple[str, ...] = field(default=())  # labels of every constraint that selects this layer
    mac_units: int = 0  # the instance accelerator's MAC units (utilization's denominator); 0: archs[0].arch.num_macs
    alternatives: tuple[LayerSpace, ...] = ()  # one_of: a mapping lies in one of these (each without alternatives);
    # the fields above then hold the layer's other constraints only (what every alternative shares)

    @property
    def macs_available(self) -> int:
        return self.mac_units or self.archs[0].arch.num_macs

    @property
    def constrained(self) -> bool:
        return bool(self.factor_bounds or self.spatial or self.orders or self.min_utilization
                    or len(self.archs) > 1 or any(c.shape is not None for c in self.archs) or bool(self.alternatives))

    @property
    def choices(self) -> tuple[LayerSpace, ...]:
        """The spaces a mapping may lie in: the alternatives of a ``one_of``, else this space itself."""
        return self.alternatives or (self,)


__all__ = ["ArchChoice", "FactorBound", "LayerSpace", "OrderChain", "SpatialAllow"]
