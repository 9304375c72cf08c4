"""The two heuristic bank-mapping methods of seed 002 §2.2 / §3: ``local`` and ``propagate``.

``local`` (the paper's baseline, after Ding et al.: bank mapping per loop nest, no propagation)
    Every operator alone. Restricted operators (conv2d, depthwise, matmul, pool) take their one choice. An operator
    with several choices maximises its own bank parallelism: the choice whose (first) output layout has the largest
    extent, ties to the outermost axis; among choices with that output layout a carry choice (the operator keeps its
    data in place) beats a free one, then the first listed. A free tensor (graph input or weight) is stored in the
    layout its first consumer (schedule order) requires; when no consumer requires one, along its largest axis.

``propagate`` (the paper's global mapping)
    1. Fix the restricted operators.
    2. Propagate along the data dependences to a fixed point: sweep the schedule forwards, then backwards, again and
       again; an unfixed operator with an already-fixed neighbour (the producer of an input, a consumer of an
       output, or a weight some fixed operator reads) takes the choice of least cost against those neighbours — so
       a layout that avoids a copy when there is one; a conflict that cannot be avoided becomes a copy (counted by
       the evaluator). Cost against fixed neighbours: a relayout copy (on or off chip) of each input it would need
       in a new layout, of its outputs for every layout their fixed consumers require, and the spill of its outputs
       in the layout it writes. Ties: a carry choice before a free one, then the largest output extent, then the
       outermost axis. A connected part with no restricted operator is seeded by one operator's ``local`` choice.
    3. Free tensors take the home layout that minimises their copy cost given their consumers' requirements.
    4. The result is kept only if its objective is ``<=`` that of ``local``; otherwise it is improved by
       single-operator moves (one operator's choice or one free tensor's home, first improvement, repeated) until it
       is; if the moves get stuck above ``local``, ``local``'s mapping is returned (rare: 1 of 900 small random
       graphs; it makes ``propagate <= local`` hold on every graph). :class:`PropagationInfo` says which case
       happened. Steps 1-3 alone end above ``local`` when a greedy choice against one fixed neighbour forces copies
       further on (5 of those 900 graphs).

Layout constraints (:attr:`~dlaopt.formulations.bankmap.layouts.LayoutModel.home_allowed`)
    Both methods pick among the allowed choices only (:meth:`LayoutModel.allowed_choices`; ``propagate`` fixes an
    operator left with one allowed choice in step 1, as a restricted one) and the allowed homes of free tensors
    (for ``local``, the first requirement in schedule order it may take, else its largest allowed axis); a
    constrained tensor is held on chip, so ``local`` does not write it to main memory. An operator or free tensor
    with no allowed layout raises :class:`~dlaopt.formulations.base.HeuristicFailure`.

Forced off-chip tensors (:attr:`~dlaopt.formulations.bankmap.layouts.LayoutModel.off_chip_tensors`)
    Both methods list them in the mapping's ``off_chip`` (``local``: together with :func:`local_off_chip`). The
    costs ``propagate`` weighs come from :meth:`LayoutModel.copy_cost` / :meth:`LayoutModel.spill_bytes`, which
    already treat them as non-resident, so its choices account for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlaopt.formulations.bankmap.evaluate import evaluate
from dlaopt.formulations.bankmap.layouts import (
    DEFAULT_OFFCHIP_WEIGHT,
    BankMapping,
    Choice,
    LayoutModel,
    OpLayouts,
)
from dlaopt.formulations.base import HeuristicFailure

_EPS = 1e-9


def _objective(model: LayoutModel, mapping: BankMapping, w: float) -> float:
    return evaluate(model, mapping, w, validate=False).objective


def _parallelism_key(model: LayoutModel, o: OpLayouts, c: int) -> tuple[int, int, int, int]:
    """Smaller is better: largest extent of the first output's layout, outermost axis, carry before free, index."""
    ch = o.choices[c]
    out0 = model.workload.operators[o.index].outputs[0]
    a = ch.outputs[0]
    return (-model.shape(out0)[a], a, int(ch.free), c)


def _allowed(model: LayoutModel, o: OpLayouts) -> list[int]:
    """The allowed choices of ``o`` (:meth:`LayoutModel.allowed_choices`); none is a heuristic failure."""
    allowed = model.allowed_choices(o)
    if not allowed:
        raise HeuristicFailure(f"operator '{o.name}' ({o.kind}) has no choice that writes its outputs in an "
                               "allowed layout")
    return allowed


