"""Which of the user's constraints cannot hold together: deletion filtering over a constraint list.

Given constraints C whose conjunction is infeasible and an oracle ``infeasible(S)`` (``True``: proven infeasible,
``False``: a solution exists, ``None``: not decided in time), drop each constraint in turn and keep it dropped when
the rest is still proven infeasible. What remains is an irreducible infeasible subset — removing any one member
makes the instance feasible — when every call decided; a constraint whose test was undecided is kept, and the set
is then reported as possibly not minimal. A solver's own core (CP-SAT's sufficient assumptions) is a good start.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Conflict(Generic[T]):
    members: tuple[T, ...]
    minimal: bool  # every deletion test decided: no member can be left out
    tests: int  # oracle calls


def deletion_filter(items: Sequence[T], infeasible: Callable[[Sequence[T]], bool | None], *,
                    deadline: float | None = None) -> Conflict[T]:
    """An irreducible infeasible subset of ``items`` (assumed infeasible together), by deletion filtering.

    ``deadline`` (a :func:`time.monotonic` instant): past it, the remaining members are kept untested."""
    core = list(items)
    minimal, tests = True, 0
    i = 0
    while i < len(core):
        if deadline is not None and time.monotonic() >= deadline:
            return Conflict(tuple(core), False, tests)
        trial = core[:i] + core[i + 1:]
        verdict = infeasible(trial)
        tests += 1
        if verdict is True:
            core = trial
        else:
            minimal = minimal and verdict is False
            i += 1
    return Conflict(tuple(core), minimal, tests)


__all__ = ["Conflict", "deletion_filter"]
