"""The data side of the multi-accelerator problem: MAGMA's platforms, the task job groups, the job analysis table
(against the mapping cost model recomputed here) and the recommendation / GPT-2 zoo entries."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dlaopt.errors import InputError
from dlaopt.formulations.mapping.arch import arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import dataflow
from dlaopt.formulations.multiaccel import analysis
from dlaopt.formulations.multiaccel.analysis import CACHE_FILE, OBJECTIVE, job_table, padded_nest, profile_job
from dlaopt.formulations.multiaccel.model import JobTable
from dlaopt.formulations.multiaccel.tasks import TASKS, JobSpec, job_group, precedence_pairs, task_jobs
from dlaopt.hardware.model import Accelerator, MemoryKind, Platform
from dlaopt.hardware.platforms import PLATFORMS, sub_accelerator
from dlaopt.zoo import ZOO

KB = 1024

# Table 7.2 of seed 001: setting -> [(count, rows, style, buffer KB)]
TABLE_7_2 = {
    "magma-s1": [(4, 32, "HB", 146)],
    "magma-s2": [(3, 32, "HB", 146), (1, 32, "LB", 110)],
    "magma-s3": [(8, 128, "HB", 580)],
    "magma-s4": [(7, 128, "HB", 580), (1, 128, "LB", 434)],
    "magma-s5": [(3, 128, "HB", 580), (1, 128, "LB", 434), (3, 64, "HB", 291), (1, 64, "LB", 218)],
    "magma-s6": [(7, 128, "HB", 580), (1, 128, "LB", 434), (7, 64, "HB", 291), (1, 64, "LB", 218)],
}


def _jobs(task: str, names: list[str]) -> list[JobSpec]:
    by_name = {j.name: j for j in task_jobs(task)}
    return [by_name[n] for n in names]


def _small_platform() -> Platform:
    """One HB and one LB sub-accelerator of the Small class (32 x 64 PEs)."""
    return Platform("hb-lb", (sub_accelerator(32, "HB"), sub_accelerator(32, "LB")), 16e9)


# ================================================================================================ platforms
@pytest.mark.parametrize("name", sorted(TABLE_7_2))
def test_platforms_match_table_7_2(name: str) -> None:
    p = PLATFORMS.create(name)
    assert p.name == name
    expected = [(rows, style, kb) for count, rows, style, kb in TABLE_7_2[name] for _ in range(count)]
    assert len(p.accelerators) == len(expected) == sum(c for c, *_ in TABLE_7_2[name])
    assert len({a.name for a in p.accelerators}) == len(p.accelerators)
    for acc, (rows, style, kb) in zip(p.accelerators, expected, strict=True):
        assert acc.params["rows"] == rows and acc.params["style"] == style and acc.params["buffer_kb"] == kb
        assert acc.params["dataflow"] == {"HB": "nvdla", "LB": "activation"}[style]
        assert acc.name.startswith(f"{style.lower()}{rows}-")
        assert acc.pe_array.axes == (("rows", rows), ("cols", 64)) and acc.pe_array.macs_per_pe_per_cycle == 1
        assert acc.clock_hz == 200e6
        dram, glb, local = acc.memories
        assert dram.kind == MemoryKind.DRAM and math.isinf(dram.bandwidth_bytes_per_cycle)
        assert local.instances == rows * 64
        # the per-PE local buffers and the global buffer add up to the table's size; the global holds most of it
        assert glb.capacity_bytes is not None and local.capacity_bytes is not None
        assert local.capacity_bytes * local.instances + glb.capacity_bytes == kb * KB
        assert glb.capacity_bytes > 0.7 * kb * KB
        arch = arch_from_accelerator(acc)
        assert arch.num_macs == rows * 64 and [lv.name for lv in arch.levels] == ["local", "glb", "dram"]
    small = name in ("magma-s1", "magma-s2")
    assert p.system_bandwidth_bytes_per_s == (16e9 if small else 256e9)


def test_platform_system_bandwidth_parameter() -> None:
    assert PLATFORMS.create("magma-s1", {"system_bandwidth_gbps": 1}).system_bandwidth_bytes_per_s == 1e9
    assert PLATFORMS.create("magma-s4", {"system_bandwidth_gbps": 2.5}).system_bandwidth_bytes_per_s == 2.5e9
    with pytest.raises(InputError):
        PLATFORMS.create("magma-s1", {"system_bandwidth_gbps": 0})
    with pytest.raises(InputError):
        PLATFORMS.create("magma-s1", {"bandwidth": 4})
    with pytest.raises(InputError):
        PLATFORMS.create("magma-s7")


# ================================================================================================ tasks
@pytest.mark.parametrize("task", sorted(TASKS))
def test_job_group_is_deterministic_sized_and_from_the_task(task: str) -> None:
    g = job_group(task, seed=3)
    assert len(g) == 100
    assert [j.name for j in g] == [j.name for j in job_group(task, seed=3)]
    assert [j.name for j in g] != [j.name for j in job_group(task, seed=4)]
    assert len({j.name for j in g}) == len(g)
    assert {j.tenant for j in g} == set(TASKS[task])  # every network drawn (deterministic for this seed)
    assert len(job_group(task, group_size=7, seed=1)) == 7
    for j in g:
        assert j.nest.macs == j.macs > 0 and j.ops == 2 * j.macs
        assert all(o.word_bytes == 1 for o in j.nest.operands)  # 1-byte words
        assert j.name == (f"{j.tenant}/{j.layer}" if j.instance == 0 else f"{j.tenant}#{j.instance}/{j.layer}")


def test_job_specs_point_at_their_operators() -> None:
    for j in job_group("mix", seed=0):
        op = ZOO.create(j.tenant, {"batch": 1, "dtype_bytes": 1}).operators[j.index]
        assert op.name == j.layer and op.macs == j.macs


def test_tenants_are_interleaved_and_precedence_chains_follow_layer_order() -> None:
    g = job_group("recommendation", seed=0)
    assert len({j.tenant for j in g[:10]}) > 1
    # the 17 layers of the three networks recur as several instances
    assert max(j.instance for j in g) >= 2
    pairs = precedence_pairs(g)
    instances = {(j.tenant, j.instance) for j in g}
    assert len(pairs) == len(g) - len(instances)
    for a, b in pairs:
        assert (g[a].tenant, g[a].instance) == (g[b].tenant, g[b].instance)
        assert g[a].index < g[b].index
        between = [j for j in g if (j.tenant, j.instance) == (g[a].tenant, g[a].instance)
                   and g[a].index < j.index < g[b].index]
        assert not between


def test_bad_task_arguments() -> None:
    with pytest.raises(ValueError):
        job_group("speech")
    with pytest.raises(ValueError):
        job_group("vision", group_size=0)


# ================================================================================================ job analysis
def _recompute(job: JobSpec, acc: Accelerator) -> tuple[int, float, int]:
    """(compute cycles, latency cycles, DRAM bytes) of the style's dataflow with EDP-greedy tiles, from the cost
    model directly."""
    assert OBJECTIVE == "edp"
    arch = arch_from_accelerator(acc)
    m = dataflow(job.nest, arch, str(acc.params["dataflow"]), "edp")
    assert m is not None
    r = evaluate_mapping(job.nest, arch, m)
    assert r.valid
    dram = sum((a.reads + a.writes) * job.nest.operand(t).word_bytes for t, a in r.accesses["dram"].items())
    return r.compute_cycles, r.latency_cycles, dram


def test_table_latency_and_bandwidth_from_the_cost_model() -> None:
    jobs = _jobs("mix", ["resnet50/layer3.0.conv2", "bert-base/encoder0.attn.q"])
    assert all(padded_nest(j.nest) is None for j in jobs)  # no padded variant: the plain mapping is the profile
    p = _small_platform()
    t = job_table(jobs, p)
    assert isinstance(t, JobTable)
    assert t.jobs == tuple(j.name for j in jobs) and t.tenants == ("resnet50", "bert-base")
    assert t.accelerators == ("hb32-0", "lb32-0")
    assert np.array_equal(t.ops, [2.0 * j.macs for j in jobs])
    for i, job in enumerate(jobs):
        for a, acc in enumerate(p.accelerators):
            compute, latency, dram = _recompute(job, acc)
            assert latency == compute  # compute-bound with unlimited DRAM bandwidth
            assert t.latency[i, a] == pytest.approx(compute / 200e6, rel=1e-12)
            assert t.bandwidth[i, a] == pytest.approx(dram / (compute / 200e6), rel=1e-12)
            assert t.volume[i, a] == pytest.approx(dram, rel=1e-9)


def test_prime_bounds_are_padded() -> None:
    (job,) = _jobs("recommendation", ["dlrm/top.fc1"])  # 479 inputs: a prime bound
    hb = sub_accelerator(32, "HB")
    padded = padded_nest(job.nest)
    assert padded is not None and padded.sizes["K"] == 480 and padded.real_macs == job.macs
    plain = profile_job(job.nest, hb, pad=False)
    best = profile_job(job.nest, hb)
    assert plain.compute_cycles == job.macs // 64  # 479 cannot be split over the rows: one row of 64 PEs
    assert best.cycles < plain.cycles / 10
    t = job_table([job], Platform("hb", (hb,), 1e9))
    assert t.latency[0, 0] == pytest.approx(best.cycles / 200e6)


def test_hb_and_lb_relations() -> None:
    """The seed's qualitative characteristics (§7.3.1, Fig. 7.6) that dlaopt's dataflow templates reproduce."""
    names = ["resnet50/conv1", "resnet50/layer3.0.conv2", "bert-base/encoder0.attn.q", "dlrm/top.fc1"]
    t = job_table(_jobs("mix", names), _small_platform())
    (early, late, fc, rec), hb, lb = range(4), 0, 1
    # LB (activation-parallel) excels on the early CNN layer: three input channels leave HB's rows idle
    assert t.latency[early, lb] < t.latency[early, hb] / 4
    # HB (channel-parallel) is faster on a late CNN layer but more bandwidth-hungry
    assert t.latency[late, hb] < t.latency[late, lb]
    assert t.bandwidth[late, hb] > 2 * t.bandwidth[late, lb]
    # Language / recommendation matmuls (Fig. 7.6): LB spreads only the token / batch rows, so it is far slower and
    # far less bandwidth-hungry than HB
    for j in (fc, rec):
        assert t.latency[j, lb] > 10 * t.latency[j, hb]
        assert t.bandwidth[j, hb] > 10 * t.bandwidth[j, lb]


def test_recommendation_jobs_need_more_bandwidth_than_vision() -> None:
    """Fig. 7.6: vision (CONV) jobs have the lowest bandwidth requirement, recommendation (FC at batch 1) the
    highest."""
    jobs = [j for j in task_jobs("mix") if j.tenant in ("resnet50", "dlrm", "ncf")]
    t = job_table(jobs, Platform("hb", (sub_accelerator(32, "HB"),), 1e9))
    tenants = np.array(t.tenants)
    vision = t.bandwidth[tenants == "resnet50", 0].mean()
    recommendation = t.bandwidth[np.isin(tenants, ["dlrm", "ncf"]), 0].mean()
    assert recommendation > 5 * vision
    assert np.all(np.isfinite(t.latency)) and np.all(t.latency > 0) and np.all(t.bandwidth > 0)


def test_cache_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = job_group("recommendation", group_size=12, seed=5)
    p = PLATFORMS.create("magma-s2")
    first = job_table(jobs, p, cache_dir=tmp_path)
    doc = json.loads((tmp_path / CACHE_FILE).read_text())
    configs = 2  # HB32 and LB32
    assert len(doc["entries"]) == configs * len({j.nest.shape_key() for j in jobs})

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("profile_job called although the profile is cached")

    analysis.clear_memory_cache()
    monkeypatch.setattr(analysis, "profile_job", fail)
    again = job_table(jobs, p, cache_dir=tmp_path)  # served from the JSON file alone
    assert np.array_equal(again.latency, first.latency) and np.array_equal(again.bandwidth, first.bandwidth)
    # another configuration of the cost model's inputs misses the cache
    other = Platform("lb-big", (sub_accelerator(32, "LB", buffer_kb=220),), 1e9)
    with pytest.raises(AssertionError, match="cached"):
        job_table(jobs[:1], other, cache_dir=tmp_path)
    with pytest.raises(AssertionError, match="cached"):
        job_table(jobs[:1], p, cache_dir=tmp_path, objective="energy")


def test_cache_keys_depend_on_the_inputs() -> None:
    (job,) = _jobs("recommendation", ["ncf/mlp.fc1"])
    hb, lb = analysis.config_key(sub_accelerator(32, "HB")), analysis.config_key(sub_accelerator(32, "LB"))
    assert analysis.config_key(sub_accelerator(32, "HB", 1)) == hb  # the name does not matter
    keys = {analysis.profile_key(job.nest, hb), analysis.profile_key(job.nest, lb),
            analysis.profile_key(job.nest, hb, "energy"),
            analysis.profile_key(_jobs("recommendation", ["ncf/mlp.fc2"])[0].nest, hb)}
    assert len(keys) == 4


# ================================================================================================ zoo entries
def _mlp_macs(widths: list[int]) -> int:
    return sum(a * b for a, b in zip(widths, widths[1:], strict=False))


def test_dlrm_macs() -> None:
    wl = ZOO.create("dlrm")
    assert wl.name == "dlrm" and wl.params["batch"] == 64 and wl.params["dtype_bytes"] == 2
    bottom = _mlp_macs([13, 512, 256, 128])  # 170,496
    interaction = 27 * 27 * 128  # Z Z^T of the bottom output and 26 embeddings of 128
    top = _mlp_macs([128 + 27 * 26 // 2, 1024, 1024, 512, 256, 1])  # 479 inputs
    assert (bottom, interaction, top) == (170_496, 93_312, 2_194_688)
    assert wl.total_macs == 64 * (bottom + interaction + top)
    assert ZOO.create("dlrm", {"batch": 1}).total_macs == 2_458_496
    inter = next(op for op in wl.operators if op.name == "interaction")
    assert dict(inter.dims) == {"B": 64, "M": 27, "N": 27, "K": 128}
    assert len([op for op in wl.operators if op.macs]) == 9


def test_wide_deep_and_ncf_macs() -> None:
    wd = ZOO.create("wide-deep", {"batch": 1})
    assert wd.total_macs == _mlp_macs([1200, 1024, 512, 256, 1]) == 1_884_416
    assert ZOO.create("wide-deep").total_macs == 64 * 1_884_416
    ncf = ZOO.create("ncf", {"batch": 3})
    assert ncf.total_macs == 3 * (_mlp_macs([256, 256, 128, 64]) + (64 + 64) * 1) == 3 * 106_624
    for name in ("dlrm", "wide-deep", "ncf"):
        with pytest.raises(InputError):
            ZOO.create(name, {"batch": 0})
    with pytest.raises(InputError):
        ZOO.create("dlrm", {"top_mlp": "1024-x"})


def test_gpt2_macs() -> None:
    wl = ZOO.create("gpt2")
    assert wl.name == "gpt2" and wl.params["seq_len"] == 1024
    s, h, f = 1024, 768, 3072
    per_layer = 4 * s * h * h + 2 * s * s * h + 2 * s * h * f
    assert per_layer == 8_858_370_048
    assert wl.total_macs == 12 * per_layer
    assert ZOO.create("gpt2", {"layers": 1, "seq_len": 64, "batch": 2}).total_macs == 2 * (
        4 * 64 * h * h + 2 * 64 * 64 * h + 2 * 64 * h * f)
