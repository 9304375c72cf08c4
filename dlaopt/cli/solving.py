"""``dlaopt solve``, ``compare`` and ``verify``: one method, every method, and a solution file re-checked by the
problem's independent evaluator."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from dlaopt.cli.common import (
    EXIT_REJECTED,
    ProgressPrinter,
    check_method,
    check_solver,
    console,
    echo_json,
    fmt,
    fmt_gap,
    instance_options,
    is_buffer_csv,
    kv_table,
    load_instance_file,
    prepare_instance,
    solve_options,
    solver_options,
    split_methods,
)
from dlaopt.errors import InputError

if TYPE_CHECKING:
    from dlaopt.harness import Prepared, Result
    from dlaopt.io.instance import Instance
    from dlaopt.solvers.processes import Deadline


def _start(instance: str, solver: str | None, total_time_limit: float | None, silent: bool,
           loading: Mapping[str, Any]) -> tuple[Deadline, str | None, Console, bool, Instance, Prepared]:
    """What solve and compare do first: the total time limit starts, the solver string and the instance are checked
    (bad input exits 2 before any work) and the instance is prepared. ``loading``: the options of
    :func:`~dlaopt.cli.common.instance_options`. Returns the deadline, the checked solver, the stderr console,
    whether to log, the instance and its preparation."""
    from dlaopt.solvers.processes import Deadline

    deadline = Deadline(total_time_limit)
    solver = check_solver(solver)
    inst = load_instance_file(instance, **loading)
    return deadline, solver, console(stderr=True), not silent, inst, prepare_instance(inst)


def _write_buffers_csv(output: Path, inst: Instance, res: Result) -> Path:
    """The instance's buffers with the result's offsets (a blank ``offset`` column when it has no solution), in the
    column names of the CSV the instance came from."""
    from dlaopt.io.buffers import read_header_spelling, write_buffers_csv

    offsets = (res.solution or {}).get("offsets") or {}
    spelling = read_header_spelling(inst.source) if inst.source and is_buffer_csv(inst.source) else None
    return write_buffers_csv(output, inst.buffers, {str(k): int(v) for k, v in offsets.items()}, spelling=spelling)


# ------------------------------------------------------------------------------------------------ solve
@click.command()
@click.argument("instance", metavar="INSTANCE")
@click.option("--method", "-m", default="exact", show_default=True, help="A method of the instance's problem.")
@solver_options
@instance_options
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Solver threads (default: the solver's).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="SOLUTION",
              help="Write the solution document here (JSON for .json, else YAML); read it back with `dlaopt verify`. "
                   "Static allocation: a .csv file gets the buffers with an offset column.")
def solve(instance: str, method: str, solver: str | None, time_limit: float | None, gap: float | None, seed: int,
          total_time_limit: float | None, capacity: int | None, alignment: int | None, objective: str | None,
          threads: int | None, as_json: bool, output: Path | None, quiet: bool) -> None:
    """Solve INSTANCE with one method and verify the answer.

    INSTANCE is an instance file (YAML or JSON) or, for static memory allocation, a CSV of buffers (header
    id,lower,upper,size or buffer,start,end,size; optional alignment column) with the memory's size given by
    --capacity BYTES, e.g. `dlaopt solve plan.csv --capacity 1048576 -o plan-solved.csv`.

    Without --json: a short report (status, objective, bound, gap, time, solver, verified, metrics, warm start).
    With --json: one JSON object, Result.to_dict() (keys problem, instance, method, objective_name, status,
    objective, bound, gap, time_s, ..., verified, verification, metrics, warm_start, trace, message, solution).
    Exit code 0 whatever the status (optimal, feasible, infeasible, no_solution, error): the status says it;
    130 when interrupted (Ctrl-C), 143 when terminated (SIGTERM). --total-time-limit bounds the whole command, the
    heuristic warm start included (a mapping instance's layers are solved in worker processes until then).
    """
    from dlaopt import harness

    deadline, solver, err, log, inst, p = _start(instance, solver, total_time_limit, quiet or as_json,
                                                 {"capacity": capacity, "alignment": alignment, "objective": objective})
    check_method(p, method)
    csv_output = output is not None and is_buffer_csv(output)
    if csv_output and inst.problem != "allocation":
        raise InputError(f"a .csv solution holds the offsets of buffers, and this is a '{inst.problem}' instance",
                         file=str(output), expected="a .yaml or .json solution file")
    printer = ProgressPrinter(err) if log else None
    if solver is not None and p.problem.method(method).kind != "exact" and not quiet:
        err.print(f"note: --solver is ignored by the heuristic method '{method}'")
    if log:
        err.print(f"solving {inst.name} ({inst.problem}, objective {inst.objective}) with method '{method}'"
                  + (f", solver {solver}" if solver else ""))
    opts = harness.within(solve_options(time_limit, gap, seed, threads, printer), deadline)
    res = harness.not_started(p, method) if opts is None else harness.solve(p, method, solver=solver, options=opts)
    if printer is not None:
        printer.flush()
    if output is not None:
        from dlaopt.io import save_solution_document

        written = _write_buffers_csv(output, inst, res) if csv_output else \
            save_solution_document(res.solution_document(), output)
        if not quiet:
            note = "" if res.solution else " (the result has no solution: the document's solution is empty)"
            err.print(f"solution written to {written}{note}")
    if as_json:
        echo_json(res.to_dict())
        return
    _print_result(res)


def _print_result(res: Result) -> None:
    out = console()
    ws = res.warm_start
    warm = "-"
    if ws:
        warm = f"{ws.get('method')} (objective {fmt(ws.get('objective'))})"
        if ws.get("rejected"):
            warm += f", rejected: {ws['rejected']}"
    solver = res.solver or "-"
    if res.solver_version:
        solver += f" {res.solver_version}"
    rows: list[tuple[str, Any]] = [
        ("instance", f"{res.instance} ({res.problem})"),
        ("method", res.method),
        ("status", res.status.value),
        ("objective", f"{fmt(res.objective)} ({res.objective_name})"),
        ("bound", fmt(res.bound)),
        ("gap", fmt_gap(res.gap)),
        ("time", f"{res.time_s:.3f} s (prepare {res.prepare_time_s:.3f}, build {res.build_time_s:.3f}, "
                 f"solve {res.solve_time_s:.3f})"),
        ("solver", solver),
        ("verified", "yes" if res.verified else "no"),
        ("warm start", warm),
    ]
    if res.model_stats:
        rows.append(("model", fmt(res.model_stats)))
    if res.constraints:
        rows.append(("constraints", f"{len(res.constraints)} in force: " + ", ".join(
            str(c.get("at")) for c in res.constraints[:6]) + (" ..." if len(res.constraints) > 6 else "")))
    if res.conflict:
        rows.append(("conflict", "cannot hold together: " + ", ".join(res.conflict)))
    if res.message:
        rows.append(("message", res.message))
    violations = res.verification.get("violations") or []
    if violations:
        rows.append(("violations", "; ".join(map(str, violations[:5])) + (" ..." if len(violations) > 5 else "")))
    out.print(kv_table(rows))
    _print_metrics(out, res.metrics)


def _print_metrics(out: Console, metrics: Mapping[str, Any]) -> None:
    """Scalar metrics as one table; a metric that is a list of records (e.g. per layer) as a table of its own."""
    scalars = [(k, v) for k, v in metrics.items() if not _is_records(v)]
    if scalars:
        table = Table(title="metrics", title_justify="left")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, value in scalars:
            table.add_row(key, fmt(value))
        out.print(table)
    for key, value in metrics.items():
        if _is_records(value):
            table = Table(title=key, title_justify="left")
            cols = list(dict.fromkeys(c for rec in value for c in rec))
            for c in cols:
                table.add_column(c, justify="left" if isinstance(value[0].get(c), str) else "right")
            for rec in value:
                table.add_row(*(fmt(rec.get(c)) for c in cols))
            out.print(table)


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


# ------------------------------------------------------------------------------------------------ compare
@click.command()
@click.argument("instance", metavar="INSTANCE")
@click.option("--methods", callback=split_methods, default=None, metavar="A,B,...",
              help="Comma-separated methods (default: all of the problem's methods, in its order).")
@solver_options
@instance_options
def compare(instance: str, methods: list[str] | None, solver: str | None, time_limit: float | None,
            gap: float | None, seed: int, total_time_limit: float | None, capacity: int | None,
            alignment: int | None, objective: str | None, as_json: bool, quiet: bool) -> None:
    """Run several methods on INSTANCE and compare them.

    The table's last column is `objective / best`: each objective divided by the best verified objective
    (minimisation, so 1.00 is the best and larger is worse). --solver applies to the `exact` method.
    With --json: a list of Result.to_dict() objects, one per method, with `solution` set to null.
    Exit code 0 whatever the statuses. With --total-time-limit the command returns by then: each method gets at most
    the time left, and the methods it leaves out are `no_solution`, saying so. Interrupted (Ctrl-C: exit code 130;
    SIGTERM: 143), it still prints the methods that finished, the others marked as interrupted.
    """
    from dlaopt import harness
    from dlaopt.solvers.processes import interrupt_exit_code

    deadline, solver, err, log, inst, p = _start(instance, solver, total_time_limit, quiet or as_json,
                                                 {"capacity": capacity, "alignment": alignment, "objective": objective})
    names = methods or p.problem.methods_for(p.data)
    for name in names:
        check_method(p, name)
    printer = ProgressPrinter(err) if log else None
    if log:
        err.print(f"comparing {', '.join(names)} on {inst.name} ({inst.problem}, objective {inst.objective})")
    finished: list[Result] = []
    try:
        results = harness.compare(p, names, solver=solver, options=solve_options(time_limit, gap, seed, None, printer),
                                  deadline=deadline, on_result=finished.append)
    except KeyboardInterrupt as exc:
        code = interrupt_exit_code(exc)
        results = finished + [harness.not_started(p, n) for n in names[len(finished):]]
        for r in results[len(finished):]:
            r.message = "interrupted before it finished"
        _print_comparison(inst, results, as_json)
        click.echo("interrupted: the table holds the methods that finished", err=True)
        raise click.exceptions.Exit(code) from None
    if printer is not None:
        printer.flush()
    _print_comparison(inst, results, as_json)


def _print_comparison(inst: Any, results: list[Result], as_json: bool) -> None:
    if as_json:
        echo_json([{**r.to_dict(with_solution=False), "solution": None} for r in results])
        return
    best_values = [r.objective for r in results if r.verified and r.objective is not None]
    best = min(best_values) if best_values else None
    table = Table(title=f"{inst.name}: {inst.objective} (minimised)", title_justify="left")
    for col, justify in (("method", "left"), ("status", "left"), ("objective", "right"), ("bound", "right"),
                         ("gap", "right"), ("time [s]", "right"), ("verified", "left"), ("objective / best", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in results:
        table.add_row(r.method, r.status.value, fmt(r.objective), fmt(r.bound), fmt_gap(r.gap), f"{r.time_s:.3f}",
                      "yes" if r.verified else "no", _ratio(r.objective if r.verified else None, best))
    console().print(table)


def _ratio(value: float | None, best: float | None) -> str:
    if value is None or best is None:
        return "-"
    if best == 0:
        return "1.000" if value == 0 else "inf"
    return f"{value / best:.3f}"


# ------------------------------------------------------------------------------------------------ verify
@click.command()
@click.argument("instance", metavar="INSTANCE")
@click.argument("solution", metavar="SOLUTION")
@instance_options
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: verified, objective, violations, metrics, claimed_objective.")
def verify(instance: str, solution: str, capacity: int | None, alignment: int | None, objective: str | None,
           as_json: bool) -> None:
    """Check the solution file SOLUTION against INSTANCE with the problem's independent evaluator.

    Static allocation: INSTANCE may be a CSV of buffers (with --capacity) and SOLUTION a CSV with an offset column
    (what `dlaopt solve plan.csv --capacity N -o plan-solved.csv` writes; it may serve as INSTANCE too).
    Exit code 0 when the solution is verified (feasible), 1 when it is rejected, 2 for unreadable or malformed
    files (including a solution for another problem, or naming buffers or steps the instance does not have).
    """
    from dlaopt import harness
    from dlaopt.io import load_solution_document

    inst = load_instance_file(instance, capacity=capacity, alignment=alignment, objective=objective)
    doc = _offsets_document(inst, solution) if is_buffer_csv(solution) else load_solution_document(solution)
    p = prepare_instance(inst)
    try:
        ev = harness.verify(p, doc)
    except InputError as exc:
        raise exc.located(file=solution) from None
    claimed = doc.get("objective_value")
    data = {**ev.to_dict(), "claimed_objective": claimed}
    if as_json:
        echo_json(data)
    else:
        rows: list[tuple[str, Any]] = [
            ("instance", f"{inst.name} ({inst.problem})"),
            ("solution", f"{solution} (method {doc.get('method')}, instance {doc.get('instance')})"),
            ("verified", "yes" if ev.feasible else "no"),
            ("objective", f"{fmt(ev.objective)} ({inst.objective})"),
            ("claimed", fmt(claimed)),
            ("violations", str(len(ev.violations))),
        ]
        out = console()
        out.print(kv_table(rows))
        for v in ev.violations:
            out.print(f"  - {v}")
        if ev.metrics:
            _print_metrics(out, ev.metrics)
    if doc.get("instance") != inst.name:
        click.echo(f"warning: the solution names instance '{doc.get('instance')}', the instance is '{inst.name}'",
                   err=True)
    if not ev.feasible:
        raise click.exceptions.Exit(EXIT_REJECTED)




def _offsets_document(inst: Instance, path: str) -> dict[str, Any]:
    """A solution document of the offsets in the buffer CSV ``path`` (its ``offset`` column), for a
    static-allocation ``inst``; its buffers must be the instance's (same lifetimes and sizes)."""
    from dlaopt.io.buffers import read_buffer_table

    if inst.problem != "allocation":
        raise InputError(f"a .csv solution holds the offsets of buffers, and this is a '{inst.problem}' instance",
                         file=path, expected="a .yaml or .json solution file")
    table = read_buffer_table(path)
    if "offset" not in table.spelling:
        raise InputError("the file has no offset column", file=path,
                         expected="a placement: the buffers with an offset column")
    missing = [b.id for b in table.buffers.buffers if b.id not in table.offsets]
    if missing:
        raise InputError(f"{len(missing)} buffer(s) have no offset (the first: '{missing[0]}')", file=path,
                         expected="an offset for every buffer")
    ours = {b.id: b for b in inst.buffers.buffers}
    for b in table.buffers.buffers:
        mine = ours.get(b.id)
        if mine is not None and (mine.lower, mine.upper, mine.size) != (b.lower, b.upper, b.size):
            raise InputError(f"buffer '{b.id}' lives during [{b.lower}, {b.upper}) with {b.size} bytes, the "
                             f"instance's during [{mine.lower}, {mine.upper}) with {mine.size} bytes", file=path,
                             expected="the instance's buffers with their offsets")
    return {"problem": "allocation", "instance": inst.name, "method": "csv", "objective": inst.objective,
            "objective_value": None, "solution": {"offsets": dict(table.offsets), "memory": inst.arena.name}}


COMMANDS = [solve, compare, verify]
