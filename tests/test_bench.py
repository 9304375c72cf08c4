"""Benchmark suites (``dlaopt bench``): the smoke suite's reports, resuming, ratios, the README block, bad suites."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import assert_rejected_file
from click.testing import CliRunner

from dlaopt import bench, harness
from dlaopt.bench import BenchEvent, load_suite, run_suite, update_readme
from dlaopt.cli import cli
from dlaopt.errors import InputError
from dlaopt.results import ratio_to_best

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "instances" / "suites"
PROBLEM_SUITES = ("pinning", "mapping", "systolic", "multiaccel", "bankmap")

# a fast suite (well under a second) for the resume tests: 8 pairs over three problems, one inline instance
QUICK: dict[str, Any] = {
    "name": "quick",
    "solve": {"time_limit": 5, "seed": 0, "threads": 1},
    "entries": [
        {"instance": "pinning/tiny-inline.yaml", "methods": ["naive", "greedy", "exact"]},
        {"instance": "bankmap/residual-block-inline.yaml"},
        {"name": "chain", "methods": ["naive", "exact"], "instance": {
            "problem": "pinning",
            "workload": {"name": "chain", "dtype_bytes": 1,
                         "tensors": [{"name": "x", "shape": [1, 8, 8, 8], "role": "input"},
                                     {"name": "y", "shape": [1, 8, 8, 8], "role": "output"}],
                         "operators": [{"name": "relu", "kind": "activation", "inputs": ["x"], "outputs": ["y"]}]},
            "hardware": {"name": "mini", "pe_array": {"axes": [["pe", 4]]}, "dma": {"bandwidth_bytes_per_cycle": 8},
                         "memories": [{"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": 8},
                                      {"name": "spad0", "kind": "scratchpad", "capacity_kb": 1}]}}},
    ],
}
QUICK_PAIRS = 8


class CallCounter:
    """Wraps ``harness.solve`` (which run_suite calls) and counts the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.original = harness.solve

    def __call__(self, p: harness.Prepared, method: str, **kwargs: Any) -> harness.Result:
        self.calls.append((p.instance.name, method))
        return self.original(p, method, **kwargs)


@pytest.fixture
def counter(monkeypatch: pytest.MonkeyPatch) -> Iterator[CallCounter]:
    c = CallCounter()
    monkeypatch.setattr(harness, "solve", c)
    yield c


def write_suite(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[bench.BenchReport, Path]:
    out = tmp_path_factory.mktemp("smoke")
    return run_suite("smoke", out), out


# ------------------------------------------------------------------------------------------------ the smoke suite
def test_smoke_suite_writes_csv_json_md_with_a_verified_row_per_pair(
        smoke_run: tuple[bench.BenchReport, Path]) -> None:
    report, out = smoke_run
    suite = load_suite("smoke")
    pairs = [(e.name, m) for e, m in suite.pairs]
    assert report.complete and report.ran == len(pairs) and report.skipped == 0
    assert {e.instance.problem for e in suite.entries} == set(PROBLEM_SUITES)
    assert any(e.instance_file == "inline" for e in suite.entries)

    with (out / "results.csv").open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ())[:9] == ("instance", "method", "status", "objective", "bound", "gap",
                                                      "time_s", "ratio_to_best", "verified")
        rows = list(reader)
    assert [(r["instance"], r["method"]) for r in rows] == pairs
    for r in rows:
        assert r["verified"] == "True", r
        assert r["status"] in ("optimal", "feasible"), r
        assert float(r["ratio_to_best"]) >= 1.0 or r["ratio_to_best"] == "inf"

    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["suite"] == "smoke" and doc["complete"] is True
    assert [(r["instance"], r["method"]) for r in doc["rows"]] == pairs
    env = doc["environment"]
    for key in ("dlaopt", "python", "numpy", "ortools", "highspy", "threads", "cpu_count", "platform", "ram_bytes",
                "date"):
        assert key in env
    assert env["threads"] == 1 and env["ortools"] and env["highspy"]

    md = (out / "results.md").read_text(encoding="utf-8")
    assert "| instance | method | status | objective | bound | gap | time [s] | ratio to best | verified |" in md
    assert "OR-Tools" in md and "highspy" in md and "CPUs" in md
    assert md.count("| yes |") == len(pairs)
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(pairs)

    # the exact method proves the tiny pinning instance's optimum; the best of every instance has ratio 1
    exact = next(r for r in doc["rows"] if r["instance"] == "tiny-inline" and r["method"] == "exact")
    assert exact["status"] == "optimal" and exact["bound"] == exact["objective"] and exact["gap"] == 0
    for name in {r["instance"] for r in doc["rows"]}:  # (an infinite ratio is null in JSON: best 0, this one not)
        assert min(r["ratio_to_best"] for r in doc["rows"] if r["instance"] == name and r["ratio_to_best"]) == 1.0


