"""The ``dlaopt`` command line: a thin layer over :mod:`dlaopt.harness` and :mod:`dlaopt.io`.

Commands (``dlaopt COMMAND --help`` for the options)::

    dlaopt solve INSTANCE      solve with one method (default: exact), optionally write the solution (-o)
    dlaopt compare INSTANCE    every method on one instance, with the ratio of each objective to the best
    dlaopt verify INSTANCE SOLUTION
                               check a solution file with the problem's independent evaluator
    dlaopt show INSTANCE       the instance, its hardware and the problem's summary of the prepared data
    dlaopt zoo | presets | solvers
                               the built-in networks, hardware presets and available solver strings
    dlaopt make ...            write an instance file for a zoo network on a hardware preset
    dlaopt schema              the instance JSON Schema
    dlaopt experiment ...      reproducible experiments (see ``EXPERIMENTS`` below)

Output: tables and reports go to stdout; logs and solver progress go to stderr. With ``--json`` stdout holds exactly
one JSON document (an object, or a list for ``compare``, ``zoo``, ``presets`` and ``solvers``); NaN and infinite
numbers are written as ``null``.

Exit codes:

* ``0`` — success. Solver trouble (time limit, no solution found, infeasible instance, a rejected solver answer) is
  *not* a failure of ``solve`` and ``compare``: it is the ``status`` of the result, which says it.
* ``1`` — ``verify`` rejected the solution; a ``compile`` stage could not hand a verified solution on (the message
  names the stage); or an internal error (any unexpected exception), printed as
  ``internal error: <message>`` with the traceback only when the environment variable ``DLAOPT_DEBUG`` is set.
* ``2`` — bad input: an unreadable or invalid instance or solution file, an instance the problem cannot use (raised
  in its prepare step), an unknown method, an unknown or unavailable solver, bad command-line usage. The message
  goes to stderr as ``error: <message naming the file and the key>``, never with a traceback.

Solver strings are checked before any work is done: a malformed string (not ``highs``, ``cpsat`` or
``pyomo:<name>``) and a ``pyomo:<name>`` that Pyomo does not report as available are bad input (exit 2), not a
result with status ``error``.

Heavy modules (the solver backends, Pyomo, OR-Tools, HiGHS) are imported inside the commands that need them, so
``dlaopt --help``, ``dlaopt zoo`` and ``dlaopt presets`` start fast.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import json
import math
import os
import sys
import time
import traceback
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from dlaopt import __version__
from dlaopt.errors import InputError
from dlaopt.hardware.model import Accelerator, Platform

if TYPE_CHECKING:
    from dlaopt.harness import Prepared, Result
    from dlaopt.io.instance import Instance
    from dlaopt.solvers.result import SolveOptions, TracePoint

EXIT_OK = 0
EXIT_REJECTED = 1  # verify: the solution is rejected
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
DEBUG_ENV = "DLAOPT_DEBUG"
PROGRESS_INTERVAL_S = 0.5  # at most ~2 progress lines per second
PROGRESS_DELAY_S = 1.0  # no progress lines during a solver's first second (short solves stay quiet)
_NON_TTY_WIDTH = 120


# ================================================================================================ error handling
class DlaoptGroup(click.Group):
    """The top-level group: turns exceptions raised by any (sub)command into the documented exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except InputError as exc:
            _fail(exc.render())
        except Exception as exc:
            from dlaopt.solvers.backends import SolverSpecError

            if isinstance(exc, SolverSpecError):
                _fail(str(exc))
            click.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
            if os.environ.get(DEBUG_ENV):
                click.echo(traceback.format_exc().rstrip(), err=True)
            else:
                click.echo(f"(set {DEBUG_ENV}=1 to see the traceback)", err=True)
            raise click.exceptions.Exit(EXIT_INTERNAL) from None


def _fail(message: str) -> typing.NoReturn:
    """Bad input: ``error: <message>`` on stderr and exit code 2."""
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(EXIT_BAD_INPUT)


# ================================================================================================ output helpers
def _console(*, stderr: bool = False) -> Console:
    """A rich console on the *current* stdout/stderr (so that test runners capturing them see the output)."""
    stream = sys.stderr if stderr else sys.stdout
    tty = bool(getattr(stream, "isatty", lambda: False)())
    return Console(file=stream, highlight=False, markup=False, emoji=False, width=None if tty else _NON_TTY_WIDTH,
                   soft_wrap=not tty)


def _jsonable(value: Any) -> Any:
    """``value`` as strict JSON data: NaN/inf become ``None``, numpy scalars Python numbers, tuples lists."""
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Path):
        return str(value)
    item = getattr(value, "item", None)  # numpy scalars and 0-d arrays
    if callable(item) and type(value).__module__ == "numpy":
        return _jsonable(item())
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return _jsonable(tolist())
    return str(value)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(_jsonable(data), indent=2, allow_nan=False))


def _fmt(value: Any) -> str:
    """A number or value for humans (thousands separators, 4 significant digits for small fractions)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e18:
            return f"{int(value):,}"
        return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) if not isinstance(v, (list, tuple)) else " ".join(map(str, v)) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    return str(value)


def _fmt_gap(gap: float | None) -> str:
    if gap is None:
        return "-"
    return "inf" if math.isinf(gap) else f"{100 * gap:.2f}%"


def _fmt_bytes(n: int | None, *, exact: bool = True) -> str:
    """A byte count in the largest binary unit that divides it (``exact``) or, rounded, that it reaches."""
    if n is None:
        return "unbounded"
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size:,} {unit}"
        if n >= size and not exact:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,} B"


def _fmt_params(params: Mapping[str, Any]) -> str:
    """Parameters as they are written on the command line (``--param k=v``)."""
    return ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items()) or "-"


def _kv_table(rows: Sequence[tuple[str, Any]], *, title: str | None = None) -> Table:
    table = Table(title=title, show_header=False, box=None, pad_edge=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value if isinstance(value, str) else _fmt(value))
    return table


class _ProgressPrinter:
    """A ``SolveOptions.progress`` callback printing incumbent and bound to stderr, at most every ``interval``."""

    def __init__(self, console: Console, interval: float = PROGRESS_INTERVAL_S,
                 delay: float = PROGRESS_DELAY_S) -> None:
        self.console = console
        self.interval = interval
        self.delay = delay
        self._last = -math.inf
        self._pending: TracePoint | None = None
        self._started = False

    def __call__(self, point: TracePoint) -> None:
        now = time.monotonic()
        if point.time_s < self.delay or now - self._last < self.interval:
            self._pending = point  # short solves print nothing; long ones at most one line per interval
            return
        self._last = now
        self._pending = None
        self._started = True
        self._print(point)

    def flush(self) -> None:
        """After a solve that printed progress, print the last point held back by the throttle (its final state)."""
        if self._started and self._pending is not None:
            self._print(self._pending)
        self._pending = None
        self._started = False
        self._last = -math.inf

    def _print(self, p: TracePoint) -> None:
        from dlaopt.solvers.result import relative_gap

        gap = relative_gap(p.incumbent, p.bound)
        self.console.print(f"  {p.time_s:8.2f} s   incumbent {_fmt(p.incumbent):>14}   bound {_fmt(p.bound):>14}"
                           f"   gap {_fmt_gap(gap):>8}")


# ================================================================================================ shared pieces
def _load(path: str) -> Instance:
    from dlaopt.io import load_instance

    return load_instance(path)


def _prepare(instance: Instance) -> Prepared:
    """Prepare ``instance``; an :class:`InputError` from the problem's prepare step gets the file name added."""
    from dlaopt.harness import prepare

    try:
        return prepare(instance)
    except InputError as exc:
        raise exc.located(file=instance.source) from None


