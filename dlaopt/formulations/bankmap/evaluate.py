r"""The independent evaluator and the functional check of a bank mapping.

Evaluator (:func:`evaluate`)
    Recomputes everything from the chosen :class:`~dlaopt.formulations.bankmap.layouts.Choice` s and the graph —
    nothing from the MILP. Home layout of a produced tensor = what its producer's choice writes; of a free tensor
    (graph input or weight) = ``mapping.homes``. For every tensor and every distinct layout ``R ≠ home`` required by
    some consumer: one relayout copy of ``bytes_t``, **on chip** when the tensor is resident and fits a bank in both
    layouts (per-bank footprint ``ceil(dim / B) · bytes / dim ≤ bank_bytes``), else **off chip**. A produced tensor
    is resident unless it does not fit in its home layout, the mapping puts it in ``off_chip`` or the model forces it
    off chip (:attr:`~dlaopt.formulations.bankmap.layouts.LayoutModel.off_chip_tensors`, charged as off chip even
    when a mapping omits it); a tensor that is not resident **spills**: ``bytes_t`` written + ``bytes_t`` read back
    per consuming operator; free tensors never spill (their load is compulsory, the same for every mapping).
    Objective = on-chip copy bytes + ``w`` · (off-chip copy bytes + spill bytes).

Validation (:func:`validate_mapping`)
    Names and indices; every forced off-chip tensor listed in the mapping's ``off_chip``; operand counts and axes in
    range; the layout rules of the restricted kinds (conv2d,
    depthwise, matmul, pool) restated here; and **bank locality** of every non-free choice of the data-movement and
    aligned kinds: the operator is run (with numpy index semantics written here, not the choice builder's rules) on
    arrays holding each input element's bank under its required layout, and every output element must come out in
    the bank its output layout assigns it (for aligned kinds: every non-broadcast operand element feeds an output
    element in its own bank). Skipped for operands with more than ``element_limit`` elements.

User constraints (:func:`constraint_violations`)
    Checked from the records alone, one named violation (starting with the constraint's label) per broken one: a
    ``layout`` / ``layouts`` constraint holds its tensor on chip in an allowed bank axis — the home the mapping gives
    it (its producer's chosen output layout, or its home as a free tensor) must be one of the constraint's axes, the
    tensor must fit a bank in it (footprint as above) and neither the mapping's ``off_chip`` nor the model's forced
    set may hold it; an ``off_chip`` constraint needs its tensor in the mapping's ``off_chip``.

Functional check (:func:`functional_check`, small graphs)
    Every tensor lives in ``B`` bank arrays (one row per bank, elements of bank ``b`` = those with index ``≡ b
    (mod B)`` along the bank axis, in C order of the remaining index); free tensors are placed in their home layout,
    produced tensors in their producer's output layout; relayout copies are materialised (gather from the home
    banks, scatter into the new layout). Every operator reads each operand from the banks of the layout it requires
    (its home when it requires nothing) — a copy that was not made leaves it reading the home banks as if they were
    in the required layout, which scrambles the data — and runs with :func:`dlaopt.workload.execute.run_operator`.
    Every graph output, read back from its banks, must be bit-identical to a plain :func:`execute` of the graph.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlaopt.formulations.bankmap.constraints import OffChipRule, Rule
from dlaopt.formulations.bankmap.layouts import (
    DEFAULT_OFFCHIP_WEIGHT,
    BankMapping,
    BankMappingError,
    Choice,
    LayoutModel,
)
from dlaopt.workload.execute import execute, random_values, run_operator
from dlaopt.workload.operator import Operator
from dlaopt.workload.tensor import TensorRole

DEFAULT_ELEMENT_LIMIT = 1 << 22


@dataclass(frozen=True)
class Copy:
    """One relayout copy of ``tensor`` from its ``home`` layout to ``layout``."""

    tensor: str
    home: int
    layout: int
    nbytes: int
    on_chip: bool


@dataclass(frozen=True)
class Spill:
    """A produced tensor that does not fit on chip in its home layout: ``nbytes`` off-chip (write + reads)."""

    tensor: str
    home: int
    nbytes: int


@dataclass(frozen=True)
class BankReport:
    """What :func:`evaluate` says about a mapping."""

    objective: float
    on_chip_copy_bytes: int
    off_chip_copy_bytes: int
    spill_bytes: int
    offchip_weight: float
    copies: tuple[Copy, ...]
    spills: tuple[Spill, ...]
    homes: Mapping[str, int]
    violations: tuple[str, ...] = ()

    @property
    def feasible(self) -> bool:
        return not self.violations

    def metrics(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "on_chip_copy_bytes": self.on_chip_copy_bytes,
            "off_chip_copy_bytes": self.off_chip_copy_bytes,
            "spill_bytes": self.spill_bytes,
            "copies": len(self.copies),
            "on_chip_copies": sum(c.on_chip for c in self.copies),
            "off_chip_copies": sum(not c.on_chip for c in self.copies),
            "spilled_tensors": len(self.spills),
        }


# ================================================================================================ validation
def _expected_fixed(model: LayoutModel, op: Operator) -> tuple[tuple[int, ...], tuple[int | None, ...]] | None:
    """The one legal (outputs, inputs) layout of a restricted kind, restated from the seed: conv/pool read and write
    channels (axis 1), a conv weight is banked on its input-channel axis (axis 0 for depthwise, whose weight has one
    input channel per group), matmul reads ``a`` along its contraction (last) axis and ``b`` along axis -2 and
    writes the output-feature (last) axis."""
    kind = op.kind.value
    if kind == "conv2d":
        return (1,), (1, 1)
    if kind == "depthwise_conv2d":
        return (1,), (1, 0)
    if kind == "pool":
        return (1,), (1,)
    if kind == "matmul":
        ra, rb = model.rank(op.inputs[0]), model.rank(op.inputs[1])
        return (model.rank(op.outputs[0]) - 1,), (ra - 1, rb - 2)
    return None


def _banks_along(shape: tuple[int, ...], axis: int, banks: int) -> np.ndarray:
    """An array of ``shape`` holding each element's bank in layout ``axis``."""
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.broadcast_to((np.arange(shape[axis]) % banks).reshape(view), shape)


