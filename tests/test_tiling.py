"""Graph reconstruction for tiling: tile-by-tile numpy execution against direct evaluation, the independent
coverage check, zoo-sized networks, and infeasible operators."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest

from dlaopt.errors import InfeasibleInstanceError
from dlaopt.formulations.pinning.data import PinningGraph, unplaceable_steps, untiled_graph
from dlaopt.formulations.pinning.tiling import tiled_graph
from dlaopt.formulations.pinning.tiling_check import verify_tiling
from dlaopt.hardware import DMA, PRESETS, Accelerator, Memory, MemoryKind, PEArray
from dlaopt.workload import NetworkBuilder, Operator, OpKind, TensorRole, Workload

Box = tuple[tuple[int, int], ...]


def tiny_accelerator(capacities: Sequence[int], holds: Sequence[frozenset[TensorRole]] | None = None) -> Accelerator:
    """An accelerator whose scratchpads are a few hundred bytes, so that tiling is forced."""
    spms = [Memory(f"s{i}", MemoryKind.SCRATCHPAD, c, holds=holds[i] if holds else frozenset(TensorRole))
            for i, c in enumerate(capacities)]
    return Accelerator("tiny", PEArray((("pe", 4),), vector_lanes=2), (Memory("dram", MemoryKind.DRAM, None), *spms),
                       DMA(8.0))


# ============================================================================================ reference operators
ACT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0.0),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "gelu": lambda x: 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3))),
}
ELEM: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum, "min": np.minimum,
}


def ref_conv(x: np.ndarray, w: np.ndarray, stride: tuple[int, int], padding: tuple[int, int, int, int],
             dilation: tuple[int, int], groups: int) -> np.ndarray:
    """Grouped 2-D convolution, NCHW, weights (K, C/groups, R, S), padding (top, left, bottom, right)."""
    n, _, h, wd = x.shape
    k, cg, r, s = w.shape
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = stride, dilation, padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    p = (h + pt + pb - dh * (r - 1) - 1) // sh + 1
    q = (wd + pl + pr - dw * (s - 1) - 1) // sw + 1
    kpg = k // groups
    out = np.zeros((n, k, p, q))
    for g in range(groups):
        xg, wg = xp[:, g * cg:(g + 1) * cg], w[g * kpg:(g + 1) * kpg]
        for i in range(r):
            for j in range(s):
                patch = xg[:, :, i * dh:i * dh + sh * (p - 1) + 1:sh, j * dw:j * dw + sw * (q - 1) + 1:sw]
                out[:, g * kpg:(g + 1) * kpg] += np.einsum("ncpq,kc->nkpq", patch, wg[:, :, i, j])
    return out


def ref_pool(x: np.ndarray, attrs: Mapping[str, object], rows: tuple[int, int] | None = None) -> np.ndarray:
    """Max / average pool (average counts padding); ``rows`` restricts the window rows (a partial reduction)."""
    _, _, h, w = x.shape
    if attrs["global"]:
        (r, s), (sh, sw), (pt, pl, pb, pr) = (h, w), (1, 1), (0, 0, 0, 0)
    else:
        (r, s), (sh, sw), (pt, pl, pb, pr) = attrs["kernel"], attrs["stride"], attrs["padding"]  # type: ignore[misc]
    mx = attrs["mode"] == "max"
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=-np.inf if mx else 0.0)
    p, q = (h + pt + pb - r) // sh + 1, (w + pl + pr - s) // sw + 1
    out = np.full(x.shape[:2] + (p, q), -np.inf if mx else 0.0)
    r0, r1 = rows or (0, r)
    for i in range(r0, r1):
        for j in range(s):
            patch = xp[:, :, i:i + sh * (p - 1) + 1:sh, j:j + sw * (q - 1) + 1:sw]
            out = np.maximum(out, patch) if mx else out + patch
    return out if mx else out / (r * s)


def evaluate(op: Operator, x: Mapping[str, np.ndarray], red: tuple[int, int] | None = None) -> dict[str, np.ndarray]:
    """Direct numpy evaluation of ``op`` (restricted to the reduction range ``red``: a partial result)."""
    a = op.attrs
    ins = [x[t] for t in op.inputs]
    act = a.get("activation")
    if act is not None:
        assert red is None, "fused activations are only applied to complete sums"
    k = op.kind
    if k in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
        xin, w = ins
        g, cg = a["groups"], w.shape[1]
        if red is not None:
            xin = np.concatenate([xin[:, gi * cg + red[0]:gi * cg + red[1]] for gi in range(g)], axis=1)
            w = w[:, red[0]:red[1]]
        out = ref_conv(xin, w, a["stride"], a["padding"], a["dilation"], g)
    elif k == OpKind.MATMUL:
        lhs, rhs = ins
        if red is not None:
            lhs, rhs = lhs[..., red[0]:red[1]], rhs[..., red[0]:red[1], :]
        out = np.matmul(lhs, rhs)
    elif k == OpKind.POOL:
        out = ref_pool(ins[0], a, red)
    elif k == OpKind.ELEMENTWISE:
        out = ins[0]
        for other in ins[1:]:
            out = ELEM[a["function"]](out, other)
    elif k == OpKind.ACTIVATION:
        out = ACT[a["function"]](ins[0])
    elif k == OpKind.SOFTMAX:
        e = np.exp(ins[0] - np.max(ins[0], axis=a["axis"], keepdims=True))
        out = e / np.sum(e, axis=a["axis"], keepdims=True)
    elif k == OpKind.NORM:
        xin = ins[0]
        ax = a["axis"] % xin.ndim
        bshape = [1] * xin.ndim
        bshape[ax] = xin.shape[ax]
        scale = ins[1].reshape(bshape) if len(ins) > 1 else 1.0
        shift = ins[2].reshape(bshape) if len(ins) > 2 else 0.0
        if a["norm"] == "layernorm":
            mean, var = xin.mean(axis=ax, keepdims=True), xin.var(axis=ax, keepdims=True)
            out = (xin - mean) / np.sqrt(var + 1e-5) * scale + shift
        else:  # inference batch norm: a per-channel affine map
            out = xin * scale + shift
    elif k == OpKind.CONCAT:
        out = np.concatenate(ins, axis=a["axis"])
    elif k == OpKind.SPLIT:
        cuts = np.cumsum(a["sizes"])[:-1]
        return dict(zip(op.outputs, np.split(ins[0], cuts, axis=a["axis"]), strict=True))
    elif k == OpKind.SLICE:
        out = ins[0][tuple(slice(s, e, st) for s, e, st in zip(a["starts"], a["ends"], a["steps"], strict=True))]
    elif k == OpKind.TRANSPOSE:
        out = np.transpose(ins[0], a["perm"])
    elif k == OpKind.RESHAPE:
        out = ins[0].reshape(a["shape"])
    else:  # pragma: no cover
        raise AssertionError(k)
    if act is not None:
        out = ACT[act](out)
    return {op.outputs[0]: out}


def random_data(wl: Workload, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: rng.uniform(0.5, 1.5, t.shape) * rng.choice([-1.0, 1.0], t.shape)
            for n, t in wl.tensors.items() if not t.role.is_produced}


def run_untiled(wl: Workload, data: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    values = dict(data)
    for op in wl.operators:
        values.update(evaluate(op, values))
    return values


def _slices(box: Box) -> tuple[slice, ...]:
    return tuple(slice(lo, hi) for lo, hi in box)


def run_tiled(wl: Workload, graph: PinningGraph, data: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Execute ``graph`` tile by tile: a tile sees only the chunks it reads (everything else is NaN), computes its
    output box (a partial result over its reduction range) and writes / accumulates it into the chunks it writes."""
    store: dict[int, np.ndarray] = {}
    for b, buf in enumerate(graph.buffers):
        if buf.starts_in_memory:
            store[b] = data[buf.tensor][_slices(buf.region)]
    for st in graph.steps:
        op = wl.op(st.op)
        views: dict[str, np.ndarray] = {}
        for t in dict.fromkeys(op.inputs):
            arr = np.full(wl.tensors[t].shape, np.nan)
            for b in st.reads:
                buf = graph.buffers[b]
                if buf.tensor == t:
                    assert b in store, f"step {st.name} reads {buf.name} before it exists"
                    arr[_slices(buf.region)] = store[b]
            views[t] = arr
        red = st.tile.get("reduce") if st.tile else None
        result = evaluate(op, views, red)  # type: ignore[arg-type]
        boxes = st.tile.get("out", {}) if st.tile else {}
        for t, box in boxes.items():  # type: ignore[union-attr]
            written = [graph.buffers[b].region for b in st.writes if graph.buffers[b].tensor == t]
            assert sum(int(np.prod([hi - lo for lo, hi in r])) for r in written) == np.prod(
                [hi - lo for lo, hi in box]), f"step {st.name}: its writes are not its output box"
        for b in st.writes:
            buf = graph.buffers[b]
            part = result[buf.tensor][_slices(buf.region)]
            assert not np.isnan(part).any(), f"step {st.name} computed {buf.name} from data it did not read"
            if b in st.reads:  # a partial sum: update in place
                combine = np.maximum if op.kind == OpKind.POOL and op.attrs["mode"] == "max" else np.add
                store[b] = combine(store[b], part)
            else:
                assert b not in store, f"{buf.name} produced twice"
                store[b] = part.copy()
    out: dict[str, np.ndarray] = {}
    for name, t in wl.tensors.items():
        if not t.role.is_produced:
            continue
        arr = np.full(t.shape, np.nan)
        for b, buf in enumerate(graph.buffers):
            if buf.tensor == name:
                arr[_slices(buf.region)] = store[b]
        out[name] = arr
    return out


