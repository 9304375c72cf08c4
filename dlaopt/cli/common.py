"""What every command shares: exit codes, bad-input exits, output formatting, progress lines, loading and
preparing an instance, and the solver options of ``solve``, ``compare`` and ``plot``."""

from __future__ import annotations

import enum
import json
import math
import sys
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from dlaopt.errors import InputError

if TYPE_CHECKING:
    from dlaopt.harness import Prepared
    from dlaopt.io.instance import Instance
    from dlaopt.solvers.result import SolveOptions, TracePoint

EXIT_OK = 0
EXIT_REJECTED = 1  # verify: the solution is rejected
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
DEBUG_ENV = "DLAOPT_DEBUG"
PROGRESS_INTERVAL_S = 0.5  # at most ~2 progress lines per second
PROGRESS_DELAY_S = 1.0  # no progress lines during a solver's first second (short solves stay quiet)
NON_TTY_WIDTH = 120


def fail(message: str) -> typing.NoReturn:
    """Bad input: ``error: <message>`` on stderr and exit code 2."""
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(EXIT_BAD_INPUT)


# ================================================================================================ output helpers
def console(*, stderr: bool = False) -> Console:
    """A rich console on the *current* stdout/stderr (so that test runners capturing them see the output)."""
    stream = sys.stderr if stderr else sys.stdout
    tty = bool(getattr(stream, "isatty", lambda: False)())
    return Console(file=stream, highlight=False, markup=False, emoji=False, width=None if tty else NON_TTY_WIDTH,
                   soft_wrap=not tty)


def jsonable(value: Any) -> Any:
    """``value`` as strict JSON data: NaN/inf become ``None``, numpy scalars Python numbers, tuples lists."""
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Path):
        return str(value)
    item = getattr(value, "item", None)  # numpy scalars and 0-d arrays
    if callable(item) and type(value).__module__ == "numpy":
        return jsonable(item())
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return jsonable(tolist())
    return str(value)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(jsonable(data), indent=2, allow_nan=False))


def fmt(value: Any) -> str:
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
        return ", ".join(fmt(v) if not isinstance(v, (list, tuple)) else " ".join(map(str, v)) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={fmt(v)}" for k, v in value.items())
    return str(value)


def fmt_gap(gap: float | None) -> str:
    if gap is None:
        return "-"
    return "inf" if math.isinf(gap) else f"{100 * gap:.2f}%"


def fmt_bytes(n: int | None, *, exact: bool = True) -> str:
    """A byte count in the largest binary unit that divides it (``exact``) or, rounded, that it reaches."""
    if n is None:
        return "unbounded"
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size:,} {unit}"
        if n >= size and not exact:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,} B"


def fmt_params(params: Mapping[str, Any]) -> str:
    """Parameters as they are written on the command line (``--param k=v``)."""
    return ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items()) or "-"


def kv_table(rows: Sequence[tuple[str, Any]], *, title: str | None = None) -> Table:
    table = Table(title=title, show_header=False, box=None, pad_edge=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value if isinstance(value, str) else fmt(value))
    return table


class ProgressPrinter:
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
        self.console.print(f"  {p.time_s:8.2f} s   incumbent {fmt(p.incumbent):>14}   bound {fmt(p.bound):>14}"
                           f"   gap {fmt_gap(gap):>8}")


# ================================================================================================ shared pieces
def is_buffer_csv(path: str | Path) -> bool:
    """A ``.csv`` file: a buffer list of static allocation (``dlaopt solve plan.csv --capacity BYTES``)."""
    return Path(path).suffix.lower() == ".csv"


