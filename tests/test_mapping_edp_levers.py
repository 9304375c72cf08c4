"""The EDP walk of the exact mapping method with its levers (``exact_tuning``: near_first, tight_top) on and off:
on small layers it equals brute force (every mapping enumerated); cut short by a node limit it is never worse than
its warm start and its bound stays below the true optimum; seeds given to the per-layer driver warm-start it and are
reported when they are the best warm start. Lever ga_race (the GA in another process alongside the walk under a
time limit): the answer still equals brute force, is never worse than the GA's for the same seed and budget, and no
process outlives the solve, interrupted or not."""

from __future__ import annotations

import math
from pathlib import Path

import psutil
import pytest
from mapping_cases import ARCHS
from test_mapping_exact import LAYERS, brute_force, tight

from dlaopt import harness
from dlaopt.formulations.mapping import exact, race
from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.exact import solve_layer
from dlaopt.formulations.mapping.heuristics import HEURISTICS
from dlaopt.formulations.mapping.layers import run_layer_exact, run_layer_heuristic
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.io.instance import load_instance
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import mapping as spec
from dlaopt.specs.tuning import all_off, levers

ON = levers({}, spec.EXACT_LEVERS)
OFF = all_off(spec.EXACT_LEVERS)
WALK_LEVERS = ("near_first", "tight_top")  # the levers of the walk itself (solve_layer); the others are the driver's
SETTINGS = {"on": ON, "off": OFF, **{f"only-{k}": {**OFF, k: True} for k in WALK_LEVERS}}

CASES = [
    ("glb-pe", "conv-halo", None),
    ("glb-pe-mac", "conv-halo", (12, 40)),
    ("tpu-like", "matmul", None),
    ("glb-bypass-w", "depthwise", (6, 24)),
    ("acc-eyeriss", "conv-halo", (16, 64)),
]


def case(arch_name: str, layer_name: str, caps: tuple[int, int] | None) -> tuple[LoopNest, MappingArch]:
    arch, nest = ARCHS[arch_name](), LAYERS[layer_name]()
    return nest, (tight(arch, *caps) if caps is not None else arch)


def templates(nest: LoopNest, arch: MappingArch) -> list[Mapping]:
    return [m for h in ("nvdla", "eyeriss", "shidiannao")
            if (m := HEURISTICS[h](nest, arch, "edp", seed=0, budget=None, time_limit=None)) is not None]


def edp(nest: LoopNest, arch: MappingArch, m: Mapping) -> float:
    return evaluate_mapping(nest, arch, m).objective("edp")


@pytest.mark.parametrize(("arch_name", "layer_name", "caps"), CASES)
def test_edp_walk_equals_brute_force_with_every_lever_setting(arch_name: str, layer_name: str,
                                                               caps: tuple[int, int] | None) -> None:
    nest, arch = case(arch_name, layer_name, caps)
    truth, optimum = brute_force(nest, arch)
    opts = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True)
    for name, tuning in SETTINGS.items():
        warms = ([], templates(nest, arch), [optimum["edp"]]) if name in ("on", "off") else (templates(nest, arch),)
        for warm in warms:
            r = solve_layer(nest, arch, "edp", options=opts, warm=warm, tuning=tuning)
            assert r.status == Status.OPTIMAL, (name, r.message)
            assert r.mapping is not None
            assert edp(nest, arch, r.mapping) == pytest.approx(truth["edp"], rel=1e-6), (name, len(warm))
            assert r.bound is not None and truth["edp"] * (1 - 2e-6) <= r.bound <= truth["edp"] * (1 + 1e-9), name


@pytest.mark.parametrize(("arch_name", "layer_name", "caps"), CASES[:3])
@pytest.mark.parametrize("nodes", [0, 1])
def test_cut_short_walk_is_never_worse_than_its_warm_start(arch_name: str, layer_name: str,
                                                           caps: tuple[int, int] | None, nodes: int) -> None:
    """A node limit cuts every MILP short (deterministically): the answer is the best mapping seen, no worse than
    the warm start, and the bound is still a proven one (at most the brute-force optimum), with the levers on or
    off; a walk cut short never claims optimality it has not proven."""
    nest, arch = case(arch_name, layer_name, caps)
    truth, _ = brute_force(nest, arch)
    warm = templates(nest, arch)
    warm_best = min(edp(nest, arch, m) for m in warm)
    opts = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True, node_limit=nodes)
    for name, tuning in SETTINGS.items():
        r = solve_layer(nest, arch, "edp", options=opts, warm=warm, tuning=tuning, max_solves=3)
        assert r.mapping is not None, name
        value = edp(nest, arch, r.mapping)
        assert r.objective == pytest.approx(value, rel=1e-9)
        assert value <= warm_best * (1 + 1e-12), name
        assert value >= truth["edp"] * (1 - 1e-9)
        if r.bound is not None:
            assert r.bound <= truth["edp"] * (1 + 1e-9), name
        if r.status == Status.OPTIMAL:
            assert value == pytest.approx(truth["edp"], rel=1e-6), name


