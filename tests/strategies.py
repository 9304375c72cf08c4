"""Hypothesis strategies shared by the property tests: instance *documents* (the dicts a YAML instance file holds)
for every problem, with generated hardware shapes and small generated workloads.

Documents, not model objects, so that a test goes through the same loader, schema and harness as ``dlaopt compare``.
Hardware shapes cover what the schema accepts: one to four scratchpads / banks / sub-accelerators, unequal
capacities, every scratchpad access mode (``input``, ``output``, both), restricted ``holds``/``operands``, and
capacities tiny enough that operands cannot stay on chip. Workloads stay tiny so that exact methods prove optimality
within node limits.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

ACCESS_MODES = ("any", "input", "output")
ROLES = ("input", "weight", "activation", "output")

_PE = {"axes": [["pe", 4], ["macc", 8]], "macs_per_pe_per_cycle": 1, "vector_lanes": 8}
_DMA = {"bandwidth_bytes_per_cycle": 8, "latency_cycles": 20}


# --------------------------------------------------------------------------------------------------- hardware
@st.composite
def scratchpads(draw: st.DrawFn, *, min_spads: int = 1, max_spads: int = 4, min_capacity: int = 1,
                max_capacity: int = 48, holds: bool = True, banks: bool = False) -> list[dict[str, Any]]:
    """1-4 scratchpad memory documents: unequal capacities, any access mode, sometimes restricted roles/banks."""
    n = draw(st.integers(min_spads, max_spads))
    out = []
    for i in range(n):
        m: dict[str, Any] = {"name": f"spad{i}", "kind": "scratchpad",
                             "capacity_bytes": draw(st.integers(min_capacity, max_capacity)),
                             "bandwidth_bytes_per_cycle": 32}
        access = draw(st.sampled_from(ACCESS_MODES + ("omit",)))
        if access != "omit":
            m["access"] = access
        if holds and draw(st.integers(0, 4)) == 0:
            m["holds"] = sorted(draw(st.sets(st.sampled_from(ROLES), min_size=1)))
        if banks:
            m["banks"] = draw(st.integers(1, 8))
        out.append(m)
    return out


def accelerator_doc(memories: list[dict[str, Any]], *, name: str = "gen") -> dict[str, Any]:
    return {"name": name, "pe_array": dict(_PE), "dma": dict(_DMA),
            "memories": [{"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": 8}, *memories]}


# --------------------------------------------------------------------------------------------------- pinning
@st.composite
def vector_workloads(draw: st.DrawFn, *, max_ops: int = 4, max_len: int = 4) -> dict[str, Any]:
    """A small DAG of activations and element-wise adds on equal-length vectors (tensors of unequal element
    sizes), with weights, reuse and a graph output; every tensor is used."""
    n = draw(st.integers(1, max_len))
    tensors: list[dict[str, Any]] = [{"name": "x", "shape": [n], "role": "input",
                                      "dtype_bytes": draw(st.integers(1, 4))}]
    ops: list[dict[str, Any]] = []
    live = ["x"]
    n_ops = draw(st.integers(1, max_ops))
    for i in range(n_ops):
        a = draw(st.sampled_from(live))
        out = f"t{i}"
        if draw(st.booleans()):
            ops.append({"name": f"op{i}", "kind": "activation", "inputs": [a], "outputs": [out],
                        "attrs": {"function": "relu"}})
        else:
            if draw(st.booleans()) or len(live) < 2:
                b = f"w{i}"
                tensors.append({"name": b, "shape": [n], "role": "weight", "dtype_bytes": draw(st.integers(1, 4))})
            else:
                b = draw(st.sampled_from(live))
            ops.append({"name": f"op{i}", "kind": "elementwise", "inputs": [a, b], "outputs": [out],
                        "attrs": {"function": "add"}})
        tensors.append({"name": out, "shape": [n], "role": "activation", "dtype_bytes": draw(st.integers(1, 4))})
        live.append(out)
    return {"name": "gen", "dtype_bytes": 1, "tensors": _mark_outputs(tensors, ops), "operators": ops}


def _mark_outputs(tensors: list[dict[str, Any]], ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Produced tensors nobody consumes are graph outputs (the loader requires it)."""
    consumed = {t for op in ops for t in op["inputs"]}
    for t in tensors:
        if t["role"] == "activation" and t["name"] not in consumed:
            t["role"] = "output"
    return tensors


