"""``dlaopt compile``: one network through the four problems, every stage verified, one end-to-end estimate.

Stages, in order (each a :func:`~dlaopt.pipeline.stages.run_stage` over an instance document built from the shared
workload and hardware documents, so each can be written out and re-checked alone):

1. **mapping** — every conv / depthwise / matmul layer of the workload on the accelerator (layers of one shape are
   solved once): the heuristic dataflows and the exact MILP. Per layer the verified mapping gives its on-chip tile,
   its on-chip cycles and its energy (:func:`~dlaopt.pipeline.handoff.layer_figures`).
2. **pinning** — tensor pinning across the schedule with the mapping's tiles feeding the graph reconstruction
   (``options.layer_tiles``: chunks are whole multiples of them when they fit) and the mapping's on-chip cycles as
   the layers' compute cycles (``options.compute_cycles``).
3. **bankmap** — bank layouts of what stays on chip: the tensors the pinning solution sends through main memory are
   off chip (``options.off_chip_tensors``), the others are laid out across the scratchpad's banks.
4. **assignment** (with a platform of several sub-accelerators) — every layer of ``tenants`` requests of the network
   mapped onto every sub-accelerator (its dataflow template, greedy tiles: the job analysis of
   :mod:`dlaopt.formulations.multiaccel.analysis`), and the jobs assigned and ordered under the shared bandwidth,
   each request's layers in order.

End to end (single accelerator): cycles = the pinning solution's compute + DMA cycles (the layers' on-chip cycles
from the mapping, the main-memory traffic from pinning, not overlapped as in SMAUG) + the bank stage's relayout
copies (on-chip copy bytes over the scratchpad bandwidth, off-chip copy bytes over the DMA bandwidth); energy = the
mapped layers' on-chip energy + main-memory energy of the pinning transfers and the off-chip copies + on-chip copy
energy. Non-MAC operators count cycles (vector lanes) but no energy. On a platform: the makespan of the requests,
their throughput and the energy of every job on the sub-accelerator it was assigned to.

With a total time limit (``CompileOptions.total_time_limit``, or a ``deadline`` set by the caller) the pipeline
returns by then with what it has: a stage that would start after it is not run, a stage left without a verified
solution by it is not finished, and every stage after them is not run (each listed in
:attr:`CompileReport.not_run` with its status, e.g. ``not run: total time limit reached before it started``); a
stage cut short inside (methods not started, mapping layers completed by a heuristic) hands on its verified solution
and says so in its status. The end-to-end figures need every stage: an incomplete report has none and says why.
Failures that are not caused by the limit raise :class:`StageFailed` as without it.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlaopt.errors import InputError
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.mapping import Mapping as LayerMapping
from dlaopt.formulations.pinning.evaluator import count_transfers
from dlaopt.hardware.model import Accelerator, MemoryKind, Platform
from dlaopt.io.instance import instance_from_dict
from dlaopt.pipeline.handoff import (
    JobFigures,
    LayerFigures,
    jobs_document,
    layer_figures,
    off_chip_tensors,
    pinning_options,
)
from dlaopt.pipeline.stages import StageFailed, StageOutcome, run_stage
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE
from dlaopt.solvers.result import SolveOptions
from dlaopt.workload.graph import Workload

DEFAULT_METHODS: dict[str, tuple[str, ...]] = {
    "mapping": ("nvdla", "eyeriss", "shidiannao", "exact"),
    "pinning": ("naive", "onsram", "greedy", "coloring", "exact"),
    "bankmap": ("local", "propagate", "exact"),
    "assignment": ("herald", "ai-mt", "lpt", "magma", "exact"),
}
STAGES = tuple(DEFAULT_METHODS)
STAGE_TITLES = {"mapping": "Tiling and loop order of every layer", "pinning": "Tensor pinning across the schedule",
                "bankmap": "Bank layouts of what stays on chip",
                "assignment": "Assignment of the requests to the sub-accelerators"}
NOT_RUN = f"not run: {NOT_STARTED_MESSAGE}"
NOT_FINISHED = "not finished: total time limit reached before it finished"


@dataclass
class CompileOptions:
    """Objectives, methods and solve limits of the stages. ``time_limit`` applies to every exact solve (the mapping
    problem spreads it over the unique layers); ``node_limit`` / ``deterministic`` make runs reproducible."""

    mapping_objective: str = "edp"
    pinning_objective: str = "transfers"
    assignment_objective: str = "makespan"
    methods: Mapping[str, Sequence[str]] = field(default_factory=lambda: dict(DEFAULT_METHODS))
    time_limit: float | None = 60.0
    seed: int = 0
    threads: int | None = None
    deterministic: bool = False
    node_limit: int | None = None
    tenants: int | None = None  # requests scheduled on a platform (default: one per sub-accelerator)
    cache_dir: str | None = None  # job-analysis cache of the assignment stage
    progress: Any = None  # called with (stage name, "start" | "done" | "stopped", StageOutcome | not_run entry | None)
    total_time_limit: float | None = None  # seconds for the whole pipeline (each solve gets at most the time left)
    deadline: float | None = None  # time.monotonic() of the total time limit; compile_network sets it from
    # total_time_limit unless the caller did (the command line starts it with the command)

    def solve_options(self) -> SolveOptions:
        return SolveOptions(time_limit=self.time_limit, seed=self.seed, threads=self.threads,
                            deterministic=self.deterministic, node_limit=self.node_limit, deadline=self.deadline)

    def stage_methods(self, stage: str) -> list[str]:
        return list(self.methods.get(stage, DEFAULT_METHODS[stage]))


@dataclass
class CompileReport:
    """Every stage's outcome, the per-layer hand-over figures and the end-to-end estimate."""

    network: str
    workload: dict[str, Any]
    hardware: dict[str, Any]
    platform: dict[str, Any] | None
    stages: list[StageOutcome]
    layers: list[LayerFigures]
    end_to_end: dict[str, Any]
    platform_jobs: dict[str, Any] | None = None  # per sub-accelerator configuration: layer figures
    time_s: float = 0.0
    # stages the total time limit stopped: {"stage", "title", "status" (NOT_RUN or NOT_FINISHED), "message"}
    not_run: list[dict[str, Any]] = field(default_factory=list)
    total_time_limit: float | None = None

    @property
    def complete(self) -> bool:
        """Every stage ran and handed on a verified solution (some may have been cut short inside)."""
        return not self.not_run

    def stage(self, name: str) -> StageOutcome | None:
        return next((s for s in self.stages if s.name == name), None)

    def statuses(self) -> list[dict[str, str]]:
        """Every stage of the pipeline in order, finished or not, with its status."""
        return ([{"stage": s.name, "status": s.status} for s in self.stages]
                + [{"stage": n["stage"], "status": n["status"]} for n in self.not_run])

    def to_dict(self) -> dict[str, Any]:
        return {"network": self.network, "workload": self.workload, "hardware": self.hardware,
                "platform": self.platform, "complete": self.complete, "total_time_limit": self.total_time_limit,
                "time_s": self.time_s, "stage_status": self.statuses(), "not_run": self.not_run,
                "end_to_end": self.end_to_end, "stages": [s.to_dict() for s in self.stages],
                "layers": [f.to_dict() for f in self.layers], "platform_jobs": self.platform_jobs}


