"""The thesis' SMAUG models (seed 000, sections 5.1 and 6.1): small CNNs and MLPs on MNIST / CIFAR.

The thesis evaluates SMAUG's VGG, LeNet5, Minerva, ResNet, CIFAR-CNN, ELU, Large-ELU and LSTM models (the LSTM
lives in :mod:`dlaopt.zoo.recurrent`). They are reconstructed here from SMAUG's published model descriptions
(``experiments/models`` in the SMAUG repository); SMAUG runs them in fp16, hence ``dtype_bytes=2``. SMAUG fuses
activations into convolutions and matrix multiplies, so the fused ``activation=`` is used everywhere it does.
Shapes are NCHW (SMAUG itself stores NHWC; the layout does not change sizes or MACs). MACs at batch 1:

``cifar-cnn10`` — SMAUG's CIFAR-10 CNN (``cnn_smv``), 32x32x3 input, 'same' padding, 10 compute layers::

    conv0 3x3x32 relu · bn0 · conv1 3x3x32 relu · maxpool0 2x2 · bn1 · conv2 3x3x64 relu · conv3 3x3x64 relu ·
    maxpool1 2x2 · bn2 · flatten 4096 · fc0 512 relu · fc1 10                                 (26,579,968 MACs)

  The batch norms follow the ReLU (and pooling), so they cannot be folded into the preceding convolution; like in
  SMAUG they are separate ``norm`` operators (per-channel scale and shift).

``lenet5`` — ``variant="smaug"`` (default) is SMAUG's "LeNet5" (``lenet5_smv``; the C++ tests call it "2 layers of
  Convs, 1 layer of Pool and 2 layers of FCs"), 28x28x1 input, 'valid' padding::

    conv0 3x3x32 relu · conv1 3x3x32 relu · maxpool0 2x2 · flatten 4608 · fc0 128 relu · fc1 10   (6,094,208 MACs)

  ``variant="classic"`` is LeCun et al.'s LeNet-5 on a 32x32x1 input (tanh, average-pool subsampling, C3 fully
  connected instead of the original partial connection table)::

    conv1 5x5x6 tanh · avgpool 2x2 · conv2 5x5x16 tanh · avgpool 2x2 · flatten 400 · fc1 120 tanh · fc2 84 tanh ·
    fc3 10                                                                                       (416,520 MACs)

``minerva`` — Minerva (Reagen et al.; SMAUG ``minerva_smv``, seed 000 Listing 5.1): 28x28x1 input flattened,
  MLP 784-256-256-256-10 with ReLU on the hidden layers                                          (334,336 MACs)

``elu`` — SMAUG's CIFAR-100 ELU network (``elu_smv``; Clevert et al.'s ELU network), 32x32x3 input, every
  convolution 'same'-padded with a fused ELU, 11 convolutions and 5 max-pools (2x2, stride 2)::

    stack0: conv 5x5x192 · pool | stack1: conv 1x1x192, 3x3x240 · pool | stack2: 1x1x240, 2x2x260 · pool |
    stack3: 1x1x260, 2x2x280 · pool | stack4: 1x1x280, 2x2x300 · pool | stack5: 1x1x300 | stack6: 1x1x100

  A 2x2 'same' convolution pads one row/column at the bottom/right (TensorFlow's convention). 157,530,304 MACs.

``large-elu`` — SMAUG's CIFAR-100 large ELU network (``large_elu_smv``): 19 'same' convolutions with ELU, 5 pools::

    stack0: 3x3x384 · pool | stack1: 1x1x384, 2x2x384, 2x2x640, 2x2x640 · pool |
    stack2: 1x1x640, 2x2x768, 2x2x768, 2x2x768 · pool | stack3: 1x1x768, 2x2x896, 2x2x896 · pool |
    stack4: 3x3x896, 2x2x1024, 2x2x1024 · pool | stack5: 1x1x1024, 2x2x1152 | stack6: 1x1x1152 | stack7: 1x1x100

  1,496,908,288 MACs.

``resnet-cifar`` — He et al.'s CIFAR-10 ResNet (default depth 20 = 6n+2 with n = 3): conv 3x3x16, three stages of
  n basic blocks (3x3 conv + BN + ReLU, 3x3 conv + BN, residual add + ReLU) with 16/32/64 channels at 32/16/8
  pixels, global average pool, fc 10. Batch norm is folded into the convolutions; the shortcuts that change shape
  use a 1x1 stride-2 projection conv (option B; option A's zero padding has no operator here). ResNet-20:
  40,813,184 MACs (40,551,040 with option A's parameter-free shortcuts). Note: SMAUG's own
  "Resnet" model (``imagenet-resnet``) is ImageNet ResNet-50 on a 225x225 input — use ``resnet50`` with
  ``image_size=225`` for that one.

``vgg-cifar`` — SMAUG's CIFAR-10 VGG (``vgg_smv``; "10 Convs, 4 Pools and 2 FCs"), 32x32x3, 3x3 'same' convs::

    conv0 64 · conv1 128 · pool0 · conv2 128 · conv3 128 · pool1 · conv4-6 256 · pool2 · conv7-9 512 · pool3 ·
    flatten 2048 · fc0 512 relu · fc1 10                                                     (342,561,792 MACs)
"""

