"""ImageNet classifiers with their published layer shapes (inference graphs: dropout, auxiliary heads and LRN omitted).

Convolution + batch norm + ReLU is one ``conv2d`` operator: batch norm is folded into the convolution's weights
and the ReLU (ReLU6 for MobileNet-V2) is fused, as accelerator compilers do. Residual adds (with the block's final
ReLU fused), pooling and concatenation are separate operators. MACs at batch 1 with the defaults:

``alexnet`` — ``variant="original"`` (default) is Krizhevsky et al.'s two-tower AlexNet on 227x227x3: conv1
  11x11/4 96 · maxpool 3/2 · conv2 5x5 256 (groups 2) · maxpool 3/2 · conv3 3x3 384 · conv4 3x3 384 (groups 2) ·
  conv5 3x3 256 (groups 2) · maxpool 3/2 · fc6 9216→4096 · fc7 4096→4096 · fc8 4096→1000. Convolutions
  665,784,864 MACs (105.4 M + 223.9 M + 149.5 M + 112.1 M + 74.8 M), FCs 58,621,952. ``variant="torchvision"`` is
  the single-tower torchvision model on 224x224 (conv 64-192-384-256-256, same FCs; 714,188,480 MACs in all).

``vgg16`` — Simonyan & Zisserman configuration D on 224x224: thirteen 3x3 convs (64,64 · 128,128 · 256x3 ·
  512x3 · 512x3, a 2x2 max-pool after each group), fc6 25088→4096, fc7 4096→4096, fc8 4096→1000.
  Convolutions 15,346,630,656 MACs, FCs 123,633,664.

``resnet18`` / ``resnet50`` — He et al.'s ResNets as in torchvision. conv1 7x7/2 64 · maxpool 3/2 · four stages
  (64/128/256/512 wide; basic blocks [2,2,2,2] or bottlenecks [3,4,6,3] with expansion 4) · global average pool ·
  fc. Shortcuts that change shape are 1x1 (strided) ``downsample`` convs. ResNet-18: 1,814,073,344 MACs.
  ResNet-50 ``variant="v1.5"`` (default, torchvision): the stride of a stage's first bottleneck sits on its 3x3
  conv; 4,089,184,256 MACs (convolutions 4,087,136,256 + fc 2,048,000). ``variant="v1"`` (He et al. 2016 / Caffe):
  the stride sits on the first 1x1 conv (and the projection shortcut), so the 3x3 runs on the reduced map;
  3,857,973,248 MACs (convolutions 3,855,925,248 + fc). Both have the same weights (25,557,032 parameters with
  BN scale/shift and the fc bias, as torchvision counts). SMAUG's "Resnet" is ResNet-50 on a 225x225 input:
  ``image_size=225``.

``mobilenet-v2`` — Sandler et al.'s MobileNet-V2 (torchvision layout): conv 3x3/2 32 · 17 inverted residual blocks
  (t,c,n,s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1), each a 1x1 expansion
  (ReLU6, absent when t = 1), a 3x3 depthwise conv (ReLU6) and a linear 1x1 projection, with a residual add when
  the stride is 1 and the width unchanged · conv 1x1 1280 · global average pool · fc 1000. 300,774,272 MACs at
  width 1.0 and 224x224 (the paper's "300 M").

``googlenet`` — Szegedy et al.'s GoogLeNet / Inception-v1 on 224x224 (LRN and the auxiliary classifiers omitted):
  conv1 7x7/2 64 · maxpool1 · conv2 1x1 64 · conv3 3x3 192 · maxpool2 · inception 3a, 3b · maxpool3 · 4a–4e ·
  maxpool4 · 5a, 5b · global average pool · fc 1024→1000. Every inception module has four branches concatenated
  along channels: ``b1`` 1x1; ``b2.reduce`` 1x1 → ``b2`` 3x3; ``b3.reduce`` 1x1 → ``b3`` 5x5; ``b4.pool`` 3x3/1
  max-pool → ``b4`` 1x1. Max-pools are 3x3 stride 2 with ceil-mode rounding (one row/column of padding at the
  bottom/right). ``variant="original"`` (default) keeps the paper's 5x5 in ``b3``: 1,582,671,872 MACs. The paper's
  "1.5 billion multiply-adds" is the sum of its Table 1 (1,502 M), which lists conv1 at 34 M although a 7x7x3x64
  convolution on a 112x112 output is 118.0 M; with conv1 corrected the table sums to 1,586 M (the inception rows
  match ours to the rounding). ``variant="torchvision"`` uses torchvision's 3x3 in ``b3`` and its 2x2 maxpool4:
  1,498,376,192 MACs.

``mnasnet`` — MnasNet-B1 at depth multiplier 1.0, i.e. torchvision's ``mnasnet1_0`` (no squeeze-and-excitation):
  conv 3x3/2 32 · depthwise 3x3 32 · conv 1x1 16 (linear) · six stacks of inverted residuals
  (out, kernel, stride, expansion, repeats) = (24,3,2,3,3) (40,5,2,3,3) (80,5,2,6,3) (96,3,1,6,2) (192,5,2,6,4)
  (320,3,1,6,1) · conv 1x1 1280 · global average pool · fc 1000. 314,415,872 MACs (convolutions 313,135,872 +
  fc 1,280,000; torchvision quotes 0.31 GFLOPS, i.e. multiply-adds).

``shufflenet-v2`` — Ma et al.'s ShuffleNet V2 at width 1.0 (torchvision ``shufflenet_v2_x1_0``) on 224x224: conv1
  3x3/2 24 · maxpool 3x3/2 (pad 1) · three stages of 4, 8 and 4 units (116, 232, 464 channels) · conv5 1x1 1024 ·
  global average pool · fc 1000. A stage's first unit halves the map: branch 1 is a 3x3/2 depthwise conv and a 1x1
  conv (ReLU) to half the output channels, branch 2 a 1x1 conv (ReLU), a 3x3/2 depthwise conv and a 1x1 conv (ReLU);
  the other units split the channels in two halves and run branch 2 (stride 1) on the second. Each unit concatenates
  its branches and shuffles the channels in two groups (reshape, transpose, reshape). 144,907,992 MACs (convolutions
  143,883,992 + fc 1,024,000); torchvision quotes 0.14 GFLOPS and the paper 146M for ShuffleNet V2 1x (1 % more,
  not itemised there).

``squeezenet`` — Iandola et al.'s SqueezeNet as in torchvision, no padding on conv1, 3x3/2 max-pools with ceil-mode
  rounding. A fire module is ``squeeze`` 1x1 → ``expand1x1`` 1x1 and ``expand3x3`` 3x3 (pad 1), concatenated;
  fire2–fire9 have (squeeze, expand) = (16, 64) x2 · (32, 128) x2 · (48, 192) x2 · (64, 256) x2 · conv10 1x1 to
  the classes (ReLU) · global average pool. ``variant="1.1"`` (default): conv1 3x3/2 64, max-pools after conv1,
  fire3 and fire5; 349,151,936 MACs (torchvision: 0.35 GFLOPS). ``variant="1.0"``: conv1 7x7/2 96, max-pools
  after conv1, fire4 and fire8; 818,924,576 MACs (0.82 GFLOPS). torchvision counts 1,235,496 (1.1) and 1,248,424
  (1.0) parameters; the workload holds their kernel weights only (1,231,552 and 1,244,448), biases not modelled.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlaopt.workload import NetworkBuilder, Workload
from dlaopt.zoo._common import ZOO, check_choice, conv_unit, make_divisible, new_builder, residual_block


def _classifier_head(b: NetworkBuilder, x: str, num_classes: int) -> str:
    x = b.global_pool(x, "avg", name="avgpool")
    x = b.flatten(x, name="flatten")
    return b.linear(x, num_classes, name="fc")


# ------------------------------------------------------------------------------------------------------- AlexNet
@ZOO.register("alexnet", "AlexNet: original two-tower (grouped conv2/4/5, 227x227) or torchvision single-tower")
def alexnet(*, batch: int = 1, dtype_bytes: int = 2, variant: str = "original", num_classes: int = 1000) -> Workload:
    check_choice("variant", variant, ("original", "torchvision"))
    b = new_builder("alexnet", batch=batch, dtype_bytes=dtype_bytes, variant=variant, num_classes=num_classes)
    if variant == "original":
        x = b.input("input", (batch, 3, 227, 227))
        x = b.conv2d(x, 96, 11, stride=4, activation="relu", name="conv1")
        x = b.pool(x, "max", 3, stride=2, name="pool1")
        x = b.conv2d(x, 256, 5, padding=2, groups=2, activation="relu", name="conv2")
        x = b.pool(x, "max", 3, stride=2, name="pool2")
        x = b.conv2d(x, 384, 3, padding=1, activation="relu", name="conv3")
        x = b.conv2d(x, 384, 3, padding=1, groups=2, activation="relu", name="conv4")
        x = b.conv2d(x, 256, 3, padding=1, groups=2, activation="relu", name="conv5")
    else:
        x = b.input("input", (batch, 3, 224, 224))
        x = b.conv2d(x, 64, 11, stride=4, padding=2, activation="relu", name="conv1")
        x = b.pool(x, "max", 3, stride=2, name="pool1")
        x = b.conv2d(x, 192, 5, padding=2, activation="relu", name="conv2")
        x = b.pool(x, "max", 3, stride=2, name="pool2")
        x = b.conv2d(x, 384, 3, padding=1, activation="relu", name="conv3")
        x = b.conv2d(x, 256, 3, padding=1, activation="relu", name="conv4")
        x = b.conv2d(x, 256, 3, padding=1, activation="relu", name="conv5")
    x = b.pool(x, "max", 3, stride=2, name="pool5")
    x = b.flatten(x, name="flatten")
    x = b.linear(x, 4096, activation="relu", name="fc6")
    x = b.linear(x, 4096, activation="relu", name="fc7")
    x = b.linear(x, num_classes, name="fc8")
    return b.build(outputs=[x])


# ------------------------------------------------------------------------------------------------------- VGG-16
VGG16_CONVS: tuple[tuple[int, ...], ...] = ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512))


@ZOO.register("vgg16", "VGG-16 (configuration D) on 224x224: 13 3x3 convs, 5 max-pools, 3 FCs")
def vgg16(*, batch: int = 1, dtype_bytes: int = 2, num_classes: int = 1000) -> Workload:
    b = new_builder("vgg16", batch=batch, dtype_bytes=dtype_bytes, num_classes=num_classes)
    x = b.input("input", (batch, 3, 224, 224))
    for g, group in enumerate(VGG16_CONVS, start=1):
        for i, channels in enumerate(group, start=1):
            x = b.conv2d(x, channels, 3, padding=1, activation="relu", name=f"conv{g}_{i}")
        x = b.pool(x, "max", 2, name=f"pool{g}")
    x = b.flatten(x, name="flatten")
    x = b.linear(x, 4096, activation="relu", name="fc6")
    x = b.linear(x, 4096, activation="relu", name="fc7")
    x = b.linear(x, num_classes, name="fc8")
    return b.build(outputs=[x])


# ------------------------------------------------------------------------------------------------------- ResNets
RESNET50_VARIANTS = ("v1.5", "v1")


def _resnet(name: str, bottleneck: bool, blocks: Sequence[int], batch: int, dtype_bytes: int, image_size: int,
            num_classes: int, variant: str | None = None, fused: bool = True) -> Workload:
    """``variant`` (bottleneck ResNets only) is "v1.5" (stride on the 3x3) or "v1" (stride on the first 1x1);
    ``fused=False`` keeps batch norms and ReLUs as operators of their own (:func:`conv_unit`)."""
    params: dict[str, object] = {"batch": batch, "dtype_bytes": dtype_bytes}
    if variant is not None:
        params["variant"] = variant
    if not fused:
        params["fused"] = False
    b = new_builder(name, **params, image_size=image_size, num_classes=num_classes)
    x = b.input("input", (batch, 3, image_size, image_size))
    x = conv_unit(b, x, 64, 7, stride=2, padding=3, relu=True, fused=fused, name="conv1")
    x = b.pool(x, "max", 3, stride=2, padding=1, name="maxpool")
    in_ch = 64
    for stage, (width, n) in enumerate(zip((64, 128, 256, 512), blocks, strict=True), start=1):
        for i in range(n):
            stride = 2 if stage > 1 and i == 0 else 1
            if not bottleneck:
                convs = [(width, 3, stride), (width, 3, 1)]
            elif variant == "v1":  # He et al. / Caffe: the stride sits on the first 1x1 convolution
                convs = [(width, 1, stride), (width, 3, 1), (4 * width, 1, 1)]
            else:  # v1.5: the stride sits on the 3x3 convolution of a bottleneck
                convs = [(width, 1, 1), (width, 3, stride), (4 * width, 1, 1)]
            x = residual_block(b, x, in_ch, convs, f"layer{stage}.{i}", fused=fused)
            in_ch = convs[-1][0]
    return b.build(outputs=[_classifier_head(b, x, num_classes)])


@ZOO.register("resnet18", "ResNet-18 (basic blocks [2,2,2,2]) on 224x224, BN folded, residual add + ReLU fused")
def resnet18(*, batch: int = 1, dtype_bytes: int = 2, image_size: int = 224, num_classes: int = 1000) -> Workload:
    return _resnet("resnet18", False, (2, 2, 2, 2), batch, dtype_bytes, image_size, num_classes)


@ZOO.register("resnet50", "ResNet-50 (bottlenecks [3,4,6,3]) on 224x224, BN folded: v1.5 (stride on the 3x3, "
                          "default) or v1 (stride on the first 1x1)")
def resnet50(*, batch: int = 1, dtype_bytes: int = 2, variant: str = "v1.5", image_size: int = 224,
             num_classes: int = 1000, fused: bool = True) -> Workload:
    check_choice("variant", variant, RESNET50_VARIANTS)
    return _resnet("resnet50", True, (3, 4, 6, 3), batch, dtype_bytes, image_size, num_classes, variant, fused)


# ------------------------------------------------------------------------------------------------------- MobileNet-V2
_MOBILENET_V2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                          (6, 320, 1, 1))


def _inverted_residual(b: NetworkBuilder, x: str, out_ch: int, kernel: int, stride: int, expansion: int,
                       activation: str, prefix: str) -> str:
    in_ch = b.shape(x)[1]
    y = x
    if expansion != 1:
        y = b.conv2d(y, in_ch * expansion, 1, activation=activation, name=f"{prefix}.expand")
    y = b.depthwise_conv2d(y, kernel, stride=stride, padding=kernel // 2, activation=activation, name=f"{prefix}.dw")
    y = b.conv2d(y, out_ch, 1, name=f"{prefix}.project")
    if stride == 1 and in_ch == out_ch:
        y = b.add(y, x, name=f"{prefix}.add")
    return y


@ZOO.register("mobilenet-v2", "MobileNet-V2 (width 1.0, 224x224): inverted residuals with depthwise convs, ReLU6")
def mobilenet_v2(*, batch: int = 1, dtype_bytes: int = 2, width_mult: float = 1.0, image_size: int = 224,
                 num_classes: int = 1000) -> Workload:
    b = new_builder("mobilenet-v2", batch=batch, dtype_bytes=dtype_bytes, width_mult=width_mult,
                    image_size=image_size, num_classes=num_classes)
    x = b.input("input", (batch, 3, image_size, image_size))
    x = b.conv2d(x, make_divisible(32 * width_mult), 3, stride=2, padding=1, activation="relu6", name="conv1")
    block = 1
    for t, c, n, s in _MOBILENET_V2_SETTINGS:
        for i in range(n):
            x = _inverted_residual(b, x, make_divisible(c * width_mult), 3, s if i == 0 else 1, t, "relu6",
                                   f"block{block}")
            block += 1
    x = b.conv2d(x, make_divisible(1280 * max(1.0, width_mult)), 1, activation="relu6", name="conv_last")
    return b.build(outputs=[_classifier_head(b, x, num_classes)])


# ------------------------------------------------------------------------------------------------------- GoogLeNet
# name, (1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection)
_INCEPTION: tuple[tuple[str, tuple[int, int, int, int, int, int]], ...] = (
    ("3a", (64, 96, 128, 16, 32, 32)),
    ("3b", (128, 128, 192, 32, 96, 64)),
    ("4a", (192, 96, 208, 16, 48, 64)),
    ("4b", (160, 112, 224, 24, 64, 64)),
    ("4c", (128, 128, 256, 24, 64, 64)),
    ("4d", (112, 144, 288, 32, 64, 64)),
    ("4e", (256, 160, 320, 32, 128, 128)),
    ("5a", (256, 160, 320, 32, 128, 128)),
    ("5b", (384, 192, 384, 48, 128, 128)),
)
_CEIL_PAD = (0, 0, 1, 1)  # a 3x3/2 max-pool with ceil-mode rounding on an even input


def _inception(b: NetworkBuilder, x: str, name: str, cfg: tuple[int, int, int, int, int, int], b3_kernel: int) -> str:
    c1, c3r, c3, c5r, c5, cp = cfg
    p = f"inception{name}"
    b1 = b.conv2d(x, c1, 1, activation="relu", name=f"{p}.b1")
    b2 = b.conv2d(x, c3r, 1, activation="relu", name=f"{p}.b2.reduce")
    b2 = b.conv2d(b2, c3, 3, padding=1, activation="relu", name=f"{p}.b2")
    b3 = b.conv2d(x, c5r, 1, activation="relu", name=f"{p}.b3.reduce")
    b3 = b.conv2d(b3, c5, b3_kernel, padding=b3_kernel // 2, activation="relu", name=f"{p}.b3")
    b4 = b.pool(x, "max", 3, stride=1, padding=1, name=f"{p}.b4.pool")
    b4 = b.conv2d(b4, cp, 1, activation="relu", name=f"{p}.b4")
    return b.concat([b1, b2, b3, b4], axis=1, name=f"{p}.concat")


@ZOO.register("googlenet", "GoogLeNet / Inception-v1 on 224x224: 9 four-branch inception modules (LRN, aux omitted)")
def googlenet(*, batch: int = 1, dtype_bytes: int = 2, variant: str = "original", image_size: int = 224,
              num_classes: int = 1000) -> Workload:
    check_choice("variant", variant, ("original", "torchvision"))
    b = new_builder("googlenet", batch=batch, dtype_bytes=dtype_bytes, variant=variant, image_size=image_size,
                    num_classes=num_classes)
    b3_kernel = 5 if variant == "original" else 3
    x = b.input("input", (batch, 3, image_size, image_size))
    x = b.conv2d(x, 64, 7, stride=2, padding=3, activation="relu", name="conv1")
    x = b.pool(x, "max", 3, stride=2, padding=_CEIL_PAD, name="maxpool1")
    x = b.conv2d(x, 64, 1, activation="relu", name="conv2")
    x = b.conv2d(x, 192, 3, padding=1, activation="relu", name="conv3")
    x = b.pool(x, "max", 3, stride=2, padding=_CEIL_PAD, name="maxpool2")
    for name, cfg in _INCEPTION:
        if name == "4a":
            x = b.pool(x, "max", 3, stride=2, padding=_CEIL_PAD, name="maxpool3")
        elif name == "5a" and variant == "original":
            x = b.pool(x, "max", 3, stride=2, padding=_CEIL_PAD, name="maxpool4")
        elif name == "5a":
            x = b.pool(x, "max", 2, stride=2, name="maxpool4")
        x = _inception(b, x, name, cfg, b3_kernel)
    return b.build(outputs=[_classifier_head(b, x, num_classes)])


# ------------------------------------------------------------------------------------------------------- MnasNet
# out channels, kernel, first stride, expansion, repeats
_MNASNET_B1_STACKS = ((24, 3, 2, 3, 3), (40, 5, 2, 3, 3), (80, 5, 2, 6, 3), (96, 3, 1, 6, 2), (192, 5, 2, 6, 4),
                      (320, 3, 1, 6, 1))


@ZOO.register("mnasnet", "MnasNet-B1 1.0 (torchvision mnasnet1_0) on 224x224: inverted residuals, depthwise convs")
def mnasnet(*, batch: int = 1, dtype_bytes: int = 2, image_size: int = 224, num_classes: int = 1000) -> Workload:
    b = new_builder("mnasnet", batch=batch, dtype_bytes=dtype_bytes, image_size=image_size, num_classes=num_classes)
    x = b.input("input", (batch, 3, image_size, image_size))
    x = b.conv2d(x, 32, 3, stride=2, padding=1, activation="relu", name="stem.conv")
    x = b.depthwise_conv2d(x, 3, padding=1, activation="relu", name="stem.dw")
    x = b.conv2d(x, 16, 1, name="stem.project")
    for s, (out_ch, kernel, stride, expansion, repeats) in enumerate(_MNASNET_B1_STACKS, start=1):
        for i in range(repeats):
            x = _inverted_residual(b, x, out_ch, kernel, stride if i == 0 else 1, expansion, "relu",
                                   f"stack{s}.{i}")
    x = b.conv2d(x, 1280, 1, activation="relu", name="head.conv")
    return b.build(outputs=[_classifier_head(b, x, num_classes)])


# ------------------------------------------------------------------------------------------------------- SqueezeNet
# name, (squeeze, expand 1x1, expand 3x3); a 3x3/2 ceil-mode max-pool follows conv1 and the fires listed per variant
_FIRES: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("fire2", (16, 64, 64)),
    ("fire3", (16, 64, 64)),
    ("fire4", (32, 128, 128)),
    ("fire5", (32, 128, 128)),
    ("fire6", (48, 192, 192)),
    ("fire7", (48, 192, 192)),
    ("fire8", (64, 256, 256)),
    ("fire9", (64, 256, 256)),
)
# variant: (conv1 filters, conv1 kernel, fire modules followed by a max-pool)
_SQUEEZENET_VARIANTS: dict[str, tuple[int, int, tuple[str, ...]]] = {
    "1.1": (64, 3, ("fire3", "fire5")),
    "1.0": (96, 7, ("fire4", "fire8")),
}


def _ceil_max_pool(b: NetworkBuilder, x: str, kernel: int, stride: int, name: str) -> str:
    """A max-pool with PyTorch's ceil-mode rounding: extra bottom/right padding so a partial last window counts
    (but never a window that starts in the padding)."""

    def extra(size: int) -> int:
        out = -(-(size - kernel) // stride) + 1
        if (out - 1) * stride >= size:
            out -= 1
        return max(0, (out - 1) * stride + kernel - size)

    _, _, h, w = b.shape(x)
    return b.pool(x, "max", kernel, stride=stride, padding=(0, 0, extra(h), extra(w)), name=name)


def _fire(b: NetworkBuilder, x: str, name: str, cfg: tuple[int, int, int]) -> str:
    squeeze, e1, e3 = cfg
    s = b.conv2d(x, squeeze, 1, activation="relu", name=f"{name}.squeeze")
    y1 = b.conv2d(s, e1, 1, activation="relu", name=f"{name}.expand1x1")
    y3 = b.conv2d(s, e3, 3, padding=1, activation="relu", name=f"{name}.expand3x3")
    return b.concat([y1, y3], axis=1, name=f"{name}.concat")


@ZOO.register("squeezenet", "SqueezeNet 1.1 (default) or 1.0 on 224x224: fire modules (squeeze 1x1, expand 1x1 + "
                            "3x3, concat), conv10 to the classes, global average pool")
def squeezenet(*, batch: int = 1, dtype_bytes: int = 2, variant: str = "1.1", image_size: int = 224,
               num_classes: int = 1000) -> Workload:
    check_choice("variant", variant, tuple(_SQUEEZENET_VARIANTS))
    b = new_builder("squeezenet", batch=batch, dtype_bytes=dtype_bytes, variant=variant, image_size=image_size,
                    num_classes=num_classes)
    conv1_ch, conv1_kernel, pool_after = _SQUEEZENET_VARIANTS[variant]
    x = b.input("input", (batch, 3, image_size, image_size))
    x = b.conv2d(x, conv1_ch, conv1_kernel, stride=2, activation="relu", name="conv1")
    x = _ceil_max_pool(b, x, 3, 2, name="maxpool1")
    for name, cfg in _FIRES:
        x = _fire(b, x, name, cfg)
        if name in pool_after:
            x = _ceil_max_pool(b, x, 3, 2, name=f"maxpool{name.removeprefix('fire')}")
    x = b.conv2d(x, num_classes, 1, activation="relu", name="conv10")
    x = b.global_pool(x, "avg", name="avgpool")
    return b.build(outputs=[b.flatten(x, name="flatten")])


# ------------------------------------------------------------------------------------------------------- ShuffleNet V2
_SHUFFLENET_V2_STAGES = ((4, 116), (8, 232), (4, 464))  # (units, output channels) of stages 2-4 at width 1.0


def _channel_shuffle(b: NetworkBuilder, x: str, groups: int, name: str) -> str:
    n, c, h, w = b.shape(x)
    y = b.reshape(x, (n, groups, c // groups, h, w), name=f"{name}.view")
    y = b.transpose(y, (0, 2, 1, 3, 4), name=f"{name}.transpose")
    return b.reshape(y, (n, c, h, w), name=f"{name}")


def _shuffle_unit(b: NetworkBuilder, x: str, out_ch: int, stride: int, prefix: str) -> str:
    half = out_ch // 2
    if stride == 1:
        left, right = b.split(x, [half, half], axis=1, name=f"{prefix}.split")
    else:
        left = b.depthwise_conv2d(x, 3, stride=2, padding=1, name=f"{prefix}.b1.dw")
        left = b.conv2d(left, half, 1, activation="relu", name=f"{prefix}.b1.pw")
        right = x
    y = b.conv2d(right, half, 1, activation="relu", name=f"{prefix}.b2.pw1")
    y = b.depthwise_conv2d(y, 3, stride=stride, padding=1, name=f"{prefix}.b2.dw")
    y = b.conv2d(y, half, 1, activation="relu", name=f"{prefix}.b2.pw2")
    y = b.concat([left, y], axis=1, name=f"{prefix}.concat")
    return _channel_shuffle(b, y, 2, f"{prefix}.shuffle")


@ZOO.register("shufflenet-v2", "ShuffleNet V2 1.0x (torchvision shufflenet_v2_x1_0) on 224x224: channel split, "
                               "depthwise convs, channel shuffle")
def shufflenet_v2(*, batch: int = 1, dtype_bytes: int = 2, image_size: int = 224, num_classes: int = 1000) -> Workload:
    b = new_builder("shufflenet-v2", batch=batch, dtype_bytes=dtype_bytes, image_size=image_size,
                    num_classes=num_classes)
    x = b.input("input", (batch, 3, image_size, image_size))
    x = b.conv2d(x, 24, 3, stride=2, padding=1, activation="relu", name="conv1")
    x = b.pool(x, "max", 3, stride=2, padding=1, name="maxpool")
    for s, (units, out_ch) in enumerate(_SHUFFLENET_V2_STAGES, start=2):
        for i in range(units):
            x = _shuffle_unit(b, x, out_ch, 2 if i == 0 else 1, f"stage{s}.{i}")
    x = b.conv2d(x, 1024, 1, activation="relu", name="conv5")
    return b.build(outputs=[_classifier_head(b, x, num_classes)])
