"""The network zoo: every network builds and validates, and MAC totals match the published layer shapes."""

from __future__ import annotations

import inspect
import re

import pytest

from dlaopt.errors import InputError
from dlaopt.workload import OpKind, TensorRole, Workload
from dlaopt.zoo import ZOO

EXPECTED_NETWORKS = {
    "cifar-cnn10", "lenet5", "lstm", "minerva", "elu", "large-elu", "resnet-cifar", "vgg-cifar",
    "alexnet", "vgg16", "resnet18", "resnet50", "mobilenet-v2", "googlenet", "mnasnet", "bert-base",
    "bert-large", "llama-block", "shufflenet-v2",
}

_CACHE: dict[str, Workload] = {}


def default(name: str) -> Workload:
    if name not in _CACHE:
        _CACHE[name] = ZOO.create(name)
    return _CACHE[name]


def within(value: float, reference: float, rel: float) -> bool:
    return abs(value - reference) <= rel * reference


# ----------------------------------------------------------------------------------------------- MAC arithmetic
def conv_macs(out_hw: int, cin: int, cout: int, k: int, groups: int = 1) -> int:
    return out_hw * out_hw * cout * (cin // groups) * k * k


def same_stack_macs(size: int, cin: int, plan: list) -> tuple[int, int, int]:
    """MACs of stride-1 'same' convs ``(cout, k)`` and 2x2/2 pools ``"pool"``; returns (macs, size, channels)."""
    total = 0
    for item in plan:
        if item == "pool":
            size //= 2
        else:
            cout, k = item
            total += conv_macs(size, cin, cout, k)
            cin = cout
    return total, size, cin


# ----------------------------------------------------------------------------------------------- registry contract
def test_every_expected_network_is_registered():
    assert set(ZOO.names()) >= EXPECTED_NETWORKS


@pytest.mark.parametrize("name", sorted(EXPECTED_NETWORKS))
def test_builds_with_defaults_and_validates(name):
    entry = ZOO.entry(name)
    assert entry.description
    params = inspect.signature(entry.factory).parameters.values()
    assert all(p.kind == p.KEYWORD_ONLY and p.default is not p.empty for p in params)
    defaults = entry.defaults
    assert defaults and len(defaults) == len(params)
    assert defaults["batch"] == 1 and defaults["dtype_bytes"] == 2

    wl = default(name)
    assert isinstance(wl, Workload)
    assert wl.name == name
    assert len(wl.operators) > 0 and wl.total_macs > 0
    assert all(t.dtype_bytes == 2 for t in wl.tensors.values())
    assert wl.tensors_with_role(TensorRole.INPUT) and wl.tensors_with_role(TensorRole.OUTPUT)
    assert wl.params["batch"] == 1
    # round trip through the validating constructor
    again = Workload.create(wl.name, wl.tensors.values(), wl.operators, wl.params)
    assert again.total_macs == wl.total_macs
    # readable names given by the zoo, never renamed by the builder's de-duplication (``name`` → ``name_1``)
    names = {op.name for op in wl.operators}
    assert not [n for n in names if (m := re.fullmatch(r"(.+)_\d+", n)) and m.group(1) in names]


@pytest.mark.parametrize("name", sorted(EXPECTED_NETWORKS))
def test_batch_scales_macs_linearly(name):
    assert ZOO.create(name, {"batch": 3}).total_macs == 3 * default(name).total_macs


@pytest.mark.parametrize("name", ["minerva", "resnet-cifar", "lstm", "bert-base"])
def test_dtype_bytes_changes_tensor_sizes(name):
    one = ZOO.create(name, {"dtype_bytes": 1, "layers": 1} if name == "bert-base" else {"dtype_bytes": 1})
    four = ZOO.create(name, {"dtype_bytes": 4, "layers": 1} if name == "bert-base" else {"dtype_bytes": 4})
    assert one.tensors.keys() == four.tensors.keys()
    for t in one.tensors:
        assert four.tensors[t].size_bytes == 4 * one.tensors[t].size_bytes
    assert four.summary()["weight_bytes"] == 4 * one.summary()["weight_bytes"]
    assert one.total_macs == four.total_macs


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("resnet-cifar", {"depth": 21}),
        ("lenet5", {"variant": "lenet4"}),
        ("alexnet", {"variant": "caffe"}),
        ("bert-base", {"hidden": 100, "heads": 12}),
        ("vgg16", {"batch": 0}),
        ("minerva", {"dtype_bytes": -2}),
        ("lstm", {"time_steps": 0}),
        ("minerva", {"hidden": 3}),
        ("minerva", {"batch": "2"}),
    ],
)
def test_bad_parameters_are_input_errors(name, params):
    with pytest.raises(InputError):
        ZOO.create(name, params)


