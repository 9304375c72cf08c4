"""ONNX models built with ``onnx.helper`` for the importer's tests (nothing is downloaded).

Each builder returns an ``onnx.ModelProto`` laid out the way exporters write it:

* :func:`small_cnn` — a branchy CNN (conv + BN + ReLU stem, an inception-like block with a max-pool branch and a
  concat, a residual block with an add, global average pool, flatten, a Gemm classifier with transB);
* :func:`transformer_block` — one post-LN encoder layer as PyTorch exports it (MatMul + bias Add, head reshapes
  whose target shapes are computed by Shape→Gather→Unsqueeze→Concat chains, Q·K^T, scaling Div, Softmax,
  LayerNormalization, GELU as a ``Gelu`` node (opset 20) or as the Erf pattern (opset 17));
* :func:`resnet50` — torchvision's ResNet-50 (v1.5): conv (no bias) + BatchNormalization + Relu everywhere, residual
  Add + Relu, GlobalAveragePool, Flatten, Gemm;
* :func:`bert_base` — the BERT-base encoder stack of ``dlaopt``'s zoo (12 × :func:`transformer_block` at hidden 768,
  12 heads, FFN 3072, no embeddings, no pooler) on a ``(batch, seq, 768)`` input with symbolic ``batch`` and ``seq``.

``weights="zeros"`` stores every initializer as zeros (a real, self-contained model); ``weights="external"`` declares
the large ones (more than 4,096 elements) as external data that is never written — only their shapes exist, which
is all the importer reads — so that ResNet-50 and BERT-base stay small in memory and fast to build.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

Weights = Literal["zeros", "external"]
Dim = int | str
_SMALL = 4096  # initializers up to this many elements always hold data (shape constants, biases, norms)


class GraphBuilder:
    """Collects nodes and initializers; every method returns the name of the tensor it creates."""

    def __init__(self, name: str, *, dtype: type = np.float32, weights: Weights = "zeros") -> None:
        self.name = name
        self.dtype = np.dtype(dtype)
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._counts: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        n = self._counts.get(base, 0)
        self._counts[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    # ------------------------------------------------------------------------------------------ tensors
    def param(self, name: str, shape: Sequence[int]) -> str:
        """A float initializer of ``shape`` (zeros, or external placeholder data when large)."""
        numel = math.prod(shape)
        if self.weights == "external" and numel > _SMALL:
            t = TensorProto()
            t.name = name
            t.data_type = helper.np_dtype_to_tensor_dtype(self.dtype)
            t.dims.extend(shape)
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", "weights.bin"), ("offset", "0"),
                               ("length", str(numel * self.dtype.itemsize))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
            self.initializers.append(t)
        else:
            self.initializers.append(numpy_helper.from_array(np.zeros(shape, dtype=self.dtype), name))
        return name

    def scalar(self, name: str, value: float) -> str:
        self.initializers.append(numpy_helper.from_array(np.array(value, dtype=self.dtype), name))
        return name

    def ints(self, name: str, values: Sequence[int]) -> str:
        self.initializers.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def node(self, op: str, inputs: Sequence[str], *, name: str, outputs: int = 1, **attrs: Any) -> str:
        outs = [f"{name}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs[0]

    def constant(self, name: str, values: Sequence[int]) -> str:
        """A ``Constant`` node holding int64 ``values`` (as PyTorch exports shape pieces)."""
        return self.node("Constant", [], name=name,
                         value=numpy_helper.from_array(np.array(values, dtype=np.int64), f"{name}.value"))

    # ------------------------------------------------------------------------------------------ layers
    def conv_bn(self, x: str, cin: int, cout: int, kernel: int, *, stride: int = 1, pad: int = 0, groups: int = 1,
                relu: bool = True, name: str) -> str:
        w = self.param(f"{name}.weight", (cout, cin // groups, kernel, kernel))
        y = self.node("Conv", [x, w], name=f"/{name}/Conv", kernel_shape=[kernel, kernel], strides=[stride, stride],
                      pads=[pad] * 4, dilations=[1, 1], group=groups)
        bn = [self.param(f"{name}.bn.{p}", (cout,)) for p in ("weight", "bias", "running_mean", "running_var")]
        y = self.node("BatchNormalization", [y, *bn], name=f"/{name}/bn/BatchNormalization", epsilon=1e-5)
        return self.node("Relu", [y], name=f"/{name}/Relu") if relu else y

    def linear(self, x: str, k: int, n: int, *, name: str) -> str:
        """``MatMul`` with a (K, N) weight then the bias ``Add`` (PyTorch's export of nn.Linear on 3-D inputs)."""
        y = self.node("MatMul", [x, self.param(f"{name}.weight", (k, n))], name=f"/{name}/MatMul")
        return self.node("Add", [self.param(f"{name}.bias", (n,)), y], name=f"/{name}/Add")

    def gemm(self, x: str, k: int, n: int, *, name: str) -> str:
        """``Gemm`` with transB (weight stored (N, K), as PyTorch's nn.Linear on 2-D inputs) and a bias."""
        w, b = self.param(f"{name}.weight", (n, k)), self.param(f"{name}.bias", (n,))
        return self.node("Gemm", [x, w, b], name=f"/{name}/Gemm", alpha=1.0, beta=1.0, transB=1)

    def dims_of(self, x: str, axes: Sequence[int], *, name: str) -> list[str]:
        """``Shape(x)[axis]`` as 1-element tensors (Shape → Gather → Unsqueeze), for computed Reshape targets."""
        shape = self.node("Shape", [x], name=f"{name}/Shape")
        out = []
        for axis in axes:
            index = self.node("Constant", [], name=f"{name}/Constant_{axis}",
                              value=numpy_helper.from_array(np.array(axis, dtype=np.int64), f"{name}.c{axis}"))
            g = self.node("Gather", [shape, index], name=f"{name}/Gather_{axis}", axis=0)
            axes_const = self.constant(f"{name}/Constant_u{axis}", [0])
            out.append(self.node("Unsqueeze", [g, axes_const], name=f"{name}/Unsqueeze_{axis}"))
        return out

    def model(self, inputs: Sequence[tuple[str, Sequence[Dim]]], outputs: Sequence[str], *, opset: int,
              declare_outputs: bool = True) -> onnx.ModelProto:
        elem = helper.np_dtype_to_tensor_dtype(self.dtype)
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, elem, list(s)) for n, s in inputs],
            [helper.make_tensor_value_info(o, elem, None) for o in outputs],
            initializer=self.initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="dlaopt-tests", ir_version=9)
        if not declare_outputs:
            return model
        # declare the graph outputs' (symbolic) shapes as exporters do
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        types = {v.name: v.type for v in [*inferred.graph.value_info, *inferred.graph.output]}
        for out in model.graph.output:
            if out.name in types:
                out.type.CopyFrom(types[out.name])
        return model


