"""Plots (``dlaopt plot`` and :mod:`dlaopt.plots`): every kind renders from the CLI for a shipped instance of each
problem — the file is written, non-empty, a PNG of exactly the requested size (figure size x dpi) or a parseable
SVG of the requested size in points —, comparisons and the trace plot render, and bad input exits with 2 and a
one-line message, never a traceback. The CLI runs in subprocesses (concurrently, to keep the file fast); the
solutions they plot are solved in-process with fast methods first.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_bad_input, run_dlaopt

from dlaopt import harness
from dlaopt.errors import InputError
from dlaopt.formulations.pinning.evaluator import count_transfers
from dlaopt.io import load_instance, save_solution_document
from dlaopt.solvers.result import SolveOptions

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"
TINY: dict[str, tuple[Path, str]] = {  # problem -> (instance, a fast method whose solution is plotted)
    "pinning": (INSTANCES / "pinning" / "tiny-inline.yaml", "greedy"),
    "mapping": (INSTANCES / "mapping" / "tiny-conv-inline.yaml", "nvdla"),
    "systolic": (INSTANCES / "systolic" / "tiny-codesign.yaml", "exact"),
    "multiaccel": (INSTANCES / "multiaccel" / "tiny-inline.yaml", "herald"),
    "bankmap": (INSTANCES / "bankmap" / "residual-block-inline.yaml", "local"),
}
SOLUTION_KINDS: dict[str, list[str]] = {
    "pinning": ["occupancy"],
    "mapping": ["mapping", "loopnest", "breakdown", "layers"],
    "systolic": ["layers"],
    "multiaccel": ["gantt"],
    "bankmap": ["layout"],
}
SVG_KINDS = ("loopnest", "gantt")  # rendered as SVG by the subprocess; the others as PNG (both formats in-process)
# (name, problem, methods, kind or None for the default); the first two run as subprocesses, the rest in-process
COMPARISONS: list[tuple[str, str, str, str | None]] = [
    ("pinning-transfers", "pinning", "naive,greedy,coloring,exact", None),
    ("mapping-trace", "mapping", "exact,nvdla,eyeriss", "trace"),
    ("pinning-objective", "pinning", "naive,greedy,exact", "objective"),
    ("mapping-layers", "mapping", "nvdla,eyeriss,shidiannao", None),
    ("systolic-layers", "systolic", "exact,exhaustive,los", None),
    ("multiaccel-gantt", "multiaccel", "herald,lpt,ai-mt", None),
    ("multiaccel-makespan", "multiaccel", "herald,lpt", "makespan"),
    ("bankmap-copies", "bankmap", "local,propagate,exact", None),
    ("bankmap-trace", "bankmap", "local,propagate,exact", "trace"),
]
SUBPROCESS_COMPARISONS = 2


def _run(args: Sequence[str | Path]) -> subprocess.CompletedProcess[str]:
    return run_dlaopt(*args)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def reported_size(stderr: str) -> tuple[float, float, float]:
    """(width in, height in, dpi) from the CLI's 'plot written to ...' line."""
    m = re.search(r"\(([\d.]+) x ([\d.]+) in at ([\d.]+) dpi", stderr)
    assert m, stderr
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


