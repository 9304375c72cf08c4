"""``dlaopt experiment mapper-study`` at a tiny scale: every part runs and writes its files, and its figures agree
with each other — no mapper below a proven optimum, the samples-to-within columns consistent with the final ratio,
the order classes partitioning the orders, the map-space counts nested as the representations are."""

from __future__ import annotations

import json

import pytest

from dlaopt.errors import InputError
from dlaopt.experiments.mapper_study import run_mapper_study


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("mapper-study")
    return out, run_mapper_study(out, quick=True, workloads=["bert-attn"], samples=40, exact_time_limit=30)


def test_files(report) -> None:
    out, rep = report
    for name in ("mapper_study.csv", "mapper_study.md", "mapper_study.json", "mapper_study.jsonl",
                 "convergence.png", "surrogate-BMNK.npz"):
        assert (out / name).is_file(), name
    assert {r["mapper"] for r in rep.rows if r["part"] == "convergence"} == {
        "random-pruned", "standard-ga", "gamma", "surrogate"}
    assert not rep.summary["skipped"]


def test_curves_against_the_optimum(report) -> None:
    out, rep = report
    curves = json.loads((out / "mapper_study.json").read_text())["curves"]
    for r in rep.rows:
        assert r["samples"] <= 40
        if r["reference_status"] == "optimal":  # nothing beats a proven optimum (up to its gap)
            assert r["ratio"] >= 1 - (r["reference_gap"] or 0) - 1e-9
        for key, rel in (("10pct", 0.10), ("1pct", 0.01)):
            reached = r[f"samples_{key}"] is not None
            assert reached == (r["ratio"] <= 1 + rel + 1e-9), (r, key)
        pts = curves[f"{r['part']}|{r['workload']}|{r['accelerator']}|{r['mapper']}"]["points"]
        assert pts[-1][2] == r["edp"] and all(b[2] < a[2] for a, b in zip(pts, pts[1:], strict=False))


def test_orders_and_space_sizes(report) -> None:
    _, rep = report
    assert rep.summary["orders"] is None  # the order study needs a convolution; bert-attn alone has none
    for s in rep.summary["spacesize"]:
        c = {k: int(v) for k, v in s["counts"].items()}
        assert c["valid"] <= c["dlaopt"] <= c["timeloop"] and c["pruned"] <= c["dlaopt"]


def test_order_study_on_a_convolution(tmp_path) -> None:
    rep = run_mapper_study(tmp_path, quick=True, parts=["orders"], workloads=["resnet-conv4"], exact_time_limit=30)
    o = rep.summary["orders"]
    assert o is not None and sum(c["count"] for c in o["classes"]) == o["orders"] == 5040
    assert o["distinct"] == len(o["classes"]) and o["signature_determines_value"]


def test_bad_options_are_located(tmp_path) -> None:
    with pytest.raises(InputError, match="--parts"):
        run_mapper_study(tmp_path, quick=True, parts=["everything"])
    with pytest.raises(InputError, match="--workloads"):
        run_mapper_study(tmp_path, quick=True, workloads=["lenet"])
