"""The evaluator's own reading of the mapping constraints: which of them a layer's mapping breaks, and the
architecture (bypasses, PE-array shape) its cost is computed on.

This module reads the constraint records as the instance states them (:class:`~dlaopt.specs.constraints.Constraint`)
and the mapping as a solution states it (factors per slot, orders per level, the PE-array shape it says it used).
It deliberately shares no code with the resolution into per-layer map spaces (:mod:`.constraints`), the heuristics'
projection (:class:`~dlaopt.formulations.mapping.heuristics.SpaceRules`), the enumeration (:mod:`.exhaustive`) or the
exact model: a slip in any of those shows up here as a named violation. Every violation starts with the label of
the constraint it breaks, e.g. ``constraints[2] (factors): layer conv1: the factor of K at T1 is 4, not 8``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping as MappingABC
from collections.abc import Sequence
from dataclasses import replace

from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, MappingArch
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.hardware.model import Accelerator
from dlaopt.specs.constraints import Constraint, selected


def _level(arch: MappingArch, name: str) -> int | None:
    for j, lv in enumerate(arch.levels):
        if lv.name == name or name in [s.memory for s in lv.stores]:
            return j
    return None


def _pe_axes(arch: MappingArch, acc: Accelerator | None) -> list[tuple[int, bool, str]]:
    """(level, mac, axis) of the PE array's axes, outermost axis first."""
    fanouts: list[list[tuple[int, bool, str, int]]] = [
        [(j, False, a, n) for a, n in lv.fanout] for j, lv in enumerate(arch.levels) if j > 0 and lv.fanout]
    if arch.mac_fanout:
        fanouts.append([(0, True, a, n) for a, n in arch.mac_fanout])
    if acc is not None:
        want = [a for a, _ in acc.pe_array.axes]
        for f in fanouts:
            if [a for _, _, a, _ in f][: len(want)] == want:
                return [(j, mac, a) for j, mac, a, _ in f[: len(want)]]
    if not fanouts:
        return []
    big = max(fanouts, key=lambda f: math.prod(n for *_, n in f))
    return [(j, mac, a) for j, mac, a, _ in big]


def layer_arch(base: MappingArch, acc: Accelerator | None, constraints: Sequence[Constraint],
               shape: tuple[int, int] | None) -> MappingArch:
    """The architecture one layer is evaluated on: ``base`` without the operands its bypass constraints remove,
    with the PE array resized to ``shape`` (if given)."""
    gone: dict[int, set[str]] = {}
    for c in constraints:
        if c.kind == "bypass":
            j = _level(base, str(c.params["target"]))
            if j is not None and j != base.top:
                gone.setdefault(j, set()).update(c.params["operands"])
    levels = list(base.levels)
    for j, ops in gone.items():
        lv = levels[j]
        levels[j] = replace(lv, stores=tuple(replace(s, operands=s.operands - ops) for s in lv.stores
                                             if s.operands - ops))
    arch = replace(base, levels=tuple(levels))
    if shape is None:
        return arch
    axes = _pe_axes(base, acc)
    new = dict(zip(axes, shape, strict=False))
    levels = [replace(lv, fanout=tuple((a, new.get((j, False, a), n)) for a, n in lv.fanout))
              for j, lv in enumerate(arch.levels)]
    mac = tuple((a, new.get((0, True, a), n)) for a, n in arch.mac_fanout)
    return replace(arch, levels=tuple(levels), mac_fanout=mac)


def pe_shape(arch: MappingArch, acc: Accelerator | None) -> tuple[int, ...]:
    """The PE array's axis sizes in ``arch``."""
    sizes = {(j, False, a): n for j, lv in enumerate(arch.levels) for a, n in lv.fanout}
    sizes.update({(0, True, a): n for a, n in arch.mac_fanout})
    return tuple(sizes[x] for x in _pe_axes(arch, acc))


def _slot_index(arch: MappingArch, kind: str, level: int, axis: str | None = None) -> list[int]:
    return [k for k, s in enumerate(arch.slots())
            if s.kind == kind and s.level == level and (kind == TEMPORAL or axis is None or s.axis == axis)]


def _factor(m: Mapping, dim: str, slots: Sequence[int]) -> int:
    fs = m.factors.get(dim)
    return 1 if fs is None else math.prod(fs[k] for k in slots if k < len(fs))