def test_seeds_warm_start_the_layer_and_are_reported() -> None:
    """A seed (a mapping given by the caller) that is the optimum is the reported warm start; an invalid seed is
    ignored; the answer is the brute-force optimum either way."""
    nest, arch = case("glb-pe", "conv-halo", None)
    truth, optimum = brute_force(nest, arch)
    options = {**spec.DEFAULT_OPTIONS, "warm_start": ["nvdla"]}
    broken = Mapping({d: (1,) * len(arch.slots()) for d in nest.dims}, optimum["edp"].orders)
    so = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True)
    r = run_layer_exact(nest, arch, "edp", options, so, "highs", seeds=[("broken", broken), ("cached", optimum["edp"])])
    assert r is not None and r["status"] == Status.OPTIMAL.value
    assert r["warm_start"] is not None and r["warm_start"][0] == "cached"
    assert r["warm_start"][1] == pytest.approx(truth["edp"], rel=1e-9)
    assert edp(nest, arch, r["mapping"]) == pytest.approx(truth["edp"], rel=1e-6)
    r = run_layer_exact(nest, arch, "edp", options, so, "highs", seeds=[("broken", broken)])
    assert r is not None and r["warm_start"] is not None and r["warm_start"][0] == "nvdla"
    assert math.isclose(edp(nest, arch, r["mapping"]), truth["edp"], rel_tol=1e-6)


def test_levers_are_declared_and_on_by_default() -> None:
    assert {"near_first", "tight_top", "ga_race"} <= set(spec.EXACT_LEVERS)
    assert spec.DEFAULT_OPTIONS["exact_tuning"] == {}
    assert all(levers(spec.DEFAULT_OPTIONS, spec.EXACT_LEVERS).values())


# ---------------------------------------------------------------------------------------------- lever ga_race
RESNET_CONV2 = Path(__file__).resolve().parents[1] / "instances" / "mapping" / "resnet50-conv2-accel-b.yaml"
SMALL_GA = {"ga_population": 10, "ga_generations": 5}  # a GA that ends on its budget long before any time limit


