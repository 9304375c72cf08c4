"""The fusion problem end to end: group selection (the set-partitioning MILP against brute force), the methods
through the harness and the command line (solve, then verify the written solution), and bad input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml
from cli_helpers import ROOT, assert_bad_input, run_dlaopt, solve_and_verify

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.formulations.fusion.select import (
    Candidate,
    brute_force_selection,
    candidate_chains,
    links,
    schedule_cycle,
    select_groups,
)
from dlaopt.io.instance import instance_from_dict, load_instance
from dlaopt.solvers.result import Status
from dlaopt.workload.builder import NetworkBuilder

INSTANCES = ROOT / "instances" / "fusion"


def small_network():
    """conv -> relu -> conv -> conv (+ a branch) -> matmul head: links through absorbable operators."""
    b = NetworkBuilder("net", dtype_bytes=1)
    x = b.input("x", (1, 2, 4, 4))
    a = b.conv2d(x, 2, 3, padding=1, name="c1", activation="relu")
    c = b.conv2d(a, 2, 1, name="c2")
    d = b.conv2d(b.activation(c, "relu", name="r2"), 2, 1, name="c3")
    e = b.conv2d(c, 2, 1, name="c4")
    f = b.add(d, e, name="join")
    return b.build([f])


def test_links_and_chains() -> None:
    wl = small_network()
    g = links(wl)
    assert set(g["c2"]) == {"c3", "c4"} and g["c2"]["c3"] == frozenset({"r2"}) and g["c1"]["c2"] == frozenset()
    chains = {c.ops for c in candidate_chains(wl, 3)}
    assert {("c1",), ("c1", "c2"), ("c1", "c2", "c3"), ("c1", "c2", "c4"), ("c2", "c4")} <= chains
    assert ("c3", "c4") not in chains and all(len(c) <= 3 for c in chains)
    assert {c.ops for c in candidate_chains(wl, 1)} == {("c1",), ("c2",), ("c3",), ("c4",)}


@pytest.mark.parametrize("seed", range(12))
def test_selection_milp_equals_brute_force(seed: int) -> None:
    """Random values (some candidates unusable), with and without a lexicographic secondary figure."""
    rng = random.Random(seed)
    wl = small_network()
    cands = candidate_chains(wl, 3)
    items = ["c1", "c2", "c3", "c4"]
    values = [None if (c.fused and rng.random() < 0.2) else float(rng.randint(1, 12)) for c in cands]
    second = [float(rng.randint(0, 5)) for _ in cands]
    for sec in (None, second):
        sel = select_groups(items, cands, values, secondary=sec, constant=3.0)
        ref = brute_force_selection(items, cands, values, secondary=sec)
        assert ref is not None and sel.status == Status.OPTIMAL
        assert sel.value == pytest.approx(ref[1] + 3.0)
        if sec is not None:
            assert sel.secondary == pytest.approx(ref[2])
        covered = sorted(o for j in sel.chosen for o in cands[j].ops)
        assert covered == sorted(items)


def test_selection_without_cover_is_infeasible() -> None:
    cands = [Candidate(("a",)), Candidate(("a", "b"))]
    sel = select_groups(["a", "b"], cands, [1.0, None])
    assert sel.status == Status.INFEASIBLE and not sel.chosen


def test_network_selection_matches_brute_force_on_exact_values() -> None:
    """On the shipped tiny network: the chosen partition is the brute-force best over the exact candidate values."""
    p = harness.prepare(load_instance(INSTANCES / "tiny-network.yaml"))
    res = harness.solve(p, "exact")
    assert res.status == Status.OPTIMAL and res.verified
    vals = res.metrics["candidate_values"]
    cands = p.data.candidates
    ref = brute_force_selection(p.data.items, cands, [vals[c.label] for c in cands])
    constant = sum(x.value("offchip") for x in p.data.passes.values())
    assert ref is not None and res.objective == pytest.approx(ref[1] + constant)
    lw = harness.solve(p, "layerwise")
    assert lw.verified and res.objective <= lw.objective


def residual_network():
    """c0 -> [a1 -> a2 -> add(skip) -> relu] -> [b1 -> b2 -> add(skip) -> relu] -> c_last: two residual blocks,
    each block's input also its skip."""
    b = NetworkBuilder("resnet-tiny", dtype_bytes=1)
    x = b.input("x", (1, 2, 4, 2))
    y = b.conv2d(x, 2, (3, 1), padding=(1, 0), name="c0", activation="relu")
    for blk in ("a", "b"):
        z = b.conv2d(y, 2, 1, name=f"{blk}1", activation="relu")
        z = b.conv2d(z, 2, (3, 1), padding=(1, 0), name=f"{blk}2")
        y = b.activation(b.add(z, y, name=f"{blk}.add"), "relu", name=f"{blk}.relu")
    out = b.conv2d(y, 2, 1, name="c_last")
    return b.build([out])


