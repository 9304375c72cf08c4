"""Hypothesis-generated workloads and accelerators never crash the harness: every outcome is a status, and every
solution that leaves it has been verified."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pinning_cases import small_accelerator

from dlaopt.harness import solve
from dlaopt.io.instance import Instance
from dlaopt.solvers.result import SolveOptions, Status
from dlaopt.workload import NetworkBuilder


@st.composite
def workloads(draw: st.DrawFn):
    b = NetworkBuilder("hyp", dtype_bytes=draw(st.sampled_from([1, 2])))
    c = draw(st.integers(1, 4))
    hw = draw(st.integers(2, 6))
    live = [b.input("x", (1, c, hw, hw))]
    for i in range(draw(st.integers(1, 7))):
        x = live[draw(st.integers(0, len(live) - 1))]
        kind = draw(st.sampled_from(["conv", "act", "add", "pool", "concat", "split"]))
        shape = b.shape(x)
        if kind == "conv":
            y = b.conv2d(x, draw(st.integers(1, 4)), 3, padding=1, name=f"conv{i}")
        elif kind == "act":
            y = b.activation(x, "relu", name=f"act{i}")
        elif kind == "add":
            same = [t for t in live if b.shape(t) == shape]
            y = b.add(x, same[draw(st.integers(0, len(same) - 1))], name=f"add{i}")
        elif kind == "pool" and shape[2] >= 2:
            y = b.pool(x, "max", 2, name=f"pool{i}")
        elif kind == "concat":
            same = [t for t in live if b.shape(t)[2:] == shape[2:]]
            y = b.concat([x, same[draw(st.integers(0, len(same) - 1))]], name=f"cat{i}")
        elif kind == "split" and shape[1] >= 2:
            y = b.split(x, [1, shape[1] - 1], name=f"split{i}")[draw(st.integers(0, 1))]
        else:
            y = b.activation(x, "relu", name=f"act{i}")
        live.append(y)
    return b.build(outputs=[live[-1]])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    wl=workloads(),
    caps=st.lists(st.integers(16, 4096), min_size=1, max_size=3),
    objective=st.sampled_from(["transfers", "dma_cycles", "thesis"]),
    oversize=st.sampled_from(["tile", "cap"]),
    method=st.sampled_from(["exact", "naive", "onsram", "greedy", "coloring", "cpsat"]),
)
def test_random_workloads_never_crash(wl, caps, objective, oversize, method):
    inst = Instance(problem="pinning", name="hyp", workload=wl, hardware=small_accelerator(caps),
                    objective=objective, options={"oversize": oversize, "chunk_fraction": 0.5, "pin_weights": True})
    opts = SolveOptions(seed=0, threads=1, deterministic=True, node_limit=200,
                        extra={"deterministic_time": 1.0})
    res = solve(inst, method, options=opts)
    assert isinstance(res.status, Status)
    assert res.status != Status.ERROR, res.message
    if res.status in (Status.OPTIMAL, Status.FEASIBLE):
        assert res.verified and res.solution is not None
    if res.status == Status.INFEASIBLE:
        assert res.message