def _move(op: Operator, ins: Sequence[np.ndarray], out_shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray] | None:
    """numpy index semantics of the data-movement kinds (element copies only); ``None`` for other kinds."""
    a = op.attrs
    kind = op.kind.value
    if kind == "reshape":
        return [np.reshape(ins[0], out_shapes[0])]
    if kind == "transpose":
        return [np.transpose(ins[0], a["perm"])]
    if kind == "slice":
        return [ins[0][tuple(slice(s, e, t) for s, e, t in zip(a["starts"], a["ends"], a["steps"], strict=True))]]
    if kind == "split":
        return list(np.split(ins[0], np.cumsum(a["sizes"])[:-1], axis=a["axis"]))
    if kind == "concat":
        return [np.concatenate(ins, axis=a["axis"])]
    if kind == "tile":
        return [np.tile(ins[0], a["reps"])]
    if kind == "repeat":
        return [np.repeat(ins[0], a["repeats"], axis=a["axis"])]
    return None


def _bank_locality(model: LayoutModel, op: Operator, ch: Choice) -> str | None:
    """Why a non-free choice would move elements between banks (``None`` when it does not)."""
    kind = op.kind.value
    in_shapes = [model.shape(t) for t in op.inputs]
    out_shapes = [model.shape(t) for t in op.outputs]
    out_banks = [_banks_along(s, a, model.banks) for s, a in zip(out_shapes, ch.outputs, strict=True)]
    if kind in ("elementwise", "activation", "softmax", "norm"):
        out = out_shapes[0]
        for p, (s, r) in enumerate(zip(in_shapes, ch.inputs, strict=True)):
            if r is None:
                continue
            src = _banks_along(s, r, model.banks).reshape((1,) * (len(out) - len(s)) + s)
            if src.shape[len(out) - len(s) + r] == 1 and out[len(out) - len(s) + r] != 1:
                return f"input {p} is broadcast along its required layout {r}"
            if kind == "norm" and p > 0:
                return f"norm scale/shift input {p} has a requirement"
            if not np.array_equal(np.broadcast_to(src, out), out_banks[0]):
                return f"input {p} in layout {r} is not aligned with output layout {ch.outputs[0]}"
        return None
    required = [r for r in ch.inputs if r is not None]
    if not required or len(required) != len(ch.inputs):
        return "a carry choice must require every input's layout"
    moved = _move(op, [_banks_along(s, r, model.banks) for s, r in zip(in_shapes, required, strict=True)],
                  out_shapes)
    if moved is None:
        return f"kind {kind} has no carry semantics"
    for k, (got, want) in enumerate(zip(moved, out_banks, strict=True)):
        if got.shape != want.shape or not np.array_equal(got, want):
            return f"output {k} elements change banks (inputs {list(ch.inputs)} -> layout {ch.outputs[k]})"
    return None


