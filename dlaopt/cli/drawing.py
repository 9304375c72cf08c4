"""``dlaopt plot`` and ``dlaopt gantt``: figures of solutions and of method comparisons."""

from __future__ import annotations

import math
from pathlib import Path

import click

from dlaopt.cli.common import (
    check_method,
    console,
    fmt,
    load_instance_file,
    prepare_instance,
    solve_options,
    split_methods,
)
from dlaopt.errors import InputError


# ------------------------------------------------------------------------------------------------ gantt
@click.command()
@click.argument("instance", metavar="INSTANCE")
@click.argument("solution", metavar="SOLUTION")
@click.option("-o", "--output", "output", required=True, help="The SVG file to write.")
def gantt(instance: str, solution: str, output: str) -> None:
    """Draw a multi-accelerator schedule as SVG: a lane per sub-accelerator with its jobs (coloured by tenant) and
    the system bandwidth each sub-accelerator is allocated over time, as the fluid evaluator simulates it."""
    from dlaopt.formulations.multiaccel.evaluator import FluidEvaluator, check
    from dlaopt.formulations.multiaccel.gantt import gantt_svg
    from dlaopt.io import load_solution_document

    inst = load_instance_file(instance)
    if inst.problem != "multiaccel":
        raise InputError(f"a Gantt chart needs a multi-accelerator instance, this one is '{inst.problem}'",
                         file=instance, path=("problem",), expected="multiaccel")
    doc = load_solution_document(solution)
    p = prepare_instance(inst)
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
               f"{fmt(sim.makespan * 1e3)} ms", err=True)


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


@click.command()
@click.argument("instance", metavar="INSTANCE")
@click.argument("solution", metavar="[SOLUTION]", required=False)
@click.option("-o", "--output", required=True, metavar="FILE.png|svg",
              help="The image to write: PNG or SVG, by the suffix.")
@click.option("--kind", default=None, metavar="KIND",
              help="The plot kind (default: the problem's first); an unknown kind lists the valid ones.")
@click.option("--compare", "compare_methods", callback=split_methods, default=None, metavar="A,B,...",
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

    Kinds per problem (the first is the default): pinning: occupancy, addresses (the step x address picture of
    each scratchpad); mapping: mapping, loopnest, breakdown,
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
    inst = load_instance_file(instance)
    p = prepare_instance(inst)
    try:
        if kind is not None:
            check_kind(inst.problem, kind, comparison=compare_methods is not None)
    except InputError as exc:
        raise exc.located(file=instance) from None
    err = console(stderr=True)
    if compare_methods is not None:
        from dlaopt import harness

        for name in compare_methods:
            check_method(p, name)
        if not quiet:
            err.print(f"comparing {', '.join(compare_methods)} on {inst.name} ({inst.problem}, objective "
                      f"{inst.objective})")
        results = harness.compare(p, compare_methods, options=solve_options(time_limit, None, seed, None, None))
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




COMMANDS = [plot, gantt]
