"""The compile pipeline: the hand-over between stages (checked against a direct enumeration of the loop nest and
against the pinning evaluator), mapping tiles in the graph reconstruction, every stage verified end to end, the
report files re-verified alone, failures naming their stage, and the CLI."""

from __future__ import annotations

import itertools
import json
import math
import random
import time
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_bad_input, run_dlaopt

from dlaopt.formulations.mapping.arch import arch_from_accelerator
from dlaopt.formulations.mapping.heuristics import sample_mapping
from dlaopt.formulations.mapping.loopnest import loopnest_from_operator
from dlaopt.formulations.pinning.data import StepCycles
from dlaopt.formulations.pinning.evaluator import count_transfers
from dlaopt.formulations.pinning.heuristics import HEURISTICS
from dlaopt.formulations.pinning.tiling import LayerTile, tiled_graph
from dlaopt.formulations.pinning.tiling_check import verify_tiling
from dlaopt.hardware import PRESETS
from dlaopt.harness import prepare, verify
from dlaopt.io.instance import instance_from_dict, load_instance, load_mapping
from dlaopt.pipeline import (
    CompileOptions,
    StageFailed,
    compile_network,
    hardware_document,
    workload_document,
    write_report,
)
from dlaopt.pipeline.handoff import dim_extents, jobs_document, layer_tile, off_chip_tensors, onchip_level
from dlaopt.workload import NetworkBuilder

ROOT = Path(__file__).resolve().parents[1]


# ============================================================================================ hand-over figures
def _small_layers():
    b = NetworkBuilder("small", dtype_bytes=2)
    x = b.input("x", (2, 4, 6, 6))
    y = b.conv2d(x, 6, 3, padding=1, name="conv")
    a = b.input("a", (2, 3, 5, 4))
    z = b.matmul(a, b.weight("w", (4, 6)), name="mm")
    return b.build([y, z])


def _touched(nest, arch, m, level):
    """Enumerate the loop nest inside one iteration of the loops above ``level`` (those indices at 0): the loop
    index of every dimension, digit by digit over the slots, innermost first."""
    top = arch.temporal_slot(level)
    dims = list(nest.dims)
    ranges = [range(m.factors[d][k]) for d in dims for k in range(top + 1)]
    seen = {d: set() for d in dims}
    points = set()
    for digits in itertools.product(*ranges):
        idx = {}
        pos = 0
        for d in dims:
            value, scale = 0, 1
            for k in range(top + 1):
                value += digits[pos] * scale
                scale *= m.factors[d][k]
                pos += 1
            idx[d] = value
            seen[d].add(value)
        points.add(tuple(idx[d] for d in dims))
    return dims, points, seen


