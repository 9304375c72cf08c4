r"""Searches over hardware *and* mappings (free-mapping co-design): DiGamma and its baselines (seed 001 Chapter 6).

Every method returns a :class:`SearchOutcome` whose solution is a
:class:`~dlaopt.formulations.codesign.data.CodesignSolution` (a design point and a mapping per layer), or raises
:class:`~dlaopt.formulations.base.HeuristicFailure` when it saw no valid design. A design is *valid* when every
layer's mapping is valid on its point's accelerator (:func:`~dlaopt.formulations.codesign.space.accelerator_for`),
the points respect the instance's budgets (LS: the one point's area / power; LP: their sums over layers,
:attr:`CodesignData.budgets`), the user's design rules (:meth:`CodesignData.allowed`) and every cap rule
(:attr:`CodesignData.cap_rules`, each on its own metric). Its value is the problem's objective — the per-layer
figure (latency, energy or EDP) aggregated over *all* layers (a unique shape counted with its multiplicity for sums).
Before a method returns, the answer is recomputed from the instance alone (:func:`design_value`).

* :func:`digamma` — DiGamma's domain-aware GA (§6.2.3, Fig. 6.4) with the seed's 40K-sample budget (§6.3.1).
* :func:`mapping_opt` — the seed's Mapping-opt baseline (§6.3.1): one fixed buffer-, compute-focused or medium design
  from the grid, every layer mapped on it by GAMMA (Chapter 4) or by the exact mapping MILP.
* :func:`random_search` — random hardware and random mappings (§6.3.2's "Random"), buffers by minimum requirement.

**Encoding** (§6.1.3, Fig. 6.3). A genome is the hardware genes — ``π_L2`` (PE-array rows) and ``π_L1`` (columns) as
*levels* of the grid's ``rows`` and ``cols`` axes — and one GAMMA mapping genome
(:class:`~dlaopt.formulations.mapping.heuristics.Genome`: tiles, loop orders, parallel dimensions) per *job*. In LS
(the seed's case) there is one set of hardware genes and a job per unique layer shape; in LP each layer has its own
hardware genes and its own job (the budget then caps the sum over layers).

**Decoding.** A job's genome is decoded with GAMMA's decoder on the design's array: the mapping genes are defined on
a reference architecture with the grid's largest rows and columns, and decoded on the same architecture with the axes
resized to the design's ``π_L2 × π_L1`` — GAMMA's decoder gives a parallel gene the largest divisor that still fits
the room left on its axis, so spatial factors that exceed a smaller array move to the temporal loop above
(:meth:`~dlaopt.formulations.mapping.heuristics._Gamma.decode`). The mapping is then carried over, slot by slot, to
the design's own accelerator (a one-row design is a 1-D array, whose empty rows axis is dropped).

**Buffer allocation by minimum requirement** (§6.1.3, Fig. 6.3(f), §6.2.3). The L1 and L2 sizes are not genes: the
decoded mappings' tiles give the bytes each layer needs in the per-PE L1 and the shared L2
(:func:`~dlaopt.formulations.codesign.tables.mapping_usage`), and the design gets the smallest grid levels holding
them — the maximum over the layers in LS, each layer's own in LP. (With design rules, the smallest-area allowed
point among those at least as large.) A design needing more than the largest level, or over the budget, is invalid —
the seed's negative fitness (§6.1.2, "Constraint checker"). The cost model's figures do not depend on the buffer
capacities (they only decide validity), so the mappings are costed once, on the design's array with the largest
buffers, and remain valid, at the same cost, on the allocated point.

Common rules: deterministic for a ``seed`` (one :class:`random.Random`, no global state); ``time_limit`` (wall-clock
seconds) stops early; a *sample* is one complete design evaluated (hardware plus every layer's mapping), repeats
included, as the seed's budget "population size times number of generations" counts them; the ``trace`` lists
``(samples so far, best valid value)`` at every improvement.

Departures from the seed, besides those of GAMMA itself (:func:`~dlaopt.formulations.mapping.heuristics.gamma`):

* The hardware genes are grid levels, not free integers: every method chooses from the instance's grid, so the exact
  method's optimum is the reference. Grid points with an L2 of 0 bytes (no L2) are never allocated by minimum
  requirement, since a mapping always keeps a tile in the template's L2.
* Invalid individuals rank after all valid ones, among themselves by their violation (relative budget and cap
  overruns, plus one per layer needing more than the largest buffer level or with no valid mapping), so that a
  population with no valid member still moves towards the budget; the seed only says "negative fitness".
* The seed's hyper-parameters were tuned by Bayesian optimisation and are not published (§6.3.1, footnote 2): the
  population (100), the elite and parent ratios (GAMMA's 0.05, 0.15), the operator rate (GAMMA's 0.5), the
  probability that a child's hardware is mutated (0.25) and the fraction of jobs whose mapping genes a child
  perturbs (``2 / jobs``, at least one) are this module's choices.
"""