def load_instance_file(path: str, *, capacity: int | None = None, alignment: int | None = None,
                       objective: str | None = None) -> Instance:
    """The instance file ``path`` — or, for a ``.csv`` file, a static-allocation instance of its buffers in one
    memory of ``capacity`` bytes — with the command line's ``--capacity``, ``--alignment`` and ``--objective``
    applied (see :func:`instance_options`). Every bad value is an :class:`InputError` naming the option."""
    from dlaopt.io import load_instance
    from dlaopt.io.document import MAX_NUMBER, MAX_NUMBER_TEXT

    for option, value in (("--capacity", capacity), ("--alignment", alignment)):
        if value is not None and value > MAX_NUMBER:
            raise InputError(f"{option} {value} is too large", expected=f"at most {MAX_NUMBER_TEXT} bytes")
    if is_buffer_csv(path):
        from dlaopt.io.buffers import read_buffers_csv
        from dlaopt.io.instance import instance_from_buffers
        from dlaopt.specs import problem_spec

        _check_objective(objective, "allocation", tuple(problem_spec("allocation").objectives))
        buffers = read_buffers_csv(path, alignment=alignment or 1)
        inst = instance_from_buffers(buffers, capacity=capacity, alignment=alignment or 1, objective=objective,
                                     source=path)
        if inst.objective == "feasibility" and capacity is None:
            raise InputError("a CSV of buffers says nothing of the memory: give its capacity with --capacity BYTES",
                             file=path, expected="--capacity BYTES, or --objective peak for the smallest peak")
        return inst
    inst = load_instance(path)
    if capacity is None and alignment is None and objective is None:
        return inst
    from dlaopt.hardware.arena import Arena
    from dlaopt.io.instance import instance_from_dict

    if (capacity is not None or alignment is not None) and not isinstance(inst.hardware, Arena):
        option = "--capacity" if capacity is not None else "--alignment"
        raise InputError(f"{option} applies to static-allocation instances, and this is a '{inst.problem}' instance",
                         file=path, expected="problem: allocation, or a CSV file of buffers")
    from dlaopt.specs import problem_spec

    _check_objective(objective, inst.problem, tuple(problem_spec(inst.problem).objectives))
    doc = json.loads(json.dumps(dict(inst.document)))
    if objective is not None:
        doc["objective"] = objective
    memory = doc["hardware"].get("memory")
    if isinstance(memory, dict):
        if capacity is not None:
            memory["capacity_bytes"] = capacity
        if alignment is not None:
            memory["alignment"] = alignment
    return instance_from_dict(doc, source=inst.source)


def _check_objective(objective: str | None, problem: str, objectives: tuple[str, ...]) -> None:
    if objective is not None and objective not in objectives:
        raise InputError(f"--objective: unknown objective '{objective}' for problem '{problem}'",
                         expected="one of: " + ", ".join(objectives))


def instance_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--capacity``, ``--alignment`` and ``--objective``: what :func:`load_instance_file` applies to INSTANCE."""
    options = [
        click.option("--capacity", type=click.IntRange(min=1), default=None, metavar="BYTES",
                     help="Static allocation: the memory's capacity in bytes. A CSV of buffers (INSTANCE ending in "
                          ".csv, header id,lower,upper,size) needs it unless --objective peak; it replaces an "
                          "allocation instance's capacity."),
        click.option("--alignment", type=click.IntRange(min=1), default=None, metavar="BYTES",
                     help="Static allocation: the offsets of buffers without an alignment of their own are multiples "
                          "of this (default: the instance's; 1 for a CSV)."),
        click.option("--objective", default=None, metavar="O",
                     help="The objective (default: the instance's; for a CSV of buffers, feasibility)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def prepare_instance(instance: Instance) -> Prepared:
    """Prepare ``instance``; an :class:`InputError` from the problem's prepare step gets the file name added."""
    from dlaopt.harness import prepare

    try:
        return prepare(instance)
    except InputError as exc:
        raise exc.located(file=instance.source) from None


def check_method(p: Prepared, name: str) -> None:
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


def solve_options(time_limit: float | None, gap: float | None, seed: int, threads: int | None,
                   progress: ProgressPrinter | None) -> SolveOptions:
    from dlaopt.solvers.result import SolveOptions

    opts = SolveOptions(time_limit=time_limit, seed=seed, threads=threads, progress=progress)
    if gap is not None:
        opts.mip_rel_gap = gap
    return opts


def parse_assignments(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, Any]:
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


def split_methods(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [m.strip() for m in value.split(",") if m.strip()]
    if not names:
        raise click.BadParameter("give at least one method name", ctx=ctx, param=param)
    return names


# common options of solve and compare
def total_time_limit_option(what: str = "each method") -> Callable[..., Any]:
    """``--total-time-limit SEC``: the whole command returns by then with what it has."""
    return click.option(
        "--total-time-limit", "total_time_limit", type=click.FloatRange(min=0, min_open=True), default=None,
        metavar="SEC", help=f"Wall-clock limit of the whole command in seconds: {what} gets at most the time left, "
                            "and what it leaves out is reported as not run (default: none).")


def solver_options(f: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--solver", "solver", metavar="S", default=None,
                     help="MILP solver for the exact model: highs, cpsat or pyomo:NAME (see `dlaopt solvers`); "
                          "default: the method's own."),
        click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SEC",
                     help="Wall-clock limit of the solver in seconds (default: none)."),
        click.option("--gap", type=click.FloatRange(min=0), default=None, metavar="G",
                     help="Relative MIP gap at which the solver stops (default: 1e-4)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Solver random seed."),
        total_time_limit_option(),
        click.option("--json", "as_json", is_flag=True, help="Print JSON to stdout (no progress on stderr)."),
        click.option("--quiet", "-q", is_flag=True, help="No log or progress lines on stderr."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