@st.composite
def pinning_instances(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "problem": "pinning",
        "name": "gen-pinning",
        "workload": draw(vector_workloads()),
        "hardware": accelerator_doc(draw(scratchpads())),
        "objective": draw(st.sampled_from(["transfers", "dma_cycles", "thesis"])),
        "options": {"oversize": draw(st.sampled_from(["cap", "tile"])), "pin_weights": draw(st.booleans())},
    }


# --------------------------------------------------------------------------------------------------- mapping
@st.composite
def layer_workloads(draw: st.DrawFn) -> dict[str, Any]:
    """One tiny conv2d or matmul layer (a few hundred mappings at most)."""
    if draw(st.booleans()):
        c, k, hw, r = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(2, 4)), draw(
            st.sampled_from([1, 3]))
        tensors = [{"name": "x", "shape": [1, c, hw, hw], "role": "input"},
                   {"name": "w", "shape": [k, c, r, r], "role": "weight"},
                   {"name": "y", "shape": [1, k, hw, hw], "role": "output"}]
        attrs: dict[str, Any] = {"padding": (r - 1) // 2}
        op = {"name": "layer", "kind": "conv2d", "inputs": ["x", "w"], "outputs": ["y"], "attrs": attrs}
    else:
        m, kk, n = draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
        tensors = [{"name": "x", "shape": [m, kk], "role": "input"},
                   {"name": "w", "shape": [kk, n], "role": "weight"},
                   {"name": "y", "shape": [m, n], "role": "output"}]
        op = {"name": "layer", "kind": "matmul", "inputs": ["x", "w"], "outputs": ["y"]}
    return {"name": "layer", "dtype_bytes": draw(st.sampled_from([1, 2])), "tensors": tensors, "operators": [op]}


@st.composite
def mapping_hardware(draw: st.DrawFn) -> dict[str, Any]:
    """DRAM and one to three on-chip levels: buffers / scratchpads (one instance, or one per PE), registers per PE,
    each keeping a subset of the operands (partitioned levels), unequal and sometimes tiny capacities, any access."""
    rows, cols = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2, 3]))
    n_pes = rows * cols
    mems: list[dict[str, Any]] = [{"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": 4,
                                   "read_energy_pj_per_byte": 100, "write_energy_pj_per_byte": 100}]
    per_pe = False
    for i in range(draw(st.integers(1, 3))):
        inner = per_pe or draw(st.booleans())
        kind = "register" if inner else draw(st.sampled_from(["buffer", "scratchpad"]))
        m: dict[str, Any] = {"name": f"m{i}", "kind": kind, "capacity_bytes": draw(st.sampled_from([1, 4, 16, 64,
                                                                                                   256, 1024])),
                             "bandwidth_bytes_per_cycle": draw(st.sampled_from([2, 8, 32])),
                             "read_energy_pj_per_byte": draw(st.sampled_from([0.5, 2, 6])),
                             "write_energy_pj_per_byte": draw(st.sampled_from([0.5, 2, 6]))}
        if inner and n_pes > 1:
            m["instances"] = n_pes
        per_pe = per_pe or inner
        m["operands"] = sorted(draw(st.sets(st.sampled_from("IWO"), min_size=1)))
        access = draw(st.sampled_from(ACCESS_MODES + ("omit",)))
        if access != "omit":
            m["access"] = access
        mems.append(m)
    return {"name": "gen-map", "clock_mhz": 200, "mac_energy_pj": 1.0, "pe_array": {"axes": [["rows", rows],
                                                                                              ["cols", cols]]},
            "dma": {"bandwidth_bytes_per_cycle": 4}, "memories": mems}


@st.composite
def mapping_instances(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "problem": "mapping",
        "name": "gen-mapping",
        "workload": draw(layer_workloads()),
        "hardware": draw(mapping_hardware()),
        "objective": draw(st.sampled_from(["energy", "latency", "edp"])),
        "options": {"workers": 1, "random_samples": 30, "ga_population": 6, "ga_generations": 3},
    }