# ----------------------------------------------------------------------------------------------- thesis / SMAUG models
def test_minerva_exact():
    assert default("minerva").total_macs == 784 * 256 + 256 * 256 * 2 + 256 * 10 == 334_336


def test_cifar_cnn10_exact():
    wl = default("cifar-cnn10")
    convs, size, ch = same_stack_macs(32, 3, [(32, 3), (32, 3), "pool", (64, 3), (64, 3), "pool"])
    assert size * size * ch == 4096
    assert wl.total_macs == convs + 4096 * 512 + 512 * 10
    # SMAUG's batch norms follow ReLU and pooling: kept as operators (3), not folded
    assert sum(op.kind == OpKind.NORM for op in wl.operators) == 3
    assert wl.op("conv0").attrs["activation"] == "relu"


def test_lenet5_variants():
    smaug = 26 * 26 * 32 * 9 + 24 * 24 * 32 * 32 * 9 + 12 * 12 * 32 * 128 + 128 * 10
    assert default("lenet5").total_macs == smaug == 6_094_208
    classic = 28 * 28 * 6 * 25 + 10 * 10 * 16 * 6 * 25 + 400 * 120 + 120 * 84 + 84 * 10
    assert ZOO.create("lenet5", {"variant": "classic"}).total_macs == classic == 416_520


def test_elu_networks_exact():
    elu_plan = [(192, 5), "pool", (192, 1), (240, 3), "pool", (240, 1), (260, 2), "pool", (260, 1), (280, 2),
                "pool", (280, 1), (300, 2), "pool", (300, 1), (100, 1)]
    macs, size, ch = same_stack_macs(32, 3, elu_plan)
    wl = default("elu")
    assert wl.total_macs == macs
    assert sum(op.kind == OpKind.CONV2D for op in wl.operators) == 11
    assert sum(op.kind == OpKind.POOL for op in wl.operators) == 5
    assert all(op.attrs["activation"] == "elu" for op in wl.operators if op.kind == OpKind.CONV2D)
    (out,) = wl.tensors_with_role(TensorRole.OUTPUT)
    assert out.shape == (1, 100, 1, 1) == (1, ch, size, size)

    large_plan = [(384, 3), "pool", (384, 1), (384, 2), (640, 2), (640, 2), "pool", (640, 1), (768, 2), (768, 2),
                  (768, 2), "pool", (768, 1), (896, 2), (896, 2), "pool", (896, 3), (1024, 2), (1024, 2), "pool",
                  (1024, 1), (1152, 2), (1152, 1), (100, 1)]
    macs, _, _ = same_stack_macs(32, 3, large_plan)
    wl = default("large-elu")
    assert wl.total_macs == macs
    assert sum(op.kind == OpKind.CONV2D for op in wl.operators) == 19
    assert sum(op.kind == OpKind.POOL for op in wl.operators) == 5


def test_vgg_cifar_exact():
    plan = [(64, 3), (128, 3), "pool", (128, 3), (128, 3), "pool", (256, 3), (256, 3), (256, 3), "pool",
            (512, 3), (512, 3), (512, 3), "pool"]
    convs, size, ch = same_stack_macs(32, 3, plan)
    assert size * size * ch == 2048
    wl = default("vgg-cifar")
    assert wl.total_macs == convs + 2048 * 512 + 512 * 10
    kinds = [op.kind for op in wl.operators]
    assert (kinds.count(OpKind.CONV2D), kinds.count(OpKind.POOL), kinds.count(OpKind.MATMUL)) == (10, 4, 2)


