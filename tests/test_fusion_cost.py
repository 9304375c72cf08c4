"""The fused cost model (dlaopt.formulations.fusion.cost) against the fused loop-nest simulator, plus derived cases:
FLAT's attention off-chip traffic fused vs unfused, conv-chain halo recompute, Table A.1 vs the exact requirement,
dependence violations, and the group builders' validation."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlaopt.errors import InputError
from dlaopt.formulations.fusion import group as group_module
from dlaopt.formulations.fusion.cost import combine_fused, evaluate_fused, evaluate_unfused, inner_problems
from dlaopt.formulations.fusion.flat import (
    exact_requirement,
    flat_tile,
    flat_tiles,
    granularity_of,
    staged_whole_mappings,
    table_a1_requirement,
)
from dlaopt.formulations.fusion.group import (
    FusedOp,
    attention_group,
    check_tile,
    dependence_errors,
    dependence_failures,
    group_from_workload,
    inner_extents,
    n_outer,
    outer_iterations,
    outer_tiles,
    produced_counts,
    tile_offsets,
)
from dlaopt.formulations.fusion.simulate import simulate_fused
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import fit_capacity, sample_mapping
from dlaopt.hardware.model import DMA, Accelerator, Memory, MemoryKind, PEArray
from dlaopt.workload.builder import NetworkBuilder

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def small_arch(glb: int | None = 2048, rf: int | None = 32, axes: tuple = (("rows", 2), ("cols", 2))) -> MappingArch:
    """DRAM, a shared global buffer (the staging level) and a register file per PE."""
    pes = math.prod(n for _, n in axes)
    glb = glb if glb is not None else 1 << 30  # None: large enough for anything here
    rf = rf if rf is not None else 1 << 30
    mems = (
        Memory("dram", MemoryKind.DRAM, None, read_energy_pj_per_byte=100.0, write_energy_pj_per_byte=100.0,
               bandwidth_bytes_per_cycle=4),
        Memory("glb", MemoryKind.SCRATCHPAD, glb, read_energy_pj_per_byte=3.0, write_energy_pj_per_byte=3.0,
               bandwidth_bytes_per_cycle=16),
        Memory("rf", MemoryKind.REGISTER, rf, instances=pes, read_energy_pj_per_byte=0.5,
               write_energy_pj_per_byte=0.5, network_energy_pj_per_byte=1.0),
    )
    return arch_from_accelerator(Accelerator("fusion-small", PEArray(axes), mems, DMA(4.0), mac_energy_pj=1.0))


def random_mappings(group, arch, tile, rng: random.Random) -> list:
    out = []
    for p in inner_problems(group, arch, tile, "glb"):
        m = sample_mapping(p.nest, arch, rng)
        fitted = fit_capacity(p.nest, arch, m, roots=p.roots, capacity_limits=p.capacity_limits)
        out.append(fitted if fitted is not None else m)
    return out


def assert_model_equals_simulation(group, arch, tile, mappings) -> None:
    rep = evaluate_fused(group, arch, tile, "glb", mappings)
    sim = simulate_fused(group, arch, tile, "glb", mappings)
    for r, s, op in zip(rep.op_reports, sim.op_sims, group.ops, strict=True):
        got = {lv: {t: (a.reads, a.writes, a.network, a.link) for t, a in d.items()} for lv, d in s.accesses.items()}
        want = {lv: {t: (a.reads, a.writes, a.network, a.link) for t, a in d.items()} for lv, d in r.accesses.items()}
        assert got == want, op.name
        assert s.macs == r.macs == s.distinct_iterations
        assert s.temporal_steps == r.compute_cycles
    assert not sim.dependence_violations
    if not rep.valid:  # a capacity violation: the counts above still had to agree
        assert all("need" in v for v in rep.violations), rep.violations
        return
    assert rep.n_outer == sim.n_outer == n_outer(group, tile)
    assert rep.offchip_bytes == sim.offchip_bytes
    assert rep.offchip_by_tensor == sim.offchip_by_tensor
    assert rep.macs == sim.macs
    assert rep.produced == sim.produced
    assert rep.distinct_produced == sim.distinct_produced
    assert rep.recomputed == sim.recomputed
    assert rep.sfu_vector_ops == pytest.approx(sim.sfu_vector_ops)
    assert (rep.sfu_staging_reads, rep.sfu_staging_writes) == (sim.sfu_staging_reads, sim.sfu_staging_writes)


# ================================================================================================ model == simulation
@FAST
@given(batch=st.sampled_from([1, 2]), heads=st.sampled_from([1, 2]), seq=st.sampled_from([2, 4]),
       seq_k=st.sampled_from([2, 3, 4]), d=st.sampled_from([1, 2]), dv=st.sampled_from([1, 2, 3]),
       pick=st.integers(0, 10_000), seed=st.integers(0, 10_000),
       axes=st.sampled_from([(("rows", 2), ("cols", 2)), (("pe", 4),)]))
def test_attention_model_equals_simulation(batch: int, heads: int, seq: int, seq_k: int, d: int, dv: int,
                                           pick: int, seed: int, axes: tuple) -> None:
    group = attention_group(batch, heads, seq, seq_k, d, dv, word_bytes=2)
    tiles = outer_tiles(group)
    tile = tiles[pick % len(tiles)]
    arch = small_arch(axes=axes)
    assert_model_equals_simulation(group, arch, tile, random_mappings(group, arch, tile, random.Random(seed)))


def conv_chain(n_convs: int, h: int, strides: tuple[int, ...], kernels: tuple[int, ...], pads: tuple[int, ...],
               relu: bool = True):
    b = NetworkBuilder("chain", dtype_bytes=1)
    x = b.input("x", (1, 2, h, h))
    for i in range(n_convs):
        x = b.conv2d(x, 2, kernels[i], stride=strides[i], padding=pads[i], name=f"c{i}")
        if relu and i < n_convs - 1:
            x = b.activation(x, "relu", name=f"r{i}")
    w = b.build([x])
    return group_from_workload(w, [f"c{i}" for i in range(n_convs)])


@FAST
@given(n_convs=st.sampled_from([2, 3]), h=st.sampled_from([5, 6, 8]),
       strides=st.tuples(st.sampled_from([1, 2]), st.sampled_from([1, 2]), st.sampled_from([1, 2])),
       kernels=st.tuples(st.sampled_from([1, 3]), st.sampled_from([1, 3]), st.sampled_from([1, 3])),
       pads=st.tuples(st.sampled_from([0, 1]), st.sampled_from([0, 1]), st.sampled_from([0, 1])),
       pick=st.integers(0, 10_000), seed=st.integers(0, 10_000))
def test_conv_chain_model_equals_simulation(n_convs: int, h: int, strides: tuple, kernels: tuple, pads: tuple,
                                            pick: int, seed: int) -> None:
    try:
        group = conv_chain(n_convs, h, strides, kernels, pads)
    except (ValueError, InputError):  # the image shrinks below the filter: not a valid network
        return
    tiles = outer_tiles(group)
    tile = tiles[pick % len(tiles)]
    arch = small_arch(glb=4096)
    assert_model_equals_simulation(group, arch, tile, random_mappings(group, arch, tile, random.Random(seed)))


def test_matmul_chain_with_weight_intermediate_and_write_back() -> None:
    """B·(A·C) where the intermediate is the consumer's W (recomputed for every row tile of the consumer) and is
    also consumed outside the group (written back once)."""
    b = NetworkBuilder("mm", dtype_bytes=2)
    a = b.input("a", (2, 3, 4))
    c = b.input("c", (2, 4, 2))
    x = b.input("x", (2, 4, 3))
    t = b.matmul(a, c, name="p")  # (2, 3, 2)
    y = b.matmul(x, t, name="q")  # (2, 4, 2): t is q's W
    z = b.activation(t, "relu", name="other")  # t consumed outside the group
    w = b.build([y, z])
    group = group_from_workload(w, ["p", "q"])
    (inter,) = group.intermediates
    assert inter.consumer_operand == "W" and inter.written_back == ("p.out",)
    arch = small_arch()
    rng = random.Random(3)
    for tile in outer_tiles(group):
        ms = random_mappings(group, arch, tile, rng)
        assert_model_equals_simulation(group, arch, tile, ms)
        rep = evaluate_fused(group, arch, tile, "glb", ms)
        if rep.valid:
            # the producer is whole per batch tile: recomputed once per M tile of the consumer
            assert rep.recomputed["p.out"] == (tile["M"] - 1) * 2 * 3 * 2
            assert rep.offchip_by_tensor["p.out"] == 2 * 3 * 2 * 2  # written back once, 2 bytes per element


def test_residual_side_input_counts() -> None:
    """conv -> add(residual from outside) -> conv: the residual is read from main memory per produced element."""
    b = NetworkBuilder("res", dtype_bytes=1)
    x = b.input("x", (1, 2, 6, 6))
    r = b.input("r", (1, 2, 6, 6))
    y = b.conv2d(x, 2, 3, padding=1, name="c0")
    y = b.add(y, r, name="add")
    y = b.conv2d(y, 2, 3, padding=1, name="c1")
    group = group_from_workload(b.build([y]), ["c0", "c1"])
    (inter,) = group.intermediates
    assert inter.side_inputs == ("r",) and inter.sfu_ops == ("add",)
    arch = small_arch(glb=4096)
    tile = {"P": 3}
    ms = staged_whole_mappings(group, arch, tile, "glb")
    assert_model_equals_simulation(group, arch, tile, ms)
    rep = evaluate_fused(group, arch, tile, "glb", ms)
    # c1's tiles of 2 rows need c0 rows [2k-1, 2k+3) clamped into [0, 6): windows of 4 rows, 3 tiles
    assert rep.offchip_by_tensor["r"] == 3 * 4 * 6 * 2


# ================================================================================================ closed forms
def walk_counts(group, tile) -> list[tuple[int, int]]:
    """Per intermediate: (elements produced, distinct ones), by listing every produced element of every outer
    iteration (the producer's window box at that iteration's offsets)."""
    ext = inner_extents(group, tile)
    out = []
    for x in group.intermediates:
        nest = group.ops[x.producer].nest
        dims = nest.operand("O").dims
        seen: set[tuple[int, ...]] = set()
        produced = 0
        for index in outer_iterations(group, tile):
            off = tile_offsets(group, tile, index)[x.producer]
            box = set(itertools.product(*(range(off[d], off[d] + ext[x.producer][d]) for d in dims)))
            produced += len(box)
            seen |= box
        out.append((produced, len(seen)))
    return out


def walk_failures(group, tile) -> set[tuple]:
    """Every (intermediate, axis, kind, iteration) whose consumer reads outside its producer's window (hull of the
    real elements read) or whose row-reduction axis is not produced whole, iteration by iteration."""
    ext = inner_extents(group, tile)
    out = set()
    for index in outer_iterations(group, tile):
        off = tile_offsets(group, tile, index)
        for k, x in enumerate(group.intermediates):
            p, c = x.producer, x.consumer
            for a, ax in enumerate(x.axes):
                plo = sum(coef * off[p][d] for d, coef in ax.producer)
                phi = sum(coef * (off[p][d] + ext[p][d] - 1) for d, coef in ax.producer)
                clo = max(0, sum(coef * off[c][d] for d, coef in ax.consumer) - ax.shift)
                chi = min(ax.size - 1, sum(coef * (off[c][d] + ext[c][d] - 1) for d, coef in ax.consumer) - ax.shift)
                key = tuple(sorted(index.items()))
                if clo <= chi and (clo < plo or chi > phi):
                    out.add((k, a, "read", key))
                if a == x.softmax_axis and (plo > 0 or phi < ax.size - 1):
                    out.add((k, a, "softmax", key))
    return out


def expand_failures(group, tile) -> set[tuple]:
    out = set()
    for f in dependence_failures(group, tile):
        for index in outer_iterations(group, tile):
            if (index[f.dim] in range(f.lo, f.hi) if f.dim is not None
                    else all(index[g] == v for g, v in f.first.items())):
                out.add((f.intermediate, f.axis, f.kind, tuple(sorted(index.items()))))
    return out


@FAST
@given(n_convs=st.sampled_from([2, 3]), h=st.sampled_from([7, 8, 12]),
       strides=st.tuples(st.sampled_from([1, 2]), st.sampled_from([1, 2]), st.sampled_from([1, 2])),
       kernels=st.tuples(st.sampled_from([1, 3, 5]), st.sampled_from([1, 3]), st.sampled_from([1, 3])),
       pads=st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from([0, 1]), st.sampled_from([0, 1])),
       pick=st.integers(0, 10_000), skew=st.integers(0, 10_000))
def test_closed_form_counts_equal_iteration_walk(n_convs: int, h: int, strides: tuple, kernels: tuple, pads: tuple,
                                                 pick: int, skew: int) -> None:
    """produced_counts and dependence_failures (per position class, independent of the number of outer iterations)
    equal an explicit walk over every outer iteration, on conv chains with halos, strides and padding, both as
    built and with a halo window or padding knocked off by one (so that some iterations read unproduced rows)."""
    try:
        group = conv_chain(n_convs, h, strides, kernels, pads)
    except (ValueError, InputError):
        return
    tiles = outer_tiles(group)
    tile = check_tile(group, tiles[pick % len(tiles)])
    assert produced_counts(group, tile) == walk_counts(group, tile)
    assert not dependence_failures(group, tile) and not walk_failures(group, tile)
    rng = random.Random(skew)
    ops = list(group.ops)
    with_halo = [i for i, op in enumerate(ops) if op.halo]
    if not with_halo:
        return
    i = rng.choice(with_halo)
    d = rng.choice(sorted(ops[i].halo))
    s, add = ops[i].halo[d]
    if rng.random() < 0.5:
        halo = {**ops[i].halo, d: (s, max(1, add + rng.choice([-2, -1, 1])))}
        ops[i] = replace(ops[i], halo=halo)
    else:
        ops[i] = replace(ops[i], halo_pad={**ops[i].halo_pad, d: ops[i].halo_pad.get(d, 0) + rng.choice([-1, 1])})
    bad = replace(group, ops=tuple(ops))
    assert produced_counts(bad, tile) == walk_counts(bad, tile)
    assert expand_failures(bad, tile) == walk_failures(bad, tile)
    assert bool(dependence_errors(bad, tile)) == bool(walk_failures(bad, tile))


def test_closed_form_softmax_failures_equal_walk() -> None:
    group = attention_group(1, 2, 4, 6, 1, 1)
    l_op, a_op = group.ops
    ops = (FusedOp(l_op.nest, {**l_op.outer, "K": "N"}), FusedOp(a_op.nest, {**a_op.outer, "K": "K"}))
    bad = replace(group, ops=ops, outer_dims={**group.outer_dims, "K": 6})
    for tile in outer_tiles(bad):
        assert expand_failures(bad, tile) == walk_failures(bad, tile)
        assert produced_counts(bad, tile) == walk_counts(bad, tile)


def test_huge_attention_tile_is_evaluated_without_walking_iterations(monkeypatch: pytest.MonkeyPatch) -> None:
    """FLAT R-Gran with Rx = 2 at N = 65,536 and batch x heads = 768 (25,165,824 outer iterations): combine_fused
    looks at as many tile positions as for a 64-token sequence (counted by a spy on tile_offsets), and its counts
    are n_outer times one iteration's."""
    calls = {"n": 0}
    real = group_module.tile_offsets

    def spy(*args, **kwargs):  # noqa: ANN202
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(group_module, "tile_offsets", spy)
    arch = small_arch(glb=None, rf=None)
    used = []
    for n in (64, 65536):
        group = attention_group(64, 12, n, n, 64, 64)
        tile = flat_tile(group, "R", 2)
        reports = [evaluate_mapping(p.nest, arch, m, roots=p.roots, capacity_limits=p.capacity_limits)
                   for p, m in zip(inner_problems(group, arch, tile, "glb"),
                                   staged_whole_mappings(group, arch, tile, "glb"), strict=True)]
        calls["n"] = 0
        rep = combine_fused(group, arch, tile, "glb", reports)
        used.append(calls["n"])
        assert rep.valid, rep.violations
        assert rep.n_outer == 768 * (n // 2)
        assert rep.produced["L.out"] == rep.distinct_produced["L.out"] == 768 * n * n
        assert rep.offchip_by_tensor["Kt"] == rep.n_outer * n * 64 * 2
    assert used[0] == used[1] < 100


# ================================================================================================ derived cases
def test_attention_offchip_fused_vs_unfused() -> None:
    """M-Gran: only Q, K, V and the output cross the chip boundary; unfused adds the N x N logits written by L and
    read by A, and the softmax pass reading and writing them. R-Gran re-fetches K and V once per row tile."""
    batch, heads, n, d, w = 1, 2, 4, 2, 2
    group = attention_group(batch, heads, n, n, d, d, word_bytes=w)
    arch = small_arch(glb=None, rf=None)  # unbounded: whole tiles fit
    bh = batch * heads
    q = k = v = out = bh * n * d * w
    logits = bh * n * n * w
    tile = flat_tile(group, "M")
    ms = staged_whole_mappings(group, arch, tile, "glb")
    fused = evaluate_fused(group, arch, tile, "glb", ms)
    assert fused.valid and fused.offchip_bytes == q + k + v + out
    unfused = evaluate_unfused(group, arch, ms)
    assert unfused.valid and unfused.offchip_bytes == q + k + v + out + 2 * logits + 2 * logits
    # main memory: L writes and A reads the logits (100 pJ/B); the softmax pass reads and writes them again in
    # main memory unfused, in the staging buffer (3 pJ/B) fused
    def dram(rep) -> float:
        return sum(e for r in rep.op_reports for key, e in r.energy_breakdown.items() if key.startswith("dram/"))

    assert dram(unfused) - dram(fused) == pytest.approx(2 * logits * 100.0)
    assert unfused.sfu_energy_pj == pytest.approx(2 * logits * 100.0)
    assert fused.sfu_energy_pj == pytest.approx(2 * logits * 3.0)
    for rx in (1, 2):
        tile = flat_tile(group, "R", rx)
        ms = staged_whole_mappings(group, arch, tile, "glb")
        rep = evaluate_fused(group, arch, tile, "glb", ms)
        iters = bh * (n // rx)
        assert rep.n_outer == iters
        assert rep.offchip_bytes == iters * (rx * d + n * d + n * d + rx * d) * w
        assert rep.offchip_by_tensor["Kt"] == iters * n * d * w
        assert rep.recomputed["L.out"] == 0


def test_conv_chain_halo_recompute_by_hand() -> None:
    """Two 3x3 convs (padding 1) on 8x8: c1 in 4 row tiles of 2 rows needs c0 rows [2k-1, 2k+3) clamped into
    [0, 8): 4-row windows, 16 rows produced for 8 distinct."""
    b = NetworkBuilder("cc", dtype_bytes=1)
    x = b.input("x", (1, 2, 8, 8))
    y = b.conv2d(x, 3, 3, padding=1, name="c0")
    y = b.conv2d(y, 2, 3, padding=1, name="c1")
    group = group_from_workload(b.build([y]), ["c0", "c1"])
    assert dict(group.ops[0].halo) == {"P": (1, 3), "Q": (1, 3)}
    tile = {"P": 4}
    assert inner_extents(group, tile)[0]["P"] == 4
    arch = small_arch(glb=None, rf=None)
    ms = staged_whole_mappings(group, arch, tile, "glb")
    rep = evaluate_fused(group, arch, tile, "glb", ms)
    assert rep.produced["c0.out"] == 4 * (4 * 8 * 3)
    assert rep.distinct_produced["c0.out"] == 8 * 8 * 3
    assert rep.recomputed["c0.out"] == 8 * 8 * 3
    # c0 reads its input rows [w-1, w+5) of each window w (padding rows included): 6 rows x 10 cols x 2 channels
    assert rep.offchip_by_tensor["x"] == 4 * 6 * 10 * 2
    assert rep.macs == 4 * (3 * 2 * 4 * 8 * 9) + 8 * 8 * 2 * 3 * 9
    assert_model_equals_simulation(group, small_arch(glb=4096), tile,
                                   staged_whole_mappings(group, small_arch(glb=4096), tile, "glb"))
    # one tile: the fused group does exactly the unfused work
    whole = staged_whole_mappings(group, arch, {"P": 1}, "glb")
    one = evaluate_fused(group, arch, {"P": 1}, "glb", whole)
    assert one.macs == one.real_macs == evaluate_unfused(group, arch, whole).macs


def test_table_a1_vs_exact_requirement() -> None:
    """With whole operand tiles staged, the exact requirement is intermediate + 2 x max(L's Q+K, A's V+O); Table
    A.1 adds L's and A's double-buffered operands instead of taking the larger: the intermediate terms agree, the
    linear terms differ by exactly that factor of 2."""
    batch, heads, n, d, w = 2, 2, 8, 2, 2
    group = attention_group(batch, heads, n, n, d, d, word_bytes=w)
    arch = small_arch(glb=None, rf=None)
    for gran, tile in flat_tiles(group):
        assert granularity_of(group, tile) == gran
        ms = staged_whole_mappings(group, arch, tile, "glb")
        exact = exact_requirement(group, arch, tile, "glb", ms) // w
        b_t = batch * heads // tile["B"]  # heads per tile
        rows = n // tile["M"]
        inter = b_t * rows * n
        operands = b_t * (rows * d + n * d)  # L: Q + K;  A: V + O (same sizes with dv = d)
        assert exact == inter + 2 * operands
        bb, hh = {"M": (batch, heads), "B": (1, heads), "H": (1, 1), "R": (1, 1)}[gran]
        table = table_a1_requirement(gran, bb, hh, n, d, rows if gran == "R" else None)
        assert table - inter == 2 * (2 * operands)
    assert {g for g, _ in flat_tiles(group)} == {"M", "B", "H", "R"}
    assert [t["M"] for g, t in flat_tiles(group, "R")] == [8, 4, 2]


def test_dependence_violation_when_softmax_rows_split() -> None:
    """Tiling the keys splits the softmax rows: the cost model and the simulator both refuse it."""
    group = attention_group(1, 1, 2, 4, 1, 1)
    l_op, a_op = group.ops
    ops = (FusedOp(l_op.nest, {**l_op.outer, "K": "N"}), FusedOp(a_op.nest, {**a_op.outer, "K": "K"}))
    bad = replace(group, ops=ops, outer_dims={**group.outer_dims, "K": 4})
    tile = {"K": 2}
    assert any("softmax rows are split" in e for e in dependence_errors(bad, tile))
    arch = small_arch(glb=None, rf=None)
    ms = staged_whole_mappings(bad, arch, tile, "glb")
    rep = evaluate_fused(bad, arch, tile, "glb", ms)
    assert not rep.valid and any("softmax" in v for v in rep.violations)
    sim = simulate_fused(bad, arch, tile, "glb", ms)
    assert any("softmax rows" in v for v in sim.dependence_violations)


def test_staging_capacity_reserves_the_intermediate() -> None:
    group = attention_group(1, 1, 4, 4, 2, 2, word_bytes=1)
    tile = flat_tile(group, "M")
    ms = staged_whole_mappings(group, small_arch(glb=None, rf=None), tile, "glb")
    need = exact_requirement(group, small_arch(glb=None, rf=None), tile, "glb", ms)
    assert need == 16 + 2 * (8 + 8)
    assert evaluate_fused(group, small_arch(glb=need, rf=None), tile, "glb", ms).valid
    tight = evaluate_fused(group, small_arch(glb=need - 1, rf=None), tile, "glb", ms)
    assert not tight.valid
    assert evaluate_fused(group, small_arch(glb=16 + 16, rf=None), tile, "glb", ms, buffering=1).valid


# ================================================================================================ validation
def test_group_validation_errors() -> None:
    b = NetworkBuilder("bad", dtype_bytes=1)
    x = b.input("x", (1, 2, 6, 6))
    y = b.conv2d(x, 2, 3, padding=1, name="c0")
    z = b.conv2d(x, 2, 3, padding=1, name="c1")  # reads x, not c0's output
    p = b.pool(y, "max", 2, name="pool")
    u = b.conv2d(p, 2, 1, name="c2")
    f = b.linear(b.flatten(b.add(z, y, name="add")), 3, name="fc")
    w = b.build([u, f])
    with pytest.raises(ValueError, match="not a chain"):
        group_from_workload(w, ["c0", "c1"])
    with pytest.raises(ValueError, match="cannot be fused"):
        group_from_workload(w, ["c0", "pool", "c2"])
    with pytest.raises(ValueError, match="unknown operator"):
        group_from_workload(w, ["c0", "nope"])
    with pytest.raises(ValueError, match="mix"):
        group_from_workload(w, ["c1", "fc"])
    with pytest.raises(ValueError, match="divide"):
        n_outer(attention_group(1, 1, 4, 4, 1, 1), {"M": 3})
