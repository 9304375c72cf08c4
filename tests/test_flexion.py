"""Flexion (seed 001, Chapter 3): flexibility classes as mapping constraints, the map-space counts and the experiment.

* the expansion of each class, per axis InFlex / PartFlex / FullFlex, into the constraint records the definitions
  give (Table 3.1's baseline, §3.4's PartFlex choices), for conv, depthwise and matmul layers;
* the FullFlex shape as one 1 x N array has the optimum of the best of every r x N//r shape (exact solves);
* the map-space counts against brute-force enumeration of the chapter's definitions on small layers;
* malformed flexibility is a located exit-2 error;
* a quick run of ``dlaopt experiment flexion``: every solution verified and proven, and the nesting of the classes'
  spaces shows in their optima (FullFlex <= PartFlex <= InFlex per objective).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import assert_bad_input
from click.testing import CliRunner

from dlaopt.cli import cli
from dlaopt.experiments.flexion import (
    AREA_AXIS,
    AREA_FULLFLEX_1111,
    AREA_INFLEX,
    OBJECTIVES,
    run_flexion,
    study_configs,
)
from dlaopt.formulations.mapping.arch import arch_from_accelerator
from dlaopt.formulations.mapping.flexibility import (
    STATIONARY_ORDERS,
    block_shapes,
    choices,
    expand,
    mapped_nests,
    parse,
)
from dlaopt.formulations.mapping.loopnest import LoopNest, divisors
from dlaopt.formulations.mapping.mapspace import (
    count_tiles,
    order_space,
    parallel_space,
    shape_space,
    tile_space,
)
from dlaopt.hardware.presets import PRESETS
from dlaopt.harness import solve
from dlaopt.io.instance import Instance, instance_from_dict
from dlaopt.solvers.result import SolveOptions

SMALL_HW: dict[str, Any] = {"rows": 4, "cols": 4, "buffer_kb": 1.5, "rf_bytes": 16, "dram_bytes_per_cycle": 8.0,
                            "buffer_bytes_per_cycle": 32.0}


def conv(k: int, c: int, p: int, r: int = 3, *, stride: int = 1, kind: str = "conv2d") -> dict[str, Any]:
    """An inline workload of one conv2d (or depthwise conv, k = c channels) with p x p outputs, r x r filters."""
    side = (p - 1) * stride + r
    w_shape = [c, 1, r, r] if kind == "depthwise_conv2d" else [k, c, r, r]
    attrs: dict[str, Any] = {"stride": [stride, stride]} if stride > 1 else {}
    if kind == "depthwise_conv2d":
        attrs["groups"] = c
    return {"name": "one", "dtype_bytes": 2,
            "tensors": [{"name": "x", "shape": [1, c, side, side], "role": "input"},
                        {"name": "w", "shape": w_shape, "role": "weight"},
                        {"name": "y", "shape": [1, c if kind == "depthwise_conv2d" else k, p, p], "role": "output"}],
            "operators": [{"name": "L", "kind": kind, "inputs": ["x", "w"], "outputs": ["y"], "attrs": attrs}]}


def matmul(m: int, k: int, n: int) -> dict[str, Any]:
    return {"name": "mm", "dtype_bytes": 2,
            "tensors": [{"name": "a", "shape": [m, k], "role": "input"},
                        {"name": "b", "shape": [k, n], "role": "weight"},
                        {"name": "c", "shape": [m, n], "role": "output"}],
            "operators": [{"name": "L", "kind": "matmul", "inputs": ["a", "b"], "outputs": ["c"]}]}


def instance(flex: Mapping[str, Any] | None, workload: Mapping[str, Any], *, hw: Mapping[str, Any] = SMALL_HW,
             objective: str = "latency") -> Instance:
    doc: dict[str, Any] = {"problem": "mapping", "workload": dict(workload),
                           "hardware": {"preset": "flexion", "params": dict(hw)}, "objective": objective,
                           "options": {"workers": 1}}
    if flex is not None:
        doc["flexibility"] = dict(flex)
    return instance_from_dict(doc)


def records(inst: Instance) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, kind, params) of every record the class expands to."""
    return [(c.label, c.kind, dict(c.params)) for c in expand(inst)]


