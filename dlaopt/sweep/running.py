"""Running a sweep (see :mod:`dlaopt.sweep`): :func:`run_sweep` — resuming from ``results.jsonl``, the local engine,
the Dask engine (a ``LocalCluster`` or an existing scheduler) and its cluster handling — and its progress events."""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import math
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dlaopt.errors import InputError
from dlaopt.results import append_records, environment, open_results, record_key, with_ratios
from dlaopt.solvers.processes import Deadline
from dlaopt.sweep.files import Sweep, SweepTask, load_sweep
from dlaopt.sweep.reports import SweepReport, write_reports
from dlaopt.sweep.tasks import TOTAL_LIMIT_FAILURE, failed_records, run_task, worker_version

DEFAULT_OUT_ROOT = Path("results") / "sweeps"
DEFAULT_WORKERS = 2
ENGINES = ("dask", "local")
WORKER_WAIT_S = 60.0  # how long --scheduler waits for its first worker
CONNECT_TIMEOUT_S = 20.0  # and for the scheduler to answer
CLOSE_TIMEOUT_S = 20.0
STOP_CLOSE_TIMEOUT_S = 1.0  # closing a local cluster whose workers were killed (interrupted, or out of time)
WORKER_PRELOAD = "dlaopt.solvers.processes"  # local workers die with this process (parent-death signal)

Engine = Literal["dask", "local"]


@dataclass(frozen=True)
class SweepEvent:
    """``start`` (``done`` tasks already finished, skipped), ``engine`` (the engine is up: ``info`` describes it)
    and ``done`` (a task finished: ``task`` and its ``records``)."""

    kind: Literal["start", "engine", "done"]
    done: int
    total: int
    task: SweepTask | None = None
    records: Sequence[Mapping[str, Any]] = ()
    info: str = ""


SweepProgress = Callable[[SweepEvent], None]


def _finished(task: SweepTask, methods: Sequence[str], previous: Mapping[str, Mapping[str, Any]]) -> bool:
    for m in methods:
        rec = previous.get(record_key(task.name, m))
        if rec is None or rec.get("config") != task.key or rec.get("failure") in ("worker", TOTAL_LIMIT_FAILURE):
            return False
    return True


def run_sweep(
    name_or_path: str | Path | Sweep,
    out_dir: str | Path | None = None,
    *,
    engine: Engine = "dask",
    scheduler: str | None = None,
    workers: int = DEFAULT_WORKERS,
    resume: bool = True,
    progress: SweepProgress | None = None,
    verbose: bool = False,
    total_time_limit: float | None = None,
) -> SweepReport:
    """Run a sweep (a name, a file or a loaded :class:`Sweep`) into ``out_dir`` (default ``results/sweeps/<name>``).

    ``engine='dask'``: on the Dask scheduler at ``scheduler``, else on a new ``LocalCluster`` of ``workers``
    single-threaded worker processes (closed at the end); ``'local'``: every task in this process, in order.
    ``resume``: skip the tasks already finished in ``results.jsonl``; otherwise start afresh. An exception or
    KeyboardInterrupt during the run cancels what is left, closes the cluster (a local cluster's workers are killed at
    once), writes the reports of what is finished (marked incomplete) and is re-raised.

    ``total_time_limit`` (seconds) bounds the whole run: at that point the tasks not finished are cancelled (a local
    cluster's workers killed), the reports list them as not run, and a resume runs them. On the local engine each
    method gets at most the time left; its records are marked ``failure: total_time_limit`` when that cut its limit.
    """
    if engine not in ENGINES:
        raise InputError(f"unknown engine '{engine}'", path=("--engine",), expected="dask or local")
    if scheduler and engine != "dask":
        raise InputError("--scheduler needs the dask engine", path=("--scheduler",), expected="--engine dask")
    sweep = name_or_path if isinstance(name_or_path, Sweep) else load_sweep(name_or_path)
    out = Path(out_dir) if out_dir is not None else DEFAULT_OUT_ROOT / sweep.name
    jsonl, previous = open_results(out, resume=resume)
    records: dict[str, dict[str, Any]] = {}
    todo: list[SweepTask] = []
    for task in sweep.tasks:
        if _finished(task, sweep.methods, previous):
            for m in sweep.methods:
                records[record_key(task.name, m)] = dict(previous[record_key(task.name, m)])
        else:
            todo.append(task)
    skipped = len(sweep.tasks) - len(todo)
    run_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    emit = progress or (lambda _ev: None)
    emit(SweepEvent("start", skipped, len(sweep.tasks)))
    t0 = time.perf_counter()
    engine_info: dict[str, Any] = {"engine": engine}
    ran = 0
    complete = False
    deadline = Deadline(total_time_limit)
    not_run: list[str] = []

    def finish(task: SweepTask, recs: Sequence[dict[str, Any]]) -> None:
        nonlocal ran
        append_records(jsonl, recs)
        for r in recs:
            records[record_key(task.name, r["method"])] = r
        ran += 1
        emit(SweepEvent("done", skipped + ran, len(sweep.tasks), task, recs))

    try:
        if todo and engine == "local":
            engine_info.update(workers=1, threads_per_worker=1)
            emit(SweepEvent("engine", skipped, len(sweep.tasks), info="in this process"))
            for task in todo:
                if deadline.expired:
                    not_run.append(task.name)
                    continue
                recs = run_task(task.spec(sweep, run_id), deadline)
                if any(r.get("failure") == TOTAL_LIMIT_FAILURE for r in recs):
                    not_run.append(task.name)
                finish(task, recs)
        elif todo:
            with _dask_client(scheduler, workers, verbose) as (client, info, stop_workers):
                engine_info.update(info)
                emit(SweepEvent("engine", skipped, len(sweep.tasks), info=info["description"]))
                not_run += _run_on_dask(client, sweep, todo, run_id, finish, deadline, stop_workers)
                if not_run:
                    stop_workers()
        complete = not not_run
    finally:
        rows = _rows(sweep, records)
        report = SweepReport(sweep, out, rows, environment(sweep.solve.get("threads")), engine_info, run_id, ran,
                             skipped, complete, time.perf_counter() - t0, total_time_limit=total_time_limit,
                             not_run=tuple(not_run))
        report.paths = write_reports(report)
    return report


