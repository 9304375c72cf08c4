"""The user's mapping constraints resolved per layer: from the instance's records (:mod:`dlaopt.specs.mapping`) to
each layer's loop nest and :class:`~dlaopt.formulations.mapping.space.LayerSpace`.

:func:`resolve` checks what the records *mean* against the instance — every layer name, operator kind, level or
memory name, fanout axis and PE-array shape must exist or fit — and raises a located
:class:`~dlaopt.errors.InputError` when one does not (the exit-2 error of the command line). A constraint that is
well formed but cannot hold (a fixed factor that does not divide its dimension, two different fixed factors for the
same loop, a utilization no mapping reaches) is not an error: :func:`certain_conflicts` finds the cases that are
cheap and certain to see, and the problem reports them as an infeasible instance (a status), naming the
constraints; anything subtler is left to the exact methods.

Meaning of each kind, per layer it selects (``layers`` / ``op_kinds``; neither: every mapped layer):

* ``factors`` — ``target`` is a storage level, by its name or the name of one of its memories. ``type: temporal``
  (default) bounds the factor of the level's own loop; ``type: spatial`` bounds the fanout below the level: one axis
  (``axis``) or the product over all its axes. A dimension the layer does not have has size 1: a factor of 1 holds,
  anything more makes the layer infeasible.
* ``permutation`` — the relative order, outermost first, of the listed loops at the level (loops of factor 1 and
  dimensions the layer lacks are free).
* ``spatial`` — per axis of a fanout (``target``: the level above it; default the PE array's fanout), the dimensions
  allowed on it (``dims``) and the most of the axis a mapping may use (``max``).
* ``bypass`` — the operands are removed from the level's memories for the layer (main memory keeps everything).
* ``utilization`` — a minimum spatial utilization (see :mod:`.space`); the strongest one selecting a layer binds.
* ``padding`` — ``allowed: false`` maps the layer at its own sizes whatever ``options.padding`` says; ``multiples``
  pads it to these multiples instead of ``options.padding``; several padding constraints on one layer must agree.
* ``shape`` — the PE array's two axes take one of the listed (rows, columns) sizes, each with at most the array's
  PEs; several shape constraints on one layer allow the shapes they all list.
* ``one_of`` — a disjunction: ``options`` lists lists of factors / permutation / spatial / utilization records
  (each may narrow the layers further with its own selector); the layer meets every record of at least one option.
  The layer's space then has :attr:`LayerSpace.alternatives`: one per combination of the options of its ``one_of``
  records (at most :data:`MAX_ALTERNATIVES`), each with the layer's other constraints; a combination with a certain
  conflict is left out, and a layer with none left is a conflict naming the records involved.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch
from dlaopt.formulations.mapping.loopnest import LoopNest, loopnest_from_operator
from dlaopt.formulations.mapping.space import (
    ArchChoice,
    FactorBound,
    LayerSpace,
    OrderChain,
    SpatialAllow,
)
from dlaopt.hardware.model import Accelerator
from dlaopt.specs.constraints import Constraint, KeyPath, selected
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator

KINDS = ("factors", "permutation", "spatial", "bypass", "utilization", "padding", "shape", "one_of")
ONE_OF_KINDS = ("factors", "permutation", "spatial", "utilization")  # what an option of a one_of may hold
MAX_ALTERNATIVES = 64  # combinations of one_of options per layer
MAPPABLE_KINDS = ("conv2d", "depthwise_conv2d", "matmul")


@dataclass(frozen=True)
class Conflict:
    """A layer that no mapping can map under some constraints: why, and which ones (labels and key paths)."""

    layer: str
    reason: str
    labels: tuple[str, ...]
    paths: tuple[KeyPath, ...]

    @property
    def message(self) -> str:
        return f"{', '.join(self.labels)}: layer {self.layer}: {self.reason}"


@dataclass
class Resolution:
    nests: list[LoopNest]  # per mapped layer (padding applied)
    spaces: list[LayerSpace]  # per mapped layer
    conflicts: list[Conflict]  # certain infeasibility, in layer order


# ------------------------------------------------------------------------------------------------ architecture lookups
def level_names(arch: MappingArch) -> list[str]:
    """Every name a ``target`` may use: level names, then memory names that are not also level names."""
    names = [lv.name for lv in arch.levels]
    names += [s.memory for lv in arch.levels for s in lv.stores if s.memory not in names]
    return names


def find_level(arch: MappingArch, c: Constraint) -> int:
    """The level ``c``'s ``target`` names (a level name or the name of one of its memories)."""
    name = str(c.params["target"])
    for j, lv in enumerate(arch.levels):
        if name == lv.name or any(s.memory == name for s in lv.stores):
            return j
    raise c.error(f"no storage level or memory named {name!r} in this accelerator's mapping view", "target",
                  expected="one of: " + ", ".join(level_names(arch)))


