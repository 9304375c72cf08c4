"""A numpy reference executor: runs a workload operator by operator with the semantics of its shape inference.

:func:`execute` runs every operator of a :class:`~dlaopt.workload.graph.Workload` in schedule order on given values
of its graph inputs and weights; :func:`random_values` draws such values; :func:`run_operator` runs one operator.
Everything is vectorised (convolutions are an im2col gather over strided windows followed by one batched matrix
product per group), so a ResNet-50 at batch 1 runs in well under a second.

Semantics (the layout conventions of :mod:`dlaopt.workload.operator`):

* ``conv2d`` / ``depthwise_conv2d`` — NCHW input, weights ``(K, C/groups, R, S)``, cross-correlation (no filter
  flip) with ``stride``, ``dilation`` and zero padding ``(top, left, bottom, right)``; output channel ``k`` belongs
  to group ``k // (K/groups)`` and reads that group's ``C/groups`` input channels. No bias (a bias is a separate
  ``elementwise`` add).
* ``matmul`` — ``numpy.matmul``: ``a (..., M, K) @ b (..., K, N)``, batch dimensions broadcast.
* ``pool`` — ``max``: the window maximum, padding never wins (padded with ``-inf``); ``avg``: the window sum divided
  by ``R·S`` — padded zeros **count** (``count_include_pad=True``, PyTorch's default; the divisor is the same for
  every window, so an average pool is a linear map, which the tiler's partial sums over window rows rely on).
  ``global``: max / mean over the whole H×W plane.
* ``elementwise`` — numpy broadcasting, folded left over 2…8 inputs: ``((x0 ∘ x1) ∘ x2) …`` with ``∘`` one of
  ``add sub mul div max min pow equal less`` (``np.add np.subtract np.multiply np.divide np.maximum np.minimum
  np.power np.equal np.less``); ``where`` is ``np.where(x0, x1, x2)``; the unary ``sqrt reciprocal neg exp log abs``
  are the numpy functions of those names (``np.negative`` for ``neg``).
* ``activation`` (and the fused ``activation`` attribute of conv, matmul and elementwise, applied to the result):
  see :data:`ACTIVATION_FORMULAS`. GELU is the tanh approximation
  ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`` (numpy has no ``erf``).
* ``softmax`` — ``exp(x − max) / Σ exp(x − max)`` along ``axis``.
* ``norm`` — scale ``γ`` and shift ``β`` are the optional 2nd and 3rd inputs (any shape with as many elements as the
  normalised axis; missing: ``γ = 1``, ``β = 0``), broadcast along ``axis``.
  ``layernorm``: ``(x − mean) / sqrt(var + 1e-5) · γ + β``, mean and (biased, population) variance over ``axis``
  only. ``batchnorm`` is the inference form with the running statistics folded into the parameters:
  ``x · γ + β`` per channel (``γ = gamma / sqrt(running_var + eps)``, ``β = beta − running_mean · γ``); no
  statistics are computed from the data.
* data movement — ``concat`` (``numpy.concatenate``), ``reshape`` (C order), ``transpose`` (``perm``), ``slice``
  (``x[s0:e0:t0, s1:e1:t1, …]``), ``split`` (consecutive pieces of ``sizes`` along ``axis``), ``tile``
  (``numpy.tile(x, reps)``) and ``repeat`` (``numpy.repeat(x, repeats, axis)``). They produce fresh arrays (never
  views of their inputs).

Every result keeps numpy's dtype promotion: float32 values give float32 results (constants are Python floats).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from dlaopt.errors import InputError
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind, infer_output_shapes, normalize_attrs
from dlaopt.workload.tensor import TensorRole

__all__ = [
    "ACTIVATION_FORMULAS",
    "LAYERNORM_EPSILON",
    "activation",
    "execute",
    "random_values",
    "run_operator",
]

LAYERNORM_EPSILON = 1e-5
"""The ε of layer normalisation: ``(x − mean) / sqrt(var + ε)``."""

_GELU_C = math.sqrt(2.0 / math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946

ACTIVATION_FORMULAS: dict[str, str] = {
    "relu": "max(x, 0)",
    "relu6": "min(max(x, 0), 6)",
    "gelu": "0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x^3)))  (tanh approximation)",
    "sigmoid": "1 / (1 + exp(-x))  (computed without overflow)",
    "tanh": "tanh(x)",
    "elu": "x if x > 0 else exp(x) - 1  (alpha = 1)",
    "selu": "1.0507009873554805·(x if x > 0 else 1.6732632423543772·(exp(x) - 1))",
    "swish": "x·sigmoid(x)  (SiLU, beta = 1)",
    "hswish": "x·relu6(x + 3) / 6",
}
"""The formula of every activation function, as implemented by :func:`activation`."""


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _relu6(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, 0.0), 6.0)


def _elu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0.0),
    "relu6": _relu6,
    "gelu": lambda x: 0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * x * x * x))),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "elu": _elu,
    "selu": lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0.0))),
    "swish": lambda x: x * _sigmoid(x),
    "hswish": lambda x: x * _relu6(x + 3.0) / 6.0,
}

_ELEMENTWISE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
    "equal": np.equal,
    "less": np.less,
}

_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sqrt": np.sqrt,
    "reciprocal": np.reciprocal,
    "neg": np.negative,
    "exp": np.exp,
    "log": np.log,
    "abs": np.abs,
}


def activation(function: str, x: np.ndarray) -> np.ndarray:
    """Apply the activation ``function`` (a key of :data:`ACTIVATION_FORMULAS`) element-wise."""
    try:
        f = _ACTIVATIONS[function]
    except KeyError:
        raise ValueError(f"unknown activation function {function!r}; known: {sorted(_ACTIVATIONS)}") from None
    return np.asarray(f(np.asarray(x)))


# ================================================================================================ compute operators
def _conv2d(x: np.ndarray, w: np.ndarray, a: Mapping[str, Any]) -> np.ndarray:
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    g = a["groups"]
    kpg = k // g
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["stride"], a["dilation"], a["padding"]
    p = (h + pt + pb - dh * (r - 1) - 1) // sh + 1
    q = (wd + pl + pr - dw * (s - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr))) if pt or pl or pb or pr else x
    # every (dilated) window of the padded input, then every stride-th window and every dilation-th tap
    win = sliding_window_view(xp, (dh * (r - 1) + 1, dw * (s - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :p, :q]  # (N, C, P, Q, R, S), a view
    # im2col per group: (G, N·P·Q, C/G·R·S) @ (G, C/G·R·S, K/G) -> (G, N·P·Q, K/G)
    cols = win.reshape(n, g, cg, p, q, r, s).transpose(1, 0, 3, 4, 2, 5, 6).reshape(g, n * p * q, cg * r * s)
    wm = w.reshape(g, kpg, cg * r * s).transpose(0, 2, 1)
    out = np.matmul(cols, wm)
    return np.ascontiguousarray(out.reshape(g, n, p, q, kpg).transpose(1, 0, 4, 2, 3).reshape(n, k, p, q))


def _pool(x: np.ndarray, a: Mapping[str, Any]) -> np.ndarray:
    is_max = a["mode"] == "max"
    if a["global"]:
        return x.max(axis=(2, 3), keepdims=True) if is_max else x.mean(axis=(2, 3), keepdims=True)
    _, _, h, w = x.shape
    (r, s), (sh, sw), (pt, pl, pb, pr) = a["kernel"], a["stride"], a["padding"]
    p, q = (h + pt + pb - r) // sh + 1, (w + pl + pr - s) // sw + 1
    if pt or pl or pb or pr:
        if not is_max:
            fill: Any = 0
        elif np.issubdtype(x.dtype, np.inexact):
            fill = -np.inf
        else:
            fill = np.iinfo(x.dtype).min
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    win = sliding_window_view(x, (r, s), axis=(2, 3))[:, :, ::sh, ::sw][:, :, :p, :q]  # (N, C, P, Q, R, S)
    if is_max:
        return win.max(axis=(4, 5))
    return win.sum(axis=(4, 5)) / (r * s)  # count_include_pad=True: padded zeros count


def _norm(ins: Sequence[np.ndarray], a: Mapping[str, Any]) -> np.ndarray:
    x = ins[0]
    ax = a["axis"] % x.ndim
    bshape = [1] * x.ndim
    bshape[ax] = x.shape[ax]
    scale = ins[1].reshape(bshape) if len(ins) > 1 else None
    shift = ins[2].reshape(bshape) if len(ins) > 2 else None
    if a["norm"] == "layernorm":
        mean = x.mean(axis=ax, keepdims=True)
        centred = x - mean
        var = (centred * centred).mean(axis=ax, keepdims=True)
        out = centred / np.sqrt(var + LAYERNORM_EPSILON)
    else:  # inference batch norm: statistics folded into scale / shift
        out = x.copy()
    if scale is not None:
        out = out * scale
    if shift is not None:
        out = out + shift
    return out


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def run_operator(op: Operator, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run one operator on its input arrays (in ``op.inputs`` order); returns its outputs (in ``op.outputs``
    order). The attributes are normalised here, so an operator not yet validated by a workload works too; input
    shapes are checked by the operator's shape inference and the results' shapes against it."""
    kind = op.kind
    a = normalize_attrs(kind, op.attrs)
    ins = [np.asarray(v) for v in inputs]
    want = infer_output_shapes(kind, a, [v.shape for v in ins])
    outs: list[np.ndarray]
    if kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
        outs = [_conv2d(ins[0], ins[1], a)]
    elif kind == OpKind.MATMUL:
        outs = [np.matmul(ins[0], ins[1])]
    elif kind == OpKind.POOL:
        outs = [_pool(ins[0], a)]
    elif kind == OpKind.ELEMENTWISE:
        fn = a["function"]
        if fn == "where":
            outs = [np.where(ins[0], ins[1], ins[2])]
        elif fn in _UNARY:
            outs = [_UNARY[fn](ins[0])]
        else:
            outs = [functools.reduce(_ELEMENTWISE[fn], ins)]
    elif kind == OpKind.ACTIVATION:
        outs = [activation(a["function"], ins[0])]
    elif kind == OpKind.SOFTMAX:
        outs = [_softmax(ins[0], a["axis"])]
    elif kind == OpKind.NORM:
        outs = [_norm(ins, a)]
    elif kind == OpKind.CONCAT:
        outs = [np.concatenate(ins, axis=a["axis"])]
    elif kind == OpKind.RESHAPE:
        outs = [ins[0].reshape(a["shape"], order="C").copy()]
    elif kind == OpKind.TRANSPOSE:
        outs = [np.ascontiguousarray(np.transpose(ins[0], a["perm"]))]
    elif kind == OpKind.SLICE:
        index = tuple(slice(lo, hi, st) for lo, hi, st in zip(a["starts"], a["ends"], a["steps"], strict=True))
        outs = [ins[0][index].copy()]
    elif kind == OpKind.SPLIT:
        cuts = np.cumsum(a["sizes"])[:-1]
        outs = [part.copy() for part in np.split(ins[0], cuts, axis=a["axis"])]
    elif kind == OpKind.TILE:
        outs = [np.tile(ins[0], a["reps"])]
    elif kind == OpKind.REPEAT:
        outs = [np.repeat(ins[0], a["repeats"], axis=a["axis"])]
    else:  # pragma: no cover - exhaustive over OpKind
        raise AssertionError(f"no executor for operator kind {kind}")
    act = a.get("activation")
    if act is not None:
        outs = [activation(act, o) for o in outs]
    for o, shape in zip(outs, want, strict=True):
        if o.shape != shape:  # pragma: no cover - an executor bug
            raise AssertionError(f"operator '{op.name}' ({kind.value}) computed shape {list(o.shape)}, "
                                 f"shape inference says {list(shape)}")
    return outs


