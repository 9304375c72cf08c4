"""The multi-accelerator problem through the harness and the CLI: task groups and inline tables, every method
verified by the fluid evaluator, exact never worse than its warm start and equal to brute force on a tiny group,
precedence, the Gantt chart, located errors."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_helpers import run_dlaopt, solve_and_verify

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator
from dlaopt.formulations.multiaccel.model import Assignment
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "instances" / "multiaccel" / "tiny-inline.yaml"
DET = SolveOptions(threads=1, deterministic=True, seed=0, extra={"deterministic_time": 5.0})


def tiny_doc(**options: object) -> dict:
    doc = yaml.safe_load(TINY.read_text())
    doc["options"] = {**doc.get("options", {}), **options}
    return doc


def brute_force_makespan(p: harness.Prepared) -> float:
    """Every assignment of every job and every order on every sub-accelerator, by the fluid evaluator."""
    data = p.data
    n, m = data.table.n_jobs, data.table.n_accelerators
    ev = FluidEvaluator(data)
    best = np.inf
    for perm in itertools.permutations(range(n)):
        for acc in itertools.product(range(m), repeat=n):
            order: list[list[int]] = [[] for _ in range(m)]
            for j in perm:
                order[acc[j]].append(j)
            best = min(best, ev.makespan(order))
    return float(best)


def test_tiny_inline_every_method_verified_and_exact_is_the_best() -> None:
    p = harness.prepare(instance_from_dict(tiny_doc()))
    results = {r.method: r for r in harness.compare(p, options=DET)}
    assert set(results) == {"magma", "herald", "ai-mt", "lpt", "random", "exact"}
    for r in results.values():
        assert r.verified, (r.method, r.message)
    exact = results["exact"]
    assert all(exact.objective <= r.objective * (1 + 1e-12) for r in results.values())
    truth = brute_force_makespan(p)
    assert exact.bound is not None and exact.bound <= truth * (1 + 1e-9)
    assert exact.objective >= truth * (1 - 1e-9)
    assert exact.objective == pytest.approx(truth, rel=1e-6)


def test_precedence_is_respected_by_every_method() -> None:
    p = harness.prepare(instance_from_dict(tiny_doc(precedence=True)))
    assert p.data.precedence == ((0, 1), (2, 3))  # a before b (cnn), c before d (mlp)
    for r in harness.compare(p, options=DET):
        assert r.verified, (r.method, r.message)
        sol = p.problem.solution_from_dict(p.data, r.solution_document()["solution"])
        sim = FluidEvaluator(p.data).simulate(sol)
        assert sim.start[1] >= sim.end[0] - 1e-15 and sim.start[3] >= sim.end[2] - 1e-15


def test_task_group_instance_and_cli(tmp_path: Path) -> None:
    doc = {"problem": "multiaccel", "workload": {"task": "recommendation", "group_size": 12, "seed": 3},
           "hardware": {"platform": "magma-s2", "params": {"system_bandwidth_gbps": 1}}}
    path = tmp_path / "rec.yaml"
    path.write_text(yaml.safe_dump(doc))
    sol = tmp_path / "sol.yaml"
    solve_and_verify(path, sol, "--method", "herald")
    svg = tmp_path / "g.svg"
    draw = run_dlaopt("gantt", path, sol, "-o", svg)
    assert draw.returncode == 0, draw.stderr
    text = svg.read_text()
    assert text.startswith("<svg") and text.rstrip().endswith("</svg>")
    assert text.count("<title>") == 12  # one box per job
    for name in ("hb32-0", "lb32-0", "system 1 GB/s"):
        assert name in text


def test_solution_round_trip_and_tampering() -> None:
    p = harness.prepare(instance_from_dict(tiny_doc()))
    r = harness.solve(p, "lpt", options=DET)
    doc = r.solution_document()
    assert harness.verify(p, doc).feasible
    bad = yaml.safe_load(yaml.safe_dump(doc))
    first = next(iter(bad["solution"]["order"]))
    bad["solution"]["order"][first].append(bad["solution"]["order"][first][0])  # a job twice
    ev = harness.verify(p, bad)
    assert not ev.feasible and ev.violations
    bad = yaml.safe_load(yaml.safe_dump(doc))
    bad["solution"]["order"]["nope"] = []
    with pytest.raises(InputError) as exc:
        harness.verify(p, bad)
    assert exc.value.path == ("solution", "order", "nope")


@pytest.mark.parametrize(("change", "path", "words"), [
    ({"hardware": {"preset": "eyeriss"}}, ("hardware",), "platform"),
    ({"workload": {"task": "space"}}, ("workload", "task"), "space"),
    ({"hardware": {"platform": "magma-s9"}}, ("hardware", "platform"), "magma-s9"),
])
def test_bad_input_is_located(change: dict, path: tuple, words: str) -> None:
    doc = tiny_doc()
    doc.update(change)
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(doc))
    assert exc.value.path[:len(path)] == path and words in exc.value.render()


def test_inline_table_with_the_wrong_number_of_columns() -> None:
    doc = tiny_doc()
    doc["workload"]["jobs"][2]["latency_us"] = [50, 50]
    doc["workload"]["jobs"][2]["bandwidth_gbps"] = [3.0, 3.0]
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(doc))
    assert exc.value.path == ("workload", "jobs", 2, "latency_us") and "4 sub-accelerators" in exc.value.message


def test_other_problems_refuse_a_platform() -> None:
    doc = {"problem": "mapping", "workload": {"zoo": "lenet5"},
           "hardware": {"platform": "magma-s1"}}
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(doc))
    assert exc.value.path == ("hardware",) and "one accelerator" in exc.value.message


def test_deterministic_exact() -> None:
    a = harness.solve(harness.prepare(instance_from_dict(tiny_doc())), "exact", options=DET)
    b = harness.solve(harness.prepare(instance_from_dict(tiny_doc())), "exact", options=DET)
    assert a.solution_document()["solution"] == b.solution_document()["solution"]
    assert a.status in (Status.OPTIMAL, Status.FEASIBLE)


def test_warm_start_given_is_never_lost() -> None:
    p = harness.prepare(instance_from_dict(tiny_doc(warm_start=[])))
    given = Assignment([[0, 1], [2], [3], [4]])
    value = FluidEvaluator(p.data).simulate(given).makespan
    r = harness.solve(p, "exact", options=SolveOptions(threads=1, deterministic=True, seed=0,
                                                       extra={"deterministic_time": 0.01,
                                                              "warm_start_assignment": given}))
    assert r.verified and r.objective <= value * (1 + 1e-12)