def fanout_slots(arch: MappingArch, level: int) -> list[int]:
    """Slot indices of the fanout below ``level`` (the MAC fanout below level 0), in slot order."""
    return [k for k, s in enumerate(arch.slots()) if s.kind == SPATIAL and s.level == level]


def pe_array_slots(arch: MappingArch, acc: Accelerator | None) -> list[int]:
    """Slot indices of the PE array's axes: the fanout whose axes carry the accelerator's PE-array axis names (in
    order), else the fanout with the most instances."""
    slots = arch.slots()
    groups: dict[tuple[int, bool], list[int]] = {}
    for k, s in enumerate(slots):
        if s.kind == SPATIAL:
            groups.setdefault((s.level, s.mac), []).append(k)
    if acc is not None:
        names = [a for a, _ in acc.pe_array.axes]
        for g in groups.values():
            if [slots[k].axis for k in g[: len(names)]] == names:
                return g[: len(names)]
    if not groups:
        return []
    return max(groups.values(), key=lambda g: math.prod(slots[k].size for k in g))


def with_bypass(arch: MappingArch, removed: Mapping[int, frozenset[str]]) -> MappingArch:
    """``arch`` with the operands ``removed[level]`` taken out of that level's memories (a memory left with no
    operand is dropped; the level stays, keeping nothing)."""
    if not any(removed.values()):
        return arch
    levels = []
    for j, lv in enumerate(arch.levels):
        gone = removed.get(j, frozenset())
        if not gone:
            levels.append(lv)
            continue
        stores = tuple(replace(s, operands=s.operands - gone) for s in lv.stores if s.operands - gone)
        levels.append(replace(lv, stores=stores))
    return replace(arch, levels=tuple(levels))


def with_shape(arch: MappingArch, axes: Sequence[int], shape: tuple[int, int]) -> MappingArch:
    """``arch`` with the PE-array axes (slot indices ``axes``, two of them) resized to ``shape``. The levels keep
    their instance counts (the physical PEs)."""
    slots = arch.slots()
    size = {(slots[k].level, slots[k].mac, slots[k].axis): n for k, n in zip(axes, shape, strict=True)}

    def resized(fanout: tuple[tuple[str, int], ...], level: int, mac: bool) -> tuple[tuple[str, int], ...]:
        return tuple((a, size.get((level, mac, a), n)) for a, n in fanout)

    levels = tuple(replace(lv, fanout=resized(lv.fanout, j, False)) if j > 0 else lv
                   for j, lv in enumerate(arch.levels))
    return replace(arch, levels=levels, mac_fanout=resized(arch.mac_fanout, 0, True))


# ------------------------------------------------------------------------------------------------ validation
def _bound(value: Any) -> tuple[int, int | None]:
    if isinstance(value, Mapping):
        return int(value.get("min", 1)), (None if value.get("max") is None else int(value["max"]))
    return int(value), int(value)


def option_records(c: Constraint) -> list[list[Constraint]]:
    """The records of each option of a ``one_of`` ``c``, located at ``c``'s ``options[i][j]`` (located errors for a
    kind an option may not hold, or an empty option)."""
    out: list[list[Constraint]] = []
    options = c.params.get("options") or []
    if not options:
        raise c.error("a one_of needs at least one option", "options", expected="a non-empty list of options")
    for i, option in enumerate(options):
        if not option:
            raise c.error(f"option {i} is empty", "options", i, expected="a non-empty list of records")
        recs = []
        for j, item in enumerate(option):
            kind = str(item.get("kind"))
            if kind not in ONE_OF_KINDS:
                raise c.error(f"a one_of option cannot hold a {kind!r} record", "options", i, j, "kind",
                              expected="one of: " + ", ".join(ONE_OF_KINDS))
            params = {k: v for k, v in item.items() if k not in ("kind", "name")}
            recs.append(Constraint(kind, params, c.at("options", i, j), None, dict(item)))
        out.append(recs)
    return out


