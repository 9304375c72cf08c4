"""Static memory allocation: every method against brute force (every aligned offset tried) on small instances,
the evaluator against a cell-by-cell simulation of the time × address grid, the heuristics, determinism and the
minimal infeasible cores."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution, AllocBuffer
from dlaopt.formulations.allocation.evaluator import check_placement
from dlaopt.formulations.allocation.heuristics import HEURISTICS
from dlaopt.formulations.allocation.search import search
from dlaopt.formulations.allocation.solve import allocate, infeasible_core
from dlaopt.solvers.result import Status


def random_buffers(rng: random.Random, n_max: int = 5, steps: int = 6, size_max: int = 4,
                   aligns: tuple[int, ...] = (1, 1, 1, 2, 3)) -> tuple[AllocBuffer, ...]:
    out = []
    for k in range(rng.randint(1, n_max)):
        lo = rng.randint(0, steps - 2)
        out.append(AllocBuffer(f"b{k}", lo, rng.randint(lo + 1, steps), rng.randint(1, size_max),
                               rng.choice(aligns)))
    return tuple(out)


def grid_valid(bufs: tuple[AllocBuffer, ...], offsets: list[int], capacity: int | None) -> bool:
    """Valid iff every offset is aligned and non-negative, within the capacity, and no cell of the time × address
    grid is covered twice (a direct simulation, independent of the evaluator's sweep)."""
    if any(o < 0 or o % b.alignment for b, o in zip(bufs, offsets, strict=True)):
        return False
    height = max(o + b.size for b, o in zip(bufs, offsets, strict=True))
    if capacity is not None and height > capacity:
        return False
    grid = np.zeros((max(b.upper for b in bufs), height), dtype=np.int64)
    for b, o in zip(bufs, offsets, strict=True):
        grid[b.lower:b.upper, o:o + b.size] += 1
    return bool(grid.max() <= 1)


def brute_force(bufs: tuple[AllocBuffer, ...], capacity: int) -> int | None:
    """The lowest peak of any valid placement within ``capacity``, ``None``: none. Every aligned offset of every
    buffer is tried (a partial assignment is abandoned as soon as two of its buffers collide)."""
    n = len(bufs)
    meets = [[bufs[i].lower < bufs[j].upper and bufs[j].lower < bufs[i].upper for j in range(n)] for i in range(n)]
    offs = [0] * n
    best: list[int | None] = [None]

    def place(k: int, peak: int) -> None:
        if k == n:
            best[0] = peak if best[0] is None else min(best[0], peak)
            return
        b = bufs[k]
        for o in range(0, capacity - b.size + 1, b.alignment):
            if all(not meets[k][j] or o >= offs[j] + bufs[j].size or offs[j] >= o + b.size for j in range(k)):
                offs[k] = o
                place(k + 1, max(peak, o + b.size))

    place(0, 0)
    return best[0]


def cases(seed: int, count: int, **kw: int) -> list[tuple[AllocBuffer, ...]]:
    rng = random.Random(seed)
    return [random_buffers(rng, **kw) for _ in range(count)]  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- evaluator
def test_evaluator_agrees_with_grid_simulation() -> None:
    rng = random.Random(7)
    seen = {True: 0, False: 0}
    for bufs in cases(1, 300):
        cap = rng.randint(3, 10)
        offsets = [rng.randint(0, 6) for _ in bufs]
        data = AllocationData(bufs, cap)
        rep = check_placement(data, AllocationSolution.of(offsets))
        expected = grid_valid(bufs, offsets, cap)
        assert rep.valid == expected, (bufs, offsets, cap, rep.violations)
        assert rep.peak == max(o + b.size for b, o in zip(bufs, offsets, strict=True))
        seen[expected] += 1
    assert seen[True] > 20 and seen[False] > 20


def test_evaluator_names_the_overlap_and_metrics() -> None:
    bufs = (AllocBuffer("a", 0, 2, 4), AllocBuffer("b", 1, 3, 4, 2))
    data = AllocationData(bufs, 8)
    rep = check_placement(data, AllocationSolution.of([0, 3]))
    assert any("not a multiple" in v for v in rep.violations)
    assert any("'a'" in v and "'b'" in v and "overlap" in v for v in rep.violations)
    ok = check_placement(data, AllocationSolution.of([0, 4]))
    assert ok.valid and ok.metrics["peak"] == 8 and ok.metrics["bound"] == 8 and ok.metrics["fragmentation"] == 0


# ---------------------------------------------------------------------------------------------------- heuristics
@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_heuristics_place_validly(name: str) -> None:
    for bufs in cases(2, 150, n_max=7):
        data = AllocationData(bufs, None, "peak")
        sol = HEURISTICS[name](data)
        offsets = sol.offsets.tolist()
        assert grid_valid(bufs, offsets, None)
        assert check_placement(data, sol).valid
        assert sol.peak(data) >= data.bound


def test_greedy_size_is_first_fit_largest_first() -> None:
    bufs = (AllocBuffer("s", 0, 4, 2), AllocBuffer("l", 1, 3, 5), AllocBuffer("m", 2, 6, 3))
    data = AllocationData(bufs, None, "peak")
    # largest first: l at 0; m overlaps l: 5; s overlaps l (and m): 8
    assert HEURISTICS["greedy_size"](data).offsets.tolist() == [8, 0, 5]
    # best fit: s at 0, l above s at 2, m when it starts (s and l alive): the gap above l at 7
    assert HEURISTICS["best_fit"](data).offsets.tolist() == [0, 2, 7]


# ---------------------------------------------------------------------------------------------------- exact
def test_search_equals_brute_force_minimum_peak() -> None:
    for bufs in cases(3, 120):
        cap = sum(b.size + b.alignment for b in bufs)
        expected = brute_force(bufs, cap)
        data = AllocationData(bufs, cap, "peak")
        for dominance in (True, False):
            res = search(data, cap, minimize=True, dominance=dominance)
            assert res.exhausted and res.peak == expected, (bufs, dominance)
        out = allocate(data, use_cpsat=False)
        assert out.status == Status.OPTIMAL and out.peak == expected == out.bound
        assert check_placement(data, out.solution).valid  # type: ignore[arg-type]


def test_exact_feasibility_equals_brute_force_including_fragmented() -> None:
    fragmented = infeasible = feasible = 0
    for bufs in cases(4, 150, n_max=5, size_max=3):
        best = brute_force(bufs, sum(b.size + b.alignment for b in bufs))
        assert best is not None
        for cap in range(max(b.size for b in bufs), best + 1):
            data = AllocationData(bufs, cap)
            out = allocate(data, use_cpsat=False)
            if cap >= best:
                feasible += 1
                assert out.status == Status.OPTIMAL and grid_valid(bufs, out.solution.offsets.tolist(), cap)
                continue
            assert out.status == Status.INFEASIBLE and out.solution is None, (bufs, cap)
            infeasible += 1
            if data.bound <= cap:  # the live bytes fit: the proof is the search's
                fragmented += 1
                assert "fragmented" in out.reason and out.stage == "search"
            else:
                assert out.stage == "live-bytes" and "step" in out.reason
    assert feasible and infeasible and fragmented >= 5


def test_cpsat_and_milp_equal_brute_force() -> None:
    from dlaopt.formulations.allocation.cpsat import solve_cpsat
    from dlaopt.formulations.allocation.milp import build_allocation_milp
    from dlaopt.solvers.backends import solve_linear
    from dlaopt.solvers.result import SolveOptions

    opts = SolveOptions(threads=1, mip_rel_gap=0.0, time_limit=20)
    for bufs in cases(5, 25, n_max=4, size_max=3):
        cap = sum(b.size + b.alignment - 1 for b in bufs)
        expected = brute_force(bufs, cap)
        data = AllocationData(bufs, cap, "peak")
        cp = solve_cpsat(data, cap, opts, minimize=True)
        assert cp.result.status == Status.OPTIMAL and cp.solution is not None
        assert cp.solution.peak(data) == expected and check_placement(data, cp.solution).valid
        form = build_allocation_milp(data)
        br = solve_linear(form.model, "highs", opts)
        assert br.status == Status.OPTIMAL and br.x is not None
        sol = form.decode(br.x)
        assert check_placement(data, sol).valid and sol.peak(data) == expected == round(br.objective)


def test_exact_never_worse_than_a_heuristic() -> None:
    for bufs in cases(6, 80, n_max=8, steps=8, size_max=6):
        data = AllocationData(bufs, None, "peak")
        out = allocate(data, node_limit=50_000, use_cpsat=False)
        assert out.solution is not None
        for h in HEURISTICS.values():
            assert out.peak <= h(data).peak(data)  # type: ignore[operator]


def test_deterministic() -> None:
    for bufs in cases(8, 20, n_max=9, steps=9, size_max=7):
        data = AllocationData(bufs, None, "peak")
        a = allocate(data, node_limit=2000, use_cpsat=False)
        b = allocate(data, node_limit=2000, use_cpsat=False)
        assert a.status == b.status and a.nodes == b.nodes
        assert a.solution is not None and b.solution is not None
        assert a.solution.offsets.tolist() == b.solution.offsets.tolist()


def test_cpsat_stage_when_the_search_budget_ends() -> None:
    bufs = cases(9, 1, n_max=1)[0] + (AllocBuffer("x", 0, 3, 2), AllocBuffer("y", 1, 4, 3), AllocBuffer("z", 2, 5, 2))
    data = AllocationData(bufs, 40, "peak")
    out = allocate(data, node_limit=0, cpsat_deterministic_time=5.0)
    assert out.status == Status.OPTIMAL and out.solution is not None
    expected = brute_force(bufs, 9)
    assert out.peak == expected


# ---------------------------------------------------------------------------------------------------- cores
def test_infeasible_core_is_minimal_and_proven() -> None:
    checked = 0
    for bufs in cases(10, 120, n_max=5, size_max=3):
        best = brute_force(bufs, sum(b.size + b.alignment for b in bufs))
        assert best is not None
        cap = best - 1
        if cap < max(b.size for b in bufs):
            continue
        data = AllocationData(bufs, cap)
        core = infeasible_core(data)
        assert core is not None and core == sorted(set(core))
        sub = tuple(bufs[i] for i in core)
        assert brute_force(sub, cap) is None  # the core itself cannot be placed
        for k in range(len(sub)):  # every member is needed
            rest = sub[:k] + sub[k + 1:]
            assert not rest or brute_force(rest, cap) is not None
        checked += 1
        assert infeasible_core(AllocationData(bufs, best)) is None
    assert checked > 30


def planted(n: int, capacity: int, seed: int) -> tuple[AllocBuffer, ...]:
    """Buffers that tile the time × address rectangle ``[0, T) × [0, capacity)`` exactly: at each step a run of
    adjacent address segments ends and its range is split anew (a placement at ``capacity`` exists, and the live
    bytes equal ``capacity`` at every step)."""
    rng = random.Random(seed)
    segs = [(0, capacity, 0)]  # (offset, size, start step)
    out: list[tuple[int, int, int]] = []
    t = 0
    while len(out) + len(segs) < n:
        t += 1
        k = rng.randint(1, min(3, len(segs)))
        s = rng.randrange(len(segs) - k + 1)
        closing = segs[s:s + k]
        out += [(b, t, z) for _, z, b in closing]
        lo, total = closing[0][0], sum(z for _, z, _ in closing)
        cuts = sorted(rng.sample(range(1, total), min(rng.randint(0, 2), total - 1)))
        pts = [0, *cuts, total]
        segs = segs[:s] + [(lo + pts[q], pts[q + 1] - pts[q], t) for q in range(len(pts) - 1)] + segs[s + k:]
    out += [(b, t + 1, z) for _, z, b in segs]
    rng.shuffle(out)
    return tuple(AllocBuffer(f"p{i}", lo, hi, z) for i, (lo, hi, z) in enumerate(out))


@pytest.mark.parametrize("slack", [0.0, 0.01])
def test_planted_instances_solved_and_verified(slack: float) -> None:
    for seed in range(2):
        bufs = planted(200, 10_000, seed)
        data = AllocationData(bufs, None)
        assert data.bound == 10_000
        cap = int(data.bound * (1 + slack))
        out = allocate(AllocationData(bufs, cap), time_limit=60)
        assert out.status == Status.OPTIMAL and out.solution is not None
        assert check_placement(AllocationData(bufs, cap), out.solution).valid


def test_infeasible_core_of_a_live_bytes_proof() -> None:
    bufs = (AllocBuffer("a", 0, 4, 3), AllocBuffer("b", 1, 2, 2), AllocBuffer("c", 1, 3, 1), AllocBuffer("d", 5, 6, 1))
    core = infeasible_core(AllocationData(bufs, 4))
    assert core == [0, 1]  # 'a' and 'b' alone need 5 bytes at step 1
    assert infeasible_core(AllocationData(bufs, 6)) is None
