"""Result records and the tables every report shares.

One JSON record per finished (instance, method) pair (:func:`result_record`), appended to a ``results.jsonl`` that
survives a kill and lets a rerun resume (:func:`open_results`, :func:`append_records`, :func:`read_records`); the
ratio of each verified objective to the best of its instance; the environment a figure depends on; and the number
formats, Markdown tables, CSV and JSON writers of benchmark suites (:mod:`dlaopt.bench`), sweeps (:mod:`dlaopt.sweep`),
the compile report (:mod:`dlaopt.pipeline`) and the experiments.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlaopt.errors import InputError

if TYPE_CHECKING:
    from dlaopt.harness import Result

RESULTS_JSONL = "results.jsonl"
RESULTS_CSV = "results.csv"
RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
TABLE_COLUMNS: tuple[str, ...] = ("instance", "method", "status", "objective", "bound", "gap", "time_s",
                                  "ratio_to_best", "verified")
CSV_COLUMNS: tuple[str, ...] = TABLE_COLUMNS + ("problem", "objective_name", "instance_file", "solver",
                                                "solver_version", "prepare_time_s", "time_limit", "threads", "seed",
                                                "message", "finished_at")
RECORD_VERSION = 1


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _meminfo_total() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return platform.processor() or None


def environment(threads: int | None = None) -> dict[str, Any]:
    """What a benchmark figure depends on besides the instance: package versions, solver threads, the machine."""
    from dlaopt import __version__

    ram = _meminfo_total()
    return {
        "dlaopt": __version__,
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "ortools": _version("ortools"),
        "highspy": _version("highspy"),
        "threads": threads,
        "cpu_count": os.cpu_count(),
        "cpu": _cpu_model(),
        "platform": platform.platform(),
        "ram_bytes": ram,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def ram_text(n: int | None) -> str:
    return "unknown" if n is None else f"{n / 1024**3:.1f} GiB"


def environment_markdown(env: Mapping[str, Any]) -> str:
    threads = env.get("threads")
    return "\n".join([
        f"- dlaopt {env.get('dlaopt')}, Python {env.get('python')}, numpy {env.get('numpy')}, "
        f"OR-Tools {env.get('ortools')}, highspy {env.get('highspy')}",
        f"- solver threads: {threads if threads is not None else 'solver default'}",
        f"- machine: {env.get('cpu_count')} CPUs ({env.get('cpu') or 'unknown CPU'}), "
        f"{ram_text(env.get('ram_bytes'))} RAM, {env.get('platform')}",
        f"- date: {env.get('date')}",
    ])


def record_key(entry: str, method: str) -> str:
    """The key of one (instance, method) record in ``results.jsonl``."""
    return f"{entry}\t{method}"


def open_results(out: Path, *, resume: bool) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Create the output folder and return its ``results.jsonl`` and the records already there (none, and the file
    removed, without ``resume``)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder: {exc.strerror or exc}", file=str(out)) from None
    jsonl = out / RESULTS_JSONL
    if not resume:
        jsonl.unlink(missing_ok=True)
    return jsonl, read_records(jsonl)


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with ``ratio_to_best`` set on each (:func:`ratio_to_best`)."""
    for r, ratio in zip(rows, ratio_to_best(rows), strict=True):
        r["ratio_to_best"] = ratio
    return rows


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """The records of ``results.jsonl`` by (entry, method) key, the last one winning. A line cut short by an
    interruption is dropped (and the file rewritten without it, so appended lines start on a line of their own)."""
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8", errors="replace")  # an undecodable byte spoils its line only
    out: dict[str, dict[str, Any]] = {}
    good: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):  # cut short, not JSON, or nested too deep to be a record: dropped
            continue
        if isinstance(rec, dict) and isinstance(rec.get("instance"), str) and isinstance(rec.get("method"), str):
            out[record_key(rec["instance"], rec["method"])] = rec
            good.append(line)
    if len(good) != len([ln for ln in text.splitlines() if ln.strip()]) or (text and not text.endswith("\n")):
        path.write_text("".join(g + "\n" for g in good), encoding="utf-8")
    return out


def _num(v: Any) -> float | None:
    if v is None:
        return None
    f = float(v)
    return None if math.isnan(f) or math.isinf(f) else f


def scalar_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            out[k] = v
        elif isinstance(v, float):
            out[k] = _num(v)
        elif type(v).__module__ == "numpy" and hasattr(v, "item"):
            item = v.item()
            if isinstance(item, (bool, int, float, str)):
                out[k] = _num(item) if isinstance(item, float) else item
    return out


