"""PolyAcc (seed 004): data reuse, energy, execution time and PE utilization of fixed dataflows, with and without
PE-to-PE forwarding links, from proven-optimal mappings.

Two studies, each layer mapped by the exact method (the mapping MILP,
:func:`~dlaopt.formulations.mapping.layers.run_layer_exact`, proven optimal for the objective) with the dataflow
fixed by mapping constraints — a ``spatial`` record naming the dimensions each PE-array axis unrolls and ``factors``
records (``type: spatial``) fixing their factors; every temporal factor and loop order is left to the solver:

* ``table3`` — seed 004 Table 3's six benchmarks: GEMM 256³ output stationary (IJ-sp, 8×8), weight stationary
  (KJ-sp, 8×8) and vector (J-sp, 1×64); AlexNet conv2 row stationary (14×12, Eyeriss), MobileNet-V2 layer 2 weight
  stationary (KC-sp, 8×8; the first pointwise convolution, ``block1.project``: the first layer with both K and C,
  the depthwise layer before it has no C to unroll) and ResNet-50 layer 1 ShiDianNao (OxOy-sp, 8×8; ``conv1``).
  Reported as Fig. 5 (data access volumes per level split into temporal reuse, multicast, forwarded and unique),
  Fig. 6 (energy per level, NoC, links and MACs) and Fig. 7 (execution time against the seed's ideal
  ``MACs / PEs`` and PE utilization).
* ``eyeriss`` — §4.2's validation setting: an Eyeriss-like array of 14×12 PEs (12 rows of filter rows × 14 columns
  of output rows), 16-bit words, AlexNet conv1–conv5 row stationary, with the seed's links — partial sums down the
  columns (along the rows axis), weights to the left along the rows (along the columns axis), input feature maps
  along the diagonal — per layer: latency, energy and utilization with and without forwarding, and the share of the
  NoC traffic the links take over, next to the seed's reported figures.

Hardware: the ``eyeriss`` preset (DRAM → 108 KB global buffer ``glb`` → 512 B register file ``rf`` per PE,
normalised energies per 16-bit access MAC 1, RF 1, NoC 2, buffer 6, DRAM 200) resized to each benchmark's array;
the links (:class:`~dlaopt.hardware.model.Link`) forward one operand between neighbouring PEs at
``link_energy_ratio`` × the NoC energy per byte (default 0.5: a neighbour wire is shorter than the multicast bus
that spans the array; the seed gives no figure) and ``link_bandwidth`` bytes per cycle per link (default unlimited,
as the cost model does not limit the NoC's bandwidth either).

Links per dataflow (where the operand's irrelevant dimensions are unrolled, its tile is the same in neighbouring
PEs): output stationary — inputs along the columns, weights along the rows (the systolic OS array); weight
stationary — inputs along the axis of the output dimension, partial sums along the axis of the reduction dimension
(the systolic WS array); row stationary — Eyeriss' three links above; vector (J-sp) and ShiDianNao — none: a vector
unit broadcasts its input to the lanes, and ShiDianNao's neighbour-to-neighbour input shifts reuse data across time
steps (a sliding window), which a link (the same tile in neighbouring PEs at the same time) does not express; its
kernel values are broadcast. These two are the controls: both variants must agree.

Per layer three variants: ``no links`` (the optimum on the array without links), ``same mapping`` (that mapping on
the array with links: the effect of forwarding alone) and ``links`` (the optimum with links).

Data access categories (Fig. 5) per level and operand, in elements, partitioning what the level serves to the level
(or the MACs) below it: *unique* — what it received from its parent (for main memory: the tensor itself);
*multicast* — what the network delivered beyond that, one parent read reaching several PEs (for partial sums: the
reduction in the network); *forwarded* — what arrived over a PE-to-PE link; *temporal* — accesses served from data
already in the level (reuse over time). The four sum to the level's accesses.

Outputs: ``polyacc.md``, ``polyacc.csv`` (one row per layer and variant), ``polyacc.json`` (rows with per-level,
per-operand volumes, energy breakdowns, mappings and the instance documents) and ``polyacc.png``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dlaopt.errors import InputError
from dlaopt.experiments.common import ExperimentReport, check_choices, write_report
from dlaopt.results import environment, environment_markdown, md_table, sci_text

STUDIES: tuple[str, ...] = ("table3", "eyeriss")
VARIANTS: tuple[str, ...] = ("no links", "same mapping", "links")
CATEGORIES: tuple[str, ...] = ("temporal", "multicast", "forwarded", "unique")
LEVELS: tuple[str, ...] = ("rf", "glb", "dram")  # the eyeriss preset's levels, innermost first
ALEXNET_LAYERS: tuple[str, ...] = ("conv1", "conv2", "conv3", "conv4", "conv5")
OBJECTIVES: tuple[str, ...] = ("energy", "latency", "edp")
DEFAULT_LINK_ENERGY_RATIO = 0.5
ROWS, COLS = "rows", "cols"

# The row-stationary links of seed 004 §4.2: partial sums down the columns (PEs of one column hold consecutive
# filter rows: their partial sums add up along the rows axis), weights to the left along a row (one filter row per
# PE row: neighbours along the columns axis hold it), input feature maps along the diagonal. The order matters: the
# first link using an axis decides the placement of the PEs along it (the cost model's convention: dimensions
# irrelevant to that operand fastest), so filter rows R are consecutive down the rows axis (O irrelevant: R; the
# replicated output channels K come after) and output rows P along the columns (W irrelevant: P) — the layout under
# which diagonal neighbours hold the same input rows. With input channels replicated down the rows instead, C would
# be placed fastest there and no diagonal neighbours would share a row.
EYERISS_LINKS: tuple[tuple[str, tuple[str, ...]], ...] = (("O", (ROWS,)), ("W", (COLS,)), ("I", (ROWS, COLS)))


@dataclass(frozen=True)
class Benchmark:
    """One dataflow case: a layer, the PE array, the dimensions each axis unrolls (each at the largest divisor of
    what is left of it that fits what is left of the axis, in turn) and the array's links."""

    name: str
    label: str  # the seed's name of the case
    workload: str  # "gemm" or a zoo network
    layer: str
    rows: int
    cols: int
    axes: tuple[tuple[str, ...], tuple[str, ...]]  # dimensions filled on the rows axis, on the columns axis
    links: tuple[tuple[str, tuple[str, ...]], ...]  # (operand, axes): one axis = straight link, two = diagonal
    note: str = ""


