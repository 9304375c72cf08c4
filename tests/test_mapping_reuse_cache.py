"""The on-disk layer cache: keyed by layer, hardware, objective and constraint space (never a hit for another);
every hit re-evaluated by the cost model; corrupt and hostile files ignored; concurrent writers never corrupt it."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import random
from pathlib import Path

import pytest
from mapping_cases import ARCHS, layer_from, random_mapping

from dlaopt.formulations.mapping import layer_cache as lc
from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import fit_capacity
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.space import ArchChoice, FactorBound, LayerSpace


def conv(c: int, k: int, hw: int) -> LoopNest:
    return layer_from(lambda b, x: b.conv2d(x, k, 1), (1, c, hw, hw))


def space_of(arch) -> LayerSpace:  # noqa: ANN001
    return LayerSpace((ArchChoice(None, arch),), mac_units=arch.num_macs)


def valid_mapping(nest: LoopNest, arch, seed: int = 0) -> Mapping:  # noqa: ANN001
    rng = random.Random(seed)
    while True:
        m = fit_capacity(nest, arch, random_mapping(nest, arch, rng))
        if m is not None and evaluate_mapping(nest, arch, m).valid:
            return m


def put(cache: lc.LayerCache, nest: LoopNest, space: LayerSpace, objective: str, m: Mapping,
        status: str = "optimal") -> float:
    arch = space.archs[0].arch
    v = evaluate_mapping(nest, arch, m).objective(objective)
    assert lc.store(cache, nest, space, objective, m, None, v, v * 0.999, status, 1e-2, "exact")
    return v


def case(tmp_path: Path) -> tuple[lc.LayerCache, MappingArch, LoopNest, LayerSpace, Mapping]:
    """A cache in ``tmp_path``, the GLB-PE architecture, a small conv, its unconstrained space and a valid mapping."""
    arch = ARCHS["glb-pe"]()
    nest = conv(4, 8, 4)
    return lc.LayerCache(tmp_path), arch, nest, space_of(arch), valid_mapping(nest, arch)



def stored(tmp_path: Path) -> tuple[lc.LayerCache, MappingArch, LoopNest, LayerSpace, Mapping, Path, dict]:
    """:func:`case` with its mapping stored for energy: also the entry's file and its document."""
    cache, arch, nest, space, m = case(tmp_path)
    put(cache, nest, space, "energy", m)
    path = cache.path(lc.key_for(nest, space, "energy"))
    return cache, arch, nest, space, m, path, json.loads(path.read_text())


def test_a_hit_needs_the_same_layer_hardware_objective_and_constraints(tmp_path: Path) -> None:
    cache, arch, nest, space, m = case(tmp_path)
    v = put(cache, nest, space, "energy", m)
    hit = lc.lookup(cache, nest, space, "energy")
    assert hit is not None and hit.proven and hit.mapping == m and hit.value == pytest.approx(v, rel=1e-12)
    # the layer's name and the accelerator's name are not part of the problem
    renamed = dataclasses.replace(nest, name="other")
    assert lc.lookup(cache, renamed, space_of(dataclasses.replace(arch, name="x")), "energy") is not None
    # another objective
    assert lc.lookup(cache, nest, space, "latency") is None
    assert lc.lookup(cache, nest, space, "edp") is None
    # other hardware: a buffer's capacity, an energy, the PE array
    glb = arch.levels[1]
    store = dataclasses.replace(glb.stores[0], capacity_bytes=2048)
    bigger = dataclasses.replace(arch, levels=(arch.levels[0], dataclasses.replace(glb, stores=(store,)),
                                               arch.levels[2]))
    assert lc.lookup(cache, nest, space_of(bigger), "energy") is None
    cheaper = dataclasses.replace(arch, mac_energy_pj=0.5)
    assert lc.lookup(cache, nest, space_of(cheaper), "energy") is None
    assert lc.lookup(cache, nest, space_of(ARCHS["glb-pe-mac"]()), "energy") is None
    # other constraints
    bounded = dataclasses.replace(space, factor_bounds=(FactorBound("K", (0,), 1, 1, "c[0]"),))
    assert lc.lookup(cache, nest, bounded, "energy") is None
    # another layer (shape, padding)
    assert lc.lookup(cache, conv(4, 8, 2), space, "energy") is None
    padded = dataclasses.replace(nest, real_sizes={**nest.real_sizes, "K": 7})
    assert lc.lookup(cache, padded, space, "energy") is None
    # other roots / capacity limits of the cost model
    assert lc.lookup(cache, nest, space, "energy", capacity_limits={(1, "glb"): 100.0}) is None


