"""Global memory-bank mapping (seed 002 §2.2): a bank layout for every tensor of a workload on an accelerator whose
on-chip memory is split into banks, so that operators rarely need copies between banks.

The hardware's scratchpad gives the banks (``Memory.banks``) and their capacity (``capacity_bytes / banks``), e.g.
preset ``banked``. Methods ``local`` (the seed's baseline), ``propagate`` (the seed's algorithm) and ``exact`` (a MILP
on HiGHS, warm-started from ``propagate``). The evaluator (:mod:`.evaluate`) recomputes copies and spills from the
layouts and, on graphs small enough, runs the functional check: the graph executed from numpy bank arrays, each
operator reading its operands in the layout it requires, compared bit for bit with a plain execution.

The prepared data is a :class:`BankMapData`: the :class:`~dlaopt.formulations.bankmap.layouts.LayoutModel` (of which
it is a subclass, so every function of the package and the plots take it as is) with the instance options the
protocol's methods need — nothing is kept on the (shared) problem object. Option ``off_chip_tensors`` (e.g. the
tensors a tensor-pinning stage sends through main memory) becomes the model's forced off-chip set: every method puts
those tensors in the mapping's ``off_chip`` and the evaluator rejects a solution that omits one. Names are checked
here: an unknown tensor, or a graph input or weight (which never spills in this model, so forcing it would mean
nothing), is an :class:`~dlaopt.errors.InputError` located at ``options.off_chip_tensors[i]``.

User constraints (:mod:`.constraints`: ``layout``, ``layouts``, ``off_chip``) become typed records in the prepared
data (:attr:`BankMapData.rules`): an ``off_chip`` constraint joins the forced off-chip set, the layout constraints
the model's allowed homes (:attr:`~dlaopt.formulations.bankmap.layouts.LayoutModel.home_allowed`), which the MILP
fixes as column bounds and the heuristics keep to. When they leave no mapping,
:meth:`BankMapProblem.infeasibility_reason` says so (the test is exact and cheap) and
:meth:`BankMapProblem.conflicting_constraints` names the constraints involved; the evaluator checks each record on
its own (:func:`~dlaopt.formulations.bankmap.evaluate.constraint_violations`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from dlaopt.errors import InputError
from dlaopt.formulations.bankmap.constraints import Rule, find_conflict, home_allowed, off_chip_names, parse_rules
from dlaopt.formulations.bankmap.evaluate import BankMappingError, constraint_violations, evaluate, functional_check
from dlaopt.formulations.bankmap.layouts import (
    DEFAULT_OFFCHIP_WEIGHT,
    BankMapping,
    LayoutModel,
    build_layout_model,
    off_chip_tensor_error,
)
from dlaopt.formulations.bankmap.methods import local, propagate
from dlaopt.formulations.base import Evaluation, ExactOutcome, HeuristicFailure, Method, MilpFormulation, Problem
from dlaopt.hardware.model import Accelerator, MemoryKind
from dlaopt.solvers.result import SolveOptions
from dlaopt.specs import bankmap as opts

if TYPE_CHECKING:
    from dlaopt.io.instance import Instance
    from dlaopt.specs.constraints import KeyPath


def banks_of(acc: Accelerator, source: str | None = None) -> tuple[int, int]:
    """``(banks, bytes per bank)`` of the accelerator's banked on-chip memory (the scratchpad or buffer with the
    most banks)."""
    mems = [m for m in acc.memories if m.kind != MemoryKind.DRAM and m.capacity_bytes is not None]
    if not mems:
        raise InputError("bank mapping needs an on-chip memory with a capacity", file=source,
                         path=("hardware", "memories"), expected="a scratchpad with 'banks', e.g. preset 'banked'")
    mem = max(mems, key=lambda m: (m.banks, m.capacity_bytes or 0))
    assert mem.capacity_bytes is not None
    if mem.capacity_bytes < mem.banks:
        raise InputError(f"memory '{mem.name}' has {mem.banks} banks but only {mem.capacity_bytes} bytes, less than "
                         "one byte per bank", file=source, path=("hardware", "memories", acc.memories.index(mem)),
                         expected="capacity_bytes of at least one byte per bank")
    return mem.banks, mem.capacity_bytes // mem.banks


@dataclass(frozen=True)
class BankMapData(LayoutModel):
    """A prepared bank-mapping instance: its layout model plus the options of the objective and of the evaluation,
    and the user constraints as typed records (``rules``, file order)."""

    offchip_weight: float = DEFAULT_OFFCHIP_WEIGHT
    functional_check_limit: int = int(opts.DEFAULT_OPTIONS["functional_check_limit"])
    rules: tuple[Rule, ...] = ()

    @classmethod
    def of(cls, model: LayoutModel, options: Mapping[str, Any], rules: tuple[Rule, ...] = ()) -> BankMapData:
        """``model`` with ``options`` (missing keys take their defaults) and the constraint records ``rules``."""
        o = {**opts.DEFAULT_OPTIONS, **dict(options)}
        parts = {f.name: getattr(model, f.name) for f in fields(LayoutModel)}
        return cls(**parts, offchip_weight=float(o["offchip_weight"]),
                   functional_check_limit=int(o["functional_check_limit"]), rules=rules)


def _off_chip_option(instance: Instance) -> list[str]:
    """The validated ``off_chip_tensors`` option (InputError located at the offending entry)."""
    names = instance.options.get("off_chip_tensors", [])
    path: tuple[str | int, ...] = ("options", "off_chip_tensors")
    if not isinstance(names, list | tuple):
        raise InputError("off_chip_tensors must be a list of tensor names", file=instance.source, path=path,
                         expected="an array of unique tensor names")
    seen: set[str] = set()
    for i, name in enumerate(names):
        why = off_chip_tensor_error(instance.graph, name)
        if why is not None:
            raise InputError(why[0], file=instance.source, path=(*path, i), expected=why[1])
        if name in seen:
            raise InputError(f"tensor '{name}' is listed twice", file=instance.source, path=(*path, i),
                             expected="unique tensor names")
        seen.add(name)
    return list(names)


class BankMapProblem(Problem[BankMapData, BankMapping]):
    name = "bankmap"
    title = "Global memory-bank mapping (layouts across banks, few inter-bank copies)"
    objectives = opts.OBJECTIVES
    options_schema = opts.OPTIONS_SCHEMA
    methods = (
        Method("local", "heuristic", "Each operator's own layout, outputs kept on chip only for the next operator "
               "(seed 002's baseline)"),
        Method("propagate", "heuristic", "Restricted operators fixed, layouts propagated to a fixed point, copies at "
               "conflicts (seed 002 §2.2)"),
        Method("exact", "exact", "MILP over every operator's layout choice, warm-started from propagate", "highs"),
    )

    # ------------------------------------------------------------------------------------------------ data
    def prepare(self, instance: Instance) -> BankMapData:
        banks, bank_bytes = banks_of(instance.accelerator, instance.source)
        off_chip = _off_chip_option(instance)
        try:
            model = build_layout_model(instance.graph, banks, bank_bytes, off_chip)
        except BankMappingError as exc:
            raise InputError(str(exc), file=instance.source, path=("workload",)) from None
        try:
            rules = parse_rules(instance.constraints, instance.graph, model.tensor_names)
        except InputError as exc:
            raise exc.located(file=instance.source) from None
        forced = off_chip_names(rules)
        if rules:
            model = replace(model, off_chip_tensors=model.off_chip_tensors | frozenset(forced),
                            constrained_off_chip=frozenset(forced))
            model = replace(model, home_allowed=home_allowed(model, rules))
        return BankMapData.of(model, instance.options, rules)

    def infeasibility_reason(self, data: BankMapData) -> str | None:
        for o in data.ops:
            if not o.choices:
                return f"operator {o.name} ({o.kind}) has no layout choice"
        found = find_conflict(data, data.rules)
        return None if found is None else found[0]

    def conflicting_constraints(self, data: BankMapData, options: SolveOptions) -> list[KeyPath] | None:
        found = find_conflict(data, data.rules)
        return None if found is None else found[1]

    def describe(self, data: BankMapData) -> dict[str, Any]:
        return {"banks": data.banks, "bank_bytes": data.bank_bytes, "operators": len(data.ops),
                "tensors": len(data.tensor_names), "free_tensors": len(data.free_tensors),
                "forced_off_chip_tensors": len(data.off_chip_tensors),
                "layout_constrained_tensors": len(data.home_allowed),
                "layout_choices": sum(len(o.choices) for o in data.ops)}

    # ------------------------------------------------------------------------------------------------ methods
    def run_heuristic(self, method: str, data: BankMapData, options: SolveOptions) -> BankMapping:
        reason = find_conflict(data, data.rules)
        if reason is not None:
            raise HeuristicFailure(f"no mapping meets the constraints: {reason[0]}")
        if method == "local":
            return local(data, data.offchip_weight)
        if method == "propagate":
            return propagate(data, data.offchip_weight)
        raise KeyError(method)

    def build_milp(self, data: BankMapData) -> MilpFormulation[BankMapping]:
        raise NotImplementedError("the bank-mapping problem uses its own exact driver (solve_exact)")

    def solve_exact(self, data: BankMapData, method: str, *, solver: str | None,
                    options: SolveOptions) -> ExactOutcome[BankMapping] | None:
        from dlaopt.formulations.bankmap.exact import solve_exact

        if solver not in (None, "highs") and not (solver or "").startswith("pyomo:"):
            raise InputError(f"the bank-mapping model is a MILP (highs or pyomo:NAME), not '{solver}'",
                             path=("solver",), expected="highs or pyomo:NAME")
        t0 = time.perf_counter()
        w = data.offchip_weight
        try:
            warm: BankMapping | None = propagate(data, w)
        except HeuristicFailure:  # the constraints leave no mapping: the MILP proves it
            warm = None
        res = solve_exact(data, w, options=options, warm_start=warm, solver=solver or "highs")
        from dlaopt.solvers.highs_backend import HIGHS_VERSION

        return ExactOutcome(res.mapping, res.status, res.bound, solver or "highs",
                            HIGHS_VERSION if (solver or "highs") == "highs" else "", message=res.message,
                            model_stats=res.model_stats, model_objective=res.objective, objective_tolerance=1e-6,
                            warm_start={"method": "propagate", "objective": res.warm_start_objective}
                            if warm is not None else None,
                            solve_time_s=time.perf_counter() - t0)

    # ------------------------------------------------------------------------------------------------ evaluation
    def evaluate(self, data: BankMapData, solution: BankMapping) -> Evaluation:
        try:
            rep = evaluate(data, solution, data.offchip_weight)
            broken = constraint_violations(data, solution, data.rules)
        except BankMappingError as exc:
            return Evaluation(False, None, [str(exc)])
        violations = list(rep.violations) + broken
        metrics: dict[str, Any] = {
            "on_chip_copy_bytes": rep.on_chip_copy_bytes, "off_chip_copy_bytes": rep.off_chip_copy_bytes,
            "spill_bytes": rep.spill_bytes, "copies": len(rep.copies), "spilled_tensors": len(rep.spills)}
        elements = sum(math.prod(t.shape) for t in data.workload.tensors.values())
        limit = data.functional_check_limit
        if not violations and limit and elements <= limit:
            check = functional_check(data, solution)
            metrics["functional_check"] = "passed" if check.ok else "FAILED"
            if not check.ok:
                violations.append(f"functional check: outputs {list(check.mismatched)} differ from a plain execution")
        else:
            metrics["functional_check"] = "skipped (graph too large)" if not violations else "skipped"
        return Evaluation(not violations, rep.objective if not violations else None, violations, metrics)

    def solution_to_dict(self, data: BankMapData, solution: BankMapping) -> dict[str, Any]:
        layouts = {}
        homes = data.homes(solution)
        for t in data.tensor_names:
            if t in homes:
                layouts[t] = {"shape": list(data.shape(t)), "bank_axis": homes[t]}
        return {**solution.to_dict(), "layouts": layouts}

    def solution_from_dict(self, data: BankMapData, doc: Mapping[str, Any]) -> BankMapping:
        choices = doc.get("choices")
        homes = doc.get("homes", {})
        off = doc.get("off_chip", [])
        if not isinstance(choices, Mapping) or not all(isinstance(v, int) for v in choices.values()):
            raise InputError("a bank mapping needs 'choices': {operator: choice index}", path=("solution", "choices"),
                             expected="an object of integers")
        if not isinstance(homes, Mapping) or not all(isinstance(v, int) for v in homes.values()):
            raise InputError("'homes' must map free tensors to axes", path=("solution", "homes"))
        if not isinstance(off, list) or not all(isinstance(v, str) for v in off):
            raise InputError("'off_chip' must be a list of tensor names", path=("solution", "off_chip"))
        names = data.op_by_name()
        for n, c in choices.items():
            if n not in names:
                raise InputError(f"no operator named '{n}'", path=("solution", "choices", n))
            if not 0 <= c < len(names[n].choices):
                raise InputError(f"operator '{n}' has {len(names[n].choices)} layout choices, not {c}",
                                 path=("solution", "choices", n), expected=f"0..{len(names[n].choices) - 1}")
        return BankMapping(dict(choices), dict(homes), frozenset(off))
