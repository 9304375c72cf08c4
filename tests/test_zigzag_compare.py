"""The ZigZag comparison without ZigZag: translation of recorded runner output into dlaopt mappings, the report, the
runner's input builders and the CLI's handling of a missing ZigZag interpreter.

``data/zigzag_sample.json`` is real output of ``dlaopt/experiments/zigzag_runner.py`` (zigzag-dse 3.9.1, default
request) for three ResNet-18 layers and both objectives; ``data/zigzag_padding.json`` is hand-written to exercise
fractional unrolling on both axes and split loops whose merging changes reuse.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from cli_helpers import assert_bad_input, run_dlaopt

from dlaopt.errors import InputError
from dlaopt.experiments import zigzag_runner
from dlaopt.experiments.zigzag_compare import (
    MODEL_NOTES,
    ZZ_TO_DIM,
    TranslationError,
    _visits,
    compare_rows,
    ensure_zigzag,
    evaluate_zigzag_mapping,
    layer_request,
    markdown_report,
    summarize,
    translate,
    translate_full,
    unique_conv_layers,
)
from dlaopt.formulations.mapping.arch import arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.mapping import mapping_errors
from dlaopt.hardware.presets import PRESETS
from dlaopt.zoo import ZOO

DATA = Path(__file__).parent / "data"
SAMPLE = json.loads((DATA / "zigzag_sample.json").read_text())
PADDING = json.loads((DATA / "zigzag_padding.json").read_text())


@pytest.fixture(scope="module")
def setting():
    wl = ZOO.create("resnet18", {})
    arch = arch_from_accelerator(PRESETS.create("eyeriss", {}))
    layers = {c.nest.name: c for c in unique_conv_layers(wl)}
    return wl, arch, layers


def _slot(arch, name):
    return [s.name for s in arch.slots()].index(name)


def _zz_levels(result):
    """ZigZag's level cut (O's) in dlaopt dimension names, innermost first per level."""
    return [[(ZZ_TO_DIM[d], int(f)) for d, f in lv] for lv in result["temporal_mapping"]["O"]["loops_as_allocated"]]


def test_sample_is_real_runner_output():
    assert SAMPLE["zigzag_version"] == "3.9.1"
    assert SAMPLE["search"]["temporal_mapping_type"] == "even"
    assert len(SAMPLE["results"]) == 6
    for r in SAMPLE["results"]:
        assert r["error"] is None and r["even"] is True
        cuts = [r["temporal_mapping"][t]["loops_as_allocated"] for t in ("O", "W", "I")]
        assert cuts[0] == cuts[1] == cuts[2]


@pytest.mark.parametrize("idx", range(6))
def test_translate_sample(setting, idx):
    wl, arch, layers = setting
    r = SAMPLE["results"][idx]
    layer = layers[r["layer"]]
    nest, m = translate(r, wl, layer.op, arch)
    assert mapping_errors(nest, arch, m) == []
    # the real sizes are the layer's; the padded ones are what the factors multiply to
    assert dict(nest.real_sizes) == dict(layer.nest.sizes)
    for d in nest.dims:
        assert math.prod(m.factors[d]) == nest.sizes[d] >= nest.real_sizes[d]
    # temporal factors per level are ZigZag's loops per level (merged), spatial ones sit on the named axis
    levels = _zz_levels(r)
    for j, lv in enumerate(levels):
        k = _slot(arch, f"T{j}")
        for d in nest.dims:
            assert m.factors[d][k] == math.prod(f for dd, f in lv if dd == d)
    axes = SAMPLE["axes"]
    for oa, dims in r["spatial_mapping"].items():
        k = _slot(arch, f"S1:{axes[oa]}")
        for zd, f in dims.items():
            d = ZZ_TO_DIM[zd]
            assert m.factors[d][k] == math.ceil(f - 1e-9)  # integer factors exact, fractional ones rounded up
    # orders: ZigZag's loops reversed (outermost first), one loop per dimension at its innermost occurrence
    for j, lv in enumerate(levels):
        first = []
        for d, _ in lv:
            if d not in first:
                first.append(d)
        nontrivial = [d for d in m.orders[j] if d in first]
        assert nontrivial == first[::-1]


def test_sample_spatial_padding_and_merging(setting):
    wl, arch, layers = setting
    r = next(x for x in SAMPLE["results"] if x["layer"] == "layer4.0.downsample" and x["objective"] == "energy")
    assert r["spatial_mapping"]["D1"] == {"C": 12} and r["fractional"][0][:2] == ["D2", "C"]
    t = translate_full(r, wl, layers[r["layer"]].op, arch)
    # C: 2 temporal iterations x 12 rows x ceil(256 / 24) = 11 columns = 264 >= 256
    assert t.spatial == {"rows": {"C": 12}, "cols": {"C": 11}}
    assert t.padding == {"C": (256, 264)}
    assert t.nest.sizes["C"] == 264 and t.nest.real_sizes["C"] == 256
    # LOMA split K into 8 and 4 at the GLB: one loop of 32 in dlaopt, with no change of reuse
    assert t.merged == ["glb: K 8*4 -> K32"]
    assert t.mapping.factors["K"][_slot(arch, "T1")] == 32
    assert t.reuse_changes == []


def test_evaluate_sample(setting):
    wl, arch, layers = setting
    for r in SAMPLE["results"]:
        ev = evaluate_zigzag_mapping(r, wl, layers[r["layer"]].op, arch)
        assert ev["valid"] == (not ev["violations"])
        figures = ev if ev["valid"] else ev["unchecked"]
        assert figures["energy"] > 0 and figures["latency"] > 0
        assert figures["noc_energy"] > 0  # dlaopt charges the NoC, ZigZag does not
        assert figures["macs"] >= figures["real_macs"] == r["macs"]
        if not ev["valid"]:
            assert all("glb" in v for v in ev["violations"])
        acc = {(a["level"], a["operand"]): a for a in ev["accesses"]}
        assert set(acc) == {(lv, t) for lv in ("rf", "glb", "dram") for t in ("I", "W", "O")}
        # both models read each weight from DRAM at least once and write each output there once
        assert acc["dram", "O"]["dlaopt_writes"] >= r["dims"]["K"] * r["dims"]["P"] * r["dims"]["Q"]
    invalid = [r for r in SAMPLE["results"]
               if not evaluate_zigzag_mapping(r, wl, layers[r["layer"]].op, arch)["valid"]]
    assert [(r["layer"], r["objective"]) for r in invalid] == [("layer2.0.conv2", "energy")]


def test_padding_fixture(setting):
    wl, arch, layers = setting
    r = PADDING["results"][0]
    t = translate_full(r, wl, layers[r["layer"]].op, arch, PADDING["axes"])
    nest, m = t.nest, t.mapping
    assert t.padding == {"K": (64, 65), "Q": (56, 60)}
    assert t.spatial == {"rows": {"Q": 12}, "cols": {"K": 13}}
    assert dict(nest.sizes) == {"N": 1, "G": 1, "K": 65, "C": 64, "P": 56, "Q": 60, "R": 3, "S": 3}
    assert nest.real_sizes["K"] == 64 and nest.real_sizes["Q"] == 56
    assert mapping_errors(nest, arch, m) == []
    t0, t1, t2 = (_slot(arch, f"T{j}") for j in range(3))
    assert (m.factors["K"][t0], m.factors["R"][t0], m.factors["S"][t0]) == (5, 3, 3)
    assert (m.factors["C"][t1], m.factors["P"][t1]) == (64, 8)
    assert (m.factors["P"][t2], m.factors["Q"][t2]) == (7, 5)
    # GLB: C 8, OY 8, C 8 (innermost first) -> one C loop where the inner one was, under P
    nontrivial = [d for d in m.orders[1] if d in ("C", "P")]
    assert nontrivial == ["P", "C"]
    assert t.merged == ["glb: C 8*8 -> C64"]
    # O is irrelevant to C: merging moved the outer C8 into O's innermost irrelevant run (more reuse than ZigZag's)
    assert t.reuse_changes == ["O into rf: 2240 visits in ZigZag's order, 280 after merging"]
    rep = evaluate_mapping(nest, arch, m)
    assert rep.valid, rep.violations
    assert rep.macs == 65 * 64 * 56 * 60 * 9 and rep.real_macs == 64 * 64 * 56 * 56 * 9
    assert rep.energy_breakdown["mac"] == rep.macs * arch.mac_energy_pj  # padded MACs are charged


def test_visits_rule():
    relevant = frozenset({"K", "P"})  # say, an output of a K x P layer with a C reduction
    levels = [[("C", 4)], [("C", 2), ("P", 3), ("C", 5)], [("K", 7)]]  # innermost first per level
    # above level 0, outermost first: K7, C5, P3, C2 -> the run C2 is skipped
    assert _visits(levels, 0, relevant) == 7 * 5 * 3
    assert _visits(levels, 1, relevant) == 7
    assert _visits([[], [("C", 2), ("C", 1)], []], 0, relevant) == 1


def test_translation_errors(setting):
    wl, arch, layers = setting
    base = SAMPLE["results"][1]
    op = layers[base["layer"]].op
    failed = {**base, "error": "NoValidLoopOrderingFoundException: x"}
    with pytest.raises(TranslationError, match="failed"):
        translate(failed, wl, op, arch)
    ev = evaluate_zigzag_mapping(failed, wl, op, arch)
    assert ev["valid"] is False and ev["violations"][0].startswith("translation:")
    uneven = copy.deepcopy(base)
    tm = uneven["temporal_mapping"]["W"]["loops_as_allocated"]
    tm[1], tm[2] = tm[1] + tm[2], []
    with pytest.raises(TranslationError, match="uneven"):
        translate(uneven, wl, op, arch)
    bad_axis = copy.deepcopy(base)
    bad_axis["spatial_mapping"] = {"D3": {"K": 2}}
    with pytest.raises(TranslationError, match="D3"):
        translate(bad_axis, wl, op, arch)


def test_layer_requests(setting):
    _, _, layers = setting
    reqs = {n: layer_request(c.nest) for n, c in layers.items()}
    assert len(reqs) == 11
    assert reqs["conv1"] == {"name": "conv1", "K": 64, "C": 3, "P": 112, "Q": 112, "R": 7, "S": 7, "stride": 2,
                             "dilation": 1, "batch": 1}
    assert reqs["layer4.0.downsample"]["stride"] == 2 and reqs["layer4.0.downsample"]["R"] == 1
    for r in SAMPLE["results"]:
        req = reqs[r["layer"]]
        assert r["dims"] == {d: req[d] for d in ("K", "C", "P", "Q", "R", "S")} and r["stride"] == req["stride"]


def test_report_from_sample(setting):
    wl, arch, layers = setting
    convs = [layers[n] for n in dict.fromkeys(r["layer"] for r in SAMPLE["results"])]
    # stand-in for dlaopt's exact results: ZigZag's own mappings (ratio 1 where valid); no solver runs here
    exact = {}
    for r in SAMPLE["results"]:
        ev = evaluate_zigzag_mapping(r, wl, layers[r["layer"]].op, arch)
        fig = ev if ev["valid"] else ev["unchecked"]
        exact[r["layer"], r["objective"]] = {"status": "optimal", "time_s": 0.5, "energy": fig["energy"],
                                             "latency": fig["latency"]}
    # and a stand-in for dlaopt's optimum on ZigZag's padded shape: twice the objective
    padded = {(r["layer"], r["objective"]): {"status": "optimal", "time_s": 0.1,
                                              r["objective"]: 2 * exact[r["layer"], r["objective"]][r["objective"]]}
              for r in SAMPLE["results"]}
    rows = compare_rows(SAMPLE, convs, wl, arch, exact, padded)
    assert len(rows) == 6
    for row in rows:
        assert row["ratio"] == (1.0 if row["zzd_valid"] else None)
        assert row["ratio_best"] == row["ratio"]
        assert row["time_ratio"] == pytest.approx(row["zz_search_s"] / 0.5)
        assert row["dl_padded_objective"] == 2 * row[f"dl_{row['objective']}"]
    bad = next(row for row in rows if not row["zzd_valid"])
    assert bad["ratio_unchecked"] == 1.0 and bad["zzd_unchecked_energy"] == bad["dl_energy"]
    summary = summarize(rows, ("energy", "latency"))
    assert summary["energy"]["zigzag_invalid_in_dlaopt"] == 1 and summary["latency"]["ratio_geomean"] == 1.0
    assert summary["energy"]["zigzag_padded"] == 3 and summary["energy"]["merge_changed_reuse"] == 0
    assert 0 < summary["energy"]["noc_share_min"] <= summary["energy"]["noc_share_max"] < 1
    md = markdown_report(rows, summary, {"network": "resnet18", "preset": "eyeriss", "objectives": ["energy",
                         "latency"], "time_limit": 60.0, "zigzag_version": "3.9.1", "zigzag_search": SAMPLE["search"],
                         "zigzag_hardware": SAMPLE["hardware"], "zigzag_import_s": 1.0})
    assert "| layer4.0.downsample |" in md and "invalid in dlaopt" in md
    bad_line = next(line for line in md.splitlines() if line.startswith("| layer2.0.conv2 |") and "invalid" in line)
    assert "| (1) |" in bad_line  # the unchecked ratio, in parentheses
    assert "RF ports `per-operand`" in md
    # the access table uses the rows without padding only (here: layer3.0.downsample, latency)
    assert "| rf | W | reads |" in md
    assert "## Where the two models differ" in md and md.count("\n1. ") == 1
    assert len(MODEL_NOTES) >= 10


def test_runner_inputs():
    """The runner's builders need no ZigZag (it is imported only when a search runs)."""
    hw = dict(zigzag_runner.HARDWARE_DEFAULTS)
    acc = zigzag_runner.accelerator(hw)
    assert acc["operational_array"]["sizes"] == [12, 14]
    rf, glb, dram = (acc["memories"][k] for k in ("rf", "glb", "dram"))
    assert rf["size"] == 512 * 8 and rf["served_dimensions"] == []
    assert sum(p["bandwidth_max"] for p in rf["ports"] if p["type"] == "read") == 48
    assert sum(p["bandwidth_max"] for p in rf["ports"] if p["type"] == "write") == 32
    alloc = sorted(a for p in rf["ports"] for a in p["allocation"])
    assert alloc == sorted(["I1, tl", "I2, tl", "O, tl", "O, th", "I1, fh", "I2, fh", "O, fh", "O, fl"])
    assert (rf["r_cost"], rf["w_cost"]) == (1.0, 1.0)  # per 16-bit word
    assert (glb["r_cost"], glb["ports"][0]["bandwidth_max"], glb["size"]) == (192.0, 512, 108 * 1024 * 8)
    assert (dram["r_cost"], dram["ports"][0]["bandwidth_max"]) == (1600.0, 128)
    shared = zigzag_runner.accelerator({**hw, "rf_ports": "shared"})["memories"]["rf"]
    assert (shared["r_cost"], shared["w_cost"]) == (3.0, 2.0)  # 48- and 32-bit words, 1 per 16 bits
    wl = zigzag_runner.workload({"name": "x", "K": 8, "C": 4, "P": 5, "Q": 6, "R": 3, "S": 1, "stride": 2}, hw)[0]
    assert wl["loop_sizes"] == [1, 8, 4, 5, 6, 3, 1]
    assert wl["dimension_relations"] == ["ix=2*ox+1*fx", "iy=2*oy+1*fy"]
    assert wl["operand_precision"] == {"W": 16, "I": 16, "O": 16, "O_final": 16}


@pytest.mark.skipif(importlib.util.find_spec("zigzag") is not None, reason="zigzag is importable here")
def test_ensure_zigzag_rejects_python_without_zigzag():
    with pytest.raises(InputError, match="unusable"):
        ensure_zigzag(sys.executable)
    with pytest.raises(InputError, match="no ZigZag environment"):
        ensure_zigzag()


def test_cli_missing_zigzag_python(tmp_path):
    r = run_dlaopt("experiment", "zigzag-compare", "--zigzag-python", "/nonexistent", "--out", tmp_path / "out")
    assert_bad_input(r.returncode, r.stderr, "/nonexistent")
