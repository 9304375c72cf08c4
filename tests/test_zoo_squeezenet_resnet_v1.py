"""SqueezeNet 1.0 / 1.1 and ResNet-50 v1 vs v1.5: layer shapes, MACs and parameter counts derived independently.

The expected figures are computed here from hand-written layer tables (Iandola et al. 2016 / torchvision for
SqueezeNet, He et al. 2016 for ResNet-50), not from the zoo's code; the parameter counts are the published
torchvision figures (weights + biases; for ResNet-50 conv weights + BN scale/shift + fc weight and bias).
"""

from __future__ import annotations

import inspect
import math

import pytest

from dlaopt.errors import InputError
from dlaopt.workload import OpKind, TensorRole, Workload
from dlaopt.zoo import ZOO


def conv_out(size: int, kernel: int, stride: int = 1, pad: int = 0) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def ceil_pool_out(size: int, kernel: int = 3, stride: int = 2) -> int:
    """PyTorch ``MaxPool2d(kernel, stride, ceil_mode=True)`` without padding."""
    return math.ceil((size - kernel) / stride) + 1


def weight_elems(wl: Workload) -> int:
    return sum(t.numel for t in wl.tensors_with_role(TensorRole.WEIGHT))


def op_out_shape(wl: Workload, name: str) -> tuple[int, ...]:
    return wl.tensors[wl.op(name).outputs[0]].shape


# ================================================================================================ SqueezeNet
# Hand-written layer tables at 224x224: (operator name, in channels, out channels, kernel, output height/width).
def fire_layers(name: str, cin: int, squeeze: int, expand: int, hw: int) -> list[tuple[str, int, int, int, int]]:
    return [(f"{name}.squeeze", cin, squeeze, 1, hw), (f"{name}.expand1x1", squeeze, expand, 1, hw),
            (f"{name}.expand3x3", squeeze, expand, 3, hw)]


SQUEEZENET_1_1 = [
    ("conv1", 3, 64, 3, 111),          # 3x3/2, no padding: (224 - 3) // 2 + 1
    # maxpool1 3x3/2 ceil: 111 -> 55
    *fire_layers("fire2", 64, 16, 64, 55),
    *fire_layers("fire3", 128, 16, 64, 55),
    # maxpool3: 55 -> 27
    *fire_layers("fire4", 128, 32, 128, 27),
    *fire_layers("fire5", 256, 32, 128, 27),
    # maxpool5: 27 -> 13
    *fire_layers("fire6", 256, 48, 192, 13),
    *fire_layers("fire7", 384, 48, 192, 13),
    *fire_layers("fire8", 384, 64, 256, 13),
    *fire_layers("fire9", 512, 64, 256, 13),
    ("conv10", 512, 1000, 1, 13),
]

SQUEEZENET_1_0 = [
    ("conv1", 3, 96, 7, 109),          # 7x7/2, no padding: (224 - 7) // 2 + 1
    # maxpool1: 109 -> 54
    *fire_layers("fire2", 96, 16, 64, 54),
    *fire_layers("fire3", 128, 16, 64, 54),
    *fire_layers("fire4", 128, 32, 128, 54),
    # maxpool4: 54 -> 27 (ceil mode; floor would give 26)
    *fire_layers("fire5", 256, 32, 128, 27),
    *fire_layers("fire6", 256, 48, 192, 27),
    *fire_layers("fire7", 384, 48, 192, 27),
    *fire_layers("fire8", 384, 64, 256, 27),
    # maxpool8: 27 -> 13
    *fire_layers("fire9", 512, 64, 256, 13),
    ("conv10", 512, 1000, 1, 13),
]

SQUEEZENET = {"1.1": SQUEEZENET_1_1, "1.0": SQUEEZENET_1_0}
# torchvision's squeezenet1_1 / squeezenet1_0 parameter counts, and their "GFLOPS" (multiply-adds) 0.35 / 0.82
PUBLISHED_PARAMS = {"1.1": 1_235_496, "1.0": 1_248_424}
EXPECTED_MACS = {"1.1": 349_151_936, "1.0": 818_924_576}
PUBLISHED_GMACS = {"1.1": 0.35, "1.0": 0.82}


def layer_macs(cin: int, cout: int, k: int, hw: int) -> int:
    return hw * hw * cout * cin * k * k


