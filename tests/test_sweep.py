"""Sweeps (``dlaopt sweep``): sweep files and their errors, Dask against one process, kill and resume, failing tasks,
an existing cluster, and the thesis table shared with ``dlaopt experiment thesis-sweep``."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import assert_bad_input, assert_rejected_file
from click.testing import CliRunner

from dlaopt.cli import cli
from dlaopt.experiments.pinning import (
    SWEEP_METHODS,
    THESIS_NETWORKS,
    THESIS_SIZES_KB,
    run_thesis_sweep,
    thesis_instance,
)
from dlaopt.io.instance import instance_from_dict
from dlaopt.sweep import load_sweep, run_sweep

ROOT = Path(__file__).resolve().parents[1]
DLAOPT = [sys.executable, "-m", "dlaopt"]
SOLVE = {"time_limit": 60, "seed": 0, "threads": 1, "node_limit": 2000}  # the node limit is what can stop a solve

BASE: dict[str, Any] = {
    "name": "t",
    "problem": "pinning",
    "workloads": [{"label": "Lenet5", "zoo": "lenet5"}],
    "hardware": {"preset": "smaug-nvdla"},
    "grid": {"spad_kb": [32]},
    "methods": ["naive", "exact"],
    "solve": SOLVE,
}
# for kill and resume: one task (Elu at 32 KB) takes seconds, the five others a fraction of one
SLOW: dict[str, Any] = {
    **BASE,
    "name": "slow",
    "workloads": [{"label": "Elu", "zoo": "elu"}, {"label": "Lenet5", "zoo": "lenet5"},
                  {"label": "Minerva", "zoo": "minerva"}],
    "grid": {"spad_kb": [32, 128]},
    "methods": ["naive", "greedy", "exact"],
}


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def essentials(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["instance"], r["method"], r["status"], r["objective"], r["bound"], r["verified"]) for r in rows]


@pytest.fixture(scope="module")
def small_local(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return run_sweep("small", tmp_path_factory.mktemp("small-local"), engine="local")


# ------------------------------------------------------------------------------------------------ sweep files
def test_shipped_sweeps_load_and_thesis_matches_the_experiment() -> None:
    small = load_sweep("small")
    assert len(small.tasks) == 4 and small.axes == ("spad_kb",)
    thesis = load_sweep("thesis")
    assert thesis.report == "thesis-table" and thesis.methods == SWEEP_METHODS
    assert thesis.workloads == tuple(THESIS_NETWORKS)
    assert [t.point["spad_kb"] for t in thesis.tasks[:7]] == list(THESIS_SIZES_KB)
    assert len(thesis.tasks) == len(THESIS_NETWORKS) * len(THESIS_SIZES_KB)
    for t in thesis.tasks:  # the experiment's instances (up to the name)
        ref = dict(instance_from_dict(thesis_instance(t.workload, t.point["spad_kb"])).document)
        assert {**t.document, "name": ref["name"]} == ref
    assert thesis.solve == {"time_limit": 60, "seed": 0, "threads": 1}  # the experiment's, one thread per task
    det = load_sweep("thesis-deterministic")  # the same tasks, with a deterministic-time limit on CP-SAT
    assert [t.document for t in det.tasks] == [t.document for t in thesis.tasks] and det.report == thesis.report
    assert det.solve["solver"] == "cpsat" and det.solve["threads"] == 1 and det.solve["extra"]["deterministic_time"]


@pytest.mark.parametrize(("change", "where"), [
    ({"workloadz": []}, "'workloadz'"),
    ({"workloads": [{"zoo": "lenet5"}]}, "key 'workloads[0]'"),
    ({"workloads": [{"label": "a", "zoo": "lenet5", "instance": "pinning/tiny-inline.yaml"}]}, "key 'workloads[0]'"),
    ({"workloads": [{"label": "a", "zoo": "no-such-net"}]}, "key 'workloads[0].zoo'"),
    ({"workloads": [{"label": "a", "zoo": "lenet5"}, {"label": "a", "zoo": "minerva"}]},
     "key 'workloads[1].label'"),
    ({"workloads": [{"label": "a", "instance": "pinning/no-such-file.yaml"}]}, "key 'workloads[0].instance'"),
    ({"methods": ["naive", "simplex"]}, "key 'methods[1]'"),
    ({"solve": {"time_limit": -1}}, "key 'solve.time_limit'"),
    ({"solve": {"solver": "gurobi"}}, "key 'solve.solver'"),
    ({"grid": {"spad_kb": [32, 32]}}, "key 'grid.spad_kb'"),
    ({"grid": {"spad_kb": [0]}}, "key 'grid.spad_kb'"),
    ({"grid": {"no_such_param": [1]}}, "key 'grid.no_such_param'"),
    ({"grid": {"options.oversize": ["squash"]}}, "key 'grid.options.oversize'"),
    ({"hardware": {"preset": "nope"}}, "key 'hardware.preset'"),
    ({"report": "thesis-table", "grid": {"options.oversize": ["tile"]}}, "key 'report'"),
])
def test_bad_sweep_is_a_located_input_error(tmp_path: Path, change: dict[str, Any], where: str) -> None:
    doc = {**copy.deepcopy(BASE), **change}
    if "workloadz" in change:
        del doc["workloads"]
    path = write(tmp_path / "bad.yaml", doc)
    assert_rejected_file(load_sweep, path, where, "sweep", tmp_path / "out")


def test_grid_axes_objective_options_and_instance_files(tmp_path: Path) -> None:
    doc = {**BASE, "workloads": [{"label": "tiny", "instance": "pinning/tiny-inline.yaml"}],
           "grid": {"objective": ["transfers", "thesis"], "options.oversize": ["tile", "cap"]}}
    del doc["hardware"]  # the instance file's own
    sweep = load_sweep(write(tmp_path / "axes.yaml", doc))
    assert [t.name for t in sweep.tasks] == [
        "tiny objective=transfers options.oversize=tile", "tiny objective=transfers options.oversize=cap",
        "tiny objective=thesis options.oversize=tile", "tiny objective=thesis options.oversize=cap"]
    assert [(t.document["objective"], t.document["options"]["oversize"]) for t in sweep.tasks] == [
        ("transfers", "tile"), ("transfers", "cap"), ("thesis", "tile"), ("thesis", "cap")]
    assert len({t.key for t in sweep.tasks}) == 4
    report = run_sweep(sweep, tmp_path / "out", engine="local")
    assert report.complete and len(report.rows) == 8 and all(r["verified"] for r in report.rows)
    csv_header = (tmp_path / "out" / "results.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert csv_header[:3] == ["workload", "grid.objective", "options.oversize"]  # 'objective' is a value column


# ------------------------------------------------------------------------------------------------ engines
def test_small_sweep_on_two_dask_workers_equals_one_process(tmp_path: Path, small_local: Any) -> None:
    report = run_sweep("small", tmp_path, engine="dask", workers=2)
    assert report.complete and report.ran == 4 and report.skipped == 0
    assert report.engine["workers"] == 2 and "LocalCluster" in report.engine["description"]
    assert essentials(report.rows) == essentials(small_local.rows)
    assert report.summary == small_local.summary
    assert len({r["worker"] for r in report.rows}) >= 1
    for name in ("results.jsonl", "results.csv", "results.json", "results.md", "summary.png"):
        assert (tmp_path / name).is_file()
    md = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert report.summary in md and "| Lenet5 | 32 |" in md
    assert json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["complete"] is True


def test_scheduler_address_of_an_existing_cluster(tmp_path: Path, small_local: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from distributed import LocalCluster

    from dlaopt.sweep import running

    monkeypatch.setattr(running, "CONNECT_TIMEOUT_S", 2.0)  # for the address where nothing listens

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=50) as cluster:
        result = CliRunner().invoke(cli, ["sweep", "small", "--out", str(tmp_path), "--scheduler",
                                          cluster.scheduler_address], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert f"Dask scheduler {cluster.scheduler_address} (1 workers)" in result.stderr
        assert len(cluster.workers) == 1  # the cluster is not ours to close
    assert result.stdout.startswith(small_local.summary)
    assert essentials(records(tmp_path)) == essentials(records(small_local.out_dir))
    bad = CliRunner().invoke(cli, ["sweep", "small", "--out", str(tmp_path / "x"), "--scheduler",
                                   "tcp://127.0.0.1:9"])
    assert_bad_input(bad.exit_code, bad.stderr, "--scheduler")


# ------------------------------------------------------------------------------------------------ kill and resume
@pytest.fixture
def session_cleanup() -> Iterator[list[int]]:
    groups: list[int] = []
    yield groups
    for pgid in groups:  # the process groups this test started, should anything be left
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def test_killed_sweep_resumes_with_the_rest_and_the_same_table(tmp_path: Path,
                                                               session_cleanup: list[int]) -> None:
    sweep_file = write(tmp_path / "slow.yaml", SLOW)
    out = tmp_path / "out"
    jsonl = out / "results.jsonl"
    n_tasks, n_methods = 6, 3
    proc = subprocess.Popen([*DLAOPT, "sweep", str(sweep_file), "--out", str(out), "--workers", "2"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    session_cleanup.append(proc.pid)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if jsonl.is_file() and jsonl.read_text(encoding="utf-8").count("\n") >= 1:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # the driver only: its worker processes must go by themselves
    proc.communicate(timeout=30)
    first = records(out)
    assert 1 <= len(first) < n_tasks * n_methods, "kill the run between its first and its last task"
    assert len(first) % n_methods == 0  # a task's records are written together
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the local cluster's workers exit when the driver is gone
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("worker processes outlived the killed sweep")

    again = subprocess.run([*DLAOPT, "sweep", str(sweep_file), "--out", str(out)], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    done_before = len(first) // n_methods
    assert f"resuming: {done_before} of {n_tasks} tasks already finished" in again.stderr
    assert f"{n_tasks - done_before} tasks run, {done_before} skipped" in again.stderr
    final = records(out)
    assert final[:len(first)] == first  # kept as they were
    runs = Counter(r["run_id"] for r in final)
    assert len(runs) == 2 and runs[first[0]["run_id"]] == len(first)
    assert sorted(runs.values()) == sorted([len(first), (n_tasks - done_before) * n_methods])

    reference = run_sweep(sweep_file, tmp_path / "reference", engine="local")
    assert again.stdout.startswith(reference.summary)
    rerun_rows = json.loads((out / "results.json").read_text(encoding="utf-8"))["rows"]
    assert essentials(rerun_rows) == essentials(reference.rows)


def test_interrupted_local_run_writes_what_finished_and_resumes(tmp_path: Path) -> None:
    sweep_file = write(tmp_path / "t.yaml", {**BASE, "workloads": SLOW["workloads"][1:]})
    out = tmp_path / "out"

    def stop_after_first(ev: Any) -> None:
        if ev.kind == "done":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep_file, out, engine="local", progress=stop_after_first)
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["complete"] is False and len(doc["rows"]) == 2
    assert "**Incomplete**: 1 of 2 tasks" in (out / "results.md").read_text(encoding="utf-8")
    report = run_sweep(sweep_file, out, engine="local")
    assert report.complete and report.ran == 1 and report.skipped == 1
    report = run_sweep(sweep_file, out, engine="local", resume=False)
    assert report.ran == 2 and report.skipped == 0 and len(records(out)) == 4


# ------------------------------------------------------------------------------------------------ failures
def test_failing_task_is_an_error_status_and_a_lost_one_runs_again(tmp_path: Path) -> None:
    # oversize 'error' refuses LeNet-5 on 2 KB scratchpads when the instance is prepared (on the worker)
    sweep_file = write(tmp_path / "f.yaml", {**BASE, "options": {"oversize": "error"}, "grid": {"spad_kb": [2, 2048]}})
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["sweep", str(sweep_file), "--out", str(out), "--engine", "local"])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "results.json").read_text(encoding="utf-8"))["rows"]
    bad = [r for r in rows if r["point"]["spad_kb"] == 2]
    good = [r for r in rows if r["point"]["spad_kb"] == 2048]
    assert [r["status"] for r in bad] == ["error", "error"] and not any(r["verified"] for r in bad)
    assert all("could not be prepared" in r["message"] and r["failure"] == "task" for r in bad)
    assert all(r["verified"] for r in good)
    assert "| Lenet5 | 2 | error | error | 0/2 |" in result.stdout
    assert "1 failed" in result.stderr

    # a failed task is a result (kept on resume); one whose worker died is not (run again)
    lines = records(out)
    for r in lines:
        if r["point"]["spad_kb"] == 2048:
            r["failure"] = "worker"
            r["status"] = "error"
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    report = run_sweep(sweep_file, out, engine="local")
    assert report.ran == 1 and report.skipped == 1
    assert [r["status"] for r in report.rows if r["point"]["spad_kb"] == 2048] == ["feasible", "optimal"]


# ------------------------------------------------------------------------------------------------ the thesis table
def test_thesis_table_of_a_sweep_equals_the_experiment(tmp_path: Path) -> None:
    nets, sizes = ["Minerva", "Lenet5"], [32, 128]
    doc = {"name": "thesis-slice", "problem": "pinning", "report": "thesis-table",
           "workloads": [{"label": n, "zoo": THESIS_NETWORKS[n][0], "params": THESIS_NETWORKS[n][1]} for n in nets],
           "hardware": {"preset": "smaug-nvdla"}, "objective": "transfers", "options": {"oversize": "tile"},
           "grid": {"spad_kb": sizes}, "methods": list(SWEEP_METHODS), "solve": SOLVE}
    report = run_sweep(write(tmp_path / "slice.yaml", doc), tmp_path / "sweep", engine="local")
    exp = run_thesis_sweep(tmp_path / "experiment", networks=nets, sizes_kb=sizes, time_limit=SOLVE["time_limit"],
                           threads=SOLVE["threads"], node_limit=SOLVE["node_limit"])
    swept = (tmp_path / "sweep" / "thesis_sweep.md").read_bytes()
    assert swept == exp.table_path.read_bytes() and report.thesis_table == exp.table_markdown
    assert "| Minerva |" in exp.table_markdown and "47.65%" in exp.table_markdown
    assert (tmp_path / "sweep" / "thesis_sweep.csv").is_file() and (tmp_path / "sweep" / "thesis_sweep.png").is_file()
    assert exp.table_markdown in (tmp_path / "sweep" / "results.md").read_text(encoding="utf-8")
