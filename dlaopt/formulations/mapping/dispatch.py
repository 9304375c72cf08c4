"""Running a per-layer worker over a workload's representative layers: in worker processes when more than one is
allowed, under a total time limit, and (lever ``reuse``, seed 001 §5.3.1) reusing solved layers — the on-disk layer
cache and the mappings of similar layers solved earlier in the run.

The per-layer workers themselves are in :mod:`.layers`; :class:`~dlaopt.formulations.mapping.problem.MappingProblem`
calls these with them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.space import LayerSpace
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE, RUNNING, map_until
from dlaopt.solvers.result import Status

DEADLINE_GRACE_S = 1.0  # how long past the deadline the parent waits for layers due by then before killing them
NOT_FINISHED_MESSAGE = "total time limit reached before it finished"


def _why_not(out: list[Any], states: Sequence[str]) -> list[str]:
    """Per layer: ``""`` for an answer, else why there is none (not started, or not finished by the deadline)."""
    return ["" if r is not None else NOT_FINISHED_MESSAGE if st == RUNNING else NOT_STARTED_MESSAGE
            for r, st in zip(out, states, strict=True)]


def map_layers(fn: Callable[..., Any], args: list[tuple], workers: int, deadline: float | None = None,
               reasons: list[str] | None = None) -> list[Any]:
    """``fn(*a)`` for every representative layer, in ``workers`` worker processes when more than one is allowed
    (workers that die with this process, killed when it is interrupted).

    With a ``deadline`` (``time.monotonic()``), a layer not started by then is not started and a layer whose worker
    has not answered shortly after it (:data:`DEADLINE_GRACE_S`) is abandoned and its worker killed: its entry is
    ``None`` (as is the answer of a worker that found the deadline passed before it started the layer). ``reasons``,
    when given, receives one string per layer: ``""`` for an answer, else why there is none
    (:data:`~dlaopt.solvers.processes.NOT_STARTED_MESSAGE` or :data:`NOT_FINISHED_MESSAGE`)."""
    if workers == 1 or len(args) <= 1:
        out = [None if deadline is not None and time.monotonic() >= deadline else fn(*a) for a in args]
        if reasons is not None:
            reasons[:] = ["" if r is not None else NOT_STARTED_MESSAGE for r in out]
        return out
    out, states = map_until(fn, args, workers, deadline, DEADLINE_GRACE_S)
    if reasons is not None:
        reasons[:] = _why_not(out, states)
    return out


@dataclass
class Reused:
    """What reuse did in one run (reported as the ``reuse`` metric)."""

    cache_dir: str | None
    from_cache: list[str] = field(default_factory=list)  # layers whose proven optimum came from the cache
    seeded: dict[str, list[str]] = field(default_factory=dict)  # layer -> labels of the warm starts it was given
    cache_writes: int = 0

    def metrics(self) -> dict[str, Any]:
        return {"cache_dir": self.cache_dir, "layers_from_cache": self.from_cache,
                "layers_warm_started": len(self.seeded), "warm_starts": self.seeded,
                "cache_writes": self.cache_writes}


def map_layers_reusing(fn: Callable[..., Any], args: list[tuple], reps: list[LoopNest], spaces: list[LayerSpace],
                       objective: str, *, workers: int, cache_dir: str | None, deadline: float | None,
                       reasons: list[str] | None, method: str, mip_rel_gap: float | None
                       ) -> tuple[list[Any], Reused]:
    """:func:`map_layers` with reuse of solved layers (seed 001 §5.3.1): ``fn(*args[i], seeds)`` per representative
    layer ``reps[i]`` (its map space ``spaces[i]``, mapped for ``objective``), ``seeds`` the named warm starts of
    layer ``i`` — its entry in the on-disk cache at ``cache_dir`` (none when ``None``; option ``cache_dir``,
    :mod:`.layer_cache`; re-evaluated by the cost model), the mapping of its parent in the plan adapted to it
    (:func:`~dlaopt.formulations.mapping.reuse.reuse_plan`: its most similar layer of an earlier wave), and, when it
    has neither, the most similar layer of the cache's entries on the same hardware. For the exact method
    (``method == "exact"``) a layer whose cached entry is a proven optimum within ``mip_rel_gap`` (the same key and a
    matching re-evaluation) is not solved again: its answer is the entry. Every answer with a mapping is written to
    the cache (each before the next layer starts, the rest at the end). Answers in the order of ``args``;
    ``reasons`` as :func:`map_layers`."""
    from dlaopt.formulations.mapping import layer_cache as lc
    from dlaopt.formulations.mapping.reuse import (
        ReplayBuffer,
        Solved,
        adapt_to_space,
        layer_distance,
        map_planned,
        reuse_plan,
    )

    cache = lc.LayerCache(cache_dir) if cache_dir else None
    info = Reused(str(cache_dir) if cache_dir else None)
    n = len(reps)
    known: list[Any] = [None] * n
    hits: list[lc.Hit | None] = [None] * n
    done: list[int] = []
    buffer = ReplayBuffer()
    for i, (nest, sp) in enumerate(zip(reps, spaces, strict=True)):
        if cache is None:
            break
        t = time.perf_counter()
        hit = lc.lookup(cache, nest, sp, objective)
        hits[i] = hit
        if hit is None:
            continue
        buffer.add(Solved(nest, hit.mapping, hit.shape, hit.value, "cache"))
        within = mip_rel_gap is not None and hit.gap is not None and hit.gap <= mip_rel_gap
        if method == "exact" and hit.proven and within:
            known[i] = {"mapping": hit.mapping, "shape": hit.shape, "objective": hit.value,
                        "model_objective": hit.value, "bound": hit.bound, "status": Status.OPTIMAL.value,
                        "time_s": time.perf_counter() - t, "warm_start_s": 0.0, "solves": 0,
                        "message": "", "model_stats": None, "warm_start": ("cache", hit.value), "trace": [],
                        "from_cache": True}
            done.append(i)
            info.from_cache.append(nest.name)
    order, parent = reuse_plan(reps, done, workers)
    similar: list[Any] | None = None

    def result_mapping(r: Any) -> tuple[Mapping | None, tuple[int, int] | None]:
        if r is None:
            return None, None
        if isinstance(r, dict):
            return r.get("mapping"), r.get("shape")
        return r[0], r[2]

    def seeds_for(i: int, out: list[Any]) -> tuple[tuple[str, Mapping], ...]:
        nonlocal similar
        nest, sp = reps[i], spaces[i]
        seeds: list[tuple[str, Mapping]] = []
        hit = hits[i]
        if hit is not None:
            seeds.append((f"cache ({hit.method})" if hit.method else "cache", hit.mapping))
        p = parent[i]
        if p is not None:
            m, shape = result_mapping(out[p])
            if m is not None:
                seeds.extend((f"reuse:{reps[p].name}", a) for a, _ in
                             adapt_to_space(m, shape, reps[p], nest, sp, objective))
        if not seeds and cache is not None:
            if similar is None:
                similar = [e for e in lc.similar_entries(cache, nest, sp, objective) if e.layer is not None]
            near = sorted(similar, key=lambda e: layer_distance(e.layer, nest))[:1]  # type: ignore[arg-type]
            for e in near:
                seeds.extend((f"cache:{e.layer.name}", a) for a, _ in  # type: ignore[union-attr]
                             adapt_to_space(e.mapping, e.shape, e.layer, nest, sp, objective))  # type: ignore[arg-type]
        seeds = [(name, m) for k, (name, m) in enumerate(seeds) if all(m != x for _, x in seeds[:k])]
        if seeds:
            info.seeded[nest.name] = [name for name, _ in seeds]
        return tuple(seeds)

    def extra(i: int, out: list[Any]) -> tuple[tuple[str, Mapping], ...]:
        # the answers written to the cache once they are in (the parent's answer is in when a child starts)
        for j, r in enumerate(out):
            if r is not None and j not in written:
                write(j, r)
        return seeds_for(i, out)

    written: set[int] = set(done)

    def write(j: int, r: Any) -> None:
        written.add(j)
        m, shape = result_mapping(r)
        if cache is None or m is None:
            return
        if isinstance(r, dict):
            if r.get("objective") is None:
                return
            ok = lc.store(cache, reps[j], spaces[j], objective, m, shape, float(r["objective"]), r.get("bound"),
                          r.get("status", ""), mip_rel_gap, r.get("completed_by") or method)
        else:
            arch = next((c.arch for alt in spaces[j].choices for c in alt.archs if c.shape == shape),
                        spaces[j].archs[0].arch)
            rep_ = evaluate_mapping(reps[j], arch, m)
            if not rep_.valid:
                return
            ok = lc.store(cache, reps[j], spaces[j], objective, m, shape, rep_.objective(objective), None,
                          "feasible", None, method)
        info.cache_writes += ok

    full_args = list(args)
    out, states = map_planned(fn, full_args, order, parent, extra, workers, deadline, DEADLINE_GRACE_S,
                              results=known)
    for j, r in enumerate(out):
        if r is not None and j not in written:
            write(j, r)
    if reasons is not None:
        reasons[:] = _why_not(out, states)
    return out, info


__all__ = ["DEADLINE_GRACE_S", "NOT_FINISHED_MESSAGE", "Reused", "map_layers", "map_layers_reusing"]
