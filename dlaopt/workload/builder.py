"""A small fluent builder for workloads, used by the network zoo and by users building graphs from Python.

Each method appends one operator in schedule order, creates its output tensor (shape inferred) and, for layers with
parameters, its weight tensor; it returns the output tensor's name. ``build()`` marks the given tensors as graph
outputs and returns a validated :class:`~dlaopt.workload.graph.Workload`::

    b = NetworkBuilder("tiny", dtype_bytes=2)
    x = b.input("image", (1, 3, 32, 32))
    y = b.conv2d(x, 16, kernel=3, padding=1, activation="relu")
    y = b.pool(y, "max", kernel=2)
    y = b.linear(b.flatten(y), 10)
    wl = b.build(outputs=[y])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind, infer_output_shapes, normalize_attrs
from dlaopt.workload.tensor import Tensor, TensorRole


class NetworkBuilder:
    def __init__(self, name: str, *, dtype_bytes: int = 1, params: Mapping[str, object] | None = None) -> None:
        self.name = name
        self.dtype_bytes = dtype_bytes
        self.params = dict(params or {})
        self._tensors: dict[str, Tensor] = {}
        self._ops: list[Operator] = []
        self._counts: dict[str, int] = {}

    # --------------------------------------------------------------------------------------------- primitives
    def _fresh(self, base: str) -> str:
        """A name not yet used by any operator: ``base``, then ``base_1``, ``base_2`` …"""
        n = self._counts.get(base, 0)
        while True:
            candidate = base if n == 0 else f"{base}_{n}"
            n += 1
            if not self._op_exists(candidate) and f"{candidate}.w" not in self._tensors:
                self._counts[base] = n
                return candidate

    def _op_exists(self, name: str) -> bool:
        return any(o.name == name for o in self._ops)

    def shape(self, tensor: str) -> tuple[int, ...]:
        return self._tensors[tensor].shape

    def input(self, name: str, shape: Sequence[int]) -> str:
        self._tensors[name] = Tensor(name, tuple(shape), TensorRole.INPUT, self.dtype_bytes)
        return name

    def weight(self, name: str, shape: Sequence[int]) -> str:
        self._tensors[name] = Tensor(name, tuple(shape), TensorRole.WEIGHT, self.dtype_bytes)
        return name

    def op(
        self,
        kind: OpKind | str,
        inputs: Sequence[str],
        attrs: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        n_outputs: int = 1,
    ) -> list[str]:
        """Append a generic operator; returns the names of its outputs."""
        kind = OpKind(kind)
        op_name = name if name is not None and not self._op_exists(name) else self._fresh(name or kind.value)
        norm = normalize_attrs(kind, attrs or {})
        shapes = infer_output_shapes(kind, norm, [self._tensors[t].shape for t in inputs])
        if len(shapes) != n_outputs and kind != OpKind.SPLIT:
            raise ValueError(f"{kind.value} produces {len(shapes)} outputs")
        outs = []
        for j, s in enumerate(shapes):
            t = f"{op_name}.out" if len(shapes) == 1 else f"{op_name}.out{j}"
            self._tensors[t] = Tensor(t, s, TensorRole.ACTIVATION, self.dtype_bytes)
            outs.append(t)
        self._ops.append(Operator(op_name, kind, tuple(inputs), tuple(outs), dict(attrs or {})))
        return outs

    # --------------------------------------------------------------------------------------------- layers
    def conv2d(
        self,
        x: str,
        out_channels: int,
        kernel: int | Sequence[int],
        *,
        stride: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        activation: str | None = None,
        name: str | None = None,
        weight: str | None = None,
    ) -> str:
        """A 2-D convolution. ``weight`` reuses an existing weight tensor (e.g. shared across time steps)."""
        c = self.shape(x)[1]
        r, s = (kernel, kernel) if isinstance(kernel, int) else tuple(kernel)
        op_name = self._fresh(name or "conv")
        w = weight or self.weight(f"{op_name}.w", (out_channels, c // groups, r, s))
        kind = OpKind.DEPTHWISE_CONV2D if groups == c and groups > 1 and out_channels % c == 0 else OpKind.CONV2D
        attrs: dict[str, Any] = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        if activation:
            attrs["activation"] = activation
        return self.op(kind, [x, w], attrs, name=op_name)[0]

    def depthwise_conv2d(self, x: str, kernel: int, *, stride: int = 1, padding: int = 0, multiplier: int = 1,
                         activation: str | None = None, name: str | None = None) -> str:
        c = self.shape(x)[1]
        return self.conv2d(x, c * multiplier, kernel, stride=stride, padding=padding, groups=c,
                           activation=activation, name=name or "dwconv")

    def matmul(self, a: str, b: str, *, activation: str | None = None, name: str | None = None) -> str:
        attrs = {"activation": activation} if activation else {}
        return self.op(OpKind.MATMUL, [a, b], attrs, name=name or "matmul")[0]

    def linear(self, x: str, out_features: int, *, activation: str | None = None, name: str | None = None,
               weight: str | None = None) -> str:
        """A fully connected layer: ``x (..., K) @ W (K, out_features)``."""
        op_name = self._fresh(name or "fc")
        w = weight or self.weight(f"{op_name}.w", (self.shape(x)[-1], out_features))
        attrs = {"activation": activation} if activation else {}
        return self.op(OpKind.MATMUL, [x, w], attrs, name=op_name)[0]

    def pool(self, x: str, mode: str = "max", kernel: int | Sequence[int] | None = None, *,
             stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
             name: str | None = None) -> str:
        if kernel is None:
            return self.op(OpKind.POOL, [x], {"mode": mode, "global": True}, name=name or f"{mode}pool")[0]
        attrs = {"mode": mode, "kernel": kernel, "stride": stride if stride is not None else kernel,
                 "padding": padding}
        return self.op(OpKind.POOL, [x], attrs, name=name or f"{mode}pool")[0]

    def global_pool(self, x: str, mode: str = "avg", *, name: str | None = None) -> str:
        return self.pool(x, mode, None, name=name)

    def add(self, a: str, b: str, *, activation: str | None = None, name: str | None = None) -> str:
        return self.elementwise("add", [a, b], activation=activation, name=name)

    def mul(self, a: str, b: str, *, name: str | None = None) -> str:
        return self.elementwise("mul", [a, b], name=name)

    def elementwise(self, function: str, inputs: Sequence[str], *, activation: str | None = None,
                    name: str | None = None) -> str:
        attrs: dict[str, Any] = {"function": function}
        if activation:
            attrs["activation"] = activation
        return self.op(OpKind.ELEMENTWISE, inputs, attrs, name=name or function)[0]

    def activation(self, x: str, function: str = "relu", *, name: str | None = None) -> str:
        return self.op(OpKind.ACTIVATION, [x], {"function": function}, name=name or function)[0]

    def softmax(self, x: str, axis: int = -1, *, name: str | None = None) -> str:
        return self.op(OpKind.SOFTMAX, [x], {"axis": axis}, name=name or "softmax")[0]

    def layernorm(self, x: str, *, affine: bool = True, name: str | None = None) -> str:
        op_name = self._fresh(name or "layernorm")
        inputs = [x]
        if affine:
            d = self.shape(x)[-1]
            inputs += [self.weight(f"{op_name}.gamma", (d,)), self.weight(f"{op_name}.beta", (d,))]
        return self.op(OpKind.NORM, inputs, {"norm": "layernorm", "axis": -1}, name=op_name)[0]

    def batchnorm(self, x: str, *, name: str | None = None) -> str:
        op_name = self._fresh(name or "batchnorm")
        c = self.shape(x)[1]
        inputs = [x, self.weight(f"{op_name}.scale", (c,)), self.weight(f"{op_name}.shift", (c,))]
        return self.op(OpKind.NORM, inputs, {"norm": "batchnorm", "axis": 1}, name=op_name)[0]

    def concat(self, xs: Sequence[str], axis: int = 1, *, name: str | None = None) -> str:
        return self.op(OpKind.CONCAT, xs, {"axis": axis}, name=name or "concat")[0]

    def reshape(self, x: str, shape: Sequence[int], *, name: str | None = None) -> str:
        return self.op(OpKind.RESHAPE, [x], {"shape": list(shape)}, name=name or "reshape")[0]

    def flatten(self, x: str, *, name: str | None = None) -> str:
        s = self.shape(x)
        n = 1
        for d in s[1:]:
            n *= d
        return self.reshape(x, (s[0], n), name=name or "flatten")

    def transpose(self, x: str, perm: Sequence[int], *, name: str | None = None) -> str:
        return self.op(OpKind.TRANSPOSE, [x], {"perm": list(perm)}, name=name or "transpose")[0]

    def slice(self, x: str, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int] | None = None, *,
              name: str | None = None) -> str:
        attrs: dict[str, Any] = {"starts": list(starts), "ends": list(ends)}
        if steps is not None:
            attrs["steps"] = list(steps)
        return self.op(OpKind.SLICE, [x], attrs, name=name or "slice")[0]

    def split(self, x: str, sizes: Sequence[int], axis: int = 1, *, name: str | None = None) -> list[str]:
        return self.op(OpKind.SPLIT, [x], {"axis": axis, "sizes": list(sizes)}, name=name or "split",
                       n_outputs=len(sizes))

    def tile(self, x: str, reps: Sequence[int], *, name: str | None = None) -> str:
        """``numpy.tile``: ``reps`` holds one positive count per axis; output dimension ``d·r``."""
        return self.op(OpKind.TILE, [x], {"reps": [int(r) for r in reps]}, name=name or "tile")[0]

    def repeat(self, x: str, repeats: int, axis: int, *, name: str | None = None) -> str:
        """``numpy.repeat`` along ``axis``: every element repeated ``repeats`` times consecutively."""
        return self.op(OpKind.REPEAT, [x], {"repeats": int(repeats), "axis": int(axis)}, name=name or "repeat")[0]

    # --------------------------------------------------------------------------------------------- finish
    def build(self, outputs: Sequence[str]) -> Workload:
        """Mark ``outputs`` as graph outputs and return the validated workload."""
        tensors = dict(self._tensors)
        for t in outputs:
            old = tensors[t]
            tensors[t] = Tensor(old.name, old.shape, TensorRole.OUTPUT, old.dtype_bytes)
        # dead activations (e.g. an unused split part) become outputs so nothing is silently dropped
        consumed = {t for op in self._ops for t in op.inputs}
        for name, t in list(tensors.items()):
            if t.role == TensorRole.ACTIVATION and name not in consumed:
                tensors[name] = Tensor(t.name, t.shape, TensorRole.OUTPUT, t.dtype_bytes)
        return Workload.create(self.name, tensors.values(), self._ops, self.params)