from __future__ import annotations

import math
import random
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dlaopt.formulations.base import HeuristicFailure
from dlaopt.formulations.codesign.data import CodesignData, CodesignSolution
from dlaopt.formulations.codesign.space import DesignPoint, accelerator_for
from dlaopt.formulations.codesign.tables import FREE, compute_entry, mapping_usage
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import (
    ELITE_RATIO,
    PARENTS_RATIO,
    Genome,
    _Gamma,
    gamma,
    mapping_key,
    sample_mapping,
)
from dlaopt.formulations.mapping.mapping import Mapping

SEED_SAMPLES = 40_000  # DiGamma's sampling budget for every optimiser (§6.3.1)
DESIGNS = ("compute", "buffer", "medium")
_TOL = 1e-9  # relative tolerance of budget and cap checks
_CACHE_LIMIT = 300_000  # per-layer evaluations kept (cleared when full; results do not depend on it)


@dataclass
class SearchOutcome:
    """The best valid design found, its value, the samples spent, the improvement trace ``(samples, best value)``,
    the wall time, the method and method-specific statistics."""

    solution: CodesignSolution
    value: float
    samples: int
    trace: list[tuple[int, float]]
    time_s: float
    method: str
    stats: dict[str, Any] = field(default_factory=dict)


# ================================================================================================ evaluation


def _figure(metric: str, latency: float, energy: float) -> float:
    return {"latency": latency, "energy": energy, "edp": latency * energy}[metric]


def _cap_overrun(data: CodesignData, layer_figures: dict[int, tuple[float, float]]) -> float:
    """Sum of relative overruns of the cap rules over the given layers' (latency, energy)."""
    over = 0.0
    for rule in data.cap_rules:
        for k in rule.layers:
            if k in layer_figures:
                v = _figure(rule.metric, *layer_figures[k])
                if v > rule.limit * (1 + _TOL):
                    over += (v - rule.limit) / max(abs(rule.limit), 1e-12)
    return over


def _budget_overrun(data: CodesignData, points: Sequence[int]) -> float:
    """Relative overrun of the budgets by the points (LS: the peak; LP: the sum over ``points``, one per layer)."""
    use = {"area_mm2": data.area_mm2, "power_mw": data.power_mw}
    over = 0.0
    for key, cap in data.budgets.items():
        vals = use[key][np.asarray(points, dtype=np.int64)]
        total = float(vals.max() if data.deployment == "ls" else vals.sum())
        if total > cap * (1 + _TOL):
            over += (total - cap) / max(abs(cap), 1e-12)
    return over


def design_value(data: CodesignData, solution: CodesignSolution) -> float:
    """The objective of ``solution`` recomputed from the instance (each layer's mapping costed on its point's
    accelerator); ``ValueError`` if it is not a valid design (off-grid point, invalid mapping, budget, design rule
    or cap violated, LS with more than one point)."""
    space, L = data.space, data.n_layers
    if len(solution.points) != L or len(solution.mappings) != L:
        raise ValueError(f"the solution has {len(solution.points)} points and {len(solution.mappings)} mappings for "
                         f"{L} layers")
    idx = [space.index(p) for p in solution.points]
    if any(i is None for i in idx):
        raise ValueError("a design point is not on the grid")
    pts = [int(i) for i in idx]  # type: ignore[arg-type]
    if data.deployment == "ls" and len(set(pts)) != 1:
        raise ValueError("a layer-sequential design uses one point for every layer")
    allowed = data.allowed()
    if not all(allowed[k, pts[k]] for k in range(L)):
        raise ValueError("a layer's point is outside its design rules")
    if _budget_overrun(data, pts[:1] if data.deployment == "ls" else pts) > 0:
        raise ValueError("the design is over the budget")
    archs: dict[int, MappingArch] = {}
    figs = np.zeros(L)
    raw: dict[int, tuple[float, float]] = {}
    for k in range(L):
        p = pts[k]
        if p not in archs:
            archs[p] = arch_from_accelerator(accelerator_for(data.template, space.points[p]))
        r = evaluate_mapping(data.layers[k], archs[p], solution.mappings[k])
        if not r.valid:
            raise ValueError(f"the mapping of layer {data.layer_names[k]} is not valid: {r.violations[:2]}")
        raw[k] = (r.latency_cycles, r.energy_pj)
        figs[k] = _figure(data.objective, r.latency_cycles, r.energy_pj)
    if _cap_overrun(data, raw) > 0:
        raise ValueError("a cap rule is violated")
    return data.aggregate_values(figs)


