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
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import yaml
from onnx import NodeProto, TensorProto, helper, numpy_helper

from dlaopt.errors import InputError, format_key_path
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OperatorSpecError, OpKind, infer_output_shapes, normalize_attrs
from dlaopt.workload.tensor import Tensor, TensorRole

Shape = tuple[int, ...]
ModelSource = str | Path | onnx.ModelProto

_SMALL_CONSTANT = 4096  # initializers up to this many elements are read (shape constants); larger ones never are
_MAX_EVAL = 1 << 16  # static nodes are evaluated with numpy only on (and into) arrays at most this large
_DEFAULT_DOMAINS = ("", "ai.onnx")
_SHAPE_READERS = frozenset({"Shape", "Size"})  # nodes that read only the shape of their input
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")
_CONVS = frozenset({OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D})
_TAKES_ACTIVATION = frozenset({OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.MATMUL, OpKind.ELEMENTWISE})
_FLOAT_BYTES = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2, TensorProto.DOUBLE: 8}
_ONNXSIM = "fold constant subgraphs with onnx-simplifier (`onnxsim in.onnx out.onnx`)"


# ================================================================================================ public API
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
        name = Path(file).stem if file else (_sanitize(model.graph.name) or "onnx-model")
    return _Importer(model, file=file, batch=batch, dims=dict(dims or {}), name=name,
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
    from dlaopt.io.document import max_onnx_bytes, read_bytes

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


def _sanitize(name: str) -> str:
    """An ONNX name as a dlaopt name: ``/a/b/Conv`` → ``a.b.Conv``; other odd characters become ``_``."""
    return _NOT_NAME.sub("_", name.strip().strip("/").replace("/", ".")).strip("_")


# ================================================================================================ the importer
@dataclass
class _Op:
    """An operator under construction (attributes stay mutable so that activations can be fused into it)."""

    name: str
    kind: OpKind
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]


