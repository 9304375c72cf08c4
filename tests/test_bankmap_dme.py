"""Data-movement elimination (seed 002 §2.1): access functions, their composition, the rewriting to a fixed point,
bit-exact execution of the rewritten graph, the copy accounting and the ``parallel-wavenet`` zoo network."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlaopt.errors import InputError
from dlaopt.formulations.bankmap.dme import (
    Affine,
    FloorDiv,
    Gather,
    IndexFn,
    Modulo,
    Permute,
    Reshape,
    Select,
    copy_traffic,
    eliminate,
    evaluate,
    gather,
    identity_view,
    operator_access_map,
    precompose,
    run_rewritten,
    simplify,
    sources,
    view_class,
)
from dlaopt.workload import NetworkBuilder, OpKind, Workload
from dlaopt.workload.execute import execute, random_values, run_operator
from dlaopt.zoo import ZOO


def _check_bit_exact(wl: Workload, seed: int = 0) -> None:
    values = random_values(wl, seed)
    ref = execute(wl, values)
    res = eliminate(wl)
    got = run_rewritten(res, values)
    assert set(got) == set(res.graph.outputs)
    for name, arr in got.items():
        assert arr.dtype == ref[name].dtype and arr.shape == ref[name].shape
        assert np.array_equal(arr, ref[name]), name


def _grid(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    return tuple(a.reshape(-1) for a in np.indices(shape))


# ============================================================================ one access function per operator kind
def _single(kind: OpKind, shapes: list[tuple[int, ...]], attrs: dict) -> Workload:
    b = NetworkBuilder("one", dtype_bytes=1)
    xs = [b.input(f"x{i}", s) for i, s in enumerate(shapes)]
    outs = b.op(kind, xs, attrs, name="op", n_outputs=len(attrs.get("sizes", [0])))
    return b.build(outputs=outs)


SINGLE_OPS = [
    (OpKind.TRANSPOSE, [(2, 3, 4, 5)], {"perm": [2, 0, 3, 1]}),
    (OpKind.RESHAPE, [(2, 3, 4, 5)], {"shape": [6, 2, 10]}),
    (OpKind.RESHAPE, [(6, 10)], {"shape": [3, 4, 5]}),
    (OpKind.SLICE, [(7, 9, 5)], {"starts": [1, 0, 2], "ends": [7, 9, 5], "steps": [2, 3, 1]}),
    (OpKind.SLICE, [(8, 8)], {"starts": [3, 1], "ends": [4, 8], "steps": [1, 4]}),
    (OpKind.SPLIT, [(3, 10, 2)], {"axis": 1, "sizes": [2, 5, 3]}),
    (OpKind.CONCAT, [(2, 3, 4), (2, 1, 4), (2, 5, 4)], {"axis": 1}),
    (OpKind.CONCAT, [(3, 2), (3, 7)], {"axis": -1}),
    (OpKind.TILE, [(2, 3, 1)], {"reps": [2, 1, 4]}),
    (OpKind.TILE, [(3, 4)], {"reps": [3, 2]}),
    (OpKind.REPEAT, [(2, 3, 4)], {"repeats": 3, "axis": 1}),
    (OpKind.REPEAT, [(5, 2)], {"repeats": 2, "axis": -1}),
]


@pytest.mark.parametrize(("kind", "shapes", "attrs"), SINGLE_OPS)
def test_access_map_equals_operator_on_arange(kind, shapes, attrs):
    wl = _single(kind, shapes, attrs)
    op = wl.operators[0]
    offset = 0
    values = {}
    for t in op.inputs:  # distinct element values across inputs, so a wrong source shows
        n = math.prod(wl.tensors[t].shape)
        values[t] = np.arange(offset, offset + n).reshape(wl.tensors[t].shape)
        offset += n
    expect = run_operator(op, [values[t] for t in op.inputs])
    views = [identity_view(t, wl.tensors[t].shape) for t in op.inputs]
    out_shapes = [wl.tensors[t].shape for t in op.outputs]
    for j, want in enumerate(expect):
        m = operator_access_map(op, views, out_shapes, j)
        assert m.shape == want.shape
        assert np.array_equal(gather(m, values), want)
        # the vectorised evaluation names, for every element, the source tensor and index holding its value
        seen = np.zeros(want.size, dtype=bool)
        for src, pos, idx in evaluate(m, _grid(want.shape)):
            assert np.array_equal(values[src][idx], want.reshape(-1)[pos])
            seen[pos] = True
        assert seen.all()


def test_access_map_of_a_compute_operator_is_an_error():
    b = NetworkBuilder("c")
    x = b.input("x", (2, 2))
    y = b.activation(x, "relu")
    wl = b.build([y])
    with pytest.raises(ValueError, match="not a data-movement"):
        operator_access_map(wl.operators[0], [identity_view(x, (2, 2))], [(2, 2)])


# ============================================================================ index-function composition
def _rng_index(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    return _grid(shape)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (Affine((3, 4), (7, 9), (1, 2), (2, 1)), Affine((7, 9), (20, 30), (3, 0), (2, 3))),
        (Permute((4, 2, 3), (2, 3, 4), (2, 0, 1)), Permute((2, 3, 4), (3, 4, 2), (2, 0, 1))),
        (Reshape((6, 4), (2, 12)), Reshape((2, 12), (4, 3, 2))),
        (FloorDiv((2, 12), (2, 6), 1, 2), FloorDiv((2, 6), (2, 2), 1, 3)),
    ],
)
def test_fused_steps_equal_sequential_application(a, b):
    fn = IndexFn.of(a).then(IndexFn.of(b))
    assert len(fn.steps) == 1  # fused into one step of the same kind
    idx = _rng_index(a.dst)
    for x, y in zip(fn(idx), b.apply(a.apply(idx)), strict=True):
        assert np.array_equal(x, y)


def test_inverse_permutations_and_round_trip_reshapes_fuse_to_identity():
    p = IndexFn.of(Permute((3, 2), (2, 3), (1, 0)))
    assert p.then(IndexFn.of(Permute((2, 3), (3, 2), (1, 0)))).is_identity
    r = IndexFn.of(Reshape((6,), (2, 3))).then(IndexFn.of(Reshape((2, 3), (6,))))
    assert r.is_identity
    with pytest.raises(ValueError, match="cannot compose"):
        p.then(p)  # p's source space (2, 3) is not its destination space (3, 2)
    with pytest.raises(ValueError, match="cannot compose"):
        precompose(identity_view("t", (2, 3)), IndexFn.identity((3, 2)))


def test_bounding_boxes_contain_every_image_point():
    steps = [
        Affine((4, 5), (9, 20), (1, 3), (2, 3)),
        Permute((5, 4), (4, 5), (1, 0)),
        Reshape((4, 6), (3, 8)),
        Reshape((3, 8), (2, 12)),
        Modulo((6, 8), (4, 3)),
        FloorDiv((4, 9), (4, 3), 1, 3),
    ]
    rng = np.random.default_rng(3)
    for s in steps:
        for _ in range(20):
            lo = tuple(int(rng.integers(0, d)) for d in s.dst)
            hi = tuple(int(rng.integers(a, d)) for a, d in zip(lo, s.dst, strict=True))
            pts = tuple(a.reshape(-1) + o for a, o in zip(np.indices([h - a + 1 for a, h in zip(lo, hi, strict=True)]),
                                                          lo, strict=True))
            img = s.apply(pts)
            blo, bhi = s.box((lo, hi))
            for k, a in enumerate(img):
                assert blo[k] <= int(a.min()) and int(a.max()) <= bhi[k], (s, lo, hi)


# ============================================================================ chains of data-movement operators
def _chain(order: list[str]) -> Workload:
    """A chain of data-movement operators in ``order`` from a (4, 6, 5) input, then a compute reader."""
    b = NetworkBuilder("chain", dtype_bytes=2)
    x = b.input("x", (4, 6, 5))
    for kind in order:
        s = b.shape(x)
        if kind == "transpose":
            x = b.transpose(x, list(reversed(range(len(s)))))
        elif kind == "reshape":
            flat = math.prod(s)
            x = b.reshape(x, (s[0], flat // s[0]) if len(s) > 2 else (s[0], s[1], 1))
        elif kind == "slice":
            x = b.slice(x, [1 if d > 2 else 0 for d in s], list(s), [2 if d > 3 else 1 for d in s])
        elif kind == "tile":
            x = b.tile(x, [2] + [1] * (len(s) - 2) + [3])
        elif kind == "repeat":
            x = b.repeat(x, 2, axis=len(s) - 1)
        elif kind == "split":
            axis = max(range(len(s)), key=lambda k: s[k])
            parts = b.split(x, [s[axis] - s[axis] // 2, s[axis] // 2], axis=axis)
            x = b.concat([parts[1], parts[0], parts[1]], axis=axis)  # split feeding concat: re-stitched
        elif kind == "concat":
            axis = len(s) - 1
            x = b.concat([x, b.slice(x, [0] * len(s), [*s[:-1], 1])], axis=axis)
        else:  # pragma: no cover
            raise AssertionError(kind)
    y = b.activation(x, "tanh", name="reader")
    return b.build(outputs=[y])


CHAINS = [
    ["transpose", "reshape", "slice", "tile", "repeat", "split", "concat"],
    ["concat", "split", "repeat", "tile", "slice", "reshape", "transpose"],
    ["repeat", "transpose", "concat", "reshape", "split", "slice", "tile"],
    ["tile", "split", "transpose", "repeat", "slice", "concat", "reshape"],
    ["slice", "concat", "tile", "reshape", "repeat", "transpose", "split"],
    ["reshape", "repeat", "repeat", "split", "split", "transpose", "transpose", "concat", "concat"],
]


@pytest.mark.parametrize("order", CHAINS, ids=["-".join(c) for c in CHAINS])
def test_chains_are_bit_exact_and_fully_eliminated(order):
    wl = _chain(order)
    _check_bit_exact(wl, seed=len(order))
    res = eliminate(wl)
    # every data-movement operator's stored tensor is an intermediate read only by data-movement operators or the
    # final tanh: all pairs disappear, the tanh reads the graph input directly
    pairs = sum(len(op.outputs) for op in wl.operators if op.kind.is_data_movement)
    assert res.pairs_total == pairs and res.pairs_eliminated == pairs and not res.kept
    assert [r.name for r in res.graph.operators] == ["reader"]
    assert sources(res.graph.operators[0].inputs[0]) == {"x"}
    assert res.intermediate_bytes_eliminated == res.intermediate_bytes_total == sum(
        wl.tensors[t].size_bytes for op in wl.operators if op.kind.is_data_movement for t in op.outputs)


def _random_chain(seed: int) -> Workload:
    """A random DAG of data-movement operators (several readers per tensor, concats of unrelated parts) with
    compute readers in between."""
    rng = np.random.default_rng(seed)
    b = NetworkBuilder(f"random{seed}", dtype_bytes=1)
    pool = [b.input("x", (3, 4, 6)), b.input("y", (2, 6, 4))]
    outs: list[str] = []
    for _ in range(12):
        x = pool[int(rng.integers(len(pool)))]
        s = b.shape(x)
        r = len(s)
        choice = int(rng.integers(8))
        if choice == 0:
            x = b.transpose(x, [int(v) for v in rng.permutation(r)])
        elif choice == 1:
            x = b.reshape(x, (math.prod(s),) if r > 1 and rng.random() < 0.3 else (*s[:-2], s[-2] * s[-1]) if r > 2
                          else (*s, 1))
        elif choice == 2:
            lo = [int(rng.integers(0, d)) for d in s]
            hi = [int(rng.integers(a + 1, d + 1)) for a, d in zip(lo, s, strict=True)]
            x = b.slice(x, lo, hi, [int(rng.integers(1, 3)) for _ in s])
        elif choice == 3 and math.prod(s) < 2000:
            x = b.tile(x, [int(rng.integers(1, 3)) for _ in s])
        elif choice == 4 and math.prod(s) < 2000:
            x = b.repeat(x, int(rng.integers(2, 4)), axis=int(rng.integers(r)))
        elif choice == 5:
            ax = int(rng.integers(r))
            if s[ax] > 1:
                cut = int(rng.integers(1, s[ax]))
                parts = b.split(x, [cut, s[ax] - cut], axis=ax)
                pool.append(parts[1])
                x = parts[0]
        elif choice == 6:
            same = [t for t in pool if len(b.shape(t)) == r and all(
                b.shape(t)[k] == s[k] for k in range(r) if k != r - 1)]
            others = [same[int(rng.integers(len(same)))] for _ in range(int(rng.integers(1, 3)))]
            x = b.concat([x, *others], axis=r - 1)
        else:
            x = b.activation(x, "relu")
        pool.append(x)
    for t in pool[2:]:
        if rng.random() < 0.3:
            outs.append(b.activation(t, "sigmoid"))
    outs.append(pool[-1])
    return b.build(outputs=outs)


@pytest.mark.parametrize("seed", range(25))
def test_random_data_movement_dags_are_bit_exact(seed):
    wl = _random_chain(seed)
    _check_bit_exact(wl, seed)
    res = eliminate(wl)
    again = eliminate(res.graph)
    assert again.pairs_eliminated == 0 and again.graph == res.graph
    # what is left is exactly the data-movement operators storing graph outputs
    dm_outputs = {t for op in wl.operators if op.kind.is_data_movement for t in op.outputs
                  if wl.tensors[t].role.value == "output"}
    assert {k.tensor for k in res.kept} == dm_outputs


# ============================================================================ several readers, straddling, outputs
def test_tensor_read_by_a_data_movement_and_a_compute_operator():
    b = NetworkBuilder("fanout", dtype_bytes=2)
    x = b.input("x", (4, 8))
    t = b.transpose(x, (1, 0), name="t")  # (8, 4): read by relu (compute) and by a slice (data movement)
    r = b.activation(t, "relu", name="relu")
    s = b.slice(t, (2, 0), (8, 4), (3, 1), name="s")  # (2, 4)
    w = b.weight("w", (4, 3))
    m = b.matmul(s, w, name="mm")
    wl = b.build([r, m])
    _check_bit_exact(wl)
    res = eliminate(wl)
    assert res.pairs_total == 2 and res.pairs_eliminated == 2
    assert [r.name for r in res.graph.operators] == ["relu", "mm"]
    relu, mm = res.graph.operators
    assert sources(relu.inputs[0]) == {"x"} and view_class(relu.inputs[0]) == "affine"
    assert sources(mm.inputs[0]) == {"x"} and view_class(mm.inputs[0]) == "affine"
    assert mm.inputs[1] == identity_view("w", (4, 3))
    # the slice of the transpose is one affine step: x[k, 2 + 3·i] for mm's operand (i, k)
    steps = mm.inputs[0].fn.steps
    assert [type(s).__name__ for s in steps] == ["Affine", "Permute"]


def test_concat_reader_inside_one_input_gets_a_single_source_straddler_keeps_a_piecewise_one():
    b = NetworkBuilder("cat", dtype_bytes=1)
    a = b.input("a", (2, 3))
    c = b.input("c", (2, 4))
    d = b.input("d", (2, 2))
    cat = b.concat([a, c, d], axis=1, name="cat")  # columns: a 0..2, c 3..6, d 7..8
    inside = b.slice(cat, (0, 4), (2, 7), name="inside")  # c's columns 1..3
    strided = b.slice(cat, (0, 1), (2, 9), (1, 3), name="strided")  # columns 1, 4, 7: a, c and d
    across = b.slice(cat, (0, 2), (2, 5), name="across")  # a's column 2, c's columns 0..1
    outs = [b.activation(t, "relu", name=f"use.{t.split('.')[0]}") for t in (inside, strided, across)]
    wl = b.build(outs)
    _check_bit_exact(wl)
    res = eliminate(wl)
    assert res.pairs_eliminated == res.pairs_total == 4
    views = {r.name: r.inputs[0] for r in res.graph.operators}
    assert isinstance(views["use.inside"], Gather) and views["use.inside"].source == "c"
    assert isinstance(views["use.strided"], Select) and sources(views["use.strided"]) == {"a", "c", "d"}
    assert isinstance(views["use.across"], Select) and sources(views["use.across"]) == {"a", "c"}
    assert views["use.across"].branches[2] is None  # d is never reached
    assert view_class(views["use.across"]) == "piecewise"


def test_nested_concats_and_splits_collapse_to_the_original_tensors():
    b = NetworkBuilder("nest", dtype_bytes=1)
    x = b.input("x", (3, 10))
    p, q, r = b.split(x, [2, 5, 3], axis=1, name="sp")
    inner = b.concat([q, r], axis=1, name="inner")  # x[:, 2:10]
    outer = b.concat([p, inner], axis=1, name="outer")  # x again
    back = b.split(outer, [4, 6], axis=1, name="back")  # x[:, :4], x[:, 4:]
    outs = [b.activation(t, "relu", name=f"use{i}") for i, t in enumerate(back)]
    wl = b.build(outs)
    _check_bit_exact(wl)
    res = eliminate(wl)
    for r_ in res.graph.operators:
        v = r_.inputs[0]
        assert isinstance(v, Gather) and v.source == "x" and view_class(v) == "affine"
    # simplify is a no-op on an already simple map and collapses a select reached in one part
    assert simplify(res.graph.operators[0].inputs[0]) == res.graph.operators[0].inputs[0]


def test_parts_that_agree_only_element_by_element_merge_into_one_gather():
    b = NetworkBuilder("agree", dtype_bytes=1)
    x = b.input("x", (3, 5))
    p = b.slice(x, (0, 0), (3, 2), name="p")  # x[:, 0:2]
    t = b.tile(x, (1, 2), name="t")
    q = b.slice(t, (0, 2), (3, 5), name="q")  # x[:, 2:5] read through the tile: j mod 5, not the same formula
    c = b.concat([p, q], axis=1, name="c")  # x again
    y = b.activation(c, "relu", name="relu")
    wl = b.build([y])
    _check_bit_exact(wl)
    (relu,) = eliminate(wl).graph.operators
    assert isinstance(relu.inputs[0], Gather) and relu.inputs[0].source == "x"
    assert view_class(relu.inputs[0]) == "identity"


def test_graph_outputs_are_kept_and_their_readers_still_rewritten():
    b = NetworkBuilder("outs", dtype_bytes=4)
    x = b.input("x", (2, 6))
    r = b.reshape(x, (3, 4), name="r")  # graph output AND read by t
    t = b.transpose(r, (1, 0), name="t")
    s, u = b.split(t, [1, 3], axis=0, name="sp")  # s: graph output; u: read by the relu
    y = b.activation(u, "relu", name="relu")
    wl = b.build([r, s, y])
    _check_bit_exact(wl)
    res = eliminate(wl)
    assert res.pairs_total == 4 and res.pairs_eliminated == 2
    assert set(res.eliminated) == {"t.out", "sp.out1"}
    assert {(k.operator, k.tensor) for k in res.kept} == {("r", "r.out"), ("sp", "sp.out0")}
    assert all("graph output" in k.reason for k in res.kept)
    names = [op.name for op in res.graph.operators]
    assert names == ["r", "sp", "relu"]
    sp = res.graph.operators[1]
    assert sp.stored == ("sp.out0",)  # the other part of the split is gone
    assert sources(sp.inputs[0]) == {"x"}  # split reads x through reshape∘transpose, not the stored r
    assert sources(res.graph.operators[2].inputs[0]) == {"x"}
    assert res.intermediate_bytes_eliminated == 4 * (12 + 9)
    assert res.intermediate_bytes_total == 4 * (12 + 12 + 3 + 9)


def test_data_movement_only_policy_keeps_the_tensors_compute_operators_read():
    b = NetworkBuilder("policy", dtype_bytes=1)
    x = b.input("x", (4, 6))
    t = b.transpose(x, (1, 0), name="t")
    r = b.reshape(t, (3, 8), name="r")
    s = b.slice(r, (0, 0), (3, 8), (1, 2), name="s")  # (3, 4)
    y = b.activation(s, "relu", name="relu")
    z = b.activation(t, "tanh", name="tanh")
    wl = b.build([y, z])
    res = eliminate(wl, consumers="data-movement")
    # r disappears (only s reads it); t stays (tanh reads it), s stays (relu reads it)
    assert res.pairs_total == 3 and res.eliminated == ("r.out",)
    kept = {k.tensor: k.reason for k in res.kept}
    assert set(kept) == {"t.out", "s.out"} and "may not be rewritten" in kept["t.out"]
    s_op = next(r_ for r_ in res.graph.operators if r_.name == "s")
    assert sources(s_op.inputs[0]) == {"x"}
    values = random_values(wl, 5)
    ref = execute(wl, values)
    got = run_rewritten(res, values)
    assert all(np.array_equal(got[k], ref[k]) for k in got)
    with pytest.raises(ValueError, match="consumers"):
        eliminate(wl, consumers="compute")


def test_elimination_is_idempotent_and_runs_from_the_rewritten_graph():
    wl = _chain(CHAINS[0])
    res = eliminate(wl)
    again = eliminate(res.graph)
    assert again.pairs_total == 0 and again.pairs_eliminated == 0 and again.rewrites == 0
    assert again.graph == res.graph and again.rounds == 1
    assert res.rounds == 2  # one round in schedule order reaches the fixed point, the second confirms it


# ============================================================================ copy accounting
def test_copy_traffic_by_hand():
    b = NetworkBuilder("copies", dtype_bytes=2)
    x = b.input("x", (2, 3))  # 12 bytes
    t = b.transpose(x, (1, 0), name="t")
    y = b.activation(t, "relu", name="relu")
    wl = b.build([y])
    res = eliminate(wl)
    # everything fits: x staged once (12 off), transpose loads x and stores t on chip (12 + 12), relu loads t on chip
    # (12) and stores the graph output to main memory (12 off)
    assert copy_traffic(wl, 1000) == copy_traffic(res.original, 1000)
    before, after = copy_traffic(res.original, 1000), copy_traffic(res.graph, 1000)
    assert (before.on_chip, before.off_chip) == (36, 24)
    assert (after.on_chip, after.off_chip) == (12, 24)  # relu loads x on chip through the view
    # nothing fits: the transpose goes through main memory (loads x, stores t off chip), relu loads t off chip
    before, after = copy_traffic(res.original, 11), copy_traffic(res.graph, 11)
    assert (before.on_chip, before.off_chip) == (0, 48)
    assert (after.on_chip, after.off_chip) == (0, 24)
    c = res.copies(1000)
    assert c["on_chip"]["saved"] == 24 and c["off_chip"]["saved"] == 0
    assert c["on_chip"]["saved_fraction"] == pytest.approx(24 / 36)
    assert c["total"]["before"] == 60 and c["total"]["after"] == 36
    with pytest.raises(ValueError, match="non-negative"):
        copy_traffic(wl, -1)


def test_copy_traffic_of_a_kept_data_movement_operator_counts_its_stored_elements_only():
    b = NetworkBuilder("kept", dtype_bytes=1)
    x = b.input("x", (4, 5))
    s = b.slice(x, (1, 0), (3, 5), name="s")  # 10 elements, graph output
    wl = b.build([s])
    tr = copy_traffic(wl, 1000)
    assert (tr.on_chip, tr.off_chip) == (10, 20 + 10)  # stage x (20 off), load 10 on chip, store 10 off


# ============================================================================ parallel-wavenet
SMALL = {"samples": 480, "hop": 40, "residual_channels": 8, "cond_channels": 6, "speaker_channels": 3,
         "flow_layers": "3-2-4", "batch": 2}


def _expected_pairs(flow_layers: list[int]) -> int:
    # derived from the network's structure (dlaopt/zoo/wavenet.py): every layer splits its gate into two halves
    # (2 stored tensors); every flow chomps its shifted input conv (1) and splits its output into log-scale and
    # shift (2); the conditioning is transpose, reshape, repeat, reshape, tile, concat (6); the noise is reshaped
    # to NCHW (1) and the audio reshaped back (1)
    return 2 * sum(flow_layers) + 3 * len(flow_layers) + 6 + 1 + 1


def test_parallel_wavenet_is_rewritten_bit_exactly_with_the_expected_counts():
    wl = ZOO.create("parallel-wavenet", SMALL)
    _check_bit_exact(wl, seed=7)
    res = eliminate(wl)
    assert res.pairs_total == _expected_pairs([3, 2, 4]) == 35
    # only the final reshape to (batch, samples) stays: it stores the graph output
    assert res.pairs_eliminated == res.pairs_total - 1
    assert [(k.operator, k.tensor) for k in res.kept] == [("audio.r", "audio.r.out")]
    b, t, c = SMALL["batch"], SMALL["samples"], SMALL["residual_channels"]
    assert res.intermediate_bytes_total - res.intermediate_bytes_eliminated == b * t * 2
    # the conditioning convs read the features (repeated) and the speaker (tiled) straight through a piecewise view
    cond = next(r for r in res.graph.operators if r.name == "flow0.layer0.cond")
    assert view_class(cond.inputs[0]) == "piecewise" and sources(cond.inputs[0]) == {"features", "speaker"}
    # the gate halves: tanh reads the first C channels of the add, sigmoid the next C
    tanh = next(r for r in res.graph.operators if r.name == "flow1.layer1.tanh")
    assert tanh.inputs[0].shape == (b, c, 1, t) and sources(tanh.inputs[0]) == {"flow1.layer1.gate_in.out"}
    again = eliminate(res.graph)
    assert again.pairs_eliminated == 0 and again.graph == res.graph
    # fewer load/store bytes in total, whatever the capacity
    for cap in (0, 2000, 10**9):
        copies = res.copies(cap)
        assert copies["total"]["saved"] > 0


def test_parallel_wavenet_defaults_and_parameters():
    entry = ZOO.entry("parallel-wavenet")
    assert entry.defaults["batch"] == 1 and entry.defaults["dtype_bytes"] == 2
    assert entry.defaults["flow_layers"] == "10-10-10-30" and entry.defaults["residual_channels"] == 64
    wl = ZOO.create("parallel-wavenet")
    res = eliminate(wl)
    assert res.pairs_total == _expected_pairs([10, 10, 10, 30]) == 140
    assert res.pairs_eliminated == 139
    t, c = 24000, 64
    # 120 gate halves of 64 channels × 24000 samples at fp16: 3.07 MB each
    assert wl.tensors["flow3.layer29.split.out0"].size_bytes == c * t * 2
    assert res.intermediate_bytes_total - res.intermediate_bytes_eliminated == t * 2
    assert res.seconds < 5
    kinds = {op.kind for op in wl.operators if op.kind.is_data_movement}
    assert kinds == {OpKind.TRANSPOSE, OpKind.RESHAPE, OpKind.REPEAT, OpKind.TILE, OpKind.CONCAT, OpKind.SLICE,
                     OpKind.SPLIT}
    # MACs: per layer the dilated conv (k = 3), the conditioning and residual 1x1 convs; per flow the shifted input
    # conv (T + 1 outputs) and the two output convs
    per_layer = t * 2 * c * c * 3 + t * 2 * c * (64 + 16) + t * c * c
    per_flow = (t + 1) * c * 3 + t * c * c + t * 2 * c
    assert wl.total_macs == 60 * per_layer + 4 * per_flow
    assert ZOO.create("parallel-wavenet", {"batch": 3, "samples": 240}).total_macs == 3 * ZOO.create(
        "parallel-wavenet", {"samples": 240}).total_macs


@pytest.mark.parametrize(
    "params",
    [{"samples": 250}, {"flow_layers": "10-x"}, {"flow_layers": "10-0"}, {"hop": 0}, {"samples": "24000"}],
)
def test_parallel_wavenet_bad_parameters(params):
    with pytest.raises(InputError):
        ZOO.create("parallel-wavenet", params)

