"""Reuse of solved layers: warm starts from similar layers, within a run and across runs (seed 001, Chapter 5,
§5.3.1 "Warm-start", Figs. 5.8-5.11).

The seed keeps a *replay buffer* of the optimized mappings of the layers run so far; a new layer is compared with
them by *editing distance* over its loop bounds, and the mapping of the most similar one initializes the search
after (i) inheriting its order and parallelism and (ii) scaling its tile sizes to the new layer's bounds. Here:

* :func:`layer_distance` — the edit distance between two layers: one edit per loop dimension whose bound differs
  (a dimension only one layer has counts as differing), one for a different operator kind and one per operand
  whose index projection (stride, dilation) or word size differs; ties are broken by how far the bounds are apart
  (the sum of ``|log2(a / b)|`` over the dimensions).
* :func:`adapt` — a mapping of one layer turned into a mapping of another on the same architecture: every loop
  order is kept (dimensions the target lacks dropped, new ones appended); the factors are kept slot by slot,
  innermost first, as far as they divide what is left of the target's bound (a spatial factor also within the
  room left on its axis), and the outermost level takes the rest — the seed's "multiply the C tile size by 2 at the
  outermost tiling level"; a second candidate also grows the spatial factors of the dimensions the source unrolled
  into the room left on their axes. Each candidate is brought into the target's constrained map space
  (:meth:`~dlaopt.formulations.mapping.heuristics.SpaceRules.project`) and repaired to fit the buffers
  (:func:`~dlaopt.formulations.mapping.heuristics.fit_capacity`); the best valid one by the cost model is returned.
* :class:`ReplayBuffer` — solved layers (layer, mapping, PE-array shape, value) and, for a new layer, the adapted
  mappings of the most similar ones (:meth:`ReplayBuffer.seeds`).
* :func:`reuse_plan` and :func:`map_planned` — the order a run solves its layers in so that each can start from a
  similar finished one, with as much parallelism as solving them all at once: waves of as many layers as there are
  workers; the first wave is the layers already solved (from the on-disk cache, :mod:`.layer_cache`) or, without
  any, layers far apart from each other; each later wave takes the layers closest to what earlier waves hold, and
  each layer's *parent* (the layer it starts from) is its most similar layer of an earlier wave. The parent is fixed
  by the plan, not by which worker finishes first, so a run is as deterministic as without reuse. A layer runs as
  soon as its parent is done, in worker processes that die with this one.

The chapter's with/without comparison is measured by :mod:`dlaopt.experiments.reuse`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch
from dlaopt.formulations.mapping.exhaustive import best_of
from dlaopt.formulations.mapping.heuristics import (
    Limits,
    Roots,
    SpaceRules,
    _primes,
    complete_mapping,
    fit_capacity,
)
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.formulations.mapping.space import LayerSpace
from dlaopt.solvers.processes import DONE, NOT_STARTED, RUNNING, kill_pool, process_pool

if TYPE_CHECKING:
    from dlaopt.formulations.mapping.space import ArchChoice

Seed = tuple[str, Mapping]  # (label, mapping): a named warm start, as the exact method's ``seeds``


# ================================================================================================ similarity
def layer_distance(a: LoopNest, b: LoopNest) -> tuple[int, float]:
    """``(edits, spread)``: the edit distance between the two layers (see the module docstring) and, to break ties,
    the sum over dimensions of ``|log2(bound_a / bound_b)|`` (a dimension one layer lacks has bound 1 there)."""
    dims = dict.fromkeys((*a.dims, *b.dims))
    edits = sum(1 for d in dims if a.sizes.get(d) != b.sizes.get(d))
    edits += a.kind != b.kind
    for oa, ob in zip(a.operands, b.operands, strict=True):
        edits += (oa.coords, oa.word_bytes) != (ob.coords, ob.word_bytes)
    spread = sum(abs(math.log2(a.sizes.get(d, 1) / b.sizes.get(d, 1))) for d in dims)
    return edits, spread


# ================================================================================================ adaptation
def _fill_spatial(nest: LoopNest, arch: MappingArch, m: Mapping, source: Mapping) -> Mapping:
    """``m`` with the spatial factors of the dimensions ``source`` unrolls on each axis grown, a prime at a time
    taken from the outermost level, while the axis has room (innermost axes first)."""
    slots = arch.slots()
    top = arch.temporal_slot(arch.top)
    fs = {d: list(f) for d, f in m.factors.items()}
    for k, s in enumerate(slots):
        if s.kind != SPATIAL:
            continue
        dims = [d for d in nest.dims if d in source.factors and k < len(source.factors[d])
                and source.factors[d][k] > 1]
        grown = True
        while grown:
            grown = False
            used = math.prod(fs[d][k] for d in nest.dims)
            for d in dims:
                p = next((p for p in _primes(fs[d][top]) if used * p <= s.size), None) if fs[d][top] > 1 else None
                if p is not None:
                    fs[d][k] *= p
                    fs[d][top] //= p
                    grown = True
                    break
    return Mapping({d: tuple(f) for d, f in fs.items()}, m.orders)


def adapt_candidates(mapping: Mapping, target: LoopNest, arch: MappingArch, *, space: LayerSpace | None = None,
                     roots: Roots = None, capacity_limits: Limits = None) -> list[Mapping]:
    """The structurally valid, in-space, capacity-repaired adaptations of ``mapping`` to ``target`` on ``arch``
    (see the module docstring; at most two, duplicates removed). ``space``: the target's constrained map space
    (one of its ``choices``; its ``archs`` are the caller's business, ``arch`` is the one to map on)."""
    base = complete_mapping(target, arch, mapping.factors, mapping.orders)
    cands = [base, _fill_spatial(target, arch, base, mapping)]
    rules = SpaceRules(target, arch, space, roots=roots, capacity_limits=capacity_limits) if (
        space is not None and space.constrained) else None
    out: list[Mapping] = []
    for c in cands:
        m: Mapping | None = c
        if rules is not None:
            m = rules.project(c)
            m = None if m is None else rules.fit_capacity(m)
        else:
            m = fit_capacity(target, arch, c, roots=roots, capacity_limits=capacity_limits)
        if m is None or mapping_errors(target, arch, m) or (rules is not None and not rules.ok(m)):
            continue
        if m not in out:
            out.append(m)
    return out


def adapt(mapping: Mapping, source: LoopNest, target: LoopNest, arch: MappingArch, objective: str = "edp", *,
          space: LayerSpace | None = None, roots: Roots = None, capacity_limits: Limits = None) -> Mapping | None:
    """``mapping`` (of ``source``) adapted to ``target`` on ``arch``: the best of :func:`adapt_candidates` that the
    cost model finds valid, by ``objective``; ``None`` when none is (a level that cannot hold one element of its
    operands, or a constrained space the projection cannot reach). A mapping of an identical layer is returned as
    is when it is valid (and in the space)."""
    del source  # the factors carry what the adaptation needs; kept in the signature for the reader
    return best_of(adapt_candidates(mapping, target, arch, space=space, roots=roots, capacity_limits=capacity_limits),
                   target, arch, objective, roots=roots, capacity_limits=capacity_limits)


def _choice_for(space: LayerSpace, shape: tuple[int, int] | None) -> list[tuple[LayerSpace, ArchChoice]]:
    """The (alternative, architecture choice) pairs of ``space`` a mapping made for PE-array ``shape`` is offered
    to: those of the same shape, else every one."""
    runs = [(alt, c) for alt in space.choices for c in alt.archs]
    same = [(alt, c) for alt, c in runs if c.shape == shape]
    return same or runs


def adapt_to_space(mapping: Mapping, shape: tuple[int, int] | None, source: LoopNest, target: LoopNest,
                   space: LayerSpace, objective: str) -> list[tuple[Mapping, tuple[int, int] | None]]:
    """:func:`adapt` to each architecture choice of ``target``'s space that suits ``shape`` (distinct mappings,
    with the shape of the choice each is for)."""
    out: list[tuple[Mapping, tuple[int, int] | None]] = []
    for alt, choice in _choice_for(space, shape):
        m = adapt(mapping, source, target, choice.arch, objective, space=alt if space.constrained else None)
        if m is not None and all(m != x for x, _ in out):
            out.append((m, choice.shape))
    return out


# ================================================================================================ replay buffer
@dataclass(frozen=True)
class Solved:
    """A layer solved before: its mapping (for PE-array ``shape``), objective ``value`` and where it came from."""

    nest: LoopNest
    mapping: Mapping
    shape: tuple[int, int] | None = None
    value: float | None = None
    origin: str = "replay"


class ReplayBuffer:
    """The seed's replay buffer: solved layers of one architecture and objective, searched by similarity."""

    def __init__(self) -> None:
        self.entries: list[Solved] = []

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entry: Solved) -> None:
        self.entries.append(entry)

    def nearest(self, target: LoopNest, k: int = 1) -> list[Solved]:
        """The ``k`` entries most similar to ``target`` (:func:`layer_distance`; ties: the earliest added)."""
        ranked = sorted(range(len(self.entries)), key=lambda i: (layer_distance(self.entries[i].nest, target), i))
        return [self.entries[i] for i in ranked[:k]]

    def seeds(self, target: LoopNest, space: LayerSpace, objective: str, k: int = 1) -> list[Seed]:
        """The adapted mappings of the ``k`` most similar entries (:func:`adapt_to_space`), labelled
        ``"<origin>:<layer>"``."""
        out: list[Seed] = []
        for e in self.nearest(target, k):
            for m, _ in adapt_to_space(e.mapping, e.shape, e.nest, target, space, objective):
                if all(m != x for _, x in out):
                    out.append((f"{e.origin}:{e.nest.name}", m))
        return out


