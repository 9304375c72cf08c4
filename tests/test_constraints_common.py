"""The machinery every problem's constraints share: the records, their schema, and conflict search."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dlaopt.errors import InputError
from dlaopt.io.instance import instance_from_dict
from dlaopt.solvers.conflicts import deletion_filter
from dlaopt.specs.constraints import Constraint, parse_constraints, selected

# ------------------------------------------------------------------------------------------------ deletion filtering


def _irreducible_infeasible_subsets(n: int, conflicts: list[frozenset[int]]) -> set[frozenset[int]]:
    """Brute force: every subset that contains a conflict set and none of whose proper subsets does."""
    def infeasible(s: frozenset[int]) -> bool:
        return any(c <= s for c in conflicts)

    out = set()
    for r in range(n + 1):
        for combo in itertools.combinations(range(n), r):
            s = frozenset(combo)
            if infeasible(s) and not any(infeasible(s - {x}) for x in s):
                out.add(s)
    return out


@given(st.integers(1, 7).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.frozensets(st.integers(0, n - 1), min_size=1), min_size=1, max_size=3))))
def test_deletion_filter_finds_an_irreducible_infeasible_subset(case: tuple[int, list[frozenset[int]]]) -> None:
    n, conflicts = case
    calls: list[frozenset[int]] = []

    def oracle(items: list[int]) -> bool:
        s = frozenset(items)
        calls.append(s)
        return any(c <= s for c in conflicts)

    found = deletion_filter(list(range(n)), oracle)
    assert found.minimal
    assert frozenset(found.members) in _irreducible_infeasible_subsets(n, conflicts)
    assert found.tests == len(calls) == n  # one test per member of the starting list


def test_an_undecided_test_keeps_the_member_and_says_the_set_may_not_be_minimal() -> None:
    # items 0 and 2 conflict; the test without item 1 is undecided, so 1 is kept
    def oracle(items: list[int]) -> bool | None:
        if 1 not in items and {0, 2} <= set(items):
            return None
        return {0, 2} <= set(items)

    found = deletion_filter([0, 1, 2, 3], oracle)
    assert found.members == (0, 1, 2)
    assert not found.minimal


def test_a_passed_deadline_keeps_the_rest_untested() -> None:
    found = deletion_filter([0, 1, 2], lambda items: True, deadline=0.0)
    assert found.members == (0, 1, 2) and found.tests == 0 and not found.minimal


# ------------------------------------------------------------------------------------------------ records and schema
MAPPING_DOC = {
    "problem": "mapping",
    "workload": {"zoo": "resnet18", "params": {}},
    "hardware": {"preset": "eyeriss", "params": {}},
}


def test_records_keep_position_kind_and_name() -> None:
    cons = parse_constraints([{"kind": "utilization", "min": 0.5},
                              {"kind": "permutation", "name": "ws", "target": "DRAM", "order": ["K", "C"]}])
    assert [c.label for c in cons] == ["constraints[0] (utilization)", "constraints[1] (permutation 'ws')"]
    assert cons[1].params == {"target": "DRAM", "order": ["K", "C"]}
    assert cons[1].at("order", 0) == ("constraints", 1, "order", 0)
    assert cons[1].to_dict()["at"] == cons[1].label
    expanded = Constraint("shape", {"shapes": [[4, 4]]}, ("flexibility", "shape"))
    assert expanded.label == "flexibility.shape (shape)"


def test_the_layer_selector() -> None:
    c, by_kind, both = parse_constraints([
        {"kind": "utilization", "min": 0.5, "layers": ["conv1"]},
        {"kind": "utilization", "min": 0.5, "op_kinds": ["matmul"]},
        {"kind": "utilization", "min": 0.5, "layers": ["fc"], "op_kinds": ["matmul"]}])
    assert selected(c, "conv1", "conv2d") and not selected(c, "conv2", "conv2d")
    assert selected(by_kind, "fc", "matmul") and not selected(by_kind, "conv1", "conv2d")
    assert selected(both, "fc", "matmul") and not selected(both, "fc2", "matmul")


def test_instances_carry_their_constraints_into_the_document() -> None:
    doc = {**MAPPING_DOC, "constraints": [{"kind": "utilization", "min": 0.25}]}
    inst = instance_from_dict(doc)
    assert [c.kind for c in inst.constraints] == ["utilization"]
    assert inst.document["constraints"] == [{"kind": "utilization", "min": 0.25}]
    assert inst.with_constraints([]).constraints == ()
    again = instance_from_dict(dict(inst.document))
    assert again.constraints == inst.constraints


@pytest.mark.parametrize(("extra", "where", "what"), [
    ({"constraints": [{"kind": "nope"}]}, "constraints[0].kind", "unknown kind 'nope'"),
    ({"constraints": [{"min": 0.5}]}, "constraints[0]", "missing required key 'kind'"),
    ({"constraints": [{"kind": "utilization", "min": 2}]}, "constraints[0].min", "too large"),
    ({"constraints": [{"kind": "utilization", "min": 0.5, "typo": 1}]}, "constraints[0]", "unknown key 'typo'"),
    ({"constraints": {"kind": "utilization"}}, "constraints", "must be a list"),
    ({"constraints": [{"kind": "permutation", "target": "DRAM", "order": ["K", "K"]}]}, "constraints[0].order",
     "the same value twice"),
])
def test_malformed_constraints_are_located(extra: dict, where: str, what: str) -> None:
    with pytest.raises(InputError) as err:
        instance_from_dict({**MAPPING_DOC, **extra}, source="inst.yaml")
    text = str(err.value)
    assert f"key '{where}'" in text and what in text, text


def test_a_problem_without_flexibility_refuses_the_key() -> None:
    doc = {"problem": "pinning", "workload": {"zoo": "lenet5", "params": {}},
           "hardware": {"preset": "smaug-nvdla", "params": {}}, "flexibility": {"class": "0000"}}
    with pytest.raises(InputError, match="key 'flexibility' is not taken by problem 'pinning'"):
        instance_from_dict(doc, source="inst.yaml")