def _run_on_dask(client: Any, sweep: Sweep, todo: Sequence[SweepTask], run_id: str,
                 finish: Callable[[SweepTask, Sequence[dict[str, Any]]], None], deadline: Deadline,
                 stop_workers: Callable[[], None]) -> list[str]:
    """Submit the tasks and record each as it finishes; at the deadline cancel the rest and return their names.
    Interrupted, it kills a local cluster's workers first (``stop_workers``), then cancels the tasks."""
    from distributed import wait

    specs = {t.key: t.spec(sweep, run_id) for t in todo}
    futures = {}
    for task in todo:
        fut = client.submit(run_task, specs[task.key], key=f"dlaopt-sweep-{task.key}-{run_id}", pure=False)
        futures[fut.key] = (fut, task)
    pending = {f for f, _ in futures.values()}
    try:
        while pending:
            left = deadline.left()
            try:
                done, _ = wait(list(pending), timeout=None if math.isinf(left) else left,
                               return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            if not done:
                break
            for fut in sorted(done, key=lambda f: futures[f.key][1].index):
                pending.discard(fut)
                task = futures[fut.key][1]
                try:
                    recs = fut.result()
                except Exception as exc:  # the worker died (KilledWorker), lost the task, or could not run it
                    recs = failed_records(specs[task.key], f"the task did not finish on the cluster: "
                                                            f"{type(exc).__name__}: {exc}", "worker")
                finish(task, recs)
                fut.release()
    except BaseException:
        stop_workers()
        with contextlib.suppress(Exception):
            client.cancel([f for f, _ in futures.values()], force=True)
        raise
    if pending:
        with contextlib.suppress(Exception):
            client.cancel(list(pending), force=True)
    return [futures[f.key][1].name for f in sorted(pending, key=lambda f: futures[f.key][1].index)]


@contextlib.contextmanager
def _dask_client(scheduler: str | None, workers: int, verbose: bool
                 ) -> Iterator[tuple[Any, dict[str, Any], Callable[[], None]]]:
    """A Dask client: connected to ``scheduler``, or to a new LocalCluster of ``workers`` processes; closed (with the
    cluster) on exit, whatever happens. The third item kills a local cluster's worker processes (running tasks
    included; nothing for an existing cluster): done on any exception, so an interrupted sweep is gone at once.

    The local workers preload :mod:`dlaopt.solvers.processes`: each dies with this process, even when it is killed
    by SIGKILL while a worker is deep in a solver (Dask's own watch of its parent needs the worker's GIL).

    Logging, unless ``verbose``: distributed's messages below WARNING are silenced in this process, and the local
    worker processes log nothing (what they would say is about their own shutdown — a task's exception comes back
    to this process and is recorded; the nanny here reports a worker's memory trouble or death).

    The local workers ignore SIGINT (set by the preload): Ctrl-C in a terminal reaches the whole process group, and
    this process — not every worker with its own traceback — handles it by closing the cluster. This process keeps
    its own handler while the cluster starts, so a Ctrl-C (or SIGINT) then is not lost."""
    import dask
    from distributed import Client, LocalCluster

    loggers = [logging.getLogger(n) for n in ("distributed", "bokeh", "tornado")]
    levels = [lg.level for lg in loggers]
    if not verbose:
        for lg in loggers:
            lg.setLevel(logging.WARNING)
    cluster = None
    client = None
    ok = False
    stopped = False

    def stop_workers() -> None:
        nonlocal stopped
        if cluster is None:
            return
        stopped = True
        for nanny in list(getattr(cluster, "workers", {}).values()):
            pid = getattr(nanny, "pid", None)
            if pid:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
    # a HiGHS solve holds a worker's event loop for seconds: that is expected, not worth a warning
    settings = {"distributed.admin.tick.limit": "1h", "distributed.scheduler.allowed-failures": 1}
    try:
        with dask.config.set(settings):
            if scheduler:
                client, info = _connect(scheduler)
            else:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, preload=[WORKER_PRELOAD],
                                       silence_logs=logging.INFO if verbose else logging.CRITICAL)
                client = Client(cluster)
                info = {"scheduler": None, "workers": workers, "threads_per_worker": 1,
                        "description": f"Dask LocalCluster, {workers} worker processes x 1 thread "
                                       f"({client.scheduler.address})"}
            yield client, info, stop_workers
            ok = True
    finally:
        if not ok:
            stop_workers()
        if (not ok or stopped) and not verbose:  # closing busy workers early is expected: no warnings about it
            for lg in loggers:
                lg.setLevel(logging.CRITICAL)
        timeout = STOP_CLOSE_TIMEOUT_S if stopped else CLOSE_TIMEOUT_S
        if client is not None:
            with contextlib.suppress(Exception):
                client.close(timeout=timeout)
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=timeout)
        for lg, lvl in zip(loggers, levels, strict=True):
            lg.setLevel(lvl)