from __future__ import annotations

from dlaopt.workload import Workload
from dlaopt.zoo._common import ZOO, check_choice, new_builder, residual_block, same_padding


@ZOO.register("cifar-cnn10", "SMAUG's CIFAR-10 CNN: 4 convs, 3 batch norms, 2 max-pools, 2 FCs on 32x32x3 (fp16)")
def cifar_cnn10(*, batch: int = 1, dtype_bytes: int = 2) -> Workload:
    b = new_builder("cifar-cnn10", batch=batch, dtype_bytes=dtype_bytes)
    x = b.input("input", (batch, 3, 32, 32))
    x = b.conv2d(x, 32, 3, padding=1, activation="relu", name="conv0")
    x = b.batchnorm(x, name="bn0")
    x = b.conv2d(x, 32, 3, padding=1, activation="relu", name="conv1")
    x = b.pool(x, "max", 2, name="maxpool0")
    x = b.batchnorm(x, name="bn1")
    x = b.conv2d(x, 64, 3, padding=1, activation="relu", name="conv2")
    x = b.conv2d(x, 64, 3, padding=1, activation="relu", name="conv3")
    x = b.pool(x, "max", 2, name="maxpool1")
    x = b.batchnorm(x, name="bn2")
    x = b.flatten(x, name="flatten")
    x = b.linear(x, 512, activation="relu", name="fc0")
    x = b.linear(x, 10, name="fc1")
    return b.build(outputs=[x])


@ZOO.register("lenet5", "LeNet-5: SMAUG's variant (2 conv 3x3x32, pool, fc 128, fc 10 on 28x28) or the classic one")
def lenet5(*, batch: int = 1, dtype_bytes: int = 2, variant: str = "smaug") -> Workload:
    check_choice("variant", variant, ("smaug", "classic"))
    b = new_builder("lenet5", batch=batch, dtype_bytes=dtype_bytes, variant=variant)
    if variant == "smaug":
        x = b.input("input", (batch, 1, 28, 28))
        x = b.conv2d(x, 32, 3, activation="relu", name="conv0")
        x = b.conv2d(x, 32, 3, activation="relu", name="conv1")
        x = b.pool(x, "max", 2, name="maxpool0")
        x = b.flatten(x, name="flatten")
        x = b.linear(x, 128, activation="relu", name="fc0")
        x = b.linear(x, 10, name="fc1")
    else:
        x = b.input("input", (batch, 1, 32, 32))
        x = b.conv2d(x, 6, 5, activation="tanh", name="conv1")
        x = b.pool(x, "avg", 2, name="pool1")
        x = b.conv2d(x, 16, 5, activation="tanh", name="conv2")
        x = b.pool(x, "avg", 2, name="pool2")
        x = b.flatten(x, name="flatten")
        x = b.linear(x, 120, activation="tanh", name="fc1")
        x = b.linear(x, 84, activation="tanh", name="fc2")
        x = b.linear(x, 10, name="fc3")
    return b.build(outputs=[x])


@ZOO.register("minerva", "Minerva MLP 784-256-256-256-10 on MNIST (seed 000 Listing 5.1)")
def minerva(*, batch: int = 1, dtype_bytes: int = 2) -> Workload:
    b = new_builder("minerva", batch=batch, dtype_bytes=dtype_bytes)
    x = b.input("input", (batch, 1, 28, 28))
    x = b.flatten(x, name="flatten")
    for i in range(3):
        x = b.linear(x, 256, activation="relu", name=f"fc{i}")
    x = b.linear(x, 10, name="fc3")
    return b.build(outputs=[x])


# (stack, [(out_channels, kernel), ...], pool after the stack)
_ELU_STACKS: tuple[tuple[list[tuple[int, int]], bool], ...] = (
    ([(192, 5)], True),
    ([(192, 1), (240, 3)], True),
    ([(240, 1), (260, 2)], True),
    ([(260, 1), (280, 2)], True),
    ([(280, 1), (300, 2)], True),
    ([(300, 1)], False),
    ([(100, 1)], False),
)

