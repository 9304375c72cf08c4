"""Operators: the nodes of a workload graph, with shape inference and loop dimensions.

Layout conventions (shared by every problem):

* activations of convolutional layers are NCHW: ``(batch, channels, height, width)``;
* conv weights are ``(K, C / groups, R, S)``; a depthwise conv has ``groups == C`` and weights ``(C * mult, 1, R, S)``;
* ``matmul`` multiplies ``a (..., M, K)`` by ``b (..., K, N)`` (batch dims broadcast, ``b`` may be a 2-D weight).

Data-movement kinds (:data:`DATA_MOVEMENT_KINDS`) only copy elements, with numpy semantics: ``concat`` (``axis``),
``reshape`` (``shape``, C order), ``transpose`` (``perm``), ``slice`` (``starts``/``ends``/``steps`` per axis),
``split`` (``axis``, ``sizes``), ``tile`` (``reps``, one positive count per axis: ``numpy.tile``, output dimension
``d·r``) and ``repeat`` (``repeats``, ``axis``: ``numpy.repeat`` along one axis, every element repeated
``repeats`` times consecutively). :mod:`dlaopt.workload.execute` runs every kind with numpy.

Loop dimensions (``Operator.dims``) name the loop nest of the operator:

* conv2d / depthwise: ``N G K C P Q R S`` — batch, groups, output channels per group, input channels per group,
  output rows, output columns, filter rows, filter columns. MACs = product of all eight.
* matmul: ``B M N K`` — batch (product of broadcast batch dims), rows, columns, contraction. MACs = B·M·N·K.
* pool: ``N C P Q R S``. Everything else: ``E`` = number of output elements.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class OpKind(StrEnum):
    CONV2D = "conv2d"
    DEPTHWISE_CONV2D = "depthwise_conv2d"
    MATMUL = "matmul"
    POOL = "pool"
    ELEMENTWISE = "elementwise"
    ACTIVATION = "activation"
    SOFTMAX = "softmax"
    NORM = "norm"
    CONCAT = "concat"
    RESHAPE = "reshape"
    TRANSPOSE = "transpose"
    SLICE = "slice"
    SPLIT = "split"
    TILE = "tile"
    REPEAT = "repeat"

    @property
    def is_data_movement(self) -> bool:
        return self in DATA_MOVEMENT_KINDS


DATA_MOVEMENT_KINDS = frozenset(
    {OpKind.CONCAT, OpKind.RESHAPE, OpKind.TRANSPOSE, OpKind.SLICE, OpKind.SPLIT, OpKind.TILE, OpKind.REPEAT}
)
ACTIVATION_FUNCTIONS = frozenset({"relu", "relu6", "gelu", "sigmoid", "tanh", "elu", "selu", "swish", "hswish"})
ELEMENTWISE_FUNCTIONS = frozenset({"add", "sub", "mul", "div", "max", "min", "pow", "equal", "less", "where",
                                   "sqrt", "reciprocal", "neg", "exp", "log", "abs"})
UNARY_ELEMENTWISE_FUNCTIONS = frozenset({"sqrt", "reciprocal", "neg", "exp", "log", "abs"})  # one input
"""``elementwise`` functions: the unary ones take one input, ``where`` (condition, then, else) three, the others
two to eight (folded left)."""
POOL_MODES = frozenset({"max", "avg"})
NORM_KINDS = frozenset({"layernorm", "batchnorm"})

# Vector operations per output element of the non-MAC kinds (used for compute-cycle estimates).
_VECTOR_OPS_PER_ELEMENT = {
    OpKind.ELEMENTWISE: 1,
    OpKind.ACTIVATION: 1,
    OpKind.SOFTMAX: 3,  # exp, sum, divide
    OpKind.NORM: 4,  # mean, variance, normalise, scale/shift
    OpKind.CONCAT: 1,
    OpKind.RESHAPE: 1,
    OpKind.TRANSPOSE: 1,
    OpKind.SLICE: 1,
    OpKind.SPLIT: 1,
    OpKind.TILE: 1,
    OpKind.REPEAT: 1,
}


class OperatorSpecError(ValueError):
    """An operator whose kind, attributes or operand shapes are inconsistent. ``key`` names the offending field."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


Shape = tuple[int, ...]