# ================================================================================================ whole workloads
def _describe(workload: Workload, name: str) -> str:
    t = workload.tensors[name]
    readers = [workload.operators[i].name for i in workload.consumers.get(name, [])]
    read = f", read by {', '.join(repr(r) for r in readers[:3])}{' …' if len(readers) > 3 else ''}" if readers else ""
    return f"'{name}' ({t.role.value}, shape {list(t.shape)}{read})"


def execute(workload: Workload, values: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Run ``workload`` on ``values`` and return the value of every tensor (the given ones and every produced one).

    ``values`` maps the name of every tensor no operator produces (graph inputs and weights) to an array of its
    shape (anything :func:`numpy.asarray` accepts). A missing value, a value of the wrong shape, a name the workload
    does not have, or a value for a produced tensor is an :class:`~dlaopt.errors.InputError` naming the tensor(s)
    (key path ``values.<name>``). Operators run in schedule order with the semantics of the module docstring.
    """
    missing = [n for n, t in workload.tensors.items() if not t.role.is_produced and n not in values]
    if missing:
        shown = "; ".join(_describe(workload, n) for n in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise InputError(f"no value given for {len(missing)} tensor(s) no operator produces: {shown}{more}",
                         path=("values", missing[0]), expected="a value for every graph input and weight")
    env: dict[str, np.ndarray] = {}
    for name, v in values.items():
        if name not in workload.tensors:
            raise InputError(f"workload '{workload.name}' has no tensor '{name}'", path=("values", name),
                             expected="names of the workload's graph inputs and weights")
        t = workload.tensors[name]
        if t.role.is_produced:
            raise InputError(f"tensor '{name}' is produced by operator "
                             f"'{workload.operators[workload.producer[name]].name}'; it cannot be given a value",
                             path=("values", name), expected="values only for graph inputs and weights")
        arr = np.asarray(v)
        if arr.shape != t.shape:
            raise InputError(f"the value of tensor '{name}' has shape {list(arr.shape)}", path=("values", name),
                             expected=f"shape {list(t.shape)}")
        env[name] = arr
    for op in workload.operators:
        results = run_operator(op, [env[t] for t in op.inputs])
        for t, arr in zip(op.outputs, results, strict=True):
            if arr.shape != workload.tensors[t].shape:  # pragma: no cover - guarded by Workload validation
                raise AssertionError(f"operator '{op.name}' produced shape {list(arr.shape)} for tensor '{t}' "
                                     f"of shape {list(workload.tensors[t].shape)}")
            env[t] = arr
    return env


def _fan_in(workload: Workload, name: str) -> tuple[str, int]:
    """How the first operator reading weight ``name`` uses it: ("mac", contraction size), ("scale"|"shift", 0) or
    ("other", 0)."""
    readers = workload.consumers.get(name, [])
    if not readers:
        return "other", 0
    op = workload.operators[readers[0]]
    pos = op.inputs.index(name)
    if op.kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D) and pos == 1:
        return "mac", math.prod(workload.tensors[name].shape[1:])
    if op.kind == OpKind.MATMUL:
        return "mac", workload.tensors[op.inputs[0]].shape[-1]
    if op.kind == OpKind.NORM and pos in (1, 2):
        return ("scale" if pos == 1 else "shift"), 0
    return "other", 0


def random_values(workload: Workload, seed: int, dtype: Any = np.float64) -> dict[str, np.ndarray]:
    """Random arrays for every tensor no operator produces (graph inputs and weights), ready for :func:`execute`.

    Deterministic in ``seed`` (tensors drawn in the workload's tensor order). Floating ``dtype``: graph inputs are
    standard normal; weights are scaled so that activations stay of order one through deep networks — a conv or
    matmul weight is ``N(0, 1/fan_in)`` (fan-in: ``C/groups·R·S`` or the contraction size ``K`` of its first
    reader), a norm scale ``N(1, 0.1²)``, a norm shift ``N(0, 0.1²)``, any other weight standard normal. Signed
    integer ``dtype``: uniform integers in [-3, 3]."""
    dt = np.dtype(dtype)
    if not (np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.signedinteger)):
        raise TypeError(f"random_values needs a floating or signed integer dtype, got {dt}")
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, t in workload.tensors.items():
        if t.role.is_produced:
            continue
        if np.issubdtype(dt, np.signedinteger):
            out[name] = rng.integers(-3, 4, size=t.shape).astype(dt)
            continue
        z = rng.standard_normal(t.shape)
        if t.role == TensorRole.WEIGHT:
            use, fan_in = _fan_in(workload, name)
            if use == "mac":
                z = z / math.sqrt(max(fan_in, 1))
            elif use == "scale":
                z = 1.0 + 0.1 * z
            elif use == "shift":
                z = 0.1 * z
        out[name] = z.astype(dt)
    return out