def test_residual_links_do_not_jump_across_blocks() -> None:
    """A chain may pass a residual add whose other input comes from before the producer (a2 -> a.add -> a.relu ->
    b1, the skip c0's output), never one whose other input is computed from the producer's own output (a2 ->
    a.add -> a.relu -> b.add -> b.relu -> c_last: b.add's other input is b2's, made from a2's): such a group would
    wait for itself."""
    from dlaopt.formulations.fusion.group import group_from_workload

    wl = residual_network()
    g = links(wl)
    assert g["a2"] == {"b1": frozenset({"a.add", "a.relu"})}
    assert g["b2"] == {"c_last": frozenset({"b.add", "b.relu"})}
    assert set(g["c0"]) == {"a1"}  # not b1 through a.add, whose other input a2 computes from c0's output
    with pytest.raises(ValueError, match="wait for itself"):
        group_from_workload(wl, ["a2", "c_last"])
    group = group_from_workload(wl, ["a2", "b1"])
    (inter,) = group.intermediates
    assert inter.sfu_ops == ("a.add", "a.relu") and inter.side_inputs == ("c0.out",)  # the skip, from main memory


def test_residual_network_exact_equals_evaluator_and_brute_force() -> None:
    from dlaopt.io.onnx import workload_document

    doc = yaml.safe_load((INSTANCES / "tiny-network.yaml").read_text())
    doc["name"] = "tiny-residual"
    doc["workload"] = workload_document(residual_network())
    doc["hardware"]["memories"][1]["capacity_bytes"] = 64
    doc["options"] = {"groups": "auto", "max_group": 2}
    for objective in ("offchip", "energy"):
        doc["objective"] = objective
        p = harness.prepare(instance_from_dict(doc))
        assert all(set(c.ops) != {"a2", "c_last"} for c in p.data.candidates)
        res = harness.solve(p, "exact")
        assert res.status == Status.OPTIMAL and res.verified, res.message
        vals = res.metrics["candidate_values"]
        cands = p.data.candidates
        absorbs = [p.data.absorbed(c.ops) for c in cands]
        ref = brute_force_selection(p.data.items, cands, [vals[c.label] for c in cands], absorbs=absorbs)
        constant = sum(x.value(objective) for x in p.data.passes.values())
        assert ref is not None and res.objective == pytest.approx(ref[1] + constant, rel=1e-9)
        assert any(len(g["ops"]) > 1 for g in res.solution["groups"])


def test_selection_never_absorbs_an_operator_twice_nor_orders_groups_in_a_cycle() -> None:
    """Two branches joined by an add read by two convolutions: a group through the add on either branch would need
    the other branch's output first; both together would wait for each other. The selection (rows and cuts)
    agrees with brute force, and the evaluator rejects such a pair."""
    b = NetworkBuilder("join", dtype_bytes=1)
    x = b.input("x", (1, 2, 2, 2))
    p = b.conv2d(x, 2, 1, name="p")
    q = b.conv2d(x, 2, 1, name="q")
    j = b.add(p, q, name="join")
    u = b.conv2d(j, 2, 1, name="u")
    v = b.conv2d(j, 2, 1, name="v")
    wl = b.build([u, v])
    cands = candidate_chains(wl, 2)
    labels = {c.ops for c in cands}
    assert {("p", "u"), ("q", "v"), ("p", "v"), ("q", "u")} <= labels
    items = ["p", "q", "u", "v"]
    absorbs = [("join",) if c.fused else () for c in cands]

    def cycle(chosen: list[int]) -> list[int] | None:
        fused = [k for k in chosen if cands[k].fused]
        found = schedule_cycle(wl, [(*cands[k].ops, "join") for k in fused])
        return None if found is None else [fused[k] for k in found]

    rng = random.Random(5)
    for _ in range(20):
        values = [float(rng.randint(1, 9)) if c.fused else float(rng.randint(5, 12)) for c in cands]
        sel = select_groups(items, cands, values, absorbs=absorbs, cycle=cycle)
        ref = brute_force_selection(items, cands, values, absorbs=absorbs, cycle=cycle)
        assert ref is not None and sel.status == Status.OPTIMAL and sel.value == pytest.approx(ref[1])
        assert sum(1 for k in sel.chosen if cands[k].fused) <= 1
    # without the rows, the cycle cuts alone find the same optimum
    values = [1.0 if c.fused else 10.0 for c in cands]
    sel = select_groups(items, cands, values, cycle=cycle)
    assert sel.value == pytest.approx(1.0 + 10.0 + 10.0) and sel.stats["schedule_cuts"] >= 1


