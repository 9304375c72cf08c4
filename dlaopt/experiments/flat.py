"""FLAT (seed 001, Appendix A: Fused Logit Attention Tiling) on its edge and cloud accelerators.

The chapter's workloads (§A.3.1: BERT-base, TransformerXL, FlauBERT, T5, XLM-MLM-En at batch 64, sequence lengths
512 … 64K and 256K) on Table A.3's platforms (presets ``flat-edge`` and ``flat-cloud``: 32x32 PEs, 1 TB/s on chip,
50 GB/s off chip, 512 KB buffer; 256x256, 8 TB/s, 400 GB/s, 32 MB), one encoder block of each model mapped by the
three dataflows of Table A.2:

* **Naive** — every operator alone with a weight-stationary dataflow and a fixed tile: the NVDLA/TPU-like template
  (input channels down the PE rows, output channels across the columns, the other loops in template order at main
  memory), so the global-buffer tile is one pass of the array; L, the softmax and A run one after another with the
  N×N logits written to and read back from main memory.
* **Flex-opt** — every operator alone with its proven latency-optimal intra-operator mapping (the single-layer MILP,
  :func:`~dlaopt.formulations.mapping.exact.solve_layer`; the chapter's exhaustive Flex search), the logits through
  main memory and the softmax as its own pass (:func:`~dlaopt.formulations.fusion.cost.combine_unfused`).
* **FLAT-opt** — L, softmax and A fused: for each FLAT granularity (M: batched multi-head, B: batch, H: head, R:
  Rx query rows, every divisor Rx; :func:`~dlaopt.formulations.fusion.flat.flat_tiles`) the outer tile, and inside it
  each operator's latency-optimal mapping with the logit tile rooted in the global buffer and the buffer's room for
  the other operands reduced by it (double-buffered, Table A.1's convention); FLAT-opt is the best tile over all
  granularities (:func:`~dlaopt.formulations.fusion.cost.combine_fused`). FLAT's space also holds the unfused
  execution (its fallback): when no fused tile is faster, FLAT-opt runs L and A as Flex-opt does, and the report
  gives the best fused tile next to it. Tiles are visited in order of a lower bound
  (per operator and outer iteration, ``max(MACs / MAC units, compulsory off-chip bytes / bandwidth)``) and the search
  stops once the bound reaches the best latency found, so the optimum over the granularities is exact (each per-op
  optimum is the MILP's proven optimum).

The FC operators (Q, K, V and output projections, FF1, FF2) are the same for Flex-opt and FLAT-opt (the chapter fuses
only L and A). Reported per model, platform, sequence length and dataflow: off-chip traffic, runtime and energy of
L-A and end to end (the model's layers × one block: its six FC operators, L, softmax and A; norms and residual adds
are not counted), the utilization (ideal runtime ÷ runtime, §A.3.1), FLAT-opt's granularity, tile and buffer use;
the end-to-end speedup and energy ratio of FLAT-opt over Flex-opt next to the chapter's Fig. A.14; per granularity the
longest sequence whose buffer requirement fits (Table A.1's formulas and the model's own least requirement).

Energies and the clock are the presets' (1 GHz, Eyeriss normalised energies per 16-bit access; the softmax unit's
energy per operation is the MAC energy and its throughput one operation per PE per cycle; assumptions the chapter
does not fix). Outputs: ``flat.md``, ``flat.csv``, ``flat.json`` and ``flat.png``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlaopt.experiments.common import ExperimentReport, check_choices, write_report
from dlaopt.results import environment, environment_markdown, md_table, sci_text

KiB, MiB = 1 << 10, 1 << 20
BATCH = 64
WORD_BYTES = 2
MODELS: tuple[str, ...] = ("bert-base", "trxl", "flaubert", "t5", "xlm")
MODEL_LABEL: dict[str, str] = {"bert-base": "BERT", "trxl": "TrXL", "flaubert": "FlauBERT", "t5": "T5", "xlm": "XLM"}
SEQ_LENS: tuple[int, ...] = (512, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB)
PLATFORMS: dict[str, str] = {"edge": "flat-edge", "cloud": "flat-cloud"}
METHODS: tuple[str, ...] = ("naive", "flex-opt", "flat-opt")
METHOD_LABEL: dict[str, str] = {"naive": "Naive", "flex-opt": "Flex-opt", "flat-opt": "FLAT-opt"}
GRANULARITY_LABEL: dict[str, str] = {"M": "M-Gran", "B": "B-Gran", "H": "H-Gran", "R": "R-Gran"}
SCALES: dict[str, dict[str, tuple[Any, ...]]] = {
    "quick": {"models": ("bert-base", "xlm"), "seq_lens": SEQ_LENS[:4]},
    "full": {"models": MODELS, "seq_lens": SEQ_LENS},
}
# FC operators of one encoder block (name suffix after "encoder0.") and the fused pair
FC_OPS: tuple[str, ...] = ("attn.q", "attn.k", "attn.v", "attn.out", "ffn.fc1", "ffn.fc2")
STAGING = "glb"

# Seed 001 Fig. A.14: end-to-end speedup and energy-consumption ratio of FLAT-opt over Flex-opt, per platform and
# model, at N = 512, 4K, 16K, 64K, 256K.
SEED_FIG_A14: dict[str, dict[str, dict[str, tuple[float, ...]]]] = {
    "edge": {
        "speedup": {"bert-base": (1.02, 1.27, 2.21, 2.84, 3.10), "trxl": (1.02, 1.23, 2.06, 2.75, 3.07),
                    "flaubert": (1.01, 1.11, 1.62, 2.26, 2.67), "t5": (1.03, 1.34, 2.40, 2.93, 3.13),
                    "xlm": (1.00, 1.05, 1.35, 1.87, 2.38)},
        "energy": {"bert-base": (0.98, 0.78, 0.44, 0.34, 0.31), "trxl": (0.98, 0.81, 0.48, 0.35, 0.31),
                   "flaubert": (1.00, 0.90, 0.61, 0.43, 0.36), "t5": (0.97, 0.74, 0.41, 0.33, 0.31),
                   "xlm": (1.00, 0.95, 0.74, 0.52, 0.31)},
    },
    "cloud": {
        "speedup": {"bert-base": (1.16, 1.38, 1.46, 2.23, 2.72), "trxl": (1.13, 1.34, 1.45, 2.20, 2.71),
                    "flaubert": (1.07, 1.21, 1.42, 2.21, 2.93), "t5": (1.18, 1.43, 1.48, 2.26, 2.73),
                    "xlm": (1.02, 1.06, 1.13, 1.98, 3.09)},
        "energy": {"bert-base": (0.71, 0.68, 0.11, 0.34, 0.27), "trxl": (0.73, 0.27, 0.13, 0.35, 0.27),
                   "flaubert": (0.87, 0.80, 0.72, 0.49, 0.37), "t5": (0.69, 0.66, 0.50, 0.33, 0.27),
                   "xlm": (0.97, 0.89, 0.78, 0.50, 0.31)},
    },
}
# Fig. A.14's averages (speedup, energy ratio) and the §A.5 claims at 64K (FLAT-opt over Flex-opt, Fig. A.13).
SEED_AVERAGES: dict[str, tuple[float, float]] = {"edge": (1.75, 0.56), "cloud": (1.65, 0.45)}
SEED_64K_SPEEDUP: dict[str, tuple[str, float]] = {"edge": ("bert-base", 2.8), "cloud": ("xlm", 3.07)}
MATCH_TOLERANCE = 0.25  # a ratio "matches" the chapter's within 25 %

CSV_FIELDS = ("model", "platform", "seq_len", "method", "status", "runtime_cycles", "runtime_s", "energy_pj",
              "offchip_bytes", "utilization", "la_latency_cycles", "la_energy_pj", "la_offchip_bytes",
              "la_utilization", "la_share", "fc_latency_cycles", "fused", "granularity", "outer_tile", "n_outer",
              "staging_bytes", "fused_la_latency_cycles", "fused_la_energy_pj", "fused_la_offchip_bytes",
              "fused_la_utilization", "fused_granularity", "fused_outer_tile", "fused_note", "speedup_vs_flex",
              "energy_vs_flex", "seed_speedup", "seed_energy_ratio", "time_s", "note")


# ================================================================================================ model shapes
@dataclass(frozen=True)
class ModelShape:
    """One encoder model's hyper-parameters (the zoo factory's defaults)."""

    name: str
    layers: int
    hidden: int
    heads: int
    ffn: int

    @property
    def d(self) -> int:
        return self.hidden // self.heads


def model_shape(model: str) -> ModelShape:
    from dlaopt.zoo import ZOO

    p = ZOO.entry(model).defaults
    return ModelShape(model, int(p["layers"]), int(p["hidden"]), int(p["heads"]), int(p["ffn"]))


def block_nests(model: str, seq_len: int, batch: int = BATCH) -> dict[str, Any]:
    """The FC operators' loop nests of one encoder block (``FC_OPS`` -> LoopNest) from the zoo network at
    ``seq_len``."""
    from dlaopt.formulations.mapping.loopnest import loopnest_from_operator
    from dlaopt.zoo import ZOO

    wl = ZOO.create(model, {"batch": batch, "seq_len": seq_len, "layers": 1})
    ops = {op.name: op for op in wl.operators}
    return {name: loopnest_from_operator(wl, ops[f"encoder0.{name}"]) for name in FC_OPS}


# ================================================================================================ figures
@dataclass
class Figures:
    """Latency (cycles), energy (pJ), off-chip bytes and MACs of a piece of work (ops run one after another)."""

    latency_cycles: float = 0.0
    energy_pj: float = 0.0
    offchip_bytes: float = 0.0
    real_macs: int = 0

    def __add__(self, other: Figures) -> Figures:
        return Figures(self.latency_cycles + other.latency_cycles, self.energy_pj + other.energy_pj,
                       self.offchip_bytes + other.offchip_bytes, self.real_macs + other.real_macs)

    def times(self, k: int) -> Figures:
        return Figures(self.latency_cycles * k, self.energy_pj * k, self.offchip_bytes * k, self.real_macs * k)

    def utilization(self, mac_units: int) -> float | None:
        if self.latency_cycles <= 0 or not math.isfinite(self.latency_cycles):
            return None
        return self.real_macs / (self.latency_cycles * mac_units)


def offchip_bytes(report: Any, nest: Any, arch: Any) -> float:
    """Main-memory reads + writes (bytes) of a single-layer :class:`~dlaopt.formulations.mapping.cost.CostReport`."""
    acc = report.accesses.get(arch.levels[-1].name, {})
    return float(sum((a.reads + a.writes) * nest.operand(t).word_bytes for t, a in acc.items()))


def _layer_figures(report: Any, nest: Any, arch: Any) -> Figures:
    return Figures(report.latency_cycles, report.energy_pj, offchip_bytes(report, nest, arch), nest.real_macs)


def _fused_figures(rep: Any) -> Figures:
    return Figures(rep.latency_cycles, rep.energy_pj, rep.offchip_bytes, rep.real_macs)


# ================================================================================================ solving
class Solver:
    """Per-operator optima on one architecture: a latency :class:`~dlaopt.formulations.fusion.exact.GroupSolver`
    whose cache of inner solves (by loop-nest shape, roots and capacity limits) serves the FC operators, the
    unfused L and A and every FLAT tile, across granularities, sequence lengths and models."""

    def __init__(self, acc: Any, *, time_limit: float) -> None:
        from dlaopt.formulations.fusion.exact import GroupSolver
        from dlaopt.formulations.mapping.arch import arch_from_accelerator

        self.acc = acc
        self.arch = arch_from_accelerator(acc)
        self.gs = GroupSolver(self.arch, "latency", lanes=acc.pe_array.lanes,
                              sfu_energy_pj_per_op=acc.mac_energy_pj, entry_time_limit=time_limit)

    @property
    def solves(self) -> int:
        return self.gs.solves

    def optimum(self, problem: Any) -> tuple[Any, Any, str]:
        """(mapping, cost report, status) of the latency-optimal mapping of an
        :class:`~dlaopt.formulations.fusion.cost.InnerProblem`; mapping ``None`` when none is found."""
        r = self.gs.inner(problem)
        status = r.status.value + (f" ({r.message})" if r.message and r.status.value != "optimal" else "")
        return r.mapping, r.report, status

    def layer(self, nest: Any) -> tuple[Any, Any, str]:
        """The latency optimum of ``nest`` alone (no roots, no limits)."""
        from dlaopt.formulations.fusion.cost import InnerProblem

        return self.optimum(InnerProblem(nest, {}, {}))

    def naive(self, nest: Any) -> tuple[Any, Any]:
        """Table A.2's Naive: the weight-stationary template with its fixed tile (module docstring)."""
        from dlaopt.formulations.mapping.cost import evaluate_mapping
        from dlaopt.formulations.mapping.heuristics import dataflow_mapping, fit_capacity

        m = fit_capacity(nest, self.arch, dataflow_mapping(nest, self.arch, "nvdla"))
        if m is None:
            raise RuntimeError(f"the weight-stationary template does not fit {nest.describe()}")
        return m, evaluate_mapping(nest, self.arch, m)