def test_squeezenet_is_registered_with_keyword_defaults():
    entry = ZOO.entry("squeezenet")
    assert entry.description
    params = inspect.signature(entry.factory).parameters.values()
    assert all(p.kind == p.KEYWORD_ONLY and p.default is not p.empty for p in params)
    assert entry.defaults == {"batch": 1, "dtype_bytes": 2, "variant": "1.1", "image_size": 224,
                              "num_classes": 1000}


def test_squeezenet_tables_follow_the_size_arithmetic():
    # the hand-written sizes agree with the conv / ceil-mode pool formulas
    s = conv_out(224, 3, 2)
    assert (s, ceil_pool_out(s), ceil_pool_out(ceil_pool_out(s)), ceil_pool_out(ceil_pool_out(ceil_pool_out(s)))) \
        == (111, 55, 27, 13)
    s = conv_out(224, 7, 2)
    assert (s, ceil_pool_out(s), ceil_pool_out(ceil_pool_out(s)), ceil_pool_out(ceil_pool_out(ceil_pool_out(s)))) \
        == (109, 54, 27, 13)
    assert (54 - 3) // 2 + 1 == 26  # floor-mode rounding would differ for v1.0's second pool
    for table in SQUEEZENET.values():
        assert len(table) == 2 + 8 * 3


@pytest.mark.parametrize("variant", ["1.1", "1.0"])
def test_squeezenet_parameter_count(variant):
    table = SQUEEZENET[variant]
    weights = sum(cin * cout * k * k for _, cin, cout, k, _ in table)
    biases = sum(cout for _, _, cout, _, _ in table)
    assert weights + biases == PUBLISHED_PARAMS[variant]
    wl = ZOO.create("squeezenet", {"variant": variant})
    # the zoo has no bias tensors: its weights are the convolution kernels alone
    assert weight_elems(wl) == weights
    convs = [op for op in wl.operators if op.kind == OpKind.CONV2D]
    assert weight_elems(wl) + sum(op.dims["K"] for op in convs) == PUBLISHED_PARAMS[variant]


@pytest.mark.parametrize("variant", ["1.1", "1.0"])
def test_squeezenet_layer_shapes_and_macs(variant):
    table = SQUEEZENET[variant]
    wl = ZOO.create("squeezenet", {"variant": variant})
    convs = [op for op in wl.operators if op.kind == OpKind.CONV2D]
    assert [op.name for op in convs] == [row[0] for row in table]
    for name, cin, cout, k, hw in table:
        op = wl.op(name)
        assert op_out_shape(wl, name) == (1, cout, hw, hw), name
        assert wl.tensors[op.inputs[1]].shape == (cout, cin, k, k), name
        assert op.macs == layer_macs(cin, cout, k, hw), name
        assert op.attrs["activation"] == "relu"
    total = sum(layer_macs(cin, cout, k, hw) for _, cin, cout, k, hw in table)
    assert total == EXPECTED_MACS[variant]
    assert wl.total_macs == total
    assert wl.macs_by_kind()["conv2d"] == total
    assert round(total / 1e9, 2) == PUBLISHED_GMACS[variant]
    # expand 3x3 keeps the size (pad 1); each fire concatenates its two expands
    assert wl.op("fire2.expand3x3").attrs["padding"] == (1, 1, 1, 1)
    assert op_out_shape(wl, "fire9.concat") == (1, 512, 13, 13)
    assert sum(op.kind == OpKind.CONCAT for op in wl.operators) == 8
    assert not any(op.kind == OpKind.MATMUL for op in wl.operators)
    (out,) = wl.tensors_with_role(TensorRole.OUTPUT)
    assert out.shape == (1, 1000)


def test_squeezenet_pool_positions():
    v11 = ZOO.create("squeezenet")
    pools = [op.name for op in v11.operators if op.kind == OpKind.POOL]
    assert pools == ["maxpool1", "maxpool3", "maxpool5", "avgpool"]
    assert op_out_shape(v11, "maxpool1") == (1, 64, 55, 55)
    v10 = ZOO.create("squeezenet", {"variant": "1.0"})
    pools = [op.name for op in v10.operators if op.kind == OpKind.POOL]
    assert pools == ["maxpool1", "maxpool4", "maxpool8", "avgpool"]
    assert op_out_shape(v10, "maxpool4") == (1, 256, 27, 27)  # ceil mode
    for wl in (v11, v10):
        pool = wl.op("maxpool1")
        assert pool.attrs["kernel"] == (3, 3) and pool.attrs["stride"] == (2, 2)
        assert wl.op("avgpool").attrs["global"] and wl.op("avgpool").attrs["mode"] == "avg"


