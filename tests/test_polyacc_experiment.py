"""The PolyAcc experiment (seed 004) at a tiny scale through the command line: files written, and facts derived
independently of the run — access totals from the loop nest, forwarded volumes from the link semantics by
enumerating the PE array, the energy forwarding saves from the energies per byte, utilization from its definition
— plus its option errors."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dlaopt.cli import cli
from dlaopt.experiments.polyacc import (
    EYERISS_LINKS,
    TABLE3,
    eyeriss_benchmark,
    hardware_doc,
    instance_doc,
    linked_accelerator,
    spatial_factors,
)

GEMM = 16  # i = j = k of the tiny GEMM cases
WORD = 2  # bytes: every case is 16-bit
NOC_PJ_PER_BYTE = 1.0  # the eyeriss preset: NoC 2 per 16-bit access
RATIO = 0.5  # the default link energy ÷ NoC energy
CATS = ("temporal", "multicast", "forwarded", "unique")
# AlexNet conv3 (batch 1): K=384 C=256 P=Q=13 R=S=3, stride 1, padding 1
CONV3 = {"K": 384, "C": 256, "P": 13, "Q": 13, "R": 3, "S": 3}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("polyacc")
    res = CliRunner().invoke(cli, ["experiment", "polyacc", "--out", str(out), "--benchmarks",
                                    "gemm-os,gemm-ws,gemm-vector", "--layers", "conv3", "--gemm-size", str(GEMM)])
    assert res.exit_code == 0, res.output
    with (out / "polyacc.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    doc = json.loads((out / "polyacc.json").read_text(encoding="utf-8"))
    return {"out": out, "rows": rows, "doc": doc, "output": res.output}


def _f(v: str) -> float:
    return float(v)


def _by(rows: list[dict[str, str]], case: str, variant: str) -> dict[str, str]:
    return next(r for r in rows if r["case"] == case and r["variant"] == variant)


def _case(doc: dict[str, Any], case: str) -> dict[str, Any]:
    return next(c for c in doc["cases"] if c["case"] == case)


def test_files_and_cases(run: dict[str, Any]) -> None:
    for name in ("polyacc.md", "polyacc.csv", "polyacc.json", "polyacc.png"):
        assert (run["out"] / name).stat().st_size > 0, name
    cases = {(r["study"], r["case"]) for r in run["rows"]}
    assert cases == {("table3", "gemm-os"), ("table3", "gemm-ws"), ("table3", "gemm-vector"),
                     ("eyeriss", "eyeriss-conv3")}
    assert len(run["rows"]) == 3 * len(cases)
    for r in run["rows"]:
        if r["variant"] != "same mapping":
            assert r["status"].startswith("optimal"), (r["case"], r["variant"], r["status"])
    md = (run["out"] / "polyacc.md").read_text(encoding="utf-8")
    for text in ("Fig. 5", "Fig. 6", "Fig. 7", "§4.2", "4.15–15.4 %", "not reproducible"):
        assert text in md, text
    assert "issue" not in md.lower()
    assert run["doc"]["summary"]["checks"]["ok"], run["doc"]["summary"]["checks"]


def test_utilization_is_macs_over_latency_times_pes(run: dict[str, Any]) -> None:
    for r in run["rows"]:
        pes = math.prod(int(x) for x in r["pe_array"].split("×"))
        assert int(r["pes"]) == pes
        u = _f(r["real_macs"]) / (_f(r["latency_cycles"]) * pes)
        assert _f(r["utilization"]) == pytest.approx(u, rel=1e-9)
        assert _f(r["latency_cycles"]) >= _f(r["ideal_cycles"]) * (1 - 1e-12)
        assert _f(r["ideal_cycles"]) == pytest.approx(_f(r["real_macs"]) / pes)


def test_access_totals_from_the_loop_nest(run: dict[str, Any]) -> None:
    """Every MAC reads one input and one weight from its register file and updates one partial sum there; main
    memory's unique volume is the three tensors (the conv input with its padding halo)."""
    tensors = {"gemm": 3 * GEMM * GEMM,
               "conv3": CONV3["C"] * (CONV3["P"] + CONV3["R"] - 1) * (CONV3["Q"] + CONV3["S"] - 1)
               + CONV3["K"] * CONV3["C"] * CONV3["R"] * CONV3["S"] + CONV3["K"] * CONV3["P"] * CONV3["Q"]}
    for r in run["rows"]:
        assert sum(_f(r[f"rf_{c}"]) for c in CATS) == 3 * _f(r["macs"]), r["case"]
        assert _f(r["dram_unique"]) == tensors[r["layer"]], r["case"]
        for lv in ("rf", "glb", "dram"):
            assert all(_f(r[f"{lv}_{c}"]) >= 0 for c in CATS)
        if r["variant"] == "no links" or r["links"] == "none":
            assert _f(r["rf_forwarded"]) == 0 and _f(r["link_elements"]) == 0
        else:
            assert _f(r["rf_forwarded"]) > 0
        assert _f(r["glb_forwarded"]) == _f(r["dram_forwarded"]) == 0


