"""Static evaluation (constant folding): the values of the nodes that compute only from initializers, constants and
tensor shapes, with numpy, and the shapes of those too large to evaluate."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from onnx import NodeProto, helper, numpy_helper

from dlaopt.io.onnx.common import MAX_EVAL, ImporterState, Shape

_BROADCASTING = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater", "Where",
                           "And", "Or"})
_SAME_SHAPE = frozenset({"Cast", "Identity", "Neg", "Abs", "Sqrt", "Exp", "Log", "Reciprocal", "Not", "Floor"})


def static_shape(imp: ImporterState, node: NodeProto) -> Shape | None:
    """The output shape of a static node whose value is too large to evaluate (when ONNX's inference left it open):
    lookups, broadcasts and the layout changes constant subgraphs make of them."""
    shapes = [imp.shapes[n] for n in node.input if n]
    attrs = imp.attrs(node)
    if node.op_type == "Gather":
        data, idx = shapes[0], shapes[1]
        axis = int(attrs.get("axis", 0)) % len(data)
        return (*data[:axis], *idx, *data[axis + 1:])
    if node.op_type in _BROADCASTING:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    if node.op_type in _SAME_SHAPE:
        return shapes[0]
    if node.op_type == "Expand":
        target = tuple(int(v) for v in np.asarray(imp.values[node.input[1]]).reshape(-1))
        return tuple(int(d) for d in np.broadcast_shapes(shapes[0], target))
    if node.op_type == "Transpose":
        perm = attrs.get("perm", range(len(shapes[0]) - 1, -1, -1))
        return tuple(shapes[0][p] for p in perm)
    if node.op_type == "Unsqueeze":
        out = list(shapes[0])
        axes = _axes(node, imp, [None] + [imp.values.get(n) for n in node.input[1:]]) or []
        for ax in sorted(a % (len(out) + len(axes)) for a in axes):
            out.insert(ax, 1)
        return tuple(out)
    if node.op_type == "Reshape":
        spec = [int(v) for v in np.asarray(imp.values[node.input[1]]).reshape(-1)]
        return resolve_reshape(shapes[0], spec, bool(attrs.get("allowzero", 0)))
    return None


def constant_value(node: NodeProto) -> np.ndarray:
    (attr,) = node.attribute
    value = helper.get_attribute_value(attr)
    if attr.name == "value":
        return numpy_helper.to_array(value)
    if attr.name in ("value_float", "value_floats"):
        return np.asarray(value, dtype=np.float32)
    if attr.name in ("value_int", "value_ints"):
        return np.asarray(value, dtype=np.int64)
    raise ValueError(f"Constant with attribute {attr.name}")


_Evaluator = Callable[[ImporterState, NodeProto, Sequence[Any]], list[Any]]


def _axes(node: NodeProto, imp: ImporterState, args: Sequence[np.ndarray | None]) -> list[int] | None:
    """``axes`` of Squeeze/Unsqueeze/ReduceProd: the attribute (old opsets) or the second input."""
    a = imp.attrs(node)
    if "axes" in a:
        return [int(v) for v in a["axes"]]
    if len(args) > 1 and args[1] is not None:
        return [int(v) for v in np.asarray(args[1]).reshape(-1)]
    return None


def _ev_unsqueeze(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    x = np.asarray(args[0])
    axes = _axes(node, imp, args) or []
    rank = x.ndim + len(axes)
    for ax in sorted(a % rank for a in axes):
        x = np.expand_dims(x, ax)
    return [x]


def _ev_squeeze(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    x = np.asarray(args[0])
    axes = _axes(node, imp, args)
    return [np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(a % x.ndim for a in axes))]


def _ev_slice(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    x = np.asarray(args[0])
    a = imp.attrs(node)
    if imp.opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = args[1], args[2]
        axes = args[3] if len(args) > 3 else None
        steps = args[4] if len(args) > 4 else None
    starts = [int(v) for v in np.asarray(starts).reshape(-1)]
    ends = [int(v) for v in np.asarray(ends).reshape(-1)]
    axes = list(range(len(starts))) if axes is None else [int(v) for v in np.asarray(axes).reshape(-1)]
    steps = [1] * len(starts) if steps is None else [int(v) for v in np.asarray(steps).reshape(-1)]
    index = [slice(None)] * x.ndim
    for ax, s, e, st in zip(axes, starts, ends, steps, strict=True):
        index[ax % x.ndim] = slice(s, e, st)
    return [x[tuple(index)]]


def _ev_div(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    a, b = np.asarray(args[0]), np.asarray(args[1])
    if np.issubdtype(a.dtype, np.integer):
        return [np.trunc(a / b).astype(a.dtype)]
    return [a / b]


def _ev_shape(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    shape = imp.shapes[node.input[0]]
    a = imp.attrs(node)
    return [np.array(shape[a.get("start", 0):a.get("end", len(shape))], dtype=np.int64)]


def _ev_constant_of_shape(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    shape = [int(v) for v in np.asarray(args[0]).reshape(-1)]
    if math.prod(shape) > MAX_EVAL:
        raise ValueError("too large to evaluate")
    value = imp.attrs(node).get("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, dtype=np.float32)
    return [np.full(shape, fill[0], dtype=fill.dtype)]


def _ev_reduce_prod(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    axes = _axes(node, imp, args)
    keep = bool(imp.attrs(node).get("keepdims", 1))
    return [np.prod(args[0], axis=None if axes is None else tuple(axes), keepdims=keep)]


def _ev_reduce(fn: Callable[..., Any]) -> _Evaluator:
    """ReduceSum / ReduceMean / ReduceMax / ReduceMin: ``axes`` as an attribute or (newer opsets) an input."""
    def evaluate(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
        axes = _axes(node, imp, args)
        keep = bool(imp.attrs(node).get("keepdims", 1))
        if not axes and imp.attrs(node).get("noop_with_empty_axes", 0):
            return [np.asarray(args[0])]
        return [np.asarray(fn(args[0], axis=tuple(axes) if axes else None, keepdims=keep))]

    return evaluate


def _ev_reshape(imp: ImporterState, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    x = np.asarray(args[0])
    spec = [int(v) for v in np.asarray(args[1]).reshape(-1)]
    return [x.reshape(resolve_reshape(x.shape, spec, bool(imp.attrs(node).get("allowzero", 0))))]


EVALUATORS: dict[str, _Evaluator] = {
    "Constant": lambda imp, node, args: [constant_value(node)],
    "Shape": _ev_shape,
    "Size": lambda imp, node, args: [np.array(math.prod(imp.shapes[node.input[0]]), dtype=np.int64)],
    "Identity": lambda imp, node, args: [args[0]],
    "Cast": lambda imp, node, args: [
        np.asarray(args[0]).astype(helper.tensor_dtype_to_np_dtype(imp.attrs(node)["to"]))],
    "Gather": lambda imp, node, args: [np.take(args[0], args[1], axis=imp.attrs(node).get("axis", 0))],
    "Unsqueeze": _ev_unsqueeze,
    "Squeeze": _ev_squeeze,
    "Concat": lambda imp, node, args: [np.concatenate(args, axis=imp.attrs(node)["axis"])],
    "Slice": _ev_slice,
    "Reshape": _ev_reshape,
    "Transpose": lambda imp, node, args: [np.transpose(args[0], imp.attrs(node).get("perm"))],
    "Add": lambda imp, node, args: [np.add(args[0], args[1])],
    "Sub": lambda imp, node, args: [np.subtract(args[0], args[1])],
    "Mul": lambda imp, node, args: [np.multiply(args[0], args[1])],
    "Div": _ev_div,
    "Neg": lambda imp, node, args: [np.negative(args[0])],
    "Sqrt": lambda imp, node, args: [np.sqrt(args[0])],
    "Max": lambda imp, node, args: [np.maximum.reduce(args)],
    "Min": lambda imp, node, args: [np.minimum.reduce(args)],
    "Equal": lambda imp, node, args: [np.equal(args[0], args[1])],
    "Not": lambda imp, node, args: [np.logical_not(args[0])],
    "Where": lambda imp, node, args: [np.where(args[0], args[1], args[2])],
    "Range": lambda imp, node, args: [np.arange(args[0], args[1], args[2])],
    "ConstantOfShape": _ev_constant_of_shape,
    "ReduceProd": _ev_reduce_prod,
    "ReduceSum": _ev_reduce(np.sum),
    "ReduceMean": _ev_reduce(np.mean),
    "ReduceMax": _ev_reduce(np.max),
    "ReduceMin": _ev_reduce(np.min),
    "Expand": lambda imp, node, args: [np.asarray(args[0]) * np.ones(
        [int(v) for v in np.asarray(args[1]).reshape(-1)], dtype=np.asarray(args[0]).dtype)],
    "Less": lambda imp, node, args: [np.less(args[0], args[1])],
    "Greater": lambda imp, node, args: [np.greater(args[0], args[1])],
    "Pow": lambda imp, node, args: [np.power(args[0], args[1])],
    "Reciprocal": lambda imp, node, args: [np.reciprocal(args[0])],
    "Exp": lambda imp, node, args: [np.exp(args[0])],
    "Log": lambda imp, node, args: [np.log(args[0])],
    "Abs": lambda imp, node, args: [np.abs(args[0])],
    "Floor": lambda imp, node, args: [np.floor(args[0])],
}


def resolve_reshape(shape: Sequence[int], spec: Sequence[int], allowzero: bool) -> Shape:
    """ONNX Reshape semantics: ``0`` copies the input's dimension (unless ``allowzero``), one ``-1`` is inferred."""
    out = [shape[i] if v == 0 and not allowzero and i < len(shape) else v for i, v in enumerate(spec)]
    if out.count(-1) > 1 or any(v < -1 for v in out):
        raise ValueError(f"invalid target shape {list(spec)}")
    if -1 in out:
        known = math.prod(v for v in out if v != -1)
        if known <= 0 or math.prod(shape) % known:
            raise ValueError(f"cannot reshape {list(shape)} into {list(spec)}")
        out[out.index(-1)] = math.prod(shape) // known
    if math.prod(out) != math.prod(shape) or any(v <= 0 for v in out):
        raise ValueError(f"cannot reshape {list(shape)} into {list(spec)}")
    return tuple(int(v) for v in out)
