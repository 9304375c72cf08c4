"""Proofs at scale: the exact methods with and without their levers, measured in one run, against their targets.

Cases (``--cases`` selects; every solve is re-evaluated by the problem's own evaluator before its figure is used):

* ``pinning`` — seed 000's ResNet-50 (fp16) on the three-scratchpad SMAUG preset at 3 x 256 KB
  (``instances/pinning/resnet50-smaug-3x256k.yaml``). Without levers: the exact method with a 60 s limit. With
  them: a 10 s limit. Target: proven optimal (gap <= 1e-4) within 10 s including prepare and model build.
* ``mapping`` — ResNet-50's ``layer1.0.conv2`` on Accel-B (seed 001 Table 5.1), minimising the energy-delay product
  (``instances/mapping/resnet50-conv2-accel-b.yaml``), both with a 10 s limit, and GA given the same 10 s. Target:
  gap <= 1 % within the limit and exact never worse than the best heuristic.
* ``magma`` — seed 001 Chapter 7's 36 job groups (``dlaopt experiment magma-benchmark``): without levers exact gets
  max(MAGMA's wall time, 1 s), with them 10 x MAGMA's wall time. Target: every gap <= 1 %. Reported: the largest
  and the median gap and how many instances are within 1 %.
* ``large-pinning`` / ``large-mapping`` — BERT-large (24 layers, 512 tokens), GPT-2 over its 1024-token context and
  a Llama-style decoder block with Llama-2-7B's shapes over 4096 tokens (``instances/pinning/*-smaug-3x256k.yaml``,
  ``instances/mapping/*-accel-b.yaml``, EDP), 60 s each. Target: proven or gap <= 1 %; where not, the profile says
  what the time went to.
* ``reuse`` — seed 001 Chapter 5's warm start from previously solved similar layers: per network (ResNet-18 and
  MobileNet-V2 on the Eyeriss-like preset, energy, 60 s per layer), the exact mapping's time without reuse, with
  reuse within the run (replay) and against the on-disk layer cache the replay run filled, and whether the results
  are the same.

"Today" is each problem's exact method with every lever of ``options.exact_tuning`` off (``all_off`` of the
problem's ``EXACT_LEVERS``: the method as it ran before them) at the old budget; "new" is the same instance with
the levers on (the default) at the target budget. Both run in the same invocation, so on the same machine load.

Each solve runs in a child process under a wall-clock guard (by default twice its budget plus two minutes: a model
too large to build in reasonable time is stopped, not waited for) while a sampler records where the time goes:
prepare (instance to data, tiling), model build, solver (HiGHS / CP-SAT), heuristics (warm starts, GA), verification
(the evaluators) and the rest (Python between them). The profile table gives those seconds per solve; a solve the
guard stopped still has its profile up to the stop, which names the bottleneck.

``--quick`` runs every case on tiny instances (a few seconds in all) for tests. Outputs: ``scale_benchmark.md``,
``scale_benchmark.csv`` (one row per case), ``scale_profile.csv`` (one row per solve) and ``scale_benchmark.json``
(everything, with the machine).
"""

from __future__ import annotations

import copy
import importlib
import math
import os
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlaopt.experiments.common import ExperimentReport, check_choices, write_report
from dlaopt.results import csv_text, environment, environment_markdown, md_table, sci_text

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"
CASES = ("pinning", "mapping", "magma", "large-pinning", "large-mapping", "reuse")
PHASES = ("prepare", "build", "solver", "heuristics", "verification", "python")
LARGE_NETWORKS = ("bert-large", "gpt2-1024", "llama-block-4096")
LARGE_LABELS = {"bert-large": "BERT-large (24 layers, seq 512)", "gpt2-1024": "GPT-2 (seq 1024)",
                "llama-block-4096": "Llama-style block (Llama-2-7B shapes, seq 4096)"}
OBJECTIVE_TOLERANCE = 1e-6  # relative: the re-evaluated objective must equal the reported one to this
GUARD_FACTOR, GUARD_EXTRA_S = 2.0, 120.0  # a solve is stopped after GUARD_FACTOR x its budget + GUARD_EXTRA_S
SAMPLE_INTERVAL_S = 0.02
MEMORY_FRACTION = 0.6  # a guarded solve may use at most this share of the machine's memory

CSV_FIELDS = ("case", "instance", "target", "met", "today_budget_s", "today_status", "today_objective",
              "today_bound", "today_gap", "today_total_s", "today_verified", "new_budget_s", "new_status",
              "new_objective", "new_bound", "new_gap", "new_total_s", "new_verified", "heuristic",
              "heuristic_objective", "bottleneck", "note")
PROFILE_FIELDS = ("case", "instance", "run", "total_s", *(f"{p}_s" for p in PHASES), "peak_rss_mb", "bottleneck",
                  "top_functions", "stopped")