def check_functional(wl: Workload, acc: Accelerator, *, min_tiled: int = 1, seed: int = 0) -> PinningGraph:
    graph = tiled_graph(wl, acc)
    assert len(graph.tiled_ops) >= min_tiled
    assert len(graph.steps) > len(wl.operators)
    assert unplaceable_steps(graph) == []
    assert verify_tiling(wl, graph) == []
    data = random_data(wl, seed)
    want = run_untiled(wl, data)
    got = run_tiled(wl, graph, data)
    for name, arr in got.items():
        assert np.allclose(arr, want[name], rtol=1e-9, atol=1e-9), name
    for op in wl.operators:
        assert sum(s.macs for s in graph.steps if s.op == op.name) == op.macs
        assert all(s.compute_cycles >= 1 for s in graph.steps if s.op == op.name)
    return graph


# ============================================================================================ one operator per kind
def _conv_strided() -> Workload:
    b = NetworkBuilder("conv-strided")
    x = b.input("x", (1, 3, 15, 13))
    y = b.conv2d(x, 6, 3, stride=2, padding=[1, 2, 0, 1], dilation=2, name="conv")
    return b.build([y])


def _conv_reduction() -> Workload:
    b = NetworkBuilder("conv-reduction")
    x = b.input("x", (1, 24, 6, 6))
    y = b.conv2d(x, 12, 3, padding=1, name="conv")
    return b.build([b.activation(y, "relu")])


