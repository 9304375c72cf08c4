"""Converters of the compute operators: convolutions, matmuls, elementwise operators and activations (with the fusions
of biases, batch norms and activations into their producers), norms, softmax, pooling and reductions."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from onnx import NodeProto

from dlaopt.io.onnx.common import NORM_OP, ONNXSIM, ImporterState, Shape, unused_extra_outputs
from dlaopt.workload.operator import OpKind

_CONVS = frozenset({OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D})
_TAKES_ACTIVATION = frozenset({OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.MATMUL, OpKind.ELEMENTWISE})


def _spatial_pads(imp: ImporterState, node: NodeProto, sizes: Sequence[int], kernel: Sequence[int],
                  strides: Sequence[int], dilations: Sequence[int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from ``pads`` or ``auto_pad`` (SAME_UPPER puts the odd pixel at the end)."""
    a = imp.attrs(node)
    auto = a.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        lo, hi = [], []
        for size, k, s, d in zip(sizes, kernel, strides, dilations, strict=True):
            total = max(0, (math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size)
            small = total // 2
            lo.append(small if auto == "SAME_UPPER" else total - small)
            hi.append(total - lo[-1])
        return (lo[0], lo[1], hi[0], hi[1])
    if auto == "VALID":
        return (0, 0, 0, 0)
    pads = [int(p) for p in a.get("pads", [0, 0, 0, 0])]
    return (pads[0], pads[1], pads[2], pads[3])


def _pair_attr(imp: ImporterState, node: NodeProto, key: str, default: int = 1) -> tuple[int, int]:
    values = [int(v) for v in imp.attrs(node).get(key, [default, default])]
    if len(values) != 2:
        raise imp.error(node, f"has {key} {values}; only 2-D operators (NCHW inputs) are supported")
    return (values[0], values[1])


def _require_rank4(imp: ImporterState, node: NodeProto, shape: Shape) -> None:
    if len(shape) != 4:
        raise imp.error(node, f"has an input of shape {list(shape)}; only 2-D convolution and pooling on NCHW "
                              "(4-D) inputs are supported")


def _unpadded(imp: ImporterState, name: str) -> tuple[str, tuple[int, int, int, int]]:
    """The tensor a conv / pool reads for ``name`` and the padding of a Pad folded into it (zeros when none)."""
    return imp.pad_into.get(name, (name, (0, 0, 0, 0)))


def _add_pads(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


def _conv(imp: ImporterState, node: NodeProto) -> None:
    x, w = node.input[0], node.input[1]
    xs, ws = imp.shape(node, x), imp.shape(node, w)
    _require_rank4(imp, node, xs)
    groups = int(imp.attrs(node).get("group", 1))
    strides, dilations = _pair_attr(imp, node, "strides"), _pair_attr(imp, node, "dilations")
    x, folded = _unpadded(imp, x)
    pads = _add_pads(_spatial_pads(imp, node, xs[2:], ws[2:], strides, dilations), folded)
    depthwise = groups == xs[1] and groups > 1 and ws[0] % xs[1] == 0
    attrs = {"stride": strides, "padding": pads, "dilation": dilations, "groups": groups}
    imp.emit(node, OpKind.DEPTHWISE_CONV2D if depthwise else OpKind.CONV2D, [imp.data(node, x), imp.data(node, w)],
             attrs, [node.output[0]])


def _matmul(imp: ImporterState, node: NodeProto) -> None:
    a, b = node.input[0], node.input[1]
    if len(imp.shape(node, a)) < 2 or len(imp.shape(node, b)) < 2:
        raise imp.error(node, "has a 1-D operand; dlaopt's matmul needs at least 2-D operands (reshape the vector "
                              "to a 1-row or 1-column matrix in the model)")
    imp.emit(node, OpKind.MATMUL, [imp.data(node, a), imp.data(node, b)], {}, [node.output[0]])


def _gemm(imp: ImporterState, node: NodeProto) -> None:
    a_name, b_name = node.input[0], node.input[1]
    attrs = imp.attrs(node)
    bs = imp.shape(node, b_name)
    a = imp.data(node, a_name)
    if attrs.get("transA", 0):
        a = imp.emit(node, OpKind.TRANSPOSE, [a], {"perm": (1, 0)}, [None], suffix="transpose_a").outputs[0]
    if not attrs.get("transB", 0):
        b = imp.data(node, b_name)
    elif b_name in imp.static:
        b = imp.weight(b_name, tuple(reversed(bs)))  # declared in (K, N) orientation: only shapes matter
    else:
        b = imp.emit(node, OpKind.TRANSPOSE, [imp.data(node, b_name)], {"perm": (1, 0)}, [None],
                     suffix="transpose_b").outputs[0]
    c = imp.input(node, 2)
    if c is None or c in imp.static:  # a constant C is a bias: dropped, as the zoo omits biases
        imp.emit(node, OpKind.MATMUL, [a, b], {}, [node.output[0]])
        return
    product = imp.emit(node, OpKind.MATMUL, [a, b], {}, [None]).outputs[0]
    imp.emit(node, OpKind.ELEMENTWISE, [product, imp.data(node, c)], {"function": "add"}, [node.output[0]],
             suffix="add_c")


def _is_channel_vector(bias: Shape, out: Shape, axis: int) -> bool:
    """``bias`` broadcasts onto ``out`` along ``axis`` only, holding one value per channel."""
    if len(bias) > len(out):
        return False
    padded = (1,) * (len(out) - len(bias)) + tuple(bias)
    ax = axis % len(out)
    return all(d == (out[i] if i == ax else 1) for i, d in enumerate(padded))


def _fold_bias(imp: ImporterState, node: NodeProto) -> bool:
    """An ``Add`` of a constant per-channel vector to a matmul / convolution output: alias it (bias folded)."""
    ins = list(node.input)
    for x, bias in ((ins[0], ins[1]), (ins[1], ins[0])):
        if bias not in imp.static or x in imp.static or bias not in imp.shapes:
            continue
        op = imp.fusable(x, _CONVS | {OpKind.MATMUL})
        if op is not None:
            out_shape = imp.info[op.outputs[0]][0]
            if _is_channel_vector(imp.shapes[bias], out_shape, 1 if op.kind in _CONVS else -1):
                imp.alias(node, node.output[0], x)
                return True
    return False


def _elementwise(function: str) -> Callable[[ImporterState, NodeProto], None]:
    def convert(imp: ImporterState, node: NodeProto) -> None:
        ins = [n for n in node.input if n]
        if len(ins) == 1:  # a one-input Max / Min
            imp.alias(node, node.output[0], ins[0])
            return
        if function == "add" and len(ins) == 2 and _fold_bias(imp, node):
            return
        imp.emit(node, OpKind.ELEMENTWISE, [imp.data(node, n) for n in ins], {"function": function},
                 [node.output[0]])

    return convert


def _apply_activation(imp: ImporterState, node: NodeProto, function: str) -> None:
    """Fused into the producing conv / matmul / elementwise operator when it is the only reader, else its own."""
    x = node.input[0]
    op = imp.fusable(x, _TAKES_ACTIVATION)
    if op is not None:
        op.attrs["activation"] = function
        imp.alias(node, node.output[0], x)
        return
    imp.emit(node, OpKind.ACTIVATION, [imp.data(node, x)], {"function": function}, [node.output[0]])


def _activation(function: str) -> Callable[[ImporterState, NodeProto], None]:
    return lambda imp, node: _apply_activation(imp, node, function)


def _clip(imp: ImporterState, node: NodeProto) -> None:
    if imp.opset < 11:
        a = imp.attrs(node)
        lo, hi = float(a.get("min", -math.inf)), float(a.get("max", math.inf))
    else:
        lo_v, hi_v = imp.const(node, 1, "min"), imp.const(node, 2, "max")
        lo = -math.inf if lo_v is None else float(np.asarray(lo_v).reshape(-1)[0])
        hi = math.inf if hi_v is None else float(np.asarray(hi_v).reshape(-1)[0])
    if lo == 0 and hi == 6:
        _apply_activation(imp, node, "relu6")
    elif lo == 0 and math.isinf(hi):
        _apply_activation(imp, node, "relu")
    else:
        raise imp.error(node, f"clips to [{lo}, {hi}]; only [0, 6] (relu6) and [0, inf) (relu) are modelled — "
                              "replace the operator")


def _batchnorm(imp: ImporterState, node: NodeProto) -> None:
    unused_extra_outputs(imp, node, "training-mode (running mean / variance)")
    x = node.input[0]
    if imp.fusable(x, _CONVS) is not None:  # folded into the convolution's weights
        imp.alias(node, node.output[0], x)
        return
    if len(imp.shape(node, x)) < 2:
        raise imp.error(node, "normalises a tensor without a channel axis")
    imp.emit(node, OpKind.NORM, [imp.data(node, n) for n in node.input[:3]], {"norm": "batchnorm", "axis": 1},
             [node.output[0]])


def _layernorm(imp: ImporterState, node: NodeProto) -> None:
    unused_extra_outputs(imp, node, "mean / inverse standard deviation")
    xs = imp.shape(node, node.input[0])
    axis = int(imp.attrs(node).get("axis", -1))
    if axis % max(len(xs), 1) != len(xs) - 1:
        raise imp.error(node, f"normalises over axes {axis % len(xs)}..{len(xs) - 1}; only the last axis is "
                              "modelled (reshape so that the normalised axes are one)")
    inputs = [imp.data(node, n) for n in node.input[:3] if n]
    imp.emit(node, OpKind.NORM, inputs, {"norm": "layernorm", "axis": -1}, [node.output[0]])


def _softmax(imp: ImporterState, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    rank = len(xs)
    axis = int(imp.attrs(node).get("axis", -1 if imp.opset >= 13 else 1)) % rank
    if imp.opset < 13 and axis != rank - 1:
        raise imp.error(node, f"normalises over the flattened axes {axis}.. (opset {imp.opset} semantics); export "
                              "with opset >= 13 or softmax over the last axis")
    imp.emit(node, OpKind.SOFTMAX, [imp.data(node, node.input[0])], {"axis": -1 if axis == rank - 1 else axis},
             [node.output[0]])


def _pool(mode: str) -> Callable[[ImporterState, NodeProto], None]:
    def convert(imp: ImporterState, node: NodeProto) -> None:
        unused_extra_outputs(imp, node, "Indices")
        x, out = node.input[0], node.output[0]
        xs = imp.shape(node, x)
        _require_rank4(imp, node, xs)
        attrs = imp.attrs(node)
        kernel = tuple(int(k) for k in attrs["kernel_shape"])
        if len(kernel) != 2:
            raise imp.error(node, f"has a {len(kernel)}-D kernel; only 2-D pooling is supported")
        strides, dilations = _pair_attr(imp, node, "strides"), _pair_attr(imp, node, "dilations")
        if dilations != (1, 1):
            raise imp.error(node, f"has dilations {list(dilations)}; dilated pooling is not modelled")
        pads = _spatial_pads(imp, node, xs[2:], kernel, strides, dilations)
        if attrs.get("ceil_mode", 0):
            pads = _ceil_mode_pads(xs[2:], kernel, strides, pads, imp.inferred.get(out))
        x, folded = _unpadded(imp, x)
        pads = _add_pads(pads, folded)
        (h, w), (kh, kw), (sh, sw) = imp.shapes[x][2:], kernel, strides
        one_window = (h + pads[0] + pads[2] - kh) // sh == 0 and (w + pads[1] + pads[3] - kw) // sw == 0
        if one_window and (kh > h or kw > w) and kh - pads[0] >= h and kw - pads[1] >= w:  # covers the input
            imp.emit(node, OpKind.POOL, [imp.data(node, x)], {"mode": mode, "global": True}, [out])
            return
        imp.emit(node, OpKind.POOL, [imp.data(node, x)],
                 {"mode": mode, "kernel": kernel, "stride": strides, "padding": pads}, [out])

    return convert


def _ceil_mode_pads(sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                    pads: tuple[int, int, int, int], inferred: tuple[int | None, ...] | None
                    ) -> tuple[int, int, int, int]:
    """Extra bottom/right padding giving the ceil-mode output size: ONNX's inferred one when known, else
    PyTorch's rule (rounded up, but no window may start in the bottom/right padding)."""
    lo, hi = [pads[0], pads[1]], [pads[2], pads[3]]
    for i, (size, k, s) in enumerate(zip(sizes, kernel, strides, strict=True)):
        span = size + lo[i] + hi[i]
        out = inferred[2 + i] if inferred is not None and len(inferred) == 4 else None
        if out is None:
            out = -(-(span - k) // s) + 1
            if (out - 1) * s >= size + lo[i]:
                out -= 1
        hi[i] += max(0, (out - 1) * s + k - span)
    return (lo[0], lo[1], hi[0], hi[1])


def _global_pool(mode: str) -> Callable[[ImporterState, NodeProto], None]:
    def convert(imp: ImporterState, node: NodeProto) -> None:
        _require_rank4(imp, node, imp.shape(node, node.input[0]))
        imp.emit(node, OpKind.POOL, [imp.data(node, node.input[0])], {"mode": mode, "global": True},
                 [node.output[0]])

    return convert


def _reduce(mode: str) -> Callable[[ImporterState, NodeProto], None]:
    """``ReduceMean`` / ``ReduceMax`` / ``ReduceSum`` → ``pool`` (avg / max / avg: a sum reads and adds the same
    elements as a mean). Over the two spatial axes of an NCHW tensor it is a global pool; over any other run of
    consecutive axes a global pool of the input viewed as ``(1, before, reduced, after)``, between reshapes."""

    def convert(imp: ImporterState, node: NodeProto) -> None:
        x, out = node.input[0], node.output[0]
        xs = imp.shape(node, x)
        attrs = imp.attrs(node)
        if "axes" in attrs:
            axes = [int(v) for v in attrs["axes"]]
        else:
            value = imp.const(node, 1, "axes")
            axes = [] if value is None else [int(v) for v in np.asarray(value).reshape(-1)]
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                imp.alias(node, out, x)
                return
            axes = list(range(len(xs)))
        axes = sorted({a % len(xs) for a in axes})
        if axes != list(range(axes[0], axes[-1] + 1)):
            raise imp.error(node, f"reduces the axes {axes}, which are not consecutive; only a reduction over "
                                  "consecutive axes is modelled (transpose them together first)")
        keep = bool(attrs.get("keepdims", 1))
        final = tuple(1 if i in axes else d for i, d in enumerate(xs)) if keep else tuple(
            d for i, d in enumerate(xs) if i not in axes)
        before, reduced = math.prod(xs[:axes[0]]), math.prod(xs[axes[0]:axes[-1] + 1])
        after = math.prod(xs[axes[-1] + 1:])
        if len(xs) == 4 and axes == [2, 3]:
            view, t = xs, imp.data(node, x)
        else:
            view = (1, before, reduced, after)
            t = imp.emit(node, OpKind.RESHAPE, [imp.data(node, x)], {"shape": view}, [None], suffix="view").outputs[0]
        whole = view is xs or after == 1  # the reduced elements are the whole H x W plane of the view
        pool_attrs: dict[str, Any] = {"mode": mode, "global": True} if whole else {
            "mode": mode, "kernel": (reduced, 1), "stride": (reduced, 1)}
        pooled = (view[0], view[1], 1, 1 if whole else after)
        direct = pooled == final
        t = imp.emit(node, OpKind.POOL, [t], pool_attrs, [out if direct else None]).outputs[0]
        if not direct:
            imp.emit(node, OpKind.RESHAPE, [t], {"shape": final}, [out], suffix="shape")

    return convert


def _norm_pattern(imp: ImporterState, node: NodeProto) -> None:
    """A recognised RMSNorm / decomposed layer norm (see :func:`~dlaopt.io.onnx.patterns.fuse_norms`): one ``norm``
    (layernorm) over its axis with the scale and shift that have one value per element of it; any other scale or
    shift stays an elementwise operator."""
    x, scale, shift = (node.input[j] if j < len(node.input) else "" for j in range(3))
    xs = imp.shape(node, x)
    attrs = imp.attrs(node)
    axis = int(attrs["axis"]) % len(xs)
    extras = [n for n in (scale, shift) if n]
    fits = [n for n in extras if math.prod(imp.shape(node, n)) == xs[axis]]
    kept = extras if fits == extras else []
    out = node.output[0]
    norm_attrs = {"norm": "layernorm", "axis": -1 if axis == len(xs) - 1 else axis}
    rest = extras[len(kept):]
    op = imp.emit(node, OpKind.NORM, [imp.data(node, x)] + [imp.data(node, n) for n in kept], norm_attrs,
                  [None if rest else out])
    y = op.outputs[0]
    for j, (name, function) in enumerate(zip(rest, ("mul", "add"), strict=False)):
        last = j == len(rest) - 1
        y = imp.emit(node, OpKind.ELEMENTWISE, [y, imp.data(node, name)], {"function": function},
                     [out if last else None], suffix="scale" if function == "mul" else "shift").outputs[0]


def _unary(function: str) -> Callable[[ImporterState, NodeProto], None]:
    def convert(imp: ImporterState, node: NodeProto) -> None:
        imp.emit(node, OpKind.ELEMENTWISE, [imp.data(node, node.input[0])], {"function": function}, [node.output[0]])

    return convert


def _binary(function: str) -> Callable[[ImporterState, NodeProto], None]:
    def convert(imp: ImporterState, node: NodeProto) -> None:
        imp.emit(node, OpKind.ELEMENTWISE, [imp.data(node, n) for n in node.input[:2]], {"function": function},
                 [node.output[0]])

    return convert


def _where(imp: ImporterState, node: NodeProto) -> None:
    imp.emit(node, OpKind.ELEMENTWISE, [imp.data(node, n) for n in node.input[:3]], {"function": "where"},
             [node.output[0]])


def _constant_only(what: str) -> Callable[[ImporterState, NodeProto], None]:
    def convert(imp: ImporterState, node: NodeProto) -> None:
        raise imp.error(node, f"computes its {what} from run-time data; dlaopt folds it only when its inputs are "
                              f"constants or shapes: {ONNXSIM}, or export with fixed shapes")

    return convert


CONVERTERS: dict[str, Callable[[ImporterState, NodeProto], None]] = {
    "Conv": _conv,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "BatchNormalization": _batchnorm,
    "LayerNormalization": _layernorm,
    "Softmax": _softmax,
    "Relu": _activation("relu"),
    "Sigmoid": _activation("sigmoid"),
    "Tanh": _activation("tanh"),
    "Elu": _activation("elu"),
    "Selu": _activation("selu"),
    "Gelu": _activation("gelu"),
    "HardSwish": _activation("hswish"),
    "Clip": _clip,
    "Add": _elementwise("add"),
    "Sub": _elementwise("sub"),
    "Mul": _elementwise("mul"),
    "Div": _elementwise("div"),
    "Max": _elementwise("max"),
    "Min": _elementwise("min"),
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": _global_pool("avg"),
    "GlobalMaxPool": _global_pool("max"),
    "ReduceMean": _reduce("avg"),
    "ReduceSum": _reduce("avg"),
    "ReduceMax": _reduce("max"),
    "Pow": _binary("pow"),
    "Sqrt": _unary("sqrt"),
    "Reciprocal": _unary("reciprocal"),
    "Neg": _unary("neg"),
    "Exp": _unary("exp"),
    "Log": _unary("log"),
    "Abs": _unary("abs"),
    "Equal": _binary("equal"),
    "Less": _binary("less"),
    "Where": _where,
    "ConstantOfShape": _constant_only("shape"),
    "Range": _constant_only("bounds"),
    NORM_OP: _norm_pattern,
}
