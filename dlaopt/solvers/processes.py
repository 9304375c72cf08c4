"""Process hygiene: worker processes that die with their parent, one deadline for a whole command, and SIGTERM.

* :func:`worker_pool` — the ``ProcessPoolExecutor`` of every part of dlaopt that solves in worker processes. Each
  worker sets the parent-death signal (``PR_SET_PDEATHSIG`` = SIGKILL, Linux) and runs a watchdog thread that polls
  its parent's pid (every platform): a worker whose parent was killed — even by SIGKILL, which runs no handler —
  exits at once instead of solving on for nobody. When the ``with`` block is left by an exception (Ctrl-C, SIGTERM,
  a failure), the pending tasks are cancelled and the workers killed; a plain ``shutdown`` would wait for the
  running tasks.
* :func:`map_until` — a function over many arguments in such workers, answers in order, cut off at a deadline.
* :func:`dask_setup` — the same for Dask workers: the local cluster of ``dlaopt sweep`` preloads this module
  (``preload=["dlaopt.solvers.processes"]``), so each worker process dies with the process that started it.
* :class:`Deadline` — a total time limit on a monotonic clock: each piece of work gets ``min(its own limit, the
  time left)`` (:meth:`Deadline.limit`) and a piece that would start after it is not started (:attr:`expired`).
* :func:`install_sigterm_handler` — SIGTERM raises :class:`Terminated`, a ``KeyboardInterrupt``: it takes the same
  path as Ctrl-C (partial results written, workers killed); the command line then exits with 143 instead of 130
  (:func:`interrupt_exit_code`).

This module imports nothing from dlaopt: every layer may use it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from typing import Any

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 0.2  # how often a worker's watchdog checks that its parent is alive
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM
NOT_STARTED_MESSAGE = "total time limit reached before it started"

_watched_parent: int | None = None


# ================================================================================================ dying with the parent
def _prctl_pdeathsig(sig: int) -> bool:
    """``prctl(PR_SET_PDEATHSIG, sig)`` on Linux; False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int, interval: float) -> None:
    while True:
        time.sleep(interval)
        if os.getppid() != parent:  # re-parented: the parent is gone
            os.kill(os.getpid(), signal.SIGKILL)


def die_with_parent(parent: int | None = None, *, interval: float = PARENT_POLL_S) -> None:
    """Make this process die when ``parent`` (default: its current parent) does: the parent-death signal on Linux
    and a watchdog thread polling the parent pid everywhere. Idempotent; a parent already gone kills us now."""
    global _watched_parent
    parent = os.getppid() if parent is None else parent
    if _watched_parent == parent:
        return
    _watched_parent = parent
    _prctl_pdeathsig(signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=_watch_parent, args=(parent, interval), name="dlaopt-parent-watchdog",
                     daemon=True).start()


