"""``dlaopt experiment gamma`` at a tiny scale: every part runs, writes its files, and its figures are consistent —
each total is the layers' values times their counts, no heuristic beats a proven optimum, the published figures of
Tables 4.5 and 4.6 stand beside dlaopt's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from dlaopt.errors import InputError
from dlaopt.experiments.gamma import TABLE45, run_gamma


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("gamma")
    return out, run_gamma(out, quick=True, parts=["settings", "table45", "pipeline"], platforms=["edge"],
                          systems=["s3"], samples=40, workers=1)


def test_files_and_rows(report) -> None:
    out, rep = report
    for name in ("gamma.csv", "gamma.md", "gamma.json", "gamma.jsonl", "gamma.png"):
        assert (out / name).is_file(), name
    with (out / "gamma.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {r["part"] for r in rows} == {"settings", "table45"}
    assert len((out / "gamma.jsonl").read_text().splitlines()) == len(rows) == len(rep.rows)
    assert all(r["status"] == "done" for r in rep.rows)


def test_totals_are_the_layers_times_their_counts(report) -> None:
    _, rep = report
    for t in rep.summary["totals"]:
        rows = [r for r in rep.rows if all(r[k] == t[k] for k in ("part", "network", "platform", "system",
                                                                     "objective"))]
        for m in ("exact", "gamma", "nvdla"):
            assert t[m] == pytest.approx(sum(r[m] * r["count"] for r in rows), rel=1e-12)
        assert t["beats_proven"] == 0
        for r in rows:
            if r["exact_status"] == "optimal":
                assert all(r[m] >= r["exact"] * (1 - 1e-9) for m in ("gamma", "nvdla", "eyeriss", "shidiannao"))


def test_markdown_places_the_chapters_figures(report) -> None:
    out, rep = report
    md = (out / "gamma.md").read_text()
    gamma_edge_latency = TABLE45["shufflenet-v2"][("latency", "edge")][0]
    assert f"{gamma_edge_latency:.3g} (1.0x)" in md  # Table 4.5's GAMMA figure next to dlaopt's
    assert "-58 %" in md and "-95 %" in md  # Table 4.6's reductions (ResNet-18)
    pipes = json.loads((out / "gamma.json").read_text())["pipelines"]
    assert {p["second"] for p in pipes} == {"power", "energy"}
    for p in pipes:
        s = p["summary"]
        # stage II never exceeds the pipeline latency and never costs more than stage I on average
        assert s["second_max_latency_cycles"] <= s["pipeline_latency"] * (1 + 1e-9)
        fig = "power_mw" if p["second"] == "power" else "energy_pj"
        assert s[f"second_avg_{fig}"] <= s[f"first_avg_{fig}"] * (1 + 1e-9)


def test_bad_choices_are_located(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="platform"):
        run_gamma(tmp_path, quick=True, platforms=["moon"])
    with pytest.raises(InputError, match="--samples"):
        run_gamma(tmp_path, quick=True, samples=0)