@dataclass
class _JobResult:
    """One job's mapping on one array: its figures and the L1 / L2 bytes it needs (``mapping is None``: invalid)."""

    ident: int
    mapping: Mapping | None
    latency: float = math.inf
    energy: float = math.inf
    l1: int = 0
    l2: int = 0


@dataclass
class _Design:
    """A complete design evaluated: per unit its grid point (-1: none), per job its result, the value (``inf`` if
    invalid) and the violation (0 if valid)."""

    points: list[int]
    jobs: list[_JobResult]
    value: float
    violation: float
    key: tuple
    reason: str = ""

    @property
    def valid(self) -> bool:
        return self.violation == 0.0 and math.isfinite(self.value)

    def rank(self) -> tuple[bool, float, float]:
        return (not self.valid, self.violation, self.value)


class _Evaluator:
    """Units (a set of hardware genes and the layers they serve), jobs (a mapping problem on a unit) and the
    evaluation of complete designs with buffer allocation by minimum requirement (module docstring)."""

    def __init__(self, data: CodesignData, rng: random.Random, rate: float = 0.5) -> None:
        if data.dataflow != FREE:
            raise ValueError(f"free-mapping co-design needs dataflow '{FREE}', the instance fixes '{data.dataflow}'")
        self.data, self.rng = data, rng
        space, tpl = data.space, data.template
        self.rows, self.cols = space.rows, space.cols
        self.l1_levels, self.l2_levels = list(space.l1_bytes), list(space.l2_bytes)
        if self.l1_levels != sorted(self.l1_levels) or self.l2_levels != sorted(self.l2_levels):
            raise ValueError("the design space's buffer levels must be ascending")
        self.idx = np.full(space.axes, -1, dtype=np.int64)
        for k, g in enumerate(space.grid):
            self.idx[g] = k
        self.pairs = [(i, j) for i in range(len(self.rows)) for j in range(len(self.cols))
                      if (self.idx[i, j] >= 0).any()]
        self.pair_set = set(self.pairs)
        self.area, self.power = data.area_mm2, data.power_mw
        L = data.n_layers
        if data.deployment == "ls":
            self.unit_layers = [list(range(L))]
            self.job_nest = [int(u) for u in np.unique(data.unique_of)]
            self.job_layers = [[int(k) for k in np.flatnonzero(data.unique_of == u)] for u in self.job_nest]
            self.job_unit = [0] * len(self.job_nest)
        else:
            self.unit_layers = [[k] for k in range(L)]
            self.job_nest = [int(data.unique_of[k]) for k in range(L)]
            self.job_layers = [[k] for k in range(L)]
            self.job_unit = list(range(L))
        self.unit_jobs = [[j for j, u in enumerate(self.job_unit) if u == k] for k in range(len(self.unit_layers))]
        allowed = data.allowed()
        self.unit_allowed = [allowed[layers].all(axis=0) for layers in self.unit_layers]
        self.unit_free = [bool(a.all()) for a in self.unit_allowed]
        # buffers of the architectures the mappings are costed on (capacity does not change the figures)
        self.max_l1 = max(self.l1_levels)
        self.max_l2 = max(self.l2_levels) if tpl.l2 is not None else 0
        # the genomes live on the largest array (a 1-D one when every design has one row)
        self.ref_arch = arch_from_accelerator(accelerator_for(
            tpl, DesignPoint(max(self.rows), max(self.cols), self.max_l1, self.max_l2)))
        self.ops = {u: _Gamma(data.nests[u], self.ref_arch, rng, rate) for u in sorted(set(self.job_nest))}
        self._decoders: dict[tuple[int, int, int], _Gamma] = {}
        self._archs: dict[tuple[int, int], MappingArch] = {}
        self._slot_map: dict[tuple[int, int], list[int | None]] = {}
        self.cache: dict[tuple, _JobResult] = {}
        self._next_id = 0
        self.cost_model_calls = 0
        self.cache_hits = 0
        self.init_points = self._initial_points()

    # -------------------------------------------------------------------------------------------- architectures
    def arch(self, ri: int, ci: int) -> MappingArch:
        """The design's own accelerator (rows × cols) with the largest buffers."""
        key = (ri, ci)
        if key not in self._archs:
            self._archs[key] = arch_from_accelerator(accelerator_for(
                self.data.template, DesignPoint(self.rows[ri], self.cols[ci], self.max_l1, self.max_l2)))
        return self._archs[key]

    def _resized(self, ri: int, ci: int) -> MappingArch:
        """The reference architecture with its PE-array axes resized to the design (same slots as the genomes)."""
        size = {"rows": self.rows[ri], "cols": self.cols[ci]}
        levels = tuple(replace(lv, fanout=tuple((a, size.get(a, s)) for a, s in lv.fanout))
                       for lv in self.ref_arch.levels)
        return replace(self.ref_arch, levels=levels)

    def _with_buffers(self, arch: MappingArch, l1: int, l2: int) -> MappingArch:
        """``arch`` with the template's L1 and L2 capacities set to ``l1`` and ``l2`` bytes."""
        cap = {self.data.template.l1: l1, self.data.template.l2: l2}
        levels = tuple(replace(lv, stores=tuple(replace(st, capacity_bytes=cap.get(st.memory, st.capacity_bytes))
                                                for st in lv.stores)) for lv in arch.levels)
        return replace(arch, levels=levels)

    def random_genome(self, u: int, p: int) -> Genome:
        """GAMMA's initialisation of a genome for nest ``u`` on grid point ``p``: random genes on the point's array,
        repaired to fit the point's buffers (:meth:`~dlaopt.formulations.mapping.heuristics._Gamma.random_genome`)."""
        i, j, a, b = self.data.space.grid[p]
        arch = self._with_buffers(self._resized(i, j), self.l1_levels[a], self.l2_levels[b] or self.max_l2)
        return _Gamma(self.data.nests[u], arch, self.rng, self.ops[u].rate).random_genome()

    def decoder(self, u: int, ri: int, ci: int) -> _Gamma:
        key = (u, ri, ci)
        if key not in self._decoders:
            self._decoders[key] = _Gamma(self.data.nests[u], self._resized(ri, ci), self.rng, self.ops[u].rate)
        return self._decoders[key]

    def to_design(self, m: Mapping, ri: int, ci: int) -> Mapping:
        """Carry a mapping from the resized reference architecture to the design's own one, slot by slot (a slot the
        design lacks — an empty rows axis — has factor 1 everywhere)."""
        key = (ri, ci)
        if key not in self._slot_map:
            src = {s.name: k for k, s in enumerate(self.ref_arch.slots())}
            self._slot_map[key] = [src.get(s.name) for s in self.arch(ri, ci).slots()]
        smap = self._slot_map[key]
        if len(smap) == len(self.ref_arch.slots()) and all(k == i for i, k in enumerate(smap)):
            return m
        factors = {d: tuple(1 if k is None else fs[k] for k in smap) for d, fs in m.factors.items()}
        return Mapping(factors, m.orders)

    # -------------------------------------------------------------------------------------------- jobs
    def job_result(self, u: int, ri: int, ci: int, m: Mapping) -> _JobResult:
        """Cost ``m`` (on the design's accelerator, slot layout of :meth:`arch`) and the buffer bytes it needs."""
        nest, arch = self.data.nests[u], self.arch(ri, ci)
        key = (u, ri, ci, mapping_key(nest, arch, m))
        hit = self.cache.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit
        self.cost_model_calls += 1
        self._next_id += 1
        r = evaluate_mapping(nest, arch, m, check_capacity=False)
        if not r.valid:
            res = _JobResult(self._next_id, None)
        else:
            _, _, l1, l2 = mapping_usage(arch, self.data.template, m, r)
            res = _JobResult(self._next_id, m, r.latency_cycles, r.energy_pj, l1, l2)
        if len(self.cache) >= _CACHE_LIMIT:
            self.cache.clear()
        self.cache[key] = res
        return res

    def decode_job(self, j: int, ri: int, ci: int, g: Genome) -> _JobResult:
        u = self.job_nest[j]
        m = self.decoder(u, ri, ci).decode(g)
        return self.job_result(u, ri, ci, self.to_design(m, ri, ci))

    # -------------------------------------------------------------------------------------------- designs
    def allocate(self, k: int, ri: int, ci: int, need1: int, need2: int) -> int:
        """The grid point of unit ``k`` on array ``(ri, ci)`` with the smallest buffers holding ``need1`` L1 and
        ``need2`` L2 bytes (-1: none)."""
        a0, b0 = bisect_left(self.l1_levels, need1), bisect_left(self.l2_levels, need2)
        if a0 >= len(self.l1_levels) or b0 >= len(self.l2_levels):
            return -1
        p = int(self.idx[ri, ci, a0, b0])
        if p >= 0 and (self.unit_free[k] or self.unit_allowed[k][p]):
            return p
        block = self.idx[ri, ci, a0:, b0:].ravel()
        block = block[block >= 0]
        block = block[self.unit_allowed[k][block]]
        if block.size == 0:
            return -1
        return int(min(block, key=lambda q: (self.area[q], self.power[q], q)))

    def evaluate(self, hw: Sequence[Sequence[int]], results: Sequence[_JobResult]) -> _Design:
        """The complete design of hardware genes ``hw`` (per unit) and job results."""
        data = self.data
        points: list[int] = []
        violation = 0.0
        reason = ""
        for k, jobs in enumerate(self.unit_jobs):
            ri, ci = hw[k]
            bad = [j for j in jobs if results[j].mapping is None]
            if bad:
                violation += len(bad)
                reason = reason or "no valid mapping"
                points.append(-1)
                continue
            need1 = max(results[j].l1 for j in jobs)
            need2 = max(results[j].l2 for j in jobs)
            p = self.allocate(k, ri, ci, need1, need2)
            if p < 0:
                over = sum(1 for j in jobs if results[j].l1 > self.l1_levels[-1] or results[j].l2 > self.l2_levels[-1])
                violation += max(1, over)
                reason = reason or ("buffers beyond the largest level" if over else "no allowed point")
            points.append(p)
        used = [p for p in points if p >= 0]
        if used and len(used) == len(points):
            per_layer = [points[0]] if data.deployment == "ls" else points
            b = _budget_overrun(data, per_layer)
            if b > 0:
                violation += b
                reason = reason or "over the budget"
        raw = {k: (results[j].latency, results[j].energy) for j, layers in enumerate(self.job_layers)
               for k in layers if results[j].mapping is not None}
        c = _cap_overrun(data, raw)
        if c > 0:
            violation += c
            reason = reason or "a cap rule violated"
        key = (tuple(tuple(h) for h in hw), tuple(r.ident for r in results))
        if violation > 0:
            return _Design(points, list(results), math.inf, violation, key, reason)
        figs = [_figure(data.objective, r.latency, r.energy) for r in results]
        if data.aggregate == "max":
            value = max(figs)
        else:
            value = float(sum(len(self.job_layers[j]) * f for j, f in enumerate(figs)))
        return _Design(points, list(results), value, 0.0, key)

    def solution(self, d: _Design, notes: dict[str, Any]) -> CodesignSolution:
        data = self.data
        pts: list[DesignPoint] = [data.space.points[0]] * data.n_layers
        maps: list[Mapping] = [None] * data.n_layers  # type: ignore[list-item]
        for j, layers in enumerate(self.job_layers):
            for k in layers:
                pts[k] = data.space.points[d.points[self.job_unit[j]]]
                maps[k] = d.jobs[j].mapping  # type: ignore[assignment]
        return CodesignSolution(pts, maps, notes)

    # -------------------------------------------------------------------------------------------- hardware genes
    def _initial_points(self) -> list[np.ndarray]:
        share = 1.0 if self.data.deployment == "ls" else 1.0 / max(1, self.data.n_layers)
        use = {"area_mm2": self.area, "power_mw": self.power}
        out = []
        for k in range(len(self.unit_layers)):
            ok = self.unit_allowed[k].copy()
            if self.max_l2 > 0:
                ok &= self.data.space.arrays["l2"] > 0
            fits = ok.copy()
            for r, cap in self.data.budgets.items():
                fits &= use[r] <= cap * share * (1 + _TOL)
            pts = np.flatnonzero(fits if fits.any() else ok)
            out.append(pts if pts.size else np.arange(len(self.data.space)))
        return out

    def random_start(self, k: int) -> int:
        """A random grid point for unit ``k`` among the allowed ones within its share of the budget (LS: the budget;
        LP: budget / layers), or among all allowed ones when none is."""
        return int(self.rng.choice(self.init_points[k]))

    def mutate_hw(self, hw: list[int]) -> None:
        """Mutate-HW (§6.2.3, Fig. 6.4): with equal probability scale the PE count (both ``π_L2`` and ``π_L1`` one
        level up, or both down), change the aspect ratio at about the same count (one axis up a level, the other
        down), or redraw one axis uniformly; a move off the grid (or outside its PE-count limits) is retried, at most
        eight times, else the genes stay."""
        nr, nc = len(self.rows), len(self.cols)
        for _ in range(8):
            ri, ci = hw
            kind = self.rng.randrange(3)
            step = self.rng.choice((-1, 1))
            if kind == 0:
                ri, ci = ri + step, ci + step
                ri, ci = min(max(ri, 0), nr - 1), min(max(ci, 0), nc - 1)
            elif kind == 1:
                ri, ci = ri + step, ci - step
            elif self.rng.random() < 0.5:
                ri = self.rng.randrange(nr)
            else:
                ci = self.rng.randrange(nc)
            if (ri, ci) != tuple(hw) and (ri, ci) in self.pair_set:
                hw[0], hw[1] = ri, ci
                return


