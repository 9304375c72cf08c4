"""Solve one model with several backends side by side (one worker process each) and keep every answer.

The first backend to prove optimality ends the race (the others are killed); otherwise all run to the time limit.
Each backend gets one thread, so a race of two uses two cores. The answers come back without their ``raw`` solver
objects (which do not cross process boundaries); a backend that failed or was cut off is reported as an ERROR or
NO_SOLUTION result with a message, never raised.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait

from dlaopt.solvers.linear import LinearModel
from dlaopt.solvers.processes import kill_pool, process_pool
from dlaopt.solvers.result import BackendResult, SolveOptions, Status


def _solve_one(model: LinearModel, backend: str, options: SolveOptions) -> BackendResult:
    from dlaopt.solvers.backends import solve_linear

    res = solve_linear(model, backend, options)
    res.raw = None
    return res


def race(model: LinearModel, backends: Sequence[str], options: SolveOptions) -> list[BackendResult]:
    """Every backend's result on ``model`` (in the order given), one process and one thread each."""
    opts = dataclasses.replace(options, threads=1, progress=None)
    t0 = time.perf_counter()
    pool = process_pool(len(backends))
    futures: dict[Future[BackendResult], int] = {pool.submit(_solve_one, model, b, opts): i
                                                 for i, b in enumerate(backends)}
    out: list[BackendResult | None] = [None] * len(backends)
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                i = futures[f]
                try:
                    out[i] = f.result()
                except Exception as exc:  # a crashed worker is a backend error, not the caller's
                    out[i] = BackendResult(Status.ERROR, None, None, None, backends[i], "",
                                           time.perf_counter() - t0, message=f"race worker failed: {exc}")
            if any(r is not None and r.status in (Status.OPTIMAL, Status.INFEASIBLE) for r in out):
                break
    finally:
        kill_pool(pool)
    return [r if r is not None else BackendResult(Status.NO_SOLUTION, None, None, None, backends[i], "",
                                                  time.perf_counter() - t0, message="stopped: another backend won")
            for i, r in enumerate(out)]


__all__ = ["race"]
