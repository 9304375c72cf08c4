"""The ``one_of`` mapping constraint (a disjunction of options) through the whole problem.

On the small convolution of :mod:`test_constraints_mapping`: the expected optimum is brute force over the
unconstrained space filtered by "option A or option B", a predicate written here from the documented meaning; the
'exhaustive' and exact methods must find it, every heuristic must keep to it (or find nothing), the evaluator must
name a one_of no option of which holds, a one_of whose every option conflicts with another record is infeasible with
both named, and malformed ones are located exit-2 errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import assert_bad_input, run_dlaopt
from test_constraints_mapping import (
    COLS,
    DET,
    HEURISTICS,
    ROWS,
    T_GLB,
    base,
    brute,
    doc,
    label,
    live_order,
    prepared,
    solution_mapping,
)

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.problem import MappingSolution
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.result import Status


def perm(order: list[str]) -> dict[str, Any]:
    return {"kind": "permutation", "target": "glb", "order": order}


def only_on(axis: int, dim: str, m: Mapping) -> bool:
    """Nothing but ``dim`` unrolled on the PE-array axis ``axis``."""
    return all(fs[axis] == 1 for d, fs in m.factors.items() if d != dim)


def in_order(m: Mapping, order: list[str]) -> bool:
    seen = live_order(m, 1, order)
    return seen == [d for d in order if d in seen]


CASES: dict[str, tuple[list[dict[str, Any]], Any]] = {
    # K before C, or C before K, at the buffer, with K and C both iterated there
    "two-orders": ([{"kind": "one_of", "options": [[perm(["K", "C"])], [perm(["C", "P", "K"])]]},
                    {"kind": "factors", "target": "glb", "factors": {"K": 2, "C": 2}}],
                   lambda m: m.factors["K"][T_GLB] == 2 and m.factors["C"][T_GLB] == 2
                   and (in_order(m, ["K", "C"]) or in_order(m, ["C", "P", "K"]))),
    # K-C or P-K parallelism (rows, columns), each option two records
    "two-parallelisms": ([{"kind": "one_of", "op_kinds": ["conv2d"], "options": [
        [{"kind": "spatial", "axes": {"rows": {"dims": ["C"]}, "cols": {"dims": ["K"]}}},
         {"kind": "utilization", "min": 0.5}],
        [{"kind": "spatial", "axes": {"rows": {"dims": ["P"]}, "cols": {"dims": ["K"]}}}]]}],
        lambda m: (only_on(ROWS, "C", m) and only_on(COLS, "K", m)
                   and m.factors["C"][ROWS] * m.factors["K"][COLS] >= 2)
        or (only_on(ROWS, "P", m) and only_on(COLS, "K", m))),
}


def reference(pred: Any) -> float:
    nest, arch = base()
    values = [v for m, v in brute(nest, arch) if pred(m)]
    assert values
    return min(values)


@pytest.mark.parametrize("name", list(CASES))
def test_every_method_keeps_one_option(name: str) -> None:
    constraints, pred = CASES[name]
    p = prepared(constraints)
    assert len(p.data.spaces[0].alternatives) == 2
    want = reference(pred)
    res = harness.solve(p, "exhaustive", options=DET)
    assert res.status == Status.OPTIMAL and res.verified, res.message
    assert res.objective == pytest.approx(want, rel=1e-9)
    assert pred(solution_mapping(res)[0])
    exact = harness.solve(p, "exact", options=DET)
    assert exact.status == Status.OPTIMAL and exact.verified, exact.message
    assert exact.objective == pytest.approx(want, rel=1e-6)
    assert pred(solution_mapping(exact)[0])
    for h in HEURISTICS:
        r = harness.solve(p, h, options=DET)
        assert r.status in (Status.FEASIBLE, Status.NO_SOLUTION), (h, r.status, r.message)
        if r.status == Status.FEASIBLE:
            assert r.verified and pred(solution_mapping(r)[0]), (h, r.message)
            assert r.objective >= want * (1 - 1e-9), h


@pytest.mark.parametrize("name", list(CASES))
def test_the_evaluator_names_a_one_of_no_option_of_which_holds(name: str) -> None:
    constraints, pred = CASES[name]
    p = prepared(constraints)
    nest, arch = base()
    plain = [c for c in constraints if c["kind"] != "one_of"]
    q = prepared(plain)
    # a mapping meeting the other records but neither option
    bad = next(m for m, _ in brute(nest, arch) if not pred(m)
               and q.problem.evaluate(q.data, MappingSolution({"conv": m})).feasible)
    ev = p.problem.evaluate(p.data, MappingSolution({"conv": bad}))
    assert not ev.feasible
    i = next(i for i, c in enumerate(constraints) if c["kind"] == "one_of")
    hit = [v for v in ev.violations if v.startswith(label(i, "one_of") + ": layer conv: no option holds")]
    assert hit and "option 0: " in hit[0] and "option 1: " in hit[0], ev.violations
    good = next(m for m, _ in brute(nest, arch) if pred(m))
    assert p.problem.evaluate(p.data, MappingSolution({"conv": good})).feasible


@pytest.mark.parametrize("method", ["exhaustive", "exact"])
def test_a_one_of_whose_options_all_conflict_is_infeasible(method: str) -> None:
    constraints = [{"kind": "permutation", "target": "dram", "order": ["K", "C"]},
                   {"kind": "factors", "target": "glb", "factors": {"K": 4}},
                   {"kind": "one_of", "options": [[{"kind": "factors", "target": "glb", "factors": {"K": 2}}],
                                                  [{"kind": "factors", "target": "glb", "factors": {"K": 1}}]]}]
    p = prepared(constraints)
    assert p.problem.infeasibility_reason(p.data) is not None
    res = harness.solve(p, method, options=DET)
    assert res.status == Status.INFEASIBLE, res.message
    assert res.conflict == [label(1, "factors"), label(2, "one_of")]
    # one option that holds is enough
    k4 = [{"kind": "factors", "target": "glb", "factors": {"K": 4}}]
    ok = [*constraints[:2], {"kind": "one_of", "options": [*constraints[2]["options"], k4]}]
    assert len(prepared(ok).data.spaces[0].alternatives) == 1  # the two conflicting options are left out
    assert harness.solve(prepared(ok), method, options=DET).status == Status.OPTIMAL


MALFORMED = [
    ({"kind": "one_of", "options": []}, "constraints[0].options", ""),
    ({"kind": "one_of", "options": [[]]}, "constraints[0].options", ""),
    ({"kind": "one_of", "options": [[{"kind": "one_of", "options": [[perm(["K", "C"])]]}]]},
     "constraints[0].options[0][0]", ""),
    ({"kind": "one_of", "options": [[{"kind": "bypass", "target": "rf", "operands": ["O"]}]]},
     "constraints[0].options[0][0]", ""),
    ({"kind": "one_of", "options": [[{"kind": "permutation", "target": "l2", "order": ["K", "C"]}]]},
     "constraints[0].options[0][0].target", "glb"),
    ({"kind": "one_of", "options": [[{**perm(["K", "C"]), "name": "x"}]]}, "constraints[0].options[0][0]", ""),
]


@pytest.mark.parametrize("record,where,needle", MALFORMED)
def test_malformed_one_of_is_a_located_error(record: dict, where: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        harness.prepare(instance_from_dict(doc([record])))
    assert where in info.value.render() and needle in info.value.render(), info.value.render()


def test_malformed_one_of_through_the_cli(tmp_path: Path) -> None:
    for record, where, needle in (MALFORMED[0], MALFORMED[2], MALFORMED[4]):
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(doc([record])))
        run = run_dlaopt("solve", path, "--method", "exhaustive")
        assert_bad_input(run.returncode, run.stderr, where, needle, "bad.yaml")
