"""Seed 001 §4.4.5's two-stage pipeline optimisation (Table 4.6) and power under a latency cap, against brute force:
every mapping of each small layer enumerated and valued by the cost model. Stage I's pipeline latency is the
largest least latency; stage II's least energy under it is the enumerated one; the power walk's bound is the least
energy under the cap over the cap, never above the enumerated least power, and a proof is claimed only when a
mapping reaches it; stage II is never worse than stage I, also when every MILP is cut short by a node limit."""

from __future__ import annotations

import math

import pytest
from mapping_cases import ARCHS
from test_mapping_exact import LAYERS, tight

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.exact import solve_layer
from dlaopt.formulations.mapping.exhaustive import all_mappings
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.pipeline import table_rows, two_stage
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import mapping as spec
from dlaopt.specs.tuning import all_off, levers

OPTS = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True)
PIPELINES = [
    ("glb-pe", None, ("conv-halo", "depthwise", "conv-1x1")),
    ("tpu-like", None, ("conv-dilated", "depthwise", "conv-halo")),
]
COUNTS = (1, 3, 2)


def arch_of(name: str, caps: tuple[int, int] | None) -> MappingArch:
    arch = ARCHS[name]()
    return tight(arch, *caps) if caps is not None else arch


def points(nest: LoopNest, arch: MappingArch) -> list[tuple[float, float]]:
    """(latency, energy) of every valid mapping, by enumeration."""
    out = []
    for m in all_mappings(nest, arch):
        r = evaluate_mapping(nest, arch, m)
        if r.valid:
            out.append((r.latency_cycles, r.energy_pj))
    return out


def mw(arch: MappingArch, pj_per_cycle: float) -> float:
    return pj_per_cycle * arch.clock_hz * 1e-9


@pytest.mark.parametrize(("arch_name", "caps", "names"), PIPELINES)
def test_two_stage_equals_brute_force(arch_name: str, caps: tuple[int, int] | None, names: tuple[str, ...]) -> None:
    arch = arch_of(arch_name, caps)
    nests = [LAYERS[n]() for n in names]
    truth = [points(n, arch) for n in nests]
    least = [min(lat for lat, _ in p) for p in truth]
    l_star = max(least)
    assert len(set(least)) > 1  # the layers differ: some may slow down to the bottleneck's pace
    for second in ("energy", "power"):
        res = two_stage(list(zip(nests, COUNTS, strict=True)), arch, second, OPTS)
        assert res.pipeline_latency == pytest.approx(l_star, rel=1e-12)
        assert res.bottleneck is not None and least[res.bottleneck] == l_star
        assert res.throughput_per_s == pytest.approx(arch.clock_hz / l_star, rel=1e-12)
        for row, p, lat in zip(res.rows, truth, least, strict=True):
            first, two = row.first, row.second
            assert first.status == Status.OPTIMAL and first.latency_cycles == pytest.approx(lat, rel=1e-9)
            # stage I's tie-break: the least energy among the mappings at the layer's least latency
            assert first.energy_pj == pytest.approx(min(e for la, e in p if la <= lat * (1 + 1e-12)), rel=1e-9)
            assert two.latency_cycles is not None and two.latency_cycles <= l_star
            under = [(la, e) for la, e in p if la <= l_star]
            if second == "energy":
                assert two.status == Status.OPTIMAL, two.message
                assert two.energy_pj == pytest.approx(min(e for _, e in under), rel=1e-9)
                assert two.energy_pj <= first.energy_pj
            else:
                best = mw(arch, min(e / la for la, e in under))
                bound = mw(arch, min(e for _, e in under) / l_star)  # E(L*) / L*: the walk's one bound
                assert two.power_mw is not None and two.bound is not None
                assert two.power_mw <= first.power_mw
                assert two.bound == pytest.approx(bound, rel=1e-5) and two.bound <= best * (1 + 1e-9)
                assert two.power_mw >= best * (1 - 1e-9)
                if two.status == Status.OPTIMAL:
                    assert two.power_mw == pytest.approx(best, rel=1e-5)
                if best > bound * (1 + 1e-4):  # no mapping reaches the bound: never claimed proven
                    assert two.status == Status.FEASIBLE
        # Table 4.6's rows: max and average over all layers, repeated shapes counted by their counts
        fig = "power_mw" if second == "power" else "energy_pj"
        s = res.summary()
        n = sum(COUNTS)
        for stage in ("first", "second"):
            vals = [getattr(getattr(r, stage), fig) for r in res.rows]
            assert s[f"{stage}_avg_{fig}"] == pytest.approx(sum(v * c for v, c in zip(vals, COUNTS, strict=True)) / n)
            assert s[f"{stage}_max_{fig}"] == max(vals)
        assert s["first_max_latency_cycles"] == s["second_max_latency_cycles"] == l_star
        assert s["reduction"] == pytest.approx(1 - s[f"second_avg_{fig}"] / s[f"first_avg_{fig}"])
        if second == "energy":
            assert s["second_avg_energy_pj"] == pytest.approx(
                sum(min(e for la, e in p if la <= l_star) * c for p, c in zip(truth, COUNTS, strict=True)) / n)
        rows = table_rows(res)
        assert [r["layer"] for r in rows[-2:]] == ["max", "avg"] and sum(r["bottleneck"] for r in rows) == 1


