"""Layer-specific scheduling on a systolic array, and hardware co-design (seed 003, DeepOpt).

A solution is a hardware point (``J``, ``K`` and the three SRAM sizes) and a schedule for every conv / FC layer.
Without ``codesign`` the hardware is the instance's; with it, any point of the design space. The evaluator recomputes
every layer's energy and delay from the layer shapes with the cost model (:mod:`.network` over the schedule modules)
and checks the point, the schedules and the schedule limit; no solver model is involved.

Methods: ``los`` (each layer's best schedule — the seed's LOS), ``fixed-<schedule>`` (every layer one schedule: the
seed's FS), ``exhaustive`` (every design point, vectorised) and ``exact`` (the MILP of :mod:`.codesign` for the
per-layer-sum figures; the weighted-sum sweep for ``network_ed``). The heuristics run on the instance's hardware, or,
when co-designing, on the best design point for their schedules (the instance's array and SRAM sizes are then not a
candidate unless they lie in the design space: they may exceed the area budget).

User constraints (:mod:`.constraints`): ``schedules`` (the schedules a layer may run), ``array`` and ``sram`` (fixed or
bounded J, K and SRAM sizes). The exact methods enumerate only the permitted schedules (the MILP fixes the other
columns to 0) on the design space enumerated within the bounds; the heuristics mask the full grid and the schedule
table themselves and report that they found nothing when no candidate remains; the evaluator checks each record
against the solution and names the one broken.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from dlaopt.errors import InputError
from dlaopt.formulations.base import Evaluation, ExactOutcome, HeuristicFailure, Method, MilpFormulation, Problem
from dlaopt.formulations.systolic import codesign
from dlaopt.formulations.systolic.constraints import SCHEDULED_KINDS, SystolicConstraints, parse
from dlaopt.formulations.systolic.layers import SystolicLayer, network_layers
from dlaopt.formulations.systolic.network import FIGURES, CostTable, cost_table, layer_energy_delay
from dlaopt.formulations.systolic.technology import DesignPoints, DesignSpace, Technology
from dlaopt.hardware.model import Accelerator, MemoryKind
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import systolic as opts

if TYPE_CHECKING:
    from dlaopt.io.instance import Instance
    from dlaopt.specs.constraints import KeyPath

HW_KEYS = ("J", "K", "f_kb", "i_kb", "p_kb")
SPACE_KEYS = {"rows": "J", "cols": "K", "f_kb": "f_kb", "i_kb": "i_kb", "p_kb": "p_kb"}  # DesignSpace range → key


@dataclass(frozen=True)
class Bits:
    b_f: int
    b_i: int
    b_p: int
    b_o: int
    dram_bw: int


@dataclass
class SystolicData:
    layers: list[SystolicLayer]
    schedules: tuple[str, ...]  # allowed
    objective: str
    options: dict[str, Any]
    base: DesignPoints  # the instance's hardware (one point)
    bits: Bits
    space: DesignSpace | None  # set when co-designing
    tech: Technology
    source: str | None = None
    constraints: SystolicConstraints = field(default_factory=SystolicConstraints)

    @cached_property
    def permitted(self) -> np.ndarray:
        """``[l, s]``: whether layer ``l`` may run schedule ``s`` under every ``schedules`` record."""
        return self.constraints.permitted([la.name for la in self.layers], self.schedules)

    def points(self) -> DesignPoints:
        """The design points the exact methods search: the design space enumerated within the user's array and
        SRAM bounds when co-designing, else the instance's hardware if it meets them (else none)."""
        if self.space is not None:
            ranges = {k: self.constraints.range(key) for k, key in SPACE_KEYS.items()}
            return dataclasses.replace(self.space, **ranges).points(self.tech)
        hw = data_point(self.base, 0)
        ok = all(lo <= hw[key] <= hi for key in HW_KEYS for lo, hi in [self.constraints.range(key)])
        return self.base if ok else self.base.subset(np.zeros(0, dtype=np.int64))

    def table(self, points: DesignPoints, schedules: tuple[str, ...] | None = None) -> CostTable:
        """Every layer under every allowed schedule (or only ``schedules``) on every point."""
        hw = points.hardware(b_f=self.bits.b_f, b_i=self.bits.b_i, b_p=self.bits.b_p, b_o=self.bits.b_o,
                             dram_bw=self.bits.dram_bw, dram_block=128)
        return cost_table(self.layers, hw, self.tech, schedules=self.schedules if schedules is None else schedules,
                          reference_fc_compute=bool(self.options["reference_fc_compute"]))


