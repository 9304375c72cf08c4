"""Bank mapping with tensors forced off chip (option ``off_chip_tensors``, e.g. from a tensor-pinning stage): exact
against brute force, exact <= propagate <= local, every method lists the forced tensors in ``off_chip``, the
evaluator rejects a mapping that omits one, the MILP prices them like the evaluator, the functional check still
passes, and located errors for bad names. The brute force and the all-methods check are those of
tests/test_bankmap_mapping.py."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml
from test_bankmap_mapping import (
    HAND_GRAPHS,
    RANDOM_CASES,
    TOL,
    _check_all,
    _exact,
    _hand_model,
    _random_model,
    tiny_relu_conv,
)
from test_bankmap_problem import SMALL

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.formulations.bankmap.evaluate import BankMappingError, evaluate, functional_check, validate_mapping
from dlaopt.formulations.bankmap.exact import build_milp
from dlaopt.formulations.bankmap.layouts import BankMapping, LayoutModel, build_layout_model
from dlaopt.formulations.bankmap.methods import local, local_off_chip, propagate
from dlaopt.formulations.bankmap.problem import BankMapData
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload.builder import NetworkBuilder
from dlaopt.workload.graph import Workload

DET = SolveOptions(threads=1, deterministic=True, seed=0)


def _read_produced(lm: LayoutModel) -> list[str]:
    """Produced tensors some operator reads (forcing one changes copies and spills), schedule order."""
    wl = lm.workload
    read = {t for op in wl.operators for t in op.inputs}
    return [t for t in lm.tensor_names if lm.producer(t) is not None and t in read]


def _forced(lm: LayoutModel, seed: int) -> LayoutModel:
    """``lm`` with a random non-empty half of its read produced tensors forced off chip."""
    cands = _read_produced(lm)
    rng = np.random.default_rng(seed)
    k = max(1, len(cands) // 2)
    pick = rng.choice(len(cands), size=k, replace=False)
    return replace(lm, off_chip_tensors=frozenset(cands[int(i)] for i in pick))


# ============================================================================================ methods vs brute force
@pytest.mark.parametrize("name", sorted(HAND_GRAPHS))
@pytest.mark.parametrize("w", [4.0, 1.0])
@pytest.mark.parametrize("roomy", [False, True], ids=["mixed", "roomy"])
def test_hand_graphs_with_forced_tensors(name: str, w: float, roomy: bool) -> None:
    """Mixed bank sizes, and banks where everything fits (forcing then turns on-chip copies into off-chip ones)."""
    lm = _forced(_hand_model(name, bank_bytes=1 << 20 if roomy else None), seed=len(name))
    assert lm.off_chip_tensors
    _check_all(lm, w, brute=True)


@pytest.mark.parametrize(("seed", "banks"), RANDOM_CASES[:10])
def test_random_graphs_with_forced_tensors(seed: int, banks: int) -> None:
    lm = _random_model(seed, banks)
    if not _read_produced(lm):
        pytest.skip("no produced tensor is read")
    _check_all(_forced(lm, seed), 4.0, brute=True)


def conv_relu_matmul() -> Workload:
    """x (1,4,4,4) -> 1x1 conv -> p (channels, layout 1) -> relu -> q -> matmul with a (4, 3) weight (reads q along
    its last axis, 3). One byte per element: p and q hold 64 bytes. The relu decides which tensor is copied: axis 1
    copies q 1 -> 3, axis 3 copies p 1 -> 3 (equal cost when both are resident)."""
    b = NetworkBuilder("crm", dtype_bytes=1)
    x = b.input("x", (1, 4, 4, 4))
    p = b.conv2d(x, 4, 1, name="conv")
    q = b.activation(p, "relu", name="relu")
    y = b.matmul(q, b.weight("wm", (4, 3)), name="mm")
    return b.build([y])


@pytest.mark.parametrize(("forced", "axis"), [("conv.out", 1), ("relu.out", 3)])
def test_forcing_decides_which_tensor_is_copied(forced: str, axis: int) -> None:
    """B = 2, everything fits, w = 4. The forced tensor spills (64 written + 64 read = 128 -> 512) and its copy would
    cost 4·64 = 256; the other tensor's copy is on chip (64): the optimum copies the resident one, objective 576."""
    lm = build_layout_model(conv_relu_matmul(), 2, 1 << 20, off_chip_tensors=[forced])
    mapping, rep = _exact(lm)
    assert lm.op_by_name()["relu"].choices[mapping.choices["relu"]].outputs == (axis,)
    assert (rep.on_chip_copy_bytes, rep.off_chip_copy_bytes, rep.spill_bytes, rep.objective) == (64, 0, 128, 576.0)
    _check_all(lm, 4.0, brute=True)


