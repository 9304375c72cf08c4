"""The co-design models against brute force on small random cost tables (every schedule choice, every point)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dlaopt.formulations.systolic import codesign
from dlaopt.formulations.systolic.counts import ConvShape
from dlaopt.formulations.systolic.layers import SystolicLayer
from dlaopt.formulations.systolic.network import CostTable
from dlaopt.solvers.result import SolveOptions, Status


def random_table(seed: int, layers: int = 4, schedules: int = 4, points: int = 9, inf_share: float = 0.1
                 ) -> tuple[CostTable, np.ndarray]:
    rng = np.random.default_rng(seed)
    energy = rng.uniform(1.0, 3.0, (layers, schedules, points))
    delay = rng.uniform(1.0, 3.0, (layers, schedules, points))
    delay[rng.random(delay.shape) < inf_share] = np.inf
    # some ties in area, some in value
    area = rng.integers(1, 4, points).astype(float)
    shapes = tuple(SystolicLayer(ConvShape(f"l{i}", 1, 1, 1, 1, 1, 1)) for i in range(layers))
    return CostTable(shapes, tuple(f"s{i}" for i in range(schedules)), energy, delay), area


def brute_separable(table: CostTable, fom: str, area: np.ndarray, k: int | None) -> float:
    fig = table.figure(fom)
    L, S, H = fig.shape
    best = np.inf
    for h in range(H):
        for choice in itertools.product(range(S), repeat=L):
            if k is not None and len(set(choice)) > k:
                continue
            best = min(best, sum(fig[l_, s, h] for l_, s in enumerate(choice)))
    return best


def brute_product(table: CostTable) -> float:
    L, S, H = table.energy.shape
    best = np.inf
    for h in range(H):
        for choice in itertools.product(range(S), repeat=L):
            e = sum(table.energy[l_, s, h] for l_, s in enumerate(choice))
            d = sum(table.delay[l_, s, h] for l_, s in enumerate(choice))
            best = min(best, e * d)
    return best


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("fom", ["energy", "ed", "ed2"])
@pytest.mark.parametrize("k", [None, 1, 2])
def test_exhaustive_and_milp_equal_brute_force(seed: int, fom: str, k: int | None) -> None:
    table, area = random_table(seed)
    truth = brute_separable(table, fom, area, k)
    ex = codesign.exhaustive(table, fom, area, max_schedules=k)
    assert ex.value == pytest.approx(truth, rel=1e-12)
    mi = codesign.milp(table, fom, area, max_schedules=k, options=SolveOptions(deterministic=True, threads=1),
                       incumbent_points=2)
    assert mi.status == Status.OPTIMAL
    assert mi.value == pytest.approx(truth, rel=1e-9)
    # the reported choice really has that value and respects the limit
    fig = table.figure(fom)
    assert fig[np.arange(fig.shape[0]), mi.choice, mi.point].sum() == pytest.approx(mi.value, rel=1e-12)
    assert k is None or len(set(mi.choice.tolist())) <= k
    # ties go to the smaller area, in both methods
    assert area[mi.point] == area[ex.point] or not np.isclose(mi.value, ex.value)


@pytest.mark.parametrize("seed", range(25))
def test_network_ed_equals_brute_force(seed: int) -> None:
    table, area = random_table(seed, layers=5, schedules=3, points=4, inf_share=0.05)
    truth = brute_product(table)
    ans = codesign.network_ed(table, area)
    assert ans.value == pytest.approx(truth, rel=1e-12)
    e = table.energy[np.arange(5), ans.choice, ans.point].sum()
    d = table.delay[np.arange(5), ans.choice, ans.point].sum()
    assert e * d == pytest.approx(ans.value, rel=1e-12)


def test_network_ed_beats_the_separable_choice() -> None:
    """Minimising Σ E_l·D_l is not minimising (ΣE)(ΣD): on some table the true optimum is strictly lower."""
    gaps = []
    for seed in range(30):
        table, area = random_table(seed, layers=5, schedules=3, points=1, inf_share=0.0)
        sep = codesign.exhaustive(table, "ed", area)
        e = table.energy[np.arange(5), sep.choice, 0].sum()
        d = table.delay[np.arange(5), sep.choice, 0].sum()
        gaps.append(e * d / codesign.network_ed(table, area).value)
    assert min(gaps) >= 1 - 1e-12 and max(gaps) > 1 + 1e-6


def test_everything_infeasible_is_a_status() -> None:
    table, area = random_table(0, points=3, inf_share=0.0)
    table.energy[0] = np.inf
    assert codesign.exhaustive(table, "ed", area).status == Status.INFEASIBLE
    assert codesign.milp(table, "ed", area).status == Status.INFEASIBLE
    assert codesign.network_ed(table, area).status == Status.INFEASIBLE


@pytest.mark.parametrize("seed", range(8))
def test_milp_area_budget_row(seed: int) -> None:
    """With a budget below the unconstrained optimum's area, the MILP finds the best point within the budget."""
    table, area = random_table(seed, points=12)
    area = np.linspace(1.0, 2.0, 12)
    free = codesign.exhaustive(table, "ed", area)
    budget = area[free.point] - 0.01
    if budget < area.min():
        return
    keep = area <= budget
    sub = CostTable(table.layers, table.schedules, table.energy[:, :, keep], table.delay[:, :, keep])
    truth = brute_separable(sub, "ed", area[keep], 2)
    for top in (1, 12):  # incumbent from the single best point, or from every point (some over the budget)
        ans = codesign.milp(table, "ed", area, max_schedules=2, area_budget=budget, incumbent_points=top,
                            options=SolveOptions(deterministic=True, threads=1))
        assert area[ans.point] <= budget
        assert ans.value == pytest.approx(truth, rel=1e-9)
