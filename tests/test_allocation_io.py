"""Static-allocation files and command line: the buffer CSV (both header spellings, alignment and offset columns,
located errors), the YAML instance forms ({buffers} / {csv}, {memory}), the command line on a CSV with --capacity,
and the round trip read -> solve -> write with offsets -> read back -> verified by the evaluator."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from cli_helpers import ROOT, assert_bad_input, run_dlaopt
from click.testing import CliRunner

from dlaopt.cli import cli
from dlaopt.errors import InputError
from dlaopt.hardware.arena import Arena
from dlaopt.io import SHIPPED_SCHEMA_PATH, instance_from_dict, load_instance
from dlaopt.io.buffers import (
    MAX_BUFFERS,
    buffers_csv_text,
    parse_buffers_csv,
    read_buffer_table,
    read_buffers_csv,
    write_buffers_csv,
)
from dlaopt.io.document import MAX_NUMBER
from dlaopt.io.instance import instance_from_buffers
from dlaopt.workload.buffers import AllocBuffer, BufferSet

EXAMPLES = ROOT / "instances" / "allocation"
SMALL = EXAMPLES / "small-inline.yaml"
PLANTED_CSV = EXAMPLES / "planted-24.csv"
PLANTED_YAML = EXAMPLES / "planted-24.yaml"
PLANTED_CAPACITY = 65536

TEXT = "id,lower,upper,size\na,0,2,4\nb,1,3,8\nc,2,4,4\n"
EXPECTED = (AllocBuffer("a", 0, 2, 4), AllocBuffer("b", 1, 3, 8), AllocBuffer("c", 2, 4, 4))


def invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def placement_violations(buffers: tuple[AllocBuffer, ...], offsets: dict[str, int], capacity: int | None) -> list[str]:
    """A direct check of a placement, pair by pair (independent of the problem's evaluator)."""
    bad = [f"{b.id}: no offset" for b in buffers if b.id not in offsets]
    for b in buffers:
        o = offsets.get(b.id)
        if o is None:
            continue
        if o < 0 or o % b.alignment:
            bad.append(f"{b.id}: offset {o} not a non-negative multiple of {b.alignment}")
        if capacity is not None and o + b.size > capacity:
            bad.append(f"{b.id}: ends at {o + b.size} > {capacity}")
    for i, x in enumerate(buffers):
        for y in buffers[i + 1:]:
            if x.id in offsets and y.id in offsets and x.lower < y.upper and y.lower < x.upper:
                ox, oy = offsets[x.id], offsets[y.id]
                if ox < oy + y.size and oy < ox + x.size:
                    bad.append(f"{x.id} and {y.id} overlap")
    return bad


# ================================================================================================ CSV reading
def test_both_header_spellings_read_the_same_buffers() -> None:
    canonical = parse_buffers_csv(TEXT, file="a.csv")
    other = parse_buffers_csv(TEXT.replace("id,lower,upper,size", "buffer,start,end,size"), file="b.csv")
    assert canonical.buffers.buffers == other.buffers.buffers == EXPECTED
    assert canonical.spelling == {"id": "id", "lower": "lower", "upper": "upper", "size": "size"}
    assert other.spelling == {"id": "buffer", "lower": "start", "upper": "end", "size": "size"}
    mixed = parse_buffers_csv("Size , BUFFER,lower,End\n4,a,0,2\n8,b,1,3\n4,c,2,4\n", file="c.csv")
    assert mixed.buffers.buffers == EXPECTED


def test_whitespace_bom_crlf_blank_lines_and_quoted_ids() -> None:
    text = "\ufeff id , lower ,upper, size \r\n\r\n a , 0 , 2 , 4 \r\n\"b\",1,3,8\r\n  \r\nc,2,4,+4\r\n\r\n"
    assert parse_buffers_csv(text, file="w.csv").buffers.buffers == EXPECTED
    quoted = parse_buffers_csv('id,lower,upper,size\n"x,y",0,1,4\n"名前 🙂",0,1,4\n', file="q.csv")
    assert [b.id for b in quoted.buffers.buffers] == ["x,y", "名前 🙂"]


def test_alignment_column_and_default_alignment() -> None:
    text = "id,lower,upper,size,alignment\na,0,2,4,\nb,1,3,8,64\n"
    table = parse_buffers_csv(text, file="al.csv", alignment=16)
    assert [b.alignment for b in table.buffers.buffers] == [16, 64]  # a blank cell: the memory's alignment
    assert [b.alignment for b in parse_buffers_csv(TEXT, file="t.csv", alignment=8).buffers.buffers] == [8, 8, 8]
    assert [b.alignment for b in parse_buffers_csv(TEXT, file="t.csv").buffers.buffers] == [1, 1, 1]


def test_offset_column_is_read_as_a_placement() -> None:
    table = parse_buffers_csv("id,lower,upper,size,offset\na,0,2,4,0\nb,1,3,8,4\nc,2,4,4,\n", file="o.csv")
    assert table.buffers.buffers == EXPECTED and table.offsets == {"a": 0, "b": 4}
    assert not table.has_offsets
    table = parse_buffers_csv("id,lower,upper,size,offset\na,0,2,4,0\nb,1,3,8,4\nc,2,4,4,0\n", file="o.csv")
    assert table.has_offsets and table.offsets == {"a": 0, "b": 4, "c": 0}
    assert not parse_buffers_csv(TEXT, file="t.csv").has_offsets


def random_buffers(rng: random.Random, n: int) -> tuple[tuple[AllocBuffer, ...], dict[str, int]]:
    buffers = []
    for i in range(n):
        lower = rng.randrange(0, 20)
        ident = rng.choice([f"b{i}", f"buf {i}", f"q,{i}", f'"{i}"', f"ü{i}"])
        buffers.append(AllocBuffer(ident, lower, lower + rng.randrange(1, 10), rng.randrange(1, 10**6),
                                   rng.choice([1, 1, 8, 64])))
    offsets = {b.id: rng.randrange(0, 10**9) for b in buffers if rng.random() < 0.8}
    return tuple(buffers), offsets


@pytest.mark.parametrize("seed", range(5))
def test_write_then_read_is_the_identity(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    buffers, offsets = random_buffers(rng, rng.randrange(1, 40))
    spelling = rng.choice([None, {"id": "buffer", "lower": "start", "upper": "end"}])
    path = write_buffers_csv(tmp_path / "b.csv", BufferSet(buffers), offsets, spelling=spelling)
    table = read_buffer_table(path)
    assert table.buffers.buffers == buffers and table.offsets == offsets
    assert table.spelling["id"] == ("buffer" if spelling else "id")
    assert ("alignment" in table.spelling) == any(b.alignment != 1 for b in buffers)
    # without offsets: no offset column; the buffers alone read back the same
    assert "offset" not in buffers_csv_text(buffers).splitlines()[0]
    assert read_buffers_csv(write_buffers_csv(tmp_path / "c.csv", buffers)).buffers == buffers


# ------------------------------------------------------------------------------------------------ bad CSV
H = "id,lower,upper,size\n"
BAD_CSV = [
    # (text, what the one-line message must say)
    ("", ["the file is empty"]),
    ("\n \n", ["the file is empty"]),
    (H, ["header but no buffers"]),
    ("0,1,2,3\n", ["line 1", "not a header", "'0' is a number"]),
    ("id,lower,upper\na,0,1\n", ["line 1", "no column 'size'"]),
    ("id,lower,uper,size\n", ["line 1", "unknown column 'uper'", "did you mean 'upper'"]),
    ("id,buffer,lower,upper,size\n", ["line 1", "'id' and 'buffer' both"]),
    (H + "a,0,1\n", ["line 2 has 3 value(s)", "4 column(s)"]),
    (H + "a,0,1,4,5\n", ["line 2 has 5 value(s)"]),
    (H + "a,0,1,x\n", ["line 2, column 'size'", "'x' is not an integer"]),
    (H + "a,0,1,1.5\n", ["line 2, column 'size'", "'1.5' is not an integer"]),
    (H + "a,0,1,1e3\n", ["line 2, column 'size'", "not an integer"]),
    (H + "a,0,1,\n", ["line 2, column 'size'", "missing"]),
    (H + "a,-1,1,4\n", ["line 2, column 'lower'", "-1 is negative"]),
    (H + "a,0,0,4\n", ["line 2, column 'upper'", "0 is zero"]),
    (H + "a,3,3,4\n", ["line 2, column 'upper'", "[3, 3)", "empty"]),
    (H + "a,5,2,4\n", ["line 2, column 'upper'", "[5, 2)"]),
    (H + "a,0,1,0\n", ["line 2, column 'size'", "0 is zero"]),
    (H + "a,0,1,4\n\na,1,2,4\n", ["line 4, column 'id'", "'a' is already used on line 2"]),
    (H + ",0,1,4\n", ["line 2, column 'id'", "empty"]),
    (H + f"a,0,1,{MAX_NUMBER + 1}\n", ["line 2, column 'size'", "too large", str(MAX_NUMBER)]),
    (H + "a,0,1," + "9" * 5000 + "\n", ["line 2, column 'size'", "5000 digits", "too large"]),
    (H + f"a,0,1,{MAX_NUMBER}\nb,0,1,{MAX_NUMBER}\n", ["line 3", "too many for a model"]),
    ("id,lower,upper,size,alignment\na,0,1,4,0\n", ["line 2, column 'alignment'", "0 is zero"]),
    ("id,lower,upper,size,offset\na,0,1,4,-3\n", ["line 2, column 'offset'", "-3 is negative"]),
    ("buffer,start,end,size\na,2,1,4\n", ["line 2, column 'end'", "end greater than start"]),
    (H + '"a,0,1,4\n', ["line 2", "not valid CSV"]),
    (H + "a\x00,0,1,4\n", ["line 2", "NUL"]),
    (H + "a" * 5000 + ",0,1,4\n", ["line 2, column 'id'", "5,000 characters"]),
]


@pytest.mark.parametrize(("text", "needles"), BAD_CSV, ids=[f"bad{i}" for i in range(len(BAD_CSV))])
def test_bad_csv_is_a_located_one_line_error(text: str, needles: list[str]) -> None:
    with pytest.raises(InputError) as info:
        parse_buffers_csv(text, file="plan.csv")
    message = info.value.render()
    assert message.startswith("plan.csv: "), message
    assert "\n" not in message, message
    for needle in needles:
        assert needle in message, (needle, message)


def test_bad_files(tmp_path: Path) -> None:
    binary = tmp_path / "bin.csv"
    binary.write_bytes(H.encode() + b"a,0,1,4\n\xff\xfe,0,1,4\n")
    with pytest.raises(InputError, match=r"bin.csv: line 3: not UTF-8 text"):
        read_buffers_csv(binary)
    with pytest.raises(InputError, match="file not found"):
        read_buffers_csv(tmp_path / "nope.csv")
    many = H + "".join(f"b{i},0,1,1\n" for i in range(MAX_BUFFERS + 1))
    with pytest.raises(InputError, match=f"more than {MAX_BUFFERS:,} lines of buffers"):
        parse_buffers_csv(many, file="many.csv")
    assert len(parse_buffers_csv(H + "".join(f"b{i},0,1,1\n" for i in range(MAX_BUFFERS)),
                                 file="ok.csv").buffers.buffers) == MAX_BUFFERS


# ================================================================================================ YAML instances
def test_shipped_examples_load() -> None:
    small = load_instance(SMALL)
    assert small.problem == "allocation" and small.objective == "feasibility"
    assert isinstance(small.workload, BufferSet) and small.buffers is small.workload
    assert small.arena == Arena("spm", 12288, 16)
    alignments = {b.id: b.alignment for b in small.buffers.buffers}
    assert alignments["add"] == 64 and alignments["input"] == 16  # its own, else the memory's
    planted = load_instance(PLANTED_YAML)
    assert planted.buffers.buffers == read_buffers_csv(PLANTED_CSV, alignment=1024).buffers
    assert planted.arena.capacity_bytes == PLANTED_CAPACITY
    assert planted.document["workload"] == {"csv": "planted-24.csv"}  # kept as written (relative to the file)
    validator = jsonschema.Draft202012Validator(json.loads(SHIPPED_SCHEMA_PATH.read_text()))
    for path in (SMALL, PLANTED_YAML):
        validator.validate(yaml.safe_load(path.read_text()))


def test_planted_example_is_tight() -> None:
    """Every step's live bytes equal the capacity (so only a gap-free placement fits)."""
    buffers = read_buffers_csv(PLANTED_CSV).buffers
    steps = range(max(b.upper for b in buffers))
    assert {sum(b.size for b in buffers if b.lower <= t < b.upper) for t in steps} == {PLANTED_CAPACITY}


def test_document_round_trip(tmp_path: Path) -> None:
    for path in (SMALL, PLANTED_YAML):
        inst = load_instance(path)
        again = instance_from_dict(dict(inst.document), source=str(path))
        assert again.workload == inst.workload and again.hardware == inst.hardware
        assert again.document == inst.document


def small_doc() -> dict[str, Any]:
    return yaml.safe_load(SMALL.read_text(encoding="utf-8"))


BAD_YAML = [
    # (change to the small instance, where the error is, what it says)
    (lambda d: d["workload"]["buffers"][1].update(id="input"), "workload.buffers[1].id", "already used"),
    (lambda d: d["workload"]["buffers"][0].update(upper=0), "workload.buffers[0].upper", "must be positive"),
    (lambda d: d["workload"]["buffers"][0].update(upper=-1), "workload.buffers[0].upper", "-1 is negative"),
    (lambda d: d["workload"]["buffers"][1].update(lower=3), "workload.buffers[1].upper", "[3, 3)"),
    (lambda d: d["workload"]["buffers"][0].update(size=0), "workload.buffers[0].size", "sizes must be positive"),
    (lambda d: d["workload"]["buffers"][0].update(size=2**53), "workload.buffers[1].size", "too many for a model"),
    (lambda d: d["workload"]["buffers"][0].update(alignment=0), "workload.buffers[0].alignment", "positive"),
    (lambda d: d["workload"]["buffers"][0].update(offset=0), "workload.buffers[0]", "unknown key 'offset'"),
    (lambda d: d["workload"]["buffers"][0].pop("size"), "workload.buffers[0]", "missing required key 'size'"),
    (lambda d: d["workload"].update(buffers=[]), "workload.buffers", "must not be empty"),
    (lambda d: d["hardware"]["memory"].update(capacity_bytes=0), "hardware.memory.capacity_bytes", "positive"),
    (lambda d: d["hardware"]["memory"].update(capacity=8), "hardware.memory", "unknown key 'capacity'"),
    (lambda d: d["hardware"]["memory"].update(alignment=-4), "hardware.memory.alignment", "negative"),
    (lambda d: d.update(objective="energy"), "objective", "one of: feasibility, peak"),
    (lambda d: d.update(hardware={"preset": "smaug-nvdla"}), "hardware", "runs on one memory"),
    (lambda d: d.update(workload={"zoo": "lenet5"}), "workload", "does not take a graph workload"),
    (lambda d: d.update(problem="pinning", objective="transfers"), "workload", "does not take a buffers workload"),
    (lambda d: d.update(workload={"csv": "nope.csv"}), "workload.csv", "not found"),
]


@pytest.mark.parametrize(("change", "where", "needle"), BAD_YAML, ids=[f"bad{i}" for i in range(len(BAD_YAML))])
def test_bad_yaml_instances_are_located(change: Any, where: str, needle: str) -> None:
    doc = small_doc()
    change(doc)
    with pytest.raises(InputError) as info:
        instance_from_dict(doc, source="inst.yaml")
    message = info.value.render()
    assert f"key '{where}'" in message and needle in message, message


def test_pinning_refuses_a_memory(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "instances" / "pinning" / "tiny-inline.yaml").read_text(encoding="utf-8"))
    doc["hardware"] = {"memory": {"capacity_bytes": 1024}}
    with pytest.raises(InputError, match=r"key 'hardware'.*runs on one accelerator"):
        instance_from_dict(doc, source="p.yaml")


def test_csv_errors_inside_an_instance_name_both_files(tmp_path: Path) -> None:
    (tmp_path / "plan.csv").write_text(H + "a,0,1,4\nb,0,1,x\n", encoding="utf-8")
    doc = {"problem": "allocation", "workload": {"csv": "plan.csv"}, "hardware": {"memory": {"capacity_bytes": 8}}}
    with pytest.raises(InputError) as info:
        instance_from_dict(doc, source=str(tmp_path / "inst.yaml"))
    message = info.value.render()
    assert "inst.yaml, key 'workload.csv': buffer file 'plan.csv'" in message, message
    assert "line 3, column 'size': 'x' is not an integer" in message, message


def test_instance_from_buffers() -> None:
    buffers = BufferSet(EXPECTED, "three")
    inst = instance_from_buffers(buffers, capacity=12, objective="peak")
    assert inst.problem == "allocation" and inst.objective == "peak" and inst.name == "three"
    assert inst.arena == Arena("memory", 12, 1)
    again = instance_from_dict(dict(inst.document))  # its document is a valid instance of the same buffers
    assert again.workload == buffers and again.hardware == inst.hardware
    assert instance_from_buffers(buffers).arena.capacity_bytes is None
    with pytest.raises(InputError, match="key 'objective'.*unknown objective 'speed'"):
        instance_from_buffers(buffers, objective="speed")
    with pytest.raises(InputError, match="key 'hardware.memory.capacity_bytes'"):
        instance_from_buffers(buffers, capacity=0)
    with pytest.raises(InputError, match="key 'hardware.memory.alignment'"):
        instance_from_buffers(buffers, alignment=MAX_NUMBER + 1)


# ================================================================================================ command line
def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_without_capacity_names_the_option(tmp_path: Path) -> None:
    plan = write(tmp_path / "plan.csv", TEXT)
    proc = run_dlaopt("solve", plan)
    assert_bad_input(proc.returncode, proc.stderr, "plan.csv", "--capacity")
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == ""
    for command in ("show", "compare"):
        res = invoke(command, plan)
        assert_bad_input(res.exit_code, res.stderr, "plan.csv", "--capacity")


@pytest.mark.parametrize(("args", "needles"), [
    (["--capacity", "16", "--objective", "energy"], ["--objective", "unknown objective 'energy'", "peak"]),
    (["--capacity", str(2**60)], ["--capacity", "too large"]),
    (["--capacity", "16", "-o", "x.yaml", "--alignment", str(2**60)], ["--alignment", "too large"]),
])
def test_bad_options(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    plan = write(tmp_path / "plan.csv", TEXT)
    res = invoke("solve", plan, *args)
    assert_bad_input(res.exit_code, res.stderr, *needles)


def test_bad_csv_through_the_command_line(tmp_path: Path) -> None:
    plan = write(tmp_path / "plan.csv", H + "a,0,1,4\nb,0,1,-4\n")
    proc = run_dlaopt("solve", plan, "--capacity", "64")
    assert_bad_input(proc.returncode, proc.stderr, "plan.csv", "line 3, column 'size'", "-4 is negative")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_allocation_options_on_other_problems(tmp_path: Path) -> None:
    tiny = ROOT / "instances" / "pinning" / "tiny-inline.yaml"
    res = invoke("solve", tiny, "--capacity", "1024")
    assert_bad_input(res.exit_code, res.stderr, "--capacity applies to static-allocation instances", "pinning")
    res = invoke("solve", tiny, "--method", "greedy", "-o", tmp_path / "out.csv")
    assert_bad_input(res.exit_code, res.stderr, "out.csv", "offsets of buffers", "'pinning' instance")
    assert not (tmp_path / "out.csv").exists()
    res = invoke("solve", tiny, "--objective", "speed")
    assert_bad_input(res.exit_code, res.stderr, "--objective", "unknown objective 'speed'", "'pinning'")
    res = invoke("solve", tiny, "--method", "greedy", "--objective", "dma_cycles", "--json")  # --objective is general
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["objective_name"] == "dma_cycles"


# ================================================================================================ end to end
def live_bound(buffers: tuple[AllocBuffer, ...]) -> int:
    """The most bytes alive at one step (every placement's peak is at least this), step by step."""
    return max(sum(b.size for b in buffers if b.lower <= t < b.upper) for t in range(max(b.upper for b in buffers)))


def planted_csv(header: str, seed: int, pieces: int = 12, steps: int = 8, capacity: int = 4096,
                quantum: int = 256) -> str:
    """A (steps x capacity) rectangle cut at random into ``pieces`` buffers (time cuts and address cuts at multiples
    of ``quantum``): a placement at exactly ``capacity`` exists (the cut itself), with every offset aligned."""
    rng = random.Random(seed)
    rects = [(0, steps, 0, capacity)]
    while len(rects) < pieces:
        rects.sort(key=lambda r: (r[1] - r[0]) * (r[3] - r[2]))
        lo, hi, a, b = rects.pop()
        if (rng.random() < 0.5 and hi - lo > 1) or b - a <= quantum:
            t = rng.randrange(lo + 1, hi)
            rects += [(lo, t, a, b), (t, hi, a, b)]
        else:
            m = a + quantum * rng.randrange(1, (b - a) // quantum)
            rects += [(lo, hi, a, m), (lo, hi, m, b)]
    rng.shuffle(rects)
    return header + "\n" + "".join(f"p{i},{lo},{hi},{b - a}\n" for i, (lo, hi, a, b) in enumerate(rects))


@pytest.mark.parametrize(("header", "seed"), [("id,lower,upper,size", 0), ("buffer,start,end,size", 1)])
def test_csv_round_trip(tmp_path: Path, header: str, seed: int) -> None:
    """read -> solve -> write with offsets -> read back -> the evaluator (and a direct check) accepts it."""
    plan = write(tmp_path / "plan.csv", planted_csv(header, seed))
    solved = tmp_path / "plan-solved.csv"
    res = invoke("solve", plan, "--capacity", 4096, "--alignment", 256, "--time-limit", 60, "--json",
                 "-o", solved)
    assert res.exit_code == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["problem"] == "allocation" and result["verified"], result
    assert result["status"] in ("optimal", "feasible"), result  # a planted placement exists
    table = read_buffer_table(solved)
    original = read_buffers_csv(plan, alignment=256).buffers
    assert live_bound(original) == 4096  # tight: only a gap-free placement fits
    assert table.buffers.buffers == original  # the same buffers, in the same order, alignment written out
    assert table.spelling["id"] == header.split(",")[0] and table.spelling["lower"] == header.split(",")[1]
    assert table.has_offsets and table.offsets == {str(k): v for k, v in result["solution"]["offsets"].items()}
    assert placement_violations(original, table.offsets, 4096) == []
    # the problem's evaluator reads the offsets back, against the plan and against the solved file itself
    check = invoke("verify", plan, solved, "--capacity", 4096, "--alignment", 256, "--json")
    assert check.exit_code == 0, check.stderr
    assert json.loads(check.stdout)["verified"] is True
    check = invoke("verify", solved, solved, "--capacity", 4096)
    assert check.exit_code == 0, check.stderr
    # two buffers alive together moved onto each other: the evaluator rejects it, as the direct check does
    a, b = next((x, y) for i, x in enumerate(original) for y in original[i + 1:]
                if x.lower < y.upper and y.lower < x.upper)
    broken = write_buffers_csv(tmp_path / "broken.csv", original, {**table.offsets, b.id: table.offsets[a.id]})
    assert placement_violations(original, read_buffer_table(broken).offsets, 4096)
    check = invoke("verify", plan, broken, "--capacity", 4096, "--alignment", 256)
    assert check.exit_code == 1, check.stdout + check.stderr


def test_peak_objective_without_capacity(tmp_path: Path) -> None:
    plan = write(tmp_path / "plan.csv", "buffer,start,end,size\n" + "".join(
        f"b{i},{i % 5},{i % 5 + 1 + i % 3},{64 * (1 + (7 * i) % 5)}\n" for i in range(8)))
    out = tmp_path / "out.csv"
    res = invoke("solve", plan, "--objective", "peak", "--json", "-o", out)
    assert res.exit_code == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["verified"] and result["objective_name"] == "peak", result
    table = read_buffer_table(out)
    buffers = table.buffers.buffers
    assert placement_violations(buffers, table.offsets, None) == []
    peak = max(table.offsets[b.id] + b.size for b in buffers)
    assert result["objective"] == peak >= live_bound(buffers)


def test_infeasible_csv_writes_blank_offsets(tmp_path: Path) -> None:
    plan = write(tmp_path / "plan.csv", TEXT)  # 12 bytes alive at steps 1 and 2
    out = tmp_path / "out.csv"
    res = invoke("solve", plan, "--capacity", 11, "--json", "-o", out)
    assert res.exit_code == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["status"] == "infeasible" and "step" in result["message"], result
    table = read_buffer_table(out)
    assert table.buffers.buffers == EXPECTED and table.offsets == {} and "offset" in table.spelling
    check = invoke("verify", plan, out, "--capacity", 11)
    assert_bad_input(check.exit_code, check.stderr, "out.csv", "3 buffer(s) have no offset", "'a'")


def test_show_and_compare_take_a_csv(tmp_path: Path) -> None:
    res = invoke("show", PLANTED_CSV, "--capacity", PLANTED_CAPACITY, "--json")
    assert res.exit_code == 0, res.stderr
    shown = json.loads(res.stdout)
    assert shown["problem"] == "allocation" and shown["workload"]["buffers"] == 24
    assert shown["hardware"]["capacity_bytes"] == PLANTED_CAPACITY
    res = invoke("show", SMALL, "--capacity", 20000, "--alignment", 32, "--json")  # YAML: the options replace
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["hardware"] == {"memory": "spm", "capacity_bytes": 20000, "alignment": 32}
    res = invoke("show", SMALL)
    assert res.exit_code == 0 and "spm" in res.stdout, res.stderr
    plan = write(tmp_path / "plan.csv", planted_csv("id,lower,upper,size", 2))
    res = invoke("compare", plan, "--capacity", 4096, "--methods", "greedy_size,best_fit,exact", "--time-limit", 30,
                 "--json")
    assert res.exit_code == 0, res.stderr
    results = json.loads(res.stdout)
    assert [r["method"] for r in results] == ["greedy_size", "best_fit", "exact"]
    assert all(r["problem"] == "allocation" for r in results)
    assert results[-1]["verified"] and results[-1]["status"] == "optimal", results[-1]  # a planted placement exists


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_examples_solve_and_verify(tmp_path: Path, path: Path) -> None:
    out = tmp_path / "solution.yaml"
    res = invoke("solve", path, "--time-limit", 30, "--json", "-o", out)
    assert res.exit_code == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["verified"] and result["status"] in ("optimal", "feasible"), result
    check = invoke("verify", path, out)
    assert check.exit_code == 0, check.stderr
