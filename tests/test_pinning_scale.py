"""Levers of the exact pinning method on identical scratchpads: each keeps the optimum (brute force, or the method
with every lever off), the packing cuts are valid for every pattern, and the assignment is exact."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from pinning_cases import brute_force, n_cells, random_workload, small_accelerator

from dlaopt.formulations.pinning.exact import Piece, assign_pieces, split_parts
from dlaopt.formulations.pinning.milp_gaps import build_gap_milp
from dlaopt.formulations.pinning.packing import maximal_patterns, packable, packing_cut
from dlaopt.harness import prepare, solve
from dlaopt.io.instance import Instance
from dlaopt.solvers.race import race
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs.pinning import EXACT_LEVERS
from dlaopt.specs.tuning import all_off

DETERMINISTIC = SolveOptions(seed=0, threads=1, deterministic=True, mip_rel_gap=0.0)
LEVER_SETS = [dict.fromkeys(EXACT_LEVERS, True), all_off(EXACT_LEVERS)] + [
    {**dict.fromkeys(EXACT_LEVERS, True), name: False} for name in EXACT_LEVERS]


def _instance(seed: int, caps: list[int], n_ops: int, tuning: dict[str, bool], objective: str = "transfers"
              ) -> Instance:
    wl = random_workload(seed, n_ops=n_ops)
    return Instance(problem="pinning", name=wl.name, workload=wl, hardware=small_accelerator(caps),
                    objective=objective, options={"oversize": "tile", "chunk_fraction": 0.5, "exact_tuning": tuning})


def _exact(inst: Instance):
    res = solve(inst, "exact", options=DETERMINISTIC)
    assert res.verified or res.status == Status.INFEASIBLE, res.message
    return res


@pytest.mark.parametrize("objective", ["transfers", "thesis"])
@pytest.mark.parametrize(("seed", "caps"), [(s, [24, 24]) for s in range(6)] + [(s, [16, 16, 16]) for s in range(3)])
def test_every_lever_set_equals_brute_force(seed, caps, objective):
    n_ops = 4 if len(caps) == 2 else 3
    p = prepare(_instance(seed, caps, n_ops, {}, objective))
    if n_cells(p.data.graph) > (14 if len(caps) == 2 else 10):
        pytest.skip("too many cells for brute force")
    expected = brute_force(p.data.graph, objective, p.data.dma)
    for tuning in LEVER_SETS:
        res = _exact(_instance(seed, caps, n_ops, tuning, objective))
        if expected is None:
            assert res.status == Status.INFEASIBLE, tuning
            continue
        assert res.status == Status.OPTIMAL, (tuning, res.message)
        assert res.objective == pytest.approx(expected), tuning
        assert res.bound <= res.objective + 1e-9


@pytest.mark.parametrize(("seed", "caps"), [(s, [40, 40, 40]) for s in range(4)] + [(s, [32, 32]) for s in range(4)])
def test_every_lever_set_equals_the_method_without_levers(seed, caps):
    """Larger random graphs (beyond brute force): the optimum with any lever set is the lever-off optimum."""
    base = _exact(_instance(seed, caps, 9, all_off(EXACT_LEVERS)))
    for tuning in LEVER_SETS[:1] + LEVER_SETS[2:]:
        res = _exact(_instance(seed, caps, 9, tuning))
        assert res.status == base.status, tuning
        if base.objective is not None:
            assert res.objective == pytest.approx(base.objective), tuning
            assert res.bound <= base.objective + 1e-6


def test_driver_reports_its_rounds_and_is_off_when_asked():
    on = _exact(_instance(1, [40, 40, 40], 9, {}))
    assert "exact_driver" in on.metrics
    off = _exact(_instance(1, [40, 40, 40], 9, all_off(EXACT_LEVERS)))
    assert "exact_driver" not in off.metrics
    unequal = _exact(_instance(1, [48, 40, 40], 9, {}))  # not identical: the harness' path
    assert "exact_driver" not in unequal.metrics


# ------------------------------------------------------------------------------------------------ packing cuts
def _all_fitting(sizes: list[int], cap: int) -> list[tuple[int, ...]]:
    """Every multiset (counts per size) that fits one bin, by enumeration."""
    ranges = [range(cap // s + 1) for s in sizes]
    return [c for c in itertools.product(*ranges) if sum(n * s for n, s in zip(c, sizes, strict=True)) <= cap]


@pytest.mark.parametrize("seed", range(25))
def test_pattern_cut_weights_fit_every_pattern_and_cut_off_what_does_not_pack(seed):
    rng = np.random.default_rng(seed)
    cap = 100
    n_bins = int(rng.integers(2, 4))
    sizes = sorted({int(s) for s in rng.integers(11, 70, size=int(rng.integers(2, 5)))})
    counts = {s: int(rng.integers(1, 5)) for s in sizes}
    cut = packing_cut(counts, n_bins, cap)
    items = [s for s, c in counts.items() for _ in range(c)]
    fits = packable(items, n_bins, cap)
    if cut is None:
        return
    w = dict(cut.weights)
    for pattern in _all_fitting(sizes, cap):  # dual feasibility, checked from scratch
        assert sum(n * w.get(s, 0) for n, s in zip(pattern, sizes, strict=True)) <= cut.scale
    assert sum(w.get(s, 0) * c for s, c in counts.items()) > cut.rhs
    assert fits is False  # a violated valid cut proves the items do not pack


def test_pattern_cut_catches_what_the_fekete_schepers_cuts_miss():
    """Six items of 0.383 Q and one of 0.281 Q (ResNet-50 chunks) do not pack into three bins; u^(1..3) sum to at
    most 3 on them, the pattern cut does not."""
    q = 262144
    a, b = 100352, 73728
    assert packable([a] * 6 + [b], 3, q) is False
    cut = packing_cut(Counter({a: 6, b: 1}), 3, q)
    assert cut is not None
    w = dict(cut.weights)
    assert 6 * w[a] + w.get(b, 0) > cut.rhs


def test_maximal_patterns_are_maximal_and_complete():
    sizes, cap = [30, 45, 60], 100
    pats = set(maximal_patterns(sizes, cap))
    for c in _all_fitting(sizes, cap):
        room = cap - sum(n * s for n, s in zip(c, sizes, strict=True))
        if room < min(sizes):
            assert c in pats
    for c in pats:
        assert cap - sum(n * s for n, s in zip(c, sizes, strict=True)) < min(sizes)


# ------------------------------------------------------------------------------------------------ assignment
def _brute_assign(pieces: list[Piece], n_bins: int, cap: int) -> bool:
    steps = range(min(p.start for p in pieces), max(p.end for p in pieces) + 1)
    for bins in itertools.product(range(n_bins), repeat=len(pieces)):
        if all(sum(p.size for p, k in zip(pieces, bins, strict=True) if k == kk and p.start <= m <= p.end) <= cap
               for m in steps for kk in range(n_bins)):
            return True
    return False


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("split", [True, False])
def test_assignment_is_exact(seed, split):
    rng = np.random.default_rng(seed)
    pieces = []
    for i in range(7):
        s = int(rng.integers(0, 8))
        pieces.append(Piece(s, s + int(rng.integers(0, 4)), int(rng.integers(3, 8)), i, ()))
    assigned, failed, _ = assign_pieces(pieces, 2, 10, split=split, time_limit=10.0)
    expected = _brute_assign(pieces, 2, 10)
    assert (assigned is not None) == expected
    if assigned is None:
        assert failed is not None and _brute_assign(failed, 2, 10) is False
    else:
        for m in range(20):
            for k in range(2):
                assert sum(p.size for p, kk in assigned.items() if kk == k and p.start <= m <= p.end) <= 10
    parts = split_parts(pieces)
    assert sorted(p for part in parts for p in part) == sorted(pieces)


def test_race_returns_each_backends_answer():
    wl = random_workload(2, n_ops=6)
    p = prepare(Instance(problem="pinning", name="r", workload=wl, hardware=small_accelerator([32, 32]),
                         objective="transfers", options={}))
    form = build_gap_milp(p.data.graph, "transfers", p.data.dma)
    results = race(form.model, ["highs", "cpsat"], DETERMINISTIC)
    assert [r.solver for r in results if r.objective is not None]
    done = [r for r in results if r.status == Status.OPTIMAL]
    assert done
    assert all(r.objective == pytest.approx(done[0].objective) for r in done)


# ------------------------------------------------------------------------------------------------ model reductions
def _optimum(model, *, lp: bool = False) -> float | None:
    import dataclasses

    from dlaopt.solvers.backends import solve_linear

    if lp:
        model = dataclasses.replace(model, integrality=np.zeros(model.n_cols, dtype=bool))
    r = solve_linear(model, "highs", DETERMINISTIC)
    return None if r.objective is None else r.objective + 0.0


@pytest.mark.parametrize(("seed", "caps"), [(s, [24, 24]) for s in range(5)] + [(s, [16, 16, 16]) for s in range(3)])
def test_occupancy_chains_keep_the_optimum_and_the_relaxation(seed, caps):
    """Capacity and Fekete-Schepers rows over chained occupancy columns: the same MILP optimum (brute force) and
    the same LP bound as the rows written per step, for the per-scratchpad model and the merged one."""
    from dlaopt.formulations.pinning.milp_gaps import identical_bins, merged_graph

    n_ops = 4 if len(caps) == 2 else 3
    p = prepare(_instance(seed, caps, n_ops, {}))
    g, dma = p.data.graph, p.data.dma
    expected = brute_force(g, "transfers", dma) if n_cells(g) <= (14 if len(caps) == 2 else 10) else None
    for graph, bins in ((g, None), (merged_graph(g), identical_bins(g))):
        direct = build_gap_milp(graph, "transfers", dma, bins=bins)
        chained = build_gap_milp(graph, "transfers", dma, bins=bins, aggregate=True)
        for lp in (False, True):
            a, b = _optimum(direct.model, lp=lp), _optimum(chained.model, lp=lp)
            assert (a is None) == (b is None)
            if a is not None:
                assert b == pytest.approx(a + direct.objective_offset - chained.objective_offset, abs=1e-6)
        if graph is g and expected is not None:
            assert _optimum(chained.model) + chained.objective_offset == pytest.approx(expected)


def test_occupancy_chains_write_a_long_gap_twice():
    """Twenty buffers kept across a long idle stretch: a term per buffer and idle step written directly; chained,
    each enters twice (it starts and ends), plus a chain of two terms per step."""
    from dlaopt.formulations.pinning.milp_gaps import Occupancy
    from dlaopt.solvers.linear import LinearModelBuilder

    n = 20
    none = np.zeros(0, np.int64)
    occ = Occupancy(50, none, none, none, np.zeros(n, np.int64), np.full(n, 1), np.r_[np.full(n - 1, 45), 30],
                    np.arange(n))
    nnz = {}
    for agg in (False, True):
        mb = LinearModelBuilder("t")
        mb.add_vars("g", n, upper=1.0)
        rows = occ.add_rows(mb, "cap", 1, np.zeros(0), np.ones(n), np.array([5.0]), aggregate=agg)
        assert rows == 44  # steps 1..44 can hold more than 5
        nnz[agg] = mb.build().n_nonzeros
    assert nnz[False] == (n - 1) * 44 + 29
    assert nnz[True] == 44 + (44 + 43) + n + 1  # the rows' occupancy columns, the chain, the starts, one end


@pytest.mark.parametrize("seed", range(4))
def test_lazy_rows_assembled_equal_the_merged_model(seed):
    """Core rows plus every pool row is the merged model again (same LP and MILP optimum); core alone is a
    relaxation (never above)."""
    from dlaopt.formulations.pinning.exact import MergedRows, model_rows, with_rows
    from dlaopt.formulations.pinning.milp_gaps import build_gap_model, identical_bins, merged_graph

    p = prepare(_instance(seed, [40, 40, 40], 9, {}))
    g = p.data.graph
    gm = build_gap_model(merged_graph(g), "transfers", p.data.dma, bins=identical_bins(g))
    mr = MergedRows.build(gm, len(g.steps))
    full = with_rows(mr.core, model_rows(mr.pool, np.arange(mr.pool.n_rows)))
    assert full.n_rows == gm.formulation.model.n_rows
    for lp in (False, True):
        ref = _optimum(gm.formulation.model, lp=lp)
        assert _optimum(full, lp=lp) == pytest.approx(ref)
        assert _optimum(mr.core, lp=lp) <= ref + 1e-6


def test_driver_honours_a_short_time_limit():
    """Under a limit shorter than the merged rounds need, the driver still returns in time with a verified
    solution (greedy at least) and a bound no higher than it."""
    import time

    inst = Instance(problem="pinning", name="r", workload=random_workload(3, n_ops=40),
                    hardware=small_accelerator([40, 40, 40]), objective="transfers", options={})
    p = prepare(inst)
    t = time.monotonic()
    res = solve(p, "exact", options=SolveOptions(seed=0, threads=1, time_limit=0.3))
    assert time.monotonic() - t < 0.3 + 2.0
    assert res.verified
    assert res.bound is None or res.bound <= res.objective + 1e-9