def test_every_method_lists_the_forced_tensors() -> None:
    lm = _forced(_hand_model("residual"), seed=0)
    forced = lm.off_chip_tensors
    assert local(lm).off_chip == local_off_chip(lm) | forced
    assert propagate(lm).off_chip == forced
    assert _exact(lm)[0].off_chip == forced


def test_forcing_everything_that_is_read_forces_it_all() -> None:
    """With every read produced tensor forced, no produced tensor that is read stays resident in any method."""
    lm = _hand_model("concat_branch", bank_bytes=1 << 20)
    lm = replace(lm, off_chip_tensors=frozenset(_read_produced(lm)))
    _check_all(lm, 4.0, brute=True)
    rep = evaluate(lm, _exact(lm)[0])
    assert {s.tensor for s in rep.spills} >= lm.off_chip_tensors
    assert all(not c.on_chip for c in rep.copies if c.tensor in lm.off_chip_tensors)


# ================================================================================================ evaluator and MILP
def test_hand_computed_forced_relu_output() -> None:
    """tiny_relu_conv, B = 4, 16-byte banks (see test_hand_computed_relu_conv_graph): relu on axis 2, x stored in 1.
    Without forcing: copies x 1 -> 2 and a 2 -> 1 on chip, objective 64. With a = relu.out forced off chip: the copy
    of a goes through main memory (4·32) and a spills: written 32 + read by the conv 32 = 64 -> 4·64; x's copy stays
    on chip (32): objective 32 + 128 + 256 = 416. Relu on axis 1: no copy, the spill only: 256."""
    lm = build_layout_model(tiny_relu_conv(), 4, 16, off_chip_tensors=["relu.out"])
    relu = lm.op_by_name()["relu"]
    axis2 = next(i for i, ch in enumerate(relu.choices) if ch.outputs == (2,))
    axis1 = next(i for i, ch in enumerate(relu.choices) if ch.outputs == (1,))
    homes = {"x": 1, "conv.w": 1}
    m = BankMapping({"relu": axis2, "conv": 0}, homes, frozenset({"relu.out"}))
    rep = evaluate(lm, m)
    assert rep.violations == ()
    assert (rep.on_chip_copy_bytes, rep.off_chip_copy_bytes, rep.spill_bytes, rep.objective) == (32, 32, 64, 416.0)
    assert {(c.tensor, c.on_chip) for c in rep.copies} == {("x", True), ("relu.out", False)}
    best = BankMapping({"relu": axis1, "conv": 0}, homes, frozenset({"relu.out"}))
    assert evaluate(lm, best).objective == 256.0
    assert _exact(lm)[1].objective == 256.0
    milp = build_milp(lm)
    for mapping in (m, best):
        v = milp.encode(mapping)
        assert milp.model.max_violation(v) <= 1e-9
        assert milp.model.objective_value(v) == pytest.approx(evaluate(lm, mapping).objective)
        assert milp.decode(v) == mapping


def test_a_mapping_omitting_a_forced_tensor_is_rejected() -> None:
    lm = _forced(_hand_model("residual", bank_bytes=1 << 20), seed=3)
    good = propagate(lm)
    assert validate_mapping(lm, good) == []
    missing = sorted(lm.off_chip_tensors)[0]
    bad = BankMapping(good.choices, good.homes, good.off_chip - {missing})
    rep = evaluate(lm, bad)
    assert rep.violations == (f"tensor '{missing}' must be off chip (options.off_chip_tensors) but the mapping "
                              f"keeps it resident",)
    # the cost is still that of an off-chip tensor: the same as the complete mapping's
    assert rep.objective == evaluate(lm, good).objective


def test_milp_prices_forced_tensors_like_the_evaluator() -> None:
    for seed, banks in RANDOM_CASES[:5]:
        lm = _random_model(seed, banks)
        if not _read_produced(lm):
            continue
        lm = _forced(lm, seed)
        milp = build_milp(lm, 3.0)
        rng = np.random.default_rng(seed)
        for _ in range(20):
            m = BankMapping({o.name: int(rng.integers(len(o.choices))) for o in lm.ops},
                            {t: int(rng.integers(lm.rank(t))) for t in lm.free_tensors}, lm.off_chip_tensors)
            v = milp.encode(m)
            assert milp.model.max_violation(v) <= 1e-9
            assert milp.model.objective_value(v) == pytest.approx(evaluate(lm, m, 3.0).objective, abs=TOL)