def _allowed_homes(model: LayoutModel, t: str) -> list[int]:
    homes = model.allowed_homes(t)
    if not homes:
        raise HeuristicFailure(f"tensor '{t}' has no allowed layout")
    return homes


def local_choice(model: LayoutModel, o: OpLayouts) -> int:
    """The choice ``local`` gives operator ``o`` (see the module docstring)."""
    return min(_allowed(model, o), key=lambda c: _parallelism_key(model, o, c))


def _largest_axis(model: LayoutModel, t: str) -> int:
    shape = model.shape(t)
    return min(_allowed_homes(model, t), key=lambda a: (-shape[a], a))


def local(model: LayoutModel, offchip_weight: float = DEFAULT_OFFCHIP_WEIGHT) -> BankMapping:
    """The ``local`` mapping (``offchip_weight`` is unused: local mapping ignores copy costs): each operator's own
    layouts, and outputs kept on chip only for the next operator (:func:`local_off_chip`)."""
    wl = model.workload
    choices = {o.name: local_choice(model, o) for o in model.ops}
    homes: dict[str, int] = {}
    free = set(model.free_tensors)
    for o in model.ops:
        ch = o.choices[choices[o.name]]
        for t, r in zip(wl.operators[o.index].inputs, ch.inputs, strict=True):
            if r is not None and t in free and t not in homes and r in model.allowed_homes(t):
                homes[t] = r
    for t in model.free_tensors:
        if t not in homes:
            homes[t] = _largest_axis(model, t)
    held = frozenset(model.home_allowed)  # held on chip by a layout constraint
    return BankMapping(choices, homes, (local_off_chip(model) - held) | model.off_chip_tensors)


def local_off_chip(model: LayoutModel) -> frozenset[str]:
    """The tensors the local baseline writes to main memory: produced tensors that the next operator in the
    schedule does not read ("keeps the output of an operator in on-chip memory if it will be directly used as the
    input of the next operator", seed 002 §3) — e.g. a residual block's input, read again by the add. Graph outputs
    nobody reads are written out by every method alike and not counted. (The model's forced off-chip tensors are
    added by :func:`local`, not here.)"""
    wl = model.workload
    read = {t for op in wl.operators for t in op.inputs}
    out = set()
    for k, op in enumerate(wl.operators):
        nxt = wl.operators[k + 1].inputs if k + 1 < len(wl.operators) else ()
        out.update(t for t in op.outputs if t in read and t not in nxt)
    return frozenset(out)


@dataclass(frozen=True)
class PropagationInfo:
    """How ``propagate`` ended: ``sweeps`` over the schedule, operators ``seeded`` by their local choice (parts with
    no restricted operator), the objective after propagation, single-operator ``moves`` made to reach ``local``'s
    objective, and whether ``local``'s mapping was returned instead (``fell_back``)."""

    sweeps: int
    seeded: int
    propagated_objective: float
    local_objective: float
    moves: int
    fell_back: bool


class _Propagation:
    def __init__(self, model: LayoutModel, w: float) -> None:
        self.model = model
        self.w = w
        self.wl = model.workload
        self.fixed: dict[int, int] = {}
        self.home: dict[str, int] = {}
        self.req: dict[str, set[int]] = {t: set() for t in model.tensor_names}
        self.free = set(model.free_tensors)

    def fix(self, o: OpLayouts, c: int) -> None:
        self.fixed[o.index] = c
        op = self.wl.operators[o.index]
        ch = o.choices[c]
        for t, a in zip(op.outputs, ch.outputs, strict=True):
            self.home[t] = a
        for t, r in zip(op.inputs, ch.inputs, strict=True):
            if r is not None:
                self.req[t].add(r)

    def has_fixed_neighbour(self, o: OpLayouts) -> bool:
        op = self.wl.operators[o.index]
        for t in op.inputs:
            if t in self.home or (t in self.free and self.req[t]):
                return True
        return any(self.req[t] for t in op.outputs)

    def cost(self, o: OpLayouts, ch: Choice) -> float:
        m, w = self.model, self.w
        op = self.wl.operators[o.index]
        total = 0.0
        added: dict[str, set[int]] = {}
        for t, r in zip(op.inputs, ch.inputs, strict=True):
            if r is None:
                continue
            have = self.req[t] | added.get(t, set())
            if r in have:
                continue
            added.setdefault(t, set()).add(r)
            h = self.home.get(t)
            if h is not None:
                total += m.copy_cost(t, h, r, w)
            elif t in self.free and have:  # a weight already read in other layouts: one more copy at least
                total += min(m.copy_cost(t, x, r, w) for x in have)
        for t, a in zip(op.outputs, ch.outputs, strict=True):
            total += sum(m.copy_cost(t, a, r, w) for r in self.req[t])
            total += w * m.spill_bytes(t, a)
        return total

    def best(self, o: OpLayouts) -> int:
        def key(c: int) -> tuple[float, int, int, int, int]:
            extent, axis, free, index = _parallelism_key(self.model, o, c)
            return (self.cost(o, o.choices[c]), free, extent, axis, index)

        return min(_allowed(self.model, o), key=key)

    def free_home(self, t: str) -> int:
        req = self.req[t]
        if not req:
            return _largest_axis(self.model, t)

        def key(h: int) -> tuple[float, int, int]:
            return (sum(self.model.copy_cost(t, h, r, self.w) for r in req), int(h not in req), h)

        return min(_allowed_homes(self.model, t), key=key)


