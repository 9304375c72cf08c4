"""PE-to-PE links (seed 004 §3.1, PolyAcc's forwarding relations) in the exact mapping method: on small layers and
architectures with straight and diagonal links forwarding inputs, weights or partial sums (link energy above and
below the network's, finite and infinite link bandwidths, links into a level and into the MAC units), the MILP's
optimum equals the best of every mapping enumerated and scored by the cost model, for energy and latency."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from mapping_cases import ARCHS
from test_mapping_exact import LAYERS, tight
from test_mapping_roots_milp import finite_bandwidth

from dlaopt.formulations.mapping.arch import SPATIAL, ArchLink, MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.exact import solve_layer
from dlaopt.formulations.mapping.exhaustive import all_mappings
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.solvers.result import SolveOptions, Status

OPTS = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True, time_limit=120)


def pe_slots(arch: MappingArch) -> list[int]:
    """The spatial slots of the widest fanout (the PE array)."""
    slots = arch.slots()
    groups: dict[tuple[int, bool], list[int]] = {}
    for k, s in enumerate(slots):
        if s.kind == SPATIAL:
            groups.setdefault((s.level, s.mac), []).append(k)
    return max(groups.values(), key=lambda g: math.prod(slots[k].size for k in g))


def brute(nest: LoopNest, arch: MappingArch) -> dict[str, float]:
    best = {"energy": math.inf, "latency": math.inf}
    for m in all_mappings(nest, arch):
        r = evaluate_mapping(nest, arch, m)
        if r.valid:
            for o in best:
                best[o] = min(best[o], r.objective(o))
    return best


def check(nest: LoopNest, arch: MappingArch, objectives: tuple[str, ...] = ("energy", "latency")) -> None:
    truth = brute(nest, arch)
    for objective in objectives:
        r = solve_layer(nest, arch, objective, options=OPTS)
        assert r.status == Status.OPTIMAL, (objective, r.message, arch.links)
        assert r.mapping is not None
        value = evaluate_mapping(nest, arch, r.mapping).objective(objective)
        assert value == pytest.approx(truth[objective], rel=1e-6), (objective, arch.links)
        if r.model_objective is not None:
            assert r.model_objective == pytest.approx(value, rel=1e-6), (objective, arch.links)


def costly_network(arch: MappingArch, energy: float = 20.0) -> MappingArch:
    """Every level's network dearer (so that forwarding, or avoiding it, decides the optimum)."""
    return dataclasses.replace(arch, levels=tuple(dataclasses.replace(lv, network_energy_pj_per_byte=energy)
                                                  for lv in arch.levels))


def linked(arch: MappingArch, *links: tuple[str, tuple[int, ...], float, float]) -> MappingArch:
    """``arch`` with links given by operand, indices into :func:`pe_slots`, energy and bandwidth."""
    sp = pe_slots(arch)
    return dataclasses.replace(arch, links=tuple(ArchLink(t, tuple(sp[i] for i in idx), e, bw)
                                                 for t, idx, e, bw in links))


# (arch, layer, buffer caps, links): straight links of each operand, cheaper and dearer than the network, diagonal
# links (the Eyeriss-style input diagonal on a strided window), shared slots (placement by the first link)
CASES = [
    ("glb-pe", "conv-halo", None, (("W", (0,), 0.25, 0.25),)),
    ("glb-pe", "conv-1x1", (8, 32), (("O", (1,), 0.25, 0.5),)),
    ("glb-pe", "conv-1x1", None, (("I", (1,), 30.0, 1.0),)),
    ("glb-pe", "conv-halo", None, (("I", (0, 1), 0.25, 0.25),)),
    ("glb-pe", "conv-dilated", (12, 64), (("I", (1, 0), 0.25, 0.5), ("W", (0,), 30.0, math.inf))),
    ("glb-pe", "conv-halo", None, (("I", (0,), 0.25, 0.25),)),
    ("glb-pe-mac", "conv-1x1", None, (("O", (0, 1), 0.25, 0.25), ("W", (1,), 0.25, 1.0))),
    ("glb-pe", "depthwise", None, (("W", (0, 1), 30.0, 0.5),)),
    ("tpu-like", "matmul", None, (("I", (1,), 0.25, 0.25), ("O", (0,), 40.0, 0.5))),
    ("tpu-like", "conv-halo", None, (("I", (0, 1), 40.0, 0.25),)),
    ("acc-eyeriss", "conv-halo", (16, 64), (("O", (1,), 0.25, 0.5), ("I", (0, 1), 0.25, 0.5),
                                            ("W", (0,), 0.25, 0.5))),
]