def _pair(value: Any, name: str) -> tuple[int, int]:
    """A stride, dilation or kernel size: one positive integer or two."""
    pair: tuple[int, int] | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        pair = (value, value)
    elif isinstance(value, Sequence) and len(value) == 2 and all(_is_int(v) for v in value):
        pair = (int(value[0]), int(value[1]))
    if pair is None or min(pair) < 1:
        raise OperatorSpecError(f"'{name}' must be a positive integer or a list of two, got {value!r}", name)
    return pair


def _padding(value: Any) -> tuple[int, int, int, int]:
    """Normalise padding to (top, left, bottom, right)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return (value, value, value, value)
    if isinstance(value, Sequence) and all(_is_int(v) and v >= 0 for v in value):
        if len(value) == 2:
            return (value[0], value[1], value[0], value[1])
        if len(value) == 4:
            return (value[0], value[1], value[2], value[3])
    raise OperatorSpecError(
        f"'padding' must be a non-negative integer, [pad_h, pad_w] or [top, left, bottom, right], got {value!r}",
        "padding"
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def normalize_attrs(kind: OpKind, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Fill defaults and normalise the attribute values of ``kind``; unknown attributes are an error."""
    a = dict(attrs)
    allowed: set[str]
    if kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
        allowed = {"stride", "padding", "dilation", "groups", "activation"}
        a["stride"] = _pair(a.get("stride", 1), "stride")
        a["dilation"] = _pair(a.get("dilation", 1), "dilation")
        a["padding"] = _padding(a.get("padding", 0))
        a["groups"] = int(a.get("groups", 1))
    elif kind == OpKind.MATMUL:
        allowed = {"activation"}
    elif kind == OpKind.POOL:
        allowed = {"mode", "kernel", "stride", "padding", "global"}
        a["mode"] = a.get("mode", "max")
        if a["mode"] not in POOL_MODES:
            raise OperatorSpecError(f"pool 'mode' must be one of {sorted(POOL_MODES)}, got {a['mode']!r}", "mode")
        a["global"] = bool(a.get("global", False))
        if not a["global"]:
            if "kernel" not in a:
                raise OperatorSpecError("pool needs 'kernel' (or global: true)", "kernel")
            a["kernel"] = _pair(a["kernel"], "kernel")
            a["stride"] = _pair(a.get("stride", a["kernel"]), "stride")
            a["padding"] = _padding(a.get("padding", 0))
    elif kind == OpKind.ELEMENTWISE:
        allowed = {"function", "activation"}
        a["function"] = a.get("function", "add")
        if a["function"] not in ELEMENTWISE_FUNCTIONS:
            raise OperatorSpecError(
                f"elementwise 'function' must be one of {sorted(ELEMENTWISE_FUNCTIONS)}, got {a['function']!r}",
                "function",
            )
    elif kind == OpKind.ACTIVATION:
        allowed = {"function"}
        a["function"] = a.get("function", "relu")
        if a["function"] not in ACTIVATION_FUNCTIONS:
            raise OperatorSpecError(
                f"activation 'function' must be one of {sorted(ACTIVATION_FUNCTIONS)}, got {a['function']!r}",
                "function",
            )
    elif kind == OpKind.SOFTMAX:
        allowed = {"axis"}
        a["axis"] = int(a.get("axis", -1))
    elif kind == OpKind.NORM:
        allowed = {"norm", "axis"}
        a["norm"] = a.get("norm", "layernorm")
        if a["norm"] not in NORM_KINDS:
            raise OperatorSpecError(f"norm 'norm' must be one of {sorted(NORM_KINDS)}, got {a['norm']!r}", "norm")
        a["axis"] = int(a.get("axis", -1 if a["norm"] == "layernorm" else 1))
    elif kind == OpKind.CONCAT:
        allowed = {"axis"}
        a["axis"] = int(a.get("axis", 1))
    elif kind == OpKind.RESHAPE:
        allowed = {"shape"}
        if "shape" not in a:
            raise OperatorSpecError("reshape needs 'shape'", "shape")
        a["shape"] = tuple(int(v) for v in a["shape"])
    elif kind == OpKind.TRANSPOSE:
        allowed = {"perm"}
        if "perm" not in a:
            raise OperatorSpecError("transpose needs 'perm'", "perm")
        a["perm"] = tuple(int(v) for v in a["perm"])
    elif kind == OpKind.SLICE:
        allowed = {"starts", "ends", "steps"}
        for key in ("starts", "ends"):
            if key not in a:
                raise OperatorSpecError(f"slice needs '{key}'", key)
            a[key] = tuple(int(v) for v in a[key])
        a["steps"] = tuple(int(v) for v in a.get("steps", [1] * len(a["starts"])))
    elif kind == OpKind.SPLIT:
        allowed = {"axis", "sizes"}
        a["axis"] = int(a.get("axis", 1))
        if "sizes" not in a:
            raise OperatorSpecError("split needs 'sizes'", "sizes")
        a["sizes"] = tuple(int(v) for v in a["sizes"])
    elif kind == OpKind.TILE:
        allowed = {"reps"}
        reps = a.get("reps")
        if reps is None:
            raise OperatorSpecError("tile needs 'reps' (one repetition count per axis)", "reps")
        if (isinstance(reps, str | bytes | Mapping) or not isinstance(reps, Iterable)
                or not all(_is_int(v) for v in reps)):
            raise OperatorSpecError(f"tile 'reps' must be a list of integers, got {reps!r}", "reps")
        a["reps"] = tuple(int(v) for v in reps)
    elif kind == OpKind.REPEAT:
        allowed = {"repeats", "axis"}
        for key in ("repeats", "axis"):
            if key not in a:
                raise OperatorSpecError(f"repeat needs '{key}'", key)
            if not _is_int(a[key]):
                raise OperatorSpecError(f"repeat '{key}' must be an integer, got {a[key]!r}", key)
            a[key] = int(a[key])
    else:  # pragma: no cover - exhaustive over OpKind
        raise OperatorSpecError(f"unknown operator kind {kind!r}", "kind")
    act = a.get("activation") if "activation" in allowed else None
    if act is not None and act not in ACTIVATION_FUNCTIONS:
        raise OperatorSpecError(
            f"fused 'activation' must be one of {sorted(ACTIVATION_FUNCTIONS)}, got {act!r}", "activation"
        )
    unknown = set(a) - allowed
    if unknown:
        raise OperatorSpecError(
            f"unknown attribute(s) {sorted(unknown)} for {kind.value}; allowed: {sorted(allowed)}", sorted(unknown)[0]
        )
    return a


