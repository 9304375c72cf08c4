"""Tiling and loop-order selection (mapping): every conv / depthwise / matmul layer of a workload on one accelerator.

A solution maps each layer (layers of identical shape share a mapping problem and are solved once, in parallel over
worker processes). The evaluator is the cost model, :func:`~dlaopt.formulations.mapping.cost.evaluate_mapping`,
itself checked against a loop-nest simulator in the tests.

User constraints (``constraints:`` records of the kinds in :mod:`dlaopt.specs.mapping`, and those a ``flexibility``
class expands to) are resolved per layer into a constrained map space (:mod:`.constraints`, :mod:`.space`); layers
are grouped by identical loop nest *and* space. Every method keeps to the space — the exact model takes it as
rows, the enumeration filters by it, the heuristics project into it or report which constraint stopped them — and
the evaluator checks each record again with its own code (:mod:`.check`), naming every constraint a solution
breaks. A layer restricted to PE-array shapes records the shape its mapping uses (``pe_array_shape``).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Sequence
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dlaopt.errors import InputError
from dlaopt.formulations.base import Evaluation, ExactOutcome, HeuristicFailure, Method, MilpFormulation, Problem
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.check import constraint_violations, layer_arch, pe_shape
from dlaopt.formulations.mapping.constraints import Conflict, resolve
from dlaopt.formulations.mapping.cost import CostReport, evaluate_mapping
from dlaopt.formulations.mapping.exact import MODEL_TOLERANCE
from dlaopt.formulations.mapping.loopnest import LoopNest, require_mappable
from dlaopt.formulations.mapping.mapping import Mapping, loop_nest_text, mapping_errors
from dlaopt.formulations.mapping.space import ArchChoice, LayerSpace
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE, RUNNING, map_until
from dlaopt.solvers.result import SolveOptions, Status, TracePoint
from dlaopt.specs import mapping as opts
from dlaopt.specs.constraints import Constraint, KeyPath, selected

if TYPE_CHECKING:
    from dlaopt.hardware.model import Accelerator
    from dlaopt.io.instance import Instance

HEURISTIC_METHODS = ("random", "ga", "nvdla", "eyeriss", "shidiannao")
FILL_HEURISTICS = ("nvdla", "eyeriss", "shidiannao")  # cheap, deterministic: they complete a cut-short exact solve
REUSE_HEURISTICS = ("ga", "random")  # the heuristics a similar layer's mapping warm-starts (lever ``reuse``)
DEADLINE_GRACE_S = 1.0  # how long past the deadline the parent waits for layers due by then before killing them
NOT_FINISHED_MESSAGE = "total time limit reached before it finished"


@dataclass
class MappingData:
    nests: list[LoopNest]  # every layer to map, in workload order (padded as options and constraints say)
    groups: list[list[int]]  # indices of nests with an identical mapping problem (first = representative)
    arch: MappingArch  # the instance's accelerator, unconstrained
    objective: str
    options: dict[str, Any]
    source: str | None = None
    spaces: list[LayerSpace] = field(default_factory=list)  # per group: its constrained map space
    constraints: tuple[Constraint, ...] = ()  # the mapping constraints in force (file order, presets first)
    op_kinds: list[str] = field(default_factory=list)  # per nest: its operator kind (for the layer selectors)
    conflicts: list[Conflict] = field(default_factory=list)  # constraints that certainly cannot hold
    accelerator: Accelerator | None = None

    def __post_init__(self) -> None:
        if not self.spaces:
            self.spaces = [LayerSpace((ArchChoice(None, self.arch),), mac_units=self.arch.num_macs)
                           for _ in self.groups]

    @property
    def representatives(self) -> list[LoopNest]:
        return [self.nests[g[0]] for g in self.groups]

    def layer_constraints(self, i: int) -> list[Constraint]:
        """The constraints selecting nest ``i``."""
        kind = self.op_kinds[i] if i < len(self.op_kinds) else ""
        return [c for c in self.constraints if selected(c, self.nests[i].name, kind)]

    def layer_arch(self, name: str, shape: tuple[int, int] | None = None) -> MappingArch:
        """The architecture layer ``name`` is mapped on (its bypasses; the PE array resized to ``shape``)."""
        i = next(i for i, n in enumerate(self.nests) if n.name == name)
        cs = self.layer_constraints(i)
        return layer_arch(self.arch, self.accelerator, cs, shape) if cs or shape is not None else self.arch


@dataclass
class MappingSolution:
    mappings: dict[str, Mapping]  # layer name -> mapping
    per_layer: dict[str, dict[str, Any]] = field(default_factory=dict)  # solver notes per representative layer
    shapes: dict[str, tuple[int, int]] = field(default_factory=dict)  # layer name -> PE-array shape it uses


def aggregate(reports: list[CostReport], objective: str) -> float:
    if objective == "energy":
        return sum(r.energy_pj for r in reports)
    if objective == "latency":
        return sum(r.latency_cycles for r in reports)
    return sum(r.edp for r in reports)


def _aggregate_values(values: list[float], mult: list[int]) -> float:
    """Network value from per-unique-layer values (every objective is a sum over layers)."""
    return sum(k * v for k, v in zip(mult, values, strict=True))


def _workers(data: MappingData) -> int:
    w = int(data.options.get("workers", 0))
    if w <= 0:
        w = os.cpu_count() or 1
    return max(1, min(w, len(data.groups)))


def _map_layers(data: MappingData, fn: Callable[..., Any], args: list[tuple],
                deadline: float | None = None, reasons: list[str] | None = None) -> list[Any]:
    """``fn(*a)`` for every representative layer, in worker processes when more than one is allowed (workers that die
    with this process, killed when it is interrupted).

    With a ``deadline`` (``time.monotonic()``), a layer not started by then is not started and a layer whose worker
    has not answered shortly after it (:data:`DEADLINE_GRACE_S`) is abandoned and its worker killed: its entry is
    ``None`` (as is the answer of a worker that found the deadline passed before it started the layer). ``reasons``,
    when given, receives one string per layer: ``""`` for an answer, else why there is none
    (:data:`~dlaopt.solvers.processes.NOT_STARTED_MESSAGE` or :data:`NOT_FINISHED_MESSAGE`)."""
    workers = _workers(data)
    if workers == 1 or len(args) <= 1:
        out = [None if deadline is not None and time.monotonic() >= deadline else fn(*a) for a in args]
        if reasons is not None:
            reasons[:] = ["" if r is not None else NOT_STARTED_MESSAGE for r in out]
        return out
    out, states = map_until(fn, args, workers, deadline, DEADLINE_GRACE_S)
    if reasons is not None:
        reasons[:] = ["" if r is not None else NOT_FINISHED_MESSAGE if st == RUNNING else NOT_STARTED_MESSAGE
                      for r, st in zip(out, states, strict=True)]
    return out


# ---------------------------------------------------------------------------------------------- reuse of solved layers
def _reuse_on(data: MappingData) -> bool:
    """The ``reuse`` lever of ``exact_tuning`` (seed 001 §5.3.1's warm start; also the GA's and random mapper's)."""
    from dlaopt.specs.tuning import levers

    return levers(data.options, opts.EXACT_LEVERS).get("reuse", False)


def _run_layer_exact_seeded(nest: LoopNest, arch: MappingArch, objective: str, options: dict[str, Any],
                            solve_options: SolveOptions, solver: str, space: LayerSpace | None,
                            seeds: Sequence[tuple[str, Mapping]]) -> dict[str, Any] | None:
    """:func:`run_layer_exact` with warm starts ``seeds`` (a worker-process entry point)."""
    return run_layer_exact(nest, arch, objective, options, solve_options, solver, space, seeds=seeds)


def _run_layer_in_space_seeded(method: str, nest: LoopNest, space: LayerSpace, objective: str,
                               options: dict[str, Any], seed: int, time_limit: float | None,
                               initial: Sequence[tuple[str, Mapping]]
                               ) -> tuple[Mapping | None, float, tuple[int, int] | None, str]:
    """:func:`run_layer_in_space` with ``initial`` warm-start mappings for the mapper (GAMMA's first individuals,
    the random mapper's first samples); without any, exactly :func:`run_layer_in_space`."""
    if not initial:
        return run_layer_in_space(method, nest, space, objective, options, seed, time_limit)
    from dlaopt.formulations.mapping.heuristics import map_in_space

    t0 = time.perf_counter()
    if time_limit is not None and time_limit <= 0:
        return None, 0.0, None, NOT_STARTED_MESSAGE
    r = map_in_space(method, nest, space, objective, seed=seed, budget=_budget(method, options),
                     time_limit=time_limit, initial=[m for _, m in initial])
    return r.mapping, time.perf_counter() - t0, r.shape, r.reason


@dataclass
class _Reused:
    """What reuse did in one run (reported as the ``reuse`` metric)."""

    cache_dir: str | None
    from_cache: list[str] = field(default_factory=list)  # layers whose proven optimum came from the cache
    seeded: dict[str, list[str]] = field(default_factory=dict)  # layer -> labels of the warm starts it was given
    cache_writes: int = 0

    def metrics(self) -> dict[str, Any]:
        return {"cache_dir": self.cache_dir, "layers_from_cache": self.from_cache,
                "layers_warm_started": len(self.seeded), "warm_starts": self.seeded,
                "cache_writes": self.cache_writes}


def _map_layers_reusing(data: MappingData, fn: Callable[..., Any], args: list[tuple], deadline: float | None,
                        reasons: list[str] | None, *, method: str, mip_rel_gap: float | None
                        ) -> tuple[list[Any], _Reused]:
    """:func:`_map_layers` with reuse of solved layers (seed 001 §5.3.1): ``fn(*args[i], seeds)`` per representative
    layer, ``seeds`` the named warm starts of layer ``i`` — its entry in the on-disk cache (option ``cache_dir``,
    :mod:`.layer_cache`; re-evaluated by the cost model), the mapping of its parent in the plan adapted to it
    (:func:`~dlaopt.formulations.mapping.reuse.reuse_plan`: its most similar layer of an earlier wave), and, when it
    has neither, the most similar layer of the cache's entries on the same hardware. For the exact method
    (``method == "exact"``) a layer whose cached entry is a proven optimum within ``mip_rel_gap`` (the same key and a
    matching re-evaluation) is not solved again: its answer is the entry. Every answer with a mapping is written to
    the cache (each before the next layer starts, the rest at the end). Answers in the order of ``args``;
    ``reasons`` as :func:`_map_layers`."""
    from dlaopt.formulations.mapping import layer_cache as lc
    from dlaopt.formulations.mapping.reuse import (
        ReplayBuffer,
        Solved,
        adapt_to_space,
        layer_distance,
        map_planned,
        reuse_plan,
    )

    reps, spaces, objective = data.representatives, data.spaces, data.objective
    cache_dir = data.options.get("cache_dir")
    cache = lc.LayerCache(cache_dir) if cache_dir else None
    info = _Reused(str(cache_dir) if cache_dir else None)
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
    order, parent = reuse_plan(reps, done, _workers(data))
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
    out, states = map_planned(fn, full_args, order, parent, extra, _workers(data), deadline, DEADLINE_GRACE_S,
                              results=known)
    for j, r in enumerate(out):
        if r is not None and j not in written:
            write(j, r)
    if reasons is not None:
        reasons[:] = ["" if r is not None else NOT_FINISHED_MESSAGE if st == RUNNING else NOT_STARTED_MESSAGE
                      for r, st in zip(out, states, strict=True)]
    return out, info


def _time_left(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.monotonic()


def _capped(limit: float | None, deadline: float | None) -> float | None:
    """``limit`` capped by the time left before ``deadline`` (both optional)."""
    left = _time_left(deadline)
    if left is None:
        return limit
    return left if limit is None else min(limit, left)


# ---------------------------------------------------------------------------------------------- per-layer workers
def _budget(method: str, options: dict[str, Any]) -> int | None:
    if method == "random":
        return int(options["random_samples"])
    if method == "ga":
        return int(options["ga_population"]) * int(options["ga_generations"])
    return None


def run_layer_heuristic(method: str, nest: LoopNest, arch: MappingArch, objective: str, options: dict[str, Any],
                        seed: int, time_limit: float | None) -> tuple[Mapping | None, float]:
    """Heuristic ``method`` on one layer without constraints: (mapping or ``None``, seconds)."""
    from dlaopt.formulations.mapping.heuristics import HEURISTICS

    t0 = time.perf_counter()
    if time_limit is not None and time_limit <= 0:
        return None, 0.0
    fn = HEURISTICS[method]
    kwargs: dict[str, Any] = {"seed": seed, "budget": _budget(method, options), "time_limit": time_limit}
    m = fn(nest, arch, objective, **kwargs)
    return m, time.perf_counter() - t0


def run_layer_in_space(method: str, nest: LoopNest, space: LayerSpace, objective: str, options: dict[str, Any],
                       seed: int, time_limit: float | None
                       ) -> tuple[Mapping | None, float, tuple[int, int] | None, str]:
    """Heuristic ``method`` on one layer within its constrained map space: (mapping or ``None``, seconds, the
    PE-array shape it is for, why there is none). An unconstrained space runs :func:`run_layer_heuristic` on its
    architecture."""
    if not space.constrained:
        m, secs = run_layer_heuristic(method, nest, space.archs[0].arch, objective, options, seed, time_limit)
        return m, secs, None, "" if m is not None else f"no valid mapping found for layer {nest.describe()}"
    from dlaopt.formulations.mapping.heuristics import map_in_space

    t0 = time.perf_counter()
    if time_limit is not None and time_limit <= 0:
        return None, 0.0, None, NOT_STARTED_MESSAGE
    r = map_in_space(method, nest, space, objective, seed=seed, budget=_budget(method, options),
                     time_limit=time_limit)
    return r.mapping, time.perf_counter() - t0, r.shape, r.reason


# lever ga_race: the GA raced against the exact method in another process
RACE_NAME = "ga (raced)"  # how the raced GA's mapping is named when it is the best warm start
RACE_GRACE_S = 1.0  # how long past its time limit the raced GA's answer is awaited (it stops within one evaluation)
LAYER_WORKERS_KEY = "layer_workers"  # SolveOptions.extra: how many layers are solved at once (set by solve_exact)
# the raced GA's niceness: on a core that is really spare it runs at full speed; on a loaded machine it yields to the
# walk, which needs nearly a whole core for its proof (measured on ResNet-50's conv2: a GA at the same priority took
# a third of the walk's CPU under load and left its least-energy solve unfinished at 10 s)
RACE_NICE = 10


def _usable_cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _layer_workers(options: dict[str, Any], solve_options: SolveOptions) -> int:
    """How many layers are being solved at once, each with its own process: ``solve_options.extra["layer_workers"]``
    as :meth:`MappingProblem.solve_exact` sets it; without it, 1 in a process that is not one of dlaopt's workers
    (a direct call) and, in a worker, the ``workers`` option (0: one per core)."""
    n = solve_options.extra.get(LAYER_WORKERS_KEY)
    if n is not None:
        return max(1, int(n))
    from dlaopt.solvers import processes

    if getattr(processes, "_watched_parent", None) is None:
        return 1
    w = int(options.get("workers", 0))
    return w if w > 0 else _usable_cores()


def _race_on(options: dict[str, Any], solve_options: SolveOptions, limit: float | None) -> bool:
    """Whether the GA races the exact method (lever ``ga_race``): only under a time limit (no node limit, not asked
    to be deterministic — a run without a time limit is reproducible and stays so) and when a core is spare: more
    usable cores than the layer workers running times each one's solver threads (an unset thread count counts 1)."""
    from dlaopt.specs.tuning import levers

    if limit is None or solve_options.node_limit is not None or solve_options.deterministic:
        return False
    if not levers(options, opts.EXACT_LEVERS).get("ga_race", False):
        return False
    busy = _layer_workers(options, solve_options) * max(1, solve_options.threads or 1)
    return _usable_cores() > busy


def _own_extra(solve_options: SolveOptions) -> dict[str, Any]:
    """``solve_options.extra`` without the keys meant for the per-layer driver (the rest goes to the solver)."""
    return {k: v for k, v in solve_options.extra.items() if k != LAYER_WORKERS_KEY}


def _niced(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` at a lower priority (:data:`RACE_NICE`; the raced GA's worker entry point)."""
    with contextlib.suppress(OSError, AttributeError):
        os.nice(RACE_NICE)
    return fn(*args)


class _GaRace:
    """The GA on one layer in a worker process of :func:`~dlaopt.solvers.processes.process_pool` (it dies with this
    process; niced by :data:`RACE_NICE`), started at once: :meth:`ready` hands over its answer once it is in (never
    blocking), :meth:`finish` waits for it (at most until its time limit plus :data:`RACE_GRACE_S`), :meth:`stop`
    kills the worker — call it in a ``finally`` so that no process outlives the solve (interrupted, cut short or
    done)."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float, deadline: float | None) -> None:
        from dlaopt.solvers.processes import process_pool

        self.end = time.monotonic() + limit + RACE_GRACE_S
        if deadline is not None:  # within the grace the layer workers get past the total time limit
            self.end = min(self.end, deadline + DEADLINE_GRACE_S / 4)
        self.pool = process_pool(1)
        self.future = self.pool.submit(_niced, fn, *args)
        self._answer: tuple[Mapping, tuple[int, int] | None] | None = None
        self._read = False

    def ready(self) -> tuple[Mapping, tuple[int, int] | None] | None:
        """(mapping, PE-array shape or ``None``) once the GA has answered with a mapping; else ``None``."""
        if not self._read and self.future.done():
            self._read = True
            try:
                r = self.future.result()
            except Exception:  # noqa: BLE001 - a failed race only loses its incumbent
                r = None
            if r is not None and r[0] is not None:
                self._answer = (r[0], r[2] if len(r) > 2 else None)
        return self._answer

    def finish(self, wait: bool) -> tuple[Mapping, tuple[int, int] | None] | None:
        """:meth:`ready`, after waiting for the GA when ``wait`` (until its time limit plus the grace)."""
        if wait and not self.future.done():
            from concurrent.futures import wait as wait_for

            wait_for([self.future], timeout=max(0.0, self.end - time.monotonic()))
        return self.ready()

    def stop(self) -> None:
        from dlaopt.solvers.processes import kill_pool

        kill_pool(self.pool)


def _seed_valid(nest: LoopNest, arch: MappingArch, m: Mapping) -> bool:
    """Whether a given warm-start mapping is a valid mapping of ``nest`` on ``arch`` (a seed adapted from another
    layer or read from a cache may not be; the exact method then ignores it)."""
    try:
        return evaluate_mapping(nest, arch, m).valid
    except (KeyError, IndexError, ValueError, TypeError):
        return False


def run_layer_exact(nest: LoopNest, arch: MappingArch, objective: str, options: dict[str, Any],
                    solve_options: SolveOptions, solver: str, space: LayerSpace | None = None,
                    seeds: Sequence[tuple[str, Mapping]] = ()) -> dict[str, Any] | None:
    """The exact method on one layer, warm-started from ``options["warm_start"]`` and from ``seeds`` (named
    mappings given by the caller, e.g. a cached or a neighbouring layer's optimum; invalid ones are ignored); the
    warm start's time counts against ``solve_options.time_limit``. The best of them is reported as the warm start
    (by its name). ``None`` when ``solve_options.deadline`` has passed before it starts. Within a constrained map
    space (``space``) see :func:`_run_layer_exact_in_space`; ``arch`` is then unused.

    Lever ``ga_race`` (when :func:`_race_on`: a time limit and a spare core): the GA (same seed, the same time
    limit) runs in a worker process from the start; the walk takes its mapping as an incumbent at its first check
    after it is in (between MILP solves), and a walk that ends unproven awaits it and takes it if it is better (then
    reported as the warm start :data:`RACE_NAME`). The worker is killed when the solve ends, however it ends. The
    answer's ``ga_race`` says what the GA found (``objective``) and whether it is the answer (``won``); ``None``
    without a race."""
    from dlaopt.formulations.mapping.exact import solve_layer
    from dlaopt.specs.tuning import levers

    if space is not None and space.constrained:
        return _run_layer_exact_in_space(nest, space, objective, options, solve_options, solver, seeds)
    if space is not None:
        arch = space.archs[0].arch
    t0 = time.perf_counter()
    limit = _capped(solve_options.time_limit, solve_options.deadline)
    if limit is not None and limit <= 0:
        return None
    race = None
    if _race_on(options, solve_options, limit):
        assert limit is not None
        race = _GaRace(run_layer_heuristic, ("ga", nest, arch, objective, options, solve_options.seed, limit), limit,
                       solve_options.deadline)
    try:
        warm: list[Mapping] = []
        warm_names: list[str] = []
        for name, m in seeds:
            if _seed_valid(nest, arch, m):
                warm.append(m)
                warm_names.append(name)
        for h in options["warm_start"]:
            h_limit = None if limit is None else max(0.0, limit - (time.perf_counter() - t0))
            m, _ = run_layer_heuristic(h, nest, arch, objective, options, solve_options.seed, h_limit)
            if m is not None:
                warm.append(m)
                warm_names.append(h)
        t_warm = time.perf_counter() - t0
        left = None if limit is None else max(0.1, limit - t_warm)
        o = SolveOptions(time_limit=left, mip_rel_gap=solve_options.mip_rel_gap, threads=solve_options.threads,
                         seed=solve_options.seed, node_limit=solve_options.node_limit,
                         deterministic=solve_options.deterministic, extra=_own_extra(solve_options))
        handed = False

        def raced() -> list[Mapping]:
            nonlocal handed
            got = race.ready() if race is not None and not handed else None
            handed = handed or got is not None
            return [got[0]] if got is not None else []

        r = solve_layer(nest, arch, objective, warm=warm, options=o, solver=solver,
                        tuning=levers(options, opts.EXACT_LEVERS), incumbents=raced if race is not None else None)
        # a walk that proved its answer needs nothing from the GA; else its answer is awaited (the same time limit)
        got = race.finish(wait=r.status != Status.OPTIMAL) if race is not None else None
    finally:
        if race is not None:
            race.stop()
    raced_info: dict[str, Any] | None = None if race is None else {"objective": None, "won": False}
    if got is not None and raced_info is not None and _seed_valid(nest, arch, got[0]):
        warm.append(got[0])
        warm_names.append(RACE_NAME)
        raced_info["objective"] = evaluate_mapping(nest, arch, got[0]).objective(objective)
        raced_info["won"] = _offer_raced(r, got[0], raced_info["objective"]) or r.mapping is got[0]
    warm_best = None
    for name, m in zip(warm_names, warm, strict=True):
        rep = evaluate_mapping(nest, arch, m)
        if rep.valid and (warm_best is None or rep.objective(objective) < warm_best[1]):
            warm_best = (name, rep.objective(objective))
    return {"mapping": r.mapping, "objective": r.objective, "model_objective": r.model_objective, "bound": r.bound,
            "status": r.status.value, "time_s": time.perf_counter() - t0, "warm_start_s": t_warm,
            "solves": r.solves, "message": r.message, "model_stats": r.model_stats,
            "warm_start": warm_best, "trace": [(p.time_s, p.incumbent, p.bound) for p in r.trace],
            "ga_race": raced_info}


def _offer_raced(r: Any, m: Mapping, value: float) -> bool:
    """Make the raced GA's mapping ``m`` (valued ``value``) the answer of the exact result ``r`` (a
    :class:`~dlaopt.formulations.mapping.exact.LayerExact`) when it is better (the bound stays a bound: at most the
    answer's value); True when it is taken."""
    if r.status == Status.INFEASIBLE or (r.objective is not None and value >= r.objective):
        return False
    r.mapping, r.objective, r.model_objective = m, value, None
    if r.bound is not None:
        r.bound = min(r.bound, value)
    if r.status == Status.NO_SOLUTION:
        r.status = Status.FEASIBLE
    return True


def _run_layer_exact_in_space(nest: LoopNest, space: LayerSpace, objective: str, options: dict[str, Any],
                              solve_options: SolveOptions, solver: str,
                              seeds: Sequence[tuple[str, Mapping]] = ()) -> dict[str, Any] | None:
    """The exact method on one layer within its constrained map space: per architecture choice (PE-array shape),
    the warm-start heuristics (and the ``seeds`` valid there) kept within the space and the model solved with the
    space's rows; the best mapping
    over the choices, with the least of their bounds (a choice proven infeasible bounds nothing). Status
    ``infeasible`` when every choice is proven infeasible. A space with alternatives (``one_of``) solves every
    architecture choice of each alternative."""
    from dlaopt.formulations.mapping.exact import solve_layer
    from dlaopt.formulations.mapping.heuristics import HEURISTICS, SpaceRules
    from dlaopt.specs.tuning import levers

    t0 = time.perf_counter()
    limit = _capped(solve_options.time_limit, solve_options.deadline)
    if limit is not None and limit <= 0:
        return None
    per_arch: list[tuple[ArchChoice, Any, list[tuple[str, float]]]] = []
    t_warm = 0.0
    runs = [(alt, choice) for alt in space.choices for choice in alt.archs]
    race = None
    if _race_on(options, solve_options, limit):  # the GA within the space (its time shared over the choices)
        assert limit is not None
        race = _GaRace(run_layer_in_space, ("ga", nest, space, objective, options, solve_options.seed, limit), limit,
                       solve_options.deadline)

    def fits(got: tuple[Mapping, tuple[int, int] | None], choice: ArchChoice, rules: SpaceRules) -> bool:
        """Whether the raced GA's mapping is one of this architecture choice's (its shape, within its rules)."""
        return got[1] == choice.shape and _seed_valid(nest, choice.arch, got[0]) and rules.ok(got[0])

    try:
        for i, (alt, choice) in enumerate(runs):
            share = None if limit is None else max(0.0, limit - (time.perf_counter() - t0)) / (len(runs) - i)
            tw = time.perf_counter()
            warm: list[Mapping] = []
            warm_values: list[tuple[str, float]] = []
            rules = SpaceRules(nest, choice.arch, alt)
            for name, m in seeds:
                if _seed_valid(nest, choice.arch, m) and rules.ok(m):
                    warm.append(m)
                    warm_values.append((name, evaluate_mapping(nest, choice.arch, m).objective(objective)))
            for h in options["warm_start"]:
                h_limit = None if share is None else max(0.0, share - (time.perf_counter() - tw))
                if h_limit is not None and h_limit <= 0:
                    continue
                m = HEURISTICS[h](nest, choice.arch, objective, seed=solve_options.seed, budget=_budget(h, options),
                                  time_limit=h_limit, rules=rules)
                if m is not None and rules.ok(m):
                    rep = evaluate_mapping(nest, choice.arch, m)
                    if rep.valid:
                        warm.append(m)
                        warm_values.append((h, rep.objective(objective)))
            t_warm += time.perf_counter() - tw
            left = None if share is None else max(0.1, share - (time.perf_counter() - tw))
            o = SolveOptions(time_limit=left, mip_rel_gap=solve_options.mip_rel_gap, threads=solve_options.threads,
                             seed=solve_options.seed, node_limit=solve_options.node_limit,
                             deterministic=solve_options.deterministic, extra=_own_extra(solve_options))

            def raced(choice: ArchChoice = choice, rules: SpaceRules = rules) -> list[Mapping]:
                got = race.ready() if race is not None else None
                return [got[0]] if got is not None and fits(got, choice, rules) else []

            r = solve_layer(nest, choice.arch, objective, warm=warm, options=o, solver=solver, space=alt,
                            tuning=levers(options, opts.EXACT_LEVERS), incumbents=raced if race is not None else None)
            per_arch.append((choice, r, warm_values))
        got = None
        if race is not None:
            got = race.finish(wait=any(r.status not in (Status.OPTIMAL, Status.INFEASIBLE) for _, r, _ in per_arch))
    finally:
        if race is not None:
            race.stop()
    raced_info: dict[str, Any] | None = None if race is None else {"objective": None, "won": False}
    if got is not None and raced_info is not None:  # offered to the choice it belongs to
        for (alt, choice), (_, r, warm_values) in zip(runs, per_arch, strict=True):
            if fits(got, choice, SpaceRules(nest, choice.arch, alt)):
                value = evaluate_mapping(nest, choice.arch, got[0]).objective(objective)
                warm_values.append((RACE_NAME, value))
                raced_info["objective"] = value
                _offer_raced(r, got[0], value)
                break
    live = [(c, r, w) for c, r, w in per_arch if r.status != Status.INFEASIBLE]
    found = [(c, r, w) for c, r, w in live if r.mapping is not None and r.objective is not None]
    best = min(found, key=lambda x: x[1].objective) if found else None
    statuses = {r.status for _, r, _ in live}
    if not live:
        status = Status.INFEASIBLE
    elif best is None:
        status = Status.NO_SOLUTION if Status.ERROR not in statuses else Status.ERROR
    elif statuses == {Status.OPTIMAL}:
        status = Status.OPTIMAL
    elif Status.ERROR in statuses:
        status = Status.ERROR
    else:
        status = Status.FEASIBLE
    bound = None
    if live and all(r.bound is not None for _, r, _ in live):
        bound = min(r.bound for _, r, _ in live)
    if best is not None and bound is not None:
        bound = min(bound, best[1].objective)
    warm_all = [w for _, _, ws in per_arch for w in ws]
    msgs = sorted({r.message for _, r, _ in per_arch if r.message})
    if not live:
        msgs.insert(0, f"no mapping of layer {nest.describe()} meets its constraints ("
                    + ", ".join(space.sources) + ")")
    r_best = best[1] if best is not None else None
    return {"mapping": None if r_best is None else r_best.mapping,
            "shape": None if best is None else best[0].shape,
            "objective": None if r_best is None else r_best.objective,
            "model_objective": None if r_best is None else r_best.model_objective, "bound": bound,
            "status": status.value, "time_s": time.perf_counter() - t0, "warm_start_s": t_warm,
            "solves": sum(r.solves for _, r, _ in per_arch), "message": "; ".join(msgs),
            "model_stats": None if r_best is None else r_best.model_stats,
            "warm_start": min(warm_all, key=lambda w: w[1]) if warm_all else None,
            "trace": [] if r_best is None else [(p.time_s, p.incumbent, p.bound) for p in r_best.trace],
            "ga_race": None if raced_info is None else {**raced_info, "won": got is not None and r_best is not None
                                                        and r_best.mapping is got[0]}}


def run_layer_exhaustive(nest: LoopNest, arch: MappingArch, objective: str, limit: int,
                         space: LayerSpace | None = None) -> dict[str, Any]:
    """Every mapping of one layer enumerated (within ``space`` when it is constrained; ``arch`` is then unused):
    the best, the PE-array shape it is for, and a message when the space is too large to enumerate."""
    from dlaopt.formulations.mapping.exhaustive import SpaceTooLarge, exhaustive, exhaustive_in_space

    t0 = time.perf_counter()
    shape = None
    try:
        if space is not None and space.constrained:
            found = exhaustive_in_space(nest, space, objective, limit=limit)
            m, shape = found if found is not None else (None, None)
        else:
            m = exhaustive(nest, space.archs[0].arch if space is not None else arch, objective, limit=limit)
        msg = ""
    except SpaceTooLarge as exc:
        m, msg = None, str(exc)
    return {"mapping": m, "shape": shape, "time_s": time.perf_counter() - t0, "message": msg}


class MappingProblem(Problem[MappingData, MappingSolution]):
    name = "mapping"
    title = "Tiling and loop-order selection (mapping)"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("random", "heuristic", "Random mapper: best of N random valid mappings (Timeloop-style)"),
        Method("ga", "heuristic", "GAMMA genetic algorithm (seed 001 Ch. 4), population x generations budget"),
        Method("nvdla", "heuristic", "NVDLA-like fixed dataflow (K-C parallel, weight stationary), greedy tiles"),
        Method("eyeriss", "heuristic", "Eyeriss-like fixed dataflow (row stationary), greedy tiles"),
        Method("shidiannao", "heuristic", "ShiDianNao-like fixed dataflow (output stationary), greedy tiles"),
        Method("exact", "exact", "MILP over the exact cost model, warm-started; EDP by bisection over latency caps",
               "highs"),
        Method("exhaustive", "exact", "Enumeration of every mapping (small layers only; ground truth)"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> MappingData:
        options = {**opts.DEFAULT_OPTIONS, **dict(instance.options)}
        wl = instance.graph
        names = options.get("layers")
        all_ops = {op.name: op for op in wl.operators}
        if names is not None:
            for i, n in enumerate(names):
                if n not in all_ops:
                    raise InputError(f"no operator named '{n}' in workload '{wl.name}'", file=instance.source,
                                     path=("options", "layers", i), expected="names of conv2d / matmul operators")
                if all_ops[n].kind.value not in ("conv2d", "depthwise_conv2d", "matmul"):
                    raise InputError(f"operator '{n}' is a {all_ops[n].kind.value}, not a mappable layer",
                                     file=instance.source, path=("options", "layers", i),
                                     expected="conv2d, depthwise_conv2d or matmul operators")
        ops = require_mappable(wl, instance.source, names)
        padding = dict(options.get("padding") or {})
        for d in padding:
            if d not in {"N", "G", "K", "C", "P", "Q", "R", "S", "B", "M"}:
                raise InputError(f"unknown loop dimension '{d}' in padding", file=instance.source,
                                 path=("options", "padding", d), expected="one of N G K C P Q R S B M")
        acc = instance.accelerator
        try:
            arch = arch_from_accelerator(acc)
        except ValueError as exc:
            raise InputError(str(exc), file=instance.source, path=("hardware",)) from None
        declared = tuple(self.declared_constraints(instance))
        try:
            res = resolve(declared, wl, ops, arch, acc, padding)
        except InputError as exc:
            raise exc.located(file=instance.source) from None
        groups: dict[tuple, list[int]] = {}
        for i, (n, sp) in enumerate(zip(res.nests, res.spaces, strict=True)):
            groups.setdefault((n.shape_key(), sp), []).append(i)
        return MappingData(res.nests, list(groups.values()), arch, instance.objective, options, instance.source,
                           spaces=[res.spaces[g[0]] for g in groups.values()], constraints=declared,
                           op_kinds=[op.kind.value for op in ops], conflicts=res.conflicts, accelerator=acc)

    def declared_constraints(self, instance: Instance) -> tuple[Constraint, ...]:
        """The constraints a ``flexibility`` class expands to, then the ``constraints`` list."""
        from dlaopt.formulations.mapping.flexibility import expand

        return (*expand(instance), *instance.constraints)

    def infeasibility_reason(self, data: MappingData) -> str | None:
        """A layer whose single elements do not fit (every level must hold one element of each operand it keeps,
        on the architecture the layer is mapped on), or constraints that certainly cannot hold together
        (:func:`~dlaopt.formulations.mapping.constraints.certain_conflicts`)."""
        for g, space in zip(data.groups, data.spaces, strict=True):
            nest = data.nests[g[0]]
            for lv in space.archs[0].arch.levels[:-1]:
                for store in lv.stores:
                    if store.capacity_bytes is None:
                        continue
                    need = sum(nest.operand(t).word_bytes for t in store.operands)
                    if need > store.capacity_bytes:
                        return (f"memory '{store.memory}' ({store.capacity_bytes} B) cannot hold one element each "
                                f"of {'+'.join(sorted(store.operands))} ({need} B) for layer {nest.name}")
        if data.conflicts:
            return "these constraints cannot hold: " + data.conflicts[0].message
        return None

    def conflicting_constraints(self, data: MappingData, options: SolveOptions) -> list[KeyPath] | None:
        """The constraints of the first certain conflict (:meth:`infeasibility_reason`), where there is one."""
        return list(data.conflicts[0].paths) if data.conflicts and data.conflicts[0].paths else None

    def describe(self, data: MappingData) -> dict[str, Any]:
        return {
            "layers": len(data.nests),
            "unique_layers": len(data.groups),
            "macs": sum(n.macs for n in data.nests),
            "levels": [lv.name for lv in data.arch.levels],
            "slots": [s.name for s in data.arch.slots()],
            "mac_units": data.arch.num_macs,
            "objective": data.objective,
            "constraints": len(data.constraints),
            "constrained_layers": sum(len(g) for g, sp in zip(data.groups, data.spaces, strict=True) if sp.sources),
        }

    # ------------------------------------------------------------------------------------------------ methods
    def _expand(self, data: MappingData, per_rep: list[Mapping | None],
                shapes: list[tuple[int, int] | None] | None = None, reasons: list[str] | None = None
                ) -> MappingSolution:
        out: dict[str, Mapping] = {}
        out_shapes: dict[str, tuple[int, int]] = {}
        for j, (g, m) in enumerate(zip(data.groups, per_rep, strict=True)):
            if m is None:
                why = reasons[j] if reasons is not None and reasons[j] else ""
                raise HeuristicFailure(why or f"no valid mapping found for layer {data.nests[g[0]].describe()}")
            shape = shapes[j] if shapes is not None else None
            for i in g:
                out[data.nests[i].name] = m
                if shape is not None:
                    out_shapes[data.nests[i].name] = shape
        return MappingSolution(out, shapes=out_shapes)

    def run_heuristic(self, method: str, data: MappingData, options: SolveOptions) -> MappingSolution:
        per_limit = None if options.time_limit is None else options.time_limit / max(1, math.ceil(
            len(data.groups) / _workers(data)))
        per_limit = _capped(per_limit, options.deadline)
        if per_limit is not None and per_limit <= 0:
            raise HeuristicFailure(NOT_STARTED_MESSAGE)
        args = [(method, n, sp, data.objective, data.options, options.seed, per_limit)
                for n, sp in zip(data.representatives, data.spaces, strict=True)]
        reused: _Reused | None = None
        if method in REUSE_HEURISTICS and _reuse_on(data):
            results, reused = _map_layers_reusing(data, _run_layer_in_space_seeded, args, options.deadline, None,
                                                  method=method, mip_rel_gap=None)
        else:
            results = _map_layers(data, run_layer_in_space, args, options.deadline)
        missing = [n for n, r in zip(data.representatives, results, strict=True) if r is None]
        if missing:
            raise HeuristicFailure(f"{NOT_STARTED_MESSAGE} or finished: {len(missing)} of {len(results)} layers "
                                   f"not mapped ({', '.join(n.name for n in missing[:3])}"
                                   f"{', ...' if len(missing) > 3 else ''})")
        sol = self._expand(data, [r[0] for r in results], [r[2] for r in results], [r[3] for r in results])
        for g, r in zip(data.groups, results, strict=True):
            sol.per_layer[data.nests[g[0]].name] = {"time_s": r[1]}
            if reused is not None and data.nests[g[0]].name in reused.seeded:
                sol.per_layer[data.nests[g[0]].name]["warm_starts"] = reused.seeded[data.nests[g[0]].name]
        return sol

    def build_milp(self, data: MappingData) -> MilpFormulation[MappingSolution]:
        raise NotImplementedError("the mapping problem uses its own exact driver (solve_exact)")

    def solve_exact(self, data: MappingData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[MappingSolution] | None:
        t0 = time.perf_counter()
        reps = data.representatives
        if method == "exhaustive":
            results = _map_layers(data, run_layer_exhaustive,
                                  [(n, data.arch, data.objective, int(data.options["exhaustive_limit"]), sp)
                                   for n, sp in zip(reps, data.spaces, strict=True)],
                                  options.deadline)
            unfinished = self._unfinished(reps, results)
            if unfinished:
                return ExactOutcome(None, Status.NO_SOLUTION, None, "enumeration", message=unfinished,
                                    solve_time_s=time.perf_counter() - t0)
            too_large = next((r["message"] for r in results if r["mapping"] is None and r["message"]), "")
            if too_large:
                return ExactOutcome(None, Status.NO_SOLUTION, None, "enumeration", message=too_large,
                                    solve_time_s=time.perf_counter() - t0)
            empty = next((n for n, r in zip(reps, results, strict=True) if r["mapping"] is None), None)
            if empty is not None:  # every mapping enumerated, none valid: proven infeasible
                space = data.spaces[reps.index(empty)]
                within = f" within its constraints ({', '.join(space.sources)})" if space.sources else ""
                return ExactOutcome(None, Status.INFEASIBLE, None, "enumeration",
                                    message=f"no mapping of layer {empty.describe()} is valid{within}",
                                    solve_time_s=time.perf_counter() - t0)
            sol = self._expand(data, [r["mapping"] for r in results], [r["shape"] for r in results])
            for g, r in zip(data.groups, results, strict=True):
                sol.per_layer[data.nests[g[0]].name] = {"time_s": r["time_s"]}
            value = self.evaluate(data, sol).objective
            return ExactOutcome(sol, Status.OPTIMAL, value, "enumeration", message="every mapping enumerated",
                                solve_time_s=time.perf_counter() - t0)
        backend = solver or "highs"
        if backend != "highs" and not backend.startswith("pyomo:"):
            raise InputError(f"the mapping model needs a MILP solver (highs or pyomo:NAME), not '{backend}'",
                             path=("solver",), expected="highs or pyomo:NAME")
        per_layer_opts = SolveOptions(
            time_limit=options.time_limit, mip_rel_gap=options.mip_rel_gap,
            threads=1 if _workers(data) > 1 else options.threads, seed=options.seed, node_limit=options.node_limit,
            deterministic=options.deterministic, extra={**options.extra, LAYER_WORKERS_KEY: _workers(data)},
            deadline=options.deadline)
        if options.time_limit is not None:
            per_layer_opts.time_limit = options.time_limit / max(1, math.ceil(len(reps) / _workers(data)))
        reasons: list[str] = []
        exact_args = [(n, data.arch, data.objective, data.options, per_layer_opts, backend, sp)
                      for n, sp in zip(reps, data.spaces, strict=True)]
        reused: _Reused | None = None
        if _reuse_on(data):
            results, reused = _map_layers_reusing(data, _run_layer_exact_seeded, exact_args, options.deadline,
                                                  reasons, method="exact", mip_rel_gap=options.mip_rel_gap)
        else:
            results = _map_layers(data, run_layer_exact, exact_args, options.deadline, reasons)
        infeasible = next((n for n, r in zip(reps, results, strict=True)
                           if r is not None and r["status"] == Status.INFEASIBLE.value), None)
        if infeasible is not None:
            r = results[reps.index(infeasible)]
            return ExactOutcome(None, Status.INFEASIBLE, None, backend, message=r["message"] or
                                f"no mapping of layer {infeasible.describe()} meets its constraints",
                                solve_time_s=time.perf_counter() - t0)
        cut: dict[str, Any] = {}
        cut_msg = ""
        if any(r is None for r in results):  # cut short by the total time limit: complete it, or no solution
            filled = self._complete(data, results, reasons)
            if filled is None:
                return ExactOutcome(None, Status.NO_SOLUTION, None, backend,
                                    message=self._unfinished(reps, results) + "; no fixed-dataflow heuristic maps "
                                    "the layers left, so no complete mapping", solve_time_s=time.perf_counter() - t0)
            results, cut, cut_msg = filled
        mult = [len(g) for g in data.groups]
        if any(r["mapping"] is None for r in results):
            bad = next(n for n, r in zip(reps, results, strict=True) if r["mapping"] is None)
            return ExactOutcome(None, Status.NO_SOLUTION, None, backend,
                                message=f"no mapping found for layer {bad.describe()}",
                                solve_time_s=time.perf_counter() - t0)
        sol = self._expand(data, [r["mapping"] for r in results], [r.get("shape") for r in results])
        statuses = [r["status"] for r in results]
        status = Status.OPTIMAL if all(s == Status.OPTIMAL.value for s in statuses) else Status.FEASIBLE
        bound = None
        if all(r["bound"] is not None for r in results):
            bound = sum(k * r["bound"] for k, r in zip(mult, results, strict=True))
        model_obj = None
        if all(r["model_objective"] is not None for r in results):
            model_obj = sum(k * r["model_objective"] for k, r in zip(mult, results, strict=True))
        for g, r in zip(data.groups, results, strict=True):
            sol.per_layer[data.nests[g[0]].name] = {
                k: r[k] for k in ("status", "objective", "bound", "time_s", "warm_start_s", "solves", "message",
                                  "model_stats")}
            sol.per_layer[data.nests[g[0]].name]["warm_start"] = r["warm_start"]
            if r.get("completed_by"):
                sol.per_layer[data.nests[g[0]].name]["completed_by"] = r["completed_by"]
        trace: list[TracePoint] = []
        if len(results) == 1:
            trace = [TracePoint(t, i, b) for t, i, b in results[0]["trace"]]
        times = sorted(r["time_s"] for r in results if not r.get("completed_by")) or [0.0]
        metrics: dict[str, Any] = {"layer_time_median_s": times[len(times) // 2], "layer_time_max_s": times[-1],
                                   **cut}
        if reused is not None:
            metrics["reuse"] = reused.metrics()
        msgs = sorted({r["message"] for r in results if r["message"] and not r.get("completed_by")})
        if cut_msg:
            msgs.insert(0, cut_msg)
        from dlaopt.solvers.highs_backend import HIGHS_VERSION

        warm_start = None
        if all(r["warm_start"] is not None for r in results):
            names = sorted({r["warm_start"][0] for r in results})
            warm_start = {"method": "/".join(names) + (" (best per layer)" if len(results) > 1 else ""),
                          "objective": _aggregate_values([r["warm_start"][1] for r in results], mult)}

        return ExactOutcome(sol, status, bound, backend, HIGHS_VERSION if backend == "highs" else "",
                            message="; ".join(msgs), trace=trace, model_objective=model_obj, metrics=metrics,
                            warm_start=warm_start, objective_tolerance=MODEL_TOLERANCE,
                            solve_time_s=time.perf_counter() - t0,
                            model_stats=results[0]["model_stats"] if len(results) == 1 else None)

    def _complete(self, data: MappingData, results: list[Any], reasons: list[str]
                  ) -> tuple[list[dict[str, Any]], dict[str, Any], str] | None:
        """An exact run cut short by the total time limit, completed: every layer it left unsolved gets the first
        valid mapping of the cheap fixed-dataflow heuristics (:data:`FILL_HEURISTICS`, in the order of the
        ``warm_start`` option), marked ``completed_by`` with status ``no_solution`` and the reason in its per-layer
        notes, so the solution is whole (never a partial mapping) and the run at best ``feasible`` without a
        bound. Also the metrics saying which layers were left out, and why (``layers_not_solved``,
        ``layers_completed_by_heuristic``), and the message. ``None`` when some layer left out has no such mapping."""
        order = [h for h in data.options.get("warm_start", ()) if h in FILL_HEURISTICS]
        order += [h for h in FILL_HEURISTICS if h not in order]
        out: list[dict[str, Any]] = []
        not_solved: dict[str, str] = {}
        completed: dict[str, str] = {}
        for g, r, why, space in zip(data.groups, results, reasons or [""] * len(results), data.spaces, strict=True):
            if r is not None:
                out.append(r)
                continue
            nest = data.nests[g[0]]
            why = why or NOT_STARTED_MESSAGE
            found = None
            for h in order:
                t0 = time.perf_counter()
                m, _, shape, _ = run_layer_in_space(h, nest, space, data.objective, data.options, 0, None)
                arch = next((c.arch for c in space.archs if c.shape == shape), space.archs[0].arch)
                rep = evaluate_mapping(nest, arch, m) if m is not None else None
                if rep is not None and rep.valid:
                    found = (h, m, rep, time.perf_counter() - t0, shape)
                    break
            if found is None:
                return None
            h, m, rep, secs, shape = found
            value = rep.objective(data.objective)  # its "model" value is the evaluator's: the check stays exact
            out.append({"mapping": m, "shape": shape, "objective": value, "model_objective": value,
                        "bound": None, "status": Status.NO_SOLUTION.value, "time_s": secs, "warm_start_s": 0.0,
                        "solves": 0, "message": f"{why}; completed by the '{h}' heuristic", "model_stats": None,
                        "warm_start": None, "trace": [], "completed_by": h})
            for i in g:
                not_solved[data.nests[i].name] = why
                completed[data.nests[i].name] = h
        n_cut = sum(r is None for r in results)
        names = [data.nests[g[0]].name for g, r in zip(data.groups, results, strict=True) if r is None]
        msg = (f"total time limit: {n_cut} of {len(results)} unique layers not solved by the exact method "
               f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}), completed by fixed-dataflow "
               "heuristics (metrics: layers_completed_by_heuristic)")
        return out, {"layers_not_solved": not_solved, "layers_completed_by_heuristic": completed}, msg

    @staticmethod
    def _unfinished(reps: list[LoopNest], results: list[Any]) -> str:
        """The message of a run stopped by the total time limit ('' when every layer came back)."""
        missing = [n.name for n, r in zip(reps, results, strict=True) if r is None]
        if not missing:
            return ""
        return (f"{NOT_STARTED_MESSAGE} or finished: {len(missing)} of {len(reps)} layers not solved "
                f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")

    # ------------------------------------------------------------------------------------------------ evaluation
    def reports(self, data: MappingData, solution: MappingSolution) -> dict[str, CostReport]:
        return {n.name: evaluate_mapping(n, data.layer_arch(n.name, solution.shapes.get(n.name)),
                                         solution.mappings[n.name])
                for n in data.nests if n.name in solution.mappings}

    def evaluate(self, data: MappingData, solution: MappingSolution) -> Evaluation:
        """The cost model on each layer's architecture (its bypasses; the PE-array shape the solution says it uses),
        and every constraint checked again from the records (:mod:`.check`), each broken one named."""
        violations: list[str] = []
        reps: list[CostReport] = []
        per_layer = []
        for i, n in enumerate(data.nests):
            m = solution.mappings.get(n.name)
            if m is None:
                violations.append(f"layer {n.name}: no mapping")
                continue
            cs = data.layer_constraints(i)
            shape = solution.shapes.get(n.name)
            arch = layer_arch(data.arch, data.accelerator, cs, shape) if cs or shape is not None else data.arch
            r = evaluate_mapping(n, arch, m)
            violations.extend(f"layer {n.name}: {v}" for v in r.violations)
            violations.extend(constraint_violations(n.name, n, arch, data.arch, data.accelerator, m, shape, cs,
                                                    data.op_kinds[i] if i < len(data.op_kinds) else ""))
            if shape is not None and not any(c.kind == "shape" for c in cs) and tuple(shape) != pe_shape(
                    data.arch, data.accelerator):
                violations.append(f"layer {n.name}: PE-array shape {shape[0]}x{shape[1]} is not the accelerator's "
                                  "and no shape constraint allows another")
            reps.append(r)
            per_layer.append({"layer": n.name, "kind": n.kind, "shape": n.shape_text, "energy_pj": r.energy_pj,
                              "latency_cycles": r.latency_cycles, "edp": r.edp, "utilization": r.utilization,
                              "valid": r.valid})
        feasible = not violations
        objective = aggregate(reps, data.objective) if feasible else None
        energy = sum(r.energy_pj for r in reps)
        latency = sum(r.latency_cycles for r in reps)
        metrics = {
            "energy_pj": energy,
            "latency_cycles": latency,
            "edp_sum": sum(r.edp for r in reps),
            "edp_total": energy * latency,
            "macs": sum(r.real_macs for r in reps),
            "utilization": (sum(r.real_macs for r in reps) / (latency * data.arch.num_macs)) if latency else 0.0,
            "latency_s": latency / data.arch.clock_hz,
            "layers": per_layer,
        }
        return Evaluation(feasible, objective, violations, metrics)

    def solution_to_dict(self, data: MappingData, solution: MappingSolution) -> dict[str, Any]:
        layers: dict[str, Any] = {}
        for n in data.nests:
            m = solution.mappings.get(n.name)
            if m is None:
                continue
            shape = solution.shapes.get(n.name)
            arch = data.layer_arch(n.name, shape)
            doc = m.to_dict(arch)
            doc["loop_nest"] = loop_nest_text(n, arch, m)
            if shape is not None:
                doc["pe_array_shape"] = list(shape)
            if n.name in solution.per_layer:
                doc["solver"] = solution.per_layer[n.name]
            layers[n.name] = doc
        return {"layers": layers}

    def solution_from_dict(self, data: MappingData, doc: MappingABC[str, Any]) -> MappingSolution:
        layers = doc.get("layers")
        if not isinstance(layers, MappingABC):
            raise InputError("a mapping solution needs 'layers': {layer name: {factors, orders}}",
                             path=("solution", "layers"), expected="an object keyed by layer name")
        out: dict[str, Mapping] = {}
        shapes: dict[str, tuple[int, int]] = {}
        for name, ld in layers.items():
            where = ("solution", "layers", name)
            if not isinstance(ld, MappingABC) or not isinstance(ld.get("factors"), MappingABC) or not isinstance(
                    ld.get("orders"), list):
                raise InputError(f"layer '{name}': expected 'factors' (dim -> list of ints per slot) and 'orders' "
                                 "(list of dim lists per level)", path=where,
                                 expected="{factors: {...}, orders: [[...], ...]}")
            try:
                m = Mapping.from_dict(ld)
            except (TypeError, ValueError) as exc:
                raise InputError(f"layer '{name}': {exc}", path=where) from None
            nest = next((n for n in data.nests if n.name == name), None)
            if nest is None:
                raise InputError(f"no layer named '{name}' in this instance", path=where,
                                 expected="names of the instance's mapped layers")
            shape = ld.get("pe_array_shape")
            if shape is not None:
                if (not isinstance(shape, list) or len(shape) != 2
                        or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in shape)):
                    raise InputError(f"layer '{name}': 'pe_array_shape' must be [rows, columns]",
                                     path=(*where, "pe_array_shape"), expected="two positive integers")
                shapes[name] = (shape[0], shape[1])
            arch = data.layer_arch(name, shapes.get(name))
            errs = mapping_errors(nest, arch, m)
            if errs:
                raise InputError(f"layer '{name}': {errs[0]}", path=where,
                                 expected=f"factors over the slots {[s.name for s in arch.slots()]}")
            out[name] = m
        return MappingSolution(out, shapes=shapes)


__all__ = ["HEURISTIC_METHODS", "MappingData", "MappingProblem", "MappingSolution", "aggregate"]