def constraint_violations(name: str, nest: LoopNest, arch: MappingArch, base: MappingArch,
                          acc: Accelerator | None, m: Mapping, shape: tuple[int, int] | None,
                          constraints: Sequence[Constraint], op_kind: str = "") -> list[str]:
    """What ``m`` (layer ``name``, mapped on ``arch`` — see :func:`layer_arch` — with PE-array ``shape``) breaks
    among ``constraints`` (those selecting the layer), each violation led by the constraint's label. A ``one_of``
    holds when every record of one of its options does (those whose own selector picks the layer: ``op_kind``
    is the layer's operator kind)."""
    out: list[str] = []
    slots = arch.slots()
    for c in constraints:
        head = f"{c.label}: layer {name}:"
        if c.kind == "factors":
            j = _level(base, str(c.params["target"]))
            if j is None:
                continue
            kind = TEMPORAL if c.params.get("type", "temporal") == "temporal" else SPATIAL
            ks = _slot_index(arch, kind, j, c.params.get("axis") if kind == SPATIAL else None)
            where = "+".join(slots[k].name for k in ks)
            for d, v in c.params["factors"].items():
                lo, hi = (v, v) if isinstance(v, int) else (v.get("min", 1), v.get("max"))
                f = _factor(m, d, ks)
                if f < lo or (hi is not None and f > hi):
                    want = str(lo) if lo == hi else f"in [{lo}, {'inf' if hi is None else hi}]"
                    out.append(f"{head} the factor of {d} at {where} is {f}, not {want}")
        elif c.kind == "permutation":
            j = _level(base, str(c.params["target"]))
            if j is None or j >= len(m.orders):
                continue
            t = _slot_index(arch, TEMPORAL, j)[0]
            order = list(c.params["order"])
            seen = [d for d in m.orders[j] if d in order and _factor(m, d, [t]) > 1]
            if seen != [d for d in order if d in seen]:
                out.append(f"{head} the loops {seen} at level {arch.levels[j].name} are not in the order {order}")
        elif c.kind == "spatial":
            if "target" in c.params:
                j = _level(base, str(c.params["target"]))
                level = [(j, a) for a in c.params["axes"]] if j is not None else []
            else:
                pe = _pe_axes(base, acc)
                level = [(pe[0][0], a) for a in c.params["axes"]] if pe else []
            for j, a in level:
                spec = c.params["axes"][a]
                for k in _slot_index(arch, SPATIAL, j, a):
                    used = {d: fs[k] for d, fs in m.factors.items() if k < len(fs) and fs[k] > 1}
                    if spec.get("dims") is not None:
                        bad = sorted(d for d in used if d not in spec["dims"])
                        if bad:
                            out.append(f"{head} axis {a} unrolls {', '.join(bad)}, allowed only "
                                       f"{list(spec['dims'])}")
                    total = math.prod(used.values())
                    if spec.get("max") is not None and total > spec["max"]:
                        out.append(f"{head} axis {a} uses {total}, more than its maximum {spec['max']}")
        elif c.kind == "utilization":
            spatial = [k for k, s in enumerate(slots) if s.kind == SPATIAL]
            used = math.prod(fs[k] for fs in m.factors.values() for k in spatial if k < len(fs))
            util = used * nest.real_macs / (nest.macs * base.num_macs)
            if util < float(c.params["min"]) * (1 - 1e-9):
                out.append(f"{head} spatial utilization {util:.4g} is below the minimum {c.params['min']}")
        elif c.kind == "padding":
            want: MappingABC[str, int]
            if c.params.get("allowed") is False:
                want = dict(nest.real_sizes)
            elif c.params.get("multiples"):
                mult = c.params["multiples"]
                want = {d: -(-n // int(mult.get(d, 1))) * int(mult.get(d, 1)) for d, n in nest.real_sizes.items()}
            else:
                continue
            for d, n in want.items():
                got = _factor(m, d, range(len(slots)))
                if got != n:
                    out.append(f"{head} dimension {d} is mapped with size {got}, not {n} (real size "
                               f"{nest.real_sizes[d]})")
        elif c.kind == "one_of":
            broken = []
            for i, option in enumerate(c.params.get("options") or []):
                recs = [Constraint(str(r["kind"]), {k: v for k, v in r.items() if k not in ("kind", "name")},
                                   c.at("options", i, j)) for j, r in enumerate(option)]
                recs = [r for r in recs if selected(r, name, op_kind)]
                found = constraint_violations(name, nest, arch, base, acc, m, shape, recs, op_kind)
                if not found:
                    break
                broken.append(f"option {i}: {found[0]}")
            else:
                out.append(f"{head} no option holds ({'; '.join(broken)})")
        elif c.kind == "shape":
            allowed = [tuple(s) for s in c.params["shapes"]]
            if shape is None:
                out.append(f"{head} the solution does not say which PE-array shape ({allowed}) it uses")
            elif tuple(shape) not in allowed:
                out.append(f"{head} PE-array shape {shape[0]}x{shape[1]} is not one of {allowed}")
    return out


__all__ = ["constraint_violations", "layer_arch", "pe_shape"]
