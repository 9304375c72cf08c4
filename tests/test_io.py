"""Instance and solution files: loading, located errors, round trips and the shipped JSON Schema."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from dlaopt.errors import InputError
from dlaopt.io import (
    SHIPPED_SCHEMA_PATH,
    Instance,
    instance_from_dict,
    instance_schema,
    load_instance,
    load_solution_document,
    make_instance_document,
    save_document,
    save_solution_document,
    write_schema,
)
from dlaopt.specs import problem_spec

ROOT = Path(__file__).resolve().parent.parent
PINNING = ROOT / "instances" / "pinning"
MALFORMED = ROOT / "instances" / "malformed"
SHIPPED = sorted(PINNING.glob("*.yaml"))


def zoo_names() -> list[str]:
    import dlaopt.zoo  # noqa: F401 - registers the networks
    from dlaopt.zoo import ZOO

    return ZOO.names()


def skip_unless_registered(path: Path) -> None:
    """Skip zoo-based instances whose network is not registered (the zoo is filled independently)."""
    doc = yaml.safe_load(path.read_text())
    zoo = doc.get("workload", {}).get("zoo")
    if zoo is not None and zoo not in zoo_names():
        pytest.skip(f"zoo network '{zoo}' is not registered")


TINY: dict[str, Any] = {
    "problem": "pinning",
    "workload": {
        "name": "two-ops",
        "dtype_bytes": 2,
        "tensors": [
            {"name": "x", "shape": [1, 4, 8, 8], "role": "input"},
            {"name": "w", "shape": [8, 4, 3, 3], "role": "weight"},
            {"name": "a", "shape": [1, 8, 8, 8], "role": "activation"},
            {"name": "y", "shape": [1, 8, 4, 4], "role": "output", "dtype_bytes": 4},
        ],
        "operators": [
            {"name": "conv", "kind": "conv2d", "inputs": ["x", "w"], "outputs": ["a"], "attrs": {"padding": 1}},
            {"name": "pool", "kind": "pool", "inputs": ["a"], "outputs": ["y"], "attrs": {"kernel": 2}},
        ],
    },
    "hardware": {
        "pe_array": {"axes": [["pe", 4]]},
        "dma": {"bandwidth_bytes_per_cycle": 8},
        "memories": [
            {"name": "dram", "kind": "dram"},
            {"name": "spad", "kind": "scratchpad", "capacity_kb": 2, "holds": ["input", "activation"]},
        ],
    },
}


def tiny(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(TINY)
    doc.update(changes)
    return doc


def error_of(path: Path | str) -> InputError:
    with pytest.raises(InputError) as info:
        load_instance(path)
    return info.value


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# ------------------------------------------------------------------------------------------------ shipped instances
def test_shipped_instances_exist() -> None:
    names = {p.name for p in SHIPPED}
    assert {"tiny-inline.yaml", "lenet5-smaug-32k.yaml", "minerva-smaug-32k.yaml", "cifar-cnn10-smaug-32k.yaml",
            "resnet50-smaug-3x256k.yaml", "bert-base-smaug-3x256k.yaml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_instance_loads(path: Path) -> None:
    skip_unless_registered(path)
    inst = load_instance(path)
    assert isinstance(inst, Instance)
    assert inst.problem == "pinning"
    assert inst.name == path.stem
    assert inst.source == str(path)
    assert inst.objective in problem_spec("pinning").objectives
    assert inst.workload.operators and inst.hardware.scratchpads


def test_tiny_inline_instance_is_small_and_capacity_binds() -> None:
    inst = load_instance(PINNING / "tiny-inline.yaml")
    wl, hw = inst.workload, inst.hardware
    assert 5 <= len(wl.operators) <= 8
    assert len(hw.scratchpads) == 2 and hw.scratchpads[0].capacity_bytes == 4096
    assert any(len(users) >= 2 for users in wl.consumers.values())  # reuse
    assert any(wl.graph.out_degree(n) >= 2 for n in wl.graph.nodes)  # branch
    on_chip = sum(m.capacity_bytes or 0 for m in hw.scratchpads)
    assert sum(t.size_bytes for t in wl.tensors.values()) > on_chip


@pytest.mark.parametrize("name", ["lenet5-smaug-32k", "resnet50-smaug-3x256k"])
def test_zoo_instance_uses_preset_params(name: str) -> None:
    path = PINNING / f"{name}.yaml"
    skip_unless_registered(path)
    inst = load_instance(path)
    assert inst.hardware.name == "smaug-nvdla"
    want_kb = yaml.safe_load(path.read_text())["hardware"]["params"]["spad_kb"]
    assert all(m.capacity_bytes == want_kb * 1024 for m in inst.hardware.scratchpads)


# ------------------------------------------------------------------------------------------------ malformed files
MALFORMED_CASES = [
    ("yaml-syntax.yaml", None, "YAML syntax error at line 3, column"),
    ("missing-key.yaml", None, "missing required key 'hardware'"),
    ("wrong-type.yaml", "hardware.params.spad_kb", "'abc'"),
    ("negative-size.yaml", "workload.tensors[1].shape[1]", "-5 is negative: sizes must be positive"),
    ("cyclic.yaml", "workload.operators", "cycle"),
    ("unknown-operator.yaml", "workload.operators[0].kind", "convolution3d"),
    ("unknown-key.yaml", None, "unknown key 'objectiv'; did you mean 'objective'?"),
]


@pytest.mark.parametrize(("name", "key", "text"), MALFORMED_CASES, ids=[c[0] for c in MALFORMED_CASES])
def test_malformed_instance_error_is_located(name: str, key: str | None, text: str) -> None:
    path = MALFORMED / name
    err = error_of(path)
    msg = err.render()
    assert err.file == str(path)
    assert msg.startswith(str(path))
    assert text in msg
    if key is not None:
        assert f"key '{key}'" in msg
    assert "Traceback" not in msg


def test_yaml_syntax_error_names_the_file() -> None:
    err = error_of(MALFORMED / "yaml-syntax.yaml")
    assert "yaml-syntax.yaml" in err.render()
    assert err.render().startswith(str(MALFORMED / "yaml-syntax.yaml") + ": YAML syntax error at line 3, column 42")


def test_oversized_no_tiling_loads() -> None:
    inst = load_instance(MALFORMED / "oversized-no-tiling.yaml")
    assert inst.options["oversize"] == "error"
    assert max(t.size_bytes for t in inst.workload.tensors.values()) == 1024 * 1024
    assert all(m.capacity_bytes == 4096 for m in inst.hardware.scratchpads)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    err = error_of(path)
    assert err.render() == f"{path}: file not found (expected an existing YAML or JSON file)"


def test_directory(tmp_path: Path) -> None:
    assert "is a directory" in error_of(tmp_path).render()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ("# only a comment\n", "the file is empty"),
        ("- 1\n- 2\n", "the top level is a list, not a mapping"),
        ("just text\n", "the top level is str 'just text', not a mapping"),
        ("problem: pinning\nproblem: pinning\n", "duplicate key 'problem'"),
    ],
)
def test_bad_top_level(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "bad.yaml", text)
    msg = error_of(path).render()
    assert msg.startswith(str(path))
    assert message in msg


def test_json_syntax_error(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '{"problem": "pinning",\n "workload": }')
    assert "JSON syntax error at line 2, column 14" in error_of(path).render()


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00bad")
    assert "not a UTF-8 text file" in error_of(path).render()


def located(doc: dict[str, Any]) -> InputError:
    with pytest.raises(InputError) as info:
        instance_from_dict(doc, source="case.yaml")
    assert info.value.file == "case.yaml"
    assert "Traceback" not in info.value.render()
    return info.value


def test_semantic_errors_are_located() -> None:
    doc = tiny()
    doc["workload"]["operators"][1]["inputs"] = ["b"]
    err = located(doc)
    assert err.path == ("workload", "operators", 1, "inputs", 0)
    assert "unknown tensor 'b'" in err.message

    doc = tiny()
    doc["workload"]["tensors"][2]["role"] = "output"  # a is produced and consumed: fine; make y an activation
    doc["workload"]["tensors"][3]["role"] = "activation"
    err = located(doc)
    assert err.path == ("workload", "tensors", 3, "role")  # tensor names are mapped back to list indices

    doc = tiny()
    doc["workload"]["tensors"][2]["shape"] = [1, 8, 7, 7]
    assert located(doc).path == ("workload", "operators", 0, "outputs", 0)

    doc = tiny()
    doc["workload"]["operators"][0]["attrs"] = {"groups": "two"}
    assert located(doc).path == ("workload", "operators", 0, "attrs")

    doc = tiny()
    doc["workload"]["operators"][0]["attrs"] = {"strides": 2}
    assert located(doc).path == ("workload", "operators", 0, "attrs", "strides")

    doc = tiny()
    doc["hardware"]["memories"][1]["capacity_bytes"] = 100
    assert located(doc).path == ("hardware", "memories", 1)

    doc = tiny()
    doc["hardware"]["memories"][1].pop("capacity_kb")
    assert "has no capacity" in located(doc).message

    doc = tiny()
    doc["hardware"]["memories"].reverse()
    assert located(doc).path == ("hardware", "memories", 0, "kind")

    err = located(tiny(workload={"zoo": "no-such-network"}))
    assert err.path == ("workload", "zoo") and "unknown zoo network 'no-such-network'" in err.message

    err = located(tiny(hardware={"preset": "smaug-nvdla", "params": {"spad_kbs": 3}}))
    assert err.path == ("hardware", "params", "spad_kbs")

    err = located(tiny(hardware={"preset": "smaug-nvdla", "params": {"spad_kb": -3}}))
    assert err.path[:2] == ("hardware", "params")


def test_schema_errors_are_located() -> None:
    err = located(tiny(objective="speed"))
    assert err.path == ("objective",)
    assert err.render() == "case.yaml, key 'objective': unknown objective 'speed' (expected one of: " + ", ".join(
        problem_spec("pinning").objectives) + ")"

    err = located(tiny(options={"oversize": "shrink"}))
    assert err.path == ("options", "oversize")

    err = located(tiny(options={"chunk_fraction": "half"}))
    assert err.render() == "case.yaml, key 'options.chunk_fraction': 'chunk_fraction' must be a number, got 'half'"

    err = located(tiny(problem="scheduling"))
    assert err.path == ("problem",) and "unknown problem 'scheduling'" in err.message

    doc = tiny()
    doc["workload"]["operatorz"] = doc["workload"].pop("operators")
    err = located(doc)
    assert err.path == ("workload",)
    assert "unknown key 'operatorz'; did you mean 'operators'?" in err.message

    doc = tiny()
    doc["hardware"]["memories"][1]["kind"] = "sram"
    err = located(doc)
    assert err.path == ("hardware", "memories", 1, "kind") and "unknown memory kind 'sram'" in err.message

    doc = tiny()
    doc["workload"]["tensors"][0]["shape"] = "1x4x8x8"
    err = located(doc)
    assert err.message == "'shape' must be a list, got '1x4x8x8'"

    doc = tiny()
    doc["workload"]["tensors"][0]["shape"][1] = 2.5
    err = located(doc)
    assert err.render() == "case.yaml, key 'workload.tensors[0].shape[1]': 'shape[1]' must be an integer, got 2.5"

    doc = tiny()
    del doc["workload"]["tensors"][0]["role"]
    assert located(doc).render() == "case.yaml, key 'workload.tensors[0]': missing required key 'role'"


def test_not_a_mapping() -> None:
    with pytest.raises(InputError, match="not a mapping"):
        instance_from_dict(["problem"], source="x.yaml")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ defaults, round trip
def test_defaults_filled() -> None:
    inst = instance_from_dict(tiny(), source="some/dir/my-case.yaml")
    spec = problem_spec("pinning")
    assert inst.name == "my-case"
    assert inst.objective == spec.objectives[0]
    assert dict(inst.options) == dict(spec.default_options)
    assert inst.workload.tensors["y"].dtype_bytes == 4 and inst.workload.tensors["x"].dtype_bytes == 2
    assert inst.hardware.scratchpads[0].capacity_bytes == 2048
    assert inst.hardware.clock_hz == 1e9
    assert inst.document["name"] == "my-case"
    assert inst.document["objective"] == spec.objectives[0]
    assert inst.document["options"] == dict(spec.default_options)


def test_partial_options_merged_with_defaults() -> None:
    inst = instance_from_dict(tiny(options={"pin_weights": False}, objective="dma_cycles"))
    assert inst.options["pin_weights"] is False
    assert inst.options["oversize"] == problem_spec("pinning").default_options["oversize"]
    assert inst.objective == "dma_cycles"


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    first = load_instance(PINNING / "tiny-inline.yaml")
    path = save_document(first.document, tmp_path / f"copy{suffix}")
    second = load_instance(path)
    assert second.document == first.document
    assert second.workload == first.workload
    assert second.hardware == first.hardware
    if suffix == ".json":
        assert json.loads(path.read_text())["problem"] == "pinning"


def test_json_and_yaml_both_load(tmp_path: Path) -> None:
    as_json = tmp_path / "case.json"
    as_json.write_text(json.dumps(tiny(name="case")))
    as_yaml = tmp_path / "case.yaml"
    as_yaml.write_text(yaml.safe_dump(tiny(name="case")))
    assert load_instance(as_json).document == load_instance(as_yaml).document


def test_make_instance_document(tmp_path: Path) -> None:
    if "lenet5" not in zoo_names():
        pytest.skip("zoo network 'lenet5' is not registered")
    doc = make_instance_document("pinning", "lenet5", {"batch": 1}, "smaug-nvdla", {"spad_kb": 64})
    assert doc["name"] == "lenet5-batch1-smaug-nvdla-spad_kb64"
    assert doc["workload"] == {"zoo": "lenet5", "params": {"batch": 1}}
    assert doc["objective"] == problem_spec("pinning").objectives[0]
    path = save_document(doc, tmp_path / "made.yaml")
    assert load_instance(path).document == doc
    with pytest.raises(InputError) as info:
        make_instance_document("pinning", "lenet5", None, "smaug-nvdla", {"spad_kb": "big"})
    assert info.value.path == ("hardware", "params", "spad_kb")


def test_make_instance_document_named() -> None:
    with pytest.raises(InputError) as info:
        make_instance_document("pinning", "no-such-network", None, "smaug-nvdla", None, name="x")
    assert info.value.path == ("workload", "zoo")


# ------------------------------------------------------------------------------------------------ solution documents
SOLUTION = {
    "problem": "pinning",
    "instance": "tiny-inline",
    "method": "greedy",
    "objective": "transfers",
    "objective_value": 1234.5,
    "solution": {"placement": {"a1": ["spad0", 1, 3]}},
    "status": "feasible",
}


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_solution_round_trip(tmp_path: Path, suffix: str) -> None:
    path = save_solution_document(SOLUTION, tmp_path / "out" / f"sol{suffix}")
    assert load_solution_document(path) == SOLUTION
    none = dict(SOLUTION, objective_value=None)
    assert load_solution_document(save_solution_document(none, tmp_path / f"none{suffix}")) == none


@pytest.mark.parametrize(
    ("change", "key", "text"),
    [
        ({"objective_value": "many"}, "objective_value", "must be a number or null, got 'many'"),
        ({"solution": [1, 2]}, "solution", "'solution' must be a mapping, got a list"),
        ({"method": 3}, "method", "'method' must be a string, got 3"),
    ],
)
def test_malformed_solution(tmp_path: Path, change: dict[str, Any], key: str, text: str) -> None:
    path = tmp_path / "sol.yaml"
    path.write_text(yaml.safe_dump({**SOLUTION, **change}))
    with pytest.raises(InputError) as info:
        load_solution_document(path)
    msg = info.value.render()
    assert msg.startswith(f"{path}, key '{key}': ") and text in msg


def test_solution_missing_key(tmp_path: Path) -> None:
    path = tmp_path / "sol.json"
    path.write_text(json.dumps({k: v for k, v in SOLUTION.items() if k != "instance"}))
    with pytest.raises(InputError) as info:
        load_solution_document(path)
    assert info.value.render() == f"{path}: missing required key 'instance'"
    with pytest.raises(InputError, match="file not found"):
        load_solution_document(tmp_path / "absent.yaml")


# ------------------------------------------------------------------------------------------------ schema
def test_shipped_schema_is_current() -> None:
    shipped = json.loads(SHIPPED_SCHEMA_PATH.read_text())
    assert shipped == instance_schema(), "regenerate with: python -m dlaopt.io.schema"


def test_schema_is_valid_draft_2020_12(tmp_path: Path) -> None:
    schema = instance_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["$defs"]) >= {"tensor", "operator", "memory", "workload_inline", "workload_zoo",
                                    "hardware_inline", "hardware_preset"}
    written = write_schema(tmp_path / "s" / "instance.schema.json")
    assert json.loads(written.read_text()) == schema


@pytest.mark.parametrize("path", SHIPPED + [MALFORMED / "oversized-no-tiling.yaml"], ids=lambda p: p.stem)
def test_shipped_schema_validates_shipped_instances(path: Path) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SHIPPED_SCHEMA_PATH.read_text()))
    validator.validate(yaml.safe_load(path.read_text()))


@pytest.mark.parametrize("name", ["missing-key.yaml", "negative-size.yaml", "unknown-operator.yaml",
                                  "unknown-key.yaml"])
def test_shipped_schema_rejects_structural_errors(name: str) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SHIPPED_SCHEMA_PATH.read_text()))
    assert not validator.is_valid(yaml.safe_load((MALFORMED / name).read_text()))
