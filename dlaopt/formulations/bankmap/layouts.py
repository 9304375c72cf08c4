r"""The choice model of memory-bank mapping (seed 002 §2.2): layouts, operator choices, and the solution type.

Banks
    The on-chip memory has ``B`` banks of ``bank_bytes`` each, with disjoint address spaces; bank ``b`` feeds one
    part of the compute array (one row of a systolic array). A tensor's **layout** is one of its axes, the *bank
    axis* ``a``: the element with index ``i`` along ``a`` lives in bank ``i mod B``; the other axes (and ``i // B``)
    address the element inside its bank. The per-bank footprint of tensor ``t`` in layout ``a`` is
    ``ceil(dim_a / B) · bytes_t / dim_a``; ``t`` **fits on chip** in layout ``a`` iff that is at most ``bank_bytes``
    (each tensor is judged alone: the model has no cross-tensor capacity constraint).

Choices
    Every operator has a set of :class:`Choice` s. A choice fixes the layout of each output and, per input position,
    either a required layout or ``None`` ("any": no requirement, the operand is read in whatever layout it is
    stored in).

    * ``conv2d``: input axis 1 (channels), weight axis 1 (input channels per group), output axis 1 (output
      channels) — one choice. ``depthwise_conv2d``: the weight ``(C·mult, 1, R, S)`` has one input channel per
      group, so its bank axis is **axis 0** (the per-group channel, which is what pairs with the input channel);
      input and output axis 1 as for conv2d.
    * ``matmul`` ``a (..., M, K) × b (..., K, N)``: ``a``'s last axis (contraction), ``b``'s axis ``-2``, the
      output's last axis (output features) — one choice.
    * ``pool`` (windowed or global): input and output axis 1 — one choice.
    * ``elementwise`` / ``activation`` / ``softmax`` / ``norm``: one choice per output axis ``a``. Every input
      requires the axis aligned with ``a`` by numpy broadcasting (``a - (rank_out - rank_in)``), except inputs that
      broadcast along it (the axis is missing, or has extent 1 where the output's is larger), which require nothing.
      ``norm``'s scale/shift inputs require nothing.
    * ``transpose``: one choice per input axis ``i``; the output layout is its image ``perm.index(i)``.
    * ``reshape``: a *carry* choice ``i → j`` for every input axis ``i`` whose index is preserved — output axis
      ``j`` has the same extent and the same product of the extents before it (then the index along ``i`` equals the
      index along ``j`` for every element, so every element stays in its bank). The rule is sufficient, not
      necessary (splitting an axis whose inner factor is a multiple of ``B`` also keeps banks; not modelled).
    * ``slice``: axis ``a`` carries iff output index ``j`` and input index ``start + step·j`` are congruent mod ``B``
      for every ``j``, i.e. ``start ≡ 0 (mod B)`` and (``step ≡ 1 (mod B)`` or one element is kept along ``a``);
      an axis that is not sliced (start 0, step 1) always carries. Carry choice: input ``a`` → output ``a``.
    * ``split`` / ``concat`` along axis ``k``: every axis ``≠ k`` carries (all operands in that axis); ``k``
      carries iff every part's offset along ``k`` is a multiple of ``B`` (part ``p`` index ``j`` ↔ whole index
      ``offset_p + j``).
    * ``tile`` / ``repeat``: an axis carries iff its index map preserves ``i mod B`` for every element: untouched
      axes always; ``tile`` with ``reps > 1`` along ``a`` iff ``dim_a ≡ 0 (mod B)`` (output ``j`` reads
      ``j mod dim_a``); ``repeat`` by ``r > 1`` along ``a`` only when ``B == 1`` (output ``j`` reads ``j // r``).
      Axes prepended by ``tile`` carry nothing.
    * Data-movement kinds (``reshape`` / ``slice`` / ``split`` / ``concat`` / ``tile`` / ``repeat``, and any kind
      this module does not know) also get one **free** choice per output axis (every output in that axis, every
      input ``None``): the operator moves its data itself, so it may write any layout. Free choices carry no cost of
      their own in the objective (as specified); ``transpose`` has no free choice.
    * Graph inputs and weights (tensors no operator produces) are loaded from main memory: their *home* layout is
      chosen by the method, at no cost.

Forced off-chip tensors
    :attr:`LayoutModel.off_chip_tensors` names produced tensors that live in main memory between their producer and
    their consumers whatever the mapping (e.g. decided by a tensor-pinning stage run before bank mapping; instance
    option ``off_chip_tensors``). Such a tensor is never *resident*: it spills and every relayout copy of it is an
    off-chip copy, in every layout; bank mapping still chooses its layout (its producer's choice). Every solution must
    list it in :attr:`BankMapping.off_chip` (the evaluator reports a violation otherwise). Free tensors cannot be
    forced (they are loaded from main memory by every mapping already and never spill).

Layout constraints
    :attr:`LayoutModel.home_allowed` gives, for a tensor a user constraint holds on chip in given layouts
    (constraint kinds ``layout`` and ``layouts``, see :mod:`dlaopt.formulations.bankmap.constraints`), the home
    layouts it may take: those the constraints allow and it fits a bank in (none when it is forced off chip). Such a
    tensor is resident: no method lists it in :attr:`BankMapping.off_chip`. Only the operator choices whose outputs
    are all in allowed layouts (:meth:`LayoutModel.allowed_choices`) and the allowed homes of free tensors
    (:meth:`LayoutModel.allowed_homes`) are open to the methods; consumers still read copies in other layouts.
    :attr:`LayoutModel.constrained_off_chip` marks the forced off-chip tensors that an ``off_chip`` constraint (not
    the option) forces: the evaluator names that constraint when a mapping omits one.

Costs (see :mod:`dlaopt.formulations.bankmap.evaluate`)
    A tensor's **home** layout is what its producer's choice writes (or the chosen one for a free tensor). For every
    distinct layout ``R ≠ home`` some consumer requires, one **relayout copy** of ``bytes_t`` is made: **on chip** if
    ``t`` is resident (it fits in ``home`` and is not forced off chip) and fits in ``R``, otherwise **off chip**
    (through main memory). A *produced* tensor that is not resident **spills**: ``bytes_t`` written plus ``bytes_t``
    read back per consuming operator (a mapping may also keep a resident-capable tensor off chip through
    :attr:`BankMapping.off_chip`, as ``local`` does; the evaluator charges it the same way). Free tensors never
    spill (their load from main memory is compulsory and the same for every mapping).
    Objective = on-chip copy bytes + ``w`` · (off-chip copy bytes + spill bytes).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind

DEFAULT_OFFCHIP_WEIGHT = 4.0
"""Default ``w``: an off-chip byte costs four on-chip bytes. An off-chip relayout crosses the DRAM interface twice
(store, then load) and DRAM bandwidth is typically at most half the aggregate bandwidth of a bank-to-bank copy on
chip, so ``2 × 2 = 4`` is a conservative ratio; spills are charged the same way (their bytes already count the write
and every read)."""

RESTRICTED_KINDS = frozenset({"conv2d", "depthwise_conv2d", "matmul", "pool"})
"""Kinds whose layouts are imposed by the compute array (one choice each)."""
ALIGNED_KINDS = frozenset({"elementwise", "activation", "softmax", "norm"})
"""Kinds with one choice per output axis and all non-broadcast operands aligned with it."""
MOVEMENT_KINDS = frozenset({"reshape", "slice", "split", "concat", "tile", "repeat"})
"""Data-movement kinds with carry choices plus free choices."""


class BankMappingError(ValueError):
    """An invalid bank configuration, workload or mapping."""


@dataclass(frozen=True)
class Choice:
    """One way to lay out an operator's operands.

    ``outputs[k]`` is the layout (bank axis) of output ``k``; ``inputs[p]`` the layout input position ``p`` must be
    read in, or ``None`` for no requirement. ``kind`` is ``"fixed"`` (restricted operators), ``"axis"`` (aligned
    kinds), ``"carry"`` (a data-movement operator whose index map keeps every element in its bank) or ``"free"``
    (a data-movement operator writing a layout of its own choice).
    """

    label: str
    outputs: tuple[int, ...]
    inputs: tuple[int | None, ...]
    kind: str = "carry"

    @property
    def free(self) -> bool:
        return self.kind == "free"


@dataclass(frozen=True)
class OpLayouts:
    """The choices of one operator (``index`` in the schedule)."""

    index: int
    name: str
    kind: str
    choices: tuple[Choice, ...]

    @property
    def restricted(self) -> bool:
        return len(self.choices) == 1


@dataclass(frozen=True)
class BankMapping:
    """A solution: ``choices[op]`` indexes the operator's :attr:`OpLayouts.choices`; ``homes[t]`` is the home layout
    (axis) of every free tensor ``t`` (graph inputs and weights that some operator reads); ``off_chip`` names produced
    tensors the mapping writes to main memory between their producer and their consumers even though they fit on
    chip (the ``local`` baseline keeps an output on chip only for the next operator); it must include the model's
    :attr:`LayoutModel.off_chip_tensors`."""

    choices: Mapping[str, int]
    homes: Mapping[str, int] = field(default_factory=dict)
    off_chip: frozenset[str] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        return {"choices": dict(self.choices), "homes": dict(self.homes), "off_chip": sorted(self.off_chip)}


@dataclass(frozen=True)
class LayoutModel:
    """The choice model of a workload on ``banks`` banks of ``bank_bytes`` each. Built by :func:`build_layout_model`.
    ``off_chip_tensors``: produced tensors forced off chip in every solution (see the module docstring)."""

    workload: Workload
    banks: int
    bank_bytes: int
    ops: tuple[OpLayouts, ...]
    tensor_names: tuple[str, ...]  # every tensor some operator touches, schedule order of first use
    free_tensors: tuple[str, ...]  # tensors no operator produces (inputs, weights), consumed by some operator
    off_chip_tensors: frozenset[str] = frozenset()  # produced tensors kept in main memory by every solution
    home_allowed: Mapping[str, frozenset[int]] = field(default_factory=dict)  # constrained tensors: on chip, these
    constrained_off_chip: frozenset[str] = frozenset()  # of off_chip_tensors: those an off_chip constraint forces

    # ------------------------------------------------------------------------------------------------ tensors
    def shape(self, t: str) -> tuple[int, ...]:
        return self.workload.tensors[t].shape

    def rank(self, t: str) -> int:
        return len(self.workload.tensors[t].shape)

    def nbytes(self, t: str) -> int:
        return self.workload.tensors[t].size_bytes

    def footprint(self, t: str, axis: int) -> int:
        """Bytes per bank of ``t`` in layout ``axis``: ``ceil(dim / B) · bytes / dim``."""
        dim = self.shape(t)[axis]
        return -(-dim // self.banks) * (self.nbytes(t) // dim)

    def fits(self, t: str, axis: int) -> bool:
        return self.footprint(t, axis) <= self.bank_bytes

    def resident(self, t: str, axis: int) -> bool:
        """Can ``t`` stay on chip with home layout ``axis``: it fits and is not forced off chip."""
        return t not in self.off_chip_tensors and self.fits(t, axis)

    def producer(self, t: str) -> int | None:
        return self.workload.producer.get(t)

    def consumers(self, t: str) -> list[int]:
        return self.workload.consumers.get(t, [])

    # ------------------------------------------------------------------------------------------------ costs
    def copy_cost(self, t: str, home: int, required: int, offchip_weight: float) -> float:
        """Cost of one relayout copy of ``t`` from ``home`` to ``required`` (0 when they are equal)."""
        if home == required:
            return 0.0
        on_chip = self.resident(t, home) and self.fits(t, required)
        return float(self.nbytes(t)) * (1.0 if on_chip else offchip_weight)

    def spill_bytes(self, t: str, home: int) -> int:
        """Off-chip bytes of ``t`` stored in ``home``: 0 when it is resident or a free tensor, else write + reads."""
        if self.producer(t) is None or self.resident(t, home):
            return 0
        return self.nbytes(t) * (1 + len(self.consumers(t)))

    # ------------------------------------------------------------------------------------------------ solutions
    def op_by_name(self) -> dict[str, OpLayouts]:
        return {o.name: o for o in self.ops}

    def chosen(self, mapping: BankMapping) -> list[Choice]:
        """The chosen :class:`Choice` of every operator, schedule order."""
        return [o.choices[mapping.choices[o.name]] for o in self.ops]

    def homes(self, mapping: BankMapping) -> dict[str, int]:
        """Home layout of every tensor in :attr:`tensor_names`."""
        out: dict[str, int] = dict(mapping.homes)
        for o in self.ops:
            ch = o.choices[mapping.choices[o.name]]
            for t, a in zip(self.workload.operators[o.index].outputs, ch.outputs, strict=True):
                out[t] = a
        return out

    def requirements(self, mapping: BankMapping) -> dict[str, set[int]]:
        """Distinct layouts each tensor is required in by its consumers."""
        req: dict[str, set[int]] = {t: set() for t in self.tensor_names}
        for o in self.ops:
            ch = o.choices[mapping.choices[o.name]]
            for t, r in zip(self.workload.operators[o.index].inputs, ch.inputs, strict=True):
                if r is not None:
                    req[t].add(r)
        return req

    def allowed_choices(self, o: OpLayouts) -> list[int]:
        """The choices of ``o`` open under the layout constraints: every output in a layout it may take."""
        if not self.home_allowed:
            return list(range(len(o.choices)))
        outs = self.workload.operators[o.index].outputs
        return [c for c, ch in enumerate(o.choices)
                if all(t not in self.home_allowed or a in self.home_allowed[t]
                       for t, a in zip(outs, ch.outputs, strict=True))]

    def allowed_homes(self, t: str) -> list[int]:
        """The home layouts free tensor ``t`` may take under the layout constraints."""
        return [a for a in range(self.rank(t)) if t not in self.home_allowed or a in self.home_allowed[t]]

    def n_combinations(self) -> int:
        """Number of distinct mappings (product of choice counts and free-tensor ranks)."""
        return math.prod(len(o.choices) for o in self.ops) * math.prod(self.rank(t) for t in self.free_tensors)


# ---------------------------------------------------------------------------------------------------- building
def _preserves(src: np.ndarray, banks: int) -> bool:
    """Does output index ``j`` reading input index ``src[j]`` keep ``j ≡ src[j] (mod B)`` for every ``j``?"""
    return bool(np.all(src % banks == np.arange(src.size) % banks))


def _free_choices(n_inputs: int, out_ranks: Sequence[int]) -> list[Choice]:
    rank = min(out_ranks)
    return [
        Choice(f"free->{a}", tuple(a for _ in out_ranks), (None,) * n_inputs, "free")
        for a in range(rank)
    ]


def _aligned_choices(op: Operator, shapes: Mapping[str, tuple[int, ...]]) -> list[Choice]:
    out = shapes[op.outputs[0]]
    r = len(out)
    choices = []
    for a in range(r):
        req: list[int | None] = []
        for p, t in enumerate(op.inputs):
            if op.kind == OpKind.NORM and p > 0:
                req.append(None)
                continue
            s = shapes[t]
            j = a - (r - len(s))
            req.append(None if j < 0 or (s[j] == 1 and out[a] != 1) else j)
        choices.append(Choice(f"axis{a}", (a,) * len(op.outputs), tuple(req), "axis"))
    return choices


def _reshape_choices(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[Choice]:
    choices = []
    pre_in = [math.prod(in_shape[:i]) for i in range(len(in_shape))]
    pre_out = [math.prod(out_shape[:j]) for j in range(len(out_shape))]
    for i, d in enumerate(in_shape):
        for j, e in enumerate(out_shape):
            if d == e and pre_in[i] == pre_out[j]:
                choices.append(Choice(f"carry{i}->{j}", (j,), (i,), "carry"))
    return choices + _free_choices(1, [len(out_shape)])


def _slice_choices(op: Operator, in_shape: tuple[int, ...], out_shape: tuple[int, ...], banks: int) -> list[Choice]:
    starts, steps = op.attrs["starts"], op.attrs["steps"]
    choices = [
        Choice(f"carry{a}", (a,), (a,), "carry")
        for a in range(len(in_shape))
        if _preserves(starts[a] + steps[a] * np.arange(out_shape[a]), banks)
    ]
    return choices + _free_choices(1, [len(out_shape)])


def _offsets_carry(sizes: Sequence[int], banks: int) -> bool:
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return all(_preserves(off + np.arange(sz), banks) for off, sz in zip(offsets, sizes, strict=True))


def _split_choices(op: Operator, in_shape: tuple[int, ...], n_out: int, banks: int) -> list[Choice]:
    k = op.attrs["axis"] % len(in_shape)
    choices = [
        Choice(f"carry{a}", (a,) * n_out, (a,), "carry")
        for a in range(len(in_shape))
        if a != k or _offsets_carry(op.attrs["sizes"], banks)
    ]
    return choices + _free_choices(1, [len(in_shape)] * n_out)


def _concat_choices(op: Operator, shapes: Sequence[tuple[int, ...]], banks: int) -> list[Choice]:
    rank = len(shapes[0])
    k = op.attrs["axis"] % rank
    choices = [
        Choice(f"carry{a}", (a,), (a,) * len(shapes), "carry")
        for a in range(rank)
        if a != k or _offsets_carry([s[k] for s in shapes], banks)
    ]
    return choices + _free_choices(len(shapes), [rank])


def _int_tuple(value: Any, rank: int) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * rank
    return tuple(int(v) for v in value)


def _tile_choices(op: Operator, in_shape: tuple[int, ...], out_shape: tuple[int, ...], banks: int) -> list[Choice]:
    """``numpy.tile`` semantics: output axis ``i + (rank_out - rank_in)`` index ``j`` reads input ``j mod dim_i``."""
    shift = len(out_shape) - len(in_shape)
    choices = []
    for i, d in enumerate(in_shape):
        o = i + shift
        if _preserves(np.arange(out_shape[o]) % d, banks):
            choices.append(Choice(f"carry{i}->{o}", (o,), (i,), "carry"))
    return choices + _free_choices(1, [len(out_shape)])


def _repeat_choices(op: Operator, in_shape: tuple[int, ...], out_shape: tuple[int, ...], banks: int) -> list[Choice]:
    """``numpy.repeat(x, r, axis=k)`` semantics: output index ``j`` along ``k`` reads ``j // r`` (or the matching
    run of a per-element repeat count); other axes untouched."""
    rank = len(in_shape)
    axis = op.attrs.get("axis")
    choices = []
    if axis is None or len(out_shape) != rank:
        return _free_choices(1, [len(out_shape)])
    k = int(axis) % rank
    reps = op.attrs.get("repeats", op.attrs.get("repeat", 1))
    counts = np.broadcast_to(np.asarray(reps, dtype=np.int64), (in_shape[k],))
    src_k = np.repeat(np.arange(in_shape[k]), counts)
    for a in range(rank):
        if a != k or _preserves(src_k, banks):
            choices.append(Choice(f"carry{a}", (a,), (a,), "carry"))
    return choices + _free_choices(1, [len(out_shape)])


def op_choices(op: Operator, shapes: Mapping[str, tuple[int, ...]], banks: int) -> list[Choice]:
    """The choices of one (validated) operator; see the module docstring for the rules."""
    kind = op.kind.value
    ins = [shapes[t] for t in op.inputs]
    outs = [shapes[t] for t in op.outputs]
    if kind == "conv2d":
        return [Choice("channels", (1,), (1, 1), "fixed")]
    if kind == "depthwise_conv2d":
        return [Choice("channels", (1,), (1, 0), "fixed")]
    if kind == "matmul":
        return [Choice("contraction", (len(outs[0]) - 1,), (len(ins[0]) - 1, len(ins[1]) - 2), "fixed")]
    if kind == "pool":
        return [Choice("channels", (1,), (1,), "fixed")]
    if kind in ALIGNED_KINDS:
        return _aligned_choices(op, shapes)
    if kind == "transpose":
        perm = list(op.attrs["perm"])
        return [Choice(f"carry{i}->{perm.index(i)}", (perm.index(i),), (i,), "carry") for i in range(len(ins[0]))]
    if kind == "reshape":
        return _reshape_choices(ins[0], outs[0])
    if kind == "slice":
        return _slice_choices(op, ins[0], outs[0], banks)
    if kind == "split":
        return _split_choices(op, ins[0], len(outs), banks)
    if kind == "concat":
        return _concat_choices(op, ins, banks)
    if kind == "tile":
        return _tile_choices(op, ins[0], outs[0], banks)
    if kind == "repeat":
        return _repeat_choices(op, ins[0], outs[0], banks)
    # an unknown kind: only free choices (it reads anything and writes what it is told) — always correct
    return _free_choices(len(ins), [len(s) for s in outs])


def off_chip_tensor_error(workload: Workload, name: Any) -> tuple[str, str] | None:
    """Why ``name`` cannot be forced off chip, as ``(message, expected)``; ``None`` when it can (a tensor some
    operator produces)."""
    expected = "the name of a tensor some operator produces"
    if not isinstance(name, str) or name not in workload.tensors:
        return f"no tensor named {name!r} in the workload", expected
    if name not in workload.producer:
        return (f"tensor '{name}' is a graph input or weight: it is loaded from main memory by every mapping and "
                f"never spills, so it cannot be forced off chip"), expected
    return None


def build_layout_model(workload: Workload, banks: int, bank_bytes: int,
                       off_chip_tensors: Collection[str] = ()) -> LayoutModel:
    """The choice model of ``workload`` on ``banks`` banks of ``bank_bytes`` bytes each, with the produced tensors
    ``off_chip_tensors`` forced off chip (:func:`off_chip_tensor_error` says why a name is refused)."""
    for name in off_chip_tensors:
        why = off_chip_tensor_error(workload, name)
        if why is not None:
            raise BankMappingError(f"off_chip_tensors: {why[0]}")
    if int(banks) < 1:
        raise BankMappingError(f"banks must be at least 1, got {banks}")
    if int(bank_bytes) < 1:
        raise BankMappingError(f"bank_bytes must be at least 1, got {bank_bytes}")
    shapes = {name: t.shape for name, t in workload.tensors.items()}
    names: dict[str, None] = {}
    ops = []
    for i, op in enumerate(workload.operators):
        for t in op.inputs + op.outputs:
            if not shapes[t]:
                raise BankMappingError(f"tensor '{t}' of operator '{op.name}' has rank 0; a layout needs an axis")
            names.setdefault(t)
        choices = op_choices(op, shapes, int(banks))
        if not choices:  # pragma: no cover - every rule above yields at least one choice
            raise BankMappingError(f"operator '{op.name}' ({op.kind.value}) has no layout choice")
        ops.append(OpLayouts(i, op.name, op.kind.value, tuple(choices)))
    free = tuple(t for t in names if t not in workload.producer)
    return LayoutModel(workload, int(banks), int(bank_bytes), tuple(ops), tuple(names), free,
                       frozenset(off_chip_tensors))
