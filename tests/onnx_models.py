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
def _encoder_layer(g: GraphBuilder, x: str, hidden: int, heads: int, ffn: int, gelu: str, p: str, *,
                   pre_ln: bool = False, mask: Any = None) -> str:
    """A post-LN (BERT, DistilBERT) or pre-LN (ViT) encoder layer; ``mask(g, scores, p)`` edits the scaled
    attention scores (DistilBERT's masked_fill)."""
    d = hidden // heads
    residual = x
    if pre_ln:
        x = _layernorm(g, x, hidden, f"{p}.layernorm_before")

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
    if mask is not None:
        scores = mask(g, scores, p)
    probs = g.node("Softmax", [scores], name=f"/{p}/attn/Softmax", axis=-1)
    ctx = g.node("MatMul", [probs, v], name=f"/{p}/attn/av/MatMul")
    ctx = g.node("Transpose", [ctx], name=f"/{p}/attn/merge/Transpose", perm=[0, 2, 1, 3])
    b, s = g.dims_of(ctx, (0, 1), name=f"/{p}/attn/merge/shape")
    target = g.node("Concat", [b, s, g.constant(f"/{p}/attn/merge/hidden", [hidden])], name=f"/{p}/attn/merge/Concat",
                    axis=0)
    ctx = g.node("Reshape", [ctx, target], name=f"/{p}/attn/merge/Reshape")
    attn = g.linear(ctx, hidden, hidden, name=f"{p}.attn.out")
    x = g.node("Add", [attn, residual], name=f"/{p}/attn/residual/Add")
    residual = x
    x = _layernorm(g, x, hidden, f"{p}.layernorm_after" if pre_ln else f"{p}.attn.norm")
    if not pre_ln:
        residual = x
    y = g.linear(x, hidden, ffn, name=f"{p}.ffn.fc1")
    y = _gelu(g, y, gelu, f"{p}/ffn/gelu")
    y = g.linear(y, ffn, hidden, name=f"{p}.ffn.fc2")
    x = g.node("Add", [y, residual], name=f"/{p}/ffn/residual/Add")
    return x if pre_ln else _layernorm(g, x, hidden, f"{p}.ffn.norm")


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


# ================================================================================================ exported patterns
# The builders below reconstruct what ``torch.onnx.export(model, ..., opset_version=17)`` writes for the
# ``transformers`` model classes: node names as the exporter gives them, attributes in their opset-17 form, and the
# constant subgraphs it leaves (F.pad's pads chain, expand's size chain, T5's relative-position buckets).
_INT64_MAX = 9223372036854775807


def tf_pad(g: GraphBuilder, x: str, left: int, right: int, top: int, bottom: int, *, name: str) -> str:
    """``F.pad(x, (left, right, top, bottom))`` as exported: ``ConstantOfShape → Concat → Reshape → Slice(step -1)
    → Transpose → Reshape → Cast`` computes the ONNX pads, then ``Pad`` (constant mode, value 0)."""
    given = g.constant(f"{name}/Constant", [left, right, top, bottom])
    zeros = g.node("ConstantOfShape", [g.constant(f"{name}/Constant_1", [4])], name=f"{name}/ConstantOfShape",
                   value=numpy_helper.from_array(np.array([0], dtype=np.int64), "value"))
    pads = g.node("Concat", [given, zeros], name=f"{name}/Concat", axis=0)
    pads = g.node("Reshape", [pads, g.constant(f"{name}/Constant_2", [-1, 2])], name=f"{name}/Reshape")
    ends = g.constant(f"{name}/Constant_4", [-_INT64_MAX])
    pads = g.node("Slice", [pads, g.constant(f"{name}/Constant_3", [-1]), ends, g.constant(f"{name}/Constant_5", [0]),
                            g.constant(f"{name}/Constant_6", [-1])], name=f"{name}/Slice")
    pads = g.node("Transpose", [pads], name=f"{name}/Transpose", perm=[1, 0])
    pads = g.node("Reshape", [pads, g.constant(f"{name}/Constant_7", [-1])], name=f"{name}/Reshape_1")
    pads = g.node("Cast", [pads], name=f"{name}/Cast", to=TensorProto.INT64)
    value = g.node("Constant", [], name=f"{name}/Constant_8",
                   value=numpy_helper.from_array(np.array(0.0, dtype=np.float32), "value"))
    return g.node("Pad", [x, pads, value], name=f"{name}/Pad", mode="constant")