@pytest.mark.parametrize("seed", range(12))
def test_layer_tile_is_what_one_on_chip_iteration_touches(seed: int) -> None:
    """The on-chip tile handed to pinning equals the output box and reduction range one iteration of the
    main-memory loops computes, found by enumerating the loop nest of a random mapping."""
    wl = _small_layers()
    arch = arch_from_accelerator(PRESETS.create("smaug-nvdla", {}))
    rng = random.Random(seed)
    level = onchip_level(arch)
    for op in wl.operators:
        nest = loopnest_from_operator(wl, op)
        m = sample_mapping(nest, arch, rng)
        block, reduce = layer_tile(nest, dim_extents(arch, m, level), wl.tensors[op.outputs[0]].shape)
        dims, points, seen = _touched(nest, arch, m, level)
        pos = {d: i for i, d in enumerate(dims)}
        if op.kind.value == "conv2d":
            outs = {(p[pos["N"]], p[pos["G"]] * nest.sizes["K"] + p[pos["K"]], p[pos["P"]], p[pos["Q"]])
                    for p in points}
            red, red_full = seen["C"], nest.sizes["C"]
        else:  # matmul a (2, 3, 5, 4) x w (4, 6): batch B = 6 over the axes (2, 3)
            outs = {(p[pos["B"]] // 3, p[pos["B"]] % 3, p[pos["M"]], p[pos["N"]]) for p in points}
            red, red_full = seen["K"], nest.sizes["K"]
        box = [sorted({o[a] for o in outs}) for a in range(4)]
        assert all(v == list(range(len(v))) for v in box), "one iteration computes a box from the origin"
        if op.kind.value == "matmul" and len(seen["B"]) < nest.sizes["B"]:
            # a partial batch is handed on the innermost batch axis only
            assert block[:2] == (1, min(len(seen["B"]), 3))
            assert tuple(len(v) for v in box[2:]) == block[2:]
        else:
            assert tuple(len(v) for v in box) == block
            assert len(outs) == math.prod(block)
        assert (reduce is None) == (len(red) == red_full)
        if reduce is not None:
            assert red == set(range(reduce))


def test_off_chip_tensors_follow_the_pinning_transfers() -> None:
    inst = load_instance(ROOT / "instances/pinning/tiny-inline.yaml")
    p = prepare(inst)
    graph = p.data.graph
    naive = HEURISTICS["naive"](graph, True)
    t = count_transfers(graph, naive)
    produced = [n for n, tn in inst.graph.tensors.items() if tn.role.is_produced]
    read = {x for op in inst.graph.operators for x in op.inputs}
    # naive stores every output and loads every input: every produced tensor some operator reads goes off chip
    assert set(off_chip_tensors(inst.graph, graph, t.loads, t.stores)) == {x for x in produced if x in read}
    zero = np.zeros(len(graph.buffers), dtype=np.int64)
    assert off_chip_tensors(inst.graph, graph, zero, zero) == []
    stores = zero.copy()
    for b, buf in enumerate(graph.buffers):  # a graph output's one final store does not count
        stores[b] = 1 if buf.role.value == "output" else 0
    assert off_chip_tensors(inst.graph, graph, zero, stores) == []


def test_jobs_document_units() -> None:
    from dlaopt.pipeline.handoff import JobFigures

    figs = {("l1", "a"): JobFigures(2e-6, 4000, 1.0), ("l1", "b"): JobFigures(1e-6, 1000, 1.0)}
    doc = jobs_document([("l1", 50)], 2, ["a", "b"], figs, "net")
    assert [j["name"] for j in doc["jobs"]] == ["net#0/l1", "net#1/l1"]
    j = doc["jobs"][0]
    assert j["ops"] == 100.0 and j["latency_us"] == pytest.approx([2.0, 1.0])
    assert j["bandwidth_gbps"] == pytest.approx([4000 / 2e-6 / 1e9, 1000 / 1e-6 / 1e9])


# ============================================================================================ pinning inputs
def _tiled_instance():
    doc = {"problem": "pinning", "workload": {"zoo": "lenet5", "params": {}},
           "hardware": {"preset": "smaug-nvdla", "params": {"spad_kb": 8}}}
    return instance_from_dict(doc)


def test_layer_tiles_align_the_chunks_and_verify() -> None:
    inst = _tiled_instance()
    wl, acc = inst.graph, inst.accelerator
    free = tiled_graph(wl, acc)
    assert free.tiled_ops and not free.aligned_ops
    conv = next(op for op in wl.operators if op.name in free.tiled_ops and op.kind.value == "conv2d")
    out = wl.tensors[conv.outputs[0]]
    unit = (1, 8, 2, out.shape[3])
    graph = tiled_graph(wl, acc, layer_tiles={conv.name: LayerTile(unit, None)})
    assert conv.name in graph.aligned_ops
    assert verify_tiling(wl, graph) == []
    regions = [b.region for b in graph.buffers if b.tensor == out.name]
    assert len(regions) > 1
    for region in regions:
        for a, (lo, hi) in enumerate(region):
            assert lo % unit[a] == 0 and ((hi - lo) % unit[a] == 0 or hi == out.shape[a])


def test_an_impossible_layer_tile_falls_back_to_free_planning() -> None:
    inst = _tiled_instance()
    wl, acc = inst.graph, inst.accelerator
    free = tiled_graph(wl, acc)
    conv = next(op for op in wl.operators if op.name in free.tiled_ops and op.kind.value == "conv2d")
    huge = tuple(wl.tensors[conv.outputs[0]].shape)  # the whole output: cannot fit the 8 KB scratchpads
    graph = tiled_graph(wl, acc, layer_tiles={conv.name: LayerTile(huge, None)})
    assert conv.name not in graph.aligned_ops
    assert verify_tiling(wl, graph) == []


def test_compute_cycles_override_is_shared_by_the_tiles() -> None:
    inst = _tiled_instance()
    wl, acc = inst.graph, inst.accelerator
    free = tiled_graph(wl, acc)
    name = free.tiled_ops[0]
    graph = tiled_graph(wl, acc, compute_cycles={name: 100_000})
    steps = [s for s in graph.steps if s.op == name]
    total = sum(s.compute_cycles for s in steps)
    assert 100_000 <= total <= 100_000 + len(steps)  # each tile's share rounded up
    op = next(o for o in wl.operators if o.name == name)
    cycles = StepCycles(acc, {name: 100_000})
    assert cycles(op) == 100_000
    other = next(o for o in wl.operators if o.name != name)
    assert cycles(other) == acc.compute_cycles(other)


def test_pinning_options_are_located_errors() -> None:
    from dlaopt.errors import InputError

    base = {"problem": "pinning", "workload": {"zoo": "lenet5"}, "hardware": {"preset": "smaug-nvdla"}}
    with pytest.raises(InputError, match="no operator named 'nope'") as e:
        prepare(instance_from_dict({**base, "options": {"compute_cycles": {"nope": 3}}}))
    assert e.value.path == ("options", "compute_cycles", "nope")
    conv = instance_from_dict(base).graph.operators[0].name
    with pytest.raises(InputError, match="has 2 blocks") as e:
        prepare(instance_from_dict({**base, "options": {"layer_tiles": {conv: {"block": [1, 2]}}}}))
    assert e.value.path == ("options", "layer_tiles", conv, "block")


# ============================================================================================ the pipeline
FAST = {"mapping": ("nvdla", "eyeriss", "exact"), "pinning": ("naive", "greedy", "exact"),
        "bankmap": ("local", "propagate", "exact"), "assignment": ("herald", "lpt", "exact")}


def _options(**kw) -> CompileOptions:
    """Reproducible solves: no wall-clock limit (one under load stopped the EDP walk at different points in two runs),
    a node limit, one thread. The latency objective keeps the mapping MILPs to one per layer and gives pinning tiles
    it proves optimal within the limit (EDP, the default, is covered by the mapping tests)."""
    return CompileOptions(methods=FAST, mapping_objective="latency", time_limit=None, node_limit=200, threads=1,
                          seed=0, **kw)


@pytest.fixture(scope="module")
def lenet_report():
    w = workload_document("lenet5")
    h = hardware_document("smaug-nvdla", {"spad_kb": 8, "banks": 4})
    p = hardware_document("magma-s1", {"system_bandwidth_gbps": 1}, platform=True)
    return compile_network(w, h, p, _options(tenants=2))


def test_every_stage_is_verified_and_hands_on_its_best(lenet_report) -> None:
    rep = lenet_report
    assert [s.name for s in rep.stages] == ["mapping", "pinning", "bankmap", "assignment"]
    for s in rep.stages:
        assert all(r.verified for r in s.results), s.name
        assert s.chosen.method == "exact"
        heuristics = [r.objective for r in s.results if r.method != "exact"]
        assert s.chosen.objective <= min(heuristics) * (1 + 1e-9)
    pin = rep.stage("pinning")
    assert pin.summary["tiled_ops"] > 0 and pin.summary["tiles_from_mapping"] > 0


def test_mapping_figures_reach_the_pinning_instance(lenet_report) -> None:
    rep = lenet_report
    pin = rep.stage("pinning")
    opts = pin.instance["options"]
    assert set(opts["compute_cycles"]) == {f.layer for f in rep.layers}
    graph = pin.prepared.data.graph
    acc = pin.prepared.instance.accelerator
    wl = pin.prepared.instance.graph
    for f in rep.layers:
        steps = [s for s in graph.steps if s.op == f.layer]
        assert sum(s.compute_cycles for s in steps) >= math.ceil(f.onchip_cycles)
        assert sum(s.compute_cycles for s in steps) <= math.ceil(f.onchip_cycles) + len(steps)
    others = [s for s in graph.steps if s.op not in opts["compute_cycles"]]
    ops = {o.name: o for o in wl.operators}
    assert all(s.compute_cycles >= 1 for s in others)
    assert sum(s.compute_cycles for s in graph.steps if not graph.tiled_ops or s.op not in graph.tiled_ops
               and s.op not in opts["compute_cycles"]) == sum(
        acc.compute_cycles(ops[s.op]) for s in graph.steps if s.op not in graph.tiled_ops
        and s.op not in opts["compute_cycles"])


def test_bank_stage_lays_out_what_pinning_keeps_on_chip(lenet_report) -> None:
    rep = lenet_report
    pin, bank = rep.stage("pinning"), rep.stage("bankmap")
    data = pin.prepared.data
    sol = pin.prepared.problem.solution_from_dict(data, pin.chosen.solution)
    t = count_transfers(data.graph, sol)
    expected = off_chip_tensors(pin.prepared.instance.graph, data.graph, t.loads, t.stores)
    assert bank.instance["options"]["off_chip_tensors"] == expected
    assert set(expected) <= set(bank.chosen.solution["off_chip"])


def test_end_to_end_figures_add_up(lenet_report) -> None:
    rep = lenet_report
    e = rep.end_to_end
    pm = rep.stage("pinning").chosen.metrics
    assert e["cycles"] == pytest.approx(pm["estimated_cycles"] + e["copy_cycles"])
    assert e["energy_pj"] == pytest.approx(sum(e["energy_breakdown_pj"].values()))
    assert e["energy_breakdown_pj"]["layers_on_chip"] == pytest.approx(sum(f.onchip_energy_pj for f in rep.layers))
    assert e["naive_cycles"] >= pm["estimated_cycles"]
    plat = e["platform"]
    a = rep.stage("assignment")
    assert plat["makespan_s"] == pytest.approx(a.chosen.objective)
    assert plat["requests_per_s"] == pytest.approx(2 / a.chosen.objective)
    assert len(a.instance["workload"]["jobs"]) == 2 * len(rep.layers)


def test_report_files_reverify_alone(lenet_report, tmp_path: Path) -> None:
    paths = write_report(lenet_report, tmp_path)
    doc = json.loads(paths["json"].read_text())
    assert [s["stage"] for s in doc["stages"]] == ["mapping", "pinning", "bankmap", "assignment"]
    md = paths["markdown"].read_text()
    assert "## End to end" in md and "Stage 4: assignment" in md
    for s in lenet_report.stages:
        inst = load_instance(tmp_path / "stages" / f"{s.name}.yaml")
        sol = load_mapping(tmp_path / "stages" / f"{s.name}-solution.yaml", what="solution")
        ev = verify(inst, sol)
        assert ev.feasible, (s.name, ev.violations[:3])
        assert ev.objective == pytest.approx(s.chosen.objective, rel=1e-9)
        assert (tmp_path / "plots" / f"{s.name}.png").stat().st_size > 1000


def test_single_accelerator_platform_skips_the_assignment() -> None:
    w = workload_document("minerva")
    h = hardware_document("smaug-nvdla", {"spad_kb": 64})
    p = {"accelerators": [{"preset": "eyeriss"}], "system_bandwidth_gbps": 8}
    rep = compile_network(w, h, p, _options())
    assert [s.name for s in rep.stages] == ["mapping", "pinning", "bankmap"]
    assert "platform" not in rep.end_to_end


def test_deterministic(lenet_report) -> None:
    w = workload_document("lenet5")
    h = hardware_document("smaug-nvdla", {"spad_kb": 8, "banks": 4})
    again = compile_network(w, h, None, _options())
    for name in ("mapping", "pinning", "bankmap"):
        assert again.stage(name).chosen.objective == lenet_report.stage(name).chosen.objective
        a, b = again.stage(name).chosen.solution, lenet_report.stage(name).chosen.solution
        if name == "mapping":  # solver notes (times) aside, the same mapping of every layer
            a, b = ({n: (d["factors"], d["orders"]) for n, d in x["layers"].items()} for x in (a, b))
        assert a == b


def test_a_stage_whose_solution_is_rejected_stops_the_pipeline(monkeypatch) -> None:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.formulations.pinning.problem import PinningProblem

    def reject(self, data, solution):
        return Evaluation(False, None, ["injected: step 3 overflows spad0"])

    monkeypatch.setattr(PinningProblem, "evaluate", reject)
    w = workload_document("minerva")
    h = hardware_document("smaug-nvdla", {"spad_kb": 64})
    with pytest.raises(StageFailed, match="stage 'pinning' failed") as e:
        compile_network(w, h, None, _options())
    assert e.value.stage == "pinning"
    assert "injected" in e.value.message


def test_an_infeasible_stage_names_itself_and_why() -> None:
    w = workload_document("minerva")
    # the one scratchpad holds no weights: no matmul can have its operands on chip
    h = {"name": "noweights", "pe_array": {"axes": [["pe", 4]]}, "dma": {"bandwidth_bytes_per_cycle": 8},
         "memories": [{"name": "dram", "kind": "dram"},
                      {"name": "s0", "kind": "scratchpad", "capacity_kb": 64,
                       "holds": ["input", "activation", "output"]}]}
    with pytest.raises(StageFailed) as e:
        compile_network(w, h, None, _options())
    assert e.value.stage == "pinning"
    assert "weight" in e.value.message and "infeasible" in e.value.message


# ============================================================================================ the command
def test_cli_compile_writes_the_report(tmp_path: Path) -> None:
    r = run_dlaopt("compile", "minerva", "--hardware", "smaug-nvdla", "--hw", "spad_kb=64", "--out", tmp_path / "o",
                   "--time-limit", "10", "--threads", "1", "--methods", "pinning=greedy,exact", "--no-plots",
                   cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "report:" in r.stdout and "cycles" in r.stdout
    doc = json.loads((tmp_path / "o" / "report.json").read_text())
    assert [m["method"] for m in doc["stages"][1]["methods"]] == ["greedy", "exact"]
    v = run_dlaopt("verify", str(tmp_path / "o/stages/pinning.yaml"), str(tmp_path / "o/stages/pinning-solution.yaml"),
                   cwd=tmp_path)
    assert v.returncode == 0, v.stderr


@pytest.mark.parametrize("args, needle", [
    (["nosuchnet", "--hardware", "smaug-nvdla"], "nosuchnet"),
    (["lenet5", "--hardware", "nosuchpreset"], "nosuchpreset"),
    (["lenet5", "--hardware", "smaug-nvdla", "--methods", "warp=exact"], "unknown stage 'warp'"),
    (["lenet5", "--hardware", "smaug-nvdla", "--platform", "magma-s9"], "magma-s9"),
])
def test_cli_compile_bad_input(tmp_path: Path, args: list[str], needle: str) -> None:
    r = run_dlaopt("compile", *args, cwd=tmp_path)
    assert_bad_input(r.returncode, r.stderr, needle)


def test_compile_an_onnx_model() -> None:
    from dlaopt.io.onnx import import_onnx

    model = ROOT / "instances/onnx/small-cnn.onnx"
    w = workload_document(str(model), {"batch": 1})
    assert Path(w["onnx"]).is_absolute()
    rep = compile_network(w, hardware_document("smaug-nvdla", {"spad_kb": 16}), None, _options())
    layers = [op.name for op in import_onnx(model, batch=1).operators if op.kind.value in ("conv2d", "matmul",
                                                                                           "depthwise_conv2d")]
    assert [f.layer for f in rep.layers] == layers
    assert all(r.verified for s in rep.stages for r in s.results)


# ============================================================================================ total time limit
def _limited(**kw) -> CompileOptions:
    """_options with a total time limit whose deadline a test moves (``opts.deadline = ...``) to expire at a chosen
    point: compile_network keeps a deadline the caller set."""
    return _options(total_time_limit=60.0, deadline=time.monotonic() + 60.0, **kw)


def _lenet_platform():
    return (workload_document("lenet5"), hardware_document("smaug-nvdla", {"spad_kb": 8, "banks": 4}),
            hardware_document("magma-s1", {"system_bandwidth_gbps": 1}, platform=True))


def test_total_time_limit_after_a_stage_writes_what_finished(tmp_path: Path) -> None:
    """The deadline expires once the mapping stage is done: no exception, the report is written with the mapping
    stage and its files, every later stage is listed as not run, and there are no end-to-end figures."""
    from dlaopt.pipeline.compile import NOT_RUN

    opts = _limited(tenants=2)

    def expire_after_mapping(stage, event, outcome):
        if (stage, event) == ("mapping", "done"):
            opts.deadline = time.monotonic()

    opts.progress = expire_after_mapping
    rep = compile_network(*_lenet_platform(), opts)
    assert [s.name for s in rep.stages] == ["mapping"] and rep.stage("mapping").status == "done"
    assert not rep.complete and rep.end_to_end == {}
    assert [(n["stage"], n["status"]) for n in rep.not_run] == [
        ("pinning", NOT_RUN), ("bankmap", NOT_RUN), ("assignment", NOT_RUN)]
    assert NOT_RUN == "not run: total time limit reached before it started"
    paths = write_report(rep, tmp_path, plots=False)
    doc = json.loads(paths["json"].read_text())
    assert doc["complete"] is False and doc["end_to_end"] == {}
    assert [s["stage"] for s in doc["stage_status"]] == ["mapping", "pinning", "bankmap", "assignment"]
    assert doc["stage_status"][1]["status"] == NOT_RUN
    md = paths["markdown"].read_text()
    assert "**Incomplete**" in md and "Not computed" in md and md.count(NOT_RUN) >= 6  # table + sections
    assert "Stage 4: assignment" in md
    assert sorted(p.name for p in (tmp_path / "stages").iterdir()) == ["mapping-solution.yaml", "mapping.yaml"]
    ev = verify(load_instance(tmp_path / "stages/mapping.yaml"),
                load_mapping(tmp_path / "stages/mapping-solution.yaml", what="solution"))
    assert ev.feasible and ev.objective == pytest.approx(rep.stage("mapping").chosen.objective, rel=1e-9)


def test_a_stage_cut_short_by_the_total_time_limit_hands_on_its_verified_best(monkeypatch) -> None:
    """The deadline expires inside the pinning stage, after its greedy heuristic: the exact method is not started,
    the stage hands on the verified greedy solution and says it was cut short; the stages after it are not run.
    (A stage reads the deadline when it starts: it is set to 1.5 s ahead then, and greedy waits for it.)"""
    import dlaopt.pipeline.stages as stages_module
    from dlaopt.solvers.processes import NOT_STARTED_MESSAGE

    opts = _limited()
    real_solve = stages_module.solve

    def expire_in_pinning(stage, event, outcome):
        if (stage, event) == ("pinning", "start"):
            opts.deadline = time.monotonic() + 1.5

    def solve(prepared, method, **kw):
        res = real_solve(prepared, method, **kw)
        if prepared.problem.name == "pinning" and method == "greedy":
            time.sleep(max(0.0, kw["options"].deadline - time.monotonic()))
        return res

    opts.progress = expire_in_pinning
    monkeypatch.setattr(stages_module, "solve", solve)
    w, h, _ = _lenet_platform()
    rep = compile_network(w, h, None, opts)
    pin = rep.stage("pinning")
    assert [s.name for s in rep.stages] == ["mapping", "pinning"]
    assert pin.cut_short and "not started: exact" in pin.status
    assert pin.chosen.method == "greedy" and pin.chosen.verified
    assert pin.result("exact").message == NOT_STARTED_MESSAGE
    assert [n["stage"] for n in rep.not_run] == ["bankmap"] and not rep.complete


def test_a_deadline_already_passed_runs_nothing_and_still_reports(tmp_path: Path) -> None:
    from dlaopt.pipeline.compile import NOT_RUN

    w, h, _ = _lenet_platform()
    rep = compile_network(w, h, None, _options(total_time_limit=1.0, deadline=time.monotonic()))
    assert rep.stages == [] and [n["status"] for n in rep.not_run] == [NOT_RUN] * 3
    paths = write_report(rep, tmp_path)
    assert json.loads(paths["json"].read_text())["complete"] is False
    assert "Stage 1: mapping" in paths["markdown"].read_text()


def test_a_failure_that_is_not_the_limit_still_stops_the_pipeline(monkeypatch) -> None:
    from dlaopt.formulations.base import Evaluation
    from dlaopt.formulations.pinning.problem import PinningProblem

    monkeypatch.setattr(PinningProblem, "evaluate", lambda self, data, sol: Evaluation(False, None, ["injected"]))
    w = workload_document("minerva")
    h = hardware_document("smaug-nvdla", {"spad_kb": 64})
    with pytest.raises(StageFailed, match="stage 'pinning' failed") as e:
        compile_network(w, h, None, _limited())
    assert not e.value.total_time_limit
