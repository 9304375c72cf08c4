"""Process lifetimes and total time limits of the commands that solve in worker processes.

Each signal test starts ``python -m dlaopt ...`` in a subprocess, waits until its worker processes exist, notes every
descendant, sends a signal to the main process only, and asserts that within :data:`GONE_WITHIN_S` nothing it started
is left (the workers notice a dead parent by themselves: SIGKILL runs no handler) and, for SIGINT / SIGTERM, that
the command exited with 130 / 143. The total-time-limit tests assert that a command returns within its limit plus
:data:`TOTAL_LIMIT_SLACK_S` — wall-clock by nature; no answer is compared. Whatever happens, a test kills what is
left of the processes it started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest

from dlaopt.solvers.processes import Deadline, Terminated, interrupt_exit_code, worker_pool

ROOT = Path(__file__).resolve().parents[1]
RESNET18 = ROOT / "instances" / "mapping" / "resnet18-eyeriss.yaml"
GONE_WITHIN_S = 2.0  # after a signal to the main process, no process of the command may remain longer
TOTAL_LIMIT_SLACK_S = 4.0  # interpreter start-up and imports (before the limit starts) plus the final evaluation
STARTUP_WAIT_S = 40.0  # how long a test waits for the command's worker processes to appear
_SEEN: dict[int, psutil.Process] = {}  # every descendant seen by the running test (killed at its end)


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


@contextmanager
def _command(*args: str | Path, cwd: Path = ROOT) -> Iterator[tuple[subprocess.Popen[str], psutil.Process]]:
    """``python -m dlaopt ARGS`` running; on exit every process it started is killed (a failed test leaves none)."""
    env = {k: v for k, v in os.environ.items() if k != "DLAOPT_DEBUG"}
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.Popen([sys.executable, "-m", "dlaopt", *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    main = psutil.Process(proc.pid)
    try:
        yield proc, main
    finally:
        for p in [main, *_descendants(main), *_SEEN.values()]:
            with suppress(psutil.NoSuchProcess):
                p.kill()
        _SEEN.clear()
        proc.communicate(timeout=30)


def _descendants(main: psutil.Process) -> list[psutil.Process]:
    try:
        kids = main.children(recursive=True)
    except psutil.NoSuchProcess:
        kids = []
    _SEEN.update({k.pid: k for k in kids})
    return kids


def _wait_for_workers(main: psutil.Process, n: int, *, settle: float = 0.5) -> list[psutil.Process]:
    """The main process's descendants once at least ``n`` are up (bounded wait), after ``settle`` seconds more."""
    t_end = time.monotonic() + STARTUP_WAIT_S
    while time.monotonic() < t_end:
        if len(_alive(_descendants(main))) >= n:
            time.sleep(settle)
            return _alive(_descendants(main))
        if not main.is_running() or main.status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.05)
    pytest.fail(f"the command did not start {n} worker processes within {STARTUP_WAIT_S:g} s")


def _signal_and_check(proc: subprocess.Popen[str], main: psutil.Process, sig: signal.Signals, workers: int
                      ) -> float:
    """Send ``sig`` once ``workers`` descendants exist; assert that they and the main process are gone within
    GONE_WITHIN_S; the seconds it took."""
    procs = [main, *_wait_for_workers(main, workers)]
    t0 = time.monotonic()
    os.kill(proc.pid, sig)
    while _alive(procs) and time.monotonic() - t0 < GONE_WITHIN_S:
        proc.poll()  # reap the main process as soon as it exits
        time.sleep(0.02)
    left = _alive(procs)
    took = time.monotonic() - t0
    assert not left, f"after {sig.name}: still alive after {GONE_WITHIN_S} s: {[(p.pid, p.name()) for p in left]}"
    return took


# ================================================================================================ the building blocks
def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_worker_pool_kills_running_tasks_on_an_exception() -> None:
    with pytest.raises(KeyboardInterrupt), worker_pool(2) as pool:
        futures = [pool.submit(_sleep, 60) for _ in range(2)]
        time.sleep(1.0)
        procs = [psutil.Process(p.pid) for p in pool._processes.values()]  # type: ignore[attr-defined]
        raise KeyboardInterrupt
    assert not _alive(procs)
    assert all(f.done() for f in futures)


def test_deadline_and_exit_codes() -> None:
    d = Deadline(None)
    assert d.limit(5.0) == 5.0 and d.limit(None) is None and not d.expired
    d = Deadline(0.5)
    assert d.limit(10.0) <= 0.5 and d.limit(None) <= 0.5
    time.sleep(0.6)
    assert d.expired and d.limit(10.0) == 0.0
    assert interrupt_exit_code(Terminated()) == 143 and interrupt_exit_code(KeyboardInterrupt()) == 130