@pytest.mark.parametrize("name", ["tiny-attention", "tiny-conv-chain"])
def test_exact_equals_exhaustive_method(name: str) -> None:
    p = harness.prepare(load_instance(INSTANCES / f"{name}.yaml"))
    ex = harness.solve(p, "exact")
    bf = harness.solve(p, "exhaustive")
    assert ex.status == Status.OPTIMAL and bf.status == Status.OPTIMAL and ex.verified and bf.verified
    assert ex.objective == pytest.approx(bf.objective, rel=1e-9)
    for method in ("layerwise", "naive-fused", "random"):
        r = harness.solve(p, method)
        assert r.verified and r.objective >= ex.objective * (1 - 1e-9), method


@pytest.mark.parametrize("name", ["tiny-attention", "tiny-network"])
def test_cli_solve_and_verify(name: str, tmp_path: Path) -> None:
    solve_and_verify(INSTANCES / f"{name}.yaml", tmp_path / "sol.json", "-m", "exact")


def test_evaluator_rejects_broken_solutions(tmp_path: Path) -> None:
    inst = load_instance(INSTANCES / "tiny-conv-chain.yaml")
    p = harness.prepare(inst)
    res = harness.solve(p, "exact")
    doc = res.solution_document()
    fused = next(g for g in doc["solution"]["groups"] if len(g["ops"]) > 1)
    # a whole-intermediate tile: does not fit the buffer with its operands
    fused["tile"] = {"N": 1, "P": 1, "Q": 1}
    ev = harness.verify(p, doc)
    assert not ev.feasible and ev.violations
    # an operator left out
    doc2 = res.solution_document()
    doc2["solution"]["groups"] = doc2["solution"]["groups"][:0]
    ev2 = harness.verify(p, doc2)
    assert not ev2.feasible and any("in no group" in v for v in ev2.violations)


def _doc(name: str, **options: object) -> dict:
    doc = yaml.safe_load((INSTANCES / f"{name}.yaml").read_text())
    doc["options"] = {**doc.get("options", {}), **options}
    return doc


@pytest.mark.parametrize(("options", "where"), [
    ({"groups": [["c1", "nope"]]}, "options.groups[0][1]"),
    ({"groups": [["c1", "relu"]]}, "options.groups[0][1]"),
    ({"groups": [["c1"], ["c1", "c2"]]}, "options.groups[1][0]"),
    ({"staging": "sram9"}, "options.staging"),
    ({"staging": "dram"}, "options.staging"),
    ({"buffering": 3}, "options.buffering"),
    ({"granularity": "X"}, "options.granularity"),
])
def test_bad_options_are_located(options: dict, where: str, tmp_path: Path) -> None:
    doc = _doc("tiny-conv-chain", **options)
    with pytest.raises(InputError) as info:
        harness.prepare(instance_from_dict(doc))
    assert where in info.value.render()
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = run_dlaopt("solve", path, "-m", "exact")
    assert_bad_input(run.returncode, run.stderr, where)


def test_non_chain_group_is_bad_input() -> None:
    doc = _doc("tiny-network", groups=[["c1", "c3"]])
    with pytest.raises(InputError) as info:
        harness.prepare(instance_from_dict(doc))
    assert "options.groups[0]" in info.value.render() and "cannot be fused" in info.value.render()


def test_group_that_cannot_fit_is_a_status() -> None:
    """A buffer too small for any tile of the intermediate: the group is infeasible (a status with its reason, not
    an exception), so its operators run layer by layer; a buffer too small for anything leaves no solution."""
    doc = _doc("tiny-attention")
    doc["hardware"]["memories"][1]["capacity_bytes"] = 4
    p = harness.prepare(instance_from_dict(doc))
    res = harness.solve(p, "exact")
    assert res.status == Status.OPTIMAL and res.verified and res.metrics["fused_groups"] == 0
    assert "no outer tile fits" in res.message
    assert res.metrics["candidate_values"]["L + A"] is None
    doc["hardware"]["memories"][1]["capacity_bytes"] = 1
    res2 = harness.solve(harness.prepare(instance_from_dict(doc)), "exact")
    assert res2.status == Status.INFEASIBLE and "covers" in res2.message