def test_functional_check_with_forced_tensors() -> None:
    """Forcing a tensor off chip changes where it is charged, not the data: the banked execution still matches, and a
    dropped copy of a forced tensor is still detected."""
    lm = _forced(_hand_model("chain", bank_bytes=1 << 20), seed=1)
    m = local(lm)
    rep = evaluate(lm, m)
    assert rep.violations == ()
    assert functional_check(lm, m).ok
    for c in rep.copies:
        assert not functional_check(lm, m, drop_copies=[(c.tensor, c.layout)]).ok


def test_layout_model_refuses_bad_names() -> None:
    wl = tiny_relu_conv()
    with pytest.raises(BankMappingError, match="no tensor named 'nope'"):
        build_layout_model(wl, 4, 16, off_chip_tensors=["nope"])
    with pytest.raises(BankMappingError, match="graph input or weight"):
        build_layout_model(wl, 4, 16, off_chip_tensors=["conv.w"])


# ================================================================================================ instance option
def _doc(off_chip: list[str] | None = None, **options: object) -> dict:
    doc = yaml.safe_load(SMALL.read_text())
    if off_chip is not None:
        options["off_chip_tensors"] = off_chip
    doc["options"] = {**doc.get("options", {}), **options}
    return doc


def test_harness_with_forced_tensors() -> None:
    """Every method verified (functional check included), the MILP's objective equal to the evaluator's (the harness
    checks it), exact <= propagate <= local, the forced tensors in every solution document, and a document that
    drops one fails verification."""
    forced = ["r1", "a", "t"]
    p = harness.prepare(instance_from_dict(_doc(forced)))
    assert isinstance(p.data, BankMapData) and p.data.off_chip_tensors == frozenset(forced)
    assert p.problem.describe(p.data)["forced_off_chip_tensors"] == 3
    results = {r.method: r for r in harness.compare(p, options=DET)}
    for r in results.values():
        assert r.verified, (r.method, r.message)
        assert r.metrics["functional_check"] == "passed"
        assert set(forced) <= set(r.solution["off_chip"])
    assert results["exact"].status == Status.OPTIMAL
    assert results["exact"].objective <= results["propagate"].objective + TOL
    assert results["propagate"].objective <= results["local"].objective + TOL
    free = {r.method: r for r in harness.compare(harness.prepare(instance_from_dict(_doc())), options=DET)}
    assert results["exact"].objective > free["exact"].objective  # forcing costs something here

    doc = harness.solve(p, "propagate", options=DET).solution_document()
    assert harness.verify(p, doc).feasible
    doc["solution"]["off_chip"] = [t for t in doc["solution"]["off_chip"] if t != "a"]
    ev = harness.verify(p, doc)
    assert not ev.feasible
    assert ev.violations == ["tensor 'a' must be off chip (options.off_chip_tensors) but the mapping keeps it "
                             "resident"]


@pytest.mark.parametrize(("names", "index", "message"), [
    (["r1", "nope"], 1, "no tensor named 'nope'"),
    (["wf"], 0, "graph input or weight"),
    (["x"], 0, "graph input or weight"),
])
def test_bad_names_are_located(names: list[str], index: int, message: str) -> None:
    with pytest.raises(InputError, match=message) as exc:
        harness.prepare(instance_from_dict(_doc(names)))
    assert exc.value.path == ("options", "off_chip_tensors", index)
    assert exc.value.expected == "the name of a tensor some operator produces"


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(InputError) as exc:
        instance_from_dict(_doc(["r1", "r1"]))
    assert exc.value.path[:2] == ("options", "off_chip_tensors")


def test_options_live_in_the_prepared_data() -> None:
    """The problem object is shared by every instance: preparing a second instance must not change the first's
    weight (nor its forced tensors)."""
    p4 = harness.prepare(instance_from_dict(_doc(["a"], offchip_weight=4.0)))
    p1 = harness.prepare(instance_from_dict(_doc(offchip_weight=1.0)))
    assert p4.problem is p1.problem
    sol = p4.problem.run_heuristic("local", p4.data, DET)
    rep4 = evaluate(p4.data, sol, 4.0)
    assert p4.problem.evaluate(p4.data, sol).objective == pytest.approx(rep4.objective)
    assert p1.problem.evaluate(p1.data, local(p1.data)).objective == pytest.approx(
        evaluate(p1.data, local(p1.data), 1.0).objective)
    assert (p4.data.offchip_weight, p1.data.offchip_weight) == (4.0, 1.0)
    assert p1.data.off_chip_tensors == frozenset()
