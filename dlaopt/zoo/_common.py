"""What the zoo modules share: the registry ``ZOO`` they register their networks with, parameter checks, a builder
factory and TensorFlow-style 'same' padding."""

from __future__ import annotations

from dlaopt.registry import Registry
from dlaopt.workload import NetworkBuilder, Workload

ZOO: Registry[Workload] = Registry("zoo network")


def new_builder(name: str, **params: object) -> NetworkBuilder:
    """A :class:`NetworkBuilder` for network ``name``; every integer parameter must be positive.

    ``params`` are the factory's parameters; they are recorded in ``Workload.params`` and must include
    ``dtype_bytes``. Raises ``ValueError`` (which the registry reports as an ``InputError``) on a bad value.
    """
    for key, value in params.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and value <= 0:
            raise ValueError(f"'{key}' must be positive, got {value!r}")
    dtype_bytes = params["dtype_bytes"]
    if not isinstance(dtype_bytes, int):
        raise ValueError(f"'dtype_bytes' must be an integer, got {dtype_bytes!r}")
    return NetworkBuilder(name, dtype_bytes=dtype_bytes, params=params)


def same_padding(kernel: int) -> tuple[int, int, int, int]:
    """Padding (top, left, bottom, right) of a stride-1 'same' convolution, odd padding going bottom/right (TF)."""
    lo = (kernel - 1) // 2
    hi = kernel - 1 - lo
    return (lo, lo, hi, hi)


def check_choice(key: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"'{key}' must be one of {', '.join(choices)}; got {value!r}")


def make_divisible(value: float, divisor: int = 8) -> int:
    """Round a channel count to the nearest multiple of ``divisor``, never going more than 10 % below ``value``."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return rounded


def conv_unit(b: NetworkBuilder, x: str, out_ch: int, kernel: int, *, stride: int = 1, padding: int = 0,
              relu: bool, fused: bool, name: str) -> str:
    """A convolution followed by ReLU (when ``relu``): fused (batch norm folded into the weights, ReLU an attribute
    of the convolution, as inference compilers emit it) or as separate batch-norm and ReLU operators (as a framework
    exports the graph before fusion)."""
    if fused:
        return b.conv2d(x, out_ch, kernel, stride=stride, padding=padding, activation="relu" if relu else None,
                        name=name)
    y = b.conv2d(x, out_ch, kernel, stride=stride, padding=padding, name=name)
    y = b.batchnorm(y, name=f"{name}.bn")
    return b.activation(y, "relu", name=f"{name}.relu") if relu else y


def residual_block(b: NetworkBuilder, x: str, in_ch: int, convs: list[tuple[int, int, int]], prefix: str, *,
                   fused: bool = True) -> str:
    """A residual block: ``convs`` are (out_channels, kernel, stride) of the main path (ReLU after all but the
    last), the shortcut is a strided 1x1 projection when the shape changes, and ReLU follows the add (fused into the
    convolutions and the add, or separate operators with batch norms: :func:`conv_unit`)."""
    y = x
    for i, (out_ch, kernel, stride) in enumerate(convs, start=1):
        y = conv_unit(b, y, out_ch, kernel, stride=stride, padding=kernel // 2, relu=i != len(convs), fused=fused,
                      name=f"{prefix}.conv{i}")
    out_ch = convs[-1][0]
    stride = max(s for _, _, s in convs)
    shortcut = x
    if stride != 1 or in_ch != out_ch:
        shortcut = conv_unit(b, x, out_ch, 1, stride=stride, relu=False, fused=fused, name=f"{prefix}.downsample")
    if fused:
        return b.add(y, shortcut, activation="relu", name=f"{prefix}.add")
    return b.activation(b.add(y, shortcut, name=f"{prefix}.add"), "relu", name=f"{prefix}.relu")
