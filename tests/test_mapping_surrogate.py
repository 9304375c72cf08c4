"""The Mind-Mappings-style surrogate mapper (seed 001 §5.2.3): deterministic training, hand-written backprop against
finite differences, projection to structurally valid mappings, the search's validity and trace, fitting a known
function, the deterministic .npz round trip, and one model on two slot structures (Accel-A / Accel-B's MAC fanout)."""

from __future__ import annotations

import math
import random
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from mapping_cases import ARCHS, LAYERS

from dlaopt.formulations.mapping import heuristics as H
from dlaopt.formulations.mapping import surrogate as S
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.mapping import mapping_errors

TINY = S.TrainConfig(samples=120, hidden=(16, 16), epochs=4, batch=32, seed=5)


@cache
def tiny_model() -> tuple[S.Surrogate, S.FitReport]:
    """Trained on two conv layers on the MAC-less architecture, encoding the layout of both architectures."""
    a, b = ARCHS["glb-pe"](), ARCHS["glb-pe-mac"]()
    nests = [LAYERS["conv-holes"](), LAYERS["conv-1x1-s2"]()]
    return S.train_surrogate(nests, a, TINY, layout=S.slot_layout(a, b))


def test_slot_layout_merges_the_mac_fanout_in_nest_order() -> None:
    a, b = ARCHS["glb-pe"](), ARCHS["glb-pe-mac"]()
    assert [s.name for s in a.slots()] == ["T0", "S1:rows", "S1:cols", "T1", "T2"]
    assert S.slot_layout(a, b) == ("Smac:mac", "T0", "S1:rows", "S1:cols", "T1", "T2")
    assert S.slot_layout(b, a) == S.slot_layout(a, b)


def test_encoding_places_log_factors_and_order_positions() -> None:
    nest, arch = LAYERS["matmul-batch"](), ARCHS["glb-pe"]()
    enc = S.Encoding(tuple(nest.dims), S.slot_layout(arch, ARCHS["glb-pe-mac"]()), 3)
    m = H.sample_mapping(nest, arch, random.Random(1))
    x = enc.encode(nest, arch, m)
    assert x.shape == (4 + 4 * 6 + 3 * 4,)
    for di, d in enumerate(nest.dims):
        assert x[di] == math.log2(nest.sizes[d])
        assert x[enc.factor_index(di, 0)] == 0.0  # no MAC slot on this architecture: factor 1
        assert [2 ** x[enc.factor_index(di, s)] for s in range(1, 6)] == pytest.approx(list(m.factors[d]))
        assert x[enc.order_index(2, di)] == m.orders[2].index(d) / 3
    with pytest.raises(ValueError, match="not in the encoding"):
        S.Encoding(tuple(nest.dims), S.slot_layout(arch), 3).encode(nest, ARCHS["glb-pe-mac"](), m)


def test_training_is_deterministic() -> None:
    a = ARCHS["glb-pe"]()
    nests = [LAYERS["conv-holes"]()]
    m1, r1 = S.train_surrogate(nests, a, TINY)
    m2, r2 = S.train_surrogate(nests, a, TINY)
    for k, v in m1.net.arrays().items():
        assert np.array_equal(v, m2.net.arrays()[k]), k
    assert r1.val_rmse == r2.val_rmse and r1.history == r2.history
    assert r1.rows + r1.val_rows > 100 and r1.val_rows == round(0.1 * (r1.rows + r1.val_rows))


@pytest.mark.parametrize("objective", ["energy", "latency", "edp"])
def test_input_gradient_matches_finite_differences(objective: str) -> None:
    model, _ = tiny_model()
    nest, arch = LAYERS["conv-holes"](), ARCHS["glb-pe-mac"]()
    x = model.encoding.encode(nest, arch, H.sample_mapping(nest, arch, random.Random(2)))
    x = x + np.random.default_rng(0).normal(0, 0.3, size=x.shape)
    v, g = model.objective(x, objective)
    h = 1e-5
    fd = np.array([(model.objective(x + h * e, objective)[0] - model.objective(x - h * e, objective)[0]) / (2 * h)
                   for e in np.eye(len(x))])
    assert np.allclose(g, fd, rtol=1e-5, atol=1e-7)
    pred = model.predict(x[None, :])[0]
    assert v == pytest.approx({"energy": pred[0], "latency": pred[1], "edp": pred[0] + pred[1]}[objective])


