"""ConfuciuX's search methods and baselines (seed 001 Chapter 8) over small cost tables, checked against brute
force: feasibility of every answer, never better than the proven optimum, reaching it on tiny tables, determinism,
sample accounting, the hand-written LSTM gradient against finite differences, and REINFORCE learning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlaopt.formulations.codesign import search, selection
from dlaopt.formulations.codesign.search import LSTMPolicy, SearchResult
from dlaopt.formulations.codesign.selection import SelectionProblem

AXES = (3, 3)


def grid_problem(seed: int, *, n_layers: int = 3, aggregate: str = "sum", deployment: str = "lp",
                 frac: float = 0.5, power: bool = False, budget: float | None = None) -> SelectionProblem:
    """A (PE level × buffer level) grid: cost falls with more PEs and buffer (with noise), area grows with both;
    the area budget is ``frac`` of the all-top consumption (LP: every layer at the top point), so the cheapest
    assignment does not fit. ``power`` adds a per-layer resource with a budget."""
    rng = np.random.default_rng(seed)
    n_points = math.prod(AXES)
    lv = np.stack(np.unravel_index(np.arange(n_points), AXES), axis=-1)
    work = rng.uniform(5, 50, n_layers)
    cost = work[:, None] / (1 + lv[:, 0])[None] * (1 + 0.5 / (1 + lv[:, 1]))[None] * rng.uniform(0.8, 1.2,
                                                                                              (n_layers, n_points))
    cost = np.round(cost, 3)
    area = (1 + 2 * lv[:, 0] + lv[:, 1]).astype(float)
    top = area.max() * (n_layers if deployment == "lp" else 1)
    resources = {"area": area}
    budgets = {"area": float(np.floor(frac * top)) if budget is None else budget}
    if power:
        pw = np.round(area[None] * rng.uniform(0.5, 1.5, (n_layers, n_points)), 2)
        resources["power"] = pw
        budgets["power"] = float(np.floor(0.6 * (pw.max(axis=1).sum() if deployment == "lp" else pw.max())))
    return SelectionProblem.create(cost, resources, budgets, aggregate=aggregate, deployment=deployment)


def features(problem: SelectionProblem, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 64, (problem.n_layers, 8)).astype(float)


def unconstrained(problem: SelectionProblem) -> float:
    free = SelectionProblem(problem.cost, problem.use, np.full_like(problem.budget, np.inf), problem.aggregate,
                            problem.deployment, problem.resource_names)
    return selection.brute_force(free).value


def check_result(problem: SelectionProblem, res: SearchResult, optimum: float) -> None:
    """Feasible (or None), valued by the problem, never below the optimum, and a consistent trace."""
    if res.choice is None:
        assert res.value == math.inf and res.trace == []
    else:
        assert res.choice.shape == (problem.n_layers,)
        assert problem.feasible(res.choice), res.method
        assert res.value == problem.value(res.choice)
        assert res.value >= optimum - 1e-9, res.method
        if problem.deployment == "ls":
            assert np.unique(res.choice).size == 1
        assert res.trace and res.trace[-1][1] == res.value
    counts = [s for s, _ in res.trace]
    values = [v for _, v in res.trace]
    assert counts == sorted(set(counts)) and all(1 <= s <= res.samples for s in counts)
    assert all(b < a for a, b in zip(values, values[1:], strict=False)), res.method


def run_all(problem: SelectionProblem, seed: int = 0) -> list[SearchResult]:
    feats = features(problem)
    start = search._fallback_start(problem)
    return [
        search.random_search(problem, AXES, samples=200, seed=seed),
        search.genetic(problem, AXES, samples=200, population=20, seed=seed),
        search.reinforce(problem, AXES, feats, epochs=60, hidden=16, seed=seed),
        search.local_ga(problem, AXES, start, generations=20, seed=seed),
        search.confuciux(problem, AXES, feats, epochs=40, generations=20, hidden=16, seed=seed),
    ]


CASES = [(seed, agg, dep) for seed in range(3) for agg in ("sum", "max") for dep in ("lp", "ls")]


@pytest.mark.parametrize(("seed", "aggregate", "deployment"), CASES)
def test_every_method_is_feasible_and_never_beats_the_optimum(seed: int, aggregate: str, deployment: str) -> None:
    problem = grid_problem(seed, aggregate=aggregate, deployment=deployment, power=seed == 1,
                           n_layers=3 + seed % 2)
    ref = selection.brute_force(problem)
    assert ref.choice is not None and math.isfinite(ref.value)
    assert unconstrained(problem) < ref.value  # the budget binds
    for res in run_all(problem, seed):
        check_result(problem, res, ref.value)


@pytest.mark.parametrize(("aggregate", "deployment"), [(a, d) for a in ("sum", "max") for d in ("lp", "ls")])
def test_enough_samples_reach_the_optimum(aggregate: str, deployment: str) -> None:
    problem = grid_problem(7, aggregate=aggregate, deployment=deployment)
    ref = selection.brute_force(problem)
    assert unconstrained(problem) < ref.value  # the unconstrained best is infeasible
    results = [
        search.random_search(problem, AXES, samples=20_000, seed=1),
        search.genetic(problem, AXES, samples=4_000, seed=1),
        search.confuciux(problem, AXES, features(problem), epochs=300, generations=300, hidden=32, seed=1),
    ]
    for res in results:
        check_result(problem, res, ref.value)
        assert res.value == pytest.approx(ref.value, rel=1e-12), res.method


def test_same_seed_same_result() -> None:
    problem = grid_problem(3, n_layers=4, power=True)
    first, second = run_all(problem, seed=5), run_all(problem, seed=5)
    for a, b in zip(first, second, strict=True):
        assert (a.choice is None) == (b.choice is None)
        if a.choice is not None:
            assert np.array_equal(a.choice, b.choice)
        assert (a.value, a.samples, a.trace) == (b.value, b.samples, b.trace), a.method
    assert first[2].stats["values"] == second[2].stats["values"]


def test_sample_accounting() -> None:
    problem = grid_problem(4, n_layers=4)
    feats, start = features(problem), search._fallback_start(problem)
    assert search.random_search(problem, AXES, samples=5000, seed=0).samples == 5000
    ga = search.genetic(problem, AXES, samples=250, population=100, seed=0)
    assert ga.samples == 250 and ga.stats["generations"] == 3  # ⌈250 / 100⌉
    assert search.local_ga(problem, AXES, start, generations=7, seed=0).samples == 1 + 7 * 20
    assert search.local_ga(problem, AXES, start, generations=7, samples=50, seed=0).samples == 50
    assert search.reinforce(problem, AXES, feats, epochs=33, hidden=8).samples == 33
    cx = search.confuciux(problem, AXES, feats, epochs=30, generations=5, hidden=8)
    assert cx.samples == 30 + 1 + 5 * 20 == cx.stats["global_samples"] + cx.stats["local_samples"]
    assert cx.value <= cx.stats["global_value"]


@pytest.mark.parametrize("aggregate", ["sum", "max"])
def test_ls_returns_one_repeated_point(aggregate: str) -> None:
    problem = grid_problem(5, n_layers=4, aggregate=aggregate, deployment="ls")
    best = selection.ls_scan(problem).value
    for res in run_all(problem):
        assert res.choice is not None, res.method
        assert np.all(res.choice == res.choice[0])
        assert res.value >= best - 1e-9


@pytest.mark.parametrize("deployment", ["lp", "ls"])
def test_infeasible_budget_gives_none(deployment: str) -> None:
    problem = grid_problem(2, deployment=deployment, budget=0.5)  # every point uses at least 1 area unit
    assert selection.brute_force(problem).value == math.inf
    for res in run_all(problem):
        assert res.choice is None and res.value == math.inf and res.trace == [], res.method
        assert res.samples > 0


def test_unrunnable_points_are_never_chosen() -> None:
    problem = grid_problem(6, n_layers=3, frac=1.0)
    cost = problem.cost.copy()
    cost[:, 0::2] = np.inf  # half the points cannot run any layer
    blocked = SelectionProblem(cost, problem.use, problem.budget, problem.aggregate, problem.deployment,
                               problem.resource_names)
    ref = selection.brute_force(blocked)
    for res in run_all(blocked):
        check_result(blocked, res, ref.value)
        assert res.choice is not None and np.all(res.choice % 2 == 1)


def test_lstm_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(11)
    policy = LSTMPolicy(4, 5, (3, 4), rng)
    for k in ("V", "d", "b"):
        policy.params[k][...] = rng.normal(0.0, 0.7, policy.params[k].shape)
    steps = 4
    xs = rng.uniform(-1, 1, (steps, 4))
    actions = np.stack([rng.integers(0, 3, steps), rng.integers(0, 4, steps)], axis=1)
    weights = rng.normal(0.0, 1.0, steps)
    _, caches = policy.forward(xs)
    grads = policy.backward(caches, actions, weights)
    eps = 1e-6
    for name, param in policy.params.items():
        numeric = np.zeros_like(param)
        for idx in np.ndindex(param.shape):
            old = param[idx]
            param[idx] = old + eps
            up = policy.loss(xs, actions, weights)
            param[idx] = old - eps
            down = policy.loss(xs, actions, weights)
            param[idx] = old
            numeric[idx] = (up - down) / (2 * eps)
        assert np.abs(numeric).max() > 1e-4, name  # every parameter matters
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-8, err_msg=name)


def test_adam_minimises_a_quadratic() -> None:
    params = {"x": np.array([3.0, -2.0])}
    opt = search.Adam(params, lr=0.05)
    for _ in range(2000):
        opt.update({"x": 2.0 * (params["x"] - np.array([1.0, 0.5]))})
    np.testing.assert_allclose(params["x"], [1.0, 0.5], atol=1e-3)


@pytest.mark.parametrize("deployment", ["lp", "ls"])
def test_reinforce_learns_the_clearly_best_point(deployment: str) -> None:
    """Every layer costs 10 on every point but point 4 (levels (1, 1)), where it costs 1; no budget binds. The
    first policy is uniform (zero heads), so the first epochs average ``3 · (8/9 · 10 + 1/9 · 1) = 27`` for three
    layers (LS: each epoch 30 or 3, mean 27 too); a learning policy moves its mass to point 4. The mean value of the
    last 50 epochs must be below half that of the first 50 (values rather than rewards: the reward's reference
    ``c^max`` moves during training)."""
    n_layers, n_points = 3, math.prod(AXES)
    cost = np.full((n_layers, n_points), 10.0)
    cost[:, 4] = 1.0
    problem = SelectionProblem.create(cost, {"area": np.ones(n_points)}, {"area": 100.0}, deployment=deployment)
    res = search.reinforce(problem, AXES, features(problem), epochs=300, hidden=32, seed=3)
    values = np.array(res.stats["values"])
    assert np.isfinite(values).all()
    assert values[-50:].mean() < 0.5 * values[:50].mean()
    assert res.value == 3.0


def test_reinforce_learns_the_budget() -> None:
    """A binding budget: the share of episodes that end feasible grows from the first to the last epochs."""
    problem = grid_problem(1, n_layers=4, frac=0.35)
    res = search.reinforce(problem, AXES, features(problem), epochs=300, hidden=32, seed=0)
    ok = np.isfinite(np.array(res.stats["values"]))
    assert ok[-50:].mean() > ok[:50].mean() + 0.2


def test_local_mutation_moves_at_most_step_within_the_grid() -> None:
    rng = np.random.default_rng(0)
    sizes = np.array([12, 7])
    genomes = rng.integers(0, sizes, (200, 5, 2))
    moved = search._local_mutate(genomes, sizes, 1.0, 4, rng)
    diff = np.abs(moved - genomes)
    assert diff.max() <= 4 and (moved >= 0).all() and (moved < sizes).all()
    assert (diff > 0).mean() > 0.8  # rate 1: every gene moves unless clipped at the edge
    assert np.array_equal(search._local_mutate(genomes, sizes, 0.0, 4, rng), genomes)


def test_local_crossover_swaps_two_layers_of_one_genome() -> None:
    rng = np.random.default_rng(1)
    genomes = rng.integers(0, 12, (100, 6, 2))
    out = search._local_crossover(genomes, 1.0, rng)
    for before, after in zip(genomes, out, strict=True):
        changed = np.flatnonzero(np.any(before != after, axis=1))
        assert changed.size in (0, 2)
        if changed.size == 2:
            a, b = changed
            assert np.array_equal(after[a], before[b]) and np.array_equal(after[b], before[a])
    assert np.array_equal(search._local_crossover(genomes, 0.0, rng), genomes)


def test_local_ga_repairs_an_infeasible_start() -> None:
    problem = grid_problem(8, n_layers=4)
    top = np.full(problem.n_layers, problem.n_points - 1)
    assert not problem.feasible(top)
    ref = selection.brute_force(problem)
    res = search.local_ga(problem, AXES, top, generations=200, seed=0)
    check_result(problem, res, ref.value)
    assert res.choice is not None


def test_bad_arguments_raise() -> None:
    problem = grid_problem(0)
    with pytest.raises(ValueError, match="axes"):
        search.random_search(problem, (2, 2), samples=10)
    with pytest.raises(ValueError, match="features"):
        search.reinforce(problem, AXES, np.zeros((2, 3)), epochs=1)
    ls = grid_problem(0, deployment="ls")
    with pytest.raises(ValueError, match="LS start"):
        search.local_ga(ls, AXES, np.array([0, 1, 2]))


def test_a_zero_time_limit_stops_at_once() -> None:
    """Only the sample counts are checked (no timing): with no time left each method stops before its loop."""
    problem = grid_problem(2)
    feats, start = features(problem), search._fallback_start(problem)
    assert search.random_search(problem, AXES, samples=1000, time_limit=0.0).samples == 0
    assert search.genetic(problem, AXES, samples=1000, population=10, time_limit=0.0).samples == 10
    assert search.reinforce(problem, AXES, feats, epochs=100, hidden=8, time_limit=0.0).samples == 0
    assert search.local_ga(problem, AXES, start, time_limit=0.0).samples == 1
    res = search.confuciux(problem, AXES, feats, epochs=100, hidden=8, time_limit=0.0)
    assert res.samples == 1
    check_result(problem, res, selection.brute_force(problem).value)
