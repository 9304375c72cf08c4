"""The exact method's levers on the multi-accelerator problem: the configuration rows of the fluid bound stay a valid
lower bound (against brute force over every assignment and order, simulated by the fluid evaluator), the
round-down levels are optimal, the local search only returns real, valid, better schedules, and the levers never
lose the warm start nor break the bound."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from multiaccel_cases import all_orders

from dlaopt.formulations.multiaccel.bound import (
    build_bound_model,
    configuration_levels,
    makespan_bound,
    round_down_levels,
)
from dlaopt.formulations.multiaccel.cpsat import greedy_assignment, solve_exact
from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, check, queues_from_orders
from dlaopt.formulations.multiaccel.localsearch import local_search, orders_of_assignment
from dlaopt.formulations.multiaccel.model import (
    Assignment,
    JobTable,
    MultiAccelData,
    PlacementRule,
    UserConstraints,
)
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs.multiaccel import EXACT_LEVERS

DET = SolveOptions(threads=1, seed=0)
ALL_ON = dict.fromkeys(EXACT_LEVERS, True)


def make_data(latency: np.ndarray, bandwidth: np.ndarray, system_bandwidth: float,
              precedence: tuple[tuple[int, int], ...] = (),
              constraints: UserConstraints | None = None) -> MultiAccelData:
    n, m = latency.shape
    table = JobTable(jobs=tuple(f"j{j}" for j in range(n)), tenants=tuple("t" for _ in range(n)),
                     accelerators=tuple(f"a{a}" for a in range(m)), ops=np.ones(n), latency=latency,
                     bandwidth=bandwidth)
    return MultiAccelData(table, system_bandwidth, precedence=precedence,
                          constraints=constraints if constraints is not None else UserConstraints())


def random_data(seed: int, n: int, m: int, bw_ratio: float, *, identical: bool = False,
                precedence: bool = False) -> MultiAccelData:
    """Latencies log-uniform in [0.1, 10] ms, bandwidths log-uniform in [0.1, 10] GB/s (the same column on every
    sub-accelerator when ``identical``), system bandwidth ``bw_ratio`` × mean bandwidth × accelerators."""
    rng = np.random.default_rng(seed)
    cols = 1 if identical else m
    lat = np.exp(rng.uniform(np.log(1e-4), np.log(1e-2), size=(n, cols)))
    bw = np.exp(rng.uniform(np.log(1e8), np.log(1e10), size=(n, cols)))
    if identical:
        lat, bw = np.repeat(lat, m, axis=1), np.repeat(bw, m, axis=1)
    prec = tuple((j, j + 1) for j in range(0, n - 1, 3)) if precedence else ()
    return make_data(lat, bw, bw_ratio * float(bw.mean()) * m, prec)


def optimum_per_assignment(data: MultiAccelData) -> dict[tuple[int, ...], float]:
    """Brute force: for every assignment (sub-accelerator per job), the least fluid makespan over its orders."""
    n, m = data.table.n_jobs, data.table.n_accelerators
    orders = all_orders(n, m)
    ms = FluidEvaluator(data).batch_makespan(queues_from_orders(orders, m))
    best: dict[tuple[int, ...], float] = {}
    for order, v in zip(orders, ms.tolist(), strict=True):
        key = tuple(int(a) for a in Assignment(order).accelerator_of(n))
        best[key] = min(best.get(key, np.inf), v)
    return best


# Tiny groups: 3-5 jobs, 2-3 sub-accelerators (identical or not), bandwidth from scarce to ample.
TINY = [(200 + s, 3 + s % 3, 2 + (s // 3) % 2, (0.2, 0.5, 1.0, 2.0)[s % 4], s % 2 == 0, s % 7 == 0)
        for s in range(18)]


@pytest.fixture(scope="module")
def tiny() -> list[tuple[MultiAccelData, dict[tuple[int, ...], float]]]:
    out = []
    for seed, n, m, r, ident, prec in TINY:
        data = random_data(seed, n, m, r, identical=ident, precedence=prec)
        out.append((data, optimum_per_assignment(data)))
    return out


# ------------------------------------------------------------------------------------- the configuration rows
@pytest.mark.parametrize("budget", [30, 4000])
def test_configuration_bound_below_brute_force(tiny: list, budget: int) -> None:
    """The bound with the configuration rows never exceeds the optimum, and only adds to the bound without them."""
    for data, per in tiny:
        opt = min(per.values())
        plain = makespan_bound(data, DET)
        conf = makespan_bound(data, DET, configurations=budget)
        assert conf.value <= opt * (1 + 1e-9), (conf.value, opt)
        if plain.source == conf.source == "milp":
            assert conf.value >= plain.value * (1 - 1e-6)


def test_configuration_rows_bound_every_assignment(tiny: list) -> None:
    """The relaxation with the assignment fixed (an LP) is below the best makespan of that very assignment: the
    configuration rows hold for every schedule, not just an optimal one."""
    for data, per in tiny[:10]:
        n, m = data.table.n_jobs, data.table.n_accelerators
        model, s = build_bound_model(data, integer=False, configurations=4000)
        x0, x1 = model.col_blocks["x"]
        for key, best in per.items():
            if not np.isfinite(best):
                continue
            fixed = np.zeros((n, m))
            fixed[np.arange(n), list(key)] = 1.0
            lo, hi = model.col_lower.copy(), model.col_upper.copy()
            lo[x0:x1] = hi[x0:x1] = fixed.ravel()
            res = solve_linear(dataclasses.replace(model, col_lower=lo, col_upper=hi), "highs", DET)
            assert res.status == Status.OPTIMAL and res.objective is not None
            assert res.objective * s * (1 - 1e-6) <= best * (1 + 1e-9), (key, res.objective * s, best)


def test_configuration_bound_beats_the_plain_one_on_a_hand_example() -> None:
    """Two identical sub-accelerators, two jobs each able to fill the link alone at b = 1 and two compute-bound
    jobs of the same length (b = 0): pairing hungry with frugal keeps the link full, and the optimum 2 equals the
    plain bound. With three hungry jobs (b = 0.8) and one frugal one, two hungry ones must run together somewhere
    (0.6 over the link for their common progress): the configuration rows see it, the plain bound does not."""
    w = 1e9
    lat = np.ones((4, 2))
    bw = np.array([[0.8], [0.8], [0.8], [0.0]]) * w * np.ones((1, 2))
    data = make_data(lat, bw, w)
    opt = min(optimum_per_assignment(data).values())
    plain = makespan_bound(data, DET)
    conf = makespan_bound(data, DET, configurations=4000)
    assert conf.value <= opt * (1 + 1e-9)
    assert conf.value > plain.value * (1 + 1e-3)


def test_round_down_levels_are_optimal() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        size = int(rng.integers(1, 8))
        v = rng.choice([0.0, 0.1, 0.3, 0.5, 0.9, 1.2, 2.0, 4.0], size=size)
        w = rng.uniform(0.1, 2.0, size=size)
        k = int(rng.integers(1, 4))
        got = round_down_levels(v, w, k)

        def loss(levels: np.ndarray, v: np.ndarray = v, w: np.ndarray = w) -> float:
            lv = np.concatenate([[0.0], levels])  # below every level: rounded to 0
            below = lv[np.searchsorted(levels, v, side="right")]
            return float(np.sum(w * (v - below)))

        distinct = np.unique(v[v > 0])
        best = min((loss(np.asarray(c)) for r in range(0, min(k, distinct.size) + 1)
                    for c in itertools.combinations(distinct, r)), default=0.0)
        assert got.size <= k and np.all(np.diff(got) > 0) and set(got.tolist()) <= set(distinct.tolist())
        assert loss(got) <= best + 1e-12


def test_configuration_levels_respect_the_budget() -> None:
    data = random_data(5, 40, 4, 0.5, identical=True)
    for budget in (10, 100, 1000):
        classes, levels = configuration_levels(data, budget)
        assert len(classes) == 1 and classes[0].tolist() == [0, 1, 2, 3]
        assert math.comb(levels[0].size + 4, 4) <= budget


# ------------------------------------------------------------------------------------------ the local search
def test_local_search_returns_a_real_better_schedule() -> None:
    data = random_data(11, 30, 3, 0.4)
    ev = FluidEvaluator(data)
    start = greedy_assignment(data)
    res = local_search(data, start, seed=0, rounds=30)
    assert check(data, res.assignment) == []
    assert res.makespan == pytest.approx(ev.makespan(res.assignment.order), rel=1e-12)
    assert res.makespan <= ev.makespan(start.order)
    again = local_search(data, start, seed=0, rounds=30)
    assert again.assignment.order == res.assignment.order  # deterministic for a seed and a round count


def test_local_search_honours_placement_and_precedence() -> None:
    data0 = random_data(12, 12, 3, 0.4, precedence=True)
    rule = PlacementRule("constraints[0] (forbidden)", ("constraints", 0), "forbidden", tuple(range(6)), (0,))
    data = dataclasses.replace(data0, constraints=UserConstraints(placement=(rule,)))
    start = greedy_assignment(data)
    res = local_search(data, start, seed=1, rounds=40)
    assert check(data, res.assignment) == []
    acc = res.assignment.accelerator_of(12)
    assert not np.any(acc[:6] == 0)


def test_orders_of_assignment_keep_the_assignment() -> None:
    data = random_data(13, 20, 4, 0.5)
    acc = np.arange(20) % 4
    a = orders_of_assignment(data, acc)
    assert np.array_equal(a.accelerator_of(20), acc) and check(data, a) == []


# -------------------------------------------------------------------------------------- the levers in the driver
def test_levers_keep_a_valid_bound_and_never_lose_the_warm_start(tiny: list) -> None:
    for data, per in tiny[:8]:
        opt = min(per.values())
        warm = greedy_assignment(data)
        warm_ms = FluidEvaluator(data).makespan(warm.order)
        on = solve_exact(data, options=DET, warm_start=warm, levers=ALL_ON)
        assert on.makespan is not None and on.bound is not None
        assert on.bound <= opt * (1 + 1e-9) <= on.makespan * (1 + 1e-9) + 0
        assert on.makespan <= warm_ms * (1 + 1e-12)
        assert on.makespan == pytest.approx(FluidEvaluator(data).makespan(on.assignment.order), rel=1e-12)


def test_levers_off_is_the_method_without_them() -> None:
    """Every lever off gives the same answer as no lever argument at all (the method before the levers)."""
    data = random_data(21, 10, 3, 0.5)
    off = solve_exact(data, options=DET, levers=dict.fromkeys(EXACT_LEVERS, False))
    none = solve_exact(data, options=DET)
    assert off.makespan == none.makespan and off.bound == none.bound and off.source == none.source


def test_benchmark_rows_run_both_settings_on_the_same_heuristics() -> None:
    from dlaopt.experiments.magma import BEFORE_LEVERS, benchmark_rows, with_levers

    rows = benchmark_rows([BEFORE_LEVERS, with_levers(2.0)], tasks=["recommendation"], platforms=["magma-s1"],
                          bandwidths=[16.0], group_size=6, threads=1)
    assert [r["setting"] for r in rows] == [BEFORE_LEVERS.name, "with levers"]
    assert rows[0]["magma_gops"] == rows[1]["magma_gops"]  # the heuristics ran once
    assert rows[0]["exact_limit_s"] == max(rows[0]["magma_s"], 1.0)
    assert rows[1]["exact_limit_s"] == pytest.approx(2.0 * rows[1]["magma_s"])
    for r in rows:
        assert r["bound_gops"] >= r["exact_gops"] * (1 - 1e-9) and r["exact_ge_heuristics"]
