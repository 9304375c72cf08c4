"""The exact mapping method under the user's constraints (a LayerSpace: factor bounds, spatial allowances, order
chains, a minimum utilization) against brute force: on small layers and small architectures, the MILP's optimum
(and the EDP walk's) equals the best of every enumerated mapping that an independent predicate, written here,
accepts; a space no mapping satisfies ends INFEASIBLE, quickly. The spaces are built by hand, slot by slot."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
import pytest
from mapping_cases import ARCHS, layer_from
from test_mapping_exact import LAYERS, tight

from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch
from dlaopt.formulations.mapping.cost import OBJECTIVES, evaluate_mapping
from dlaopt.formulations.mapping.exact import solve_layer
from dlaopt.formulations.mapping.exhaustive import all_mappings
from dlaopt.formulations.mapping.loopnest import LoopNest, loopnest_from_operator
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.milp import MappingMilp
from dlaopt.formulations.mapping.space import ArchChoice, FactorBound, LayerSpace, OrderChain, SpatialAllow
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload.builder import NetworkBuilder

OPTS = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True)


def padded_conv() -> LoopNest:
    """P = 5 rounded up to 6: a sixth of the MACs are padding, so a utilization on the real sizes asks for more
    parallel MACs than one on the padded factors (0.5 of 12 MAC units: 8 rather than 6)."""
    b = NetworkBuilder("pad", dtype_bytes=1)
    x = b.input("x", (1, 2, 5, 1))
    w = b.build([b.conv2d(x, 2, 1)])
    op = next(o for o in w.operators if o.kind.value == "conv2d")
    return loopnest_from_operator(w, op, {"P": 6})


NESTS: dict[str, Callable[[], LoopNest]] = {
    "conv-1x1": LAYERS["conv-1x1"],  # K=4 C=2 P=2 Q=2
    "matmul": LAYERS["matmul"],  # B=2 M=2 N=3 K=4
    "conv-halo": lambda: layer_from(lambda b, x: b.conv2d(x, 2, (3, 1), stride=(2, 1)), (1, 2, 5, 1)),  # K C P=2 R=3
    "padded": padded_conv,
}


def make_arch(name: str) -> MappingArch:
    base, _, caps = name.partition("/")
    arch = ARCHS[base]()
    if caps:
        pe, glb = caps.split("x")
        arch = tight(arch, int(pe), int(glb))
    return arch


# ---------------------------------------------------------------------------------------------- building spaces
@dataclass(frozen=True)
class Spec:
    """A space by slot names: factors (dim, slot names, lo, hi), spatial (slot name, dims or None, max or None),
    orders (level, chain), a minimum utilization."""

    factors: tuple[tuple[str, tuple[str, ...], int, int | None], ...] = ()
    spatial: tuple[tuple[str, str | None, int | None], ...] = ()
    orders: tuple[tuple[int, str], ...] = ()
    util: float | None = None

    def build(self, arch: MappingArch) -> LayerSpace:
        names = [s.name for s in arch.slots()]
        return LayerSpace(
            (ArchChoice(None, arch),),
            tuple(FactorBound(d, tuple(names.index(s) for s in slots), lo, hi, f"constraints[{i}] (factors)")
                  for i, (d, slots, lo, hi) in enumerate(self.factors)),
            tuple(SpatialAllow(names.index(s), None if dims is None else frozenset(dims), mx,
                               f"constraints[{i}] (spatial)") for i, (s, dims, mx) in enumerate(self.spatial)),
            tuple(OrderChain(lvl, tuple(chain), f"constraints[{i}] (permutation)")
                  for i, (lvl, chain) in enumerate(self.orders)),
            self.util, "constraints[9] (utilization)" if self.util else "")


def keeps(nest: LoopNest, arch: MappingArch, space: LayerSpace, m: Mapping) -> bool:
    """The constrained space, read straight off its definition."""
    slots = arch.slots()
    for b in space.factor_bounds:
        v = math.prod(m.factors[b.dim][k] for k in b.slots)
        if v < b.lo or (b.hi is not None and v > b.hi):
            return False
    for a in space.spatial:
        if a.dims is not None and any(m.factors[d][a.slot] > 1 for d in nest.dims if d not in a.dims):
            return False
        if a.max_used is not None and math.prod(m.factors[d][a.slot] for d in nest.dims) > a.max_used:
            return False
    for c in space.orders:
        k = arch.temporal_slot(c.level)
        position = {d: i for i, d in enumerate(m.orders[c.level])}
        live = [d for d in c.chain if m.factors[d][k] > 1]
        if any(position[a] > position[b] for a, b in zip(live, live[1:], strict=False)):
            return False
    if space.min_utilization:
        used = math.prod(m.factors[d][k] for d in nest.dims for k, s in enumerate(slots) if s.kind == SPATIAL)
        if used * nest.real_macs < space.min_utilization * nest.macs * space.macs_available * (1 - 1e-12):
            return False
    return True


@cache
def _problem(arch_name: str, nest_name: str) -> tuple[MappingArch, LoopNest, list[Mapping], dict]:
    arch, nest = make_arch(arch_name), NESTS[nest_name]()
    return arch, nest, list(all_mappings(nest, arch)), {}


def brute_force(arch_name: str, nest_name: str, space: LayerSpace | None) -> dict[str, float]:
    """The least value of each objective over the enumerated mappings the predicate accepts (inf: none)."""
    return brute_force_arg(arch_name, nest_name, space)[0]


def brute_force_arg(arch_name: str, nest_name: str, space: LayerSpace | None
                    ) -> tuple[dict[str, float], dict[str, Mapping]]:
    arch, nest, mappings, memo = _problem(arch_name, nest_name)
    best = dict.fromkeys(OBJECTIVES, math.inf)
    arg: dict[str, Mapping] = {}
    for m in mappings:
        if space is not None and not keeps(nest, arch, space, m):
            continue
        key = m.key()
        if key not in memo:
            r = evaluate_mapping(nest, arch, m)
            memo[key] = {o: r.objective(o) for o in OBJECTIVES} if r.valid else None
        if memo[key] is not None:
            for o in OBJECTIVES:
                if memo[key][o] < best[o]:
                    best[o], arg[o] = memo[key][o], m
    return best, arg


# ---------------------------------------------------------------------------------------------- the cases
A = "glb-pe-mac"  # slots Smac:mac(2) T0 S1:rows(2) S1:cols(3) T1 T2; 12 MAC units
LIVE1 = (("K", ("T1",), 2, 2), ("C", ("T1",), 2, 2), ("Q", ("T1",), 2, 2))  # conv-1x1: three live loops at level 1
LIVE2 = (("K", ("T2",), 2, 2), ("C", ("T2",), 2, 2), ("P", ("T2",), 2, 2))  # ... at level 2
FEASIBLE: dict[str, tuple[str, str, Spec]] = {
    "factor-fixed-temporal": (A, "conv-1x1", Spec(factors=(("C", ("T1",), 2, 2),))),
    "factor-min-temporal": (A, "conv-1x1", Spec(factors=(("C", ("T0",), 2, None), ("P", ("T2",), 2, None)))),
    "factor-max-over-levels": (A, "conv-1x1", Spec(factors=(("K", ("T0", "T1"), 1, 1), ("Q", ("T0",), 1, 1)))),
    "factor-fixed-fanout": (A, "conv-1x1", Spec(factors=(("K", ("S1:rows", "S1:cols"), 4, 4),))),
    "factor-bounded-axis": (A, "conv-1x1", Spec(factors=(("P", ("Smac:mac",), 2, None), ("C", ("S1:cols",), 1, 1)))),
    "factor-range": (A, "matmul", Spec(factors=(("K", ("T0", "T1"), 2, 3), ("N", ("T2",), 2, 3)))),
    "spatial-dims": (A, "conv-1x1", Spec(spatial=(("S1:rows", "C", None), ("S1:cols", "PQ", None)))),
    "spatial-max": (A, "conv-1x1", Spec(spatial=(("S1:cols", None, 2), ("Smac:mac", None, 1)))),
    "spatial-dims-max": (A, "matmul", Spec(spatial=(("S1:cols", "NK", 2), ("S1:rows", "M", None)))),
    "order-partial": (A, "conv-1x1", Spec(factors=LIVE2, orders=((2, "CK"),))),
    "order-partial-free": (A, "conv-1x1", Spec(orders=((1, "CK"), (2, "QP")))),
    "order-partial-live": (A, "conv-1x1", Spec(factors=(("C", ("T2",), 2, 2), ("Q", ("T2",), 2, 2)),
                                               orders=((2, "QC"),))),
    "order-two-chains": (A, "conv-1x1", Spec(factors=LIVE1, orders=((1, "CK"), (1, "KQ")))),
    "order-two-chains-free": (A, "conv-1x1", Spec(factors=(("K", ("T1",), 2, None),), orders=((1, "QK"), (1, "KP")))),
    "order-full": (A, "conv-1x1", Spec(factors=LIVE2, orders=((2, "NGCQKPRS"),))),
    "order-full-level1": (A, "conv-1x1", Spec(factors=LIVE1, orders=((1, "NGKQCPRS"),))),
    "order-full-two-levels": (A, "matmul", Spec(factors=(("N", ("T2",), 3, 3), ("K", ("T2",), 2, 2)),
                                                orders=((1, "MNKB"), (2, "BNKM")))),
    "order-halo": (A, "conv-halo", Spec(factors=(("R", ("T1",), 3, 3),), orders=((1, "RKC"), (2, "CK")))),
    "util-half": (A, "conv-1x1", Spec(util=0.5)),
    "util-full": (A, "matmul", Spec(util=1.0)),
    "util-padded": (A, "padded", Spec(util=0.5)),
    "util-padded-full": (A, "padded", Spec(util=5 / 6)),
    "combination": (A, "conv-1x1", Spec(factors=(("K", ("T1",), 2, 2),), spatial=(("S1:rows", "CP", None),),
                                        orders=((2, "PQ"), (1, "CQ")), util=0.25)),
    "combination-tight": (A + "/12x40", "conv-halo", Spec(spatial=(("S1:cols", "KP", 2),), orders=((1, "KCP"),),
                                                           util=1 / 3)),
    "combination-tpu": ("tpu-like", "matmul", Spec(factors=(("N", ("S1:cols",), 3, 3),), orders=((2, "MNK"),),
                                                   spatial=(("S1:rows", "MB", None),))),
}

INFEASIBLE: dict[str, tuple[str, str, Spec]] = {
    "factor-not-a-divisor": (A, "conv-1x1", Spec(factors=(("K", ("T1",), 3, 3),))),
    "factor-above-size": (A, "conv-1x1", Spec(factors=(("C", ("T0",), 4, None),))),
    "factor-empty-range": (A, "matmul", Spec(factors=(("K", ("T0", "T1"), 3, 3),))),
    "factor-over-axis": (A, "conv-1x1", Spec(factors=(("K", ("S1:rows",), 4, 4),))),
    "factors-disagree": (A, "conv-1x1", Spec(factors=(("K", ("T0",), 4, 4), ("K", ("T1",), 2, None)))),
    "util-without-axes": (A, "conv-1x1", Spec(spatial=(("S1:rows", "", None), ("S1:cols", "", None),
                                                       ("Smac:mac", "", None)), util=0.1)),
    "util-over-max": (A, "conv-1x1", Spec(spatial=(("S1:cols", None, 2),), util=1.0)),
    "util-over-dims": (A, "conv-1x1", Spec(spatial=(("S1:rows", "C", None), ("S1:cols", "C", None)), util=0.5)),
    "order-cycle": (A, "conv-1x1", Spec(factors=(("K", ("T1",), 2, None), ("C", ("T1",), 2, None)),
                                        orders=((1, "KC"), (1, "CK")))),
    "order-cycle-three": (A, "matmul", Spec(factors=(("K", ("T2",), 4, 4), ("N", ("T2",), 3, 3), ("M", ("T2",), 2, 2)),
                                            orders=((2, "KN"), (2, "NM"), (2, "MK")))),
    "capacity": (A + "/2x8", "conv-1x1", Spec(factors=(("K", ("T0",), 4, 4),))),
}


def _check(arch_name: str, nest_name: str, spec: Spec) -> LayerSpace:
    arch, nest, _, _ = _problem(arch_name, nest_name)
    space = spec.build(arch)
    truth = brute_force(arch_name, nest_name, space)
    assert all(math.isfinite(v) for v in truth.values()), "the case must have a feasible mapping"
    for objective in OBJECTIVES:
        r = solve_layer(nest, arch, objective, options=OPTS, space=space)
        assert r.status == Status.OPTIMAL, (objective, r.status, r.message)
        assert r.mapping is not None and keeps(nest, arch, space, r.mapping), objective
        report = evaluate_mapping(nest, arch, r.mapping)
        assert report.valid, report.violations
        assert report.objective(objective) == pytest.approx(truth[objective], rel=1e-6), objective
        assert r.bound is not None and r.bound <= truth[objective] * (1 + 1e-9), objective
        if r.model_objective is not None:  # the model's value of its optimum is the cost model's
            assert r.model_objective == pytest.approx(report.objective(objective), rel=1e-6), objective
    return space


@pytest.mark.parametrize("case", list(FEASIBLE))
def test_exact_equals_brute_force_in_space(case: str) -> None:
    _check(*FEASIBLE[case])


def test_cases_constrain() -> None:
    """Most cases change some optimum: the comparison above is not with the unconstrained problem in disguise (the
    unconstrained optima from the exact method, which tests/test_mapping_exact.py checks against brute force)."""
    binding = 0
    for arch_name, nest_name, spec in FEASIBLE.values():
        arch, nest, _, _ = _problem(arch_name, nest_name)
        constrained = brute_force(arch_name, nest_name, spec.build(arch))
        for o in OBJECTIVES:
            free = solve_layer(nest, arch, o, options=OPTS)
            assert free.status == Status.OPTIMAL and free.objective is not None
            if constrained[o] > free.objective * (1 + 1e-6):
                binding += 1
                break
    assert binding >= 0.8 * len(FEASIBLE)


@pytest.mark.parametrize("case", list(INFEASIBLE))
def test_infeasible_space(case: str) -> None:
    arch_name, nest_name, spec = INFEASIBLE[case]
    arch, nest, _, _ = _problem(arch_name, nest_name)
    space = spec.build(arch)
    assert all(v == math.inf for v in brute_force(arch_name, nest_name, space).values())
    for objective in OBJECTIVES:
        t0 = time.perf_counter()
        r = solve_layer(nest, arch, objective, options=OPTS, space=space)
        assert r.status == Status.INFEASIBLE, (objective, r.status, r.message)
        assert r.mapping is None
        assert time.perf_counter() - t0 < 10.0


def test_warm_starts_outside_the_space_are_dropped() -> None:
    """The unconstrained optimum (outside the space) as a warm start neither leaks out nor caps the search; the
    constrained optimum as a warm start is a valid hint."""
    arch_name, nest_name, spec = FEASIBLE["combination"]
    arch, nest, _, _ = _problem(arch_name, nest_name)
    space = spec.build(arch)
    truth, inside = brute_force_arg(arch_name, nest_name, space)
    for objective in OBJECTIVES:
        free = solve_layer(nest, arch, objective, options=OPTS).mapping  # an unconstrained optimum
        assert free is not None and not keeps(nest, arch, space, free)
        for warm in ([free], [free, inside[objective]]):
            r = solve_layer(nest, arch, objective, options=OPTS, space=space, warm=warm)
            assert r.status == Status.OPTIMAL and r.mapping is not None
            assert keeps(nest, arch, space, r.mapping)
            assert evaluate_mapping(nest, arch, r.mapping).objective(objective) == pytest.approx(truth[objective])


@pytest.mark.parametrize("case", ["order-two-chains", "order-full-two-levels", "combination", "factor-range"])
def test_encode_decode_in_space(case: str) -> None:
    """Every mapping of the space encodes to a point of the model (a usable hint), which decodes to a mapping of
    the space with the same factors."""
    arch_name, nest_name, spec = FEASIBLE[case]
    arch, nest, mappings, _ = _problem(arch_name, nest_name)
    space = spec.build(arch)
    inside = [m for m in mappings if keeps(nest, arch, space, m) and evaluate_mapping(nest, arch, m).valid]
    mm = MappingMilp(nest, arch, "energy", space=space)
    model = mm.build()
    for m in random.Random(0).sample(inside, min(60, len(inside))):
        x = mm.encode(m)
        assert model.max_violation(x) <= 1e-6, m
        back = mm.decode(x)
        assert back.factors == m.factors and keeps(nest, arch, space, back)


def _arrays(mm: MappingMilp) -> list:
    model = mm.build()
    return [(k, v.tolist() if isinstance(v, np.ndarray) else v) for k, v in sorted(model.__dict__.items())]


@pytest.mark.parametrize("objective", ["energy", "latency"])
def test_unconstrained_space_leaves_the_model_alone(objective: str) -> None:
    arch, nest, _, _ = _problem(A, "conv-1x1")
    plain = _arrays(MappingMilp(nest, arch, objective, cap=1e5))
    for space in (LayerSpace((ArchChoice(None, arch),)), LayerSpace((ArchChoice(None, arch),), sources=("x",))):
        assert _arrays(MappingMilp(nest, arch, objective, cap=1e5, space=space)) == plain


def test_asymmetric_axes_keep_both_orientations() -> None:
    """Two axes of one size are interchangeable without constraints (the model keeps one orientation); a constraint
    on one of them only must not cut the other orientation away."""
    arch = ARCHS["glb-pe"]()
    pe, glb, dram = arch.levels
    arch = replace(arch, levels=(replace(pe, instances=4), replace(glb, fanout=(("rows", 2), ("cols", 2))), dram))
    nest = NESTS["conv-1x1"]()
    names = [s.name for s in arch.slots()]
    mappings = list(all_mappings(nest, arch))
    for spatial in ((SpatialAllow(names.index("S1:rows"), frozenset("K"), None, "s"),
                     SpatialAllow(names.index("S1:cols"), frozenset("C"), None, "s")),
                    (SpatialAllow(names.index("S1:cols"), frozenset("KC"), None, "s"),)):
        space = LayerSpace((ArchChoice(None, arch),), spatial=spatial, min_utilization=1.0)
        truth = _best(nest, arch, [m for m in mappings if keeps(nest, arch, space, m)])
        for objective in OBJECTIVES:
            r = solve_layer(nest, arch, objective, options=OPTS, space=space)
            assert r.status == Status.OPTIMAL and r.mapping is not None, r.message
            assert keeps(nest, arch, space, r.mapping)
            assert evaluate_mapping(nest, arch, r.mapping).objective(objective) == pytest.approx(truth[objective])


def _best(nest: LoopNest, arch: MappingArch, mappings: Sequence[Mapping]) -> dict[str, float]:
    best = dict.fromkeys(OBJECTIVES, math.inf)
    for m in mappings:
        r = evaluate_mapping(nest, arch, m)
        if r.valid:
            for o in OBJECTIVES:
                best[o] = min(best[o], r.objective(o))
    assert all(math.isfinite(v) for v in best.values())
    return best
