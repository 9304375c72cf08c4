"""Hardware–mapping co-design under an area or power budget (seed 001: DiGamma, Chapter 6; ConfuciuX, Chapter 8).

Choose the accelerator — PE-array rows and columns, L1 bytes per PE, L2 bytes, from the instance's grid over a
template (:mod:`.space`) — and every layer's mapping, minimising the network's latency, energy or EDP under an area
and/or power budget (:mod:`dlaopt.hardware.area`). ``ls``: one design runs every layer; ``lp``: every layer has its
own design and the budget caps their sum. The mapping is free (DiGamma) or a fixed dataflow's (ConfuciuX's
styles; DiGamma's HW-opt).

* ``exact`` (:mod:`.exact`): the selection over the per-layer cost table, refined lazily from bounds — the proven
  optimum over the grid.
* Fixed dataflow: ``confuciux`` (REINFORCE with an LSTM policy, then the local GA; §8.1.6–8.1.8), ``reinforce``
  (the first stage only), ``ga`` (§8.2.1's GA baseline) and ``random``, all over the full cost table (:mod:`.search`).
* Free mappings: ``digamma`` (DiGamma's GA, §6.2.3), ``mapping-opt-compute`` / ``-buffer`` / ``-medium`` (GAMMA on
  one of three fixed designs, §6.3.1) and ``random`` (:mod:`.digamma`).

The evaluator (:mod:`.check`) recomputes area, power, latency and energy from the instance alone.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping as MappingABC
from typing import TYPE_CHECKING, Any

import numpy as np

from dlaopt.errors import InputError
from dlaopt.formulations.base import (
    Evaluation,
    ExactOutcome,
    HeuristicFailure,
    Method,
    MilpFormulation,
    Problem,
)
from dlaopt.formulations.codesign.data import CapRule, CodesignData, CodesignSolution, DesignRule
from dlaopt.formulations.codesign.exact import selection_problem, solve_codesign
from dlaopt.formulations.codesign.space import (
    DesignPoint,
    accelerator_for,
    design_space_from_options,
    template_of,
)
from dlaopt.formulations.codesign.tables import FREE, CostTables
from dlaopt.formulations.mapping.arch import arch_from_accelerator
from dlaopt.formulations.mapping.loopnest import loopnest_from_operator, require_mappable, unique_layers
from dlaopt.formulations.mapping.mapping import Mapping, loop_nest_text, mapping_errors
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import codesign as opts
from dlaopt.specs.constraints import Constraint, selected

if TYPE_CHECKING:
    from dlaopt.io.instance import Instance

TABLE_SEARCHES = ("confuciux", "reinforce", "ga")
FREE_SEARCHES = ("digamma", "mapping-opt-compute", "mapping-opt-buffer", "mapping-opt-medium")
DEFAULT_SAMPLES = {"digamma": 40_000, "random": 10_000, "ga": 5_000}


def _bound(c: Constraint, key: str) -> tuple[int | None, int | None]:
    v = c.params[key]
    if isinstance(v, int):
        return v, v
    lo, hi = v.get("min"), v.get("max")
    if lo is not None and hi is not None and lo > hi:
        raise c.error(f"min {lo} is above max {hi}", key, expected="min <= max")
    return lo, hi


class CodesignProblem(Problem[CodesignData, CodesignSolution]):
    name = "codesign"
    title = "Hardware-mapping co-design under an area or power budget (DiGamma, ConfuciuX)"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("exact", "exact", "Selection over the per-layer cost table refined lazily from bounds (mapping "
               "MILPs for free mappings): proven optimal over the design grid", "highs"),
        Method("confuciux", "heuristic", "ConfuciuX (seed 001 Ch. 8): REINFORCE with an LSTM policy, then a local "
               "GA; fixed dataflow"),
        Method("reinforce", "heuristic", "ConfuciuX's first stage alone (REINFORCE, LSTM policy); fixed dataflow"),
        Method("ga", "heuristic", "Genetic algorithm baseline of seed 001 §8.2.1; fixed dataflow"),
        Method("digamma", "heuristic", "DiGamma (seed 001 Ch. 6): GA over PE array and mappings, buffers by "
               "minimum requirement; free mappings"),
        Method("mapping-opt-compute", "heuristic", "Mapping-opt (seed 001 §6.3.1): GAMMA on the compute-focused "
               "design; free mappings"),
        Method("mapping-opt-buffer", "heuristic", "Mapping-opt: GAMMA on the buffer-focused design; free mappings"),
        Method("mapping-opt-medium", "heuristic", "Mapping-opt: GAMMA on the medium design; free mappings"),
        Method("random", "heuristic", "Random search over designs (and mappings, when free)"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> CodesignData:
        options = {**opts.DEFAULT_OPTIONS, **dict(instance.options)}
        src = instance.source
        wl = instance.graph
        ops = require_mappable(wl, src)
        try:
            template = template_of(instance.accelerator)
            space = design_space_from_options(dict(options.get("design_space") or {}), template,
                                              ("options", "design_space"))
        except InputError as exc:
            raise exc.located(file=src) from None
        for p in (space.points[0],):
            try:
                arch_from_accelerator(accelerator_for(template, p))
            except ValueError as exc:
                raise InputError(str(exc), file=src, path=("hardware",)) from None
        if options["aggregate"] == "max" and instance.objective != "latency":
            raise InputError("aggregate 'max' applies to latency (a pipeline's slowest stage)", file=src,
                             path=("options", "aggregate"), expected="sum, or objective: latency")
        nests = [loopnest_from_operator(wl, op) for op in ops]
        groups = unique_layers(nests)
        unique_of = np.zeros(len(nests), dtype=np.int64)
        reps = []
        for k, members in enumerate(groups.values()):
            unique_of[members] = k
            reps.append(nests[members[0]])
        tech = options["technology"]
        area = space.area_mm2(template, tech)
        power = space.power_mw(template, tech)
        budgets = self._budgets(dict(options.get("budget") or {}), area, power, options["deployment"], len(nests),
                                src)
        kinds = [op.kind.value for op in ops]
        names = [op.name for op in ops]
        design_rules, cap_rules = self._rules(instance.constraints, names, kinds, instance.objective, src)
        return CodesignData(instance.name, names, nests, unique_of, reps, template, space, options["dataflow"],
                            options["deployment"], instance.objective, options["aggregate"], tech, area, power,
                            budgets, design_rules, cap_rules, options)

    @staticmethod
    def _budgets(doc: dict[str, Any], area: np.ndarray, power: np.ndarray, deployment: str, n_layers: int,
                 src: str | None) -> dict[str, float]:
        if not doc:
            raise InputError("co-design needs a budget", file=src, path=("options", "budget"),
                             expected="area_mm2, power_mw, area_fraction or power_fraction")
        out: dict[str, float] = {}
        top = {"area_mm2": float(area.max()), "power_mw": float(power.max())}
        scale = n_layers if deployment == "lp" else 1
        for key, value in doc.items():
            base = key.replace("_fraction", "")
            base = {"area": "area_mm2", "power": "power_mw"}.get(base, base)
            cap = float(value) * top[base] * scale if key.endswith("_fraction") else float(value)
            if base in out:
                raise InputError(f"the {base} budget is given twice", file=src, path=("options", "budget", key),
                                 expected="an absolute cap or a fraction, not both")
            out[base] = cap
        return out

    @staticmethod
    def _rules(constraints: tuple[Constraint, ...], names: list[str], kinds: list[str], objective: str,
               src: str | None) -> tuple[list[DesignRule], list[CapRule]]:
        design: list[DesignRule] = []
        caps: list[CapRule] = []
        for c in constraints:
            try:
                for k, n in enumerate(c.params.get("layers") or []):
                    if n not in names:
                        raise c.error(f"no mapped layer named '{n}'", "layers", k,
                                      expected="names of conv2d / depthwise conv / matmul operators")
                layers = frozenset(i for i, (n, kd) in enumerate(zip(names, kinds, strict=True)) if selected(c, n, kd))
                if not layers:
                    raise c.error("the selector picks no layer", expected="layers or op_kinds of mapped layers")
                if c.kind == "design":
                    bounds = {key: _bound(c, key) for key in ("rows", "cols", "pes", "l1_bytes", "l2_bytes")
                              if key in c.params}
                    design.append(DesignRule(c.label, layers, bounds))
                elif c.kind == "layer_cap":
                    caps.append(CapRule(c.label, layers, objective, float(c.params["max"])))
            except InputError as exc:
                raise exc.located(file=src) from None
        return design, caps

    def infeasibility_reason(self, data: CodesignData) -> str | None:
        allowed = data.allowed()
        if data.deployment == "ls":
            allowed = allowed.all(axis=0, keepdims=True)
        bad = np.flatnonzero(~allowed.any(axis=1))
        if bad.size:
            rules = ", ".join(r.label for r in data.design_rules)
            who = "the design" if data.deployment == "ls" else f"layer {data.layer_names[int(bad[0])]}"
            return f"no grid point is left for {who} by {rules}"
        for key, cap in data.budgets.items():
            use = data.area_mm2 if key == "area_mm2" else data.power_mw
            least = float(use.min()) * (data.n_layers if data.deployment == "lp" else 1)
            if least > cap * (1 + 1e-9):
                return (f"the smallest design needs {least:.4g} {'mm²' if key == 'area_mm2' else 'mW'}, above the "
                        f"{key} budget {cap:.4g}")
        return None

    def describe(self, data: CodesignData) -> dict[str, Any]:
        s = data.space
        return {"layers": data.n_layers, "unique_layers": len(data.nests), "design_points": len(s),
                "grid": {"rows": list(s.rows), "cols": list(s.cols), "l1_bytes": list(s.l1_bytes),
                         "l2_bytes": list(s.l2_bytes)},
                "deployment": data.deployment, "dataflow": data.dataflow, "objective": data.objective,
                "aggregate": data.aggregate, "budgets": dict(data.budgets),
                "area_mm2_range": [float(data.area_mm2.min()), float(data.area_mm2.max())],
                "constraints": len(data.design_rules) + len(data.cap_rules)}

    # ------------------------------------------------------------------------------------------------ methods
    def methods_for(self, data: CodesignData) -> list[str]:
        """exact and random always; the table searches for a fixed dataflow, DiGamma and Mapping-opt for free
        mappings (Mapping-opt only layer-sequential)."""
        if data.dataflow == FREE:
            extra = ["digamma", *(FREE_SEARCHES[1:] if data.deployment == "ls" else [])]
        else:
            extra = list(TABLE_SEARCHES)
        return ["exact", *extra, "random"]

    def tables(self, data: CodesignData, workers: int | None = None) -> CostTables:
        w = workers if workers is not None else int(data.options.get("workers", 0)) or (os.cpu_count() or 1)
        return CostTables(data.nests, data.template, data.space, data.dataflow, data.objective,
                          entry_time_limit=data.options.get("entry_time_limit"), workers=w)

    def solution_from_choice(self, data: CodesignData, tables: CostTables, choice: np.ndarray,
                             notes: dict[str, Any] | None = None) -> CodesignSolution:
        pts: list[DesignPoint] = []
        maps: list[Mapping] = []
        for k, p in enumerate(choice):
            u = int(data.unique_of[k])
            m = tables.mapping_at.get((u, int(p)))
            if m is None:
                raise HeuristicFailure(f"no mapping known for layer {data.layer_names[k]} on "
                                       f"{data.space.points[int(p)].label}")
            pts.append(data.space.points[int(p)])
            maps.append(m)
        return CodesignSolution(pts, maps, dict(notes or {}))

    def run_heuristic(self, method: str, data: CodesignData, options: SolveOptions) -> CodesignSolution:
        search = dict(data.options.get("search") or {})
        seed = options.seed or 0
        if method in TABLE_SEARCHES or (method == "random" and data.dataflow != FREE):
            if data.dataflow == FREE:
                raise HeuristicFailure(f"{method} searches a fixed dataflow's cost table: set options.dataflow")
            from dlaopt.formulations.codesign import search as srch

            t0 = time.perf_counter()
            tables = self.tables(data)
            pairs = [(u, p) for u in range(len(data.nests)) for p in range(len(data.space))]
            tables.compute(pairs, options.deadline)
            if not tables.settled.all():
                raise HeuristicFailure("the time limit came before the cost table was complete")
            table_time = time.perf_counter() - t0
            problem = selection_problem(data.setup(), tables.ub)
            axes = data.space.axes
            feats = self._features(data, problem.n_layers)
            left = None if options.time_limit is None else max(0.1, options.time_limit - table_time)
            if method == "confuciux":
                res = srch.confuciux(problem, axes, feats, epochs=search.get("epochs", 5000),
                                     generations=search.get("generations", 2000), seed=seed, time_limit=left)
            elif method == "reinforce":
                res = srch.reinforce(problem, axes, feats, epochs=search.get("epochs", 5000), seed=seed,
                                     time_limit=left)
            elif method == "ga":
                res = srch.genetic(problem, axes, samples=search.get("samples", DEFAULT_SAMPLES["ga"]), seed=seed,
                                   time_limit=left)
            else:
                res = srch.random_search(problem, axes, samples=search.get("samples", DEFAULT_SAMPLES["random"]),
                                         seed=seed, time_limit=left)
            if res.choice is None:
                raise HeuristicFailure(f"{method} found no design within the budget in {res.samples} samples")
            choice = (np.full(data.n_layers, int(res.choice[0]), dtype=np.int64) if data.deployment == "ls"
                      else np.asarray(res.choice, dtype=np.int64))
            notes = {"samples": res.samples, "search_time_s": round(res.time_s, 3),
                     "table_time_s": round(table_time, 3), "trace": [list(t) for t in res.trace]}
            return self.solution_from_choice(data, tables, choice, notes)
        if method in FREE_SEARCHES or method == "random":
            if data.dataflow != FREE:
                raise HeuristicFailure(f"{method} co-optimises the mappings: it needs options.dataflow: free")
            from dlaopt.formulations.codesign import digamma as dg

            if method == "digamma":
                out = dg.digamma(data, samples=search.get("samples", DEFAULT_SAMPLES["digamma"]), seed=seed,
                                 time_limit=options.time_limit)
            elif method == "random":
                out = dg.random_search(data, samples=search.get("samples", DEFAULT_SAMPLES["random"]), seed=seed,
                                       time_limit=options.time_limit)
            else:
                out = dg.mapping_opt(data, method.rsplit("-", 1)[1], samples=search.get("samples", dg.SEED_SAMPLES),
                                     seed=seed, time_limit=options.time_limit)
            sol = out.solution
            sol.notes.update({"samples": out.samples, "search_time_s": round(out.time_s, 3),
                              "trace": [list(t) for t in out.trace]})
            return sol
        raise HeuristicFailure(f"unknown method '{method}'")

    @staticmethod
    def _features(data: CodesignData, rows: int) -> np.ndarray:
        """Per selection row, the layer's loop bounds and kind: ConfuciuX's observation (eq. 8.1)."""
        feats = []
        nests = data.layers if rows == data.n_layers else data.nests
        for n in nests[:rows]:
            s = n.sizes
            feats.append([s.get("K", s.get("N", 1)), s.get("C", s.get("K", 1)), s.get("P", s.get("M", 1)),
                          s.get("Q", 1), s.get("R", 1), s.get("S", 1), s.get("G", 1),
                          {"conv2d": 0, "depthwise_conv2d": 1, "matmul": 2}.get(n.kind, 3)])
        return np.asarray(feats, dtype=np.float64)

    def build_milp(self, data: CodesignData) -> MilpFormulation[CodesignSolution]:
        raise NotImplementedError("co-design is solved by its own exact driver (solve_exact)")

    def solve_exact(self, data: CodesignData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[CodesignSolution] | None:
        tables = self.tables(data)
        ans = solve_codesign(data.setup(), tables, time_limit=options.time_limit)
        sol = None
        if ans.choice is not None:
            sol = self.solution_from_choice(data, tables, ans.choice, {
                "rounds": ans.rounds, **ans.stats,
            })
        bound = None if ans.status == Status.INFEASIBLE else (ans.bound if math.isfinite(ans.bound) else None)
        metrics = {"rounds": ans.rounds, **ans.stats}
        return ExactOutcome(sol, ans.status, bound, "highs" if data.deployment == "lp" else "scan",
                            message=ans.message, model_objective=ans.value if sol is not None else None,
                            objective_tolerance=1e-6, metrics=metrics, solve_time_s=ans.time_s)

    # ------------------------------------------------------------------------------------------------ evaluation
    def evaluate(self, data: CodesignData, solution: CodesignSolution) -> Evaluation:
        from dlaopt.formulations.codesign.check import evaluate_design

        return evaluate_design(data, solution)

    def solution_to_dict(self, data: CodesignData, solution: CodesignSolution) -> dict[str, Any]:
        layers: dict[str, Any] = {}
        for name, nest, p, m in zip(data.layer_names, data.layers, solution.points, solution.mappings, strict=True):
            arch = arch_from_accelerator(accelerator_for(data.template, p))
            doc = {"design": p.to_dict(), **m.to_dict(arch), "loop_nest": loop_nest_text(nest, arch, m)}
            layers[name] = doc
        out: dict[str, Any] = {"deployment": data.deployment}
        if data.deployment == "ls" and solution.points:
            out["design"] = solution.points[0].to_dict()
        out["layers"] = layers
        notes = {k: v for k, v in solution.notes.items() if k != "trace"}
        if notes:
            out["notes"] = notes
        return out

    def solution_from_dict(self, data: CodesignData, doc: MappingABC[str, Any]) -> CodesignSolution:
        layers = doc.get("layers")
        if not isinstance(layers, MappingABC):
            raise InputError("a co-design solution needs 'layers': {layer name: {design, factors, orders}}",
                             path=("solution", "layers"), expected="an object keyed by layer name")
        pts: list[DesignPoint] = []
        maps: list[Mapping] = []
        for name, nest in zip(data.layer_names, data.layers, strict=True):
            where = ("solution", "layers", name)
            ld = layers.get(name)
            if not isinstance(ld, MappingABC):
                raise InputError(f"layer '{name}' is missing", path=where, expected="{design, factors, orders}")
            d = ld.get("design")
            keys = ("rows", "cols", "l1_bytes", "l2_bytes")
            if not isinstance(d, MappingABC) or any(
                    not isinstance(d.get(k), int) or isinstance(d.get(k), bool) or d.get(k) < 0 for k in keys):
                raise InputError(f"layer '{name}': 'design' needs non-negative integers {list(keys)}",
                                 path=(*where, "design"), expected="{rows, cols, l1_bytes, l2_bytes}")
            if d["rows"] < 1 or d["cols"] < 1:
                raise InputError(f"layer '{name}': rows and cols must be positive", path=(*where, "design"))
            p = DesignPoint(d["rows"], d["cols"], d["l1_bytes"], d["l2_bytes"])
            try:
                m = Mapping.from_dict(ld)
            except (TypeError, ValueError) as exc:
                raise InputError(f"layer '{name}': {exc}", path=where) from None
            arch = arch_from_accelerator(accelerator_for(data.template, p))
            errs = mapping_errors(nest, arch, m)
            if errs:
                raise InputError(f"layer '{name}': {errs[0]}", path=where,
                                 expected=f"factors over the slots {[s.name for s in arch.slots()]}")
            pts.append(p)
            maps.append(m)
        return CodesignSolution(pts, maps)


__all__ = ["CodesignProblem"]