def test_second_run_skips_every_finished_pair(smoke_run: tuple[bench.BenchReport, Path],
                                              counter: CallCounter) -> None:
    first, out = smoke_run
    before = (out / "results.jsonl").read_text(encoding="utf-8")
    events: list[BenchEvent] = []
    again = run_suite("smoke", out, progress=events.append)
    assert counter.calls == []
    assert again.ran == 0 and again.skipped == len(first.rows) and again.complete
    assert [e.kind for e in events] == ["start"] and events[0].done == events[0].total
    assert (out / "results.jsonl").read_text(encoding="utf-8") == before  # same records, same timestamps
    assert [r["finished_at"] for r in again.rows] == [r["finished_at"] for r in first.rows]


def test_interrupted_run_resumes_with_the_rest(tmp_path: Path, counter: CallCounter) -> None:
    suite = write_suite(tmp_path / "quick.yaml", QUICK)
    out = tmp_path / "out"
    k = 3

    def stop_after_k(ev: BenchEvent) -> None:
        if ev.kind == "done" and ev.done == k:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, out, progress=stop_after_k)
    assert len(counter.calls) == k
    assert len((out / "results.jsonl").read_text(encoding="utf-8").splitlines()) == k
    md = (out / "results.md").read_text(encoding="utf-8")
    assert f"**Incomplete**: {k} of {QUICK_PAIRS}" in md
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["complete"] is False

    first_calls = list(counter.calls)
    report = run_suite(suite, out)
    rest = counter.calls[k:]
    assert len(rest) == QUICK_PAIRS - k and not set(rest) & set(first_calls)
    assert report.ran == QUICK_PAIRS - k and report.skipped == k and report.complete
    assert len(report.rows) == QUICK_PAIRS
    assert len((out / "results.jsonl").read_text(encoding="utf-8").splitlines()) == QUICK_PAIRS


