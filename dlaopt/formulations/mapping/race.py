"""Lever ``ga_race`` of the exact mapping method: the GA raced against the exact per-layer walk in another process.

Under a time limit and with a spare core, :func:`~dlaopt.formulations.mapping.layers.run_layer_exact` starts the GA
(:func:`start_race`) on the same layer, offers its mapping to the walk as an incumbent once it is in, and makes it
the answer when it beats an unproven walk (:func:`offer_raced`); the worker never outlives the solve.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from dlaopt.formulations.mapping.dispatch import DEADLINE_GRACE_S
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import mapping as opts

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
    as :meth:`~dlaopt.formulations.mapping.problem.MappingProblem.solve_exact` sets it; without it, 1 in a process
    that is not one of dlaopt's workers (a direct call) and, in a worker, the ``workers`` option (0: one per core)."""
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


def own_extra(solve_options: SolveOptions) -> dict[str, Any]:
    """``solve_options.extra`` without the keys meant for the per-layer driver (the rest goes to the solver)."""
    return {k: v for k, v in solve_options.extra.items() if k != LAYER_WORKERS_KEY}


def _niced(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` at a lower priority (:data:`RACE_NICE`; the raced GA's worker entry point)."""
    with contextlib.suppress(OSError, AttributeError):
        os.nice(RACE_NICE)
    return fn(*args)


class GaRace:
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

def start_race(fn: Callable[..., Any], args: tuple[Any, ...], options: dict[str, Any], solve_options: SolveOptions,
               limit: float | None) -> GaRace | None:
    """The GA ``fn(*args)`` started in a worker process (:class:`GaRace`) when it races the exact method on this
    layer (:func:`_race_on`); else ``None``."""
    if not _race_on(options, solve_options, limit):
        return None
    assert limit is not None
    return GaRace(fn, args, limit, solve_options.deadline)


def offer_raced(r: Any, m: Mapping, value: float) -> bool:
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


__all__ = ["LAYER_WORKERS_KEY", "RACE_NAME", "RACE_NICE", "GaRace", "offer_raced", "own_extra", "start_race"]
