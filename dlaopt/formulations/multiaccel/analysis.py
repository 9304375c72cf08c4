"""The job analyzer (seed 001, §7.1.4): no-stall latency and no-stall bandwidth of every job on every sub-accelerator.

For each (job, sub-accelerator) pair the layer's loop nest is mapped onto the sub-accelerator with dlaopt's own
mapping cost model (:mod:`dlaopt.formulations.mapping`), using the fixed dataflow of the sub-accelerator's style —
``params["dataflow"]`` of a :mod:`dlaopt.hardware.platforms` sub-accelerator: ``"nvdla"`` for HB (channels across
the array), ``"activation"`` for LB (output rows and columns across the array — a matmul's token and batch rows
only, so a batch-1 FC layer has no parallelism, as the seed's Fig. 7.6 shows for LB):

* **mapping** — :func:`dlaopt.formulations.mapping.heuristics.dataflow`: the template fixes the spatial factors (the
  largest divisors that fit the array) and the loop orders, then the greedy tiler moves temporal factors inwards from
  DRAM one prime at a time while the objective improves. The objective is **EDP** (:data:`OBJECTIVE`): the DRAM has
  unlimited bandwidth in this analysis, so a latency objective cannot see DRAM traffic and leaves it arbitrary (its
  tiles moved 40-90x the DRAM bytes of the EDP tiles on ResNet-50's early layers), while EDP minimises the data
  movement (DRAM energy dominates) without letting on-chip traffic outgrow the compute; energy-only tiles give the
  same averages to 1 %. The cheaper ``dataflow_mapping`` + ``fit_capacity`` alone keeps every temporal loop at DRAM
  (no reuse in the buffers at all), and filling the buffers first and repairing with ``fit_capacity`` cuts spatial
  factors of the LB template (up to 4x the cycles), so the greedy is used: 10-25 ms per (layer shape,
  sub-accelerator configuration), about 3 s for a cold 100-job Mix group on ``magma-s6`` (4 configurations).
* **padding** — the cost model factorizes loop bounds exactly, so a prime bound cannot be spread over the array
  (DLRM's 479-wide top layer would run on one row: 30-60x slower); MAESTRO, the seed's cost model, runs edge tiles
  instead. Every layer is therefore also profiled with its bounds of at least 16 rounded up to a multiple of 16
  (:func:`padded_nest`; the padded iterations are wasted work and the padded operands are moved) and the faster of
  the two is kept.
* **no-stall latency** = the cost model's latency in cycles over the clock. With unlimited DRAM bandwidth it is
  ``max(compute cycles, on-chip transfer cycles)``; on the platforms' sub-accelerators that is the compute cycles
  (temporal iterations of the spatial mapping) to within 2.5 % for every zoo layer.
* **no-stall bandwidth** = the bytes the mapping moves at the DRAM level (reads of inputs and weights, writes and
  re-reads of outputs / partial sums: :attr:`CostReport.accesses` at the outermost level, times the word size) over
  the no-stall latency — the least bandwidth that keeps the job compute-bound when its traffic is spread evenly.

Results are cached per (layer shape, sub-accelerator configuration, objective): in memory for the process and, with
``cache_dir``, in the JSON file ``multiaccel-jobs.json`` there. A key hashes the loop nest's shape key, the mapping
view of the sub-accelerator (every level's capacity, bandwidth, energy and fanout, the clock; not its name), the
dataflow, the objective and a digest of the source files of the cost model, the mapper and this module, so
changing any input — or the model itself — misses the cache instead of returning a stale entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from dlaopt.formulations.mapping import arch as arch_module
from dlaopt.formulations.mapping import cost as cost_module
from dlaopt.formulations.mapping import heuristics as heuristics_module
from dlaopt.formulations.mapping import loopnest as loopnest_module
from dlaopt.formulations.mapping import mapping as mapping_module
from dlaopt.formulations.mapping.arch import MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import dataflow
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.multiaccel.model import JobTable
from dlaopt.formulations.multiaccel.tasks import JobSpec
from dlaopt.hardware.model import Accelerator, Platform

OBJECTIVE = "edp"  # the greedy tiler's objective (see the module docstring)
PAD_MULTIPLE = 16  # dimensions of at least this size may be padded to a multiple of it (see the module docstring)
CACHE_FILE = "multiaccel-jobs.json"
_METHOD = "dataflow-greedy-pad16-v2"  # bump when this module changes how a profile is computed


@dataclass(frozen=True)
class JobProfile:
    """One job on one sub-accelerator configuration: the no-stall cycles, the compute cycles (temporal iterations),
    the bytes moved at DRAM and the energy of the mapping (pJ, DRAM accesses included)."""

    cycles: float
    compute_cycles: int
    dram_bytes: int
    energy_pj: float

    def latency(self, clock_hz: float) -> float:
        """No-stall latency in seconds."""
        return self.cycles / clock_hz

    def bandwidth(self, clock_hz: float) -> float:
        """No-stall bandwidth in bytes per second."""
        return self.dram_bytes / self.latency(clock_hz)


def accelerator_dataflow(acc: Accelerator) -> str:
    """The mapping template of a sub-accelerator: ``params["dataflow"]``, else from ``params["style"]`` (HB →
    nvdla, LB → activation)."""
    flow = acc.params.get("dataflow")
    if flow is None:
        style = acc.params.get("style")
        flow = {"HB": "nvdla", "LB": "activation"}.get(str(style))
    if flow is None:
        raise ValueError(f"sub-accelerator '{acc.name}' names no dataflow (params 'dataflow' or 'style' HB/LB)")
    return str(flow)


def config_key(acc: Accelerator) -> str:
    """What the analysis of ``acc`` depends on: its mapping view without its name, its dataflow and its clock."""
    arch = replace(arch_from_accelerator(acc), name="")
    return repr((arch, accelerator_dataflow(acc)))


@cache
def _model_digest() -> str:
    h = hashlib.sha256(_METHOD.encode())
    files = [Path(str(m.__file__)) for m in (arch_module, cost_module, heuristics_module, loopnest_module,
                                             mapping_module)]
    for f in [*files, Path(__file__)]:
        h.update(f.read_bytes())
    return h.hexdigest()


def profile_key(nest: LoopNest, config: str, objective: str = OBJECTIVE) -> str:
    """The persistent cache key of a (layer shape, configuration, objective) profile."""
    text = repr((_model_digest(), nest.shape_key(), config, objective))
    return hashlib.sha256(text.encode()).hexdigest()


def dram_bytes(nest: LoopNest, arch: MappingArch, accesses: dict[str, dict[str, cost_module.Access]]) -> int:
    """Bytes read and written at the outermost (DRAM) level of a cost report's ``accesses``."""
    top = accesses[arch.levels[arch.top].name]
    return sum((a.reads + a.writes) * nest.operand(t).word_bytes for t, a in top.items())