# ================================================================================================ signals
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_compare_mapping_leaves_no_process(sig: signal.Signals) -> None:
    with _command("compare", RESNET18, "--methods", "random,exact", "--json") as (proc, main):
        took = _signal_and_check(proc, main, sig, workers=2)
        out, _ = proc.communicate(timeout=10)
        if sig == signal.SIGTERM:
            assert proc.returncode == 143
            rows = json.loads(out)  # what finished, the rest marked as interrupted
            assert [r["method"] for r in rows] == ["random", "exact"]
            assert rows[0]["message"] == "interrupted before it finished"
        else:
            assert proc.returncode == -signal.SIGKILL
    print(f"compare {sig.name}: everything gone {took:.2f} s after the signal")


def test_solve_mapping_sigint_leaves_no_process() -> None:
    with _command("solve", RESNET18, "--quiet") as (proc, main):
        took = _signal_and_check(proc, main, signal.SIGINT, workers=2)
        proc.communicate(timeout=10)
        assert proc.returncode == 130
    print(f"solve SIGINT: everything gone {took:.2f} s after the signal")


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: hygiene\nmethods: [random, exact]\nsolve: {{time_limit: 60}}\n"
                     f"entries:\n  - instance: {RESNET18}\n", encoding="utf-8")
    return suite


def test_bench_sigterm_leaves_no_process_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with _command("bench", _suite(tmp_path), "--out", out, "--quiet") as (proc, main):
        took = _signal_and_check(proc, main, signal.SIGTERM, workers=2)
        proc.communicate(timeout=10)
        assert proc.returncode == 143
    assert "Incomplete" in (out / "results.md").read_text(encoding="utf-8")
    print(f"bench SIGTERM: everything gone {took:.2f} s after the signal")


def _sweep(tmp_path: Path) -> Path:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: hygiene\nproblem: mapping\nworkloads:\n  - {label: R18, zoo: resnet18}\n"
                     "hardware: {preset: eyeriss}\noptions: {workers: 1, random_samples: 200000}\n"
                     "grid:\n  objective: [energy, latency, edp]\nmethods: [random]\nsolve: {time_limit: 60}\n",
                     encoding="utf-8")
    return sweep


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_sweep_on_a_local_cluster_leaves_no_process(tmp_path: Path, sig: signal.Signals) -> None:
    with _command("sweep", _sweep(tmp_path), "--out", tmp_path / "out", "--workers", "2", "--quiet") as (proc, main):
        took = _signal_and_check(proc, main, sig, workers=2)
        proc.communicate(timeout=10)
        assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    print(f"sweep {sig.name}: everything gone {took:.2f} s after the signal")


# ================================================================================================ --total-time-limit
def test_compare_total_time_limit_bounds_the_command() -> None:
    limit = 4.0
    t0 = time.monotonic()
    with _command("compare", RESNET18, "--methods", "random,exact,ga", "--total-time-limit", str(limit),
                  "--json") as (proc, _):
        out, err = proc.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, err
    assert elapsed <= limit + TOTAL_LIMIT_SLACK_S, f"{elapsed:.1f} s for a {limit:g} s total limit"
    rows = {r["method"]: r for r in json.loads(out)}
    assert rows["ga"]["status"] == "no_solution"
    assert "total time limit" in rows["ga"]["message"]
    print(f"compare --total-time-limit {limit:g}: returned after {elapsed:.2f} s (process start included)")


def test_bench_total_time_limit_lists_what_did_not_run(tmp_path: Path) -> None:
    limit = 3.0
    out = tmp_path / "out"
    t0 = time.monotonic()
    with _command("bench", _suite(tmp_path), "--out", out, "--total-time-limit", str(limit), "--quiet") as (proc, _):
        _, err = proc.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, err
    assert elapsed <= limit + TOTAL_LIMIT_SLACK_S, f"{elapsed:.1f} s for a {limit:g} s total limit"
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert not doc["complete"] and doc["not_run"]
    assert "Stopped by the total time limit" in (out / "results.md").read_text(encoding="utf-8")
    finished = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r.get("failure") == "total_time_limit" for r in finished if f"{r['instance']} · {r['method']}"
               in doc["not_run"])
    print(f"bench --total-time-limit {limit:g}: returned after {elapsed:.2f} s (process start included)")


def test_sweep_total_time_limit_on_a_local_cluster(tmp_path: Path) -> None:
    from dlaopt.sweep import run_sweep

    limit = 6.0
    t0 = time.monotonic()
    report = run_sweep(_sweep(tmp_path), tmp_path / "out", engine="dask", workers=2, total_time_limit=limit)
    elapsed = time.monotonic() - t0
    assert elapsed <= limit + TOTAL_LIMIT_SLACK_S, f"{elapsed:.1f} s for a {limit:g} s total limit"
    assert report.not_run and not report.complete
    assert "Stopped by the total time limit" in report.markdown
    left = [p for p in _alive(psutil.Process().children(recursive=True))
            if "resource_tracker" not in " ".join(p.cmdline())]  # multiprocessing's, for this process's lifetime
    assert not left
    print(f"sweep --total-time-limit {limit:g}: returned after {elapsed:.2f} s")
