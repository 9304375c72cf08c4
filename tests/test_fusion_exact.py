"""The exact fused-group optimum (outer tile x inner-mapping MILPs, bound pruning) against brute force: every outer
tile times every combination of inner mappings, scored by the fused cost model as a whole."""

from __future__ import annotations

import math

import pytest

from dlaopt.formulations.fusion.cost import inner_problems
from dlaopt.formulations.fusion.exact import (
    GroupSolver,
    compulsory,
    exhaustive_group,
    offchip_arch,
    offchip_bytes,
    solve_group,
)
from dlaopt.formulations.fusion.group import attention_group, group_from_workload, outer_tiles
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.exhaustive import all_mappings
from dlaopt.hardware.model import DMA, Accelerator, Memory, MemoryKind, PEArray
from dlaopt.solvers.result import Status
from dlaopt.workload.builder import NetworkBuilder

OBJECTIVES = ("energy", "latency", "offchip")


def tiny_arch(capacity: int, dram_bw: float) -> MappingArch:
    acc = Accelerator("tiny", PEArray((("x", 2),)), (
        Memory("dram", MemoryKind.DRAM, None, bandwidth_bytes_per_cycle=dram_bw, read_energy_pj_per_byte=100,
               write_energy_pj_per_byte=120),
        Memory("glb", MemoryKind.BUFFER, capacity, bandwidth_bytes_per_cycle=8, read_energy_pj_per_byte=2,
               write_energy_pj_per_byte=3),
    ), DMA(4), mac_energy_pj=1.0)
    return arch_from_accelerator(acc)


def conv_chain():
    b = NetworkBuilder("chain", dtype_bytes=1)
    x = b.input("x", (1, 2, 8, 1))
    y = b.conv2d(x, 2, (3, 1), padding=(1, 0), name="c1", activation="relu")
    z = b.conv2d(y, 2, (3, 1), stride=(2, 1), padding=(1, 0), name="c2")
    return group_from_workload(b.build([z]), ["c1", "c2"])


CASES = {
    # the whole logit tile (32 B) does not fit: M-Gran is infeasible, finer tiles compete
    "attention": (lambda: attention_group(1, 2, 4, 4, 2, 2, word_bytes=1), 30, 8.0),
    # stride-2 consumer with padding: halo rows recomputed, the whole intermediate does not fit with its operands
    "conv-chain": (conv_chain, 21, 4.0),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request: pytest.FixtureRequest) -> tuple:
    make, cap, bw = CASES[request.param]
    return make(), tiny_arch(cap, bw)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_exact_equals_exhaustive(case: tuple, objective: str) -> None:
    group, arch = case
    ex = solve_group(group, arch, objective, 0)
    bf = exhaustive_group(group, arch, objective, 0)
    assert ex.status == Status.OPTIMAL and bf.status == Status.OPTIMAL
    assert ex.value == pytest.approx(bf.value, rel=1e-9)
    if objective == "offchip":  # lexicographic: least traffic, then least latency
        assert ex.latency == pytest.approx(bf.latency, rel=1e-9)
    assert ex.bound is not None and ex.bound <= ex.value * (1 + 1e-9)
    # the returned mappings really have that value under the fused model
    from dlaopt.formulations.fusion.cost import evaluate_fused

    rep = evaluate_fused(group, arch, ex.tile, 0, ex.mappings)
    assert rep.valid and rep.objective(objective) == pytest.approx(ex.value, rel=1e-9)


def test_tile_lower_bounds_hold(case: tuple) -> None:
    """Every tile's pruning bound is below its optimum (checked with pruning off, every tile solved)."""
    group, arch = case
    for objective in OBJECTIVES:
        gs = GroupSolver(arch, objective, prune=False)
        res = gs.solve(group, 0)
        solved = [t for t in res.tiles if t.state == "solved"]
        assert solved and all(t.lower_bound <= t.value * (1 + 1e-9) for t in solved)  # type: ignore[operator]
        pruned = solve_group(group, arch, objective, 0)
        assert pruned.value == pytest.approx(res.value, rel=1e-12)


def test_compulsory_traffic_is_a_lower_bound() -> None:
    """The compulsory main-memory bytes of an inner problem are at most every valid mapping's traffic, and the
    off-chip view of the architecture prices exactly that traffic."""
    group, arch = attention_group(1, 2, 4, 4, 2, 2, word_bytes=1), tiny_arch(30, 8.0)
    off = offchip_arch(arch)
    for tile in outer_tiles(group)[1:3]:
        for p in inner_problems(group, arch, tile, 0):
            _, _, least = compulsory(arch, p)
            seen = 0
            for m in all_mappings(p.nest, arch):
                r = evaluate_mapping(p.nest, arch, m, roots=p.roots, capacity_limits=p.capacity_limits)
                if not r.valid:
                    continue
                traffic = offchip_bytes(arch, p.nest, r)
                assert traffic >= least
                assert evaluate_mapping(p.nest, off, m, roots=p.roots,
                                        capacity_limits=p.capacity_limits).energy_pj == pytest.approx(traffic)
                seen += 1
                if seen > 60:
                    break
            assert seen


def test_no_tile_fits_is_a_status() -> None:
    group, arch = attention_group(1, 2, 4, 4, 2, 2, word_bytes=1), tiny_arch(2, 8.0)
    res = solve_group(group, arch, "latency", 0)
    assert res.status == Status.INFEASIBLE and res.tile is None and "no outer tile" in res.message
    assert all(t.state == "infeasible" for t in res.tiles)


def test_inner_solves_are_cached_by_shape() -> None:
    """A solver shared by two groups of identical shape solves each inner problem once."""
    arch = tiny_arch(30, 8.0)
    gs = GroupSolver(arch, "energy", prune=False)
    a = gs.solve(attention_group(1, 2, 4, 4, 2, 2, word_bytes=1, name="a"), 0)
    solves = gs.solves
    b = gs.solve(attention_group(1, 2, 4, 4, 2, 2, word_bytes=1, name="b"), 0)
    assert gs.solves == solves and b.cache_hits > 0 and math.isclose(a.value, b.value)  # type: ignore[arg-type]
