"""One memory to allocate buffers in (``problem: allocation``): its name, capacity and default alignment."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arena:
    """A memory of ``capacity_bytes`` (``None``: unbounded, for the minimum-peak objective) whose buffers' offsets
    are multiples of ``alignment`` unless a buffer gives its own."""

    name: str = "memory"
    capacity_bytes: int | None = None
    alignment: int = 1

    def __post_init__(self) -> None:
        if self.capacity_bytes is not None and self.capacity_bytes <= 0:
            raise ValueError(f"memory '{self.name}': capacity {self.capacity_bytes} is not positive")
        if self.alignment <= 0:
            raise ValueError(f"memory '{self.name}': alignment {self.alignment} is not positive")


__all__ = ["Arena"]
