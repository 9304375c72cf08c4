"""User constraints of bank mapping (``layout``, ``layouts``, ``off_chip``): on small graphs the exact optimum equals
a brute force over the constrained space, checked by this file's own reading of the constraints; every heuristic
meets them or reports that it found nothing; the evaluator names a broken one; an infeasible set is reported as
status infeasible with the constraints that cannot hold together (checked to be an irreducible infeasible subset
by brute force); malformed constraints are located exit-2 errors; the shipped constrained instance solves."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from cli_helpers import assert_bad_input, run_dlaopt, solve_and_verify
from click.testing import CliRunner
from test_bankmap_mapping import HAND_GRAPHS, mixed_bank_bytes, random_graph

from dlaopt import harness
from dlaopt.cli import cli
from dlaopt.formulations.bankmap.evaluate import evaluate
from dlaopt.formulations.bankmap.exact import solve_exact
from dlaopt.formulations.bankmap.layouts import BankMapping
from dlaopt.formulations.bankmap.methods import local, propagate
from dlaopt.formulations.bankmap.problem import BankMapData, BankMapProblem
from dlaopt.formulations.base import HeuristicFailure
from dlaopt.hardware.presets import banked
from dlaopt.io.instance import Instance, instance_from_dict, load_instance
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import bankmap as spec
from dlaopt.specs.constraints import parse_constraints
from dlaopt.workload.graph import Workload

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "instances" / "bankmap" / "residual-block-inline.yaml"
SHIPPED = ROOT / "instances" / "bankmap" / "residual-block-constrained.yaml"
EXACT = SolveOptions(seed=0, threads=1, deterministic=True, mip_rel_gap=0.0)
TOL = 1e-6
HEURISTICS = ("local", "propagate")
P = BankMapProblem()

Record = Mapping[str, Any]


# ================================================================================================ instances
def make_instance(wl: Workload, banks: int, bank_bytes: int, records: Sequence[Record],
                  off_chip: Sequence[str] = (), w: float = 4.0) -> Instance:
    """``wl`` on ``banks`` banks of ``bank_bytes`` bytes (preset ``banked``) under ``records``."""
    acc = banked(banks=banks, bank_kb=bank_bytes / 1024, rows=banks, cols=banks)
    options = {**spec.DEFAULT_OPTIONS, "offchip_weight": w, "off_chip_tensors": list(off_chip)}
    return Instance("bankmap", wl.name, wl, acc, "copy_cost", options, constraints=parse_constraints(records))


def small_doc(records: Sequence[Record] = (), **options: Any) -> dict[str, Any]:
    doc = yaml.safe_load(SMALL.read_text())
    if records:
        doc["constraints"] = [dict(r) for r in records]
    if options:
        doc["options"] = {**doc.get("options", {}), **options}
    return doc


# ================================================================================================ this file's reading
def axes_of(r: Record) -> set[int]:
    if r["kind"] == "layout":
        return {int(r["layout"]["bank_axis"])}
    return {int(lay["bank_axis"]) for lay in r["allowed"]}


def meets(wl: Workload, banks: int, bank_bytes: int, records: Sequence[Record], m: BankMapping,
          homes: Mapping[str, int]) -> bool:
    """Does mapping ``m`` (tensor homes ``homes``) meet every record, read here from the records alone: a layout
    record's tensor sits in one of its axes, fits a bank there (``ceil(dim / B) · bytes / dim``) and is not off
    chip; an off_chip record's tensor is in ``m.off_chip``."""
    for r in records:
        t = r["tensor"]
        if r["kind"] == "off_chip":
            if t not in m.off_chip:
                return False
            continue
        a = homes[t]
        shape, nbytes = wl.tensors[t].shape, wl.tensors[t].size_bytes
        if a not in axes_of(r) or math.ceil(shape[a] / banks) * (nbytes // shape[a]) > bank_bytes or t in m.off_chip:
            return False
    return True


def space(data: BankMapData, records: Sequence[Record], option_off: Sequence[str] = (),
          only: Collection[str] | None = None) -> Iterator[tuple[BankMapping, dict[str, int]]]:
    """Every mapping of the model (operator choices x free-tensor homes), with the tensors the option and the
    off_chip records force listed off chip, and its tensor homes. With ``only`` (tensor names), the decisions that
    give no tensor of ``only`` its home are left at their first value (the records read nothing else)."""
    wl = data.workload
    forced = frozenset(option_off) | {r["tensor"] for r in records if r["kind"] == "off_chip"}
    names = [o.name for o in data.ops]
    free = list(data.free_tensors)
    outs = [wl.operators[o.index].outputs for o in data.ops]

    def span(n: int, tensors: Sequence[str]) -> range:
        return range(n) if only is None or set(tensors) & set(only) else range(1)

    ranges = [span(len(o.choices), ts) for o, ts in zip(data.ops, outs, strict=True)]
    ranges += [span(len(wl.tensors[t].shape), [t]) for t in free]
    for combo in itertools.product(*ranges):
        homes = dict(zip(free, combo[len(names):], strict=True))
        for o, c, ts in zip(data.ops, combo, outs, strict=False):
            homes.update(zip(ts, o.choices[c].outputs, strict=True))
        yield BankMapping(dict(zip(names, combo[:len(names)], strict=True)),
                          dict(zip(free, combo[len(names):], strict=True)), forced), homes


def brute_force(data: BankMapData, records: Sequence[Record], option_off: Sequence[str] = ()) -> float | None:
    """The least objective over the constrained space (``None``: it is empty)."""
    wl, best = data.workload, None
    for m, homes in space(data, records, option_off):
        if meets(wl, data.banks, data.bank_bytes, records, m, homes):
            obj = evaluate(data, m, data.offchip_weight, validate=False).objective
            best = obj if best is None else min(best, obj)
    return best


def feasible(data: BankMapData, records: Sequence[Record], option_off: Sequence[str] = ()) -> bool:
    """Whether some mapping meets ``records``: enumerated over the decisions that set a constrained tensor's home
    (the records read nothing else; every other decision is free)."""
    wl = data.workload
    only = {r["tensor"] for r in records}
    return any(meets(wl, data.banks, data.bank_bytes, records, m, h)
               for m, h in space(data, records, option_off, only))


def homes_of(data: BankMapData, m: BankMapping) -> dict[str, int]:
    wl = data.workload
    homes = dict(m.homes)
    for o in data.ops:
        homes.update(zip(wl.operators[o.index].outputs, o.choices[m.choices[o.name]].outputs, strict=True))
    return homes


# ================================================================================================ random constraints
def random_records(data: BankMapData, kind: str, rng: np.random.Generator) -> list[dict[str, Any]]:
    """One to three records of ``kind`` (or of any kind: ``mixed``); layouts are drawn mostly among those the
    tensor's producer can write, so that both feasible and infeasible sets come up."""
    wl = data.workload
    names = list(data.tensor_names)
    read = {t for op in wl.operators for t in op.inputs}
    produced = [t for t in names if t in wl.producer and t in read]
    writes: dict[str, set[int]] = {}
    for o in data.ops:
        for ch in o.choices:
            for t, a in zip(wl.operators[o.index].outputs, ch.outputs, strict=True):
                writes.setdefault(t, set()).add(a)
    out: list[dict[str, Any]] = []
    for _ in range(int(rng.integers(1, 4))):
        k = str(rng.choice(["layout", "layouts", "off_chip"])) if kind == "mixed" else kind
        if k == "off_chip":
            if produced:
                out.append({"kind": "off_chip", "tensor": produced[int(rng.integers(len(produced)))]})
            continue
        t = names[int(rng.integers(len(names)))]
        shape = wl.tensors[t].shape
        likely = sorted(writes.get(t, set(range(len(shape)))))
        pool = likely if rng.random() < 0.8 else list(range(len(shape)))
        if k == "layout":
            a = int(pool[int(rng.integers(len(pool)))])
            out.append({"kind": "layout", "tensor": t, "layout": {"shape": list(shape), "bank_axis": a}})
        else:
            n = int(rng.integers(1, len(pool) + 1))
            pick = sorted(int(v) for v in rng.choice(pool, size=n, replace=False))
            out.append({"kind": "layouts", "tensor": t, "allowed": [{"bank_axis": a} for a in pick]})
    return out


GRAPHS = {
    **HAND_GRAPHS,
    **{f"random{s}/{b}": (lambda s=s: random_graph(s), b) for s, b in ((0, 2), (1, 3), (9, 2), (25, 3), (29, 4))},
}


def _iis_check(data: BankMapData, records: Sequence[Record], conflict: Sequence[str],
               option_off: Sequence[str] = ()) -> None:
    """``conflict`` (labels) names an irreducible infeasible subset of ``records``, by brute force."""
    labels = [c.label for c in parse_constraints(records)]
    chosen = [records[labels.index(lab)] for lab in conflict]
    assert chosen, conflict
    assert not feasible(data, chosen, option_off)
    for i in range(len(chosen)):
        assert feasible(data, chosen[:i] + chosen[i + 1:], option_off), (conflict, i)


@pytest.mark.parametrize("kind", ["layout", "layouts", "off_chip", "mixed"])
@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_exact_equals_brute_force_and_heuristics_comply(graph: str, kind: str) -> None:
    """Per graph and kind, three random constraint sets: feasible -> exact proven optimal at the brute-force optimum
    and every heuristic's mapping meets the constraints (read here) and the evaluator's checks; infeasible ->
    status infeasible for every method, the MILP proves it on its own, the heuristics fail, and the reported
    conflict is an irreducible infeasible subset."""
    make, banks = GRAPHS[graph]
    wl = make()
    bank_bytes = mixed_bank_bytes(wl, banks)
    base = P.prepare(make_instance(wl, banks, bank_bytes, []))
    for seed in range(3):
        rng = np.random.default_rng([seed, len(graph), ["layout", "layouts", "off_chip", "mixed"].index(kind)])
        records = random_records(base, kind, rng)
        p = harness.prepare(make_instance(wl, banks, bank_bytes, records))
        data = p.data
        best = brute_force(data, records)
        if best is None:
            assert P.infeasibility_reason(data) is not None
            assert solve_exact(data, data.offchip_weight, options=EXACT).status == Status.INFEASIBLE  # the MILP
            for h in HEURISTICS:
                with pytest.raises(HeuristicFailure):
                    P.run_heuristic(h, data, EXACT)
            with pytest.raises(HeuristicFailure):
                local(data)
            with pytest.raises(HeuristicFailure):
                propagate(data)
            for method in ("exact", *HEURISTICS):
                assert harness.solve(p, method, options=EXACT, explain=False).status == Status.INFEASIBLE
            res = harness.solve(p, "exact", options=EXACT)
            assert res.conflict is not None
            _iis_check(data, records, res.conflict)
            continue
        assert P.infeasibility_reason(data) is None, records
        res = harness.solve(p, "exact", options=EXACT)
        assert res.status == Status.OPTIMAL and res.verified, res.message
        assert res.objective == pytest.approx(best, abs=TOL)
        m = P.solution_from_dict(data, res.solution)
        assert meets(wl, banks, bank_bytes, records, m, homes_of(data, m))
        for h in HEURISTICS:
            sol = P.run_heuristic(h, data, EXACT)
            ev = P.evaluate(data, sol)
            assert ev.feasible, (h, records, ev.violations)
            assert meets(wl, banks, bank_bytes, records, sol, homes_of(data, sol)), (h, records)
            assert ev.objective is not None and ev.objective >= best - TOL


def test_constraints_bind_on_some_random_sets() -> None:
    """The random sets above are not all trivial: some cost more than the unconstrained optimum, some are
    infeasible."""
    wl, banks = HAND_GRAPHS["residual"][0](), HAND_GRAPHS["residual"][1]
    bank_bytes = mixed_bank_bytes(wl, banks)
    base = P.prepare(make_instance(wl, banks, bank_bytes, []))
    free_best = brute_force(base, [])
    assert free_best is not None
    outcomes = set()
    for seed in range(12):
        records = random_records(base, "mixed", np.random.default_rng(seed))
        best = brute_force(P.prepare(make_instance(wl, banks, bank_bytes, records)), records)
        outcomes.add("infeasible" if best is None else "costlier" if best > free_best + TOL else "same")
    assert {"infeasible", "costlier"} <= outcomes


# ================================================================================================ hand cases
def test_feasible_constraints_on_the_small_block() -> None:
    """x arrives banked by rows, a stays in main memory, t by rows or columns: every method verified with the
    functional check, exact <= propagate <= local, each mapping meets the constraints, the optimum is the brute
    force's and costs more than the unconstrained one, and the solution document lists the constraints."""
    records = [{"kind": "layout", "tensor": "x", "layout": {"shape": [1, 4, 10, 10], "bank_axis": 2}},
               {"kind": "off_chip", "tensor": "a"},
               {"kind": "layouts", "tensor": "t", "allowed": [{"bank_axis": 1}, {"bank_axis": 2}]}]
    p = harness.prepare(instance_from_dict(small_doc(records)))
    results = {r.method: r for r in harness.compare(p, options=EXACT)}
    for r in results.values():
        assert r.verified, (r.method, r.message)
        assert r.metrics["functional_check"] == "passed"
        assert r.solution["layouts"]["x"]["bank_axis"] == 2
        assert r.solution["layouts"]["t"]["bank_axis"] in (1, 2)
        assert "a" in r.solution["off_chip"]
        assert [c["at"] for c in r.constraints] == ["constraints[0] (layout)", "constraints[1] (off_chip)",
                                                    "constraints[2] (layouts)"]
    assert results["exact"].status == Status.OPTIMAL
    assert results["exact"].objective <= results["propagate"].objective + TOL
    assert results["propagate"].objective <= results["local"].objective + TOL
    free = harness.solve(harness.prepare(instance_from_dict(small_doc())), "exact", options=EXACT)
    assert results["exact"].objective > free.objective
    doc = results["exact"].solution_document()
    assert doc["constraints"][0]["layout"]["bank_axis"] == 2


def test_a_layout_pasted_from_a_solution() -> None:
    """Every layout an exact solution writes, fed back as layout constraints, leaves the optimum unchanged."""
    p = harness.prepare(instance_from_dict(small_doc()))
    res = harness.solve(p, "exact", options=EXACT)
    records = [{"kind": "layout", "tensor": t, "layout": lay} for t, lay in res.solution["layouts"].items()
               if t in ("x", "r2", "t", "wf")]
    p2 = harness.prepare(instance_from_dict(small_doc(records)))
    fits = {t: p2.data.fits(t, lay["bank_axis"]) for t, lay in res.solution["layouts"].items()}
    records = [r for r in records if fits[r["tensor"]]]  # a layout constraint holds its tensor on chip
    assert {r["tensor"] for r in records} == {"x", "r2", "t"}  # wf (8000 bytes) fits no 256-byte bank
    again = harness.solve(harness.prepare(instance_from_dict(small_doc(records))), "exact", options=EXACT)
    assert again.status == Status.OPTIMAL and again.objective == pytest.approx(res.objective)


# the small block: 4 banks of 256 bytes; x, a, r2 (1,4,10,10) take ceil(4/4)·400/4 = 100 bytes per bank along axis
# 1, ceil(10/4)·400/10 = 120 along axes 2 and 3, and ceil(1/4)·400 = 400 > 256 along axis 0; conv1 writes y1 along
# channels (axis 1) only; t (1,10,10,8) fits along axes 1-3
LAY = {"kind": "layout"}
CONFLICTS = {
    "two fixed layouts": (
        [{**LAY, "tensor": "r2", "layout": {"bank_axis": 2}}, {"kind": "off_chip", "tensor": "a"},
         {**LAY, "tensor": "r2", "layout": {"bank_axis": 3}, "name": "other"}],
        {}, ["constraints[0] (layout)", "constraints[2] (layout 'other')"]),
    "fixed layout of an off-chip tensor": (
        [{**LAY, "tensor": "a", "layout": {"bank_axis": 1}}, {**LAY, "tensor": "x", "layout": {"bank_axis": 1}},
         {"kind": "off_chip", "tensor": "a"}],
        {}, ["constraints[0] (layout)", "constraints[2] (off_chip)"]),
    "layout over the bank capacity": (
        [{"kind": "off_chip", "tensor": "r1"}, {**LAY, "tensor": "x", "layout": {"bank_axis": 0}}],
        {}, ["constraints[1] (layout)"]),
    "layout the producer cannot write": (
        [{**LAY, "tensor": "y1", "layout": {"bank_axis": 2}}, {"kind": "off_chip", "tensor": "a"}],
        {}, ["constraints[0] (layout)"]),
    "layout of a tensor the option sends off chip": (
        [{"kind": "layouts", "tensor": "t", "allowed": [{"bank_axis": 3}]},
         {**LAY, "tensor": "a", "layout": {"bank_axis": 1}}],
        {"off_chip_tensors": ["a"]}, ["constraints[1] (layout)"]),
    "disjoint allowed sets": (
        [{"kind": "layouts", "tensor": "t", "allowed": [{"bank_axis": 1}, {"bank_axis": 2}]},
         {**LAY, "tensor": "t", "layout": {"bank_axis": 3}}],
        {}, ["constraints[0] (layouts)", "constraints[1] (layout)"]),
}


@pytest.mark.parametrize("case", sorted(CONFLICTS))
def test_conflicts_are_named(case: str) -> None:
    records, options, expected = CONFLICTS[case]
    p = harness.prepare(instance_from_dict(small_doc(records, **options)))
    assert P.infeasibility_reason(p.data) is not None
    res = harness.solve(p, "exact", options=EXACT)
    assert res.status == Status.INFEASIBLE
    assert res.conflict == expected, res.message
    assert all(label in res.message for label in expected)
    _iis_check(p.data, records, expected, options.get("off_chip_tensors", ()))
    for h in HEURISTICS:
        assert harness.solve(p, h, options=EXACT).status == Status.INFEASIBLE
    assert solve_exact(p.data, p.data.offchip_weight, options=EXACT).status == Status.INFEASIBLE


# ================================================================================================ evaluator
def _verify(records: Sequence[Record], solution: Mapping[str, Any]) -> list[str]:
    p = harness.prepare(instance_from_dict(small_doc(records)))
    doc = {"problem": "bankmap", "instance": p.instance.name, "method": "hand", "solution": dict(solution)}
    ev = harness.verify(p, doc)
    assert not ev.feasible
    return list(ev.violations)


def _free_exact() -> dict[str, Any]:
    p = harness.prepare(instance_from_dict(small_doc()))
    res = harness.solve(p, "exact", options=EXACT)
    return dict(res.solution)


def test_evaluator_names_a_broken_layout() -> None:
    sol = _free_exact()
    home = sol["layouts"]["r2"]["bank_axis"]
    other = 2 if home != 2 else 3
    assert _verify([{"kind": "layout", "tensor": "r2", "layout": {"bank_axis": other}, "name": "fixed"}], sol) == [
        f"constraints[0] (layout 'fixed'): tensor 'r2' is laid out along axis {home}, the constraint allows axis "
        f"{other}"]


def test_evaluator_names_a_broken_allowed_set() -> None:
    sol = _free_exact()
    home = sol["layouts"]["x"]["bank_axis"]
    allowed = sorted({2, 3} - {home})
    records = [{"kind": "off_chip", "tensor": "r1"},
               {"kind": "layouts", "tensor": "x", "allowed": [{"bank_axis": a} for a in allowed]}]
    sol["off_chip"] = ["r1"]
    assert _verify(records, sol) == [f"constraints[1] (layouts): tensor 'x' is laid out along axis {home}, the "
                                     f"constraint allows one of the axes {allowed}"]


def test_evaluator_names_a_layout_held_off_chip() -> None:
    """A mapping that lists the constrained tensor in its off_chip breaks the layout constraint (held on chip)."""
    sol = _free_exact()
    home = sol["layouts"]["r2"]["bank_axis"]
    sol["off_chip"] = sorted({*sol["off_chip"], "r2"})
    assert _verify([{"kind": "layout", "tensor": "r2", "layout": {"bank_axis": home}}], sol) == [
        f"constraints[0] (layout): tensor 'r2' is off chip, the constraint holds it on chip in axis {home}"]


def test_evaluator_names_a_layout_over_capacity() -> None:
    """x along axis 0: ceil(1/4)·400 = 400 bytes per bank > 256."""
    sol = _free_exact()
    sol["homes"] = {**sol["homes"], "x": 0}
    assert _verify([{"kind": "layout", "tensor": "x", "layout": {"bank_axis": 0}}], sol) == [
        "constraints[0] (layout): tensor 'x' does not fit a bank in layout 0 (400 > 256 bytes), the constraint "
        "holds it on chip"]


def test_evaluator_names_a_tensor_kept_on_chip() -> None:
    sol = _free_exact()
    assert "a" not in sol["off_chip"]
    assert _verify([{"kind": "off_chip", "tensor": "a", "name": "dram"}], sol) == [
        "constraints[0] (off_chip 'dram'): tensor 'a' must stay off chip but the mapping keeps it on chip"]


# ================================================================================================ malformed input
BAD = {
    "unknown tensor": ([{"kind": "layout", "tensor": "nope", "layout": {"bank_axis": 1}}],
                       "constraints[0].tensor", "no tensor named 'nope'"),
    "axis outside the rank": ([{"kind": "off_chip", "tensor": "a"},
                               {"kind": "layout", "tensor": "x", "layout": {"bank_axis": 4}}],
                              "constraints[1].layout.bank_axis", "an axis 0..3"),
    "wrong shape": ([{"kind": "layout", "tensor": "x", "layout": {"bank_axis": 1, "shape": [1, 4, 10]}}],
                    "constraints[0].layout.shape", "[1, 4, 10, 10]"),
    "allowed axis outside the rank": ([{"kind": "layouts", "tensor": "t",
                                        "allowed": [{"bank_axis": 1}, {"bank_axis": 9}]}],
                                      "constraints[0].allowed[1].bank_axis", "bank axis 9"),
    "unknown off_chip tensor": ([{"kind": "off_chip", "tensor": "nope"}], "constraints[0].tensor", "'nope'"),
    "weight forced off chip": ([{"kind": "off_chip", "tensor": "wf"}], "constraints[0].tensor",
                               "graph input or weight"),
    "negative axis": ([{"kind": "layout", "tensor": "x", "layout": {"bank_axis": -1}}],
                      "constraints[0].layout.bank_axis", "negative"),
    "missing layout": ([{"kind": "layout", "tensor": "x"}], "constraints[0]", "'layout'"),
    "unknown key": ([{"kind": "off_chip", "tensor": "a", "axis": 1}], "constraints[0]", "'axis'"),
    "unknown kind": ([{"kind": "pin", "tensor": "a"}], "constraints[0].kind", "layout, layouts, off_chip"),
    "empty allowed set": ([{"kind": "layouts", "tensor": "t", "allowed": []}], "constraints[0].allowed", ""),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_constraints_are_located(case: str, tmp_path: Path) -> None:
    records, where, needle = BAD[case]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(small_doc(records)))
    result = CliRunner().invoke(cli, ["solve", str(path), "--method", "local"])
    assert_bad_input(result.exit_code, result.stderr, f"key '{where}", needle)


def test_malformed_constraint_through_a_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(small_doc([{"kind": "layout", "tensor": "t", "layout": {"bank_axis": 7}}])))
    run = run_dlaopt("solve", path)
    assert_bad_input(run.returncode, run.stderr, "key 'constraints[0].layout.bank_axis'", "an axis 0..3")


