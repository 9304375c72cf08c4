"""Independent check that a tiled pinning graph covers every operator (used by tests and the evaluator).

It does not reuse the tiler's region functions: what a tile needs is derived from the operator's loop nest, each
input index written as an affine expression of the loop variables and evaluated by interval arithmetic over the
tile's loop ranges (exact flat-index runs for reshapes, exact index sets for tile and repeat). For every original
operator it checks that the tiles' written buffers partition each output exactly, that per output chunk the
reduction ranges partition the reduction dimension (produced first, then updated in place), that every tile reads
buffers covering the inputs it needs (weights included), and that the tiles' MACs sum to the operator's.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence

import numpy as np

from dlaopt.formulations.pinning.boxes import Range, box_text, intersection_volume, volume
from dlaopt.formulations.pinning.data import Box, PinningGraph
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind

__all__ = ["verify_tiling"]

_CONV_KINDS = (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D)

_Affine = tuple[dict[str, int], int]  # ({loop variable: coefficient}, constant)


def _span(expr: _Affine, ranges: dict[str, Range], size: int) -> Range | None:
    coefs, const = expr
    lo = hi = const
    for v, c in coefs.items():
        a, b = ranges[v][0], ranges[v][1] - 1
        lo += c * a if c >= 0 else c * b
        hi += c * b if c >= 0 else c * a
    lo, hi = max(lo, 0), min(hi + 1, size)
    return (lo, hi) if lo < hi else None


def _access(exprs: Sequence[_Affine], ranges: dict[str, Range], shape: Sequence[int]) -> list[Box]:
    box = []
    for e, d in zip(exprs, shape, strict=True):
        s = _span(e, ranges, d)
        if s is None:
            return []
        box.append(s)
    return [tuple(box)]


def _flat_runs(box: Box, shape: Sequence[int]) -> list[Range]:
    """The flat index set of ``box`` as maximal contiguous runs [start, end)."""
    rank = len(shape)
    strides = [math.prod(shape[i + 1:]) for i in range(rank)]
    j = rank - 1  # innermost axis the box does not fully cover; everything after it is full
    while j > 0 and box[j] == (0, shape[j]):
        j -= 1
    length = (box[j][1] - box[j][0]) * strides[j]
    starts = np.zeros(1, dtype=np.int64)
    for i in range(j):
        starts = (starts[:, None] + np.arange(box[i][0], box[i][1], dtype=np.int64)[None, :] * strides[i]).ravel()
    starts = starts + box[j][0] * strides[j]
    runs: list[Range] = []
    for s in starts.tolist():
        if runs and runs[-1][1] == s:
            runs[-1] = (runs[-1][0], s + length)
        else:
            runs.append((s, s + length))
    return runs


def _index_runs(indices: np.ndarray) -> list[Range]:
    """The distinct values of ``indices`` as maximal contiguous runs [start, end)."""
    runs: list[Range] = []
    for v in np.unique(indices).tolist():
        if runs and runs[-1][1] == v:
            runs[-1] = (runs[-1][0], v + 1)
        else:
            runs.append((v, v + 1))
    return runs


def _flat_boxes(shape: Sequence[int], f0: int, f1: int) -> list[Box]:
    """Exact decomposition of the flat range [f0, f1) of ``shape`` into disjoint boxes."""
    if f0 >= f1:
        return []
    if len(shape) == 1:
        return [((f0, f1),)]
    inner = math.prod(shape[1:])
    a0, r0 = divmod(f0, inner)
    a1, r1 = divmod(f1, inner)
    if a0 == a1:
        return [((a0, a0 + 1),) + b for b in _flat_boxes(shape[1:], r0, r1)]
    out: list[Box] = []
    if r0:
        out += [((a0, a0 + 1),) + b for b in _flat_boxes(shape[1:], r0, inner)]
        a0 += 1
    if a1 > a0:
        out.append(((a0, a1),) + tuple((0, d) for d in shape[1:]))
    if r1:
        out += [((a1, a1 + 1),) + b for b in _flat_boxes(shape[1:], 0, r1)]
    return out


def _reduction_dim(op: Operator) -> tuple[str | None, int]:
    """The reduction dimension a tile of ``op`` may cover in part, and its size."""
    if op.kind in _CONV_KINDS:
        return "C", op.dims["C"]
    if op.kind == OpKind.MATMUL:
        return "K", op.dims["K"]
    if op.kind == OpKind.POOL:
        return "R", op.dims["R"]
    return None, 0


def _required(op: Operator, wl: Workload, out_boxes: dict[str, Box], red: Range | None) -> list[tuple[str, Box]]:
    """(input tensor, box) pairs a tile writing ``out_boxes`` over reduction range ``red`` must read."""
    shapes = {t: wl.tensors[t].shape for t in op.tensors}
    a = op.attrs
    need: list[tuple[str, Box]] = []
    if op.kind in _CONV_KINDS:
        box = out_boxes[op.outputs[0]]
        d = op.dims
        x, w = op.inputs
        (sh, sw), (dh, dw), (pt, pl, _, _) = a["stride"], a["dilation"], a["padding"]
        c_rng = red or (0, d["C"])
        ranges = {"n": box[0], "p": box[2], "q": box[3], "c": c_rng, "r": (0, d["R"]), "s": (0, d["S"])}
        rows, cols = ({"p": sh, "r": dh}, -pt), ({"q": sw, "s": dw}, -pl)
        groups = range(box[1][0] // d["K"], (box[1][1] - 1) // d["K"] + 1)
        for g in groups:  # loop over the groups the tile's output channels belong to
            k_rng = (max(box[1][0], g * d["K"]), min(box[1][1], (g + 1) * d["K"]))
            rg = {**ranges, "k": k_rng}
            for b in _access([({"n": 1}, 0), ({"c": 1}, g * d["C"]), rows, cols], rg, shapes[x]):
                need.append((x, b))
            for b in _access([({"k": 1}, 0), ({"c": 1}, 0), ({"r": 1}, 0), ({"s": 1}, 0)], rg, shapes[w]):
                need.append((w, b))
        return need
    if op.kind == OpKind.MATMUL:
        box = out_boxes[op.outputs[0]]
        nb = len(box) - 2
        ranges = {f"b{i}": box[i] for i in range(nb)}
        ranges.update(m=box[-2], n=box[-1], k=red or (0, op.dims["K"]))
        for t, last in zip(op.inputs, (("m", "k"), ("k", "n")), strict=True):
            shp = shapes[t]
            off = nb - (len(shp) - 2)
            exprs: list[_Affine] = [({}, 0) if shp[i] == 1 else ({f"b{off + i}": 1}, 0) for i in range(len(shp) - 2)]
            exprs += [({last[0]: 1}, 0), ({last[1]: 1}, 0)]
            need += [(t, b) for b in _access(exprs, ranges, shp)]
        return need
    if op.kind == OpKind.POOL:
        box = out_boxes[op.outputs[0]]
        x = op.inputs[0]
        if a["global"]:
            (sh, sw), (pt, pl) = (1, 1), (0, 0)
        else:
            (sh, sw), (pt, pl) = a["stride"], a["padding"][:2]
        ranges = {"n": box[0], "c": box[1], "p": box[2], "q": box[3], "r": red or (0, op.dims["R"]),
                  "s": (0, op.dims["S"])}
        exprs = [({"n": 1}, 0), ({"c": 1}, 0), ({"p": sh, "r": 1}, -pt), ({"q": sw, "s": 1}, -pl)]
        return [(x, b) for b in _access(exprs, ranges, shapes[x])]
    if op.kind == OpKind.SPLIT:
        ax = a["axis"] % len(shapes[op.inputs[0]])
        x = op.inputs[0]
        offsets = np.concatenate([[0], np.cumsum(a["sizes"])]).tolist()
        for j, out in enumerate(op.outputs):
            if out not in out_boxes:
                continue
            box = out_boxes[out]
            ranges = {f"e{i}": r for i, r in enumerate(box)}
            exprs = [({f"e{i}": 1}, offsets[j] if i == ax else 0) for i in range(len(box))]
            need += [(x, b) for b in _access(exprs, ranges, shapes[x])]
        return need
    box = out_boxes[op.outputs[0]]
    rank = len(box)
    ranges = {f"e{i}": r for i, r in enumerate(box)}
    ident: list[_Affine] = [({f"e{i}": 1}, 0) for i in range(rank)]
    if op.kind == OpKind.ELEMENTWISE:
        for t in op.inputs:
            shp = shapes[t]
            off = rank - len(shp)
            exprs = [({}, 0) if dd == 1 else ({f"e{off + i}": 1}, 0) for i, dd in enumerate(shp)]
            need += [(t, b) for b in _access(exprs, ranges, shp)]
        return need
    if op.kind == OpKind.ACTIVATION:
        return [(op.inputs[0], b) for b in _access(ident, ranges, shapes[op.inputs[0]])]
    if op.kind in (OpKind.SOFTMAX, OpKind.NORM):
        ax = a["axis"] % rank
        exprs = list(ident)
        if op.kind == OpKind.SOFTMAX or a["norm"] == "layernorm":  # the reduction over the whole axis
            ranges["red"] = (0, shapes[op.inputs[0]][ax])
            exprs[ax] = ({"red": 1}, 0)
        need += [(op.inputs[0], b) for b in _access(exprs, ranges, shapes[op.inputs[0]])]
        for t in op.inputs[1:]:  # scale / shift: indexed (flat) by the normalised axis' output index
            need += [(t, b) for b in _flat_boxes(shapes[t], box[ax][0], box[ax][1])]
        return need
    if op.kind == OpKind.CONCAT:
        ax = a["axis"] % rank
        off = 0
        for t in op.inputs:
            exprs = [({f"e{i}": 1}, -off if i == ax else 0) for i in range(rank)]
            need += [(t, b) for b in _access(exprs, ranges, shapes[t])]
            off += shapes[t][ax]
        return need
    if op.kind == OpKind.SLICE:
        exprs = [({f"e{i}": sp}, st) for i, (st, sp) in enumerate(zip(a["starts"], a["steps"], strict=True))]
        return [(op.inputs[0], b) for b in _access(exprs, ranges, shapes[op.inputs[0]])]
    if op.kind == OpKind.TRANSPOSE:
        perm = a["perm"]
        exprs = [({f"e{perm.index(i)}": 1}, 0) for i in range(rank)]
        return [(op.inputs[0], b) for b in _access(exprs, ranges, shapes[op.inputs[0]])]
    if op.kind == OpKind.RESHAPE:
        x = op.inputs[0]
        for f0, f1 in _flat_runs(box, shapes[op.outputs[0]]):
            need += [(x, b) for b in _flat_boxes(shapes[x], f0, f1)]
        return need
    if op.kind in (OpKind.TILE, OpKind.REPEAT):  # not affine: the exact index set per axis, as runs
        x = op.inputs[0]
        per_axis = []
        for i, ((lo, hi), d) in enumerate(zip(box, shapes[x], strict=True)):
            idx = np.arange(lo, hi)
            if op.kind == OpKind.TILE:
                idx = idx % d
            elif i == a["axis"] % rank:
                idx = idx // a["repeats"]
            per_axis.append(_index_runs(idx))
        return [(x, tuple(b)) for b in itertools.product(*per_axis)]
    raise AssertionError(op.kind)  # pragma: no cover


def _partition_problem(shape: Sequence[int], regions: Sequence[Box]) -> str | None:
    """Why ``regions`` do not partition a tensor of ``shape`` (None if they do)."""
    for r in regions:
        if len(r) != len(shape) or any(not 0 <= lo < hi <= d for (lo, hi), d in zip(r, shape, strict=False)):
            return f"region {box_text(r)} is not a non-empty box inside shape {list(shape)}"
    cuts = [sorted({0, d} | {r[a][0] for r in regions} | {r[a][1] for r in regions}) for a, d in enumerate(shape)]
    count = np.zeros([len(c) - 1 for c in cuts], dtype=np.int32)
    for r in regions:
        count[tuple(slice(bisect.bisect_left(c, lo), bisect.bisect_left(c, hi)) for c, (lo, hi) in
                    zip(cuts, r, strict=True))] += 1
    if (count > 1).any():
        return "chunks overlap"
    if (count == 0).any():
        return "chunks leave part of the tensor uncovered"
    return None


def verify_tiling(workload: Workload, graph: PinningGraph) -> list[str]:
    """Independent coverage check of a (tiled) pinning graph; returns human-readable violations ([] = valid).

    For every operator: its steps' written buffers partition each output tensor, each output chunk's reduction
    ranges partition the reduction dimension (the first tile produces the chunk, later ones read and update it,
    all consecutive), every step reads chunks covering the input region its output box and reduction range need
    (weights included), and the tiles' MACs add up to the operator's."""
    problems: list[str] = []
    tensors = workload.tensors
    by_tensor: dict[str, list[int]] = {}
    for b, buf in enumerate(graph.buffers):
        if buf.tensor not in tensors:
            problems.append(f"buffer '{buf.name}' holds unknown tensor '{buf.tensor}'")
            continue
        by_tensor.setdefault(buf.tensor, []).append(b)
    for name, ids in by_tensor.items():
        why = _partition_problem(tensors[name].shape, [graph.buffers[b].region for b in ids])
        if why:
            problems.append(f"the buffers of tensor '{name}' do not partition it: {why}")
    steps_of: dict[str, list[int]] = {}
    for m, st in enumerate(graph.steps):
        steps_of.setdefault(st.op, []).append(m)
    known = {op.name for op in workload.operators}
    for name in steps_of:
        if name not in known:
            problems.append(f"steps of unknown operator '{name}'")
    last = -1
    for op in workload.operators:
        ms = steps_of.get(op.name, [])
        if not ms:
            problems.append(f"operator '{op.name}' has no step")
            continue
        if ms[-1] - ms[0] != len(ms) - 1 or ms[0] < last:
            problems.append(f"the steps of operator '{op.name}' are not consecutive at its place in the schedule")
        last = ms[-1]
        problems += _verify_operator(workload, graph, op, ms, by_tensor)
    return problems


def _verify_operator(wl: Workload, graph: PinningGraph, op: Operator, ms: list[int],
                     by_tensor: dict[str, list[int]]) -> list[str]:
    problems: list[str] = []
    red_dim, red_size = _reduction_dim(op)
    operands = set(op.tensors)
    writers: dict[int, list[int]] = {}
    reds: dict[int, Range | None] = {}
    for m in ms:
        st = graph.steps[m]
        tile = st.tile or {}
        red = tile.get("reduce")
        if red is not None:
            red = (int(red[0]), int(red[1]))  # type: ignore[index]
            if red_dim is None or tile.get("dim") != red_dim or not 0 <= red[0] < red[1] <= red_size:
                problems.append(f"step '{st.name}': reduction {tile.get('dim')}{list(red)} is not a range of "
                                f"{op.kind.value} dimension {red_dim} (size {red_size})")
                red = None
            elif red == (0, red_size):
                red = None
        reds[m] = red
        regions: dict[str, list[Box]] = {}
        for b in st.writes:
            buf = graph.buffers[b]
            if buf.tensor not in op.outputs:
                problems.append(f"step '{st.name}' writes '{buf.name}', which is not an output of '{op.name}'")
                continue
            writers.setdefault(b, []).append(m)
            regions.setdefault(buf.tensor, []).append(buf.region)
        out_boxes: dict[str, Box] = {}
        for t, regs in regions.items():
            bbox = tuple((min(r[a][0] for r in regs), max(r[a][1] for r in regs)) for a in range(len(regs[0])))
            if sum(volume(r) for r in regs) != volume(bbox):
                problems.append(f"step '{st.name}': the chunks it writes of '{t}' do not form a box")
            out_boxes[t] = bbox
        if not out_boxes:
            problems.append(f"step '{st.name}' writes no output of '{op.name}'")
            continue
        have: dict[str, list[Box]] = {}
        for b in st.reads:
            buf = graph.buffers[b]
            if buf.tensor not in operands:
                problems.append(f"step '{st.name}' reads '{buf.name}', which is no operand of '{op.name}'")
            have.setdefault(buf.tensor, []).append(buf.region)
        for t, box in _required(op, wl, out_boxes, red):
            got = sum(intersection_volume(box, h) for h in have.get(t, []))
            if got < volume(box):
                problems.append(f"step '{st.name}' needs {t}{box_text(box)} but its reads cover only {got} of "
                                f"those {volume(box)} elements")
    for t in op.outputs:
        missing = [graph.buffers[b].name for b in by_tensor.get(t, []) if b not in writers]
        if missing:
            problems.append(f"operator '{op.name}' never writes {len(missing)} chunk(s) of '{t}' "
                            f"(e.g. '{missing[0]}'): its tiles do not cover the output")
    for b, wm in writers.items():
        name = graph.buffers[b].name
        rs = [reds[m] for m in wm]
        if len(wm) > 1 or rs[0] is not None:
            if any(r is None for r in rs):
                problems.append(f"chunk '{name}' is written by {len(wm)} steps of '{op.name}' without reduction "
                                "ranges: overlapping tiles")
            else:
                spans = sorted(rs)  # type: ignore[type-var]
                pos = 0
                for lo, hi in spans:  # type: ignore[misc]
                    if lo != pos:
                        break
                    pos = hi
                if pos != red_size or len(spans) != len(set(spans)):
                    problems.append(f"the reduction ranges of the steps writing '{name}' do not partition "
                                    f"{red_dim} = [0, {red_size}): {spans}")
            if wm[-1] - wm[0] != len(wm) - 1:
                problems.append(f"the tiles of output chunk '{name}' are not consecutive")
        if b in graph.steps[wm[0]].reads:
            problems.append(f"step '{graph.steps[wm[0]].name}' reads '{name}' before anything wrote it")
        for m in wm[1:]:
            if b not in graph.steps[m].reads:
                problems.append(f"step '{graph.steps[m].name}' updates partial sum '{name}' without reading it")
    macs = sum(graph.steps[m].macs for m in ms)
    if macs != op.macs:
        problems.append(f"the tiles of '{op.name}' do {macs} MACs, the operator {op.macs}")
    return problems