def validate_mapping(model: LayoutModel, mapping: BankMapping, *,
                     element_limit: int = DEFAULT_ELEMENT_LIMIT) -> list[str]:
    """Everything wrong with ``mapping`` (empty when it is valid); see the module docstring."""
    out: list[str] = []
    wl = model.workload
    names = {o.name for o in model.ops}
    for extra in sorted(set(mapping.choices) - names):
        out.append(f"mapping chooses for unknown operator '{extra}'")
    for extra in sorted(set(mapping.homes) - set(model.free_tensors)):
        out.append(f"mapping gives a home to '{extra}', which is not a free tensor (graph input or weight) "
                   f"read by an operator")
    for t in sorted(t for t in model.off_chip_tensors - model.constrained_off_chip if t not in mapping.off_chip):
        out.append(f"tensor '{t}' must be off chip (options.off_chip_tensors) but the mapping keeps it resident")
    for t in model.free_tensors:
        h = mapping.homes.get(t)
        if h is None:
            out.append(f"free tensor '{t}' has no home layout")
        elif not (isinstance(h, int | np.integer) and 0 <= h < model.rank(t)):
            out.append(f"free tensor '{t}': home layout {h!r} is not an axis of its shape {list(model.shape(t))}")
    for o in model.ops:
        op = wl.operators[o.index]
        c = mapping.choices.get(o.name)
        if c is None:
            out.append(f"operator '{o.name}' has no choice")
            continue
        if not (isinstance(c, int | np.integer) and 0 <= c < len(o.choices)):
            out.append(f"operator '{o.name}': choice {c!r} is not one of 0..{len(o.choices) - 1}")
            continue
        ch = o.choices[int(c)]
        if len(ch.outputs) != len(op.outputs) or len(ch.inputs) != len(op.inputs):
            out.append(f"operator '{o.name}': choice '{ch.label}' has the wrong number of operands")
            continue
        bad = [t for t, a in zip(op.outputs, ch.outputs, strict=True) if not 0 <= a < model.rank(t)]
        bad += [t for t, r in zip(op.inputs, ch.inputs, strict=True) if r is not None and not 0 <= r < model.rank(t)]
        if bad:
            out.append(f"operator '{o.name}': choice '{ch.label}' names an axis outside tensor(s) {bad}")
            continue
        fixed = _expected_fixed(model, op)
        if fixed is not None:
            if (ch.outputs, ch.inputs) != fixed:
                out.append(f"operator '{o.name}' ({o.kind}): layouts {list(ch.inputs)} -> {list(ch.outputs)}, "
                           f"the compute array needs {list(fixed[1])} -> {list(fixed[0])}")
            continue
        if ch.free:
            if any(r is not None for r in ch.inputs):
                out.append(f"operator '{o.name}': free choice '{ch.label}' has an input requirement")
            continue
        if max(math.prod(model.shape(t)) for t in op.inputs + op.outputs) > element_limit:
            continue
        why = _bank_locality(model, op, ch)
        if why is not None:
            out.append(f"operator '{o.name}' ({o.kind}) choice '{ch.label}': {why}")
    return out