def _connect(scheduler: str) -> tuple[Any, dict[str, Any]]:
    from distributed import Client

    try:
        client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S:g}s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot connect to the Dask scheduler: {exc}", path=("--scheduler",),
                         expected="the address of a running scheduler, e.g. tcp://HOST:8786") from None
    try:
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            raise InputError(f"the scheduler at {scheduler} has no worker (waited {WORKER_WAIT_S:g} s)",
                             path=("--scheduler",), expected=f"workers started with `dask worker {scheduler}`") \
                from None
        _check_versions(client, scheduler)
        n = len(client.scheduler_info().get("workers", {}))
    except BaseException:
        with contextlib.suppress(Exception):
            client.close()
        raise
    return client, {"scheduler": scheduler, "workers": n, "description": f"Dask scheduler {scheduler} ({n} workers)"}


def _check_versions(client: Any, scheduler: str) -> None:
    from dlaopt import __version__

    try:
        versions = client.run(worker_version)
    except Exception as exc:
        raise InputError(f"the workers cannot run dlaopt: {type(exc).__name__}: {exc}", path=("--scheduler",),
                         expected=f"dlaopt {__version__} installed in every worker's environment") from None
    wrong = {w: v for w, v in versions.items() if v != __version__}
    if wrong:
        listed = ", ".join(f"{w} has {v}" for w, v in sorted(wrong.items()))
        raise InputError(f"workers of {scheduler} run another dlaopt version ({listed})", path=("--scheduler",),
                         expected=f"dlaopt {__version__} on every worker")


def _rows(sweep: Sweep, records: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    keys = (record_key(task.name, m) for task in sweep.tasks for m in sweep.methods)
    return with_ratios([dict(records[k]) for k in keys if k in records])

