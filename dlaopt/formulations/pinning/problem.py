"""Multi-scratchpad tensor pinning (seed 000): which buffer resides in which scratchpad during each step."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dlaopt.errors import InfeasibleInstanceError, InputError
from dlaopt.formulations.base import Evaluation, ExactOutcome, Method, MilpFormulation, Problem
from dlaopt.formulations.pinning.data import PinningGraph, unplaceable_steps, untiled_graph
from dlaopt.formulations.pinning.evaluator import (
    check_addresses,
    check_constraints,
    check_user_constraints,
    count_transfers,
    objective_value,
)
from dlaopt.formulations.pinning.heuristics import HEURISTICS
from dlaopt.formulations.pinning.milp import build_pinning_milp
from dlaopt.formulations.pinning.milp_gaps import build_gap_milp, identical_bins, merged_graph
from dlaopt.formulations.pinning.rules import PinningRules, RuleView, cheap_conflict, parse_rules
from dlaopt.formulations.pinning.solution import PinningSolution
from dlaopt.formulations.pinning.tiling_check import verify_tiling
from dlaopt.hardware.model import DMA, Accelerator
from dlaopt.solvers.result import SolveOptions
from dlaopt.specs import pinning as opts
from dlaopt.specs.tuning import levers
from dlaopt.workload.tensor import TensorRole

if TYPE_CHECKING:
    from dlaopt.formulations.pinning.tiling import LayerTile
    from dlaopt.io.instance import Instance


# (buffer, step) residency cells above which an instance is refused: solutions, heuristics and the evaluator store
# one entry per cell (GPT-2 at sequence 1024 has ~4e7; a Llama-2-7B block at 4096 has 6.4e9, ~26 GB per solution)
MAX_WINDOW_CELLS = 400_000_000


@dataclass
class PinningData:
    graph: PinningGraph
    accelerator: Accelerator
    objective: str
    pin_weights: bool
    formulation: str = "gaps"
    source: str | None = None
    tiling_violations: list[str] = field(default_factory=list)  # the independent coverage check of the tiles
    infeasible: str | None = None  # why no solution can exist, when known
    rules: PinningRules = field(default_factory=PinningRules)  # the user's constraints, typed
    tuning: dict[str, bool] = field(default_factory=dict)  # levers of the exact method (options.exact_tuning)
    addresses: bool = True  # every solution gets scratchpad offsets (options.addresses)
    alignment: int = 1  # offsets are multiples of this (options.alignment_bytes)
    _baseline: dict[str, float] = field(default_factory=dict)

    @property
    def dma(self) -> DMA:
        return self.accelerator.dma

    @property
    def compute_cycles(self) -> float:
        return float(sum(s.compute_cycles for s in self.graph.steps))

    def baseline(self) -> dict[str, float]:
        """Naive-strategy and infinite-scratchpad figures every solution's metrics are measured against."""
        if not self._baseline:
            from dlaopt.formulations.pinning.heuristics import naive

            sizes = np.array([b.size_bytes for b in self.graph.buffers], dtype=float)
            t = count_transfers(self.graph, naive(self.graph))
            inf_counts = np.array([
                (1 if b.starts_in_memory and self.graph.uses[i] else 0) + (1 if b.role == TensorRole.OUTPUT else 0)
                for i, b in enumerate(self.graph.buffers)
            ])
            per = self.dma.latency_cycles + sizes / self.dma.bandwidth_bytes_per_cycle
            self._baseline = {
                "naive_transfer_bytes": t.bytes(sizes),
                "naive_dma_cycles": float(((t.loads + t.stores) * per).sum()),
                "inf_transfer_bytes": float((inf_counts * sizes).sum()),
                "inf_dma_cycles": float((inf_counts * per).sum()),
            }
        return self._baseline


