"""Backends agree with brute force on small MILPs; statuses, warm starts, CP-SAT scaling, a 100k-column build."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from dlaopt.solvers.backends import SolverSpecError, available_solvers, keep_warm_start, parse_solver, solve_linear
from dlaopt.solvers.cpsat_backend import objective_scale_for, solve_linear_cpsat
from dlaopt.solvers.highs_backend import solve_highs
from dlaopt.solvers.linear import LinearModel, LinearModelBuilder
from dlaopt.solvers.pyomo_backend import solver_options_for
from dlaopt.solvers.result import BackendResult, SolveOptions, Status, TracePoint

PYOMO_HIGHS = "pyomo:appsi_highs"
_AVAILABLE = available_solvers()
SOLVERS = [
    "highs",
    "cpsat",
    pytest.param(PYOMO_HIGHS, marks=pytest.mark.skipif(PYOMO_HIGHS not in _AVAILABLE,
                                                       reason="appsi_highs not available through Pyomo")),
]


def det_options(**kw: object) -> SolveOptions:
    """Reproducible settings: seed 0, one thread, no wall-clock limit."""
    base: dict[str, object] = {"seed": 0, "threads": 1, "mip_rel_gap": 0.0}
    base.update(kw)
    return SolveOptions(**base)  # type: ignore[arg-type]


def random_milp(seed: int, cost_scale: float = 1.0) -> LinearModel:
    """8 binaries + 2 integers in [0, 3]; 3 <= rows and 1 >= row with integer coefficients; x = 0 is feasible."""
    rng = np.random.default_rng(seed)
    b = LinearModelBuilder(f"rand{seed}")
    b.add_vars("bin", 8, upper=1.0, cost=rng.integers(-10, 6, 8) * cost_scale, integer=True)
    b.add_vars("int", 2, upper=3.0, cost=rng.integers(-8, 4, 2) * cost_scale, integer=True)
    n, m_le = 10, 3
    a_le = rng.integers(-2, 7, size=(m_le, n)).astype(float)
    rows, cols = np.nonzero(a_le)
    b.add_rows("le", m_le, rows, cols, a_le[rows, cols], upper=rng.integers(4, 12, m_le).astype(float))
    a_ge = rng.integers(-1, 3, size=(1, n)).astype(float)
    rows, cols = np.nonzero(a_ge)
    b.add_rows("ge", 1, rows, cols, a_ge[rows, cols], lower=0.0)
    b.c0 = float(rng.integers(-3, 4)) * cost_scale
    return b.build()


def brute_force(model: LinearModel) -> float | None:
    """Minimum over every integer point within the (finite, integral) bounds; None if none is feasible."""
    ranges = [range(int(lo), int(up) + 1) for lo, up in zip(model.col_lower, model.col_upper, strict=True)]
    pts = np.array(list(itertools.product(*ranges)), dtype=float)
    dense = np.zeros((model.n_rows, model.n_cols))
    for i in range(model.n_rows):
        a, b = model.indptr[i], model.indptr[i + 1]
        dense[i, model.indices[a:b]] = model.data[a:b]
    act = pts @ dense.T
    ok = np.all((act >= model.row_lower - 1e-9) & (act <= model.row_upper + 1e-9), axis=1)
    if not ok.any():
        return None
    return float(np.min(pts[ok] @ model.c) + model.c0)


def infeasible_model() -> LinearModel:
    b = LinearModelBuilder("infeasible")
    b.add_vars("y", 3, upper=1.0, cost=1.0, integer=True)
    b.add_rows("odd", 1, [0, 0, 0], [0, 1, 2], 2.0, lower=3.0, upper=3.0)  # 2(y0+y1+y2) = 3
    return b.build()


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed", range(6))
def test_random_milp_matches_brute_force(solver: str, seed: int) -> None:
    model = random_milp(seed)
    expected = brute_force(model)
    assert expected is not None
    res = solve_linear(model, solver, det_options())
    assert res.status == Status.OPTIMAL, res.message
    assert res.x is not None and res.x.shape == (model.n_cols,)
    assert model.max_violation(res.x) <= 1e-6
    assert res.objective == pytest.approx(expected, abs=1e-6)
    assert model.objective_value(res.x) == pytest.approx(expected, abs=1e-6)
    assert res.bound is not None and res.bound <= expected + 1e-6
    assert res.solve_time_s >= 0.0
    assert res.solver == ("pyomo:appsi_highs" if solver == PYOMO_HIGHS else solver)
    assert res.solver_version


@pytest.mark.parametrize("solver", SOLVERS)
def test_infeasible(solver: str) -> None:
    res = solve_linear(infeasible_model(), solver, det_options())
    assert res.status == Status.INFEASIBLE, res.message
    assert res.x is None and res.objective is None


def test_pure_lp_on_highs() -> None:
    b = LinearModelBuilder("lp")
    b.add_vars("y", 2, cost=[-1.0, -2.0])
    b.add_rows("r", 2, [0, 0, 1], [0, 1, 0], [1.0, 1.0, 1.0], upper=[3.5, 1.0])
    b.c0 = 0.25
    model = b.build()
    res = solve_highs(model, det_options())
    assert res.status == Status.OPTIMAL, res.message
    assert res.objective == pytest.approx(-7.0 + 0.25)
    assert res.bound == pytest.approx(res.objective)
    assert res.x is not None and np.allclose(res.x, [0.0, 3.5])
    assert res.solver == "highs" and res.solver_version.startswith("1.")


def test_unbounded_lp_is_error_on_highs() -> None:
    b = LinearModelBuilder("unbounded")
    b.add_vars("y", 1, cost=-1.0)
    b.add_rows("r", 1, [0], [0], [1.0], lower=0.0)
    res = solve_highs(b.build(), det_options())
    assert res.status == Status.ERROR
    assert "nbounded" in res.message


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("node_limit", [0, 1])
def test_warm_start_accepted_under_node_limit(solver: str, node_limit: int) -> None:
    model = random_milp(3)
    ws = np.zeros(model.n_cols)
    assert model.max_violation(ws) == 0.0
    ws_obj = model.objective_value(ws)
    res = solve_linear(model, solver, det_options(node_limit=node_limit, warm_start=ws))
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL), res.message
    assert res.x is not None and model.max_violation(res.x) <= 1e-6
    assert res.objective is not None and res.objective <= ws_obj + 1e-9
    assert res.objective == pytest.approx(model.objective_value(res.x))


@pytest.mark.parametrize("solver", SOLVERS)
def test_optimal_warm_start_is_returned(solver: str) -> None:
    model = random_milp(1)
    first = solve_linear(model, solver, det_options())
    assert first.x is not None
    res = solve_linear(model, solver, det_options(node_limit=0, warm_start=first.x))
    assert res.x is not None
    assert res.objective == pytest.approx(first.objective, abs=1e-6)


def test_keep_warm_start_fallback() -> None:
    model = random_milp(2)
    ws = np.zeros(model.n_cols)
    empty = BackendResult(Status.NO_SOLUTION, None, None, None, "x", "0", 0.0)
    res = keep_warm_start(model, SolveOptions(warm_start=ws), empty)
    assert res.status == Status.FEASIBLE
    assert res.x is not None and np.array_equal(res.x, ws)
    assert res.objective == pytest.approx(model.objective_value(ws))
    assert "warm start kept" in res.message
    # an infeasible warm start is never returned
    bad = np.full(model.n_cols, 5.0)
    empty2 = BackendResult(Status.NO_SOLUTION, None, None, None, "x", "0", 0.0)
    assert keep_warm_start(model, SolveOptions(warm_start=bad), empty2).status == Status.NO_SOLUTION
    # errors are left alone
    err = BackendResult(Status.ERROR, None, None, None, "x", "0", 0.0, message="boom")
    assert keep_warm_start(model, SolveOptions(warm_start=ws), err).status == Status.ERROR


@pytest.mark.parametrize("spec", ["gurobi", "pyomo:", "", "HiGHS ", "cp-sat", "pyomo"])
def test_unknown_solver_string(spec: str) -> None:
    with pytest.raises(SolverSpecError, match="pyomo:<name>"):
        solve_linear(random_milp(0), spec, det_options())
    assert issubclass(SolverSpecError, ValueError)


def test_parse_solver() -> None:
    assert parse_solver("highs") == ("highs", None)
    assert parse_solver("cpsat") == ("cpsat", None)
    assert parse_solver("pyomo:gurobi") == ("pyomo", "gurobi")


def test_available_solvers() -> None:
    assert _AVAILABLE[:2] == ["highs", "cpsat"]
    assert all(s.startswith("pyomo:") for s in _AVAILABLE[2:])


def test_unavailable_pyomo_solver_is_error() -> None:
    res = solve_linear(random_milp(0), "pyomo:no_such_solver_xyz", det_options())
    assert res.status == Status.ERROR
    assert res.message == "solver 'no_such_solver_xyz' is not available through Pyomo (install it or pick another)"


def test_cpsat_objective_scaling_round_trips() -> None:
    model = random_milp(4, cost_scale=0.125)  # coefficients like 0.5, -1.25, 0.375 -> scale 1000
    expected = brute_force(model)
    assert expected is not None
    assert objective_scale_for(model.c) == 1000
    trace: list[TracePoint] = []
    res = solve_linear_cpsat(model, det_options(progress=trace.append))
    assert res.status == Status.OPTIMAL, res.message
    assert res.raw["objective_scale"] == 1000
    assert res.objective == pytest.approx(expected, abs=1e-9)
    assert res.bound == pytest.approx(expected, abs=1e-9)
    assert trace and trace[-1].incumbent == pytest.approx(expected, abs=1e-9)
    assert res.trace == trace


def test_cpsat_half_coefficients() -> None:
    b = LinearModelBuilder("half")
    b.add_vars("y", 2, upper=3.0, cost=[-0.5, -1.5], integer=True)
    b.add_rows("r", 1, [0, 0], [0, 1], [1.0, 1.0], upper=4.0)
    b.c0 = 0.25
    res = solve_linear_cpsat(b.build(), det_options())
    assert res.status == Status.OPTIMAL
    assert res.raw["objective_scale"] == 10
    assert res.objective == pytest.approx(-0.5 - 4.5 + 0.25)


@pytest.mark.parametrize(
    ("cost", "coef", "upper", "fragment"),
    [
        (1.0 / 3.0, 1.0, 1.0, "integral objective"),
        (1.0, 1.5, 1.0, "integral constraint coefficients"),
        (1.0, 1.0, np.inf, "finite column bounds"),
    ],
)
def test_cpsat_untranslatable_models_are_errors(cost: float, coef: float, upper: float, fragment: str) -> None:
    b = LinearModelBuilder("bad")
    b.add_vars("y", 2, upper=upper, cost=cost, integer=True)
    b.add_rows("r", 1, [0, 0], [0, 1], coef, upper=2.0)
    res = solve_linear(b.build(), "cpsat", det_options())
    assert res.status == Status.ERROR
    assert fragment in res.message


def test_cpsat_continuous_columns_treated_as_integer() -> None:
    b = LinearModelBuilder("cont")
    b.add_vars("y", 2, upper=10.0, cost=[-1.0, -1.0])  # continuous, integral bounds
    b.add_rows("r", 1, [0, 0], [0, 1], [2.0, 3.0], upper=12.5)  # fractional row bound tightened to 12
    res = solve_linear_cpsat(b.build(), det_options())
    assert res.status == Status.OPTIMAL
    assert res.objective == pytest.approx(-6.0)


def test_cpsat_deterministic_mode_is_reproducible() -> None:
    model = random_milp(5)
    opts = SolveOptions(seed=0, threads=2, deterministic=True, mip_rel_gap=0.0, extra={"deterministic_time": 5.0})
    a = solve_linear_cpsat(model, opts)
    b = solve_linear_cpsat(model, opts)
    assert a.status == b.status == Status.OPTIMAL
    assert a.x is not None and b.x is not None and np.array_equal(a.x, b.x)
    assert a.raw["solver"].parameters.interleave_search


def test_highs_trace_and_progress() -> None:
    model = random_milp(0)
    seen: list[TracePoint] = []
    res = solve_highs(model, det_options(progress=seen.append))
    assert res.status == Status.OPTIMAL
    assert seen == res.trace and seen
    assert seen[-1].incumbent == pytest.approx(res.objective)
    times = [p.time_s for p in seen]
    assert times == sorted(times)


def test_highs_thread_count_change_is_graceful() -> None:
    model = random_milp(0)
    first = solve_highs(model, det_options(threads=1))
    second = solve_highs(model, det_options(threads=3))
    assert first.status == second.status == Status.OPTIMAL
    assert second.objective == pytest.approx(first.objective)


def test_highs_100k_columns_build() -> None:
    """A knapsack-like LP relaxation: 100k columns, 1000 rows, 5 nonzeros per column."""
    rng = np.random.default_rng(0)
    n, m, k = 100_000, 1000, 5
    t = time.perf_counter()
    b = LinearModelBuilder("big")
    b.add_vars("x", n, upper=1.0, cost=-rng.uniform(1.0, 10.0, n))
    cols = np.repeat(np.arange(n), k)
    b.add_rows("cap", m, rng.integers(0, m, n * k), cols, rng.uniform(1.0, 5.0, n * k), upper=50.0)
    model = b.build()
    builder_time = time.perf_counter() - t
    res = solve_highs(model, det_options(time_limit=5.0, extra={"highs": {"simplex_iteration_limit": 2000}}))
    print(f"\n100k-column model: LinearModelBuilder {builder_time:.3f}s, "
          f"HiGHS passModel {res.raw['build_time_s']:.3f}s, total solve_highs {res.solve_time_s:.3f}s, "
          f"status {res.status.value} ({res.message})")
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE, Status.NO_SOLUTION)
    assert res.solver == "highs"


def test_cpsat_node_limit_forces_single_plain_worker() -> None:
    """With several workers CP-SAT's conflict limit would not stop the LNS workers (the run would not end)."""
    model = random_milp(0)
    res = solve_linear_cpsat(model, SolveOptions(seed=0, threads=4, deterministic=True, node_limit=0, time_limit=60.0))
    params = res.raw["solver"].parameters
    assert params.num_workers == 1 and not params.interleave_search
    assert params.max_number_of_conflicts == 0
    assert "num_workers 4 -> 1" in res.message
    assert res.status in (Status.NO_SOLUTION, Status.FEASIBLE, Status.OPTIMAL)


def test_pyomo_option_names() -> None:
    opts = SolveOptions(time_limit=10.0, mip_rel_gap=0.01, threads=2, seed=3, node_limit=7)
    assert solver_options_for("gurobi_persistent", opts) == {
        "TimeLimit": 10.0, "MIPGap": 0.01, "Threads": 2, "Seed": 3, "NodeLimit": 7}
    assert solver_options_for("appsi_highs", opts) == {
        "time_limit": 10.0, "mip_rel_gap": 0.01, "threads": 2, "random_seed": 3, "mip_max_nodes": 7}
    cbc = solver_options_for("cbc", SolveOptions(time_limit=5.0, extra={"pyomo_options": {"cuts": "off"}}))
    assert cbc["seconds"] == 5.0 and cbc["ratioGap"] == 1e-4 and cbc["cuts"] == "off"
    assert solver_options_for("scip", opts)["limits/time"] == 10.0
    assert solver_options_for("scip", opts)["limits/gap"] == 0.01
