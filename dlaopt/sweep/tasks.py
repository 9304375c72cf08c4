"""One sweep task (see :mod:`dlaopt.sweep`): :func:`run_task`, the module-level function from plain JSON to plain
JSON that Dask workers (or this process) run, the version check of workers, and the records of a failed task."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

from dlaopt.errors import InputError
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE, Deadline

TOTAL_LIMIT_FAILURE = "total_time_limit"  # ``failure`` of a record cut short by the total time limit


def _facts(prepared: Any) -> dict[str, Any]:
    """Sizes of the prepared instance that reports use (pinning: the reconstructed graph's steps and buffers)."""
    graph = getattr(prepared.data, "graph", None)
    out: dict[str, Any] = {}
    for name in ("steps", "buffers"):
        value = getattr(graph, name, None)
        if value is not None and hasattr(value, "__len__"):
            out[name] = len(value)
    return out


def failed_records(spec: Mapping[str, Any], message: str, failure: str) -> list[dict[str, Any]]:
    """Status ``error`` records for every method of a task that failed as a whole (``failure``: ``task`` — an
    exception in it, kept; ``worker`` — it never came back, run again on resume)."""
    from dlaopt.harness import Result
    from dlaopt.results import result_record
    from dlaopt.solvers.result import Status

    doc = spec["document"]
    out = []
    for method in spec["methods"]:
        res = Result(doc["problem"], doc.get("name") or spec["name"], method, str(doc.get("objective") or ""),
                     Status.ERROR, message=message)
        rec = result_record(spec["name"], method, res, prepare_time_s=0.0, instance_file=spec["instance_file"],
                            solve=spec["solve"], config=spec["key"])
        rec.update(_task_fields(spec, {}), failure=failure)
        out.append(rec)
    return out


def _task_fields(spec: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    return {"workload": spec["workload"], "point": dict(spec["point"]), "task": spec["index"],
            "run_id": spec["run_id"], "worker": f"{socket.gethostname()}:{os.getpid()}", "facts": dict(facts)}


def run_task(spec: Mapping[str, Any], deadline: Deadline | None = None) -> list[dict[str, Any]]:
    """Run one sweep task (a plain JSON spec from :meth:`SweepTask.spec`) and return its records, one per method.

    Never raises for a failing instance or method: the exception becomes a record with status ``error``. With a
    ``deadline`` (a total time limit, in this process) each method gets at most the time left and a method that
    would start after it is not run (status ``no_solution``); such records carry ``failure: total_time_limit`` and
    are run again on resume."""
    import dataclasses

    from dlaopt import harness
    from dlaopt.bench import restore_sigint, solve_options
    from dlaopt.io.instance import instance_from_dict
    from dlaopt.results import result_record

    try:
        prepared = harness.prepare(instance_from_dict(spec["document"], source=spec.get("source")))
    except Exception as exc:
        text = exc.render() if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        return failed_records(spec, f"the instance could not be prepared: {text}", "task")
    facts = _facts(prepared)
    options = solve_options(spec["solve"])
    solver = spec["solve"].get("solver")
    records = []
    for method in spec["methods"]:
        opts, cut = options, False
        if deadline is not None and deadline.bounded:
            limit = deadline.limit(options.time_limit)
            cut = limit is not None and (options.time_limit is None or limit < options.time_limit)
            opts = dataclasses.replace(options, time_limit=limit, deadline=deadline.end)
            if deadline.expired:
                rec = failed_records({**spec, "methods": [method]}, NOT_STARTED_MESSAGE, TOTAL_LIMIT_FAILURE)[0]
                rec["status"] = "no_solution"
                records.append(rec)
                continue
        try:
            res = harness.solve(prepared, method, solver=solver if method == "exact" else None, options=opts)
        except Exception as exc:
            rec = failed_records({**spec, "methods": [method]}, f"{type(exc).__name__}: {exc}", "task")[0]
        else:
            rec = result_record(spec["name"], method, res, prepare_time_s=prepared.prepare_time_s,
                                instance_file=spec["instance_file"], solve=spec["solve"], config=spec["key"])
            rec.update(_task_fields(spec, facts))
            if cut:
                rec["failure"] = TOTAL_LIMIT_FAILURE
        finally:
            restore_sigint()
        records.append(rec)
    return records


def worker_version() -> str:
    """dlaopt's version on a worker (``Client.run`` checks the cluster's workers run the driver's version)."""
    from dlaopt import __version__

    return __version__