# ================================================================================================ DiGamma


@dataclass
class _Individual:
    hw: list[list[int]]  # per unit: [rows level, cols level]
    maps: list[Genome]  # per job (shared with parents until an operator copies them)


def _check_budget(samples: int, population: int | None = None) -> None:
    if samples < 1:
        raise ValueError(f"samples must be positive, got {samples}")
    if population is not None and population < 2:
        raise ValueError(f"the population needs at least two individuals, got {population}")


@dataclass
class _Tally:
    """The samples a search evaluated: how many, the best valid design and when it improved, and why the invalid
    ones were invalid."""

    used: int = 0
    best: _Design | None = None
    trace: list[tuple[int, float]] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)

    def record(self, d: _Design) -> _Design:
        self.used += 1
        if d.valid and (self.best is None or d.value < self.best.value):
            self.best = d
            self.trace.append((self.used, d.value))
        elif not d.valid:
            self.reasons[d.reason] = self.reasons.get(d.reason, 0) + 1
        return d

    def failure(self, method: str) -> HeuristicFailure:
        why = ", ".join(f"{n} {r}" for r, n in sorted(self.reasons.items(), key=lambda x: -x[1])) or (
            "no sample evaluated")
        return HeuristicFailure(f"{method} found no valid design in {self.used} samples ({why})")