@pytest.fixture(scope="module")
def solutions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A solution file per problem, solved in-process with the fast method of ``TINY``."""
    out = tmp_path_factory.mktemp("solutions")
    files = {}
    for problem, (instance, method) in TINY.items():
        res = harness.solve(load_instance(instance), method, options=SolveOptions(seed=0))
        assert res.verified, (problem, res.status, res.message)
        files[problem] = save_solution_document(res.solution_document(), out / f"{problem}.yaml")
    return files


@pytest.fixture(scope="module")
def cli_runs(solutions: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, tuple[subprocess.CompletedProcess[str], Path, tuple[float, float, int] | None]]:
    """Every solution kind and the first comparisons, rendered by ``python -m dlaopt plot`` in subprocesses (run
    concurrently): name -> (process, output file, requested (width, height, dpi) or None for the defaults)."""
    out = tmp_path_factory.mktemp("plots")
    jobs: dict[str, tuple[list[str | Path], Path, tuple[float, float, int] | None]] = {}
    for i, (problem, kind) in enumerate((p, k) for p, ks in SOLUTION_KINDS.items() for k in ks):
        requested = (7.5, 4.5, 60) if i % 2 else None
        path = out / f"{problem}-{kind}{'.svg' if kind in SVG_KINDS else '.png'}"
        args: list[str | Path] = ["plot", TINY[problem][0], solutions[problem], "--kind", kind, "-o", path]
        if requested:
            args += ["--size", f"{requested[0]}x{requested[1]}", "--dpi", str(requested[2])]
        jobs[f"{problem}-{kind}"] = (args, path, requested)
    for name, problem, methods, compare_kind in COMPARISONS[:SUBPROCESS_COMPARISONS]:
        path = out / f"compare-{name}.png"
        args = ["plot", TINY[problem][0], "--compare", methods, "-o", path, "--seed", "0"]
        if compare_kind:
            args += ["--kind", compare_kind]
        jobs[f"compare-{name}"] = (args, path, None)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        procs = dict(zip(jobs, pool.map(_run, [a for a, _, _ in jobs.values()]), strict=True))
    return {name: (procs[name], path, req) for name, (_, path, req) in jobs.items()}


def _check_file(proc: subprocess.CompletedProcess[str], path: Path,
                requested: tuple[float, float, int] | None) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert path.is_file() and path.stat().st_size > 1000, f"{path} missing or tiny"
    w_in, h_in, dpi = reported_size(proc.stderr)
    if requested is not None:
        assert (w_in, h_in, dpi) == requested
    if path.suffix == ".png":
        assert png_size(path) == (round(w_in * dpi), round(h_in * dpi))
    else:
        root = ET.parse(path).getroot()
        assert root.tag.endswith("svg")
        assert float(root.attrib["width"].removesuffix("pt")) == pytest.approx(w_in * 72, abs=0.01)
        assert float(root.attrib["height"].removesuffix("pt")) == pytest.approx(h_in * 72, abs=0.01)
        assert any(e.tag.endswith("text") for e in root.iter()), "SVG text should stay text"


@pytest.mark.parametrize("problem,kind", [(p, k) for p, ks in SOLUTION_KINDS.items() for k in ks])
def test_every_solution_kind_renders_from_the_cli(cli_runs: dict, problem: str, kind: str) -> None:
    proc, path, requested = cli_runs[f"{problem}-{kind}"]
    _check_file(proc, path, requested)


@pytest.mark.parametrize("name", [c[0] for c in COMPARISONS[:SUBPROCESS_COMPARISONS]])
def test_comparison_and_trace_render_from_the_cli(cli_runs: dict, name: str) -> None:
    proc, path, requested = cli_runs[f"compare-{name}"]
    _check_file(proc, path, requested)
    assert "comparing" in proc.stderr


def test_default_size_is_the_figure_size_times_100_dpi(cli_runs: dict) -> None:
    proc, path, requested = cli_runs["pinning-occupancy"]
    assert requested is None
    w_in, h_in, dpi = reported_size(proc.stderr)
    assert dpi == 100
    assert png_size(path) == (round(w_in * 100), round(h_in * 100))


def _invoke(args: Sequence[str | Path]) -> subprocess.CompletedProcess[str]:
    """The CLI in-process (click's runner), as a CompletedProcess."""
    from click.testing import CliRunner

    from dlaopt.cli import cli

    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return subprocess.CompletedProcess(list(map(str, args)), r.exit_code, r.stdout, r.stderr)


@pytest.mark.parametrize("name", [c[0] for c in COMPARISONS[SUBPROCESS_COMPARISONS:]])
def test_every_comparison_kind_renders(name: str, tmp_path: Path) -> None:
    _, problem, methods, kind = next(c for c in COMPARISONS if c[0] == name)
    path = tmp_path / f"{name}.svg"
    args: list[str | Path] = ["plot", TINY[problem][0], "--compare", methods, "-o", path]
    if kind:
        args += ["--kind", kind]
    _check_file(_invoke([*args, "--size", "9x5"]), path, (9.0, 5.0, 100))


@pytest.mark.parametrize("problem,kind", [(p, k) for p, ks in SOLUTION_KINDS.items() for k in ks])
def test_every_solution_kind_renders_as_svg_and_png_in_process(solutions: dict[str, Path], tmp_path: Path,
                                                               problem: str, kind: str) -> None:
    for suffix in (".png", ".svg"):
        path = tmp_path / f"x{suffix}"
        proc = _invoke(["plot", TINY[problem][0], solutions[problem], "--kind", kind, "-o", path,
                        "--size", "11x6.5", "--dpi", "50"])
        _check_file(proc, path, (11.0, 6.5, 50))


# ------------------------------------------------------------------------------------------------ bad input
SUBPROCESS_ERRORS = ("suffix", "kind", "other-problem")


@pytest.mark.parametrize("case", ["suffix", "kind", "other-problem", "no-solution", "both", "method", "size",
                                  "compare-kind", "unwritable"])
def test_bad_input_exits_2_without_traceback(case: str, solutions: dict[str, Path], tmp_path: Path) -> None:
    """The first cases run ``python -m dlaopt`` (the real entry point), the others the CLI in-process."""
    pin, mapping = TINY["pinning"][0], TINY["mapping"][0]
    args: dict[str, list[str | Path]] = {
        "suffix": ["plot", pin, solutions["pinning"], "-o", tmp_path / "x.pdf"],
        "kind": ["plot", pin, solutions["pinning"], "--kind", "gantt", "-o", tmp_path / "x.png"],
        "other-problem": ["plot", mapping, solutions["pinning"], "-o", tmp_path / "x.png"],
        "no-solution": ["plot", pin, "-o", tmp_path / "x.png"],
        "both": ["plot", pin, solutions["pinning"], "--compare", "greedy", "-o", tmp_path / "x.png"],
        "method": ["plot", pin, "--compare", "greedy,nosuch", "-o", tmp_path / "x.png"],
        "size": ["plot", pin, solutions["pinning"], "--size", "wide", "-o", tmp_path / "x.png"],
        "compare-kind": ["plot", pin, "--compare", "greedy", "--kind", "occupancy", "-o", tmp_path / "x.png"],
        "unwritable": ["plot", pin, solutions["pinning"], "-o", tmp_path / "no" / "such" / "x.png"],
    }
    expected = {"suffix": ".png or .svg", "kind": "one of: occupancy", "other-problem": "'pinning'",
                "no-solution": "either a SOLUTION", "both": "either a SOLUTION", "method": "unknown method 'nosuch'",
                "size": "WIDTHxHEIGHT", "compare-kind": "one of: transfers, objective, trace",
                "unwritable": "cannot write"}
    proc = _run(args[case]) if case in SUBPROCESS_ERRORS else _invoke(args[case])
    assert_bad_input(proc.returncode, proc.stderr)
    assert expected[case] in proc.stderr
    assert not (tmp_path / "x.png").exists()


# ------------------------------------------------------------------------------------------------ library API
@pytest.fixture(scope="module")
def pinning() -> tuple[harness.Prepared, list[harness.Result]]:
    p = harness.prepare(load_instance(TINY["pinning"][0]))
    return p, harness.compare(p, ["naive", "onsram", "greedy", "coloring", "exact"])


def test_api_accepts_objects_dicts_and_documents(pinning: tuple[harness.Prepared, list[harness.Result]],
                                                 tmp_path: Path) -> None:
    from dlaopt.plots import plot_solution, save

    p, results = pinning
    res = results[2]
    assert res.solution is not None
    sol = p.problem.solution_from_dict(p.data, res.solution)
    for given in (sol, res.solution, res.solution_document()):
        fig = plot_solution(p, given)
        assert fig.get_suptitle().startswith("tiny-inline")
    fig = plot_solution(p, res.solution_document())  # the document names its method
    assert "(greedy)" in fig.get_suptitle()
    out = save(fig, tmp_path / "a.png", dpi=50)
    w, h = fig.get_size_inches()
    assert png_size(out) == (round(w * 50), round(h * 50))
    with pytest.raises(InputError, match="png or .svg"):
        save(fig, tmp_path / "a.jpg")
    with pytest.raises(InputError, match="unknown solution plot kind 'nope'"):
        plot_solution(p, sol, kind="nope")
    with pytest.raises(InputError, match="problem 'mapping'"):
        plot_solution(p, {**res.solution_document(), "problem": "mapping"})
    with pytest.raises(InputError, match="empty"):
        plot_solution(p, {})


def test_api_comparison_checks_and_defaults(pinning: tuple[harness.Prepared, list[harness.Result]]) -> None:
    import dataclasses

    from dlaopt.plots import comparison_kinds, plot_comparison, solution_kinds

    p, results = pinning
    assert list(solution_kinds("pinning")) == ["occupancy", "addresses"]
    assert list(comparison_kinds("pinning")) == ["transfers", "objective", "trace"]
    for kind in comparison_kinds("pinning"):
        assert plot_comparison(results, kind=kind).axes
    other = dataclasses.replace(results[0], instance="elsewhere")
    with pytest.raises(InputError, match="not all of one instance"):
        plot_comparison([*results, other])
    with pytest.raises(InputError, match="no results"):
        plot_comparison([])
    ma = harness.prepare(load_instance(TINY["multiaccel"][0]))
    ma_results = harness.compare(ma, ["herald", "lpt"])
    assert "makespan" in plot_comparison(ma_results).get_suptitle()  # no prepared instance: no re-simulation
    assert "schedules" in plot_comparison(ma_results, prepared=ma).get_suptitle()
    with pytest.raises(InputError, match="needs the prepared instance"):
        plot_comparison(ma_results, kind="gantt")


def test_rejected_solutions_are_drawn_with_a_warning() -> None:
    """A systolic solution whose hardware point is over the co-design area budget: the evaluator rejects it, the
    plot still shows it, with the violation in red."""
    from dlaopt.plots import plot_solution

    p = harness.prepare(load_instance(TINY["systolic"][0]))
    res = harness.solve(p, "los")
    assert res.verified and res.solution
    bad = {**res.solution, "hardware": {**res.solution["hardware"], "J": 64, "K": 64}}  # 4,096 PEs: over 1.2 mm²
    fig = plot_solution(p, bad)
    assert "NOT VERIFIED" in fig.get_supxlabel() and "area" in fig.get_supxlabel()


def test_pinning_transfer_events_match_the_evaluator(pinning: tuple[harness.Prepared, list[harness.Result]]) -> None:
    """The loads and stores marked in the occupancy plot are the evaluator's, one for one."""
    from dlaopt.plots.pinning import transfer_events

    p, results = pinning
    graph = p.data.graph
    for r in results:
        assert r.solution is not None
        sol = p.problem.solution_from_dict(p.data, r.solution)
        t = count_transfers(graph, sol)
        events = transfer_events(graph, sol)
        loads = np.bincount([e.buffer for e in events if e.load], minlength=len(graph.buffers))
        stores = np.bincount([e.buffer for e in events if not e.load], minlength=len(graph.buffers))
        assert loads.tolist() == t.loads.tolist(), r.method
        assert stores.tolist() == t.stores.tolist(), r.method
        for e in events:  # every event is drawn on a segment where the buffer is resident
            assert sol.at(graph, e.buffer, e.step) == e.scratchpad
