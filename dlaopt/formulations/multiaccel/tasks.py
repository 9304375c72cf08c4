"""Job groups of MAGMA's four task types (seed 001, §7.3.1): Vision, Language, Recommendation and Mix.

A **job** is one conv2d / depthwise conv / matmul operator of a tenant network run on a batch ("a batch of
activations and the weight parameters of a layer"). The tasks' networks come from the zoo, built with 1-byte words
(the seed's bit width):

* ``vision`` — ``resnet50``, ``mobilenet-v2``, ``mnasnet``, ``squeezenet``, ``googlenet``;
* ``language`` — ``bert-base`` (sequence 128), ``gpt2`` (sequence 1024);
* ``recommendation`` — ``dlrm``, ``wide-deep``, ``ncf``;
* ``mix`` — all ten.

``batch`` is the batch every network is built with, **1** by default: the per-job figures of the seed's Fig. 7.6
match batch 1 (e.g. Wide&Deep's average no-stall latency on a 64x64 HB array is 2.8e2 cycles there and 1.2e2 cycles
here at batch 1, against 7.7e3 at batch 64), and at batch 1 the recommendation MLPs stream their weights, which makes
them the bandwidth-hungry jobs of the Mix task as in the seed. ``batch=None`` builds each network with its zoo default
instead (64 for the recommendation models, see :mod:`dlaopt.zoo.recommendation`; 1 for the others).

**Drawing a group** (:func:`job_group`), deterministic for a ``seed`` (``numpy.random.default_rng``): every network
of the task is a stream of requests, each running the network's mappable layers in order; a network's stream starts
at a random layer. Each of the ``group_size`` draws picks a network uniformly at random and takes the next layer of
its stream; after the last layer a new request (instance) of the network begins. So the tenants are interleaved, the
networks are equally represented whatever their depth (small recommendation networks recur as several instances),
and within an instance the jobs are consecutive layers in layer order. The group is dependency-free, as in MAGMA
(and AI-MT); :func:`precedence_pairs` gives the optional per-instance layer chains a Herald-style user needs.

Job names are ``network/layer`` for a network's first instance in the group and ``network#k/layer`` for the k-th
further one (``dlrm#1/top.fc2``), so they are unique within a group.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from dlaopt.formulations.mapping.loopnest import LoopNest, is_mappable, loopnest_from_operator

TASKS: dict[str, tuple[str, ...]] = {
    "vision": ("resnet50", "mobilenet-v2", "mnasnet", "squeezenet", "googlenet"),
    "language": ("bert-base", "gpt2"),
    "recommendation": ("dlrm", "wide-deep", "ncf"),
}
TASKS["mix"] = TASKS["vision"] + TASKS["language"] + TASKS["recommendation"]

DTYPE_BYTES = 1  # seed 001 §7.3.1: bit-width of 1 byte
DEFAULT_GROUP_SIZE = 100  # seed 001 §7.3.1


@dataclass(frozen=True)
class JobSpec:
    """One job: layer ``layer`` (operator ``index`` of the network's operator list) of request ``instance`` of
    network ``tenant``, with its MACs and loop nest."""

    name: str
    tenant: str
    instance: int
    layer: str
    index: int
    macs: int
    nest: LoopNest

    @property
    def ops(self) -> int:
        """Operations: two per MAC."""
        return 2 * self.macs


@cache
def network_layers(network: str, batch: int | None = None, dtype_bytes: int = DTYPE_BYTES
                   ) -> tuple[tuple[int, str, LoopNest], ...]:
    """``(operator index, operator name, loop nest)`` of every mappable layer of zoo network ``network``, in layer
    order (``batch=None``: the network's default batch). Cached per process."""
    from dlaopt.zoo import ZOO

    params: dict[str, object] = {"dtype_bytes": dtype_bytes}
    if batch is not None:
        params["batch"] = batch
    wl = ZOO.create(network, params)
    return tuple((i, op.name, loopnest_from_operator(wl, op)) for i, op in enumerate(wl.operators)
                 if is_mappable(op))


def task_networks(task: str) -> tuple[str, ...]:
    if task not in TASKS:
        raise ValueError(f"unknown task '{task}' (expected one of {', '.join(TASKS)})")
    return TASKS[task]


def task_jobs(task: str, *, batch: int | None = 1, dtype_bytes: int = DTYPE_BYTES) -> list[JobSpec]:
    """Every job of the task once: each network's mappable layers in order, networks in the task's order."""
    out = []
    for net in task_networks(task):
        for index, layer, nest in network_layers(net, batch, dtype_bytes):
            out.append(JobSpec(f"{net}/{layer}", net, 0, layer, index, nest.real_macs, nest))
    return out


def job_group(task: str, *, group_size: int = DEFAULT_GROUP_SIZE, seed: int = 0, batch: int | None = 1,
              dtype_bytes: int = DTYPE_BYTES) -> list[JobSpec]:
    """A dependency-free group of ``group_size`` jobs of ``task`` drawn as the module docstring describes."""
    nets = task_networks(task)
    if group_size < 1:
        raise ValueError(f"group_size must be positive, got {group_size}")
    if batch is not None and batch < 1:
        raise ValueError(f"batch must be positive, got {batch}")
    layers = [network_layers(net, batch, dtype_bytes) for net in nets]
    rng = np.random.default_rng(seed)
    cursor = [int(rng.integers(len(ls))) for ls in layers]
    instance = [0] * len(nets)
    jobs: list[JobSpec] = []
    for pick in rng.integers(len(nets), size=group_size):
        n = int(pick)
        net, (index, layer, nest) = nets[n], layers[n][cursor[n]]
        prefix = net if instance[n] == 0 else f"{net}#{instance[n]}"
        jobs.append(JobSpec(f"{prefix}/{layer}", net, instance[n], layer, index, nest.real_macs, nest))
        cursor[n] += 1
        if cursor[n] == len(layers[n]):
            cursor[n] = 0
            instance[n] += 1
    return jobs


def precedence_pairs(jobs: list[JobSpec]) -> list[tuple[int, int]]:
    """``(before, after)`` positions in ``jobs``: consecutive jobs of the same request (tenant and instance) in layer
    order."""
    chains: dict[tuple[str, int], list[int]] = {}
    for k, j in enumerate(jobs):
        chains.setdefault((j.tenant, j.instance), []).append(k)
    out = []
    for ks in chains.values():
        ks.sort(key=lambda k: jobs[k].index)
        out.extend(zip(ks, ks[1:], strict=False))
    return sorted(out)


__all__ = ["DEFAULT_GROUP_SIZE", "DTYPE_BYTES", "TASKS", "JobSpec", "job_group", "network_layers",
           "precedence_pairs", "task_jobs", "task_networks"]