def _finish(ev: _Evaluator, tally: _Tally, method: str, t0: float, stats: dict[str, Any]) -> SearchOutcome:
    best, samples, trace = tally.best, tally.used, tally.trace
    assert best is not None
    stats = {**stats, "invalid": dict(tally.reasons), "cost_model_calls": ev.cost_model_calls,
             "cache_hits": ev.cache_hits}
    sol = ev.solution(best, {"method": method, "samples": samples})
    value = design_value(ev.data, sol)
    if not math.isclose(value, best.value, rel_tol=1e-9, abs_tol=1e-9):
        raise RuntimeError(f"{method}: the recomputed value {value} differs from the search's {best.value}")
    return SearchOutcome(sol, value, samples, trace, time.perf_counter() - t0, method, stats)


def digamma(data: CodesignData, *, samples: int = SEED_SAMPLES, population: int = 100, seed: int = 0,
            time_limit: float | None = None, rate: float = 0.5, hw_rate: float = 0.25,
            job_rate: float | None = None) -> SearchOutcome:
    """DiGamma (seed 001 §6.2.3): a GA over hardware genes and GAMMA mapping genomes (module docstring: encoding,
    decoding, buffer allocation by minimum requirement).

    Flow (GAMMA's, §4.3.3): ``population`` random individuals — hardware genes drawn among the arrays whose smallest
    point fits the budget, mapping genomes by GAMMA's initialisation (repaired to fit the largest buffers); then per
    generation the population is ranked (valid designs by value, then invalid ones by violation; repeated designs
    dropped), the top ``PARENTS_RATIO`` are parents and the top ``ELITE_RATIO`` valid ones elites, and ``population``
    children are bred, each from two random parents by the operators of Fig. 6.4:

    * **Crossover** — the hardware genes: each of ``π_L2``, ``π_L1`` from the second parent with probability
      ``rate`` (else the first); the mapping genes: GAMMA's tile crossover on the perturbed jobs (below);
    * **Mutate-HW** — with probability ``hw_rate`` (:meth:`_Evaluator.mutate_hw`: PE count or aspect ratio);
    * **Mutate-Map, Reorder, Grow/Aging** — each job is perturbed with probability ``job_rate`` (default ``2 /
      jobs``; at least one job per child) by GAMMA's offspring step on the two parents' genomes of that job
      (:meth:`~dlaopt.formulations.mapping.heuristics._Gamma.offspring`: tile crossover, parallel-dimension and tile
      mutations, reorder, growth / aging, each with probability ``rate``); the other jobs inherit the first
      parent's genome;
    * **Buffer sizing** follows from the decoded mappings (minimum requirement), so every operator that changes a
      tile or the array also resizes the buffers, as Fig. 6.4 marks.

    The elites plus the children form the next population. ``samples`` bounds the individuals evaluated (initial
    ones included; the last generation is cut to fit); ``time_limit`` the wall-clock seconds."""
    _check_budget(samples, population)
    t0 = time.perf_counter()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    rng = random.Random(seed)
    ev = _Evaluator(data, rng, rate)
    n_jobs = len(ev.job_nest)
    p_job = min(1.0, 2.0 / n_jobs) if job_rate is None else job_rate
    tally = _Tally()

    def out_of_time() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    def score(ind: _Individual) -> _Design:
        results = [ev.decode_job(j, *ind.hw[ev.job_unit[j]], g) for j, g in enumerate(ind.maps)]
        return tally.record(ev.evaluate(ind.hw, results))

    def breed(dad: _Individual, mom: _Individual) -> _Individual:
        hw = []
        for a, b in zip(dad.hw, mom.hw, strict=True):
            h = [b[0] if rng.random() < rate else a[0], b[1] if rng.random() < rate else a[1]]
            if tuple(h) not in ev.pair_set:
                h = list(a)
            if rng.random() < hw_rate:
                ev.mutate_hw(h)
            hw.append(h)
        picked = [j for j in range(n_jobs) if rng.random() < p_job] or [rng.randrange(n_jobs)]
        maps = list(dad.maps)
        for j in picked:
            maps[j] = ev.ops[ev.job_nest[j]].offspring([dad.maps[j], mom.maps[j]], 1)[0]
        return _Individual(hw, maps)

    pop: list[_Individual] = []
    fit: list[_Design] = []
    while len(pop) < min(population, samples) and not out_of_time():
        starts = [ev.random_start(k) for k in range(len(ev.unit_layers))]
        ind = _Individual([list(data.space.grid[p][:2]) for p in starts],
                          [ev.random_genome(ev.job_nest[j], starts[ev.job_unit[j]]) for j in range(n_jobs)])
        pop.append(ind)
        fit.append(score(ind))
    num_elites = max(1, int(population * ELITE_RATIO))
    num_parents = max(2, int(population * PARENTS_RATIO))
    generations = 0
    while tally.used < samples and not out_of_time() and pop:
        order, seen = [], set()
        for i in sorted(range(len(pop)), key=lambda i: fit[i].rank()):
            if fit[i].key not in seen:
                seen.add(fit[i].key)
                order.append(i)
        order = order[:population]
        pop, fit = [pop[i] for i in order], [fit[i] for i in order]
        valid = sum(1 for d in fit if d.valid)
        parents = pop[:max(1, min(num_parents, len(pop)))]
        elites, elite_fit = pop[:min(num_elites, valid)], fit[:min(num_elites, valid)]
        children: list[_Individual] = []
        child_fit: list[_Design] = []
        for _ in range(min(population, samples - tally.used)):
            if out_of_time():
                break
            child = breed(rng.choice(parents), rng.choice(parents))
            children.append(child)
            child_fit.append(score(child))
        pop, fit = elites + children, elite_fit + child_fit
        generations += 1
    if tally.best is None:
        raise tally.failure("DiGamma")
    return _finish(ev, tally, "digamma", t0, {"population": population, "generations": generations})