def pinning_metrics(data: PinningData, loads: np.ndarray, stores: np.ndarray) -> dict[str, Any]:
    """The thesis' Chapter 6 metrics for one solution, from its load and store counts.

    Cycles are compute + DMA (not overlapped, as in SMAUG where DMA cycles are part of the accelerator's cycles).
    Speedups are against the naive strategy; the memory-boundness is the naive run's DMA fraction (Table 7.1)."""
    sizes = np.array([b.size_bytes for b in data.graph.buffers], dtype=float)
    per = data.dma.latency_cycles + sizes / data.dma.bandwidth_bytes_per_cycle
    base = data.baseline()
    compute = data.compute_cycles
    transfer_bytes = float(((loads + stores) * sizes).sum())
    dma = float(((loads + stores) * per).sum())
    naive_cycles = compute + base["naive_dma_cycles"]
    cycles = compute + dma
    speedup = naive_cycles / cycles
    inf_speedup = naive_cycles / (compute + base["inf_dma_cycles"])
    saved = base["naive_transfer_bytes"] - transfer_bytes
    return {
        "transfer_bytes": transfer_bytes,
        "load_bytes": float((loads * sizes).sum()),
        "store_bytes": float((stores * sizes).sum()),
        "transfers": int(loads.sum() + stores.sum()),
        "naive_transfer_bytes": base["naive_transfer_bytes"],
        "transfers_saved_bytes": saved,
        "reduction_factor": saved / base["naive_transfer_bytes"] if base["naive_transfer_bytes"] else 0.0,
        "compute_cycles": compute,
        "dma_cycles": dma,
        "estimated_cycles": cycles,
        "memory_boundness": base["naive_dma_cycles"] / naive_cycles if naive_cycles else 0.0,
        "theoretical_speedup": naive_cycles / compute if compute else 1.0,
        "speedup": speedup,
        "inf_spm_speedup": inf_speedup,
        "fraction_of_inf_spm_speedup": (speedup - 1) / (inf_speedup - 1) if inf_speedup > 1 + 1e-12 else 1.0,
        "inf_spm_transfer_bytes": base["inf_transfer_bytes"],
    }


