"""The per-layer workers of the mapping methods: one representative layer mapped by a heuristic, the exact method
or enumeration, within its constrained map space. Each is a module-level function taking plain arguments and
returning a picklable answer, so that :mod:`.dispatch` can run it in a worker process.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from dlaopt.formulations.mapping.arch import MappingArch
from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping
from dlaopt.formulations.mapping.race import RACE_NAME, offer_raced, own_extra, start_race
from dlaopt.formulations.mapping.space import ArchChoice, LayerSpace
from dlaopt.solvers.processes import NOT_STARTED_MESSAGE
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.specs import mapping as opts


def _time_left(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.monotonic()


def capped(limit: float | None, deadline: float | None) -> float | None:
    """``limit`` capped by the time left before ``deadline`` (both optional)."""
    left = _time_left(deadline)
    if left is None:
        return limit
    return left if limit is None else min(limit, left)


def _budget(method: str, options: dict[str, Any]) -> int | None:
    if method == "random":
        return int(options["random_samples"])
    if method == "ga":
        return int(options["ga_population"]) * int(options["ga_generations"])
    return None


def run_layer_heuristic(method: str, nest: LoopNest, arch: MappingArch, objective: str, options: dict[str, Any],
                        seed: int, time_limit: float | None) -> tuple[Mapping | None, float]:
    """Heuristic ``method`` on one layer without constraints: (mapping or ``None``, seconds)."""
    from dlaopt.formulations.mapping.heuristics import HEURISTICS

    t0 = time.perf_counter()
    if time_limit is not None and time_limit <= 0:
        return None, 0.0
    fn = HEURISTICS[method]
    kwargs: dict[str, Any] = {"seed": seed, "budget": _budget(method, options), "time_limit": time_limit}
    m = fn(nest, arch, objective, **kwargs)
    return m, time.perf_counter() - t0


def run_layer_in_space(method: str, nest: LoopNest, space: LayerSpace, objective: str, options: dict[str, Any],
                       seed: int, time_limit: float | None, initial: Sequence[tuple[str, Mapping]] = ()
                       ) -> tuple[Mapping | None, float, tuple[int, int] | None, str]:
    """Heuristic ``method`` on one layer within its constrained map space: (mapping or ``None``, seconds, the
    PE-array shape it is for, why there is none). ``initial``: named warm-start mappings for the mapper (GAMMA's
    first individuals, the random mapper's first samples; lever ``reuse``). An unconstrained space without them runs
    :func:`run_layer_heuristic` on its architecture."""
    if not space.constrained and not initial:
        m, secs = run_layer_heuristic(method, nest, space.archs[0].arch, objective, options, seed, time_limit)
        return m, secs, None, "" if m is not None else f"no valid mapping found for layer {nest.describe()}"
    from dlaopt.formulations.mapping.heuristics import map_in_space

    t0 = time.perf_counter()
    if time_limit is not None and time_limit <= 0:
        return None, 0.0, None, NOT_STARTED_MESSAGE
    r = map_in_space(method, nest, space, objective, seed=seed, budget=_budget(method, options),
                     time_limit=time_limit, initial=[m for _, m in initial])
    return r.mapping, time.perf_counter() - t0, r.shape, r.reason


def _seed_valid(nest: LoopNest, arch: MappingArch, m: Mapping) -> bool:
    """Whether a given warm-start mapping is a valid mapping of ``nest`` on ``arch`` (a seed adapted from another
    layer or read from a cache may not be; the exact method then ignores it)."""
    try:
        return evaluate_mapping(nest, arch, m).valid
    except (KeyError, IndexError, ValueError, TypeError):
        return False


def _sub_options(solve_options: SolveOptions, time_limit: float | None) -> SolveOptions:
    """The options of one exact walk: ``solve_options`` with ``time_limit`` (what is left after the warm start), no
    deadline (the limit says it) and the driver's own keys taken out of ``extra``."""
    return SolveOptions(time_limit=time_limit, mip_rel_gap=solve_options.mip_rel_gap, threads=solve_options.threads,
                        seed=solve_options.seed, node_limit=solve_options.node_limit,
                        deterministic=solve_options.deterministic, extra=own_extra(solve_options))


def _answer(best: Any, *, bound: float | None, status: Status, solves: int, message: str, t0: float,
            t_warm: float, warm_start: tuple[str, float] | None, ga_race: dict[str, Any] | None) -> dict[str, Any]:
    """The exact method's answer on one layer, as :class:`~dlaopt.formulations.mapping.problem.MappingProblem`
    reads it: the mapping, values, model statistics and trace of ``best`` (a
    :class:`~dlaopt.formulations.mapping.exact.LayerExact`, or ``None`` when there is no mapping) and the rest as
    given; ``t0`` is when the layer started (``time.perf_counter()``)."""
    return {"mapping": None if best is None else best.mapping,
            "objective": None if best is None else best.objective,
            "model_objective": None if best is None else best.model_objective, "bound": bound,
            "status": status.value, "time_s": time.perf_counter() - t0, "warm_start_s": t_warm,
            "solves": solves, "message": message, "model_stats": None if best is None else best.model_stats,
            "warm_start": warm_start,
            "trace": [] if best is None else [(p.time_s, p.incumbent, p.bound) for p in best.trace],
            "ga_race": ga_race}


def run_layer_exact(nest: LoopNest, arch: MappingArch, objective: str, options: dict[str, Any],
                    solve_options: SolveOptions, solver: str, space: LayerSpace | None = None,
                    seeds: Sequence[tuple[str, Mapping]] = ()) -> dict[str, Any] | None:
    """The exact method on one layer, warm-started from ``options["warm_start"]`` and from ``seeds`` (named
    mappings given by the caller, e.g. a cached or a neighbouring layer's optimum; invalid ones are ignored); the
    warm start's time counts against ``solve_options.time_limit``. The best of them is reported as the warm start
    (by its name). ``None`` when ``solve_options.deadline`` has passed before it starts. Within a constrained map
    space (``space``) see :func:`_run_layer_exact_in_space`; ``arch`` is then unused.

    Lever ``ga_race`` (:mod:`.race`, when a time limit and a spare core allow it): the GA (same seed, the same time
    limit) runs in a worker process from the start; the walk takes its mapping as an incumbent at its first check
    after it is in (between MILP solves), and a walk that ends unproven awaits it and takes it if it is better (then
    reported as the warm start :data:`~dlaopt.formulations.mapping.race.RACE_NAME`). The worker is killed when the
    solve ends, however it ends. The answer's ``ga_race`` says what the GA found (``objective``) and whether it is
    the answer (``won``); ``None`` without a race."""
    from dlaopt.formulations.mapping.exact import solve_layer
    from dlaopt.specs.tuning import levers

    t0 = time.perf_counter()
    limit = capped(solve_options.time_limit, solve_options.deadline)
    if limit is not None and limit <= 0:
        return None
    if space is not None and space.constrained:
        return _run_layer_exact_in_space(nest, space, objective, options, solve_options, solver, seeds, t0, limit)
    if space is not None:
        arch = space.archs[0].arch
    race = start_race(run_layer_heuristic, ("ga", nest, arch, objective, options, solve_options.seed, limit), options,
                      solve_options, limit)
    try:
        warm: list[Mapping] = []
        warm_names: list[str] = []
        for name, m in seeds:
            if _seed_valid(nest, arch, m):
                warm.append(m)
                warm_names.append(name)
        for h in options["warm_start"]:
            h_limit = None if limit is None else max(0.0, limit - (time.perf_counter() - t0))
            m, _ = run_layer_heuristic(h, nest, arch, objective, options, solve_options.seed, h_limit)
            if m is not None:
                warm.append(m)
                warm_names.append(h)
        t_warm = time.perf_counter() - t0
        left = None if limit is None else max(0.1, limit - t_warm)
        o = _sub_options(solve_options, left)
        handed = False

        def raced() -> list[Mapping]:
            nonlocal handed
            got = race.ready() if race is not None and not handed else None
            handed = handed or got is not None
            return [got[0]] if got is not None else []

        r = solve_layer(nest, arch, objective, warm=warm, options=o, solver=solver,
                        tuning=levers(options, opts.EXACT_LEVERS), incumbents=raced if race is not None else None)
        # a walk that proved its answer needs nothing from the GA; else its answer is awaited (the same time limit)
        got = race.finish(wait=r.status != Status.OPTIMAL) if race is not None else None
    finally:
        if race is not None:
            race.stop()
    raced_info: dict[str, Any] | None = None if race is None else {"objective": None, "won": False}
    if got is not None and raced_info is not None and _seed_valid(nest, arch, got[0]):
        warm.append(got[0])
        warm_names.append(RACE_NAME)
        raced_info["objective"] = evaluate_mapping(nest, arch, got[0]).objective(objective)
        raced_info["won"] = offer_raced(r, got[0], raced_info["objective"]) or r.mapping is got[0]
    warm_best = None
    for name, m in zip(warm_names, warm, strict=True):
        rep = evaluate_mapping(nest, arch, m)
        if rep.valid and (warm_best is None or rep.objective(objective) < warm_best[1]):
            warm_best = (name, rep.objective(objective))
    return _answer(r, bound=r.bound, status=r.status, solves=r.solves, message=r.message, t0=t0, t_warm=t_warm,
                   warm_start=warm_best, ga_race=raced_info)


def _run_layer_exact_in_space(nest: LoopNest, space: LayerSpace, objective: str, options: dict[str, Any],
                              solve_options: SolveOptions, solver: str, seeds: Sequence[tuple[str, Mapping]],
                              t0: float, limit: float | None) -> dict[str, Any]:
    """The exact method on one layer within its constrained map space: per architecture choice (PE-array shape),
    the warm-start heuristics (and the ``seeds`` valid there) kept within the space and the model solved with the
    space's rows; the best mapping over the choices, with the least of their bounds (a choice proven infeasible
    bounds nothing). Status ``infeasible`` when every choice is proven infeasible. A space with alternatives
    (``one_of``) solves every architecture choice of each alternative. ``t0`` is when the layer started
    (``time.perf_counter()``) and ``limit`` its time limit from then (:func:`run_layer_exact` computes both)."""
    from dlaopt.formulations.mapping.exact import solve_layer
    from dlaopt.formulations.mapping.heuristics import HEURISTICS, SpaceRules
    from dlaopt.specs.tuning import levers

    per_arch: list[tuple[ArchChoice, Any, list[tuple[str, float]]]] = []
    t_warm = 0.0
    runs = [(alt, choice) for alt in space.choices for choice in alt.archs]
    # the GA within the space (its time shared over the choices)
    race = start_race(run_layer_in_space, ("ga", nest, space, objective, options, solve_options.seed, limit), options,
                      solve_options, limit)

    def fits(got: tuple[Mapping, tuple[int, int] | None], choice: ArchChoice, rules: SpaceRules) -> bool:
        """Whether the raced GA's mapping is one of this architecture choice's (its shape, within its rules)."""
        return got[1] == choice.shape and _seed_valid(nest, choice.arch, got[0]) and rules.ok(got[0])

    try:
        for i, (alt, choice) in enumerate(runs):
            share = None if limit is None else max(0.0, limit - (time.perf_counter() - t0)) / (len(runs) - i)
            tw = time.perf_counter()
            warm: list[Mapping] = []
            warm_values: list[tuple[str, float]] = []
            rules = SpaceRules(nest, choice.arch, alt)
            for name, m in seeds:
                if _seed_valid(nest, choice.arch, m) and rules.ok(m):
                    warm.append(m)
                    warm_values.append((name, evaluate_mapping(nest, choice.arch, m).objective(objective)))
            for h in options["warm_start"]:
                h_limit = None if share is None else max(0.0, share - (time.perf_counter() - tw))
                if h_limit is not None and h_limit <= 0:
                    continue
                m = HEURISTICS[h](nest, choice.arch, objective, seed=solve_options.seed, budget=_budget(h, options),
                                  time_limit=h_limit, rules=rules)
                if m is not None and rules.ok(m):
                    rep = evaluate_mapping(nest, choice.arch, m)
                    if rep.valid:
                        warm.append(m)
                        warm_values.append((h, rep.objective(objective)))
            t_warm += time.perf_counter() - tw
            left = None if share is None else max(0.1, share - (time.perf_counter() - tw))
            o = _sub_options(solve_options, left)

            def raced(choice: ArchChoice = choice, rules: SpaceRules = rules) -> list[Mapping]:
                got = race.ready() if race is not None else None
                return [got[0]] if got is not None and fits(got, choice, rules) else []

            r = solve_layer(nest, choice.arch, objective, warm=warm, options=o, solver=solver, space=alt,
                            tuning=levers(options, opts.EXACT_LEVERS), incumbents=raced if race is not None else None)
            per_arch.append((choice, r, warm_values))
        got = None
        if race is not None:
            got = race.finish(wait=any(r.status not in (Status.OPTIMAL, Status.INFEASIBLE) for _, r, _ in per_arch))
    finally:
        if race is not None:
            race.stop()
    raced_info: dict[str, Any] | None = None if race is None else {"objective": None, "won": False}
    if got is not None and raced_info is not None:  # offered to the choice it belongs to
        for (alt, choice), (_, r, warm_values) in zip(runs, per_arch, strict=True):
            if fits(got, choice, SpaceRules(nest, choice.arch, alt)):
                value = evaluate_mapping(nest, choice.arch, got[0]).objective(objective)
                warm_values.append((RACE_NAME, value))
                raced_info["objective"] = value
                offer_raced(r, got[0], value)
                break
    live = [(c, r, w) for c, r, w in per_arch if r.status != Status.INFEASIBLE]
    found = [(c, r, w) for c, r, w in live if r.mapping is not None and r.objective is not None]
    best = min(found, key=lambda x: x[1].objective) if found else None
    statuses = {r.status for _, r, _ in live}
    if not live:
        status = Status.INFEASIBLE
    elif best is None:
        status = Status.NO_SOLUTION if Status.ERROR not in statuses else Status.ERROR
    elif statuses == {Status.OPTIMAL}:
        status = Status.OPTIMAL
    elif Status.ERROR in statuses:
        status = Status.ERROR
    else:
        status = Status.FEASIBLE
    bound = None
    if live and all(r.bound is not None for _, r, _ in live):
        bound = min(r.bound for _, r, _ in live)
    if best is not None and bound is not None:
        bound = min(bound, best[1].objective)
    warm_all = [w for _, _, ws in per_arch for w in ws]
    msgs = sorted({r.message for _, r, _ in per_arch if r.message})
    if not live:
        msgs.insert(0, f"no mapping of layer {nest.describe()} meets its constraints ("
                    + ", ".join(space.sources) + ")")
    r_best = best[1] if best is not None else None
    return {**_answer(r_best, bound=bound, status=status, solves=sum(r.solves for _, r, _ in per_arch),
                      message="; ".join(msgs), t0=t0, t_warm=t_warm,
                      warm_start=min(warm_all, key=lambda w: w[1]) if warm_all else None,
                      ga_race=None if raced_info is None else {
                          **raced_info, "won": got is not None and r_best is not None and r_best.mapping is got[0]}),
            "shape": None if best is None else best[0].shape}


def run_layer_exhaustive(nest: LoopNest, arch: MappingArch, objective: str, limit: int,
                         space: LayerSpace | None = None) -> dict[str, Any]:
    """Every mapping of one layer enumerated (within ``space`` when it is constrained; ``arch`` is then unused):
    the best, the PE-array shape it is for, and a message when the space is too large to enumerate."""
    from dlaopt.formulations.mapping.exhaustive import SpaceTooLarge, exhaustive, exhaustive_in_space

    t0 = time.perf_counter()
    shape = None
    try:
        if space is not None and space.constrained:
            found = exhaustive_in_space(nest, space, objective, limit=limit)
            m, shape = found if found is not None else (None, None)
        else:
            m = exhaustive(nest, space.archs[0].arch if space is not None else arch, objective, limit=limit)
        msg = ""
    except SpaceTooLarge as exc:
        m, msg = None, str(exc)
    return {"mapping": m, "shape": shape, "time_s": time.perf_counter() - t0, "message": msg}


__all__ = ["capped", "run_layer_exact", "run_layer_exhaustive", "run_layer_heuristic", "run_layer_in_space"]
