"""The converter of every supported ONNX operator (those of the compute operators and of the data-movement ones),
and the advice given for some unsupported ones."""

from __future__ import annotations

from collections.abc import Callable

from onnx import NodeProto

from dlaopt.io.onnx.common import ImporterState
from dlaopt.io.onnx.converters import CONVERTERS as COMPUTE
from dlaopt.io.onnx.movement import CONVERTERS as MOVEMENT

CONVERTERS: dict[str, Callable[[ImporterState, NodeProto], None]] = {**COMPUTE, **MOVEMENT}
assert not COMPUTE.keys() & MOVEMENT.keys(), "an operator has one converter"

ADVICE: dict[str, str] = {
    "Erf": "only the exact-GELU pattern x * 0.5 * (1 + Erf(x / sqrt(2))) is recognised: export with opset >= 20 "
           "to get a Gelu node, or replace the operator",
    "ConvTranspose": "transposed convolutions are not modelled: replace the operator (e.g. by resize + conv)",
}