def _conv_grouped() -> Workload:
    b = NetworkBuilder("conv-grouped")
    x = b.input("x", (1, 8, 9, 10))
    y = b.conv2d(x, 12, (3, 2), padding=1, groups=4, name="gconv")
    return b.build([y])


def _conv_grouped_reduction() -> Workload:
    b = NetworkBuilder("conv-grouped-reduction")
    x = b.input("x", (1, 32, 5, 5))
    y = b.conv2d(x, 8, 3, padding=1, groups=2, name="gconv")
    return b.build([y])


def _depthwise() -> Workload:
    b = NetworkBuilder("depthwise")
    x = b.input("x", (1, 6, 12, 11))
    y = b.depthwise_conv2d(x, 3, stride=2, padding=1, multiplier=2, name="dw")
    return b.build([y])


def _matmul_broadcast() -> Workload:
    b = NetworkBuilder("matmul-broadcast")
    a = b.input("a", (2, 1, 12, 20))
    w = b.input("bmat", (3, 20, 10))
    return b.build([b.matmul(a, w, name="mm")])


def _linear() -> Workload:
    b = NetworkBuilder("linear")
    x = b.input("x", (6, 64))
    y = b.linear(x, 24, name="fc")
    return b.build([b.linear(y, 5, name="fc2")])