def _validate(c: Constraint, arch: MappingArch, wl: Workload, acc: Accelerator | None) -> None:
    """The meaning checks of one record that do not depend on the layer (located errors)."""
    ops = {op.name: op for op in wl.operators}
    for i, name in enumerate(c.params.get("layers") or ()):
        if name not in ops:
            raise c.error(f"no operator named {name!r} in workload '{wl.name}'", "layers", i,
                          expected="names of conv2d / depthwise_conv2d / matmul operators")
        if ops[name].kind.value not in MAPPABLE_KINDS:
            raise c.error(f"operator {name!r} is a {ops[name].kind.value}, not a mappable layer", "layers", i,
                          expected="conv2d, depthwise_conv2d or matmul operators")
    for i, kind in enumerate(c.params.get("op_kinds") or ()):
        if kind not in MAPPABLE_KINDS:
            raise c.error(f"operator kind {kind!r} is never mapped", "op_kinds", i,
                          expected="one of: " + ", ".join(MAPPABLE_KINDS))
    if c.kind == "factors":
        j = find_level(arch, c)
        if c.params.get("type", "temporal") == "temporal":
            if "axis" in c.params:
                raise c.error("'axis' applies to spatial factors only", "axis", expected="type: spatial")
        else:
            fan = fanout_slots(arch, j)
            if not fan:
                raise c.error(f"level '{arch.levels[j].name}' has no fanout below it: no spatial factors there",
                              "type", expected="a level with a fanout below it, or type: temporal")
            axis = c.params.get("axis")
            if axis is not None and axis not in [arch.slots()[k].axis for k in fan]:
                raise c.error(f"the fanout below '{arch.levels[j].name}' has no axis {axis!r}", "axis",
                              expected="one of: " + ", ".join(arch.slots()[k].axis for k in fan))
    elif c.kind == "permutation":
        find_level(arch, c)
    elif c.kind == "one_of":
        for option in option_records(c):
            for r in option:
                _validate(r, arch, wl, acc)
    elif c.kind == "spatial":
        fan = _spatial_fanout(c, arch, acc)
        names = [arch.slots()[k].axis for k in fan]
        for axis in c.params["axes"]:
            if axis not in names:
                raise c.error(f"no axis {axis!r} in this fanout", "axes", axis, expected="one of: " + ", ".join(names))
    elif c.kind == "bypass":
        if find_level(arch, c) == arch.top:
            raise c.error("main memory keeps every operand: it cannot be bypassed", "target",
                          expected="a level below main memory")
    elif c.kind == "padding":
        if c.params.get("allowed") is False and c.params.get("multiples"):
            raise c.error("'multiples' pads the layer, 'allowed: false' forbids padding it", "multiples",
                          expected="one of the two")
    elif c.kind == "shape":
        axes = pe_array_slots(arch, acc)
        if len(axes) != 2:
            raise c.error(f"the PE array has {len(axes)} axis(es); a shape gives two (rows, columns)", "shapes",
                          expected="a two-axis PE array")
        pes = math.prod(arch.slots()[k].size for k in axes)
        for i, (r, q) in enumerate(c.params["shapes"]):
            if r * q > pes:
                raise c.error(f"shape {r}x{q} has {r * q} PEs, more than the array's {pes}", "shapes", i,
                              expected=f"at most {pes} PEs")


def _spatial_fanout(c: Constraint, arch: MappingArch, acc: Accelerator | None) -> list[int]:
    if "target" in c.params:
        j = find_level(arch, c)
        fan = fanout_slots(arch, j)
        if not fan:
            raise c.error(f"level '{arch.levels[j].name}' has no fanout below it", "target",
                          expected="a level with a fanout below it")
        return fan
    pe = pe_array_slots(arch, acc)
    if not pe:
        raise c.error("this accelerator has no spatial fanout", "axes", expected="an accelerator with a PE array")
    return fanout_slots(arch, arch.slots()[pe[0]].level)


# ------------------------------------------------------------------------------------------------ per layer
def resolve(constraints: Sequence[Constraint], wl: Workload, ops: Sequence[Operator], arch: MappingArch,
            acc: Accelerator | None, padding: Mapping[str, int]) -> Resolution:
    """Loop nests and constrained map spaces of ``ops`` (the mapped layers) under ``constraints`` (see the module
    docstring); located :class:`InputError` for a meaningless record."""
    cons = [c for c in constraints if c.kind in KINDS]
    for c in cons:
        _validate(c, arch, wl, acc)
    nests: list[LoopNest] = []
    spaces: list[LayerSpace] = []
    conflicts: list[Conflict] = []
    for op in ops:
        sel = [c for c in cons if selected(c, op.name, op.kind.value)]
        plain = [c for c in sel if c.kind != "one_of"]
        nest, space, found = _resolve_layer(plain, wl, op, arch, acc, padding)
        paths = {c.label: c.path for c in sel}
        sized = tuple(c.label for c in sel if c.kind == "padding")
        found += certain_conflicts(nest, space, paths, sized)
        ors = [c for c in sel if c.kind == "one_of"]
        if ors:
            space, more = _alternatives(ors, plain, sel, wl, op, arch, acc, padding, space, paths, sized)
            found += more if not found else []
        nests.append(nest)
        spaces.append(space)
        conflicts.extend(found)
    return Resolution(nests, spaces, conflicts)