@pytest.mark.parametrize("image_size", [224, 225, 227, 256])
@pytest.mark.parametrize("variant", ["1.1", "1.0"])
def test_squeezenet_ceil_mode_at_other_sizes(variant, image_size):
    wl = ZOO.create("squeezenet", {"variant": variant, "image_size": image_size})
    s = conv_out(image_size, 3 if variant == "1.1" else 7, 2)
    sizes = [s]
    for _ in range(3):
        sizes.append(ceil_pool_out(sizes[-1]))
    pools = [op.name for op in wl.operators if op.kind == OpKind.POOL and not op.attrs["global"]]
    assert [op_out_shape(wl, p)[2:] for p in pools] == [(h, h) for h in sizes[1:]]
    assert op_out_shape(wl, "conv10")[2:] == (sizes[-1], sizes[-1])


def test_squeezenet_contract():
    wl = ZOO.create("squeezenet")
    assert wl.name == "squeezenet" and wl.params["variant"] == "1.1"
    assert all(t.dtype_bytes == 2 for t in wl.tensors.values())
    again = Workload.create(wl.name, wl.tensors.values(), wl.operators, wl.params)
    assert again.total_macs == wl.total_macs
    assert ZOO.create("squeezenet", {"batch": 3}).total_macs == 3 * wl.total_macs
    ten = ZOO.create("squeezenet", {"num_classes": 10})
    assert ten.op("conv10").dims["K"] == 10
    assert ten.tensors_with_role(TensorRole.OUTPUT)[0].shape == (1, 10)
    names = {op.name for op in wl.operators}
    assert len(names) == len(wl.operators) and not any(n.endswith("_1") for n in names)
    for bad in ({"variant": "1.2"}, {"batch": 0}, {"image_size": 5}):
        with pytest.raises(InputError):
            ZOO.create("squeezenet", bad)


# ================================================================================================ ResNet-50
RESNET50_PARAMS = 25_557_032  # torchvision resnet50: conv weights + BN weight/bias + fc weight/bias
EXPECTED_RESNET50_CONV_MACS = {"v1": 3_855_925_248, "v1.5": 4_087_136_256}
FC_MACS = 2048 * 1000


def resnet50_layers(variant: str) -> list[tuple[str, int, int, int, int, int]]:
    """(name, in channels, out channels, kernel, stride, output size) of every convolution at 224x224."""
    layers = [("conv1", 3, 64, 7, 2, 112)]
    size, cin = 56, 64  # after the 3x3/2 max-pool
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3), strict=True), start=1):
        for i in range(blocks):
            stride = 2 if stage > 1 and i == 0 else 1
            out = size // stride
            p = f"layer{stage}.{i}"
            if variant == "v1":  # He et al.: stride on the first 1x1, the 3x3 runs on the reduced map
                layers += [(f"{p}.conv1", cin, width, 1, stride, out), (f"{p}.conv2", width, width, 3, 1, out)]
            else:  # v1.5: the 1x1 runs on the full map, the 3x3 is strided
                layers += [(f"{p}.conv1", cin, width, 1, 1, size), (f"{p}.conv2", width, width, 3, stride, out)]
            layers.append((f"{p}.conv3", width, 4 * width, 1, 1, out))
            if i == 0:
                layers.append((f"{p}.downsample", cin, 4 * width, 1, stride, out))
            size, cin = out, 4 * width
    return layers


def test_resnet50_variant_parameter():
    entry = ZOO.entry("resnet50")
    assert entry.defaults["variant"] == "v1.5"
    assert "variant" not in ZOO.entry("resnet18").defaults
    with pytest.raises(InputError):
        ZOO.create("resnet50", {"variant": "v2"})
    default, explicit = ZOO.create("resnet50"), ZOO.create("resnet50", {"variant": "v1.5"})
    assert default.operators == explicit.operators and dict(default.tensors) == dict(explicit.tensors)


@pytest.mark.parametrize("variant", ["v1", "v1.5"])
def test_resnet50_parameter_count(variant):
    layers = resnet50_layers(variant)
    conv_weights = sum(cin * cout * k * k for _, cin, cout, k, _, _ in layers)
    bn = sum(2 * cout for _, _, cout, _, _, _ in layers)
    assert conv_weights + bn + 2048 * 1000 + 1000 == RESNET50_PARAMS
    wl = ZOO.create("resnet50", {"variant": variant})
    assert weight_elems(wl) == conv_weights + 2048 * 1000  # BN folded, no biases
    convs = [op for op in wl.operators if op.kind == OpKind.CONV2D]
    assert weight_elems(wl) + sum(2 * op.dims["K"] for op in convs) + 1000 == RESNET50_PARAMS


