"""The analytical mapping cost model (cost.py) against a direct loop-nest simulation (simulate.py).

Every access count (reads, writes, network per level and operand), the MACs executed and the temporal steps must be
equal exactly, for random valid mappings of small layers (halo convolutions, strided 1x1, depthwise, grouped, batched
matmul) on small architectures (multicast/reduction fanouts, a MAC fanout, a bypassed operand, a partitioned level and
a weight-only PE store).
"""

from __future__ import annotations

import itertools
import math
import random
import time

import pytest
from mapping_cases import ARCHS, LAYERS, assert_same, dram_level, layer_from, make_store, random_mapping

from dlaopt.formulations.mapping.arch import Level, MappingArch
from dlaopt.formulations.mapping.cost import CostReport, evaluate_mapping
from dlaopt.formulations.mapping.loopnest import (
    Coordinate,
    LoopNest,
    Operand,
    loopnest_from_operator,
)
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.formulations.mapping.simulate import simulate_mapping
from dlaopt.workload.builder import NetworkBuilder

MAPPINGS_PER_CASE = 8


@pytest.mark.parametrize("arch_name", sorted(ARCHS))
@pytest.mark.parametrize("layer_name", sorted(LAYERS))
def test_random_mappings_match_simulation(arch_name: str, layer_name: str) -> None:
    arch, nest = ARCHS[arch_name](), LAYERS[layer_name]()
    rng = random.Random(f"{arch_name}/{layer_name}")
    for i in range(MAPPINGS_PER_CASE):
        m = random_mapping(nest, arch, rng)
        report = evaluate_mapping(nest, arch, m, check_capacity=False)
        assert_same(report, simulate_mapping(nest, arch, m), f"{arch_name}/{layer_name} mapping {i}: {m}")


def test_tile_identity_by_elements_only_adds_sliding_window_coincidences() -> None:
    """Naming a tile by its element set instead of by its loop counters can only save fills, and only for inputs of
    windows larger than 1 (a row is ``stride * p + dilation * r``); weights and partial sums never differ."""
    for layer_name in sorted(LAYERS):
        nest = LAYERS[layer_name]()
        windowed = nest.kind != "matmul" and (nest.sizes["R"] > 1 or nest.sizes["S"] > 1)
        for arch_name in ("glb-pe-mac", "three-level"):
            arch = ARCHS[arch_name]()
            rng = random.Random(f"identity/{arch_name}/{layer_name}")
            for _ in range(4):
                m = random_mapping(nest, arch, rng)
                by_loops = simulate_mapping(nest, arch, m).as_tuples()
                by_elements = simulate_mapping(nest, arch, m, tile_identity="elements").as_tuples()
                for lv, per_operand in by_loops.items():
                    for t, counts in per_operand.items():
                        if t == "I" and windowed:
                            assert all(e <= c for e, c in zip(by_elements[lv][t], counts, strict=True))
                        else:
                            assert by_elements[lv][t] == counts


# ---------------------------------------------------------------------------------------------------- seed 001 ch. 2
def conv_nest(name: str, stride: int = 1, dilation: int = 1, **sizes: int) -> LoopNest:
    """A conv2d loop nest built directly (sizes default to 1)."""
    dims = ("N", "G", "K", "C", "P", "Q", "R", "S")
    full = {d: sizes.get(d, 1) for d in dims}

    def c(*terms: tuple[str, int]) -> Coordinate:
        return Coordinate(terms)

    i = Operand("I", f"{name}.in", (c(("N", 1)), c(("G", 1)), c(("C", 1)), c(("P", stride), ("R", dilation)),
                                    c(("Q", stride), ("S", dilation))), 1)
    w = Operand("W", f"{name}.w", (c(("G", 1)), c(("K", 1)), c(("C", 1)), c(("R", 1)), c(("S", 1))), 1)
    o = Operand("O", f"{name}.out", (c(("N", 1)), c(("G", 1)), c(("K", 1)), c(("P", 1)), c(("Q", 1))), 1)
    return LoopNest(name, "conv2d", dims, full, (i, w, o))


def arch_1d(pes: int = 3) -> MappingArch:
    """DRAM -> on-chip shared buffer -> ``pes`` PEs with a local buffer each (seed 001, Fig. 2.3)."""
    return MappingArch(
        "1d",
        (
            Level("pe", (make_store("pe", "IWO", 64, 1.0),), pes, 2.0),
            Level("glb", (make_store("glb", "IWO", 1024, 6.0),), 1, 0.0, (("x", pes),)),
            dram_level(),
        ),
        (),
        1.0,
        1e9,
    )