def _check_method(p: Prepared, name: str) -> None:
    try:
        p.problem.method(name)
    except KeyError:
        raise InputError(f"unknown method '{name}' for problem '{p.problem.name}'",
                         expected="one of: " + ", ".join(m.name for m in p.problem.methods)) from None


def check_solver(solver: str | None) -> str | None:
    """Validate a ``--solver`` string before any work: malformed -> SolverSpecError, an unavailable Pyomo solver ->
    InputError (both exit 2). Returns the stripped string."""
    if solver is None:
        return None
    from dlaopt.solvers.backends import PYOMO_PREFIX, available_solvers, parse_solver

    kind, name = parse_solver(solver)
    if kind == "pyomo":
        import io
        import logging

        import pyomo.environ  # noqa: F401  (registers the solver plugins)
        from pyomo.common.log import LoggingIntercept
        from pyomo.opt import SolverFactory

        try:
            with LoggingIntercept(io.StringIO(), "pyomo", logging.WARNING):
                ok = bool(SolverFactory(name).available(exception_flag=False))
        except Exception:
            ok = False
        if not ok:
            raise InputError(f"solver '{PYOMO_PREFIX}{name}' is not available through Pyomo",
                             expected="one of the available solvers: " + ", ".join(available_solvers()))
        return f"{PYOMO_PREFIX}{name}"
    return kind


def _solve_options(time_limit: float | None, gap: float | None, seed: int, threads: int | None,
                   progress: _ProgressPrinter | None) -> SolveOptions:
    from dlaopt.solvers.result import SolveOptions

    opts = SolveOptions(time_limit=time_limit, seed=seed, threads=threads, progress=progress)
    if gap is not None:
        opts.mip_rel_gap = gap
    return opts


def _parse_assignments(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, Any]:
    """``k=v`` pairs; ``v`` is read as YAML (``3`` int, ``0.5`` float, ``true`` bool, ``[a, b]`` a list, ``{P: 8}`` a
    mapping, else a string)."""
    import yaml

    out: dict[str, Any] = {}
    for text in values:
        key, sep, raw = text.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{text!r} is not of the form key=value", ctx=ctx, param=param)
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        if value is not None and not isinstance(value, (str, int, float, bool, list, dict)):
            value = raw  # dates and other YAML types: keep the literal text
        out[key.strip()] = value
    return out


