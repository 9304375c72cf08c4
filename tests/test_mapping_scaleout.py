"""Scale-out accelerators (seed 001 Table 4.3's S3: several identical PE arrays side by side, a third level of
parallelism across them) through the whole mapping stack, with GAMMA's three systems S1-S3 (§4.4.2-4.4.4):

* the shared vocabulary (``PEArray.arrays``) and its mapping view: the axis ``array`` into a per-array level, or
  after the PE axes into the per-PE level, or in the MAC fanout; PE-to-PE links on the PE axes only; ``arrays=1``
  the single-array view every preset had;
* the cost model against the loop-nest simulator on random scale-out mappings;
* the MILP against brute force on tiny S1, S2 and S3 architectures, for every objective;
* every heuristic on the S3 presets, and the fixed dataflows' reading of the array axis;
* the instance loader's ``pe_array.arrays``.
"""

from __future__ import annotations

import copy
import json
import math
import random
from typing import Any

import pytest
import yaml
from mapping_cases import LAYERS as SIM_LAYERS
from mapping_cases import assert_same, layer_from, pointwise_workload_doc, random_mapping, small_hardware_doc
from test_mapping_exact import LAYERS as EXACT_LAYERS
from test_mapping_exact import brute_force, tight

from dlaopt.errors import InputError
from dlaopt.formulations.mapping import heuristics as H
from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import OBJECTIVES, evaluate_mapping
from dlaopt.formulations.mapping.exact import solve_layer
from dlaopt.formulations.mapping.loopnest import LoopNest, loopnest_from_operator
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.formulations.mapping.simulate import simulate_mapping
from dlaopt.hardware.model import ARRAY_AXIS, DMA, Accelerator, Link, Memory, MemoryKind, PEArray
from dlaopt.hardware.presets import PRESETS
from dlaopt.io.instance import instance_from_dict, load_instance
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.zoo import ZOO


# ---------------------------------------------------------------------------------------------------- hardware
def scaleout(kind: str, *, axes: tuple[tuple[str, int], ...] = (("rows", 2), ("cols", 2)), arrays: int = 2,
             alus: int = 1, links: tuple[Link, ...] = (), rf_bytes: int = 64, abuf_bytes: int = 512,
             glb_bytes: int = 4096) -> Accelerator:
    """DRAM -> a shared global buffer -> [``kind`` "per-array": a buffer per array keeping I and O, W bypassing it]
    -> [a register file per PE, unless ``kind`` is "no-rf"] -> ``alus`` MAC units per PE, on ``arrays`` arrays of
    ``axes``. ``kind`` "shared": no per-array buffer (GAMMA's platforms); "no-rf": a per-array buffer and no per-PE
    one."""
    pes = math.prod(n for _, n in axes)
    mems = [Memory("dram", MemoryKind.DRAM, None, read_energy_pj_per_byte=100.0, write_energy_pj_per_byte=100.0),
            Memory("glb", MemoryKind.SCRATCHPAD, glb_bytes, read_energy_pj_per_byte=6.0, write_energy_pj_per_byte=6.0,
                   bandwidth_bytes_per_cycle=32.0)]
    if kind in ("per-array", "no-rf"):
        mems.append(Memory("abuf", MemoryKind.BUFFER, abuf_bytes, instances=arrays, operands=frozenset("IO"),
                           read_energy_pj_per_byte=3.0, write_energy_pj_per_byte=3.0, network_energy_pj_per_byte=2.0,
                           bandwidth_bytes_per_cycle=16.0))
    if kind != "no-rf":
        mems.append(Memory("rf", MemoryKind.REGISTER, rf_bytes, instances=arrays * pes, read_energy_pj_per_byte=1.0,
                           write_energy_pj_per_byte=1.0, network_energy_pj_per_byte=1.0,
                           bandwidth_bytes_per_cycle=4.0))
    return Accelerator(f"scaleout-{kind}", PEArray(axes, macs_per_pe_per_cycle=alus, links=links, arrays=arrays),
                       tuple(mems), DMA(8.0), mac_energy_pj=1.0)