def test_power_needs_a_latency_limit() -> None:
    arch, nest = ARCHS["glb-pe"](), LAYERS["conv-halo"]()
    with pytest.raises(ValueError, match="latency limit"):
        solve_layer(nest, arch, "power", options=OPTS)
    with pytest.raises(ValueError, match="second stage"):
        two_stage([(nest, 1)], arch, "edp", OPTS)


@pytest.mark.parametrize(("arch_name", "caps", "layer"), [("glb-pe", None, "depthwise"),
                                                          ("glb-pe-mac", (12, 40), "conv-halo")])
def test_power_and_edp_under_a_cap_against_brute_force(arch_name: str, caps: tuple[int, int] | None,
                                                       layer: str) -> None:
    """Caps between the least and the largest latency: the walk's power bound is ``E(C) / C`` (never above the
    least power), its answer keeps the cap and is the least power when it claims a proof; EDP under the same cap
    (the same driver) is the enumerated least EDP within the cap, with the levers on and off."""
    arch, nest = arch_of(arch_name, caps), LAYERS[layer]()
    p = points(nest, arch)
    lats = sorted({la for la, _ in p})
    for cap in (lats[0], lats[len(lats) // 4], lats[len(lats) // 2], lats[-1]):
        under = [(la, e) for la, e in p if la <= cap]
        for tuning in (levers({}, spec.EXACT_LEVERS), all_off(spec.EXACT_LEVERS)):
            r = solve_layer(nest, arch, "power", options=OPTS, latency_limit=cap, tuning=tuning)
            best = min(e / la for la, e in under)
            assert r.mapping is not None and r.objective is not None and r.bound is not None
            rep = evaluate_mapping(nest, arch, r.mapping)
            assert rep.latency_cycles <= cap and r.objective == pytest.approx(rep.energy_pj / rep.latency_cycles)
            assert r.bound == pytest.approx(min(e for _, e in under) / cap, rel=1e-5)
            assert r.bound <= best * (1 + 1e-9) <= r.objective * (1 + 2e-9)
            if r.status == Status.OPTIMAL:
                assert r.objective == pytest.approx(best, rel=1e-5)
            else:
                assert r.status == Status.FEASIBLE and best > r.bound * (1 + 1e-7)
            r = solve_layer(nest, arch, "edp", options=OPTS, latency_limit=cap, tuning=tuning)
            assert r.status == Status.OPTIMAL and r.mapping is not None and r.bound is not None
            assert evaluate_mapping(nest, arch, r.mapping).latency_cycles <= cap
            edp = min(e * la for la, e in under)
            assert r.objective == pytest.approx(edp, rel=1e-6) and r.bound <= edp * (1 + 1e-9)


@pytest.mark.parametrize("nodes", [0, 1])
def test_cut_short_second_stage_is_never_worse_than_the_first(nodes: int) -> None:
    """Every MILP cut short by a node limit: stage II keeps L*, is never worse than stage I's mapping (its warm
    start), and its bound stays at most the enumerated optimum."""
    arch_name, caps, names = PIPELINES[0]
    arch = arch_of(arch_name, caps)
    nests = [LAYERS[n]() for n in names]
    truth = [points(n, arch) for n in nests]
    opts = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True, node_limit=nodes)
    for second in ("energy", "power"):
        res = two_stage([(n, 1) for n in nests], arch, second, opts)
        assert res.pipeline_latency is not None and res.pipeline_latency >= max(min(la for la, _ in p) for p in truth)
        for row, p in zip(res.rows, truth, strict=True):
            assert row.second.latency_cycles is not None and row.second.latency_cycles <= res.pipeline_latency
            under = [(la, e) for la, e in p if la <= res.pipeline_latency]
            opt = min(e for _, e in under) if second == "energy" else mw(arch, min(e / la for la, e in under))
            first = row.first.energy_pj if second == "energy" else row.first.power_mw
            assert row.second.objective is not None and first is not None
            assert opt * (1 - 1e-9) <= row.second.objective <= first
            if row.second.bound is not None:
                assert row.second.bound <= opt * (1 + 1e-9)
            assert not math.isnan(row.second.objective)