def padded_nest(nest: LoopNest, multiple: int = PAD_MULTIPLE) -> LoopNest | None:
    """``nest`` with every dimension of at least ``multiple`` rounded up to a multiple of it (the extra iterations
    are wasted work on zero padding), or ``None`` when no dimension changes."""
    sizes = {d: n if n < multiple else -(-n // multiple) * multiple for d, n in nest.real_sizes.items()}
    if sizes == dict(nest.sizes):
        return None
    return LoopNest(nest.name, nest.kind, nest.dims, sizes, nest.operands, nest.real_sizes)


def _profile(nest: LoopNest, acc: Accelerator, arch: MappingArch, objective: str) -> JobProfile | None:
    m = dataflow(nest, arch, accelerator_dataflow(acc), objective)
    if m is None:
        return None
    report = evaluate_mapping(nest, arch, m)
    assert report.valid, report.violations
    return JobProfile(float(report.latency_cycles), report.compute_cycles, dram_bytes(nest, arch, report.accesses),
                      float(report.energy_pj))


def profile_job(nest: LoopNest, acc: Accelerator, *, objective: str = OBJECTIVE, arch: MappingArch | None = None,
                pad: bool = True) -> JobProfile:
    """Map ``nest`` onto ``acc`` with its fixed dataflow and greedy tiles and read the profile off the cost model.
    With ``pad``, the :func:`padded_nest` variant is profiled too and the faster one kept (fewer DRAM bytes on a
    tie; see the module docstring)."""
    arch = arch if arch is not None else arch_from_accelerator(acc)
    best = _profile(nest, acc, arch, objective)
    alt = padded_nest(nest) if pad else None
    if alt is not None:
        p = _profile(alt, acc, arch, objective)
        if p is not None and (best is None or (p.cycles, p.dram_bytes) < (best.cycles, best.dram_bytes)):
            best = p
    if best is None:
        raise ValueError(f"layer {nest.describe()} fits no mapping on '{acc.name}' (a buffer cannot hold one "
                         f"element of each operand)")
    return best


_MEMORY: dict[str, JobProfile] = {}


def _load(path: Path) -> dict[str, JobProfile]:
    try:
        doc = json.loads(path.read_text())
        return {k: JobProfile(float(v["cycles"]), int(v["compute_cycles"]), int(v["dram_bytes"]),
                              float(v["energy_pj"]))
                for k, v in doc.get("entries", {}).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _save(path: Path, entries: dict[str, JobProfile]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"format": "dlaopt multiaccel job profiles", "entries": {
        k: {"cycles": p.cycles, "compute_cycles": p.compute_cycles, "dram_bytes": p.dram_bytes,
            "energy_pj": p.energy_pj}
        for k, p in sorted(entries.items())}}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=0)
    os.replace(tmp, path)


def job_profiles(jobs: Sequence[JobSpec], platform: Platform, *, cache_dir: str | Path | None = None,
                 objective: str = OBJECTIVE) -> list[list[JobProfile]]:
    """The profile of every job on every sub-accelerator of ``platform`` (rows: jobs, columns: sub-accelerators in
    the platform's order). Each distinct (layer shape, sub-accelerator configuration) is profiled once."""
    path = Path(cache_dir) / CACHE_FILE if cache_dir is not None else None
    stored = _load(path) if path is not None else {}
    added = False
    configs: dict[str, tuple[Accelerator, MappingArch]] = {}
    acc_config = []
    for acc in platform.accelerators:
        key = config_key(acc)
        configs.setdefault(key, (acc, arch_from_accelerator(acc)))
        acc_config.append(key)
    shape_keys: dict[tuple, str] = {}
    profiles: dict[tuple[str, str], JobProfile] = {}  # (job name, config) -> profile
    for job in jobs:
        for config, (acc, arch) in configs.items():
            sk = job.nest.shape_key()
            k = shape_keys.get((sk, config))
            if k is None:
                k = shape_keys[(sk, config)] = profile_key(job.nest, config, objective)
            p = stored.get(k) or _MEMORY.get(k)
            if p is None:
                p = profile_job(job.nest, acc, objective=objective, arch=arch)
            if path is not None and k not in stored:
                stored[k] = p
                added = True
            _MEMORY[k] = p
            profiles[job.name, config] = p
    if path is not None and added:
        _save(path, stored)
    return [[profiles[job.name, acc_config[a]] for a in range(len(platform.accelerators))] for job in jobs]


def job_table(jobs: Sequence[JobSpec], platform: Platform, *, cache_dir: str | Path | None = None,
              objective: str = OBJECTIVE) -> JobTable:
    """The job analysis table of ``jobs`` on ``platform``: latency in seconds and bandwidth in bytes/s per (job,
    sub-accelerator), ops = 2·MACs (:func:`job_profiles`)."""
    if not jobs:
        raise ValueError("the job analysis table needs at least one job")
    rows = job_profiles(jobs, platform, cache_dir=cache_dir, objective=objective)
    latency = np.empty((len(jobs), len(platform.accelerators)))
    bandwidth = np.empty_like(latency)
    for j, row in enumerate(rows):
        for a, acc in enumerate(platform.accelerators):
            latency[j, a] = row[a].latency(acc.clock_hz)
            bandwidth[j, a] = row[a].bandwidth(acc.clock_hz)
    return JobTable(
        jobs=tuple(j.name for j in jobs),
        tenants=tuple(j.tenant for j in jobs),
        accelerators=tuple(a.name for a in platform.accelerators),
        ops=np.array([float(j.ops) for j in jobs]),
        latency=latency,
        bandwidth=bandwidth,
    )


def clear_memory_cache() -> None:
    """Forget the in-process profiles (the JSON files are untouched)."""
    _MEMORY.clear()


def tenant_averages(table: JobTable) -> dict[str, dict[str, tuple[float, float]]]:
    """Per tenant and sub-accelerator: the mean no-stall latency (s) and mean no-stall bandwidth (bytes/s) over the
    tenant's jobs — the seed's Fig. 7.6 figures."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    tenants = np.array(table.tenants)
    for t in dict.fromkeys(table.tenants):
        rows = tenants == t
        out[t] = {a: (float(table.latency[rows, i].mean()), float(table.bandwidth[rows, i].mean()))
                  for i, a in enumerate(table.accelerators)}
    return out


__all__ = ["CACHE_FILE", "OBJECTIVE", "JobProfile", "accelerator_dataflow", "clear_memory_cache", "config_key",
           "dram_bytes", "job_profiles", "job_table", "profile_job", "profile_key", "tenant_averages"]