# ================================================================================================ small CNN
def small_cnn(*, batch: Dim = "batch", image: int = 32, classes: int = 10,
              weights: Weights = "zeros") -> onnx.ModelProto:
    """A branchy CNN on ``(batch, 3, image, image)``::

        stem      conv 3x3 16 + BN + ReLU · maxpool 2x2/2
        mix       b1 conv 1x1 8 + ReLU · b2 conv 1x1 8 + ReLU → conv 3x3 16 + ReLU (bias) ·
                  b3 maxpool 3x3/1 pad 1 → conv 1x1 8 + ReLU · concat → 32 channels
        res       conv 3x3 32 + BN + ReLU → conv 3x3 32 + BN · add (identity) + ReLU
        down      depthwise conv 3x3/2 (groups 32) + BN + ReLU6 (Clip 0..6)
        head      global average pool · flatten · Gemm (transB) to ``classes`` · Softmax
    """
    g = GraphBuilder("small-cnn", weights=weights)
    x = g.conv_bn("input", 3, 16, 3, pad=1, name="stem")
    x = g.node("MaxPool", [x], name="/stem/MaxPool", kernel_shape=[2, 2], strides=[2, 2])
    b1 = g.node("Relu", [g.node("Conv", [x, g.param("mix.b1.weight", (8, 16, 1, 1))], name="/mix/b1/Conv",
                                kernel_shape=[1, 1])], name="/mix/b1/Relu")
    b2 = g.node("Relu", [g.node("Conv", [x, g.param("mix.b2r.weight", (8, 16, 1, 1))], name="/mix/b2r/Conv",
                                kernel_shape=[1, 1])], name="/mix/b2r/Relu")
    b2 = g.node("Conv", [b2, g.param("mix.b2.weight", (16, 8, 3, 3)), g.param("mix.b2.bias", (16,))],
                name="/mix/b2/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    b2 = g.node("Relu", [b2], name="/mix/b2/Relu")
    b3 = g.node("MaxPool", [x], name="/mix/b3/MaxPool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    b3 = g.node("Relu", [g.node("Conv", [b3, g.param("mix.b3.weight", (8, 16, 1, 1))], name="/mix/b3/Conv",
                                kernel_shape=[1, 1])], name="/mix/b3/Relu")
    x = g.node("Concat", [b1, b2, b3], name="/mix/Concat", axis=1)
    y = g.conv_bn(x, 32, 32, 3, pad=1, name="res.conv1")
    y = g.conv_bn(y, 32, 32, 3, pad=1, relu=False, name="res.conv2")
    x = g.node("Relu", [g.node("Add", [y, x], name="/res/Add")], name="/res/Relu")
    x = g.conv_bn(x, 32, 32, 3, stride=2, pad=1, groups=32, relu=False, name="down")
    x = g.node("Clip", [x, g.scalar("clip.min", 0.0), g.scalar("clip.max", 6.0)], name="/down/Clip")
    x = g.node("GlobalAveragePool", [x], name="/head/GlobalAveragePool")
    x = g.node("Flatten", [x], name="/head/Flatten", axis=1)
    x = g.gemm(x, 32, classes, name="head.fc")
    x = g.node("Softmax", [x], name="/head/Softmax", axis=-1)
    return g.model([("input", (batch, 3, image, image))], [x], opset=17)