# ================================================================================================ random search


def random_search(data: CodesignData, *, samples: int, seed: int = 0, time_limit: float | None = None) -> SearchOutcome:
    """Random search (the seed's "Random" optimiser, §6.3.2): per sample, each unit's array uniform over the grid's
    (rows, cols) pairs and each job's mapping uniform by Timeloop's random mapper
    (:func:`~dlaopt.formulations.mapping.heuristics.sample_mapping`: factorizations respecting the array axes,
    random loop orders, buffers not considered); buffers by minimum requirement; the best valid design kept."""
    _check_budget(samples)
    t0 = time.perf_counter()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    rng = random.Random(seed)
    ev = _Evaluator(data, rng)
    tally = _Tally()
    while tally.used < samples and (deadline is None or time.monotonic() < deadline):
        hw = [list(rng.choice(ev.pairs)) for _ in ev.unit_layers]
        results = []
        for j, u in enumerate(ev.job_nest):
            ri, ci = hw[ev.job_unit[j]]
            results.append(ev.job_result(u, ri, ci, sample_mapping(data.nests[u], ev.arch(ri, ci), rng)))
        tally.record(ev.evaluate(hw, results))
    if tally.best is None:
        raise tally.failure("random search")
    return _finish(ev, tally, "random", t0, {})


