"""What the ONNX importer's modules share: the importer as its converters see it (:class:`ImporterState`), the
operator under construction, ONNX names as dlaopt names, and the limits and hints they all quote.

The per-operator converters (:mod:`~dlaopt.io.onnx.converters`, :mod:`~dlaopt.io.onnx.movement`) and the static
evaluators (:mod:`~dlaopt.io.onnx.constants`) are written against :class:`ImporterState`, which
:class:`~dlaopt.io.onnx.importer.Importer` implements, so that none of them imports the importer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from onnx import NodeProto

from dlaopt.errors import InputError
from dlaopt.workload.operator import OpKind
from dlaopt.workload.tensor import TensorRole

Shape = tuple[int, ...]

SMALL_CONSTANT = 4096  # initializers up to this many elements are read (shape constants); larger ones never are
MAX_EVAL = 1 << 16  # static nodes are evaluated with numpy only on (and into) arrays at most this large
DEFAULT_DOMAINS = ("", "ai.onnx")
SHAPE_READERS = frozenset({"Shape", "Size"})  # nodes that read only the shape of their input
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")
ONNXSIM = "fold constant subgraphs with onnx-simplifier (`onnxsim in.onnx out.onnx`)"
NORM_OP = "dlaopt.Norm"  # the op type of a recognised RMSNorm / decomposed layer norm (never seen by ONNX)


def sanitize(name: str) -> str:
    """An ONNX name as a dlaopt name: ``/a/b/Conv`` → ``a.b.Conv``; other odd characters become ``_``."""
    return _NOT_NAME.sub("_", name.strip().strip("/").replace("/", ".")).strip("_")


@dataclass
class Op:
    """An operator under construction (attributes stay mutable so that activations can be fused into it)."""

    name: str
    kind: OpKind
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]


class ImporterState(Protocol):
    """The importer's state and helpers that the converters and the static evaluators use (see
    :class:`~dlaopt.io.onnx.importer.Importer`, which implements it)."""

    opset: int
    graph_outputs: list[str]
    static: set[str]  # ONNX tensors computed from constants and shapes only
    values: dict[str, np.ndarray]  # static tensors whose values are known
    shapes: dict[str, Shape]  # ONNX tensor -> resolved shape
    inferred: dict[str, tuple[int | None, ...]]  # ONNX tensor -> ONNX-inferred shape (None: open)
    uses: Counter[str]  # ONNX tensor -> data reads (node inputs but Shape/Size, graph outputs)
    info: dict[str, tuple[Shape, TensorRole]]  # dlaopt tensor -> shape, role (in creation order)
    readers: dict[str, list[NodeProto]]  # ONNX tensor -> the nodes reading it
    pad_into: dict[str, tuple[str, tuple[int, int, int, int]]]  # Pad output -> (input, pads) folded

    def error(self, node: NodeProto, problem: str) -> InputError: ...

    def attrs(self, node: NodeProto) -> dict[str, Any]: ...

    def input(self, node: NodeProto, j: int) -> str | None: ...

    def shape(self, node: NodeProto, name: str) -> Shape: ...

    def const(self, node: NodeProto, j: int, what: str) -> np.ndarray | None: ...

    def data(self, node: NodeProto, name: str) -> str: ...

    def weight(self, name: str, shape: Shape) -> str: ...

    def emit(self, node: NodeProto, kind: OpKind, inputs: Sequence[str], attrs: Mapping[str, Any],
             outputs: Sequence[str | None], suffix: str = "") -> Op: ...

    def alias(self, node: NodeProto, out: str, source: str) -> None: ...

    def fusable(self, name: str, kinds: frozenset[OpKind]) -> Op | None: ...


def unused_extra_outputs(imp: ImporterState, node: NodeProto, what: str) -> None:
    if any(o and imp.uses[o] for o in node.output[1:]):
        raise imp.error(node, f"has its {what} output(s) read by other nodes, which dlaopt does not model; export "
                              "the inference graph")