def of_kind(recs: Sequence[tuple[str, str, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [p for _, k, p in recs if k == kind]


LEVELS = ["rf", "buffer", "dram"]  # the flexion preset's mapping levels, innermost first
OS = ["P", "Q", "K", "C", "R", "S"]  # Y X K C R S on a conv2d


# ------------------------------------------------------------------------------------------------ expansion
def test_inflex_is_table_3_1_baseline() -> None:
    recs = records(instance({"class": "0000"}, conv(8, 4, 4)))
    # tile: K and C are unrolled on the array (their tile is the array's), Y X R S are 3 per PE; P = Q = 4 is not a
    # multiple of 3: padded to 6, the last tile a full one
    assert of_kind(recs, "padding") == [{"layers": ["L"], "multiples": {"P": 3, "Q": 3}}]
    assert of_kind(recs, "factors") == [
        {"layers": ["L"], "target": "buffer", "type": "temporal",
         "factors": {"K": 1, "C": 1, "P": 3, "Q": 3, "R": 3, "S": 3}},
        {"layers": ["L"], "target": "rf", "type": "temporal",
         "factors": {"K": 1, "C": 1, "P": 1, "Q": 1, "R": 1, "S": 1}}]
    assert of_kind(recs, "permutation") == [{"op_kinds": ["conv2d"], "target": lv, "order": OS} for lv in LEVELS]
    assert of_kind(recs, "spatial") == [{"op_kinds": ["conv2d"], "axes": {"rows": {"dims": ["C"]},
                                                                          "cols": {"dims": ["K"]}}}]
    assert of_kind(recs, "shape") == [{"shapes": [[4, 4]]}]
    labels = [lb for lb, _, _ in recs]
    assert labels[0] == "flexibility.tile (padding 'L')"
    assert "flexibility.order (permutation 'conv2d at dram')" in labels
    assert labels[-2:] == ["flexibility.parallel (spatial 'conv2d')", "flexibility.shape (shape)"]


def test_partflex_axes_expand_to_their_listed_subsets() -> None:
    flex = {"class": "1111", "tile": {"K": {"max": 2}, "C": 4}, "order": [["K", "C", "R", "S", "Y", "X"]],
            "parallel": [["Y", "X"]], "shapes": [[2, 8]]}
    recs = records(instance(flex, conv(8, 4, 3)))
    assert of_kind(recs, "padding") == []
    # PartFlex bounds the buffer level's factors only (the registers stay free)
    assert of_kind(recs, "factors") == [{"layers": ["L"], "target": "buffer", "type": "temporal",
                                         "factors": {"K": {"max": 2}, "C": 4}}]
    assert of_kind(recs, "permutation") == [{"op_kinds": ["conv2d"], "target": lv,
                                             "order": ["K", "C", "R", "S", "P", "Q"]} for lv in LEVELS]
    assert of_kind(recs, "spatial") == [{"op_kinds": ["conv2d"], "axes": {"rows": {"dims": ["P"]},
                                                                          "cols": {"dims": ["Q"]}}}]
    assert of_kind(recs, "shape") == [{"shapes": [[2, 8]]}]


def test_fullflex_axes_leave_their_axis_free() -> None:
    assert records(instance({"class": "1111"}, conv(8, 4, 3))) == [
        ("flexibility.shape (shape)", "shape", {"shapes": [[1, 16]]})]
    # FullFlex shape with the baseline parallelism: one 1 x 16 array, both parallel dimensions along it
    recs = records(instance({"class": "0001"}, conv(8, 4, 3)))
    assert of_kind(recs, "spatial") == [{"op_kinds": ["conv2d"], "axes": {"cols": {"dims": ["C", "K"]}}}]
    assert of_kind(recs, "shape") == [{"shapes": [[1, 16]]}]
    # FullFlex order / parallelism: no permutation / spatial record
    assert of_kind(records(instance({"class": "0100"}, conv(8, 4, 3))), "permutation") == []
    recs = records(instance({"class": "0010"}, conv(8, 4, 6)))
    assert of_kind(recs, "spatial") == []
    # ... and the baseline tile, where any dimension may be unrolled, is an upper bound: Y, X (6) at most 3; R, S
    # (3) and K, C (smaller than 64, 16) need none
    assert of_kind(recs, "factors")[0]["factors"] == {"P": {"max": 3}, "Q": {"max": 3}}
    # FullFlex tile: no tile record
    assert not [p for lb, k, p in records(instance({"class": "1000"}, conv(8, 4, 3))) if lb.startswith(
        "flexibility.tile")]


def test_parallelism_choice_sets_the_tile_of_the_other_dimensions() -> None:
    """Y-X parallelism: Y and X fill the array, each PE iterates K 64 and C 16 (cut to the layer's 8 and 4)."""
    recs = records(instance({"class": "0010", "parallel": [["Y", "X"]]}, conv(8, 4, 3)))
    assert of_kind(recs, "factors")[0]["factors"] == {"K": 8, "C": 4, "P": 1, "Q": 1, "R": 3, "S": 3}


def test_depthwise_and_matmul_dimensions() -> None:
    recs = records(instance({"class": "0000"}, conv(8, 8, 3, kind="depthwise_conv2d")))
    assert of_kind(recs, "spatial")[0]["axes"] == {"rows": {"dims": ["G"]}, "cols": {"dims": ["K"]}}
    assert of_kind(recs, "permutation")[0]["order"] == ["P", "Q", "K", "G", "R", "S"]
    assert of_kind(recs, "factors")[0]["factors"] == {"G": 1, "P": 3, "Q": 3, "R": 3, "S": 3}
    recs = records(instance({"class": "0000"}, matmul(6, 4, 8)))
    assert of_kind(recs, "spatial")[0]["axes"] == {"rows": {"dims": ["K"]}, "cols": {"dims": ["N"]}}
    assert of_kind(recs, "permutation")[0]["order"] == ["M", "B", "N", "K"]
    assert of_kind(recs, "factors")[0]["factors"] == {"N": 1, "K": 1, "M": 3}


def test_block_shapes_are_the_chapters() -> None:
    """§3.4.5: 16x16 blocks in 1024 PEs give 4 shapes (one per block row count), 4x4 blocks 64; Fig. 3.11's H-F
    0.004 and 0.06 are 4/1024 and 64/1024."""
    a = block_shapes((16, 16), 1024)
    assert a == ((16, 64), (32, 32), (48, 16), (64, 16))
    assert len(block_shapes((4, 4), 1024)) == 64
    acc = PRESETS.create("flexion", {})
    fc = parse({"class": "0001", "shapes": {"block": [16, 16]}}, acc)
    assert fc.shape_options == ((16, 64), (32, 32), (64, 16))  # 48x16 fits in 64x16


def test_choices_split_a_partflex_class() -> None:
    doc = {"class": "0110", "order": [list(o) for o in STATIONARY_ORDERS], "parallel": [["C", "K"], ["Y", "X"]]}
    alts = choices(doc)
    assert len(alts) == 6
    assert {(tuple(a["order"][0]), tuple(a["parallel"][0])) for a in alts} == {
        (o, p) for o in STATIONARY_ORDERS for p in (("C", "K"), ("Y", "X"))}
    assert all(expand(instance(a, conv(4, 4, 3))) for a in alts)
    # the class itself: one one_of per axis, whose options are the single-choice classes' records
    inst = instance(doc, conv(4, 4, 3))
    ors = {c.path: c for c in expand(inst) if c.kind == "one_of"}
    assert set(ors) == {("flexibility", "order"), ("flexibility", "parallel")}
    for axis in ("order", "parallel"):
        kind = "permutation" if axis == "order" else "spatial"
        want = []
        for a in alts[: len(doc[axis])] if axis == "parallel" else alts[:: len(doc["parallel"])]:
            single = expand(instance(a, conv(4, 4, 3)))
            want.append([{"kind": c.kind, **c.params} for c in single if c.path == ("flexibility", axis)])
            if axis == "parallel":  # the InFlex tile the parallelism implies (the buffer's factors) goes with it
                want[-1] += [{"kind": c.kind, **c.params} for c in single
                             if c.path == ("flexibility", "tile") and c.params.get("target") == "buffer"]
        assert all(r["kind"] == kind for o in want for r in o[:1])
        assert ors[("flexibility", axis)].params["options"] == want


def test_a_partflex_class_is_solved_in_one_instance() -> None:
    """Several orders and parallelisms in one instance: the exact optimum, proven, is the best of the single-choice
    classes' optima (each solved on its own)."""
    doc = {"class": "0110", "order": [list(o) for o in STATIONARY_ORDERS[:2]], "parallel": [["C", "K"], ["Y", "X"]]}
    wl = conv(4, 2, 2, r=1)
    opts = SolveOptions(threads=1)
    whole = solve(instance(doc, wl), "exact", options=opts)
    assert whole.status.value == "optimal" and whole.verified, whole.message
    each = [solve(instance(a, wl), "exact", options=opts) for a in choices(doc)]
    assert all(r.status.value == "optimal" and r.verified for r in each)
    assert whole.objective == pytest.approx(min(r.objective for r in each), rel=1e-6)


def test_fullflex_shape_is_the_best_of_every_shape() -> None:
    """The 1 x N array with K and C along it has the optimum of the best of the N shapes r x N//r (C on the r rows,
    K on the columns)."""
    wl = conv(4, 6, 3, r=1)
    hw = {**SMALL_HW, "rows": 2, "cols": 4}
    n = 8
    opts = SolveOptions(threads=1)
    free = solve(instance({"class": "0001"}, wl, hw=hw), "exact", options=opts)
    assert free.status.value == "optimal" and free.verified
    each = []
    for r in range(1, n + 1):
        res = solve(instance({"class": "0000", "baseline": {"shape": [r, n // r]}}, wl, hw=hw), "exact",
                    options=opts)
        assert res.status.value == "optimal" and res.verified
        each.append(res.objective)
    assert free.objective == pytest.approx(min(each), rel=1e-6)


def test_table_3_2_overheads_add_up() -> None:
    """With T-Flex read as 736,874 (+0.004%), the four axes' overheads add up to FullFlex's 739,576."""
    assert AREA_INFLEX + sum(a - AREA_INFLEX for a in AREA_AXIS.values()) == pytest.approx(AREA_FULLFLEX_1111, abs=3)
    cfg = {c.label: c for c in study_configs("classes")}
    assert cfg["FullFlex-1111"].area_um2 == AREA_FULLFLEX_1111
    assert cfg["FullFlex-0110"].area_um2 == AREA_AXIS["order"] + AREA_AXIS["parallel"] - AREA_INFLEX


# ------------------------------------------------------------------------------------------------ counts
def _nest(inst: Instance) -> LoopNest:
    return mapped_nests(inst)[0]


def _brute_tiles(nest: LoopNest, stores: Sequence[tuple[frozenset[str], int]], values: Mapping[str, Sequence[int]]
                 ) -> int:
    word = {t: nest.operand(t).word_bytes for t in ("I", "W", "O")}
    n = 0
    for combo in itertools.product(*(values[d] for d in nest.dims)):
        tile = dict(zip(nest.dims, combo, strict=True))
        if all(sum(nest.footprint(t, tile) * word[t] for t in ops) <= cap for ops, cap in stores):
            n += 1
    return n


@pytest.mark.parametrize("workload", [conv(3, 2, 4, stride=2), conv(4, 4, 3, r=2, kind="depthwise_conv2d"),
                                      matmul(4, 6, 3), conv(6, 3, 2, r=3, stride=3)])
@pytest.mark.parametrize("stores", [[(frozenset("IWO"), 120)],
                                    [(frozenset("I"), 40), (frozenset("W"), 40), (frozenset("O"), 40)],
                                    [(frozenset("IW"), 70), (frozenset("O"), 10)]])
def test_tile_counts_match_enumeration(workload: dict[str, Any], stores: list[tuple[frozenset[str], int]]) -> None:
    nest = _nest(instance(None, workload))
    for div in (False, True):
        values = {d: divisors(nest.sizes[d]) if div else list(range(1, nest.sizes[d] + 1)) for d in nest.dims}
        assert count_tiles(nest, stores, values) == _brute_tiles(nest, stores, values)


def test_tile_space_of_the_classes() -> None:
    wl = conv(4, 4, 3)
    soft = PRESETS.create("flexion", SMALL_HW)
    hard = PRESETS.create("flexion", {**SMALL_HW, "partition": "1:1:1"})
    nest = _nest(instance(None, wl))
    values = {d: list(range(1, nest.sizes[d] + 1)) for d in nest.dims}
    cap = int(1.5 * 1024)
    c_w = _brute_tiles(nest, [(frozenset("IWO"), cap)], values)
    a_w = _brute_tiles(nest, [(frozenset(t), cap // 3) for t in "IWO"], values)
    inflex = tile_space(parse({"class": "0000"}, soft), nest, arch_from_accelerator(soft))
    assert (math.prod(nest.sizes.values()), c_w, 1) == (inflex.W, inflex.CW, inflex.AW)
    part = tile_space(parse({"class": "1000"}, hard), nest, arch_from_accelerator(hard))
    assert (c_w, a_w) == (part.CW, part.AW) and part.hf == a_w / c_w
    bounded = tile_space(parse({"class": "1000", "tile": {"K": {"max": 2}}}, soft), nest,
                         arch_from_accelerator(soft))
    assert _brute_tiles(nest, [(frozenset("IWO"), cap)], {**values, "K": [1, 2]}) == bounded.AW


def _live(nest: LoopNest) -> list[str]:
    from dlaopt.formulations.mapping.flexibility import DIM_MAP

    return [f for f, d in DIM_MAP[nest.kind].items() if nest.sizes.get(d, 1) > 1]


@pytest.mark.parametrize("workload", [conv(4, 4, 3), conv(4, 4, 3, r=1), conv(6, 6, 2, kind="depthwise_conv2d"),
                                      matmul(3, 4, 1)])
@pytest.mark.parametrize("orders", [None, [["Y", "X", "K", "C", "R", "S"]], [list(o) for o in STATIONARY_ORDERS],
                                    [["K", "C"]]])
def test_order_counts_match_enumeration(workload: dict[str, Any], orders: list[list[str]] | None) -> None:
    from dlaopt.formulations.mapping.flexibility import DIM_MAP

    acc = PRESETS.create("flexion", SMALL_HW)
    nest = _nest(instance(None, workload))
    flex = {"class": "0100", **({"order": orders} if orders else {})}
    sp = order_space(parse(flex, acc), nest)
    dims = list(DIM_MAP[nest.kind])
    live = _live(nest)
    perms = list(itertools.permutations(dims))

    def allowed(o: tuple[str, ...]) -> bool:
        return orders is None or any([o.index(d) for d in p if d in o] == sorted(o.index(d) for d in p if d in o)
                                     for p in orders)

    assert len(perms) == sp.C and sum(map(allowed, perms)) == sp.A
    assert len({tuple(d for d in o if d in live) for o in perms}) == sp.W
    assert len({tuple(d for d in o if d in live) for o in perms if allowed(o)}) == sp.AW


@pytest.mark.parametrize("workload", [conv(4, 4, 3), conv(6, 6, 2, kind="depthwise_conv2d"), matmul(3, 4, 1)])
@pytest.mark.parametrize("pairs", [None, [["C", "K"]], [["C", "K"], ["Y", "X"]], [["R", "S"], ["K", "Y"]]])
def test_parallel_counts_match_enumeration(workload: dict[str, Any], pairs: list[list[str]] | None) -> None:
    from dlaopt.formulations.mapping.flexibility import DIM_MAP

    acc = PRESETS.create("flexion", SMALL_HW)
    nest = _nest(instance(None, workload))
    sp = parallel_space(parse({"class": "0010", **({"parallel": pairs} if pairs else {})}, acc), nest)
    dims = list(DIM_MAP[nest.kind])
    live = set(_live(nest))
    every = [(a, b) for a in dims for b in dims if a != b]
    ok = every if pairs is None else [p for p in every if list(p) in pairs]
    assert (len(every), len(ok)) == (sp.C, sp.A)
    assert sum(1 for a, b in every if a in live and b in live) == sp.W
    assert sum(1 for a, b in ok if a in live and b in live) == sp.AW


@pytest.mark.parametrize("spec", [None, {"block": [2, 2]}, {"block": [1, 2]}, [[2, 8], [4, 4]]])
@pytest.mark.parametrize("channels", [1, 3, 6, 40])
def test_shape_counts_match_enumeration(spec: Any, channels: int) -> None:
    acc = PRESETS.create("flexion", SMALL_HW)  # 16 PEs
    nest = _nest(instance(None, conv(4, channels, 2, r=1)))
    sp = shape_space(parse({"class": "0001", **({"shapes": spec} if spec else {})}, acc), nest)
    if spec is None:
        rows = list(range(1, 17))
    elif isinstance(spec, dict):
        br, bc = spec["block"]
        rows = [br * a for a in range(1, 16 // (br * bc) + 1)]
    else:
        rows = [s[0] for s in spec]
    assert (16, len(rows), channels) == (sp.C, sp.A, sp.W)
    assert sum(1 for r in rows if r <= channels) == sp.AW


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(("flex", "where"), [
    ({"class": "01x1"}, "flexibility.class"),
    ({"class": "0000", "order": [["K", "C", "Y", "X", "R", "S"]]}, "flexibility.order"),
    ({"class": "0001", "shapes": [[8, 4]]}, "flexibility.shapes[0]"),
    ({"class": "0001", "shapes": {"block": [5, 5]}}, "flexibility.shapes.block"),
    ({"class": "0100", "order": [["K", "C"], ["K", "C"]]}, "flexibility.order[1]"),
    ({"class": "0010", "parallel": [["K", "P"]]}, "flexibility.parallel"),
    ({"class": "0000", "baseline": {"shape": [8, 8]}}, "flexibility.baseline.shape"),
    ({"class": "1000", "tile": {"K": {"min": 4, "max": 2}}}, "flexibility.tile.K"),
    ({"class": "1000", "turbo": True}, "flexibility"),
])
def test_malformed_flexibility_is_a_located_error(tmp_path: Path, flex: dict[str, Any], where: str) -> None:
    doc = {"problem": "mapping", "workload": conv(4, 4, 3), "hardware": {"preset": "flexion", "params": SMALL_HW},
           "flexibility": flex}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(cli, ["solve", str(path), "--method", "nvdla"])
    assert_bad_input(result.exit_code, result.stderr, where)


# ------------------------------------------------------------------------------------------------ experiment
def test_quick_experiment_orders_the_classes(tmp_path: Path) -> None:
    report = run_flexion(tmp_path / "q", quick=True, network=True, time_limit=60.0)
    rows = [r for r in report.rows if r["layer"] != "network"]
    assert rows and all(r["verified"] and r["proven"] and r["status"] == "optimal" for r in rows)
    value = {(r["study"], r["class"], r["objective"]): r["value"] for r in rows}
    le = lambda a, b: a <= b * (1 + 1e-6)  # noqa: E731
    for o in OBJECTIVES:
        v = {(s, c): x for (s, c, obj), x in value.items() if obj == o}
        for s in ("order", "parallel"):
            code = {"order": "0100", "parallel": "0010"}[s]
            assert le(v[s, f"FullFlex-{code}"], v[s, f"PartFlex-{code}"]), (s, o)
            assert le(v[s, f"PartFlex-{code}"], v[s, f"InFlex-{code}"]), (s, o)
        for part in ("PartFlex-0001-A", "PartFlex-0001-B"):
            assert le(v["shape", "FullFlex-0001"], v["shape", part]) and le(v["shape", part],
                                                                              v["shape", "InFlex-0001"]), o
        # the hard-partitioned buffer is other hardware: the shared one can do everything it does, and more
        assert le(v["tile", "FullFlex-1000"], v["tile", "PartFlex-1000"]), o
        assert le(v["tile", "FullFlex-1000"], v["tile", "InFlex-1000"]), o
        for s in ("tile", "order", "parallel", "shape"):
            assert all(le(v[s, "FullFlex-1111"], x) for (st, _), x in v.items() if st == s), (s, o)
    # one layer: the network row is that layer's
    for r in report.rows:
        if r["layer"] == "network":
            layer = next(x for x in rows if (x["study"], x["class"], x["objective"]) == (r["study"], r["class"],
                                                                                          r["objective"]))
            assert r["value"] == pytest.approx(layer["value"]) and r["normalised"] == pytest.approx(
                layer["normalised"])
    assert report.csv_path.is_file() and report.markdown_path.is_file() and report.plot_path is not None
    assert report.plot_path.stat().st_size > 10_000
    assert "## Order (Fig. 3.9)" in report.table
    # a rerun with resume solves nothing again
    again = run_flexion(tmp_path / "q", quick=True, network=True, resume=True, plot=False)
    assert again.summary["solved_now"] == 0 and again.rows == report.rows


def test_experiment_command(tmp_path: Path) -> None:
    out = tmp_path / "cmd"
    result = CliRunner().invoke(cli, ["experiment", "flexion", "--quick", "--studies", "order", "--objectives",
                                      "latency", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "PartFlex-0100" in result.stdout and (out / "flexion.md").is_file()
    bad = CliRunner().invoke(cli, ["experiment", "flexion", "--quick", "--studies", "tiles", "--out", str(out)])
    assert_bad_input(bad.exit_code, bad.stderr, "--studies")


def test_a_conflict_names_the_flexibility_axis() -> None:
    """InFlex parallelism allows only C on the rows and K on the columns; a user constraint allowing only Q and P
    there leaves both axes idle, so no mapping keeps half the 16 MACs busy. Deletion in declared order (tile,
    order, parallel, shape, then the list) drops the tile and order records (the two spatial records alone already
    idle the axes) and keeps the parallelism: without it, P and Q fill 9 of the 16 MACs."""
    doc = dict(instance({"class": "0000"}, conv(8, 4, 3)).document)
    doc["constraints"] = [{"kind": "spatial", "axes": {"cols": {"dims": ["P"]}, "rows": {"dims": ["Q"]}}},
                          {"kind": "utilization", "min": 0.5}]
    res = solve(instance_from_dict(doc), "exact", options=SolveOptions(time_limit=60, threads=1))
    assert res.status.value == "infeasible"
    assert res.conflict == ["flexibility.parallel (spatial 'conv2d')", "constraints[0] (spatial)",
                            "constraints[1] (utilization)"]
