"""The importer: its state, the driver loop and its helpers, and ONNX shape inference.

The driver reads the constants, fixes the graph inputs' shapes, recognises patterns (:mod:`~dlaopt.io.onnx.patterns`),
tells static nodes from data-path nodes, runs ONNX shape inference, then, in schedule order, evaluates every static
node (:mod:`~dlaopt.io.onnx.constants`) and converts every other one (:mod:`~dlaopt.io.onnx.table`). The mapping
rules are in the docstring of :mod:`dlaopt.io.onnx`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import NodeProto, TensorProto, helper, numpy_helper

from dlaopt.errors import InputError, format_key_path
from dlaopt.io.onnx.common import (
    DEFAULT_DOMAINS,
    MAX_EVAL,
    NORM_OP,
    ONNXSIM,
    SHAPE_READERS,
    SMALL_CONSTANT,
    Op,
    Shape,
    sanitize,
)
from dlaopt.io.onnx.constants import EVALUATORS, constant_value, static_shape
from dlaopt.io.onnx.patterns import fuse_exact_gelu, fuse_norms
from dlaopt.io.onnx.table import ADVICE, CONVERTERS
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OperatorSpecError, OpKind, infer_output_shapes, normalize_attrs
from dlaopt.workload.tensor import Tensor, TensorRole

_FLOAT_BYTES = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2, TensorProto.DOUBLE: 8}


class Importer:
    """One import of an ONNX model: :meth:`run` returns its workload (it implements
    :class:`~dlaopt.io.onnx.common.ImporterState` for the converters and the static evaluators)."""

    def __init__(self, model: onnx.ModelProto, *, file: str | None, batch: int | None, dims: dict[str, int],
                 name: str, dtype_bytes: int | None) -> None:
        self.model = model
        self.file = file
        self.batch = batch
        self.dims = dims
        self.name = name
        self.opset = next((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), 1)
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
        self.producer: dict[str, Op] = {}
        self.live: dict[str, int] = {}  # dlaopt tensor -> data reads it has in the ONNX graph (fusion test)
        self.ops: list[Op] = []
        self.op_names: set[str] = set()
        self.readers: dict[str, list[NodeProto]] = {}  # ONNX tensor -> the nodes reading it
        self.pad_into: dict[str, tuple[str, tuple[int, int, int, int]]] = {}  # Pad output -> (input, pads) folded

    # ------------------------------------------------------------------------------------------------ driver
    def run(self) -> Workload:
        self._read_constants()
        input_shapes = self._input_shapes()
        self.nodes = fuse_exact_gelu(list(self.model.graph.node), set(self.graph_outputs), self.values.get)
        self.nodes = fuse_norms(self.nodes, set(self.graph_outputs), self.values.get, set(self.initializers))
        self._classify()
        self.inferred = _infer_shapes(self.model, input_shapes, self.file)
        for node in self.nodes:
            if node.op_type not in SHAPE_READERS:
                self.uses.update(n for n in node.input if n)
            for n in dict.fromkeys(n for n in node.input if n):
                self.readers.setdefault(n, []).append(node)
        self.uses.update(self.graph_outputs)
        for name, shape in input_shapes.items():
            t = self._unique_tensor(sanitize(name) or "input")
            self.tensor_of[name], self.shapes[name], self.info[t] = t, shape, (shape, TensorRole.INPUT)
        for node in self.nodes:
            if any(o in self.static for o in node.output):
                self._evaluate(node)
            else:
                CONVERTERS[node.op_type](self, node)
        return self._finish()

    def _read_constants(self) -> None:
        """Shapes of the initializers; values of the small ones and of ``Constant`` nodes."""
        for name, t in self.initializers.items():
            self.shapes[name] = tuple(int(d) for d in t.dims)
            if math.prod(t.dims) <= SMALL_CONSTANT and t.data_location != TensorProto.EXTERNAL:
                value = _try(lambda t=t: numpy_helper.to_array(t))
                if value is not None:
                    self.values[name] = value
        for node in self.model.graph.node:
            if node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS:
                value = _try(lambda node=node: constant_value(node))
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
            default_domain = node.domain in DEFAULT_DOMAINS
            if default_domain and (node.op_type in SHAPE_READERS or all(n in self.static for n in reads)):
                self.static.update(o for o in node.output if o)
            elif not default_domain:
                raise self.error(node, f"belongs to the custom operator domain '{node.domain}', which dlaopt does "
                                       "not model; export the plain ONNX graph (without runtime-specific fusions) "
                                       "or replace the operator")
            elif node.op_type not in CONVERTERS:
                advice = ADVICE.get(node.op_type, f"replace it in the model, or {ONNXSIM} if it only computes "
                                                   "constants")
                raise self.error(node, f"is not supported by the ONNX importer; {advice} (supported on the data "
                                       f"path: {', '.join(sorted(set(CONVERTERS) - {NORM_OP}))})")
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
                                   f"it open and it could not be evaluated); {ONNXSIM}, or export with fixed shapes")
        return s

    def const(self, node: NodeProto, j: int, what: str) -> np.ndarray | None:
        """The value of input ``j`` (None when the input is absent); an error when it is not a known constant."""
        name = self.input(node, j)
        if name is None:
            return None
        if name not in self.values:
            raise self.error(node, f"needs its {what} (input '{name}') as a constant, but it is computed at run time "
                                   f"and could not be folded; {ONNXSIM}, or export with fixed shapes")
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
            t = self._unique_tensor(sanitize(name) or "const")
            self.weights[key], self.info[t] = t, (shape, TensorRole.WEIGHT)
        return self.weights[key]

    def emit(self, node: NodeProto, kind: OpKind, inputs: Sequence[str], attrs: Mapping[str, Any],
             outputs: Sequence[str | None], suffix: str = "") -> Op:
        """Append an operator for ``node``; ``outputs`` are the ONNX tensors it computes (None: internal)."""
        base = sanitize(node.name) or f"{node.op_type}_{self.index.get(id(node), 0)}"
        name = _unique(f"{base}.{suffix}" if suffix else base, self.op_names)
        self.op_names.add(name)
        try:
            norm = normalize_attrs(kind, attrs)
            shapes = infer_output_shapes(kind, norm, [self.info[t][0] for t in inputs])
        except OperatorSpecError as exc:
            raise self.error(node, f"cannot be expressed as a {kind.value} operator: {exc}") from None
        op = Op(name, kind, list(inputs), [], dict(norm))
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

    def fusable(self, name: str, kinds: frozenset[OpKind]) -> Op | None:
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
        fn = EVALUATORS.get(node.op_type)
        results = None
        if fn is not None:
            args = [self.values.get(n) if n else None for n in node.input]
            readable = node.op_type in SHAPE_READERS or all(
                a is not None and a.size <= MAX_EVAL for n, a in zip(node.input, args, strict=True) if n)
            if readable:
                with np.errstate(all="ignore"):  # e.g. T5's log of relative positions, masked out later
                    results = _try(lambda: [np.asarray(v) for v in fn(self, node, args)])
        for j, out in enumerate(node.output):
            if not out:
                continue
            if results is not None and j < len(results) and results[j].size <= MAX_EVAL:
                self.values[out] = results[j]
                self.shapes[out] = tuple(int(d) for d in results[j].shape)
            elif out in self.inferred and None not in self.inferred[out]:
                self.shapes[out] = tuple(int(d) for d in self.inferred[out])  # type: ignore[arg-type]
            elif j == 0 and all(n in self.shapes for n in node.input if n):  # too large to evaluate
                shape = _try(lambda: static_shape(self, node))
                if shape is not None:
                    self.shapes[out] = shape


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


def _infer_shapes(model: onnx.ModelProto, input_shapes: Mapping[str, Shape],
                  file: str | None) -> dict[str, tuple[int | None, ...]]:
    """ONNX's shapes (None for an open dimension) of every tensor, with the graph inputs fixed to ``input_shapes``.

    Inference runs on a copy whose large initializers carry no data (only shapes matter) and whose declared
    intermediate and output shapes are dropped (they may name symbolic dimensions).
    """
    graph = onnx.GraphProto(name=model.graph.name, node=model.graph.node, input=model.graph.input,
                            output=model.graph.output, sparse_initializer=model.graph.sparse_initializer)
    for t in model.graph.initializer:
        if math.prod(t.dims) <= SMALL_CONSTANT:
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