@dataclass
class AttentionResult:
    """The L-softmax-A figures of one dataflow, and FLAT's choice."""

    figures: Figures | None
    status: str
    granularity: str | None = None
    tile: dict[str, int] | None = None
    n_outer: int | None = None
    staging_bytes: int | None = None
    mappings: list[Any] = field(default_factory=list)
    per_granularity: dict[str, dict[str, Any]] = field(default_factory=dict)
    tiles_solved: int = 0
    tiles_total: int = 0
    report: Any = None  # the FusedReport of the execution chosen


def attention_unfused(solver: Solver, group: Any, method: str) -> AttentionResult:
    """Naive or Flex-opt on the attention group: each operator alone, the logits through main memory."""
    from dlaopt.formulations.fusion.cost import combine_unfused, unfused_problems

    reports, mappings, status = [], [], "optimal"
    for p in unfused_problems(group, solver.arch):
        if method == "naive":
            m, rep = solver.naive(p.nest)
            status = "fixed"
        else:
            m, rep, st = solver.optimum(p)
            if m is None:
                return AttentionResult(None, st)
            if st != "optimal":
                status = st
        reports.append(rep)
        mappings.append(m)
    rep = combine_unfused(group, solver.arch, reports, lanes=solver.acc.pe_array.lanes,
                          sfu_energy_pj_per_op=solver.acc.mac_energy_pj)
    return AttentionResult(_fused_figures(rep), status, mappings=mappings,
                           staging_bytes=max(buffer_bytes(r, solver.arch) for r in reports), report=rep)