class _Importer:
    def __init__(self, model: onnx.ModelProto, *, file: str | None, batch: int | None, dims: dict[str, int],
                 name: str, dtype_bytes: int | None) -> None:
        self.model = model
        self.file = file
        self.batch = batch
        self.dims = dims
        self.name = name
        self.opset = next((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS), 1)
        self.initializers = {t.name: t for t in model.graph.initializer}
        self.graph_inputs = [v for v in model.graph.input if v.name not in self.initializers]
        self.graph_outputs = [v.name for v in model.graph.output]
        self.dtype_bytes = dtype_bytes if dtype_bytes is not None else _model_dtype_bytes(model, self.graph_inputs)
        self.nodes: list[NodeProto] = []
        self.index: dict[int, int] = {}  # id(node) -> position, for the labels of unnamed nodes
        self.static: set[str] = set()  # ONNX tensors computed from constants and shapes only
        self.values: dict[str, np.ndarray] = {}  # static tensors whose values are known
        self.shapes: dict[str, Shape] = {}  # ONNX tensor -> resolved shape
        self.inferred: dict[str, tuple[int | None, ...]] = {}  # ONNX tensor -> ONNX-inferred shape (None: open)
        self.uses: Counter[str] = Counter()  # ONNX tensor -> data reads (node inputs but Shape/Size, graph outputs)
        self.tensor_of: dict[str, str] = {}  # ONNX tensor (computed or graph input) -> dlaopt tensor
        self.info: dict[str, tuple[Shape, TensorRole]] = {}  # dlaopt tensor -> shape, role (in creation order)
        self.weights: dict[tuple[str, Shape], str] = {}  # (ONNX name, declared shape) -> dlaopt weight tensor
        self.producer: dict[str, _Op] = {}
        self.live: dict[str, int] = {}  # dlaopt tensor -> data reads it has in the ONNX graph (fusion test)
        self.ops: list[_Op] = []
        self.op_names: set[str] = set()
        self.readers: dict[str, list[NodeProto]] = {}  # ONNX tensor -> the nodes reading it
        self.pad_into: dict[str, tuple[str, tuple[int, int, int, int]]] = {}  # Pad output -> (input, pads) folded

    # ------------------------------------------------------------------------------------------------ driver
    def run(self) -> Workload:
        self._read_constants()
        input_shapes = self._input_shapes()
        self.nodes = _fuse_exact_gelu(list(self.model.graph.node), set(self.graph_outputs), self.values.get)
        self.nodes = _fuse_norms(self.nodes, set(self.graph_outputs), self.values.get, set(self.initializers))
        self._classify()
        self.inferred = _infer_shapes(self.model, input_shapes, self.file)
        for node in self.nodes:
            if node.op_type not in _SHAPE_READERS:
                self.uses.update(n for n in node.input if n)
            for n in dict.fromkeys(n for n in node.input if n):
                self.readers.setdefault(n, []).append(node)
        self.uses.update(self.graph_outputs)
        for name, shape in input_shapes.items():
            t = self._unique_tensor(_sanitize(name) or "input")
            self.tensor_of[name], self.shapes[name], self.info[t] = t, shape, (shape, TensorRole.INPUT)
        for node in self.nodes:
            if any(o in self.static for o in node.output):
                self._evaluate(node)
            else:
                _CONVERTERS[node.op_type](self, node)
        return self._finish()

    def _read_constants(self) -> None:
        """Shapes of the initializers; values of the small ones and of ``Constant`` nodes."""
        for name, t in self.initializers.items():
            self.shapes[name] = tuple(int(d) for d in t.dims)
            if math.prod(t.dims) <= _SMALL_CONSTANT and t.data_location != TensorProto.EXTERNAL:
                value = _try(lambda t=t: numpy_helper.to_array(t))
                if value is not None:
                    self.values[name] = value
        for node in self.model.graph.node:
            if node.op_type == "Constant" and node.domain in _DEFAULT_DOMAINS:
                value = _try(lambda node=node: _constant_value(node))
                if value is not None:
                    self.values[node.output[0]] = value

    def _input_shapes(self) -> dict[str, Shape]:
        """The graph inputs' shapes with ``batch`` and ``dims`` applied; every dimension must be resolved."""
        named = {d.dim_param for v in self.graph_inputs for d in _declared_dims(v) if d.HasField("dim_param")}
        for key, value in self.dims.items():
            if key not in named:
                raise InputError(f"no graph input has a dimension named '{key}'", file=self.file, path=("dims",),
                                 expected="one of the model's symbolic dimensions: "
                                 + (", ".join(sorted(named)) or "(none)"))
            if not _is_positive_int(value):
                raise InputError(f"dimension '{key}' must be a positive integer, got {value!r}", file=self.file,
                                 path=("dims", key))
        for key, value in (("batch", self.batch), ("dtype_bytes", self.dtype_bytes)):
            if value is not None and not _is_positive_int(value):
                raise InputError(f"{key} must be a positive integer, got {value!r}", file=self.file, path=(key,))
        return {v.name: self._input_shape(v) for v in self.graph_inputs}

    def _input_shape(self, v: onnx.ValueInfoProto) -> Shape:
        if not v.type.HasField("tensor_type") or not v.type.tensor_type.HasField("shape"):
            raise InputError(f"graph input '{v.name}' is not a tensor of known rank", file=self.file,
                             expected="graph inputs declared as tensors with their dimensions (fixed or named)")
        shape = []
        for axis, d in enumerate(v.type.tensor_type.shape.dim):
            if axis == 0 and self.batch is not None:
                shape.append(int(self.batch))
            elif d.HasField("dim_value") and d.dim_value > 0:
                shape.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param in self.dims:
                shape.append(int(self.dims[d.dim_param]))
            elif d.HasField("dim_param"):
                raise InputError(
                    f"dimension {axis} of graph input '{v.name}' is the symbolic '{d.dim_param}', which has no value",
                    file=self.file, path=("dims",),
                    expected=f"its size: dims: {{{d.dim_param}: VALUE}} in the instance's workload, or "
                    f"--dim {d.dim_param}=VALUE with `dlaopt import`"
                    + (" (batch: N / --batch N sets every input's first dimension)" if axis == 0 else ""))
            else:
                raise InputError(
                    f"dimension {axis} of graph input '{v.name}' has neither a size nor a name", file=self.file,
                    expected="a model exported with fixed or named input dimensions"
                    + (" (or batch: N / --batch N, which sets the first dimension)" if axis == 0 else ""))
        return tuple(shape)

    def _classify(self) -> None:
        """Mark static tensors (computed from initializers, constants and shapes only); check the other nodes."""
        self.static = set(self.initializers)
        known = set(self.initializers) | {v.name for v in self.graph_inputs}
        for i, node in enumerate(self.nodes):
            self.index[id(node)] = i
            reads = [n for n in node.input if n]
            for n in reads:
                if n not in known:
                    raise self.error(node, f"reads '{n}', which is neither a graph input, an initializer nor the "
                                           "output of an earlier node; the nodes must be listed in topological order")
            default_domain = node.domain in _DEFAULT_DOMAINS
            if default_domain and (node.op_type in _SHAPE_READERS or all(n in self.static for n in reads)):
                self.static.update(o for o in node.output if o)
            elif not default_domain:
                raise self.error(node, f"belongs to the custom operator domain '{node.domain}', which dlaopt does "
                                       "not model; export the plain ONNX graph (without runtime-specific fusions) "
                                       "or replace the operator")
            elif node.op_type not in _CONVERTERS:
                advice = _ADVICE.get(node.op_type, f"replace it in the model, or {_ONNXSIM} if it only computes "
                                                   "constants")
                raise self.error(node, f"is not supported by the ONNX importer; {advice} (supported on the data "
                                       f"path: {', '.join(sorted(set(_CONVERTERS) - {_NORM_OP}))})")
            known.update(o for o in node.output if o)

    def _finish(self) -> Workload:
        outputs = set()
        for name in self.graph_outputs:
            t = self.tensor_of.get(name)
            if t is None or t not in self.producer:
                raise InputError(f"graph output '{name}' is not computed by any operator (it is a constant or a "
                                 "graph input passed through)", file=self.file,
                                 expected="graph outputs computed from the inputs")
            outputs.add(t)
        if not self.ops:
            raise InputError("the model has no operator that computes on its inputs", file=self.file)
        consumed = {t for op in self.ops for t in op.inputs}
        used = dict.fromkeys(t for op in self.ops for t in (*op.inputs, *op.outputs))
        tensors = []
        for t in used:
            shape, role = self.info[t]
            if role == TensorRole.ACTIVATION and (t in outputs or t not in consumed):
                role = TensorRole.OUTPUT
            tensors.append(Tensor(t, shape, role, self.dtype_bytes))
        operators = [Operator(o.name, o.kind, tuple(o.inputs), tuple(o.outputs), o.attrs) for o in self.ops]
        try:
            return Workload.create(self.name, tensors, operators)
        except InputError as exc:  # the per-operator checks make this unlikely
            raise InputError(f"the imported graph is invalid at '{format_key_path(exc.path)}': {exc.message}",
                             file=self.file) from None

    # ------------------------------------------------------------------------------------------------ helpers
    def label(self, node: NodeProto) -> str:
        if node.name:
            return f"node '{node.name}' ({node.op_type})"
        out = f", output '{node.output[0]}'" if node.output else ""
        return f"node #{self.index.get(id(node), '?')} ({node.op_type}{out})"

    def error(self, node: NodeProto, problem: str) -> InputError:
        return InputError(f"{self.label(node)} {problem}", file=self.file)

    def attrs(self, node: NodeProto) -> dict[str, Any]:
        out = {}
        for a in node.attribute:
            value = helper.get_attribute_value(a)
            out[a.name] = value.decode() if isinstance(value, bytes) else value
        return out

    def input(self, node: NodeProto, j: int) -> str | None:
        """The name of the node's ``j``-th input, or None when it is absent."""
        return node.input[j] if j < len(node.input) and node.input[j] else None

    def shape(self, node: NodeProto, name: str) -> Shape:
        s = self.shapes.get(name)
        if s is None:
            raise self.error(node, f"reads '{name}', whose shape could not be resolved (ONNX shape inference left "
                                   f"it open and it could not be evaluated); {_ONNXSIM}, or export with fixed shapes")
        return s

    def const(self, node: NodeProto, j: int, what: str) -> np.ndarray | None:
        """The value of input ``j`` (None when the input is absent); an error when it is not a known constant."""
        name = self.input(node, j)
        if name is None:
            return None
        if name not in self.values:
            raise self.error(node, f"needs its {what} (input '{name}') as a constant, but it is computed at run time "
                                   f"and could not be folded; {_ONNXSIM}, or export with fixed shapes")
        return self.values[name]

    def data(self, node: NodeProto, name: str) -> str:
        """The dlaopt tensor read as data for the ONNX tensor ``name`` (a constant becomes a weight tensor)."""
        t = self.tensor_of.get(name)
        if t is not None:
            return t
        return self.weight(name, self.shape(node, name))

    def weight(self, name: str, shape: Shape) -> str:
        """The weight tensor of the constant ``name`` declared with ``shape`` (a scalar gets shape ``(1,)``)."""
        shape = shape or (1,)
        key = (name, shape)
        if key not in self.weights:
            t = self._unique_tensor(_sanitize(name) or "const")
            self.weights[key], self.info[t] = t, (shape, TensorRole.WEIGHT)
        return self.weights[key]

    def emit(self, node: NodeProto, kind: OpKind, inputs: Sequence[str], attrs: Mapping[str, Any],
             outputs: Sequence[str | None], suffix: str = "") -> _Op:
        """Append an operator for ``node``; ``outputs`` are the ONNX tensors it computes (None: internal)."""
        base = _sanitize(node.name) or f"{node.op_type}_{self.index.get(id(node), 0)}"
        name = _unique(f"{base}.{suffix}" if suffix else base, self.op_names)
        self.op_names.add(name)
        try:
            norm = normalize_attrs(kind, attrs)
            shapes = infer_output_shapes(kind, norm, [self.info[t][0] for t in inputs])
        except OperatorSpecError as exc:
            raise self.error(node, f"cannot be expressed as a {kind.value} operator: {exc}") from None
        op = _Op(name, kind, list(inputs), [], dict(norm))
        for j, (out, shape) in enumerate(zip(outputs, shapes, strict=True)):
            t = self._unique_tensor(f"{name}.out" if len(shapes) == 1 else f"{name}.out{j}")
            self.info[t], self.producer[t] = (shape, TensorRole.ACTIVATION), op
            op.outputs.append(t)
            if out:
                self._check_inferred(node, out, shape, kind.value)
                self.tensor_of[out], self.shapes[out], self.live[t] = t, shape, self.uses[out]
            else:
                self.live[t] = 1 if out is None else 0
        self.ops.append(op)
        return op

    def alias(self, node: NodeProto, out: str, source: str) -> None:
        """The node computes nothing: its output ``out`` is the tensor of ``source``."""
        t = self.data(node, source)
        shape = self.info[t][0]
        self._check_inferred(node, out, shape, "input")
        self.tensor_of[out], self.shapes[out] = t, shape
        self.live[t] = self.live.get(t, 0) + self.uses[out] - 1

    def fusable(self, name: str, kinds: frozenset[OpKind]) -> _Op | None:
        """The operator of a kind in ``kinds`` that computes ``name``, when this node is its only reader."""
        t = self.tensor_of.get(name)
        op = self.producer.get(t) if t is not None else None
        if op is None or op.kind not in kinds or self.live.get(t, 0) != 1 or "activation" in op.attrs:
            return None
        return op

    def _check_inferred(self, node: NodeProto, out: str, shape: Shape, what: str) -> None:
        inferred = self.inferred.get(out)
        if inferred is None:
            return
        if len(inferred) != len(shape) or any(i is not None and i != s for i, s in zip(inferred, shape, strict=False)):
            onnx_shape = "[" + ", ".join("?" if i is None else str(i) for i in inferred) + "]"
            raise self.error(node, f"output '{out}': ONNX shape inference gives {onnx_shape} but dlaopt's "
                                   f"{what} gives {list(shape)}; an attribute of this node is not modelled — "
                                   "replace the node or report the model")

    def _unique_tensor(self, base: str) -> str:
        return _unique(base, self.info.keys())

    def _evaluate(self, node: NodeProto) -> None:
        """A static node: its values with numpy when small enough, else only its outputs' shapes."""
        fn = _EVALUATORS.get(node.op_type)
        results = None
        if fn is not None:
            args = [self.values.get(n) if n else None for n in node.input]
            readable = node.op_type in _SHAPE_READERS or all(
                a is not None and a.size <= _MAX_EVAL for n, a in zip(node.input, args, strict=True) if n)
            if readable:
                with np.errstate(all="ignore"):  # e.g. T5's log of relative positions, masked out later
                    results = _try(lambda: [np.asarray(v) for v in fn(self, node, args)])
        for j, out in enumerate(node.output):
            if not out:
                continue
            if results is not None and j < len(results) and results[j].size <= _MAX_EVAL:
                self.values[out] = results[j]
                self.shapes[out] = tuple(int(d) for d in results[j].shape)
            elif out in self.inferred and None not in self.inferred[out]:
                self.shapes[out] = tuple(int(d) for d in self.inferred[out])  # type: ignore[arg-type]
            elif j == 0 and all(n in self.shapes for n in node.input if n):  # too large to evaluate
                shape = _try(lambda: _static_shape(self, node))
                if shape is not None:
                    self.shapes[out] = shape


