"""The numpy reference executor (every operator against a direct computation written here) and the data-movement
kinds ``tile`` and ``repeat`` (shape inference, builder, instance documents, pinning tiler)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from dlaopt.errors import InputError
from dlaopt.formulations.pinning.data import untiled_graph
from dlaopt.formulations.pinning.tiling import tiled_graph
from dlaopt.formulations.pinning.tiling_check import verify_tiling
from dlaopt.hardware import DMA, Accelerator, Memory, MemoryKind, PEArray
from dlaopt.harness import solve
from dlaopt.io import SHIPPED_SCHEMA_PATH, instance_from_dict, instance_schema
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload import NetworkBuilder, Operator, OpKind, TensorRole, Workload
from dlaopt.workload.execute import ACTIVATION_FORMULAS, activation, execute, random_values, run_operator
from dlaopt.workload.operator import (
    DATA_MOVEMENT_KINDS,
    OperatorSpecError,
    infer_output_shapes,
    normalize_attrs,
)
from dlaopt.zoo import ZOO

RNG_SEED = 1234


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def run1(kind: OpKind, inputs: Sequence[np.ndarray], attrs: dict[str, Any] | None = None,
         n_outputs: int = 1) -> list[np.ndarray]:
    """Run one (not yet normalised) operator on arrays."""
    outs = tuple(f"y{j}" for j in range(n_outputs))
    op = Operator("op", kind, tuple(f"x{i}" for i in range(len(inputs))), outs, attrs or {})
    return run_operator(op, inputs)


# ============================================================================================== direct references
def naive_conv(x: np.ndarray, w: np.ndarray, stride: tuple[int, int], dilation: tuple[int, int],
               padding: tuple[int, int, int, int], groups: int) -> np.ndarray:
    """One output element at a time, taps outside the input skipped (zero padding)."""
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = stride, dilation, padding
    p = (h + pt + pb - dh * (r - 1) - 1) // sh + 1
    q = (wd + pl + pr - dw * (s - 1) - 1) // sw + 1
    kpg = k // groups
    out = np.zeros((n, k, p, q))
    for b, kk, i, j in itertools.product(range(n), range(k), range(p), range(q)):
        g = kk // kpg
        acc = 0.0
        for cc, rr, ss in itertools.product(range(cg), range(r), range(s)):
            hi, wi = i * sh - pt + rr * dh, j * sw - pl + ss * dw
            if 0 <= hi < h and 0 <= wi < wd:
                acc += x[b, g * cg + cc, hi, wi] * w[kk, cc, rr, ss]
        out[b, kk, i, j] = acc
    return out


def naive_pool(x: np.ndarray, mode: str, kernel: tuple[int, int], stride: tuple[int, int],
               padding: tuple[int, int, int, int]) -> np.ndarray:
    """Explicit windows; the average divides by the full window size (padding counts)."""
    n, c, h, w = x.shape
    (r, s), (sh, sw), (pt, pl, pb, pr) = kernel, stride, padding
    p, q = (h + pt + pb - r) // sh + 1, (w + pl + pr - s) // sw + 1
    out = np.zeros((n, c, p, q))
    for b, ch, i, j in itertools.product(range(n), range(c), range(p), range(q)):
        vals = [x[b, ch, i * sh - pt + di, j * sw - pl + dj] for di in range(r) for dj in range(s)
                if 0 <= i * sh - pt + di < h and 0 <= j * sw - pl + dj < w]
        out[b, ch, i, j] = max(vals) if mode == "max" else sum(vals) / (r * s)
    return out


def scalar_activation(name: str, v: float) -> float:
    """The activation formulas, one Python float at a time (math module)."""
    sig = 1.0 / (1.0 + math.exp(-v))
    return {
        "relu": max(v, 0.0),
        "relu6": min(max(v, 0.0), 6.0),
        "gelu": 0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3))),
        "sigmoid": sig,
        "tanh": math.tanh(v),
        "elu": v if v > 0 else math.exp(v) - 1.0,
        "selu": 1.0507009873554805 * (v if v > 0 else 1.6732632423543772 * (math.exp(v) - 1.0)),
        "swish": v * sig,
        "hswish": v * min(max(v + 3.0, 0.0), 6.0) / 6.0,
    }[name]


def by_index(shape: Sequence[int], f: Callable[[tuple[int, ...]], float]) -> np.ndarray:
    """An array filled element by element from its index."""
    out = np.empty(shape)
    for idx in itertools.product(*(range(d) for d in shape)):
        out[idx] = f(idx)
    return out


# ============================================================================================== convolution
CONV_CASES = {
    "plain": dict(x=(1, 3, 6, 6), k=4, rs=(3, 3), stride=1, dilation=1, padding=0, groups=1),
    "strided": dict(x=(2, 3, 7, 8), k=5, rs=(3, 2), stride=(2, 3), dilation=1, padding=0, groups=1),
    "dilated": dict(x=(1, 2, 9, 9), k=3, rs=(3, 3), stride=1, dilation=(2, 3), padding=0, groups=1),
    "padded-asymmetric": dict(x=(1, 2, 5, 6), k=3, rs=(3, 3), stride=1, dilation=1, padding=[1, 0, 2, 1],
                              groups=1),
    "padded-pair": dict(x=(1, 2, 5, 5), k=2, rs=(3, 3), stride=2, dilation=1, padding=[1, 2], groups=1),
    "grouped": dict(x=(1, 6, 6, 5), k=4, rs=(3, 3), stride=1, dilation=1, padding=1, groups=2),
    "grouped-everything": dict(x=(2, 6, 9, 8), k=9, rs=(3, 2), stride=(2, 1), dilation=(1, 2),
                               padding=[2, 1, 0, 1], groups=3),
    "depthwise": dict(x=(1, 4, 6, 6), k=4, rs=(3, 3), stride=1, dilation=1, padding=1, groups=4),
    "depthwise-multiplier": dict(x=(2, 3, 7, 7), k=6, rs=(3, 3), stride=2, dilation=1, padding=1, groups=3),
    "pointwise": dict(x=(1, 5, 4, 3), k=7, rs=(1, 1), stride=1, dilation=1, padding=0, groups=1),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv2d_against_naive_loops(case: str) -> None:
    c = CONV_CASES[case]
    x = rand(*c["x"], seed=1)
    groups = c["groups"]
    w = rand(c["k"], c["x"][1] // groups, *c["rs"], seed=2)
    attrs = {"stride": c["stride"], "dilation": c["dilation"], "padding": c["padding"], "groups": groups}
    norm = normalize_attrs(OpKind.CONV2D, attrs)
    want = naive_conv(x, w, norm["stride"], norm["dilation"], norm["padding"], groups)
    kind = OpKind.DEPTHWISE_CONV2D if groups == c["x"][1] and groups > 1 else OpKind.CONV2D
    (got,) = run1(kind, [x, w], attrs)
    assert got.shape == infer_output_shapes(kind, norm, [x.shape, w.shape])[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    (fused,) = run1(kind, [x, w], {**attrs, "activation": "relu6"})
    np.testing.assert_allclose(fused, np.clip(want, 0.0, 6.0), rtol=1e-12, atol=1e-12)


def test_conv2d_through_the_builder_matches_naive_loops() -> None:
    b = NetworkBuilder("convs")
    x = b.input("x", (1, 4, 9, 9))
    y = b.conv2d(x, 8, 3, stride=2, padding=[1, 0, 1, 2], dilation=(1, 2), groups=2, activation="tanh")
    z = b.depthwise_conv2d(y, 3, padding=1, multiplier=2)
    wl = b.build([z])
    vals = random_values(wl, 0)
    got = execute(wl, vals)
    y_ref = np.tanh(naive_conv(vals["x"], vals["conv.w"], (2, 2), (1, 2), (1, 0, 1, 2), 2))
    z_ref = naive_conv(y_ref, vals["dwconv.w"], (1, 1), (1, 1), (1, 1, 1, 1), 8)
    np.testing.assert_allclose(got[y], y_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[z], z_ref, rtol=1e-12, atol=1e-12)


# ============================================================================================== matmul
MATMUL_CASES = [
    ((4, 5), (5, 3)),
    ((2, 4, 5), (5, 3)),  # batched activation times a 2-D weight
    ((2, 4, 5), (2, 5, 3)),
    ((3, 1, 4, 5), (2, 5, 6)),  # batch dims broadcast both ways
    ((1, 4, 5), (3, 5, 2)),
    ((4, 5), (2, 3, 5, 2)),
]


@pytest.mark.parametrize(("sa", "sb"), MATMUL_CASES)
def test_matmul_against_einsum(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = rand(*sa, seed=3), rand(*sb, seed=4)
    (got,) = run1(OpKind.MATMUL, [a, b])
    batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    ab = np.broadcast_to(a, batch + sa[-2:]).reshape(-1, *sa[-2:])
    bb = np.broadcast_to(b, batch + sb[-2:]).reshape(-1, *sb[-2:])
    want = np.einsum("bmk,bkn->bmn", ab, bb).reshape(batch + (sa[-2], sb[-1]))
    assert got.shape == infer_output_shapes(OpKind.MATMUL, {}, [sa, sb])[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    (fused,) = run1(OpKind.MATMUL, [a, b], {"activation": "sigmoid"})
    np.testing.assert_allclose(fused, 1.0 / (1.0 + np.exp(-want)), rtol=1e-12)


# ============================================================================================== pooling
POOL_CASES = [
    ("max", (2, 2), None, 0),
    ("avg", (2, 2), None, 0),
    ("max", (3, 3), (2, 2), 1),
    ("avg", (3, 3), (2, 2), 1),
    ("avg", (3, 2), (1, 2), [1, 0, 2, 1]),
    ("max", (3, 2), (2, 1), [0, 1, 1, 0]),
    ("avg", (2, 3), (2, 2), [1, 1]),
]


@pytest.mark.parametrize(("mode", "kernel", "stride", "padding"), POOL_CASES)
def test_pool_against_explicit_windows(mode: str, kernel: tuple[int, int], stride: tuple[int, int] | None,
                                       padding: Any) -> None:
    x = rand(2, 3, 7, 6, seed=5)
    attrs: dict[str, Any] = {"mode": mode, "kernel": kernel, "padding": padding}
    if stride is not None:
        attrs["stride"] = stride
    norm = normalize_attrs(OpKind.POOL, attrs)
    (got,) = run1(OpKind.POOL, [x], attrs)
    want = naive_pool(x, mode, norm["kernel"], norm["stride"], norm["padding"])
    assert got.shape == infer_output_shapes(OpKind.POOL, norm, [x.shape])[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_avg_pool_counts_padded_zeros() -> None:
    x = np.ones((1, 1, 2, 2))
    (got,) = run1(OpKind.POOL, [x], {"mode": "avg", "kernel": 2, "stride": 1, "padding": 1})
    # the corner window holds one real 1 and three padded zeros
    np.testing.assert_allclose(got[0, 0], [[0.25, 0.5, 0.25], [0.5, 1.0, 0.5], [0.25, 0.5, 0.25]])
    (mx,) = run1(OpKind.POOL, [-x], {"mode": "max", "kernel": 2, "stride": 1, "padding": 1})
    np.testing.assert_array_equal(mx, -np.ones((1, 1, 3, 3)))  # padding never wins a max


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_global_pool(mode: str) -> None:
    x = rand(2, 3, 5, 4, seed=6)
    (got,) = run1(OpKind.POOL, [x], {"mode": mode, "global": True})
    want = by_index((2, 3, 1, 1), lambda i: (max if mode == "max" else lambda v: sum(v) / len(v))(
        [x[i[0], i[1], r, s] for r in range(5) for s in range(4)]))
    np.testing.assert_allclose(got, want, rtol=1e-12)


# ============================================================================================== element-wise
ELEMENTWISE_FUNCS: dict[str, Callable[[float, float], float]] = {
    "add": lambda u, v: u + v, "sub": lambda u, v: u - v, "mul": lambda u, v: u * v, "div": lambda u, v: u / v,
    "max": max, "min": min,
}


@pytest.mark.parametrize("function", list(ELEMENTWISE_FUNCS))
def test_elementwise_broadcasting(function: str) -> None:
    shapes = [(2, 3, 4), (3, 1), (1, 1, 4)]
    xs = [rand(*s, seed=7 + i) + (3.0 if function == "div" else 0.0) for i, s in enumerate(shapes)]
    (got,) = run1(OpKind.ELEMENTWISE, xs, {"function": function})
    f = ELEMENTWISE_FUNCS[function]

    def at(i: tuple[int, ...]) -> float:
        vals = []
        for x in xs:
            off = len(i) - x.ndim
            vals.append(x[tuple(0 if d == 1 else i[off + a] for a, d in enumerate(x.shape))])
        return f(f(vals[0], vals[1]), vals[2])  # folded left

    want = by_index((2, 3, 4), at)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    (fused,) = run1(OpKind.ELEMENTWISE, xs[:2], {"function": function, "activation": "relu"})
    want2 = by_index((2, 3, 4), lambda i: max(0.0, f(xs[0][i], xs[1][i[1], 0])))
    np.testing.assert_allclose(fused, want2, rtol=1e-12)


# ============================================================================================== activations
@pytest.mark.parametrize("function", sorted(ACTIVATION_FORMULAS))
def test_activation_formulas(function: str) -> None:
    x = np.concatenate([rand(3, 7, seed=8).ravel() * 4.0, [0.0, -0.0, 1e-3, -1e-3, 7.5, -7.5, 30.0, -30.0]])
    (got,) = run1(OpKind.ACTIVATION, [x], {"function": function})
    want = np.array([scalar_activation(function, float(v)) for v in x])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(activation(function, x), got)


def test_sigmoid_does_not_overflow() -> None:
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = activation("sigmoid", np.array([-1000.0, 0.0, 1000.0]))
    np.testing.assert_array_equal(got, [0.0, 0.5, 1.0])


def test_unknown_activation_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown activation"):
        activation("softplus", np.zeros(2))


# ============================================================================================== softmax and norms
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(axis: int) -> None:
    x = rand(3, 4, 5, seed=9) * 5.0 + 100.0  # large values: the max is subtracted
    (got,) = run1(OpKind.SOFTMAX, [x], {"axis": axis})
    ax = axis % 3

    def at(i: tuple[int, ...]) -> float:
        line = [x[i[:ax] + (j,) + i[ax + 1:]] for j in range(x.shape[ax])]
        m = max(line)
        return math.exp(x[i] - m) / sum(math.exp(v - m) for v in line)

    np.testing.assert_allclose(got, by_index(x.shape, at), rtol=1e-12)
    np.testing.assert_allclose(got.sum(axis=ax), 1.0)


@pytest.mark.parametrize(("axis", "affine"), [(-1, 2), (1, 2), (1, 1), (0, 0)])
def test_layernorm(axis: int, affine: int) -> None:
    x = rand(3, 4, 5, seed=10) * 3.0 + 1.0
    ax = axis % 3
    d = x.shape[ax]
    extras = [rand(d, seed=11), rand(1, d, seed=12)][:affine]  # any shape with d elements
    (got,) = run1(OpKind.NORM, [x, *extras], {"norm": "layernorm", "axis": axis})
    gamma = extras[0].ravel() if affine >= 1 else np.ones(d)
    beta = extras[1].ravel() if affine >= 2 else np.zeros(d)

    def at(i: tuple[int, ...]) -> float:
        line = [x[i[:ax] + (j,) + i[ax + 1:]] for j in range(d)]
        mean = sum(line) / d
        var = sum((v - mean) ** 2 for v in line) / d
        return (x[i] - mean) / math.sqrt(var + 1e-5) * gamma[i[ax]] + beta[i[ax]]

    np.testing.assert_allclose(got, by_index(x.shape, at), rtol=1e-10, atol=1e-12)


def test_batchnorm_is_a_per_channel_affine_map() -> None:
    x = rand(2, 3, 4, 4, seed=13)
    scale, shift = rand(3, seed=14), rand(3, seed=15)
    (got,) = run1(OpKind.NORM, [x, scale, shift], {"norm": "batchnorm"})
    want = by_index(x.shape, lambda i: x[i] * scale[i[1]] + shift[i[1]])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    (plain,) = run1(OpKind.NORM, [x], {"norm": "batchnorm"})
    np.testing.assert_array_equal(plain, x)
    assert plain is not x


# ============================================================================================== data movement
def test_concat_against_index_arithmetic() -> None:
    xs = [rand(2, s, 3, seed=16 + s) for s in (1, 4, 2)]
    (got,) = run1(OpKind.CONCAT, xs, {"axis": 1})
    offsets = [0, 1, 5]

    def at(i: tuple[int, ...]) -> float:
        j = max(k for k in range(3) if offsets[k] <= i[1])
        return xs[j][i[0], i[1] - offsets[j], i[2]]

    np.testing.assert_array_equal(got, by_index((2, 7, 3), at))


def test_reshape_keeps_the_c_order_flat_index() -> None:
    x = rand(2, 3, 4, seed=20)
    (got,) = run1(OpKind.RESHAPE, [x], {"shape": [4, 6]})

    def at(i: tuple[int, ...]) -> float:
        flat = i[0] * 6 + i[1]
        return x[flat // 12, (flat // 4) % 3, flat % 4]

    np.testing.assert_array_equal(got, by_index((4, 6), at))
    assert not np.shares_memory(got, x)


def test_transpose_against_index_arithmetic() -> None:
    x = rand(2, 3, 4, 5, seed=21)
    perm = (2, 0, 3, 1)
    (got,) = run1(OpKind.TRANSPOSE, [x], {"perm": perm})

    def at(i: tuple[int, ...]) -> float:
        src = [0] * 4
        for out_axis, in_axis in enumerate(perm):
            src[in_axis] = i[out_axis]
        return x[tuple(src)]

    np.testing.assert_array_equal(got, by_index((4, 2, 5, 3), at))
    assert got.flags.c_contiguous and not np.shares_memory(got, x)


def test_slice_against_index_arithmetic() -> None:
    x = rand(3, 8, 9, seed=22)
    starts, ends, steps = (1, 0, 2), (3, 8, 9), (1, 3, 2)
    (got,) = run1(OpKind.SLICE, [x], {"starts": starts, "ends": ends, "steps": steps})
    shape = tuple(len(range(s, e, t)) for s, e, t in zip(starts, ends, steps, strict=True))
    assert got.shape == shape == (2, 3, 4)
    want = by_index(shape, lambda i: x[tuple(s + k * t for k, s, t in zip(i, starts, steps, strict=True))])
    np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(got, x)


def test_split_against_index_arithmetic() -> None:
    x = rand(2, 3, 7, seed=23)
    parts = run1(OpKind.SPLIT, [x], {"axis": -1, "sizes": [2, 4, 1]}, n_outputs=3)
    assert [p.shape for p in parts] == [(2, 3, 2), (2, 3, 4), (2, 3, 1)]
    for j, (off, p) in enumerate(zip([0, 2, 6], parts, strict=True)):
        np.testing.assert_array_equal(p, by_index(p.shape, lambda i, o=off: x[i[0], i[1], i[2] + o]), err_msg=str(j))


TILE_CASES = [((2, 3), (1, 1)), ((2, 3), (3, 2)), ((1, 2, 3), (2, 1, 3)), ((4,), (5,)), ((2, 1, 3, 2), (1, 4, 1, 2))]


@pytest.mark.parametrize(("shape", "reps"), TILE_CASES)
def test_tile(shape: tuple[int, ...], reps: tuple[int, ...]) -> None:
    x = rand(*shape, seed=24)
    (got,) = run1(OpKind.TILE, [x], {"reps": list(reps)})
    out_shape = infer_output_shapes(OpKind.TILE, normalize_attrs(OpKind.TILE, {"reps": reps}), [shape])[0]
    assert got.shape == out_shape == tuple(d * r for d, r in zip(shape, reps, strict=True))
    np.testing.assert_array_equal(got, np.tile(x, reps))
    np.testing.assert_array_equal(got, by_index(out_shape, lambda i: x[tuple(k % d for k, d in zip(i, shape,
                                                                                                    strict=True))]))


REPEAT_CASES = [((2, 3), 1, 0), ((2, 3), 3, 1), ((2, 3, 4), 2, -1), ((2, 3, 4), 4, 0), ((3,), 2, 0)]


@pytest.mark.parametrize(("shape", "repeats", "axis"), REPEAT_CASES)
def test_repeat(shape: tuple[int, ...], repeats: int, axis: int) -> None:
    x = rand(*shape, seed=25)
    attrs = {"repeats": repeats, "axis": axis}
    (got,) = run1(OpKind.REPEAT, [x], attrs)
    out_shape = infer_output_shapes(OpKind.REPEAT, normalize_attrs(OpKind.REPEAT, attrs), [shape])[0]
    ax = axis % len(shape)
    assert got.shape == out_shape == tuple(d * repeats if a == ax else d for a, d in enumerate(shape))
    np.testing.assert_array_equal(got, np.repeat(x, repeats, axis=axis))
    want = by_index(out_shape, lambda i: x[tuple(k // repeats if a == ax else k for a, k in enumerate(i))])
    np.testing.assert_array_equal(got, want)


def test_tile_and_repeat_are_data_movement() -> None:
    assert OpKind.TILE.is_data_movement and OpKind.REPEAT.is_data_movement
    assert {OpKind.TILE, OpKind.REPEAT, OpKind.CONCAT, OpKind.RESHAPE, OpKind.TRANSPOSE, OpKind.SLICE,
            OpKind.SPLIT} == DATA_MOVEMENT_KINDS


BAD_ATTRS = [
    (OpKind.TILE, {}, (2, 3), "reps"),
    (OpKind.TILE, {"reps": 2}, (2, 3), "reps"),
    (OpKind.TILE, {"reps": [2]}, (2, 3), "reps"),  # one count per axis
    (OpKind.TILE, {"reps": [2, 0]}, (2, 3), "reps"),
    (OpKind.TILE, {"reps": [2, True]}, (2, 3), "reps"),
    (OpKind.TILE, {"reps": [1, 1], "axis": 0}, (2, 3), "axis"),
    (OpKind.REPEAT, {"axis": 0}, (2, 3), "repeats"),
    (OpKind.REPEAT, {"repeats": 2}, (2, 3), "axis"),
    (OpKind.REPEAT, {"repeats": 0, "axis": 0}, (2, 3), "repeats"),
    (OpKind.REPEAT, {"repeats": 2.5, "axis": 0}, (2, 3), "repeats"),
    (OpKind.REPEAT, {"repeats": 2, "axis": 2}, (2, 3), "axis"),
    (OpKind.REPEAT, {"repeats": [2, 3], "axis": 1}, (2, 3), "repeats"),
]


@pytest.mark.parametrize(("kind", "attrs", "shape", "key"), BAD_ATTRS)
def test_bad_tile_and_repeat_attributes(kind: OpKind, attrs: dict[str, Any], shape: tuple[int, ...],
                                        key: str) -> None:
    with pytest.raises(OperatorSpecError) as info:
        infer_output_shapes(kind, normalize_attrs(kind, attrs), [shape])
    assert info.value.key == key


def test_tile_and_repeat_loop_dims_and_vector_ops() -> None:
    b = NetworkBuilder("tr")
    x = b.input("x", (1, 2, 3, 4))
    t = b.tile(x, (1, 2, 1, 3))
    r = b.repeat(t, 2, axis=2)
    wl = b.build([r])
    tile_op, rep_op = wl.operators
    assert (tile_op.kind, rep_op.kind) == (OpKind.TILE, OpKind.REPEAT)
    assert wl.tensors[t].shape == (1, 4, 3, 12) and wl.tensors[r].shape == (1, 4, 6, 12)
    assert tile_op.dims == {"E": 144} and rep_op.dims == {"E": 288}
    assert (tile_op.vector_ops, rep_op.vector_ops, tile_op.macs) == (144, 288, 0)
    assert tile_op.attrs == {"reps": (1, 2, 1, 3)} and rep_op.attrs == {"repeats": 2, "axis": 2}


# ============================================================================================== builder and documents
def _movement_network() -> Workload:
    """A Parallel-WaveNet-style chain of memory-bound operators (with several consumers) around a conv."""
    b = NetworkBuilder("movement", dtype_bytes=1)
    x = b.input("x", (1, 4, 6, 6))
    t = b.tile(x, (1, 1, 2, 1), name="tile")
    r = b.repeat(t, 2, axis=3, name="rep")
    tr = b.transpose(r, (0, 1, 3, 2), name="tr")
    s = b.slice(tr, (0, 0, 1, 0), (1, 4, 12, 12), (1, 1, 2, 3), name="sl")
    a, c = b.split(s, (1, 3), axis=1, name="sp")
    cat = b.concat([c, a], axis=1, name="cat")
    y = b.conv2d(cat, 4, 3, padding=1, name="conv", activation="relu")
    z = b.add(y, cat, name="add")
    flat = b.reshape(z, (1, 4, 24), name="flat")
    out = b.repeat(b.tile(flat, (2, 1, 1), name="tile2"), 3, axis=0, name="rep2")
    return b.build([out])


def test_builder_movement_chain_against_numpy() -> None:
    wl = _movement_network()
    vals = random_values(wl, RNG_SEED)
    got = execute(wl, vals)
    x = vals["x"]
    s = np.repeat(np.tile(x, (1, 1, 2, 1)), 2, axis=3).transpose(0, 1, 3, 2)[:, :, 1:12:2, ::3]
    cat = np.concatenate([s[:, 1:], s[:, :1]], axis=1)
    y = np.maximum(naive_conv(cat, vals["conv.w"], (1, 1), (1, 1), (1, 1, 1, 1), 1), 0.0)
    z = (y + cat).reshape(1, 4, 24)
    want = np.repeat(np.tile(z, (2, 1, 1)), 3, axis=0)
    out = next(n for n, t in wl.tensors.items() if t.role == TensorRole.OUTPUT)
    assert got[out].shape == (6, 4, 24)
    np.testing.assert_allclose(got[out], want, rtol=1e-12, atol=1e-12)


INLINE_DOC: dict[str, Any] = {
    "problem": "pinning",
    "workload": {
        "name": "tile-repeat",
        "dtype_bytes": 1,
        "tensors": [
            {"name": "x", "shape": [1, 2, 3, 4], "role": "input"},
            {"name": "t", "shape": [2, 2, 6, 4], "role": "activation"},
            {"name": "r", "shape": [2, 2, 6, 12], "role": "activation"},
            {"name": "y", "shape": [2, 2, 6, 12], "role": "output"},
        ],
        "operators": [
            {"name": "tile", "kind": "tile", "inputs": ["x"], "outputs": ["t"], "attrs": {"reps": [2, 1, 2, 1]}},
            {"name": "rep", "kind": "repeat", "inputs": ["t"], "outputs": ["r"],
             "attrs": {"repeats": 3, "axis": -1}},
            {"name": "act", "kind": "activation", "inputs": ["r"], "outputs": ["y"], "attrs": {"function": "relu"}},
        ],
    },
    "hardware": {
        "pe_array": {"axes": [["pe", 4]]},
        "dma": {"bandwidth_bytes_per_cycle": 8},
        "memories": [
            {"name": "dram", "kind": "dram"},
            {"name": "spad", "kind": "scratchpad", "capacity_kb": 2},
        ],
    },
}


def _doc(**op_changes: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(INLINE_DOC))
    for i, attrs in op_changes.items():
        doc["workload"]["operators"][int(i[1:])]["attrs"] = attrs
    return doc


def test_inline_instance_with_tile_and_repeat() -> None:
    inst = instance_from_dict(_doc())
    wl = inst.workload
    assert isinstance(wl, Workload)
    assert [op.kind for op in wl.operators] == [OpKind.TILE, OpKind.REPEAT, OpKind.ACTIVATION]
    got = execute(wl, random_values(wl, 3))
    np.testing.assert_array_equal(got["y"], np.maximum(np.repeat(np.tile(got["x"], (2, 1, 2, 1)), 3, axis=-1), 0))
    res = solve(inst, "exact", options=SolveOptions(seed=0, threads=1, deterministic=True))
    assert res.status == Status.OPTIMAL, res.message


@pytest.mark.parametrize(("changes", "key", "text"), [
    ({"o0": {"reps": [2, 1, 2]}}, "workload.operators[0].attrs.reps", "one positive count per axis"),
    ({"o0": {"reps": [2, 1, 1, 1]}}, "workload.operators[0].outputs[0]", "produces shape [2, 2, 3, 4]"),
    ({"o1": {"repeats": 3}}, "workload.operators[1].attrs.axis", "repeat needs 'axis'"),
    ({"o1": {"repeats": -1, "axis": 3}}, "workload.operators[1].attrs.repeats", "must be positive"),
])
def test_inline_instance_errors_are_located(changes: dict[str, Any], key: str, text: str) -> None:
    with pytest.raises(InputError) as info:
        instance_from_dict(_doc(**changes))
    msg = info.value.render()
    assert f"key '{key}'" in msg and text in msg


def test_schema_lists_the_new_kinds() -> None:
    kinds = instance_schema()["$defs"]["operator"]["properties"]["kind"]["enum"]
    assert "tile" in kinds and "repeat" in kinds
    shipped = json.loads(SHIPPED_SCHEMA_PATH.read_text())
    assert shipped["$defs"]["operator"]["properties"]["kind"]["enum"] == kinds
    doc = _doc()
    doc["workload"]["operators"][0]["kind"] = "tiles"
    with pytest.raises(InputError) as info:
        instance_from_dict(doc)
    assert "unknown operator kind 'tiles'" in info.value.render() and "tile, repeat" in info.value.render()


# ============================================================================================== pinning tiler
def _tiny_accelerator(capacities: Sequence[int]) -> Accelerator:
    spms = [Memory(f"s{i}", MemoryKind.SCRATCHPAD, c) for i, c in enumerate(capacities)]
    return Accelerator("tiny", PEArray((("pe", 4),), vector_lanes=2), (Memory("dram", MemoryKind.DRAM, None), *spms),
                       DMA(8.0))


def _tile_repeat_network() -> Workload:
    b = NetworkBuilder("tr-tiles", dtype_bytes=1)
    x = b.input("x", (1, 3, 5, 7))
    t = b.tile(x, (2, 1, 3, 2))  # (2, 3, 15, 14): wrap-around reads
    r = b.repeat(t, 3, axis=3)  # (2, 3, 15, 42)
    y = b.activation(r, "tanh")
    r2 = b.repeat(y, 2, axis=1)  # (2, 6, 15, 42)
    t2 = b.tile(r2, (1, 1, 1, 1))
    z = b.add(t2, b.tile(b.input("bias", (1, 6, 1, 1)), (2, 1, 15, 42)))
    return b.build([z])


def _wraparound_network() -> Workload:
    """A tile whose consumer's row blocks do not align with the tiled input's rows: some tile steps read the last
    and the first rows of the input but not those in between."""
    b = NetworkBuilder("wraparound", dtype_bytes=1)
    x = b.input("x", (1, 2, 7, 16))
    t = b.tile(x, (1, 1, 3, 1), name="tile")
    return b.build([b.conv2d(t, 4, 3, padding=1)])


@pytest.mark.parametrize(("network", "capacity", "wraps"), [(_tile_repeat_network, 600, False),
                                                              (_wraparound_network, 200, True)])
def test_pinning_tiler_splits_tile_and_repeat(network: Callable[[], Workload], capacity: int, wraps: bool) -> None:
    """Tile by tile, every step of a tiled tile/repeat reads all it needs (the values the step sees outside the
    chunks it reads are NaN) and the independent coverage check agrees."""
    wl = network()
    graph = tiled_graph(wl, _tiny_accelerator([capacity, capacity]))
    assert OpKind.TILE in {wl.op(n).kind for n in graph.tiled_ops}
    assert verify_tiling(wl, graph) == []
    vals = random_values(wl, 5)
    want = execute(wl, vals)
    gaps = 0
    for st in graph.steps:
        if st.tile and st.tile.get("reduce") is not None:
            continue  # a partial sum: not comparable with the whole result
        op = wl.op(st.op)
        views = []
        for t in op.inputs:
            arr = np.full(wl.tensors[t].shape, np.nan)
            for b in st.reads:
                buf = graph.buffers[b]
                if buf.tensor == t:
                    region = tuple(slice(lo, hi) for lo, hi in buf.region)
                    arr[region] = want[t][region]
            views.append(arr)
        if op.kind == OpKind.TILE:
            read_rows = np.flatnonzero(~np.isnan(views[0]).all(axis=(0, 1, 3)))
            gaps += int(np.any(np.diff(read_rows) > 1))
        outs = dict(zip(op.outputs, run_operator(op, views), strict=True))
        for b in st.writes:
            buf = graph.buffers[b]
            region = tuple(slice(lo, hi) for lo, hi in buf.region)
            np.testing.assert_array_equal(outs[buf.tensor][region], want[buf.tensor][region], err_msg=st.name)
    assert (gaps > 0) == wraps


def test_verify_tiling_flags_a_missing_wraparound_read() -> None:
    wl = _wraparound_network()
    graph = tiled_graph(wl, _tiny_accelerator([200, 200]))
    assert verify_tiling(wl, graph) == []
    x_ids = [i for i, buf in enumerate(graph.buffers) if buf.tensor == "x"]

    def rows(reads: Sequence[int]) -> list[int]:
        return sorted({r for b in reads if b in x_ids for r in range(*graph.buffers[b].region[2])})

    # a tile step whose x rows wrap around (the end and the start of x, not the middle): drop its first x chunk
    m = next(i for i, s in enumerate(graph.steps) if s.op == "tile" and np.any(np.diff(rows(s.reads)) > 1))
    st = graph.steps[m]
    dropped = next(b for b in st.reads if b in x_ids)
    steps = list(graph.steps)
    steps[m] = dataclasses.replace(st, reads=tuple(b for b in st.reads if b != dropped))
    problems = verify_tiling(wl, dataclasses.replace(graph, steps=tuple(steps)))
    assert problems and all(p.startswith(f"step '{st.name}' needs x") for p in problems)


def test_untiled_graph_with_tile_and_repeat() -> None:
    wl = _tile_repeat_network()
    graph = untiled_graph(wl, _tiny_accelerator([1 << 20]))
    assert verify_tiling(wl, graph) == []


# ============================================================================================== whole workloads
def test_missing_input_value_is_a_clear_error() -> None:
    wl = _movement_network()
    vals = random_values(wl, 0)
    del vals["conv.w"]
    with pytest.raises(InputError) as info:
        execute(wl, vals)
    msg = info.value.render()
    assert "no value given for 1 tensor(s)" in msg and "'conv.w' (weight, shape [4, 4, 3, 3], read by 'conv')" in msg
    assert info.value.path == ("values", "conv.w")


@pytest.mark.parametrize(("change", "text"), [
    (lambda v: v.update(x=np.zeros((1, 4, 6, 5))), "has shape [1, 4, 6, 5]"),
    (lambda v: v.update(nope=np.zeros(1)), "has no tensor 'nope'"),
    (lambda v: v.update({"conv.out": np.zeros((1, 4, 6, 12))}), "produced by operator 'conv'"),
])
def test_bad_values_are_clear_errors(change: Callable[[dict[str, np.ndarray]], None], text: str) -> None:
    wl = _movement_network()
    vals = random_values(wl, 0)
    change(vals)
    with pytest.raises(InputError, match=re.escape(text)):
        execute(wl, vals)


def test_random_values() -> None:
    wl = ZOO.create("resnet-cifar")
    a, b, c = random_values(wl, 7), random_values(wl, 7), random_values(wl, 8)
    assert set(a) == {n for n, t in wl.tensors.items() if t.role in (TensorRole.INPUT, TensorRole.WEIGHT)}
    assert all(np.array_equal(a[n], b[n]) for n in a)
    assert not all(np.array_equal(a[n], c[n]) for n in a)
    assert all(a[n].shape == wl.tensors[n].shape and a[n].dtype == np.float64 for n in a)
    f32 = random_values(wl, 7, np.float32)
    assert all(v.dtype == np.float32 for v in f32.values())
    assert all(v.dtype == np.float32 for v in execute(wl, f32).values())
    ints = random_values(wl, 7, np.int32)
    assert all(v.dtype == np.int32 and np.abs(v).max() <= 3 for v in ints.values())
    with pytest.raises(TypeError):
        random_values(wl, 0, np.uint8)


@pytest.mark.parametrize("network", ["lenet5", "resnet-cifar", "lstm", "squeezenet", "mobilenet-v2", "shufflenet-v2",
                                     "dlrm"])
def test_zoo_network_end_to_end(network: str) -> None:
    wl = ZOO.create(network)
    vals = random_values(wl, 0)
    got = execute(wl, vals)
    assert set(got) == set(wl.tensors)
    for name, t in wl.tensors.items():
        assert got[name].shape == t.shape, name
        assert np.isfinite(got[name]).all(), name
    for name in vals:
        assert got[name] is vals[name] or np.array_equal(got[name], vals[name])


def test_execute_matches_operator_by_operator_reference() -> None:
    """Every produced value of a small network equals an independent recomputation from the executor's inputs."""
    wl = ZOO.create("lenet5")
    got = execute(wl, random_values(wl, 1))
    for op in wl.operators:
        if op.kind == OpKind.CONV2D:
            a = op.attrs
            want = naive_conv(got[op.inputs[0]], got[op.inputs[1]], a["stride"], a["dilation"], a["padding"],
                              a["groups"])
            if a.get("activation"):
                want = np.array([scalar_activation(a["activation"], v) for v in want.ravel()]).reshape(want.shape)
            np.testing.assert_allclose(got[op.outputs[0]], want, rtol=1e-10, atol=1e-12)
        elif op.kind == OpKind.POOL and not op.attrs["global"]:
            a = op.attrs
            want = naive_pool(got[op.inputs[0]], a["mode"], a["kernel"], a["stride"], a["padding"])
            np.testing.assert_allclose(got[op.outputs[0]], want, rtol=1e-12)