def buffer_bytes(report: Any, arch: Any) -> int:
    """Bytes a single-operator mapping keeps in the global buffer (its tiles there)."""
    level = next(lv.name for lv in arch.levels if any(st.memory == STAGING for st in lv.stores))
    return int(sum(report.tile_bytes.get(level, {}).values()))


def attention_flat(solver: Solver, group: Any, *, cutoff: float | None = None,
                   granularities: Sequence[str] = ("M", "B", "H", "R")) -> AttentionResult:
    """FLAT-opt's fused part: per granularity the exact least-latency fused execution over its tiles
    (:meth:`~dlaopt.formulations.fusion.exact.GroupSolver.solve`, pruned by its lower bound), and the best of them
    (module docstring). ``cutoff``: the unfused optimum's latency — a tile whose lower bound reaches it cannot
    improve FLAT-opt and is not solved (its granularity is reported as pruned)."""
    from dlaopt.formulations.fusion.cost import inner_problems, staging_index
    from dlaopt.formulations.fusion.exact import tile_lower_bound
    from dlaopt.formulations.fusion.flat import flat_tiles

    s = staging_index(solver.arch, STAGING)
    best = AttentionResult(None, "infeasible")
    per: dict[str, dict[str, Any]] = {}
    statuses: list[str] = []
    for gran in granularities:
        tiles, cut, fit = [], 0, 0
        for _, t in flat_tiles(group, gran):
            probs = inner_problems(group, solver.arch, t, s)
            if any(v < 0 for p in probs for v in p.capacity_limits.values()):
                continue  # the logit tile alone overflows the buffer
            fit += 1
            if cutoff is not None and tile_lower_bound(group, solver.arch, t, probs, "latency")[0] >= cutoff:
                cut += 1
                continue
            tiles.append(t)
        best.tiles_total += fit
        if not tiles:
            per[gran] = {"status": "does not fit" if not fit else "pruned (lower bound ≥ unfused)",
                         "tiles": fit, "tiles_solved": 0}
            continue
        opt = solver.gs.solve(group, s, tiles)
        st = opt.stats()
        best.tiles_solved += st["tiles_solved"]
        statuses.append(opt.status.value)
        if opt.report is None or opt.tile is None:
            status = opt.status.value
            if status == "infeasible":  # the tiles left after the cut leave no room for the operators' tiles
                status = "pruned (lower bound ≥ unfused) or no room" if cut else "does not fit"
            per[gran] = {"status": status, "tiles": fit, "tiles_solved": 0}
            continue
        fig = _fused_figures(opt.report)
        per[gran] = {"latency_cycles": fig.latency_cycles, "energy_pj": fig.energy_pj,
                     "offchip_bytes": fig.offchip_bytes, "utilization": fig.utilization(solver.arch.num_macs),
                     "tile": dict(opt.tile), "n_outer": opt.report.n_outer,
                     "staging_bytes": opt.report.staging_bytes, "status": opt.status.value,
                     "tiles": fit, "tiles_solved": st["tiles_solved"], "tiles_cut": cut}
        if best.figures is None or fig.latency_cycles < best.figures.latency_cycles:
            best.figures, best.granularity, best.tile = fig, gran, dict(opt.tile)
            best.n_outer, best.staging_bytes, best.mappings = opt.report.n_outer, opt.report.staging_bytes, list(
                opt.mappings)
            best.report = opt.report
    best.per_granularity = per
    bad = sorted(set(statuses) - {"optimal", "infeasible"})
    if best.figures is not None:
        best.status = "optimal" if not bad else "feasible (" + ", ".join(bad) + ")"
    elif bad:
        best.status = ", ".join(bad)
    return best