def _conv_out(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int) -> int:
    return (size + pad_lo + pad_hi - dilation * (kernel - 1) - 1) // stride + 1


def _broadcast(shapes: Sequence[Shape]) -> Shape:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise OperatorSpecError(f"shapes {[list(s) for s in shapes]} do not broadcast", "inputs")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise OperatorSpecError(f"axis {axis} out of range for rank {rank}", "axis")
    return axis % rank


def _expect_inputs(kind: OpKind, shapes: Sequence[Shape], lo: int, hi: int | None = None) -> None:
    hi = lo if hi is None else hi
    if not lo <= len(shapes) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise OperatorSpecError(f"{kind.value} takes {want} inputs, got {len(shapes)}", "inputs")


def infer_output_shapes(kind: OpKind, attrs: Mapping[str, Any], inputs: Sequence[Shape]) -> list[Shape]:
    """Output shapes of an operator from its (normalised) attributes and input shapes."""
    if kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
        _expect_inputs(kind, inputs, 2)
        x, w = inputs
        if len(x) != 4 or len(w) != 4:
            raise OperatorSpecError("conv2d takes an NCHW input and a (K, C/groups, R, S) weight", "inputs")
        n, c, h, wd = x
        k, cg, r, s = w
        g = attrs["groups"]
        if kind == OpKind.DEPTHWISE_CONV2D and g != c:
            raise OperatorSpecError(f"depthwise_conv2d needs groups == input channels ({c}), got {g}", "groups")
        if g <= 0 or c % g or k % g:
            raise OperatorSpecError(f"groups={g} must divide input channels {c} and output channels {k}", "groups")
        if cg != c // g:
            raise OperatorSpecError(
                f"weight shape {list(w)} has {cg} input channels per group, input has {c} channels / {g} groups",
                "inputs",
            )
        (sh, sw), (dh, dw) = attrs["stride"], attrs["dilation"]
        pt, pl, pb, pr = attrs["padding"]
        p = _conv_out(h, r, sh, pt, pb, dh)
        q = _conv_out(wd, s, sw, pl, pr, dw)
        if p <= 0 or q <= 0:
            raise OperatorSpecError(f"the filter {r}x{s} does not fit the padded {h}x{wd} input", "inputs")
        return [(n, k, p, q)]
    if kind == OpKind.MATMUL:
        _expect_inputs(kind, inputs, 2)
        a, b = inputs
        if len(a) < 2 or len(b) < 2:
            raise OperatorSpecError("matmul operands need at least 2 dimensions", "inputs")
        if a[-1] != b[-2]:
            raise OperatorSpecError(f"matmul contraction mismatch: {list(a)} x {list(b)}", "inputs")
        batch = _broadcast([a[:-2] or (1,), b[:-2] or (1,)]) if (a[:-2] or b[:-2]) else ()
        return [tuple(batch) + (a[-2], b[-1])]
    if kind == OpKind.POOL:
        _expect_inputs(kind, inputs, 1)
        (x,) = inputs
        if len(x) != 4:
            raise OperatorSpecError("pool takes an NCHW input", "inputs")
        n, c, h, w = x
        if attrs["global"]:
            return [(n, c, 1, 1)]
        (r, s), (sh, sw) = attrs["kernel"], attrs["stride"]
        pt, pl, pb, pr = attrs["padding"]
        p, q = _conv_out(h, r, sh, pt, pb, 1), _conv_out(w, s, sw, pl, pr, 1)
        if p <= 0 or q <= 0:
            raise OperatorSpecError(f"the pool window {r}x{s} does not fit the {h}x{w} input", "kernel")
        return [(n, c, p, q)]
    if kind == OpKind.ELEMENTWISE:
        fn = attrs["function"]
        _expect_inputs(kind, inputs, *((1, 1) if fn in UNARY_ELEMENTWISE_FUNCTIONS else (3, 3) if fn == "where"
                                       else (2, 8)))
        return [_broadcast(inputs)]
    if kind in (OpKind.ACTIVATION, OpKind.SOFTMAX):
        _expect_inputs(kind, inputs, 1)
        if kind == OpKind.SOFTMAX:
            _axis(attrs["axis"], len(inputs[0]))
        return [inputs[0]]
    if kind == OpKind.NORM:
        _expect_inputs(kind, inputs, 1, 3)
        x = inputs[0]
        ax = _axis(attrs["axis"], len(x))
        for extra in inputs[1:]:
            if math.prod(extra) != x[ax]:
                raise OperatorSpecError(
                    f"norm scale/shift of shape {list(extra)} must have {x[ax]} elements", "inputs"
                )
        return [x]
    if kind == OpKind.CONCAT:
        _expect_inputs(kind, inputs, 1, 64)
        rank = len(inputs[0])
        ax = _axis(attrs["axis"], rank)
        for s in inputs:
            if len(s) != rank or any(s[i] != inputs[0][i] for i in range(rank) if i != ax):
                raise OperatorSpecError(
                    f"concat along axis {ax}: shapes {[list(s) for s in inputs]} differ off that axis", "inputs"
                )
        out = list(inputs[0])
        out[ax] = sum(s[ax] for s in inputs)
        return [tuple(out)]
    if kind == OpKind.RESHAPE:
        _expect_inputs(kind, inputs, 1)
        shape = attrs["shape"]
        if any(d <= 0 for d in shape) or math.prod(shape) != math.prod(inputs[0]):
            raise OperatorSpecError(f"cannot reshape {list(inputs[0])} into {list(shape)}", "shape")
        return [tuple(shape)]
    if kind == OpKind.TRANSPOSE:
        _expect_inputs(kind, inputs, 1)
        perm = attrs["perm"]
        if sorted(perm) != list(range(len(inputs[0]))):
            raise OperatorSpecError(f"perm {list(perm)} is not a permutation of the {len(inputs[0])} axes", "perm")
        return [tuple(inputs[0][p] for p in perm)]
    if kind == OpKind.SLICE:
        _expect_inputs(kind, inputs, 1)
        x = inputs[0]
        starts, ends, steps = attrs["starts"], attrs["ends"], attrs["steps"]
        if not len(starts) == len(ends) == len(steps) == len(x):
            raise OperatorSpecError(f"slice needs starts/ends/steps with one entry per axis ({len(x)})", "starts")
        out = []
        for d, lo, hi, st in zip(x, starts, ends, steps, strict=True):
            if st <= 0 or not 0 <= lo < hi <= d:
                raise OperatorSpecError(f"slice [{lo}:{hi}:{st}] is not valid for a dimension of size {d}", "starts")
            out.append(len(range(lo, hi, st)))
        return [tuple(out)]
    if kind == OpKind.SPLIT:
        _expect_inputs(kind, inputs, 1)
        x = inputs[0]
        ax = _axis(attrs["axis"], len(x))
        if sum(attrs["sizes"]) != x[ax] or any(v <= 0 for v in attrs["sizes"]):
            raise OperatorSpecError(f"split sizes {list(attrs['sizes'])} must be positive and sum to {x[ax]}", "sizes")
        return [tuple(v if i == ax else x[i] for i in range(len(x))) for v in attrs["sizes"]]
    if kind == OpKind.TILE:
        _expect_inputs(kind, inputs, 1)
        x = inputs[0]
        reps = attrs["reps"]
        if len(reps) != len(x) or any(r <= 0 for r in reps):
            raise OperatorSpecError(
                f"tile 'reps' {list(reps)} must hold one positive count per axis of {list(x)}", "reps"
            )
        return [tuple(d * r for d, r in zip(x, reps, strict=True))]
    if kind == OpKind.REPEAT:
        _expect_inputs(kind, inputs, 1)
        x = inputs[0]
        ax = _axis(attrs["axis"], len(x))
        if attrs["repeats"] <= 0:
            raise OperatorSpecError(f"repeat 'repeats' must be positive, got {attrs['repeats']}", "repeats")
        return [tuple(d * attrs["repeats"] if i == ax else d for i, d in enumerate(x))]
    raise OperatorSpecError(f"unknown operator kind {kind!r}", "kind")  # pragma: no cover