@dataclass
class SystolicSolution:
    hardware: dict[str, int]  # J, K, f_kb, i_kb, p_kb
    schedules: dict[str, str]  # layer name -> schedule


def hardware_of(acc: Accelerator, source: str | None = None) -> tuple[DesignPoints, Bits]:
    """The systolic hardware an accelerator describes: a two-axis PE array, one buffer per operand (W, I, O) and a
    DRAM; bit widths from ``params`` (``filter_bits``, ``ifmap_bits``, ``psum_bits``; defaults 8, 8, 32)."""
    if len(acc.pe_array.axes) != 2:
        raise InputError(f"a systolic array needs a two-axis PE array (rows, cols), got "
                         f"{[list(a) for a in acc.pe_array.axes]}", file=source, path=("hardware", "pe_array", "axes"))
    J, K = (s for _, s in acc.pe_array.axes)
    kb: dict[str, float] = {}
    for op, key in (("W", "f_kb"), ("I", "i_kb"), ("O", "p_kb")):
        mem = [m for m in acc.memories if m.kind != MemoryKind.DRAM and m.operands == frozenset({op})]
        if len(mem) != 1 or mem[0].capacity_bytes is None:
            raise InputError(f"a systolic accelerator needs exactly one on-chip memory with operands [{op}]",
                             file=source, path=("hardware", "memories"),
                             expected="filter (W), ifmap (I) and psum (O) SRAMs, e.g. preset 'deepopt'")
        kb[key] = mem[0].capacity_bytes / 1024
    dram = [m for m in acc.memories if m.kind == MemoryKind.DRAM]
    bw = dram[0].bandwidth_bytes_per_cycle * 8 if dram else 128
    p = acc.params
    bits = Bits(int(p.get("filter_bits", 8)), int(p.get("ifmap_bits", 8)), int(p.get("psum_bits", 32)),
                int(p.get("ifmap_bits", 8)), int(bw))
    if not np.isfinite(bw) or bw <= 0:
        raise InputError("the DRAM needs a finite bandwidth", file=source, path=("hardware", "memories"))
    return DesignPoints.single(J, K, kb["f_kb"], kb["i_kb"], kb["p_kb"]), bits