def flat_opt(fused: AttentionResult, unfused: AttentionResult) -> AttentionResult:
    """FLAT-opt: the best point of FLAT's space, which holds the fused tiles and, as FLAT's fallback, running L and A
    unfused (Flex-opt's execution) — the fused optimum when it is faster, else the unfused one."""
    if unfused.figures is None:
        if fused.figures is None:
            return AttentionResult(None, f"unfused: {unfused.status}")
        fused.status = f"fused optimum; the unfused one is missing ({unfused.status})"
        return fused
    if fused.figures is not None and fused.figures.latency_cycles < unfused.figures.latency_cycles:
        return fused
    return AttentionResult(unfused.figures, unfused.status, mappings=unfused.mappings,
                           staging_bytes=unfused.staging_bytes, per_granularity=fused.per_granularity,
                           tiles_solved=fused.tiles_solved, tiles_total=fused.tiles_total, report=unfused.report)


# ================================================================================================ buffer fits
def least_requirement_bytes(gran: str, shape: ModelShape, seq_len: int, *, batch: int = BATCH, rx: int = 1,
                            word: int = WORD_BYTES, buffering: int = 2) -> int:
    """The least global-buffer bytes a FLAT granularity needs in this model: the whole logit tile of one outer
    iteration (M: batch·heads·N², B: heads·N², H: N², R: Rx·N elements; it is not double-buffered) plus, per
    operator, ``buffering`` copies of one element of each other operand (inner tiles may shrink to one element)."""
    rows = {"M": batch * shape.heads * seq_len, "B": shape.heads * seq_len, "H": seq_len, "R": rx}[gran]
    return (rows * seq_len + buffering * 2) * word


def table_a1_bytes(gran: str, shape: ModelShape, seq_len: int, *, batch: int = BATCH, rx: int = 1,
                   word: int = WORD_BYTES) -> int:
    """Table A.1's requirement (elements, the O() dropped) in bytes."""
    from dlaopt.formulations.fusion.flat import table_a1_requirement

    return table_a1_requirement(gran, batch, shape.heads, seq_len, shape.d, rx if gran == "R" else None) * word