# ================================================================================================ evaluation
def _footprint(shape: tuple[int, ...], nbytes: int, axis: int, banks: int) -> int:
    dim = shape[axis]
    return math.ceil(dim / banks) * (nbytes // dim)


def evaluate(model: LayoutModel, mapping: BankMapping, offchip_weight: float = DEFAULT_OFFCHIP_WEIGHT, *,
             validate: bool = True, element_limit: int = DEFAULT_ELEMENT_LIMIT) -> BankReport:
    """Copies, spills and objective of ``mapping`` (see the module docstring). An invalid mapping (names or indices
    wrong) raises :class:`BankMappingError`; rule violations found by :func:`validate_mapping` (``validate=True``)
    are listed in :attr:`BankReport.violations`."""
    violations = validate_mapping(model, mapping, element_limit=element_limit) if validate else []
    wl = model.workload
    homes: dict[str, int] = {}
    required: dict[str, set[int]] = {}
    readers: dict[str, set[int]] = {}
    try:
        for t in model.free_tensors:
            homes[t] = int(mapping.homes[t])
        for o in model.ops:
            op = wl.operators[o.index]
            ch = o.choices[int(mapping.choices[o.name])]
            for t, a in zip(op.outputs, ch.outputs, strict=True):
                homes[t] = a
            for t, r in zip(op.inputs, ch.inputs, strict=True):
                readers.setdefault(t, set()).add(o.index)
                if r is not None:
                    required.setdefault(t, set()).add(r)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise BankMappingError(f"the mapping does not cover the workload: {exc!r}") from None
    B, cap = model.banks, model.bank_bytes
    copies: list[Copy] = []
    spills: list[Spill] = []
    for t, home in homes.items():
        tensor = wl.tensors[t]
        nbytes = tensor.size_bytes

        def fits(axis: int, shape: tuple[int, ...] = tensor.shape, nb: int = nbytes) -> bool:
            return _footprint(shape, nb, axis, B) <= cap

        resident = fits(home) and t not in mapping.off_chip and t not in model.off_chip_tensors
        for r in sorted(required.get(t, set()) - {home}):
            copies.append(Copy(t, home, r, nbytes, resident and fits(r)))
        if tensor.role.is_produced and not resident:
            spills.append(Spill(t, home, nbytes * (1 + len(readers.get(t, set())))))
    on = sum(c.nbytes for c in copies if c.on_chip)
    off = sum(c.nbytes for c in copies if not c.on_chip)
    sp = sum(s.nbytes for s in spills)
    return BankReport(
        objective=float(on) + float(offchip_weight) * float(off + sp),
        on_chip_copy_bytes=on,
        off_chip_copy_bytes=off,
        spill_bytes=sp,
        offchip_weight=float(offchip_weight),
        copies=tuple(copies),
        spills=tuple(spills),
        homes=homes,
        violations=tuple(violations),
    )


# ================================================================================================ user constraints
def constraint_violations(model: LayoutModel, mapping: BankMapping, rules: Sequence[Rule]) -> list[str]:
    """A violation, starting with the constraint's label, for every user constraint ``mapping`` breaks (the records
    of :mod:`dlaopt.formulations.bankmap.constraints`). Raises :class:`BankMappingError` when the mapping does not
    decide a constrained tensor's layout."""
    wl = model.workload
    out: list[str] = []
    for r in rules:
        t = r.tensor
        if isinstance(r, OffChipRule):
            if t not in mapping.off_chip:
                out.append(f"{r.label}: tensor '{t}' must stay off chip but the mapping keeps it on chip")
            continue
        home: int | None = None
        for o in model.ops:
            op = wl.operators[o.index]
            if t in op.outputs:
                try:
                    home = int(o.choices[int(mapping.choices[o.name])].outputs[op.outputs.index(t)])
                except (KeyError, IndexError, TypeError, ValueError) as exc:
                    raise BankMappingError(f"the mapping does not cover the workload: {exc!r}") from None
                break
        if home is None:
            if t not in mapping.homes:
                raise BankMappingError(f"the mapping gives tensor '{t}' no home layout")
            home = int(mapping.homes[t])
        axes = sorted(r.axes)
        want = f"axis {axes[0]}" if len(axes) == 1 else f"one of the axes {axes}"
        if home not in r.axes:
            out.append(f"{r.label}: tensor '{t}' is laid out along axis {home}, the constraint allows {want}")
            continue
        tensor = wl.tensors[t]
        fp = _footprint(tensor.shape, tensor.size_bytes, home, model.banks)
        if fp > model.bank_bytes:
            out.append(f"{r.label}: tensor '{t}' does not fit a bank in layout {home} ({fp} > {model.bank_bytes} "
                       f"bytes), the constraint holds it on chip")
        elif t in mapping.off_chip or t in model.off_chip_tensors:
            out.append(f"{r.label}: tensor '{t}' is off chip, the constraint holds it on chip in {want}")
    return out


# ================================================================================================ functional check
@dataclass(frozen=True)
class FunctionalCheck:
    """The result of :func:`functional_check`: ``ok`` when every graph output matches bit for bit."""

    ok: bool
    outputs_checked: tuple[str, ...]
    mismatched: tuple[str, ...]
    copies_made: int
    copies_dropped: tuple[tuple[str, int], ...] = field(default_factory=tuple)


class _BankedMemory:
    """Bank arrays of every (tensor, layout) stored: one ``(B, capacity)`` array per pair, where the capacity is the
    largest per-bank element count over the layouts the tensor is stored or read in (so reading in a wrong layout
    scrambles data instead of failing). Unwritten words hold NaN (the smallest integer for integer data)."""

    def __init__(self, banks: int, layouts: Mapping[str, Collection[int]]) -> None:
        self.banks = banks
        self.used = layouts
        self.mem: dict[str, dict[int, np.ndarray]] = {}

    def _size(self, t: str, shape: tuple[int, ...]) -> tuple[int, int]:
        """(banks holding data, words per bank) over the layouts ``t`` is used in (banks past an axis' extent
        stay empty, so they are not allocated)."""
        n = math.prod(shape)
        rows = max(min(self.banks, shape[a]) for a in self.used[t])
        return rows, max(math.ceil(shape[a] / self.banks) * (n // shape[a]) for a in self.used[t])

    def place(self, t: str, arr: np.ndarray, axis: int) -> None:
        shape = arr.shape
        fill: Any = np.nan if np.issubdtype(arr.dtype, np.inexact) else np.iinfo(arr.dtype).min
        mem = np.full(self._size(t, shape), fill, dtype=arr.dtype)
        for b in range(min(self.banks, shape[axis])):
            part = np.take(arr, np.arange(b, shape[axis], self.banks), axis=axis).ravel()
            mem[b, :part.size] = part
        self.mem.setdefault(t, {})[axis] = mem

    def read(self, t: str, shape: tuple[int, ...], axis: int, stored: int) -> np.ndarray:
        """Read ``t`` as if laid out along ``axis`` from the banks of its copy in layout ``stored``."""
        mem = self.mem[t][stored]
        out = np.empty(shape, dtype=mem.dtype)
        for b in range(min(self.banks, shape[axis])):
            sub = list(shape)
            sub[axis] = len(range(b, shape[axis], self.banks))
            index: list[slice] = [slice(None)] * len(shape)
            index[axis] = slice(b, None, self.banks)
            out[tuple(index)] = mem[b, :math.prod(sub)].reshape(sub)
        return out

    def layouts(self, t: str) -> set[int]:
        return set(self.mem.get(t, {}))


def functional_check(model: LayoutModel, mapping: BankMapping, *, seed: int = 0,
                     values: Mapping[str, np.ndarray] | None = None,
                     drop_copies: Collection[tuple[str, int]] = ()) -> FunctionalCheck:
    """Run the workload through banked memory laid out per ``mapping`` and compare every graph output with a plain
    :func:`execute` (see the module docstring). ``drop_copies`` lists (tensor, layout) relayout copies *not* to
    make — to show that a missing copy is detected."""
    wl = model.workload
    report = evaluate(model, mapping, validate=False)
    homes = report.homes
    need: dict[str, list[int]] = {}
    for c in report.copies:
        need.setdefault(c.tensor, []).append(c.layout)
    vals = dict(values) if values is not None else random_values(wl, seed)
    reference = execute(wl, vals)
    used: dict[str, set[int]] = {t: {h} for t, h in homes.items()}
    for c in report.copies:
        used[c.tensor].add(c.layout)
    memory = _BankedMemory(model.banks, used)
    dropped = {(t, int(r)) for t, r in drop_copies}
    made = 0

    def store(t: str, arr: np.ndarray) -> None:
        nonlocal made
        home = homes[t]
        memory.place(t, arr, home)
        for r in need.get(t, []):
            if (t, r) in dropped:
                continue
            memory.place(t, memory.read(t, arr.shape, home, home), r)  # relayout copy: gather, scatter
            made += 1

    for t in model.free_tensors:
        store(t, np.asarray(vals[t]))
    for o, ch in zip(model.ops, model.chosen(mapping), strict=True):
        op = wl.operators[o.index]
        operands = []
        for t, r in zip(op.inputs, ch.inputs, strict=True):
            want = homes[t] if r is None else r
            stored = want if want in memory.layouts(t) else homes[t]
            operands.append(memory.read(t, model.shape(t), want, stored))
        for t, arr in zip(op.outputs, run_operator(op, operands), strict=True):
            store(t, arr)
    outputs = tuple(t for t in model.tensor_names if wl.tensors[t].role == TensorRole.OUTPUT)
    mismatched = []
    for t in outputs:
        got = memory.read(t, model.shape(t), homes[t], homes[t])
        ref = np.asarray(reference[t])
        if got.shape != ref.shape or not np.array_equal(got.astype(ref.dtype), ref, equal_nan=True):
            mismatched.append(t)
    return FunctionalCheck(not mismatched, outputs, tuple(mismatched), made, tuple(sorted(dropped)))