# ================================================================================================ transformer
def _encoder_layer(g: GraphBuilder, x: str, hidden: int, heads: int, ffn: int, gelu: str, p: str) -> str:
    d = hidden // heads

    def to_heads(t: str, name: str, perm: Sequence[int]) -> str:
        b, s = g.dims_of(t, (0, 1), name=f"/{name}/shape")
        target = g.node("Concat", [b, s, g.constant(f"/{name}/heads", [heads]), g.constant(f"/{name}/d", [d])],
                        name=f"/{name}/Concat", axis=0)
        t = g.node("Reshape", [t, target], name=f"/{name}/Reshape")
        return g.node("Transpose", [t], name=f"/{name}/Transpose", perm=list(perm))

    q = to_heads(g.linear(x, hidden, hidden, name=f"{p}.attn.q"), f"{p}/attn/q", (0, 2, 1, 3))
    k = to_heads(g.linear(x, hidden, hidden, name=f"{p}.attn.k"), f"{p}/attn/k", (0, 2, 3, 1))
    v = to_heads(g.linear(x, hidden, hidden, name=f"{p}.attn.v"), f"{p}/attn/v", (0, 2, 1, 3))
    scores = g.node("MatMul", [q, k], name=f"/{p}/attn/qk/MatMul")
    scores = g.node("Div", [scores, g.scalar(f"{p}.attn.scale", math.sqrt(d))], name=f"/{p}/attn/Div")
    probs = g.node("Softmax", [scores], name=f"/{p}/attn/Softmax", axis=-1)
    ctx = g.node("MatMul", [probs, v], name=f"/{p}/attn/av/MatMul")
    ctx = g.node("Transpose", [ctx], name=f"/{p}/attn/merge/Transpose", perm=[0, 2, 1, 3])
    b, s = g.dims_of(ctx, (0, 1), name=f"/{p}/attn/merge/shape")
    target = g.node("Concat", [b, s, g.constant(f"/{p}/attn/merge/hidden", [hidden])], name=f"/{p}/attn/merge/Concat",
                    axis=0)
    ctx = g.node("Reshape", [ctx, target], name=f"/{p}/attn/merge/Reshape")
    attn = g.linear(ctx, hidden, hidden, name=f"{p}.attn.out")
    x = g.node("Add", [attn, x], name=f"/{p}/attn/residual/Add")
    x = _layernorm(g, x, hidden, f"{p}.attn.norm")
    y = g.linear(x, hidden, ffn, name=f"{p}.ffn.fc1")
    y = _gelu(g, y, gelu, f"{p}/ffn/gelu")
    y = g.linear(y, ffn, hidden, name=f"{p}.ffn.fc2")
    x = g.node("Add", [y, x], name=f"/{p}/ffn/residual/Add")
    return _layernorm(g, x, hidden, f"{p}.ffn.norm")


def _layernorm(g: GraphBuilder, x: str, hidden: int, name: str) -> str:
    return g.node("LayerNormalization", [x, g.param(f"{name}.weight", (hidden,)), g.param(f"{name}.bias", (hidden,))],
                  name=f"/{name}/LayerNormalization", axis=-1, epsilon=1e-12)