# --------------------------------------------------------------------------------------------------- multiaccel
@st.composite
def multiaccel_instances(draw: st.DrawFn) -> dict[str, Any]:
    """One to four sub-accelerators (unequal speeds and bandwidth needs) sharing a system bandwidth; 1-5 jobs."""
    n_acc = draw(st.integers(1, 4))
    jobs = []
    for j in range(draw(st.integers(1, 5))):
        jobs.append({
            "name": f"j{j}",
            "tenant": draw(st.sampled_from(["a", "b", "c"])),
            "ops": draw(st.integers(1, 10)) * 1e8,
            "latency_us": [draw(st.integers(1, 50)) * 10 for _ in range(n_acc)],
            "bandwidth_gbps": [draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0])) for _ in range(n_acc)],
        })
    accs = [{"name": f"acc{i}", "pe_array": {"axes": [["pe", draw(st.sampled_from([2, 4, 8]))]]}, "dma": dict(_DMA),
             "memories": [{"name": "dram", "kind": "dram", "bandwidth_bytes_per_cycle": 8},
                          *draw(scratchpads(max_spads=2, min_capacity=16, max_capacity=4096))]}
            for i in range(n_acc)]
    return {
        "problem": "multiaccel",
        "name": "gen-multiaccel",
        "workload": {"name": "gen", "jobs": jobs},
        "hardware": {"accelerators": accs, "system_bandwidth_gbps": draw(st.sampled_from([0.5, 1.0, 2.0, 8.0]))},
        "objective": draw(st.sampled_from(["makespan", "mean_completion"])),
        "options": {"precedence": draw(st.booleans()), "magma_population": 4, "magma_epochs": 2},
    }


