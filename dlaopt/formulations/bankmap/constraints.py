"""User constraints of memory-bank mapping: the records an instance's ``constraints`` list becomes, and the cheap,
exact feasibility test of a constrained layout model.

Kinds (JSON Schema in :mod:`dlaopt.specs.bankmap`)

* ``layout`` ``{tensor, layout: {bank_axis[, shape]}}`` — the tensor is held on chip, in the banks, with this bank
  axis (the form a solution document writes under ``layouts``, so a layout can be pasted from a solution);
* ``layouts`` ``{tensor, allowed: [layout, ...]}`` — on chip, in one of these layouts;
* ``off_chip`` ``{tensor}`` — a produced tensor that stays in main memory (as option ``off_chip_tensors``).

:func:`parse_rules` checks meaning (an unknown tensor, a bank axis outside the tensor's rank, a shape that is not
the tensor's, a graph input or weight forced off chip) and raises an :class:`~dlaopt.errors.InputError` located at
the offending key. What is merely impossible is not an input error: :func:`home_allowed` turns the layout rules into
the homes each constrained tensor may take (the layouts every rule allows and it fits a bank in; none when it is
forced off chip), and :func:`find_conflict` says whether some operator or free tensor is left without an allowed
layout — the only way the constraints can be infeasible, since each one restricts the home of one tensor, which one
operator's choice (or one free tensor's home) decides. The problem reports that as status infeasible, naming the
constraints involved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dlaopt.formulations.bankmap.layouts import LayoutModel, off_chip_tensor_error
from dlaopt.specs.constraints import Constraint, KeyPath
from dlaopt.workload.graph import Workload

KINDS = ("layout", "layouts", "off_chip")


@dataclass(frozen=True)
class LayoutRule:
    """``tensor`` is held on chip with one of the bank axes ``axes`` (kind ``layout``: one axis)."""

    label: str
    path: KeyPath
    kind: str
    tensor: str
    axes: frozenset[int]


@dataclass(frozen=True)
class OffChipRule:
    """Produced tensor ``tensor`` stays off chip."""

    label: str
    path: KeyPath
    tensor: str


Rule = LayoutRule | OffChipRule


def _axis(c: Constraint, workload: Workload, tensor: str, layout: object, *keys: str | int) -> int:
    """The bank axis of one layout record, checked against the tensor as the solution reader checks a home."""
    shape = workload.tensors[tensor].shape
    assert isinstance(layout, Mapping)  # the schema guarantees an object with an integer bank_axis
    axis = layout["bank_axis"]
    if not 0 <= axis < len(shape):
        raise c.error(f"bank axis {axis} is not an axis of tensor '{tensor}' (shape {list(shape)})",
                      *keys, "bank_axis", expected=f"an axis 0..{len(shape) - 1}")
    if "shape" in layout and tuple(layout["shape"]) != tuple(shape):
        raise c.error(f"shape {list(layout['shape'])} is not the shape of tensor '{tensor}' ({list(shape)})",
                      *keys, "shape", expected=f"{list(shape)} (or no shape)")
    return int(axis)


def parse_rules(constraints: Sequence[Constraint], workload: Workload, tensors: Sequence[str]) -> tuple[Rule, ...]:
    """The typed records of the bank-mapping constraints (``tensors``: those some operator touches, the only ones
    with a layout)."""
    laid_out = set(tensors)
    out: list[Rule] = []
    for c in constraints:
        if c.kind not in KINDS:
            raise c.error(f"kind '{c.kind}' is not a bank-mapping constraint", "kind",
                          expected="one of: " + ", ".join(KINDS))
        name = c.params["tensor"]
        if c.kind == "off_chip":
            why = off_chip_tensor_error(workload, name)
            if why is not None:
                raise c.error(why[0], "tensor", expected=why[1])
            out.append(OffChipRule(c.label, c.path, name))
            continue
        if name not in workload.tensors:
            raise c.error(f"no tensor named {name!r} in the workload", "tensor",
                          expected="the name of a tensor some operator reads or writes")
        if name not in laid_out:
            raise c.error(f"tensor '{name}' is not read or written by any operator: it has no bank layout", "tensor",
                          expected="the name of a tensor some operator reads or writes")
        if c.kind == "layout":
            axes = frozenset({_axis(c, workload, name, c.params["layout"], "layout")})
        else:
            axes = frozenset(_axis(c, workload, name, lay, "allowed", j) for j, lay in enumerate(c.params["allowed"]))
        out.append(LayoutRule(c.label, c.path, c.kind, name, axes))
    return tuple(out)


def off_chip_names(rules: Sequence[Rule]) -> list[str]:
    """The tensors the ``off_chip`` rules force off chip (first mention order, once each)."""
    return list(dict.fromkeys(r.tensor for r in rules if isinstance(r, OffChipRule)))


def home_allowed(model: LayoutModel, rules: Sequence[Rule]) -> dict[str, frozenset[int]]:
    """Per tensor a layout rule names: the homes it may take (allowed by every rule on it, fitting a bank, and none
    when ``model`` forces it off chip)."""
    out: dict[str, frozenset[int]] = {}
    for r in rules:
        if isinstance(r, LayoutRule):
            out[r.tensor] = out.get(r.tensor, r.axes) & r.axes
    return {t: frozenset() if t in model.off_chip_tensors else frozenset(a for a in axes if model.fits(t, a))
            for t, axes in out.items()}


def find_conflict(model: LayoutModel, rules: Sequence[Rule]) -> tuple[str, list[KeyPath]] | None:
    """Why the layout constraints of ``model`` (:attr:`LayoutModel.home_allowed`) leave no mapping, and the paths of
    the rules involved; ``None`` when a mapping exists (the test is exact, see the module docstring)."""
    layout_rules: dict[str, list[LayoutRule]] = {}
    for r in rules:
        if isinstance(r, LayoutRule):
            layout_rules.setdefault(r.tensor, []).append(r)
    off_rules = {r.tensor: r for r in rules if isinstance(r, OffChipRule)}

    def names(rs: Sequence[Rule]) -> str:
        return ", ".join(r.label for r in rs)

    for t, rs in layout_rules.items():
        allowed = model.home_allowed.get(t, frozenset())
        if allowed:
            continue
        if t in model.off_chip_tensors:
            if t in off_rules:
                rs2: list[Rule] = [*rs, off_rules[t]]
                return (f"tensor '{t}' is held on chip by {names(rs)} but {off_rules[t].label} keeps it off chip",
                        [r.path for r in rs2])
            return (f"tensor '{t}' is held on chip by {names(rs)} but options.off_chip_tensors keeps it off chip",
                    [r.path for r in rs])
        common = frozenset.intersection(*(r.axes for r in rs))
        if not common:
            return f"no layout of tensor '{t}' is allowed by all of {names(rs)}", [r.path for r in rs]
        fp = ", ".join(f"{model.footprint(t, a)} bytes in layout {a}" for a in sorted(common))
        return (f"tensor '{t}' does not fit a bank ({model.bank_bytes} bytes) in the layout(s) {names(rs)} allow "
                f"({fp})", [r.path for r in rs])
    for o in model.ops:
        if model.allowed_choices(o):
            continue
        outs = model.workload.operators[o.index].outputs
        rs = [r for t in outs for r in layout_rules.get(t, [])]
        writes = sorted({(t, a) for ch in o.choices for t, a in zip(outs, ch.outputs, strict=True)})
        return (f"operator '{o.name}' ({o.kind}) cannot write its outputs in the layouts {names(rs)} allow "
                f"(its choices write {', '.join(f'{t}:{a}' for t, a in writes)})", [r.path for r in rs])
    return None


__all__ = ["KINDS", "LayoutRule", "OffChipRule", "Rule", "find_conflict", "home_allowed", "off_chip_names",
           "parse_rules"]