def _pools() -> Workload:
    b = NetworkBuilder("pools")
    x = b.input("x", (1, 4, 13, 13))
    y = b.pool(x, "max", 3, stride=2, padding=1, name="maxpool")
    z = b.pool(x, "avg", 2, name="avgpool")
    return b.build([y, z])


def _global_pool() -> Workload:
    b = NetworkBuilder("global-pool")
    x = b.input("x", (1, 3, 20, 20))
    return b.build([b.global_pool(x, "avg", name="gap"), b.global_pool(x, "max", name="gmp")])


def _elementwise() -> Workload:
    b = NetworkBuilder("elementwise")
    x = b.input("x", (2, 3, 8, 8))
    y = b.input("y", (3, 1, 8))
    s = b.elementwise("add", [x, y], activation="relu", name="add")
    m = b.elementwise("mul", [s, y], name="mul")
    return b.build([b.elementwise("max", [m, x], name="max")])


def _activation_softmax() -> Workload:
    b = NetworkBuilder("softmax")
    x = b.input("x", (4, 6, 20))
    y = b.activation(x, "gelu", name="gelu")
    z = b.softmax(y, axis=-1, name="sm_last")
    return b.build([b.softmax(z, axis=1, name="sm_mid")])


def _norms() -> Workload:
    b = NetworkBuilder("norms")
    x = b.input("x", (16, 40))
    y = b.layernorm(x, name="ln")
    z = b.layernorm(y, affine=False, name="ln_plain")
    c = b.input("c", (1, 8, 6, 10))
    return b.build([z, b.batchnorm(c, name="bn")])


def _concat_split() -> Workload:
    b = NetworkBuilder("concat-split")
    xs = [b.input(f"x{i}", (1, c, 8, 9)) for i, c in enumerate((2, 5, 3))]
    y = b.concat(xs, axis=1, name="cat_c")
    z = b.concat([y, y], axis=2, name="cat_h")
    parts = b.split(z, [3, 5, 8], axis=2, name="split")
    return b.build(parts)


def _slice_transpose_reshape() -> Workload:
    b = NetworkBuilder("data-movement")
    x = b.input("x", (1, 6, 20, 20))
    s = b.slice(x, [0, 1, 2, 0], [1, 6, 19, 20], [1, 2, 3, 2], name="slice")
    t = b.transpose(s, (0, 2, 3, 1), name="transpose")
    r = b.reshape(t, (6, 30), name="reshape")
    r2 = b.reshape(r, (2, 3, 5, 6), name="reshape2")
    return b.build([b.transpose(r2, (3, 1, 0, 2), name="transpose2")])


def _shared_weight() -> Workload:
    """An unrolled recurrence: one weight read by three matmuls."""
    b = NetworkBuilder("shared")
    h = b.input("h0", (4, 24))
    w = b.weight("w", (24, 24))
    for i in range(3):
        h = b.activation(b.linear(h, 24, weight=w, name=f"step{i}"), "tanh", name=f"tanh{i}")
    return b.build([h])