def _split_methods(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [m.strip() for m in value.split(",") if m.strip()]
    if not names:
        raise click.BadParameter("give at least one method name", ctx=ctx, param=param)
    return names


# common options of solve and compare
def _solver_options(f: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--solver", "solver", metavar="S", default=None,
                     help="MILP solver for the exact model: highs, cpsat or pyomo:NAME (see `dlaopt solvers`); "
                          "default: the method's own."),
        click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SEC",
                     help="Wall-clock limit of the solver in seconds (default: none)."),
        click.option("--gap", type=click.FloatRange(min=0), default=None, metavar="G",
                     help="Relative MIP gap at which the solver stops (default: 1e-4)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Solver random seed."),
        click.option("--json", "as_json", is_flag=True, help="Print JSON to stdout (no progress on stderr)."),
        click.option("--quiet", "-q", is_flag=True, help="No log or progress lines on stderr."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


# ================================================================================================ the group
@click.group(cls=DlaoptGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="dlaopt")
def cli() -> None:
    """dlaopt: exact optimization models for the hard decisions of a deep-learning-accelerator compiler.

    Exit codes: 0 success (solver trouble such as a time limit or an infeasible instance is reported as the
    result's status, not as a failure); 1 internal error, or `verify` rejected the solution; 2 bad input
    (invalid file, unknown method or solver, usage error). Set DLAOPT_DEBUG=1 to see tracebacks of internal errors.
    """


# ------------------------------------------------------------------------------------------------ solve
@cli.command()
@click.argument("instance", metavar="INSTANCE")
@click.option("--method", "-m", default="exact", show_default=True, help="A method of the instance's problem.")
@_solver_options
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Solver threads (default: the solver's).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="SOLUTION",
              help="Write the solution document here (JSON for .json, else YAML); read it back with `dlaopt verify`.")
def solve(instance: str, method: str, solver: str | None, time_limit: float | None, gap: float | None, seed: int,
          threads: int | None, as_json: bool, output: Path | None, quiet: bool) -> None:
    """Solve INSTANCE with one method and verify the answer.

    Without --json: a short report (status, objective, bound, gap, time, solver, verified, metrics, warm start).
    With --json: one JSON object, Result.to_dict() (keys problem, instance, method, objective_name, status,
    objective, bound, gap, time_s, ..., verified, verification, metrics, warm_start, trace, message, solution).
    Exit code 0 whatever the status (optimal, feasible, infeasible, no_solution, error): the status says it.
    """
    from dlaopt import harness

    solver = check_solver(solver)
    err = _console(stderr=True)
    log = not (quiet or as_json)
    inst = _load(instance)
    p = _prepare(inst)
    _check_method(p, method)
    printer = _ProgressPrinter(err) if log else None
    if solver is not None and p.problem.method(method).kind != "exact" and not quiet:
        err.print(f"note: --solver is ignored by the heuristic method '{method}'")
    if log:
        err.print(f"solving {inst.name} ({inst.problem}, objective {inst.objective}) with method '{method}'"
                  + (f", solver {solver}" if solver else ""))
    res = harness.solve(p, method, solver=solver, options=_solve_options(time_limit, gap, seed, threads, printer))
    if printer is not None:
        printer.flush()
    if output is not None:
        from dlaopt.io import save_solution_document

        written = save_solution_document(res.solution_document(), output)
        if not quiet:
            note = "" if res.solution else " (the result has no solution: the document's solution is empty)"
            err.print(f"solution written to {written}{note}")
    if as_json:
        _echo_json(res.to_dict())
        return
    _print_result(res)


def _print_result(res: Result) -> None:
    out = _console()
    ws = res.warm_start
    warm = "-"
    if ws:
        warm = f"{ws.get('method')} (objective {_fmt(ws.get('objective'))})"
        if ws.get("rejected"):
            warm += f", rejected: {ws['rejected']}"
    solver = res.solver or "-"
    if res.solver_version:
        solver += f" {res.solver_version}"
    rows: list[tuple[str, Any]] = [
        ("instance", f"{res.instance} ({res.problem})"),
        ("method", res.method),
        ("status", res.status.value),
        ("objective", f"{_fmt(res.objective)} ({res.objective_name})"),
        ("bound", _fmt(res.bound)),
        ("gap", _fmt_gap(res.gap)),
        ("time", f"{res.time_s:.3f} s (prepare {res.prepare_time_s:.3f}, build {res.build_time_s:.3f}, "
                 f"solve {res.solve_time_s:.3f})"),
        ("solver", solver),
        ("verified", "yes" if res.verified else "no"),
        ("warm start", warm),
    ]
    if res.model_stats:
        rows.append(("model", _fmt(res.model_stats)))
    if res.message:
        rows.append(("message", res.message))
    violations = res.verification.get("violations") or []
    if violations:
        rows.append(("violations", "; ".join(map(str, violations[:5])) + (" ..." if len(violations) > 5 else "")))
    out.print(_kv_table(rows))
    _print_metrics(out, res.metrics)


def _print_metrics(out: Console, metrics: Mapping[str, Any]) -> None:
    """Scalar metrics as one table; a metric that is a list of records (e.g. per layer) as a table of its own."""
    scalars = [(k, v) for k, v in metrics.items() if not _is_records(v)]
    if scalars:
        table = Table(title="metrics", title_justify="left")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, value in scalars:
            table.add_row(key, _fmt(value))
        out.print(table)
    for key, value in metrics.items():
        if _is_records(value):
            table = Table(title=key, title_justify="left")
            cols = list(dict.fromkeys(c for rec in value for c in rec))
            for c in cols:
                table.add_column(c, justify="left" if isinstance(value[0].get(c), str) else "right")
            for rec in value:
                table.add_row(*(_fmt(rec.get(c)) for c in cols))
            out.print(table)


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


# ------------------------------------------------------------------------------------------------ compare
@cli.command()
@click.argument("instance", metavar="INSTANCE")
@click.option("--methods", callback=_split_methods, default=None, metavar="A,B,...",
              help="Comma-separated methods (default: all of the problem's methods, in its order).")
@_solver_options
def compare(instance: str, methods: list[str] | None, solver: str | None, time_limit: float | None,
            gap: float | None, seed: int, as_json: bool, quiet: bool) -> None:
    """Run several methods on INSTANCE and compare them.

    The table's last column is `objective / best`: each objective divided by the best verified objective
    (minimisation, so 1.00 is the best and larger is worse). --solver applies to the `exact` method.
    With --json: a list of Result.to_dict() objects, one per method, with `solution` set to null.
    Exit code 0 whatever the statuses.
    """
    from dlaopt import harness

    solver = check_solver(solver)
    err = _console(stderr=True)
    log = not (quiet or as_json)
    inst = _load(instance)
    p = _prepare(inst)
    names = methods or [m.name for m in p.problem.methods]
    for name in names:
        _check_method(p, name)
    printer = _ProgressPrinter(err) if log else None
    if log:
        err.print(f"comparing {', '.join(names)} on {inst.name} ({inst.problem}, objective {inst.objective})")
    results = harness.compare(p, names, solver=solver, options=_solve_options(time_limit, gap, seed, None, printer))
    if printer is not None:
        printer.flush()
    if as_json:
        _echo_json([{**r.to_dict(with_solution=False), "solution": None} for r in results])
        return
    best_values = [r.objective for r in results if r.verified and r.objective is not None]
    best = min(best_values) if best_values else None
    table = Table(title=f"{inst.name}: {inst.objective} (minimised)", title_justify="left")
    for col, justify in (("method", "left"), ("status", "left"), ("objective", "right"), ("bound", "right"),
                         ("gap", "right"), ("time [s]", "right"), ("verified", "left"), ("objective / best", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in results:
        table.add_row(r.method, r.status.value, _fmt(r.objective), _fmt(r.bound), _fmt_gap(r.gap), f"{r.time_s:.3f}",
                      "yes" if r.verified else "no", _ratio(r.objective if r.verified else None, best))
    _console().print(table)


def _ratio(value: float | None, best: float | None) -> str:
    if value is None or best is None:
        return "-"
    if best == 0:
        return "1.000" if value == 0 else "inf"
    return f"{value / best:.3f}"


# ------------------------------------------------------------------------------------------------ verify
@cli.command()
@click.argument("instance", metavar="INSTANCE")
@click.argument("solution", metavar="SOLUTION")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: verified, objective, violations, metrics, claimed_objective.")
def verify(instance: str, solution: str, as_json: bool) -> None:
    """Check the solution file SOLUTION against INSTANCE with the problem's independent evaluator.

    Exit code 0 when the solution is verified (feasible), 1 when it is rejected, 2 for unreadable or malformed
    files (including a solution for another problem, or naming buffers or steps the instance does not have).
    """
    from dlaopt import harness
    from dlaopt.io import load_solution_document

    inst = _load(instance)
    doc = load_solution_document(solution)
    p = _prepare(inst)
    try:
        ev = harness.verify(p, doc)
    except InputError as exc:
        raise exc.located(file=solution) from None
    claimed = doc.get("objective_value")
    data = {**ev.to_dict(), "claimed_objective": claimed}
    if as_json:
        _echo_json(data)
    else:
        rows: list[tuple[str, Any]] = [
            ("instance", f"{inst.name} ({inst.problem})"),
            ("solution", f"{solution} (method {doc.get('method')}, instance {doc.get('instance')})"),
            ("verified", "yes" if ev.feasible else "no"),
            ("objective", f"{_fmt(ev.objective)} ({inst.objective})"),
            ("claimed", _fmt(claimed)),
            ("violations", str(len(ev.violations))),
        ]
        out = _console()
        out.print(_kv_table(rows))
        for v in ev.violations:
            out.print(f"  - {v}")
        if ev.metrics:
            _print_metrics(out, ev.metrics)
    if doc.get("instance") != inst.name:
        click.echo(f"warning: the solution names instance '{doc.get('instance')}', the instance is '{inst.name}'",
                   err=True)
    if not ev.feasible:
        raise click.exceptions.Exit(EXIT_REJECTED)


# ------------------------------------------------------------------------------------------------ gantt
@cli.command()
@click.argument("instance", metavar="INSTANCE")
@click.argument("solution", metavar="SOLUTION")
@click.option("-o", "--output", "output", required=True, help="The SVG file to write.")
def gantt(instance: str, solution: str, output: str) -> None:
    """Draw a multi-accelerator schedule as SVG: a lane per sub-accelerator with its jobs (coloured by tenant) and
    the system bandwidth each sub-accelerator is allocated over time, as the fluid evaluator simulates it."""
    from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, check
    from dlaopt.formulations.multiaccel.gantt import gantt_svg
    from dlaopt.io import load_solution_document

    inst = _load(instance)
    if inst.problem != "multiaccel":
        raise InputError(f"a Gantt chart needs a multi-accelerator instance, this one is '{inst.problem}'",
                         file=instance, path=("problem",), expected="multiaccel")
    doc = load_solution_document(solution)
    p = _prepare(inst)
    if doc.get("problem") != "multiaccel":
        raise InputError(f"the solution is for problem '{doc.get('problem')}'", file=solution, path=("problem",),
                         expected="multiaccel")
    try:
        sol = p.problem.solution_from_dict(p.data, doc.get("solution") or {})
    except InputError as exc:
        raise exc.located(file=solution) from None
    violations = check(p.data, sol)
    if violations:
        raise InputError(f"the schedule is not valid: {violations[0]}", file=solution, path=("solution",))
    sim = FluidEvaluator(p.data).simulate(sol)
    svg = gantt_svg(sim, p.data.table, p.data.system_bandwidth,
                    title=f"{inst.name} — {doc.get('method', 'solution')}")
    Path(output).write_text(svg, encoding="utf-8")
    click.echo(f"{output}: {p.data.table.n_jobs} jobs on {p.data.table.n_accelerators} sub-accelerators, makespan "
               f"{_fmt(sim.makespan * 1e3)} ms", err=True)


# ------------------------------------------------------------------------------------------------ plot
def _parse_size(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    parts = text.lower().replace(",", "x").split("x")
    try:
        w, h = (float(v) for v in parts)
    except ValueError:
        w = h = math.nan
    if not (len(parts) == 2 and 1 <= w <= 100 and 1 <= h <= 100):
        raise InputError(f"--size {text!r} is not a figure size", path=("size",),
                         expected="WIDTHxHEIGHT in inches, each between 1 and 100, e.g. 10x6")
    return w, h


@cli.command()
@click.argument("instance", metavar="INSTANCE")
@click.argument("solution", metavar="[SOLUTION]", required=False)
@click.option("-o", "--output", required=True, metavar="FILE.png|svg",
              help="The image to write: PNG or SVG, by the suffix.")
@click.option("--kind", default=None, metavar="KIND",
              help="The plot kind (default: the problem's first); an unknown kind lists the valid ones.")
@click.option("--compare", "compare_methods", callback=_split_methods, default=None, metavar="A,B,...",
              help="Run these methods (as `dlaopt compare`) and plot the comparison instead of a solution file.")
@click.option("--title", default=None, help="The figure's title (default: instance, method and what is shown).")
@click.option("--size", default=None, metavar="WxH", help="Figure size in inches (default: chosen per plot).")
@click.option("--dpi", type=click.IntRange(min=20, max=1200), default=None, help="PNG resolution (default: 100).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SEC",
              help="With --compare: wall-clock limit of each exact method.")
@click.option("--seed", type=int, default=0, show_default=True, help="With --compare: solver random seed.")
@click.option("--quiet", "-q", is_flag=True, help="No log lines on stderr.")
def plot(instance: str, solution: str | None, output: str, kind: str | None, compare_methods: list[str] | None,
         title: str | None, size: str | None, dpi: int | None, time_limit: float | None, seed: int,
         quiet: bool) -> None:
    """Plot a solution of INSTANCE (the solution file SOLUTION, as written by `dlaopt solve -o`), or compare
    methods on it (--compare exact,greedy), as PNG or SVG.

    Kinds per problem (the first is the default): pinning: occupancy; mapping: mapping, loopnest, breakdown,
    layers; systolic: layers; multiaccel: gantt; bankmap: layout. With --compare: pinning: transfers; mapping and
    systolic: layers; multiaccel: gantt, makespan; bankmap: copies; and for every problem objective and trace (the
    exact solver's incumbent and bound over time, the other methods' values as lines).
    """
    from dlaopt.plots import SUFFIXES as PLOT_SUFFIXES
    from dlaopt.plots import check_kind, plot_comparison, plot_solution, save

    if Path(output).suffix.lower() not in PLOT_SUFFIXES:
        raise InputError(f"cannot write a plot as '{Path(output).suffix or '(no suffix)'}'", file=output,
                         path=("output",), expected="a file name ending in .png or .svg")
    if (solution is None) == (compare_methods is None):
        raise InputError("give either a SOLUTION file or --compare METHODS (not both, not neither)",
                         expected="plot INSTANCE SOLUTION -o FILE, or plot INSTANCE --compare A,B -o FILE")
    fig_size = _parse_size(size)
    inst = _load(instance)
    p = _prepare(inst)
    try:
        if kind is not None:
            check_kind(inst.problem, kind, comparison=compare_methods is not None)
    except InputError as exc:
        raise exc.located(file=instance) from None
    err = _console(stderr=True)
    if compare_methods is not None:
        from dlaopt import harness

        for name in compare_methods:
            _check_method(p, name)
        if not quiet:
            err.print(f"comparing {', '.join(compare_methods)} on {inst.name} ({inst.problem}, objective "
                      f"{inst.objective})")
        results = harness.compare(p, compare_methods, options=_solve_options(time_limit, None, seed, None, None))
        fig = plot_comparison(results, kind=kind, title=title, prepared=p)
    else:
        from dlaopt.io import load_solution_document

        assert solution is not None
        doc = load_solution_document(solution)
        if doc.get("problem") != inst.problem:
            raise InputError(f"the solution is for problem '{doc.get('problem')}', the instance is "
                             f"'{inst.problem}'", file=solution, path=("problem",), expected=inst.problem)
        if not doc.get("solution"):
            raise InputError("the solution document has no solution (the result it came from had none)",
                             file=solution, path=("solution",), expected=f"a '{inst.problem}' solution")
        if doc.get("instance") != inst.name and not quiet:
            err.print(f"warning: the solution names instance '{doc.get('instance')}', the instance is '{inst.name}'")
        try:
            fig = plot_solution(p, doc["solution"], kind=kind, title=title, method=doc.get("method"))
        except InputError as exc:
            raise exc.located(file=solution) from None
    if fig_size is not None:
        fig.set_size_inches(*fig_size)
    written = save(fig, output, dpi=dpi)
    w, h = fig.get_size_inches()
    res = dpi or fig.dpi
    if not quiet:
        err.print(f"plot written to {written} ({w:g} x {h:g} in at {res:g} dpi = {round(w * res)} x {round(h * res)} "
                  "px)")


# ------------------------------------------------------------------------------------------------ bench
@cli.command()
@click.argument("suite", metavar="SUITE")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Output folder (default: results/bench/SUITE).")
@click.option("--no-resume", is_flag=True,
              help="Run every pair again (default: skip the pairs already finished in DIR/results.jsonl).")
@click.option("--update-readme", is_flag=True,
              help="Replace the block between <!-- bench:SUITE --> and <!-- /bench:SUITE --> in the README with "
                   "the headline table.")
@click.option("--readme", type=click.Path(dir_okay=False, path_type=Path), default=Path("README.md"),
              show_default=True, metavar="FILE", help="The README that --update-readme edits.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or log lines on stderr.")
def bench(suite: str, out_dir: Path | None, no_resume: bool, update_readme: bool, readme: Path,
          quiet: bool) -> None:
    """Run the benchmark suite SUITE (a name from instances/suites/, or a suite file) and print its table.

    Every (instance, method) pair of the suite is solved and verified; one JSON line per finished pair is appended
    to DIR/results.jsonl, so an interrupted run (Ctrl-C) resumes where it stopped and skips finished pairs. At the
    end DIR holds results.csv, results.json and results.md (instance, method, status, objective, bound, gap, time,
    ratio to the best objective of the instance, verified, with the environment: versions, threads, machine), and
    the Markdown is printed. Exit code 0 whatever the statuses; 130 when interrupted.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dlaopt.bench import BenchEvent, load_suite, main_summary, readme_block, run_suite
    from dlaopt.bench import update_readme as write_readme_block

    err = _console(stderr=True)
    loaded = load_suite(suite)  # a bad suite (or README, below) fails here with exit 2, before anything runs
    if update_readme:
        readme_block(readme, loaded.name)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=quiet or not err.is_terminal, transient=True) as bar:
        task = bar.add_task(f"bench {loaded.name}", total=len(loaded.pairs))

        def on_event(ev: BenchEvent) -> None:
            if ev.kind == "start":
                bar.update(task, completed=ev.done, total=ev.total)
                if ev.done and not quiet:
                    err.print(f"resuming: {ev.done} of {ev.total} pairs already finished")
            elif ev.kind == "run":
                bar.update(task, description=f"{loaded.name}: {ev.entry} · {ev.method}")
            else:
                bar.update(task, completed=ev.done)

        try:
            report = run_suite(loaded, out_dir, resume=not no_resume, progress=on_event)
        except KeyboardInterrupt:
            bar.stop()
            click.echo(f"interrupted: finished pairs are kept in {out_dir or 'results/bench/' + loaded.name}; "
                       "run the same command again to resume", err=True)
            raise click.exceptions.Exit(130) from None
    click.echo(report.markdown, nl=False)
    if not quiet:
        err.print(main_summary(report))
        err.print("files: " + ", ".join(str(p) for p in report.paths.values()))
    if update_readme:
        write_readme_block(readme, report.suite.name, report.headline)
        if not quiet:
            err.print(f"{readme}: the bench:{report.suite.name} block now holds the headline table")


# ------------------------------------------------------------------------------------------------ sweep
@cli.command()
@click.argument("sweep_file", metavar="SWEEP.yaml")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Output folder (default: results/sweeps/NAME).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on the Dask cluster of this scheduler (e.g. tcp://HOST:8786) instead of a local one.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Worker processes of the local Dask cluster (one thread each).")
@click.option("--engine", type=click.Choice(["dask", "local"]), default="dask", show_default=True,
              help="dask: tasks on a Dask cluster; local: one after the other in this process.")
@click.option("--no-resume", is_flag=True,
              help="Run every task again (default: skip the tasks already finished in DIR/results.jsonl).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or log lines on stderr.")
@click.option("--verbose", "-v", is_flag=True, help="Also Dask's informational log messages.")
def sweep(sweep_file: str, out_dir: Path | None, scheduler: str | None, workers: int, engine: str, no_resume: bool,
          quiet: bool, verbose: bool) -> None:
    """Run the sweep SWEEP.yaml (a file, or a name from instances/sweeps/): workloads x grid x methods, one task per
    (workload, grid point) on Dask, and print the summary table.

    Each finished task's records are appended to DIR/results.jsonl at once, so a killed or interrupted run keeps
    them and the next run skips them. At the end DIR holds results.csv, results.json, results.md and summary.png
    (and thesis_sweep.* for `report: thesis-table`). Exit code 0 whatever the statuses; 130 when interrupted.
    """
    from dlaopt.sweep import run_cli

    code = run_cli(sweep_file, out_dir, scheduler=scheduler, workers=workers, engine=typing.cast(Any, engine),
                   resume=not no_resume, quiet=quiet, verbose=verbose)
    if code:
        raise click.exceptions.Exit(code)


# ------------------------------------------------------------------------------------------------ show
# ================================================================================================ compile
@cli.command(name="compile")
@click.argument("workload", metavar="WORKLOAD")
@click.option("--hardware", required=True, metavar="PRESET|FILE",
              help="The accelerator: a preset name (see `dlaopt presets`) or a hardware / instance file.")
@click.option("--platform", default=None, metavar="NAME|FILE",
              help="A multi-accelerator platform (e.g. magma-s2): adds the job-assignment stage.")
@click.option("--param", "params", multiple=True, callback=_parse_assignments, metavar="K=V",
              help="A network parameter (repeatable; zoo networks, or batch / dims of an ONNX model).")
@click.option("--hw", "hw_params", multiple=True, callback=_parse_assignments, metavar="K=V",
              help="A preset parameter (repeatable), e.g. --hw spad_kb=256.")
@click.option("--platform-param", "platform_params", multiple=True, callback=_parse_assignments, metavar="K=V",
              help="A platform parameter (repeatable), e.g. --platform-param system_bandwidth_gbps=16.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Where the report goes (default: compile-<network>/).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              metavar="SEC", help="Limit of every exact solve (the mapping stage spreads it over the layers).")
@click.option("--tenants", type=click.IntRange(min=1), default=None, metavar="N",
              help="Requests of the network scheduled on the platform (default: one per sub-accelerator).")
@click.option("--mapping-objective", type=click.Choice(["edp", "energy", "latency"]), default="edp",
              show_default=True, help="Objective of the mapping stage.")
@click.option("--methods", "stage_methods", multiple=True, callback=_parse_assignments, metavar="STAGE=A,B",
              help="Methods of a stage (repeatable), e.g. --methods pinning=greedy,exact.")
@click.option("--seed", type=int, default=0, show_default=True, help="Solver random seed.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Solver threads (default: the solver's).")
@click.option("--no-plots", is_flag=True, help="Skip the plots.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report to stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
def compile_(workload: str, hardware: str, platform: str | None, params: dict[str, Any], hw_params: dict[str, Any],
             platform_params: dict[str, Any], out_dir: Path | None, time_limit: float, tenants: int | None,
             mapping_objective: str, stage_methods: dict[str, Any], seed: int, threads: int | None, no_plots: bool,
             as_json: bool, quiet: bool) -> None:
    """Compile WORKLOAD (a zoo name, .onnx model, workload or instance file): mapping -> tensor pinning -> bank
    mapping -> (with --platform) job assignment, every stage verified; writes report.md, report.json, each stage's
    instance and solution (re-check with `dlaopt verify`) and plots."""
    from dlaopt.pipeline import (
        DEFAULT_METHODS,
        CompileOptions,
        StageFailed,
        compile_network,
        hardware_document,
        workload_document,
        write_report,
    )

    methods = {k: tuple(m.strip() for m in str(v).split(",") if m.strip()) for k, v in stage_methods.items()}
    for k in methods:
        if k not in DEFAULT_METHODS:
            _fail(f"--methods: unknown stage '{k}' (expected one of {', '.join(DEFAULT_METHODS)})")
    err = _console(stderr=True)

    def progress(stage: str, event: str, outcome: Any) -> None:
        if quiet or as_json:
            return
        if event == "start":
            err.print(f"{stage} ...")
        else:
            err.print(f"  {stage}: {outcome.chosen.method} {_fmt(outcome.chosen.objective)} "
                      f"({outcome.chosen.status.value}, verified) in {outcome.time_s:.1f} s")

    wdoc = workload_document(workload, params)
    hdoc = hardware_document(hardware, hw_params)
    pdoc = hardware_document(platform, platform_params, platform=True) if platform else None
    opts = CompileOptions(mapping_objective=mapping_objective, methods={**DEFAULT_METHODS, **methods},
                          time_limit=time_limit, seed=seed, threads=threads, tenants=tenants, progress=progress)
    try:
        report = compile_network(wdoc, hdoc, pdoc, opts)
    except StageFailed as exc:
        click.echo(f"error: {exc}", err=True)
        raise click.exceptions.Exit(EXIT_REJECTED) from None
    folder = out_dir or Path(f"compile-{report.network}")
    paths = write_report(report, folder, plots=not no_plots)
    if as_json:
        _echo_json(json.loads(paths["json"].read_text()))
        return
    e = report.end_to_end
    out = _console()
    out.print(f"{report.network}: {_fmt(e['cycles'])} cycles ({e['latency_s'] * 1e3:.4g} ms), "
              f"{e['energy_pj'] * 1e-9:.4g} mJ, {_fmt(e['transfer_bytes'])} B to/from main memory")
    if "platform" in e:
        p = e["platform"]
        out.print(f"platform: {p['tenants']} requests in {p['makespan_s'] * 1e3:.4g} ms "
                  f"({p['requests_per_s']:.4g} requests/s)")
    out.print(f"report: {paths['markdown']} (and report.json, stages/, plots/)")


def _workload_dict(inst: Instance) -> dict[str, Any]:
    from dlaopt.workload.jobs import InlineJobs, TaskGroup

    w = inst.workload
    if isinstance(w, TaskGroup):
        return {"task": w.task, "group_size": w.group_size, "seed": w.seed, "batch": w.batch or "network default"}
    if isinstance(w, InlineJobs):
        return {"jobs": len(w.jobs), "tenants": len({j.tenant for j in w.jobs}), "ops": sum(j.ops for j in w.jobs)}
    return w.summary()


def _platform_dict(inst: Instance) -> dict[str, Any]:
    plat = inst.platform
    return {"name": plat.name, "system_bandwidth_gbps": plat.system_bandwidth_bytes_per_s / 1e9,
            "accelerators": [_hardware_dict(a) for a in plat.accelerators]}


def _hardware_dict(acc: Accelerator) -> dict[str, Any]:
    return {
        "name": acc.name,
        "description": acc.description,
        "clock_mhz": acc.clock_hz / 1e6,
        "pe_array": {"axes": [list(a) for a in acc.pe_array.axes], "num_pes": acc.pe_array.num_pes,
                     "peak_macs_per_cycle": acc.pe_array.peak_macs_per_cycle, "vector_lanes": acc.pe_array.lanes},
        "dma": {"bandwidth_bytes_per_cycle": acc.dma.bandwidth_bytes_per_cycle,
                "latency_cycles": acc.dma.latency_cycles},
        "memories": [
            {"name": m.name, "kind": m.kind.value, "capacity_bytes": m.capacity_bytes, "instances": m.instances,
             "access": m.access.value, "holds": sorted(r.value for r in m.holds),
             "bandwidth_bytes_per_cycle": m.bandwidth_bytes_per_cycle}
            for m in acc.memories
        ],
        "params": dict(acc.params),
    }


@cli.command()
@click.argument("instance", metavar="INSTANCE")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: file, problem, name, objective, options, workload, hardware, prepared.")
def show(instance: str, as_json: bool) -> None:
    """Show INSTANCE: problem, objective, options, workload, hardware and the problem's prepared data.

    The instance is prepared as for solving, so an instance the problem cannot use is an error (exit 2).
    """
    inst = _load(instance)
    p = _prepare(inst)
    data = {
        "file": inst.source,
        "problem": inst.problem,
        "name": inst.name,
        "objective": inst.objective,
        "options": dict(inst.options),
        "workload": _workload_dict(inst),
        "hardware": (_platform_dict(inst) if isinstance(inst.hardware, Platform)
                     else _hardware_dict(inst.accelerator)),
        "prepared": p.problem.describe(p.data),
        "infeasible": p.problem.infeasibility_reason(p.data),
    }
    if as_json:
        _echo_json(data)
        return
    out = _console()
    hw = data["hardware"]
    out.print(_kv_table([
        ("instance", f"{inst.name} ({inst.source})"),
        ("problem", f"{inst.problem}: {p.problem.title}"),
        ("objective", inst.objective),
        ("options", _fmt_params(data["options"])),
        ("infeasible", data["infeasible"] or "no (not known to be)"),
    ]))
    out.print(_kv_table(list(data["workload"].items()), title="workload"))
    if isinstance(inst.hardware, Platform):
        out.print(_kv_table([("name", hw["name"]),
                             ("system bandwidth", f"{_fmt(hw['system_bandwidth_gbps'])} GB/s")], title="platform"))
        for sub in hw["accelerators"]:
            _print_accelerator(out, sub)
    else:
        _print_accelerator(out, hw)
    if data["prepared"]:
        out.print(_kv_table(list(data["prepared"].items()), title=f"{inst.problem} (prepared)"))
    methods = Table(title="methods", title_justify="left")
    for col in ("method", "kind", "default solver", "description"):
        methods.add_column(col)
    for m in p.problem.methods:
        methods.add_row(m.name, m.kind, m.default_solver or "-", m.description)
    out.print(methods)


def _print_accelerator(out: Any, hw: dict[str, Any]) -> None:
    out.print(_kv_table([
        ("name", hw["name"]),
        ("clock", f"{_fmt(hw['clock_mhz'])} MHz"),
        ("PE array", " x ".join(f"{n} {s}" for n, s in hw["pe_array"]["axes"])
         + f" ({_fmt(hw['pe_array']['peak_macs_per_cycle'])} MACs/cycle)"),
        ("DMA", f"{_fmt(hw['dma']['bandwidth_bytes_per_cycle'])} B/cycle, latency "
                f"{_fmt(hw['dma']['latency_cycles'])} cycles"),
    ], title="hardware"))
    table = Table(title="memories", title_justify="left")
    for col in ("name", "kind", "capacity", "instances", "access", "holds"):
        table.add_column(col, justify="right" if col in ("capacity", "instances") else "left")
    for m in hw["memories"]:
        table.add_row(m["name"], m["kind"], _fmt_bytes(m["capacity_bytes"]), str(m["instances"]), m["access"],
                      ", ".join(m["holds"]))
    out.print(table)


# ------------------------------------------------------------------------------------------------ catalogues
@cli.command()
@click.option("--json", "as_json", is_flag=True,
              help="Print a list of objects: name, description, params (defaults), operators, tensors, macs, "
                   "weight_bytes, activation_bytes.")
def zoo(as_json: bool) -> None:
    """The built-in networks, with their default parameters and size at those defaults."""
    from dlaopt.zoo import ZOO

    rows = []
    for entry in ZOO.entries():
        summary = ZOO.create(entry.name).summary()
        rows.append({"name": entry.name, "description": entry.description, "params": entry.defaults,
                     **{k: v for k, v in summary.items() if k != "name"}})
    if as_json:
        _echo_json(rows)
        return
    table = Table(title="network zoo (sizes at the default parameters)", title_justify="left")
    for col, justify in (("network", "left"), ("operators", "right"), ("MACs", "right"), ("weights", "right"),
                         ("parameters (defaults)", "left"), ("description", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(r["name"], _fmt(r["operators"]), _fmt(r["macs"]), _fmt_bytes(r["weight_bytes"], exact=False),
                      _fmt_params(r["params"]), r["description"])
    _console().print(table)


@cli.command()
@click.option("--json", "as_json", is_flag=True,
              help="Print a list of objects: name, description, params (defaults), memories at the defaults.")
def presets(as_json: bool) -> None:
    """The built-in hardware presets, with their parameters (defaults) and memories at those defaults."""
    from dlaopt.hardware.presets import PRESETS

    rows = []
    for entry in PRESETS.entries():
        acc = PRESETS.create(entry.name)
        rows.append({"name": entry.name, "description": entry.description, "params": entry.defaults,
                     "memories": [{"name": m.name, "kind": m.kind.value, "capacity_bytes": m.capacity_bytes}
                                  for m in acc.memories]})
    if as_json:
        _echo_json(rows)
        return
    table = Table(title="hardware presets", title_justify="left")
    for col in ("preset", "parameters (defaults)", "memories", "description"):
        table.add_column(col)
    for r in rows:
        mems = ", ".join(f"{m['name']} {_fmt_bytes(m['capacity_bytes'])}" for m in r["memories"])
        table.add_row(r["name"], _fmt_params(r["params"]), mems, r["description"])
    _console().print(table)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of solver strings.")
def solvers(as_json: bool) -> None:
    """The solver strings usable with --solver (highs, cpsat and every Pyomo solver found on this machine)."""
    from dlaopt.solvers.backends import available_solvers

    names = available_solvers()
    if as_json:
        _echo_json(names)
        return
    for name in names:
        click.echo(name)


# ------------------------------------------------------------------------------------------------ make, schema
@cli.command()
@click.option("--problem", default="pinning", show_default=True, help="The problem.")
@click.option("--network", required=True, metavar="NAME", help="A zoo network (see `dlaopt zoo`).")
@click.option("--param", "params", multiple=True, callback=_parse_assignments, metavar="K=V",
              help="A network parameter (repeatable); V is read as a YAML scalar (3, 0.5, true, text).")
@click.option("--preset", required=True, metavar="P", help="A hardware preset (see `dlaopt presets`).")
@click.option("--hw", "hw_params", multiple=True, callback=_parse_assignments, metavar="K=V",
              help="A preset parameter (repeatable), e.g. --hw spad_kb=256.")
@click.option("--objective", default=None, metavar="O", help="The objective (default: the problem's first).")
@click.option("--option", "options", multiple=True, callback=_parse_assignments, metavar="K=V",
              help="A problem option (repeatable), e.g. --option oversize=cap.")
@click.option("--name", default=None, help="Instance name (default: derived from network, preset and parameters).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the instance here (JSON for .json, else YAML); default: print YAML to stdout.")
def make(problem: str, network: str, params: dict[str, Any], preset: str, hw_params: dict[str, Any],
         objective: str | None, options: dict[str, Any], name: str | None, output: Path | None) -> None:
    """Write an instance file for a zoo network on a hardware preset (validated before it is written)."""
    import yaml

    from dlaopt.io import make_instance_document, save_document

    doc = make_instance_document(problem, network, params, preset, hw_params, objective=objective,
                                 options=options or None, name=name)
    if output is None:
        click.echo(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120), nl=False)
    else:
        written = save_document(doc, output)
        click.echo(f"instance written to {written}", err=True)


@cli.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the schema here instead of printing it.")
def schema(output: Path | None) -> None:
    """The JSON Schema (Draft 2020-12) of instance files."""
    from dlaopt.io import write_schema
    from dlaopt.io.schema import schema_text

    if output is None:
        click.echo(schema_text(), nl=False)
        return
    try:
        written = write_schema(output)
    except OSError as exc:
        raise InputError(f"cannot write the file: {exc.strerror or exc}", file=str(output)) from None
    click.echo(f"schema written to {written}", err=True)


# ------------------------------------------------------------------------------------------------ import
@cli.command("import")
@click.argument("model", metavar="MODEL.onnx")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the workload here (YAML); default: print it to stdout.")
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="Sets the first dimension of every graph input.")
@click.option("--dim", "dims", multiple=True, callback=_parse_assignments, metavar="NAME=VALUE",
              help="The size of a symbolic input dimension (repeatable), e.g. --dim seq=128.")
@click.option("--name", default=None, help="Workload name (default: the model file's stem).")
@click.option("--dtype-bytes", type=click.IntRange(min=1), default=None,
              help="Bytes per element (default: the size of the model's floating-point type).")
def import_(model: str, output: Path | None, batch: int | None, dims: dict[str, Any], name: str | None,
            dtype_bytes: int | None) -> None:
    """Import the ONNX model MODEL.onnx as an inline workload (YAML) for instance files.

    Paste the result under `workload:` in an instance, or let the instance read the model itself:
    `workload: {onnx: MODEL.onnx, batch: 1, dims: {seq: 128}}`. A summary (operators, MACs, parameters) goes to
    stderr. An unsupported operator or an unresolved dimension is bad input (exit 2), naming the node or the
    dimension.
    """
    from dlaopt.workload.onnx_import import dump_workload_yaml, import_onnx, workload_document
    from dlaopt.workload.tensor import TensorRole

    for key, value in dims.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise click.BadParameter(f"{key}={value!r}: the size must be a positive integer", param_hint="--dim")
    try:
        wl = import_onnx(model, batch=batch, dims=dims, name=name, dtype_bytes=dtype_bytes)
    except InputError as exc:  # no instance keys here: name the model file only
        raise InputError(exc.message, file=exc.file or model, expected=exc.expected) from None
    params = sum(t.numel for t in wl.tensors_with_role(TensorRole.WEIGHT))
    settings = [f"--batch {batch}"] if batch is not None else []
    settings += [f"--dim {k}={v}" for k, v in dims.items()]
    summary = f"{wl.name}: {len(wl.operators):,} operators, {wl.total_macs:,} MACs, {params:,} parameters"
    comment = f"dlaopt import {' '.join([Path(model).name, *settings])}\n{summary}"
    text = dump_workload_yaml(workload_document(wl), comment=comment)
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write the file: {exc.strerror or exc}", file=str(output)) from None
        summary += f"; written to {output}"
    click.echo(summary, err=True)


# ================================================================================================ experiments
# Subcommands of `dlaopt experiment`, imported only when that group is used. Adding one is one line here, so the
# two planned subcommands are a two-line change:
#     "thesis-sweep": "dlaopt.experiments:thesis_sweep",
#     "pinning-benchmark": "dlaopt.experiments:pinning_benchmark",
# The target may be a click command (used as it is) or a plain function, which `command_from_function` turns into
# a command: one --option per parameter (--snake-case; bool -> --flag/--no-flag; list/tuple -> repeatable option;
# Literal[...] of strings -> a choice; no default -> required), the docstring as help, and a non-None return value
# printed to stdout (JSON for mappings and lists). Decorating a function with `@experiment.command("name")` below
# the group works as well, for commands whose options cannot be derived from a signature.
EXPERIMENTS: dict[str, str] = {
    "thesis-sweep": "dlaopt.experiments.commands:thesis_sweep",
    "pinning-benchmark": "dlaopt.experiments.commands:pinning_benchmark",
    "mapping-benchmark": "dlaopt.experiments.commands:mapping_benchmark",
    "zigzag-compare": "dlaopt.experiments.commands:zigzag_compare",
    "deepopt-reproduce": "dlaopt.experiments.commands:deepopt_reproduce",
    "deepopt-benchmark": "dlaopt.experiments.commands:deepopt_benchmark",
    "magma-benchmark": "dlaopt.experiments.commands:magma_benchmark",
    "compile-benchmark": "dlaopt.experiments.commands:compile_benchmark",
    "bankmap-benchmark": "dlaopt.experiments.commands:bankmap_benchmark",
}


class LazyGroup(click.Group):
    """A group whose subcommands (``name -> "module:attr"``) are imported on first use."""

    def __init__(self, *args: Any, lazy_subcommands: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = lazy_subcommands if lazy_subcommands is not None else {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_subcommands:
            return self._load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command:
        module_name, _, attr = self.lazy_subcommands[cmd_name].partition(":")
        target = getattr(importlib.import_module(module_name), attr)
        if isinstance(target, click.Command):
            return target
        return command_from_function(target, cmd_name)


_SCALARS: dict[type, click.ParamType] = {int: click.INT, float: click.FLOAT, str: click.STRING,
                                         Path: click.Path(path_type=Path)}


def command_from_function(func: Callable[..., Any], name: str | None = None) -> click.Command:
    """A click command calling ``func`` with one option per parameter (see the comment above ``EXPERIMENTS``)."""
    hints = typing.get_type_hints(func)
    params: list[click.Parameter] = []
    as_list: set[str] = set()  # parameters annotated as lists (click passes tuples)
    for par in inspect.signature(func).parameters.values():
        if par.kind in (par.VAR_POSITIONAL, par.VAR_KEYWORD):
            continue
        flag = "--" + par.name.replace("_", "-")
        required = par.default is inspect.Parameter.empty
        extra: dict[str, Any] = {"required": True} if required else {"default": par.default, "show_default": True}
        hint = hints.get(par.name, str if required or par.default is None else type(par.default))
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
            hint = args[0]  # X | None
        origin = typing.get_origin(hint)
        if origin is typing.Literal and all(isinstance(a, str) for a in typing.get_args(hint)):
            params.append(click.Option([flag, par.name], type=click.Choice(list(typing.get_args(hint))), **extra))
        elif hint is bool:
            extra.pop("required", None)
            params.append(click.Option([f"{flag}/--no-{par.name.replace('_', '-')}", par.name],
                                       default=bool(extra.pop("default", False)), **extra))
        elif origin in (list, tuple, Sequence, set, frozenset):
            item = (typing.get_args(hint) or (str,))[0]
            if origin is list:
                as_list.add(par.name)
            if "default" in extra:
                extra["default"] = tuple(extra["default"] or ())
            params.append(click.Option([flag, par.name], multiple=True, type=_SCALARS.get(item, click.STRING),
                                       **extra))
        else:
            params.append(click.Option([flag, par.name], type=_SCALARS.get(hint, click.STRING), **extra))

    def callback(**kwargs: Any) -> None:
        for key in as_list & set(kwargs):
            kwargs[key] = list(kwargs[key])
        value = func(**kwargs)
        if value is None:
            return
        if isinstance(value, (Mapping, list, tuple)):
            _echo_json(value)
        else:
            click.echo(str(value))

    doc = inspect.getdoc(func) or ""
    return click.Command(name or func.__name__.strip("_").replace("_", "-"), callback=callback, params=params,
                         help=doc, short_help=doc.splitlines()[0] if doc else None)


@cli.group(cls=LazyGroup, lazy_subcommands=EXPERIMENTS)
def experiment() -> None:
    """Reproducible experiments (sweeps and benchmarks over instances and methods)."""


# ================================================================================================ entry point
def main(argv: Sequence[str] | None = None) -> None:
    """The console-script entry point (``dlaopt``, ``python -m dlaopt``); exits with the documented code."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="dlaopt")


if __name__ == "__main__":
    main()
