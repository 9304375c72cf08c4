r"""The exact bank mapping: a MILP on HiGHS, warm-started from ``propagate``.

Sets: operators :math:`o` with choices :math:`c \in C_o`; tensors :math:`t`; layouts (axes) :math:`a`; free tensors
:math:`f` (graph inputs and weights read by some operator). :math:`\mathrm{out}(o,c,t)` is the layout choice
:math:`c` writes for output :math:`t`; :math:`Q(o,c,t)` the layouts it requires of input :math:`t`.

.. math::

    x_{o,c} \in \{0,1\},\ \textstyle\sum_c x_{o,c} = 1 \qquad
    h_{f,a} \in \{0,1\},\ \textstyle\sum_a h_{f,a} = 1 \\
    \mathrm{home}_{t,a} = \textstyle\sum_{c:\ \mathrm{out}(p(t),c,t)=a} x_{p(t),c}
        \ \ (t \text{ produced by } p(t)), \qquad \mathrm{home}_{f,a} = h_{f,a} \\
    \mathrm{req}_{o,t,R} = \textstyle\sum_{c:\ R \in Q(o,c,t)} x_{o,c} \\
    y_{t,h,R} \ge \mathrm{req}_{o,t,R} + \mathrm{home}_{t,h} - 1 \quad (h \ne R,\ o \text{ reads } t) \\
    \textstyle\sum_{h \ne R} y_{t,h,R} \ge \mathrm{req}_{o,t,R} - \mathrm{home}_{t,R}
        \quad (\text{the seed brief's } y_{t,R} \ge \mathrm{req} - \mathrm{home}\text{, kept as a valid cut}) \\
    \min\ \textstyle\sum_{t,h,R} \kappa_{t,h,R}\, y_{t,h,R}
        + w \sum_{t,a} \sigma_{t,a}\, \mathrm{home}_{t,a}

:math:`y_{t,h,R} \in [0, 1]` (continuous: integral at the optimum whenever its cost is positive) is the relayout copy
of :math:`t` from home :math:`h` to layout :math:`R`; its cost :math:`\kappa_{t,h,R} = \text{bytes}_t` when ``t``
is resident in :math:`h` and fits a bank in :math:`R` (on chip), else :math:`w \cdot \text{bytes}_t` (off chip) — the
copy variables are indexed by the pair of layouts because its classification depends on both. :math:`\sigma_{t,a}` is
the spill of a produced tensor in layout :math:`a` (``bytes · (1 + consumers)`` when it is not resident, else 0). A
tensor forced off chip (``LayoutModel.off_chip_tensors``) is resident in no layout: all its copies are off-chip
copies and its spill is the same in every layout, so it adds a constant (carried by its producer's choice columns,
exactly one of which is 1) to the objective; :meth:`BankMilp.decode` lists it in the mapping's ``off_chip``.
Layout constraints (``LayoutModel.home_allowed``) fix columns: :math:`x_{o,c} = 0` for a choice writing an output
in a layout its constraints do not allow, :math:`h_{f,a} = 0` for a home they do not allow (the allowed layouts fit
a bank and the tensor is not forced off chip, so it is resident in each). When they leave an operator or a free
tensor nothing, the ``one_choice`` / ``one_home`` row cannot hold and HiGHS proves the model infeasible.
Every term is a constant per (tensor, layout) or pair of layouts, so the objective is linear and equals the
evaluator's; :func:`solve_exact` checks that. Only the pairs that can occur get a column (homes a producer choice
can write, layouts a consumer choice can require). The model is built in blocks of numpy arrays with
:class:`~dlaopt.solvers.linear.LinearModelBuilder`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dlaopt.formulations.bankmap.evaluate import BankReport, evaluate
from dlaopt.formulations.bankmap.layouts import DEFAULT_OFFCHIP_WEIGHT, BankMapping, LayoutModel
from dlaopt.formulations.bankmap.methods import propagate
from dlaopt.formulations.base import HeuristicFailure
from dlaopt.solvers.backends import solve_linear
from dlaopt.solvers.linear import LinearModel, LinearModelBuilder
from dlaopt.solvers.result import SolveOptions, Status


@dataclass
class BankMilp:
    """The MILP of one :class:`LayoutModel` with the maps between its columns and :class:`BankMapping` s."""

    model: LinearModel
    layout_model: LayoutModel
    offchip_weight: float
    x_start: np.ndarray  # first x column of every operator (schedule order); a final entry closes the last one
    h_start: np.ndarray  # first h column of every free tensor (absolute); a final entry closes the last one
    y_key: dict[tuple[str, int, int], int]  # (tensor, home, layout) -> y column

    def encode(self, mapping: BankMapping) -> np.ndarray:
        """``mapping`` as a column vector (feasible; objective = the evaluator's)."""
        lm = self.layout_model
        v = np.zeros(self.model.n_cols)
        for k, o in enumerate(lm.ops):
            v[self.x_start[k] + int(mapping.choices[o.name])] = 1.0
        for k, t in enumerate(lm.free_tensors):
            v[self.h_start[k] + int(mapping.homes[t])] = 1.0
        homes = lm.homes(mapping)
        for t, layouts in lm.requirements(mapping).items():
            for r in layouts:
                if r != homes[t]:
                    v[self.y_key[(t, homes[t], r)]] = 1.0
        return v

    def decode(self, x: np.ndarray) -> BankMapping:
        lm = self.layout_model
        choices = {o.name: int(np.argmax(x[self.x_start[k]:self.x_start[k + 1]])) for k, o in enumerate(lm.ops)}
        homes = {t: int(np.argmax(x[self.h_start[k]:self.h_start[k + 1]])) for k, t in enumerate(lm.free_tensors)}
        return BankMapping(choices, homes, lm.off_chip_tensors)


def _ragged(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments ``[starts[i], starts[i] + counts[i])``: (segment id, position) of every element."""
    seg = np.repeat(np.arange(counts.size), counts)
    offset = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return seg, np.repeat(starts, counts) + offset


def build_milp(lm: LayoutModel, offchip_weight: float = DEFAULT_OFFCHIP_WEIGHT) -> BankMilp:
    """The MILP of the module docstring."""
    w = float(offchip_weight)
    wl = lm.workload
    tid = {t: i for i, t in enumerate(lm.tensor_names)}
    nbytes = np.array([lm.nbytes(t) for t in lm.tensor_names], dtype=float)
    max_rank = max(lm.rank(t) for t in lm.tensor_names)
    fits = np.zeros((len(tid), max_rank), dtype=bool)
    resident = np.zeros((len(tid), max_rank), dtype=bool)  # fits and not forced off chip
    spill = np.zeros((len(tid), max_rank))
    for t, i in tid.items():
        for a in range(lm.rank(t)):
            fits[i, a] = lm.fits(t, a)
            resident[i, a] = lm.resident(t, a)
            spill[i, a] = lm.spill_bytes(t, a)

    mb = LinearModelBuilder(f"bankmap:{wl.name}")
    # ------------------------------------------------------------------ x (choices) and h (free-tensor homes)
    n_choices = np.array([len(o.choices) for o in lm.ops], dtype=np.int64)
    x_start = np.concatenate([[0], np.cumsum(n_choices)])
    # home table: (tensor, axis, column) — producer choices, then free-tensor columns
    home_t, home_a, home_c, x_cost = [], [], [], np.zeros(int(x_start[-1]))
    req_o, req_t, req_r, req_c = [], [], [], []
    for k, o in enumerate(lm.ops):
        op = wl.operators[o.index]
        for c, ch in enumerate(o.choices):
            col = int(x_start[k]) + c
            for t, a in zip(op.outputs, ch.outputs, strict=True):
                home_t.append(tid[t])
                home_a.append(a)
                home_c.append(col)
                x_cost[col] += w * spill[tid[t], a]
            for t, r in dict.fromkeys((t, r) for t, r in zip(op.inputs, ch.inputs, strict=True) if r is not None):
                req_o.append(k)
                req_t.append(tid[t])
                req_r.append(r)
                req_c.append(col)
    x_upper = np.ones(int(x_start[-1]))
    h_upper_parts: list[np.ndarray] = []
    if lm.home_allowed:  # layout constraints: fix the columns of what they do not allow to 0
        x_upper[:] = 0.0
        for k, o in enumerate(lm.ops):
            x_upper[int(x_start[k]) + np.asarray(lm.allowed_choices(o), dtype=np.int64)] = 1.0
        for t in lm.free_tensors:
            up = np.zeros(lm.rank(t))
            up[np.asarray(lm.allowed_homes(t), dtype=np.int64)] = 1.0
            h_upper_parts.append(up)
    lower = np.zeros(int(x_start[-1]))
    single = x_start[:-1][n_choices == 1]
    lower[single] = x_upper[single]  # a single (allowed) choice is decided; presolve removes it
    x_cols = mb.add_vars("x", int(x_start[-1]), lower=lower, upper=x_upper, cost=x_cost, integer=True)
    ranks = np.array([lm.rank(t) for t in lm.free_tensors], dtype=np.int64)
    h_start = np.concatenate([[0], np.cumsum(ranks)]).astype(np.int64)
    h_upper = np.concatenate(h_upper_parts) if h_upper_parts else 1.0
    h_cols = mb.add_vars("h", int(h_start[-1]), upper=h_upper, integer=True)
    for k, t in enumerate(lm.free_tensors):
        for a in range(lm.rank(t)):
            home_t.append(tid[t])
            home_a.append(a)
            home_c.append(int(h_cols[h_start[k] + a]))
    mb.add_rows("one_choice", len(lm.ops), np.repeat(np.arange(len(lm.ops)), n_choices), x_cols, 1.0,
                lower=1.0, upper=1.0)
    if ranks.size:
        mb.add_rows("one_home", ranks.size, np.repeat(np.arange(ranks.size), ranks), h_cols, 1.0,
                    lower=1.0, upper=1.0)

    # ------------------------------------------------------------------ group the home and requirement tables
    ht, ha, hc = (np.asarray(v, dtype=np.int64) for v in (home_t, home_a, home_c))
    hkey = ht * max_rank + ha
    order = np.argsort(hkey, kind="stable")
    hkey, hc = hkey[order], hc[order]
    home_keys, home_first, home_count = np.unique(hkey, return_index=True, return_counts=True)
    ro, rt, rr, rc = (np.asarray(v, dtype=np.int64) for v in (req_o, req_t, req_r, req_c))
    rkey = (ro * len(tid) + rt) * max_rank + rr
    order = np.argsort(rkey, kind="stable")
    rkey, rc = rkey[order], rc[order]
    trip_keys, trip_first, trip_count = np.unique(rkey, return_index=True, return_counts=True)
    trip_r = trip_keys % max_rank
    trip_t = (trip_keys // max_rank) % len(tid)

    # ------------------------------------------------------------------ y columns: (t, h, R), h a possible home
    home_tensor, home_axis = home_keys // max_rank, home_keys % max_rank
    pairs = np.unique(trip_t * max_rank + trip_r)
    pair_t, pair_r = pairs // max_rank, pairs % max_rank
    # every possible home h != R of every (t, R) some consumer may require
    hp_of_t = np.searchsorted(home_tensor, pair_t, side="left")
    hp_cnt = np.searchsorted(home_tensor, pair_t, side="right") - hp_of_t
    seg, pos = _ragged(hp_of_t, hp_cnt)
    y_t, y_h, y_r = pair_t[seg], home_axis[pos], pair_r[seg]
    keep = y_h != y_r
    y_t, y_h, y_r = y_t[keep], y_h[keep], y_r[keep]
    on_chip = resident[y_t, y_h] & fits[y_t, y_r]
    y_cost = nbytes[y_t] * np.where(on_chip, 1.0, w)
    y_cols = mb.add_vars("y", y_t.size, upper=1.0, cost=y_cost)
    ykey = (y_t * max_rank + y_h) * max_rank + y_r
    y_order = np.argsort(ykey)
    ykey_sorted = ykey[y_order]

    def y_col(t: np.ndarray, h: np.ndarray, r: np.ndarray) -> np.ndarray:
        return y_cols[y_order[np.searchsorted(ykey_sorted, (t * max_rank + h) * max_rank + r)]]

    def home_slot(t: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Index into home_keys of (t, a), or -1 when no choice can give t that home."""
        key = t * max_rank + a
        idx = np.minimum(np.searchsorted(home_keys, key), home_keys.size - 1)
        return np.where(home_keys[idx] == key, idx, -1)

    # ------------------------------------------------------------------ rows y[t,h,R] >= req[o,t,R] + home[t,h] - 1
    # one row per (triple, possible home h != R)
    tp_first = np.searchsorted(home_tensor, trip_t, side="left")
    tp_cnt = np.searchsorted(home_tensor, trip_t, side="right") - tp_first
    seg, pos = _ragged(tp_first, tp_cnt)
    keep = home_axis[pos] != trip_r[seg]
    row_trip, row_home = seg[keep], pos[keep]
    n_rows = row_trip.size
    rows = [np.arange(n_rows)]
    cols = [y_col(trip_t[row_trip], home_axis[row_home], trip_r[row_trip])]
    vals = [np.ones(n_rows)]
    s, p = _ragged(trip_first[row_trip], trip_count[row_trip])  # -req
    rows.append(s)
    cols.append(rc[p])
    vals.append(-np.ones(s.size))
    s, p = _ragged(home_first[row_home], home_count[row_home])  # -home
    rows.append(s)
    cols.append(hc[p])
    vals.append(-np.ones(s.size))
    mb.add_rows("copy_pair", n_rows, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), lower=-1.0)

    # ------------------------------------------------------------------ cut: sum_h y[t,h,R] >= req[o,t,R] - home[t,R]
    n_trip = trip_keys.size
    rows, cols, vals = [], [], []
    if row_trip.size:
        rows.append(row_trip)
        cols.append(cols_y := y_col(trip_t[row_trip], home_axis[row_home], trip_r[row_trip]))
        vals.append(np.ones(cols_y.size))
    s, p = _ragged(trip_first, trip_count)
    rows.append(s)
    cols.append(rc[p])
    vals.append(-np.ones(s.size))
    slot = home_slot(trip_t, trip_r)
    has = np.flatnonzero(slot >= 0)
    s, p = _ragged(home_first[slot[has]], home_count[slot[has]])
    rows.append(has[s])
    cols.append(hc[p])
    vals.append(np.ones(s.size))
    mb.add_rows("copy_cut", n_trip, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), lower=0.0)

    y_key = {(lm.tensor_names[int(t)], int(h), int(r)): int(c)
             for t, h, r, c in zip(y_t, y_h, y_r, y_cols, strict=True)}
    h_first = int(x_start[-1])  # the h block follows the x block
    return BankMilp(mb.build(), lm, w, x_start.astype(np.int64), h_start + h_first, y_key)


