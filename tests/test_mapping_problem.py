"""The mapping problem through the harness and the CLI: every method verified, exact = exhaustive on a shipped
instance, unique shapes solved once, padding, infeasible and malformed input, the model/evaluator cross-check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import assert_bad_input, run_dlaopt

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.formulations.base import ExactOutcome, HeuristicFailure
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.exact import solve_single
from dlaopt.formulations.mapping.milp import MappingMilp
from dlaopt.io.instance import instance_from_dict, load_instance
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.result import SolveOptions, Status

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "instances" / "mapping" / "tiny-conv-inline.yaml"
DET = SolveOptions(threads=1, deterministic=True, seed=0)


def tiny_doc(**options: object) -> dict:
    import yaml

    doc = yaml.safe_load(TINY.read_text())
    doc["options"] = {"workers": 1, "random_samples": 300, "ga_population": 10, "ga_generations": 5, **options}
    return doc


def test_every_method_is_verified_and_exact_equals_exhaustive() -> None:
    p = harness.prepare(instance_from_dict(tiny_doc()))
    results = {r.method: r for r in harness.compare(p, options=DET)}
    assert set(results) == {"random", "ga", "nvdla", "eyeriss", "shidiannao", "exact", "exhaustive"}
    for r in results.values():
        assert r.verified, (r.method, r.message)
    assert results["exact"].status == Status.OPTIMAL
    assert results["exhaustive"].status == Status.OPTIMAL
    assert results["exact"].objective == pytest.approx(results["exhaustive"].objective, rel=1e-9)
    best_heuristic = min(results[m].objective for m in ("random", "ga", "nvdla", "eyeriss", "shidiannao"))
    assert results["exact"].objective <= best_heuristic * (1 + 1e-9)


@pytest.mark.parametrize("objective", ["latency", "edp"])
def test_other_objectives_through_the_harness(objective: str) -> None:
    doc = tiny_doc()
    doc["objective"] = objective
    p = harness.prepare(instance_from_dict(doc))
    exact = harness.solve(p, "exact", options=DET)
    brute = harness.solve(p, "exhaustive", options=DET)
    assert exact.status == Status.OPTIMAL and exact.verified
    assert exact.objective == pytest.approx(brute.objective, rel=2e-6)


def test_solution_document_round_trip_and_verify(tmp_path: Path) -> None:
    p = harness.prepare(instance_from_dict(tiny_doc()))
    r = harness.solve(p, "exact", options=DET)
    doc = r.solution_document()
    layer = doc["solution"]["layers"]["conv"]
    assert "for " in layer["loop_nest"] and layer["levels"][0]["level"] == "dram"
    ev = harness.verify(p, doc)
    assert ev.feasible and ev.objective == pytest.approx(r.objective)
    # a tampered factorization is rejected with a located error
    bad = json.loads(json.dumps(doc))
    bad["solution"]["layers"]["conv"]["factors"]["K"] = [1, 1, 1, 1, 3]
    with pytest.raises(InputError) as exc:
        harness.verify(p, bad)
    assert exc.value.path[:3] == ("solution", "layers", "conv")


def test_deterministic_exact() -> None:
    a = harness.solve(harness.prepare(instance_from_dict(tiny_doc())), "exact", options=DET)
    b = harness.solve(harness.prepare(instance_from_dict(tiny_doc())), "exact", options=DET)
    assert a.objective == b.objective

    def mapping_of(r: harness.Result) -> dict:
        return {n: (d["factors"], d["orders"]) for n, d in r.solution["layers"].items()}  # not the timings
    assert mapping_of(a) == mapping_of(b)


def test_identical_layers_are_solved_once() -> None:
    doc = {
        "problem": "mapping", "name": "twice", "objective": "energy",
        "workload": {"name": "twice", "dtype_bytes": 2, "tensors": [
            {"name": "x", "shape": [1, 2, 4, 4], "role": "input"},
            {"name": "w1", "shape": [2, 2, 1, 1], "role": "weight"},
            {"name": "w2", "shape": [2, 2, 1, 1], "role": "weight"},
            {"name": "a", "shape": [1, 2, 4, 4], "role": "activation"},
            {"name": "y", "shape": [1, 2, 4, 4], "role": "output"}],
            "operators": [
                {"name": "c1", "kind": "conv2d", "inputs": ["x", "w1"], "outputs": ["a"]},
                {"name": "c2", "kind": "conv2d", "inputs": ["a", "w2"], "outputs": ["y"]}]},
        "hardware": tiny_doc()["hardware"],
        "options": {"workers": 1},
    }
    p = harness.prepare(instance_from_dict(doc))
    assert len(p.data.nests) == 2 and len(p.data.groups) == 1
    r = harness.solve(p, "exact", options=DET)
    assert r.status == Status.OPTIMAL
    per = r.metrics["layers"]
    assert per[0]["energy_pj"] == per[1]["energy_pj"]
    assert r.objective == pytest.approx(2 * per[0]["energy_pj"])


def test_padding_counts_wasted_work() -> None:
    plain = harness.prepare(instance_from_dict(tiny_doc()))
    padded = harness.prepare(instance_from_dict(tiny_doc(padding={"K": 8})))
    n0, n1 = plain.data.nests[0], padded.data.nests[0]
    assert n1.sizes["K"] == 8 and n1.real_sizes["K"] == 4 and n1.macs == 2 * n0.macs
    r = harness.solve(padded, "nvdla", options=DET)
    rep = evaluate_mapping(n1, padded.data.arch, padded.problem.solution_from_dict(padded.data, r.solution)
                           .mappings["conv"])
    assert rep.macs == 2 * rep.real_macs
    assert rep.energy_breakdown["mac"] == rep.macs * padded.data.arch.mac_energy_pj


def test_too_small_register_file_is_infeasible_with_a_reason() -> None:
    doc = tiny_doc()
    doc["hardware"]["memories"][2]["capacity_bytes"] = 4
    p = harness.prepare(instance_from_dict(doc))
    r = harness.solve(p, "exact", options=DET)
    assert r.status == Status.INFEASIBLE
    assert "'rf'" in r.message and "4 B" in r.message
    with pytest.raises(HeuristicFailure):
        p.problem.run_heuristic("nvdla", p.data, DET)


@pytest.mark.parametrize(("options", "path"), [
    ({"layers": ["nope"]}, ("options", "layers", 0)),
    ({"padding": {"Z": 2}}, ("options", "padding", "Z")),
])
def test_bad_options_are_located(options: dict, path: tuple) -> None:
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(tiny_doc(**options)))
    assert exc.value.path == path


def test_layers_option_rejects_non_mappable_operators() -> None:
    doc = {"problem": "mapping", "workload": {"zoo": "lenet5"}, "hardware": {"preset": "eyeriss"},
           "options": {"layers": ["pool1"]}}
    inst = instance_from_dict(doc)
    names = [op.name for op in inst.workload.operators if op.kind.value == "pool"]
    doc["options"]["layers"] = names[:1]
    with pytest.raises(InputError) as exc:
        harness.prepare(instance_from_dict(doc))
    assert "not a mappable layer" in exc.value.message


def test_capacity_limits_exclude_a_usage() -> None:
    """The re-solve path for capacity rows met only within tolerance: a tighter limit is honoured exactly."""
    p = harness.prepare(instance_from_dict(tiny_doc()))
    nest, arch = p.data.nests[0], p.data.arch
    free = solve_single(nest, arch, "energy", warm=None, options=DET)
    assert free.mapping is not None
    used = evaluate_mapping(nest, arch, free.mapping).tile_bytes["rf"]
    total = sum(used.values())
    mm = MappingMilp(nest, arch, "energy", capacity_limits={(0, "rf"): total - 1})
    r = solve_linear(mm.build(), "highs", DET)
    m = mm.decode(r.x)
    assert sum(evaluate_mapping(nest, arch, m).tile_bytes["rf"].values()) <= total - 1
    assert r.objective * mm.objective_scale >= free.objective * (1 - 1e-9)


def test_harness_rejects_a_model_that_claims_less_than_the_truth() -> None:
    p = harness.prepare(instance_from_dict(tiny_doc()))
    sol = p.problem.run_heuristic("nvdla", p.data, DET)
    true = p.problem.evaluate(p.data, sol).objective
    res = harness.Result("mapping", "tiny", "exact", "energy", Status.ERROR)
    harness._finish_outcome(res, p.problem, p.data, ExactOutcome(sol, Status.FEASIBLE, None, "fake",
                                                                 model_objective=true * 0.9), DET)
    assert res.status == Status.ERROR and "mismatch" in res.message
    res = harness.Result("mapping", "tiny", "exact", "energy", Status.ERROR)
    harness._finish_outcome(res, p.problem, p.data, ExactOutcome(sol, Status.FEASIBLE, None, "fake",
                                                                 model_objective=true * 1.1), DET)
    assert res.status == Status.FEASIBLE and res.verified


def test_shipped_instances_load() -> None:
    for f in sorted((ROOT / "instances" / "mapping").glob("*.yaml")):
        p = harness.prepare(load_instance(f))
        assert p.data.nests


def test_cli_solve_json_and_malformed_layers(tmp_path: Path) -> None:
    r = run_dlaopt("solve", str(TINY), "--json", "--seed", "0")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "optimal" and doc["verified"] and doc["metrics"]["layers"][0]["layer"] == "conv"
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY.read_text() + "options: {layers: [missing]}\n")
    r = run_dlaopt("solve", str(bad))
    assert_bad_input(r.returncode, r.stderr, "missing", "options.layers[0]")


def test_cli_mapping_benchmark_quick(tmp_path: Path) -> None:
    r = run_dlaopt("experiment", "mapping-benchmark", "--network", "lenet5", "--layers", "1", "--presets", "accel-b",
                   "--methods", "exact,nvdla,eyeriss", "--workers", "1", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    row = out["rows"][0]
    assert row["exact_status"] == "optimal"
    assert row["exact_objective"] <= min(row["nvdla_objective"], row["eyeriss_objective"]) * (1 + 1e-9)
    assert (tmp_path / "lenet5-energy.csv").exists() and (tmp_path / "lenet5-energy.md").exists()


@pytest.mark.parametrize(("preset", "macs", "local", "shared"), [
    # seed 001 Table 4.2 (GAMMA platforms) and Table 5.1 (Accel-A / Accel-B); Eyeriss v1
    ("gamma-edge", 168, 512, 108 * 1024),
    ("gamma-cloud", 65536, 64, 24 * 1024 * 1024),
    ("accel-a", 256, 64 * 1024, 512 * 1024),
    ("accel-b", 1024, 256, 64 * 1024),
    ("eyeriss", 168, 512, 108 * 1024),
])
def test_mapping_presets_match_the_seed_tables(preset: str, macs: int, local: int, shared: int) -> None:
    from dlaopt.formulations.mapping.arch import arch_from_accelerator
    from dlaopt.hardware.presets import PRESETS

    arch = arch_from_accelerator(PRESETS.create(preset, {}))
    assert arch.num_macs == macs
    assert [lv.stores[0].capacity_bytes for lv in arch.levels] == [local, shared, None]
    assert arch.levels[0].instances * (4 if preset == "accel-b" else 1) == macs


def test_tpu_preset_is_weight_stationary_with_partitioned_buffers() -> None:
    from dlaopt.formulations.mapping.arch import arch_from_accelerator
    from dlaopt.hardware.presets import PRESETS

    arch = arch_from_accelerator(PRESETS.create("tpu", {}))
    pe, onchip, dram = arch.levels
    assert pe.keeps == frozenset("W") and pe.instances == 256 * 256
    assert {s.memory: s.operands for s in onchip.stores} == {
        "unified_buffer": frozenset("I"), "accumulators": frozenset("O"), "weight_fifo": frozenset("W")}
    assert arch.keeping_levels("I") == [1, 2] and arch.num_macs == 256 * 256
