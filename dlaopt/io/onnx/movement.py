"""Converters of the data-movement operators: concat, reshapes (``Reshape``, ``Flatten``, ``Squeeze``,
``Unsqueeze``), transpose, split, slice, tile, expand, gather and pad, and the nodes that are removed."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from onnx import NodeProto

from dlaopt.io.onnx.common import ONNXSIM, ImporterState, Shape, unused_extra_outputs
from dlaopt.io.onnx.constants import resolve_reshape
from dlaopt.workload.operator import OpKind


def _concat(imp: ImporterState, node: NodeProto) -> None:
    ins = [n for n in node.input if n]
    rank = len(imp.shape(node, ins[0]))
    axis = int(imp.attrs(node)["axis"]) % rank
    if len(ins) == 1:
        imp.alias(node, node.output[0], ins[0])
        return
    imp.emit(node, OpKind.CONCAT, [imp.data(node, n) for n in ins], {"axis": axis}, [node.output[0]])


def _reshape_to(imp: ImporterState, node: NodeProto, target: Shape | None) -> None:
    """Reshape ``input[0]`` into ``target``; None: ONNX's inferred output shape (an error when it is open)."""
    x, out = node.input[0], node.output[0]
    if target is None:
        inferred = imp.inferred.get(out)
        if inferred is None or None in inferred:
            raise imp.error(node, f"has a target shape that could not be resolved; {ONNXSIM}, or export with "
                                  "fixed shapes")
        target = tuple(int(d) for d in inferred)  # type: ignore[arg-type]
    if target == imp.shape(node, x):
        imp.alias(node, out, x)
        return
    imp.emit(node, OpKind.RESHAPE, [imp.data(node, x)], {"shape": target}, [out])


