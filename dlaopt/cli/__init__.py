"""The ``dlaopt`` command line: a thin layer over :mod:`dlaopt.harness` and :mod:`dlaopt.io`.

Commands (``dlaopt COMMAND --help`` for the options), one module of this package per group::

    solving      dlaopt solve INSTANCE      solve with one method (default: exact), optionally write the solution
                 dlaopt compare INSTANCE    every method on one instance, with the ratio of each objective to the best
                 dlaopt verify INSTANCE SOLUTION
                                            check a solution file with the problem's independent evaluator
    drawing      dlaopt plot | gantt        figures of a solution or of a comparison; a multi-accelerator schedule
    runs         dlaopt bench SUITE         a benchmark suite, resumable, with CSV / JSON / Markdown tables
                 dlaopt sweep SWEEP.yaml    workloads x grid x methods on Dask, resumable
                 dlaopt compile WORKLOAD    mapping -> pinning -> bank mapping (-> assignment), every stage verified
    instances    dlaopt show | make | schema | import
                                            an instance and its prepared data; a new instance file; the JSON Schema;
                                            an ONNX model as a workload
    catalogue    dlaopt zoo | presets | solvers
                                            the built-in networks, hardware presets and available solver strings
    experiment   dlaopt experiment ...      seed reproductions and benchmarks (``EXPERIMENTS``)

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
* ``130`` — interrupted (Ctrl-C, SIGINT); ``143`` — terminated (SIGTERM). Either way the worker processes are
  killed and what the command promises of the finished work is written (``bench`` and ``sweep`` resume from it).
  Worker processes also die by themselves when the command is killed outright (SIGKILL).

Solver strings are checked before any work is done: a malformed string (not ``highs``, ``cpsat`` or
``pyomo:<name>``) and a ``pyomo:<name>`` that Pyomo does not report as available are bad input (exit 2), not a
result with status ``error``.

Heavy modules (the solver backends, Pyomo, OR-Tools, HiGHS) are imported inside the commands that need them, so
``dlaopt --help``, ``dlaopt zoo`` and ``dlaopt presets`` start fast.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence
from typing import Any

import click

from dlaopt import __version__
from dlaopt.cli import catalogue, drawing, experiment, instances, runs, solving
from dlaopt.cli.common import DEBUG_ENV, EXIT_INTERNAL, fail
from dlaopt.errors import InputError


# ================================================================================================ error handling
class DlaoptGroup(click.Group):
    """The top-level group: turns exceptions raised by any (sub)command into the documented exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated): workers are killed on the way here
            from dlaopt.solvers.processes import interrupt_exit_code, kill_descendants

            kill_descendants()
            click.echo("interrupted", err=True)
            raise click.exceptions.Exit(interrupt_exit_code(exc)) from None
        except InputError as exc:
            fail(exc.render())
        except Exception as exc:
            from dlaopt.solvers.backends import SolverSpecError

            if isinstance(exc, SolverSpecError):
                fail(str(exc))
            click.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
            if os.environ.get(DEBUG_ENV):
                click.echo(traceback.format_exc().rstrip(), err=True)
            else:
                click.echo(f"(set {DEBUG_ENV}=1 to see the traceback)", err=True)
            raise click.exceptions.Exit(EXIT_INTERNAL) from None


# ================================================================================================ the group
@click.group(cls=DlaoptGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="dlaopt")
def cli() -> None:
    """dlaopt: exact optimization models for the hard decisions of a deep-learning-accelerator compiler.

    Exit codes: 0 success (solver trouble such as a time limit or an infeasible instance is reported as the
    result's status, not as a failure); 1 internal error, or `verify` rejected the solution; 2 bad input
    (invalid file, unknown method or solver, usage error); 130 interrupted (Ctrl-C); 143 terminated (SIGTERM).
    Set DLAOPT_DEBUG=1 to see tracebacks of internal errors.
    """


for _module in (solving, drawing, runs, instances, catalogue, experiment):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


# ================================================================================================ entry point
def main(argv: Sequence[str] | None = None) -> None:
    """The console-script entry point (``dlaopt``, ``python -m dlaopt``); exits with the documented code. SIGTERM is
    handled like Ctrl-C (the same clean-up), with exit code 143."""
    from dlaopt.solvers.processes import install_sigterm_handler

    install_sigterm_handler()
    cli.main(args=list(argv) if argv is not None else None, prog_name="dlaopt")


__all__ = ["cli", "main"]