def mapping_1d(nest: LoopNest, arch: MappingArch, placement: dict[str, dict[str, int]],
               orders: dict[str, tuple[str, ...]]) -> Mapping:
    """``placement[dim][slot name] = factor`` (other factors 1); ``orders[level name]`` lists the loops of a level
    outermost first (other dimensions follow)."""
    slots = arch.slots()
    factors = {d: tuple(placement.get(d, {}).get(s.name, 1) for s in slots) for d in nest.dims}
    full_orders = []
    for lv in arch.levels:
        first = orders.get(lv.name, ())
        full_orders.append((*first, *(d for d in nest.dims if d not in first)))
    m = Mapping(factors, tuple(full_orders))
    assert not mapping_errors(nest, arch, m), mapping_errors(nest, arch, m)
    return m


def test_fig_2_5_output_stationary_counts_by_hand() -> None:
    """Seed 001, Fig. 2.5: O[x] += W[s] * I[x + s], X = S = 9, on 3 PEs:

        for x1 in [0, 3):          # T(glb)
          for s1 in [0, 3):        # T(glb)
            par_for x0 in [0, 3):  # the 3 PEs
              for s0 in [0, 3):    # T(pe)
                O[3*x1 + x0] += W[3*s1 + s0] * I[3*x1 + x0 + 3*s1 + s0]

    Hand derivation (element counts):
    * DRAM -> glb: no loop above the shared buffer, so it is filled once with the whole tensors: I has 9 + 9 - 1 = 17
      elements, W 9, O 9. DRAM reads I 17, W 9; glb writes (fills, network) I 17, W 9. O: one drain of 9 into DRAM
      (glb reads 9, DRAM writes 9); DRAM never reads O (every element's first visit starts from zero).
    * glb -> PEs: the PE tiles are, per PE, 3 weights W[3*s1 + s0], 3 inputs I[x + 3*s1 + s0] (x fixed) and 1 output.
      W and I depend on s1, the innermost loop above the PEs: 3 * 3 = 9 new tiles per PE, 3 PEs: PE fills (writes,
      network) W 3*9*3 = 81 and I 81. The 3 PEs share the weights (x0 is irrelevant to W: multicast): glb reads W
      3 per visit, 27 in all. The inputs of the 3 PEs overlap: x0 + s0 spans 5 rows per visit, glb reads I 5*9 = 45.
      O does not depend on s1: it stays in the PE across s1 (output stationary), 3 tiles per PE (one per x1): PE
      drains 1*3*3 = 9 (PE reads 9, network 9) and the glb receives 9 writes; nothing is reloaded (glb reads 0 for
      the PEs), as each output is visited once.
    * PE -> MAC: 27 steps (x1, s1, s0) on 3 MACs = 81 MACs: PE reads W 81, I 81; O is read-modify-written at every
      step: 81 writes and 81 - 9 = 72 reads (the first touch of each of the 9 outputs needs no read).
    """
    nest = conv_nest("conv1d", Q=9, S=9)
    arch = arch_1d()
    m = mapping_1d(nest, arch, {"Q": {"S1:x": 3, "T1": 3}, "S": {"T0": 3, "T1": 3}}, {"glb": ("Q", "S")})
    expected = {
        "dram": {"I": (17, 0, 0), "W": (9, 0, 0), "O": (0, 9, 0)},
        "glb": {"I": (45, 17, 17), "W": (27, 9, 9), "O": (9, 9, 9)},
        "pe": {"I": (81, 81, 81), "W": (81, 81, 81), "O": (9 + 72, 0 + 81, 9)},
    }
    report = evaluate_mapping(nest, arch, m, check_capacity=False)
    sim = simulate_mapping(nest, arch, m)
    assert {lv: dict(sorted(d.items())) for lv, d in expected.items()} == sim.as_tuples()
    assert_same(report, sim)
    assert (report.macs, report.compute_cycles, report.spatial_used) == (81, 27, 3)
    assert sim.new_tiles["pe"] == {"I": 27, "W": 27, "O": 9}  # 9 per PE for I and W, 3 per PE for O