# ================================================================================================ scales
@dataclass(frozen=True)
class Scale:
    """Budgets (seconds) and instances of one scale of the benchmark."""

    pinning: str | dict[str, Any]
    pinning_today_s: float
    pinning_new_s: float
    mapping: str | dict[str, Any]
    mapping_s: float
    magma: Sequence[tuple[str, str, float]]  # (task, platform, GB/s)
    magma_group_size: int
    magma_factor: float
    large_pinning: Mapping[str, str | dict[str, Any]]
    large_mapping: Mapping[str, str | dict[str, Any]]
    large_s: float
    reuse: Sequence[str | dict[str, Any]]
    reuse_s: float
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _tiny_transformers(problem: str) -> dict[str, dict[str, Any]]:
    """The three large networks at toy sizes (same operators, seconds to solve)."""
    params = {"bert-large": ("bert-large", {"layers": 1, "seq_len": 32, "hidden": 64, "heads": 2, "ffn": 128}),
              "gpt2-1024": ("gpt2", {"layers": 1, "seq_len": 32, "hidden": 64, "heads": 2, "ffn": 128}),
              "llama-block-4096": ("llama-block", {"layers": 1, "seq_len": 32, "hidden": 64, "heads": 2,
                                                   "ffn": 172})}
    docs: dict[str, dict[str, Any]] = {}
    for key, (zoo, p) in params.items():
        if problem == "pinning":
            docs[key] = {"problem": "pinning", "name": f"{key}-tiny-smaug-3x8k",
                         "workload": {"zoo": zoo, "params": {"batch": 1, "dtype_bytes": 2, **p}},
                         "hardware": {"preset": "smaug-nvdla", "params": {"spad_kb": 8}}}
        else:
            docs[key] = {"problem": "mapping", "name": f"{key}-tiny-accel-b", "objective": "edp",
                         "workload": {"zoo": zoo, "params": {"batch": 1, "dtype_bytes": 2, **p}},
                         "hardware": {"preset": "accel-b"}, "options": {"layers": [_first_matmul(zoo)]}}
    return docs


def _first_matmul(zoo: str) -> str:
    return "decoder0.ffn.down" if zoo == "llama-block" else "encoder0.ffn.fc2"


FULL = Scale(
    pinning=str(INSTANCES / "pinning" / "resnet50-smaug-3x256k.yaml"), pinning_today_s=60.0, pinning_new_s=10.0,
    mapping=str(INSTANCES / "mapping" / "resnet50-conv2-accel-b.yaml"), mapping_s=10.0,
    magma=[(t, p, bw) for p in ("magma-s1", "magma-s2", "magma-s4") for bw in (1.0, 16.0, 256.0)
           for t in ("vision", "language", "recommendation", "mix")],
    magma_group_size=100, magma_factor=10.0,
    large_pinning={k: str(INSTANCES / "pinning" / f"{k}-smaug-3x256k.yaml") for k in LARGE_NETWORKS},
    large_mapping={k: str(INSTANCES / "mapping" / f"{k}-accel-b.yaml") for k in LARGE_NETWORKS},
    large_s=60.0,
    reuse=[str(INSTANCES / "mapping" / "resnet18-eyeriss.yaml"),
           {"problem": "mapping", "name": "mobilenet-v2-eyeriss", "objective": "energy",
            "workload": {"zoo": "mobilenet-v2", "params": {"batch": 1, "dtype_bytes": 2}},
            "hardware": {"preset": "eyeriss"}}],
    reuse_s=60.0, label="full")

QUICK = Scale(
    pinning=str(INSTANCES / "pinning" / "lenet5-smaug-32k.yaml"), pinning_today_s=5.0, pinning_new_s=5.0,
    mapping={"problem": "mapping", "name": "lenet5-conv1-accel-b", "objective": "edp",
             "workload": {"zoo": "lenet5", "params": {"batch": 1, "dtype_bytes": 2}},
             "hardware": {"preset": "accel-b"}, "options": {"layers": ["conv1"]}},
    mapping_s=2.0,
    magma=[("vision", "magma-s1", 16.0)], magma_group_size=4, magma_factor=10.0,
    large_pinning=_tiny_transformers("pinning"), large_mapping=_tiny_transformers("mapping"), large_s=2.0,
    reuse=[{"problem": "mapping", "name": "lenet5-accel-b-energy", "objective": "energy",
            "workload": {"zoo": "lenet5", "params": {"batch": 1, "dtype_bytes": 2}},
            "hardware": {"preset": "accel-b"}}],
    reuse_s=2.0, label="quick")


# ================================================================================================ levers
def exact_levers(problem: str) -> dict[str, str]:
    """The problem's ``EXACT_LEVERS`` (name → description; empty when its spec declares none)."""
    try:
        module = importlib.import_module(f"dlaopt.specs.{problem}")
    except ImportError:
        return {}
    return dict(getattr(module, "EXACT_LEVERS", {}) or {})


def with_levers(doc: Mapping[str, Any], on: bool) -> dict[str, Any]:
    """``doc`` with every exact lever of its problem off (``on`` false) or left at its default (on)."""
    out = copy.deepcopy(dict(doc))
    levers = exact_levers(str(out["problem"]))
    if not on and levers:
        from dlaopt.specs.tuning import all_off

        out.setdefault("options", {})
        out["options"] = {**(out["options"] or {}), "exact_tuning": all_off(levers)}
    return out


