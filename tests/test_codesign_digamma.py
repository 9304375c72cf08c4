"""Free-mapping co-design searches (DiGamma, Mapping-opt, random search; seed 001 Chapter 6) on a few MobileNet-V2
layers and a tiny design grid: every answer is recomputed here from the instance (area through the accelerator,
mappings through the cost model), buffers are the smallest levels holding the mappings, runs are reproducible, and
no method beats the exact optimum of the same grid (mapping MILP per entry, selection over the grid)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from dlaopt.formulations.base import HeuristicFailure
from dlaopt.formulations.codesign import digamma as dg
from dlaopt.formulations.codesign.data import CapRule, CodesignData, CodesignSolution, DesignRule
from dlaopt.formulations.codesign.exact import solve_codesign
from dlaopt.formulations.codesign.space import DesignPoint, DesignSpace, accelerator_for, template_of
from dlaopt.formulations.codesign.tables import CostTables
from dlaopt.formulations.mapping.arch import arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import loopnest_from_operator, mappable_layers, unique_layers
from dlaopt.hardware.area import area_mm2
from dlaopt.hardware.presets import PRESETS
from dlaopt.solvers.result import Status
from dlaopt.zoo import ZOO

SPACE = DesignSpace(rows=(2, 4), cols=(2, 4), l1_bytes=(32, 128, 512), l2_bytes=(4096, 16384))


def make_data(*, deployment: str = "ls", objective: str = "latency", aggregate: str = "sum", layers: int = 4,
              budget_quantile: float = 0.5, space: DesignSpace = SPACE) -> CodesignData:
    """The first ``layers`` mappable layers of MobileNet-V2 on 32x32 inputs plus a copy of the second (a repeated
    shape, so that multiplicities count), on gamma-edge's template; the area budget is the given quantile of the
    grid's areas (times the layer count for LP), so that it binds."""
    wl = ZOO.create("mobilenet-v2", {"batch": 1, "image_size": 32})
    ops = mappable_layers(wl)[:layers]
    nests = [loopnest_from_operator(wl, op) for op in ops]
    nests.append(replace(nests[1], name=f"{nests[1].name}.copy"))
    names = [op.name for op in ops] + [nests[-1].name]
    unique_of = np.zeros(len(nests), dtype=np.int64)
    shapes = []
    for u, members in enumerate(unique_layers(nests).values()):
        shapes.append(nests[members[0]])
        unique_of[members] = u
    template = template_of(PRESETS.create("gamma-edge"))
    area, power = space.area_mm2(template), space.power_mw(template)
    budget = float(np.quantile(area, budget_quantile)) * (1 if deployment == "ls" else len(nests))
    return CodesignData("mbv2-head", names, nests, unique_of, shapes, template, space, "free",
                        deployment, objective, aggregate, "maestro-dse", area, power, {"area_mm2": budget})


def recompute(data: CodesignData, sol: CodesignSolution) -> float:
    """The objective of ``sol`` from the instance alone, asserting every requirement on the way."""
    assert len(sol.points) == len(sol.mappings) == data.n_layers
    for p in sol.points:
        assert data.space.index(p) is not None
    areas = [area_mm2(accelerator_for(data.template, p)).total for p in sol.points]
    if data.deployment == "ls":
        assert len(set(sol.points)) == 1
        total_area = areas[0]
    else:
        total_area = sum(areas)
    assert total_area <= data.budgets["area_mm2"] * (1 + 1e-9)
    allowed = data.allowed()
    figs = []
    for k, (p, m) in enumerate(zip(sol.points, sol.mappings, strict=True)):
        assert allowed[k, data.space.index(p)]
        r = evaluate_mapping(data.layers[k], arch_from_accelerator(accelerator_for(data.template, p)), m)
        assert r.valid, r.violations
        for rule in data.cap_rules:
            if k in rule.layers:
                assert (r.latency_cycles if rule.metric == "latency" else r.energy_pj) <= rule.limit * (1 + 1e-9)
        figs.append({"latency": r.latency_cycles, "energy": r.energy_pj,
                     "edp": r.latency_cycles * r.energy_pj}[data.objective])
    return float(max(figs) if data.aggregate == "max" else sum(figs))


def assert_minimal_buffers(data: CodesignData, sol: CodesignSolution) -> None:
    """The next smaller L1 (L2) level does not hold the mappings of the layers on a point."""
    space = data.space
    for p in set(sol.points):
        ks = [k for k in range(data.n_layers) if sol.points[k] == p]
        for attr, levels in (("l1_bytes", space.l1_bytes), ("l2_bytes", space.l2_bytes)):
            lvl = levels.index(getattr(p, attr))
            if lvl == 0:
                continue
            smaller = replace(p, **{attr: levels[lvl - 1]})
            arch = arch_from_accelerator(accelerator_for(data.template, smaller))
            assert not all(evaluate_mapping(data.layers[k], arch, sol.mappings[k]).valid for k in ks), (p, attr)


