"""A pinning solution: for every buffer, which scratchpad holds it during each step of its window (-1 = main memory),
and, when addresses were placed, its offset in that scratchpad (constant over each maximal residency run)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlaopt.errors import InputError
from dlaopt.formulations.pinning.data import PinningGraph

MAX_OFFSET = 2**62  # offsets read from files: beyond any memory, and safe in int64 sums with a size


@dataclass
class PinningSolution:
    """``placement[b][m - lo_b]`` is the scratchpad index holding buffer ``b`` at step ``m`` (``-1``: not resident),
    for ``m`` in the buffer's window ``[lo_b, hi_b]``. Outside its window a buffer is never resident.

    ``offsets`` (``None``: no addresses placed) is parallel to ``placement``: ``offsets[b][m - lo_b]`` is the byte
    offset of buffer ``b`` in its scratchpad at step ``m`` (``-1`` where it is not resident); one offset per maximal
    run (consecutive steps in the same scratchpad)."""

    placement: list[np.ndarray]
    offsets: list[np.ndarray] | None = None

    @classmethod
    def empty(cls, graph: PinningGraph) -> PinningSolution:
        return cls([np.full(hi - lo + 1, -1, dtype=np.int32) for lo, hi in graph.window])

    def at(self, graph: PinningGraph, b: int, m: int) -> int:
        lo, hi = graph.window[b]
        return int(self.placement[b][m - lo]) if lo <= m <= hi else -1

    def set(self, graph: PinningGraph, b: int, m: int, k: int) -> None:
        lo, _ = graph.window[b]
        self.placement[b][m - lo] = k

    def offset_at(self, graph: PinningGraph, b: int, m: int) -> int:
        """The offset of ``b`` at step ``m`` (``-1``: not resident, or no addresses)."""
        lo, hi = graph.window[b]
        if self.offsets is None or not lo <= m <= hi:
            return -1
        return int(self.offsets[b][m - lo])

    def residency_only(self) -> PinningSolution:
        """The same residency without addresses."""
        return PinningSolution([row.copy() for row in self.placement])

    # ------------------------------------------------------------------------------------------ serialisation
    def to_dict(self, graph: PinningGraph) -> dict[str, Any]:
        """Residency as runs ``[first_step, last_step, scratchpad]`` per buffer (buffers never resident omitted),
        ``[first_step, last_step, scratchpad, offset]`` when the solution carries addresses."""
        names = [s.name for s in graph.scratchpads]
        out: dict[str, list[list[Any]]] = {}
        for b, row in enumerate(self.placement):
            lo, _ = graph.window[b]
            offs = self.offsets[b].tolist() if self.offsets is not None else None
            runs: list[list[Any]] = []
            for i, k in enumerate(row.tolist()):
                if k < 0:
                    continue
                m = lo + i
                if runs and runs[-1][1] == m - 1 and runs[-1][2] == names[k] and (
                        offs is None or runs[-1][3] == offs[i]):
                    runs[-1][1] = m
                else:
                    runs.append([m, m, names[k]] if offs is None else [m, m, names[k], int(offs[i])])
            if runs:
                out[graph.buffers[b].name] = runs
        return {"scratchpads": names, "steps": [s.name for s in graph.steps], "residency": out}

    @classmethod
    def from_dict(
        cls, graph: PinningGraph, doc: Mapping[str, Any], *, path: Sequence[str | int] = ()
    ) -> PinningSolution:
        path = tuple(path)
        residency = doc.get("residency")
        if not isinstance(residency, Mapping):
            raise InputError("missing or malformed 'residency' mapping", path=path + ("residency",),
                             expected="a mapping from buffer name to [first_step, last_step, scratchpad] runs "
                             "(or [first_step, last_step, scratchpad, offset])")
        spm_index = {s.name: k for k, s in enumerate(graph.scratchpads)}
        buf_index = {b.name: i for i, b in enumerate(graph.buffers)}
        steps = doc.get("steps")
        if steps is not None and list(steps) != [s.name for s in graph.steps]:
            raise InputError("the solution's step list does not match this instance's schedule",
                             path=path + ("steps",), expected="a solution produced for this instance")
        sol = cls.empty(graph)
        offsets: list[np.ndarray] | None = None
        for name, runs in residency.items():
            where = path + ("residency", str(name))
            if name not in buf_index:
                raise InputError(f"unknown buffer '{name}'", path=where, expected="a buffer of this instance")
            b = buf_index[name]
            lo, hi = graph.window[b]
            if not isinstance(runs, Sequence):
                raise InputError("runs must be a list", path=where, expected="[[first_step, last_step, scratchpad]]")
            for j, run in enumerate(runs):
                ok = (isinstance(run, Sequence) and not isinstance(run, str) and len(run) in (3, 4)
                      and all(isinstance(v, int) and not isinstance(v, bool) for v in run[:2])
                      and isinstance(run[2], str) and run[2] in spm_index
                      and (len(run) == 3 or (isinstance(run[3], int) and not isinstance(run[3], bool)
                                             and 0 <= run[3] <= MAX_OFFSET)))
                if not ok:
                    raise InputError(f"malformed run {run!r}", path=where + (j,),
                                     expected=f"[first_step, last_step, one of {sorted(spm_index)}] or the same with "
                                     "a byte offset (a non-negative integer) as a fourth element")
                first, last, spm = run[:3]
                if not lo <= first <= last <= hi:
                    raise InputError(f"run [{first}, {last}] lies outside the buffer's lifetime [{lo}, {hi}]",
                                     path=where + (j,), expected=f"steps within [{lo}, {hi}]")
                sol.placement[b][first - lo:last - lo + 1] = spm_index[spm]
                if len(run) == 4:
                    if offsets is None:
                        offsets = [np.full(row.size, -1, dtype=np.int64) for row in sol.placement]
                    offsets[b][first - lo:last - lo + 1] = run[3]
        sol.offsets = offsets
        return sol
