r"""Per-layer cost tables over the design grid, filled lazily, with bounds that prune what need not be computed.

For a unique layer shape ``u`` and a design point ``p`` the **entry** ``f[u, p]`` is the layer's figure (latency,
energy or EDP — the problem's objective, per layer) on the accelerator of ``p``:

* **fixed dataflow** (ConfuciuX, DiGamma's HW-opt): the mapping of the dataflow template on ``p`` with the tiles its
  greedy chooses (:func:`~dlaopt.formulations.mapping.heuristics.dataflow`) — a deterministic function of
  ``(u, p)``, as MAESTRO's cost of a fixed dataflow style is in the seed;
* **free mappings** (DiGamma): the optimal mapping of the layer on ``p``, from the mapping MILP
  (:func:`~dlaopt.formulations.mapping.exact.solve_layer`), warm-started by the three dataflow templates. A MILP cut
  short by its time limit leaves an entry with a gap: ``lb < ub``.

Every entry has a lower bound ``lb[u, p]`` and an upper bound ``ub[u, p]`` (``inf`` until a mapping is known); it is
*settled* when they meet (a computed fixed-dataflow entry, a proven MILP optimum) or when nothing more can be
learned (a MILP that ran out of time). Bounds that hold for any mapping start the table:

* latency ``≥ max(⌈MACs / MAC units⌉, compulsory main-memory bytes / main-memory bandwidth)`` — every MAC runs
  once on some unit per cycle, and every input and weight element leaves main memory and every output element
  returns to it at least once;
* energy ``≥ MACs · e_MAC + compulsory main-memory bytes · their access energy``; EDP ``≥`` the product;
* for a fixed dataflow, latency ``≥ MACs / (PEs the template unrolls on the point's array)``
  (:func:`dataflow_compute_bound`).

For free mappings the optimum is **monotone in the design**: a mapping valid on a point ``q`` is valid, at the same
cost, on every point ``p ⪰ q`` of the same structure — as many array axes, and an L2 exactly when ``q`` has one
(an L2 of 0 bytes removes the level) — with no fewer rows, columns, L1 or L2 bytes, since capacities and axis sizes
only restrict which mappings are valid. Hence, after solving ``(u, q)`` with value ``v`` and proven
bound ``b`` by a mapping that uses ``r × c`` PEs, ``l1`` and ``l2`` bytes:

* ``lb[u, p] ≥ b`` for every ``p ⪯ q`` (``p`` has fewer mappings);
* ``ub[u, p] ≤ v`` for every ``p`` at which that mapping is valid (``p ⪰ (r, c, l1, l2)``); where both apply and
  ``b = v`` the entry of ``p`` is settled without a solve — points that cannot differ share one solve.

The fixed-dataflow greedy is not monotone in the design, so there only the any-mapping bounds are used and every
entry a search needs is computed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlaopt.formulations.codesign.space import DesignPoint, DesignSpace, Template, accelerator_for
from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import CostReport, evaluate_mapping
from dlaopt.formulations.mapping.heuristics import dataflow, dataflow_mapping
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.solvers.processes import map_until
from dlaopt.solvers.result import SolveOptions, Status

FREE = "free"
DATAFLOW_STYLES: tuple[str, ...] = ("nvdla", "eyeriss", "shidiannao")
METRICS: tuple[str, ...] = ("latency", "energy", "edp")


@dataclass
class EntryResult:
    """What computing one entry gave: the mapping (``None``: no mapping fits the point), its figures, the proven
    lower bound on the entry and the MILP's status (``OPTIMAL`` for a fixed-dataflow entry)."""

    mapping: Mapping | None
    latency: float = math.inf
    energy: float = math.inf
    bound: float = math.inf  # proven lower bound on the entry's figure
    status: Status = Status.OPTIMAL
    usage: tuple[int, int, int, int] = (0, 0, 0, 0)  # rows, cols, L1 bytes, L2 bytes the mapping needs
    time_s: float = 0.0

    def figure(self, metric: str) -> float:
        if self.mapping is None:
            return math.inf
        return {"latency": self.latency, "energy": self.energy, "edp": self.latency * self.energy}[metric]


def mapping_usage(arch: MappingArch, template: Template, m: Mapping, report: CostReport) -> tuple[int, int, int, int]:
    """(rows, cols, L1 bytes, L2 bytes) the mapping uses: the spatial factors per array axis and the tiles the
    per-PE and shared buffers hold (a one-axis array reports its length as columns)."""
    used = {"rows": 1, "cols": 1}
    for k, s in enumerate(arch.slots()):
        if s.kind == SPATIAL and s.axis in used and not s.mac:
            used[s.axis] *= math.prod(fs[k] for fs in m.factors.values())
    l1 = l2 = 0
    for lv in arch.levels[:-1]:
        tiles = report.tile_bytes.get(lv.name, {})
        names = {st.memory for st in lv.stores}
        total = sum(tiles.values())
        if template.l1 in names:
            l1 = max(l1, total)
        if template.l2 is not None and template.l2 in names:
            l2 = max(l2, total)
    return used["rows"], used["cols"], l1, l2