FUNCTIONAL = {
    "conv-strided-padded-dilated": (_conv_strided, [96, 96, 64]),
    "conv-reduction-split": (_conv_reduction, [160, 160, 128]),
    "conv-grouped": (_conv_grouped, [128, 128, 96]),
    "conv-grouped-reduction": (_conv_grouped_reduction, [160, 160, 128]),
    "depthwise": (_depthwise, [128, 96, 96]),
    "matmul-broadcast": (_matmul_broadcast, [160, 160, 128]),
    "linear-reduction": (_linear, [96, 96, 64]),
    "pools": (_pools, [128, 128, 96]),
    "global-pool-row-reduction": (_global_pool, [128, 96, 64]),
    "elementwise-broadcast": (_elementwise, [128, 96, 96]),
    "activation-softmax": (_activation_softmax, [256, 192]),
    "layernorm-batchnorm": (_norms, [160, 128, 128]),
    "concat-split": (_concat_split, [128, 96, 96]),
    "slice-transpose-reshape": (_slice_transpose_reshape, [128, 96, 64]),
    "shared-weight": (_shared_weight, [256, 192, 160]),
}


@pytest.mark.parametrize("case", list(FUNCTIONAL))
def test_tile_by_tile_execution_matches_numpy(case: str) -> None:
    build, caps = FUNCTIONAL[case]
    wl = build()
    graph = check_functional(wl, tiny_accelerator(caps))
    # every chunk is a box of its tensor with the tensor's role, its size the box volume in bytes
    for buf in graph.buffers:
        t = wl.tensors[buf.tensor]
        assert buf.role == t.role
        assert buf.size_bytes == int(np.prod([hi - lo for lo, hi in buf.region])) * t.dtype_bytes


def test_reduction_splits_accumulate_in_place() -> None:
    wl = _conv_reduction()
    graph = check_functional(wl, tiny_accelerator([160, 160, 128]))
    conv = [s for s in graph.steps if s.op == "conv"]
    assert any(s.tile["reduce"] is not None for s in conv)
    for s in conv:
        assert s.name.startswith("conv/t")
        if s.tile["reduce"] is not None:
            assert s.tile["dim"] == "C"
            if s.tile["reduce"][0] > 0:  # a later tile of its output chunk: reads what it updates
                assert set(s.writes) <= set(s.reads)
            else:
                assert not set(s.writes) & set(s.reads)


def test_shared_weight_has_one_chunking() -> None:
    wl = _shared_weight()
    graph = check_functional(wl, tiny_accelerator([256, 192, 160]))
    w_chunks = {b for b, buf in enumerate(graph.buffers) if buf.tensor == "w"}
    assert len(w_chunks) > 1
    for op in ("step0", "step1", "step2"):
        read = set().union(*(set(s.reads) for s in graph.steps if s.op == op)) & w_chunks
        assert read == w_chunks


def test_batch_split_of_a_large_batch() -> None:
    b = NetworkBuilder("batch")
    x = b.input("x", (6, 2, 6, 6))
    wl = b.build([b.activation(x, "relu", name="relu")])
    check_functional(wl, tiny_accelerator([96, 96]))


def test_two_byte_elements() -> None:
    b = NetworkBuilder("fp16", dtype_bytes=2)
    x = b.input("x", (1, 8, 10, 10))
    y = b.conv2d(x, 8, 3, padding=1, name="conv")
    wl = b.build([b.pool(y, "max", 2, name="pool")])
    graph = check_functional(wl, tiny_accelerator([256, 256, 192]))
    assert all(buf.size_bytes % 2 == 0 for buf in graph.buffers)