_BROADCASTING = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater", "Where",
                           "And", "Or"})
_SAME_SHAPE = frozenset({"Cast", "Identity", "Neg", "Abs", "Sqrt", "Exp", "Log", "Reciprocal", "Not", "Floor"})


def _static_shape(imp: _Importer, node: NodeProto) -> Shape | None:
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
        return _resolve_reshape(shapes[0], spec, bool(attrs.get("allowzero", 0)))
    return None


def _unique(base: str, used: Any) -> str:
    name, n = base, 0
    while name in used:
        n += 1
        name = f"{base}_{n}"
    return name


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # an evaluation that fails only leaves a value unknown
        return None


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0


def _declared_dims(v: onnx.ValueInfoProto) -> Sequence[Any]:
    tt = v.type.tensor_type
    return tt.shape.dim if v.type.HasField("tensor_type") and tt.HasField("shape") else ()


def _model_dtype_bytes(model: onnx.ModelProto, inputs: Sequence[onnx.ValueInfoProto]) -> int:
    """Bytes of the first floating-point type among the graph inputs, then the initializers (4 if none)."""
    types = [v.type.tensor_type.elem_type for v in inputs] + [t.data_type for t in model.graph.initializer]
    return next((_FLOAT_BYTES[e] for e in types if e in _FLOAT_BYTES), 4)


