"""``dlaopt experiment allocation-benchmark``: the generators make valid instances at the requested tightness (the
planted placement accepted by the allocation evaluator), deterministically; the zoo instances are the pinning
residency cell for cell; a quick run writes a consistent table end to end."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_bad_input, run_dlaopt

from dlaopt.experiments import allocation as ab
from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution
from dlaopt.formulations.allocation.evaluator import check_placement


def _accepts(data: AllocationData, solution: AllocationSolution) -> bool:
    return check_placement(data, solution).valid


def _live_max(data: AllocationData) -> int:
    """The live-bytes bound computed step by step from the buffers (independently of ``AllocationData.bound``)."""
    steps = max(b.upper for b in data.buffers)
    live = [sum(b.size for b in data.buffers if b.lower <= t < b.upper) for t in range(steps)]
    return max(max(live), max(b.size for b in data.buffers))


def _grid_valid(data: AllocationData, offsets: np.ndarray) -> bool:
    """A direct check on a step × address grid (small capacities): no cell used twice, everything within capacity."""
    assert data.capacity is not None
    steps = max(b.upper for b in data.buffers)
    grid = np.zeros((steps, data.capacity), dtype=np.int64)
    for b, o in zip(data.buffers, offsets.tolist(), strict=True):
        if o < 0 or o % b.alignment or o + b.size > data.capacity:
            return False
        grid[b.lower:b.upper, o:o + b.size] += 1
    return bool(grid.max() <= 1)


@pytest.mark.parametrize(("n", "slack", "seed", "alignment"),
                         [(1, 0.0, 0, 1), (7, 0.0, 3, 1), (40, 0.0, 1, 1), (40, 0.01, 2, 1), (60, 0.05, 5, 1),
                          (50, 0.01, 4, 8), (200, 0.01, 0, 1)])
def test_planted_instances_fit_their_capacity_within_the_slack(n: int, slack: float, seed: int,
                                                               alignment: int) -> None:
    capacity = 4096 if n <= 60 else 1 << 20
    inst = ab.planted_instance(n, seed=seed, slack=slack, capacity=capacity, alignment=alignment)
    data = inst.data
    assert data.n == n and data.capacity == capacity
    assert len({b.id for b in data.buffers}) == n
    assert all(b.alignment == alignment and b.size % alignment == 0 for b in data.buffers)
    assert inst.planted is not None
    assert _accepts(data, inst.planted)  # the evaluator places every buffer within the capacity, none overlapping
    if capacity <= 4096:
        assert _grid_valid(data, inst.planted.offsets)
    bound = _live_max(data)
    assert bound == data.bound
    assert bound <= capacity <= (1 + slack) * bound + 1e-9
    if slack == 0.0:
        assert bound == capacity  # the pieces tile the rectangle: every step is full


def test_generators_are_deterministic_and_seeded() -> None:
    def key(inst: ab.BenchInstance) -> tuple[object, ...]:
        return (inst.data.capacity, inst.data.buffers,
                None if inst.planted is None else tuple(inst.planted.offsets.tolist()))

    assert key(ab.planted_instance(80, seed=3, slack=0.01)) == key(ab.planted_instance(80, seed=3, slack=0.01))
    assert key(ab.planted_instance(80, seed=3)) != key(ab.planted_instance(80, seed=4))
    assert key(ab.random_instance(80, seed=3, factor=1.005)) == key(ab.random_instance(80, seed=3, factor=1.005))
    assert key(ab.random_instance(80, seed=3)) != key(ab.random_instance(80, seed=4))
    a = ab.generated_instances((30, 60), seeds=2, slacks=(0.0, 0.01), factors=(1.0, 1.01))
    b = ab.generated_instances((30, 60), seeds=2, slacks=(0.0, 0.01), factors=(1.0, 1.01))
    assert [i.name for i in a] == [i.name for i in b] and [key(i) for i in a] == [key(i) for i in b]
    assert len(a) == 2 * 2 * (2 + 2) and len({i.name for i in a}) == len(a)


@pytest.mark.parametrize("factor", [1.0, 1.003, 1.01])
def test_random_instances_sit_at_the_requested_factor_of_the_bound(factor: float) -> None:
    inst = ab.random_instance(120, seed=1, factor=factor, alignment=16)
    data = inst.data
    bound = _live_max(data)
    assert data.capacity == math.ceil(factor * bound - 1e-9)
    assert bound <= data.capacity <= factor * bound + 1
    assert all(b.size % 16 == 0 and b.alignment == 16 for b in data.buffers)


def test_residency_runs_are_the_maximal_runs_of_the_placement() -> None:
    rng = np.random.default_rng(7)
    windows = [(int(lo), int(lo) + int(w) - 1) for lo, w in zip(rng.integers(0, 5, 12), rng.integers(1, 9, 12),
                                                                strict=True)]
    placement = [rng.integers(-1, 3, hi - lo + 1).astype(np.int32) for lo, hi in windows]
    for k in range(3):
        runs = ab.residency_runs(placement, windows, k)
        cells = {(b, m) for b, (lo, _) in enumerate(windows) for m in range(lo, lo + len(placement[b]))
                 if placement[b][m - lo] == k}
        covered = [(b, m) for b, first, last in runs for m in range(first, last + 1)]
        assert sorted(covered) == sorted(cells)  # every resident cell in exactly one run, nothing else
        for b, first, last in runs:  # maximal: the neighbouring steps are not in k
            assert (b, first - 1) not in cells and (b, last + 1) not in cells


def test_zoo_instances_are_the_pinning_residency_per_scratchpad() -> None:
    found, solves = ab.zoo_instances([str(ab.PINNING_INSTANCES / "minerva-smaug-32k.yaml")], methods=["greedy"],
                                     time_limit=10.0)
    assert solves and solves[0]["status"] in ("feasible", "optimal")
    assert found and all(i.family == "zoo" for i in found)
    from dlaopt import harness
    from dlaopt.io.instance import load_instance

    p = harness.prepare(load_instance(ab.PINNING_INSTANCES / "minerva-smaug-32k.yaml"))
    graph = p.data.graph
    r = harness.solve(p, "greedy")
    sol = p.problem.solution_from_dict(p.data, r.solution)
    for inst in found:  # the bytes resident in the scratchpad at every step are those of the live buffers
        k = next(i for i, s in enumerate(graph.scratchpads) if s.name == inst.info["scratchpad"])
        for m in range(len(graph.steps)):
            resident = sum(b.size_bytes for i, b in enumerate(graph.buffers) if sol.at(graph, i, m) == k)
            assert sum(b.size for b in inst.data.buffers if b.lower <= m < b.upper) == resident
    for inst in found:
        data = inst.data
        k = next(i for i, s in enumerate(graph.scratchpads) if s.name == inst.info["scratchpad"])
        if inst.name.endswith("/tight"):
            assert data.capacity == data.bound < graph.scratchpads[k].capacity
        else:
            assert data.capacity == graph.scratchpads[k].capacity
        # the pinning solution kept the resident bytes within the capacity at every step: so does the bound
        assert _live_max(data) == data.bound <= graph.scratchpads[k].capacity
        assert all(b.size == next(x.size_bytes for x in graph.buffers if x.name == b.id.rsplit("@", 1)[0])
                   for b in data.buffers)


def test_target_counts_500_buffer_instances_within_1pct_proven_under_1s() -> None:
    def inst(name: str, n: int, capacity: int, status: str, seconds: float) -> dict[str, object]:
        return {"name": name, "n": n, "capacity": capacity, "bound": 1000, "capacity_over_bound": capacity / 1000,
                "methods": {"exact": {"status": status, "time_s": seconds}}}

    t = ab.target_summary([inst("a", 500, 1010, "optimal", 0.5),  # in: at 1.01 x the bound, proven fast
                           inst("b", 500, 1000, "infeasible", 0.2),  # in: a proof of infeasibility counts
                           inst("c", 500, 1005, "no_solution", 0.1),  # in, not met: nothing proven
                           inst("d", 500, 1004, "optimal", 1.5),  # in, not met: too slow
                           inst("e", 500, 1011, "optimal", 0.1),  # out: more than 1 % above the bound
                           inst("f", 499, 1000, "optimal", 0.1)])  # out: not 500 buffers
    assert (t["instances"], t["met"], t["all_met"], t["not_met"]) == (4, 2, False, ["c", "d"])
    assert "NOT met — 2/4" in ab.target_text(t)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("allocation")
    r = run_dlaopt("experiment", "allocation-benchmark", "--quick", "--save-instances", "--out", out, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout, out


def test_quick_run_writes_a_consistent_table(quick_run: tuple[str, Path]) -> None:
    stdout, out = quick_run
    assert stdout.startswith("# Static memory allocation at tight capacities (quick)")
    assert "Target: 500 buffers" in stdout and "issue" not in stdout.lower()
    header = next(line for line in stdout.splitlines() if line.startswith("| instance |"))
    assert [c.strip() for c in header.strip("|").split("|")] == ["instance", "n", "capacity", "bound", "C / bound",
                                                                  *ab.METHODS]
    doc = json.loads((out / "allocation_benchmark.json").read_text(encoding="utf-8"))
    families = {i["family"] for i in doc["instances"]}
    assert families == set(ab.FAMILIES)
    with (out / "allocation_benchmark.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(ab.CSV_FIELDS) and len(rows) == len(doc["instances"]) * len(ab.METHODS)
    for inst in doc["instances"]:
        ms = inst["methods"]
        assert set(ms) == set(ab.METHODS)
        assert inst["bound"] <= inst["capacity"] or inst["family"] == "random"
        for m, r in ms.items():
            assert r["status"] != "error", (inst["name"], m, r)
            if r["peak"] is not None:
                assert r["verified"] is True and r["peak"] >= inst["bound"]
                assert r["fits"] == (r["peak"] <= inst["capacity"])
        # a fitting heuristic placement exists: exact must not call it infeasible, and finds one too
        if any(ms[h]["fits"] for h in ab.HEURISTICS):
            assert ms["exact"]["status"] == "optimal" and ms["exact"]["fits"]
        if inst["family"] in ("planted", "zoo"):  # a placement within the capacity is known to exist
            assert ms["exact"]["status"] != "infeasible" and ms["cpsat"]["status"] != "infeasible"
        if ms["exact"]["status"] == "infeasible" and ms["cpsat"]["status"] in ("optimal", "feasible"):
            pytest.fail(f"exact proves {inst['name']} infeasible, CP-SAT places it")
    assert doc["summary"]["target"]["instances"] == 0  # no 500-buffer instance at the quick scale


def test_saved_instances_read_back_with_their_planted_placement(quick_run: tuple[str, Path]) -> None:
    from dlaopt.io.buffers import read_buffer_table

    _, out = quick_run
    doc = json.loads((out / "allocation_benchmark.json").read_text(encoding="utf-8"))
    assert all((out / i["csv"]).is_file() for i in doc["instances"])
    planted = [i for i in doc["instances"] if i["family"] == "planted"]
    assert planted
    for inst in planted:
        table = read_buffer_table(out / inst["csv"])
        data = AllocationData(table.buffers.buffers, inst["capacity"])
        assert data.n == inst["n"] and data.bound == inst["bound"]
        assert _accepts(data, AllocationSolution.of([table.offsets[b.id] for b in data.buffers]))
        again = ab.planted_instance(inst["n"], seed=inst["seed"], slack=inst["slack"])
        assert again.data.buffers == data.buffers  # the file is the generator's instance


def test_bad_options_exit_2(tmp_path: Path) -> None:
    r = run_dlaopt("experiment", "allocation-benchmark", "--quick", "--families", "nope", "--out", tmp_path)
    assert_bad_input(r.returncode, r.stderr, "--families", "nope")
    r = run_dlaopt("experiment", "allocation-benchmark", "--quick", "--time-limit", "0", "--out", tmp_path)
    assert_bad_input(r.returncode, r.stderr, "--time-limit")