def test_truncated_results_file_reruns_only_the_missing_pairs(tmp_path: Path, counter: CallCounter) -> None:
    suite = write_suite(tmp_path / "quick.yaml", QUICK)
    out = tmp_path / "out"
    run_suite(suite, out)
    assert len(counter.calls) == QUICK_PAIRS
    jsonl = out / "results.jsonl"
    lines = jsonl.read_text(encoding="utf-8").splitlines()
    k = 5
    jsonl.write_text("\n".join(lines[:k]) + "\n" + lines[k][: len(lines[k]) // 2], encoding="utf-8")  # cut mid-line
    counter.calls.clear()
    report = run_suite(suite, out)
    assert len(counter.calls) == QUICK_PAIRS - k
    assert report.skipped == k and report.complete
    after = jsonl.read_text(encoding="utf-8").splitlines()
    assert len(after) == QUICK_PAIRS and all(json.loads(line) for line in after)


def test_no_resume_and_a_changed_configuration_run_again(tmp_path: Path, counter: CallCounter) -> None:
    suite = write_suite(tmp_path / "quick.yaml", QUICK)
    out = tmp_path / "out"
    run_suite(suite, out)
    counter.calls.clear()
    run_suite(suite, out, resume=False)
    assert len(counter.calls) == QUICK_PAIRS
    assert len((out / "results.jsonl").read_text(encoding="utf-8").splitlines()) == QUICK_PAIRS
    changed = {**QUICK, "entries": [{**QUICK["entries"][0], "solve": {"time_limit": 7}}, *QUICK["entries"][1:]]}
    write_suite(suite, changed)
    counter.calls.clear()
    report = run_suite(suite, out)
    assert [m for _, m in counter.calls] == ["naive", "greedy", "exact"]  # only the entry whose options changed
    assert report.rows[0]["time_limit"] == 7


# ------------------------------------------------------------------------------------------------ ratios
def test_ratio_to_best_per_instance() -> None:
    rows: list[dict[str, Any]] = [
        {"instance": "a", "objective": 10.0, "verified": True},
        {"instance": "a", "objective": 15.0, "verified": True},
        {"instance": "a", "objective": 5.0, "verified": False},  # unverified: not the best, no ratio
        {"instance": "a", "objective": None, "verified": False},
        {"instance": "b", "objective": 0.0, "verified": True},
        {"instance": "b", "objective": 3.0, "verified": True},
        {"instance": "c", "objective": None, "verified": False},
    ]
    r = ratio_to_best(rows)
    assert r[:4] == [1.0, 1.5, None, None]
    assert r[4] == 1.0 and r[5] is not None and math.isinf(r[5])
    assert r[6] is None


def test_ratio_column_of_a_run(smoke_run: tuple[bench.BenchReport, Path]) -> None:
    report, _ = smoke_run
    by = {(r["instance"], r["method"]): r for r in report.rows}
    naive, greedy = by[("tiny-inline", "naive")], by[("tiny-inline", "greedy")]
    best = min(r["objective"] for r in report.rows if r["instance"] == "tiny-inline")
    assert naive["ratio_to_best"] == pytest.approx(naive["objective"] / best)
    assert greedy["ratio_to_best"] == pytest.approx(greedy["objective"] / best)


# ------------------------------------------------------------------------------------------------ README block
README = """# project

intro text
<!-- bench:smoke -->
old table
<!-- /bench:smoke -->

middle
<!-- bench:other -->
keep me
<!-- /bench:other -->
tail
"""


def test_update_readme_replaces_exactly_the_marker_block(tmp_path: Path,
                                                         smoke_run: tuple[bench.BenchReport, Path]) -> None:
    report, out = smoke_run
    readme = tmp_path / "README.md"
    readme.write_text(README, encoding="utf-8")
    result = CliRunner().invoke(cli, ["bench", "smoke", "--out", str(out), "--update-readme", "--readme",
                                      str(readme)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = readme.read_text(encoding="utf-8")
    start, end = text.index("<!-- bench:smoke -->"), text.index("<!-- /bench:smoke -->")
    assert text[:start] == README[:README.index("<!-- bench:smoke -->")]
    assert text[end:] == README[README.index("<!-- /bench:smoke -->"):]
    block = text[start + len("<!-- bench:smoke -->"):end]
    assert "old table" not in block and block == "\n" + report.headline + "\n"
    assert "| instance | objective |" in block and "exact gap" in block and "`dlaopt bench smoke`" in block
    assert "2,536 (1.000)" in block  # tiny-inline's optimum with its ratio
    update_readme(readme, "smoke", report.headline)  # idempotent
    assert readme.read_text(encoding="utf-8") == text

    with pytest.raises(InputError, match="bench:missing"):
        update_readme(readme, "missing", "x")
    result = CliRunner().invoke(cli, ["bench", "smoke", "--out", str(out), "--update-readme", "--readme",
                                      str(tmp_path / "nope.md")])
    assert result.exit_code == 2 and "nope.md" in result.output
    other = tmp_path / "OTHER.md"
    other.write_text("# no markers\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["bench", "smoke", "--out", str(tmp_path / "never"), "--update-readme",
                                      "--readme", str(other)])
    assert result.exit_code == 2 and "<!-- bench:smoke -->" in result.stderr
    assert not (tmp_path / "never").exists()  # checked before anything ran


# ------------------------------------------------------------------------------------------------ bad suites
@pytest.mark.parametrize(("change", "where"), [
    ({"entriez": []}, "'entriez'"),
    ({"entries": [{"instance": "pinning/no-such-file.yaml"}]}, "key 'entries[0].instance'"),
    ({"entries": [{"instance": "pinning/tiny-inline.yaml", "methods": ["naive", "simplex"]}]},
     "key 'entries[0].methods[1]'"),
    ({"entries": [{"instance": "pinning/tiny-inline.yaml"}, {"instance": "pinning/tiny-inline.yaml"}]},
     "key 'entries[1].name'"),
    ({"entries": [{"instance": "pinning/tiny-inline.yaml", "solve": {"time_limit": -1}}]},
     "key 'entries[0].solve.time_limit'"),
    ({"entries": [{"instance": "pinning/tiny-inline.yaml", "solve": {"solver": "gurobi"}}]},
     "key 'entries[0].solve.solver'"),
    ({"entries": [{"instance": {"problem": "pinning", "workload": {"zoo": "lenet5"}}}]},
     "key 'entries[0].instance"),
    ({"entries": [{"instance": "pinning/tiny-inline.yaml", "override": {"objective": "speed"}}]},
     "key 'entries[0].override'"),
])
def test_bad_suite_is_a_located_input_error(tmp_path: Path, change: dict[str, Any], where: str) -> None:
    doc = {"name": "bad", **{k: v for k, v in change.items()}}
    if "entriez" in change:
        doc["entries"] = [{"instance": "pinning/tiny-inline.yaml"}]
    path = write_suite(tmp_path / "bad.yaml", doc)
    assert_rejected_file(load_suite, path, where, "bench", tmp_path / "out")


def test_unknown_suite_and_yaml_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["bench", "no-such-suite"])
    assert result.exit_code == 2 and "no suite 'no-such-suite'" in result.stderr and "smoke" in result.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("entries: [instance: {\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["bench", str(broken)])
    assert result.exit_code == 2 and "broken.yaml" in result.stderr and "line" in result.stderr


# ------------------------------------------------------------------------------------------------ CLI and suites
def test_cli_prints_the_table_and_stays_quiet_without_a_tty(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "quick.yaml", QUICK)
    result = CliRunner().invoke(cli, ["bench", str(suite), "--out", str(tmp_path / "out")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Benchmark suite `quick`")
    assert "| tiny-inline | exact | optimal | 2,536 | 2,536 | 0.00% |" in result.stdout
    assert "━" not in result.stderr  # no progress bar when stderr is not a terminal
    assert "8 run, 0 skipped" in result.stderr
    for name in ("results.jsonl", "results.csv", "results.json", "results.md"):
        assert (tmp_path / "out" / name).is_file()


def test_shipped_suites_load() -> None:
    names = bench.available_suites()
    for name in (*PROBLEM_SUITES, "smoke", "systolic-table3", "multiaccel-magma"):
        assert name in names
    for name in names:
        suite = load_suite(name)
        assert suite.name == name and suite.pairs
        if name in PROBLEM_SUITES:
            assert {e.instance.problem for e in suite.entries} == {name}
    table3 = load_suite("systolic-table3")
    assert [e.instance.objective for e in table3.entries] == ["energy", "delay", "ed", "e2d", "ed2"]


def test_readme_has_a_filled_block_per_problem_suite() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.index("## Benchmark suites") < text.index("## Library API")
    for name in PROBLEM_SUITES:
        start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
        assert text.count(start) == 1 and text.count(end) == 1
        block = text[text.index(start) + len(start):text.index(end)]
        assert f"`dlaopt bench {name}`" in block and "| instance | objective |" in block