def _random_chain(rng: np.random.Generator) -> Workload:
    """A random chain of NCHW operators (convs, pools, depthwise, adds, concats, transposes, softmax …)."""
    b = NetworkBuilder("chain", dtype_bytes=int(rng.choice([1, 2])))
    live = [b.input("x", (1, int(rng.choice([2, 3, 4, 8])), int(rng.integers(4, 12)), int(rng.integers(4, 12))))]
    for _ in range(int(rng.integers(2, 6))):
        x = live[int(rng.integers(max(0, len(live) - 2), len(live)))]
        _, c, h, w = b.shape(x)
        kind = rng.choice(["conv", "conv", "pool", "act", "add", "bn", "dw", "cat", "transpose", "softmax"])
        if kind == "conv":
            y = b.conv2d(x, int(rng.choice([2, 4, 6, 8])), int(rng.choice([1, 3])), stride=int(rng.choice([1, 1, 2])),
                         padding=1)
        elif kind == "pool" and h >= 2 and w >= 2:
            y = b.pool(x, str(rng.choice(["max", "avg"])), 2)
        elif kind == "add":
            same = [t for t in live if b.shape(t) == b.shape(x)]
            y = b.add(x, same[int(rng.integers(len(same)))])
        elif kind == "bn":
            y = b.batchnorm(x)
        elif kind == "dw" and c > 1:
            y = b.depthwise_conv2d(x, 3, padding=1)
        elif kind == "cat":
            same = [t for t in live if b.shape(t)[2:] == (h, w)]
            y = b.concat([x, same[int(rng.integers(len(same)))]], axis=1)
        elif kind == "transpose":
            y = b.transpose(b.transpose(x, (0, 2, 3, 1)), (0, 3, 1, 2))
        elif kind == "softmax":
            y = b.softmax(x, axis=int(rng.choice([1, -1])))
        else:
            y = b.activation(x, "relu")
        live.append(y)
    y = live[-1]
    if rng.random() < 0.5:
        y = b.linear(b.flatten(y), int(rng.integers(2, 12)))
    return b.build([y])


@pytest.mark.parametrize("seed", range(40))
def test_random_chains(seed: int) -> None:
    """Producers and consumers with clashing preferred chunkings still execute correctly tile by tile."""
    rng = np.random.default_rng(seed)
    wl = _random_chain(rng)
    biggest = max(t.size_bytes for t in wl.tensors.values())
    caps = [max(24, int(biggest * rng.uniform(0.1, 0.8))) for _ in range(int(rng.integers(1, 4)))]
    check_functional(wl, tiny_accelerator(caps), seed=seed)


# ============================================================================================ the coverage check
def _replace_step(graph: PinningGraph, m: int, **changes: object) -> PinningGraph:
    steps = list(graph.steps)
    steps[m] = dataclasses.replace(steps[m], **changes)
    return dataclasses.replace(graph, steps=tuple(steps))


def test_verify_flags_a_dropped_read() -> None:
    wl = _elementwise()
    graph = tiled_graph(wl, tiny_accelerator([128, 96, 96]))
    assert verify_tiling(wl, graph) == []
    m = next(i for i, s in enumerate(graph.steps) if s.op == "max")
    st = graph.steps[m]
    x_reads = [b for b in st.reads if graph.buffers[b].tensor == "x"]
    assert x_reads
    bad = _replace_step(graph, m, reads=tuple(b for b in st.reads if b != x_reads[0]))
    problems = verify_tiling(wl, bad)
    assert problems and any(st.name in p and "needs x" in p for p in problems)


def test_verify_flags_a_dropped_weight_read() -> None:
    wl = _conv_reduction()
    graph = tiled_graph(wl, tiny_accelerator([160, 160, 128]))
    m = next(i for i, s in enumerate(graph.steps) if s.op == "conv")
    st = graph.steps[m]
    w = next(b for b in st.reads if graph.buffers[b].tensor == "conv.w")
    problems = verify_tiling(wl, _replace_step(graph, m, reads=tuple(b for b in st.reads if b != w)))
    assert any("needs conv.w" in p for p in problems)