def _document(source: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(source, Mapping):
        return copy.deepcopy(dict(source))
    from dlaopt.io.document import load_mapping

    return dict(load_mapping(source, what="an instance"))


# ================================================================================================ profiling
_PRECEDENCE = ("prepare", "heuristics", "solver", "build", "verification")  # the first on the stack names the phase
_SOLVE_CALLS = frozenset({"solve", "run", "solvewithsolutioncallback", "solve_with_solution_callback"})
_SOLVER_FILES = ("backends.py", "highs_backend.py", "cpsat_backend.py", "pyomo_backend.py", "race.py")


def _peak_rss_mb() -> float | None:
    """This process's peak resident memory (MB), where the platform tells it."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def _limit_memory(fraction: float) -> None:
    """Cap this process's address space at ``fraction`` of the machine's memory (a model too large to build fails
    with a memory error instead of taking the machine down)."""
    try:
        import resource

        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ImportError, ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return
    cap = int(fraction * total)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _classify(frame: Any) -> tuple[str, str]:
    """(phase, innermost dlaopt function) of a thread's current stack."""
    tags: set[str] = set()
    innermost = ""
    while frame is not None:
        code = frame.f_code
        path = code.co_filename.replace("\\", "/")
        fn = code.co_name
        if "/ortools/" in path or "/highspy/" in path:  # a solver called directly: its solve, or its model built
            tags.add("solver" if fn.lower() in _SOLVE_CALLS else "build")
        elif "/dlaopt/" in path:
            if not innermost:
                innermost = f"{path.rsplit('/dlaopt/', 1)[1][:-3].replace('/', '.')}.{fn}"
            base = path.rsplit("/", 1)[1]
            if fn == "prepare" and base in ("harness.py", "problem.py"):
                tags.add("prepare")
            elif base == "heuristics.py" or fn in ("run_heuristic", "_run_heuristic", "run_layer_heuristic"):
                tags.add("heuristics")
            elif "/dlaopt/solvers/" in path and base in _SOLVER_FILES:
                tags.add("solver")
            elif fn.startswith("build") or fn == "relaxations" or base.startswith("milp") or (
                    "/dlaopt/solvers/" in path and base == "linear.py"):
                tags.add("build")
            elif fn in ("evaluate", "_attach", "verify") or base in ("evaluator.py", "simulate.py", "check.py"):
                tags.add("verification")
        frame = frame.f_back
    for phase in _PRECEDENCE:
        if phase in tags:
            return phase, innermost or "-"
    return "python", innermost or "-"


class PhaseSampler(threading.Thread):
    """Samples one thread's stack every ``interval`` seconds and adds the time since the last sample to the phase
    it is in (:func:`_classify`). Solvers release the GIL while they run, so their time is seen as it passes."""

    def __init__(self, thread_id: int, interval: float = SAMPLE_INTERVAL_S,
                 on_update: Callable[[dict[str, Any]], None] | None = None) -> None:
        super().__init__(daemon=True)
        self.thread_id = thread_id
        self.interval = interval
        self.on_update = on_update
        self.seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.functions: dict[str, float] = {}
        self.stage: str | None = None  # set by the caller: the phase whatever the stack (e.g. prepare)
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        last = sent = time.perf_counter()
        while not self._halt.wait(self.interval):
            now = time.perf_counter()
            phase, fn = _classify(sys._current_frames().get(self.thread_id))
            phase = self.stage or phase
            with self._lock:
                self.seconds[phase] += now - last
                self.functions[fn] = self.functions.get(fn, 0.0) + now - last
            last = now
            if self.on_update is not None and now - sent >= 1.0:
                sent = now
                self.on_update(self.snapshot())

    def stop(self) -> dict[str, Any]:
        self._halt.set()
        self.join()
        return self.snapshot()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            top = sorted(self.functions.items(), key=lambda kv: -kv[1])[:3]
            return {"seconds": dict(self.seconds), "top": [(f, round(s, 3)) for f, s in top],
                    "peak_rss_mb": _peak_rss_mb()}


# ================================================================================================ one solve
def measure(source: str | Mapping[str, Any], *, method: str = "exact", time_limit: float | None,
            levers_on: bool = True, threads: int | None = None, seed: int = 0,
            on_update: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Prepare and solve one instance (levers on or all off), re-evaluate the answer with the problem's evaluator
    and profile where the time went. Returns a plain dict (status, objective, bound, gap, total_s, verified,
    profile …)."""
    from dlaopt import harness
    from dlaopt.io.instance import instance_from_dict
    from dlaopt.solvers.result import SolveOptions

    doc = with_levers(_document(source), levers_on) if method == "exact" else _document(source)
    sampler = PhaseSampler(threading.get_ident(), on_update=on_update)
    sampler.start()
    t0 = time.perf_counter()
    try:
        sampler.stage = "prepare"  # loading (the network built, the document checked) and preparing the data
        p = harness.prepare(instance_from_dict(doc, source=source if isinstance(source, str) else None))
        prepare_s = time.perf_counter() - t0
        sampler.stage = None
        r = harness.solve(p, method, options=SolveOptions(time_limit=time_limit, threads=threads, seed=seed))
    finally:
        total = time.perf_counter() - t0
        profile = sampler.stop()
    t1 = time.perf_counter()
    reverified, re_objective, why = _reevaluate(p, r)
    verification_s = time.perf_counter() - t1
    seconds = dict(profile["seconds"])
    seconds["prepare"] = prepare_s  # measured exactly
    _split_layer_workers(seconds, r.solution)
    seconds["verification"] = seconds.get("verification", 0.0) + verification_s
    return {"instance": p.instance.name, "problem": p.problem.name, "method": method, "levers_on": levers_on,
            "levers": sorted(exact_levers(p.problem.name)), "time_limit_s": time_limit,
            "status": r.status.value, "objective": r.objective, "bound": r.bound, "gap": r.gap,
            "total_s": total, "solve_s": r.time_s, "verified": bool(r.verified and reverified),
            "reevaluated_objective": re_objective, "verification_note": why, "message": r.message[:300],
            "warm_start": r.warm_start, "model_stats": r.model_stats, "stopped": False,
            "profile": {"seconds": seconds, "top": profile["top"], "peak_rss_mb": _peak_rss_mb()}}


def _reevaluate(p: Any, r: Any) -> tuple[bool, float | None, str]:
    """Parse the returned solution document afresh and evaluate it: (accepted and same objective, objective, why
    not)."""
    if r.solution is None or r.objective is None:
        return False, None, "no solution to verify"
    try:
        sol = p.problem.solution_from_dict(p.data, r.solution)
        ev = p.problem.evaluate(p.data, sol)
    except Exception as exc:  # noqa: BLE001 - reported in the table, never hidden
        return False, None, f"re-evaluation failed: {exc}"
    if not ev.feasible or ev.objective is None:
        return False, ev.objective, "the evaluator rejects it: " + "; ".join(ev.violations[:3])
    if abs(ev.objective - r.objective) > OBJECTIVE_TOLERANCE * max(1.0, abs(ev.objective)):
        return False, ev.objective, f"objective {r.objective} reported, {ev.objective} re-evaluated"
    return True, ev.objective, ""


def _split_layer_workers(seconds: dict[str, float], solution: Mapping[str, Any] | None) -> None:
    """A mapping solve runs its layers in worker processes, which the sampler sees as waiting (python): split that
    time by the layers' own report (warm-start heuristics, model build when reported, the rest solver)."""
    layers = (solution or {}).get("layers")
    if not isinstance(layers, Mapping):
        return
    infos = [v.get("solver") for v in layers.values() if isinstance(v, Mapping) and isinstance(v.get("solver"),
                                                                                               Mapping)]
    total = sum(float(i.get("time_s") or 0.0) for i in infos)
    if total <= 0:
        return
    warm = sum(float(i.get("warm_start_s") or 0.0) for i in infos)
    build = sum(float(i.get("build_s") or i.get("build_time_s") or 0.0) for i in infos)
    waited = seconds.get("python", 0.0) + seconds.get("solver", 0.0)
    scale = min(1.0, waited / total)
    seconds["heuristics"] = seconds.get("heuristics", 0.0) + warm * scale
    seconds["build"] = seconds.get("build", 0.0) + build * scale
    solver = max(0.0, total - warm - build) * scale
    seconds["solver"] = max(seconds.get("solver", 0.0), solver)
    seconds["python"] = max(0.0, waited - (warm + build) * scale - seconds["solver"])


def guarded(fn: Callable[..., dict[str, Any]], kwargs: Mapping[str, Any], limit_s: float | None,
            ) -> dict[str, Any]:
    """``fn(**kwargs, on_update=...)`` in a forked child process (its own process group), stopped with its workers
    after ``limit_s`` seconds; then the result says so, with the profile up to the stop. In-process where ``fork``
    is not available."""
    import multiprocessing as mp

    if limit_s is None or "fork" not in mp.get_all_start_methods():
        return fn(**kwargs)
    _warm_up()
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)

    def target() -> None:
        os.setpgrp()
        _limit_memory(MEMORY_FRACTION)
        try:
            out = fn(**kwargs, on_update=lambda snap: child.send(("progress", snap)))
            child.send(("done", out))
        except BaseException as exc:  # noqa: BLE001 - sent to the parent, which reports it
            child.send(("error", f"{type(exc).__name__}: {exc}"))

    proc = ctx.Process(target=target, daemon=False)
    t0 = time.perf_counter()
    proc.start()
    child.close()
    last: dict[str, Any] = {"seconds": dict.fromkeys(PHASES, 0.0), "top": []}
    result: dict[str, Any] | None = None
    deadline = t0 + limit_s
    while result is None:
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        try:
            ready = parent.poll(min(left, 1.0))
        except (EOFError, OSError):
            break
        if not ready:
            if not proc.is_alive():
                break
            continue
        try:
            kind, payload = parent.recv()
        except (EOFError, OSError):
            break
        if kind == "progress":
            last = payload
        elif kind == "done":
            result = payload
        else:
            result = {"status": "error", "message": payload, "stopped": False}
    elapsed = time.perf_counter() - t0
    if proc.is_alive():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    proc.join()
    parent.close()
    if result is not None:
        result.setdefault("profile", last)
        return result
    stopped = proc.exitcode is None or proc.exitcode < 0 or elapsed >= limit_s
    what = (f"stopped by the benchmark's guard after {elapsed:.0f} s" if stopped
            else f"the solve process ended without an answer (exit code {proc.exitcode})")
    return {"status": "stopped" if stopped else "error", "objective": None, "bound": None, "gap": None,
            "total_s": elapsed, "verified": False, "stopped": stopped, "message": what, "profile": last,
            **{k: kwargs.get(k) for k in ("method", "levers_on")}, "time_limit_s": kwargs.get("time_limit")}


def _warm_up() -> None:
    """Load once, in the parent, what every child would otherwise load again (the schema validator, the problems):
    a forked child inherits it, so its profile shows the solve, not the imports."""
    from dlaopt.formulations import get_problem
    from dlaopt.io.schema import instance_validator

    instance_validator()
    for name in ("pinning", "mapping", "multiaccel"):
        get_problem(name)


def _guard(budget: float, guard_s: float | None) -> float:
    return guard_s if guard_s is not None else GUARD_FACTOR * budget + GUARD_EXTRA_S


# ================================================================================================ formatting
def _pct(g: float | None) -> str:
    if g is None or not math.isfinite(g):
        return "—"
    return f"{100 * g:.2f} %" if g >= 1e-4 else ("0" if g <= 0 else f"{g:.1e}")


def run_text(run: Mapping[str, Any]) -> str:
    """A table cell: status, gap and time of one solve (and what went wrong, if anything)."""
    if run.get("stopped"):
        return f"stopped at {run.get('total_s', 0):.0f} s (guard), no answer"
    if run.get("status") == "error" and run.get("objective") is None:
        return f"error: {run.get('message', '')[:80]}"
    text = f"{run.get('status')}, gap {_pct(run.get('gap'))} in {run.get('total_s', 0):.1f} s"
    if not run.get("verified"):
        text += " — NOT VERIFIED"
    return text


def bottleneck(profile: Mapping[str, Any]) -> str:
    seconds = profile.get("seconds") or {}
    if not seconds or max(seconds.values(), default=0.0) <= 0:
        return "—"
    phase = max(seconds, key=lambda k: seconds[k])
    total = sum(seconds.values())
    return f"{phase} ({100 * seconds[phase] / total:.0f} %)"


def profile_row(case: str, instance: str, run_label: str, run: Mapping[str, Any]) -> dict[str, Any]:
    prof = run.get("profile") or {}
    seconds = prof.get("seconds") or {}
    row: dict[str, Any] = {"case": case, "instance": instance, "run": run_label,
                           "total_s": round(float(run.get("total_s") or 0.0), 3)}
    for p in PHASES:
        row[f"{p}_s"] = round(float(seconds.get(p, 0.0)), 3)
    row["peak_rss_mb"] = prof.get("peak_rss_mb")
    row["bottleneck"] = bottleneck(prof)
    row["top_functions"] = "; ".join(f"{f} {s:.1f} s" for f, s in prof.get("top") or [])
    row["stopped"] = bool(run.get("stopped"))
    return row


def _case_row(case: str, instance: str, target: str, today: Mapping[str, Any] | None,
              new: Mapping[str, Any] | None, met: bool, *, heuristic: Mapping[str, Any] | None = None,
              today_text: str | None = None, new_text: str | None = None, note: str = "") -> dict[str, Any]:
    row: dict[str, Any] = {"case": case, "instance": instance, "target": target, "met": met, "note": note}
    for tag, run in (("today", today), ("new", new)):
        run = run or {}
        row[f"{tag}_budget_s"] = run.get("time_limit_s")
        for k in ("status", "objective", "bound", "gap", "verified"):
            row[f"{tag}_{k}"] = run.get(k)
        row[f"{tag}_total_s"] = None if run.get("total_s") is None else round(float(run["total_s"]), 3)
    row["heuristic"] = heuristic.get("method") if heuristic else None
    row["heuristic_objective"] = heuristic.get("objective") if heuristic else None
    row["bottleneck"] = bottleneck((new or {}).get("profile") or {}) if new else "—"
    row["today_text"] = today_text if today_text is not None else (run_text(today) if today else "—")
    row["new_text"] = new_text if new_text is not None else (run_text(new) if new else "—")
    return row


# ================================================================================================ cases
@dataclass
class _Context:
    scale: Scale
    threads: int | None
    seed: int
    guard_s: float | None
    progress: Callable[[str], None] | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    profiles: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def say(self, text: str) -> None:
        if self.progress:
            self.progress(text)

    def solve(self, case: str, source: str | Mapping[str, Any], label: str, *, budget: float,
              levers_on: bool = True, method: str = "exact") -> dict[str, Any]:
        run = guarded(measure, {"source": source, "method": method, "time_limit": budget, "levers_on": levers_on,
                                "threads": self.threads, "seed": self.seed}, _guard(budget, self.guard_s))
        run.setdefault("time_limit_s", budget)
        name = run.get("instance") or _name_of(source)
        run["instance"] = name
        self.profiles.append(profile_row(case, name, label, run))
        self.say(f"{case}: {name} [{label}] {run_text(run)}")
        return run


def _name_of(source: str | Mapping[str, Any]) -> str:
    if isinstance(source, Mapping):
        return str(source.get("name", "?"))
    return Path(source).stem


def _case_pinning(ctx: _Context) -> None:
    s = ctx.scale
    today = ctx.solve("pinning", s.pinning, "today", budget=s.pinning_today_s, levers_on=False)
    new = ctx.solve("pinning", s.pinning, "new", budget=s.pinning_new_s)
    limit = s.pinning_new_s
    met = bool(new.get("verified") and new.get("gap") is not None and new["gap"] <= 1e-4
               and new["total_s"] <= limit)
    ctx.rows.append(_case_row("pinning", today["instance"],
                              f"proven optimal (gap ≤ 1e-4) in ≤ {limit:g} s including prepare and build",
                              today, new, met))


def _case_mapping(ctx: _Context) -> None:
    s = ctx.scale
    today = ctx.solve("mapping", s.mapping, "today", budget=s.mapping_s, levers_on=False)
    new = ctx.solve("mapping", s.mapping, "new", budget=s.mapping_s)
    ga = ctx.solve("mapping", s.mapping, "ga", budget=s.mapping_s, method="ga")

    def vs_ga(run: Mapping[str, Any]) -> str:
        if run.get("objective") is None or ga.get("objective") is None:
            return ""
        diff = run["objective"] / ga["objective"] - 1
        return f"; GA {'better' if diff > 0 else 'not better'} ({_pct(abs(diff))} {'below' if diff > 0 else 'above'})"

    not_worse = bool(new.get("objective") is not None and ga.get("objective") is not None
                     and new["objective"] <= ga["objective"] * (1 + OBJECTIVE_TOLERANCE))
    met = bool(new.get("verified") and ga.get("verified") and new.get("gap") is not None and new["gap"] <= 0.01
               and not_worse)
    ctx.rows.append(_case_row(
        "mapping", today["instance"],
        f"gap ≤ 1 % with a {s.mapping_s:g} s limit; exact never worse than the best heuristic (GA, same time)",
        today, new, met, heuristic={"method": "ga", "objective": ga.get("objective")},
        today_text=run_text(today) + vs_ga(today), new_text=run_text(new) + vs_ga(new)))


def magma_job(specs: Sequence[tuple[str, str, float]], *, group_size: int, seed: int, threads: int | None,
              factor: float, on_update: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Every MAGMA instance of ``specs`` with the exact method twice on the same heuristic results: every lever
    off given max(MAGMA's time, 1 s), and the levers on given ``factor`` × MAGMA's time (rows ``today``,
    ``new``)."""
    from dlaopt.experiments import magma

    today: list[dict[str, Any]] = []
    new: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"seed": seed}
    if threads is not None:
        kwargs["threads"] = threads
    for task, platform, bw in specs:
        doc = magma.instance_doc(task, platform, bw, group_size=group_size, seed=seed)
        t0 = time.perf_counter()
        if hasattr(magma, "run_settings"):
            before, after = magma.run_settings(doc, [magma.BEFORE_LEVERS, magma.with_levers(factor)], **kwargs)
        else:  # a row function without settings: the exact method as it is, twice
            before, after = magma.run_one(with_levers(doc, False), **kwargs), magma.run_one(doc, **kwargs)
        wall = time.perf_counter() - t0
        for row in (before, after):
            row["wall_s"] = wall / 2
        today.append(dict(before))
        new.append(dict(after))
        if on_update is not None:
            on_update({"seconds": dict.fromkeys(PHASES, 0.0), "top": [], "done": len(new)})
    return {"today": today, "new": new, "setting_applied": hasattr(magma, "run_settings")}


def _gap_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    gaps = [float(r["gap"]) if r.get("gap") is not None else math.inf for r in rows]
    return {"instances": len(gaps), "max_gap": max(gaps) if gaps else None,
            "median_gap": statistics.median(gaps) if gaps else None,
            "within_1pct": sum(g <= 0.01 for g in gaps)}


def _case_magma(ctx: _Context) -> None:
    sc = ctx.scale
    factor = sc.magma_factor
    budget = len(sc.magma) * (30.0 + 2.0 * factor)  # heuristics and exact per instance, generously
    out = guarded(magma_job, {"specs": list(sc.magma), "group_size": sc.magma_group_size, "seed": ctx.seed,
                              "threads": ctx.threads, "factor": factor}, _guard(budget, ctx.guard_s))
    if "today" not in out:
        ctx.rows.append(_case_row("magma", f"{len(sc.magma)} job groups",
                                  f"every instance ≤ 1 % in {factor:g} × MAGMA's wall time", None, None, False,
                                  note=str(out.get("message", "no answer"))))
        return
    today, new = out["today"], out["new"]
    for t, n in zip(today, new, strict=True):
        ctx.say(f"magma: {n['instance']} gap today {_pct(t.get('gap'))}, new {_pct(n.get('gap'))}")
    st, sn = _gap_summary(today), _gap_summary(new)
    ctx.details["magma"] = {"today": today, "new": new, "today_summary": st, "new_summary": sn}

    def text(s: Mapping[str, Any], budget: str) -> str:
        return (f"max {_pct(s['max_gap'])}, median {_pct(s['median_gap'])}, {s['within_1pct']}/{s['instances']} "
                f"≤ 1 % ({budget})")

    note = "" if out.get("setting_applied") else ("the MAGMA row function takes no exact settings here: both runs "
                                                  "are its default")
    met = bool(new) and sn["within_1pct"] == sn["instances"] and all(r.get("exact_gops") for r in new)
    for label, rows in (("today", today), ("new", new)):
        secs = dict.fromkeys(PHASES, 0.0)
        secs["heuristics"] = sum(float(r.get(f"{h}_s") or 0.0) for r in rows for h in magma_heuristics()) / 2
        secs["solver"] = sum(float(r.get("exact_s") or 0.0) for r in rows)
        ctx.profiles.append(profile_row("magma", f"{len(rows)} instances", label,
                                        {"total_s": secs["heuristics"] + secs["solver"],
                                         "profile": {"seconds": secs, "top": []}}))
    row = _case_row("magma", f"{sn['instances']} job groups",
                    f"every instance ≤ 1 % in {factor:g} × MAGMA's wall time", None, None, met,
                    today_text=text(st, "exact given max(MAGMA s, 1 s), levers off"),
                    new_text=text(sn, f"exact given {factor:g} × MAGMA s, levers on"), note=note)
    row.update({"today_gap": st["max_gap"], "new_gap": sn["max_gap"], "today_status": "max gap",
                "new_status": "max gap"})
    ctx.rows.append(row)


def magma_heuristics() -> tuple[str, ...]:
    from dlaopt.experiments import magma

    return tuple(magma.HEURISTICS)


def _case_large(ctx: _Context, problem: str) -> None:
    case = f"large-{problem}"
    sources = ctx.scale.large_pinning if problem == "pinning" else ctx.scale.large_mapping
    budget = ctx.scale.large_s
    for key, source in sources.items():
        today = ctx.solve(case, source, "today", budget=budget, levers_on=False)
        new = ctx.solve(case, source, "new", budget=budget)
        proven = new.get("status") == "optimal"
        met = bool(new.get("verified") and (proven or (new.get("gap") is not None and new["gap"] <= 0.01)))
        note = "" if met else f"not met: time went mostly to {bottleneck(new.get('profile') or {})}"
        ctx.rows.append(_case_row(case, f"{LARGE_LABELS.get(key, key)}: {new.get('instance') or _name_of(source)}",
                                  f"proven or gap ≤ 1 % in {budget:g} s", today, new, met, note=note))


def reuse_job(instances: Sequence[str | dict[str, Any]], *, time_limit: float, threads: int | None,
              on_update: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The per-network report of exact mapping without reuse, with replay and against the layer cache."""
    try:
        from dlaopt.experiments.reuse import reuse_report, reuse_table
    except ImportError as exc:
        return {"message": f"reuse report unavailable: {exc}"}
    rows = reuse_report(list(instances), time_limit=time_limit, threads=threads or 1)
    return {"rows": rows, "table": reuse_table(rows)}


def _case_reuse(ctx: _Context) -> None:
    sc = ctx.scale
    t0 = time.perf_counter()
    budget = 3 * len(sc.reuse) * 60 * sc.reuse_s  # three runs per network of up to 60 layers, each within the limit
    out = guarded(reuse_job, {"instances": list(sc.reuse), "time_limit": sc.reuse_s, "threads": ctx.threads},
                  _guard(budget, ctx.guard_s))
    if "rows" not in out:
        ctx.rows.append(_case_row("reuse", "—", "answers agree, less time with reuse", None, None, False,
                                  note=str(out.get("message", "no answer"))))
        return
    rows = out["rows"]
    ctx.details["reuse"] = rows
    ctx.details["reuse_table"] = out.get("table")
    for r in rows:
        off, replay, cache = (r.get(f"{m}_time_s") for m in ("off", "replay", "cache"))
        same = bool(r.get("same_result"))
        faster = off is not None and min(x for x in (replay, cache, off) if x is not None) < off
        ctx.rows.append(_case_row(
            "reuse", str(r.get("network")), "answers agree, less time with reuse (seed 001 Chapter 5)", None, None,
            same and faster,
            today_text=f"without reuse {sci_text(off)} s ({r.get('off_status')})",
            new_text=(f"replay {sci_text(replay)} s, cache {sci_text(cache)} s "
                      f"({'answers agree' if same else 'answers DISAGREE'})")))
        for mode in ("off", "replay", "cache"):
            secs = dict.fromkeys(PHASES, 0.0)
            secs["solver"] = float(r.get(f"{mode}_time_s") or 0.0)
            ctx.profiles.append(profile_row("reuse", str(r.get("network")), mode,
                                            {"total_s": secs["solver"], "profile": {"seconds": secs, "top": []}}))
    ctx.say(f"reuse: {len(rows)} network(s) in {time.perf_counter() - t0:.1f} s")


_RUNNERS: dict[str, Callable[[_Context], None]] = {
    "pinning": _case_pinning,
    "mapping": _case_mapping,
    "magma": _case_magma,
    "large-pinning": lambda ctx: _case_large(ctx, "pinning"),
    "large-mapping": lambda ctx: _case_large(ctx, "mapping"),
    "reuse": _case_reuse,
}
CASE_TITLES = {
    "pinning": "Pinning, ResNet-50 fp16, 3 × 256 KB",
    "mapping": "Mapping EDP, ResNet-50 layer1.0.conv2 on Accel-B",
    "magma": "Multi-accelerator (MAGMA benchmark)",
    "large-pinning": "Pinning, larger networks, 3 × 256 KB",
    "large-mapping": "Mapping EDP, larger networks on Accel-B",
    "reuse": "Mapping, reuse across layers",
}


# ================================================================================================ the report
def markdown(rows: Sequence[Mapping[str, Any]], profiles: Sequence[Mapping[str, Any]], scale: str,
             details: Mapping[str, Any], env: Mapping[str, Any]) -> str:
    head = ["case", "instance", "today", "new", "target", "met"]
    body = [[CASE_TITLES.get(r["case"], r["case"]) if scale == "full" else f"{r['case']} (quick)",
             str(r["instance"]), str(r["today_text"]), str(r["new_text"]), str(r["target"]),
             ("yes" if r["met"] else "no") + (f" — {r['note']}" if r.get("note") else "")] for r in rows]
    parts = ["# Proofs at scale: today (exact levers off, old budget) and new (levers on, target budget)", "",
             md_table(head, body, ["l"] * len(head)), "", "## Where the time goes (seconds per solve)", ""]
    phead = ["case", "instance", "run", "total", *PHASES, "peak MB", "bottleneck", "top functions"]
    pbody = [[p["case"], p["instance"], p["run"], f"{p['total_s']:.2f}", *(f"{p[f'{x}_s']:.2f}" for x in PHASES),
              sci_text(p.get("peak_rss_mb")), p["bottleneck"] + (" (stopped)" if p["stopped"] else ""),
              p["top_functions"] or "—"] for p in profiles]
    parts += [md_table(phead, pbody, ["l", "l", "l"] + ["r"] * (2 + len(PHASES)) + ["l", "l"]), ""]
    if "magma" in details:
        from dlaopt.experiments import magma

        parts += ["## MAGMA instances, levers on", "", magma.markdown(details["magma"]["new"]), ""]
    if details.get("reuse_table"):
        parts += ["## Reuse across layers", "", str(details["reuse_table"]), ""]
    parts += ["## Machine", "", environment_markdown(env), ""]
    return "\n".join(parts)


def run_scale_benchmark(out_dir: str | Path, *, quick: bool = False, cases: Sequence[str] | None = None,
                        threads: int | None = None, seed: int = 0, guard_s: float | None = None,
                        progress: Callable[[str], None] | None = None) -> ExperimentReport:
    """Run the chosen cases (all by default) at the quick or the full scale and write the report (module
    docstring)."""
    from dlaopt.errors import InputError

    chosen = list(cases) if cases else list(CASES)
    check_choices(chosen, CASES, "--cases", "case")
    if guard_s is not None and guard_s <= 0:
        raise InputError(f"the guard must be positive, got {guard_s}", path=("--guard",), expected="seconds > 0")
    scale = QUICK if quick else FULL
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ctx = _Context(scale, threads, seed, guard_s, progress)
    t0 = time.perf_counter()
    for case in CASES:
        if case in chosen:
            _RUNNERS[case](ctx)
    env = environment(threads)
    table = markdown(ctx.rows, ctx.profiles, scale.label, ctx.details, env)
    summary = {"scale": scale.label, "cases": chosen, "met": sum(bool(r["met"]) for r in ctx.rows),
               "rows": len(ctx.rows), "seconds": round(time.perf_counter() - t0, 1)}
    (out / "scale_profile.csv").write_text(csv_text(ctx.profiles, PROFILE_FIELDS), encoding="utf-8")
    csv_path, md_path, _ = write_report(
        out, "scale_benchmark", ctx.rows, CSV_FIELDS, table + "\n",
        ("scale_benchmark.json", {"summary": summary, "rows": ctx.rows, "profiles": ctx.profiles,
                                  "details": ctx.details, "environment": env}), None)
    return ExperimentReport(ctx.rows, csv_path, md_path, None, table, summary)


__all__ = ["CASES", "PHASES", "PhaseSampler", "exact_levers", "guarded", "measure", "run_scale_benchmark",
           "with_levers"]