def test_resnet_cifar_resnet20():
    wl = default("resnet-cifar")
    macs = conv_macs(32, 3, 16, 3)
    cin, size = 16, 32
    for stage, ch in enumerate((16, 32, 64)):
        for i in range(3):
            out = size // 2 if stage and i == 0 else size
            macs += conv_macs(out, cin, ch, 3) + conv_macs(out, ch, ch, 3)
            if cin != ch:
                macs += conv_macs(out, cin, ch, 1)
            cin, size = ch, out
    assert wl.total_macs == macs + 64 * 10
    assert within(wl.total_macs, 40.8e6, 0.01)
    adds = [op for op in wl.operators if op.kind == OpKind.ELEMENTWISE]
    assert len(adds) == 9 and all(op.attrs["activation"] == "relu" for op in adds)
    assert sum(op.name.endswith("downsample") for op in wl.operators) == 2
    assert ZOO.create("resnet-cifar", {"depth": 56}).total_macs > wl.total_macs


def lstm_macs(t: int, h: int, i: int, layers: int, batch: int = 1) -> int:
    return batch * t * (i * 4 * h + h * 4 * h + (layers - 1) * 2 * h * 4 * h)


def test_lstm_macs_and_shared_weights():
    wl = default("lstm")
    assert wl.total_macs == lstm_macs(8, 128, 128, 1) == 1_048_576
    weights = wl.tensors_with_role(TensorRole.WEIGHT)
    assert {w.name for w in weights} == {"lstm0.W", "lstm0.U"}
    for w in weights:
        users = wl.consumers[w.name]
        assert len(users) == 8
        assert all(wl.operators[i].kind == OpKind.MATMUL for i in users)
    assert {t.name for t in wl.tensors_with_role(TensorRole.INPUT)} == {"input", "lstm0.h0", "lstm0.c0"}

    params = {"time_steps": 5, "hidden": 48, "input_size": 24, "layers": 3, "batch": 2}
    deep = ZOO.create("lstm", params)
    assert deep.total_macs == lstm_macs(5, 48, 24, 3, batch=2)
    assert len(deep.tensors_with_role(TensorRole.WEIGHT)) == 6
    assert all(len(deep.consumers[w.name]) == 5 for w in deep.tensors_with_role(TensorRole.WEIGHT))
    assert len(deep.tensors_with_role(TensorRole.OUTPUT)) == 6  # h_n and c_n of every layer
    # SMAUG's 2-layer LSTM: 4 steps, 32 inputs, 32 hidden
    smaug = ZOO.create("lstm", {"time_steps": 4, "hidden": 32, "input_size": 32, "layers": 2})
    assert smaug.total_macs == 2 * 4 * (64 * 128)
    single = ZOO.create("lstm", {"time_steps": 1})
    assert single.total_macs == lstm_macs(1, 128, 128, 1)


# ----------------------------------------------------------------------------------------------- ImageNet models
def test_alexnet_original_conv_macs():
    wl = default("alexnet")
    per_layer = {
        "conv1": conv_macs(55, 3, 96, 11),
        "conv2": conv_macs(27, 96, 256, 5, groups=2),
        "conv3": conv_macs(13, 256, 384, 3),
        "conv4": conv_macs(13, 384, 384, 3, groups=2),
        "conv5": conv_macs(13, 384, 256, 3, groups=2),
    }
    assert [round(v / 1e5) / 10 for v in per_layer.values()] == [105.4, 223.9, 149.5, 112.1, 74.8]
    for name, macs in per_layer.items():
        assert wl.op(name).macs == macs
    conv = wl.macs_by_kind()["conv2d"]
    assert conv == sum(per_layer.values())
    assert within(conv, 666e6, 0.01)
    assert wl.macs_by_kind()["matmul"] == 9216 * 4096 + 4096 * 4096 + 4096 * 1000
    tv = ZOO.create("alexnet", {"variant": "torchvision"})
    assert tv.macs_by_kind()["matmul"] == 9216 * 4096 + 4096 * 4096 + 4096 * 1000
    assert tv.macs_by_kind()["conv2d"] == (conv_macs(55, 3, 64, 11) + conv_macs(27, 64, 192, 5)
                                           + conv_macs(13, 192, 384, 3) + conv_macs(13, 384, 256, 3)
                                           + conv_macs(13, 256, 256, 3))


def test_vgg16_exact():
    plan = [(64, 3), (64, 3), "pool", (128, 3), (128, 3), "pool", (256, 3), (256, 3), (256, 3), "pool",
            (512, 3), (512, 3), (512, 3), "pool", (512, 3), (512, 3), (512, 3), "pool"]
    convs, size, ch = same_stack_macs(224, 3, plan)
    assert convs == 15_346_630_656 and size * size * ch == 25088
    wl = default("vgg16")
    assert wl.macs_by_kind()["conv2d"] == convs
    assert wl.macs_by_kind()["matmul"] == 25088 * 4096 + 4096 * 4096 + 4096 * 1000 == 123_633_664


