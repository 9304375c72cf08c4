r"""The exact mapping model: a MILP whose optimum is the optimum of the cost model (:mod:`.cost`), not a proxy.

Variables and the math they encode (slots ``k`` innermost first, levels ``m``, operands ``t``):

* ``n[d,k,p]`` integer — the exponent of prime ``p`` in the factor of dimension ``d`` at slot ``k``;
  ``sum_k n[d,k,p] = e_p(D_d)`` (perfect factorization). ``l[d,k] = sum_p n[d,k,p] ln p = ln f[d,k]`` is linear.
  A fanout axis of size ``A``: ``sum_d l[d,k] <= ln A``.
* Loop order. At one level, every loop is irrelevant to at most one operand of a conv or a matmul (dims relevant to
  all, like groups or the batch of a batched matmul, are placed outermost), so the innermost non-trivial loop of a
  level is irrelevant to exactly one operand and only that operand's irrelevant loops can sit in its innermost run.
  Grouping each operand's irrelevant loops together and choosing which group is innermost therefore reaches every
  reuse pattern any permutation reaches: binaries ``s[m,t]`` with ``sum_t s[m,t] <= 1`` choose the innermost group.
  ``one[d,m] <= 1 - n[d,T(m),p] / e_p`` is 1 only when ``f[d,T(m)] = 1``.
* Reuse. ``g[t,c,m] = 1`` when operand ``t``, at child ``c``, reuses its tile across level ``m``'s loops irrelevant to
  ``t``: ``g <= s[m,t]`` (its group is innermost; when a level has no non-trivial loop relevant to ``t``, choosing
  ``s[m,t] = 1`` costs the other operands nothing, since their irrelevant loops there are trivial) and
  ``g <= one[d,m']`` for every ``d`` relevant to ``t`` at the levels ``c < m' < m`` (nothing relevant in between).
  ``q[t,c,d,m] <= l[d,T(m)]``, ``q <= ln(D_d) g``: the log of the loop factors reuse saves. Then
  ``ln R_c(t) = sum_{m>c} sum_d l[d,T(m)] - sum q``. (These are upper bounds only: the model can at most claim the
  reuse the decoded order really gets, so its value is an upper bound of the true cost at every point and exact at
  the optimum.)
* Footprints. A coordinate with one dimension contributes ``sum_{k in tile} l[d,k]``; a sliding-window coordinate
  ``stride*P + dilation*R`` contributes ``ln extent`` through a one-hot ``w`` over the run products of ``P`` and ``R``
  on the slots that shape the tile, linked exactly to ``n`` by prime exponents.
* Every count of the cost model is then ``exp(L)`` with ``L`` linear. A count with a positive coefficient gets a
  variable ``T >= `` the secant lines of ``exp`` through consecutive achievable values of the count (enumerated per
  component, so at every integer point ``T`` equals the count exactly: ``exp`` is convex). Values beyond the
  incumbent's cost are cut: the table ends at one point ``A`` of ``exp`` with ``cap < A <=`` the least achievable
  value above the count's cap (and ``A <= 2 cap``), so every value up to the cap is exact and every value above it
  is claimed above the cap (nothing up there can be optimal). Partial products of the table are dropped only when
  the least values of the remaining factors (some below 1: per-instance counts, link shares) keep them above the
  cap. The cap of a count is the incumbent over the least net coefficient it can carry (partial-sum deliveries carry
  their own first-visit discount); in a latency row a count paired with a subtracted one (which is at most its pair)
  may exceed the incumbent by the subtracted count's largest value, and a count in several rows takes its least
  cap. With a cap, the values of a count below its floor (``NEGLIGIBLE`` of its row's cap, shared among the row's
  counts, over its coefficient) are spanned by one chord from its least value: the model claims at most the floor
  more there (an upper bound still), and the column spans a bounded range (huge layers: 2e14 MACs). ``T`` is
  scaled by the largest value kept and each secant row is divided by its slope, so the solver's feasibility
  tolerance is a relative error of the count, not one of that scale (a small per-PE count could otherwise be claimed
  below its value). Counts no row reads (energy counts of a latency model without an energy cap, latency counts of
  an energy model without a latency limit) are left out. Without an incumbent, ``cap_guess`` cuts the tables at
  that multiple of a lower bound of the objective: the optimum is proven when the model's value is at most that cap
  (:func:`dlaopt.formulations.mapping.exact.solve_single` otherwise re-solves under the mapping found). Counts
  subtracted (the first visits of partial sums) are products of integers only: a one-hot over their achievable
  values, linked by prime exponents, gives them exactly.
* Capacity: ``sum_{t in store} bytes_t T_tile(t) <= capacity``. Energy: ``sum coef * T + MACs e_mac``. Latency: ``L >=
  compute``, ``L >=`` every store's per-instance traffic over its bandwidth. EDP is solved by
  :func:`dlaopt.formulations.mapping.exact.solve_layer` as a sequence of energy models under latency caps.

Roots and capacity limits (:mod:`.cost`, "Roots"): an operand's chain ends at its root (its counts there are the
parent-side counts main memory gets otherwise); no tile or capacity term for it at or above its root; a store's
capacity is the smaller of its own and the caller's limit (a store that cannot hold one element of each operand it
must hold leaves the model infeasible).

PE-to-PE links (:mod:`.cost`, "PE-to-PE links"): ``forwarded = moved * rho`` with ``rho = matched / positions`` of
the link's slots. Energy ``moved * net + forwarded * (e_link - net)`` is written with non-negative coefficients only:
``forwarded`` gets ``e_link - net`` when that is >= 0, else ``moved`` gets ``e_link`` and the network part ``moved *
(1 - rho)`` gets ``net - e_link``. For a straight link placed by its own operand with no two-dimension coordinate
of it, ``1 - rho = 1/u`` (``u`` the product of the irrelevant factors on the slot) and the network part is
``exp(ln moved - sum_{d irrelevant} l[d,k])``, log-linear. Every other share (forwarded counts of straight links,
diagonal links, straight links placed by another operand or crossing a sliding window) goes through a one-hot over
the achievable configurations of the link's slots (each dimension's factors there and, for the dimensions of a
two-dimension coordinate, the products of their factors below: all ``rho`` depends on), linked exactly to the prime
exponents, with ``rho`` of each configuration computed by :func:`~dlaopt.formulations.mapping.cost.link_matches` and
``ln(share)`` as its coefficient in the count's log; a share of 0 gives a coefficient far below every achievable
log (the secant rows then only ask ``T >= 0``). The link latency ``moved / N_c * bytes / bw`` when ``rho > 0`` is
the per-instance count gated the same way.

The user's constraints (a :class:`~dlaopt.formulations.mapping.space.LayerSpace`; none leaves the model as above):

* A factor bound ``lo <= prod_{k in K} f[d,k] <= hi``: ``sum_{k in K} l[d,k]`` between the logs of the divisors of
  ``D_d`` on either side of each bound, halfway (achievable values are integers: a margin far above the solver's
  tolerances). One slot and one value fix the columns ``n[d,k,p]``. A dimension may not unroll on a spatial slot:
  ``n[d,k,p] = 0``; the most of an axis used: ``sum_d l[d,k] <= ln(max_used + 1/2)``. The value tables below only
  take the splits of a dimension its bounds allow (still a superset of what is achievable).
* Minimum utilization ``S real_macs / (macs mac_units) >= u`` (``S`` the product of all spatial factors):
  ``sum_{spatial k, d} l[d,k] >= ln(S_min - 1/2)``, ``S_min`` the least integer meeting it.
* Order chains at level ``m``: each chain ``(a, b, c)`` requires, among live loops (factor above 1), ``a`` outside
  ``b`` outside ``c`` — precedences ``a -> b``, ``a -> c``, ``b -> c``. Binaries ``z[x,m] <= 1 - n[x,T(m),p] / e_p``
  are 1 only when the loop of ``x`` is trivial. The live precedences must have no cycle: ``sum_{x in C} z[x,m] >=
  1`` for every simple cycle ``C``. For the operand ``t`` whose group is innermost (``s[m,t]``), an irrelevant loop
  ``d`` sits in the innermost run of loops irrelevant to ``t`` in some order keeping the chains exactly when no path
  of live loops leads from ``d`` to a loop relevant to ``t`` (the loops that reach none are closed under successors,
  so a topological order puts them last). So ``a[m,t,d] <= sum_{x in P, x != d} z[x,m]`` for every path ``P`` from
  ``d`` to a relevant loop (through irrelevant ones) and ``q[t,c,m,d] <= ln(D_d) a[m,t,d]``. The decoded order of
  such a level (:meth:`MappingMilp.chain_order`) is a topological order with exactly those loops innermost: it
  keeps every chain and gets at least the reuse the model claims, and every mapping keeping the chains has a model
  point claiming its own reuse; so the model's optimum is still the cost model's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, ArchLink, MappingArch, Store
from dlaopt.formulations.mapping.cost import MAC, link_matches, operand_roots
from dlaopt.formulations.mapping.loopnest import OPERANDS, Coordinate, LoopNest, divisors, prime_factors
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.space import LayerSpace
from dlaopt.solvers.linear import LinearModel, LinearModelBuilder

Expr = dict[int, float]
# a minimum utilization is met when it holds to this relative tolerance (the share is a ratio of integers)
UTILIZATION_TOLERANCE = 1e-9
MAX_LINK_CONFIGS = 200_000  # configurations of a link's slots the one-hot may take
# with a cap, the values of a count below this share of its row's cap (divided among the row's counts) are spanned by
# one chord: the model then claims at most this share of the cap more than the cost model, far below what the
# solver's feasibility tolerance on the row (1e-7 of the cap) allows, and the count's column spans a bounded range
NEGLIGIBLE = 1e-8


def restricts(space: LayerSpace | None) -> bool:
    """Whether ``space`` narrows the map space of its architecture (its choice of architectures aside)."""
    return space is not None and bool(space.factor_bounds or space.spatial or space.orders
                                      or space.min_utilization)


def _add(*parts: tuple[Expr, float]) -> Expr:
    out: Expr = {}
    for e, s in parts:
        for k, v in e.items():
            out[k] = out.get(k, 0.0) + s * v
    return out


@dataclass
class TermSpec:
    """``exp`` of: the footprint of ``operand`` over ``include`` (if given) + ``sum coef[d,k] * ln f[d,k]`` - the
    reuse savings of ``operand`` at child ``reuse_child`` (if given; its slots in ``maybe``)."""

    name: str
    operand: str | None
    include: tuple[bool, ...] | None
    coef: dict[tuple[str, int], int]
    reuse_child: int | None = None
    maybe: dict[str, frozenset[int]] = field(default_factory=dict)
    extra: tuple[float, ...] = ()  # a further factor's achievable values (a link's share), if any
    gated: bool = False  # the count may be 0 (a gate in the expression sends its log far below every value)


@dataclass
class _Term:
    spec: TermSpec
    expr: Expr
    col: int = -1  # T' = count / scale
    lam_col: int = -1
    scale: float = 1.0
    points: tuple[np.ndarray, np.ndarray] | None = None  # the secant rows' breakpoints: (T' values, logs)
    cap: float | None = None  # the table's cap and floor (see _materialize)
    floor: float | None = None


class MappingMilp:
    """The model for one layer (see the module docstring).

    ``cap``: an incumbent objective value; counts whose contribution alone exceeds it are cut at the first achievable
    value above it. ``latency_limit``: adds ``latency <= limit`` (the EDP driver); ``energy_cap`` likewise caps the
    energy counts in that case. ``capacity_limits``: tighter byte limits for some stores (used to exclude a tile
    combination a solver accepted within its feasibility tolerance, or a caller's reservation). ``roots``: operand ->
    the level where its chain ends (default: main memory; see :mod:`.cost`). ``space``: the user's constraints on the
    layer's map space (see the module docstring); when no mapping can satisfy them for a reason visible before any
    solve, ``infeasible`` says why and the model is not built. A latency model without ``energy_cap`` leaves the
    energy counts out of ``energy_expr`` (nothing reads it then). ``cap_guess``: without ``cap``, cut
    the tables at this multiple of a lower bound of the objective (``cap_guessed`` then says so: the model's optimum
    is the optimum only if its value is at most ``cap``)."""

    def __init__(self, nest: LoopNest, arch: MappingArch, objective: str, *, cap: float | None = None,
                 latency_limit: float | None = None, energy_cap: float | None = None,
                 capacity_limits: MappingABC[tuple[int, str], float] | None = None, space: LayerSpace | None = None,
                 roots: MappingABC[str, int] | None = None, cap_guess: float | None = None) -> None:
        if objective not in ("energy", "latency"):
            raise ValueError(f"the MILP optimises energy or latency, not '{objective}'")
        self.nest, self.arch, self.objective = nest, arch, objective
        self.slots = arch.slots()
        self.K = len(self.slots)
        self.tslot = {s.level: k for k, s in enumerate(self.slots) if s.kind == TEMPORAL}
        self.dims = [d for d in nest.dims if nest.sizes[d] > 1]
        self.primes = {d: prime_factors(nest.sizes[d]) for d in self.dims}
        self.word = {t: nest.operand(t).word_bytes for t in OPERANDS}
        self.cap, self.latency_limit, self.energy_cap = cap, latency_limit, energy_cap
        self.cap_guess, self.cap_guessed = cap_guess, False
        self.capacity_limits = dict(capacity_limits or {})  # (level, memory) -> bytes, tighter than the capacity
        self.roots = operand_roots(arch, roots)
        self._lb: list[float] = []
        self._ub: list[float] = []
        self._int: list[bool] = []
        self._cost: list[float] = []
        self._rows: list[tuple[Expr, float, float]] = []
        self._terms: list[_Term] = []
        self._halo: dict[tuple, tuple[Expr, list[tuple[tuple, int]], tuple[bool, ...]]] = {}
        self._ratios: list[tuple[list[tuple[int, int, int]], list[tuple[str, int]], list[tuple[str, int]]]] = []
        self._splits: dict[str, list[tuple[int, ...]]] = {}
        self._component_cache: dict[tuple, np.ndarray] = {}
        self._links: dict[str, list[tuple[tuple, int, float]]] = {}  # operand -> its link's one-hot
        self._link_keys: dict[str, Callable[[Mapping], tuple]] = {}
        self._one_col = self._var(1.0, 1.0)
        self.c0 = 0.0
        self.objective_scale = 1.0  # model objective x objective_scale = energy (pJ) or latency (cycles)
        self.space = space if space is not None and restricts(space) else None
        # per dimension: (slots, lo, hi, source) bounds on the product of its factors over the slots
        self._dim_rules: dict[str, list[tuple[tuple[int, ...], int, int | None, str]]] = {}
        self._chains: dict[int, dict[str, set[str]]] = {}  # level -> dim -> the dims that must be inside it
        self.z: dict[tuple[str, int], int] = {}  # (dim, level) -> 1 only if the dim's loop there is trivial
        self.claims: dict[tuple[int, str, str], tuple[int, list[tuple[str, ...]]]] = {}  # (level, operand, dim)
        self.infeasible: str | None = None
        self.infeasible = self._no_room()
        if self.infeasible is not None:
            self._row({self._one_col: 1.0}, lo=2.0)
            return
        if self.space is not None:
            self.infeasible = self._read_space(self.space)
            if self.infeasible is not None:
                self._row({self._one_col: 1.0}, lo=2.0)  # an honest model: no column vector satisfies it
                return
        self._build()

    # ------------------------------------------------------------------------------------------ primitives
    def _var(self, lb: float = 0.0, ub: float = math.inf, integer: bool = False) -> int:
        self._lb.append(lb)
        self._ub.append(ub)
        self._int.append(integer)
        self._cost.append(0.0)
        return len(self._lb) - 1

    def _row(self, expr: Expr, lo: float = -math.inf, hi: float = math.inf) -> None:
        self._rows.append((expr, lo, hi))

    def ln_f(self, d: str, k: int) -> Expr:
        if d not in self.primes:
            return {}
        return {self.n[d, k, p]: math.log(p) for p in self.primes[d]}

    # ------------------------------------------------------------------------------------------ roots, capacities
    def chain(self, t: str) -> list[int]:
        """The levels keeping ``t`` up to its root (innermost first)."""
        root = self.roots.get(t, self.arch.top)
        return [j for j in self.arch.keeping_levels(t) if j <= root]

    def capacity(self, j: int, store: Store) -> float | None:
        """The bytes store ``store`` of level ``j`` offers the tiles (None: unbounded)."""
        return effective_capacity(j, store, self.capacity_limits)

    def _no_room(self) -> str | None:
        """Why no mapping fits (a store with no room for even one element of a tile it must hold), or None."""
        for t in OPERANDS:
            for j in self.chain(t)[:-1]:
                store = self.arch.levels[j].store_of(t)
                assert store is not None
                cap = self.capacity(j, store)
                need = sum(self.word[x] for x in store.operands if j in self.chain(x)[:-1])
                if cap is not None and cap < need:
                    return (f"store '{store.memory}' of level {self.arch.levels[j].name} has {cap:g} B for the tiles, "
                            f"less than one element of each operand it holds ({need} B)")
        return None

    # ------------------------------------------------------------------------------------------ structure
    def _build(self) -> None:
        nest, arch = self.nest, self.arch
        self.n: dict[tuple[str, int, int], int] = {}
        for d in self.dims:
            for p, e in self.primes[d].items():
                for k, s in enumerate(self.slots):
                    ub = e if s.kind == TEMPORAL else min(e, _max_exp(s.size, p))
                    self.n[d, k, p] = self._var(0, ub, integer=True)
                self._row({self.n[d, k, p]: 1.0 for k in range(self.K)}, e, e)
        for k, s in enumerate(self.slots):
            if s.kind == SPATIAL:
                expr = _add(*((self.ln_f(d, k), 1.0) for d in self.dims))
                if expr:
                    self._row(expr, hi=math.log(s.size) + 1e-9)
        if self.space is not None:
            self._space_rows(self.space)
        self._break_axis_symmetry()
        self.one: dict[tuple[str, int], int] = {}
        for d in self.dims:
            for m, k in self.tslot.items():
                v = self.one[d, m] = self._var(0, 1)
                for p, e in self.primes[d].items():
                    self._row({v: 1.0, self.n[d, k, p]: 1.0 / e}, hi=1.0)  # the convex hull of one = [n == 0]
        self.s: dict[tuple[int, str], int] = {}
        for m in self.tslot:
            for t in OPERANDS:
                self.s[m, t] = self._var(0, 1, integer=True)
            self._row({self.s[m, t]: 1.0 for t in OPERANDS}, hi=1.0)
        self.g: dict[tuple[str, int, int], int] = {}
        self.qcols: dict[tuple[str, int, int, str], int] = {}
        for t in OPERANDS:
            rel = nest.operand(t).dims
            irr = [d for d in self.dims if d not in rel]
            if not irr:
                continue
            for c in self.chain(t)[:-1]:
                for m in range(c + 1, arch.top + 1):
                    g = self.g[t, c, m] = self._var(0, 1, integer=True)
                    self._row({g: 1.0, self.s[m, t]: -1.0}, hi=0.0)
                    for m2 in range(c + 1, m):
                        for d in self.dims:
                            if d in rel:
                                self._row({g: 1.0, self.one[d, m2]: -1.0}, hi=0.0)
                    for d in irr:
                        qv = self.qcols[t, c, m, d] = self._var(0, math.log(nest.sizes[d]))
                        self._row(_add(({qv: 1.0}, 1.0), (self.ln_f(d, self.tslot[m]), -1.0)), hi=0.0)
                        self._row({qv: 1.0, g: -math.log(nest.sizes[d])}, hi=0.0)
        if self._chains:
            self._order_rows()
        self._objective_and_constraints()

    def _break_axis_symmetry(self) -> None:
        """Two axes of one fanout with the same size are interchangeable (the cost model sees only the products per
        dimension over a fanout): keep one orientation of every such pair, ``weight(a) >= weight(b)`` for a fixed
        generic weighting of the prime exponents (one orientation of any solution satisfies it). Axes the space
        constrains differently are not interchangeable and are left alone."""
        groups: dict[tuple, list[int]] = {}
        for k, s in enumerate(self.slots):
            if s.kind == SPATIAL:
                groups.setdefault((s.level, s.mac, s.size, self._slot_signature(k)), []).append(k)
        for ks in groups.values():
            for a, b in zip(ks, ks[1:], strict=False):
                row: Expr = {}
                for i, d in enumerate(self.dims):
                    for p in self.primes[d]:
                        w = math.log(p) * (1.0 + 0.37 * i)
                        row[self.n[d, a, p]] = row.get(self.n[d, a, p], 0.0) + w
                        row[self.n[d, b, p]] = row.get(self.n[d, b, p], 0.0) - w
                if row:
                    self._row(row, lo=0.0)

    # ------------------------------------------------------------------------------------------ the user's space
    def _read_space(self, space: LayerSpace) -> str | None:
        """The per-dimension rules and the order chains of ``space``; a reason when a dimension has no factorization
        its rules allow, or the utilization asked for is more than any mapping reaches."""
        nest = self.nest
        for b in space.factor_bounds:
            if b.dim not in nest.sizes:
                if b.lo > 1:
                    return f"{b.source}: the layer has no dimension {b.dim}, whose factors multiply to 1"
                continue
            self._dim_rules.setdefault(b.dim, []).append((tuple(sorted(set(b.slots))), b.lo, b.hi, b.source))
        for a in space.spatial:
            slot = self.slots[a.slot]
            if slot.kind != SPATIAL:
                raise ValueError(f"{a.source}: slot {a.slot} ({slot.name}) is not a spatial slot")
            for d in nest.dims:
                if a.dims is not None and d not in a.dims:
                    self._dim_rules.setdefault(d, []).append(((a.slot,), 1, 1, a.source))
                elif a.max_used is not None and a.max_used < slot.size:  # per dimension; the slot's row too
                    self._dim_rules.setdefault(d, []).append(((a.slot,), 1, a.max_used, a.source))
        for d, rules in self._dim_rules.items():
            if not self._dim_splits(d):
                sources = ", ".join(dict.fromkeys(r[3] for r in rules))
                return f"no split of {d} = {nest.sizes[d]} over the slots satisfies {sources}"
        need = self._spatial_needed(space)
        if need > 1:
            spatial = [k for k, s in enumerate(self.slots) if s.kind == SPATIAL]
            most = math.prod(max(math.prod(f[k] for k in spatial) for f in self._dim_splits(d)) for d in nest.dims)
            for k in spatial:
                most_k = min([self.slots[k].size] + [a.max_used for a in space.spatial
                                                      if a.slot == k and a.max_used is not None])
                most = min(most, most_k * math.prod(self.slots[j].size for j in spatial if j != k))
            if need > most:
                return (f"{space.utilization_source}: a utilization of {space.min_utilization} needs {need} parallel "
                        f"MACs, at most {most} can be used")
        for ch in space.orders:
            if not 0 <= ch.level <= self.arch.top:
                raise ValueError(f"{ch.source}: level {ch.level} does not exist")
            live = [d for d in dict.fromkeys(ch.chain) if d in self.primes]
            for i, a in enumerate(live):
                for b in live[i + 1:]:
                    self._chains.setdefault(ch.level, {}).setdefault(a, set()).add(b)
        return None

    def _spatial_needed(self, space: LayerSpace) -> int:
        """The least product of all spatial factors that meets the minimum utilization (1: no minimum)."""
        if not space.min_utilization:
            return 1
        need = space.min_utilization * space.macs_available * self.nest.macs / self.nest.real_macs
        return max(1, math.ceil(need * (1 - UTILIZATION_TOLERANCE)))

    def _space_rows(self, space: LayerSpace) -> None:
        """Factor bounds (fixed columns for a single slot and a single value, else a row on the log of the product
        whose sides lie halfway between achievable values), spatial allowances and the minimum utilization."""
        for d, rules in self._dim_rules.items():
            if d not in self.primes:
                continue  # the prefilter showed that 1 is allowed
            values = divisors(self.nest.sizes[d])
            for slots, lo, hi, _ in rules:
                lo_v = min(v for v in values if v >= lo)
                hi_v = max(v for v in values if hi is None or v <= hi)
                if len(slots) == 1 and lo_v == hi_v:
                    for p in self.primes[d]:
                        col, e = self.n[d, slots[0], p], _exp(lo_v, p)
                        self._lb[col], self._ub[col] = max(self._lb[col], e), min(self._ub[col], e)
                    continue
                below = [v for v in values if v < lo_v]
                above = [v for v in values if v > hi_v]
                if not below and not above:
                    continue
                expr = _add(*((self.ln_f(d, k), 1.0) for k in slots))
                self._row(expr, lo=0.5 * math.log(below[-1] * lo_v) if below else -math.inf,
                          hi=0.5 * math.log(hi_v * above[0]) if above else math.inf)
        for a in space.spatial:
            if a.max_used is not None and a.max_used < self.slots[a.slot].size:
                expr = _add(*((self.ln_f(d, a.slot), 1.0) for d in self.dims))
                if expr:  # integer products: at most max_used is below max_used + 1/2
                    self._row(expr, hi=math.log(a.max_used + 0.5))
        need = self._spatial_needed(space)
        if need > 1:
            expr = _add(*((self.ln_f(d, k), 1.0) for k, s in enumerate(self.slots) if s.kind == SPATIAL
                          for d in self.dims))
            self._row(expr, lo=math.log(need - 0.5))

    def _slot_signature(self, k: int) -> tuple:
        """What the space says about spatial slot ``k``: slots with equal signatures are interchangeable."""
        links = tuple((lk.operand, lk.slots.index(k)) for lk in self.arch.links if k in lk.slots)
        if self.space is None:
            return links
        bounds = tuple(i for i, b in enumerate(self.space.factor_bounds) if k in b.slots)
        allows = tuple(sorted(repr((None if a.dims is None else sorted(a.dims), a.max_used))
                              for a in self.space.spatial if a.slot == k))
        return bounds, allows, links

    def _order_rows(self) -> None:
        """Order chains (see the module docstring): ``z[x,m]`` binary, 1 only if ``f[x,T(m)] = 1``; no cycle of the
        chains' precedences among live loops; a loop's reuse saving at ``m`` only if no live path leads from it to
        a loop relevant to the operand."""
        nest = self.nest
        for m, succ in self._chains.items():
            k = self.tslot[m]
            nodes = [d for d in self.dims if d in succ or any(d in v for v in succ.values())]
            for x in nodes:
                v = self.z[x, m] = self._var(0, 1, integer=True)
                for p, e in self.primes[x].items():
                    self._row({v: 1.0, self.n[x, k, p]: 1.0 / e}, hi=1.0)
            for cycle in _simple_cycles(succ, nodes):
                self._row({self.z[x, m]: 1.0 for x in cycle}, lo=1.0)
            for t in OPERANDS:
                rel = nest.operand(t).dims
                for d in nodes:
                    qs = [col for (t2, _, m2, d2), col in self.qcols.items() if (t2, m2, d2) == (t, m, d)]
                    if d in rel or not qs:
                        continue
                    paths = _paths_to(succ, d, rel)
                    if not paths:
                        continue
                    a = self._var(0, 1)
                    for path in paths:
                        self._row({a: 1.0, **{self.z[x, m]: -1.0 for x in path[1:]}}, hi=0.0)
                    for q in qs:
                        self._row({q: 1.0, a: -math.log(nest.sizes[d])}, hi=0.0)
                    self.claims[m, t, d] = (a, paths)

    def chain_order(self, level: int, factors: MappingABC[str, Sequence[int]], innermost: str | None
                    ) -> tuple[str, ...]:
        """An order of ``level`` that keeps its chains, with ``innermost``'s irrelevant loops that no live path
        leads from to a loop relevant to it innermost: factor-1 loops, then the other live loops, then those."""
        nest, k = self.nest, self.tslot[level]
        live = [d for d in nest.dims if factors[d][k] > 1]
        succ = {a: {b for b in bs if b in live} for a, bs in self._chains[level].items() if a in live}
        inner: set[str] = set()
        if innermost is not None:
            blocked = {d for d in live if d in nest.operand(innermost).dims}
            grown = True
            while grown:
                grown = False
                for a in live:
                    if a not in blocked and succ.get(a, set()) & blocked:
                        blocked.add(a)
                        grown = True
            inner = set(live) - blocked
        head = [d for d in nest.dims if d not in live]
        return (*head, *_topological([d for d in live if d not in inner], succ),
                *_topological([d for d in live if d in inner], succ))

    # ------------------------------------------------------------------------------------------ count terms
    def _spatial_above(self, level: int) -> list[int]:
        start = 0 if level == MAC else self.tslot[level] + 1
        return [k for k in range(start, self.K) if self.slots[k].kind == SPATIAL]

    def _temporal_above(self, child: int) -> list[int]:
        lo = 0 if child == MAC else child + 1
        return [self.tslot[m] for m in range(lo, self.arch.top + 1)]

    def _include_tile(self, level: int) -> tuple[bool, ...]:
        return tuple(k <= self.tslot[level] for k in range(self.K))

    def _include_delivery(self, child: int, parent: int) -> tuple[bool, ...]:
        lo = -1 if child == MAC else self.tslot[child]
        return tuple(k <= lo or (self.slots[k].kind == SPATIAL and k < self.tslot[parent]) for k in range(self.K))

    def _spec(self, name: str, t: str | None, include: tuple[bool, ...] | None, *, visits_of: int | None = None,
              times_instances: int | None = None, per_instance_of: int | None = None) -> TermSpec:
        """footprint(include) x visits of child ``visits_of`` x instances above ``times_instances`` / instances above
        ``per_instance_of``."""
        coef: dict[tuple[str, int], int] = {}
        maybe: dict[str, frozenset[int]] = {}
        reuse_child = None
        if visits_of is not None:
            rel = self.nest.operand(t).dims if t is not None else frozenset(self.dims)
            ks = self._temporal_above(visits_of)
            for d in self.dims:
                for k in ks:
                    coef[d, k] = coef.get((d, k), 0) + 1
                if visits_of != MAC and d not in rel:
                    maybe[d] = frozenset(ks)
            if visits_of != MAC and t is not None:
                reuse_child = visits_of
        if times_instances is not None:
            for k in self._spatial_above(times_instances):
                for d in self.dims:
                    coef[d, k] = coef.get((d, k), 0) + 1
        if per_instance_of is not None:
            for k in self._spatial_above(per_instance_of):
                for d in self.dims:
                    coef[d, k] = coef.get((d, k), 0) - 1
        return TermSpec(name, t, include, {k: v for k, v in coef.items() if v}, reuse_child, maybe)

    def _term(self, spec: TermSpec) -> _Term:
        expr: Expr = {}
        if spec.include is not None:
            assert spec.operand is not None
            expr = self._footprint_expr(spec.operand, spec.include)
        for (d, k), c in spec.coef.items():
            expr = _add((expr, 1.0), (self.ln_f(d, k), float(c)))
        if spec.reuse_child is not None:
            assert spec.operand is not None
            for (t, c, _, _), qv in self.qcols.items():
                if t == spec.operand and c == spec.reuse_child:
                    expr[qv] = expr.get(qv, 0.0) - 1.0
        return _Term(spec, expr)

    def _footprint_expr(self, t: str, include: tuple[bool, ...]) -> Expr:
        expr: Expr = {}
        for coord in self.nest.operand(t).coords:
            live = tuple((d, c) for d, c in coord.terms if d in self.primes)
            if len(live) == 1:
                for k in range(self.K):
                    if include[k]:
                        expr = _add((expr, 1.0), (self.ln_f(live[0][0], k), 1.0))
            elif len(live) == 2:
                expr = _add((expr, 1.0), (self._halo_expr(Coordinate(live), include), 1.0))
            elif len(live) > 2:
                raise ValueError("coordinates over more than two loop dimensions are not supported by the MILP")
        return expr

    def _halo_expr(self, coord: Coordinate, include: tuple[bool, ...]) -> Expr:
        kmax = max((k for k in range(self.K) if include[k]), default=-1)
        pattern = tuple(include[: kmax + 1])
        key = (coord, pattern)
        if key not in self._halo:
            runs = _runs(pattern)
            (a, ca), (b, cb) = coord.terms
            cols: list[tuple[tuple, int]] = []
            expr: Expr = {}
            inc = tuple(i for i, _ in runs)
            for ka in _run_products(self.nest.sizes[a], len(runs)):
                for kb in _run_products(self.nest.sizes[b], len(runs)):
                    w = self._var(0, 1, integer=True)
                    expr[w] = math.log(_halo_extent(ca, cb, ka, kb, inc))
                    cols.append(((ka, kb), w))
            self._row({w: 1.0 for _, w in cols}, 1.0, 1.0)
            for dim, which in ((a, 0), (b, 1)):
                for r, (_, ks) in enumerate(runs):
                    for p in self.primes[dim]:
                        row: Expr = {w: float(_exp(kv[which][r], p)) for kv, w in cols if _exp(kv[which][r], p)}
                        for k in ks:
                            row[self.n[dim, k, p]] = row.get(self.n[dim, k, p], 0.0) - 1.0
                        self._row(row, 0.0, 0.0)
            self._halo[key] = (expr, cols, pattern)
        return self._halo[key][0]

    def _ratio(self, base: float, num: list[tuple[str, int]], den: list[tuple[str, int]]) -> Expr:
        """``base * prod(num factors) / prod(den factors)`` exactly, via a one-hot over (num, den) products."""
        common = set(num) & set(den)
        num = [x for x in num if x not in common and x[0] in self.primes]
        den = [x for x in den if x not in common and x[0] in self.primes]
        if not num and not den:
            return {self._one_col: float(base)}

        def products(items: list[tuple[str, int]]) -> list[int]:
            if not items:
                return [1]
            bound = math.prod(self.nest.sizes[d] for d in {d for d, _ in items})
            lim = math.prod({k: self.slots[k].size if self.slots[k].kind == SPATIAL else bound
                             for _, k in items}.values())
            return [v for v in divisors(bound) if v <= lim]

        cols = []
        expr: Expr = {}
        for a in products(num):
            for b in products(den):
                w = self._var(0, 1, integer=True)
                cols.append((a, b, w))
                expr[w] = base * a / b
        self._row({w: 1.0 for *_, w in cols}, 1.0, 1.0)
        primes = sorted({p for d in self.dims for p in self.primes[d]})
        for items, which in ((num, 0), (den, 1)):
            for p in primes:
                row: Expr = {c[2]: float(_exp(c[which], p)) for c in cols if _exp(c[which], p)}
                for d, k in items:
                    if p in self.primes[d]:
                        row[self.n[d, k, p]] = row.get(self.n[d, k, p], 0.0) - 1.0
                if row:
                    self._row(row, 0.0, 0.0)
        self._ratios.append((cols, num, den))
        return expr

    def _first(self, p: int, divide_by: int | None) -> Expr:
        """first_p (divided by the instances above ``divide_by`` when given), exactly."""
        rel = self.nest.operand("O").dims
        size_o = self.nest.footprint("O", self.nest.sizes)
        num = [(d, k) for d in self.dims if d not in rel for k in self._spatial_above(p)]
        den = [] if divide_by is None else [(d, k) for d in self.dims for k in self._spatial_above(divide_by)]
        return self._ratio(float(size_o), num, den)

    # ------------------------------------------------------------------------------------------ objective
    def _objective_and_constraints(self) -> None:
        arch = self.arch
        energy: list[tuple[_Term, float]] = []
        cap_coef: dict[int, float] = {}
        energy_neg: list[tuple[Expr, float]] = []
        rd: dict[tuple[int, str], list[tuple[_Term, float]]] = {}
        wr: dict[tuple[int, str], list[tuple[_Term, float]]] = {}
        # subtracted counts (first visits of partial sums), each with the count it is at most (its pair)
        rd_neg: dict[tuple[int, str], list[tuple[Expr, float, _Term]]] = {}
        wr_neg: dict[tuple[int, str], list[tuple[Expr, float, _Term]]] = {}
        tiles: dict[tuple[int, str], list[tuple[_Term, float]]] = {}
        link_rows: list[tuple[_Term, float]] = []  # (gated count, bytes / bandwidth): the links' latency terms
        for t in OPERANDS:
            w = float(self.word[t])
            chain = [MAC, *self.chain(t)]
            for c, p in zip(chain, chain[1:], strict=False):
                sp = arch.levels[p].store_of(t)
                assert sp is not None
                inc = self._include_delivery(c, p)
                deliv = self._term(self._spec(f"{t}:{c}->{p}", t, inc, visits_of=c, times_instances=p))
                deliv_pi = self._term(self._spec(f"{t}:{c}->{p}/pi", t, inc, visits_of=c))
                sc = arch.levels[c].store_of(t) if c != MAC else None
                net = arch.levels[c].network_energy_pj_per_byte if c != MAC else 0.0
                if c == MAC and self._link_between(t, c, p) is not None:
                    moved = self._term(self._spec(f"{t}:mac-moved", t, None, visits_of=MAC, times_instances=MAC))
                    moved_pi = self._term(self._spec(f"{t}:mac-moved/pi", t, None, visits_of=MAC))
                    self._link_terms(t, c, p, moved, moved_pi, 0.0, energy, link_rows)
                if t == "O":
                    coef = w * (sp.write_energy_pj_per_byte + sp.read_energy_pj_per_byte)
                    fcoef = w * sp.read_energy_pj_per_byte
                    if sc is not None:
                        coef += w * (sc.write_energy_pj_per_byte + net)
                        fcoef += w * (sc.write_energy_pj_per_byte + net)
                    energy.append((deliv, coef))
                    # deliv * coef - first * fcoef >= deliv * (coef - fcoef) (first <= deliv): the cap divisor
                    cap_coef[id(deliv)] = coef - fcoef
                    energy_neg.append((self._first(p, None), fcoef))
                    rd.setdefault((p, sp.memory), []).append((deliv_pi, w))
                    wr.setdefault((p, sp.memory), []).append((deliv_pi, w))
                    rd_neg.setdefault((p, sp.memory), []).append((self._first(p, p), w, deliv_pi))
                    if sc is not None:
                        drains, drains_pi = self._child_tile_terms("O:drain", t, c)
                        delta = self._link_terms(t, c, p, drains, drains_pi, net, energy, link_rows)
                        energy.append((drains, w * (sc.read_energy_pj_per_byte + net + delta)))
                        rd.setdefault((c, sc.memory), []).append((drains_pi, w))
                        reload_pi = self._term(self._spec(f"O:reload{c}/pi", t, inc, visits_of=c, times_instances=p,
                                                          per_instance_of=c))
                        wr.setdefault((c, sc.memory), []).append((reload_pi, w))
                        wr_neg.setdefault((c, sc.memory), []).append((self._first(p, c), w, reload_pi))
                else:
                    energy.append((deliv, w * sp.read_energy_pj_per_byte))
                    rd.setdefault((p, sp.memory), []).append((deliv_pi, w))
                    if sc is not None:
                        fills, fills_pi = self._child_tile_terms(f"{t}:fill", t, c)
                        delta = self._link_terms(t, c, p, fills, fills_pi, net, energy, link_rows)
                        energy.append((fills, w * (sc.write_energy_pj_per_byte + net + delta)))
                        wr.setdefault((c, sc.memory), []).append((fills_pi, w))
            for j in self.chain(t)[:-1]:
                store = arch.levels[j].store_of(t)
                assert store is not None
                if self.capacity(j, store) is not None:
                    tiles.setdefault((j, store.memory), []).append(
                        (self._term(self._spec(f"{t}:tile{j}", t, self._include_tile(j))), w))
        for (j, mem), items in tiles.items():
            cap = self.capacity(j, next(s for s in arch.levels[j].stores if s.memory == mem))
            assert cap is not None and cap > 0
            row: Expr = {}
            for term, w in items:
                self._materialize(term, cap / w)
                row[term.col] = row.get(term.col, 0.0) + w * term.scale / cap
            self._row(row, hi=1.0)
        compute = self._term(self._spec("compute", None, None, visits_of=MAC))
        # latency rows: latency >= sum coef * count - sum coef * subtracted (coefficients in cycles per count)
        lat_rows: list[tuple[list[tuple[_Term, float]], list[tuple[Expr, float, _Term]]]] = [([(compute, 1.0)], [])]
        lat_rows += [([(term, coef)], []) for term, coef in link_rows]
        for j, lv in enumerate(arch.levels):
            for store in lv.stores:
                key = (j, store.memory)
                if store.write_bandwidth is None:
                    bw = store.read_bandwidth
                    lat_rows.append(([(tm, w / bw) for tm, w in rd.get(key, []) + wr.get(key, [])],
                                     [(e, w / bw, tm) for e, w, tm in rd_neg.get(key, []) + wr_neg.get(key, [])]))
                else:
                    for terms, negs, bw in ((rd, rd_neg, store.read_bandwidth), (wr, wr_neg, store.write_bandwidth)):
                        lat_rows.append(([(tm, w / bw) for tm, w in terms.get(key, [])],
                                         [(e, w / bw, tm) for e, w, tm in negs.get(key, [])]))
        lat_rows = [(terms, negs) for terms, negs in lat_rows if terms and all(c > 0 for _, c in terms)]
        energy = [(term, coef) for term, coef in energy if coef > 0]
        # only what the objective or a limit reads: a count in no row of either is free above its secant rows
        with_energy = self.objective == "energy" or self.energy_cap is not None
        with_latency = self.objective == "latency" or self.latency_limit is not None
        if self.cap is None and self.cap_guess is not None:
            if self.objective == "energy":
                least = self.energy_const_value() + sum(
                    max(0.0, cap_coef.get(id(term), coef)) * self._least(term.spec) for term, coef in energy)
            else:
                # a subtracted count takes back at most its pair
                least = max(sum(c * self._least(tm.spec) for tm, c in terms)
                            - sum(c * self._least(tm.spec) for _, c, tm in negs) for terms, negs in lat_rows)
            if least > 0:
                self.cap, self.cap_guessed = self.cap_guess * least, True
        energy_cap = self.energy_cap if self.energy_cap is not None else (
            self.cap if self.objective == "energy" else None)
        lat_cap = self.latency_limit if self.latency_limit is not None else (
            self.cap if self.objective == "latency" else None)
        # floors: below them a count adds at most NEGLIGIBLE (shared among its row's counts) of its row's cap
        floors: dict[int, float] = {}

        def floor(term: _Term, coef: float, cap: float | None, n: int) -> None:
            if cap is not None and coef > 0:
                f = NEGLIGIBLE * cap / (coef * n)
                floors[id(term)] = min(floors.get(id(term), f), f)
        if with_energy:
            for term, coef in energy:
                floor(term, coef, energy_cap, len(energy))
        # the cap of a latency count: at a point whose latency is at most the cap, every row has coef * count <= the
        # cap (a subtracted count is at most its pair, so the other terms are >= 0), plus, for a count paired with
        # subtracted ones, what they may take back: at most their largest values (one-hot sums of non-negative
        # constants). A count in several rows meets every row's cap: it takes the least
        lat_caps: dict[int, float] = {}
        if with_latency:
            for terms, negs in lat_rows:
                back: dict[int, float] = {}
                for e, c, tm in negs:
                    back[id(tm)] = back.get(id(tm), 0.0) + c * max(e.values(), default=0.0)
                total: dict[int, tuple[_Term, float]] = {}
                for term, coef in terms:
                    total[id(term)] = (term, total.get(id(term), (term, 0.0))[1] + coef)
                for term, coef in total.values():
                    floor(term, coef, lat_cap, len(total))
                    if lat_cap is not None:
                        cap_t = (lat_cap + back.get(id(term), 0.0)) / coef
                        lat_caps[id(term)] = min(lat_caps.get(id(term), cap_t), cap_t)
        # energy
        self.energy_expr: Expr = {}
        for term, coef in energy if with_energy else []:
            divisor = cap_coef.get(id(term), coef)
            self._materialize(term, None if energy_cap is None or divisor <= 0 else energy_cap / divisor,
                              floors.get(id(term)))
            self.energy_expr[term.col] = self.energy_expr.get(term.col, 0.0) + coef * term.scale
        for expr, coef in energy_neg:
            for k, v in expr.items():
                self.energy_expr[k] = self.energy_expr.get(k, 0.0) - coef * v
        self.energy_const = self.energy_const_value()
        # the objective in units of the incumbent (or of its largest term): coefficients near 1 for the LP
        self.energy_scale = energy_cap or max([abs(v) for v in self.energy_expr.values()] + [self.energy_const, 1.0])
        # latency
        if not with_latency:
            self.latency_scale = 1.0
            self.latency_col = self._var(0)
        else:
            self._materialize(compute, lat_caps.get(id(compute)), floors.get(id(compute)))
            self.latency_scale = lat_cap or compute.scale  # the latency variable is latency / latency_scale
            self.latency_col = self._var(
                0, math.inf if self.latency_limit is None else self.latency_limit / self.latency_scale)
            for terms, negs in lat_rows:
                row: Expr = {self.latency_col: 1.0}
                for term, coef in terms:
                    self._materialize(term, lat_caps.get(id(term)), floors.get(id(term)))
                    row[term.col] = row.get(term.col, 0.0) - coef * term.scale / self.latency_scale
                for expr, c, _ in negs:
                    for k, v in expr.items():
                        row[k] = row.get(k, 0.0) + v * c / self.latency_scale
                self._row(row, lo=0.0)
        if self.objective == "energy":
            for k, v in self.energy_expr.items():
                self._cost[k] += v / self.energy_scale
            self.c0 = self.energy_const / self.energy_scale
            self.objective_scale = self.energy_scale
        else:
            self._cost[self.latency_col] += 1.0
            self.objective_scale = self.latency_scale

    def energy_const_value(self) -> float:
        """The MACs' energy (pJ), the same for every mapping."""
        return self.nest.macs * self.arch.mac_energy_pj

    # ------------------------------------------------------------------------------------------ PE-to-PE links
    def _link_between(self, t: str, c: int, p: int) -> ArchLink | None:
        """The link of ``t`` if its slots lie between ``c`` (or the MACs) and ``p``."""
        link = self.arch.link_of(t)
        lo = -1 if c == MAC else self.tslot[c]
        return link if link is not None and lo < link.slots[0] < self.tslot[p] else None

    def _simple_link(self, link: ArchLink) -> bool:
        """A straight link placed by its own operand with no two-dimension coordinate of it: a share ``1 - 1/u``."""
        t = link.operand
        return (not link.diagonal and self.arch.placement_operand(link.slots[0]) == t
                and all(sum(1 for d, _ in c.terms if d in self.primes) < 2 for c in self.nest.operand(t).coords))

    def _link_terms(self, t: str, c: int, p: int, moved: _Term, moved_pi: _Term, net: float,
                    energy: list[tuple[_Term, float]], link_rows: list[tuple[_Term, float]]) -> float:
        """The counts a link of ``t`` between ``c`` and ``p`` adds (see :mod:`.cost`): ``forwarded = moved * rho``
        (``rho`` = matched / positions) replaces network by link energy. With ``e_link >= net`` the term
        ``forwarded`` gets ``e_link - net``; otherwise ``moved`` gets ``e_link`` instead of ``net`` (the returned
        change of its coefficient per byte) and the network part ``moved * (1 - rho)`` gets ``net - e_link``. Both
        are counts with non-negative coefficients: ``exp`` of a linear expression (``ln(1 - rho) = -ln u`` for a
        simple straight link, else a one-hot over the link's configurations with the log of its share as
        coefficient, a share of 0 sending the log far below every value). Latency: ``moved / N_c`` when anything
        is forwarded, over the link's bandwidth."""
        link = self._link_between(t, c, p)
        if link is None:
            return 0.0
        w = float(self.word[t])
        el = link.energy_pj_per_byte
        delta = 0.0
        if self.objective == "latency" and self.energy_cap is None:
            pass  # energy is neither optimised nor capped: only the link's latency term matters
        elif el >= net:
            if el > net:
                energy.append((self._shared(moved, link, lambda r: r, f"{t}:forwarded{c}"), w * (el - net)))
        else:
            delta = el - net
            if self._simple_link(link):
                k = link.slots[0]
                coef = dict(moved.spec.coef)
                for d in self.dims:
                    if d not in self.nest.operand(t).dims:
                        coef[d, k] = coef.get((d, k), 0) - 1
                spec = TermSpec(f"{t}:network{c}", moved.spec.operand, moved.spec.include,
                                {key: v for key, v in coef.items() if v}, moved.spec.reuse_child, moved.spec.maybe)
                energy.append((self._term(spec), w * (net - el)))
            else:
                energy.append((self._shared(moved, link, lambda r: 1.0 - r, f"{t}:network{c}"), w * (net - el)))
        if math.isfinite(link.bandwidth_bytes_per_cycle):
            link_rows.append((self._shared(moved_pi, link, lambda r: 1.0 if r > 0 else 0.0, f"{t}:link{c}"),
                              w / link.bandwidth_bytes_per_cycle))
        return delta

    def _shared(self, base: _Term, link: ArchLink, share: Callable[[float], float], name: str) -> _Term:
        """``base`` times ``share(rho)`` of the link's configuration (a one-hot), exactly."""
        cols = self._link_onehot(link)
        vals = {z: share(rho) for _, z, rho in cols}
        positive = [v for v in vals.values() if v > 1e-12]
        gated = len(positive) < len(vals)
        spec = TermSpec(name, base.spec.operand, base.spec.include, dict(base.spec.coef), base.spec.reuse_child,
                        dict(base.spec.maybe), tuple(sorted(set(round(v, 12) for v in positive))), gated)
        term = self._term(spec)
        if gated:
            lo_sum = sum(min(v * self._lb[k], v * self._ub[k]) for k, v in term.expr.items())
            hi_sum = sum(max(v * self._lb[k], v * self._ub[k]) for k, v in term.expr.items())
            big = (hi_sum - lo_sum) - math.log(min(positive, default=1.0)) + 4.0
        for z, v in vals.items():
            term.expr[z] = term.expr.get(z, 0.0) + (math.log(v) if v > 1e-12 else -big)
        return term

    def _link_onehot(self, link: ArchLink) -> list[tuple[tuple, int, float]]:
        """One binary per achievable configuration of the link's slots (what decides ``rho``: the factors of every
        dimension there, and the strides of the dimensions of two-dimension coordinates; for a simple straight
        link only ``u``), linked exactly to the prime exponents; ``(key, column, rho)``."""
        if link.operand in self._links:
            return self._links[link.operand]
        t = link.operand
        nest = self.nest
        slots = link.slots
        primes = sorted({p for d in self.dims for p in self.primes[d]})
        if self._simple_link(link):
            k = slots[0]
            irr = [d for d in self.dims if d not in nest.operand(t).dims]
            bound = math.prod(nest.sizes[d] for d in irr)
            cols = []
            for u in (v for v in divisors(bound) if v <= self.slots[k].size):
                cols.append(((u,), self._var(0, 1, integer=True), 1.0 - 1.0 / u))
            self._row({z: 1.0 for _, z, _ in cols}, 1.0, 1.0)
            for p in primes:
                row: Expr = {z: float(_exp(key[0], p)) for key, z, _ in cols if _exp(key[0], p)}
                for d in irr:
                    if p in self.primes[d]:
                        row[self.n[d, k, p]] = row.get(self.n[d, k, p], 0.0) - 1.0
                if row:
                    self._row(row, 0.0, 0.0)
            self._links[t] = cols
            self._link_keys[t] = lambda m: (math.prod(m.factors[d][k] for d in irr),)
            return cols
        window = {d for c in nest.operand(t).coords if sum(1 for d, _ in c.terms if d in self.primes) >= 2
                  for d, _ in c.terms if d in self.primes}

        def project(d: str, f: Sequence[int]) -> tuple[int, ...]:
            out = tuple(f[k] for k in slots)
            if d in window:
                out += tuple(math.prod(f[:k]) for k in slots)
            return out

        per_dim = {d: sorted({project(d, f) for f in self._dim_splits(d)}) for d in self.dims}
        keys: list[tuple[tuple[int, ...], ...]] = []

        def rec(i: int, used: tuple[int, ...], acc: tuple) -> None:
            if i == len(self.dims):
                keys.append(acc)
                return
            for v in per_dim[self.dims[i]]:
                nu = tuple(a * b for a, b in zip(used, v[: len(slots)], strict=True))
                if all(x <= self.slots[k].size for x, k in zip(nu, slots, strict=True)):
                    rec(i + 1, nu, (*acc, v))
        rec(0, (1,) * len(slots), ())
        if len(keys) > MAX_LINK_CONFIGS:
            raise ValueError(f"the link of {t} has {len(keys)} configurations, more than the MILP takes "
                             f"({MAX_LINK_CONFIGS})")
        cols = []
        for key in keys:
            matched, positions = link_matches(nest, self.arch, self._fake_mapping(key, slots, window), link)
            cols.append((key, self._var(0, 1, integer=True), matched / positions))
        self._row({z: 1.0 for _, z, _ in cols}, 1.0, 1.0)
        for i, d in enumerate(self.dims):
            for j, k in enumerate(slots):
                parts = [(j, [k])] + ([(len(slots) + j, list(range(k)))] if d in window else [])
                for pos, ks in parts:
                    for p in self.primes[d]:
                        row = {z: float(_exp(key[i][pos], p)) for key, z, _ in cols if _exp(key[i][pos], p)}
                        for kk in ks:
                            row[self.n[d, kk, p]] = row.get(self.n[d, kk, p], 0.0) - 1.0
                        self._row(row, 0.0, 0.0)
        self._links[t] = cols
        self._link_keys[t] = lambda m: tuple(project(d, m.factors[d]) for d in self.dims)
        return cols

    def _fake_mapping(self, key: tuple, slots: tuple[int, ...], window: set[str]) -> Mapping:
        """A mapping with the key's factors on the link's slots and its strides below them (for link_matches)."""
        factors = {d: [1] * self.K for d in self.nest.dims}
        for i, d in enumerate(self.dims):
            fs = factors[d]
            for j, k in enumerate(slots):
                fs[k] = key[i][j]
            if d in window:
                for j, k in enumerate(slots):
                    below = math.prod(fs[:k])
                    want = key[i][len(slots) + j]
                    free = next((x for x in range(k - 1, -1, -1) if x not in slots), None)
                    if want != below:
                        assert free is not None and want % below == 0
                        fs[free] *= want // below
        orders = tuple(tuple(self.nest.dims) for _ in self.arch.levels)
        return Mapping({d: tuple(f) for d, f in factors.items()}, orders)

    def _child_tile_terms(self, name: str, t: str, c: int) -> tuple[_Term, _Term]:
        """Whole tiles of ``t`` moved into (fills) or out of (drains) level ``c`` on every visit: the total count
        over all instances of ``c``, and the count per instance."""
        tile = self._include_tile(c)
        total = self._term(self._spec(f"{name}{c}", t, tile, visits_of=c, times_instances=c))
        per_instance = self._term(self._spec(f"{name}{c}/pi", t, tile, visits_of=c))
        return total, per_instance

    def _materialize(self, term: _Term, cap: float | None, floor: float | None = None) -> None:
        """``T >= exp(L)``: secant cuts through the achievable values of the count (up to the first above ``cap``).
        Values below ``floor`` (a count whose share of its rows is negligible there) are spanned by one chord from
        the least value to the largest value at most ``floor``: it claims at most ``floor`` more than the count."""
        if term.col >= 0:
            return
        term.cap, term.floor = cap, floor
        values = self._values(term.spec, cap)
        if floor is not None and values.size > 2:
            b = int(np.searchsorted(values, floor, side="right")) - 1  # the largest value <= floor
            if b > 1:
                values = np.concatenate([values[:1], values[b:]])
        term.scale = float(values[-1])
        values = values / term.scale  # T' = count / scale: secant slopes ~ the values, at most 1
        term.col = self._var(0.0)
        term.lam_col = self._var(-math.inf, math.inf)
        self._row(_add(({term.lam_col: 1.0}, 1.0), (term.expr, -1.0)), 0.0, 0.0)
        logs = np.log(values) + math.log(term.scale)
        term.points = (values, logs)
        if not term.spec.gated:
            self._row({term.lam_col: 1.0}, lo=float(logs[0]) - 1e-9)
        if len(values) == 1 and not term.spec.gated:
            self._row({term.col: 1.0}, lo=float(values[0]))
        elif len(values) == 1:  # the tangent at the one value: exact there, below exp elsewhere
            self._row({term.col: 1.0 / values[0], term.lam_col: -1.0}, lo=float(1.0 - logs[0]))
        for i in range(len(values) - 1):
            # T' >= values[i] + slope (lam - logs[i]), divided by the slope: the solver's feasibility tolerance on
            # the row is then one on lam, a relative error of the count, however small the count is next to scale
            slope = (values[i + 1] - values[i]) / (logs[i + 1] - logs[i])
            self._row({term.col: 1.0 / slope, term.lam_col: -1.0}, lo=float(values[i] / slope - logs[i]))
        self._terms.append(term)

    def _lower_value(self, term: _Term, lam: float) -> float:
        """The least ``T'`` the rows of ``term`` allow at ``lam`` (a warm start's column)."""
        assert term.points is not None
        values, logs = term.points
        if len(values) == 1:
            return float(values[0]) if not term.spec.gated else max(0.0, float(values[0]) * (1.0 + lam - logs[0]))
        slopes = np.diff(values) / np.diff(logs)
        return max(0.0, float(np.max(values[:-1] + slopes * (lam - logs[:-1]))))

    # ------------------------------------------------------------------------------------------ achievable values
    def _dim_splits(self, d: str) -> list[tuple[int, ...]]:
        if d not in self._splits:
            out: list[tuple[int, ...]] = []

            def rec(k: int, prefix: tuple[int, ...], remaining: int) -> None:
                if k == self.K - 1:
                    s = self.slots[k]
                    if s.kind == TEMPORAL or remaining <= s.size:
                        out.append((*prefix, remaining))
                    return
                s = self.slots[k]
                for v in divisors(remaining):
                    if s.kind == SPATIAL and v > s.size:
                        break
                    rec(k + 1, (*prefix, v), remaining // v)
            rec(0, (), self.nest.sizes[d])
            rules = self._dim_rules.get(d)
            if rules:  # the splits the space allows (still a superset of the achievable values)
                out = [f for f in out if _split_ok(f, rules)]
            self._splits[d] = out
        return self._splits[d]

    def _component_values(self, spec: TermSpec, dims: tuple[str, ...], coord: Coordinate | None) -> np.ndarray:
        """All values the count's factor from ``dims`` can take (a superset is fine: more secant points).

        Vectorised over every split of the dimension(s); cached, since many counts share a component."""
        relevant = spec.include is not None and spec.operand is not None and (
            coord is not None or dims[0] in self.nest.operand(spec.operand).dims)
        include = spec.include if relevant else None
        coef = tuple(sorted(((d, k), c) for (d, k), c in spec.coef.items() if d in dims))
        maybe = tuple(sorted((d, k) for d in dims for k in spec.maybe.get(d, frozenset())))
        key = (dims, coord, include, coef, maybe)
        if key in self._component_cache:
            return self._component_cache[key]
        mats = [np.array(self._dim_splits(d), dtype=float) for d in dims]
        if len(dims) == 1:
            f = {dims[0]: mats[0]}
        else:  # every pair of splits
            na, nb = len(mats[0]), len(mats[1])
            f = {dims[0]: np.repeat(mats[0], nb, axis=0), dims[1]: np.tile(mats[1], (na, 1))}
        n = len(next(iter(f.values())))
        base = np.ones(n)
        if include is not None and coord is not None and any(include):
            kmax = max((k for k in range(self.K) if include[k]), default=-1)
            runs = _runs(tuple(include[: kmax + 1]))
            inc = tuple(i for i, _ in runs)
            (a, ca), (b, cb) = coord.terms
            ka = np.stack([f[a][:, list(ks)].prod(axis=1) for _, ks in runs], axis=1).astype(np.int64)
            kb = np.stack([f[b][:, list(ks)].prod(axis=1) for _, ks in runs], axis=1).astype(np.int64)
            table: dict[tuple, float] = {}
            for i in range(n):
                pair = (tuple(ka[i]), tuple(kb[i]))
                if pair not in table:
                    table[pair] = float(_halo_extent(ca, cb, pair[0], pair[1], inc))
                base[i] = table[pair]
        elif include is not None and coord is None:
            ks = [k for k in range(self.K) if include[k]]
            base = f[dims[0]][:, ks].prod(axis=1)
        for (d, k), c in coef:
            base = base * f[d][:, k] ** c
        out = [base]
        for r in range(1, len(maybe) + 1):
            for saved in _combinations(maybe, r):
                v = base.copy()
                for d, k in saved:
                    v = v / f[d][:, k]
                out.append(v)
        vals = np.unique(np.round(np.concatenate(out), 9))
        self._component_cache[key] = vals
        return vals

    def _components(self, spec: TermSpec) -> list[np.ndarray]:
        """The values of each independent factor of the count (a dimension, a pair of dimensions sharing a
        sliding-window coordinate, a link's share): every achievable count is a product of one value of each."""
        comps: list[tuple[tuple[str, ...], Coordinate | None]] = []
        seen: set[str] = set()
        if spec.include is not None and spec.operand is not None:
            for coord in self.nest.operand(spec.operand).coords:
                live = tuple((d, c) for d, c in coord.terms if d in self.primes)
                if len(live) == 2:
                    comps.append((tuple(d for d, _ in live), Coordinate(live)))
                    seen.update(d for d, _ in live)
        for d in self.dims:
            if d not in seen:
                comps.append(((d,), None))
        out = [self._component_values(spec, dims, coord) for dims, coord in comps]
        if spec.extra:
            out.append(np.unique(np.round(np.array(spec.extra, dtype=float), 12)))
        return out

    def _least(self, spec: TermSpec) -> float:
        """A lower bound of the count at every mapping (0 if a gate may zero it): the product of its factors' least
        values; for the temporal iterations (``compute``), the iterations with every spatial axis full."""
        if spec.gated:
            return 0.0
        least = math.prod(float(v.min()) for v in self._components(spec))
        if spec.name == "compute":
            spatial = math.prod(s.size for s in self.slots if s.kind == SPATIAL)
            least = max(least, math.prod(self.nest.sizes[d] for d in self.dims) / spatial)
        return least

    def _values(self, spec: TermSpec, cap: float | None) -> np.ndarray:
        """The count's achievable values (a superset) up to ``cap``, then one value ``A`` with ``cap < A <=`` the
        least achievable value above ``cap`` (at most ``2 cap``): the secant rows through it are exact at every
        achievable value up to ``cap`` and claim more than ``cap`` for every value above it.

        Partial products are pruned only when even the least values of the remaining factors (some are below 1:
        per-instance counts, link shares) take them above ``cap``."""
        comps = self._components(spec)
        rest = [1.0] * (len(comps) + 1)  # least product of the factors after each one
        for i in range(len(comps) - 1, -1, -1):
            rest[i] = rest[i + 1] * float(comps[i].min())
        current = np.array([1.0])
        above = math.inf
        for i, vals in enumerate(comps):
            prod = np.unique(np.round((current[:, None] * vals[None, :]).ravel(), 9))
            if cap is not None:
                least = prod * rest[i + 1]
                over = least > cap * (1 + 1e-9)
                if over.any():
                    above = min(above, float(least[over].min()))
                    prod = prod[~over]
            current = prod
        if cap is not None and math.isfinite(above):
            current = np.append(current, min(above, 2.0 * cap))
        current = np.unique(current)
        keep = np.ones(current.size, dtype=bool)
        keep[1:] = current[1:] > current[:-1] * (1 + 1e-9)  # values equal up to rounding are one breakpoint
        return current[keep]

    def build(self) -> LinearModel:
        b = LinearModelBuilder(f"mapping-{self.nest.name}")
        b.add_vars("x", len(self._lb), lower=np.array(self._lb), upper=np.array(self._ub),
                   cost=np.array(self._cost))
        b.c0 = self.c0
        rows, cols, vals, lo, hi = [], [], [], [], []
        for i, (expr, rl, rh) in enumerate(self._rows):
            for k, v in expr.items():
                rows.append(i)
                cols.append(k)
                vals.append(v)
            lo.append(rl)
            hi.append(rh)
        b.add_rows("rows", len(self._rows), np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
                   np.array(vals), lower=np.array(lo), upper=np.array(hi))
        model = b.build()
        return LinearModel(**{**model.__dict__, "integrality": np.array(self._int, dtype=bool)})

    # ------------------------------------------------------------------------------------------ decode / encode
    def decode(self, x: np.ndarray) -> Mapping:
        factors: dict[str, list[int]] = {d: [1] * self.K for d in self.nest.dims}
        for (d, k, p), col in self.n.items():
            factors[d][k] *= p ** int(round(x[col]))
        orders = []
        for m in range(len(self.arch.levels)):
            chosen = next((t for t in OPERANDS if x[self.s[m, t]] > 0.5), None)
            orders.append(self.chain_order(m, factors, chosen) if m in self._chains else self.grouped_order(chosen))
        return Mapping({d: tuple(fs) for d, fs in factors.items()}, tuple(orders))

    def grouped_order(self, innermost: str | None) -> tuple[str, ...]:
        """Dims relevant to every operand outermost, then each operand's irrelevant dims, ``innermost``'s last."""
        nest = self.nest
        groups: dict[str | None, list[str]] = {}
        for d in nest.dims:
            irr = [t for t in OPERANDS if d not in nest.operand(t).dims]
            groups.setdefault(irr[0] if irr else None, []).append(d)
        order = list(groups.get(None, []))
        for t in OPERANDS:
            if t != innermost:
                order += groups.get(t, [])
        if innermost is not None:
            order += groups.get(innermost, [])
        return tuple(order)

    def encode(self, m: Mapping) -> np.ndarray:
        """A complete column vector for ``m`` (a warm start), reading each level's innermost group off its order."""
        nest = self.nest
        x = np.zeros(len(self._lb))
        x[self._one_col] = 1.0
        for (d, k, p), col in self.n.items():
            x[col] = _exp(m.factors[d][k], p)
        for (d, lvl), col in self.one.items():
            x[col] = 1.0 if m.factors[d][self.tslot[lvl]] == 1 else 0.0
        for lvl, k in self.tslot.items():
            live = [d for d in m.orders[lvl] if m.factors[d][k] > 1]
            chosen = None
            if live:
                irr = [t for t in OPERANDS if live[-1] not in nest.operand(t).dims]
                chosen = irr[0] if irr else None
            for t in OPERANDS:
                x[self.s[lvl, t]] = 1.0 if t == chosen else 0.0
        for (t, c, lvl), col in self.g.items():
            rel = nest.operand(t).dims
            ok = x[self.s[lvl, t]] >= 1 and all(
                x[self.one[d, m2]] >= 1 for m2 in range(c + 1, lvl) for d in self.dims if d in rel)
            x[col] = 1.0 if ok else 0.0
        for (d, lvl), col in self.z.items():
            x[col] = 1.0 if m.factors[d][self.tslot[lvl]] == 1 else 0.0
        for (lvl, _, _), (col, paths) in self.claims.items():
            x[col] = min([1.0] + [sum(x[self.z[d, lvl]] for d in path[1:]) for path in paths])
        for (t, c, lvl, d), col in self.qcols.items():
            x[col] = math.log(m.factors[d][self.tslot[lvl]]) * x[self.g[t, c, lvl]]
            if (lvl, t, d) in self.claims:
                x[col] *= x[self.claims[lvl, t, d][0]]
        for (coord, _), (_, cols, pattern) in self._halo.items():
            runs = _runs(pattern)
            (a, _), (b, _) = coord.terms
            ka = tuple(math.prod(m.factors[a][k] for k in ks) for _, ks in runs)
            kb = tuple(math.prod(m.factors[b][k] for k in ks) for _, ks in runs)
            for kv, w in cols:
                x[w] = 1.0 if kv == (ka, kb) else 0.0
        for cols, num, den in self._ratios:
            pa = math.prod(m.factors[d][k] for d, k in num)
            pb = math.prod(m.factors[d][k] for d, k in den)
            for a, b, w in cols:
                x[w] = 1.0 if (a, b) == (pa, pb) else 0.0
        for t, cols in self._links.items():
            key = self._link_keys[t](m)
            for kv, z, _ in cols:
                x[z] = 1.0 if kv == key else 0.0
        for term in self._terms:
            lam = sum(v * x[k] for k, v in term.expr.items())
            x[term.lam_col] = lam
            x[term.col] = max(math.exp(lam) / term.scale, self._lower_value(term, lam)) * (1 + 1e-12)
        # latency: the largest right-hand side among its rows
        x[self.latency_col] = 0.0
        model_rows = [(e, lo) for e, lo, _ in self._rows if self.latency_col in e and e[self.latency_col] == 1.0]
        need = 0.0
        for expr, lo in model_rows:
            rest = sum(v * x[k] for k, v in expr.items() if k != self.latency_col)
            need = max(need, lo - rest)
        x[self.latency_col] = need
        return x


def effective_capacity(j: int, store: Store, limits: MappingABC[tuple[int, str], float] | None) -> float | None:
    """min(capacity, limit) of store ``store`` of level ``j`` (None: unbounded)."""
    lim = (limits or {}).get((j, store.memory))
    if store.capacity_bytes is None:
        return lim
    return store.capacity_bytes if lim is None else min(store.capacity_bytes, lim)


def _split_ok(split: Sequence[int], rules: list[tuple[tuple[int, ...], int, int | None, str]]) -> bool:
    for slots, lo, hi, _ in rules:
        v = math.prod(split[k] for k in slots)
        if v < lo or (hi is not None and v > hi):
            return False
    return True


def _simple_cycles(succ: MappingABC[str, set[str]], nodes: Sequence[str]) -> list[tuple[str, ...]]:
    """The node sets of the simple cycles of the graph ``succ`` (each once)."""
    out: dict[frozenset[str], tuple[str, ...]] = {}
    for i, start in enumerate(nodes):
        allowed = set(nodes[i:])  # cycles through ``start`` and later nodes only: each found from its first node

        def rec(path: tuple[str, ...], start: str = start, allowed: set[str] = allowed) -> None:
            for y in sorted(succ.get(path[-1], set()), key=nodes.index):
                if y == start:
                    out.setdefault(frozenset(path), path)
                elif y in allowed and y not in path:
                    rec((*path, y))
        rec((start,))
    return list(out.values())


def _paths_to(succ: MappingABC[str, set[str]], start: str, ends: frozenset[str]) -> list[tuple[str, ...]]:
    """Simple paths from ``start`` to a node of ``ends`` whose intermediate nodes are not in ``ends``."""
    out: list[tuple[str, ...]] = []

    def rec(path: tuple[str, ...]) -> None:
        for y in sorted(succ.get(path[-1], set())):
            if y in path:
                continue
            if y in ends:
                out.append((*path, y))
            else:
                rec((*path, y))
    rec((start,))
    return out


def _topological(items: Sequence[str], succ: MappingABC[str, set[str]]) -> list[str]:
    """``items`` ordered so that every edge of ``succ`` among them points inwards (the first fitting item first)."""
    rest, out = list(items), []
    while rest:
        pick = next((d for d in rest if not any(d in succ.get(a, set()) for a in rest if a != d)), rest[0])
        out.append(pick)
        rest.remove(pick)
    return out


def _max_exp(size: int, p: int) -> int:
    e = 0
    while p ** (e + 1) <= size:
        e += 1
    return e


def _exp(v: int, p: int) -> int:
    e = 0
    while v > 0 and v % p == 0:
        v //= p
        e += 1
    return e


def _product(lists: Sequence[list]) -> list[tuple]:
    out: list[tuple] = [()]
    for lst in lists:
        out = [(*o, x) for o in out for x in lst]
    return out


def _combinations(items: Sequence[int], r: int) -> list[tuple[int, ...]]:
    from itertools import combinations
    return list(combinations(items, r))


def _runs(pattern: Sequence[bool]) -> list[tuple[bool, tuple[int, ...]]]:
    runs: list[tuple[bool, list[int]]] = []
    for k, inc in enumerate(pattern):
        if runs and runs[-1][0] == inc:
            runs[-1][1].append(k)
        else:
            runs.append((inc, [k]))
    return [(inc, tuple(ks)) for inc, ks in runs]


@cache
def _run_products(size: int, nruns: int) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []

    def rec(prefix: tuple[int, ...], remaining: int) -> None:
        if len(prefix) == nruns:
            out.append(prefix)
            return
        for v in divisors(remaining):
            rec((*prefix, v), remaining // v)
    rec((), size)
    return out


@cache
def _halo_extent(ca: int, cb: int, ka: tuple[int, ...], kb: tuple[int, ...], inc: tuple[bool, ...]) -> int:
    def index_set(k: tuple[int, ...]) -> list[int]:
        vals, stride = [0], 1
        for v, i in zip(k, inc, strict=True):
            if i:
                vals = [x + j * stride for j in range(v) for x in vals]
            stride *= v
        return vals
    sa, sb = index_set(ka), index_set(kb)
    return len({ca * x + cb * y for x in sa for y in sb})


__all__ = ["MappingMilp", "TermSpec", "effective_capacity"]