def _gelu(g: GraphBuilder, x: str, form: str, name: str) -> str:
    """GELU as one ``Gelu`` node (opset 20) or as PyTorch's exact-GELU export ``x * 0.5 * (1 + erf(x / sqrt 2))``
    (``Div → Erf → Add → Mul → Mul``)."""
    if form == "op":
        return g.node("Gelu", [x], name=f"/{name}/Gelu")
    y = g.node("Div", [x, g.scalar(f"{name}.sqrt2", math.sqrt(2.0))], name=f"/{name}/Div")
    y = g.node("Erf", [y], name=f"/{name}/Erf")
    y = g.node("Add", [y, g.scalar(f"{name}.one", 1.0)], name=f"/{name}/Add")
    y = g.node("Mul", [x, y], name=f"/{name}/Mul")
    return g.node("Mul", [y, g.scalar(f"{name}.half", 0.5)], name=f"/{name}/Mul_1")


def transformer_block(*, hidden: int = 64, heads: int = 4, ffn: int = 256, layers: int = 1, gelu: str = "op",
                      batch: Dim = "batch", seq: Dim = "seq", weights: Weights = "zeros",
                      name: str = "transformer-block") -> onnx.ModelProto:
    """``layers`` post-LN encoder layers on ``hidden_states (batch, seq, hidden)``; ``gelu`` is ``"op"`` (a Gelu
    node, opset 20) or ``"erf"`` (the Erf pattern, opset 17)."""
    g = GraphBuilder(name, weights=weights)
    x = "hidden_states"
    for i in range(layers):
        x = _encoder_layer(g, x, hidden, heads, ffn, gelu, f"encoder{i}")
    return g.model([("hidden_states", (batch, seq, hidden))], [x], opset=20 if gelu == "op" else 17)


def bert_base(*, layers: int = 12, weights: Weights = "external", gelu: str = "erf") -> onnx.ModelProto:
    """The zoo's ``bert-base``: 12 layers, hidden 768, 12 heads, FFN 3072, input ``(batch, seq, 768)``."""
    return transformer_block(hidden=768, heads=12, ffn=3072, layers=layers, gelu=gelu, weights=weights,
                             name="bert-base")


# ================================================================================================ ResNet-50
def resnet50(*, batch: Dim = 1, image: int = 224, classes: int = 1000, weights: Weights = "external",
             dtype: type = np.float16) -> onnx.ModelProto:
    """torchvision's ResNet-50 (v1.5: the stride of a stage's first bottleneck on its 3x3 conv)."""
    g = GraphBuilder("resnet50", dtype=dtype, weights=weights)
    x = g.conv_bn("input", 3, 64, 7, stride=2, pad=3, name="conv1")
    x = g.node("MaxPool", [x], name="/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3), strict=True), start=1):
        for i in range(blocks):
            p = f"layer{stage}.{i}"
            stride = 2 if stage > 1 and i == 0 else 1
            y = g.conv_bn(x, cin, width, 1, name=f"{p}.conv1")
            y = g.conv_bn(y, width, width, 3, stride=stride, pad=1, name=f"{p}.conv2")
            y = g.conv_bn(y, width, 4 * width, 1, relu=False, name=f"{p}.conv3")
            shortcut = x
            if i == 0:
                shortcut = g.conv_bn(x, cin, 4 * width, 1, stride=stride, relu=False, name=f"{p}.downsample")
            x = g.node("Relu", [g.node("Add", [y, shortcut], name=f"/{p}/Add")], name=f"/{p}/Relu")
            cin = 4 * width
    x = g.node("GlobalAveragePool", [x], name="/avgpool/GlobalAveragePool")
    x = g.node("Flatten", [x], name="/Flatten", axis=1)
    x = g.gemm(x, 2048, classes, name="fc")
    return g.model([("input", (batch, 3, image, image))], [x], opset=17)


# ================================================================================================ error cases
def single_node(op: str, *, inputs: Sequence[tuple[str, Sequence[Dim]]] = (("x", (1, 4, 8, 8)),),
                name: str = "the_node", opset: int = 17, **attrs: Any) -> onnx.ModelProto:
    """A one-node model ``op(inputs) -> y`` (e.g. an unsupported operator; its output's shape is not declared)."""
    g = GraphBuilder("single")
    y = g.node(op, [n for n, _ in inputs], name=name, **attrs)
    return g.model(inputs, [y], opset=opset, declare_outputs=False)