class PinningProblem(Problem[PinningData, PinningSolution]):
    name = "pinning"
    title = "Multi-scratchpad tensor pinning"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("naive", "heuristic", "Thesis baseline: every input loaded, every output stored, no reuse"),
        Method("onsram", "heuristic", "OnSRAM-Static: pin by reuse-weighted transfer cost if it fits its lifetime"),
        Method("greedy", "heuristic", "Thesis multi-SPM greedy: pin outputs where most room, evict under pressure"),
        Method("coloring", "heuristic", "TOpLib-style interference-graph colouring into scratchpad partitions"),
        Method("exact", "exact", "MILP (HiGHS by default; any Pyomo solver with --solver pyomo:NAME)", "highs"),
        Method("cpsat", "exact", "The same MILP solved by OR-Tools CP-SAT", "cpsat"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> PinningData:
        options = {**opts.DEFAULT_OPTIONS, **dict(instance.options)}
        acc = instance.accelerator
        if not acc.scratchpads:
            raise InputError("the accelerator has no scratchpad to pin tensors in", file=instance.source,
                             path=("hardware", "memories"), expected="at least one memory of kind 'scratchpad'")
        mode = options["oversize"]
        infeasible = None
        cycles = self._compute_cycles(instance, options)
        if mode == "tile":
            from dlaopt.formulations.pinning.tiling import tiled_graph

            try:
                graph = tiled_graph(instance.graph, acc, chunk_fraction=float(options["chunk_fraction"]),
                                    layer_tiles=self._layer_tiles(instance, options), compute_cycles=cycles)
            except InfeasibleInstanceError as exc:
                graph = untiled_graph(instance.graph, acc, compute_cycles=cycles)
                infeasible = str(exc)
        else:
            graph = untiled_graph(instance.graph, acc, cap=mode == "cap", compute_cycles=cycles)
            bad = unplaceable_steps(graph)
            if bad:
                st = graph.steps[bad[0]]
                biggest = max(st.operands, key=lambda b: graph.buffers[b].size_bytes)
                buf = graph.buffers[biggest]
                caps = ", ".join(f"{s.name} {s.capacity} B" for s in graph.scratchpads)
                msg = (f"the operands of operator '{st.op}' do not fit the scratchpads together (largest: tensor "
                       f"'{buf.tensor}', {buf.size_bytes} B; scratchpads: {caps})")
                if mode == "error":
                    raise InputError(msg, file=instance.source, path=("options", "oversize"),
                                     expected="'tile' (rebuild the graph into tiles) or 'cap' for this instance")
                infeasible = msg
        cells = sum(hi - lo + 1 for lo, hi in graph.window)
        if cells > MAX_WINDOW_CELLS:
            raise InputError(
                f"the pinning model is too large for this machine's memory: {len(graph.buffers):,} buffers over "
                f"{len(graph.steps):,} steps make {cells:,} (buffer, step) cells of residency, each stored per "
                f"solution and model", file=instance.source, path=("workload",),
                expected=f"at most {MAX_WINDOW_CELLS:,} cells: a shorter sequence, fewer layers, or larger "
                "scratchpads (fewer tiles)")
        tiling_violations = verify_tiling(instance.graph, graph) if graph.tiled_ops else []
        try:
            rules = parse_rules(instance.constraints, instance.graph, graph, [m.name for m in acc.memories])
        except InputError as exc:
            raise exc.located(file=instance.source) from None
        return PinningData(graph=graph, accelerator=acc, objective=instance.objective,
                           pin_weights=bool(options["pin_weights"]), formulation=str(options["formulation"]),
                           source=instance.source, infeasible=infeasible, tiling_violations=tiling_violations,
                           rules=rules, tuning=levers(options, opts.EXACT_LEVERS),
                           addresses=bool(options["addresses"]), alignment=int(options["alignment_bytes"]))

    @staticmethod
    def _compute_cycles(instance: Instance, options: Mapping[str, Any]) -> dict[str, float]:
        ops = {op.name for op in instance.graph.operators}
        for name in options["compute_cycles"]:
            if name not in ops:
                raise InputError(f"no operator named '{name}' in workload '{instance.graph.name}'",
                                 file=instance.source, path=("options", "compute_cycles", name),
                                 expected="names of the workload's operators")
        return {k: float(v) for k, v in options["compute_cycles"].items()}

    @staticmethod
    def _layer_tiles(instance: Instance, options: Mapping[str, Any]) -> dict[str, LayerTile]:
        from dlaopt.formulations.pinning.tiling import LayerTile

        wl = instance.graph
        ops = {op.name: op for op in wl.operators}
        out: dict[str, LayerTile] = {}
        for name, doc in options["layer_tiles"].items():
            where = ("options", "layer_tiles", name)
            if name not in ops:
                raise InputError(f"no operator named '{name}' in workload '{wl.name}'", file=instance.source,
                                 path=where, expected="names of the workload's operators")
            rank = max(len(wl.tensors[t].shape) for t in ops[name].outputs)
            if len(doc["block"]) != rank:
                raise InputError(f"layer tile of '{name}' has {len(doc['block'])} blocks; its output has {rank} "
                                 "axes", file=instance.source, path=(*where, "block"),
                                 expected=f"{rank} positive integers, one per output axis")
            out[name] = LayerTile(tuple(int(b) for b in doc["block"]),
                                  None if doc.get("reduce") is None else int(doc["reduce"]))
        return out

    def infeasibility_reason(self, data: PinningData) -> str | None:
        if data.infeasible:
            return data.infeasible
        for b, buf in enumerate(data.graph.buffers):
            if data.graph.uses[b] and not any(buf.role in s.holds for s in data.graph.scratchpads):
                return f"no scratchpad may hold tensor '{buf.tensor}' (role {buf.role.value})"
        g = data.graph
        for st in g.steps:  # an operand no scratchpad may serve in its direction, whatever the capacities
            for b in st.operands:
                buf, read, written = g.buffers[b], b in st.reads, b in st.writes
                if not any(s.allows(buf.role, read=read, written=written) for s in g.scratchpads):
                    what = "read and written" if read and written else "written" if written else "read"
                    return (f"no scratchpad may serve tensor '{buf.tensor}' at step '{st.name}', which {what} it "
                            f"(scratchpads: {', '.join(f'{s.name} {s.access.value}' for s in g.scratchpads)}); "
                            "every operand is on chip while its operator runs, so operator outputs need a scratchpad "
                            "that is not input-only and inputs one that is not output-only")
        bad = unplaceable_steps(g)
        if bad:
            return f"the operands of step '{g.steps[bad[0]].name}' do not fit the scratchpads together"
        if data.rules:
            return cheap_conflict(RuleView(g, data.rules, data.pin_weights))
        return None

    def describe(self, data: PinningData) -> dict[str, Any]:
        base = data.baseline() if data.infeasible is None else {}
        model = "steps" if data.formulation == "steps" or data.rules.dma_cap is not None else "gaps"
        return {**data.graph.summary(), "objective": data.objective, "compute_cycles": data.compute_cycles,
                "exact_model": model, **base}

    # ------------------------------------------------------------------------------------------------ methods
    def run_heuristic(self, method: str, data: PinningData, options: SolveOptions) -> PinningSolution:
        """The heuristic's plan; with options.addresses, with an offset per run (its residency repaired where it
        does not fit in addresses: :func:`.addresses.with_addresses`)."""
        sol = HEURISTICS[method](data.graph, data.pin_weights, data.rules)
        if not data.addresses:
            return sol
        from dlaopt.formulations.pinning.addresses import with_addresses

        return with_addresses(data.graph, sol, data.alignment, rules=data.rules, pin_weights=data.pin_weights,
                              time_limit=options.time_limit, name=method)

    def solve_exact(self, data: PinningData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[PinningSolution] | None:
        """With options.addresses: the optimum among address-feasible plans (:mod:`.addresses`: the capacity-sum
        optimum placed, no-good cuts on residency patterns that do not fit, solved again). Otherwise, identical
        scratchpads with the ``assignment`` or ``pattern_cuts`` lever on: the driver of :mod:`.exact` (merged
        residency, packing cuts, assignment); else the harness' path (warm start, merged relaxation, the full
        model)."""
        from dlaopt.formulations.pinning.exact import applies, solve_identical

        if data.addresses:
            from dlaopt.formulations.pinning.addresses import solve_exact_with_addresses

            backend = solver or self.method(method).default_solver or "highs"
            return solve_exact_with_addresses(self, data, method, backend=backend, options=options)

        tuning = data.tuning or levers({}, opts.EXACT_LEVERS)
        if not (tuning["assignment"] or tuning["pattern_cuts"]) or not applies(data):
            return None
        backend = solver or self.method(method).default_solver or "highs"
        return solve_identical(self, data, backend=backend, options=options, tuning=tuning)

    def build_milp(self, data: PinningData) -> MilpFormulation[PinningSolution]:
        """The per-gap model by default; the per-step one when asked, or under a DMA cap (which times transfers)."""
        if data.formulation == "steps" or data.rules.dma_cap is not None:
            return build_pinning_milp(data.graph, data.objective, data.dma, pin_weights=data.pin_weights,
                                      rules=data.rules)
        return build_gap_milp(data.graph, data.objective, data.dma, pin_weights=data.pin_weights, rules=data.rules)

    def relaxations(self, data: PinningData) -> list[tuple[str, MilpFormulation[PinningSolution]]]:
        if len(data.graph.scratchpads) < 2:
            return []
        merged = merged_graph(data.graph)
        return [("merged-scratchpads", build_gap_milp(merged, data.objective, data.dma, pin_weights=data.pin_weights,
                                                      bins=identical_bins(data.graph), rules=data.rules.merged()))]

    def repair(self, data: PinningData, relaxation: str, relaxed: PinningSolution) -> PinningSolution | None:
        """Relax-and-pack: keep what the merged-scratchpad optimum keeps, pack it greedily into the scratchpads
        (most-room and best-fit placement; the cheaper verified result)."""
        from dlaopt.formulations.base import HeuristicFailure
        from dlaopt.formulations.pinning.heuristics import greedy

        best: tuple[float, PinningSolution] | None = None
        for best_fit in (False, True):
            try:
                sol = greedy(data.graph, pin_weights=data.pin_weights, keep=relaxed, best_fit=best_fit,
                             rules=data.rules)
            except HeuristicFailure:
                continue
            ev = self.evaluate(data, sol)
            if ev.feasible and ev.objective is not None and (best is None or ev.objective < best[0]):
                best = (ev.objective, sol)
        return best[1] if best else None

    # ------------------------------------------------------------------------------------------------ evaluation
    def evaluate(self, data: PinningData, solution: PinningSolution) -> Evaluation:
        violations = [f"tiling: {v}" for v in data.tiling_violations] + check_constraints(data.graph, solution)
        if any("residency covers" in v or "unknown scratchpad" in v or "the solution places" in v
               for v in violations):  # malformed residency: nothing to price
            return Evaluation(False, None, violations)
        t = count_transfers(data.graph, solution, data.rules.streamed)
        violations += check_user_constraints(data.graph, solution, data.rules, t)
        obj = objective_value(data.graph, t, data.objective, data.dma)
        metrics = pinning_metrics(data, t.loads, t.stores)
        metrics["thesis_transitions_bytes"] = objective_value(data.graph, t, "thesis", data.dma)
        if solution.offsets is not None:
            found, peaks = check_addresses(data.graph, solution, data.alignment)
            violations += [f"addresses: {v}" for v in found]
            metrics["address_peak"] = peaks
        return Evaluation(not violations, obj, violations, metrics)

    def solution_to_dict(self, data: PinningData, solution: PinningSolution) -> dict[str, Any]:
        return solution.to_dict(data.graph)

    def solution_from_dict(self, data: PinningData, doc: Mapping[str, Any]) -> PinningSolution:
        return PinningSolution.from_dict(data.graph, doc, path=("solution",))
