"""Reuse of solved layers (seed 001 §5.3.1 warm start): similarity, adapting a mapping to a neighbour's shape, the
wave plan, GAMMA's initial population, and the exact method with reuse equal to the exact method without it and to
the enumeration of every mapping."""

from __future__ import annotations

import functools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mapping_cases import ARCHS, layer_from, pointwise_workload_doc, random_mapping, small_hardware_doc

from dlaopt import harness
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import complete_mapping, fit_capacity, gamma, random_search
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import mapping_errors
from dlaopt.formulations.mapping.reuse import ReplayBuffer, Solved, adapt, layer_distance, reuse_plan
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status

DET = SolveOptions(threads=1, deterministic=True, seed=0)


def conv(c: int, k: int, hw: int, r: int = 1, stride: int = 1) -> LoopNest:
    return layer_from(lambda b, x: b.conv2d(x, k, r, stride=stride, padding=(r - 1) // 2), (1, c, hw, hw))


# ------------------------------------------------------------------------------------------------ similarity
def test_edit_distance_counts_the_dimensions_that_differ() -> None:
    # the seed's walk-through: workload 3 differs from workload 1 in C only, from workload 2 in K, Y and X
    w1, w2, w3 = conv(8, 16, 8), conv(16, 32, 4), conv(16, 16, 8)
    assert layer_distance(w3, w1)[0] == 1
    assert layer_distance(w3, w2)[0] == 3
    assert layer_distance(w1, w1) == (0, 0.0)
    assert layer_distance(conv(8, 16, 8, stride=2), conv(8, 16, 8))[0] >= 2  # P, Q and the input projection
    buf = ReplayBuffer()
    for w in (w2, w1):
        buf.add(Solved(w, complete_mapping(w, ARCHS["glb-pe"]())))
    assert buf.nearest(w3)[0].nest is w1


# ------------------------------------------------------------------------------------------------ adaptation
def _feasible(nest: LoopNest, arch) -> bool:  # noqa: ANN001
    return fit_capacity(nest, arch, complete_mapping(nest, arch)) is not None


layer_shapes = st.tuples(st.sampled_from([1, 2, 3, 4, 6, 8]), st.sampled_from([1, 2, 4, 5, 6, 8]),
                         st.sampled_from([2, 3, 4, 6, 8]), st.sampled_from([1, 3]), st.sampled_from([1, 2]))


@settings(max_examples=60, deadline=None)
@given(arch_name=st.sampled_from(sorted(ARCHS)), src=layer_shapes, dst=layer_shapes, seed=st.integers(0, 10**6),
       objective=st.sampled_from(["energy", "latency", "edp"]))
def test_adapt_always_yields_a_valid_mapping_of_the_target(arch_name: str, src: tuple, dst: tuple, seed: int,
                                                          objective: str) -> None:
    arch = ARCHS[arch_name]()
    source, target = conv(*src), conv(*dst)
    m = random_mapping(source, arch, random.Random(seed))
    out = adapt(m, source, target, arch, objective)
    if not _feasible(target, arch):
        assert out is None
        return
    assert out is not None
    assert not mapping_errors(target, arch, out)
    assert evaluate_mapping(target, arch, out).valid
    # loop orders are inherited
    assert out.orders == m.orders


@settings(max_examples=25, deadline=None)
@given(arch_name=st.sampled_from(sorted(ARCHS)), shape=layer_shapes, seed=st.integers(0, 10**6))
def test_adapting_to_the_same_layer_never_loses(arch_name: str, shape: tuple, seed: int) -> None:
    arch = ARCHS[arch_name]()
    nest = conv(*shape)
    m = fit_capacity(nest, arch, random_mapping(nest, arch, random.Random(seed)))
    if m is None or not evaluate_mapping(nest, arch, m).valid:
        return
    out = adapt(m, nest, nest, arch, "edp")
    assert out is not None
    assert evaluate_mapping(nest, arch, out).edp <= evaluate_mapping(nest, arch, m).edp * (1 + 1e-12)


# ------------------------------------------------------------------------------------------------ plan
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_plan_parents_come_from_earlier_waves(workers: int) -> None:
    nests = [conv(c, k, hw) for c, k, hw in [(8, 8, 8), (8, 16, 8), (16, 16, 4), (16, 32, 4), (32, 32, 2),
                                              (32, 64, 2), (4, 4, 8)]]
    order, parent = reuse_plan(nests, (), workers)
    assert sorted(order) == list(range(len(nests)))
    pos = {i: k for k, i in enumerate(order)}
    assert sum(p is None for p in parent) == workers
    for i, p in enumerate(parent):
        if p is not None:
            assert pos[p] // workers < pos[i] // workers  # an earlier wave
            closest = min(layer_distance(nests[i], nests[j]) for j in order[: pos[i] // workers * workers])
            assert layer_distance(nests[i], nests[p]) == closest
    assert reuse_plan(nests, (), workers) == (order, parent)  # deterministic
    order2, parent2 = reuse_plan(nests, (0, 3), workers)  # layers already solved start every wave
    assert sorted(order2) == [1, 2, 4, 5, 6] and all(parent2[i] is not None for i in order2)


# ------------------------------------------------------------------------------------------------ GAMMA
def test_gamma_initial_population_keeps_the_best_given_mapping() -> None:
    arch = ARCHS["glb-pe-mac"]()
    nest = conv(4, 6, 4, 3)
    best = random_search(nest, arch, "edp", samples=400, seed=7)  # a good mapping GAMMA's short run rarely finds
    assert best is not None
    v = evaluate_mapping(nest, arch, best).edp
    m = gamma(nest, arch, "edp", population=6, generations=2, seed=1, initial=[best])
    assert m is not None and evaluate_mapping(nest, arch, m).edp <= v * (1 + 1e-12)
    # without initial mappings, nothing changes
    a = gamma(nest, arch, "edp", population=6, generations=2, seed=3)
    b = gamma(nest, arch, "edp", population=6, generations=2, seed=3, initial=())
    assert a == b


# ------------------------------------------------------------------------------------------------ exact with reuse
CONVS = [("c1", "x", "a", 2, 2), ("c2", "a", "b", 2, 3), ("c3", "b", "c", 3, 2)]  # a few thousand mappings


def network_doc(objective: str, **options: object) -> dict:
    return {"problem": "mapping", "name": "similar-pointwise", "objective": objective,
            "workload": pointwise_workload_doc("pw", 2, CONVS), "hardware": small_hardware_doc(),
            "options": {"workers": 1, "random_samples": 40, "ga_population": 8, "ga_generations": 3, **options}}


@functools.cache
def brute(objective: str) -> harness.Result:
    """The enumeration of every mapping of every layer (the ground truth)."""
    return harness.solve(instance_from_dict(network_doc(objective)), "exhaustive", options=DET)


@pytest.mark.parametrize("objective", ["energy", "latency", "edp"])
def test_exact_with_reuse_equals_without_and_exhaustive(objective: str, tmp_path) -> None:  # noqa: ANN001
    off = harness.solve(instance_from_dict(network_doc(objective, exact_tuning={"reuse": False})), "exact",
                        options=DET)
    brute_ = brute(objective)
    on = harness.solve(instance_from_dict(network_doc(objective, cache_dir=str(tmp_path))), "exact", options=DET)
    again = harness.solve(instance_from_dict(network_doc(objective, cache_dir=str(tmp_path))), "exact", options=DET)
    for r in (off, brute_, on, again):
        assert r.status == Status.OPTIMAL and r.verified, r.message
    rtol = 2e-6 if objective == "edp" else 1e-9
    assert on.objective == pytest.approx(off.objective, rel=rtol)
    assert on.objective == pytest.approx(brute_.objective, rel=rtol)
    assert again.objective == pytest.approx(on.objective, rel=1e-12)
    assert "reuse" not in off.metrics
    assert on.metrics["reuse"]["layers_warm_started"] >= 1 and not on.metrics["reuse"]["layers_from_cache"]
    assert len(again.metrics["reuse"]["layers_from_cache"]) == len(CONVS)
    assert again.bound is not None and again.bound <= again.objective * (1 + 1e-9)


def test_the_cache_of_one_objective_is_never_used_for_another(tmp_path) -> None:  # noqa: ANN001
    harness.solve(instance_from_dict(network_doc("energy", cache_dir=str(tmp_path))), "exact", options=DET)
    lat = harness.solve(instance_from_dict(network_doc("latency", cache_dir=str(tmp_path))), "exact", options=DET)
    assert lat.metrics["reuse"]["layers_from_cache"] == []
    assert lat.objective == pytest.approx(brute("latency").objective, rel=1e-9)


def test_ga_with_reuse_is_verified_and_seeded(tmp_path) -> None:  # noqa: ANN001
    res = harness.solve(instance_from_dict(network_doc("edp", workers=2)), "ga", options=DET)
    assert res.verified and res.status == Status.FEASIBLE
    seeded = [L["solver"].get("warm_starts") for L in res.solution["layers"].values() if "solver" in L]
    assert any(seeded)
    assert not math.isnan(res.objective)


def test_exact_with_reuse_in_workers_equals_exhaustive(tmp_path) -> None:  # noqa: ANN001
    on = harness.solve(instance_from_dict(network_doc("energy", workers=2, cache_dir=str(tmp_path))), "exact",
                       options=DET)
    assert on.status == Status.OPTIMAL and on.verified
    assert on.objective == pytest.approx(brute("energy").objective, rel=1e-9)