def _improve(model: LayoutModel, mapping: BankMapping, w: float, target: float) -> tuple[BankMapping, float, int]:
    """Single-operator moves (first improvement) until the objective is ``<= target`` or no move improves."""
    choices, homes = dict(mapping.choices), dict(mapping.homes)
    current = _objective(model, mapping, w)
    moves = 0
    improved = True
    while current > target + _EPS * max(1.0, abs(target)) and improved:
        improved = False
        for o in model.ops:
            if o.restricted:
                continue
            for c in model.allowed_choices(o):
                if c == choices[o.name]:
                    continue
                trial = BankMapping({**choices, o.name: c}, homes, mapping.off_chip)
                obj = _objective(model, trial, w)
                if obj < current - _EPS * max(1.0, abs(current)):
                    choices[o.name], current, improved, moves = c, obj, True, moves + 1
        for t in model.free_tensors:
            for h in model.allowed_homes(t):
                if h == homes[t]:
                    continue
                trial = BankMapping(choices, {**homes, t: h}, mapping.off_chip)
                obj = _objective(model, trial, w)
                if obj < current - _EPS * max(1.0, abs(current)):
                    homes[t], current, improved, moves = h, obj, True, moves + 1
    return BankMapping(choices, homes, mapping.off_chip), current, moves


def propagate_detailed(model: LayoutModel,
                       offchip_weight: float = DEFAULT_OFFCHIP_WEIGHT) -> tuple[BankMapping, PropagationInfo]:
    """The ``propagate`` mapping and how it was reached (see the module docstring)."""
    w = float(offchip_weight)
    st = _Propagation(model, w)
    for o in model.ops:
        allowed = _allowed(model, o)
        if len(allowed) == 1:  # a restricted operator, or one the layout constraints leave one choice
            st.fix(o, allowed[0])
    sweeps = seeded = 0
    while len(st.fixed) < len(model.ops):
        changed = True
        while changed:
            changed = False
            sweeps += 1
            for order in (model.ops, tuple(reversed(model.ops))):
                for o in order:
                    if o.index in st.fixed or not st.has_fixed_neighbour(o):
                        continue
                    st.fix(o, st.best(o))
                    changed = True
        if len(st.fixed) < len(model.ops):
            first = next(o for o in model.ops if o.index not in st.fixed)
            st.fix(first, local_choice(model, first))
            seeded += 1
    homes = {t: st.free_home(t) for t in model.free_tensors}
    mapping = BankMapping({o.name: st.fixed[o.index] for o in model.ops}, homes, model.off_chip_tensors)
    base = local(model, w)
    local_obj = _objective(model, base, w)
    prop_obj = _objective(model, mapping, w)
    moves, fell_back = 0, False
    if prop_obj > local_obj + _EPS * max(1.0, abs(local_obj)):
        mapping, obj, moves = _improve(model, mapping, w, local_obj)
        if obj > local_obj + _EPS * max(1.0, abs(local_obj)):
            mapping, fell_back = base, True
    info = PropagationInfo(sweeps, seeded, prop_obj, local_obj, moves, fell_back)
    return mapping, info


def propagate(model: LayoutModel, offchip_weight: float = DEFAULT_OFFCHIP_WEIGHT) -> BankMapping:
    """The ``propagate`` mapping (see the module docstring)."""
    return propagate_detailed(model, offchip_weight)[0]


METHODS = {"local": local, "propagate": propagate}
"""The heuristic methods by name (``exact`` is :func:`dlaopt.formulations.bankmap.exact.solve_exact`)."""