def test_verify_flags_a_dropped_tile() -> None:
    wl = _conv_reduction()
    graph = tiled_graph(wl, tiny_accelerator([160, 160, 128]))
    for m in (next(i for i, s in enumerate(graph.steps) if s.op == "conv"),
              next(i for i, s in enumerate(graph.steps) if s.op == "relu")):
        bad = dataclasses.replace(graph, steps=graph.steps[:m] + graph.steps[m + 1:])
        problems = verify_tiling(wl, bad)
        assert problems, m
        if graph.steps[m].op == "conv":
            assert any("MACs" in p for p in problems)


def test_verify_flags_overlapping_tiles() -> None:
    wl = _activation_softmax()
    graph = tiled_graph(wl, tiny_accelerator([256, 192]))
    ms = [i for i, s in enumerate(graph.steps) if s.op == "gelu"]
    assert len(ms) >= 2
    bad = _replace_step(graph, ms[1], writes=graph.steps[ms[0]].writes)
    problems = verify_tiling(wl, bad)
    assert any("overlapping" in p for p in problems)
    assert any("never writes" in p for p in problems)


def test_verify_flags_bad_reduction_ranges() -> None:
    wl = _linear()
    graph = tiled_graph(wl, tiny_accelerator([96, 96, 64]))
    m = next(i for i, s in enumerate(graph.steps) if s.op == "fc" and s.tile.get("reduce"))
    st = graph.steps[m]
    lo, hi = st.tile["reduce"]
    bad = _replace_step(graph, m, tile={**st.tile, "reduce": (lo, hi - 1)})
    assert any("do not partition" in p for p in verify_tiling(wl, bad))


def test_verify_flags_overlapping_chunks() -> None:
    wl = _activation_softmax()
    graph = tiled_graph(wl, tiny_accelerator([256, 192]))
    b = next(i for i, buf in enumerate(graph.buffers) if buf.tensor == "x" and buf.region[0] == (0, 1))
    buf = graph.buffers[b]
    grown = ((0, 2),) + buf.region[1:]
    buffers = list(graph.buffers)
    buffers[b] = dataclasses.replace(buf, region=grown)
    problems = verify_tiling(wl, dataclasses.replace(graph, buffers=tuple(buffers)))
    assert any("do not partition" in p and "'x'" in p for p in problems)


def test_untiled_graph_verifies() -> None:
    wl = _conv_strided()
    acc = tiny_accelerator([4096, 4096])
    assert verify_tiling(wl, untiled_graph(wl, acc)) == []


# ============================================================================================ infeasible operators
def test_a_row_larger_than_every_scratchpad_is_infeasible() -> None:
    b = NetworkBuilder("wide-softmax")
    x = b.input("x", (4, 300))
    wl = b.build([b.softmax(x, axis=-1, name="wide_softmax")])
    with pytest.raises(InfeasibleInstanceError) as exc:
        tiled_graph(wl, tiny_accelerator([128, 128, 128]))
    msg = str(exc.value)
    assert "wide_softmax" in msg and "'x'" in msg and "128 B" in msg


def test_a_role_no_scratchpad_holds_is_infeasible() -> None:
    wl = _conv_reduction()
    acts = frozenset({TensorRole.INPUT, TensorRole.ACTIVATION, TensorRole.OUTPUT})
    with pytest.raises(InfeasibleInstanceError) as exc:
        tiled_graph(wl, tiny_accelerator([160, 160], holds=[acts, acts]))
    assert "'conv'" in str(exc.value) and "conv.w" in str(exc.value)


def test_nothing_oversized_is_the_untiled_graph() -> None:
    wl = _conv_strided()
    acc = tiny_accelerator([4096, 4096])
    assert tiled_graph(wl, acc) == untiled_graph(wl, acc)


# ============================================================================================ networks
def _vgg_like() -> Workload:
    b = NetworkBuilder("vgg-like", dtype_bytes=2)
    x = b.input("image", (1, 3, 224, 224))
    for channels, convs in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(convs):
            x = b.conv2d(x, channels, 3, padding=1, activation="relu")
        x = b.pool(x, "max", 2)
    x = b.flatten(x)
    x = b.linear(x, 1024, activation="relu")
    return b.build([b.softmax(b.linear(x, 100))])


