"""Plots of solutions and of method comparisons, for every problem (matplotlib, no window ever opened).

::

    from dlaopt.io import load_instance
    from dlaopt.plots import plot_comparison, plot_solution, save
    from dlaopt.harness import compare, prepare, solve

    p = prepare(load_instance("instances/pinning/tiny-inline.yaml"))
    res = solve(p, "greedy")
    save(plot_solution(p, res.solution), "occupancy.png")       # the problem's default kind
    results = compare(p, ["naive", "greedy", "exact"])
    save(plot_comparison(results), "transfers.svg")
    save(plot_comparison(results, kind="trace"), "trace.png")

``plot_solution(prepared, solution, kind=..., title=...)`` takes the problem's solution object, the ``solution``
mapping of a solution document (``Result.solution``, or ``load_solution_document(path)["solution"]``) or a whole
solution document (its ``problem`` is checked). The solution is re-evaluated by the problem's independent evaluator;
one it rejects is still drawn, with the first violation in red at the bottom.

``plot_comparison(results, kind=..., title=..., prepared=None)`` takes several methods' results on one instance
(``harness.compare``). Every problem has the comparison kinds ``objective`` (objective, bound and status per
method) and ``trace`` (the exact solver's incumbent and bound over time, the heuristics' values as horizontal lines);
``prepared`` is needed only by kinds that re-simulate solutions (multiaccel's ``gantt``, its default when given).

Kinds (``solution_kinds(problem)``, ``comparison_kinds(problem)``; the first is the default):

* pinning — solution ``occupancy``, ``addresses``; comparison ``transfers``, ``objective``, ``trace``
* mapping — solution ``mapping``, ``loopnest``, ``breakdown``, ``layers``; comparison ``layers``, ``objective``,
  ``trace``
* systolic — solution ``layers``; comparison ``layers``, ``objective``, ``trace``
* multiaccel — solution ``gantt``; comparison ``gantt`` (with ``prepared``) or ``makespan``, ``objective``,
  ``trace``
* bankmap — solution ``layout``; comparison ``copies``, ``objective``, ``trace``

``save(fig, path)`` writes PNG or SVG by the suffix (anything else is an :class:`~dlaopt.errors.InputError`); the
PNG is exactly the figure size times its dpi (100 unless ``dpi=`` is given).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dlaopt.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from dlaopt.harness import Prepared, Result
    from dlaopt.plots.common import PlotKind

PROBLEM_MODULES: dict[str, str] = {
    "pinning": "dlaopt.plots.pinning",
    "mapping": "dlaopt.plots.mapping",
    "systolic": "dlaopt.plots.systolic",
    "multiaccel": "dlaopt.plots.multiaccel",
    "bankmap": "dlaopt.plots.bankmap",
}
SHARED_COMPARISON_KINDS = ("objective", "trace")
SUFFIXES = (".png", ".svg")


def _module(problem: str) -> ModuleType:
    if problem not in PROBLEM_MODULES:
        raise InputError(f"no plots for problem '{problem}'", path=("problem",),
                         expected="one of: " + ", ".join(PROBLEM_MODULES))
    return importlib.import_module(PROBLEM_MODULES[problem])


def _solution_kinds(problem: str) -> dict[str, PlotKind]:
    kinds: dict[str, PlotKind] = _module(problem).SOLUTION_KINDS
    return kinds


def _comparison_kinds(problem: str) -> dict[str, PlotKind]:
    from dlaopt.plots.common import PlotKind, plot_objective, plot_trace

    own: dict[str, PlotKind] = _module(problem).COMPARISON_KINDS
    shared = {
        "objective": PlotKind("objective", "each method's objective, proven bound and status",
                              lambda results, prepared, title: plot_objective(results, title=title)),
        "trace": PlotKind("trace", "the exact solver's incumbent and bound over time, other methods' values as lines",
                          lambda results, prepared, title: plot_trace(results, title=title)),
    }
    return {**own, **shared}


def solution_kinds(problem: str) -> dict[str, str]:
    """Kind name -> description of the solution plots of ``problem`` (the first is the default)."""
    return {k: v.description for k, v in _solution_kinds(problem).items()}


def comparison_kinds(problem: str) -> dict[str, str]:
    """Kind name -> description of the comparison plots of ``problem`` (the first is the default)."""
    return {k: v.description for k, v in _comparison_kinds(problem).items()}


def _pick(kinds: Mapping[str, PlotKind], kind: str | None, problem: str, what: str) -> PlotKind:
    if kind is None:
        return next(iter(kinds.values()))
    if kind not in kinds:
        raise InputError(f"unknown {what} plot kind '{kind}' for problem '{problem}'", path=("kind",),
                         expected="one of: " + ", ".join(kinds))
    return kinds[kind]


def check_kind(problem: str, kind: str | None, *, comparison: bool = False) -> str:
    """The plot kind that ``kind`` names for ``problem`` (its default for ``None``); an unknown kind is an
    :class:`InputError` listing the valid ones. Lets a caller reject a bad kind before any solving."""
    kinds = _comparison_kinds(problem) if comparison else _solution_kinds(problem)
    return _pick(kinds, kind, problem, "comparison" if comparison else "solution").name


def _coerce_solution(prepared: Prepared, solution: Any) -> Any:
    """The problem's solution object from an object, a ``solution`` mapping or a whole solution document."""
    problem = prepared.problem
    expected_type: type = _module(problem.name).SOLUTION_TYPE
    if isinstance(solution, expected_type):
        return solution
    if not isinstance(solution, Mapping):
        raise InputError(f"cannot plot a {type(solution).__name__} as a '{problem.name}' solution",
                         path=("solution",), expected=f"a {expected_type.__name__} or a solution document's "
                         "'solution' mapping")
    if "solution" in solution and "problem" in solution:  # a whole solution document
        if solution.get("problem") != problem.name:
            raise InputError(f"the solution is for problem '{solution.get('problem')}', the instance is "
                             f"'{problem.name}'", path=("problem",), expected=problem.name)
        solution = solution.get("solution") or {}
    if not solution:
        raise InputError("the solution is empty (the result it came from has no solution)", path=("solution",),
                         expected=f"a '{problem.name}' solution")
    return problem.solution_from_dict(prepared.data, solution)


