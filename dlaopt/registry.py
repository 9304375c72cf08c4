"""A named registry of factories with documented, typed parameters — used by the network zoo and the presets."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dlaopt.errors import InputError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    factory: Callable[..., T]
    description: str

    @property
    def defaults(self) -> dict[str, Any]:
        """Parameter name → default value, read from the factory's signature (keyword-only parameters)."""
        sig = inspect.signature(self.factory)
        return {
            p.name: p.default
            for p in sig.parameters.values()
            if p.kind == p.KEYWORD_ONLY and p.default is not inspect.Parameter.empty
        }


class Registry(Generic[T]):
    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, Entry[T]] = {}

    def register(self, name: str, description: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._entries:
                raise ValueError(f"{self.what} '{name}' registered twice")
            self._entries[name] = Entry(name, factory, description)
            return factory

        return deco

    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[Entry[T]]:
        return list(self._entries.values())

    def entry(self, name: str, *, path: tuple[str | int, ...] = ()) -> Entry[T]:
        if name not in self._entries:
            raise InputError(
                f"unknown {self.what} '{name}'", path=path, expected="one of: " + ", ".join(sorted(self._entries))
            )
        return self._entries[name]

    def create(self, name: str, params: Mapping[str, Any] | None = None, *, path: tuple[str | int, ...] = ()) -> T:
        """Build ``name`` with ``params``; unknown parameters and wrongly typed values are an ``InputError``."""
        entry = self.entry(name, path=path)
        params = dict(params or {})
        defaults = entry.defaults
        for key, value in params.items():
            if key not in defaults:
                raise InputError(
                    f"{self.what} '{name}' has no parameter '{key}'",
                    path=path + ("params", key),
                    expected="one of: " + ", ".join(sorted(defaults)) if defaults else "no parameters",
                )
            want = defaults[key]
            if want is not None and not _same_kind(value, want):
                raise InputError(
                    f"{self.what} '{name}': parameter '{key}' must be {type(want).__name__}, got {value!r}",
                    path=path + ("params", key),
                    expected=type(want).__name__,
                )
        try:
            return entry.factory(**params)
        except (ValueError, TypeError) as exc:
            raise InputError(f"{self.what} '{name}': {exc}", path=path + ("params",)) from None


def _same_kind(value: Any, default: Any) -> bool:
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, type(default))