# ================================================================================================== stages
def _document(problem: str, name: str, workload: Mapping[str, Any], hardware: Mapping[str, Any], objective: str,
              options: Mapping[str, Any]) -> dict[str, Any]:
    return {"problem": problem, "name": name, "workload": dict(workload), "hardware": dict(hardware),
            "objective": objective, "options": dict(options)}


def _mapping_stage(network: str, workload: Mapping[str, Any], hardware: Mapping[str, Any], graph: Workload,
                   opts: CompileOptions) -> tuple[StageOutcome, list[LayerFigures]]:
    doc = _document("mapping", f"{network}-mapping", workload, hardware, opts.mapping_objective, {"workers": 1})
    out = run_stage("mapping", STAGE_TITLES["mapping"], doc, opts.stage_methods("mapping"),
                    opts.solve_options())
    data = out.prepared.data
    layers_doc = (out.chosen.solution or {}).get("layers", {})
    figures = []
    for nest in data.nests:
        m = LayerMapping.from_dict(layers_doc[nest.name])
        report = evaluate_mapping(nest, data.arch, m)
        if not report.valid:
            raise StageFailed("mapping", f"layer {nest.name}: {'; '.join(report.violations)}")
        figures.append(layer_figures(graph, nest, data.arch, m, report))
    out.summary = {
        "layers": len(data.nests), "unique_layers": len(data.groups), "macs": sum(n.real_macs for n in data.nests),
        "latency_cycles": sum(f.latency_cycles for f in figures),
        "onchip_cycles": sum(f.onchip_cycles for f in figures),
        "energy_pj": sum(f.energy_pj for f in figures), "onchip_energy_pj": sum(f.onchip_energy_pj for f in figures),
        "dram_bytes": sum(f.dram_bytes for f in figures), "onchip_level": data.arch.levels[data.arch.top - 1].name,
    }
    return out, figures