# ================================================================================================ plan and schedule
def reuse_plan(nests: Sequence[LoopNest], done: Sequence[int] = (), workers: int = 1
               ) -> tuple[list[int], list[int | None]]:
    """``(order, parent)``: the order to start the layers not in ``done`` in, and per layer the index of the layer
    it starts from (``None``: none, a cold start; layers in ``done`` have ``None`` too). Waves of ``workers``
    layers (see the module docstring): without ``done``, the first wave is layer 0 and the layers farthest from the
    ones chosen; each later layer picks, among those not planned, the closest to the layers of earlier waves, whose
    most similar becomes its parent. Deterministic (ties: the lower index)."""
    n = len(nests)
    w = max(1, workers)
    dist = [[layer_distance(nests[i], nests[j]) for j in range(n)] for i in range(n)]
    parent: list[int | None] = [None] * n
    available = sorted(set(done))
    todo = [i for i in range(n) if i not in set(done)]
    order: list[int] = []
    if not available and todo:
        wave = [todo[0]]
        while len(wave) < min(w, len(todo)):
            rest = [i for i in todo if i not in wave]
            wave.append(max(rest, key=lambda i: (min(dist[i][j] for j in wave), -i)))
        order.extend(wave)
        available = list(wave)
        todo = [i for i in todo if i not in wave]
    while todo:
        wave = []
        for _ in range(min(w, len(todo))):
            i = min(todo, key=lambda i: (min(dist[i][j] for j in available), i))
            parent[i] = min(available, key=lambda j: (dist[i][j], j))
            wave.append(i)
            todo.remove(i)
        order.extend(wave)
        available.extend(wave)
    return order, parent


