"""Hostile input files: alias bombs, deep nesting, oversized files, numbers that would overflow a model, duplicate
keys, very long and non-ASCII names. Each is bad input for the real command line (a subprocess): exit 2, one located
``error:`` line that states the limit, no traceback, and an answer within two seconds.

The two-second bound (asked for by the users who reported the hangs) measures only the wall time of the ``dlaopt``
subprocess. It is robust because every case is refused before any model is built: the process spends ~0.5 s
importing dlaopt and a few milliseconds on the file, so even a loaded CI machine stays far below 2 s, while the
failures it guards against took more than 30 s (an alias bomb expanding) or never finished.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import ROOT, assert_bad_input, run_dlaopt

from dlaopt.errors import InputError, format_key_path
from dlaopt.io.document import (
    MAX_DEPTH,
    MAX_FILE_ENV,
    MAX_NODES,
    MAX_NUMBER,
    MAX_STRING_CHARS,
    check_document,
    load_mapping,
    parse_document,
)
from dlaopt.io.instance import instance_from_dict
from dlaopt.results import read_records

TIME_BOUND_S = 2.0
TINY = ROOT / "instances" / "pinning" / "tiny-inline.yaml"
LIMIT = f"{MAX_NUMBER}"  # every number message states the largest accepted magnitude


def tiny() -> dict[str, Any]:
    return yaml.safe_load(TINY.read_text(encoding="utf-8"))


def billion_laughs() -> str:
    lines = ["problem: pinning", "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def timed(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        start = time.monotonic()
        run = run_dlaopt(*args, timeout=60)
        elapsed = time.monotonic() - start
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return run.returncode, run.stderr, elapsed


def assert_refused(command: list[str | Path], *needles: str, env: dict[str, str] | None = None) -> str:
    code, stderr, elapsed = timed(*command, env=env)
    assert_bad_input(code, stderr, *needles)
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert elapsed < TIME_BOUND_S, f"{elapsed:.2f} s: {stderr}"
    return stderr


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def with_value(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    target: Any = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


# ------------------------------------------------------------------------------------------------ structure
def test_billion_laughs_yaml(tmp_path: Path) -> None:
    file = write(tmp_path / "laughs.yaml", billion_laughs())
    assert_refused(["solve", file], "laughs.yaml", "line 7", "too many aliases", str(MAX_NODES))


def test_recursive_alias_yaml(tmp_path: Path) -> None:
    file = write(tmp_path / "loop.yaml", "problem: pinning\nworkload: &w {tensors: [*w]}\n")
    assert_refused(["solve", file], "loop.yaml", "line 2", "recursive alias")


def test_json_nested_10000_deep(tmp_path: Path) -> None:
    file = write(tmp_path / "deep.json", '{"problem": ' + "[" * 10_000 + "]" * 10_000 + "}")
    assert_refused(["solve", file], "deep.json", "line 1", f"nesting deeper than {MAX_DEPTH} levels")


@pytest.mark.parametrize("style", ["flow", "block"])
def test_yaml_nested_deep(tmp_path: Path, style: str) -> None:
    if style == "flow":
        text = "problem: pinning\nworkload: " + "[" * 10_000 + "]" * 10_000 + "\n"
    else:
        text = "problem: pinning\nworkload:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(1000))
    file = write(tmp_path / "deep.yaml", text)
    assert_refused(["solve", file], "deep.yaml", "line ", f"nesting deeper than {MAX_DEPTH} levels")


def test_oversize_file(tmp_path: Path) -> None:
    file = tmp_path / "big.yaml"
    file.write_text(TINY.read_text(encoding="utf-8") + "# " + "x" * (9 * 1024 * 1024) + "\n", encoding="utf-8")
    assert_refused(["solve", file], "big.yaml", "larger than the limit of 8 MiB", MAX_FILE_ENV)
    # the limit can be raised, and lowered
    code, stderr, _ = timed("show", file, env={MAX_FILE_ENV: "16"})
    assert code == 0, stderr
    assert_refused(["solve", TINY], "tiny-inline.yaml", "larger than the limit of 1024 bytes",
                   env={MAX_FILE_ENV: str(1 / 1024)})


def test_oversize_limit_variable_is_checked() -> None:
    assert_refused(["solve", TINY], MAX_FILE_ENV, "'lots'", "a positive number of MiB", env={MAX_FILE_ENV: "lots"})


# ------------------------------------------------------------------------------------------------ numbers
NUMBER_CASES = [
    # (key path in tiny-inline.yaml, value written as YAML text, what the message says)
    (("workload", "tensors", 0, "shape", 2), str(2**70), "1180591620717411303424 is too large"),
    (("workload", "tensors", 0, "shape", 2), "1.0e+308", "1e+308 is too large"),
    (("workload", "tensors", 0, "shape", 2), ".nan", "nan is not a finite number"),
    (("hardware", "memories", 1, "capacity_kb"), str(2**70), "is too large"),
    (("hardware", "memories", 1, "capacity_kb"), ".inf", "inf is not a finite number"),
    (("hardware", "memories", 1, "capacity_bytes"), "-.inf", "-inf is not a finite number"),
    (("hardware", "dma", "bandwidth_bytes_per_cycle"), "1.0e+308", "is too large"),
    (("options", "chunk_fraction"), ".nan", "nan is not a finite number"),
    (("options", "chunk_fraction"), "1.0e+308", "is too large"),
    (("workload", "tensors", 0, "shape", 2), "9" * 5000, "cannot be used"),
]


@pytest.mark.parametrize(("path", "text", "needle"), NUMBER_CASES)
def test_numbers_that_do_not_fit_yaml(tmp_path: Path, path: tuple[Any, ...], text: str, needle: str) -> None:
    marker = "__VALUE__"
    doc = with_value(tiny(), path, marker)
    file = write(tmp_path / "num.yaml", yaml.safe_dump(doc, sort_keys=False).replace(f"'{marker}'", text)
                 .replace(marker, text))
    assert_refused(["solve", file], "num.yaml", f"key '{format_key_path(path)}'", needle, LIMIT)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400", str(2**70)])
def test_numbers_that_do_not_fit_json(tmp_path: Path, text: str) -> None:
    doc = with_value(tiny(), ("hardware", "memories", 1, "capacity_bytes"), "__VALUE__")
    file = write(tmp_path / "num.json", json.dumps(doc).replace('"__VALUE__"', text))
    assert_refused(["solve", file], "num.json", "key 'hardware.memories[1].capacity_bytes'", LIMIT)


def test_shape_product_overflows_a_model(tmp_path: Path) -> None:
    doc = tiny()
    shape = [2**20, 2**20, 2**20, 2**20]  # every dimension fits, their product does not
    doc["workload"] = {"tensors": [{"name": "x", "shape": shape, "role": "input"},
                                   {"name": "y", "shape": shape, "role": "output"}],
                       "operators": [{"name": "relu", "kind": "activation", "inputs": ["x"], "outputs": ["y"]}]}
    file = write(tmp_path / "huge.yaml", yaml.safe_dump(doc, sort_keys=False))
    assert_refused(["solve", file], "key 'workload.tensors[0].shape'", "tensor 'x'", "too many for a model", LIMIT)


def test_zoo_and_preset_params_that_overflow_a_model(tmp_path: Path) -> None:
    batch = write(tmp_path / "batch.yaml", yaml.safe_dump({
        "problem": "pinning", "workload": {"zoo": "lenet5", "params": {"batch": 2**52}},
        "hardware": {"preset": "smaug-nvdla", "params": {"spad_kb": 32}}}))
    assert_refused(["solve", batch], "key 'workload.params'", "too many for a model", LIMIT)
    spad = write(tmp_path / "spad.yaml", yaml.safe_dump({
        "problem": "pinning", "workload": {"zoo": "lenet5"},
        "hardware": {"preset": "smaug-nvdla", "params": {"spad_kb": 2**50}}}))
    assert_refused(["solve", spad], "key 'hardware.params'", "too many for a model", LIMIT)


# ------------------------------------------------------------------------------------------------ keys and names
def test_duplicate_keys(tmp_path: Path) -> None:
    text = TINY.read_text(encoding="utf-8").replace("objective: transfers", "objective: transfers\nobjective: thesis")
    assert_refused(["solve", write(tmp_path / "dup.yaml", text)], "dup.yaml", "line", "duplicate key 'objective'")
    body = json.dumps(tiny()).replace('"clock_mhz": 1000', '"clock_mhz": 1000, "clock_mhz": 500')
    assert_refused(["solve", write(tmp_path / "dup.json", body)], "dup.json", "key 'hardware'",
                   "duplicate key 'clock_mhz'")


def test_long_names(tmp_path: Path) -> None:
    doc = tiny()
    doc["name"] = "n" * 100_000
    file = write(tmp_path / "long.yaml", yaml.safe_dump(doc, sort_keys=False))
    assert_refused(["solve", file], "key 'name'", "100000 characters", str(MAX_STRING_CHARS))
    doc = tiny()
    doc["options"] = {"k" * 100_000: 1}
    file = write(tmp_path / "longkey.json", json.dumps(doc))
    assert_refused(["solve", file], "key 'options'", "100000 characters", str(MAX_STRING_CHARS))


def test_non_text_key_and_unpaired_surrogate(tmp_path: Path) -> None:
    text = TINY.read_text(encoding="utf-8").replace("options: {oversize: tile}", "options: {1: tile}")
    assert_refused(["solve", write(tmp_path / "intkey.yaml", text)], "key 'options'", "the key 1 is a number")
    doc = tiny()
    doc["name"] = "__S__"
    file = write(tmp_path / "sur.json", json.dumps(doc).replace("__S__", "\\ud800"))
    assert_refused(["solve", file], "key 'name'", "unpaired surrogate")


def test_unicode_names_are_accepted(tmp_path: Path) -> None:
    """Non-ASCII names solve, print, are written out and verify."""
    text = TINY.read_text(encoding="utf-8")
    for old, new in (("tiny-inline", "tïny-ínstance-名前-🙂"), ("tiny-branchy", "réseau-ネット"),
                     ("spad0", "mémoire-0"), ("conv2a", "卷积2a"), ("[x, w1]", "[entrée, w1]"),
                     ("{name: x,", "{name: entrée,")):
        text = text.replace(old, new)
    file = write(tmp_path / "unicode.yaml", text)
    solution = tmp_path / "solution.yaml"
    for args in (["solve", file, "--method", "greedy", "-o", solution], ["show", file],
                 ["compare", file, "--methods", "greedy,naive"]):
        run = run_dlaopt(*args, timeout=120)
        assert run.returncode == 0, run.stderr
    assert "卷积2a" in solution.read_text(encoding="utf-8")
    check = run_dlaopt("verify", file, solution, timeout=120)
    assert check.returncode == 0, check.stderr


# ------------------------------------------------------------------------------------------------ other loaders
def test_solution_files(tmp_path: Path) -> None:
    laughs = write(tmp_path / "sol.yaml", billion_laughs())
    assert_refused(["verify", TINY, laughs], "sol.yaml", "too many aliases")
    deep = write(tmp_path / "sol.json", '{"solution": ' + "[" * 10_000 + "]" * 10_000 + "}")
    assert_refused(["verify", TINY, deep], "sol.json", f"nesting deeper than {MAX_DEPTH} levels")
    envelope = {"problem": "pinning", "instance": "tiny-inline", "method": "greedy", "objective": "transfers",
                "objective_value": "__V__", "solution": {}}
    nan = write(tmp_path / "nan.json", json.dumps(envelope).replace('"__V__"', "NaN"))
    assert_refused(["verify", TINY, nan], "nan.json", "key 'objective_value'", "'NaN' cannot be used")
    big = tmp_path / "big.yaml"
    big.write_text("x: " + "y" * (9 * 1024 * 1024), encoding="utf-8")
    assert_refused(["verify", TINY, big], "big.yaml", "larger than the limit")


def test_suite_file(tmp_path: Path) -> None:
    laughs = write(tmp_path / "suite.yaml", billion_laughs())
    assert_refused(["bench", laughs, "--out", tmp_path / "out"], "suite.yaml", "too many aliases")
    inline = {"name": "s", "entries": [{"name": "e", "instance": with_value(tiny(), ("options", "chunk_fraction"),
                                                                            "__V__")}]}
    file = write(tmp_path / "inline.json", json.dumps(inline).replace('"__V__"', "Infinity"))
    assert_refused(["bench", file, "--out", tmp_path / "out"], "inline.json",
                   "key 'entries[0].instance.options.chunk_fraction'", "'Infinity' cannot be used")
    assert not (tmp_path / "out").exists()


def test_suite_entry_instance_file(tmp_path: Path) -> None:
    write(tmp_path / "deep.json", '{"problem": ' + "[" * 10_000 + "]" * 10_000 + "}")
    suite = write(tmp_path / "suite.yaml", "name: s\nentries:\n  - instance: deep.json\n")
    assert_refused(["bench", suite, "--out", tmp_path / "out"], "suite.yaml", "key 'entries[0].instance'",
                   "deep.json", f"nesting deeper than {MAX_DEPTH} levels")


def test_sweep_file(tmp_path: Path) -> None:
    laughs = write(tmp_path / "sweep.yaml", billion_laughs())
    assert_refused(["sweep", laughs, "--out", tmp_path / "out"], "sweep.yaml", "too many aliases")
    text = (ROOT / "instances" / "sweeps" / "small.yaml").read_text(encoding="utf-8")
    file = write(tmp_path / "grid.yaml", text.replace("spad_kb: [32, 128]", f"spad_kb: [32, {2**70}]"))
    assert_refused(["sweep", file, "--out", tmp_path / "out"], "grid.yaml", "key 'grid.spad_kb[1]'", "too large",
                   LIMIT)
    file = write(tmp_path / "huge.yaml", text.replace("spad_kb: [32, 128]", f"spad_kb: [32, {2**50}]"))
    assert_refused(["sweep", file, "--out", tmp_path / "out"], "huge.yaml", "too many for a model")
    assert not (tmp_path / "out").exists()


def test_onnx_files(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(bytes(range(256)) * 64)
    assert_refused(["import", garbage], "garbage.onnx", "not an ONNX model")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert_refused(["import", empty], "empty.onnx", "not an ONNX model")
    model = ROOT / "instances" / "onnx" / "small-cnn.onnx"
    assert_refused(["import", model, "--batch", "1"], "small-cnn.onnx", "larger than the limit",
                   "DLAOPT_MAX_ONNX_MB", env={"DLAOPT_MAX_ONNX_MB": "0.001"})
    instance = write(tmp_path / "onnx.yaml", yaml.safe_dump({
        "problem": "pinning", "workload": {"onnx": "garbage.onnx", "batch": 1},
        "hardware": {"preset": "smaug-nvdla"}}))
    assert_refused(["solve", instance], "onnx.yaml", "key 'workload.onnx'", "not an ONNX model")


# ------------------------------------------------------------------------------------------------ buffer CSV files
CSV_HEADER = "id,lower,upper,size\n"


@pytest.mark.parametrize(("name", "body", "needles"), [
    ("number.csv", CSV_HEADER + "a,0,1," + "9" * 5000 + "\n", ["line 2, column 'size'", "too large", LIMIT]),
    ("big.csv", CSV_HEADER + f"a,0,1,{2**70}\n", ["line 2, column 'size'", "too large", LIMIT]),
    ("sum.csv", CSV_HEADER + "".join(f"b{i},0,1,{2**52}\n" for i in range(3)),
     ["line 4", "too many for a model", LIMIT]),
    ("many.csv", CSV_HEADER + "b,0,1,1\n" * 200_000, ["more than 100,000 lines of buffers"]),
    ("longid.csv", CSV_HEADER + "x" * 100_000 + ",0,1,4\n", ["line 2, column 'id'", "100,000 characters",
                                                            str(MAX_STRING_CHARS)]),
    ("field.csv", CSV_HEADER + "x" * 1_000_000 + ",0,1,4\n", ["line 2", "not valid CSV"]),
    ("columns.csv", "id," * 1_000_000 + "\n", ["line 1", "columns 'id' and 'id' both"]),
    ("nul.csv", CSV_HEADER + "a,0,1,4\n\x00\n", ["line 3", "NUL"]),
])
def test_hostile_buffer_csv(tmp_path: Path, name: str, body: str, needles: list[str]) -> None:
    file = write(tmp_path / name, body)
    assert_refused(["solve", file, "--capacity", "64"], name, *needles)


def test_hostile_buffer_csv_bytes_and_sizes(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.csv"
    garbage.write_bytes(bytes(range(256)) * 64)
    assert_refused(["solve", garbage, "--capacity", "64"], "garbage.csv", "not UTF-8 text")
    big = write(tmp_path / "huge.csv", CSV_HEADER + "a,0,1,4\n" * (9 * 1024 * 1024 // 8))
    assert_refused(["show", big, "--capacity", "64"], "huge.csv", "larger than the limit of 8 MiB", MAX_FILE_ENV)
    plan = write(tmp_path / "plan.csv", CSV_HEADER + "a,0,1,4\n")
    assert_refused(["solve", plan, "--capacity", str(2**70)], "--capacity", "too large", LIMIT)
    # a buffer CSV named by an instance file: located at its key, with the CSV's line
    instance = write(tmp_path / "inst.yaml", yaml.safe_dump({
        "problem": "allocation", "workload": {"csv": "number.csv"}, "hardware": {"memory": {"capacity_bytes": 64}}}))
    write(tmp_path / "number.csv", CSV_HEADER + "a,0,1," + "9" * 5000 + "\n")
    assert_refused(["solve", instance], "inst.yaml", "key 'workload.csv'", "number.csv", "line 2, column 'size'",
                   "too large", LIMIT)
    inline = write(tmp_path / "inline.yaml", yaml.safe_dump({
        "problem": "allocation", "hardware": {"memory": {"capacity_bytes": 64}},
        "workload": {"buffers": [{"id": i, "lower": 0, "upper": 1, "size": 2**52} for i in range(3)]}}))
    assert_refused(["solve", inline], "inline.yaml", "key 'workload.buffers[2].size'", "too many for a model",
                   LIMIT)


# ------------------------------------------------------------------------------------------------ in process
def test_results_jsonl_with_hostile_lines(tmp_path: Path) -> None:
    good = {"instance": "a", "method": "greedy", "objective": 1.0}
    path = tmp_path / "results.jsonl"
    path.write_bytes(("[" * 100_000 + "\n" + json.dumps(good) + "\n" + '{"instance": NaN\n').encode()
                     + b"\xff\xfe{}\n")
    records = read_records(path)
    assert [r["instance"] for r in records.values()] == ["a"]


def test_documents_built_in_code_are_checked() -> None:
    doc = tiny()
    doc["options"]["chunk_fraction"] = float("nan")
    with pytest.raises(InputError, match=r"key 'options.chunk_fraction': nan is not a finite number"):
        instance_from_dict(doc, source="built")
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(InputError, match="nesting deeper"):
        check_document({"a": loop})


def test_limits_are_not_too_tight(tmp_path: Path) -> None:
    """The deepest shipped document, and a document at the limits, load."""
    nested: Any = 1
    for _ in range(MAX_DEPTH - 1):
        nested = [nested]
    parse_document(json.dumps({"k": nested}), file="f.json", json_syntax=True)
    parse_document(yaml.safe_dump({"k": nested}), file="f.yaml")
    parse_document(f"a: {MAX_NUMBER}\nb: {-float(MAX_NUMBER)}\nc: '{'x' * MAX_STRING_CHARS}'\n", file="f.yaml")
    for path in sorted((ROOT / "instances").rglob("*.yaml")):
        if "malformed" not in path.parts:
            load_mapping(path, what="anything")