def compute_entry(nest: LoopNest, template: Template, point: DesignPoint, dataflow_name: str, metric: str,
                  time_limit: float | None = None, warm: Sequence[Mapping] = ()) -> EntryResult:
    """The entry of ``nest`` on ``point``: the fixed dataflow's mapping, or the mapping MILP's optimum (a module
    function, so that worker processes can run it)."""
    t0 = time.perf_counter()
    arch = arch_from_accelerator(accelerator_for(template, point))
    if dataflow_name != FREE:
        m = dataflow(nest, arch, dataflow_name, metric)
        if m is None:
            return EntryResult(None, time_s=time.perf_counter() - t0)
        r = evaluate_mapping(nest, arch, m)
        if not r.valid:
            return EntryResult(None, time_s=time.perf_counter() - t0)
        out = EntryResult(m, r.latency_cycles, r.energy_pj, 0.0, Status.OPTIMAL, mapping_usage(arch, template, m, r))
        out.bound = out.figure(metric)
        out.time_s = time.perf_counter() - t0
        return out
    from dlaopt.formulations.mapping.exact import solve_layer

    starts = [m for m in (dataflow(nest, arch, s, metric) for s in DATAFLOW_STYLES) if m is not None]
    starts += [m for m in warm if evaluate_mapping(nest, arch, m).valid]
    ex = solve_layer(nest, arch, metric, warm=starts, options=SolveOptions(time_limit=time_limit, threads=1))
    if ex.mapping is None:
        status = Status.INFEASIBLE if ex.status == Status.INFEASIBLE else ex.status
        bound = math.inf if status == Status.INFEASIBLE else (ex.bound if ex.bound is not None else 0.0)
        return EntryResult(None, bound=bound, status=status, time_s=time.perf_counter() - t0)
    r = evaluate_mapping(nest, arch, ex.mapping)
    out = EntryResult(ex.mapping, r.latency_cycles, r.energy_pj, 0.0, ex.status,
                      mapping_usage(arch, template, ex.mapping, r))
    value = out.figure(metric)
    out.bound = value if ex.status == Status.OPTIMAL else min(value, ex.bound if ex.bound is not None else 0.0)
    out.time_s = time.perf_counter() - t0
    return out


def any_mapping_bounds(nest: LoopNest, template: Template, space: DesignSpace) -> dict[str, np.ndarray]:
    """Per point, lower bounds on latency and energy that hold for every mapping (module docstring)."""
    acc = template.accelerator
    dram = next(m for m in acc.memories if m.name not in (template.l1, template.l2))
    full = dict(nest.sizes)
    elems = {t: nest.footprint(t, full) * nest.operand(t).word_bytes for t in ("I", "W", "O")}
    reads, writes = elems["I"] + elems["W"], elems["O"]
    bw = dram.bandwidth_bytes_per_cycle
    if dram.write_bandwidth_bytes_per_cycle is None:
        mem_cycles = (reads + writes) / bw if math.isfinite(bw) else 0.0
    else:
        mem_cycles = max(reads / bw if math.isfinite(bw) else 0.0, writes / dram.write_bandwidth_bytes_per_cycle)
    units = space.arrays["pes"] * template.macs_per_pe
    compute = np.ceil(nest.macs / units)
    latency = np.maximum(compute, mem_cycles)
    energy = (nest.macs * acc.mac_energy_pj + reads * dram.read_energy_pj_per_byte
              + writes * dram.write_energy_pj_per_byte)
    return {"latency": latency.astype(np.float64), "energy": np.full(len(space), float(energy))}


def dataflow_compute_bound(nest: LoopNest, template: Template, space: DesignSpace, name: str) -> np.ndarray:
    """Per point, ``MACs / (PEs the dataflow template unrolls)``: the template fixes the spatial factors from the
    array's shape alone (the capacity repair can only cut them, the greedy tiles never change them), so no mapping
    of this dataflow on the point computes in fewer cycles."""
    out = np.zeros(len(space))
    by_shape: dict[tuple[int, int], float] = {}
    for k, pt in enumerate(space.points):
        key = (pt.rows, pt.cols)
        if key not in by_shape:
            arch = arch_from_accelerator(accelerator_for(template, pt))
            m = dataflow_mapping(nest, arch, name)
            spatial = math.prod(fs[j] for fs in m.factors.values() for j, s in enumerate(arch.slots())
                                if s.kind == SPATIAL)
            by_shape[key] = math.ceil(nest.macs / spatial)
        out[k] = by_shape[key]
    return out