TABLE3: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("gemm-os", "GEMM, output stationary (IJ-sp)", "gemm", "gemm", 8, 8, (("M",), ("N",)),
              (("I", (COLS,)), ("W", (ROWS,))), "systolic OS: A along the rows of PEs, B down the columns"),
    Benchmark("gemm-ws", "GEMM, weight stationary (KJ-sp)", "gemm", "gemm", 8, 8, (("K",), ("N",)),
              (("I", (COLS,)), ("O", (ROWS,))), "systolic WS: A along the rows of PEs, partial sums down the columns"),
    Benchmark("gemm-vector", "GEMM, vector (J-sp)", "gemm", "gemm", 1, 64, ((), ("N",)), (),
              "vector unit: A broadcast to the 64 lanes (no links)"),
    Benchmark("alexnet-conv2", "AlexNet conv2, row stationary (OyR-sp)", "alexnet", "conv2", 12, 14,
              (("R", "K"), ("P", "C")), EYERISS_LINKS, "Eyeriss: psums down, weights left, inputs diagonal"),
    Benchmark("mobilenetv2-2", "MobileNet-V2 layer 2, weight stationary (KC-sp)", "mobilenet-v2", "block1.project",
              8, 8, (("K",), ("C",)), (("I", (ROWS,)), ("O", (COLS,))),
              "systolic WS: inputs along the K axis, partial sums along the C axis"),
    Benchmark("resnet50-1", "ResNet-50 layer 1, ShiDianNao (OxOy-sp)", "resnet50", "conv1", 8, 8, (("P",), ("Q",)),
              (), "ShiDianNao: kernel values broadcast; its input shifts reuse across time (no links)"),
)}


def eyeriss_benchmark(layer: str) -> Benchmark:
    """§4.2's case for one AlexNet layer: 12 × 14 PEs, row stationary (filter rows, then output channels — PE sets
    replicated over filters — down the rows axis; output rows, then input channels, along the columns axis),
    Eyeriss' links."""
    return Benchmark(f"eyeriss-{layer}", f"AlexNet {layer}, Eyeriss row stationary", "alexnet", layer, 12, 14,
                     (("R", "K"), ("P", "C")), EYERISS_LINKS, "psums down, weights left, inputs diagonal")


def gemm_workload(size: int) -> dict[str, Any]:
    """The inline workload of GEMM ``C[i, j] += A[i, k] * B[k, j]`` with i = j = k = ``size``, 16-bit words
    (dlaopt's matmul dimensions: i = M, j = N, k = K; A is the input I, B the weight W, C the output O)."""
    return {"name": f"gemm{size}", "dtype_bytes": 2, "tensors": [
        {"name": "a", "shape": [size, size], "role": "input"}, {"name": "b", "shape": [size, size], "role": "weight"},
        {"name": "c", "shape": [size, size], "role": "output"}],
        "operators": [{"name": "gemm", "kind": "matmul", "inputs": ["a", "b"], "outputs": ["c"]}]}


def _workload_doc(b: Benchmark, gemm_size: int, batch: int) -> dict[str, Any]:
    if b.workload == "gemm":
        return gemm_workload(gemm_size)
    return {"zoo": b.workload, "params": {"batch": batch}}