@pytest.fixture(scope="module")
def ls_data() -> CodesignData:
    return make_data()


@pytest.fixture(scope="module")
def exact_bound(ls_data: CodesignData) -> float:
    """The proven optimum (lower bound) of the grid: per (unique layer, point) mapping MILPs, refined lazily."""
    tables = CostTables(ls_data.nests, ls_data.template, ls_data.space, "free", ls_data.objective)
    ans = solve_codesign(ls_data.setup(), tables)
    assert ans.status == Status.OPTIMAL
    return float(ans.bound)


def check(data: CodesignData, out: dg.SearchOutcome, *, minimal: bool) -> None:
    assert out.value == pytest.approx(recompute(data, out.solution), rel=1e-9)
    assert out.trace and out.trace[-1][1] == pytest.approx(out.value)
    assert all(b >= a for (a, _), (b, _) in zip(out.trace, out.trace[1:], strict=False))
    assert all(v2 <= v1 for (_, v1), (_, v2) in zip(out.trace, out.trace[1:], strict=False))
    if minimal:
        assert_minimal_buffers(data, out.solution)


def test_digamma_valid_minimal_and_not_better_than_exact(ls_data: CodesignData, exact_bound: float) -> None:
    out = dg.digamma(ls_data, samples=600, population=30, seed=1)
    assert out.samples == 600
    check(ls_data, out, minimal=True)
    assert out.value >= exact_bound * (1 - 1e-6)


def exact_value(data: CodesignData) -> float:
    ans = solve_codesign(data.setup(), CostTables(data.nests, data.template, data.space, "free", data.objective))
    assert ans.status == Status.OPTIMAL
    return float(ans.bound)


@pytest.mark.parametrize(("objective", "aggregate", "rows", "l2"),
                         [("energy", "sum", (2, 4), (4096,)), ("latency", "max", (2, 4), (4096, 16384)),
                          ("latency", "sum", (1, 2), (4096, 16384))])
def test_other_objectives_and_one_row_arrays(objective: str, aggregate: str, rows: tuple[int, ...],
                                             l2: tuple[int, ...]) -> None:
    """A one-row design is a 1-D array: the genomes' rows axis is dropped when the mapping moves to it. (The energy
    case has a smaller grid: its exact reference cannot prune points, every entry is a MILP.)"""
    space = DesignSpace(rows=rows, cols=(2, 4), l1_bytes=(32, 128, 512), l2_bytes=l2)
    data = make_data(objective=objective, aggregate=aggregate, layers=2 if objective == "energy" else 3, space=space)
    bound = exact_value(data)
    for out in (dg.digamma(data, samples=300, population=20, seed=0), dg.random_search(data, samples=150, seed=0)):
        check(data, out, minimal=True)
        assert out.value >= bound * (1 - 1e-6)
        if rows[0] == 1:
            assert all(p.rows in rows for p in out.solution.points)


def test_random_search_valid_minimal_and_not_better_than_exact(ls_data: CodesignData, exact_bound: float) -> None:
    out = dg.random_search(ls_data, samples=300, seed=2)
    check(ls_data, out, minimal=True)
    assert out.value >= exact_bound * (1 - 1e-6)


@pytest.mark.parametrize("design", dg.DESIGNS)
def test_mapping_opt_gamma(ls_data: CodesignData, exact_bound: float, design: str) -> None:
    out = dg.mapping_opt(ls_data, design, samples=300, population=30, seed=0)
    check(ls_data, out, minimal=False)
    assert out.value >= exact_bound * (1 - 1e-6)
    assert ls_data.space.index(out.solution.points[0]) == dg.fixed_design(ls_data, design)


def test_mapping_opt_exact_is_optimal_for_its_design(ls_data: CodesignData, exact_bound: float) -> None:
    out = dg.mapping_opt(ls_data, "compute", mapper="exact")
    check(ls_data, out, minimal=False)
    assert out.value >= exact_bound * (1 - 1e-6)
    gam = dg.mapping_opt(ls_data, "compute", samples=300, population=30)
    assert out.value <= gam.value * (1 + 1e-4)  # the MILP's optimum (gap 1e-4) on the same design


def test_fixture_has_a_repeated_shape_and_a_binding_budget(ls_data: CodesignData) -> None:
    assert len(ls_data.nests) == ls_data.n_layers - 1
    assert (ls_data.area_mm2 > ls_data.budgets["area_mm2"]).any()