def result_record(name: str, method: str, res: Result, *, prepare_time_s: float, instance_file: str,
                  solve: Mapping[str, Any], config: str) -> dict[str, Any]:
    """The JSON line of one finished (instance, method) pair (``results.jsonl`` of suites and sweeps)."""
    return {
        "instance": name,
        "method": method,
        "status": res.status.value,
        "objective": _num(res.objective),
        "bound": _num(res.bound),
        "gap": _num(res.gap),
        "time_s": res.time_s,
        "verified": bool(res.verified),
        "problem": res.problem,
        "objective_name": res.objective_name,
        "instance_file": instance_file,
        "solver": res.solver,
        "solver_version": res.solver_version,
        "prepare_time_s": prepare_time_s,
        "time_limit": solve.get("time_limit"),
        "threads": solve.get("threads"),
        "seed": solve.get("seed", 0),
        "message": res.message,
        "metrics": scalar_metrics(res.metrics),
        "finished_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "config": config,
    }


def append_records(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Append JSON lines to ``path`` in one write, flushed and synced (what is written survives a kill)."""
    if not records:
        return
    text = "".join(json.dumps(r, allow_nan=False, default=str) + "\n" for r in records)
    with path.open("a", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def ratio_to_best(rows: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """Per row, its verified objective divided by the best verified objective of the same instance (minimisation:
    1 is the best); ``inf`` when the best is 0 and the row's is not; ``None`` for rows without a verified objective."""
    best: dict[str, float] = {}
    for r in rows:
        v = r.get("objective")
        if r.get("verified") and v is not None:
            best[r["instance"]] = min(best.get(r["instance"], math.inf), float(v))
    out: list[float | None] = []
    for r in rows:
        v, b = r.get("objective"), best.get(r["instance"])
        if not r.get("verified") or v is None or b is None:
            out.append(None)
        elif b == 0:
            out.append(1.0 if float(v) == 0 else math.inf)
        else:
            out.append(float(v) / b)
    return out


def fmt_number(v: Any) -> str:
    """Numbers for tables: up to 1e10 with thousands separators (integers exact, others rounded), larger ones and
    small fractions to 4 significant digits (the CSV and JSON keep every digit)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf"
    if abs(f) >= 1e10:
        return f"{f:.4g}"
    if f.is_integer():
        return f"{int(f):,}"
    if abs(f) >= 1e5:
        return f"{f:,.0f}"
    return f"{f:,.1f}" if abs(f) >= 1000 else f"{f:.4g}"


def sci_text(v: float | None, digits: int = 3) -> str:
    """A figure for a report table: ``—`` when missing or not finite, ``digits`` significant digits below 10^4, else
    the seeds' notation (``2.166E+6``)."""
    if v is None or not math.isfinite(v):
        return "—"
    return f"{v:.{digits}g}" if abs(v) < 1e4 else f"{v:.3e}".replace("e+0", "E+").replace("e+", "E+")


def fmt_gap(g: Any) -> str:
    if g is None:
        return "-"
    return "inf" if math.isinf(float(g)) else f"{100 * float(g):.2f}%"


def fmt_ratio(r: Any) -> str:
    if r is None:
        return "-"
    return "inf" if math.isinf(float(r)) else f"{float(r):.3f}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def results_table_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    header = ["instance", "method", "status", "objective", "bound", "gap", "time [s]", "ratio to best", "verified"]
    body = [[r["instance"], r["method"], r["status"], fmt_number(r.get("objective")), fmt_number(r.get("bound")),
             fmt_gap(r.get("gap")), f"{float(r.get('time_s') or 0.0):.2f}", fmt_ratio(r.get("ratio_to_best")),
             "yes" if r.get("verified") else "no"] for r in rows]
    return md_table(header, body, ["l", "l", "l", "r", "r", "r", "r", "r", "l"])


def total_seconds(rows: Sequence[Mapping[str, Any]]) -> float:
    """The time the rows took: every pair's time plus each instance's preparation once."""
    prep: dict[str, float] = {}
    for r in rows:
        prep[r["instance"]] = float(r.get("prepare_time_s") or 0.0)
    return sum(float(r.get("time_s") or 0.0) for r in rows) + sum(prep.values())


def seconds_text(t: float) -> str:
    return f"{t:.0f} s" if t >= 10 else f"{t:.1f} s"


def csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] = CSV_COLUMNS) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})
    return buf.getvalue()


def json_safe(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, Mapping):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v