def map_planned(fn: Callable[..., Any], args: list[tuple], order: Sequence[int], parent: Sequence[int | None],
                extra: Callable[[int, list[Any]], Any], workers: int, deadline: float | None = None,
                grace: float = 1.0, results: list[Any] | None = None) -> tuple[list[Any], list[str]]:
    """``fn(*args[i], extra(i, results))`` for every ``i`` in ``order``, each started once its ``parent`` (if any)
    has answered — ``extra`` is computed in this process from the answers so far, e.g. the warm starts adapted from
    the parent's mapping. ``results`` may hold answers known beforehand (their indices are left out of ``order``).
    In worker processes (:func:`~dlaopt.solvers.processes.process_pool`) when ``workers > 1``. A deadline
    (``time.monotonic()``) as :func:`~dlaopt.solvers.processes.map_until`: nothing starts after it, an answer not in
    by ``deadline + grace`` is ``None`` and the workers are killed. The states say, per index, ``done``,
    ``running`` or ``not_started`` (indices not in ``order`` are ``done``)."""
    n = len(args)
    out: list[Any] = list(results) if results is not None else [None] * n
    states = [DONE if i not in set(order) else NOT_STARTED for i in range(n)]
    answered = {i for i in range(n) if i not in set(order)}
    if workers <= 1 or len(order) <= 1:
        for i in order:  # the plan order has every parent first
            if deadline is not None and time.monotonic() >= deadline:
                break
            out[i] = fn(*args[i], extra(i, out))
            states[i] = DONE
        return out, states
    running: dict[Future, int] = {}
    pending = list(order)
    pool = None
    try:
        pool = process_pool(max(1, min(workers, len(order))))
        while pending or running:
            late = deadline is not None and time.monotonic() >= deadline
            while not late and pending and len(running) < workers:
                i = next((i for i in pending if parent[i] is None or parent[i] in answered), None)
                if i is None:
                    break
                pending.remove(i)
                running[pool.submit(fn, *args[i], extra(i, out))] = i
                states[i] = RUNNING
            if not running:
                break
            timeout = None if deadline is None else max(0.0, deadline + grace - time.monotonic())
            done, _ = wait(list(running), timeout=timeout, return_when=FIRST_COMPLETED)
            for f in done:
                i = running.pop(f)
                exc = f.exception()
                if exc is not None:
                    raise exc
                out[i] = f.result()
                states[i] = DONE
                answered.add(i)
            if not done:  # deadline + grace passed with answers still out
                break
    except BaseException:
        if pool is not None:
            kill_pool(pool)
        raise
    assert pool is not None
    if running:
        kill_pool(pool)
    else:
        pool.shutdown(wait=True)
    return out, states


__all__ = ["ReplayBuffer", "Seed", "Solved", "adapt", "adapt_candidates", "adapt_to_space",
           "layer_distance", "map_planned", "reuse_plan"]