class SystolicProblem(Problem[SystolicData, SystolicSolution]):
    name = "systolic"
    title = "Layer-specific scheduling and hardware co-design of a systolic array (DeepOpt)"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("los", "heuristic", "Each layer's best schedule on the instance's hardware, or on the best design "
               "point when co-designing (seed 003 LOS)"),
        *(Method(f"fixed-{s.lower()}", "heuristic", f"Every layer scheduled {s}, on the best design point for it "
                 "when co-designing (seed 003 FS)")
          for s in opts.SCHEDULE_NAMES),
        Method("exact", "exact", "MILP over design points x schedules (weighted-sum sweep for network_ed)", "highs"),
        Method("exhaustive", "exact", "Every design point evaluated, vectorised (the seed's sweep)"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> SystolicData:
        options = {**opts.DEFAULT_OPTIONS, **dict(instance.options)}
        layers = network_layers(instance.graph, fc_batch=int(options["fc_batch"]))
        base, bits = hardware_of(instance.accelerator, instance.source)
        tech = Technology()
        space = None
        if options["codesign"]:
            space = DesignSpace(**dict(options["design_space"]), b_f=bits.b_f, b_i=bits.b_i, b_p=bits.b_p)
            try:
                space.points(tech)  # an unusable design space is an input error, found now
            except InputError as exc:
                raise exc.located(file=instance.source) from None
        else:
            for key in ("f_kb", "i_kb", "p_kb"):
                size = float(getattr(base, key)[0])
                if size not in tech.sram_pj_per_bit:
                    raise InputError(f"no SRAM energy for a {size:g} kB SRAM", file=instance.source,
                                     path=("hardware",), expected="SRAM sizes of " +
                                     ", ".join(str(s) for s in sorted(tech.sram_pj_per_bit)) + " kB")
        scheds = tuple(s for s in opts.SCHEDULE_NAMES if s in options["schedules"])
        kinds = {op.name: str(op.kind) for op in instance.graph.operators if str(op.kind) in SCHEDULED_KINDS}
        names = [la.name for la in layers]
        try:
            rules = parse(instance.constraints, names, kinds, sorted(float(s) for s in tech.sram_pj_per_bit))
        except InputError as exc:
            raise exc.located(file=instance.source) from None
        return SystolicData(layers, scheds, instance.objective, options, base, bits, space, tech, instance.source,
                            rules)

    def infeasibility_reason(self, data: SystolicData) -> str | None:
        c = data.constraints
        for li, layer in enumerate(data.layers):  # no schedule left for a layer
            if not data.permitted[li].any():
                rules = [r.label for r in c.schedules if layer.name in r.layers]
                supported = "" if len(data.schedules) == len(opts.SCHEDULE_NAMES) else (
                    f" among those the hardware supports (options.schedules: {', '.join(data.schedules)})")
                return f"layer {layer.name} has no schedule allowed by " + ", ".join(rules) + supported
        for key in HW_KEYS:  # bounds on one value that exclude each other
            lo, hi = c.range(key)
            if lo > hi:
                return "no value meets " + " and ".join(f"{r.label}: {r.text()}" for r in c.rules_on(key))
        if c.hardware:
            points = data.points()
            if not len(points):
                if data.space is None:
                    hw = data_point(data.base, 0)
                    broken = [r for r in c.hardware if not r.lo <= hw[r.key] <= r.hi]
                    return ("the instance's hardware (co-design is off) does not meet " + "; ".join(
                        f"{r.label}: {r.text()}, it has {hw[r.key]:g}" for r in broken))
                return (f"no design point within the {data.space.area_budget_mm2:g} mm² budget meets "
                        + ", ".join(dict.fromkeys(r.label for r in c.hardware)))
        if data.space is not None:
            return None
        table = data.table(data.base)
        fig = np.where(data.permitted[:, :, None], table.figure(_figure(data.objective)), np.inf)
        for li, layer in enumerate(data.layers):
            if not np.isfinite(fig[li, :, 0]).any():
                return (f"layer {layer.name} cannot run on this hardware with any allowed schedule (an SRAM is "
                        "below the schedule's minimum: fSRAM >= R·S·C_uv·F_uv·b_f, iSRAM >= W·R·C_uv·b_i)")
        return None

    def conflicting_constraints(self, data: SystolicData, options: SolveOptions) -> list[KeyPath] | None:
        """The cheap, certain cores: the schedule rules that leave a layer no schedule, or the bounds on one
        hardware value that exclude each other (the harness reduces them further)."""
        c = data.constraints
        for li, layer in enumerate(data.layers):
            if not data.permitted[li].any():
                return [r.path for r in c.schedules if layer.name in r.layers]
        for key in HW_KEYS:
            lo, hi = c.range(key)
            if lo > hi:
                return list(dict.fromkeys(r.path for r in c.rules_on(key)))
        return None

    def describe(self, data: SystolicData) -> dict[str, Any]:
        return {"layers": len(data.layers), "macs": sum(la.macs for la in data.layers), "objective": data.objective,
                "schedules": list(data.schedules), "codesign": data.space is not None,
                "hardware": data.base.point(0)}

    # ------------------------------------------------------------------------------------------------ methods
    def _solution(self, data: SystolicData, points: DesignPoints, h: int, choice: np.ndarray) -> SystolicSolution:
        hw = {k: int(v) for k, v in data_point(points, h).items()}
        return SystolicSolution(hw, {la.name: data.schedules[int(c)] for la, c in zip(data.layers, choice,
                                                                                       strict=True)})

    def run_heuristic(self, method: str, data: SystolicData, options: SolveOptions) -> SystolicSolution:
        # The candidate hardware: the instance's, or, when co-designing, every point of the design space — the
        # instance's array and SRAM sizes (e.g. the preset's defaults) may lie outside it, over the area budget —
        # that meets the user's array and SRAM bounds.
        points, bounded = _heuristic_points(data)
        where = "on this hardware" if data.space is None else (
            f"on any design point within the {data.space.area_budget_mm2:g} mm² budget")
        if bounded:
            where += " that meets " + ", ".join(bounded)
        if not len(points):
            raise HeuristicFailure("no candidate hardware meets " + ", ".join(bounded) + (
                "" if data.space is None else f" within the {data.space.area_budget_mm2:g} mm² budget"))
        fom = _figure(data.objective)
        allow, rule_of = _heuristic_schedules(data)
        if method == "los":
            table = data.table(points)
            if data.objective == codesign.NETWORK_ED:  # the best choice within every allowed schedule subset
                masked = CostTable(table.layers, table.schedules, np.where(allow[:, :, None], table.energy, np.inf),
                                   np.where(allow[:, :, None], table.delay, np.inf))
                answers = [codesign.network_ed(masked, points.area_mm2, allowed=subset)
                           for subset in codesign.schedule_subsets(len(data.schedules), data.options["max_schedules"])]
                ans = min(answers, key=lambda a: a.value)
                if ans.status != Status.OPTIMAL:
                    raise HeuristicFailure(f"no schedule choice has a finite delay {where}")
                return self._solution(data, points, ans.point, ans.choice)
            fig = np.where(allow[:, :, None], table.figure(fom), np.inf)
            value, choice = codesign.restricted_los(fig, data.options["max_schedules"])
            h = codesign.best_index(value, points.area_mm2)
            if not np.isfinite(value[h]):
                raise HeuristicFailure(f"some layer has no allowed schedule that can run {where}")
            return self._solution(data, points, h, choice[:, h])
        name = next((s for s in data.schedules if f"fixed-{s.lower()}" == method), None)
        if name is None:
            raise HeuristicFailure(f"schedule of '{method}' is not among the allowed schedules")
        si = data.schedules.index(name)
        if not allow[:, si].all():
            li = int(np.flatnonzero(~allow[:, si])[0])
            raise HeuristicFailure(f"{rule_of[li, si]}: layer {data.layers[li].name} may not run {name}")
        table = data.table(points, (name,))
        E, D = table.energy[:, 0, :], table.delay[:, 0, :]
        if data.objective == codesign.NETWORK_ED:
            with np.errstate(invalid="ignore"):
                value = E.sum(axis=0) * D.sum(axis=0)
            value = np.where(np.isnan(value), np.inf, value)
        else:
            value = table.figure(fom)[:, 0, :].sum(axis=0)
        h = codesign.best_index(value, points.area_mm2)
        if not np.isfinite(value[h]):
            raise HeuristicFailure(self._fixed_failure(data, name, E, D, where))
        return self._solution(data, points, h, np.full(len(data.layers), data.schedules.index(name)))

    @staticmethod
    def _fixed_failure(data: SystolicData, name: str, E: np.ndarray, D: np.ndarray, where: str) -> str:
        """Why no candidate point runs every layer with ``name`` at a finite figure (``E``, ``D``: ``[l, h]``)."""
        runs = np.isfinite(E).all(axis=0)  # points where every layer runs (then some delay is unbounded)
        if runs.any():
            layer = data.layers[int(np.flatnonzero(~np.isfinite(D[:, int(np.argmax(runs))]))[0])].name
            which = (f"layer {layer} {where}" if data.space is None else f"some layer (e.g. {layer}) on every design "
                     f"point within the {data.space.area_budget_mm2:g} mm² budget that runs all layers")
            return (f"{name} has an unbounded delay on {which}: the filter SRAM cannot hold R·S·C·F_uv filter data "
                    "(seed 003 Table 3, footnote 1)")
        never = np.flatnonzero(~np.isfinite(E).any(axis=1))
        if never.size:
            return f"layer {data.layers[int(never[0])].name} cannot run {name} {where} (an SRAM is below its minimum)"
        return f"no design point runs every layer with {name} (on each, an SRAM is below its minimum for some layer)"

    def build_milp(self, data: SystolicData) -> MilpFormulation[SystolicSolution]:
        raise NotImplementedError("the systolic problem uses its own exact driver (solve_exact)")

    def solve_exact(self, data: SystolicData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[SystolicSolution] | None:
        t0 = time.perf_counter()
        if solver not in (None, "highs"):
            raise InputError(f"the systolic models run on HiGHS, not '{solver}'", path=("solver",),
                             expected="highs")
        points = data.points()  # within the user's array / SRAM bounds
        if not len(points):
            return ExactOutcome(None, Status.INFEASIBLE, None, method, message="no design point meets the array and "
                                "SRAM constraints", solve_time_s=time.perf_counter() - t0)
        table = data.table(points)
        table_s = time.perf_counter() - t0
        k = data.options["max_schedules"]
        permitted = data.permitted if data.constraints.schedules else None
        if data.objective == codesign.NETWORK_ED:
            if k is not None and k < len(data.schedules):
                best: codesign.CodesignAnswer | None = None
                for subset in codesign.schedule_subsets(len(data.schedules), k):
                    a = codesign.network_ed(table, points.area_mm2, allowed=subset, permitted=permitted)
                    if best is None or a.value < best.value:
                        best = a
                assert best is not None
                ans = best
            else:
                ans = codesign.network_ed(table, points.area_mm2, permitted=permitted)
        elif method == "exhaustive":
            ans = codesign.exhaustive(table, _figure(data.objective), points.area_mm2, max_schedules=k,
                                      permitted=permitted)
        else:
            budget = data.space.area_budget_mm2 if data.space is not None else None
            ans = codesign.milp(table, _figure(data.objective), points.area_mm2, max_schedules=k, options=options,
                                area_budget=budget, permitted=permitted)
        metrics = {"design_points": len(points), "table_s": table_s, **{f"model_{a}": b for a, b in ans.stats.items()
                                                                         if isinstance(b, int | float)}}
        if ans.status == Status.INFEASIBLE or not np.isfinite(ans.value):
            return ExactOutcome(None, Status.INFEASIBLE, None, ans.method,
                                message="no design point runs every layer with an allowed schedule",
                                metrics=metrics, solve_time_s=time.perf_counter() - t0)
        sol = self._solution(data, points, ans.point, ans.choice)
        from dlaopt.solvers.highs_backend import HIGHS_VERSION

        return ExactOutcome(sol, ans.status, ans.bound, "highs" if ans.method == "milp" else ans.method,
                            HIGHS_VERSION if ans.method == "milp" else "", model_objective=ans.value,
                            objective_tolerance=1e-9, metrics=metrics, solve_time_s=time.perf_counter() - t0)

    # ------------------------------------------------------------------------------------------------ evaluation
    def evaluate(self, data: SystolicData, solution: SystolicSolution) -> Evaluation:
        violations: list[str] = []
        hw = solution.hardware
        point = DesignPoints.single(hw["J"], hw["K"], hw["f_kb"], hw["i_kb"], hw["p_kb"], data.tech)
        if data.space is None:
            if data_point(data.base, 0) != {k: float(v) for k, v in hw.items()}:
                violations.append(f"hardware {hw} is not the instance's {data_point(data.base, 0)}")
        else:
            violations.extend(_design_space_violations(data.space, data.tech, hw, data.bits))
        for rule in data.constraints.hardware:  # the user's array and SRAM bounds
            v = hw[rule.key]
            if v < rule.lo or v > rule.hi:
                violations.append(f"{rule.label}: {rule.name} is {v}{rule.unit}, not {rule.requirement()}")
        for rule in data.constraints.schedules:  # the schedules each layer may run
            for name in rule.layers:
                s = solution.schedules.get(name)
                if s is not None and s not in rule.allowed:
                    violations.append(f"{rule.label}: layer {name} runs {s}, allowed are {', '.join(rule.allowed)}")
        if violations:
            return Evaluation(False, None, violations)
        used = set()
        energy, delay, per_layer = [], [], []
        b = data.bits
        arrays = point.hardware(b_f=b.b_f, b_i=b.b_i, b_p=b.b_p, b_o=b.b_o, dram_bw=b.dram_bw, dram_block=128)
        for layer in data.layers:
            s = solution.schedules.get(layer.name)
            if s is None:
                violations.append(f"layer {layer.name}: no schedule")
                continue
            if s not in data.schedules:
                violations.append(f"layer {layer.name}: schedule {s} is not allowed")
                continue
            used.add(s)
            ed = layer_energy_delay(layer, s, arrays, data.tech,
                                    reference_fc_compute=bool(data.options["reference_fc_compute"]))
            e, d = float(ed.energy.ravel()[0]), float(ed.delay.ravel()[0])
            if not np.isfinite(e):
                violations.append(f"layer {layer.name}: {s} cannot run on this hardware (an SRAM is too small)")
            energy.append(e)
            delay.append(d)
            per_layer.append({"layer": layer.name, "schedule": s, "energy_j": e, "delay_cycles": d})
        k = data.options["max_schedules"]
        if k is not None and len(used) > k:
            violations.append(f"{len(used)} distinct schedules used, at most {k} allowed")
        if violations:
            return Evaluation(False, None, violations)
        E, D = np.array(energy), np.array(delay)
        if data.objective == codesign.NETWORK_ED:
            objective = float(E.sum() * D.sum())
        else:
            a, bb = FIGURES[data.objective]
            with np.errstate(invalid="ignore"):
                objective = float(np.sum(E ** a * D ** bb))
        if not np.isfinite(objective):
            return Evaluation(False, None, ["a layer's delay is unbounded with its schedule (ZiXYZo without room "
                                            "for R·S·C·F_uv filter data)"])
        metrics = {"hardware": "J={J} K={K} filter={f_kb} kB ifmap={i_kb} kB psum={p_kb} kB".format(**hw),
                   "energy_j": float(E.sum()), "delay_cycles": float(D.sum()),
                   "sum_layer_ed": float(np.sum(E * D)), "network_ed": float(E.sum() * D.sum()),
                   "area_mm2": float(point.area_mm2[0]), "schedules_used": sorted(used), "layers": per_layer}
        return Evaluation(True, objective, [], metrics)

    def solution_to_dict(self, data: SystolicData, solution: SystolicSolution) -> dict[str, Any]:
        return {"hardware": dict(solution.hardware), "schedules": dict(solution.schedules)}

    def solution_from_dict(self, data: SystolicData, doc: Mapping[str, Any]) -> SystolicSolution:
        hw = doc.get("hardware")
        if not isinstance(hw, Mapping) or any(not isinstance(hw.get(k), int) for k in HW_KEYS):
            raise InputError("a systolic solution needs 'hardware' with integer " + ", ".join(HW_KEYS),
                             path=("solution", "hardware"), expected="{J: 32, K: 64, f_kb: 16, i_kb: 32, p_kb: 8}")
        sch = doc.get("schedules")
        if not isinstance(sch, Mapping) or not all(isinstance(v, str) for v in sch.values()):
            raise InputError("a systolic solution needs 'schedules': {layer name: schedule}",
                             path=("solution", "schedules"), expected="e.g. {conv1: XYZiZo}")
        names = {la.name for la in data.layers}
        for n, s in sch.items():
            if n not in names:
                raise InputError(f"no layer named '{n}' in this instance", path=("solution", "schedules", n),
                                 expected="the names of the workload's conv / FC layers")
            if s not in opts.SCHEDULE_NAMES:
                raise InputError(f"unknown schedule '{s}'", path=("solution", "schedules", n),
                                 expected="one of " + ", ".join(opts.SCHEDULE_NAMES))
        return SystolicSolution({k: int(hw[k]) for k in HW_KEYS}, dict(sch))


def _heuristic_points(data: SystolicData) -> tuple[DesignPoints, list[str]]:
    """The heuristics' candidate hardware: the whole grid (or the instance's point), then only the points inside
    every ``array`` / ``sram`` bound; and the labels of those constraints."""
    points = data.space.points(data.tech) if data.space is not None else data.base
    keep = np.ones(len(points), dtype=bool)
    labels: list[str] = []
    for rule in data.constraints.hardware:
        values = getattr(points, rule.key)
        keep &= (values >= rule.lo) & (values <= rule.hi)
        labels.append(rule.label)
    return points.subset(np.flatnonzero(keep)), list(dict.fromkeys(labels))


def _heuristic_schedules(data: SystolicData) -> tuple[np.ndarray, np.ndarray]:
    """``[l, s]``: whether each ``schedules`` record selecting layer ``l`` allows schedule ``s``, and the label of
    the first one that does not (``""`` where all do)."""
    names = {la.name: li for li, la in enumerate(data.layers)}
    rule_of = np.full((len(data.layers), len(data.schedules)), "", dtype=object)
    for rule in data.constraints.schedules:
        for layer in rule.layers:
            for si, s in enumerate(data.schedules):
                if s not in rule.allowed and not rule_of[names[layer], si]:
                    rule_of[names[layer], si] = rule.label
    return rule_of == "", rule_of


def data_point(points: DesignPoints, h: int) -> dict[str, float]:
    return {"J": float(points.J[h]), "K": float(points.K[h]), "f_kb": float(points.f_kb[h]),
            "i_kb": float(points.i_kb[h]), "p_kb": float(points.p_kb[h])}


def _figure(objective: str) -> str:
    return "ed" if objective == codesign.NETWORK_ED else objective


def _design_space_violations(space: DesignSpace, tech: Technology, hw: Mapping[str, int], bits: Bits) -> list[str]:
    """Membership in the §4.2 grid, checked from its definition (not by searching the enumerated grid)."""
    out = []
    rows, cols = hw["J"], hw["K"]
    step = space.pe_step
    if min(rows, cols) < space.min_pe or (rows - space.min_pe) % step or (cols - space.min_pe) % step:
        out.append(f"J={rows}, K={cols}: PE rows and columns must be {space.min_pe} + a multiple of {step}")
    if min(rows, cols) < space.aspect_min * max(rows, cols):
        out.append(f"J={rows}, K={cols}: min(J, K) must be at least {space.aspect_min}·max(J, K)")
    for key in ("f_kb", "i_kb", "p_kb"):
        v = hw[key]
        if v < space.min_sram_kb or v & (v - 1) or v not in tech.sram_pj_per_bit:
            out.append(f"{key}={v}: SRAM sizes are powers of two from {space.min_sram_kb} kB with an energy figure")
    area = float(tech.area_um2(np.array(rows), np.array(cols), np.array(hw["f_kb"]), np.array(hw["i_kb"]),
                               np.array(hw["p_kb"]))) / 1e6
    if area > space.area_budget_mm2:
        out.append(f"area {area:.4f} mm² exceeds the budget of {space.area_budget_mm2} mm²")
    if (hw["f_kb"] * 8192 < rows * cols * bits.b_f or hw["i_kb"] * 8192 < rows * bits.b_i
            or hw["p_kb"] * 8192 < cols * bits.b_p):
        out.append("an SRAM is smaller than what the PE array's registers hold (J·K·b_f, J·b_i or K·b_p bits)")
    return out