# --------------------------------------------------------------------------------------------------- bankmap
@st.composite
def feature_map_workloads(draw: st.DrawFn, *, max_ops: int = 4) -> dict[str, Any]:
    """A small NCHW graph: convolutions, activations, residual adds, channel concats, pooling and a final FC."""
    c, hw = draw(st.integers(1, 3)), draw(st.sampled_from([2, 4]))
    tensors: list[dict[str, Any]] = [{"name": "x", "shape": [1, c, hw, hw], "role": "input"}]
    shapes = {"x": [1, c, hw, hw]}
    ops: list[dict[str, Any]] = []
    live = ["x"]
    for i in range(draw(st.integers(1, max_ops))):
        a = draw(st.sampled_from(live))
        sa = shapes[a]
        out = f"t{i}"
        kind = draw(st.sampled_from(["conv", "act", "add", "concat", "pool"]))
        if kind == "conv":
            k = draw(st.integers(1, 3))
            tensors.append({"name": f"w{i}", "shape": [k, sa[1], 1, 1], "role": "weight"})
            ops.append({"name": f"op{i}", "kind": "conv2d", "inputs": [a, f"w{i}"], "outputs": [out]})
            so = [1, k, sa[2], sa[3]]
        elif kind == "add" and len([t for t in live if shapes[t] == sa]) > 1:
            b = draw(st.sampled_from([t for t in live if shapes[t] == sa and t != a]))
            ops.append({"name": f"op{i}", "kind": "elementwise", "inputs": [a, b], "outputs": [out],
                        "attrs": {"function": "add"}})
            so = list(sa)
        elif kind == "concat" and len([t for t in live if shapes[t][2:] == sa[2:]]) > 1:
            b = draw(st.sampled_from([t for t in live if shapes[t][2:] == sa[2:] and t != a]))
            ops.append({"name": f"op{i}", "kind": "concat", "inputs": [a, b], "outputs": [out], "attrs": {"axis": 1}})
            so = [1, sa[1] + shapes[b][1], sa[2], sa[3]]
        elif kind == "pool" and sa[2] >= 2:
            ops.append({"name": f"op{i}", "kind": "pool", "inputs": [a], "outputs": [out],
                        "attrs": {"mode": "max", "kernel": 2}})
            so = [1, sa[1], sa[2] // 2, sa[3] // 2]
        else:
            ops.append({"name": f"op{i}", "kind": "activation", "inputs": [a], "outputs": [out],
                        "attrs": {"function": "relu"}})
            so = list(sa)
        shapes[out] = so
        tensors.append({"name": out, "shape": so, "role": "activation"})
        live.append(out)
    return {"name": "gen", "dtype_bytes": 1, "tensors": _mark_outputs(tensors, ops), "operators": ops}


@st.composite
def bankmap_instances(draw: st.DrawFn) -> dict[str, Any]:
    spads = draw(scratchpads(min_capacity=1, max_capacity=256, holds=False, banks=True))
    return {
        "problem": "bankmap",
        "name": "gen-bankmap",
        "workload": draw(feature_map_workloads()),
        "hardware": accelerator_doc(spads),
        "objective": "copy_cost",
        "options": {"offchip_weight": draw(st.sampled_from([0.0, 1.0, 4.0]))},
    }


# --------------------------------------------------------------------------------------------------- systolic
@st.composite
def systolic_instances(draw: st.DrawFn, *, codesign: bool | None = None, missing: str | None = None) -> dict[str, Any]:
    """Two or three tiny layers on a DeepOpt array of 2-8 x 2-8 PEs with unequal SRAMs of the technology table's
    sizes (4 kB ones are too small for some schedules of some layers); some ``params`` left out or none at all (the
    preset's defaults: 32 x 64 PEs, 16 / 32 / 8 kB, over small area budgets). Half the instances co-design the
    hardware on a small area budget (1 to a few hundred design points; 0.9 mm² holds only the 8 x 8, 4 / 4 / 4 kB
    point, where some schedules cannot run some layers), so that a heuristic must pick a point of the design space
    rather than return the instance's hardware. ``codesign`` and ``missing`` (``"none"``, ``"some"`` or ``"all"``
    params left out) pin those choices."""
    c, hw = draw(st.integers(1, 8)), draw(st.sampled_from([4, 8, 16]))
    k1, k2 = draw(st.integers(1, 16)), draw(st.integers(1, 16))
    r = draw(st.sampled_from([1, 3]))
    flat = k2 * hw * hw
    tensors = [{"name": "x", "shape": [1, c, hw, hw], "role": "input"},
               {"name": "w1", "shape": [k1, c, r, r], "role": "weight"},
               {"name": "y1", "shape": [1, k1, hw, hw], "role": "activation"},
               {"name": "w2", "shape": [k2, k1, 1, 1], "role": "weight"},
               {"name": "y2", "shape": [1, k2, hw, hw], "role": "activation"}]
    ops = [{"name": "conv1", "kind": "conv2d", "inputs": ["x", "w1"], "outputs": ["y1"],
            "attrs": {"padding": (r - 1) // 2}},
           {"name": "conv2", "kind": "conv2d", "inputs": ["y1", "w2"], "outputs": ["y2"]}]
    if draw(st.booleans()):
        tensors += [{"name": "f", "shape": [1, flat], "role": "activation"},
                    {"name": "wf", "shape": [flat, 4], "role": "weight"},
                    {"name": "out", "shape": [1, 4], "role": "output"}]
        ops += [{"name": "flat", "kind": "reshape", "inputs": ["y2"], "outputs": ["f"], "attrs": {"shape": [1, flat]}},
                {"name": "fc", "kind": "matmul", "inputs": ["f", "wf"], "outputs": ["out"]}]
    else:
        tensors[-1]["role"] = "output"
    sizes = st.sampled_from([4, 8, 16, 32])
    params = {"rows": draw(st.sampled_from([2, 4, 8])), "cols": draw(st.sampled_from([2, 4, 8])),
              "filter_kb": draw(sizes), "ifmap_kb": draw(sizes), "psum_kb": draw(sizes)}
    hardware: dict[str, Any] = {"preset": "deepopt", "params": params}
    missing = missing or draw(st.sampled_from(["none", "some", "all"]))
    if missing == "some":  # the preset's defaults fill the rest
        for key in draw(st.sets(st.sampled_from(sorted(params)), min_size=1, max_size=len(params) - 1)):
            del params[key]
    elif missing == "all":
        del hardware["params"]
    options: dict[str, Any] = {"fc_batch": draw(st.sampled_from([1, 4]))}
    if draw(st.booleans()) if codesign is None else codesign:
        options["codesign"] = True
        options["design_space"] = {"area_budget_mm2": draw(st.sampled_from([0.9, 1.0, 1.2, 2.0]))}
    if draw(st.booleans()):
        options["max_schedules"] = draw(st.integers(1, 2))
    if draw(st.booleans()):
        options["schedules"] = sorted(draw(st.sets(st.sampled_from(["XYZiZo", "XZiYZo", "XYZoZi", "XZoYZi",
                                                                    "ZiXYZo"]), min_size=1)))
    return {
        "problem": "systolic",
        "name": "gen-systolic",
        "workload": {"name": "gen", "dtype_bytes": 1, "tensors": tensors, "operators": ops},
        "hardware": hardware,
        "objective": draw(st.sampled_from(["ed", "energy", "delay", "network_ed"])),
        "options": options,
    }


INSTANCES = {
    "pinning": pinning_instances,
    "mapping": mapping_instances,
    "multiaccel": multiaccel_instances,
    "bankmap": bankmap_instances,
    "systolic": systolic_instances,
}
