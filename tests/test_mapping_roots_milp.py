"""Per-operand roots and capacity limits in the exact method: on small layers and architectures, with random roots
(an operand's chain ending at an on-chip level with one instance, as an intermediate tensor of a fused group) and
random capacity limits, the MILP's optimum equals the best of every mapping enumerated and scored by the cost model
with the same roots and limits, for energy and latency (and EDP on one case); the heuristics honour both."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest
from mapping_cases import ARCHS
from test_mapping_exact import LAYERS, tight

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.exact import solve_layer
from dlaopt.formulations.mapping.exhaustive import all_mappings, exhaustive
from dlaopt.formulations.mapping.heuristics import HEURISTICS, capacity_overflows, fit_capacity, fits
from dlaopt.formulations.mapping.loopnest import OPERANDS, LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.solvers.result import SolveOptions, Status

OPTS = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True, time_limit=120)


def random_roots_and_limits(arch: MappingArch, seed: int) -> tuple[dict[str, int], dict[tuple[int, str], float]]:
    """A random non-empty set of operands rooted at a random on-chip level with one instance keeping them, and a
    random limit (a share of the capacity, sometimes fractional bytes) on a random bounded store."""
    rng = random.Random(seed)
    roots: dict[str, int] = {}
    for t in OPERANDS:
        options = [j for j in range(arch.top) if arch.levels[j].instances == 1 and t in arch.levels[j].keeps]
        if options and rng.random() < 0.6:
            roots[t] = rng.choice(options)
    if not roots:
        t = next(t for t in OPERANDS if any(arch.levels[j].instances == 1 and t in arch.levels[j].keeps
                                            for j in range(arch.top)))
        roots[t] = next(j for j in range(arch.top) if arch.levels[j].instances == 1 and t in arch.levels[j].keeps)
    bounded = [(j, s) for j in range(arch.top) for s in arch.levels[j].stores if s.capacity_bytes is not None]
    limits: dict[tuple[int, str], float] = {}
    j, store = rng.choice(bounded)
    assert store.capacity_bytes is not None
    limits[j, store.memory] = store.capacity_bytes * rng.choice([0.25, 0.5, 0.8]) + rng.choice([0.0, 0.5])
    return roots, limits


def finite_bandwidth(arch: MappingArch) -> MappingArch:
    """The same architecture with finite bandwidths (main memory 2 B/cycle, on-chip stores 8 B/cycle with a
    separate 4 B/cycle write port on level 0), so that traffic, and hence the roots, decide latency."""
    levels = []
    for j, lv in enumerate(arch.levels):
        bw = 2.0 if j == arch.top else 8.0
        levels.append(replace(lv, stores=tuple(replace(s, read_bandwidth=bw, write_bandwidth=4.0 if j == 0 else None)
                                               for s in lv.stores)))
    return replace(arch, levels=tuple(levels))


def brute(nest: LoopNest, arch: MappingArch, roots: dict[str, int], limits: dict[tuple[int, str], float]
          ) -> dict[str, float]:
    best = {"energy": math.inf, "latency": math.inf, "edp": math.inf}
    for m in all_mappings(nest, arch):
        r = evaluate_mapping(nest, arch, m, roots=roots, capacity_limits=limits)
        if r.valid:
            for o in best:
                best[o] = min(best[o], r.objective(o))
    return best


CASES = [
    ("glb-pe", "conv-halo", None, 1),
    ("glb-pe", "conv-1x1", (8, 32), 2),
    ("glb-pe-mac", "conv-halo", (12, 40), 3),
    ("glb-bypass-w", "depthwise", (6, 24), 4),
    ("tpu-like", "matmul", None, 5),
    ("tpu-like", "conv-halo", None, 16),
    ("three-level", "conv-1x1", None, 7),
    ("acc-eyeriss", "conv-halo", (16, 64), 8),
    ("glb-pe", "conv-dilated", (12, 64), 9),
    ("acc-tpu", "depthwise", None, 10),
]


@pytest.mark.parametrize(("arch_name", "layer_name", "caps", "seed"), CASES)
def test_exact_equals_exhaustive_with_roots(arch_name: str, layer_name: str, caps: tuple[int, int] | None,
                                            seed: int) -> None:
    arch, nest = ARCHS[arch_name](), LAYERS[layer_name]()
    if caps is not None:
        arch = tight(arch, *caps)
    if seed % 2:
        arch = finite_bandwidth(arch)
    roots, limits = random_roots_and_limits(arch, seed)
    truth = brute(nest, arch, roots, limits)
    objectives = ("energy", "latency", "edp") if seed == 1 else ("energy", "latency")
    for objective in objectives:
        r = solve_layer(nest, arch, objective, options=OPTS, roots=roots, capacity_limits=limits)
        if math.isinf(truth[objective]):
            assert r.status == Status.INFEASIBLE and r.mapping is None, (objective, r.status)
            continue
        assert r.status == Status.OPTIMAL, (objective, r.message, roots, limits)
        assert r.mapping is not None
        rep = evaluate_mapping(nest, arch, r.mapping, roots=roots, capacity_limits=limits)
        assert rep.valid, rep.violations
        assert rep.objective(objective) == pytest.approx(truth[objective], rel=1e-6), (objective, roots, limits)
        if r.model_objective is not None:
            assert r.model_objective == pytest.approx(rep.objective(objective), rel=1e-6)
        if objective != "energy":
            continue
        # the exhaustive pass-through agrees
        ex = exhaustive(nest, arch, objective, roots=roots, capacity_limits=limits)
        assert ex is not None
        assert evaluate_mapping(nest, arch, ex, roots=roots, capacity_limits=limits).objective(objective) == \
            pytest.approx(truth[objective], rel=1e-9)


def test_roots_change_the_optimum() -> None:
    """Rooting the output at the global buffer removes its main-memory traffic: the rooted optimum is cheaper, and
    a limit on the global buffer that leaves no room for one element of each held operand is infeasible."""
    arch, nest = ARCHS["glb-pe"](), LAYERS["conv-1x1"]()
    plain = solve_layer(nest, arch, "energy", options=OPTS)
    rooted = solve_layer(nest, arch, "energy", options=OPTS, roots={"O": 1})
    assert plain.objective is not None and rooted.objective is not None
    assert rooted.objective < plain.objective
    assert rooted.objective == pytest.approx(brute(nest, arch, {"O": 1}, {})["energy"], rel=1e-6)
    none = solve_layer(nest, arch, "energy", options=OPTS, roots={"O": 1}, capacity_limits={(1, "glb"): 1.5})
    assert none.status == Status.INFEASIBLE and none.mapping is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_heuristics_honour_roots_and_limits(seed: int) -> None:
    """Every heuristic's mapping is valid under the roots and limits; the capacity pre-check and repair agree with
    the cost model's check."""
    arch, nest = tight(ARCHS["glb-pe-mac"](), 12, 40), LAYERS["conv-halo"]()
    roots, limits = random_roots_and_limits(arch, seed)
    truth = brute(nest, arch, roots, limits)
    for name, fn in HEURISTICS.items():
        m = fn(nest, arch, "energy", seed=seed, budget=200, time_limit=None, roots=roots, capacity_limits=limits)
        if m is None:
            continue
        rep = evaluate_mapping(nest, arch, m, roots=roots, capacity_limits=limits)
        assert rep.valid, (name, rep.violations)
        assert rep.energy_pj >= truth["energy"] * (1 - 1e-9)
    rng = random.Random(seed)
    for m in list(all_mappings(nest, arch))[:: max(1, 997 + seed)][:200]:
        rep = evaluate_mapping(nest, arch, m, roots=roots, capacity_limits=limits)
        over = capacity_overflows(nest, arch, m.factors, roots=roots, capacity_limits=limits)
        assert (not over) == rep.valid == fits(nest, arch, m.factors, roots=roots, capacity_limits=limits)
        fixed = fit_capacity(nest, arch, Mapping(m.factors, m.orders), roots=roots, capacity_limits=limits)
        if fixed is not None:
            assert evaluate_mapping(nest, arch, fixed, roots=roots, capacity_limits=limits).valid
        rng.random()