@pytest.mark.parametrize(("onchip_s", "dram_visits"), [(3, 3), (9, 1)])
def test_fig_2_9_offchip_input_reread_per_weight_tile(onchip_s: int, dram_visits: int) -> None:
    """Seed 001, Fig. 2.9: an off-chip loop over the S tiles sits outermost. With an on-chip S tile of 3 the input is
    re-read from DRAM 3 times (once per weight tile); with the whole S on chip, once."""
    nest = conv_nest("conv1d", Q=9, S=9)
    arch = arch_1d()
    s_place = {"T0": 3, "T2": 9 // onchip_s} if onchip_s == 3 else {"T0": 3, "T1": 3}
    m = mapping_1d(nest, arch, {"Q": {"S1:x": 3, "T1": 3}, "S": s_place}, {"dram": ("S",), "glb": ("Q", "S")})
    report = evaluate_mapping(nest, arch, m, check_capacity=False)
    sim = simulate_mapping(nest, arch, m)
    assert_same(report, sim)
    # simulator: tiles of I loaded into the (single) shared buffer
    assert sim.new_tiles["glb"]["I"] == dram_visits
    # analytical model: DRAM input reads over the on-chip input tile
    tile = report.tile_bytes["glb"]["I"] // nest.operand("I").word_bytes
    assert tile == 9 + onchip_s - 1
    assert report.accesses["dram"]["I"].reads == dram_visits * tile
    assert report.accesses["dram"]["I"].reads // tile == dram_visits
    # the weights and partial sums come from DRAM once either way (O stays on chip across the outer S loop)
    assert report.accesses["dram"]["W"].reads == 9
    assert report.accesses["dram"]["O"].writes == 9 and report.accesses["dram"]["O"].reads == 0


# ---------------------------------------------------------------------------------------------------- seed 001 ch. 5
def _reuse_runs(nest: LoopNest, loops: list[str]) -> dict[str, frozenset[str]]:
    """Per operand with a relevant loop among ``loops`` (outermost first): its innermost run of irrelevant loops."""
    runs = {}
    for op in nest.operands:
        if any(d in op.dims for d in loops):
            run = []
            for d in reversed(loops):
                if d in op.dims:
                    break
                run.append(d)
            runs[op.name] = frozenset(run)
    return runs


def reorder_without_changing_reuse(nest: LoopNest, arch: MappingArch, m: Mapping, rng: random.Random) -> Mapping:
    """At every level, reorder the loops of factor > 1 so that every operand having a relevant loop there keeps the
    same innermost run of irrelevant loops (e.g. shuffle the loops above the innermost relevant loop of every
    operand), and scatter the loops of factor 1 anywhere."""
    new_orders = []
    for j, order in enumerate(m.orders):
        k = arch.temporal_slot(j)
        real = [d for d in order if m.factors[d][k] > 1]
        ones = [d for d in order if m.factors[d][k] == 1]
        for _ in range(20):  # a random permutation keeping every operand's run, if one turns up quickly
            new = rng.sample(real, len(real))
            if _reuse_runs(nest, new) == _reuse_runs(nest, real):
                break
        else:  # shuffle the loops above the innermost relevant loop of every operand
            cut = min([len(real), *(max(p for p, d in enumerate(real) if d in op.dims)
                                     for op in nest.operands if op.dims & set(real))])
            head = real[:cut]
            rng.shuffle(head)
            new = head + real[cut:]
        for d in ones:
            new.insert(rng.randrange(len(new) + 1), d)
        new_orders.append(tuple(new))
    return Mapping(m.factors, tuple(new_orders))


def _signature(report: CostReport) -> dict:
    return {lv: {t: (a.reads, a.writes, a.network) for t, a in d.items()} for lv, d in report.accesses.items()}


def test_permuting_reuse_irrelevant_loops_leaves_cost_unchanged() -> None:
    """Seed 001, Ch. 5 (Fig. 5.7): many loop orders give the same cost — permuting loops that are not the innermost
    relevant loop of any operand (nor below one), or loops of factor 1, changes no access count, energy or latency."""
    changed_orders = 0  # levels whose loops of factor > 1 were reordered
    for arch_name in ("glb-pe-mac", "three-level", "tpu-like"):
        arch = ARCHS[arch_name]()
        for layer_name in ("conv-s2-d2", "grouped", "matmul-batch"):
            nest = LAYERS[layer_name]()
            rng = random.Random(f"perm/{arch_name}/{layer_name}")
            for _ in range(4):
                m = random_mapping(nest, arch, rng)
                base = evaluate_mapping(nest, arch, m, check_capacity=False)
                sim = simulate_mapping(nest, arch, m)
                assert_same(base, sim)
                base_sim = sim.as_tuples()
                for _ in range(3):
                    p = reorder_without_changing_reuse(nest, arch, m, rng)
                    for j in range(len(arch.levels)):
                        k = arch.temporal_slot(j)
                        changed_orders += [d for d in p.orders[j] if p.factors[d][k] > 1] != [
                            d for d in m.orders[j] if m.factors[d][k] > 1]
                    rep = evaluate_mapping(nest, arch, p, check_capacity=False)
                    assert _signature(rep) == _signature(base)
                    assert rep.energy_pj == pytest.approx(base.energy_pj, rel=1e-12)
                    assert rep.latency_cycles == base.latency_cycles
                    assert simulate_mapping(nest, arch, p).as_tuples() == base_sim
    assert changed_orders >= 20


def test_permutation_changing_the_stationary_operand_changes_counts() -> None:
    """Counter-check: swapping the two innermost loops above the PEs changes which operand is reused there."""
    nest = LAYERS["matmul-batch"]()  # B=2, M=4, N=6, K=4; I[B,M,K], W[B,K,N], O[B,M,N]
    arch = ARCHS["glb-pe"]()
    slots = [s.name for s in arch.slots()]

    def mapping(glb_order: tuple[str, ...]) -> Mapping:
        place = {"B": "T2", "M": "T1", "N": "T1", "K": "T0"}
        factors = {d: tuple(nest.sizes[d] if s == place[d] else 1 for s in slots) for d in nest.dims}
        return Mapping(factors, (nest.dims, (*glb_order, "B", "K"), nest.dims))

    results = {}
    for order in (("M", "N"), ("N", "M")):
        m = mapping(order)
        report = evaluate_mapping(nest, arch, m, check_capacity=False)
        sim = simulate_mapping(nest, arch, m)
        assert_same(report, sim)
        results[order] = (report, sim)
    mn, nm = results[("M", "N")], results[("N", "M")]
    # N innermost: the PE keeps its input tile across N (I visits B*M = 8, W visits B*M*N = 48); M innermost: the
    # weights stay (W visits B*N = 12, I visits 48). The PE tiles are I: K = 4, W: K = 4 elements.
    assert mn[1].new_tiles["pe"]["I"] == 8 and mn[1].new_tiles["pe"]["W"] == 48
    assert nm[1].new_tiles["pe"]["I"] == 48 and nm[1].new_tiles["pe"]["W"] == 12
    assert mn[0].accesses["pe"]["I"].writes == 8 * 4 and nm[0].accesses["pe"]["I"].writes == 48 * 4
    assert mn[0].accesses["pe"]["W"].writes == 48 * 4 and nm[0].accesses["pe"]["W"].writes == 12 * 4
    assert mn[0].accesses["pe"]["O"] == nm[0].accesses["pe"]["O"]  # O depends on both loops
    assert mn[0].energy_pj != nm[0].energy_pj


def test_loop_orders_collapse_into_few_costs() -> None:
    """Fig. 5.7's observation on a small case: with the same order at every level, the 4! orders of a batched matmul
    give far fewer distinct costs than orders, and orders giving every operand the same innermost run of irrelevant
    loops at every level have the same cost."""
    nest = LAYERS["matmul-batch"]()
    arch = ARCHS["three-level"]()
    slots = [s.name for s in arch.slots()]
    place = {"B": {"T2": 2}, "M": {"T3": 2, "T1": 2}, "N": {"T3": 3, "T1": 2}, "K": {"T2": 2, "T1": 2}}
    factors = {d: tuple(place[d].get(s, 1) for s in slots) for d in nest.dims}
    by_runs: dict[tuple, set[str]] = {}
    for order in itertools.permutations(nest.dims):
        m = Mapping(factors, tuple(order for _ in arch.levels))
        report = evaluate_mapping(nest, arch, m, check_capacity=False)
        sim = simulate_mapping(nest, arch, m)
        assert_same(report, sim)
        runs = tuple(
            tuple(sorted(_reuse_runs(nest, [d for d in order if factors[d][arch.temporal_slot(j)] > 1]).items()))
            for j in range(len(arch.levels)))
        by_runs.setdefault(runs, set()).add(repr((sim.as_tuples(), report.energy_pj)))
    distinct = set().union(*by_runs.values())
    assert all(len(costs) == 1 for costs in by_runs.values())
    assert len(distinct) == 8 < math.factorial(len(nest.dims))


# ---------------------------------------------------------------------------------------------------- other checks
def test_sliding_window_coincidence_is_refetched_by_the_cost_model() -> None:
    """Rows 2p + 2r (stride 2, dilation 2) with r outer and p inner above a 1-row PE tile: (r, p) = (0, 1) and (1, 0)
    need the same row. The cost model (and the simulator's default tile identity) refetches it — sliding-window reuse
    between consecutive tiles is documented as not modelled; naming tiles by their elements reuses it."""
    nest = conv_nest("coincide", stride=2, dilation=2, P=2, R=3)
    arch = arch_1d()
    m = mapping_1d(nest, arch, {"P": {"T1": 2}, "R": {"T1": 3}}, {"glb": ("R", "P")})
    report = evaluate_mapping(nest, arch, m, check_capacity=False)
    by_loops = simulate_mapping(nest, arch, m)
    assert_same(report, by_loops)
    by_elements = simulate_mapping(nest, arch, m, tile_identity="elements")
    # rows needed in order: 0, 2, 2, 4, 4, 6
    assert by_loops.new_tiles["pe"]["I"] == 6 and by_elements.new_tiles["pe"]["I"] == 4
    assert report.accesses["glb"]["I"].reads == 6 and by_elements.accesses["glb"]["I"].reads == 4
    assert by_elements.accesses["pe"]["W"] == by_loops.accesses["pe"]["W"]
    assert by_elements.accesses["pe"]["O"] == by_loops.accesses["pe"]["O"]


def test_padded_layer_counts_wasted_work() -> None:
    """A padded dimension (Q = 5 rounded up to 6) is simulated over its padded bounds, as the cost model counts it."""
    b = NetworkBuilder("pad", dtype_bytes=1)
    x = b.input("x", (1, 2, 7, 7))
    w = b.build([b.conv2d(x, 2, 3)])
    nest = loopnest_from_operator(w, w.operators[0], padding={"Q": 3})
    assert nest.sizes["Q"] == 6 and nest.real_sizes["Q"] == 5
    arch = ARCHS["glb-pe-mac"]()
    rng = random.Random("pad")
    for _ in range(5):
        m = random_mapping(nest, arch, rng)
        assert_same(evaluate_mapping(nest, arch, m, check_capacity=False), simulate_mapping(nest, arch, m))


def test_simulator_speed_on_a_1e5_mac_layer() -> None:
    nest = layer_from(lambda b, x: b.conv2d(x, 16, 3, padding=1), (1, 8, 8, 8))
    assert nest.macs == 73728
    arch = ARCHS["three-level"]()
    rng = random.Random("speed")
    for _ in range(2):
        m = random_mapping(nest, arch, rng)
        start = time.perf_counter()
        sim = simulate_mapping(nest, arch, m)
        assert time.perf_counter() - start < 3.0
        assert_same(evaluate_mapping(nest, arch, m, check_capacity=False), sim)


def test_invalid_mapping_is_rejected() -> None:
    nest = conv_nest("bad", Q=9, S=9)
    arch = arch_1d()
    m = mapping_1d(nest, arch, {"Q": {"T1": 9}, "S": {"T0": 9}}, {})
    broken = Mapping({**m.factors, "Q": (1, 3, 1, 1)}, m.orders)
    with pytest.raises(ValueError, match="invalid mapping"):
        simulate_mapping(nest, arch, broken)
    with pytest.raises(ValueError, match="tile identity"):
        simulate_mapping(nest, arch, m, tile_identity="bytes")  # type: ignore[arg-type]


def test_linear_weight_is_shared_across_the_batch() -> None:
    """A linear layer on a (B, M, K) input has one (K, N) weight: B is irrelevant to it (its whole footprint is
    K x N, not B x K x N), and the cost model still matches the simulation of random mappings on every
    architecture."""
    nest = layer_from(lambda b, x: b.linear(x, 6), (3, 4, 4))
    assert nest.sizes == {"B": 3, "M": 4, "N": 6, "K": 4}
    assert "B" not in nest.operand("W").dims and "B" in nest.operand("I").dims and "B" in nest.operand("O").dims
    assert nest.footprint("W", nest.sizes) == 4 * 6
    for arch_name in sorted(ARCHS):
        arch = ARCHS[arch_name]()
        rng = random.Random(f"linear/{arch_name}")
        for i in range(6):
            m = random_mapping(nest, arch, rng)
            report = evaluate_mapping(nest, arch, m, check_capacity=False)
            assert_same(report, simulate_mapping(nest, arch, m), f"{arch_name} mapping {i}: {m}")
    batched = layer_from(lambda b, x: b.matmul(x, b.input("w", (3, 4, 6))), (3, 4, 4))
    assert "B" in batched.operand("W").dims and batched.footprint("W", batched.sizes) == 3 * 4 * 6
