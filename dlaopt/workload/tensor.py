"""Tensors: the data that flows along the edges of a workload graph."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class TensorRole(StrEnum):
    """Where a tensor comes from and where it goes.

    * ``input``  — a graph input: lives in main memory before the first operator runs.
    * ``weight`` — a parameter: lives in main memory, never produced by an operator.
    * ``activation`` — produced by one operator and consumed by others; not needed after the graph finishes.
    * ``output`` — produced by one operator and needed after the graph finishes (always written back).
    """

    INPUT = "input"
    WEIGHT = "weight"
    ACTIVATION = "activation"
    OUTPUT = "output"

    @property
    def is_produced(self) -> bool:
        return self in (TensorRole.ACTIVATION, TensorRole.OUTPUT)


@dataclass(frozen=True)
class Tensor:
    """A dense tensor: ``shape`` in elements, ``dtype_bytes`` bytes per element."""

    name: str
    shape: tuple[int, ...]
    role: TensorRole
    dtype_bytes: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "role", TensorRole(self.role))
        if not self.name:
            raise ValueError("tensor name must be non-empty")
        if any(d <= 0 for d in self.shape):
            raise ValueError(f"tensor '{self.name}': every dimension must be positive, got shape {list(self.shape)}")
        if self.dtype_bytes <= 0:
            raise ValueError(f"tensor '{self.name}': dtype_bytes must be positive, got {self.dtype_bytes}")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def size_bytes(self) -> int:
        return self.numel * self.dtype_bytes
