"""Static memory allocation at tight capacities: every allocation method on instances derived from the zoo's networks
and on generated hard ones, against the live-bytes bound.

Instances (every one has a capacity; the methods place the buffers within it, objective ``feasibility`` by default):

* ``zoo`` — the residency of pinning solutions (seed 000's tensor pinning, ``greedy`` and ``exact``) of the zoo's
  networks on the thesis accelerator (SMAUG NVDLA-like, two or three scratchpads): in each scratchpad, every maximal
  run of a tensor (consecutive steps in that scratchpad) is one buffer alive from its first step to its last, of the
  tensor's size; the capacity is the scratchpad's. Pinning is solved without its address stage
  (``options.addresses: false``): it only checks that the resident bytes fit at every step, so these are exactly
  the allocation problems a compiler faces after pinning. Each is also run at the tightest capacity that could
  work, its live-bytes bound (``.../tight``): does the residency fit without any fragmentation? Residencies that
  repeat an earlier instance exactly (greedy and exact often agree) are listed once.
* ``planted`` — a time × address rectangle of ``C`` bytes over ``T`` steps cut recursively (guillotine cuts, along
  time or address) into ``n`` buffers, each keeping its piece's offset: a placement at capacity ``C`` exists with
  zero waste, so ``C`` equals the live-bytes bound. With a slack ``s`` each buffer then gives up between half of
  and all of a fraction ``s / (1 + s)`` of its size (rounded down), so that ``bound <= C <= (1 + s) bound`` and
  the planted placement still fits.
* ``random`` — random lifetimes and log-uniform sizes, capacity ``ceil(f × bound)`` for ``f`` in 1.00-1.01: a
  placement may not exist; the exact method has to prove which.

Methods (:data:`METHODS`): the compilers' heuristics ``greedy_size`` (largest first, first fit; TFLite Micro, XLA),
``greedy_lifetime`` (by start step; XLA's heap simulator order) and ``best_fit`` (XLA's best fit), ``exact`` (the
proven driver: live-bytes bound, heuristics, canonical search, CP-SAT) and ``cpsat`` (the plain CP-SAT model with a
2-D no-overlap over time × address, for comparison). Each of ``exact`` and ``cpsat`` gets the per-instance time
limit; a limit reached is reported as such (``no_solution``), never as infeasible. Every placement is checked by
the allocation problem's own evaluator (offsets aligned, no two live buffers overlapping), independently of the
method; a heuristic placement that does not fit the capacity is reported ``over`` with its peak.

The target line: instances of 500 buffers at a capacity within 1 % of the live-bytes bound, each proven (a
placement within the capacity, or infeasibility) by ``exact`` in under 1 s.

Outputs in ``--out``: ``allocation_benchmark.md`` (the table and the summary), ``allocation_benchmark.csv`` (one row
per instance and method) and ``allocation_benchmark.json`` (everything, with the instances' parameters and the
machine). Every generated instance is seeded and deterministic: the same seed gives the same buffers. With
``--save-instances`` every instance is also written as a buffer CSV to ``--out``/instances (the planted placement
as its ``offset`` column), to be solved again with ``dlaopt solve FILE --capacity C`` (C in the JSON).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dlaopt.experiments.common import ExperimentReport, check_choices, write_report
from dlaopt.formulations.allocation.data import AllocationData, AllocationSolution
from dlaopt.results import environment, environment_markdown, md_table
from dlaopt.workload.buffers import AllocBuffer

ROOT = Path(__file__).resolve().parents[2]
PINNING_INSTANCES = ROOT / "instances" / "pinning"

METHODS = ("greedy_size", "greedy_lifetime", "best_fit", "exact", "cpsat")
HEURISTICS = ("greedy_size", "greedy_lifetime", "best_fit")
FAMILIES = ("zoo", "planted", "random")
OBJECTIVES = ("feasibility", "peak")
TARGET_N = 500
TARGET_SLACK = 0.01
TARGET_SECONDS = 1.0
PROVEN = ("optimal", "infeasible")

CSV_FIELDS = ("instance", "family", "n", "capacity", "bound", "capacity_over_bound", "method", "status", "peak",
              "method_bound", "fits", "verified", "time_s", "stage", "nodes", "message")


# ================================================================================================ instances
@dataclass(frozen=True)
class BenchInstance:
    """One allocation instance of the benchmark: its data, how it was made and (planted) a placement known to fit."""

    name: str
    family: str
    data: AllocationData
    info: dict[str, Any] = field(default_factory=dict)
    planted: AllocationSolution | None = None

    @property
    def n(self) -> int:
        return self.data.n

    def describe(self) -> dict[str, Any]:
        d = self.data
        return {"name": self.name, "family": self.family, "n": d.n, "capacity": d.capacity, "bound": d.bound,
                "bound_step": d.bound_step, "capacity_over_bound": _ratio(d.capacity, d.bound), **self.info}


def _ratio(capacity: int | None, bound: int) -> float | None:
    return None if capacity is None or bound <= 0 else capacity / bound


def _rng(*key: int) -> np.random.Generator:
    """A generator determined by ``key`` alone (numpy's seed sequence: the same on every platform and version)."""
    return np.random.default_rng(np.random.SeedSequence([int(k) for k in key]))


_FAMILY_CODE = {"planted": 1, "random": 2}


def _shuffled(rng: np.random.Generator, pieces: list[tuple[int, int, int, int]], alignment: int,
              ) -> tuple[tuple[AllocBuffer, ...], np.ndarray]:
    """Buffers ``b0, b1, ...`` from ``(lower, upper, offset, size)`` pieces in a random order (the order of a file
    says nothing about the placement), and their offsets in that order."""
    order = rng.permutation(len(pieces))
    buffers = []
    offsets = np.zeros(len(pieces), dtype=np.int64)
    for i, j in enumerate(order):
        lo, hi, off, size = pieces[int(j)]
        buffers.append(AllocBuffer(f"b{i}", lo, hi, size, alignment))
        offsets[i] = off
    return tuple(buffers), offsets


def planted_instance(n: int, *, seed: int = 0, slack: float = 0.0, steps: int | None = None,
                     capacity: int = 1 << 20, alignment: int = 1, objective: str = "feasibility") -> BenchInstance:
    """``n`` buffers cut from a ``steps`` × ``capacity`` rectangle (see the module docstring), each at its piece's
    offset in :attr:`BenchInstance.planted`; the capacity is ``capacity`` and the live-bytes bound at least
    ``capacity / (1 + slack)``. Addresses, sizes and offsets are multiples of ``alignment`` (the buffers' alignment).
    ``steps`` defaults to ``max(2, n // 2)``."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    if slack < 0:
        raise ValueError(f"slack must be >= 0, got {slack}")
    if capacity % alignment:
        raise ValueError(f"capacity {capacity} is not a multiple of the alignment {alignment}")
    units = capacity // alignment
    t_steps = steps if steps is not None else max(2, n // 2)
    if n > t_steps * units:
        raise ValueError(f"{n} buffers cannot be cut from {t_steps} steps x {units} address units")
    rng = _rng(seed, _FAMILY_CODE["planted"], n, t_steps, units, alignment, round(slack * 1e6))
    # pieces as [t0, t1, a0, a1) in steps and address units; cut the piece chosen by area until there are n
    pieces: list[tuple[int, int, int, int]] = [(0, t_steps, 0, units)]
    while len(pieces) < n:
        areas = np.array([(t1 - t0) * (a1 - a0) if (t1 - t0 > 1 or a1 - a0 > 1) else 0
                          for t0, t1, a0, a1 in pieces], dtype=float)
        k = int(rng.choice(len(pieces), p=areas / areas.sum()))
        t0, t1, a0, a1 = pieces[k]
        width, height = t1 - t0, a1 - a0
        # cut across the longer side (relative to the whole rectangle) more often: pieces stay roughly balanced
        along_time = width > 1 and (height == 1 or rng.random() < (0.75 if width / t_steps >= height / units
                                                                     else 0.25))
        extent = width if along_time else height
        cut = int(np.clip(round(extent * rng.uniform(0.2, 0.8)), 1, extent - 1))
        if along_time:
            pieces[k:k + 1] = [(t0, t0 + cut, a0, a1), (t0 + cut, t1, a0, a1)]
        else:
            pieces[k:k + 1] = [(t0, t1, a0, a0 + cut), (t0, t1, a0 + cut, a1)]
    out = []
    for t0, t1, a0, a1 in pieces:
        size = a1 - a0
        give = min(int(math.floor(size * slack / (1 + slack) + 1e-9)), size - 1)  # at most this much waste
        size -= int(rng.integers(give // 2, give + 1)) if give > 0 else 0
        out.append((t0, t1, a0 * alignment, size * alignment))
    buffers, offsets = _shuffled(rng, out, alignment)
    name = f"planted-n{n}-s{_pct_tag(slack)}-seed{seed}"
    data = AllocationData(buffers, capacity, objective, memory="memory", source=name)
    info = {"seed": seed, "slack": slack, "steps": t_steps, "alignment": alignment}
    return BenchInstance(name, "planted", data, info, AllocationSolution(offsets))


def random_instance(n: int, *, seed: int = 0, factor: float = 1.0, steps: int | None = None,
                    min_size: int = 64, max_size: int = 65536, mean_lifetime: float = 8.0, alignment: int = 1,
                    objective: str = "feasibility") -> BenchInstance:
    """``n`` buffers with uniform start steps, geometric lifetimes (mean ``mean_lifetime``) and log-uniform sizes in
    ``[min_size, max_size]`` (rounded up to ``alignment``); capacity ``ceil(factor × bound)``. A placement may not
    exist at that capacity. ``steps`` defaults to ``max(2, n // 2)``."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    if factor < 1:
        raise ValueError(f"factor must be >= 1 (a capacity below the bound is trivially infeasible), got {factor}")
    t_steps = steps if steps is not None else max(2, n // 2)
    rng = _rng(seed, _FAMILY_CODE["random"], n, t_steps, round(factor * 1e6), min_size, max_size, alignment)
    lower = rng.integers(0, t_steps, size=n)
    length = rng.geometric(1.0 / max(mean_lifetime, 1.0), size=n)
    upper = np.minimum(lower + length, t_steps)
    sizes = np.exp(rng.uniform(math.log(min_size), math.log(max_size), size=n))
    sizes = (np.ceil(sizes / alignment) * alignment).astype(np.int64)
    buffers = tuple(AllocBuffer(f"b{i}", int(lower[i]), int(upper[i]), int(sizes[i]), alignment) for i in range(n))
    probe = AllocationData(buffers, None, "peak")
    capacity = int(math.ceil(factor * probe.bound - 1e-9))
    name = f"random-n{n}-f{factor:.3f}-seed{seed}"
    data = AllocationData(buffers, capacity, objective, memory="memory", source=name)
    return BenchInstance(name, "random", data, {"seed": seed, "factor": factor, "steps": t_steps,
                                                 "alignment": alignment})


def _pct_tag(slack: float) -> str:
    return f"{slack * 100:g}pct"


# ------------------------------------------------------------------------------------------------ from pinning
def residency_runs(placement: Sequence[np.ndarray], windows: Sequence[tuple[int, int]], scratchpad: int,
                   ) -> list[tuple[int, int, int]]:
    """The maximal runs ``(buffer, first_step, last_step)`` of every buffer in ``scratchpad``: consecutive steps of
    its window at which ``placement`` puts it there."""
    runs: list[tuple[int, int, int]] = []
    for b, row in enumerate(placement):
        lo = windows[b][0]
        start = None
        for i, k in enumerate([*np.asarray(row).tolist(), -1]):
            if k == scratchpad and start is None:
                start = i
            elif k != scratchpad and start is not None:
                runs.append((b, lo + start, lo + i - 1))
                start = None
    return runs


def pinning_allocation(graph: Any, placement: Sequence[np.ndarray], scratchpad: int, *, alignment: int = 1,
                       objective: str = "feasibility", name: str = "") -> AllocationData | None:
    """The allocation instance of one scratchpad of a pinning solution (a :class:`PinningGraph` and its
    ``placement``): every maximal run becomes a buffer ``[first, last + 1)`` of its tensor's size, in a memory of
    the scratchpad's capacity. ``None`` when nothing is ever resident there."""
    runs = residency_runs(placement, graph.window, scratchpad)
    if not runs:
        return None
    spm = graph.scratchpads[scratchpad]
    buffers = tuple(AllocBuffer(f"{graph.buffers[b].name}@{first}", first, last + 1, int(graph.buffers[b].size_bytes),
                                alignment) for b, first, last in runs)
    return AllocationData(buffers, int(spm.capacity), objective, memory=spm.name, source=name or None,
                          step_names=tuple(s.name for s in graph.steps))


def _smaug(name: str, zoo: str, spad_kb: int, num_spads: int) -> dict[str, Any]:
    return {"problem": "pinning", "name": name, "workload": {"zoo": zoo, "params": {"batch": 1, "dtype_bytes": 2}},
            "hardware": {"preset": "smaug-nvdla", "params": {"spad_kb": spad_kb, "num_spads": num_spads}}}


ZOO_FULL: tuple[str | dict[str, Any], ...] = (
    str(PINNING_INSTANCES / "minerva-smaug-32k.yaml"),
    str(PINNING_INSTANCES / "lenet5-smaug-32k.yaml"),
    str(PINNING_INSTANCES / "cifar-cnn10-smaug-32k.yaml"),
    str(PINNING_INSTANCES / "resnet50-smaug-3x256k.yaml"),
    _smaug("resnet18-smaug-2x128k", "resnet18", 128, 2),
    _smaug("mobilenet-v2-smaug-3x64k", "mobilenet-v2", 64, 3),
)
ZOO_QUICK: tuple[str | dict[str, Any], ...] = (str(PINNING_INSTANCES / "minerva-smaug-32k.yaml"),)
PINNING_METHODS = ("greedy", "exact")


def _pinning_document(source: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(source, Mapping):
        doc = copy.deepcopy(dict(source))
    else:
        from dlaopt.io.document import load_mapping

        doc = dict(load_mapping(source, what="an instance"))
    from dlaopt.specs import pinning as pinning_spec

    if "addresses" in pinning_spec.OPTIONS_SCHEMA.get("properties", {}):
        # the pinning solution's residency as the solver decides it (capacity sums), before any address stage
        doc["options"] = {**(doc.get("options") or {}), "addresses": False}
    return doc


def zoo_instances(sources: Sequence[str | Mapping[str, Any]], *, methods: Sequence[str] = PINNING_METHODS,
                  time_limit: float = 30.0, threads: int | None = 1, objective: str = "feasibility",
                  tight: bool = True, progress: Callable[[str], None] | None = None,
                  ) -> tuple[list[BenchInstance], list[dict[str, Any]]]:
    """Allocation instances from the pinning solutions of ``sources`` (instance files or documents) by each pinning
    ``method``, one per scratchpad with residency (and with ``tight``, the same buffers again at a capacity of their
    live-bytes bound, named ``.../tight``, when that is below the scratchpad's); and one record per pinning solve
    (status, time, instances). Instances equal to an earlier one are listed once (``same_as``)."""
    from dlaopt import harness
    from dlaopt.io.instance import instance_from_dict
    from dlaopt.solvers.result import SolveOptions

    out: list[BenchInstance] = []
    solves: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for source in sources:
        doc = _pinning_document(source)
        p = harness.prepare(instance_from_dict(doc, source=source if isinstance(source, str) else None))
        graph = p.data.graph
        for method in methods:
            t0 = time.perf_counter()
            r = harness.solve(p, method, options=SolveOptions(time_limit=time_limit, threads=threads))
            record: dict[str, Any] = {"pinning_instance": p.instance.name, "pinning_method": method,
                                      "status": r.status.value, "gap": r.gap, "time_s": time.perf_counter() - t0,
                                      "instances": [], "same_as": {}}
            solves.append(record)
            if r.solution is None or not r.verified:
                if progress:
                    progress(f"zoo: {p.instance.name} {method}: {r.status.value}, no verified residency")
                continue
            sol = p.problem.solution_from_dict(p.data, r.solution)
            for k, spm in enumerate(graph.scratchpads):
                name = f"{p.instance.name}/{method}/{spm.name}"
                data = pinning_allocation(graph, sol.placement, k, objective=objective, name=name)
                if data is None:
                    continue
                variants = [(name, data, "the scratchpad's")]
                if tight and data.bound < (data.capacity or 0):
                    variants.append((f"{name}/tight", dataclasses.replace(data, capacity=data.bound,
                                                                          source=f"{name}/tight"),
                                     "the live-bytes bound"))
                for vname, vdata, what in variants:
                    key = _fingerprint(vdata)
                    if key in seen:
                        record["same_as"][vname] = seen[key]
                        continue
                    seen[key] = vname
                    record["instances"].append(vname)
                    out.append(BenchInstance(vname, "zoo", vdata, {"pinning_instance": p.instance.name,
                                                                   "pinning_method": method,
                                                                   "pinning_status": r.status.value,
                                                                   "scratchpad": spm.name, "capacity_is": what}))
            if progress:
                progress(f"zoo: {p.instance.name} {method}: {r.status.value} in {record['time_s']:.1f} s, "
                         f"{len(record['instances'])} new instance(s)")
    return out, solves


def _fingerprint(data: AllocationData) -> str:
    h = hashlib.sha256(repr((data.capacity, [(b.lower, b.upper, b.size, b.alignment) for b in data.buffers]))
                       .encode())
    return h.hexdigest()


def save_instance(inst: BenchInstance, folder: Path) -> Path:
    """``inst`` as a buffer CSV in ``folder`` (with the planted placement as its ``offset`` column), to be solved
    again with ``dlaopt solve FILE --capacity C``."""
    from dlaopt.io.buffers import write_buffers_csv

    offsets = None if inst.planted is None else {
        b.id: int(o) for b, o in zip(inst.data.buffers, inst.planted.offsets.tolist(), strict=True)}
    return write_buffers_csv(folder / (inst.name.replace("/", "_") + ".csv"), inst.data.buffers, offsets)


# ================================================================================================ scales
@dataclass(frozen=True)
class Scale:
    """What one scale of the benchmark generates and its default budgets."""

    label: str
    zoo: tuple[str | dict[str, Any], ...]
    sizes: tuple[int, ...]
    planted_slacks: tuple[float, ...]
    random_factors: tuple[float, ...]
    seeds: int
    time_limit: float
    total_time_limit: float
    pinning_time_limit: float


FULL = Scale("full", ZOO_FULL, (100, 200, 500, 1000), (0.0, 0.01), (1.0, 1.005, 1.01), 2, 10.0, 1800.0, 30.0)
QUICK = Scale("quick", ZOO_QUICK, (24,), (0.0, 0.01), (1.01,), 1, 2.0, 120.0, 5.0)


def generated_instances(sizes: Sequence[int], *, seeds: int, slacks: Sequence[float], factors: Sequence[float],
                        families: Sequence[str] = ("planted", "random"), base_seed: int = 0,
                        objective: str = "feasibility") -> list[BenchInstance]:
    """The planted and random instances of a scale, in size order (``seeds`` of each setting)."""
    out: list[BenchInstance] = []
    for n in sizes:
        for s in range(seeds):
            seed = base_seed + s
            if "planted" in families:
                out += [planted_instance(n, seed=seed, slack=sl, objective=objective) for sl in slacks]
            if "random" in families:
                out += [random_instance(n, seed=seed, factor=f, objective=objective) for f in factors]
    return out


# ================================================================================================ methods
def _evaluate(data: AllocationData, solution: AllocationSolution) -> tuple[bool, int | None, str]:
    """The allocation evaluator on ``solution`` without the capacity (offsets aligned, live buffers disjoint):
    (valid, peak, violations)."""
    from dlaopt.formulations.allocation.evaluator import check_placement

    report = check_placement(dataclasses.replace(data, capacity=None, objective="peak"), solution)
    return report.valid, int(report.peak), "; ".join(report.violations[:3])


def _heuristic(method: str) -> Callable[[AllocationData], AllocationSolution]:
    from dlaopt.formulations.allocation import heuristics

    return getattr(heuristics, method)


def run_method(inst: BenchInstance, method: str, *, time_limit: float, threads: int = 1,
               seed: int = 0) -> dict[str, Any]:
    """One method on one instance: status (``optimal`` / ``feasible`` / ``infeasible`` / ``no_solution`` /
    ``error``, or ``over`` for a heuristic placement that exceeds the capacity), peak, the method's bound, time,
    whether the evaluator accepted the placement, and what the exact driver reports (stage, nodes)."""
    data = inst.data
    row: dict[str, Any] = {"method": method, "status": "error", "peak": None, "method_bound": data.bound,
                           "fits": None, "verified": None, "time_s": None, "stage": "", "nodes": None, "message": ""}
    solution: AllocationSolution | None = None
    t0 = time.perf_counter()
    try:
        if method in HEURISTICS:
            solution = _heuristic(method)(data)
            row["time_s"] = time.perf_counter() - t0
            row["status"] = "feasible"  # refined below from the evaluated peak
        elif method == "exact":
            from dlaopt.formulations.allocation.solve import allocate

            outcome = allocate(data, time_limit=time_limit, seed=seed, threads=threads)
            row["time_s"] = time.perf_counter() - t0
            solution = outcome.solution
            row.update(status=str(outcome.status.value), method_bound=max(int(outcome.bound), data.bound),
                       stage=outcome.stage,
                       nodes=int(outcome.nodes), message=outcome.reason)
        elif method == "cpsat":
            from dlaopt.formulations import get_problem
            from dlaopt.solvers.result import SolveOptions

            problem = get_problem("allocation")
            got = problem.solve_exact(data, "cpsat", solver=None,
                                      options=SolveOptions(time_limit=time_limit, threads=threads, seed=seed))
            row["time_s"] = time.perf_counter() - t0
            if got is None:
                row.update(status="error", message="the allocation problem has no CP-SAT driver")
            else:
                solution = got.solution
                bound = data.bound  # feasibility: the model's bound is on the objective (0), not on the peak
                if data.objective == "peak" and got.bound is not None and math.isfinite(got.bound):
                    bound = max(bound, math.ceil(got.bound - 1e-9))
                row.update(status=str(got.status.value), method_bound=int(bound), message=got.message,
                           stage="cpsat")
        else:
            raise ValueError(f"unknown method '{method}'")
    except Exception as exc:  # noqa: BLE001 - a failing method is a row of the table, never a crash of the benchmark
        row.update(status="error", time_s=time.perf_counter() - t0, message=f"{type(exc).__name__}: {exc}")
        return row
    if solution is not None:
        valid, peak, why = _evaluate(data, solution)
        row["verified"] = valid
        row["peak"] = peak
        fits = valid and peak is not None and (data.capacity is None or peak <= data.capacity)
        row["fits"] = fits
        if not valid:
            row.update(status="error", message=f"the evaluator rejects the placement: {why}")
        elif method in HEURISTICS:
            row["status"] = "feasible" if fits else "over"
        elif not fits:
            row.update(status="error", message=f"placement exceeds the capacity (peak {peak})")
    elif row["status"] in ("optimal", "feasible"):
        row.update(status="error", message=row["message"] or "a solved status without a placement")
    return row


# ================================================================================================ the report
def _cell(r: Mapping[str, Any], bound: int) -> str:
    status = str(r["status"])
    if status == "skipped":
        return "skipped"
    parts = [status]
    if r.get("peak") is not None:
        rel = r["peak"] / bound - 1 if bound else 0.0
        parts.append("peak = bound" if r["peak"] == bound else f"peak {r['peak']:,} (+{rel * 100:.2f} %)")
    if r.get("method_bound") is not None and r["method_bound"] > bound:
        parts.append(f"bound {r['method_bound']:,}")
    if r.get("time_s") is not None:
        parts.append(f"{r['time_s']:.3f} s")
    return ", ".join(parts)


def target_summary(instances: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Instances of :data:`TARGET_N` buffers whose capacity is within :data:`TARGET_SLACK` of the bound: how many
    ``exact`` proved (placement within the capacity or infeasibility) in under :data:`TARGET_SECONDS`."""
    cases = [i for i in instances if i["n"] == TARGET_N and i["capacity"] is not None
             and i["capacity"] <= math.ceil((1 + TARGET_SLACK) * i["bound"] - 1e-9)]
    exact = [i["methods"].get("exact") for i in cases]
    times = [float(e["time_s"]) for e in exact if e and e.get("time_s") is not None]
    met = [i["name"] for i, e in zip(cases, exact, strict=True)
           if e and e["status"] in PROVEN and e.get("time_s") is not None and e["time_s"] < TARGET_SECONDS]
    return {"n": TARGET_N, "slack": TARGET_SLACK, "seconds": TARGET_SECONDS, "instances": len(cases),
            "met": len(met), "all_met": bool(cases) and len(met) == len(cases),
            "max_time_s": max(times) if times else None,
            "median_time_s": statistics.median(times) if times else None,
            "not_met": [i["name"] for i in cases if i["name"] not in met]}


def target_text(t: Mapping[str, Any]) -> str:
    head = (f"Target: {t['n']} buffers at a capacity within {t['slack'] * 100:g} % of the live-bytes bound, "
            f"proven by exact in < {t['seconds']:g} s each")
    if not t["instances"]:
        return f"{head}: no such instance in this run."
    verdict = "met" if t["all_met"] else "NOT met"
    return (f"{head}: {verdict} — {t['met']}/{t['instances']} instances; exact's time median "
            f"{t['median_time_s']:.3f} s, max {t['max_time_s']:.3f} s"
            + (f"; not met: {', '.join(t['not_met'])}" if t["not_met"] else "") + ".")


def method_summary(instances: Sequence[Mapping[str, Any]], methods: Sequence[str]) -> list[dict[str, Any]]:
    """Per method: instances run, placements within the capacity, proofs of infeasibility, heuristic placements over
    the capacity, no answer (limit) and errors, and the median / largest time."""
    out = []
    for m in methods:
        rs = [i["methods"][m] for i in instances if m in i["methods"] and i["methods"][m]["status"] != "skipped"]
        times = [float(r["time_s"]) for r in rs if r.get("time_s") is not None]
        out.append({"method": m, "run": len(rs), "fits": sum(bool(r.get("fits")) for r in rs),
                    "proven_optimal": sum(r["status"] == "optimal" for r in rs),
                    "infeasible": sum(r["status"] == "infeasible" for r in rs),
                    "over": sum(r["status"] == "over" for r in rs),
                    "no_answer": sum(r["status"] in ("no_solution", "feasible") and not r.get("fits") for r in rs),
                    "errors": sum(r["status"] == "error" for r in rs),
                    "median_time_s": statistics.median(times) if times else None,
                    "max_time_s": max(times) if times else None})
    return out


def size_summary(instances: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Exact per family and size: instances, proven (placement or infeasibility), median and largest time."""
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for i in instances:
        if "exact" in i["methods"] and i["methods"]["exact"]["status"] != "skipped":
            groups.setdefault((i["family"], i["n"] if i["family"] != "zoo" else 0), []).append(i)
    out = []
    for (family, n), items in sorted(groups.items(), key=lambda kv: (FAMILIES.index(kv[0][0]), kv[0][1])):
        ex = [i["methods"]["exact"] for i in items]
        times = [float(e["time_s"]) for e in ex if e.get("time_s") is not None]
        out.append({"family": family, "n": n if family != "zoo" else f"{min(i['n'] for i in items)}-"
                    f"{max(i['n'] for i in items)}", "instances": len(items),
                    "proven": sum(e["status"] in PROVEN for e in ex),
                    "infeasible": sum(e["status"] == "infeasible" for e in ex),
                    "median_time_s": statistics.median(times) if times else None,
                    "max_time_s": max(times) if times else None})
    return out


def exact_stages(instances: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many instances each stage of the exact driver settled (live-bytes, heuristic:NAME, search, cpsat) or
    left open (budget)."""
    out: dict[str, int] = {}
    for i in instances:
        e = i["methods"].get("exact")
        if e and e["status"] not in ("skipped", "error"):
            out[e["stage"] or "—"] = out.get(e["stage"] or "—", 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _t(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def markdown(instances: Sequence[Mapping[str, Any]], methods: Sequence[str], summary: Mapping[str, Any],
             zoo_solves: Sequence[Mapping[str, Any]], env: Mapping[str, Any]) -> str:
    head = ["instance", "n", "capacity", "bound", "C / bound", *methods]
    body = [[i["name"], str(i["n"]), f"{i['capacity']:,}", f"{i['bound']:,}",
             f"{i['capacity_over_bound']:.4f}" if i["capacity_over_bound"] is not None else "—",
             *(_cell(i["methods"][m], i["bound"]) if m in i["methods"] else "—" for m in methods)]
            for i in instances]
    parts = [f"# Static memory allocation at tight capacities ({summary['scale']})", "",
             target_text(summary["target"]), "",
             f"Per-instance time limit {summary['time_limit_s']:g} s for exact and for cpsat; total "
             f"{summary['total_time_limit_s']:g} s, {summary['seconds']:.1f} s used"
             + (f"; {summary['skipped']} solves skipped when the total ran out" if summary["skipped"] else "")
             + f". Objective: {summary['objective']}. Statuses: optimal = proven (feasibility: a placement within "
             "the capacity), infeasible = proven, no_solution = the limit came first, over = a heuristic placement "
             "beyond the capacity. Every placement is checked by the allocation evaluator.", "",
             md_table(head, body, ["l", "r", "r", "r", "r"] + ["l"] * len(methods)), "", "## Methods", ""]
    mhead = ["method", "run", "within capacity", "proven optimal", "proven infeasible", "over capacity",
             "no answer", "errors", "median s", "max s"]
    mbody = [[s["method"], str(s["run"]), str(s["fits"]), str(s["proven_optimal"]), str(s["infeasible"]),
              str(s["over"]), str(s["no_answer"]), str(s["errors"]), _t(s["median_time_s"]), _t(s["max_time_s"])]
             for s in summary["methods"]]
    parts += [md_table(mhead, mbody, ["l"] + ["r"] * (len(mhead) - 1)), "", "## Exact by family and size", ""]
    shead = ["family", "n", "instances", "proven", "of which infeasible", "median s", "max s"]
    sbody = [[s["family"], str(s["n"]), str(s["instances"]), str(s["proven"]), str(s["infeasible"]),
              _t(s["median_time_s"]), _t(s["max_time_s"])] for s in summary["sizes"]]
    parts += [md_table(shead, sbody, ["l", "r", "r", "r", "r", "r", "r"]), ""]
    if summary.get("exact_stages"):
        parts += ["What settled each instance in exact (budget: nothing within the limit): "
                  + ", ".join(f"{k} {v}" for k, v in summary["exact_stages"].items()) + ".", ""]
    if zoo_solves:
        zhead = ["pinning instance", "pinning method", "status", "time s", "allocation instances"]
        zbody = [[z["pinning_instance"], z["pinning_method"], z["status"], f"{z['time_s']:.2f}",
                  "; ".join(filter(None, [", ".join(n.split("/", 2)[-1] for n in z["instances"]),
                                          "same as before: " + ", ".join(k.split("/", 2)[-1] for k in z["same_as"])
                                          if z["same_as"] else ""])) or "—"] for z in zoo_solves]
        parts += ["## Pinning solutions the zoo instances come from (seed 000's tensor pinning)", "",
                  md_table(zhead, zbody, ["l", "l", "l", "r", "l"]), "",
                  "A pinning solve stopped by its time limit (status feasible) may return another residency in "
                  "another run; the instances it gives are the residency of that run.", ""]
    parts += ["## Machine", "", environment_markdown(env), ""]
    return "\n".join(parts)


def run_allocation_benchmark(out_dir: str | Path, *, quick: bool = False, time_limit: float | None = None,
                             total_time_limit: float | None = None, sizes: Sequence[int] | None = None,
                             seeds: int | None = None, families: Sequence[str] | None = None,
                             methods: Sequence[str] | None = None, objective: str = "feasibility",
                             threads: int = 1, seed: int = 0, save_instances: bool = False,
                             progress: Callable[[str], None] | None = None) -> ExperimentReport:
    """Build the instances of the scale (:data:`QUICK` or :data:`FULL`, with the overrides), run every method on
    each within the limits, and write the report (module docstring)."""
    from dlaopt.errors import InputError

    scale = QUICK if quick else FULL
    fams = list(families) if families else list(FAMILIES)
    meths = list(methods) if methods else list(METHODS)
    check_choices(fams, FAMILIES, "--families", "instance family")
    check_choices(meths, METHODS, "--methods", "method")
    check_choices([objective], OBJECTIVES, "--objective", "objective")
    limit = scale.time_limit if time_limit is None else time_limit
    total = scale.total_time_limit if total_time_limit is None else total_time_limit
    for value, option in ((limit, "--time-limit"), (total, "--total-time-limit")):
        if not value > 0:
            raise InputError(f"{option} must be positive, got {value}", path=(option,), expected="seconds > 0")
    for n in sizes or ():
        if n < 1:
            raise InputError(f"sizes must be positive, got {n}", path=("--sizes",), expected="integers >= 1")
    if seeds is not None and seeds < 1:
        raise InputError(f"seeds must be positive, got {seeds}", path=("--seeds",), expected="an integer >= 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _s: None)
    t0 = time.perf_counter()

    instances: list[BenchInstance] = []
    zoo_solves: list[dict[str, Any]] = []
    if "zoo" in fams:
        found, zoo_solves = zoo_instances(scale.zoo, time_limit=scale.pinning_time_limit, threads=threads,
                                          objective=objective, progress=say)
        instances += found
    instances += generated_instances(tuple(sizes) if sizes else scale.sizes, seeds=seeds or scale.seeds,
                                     slacks=scale.planted_slacks, factors=scale.random_factors,
                                     families=[f for f in fams if f != "zoo"], base_seed=seed, objective=objective)

    described: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    skipped = 0
    for inst in instances:
        d = inst.describe()
        if save_instances:
            d["csv"] = str(save_instance(inst, out / "instances").relative_to(out))
        d["methods"] = {}
        for m in meths:
            left = total - (time.perf_counter() - t0)
            if left <= 0:
                r: dict[str, Any] = {"method": m, "status": "skipped", "peak": None, "method_bound": None,
                                     "fits": None, "verified": None, "time_s": None, "stage": "", "nodes": None,
                                     "message": "the total time limit ran out"}
                skipped += 1
            else:
                r = run_method(inst, m, time_limit=min(limit, left), threads=threads, seed=seed)
            d["methods"][m] = r
            rows.append({"instance": inst.name, "family": inst.family, "n": inst.n, "capacity": d["capacity"],
                         "bound": d["bound"], "capacity_over_bound": d["capacity_over_bound"], **r})
        described.append(d)
        say(f"{inst.name}: " + "; ".join(f"{m} {_cell(d['methods'][m], d['bound'])}" for m in meths))

    env = environment(threads)
    summary: dict[str, Any] = {
        "scale": scale.label, "objective": objective, "time_limit_s": limit, "total_time_limit_s": total,
        "instances": len(described), "skipped": skipped, "seconds": time.perf_counter() - t0,
        "target": target_summary(described), "methods": method_summary(described, meths),
        "sizes": size_summary(described), "exact_stages": exact_stages(described)}
    table = markdown(described, meths, summary, zoo_solves, env)
    csv_path, md_path, _ = write_report(
        out, "allocation_benchmark", rows, CSV_FIELDS, table + "\n",
        ("allocation_benchmark.json", {"summary": summary, "instances": described, "zoo_pinning": zoo_solves,
                                       "environment": env}), None)
    return ExperimentReport(rows, csv_path, md_path, None, table, summary)


__all__ = ["FAMILIES", "METHODS", "BenchInstance", "generated_instances", "pinning_allocation", "planted_instance",
           "random_instance", "residency_runs", "run_allocation_benchmark", "run_method", "save_instance",
           "target_summary", "zoo_instances"]
