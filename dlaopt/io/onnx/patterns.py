"""Patterns recognised before conversion: the exact GELU (``Erf``) and decomposed normalisations (RMSNorm, layer norm
written out over one axis), each replaced by one node (see the mapping rules in :mod:`dlaopt.io.onnx`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from onnx import NodeProto, helper

from dlaopt.io.onnx.common import DEFAULT_DOMAINS, NORM_OP, SHAPE_READERS


# ================================================================================================ exact GELU
def fuse_exact_gelu(nodes: list[NodeProto], graph_outputs: set[str],
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
        if scaled is None or scaled.domain not in DEFAULT_DOMAINS or sole_reader(erf.input[0], "Erf") is not erf:
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
        found = match(erf) if erf.op_type == "Erf" and erf.domain in DEFAULT_DOMAINS else None
        if found is None or any(id(n) in removed for n in found[1]):
            continue
        x, pattern, last = found
        removed.update(id(n) for n in pattern)
        replacement[id(last)] = helper.make_node("Gelu", [x], [last.output[0]],
                                                 name=f"{erf.name}.gelu" if erf.name else "")
    return [replacement.get(id(n), n) for n in nodes if id(n) not in removed or id(n) in replacement]


# ================================================================================================ decomposed norms
def fuse_norms(nodes: list[NodeProto], graph_outputs: set[str], value_of: Callable[[str], np.ndarray | None],
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
        if n.domain in DEFAULT_DOMAINS and (n.op_type in SHAPE_READERS or all(i in static for i in n.input if i)):
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
        if pow_.domain not in DEFAULT_DOMAINS or scalar(pow_.input[1]) != 2.0:
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
        norm = helper.make_node(NORM_OP, [x, scale, shift], [y], name=name, axis=axis, rms=int(not layer))
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