def _run_share(doc: dict[str, Any], case: str, variant: str, operand: str) -> float:
    v = _case(doc, case)["variants"][variant]["volumes"]["rf"][operand]
    moved = v["unique"] + v["multicast"] + v["forwarded"]  # what crossed the PE fanout into / out of the rf
    return v["forwarded"] / moved


@pytest.mark.parametrize("case, operand, run_length", [("gemm-os", "I", 8), ("gemm-os", "W", 8),
                                                        ("gemm-ws", "I", 8), ("gemm-ws", "O", 8)])
def test_straight_links_forward_all_but_the_first_of_a_run(run: dict[str, Any], case: str, operand: str,
                                                           run_length: int) -> None:
    """A straight link along an axis unrolling only dimensions irrelevant to its operand: in each run of PEs
    sharing a tile, every PE but the first gets it from its neighbour (for partial sums: all but the last send
    theirs on)."""
    b = TABLE3[case]
    rows_f, cols_f = spatial_factors({"M": GEMM, "N": GEMM, "K": GEMM}, b)
    axis = dict(b.links)[operand][0]
    assert math.prod((rows_f if axis == "rows" else cols_f).values()) == run_length
    for variant in ("same mapping", "links"):
        assert _run_share(run["doc"], case, variant, operand) == pytest.approx(1 - 1 / run_length, rel=1e-12)


def test_diagonal_link_matches_brute_force(run: dict[str, Any]) -> None:
    """Eyeriss' diagonal input link on conv3 (rows: filter rows R then output channels K, R fastest; columns:
    output rows P): enumerate the PEs, count those whose diagonal predecessor (x-1, y+1) exists and holds the same
    input rows (same stride*p + r, K irrelevant to the input)."""
    b = eyeriss_benchmark("conv3")
    rows_f, cols_f = spatial_factors(CONV3, b)
    assert list(rows_f) == ["R", "K"] and list(cols_f) == ["P"]
    nr, nk, npp = rows_f["R"], rows_f["K"], cols_f["P"]
    pe = {(r + nr * k, p): (r, k, p) for r in range(nr) for k in range(nk) for p in range(npp)}
    matched = 0
    for (x, y), (r, _k, p) in pe.items():
        pred = pe.get((x - 1, y + 1))
        if pred is not None and pred[2] + pred[0] == p + r:  # stride 1, dilation 1: input row p + r
            matched += 1
    assert 0 < matched < len(pe)
    assert _run_share(run["doc"], "eyeriss-conv3", "same mapping", "I") == pytest.approx(matched / len(pe))