def spatial(arch: MappingArch) -> list[tuple[str, int, int, bool]]:
    """(axis, size, level above, MAC fanout) of every spatial slot, innermost first."""
    return [(s.axis, s.size, s.level, s.mac) for s in arch.slots() if s.kind == SPATIAL]


# ---------------------------------------------------------------------------------------------------- vocabulary
def test_pe_counts_are_over_all_arrays() -> None:
    pe = PEArray((("pes", 42),), macs_per_pe_per_cycle=2, arrays=4)
    assert (pe.pes_per_array, pe.num_pes, pe.peak_macs_per_cycle, pe.lanes) == (42, 168, 336, 168)
    one = PEArray((("rows", 12), ("cols", 14)))
    assert (one.arrays, one.pes_per_array, one.num_pes) == (1, 168, 168)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "2"])
def test_arrays_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(ValueError, match="arrays"):
        PEArray((("rows", 2),), arrays=bad)


def test_the_array_axis_name_is_reserved() -> None:
    with pytest.raises(ValueError, match="'array'"):
        PEArray((("array", 2), ("cols", 2)))


# ---------------------------------------------------------------------------------------------------- mapping view
def test_shared_buffer_puts_the_array_axis_after_the_pe_axes() -> None:
    arch = arch_from_accelerator(scaleout("shared", alus=2))
    assert [(lv.name, lv.instances, lv.fanout) for lv in arch.levels] == [
        ("rf", 8, ()), ("glb", 1, (("rows", 2), ("cols", 2), (ARRAY_AXIS, 2))), ("dram", 1, ())]
    assert arch.mac_fanout == (("mac", 2),)
    assert arch.num_macs == 2 * 2 * 2 * 2


def test_per_array_buffer_takes_the_array_fanout() -> None:
    arch = arch_from_accelerator(scaleout("per-array"))
    assert [(lv.name, lv.instances, lv.fanout) for lv in arch.levels] == [
        ("rf", 8, ()), ("abuf", 2, (("rows", 2), ("cols", 2))), ("glb", 1, ((ARRAY_AXIS, 2),)), ("dram", 1, ())]
    assert arch.mac_fanout == ()


def test_without_a_per_pe_level_the_pe_axes_are_the_mac_fanout() -> None:
    arch = arch_from_accelerator(scaleout("no-rf", alus=3))
    assert [(lv.name, lv.instances, lv.fanout) for lv in arch.levels] == [
        ("abuf", 2, ()), ("glb", 1, ((ARRAY_AXIS, 2),)), ("dram", 1, ())]
    assert arch.mac_fanout == (("rows", 2), ("cols", 2), ("mac", 3))
    # no on-chip level below the global buffer at all: every PE of every array is a MAC unit under it
    assert arch_from_accelerator(no_level_below_glb()).mac_fanout == (("rows", 2), ("cols", 2), (ARRAY_AXIS, 2),
                                                                      ("mac", 2))


@pytest.mark.parametrize("kind", ["shared", "per-array", "no-rf"])
def test_links_stay_on_the_pe_axes(kind: str) -> None:
    links = (Link("O", ("rows",)), Link("I", ("rows", "cols")))
    arch = arch_from_accelerator(scaleout(kind, links=links))
    slots = arch.slots()
    assert [[slots[k].axis for k in lk.slots] for lk in arch.links] == [["rows"], ["rows", "cols"]]
    assert all(slots[k].size == 2 and slots[k].axis != ARRAY_AXIS for lk in arch.links for k in lk.slots)


