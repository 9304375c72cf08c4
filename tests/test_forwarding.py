"""PE-to-PE links (seed 004 §3.1, PolyAcc's interconnect relations) in the mapping cost model and the loop-nest
simulator: straight and diagonal links forwarding inputs, weights and partial sums between neighbouring PEs, the
hardware vocabulary and its instance-file form."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mapping_cases import (
    ARCHS,
    LAYERS,
    accelerator_small,
    dram_level,
    make_store,
    matmul_layer,
    pointwise_workload_doc,
    random_mapping,
    small_hardware_doc,
)

from dlaopt.errors import InputError
from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, ArchLink, Level, MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.constraints import with_bypass, with_shape
from dlaopt.formulations.mapping.cost import CostReport, axis_digits, evaluate_mapping, link_matches
from dlaopt.formulations.mapping.loopnest import Coordinate, LoopNest, Operand
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.formulations.mapping.simulate import simulate_mapping
from dlaopt.hardware.model import Link, PEArray
from dlaopt.io.instance import instance_from_dict


# ---------------------------------------------------------------------------------------------------- helpers
def fanout_pairs(arch: MappingArch) -> list[tuple[int, int]]:
    slots = arch.slots()
    sp = [k for k, s in enumerate(slots) if s.kind == SPATIAL]
    return [(a, b) for a in sp for b in sp if a != b and (slots[a].level, slots[a].mac) == (slots[b].level,
                                                                                               slots[b].mac)]


def random_links(arch: MappingArch, rng: random.Random) -> tuple[ArchLink, ...]:
    """For each operand: no link, a straight link on a random spatial slot, or a diagonal one over two slots of one
    fanout; random energies and bandwidths, in random order (the order decides the placement of shared slots)."""
    sp = [k for k, s in enumerate(arch.slots()) if s.kind == SPATIAL]
    pairs = fanout_pairs(arch)
    links = []
    for t in "IWO":
        r = rng.random()
        energy, bw = rng.choice([0.0, 0.25, 3.0]), rng.choice([1.0, 2.0, float("inf")])
        if r < 0.55:
            links.append(ArchLink(t, (rng.choice(sp),), energy, bw))
        elif r < 0.9 and pairs:
            links.append(ArchLink(t, rng.choice(pairs), energy, bw))
    rng.shuffle(links)
    return tuple(links)


def check(nest: LoopNest, arch: MappingArch, m: Mapping, context: str = "") -> CostReport:
    """Cost model == simulator: every count incl. link counts, MACs, steps, and each link latency term (the busiest
    single link's bytes over its bandwidth)."""
    report = evaluate_mapping(nest, arch, m, check_capacity=False)
    assert report.valid, report.violations
    sim = simulate_mapping(nest, arch, m)
    expected = {lv: {t: (a.reads, a.writes, a.network, a.link) for t, a in d.items()}
                for lv, d in report.accesses.items()}
    assert sim.as_tuples(links=True) == expected, context
    assert sim.macs == report.macs == sim.distinct_iterations, context
    assert sim.temporal_steps == report.compute_cycles, context
    link_cycles = {k: v for k, v in report.memory_cycles.items() if k.startswith("link:")}
    assert set(link_cycles) == {f"link:{t}" for t in sim.link_load}, context
    for t, load in sim.link_load.items():
        link = arch.link_of(t)
        assert link is not None
        assert link_cycles[f"link:{t}"] == load * nest.operand(t).word_bytes / link.bandwidth_bytes_per_cycle, context
    return report


# ---------------------------------------------------------------------------------------------------- cost == sim
@settings(max_examples=120)
@given(arch_name=st.sampled_from(sorted(ARCHS)), layer_name=st.sampled_from(sorted(LAYERS)),
       rnd=st.randoms(use_true_random=False))
def test_links_cost_model_matches_simulation(arch_name: str, layer_name: str, rnd: random.Random) -> None:
    base, nest = ARCHS[arch_name](), LAYERS[layer_name]()
    arch = dataclasses.replace(base, links=random_links(base, rnd))
    m = random_mapping(nest, arch, rnd)
    check(nest, arch, m, f"{arch_name}/{layer_name} links {arch.links}: {m}")


def test_links_sweep_exercises_forwarding() -> None:
    """A deterministic sweep over every architecture and layer: cost == simulator, and forwarding actually happens
    for every operand, straight and diagonal, at levels and at the MAC units."""
    rng = random.Random("links")
    seen: set[tuple[str, bool, bool]] = set()  # (operand, diagonal, counted at the MAC units)
    for arch_name in sorted(ARCHS):
        base = ARCHS[arch_name]()
        for layer_name in sorted(LAYERS):
            nest = LAYERS[layer_name]()
            for _ in range(5):
                arch = dataclasses.replace(base, links=random_links(base, rng))
                m = random_mapping(nest, arch, rng)
                report = check(nest, arch, m, f"{arch_name}/{layer_name}")
                for link in arch.links:
                    t = link.operand
                    if any(d[t].link for d in report.accesses.values() if t in d):
                        below = [j for j in arch.keeping_levels(t) if arch.temporal_slot(j) < link.slots[0]]
                        seen.add((t, link.diagonal, not below))
    assert seen >= {(t, d, False) for t in "IWO" for d in (False, True)} | {("I", False, True), ("O", False, True),
                                                                           ("I", True, True)}


def test_no_links_leaves_every_count_unchanged() -> None:
    arch = ARCHS["glb-pe-mac"]()
    nest = LAYERS["grouped"]()
    rng = random.Random(3)
    for _ in range(5):
        m = random_mapping(nest, arch, rng)
        report = evaluate_mapping(nest, arch, m)
        assert all(a.link == 0 for d in report.accesses.values() for a in d.values())
        assert not any(k.startswith("link:") or k.endswith("/link") for k in
                       [*report.memory_cycles, *report.energy_breakdown])


@settings(max_examples=60)
@given(arch_name=st.sampled_from(["glb-pe", "glb-pe-mac", "tpu-like", "three-level", "acc-eyeriss"]),
       layer_name=st.sampled_from(sorted(LAYERS)), rnd=st.randoms(use_true_random=False))
def test_straight_link_runs_of_irrelevant_dimensions(arch_name: str, layer_name: str, rnd: random.Random) -> None:
    """The closed form the MILP uses: a straight link on a slot placed by its own operand, with no coordinate of the
    operand having two dimensions on the slot, forwards to all PEs of a run of ``u = prod(irrelevant factors)`` but
    the first: matched / positions = 1 - 1/u."""
    base, nest = ARCHS[arch_name](), LAYERS[layer_name]()
    sp = [k for k, s in enumerate(base.slots()) if s.kind == SPATIAL]
    t, k = rnd.choice("IWO"), rnd.choice(sp)
    arch = dataclasses.replace(base, links=(ArchLink(t, (k,)),))
    m = random_mapping(nest, arch, rnd)
    on_slot = {d for d in nest.dims if m.factors[d][k] > 1}
    if any(len(set(c.dims) & on_slot) > 1 for c in nest.operand(t).coords):
        return
    u = 1
    for d in on_slot - nest.operand(t).dims:
        u *= m.factors[d][k]
    matched, positions = link_matches(nest, arch, m, arch.links[0])
    assert matched * u == positions * (u - 1)
    assert axis_digits(nest, arch, m, k)[:len(on_slot - nest.operand(t).dims)] == sorted(
        on_slot - nest.operand(t).dims, key=nest.dims.index)


# ---------------------------------------------------------------------------------------------------- by hand
def arch_row(pes: int, links: tuple[ArchLink, ...] = (), axes: tuple[tuple[str, int], ...] | None = None
             ) -> MappingArch:
    """DRAM -> shared buffer -> a row (or a grid, ``axes``) of PEs with a local buffer each; network energy 2 pJ/B
    into the PEs."""
    fanout = axes or (("x", pes),)
    n = 1
    for _, s in fanout:
        n *= s
    return MappingArch("row", (
        Level("pe", (make_store("pe", "IWO", 1024, 1.0),), n, 2.0),
        Level("glb", (make_store("glb", "IWO", 1 << 20, 6.0),), 1, 0.0, fanout),
        dram_level(),
    ), (), 1.0, 1e9, links)


def place(nest: LoopNest, arch: MappingArch, placement: dict[str, dict[str, int]]) -> Mapping:
    slots = arch.slots()
    factors = {d: tuple(placement.get(d, {}).get(s.name, 1) for s in slots) for d in nest.dims}
    m = Mapping(factors, tuple(nest.dims for _ in arch.levels))
    assert not mapping_errors(nest, arch, m), mapping_errors(nest, arch, m)
    return m


def matmul(m: int, n: int, k: int) -> LoopNest:
    def c(*dims: str) -> tuple[Coordinate, ...]:
        return tuple(Coordinate(((d, 1),)) for d in dims)

    return LoopNest("mm", "matmul", ("B", "M", "N", "K"), {"B": 1, "M": m, "N": n, "K": k},
                    (Operand("I", "a", c("B", "M", "K"), 1), Operand("W", "b", c("B", "K", "N"), 1),
                     Operand("O", "y", c("B", "M", "N"), 1)))


def test_straight_input_link_by_hand() -> None:
    """A 1x4 row of PEs, N (irrelevant to the input I[M, K]) unrolled 4 on it, M = 2 and K = 3 in each PE: every PE
    needs the same 6 inputs once. Without a link the buffer multicasts them to the 4 PEs: fills = network = 24. With
    a link on the row the first PE gets them from the network (6 = fills / 4) and passes them on: link = 18
    (3/4 of the fills); the buffer still reads 6. Energy: 18 B x 0.5 pJ over the link instead of 18 B x 2 pJ over
    the network; the busiest link carries 6 B: 3 cycles at 2 B/cycle."""
    nest = matmul(2, 4, 3)
    plain, linked = arch_row(4), arch_row(4, (ArchLink("I", (1,), 0.5, 2.0),))
    m = place(nest, plain, {"N": {"S1:x": 4}, "M": {"T0": 2}, "K": {"T0": 3}})
    before, after = check(nest, plain, m), check(nest, linked, m)
    assert (before.accesses["pe"]["I"].writes, before.accesses["pe"]["I"].network) == (24, 24)
    a = after.accesses["pe"]["I"]
    assert (a.writes, a.network, a.link) == (24, 6, 18)
    assert after.accesses["glb"]["I"].reads == before.accesses["glb"]["I"].reads == 6
    assert after.energy_breakdown["pe/link"] == 18 * 0.5
    assert after.energy_breakdown["pe/network"] == before.energy_breakdown["pe/network"] - 18 * 2.0
    assert after.energy_pj == pytest.approx(before.energy_pj - 18 * 2.0 + 18 * 0.5)
    assert after.memory_cycles["link:I"] == 3.0
    # W[K, N] differs from PE to PE: a W link forwards nothing
    w_linked = arch_row(4, (ArchLink("W", (1,), 0.5, 2.0),))
    assert check(nest, w_linked, m).accesses["pe"]["W"].link == 0


def test_straight_partial_sum_link_by_hand() -> None:
    """K (irrelevant to O) unrolled 4 on the row, M = 2, N = 3 in each PE: each PE drains 6 partial sums. Without a
    link the network reduces the 24 drained values into 6 buffer writes. With an O link each PE but the last adds
    its partial sums into its successor's: link = 18, network = 6; the buffer still writes 6 (and reads them once, to
    drain them to DRAM: nothing is reloaded)."""
    nest = matmul(2, 3, 4)
    linked = arch_row(4, (ArchLink("O", (1,), 0.5),))
    m = place(nest, linked, {"K": {"S1:x": 4}, "M": {"T0": 2}, "N": {"T0": 3}})
    report = check(nest, linked, m)
    a = report.accesses["pe"]["O"]
    assert (a.reads, a.network, a.link) == (24, 6, 18)
    assert (report.accesses["glb"]["O"].writes, report.accesses["glb"]["O"].reads) == (6, 6)
    assert report.accesses["dram"]["O"].writes == 6
    assert report.memory_cycles["link:O"] == 0.0  # unlimited bandwidth


def conv(p: int, r: int, q: int, s: int, stride: int = 1, dilation: int = 1) -> LoopNest:
    dims = ("N", "G", "K", "C", "P", "Q", "R", "S")
    sizes = {d: 1 for d in dims} | {"P": p, "R": r, "Q": q, "S": s}

    def c(*terms: tuple[str, int]) -> Coordinate:
        return Coordinate(terms)

    i = Operand("I", "x", (c(("N", 1)), c(("G", 1)), c(("C", 1)), c(("P", stride), ("R", dilation)),
                           c(("Q", stride), ("S", dilation))), 1)
    w = Operand("W", "w", (c(("G", 1)), c(("K", 1)), c(("C", 1)), c(("R", 1)), c(("S", 1))), 1)
    o = Operand("O", "y", (c(("N", 1)), c(("G", 1)), c(("K", 1)), c(("P", 1)), c(("Q", 1))), 1)
    return LoopNest("conv", "conv2d", dims, sizes, (i, w, o))


@pytest.mark.parametrize(("stride", "dilation", "network_rows"), [(1, 1, 3 + 4 - 1), (2, 1, 12), (2, 2, 3 + 4 - 1)])
def test_eyeriss_diagonal_input_link_by_hand(stride: int, dilation: int, network_rows: int) -> None:
    """Eyeriss row stationary on a 3x4 array: filter rows R = 3 on the rows, output rows P = 4 on the columns, a
    Q = 2 by S = 2 row convolution in each PE, whose input tile is part of one input row. PE (r, p) needs input
    row stride*p + dilation*r; its diagonal predecessor (r-1, p+1) holds row stride*(p+1) + dilation*(r-1), the same
    iff stride == dilation. Stride 1: only the R + P - 1 = 6 PEs of the first row and the last column get their row
    from the network, the other 6 over the diagonal. Stride 2, dilation 1: no forwarding (rows 2p + r coincide for
    (r, p) = (2, 0) and (0, 1), which are not diagonal neighbours). The buffer reads every distinct row once."""
    nest = conv(4, 3, 2, 2, stride, dilation)
    arch = arch_row(0, (ArchLink("I", (1, 2), 0.1),), axes=(("rows", 3), ("cols", 4)))
    m = place(nest, arch, {"R": {"S1:rows": 3}, "P": {"S1:cols": 4}, "Q": {"T0": 2}, "S": {"T0": 2}})
    report = check(nest, arch, m)
    width = len({stride * q + dilation * s for q in range(2) for s in range(2)})  # input columns of a PE's row
    a = report.accesses["pe"]["I"]
    assert a.writes == 12 * width
    assert (a.network, a.link) == (network_rows * width, (12 - network_rows) * width)
    assert link_matches(nest, arch, m, arch.links[0]) == (12 - network_rows, 12)
    distinct_rows = len({stride * p + dilation * r for p in range(4) for r in range(3)})
    assert report.accesses["glb"]["I"].reads == distinct_rows * width


def test_partial_sums_down_the_columns_at_the_mac_units() -> None:
    """A TPU-like array without a per-PE store for O (the accumulators feed the MAC units directly), K = 2 unrolled
    on the rows: every step each MAC unit writes one partial sum; with an O link on the rows the upper unit adds its
    sum into the lower one (link = half the per-unit writes, counted at the accumulators)."""
    base = ARCHS["tpu-like"]()
    slots = base.slots()
    rows = next(k for k, s in enumerate(slots) if s.kind == SPATIAL and s.axis == "rows")
    arch = dataclasses.replace(base, links=(ArchLink("O", (rows,), 0.2, 1.0),))
    nest = matmul_layer()  # B=2, M=4, N=6, K=4
    m = place(nest, arch, {"K": {"S1:rows": 2, "T0": 2}, "N": {"S1:cols": 3, "T1": 2}, "M": {"T1": 4},
                           "B": {"T2": 2}})
    report = check(nest, arch, m)
    steps = report.compute_cycles
    assert steps == 2 * 2 * 4 * 2
    assert report.accesses["ub+acc+wfifo"]["O"].link == steps * 6 // 2
    assert report.memory_cycles["link:O"] == steps * 2 / 1.0  # one 2-byte partial sum per step over each link


# ---------------------------------------------------------------------------------------------------- hardware
def test_arch_from_accelerator_places_links_on_the_pe_axes() -> None:
    acc = accelerator_small()  # 2x3 PEs, a register file per PE, 2 MACs per PE
    linked = dataclasses.replace(acc, pe_array=dataclasses.replace(
        acc.pe_array, links=(Link("O", ("cols",), 0.1, 4.0), Link("I", ("rows", "cols"), 0.2))))
    arch = arch_from_accelerator(linked)
    slots = arch.slots()
    assert [(lk.operand, [slots[k].axis for k in lk.slots]) for lk in arch.links] == [
        ("O", ["cols"]), ("I", ["rows", "cols"])]
    assert all(not slots[k].mac and slots[k].kind == SPATIAL for lk in arch.links for k in lk.slots)
    assert arch.links[0].energy_pj_per_byte == 0.1 and arch.links[0].bandwidth_bytes_per_cycle == 4.0
    # no per-PE level: the PE axes are the MAC fanout
    flat = dataclasses.replace(linked, memories=linked.memories[:2])
    flat_arch = arch_from_accelerator(flat)
    fslots = flat_arch.slots()
    assert [[(fslots[k].axis, fslots[k].mac) for k in lk.slots] for lk in flat_arch.links] == [
        [("cols", True)], [("rows", True), ("cols", True)]]
    # carried over by the mapping constraints' architecture rewrites
    pe_axes = [k for k, s in enumerate(slots) if s.kind == SPATIAL and not s.mac]
    assert with_shape(arch, pe_axes, (1, 6)).links == arch.links
    assert with_bypass(arch, {0: frozenset("W")}).links == arch.links
    tpu = arch_from_accelerator(dataclasses.replace(accelerator_small(tpu=True), pe_array=PEArray(
        (("rows", 2), ("cols", 2)), links=(Link("W", ("rows",)),))))
    assert [tpu.slots()[k].axis for k in tpu.links[0].slots] == ["rows"]


def test_link_validation() -> None:
    with pytest.raises(ValueError, match="unknown PE-array axis"):
        PEArray((("rows", 2),), links=(Link("I", ("cols",)),))
    with pytest.raises(ValueError, match="two links"):
        PEArray((("rows", 2), ("cols", 2)), links=(Link("I", ("cols",)), Link("I", ("rows",))))
    with pytest.raises(ValueError, match="two distinct"):
        Link("I", ("rows", "rows"))
    with pytest.raises(ValueError, match="operand"):
        Link("X", ("rows",))
    with pytest.raises(ValueError, match="energy"):
        Link("I", ("rows",), -1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        Link("I", ("rows",), 0.0, 0.0)
    arch = ARCHS["glb-pe"]()
    with pytest.raises(ValueError, match="not a spatial slot"):
        dataclasses.replace(arch, links=(ArchLink("I", (0,)),))
    temporal = [k for k, s in enumerate(arch.slots()) if s.kind == TEMPORAL]
    assert temporal
    three = ARCHS["three-level"]()
    cross = [k for k, s in enumerate(three.slots()) if s.kind == SPATIAL and not s.mac]
    with pytest.raises(ValueError, match="one fanout"):
        dataclasses.replace(three, links=(ArchLink("I", tuple(cross[:2])),))


# ---------------------------------------------------------------------------------------------------- instance files
def instance_doc(links: list[dict[str, Any]]) -> dict[str, Any]:
    hw = small_hardware_doc()
    hw["pe_array"]["links"] = links
    return {"problem": "mapping", "name": "links", "workload": pointwise_workload_doc("w", 2, [("c1", "x", "y", 2, 2)]),
            "hardware": hw, "objective": "energy"}


def test_links_from_an_instance_file() -> None:
    inst = instance_from_dict(instance_doc([
        {"operand": "O", "axes": ["rows"], "energy_pj_per_byte": 0.1, "bandwidth_bytes_per_cycle": 2},
        {"operand": "I", "axes": ["rows", "cols"]}]))
    assert inst.accelerator.pe_array.links == (Link("O", ("rows",), 0.1, 2.0), Link("I", ("rows", "cols")))
    assert [lk.operand for lk in arch_from_accelerator(inst.accelerator).links] == ["O", "I"]


@pytest.mark.parametrize(("links", "where", "needle"), [
    ([{"operand": "I", "axes": ["depth"]}], "hardware.pe_array.links[0].axes[0]", "unknown PE-array axis"),
    ([{"operand": "X", "axes": ["rows"]}], "hardware.pe_array.links[0].operand", ""),
    ([{"operand": "I", "axes": ["rows"]}, {"operand": "I", "axes": ["cols"]}], "hardware.pe_array.links[1].operand",
     "already has a link"),
    ([{"operand": "W", "axes": ["rows"], "energy_pj_per_byte": -1}], "hardware.pe_array.links[0].energy_pj_per_byte",
     ""),
    ([{"operand": "W", "axes": ["rows"], "bandwidth_bytes_per_cycle": 0}],
     "hardware.pe_array.links[0].bandwidth_bytes_per_cycle", ""),
    ([{"operand": "W", "axes": ["rows", "rows"]}], "hardware.pe_array.links[0].axes", "two distinct"),
    ([{"operand": "W", "axes": []}], "hardware.pe_array.links[0].axes", ""),
    ([{"operand": "W"}], "hardware.pe_array.links[0]", ""),
])
def test_bad_links_are_located_input_errors(links: list[dict[str, Any]], where: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        instance_from_dict(instance_doc(links))
    assert f"key '{where}" in info.value.render(), info.value.render()
    assert needle in info.value.render()


# ---------------------------------------------------------------------------------------------------- presets
def test_eyeriss_polyacc_preset() -> None:
    """Seed 004 §4.2's interconnect on the Eyeriss array: psums along the rows axis (down the columns), weights along
    the columns axis, inputs diagonally; link energy = half the NoC energy per byte by default."""
    from dlaopt.hardware.presets import PRESETS

    acc = PRESETS.create("eyeriss-polyacc")
    assert acc.pe_array.axes == PRESETS.create("eyeriss").pe_array.axes == (("rows", 12), ("cols", 14))
    assert [(lk.operand, lk.axes) for lk in acc.pe_array.links] == [("O", ("rows",)), ("W", ("cols",)),
                                                                    ("I", ("rows", "cols"))]
    noc = max(m.network_energy_pj_per_byte for m in acc.memories)
    assert all(lk.energy_pj_per_byte == noc / 2 for lk in acc.pe_array.links)
    assert PRESETS.create("eyeriss-polyacc", {"link_energy_fraction": 1.0}).pe_array.links[0].energy_pj_per_byte == noc
    # a small copy: cost == simulator on random mappings, and row stationary forwards inputs diagonally
    small = arch_from_accelerator(PRESETS.create("eyeriss-polyacc", {"rows": 3, "cols": 4}))
    rng = random.Random("polyacc")
    for layer_name in sorted(LAYERS):
        nest = LAYERS[layer_name]()
        for _ in range(3):
            check(nest, small, random_mapping(nest, small, rng), layer_name)
    nest = conv(4, 3, 2, 2)
    rs = place(nest, small, {"R": {"S1:rows": 3}, "P": {"S1:cols": 4}, "Q": {"T0": 2}, "S": {"T0": 2}})
    report = check(nest, small, rs)
    rf = report.accesses["rf"]
    assert (rf["I"].network, rf["I"].link) == (6 * 3, 6 * 3)  # R + P - 1 = 6 of the 12 PEs from the network
    assert rf["O"].link == 2 * 4 * 2  # each column adds 2 x 1 outputs of its upper 2 PEs into the PE below
    assert rf["W"].link == 3 * 3 * 2  # every filter row (2 weights) passes along the 3 links of its row


def test_systolic_forwarding_preset() -> None:
    from dlaopt.hardware.presets import PRESETS

    acc = PRESETS.create("systolic-forwarding")
    assert [(lk.operand, lk.axes) for lk in acc.pe_array.links] == [("O", ("rows",)), ("W", ("rows",))]
    assert PRESETS.create("systolic-forwarding", {"links": "none"}).pe_array.links == ()
    assert [lk.operand for lk in PRESETS.create("systolic-forwarding", {"links": "I+W+O"}).pe_array.links] == [
        "O", "W", "I"]
    with pytest.raises(InputError, match="links"):
        PRESETS.create("systolic-forwarding", {"links": "W+X"})
    small = arch_from_accelerator(PRESETS.create("systolic-forwarding", {"array": 4, "links": "I+W+O"}))
    rng = random.Random("systolic")
    forwarded = {"I": 0, "W": 0, "O": 0}
    for layer_name in sorted(LAYERS):
        nest = LAYERS[layer_name]()
        for _ in range(4):
            report = check(nest, small, random_mapping(nest, small, rng), layer_name)
            for t in forwarded:
                forwarded[t] += sum(d[t].link for d in report.accesses.values() if t in d)
    assert all(forwarded.values()), forwarded