def _pinning_stage(network: str, workload: Mapping[str, Any], hardware: Mapping[str, Any], graph: Workload,
                   figures: Sequence[LayerFigures], opts: CompileOptions) -> tuple[StageOutcome, list[str]]:
    doc = _document("pinning", f"{network}-pinning", workload, hardware, opts.pinning_objective,
                    {"oversize": "tile", **pinning_options(figures)})
    out = run_stage("pinning", STAGE_TITLES["pinning"], doc, opts.stage_methods("pinning"),
                    opts.solve_options())
    data = out.prepared.data
    problem = out.prepared.problem
    sol = problem.solution_from_dict(data, (out.chosen.solution or {}))
    t = count_transfers(data.graph, sol)
    off = off_chip_tensors(graph, data.graph, t.loads, t.stores)
    m = out.chosen.metrics
    out.summary = {
        "steps": len(data.graph.steps), "buffers": len(data.graph.buffers), "tiled_ops": len(data.graph.tiled_ops),
        "tiles_from_mapping": len(data.graph.aligned_ops), "transfer_bytes": m.get("transfer_bytes"),
        "naive_transfer_bytes": m.get("naive_transfer_bytes"), "compute_cycles": m.get("compute_cycles"),
        "dma_cycles": m.get("dma_cycles"), "estimated_cycles": m.get("estimated_cycles"),
        "speedup_over_naive": m.get("speedup"), "off_chip_tensors": len(off),
        "produced_tensors": sum(1 for tn in graph.tensors.values() if tn.role.is_produced),
        # the solution's runs carry their scratchpad offsets ([first, last, scratchpad, offset]): handed on as is
        "addresses": sol.offsets is not None, "alignment_bytes": data.alignment,
        "address_peak": m.get("address_peak"),
    }
    return out, off


def _bank_stage(network: str, workload: Mapping[str, Any], hardware: Mapping[str, Any], off: Sequence[str],
                opts: CompileOptions) -> StageOutcome:
    doc = _document("bankmap", f"{network}-bankmap", workload, hardware, "copy_cost", {"off_chip_tensors": list(off)})
    out = run_stage("bankmap", STAGE_TITLES["bankmap"], doc, opts.stage_methods("bankmap"),
                    opts.solve_options())
    m = out.chosen.metrics
    data = out.prepared.data
    out.summary = {"banks": data.banks, "bank_bytes": data.bank_bytes,
                   **{k: m.get(k) for k in ("on_chip_copy_bytes", "off_chip_copy_bytes", "spill_bytes", "copies",
                                            "functional_check")}}
    return out


def _platform_figures(graph: Workload, platform: Platform, opts: CompileOptions
                      ) -> tuple[list[tuple[str, int]], dict[tuple[str, str], JobFigures], dict[str, Any]]:
    from dlaopt.formulations.mapping.loopnest import loopnest_from_operator, mappable_layers
    from dlaopt.formulations.multiaccel.analysis import job_profiles
    from dlaopt.formulations.multiaccel.tasks import JobSpec

    index = {op.name: i for i, op in enumerate(graph.operators)}
    specs = []
    for op in mappable_layers(graph):
        nest = loopnest_from_operator(graph, op)
        specs.append(JobSpec(op.name, graph.name, 0, op.name, index[op.name], nest.real_macs, nest))
    try:
        rows = job_profiles(specs, platform, cache_dir=opts.cache_dir)
    except ValueError as exc:
        raise StageFailed("assignment", f"job analysis: {exc}") from None
    figures: dict[tuple[str, str], JobFigures] = {}
    per_acc: dict[str, dict[str, float]] = {}
    for spec, row in zip(specs, rows, strict=True):
        for acc, p in zip(platform.accelerators, row, strict=True):
            f = JobFigures(p.latency(acc.clock_hz), p.dram_bytes, p.energy_pj)
            figures[spec.name, acc.name] = f
            tot = per_acc.setdefault(acc.name, {"latency_s": 0.0, "dram_bytes": 0.0, "energy_pj": 0.0})
            tot["latency_s"] += f.latency_s
            tot["dram_bytes"] += f.dram_bytes
            tot["energy_pj"] += f.energy_pj
    layers = [(s.layer, s.macs) for s in specs]
    return layers, figures, {"accelerators": per_acc, "layers": len(layers)}