def test_one_array_is_the_single_array_view_of_every_preset() -> None:
    """``arrays`` = 1: no array axis; the PE axes are, unchanged, the fanout into the level with one instance per PE
    (or the MAC fanout when there is none), and the PE-array counts are the axes' product."""
    for name in PRESETS.names():
        acc = PRESETS.create(name, {})
        arch = arch_from_accelerator(acc)
        pe = acc.pe_array
        assert pe.arrays == 1 and pe.num_pes == math.prod(n for _, n in pe.axes)
        assert all(s.axis != ARRAY_AXIS for s in arch.slots()), name
        per_pe = [j for j, lv in enumerate(arch.levels) if lv.instances == pe.num_pes and lv.instances > 1]
        if per_pe:
            j = per_pe[-1]  # the outermost level with one instance per PE: the PE axes fan out into it
            assert arch.levels[j + 1].fanout == pe.axes, name
        else:
            assert arch.mac_fanout[:len(pe.axes)] == pe.axes, name
        want_mac = (("mac", pe.macs_per_pe_per_cycle),) if pe.macs_per_pe_per_cycle > 1 else ()
        assert arch.mac_fanout[len(arch.mac_fanout) - len(want_mac):] == want_mac, name


# ---------------------------------------------------------------------------------------------------- presets
@pytest.mark.parametrize(("preset", "pes", "local", "shared", "shape", "split"), [
    # seed 001 Table 4.2; S1's shape (Eyeriss', a TPU's) and S3's split (4 x 42, 16 x 4096) are dlaopt's choices
    ("gamma-edge", 168, 512, 108 * 1024, (12, 14), (4, 42)),
    ("gamma-cloud", 65536, 64, 24 * 1024 * 1024, (256, 256), (16, 4096)),
])
def test_gamma_systems_share_the_platform_resources(preset: str, pes: int, local: int, shared: int,
                                                    shape: tuple[int, int], split: tuple[int, int]) -> None:
    views = {s: arch_from_accelerator(PRESETS.create(preset, {"system": s})) for s in ("s1", "s2", "s3")}
    for s, arch in views.items():
        assert arch.num_macs == pes and arch.levels[0].instances == pes, s
        assert [lv.stores[0].capacity_bytes for lv in arch.levels] == [local, shared, None], s
        assert math.prod(n for _, n in arch.levels[1].fanout) == pes, s
    assert views["s1"].levels[1].fanout == (("rows", shape[0]), ("cols", shape[1]))
    assert views["s2"].levels[1].fanout == (("pes", pes),)
    assert views["s3"].levels[1].fanout == (("pes", split[1]), (ARRAY_AXIS, split[0]))
    acc = PRESETS.create(preset, {"system": "s3", "arrays": 2})
    assert (acc.pe_array.arrays, acc.pe_array.pes_per_array) == (2, pes // 2)
    assert "Table 4.2" in acc.description and "S3" in acc.description


@pytest.mark.parametrize("params", [{"system": "s4"}, {"arrays": 4}, {"system": "s2", "arrays": 2},
                                    {"system": "s3", "arrays": 5}, {"system": "s3", "arrays": -4}])
def test_gamma_preset_parameters_are_checked(params: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        PRESETS.create("gamma-edge", params)


# ---------------------------------------------------------------------------------------------------- cost model
SIM_ARCHS = {
    "shared": lambda: scaleout("shared", alus=2),
    "per-array": lambda: scaleout("per-array", axes=(("pes", 3),)),
    "no-rf": lambda: scaleout("no-rf", arrays=3, alus=2),
    "per-array-links": lambda: scaleout("per-array", links=(Link("O", ("rows",)), Link("W", ("cols",)))),
}


@pytest.mark.parametrize("arch_name", sorted(SIM_ARCHS))
@pytest.mark.parametrize("layer_name", ["conv-s2-d2", "conv-holes", "depthwise", "matmul-batch"])
def test_cost_model_equals_simulation_on_scaleout(arch_name: str, layer_name: str) -> None:
    arch, nest = arch_from_accelerator(SIM_ARCHS[arch_name]()), SIM_LAYERS[layer_name]()
    rng = random.Random(f"scaleout/{arch_name}/{layer_name}")
    across = [k for k, s in enumerate(arch.slots()) if s.axis == ARRAY_AXIS]
    spread = 0
    for i in range(6):
        m = random_mapping(nest, arch, rng)
        spread += any(m.factors[d][k] > 1 for d in nest.dims for k in across)
        report = evaluate_mapping(nest, arch, m, check_capacity=False)
        assert_same(report, simulate_mapping(nest, arch, m), f"{arch_name}/{layer_name} mapping {i}: {m}")
    assert spread, "no mapping used the array axis"


# ---------------------------------------------------------------------------------------------------- exact
def systems(kind: str) -> Accelerator:
    """Tiny S1 (a fixed 2x2 array), S2 (one flexible axis of 4 PEs), S3 (2 flexible arrays of 2 PEs sharing the
    global buffer) and S3 with a buffer per array: the same 4 PEs and buffers, as Table 4.3's systems share Table
    4.2's resources."""
    axes = {"s1": (("rows", 2), ("cols", 2)), "s2": (("pes", 4),)}.get(kind, (("pes", 2),))
    return scaleout("per-array" if kind == "s3-per-array" else "shared", axes=axes,
                    arrays=2 if kind.startswith("s3") else 1, rf_bytes=16, abuf_bytes=48, glb_bytes=96)


EXACT_CASES = [("s1", "conv-1x1"), ("s2", "conv-1x1"), ("s3", "conv-1x1"), ("s3", "conv-halo"), ("s3", "matmul"),
               ("s3-per-array", "depthwise")]


@pytest.mark.parametrize(("system", "layer_name"), EXACT_CASES)
def test_exact_equals_exhaustive_on_gamma_systems(system: str, layer_name: str) -> None:
    arch, nest = arch_from_accelerator(systems(system)), EXACT_LAYERS[layer_name]()
    if system == "s3-per-array":
        arch = tight(arch, 12, 96)
    truth, _ = brute_force(nest, arch)
    opts = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True)
    for objective in OBJECTIVES:
        r = solve_layer(nest, arch, objective, options=opts)
        assert r.status == Status.OPTIMAL, (objective, r.message)
        assert r.mapping is not None
        value = evaluate_mapping(nest, arch, r.mapping).objective(objective)
        assert value == pytest.approx(truth[objective], rel=1e-6), objective


def test_flexible_and_scaleout_optima_by_brute_force() -> None:
    """The cost model sees a fanout only through its per-dimension products. S2's one axis of 4 PEs then admits
    every S1 mapping of the 2x2 array (row x column factors within 4) and every S3 mapping of 2 arrays x 2 PEs, so
    its optimum is never worse; S3 sharing the global buffer is S1's 2x2 fanout under other names, so theirs are
    equal. Each optimum by its own enumeration. Three output channels and two output rows (6 MACs): S1 puts at most
    the 2 rows in parallel (3 steps), S2 the 3 channels (2 steps)."""
    nest = layer_from(lambda b, x: b.conv2d(x, 3, 1), (1, 1, 2, 1))
    best = {s: brute_force(nest, arch_from_accelerator(systems(s)))[0] for s in ("s1", "s2", "s3")}
    for objective in OBJECTIVES:
        assert best["s3"][objective] == pytest.approx(best["s1"][objective], rel=1e-12), objective
        assert best["s2"][objective] <= best["s1"][objective] * (1 + 1e-12), objective
    assert best["s2"]["latency"] < best["s1"]["latency"]


# ---------------------------------------------------------------------------------------------------- heuristics
def zoo_layers() -> dict[str, LoopNest]:
    """A strided conv and the classifier of ResNet-18, a depthwise conv of MobileNet-V2."""
    out = {}
    for net, names in (("resnet18", ("conv1", "layer2.0.conv1", "fc")), ("mobilenet-v2", None)):
        wl = ZOO.create(net)
        for op in wl.operators:
            if names is not None and op.name in names:
                out[f"{net}/{op.name}"] = loopnest_from_operator(wl, op)
            elif names is None and op.kind.value == "depthwise_conv2d":
                out[f"{net}/{op.name}"] = loopnest_from_operator(wl, op)
                break
    return out


@pytest.fixture(scope="module")
def zoo() -> dict[str, LoopNest]:
    return zoo_layers()


@pytest.mark.parametrize("preset", ["gamma-edge", "gamma-cloud"])
def test_every_heuristic_is_valid_on_s3(zoo: dict[str, LoopNest], preset: str) -> None:
    arch = arch_from_accelerator(PRESETS.create(preset, {"system": "s3"}))
    for layer, nest in zoo.items():
        for name, heuristic in H.HEURISTICS.items():
            m = heuristic(nest, arch, "latency", seed=5, budget=150, time_limit=None)
            assert m is not None, (layer, name)
            assert mapping_errors(nest, arch, m) == [], (layer, name)
            report = evaluate_mapping(nest, arch, m)
            assert report.valid, (layer, name, report.violations)


def array_factor(nest: LoopNest, arch: MappingArch, m: Mapping) -> dict[str, int]:
    return {d: f for d in nest.dims for k in H.array_fanout(arch) if (f := m.factors[d][k]) > 1}


@pytest.mark.parametrize("system", ["s1", "s2", "s3"])
def test_dataflows_are_structurally_valid_on_every_system(zoo: dict[str, LoopNest], system: str) -> None:
    arch = arch_from_accelerator(PRESETS.create("gamma-edge", {"system": system}))
    slots = arch.slots()
    for layer, nest in zoo.items():
        for name in H.DATAFLOWS:
            m = H.dataflow_mapping(nest, arch, name)
            assert mapping_errors(nest, arch, m) == [], (layer, name)
            for d in nest.dims:  # all of each dimension is mapped, the temporal rest at main memory
                assert math.prod(m.factors[d]) == nest.sizes[d]
            for k, s in enumerate(slots):
                if s.kind == TEMPORAL and s.level < arch.top:
                    assert all(m.factors[d][k] == 1 for d in nest.dims)


def no_level_below_glb() -> Accelerator:
    """The ``shared`` scale-out accelerator without its register files: the array axis ends the MAC fanout."""
    acc = scaleout("shared", alus=2)
    return Accelerator(acc.name, acc.pe_array, acc.memories[:2], acc.dma)


@pytest.mark.parametrize("kind", ["per-array", "no-rf", "no-level"])
def test_dataflows_are_structurally_valid_wherever_the_array_axis_is(kind: str) -> None:
    acc = no_level_below_glb() if kind == "no-level" else scaleout(kind, alus=2)
    arch = arch_from_accelerator(acc)
    (k_array,) = H.array_fanout(arch)
    assert H.pe_array_fanout(arch) == [k for k, s in enumerate(arch.slots()) if s.axis in ("rows", "cols")]
    for layer in ("conv-s2-d2", "depthwise", "matmul-batch"):
        nest = SIM_LAYERS[layer]()
        for name in H.DATAFLOWS:
            m = H.dataflow_mapping(nest, arch, name)
            assert mapping_errors(nest, arch, m) == [], (kind, layer, name)
            assert math.prod(m.factors[d][k_array] for d in nest.dims) <= 2


def test_dataflows_split_output_channels_across_arrays() -> None:
    """On S3 each array runs the template on its own PEs (the same spatial factors there as on an S2 array of that
    size), and the array axis takes what is left of K (a depthwise layer's G, a matmul's N)."""
    b_arch = arch_from_accelerator(PRESETS.create("gamma-edge", {"system": "s3"}))  # 4 arrays of 42 PEs
    small = arch_from_accelerator(scaleout("shared", axes=(("pes", 42),), arrays=1))  # one such array alone
    assert not H.array_fanout(small) and len(H.array_fanout(b_arch)) == 1
    conv = layer_from(lambda b, x: b.conv2d(x, 64, 3, padding=1), (1, 32, 8, 8))  # K 64, C 32
    dw = layer_from(lambda b, x: b.depthwise_conv2d(x, 3, padding=1), (1, 96, 8, 8))  # G 96
    mm = layer_from(lambda b, x: b.linear(x, 40), (6, 24))  # B 1 (or M 6), N 40, K 24
    for nest, dim in ((conv, "K"), (dw, "G"), (mm, "N")):
        for name in ("nvdla", "eyeriss", "shidiannao"):
            m = H.dataflow_mapping(nest, b_arch, name)
            alone = H.dataflow_mapping(nest, small, name)
            (pe_k,) = H.pe_array_fanout(b_arch)
            (pe_alone,) = H.pe_array_fanout(small)
            assert {d: m.factors[d][pe_k] for d in nest.dims} == {d: alone.factors[d][pe_alone] for d in nest.dims}
            left = nest.sizes[dim] // alone.factors[dim][pe_alone]
            want = max(f for f in range(1, 5) if left % f == 0)  # the largest divisor of what is left within 4
            assert array_factor(nest, b_arch, m) == ({dim: want} if want > 1 else {}), (name, dim)


# ---------------------------------------------------------------------------------------------------- loader
def scaleout_doc(arrays: Any) -> dict[str, Any]:
    hw = small_hardware_doc("two-arrays")
    hw["pe_array"]["arrays"] = arrays
    hw["memories"][2]["instances"] = 4 * 2
    return {"problem": "mapping", "workload": pointwise_workload_doc("pw", 4, [("c1", "x", "y", 4, 8)]),
            "hardware": hw}


def test_loader_reads_arrays_and_round_trips(tmp_path: Any) -> None:
    inst = instance_from_dict(scaleout_doc(2))
    acc = inst.hardware
    assert isinstance(acc, Accelerator)
    assert (acc.pe_array.arrays, acc.pe_array.num_pes) == (2, 8)
    arch = arch_from_accelerator(acc)
    assert arch.levels[1].fanout == (("rows", 2), ("cols", 2), (ARRAY_AXIS, 2))
    path = tmp_path / "scaleout.yaml"
    path.write_text(yaml.safe_dump(inst.document, sort_keys=False))
    again = load_instance(path)
    assert again.hardware == acc
    assert arch_from_accelerator(again.hardware) == arch
    plain = copy.deepcopy(scaleout_doc(1))
    del plain["hardware"]["pe_array"]["arrays"]
    plain["hardware"]["memories"][2]["instances"] = 4
    assert instance_from_dict(plain).hardware.pe_array.arrays == 1


@pytest.mark.parametrize("bad", [0, -1, "x", 1e400, float("nan"), 2.5])
def test_loader_refuses_bad_arrays_at_their_key(bad: Any) -> None:
    with pytest.raises(InputError) as info:
        instance_from_dict(scaleout_doc(bad))
    assert info.value.path == ("hardware", "pe_array", "arrays"), str(info.value)


@pytest.mark.parametrize(("suffix", "text"), [(".yaml", "1e400"), (".yaml", ".inf"), (".yaml", "x"), (".json", "1e400"),
                                             (".json", "0"), (".json", "-1")])
def test_files_with_bad_arrays_are_refused_at_their_key(tmp_path: Any, suffix: str, text: str) -> None:
    doc = scaleout_doc("__ARRAYS__")
    body = (yaml.safe_dump(doc, sort_keys=False) if suffix == ".yaml" else json.dumps(doc))
    path = tmp_path / f"bad{suffix}"
    path.write_text(body.replace("'__ARRAYS__'", text).replace('"__ARRAYS__"', text).replace("__ARRAYS__", text))
    with pytest.raises(InputError) as info:
        load_instance(path)
    assert info.value.path == ("hardware", "pe_array", "arrays"), str(info.value)


def test_inline_hardware_documents_keep_the_arrays() -> None:
    """An accelerator written out as an inline hardware document (as the PolyAcc experiment's case files) and read
    back is the same scale-out accelerator; ``dlaopt show``'s summary reports its arrays."""
    from dlaopt.cli.instances import _hardware_dict
    from dlaopt.experiments.polyacc import hardware_doc

    acc = PRESETS.create("gamma-edge", {"system": "s3"})
    doc = {"problem": "mapping", "workload": {"zoo": "resnet18"}, "hardware": hardware_doc(acc)}
    again = instance_from_dict(doc).hardware
    assert again.pe_array == acc.pe_array and again.pe_array.arrays == 4
    assert arch_from_accelerator(again) == arch_from_accelerator(acc)
    shown = _hardware_dict(acc)["pe_array"]
    assert (shown["arrays"], shown["num_pes"], shown["axes"]) == (4, 168, [["pes", 42]])
