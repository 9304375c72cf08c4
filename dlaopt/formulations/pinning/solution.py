"""A pinning solution: for every buffer, which scratchpad holds it during each step of its window (-1 = main memory)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlaopt.errors import InputError
from dlaopt.formulations.pinning.data import PinningGraph


@dataclass
class PinningSolution:
    """``placement[b][m - lo_b]`` is the scratchpad index holding buffer ``b`` at step ``m`` (``-1``: not resident),
    for ``m`` in the buffer's window ``[lo_b, hi_b]``. Outside its window a buffer is never resident."""

    placement: list[np.ndarray]

    @classmethod
    def empty(cls, graph: PinningGraph) -> PinningSolution:
        return cls([np.full(hi - lo + 1, -1, dtype=np.int32) for lo, hi in graph.window])

    def at(self, graph: PinningGraph, b: int, m: int) -> int:
        lo, hi = graph.window[b]
        return int(self.placement[b][m - lo]) if lo <= m <= hi else -1

    def set(self, graph: PinningGraph, b: int, m: int, k: int) -> None:
        lo, _ = graph.window[b]
        self.placement[b][m - lo] = k

    # ------------------------------------------------------------------------------------------ serialisation
    def to_dict(self, graph: PinningGraph) -> dict[str, Any]:
        """Residency as runs ``[first_step, last_step, scratchpad]`` per buffer (buffers never resident omitted)."""
        names = [s.name for s in graph.scratchpads]
        out: dict[str, list[list[Any]]] = {}
        for b, row in enumerate(self.placement):
            lo, _ = graph.window[b]
            runs: list[list[Any]] = []
            for i, k in enumerate(row.tolist()):
                if k < 0:
                    continue
                m = lo + i
                if runs and runs[-1][1] == m - 1 and runs[-1][2] == names[k]:
                    runs[-1][1] = m
                else:
                    runs.append([m, m, names[k]])
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
                             expected="a mapping from buffer name to [first_step, last_step, scratchpad] runs")
        spm_index = {s.name: k for k, s in enumerate(graph.scratchpads)}
        buf_index = {b.name: i for i, b in enumerate(graph.buffers)}
        steps = doc.get("steps")
        if steps is not None and list(steps) != [s.name for s in graph.steps]:
            raise InputError("the solution's step list does not match this instance's schedule",
                             path=path + ("steps",), expected="a solution produced for this instance")
        sol = cls.empty(graph)
        for name, runs in residency.items():
            where = path + ("residency", str(name))
            if name not in buf_index:
                raise InputError(f"unknown buffer '{name}'", path=where, expected="a buffer of this instance")
            b = buf_index[name]
            lo, hi = graph.window[b]
            if not isinstance(runs, Sequence):
                raise InputError("runs must be a list", path=where, expected="[[first_step, last_step, scratchpad]]")
            for j, run in enumerate(runs):
                ok = (isinstance(run, Sequence) and len(run) == 3 and isinstance(run[0], int)
                      and isinstance(run[1], int) and run[2] in spm_index)
                if not ok:
                    raise InputError(f"malformed run {run!r}", path=where + (j,),
                                     expected=f"[first_step, last_step, one of {sorted(spm_index)}]")
                first, last, spm = run
                if not lo <= first <= last <= hi:
                    raise InputError(f"run [{first}, {last}] lies outside the buffer's lifetime [{lo}, {hi}]",
                                     path=where + (j,), expected=f"steps within [{lo}, {hi}]")
                sol.placement[b][first - lo:last - lo + 1] = spm_index[spm]
        return sol
