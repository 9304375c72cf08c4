"""The scale of an experiment: the quick defaults or the seed's full settings, with command-line overrides."""

from __future__ import annotations

from collections.abc import Mapping

from dlaopt.errors import InputError


def experiment_scale(quick: Mapping[str, int], full: Mapping[str, int], use_full: bool,
                     **overrides: int | None) -> dict[str, int]:
    """``full`` or ``quick``, with every override that is not ``None`` in place (each a positive integer, else a
    located error naming its command-line option)."""
    scale = dict(full if use_full else quick)
    for key, value in overrides.items():
        if value is None:
            continue
        if value < 1:
            raise InputError(f"{key.replace('_', ' ')} must be positive, got {value}",
                             path=(f"--{key.replace('_', '-')}",), expected="an integer >= 1")
        scale[key] = value
    return scale
