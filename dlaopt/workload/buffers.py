"""Buffers with lifetimes: what an instance's ``workload`` says for static memory allocation (``problem:
allocation``) — inline in YAML, or the CSV of the static-allocation literature (:mod:`dlaopt.io.buffers`).

A buffer lives during the steps ``[lower, upper)`` (half open), has ``size`` bytes and its offset must be a multiple
of ``alignment`` (``None``: the memory's default alignment)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AllocBuffer:
    """One buffer: alive during steps ``[lower, upper)``, ``size`` bytes, offsets multiples of ``alignment``."""

    id: str
    lower: int
    upper: int
    size: int
    alignment: int = 1

    def __post_init__(self) -> None:
        if self.lower < 0:
            raise ValueError(f"buffer '{self.id}': lower {self.lower} is negative")
        if self.upper <= self.lower:
            raise ValueError(f"buffer '{self.id}': its lifetime [{self.lower}, {self.upper}) is empty (upper must "
                             "be greater than lower)")
        if self.size <= 0:
            raise ValueError(f"buffer '{self.id}': size {self.size} is not positive")
        if self.alignment <= 0:
            raise ValueError(f"buffer '{self.id}': alignment {self.alignment} is not positive")


@dataclass(frozen=True)
class BufferSet:
    """The buffers of one allocation instance, in file order (ids unique)."""

    buffers: tuple[AllocBuffer, ...]
    name: str = "buffers"


__all__ = ["AllocBuffer", "BufferSet"]