def test_resnet50_same_weights_in_both_variants():
    v1, v15 = ZOO.create("resnet50", {"variant": "v1"}), ZOO.create("resnet50")
    shapes = {t.name: t.shape for t in v1.tensors_with_role(TensorRole.WEIGHT)}
    assert shapes == {t.name: t.shape for t in v15.tensors_with_role(TensorRole.WEIGHT)}
    assert [op.name for op in v1.operators] == [op.name for op in v15.operators]


@pytest.mark.parametrize("variant", ["v1", "v1.5"])
def test_resnet50_per_layer_macs(variant):
    layers = resnet50_layers(variant)
    wl = ZOO.create("resnet50", {"variant": variant})
    convs = [op for op in wl.operators if op.kind == OpKind.CONV2D]
    assert len(convs) == len(layers) == 53
    for name, cin, cout, k, stride, out in layers:
        op = wl.op(name)
        assert op.attrs["stride"] == (stride, stride), name
        assert op_out_shape(wl, name) == (1, cout, out, out), name
        assert op.macs == out * out * cout * cin * k * k, name
    conv_total = sum(out * out * cout * cin * k * k for _, cin, cout, k, _, out in layers)
    assert conv_total == EXPECTED_RESNET50_CONV_MACS[variant]
    assert wl.macs_by_kind()["conv2d"] == conv_total
    assert wl.total_macs == conv_total + FC_MACS


def test_resnet50_v1_vs_v15_macs():
    v1, v15 = ZOO.create("resnet50", {"variant": "v1"}), ZOO.create("resnet50")
    assert v1.total_macs == 3_857_973_248  # ≈ 3.86 GMACs
    assert v15.total_macs == 4_089_184_256  # ≈ 4.09 GMACs
    # the only difference: conv1 (2w -> w channels) of the first block of stages 2-4 produces the strided s x s
    # map in v1 but the 2s x 2s map in v1.5; the 3x3 outputs s x s in both
    saved = sum((2 * s) ** 2 * 2 * w * w - s * s * 2 * w * w for s, w in ((28, 128), (14, 256), (7, 512)))
    assert v15.total_macs - v1.total_macs == saved == 231_211_008


def test_resnet50_v1_layer_shapes():
    v1 = ZOO.create("resnet50", {"variant": "v1"})
    # conv3_1 (layer2.0): the first 1x1 is strided and produces 28x28, the 3x3 is stride 1
    assert v1.op("layer2.0.conv1").attrs["stride"] == (2, 2)
    assert op_out_shape(v1, "layer2.0.conv1") == (1, 128, 28, 28)
    assert v1.op("layer2.0.conv2").attrs["stride"] == (1, 1)
    assert op_out_shape(v1, "layer2.0.conv2") == (1, 128, 28, 28)
    assert v1.op("layer2.0.downsample").attrs["stride"] == (2, 2)
    assert op_out_shape(v1, "layer2.0.downsample") == (1, 512, 28, 28)
    assert op_out_shape(v1, "layer3.0.conv1") == (1, 256, 14, 14)
    assert op_out_shape(v1, "layer4.0.conv1") == (1, 512, 7, 7)
    assert v1.op("layer4.0.conv2").attrs["stride"] == (1, 1)
    # conv2_1 keeps stride 1 (the max-pool already halved the map); its shortcut is an unstrided projection
    assert v1.op("layer1.0.conv1").attrs["stride"] == (1, 1)
    assert v1.op("layer1.0.downsample").attrs["stride"] == (1, 1)
    assert sum(op.name.endswith(".downsample") for op in v1.operators) == 4
    # v1.5 for contrast: the first 1x1 runs at 56x56, the 3x3 is strided
    v15 = ZOO.create("resnet50")
    assert op_out_shape(v15, "layer2.0.conv1") == (1, 128, 56, 56)
    assert v15.op("layer2.0.conv2").attrs["stride"] == (2, 2)
    assert op_out_shape(v1, "layer4.2.add") == op_out_shape(v15, "layer4.2.add") == (1, 2048, 7, 7)
    assert ZOO.create("resnet50", {"variant": "v1", "image_size": 225}).op("layer2.0.conv1").dims["P"] == 29