def _largest_divisor_at_most(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def spatial_factors(sizes: Mapping[str, int], b: Benchmark) -> tuple[dict[str, int], dict[str, int]]:
    """The fixed spatial factors of ``b`` on the rows and the columns axis (dimensions the layer lacks, or left at
    1, are dropped)."""
    out: list[dict[str, int]] = []
    for dims, size in zip(b.axes, (b.rows, b.cols), strict=True):
        room, fs = size, {}
        for d in dims:
            if d not in sizes:
                continue
            f = _largest_divisor_at_most(sizes[d], room)
            if f > 1:
                fs[d] = f
                room //= f
        out.append(fs)
    return out[0], out[1]


def dataflow_constraints(b: Benchmark, rows_f: Mapping[str, int], cols_f: Mapping[str, int]) -> list[dict[str, Any]]:
    """The mapping constraint records that fix ``b``'s spatial unrolling: the dimensions each axis may unroll and
    their factors (the fanout below the global buffer is the PE array)."""
    recs: list[dict[str, Any]] = [{"kind": "spatial", "name": f"{b.name}.dataflow",
                                   "axes": {ROWS: {"dims": sorted(rows_f)}, COLS: {"dims": sorted(cols_f)}}}]
    for axis, fs in ((ROWS, rows_f), (COLS, cols_f)):
        if fs:
            recs.append({"kind": "factors", "name": f"{b.name}.{axis}", "target": "glb", "type": "spatial",
                         "axis": axis, "factors": dict(fs)})
    return recs


def instance_doc(b: Benchmark, objective: str, *, gemm_size: int = 256, batch: int = 1,
                 constraints: Sequence[Mapping[str, Any]] = (), hardware: Mapping[str, Any] | None = None
                 ) -> dict[str, Any]:
    """The ``problem: mapping`` document of one case: on the link-less array (the ``eyeriss`` preset resized) unless
    ``hardware`` (an inline accelerator, :func:`hardware_doc`) is given."""
    return {"problem": "mapping", "name": b.name, "objective": objective,
            "workload": _workload_doc(b, gemm_size, batch),
            "hardware": dict(hardware) if hardware is not None else {"preset": "eyeriss",
                                                                     "params": {"rows": b.rows, "cols": b.cols}},
            "options": {"layers": [b.layer]}, "constraints": [dict(c) for c in constraints]}


def linked_accelerator(acc: Any, links: Sequence[tuple[str, tuple[str, ...]]], link_energy_ratio: float,
                       link_bandwidth: float) -> Any:
    """``acc`` with ``links`` on its PE array: each at ``link_energy_ratio`` × the register file's NoC energy per
    byte and ``link_bandwidth`` bytes per cycle."""
    from dlaopt.hardware.model import Link

    noc = max(m.network_energy_pj_per_byte for m in acc.memories)
    lk = tuple(Link(t, tuple(axes), noc * link_energy_ratio, link_bandwidth) for t, axes in links)
    return replace(acc, name=f"{acc.name}-{acc.pe_array.axes[0][1]}x{acc.pe_array.axes[1][1]}-links",
                   pe_array=replace(acc.pe_array, links=lk))


def hardware_doc(acc: Any) -> dict[str, Any]:
    """``acc`` as an inline ``hardware`` document (memories, PE array with its links, DMA, clock, MAC energy), so
    that a case's instance document is self-contained; unlimited bandwidths are left out (the default)."""
    from dlaopt.hardware.model import ALL_ROLES

    def finite(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if v is not None and not (isinstance(v, float) and math.isinf(v))}

    mems = []
    for m in acc.memories:
        doc = finite({"name": m.name, "kind": m.kind.value, "capacity_bytes": m.capacity_bytes,
                      "instances": m.instances if m.instances != 1 else None,
                      "bandwidth_bytes_per_cycle": m.bandwidth_bytes_per_cycle,
                      "write_bandwidth_bytes_per_cycle": m.write_bandwidth_bytes_per_cycle,
                      "read_energy_pj_per_byte": m.read_energy_pj_per_byte,
                      "write_energy_pj_per_byte": m.write_energy_pj_per_byte,
                      "network_energy_pj_per_byte": m.network_energy_pj_per_byte or None})
        if m.holds != ALL_ROLES:
            doc["holds"] = sorted(r.value for r in m.holds)
        if m.operands is not None:
            doc["operands"] = sorted(m.operands)
        mems.append(doc)
    pe: dict[str, Any] = {"axes": [[a, n] for a, n in acc.pe_array.axes]}
    if acc.pe_array.macs_per_pe_per_cycle != 1:
        pe["macs_per_pe_per_cycle"] = acc.pe_array.macs_per_pe_per_cycle
    if acc.pe_array.arrays != 1:
        pe["arrays"] = acc.pe_array.arrays
    if acc.pe_array.links:
        pe["links"] = [finite({"operand": lk.operand, "axes": list(lk.axes),
                               "energy_pj_per_byte": lk.energy_pj_per_byte,
                               "bandwidth_bytes_per_cycle": lk.bandwidth_bytes_per_cycle})
                       for lk in acc.pe_array.links]
    return {"name": acc.name, "clock_mhz": acc.clock_hz / 1e6, "mac_energy_pj": acc.mac_energy_pj, "pe_array": pe,
            "dma": finite({"bandwidth_bytes_per_cycle": acc.dma.bandwidth_bytes_per_cycle,
                           "latency_cycles": acc.dma.latency_cycles or None}),
            "memories": mems}


def eyeriss_instance_doc(objective: str = "energy", layers: Sequence[str] = ALEXNET_LAYERS, *, batch: int = 1,
                         link_energy_ratio: float = DEFAULT_LINK_ENERGY_RATIO,
                         link_bandwidth: float = math.inf) -> dict[str, Any]:
    """One ``problem: mapping`` document for §4.2's setting: AlexNet's ``layers`` on the Eyeriss-like 12 × 14 array
    with its three links (inline hardware), each layer's row-stationary unrolling fixed by records selecting it
    (the shipped ``instances/mapping/eyeriss-polyacc-alexnet.yaml``)."""
    from dlaopt.formulations.mapping.loopnest import loopnest_from_operator
    from dlaopt.hardware.presets import PRESETS
    from dlaopt.zoo import ZOO

    wl = ZOO.create("alexnet", {"batch": batch})
    ops = {op.name: op for op in wl.operators}
    constraints: list[dict[str, Any]] = []
    for name in layers:
        b = eyeriss_benchmark(name)
        recs = dataflow_constraints(b, *spatial_factors(loopnest_from_operator(wl, ops[name]).sizes, b))
        constraints += [{**rec, "name": f"{name}.{rec['name'].rsplit('.', 1)[1]}", "layers": [name]} for rec in recs]
    acc = linked_accelerator(PRESETS.create("eyeriss", {}), EYERISS_LINKS, link_energy_ratio, link_bandwidth)
    return {"problem": "mapping", "name": "eyeriss-polyacc-alexnet", "objective": objective,
            "workload": {"zoo": "alexnet", "params": {"batch": batch}}, "hardware": hardware_doc(acc),
            "options": {"layers": list(layers)}, "constraints": constraints}


def links_text(links: Sequence[tuple[str, tuple[str, ...]]]) -> str:
    if not links:
        return "none"
    return ", ".join(f"{t} {'diagonal' if len(a) == 2 else 'along ' + a[0]}" for t, a in links)


def _factors_text(rows_f: Mapping[str, int], cols_f: Mapping[str, int]) -> str:
    def one(fs: Mapping[str, int]) -> str:
        return "·".join(f"{d}{f}" for d, f in fs.items()) or "1"

    return f"rows {one(rows_f)} / cols {one(cols_f)}"


# ------------------------------------------------------------------------------------------------ analysis
def access_volumes(report: Any, nest: Any, arch: Any) -> dict[str, dict[str, dict[str, int]]]:
    """Fig. 5's categories per level and operand (module docstring), in elements: ``{level: {operand: {category:
    count, "total": accesses}}}``. Derived from the cost report's reads, writes, network and link counts; each
    category is non-negative and they sum to the total."""
    from dlaopt.formulations.mapping.loopnest import OPERANDS

    out: dict[str, dict[str, dict[str, int]]] = {lv.name: {} for lv in arch.levels}

    def acc(j: int, t: str) -> tuple[int, int, int, int]:
        a = report.accesses[arch.levels[j].name][t]
        return a.reads, a.writes, a.network, getattr(a, "link", 0)

    for t in OPERANDS:
        chain = arch.keeping_levels(t)
        whole = nest.footprint(t, nest.sizes)
        top = chain[-1]
        if t != "O":
            for pos, j in enumerate(chain):
                reads, writes, network, link = acc(j, t)
                if j == top:
                    cats = {"temporal": reads - whole, "multicast": 0, "forwarded": 0, "unique": whole}
                else:
                    parent_reads = acc(chain[pos + 1], t)[0]
                    cats = {"temporal": reads - writes, "multicast": network - parent_reads, "forwarded": link,
                            "unique": parent_reads}
                out[arch.levels[j].name][t] = {**cats, "total": reads}
            continue
        # partial sums, from the top down: what a level received back from its parent (reloads) is known there
        reload_in, parent_uses = 0, 0
        for j in reversed(chain):
            reads, writes, network, link = acc(j, t)
            uses = writes - reload_in  # the updates its children (or the MACs) wrote into it
            if j == top:
                cats = {"temporal": uses - whole, "multicast": 0, "forwarded": 0, "unique": whole}
                drains = 0
            else:
                drains = network + link - reload_in
                cats = {"temporal": uses - drains, "multicast": network - reload_in - parent_uses, "forwarded": link,
                        "unique": parent_uses}
            out[arch.levels[j].name][t] = {**cats, "total": uses}
            reload_in, parent_uses = reads - drains, uses
    return out


def level_totals(volumes: Mapping[str, Mapping[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """Per level, every category summed over the operands."""
    return {lv: {c: sum(v[c] for v in per.values()) for c in (*CATEGORIES, "total")} for lv, per in volumes.items()}


def energy_groups(report: Any, arch: Any) -> dict[str, float]:
    """Fig. 6's breakdown (pJ): each level's storage accesses, the NoC, the links and the MACs."""
    out: dict[str, float] = {lv.name: 0.0 for lv in arch.levels}
    out.update({"noc": 0.0, "links": 0.0, "mac": 0.0})
    for key, e in report.energy_breakdown.items():
        if key == "mac":
            out["mac"] += e
            continue
        level, _, what = key.rpartition("/")
        if what == "network":
            out["noc"] += e
        elif what == "link":
            out["links"] += e
        else:
            out[level] = out.get(level, 0.0) + e
    return out


def traffic(report: Any) -> tuple[int, int]:
    """(elements over the NoC into or out of the PEs' levels, elements over PE-to-PE links), all operands."""
    net = sum(a.network for per in report.accesses.values() for a in per.values())
    link = sum(getattr(a, "link", 0) for per in report.accesses.values() for a in per.values())
    return net, link


def _row(b: Benchmark, study: str, variant: str, nest: Any, arch: Any, report: Any, factors: tuple[dict, dict],
         status: str, time_s: float | None, pes: int) -> dict[str, Any]:
    rows_f, cols_f = factors
    ideal = nest.real_macs / pes
    net, link = traffic(report)
    eg = energy_groups(report, arch)
    vols = level_totals(access_volumes(report, nest, arch))
    row: dict[str, Any] = {
        "study": study, "case": b.name, "label": b.label, "layer": b.layer, "shape": nest.shape_text,
        "pe_array": f"{b.rows}×{b.cols}", "dataflow": _factors_text(rows_f, cols_f),
        "links": links_text(b.links) if variant != "no links" else "none", "variant": variant, "status": status,
        "energy_pj": report.energy_pj, "latency_cycles": report.latency_cycles, "compute_cycles": report.compute_cycles,
        "ideal_cycles": ideal, "vs_ideal": report.latency_cycles / ideal, "utilization": report.utilization,
        "spatial_utilization": report.spatial_used / pes, "pes_used": report.spatial_used, "pes": pes,
        "macs": nest.macs, "real_macs": nest.real_macs, "noc_elements": net, "link_elements": link,
        "forwarded_share": link / (net + link) if net + link else 0.0,
        **{f"energy_{k}": v for k, v in eg.items()},
        **{f"{lv}_{c}": vols.get(lv, {}).get(c) for lv in LEVELS for c in CATEGORIES},
        "time_s": None if time_s is None else round(time_s, 2),
    }
    return row


CSV_FIELDS = ("study", "case", "label", "layer", "shape", "pe_array", "dataflow", "links", "variant", "status",
              "energy_pj", "latency_cycles", "compute_cycles", "ideal_cycles", "vs_ideal", "utilization",
              "spatial_utilization", "pes_used", "pes", "macs", "real_macs", "noc_elements", "link_elements",
              "forwarded_share", *(f"energy_{k}" for k in (*LEVELS, "noc", "links", "mac")),
              *(f"{lv}_{c}" for lv in LEVELS for c in CATEGORIES), "time_s")


# ------------------------------------------------------------------------------------------------ run
def _validate(studies: Sequence[str], benchmarks: Sequence[str], layers: Sequence[str], objective: str,
              link_energy_ratio: float, link_bandwidth: float | None, gemm_size: int, batch: int,
              time_limit: float) -> None:
    check_choices(studies, STUDIES, "--studies", "study")
    check_choices(benchmarks, list(TABLE3), "--benchmarks", "benchmark")
    check_choices(layers, ALEXNET_LAYERS, "--layers", "AlexNet layer")
    check_choices([objective], OBJECTIVES, "--objective", "objective")
    if not studies:
        raise InputError("no study selected", path=("--studies",), expected="a comma-separated subset of: "
                         + ", ".join(STUDIES))
    if not math.isfinite(link_energy_ratio) or link_energy_ratio < 0:
        raise InputError(f"link energy ratio must be a non-negative number, got {link_energy_ratio}",
                         path=("--link-energy-ratio",), expected="a number >= 0 (link energy ÷ NoC energy per byte)")
    if link_bandwidth is not None and not link_bandwidth > 0:
        raise InputError(f"link bandwidth must be positive, got {link_bandwidth}", path=("--link-bandwidth",),
                         expected="bytes per cycle per link > 0 (omit it for unlimited)")
    for name, value in (("gemm-size", gemm_size), ("batch", batch)):
        if value < 1:
            raise InputError(f"{name.replace('-', ' ')} must be positive, got {value}", path=(f"--{name}",),
                             expected="an integer >= 1")
    if not time_limit > 0:
        raise InputError(f"time limit must be positive, got {time_limit}", path=("--time-limit",),
                         expected="seconds > 0")


def run_case(b: Benchmark, study: str, *, objective: str, gemm_size: int, batch: int, link_energy_ratio: float,
             link_bandwidth: float, time_limit: float, threads: int | None) -> tuple[list[dict[str, Any]],
                                                                                     dict[str, Any]]:
    """The three variants of one case: CSV rows and a JSON detail (volumes per operand, mappings, documents)."""
    from dlaopt.formulations.mapping.cost import evaluate_mapping
    from dlaopt.formulations.mapping.layers import run_layer_exact
    from dlaopt.formulations.mapping.problem import MappingProblem
    from dlaopt.io.instance import instance_from_dict
    from dlaopt.solvers.result import SolveOptions

    pb = MappingProblem()
    bare = pb.prepare(instance_from_dict(instance_doc(b, objective, gemm_size=gemm_size, batch=batch)))
    factors = spatial_factors(bare.nests[0].sizes, b)
    constraints = dataflow_constraints(b, *factors)
    doc0 = instance_doc(b, objective, gemm_size=gemm_size, batch=batch, constraints=constraints)
    data = pb.prepare(instance_from_dict(doc0))
    assert data.accelerator is not None
    acc_links = linked_accelerator(data.accelerator, b.links, link_energy_ratio, link_bandwidth)
    doc1 = instance_doc(b, objective, gemm_size=gemm_size, batch=batch, constraints=constraints,
                        hardware=hardware_doc(acc_links))
    data1 = pb.prepare(instance_from_dict(doc1))
    nest, space, space1 = data.nests[0], data.spaces[0], data1.spaces[0]
    assert len(space.archs) == len(space1.archs) == 1 and data1.nests[0].shape_key() == nest.shape_key()
    pes = data.accelerator.pe_array.num_pes
    arch0, arch1 = space.archs[0].arch, space1.archs[0].arch
    options = SolveOptions(time_limit=time_limit, threads=threads)

    def solve(sp: Any, arch: Any) -> tuple[Any, str, float, dict[str, Any]]:
        t0 = time.perf_counter()
        r = run_layer_exact(nest, arch, objective, data.options, options, "highs", sp)
        assert r is not None
        return r["mapping"], r["status"], time.perf_counter() - t0, r

    rows: list[dict[str, Any]] = []
    detail: dict[str, Any] = {"study": study, "case": b.name, "label": b.label, "layer": b.layer,
                              "shape": nest.shape_text, "pe_array": [b.rows, b.cols], "links": [
                                  {"operand": t, "axes": list(a)} for t, a in b.links],
                              "link_energy_pj_per_byte": acc_links.pe_array.links[0].energy_pj_per_byte
                              if b.links else None, "note": b.note,
                              "instances": {"no links": doc0, "links": doc1}, "variants": {}}
    m0, st0, t_0, r0 = solve(space, arch0)
    m1, st1, t_1, r1 = solve(space1, arch1) if b.links else (m0, st0, 0.0, r0)
    for variant, arch, m, status, secs, raw in (("no links", arch0, m0, st0, t_0, r0),
                                                ("same mapping", arch1, m0, "evaluated", None, None),
                                                ("links", arch1, m1, st1, t_1 if b.links else None, r1)):
        if m is None:
            msg = raw["message"] if raw else ""
            rows.append({"study": study, "case": b.name, "label": b.label, "layer": b.layer, "variant": variant,
                         "status": status, "pe_array": f"{b.rows}×{b.cols}", "shape": nest.shape_text,
                         "links": links_text(b.links), "time_s": None if secs is None else round(secs, 2)})
            detail["variants"][variant] = {"status": status, "message": msg}
            continue
        rep = evaluate_mapping(nest, arch, m)
        row = _row(b, study, variant, nest, arch, rep, factors, status, secs, pes)
        if variant == "links" and not b.links:
            row["status"] = f"{status} (no links: the no-links optimum)"
        rows.append(row)
        detail["variants"][variant] = {
            "status": status, "energy_pj": rep.energy_pj, "latency_cycles": rep.latency_cycles,
            "utilization": rep.utilization, "volumes": access_volumes(rep, nest, arch),
            "energy": energy_groups(rep, arch), "memory_cycles": dict(rep.memory_cycles),
            "mapping": m.to_dict(arch), "bound": raw.get("bound") if raw else None}
    return rows, detail


def run_polyacc(
    out_dir: str | Path = "results/polyacc",
    *,
    studies: Sequence[str] = STUDIES,
    benchmarks: Sequence[str] = tuple(TABLE3),
    layers: Sequence[str] = ALEXNET_LAYERS,
    objective: str = "energy",
    gemm_size: int = 256,
    batch: int = 1,
    link_energy_ratio: float = DEFAULT_LINK_ENERGY_RATIO,
    link_bandwidth: float | None = None,
    time_limit: float = 60.0,
    threads: int | None = None,
    plot: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ExperimentReport:
    """Both studies (module docstring); the tables, details and figure go into ``out_dir``.

    ``benchmarks``: Table 3's cases (study ``table3``); ``layers``: AlexNet's layers (study ``eyeriss``);
    ``gemm_size``: i = j = k of the GEMM cases (the seed's 256); ``batch``: of the convolution layers;
    ``time_limit``: seconds per exact solve."""
    _validate(studies, benchmarks, layers, objective, link_energy_ratio, link_bandwidth, gemm_size, batch,
              time_limit)
    bw = math.inf if link_bandwidth is None else float(link_bandwidth)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cases: list[tuple[str, Benchmark]] = []
    if "table3" in studies:
        cases += [("table3", TABLE3[n]) for n in TABLE3 if n in benchmarks]
    if "eyeriss" in studies:
        cases += [("eyeriss", eyeriss_benchmark(n)) for n in ALEXNET_LAYERS if n in layers]
    rows: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    for study, b in cases:
        t0 = time.perf_counter()
        r, d = run_case(b, study, objective=objective, gemm_size=gemm_size, batch=batch,
                        link_energy_ratio=link_energy_ratio, link_bandwidth=bw, time_limit=time_limit,
                        threads=threads)
        rows += r
        details.append(d)
        if progress:
            by = {x["variant"]: x for x in r}
            progress(f"polyacc: {study} {b.name}: energy {_e(by['no links'].get('energy_pj'))} → "
                     f"{_e(by['links'].get('energy_pj'))} pJ with links, latency "
                     f"{_e(by['links'].get('latency_cycles'))} cycles ({time.perf_counter() - t0:.1f} s)")
    wall = time.perf_counter() - t_start
    summary = {"studies": list(studies), "objective": objective, "gemm_size": gemm_size, "batch": batch,
               "link_energy_ratio": link_energy_ratio, "link_bandwidth": link_bandwidth, "time_limit_s": time_limit,
               "wall_s": round(wall, 1), "checks": derived_checks(rows, objective, link_energy_ratio),
               "headline": headline(rows),
               "environment": environment(threads)}
    table = report_markdown(rows, summary)

    def figure() -> Any:
        from dlaopt.plots.forwarding import plot_polyacc

        return plot_polyacc(rows)

    csv_path, md_path, plot_path = write_report(out, "polyacc", rows, CSV_FIELDS, table,
                                                ("polyacc.json", {"summary": summary, "rows": rows,
                                                                  "cases": details}),
                                                figure if plot and rows else None)
    return ExperimentReport(rows, csv_path, md_path, plot_path, table, summary)


# ------------------------------------------------------------------------------------------------ derived facts
REL_TOL = 1e-6


def derived_checks(rows: Sequence[Mapping[str, Any]], objective: str = "energy",
                   link_energy_ratio: float = DEFAULT_LINK_ENERGY_RATIO) -> dict[str, Any]:
    """What must hold whatever the numbers: forwarding the same mapping never costs energy when the links are no
    dearer than the NoC (``link_energy_ratio <= 1``); the optimum with links is no worse than that mapping (within
    the MILP's gap); utilization is real MACs ÷ (latency × PEs); no Fig. 5 category is negative; a case without
    links costs the same in both variants."""
    by: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["study"], r["case"]), {})[r["variant"]] = r
    failures: list[str] = []
    for (_study, case), v in by.items():
        for r in v.values():
            if r.get("latency_cycles") is None:
                continue
            u = r["real_macs"] / (r["latency_cycles"] * r["pes"])
            if abs(u - r["utilization"]) > REL_TOL * max(1.0, u):
                failures.append(f"{case} {r['variant']}: utilization {r['utilization']} != {u}")
            negative = [f"{lv}_{c}" for lv in LEVELS for c in CATEGORIES if (r.get(f"{lv}_{c}") or 0) < 0]
            if negative:
                failures.append(f"{case} {r['variant']}: negative volumes {negative}")
        base, same, opt = (v.get(k, {}) for k in VARIANTS)
        e_base, e_same = base.get("energy_pj"), same.get("energy_pj")
        if link_energy_ratio <= 1 and e_base is not None and e_same is not None and e_same > e_base * (1 + REL_TOL):
            failures.append(f"{case}: forwarding raised the energy of the same mapping ({e_base} -> {e_same})")
        if same.get("links") == "none" and e_base is not None and e_same is not None \
                and abs(e_same - e_base) > REL_TOL * e_base:
            failures.append(f"{case}: no links, yet the variants differ")
        obj, ref = _objective_of(opt, objective), _objective_of(same, objective)
        if str(opt.get("status", "")).startswith("optimal") and obj is not None and ref is not None \
                and obj > ref * (1 + 2e-4):
            failures.append(f"{case}: the optimum with links is worse than the no-links mapping with links")
    return {"cases": len(by), "failures": failures, "ok": not failures}


def _objective_of(r: Mapping[str, Any], objective: str) -> float | None:
    e, lat = r.get("energy_pj"), r.get("latency_cycles")
    if e is None or lat is None:
        return None
    return e if objective == "energy" else lat if objective == "latency" else e * lat


def headline(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per case: energy saved by forwarding (same mapping and optimum), share of the NoC traffic moved to links,
    latency over the ideal, utilization."""
    out: dict[str, Any] = {}
    for r in rows:
        if r["variant"] != "links" or r.get("energy_pj") is None:
            continue
        base = next((x for x in rows if x["case"] == r["case"] and x["variant"] == "no links"), None)
        same = next((x for x in rows if x["case"] == r["case"] and x["variant"] == "same mapping"), None)
        if base is None or base.get("energy_pj") is None:
            continue
        out[r["case"]] = {
            "energy_saving_same_mapping": 1 - same["energy_pj"] / base["energy_pj"] if same else None,
            "energy_saving_optimum": 1 - r["energy_pj"] / base["energy_pj"],
            "forwarded_share": r["forwarded_share"], "latency_vs_ideal": r["vs_ideal"],
            "utilization": r["utilization"], "spatial_utilization": r["spatial_utilization"]}
    return out


# ------------------------------------------------------------------------------------------------ report
def _e(v: float | None) -> str:
    return sci_text(v, 4)


def _pct(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{100 * v:.{digits}f} %"


def seed_claims(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """The seed's reported figures (§4.1, §4.2), each with what this run shows and whether it can be reproduced
    here: we have no chip measurements and run neither TENET nor MAESTRO."""
    def span(study: str, key: str, scale: float = 1.0, fmt: str = "{:.2f}") -> str:
        vals = [float(r[key]) * scale for r in rows if r["study"] == study and r["variant"] == "links"
                and r.get(key) is not None]
        if not vals:
            return "(not run)"
        return fmt.format(min(vals)) + ("" if max(vals) == min(vals) else "–" + fmt.format(max(vals)))

    util = ", ".join(f"{r['layer']} {100 * float(r['utilization']):.1f} %" for r in rows
                     if r["study"] == "eyeriss" and r["variant"] == "links" and r.get("utilization") is not None)
    return [
        ["§4.1, Fig. 7", "execution time closely matches the ideal MACs ÷ PEs; TENET, MAESTRO and PolyAcc differ by "
         "at most 12.5 %", f"ours: latency ÷ ideal {span('table3', 'vs_ideal')} over Table 3's cases (the gap is "
         "the array left idle by each dataflow's fixed unrolling, and memory bandwidth); TENET and MAESTRO are not "
         "run here"],
        ["§4.2, Fig. 8(c)", "PE utilization equal to Eyeriss' (and TENET's)", f"ours (links): {util or '(not run)'}; "
         "Eyeriss' per-layer figures are not in the seed and we have no chip measurements: not reproducible here"],
        ["§4.2, Fig. 8(a)", "latency within 4.15–15.4 % of the chip", "no chip measurements: not reproducible; our "
         f"model's latency ÷ ideal MACs ÷ PEs: {span('eyeriss', 'vs_ideal')}"],
        ["§4.2, Fig. 8(b)", "energy within 7.5 % of the chip", "no chip measurements: not reproducible; forwarding "
         f"moves {span('eyeriss', 'forwarded_share', 100, '{:.0f}')} % of the NoC traffic to the links"],
        ["§4.2, abstract", "0.82 % (latency) and 18.8 % (energy) better estimates than TENET / MAESTRO",
         "needs both frameworks and the chip: not reproducible here"],
    ]


def report_markdown(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> str:
    bw = summary["link_bandwidth"]
    lines = ["# PolyAcc: fixed dataflows with and without PE-to-PE forwarding (seed 004)", "",
             f"Every layer is mapped by the exact method (objective {summary['objective']}, each MILP proven "
             f"optimal within {summary['time_limit_s']} s) with its dataflow's spatial unrolling fixed by mapping "
             "constraints; temporal tiling and loop orders are the solver's. Array: the Eyeriss-like preset (DRAM → "
             "108 KB glb → 512 B rf per PE; per 16-bit access MAC 1, RF 1, NoC 2, buffer 6, DRAM 200) resized per "
             f"case; links at {summary['link_energy_ratio']} × the NoC energy per byte, "
             f"{'unlimited bandwidth' if bw is None else f'{bw} B/cycle per link'}. Variants: `no links` (optimum "
             "without links), `same mapping` (that mapping with the links: forwarding alone), `links` (optimum "
             "with links).", ""]
    t3 = [r for r in rows if r["study"] == "table3"]
    if t3:
        lines += _table3_sections(t3, summary)
    ey = [r for r in rows if r["study"] == "eyeriss"]
    if ey:
        lines += _eyeriss_section(ey)
    lines += ["## Next to the seed", "",
              md_table(["seed", "reported", "here"], seed_claims(rows), ["l", "l", "l"]), ""]
    checks = summary["checks"]
    lines += ["## Checks", "",
              f"- forwarding never raised a mapping's energy (links cheaper than the NoC), the optimum with links is "
              f"never worse than the no-links mapping with links, utilization = real MACs ÷ (latency × PEs), no "
              f"negative volume: {'all hold' if checks['ok'] else 'FAILED: ' + '; '.join(checks['failures'])} "
              f"({checks['cases']} cases)",
              f"- {len(rows)} rows in {summary['wall_s']} s of wall time", "",
              environment_markdown(summary["environment"])]
    return "\n".join(lines) + "\n"


def _table3_sections(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> list[str]:
    lines = ["## Table 3's benchmarks (§4.1)", ""]
    cases = list(dict.fromkeys(r["case"] for r in rows))
    first = {c: next(r for r in rows if r["case"] == c) for c in cases}
    lines.append(md_table(["case", "layer", "PE array", "spatial factors", "links"],
                          [[first[c]["label"], f"{first[c]['layer']} ({first[c]['shape']})", first[c]["pe_array"],
                            first[c].get("dataflow", "—"),
                            next((r["links"] for r in rows if r["case"] == c and r["variant"] == "links"), "—")]
                           for c in cases], ["l", "l", "r", "l", "l"]))
    lines += ["", "### Data access volumes per level (Fig. 5)", "",
              "Elements served by each level to the level (or MACs) below, all operands: temporal reuse, multicast "
              "(one parent access reaching several PEs, or partial sums reduced in the network), forwarded over "
              "links, unique (received from the parent; main memory: the tensors).", ""]
    body = []
    for r in rows:
        if r["variant"] == "same mapping" or r.get("energy_pj") is None:
            continue
        for lv in LEVELS:
            vals = [r.get(f"{lv}_{c}") for c in CATEGORIES]
            total = sum(v or 0 for v in vals)
            body.append([r["case"], r["variant"], lv, *(_e(v) for v in vals),
                         *(_pct((v or 0) / total if total else None, 0) for v in vals[1:3])])
    lines.append(md_table(["case", "variant", "level", "temporal", "multicast", "forwarded", "unique", "multicast %",
                           "forwarded %"], body, ["l", "l", "l"] + ["r"] * 6))
    lines += ["", "### Energy per level, NoC and links (Fig. 6), pJ", ""]
    lines += _energy_table(rows)
    lines += ["", "### Execution time and PE utilization (Fig. 7)", "",
              "Ideal = real MACs ÷ PEs (the seed's ground truth). Utilization = real MACs ÷ (latency × PEs); "
              "spatial = PEs the mapping unrolls ÷ PEs.", ""]
    lines += _time_table(rows)
    return lines + [""]


def _energy_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    body = []
    for r in rows:
        if r.get("energy_pj") is None:
            body.append([r["case"], r["variant"], r["status"]] + ["—"] * 8)
            continue
        body.append([r["case"], r["variant"], r["status"], *(_e(r.get(f"energy_{k}")) for k in
                                                             ("dram", "glb", "rf", "noc", "links", "mac")),
                     _e(r["energy_pj"]), _pct(r.get("forwarded_share"))])
    return [md_table(["case", "variant", "status", "DRAM", "glb", "rf", "NoC", "links", "MAC", "total",
                      "NoC traffic forwarded"], body, ["l", "l", "l"] + ["r"] * 8)]


def _time_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    body = []
    for r in rows:
        if r["variant"] == "same mapping" or r.get("latency_cycles") is None:
            continue
        body.append([r["case"], r["variant"], _e(r["macs"]), r["pe_array"], _e(r["ideal_cycles"]),
                     _e(r["latency_cycles"]), f"{r['vs_ideal']:.3f}", _pct(r["utilization"]),
                     f"{r['pes_used']}/{r['pes']} ({_pct(r['spatial_utilization'], 0)})"])
    return [md_table(["case", "variant", "MACs", "PEs", "ideal cycles", "latency", "÷ ideal", "utilization",
                      "spatial"], body, ["l", "l", "r", "r", "r", "r", "r", "r", "r"])]


def _eyeriss_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["## Eyeriss validation setting (§4.2): AlexNet on 14×12 PEs, row stationary", "",
             "Links: partial sums down the columns, weights to the left along the rows, input feature maps along "
             "the diagonal. Energy saved = 1 − energy ÷ the no-links optimum's; NoC → links = the share of the "
             "NoC traffic carried by the links instead.", ""]
    body = []
    for layer in dict.fromkeys(r["layer"] for r in rows):
        v = {r["variant"]: r for r in rows if r["layer"] == layer}
        base, same, opt = v.get("no links"), v.get("same mapping"), v.get("links")
        if not base or base.get("energy_pj") is None:
            body.append([layer, base["status"] if base else "—"] + ["—"] * 10)
            continue

        def saving(r: Mapping[str, Any] | None, ref: float = base["energy_pj"]) -> str:
            return "—" if not r or r.get("energy_pj") is None else _pct(1 - r["energy_pj"] / ref, 2)

        body.append([layer, base["shape"], base["dataflow"], f"{base['pes_used']}/{base['pes']}",
                     _pct(base["utilization"]), _pct(opt["utilization"]) if opt and "utilization" in opt else "—",
                     _e(base["latency_cycles"]), f"{base['vs_ideal']:.3f}",
                     _e(opt.get("latency_cycles")) if opt else "—", _e(base["energy_pj"]), saving(same),
                     saving(opt), _pct(opt.get("forwarded_share")) if opt else "—"])
    lines.append(md_table(["layer", "shape", "spatial factors", "PEs used", "util. no links", "util. links",
                           "latency no links", "÷ ideal", "latency links", "energy no links (pJ)",
                           "saved, same mapping", "saved, optimum", "NoC → links"], body,
                          ["l", "l", "l"] + ["r"] * 10))
    lines += ["", "Full energy breakdown:", ""]
    lines += _energy_table(rows)
    return lines + [""]


__all__ = ["ALEXNET_LAYERS", "CATEGORIES", "EYERISS_LINKS", "OBJECTIVES", "STUDIES", "TABLE3", "VARIANTS",
           "Benchmark", "access_volumes", "dataflow_constraints", "derived_checks", "energy_groups",
           "eyeriss_benchmark", "eyeriss_instance_doc", "gemm_workload", "hardware_doc", "headline", "instance_doc",
           "linked_accelerator", "run_case", "run_polyacc", "spatial_factors"]