def test_constraint_labels_do_not_split_the_cache(tmp_path: Path) -> None:
    cache = lc.LayerCache(tmp_path)
    arch = ARCHS["glb-pe"]()
    nest = conv(4, 8, 4)
    a = dataclasses.replace(space_of(arch), factor_bounds=(FactorBound("N", (0,), 1, 1, "constraints[0]"),),
                            sources=("constraints[0]",))
    b = dataclasses.replace(a, factor_bounds=(FactorBound("N", (0,), 1, 1, "constraints[3]"),),
                            sources=("constraints[3]",))
    put(cache, nest, a, "energy", valid_mapping(nest, arch))
    assert lc.lookup(cache, nest, b, "energy") is not None


def test_every_hit_is_re_evaluated(tmp_path: Path) -> None:
    cache, arch, nest, space, m, path, doc = stored(tmp_path)
    # a stored objective the cost model does not reproduce: usable as a warm start, never as a proven optimum
    path.write_text(json.dumps({**doc, "objective": doc["objective"] * 0.5, "bound": doc["objective"] * 0.4}))
    hit = lc.lookup(cache, nest, space, "energy")
    assert hit is not None and not hit.proven
    assert hit.value == pytest.approx(evaluate_mapping(nest, arch, m).energy_pj, rel=1e-12)
    # a bound above the objective is not believed
    path.write_text(json.dumps({**doc, "bound": doc["objective"] * 2}))
    hit = lc.lookup(cache, nest, space, "energy")
    assert hit is not None and not hit.proven and hit.bound is None
    # a mapping that is not a mapping of this layer (factors not multiplying to its bounds) is dropped
    bad = {**doc["mapping"], "factors": {d: [1] * len(fs) for d, fs in doc["mapping"]["factors"].items()}}
    path.write_text(json.dumps({**doc, "mapping": bad}))
    assert lc.lookup(cache, nest, space, "energy") is None
    # a mapping outside the constraint space is dropped (the space is part of the key, so write it there)
    bounded = dataclasses.replace(space, factor_bounds=(FactorBound("K", (0,), 8, 8, "c"),))
    k2 = lc.key_for(nest, bounded, "energy")
    cache.path(k2).parent.mkdir(parents=True, exist_ok=True)
    cache.path(k2).write_text(json.dumps({**doc, "key": k2.text}))
    assert lc.lookup(cache, nest, bounded, "energy") is None or m.factors["K"][0] == 8
    # an entry is never replaced by a worse one
    put(cache, nest, space, "energy", m)
    worse = valid_mapping(nest, arch, seed=5)
    if evaluate_mapping(nest, arch, worse).energy_pj > evaluate_mapping(nest, arch, m).energy_pj:
        v = evaluate_mapping(nest, arch, worse).energy_pj
        assert not lc.store(cache, nest, space, "energy", worse, None, v, v * 0.999, "optimal", 1e-2, "exact")


