"""Reuse of solved layers measured (seed 001 Chapter 5, the replay buffer's warm start, Figs. 5.10-5.11): per
network, the exact mapper without reuse, with similar layers warm-starting each other within the run, and a second run
against the on-disk layer cache the first one filled — times, objectives and bounds side by side."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from dlaopt.harness import prepare, solve
from dlaopt.io.instance import instance_from_dict
from dlaopt.results import fmt_gap, md_table, sci_text
from dlaopt.solvers.result import SolveOptions

MODES = ("off", "replay", "cache")


def _run_mode(doc: dict[str, Any], mode: str, time_limit: float | None, workers: int, threads: int,
              cache_dir: Path) -> dict[str, Any]:
    opts = dict(doc.get("options") or {})
    opts["workers"] = workers
    tuning = dict(opts.get("exact_tuning") or {})
    tuning["reuse"] = mode != "off"
    opts["exact_tuning"] = tuning
    opts["cache_dir"] = str(cache_dir) if mode != "off" else None
    inst = instance_from_dict({**doc, "options": opts})
    t0 = time.perf_counter()
    res = solve(inst, "exact", options=SolveOptions(time_limit=time_limit, threads=threads))
    return {"time_s": time.perf_counter() - t0, "objective": res.objective, "bound": res.bound,
            "status": res.status.value, "gap": res.gap, "verified": res.verified,
            "reuse": (res.metrics or {}).get("reuse")}


def reuse_report(instances: Sequence[str | Path | dict[str, Any]], *, time_limit: float | None = 60.0,
                 workers: int = 1, threads: int = 1, cache_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Per mapping instance (one network each), the exact method three ways, one after the other: ``off``
    (``exact_tuning.reuse`` false: today's method), ``replay`` (similar layers warm-start each other within the run;
    the run fills the on-disk cache) and ``cache`` (the same run again against that cache: proven layers are reused
    after re-evaluation, the rest warm-started). ``cache_dir``: where the cache lives (default: a fresh temporary
    directory per network, removed afterwards, so ``replay`` starts from an empty cache). Row keys: ``network``,
    ``objective``, ``layers``, ``unique_layers``, per mode ``<mode>_time_s``, ``<mode>_objective``,
    ``<mode>_bound``, ``<mode>_status``, ``<mode>_gap``, ``<mode>_reuse`` (the run's reuse metrics); ``speedup_replay``
    and ``speedup_cache`` (time off / time with), and ``same_result``: the three answers agree — none lies below
    another's proven bound (beyond 1e-6 relative), and proven optima are equal."""
    rows: list[dict[str, Any]] = []
    for item in instances:
        if isinstance(item, dict):
            doc = dict(item)
        else:
            doc = yaml.safe_load(Path(item).read_text())
            doc.setdefault("name", Path(item).stem)
            if isinstance(doc.get("workload"), dict) and "file" in doc["workload"]:
                doc["workload"] = {**doc["workload"], "file": str(Path(item).parent / doc["workload"]["file"])}
        p = prepare(instance_from_dict(doc, source=None if isinstance(item, dict) else str(item)))
        row: dict[str, Any] = {"network": doc.get("name") or p.instance.name, "objective": p.instance.objective,
                               "layers": len(p.data.nests), "unique_layers": len(p.data.groups)}
        with tempfile.TemporaryDirectory(prefix="dlaopt-reuse-") as tmp:
            where = Path(cache_dir) if cache_dir is not None else Path(tmp)
            for mode in MODES:
                r = _run_mode(doc, mode, time_limit, workers, threads, where)
                for k, v in r.items():
                    row[f"{mode}_{k}"] = v
        for mode in ("replay", "cache"):
            row[f"speedup_{mode}"] = row["off_time_s"] / row[f"{mode}_time_s"] if row[f"{mode}_time_s"] else None
        row["same_result"] = consistent([(row[f"{m}_objective"], row[f"{m}_bound"]) for m in MODES])
        rows.append(row)
    return rows


def consistent(answers: Sequence[tuple[float | None, float | None]], tol: float = 1e-6) -> bool:
    """Do these (objective, proven bound) answers to one minimisation agree? Every objective is at least every
    bound (within ``tol`` relative); a missing objective disagrees."""
    objs = [o for o, _ in answers]
    if any(o is None for o in objs):
        return False
    bounds = [b for _, b in answers if b is not None]
    return all(o >= b - tol * max(abs(o), 1.0) for o in objs for b in bounds)  # type: ignore[operator]


def reuse_table(rows: Sequence[dict[str, Any]]) -> str:
    """:func:`reuse_report`'s rows as a markdown table."""
    header = ["network", "objective", "layers (unique)", "without reuse", "replay", "speed-up", "cache (2nd run)",
              "speed-up", "objective without / with", "status without / replay / cache"]
    body = []
    for r in rows:
        body.append([
            str(r["network"]), str(r["objective"]), f"{r['layers']} ({r['unique_layers']})",
            f"{r['off_time_s']:.2f} s", f"{r['replay_time_s']:.2f} s",
            "-" if r["speedup_replay"] is None else f"{r['speedup_replay']:.2f}x",
            f"{r['cache_time_s']:.2f} s", "-" if r["speedup_cache"] is None else f"{r['speedup_cache']:.2f}x",
            f"{sci_text(r['off_objective'])} / {sci_text(r['replay_objective'])}",
            " / ".join(f"{r[f'{m}_status']} ({fmt_gap(r[f'{m}_gap'])})" for m in MODES),
        ])
    return md_table(header, body, ["l", "l", "r", "r", "r", "r", "r", "r", "r", "l"])


__all__ = ["MODES", "consistent", "reuse_report", "reuse_table"]
