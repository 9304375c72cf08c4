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

from dlaopt.solvers.processes import (
    Deadline,
    Terminated,
    descendants,
    interrupt_exit_code,
    kill_descendants,
    worker_pool,
)

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


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_kill_descendants_kills_children_and_grandchildren() -> None:
    shell = subprocess.Popen(["sh", "-c", "sh -c 'sleep 60 & wait' & sleep 60 & wait"])
    try:
        t_end = time.monotonic() + 10
        while len(descendants(shell.pid)) < 3 and time.monotonic() < t_end:
            time.sleep(0.02)
        found = set(descendants(shell.pid))
        assert found == {k.pid for k in psutil.Process(shell.pid).children(recursive=True)} and len(found) == 3
        assert shell.pid in descendants()
        kill_descendants(shell.pid)
        assert shell.wait(timeout=10) == 0  # its children are gone: its ``wait`` returns
        procs = [psutil.Process(pid) for pid in found if psutil.pid_exists(pid)]
        t_end = time.monotonic() + 10
        while _alive(procs) and time.monotonic() < t_end:  # a SIGKILL is delivered asynchronously
            time.sleep(0.02)
        assert not _alive(procs)
    finally:
        with suppress(OSError):
            shell.kill()


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


def _check_cut_mapping(res: dict) -> list[str]:
    """A mapping result under a total time limit: when it has a solution, every layer is mapped and verified; every
    layer the limit left out is marked in the metrics and in its per-layer notes (status no_solution, completed_by
    a fixed-dataflow heuristic), and then the result is `feasible` without a bound, never `optimal`. The layers left
    out (none when every layer was solved in time: on a fast machine a limit may leave nothing out)."""
    from dlaopt.formulations.mapping.dispatch import NOT_FINISHED_MESSAGE
    from dlaopt.formulations.mapping.problem import FILL_HEURISTICS
    from dlaopt.solvers.processes import NOT_STARTED_MESSAGE

    left = res["metrics"].get("layers_not_solved", {})
    if res["status"] == "no_solution":
        assert "total time limit" in res["message"]
        return list(left)
    assert res["status"] in ("optimal", "feasible") and res["verified"], res["message"]
    if left:
        assert res["status"] == "feasible" and res["bound"] is None
        assert set(left) == set(res["metrics"]["layers_completed_by_heuristic"])
        assert "total time limit" in res["message"]
    layers = res["solution"]["layers"]
    assert {row["layer"] for row in res["metrics"]["layers"]} == set(layers)  # every layer mapped
    for name, doc in layers.items():
        notes = doc.get("solver")
        if notes is None:  # a layer of the same shape as a solved one shares its mapping
            continue
        if name in left:
            assert notes["status"] == "no_solution" and notes["completed_by"] in FILL_HEURISTICS
            assert left[name] in (NOT_STARTED_MESSAGE, NOT_FINISHED_MESSAGE) and left[name] in notes["message"]
        else:
            assert notes["status"] in ("optimal", "feasible") and "completed_by" not in notes
    return list(left)


def test_mapping_exact_cut_by_an_expired_deadline_is_completed_and_marked() -> None:
    """Deterministic: a deadline already passed when the layers are handed to the workers — none is solved, each is
    completed by a fixed-dataflow heuristic and marked; the whole solution verifies alone."""
    from dlaopt.harness import prepare, solve, verify
    from dlaopt.io.instance import load_instance
    from dlaopt.solvers.result import SolveOptions

    inst = load_instance(RESNET18)
    p = prepare(inst)
    t0 = time.monotonic()
    res = solve(p, "exact", options=SolveOptions(deadline=time.monotonic()))
    took = time.monotonic() - t0
    d = res.to_dict()
    left = _check_cut_mapping(d)
    assert d["status"] == "feasible" and sorted(left) == sorted(n.name for n in p.data.nests)
    assert verify(inst, res.solution_document()).feasible
    assert took <= TOTAL_LIMIT_SLACK_S, f"{took:.1f} s past an expired deadline"


def test_mapping_solve_total_time_limit_marks_the_layers_left_out(tmp_path: Path) -> None:
    limit = 1.5
    t0 = time.monotonic()
    with _command("solve", RESNET18, "--total-time-limit", str(limit), "--json", "-o",
                  tmp_path / "sol.yaml") as (proc, _):
        out, err = proc.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, err
    assert elapsed <= limit + TOTAL_LIMIT_SLACK_S, f"{elapsed:.1f} s for a {limit:g} s total limit"
    # Which layers 1.5 s leaves out depends on the machine (on an idle one, sometimes none); the deterministic test
    # above covers the marking of left-out layers, this one the command's wall time and a solution that verifies.
    left = _check_cut_mapping(json.loads(out))
    with _command("verify", RESNET18, tmp_path / "sol.yaml") as (check, _):
        _, verr = check.communicate(timeout=60)
    assert check.returncode == 0, verr
    print(f"solve --total-time-limit {limit:g}: returned after {elapsed:.2f} s (process start included), "
          f"{len(left)} layers left to a heuristic")


def test_compile_total_time_limit_writes_the_report(tmp_path: Path) -> None:
    """`dlaopt compile` with a total limit far below what the pipeline needs (its EDP mapping alone takes ~14 s, then
    pinning, bank mapping and the platform's job analysis and assignment): exit 0 within the limit plus the slack,
    the report written with the finished stages' files and every other stage marked. Where the limit lands varies
    with the machine's load (usually in mapping or pinning, the assignment stage never reached); the assertions
    hold wherever it does, and tests/test_pipeline.py stops the pipeline at chosen points deterministically."""
    limit = 1.0
    out = tmp_path / "out"
    t0 = time.monotonic()
    with _command("compile", "lenet5", "--hardware", "smaug-nvdla", "--platform", "magma-s1", "--total-time-limit",
                  str(limit), "--out", out, cwd=tmp_path) as (proc, _):
        stdout, err = proc.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, err
    assert elapsed <= limit + TOTAL_LIMIT_SLACK_S, f"{elapsed:.1f} s for a {limit:g} s total limit"
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    status = {s["stage"]: s["status"] for s in doc["stage_status"]}
    assert list(status) == ["mapping", "pinning", "bankmap", "assignment"]
    finished = {s["stage"] for s in doc["stages"]}
    assert status["mapping"].startswith(("done, cut short by the total time limit", "not run: total time limit",
                                         "not finished: total time limit")), status["mapping"]
    for stage, st in status.items():
        if stage in finished:
            assert st.startswith("done"), st
            assert (out / "stages" / f"{stage}-solution.yaml").is_file()
        else:
            assert st.startswith(("not run: total time limit", "not finished: total time limit")), st
            assert not (out / "stages" / f"{stage}.yaml").exists()
    md = (out / "report.md").read_text(encoding="utf-8")
    assert doc["complete"] == (finished == set(status)) == ("incomplete:" not in stdout)
    if not doc["complete"]:
        assert doc["end_to_end"] == {} and "**Incomplete**" in md and "Not computed" in md
    print(f"compile --total-time-limit {limit:g}: returned after {elapsed:.2f} s (process start included); "
          + "; ".join(f"{k}: {v}" for k, v in status.items()))
