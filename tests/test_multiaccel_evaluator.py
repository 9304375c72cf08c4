"""The multi-accelerator fluid evaluator (seed 001 §7.1.4, Algorithm 1) against hand-computed schedules, its
conservation laws on random instances, the batch evaluator against the scalar one, and :func:`check`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from dlaopt.formulations.multiaccel.evaluator import (
    FluidEvaluator,
    ScheduleError,
    check,
    makespan,
    orders_from_queues,
    queues_from_genomes,
    queues_from_orders,
    simulate,
)
from dlaopt.formulations.multiaccel.model import Assignment, JobTable, MultiAccelData, Simulation


def make_data(latency: Sequence[Sequence[float]], bandwidth: Sequence[Sequence[float]], system_bandwidth: float,
              precedence: Sequence[tuple[int, int]] = ()) -> MultiAccelData:
    lat = np.asarray(latency, dtype=float)
    bw = np.asarray(bandwidth, dtype=float)
    n_jobs, n_acc = lat.shape
    table = JobTable(jobs=tuple(f"j{j}" for j in range(n_jobs)), tenants=tuple(f"t{j % 3}" for j in range(n_jobs)),
                     accelerators=tuple(f"a{a}" for a in range(n_acc)), ops=np.full(n_jobs, 10.0),
                     latency=lat, bandwidth=bw)
    return MultiAccelData(table=table, system_bandwidth=system_bandwidth, precedence=tuple(precedence))


def uniform(n_jobs: int, n_acc: int, lat: Sequence[float], bw: Sequence[float]) -> tuple[list[list[float]],
                                                                                          list[list[float]]]:
    """A table in which every sub-accelerator runs job ``j`` in ``lat[j]`` asking ``bw[j]``."""
    return [[lat[j]] * n_acc for j in range(n_jobs)], [[bw[j]] * n_acc for j in range(n_jobs)]


def random_data(rng: np.random.Generator, n_jobs: int, n_acc: int, system_bandwidth: float, *,
                precedence: bool = False, zeros: bool = False) -> MultiAccelData:
    lat = rng.uniform(1e-4, 1e-3, (n_jobs, n_acc))
    bw = rng.uniform(1e8, 1e10, (n_jobs, n_acc))
    if zeros:  # some zero-bandwidth jobs and some zero-latency jobs
        bw[rng.random(n_jobs) < 0.2] = 0.0
        lat[rng.random(n_jobs) < 0.05] = 0.0
    pairs: list[tuple[int, int]] = []
    if precedence:  # chains per "tenant" j mod 4, plus a few random forward edges
        pairs = [(j, j + 4) for j in range(n_jobs - 4)]
        pairs += [(int(u), int(v)) for u, v in rng.integers(0, n_jobs, (n_jobs // 5, 2)) if u < v]
    return make_data(lat, bw, system_bandwidth, pairs)


def random_orders(rng: np.random.Generator, n_jobs: int, n_acc: int) -> list[list[int]]:
    accel = rng.integers(0, n_acc, n_jobs)
    perm = rng.permutation(n_jobs)
    return [[int(j) for j in perm if accel[j] == a] for a in range(n_acc)]


def segments_of(sim: Simulation) -> list[tuple[float, float, tuple[int, ...], tuple[float, ...]]]:
    return [(s.t0, s.t1, s.jobs, s.allocation) for s in sim.segments]


def assert_segments(sim: Simulation, expected: list[tuple[float, float, tuple[int, ...], tuple[float, ...]]]) -> None:
    got = segments_of(sim)
    assert len(got) == len(expected), got
    for (t0, t1, jobs, alloc), (e0, e1, ejobs, ealloc) in zip(got, expected, strict=True):
        assert jobs == ejobs
        assert t0 == pytest.approx(e0) and t1 == pytest.approx(e1)
        assert alloc == pytest.approx(ealloc)


# ------------------------------------------------------------------------------------------ hand-computed cases
def test_bandwidth_under_subscribed_everything_at_no_stall_speed() -> None:
    # a0 runs j0 (L=2, B=3) then j1 (L=1, B=2); a1 runs j2 (L=4, B=4); system 10 B/s.
    # The requests never exceed 3 + 4 = 7 <= 10, so every job gets its B and lasts exactly L:
    #   j0 [0, 2], j1 [2, 3] (a0 back to back), j2 [0, 4].
    # Segments: [0, 2] j0, j2 at (3, 4); [2, 3] j1, j2 at (2, 4); [3, 4] j2 alone at 4.
    lat = [[2, 2], [1, 1], [4, 4]]
    bw = [[3, 3], [2, 2], [4, 4]]
    sim = simulate(make_data(lat, bw, 10.0), Assignment([[0, 1], [2]]))
    assert sim.start.tolist() == pytest.approx([0, 2, 0])
    assert sim.end.tolist() == pytest.approx([2, 3, 4])
    assert sim.accelerator.tolist() == [0, 0, 1]
    assert sim.makespan == pytest.approx(4.0)
    assert sim.mean_completion == pytest.approx(3.0)
    assert sim.throughput == pytest.approx(30.0 / 4.0)  # 3 jobs × 10 ops
    assert_segments(sim, [(0, 2, (0, 2), (3, 4)), (2, 3, (1, 2), (2, 4)), (3, 4, (2,), (4,))])


def test_two_equal_jobs_share_the_bandwidth_at_half_speed() -> None:
    # j0 and j1 each want 2 B/s for 1 s (volume 2 B) on a 2 B/s system: ΣB = 4 > 2, so each gets 2·2/4 = 1 B/s
    # and both take 2 / 1 = 2 s.
    lat, bw = uniform(2, 2, [1, 1], [2, 2])
    sim = simulate(make_data(lat, bw, 2.0), Assignment([[0], [1]]))
    assert sim.end.tolist() == pytest.approx([2, 2])
    assert_segments(sim, [(0, 2, (0, 1), (1, 1))])


def test_over_subscribed_first_finisher_frees_bandwidth_for_the_other() -> None:
    # j0: L=1, B=2 (V=2); j1: L=2, B=2 (V=4); system 2 B/s. Both at 1 B/s (half speed) until j0 has moved its 2 B
    # at t=2; j1 has 4 - 2 = 2 B left and now alone gets its full 2 B/s: it ends at 2 + 2/2 = 3.
    lat, bw = uniform(2, 2, [1, 2], [2, 2])
    sim = simulate(make_data(lat, bw, 2.0), Assignment([[0], [1]]))
    assert sim.end.tolist() == pytest.approx([2, 3])
    assert_segments(sim, [(0, 2, (0, 1), (1, 1)), (2, 3, (1,), (2,))])


def test_over_subscribed_shares_are_proportional_to_requests() -> None:
    # j0: L=1, B=4 (V=4); j1: L=2, B=2 (V=4); system 3 B/s. ΣB = 6 > 3, shares 4·3/6 = 2 and 2·3/6 = 1 B/s.
    # j0 ends at 4/2 = 2; by then j1 moved 2 B, 2 B left, alone at its full 2 B/s (2 <= 3): ends at 3.
    lat, bw = uniform(2, 2, [1, 2], [4, 2])
    sim = simulate(make_data(lat, bw, 3.0), Assignment([[0], [1]]))
    assert sim.end.tolist() == pytest.approx([2, 3])
    assert_segments(sim, [(0, 2, (0, 1), (2, 1)), (2, 3, (1,), (2,))])


def test_a_job_finishing_while_others_run_and_the_freed_accelerator_starting_its_next_job() -> None:
    # System 4 B/s. a0 runs j0 (L=1, B=2, V=2) then j1 (L=1, B=4, V=4); a1 runs j2 (L=3, B=2, V=6).
    # [0, 1]: j0 + j2 ask 4 <= 4, full speed; j0 ends at 1, j2 has 6 - 2 = 4 B left.
    # [1, 2.5]: j1 starts on a0 at once; j1 + j2 ask 6 > 4 -> shares 4·4/6 = 8/3 and 2·4/6 = 4/3 B/s.
    #   j1 needs 4 / (8/3) = 1.5 s, j2 would need 4 / (4/3) = 3 s: j1 ends at 2.5, j2 moved 1.5·4/3 = 2 B, 2 B left.
    # [2.5, 3.5]: j2 alone at its 2 B/s: 1 s more, ends at 3.5.
    lat, bw = uniform(3, 2, [1, 1, 3], [2, 4, 2])
    sim = simulate(make_data(lat, bw, 4.0), Assignment([[0, 1], [2]]))
    assert sim.start.tolist() == pytest.approx([0, 1, 0])
    assert sim.end.tolist() == pytest.approx([1, 2.5, 3.5])
    assert_segments(sim, [(0, 1, (0, 2), (2, 2)), (1, 2.5, (1, 2), (8 / 3, 4 / 3)), (2.5, 3.5, (2,), (2,))])


def test_heterogeneous_table_uses_each_accelerators_own_latency_and_bandwidth() -> None:
    # j0 is fast but hungry on a0 (L=1, B=6, V=6) and slow but frugal on a1 (L=4, B=1, V=4); j1 likewise
    # (a0: L=2, B=3; a1: L=2, B=3). System 6 B/s.
    # Put j0 on a1 and j1 on a0: requests 1 + 3 = 4 <= 6, both at full speed: j1 ends at 2, j0 at 4.
    # Put j0 on a0 and j1 on a1: 6 + 3 = 9 > 6, shares 4 and 2 B/s: j0 needs 6/4 = 1.5 s, j1 needs 6/2 = 3 s;
    #   at 1.5 j1 has moved 3 B, 3 left at its full 3 B/s: ends at 2.5.
    data = make_data([[1, 4], [2, 2]], [[6, 1], [3, 3]], 6.0)
    sim = simulate(data, Assignment([[1], [0]]))
    assert sim.end.tolist() == pytest.approx([4, 2])
    sim = simulate(data, Assignment([[0], [1]]))
    assert sim.end.tolist() == pytest.approx([1.5, 2.5])
    assert_segments(sim, [(0, 1.5, (0, 1), (4, 2)), (1.5, 2.5, (1,), (3,))])


def test_precedence_makes_an_accelerator_idle_until_the_predecessor_finishes() -> None:
    # Plenty of bandwidth (100 B/s), so every job runs at no-stall speed. a0 runs j0 (L=2); a1 runs j2 (L=1) then
    # j1 (L=1), and j1 must wait for j0: a1 is idle over [1, 2], j1 runs [2, 3].
    lat, bw = uniform(3, 2, [2, 1, 1], [1, 1, 1])
    data = make_data(lat, bw, 100.0, precedence=[(0, 1)])
    sim = simulate(data, Assignment([[0], [2, 1]]))
    assert sim.start.tolist() == pytest.approx([0, 2, 0])
    assert sim.end.tolist() == pytest.approx([2, 3, 1])
    assert_segments(sim, [(0, 1, (0, 2), (1, 1)), (1, 2, (0,), (1,)), (2, 3, (1,), (1,))])
    # the same orders without the pair: j1 follows j2 at once
    assert simulate(make_data(lat, bw, 100.0), Assignment([[0], [2, 1]])).end.tolist() == pytest.approx([2, 2, 1])


def test_precedence_with_contention() -> None:
    # System 2 B/s. a0: j0 (L=1, B=2, V=2); a1: j1 (L=1, B=2, V=2) then j2 (L=1, B=2, V=2), j2 after j0.
    # [0, 2] j0, j1 at 1 B/s each, both end at 2. j2 may start at 2 (j0 done) and runs alone: [2, 3].
    lat, bw = uniform(3, 2, [1, 1, 1], [2, 2, 2])
    sim = simulate(make_data(lat, bw, 2.0, precedence=[(0, 2)]), Assignment([[0], [1, 2]]))
    assert sim.end.tolist() == pytest.approx([2, 2, 3])


def test_zero_bandwidth_jobs_run_in_exactly_their_latency_and_take_no_share() -> None:
    # System 1 B/s. a0: j0 (L=2, B=0) then j3 (L=0, B=5); a1: j1 (L=1, B=2, V=2) then j2 (L=0.5, B=0).
    # j0 needs no bandwidth: it ends at 2 whatever happens. j1 alone in the bandwidth sum asks 2 > 1: it gets 1 B/s
    # and ends at 2. j3 (L=0) starts and ends at 2. j2 runs [2, 2.5] at no cost.
    lat = [[2, 2], [1, 1], [0.5, 0.5], [0, 0]]
    bw = [[0, 0], [2, 2], [0, 0], [5, 5]]
    sim = simulate(make_data(lat, bw, 1.0), Assignment([[0, 3], [1, 2]]))
    assert sim.start.tolist() == pytest.approx([0, 0, 2, 2])
    assert sim.end.tolist() == pytest.approx([2, 2, 2.5, 2])
    assert_segments(sim, [(0, 2, (0, 1), (0, 1)), (2, 2.5, (2,), (0,))])


def test_every_job_zero_bandwidth_is_a_plain_list_schedule() -> None:
    lat, bw = uniform(4, 2, [1, 2, 3, 4], [0, 0, 0, 0])
    sim = simulate(make_data(lat, bw, 1e-9), Assignment([[0, 1], [2, 3]]))
    assert sim.end.tolist() == pytest.approx([1, 3, 3, 7])


def test_simultaneous_completions_and_an_empty_accelerator() -> None:
    # Three equal jobs on a 3-accelerator platform with one idle sub-accelerator. System 3 B/s.
    # j0, j1 (each L=1, B=3, V=3) share: 1.5 B/s each, both end at 2; then j2 (same) alone at 3 B/s: ends at 3.
    lat, bw = uniform(3, 3, [1, 1, 1], [3, 3, 3])
    sim = simulate(make_data(lat, bw, 3.0), Assignment([[0, 2], [], [1]]))
    assert sim.end.tolist() == pytest.approx([2, 2, 3])
    assert sim.accelerator.tolist() == [0, 2, 0]


def test_empty_assignment_of_an_empty_group() -> None:
    data = make_data(np.zeros((0, 2)), np.zeros((0, 2)), 1.0)
    sim = simulate(data, Assignment([[], []]))
    assert sim.makespan == 0.0 and sim.throughput == 0.0
    assert makespan(data, Assignment([[], []])) == 0.0


# ------------------------------------------------------------------------------------------------- deadlocks
def test_deadlock_on_one_accelerator_is_reported_and_raises() -> None:
    lat, bw = uniform(2, 1, [1, 1], [1, 1])
    data = make_data(lat, bw, 1.0, precedence=[(0, 1)])
    bad = Assignment([[1, 0]])  # j1 first, but it must wait for j0 which is behind it
    problems = check(data, bad)
    assert len(problems) == 1 and problems[0].startswith("deadlock")
    with pytest.raises(ScheduleError, match="deadlock"):
        simulate(data, bad)
    assert math.isinf(FluidEvaluator(data).makespan(bad.order))
    assert check(data, Assignment([[0, 1]])) == []


def test_crossed_orders_deadlock_across_accelerators() -> None:
    # a0: j0 then j1; a1: j2 then j3; j2 after j1 and j0 after j3: j0 waits for j3, which waits behind j2, which
    # waits for j1, which waits behind j0.
    lat, bw = uniform(4, 2, [1] * 4, [1] * 4)
    data = make_data(lat, bw, 10.0, precedence=[(1, 2), (3, 0)])
    bad = Assignment([[0, 1], [2, 3]])
    assert any(p.startswith("deadlock") for p in check(data, bad))
    with pytest.raises(ScheduleError):
        simulate(data, bad)
    ev = FluidEvaluator(data)
    assert math.isinf(ev.makespan(bad.order))
    assert np.isinf(ev.batch_makespan(queues_from_orders([bad.order], 2))).all()
    # unblocked by swapping the order on a1: j3 [0, 1]; j0 waits for it, [1, 2]; j1 [2, 3]; j2 waits for j1, [3, 4]
    good = Assignment([[0, 1], [3, 2]])
    assert check(data, good) == []
    sim = simulate(data, good)
    assert sim.start.tolist() == pytest.approx([1, 2, 3, 0])
    assert sim.end.tolist() == pytest.approx([2, 3, 4, 1])


# ----------------------------------------------------------------------------------------------------- check
def test_check_reports_structural_violations() -> None:
    lat, bw = uniform(3, 2, [1] * 3, [1] * 3)
    data = make_data(lat, bw, 1.0)
    assert check(data, Assignment([[0, 2], [1]])) == []
    assert check(data, Assignment([[np.int64(0)], [np.int64(1), np.int64(2)]])) == []
    assert any("more than once" in p for p in check(data, Assignment([[0, 1], [1, 2]])))
    assert any("assigned to no sub-accelerator: 2" in p for p in check(data, Assignment([[0], [1]])))
    assert any("not a job index" in p for p in check(data, Assignment([[0, 1, 7], [2]])))
    assert any("not a job index" in p for p in check(data, Assignment([[0, 1.0], [2]])))  # type: ignore[list-item]
    assert any("not a job index" in p for p in check(data, Assignment([[0, -1], [1, 2]])))
    assert any("3 job lists" in p for p in check(data, Assignment([[0], [1], [2]])))
    with pytest.raises(ScheduleError):
        simulate(data, Assignment([[0], [1]]))


def test_check_reports_bad_data() -> None:
    lat, bw = uniform(2, 1, [1, 1], [1, 1])
    assert any("system bandwidth" in p for p in check(make_data(lat, bw, 0.0), Assignment([[0, 1]])))
    assert any("precedence" in p for p in check(make_data(lat, bw, 1.0, [(0, 5)]), Assignment([[0, 1]])))
    assert any("precede itself" in p for p in check(make_data(lat, bw, 1.0, [(1, 1)]), Assignment([[0, 1]])))
    assert any("latency" in p for p in check(make_data([[1], [-1]], bw, 1.0), Assignment([[0, 1]])))
    assert any("bandwidth" in p for p in check(make_data(lat, [[1], [np.inf]], 1.0), Assignment([[0, 1]])))


# ------------------------------------------------------------------------------------- conservation, randomly
@pytest.mark.parametrize("seed", range(6))
def test_conservation_on_random_instances(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_jobs, n_acc = int(rng.integers(5, 40)), int(rng.integers(1, 7))
    system_bw = float(rng.choice([1e9, 8e9, 64e9]))
    data = random_data(rng, n_jobs, n_acc, system_bw, precedence=seed % 2 == 1, zeros=seed % 3 == 0)
    lat, bw = data.table.latency, data.table.bandwidth
    # a deadlock-free order: random sub-accelerators, jobs in a topological order of the precedence
    accel = rng.integers(0, n_acc, n_jobs)
    order: list[list[int]] = [[] for _ in range(n_acc)]
    for j in range(n_jobs):  # precedence pairs here all go from lower to higher index
        order[int(accel[j])].append(j)
    assignment = Assignment(order)
    assert check(data, assignment) == []
    sim = simulate(data, assignment)
    tol = 1e-9 * sim.makespan
    volume = np.zeros(n_jobs)
    t_prev = 0.0
    for seg in sim.segments:
        assert seg.t0 == pytest.approx(t_prev, abs=tol)  # contiguous: some job always runs
        assert seg.t1 > seg.t0
        t_prev = seg.t1
        running = {j for j in range(n_jobs) if sim.start[j] <= seg.t0 + tol and sim.end[j] >= seg.t1 - tol}
        assert set(seg.jobs) == running
        req = np.array([bw[j, accel[j]] for j in seg.jobs])
        alloc = np.array(seg.allocation)
        assert np.all(alloc <= req * (1 + 1e-12))  # never faster than no-stall
        assert alloc.sum() <= system_bw * (1 + 1e-12)  # never more than the system has
        expected = req if req.sum() <= system_bw else req * system_bw / req.sum()  # Algorithm 1
        assert alloc == pytest.approx(expected, rel=1e-12)
        for j, a_ in zip(seg.jobs, seg.allocation, strict=True):
            volume[j] += a_ * (seg.t1 - seg.t0)
    assert t_prev == pytest.approx(sim.makespan)
    need = np.array([lat[j, accel[j]] * bw[j, accel[j]] for j in range(n_jobs)])
    assert volume == pytest.approx(need, rel=1e-9, abs=1e-9 * need.max(initial=1.0))
    durations = sim.end - sim.start
    no_stall = np.array([lat[j, accel[j]] for j in range(n_jobs)])
    assert np.all(durations >= no_stall * (1 - 1e-12))
    zero_bw = np.array([bw[j, accel[j]] == 0 for j in range(n_jobs)])
    assert durations[zero_bw] == pytest.approx(no_stall[zero_bw])
    for a in range(n_acc):  # back to back on each sub-accelerator (without precedence: no idle gap)
        jobs = order[a]
        for u, v in zip(jobs[:-1], jobs[1:], strict=True):
            assert sim.start[v] >= sim.end[u] - tol
            if not data.precedence:
                assert sim.start[v] == pytest.approx(sim.end[u], abs=tol)
        if jobs and not data.precedence:
            assert sim.start[jobs[0]] == 0.0
    for u, v in data.precedence:
        assert sim.start[v] >= sim.end[u] - tol


# ------------------------------------------------------------------------------------------- batch == scalar
@pytest.mark.parametrize("precedence", [False, True])
@pytest.mark.parametrize("zeros", [False, True])
def test_batch_evaluator_equals_scalar(precedence: bool, zeros: bool) -> None:
    rng = np.random.default_rng(7 + precedence + 2 * zeros)
    for n_jobs, n_acc, system_bw in [(30, 4, 4e9), (60, 8, 16e9), (12, 3, 1e9), (5, 8, 256e9)]:
        data = random_data(rng, n_jobs, n_acc, system_bw, precedence=precedence, zeros=zeros)
        ev = FluidEvaluator(data)
        orders = [random_orders(rng, n_jobs, n_acc) for _ in range(25)]
        if precedence:  # half of them made deadlock-free (jobs in index order), the rest mostly deadlock
            orders[::2] = [[sorted(jobs) for jobs in o] for o in orders[::2]]
        end = ev.batch_end_times(queues_from_orders(orders, n_acc))
        for p, order in enumerate(orders):
            a = Assignment(order)
            if check(data, a):
                assert math.isinf(ev.makespan(order)) and np.isinf(end[p]).any()
                continue
            sim = simulate(data, a)
            assert end[p] == pytest.approx(sim.end, rel=1e-9, abs=1e-15)
            assert ev.makespan(order) == pytest.approx(sim.makespan, rel=1e-12)
        ms = ev.batch_makespan(queues_from_orders(orders, n_acc))
        assert ms == pytest.approx(end.max(axis=1))


def test_genome_queues_sort_each_accelerators_jobs_by_priority() -> None:
    rng = np.random.default_rng(3)
    accel = rng.integers(0, 3, (4, 10))
    prio = rng.random((4, 10))
    prio[0, :] = 0.5  # all ties: job index order
    q = queues_from_genomes(accel, prio, 3)
    assert q.shape == (4, 3, 10)
    for p, order in enumerate(orders_from_queues(q)):
        for a in range(3):
            jobs = [j for j in range(10) if accel[p, j] == a]
            assert order[a] == sorted(jobs, key=lambda j, p=p: (prio[p, j], j))


def test_batch_rejects_a_platform_mismatch() -> None:
    lat, bw = uniform(2, 2, [1, 1], [1, 1])
    ev = FluidEvaluator(make_data(lat, bw, 1.0))
    with pytest.raises(ValueError):
        ev.batch_end_times(np.zeros((1, 3, 2), dtype=int))
