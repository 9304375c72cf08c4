"""The exact selection models of ConfuciuX-style co-design against brute force on small random cost tables, and the
bisection against the MILP on larger ones."""

from __future__ import annotations

import numpy as np
import pytest

from dlaopt.formulations.codesign import levels, selection
from dlaopt.formulations.codesign.selection import SelectionProblem
from dlaopt.solvers.result import SolveOptions, Status

EXACT = ("milp", "cpsat")


def random_problem(seed: int, *, aggregate: str, deployment: str, resources: int = 1, tightness: float | None = None,
                   ) -> SelectionProblem:
    """2–4 layers, 3–6 points; integer costs drawn from a small range (many ties), a few points unable to run a
    layer, integer resources per point (area-like) or per layer and point (power-like)."""
    rng = np.random.default_rng(seed)
    n_layers, n_points = int(rng.integers(2, 5)), int(rng.integers(3, 7))
    cost = rng.integers(1, 12, (n_layers, n_points)).astype(float)
    cost[rng.random(cost.shape) < 0.1] = np.inf
    res: dict[str, np.ndarray] = {}
    for r in range(resources):
        shape = (n_points,) if r == 0 else (n_layers, n_points)
        res[f"r{r}"] = rng.integers(1, 6, shape).astype(float)
    frac = rng.uniform(0.2, 1.1) if tightness is None else tightness
    budgets = {}
    for name, arr in res.items():
        full = np.broadcast_to(arr, cost.shape)
        top = full.max(axis=1).sum() if deployment == "lp" else full.max()
        budgets[name] = float(np.floor(frac * top))
    return SelectionProblem.create(cost, res, budgets, aggregate=aggregate, deployment=deployment)


def check_answer(problem: SelectionProblem, got: selection.Selection, ref: selection.Selection) -> None:
    if ref.status == Status.INFEASIBLE:
        assert got.status == Status.INFEASIBLE, (got.method, got)
        return
    assert got.status == Status.OPTIMAL, (got.method, got.status)
    assert problem.feasible(got.choice), got.method
    assert got.value == pytest.approx(problem.value(got.choice))
    assert got.value == pytest.approx(ref.value, rel=1e-9), got.method
    assert got.bound <= got.value + 1e-9


CASES = [(seed, agg, dep) for seed in range(30) for agg in ("sum", "max") for dep in ("lp", "ls")]


@pytest.mark.parametrize(("seed", "aggregate", "deployment"), CASES)
def test_exact_models_equal_brute_force(seed: int, aggregate: str, deployment: str) -> None:
    problem = random_problem(seed, aggregate=aggregate, deployment=deployment, resources=1 + seed % 2)
    ref = selection.brute_force(problem)
    for method in EXACT:
        for use_pruning in (True, False):
            got = selection.solve(problem, method, use_pruning=use_pruning)
            check_answer(problem, got, ref)
    if deployment == "ls":
        check_answer(problem, selection.ls_scan(problem), ref)
    if aggregate == "max" and problem.use.shape[0] == 1:
        check_answer(problem, selection.bisection(problem), ref)


@pytest.mark.parametrize("deployment", ["lp", "ls"])
@pytest.mark.parametrize("aggregate", ["sum", "max"])
def test_infeasible_budget(aggregate: str, deployment: str) -> None:
    for seed in range(5):
        problem = random_problem(seed, aggregate=aggregate, deployment=deployment, tightness=0.0)
        assert selection.brute_force(problem).status == Status.INFEASIBLE
        methods = ["milp", "cpsat"] + (["bisection"] if aggregate == "max" else [])
        for method in methods:
            for kwargs in ({"use_pruning": False}, {}) if method != "bisection" else ({},):
                assert selection.solve(problem, method, **kwargs).status == Status.INFEASIBLE, method


def test_infeasible_only_jointly() -> None:
    """Two resources, each satisfiable alone, never together (every mix overshoots one of them)."""
    cost = np.ones((2, 2))
    problem = SelectionProblem.create(cost, {"a": np.array([1.0, 3.0]), "b": np.array([3.0, 1.0])},
                                      {"a": 3.0, "b": 3.0}, aggregate="sum", deployment="lp")
    assert selection.brute_force(problem).status == Status.INFEASIBLE
    for method in EXACT:
        assert selection.solve(problem, method, use_pruning=False).status == Status.INFEASIBLE
        assert selection.solve(problem, method).status == Status.INFEASIBLE


def test_ties_and_dominance() -> None:
    """Identical points: exactly one survives pruning; equal costs with less area win."""
    cost = np.array([[5.0, 5.0, 5.0, 3.0], [2.0, 2.0, 2.0, 1.0]])
    area = np.array([2.0, 2.0, 1.0, 4.0])
    problem = SelectionProblem.create(cost, {"area": area}, {"area": 5.0}, aggregate="max", deployment="lp")
    keep = selection.prune(problem)
    assert keep.tolist() == [[False, False, True, True], [False, False, True, True]]
    twins = SelectionProblem.create(np.array([[4.0, 4.0, 1.0]]), {"area": np.array([1.0, 1.0, 3.0])},
                                    {"area": 3.0}, aggregate="sum", deployment="lp")
    assert selection.prune(twins).tolist() == [[True, False, True]]
    # budget 5: layer 1 point 3 (area 4) + layer 2 point 2 (area 1) -> max(3, 2) = 3
    ref = selection.brute_force(problem)
    assert ref.value == 3.0
    for method in ("milp", "cpsat", "bisection"):
        got = selection.solve(problem, method)
        assert got.value == 3.0 and problem.feasible(got.choice)
    assert selection.bisection(problem).choice.tolist() == [3, 2]