def _init_worker(parent: int, initializer: Callable[..., Any] | None, initargs: tuple[Any, ...]) -> None:
    die_with_parent(parent)
    # the parent handles Ctrl-C (a terminal sends it to the whole process group) and kills its workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def process_pool(max_workers: int, initializer: Callable[..., Any] | None = None,
                 initargs: tuple[Any, ...] = ()) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` whose workers die with this process (see :func:`die_with_parent`)."""
    return ProcessPoolExecutor(max_workers=max_workers, initializer=_init_worker,
                               initargs=(os.getpid(), initializer, initargs))


def kill_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the pending tasks, kill the workers (running tasks included) and shut the pool down without waiting."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.kill()
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(timeout=1.0)


def descendants(pid: int | None = None) -> list[int]:
    """The pids of every living descendant of ``pid`` (default: this process), read from ``/proc`` (Linux; an
    empty list where it is not available)."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    out: list[int] = []
    stack = [root]
    while stack:
        for kid in children.get(stack.pop(), []):
            out.append(kid)
            stack.append(kid)
    return out


def kill_descendants(pid: int | None = None) -> None:
    """SIGKILL every living descendant of ``pid`` (default: this process; the last resort of an interrupted
    command: whatever path the interruption took, no worker outlives it)."""
    for kid in descendants(pid):
        with contextlib.suppress(OSError):
            os.kill(kid, signal.SIGKILL)


@contextlib.contextmanager
def worker_pool(max_workers: int, initializer: Callable[..., Any] | None = None,
                initargs: tuple[Any, ...] = ()) -> Iterator[ProcessPoolExecutor]:
    """:func:`process_pool` as a context: a normal exit waits for the tasks; an exception (KeyboardInterrupt,
    :class:`Terminated`, any error) cancels what is pending and kills the workers before it propagates."""
    pool = process_pool(max_workers, initializer, initargs)
    try:
        yield pool
    except BaseException:
        kill_pool(pool)
        raise
    pool.shutdown(wait=True)


DONE, RUNNING, NOT_STARTED = "done", "running", "not_started"


def map_until(fn: Callable[..., Any], args: list[tuple], workers: int, deadline: float | None = None,
              grace: float = 1.0) -> tuple[list[Any], list[str]]:
    """``fn(*a)`` for every ``a`` in :func:`process_pool` workers, answers in order. With a ``deadline``
    (``time.monotonic()``), an answer not in by ``deadline + grace`` is ``None`` and the pool is killed; the second
    list says, per item, :data:`DONE`, :data:`RUNNING` (handed to a worker, not answered) or :data:`NOT_STARTED`.
    The first exception a task raises is raised here (the workers killed); so is an interruption."""
    pool = process_pool(max(1, min(workers, len(args))))
    try:
        futures = [pool.submit(fn, *a) for a in args]
        timeout = None if deadline is None else max(0.0, deadline + grace - time.monotonic())
        done, pending = wait(futures, timeout=timeout, return_when=FIRST_EXCEPTION)
        failed = next((f for f in futures if f in done and f.exception() is not None), None)
        if failed is not None:
            raise failed.exception()  # type: ignore[misc]
    except BaseException:
        kill_pool(pool)
        raise
    running = {f for f in pending if f.running()}
    if pending:
        kill_pool(pool)
    else:
        pool.shutdown(wait=True)
    results = [f.result() if f in done else None for f in futures]
    states = [DONE if f in done else RUNNING if f in running else NOT_STARTED for f in futures]
    return results, states


def dask_setup(worker: Any = None) -> None:
    """Dask preload hook (``preload=["dlaopt.solvers.processes"]``): the worker process dies with its parent and
    ignores SIGINT (Ctrl-C reaches the whole process group; the parent handles it and kills its workers)."""
    die_with_parent()
    with contextlib.suppress(ValueError):  # only possible from the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)


# ================================================================================================ total time limit
class Deadline:
    """A total time limit for a command that solves several things (``--total-time-limit``), on a monotonic clock.

    ``Deadline(None)`` never expires. :meth:`limit` gives a piece of work ``min(its own limit, the time left)``; a
    piece is not started once :attr:`expired` (its result says :data:`NOT_STARTED_MESSAGE`)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.end = math.inf if seconds is None else self.start + float(seconds)

    @classmethod
    def never(cls) -> Deadline:
        return cls(None)

    @property
    def bounded(self) -> bool:
        return self.seconds is not None

    def left(self) -> float:
        """Seconds left (``inf`` without a limit, never below 0)."""
        return max(0.0, self.end - time.monotonic())

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.end

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def limit(self, own: float | None) -> float | None:
        """``min(own, time left)``; ``None`` when both are unbounded."""
        left = self.end - time.monotonic()
        if math.isinf(left):
            return own
        left = max(0.0, left)
        return left if own is None else min(float(own), left)

    def __repr__(self) -> str:
        return f"Deadline({self.seconds!r}, left={self.left():.3g})"


# ================================================================================================ SIGTERM
class Terminated(KeyboardInterrupt):  # noqa: N818 - it is an interruption, like KeyboardInterrupt
    """Raised by the SIGTERM handler: handled wherever Ctrl-C is (partial results written, workers killed)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def install_sigterm_handler() -> bool:
    """SIGTERM raises :class:`Terminated` in the main thread (False, and nothing done, in any other thread)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(signal.SIGTERM, _raise_terminated)
    return True


def interrupt_exit_code(exc: BaseException) -> int:
    """143 for SIGTERM (:class:`Terminated`), 130 for Ctrl-C (any other KeyboardInterrupt)."""
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED


__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "NOT_STARTED_MESSAGE",
    "Deadline",
    "Terminated",
    "dask_setup",
    "descendants",
    "die_with_parent",
    "install_sigterm_handler",
    "interrupt_exit_code",
    "kill_descendants",
    "kill_pool",
    "process_pool",
    "worker_pool",
]