def test_forwarding_saves_exactly_the_noc_minus_link_energy(run: dict[str, Any]) -> None:
    """Same mapping: each forwarded element leaves the NoC (1 pJ/B) for a link (0.5 pJ/B); nothing else changes.
    The optimum with links is no worse than that mapping."""
    for case in ("gemm-os", "gemm-ws", "gemm-vector", "eyeriss-conv3"):
        base, same, opt = (_by(run["rows"], case, v) for v in ("no links", "same mapping", "links"))
        saved = _f(same["link_elements"]) * WORD * NOC_PJ_PER_BYTE * (1 - RATIO)
        assert _f(base["energy_pj"]) - _f(same["energy_pj"]) == pytest.approx(saved, rel=1e-9, abs=1e-6)
        assert _f(same["energy_pj"]) <= _f(base["energy_pj"])
        assert _f(opt["energy_pj"]) <= _f(same["energy_pj"]) * (1 + 2e-4)
        assert _f(same["latency_cycles"]) == _f(base["latency_cycles"])  # unlimited link bandwidth
        e_link = _f(same["energy_links"])
        assert e_link == pytest.approx(_f(same["link_elements"]) * WORD * NOC_PJ_PER_BYTE * RATIO)


def test_hardware_document_round_trip() -> None:
    """The inline hardware document of a linked accelerator builds the same accelerator (instance documents in the
    JSON details are self-contained)."""
    from dlaopt.hardware.presets import PRESETS
    from dlaopt.io.instance import instance_from_dict

    acc = linked_accelerator(PRESETS.create("eyeriss", {}), EYERISS_LINKS, RATIO, math.inf)
    b = eyeriss_benchmark("conv3")
    got = instance_from_dict(instance_doc(b, "energy", hardware=hardware_doc(acc))).accelerator
    assert got.pe_array == acc.pe_array and got.memories == acc.memories and got.dma == acc.dma
    assert got.clock_hz == acc.clock_hz and got.mac_energy_pj == acc.mac_energy_pj


@pytest.mark.parametrize("args, key", [
    (["--studies", "table4"], "--studies"),
    (["--studies", ","], "--studies"),
    (["--benchmarks", "gemm-xx"], "--benchmarks"),
    (["--layers", "conv9"], "--layers"),
    (["--objective", "power"], "--objective"),
    (["--link-energy-ratio", "-0.5"], "--link-energy-ratio"),
    (["--link-bandwidth", "0"], "--link-bandwidth"),
    (["--gemm-size", "0"], "--gemm-size"),
    (["--batch", "0"], "--batch"),
    (["--time-limit", "0"], "--time-limit"),
])
def test_option_errors(tmp_path: Path, args: list[str], key: str) -> None:
    res = CliRunner().invoke(cli, ["experiment", "polyacc", "--out", str(tmp_path / "x"), *args])
    assert res.exit_code == 2, res.output
    assert key in res.output and "Traceback" not in res.output
    assert not (tmp_path / "x" / "polyacc.csv").exists()


def test_shipped_instance_is_the_generated_one() -> None:
    """instances/mapping/eyeriss-polyacc-alexnet.yaml is what the experiment's generator writes, and it prepares:
    five layers on the linked 12 x 14 array, each with its fixed spatial unrolling."""
    import yaml

    from dlaopt.experiments.polyacc import eyeriss_instance_doc
    from dlaopt.formulations.mapping.problem import MappingProblem
    from dlaopt.io.instance import load_instance

    path = Path(__file__).resolve().parents[1] / "instances" / "mapping" / "eyeriss-polyacc-alexnet.yaml"
    assert yaml.safe_load(path.read_text(encoding="utf-8")) == json.loads(json.dumps(eyeriss_instance_doc()))
    data = MappingProblem().prepare(load_instance(path))
    assert [n.name for n in data.nests] == ["conv1", "conv2", "conv3", "conv4", "conv5"]
    assert {lk.operand: len(lk.slots) for lk in data.arch.links} == {"O": 1, "W": 1, "I": 2}
    assert all(sp.factor_bounds and sp.spatial for sp in data.spaces)