def _conv(g: GraphBuilder, x: str, cin: int, cout: int, kernel: int, *, stride: int = 1, pad: int = 0,
          groups: int = 1, bias: bool = False, name: str) -> str:
    w = g.param(f"{name}.weight", (cout, cin // groups, kernel, kernel))
    ins = [x, w, g.param(f"{name}.bias", (cout,))] if bias else [x, w]
    return g.node("Conv", ins, name=f"/{name}/Conv", dilations=[1, 1], group=groups, kernel_shape=[kernel, kernel],
                  pads=[pad] * 4, strides=[stride, stride])


def _bn(g: GraphBuilder, x: str, c: int, *, name: str) -> str:
    bn = [g.param(f"{name}.{p}", (c,)) for p in ("weight", "bias", "running_mean", "running_var")]
    return g.node("BatchNormalization", [x, *bn], name=f"/{name}/BatchNormalization", epsilon=1e-3, momentum=0.99)


def _relu6(g: GraphBuilder, x: str, *, name: str) -> str:
    lo = g.node("Constant", [], name=f"/{name}/Constant", value=numpy_helper.from_array(np.array(0.0, np.float32), "v"))
    hi = g.node("Constant", [], name=f"/{name}/Constant_1",
                value=numpy_helper.from_array(np.array(6.0, np.float32), "v"))
    return g.node("Clip", [x, lo, hi], name=f"/{name}/Clip")


def _silu(g: GraphBuilder, x: str, *, name: str) -> str:
    return g.node("Mul", [x, g.node("Sigmoid", [x], name=f"/{name}/Sigmoid")], name=f"/{name}/Mul")


def _same_pads(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow's "same" padding (before, after) of one axis."""
    total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


MOBILENET_V2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                         (6, 320, 1, 1))


def mobilenet_v2_hf(*, batch: Dim = "batch_size", image: int = 224, classes: int = 1001,
                    weights: Weights = "external") -> onnx.ModelProto:
    """``transformers``' MobileNetV2ForImageClassification (google/mobilenet_v2_1.0_224, ``tf_padding``): every
    3x3 conv is preceded by F.pad with TensorFlow's "same" pads and has no padding of its own; ReLU6 is Clip."""
    g = GraphBuilder("mobilenet-v2", weights=weights)
    size = image

    def layer(x: str, cin: int, cout: int, kernel: int, stride: int, groups: int, act: bool, name: str) -> str:
        nonlocal size
        if kernel > 1:
            top, bottom = _same_pads(size, kernel, stride)
            x = tf_pad(g, x, top, bottom, top, bottom, name=f"/{name}")
        x = _bn(g, _conv(g, x, cin, cout, kernel, stride=stride, groups=groups, name=f"{name}.convolution"), cout,
                name=f"{name}.normalization")
        size = -(-size // stride)
        return _relu6(g, x, name=f"{name}.activation") if act else x

    x = layer("pixel_values", 3, 32, 3, 2, 1, True, "mobilenet_v2.conv_stem.first_conv")
    x = layer(x, 32, 32, 3, 1, 32, True, "mobilenet_v2.conv_stem.conv_3x3")
    x = layer(x, 32, 16, 1, 1, 1, False, "mobilenet_v2.conv_stem.reduce_1x1")
    cin, index = 16, 0
    for t, c, n, s in MOBILENET_V2_SETTINGS[1:]:
        for i in range(n):
            p, stride, hidden = f"mobilenet_v2.layer.{index}", s if i == 0 else 1, cin * t
            y = layer(x, cin, hidden, 1, 1, 1, True, f"{p}.expand_1x1")
            y = layer(y, hidden, hidden, 3, stride, hidden, True, f"{p}.conv_3x3")
            y = layer(y, hidden, c, 1, 1, 1, False, f"{p}.reduce_1x1")
            x = g.node("Add", [x, y], name=f"/{p}/Add") if stride == 1 and cin == c else y
            cin, index = c, index + 1
    x = layer(x, cin, 1280, 1, 1, 1, True, "mobilenet_v2.conv_1x1")
    x = g.node("GlobalAveragePool", [x], name="/mobilenet_v2/pooler/GlobalAveragePool")
    x = g.node("Flatten", [x], name="/mobilenet_v2/Flatten", axis=1)
    x = g.gemm(x, 1280, classes, name="classifier")
    return g.model([("pixel_values", (batch, 3, image, image))], [x], opset=17)


# (expand ratio, kernel, stride, in, out, repeats)
EFFICIENTNET_B0_BLOCKS = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                          (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1))


def efficientnet_b0_hf(*, batch: Dim = "batch_size", image: int = 224, classes: int = 1000,
                       weights: Weights = "external") -> onnx.ModelProto:
    """``transformers``' EfficientNetForImageClassification (google/efficientnet-b0): ZeroPad2d before the strided
    convolutions (``valid`` padding), ``same`` padding on the others, SiLU as Sigmoid·Mul, squeeze-and-excitation
    with a global average pool and 1x1 convs (with bias), and the ``AvgPool2d(1280, ceil_mode=True)`` pooler."""
    g = GraphBuilder("efficientnet-b0", weights=weights)
    x = tf_pad(g, "pixel_values", 0, 1, 0, 1, name="/embeddings/padding")
    x = _conv(g, x, 3, 32, 3, stride=2, name="embeddings.convolution")
    x = _silu(g, _bn(g, x, 32, name="embeddings.batchnorm"), name="embeddings.activation")
    index = 0
    for ratio, k, s, cin, cout, repeats in EFFICIENTNET_B0_BLOCKS:
        for j in range(repeats):
            p = f"encoder.blocks.{index}"
            stride, cin = (s, cin) if j == 0 else (1, cout)
            hidden, block_in = cin * ratio, x
            if ratio != 1:
                x = _conv(g, x, cin, hidden, 1, name=f"{p}.expansion.expand_conv")
                x = _silu(g, _bn(g, x, hidden, name=f"{p}.expansion.expand_bn"), name=f"{p}.expansion.expand_act")
            if stride == 2:
                x = tf_pad(g, x, k // 2 - 1, k // 2, k // 2 - 1, k // 2, name=f"/{p}/depthwise_conv/depthwise_conv_pad")
                x = _conv(g, x, hidden, hidden, k, stride=2, groups=hidden, name=f"{p}.depthwise_conv.depthwise_conv")
            else:
                x = _conv(g, x, hidden, hidden, k, pad=k // 2, groups=hidden, name=f"{p}.depthwise_conv.depthwise_conv")
            x = _silu(g, _bn(g, x, hidden, name=f"{p}.depthwise_conv.depthwise_norm"),
                      name=f"{p}.depthwise_conv.depthwise_act")
            se = max(1, int(cin * 0.25))
            y = g.node("GlobalAveragePool", [x], name=f"/{p}/squeeze_excite/squeeze/GlobalAveragePool")
            y = _silu(g, _conv(g, y, hidden, se, 1, bias=True, name=f"{p}.squeeze_excite.reduce"),
                      name=f"{p}.squeeze_excite.act_reduce")
            y = _conv(g, y, se, hidden, 1, bias=True, name=f"{p}.squeeze_excite.expand")
            y = g.node("Sigmoid", [y], name=f"/{p}/squeeze_excite/act_expand/Sigmoid")
            x = g.node("Mul", [x, y], name=f"/{p}/squeeze_excite/Mul")
            x = _bn(g, _conv(g, x, hidden, cout, 1, name=f"{p}.projection.project_conv"), cout,
                    name=f"{p}.projection.project_bn")
            if stride == 1 and cin == cout:
                x = g.node("Add", [x, block_in], name=f"/{p}/projection/Add")
            index += 1
    x = _conv(g, x, 320, 1280, 1, name="encoder.top_conv")
    x = _silu(g, _bn(g, x, 1280, name="encoder.top_bn"), name="encoder.top_act")
    x = g.node("AveragePool", [x], name="/pooler/AveragePool", ceil_mode=1, kernel_shape=[1280, 1280],
               pads=[0, 0, 0, 0], strides=[1280, 1280])
    x = g.node("Reshape", [x, g.constant("/Constant", [0, -1])], name="/Reshape")  # pooled.reshape(B, -1)... (0 copies)
    x = g.gemm(x, 1280, classes, name="classifier")
    return g.model([("pixel_values", (batch, 3, image, image))], [x], opset=17)


def _first_token(g: GraphBuilder, x: str, *, name: str) -> str:
    """``hidden[:, 0]``: Gather with the scalar index 0 on axis 1."""
    zero = g.node("Constant", [], name=f"{name}/Constant", value=numpy_helper.from_array(np.array(0, np.int64), "v"))
    return g.node("Gather", [x, zero], name=f"{name}/Gather", axis=1)


def _distilbert_mask(g: GraphBuilder, scores: str, p: str) -> str:
    """``scores.masked_fill((mask == 0).view(b, 1, 1, s).expand_as(scores), min)`` with the all-ones mask that
    DistilBERT builds when no attention_mask is given: Equal / Reshape / Expand on constants, then Where."""
    ones = g.node("ConstantOfShape", [g.node("Shape", ["input_ids"], name=f"/{p}/attn/mask/Shape")],
                  name=f"/{p}/attn/mask/ConstantOfShape",
                  value=numpy_helper.from_array(np.array([1.0], np.float32), "v"))
    zero = g.node("Constant", [], name=f"/{p}/attn/mask/Constant",
                  value=numpy_helper.from_array(np.array(0.0, np.float32), "v"))
    masked = g.node("Equal", [ones, zero], name=f"/{p}/attn/mask/Equal")
    b, s = g.dims_of("input_ids", (0, 1), name=f"/{p}/attn/mask/dims")
    view = g.node("Concat", [b, g.constant(f"/{p}/attn/mask/one", [1]), g.constant(f"/{p}/attn/mask/one_1", [1]), s],
                  name=f"/{p}/attn/mask/Concat", axis=0)
    masked = g.node("Reshape", [masked, view], name=f"/{p}/attn/mask/Reshape")
    masked = g.node("Expand", [masked, g.node("Shape", [scores], name=f"/{p}/attn/mask/Shape_1")],
                    name=f"/{p}/attn/mask/Expand")
    fill = g.node("Constant", [], name=f"/{p}/attn/mask/Constant_1",
                  value=numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), "v"))
    return g.node("Where", [masked, fill, scores], name=f"/{p}/attn/Where")


def distilbert_hf(*, layers: int = 6, hidden: int = 768, heads: int = 12, ffn: int = 3072, vocab: int = 30522,
                  positions: int = 512, labels: int = 2, weights: Weights = "external") -> onnx.ModelProto:
    """``transformers``' DistilBertForSequenceClassification on ``input_ids (batch, sequence)``: word and position
    embeddings (Gather; the position ids a Slice of a constant buffer), LayerNormalization, ``layers`` post-LN
    layers with the masked_fill mask, the first token (Gather index 0 on axis 1), pre_classifier + ReLU, classifier."""
    g = GraphBuilder("distilbert", weights=weights)
    words = g.node("Gather", [g.param("distilbert.embeddings.word_embeddings.weight", (vocab, hidden)), "input_ids"],
                   name="/distilbert/embeddings/word_embeddings/Gather")
    _, s = g.dims_of("input_ids", (0, 1), name="/distilbert/embeddings/dims")
    g.initializers.append(numpy_helper.from_array(np.arange(positions, dtype=np.int64)[None], "position_ids"))
    ids = g.node("Slice", ["position_ids", g.constant("/distilbert/embeddings/Constant", [0]), s,
                           g.constant("/distilbert/embeddings/Constant_1", [1]),
                           g.constant("/distilbert/embeddings/Constant_2", [1])], name="/distilbert/embeddings/Slice")
    pos = g.node("Gather", [g.param("distilbert.embeddings.position_embeddings.weight", (positions, hidden)), ids],
                 name="/distilbert/embeddings/position_embeddings/Gather")
    x = g.node("Add", [words, pos], name="/distilbert/embeddings/Add")
    x = _layernorm(g, x, hidden, "distilbert.embeddings.LayerNorm")
    for i in range(layers):
        x = _encoder_layer(g, x, hidden, heads, ffn, "erf", f"distilbert.transformer.layer.{i}", mask=_distilbert_mask)
    x = _first_token(g, x, name="/distilbert")
    x = g.node("Relu", [g.gemm(x, hidden, hidden, name="pre_classifier")], name="/Relu")
    x = g.gemm(x, hidden, labels, name="classifier")
    inputs = [("input_ids", ("batch_size", "sequence_length"))]
    model = g.model([], [x], opset=17, declare_outputs=False)
    model.graph.input.extend([helper.make_tensor_value_info("input_ids", TensorProto.INT64, list(inputs[0][1]))])
    return model


def _rms_norm(g: GraphBuilder, x: str, hidden: int, name: str) -> str:
    """T5's LayerNorm: ``weight * (x * rsqrt(mean(x², -1) + eps))`` — Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul,
    Mul."""
    two = g.node("Constant", [], name=f"{name}/Constant", value=numpy_helper.from_array(np.array(2.0, np.float32), "v"))
    y = g.node("Pow", [x, two], name=f"{name}/Pow")
    y = g.node("ReduceMean", [y], name=f"{name}/ReduceMean", axes=[-1], keepdims=1)
    eps = g.node("Constant", [], name=f"{name}/Constant_1",
                 value=numpy_helper.from_array(np.array(1e-6, np.float32), "v"))
    y = g.node("Reciprocal", [g.node("Sqrt", [g.node("Add", [y, eps], name=f"{name}/Add")], name=f"{name}/Sqrt")],
               name=f"{name}/Reciprocal")
    y = g.node("Mul", [x, y], name=f"{name}/Mul")
    return g.node("Mul", [g.param(f"{name.strip('/').replace('/', '.')}.weight", (hidden,)), y], name=f"{name}/Mul_1")


def _t5_position_bias(g: GraphBuilder, heads: int, buckets: int = 32, max_distance: int = 128) -> str:
    """``compute_bias``: relative positions from two Range nodes, the bidirectional log buckets (Greater, Abs, Less,
    Log, Div, Min, Where …) and the Gather of the bias table, Transpose and Unsqueeze — constants throughout."""
    p = "/encoder/block.0/layer.0/SelfAttention/bias"

    def c(name: str, value: Any, dtype: Any = np.int64) -> str:
        return g.node("Constant", [], name=f"{p}/{name}", value=numpy_helper.from_array(np.array(value, dtype), "v"))

    (s,) = g.dims_of("input_ids", (1,), name=f"{p}/dims")
    s = g.node("Squeeze", [s, g.constant(f"{p}/sq", [0])], name=f"{p}/Squeeze")
    positions = g.node("Range", [c("Constant", 0), s, c("Constant_1", 1)], name=f"{p}/Range")
    context = g.node("Unsqueeze", [positions, g.constant(f"{p}/ax1", [1])], name=f"{p}/Unsqueeze")
    memory = g.node("Unsqueeze", [positions, g.constant(f"{p}/ax0", [0])], name=f"{p}/Unsqueeze_1")
    rel = g.node("Sub", [memory, context], name=f"{p}/Sub")
    half = buckets // 2
    exact = half // 2
    sign = g.node("Cast", [g.node("Greater", [rel, c("Constant_2", 0)], name=f"{p}/Greater")], name=f"{p}/Cast",
                  to=TensorProto.INT64)
    base = g.node("Mul", [sign, c("Constant_3", half)], name=f"{p}/Mul")
    dist = g.node("Abs", [rel], name=f"{p}/Abs")
    small = g.node("Less", [dist, c("Constant_4", exact)], name=f"{p}/Less")
    f = g.node("Cast", [dist], name=f"{p}/Cast_1", to=TensorProto.FLOAT)
    f = g.node("Div", [f, c("Constant_5", exact, np.float32)], name=f"{p}/Div")
    scale = c("Constant_6", math.log(max_distance / exact), np.float32)
    f = g.node("Div", [g.node("Log", [f], name=f"{p}/Log"), scale], name=f"{p}/Div_1")
    f = g.node("Cast", [g.node("Mul", [f, c("Constant_7", half - exact, np.float32)], name=f"{p}/Mul_1")],
               name=f"{p}/Cast_2", to=TensorProto.INT64)
    large = g.node("Min", [g.node("Add", [c("Constant_8", exact), f], name=f"{p}/Add"), c("Constant_9", half - 1)],
                   name=f"{p}/Min")
    bucket = g.node("Add", [base, g.node("Where", [small, dist, large], name=f"{p}/Where")], name=f"{p}/Add_1")
    table = g.param("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", (buckets, heads))
    bias = g.node("Gather", [table, bucket], name=f"{p}/relative_attention_bias/Gather")
    bias = g.node("Transpose", [bias], name=f"{p}/Transpose", perm=[2, 0, 1])
    return g.node("Unsqueeze", [bias, g.constant(f"{p}/ax0_1", [0])], name=f"{p}/Unsqueeze_2")


def t5_encoder_hf(*, layers: int = 6, hidden: int = 512, heads: int = 8, d_kv: int = 64, ffn: int = 2048,
                  vocab: int = 32128, weights: Weights = "external") -> onnx.ModelProto:
    """``transformers``' T5EncoderModel (t5-small): shared embedding Gather, ``layers`` pre-RMSNorm layers
    (attention without scaling, plus the relative position bias of layer 0; ReLU feed-forward without biases),
    final RMSNorm."""
    g = GraphBuilder("t5-encoder", weights=weights)
    inner = heads * d_kv
    x = g.node("Gather", [g.param("shared.weight", (vocab, hidden)), "input_ids"], name="/encoder/embed_tokens/Gather")
    bias = _t5_position_bias(g, heads)
    for i in range(layers):
        p = f"/encoder/block.{i}/layer.0"
        y = _rms_norm(g, x, hidden, f"{p}/layer_norm")

        def heads_of(t: str, name: str, perm: Sequence[int], p: str = p) -> str:
            b, _ = g.dims_of(t, (0, 1), name=f"{p}/SelfAttention/{name}/shape")
            target = g.node("Concat", [b, g.constant(f"{p}/SelfAttention/{name}/m1", [-1]),
                                       g.constant(f"{p}/SelfAttention/{name}/h", [heads]),
                                       g.constant(f"{p}/SelfAttention/{name}/d", [d_kv])],
                            name=f"{p}/SelfAttention/{name}/Concat", axis=0)
            t = g.node("Reshape", [t, target], name=f"{p}/SelfAttention/{name}/Reshape")
            return g.node("Transpose", [t], name=f"{p}/SelfAttention/{name}/Transpose", perm=list(perm))

        w = f"encoder.block.{i}.layer.0.SelfAttention"
        q, k, v = (heads_of(g.node("MatMul", [y, g.param(f"{w}.{n}.weight", (hidden, inner))],
                                   name=f"{p}/SelfAttention/{n}/MatMul"), n, perm)
                   for n, perm in (("q", (0, 2, 1, 3)), ("k", (0, 2, 3, 1)), ("v", (0, 2, 1, 3))))
        scores = g.node("MatMul", [q, k], name=f"{p}/SelfAttention/MatMul")
        scores = g.node("Add", [scores, bias], name=f"{p}/SelfAttention/Add")
        probs = g.node("Softmax", [scores], name=f"{p}/SelfAttention/Softmax", axis=-1)
        ctx = g.node("Transpose", [g.node("MatMul", [probs, v], name=f"{p}/SelfAttention/MatMul_1")],
                     name=f"{p}/SelfAttention/Transpose_3", perm=[0, 2, 1, 3])
        b, _ = g.dims_of(ctx, (0,), name=f"{p}/SelfAttention/merge") + [""]
        ctx = g.node("Reshape", [ctx, g.node("Concat", [b, g.constant(f"{p}/SelfAttention/merge/m1", [-1]),
                                                         g.constant(f"{p}/SelfAttention/merge/i", [inner])],
                                             name=f"{p}/SelfAttention/merge/Concat", axis=0)],
                     name=f"{p}/SelfAttention/Reshape_3")
        o = g.node("MatMul", [ctx, g.param(f"{w}.o.weight", (inner, hidden))], name=f"{p}/SelfAttention/o/MatMul")
        x = g.node("Add", [x, o], name=f"{p}/Add")
        p1, w1 = f"/encoder/block.{i}/layer.1", f"encoder.block.{i}.layer.1.DenseReluDense"
        y = _rms_norm(g, x, hidden, f"{p1}/layer_norm")
        y = g.node("MatMul", [y, g.param(f"{w1}.wi.weight", (hidden, ffn))], name=f"{p1}/DenseReluDense/wi/MatMul")
        y = g.node("Relu", [y], name=f"{p1}/DenseReluDense/act/Relu")
        y = g.node("MatMul", [y, g.param(f"{w1}.wo.weight", (ffn, hidden))], name=f"{p1}/DenseReluDense/wo/MatMul")
        x = g.node("Add", [x, y], name=f"{p1}/Add")
    x = _rms_norm(g, x, hidden, "/encoder/final_layer_norm")
    model = g.model([], [x], opset=17, declare_outputs=False)
    model.graph.input.extend([helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                                            ["batch_size", "sequence_length"])])
    return model


def _expand_size(g: GraphBuilder, x: str, rank: int, *, name: str) -> str:
    """The size of ``t.expand(x.shape[0], -1, -1)`` as exported: the -1 entries replaced by ones with
    ConstantOfShape / Mul / Equal / Where."""
    (b,) = g.dims_of(x, (0,), name=f"{name}/dims")
    size = g.node("Concat", [b] + [g.constant(f"{name}/Constant_m{i}", [-1]) for i in range(rank - 1)],
                  name=f"{name}/Concat", axis=0)
    ones = g.node("ConstantOfShape", [g.node("Shape", [size], name=f"{name}/Shape")], name=f"{name}/ConstantOfShape",
                  value=numpy_helper.from_array(np.array([1], np.int64), "v"))
    neg = g.node("Mul", [ones, g.node("Constant", [], name=f"{name}/Constant",
                                      value=numpy_helper.from_array(np.array(-1, np.int64), "v"))], name=f"{name}/Mul")
    return g.node("Where", [g.node("Equal", [size, neg], name=f"{name}/Equal"), ones, size], name=f"{name}/Where")


def vit_hf(*, layers: int = 12, hidden: int = 768, heads: int = 12, ffn: int = 3072, image: int = 224,
           patch: int = 16, classes: int = 1000, weights: Weights = "external") -> onnx.ModelProto:
    """``transformers``' ViTForImageClassification (google/vit-base-patch16-224): patch Conv (bias), flatten and
    transpose, the class token expanded to the batch (Equal / Where / Expand on constants) and concatenated, the
    position embeddings added, ``layers`` pre-LN layers, the final LayerNorm, the first token (Gather) and the
    classifier."""
    g = GraphBuilder("vit", weights=weights)
    x = _conv(g, "pixel_values", 3, hidden, patch, stride=patch, bias=True,
              name="vit.embeddings.patch_embeddings.projection")
    b, c = g.dims_of(x, (0, 1), name="/vit/embeddings/patch_embeddings/dims")
    x = g.node("Reshape", [x, g.node("Concat", [b, c, g.constant("/vit/embeddings/patch_embeddings/m1", [-1])],
                                     name="/vit/embeddings/patch_embeddings/Concat", axis=0)],
               name="/vit/embeddings/patch_embeddings/Reshape")
    x = g.node("Transpose", [x], name="/vit/embeddings/patch_embeddings/Transpose", perm=[0, 2, 1])
    cls = g.node("Expand", [g.param("vit.embeddings.cls_token", (1, 1, hidden)),
                            _expand_size(g, "pixel_values", 3, name="/vit/embeddings/expand")],
                 name="/vit/embeddings/Expand")
    x = g.node("Concat", [cls, x], name="/vit/embeddings/Concat", axis=1)
    tokens = (image // patch) ** 2 + 1
    x = g.node("Add", [x, g.param("vit.embeddings.position_embeddings", (1, tokens, hidden))],
               name="/vit/embeddings/Add")
    for i in range(layers):
        x = _encoder_layer(g, x, hidden, heads, ffn, "erf", f"vit.encoder.layer.{i}", pre_ln=True)
    x = _layernorm(g, x, hidden, "vit.layernorm")
    x = g.gemm(_first_token(g, x, name="/"), hidden, classes, name="classifier")
    return g.model([("pixel_values", ("batch_size", 3, image, image))], [x], opset=17, declare_outputs=False)


def _channels_first_ln(g: GraphBuilder, x: str, c: int, name: str) -> str:
    """ConvNextLayerNorm(data_format="channels_first"): ReduceMean(axis 1), Sub, Pow, ReduceMean, Add, Sqrt, Div,
    then ``weight[:, None, None] * x + bias[:, None, None]`` (Unsqueeze of the parameters)."""
    u = g.node("ReduceMean", [x], name=f"{name}/ReduceMean", axes=[1], keepdims=1)
    d = g.node("Sub", [x, u], name=f"{name}/Sub")
    two = g.node("Constant", [], name=f"{name}/Constant", value=numpy_helper.from_array(np.array(2.0, np.float32), "v"))
    s = g.node("ReduceMean", [g.node("Pow", [d, two], name=f"{name}/Pow")], name=f"{name}/ReduceMean_1", axes=[1],
               keepdims=1)
    eps = g.node("Constant", [], name=f"{name}/Constant_1",
                 value=numpy_helper.from_array(np.array(1e-6, np.float32), "v"))
    y = g.node("Div", [d, g.node("Sqrt", [g.node("Add", [s, eps], name=f"{name}/Add")], name=f"{name}/Sqrt")],
               name=f"{name}/Div")
    p = name.strip("/").replace("/", ".")
    axes = g.constant(f"{name}/Constant_2", [1, 2])
    w = g.node("Unsqueeze", [g.param(f"{p}.weight", (c,)), axes], name=f"{name}/Unsqueeze")
    bias = g.node("Unsqueeze", [g.param(f"{p}.bias", (c,)), axes], name=f"{name}/Unsqueeze_1")
    return g.node("Add", [g.node("Mul", [w, y], name=f"{name}/Mul"), bias], name=f"{name}/Add_1")


CONVNEXT_TINY = ((3, 96), (3, 192), (9, 384), (3, 768))


def convnext_tiny_hf(*, batch: Dim = "batch_size", image: int = 224, classes: int = 1000,
                     stages: Sequence[tuple[int, int]] = CONVNEXT_TINY,
                     weights: Weights = "external") -> onnx.ModelProto:
    """``transformers``' ConvNextForImageClassification (facebook/convnext-tiny-224): patchify Conv 4x4/4 and a
    channels-first layer norm; per stage a channels-first norm and Conv 2x2/2 (but the first); blocks of depthwise
    7x7 conv, permute, LayerNormalization, Linear 4x + GELU (Erf) + Linear, layer scale, permute back, residual;
    mean over H, W (ReduceMean, keepdims 0), LayerNormalization, classifier."""
    g = GraphBuilder("convnext-tiny", weights=weights)
    c0 = stages[0][1]
    x = _conv(g, "pixel_values", 3, c0, 4, stride=4, bias=True, name="convnext.embeddings.patch_embeddings")
    x = _channels_first_ln(g, x, c0, "/convnext/embeddings/layernorm")
    cin = c0
    for s, (depth, c) in enumerate(stages):
        p = f"convnext.encoder.stages.{s}"
        if s:
            x = _channels_first_ln(g, x, cin, f"/{p}/downsampling_layer/downsampling_layer.0")
            x = _conv(g, x, cin, c, 2, stride=2, bias=True, name=f"{p}.downsampling_layer.1")
        for j in range(depth):
            q = f"{p}.layers.{j}"
            y = _conv(g, x, c, c, 7, pad=3, groups=c, bias=True, name=f"{q}.dwconv")
            y = g.node("Transpose", [y], name=f"/{q}/Transpose", perm=[0, 2, 3, 1])
            y = g.node("LayerNormalization", [y, g.param(f"{q}.layernorm.weight", (c,)),
                                              g.param(f"{q}.layernorm.bias", (c,))],
                       name=f"/{q}/layernorm/LayerNormalization", axis=-1, epsilon=1e-6)
            y = _gelu(g, g.linear(y, c, 4 * c, name=f"{q}.pwconv1"), "erf", f"{q}/act")
            y = g.linear(y, 4 * c, c, name=f"{q}.pwconv2")
            y = g.node("Mul", [g.param(f"{q}.layer_scale_parameter", (c,)), y], name=f"/{q}/Mul")
            y = g.node("Transpose", [y], name=f"/{q}/Transpose_1", perm=[0, 3, 1, 2])
            x = g.node("Add", [x, y], name=f"/{q}/Add")
        cin = c
    x = g.node("ReduceMean", [x], name="/convnext/ReduceMean", axes=[-2, -1], keepdims=0)
    x = g.node("LayerNormalization", [x, g.param("convnext.layernorm.weight", (cin,)),
                                      g.param("convnext.layernorm.bias", (cin,))],
               name="/convnext/layernorm/LayerNormalization", axis=-1, epsilon=1e-12)
    x = g.gemm(x, cin, classes, name="classifier")
    return g.model([("pixel_values", (batch, 3, image, image))], [x], opset=17, declare_outputs=False)