def plot_solution(prepared: Prepared, solution: Any, *, kind: str | None = None, title: str | None = None,
                  method: str | None = None) -> Figure:
    """A figure of one solution of ``prepared``'s instance (see the module docstring for the kinds). ``method``
    (optional) names the method that found the solution in the default title."""
    chosen = _pick(_solution_kinds(prepared.problem.name), kind, prepared.problem.name, "solution")
    if method is None and isinstance(solution, Mapping) and "solution" in solution and "problem" in solution:
        method = solution.get("method")
    sol = _coerce_solution(prepared, solution)
    evaluation = prepared.problem.evaluate(prepared.data, sol)
    subject = prepared.instance.name + (f" ({method})" if method else "")
    fig: Figure = chosen.draw(prepared, sol, evaluation, title, subject)
    return fig


def plot_comparison(results: Sequence[Result], *, kind: str | None = None, title: str | None = None,
                    prepared: Prepared | None = None) -> Figure:
    """A figure comparing several methods' results on one instance (see the module docstring for the kinds)."""
    results = list(results)
    if not results:
        raise InputError("nothing to compare: no results", path=("results",), expected="at least one Result")
    problems = {r.problem for r in results}
    instances = {r.instance for r in results}
    if len(problems) > 1 or len(instances) > 1:
        raise InputError("the results are not all of one instance: " + ", ".join(
            sorted(f"{r.instance} ({r.problem})" for r in results)), path=("results",),
            expected="results of one instance, e.g. from harness.compare")
    problem = results[0].problem
    if prepared is not None and prepared.problem.name != problem:
        raise InputError(f"the results are for problem '{problem}', the prepared instance is "
                         f"'{prepared.problem.name}'", path=("prepared",))
    kinds = _comparison_kinds(problem)
    if kind is None:
        default = getattr(_module(problem), "default_comparison_kind", None)
        kind = default(prepared) if default is not None else None
    chosen = _pick(kinds, kind, problem, "comparison")
    if chosen.needs_prepared and prepared is None:
        raise InputError(f"the '{chosen.name}' comparison of problem '{problem}' re-simulates the solutions and "
                         "needs the prepared instance", path=("prepared",),
                         expected="plot_comparison(results, prepared=harness.prepare(instance))")
    fig: Figure = chosen.draw(results, prepared, title)
    return fig


def save(fig: Figure, path: str | Path, *, dpi: float | None = None) -> Path:
    """Write ``fig`` as PNG or SVG (by the suffix of ``path``); returns the path. The PNG is exactly the figure's
    size in inches times ``dpi`` (default: the figure's, 100) pixels."""
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(f"cannot write a plot as '{out.suffix or '(no suffix)'}'", file=str(out),
                         expected="a file name ending in .png or .svg")
    import matplotlib

    metadata: dict[str, Any] = {"Date": None} if suffix == ".svg" else {}
    try:  # SVG text stays text (searchable, smaller); ids are reproducible
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "dlaopt"}):
            fig.savefig(out, format=suffix[1:], dpi=dpi or fig.dpi, metadata=metadata)
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError) as exc:
        raise InputError(f"cannot write the file: {exc.strerror or exc}", file=str(out)) from None
    return out


__all__ = ["check_kind", "comparison_kinds", "plot_comparison", "plot_solution", "save", "solution_kinds"]
