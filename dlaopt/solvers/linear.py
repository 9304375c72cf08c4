"""A backend-independent MILP in array form, built block by block with numpy (no per-element Python loops).

    minimise    c @ x + c0
    subject to  row_lower <= A @ x <= row_upper
                col_lower <= x <= col_upper,   x[j] integer where integrality[j]

``A`` is kept in CSR form (``indptr``, ``indices``, ``data``) so HiGHS takes it directly (``passModel``); the Pyomo
and CP-SAT backends translate it. Formulations add *blocks* of variables and constraints with
:class:`LinearModelBuilder` and keep the returned index arrays to decode solutions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

INF = float("inf")


@dataclass(frozen=True)
class LinearModel:
    name: str
    c: np.ndarray
    c0: float
    col_lower: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray  # bool per column
    indptr: np.ndarray  # CSR row pointers, length n_rows + 1
    indices: np.ndarray  # CSR column indices
    data: np.ndarray  # CSR values
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_blocks: dict[str, tuple[int, int]] = field(default_factory=dict)  # block name -> [start, stop)
    row_blocks: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def n_cols(self) -> int:
        return int(self.c.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.row_lower.shape[0])

    @property
    def n_nonzeros(self) -> int:
        return int(self.data.shape[0])

    @property
    def n_integer(self) -> int:
        return int(self.integrality.sum())

    def objective_value(self, x: np.ndarray) -> float:
        return float(self.c @ x + self.c0)

    def row_activity(self, x: np.ndarray) -> np.ndarray:
        """A @ x, computed from the CSR arrays."""
        prod = self.data * x[self.indices]
        out = np.zeros(self.n_rows)
        row_of = np.repeat(np.arange(self.n_rows), np.diff(self.indptr))
        np.add.at(out, row_of, prod)
        return out

    def max_violation(self, x: np.ndarray) -> float:
        """Largest violation of any bound, row or integrality requirement by ``x`` (0 when feasible)."""
        act = self.row_activity(x)
        viol = [
            np.max(self.col_lower - x, initial=0.0),
            np.max(x - self.col_upper, initial=0.0),
            np.max(self.row_lower - act, initial=0.0),
            np.max(act - self.row_upper, initial=0.0),
        ]
        if self.n_integer:
            xi = x[self.integrality]
            viol.append(float(np.max(np.abs(xi - np.round(xi)), initial=0.0)))
        return float(max(viol))

    def stats(self) -> dict[str, int]:
        return {"columns": self.n_cols, "integer_columns": self.n_integer, "rows": self.n_rows,
                "nonzeros": self.n_nonzeros}


class LinearModelBuilder:
    """Accumulates variable and constraint blocks; :meth:`build` assembles the CSR matrix once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._n_cols = 0
        self._n_rows = 0
        self._c: list[np.ndarray] = []
        self._lb: list[np.ndarray] = []
        self._ub: list[np.ndarray] = []
        self._int: list[np.ndarray] = []
        self._rows: list[np.ndarray] = []
        self._cols: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []
        self._rlo: list[np.ndarray] = []
        self._rup: list[np.ndarray] = []
        self.c0 = 0.0
        self.col_blocks: dict[str, tuple[int, int]] = {}
        self.row_blocks: dict[str, tuple[int, int]] = {}

    @property
    def n_cols(self) -> int:
        return self._n_cols

    def add_vars(
        self,
        name: str,
        n: int,
        *,
        lower: float | np.ndarray = 0.0,
        upper: float | np.ndarray = INF,
        cost: float | np.ndarray = 0.0,
        integer: bool = False,
    ) -> np.ndarray:
        """Add ``n`` variables; returns their column indices."""
        idx = np.arange(self._n_cols, self._n_cols + n, dtype=np.int64)
        self._c.append(np.broadcast_to(np.asarray(cost, dtype=float), (n,)).copy())
        self._lb.append(np.broadcast_to(np.asarray(lower, dtype=float), (n,)).copy())
        self._ub.append(np.broadcast_to(np.asarray(upper, dtype=float), (n,)).copy())
        self._int.append(np.full(n, integer, dtype=bool))
        self.col_blocks[name] = (self._n_cols, self._n_cols + n)
        self._n_cols += n
        return idx

    def add_rows(
        self,
        name: str,
        n_rows: int,
        row: np.ndarray,
        col: np.ndarray,
        val: np.ndarray | float,
        *,
        lower: float | np.ndarray = -INF,
        upper: float | np.ndarray = INF,
    ) -> np.ndarray:
        """Add ``n_rows`` constraints given as COO triplets with *block-local* row numbers ``row`` in [0, n_rows)."""
        row = np.asarray(row, dtype=np.int64)
        col = np.asarray(col, dtype=np.int64)
        val_arr = np.broadcast_to(np.asarray(val, dtype=float), row.shape).copy()
        if row.size and (row.min() < 0 or row.max() >= n_rows):
            raise ValueError(f"constraint block '{name}': local row index out of range")
        if col.size and (col.min() < 0 or col.max() >= self._n_cols):
            raise ValueError(f"constraint block '{name}': column index out of range")
        ids = np.arange(self._n_rows, self._n_rows + n_rows, dtype=np.int64)
        self._rows.append(row + self._n_rows)
        self._cols.append(col)
        self._vals.append(val_arr)
        self._rlo.append(np.broadcast_to(np.asarray(lower, dtype=float), (n_rows,)).copy())
        self._rup.append(np.broadcast_to(np.asarray(upper, dtype=float), (n_rows,)).copy())
        self.row_blocks[name] = (self._n_rows, self._n_rows + n_rows)
        self._n_rows += n_rows
        return ids

    def build(self) -> LinearModel:
        cat = (lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dtype=dt))
        rows, cols, vals = cat(self._rows, np.int64), cat(self._cols, np.int64), cat(self._vals, float)
        order = np.lexsort((cols, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        # merge duplicate (row, col) entries
        if rows.size:
            keep = np.ones(rows.size, dtype=bool)
            keep[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
            group = np.cumsum(keep) - 1
            merged = np.zeros(int(keep.sum()))
            np.add.at(merged, group, vals)
            rows, cols, vals = rows[keep], cols[keep], merged
        indptr = np.zeros(self._n_rows + 1, dtype=np.int64)
        np.add.at(indptr, rows + 1, 1)
        indptr = np.cumsum(indptr)
        return LinearModel(
            name=self.name,
            c=cat(self._c, float),
            c0=float(self.c0),
            col_lower=cat(self._lb, float),
            col_upper=cat(self._ub, float),
            integrality=cat(self._int, bool),
            indptr=indptr,
            indices=cols,
            data=vals,
            row_lower=cat(self._rlo, float),
            row_upper=cat(self._rup, float),
            col_blocks=dict(self.col_blocks),
            row_blocks=dict(self.row_blocks),
        )
