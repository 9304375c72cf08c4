"""The workload: tensors plus operators in execution-schedule order, validated as a DAG."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

from dlaopt.errors import InputError
from dlaopt.workload.operator import (
    Operator,
    OperatorSpecError,
    infer_output_shapes,
    loop_dims,
    normalize_attrs,
)
from dlaopt.workload.tensor import Tensor, TensorRole


@dataclass(frozen=True)
class Workload:
    """A DNN as a DAG. ``operators`` are listed in execution-schedule order (a topological order).

    Construct with :meth:`Workload.create`, which validates and derives loop dimensions; errors are
    :class:`~dlaopt.errors.InputError` with a key path (``tensors.x``, ``operators[3].inputs`` …).
    """

    name: str
    tensors: Mapping[str, Tensor]
    operators: tuple[Operator, ...]
    params: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        name: str,
        tensors: Iterable[Tensor],
        operators: Iterable[Operator],
        params: Mapping[str, object] | None = None,
    ) -> Workload:
        tensor_map: dict[str, Tensor] = {}
        for t in tensors:
            if t.name in tensor_map:
                raise InputError(f"tensor '{t.name}' is defined twice", path=("tensors", t.name))
            tensor_map[t.name] = t
        ops = tuple(_complete_operator(i, op, tensor_map) for i, op in enumerate(operators))
        wl = cls(name=name, tensors=tensor_map, operators=ops, params=dict(params or {}))
        wl._validate_structure()
        return wl

    # ----------------------------------------------------------------------------------------------- validation
    def _validate_structure(self) -> None:
        names = [op.name for op in self.operators]
        seen: set[str] = set()
        for i, n in enumerate(names):
            if n in seen:
                raise InputError(f"operator name '{n}' is used twice", path=("operators", i, "name"))
            seen.add(n)
        producer: dict[str, int] = {}
        for i, op in enumerate(self.operators):
            for t in op.outputs:
                if t in producer:
                    raise InputError(
                        f"tensor '{t}' is produced by both '{self.operators[producer[t]].name}' and '{op.name}'",
                        path=("operators", i, "outputs"),
                        expected="every tensor produced by exactly one operator",
                    )
                producer[t] = i
        for name, t in self.tensors.items():
            if t.role.is_produced and name not in producer:
                raise InputError(
                    f"tensor '{name}' has role {t.role.value} but no operator produces it",
                    path=("tensors", name, "role"),
                    expected="input or weight for tensors that no operator produces",
                )
            if not t.role.is_produced and name in producer:
                raise InputError(
                    f"tensor '{name}' has role {t.role.value} but is produced by "
                    f"'{self.operators[producer[name]].name}'",
                    path=("tensors", name, "role"),
                    expected="activation or output for produced tensors",
                )
        consumed = {t for op in self.operators for t in op.inputs}
        for name, t in self.tensors.items():
            if t.role == TensorRole.ACTIVATION and name not in consumed:
                raise InputError(
                    f"activation '{name}' is never consumed",
                    path=("tensors", name, "role"),
                    expected="role 'output' for a produced tensor nobody consumes",
                )
        # acyclic + schedule is a topological order
        g = self.graph
        if not nx.is_directed_acyclic_graph(g):
            cycle = nx.find_cycle(g)
            raise InputError(
                "the operator graph has a cycle: " + " -> ".join(str(u) for u, _ in cycle) + f" -> {cycle[0][0]}",
                path=("operators",),
                expected="an acyclic graph",
            )
        position = {op.name: i for i, op in enumerate(self.operators)}
        for u, v in g.edges:
            if position[u] > position[v]:
                raise InputError(
                    f"operator '{v}' is scheduled before '{u}', which produces its input",
                    path=("operators", position[v]),
                    expected="operators listed in execution order (a topological order)",
                )

    # ------------------------------------------------------------------------------------------------ queries
    @cached_property
    def graph(self) -> nx.DiGraph:
        """Operator DAG: an edge u→v for every tensor produced by u and consumed by v (``tensors`` attribute)."""
        g = nx.DiGraph()
        prod = {t: op.name for op in self.operators for t in op.outputs}
        for op in self.operators:
            g.add_node(op.name, kind=op.kind.value)
        for op in self.operators:
            for t in op.inputs:
                if t in prod:
                    u = prod[t]
                    if g.has_edge(u, op.name):
                        g.edges[u, op.name]["tensors"].append(t)
                    else:
                        g.add_edge(u, op.name, tensors=[t])
        return g

    @cached_property
    def producer(self) -> dict[str, int]:
        """Tensor name → schedule index of the operator that produces it."""
        return {t: i for i, op in enumerate(self.operators) for t in op.outputs}

    @cached_property
    def consumers(self) -> dict[str, list[int]]:
        """Tensor name → sorted schedule indices of the operators that read it."""
        out: dict[str, list[int]] = {t: [] for t in self.tensors}
        for i, op in enumerate(self.operators):
            for t in dict.fromkeys(op.inputs):
                out[t].append(i)
        return out

    def op(self, name: str) -> Operator:
        for o in self.operators:
            if o.name == name:
                return o
        raise KeyError(name)

    @property
    def total_macs(self) -> int:
        return sum(op.macs for op in self.operators)

    def macs_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for op in self.operators:
            out[op.kind.value] = out.get(op.kind.value, 0) + op.macs
        return out

    def tensors_with_role(self, role: TensorRole) -> list[Tensor]:
        return [t for t in self.tensors.values() if t.role == role]

    def summary(self) -> dict[str, object]:
        return {
            "name": self.name,
            "operators": len(self.operators),
            "tensors": len(self.tensors),
            "macs": self.total_macs,
            "weight_bytes": sum(t.size_bytes for t in self.tensors_with_role(TensorRole.WEIGHT)),
            "activation_bytes": sum(
                t.size_bytes for t in self.tensors.values() if t.role in (TensorRole.ACTIVATION, TensorRole.OUTPUT)
            ),
        }


def _complete_operator(index: int, op: Operator, tensors: Mapping[str, Tensor]) -> Operator:
    """Normalise attributes, check operand existence and shapes, derive loop dimensions."""
    where = ("operators", index)
    if not op.outputs:
        raise InputError(f"operator '{op.name}' has no outputs", path=where + ("outputs",))
    for field_name, names in (("inputs", op.inputs), ("outputs", op.outputs)):
        for j, t in enumerate(names):
            if t not in tensors:
                raise InputError(
                    f"operator '{op.name}' refers to unknown tensor '{t}'",
                    path=where + (field_name, j),
                    expected="a name listed under 'tensors'",
                )
    try:
        attrs = normalize_attrs(op.kind, op.attrs)
        in_shapes = [tensors[t].shape for t in op.inputs]
        inferred = infer_output_shapes(op.kind, attrs, in_shapes)
    except OperatorSpecError as exc:
        key = exc.key or "attrs"
        path = where + ((key,) if key in ("inputs", "kind") else ("attrs", key))
        raise InputError(f"operator '{op.name}' ({op.kind.value}): {exc}", path=path) from None
    if len(inferred) != len(op.outputs):
        raise InputError(
            f"operator '{op.name}' ({op.kind.value}) produces {len(inferred)} tensor(s), {len(op.outputs)} listed",
            path=where + ("outputs",),
        )
    for j, (t, shape) in enumerate(zip(op.outputs, inferred, strict=True)):
        if tensors[t].shape != shape:
            raise InputError(
                f"operator '{op.name}' ({op.kind.value}) produces shape {list(shape)} but tensor '{t}' is declared "
                f"with shape {list(tensors[t].shape)}",
                path=where + ("outputs", j),
                expected=f"shape {list(shape)}",
            )
    dims = loop_dims(op.kind, attrs, in_shapes, inferred)
    return Operator(op.name, op.kind, op.inputs, op.outputs, attrs, dims)