def _constant_value(node: NodeProto) -> np.ndarray:
    (attr,) = node.attribute
    value = helper.get_attribute_value(attr)
    if attr.name == "value":
        return numpy_helper.to_array(value)
    if attr.name in ("value_float", "value_floats"):
        return np.asarray(value, dtype=np.float32)
    if attr.name in ("value_int", "value_ints"):
        return np.asarray(value, dtype=np.int64)
    raise ValueError(f"Constant with attribute {attr.name}")


def _infer_shapes(model: onnx.ModelProto, input_shapes: Mapping[str, Shape],
                  file: str | None) -> dict[str, tuple[int | None, ...]]:
    """ONNX's shapes (None for an open dimension) of every tensor, with the graph inputs fixed to ``input_shapes``.

    Inference runs on a copy whose large initializers carry no data (only shapes matter) and whose declared
    intermediate and output shapes are dropped (they may name symbolic dimensions).
    """
    graph = onnx.GraphProto(name=model.graph.name, node=model.graph.node, input=model.graph.input,
                            output=model.graph.output, sparse_initializer=model.graph.sparse_initializer)
    for t in model.graph.initializer:
        if math.prod(t.dims) <= _SMALL_CONSTANT:
            graph.initializer.append(t)
        else:
            placeholder = graph.initializer.add(name=t.name, dims=t.dims, data_type=t.data_type,
                                                data_location=TensorProto.EXTERNAL)
            placeholder.external_data.add(key="location", value="dlaopt-shape-only")
    for v in graph.input:
        if v.name in input_shapes:
            for d, size in zip(v.type.tensor_type.shape.dim, input_shapes[v.name], strict=True):
                d.Clear()
                d.dim_value = size
    for v in graph.output:
        v.type.tensor_type.ClearField("shape")
    copy = onnx.ModelProto(ir_version=model.ir_version, opset_import=model.opset_import, graph=graph,
                           functions=model.functions)
    try:
        inferred = onnx.shape_inference.infer_shapes(copy, check_type=True, strict_mode=True, data_prop=True)
    except Exception as exc:  # InferenceError, or a validation error of the model
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fixed = ", ".join(f"{k} {list(v)}" for k, v in input_shapes.items())
        raise InputError(f"ONNX shape inference failed with the inputs {fixed}: {detail}", file=file,
                         expected="input sizes that fit the model (check batch and dims) and operators of an "
                         "opset the installed onnx package knows") from None
    out: dict[str, tuple[int | None, ...]] = {}
    for v in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
        if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape"):
            out[v.name] = tuple(int(d.dim_value) if d.HasField("dim_value") else None
                                for d in v.type.tensor_type.shape.dim)
    return out


# ================================================================================================ exact GELU
def _fuse_exact_gelu(nodes: list[NodeProto], graph_outputs: set[str],
                     value_of: Callable[[str], np.ndarray | None]) -> list[NodeProto]:
    """``nodes`` with every exact-GELU pattern replaced by one ``Gelu`` node at the place of its last node.

    The pattern (PyTorch's export of ``gelu``): ``Div(x, √2)`` or ``Mul(x, 1/√2)`` → ``Erf`` → ``Add(·, 1)`` →
    ``Mul(x, ·)`` → ``Mul(·, 0.5)``, or with ``Mul(x, 0.5)`` computed first and multiplied last. Every
    intermediate must be read only inside the pattern.
    """
    producer = {o: n for n in nodes for o in n.output if o}
    readers: dict[str, list[NodeProto]] = {}
    for n in nodes:
        for name in n.input:
            readers.setdefault(name, []).append(n)

    def sole_reader(name: str, op_type: str) -> NodeProto | None:
        found = readers.get(name, [])
        if len(found) == 1 and name not in graph_outputs and found[0].op_type == op_type:
            return found[0]
        return None

    def other(node: NodeProto, name: str) -> str | None:
        ins = list(node.input)
        if len(ins) != 2 or ins.count(name) != 1:
            return None
        return ins[1] if ins[0] == name else ins[0]

    def is_const(name: str | None, value: float) -> bool:
        v = value_of(name) if name else None
        return v is not None and v.size == 1 and math.isclose(float(v.reshape(-1)[0]), value, rel_tol=1e-3)

    def match(erf: NodeProto) -> tuple[str, list[NodeProto], NodeProto] | None:
        scaled = producer.get(erf.input[0])
        if scaled is None or scaled.domain not in _DEFAULT_DOMAINS or sole_reader(erf.input[0], "Erf") is not erf:
            return None
        divides = scaled.op_type == "Div" and is_const(scaled.input[1], math.sqrt(2.0))
        if divides or (scaled.op_type == "Mul" and is_const(scaled.input[1], math.sqrt(0.5))):
            x = scaled.input[0]
        elif scaled.op_type == "Mul" and is_const(scaled.input[0], math.sqrt(0.5)):
            x = scaled.input[1]
        else:
            return None
        add = sole_reader(erf.output[0], "Add")
        if add is None or not is_const(other(add, erf.output[0]), 1.0):
            return None
        m1 = sole_reader(add.output[0], "Mul")
        if m1 is None:
            return None
        factor = other(m1, add.output[0])
        if factor == x:
            m2 = sole_reader(m1.output[0], "Mul")
            if m2 is not None and is_const(other(m2, m1.output[0]), 0.5):
                return x, [scaled, erf, add, m1, m2], m2
            return None
        half = producer.get(factor) if factor else None
        if (half is not None and half.op_type == "Mul" and sole_reader(factor, "Mul") is m1  # type: ignore[arg-type]
                and is_const(other(half, x), 0.5)):
            return x, [half, scaled, erf, add, m1], m1
        return None

    removed: set[int] = set()
    replacement: dict[int, NodeProto] = {}
    for erf in nodes:
        found = match(erf) if erf.op_type == "Erf" and erf.domain in _DEFAULT_DOMAINS else None
        if found is None or any(id(n) in removed for n in found[1]):
            continue
        x, pattern, last = found
        removed.update(id(n) for n in pattern)
        replacement[id(last)] = helper.make_node("Gelu", [x], [last.output[0]],
                                                 name=f"{erf.name}.gelu" if erf.name else "")
    return [replacement.get(id(n), n) for n in nodes if id(n) not in removed or id(n) in replacement]