def resnet_macs(bottleneck: bool, blocks: tuple[int, ...], num_classes: int = 1000) -> int:
    total = conv_macs(112, 3, 64, 7)
    size, cin = 56, 64
    for stage, (width, n) in enumerate(zip((64, 128, 256, 512), blocks, strict=True)):
        for i in range(n):
            out = size // 2 if stage and i == 0 else size
            if bottleneck:
                cout = 4 * width
                total += conv_macs(size, cin, width, 1) + conv_macs(out, width, width, 3)
                total += conv_macs(out, width, cout, 1)
            else:
                cout = width
                total += conv_macs(out, cin, width, 3) + conv_macs(out, width, width, 3)
            if out != size or cin != cout:
                total += conv_macs(out, cin, cout, 1)
            size, cin = out, cout
    return total + cin * num_classes


def test_resnets():
    r18, r50 = default("resnet18"), default("resnet50")
    assert r18.total_macs == resnet_macs(False, (2, 2, 2, 2))
    assert within(r18.total_macs, 1.81e9, 0.01)
    assert r50.total_macs == resnet_macs(True, (3, 4, 6, 3))
    assert within(r50.total_macs, 4.09e9, 0.01)
    assert within(r50.macs_by_kind()["conv2d"], 4.087e9, 0.001)
    assert r50.macs_by_kind()["matmul"] == 2048 * 1000
    # v1.5: the stride sits on the 3x3 conv; projection shortcuts; BN folded; add + ReLU fused
    assert r50.op("layer2.0.conv1").attrs["stride"] == (1, 1)
    assert r50.op("layer2.0.conv2").attrs["stride"] == (2, 2)
    assert sum(op.name.endswith(".downsample") for op in r50.operators) == 4
    assert not any(op.kind == OpKind.NORM for op in r50.operators)
    assert r50.op("layer1.0.add").attrs["activation"] == "relu"
    assert r50.op("conv1").attrs["activation"] == "relu"
    # SMAUG's ResNet-50 runs on 225x225
    assert ZOO.create("resnet50", {"image_size": 225}).op("conv1").dims["P"] == 113


def test_mobilenet_v2():
    wl = default("mobilenet-v2")
    assert within(wl.total_macs, 300e6, 0.03)
    dws = [op for op in wl.operators if op.kind == OpKind.DEPTHWISE_CONV2D]
    assert len(dws) == 17 and all(op.attrs["activation"] == "relu6" for op in dws)
    assert sum(op.kind == OpKind.ELEMENTWISE for op in wl.operators) == 10  # residual adds
    assert wl.op("block1.dw").dims["C"] == 1 and wl.op("block1.dw").dims["G"] == 32
    assert ZOO.create("mobilenet-v2", {"width_mult": 0.5}).total_macs < wl.total_macs


def test_googlenet():
    wl = default("googlenet")
    table = [(28, (64, 96, 128, 16, 32, 32)), (28, (128, 128, 192, 32, 96, 64)),
             (14, (192, 96, 208, 16, 48, 64)), (14, (160, 112, 224, 24, 64, 64)), (14, (128, 128, 256, 24, 64, 64)),
             (14, (112, 144, 288, 32, 64, 64)), (14, (256, 160, 320, 32, 128, 128)),
             (7, (256, 160, 320, 32, 128, 128)), (7, (384, 192, 384, 48, 128, 128))]

    def total(b3_kernel: int) -> int:
        macs = conv_macs(112, 3, 64, 7) + conv_macs(56, 64, 64, 1) + conv_macs(56, 64, 192, 3)
        cin = 192
        for hw, (c1, c3r, c3, c5r, c5, cp) in table:
            macs += (conv_macs(hw, cin, c1, 1) + conv_macs(hw, cin, c3r, 1) + conv_macs(hw, c3r, c3, 3)
                     + conv_macs(hw, cin, c5r, 1) + conv_macs(hw, c5r, c5, b3_kernel) + conv_macs(hw, cin, cp, 1))
            cin = c1 + c3 + c5 + cp
        return macs + cin * 1000

    assert wl.total_macs == total(5)
    # the paper's Table 1 sums to 1,502 M with conv1 listed as 34 M; with conv1's real 118.0 M it is 1,586 M
    assert within(wl.total_macs, (1502 - 34) * 1e6 + conv_macs(112, 3, 64, 7), 0.01)
    tv = ZOO.create("googlenet", {"variant": "torchvision"})
    assert tv.total_macs == total(3)
    assert within(tv.total_macs, 1.5e9, 0.05)
    concat = wl.op("inception3a.concat")
    assert wl.tensors[concat.outputs[0]].shape == (1, 256, 28, 28)
    assert wl.op("inception3a.b1").attrs["activation"] == "relu"
    assert not any(op.kind == OpKind.NORM for op in wl.operators)