def loop_dims(
    kind: OpKind, attrs: Mapping[str, Any], inputs: Sequence[Shape], outputs: Sequence[Shape]
) -> dict[str, int]:
    """The loop dimensions of the operator's loop nest (see the module docstring)."""
    if kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
        (n, c, _, _), (k, cg, r, s) = inputs[0], inputs[1]
        g = attrs["groups"]
        _, _, p, q = outputs[0]
        return {"N": n, "G": g, "K": k // g, "C": cg, "P": p, "Q": q, "R": r, "S": s}
    if kind == OpKind.MATMUL:
        out = outputs[0]
        return {"B": math.prod(out[:-2]) if len(out) > 2 else 1, "M": out[-2], "N": out[-1], "K": inputs[0][-1]}
    if kind == OpKind.POOL:
        n, c, p, q = outputs[0]
        if attrs["global"]:
            r, s = inputs[0][2], inputs[0][3]
        else:
            r, s = attrs["kernel"]
        return {"N": n, "C": c, "P": p, "Q": q, "R": r, "S": s}
    return {"E": sum(math.prod(o) for o in outputs)}


@dataclass(frozen=True)
class Operator:
    """One node of a workload: ``kind`` applied to ``inputs`` producing ``outputs`` (tensor names).

    ``dims`` (loop dimensions) and ``macs`` are derived from the operand shapes by :meth:`Workload.validate`;
    ``attrs`` are normalised by :func:`normalize_attrs`.
    """

    name: str
    kind: OpKind
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    dims: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", OpKind(self.kind))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))

    @property
    def macs(self) -> int:
        """Multiply-accumulates (zero for operators that are not conv/matmul)."""
        if self.kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.MATMUL):
            return math.prod(self.dims.values())
        return 0

    @property
    def vector_ops(self) -> int:
        """Non-MAC element operations (pool window reductions, elementwise, activation, normalisation, copies)."""
        if self.kind == OpKind.POOL:
            return math.prod(self.dims.values())
        if self.kind in _VECTOR_OPS_PER_ELEMENT:
            return _VECTOR_OPS_PER_ELEMENT[self.kind] * self.dims.get("E", 0)
        return 0

    @property
    def tensors(self) -> tuple[str, ...]:
        return self.inputs + self.outputs
