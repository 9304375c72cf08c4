"""The fusion experiments (seed 001 Appendix A: FLAT; optimal fusion groups) run end to end at a tiny scale through
the command line and write their reports; FLAT-opt is never slower than Flex-opt; the fused execution moves no N×N
intermediate off chip; the buffer-fit figures, the zoo's attention models and the FLAT presets follow from their
definitions."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlaopt.cli import cli


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _num(v: str | None) -> float | None:
    return float(v) if v not in (None, "", "None") else None


# ------------------------------------------------------------------------------------------------ zoo and presets
@pytest.mark.parametrize("name, layers, hidden, heads, ffn", [
    ("trxl", 18, 1024, 16, 4096), ("flaubert", 24, 1024, 16, 4096), ("t5", 6, 512, 8, 2048),
    ("xlm", 12, 2048, 16, 8192), ("bert-base", 12, 768, 12, 3072)])
def test_attention_models_macs(name: str, layers: int, hidden: int, heads: int, ffn: int) -> None:
    from dlaopt.zoo import ZOO

    entry = ZOO.entry(name)
    assert entry.defaults["batch"] == 1 and entry.defaults["dtype_bytes"] == 2
    assert (entry.defaults["layers"], entry.defaults["hidden"], entry.defaults["heads"], entry.defaults["ffn"]) == (
        layers, hidden, heads, ffn)
    batch, seq = 2, 64
    wl = ZOO.create(name, {"batch": batch, "seq_len": seq, "layers": 2})
    # per layer: Q, K, V, output projections 4·S·H², logits and attend 2·S²·H, FFN 2·S·H·F (per sample)
    assert wl.total_macs == 2 * batch * (4 * seq * hidden**2 + 2 * seq**2 * hidden + 2 * seq * hidden * ffn)
    qk = next(op for op in wl.operators if op.name == "encoder0.attn.qk")
    assert dict(qk.dims) == {"B": batch * heads, "M": seq, "N": seq, "K": hidden // heads}


def test_flat_presets_follow_table_a3() -> None:
    from dlaopt.hardware.presets import PRESETS

    for name, pes, onchip, offchip, buf in (("flat-edge", 32 * 32, 1e12, 50e9, 512 * 1024),
                                            ("flat-cloud", 256 * 256, 8e12, 400e9, 32 * 1024 * 1024)):
        acc = PRESETS.create(name, {})
        assert acc.pe_array.num_pes == pes
        glb, dram = acc.memory("glb"), acc.memory("dram")
        assert glb.capacity_bytes == buf
        assert math.isclose(glb.bandwidth_bytes_per_cycle * acc.clock_hz, onchip)
        assert math.isclose(dram.bandwidth_bytes_per_cycle * acc.clock_hz, offchip)
        assert dram.read_energy_pj_per_byte > glb.read_energy_pj_per_byte > acc.memory("rf").read_energy_pj_per_byte


# ------------------------------------------------------------------------------------------------ buffer fits
def test_longest_fitting_matches_enumeration() -> None:
    from dlaopt.experiments.flat import longest_fitting

    for cap in (0, 1, 7, 50, 1000):
        def fits(n: int, c: int = cap) -> bool:
            return n * n + 3 * n <= c

        assert longest_fitting(fits, hi=100) == max(n for n in range(101) if fits(n))


def test_fits_table_from_the_formulas() -> None:
    from dlaopt.experiments.flat import fits_table

    rows = {(r["granularity"]): r for r in fits_table(["bert-base"], ["edge"])}
    cap, w, d, heads, batch = 512 * 1024, 2, 64, 12, 64
    # least requirement: the logit tile (not double-buffered) + two double-buffered one-element operand tiles
    least = {"R": lambda n: n + 4, "H": lambda n: n * n + 4, "B": lambda n: heads * n * n + 4,
             "M": lambda n: batch * heads * n * n + 4}
    # Table A.1 (elements, D = heads * d, Rx = 1)
    a1 = {"R": lambda n: 4 * d + 4 * n * d + n, "H": lambda n: 8 * n * d + n * n,
          "B": lambda n: 8 * heads * d * n + heads * n * n,
          "M": lambda n: 8 * batch * heads * d * n + batch * heads * n * n}
    for g in "MBHR":
        assert rows[g]["longest_least"] == max(n for n in range(0, 300_000) if least[g](n) * w <= cap)
        assert rows[g]["longest_table_a1"] == max(n for n in range(0, 300_000) if a1[g](n) * w <= cap)
    assert rows["R"]["sweep_least"] == 64 * 1024  # 256K does not fit 512 KB, even one row at a time


# ------------------------------------------------------------------------------------------------ attention
def test_fused_attention_keeps_the_logits_on_chip() -> None:
    from dlaopt.experiments.flat import Solver, attention_flat, attention_unfused, flat_opt
    from dlaopt.formulations.fusion.group import attention_group
    from dlaopt.hardware.presets import PRESETS

    solver = Solver(PRESETS.create("flat-edge", {"buffer_kb": 64}), time_limit=30.0)
    bh, n, d, w = 2, 256, 64, 2
    group = attention_group(1, bh, n, n, d, d, w)
    unfused = attention_unfused(solver, group, "flex-opt")
    naive = attention_unfused(solver, group, "naive")
    fused = attention_flat(solver, group)
    assert unfused.figures is not None and naive.figures is not None and fused.figures is not None
    logits = bh * n * n * w
    # unfused: L writes the logits, the softmax pass reads and writes them, A reads the probabilities
    assert unfused.figures.offchip_bytes >= 4 * logits
    # fused: only Q, K, V and the output cross main memory, each at least once; no logit or probability byte
    assert set(fused.report.offchip_by_tensor) <= {"Q", "Kt", "V", "A.out"}
    assert fused.figures.offchip_bytes >= 4 * bh * n * d * w
    assert fused.figures.offchip_bytes < unfused.figures.offchip_bytes
    # the FLAT tile's logit rows fit the 64 KB buffer next to the other tiles
    assert fused.staging_bytes <= 64 * 1024
    # Flex-opt is the per-operator optimum: never slower than the fixed Naive dataflow
    assert unfused.figures.latency_cycles <= naive.figures.latency_cycles * (1 + 1e-9)
    best = flat_opt(fused, unfused)
    assert best.figures.latency_cycles <= unfused.figures.latency_cycles
    assert best.figures.latency_cycles == min(fused.figures.latency_cycles, unfused.figures.latency_cycles)


# ------------------------------------------------------------------------------------------------ end to end
def test_flat_experiment(tmp_path: Path) -> None:
    out = tmp_path / "flat"
    res = CliRunner().invoke(cli, ["experiment", "flat", "--out", str(out), "--models", "t5", "--seq-lens", "512",
                                   "--platforms", "edge", "--batch", "2"])
    assert res.exit_code == 0, res.output
    for name in ("flat.md", "flat.csv", "flat.json", "flat.png"):
        assert (out / name).stat().st_size > 0, name
    rows = {r["method"]: r for r in _rows(out / "flat.csv")}
    assert set(rows) == {"naive", "flex-opt", "flat-opt"}
    for r in rows.values():
        for key in ("runtime_cycles", "energy_pj", "offchip_bytes", "la_offchip_bytes", "la_latency_cycles",
                    "utilization"):
            assert _num(r[key]) is not None and _num(r[key]) > 0, (r["method"], key)
        assert 0 < _num(r["utilization"]) <= 1 + 1e-9
    flex, fl, nv = rows["flex-opt"], rows["flat-opt"], rows["naive"]
    assert flex["status"] == "optimal"
    assert _num(fl["runtime_cycles"]) <= _num(flex["runtime_cycles"]) * (1 + 1e-9)
    assert _num(fl["la_latency_cycles"]) <= _num(flex["la_latency_cycles"]) * (1 + 1e-9)
    assert _num(flex["runtime_cycles"]) <= _num(nv["runtime_cycles"]) * (1 + 1e-9)
    # FC operators are the same for Flex-opt and FLAT-opt
    assert _num(fl["fc_latency_cycles"]) == _num(flex["fc_latency_cycles"])
    assert math.isclose(_num(fl["speedup_vs_flex"]), _num(flex["runtime_cycles"]) / _num(fl["runtime_cycles"]))
    assert _num(fl["seed_speedup"]) == 1.03 and _num(fl["seed_energy_ratio"]) == 0.97  # Fig. A.14, T5 edge 512
    doc = json.loads((out / "flat.json").read_text())
    assert {"summary", "rows", "fits", "cases"} <= set(doc)
    assert doc["summary"]["averages"]["edge"]["seed_speedup_all"] == 1.75
    md = (out / "flat.md").read_text()
    assert "Fig. A.14" in md and "Table A.1" in md and "issue" not in md.lower()


@pytest.mark.parametrize("args, where", [
    (["--scale", "huge"], "--scale"), (["--models", "gpt9"], "--models"), (["--platforms", "moon"], "--platforms"),
    (["--seq-lens", "100"], "--seq-lens"), (["--seq-lens", "4x"], "--seq-lens")])
def test_flat_option_errors(tmp_path: Path, args: list[str], where: str) -> None:
    res = CliRunner().invoke(cli, ["experiment", "flat", "--out", str(tmp_path / "x"), *args])
    assert res.exit_code == 2, res.output
    assert where in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("args, where", [
    (["--networks", "vgg99"], "--networks"), (["--objectives", "speed"], "--objectives"),
    (["--max-group", "0"], "--max-group"), (["--scale", "tiny"], "--scale")])
def test_fusion_option_errors(tmp_path: Path, args: list[str], where: str) -> None:
    res = CliRunner().invoke(cli, ["experiment", "fusion", "--out", str(tmp_path / "x"), *args])
    assert res.exit_code == 2, res.output
    assert where in res.output and "Traceback" not in res.output


def test_fusion_experiment(tmp_path: Path) -> None:
    out = tmp_path / "fusion"
    res = CliRunner().invoke(cli, ["experiment", "fusion", "--out", str(out), "--networks", "bert-base",
                                   "--max-group", "2", "--entry-time-limit", "30"])
    assert res.exit_code == 0, res.output
    for name in ("fusion.md", "fusion.csv", "fusion.json", "fusion.png"):
        assert (out / name).stat().st_size > 0, name
    (row,) = _rows(out / "fusion.csv")
    assert row["status"] == "optimal" and row["verified"] == "True"
    lw, fu = _num(row["layerwise_offchip_bytes"]), _num(row["fused_offchip_bytes"])
    assert lw is not None and fu is not None and 0 < fu <= lw  # layer by layer is one of the covers
    assert math.isclose(_num(row["offchip_saved"]), 1 - fu / lw)
    # the logits never leave the chip when L and A are fused: the fused block moves less than layer by layer
    assert "encoder0.attn.qk + encoder0.attn.av" in row["groups"]
    assert fu < lw


@pytest.mark.parametrize("name, seq, heads", [("flat-bert-edge-4k", 4096, 12), ("flat-t5-cloud-4k", 4096, 8)])
def test_flat_instances_prepare(name: str, seq: int, heads: int) -> None:
    from dlaopt import harness
    from dlaopt.io import load_instance

    p = harness.prepare(load_instance(Path(__file__).parent.parent / "instances" / "fusion" / f"{name}.yaml"))
    (group,) = p.data.groups.values()
    assert group.op_names == ("encoder0.attn.qk", "encoder0.attn.av")
    assert dict(group.outer_dims) == {"B": 64 * heads, "M": seq}
    assert p.data.staging_memory == "glb"