def children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spare core for the race whatever the machine running the tests (and a GA at the normal priority, so that it
    ends on its small budget within the limit on a loaded machine too)."""
    monkeypatch.setattr(race, "_usable_cores", lambda: 2)
    monkeypatch.setattr(race, "RACE_NICE", 0)


@pytest.mark.usefixtures("two_cores")
@pytest.mark.parametrize(("arch_name", "layer_name", "caps"), CASES[:3])
def test_ga_race_equals_brute_force(arch_name: str, layer_name: str, caps: tuple[int, int] | None) -> None:
    """Under a time limit the GA races the walk (its answer reported); the answer is still the brute-force optimum,
    and the same as without the race; no process is left behind."""
    nest, arch = case(arch_name, layer_name, caps)
    truth, _ = brute_force(nest, arch)
    before = children()
    so = SolveOptions(mip_rel_gap=1e-6, threads=1, time_limit=60.0)
    for raced in (True, False):
        options = {**spec.DEFAULT_OPTIONS, **SMALL_GA, "warm_start": ["nvdla"], "exact_tuning": {"ga_race": raced}}
        r = run_layer_exact(nest, arch, "edp", options, so, "highs")
        assert r is not None and r["status"] == Status.OPTIMAL.value, r and r["message"]
        assert (r["ga_race"] is not None) == raced
        assert edp(nest, arch, r["mapping"]) == pytest.approx(truth["edp"], rel=1e-6)
        assert r["bound"] <= truth["edp"] * (1 + 1e-9)
        assert children() <= before


def test_incumbents_handed_to_the_walk_are_offered() -> None:
    """Mappings handed over between sub-solves (the raced GA's) are incumbents: the optimum handed over at the
    start is the answer, proven, whatever the node limit; an invalid one is ignored."""
    nest, arch = case("glb-pe-mac", "conv-halo", (12, 40))
    truth, optimum = brute_force(nest, arch)
    broken = Mapping({d: (1,) * len(arch.slots()) for d in nest.dims}, optimum["edp"].orders)
    assert not evaluate_mapping(nest, arch, broken).valid
    calls = []

    def handed() -> list[Mapping]:
        calls.append(1)
        return [broken, optimum["edp"]]

    for nodes in (None, 0):
        opts = SolveOptions(mip_rel_gap=1e-6, threads=1, deterministic=True, node_limit=nodes)
        r = solve_layer(nest, arch, "edp", options=opts, tuning=ON, incumbents=handed)
        assert calls
        assert r.mapping is not None and edp(nest, arch, r.mapping) == pytest.approx(truth["edp"], rel=1e-9)
        assert r.bound is None or r.bound <= truth["edp"] * (1 + 1e-9)
        if nodes is None:
            assert r.status == Status.OPTIMAL and r.bound is not None


@pytest.mark.usefixtures("two_cores")
def test_ga_race_is_never_worse_than_the_ga_and_leaves_no_process() -> None:
    """ResNet-50's conv2 on Accel-B under a time limit the walk cannot finish in: the answer is at most the GA's
    (same seed and budget: a budget small enough to end before the limit, so the GA's answer is known); the
    raced GA's answer is reported; no process outlives the solve."""
    p = harness.prepare(load_instance(RESNET_CONV2))
    data = p.data
    nest, space = data.representatives[0], data.spaces[0]
    options = {**data.options, **SMALL_GA, "warm_start": []}
    ga, _ = run_layer_heuristic("ga", nest, data.arch, "edp", options, 0, None)
    assert ga is not None
    ga_value = edp(nest, data.arch, ga)
    before = children()
    r = run_layer_exact(nest, data.arch, "edp", options, SolveOptions(time_limit=2.0, threads=1, seed=0), "highs",
                        space)
    assert r is not None and r["mapping"] is not None
    assert r["ga_race"] is not None and r["ga_race"]["objective"] == pytest.approx(ga_value, rel=1e-12)
    assert edp(nest, data.arch, r["mapping"]) <= ga_value * (1 + 1e-12)
    assert r["objective"] == pytest.approx(edp(nest, data.arch, r["mapping"]), rel=1e-12)
    assert r["bound"] is None or r["bound"] <= r["objective"]
    if r["ga_race"]["won"]:
        assert r["warm_start"][0] == race.RACE_NAME
    assert children() <= before


@pytest.mark.usefixtures("two_cores")
def test_interrupted_race_leaves_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during the walk: the raced GA's worker is killed before the interruption propagates."""
    nest, arch = case("glb-pe", "conv-halo", None)
    seen: list[set[int]] = []

    def interrupted(*args: object, **kwargs: object) -> None:
        seen.append(children())
        raise KeyboardInterrupt

    monkeypatch.setattr(exact, "solve_layer", interrupted)
    before = children()
    options = {**spec.DEFAULT_OPTIONS, "warm_start": []}
    with pytest.raises(KeyboardInterrupt):
        run_layer_exact(nest, arch, "edp", options, SolveOptions(time_limit=30.0, threads=1), "highs")
    assert seen and seen[0] - before  # the GA was running during the walk
    assert children() <= before


def test_ga_race_only_under_a_time_limit_with_a_spare_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """No race without a time limit, with a node limit, when asked to be deterministic, with the lever off, or when
    the layer workers (times their threads) take every core."""
    on = dict(spec.DEFAULT_OPTIONS)
    monkeypatch.setattr(race, "_usable_cores", lambda: 2)
    assert race._race_on(on, SolveOptions(time_limit=5.0), 5.0)
    assert not race._race_on(on, SolveOptions(), None)
    assert not race._race_on(on, SolveOptions(time_limit=5.0, node_limit=10), 5.0)
    assert not race._race_on(on, SolveOptions(time_limit=5.0, deterministic=True), 5.0)
    assert not race._race_on({**on, "exact_tuning": {"ga_race": False}}, SolveOptions(time_limit=5.0), 5.0)
    assert not race._race_on(on, SolveOptions(time_limit=5.0, threads=2), 5.0)
    two = SolveOptions(time_limit=5.0, extra={race.LAYER_WORKERS_KEY: 2})
    assert not race._race_on(on, two, 5.0)
    monkeypatch.setattr(race, "_usable_cores", lambda: 3)
    assert race._race_on(on, two, 5.0)
    monkeypatch.setattr(race, "_usable_cores", lambda: 1)
    assert not race._race_on(on, SolveOptions(time_limit=5.0), 5.0)


@pytest.mark.usefixtures("two_cores")
@pytest.mark.parametrize("name", ["combination", "spatial-dims-max", "util-half"])
def test_ga_race_within_a_constrained_space_equals_brute_force(name: str) -> None:
    """Within a constrained map space the GA races inside the space: the answer is the best enumerated mapping that
    keeps the space (an independent predicate), and it keeps the space."""
    from test_constraints_mapping_exact import FEASIBLE, brute_force_arg, keeps, make_arch
    from test_constraints_mapping_exact import NESTS as SPACE_NESTS

    arch_name, nest_name, space_spec = FEASIBLE[name]
    arch, nest = make_arch(arch_name), SPACE_NESTS[nest_name]()
    space = space_spec.build(arch)
    assert space.constrained
    truth, _ = brute_force_arg(arch_name, nest_name, space)
    before = children()
    options = {**spec.DEFAULT_OPTIONS, **SMALL_GA, "warm_start": ["nvdla"]}
    r = run_layer_exact(nest, arch, "edp", options, SolveOptions(mip_rel_gap=1e-6, threads=1, time_limit=60.0),
                        "highs", space)
    assert r is not None and r["status"] == Status.OPTIMAL.value, r and r["message"]
    assert r["ga_race"] is not None
    assert keeps(nest, arch, space, r["mapping"])
    assert edp(nest, arch, r["mapping"]) == pytest.approx(truth["edp"], rel=1e-6)
    assert children() <= before