@pytest.mark.parametrize(("arch_name", "layer_name", "caps", "links"), CASES)
def test_exact_equals_exhaustive_with_links(arch_name: str, layer_name: str, caps: tuple[int, int] | None,
                                            links: tuple) -> None:
    arch, nest = ARCHS[arch_name](), LAYERS[layer_name]()
    if caps is not None:
        arch = tight(arch, *caps)
    check(nest, costly_network(finite_bandwidth(linked(arch, *links))))


@pytest.mark.parametrize("seed", range(6))
def test_exact_equals_exhaustive_random_links(seed: int) -> None:
    """Random links (operand, straight or diagonal, energy, bandwidth, order) on random small cases."""
    rng = random.Random(seed)
    arch_name = rng.choice(["glb-pe", "glb-pe-mac", "tpu-like", "acc-eyeriss"])
    layer_name = rng.choice(["conv-halo", "conv-1x1", "conv-dilated", "matmul"])
    arch, nest = ARCHS[arch_name](), LAYERS[layer_name]()
    sp = pe_slots(arch)
    links = []
    for t in "IWO":
        r = rng.random()
        e, bw = rng.choice([0.0, 0.25, 30.0]), rng.choice([0.25, 1.0, math.inf])
        if r < 0.45:
            links.append((t, (rng.randrange(len(sp)),), e, bw))
        elif r < 0.8 and len(sp) > 1:
            links.append((t, tuple(rng.sample(range(len(sp)), 2)), e, bw))
    rng.shuffle(links)
    if rng.random() < 0.5:
        arch = finite_bandwidth(arch)
    check(nest, costly_network(linked(arch, *links), rng.choice([2.0, 20.0])))


def test_links_change_the_optimum() -> None:
    """Cheap forwarding of all three operands on a small Eyeriss-like array with a dear network makes the exact
    optimum cheaper than without the links."""
    arch_name, layer_name, caps, links = CASES[-1]
    arch = tight(ARCHS[arch_name](), *caps)  # type: ignore[misc]
    nest = LAYERS[layer_name]()
    plain = solve_layer(nest, costly_network(finite_bandwidth(arch)), "energy", options=OPTS)
    fwd = solve_layer(nest, costly_network(finite_bandwidth(linked(arch, *links))), "energy", options=OPTS)
    assert plain.objective is not None and fwd.objective is not None
    assert fwd.objective < plain.objective * 0.99


@pytest.mark.parametrize(("arch_name", "layer_name", "caps", "links"), CASES[::2])
def test_model_counts_equal_cost_model_at_random_mappings(arch_name: str, layer_name: str,
                                                          caps: tuple[int, int] | None, links: tuple) -> None:
    """At random mappings that fit (each level's order grouped as the model reads it), the MILP's column vector is
    feasible and its objective equals the cost model's energy and latency: every link share is exact, not only at
    the optimum."""
    import numpy as np
    from mapping_cases import random_mapping

    from dlaopt.formulations.mapping.milp import MappingMilp

    arch, nest = ARCHS[arch_name](), LAYERS[layer_name]()
    if caps is not None:
        arch = tight(arch, *caps)
    arch = costly_network(finite_bandwidth(linked(arch, *links)))
    for objective in ("energy", "latency"):
        mm = MappingMilp(nest, arch, objective)
        model = mm.build()
        rng = random.Random(objective)
        for _ in range(25):
            m = mm.decode(mm.encode(random_mapping(nest, arch, rng)))
            r = evaluate_mapping(nest, arch, m)
            if not r.valid:
                continue
            x = mm.encode(m)
            assert model.max_violation(x) <= 1e-6
            value = (model.c0 + float(np.dot(model.c, x))) * mm.objective_scale
            assert value == pytest.approx(r.objective(objective), rel=1e-6), (objective, m)