def test_fixed_designs_by_brute_force(ls_data: CodesignData) -> None:
    pts = ls_data.space.points
    fits = [p for p in range(len(pts)) if ls_data.area_mm2[p] <= ls_data.budgets["area_mm2"] * (1 + 1e-9)]

    def buf(p: int) -> int:
        return pts[p].num_pes * pts[p].l1_bytes + pts[p].l2_bytes

    c, b, m = (dg.fixed_design(ls_data, d) for d in ("compute", "buffer", "medium"))
    assert c in fits and b in fits and m in fits
    top_pes = max(pts[p].num_pes for p in fits)
    assert pts[c].num_pes == top_pes
    assert buf(c) == min(buf(p) for p in fits if pts[p].num_pes == top_pes)
    top_buf = max(buf(p) for p in fits)
    assert buf(b) == top_buf
    assert pts[b].num_pes == max(pts[p].num_pes for p in fits if buf(p) == top_buf)
    mid = (math.sqrt(pts[c].num_pes * pts[b].num_pes), math.sqrt(buf(c) * buf(b)))

    def dist(p: int) -> float:
        return (math.log(pts[p].num_pes / mid[0])) ** 2 + (math.log(buf(p) / mid[1])) ** 2

    assert dist(m) == pytest.approx(min(dist(p) for p in fits))


def test_same_seed_same_answer(ls_data: CodesignData) -> None:
    a = dg.digamma(ls_data, samples=200, population=20, seed=5)
    b = dg.digamma(ls_data, samples=200, population=20, seed=5)
    assert a.value == b.value and a.trace == b.trace
    assert a.solution.points == b.solution.points
    assert [m.key() for m in a.solution.mappings] == [m.key() for m in b.solution.mappings]
    r1, r2 = dg.random_search(ls_data, samples=100, seed=3), dg.random_search(ls_data, samples=100, seed=3)
    assert r1.value == r2.value and r1.trace == r2.trace


def test_layer_pipelined_digamma() -> None:
    data = make_data(deployment="lp", objective="energy", layers=3, budget_quantile=0.4)
    out = dg.digamma(data, samples=300, population=20, seed=0)
    check(data, out, minimal=True)
    lp = dg.mapping_opt(data, "medium", samples=100, population=20)
    assert len(set(lp.solution.points)) == 1
    check(data, lp, minimal=False)


def test_design_rules_and_caps_respected(ls_data: CodesignData) -> None:
    rule = DesignRule("big-l1", frozenset(range(ls_data.n_layers)), {"l1_bytes": (512, None)})
    free = dg.digamma(ls_data, samples=200, population=20, seed=0)
    k = 0
    cap = CapRule("cap", frozenset({k}), "latency",
                  float(evaluate_mapping(ls_data.layers[k], arch_from_accelerator(
                      accelerator_for(ls_data.template, free.solution.points[k])),
                      free.solution.mappings[k]).latency_cycles) * 1.5)
    data = replace(ls_data, design_rules=[rule], cap_rules=[cap],
                   budgets={"area_mm2": float(ls_data.area_mm2.max())})
    for out in (dg.digamma(data, samples=200, population=20, seed=0), dg.random_search(data, samples=150, seed=0)):
        assert all(p.l1_bytes >= 512 for p in out.solution.points)
        assert out.value == pytest.approx(recompute(data, out.solution), rel=1e-9)


def test_nothing_fits_is_a_heuristic_failure(ls_data: CodesignData) -> None:
    data = replace(ls_data, budgets={"area_mm2": float(ls_data.area_mm2.min()) * 0.5})
    with pytest.raises(HeuristicFailure):
        dg.digamma(data, samples=60, population=20)
    with pytest.raises(HeuristicFailure):
        dg.random_search(data, samples=30)
    with pytest.raises(HeuristicFailure):
        dg.mapping_opt(data, "compute", samples=30, population=10)


def test_design_value_rejects_invalid(ls_data: CodesignData) -> None:
    out = dg.digamma(ls_data, samples=100, population=20)
    sol = out.solution
    big = DesignPoint(4, 4, 512, 16384)
    if ls_data.area_mm2[ls_data.space.index(big)] > ls_data.budgets["area_mm2"]:
        with pytest.raises(ValueError):
            dg.design_value(ls_data, CodesignSolution([big] * ls_data.n_layers, sol.mappings))
    with pytest.raises(ValueError):
        dg.design_value(ls_data, CodesignSolution(sol.points[:1] * 2, sol.mappings[:2]))