def _reshape(imp: ImporterState, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    name = imp.input(node, 1)
    target = None
    if name is not None and name in imp.values:
        spec = [int(v) for v in np.asarray(imp.values[name]).reshape(-1)]
        try:
            target = resolve_reshape(xs, spec, bool(imp.attrs(node).get("allowzero", 0)))
        except ValueError as exc:
            raise imp.error(node, f"{exc}") from None
    _reshape_to(imp, node, target)


def _flatten(imp: ImporterState, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    axis = int(imp.attrs(node).get("axis", 1))
    axis = axis + len(xs) if axis < 0 else axis
    _reshape_to(imp, node, (math.prod(xs[:axis]), math.prod(xs[axis:])))


def _squeeze(imp: ImporterState, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    axes = _squeeze_axes(imp, node)
    if axes is None:
        _reshape_to(imp, node, tuple(d for d in xs if d != 1))
        return
    drop = {a % len(xs) for a in axes}
    _reshape_to(imp, node, tuple(d for i, d in enumerate(xs) if i not in drop))


def _unsqueeze(imp: ImporterState, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    axes = _squeeze_axes(imp, node)
    if axes is None:
        raise imp.error(node, "has no axes")
    out = list(xs)
    rank = len(xs) + len(axes)
    for ax in sorted(a % rank for a in axes):
        out.insert(ax, 1)
    _reshape_to(imp, node, tuple(out))


def _squeeze_axes(imp: ImporterState, node: NodeProto) -> list[int] | None:
    attrs = imp.attrs(node)
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    value = imp.const(node, 1, "axes")
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _transpose(imp: ImporterState, node: NodeProto) -> None:
    rank = len(imp.shape(node, node.input[0]))
    perm = tuple(int(p) for p in imp.attrs(node).get("perm", range(rank - 1, -1, -1)))
    if perm == tuple(range(rank)):
        imp.alias(node, node.output[0], node.input[0])
        return
    imp.emit(node, OpKind.TRANSPOSE, [imp.data(node, node.input[0])], {"perm": perm}, [node.output[0]])


def _split(imp: ImporterState, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    attrs = imp.attrs(node)
    axis = int(attrs.get("axis", 0)) % len(xs)
    outs = list(node.output)
    given = imp.const(node, 1, "split sizes") if imp.opset >= 13 else attrs.get("split")
    if given is not None:
        sizes = [int(v) for v in np.asarray(given).reshape(-1)]
    else:
        parts = int(attrs.get("num_outputs", len(outs)))
        chunk = -(-xs[axis] // parts)
        sizes = [chunk] * (parts - 1) + [xs[axis] - chunk * (parts - 1)]
    if len(sizes) != len(outs):
        raise imp.error(node, f"splits into {len(sizes)} parts but has {len(outs)} outputs")
    if len(outs) == 1:
        imp.alias(node, outs[0], node.input[0])
        return
    imp.emit(node, OpKind.SPLIT, [imp.data(node, node.input[0])], {"axis": axis, "sizes": sizes}, outs)


def _slice(imp: ImporterState, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    if imp.opset < 10:
        attrs = imp.attrs(node)
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts, ends = imp.const(node, 1, "starts"), imp.const(node, 2, "ends")
        axes, steps = imp.const(node, 3, "axes"), imp.const(node, 4, "steps")
    starts_l = [int(v) for v in np.asarray(starts).reshape(-1)]
    ends_l = [int(v) for v in np.asarray(ends).reshape(-1)]
    axes_l = list(range(len(starts_l))) if axes is None else [int(v) for v in np.asarray(axes).reshape(-1)]
    steps_l = [1] * len(starts_l) if steps is None else [int(v) for v in np.asarray(steps).reshape(-1)]
    lo, hi, st = [0] * len(xs), list(xs), [1] * len(xs)
    for ax, s, e, step in zip(axes_l, starts_l, ends_l, steps_l, strict=True):
        ax %= len(xs)
        d = xs[ax]
        if step <= 0:
            raise imp.error(node, f"has step {step} on axis {ax}; only positive steps are modelled")
        lo[ax] = min(max(s + d if s < 0 else s, 0), d)
        hi[ax] = min(max(e + d if e < 0 else e, 0), d)
        st[ax] = step
        if hi[ax] <= lo[ax]:
            raise imp.error(node, f"selects nothing on axis {ax} ([{s}:{e}] of a dimension of size {d})")
    if lo == [0] * len(xs) and hi == list(xs) and st == [1] * len(xs):
        imp.alias(node, node.output[0], node.input[0])
        return
    imp.emit(node, OpKind.SLICE, [imp.data(node, node.input[0])], {"starts": lo, "ends": hi, "steps": st},
             [node.output[0]])


def _tile(imp: ImporterState, node: NodeProto) -> None:
    reps = [int(v) for v in np.asarray(imp.const(node, 1, "repeats")).reshape(-1)]
    if all(r == 1 for r in reps):
        imp.alias(node, node.output[0], node.input[0])
        return
    imp.emit(node, OpKind.TILE, [imp.data(node, node.input[0])], {"reps": reps}, [node.output[0]])


def _no_op(imp: ImporterState, node: NodeProto) -> None:
    if node.op_type == "Dropout":
        unused_extra_outputs(imp, node, "mask")
    imp.alias(node, node.output[0], node.input[0])


def _expand(imp: ImporterState, node: NodeProto) -> None:
    """``Expand`` on data: a ``tile`` of the broadcast axes (after a ``reshape`` adding leading axes if needed)."""
    x, out = node.input[0], node.output[0]
    xs = imp.shape(node, x)
    target = [int(v) for v in np.asarray(imp.const(node, 1, "shape")).reshape(-1)]
    rank = max(len(xs), len(target))
    padded = (1,) * (rank - len(xs)) + tuple(xs)
    target = [1] * (rank - len(target)) + target
    if any(d != t and d != 1 and t != 1 for d, t in zip(padded, target, strict=True)):
        raise imp.error(node, f"cannot broadcast {list(xs)} to {target}")
    final = tuple(max(d, t) for d, t in zip(padded, target, strict=True))
    reps = [f // d for f, d in zip(final, padded, strict=True)]
    t = imp.data(node, x)
    if padded != xs:
        t = imp.emit(node, OpKind.RESHAPE, [t], {"shape": padded}, [None if any(r != 1 for r in reps) else out],
                     suffix="rank").outputs[0]
    if all(r == 1 for r in reps):
        if padded == xs:
            imp.alias(node, out, x)
        return
    imp.emit(node, OpKind.TILE, [t], {"reps": reps}, [out])


def _gather(imp: ImporterState, node: NodeProto) -> None:
    """An embedding lookup (constant table, indices computed) reads only the gathered rows: the table is declared
    with the shape of those rows and a ``reshape`` copies them into the output. Constant indices on data in
    arithmetic progression are a ``slice`` (then a ``reshape`` when the index is a scalar or not 1-D)."""
    data, indices, out = node.input[0], node.input[1], node.output[0]
    axis = int(imp.attrs(node).get("axis", 0))
    ds = imp.shape(node, data)
    axis %= len(ds)
    ins = imp.shape(node, indices)
    final = tuple(ds[:axis]) + tuple(ins) + tuple(ds[axis + 1:])
    if data in imp.static and indices not in imp.static:
        if axis != 0:
            raise imp.error(node, f"looks up a constant table along axis {axis}; only lookups of rows (axis 0) "
                                  "are modelled (transpose the table in the model)")
        rows = imp.weight(data, (max(1, math.prod(ins)), *ds[1:]))
        imp.emit(node, OpKind.RESHAPE, [rows], {"shape": final}, [out])
        return
    if indices in imp.values and data not in imp.static:
        idx = np.asarray(imp.values[indices]).astype(np.int64).reshape(-1)
        idx = np.where(idx < 0, idx + ds[axis], idx)
        step = int(idx[1] - idx[0]) if idx.size > 1 else 1
        if idx.size == 0 or step <= 0 or np.any(np.diff(idx) != step) or idx.min() < 0 or idx.max() >= ds[axis]:
            raise imp.error(node, f"indexes axis {axis} with constant indices that are not an increasing arithmetic "
                                  "progression; only such indexing (a slice) is modelled — replace the node")
        starts, ends, steps = [0] * len(ds), list(ds), [1] * len(ds)
        starts[axis], ends[axis], steps[axis] = int(idx[0]), int(idx[-1]) + 1, step
        sliced = tuple(len(range(s, e, st)) for s, e, st in zip(starts, ends, steps, strict=True))
        whole = sliced == ds
        t = imp.data(node, data)
        if not whole:
            t = imp.emit(node, OpKind.SLICE, [t], {"starts": starts, "ends": ends, "steps": steps},
                         [out if sliced == final else None]).outputs[0]
        if sliced != final:
            imp.emit(node, OpKind.RESHAPE, [t], {"shape": final}, [out], suffix="squeeze" if whole else "shape")
        elif whole:
            imp.alias(node, out, data)
        return
    raise imp.error(node, "gathers with indices computed at run time from a computed tensor; only embedding "
                          "lookups (a constant table) and constant indices are modelled — make the gathered tensor "
                          "a graph input, or " + ONNXSIM)


def _pad(imp: ImporterState, node: NodeProto) -> None:
    """Zero padding of the two spatial axes read only by a Conv / MaxPool / AveragePool is folded into that
    operator's padding; any other constant padding is a ``concat`` per padded axis with blocks of the padding
    value (weight tensors)."""
    x, out = node.input[0], node.output[0]
    xs = imp.shape(node, x)
    attrs = imp.attrs(node)
    mode = attrs.get("mode", "constant")
    if imp.opset < 11:
        pads, value = [int(v) for v in attrs.get("pads", [])], float(attrs.get("value", 0.0))
    else:
        pads = [int(v) for v in np.asarray(imp.const(node, 1, "pads")).reshape(-1)]
        v = imp.const(node, 2, "padding value")
        value = 0.0 if v is None or np.asarray(v).size == 0 else float(np.asarray(v).reshape(-1)[0])
    axes = list(range(len(xs)))
    given_axes = imp.const(node, 3, "axes") if imp.opset >= 18 else None
    if given_axes is not None:
        axes = [int(a) % len(xs) for a in np.asarray(given_axes).reshape(-1)]
    if len(pads) != 2 * len(axes):
        raise imp.error(node, f"has {len(pads)} pads for {len(axes)} axes")
    lo, hi = [0] * len(xs), [0] * len(xs)
    for j, ax in enumerate(axes):
        lo[ax], hi[ax] = pads[j], pads[j + len(axes)]
    if any(p < 0 for p in lo + hi):
        raise imp.error(node, f"has negative pads {pads} (cropping), which are not modelled; use a Slice")
    if mode != "constant":
        raise imp.error(node, f"pads in '{mode}' mode, which is not modelled; only constant padding is "
                              "(replace the node or pad with zeros)")
    if not any(lo + hi):
        imp.alias(node, out, x)
        return
    readers = imp.readers.get(out, [])
    if (value == 0.0 and len(xs) == 4 and not any(lo[:2] + hi[:2]) and out not in imp.graph_outputs
            and len(readers) == 1 and imp.uses[out] == 1 and readers[0].input[0] == out
            and readers[0].op_type in ("Conv", "MaxPool", "AveragePool")):
        imp.pad_into[out] = (x, (lo[2], lo[3], hi[2], hi[3]))
        imp.shapes[out] = tuple(d + a + b for d, a, b in zip(xs, lo, hi, strict=True))
        return
    t, shape = imp.data(node, x), list(xs)
    padded = [ax for ax in range(len(xs)) if lo[ax] or hi[ax]]
    for j, ax in enumerate(padded):
        parts = []
        for side, size in (("before", lo[ax]), ("after", hi[ax])):
            if size:
                block = tuple(size if i == ax else d for i, d in enumerate(shape))
                parts.append((side, imp.weight(f"{out}.pad{ax}_{side}", block)))
        ins = ([parts[0][1]] if parts[0][0] == "before" else []) + [t] + [p for s, p in parts if s == "after"]
        last = j == len(padded) - 1
        t = imp.emit(node, OpKind.CONCAT, ins, {"axis": ax}, [out if last else None],
                     suffix="" if last else f"axis{ax}").outputs[0]
        shape[ax] += lo[ax] + hi[ax]


CONVERTERS: dict[str, Callable[[ImporterState, NodeProto], None]] = {
    "Concat": _concat,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Transpose": _transpose,
    "Split": _split,
    "Slice": _slice,
    "Tile": _tile,
    "Identity": _no_op,
    "Dropout": _no_op,
    "Cast": _no_op,
    "CastLike": _no_op,
    "Pad": _pad,
    "Gather": _gather,
    "Expand": _expand,
}