@pytest.mark.parametrize("seed", range(6))
def test_pruning_keeps_an_optimum(seed: int) -> None:
    for aggregate in ("sum", "max"):
        problem = random_problem(100 + seed, aggregate=aggregate, deployment="lp", resources=2)
        keep = selection.prune(problem)
        ref = selection.brute_force(problem)
        if ref.status == Status.INFEASIBLE:
            continue
        restricted = np.where(keep, problem.cost, np.inf)
        sub = SelectionProblem(restricted, problem.use, problem.budget, problem.aggregate, "lp",
                               problem.resource_names)
        assert selection.brute_force(sub).value == pytest.approx(ref.value)


def random_large(seed: int, n_layers: int = 30) -> SelectionProblem:
    """Table 8.1's 12 × 12 grid with a made-up latency model: latency falls with PEs and buffer, then flattens
    (over-provisioning), area grows with PEs and buffer; the IoT budget of Table 8.2."""
    rng = np.random.default_rng(seed)
    grid = levels.action_grid("dla")
    pe, buf = grid.pe.astype(float), grid.buffer.astype(float)
    work = rng.uniform(1e5, 1e7, n_layers)
    need_pe = rng.choice(levels.PE_LEVELS[5:], n_layers)
    need_buf = rng.choice(levels.NVDLA_BUFFER_LEVELS, n_layers)
    lat = work[:, None] / np.minimum(pe[None], need_pe[:, None]) * (1 + need_buf[:, None] / buf[None])
    lat = np.round(lat * rng.uniform(0.95, 1.05, lat.shape))
    area = 0.01 * pe + 0.0005 * buf
    c_max = levels.max_consumption(area, grid.top, "lp", n_layers)
    budget = levels.platform_budget(c_max, "iot")
    return SelectionProblem.create(lat, {"area": area}, {"area": budget}, aggregate="max", deployment="lp")


@pytest.mark.parametrize("seed", range(3))
def test_bisection_equals_milp_on_large_tables(seed: int) -> None:
    problem = random_large(seed)
    fast = selection.bisection(problem)
    exact = selection.milp(problem, options=SolveOptions(time_limit=60))
    assert fast.status == exact.status == Status.OPTIMAL
    assert fast.value > problem.cost.min(axis=1).max()  # the budget binds
    assert fast.value == pytest.approx(exact.value, rel=1e-9)
    assert problem.feasible(fast.choice) and problem.feasible(exact.choice)
    # the bisection's assignment uses the least total area among optimal ones
    assert problem.consumption(fast.choice)[0] <= problem.consumption(exact.choice)[0] + 1e-9


def test_cpsat_equals_milp_on_large_sum() -> None:
    problem = random_large(7, n_layers=12)
    sum_problem = SelectionProblem(problem.cost, np.round(problem.use * 1e4) / 1e4, problem.budget, "sum", "lp",
                                   problem.resource_names)
    a = selection.milp(sum_problem)
    b = selection.cpsat(sum_problem, options=SolveOptions(mip_rel_gap=0.0, time_limit=60))
    assert a.status == b.status == Status.OPTIMAL
    assert a.value == pytest.approx(b.value, rel=1e-6)


def test_levels_match_table_8_1_and_8_2() -> None:
    assert levels.NVDLA_BUFFER_LEVELS == (19, 29, 39, 49, 59, 69, 79, 89, 99, 109, 119, 129)
    assert len(levels.PE_LEVELS) == levels.N_LEVELS == 12
    grid = levels.action_grid()
    assert grid.n_points == 144 and grid.pe[grid.top] == 128 and grid.buffer[grid.top] == 129
    assert grid.index(11, 11) == grid.top
    assert levels.platform_budget(200.0, "iotx") == pytest.approx(10.0)
    with pytest.raises(ValueError):
        levels.buffer_levels("eye")
    assert levels.max_consumption(np.array([[1.0, 2.0], [3.0, 4.0]]), 1, "lp") == 6.0
    assert levels.max_consumption(np.array([[1.0, 2.0], [3.0, 4.0]]), 1, "ls") == 4.0


def test_create_validates() -> None:
    with pytest.raises(ValueError):
        SelectionProblem.create(np.ones((2, 3)), {"a": np.ones(4)}, {"a": 1.0})
    with pytest.raises(ValueError):
        SelectionProblem.create(np.ones((2, 3)), {"a": np.ones(3)}, {"b": 1.0})
    with pytest.raises(ValueError):
        SelectionProblem.create(np.ones((2, 3)), {"a": np.ones(3)}, {"a": 1.0}, aggregate="mean")