# ================================================================================================ decomposed norms
_NORM_OP = "dlaopt.Norm"  # the op type of a recognised RMSNorm / decomposed layer norm (never seen by ONNX)


def _fuse_norms(nodes: list[NodeProto], graph_outputs: set[str], value_of: Callable[[str], np.ndarray | None],
                initializers: set[str]) -> list[NodeProto]:
    """``nodes`` with every decomposed normalisation replaced by one ``dlaopt.Norm`` node at the place of its last
    node (inputs: x, then the optional scale and shift; attributes: ``axis``, ``rms``).

    Layer norm over one axis (ConvNeXt's channels-first form, or any pre-opset-17 export): ``u = ReduceMean(x)``,
    ``d = Sub(x, u)``, ``ReduceMean(Pow(d, 2))`` → ``Add eps`` → ``Sqrt`` → ``Div(d, ·)`` (or ``Reciprocal`` /
    ``Div(1, ·)`` then ``Mul d``), then optionally ``Mul`` by a constant scale and ``Add`` of a constant shift.
    RMSNorm (T5): ``Pow(x, 2)`` → ``ReduceMean`` → ``Add eps`` → ``Sqrt`` → ``Reciprocal`` / ``Div(1, ·)`` →
    ``Mul x`` (or ``Div(x, ·)``), then optionally ``Mul`` by a constant scale. ``Cast`` nodes on ``x`` are looked
    through. Both reductions must keep their dimension and reduce the same single axis; every intermediate must be
    read only inside the pattern.
    """
    producer = {o: n for n in nodes for o in n.output if o}
    readers: dict[str, list[NodeProto]] = {}
    for n in nodes:
        for name in dict.fromkeys(n.input):
            readers.setdefault(name, []).append(n)
    static = set(initializers)
    for n in nodes:
        if n.domain in _DEFAULT_DOMAINS and (n.op_type in _SHAPE_READERS or all(i in static for i in n.input if i)):
            static.update(o for o in n.output if o)

    def only_readers(name: str, op_types: Sequence[str], count: int = 1) -> list[NodeProto] | None:
        found = readers.get(name, [])
        if len(found) != count or name in graph_outputs or any(f.op_type not in op_types for f in found):
            return None
        return found

    def sole(name: str, *op_types: str) -> NodeProto | None:
        found = only_readers(name, op_types)
        return found[0] if found else None

    def other(node: NodeProto, name: str) -> str | None:
        ins = list(node.input)
        if len(ins) != 2 or ins.count(name) != 1:
            return None
        return ins[1] if ins[0] == name else ins[0]

    def scalar(name: str | None) -> float | None:
        v = value_of(name) if name else None
        return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None

    def root(name: str) -> str:
        while name in producer and producer[name].op_type in ("Cast", "Identity"):
            name = producer[name].input[0]
        return name

    def mean_axis(node: NodeProto | None) -> int | None:
        """The one axis a keepdims ReduceMean reduces (attribute or, from opset 18, input)."""
        if node is None or node.op_type != "ReduceMean":
            return None
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if not attrs.get("keepdims", 1):
            return None
        if "axes" in attrs:
            axes = [int(v) for v in attrs["axes"]]
        else:
            value = value_of(node.input[1]) if len(node.input) > 1 and node.input[1] else None
            axes = [] if value is None else [int(v) for v in value.reshape(-1)]
        return axes[0] if len(axes) == 1 else None

    def normalise(num: str, sqrt: NodeProto) -> tuple[str, list[NodeProto]] | None:
        """``num / sqrt`` as written after ``Sqrt``: its output and nodes."""
        first = sole(sqrt.output[0], "Div", "Reciprocal")
        if first is None:
            return None
        if first.op_type == "Div" and list(first.input) == [num, sqrt.output[0]]:
            return first.output[0], [first]
        if first.op_type == "Div" and (first.input[1] != sqrt.output[0] or scalar(first.input[0]) != 1.0):
            return None
        mul = sole(first.output[0], "Mul")
        if mul is None or other(mul, first.output[0]) != num:
            return None
        return mul.output[0], [first, mul]

    def match(pow_: NodeProto) -> tuple[NodeProto, list[NodeProto]] | None:
        if pow_.domain not in _DEFAULT_DOMAINS or scalar(pow_.input[1]) != 2.0:
            return None
        mean2 = sole(pow_.output[0], "ReduceMean")
        axis = mean_axis(mean2)
        if mean2 is None or axis is None:
            return None
        add = sole(mean2.output[0], "Add")
        if add is None or scalar(other(add, mean2.output[0])) is None:
            return None
        sqrt = sole(add.output[0], "Sqrt")
        if sqrt is None:
            return None
        d = pow_.input[0]
        sub = producer.get(d)
        mean1 = producer.get(sub.input[1]) if sub is not None and sub.op_type == "Sub" else None
        layer = (sub is not None and mean1 is not None and mean_axis(mean1) == axis
                 and root(mean1.input[0]) == root(sub.input[0]) and only_readers(mean1.output[0], ("Sub",)) is not None
                 and only_readers(d, ("Pow", "Div", "Mul"), 2) is not None)
        if layer:
            assert sub is not None and mean1 is not None
            x, pattern = root(sub.input[0]), [mean1, sub, pow_, mean2, add, sqrt]
            found = normalise(d, sqrt)
        else:
            x, pattern = root(d), [pow_, mean2, add, sqrt]
            found = normalise(d, sqrt)
            if found is None:  # Mul / Div reads x itself, possibly before its Cast
                for name in {x, d}:
                    found = normalise(name, sqrt)
                    if found is not None:
                        break
        if found is None:
            return None
        y, tail = found
        pattern += tail
        scale = shift = ""
        mul = sole(y, "Mul")
        if mul is not None and other(mul, y) in static:
            scale, y = other(mul, y) or "", mul.output[0]
            pattern.append(mul)
            add2 = sole(y, "Add") if layer else None
            if add2 is not None and other(add2, y) in static:
                shift, y = other(add2, y) or "", add2.output[0]
                pattern.append(add2)
        name = pattern[0].name.rsplit("/", 1)[0] + ("/LayerNorm" if layer else "/RMSNorm") if pattern[0].name else ""
        norm = helper.make_node(_NORM_OP, [x, scale, shift], [y], name=name, axis=axis, rms=int(not layer))
        return norm, pattern

    removed: set[int] = set()
    replacement: dict[int, NodeProto] = {}
    for node in nodes:
        found = match(node) if node.op_type == "Pow" else None
        if found is None or any(id(n) in removed for n in found[1]):
            continue
        norm, pattern = found
        removed.update(id(n) for n in pattern)
        replacement[id(pattern[-1])] = norm
    return [replacement.get(id(n), n) for n in nodes if id(n) not in removed or id(n) in replacement]