@dataclass
class ExactResult:
    """What :func:`solve_exact` returns. ``mapping`` / ``report`` are ``None`` only when no solution was found."""

    status: Status
    mapping: BankMapping | None
    report: BankReport | None
    objective: float | None
    bound: float | None
    solve_time_s: float
    total_time_s: float
    model_stats: dict[str, int]
    warm_start_objective: float | None
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def solve_exact(lm: LayoutModel, offchip_weight: float = DEFAULT_OFFCHIP_WEIGHT, *,
                options: SolveOptions | None = None, warm_start: BankMapping | None = None,
                solver: str = "highs") -> ExactResult:
    """Solve the MILP (warm-started from ``warm_start``, by default the ``propagate`` mapping) and check the decoded
    mapping with the independent evaluator: its objective must equal the solver's (else status ERROR)."""
    t0 = time.perf_counter()
    w = float(offchip_weight)
    milp = build_milp(lm, w)
    start = warm_start
    if start is None:
        try:
            start = propagate(lm, w)
        except HeuristicFailure:  # the layout constraints leave no mapping: no warm start, the MILP proves it
            start = None
    ws_obj = evaluate(lm, start, w, validate=False).objective if start is not None else None
    opts = replace(options) if options is not None else SolveOptions(mip_rel_gap=1e-9)
    opts.warm_start = milp.encode(start) if start is not None else None
    res = solve_linear(milp.model, solver, opts)
    if res.x is None:
        return ExactResult(res.status, None, None, None, res.bound, res.solve_time_s, time.perf_counter() - t0,
                           milp.model.stats(), ws_obj, res.message)
    mapping = milp.decode(res.x)
    report = evaluate(lm, mapping, w)
    status, message = res.status, res.message
    obj = float(res.objective) if res.objective is not None else milp.model.objective_value(res.x)
    if abs(report.objective - obj) > 1e-6 * max(1.0, abs(obj)):
        status = Status.ERROR
        message = "; ".join(m for m in (message, f"the evaluator's objective {report.objective} differs from the "
                                                   f"MILP's {obj}") if m)
    if report.violations:
        status = Status.ERROR
        message = "; ".join([message, *report.violations]).strip("; ")
    return ExactResult(status, mapping, report, report.objective, res.bound, res.solve_time_s,
                       time.perf_counter() - t0, milp.model.stats(), ws_obj, message)