# ================================================================================================ Mapping-opt


def fixed_design(data: CodesignData, design: str) -> int:
    """The grid point of Mapping-opt's fixed design (§6.3.1), among the points every layer may use and that fit the
    budgets (LS: the point's area / power; LP: ``layers ×`` that, the same point running every layer). With ``N`` the
    PE count and ``B = N · L1 + L2`` the on-chip buffer bytes:

    * ``compute`` (compute-focused: large compute, small buffer): the most PEs, then the fewest buffer bytes;
    * ``buffer`` (buffer-focused: small compute, large buffer): the most buffer bytes, then the most PEs;
    * ``medium`` (Medium-Buf-Com): the point nearest, in ``(ln N, ln B)`` (Euclidean), to the geometric middle of the
      two extremes ``(√(N_c·N_b), √(B_c·B_b))``, then the larger area.

    Remaining ties go to the squarest array (smallest ``|ln(rows / cols)|``), then the lowest grid index.
    ``HeuristicFailure`` if no point fits."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design '{design}' (expected one of {DESIGNS})")
    a = data.space.arrays
    n_pe = a["pes"].astype(np.float64)
    buf = n_pe * a["l1"] + a["l2"]
    scale = 1.0 if data.deployment == "ls" else float(data.n_layers)
    ok = data.allowed().all(axis=0)
    use = {"area_mm2": data.area_mm2, "power_mw": data.power_mw}
    for key, cap in data.budgets.items():
        ok &= use[key] * scale <= cap * (1 + _TOL)
    cand = np.flatnonzero(ok)
    if cand.size == 0:
        raise HeuristicFailure(f"Mapping-opt ({design}-focused): no grid point every layer may use fits the budget")
    square = np.abs(np.log(a["rows"] / a["cols"]))

    def pick(key: Any) -> int:
        return int(min(cand, key=lambda p: (*key(p), square[p], p)))

    compute = pick(lambda p: (-n_pe[p], buf[p]))
    buffer = pick(lambda p: (-buf[p], -n_pe[p]))
    if design == "compute":
        return compute
    if design == "buffer":
        return buffer
    mid_n = 0.5 * (math.log(n_pe[compute]) + math.log(n_pe[buffer]))
    mid_b = 0.5 * (math.log(buf[compute]) + math.log(buf[buffer]))
    return pick(lambda p: ((math.log(n_pe[p]) - mid_n) ** 2 + (math.log(buf[p]) - mid_b) ** 2, -data.area_mm2[p]))


def mapping_opt(data: CodesignData, design: str, *, mapper: str = "gamma", samples: int = SEED_SAMPLES,
                population: int = 100, seed: int = 0, time_limit: float | None = None) -> SearchOutcome:
    """Mapping-opt (seed 001 §6.3.1): the fixed design :func:`fixed_design` (``compute``, ``buffer`` or ``medium``),
    every unique layer mapped on it for the problem's per-layer objective — by GAMMA
    (:func:`~dlaopt.formulations.mapping.heuristics.gamma`, ``population`` individuals, at most ``samples`` distinct
    mappings per layer: the layers evolve independently, so ``samples`` complete designs are as many mappings per
    layer) or by the exact mapping MILP (:func:`~dlaopt.formulations.codesign.tables.compute_entry`, warm-started by
    the dataflow templates; one complete design). In LP the same point runs every layer (budget ``layers ×`` its
    area / power). ``time_limit`` is shared evenly by the layers still to map. ``HeuristicFailure`` when no point
    fits, a layer has no valid mapping on it, or a cap rule is violated."""
    if mapper not in ("gamma", "exact"):
        raise ValueError(f"unknown mapper '{mapper}' (expected 'gamma' or 'exact')")
    _check_budget(samples, population)
    t0 = time.perf_counter()
    p = fixed_design(data, design)
    point = data.space.points[p]
    arch = arch_from_accelerator(accelerator_for(data.template, point))
    uniques = [int(u) for u in np.unique(data.unique_of)]
    maps: dict[int, Mapping] = {}
    statuses: dict[str, str] = {}
    for n, u in enumerate(uniques):
        left = None if time_limit is None else max(0.01, (time_limit - (time.perf_counter() - t0)) / (len(uniques) - n))
        nest = data.nests[u]
        if mapper == "gamma":
            m = gamma(nest, arch, data.objective, population=population,
                      generations=max(1, -(-samples // population)), seed=seed, time_limit=left, evaluations=samples)
        else:
            entry = compute_entry(nest, data.template, point, FREE, data.objective, time_limit=left)
            m = entry.mapping
            statuses[nest.name] = entry.status.value
        if m is None:
            raise HeuristicFailure(f"Mapping-opt ({design}-focused, {mapper}): layer {nest.name} has no valid mapping "
                                   f"on {point.label}")
        maps[u] = m
    sol = CodesignSolution([point] * data.n_layers, [maps[int(u)] for u in data.unique_of],
                           {"method": f"mapping-opt-{design}-{mapper}", "design": point.to_dict(), **(
                               {"milp_status": statuses} if statuses else {})})
    try:
        value = design_value(data, sol)
    except ValueError as exc:
        raise HeuristicFailure(f"Mapping-opt ({design}-focused, {mapper}) on {point.label}: {exc}") from exc
    used = samples if mapper == "gamma" else 1
    return SearchOutcome(sol, value, used, [(used, value)], time.perf_counter() - t0,
                         f"mapping-opt-{design}-{mapper}", {"point": p})


__all__ = ["DESIGNS", "SEED_SAMPLES", "SearchOutcome", "design_value", "digamma", "fixed_design", "mapping_opt",
           "random_search"]
