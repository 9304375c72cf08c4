"""A network as DeepOpt evaluates it: its convolution and FC layers, in order, as :class:`SystolicLayer` s.

* A convolution with ``g`` groups is one group's convolution counted ``g`` times (seed 003 evaluates AlexNet's
  two-tower conv2, conv4 and conv5 at half size and doubles the result).
* An FC layer is run on a batch of ``fc_batch`` images as a 1×1 convolution whose output row is the batch
  (``E = 1``, ``G = batch``); its cycles and accesses are divided by the batch to give per-image figures.
* The input extent a layer reads is what its outputs need, ``(E−1)·U + R`` (the reference's ResNet-50 data uses
  exactly this, e.g. 229 for the 7×7/2 stem and 55 for a 1×1/2 layer on a 56×56 map).
"""

from __future__ import annotations

from dataclasses import dataclass

from dlaopt.errors import InputError
from dlaopt.formulations.systolic.counts import ConvShape
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import OpKind


@dataclass(frozen=True)
class SystolicLayer:
    """One layer: its (per-group) convolution, how many identical copies run (``count``), and the batch it is run on
    (``batch > 1`` only for FC layers, whose figures are then per image)."""

    shape: ConvShape
    count: int = 1
    batch: int = 1
    fc: bool = False

    @property
    def name(self) -> str:
        return self.shape.name

    @property
    def macs(self) -> int:
        """MACs per image of the whole layer (all copies)."""
        return self.shape.macs * self.count // self.batch


def network_layers(workload: Workload, *, fc_batch: int = 16) -> list[SystolicLayer]:
    """The workload's conv2d, depthwise and matmul (FC) layers in topological order."""
    if fc_batch < 1:
        raise InputError(f"fc_batch must be a positive integer, got {fc_batch}", path=("options", "fc_batch"))
    layers: list[SystolicLayer] = []
    for op in workload.operators:  # listed in schedule order
        if op.kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
            d = op.dims
            shape = ConvShape(op.name, R=d["R"], S=d["S"], C=d["C"], E=d["P"], G=d["Q"], F=d["K"],
                              U=int(op.attrs["stride"][0]))
            layers.append(SystolicLayer(shape, count=d["G"] * d["N"]))
        elif op.kind == OpKind.MATMUL:
            d = op.dims
            copies = d["B"] * d["M"]
            shape = ConvShape(op.name, R=1, S=1, C=d["K"], E=1, G=fc_batch, F=d["N"], U=1)
            layers.append(SystolicLayer(shape, count=copies, batch=fc_batch, fc=True))
    if not layers:
        raise InputError("the workload has no convolution or FC layer to schedule", path=("workload",))
    return layers