def test_mnasnet_b1():
    wl = default("mnasnet")
    assert within(wl.total_macs, 314_415_872, 0.03)  # the documented figure
    assert 312e6 * 0.99 <= wl.total_macs <= 315e6 * 1.01
    assert sum(op.kind == OpKind.DEPTHWISE_CONV2D for op in wl.operators) == 17
    assert wl.macs_by_kind()["matmul"] == 1280 * 1000


def test_shufflenet_v2():
    """MACs summed unit by unit from the architecture (conv_macs per layer), and the shapes that make it ShuffleNet:
    the channel split, the two-group shuffle and the stage widths."""
    wl = default("shufflenet-v2")
    total = conv_macs(112, 3, 24, 3)
    size, cin = 56, 24
    for units, out in ((4, 116), (8, 232), (4, 464)):
        half = out // 2
        for i in range(units):
            if i == 0:
                size //= 2
                total += conv_macs(size, cin, cin, 3, groups=cin) + conv_macs(size, cin, half, 1)  # branch 1
                total += conv_macs(2 * size, cin, half, 1)  # branch 2's first 1x1 runs before the stride
                total += conv_macs(size, half, half, 3, groups=half) + conv_macs(size, half, half, 1)
            else:
                total += 2 * conv_macs(size, half, half, 1) + conv_macs(size, half, half, 3, groups=half)
            cin = out
    total += conv_macs(7, 464, 1024, 1) + 1024 * 1000
    assert wl.total_macs == total
    assert within(total, 146e6, 0.015)  # the paper's 146M for ShuffleNet V2 1x
    assert sum(op.kind == OpKind.DEPTHWISE_CONV2D for op in wl.operators) == 3 + 16
    shuffle = wl.op("stage3.5.shuffle.transpose")
    assert wl.tensors[shuffle.inputs[0]].shape == (1, 2, 116, 14, 14)
    assert wl.tensors[wl.op("stage4.3.shuffle").outputs[0]].shape == (1, 464, 7, 7)


def bert_macs(batch: int, layers: int, s: int, h: int, f: int) -> int:
    return batch * layers * (4 * s * h * h + 2 * s * s * h + 2 * s * h * f)


def test_bert_base():
    wl = default("bert-base")
    assert wl.total_macs == bert_macs(1, 12, 128, 768, 3072)
    assert bert_macs(1, 1, 128, 768, 3072) == 931_135_488
    qk = wl.op("encoder3.attn.qk")
    assert dict(qk.dims) == {"B": 12, "M": 128, "N": 128, "K": 64}
    assert wl.tensors[qk.inputs[0]].shape == (12, 128, 64)
    av = wl.op("encoder3.attn.av")
    assert dict(av.dims) == {"B": 12, "M": 128, "N": 64, "K": 128}
    assert wl.op("encoder0.ffn.fc1").attrs["activation"] == "gelu"
    assert sum(op.kind == OpKind.NORM for op in wl.operators) == 24
    assert sum(op.kind == OpKind.SOFTMAX for op in wl.operators) == 12
    (out,) = wl.tensors_with_role(TensorRole.OUTPUT)
    assert out.shape == (128, 768)

    params = {"batch": 2, "layers": 2, "seq_len": 64, "hidden": 256, "heads": 4, "ffn": 1024}
    small = ZOO.create("bert-base", params)
    assert small.total_macs == bert_macs(2, 2, 64, 256, 1024)
    assert dict(small.op("encoder1.attn.qk").dims) == {"B": 8, "M": 64, "N": 64, "K": 64}