@pytest.mark.parametrize("arch_name", ["glb-pe", "glb-pe-mac", "three-level", "acc-tpu"])
def test_projection_of_any_vector_is_a_structurally_valid_mapping(arch_name: str) -> None:
    arch = ARCHS[arch_name]()
    layout = tuple(s.name for s in arch.slots())
    rng = np.random.default_rng(7)
    for name in ("conv-holes", "grouped", "matmul-batch"):
        nest = LAYERS[name]()
        enc = S.Encoding(tuple(nest.dims), layout, len(arch.levels))
        for _ in range(40):
            x = rng.uniform(-2.0, 6.0, size=enc.size)
            m = S.project(nest, arch, enc, x)
            assert mapping_errors(nest, arch, m) == []


def test_projection_sorts_the_order_scores_and_honours_exact_power_of_two_targets() -> None:
    nest, arch = LAYERS["matmul-batch"](), ARCHS["glb-pe"]()  # B2 M4 N6 K4
    enc = S.Encoding(tuple(nest.dims), tuple(s.name for s in arch.slots()), 3)
    x = np.zeros(enc.size)
    # M: 4 = 2 at T0 and 2 along the 2-wide rows axis; K: 4 at T1; B: 2 at T2; N: 6 = 3 along cols, 2 at T0
    want = {"B": (1, 1, 1, 1, 2), "M": (2, 2, 1, 1, 1), "N": (2, 1, 3, 1, 1), "K": (1, 1, 1, 4, 1)}
    for di, d in enumerate(enc.dims):
        for s, f in enumerate(want[d]):
            x[enc.factor_index(di, s)] = math.log2(f)
        for i in range(3):
            x[enc.order_index(i, di)] = [0.9, 0.1, 0.5, 0.3][di]  # B last, M first, then K, N
    m = S.project(nest, arch, enc, x)
    assert dict(m.factors) == want
    assert m.orders == (("M", "K", "N", "B"),) * 3


@pytest.mark.parametrize("arch_name", ["glb-pe", "glb-pe-mac"])
def test_search_returns_valid_mappings_and_a_decreasing_trace(arch_name: str) -> None:
    model, _ = tiny_model()
    nest, arch = LAYERS["conv-holes"](), ARCHS[arch_name]()
    trace = H.SearchTrace()
    best = S.surrogate_search(nest, arch, "edp", model, samples=150, seed=3, trace=trace)
    assert best is not None and mapping_errors(nest, arch, best) == []
    report = evaluate_mapping(nest, arch, best)
    assert report.valid
    values = [v for _, _, v in trace.points]
    assert all(b < a for a, b in zip(values, values[1:], strict=False))
    assert values[-1] == pytest.approx(report.edp)
    assert [n for n, _, _ in trace.points] == sorted(n for n, _, _ in trace.points)
    assert trace.samples <= 150
    again = S.surrogate_search(nest, arch, "edp", model, samples=150, seed=3)
    assert again is not None and H.mapping_key(nest, arch, again) == H.mapping_key(nest, arch, best)


def test_a_small_network_fits_a_smooth_function() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(1500, 2))
    Y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2
    net, report = S.fit_mlp(X, Y, S.TrainConfig(hidden=(32, 32), epochs=150, batch=64, lr=3e-3, seed=1))
    # the target's standard deviation is about 0.9; a linear fit leaves about 0.6 (the x1^2 part is orthogonal)
    assert report.val_rmse[0] < 0.05
    assert report.history[-1] < report.history[0] / 20
    assert net.predict(np.array([[0.0, 0.0]]))[0, 0] == pytest.approx(0.0, abs=0.1)


def test_save_load_round_trip_is_identical(tmp_path: Path) -> None:
    model, _ = tiny_model()
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    model.save(a)
    model.save(b)
    assert a.read_bytes() == b.read_bytes()
    loaded = S.Surrogate.load(a)
    assert loaded.encoding == model.encoding and loaded.trained_on == model.trained_on == "glb-IWO-pe-mac0"
    X = np.random.default_rng(1).uniform(0, 3, size=(20, model.encoding.size))
    assert np.array_equal(loaded.predict(X), model.predict(X))
