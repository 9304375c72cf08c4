r"""The mappers of seed 001's mapper study (Chapter 5.2.3-5.2.4, Figs. 5.3, 5.5, 5.6) behind one entry point, with
their best-so-far curves.

* ``random`` — :func:`~.heuristics.random_search`, Timeloop's random mapper over the unpruned space.
* ``random-pruned`` — :func:`random_pruned`, Timeloop's default mapper (§5.2.3: "permutations do not matter for the
  innermost tiling level and for tile sizes that are one").
* ``standard-ga`` — :func:`standard_ga`, Fig. 5.6's "Standard-GA": a plain genetic algorithm on a flat gene vector
  (uniform crossover, per-gene random-reset mutation, tournament selection, elitism), without GAMMA's
  domain-specific operators.
* ``gamma`` and ``gamma:<preset>`` — :func:`~.heuristics.gamma` with all of its operators, or with the subsets of
  :data:`GAMMA_ABLATIONS` (Fig. 5.5: one mapping axis explored at a time; Fig. 5.6: with and without crossover).

:func:`run_mapper` runs one of :data:`MAPPERS` for a budget of ``samples`` and returns the best mapping and its
:class:`~.heuristics.SearchTrace` — ``(samples, seconds, value)`` at every improvement of the best valid value, the
curve the study draws against the proven optimum; :func:`samples_to_within` reads off when a curve first came within
a relative gap of a reference value. With a sample budget (no ``time_limit``) every run is deterministic given its
seed: the same mapping and the same trace values and sample counts (the seconds are wall-clock).

A *sample* is one evaluation: a distinct mapping (:func:`~.heuristics.mapping_key`) scored, including one that
overflows a buffer or a spatial axis (it scores ``inf``, GAMMA's fitness ``-inf`` of Eq. 4.1). The random mappers
stop after ``samples`` draws, a repeated draw counting as a draw but not as an evaluation (as Timeloop counts its
samples); the genetic algorithms stop after ``samples`` evaluations.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.heuristics import (
    DEFAULT_GENERATIONS,
    DEFAULT_POPULATION,
    ELITE_RATIO,
    GAMMA_OPERATORS,
    Evaluator,
    Limits,
    Orders,
    Roots,
    SearchTrace,
    gamma,
    mapping_key,
    random_search,
    sample_factors,
    sample_mapping,
)
from dlaopt.formulations.mapping.loopnest import LoopNest, prime_factors
from dlaopt.formulations.mapping.mapping import Mapping

# ================================================================================================== Random-Pruned


def pruned_orders(nest: LoopNest, arch: MappingArch, factors: dict[str, tuple[int, ...]],
                  rng: random.Random) -> Orders:
    """Loop orders drawn over the pruned space: the innermost level gets the canonical order ``nest.dims``; every
    other level the loops of factor 1 there outermost, in ``nest.dims`` order, then a uniformly random permutation
    of its loops of factor above 1 (a level whose factors are all 1 thus always gets ``nest.dims``)."""
    out: list[tuple[str, ...]] = [tuple(nest.dims)]
    for i in range(1, len(arch.levels)):
        t = arch.temporal_slot(i)
        live = [d for d in nest.dims if factors[d][t] > 1]
        rng.shuffle(live)
        out.append(tuple([d for d in nest.dims if factors[d][t] == 1] + live))
    return tuple(out)


def sample_pruned_mapping(nest: LoopNest, arch: MappingArch, rng: random.Random) -> Mapping:
    """One draw of :func:`random_pruned`: :func:`~.heuristics.sample_factors` (the random mapper's factorizations)
    and :func:`pruned_orders`."""
    factors = sample_factors(nest, arch, rng)
    return Mapping(factors, pruned_orders(nest, arch, factors, rng))


def random_pruned(nest: LoopNest, arch: MappingArch, objective: str, *, samples: int, seed: int,
                  time_limit: float | None = None, roots: Roots = None, capacity_limits: Limits = None,
                  trace: SearchTrace | None = None) -> Mapping | None:
    r"""Timeloop's Random-Pruned mapper (seed 001 §5.2.3): the best valid mapping among ``samples`` draws of
    :func:`sample_pruned_mapping`, counted as :func:`~.heuristics.random_search` counts them (a draw that overflows a
    buffer, or repeats an earlier one, is a sample; only new mappings are evaluations).

    *The pruned space.* A point is a :func:`~.heuristics.mapping_key`: the factors, and per level the order of its
    loops of factor above 1 (loops of factor 1 are no-ops wherever they stand). Pruning removes the innermost
    level's order: its temporal loops sit above the MAC units only, and the MACs have no storage, so their visits
    are the product of every temporal factor whatever the order (the cost model's ``R_mac``, :mod:`.cost`). The
    pruned space is thus every factorization times :math:`\prod_{i \ge 1} L_i!` orders (``L_i`` the loops of
    factor above 1 at level ``i``), and every draw is one of its points under exactly one key.

    *How it differs from* :func:`~.heuristics.random_search`. That mapper draws a full permutation of all
    dimensions at every level, the innermost included. Its keys therefore also carry the innermost level's order,
    so :math:`L_0!` keys of equal cost stand for one pruned point and are evaluated separately. Restricted to the
    loops of factor above 1, a uniform permutation is uniform, so at the other levels both mappers draw the same
    distribution: per draw the two sample the same costs, and the difference is in evaluations — a repeat of a
    pruned point costs Random-Pruned nothing, while the random mapper evaluates it again whenever its innermost
    order differs. ``roots`` and ``capacity_limits`` go to the cost model; ``trace`` records the best-so-far curve."""
    rng = random.Random(seed)
    ev = Evaluator(nest, arch, objective, time_limit=time_limit, roots=roots, capacity_limits=capacity_limits,
                   trace=trace)
    for _ in range(samples):
        if ev.exhausted:
            break
        ev.value(sample_pruned_mapping(nest, arch, rng))
    return ev.best


# ================================================================================================== Standard GA
Genes = list[float]  # a flat gene vector: slot genes (ints) then order keys (floats in [0, 1))


@dataclass(frozen=True)
class GeneLayout:
    """The flat encoding of :func:`standard_ga`.

    *Factor genes*: one per prime factor of every dimension, with multiplicity (dimensions in ``nest.dims`` order,
    each one's primes ascending): its value is the slot of :meth:`MappingArch.slots` the prime goes to, so the factor
    of ``d`` at slot ``k`` is the product of ``d``'s primes whose gene is ``k``. Every vector is a perfect
    factorization; one may overflow a spatial axis or a buffer (and then scores ``inf``).
    *Order genes*: a random key in ``[0, 1)`` per level and dimension; a level's loop order (outermost first) is its
    dimensions by decreasing key, ties by ``nest.dims`` order."""

    dims: tuple[str, ...]
    primes: tuple[tuple[str, int], ...]  # (dimension, prime) of each factor gene
    num_slots: int
    num_levels: int

    @classmethod
    def of(cls, nest: LoopNest, arch: MappingArch) -> GeneLayout:
        primes = tuple((d, p) for d in nest.dims for p, e in sorted(prime_factors(nest.sizes[d]).items())
                       for _ in range(e))
        return cls(tuple(nest.dims), primes, len(arch.slots()), len(arch.levels))

    @property
    def num_factor_genes(self) -> int:
        return len(self.primes)

    def __len__(self) -> int:
        return len(self.primes) + self.num_levels * len(self.dims)

    def decode(self, genes: Sequence[float]) -> Mapping:
        fs = {d: [1] * self.num_slots for d in self.dims}
        for (d, p), k in zip(self.primes, genes, strict=False):
            fs[d][int(k)] *= p
        n, D = self.num_factor_genes, len(self.dims)
        orders = []
        for i in range(self.num_levels):
            keys = genes[n + i * D: n + (i + 1) * D]
            orders.append(tuple(self.dims[x] for x in sorted(range(D), key=lambda x, keys=keys: (-keys[x], x))))
        return Mapping({d: tuple(f) for d, f in fs.items()}, tuple(orders))

    def encode(self, m: Mapping) -> Genes:
        """The inverse of :meth:`decode` (each order's keys evenly spaced, the outermost loop highest)."""
        slots_of: dict[tuple[str, int], list[int]] = {}
        for d in self.dims:
            for k, f in enumerate(m.factors[d]):
                for p, e in prime_factors(f).items():
                    slots_of.setdefault((d, p), []).extend([k] * e)
        taken: dict[tuple[str, int], int] = {}
        genes: Genes = []
        for d, p in self.primes:
            j = taken.get((d, p), 0)
            genes.append(slots_of[d, p][j])
            taken[d, p] = j + 1
        D = len(self.dims)
        for o in m.orders:
            pos = {d: j for j, d in enumerate(o)}
            genes.extend(1.0 - (pos[d] + 0.5) / D for d in self.dims)
        return genes

    def random_gene(self, j: int, rng: random.Random) -> float:
        """A uniformly random value for gene ``j`` (a slot, or a key)."""
        return rng.randrange(self.num_slots) if j < self.num_factor_genes else rng.random()


def standard_ga(nest: LoopNest, arch: MappingArch, objective: str, *, population: int = DEFAULT_POPULATION,
                generations: int = DEFAULT_GENERATIONS, seed: int = 0, crossover_rate: float = 0.9,
                mutation_rate: float | None = None, tournament: int = 2, time_limit: float | None = None,
                evaluations: int | None = None, roots: Roots = None, capacity_limits: Limits = None,
                trace: SearchTrace | None = None) -> Mapping | None:
    """Fig. 5.6's Standard-GA (seed 001 §5.2.4): a textbook genetic algorithm on the flat gene vector of
    :class:`GeneLayout`, none of GAMMA's operators (no per-axis mutation, no tile crossover, no growth or aging).

    ``population`` individuals, initially the random mapper's samples (:func:`~.heuristics.sample_mapping`) repaired
    to fit the buffers (as GAMMA repairs its initial individuals, so the two start alike) and encoded. Per
    generation the ``ELITE_RATIO`` best individuals (at least one) survive unchanged (elitism); the rest of the next
    population are children of two parents, each the best of ``tournament`` individuals drawn uniformly with
    replacement (tournament selection), bred with probability ``crossover_rate`` by uniform crossover (each gene from
    either parent with probability 1/2; otherwise copies of the parents) and then mutated by uniform random reset:
    each gene, with probability ``mutation_rate`` (default ``1 / len(genes)``), gets a uniformly random value.
    Fitness is ``-objective``; an individual overflowing a spatial axis or a buffer scores ``inf`` and counts as an
    evaluation (Eq. 4.1). No repair, no deduplication, no restart. ``evaluations`` bounds the distinct mappings scored
    (:class:`~.heuristics.Evaluator`), ``time_limit`` the seconds; the best valid mapping evaluated is returned.
    ``roots`` and ``capacity_limits`` go to the cost model; ``trace`` records the best-so-far curve."""
    if population < 2:
        raise ValueError("the population needs at least two individuals")
    if tournament < 1:
        raise ValueError("a tournament needs at least one individual")
    rng = random.Random(seed)
    ev = Evaluator(nest, arch, objective, budget=evaluations, time_limit=time_limit, roots=roots,
                   capacity_limits=capacity_limits, trace=trace)
    layout = GeneLayout.of(nest, arch)
    rate = 1.0 / len(layout) if mutation_rate is None else mutation_rate
    num_elites = max(1, int(population * ELITE_RATIO))

    def score(pop: Sequence[Genes]) -> list[float]:
        out = []
        for g in pop:
            m = layout.decode(g)
            # once the budget is spent, unseen individuals score inf without evaluation
            out.append(ev.cache.get(mapping_key(nest, arch, m), math.inf) if ev.exhausted else ev.value(m))
        return out

    def pick(fit: Sequence[float]) -> int:
        return min((rng.randrange(len(fit)) for _ in range(tournament)), key=lambda i: (fit[i], i))

    pop: list[Genes] = []
    for _ in range(population):
        m = sample_mapping(nest, arch, rng)
        pop.append(layout.encode(ev.fit_capacity(m) or m))
    fit = score(pop)
    for _ in range(generations):
        if ev.exhausted:
            break
        rank = sorted(range(len(pop)), key=lambda i: (fit[i], i))
        nxt = [list(pop[i]) for i in rank[:num_elites]]
        nxt_fit = [fit[i] for i in rank[:num_elites]]
        children: list[Genes] = []
        while len(nxt) + len(children) < population:
            a, b = pop[pick(fit)], pop[pick(fit)]
            if rng.random() < crossover_rate:
                swap = [rng.random() < 0.5 for _ in a]
                pair = ([y if s else x for x, y, s in zip(a, b, swap, strict=True)],
                        [x if s else y for x, y, s in zip(a, b, swap, strict=True)])
            else:
                pair = (list(a), list(b))
            for child in pair:
                for j in range(len(child)):
                    if rng.random() < rate:
                        child[j] = layout.random_gene(j, rng)
                children.append(child)
        children = children[: population - len(nxt)]
        pop, fit = nxt + children, nxt_fit + score(children)
    return ev.best


# ================================================================================================== one entry point
GAMMA_ABLATIONS: dict[str, frozenset[str]] = {
    "full": GAMMA_OPERATORS,
    # Fig. 5.5: one mapping axis explored, the others fixed as initialized
    "tile-only": frozenset({"tile"}),
    "order-only": frozenset({"order"}),
    "parallel-only": frozenset({"parallel", "growth"}),
    # Fig. 5.6: crossover's share
    "no-crossover": GAMMA_OPERATORS - {"crossover"},
    "crossover-only": frozenset({"crossover"}),
}
"""GAMMA's operator subsets (:data:`~.heuristics.GAMMA_OPERATORS`) for the ablations of seed 001 Figs. 5.5 and 5.6.
``tile-only`` runs mutate-tile on the temporal tiles alone (orders, parallel dimensions and sizes stay as
initialized); ``order-only`` reorder alone; ``parallel-only`` mutate-parallel and growth/aging (the parallelism axis:
which dimensions, how many); ``crossover-only`` crossover_tile alone; ``no-crossover`` every mutation."""

MAPPERS: tuple[str, ...] = ("random", "random-pruned", "standard-ga", "gamma",
                            *(f"gamma:{k}" for k in GAMMA_ABLATIONS))


@dataclass
class SearchRun:
    """One mapper run: its best valid mapping (``None``: none found), that mapping's objective (``inf`` if none) and
    the best-so-far curve."""

    name: str
    mapping: Mapping | None
    value: float
    trace: SearchTrace = field(default_factory=SearchTrace)


def ga_shape(samples: int) -> tuple[int, int]:
    """``(population, generations)`` of a genetic algorithm given ``samples`` evaluations: the rule of the ``ga``
    heuristic (:data:`~.heuristics.HEURISTICS`), ``min(200, max(8, samples // 10))`` individuals and generations
    enough for 4x the budget (in case the population converges onto already-evaluated mappings)."""
    population = min(DEFAULT_POPULATION, max(8, samples // 10))
    return population, max(DEFAULT_GENERATIONS, 4 * -(-samples // population))


def run_mapper(name: str, nest: LoopNest, arch: MappingArch, objective: str, *, samples: int, seed: int,
               time_limit: float | None = None, roots: Roots = None, capacity_limits: Limits = None) -> SearchRun:
    """Mapper ``name`` (one of :data:`MAPPERS`) for ``samples`` samples (see the module docstring), its curve
    recorded. The genetic algorithms get :func:`ga_shape` for their population and generations; a GAMMA ablation
    whose few operators mostly breed mappings already scored can reach that generation cap before the budget (on
    ResNet Conv_4, order-only, parallel-only and crossover-only stopped after 450-2,700 of 5,000 evaluations): its
    curve is then flat from its last point, and ``trace.samples`` says what it spent. ``time_limit`` (seconds)
    stops a run early, and then the result depends on the machine's speed."""
    if samples < 1:
        raise ValueError("a mapper needs at least one sample")
    trace = SearchTrace()
    population, generations = ga_shape(samples)
    if name == "random":
        m = random_search(nest, arch, objective, samples=samples, seed=seed, time_limit=time_limit, roots=roots,
                          capacity_limits=capacity_limits, trace=trace)
    elif name == "random-pruned":
        m = random_pruned(nest, arch, objective, samples=samples, seed=seed, time_limit=time_limit, roots=roots,
                          capacity_limits=capacity_limits, trace=trace)
    elif name == "standard-ga":
        m = standard_ga(nest, arch, objective, population=population, generations=generations, seed=seed,
                        evaluations=samples, time_limit=time_limit, roots=roots, capacity_limits=capacity_limits,
                        trace=trace)
    elif name == "gamma" or (name.startswith("gamma:") and name[len("gamma:"):] in GAMMA_ABLATIONS):
        ops = GAMMA_ABLATIONS[name[len("gamma:"):] if ":" in name else "full"]
        m = gamma(nest, arch, objective, population=population, generations=generations, seed=seed,
                  evaluations=samples, time_limit=time_limit, roots=roots, capacity_limits=capacity_limits,
                  trace=trace, operators=ops)
    else:
        raise ValueError(f"unknown mapper '{name}' (expected one of {list(MAPPERS)})")
    return SearchRun(name, m, trace.points[-1][2] if trace.points else math.inf, trace)


REL_TOL = 1e-9  # "within 0 %" of a reference: equal up to this relative tolerance


def samples_to_within(trace: SearchTrace, optimum: float, rel: float) -> tuple[int, float] | None:
    """``(samples, seconds)`` at which the best-so-far value of ``trace`` first came within ``rel`` of ``optimum``
    (``value <= optimum * (1 + rel)``, with a relative tolerance of :data:`REL_TOL` so that ``rel = 0`` means "equal
    up to rounding"), or ``None`` if it never did. A value below the reference (e.g. one proven only up to a gap)
    counts as within."""
    if rel < 0:
        raise ValueError("the relative gap must be non-negative")
    bound = optimum * (1 + rel) + abs(optimum) * REL_TOL
    for n, t, v in trace.points:
        if v <= bound:
            return n, t
    return None


__all__ = ["GAMMA_ABLATIONS", "MAPPERS", "REL_TOL", "GeneLayout", "SearchRun", "ga_shape", "pruned_orders",
           "random_pruned", "run_mapper", "samples_to_within", "sample_pruned_mapping", "standard_ga"]
