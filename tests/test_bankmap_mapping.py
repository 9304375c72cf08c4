"""Memory-bank mapping: the choice model's carry rules, the evaluator (hand-computed bytes), exact against brute
force, exact <= propagate <= local, the functional check (and that it catches a missing copy), ResNet-50."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from dlaopt.formulations.bankmap.evaluate import BankReport, evaluate, functional_check, validate_mapping
from dlaopt.formulations.bankmap.exact import build_milp, solve_exact
from dlaopt.formulations.bankmap.layouts import BankMapping, LayoutModel, build_layout_model
from dlaopt.formulations.bankmap.methods import local, propagate, propagate_detailed
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload.builder import NetworkBuilder
from dlaopt.workload.graph import Workload

EXACT = SolveOptions(seed=0, threads=1, deterministic=True, mip_rel_gap=0.0)
TOL = 1e-6


# ================================================================================================ graphs
def residual_block() -> Workload:
    """conv -> conv -> add(conv2, conv1) + relu -> relu; spatial extent (8) above the channels (4)."""
    b = NetworkBuilder("residual", dtype_bytes=1)
    x = b.input("x", (1, 4, 8, 8))
    c1 = b.conv2d(x, 4, 3, padding=1, name="c1")
    c2 = b.conv2d(c1, 4, 3, padding=1, name="c2")
    s = b.add(c2, c1, name="add")
    y = b.activation(s, "relu", name="relu")
    return b.build([y])


def concat_branch() -> Workload:
    """Two branches (3 and 5 channels, one with an activation) concatenated on channels, then a conv."""
    b = NetworkBuilder("concat_branch", dtype_bytes=2)
    x = b.input("x", (1, 4, 6, 6))
    a = b.conv2d(x, 3, 1, name="a")
    a = b.activation(a, "relu", name="a_relu")
    c = b.conv2d(x, 5, 3, padding=1, name="c")
    cat = b.concat([a, c], axis=1, name="cat")
    y = b.conv2d(cat, 4, 1, name="head")
    return b.build([y])


def transpose_reshape_chain() -> Workload:
    """conv -> NHWC transpose -> reshape (1, H·W, C) -> matmul with a (C, 5) weight."""
    b = NetworkBuilder("chain", dtype_bytes=1)
    x = b.input("x", (1, 3, 6, 8))
    c = b.conv2d(x, 4, 1, name="conv")
    t = b.transpose(c, (0, 2, 3, 1), name="nhwc")
    r = b.reshape(t, (1, 48, 4), name="rows")
    y = b.linear(r, 5, name="fc")
    return b.build([y])


def flatten_matmul() -> Workload:
    """conv -> global pool -> flatten -> matmul, and conv -> max pool -> flatten (C·H·W) -> matmul."""
    b = NetworkBuilder("flatten", dtype_bytes=2)
    x = b.input("x", (1, 3, 4, 4))
    c = b.conv2d(x, 6, 3, padding=1, name="conv")
    g = b.global_pool(c, name="gap")
    y1 = b.linear(b.flatten(g, name="flat1"), 4, name="fc1")
    p = b.pool(c, "max", 2, name="mp")
    y2 = b.linear(b.flatten(p, name="flat2"), 4, name="fc2")
    return b.build([y1, y2])


def tiny_transpose() -> Workload:
    """x (1,2,4,4) -> 1x1 conv -> c (1,2,4,4) -> transpose (0,2,3,1) -> t (1,4,4,2). One byte per element."""
    b = NetworkBuilder("tiny_t", dtype_bytes=1)
    x = b.input("x", (1, 2, 4, 4))
    c = b.conv2d(x, 2, 1, name="conv")
    t = b.transpose(c, (0, 2, 3, 1), name="t")
    return b.build([t])


def tiny_relu_conv() -> Workload:
    """x (1,8,2,2) -> relu -> a -> 1x1 conv (4 out) -> y (1,4,2,2). One byte per element."""
    b = NetworkBuilder("tiny_rc", dtype_bytes=1)
    x = b.input("x", (1, 8, 2, 2))
    a = b.activation(x, "relu", name="relu")
    y = b.conv2d(a, 4, 1, name="conv")
    return b.build([y])


def random_graph(seed: int) -> Workload:
    """A small random DAG of conv, add (also broadcast against a weight), relu, transpose, slice, concat, split,
    tile, repeat, pool, reshape-to-matrix + matmul on NCHW-sized tensors."""
    rng = np.random.default_rng(seed)
    b = NetworkBuilder(f"random{seed}", dtype_bytes=int(rng.choice([1, 2])))
    x = b.input("x", (1, int(rng.integers(2, 6)), int(rng.integers(2, 6)), int(rng.integers(2, 6))))
    avail = [x]
    kinds = ["conv", "add", "bias", "relu", "transpose", "slice", "concat", "split", "tile", "repeat", "pool"]
    for _ in range(int(rng.integers(3, 6))):
        kind = str(rng.choice(kinds))
        t = avail[int(rng.integers(len(avail)))]
        s = b.shape(t)
        if kind == "conv":
            k = int(rng.integers(2, 6))
            ys = [b.conv2d(t, k, 1) if rng.random() < 0.5 else b.conv2d(t, k, 3, padding=1)]
        elif kind == "add":
            same = [u for u in avail if b.shape(u) == s and u != t]
            ys = [b.add(t, same[0], activation="relu") if same else b.activation(t, "tanh")]
        elif kind == "bias":
            ys = [b.add(t, b.weight(f"bias{len(avail)}", (s[1], 1, 1)))]
        elif kind == "relu":
            ys = [b.activation(t, "relu")]
        elif kind == "transpose":
            ys = [b.transpose(t, [int(v) for v in rng.permutation(4)])]
        elif kind == "slice":
            a = int(rng.integers(4))
            if s[a] < 2:
                continue
            starts, ends, steps = [0] * 4, list(s), [1] * 4
            starts[a] = int(rng.integers(0, s[a] - 1))
            steps[a] = int(rng.integers(1, 3))
            ys = [b.slice(t, starts, ends, steps)]
        elif kind == "concat":
            ys = [b.concat([t, t], axis=int(rng.integers(4)))]
        elif kind == "split":
            a = int(rng.integers(4))
            if s[a] < 2:
                continue
            first = int(rng.integers(1, s[a]))
            ys = b.split(t, [first, s[a] - first], axis=a)
        elif kind == "tile":
            reps = [1, 1, 1, 1]
            reps[int(rng.integers(4))] = 2
            ys = [b.tile(t, reps)]
        elif kind == "repeat":
            ys = [b.repeat(t, 2, int(rng.integers(4)))]
        else:
            if s[2] < 2 or s[3] < 2:
                continue
            ys = [b.pool(t, "max", 2)]
        avail.extend(ys)
    last = avail[-1]
    s = b.shape(last)
    m = b.reshape(last, (s[0] * s[1], s[2] * s[3]))
    y = b.linear(m, 3)
    return b.build([y])


def mixed_bank_bytes(wl: Workload, banks: int) -> int:
    """A bank size some tensors fit in some layouts and not in others: the median footprint."""
    fp = [math.ceil(d / banks) * (t.size_bytes // d) for t in wl.tensors.values() for d in t.shape]
    return int(np.median(fp))


def brute_force(lm: LayoutModel, w: float) -> float:
    """The least objective over every combination of operator choices and free-tensor homes."""
    names = [o.name for o in lm.ops]
    free = list(lm.free_tensors)
    ranges = [range(len(o.choices)) for o in lm.ops] + [range(lm.rank(t)) for t in free]
    best = math.inf
    for combo in itertools.product(*ranges):
        m = BankMapping(dict(zip(names, combo[:len(names)], strict=True)),
                        dict(zip(free, combo[len(names):], strict=True)))
        best = min(best, evaluate(lm, m, w, validate=False).objective)
    return best


def _random_cases(n: int, limit: int = 6000) -> list[tuple[int, int]]:
    """(seed, banks) of the first ``n`` random graphs with at most ``limit`` mappings."""
    out: list[tuple[int, int]] = []
    seed = 0
    while len(out) < n:
        banks = (2, 3, 4)[seed % 3]
        lm = build_layout_model(random_graph(seed), banks, 1 << 30)
        if lm.n_combinations() <= limit:
            out.append((seed, banks))
        seed += 1
    return out


# the first 14 small random graphs, then graphs found by scanning seeds 100-399: exact beats propagate
# (290/2, 307/3, 358/2, 383/4, 395/4); propagation ends above local and single-operator moves fix it (315/2);
# the moves get stuck and local's mapping is returned (325/4)
GAP_CASES = [(290, 2), (307, 3), (358, 2), (383, 4), (395, 4)]
MOVE_CASE, FALLBACK_CASE = (315, 2), (325, 4)
RANDOM_CASES = _random_cases(14) + GAP_CASES + [MOVE_CASE, FALLBACK_CASE]
HAND_GRAPHS = {
    "residual": (residual_block, 4),
    "concat_branch": (concat_branch, 4),
    "chain": (transpose_reshape_chain, 4),
    "flatten": (flatten_matmul, 2),
}


def _hand_model(name: str, bank_bytes: int | None = None) -> LayoutModel:
    make, banks = HAND_GRAPHS[name]
    wl = make()
    return build_layout_model(wl, banks, bank_bytes if bank_bytes is not None else mixed_bank_bytes(wl, banks))


def _random_model(seed: int, banks: int) -> LayoutModel:
    wl = random_graph(seed)
    return build_layout_model(wl, banks, mixed_bank_bytes(wl, banks))


def _exact(lm: LayoutModel, w: float = 4.0, options: SolveOptions | None = EXACT) -> tuple[BankMapping, BankReport]:
    """The exact mapping and its evaluation; the solve must be proven optimal."""
    res = solve_exact(lm, w, options=options)
    assert res.status == Status.OPTIMAL, res.message
    assert res.mapping is not None and res.report is not None
    return res.mapping, res.report


def _check_all(lm: LayoutModel, w: float, brute: bool) -> None:
    loc, prop = local(lm, w), propagate(lm, w)
    ex, e_ex = _exact(lm, w)
    e_loc, e_prop = evaluate(lm, loc, w), evaluate(lm, prop, w)
    assert e_loc.violations == () and e_prop.violations == () and e_ex.violations == ()
    assert e_ex.objective <= e_prop.objective + TOL
    assert e_prop.objective <= e_loc.objective + TOL
    if brute:
        assert e_ex.objective == pytest.approx(brute_force(lm, w), abs=TOL)
    for m in (loc, prop, ex):
        chk = functional_check(lm, m, seed=1)
        assert chk.ok, chk.mismatched


# ================================================================================================ choice model
def test_carry_rules_are_bank_local() -> None:
    """Every non-free choice of every operator keeps each element in its bank (checked by the evaluator's own
    numpy index semantics), on the hand-built and random graphs, for several bank counts."""
    graphs = [make() for make, _ in HAND_GRAPHS.values()] + [random_graph(s) for s in range(40)]
    for wl in graphs:
        for banks in (1, 2, 3, 4):
            lm = build_layout_model(wl, banks, 1 << 20)
            for o in lm.ops:
                for c in range(len(o.choices)):
                    m = local(lm)
                    m = BankMapping({**m.choices, o.name: c}, m.homes)
                    assert validate_mapping(lm, m) == [], (wl.name, banks, o.name, o.choices[c])


def test_slice_split_concat_tile_repeat_rules() -> None:
    b = NetworkBuilder("rules", dtype_bytes=1)
    x = b.input("x", (1, 8, 6, 4))
    b.slice(x, [0, 4, 0, 0], [1, 8, 6, 4], name="s_ok")  # start 4 = 0 mod 4, step 1: channels carry
    b.slice(x, [0, 2, 0, 0], [1, 8, 6, 4], name="s_off")  # start 2: channels do not carry
    b.slice(x, [0, 0, 0, 0], [1, 8, 6, 4], [1, 5, 1, 1], name="s_step")  # step 5 = 1 mod 4: carries
    b.split(x, [4, 4], axis=1, name="sp_ok")
    b.split(x, [2, 6], axis=1, name="sp_off")
    b.concat([x, x], axis=1, name="cat_ok")  # offset 8
    b.concat([x, x], axis=2, name="cat_off")  # offset 6
    b.tile(x, [1, 2, 1, 1], name="tile_ok")  # 8 = 0 mod 4
    b.tile(x, [1, 1, 2, 1], name="tile_off")  # 6 != 0 mod 4
    b.repeat(x, 2, 1, name="rep")
    b.reshape(x, (8, 24), name="rs")
    lm = build_layout_model(b.build([]), 4, 1 << 20)

    def carried(name: str) -> set[int | None]:
        o = lm.op_by_name()[name]
        return {ch.inputs[0] for ch in o.choices if not ch.free}

    assert carried("s_ok") == {0, 1, 2, 3}
    assert carried("s_off") == {0, 2, 3}
    assert carried("s_step") == {0, 1, 2, 3}
    assert carried("sp_ok") == {0, 1, 2, 3}
    assert carried("sp_off") == {0, 2, 3}
    assert carried("cat_ok") == {0, 1, 2, 3}
    assert carried("cat_off") == {0, 1, 3}
    assert carried("tile_ok") == {0, 1, 2, 3}
    assert carried("tile_off") == {0, 1, 3}
    assert carried("rep") == {0, 2, 3}
    # (1,8,6,4) -> (8,24): axis 1 (extent 8, prefix 1) is output axis 0; 6 and 4 merge into 24
    assert carried("rs") == {1}
    rs = lm.op_by_name()["rs"]
    assert [ch.outputs for ch in rs.choices if not ch.free] == [(0,)]
    assert [ch.outputs for ch in rs.choices if ch.free] == [(0,), (1,)]


def test_depthwise_and_matmul_layouts() -> None:
    b = NetworkBuilder("dw", dtype_bytes=1)
    x = b.input("x", (1, 4, 5, 5))
    d = b.depthwise_conv2d(x, 3, padding=1, name="dw")
    m = b.matmul(b.reshape(d, (4, 25)), b.weight("w2", (25, 3)), name="mm")
    lm = build_layout_model(b.build([m]), 2, 1 << 20)
    ops = lm.op_by_name()
    assert ops["dw"].choices[0].inputs == (1, 0) and ops["dw"].choices[0].outputs == (1,)
    assert ops["mm"].choices[0].inputs == (1, 0) and ops["mm"].choices[0].outputs == (1,)


def test_validation_rejects_bad_mappings() -> None:
    lm = _hand_model("residual")
    good = local(lm)
    assert validate_mapping(lm, good) == []
    assert validate_mapping(lm, BankMapping({**good.choices, "relu": 99}, good.homes))
    assert validate_mapping(lm, BankMapping({**good.choices, "nope": 0}, good.homes))
    assert validate_mapping(lm, BankMapping(good.choices, {**good.homes, "x": 7}))
    missing = dict(good.homes)
    missing.pop("x")
    assert validate_mapping(lm, BankMapping(good.choices, missing))


# ================================================================================================ evaluator
def test_hand_computed_transpose_graph() -> None:
    """tiny_transpose, B = 2, one byte per element; c and t hold 32 bytes.

    Footprints: c (1,2,4,4) in layout 1: ceil(2/2)·32/2 = 16; layout 2: ceil(4/2)·32/4 = 16. t (1,4,4,2) in layout 1:
    ceil(4/2)·32/4 = 16; layout 3: ceil(2/2)·32/2 = 16.

    local: conv writes c in layout 1; the transpose maximises its own output extent: output axes 1 and 2 have 4,
    ties to the outermost -> output layout 1 = input axis perm[1] = 2, so c is required in layout 2: one copy of c
    (32 bytes). exact: the transpose carries input axis 1 to output axis 3: no copy.

    bank_bytes = 16: everything fits -> local: 32 on-chip copy bytes, no spill; objective 32; exact 0.
    bank_bytes = 8: nothing fits -> local: 32 off-chip copy bytes; spills: c written + read by the transpose = 64,
    t (graph output, no reader) written = 32 -> 96; objective 4·(32 + 96) = 512. exact: spills only, 4·96 = 384.
    """
    wl = tiny_transpose()
    lm = build_layout_model(wl, 2, 16)
    rep = evaluate(lm, local(lm))
    assert (rep.on_chip_copy_bytes, rep.off_chip_copy_bytes, rep.spill_bytes, rep.objective) == (32, 0, 0, 32.0)
    assert [(c.tensor, c.home, c.layout) for c in rep.copies] == [("conv.out", 1, 2)]
    assert _exact(lm)[1].objective == 0.0

    lm = build_layout_model(wl, 2, 8)
    rep = evaluate(lm, local(lm))
    assert (rep.on_chip_copy_bytes, rep.off_chip_copy_bytes, rep.spill_bytes, rep.objective) == (0, 32, 96, 512.0)
    _, ex = _exact(lm)
    assert (ex.on_chip_copy_bytes, ex.off_chip_copy_bytes, ex.spill_bytes) == (0, 0, 96)
    assert ex.objective == 384.0
    assert evaluate(lm, local(lm), 1.0).objective == 128.0  # w = 1


def test_hand_computed_relu_conv_graph() -> None:
    """tiny_relu_conv, B = 4, one byte per element. x and a (1,8,2,2) hold 32 bytes; footprints: layout 1:
    ceil(8/4)·32/8 = 8; layout 2 (or 3): ceil(2/4)·32/2 = 16; layout 0: 32. y (1,4,2,2) 16 bytes, layout 1: 4.
    conv.w (4,8,1,1) 32 bytes, layout 1: 8.

    Mapping: relu on axis 2 (reads x in layout 2, writes a in layout 2), x stored in layout 1, conv.w in 1.
    Copies: x 1 -> 2 (32 bytes), a 2 -> 1 for the conv (32 bytes).
    bank_bytes = 8: x fits in 1 but not 2 -> off chip; a does not fit in 2 -> off chip and spills: 32 written + 32 read
    by the conv = 64; y fits. on 0, off 64, spill 64; objective 4·128 = 512.
    bank_bytes = 16: both copies on chip (64), nothing spills; objective 64.
    relu on axis 1: no copy, no spill (objective 0) for both sizes.
    """
    wl = tiny_relu_conv()
    for bank_bytes, expected in ((8, (0, 64, 64, 512.0)), (16, (64, 0, 0, 64.0))):
        lm = build_layout_model(wl, 4, bank_bytes)
        relu = lm.op_by_name()["relu"]
        axis2 = next(i for i, ch in enumerate(relu.choices) if ch.outputs == (2,))
        axis1 = next(i for i, ch in enumerate(relu.choices) if ch.outputs == (1,))
        m = BankMapping({"relu": axis2, "conv": 0}, {"x": 1, "conv.w": 1})
        rep = evaluate(lm, m)
        assert (rep.on_chip_copy_bytes, rep.off_chip_copy_bytes, rep.spill_bytes, rep.objective) == expected
        assert {(c.tensor, c.home, c.layout) for c in rep.copies} == {("x", 1, 2), ("relu.out", 2, 1)}
        assert evaluate(lm, BankMapping({"relu": axis1, "conv": 0}, {"x": 1, "conv.w": 1})).objective == 0.0
        # the MILP prices the same mapping identically (warm-start encoding)
        milp = build_milp(lm)
        v = milp.encode(m)
        assert milp.model.max_violation(v) <= 1e-9
        assert milp.model.objective_value(v) == pytest.approx(rep.objective)
        assert milp.decode(v) == m


def test_milp_prices_every_mapping_like_the_evaluator() -> None:
    for seed, banks in RANDOM_CASES[:5]:
        lm = _random_model(seed, banks)
        milp = build_milp(lm, 3.0)
        rng = np.random.default_rng(seed)
        for _ in range(20):
            m = BankMapping({o.name: int(rng.integers(len(o.choices))) for o in lm.ops},
                            {t: int(rng.integers(lm.rank(t))) for t in lm.free_tensors})
            v = milp.encode(m)
            assert milp.model.max_violation(v) <= 1e-9
            assert milp.model.objective_value(v) == pytest.approx(evaluate(lm, m, 3.0).objective, abs=TOL)


# ================================================================================================ methods
@pytest.mark.parametrize("name", sorted(HAND_GRAPHS))
@pytest.mark.parametrize("w", [4.0, 1.0])
def test_hand_graphs(name: str, w: float) -> None:
    _check_all(_hand_model(name), w, brute=True)


@pytest.mark.parametrize(("seed", "banks"), RANDOM_CASES)
def test_random_graphs(seed: int, banks: int) -> None:
    _check_all(_random_model(seed, banks), 4.0, brute=True)


def test_global_beats_local_on_the_chain() -> None:
    """The transpose/reshape chain: local transposes to the widest output axis and lets the reshape write its widest
    axis, so the conv output and the reshape output need copies; propagation carries channels through both."""
    lm = _hand_model("chain", bank_bytes=1 << 20)
    loc = evaluate(lm, local(lm))
    prop = evaluate(lm, propagate(lm))
    assert loc.on_chip_copy_bytes > 0
    assert prop.objective == 0.0
    _, info = propagate_detailed(lm)
    assert not info.fell_back and info.moves == 0


def test_functional_check_detects_a_missing_copy() -> None:
    cases = (("tiny", tiny_transpose, 2, 16), ("chain", transpose_reshape_chain, 4, 1 << 20))
    for name, make, banks, bank_bytes in cases:
        wl = make()
        lm = build_layout_model(wl, banks, bank_bytes)
        m = local(lm)
        rep = evaluate(lm, m)
        assert rep.copies, name
        assert functional_check(lm, m).ok
        for c in rep.copies:
            bad = functional_check(lm, m, drop_copies=[(c.tensor, c.layout)])
            assert not bad.ok, (name, c)
            assert bad.copies_made == len(rep.copies) - 1


def test_exact_beats_propagate_and_propagate_repairs() -> None:
    for seed, banks in GAP_CASES:
        lm = _random_model(seed, banks)
        assert _exact(lm)[1].objective < evaluate(lm, propagate(lm)).objective - TOL
    lm = _random_model(*MOVE_CASE)
    _, info = propagate_detailed(lm)
    assert info.propagated_objective > info.local_objective and info.moves > 0 and not info.fell_back
    # The fallback to local's mapping (when single-operator moves get stuck above it) no longer occurs on the
    # random graphs since local also pays for writing non-adjacent outputs to main memory (none in 6,000 scanned);
    # whenever propagate does fall back, it returns exactly local's mapping.
    for seed, banks in RANDOM_CASES:
        lm = _random_model(seed, banks)
        mapping, info = propagate_detailed(lm)
        assert not info.fell_back or mapping == local(lm)
        assert info.local_objective == pytest.approx(evaluate(lm, local(lm)).objective)


# ================================================================================================ ResNet-50
@pytest.mark.slow
def test_resnet50_128_banks() -> None:
    from dlaopt.zoo import ZOO

    wl = ZOO.create("resnet50", {})
    for kb in (8, 64):
        lm = build_layout_model(wl, 128, kb * 1024)
        loc = evaluate(lm, local(lm))
        prop = evaluate(lm, propagate(lm))
        t0 = time.perf_counter()
        _, ex = _exact(lm, options=None)  # default options, as a user would run it
        elapsed = time.perf_counter() - t0
        assert elapsed < 60.0
        assert loc.violations == () and prop.violations == () and ex.violations == ()
        assert ex.objective <= prop.objective + TOL <= loc.objective + 2 * TOL