def longest_fitting(fits: Callable[[int], bool], hi: int = 1 << 40) -> int:
    """The largest ``n >= 0`` with ``fits(n)`` (``fits`` monotone decreasing in n; ``fits(0)`` assumed)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def fits_table(models: Sequence[str], platforms: Sequence[str], *, batch: int = BATCH) -> list[dict[str, Any]]:
    """Per model, platform and granularity: the longest sequence whose requirement fits the buffer, by the least
    requirement and by Table A.1."""
    from dlaopt.hardware.presets import PRESETS

    out = []
    for model in models:
        shape = model_shape(model)
        for platform in platforms:
            cap = PRESETS.create(PLATFORMS[platform], {}).memory(STAGING).capacity_bytes
            for gran in ("M", "B", "H", "R"):
                least = longest_fitting(lambda n, g=gran, sh=shape, c=cap: least_requirement_bytes(
                    g, sh, n, batch=batch) <= c)
                a1 = longest_fitting(lambda n, g=gran, sh=shape, c=cap: table_a1_bytes(g, sh, n, batch=batch) <= c)
                out.append({"model": model, "platform": platform, "granularity": gran, "buffer_bytes": cap,
                            "longest_least": least, "longest_table_a1": a1,
                            "sweep_least": max((n for n in SEQ_LENS if n <= least), default=None),
                            "sweep_table_a1": max((n for n in SEQ_LENS if n <= a1), default=None)})
    return out


# ================================================================================================ the experiment
def _validate(models: Sequence[str], platforms: Sequence[str], seq_lens: Sequence[int], scale: str) -> None:
    from dlaopt.errors import InputError

    check_choices([scale], list(SCALES), "--scale", "scale", "quick or full")
    check_choices(models, MODELS, "--models", "model", ", ".join(MODELS))
    check_choices(platforms, list(PLATFORMS), "--platforms", "platform", "edge, cloud")
    for n in seq_lens:
        if n < 1 or n % 64:
            raise InputError(f"sequence length must be a positive multiple of 64, got {n}", path=("--seq-lens",),
                             expected="e.g. 512,4096,16384")
    if not models or not platforms or not seq_lens:
        raise InputError("nothing to run: give at least one model, platform and sequence length",
                         path=("--models" if not models else "--platforms" if not platforms else "--seq-lens",))


def _seed_ratio(platform: str, what: str, model: str, seq_len: int) -> float | None:
    if seq_len not in SEQ_LENS:
        return None
    vals = SEED_FIG_A14.get(platform, {}).get(what, {}).get(model)
    return vals[SEQ_LENS.index(seq_len)] if vals else None


def run_flat(
    out_dir: str | Path = "results/flat",
    *,
    scale: str = "quick",
    models: Sequence[str] | None = None,
    platforms: Sequence[str] = ("edge", "cloud"),
    seq_lens: Sequence[int] | None = None,
    batch: int = BATCH,
    time_limit: float = 60.0,
    plot: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ExperimentReport:
    """Every (model, platform, sequence length) case (module docstring); ``scale`` picks the models and sequence
    lengths (quick: BERT and XLM up to 64K; full: the chapter's five models up to 256K), ``models`` and ``seq_lens``
    override it. ``time_limit``: seconds per operator MILP."""
    from dlaopt.formulations.fusion.group import attention_group
    from dlaopt.hardware.presets import PRESETS

    models = list(models) if models else list(SCALES.get(scale, SCALES["quick"])["models"])
    seq_lens = list(seq_lens) if seq_lens else list(SCALES.get(scale, SCALES["quick"])["seq_lens"])
    _validate(models, platforms, seq_lens, scale)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    solvers = {p: Solver(PRESETS.create(PLATFORMS[p], {}), time_limit=time_limit) for p in platforms}
    for platform in platforms:
        solver = solvers[platform]
        units = solver.arch.num_macs
        clock = solver.acc.clock_hz
        for model in models:
            shape = model_shape(model)
            for n in seq_lens:
                t_case = time.perf_counter()
                if progress:
                    progress(f"flat: {MODEL_LABEL[model]} N={n} on {platform} ({PLATFORMS[platform]})")
                fcs = block_nests(model, n, batch)
                group = attention_group(batch, shape.heads, n, n, shape.d, shape.d, WORD_BYTES)
                fc: dict[str, Figures | None] = {}
                fc_status = "optimal"
                naive_fc = Figures()
                flex_fc: Figures | None = Figures()
                for nest in fcs.values():
                    _, rep = solver.naive(nest)
                    naive_fc = naive_fc + _layer_figures(rep, nest, solver.arch)
                    m, rep, st = solver.layer(nest)
                    if m is None or flex_fc is None:
                        flex_fc = None
                        fc_status = st
                        continue
                    if st != "optimal":
                        fc_status = st
                    flex_fc = flex_fc + _layer_figures(rep, nest, solver.arch)
                fc = {"naive": naive_fc, "flex-opt": flex_fc, "flat-opt": flex_fc}
                la = {"naive": attention_unfused(solver, group, "naive"),
                      "flex-opt": attention_unfused(solver, group, "flex-opt")}
                flex_la = la["flex-opt"].figures
                fused = attention_flat(solver, group, cutoff=None if flex_la is None else flex_la.latency_cycles)
                la["flat-opt"] = flat_opt(fused, la["flex-opt"])
                case_rows = {}
                for method in METHODS:
                    a, f = la[method], fc[method]
                    row: dict[str, Any] = {"model": model, "platform": platform, "seq_len": n, "method": method}
                    status = a.status if method != "naive" else "fixed"
                    if method != "naive" and fc_status != "optimal":
                        status = f"FC: {fc_status}"
                    row["status"] = status
                    if a.figures is not None:
                        row.update({"la_latency_cycles": a.figures.latency_cycles, "la_energy_pj": a.figures.energy_pj,
                                    "la_offchip_bytes": a.figures.offchip_bytes,
                                    "la_utilization": a.figures.utilization(units)})
                    if a.figures is not None and f is not None:
                        total = (f + a.figures).times(shape.layers)
                        row.update({"runtime_cycles": total.latency_cycles, "runtime_s": total.latency_cycles / clock,
                                    "energy_pj": total.energy_pj, "offchip_bytes": total.offchip_bytes,
                                    "utilization": total.utilization(units), "fc_latency_cycles": f.latency_cycles,
                                    "la_share": a.figures.latency_cycles / (f + a.figures).latency_cycles})
                    if method == "flat-opt":
                        if fused.figures is not None:
                            row.update({"fused_la_latency_cycles": fused.figures.latency_cycles,
                                        "fused_la_energy_pj": fused.figures.energy_pj,
                                        "fused_la_offchip_bytes": fused.figures.offchip_bytes,
                                        "fused_la_utilization": fused.figures.utilization(units),
                                        "fused_granularity": fused.granularity,
                                        "fused_outer_tile": _tile_text(fused.tile)})
                        row["fused"] = a.granularity is not None
                        row["fused_note"] = "; ".join(f"{g}: {v['status']}" for g, v in fused.per_granularity.items()
                                                      if "latency_cycles" not in v)
                        row.update({"granularity": a.granularity, "outer_tile": _tile_text(a.tile),
                                    "n_outer": a.n_outer, "staging_bytes": a.staging_bytes,
                                    "note": f"{a.tiles_solved} of {a.tiles_total} tiles solved, the rest pruned or "
                                            "not fitting"})
                    else:
                        row["staging_bytes"] = a.staging_bytes
                    row["seed_speedup"] = _seed_ratio(platform, "speedup", model, n) if method == "flat-opt" else None
                    row["seed_energy_ratio"] = (_seed_ratio(platform, "energy", model, n)
                                                if method == "flat-opt" else None)
                    case_rows[method] = row
                flex = case_rows["flex-opt"]
                for row in case_rows.values():
                    if row.get("runtime_cycles") and flex.get("runtime_cycles"):
                        row["speedup_vs_flex"] = flex["runtime_cycles"] / row["runtime_cycles"]
                        row["energy_vs_flex"] = row["energy_pj"] / flex["energy_pj"]
                secs = time.perf_counter() - t_case
                for row in case_rows.values():
                    row["time_s"] = round(secs, 2)
                    rows.append(row)
                details.append({"model": model, "platform": platform, "seq_len": n,
                                "granularities": fused.per_granularity,
                                "fused_mappings": [str(m) for m in fused.mappings]})
                if progress:
                    fl = case_rows["flat-opt"]
                    progress(f"  Naive {_cyc(case_rows['naive'].get('runtime_cycles'))}, Flex-opt "
                             f"{_cyc(flex.get('runtime_cycles'))}, FLAT-opt {_cyc(fl.get('runtime_cycles'))} cycles "
                             f"(speedup {_x(fl.get('speedup_vs_flex'))}, energy {_x(fl.get('energy_vs_flex'))}; "
                             + (f"{fl.get('granularity')}-Gran {fl.get('outer_tile')}" if fl.get("fused") else
                                "unfused: no fused tile is faster" if fl.get("runtime_cycles") else
                                f"status {fl['status']}") + f"); {secs:.1f} s")
    fits = fits_table(models, platforms, batch=batch)
    wall = time.perf_counter() - t_start
    summary = {"scale": scale, "models": models, "platforms": list(platforms), "seq_lens": seq_lens, "batch": batch,
               "time_limit_s": time_limit, "wall_s": round(wall, 1),
               "solves": {p: s.solves for p, s in solvers.items()},
               "hardware": {p: _hardware(s.acc) for p, s in solvers.items()},
               "averages": averages(rows), "environment": environment(1)}
    table = report_markdown(rows, fits, details, summary)

    def figure() -> Any:
        from dlaopt.plots.fusion import plot_flat

        return plot_flat(rows)

    csv_path, md_path, plot_path = write_report(
        out, "flat", rows, CSV_FIELDS, table,
        ("flat.json", {"summary": summary, "rows": rows, "fits": fits, "cases": details}),
        figure if plot and rows else None)
    return ExperimentReport(rows, csv_path, md_path, plot_path, table, summary)


def _hardware(acc: Any) -> dict[str, Any]:
    mems = {m.name: m for m in acc.memories}
    return {"preset": acc.name, "pes": acc.pe_array.num_pes, "clock_hz": acc.clock_hz,
            "buffer_bytes": mems[STAGING].capacity_bytes,
            "onchip_bytes_per_cycle": mems[STAGING].bandwidth_bytes_per_cycle,
            "offchip_bytes_per_cycle": mems["dram"].bandwidth_bytes_per_cycle,
            "energy_pj_per_byte": {"dram": mems["dram"].read_energy_pj_per_byte,
                                   STAGING: mems[STAGING].read_energy_pj_per_byte,
                                   "rf": mems["rf"].read_energy_pj_per_byte,
                                   "noc": mems["rf"].network_energy_pj_per_byte},
            "mac_energy_pj": acc.mac_energy_pj}


def averages(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per platform: the arithmetic means (as Fig. A.14's "Ave.") of FLAT-opt's speedup and energy ratio over the
    cases run, ours and the chapter's for the same cases."""
    out: dict[str, dict[str, float | None]] = {}
    for platform in dict.fromkeys(r["platform"] for r in rows):
        fl = [r for r in rows if r["platform"] == platform and r["method"] == "flat-opt"]

        def mean(key: str, sel: Sequence[Mapping[str, Any]] = fl) -> float | None:
            xs = [r[key] for r in sel if r.get(key) is not None]
            return sum(xs) / len(xs) if xs else None

        both = [r for r in fl if r.get("seed_speedup") is not None and r.get("speedup_vs_flex") is not None]
        out[platform] = {"speedup": mean("speedup_vs_flex"), "energy_ratio": mean("energy_vs_flex"),
                         "speedup_same_cases": mean("speedup_vs_flex", both),
                         "energy_ratio_same_cases": mean("energy_vs_flex", both),
                         "seed_speedup_same_cases": mean("seed_speedup", both),
                         "seed_energy_ratio_same_cases": mean("seed_energy_ratio", both),
                         "seed_speedup_all": SEED_AVERAGES[platform][0],
                         "seed_energy_ratio_all": SEED_AVERAGES[platform][1]}
    return out


# ================================================================================================ report
def _tile_text(tile: Mapping[str, int] | None) -> str | None:
    if not tile:
        return None
    return " ".join(f"{d}/{k}" for d, k in tile.items())


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _cyc(v: float | None) -> str:
    return sci_text(v, 3)


def _bytes(n: float | None) -> str:
    if n is None:
        return "—"
    for unit, size in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def _seq(n: int | None) -> str:
    if n is None:
        return "—"
    return f"{n // KiB}K" if n >= KiB and n % KiB == 0 else f"{n:,}"


def _match(ours: float | None, seed: float | None) -> str:
    if ours is None or seed is None:
        return "—"
    return "yes" if abs(ours - seed) <= MATCH_TOLERANCE * seed else "no"


def report_markdown(rows: Sequence[Mapping[str, Any]], fits: Sequence[Mapping[str, Any]],
                    details: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> str:
    lines = ["# FLAT: fused L-softmax-A against per-operator dataflows (seed 001, Appendix A)", ""]
    lines.append(
        f"Batch {summary['batch']}, words of {WORD_BYTES} bytes, one encoder block per model times its layers. "
        "Naive: weight-stationary template with the fixed one-array-pass tile, unfused; Flex-opt: each operator's "
        "proven latency-optimal mapping, unfused (logits through main memory, softmax as its own pass); FLAT-opt: "
        "L-softmax-A fused, the best granularity, outer tile and per-operator mappings (FC operators as Flex-opt). "
        "Utilization = ideal runtime (MACs ÷ MAC units) ÷ runtime (§A.3.1).")
    if summary["scale"] == "quick":
        lines += ["", "*Quick scale: BERT and XLM up to N = 64K (`--scale full` for the five models up to 256K).*"]
    lines += ["", "Hardware (Table A.3; clock, register files and energies assumed, see the presets):"]
    for p, hw in summary["hardware"].items():
        e = hw["energy_pj_per_byte"]
        lines.append(f"- {p} (`{hw['preset']}`): {hw['pes']:,} PEs at {hw['clock_hz'] / 1e9:g} GHz, buffer "
                     f"{_bytes(hw['buffer_bytes'])}, on chip {hw['onchip_bytes_per_cycle']:g} B/cycle, off chip "
                     f"{hw['offchip_bytes_per_cycle']:g} B/cycle; pJ per byte: DRAM {e['dram']:g}, buffer "
                     f"{e[STAGING]:g}, RF {e['rf']:g}, NoC {e['noc']:g}; MAC {hw['mac_energy_pj']:g} pJ")
    lines.append("")
    header = ["model", "N", "dataflow", "runtime (s)", "energy (J)", "off-chip", "util.", "L-A off-chip",
              "L-A util.", "L-A share", "FLAT tile", "buffer used", "speedup", "energy ratio", "status"]
    for platform in dict.fromkeys(r["platform"] for r in rows):
        lines += [f"## {platform}", ""]
        body = []
        for r in rows:
            if r["platform"] != platform:
                continue
            tile = f"{r['granularity']}-Gran {r['outer_tile']}" if r.get("granularity") else "—"
            if r["method"] == "flat-opt" and not r.get("fused"):
                slower = (r["fused_la_latency_cycles"] / r["la_latency_cycles"]
                          if r.get("fused_la_latency_cycles") and r.get("la_latency_cycles") else None)
                pruned = "pruned" in (r.get("fused_note") or "")
                tile = "unfused" + (f" (best fused tile {slower:.2f}× slower)" if slower else
                                    " (every fused tile's lower bound is slower)" if pruned else
                                    " (no fused tile fits)")
            body.append([MODEL_LABEL[r["model"]], _seq(r["seq_len"]), METHOD_LABEL[r["method"]],
                         sci_text(r.get("runtime_s"), 3),
                         sci_text(r["energy_pj"] * 1e-12 if r.get("energy_pj") is not None else None, 3),
                         _bytes(r.get("offchip_bytes")), _x(r.get("utilization")), _bytes(r.get("la_offchip_bytes")),
                         _x(r.get("la_utilization")),
                         "—" if r.get("la_share") is None else f"{100 * r['la_share']:.0f} %", tile,
                         _bytes(r.get("staging_bytes")), _x(r.get("speedup_vs_flex")), _x(r.get("energy_vs_flex")),
                         str(r["status"])])
        lines.append(md_table(header, body, ["l", "r", "l"] + ["r"] * (len(header) - 4) + ["l"]))
        lines.append("")
    lines += _granularity_section(details)
    lines += _seed_section(rows, summary)
    lines += _fits_section(fits)
    lines += ["## Run", ""]
    solves = ", ".join(f"{p}: {n} operator optima solved" for p, n in summary["solves"].items())
    lines.append(f"- {len({(r['model'], r['platform'], r['seq_len']) for r in rows})} cases in "
                 f"{summary['wall_s']} s of wall time ({solves}); per-operator MILP time limit "
                 f"{summary['time_limit_s']} s")
    lines.append("")
    lines.append(environment_markdown(summary["environment"]))
    return "\n".join(lines) + "\n"


def _granularity_section(details: Sequence[Mapping[str, Any]]) -> list[str]:
    out = ["## FLAT granularities (as Fig. A.7): the best tile of each", "",
           "Per case, the least-latency fused execution at each granularity (M: batched multi-head, B: batch, H: "
           "head, R: Rx query rows, the best Rx), each proven optimal over its tiles; \"does not fit\": no tile of "
           "the granularity leaves room in the buffer for its logit tile.", ""]
    body = []
    for c in details:
        for g, v in c["granularities"].items():
            if "latency_cycles" not in v:
                body.append([MODEL_LABEL[c["model"]], c["platform"], _seq(c["seq_len"]), GRANULARITY_LABEL[g],
                             v["status"], "—", "—", "—", "—", "—"])
                continue
            body.append([MODEL_LABEL[c["model"]], c["platform"], _seq(c["seq_len"]), GRANULARITY_LABEL[g],
                         _tile_text(v["tile"]) or "—", f"{v['n_outer']:,}", _cyc(v["latency_cycles"]),
                         _x(v["utilization"]), _bytes(v["offchip_bytes"]), _bytes(v["staging_bytes"])])
    if not body:
        return out + ["(no fused execution fits)", ""]
    out.append(md_table(["model", "platform", "N", "granularity", "outer tile", "iterations", "L-A cycles",
                         "L-A util.", "L-A off-chip", "buffer used"], body, ["l", "l", "r", "l", "l"] + ["r"] * 5))
    out.append("")
    return out


def _seed_section(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> list[str]:
    out = ["## Next to the chapter: Fig. A.14 (FLAT-opt over Flex-opt, end to end)", "",
           f"Speedup = Flex-opt runtime ÷ FLAT-opt runtime; energy ratio = FLAT-opt energy ÷ Flex-opt energy. "
           f"\"match\": ours within {100 * MATCH_TOLERANCE:.0f} % of the chapter's.", ""]
    body = []
    fl = [r for r in rows if r["method"] == "flat-opt"]
    for r in fl:
        body.append([r["platform"], MODEL_LABEL[r["model"]], _seq(r["seq_len"]), _x(r.get("speedup_vs_flex")),
                     _x(r.get("seed_speedup")), _match(r.get("speedup_vs_flex"), r.get("seed_speedup")),
                     _x(r.get("energy_vs_flex")), _x(r.get("seed_energy_ratio")),
                     _match(r.get("energy_vs_flex"), r.get("seed_energy_ratio"))])
    out.append(md_table(["platform", "model", "N", "speedup", "chapter", "match", "energy ratio", "chapter", "match"],
                        body, ["l", "l", "r", "r", "r", "l", "r", "r", "l"]))
    out += ["", "Averages (Fig. A.14's \"Ave.\" is over its five models and five lengths):", ""]
    avg_body = []
    for platform, a in summary["averages"].items():
        avg_body.append([platform, _x(a["speedup"]), _x(a["speedup_same_cases"]), _x(a["seed_speedup_same_cases"]),
                         _x(a["seed_speedup_all"]), _x(a["energy_ratio"]), _x(a["energy_ratio_same_cases"]),
                         _x(a["seed_energy_ratio_same_cases"]), _x(a["seed_energy_ratio_all"])])
    out.append(md_table(["platform", "speedup (ours, all run)", "ours, cases in Fig. A.14", "chapter, same cases",
                         "chapter Ave.", "energy ratio (ours)", "ours, cases in Fig. A.14", "chapter, same cases",
                         "chapter Ave."], avg_body, ["l"] + ["r"] * 8))
    out.append("")
    claims = []
    for platform, (model, claim) in SEED_64K_SPEEDUP.items():
        r = next((r for r in fl if r["platform"] == platform and r["model"] == model and r["seq_len"] == 64 * KiB),
                 None)
        ours = ("not run" if r is None else f"{_x(r['speedup_vs_flex'])}×" if r.get("speedup_vs_flex") is not None
                else f"not measured ({r['status']})")
        claims.append(f"- §A.5: at N = 64K, FLAT-opt runs {claim}× faster than Flex-opt on the {platform} "
                      f"accelerator ({MODEL_LABEL[model]}, Fig. A.13); here: {ours}.")
    out += claims + [""]
    trend = []
    for platform in dict.fromkeys(r["platform"] for r in fl):
        for model in dict.fromkeys(r["model"] for r in fl):
            sp = [r.get("speedup_vs_flex") for r in sorted(fl, key=lambda r: r["seq_len"])
                  if r["platform"] == platform and r["model"] == model]
            if len(sp) > 1 and None not in sp:
                grows = all(b >= a * (1 - 1e-9) for a, b in zip(sp, sp[1:], strict=False))
                trend.append(f"{MODEL_LABEL[model]} {platform}: {'grows' if grows else 'does not grow'} with N "
                             f"({' → '.join(_x(s) for s in sp)})")
    if trend:
        out += ["The chapter's trend — the gain grows with the sequence length: " + "; ".join(trend) + ".", ""]
    return out


def _fits_section(fits: Sequence[Mapping[str, Any]]) -> list[str]:
    out = ["## The longest sequence each granularity fits in the buffer", "",
           "Least requirement: the logit tile of one outer iteration (M: batch·heads·N², B: heads·N², H: N², R with "
           "Rx = 1: N elements; not double-buffered) plus two double-buffered one-element operand tiles — the model "
           "lets every other tile shrink. Table A.1: its formulas with the O() dropped (8BDN + BHN², 8DN + HN², "
           "8Nd + N², 4Rd + 4Nd + RN elements). Unfused dataflows (Naive, Flex-opt) keep no N×N tile on chip and "
           "run any length.", ""]
    body = [[MODEL_LABEL[f["model"]], f["platform"], _bytes(f["buffer_bytes"]), GRANULARITY_LABEL[f["granularity"]],
             f"{f['longest_least']:,}", _seq(f["sweep_least"]), f"{f['longest_table_a1']:,}",
             _seq(f["sweep_table_a1"])] for f in fits]
    out.append(md_table(["model", "platform", "buffer", "granularity", "longest N (least req.)", "of the sweep",
                         "longest N (Table A.1)", "of the sweep"], body, ["l", "l", "r", "l", "r", "r", "r", "r"]))
    out += ["", "The chapter: FLAT \"elevates the scalability of transformer models up to 64K inputs\" (R-Gran on "
            "the edge buffer of 512 KB).", ""]
    return out


__all__ = ["BATCH", "METHODS", "MODELS", "PLATFORMS", "SCALES", "SEED_AVERAGES", "SEED_FIG_A14", "SEQ_LENS",
           "AttentionResult", "Figures", "ModelShape", "Solver", "attention_flat", "attention_unfused",
           "block_nests", "fits_table", "least_requirement_bytes", "longest_fitting", "model_shape", "offchip_bytes",
           "run_flat"]