def _assignment_stage(network: str, graph: Workload, platform_doc: Mapping[str, Any], platform: Platform,
                      opts: CompileOptions) -> tuple[StageOutcome, dict[str, Any]]:
    layers, figures, totals = _platform_figures(graph, platform, opts)
    tenants = opts.tenants or len(platform.accelerators)
    names = [a.name for a in platform.accelerators]
    jobs = jobs_document(layers, tenants, names, figures, network)
    doc = _document("multiaccel", f"{network}-x{tenants}-{platform.name}", jobs, platform_doc,
                    opts.assignment_objective, {"precedence": True})
    out = run_stage("assignment", f"Assignment of {tenants} requests to {len(names)} sub-accelerators", doc,
                    opts.stage_methods("assignment"), opts.solve_options())
    order = (out.chosen.solution or {}).get("order", {})
    energy = 0.0
    for acc, job_names in order.items():
        for j in job_names:
            energy += figures[j.split("/", 1)[1], acc].energy_pj
    m = out.chosen.metrics
    out.summary = {"tenants": tenants, "jobs": len(layers) * tenants, "makespan_s": m.get("makespan_s"),
                   "throughput_gops": m.get("throughput_gops"),
                   "requests_per_s": tenants / m["makespan_s"] if m.get("makespan_s") else None,
                   "energy_pj": energy, "jobs_per_accelerator": m.get("jobs_per_accelerator"),
                   "bandwidth_utilization": m.get("bandwidth_utilization")}
    return out, totals


# ================================================================================================== end to end
def _end_to_end(acc: Accelerator, pin: StageOutcome, bank: StageOutcome, figures: Sequence[LayerFigures]
                ) -> dict[str, Any]:
    dram = next(m for m in acc.memories if m.kind == MemoryKind.DRAM)
    spads = acc.scratchpads
    spad_bw = min((m.bandwidth_bytes_per_cycle for m in spads), default=math.inf)
    spad_e = max((m.read_energy_pj_per_byte + m.write_energy_pj_per_byte for m in spads), default=0.0)
    pm, bm = pin.chosen.metrics, bank.chosen.metrics
    on_copy, off_copy = float(bm.get("on_chip_copy_bytes") or 0), float(bm.get("off_chip_copy_bytes") or 0)
    copy_cycles = (on_copy / spad_bw if math.isfinite(spad_bw) and spad_bw > 0 else 0.0) + (
        off_copy / acc.dma.bandwidth_bytes_per_cycle)
    cycles = float(pm["estimated_cycles"]) + copy_cycles
    onchip_energy = sum(f.onchip_energy_pj for f in figures)
    dram_energy = (float(pm["load_bytes"]) * dram.read_energy_pj_per_byte
                   + float(pm["store_bytes"]) * dram.write_energy_pj_per_byte
                   + off_copy * (dram.read_energy_pj_per_byte + dram.write_energy_pj_per_byte))
    copy_energy = on_copy * spad_e
    naive = pin.result("naive")
    mapping_only = sum(f.latency_cycles for f in figures)
    return {
        "cycles": cycles, "latency_s": cycles / acc.clock_hz,
        "compute_cycles": float(pm["compute_cycles"]), "dma_cycles": float(pm["dma_cycles"]),
        "copy_cycles": copy_cycles, "energy_pj": onchip_energy + dram_energy + copy_energy,
        "energy_breakdown_pj": {"layers_on_chip": onchip_energy, "main_memory": dram_energy,
                                "bank_copies": copy_energy},
        "transfer_bytes": float(pm["transfer_bytes"]),
        "naive_cycles": float(naive.metrics["estimated_cycles"]) if naive and naive.verified else None,
        "layers_alone_cycles": mapping_only,
    }