_LARGE_ELU_STACKS: tuple[tuple[list[tuple[int, int]], bool], ...] = (
    ([(384, 3)], True),
    ([(384, 1), (384, 2), (640, 2), (640, 2)], True),
    ([(640, 1), (768, 2), (768, 2), (768, 2)], True),
    ([(768, 1), (896, 2), (896, 2)], True),
    ([(896, 3), (1024, 2), (1024, 2)], True),
    ([(1024, 1), (1152, 2)], False),
    ([(1152, 1)], False),
    ([(100, 1)], False),
)


def _elu_network(name: str, stacks: tuple[tuple[list[tuple[int, int]], bool], ...], batch: int,
                 dtype_bytes: int) -> Workload:
    b = new_builder(name, batch=batch, dtype_bytes=dtype_bytes)
    x = b.input("input", (batch, 3, 32, 32))
    for s, (convs, pool) in enumerate(stacks):
        for c, (channels, kernel) in enumerate(convs):
            x = b.conv2d(x, channels, kernel, padding=same_padding(kernel), activation="elu",
                         name=f"conv{c}_stack{s}")
        if pool:
            x = b.pool(x, "max", 2, name=f"pool_stack{s}")
    return b.build(outputs=[x])


@ZOO.register("elu", "SMAUG's CIFAR-100 ELU network: 11 'same' convs with ELU, 5 max-pools")
def elu(*, batch: int = 1, dtype_bytes: int = 2) -> Workload:
    return _elu_network("elu", _ELU_STACKS, batch, dtype_bytes)


@ZOO.register("large-elu", "SMAUG's CIFAR-100 large ELU network: 19 'same' convs with ELU, 5 max-pools")
def large_elu(*, batch: int = 1, dtype_bytes: int = 2) -> Workload:
    return _elu_network("large-elu", _LARGE_ELU_STACKS, batch, dtype_bytes)


@ZOO.register("resnet-cifar", "CIFAR-10 ResNet (depth 6n+2, default ResNet-20): basic blocks at 16/32/64 channels")
def resnet_cifar(*, batch: int = 1, dtype_bytes: int = 2, depth: int = 20, num_classes: int = 10) -> Workload:
    if depth < 8 or (depth - 2) % 6:
        raise ValueError(f"'depth' must be 6n+2 with n >= 1 (8, 14, 20, 32, 44, 56, 110 ...), got {depth}")
    blocks = (depth - 2) // 6
    b = new_builder("resnet-cifar", batch=batch, dtype_bytes=dtype_bytes, depth=depth, num_classes=num_classes)
    x = b.input("input", (batch, 3, 32, 32))
    x = b.conv2d(x, 16, 3, padding=1, activation="relu", name="conv1")
    in_ch = 16
    for stage, channels in enumerate((16, 32, 64), start=1):
        for i in range(blocks):
            stride = 2 if stage > 1 and i == 0 else 1
            x = residual_block(b, x, in_ch, [(channels, 3, stride), (channels, 3, 1)], f"layer{stage}.{i}")
            in_ch = channels
    x = b.global_pool(x, "avg", name="avgpool")
    x = b.flatten(x, name="flatten")
    x = b.linear(x, num_classes, name="fc")
    return b.build(outputs=[x])


@ZOO.register("vgg-cifar", "SMAUG's CIFAR-10 VGG: 10 3x3 convs, 4 max-pools, 2 FCs on 32x32x3")
def vgg_cifar(*, batch: int = 1, dtype_bytes: int = 2) -> Workload:
    b = new_builder("vgg-cifar", batch=batch, dtype_bytes=dtype_bytes)
    x = b.input("input", (batch, 3, 32, 32))
    plan: list[int | str] = [64, 128, "pool", 128, 128, "pool", 256, 256, 256, "pool", 512, 512, 512, "pool"]
    conv = pool = 0
    for item in plan:
        if item == "pool":
            x = b.pool(x, "max", 2, name=f"pool{pool}")
            pool += 1
        else:
            assert isinstance(item, int)
            x = b.conv2d(x, item, 3, padding=1, activation="relu", name=f"conv{conv}")
            conv += 1
    x = b.flatten(x, name="flatten")
    x = b.linear(x, 512, activation="relu", name="fc0")
    x = b.linear(x, 10, name="fc1")
    return b.build(outputs=[x])