def _hostile_contents(doc: dict) -> list[bytes]:
    good = json.dumps(doc).encode()
    return [
        b"", b"{", b"null", b"[]", b"\xff\xfe\x00", good[: len(good) // 2],
        b"[" * 100000 + b"]" * 100000,  # nesting deeper than the parser's recursion
        json.dumps({**doc, "format": 99}).encode(),
        json.dumps({**doc, "key": "another"}).encode(),
        json.dumps({**doc, "objective": "nan"}).encode(),
        json.dumps({**doc, "objective": float("inf")}).encode(),
        json.dumps({**doc, "mapping": {"factors": {"K": [True, 2]}, "orders": []}}).encode(),
        json.dumps({**doc, "mapping": {"factors": {"K": [10**100]}, "orders": [[1]]}}).encode(),
        json.dumps({**doc, "shape": [1, 2, 3]}).encode(),
        json.dumps({**doc, "status": "proven"}).encode(),
        b"9" * 10000,  # an integer longer than Python converts
        b" " * (lc.MAX_ENTRY_BYTES + 10) + good,  # over the size bound
    ]


def test_corrupt_and_hostile_files_are_ignored(tmp_path: Path) -> None:
    cache, arch, nest, space, m, path, doc = stored(tmp_path)
    for content in _hostile_contents(doc):
        path.write_bytes(content)
        assert lc.lookup(cache, nest, space, "energy") is None
        assert lc.similar_entries(cache, conv(4, 8, 2), space, "energy") == []
    # not a regular file: a directory, a FIFO (never opened for a blocking read), a symlink
    path.unlink()
    path.mkdir()
    assert lc.lookup(cache, nest, space, "energy") is None
    path.rmdir()
    os.mkfifo(path)
    assert lc.lookup(cache, nest, space, "energy") is None
    path.unlink()
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(doc))
    path.symlink_to(target)
    assert lc.lookup(cache, nest, space, "energy") is None
    path.unlink()
    # and writing over the wreckage works again
    put(cache, nest, space, "energy", valid_mapping(nest, arch))
    assert lc.lookup(cache, nest, space, "energy") is not None


def test_an_unwritable_cache_is_ignored(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = lc.LayerCache(blocker / "cache")
    arch = ARCHS["glb-pe"]()
    nest = conv(4, 8, 4)
    m = valid_mapping(nest, arch)
    v = evaluate_mapping(nest, arch, m).energy_pj
    with pytest.warns(RuntimeWarning, match="not written"):
        assert not lc.store(cache, nest, space_of(arch), "energy", m, None, v, None, "feasible", None, "ga")
    assert lc.lookup(cache, nest, space_of(arch), "energy") is None


def test_similar_entries_come_back_with_their_layers(tmp_path: Path) -> None:
    cache = lc.LayerCache(tmp_path)
    arch = ARCHS["glb-pe"]()
    space = space_of(arch)
    for c in (2, 4, 8):
        nest = conv(c, 8, 4)
        put(cache, nest, space, "energy", valid_mapping(nest, arch), status="feasible")
    target = conv(4, 8, 4)
    got = lc.similar_entries(cache, target, space, "energy")
    assert sorted(e.layer.sizes["C"] for e in got) == [2, 8]  # its own entry is not "similar"
    assert lc.similar_entries(cache, target, space, "latency") == []


# ------------------------------------------------------------------------------------------------ concurrency
def _writer(root: str, seed: int, rounds: int, out: multiprocessing.Queue) -> None:
    cache = lc.LayerCache(root)
    arch = ARCHS["glb-pe"]()
    rng = random.Random(seed)
    written = []
    for r in range(rounds):
        nest = conv(4, [2, 4, 8][r % 3], 4)
        m = valid_mapping(nest, arch, seed=rng.randrange(10**6))
        v = evaluate_mapping(nest, arch, m).energy_pj
        lc.store(cache, nest, space_of(arch), "energy", m, None, v, None, "feasible", None, "ga")
        written.append((nest.sizes["K"], v))
    out.put(written)


def test_concurrent_writers_leave_whole_entries_holding_the_best(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    q: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), s, 24, q)) for s in range(4)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    best: dict[int, float] = {}
    for written in results:
        for k, v in written:
            best[k] = min(best.get(k, float("inf")), v)
    arch = ARCHS["glb-pe"]()
    for k, v in best.items():
        hit = lc.lookup(lc.LayerCache(tmp_path), conv(4, k, 4), space_of(arch), "energy")
        assert hit is not None and hit.value == pytest.approx(v, rel=1e-12)
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]
    assert leftovers == []
    for f in tmp_path.rglob("*.json"):
        json.loads(f.read_text())  # every file whole