def _alternatives(ors: list[Constraint], plain: list[Constraint], sel: list[Constraint], wl: Workload, op: Operator,
                  arch: MappingArch, acc: Accelerator | None, padding: Mapping[str, int], space: LayerSpace,
                  paths: Mapping[str, KeyPath], sized: tuple[str, ...]) -> tuple[LayerSpace, list[Conflict]]:
    """``space`` (the layer's plain constraints) with its alternatives: one per combination of the options of the
    ``one_of`` records ``ors`` (pieces labelled by the ``one_of``), those with a certain conflict left out; the
    conflict of a layer with none left."""
    per: list[list[list[Constraint]]] = []
    total = 1
    for c in ors:
        opts = [[r for r in option if selected(r, op.name, op.kind.value)] for option in option_records(c)]
        per.append(opts)
        total *= len(opts)
        if total > MAX_ALTERNATIVES:
            raise c.error(f"layer {op.name}: its one_of records combine into more than {MAX_ALTERNATIVES} "
                          "alternatives", "options", expected=f"at most {MAX_ALTERNATIVES} combinations of options")
    parent = {r.label: c.label for c, opts in zip(ors, per, strict=True) for option in opts for r in option}

    def lab(x: str) -> str:
        return parent.get(x, x)

    alts: list[LayerSpace] = []
    failed: list[Conflict] = []
    for combo in itertools.product(*per):
        extra = [r for option in combo for r in option]
        nest, alt, found = _resolve_layer([*plain, *extra], wl, op, arch, acc, padding)
        alt = replace(alt, factor_bounds=tuple(replace(b, source=lab(b.source)) for b in alt.factor_bounds),
                      spatial=tuple(replace(a, source=lab(a.source)) for a in alt.spatial),
                      orders=tuple(replace(o, source=lab(o.source)) for o in alt.orders),
                      utilization_source=lab(alt.utilization_source), sources=tuple(c.label for c in sel))
        relabelled = [tuple(dict.fromkeys(lab(x) for x in f.labels)) for f in found]
        found = [Conflict(f.layer, f.reason, ls, tuple(paths[x] for x in ls if x in paths))
                 for f, ls in zip(found, relabelled, strict=True)]
        found += certain_conflicts(nest, alt, paths, sized)
        if found:
            failed.append(found[0])
        else:
            alts.append(alt)
    conflicts: list[Conflict] = []
    if not alts:
        labels = [lb for lb in paths if any(lb in f.labels for f in failed) or lb in [c.label for c in ors]]
        conflicts.append(Conflict(op.name, f"no option of {', '.join(c.label for c in ors)} can hold: "
                                  + "; ".join(dict.fromkeys(f.reason for f in failed)),
                                  tuple(labels), tuple(paths[lb] for lb in labels)))
        alts = [space]
    return replace(space, alternatives=tuple(alts), sources=tuple(c.label for c in sel)), conflicts