def compile_network(workload: Mapping[str, Any], hardware: Mapping[str, Any],
                    platform: Mapping[str, Any] | None = None, options: CompileOptions | None = None
                    ) -> CompileReport:
    """Run the pipeline (module docstring) on ``workload`` / ``hardware`` / ``platform`` documents (the parts of an
    instance file; :mod:`dlaopt.pipeline.inputs` makes them from names and files). Raises :class:`StageFailed`
    naming the stage that could not hand a verified solution on, or :class:`~dlaopt.errors.InputError`; a stage
    stopped by the total time limit does not raise: the report lists it, and every stage after it, as not run
    (:attr:`CompileReport.not_run`)."""
    opts = options or CompileOptions()
    for stage, methods in opts.methods.items():
        if stage not in STAGES:
            raise InputError(f"unknown pipeline stage '{stage}'", path=("methods", stage),
                             expected=", ".join(STAGES))
        if not methods:
            raise InputError(f"stage '{stage}' needs at least one method", path=("methods", stage))
    t0 = time.perf_counter()
    if opts.total_time_limit is not None and opts.deadline is None:
        opts = dataclasses.replace(opts, deadline=time.monotonic() + opts.total_time_limit)
    probe = instance_from_dict(_document("mapping", "probe", workload, hardware, "edp", {}))
    graph, acc = probe.graph, probe.accelerator
    network = graph.name
    plat: Platform | None = None
    if platform is not None:
        pprobe = instance_from_dict({"problem": "multiaccel", "workload": {"task": "vision", "group_size": 1},
                                     "hardware": dict(platform)})
        plat = pprobe.hardware  # type: ignore[assignment]
    stages: list[StageOutcome] = []
    not_run: list[dict[str, Any]] = []

    def stop(name: str, status: str, message: str = "") -> None:
        entry = {"stage": name, "title": STAGE_TITLES[name], "status": status, "message": message}
        not_run.append(entry)
        if opts.progress:
            opts.progress(name, "stopped", entry)

    def run(name: str, fn: Any, *args: Any) -> Any:
        """The stage's result; ``None`` when the total time limit stopped it or an earlier stage."""
        if not_run or (opts.deadline is not None and time.monotonic() >= opts.deadline):
            stop(name, NOT_RUN)
            return None
        if opts.progress:
            opts.progress(name, "start", None)
        try:
            result = fn(*args)
        except StageFailed as exc:
            if not exc.total_time_limit:
                raise
            stop(name, NOT_FINISHED, exc.message)
            return None
        outcome = result[0] if isinstance(result, tuple) else result
        stages.append(outcome)
        if opts.progress:
            opts.progress(name, "done", outcome)
        return result

    mapped = run("mapping", _mapping_stage, network, workload, hardware, graph, opts)
    figures = mapped[1] if mapped else []
    pinned = run("pinning", _pinning_stage, network, workload, hardware, graph, figures, opts)
    bank = run("bankmap", _bank_stage, network, workload, hardware, pinned[1] if pinned else [], opts)
    end: dict[str, Any] = {}
    if pinned and bank:
        end = _end_to_end(acc, pinned[0], bank, figures)
    platform_jobs = None
    if plat is not None and len(plat.accelerators) > 1 and platform is not None:
        assigned = run("assignment", _assignment_stage, network, graph, platform, plat, opts)
        if assigned and end:
            assign, platform_jobs = assigned
            end["platform"] = {k: assign.summary[k] for k in ("tenants", "makespan_s", "requests_per_s",
                                                              "throughput_gops", "energy_pj")}
    if not_run:
        end = {}  # only when every stage ran: the report says which did not
    return CompileReport(network, dict(workload), dict(hardware), dict(platform) if platform else None, stages,
                         figures, end, platform_jobs, time.perf_counter() - t0, not_run, opts.total_time_limit)


__all__ = ["DEFAULT_METHODS", "NOT_FINISHED", "NOT_RUN", "STAGES", "STAGE_TITLES", "CompileOptions", "CompileReport",
           "compile_network"]
