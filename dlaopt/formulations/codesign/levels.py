"""ConfuciuX's design space and platform budgets as data (seed 001, Chapter 8).

**Action levels (Table 8.1, "The level values of action pair").** Every layer's resource assignment is an action
pair (PEs, Buffers), each drawn from ``L = 12`` levels (§8.1.4; Table 8.9 compares ``L`` = 10, 12 and 14 and keeps
12)::

    PEs                           1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128
    Buffers (e.g., NVDLA-style)   19, 29, 39, 49, 59, 69, 79, 89, 99, 109, 119, 129

The PE levels follow the diminishing return of adding PEs. The buffer levels come from the dataflow style; §8.1.4
derives the NVDLA-style ones from a ``3 × 3`` weight kernel: the computation is dispatched to the PEs along K, so a
PE holds ``k`` kernels of ``R·S = 9`` weights, the ``9`` matching inputs and ``k`` outputs, i.e. ``9·k + 9·1 + 1·k``
for ``k = 1, …, 12`` — exactly the row above. The seed names no unit for the buffer (Table 8.8 states FPGA buffer
budgets as "8KB" and "4KB" and reports per-model buffer sums such as 7958 against them, so the unit behaves like
bytes or words), and it gives no buffer levels for the Eyeriss- or ShiDianNao-style dataflows: only the NVDLA-style
rule is encoded here.

**Platform budgets (Table 8.2, "Platform constraint settings").** The budget is a fraction of ``C^max``, the power or
area "measured … by evaluating entire model with uniform action pair ``(p_12th, b_12th)``" — every layer at the top
PE and buffer level::

    Unlimited   no constraint (C^max itself is the reference)
    Cloud       50 % of C^max   (loose)
    IoT         10 % of C^max   (tight)
    IoTx         5 % of C^max   (extremely small IoT)

**FPGA budgets (Table 8.8, LP deployment at compile time).** Two simultaneous caps on the *sums* over layers of the
assigned PEs and buffers: cloud FPGA 4096 PEs and an "8KB" buffer, edge FPGA 256 PEs and a "4KB" buffer (taken here
as 8192 and 4096 buffer units, consistent with the reported sums such as 7958 and 3962).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Table 8.1: the twelve PE levels.
PE_LEVELS: tuple[int, ...] = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128)

#: Table 8.1's number of levels per action (§8.1.4).
N_LEVELS = 12

#: Table 8.2: the budget as a fraction of C^max per platform class.
PLATFORM_FRACTION: dict[str, float] = {"unlimited": 1.0, "cloud": 0.50, "iot": 0.10, "iotx": 0.05}

#: Table 8.8: FPGA caps on the per-model sums of PEs and buffer (the "8KB"/"4KB" read as 8192/4096 units).
FPGA_BUDGETS: dict[str, dict[str, float]] = {
    "cloud_fpga": {"pe": 4096.0, "buffer": 8192.0},
    "edge_fpga": {"pe": 256.0, "buffer": 4096.0},
}

#: The dataflow styles of §8.2.1 (NVDLA-, Eyeriss-, ShiDianNao-style) and what each parallelises.
DATAFLOW_STYLES: dict[str, str] = {"dla": "K and C", "eye": "Y and R", "shi": "Y and X"}


def nvdla_buffer_levels(kernel_r: int = 3, kernel_s: int = 3, levels: int = N_LEVELS) -> tuple[int, ...]:
    """The NVDLA-style buffer levels of §8.1.4: ``R·S·k + R·S + k`` for ``k = 1 … levels`` (a PE holds ``k``
    kernels, one input window and ``k`` outputs). With the default ``3 × 3`` kernel this is Table 8.1's row."""
    if kernel_r < 1 or kernel_s < 1 or levels < 1:
        raise ValueError("kernel sizes and the number of levels must be positive")
    rs = kernel_r * kernel_s
    return tuple(rs * k + rs + k for k in range(1, levels + 1))


#: Table 8.1: the twelve NVDLA-style buffer levels (3 × 3 kernels).
NVDLA_BUFFER_LEVELS: tuple[int, ...] = nvdla_buffer_levels()


def buffer_levels(style: str) -> tuple[int, ...]:
    """Table 8.1's buffer levels for a dataflow style; only the NVDLA style (``"dla"``) is defined by the seed."""
    if style == "dla":
        return NVDLA_BUFFER_LEVELS
    if style in DATAFLOW_STYLES:
        raise ValueError(f"the seed gives no buffer levels for the {style!r} dataflow style (only 'dla')")
    raise ValueError(f"unknown dataflow style {style!r}: use one of {sorted(DATAFLOW_STYLES)}")


@dataclass(frozen=True)
class ActionGrid:
    """The (PE, buffer) design points of one dataflow style: point ``p = i·len(buffers) + j`` is
    ``(pes[i], buffers[j])``. ``top`` is the point ``(p_12th, b_12th)`` that defines ``C^max``."""

    pes: tuple[int, ...]
    buffers: tuple[int, ...]

    @property
    def n_points(self) -> int:
        return len(self.pes) * len(self.buffers)

    @property
    def pe(self) -> np.ndarray:
        """PE count per design point."""
        return np.repeat(np.asarray(self.pes, dtype=np.int64), len(self.buffers))

    @property
    def buffer(self) -> np.ndarray:
        """Buffer size per design point."""
        return np.tile(np.asarray(self.buffers, dtype=np.int64), len(self.pes))

    @property
    def top(self) -> int:
        return self.n_points - 1

    def index(self, pe_level: int, buffer_level: int) -> int:
        """The point of ``(pes[pe_level], buffers[buffer_level])`` (0-based levels)."""
        if not (0 <= pe_level < len(self.pes) and 0 <= buffer_level < len(self.buffers)):
            raise ValueError("level out of range")
        return pe_level * len(self.buffers) + buffer_level


def action_grid(style: str = "dla") -> ActionGrid:
    """Table 8.1's 12 × 12 grid of action pairs for ``style``."""
    return ActionGrid(PE_LEVELS, buffer_levels(style))


def max_consumption(use: np.ndarray, top: int, deployment: str, n_layers: int | None = None) -> float:
    """Table 8.2's ``C^max`` for a resource table (``use[l, p]``, or ``use[p]`` with ``n_layers``): every layer at
    the top point. In LP deployment the layers hold their resources side by side, so it is the sum over layers; in LS
    deployment one accelerator runs every layer, so it is the top point's consumption (its peak over layers)."""
    arr = np.asarray(use, dtype=np.float64)
    if arr.ndim == 1:
        if n_layers is None:
            raise ValueError("a per-point resource table needs n_layers")
        arr = np.broadcast_to(arr, (n_layers, arr.size))
    if arr.ndim != 2:
        raise ValueError("use must be [points] or [layers, points]")
    column = arr[:, top]
    if deployment == "lp":
        return float(column.sum())
    if deployment == "ls":
        return float(column.max())
    raise ValueError(f"unknown deployment {deployment!r}: use 'ls' or 'lp'")


def platform_budget(c_max: float, platform: str) -> float:
    """Table 8.2's budget for ``platform`` (``unlimited``, ``cloud``, ``iot``, ``iotx``) given ``C^max``."""
    try:
        return PLATFORM_FRACTION[platform] * float(c_max)
    except KeyError:
        raise ValueError(f"unknown platform {platform!r}: use one of {sorted(PLATFORM_FRACTION)}") from None