def _resolve_layer(sel: list[Constraint], wl: Workload, op: Operator, arch: MappingArch, acc: Accelerator | None,
                   padding: Mapping[str, int]) -> tuple[LoopNest, LayerSpace, list[Conflict]]:
    conflicts: list[Conflict] = []

    def conflict(reason: str, *cs: Constraint) -> None:
        conflicts.append(Conflict(op.name, reason, tuple(c.label for c in cs), tuple(c.path for c in cs)))

    # padding: the layer's own nest
    nest = loopnest_from_operator(wl, op, padding)
    chosen: Constraint | None = None
    for c in (c for c in sel if c.kind == "padding"):
        if c.params.get("allowed") is False:
            pad: Mapping[str, int] = {}
        elif c.params.get("multiples"):
            pad = {str(d): int(v) for d, v in c.params["multiples"].items()}
        else:
            pad = padding
        n = loopnest_from_operator(wl, op, pad)
        if chosen is None:
            nest, chosen = n, c
        elif dict(n.sizes) != dict(nest.sizes):
            conflict(f"padded to {n.shape_text} by one and {nest.shape_text} by the other", chosen, c)
    # the architecture: bypasses, then one choice per allowed PE-array shape
    removed: dict[int, frozenset[str]] = {}
    for c in (c for c in sel if c.kind == "bypass"):
        j = find_level(arch, c)
        removed[j] = removed.get(j, frozenset()) | frozenset(c.params["operands"])
    base = with_bypass(arch, removed)
    shape_cs = [c for c in sel if c.kind == "shape"]
    if shape_cs:
        allowed = [tuple(int(x) for x in s) for s in shape_cs[0].params["shapes"]]
        for c in shape_cs[1:]:
            theirs = {tuple(int(x) for x in s) for s in c.params["shapes"]}
            allowed = [s for s in allowed if s in theirs]
        axes = pe_array_slots(arch, acc)
        archs = tuple(ArchChoice((s[0], s[1]), with_shape(base, axes, (s[0], s[1])), shape_cs[0].label)
                      for s in allowed)
        if not archs:
            conflict("no PE-array shape is allowed by all of them", *shape_cs)
            archs = (ArchChoice(None, base),)
    else:
        archs = (ArchChoice(None, base),)
    # factor bounds
    bounds: list[FactorBound] = []
    for c in (c for c in sel if c.kind == "factors"):
        j = find_level(arch, c)
        if c.params.get("type", "temporal") == "temporal":
            slots: tuple[int, ...] = (arch.temporal_slot(j),)
        else:
            fan = fanout_slots(arch, j)
            axis = c.params.get("axis")
            slots = tuple(k for k in fan if axis is None or arch.slots()[k].axis == axis)
        for d, v in c.params["factors"].items():
            lo, hi = _bound(v)
            if d not in nest.dims:
                if lo > 1:
                    conflict(f"it has no dimension {d} (size 1), so its factor cannot be {lo} or more", c)
                continue
            bounds.append(FactorBound(d, slots, lo, hi, c.label))
    # spatial
    allows: list[SpatialAllow] = []
    for c in (c for c in sel if c.kind == "spatial"):
        fan = _spatial_fanout(c, arch, acc)
        for axis, spec in c.params["axes"].items():
            k = next(k for k in fan if arch.slots()[k].axis == axis)
            dims = None if spec.get("dims") is None else frozenset(d for d in spec["dims"] if d in nest.dims)
            allows.append(SpatialAllow(k, dims, None if spec.get("max") is None else int(spec["max"]), c.label))
    # orders
    chains: list[OrderChain] = []
    for c in (c for c in sel if c.kind == "permutation"):
        chain = tuple(d for d in c.params["order"] if d in nest.dims)
        if len(chain) >= 2:
            chains.append(OrderChain(find_level(arch, c), chain, c.label))
    # utilization: the strongest binds
    util = max((c for c in sel if c.kind == "utilization"), key=lambda c: float(c.params["min"]), default=None)
    space = LayerSpace(archs, tuple(bounds), tuple(allows), tuple(chains),
                       None if util is None else float(util.params["min"]), "" if util is None else util.label,
                       tuple(c.label for c in sel), arch.num_macs)
    return nest, space, conflicts