# ================================================================================================ shipped instance
def test_shipped_constrained_instance(tmp_path: Path) -> None:
    """It solves in seconds through the CLI and verifies (the solution lists the constraints in force); every method
    meets them, and they cost something against the unconstrained block (residual-block-inline.yaml)."""
    t0 = time.perf_counter()
    solve_and_verify(SHIPPED, tmp_path / "s.yaml")
    assert time.perf_counter() - t0 < 30
    doc = yaml.safe_load((tmp_path / "s.yaml").read_text())
    assert [c["kind"] for c in doc["constraints"]] == ["layout", "off_chip", "layouts"]
    p = harness.prepare(load_instance(SHIPPED))
    records = [dict(c.doc) for c in p.instance.constraints]
    results = {r.method: r for r in harness.compare(p, options=EXACT)}
    for r in results.values():
        assert r.verified, (r.method, r.message)
        m = P.solution_from_dict(p.data, r.solution)
        assert meets(p.data.workload, p.data.banks, p.data.bank_bytes, records, m, homes_of(p.data, m))
    assert results["exact"].status == Status.OPTIMAL
    assert results["exact"].objective == pytest.approx(doc["objective_value"])
    free = harness.solve(harness.prepare(load_instance(SMALL)), "exact", options=EXACT)
    assert results["exact"].objective > free.objective