@dataclass
class CostTables:
    """The lazily filled table ``f[u, p]`` of unique layers ``u`` over the points of ``space`` (module docstring)."""

    nests: list[LoopNest]
    template: Template
    space: DesignSpace
    dataflow: str
    metric: str
    entry_time_limit: float | None = None
    workers: int = 1
    lb: np.ndarray = field(init=False)
    ub: np.ndarray = field(init=False)
    settled: np.ndarray = field(init=False)
    results: dict[tuple[int, int], EntryResult] = field(init=False, default_factory=dict)
    mapping_at: dict[tuple[int, int], Mapping] = field(init=False, default_factory=dict)  # best known, per entry
    computed: int = field(init=False, default=0)
    compute_time_s: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}")
        u, p = len(self.nests), len(self.space)
        self.lb = np.zeros((u, p))
        for k, n in enumerate(self.nests):
            b = any_mapping_bounds(n, self.template, self.space)
            if self.dataflow != FREE:
                b["latency"] = np.maximum(b["latency"], dataflow_compute_bound(n, self.template, self.space,
                                                                               self.dataflow))
            self.lb[k] = b["latency"] if self.metric == "latency" else (
                b["energy"] if self.metric == "energy" else b["latency"] * b["energy"])
        self.ub = np.full((u, p), math.inf)
        self.settled = np.zeros((u, p), dtype=bool)

    @property
    def monotone(self) -> bool:
        return self.dataflow == FREE

    def values(self) -> np.ndarray:
        """The lower-bound table a selection model sees (exact where settled without a gap)."""
        return self.lb

    def compute(self, pairs: Sequence[tuple[int, int]], deadline: float | None = None) -> int:
        """Compute the unsettled entries among ``pairs`` (in worker processes when allowed); returns how many were
        computed. Sequentially, an entry settled by an earlier one's propagation is skipped."""
        todo = [(u, p) for u, p in dict.fromkeys(pairs) if not self.settled[u, p]]
        if not todo:
            return 0
        if self.monotone:
            todo = self._largest_first(todo)
        t0 = time.perf_counter()
        done = 0
        if self.workers <= 1 or len(todo) <= 1:
            for u, p in todo:
                if deadline is not None and time.monotonic() >= deadline:
                    break
                if not self.settled[u, p]:
                    self._record(u, p, compute_entry(*self._args(u, p)))
                    done += 1
        else:
            for (u, p), res in zip(todo, self._run_parallel(todo, deadline), strict=True):
                if res is not None:
                    self._record(u, p, res)
                    done += 1
        self.computed += done
        self.compute_time_s += time.perf_counter() - t0
        return done

    def _largest_first(self, todo: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Of several points of one layer, solve the largest first: a later one may be settled by it."""
        a = self.space.arrays
        size = a["pes"] * 1.0 + a["l1"] * 1e-6 + a["l2"] * 1e-12
        return sorted(todo, key=lambda up: (up[0], -size[up[1]]))

    def _args(self, u: int, p: int) -> tuple:
        warm = [m for (uu, _), m in self.mapping_at.items() if uu == u][:4] if self.monotone else []
        return (self.nests[u], self.template, self.space.points[p], self.dataflow, self.metric,
                self.entry_time_limit, warm)

    def _run_parallel(self, todo: list[tuple[int, int]], deadline: float | None) -> list[EntryResult | None]:
        return map_until(compute_entry, [self._args(u, p) for u, p in todo], self.workers, deadline)[0]

    def _record(self, u: int, p: int, res: EntryResult) -> None:
        self.results[u, p] = res
        value = res.figure(self.metric)
        if not self.monotone:
            self.lb[u, p] = value
            self.ub[u, p] = value
            self.settled[u, p] = True
            if res.mapping is not None:
                self.mapping_at[u, p] = res.mapping
            return
        a = self.space.arrays
        below = self.space.dominated_by_caps(p)
        self.lb[u, below] = np.maximum(self.lb[u, below], res.bound)
        if res.mapping is not None:
            r, c, l1, l2 = res.usage
            valid = (self.space.same_structure(p) & (a["rows"] >= r) & (a["cols"] >= c) & (a["l1"] >= l1)
                     & (a["l2"] >= l2))
            better = valid & (value < self.ub[u])
            self.ub[u, better] = value
            for q in np.flatnonzero(better):
                self.mapping_at[u, int(q)] = res.mapping
        self.lb[u] = np.minimum(self.lb[u], self.ub[u])
        self.settled[u] |= self.lb[u] >= self.ub[u] * (1 - 1e-12)
        if res.status != Status.OPTIMAL:  # nothing more to learn here: the solve ran out of time
            self.settled[u, p] = True
            self.lb[u, p] = min(self.ub[u, p], max(self.lb[u, p], res.bound))

    def stats(self) -> dict[str, Any]:
        return {"entries": int(self.lb.size), "computed": self.computed,
                "settled": int(self.settled.sum()), "compute_time_s": round(self.compute_time_s, 3)}