# ------------------------------------------------------------------------------------------------ certain conflicts
def certain_conflicts(nest: LoopNest, space: LayerSpace, paths: Mapping[str, KeyPath],
                      size_sources: Sequence[str] = ()) -> list[Conflict]:
    """Cases where no mapping of ``nest`` meets ``space`` that are cheap and certain to see: a bound whose minimum
    exceeds its maximum or the dimension, a fixed factor that does not divide its dimension, two bounds on the same
    slots with nothing in common, fixed factors on disjoint slots whose product does not divide the dimension (or,
    covering every slot, differs from it), a fixed spatial factor on an axis that forbids its dimension or that
    overfills the axis, and a utilization above what the axes can reach.

    Each conflict names constraints that cannot hold *together* (a seed for the search of a smallest such set):
    ``size_sources``, the padding constraints that set the layer's sizes, join every conflict the sizes decide."""
    out: list[Conflict] = []
    sized = tuple(size_sources)

    def conflict(reason: str, *labels: str) -> None:
        labels = tuple(lb for lb in paths if lb in labels) + tuple(lb for lb in dict.fromkeys(labels)
                                                                   if lb not in paths)  # in file order
        out.append(Conflict(nest.name, reason, labels, tuple(paths[lb] for lb in labels if lb in paths)))

    slots = space.archs[0].arch.slots()
    for b in space.factor_bounds:
        n = nest.sizes[b.dim]
        where = "+".join(slots[k].name for k in b.slots)
        if b.hi is not None and b.lo > b.hi:
            conflict(f"the factor of {b.dim} at {where} must be at least {b.lo} and at most {b.hi}", b.source)
        elif b.lo > n:
            conflict(f"the factor of {b.dim} at {where} must be at least {b.lo}, more than the dimension ({n})",
                     b.source, *sized)
        elif b.lo == b.hi and n % b.lo:
            conflict(f"a factor {b.lo} of {b.dim} at {where} does not divide the dimension ({n})", b.source, *sized)
    by_slots: dict[tuple[str, tuple[int, ...]], list[Any]] = {}
    for b in space.factor_bounds:
        by_slots.setdefault((b.dim, tuple(sorted(b.slots))), []).append(b)
    for (d, ks), bs in by_slots.items():
        lo = max(bs, key=lambda b: b.lo)
        his = [b for b in bs if b.hi is not None]
        hi = min(his, key=lambda b: b.hi) if his else None
        if hi is not None and lo is not hi and lo.lo > hi.hi:
            where = "+".join(slots[k].name for k in ks)
            conflict(f"the factor of {d} at {where} must be at least {lo.lo} and at most {hi.hi}", lo.source, hi.source)
    for d in nest.dims:
        chosen: list[FactorBound] = []
        for b in space.factor_bounds:
            if b.dim == d and b.lo == b.hi and all(not set(b.slots) & set(x.slots) for x in chosen):
                chosen.append(b)
        if len(chosen) < 2 and not (chosen and len(chosen[0].slots) == len(slots)):
            continue
        prod = math.prod(b.lo for b in chosen)
        covered = sum(len(b.slots) for b in chosen) == len(slots)
        if nest.sizes[d] % prod or (covered and prod != nest.sizes[d]):
            conflict(f"its fixed factors of {d} multiply to {prod}, which cannot make the dimension "
                     f"({nest.sizes[d]})", *(b.source for b in chosen), *sized)
    for a in space.spatial:
        for b in space.factor_bounds:
            if b.slots == (a.slot,) and b.lo > 1 and a.dims is not None and b.dim not in a.dims:
                conflict(f"{b.dim} must have a factor of at least {b.lo} on axis {slots[a.slot].name}, which does "
                         f"not allow it", b.source, a.source)
    spatial = [k for k, s in enumerate(slots) if s.kind == SPATIAL]
    for k in spatial:
        fixed = [b for b in space.factor_bounds if b.slots == (k,) and b.lo > 1]
        need = math.prod(b.lo for b in fixed)
        caps = [(a.max_used, a.source) for a in space.spatial if a.slot == k and a.max_used is not None]
        room = max(c.arch.slots()[k].size for c in space.archs)
        cap = min([room, *(m for m, _ in caps)])
        if fixed and need > cap:
            conflict(f"its factors on axis {slots[k].name} must multiply to at least {need}, more than the "
                     f"{cap} it may use", *(b.source for b in fixed), *(s for _, s in caps),
                     *(c.source for c in space.archs if c.source))
    if space.min_utilization is not None:
        best = 0
        for choice in space.archs:
            ss = choice.arch.slots()
            caps = []
            for k in spatial:  # an axis uses at most its size, its maximum, and the sizes of the dims it allows
                limits = [ss[k].size]
                for a in space.spatial:
                    if a.slot == k and a.max_used is not None:
                        limits.append(a.max_used)
                    if a.slot == k and a.dims is not None:
                        limits.append(math.prod(nest.sizes[d] for d in a.dims))
                caps.append(min(limits))
            best = max(best, math.prod(caps))
        best = min(best, nest.macs)
        if best * nest.real_macs < space.min_utilization * space.macs_available * nest.macs * (1 - 1e-9):
            conflict(f"a utilization of {space.min_utilization:g} needs more than the at most "
                     f"{best * nest.real_macs / nest.macs:g} of {space.macs_available} MAC units its axes can keep "
                     "busy", space.utilization_source, *(a.source for a in space.spatial),
                     *(c.source for c in space.archs if c.source), *sized)
    return out


__all__ = ["KINDS", "MAPPABLE_KINDS", "Conflict", "Resolution", "certain_conflicts", "fanout_slots", "find_level",
           "level_names", "pe_array_slots", "resolve", "with_bypass", "with_shape"]
