"""Import an ONNX model as a :class:`~dlaopt.workload.graph.Workload` (``dlaopt import``, ``workload: {onnx: PATH}``).

Only shapes are read. Initializer data is never needed (a model with external data loads without it), except the
small constants that define shapes: Reshape targets, Slice bounds, Split sizes, Clip bounds and so on.

**Steps.** Load the model, then fix the dimensions of the graph inputs: ``batch`` sets the first dimension of every
graph input and ``dims`` gives values to symbolic dimensions (``dim_param``). Any dimension still open is an error
that names the input and the dimension. Next, the exact-GELU pattern, RMSNorm and decomposed layer norms are
recognised. *Static* nodes, the ones that
compute only from initializers, constants and tensor shapes, are told apart from the nodes that compute on the
inputs. Static nodes include the ``Shape → Gather → Unsqueeze → Concat`` chains that PyTorch exports to build
Reshape targets. ONNX shape inference then runs (``onnx.shape_inference``, strict, with data propagation). Last, one
pass in schedule order evaluates the static nodes with numpy when their values are small, and converts every other
node. For each operator, the output shapes from dlaopt's own inference are checked against ONNX's. A disagreement
is an error naming the node.

**Mapping rules.** Layouts are those of :mod:`dlaopt.workload.operator`, the same ones the zoo's builder uses.

* ``Conv`` (2-D, NCHW) → ``conv2d`` with stride, padding (top, left, bottom, right; ``auto_pad`` is resolved),
  dilation and groups. It becomes ``depthwise_conv2d`` when groups == input channels > 1 and the output channels
  are a multiple of them, as in the zoo's builder. The bias input is dropped because the zoo omits biases (they
  have no MACs).
* ``MatMul`` → ``matmul`` ``a (..., M, K) x b (..., K, N)``, with batch dimensions broadcast; 1-D operands are an
  error. ``Gemm`` → ``matmul``. A transposed constant ``B`` (``transB``) is declared in (K, N) orientation (only
  shapes matter), and a transposed computed operand gets a ``transpose`` operator. ``alpha`` and ``beta`` are
  ignored. A constant ``C`` is dropped (a bias); a computed ``C`` becomes an ``add``.
* Biases: an ``Add`` of a constant per-channel vector right after a matmul or a convolution is folded into it, as
  long as nothing else reads that operator's output. The vector has N elements along the last axis of a matmul, or
  K along axis 1 of a convolution.
* ``BatchNormalization`` right after a convolution (nothing else reading the convolution) is folded into it and
  gives no operator. Any other batch norm becomes a ``norm`` (batchnorm, axis 1) with its scale and bias as weights.
* Activations map to ``activation``: ``Relu``; ``Clip`` (0..6 → relu6, 0..∞ → relu); ``Sigmoid``; ``Tanh``;
  ``Elu``; ``Selu``; ``HardSwish`` → hswish; and ``Gelu``, together with the exact-GELU pattern ``Div(x, √2) → Erf →
  Add 1 → Mul x → Mul 0.5`` (or with ``Mul(x, 0.5)`` first), which becomes one gelu. Their parameters (alpha,
  approximate) are not modelled, because they do not change the cost. When nothing else reads the output of the
  convolution, matmul or elementwise operator that feeds an activation, the activation is fused into that operator
  as its ``activation`` attribute, as the zoo fuses them.
* ``Add``/``Sub``/``Mul``/``Div``/``Max``/``Min`` → ``elementwise``, with broadcasting. A constant operand becomes
  a weight tensor; a scalar constant gets shape ``[1]``.
* ``MaxPool``/``AveragePool`` → ``pool`` (kernel, strides, pads). ``ceil_mode`` becomes extra bottom/right padding
  that gives ONNX's output size. ``GlobalAveragePool``/``GlobalMaxPool`` → a global ``pool``.
* ``Softmax`` → ``softmax`` (before opset 13, the last axis only). ``LayerNormalization`` over the last axis →
  ``norm`` (layernorm) with scale and bias weights. RMSNorm (``Pow(x, 2) → ReduceMean → Add eps → Sqrt →
  Reciprocal`` or ``Div(1, ·)`` ``→ Mul x``, or ``Div(x, ·)``; then an optional constant scale) and a layer norm
  written out over one axis (``ReduceMean``, ``Sub``, ``Pow``, ``ReduceMean``, ``Add``, ``Sqrt``, ``Div``, then an
  optional constant scale and shift: ConvNeXt's channels-first norm, pre-opset-17 exports) → one ``norm``
  (layernorm) over that axis; a scale or shift without one value per element of the axis stays elementwise.
* ``Pow``, ``Equal``, ``Less`` and ``Where`` (condition, then, else) → ``elementwise`` of those functions;
  ``Sqrt``, ``Reciprocal``, ``Neg``, ``Exp``, ``Log`` and ``Abs`` → a one-input ``elementwise``. None is fused.
* ``ReduceMean`` / ``ReduceSum`` / ``ReduceMax`` (axes as attribute or input; ``keepdims``) → ``pool`` (avg / avg /
  max): a global pool over H and W of an NCHW tensor, otherwise a pool of the input viewed as ``(1, before,
  reduced, after)`` between reshapes; the axes must be consecutive. A ``MaxPool``/``AveragePool`` whose kernel is
  larger than its input and whose only window covers it (EfficientNet's ``AvgPool2d(1280, ceil_mode=True)``) is a
  global pool.
* ``Pad`` (constant mode; pads from a constant input, the attribute before opset 11, ``axes`` from opset 18):
  zero padding of H and W of an NCHW tensor whose only reader is a ``Conv``/``MaxPool``/``AveragePool`` is added
  to that operator's padding; other constant padding is a ``concat`` per padded axis with weight blocks of the
  padding. Reflect / edge modes and negative pads are errors.
* ``Gather``: a constant table with computed indices (an embedding lookup, axis 0) → ``reshape`` whose input is
  the table declared with the shape of the gathered rows ``(number of indices, row...)``: only those rows are read.
  Constant indices on a computed tensor in increasing arithmetic progression → ``slice`` along the axis (then a
  ``reshape`` when the index is a scalar or not 1-D). Any other gather is an error.
* ``Expand`` on computed data → ``tile`` of the broadcast axes (after a ``reshape`` that adds leading axes).
  ``ConstantOfShape`` and ``Range`` must be static (they are evaluated).
* Static nodes too large to evaluate (more than 65,536 elements) keep their shape, from ONNX's inference or
  dlaopt's own rules for lookups, broadcasts and layout changes, and a data-path node reads them as weights.
* ``Concat``, ``Split``, ``Slice``, ``Transpose`` and ``Tile`` map to the data-movement kinds of the same names.
  Split sizes come from the input, the attribute, ``num_outputs`` or equal parts. Slice needs constant
  starts/ends/axes/steps with positive steps. ``Reshape`` (where ``0`` copies a dimension and ``-1`` is inferred),
  ``Flatten``, ``Squeeze`` and ``Unsqueeze`` map to ``reshape``.
* ``Identity``, ``Dropout``, ``Cast`` and ``CastLike`` are removed, as are reshapes, transposes, slices, splits and
  tiles that change nothing: their output is their input.
* Any other operator on the data path, an operator of a custom domain, or a shape that cannot be resolved is an
  :class:`~dlaopt.errors.InputError`. The error names the node (its name and op type) and says what to do.
  Nothing partial is returned.

**Names.** Operators are named after their ONNX nodes: ``/layer1/layer1.0/conv1/Conv`` becomes
``layer1.layer1.0.conv1.Conv``, and an unnamed node is ``<OpType>_<index>``. The tensor that an operator produces
is ``<operator>.out`` (``.out<j>`` when it produces several). Graph inputs and weights keep their ONNX names.
Characters other than letters, digits, ``_``, ``.`` and ``-`` become ``_``, and clashes get ``_1``, ``_2`` …
suffixes. Only tensors that some operator reads or writes are kept. Graph outputs, and produced tensors that nobody
reads, have role ``output``. The workload has no ``params``, so the inline document of
:func:`workload_document` loads back into an identical workload.

**Modules.** This package's ``__init__`` holds the public API and the workload document;
:mod:`~dlaopt.io.onnx.importer` the importer's state, its driver loop and ONNX shape inference;
:mod:`~dlaopt.io.onnx.patterns` the exact-GELU and decomposed-norm recognition; :mod:`~dlaopt.io.onnx.constants`
static evaluation; :mod:`~dlaopt.io.onnx.converters` (compute operators) and :mod:`~dlaopt.io.onnx.movement`
(data movement) the per-operator converters, each with the table of the operators it converts (merged in
:mod:`~dlaopt.io.onnx.table`); :mod:`~dlaopt.io.onnx.common` what they share.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import onnx
import yaml

from dlaopt.errors import InputError
from dlaopt.io.document import max_onnx_bytes, read_bytes
from dlaopt.io.onnx.common import Shape, sanitize
from dlaopt.io.onnx.importer import Importer
from dlaopt.workload.graph import Workload

__all__ = [
    "ONNX_SIZE_HINT",
    "ModelSource",
    "Shape",
    "dump_workload_yaml",
    "import_onnx",
    "import_onnx_document",
    "load_model",
    "workload_document",
]

ModelSource = str | Path | onnx.ModelProto


def import_onnx(
    source: ModelSource,
    *,
    batch: int | None = None,
    dims: Mapping[str, int] | None = None,
    name: str | None = None,
    dtype_bytes: int | None = None,
) -> Workload:
    """The workload of the ONNX model ``source`` (a path or an ``onnx.ModelProto``); see the module docstring.

    ``batch`` sets the first dimension of every graph input; ``dims`` sizes the symbolic dimensions by name
    (``{"seq": 128}``); ``name`` defaults to the file's stem (the graph's name for a ModelProto); ``dtype_bytes``
    defaults to the size of the model's floating-point type (4 when it has none). Errors are
    :class:`~dlaopt.errors.InputError` naming the file, and the node or the input dimension at fault.
    """
    model, file = load_model(source)
    if name is None:
        name = Path(file).stem if file else (sanitize(model.graph.name) or "onnx-model")
    return Importer(model, file=file, batch=batch, dims=dict(dims or {}), name=name,
                     dtype_bytes=dtype_bytes).run()


def import_onnx_document(source: ModelSource, **kwargs: Any) -> dict[str, Any]:
    """The inline workload document of the ONNX model (:func:`import_onnx` then :func:`workload_document`)."""
    return workload_document(import_onnx(source, **kwargs))


ONNX_SIZE_HINT = ("keep the weights in external data (onnx.save_model(..., save_as_external_data=True)), or set the "
                  "environment variable DLAOPT_MAX_ONNX_MB to a larger number of MiB")


def load_model(source: ModelSource) -> tuple[onnx.ModelProto, str | None]:
    """``(model, file)``: the model, without external data (only shapes are needed), and its file name if any."""
    if isinstance(source, onnx.ModelProto):
        return source, None
    file = str(source)
    path = Path(source)
    expected = "an ONNX model file (.onnx)"
    if not path.exists():
        raise InputError("file not found", file=file, expected=expected)
    if path.is_dir():
        raise InputError("is a directory, not a file", file=file, expected=expected)
    data = read_bytes(path, expected=expected, limit=max_onnx_bytes(), raise_hint=ONNX_SIZE_HINT)
    try:
        model = onnx.load_model_from_string(data)  # never reads external data (only shapes are needed)
    except Exception as exc:  # protobuf's DecodeError, RecursionError of a too deeply nested message, ...
        raise InputError(f"not an ONNX model: it cannot be parsed as an ONNX ModelProto ({type(exc).__name__})",
                         file=file, expected=expected) from None
    if not model.HasField("graph") or not model.graph.node:
        raise InputError("not an ONNX model: it has no graph nodes", file=file, expected=expected)
    return model, file


def workload_document(workload: Workload) -> dict[str, Any]:
    """The inline workload document of ``workload``: ``{name, dtype_bytes, tensors: [{name, shape, role}],
    operators: [{name, kind, inputs, outputs, attrs}]}``, the format instance files accept under ``workload:``.

    Attributes are written normalised (every default filled in); a tensor whose ``dtype_bytes`` differs from the
    most common one carries its own. ``Workload.params`` has no place in the document.
    """
    counts = Counter(t.dtype_bytes for t in workload.tensors.values())
    dtype = counts.most_common(1)[0][0] if counts else 1
    tensors = []
    for t in workload.tensors.values():
        entry: dict[str, Any] = {"name": t.name, "shape": list(t.shape), "role": t.role.value}
        if t.dtype_bytes != dtype:
            entry["dtype_bytes"] = t.dtype_bytes
        tensors.append(entry)
    operators = []
    for op in workload.operators:
        entry = {"name": op.name, "kind": op.kind.value, "inputs": list(op.inputs), "outputs": list(op.outputs)}
        if op.attrs:
            entry["attrs"] = {k: _plain(v) for k, v in op.attrs.items()}
        operators.append(entry)
    return {"name": workload.name, "dtype_bytes": dtype, "tensors": tensors, "operators": operators}


def dump_workload_yaml(doc: Mapping[str, Any], *, comment: str | None = None) -> str:
    """``doc`` (from :func:`workload_document`) as YAML with one line per tensor and per operator, after the
    optional ``comment`` lines."""
    data = dict(doc)
    for key in ("tensors", "operators"):
        if key in data:
            data[key] = [_Flow(item) for item in data[key]]
    text = yaml.dump(data, Dumper=_FlowDumper, sort_keys=False, default_flow_style=False, width=1 << 20,
                     allow_unicode=True)
    if comment:
        text = "".join(f"# {line}\n" for line in comment.splitlines()) + text
    return text


class _Flow(dict):  # type: ignore[type-arg]
    """A mapping written on one line."""


class _FlowDumper(yaml.SafeDumper):
    pass


_FlowDumper.add_representer(
    _Flow, lambda dumper, value: dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=True)
)


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value