# ================================================================================================ static evaluation
_Evaluator = Callable[["_Importer", NodeProto, Sequence[Any]], list[Any]]


def _axes(node: NodeProto, imp: _Importer, args: Sequence[np.ndarray | None]) -> list[int] | None:
    """``axes`` of Squeeze/Unsqueeze/ReduceProd: the attribute (old opsets) or the second input."""
    a = imp.attrs(node)
    if "axes" in a:
        return [int(v) for v in a["axes"]]
    if len(args) > 1 and args[1] is not None:
        return [int(v) for v in np.asarray(args[1]).reshape(-1)]
    return None


def _ev_unsqueeze(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    x = np.asarray(args[0])
    axes = _axes(node, imp, args) or []
    rank = x.ndim + len(axes)
    for ax in sorted(a % rank for a in axes):
        x = np.expand_dims(x, ax)
    return [x]


def _ev_squeeze(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    x = np.asarray(args[0])
    axes = _axes(node, imp, args)
    return [np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(a % x.ndim for a in axes))]


def _ev_slice(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
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


def _ev_div(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    a, b = np.asarray(args[0]), np.asarray(args[1])
    if np.issubdtype(a.dtype, np.integer):
        return [np.trunc(a / b).astype(a.dtype)]
    return [a / b]


def _ev_shape(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    shape = imp.shapes[node.input[0]]
    a = imp.attrs(node)
    return [np.array(shape[a.get("start", 0):a.get("end", len(shape))], dtype=np.int64)]


def _ev_constant_of_shape(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    shape = [int(v) for v in np.asarray(args[0]).reshape(-1)]
    if math.prod(shape) > _MAX_EVAL:
        raise ValueError("too large to evaluate")
    value = imp.attrs(node).get("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, dtype=np.float32)
    return [np.full(shape, fill[0], dtype=fill.dtype)]


def _ev_reduce_prod(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    axes = _axes(node, imp, args)
    keep = bool(imp.attrs(node).get("keepdims", 1))
    return [np.prod(args[0], axis=None if axes is None else tuple(axes), keepdims=keep)]


def _ev_reduce(fn: Callable[..., Any]) -> _Evaluator:
    """ReduceSum / ReduceMean / ReduceMax / ReduceMin: ``axes`` as an attribute or (newer opsets) an input."""
    def evaluate(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
        axes = _axes(node, imp, args)
        keep = bool(imp.attrs(node).get("keepdims", 1))
        if not axes and imp.attrs(node).get("noop_with_empty_axes", 0):
            return [np.asarray(args[0])]
        return [np.asarray(fn(args[0], axis=tuple(axes) if axes else None, keepdims=keep))]

    return evaluate


def _ev_reshape(imp: _Importer, node: NodeProto, args: Sequence[Any]) -> list[np.ndarray]:
    x = np.asarray(args[0])
    spec = [int(v) for v in np.asarray(args[1]).reshape(-1)]
    return [x.reshape(_resolve_reshape(x.shape, spec, bool(imp.attrs(node).get("allowzero", 0))))]


_EVALUATORS: dict[str, _Evaluator] = {
    "Constant": lambda imp, node, args: [_constant_value(node)],
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


def _resolve_reshape(shape: Sequence[int], spec: Sequence[int], allowzero: bool) -> Shape:
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


# ================================================================================================ converters
def _spatial_pads(imp: _Importer, node: NodeProto, sizes: Sequence[int], kernel: Sequence[int],
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


def _pair_attr(imp: _Importer, node: NodeProto, key: str, default: int = 1) -> tuple[int, int]:
    values = [int(v) for v in imp.attrs(node).get(key, [default, default])]
    if len(values) != 2:
        raise imp.error(node, f"has {key} {values}; only 2-D operators (NCHW inputs) are supported")
    return (values[0], values[1])


def _require_rank4(imp: _Importer, node: NodeProto, shape: Shape) -> None:
    if len(shape) != 4:
        raise imp.error(node, f"has an input of shape {list(shape)}; only 2-D convolution and pooling on NCHW "
                              "(4-D) inputs are supported")


def _unused_extra_outputs(imp: _Importer, node: NodeProto, what: str) -> None:
    if any(o and imp.uses[o] for o in node.output[1:]):
        raise imp.error(node, f"has its {what} output(s) read by other nodes, which dlaopt does not model; export "
                              "the inference graph")


def _conv(imp: _Importer, node: NodeProto) -> None:
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


def _matmul(imp: _Importer, node: NodeProto) -> None:
    a, b = node.input[0], node.input[1]
    if len(imp.shape(node, a)) < 2 or len(imp.shape(node, b)) < 2:
        raise imp.error(node, "has a 1-D operand; dlaopt's matmul needs at least 2-D operands (reshape the vector "
                              "to a 1-row or 1-column matrix in the model)")
    imp.emit(node, OpKind.MATMUL, [imp.data(node, a), imp.data(node, b)], {}, [node.output[0]])


def _gemm(imp: _Importer, node: NodeProto) -> None:
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


def _fold_bias(imp: _Importer, node: NodeProto) -> bool:
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


def _elementwise(function: str) -> Callable[[_Importer, NodeProto], None]:
    def convert(imp: _Importer, node: NodeProto) -> None:
        ins = [n for n in node.input if n]
        if len(ins) == 1:  # a one-input Max / Min
            imp.alias(node, node.output[0], ins[0])
            return
        if function == "add" and len(ins) == 2 and _fold_bias(imp, node):
            return
        imp.emit(node, OpKind.ELEMENTWISE, [imp.data(node, n) for n in ins], {"function": function},
                 [node.output[0]])

    return convert


def _apply_activation(imp: _Importer, node: NodeProto, function: str) -> None:
    """Fused into the producing conv / matmul / elementwise operator when it is the only reader, else its own."""
    x = node.input[0]
    op = imp.fusable(x, _TAKES_ACTIVATION)
    if op is not None:
        op.attrs["activation"] = function
        imp.alias(node, node.output[0], x)
        return
    imp.emit(node, OpKind.ACTIVATION, [imp.data(node, x)], {"function": function}, [node.output[0]])


def _activation(function: str) -> Callable[[_Importer, NodeProto], None]:
    return lambda imp, node: _apply_activation(imp, node, function)


def _clip(imp: _Importer, node: NodeProto) -> None:
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


def _batchnorm(imp: _Importer, node: NodeProto) -> None:
    _unused_extra_outputs(imp, node, "training-mode (running mean / variance)")
    x = node.input[0]
    if imp.fusable(x, _CONVS) is not None:  # folded into the convolution's weights
        imp.alias(node, node.output[0], x)
        return
    if len(imp.shape(node, x)) < 2:
        raise imp.error(node, "normalises a tensor without a channel axis")
    imp.emit(node, OpKind.NORM, [imp.data(node, n) for n in node.input[:3]], {"norm": "batchnorm", "axis": 1},
             [node.output[0]])


def _layernorm(imp: _Importer, node: NodeProto) -> None:
    _unused_extra_outputs(imp, node, "mean / inverse standard deviation")
    xs = imp.shape(node, node.input[0])
    axis = int(imp.attrs(node).get("axis", -1))
    if axis % max(len(xs), 1) != len(xs) - 1:
        raise imp.error(node, f"normalises over axes {axis % len(xs)}..{len(xs) - 1}; only the last axis is "
                              "modelled (reshape so that the normalised axes are one)")
    inputs = [imp.data(node, n) for n in node.input[:3] if n]
    imp.emit(node, OpKind.NORM, inputs, {"norm": "layernorm", "axis": -1}, [node.output[0]])


def _softmax(imp: _Importer, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    rank = len(xs)
    axis = int(imp.attrs(node).get("axis", -1 if imp.opset >= 13 else 1)) % rank
    if imp.opset < 13 and axis != rank - 1:
        raise imp.error(node, f"normalises over the flattened axes {axis}.. (opset {imp.opset} semantics); export "
                              "with opset >= 13 or softmax over the last axis")
    imp.emit(node, OpKind.SOFTMAX, [imp.data(node, node.input[0])], {"axis": -1 if axis == rank - 1 else axis},
             [node.output[0]])


def _pool(mode: str) -> Callable[[_Importer, NodeProto], None]:
    def convert(imp: _Importer, node: NodeProto) -> None:
        _unused_extra_outputs(imp, node, "Indices")
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


def _global_pool(mode: str) -> Callable[[_Importer, NodeProto], None]:
    def convert(imp: _Importer, node: NodeProto) -> None:
        _require_rank4(imp, node, imp.shape(node, node.input[0]))
        imp.emit(node, OpKind.POOL, [imp.data(node, node.input[0])], {"mode": mode, "global": True},
                 [node.output[0]])

    return convert


def _concat(imp: _Importer, node: NodeProto) -> None:
    ins = [n for n in node.input if n]
    rank = len(imp.shape(node, ins[0]))
    axis = int(imp.attrs(node)["axis"]) % rank
    if len(ins) == 1:
        imp.alias(node, node.output[0], ins[0])
        return
    imp.emit(node, OpKind.CONCAT, [imp.data(node, n) for n in ins], {"axis": axis}, [node.output[0]])


def _reshape_to(imp: _Importer, node: NodeProto, target: Shape | None) -> None:
    """Reshape ``input[0]`` into ``target``; None: ONNX's inferred output shape (an error when it is open)."""
    x, out = node.input[0], node.output[0]
    if target is None:
        inferred = imp.inferred.get(out)
        if inferred is None or None in inferred:
            raise imp.error(node, f"has a target shape that could not be resolved; {_ONNXSIM}, or export with "
                                  "fixed shapes")
        target = tuple(int(d) for d in inferred)  # type: ignore[arg-type]
    if target == imp.shape(node, x):
        imp.alias(node, out, x)
        return
    imp.emit(node, OpKind.RESHAPE, [imp.data(node, x)], {"shape": target}, [out])


def _reshape(imp: _Importer, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    name = imp.input(node, 1)
    target = None
    if name is not None and name in imp.values:
        spec = [int(v) for v in np.asarray(imp.values[name]).reshape(-1)]
        try:
            target = _resolve_reshape(xs, spec, bool(imp.attrs(node).get("allowzero", 0)))
        except ValueError as exc:
            raise imp.error(node, f"{exc}") from None
    _reshape_to(imp, node, target)


def _flatten(imp: _Importer, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    axis = int(imp.attrs(node).get("axis", 1))
    axis = axis + len(xs) if axis < 0 else axis
    _reshape_to(imp, node, (math.prod(xs[:axis]), math.prod(xs[axis:])))


def _squeeze(imp: _Importer, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    axes = _squeeze_axes(imp, node)
    if axes is None:
        _reshape_to(imp, node, tuple(d for d in xs if d != 1))
        return
    drop = {a % len(xs) for a in axes}
    _reshape_to(imp, node, tuple(d for i, d in enumerate(xs) if i not in drop))


def _unsqueeze(imp: _Importer, node: NodeProto) -> None:
    xs = imp.shape(node, node.input[0])
    axes = _squeeze_axes(imp, node)
    if axes is None:
        raise imp.error(node, "has no axes")
    out = list(xs)
    rank = len(xs) + len(axes)
    for ax in sorted(a % rank for a in axes):
        out.insert(ax, 1)
    _reshape_to(imp, node, tuple(out))


def _squeeze_axes(imp: _Importer, node: NodeProto) -> list[int] | None:
    attrs = imp.attrs(node)
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    value = imp.const(node, 1, "axes")
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _transpose(imp: _Importer, node: NodeProto) -> None:
    rank = len(imp.shape(node, node.input[0]))
    perm = tuple(int(p) for p in imp.attrs(node).get("perm", range(rank - 1, -1, -1)))
    if perm == tuple(range(rank)):
        imp.alias(node, node.output[0], node.input[0])
        return
    imp.emit(node, OpKind.TRANSPOSE, [imp.data(node, node.input[0])], {"perm": perm}, [node.output[0]])


def _split(imp: _Importer, node: NodeProto) -> None:
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


def _slice(imp: _Importer, node: NodeProto) -> None:
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


def _tile(imp: _Importer, node: NodeProto) -> None:
    reps = [int(v) for v in np.asarray(imp.const(node, 1, "repeats")).reshape(-1)]
    if all(r == 1 for r in reps):
        imp.alias(node, node.output[0], node.input[0])
        return
    imp.emit(node, OpKind.TILE, [imp.data(node, node.input[0])], {"reps": reps}, [node.output[0]])


def _no_op(imp: _Importer, node: NodeProto) -> None:
    if node.op_type == "Dropout":
        _unused_extra_outputs(imp, node, "mask")
    imp.alias(node, node.output[0], node.input[0])


def _norm_pattern(imp: _Importer, node: NodeProto) -> None:
    """A recognised RMSNorm / decomposed layer norm (see :func:`_fuse_norms`): one ``norm`` (layernorm) over its
    axis with the scale and shift that have one value per element of it; any other scale or shift stays an
    elementwise operator."""
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


def _unary(function: str) -> Callable[[_Importer, NodeProto], None]:
    def convert(imp: _Importer, node: NodeProto) -> None:
        imp.emit(node, OpKind.ELEMENTWISE, [imp.data(node, node.input[0])], {"function": function}, [node.output[0]])

    return convert


def _binary(function: str) -> Callable[[_Importer, NodeProto], None]:
    def convert(imp: _Importer, node: NodeProto) -> None:
        imp.emit(node, OpKind.ELEMENTWISE, [imp.data(node, n) for n in node.input[:2]], {"function": function},
                 [node.output[0]])

    return convert


def _where(imp: _Importer, node: NodeProto) -> None:
    imp.emit(node, OpKind.ELEMENTWISE, [imp.data(node, n) for n in node.input[:3]], {"function": "where"},
             [node.output[0]])


def _expand(imp: _Importer, node: NodeProto) -> None:
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


def _constant_only(what: str) -> Callable[[_Importer, NodeProto], None]:
    def convert(imp: _Importer, node: NodeProto) -> None:
        raise imp.error(node, f"computes its {what} from run-time data; dlaopt folds it only when its inputs are "
                              f"constants or shapes: {_ONNXSIM}, or export with fixed shapes")

    return convert


def _reduce(mode: str) -> Callable[[_Importer, NodeProto], None]:
    """``ReduceMean`` / ``ReduceMax`` / ``ReduceSum`` → ``pool`` (avg / max / avg: a sum reads and adds the same
    elements as a mean). Over the two spatial axes of an NCHW tensor it is a global pool; over any other run of
    consecutive axes a global pool of the input viewed as ``(1, before, reduced, after)``, between reshapes."""

    def convert(imp: _Importer, node: NodeProto) -> None:
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


def _gather(imp: _Importer, node: NodeProto) -> None:
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
                          "a graph input, or " + _ONNXSIM)


def _pad(imp: _Importer, node: NodeProto) -> None:
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


def _unpadded(imp: _Importer, name: str) -> tuple[str, tuple[int, int, int, int]]:
    """The tensor a conv / pool reads for ``name`` and the padding of a Pad folded into it (zeros when none)."""
    return imp.pad_into.get(name, (name, (0, 0, 0, 0)))


def _add_pads(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


_Converter = Callable[[_Importer, NodeProto], None]
_CONVERTERS: dict[str, _Converter] = {
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
    "Expand": _expand,
    "ConstantOfShape": _constant_only("shape"),
    "Range": _constant_only("bounds"),
    _NORM_OP: _norm_pattern,
}

_ADVICE: dict[str, str] = {
    "Erf": "only the exact-GELU pattern x * 0.5 * (1 + Erf(x / sqrt(2))) is recognised: export with opset >= 20 "
           "to get a Gelu node, or replace the operator",
    "ConvTranspose": "transposed convolutions are not modelled: replace the operator (e.g. by resize + conv)",
}