def _transformer_block(seq: int = 128, hidden: int = 256, heads: int = 4, ffn: int = 1024) -> Workload:
    b = NetworkBuilder("transformer", dtype_bytes=2)
    x = b.input("x", (seq, hidden))
    d = hidden // heads
    qkv = b.linear(x, 3 * hidden, name="qkv")
    q, k, v = b.split(qkv, [hidden, hidden, hidden], axis=1, name="qkv_split")

    def heads_of(t: str, name: str, perm: tuple[int, ...]) -> str:
        return b.transpose(b.reshape(t, (seq, heads, d), name=f"{name}.r"), perm, name=f"{name}.t")

    s = b.matmul(heads_of(q, "q", (1, 0, 2)), heads_of(k, "k", (1, 2, 0)), name="scores")
    p = b.softmax(s, axis=-1, name="attn_softmax")
    ctx = b.matmul(p, heads_of(v, "v", (1, 0, 2)), name="context")
    ctx = b.reshape(b.transpose(ctx, (1, 0, 2), name="merge.t"), (seq, hidden), name="merge")
    x = b.layernorm(b.add(b.linear(ctx, hidden, name="proj"), x, name="res1"), name="ln1")
    y = b.linear(b.linear(x, ffn, activation="gelu", name="fc1"), hidden, name="fc2")
    return b.build([b.layernorm(b.add(y, x, name="res2"), name="ln2")])


def _zoo(name: str, params: dict[str, object] | None = None) -> Workload:
    zoo = pytest.importorskip("dlaopt.zoo")
    if name not in zoo.ZOO.names():
        pytest.skip(f"zoo network '{name}' is not registered yet")
    return zoo.ZOO.create(name, params)


NETWORKS: dict[str, Callable[[], Workload]] = {
    "vgg-like": _vgg_like,
    "transformer-block": _transformer_block,
    "resnet50": lambda: _zoo("resnet50"),
    "bert-base": lambda: _zoo("bert-base", {"layers": 2}),
}


@pytest.mark.parametrize("spad_kb", [32, 256])
@pytest.mark.parametrize("network", list(NETWORKS))
def test_networks_tile_and_verify(network: str, spad_kb: int) -> None:
    wl = NETWORKS[network]()
    acc = PRESETS.create("smaug-nvdla", {"spad_kb": spad_kb})
    start = time.perf_counter()
    graph = tiled_graph(wl, acc)
    assert time.perf_counter() - start < 10.0
    assert graph.tiled_ops
    assert unplaceable_steps(graph) == []
    assert verify_tiling(wl, graph) == []
    untiled = untiled_graph(wl, acc)
    tiled = set(graph.tiled_ops)
    expected = [s for s in untiled.steps if s.op not in tiled]  # untiled operators keep their single step
    by_name = {s.name: s for s in graph.steps}
    for s in expected:
        got = by_name[s.name]
        assert [graph.buffers[b].name for b in got.reads] == [untiled.buffers[b].name for b in s.reads]
        assert (got.compute_cycles, got.macs, got.tile) == (s.compute_cycles, s.macs, s.tile)
    cap = min(sp.capacity for sp in graph.scratchpads)
    assert max(buf.size_bytes for buf in graph.buffers if "[" in buf.name) <= cap


def test_small_network_on_large_scratchpads_is_untiled() -> None:
    b = NetworkBuilder("small", dtype_bytes=2)
    x = b.input("x", (1, 3, 32, 32))
    y = b.pool(b.conv2d(x, 16, 3, padding=1, activation="relu"), "max", 2)
    wl = b.build([b.linear(b.flatten(y), 10)])
    acc = PRESETS.create("smaug-nvdla", {"spad_kb": 256})
    graph = tiled_graph(wl, acc)
    assert graph == untiled_graph(wl, acc)
    assert graph.tiled_ops == ()
