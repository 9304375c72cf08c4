"""Heuristics of the multi-accelerator problem: valid assignments on random tables, the constructive rules on hand
cases, and MAGMA's determinism, progress, budget, time limit and warm start."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, check, simulate
from dlaopt.formulations.multiaccel.heuristics import (
    HEURISTICS,
    GenomeDecoder,
    ai_mt,
    herald,
    lpt,
    magma,
    random_assignment,
    run_magma,
    standalone_durations,
    topological_order,
)
from dlaopt.formulations.multiaccel.model import Assignment, JobTable, MultiAccelData


def make_data(latency: np.ndarray | Sequence[Sequence[float]], bandwidth: np.ndarray | Sequence[Sequence[float]],
              system_bandwidth: float, precedence: Sequence[tuple[int, int]] = (),
              tenants: Sequence[str] | None = None, objective: str = "makespan",
              options: dict[str, object] | None = None) -> MultiAccelData:
    lat = np.asarray(latency, dtype=float)
    bw = np.asarray(bandwidth, dtype=float)
    n_jobs, n_acc = lat.shape
    table = JobTable(jobs=tuple(f"j{j}" for j in range(n_jobs)),
                     tenants=tuple(tenants) if tenants is not None else tuple(f"t{j % 4}" for j in range(n_jobs)),
                     accelerators=tuple(f"a{a}" for a in range(n_acc)), ops=np.full(n_jobs, 1e6),
                     latency=lat, bandwidth=bw)
    return MultiAccelData(table=table, system_bandwidth=system_bandwidth, precedence=tuple(precedence),
                          objective=objective, options=dict(options or {}))


def random_data(seed: int, n_jobs: int, n_acc: int, system_bandwidth: float = 16e9, *,
                precedence: bool = False, objective: str = "makespan") -> MultiAccelData:
    rng = np.random.default_rng(seed)
    # two sub-accelerator styles: fast and hungry vs slow and frugal, with per-job variation
    base_lat = rng.lognormal(np.log(3e-4), 1.0, n_jobs)
    base_bw = rng.lognormal(np.log(2e9), 1.5, n_jobs)
    style = np.arange(n_acc) % 2
    lat = base_lat[:, None] * np.where(style == 0, 1.0, rng.uniform(2, 8, n_jobs)[:, None])
    bw = base_bw[:, None] * np.where(style == 0, 1.0, rng.uniform(0.01, 0.3, n_jobs)[:, None])
    pairs = [(j, j + 4) for j in range(n_jobs - 4)] if precedence else []
    return make_data(lat, bw, system_bandwidth, pairs, objective=objective)


def evaluate(data: MultiAccelData, assignment: Assignment) -> float:
    assert check(data, assignment) == []
    return simulate(data, assignment).makespan


CASES = [(0, 20, 4, False), (1, 100, 8, False), (2, 3, 5, False), (3, 40, 1, False), (4, 30, 4, True),
         (5, 60, 8, True), (6, 1, 2, False)]


# -------------------------------------------------------------------------------------------------- validity
@pytest.mark.parametrize("name", sorted(HEURISTICS))
@pytest.mark.parametrize(("seed", "n_jobs", "n_acc", "precedence"), CASES)
def test_every_heuristic_returns_a_valid_assignment(name: str, seed: int, n_jobs: int, n_acc: int,
                                                    precedence: bool) -> None:
    data = random_data(seed, n_jobs, n_acc, precedence=precedence)
    kwargs: dict[str, object] = {"seed": seed}
    if name == "magma":
        kwargs["budget"] = 600
    a = HEURISTICS[name](data, **kwargs)
    assert isinstance(a, Assignment)
    assert len(a.order) == n_acc
    assert check(data, a) == []  # every job exactly once, no deadlock
    assert sorted(j for jobs in a.order for j in jobs) == list(range(n_jobs))
    sim = simulate(data, a)
    assert np.all(np.isfinite(sim.end)) and sim.makespan > 0


def test_registry_names() -> None:
    assert set(HEURISTICS) == {"magma", "herald", "ai-mt", "lpt", "random"}


# ------------------------------------------------------------------------------------------ constructive rules
def test_standalone_duration_accounts_for_a_job_needing_more_than_the_system() -> None:
    # j0 on a0: L=1, B=4 on a 2 B/s system -> alone it gets 2 B/s, volume 4: 2 s. On a1: L=3, B=1 -> 3 s.
    data = make_data([[1, 3]], [[4, 1]], 2.0)
    assert standalone_durations(data).tolist() == [[2.0, 3.0]]


def test_lpt_is_grahams_lpt_on_identical_machines() -> None:
    # Work 3, 3, 2, 2, 2 on two identical sub-accelerators, bandwidth irrelevant (1e12 B/s):
    # 3 -> a0, 3 -> a1, 2 -> a0 (5), 2 -> a1 (5), 2 -> a0 (7). Jobs are given shuffled.
    lat = [[2, 2], [3, 3], [2, 2], [3, 3], [2, 2]]
    data = make_data(lat, [[1, 1]] * 5, 1e12)
    a = lpt(data)
    assert a.order == [[1, 0, 4], [3, 2]]
    assert evaluate(data, a) == pytest.approx(7.0)


def test_herald_walks_breadth_first_across_tenants_to_the_earliest_finish() -> None:
    # Tenants A = (j0, j1, j2), B = (j3, j4): walking order j0, j3, j1, j4, j2.
    # a0 is twice as fast as a1 for every job (L = 1 vs 2); ample bandwidth.
    # j0 -> a0 (ends 1); j3 -> a0 ends 2 vs a1 ends 2: tie -> a0 (2); j1 -> a0 ends 3 vs a1 2 -> a1 (2);
    # j4 -> a0 3 vs a1 4 -> a0 (3); j2 -> a0 4 vs a1 4 -> a0 (4).
    tenants = ["A", "A", "A", "B", "B"]
    data = make_data([[1, 2]] * 5, [[1, 1]] * 5, 1e12, tenants=tenants)
    assert topological_order(data, [(0, 0, 0), (1, 0, 1), (2, 0, 2), (0, 1, 3), (1, 1, 4)]) == [0, 3, 1, 4, 2]
    a = herald(data)
    assert a.order == [[0, 3, 4, 2], [1]]
    assert evaluate(data, a) == pytest.approx(4.0)


def test_herald_respects_tenant_precedence() -> None:
    data = random_data(11, 24, 3, precedence=True)
    a = herald(data)
    sim = simulate(data, a)
    for u, v in data.precedence:
        assert sim.start[v] >= sim.end[u] - 1e-15


def test_ai_mt_interleaves_memory_and_compute_intensive_jobs_round_robin() -> None:
    # Bandwidth intensity (mean B) of j0..j5: 6, 1, 5, 2, 4, 3 -> by decreasing intensity j0, j2, j4, j5, j3, j1.
    # Interleaved most / least intensive: j0, j1, j2, j3, j4, j5. Dealt over 2 sub-accelerators, rotating by one
    # each round: round 0 j0 -> a0, j1 -> a1; round 1 j2 -> a1, j3 -> a0; round 2 j4 -> a0, j5 -> a1.
    bw = [[6, 6], [1, 1], [5, 5], [2, 2], [4, 4], [3, 3]]
    data = make_data([[1, 1]] * 6, bw, 100.0)
    a = ai_mt(data)
    assert a.order == [[0, 3, 4], [1, 2, 5]]
    # each sub-accelerator alternates memory- and compute-heavy jobs, and so do the pairs running together
    assert check(data, a) == []


def test_random_is_seeded() -> None:
    data = random_data(0, 30, 4)
    assert random_assignment(data, seed=5).order == random_assignment(data, seed=5).order
    assert random_assignment(data, seed=5).order != random_assignment(data, seed=6).order


# ---------------------------------------------------------------------------------------------------- decoding
@pytest.mark.parametrize("precedence", [False, True])
def test_genome_encoding_round_trips(precedence: bool) -> None:
    data = random_data(2, 30, 4, precedence=precedence)
    dec = GenomeDecoder(data)
    for name in ("herald", "ai-mt", "lpt", "random"):
        a = HEURISTICS[name](data, seed=1)
        accel, prio = dec.encode(a)
        assert dec.assignment(accel, prio).order == a.order


def test_decoding_with_precedence_never_deadlocks() -> None:
    data = random_data(3, 40, 4, precedence=True)
    dec = GenomeDecoder(data)
    rng = np.random.default_rng(0)
    accel, prio = rng.integers(0, 4, (50, 40)), rng.random((50, 40))
    ms = FluidEvaluator(data).batch_makespan(dec.queues(accel, prio))
    assert np.all(np.isfinite(ms))
    for p in range(5):
        assert check(data, dec.assignment(accel[p], prio[p])) == []


# ------------------------------------------------------------------------------------------------------- MAGMA
def test_magma_is_deterministic_for_a_seed() -> None:
    data = random_data(1, 40, 4)
    a = magma(data, seed=3, budget=1500)
    b = magma(data, seed=3, budget=1500)
    assert a.order == b.order
    r1 = run_magma(data, seed=3, budget=1500)
    r2 = run_magma(data, seed=4, budget=1500)
    assert r1.assignment.order == a.order
    assert r1.history != r2.history


@pytest.mark.parametrize("objective", ["makespan", "mean_completion"])
def test_magma_improves_on_its_random_initial_population(objective: str) -> None:
    data = random_data(5, 50, 4, system_bandwidth=4e9, objective=objective)
    r = run_magma(data, seed=0, budget=3000)
    assert r.fitness < r.initial_best * 0.95
    assert all(b <= a for a, b in zip(r.history[:-1], r.history[1:], strict=True))  # elitism: never worse
    assert r.history[0] == r.initial_best and r.history[-1] == r.fitness
    sim = simulate(data, r.assignment)  # the fitness is the evaluator's figure
    value = sim.mean_completion if objective == "mean_completion" else sim.makespan
    assert value == pytest.approx(r.fitness, rel=1e-9)


def test_magma_budget_and_population() -> None:
    data = random_data(0, 20, 3)
    r = run_magma(data, seed=0, budget=500)  # 100 individuals: initial population + 4 generations
    assert r.evaluations == 500 and r.generations == 4 and len(r.history) == 5
    r = run_magma(data, seed=0, budget=250, population=20)
    assert r.evaluations == 240 and r.generations == 11
    opts = make_data(data.table.latency, data.table.bandwidth, data.system_bandwidth,
                     options={"magma_population": 10, "magma_epochs": 7})
    r = run_magma(opts, seed=0)
    assert r.evaluations == 70 and r.generations == 6


def test_magma_time_limit() -> None:
    data = random_data(0, 30, 4)
    r = run_magma(data, seed=0, time_limit=0.0)
    assert r.stopped_by_time and r.generations == 0 and r.evaluations == 100
    assert check(data, r.assignment) == []


@pytest.mark.parametrize("precedence", [False, True])
def test_magma_warm_start_is_never_worse(precedence: bool) -> None:
    data = random_data(7, 60, 8, system_bandwidth=2e9, precedence=precedence)
    for name in ("herald", "lpt", "ai-mt"):
        start = HEURISTICS[name](data)
        base = evaluate(data, start)
        r = run_magma(data, seed=1, budget=800, warm_start=start)
        assert r.initial_best <= base * (1 + 1e-9)
        assert evaluate(data, r.assignment) <= base * (1 + 1e-9)
    # warm start alone (no generation): the warm start itself or a better mutant
    start = herald(data)
    r = run_magma(data, seed=1, budget=100, warm_start=start)
    assert r.generations == 0 and evaluate(data, r.assignment) <= evaluate(data, start) * (1 + 1e-9)


def test_magma_rejects_an_invalid_warm_start() -> None:
    data = random_data(0, 10, 2)
    with pytest.raises(ValueError, match="warm start"):
        run_magma(data, budget=200, warm_start=Assignment([[0, 1], [2]]))


def test_magma_beats_random_search_of_the_same_budget() -> None:
    data = random_data(9, 60, 8, system_bandwidth=4e9)
    r = run_magma(data, seed=0, budget=2000)
    best_random = min(evaluate(data, random_assignment(data, seed=s)) for s in range(200))
    assert r.fitness < best_random
