"""Run ZigZag's mapping search on conv layers and print what it found as JSON (`dlaopt experiment zigzag-compare`).

A standalone script: it imports only the standard library and ``zigzag`` (zigzag-dse 3.9.1) and runs under the
interpreter of ZigZag's own environment, which does not have dlaopt. dlaopt never imports it (it is run by
:mod:`dlaopt.experiments.zigzag_compare` through a subprocess)::

    /path/to/zz-venv/bin/python zigzag_runner.py request.json > result.json
    /path/to/zz-venv/bin/python zigzag_runner.py < request.json

Request (every key but ``layers`` optional)::

    {"layers": [{"name": "conv1", "K": 64, "C": 3, "P": 112, "Q": 112, "R": 7, "S": 7, "stride": 2, "dilation": 1,
                 "batch": 1}],
     "objectives": ["energy", "latency"],
     "hardware": {"rows": 12, "cols": 14, ...},            # see HARDWARE_DEFAULTS
     "search": {"temporal_mapping_type": "even", "lpf_limit": 6, "nb_spatial_mappings": 3, "engine": "loma"}}

The hardware is the Eyeriss-like description of dlaopt's ``eyeriss`` preset in ZigZag's terms:

* operational array ``D1`` = the 12 PE rows and ``D2`` = the 14 PE columns (dlaopt's ``S1:rows`` / ``S1:cols``);
* ``rf``: one 512 B memory per PE (``served_dimensions: []``) holding I, W and O. dlaopt's RF reads 6 B/cycle and
  writes 4 B/cycle on a separate port, as a fluid bandwidth (bytes moved / bandwidth). ZigZag instead charges every
  (operand, direction) a whole number of cycles per period, ``ceil(bits / bandwidth_max)``, and adds up the stalls
  of the transfers sharing a port: one 48-bit read port would take a cycle for each of the 16-bit I, W and partial
  sum reads of a MAC (measured: ZigZag's latency of the same mapping about 2x dlaopt's). The default
  ``rf_ports="per-operand"`` therefore splits the same 6 + 4 B/cycle into 16-bit ports — one read port each for I
  (to the MACs), W (to the MACs) and O (to the MACs and drains to the GLB), one write port for the fills of I and W
  and one for O (partial sums from the MACs and reloads from the GLB); ``rf_ports="shared"`` gives the single 48-bit
  read and 32-bit write ports. Either way reads towards the MACs and drains use read ports and fills and updates
  write ports, the split dlaopt's cost model makes;
* ``glb``: 108 KB, one read/write port of 512 bit/cycle (64 B), serving the whole array (multicast / reduction);
* ``dram``: one read/write port of 128 bit/cycle (16 B);
* energies per 16-bit access: MAC 1, RF 1, GLB 6, DRAM 200. ZigZag charges ``r_cost``/``w_cost`` per word of the
  port's ``bandwidth_max`` bits, with ``bandwidth_min = 16``: so ``cost = e16 * bandwidth_max / 16`` makes every
  16 bits moved cost ``e16`` (dlaopt's per-byte energies are half the per-16-bit figures: the same scale);
* 16-bit inputs, weights, outputs *and partial sums* (dlaopt keeps partial sums at the output word size).

The workload declares no padding: the input is ``stride * (P - 1) + R`` rows, as in dlaopt's loop nest.

Search: ``get_hardware_performance_zigzag`` with LOMA, ``temporal_mapping_type="even"`` (the memory allocator only
accepts level cuts that are the same for every operand — dlaopt's mapping space: one temporal slot per level shared
by all operands), ``lpf_limit`` 6 and 3 generated spatial mappings (the API defaults). ``search_seconds`` times that
call only (the ``import zigzag.api`` of about 1 s is excluded).

Output, per (layer, objective): ZigZag's own ``energy`` and ``latency`` (cycles), ``search_seconds``, the spatial
mapping per array dimension (``{"D1": {"OX": 12}, ...}``, fractional factors kept as floats and listed under
``fractional``), and the temporal loops per memory level (innermost to outermost, each level's loops innermost
first) for every operand, both as LOMA allocated them (``loops_as_allocated``: the level cut, equal for all
operands with an even mapping; ``even`` says whether it is) and after ZigZag's stationarity merge-down
(``loops_stationary``, what its cost model uses). A failed run records ``error`` and the runner goes on.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import tempfile
import time
import traceback
from importlib import metadata
from typing import Any

HARDWARE_DEFAULTS: dict[str, Any] = {
    "rows": 12,  # D1
    "cols": 14,  # D2
    "rf_bytes": 512,
    "rf_ports": "per-operand",  # or "shared" (see the module docstring)
    "rf_read_bytes_per_cycle": 6,
    "rf_write_bytes_per_cycle": 4,
    "glb_bytes": 108 * 1024,
    "glb_bytes_per_cycle": 64,
    "dram_bytes_per_cycle": 16,
    "e_mac": 1.0,  # energies per 16-bit access
    "e_rf": 1.0,
    "e_glb": 6.0,
    "e_dram": 200.0,
    "word_bits": 16,  # inputs, weights, final outputs
    "psum_bits": 16,  # partial sums
}
SEARCH_DEFAULTS: dict[str, Any] = {
    "engine": "loma",
    "temporal_mapping_type": "even",
    "lpf_limit": 6,
    "nb_spatial_mappings": 3,
}
# ZigZag's names of the conv loop dimensions; P/Q are output rows/cols (OY/OX), R/S filter rows/cols (FY/FX)
ZZ_DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX")
GRANULARITY_BITS = 16


# ------------------------------------------------------------------------------------------------ inputs
def workload(layer: dict[str, Any], hw: dict[str, Any]) -> list[dict[str, Any]]:
    """One conv layer in ZigZag's workload format (a list of layer dicts)."""
    s, dil = int(layer.get("stride", 1)), int(layer.get("dilation", 1))
    sizes = [int(layer.get("batch", 1)), layer["K"], layer["C"], layer["P"], layer["Q"], layer["R"], layer["S"]]
    return [{
        "id": 0,
        "name": layer["name"],
        "operator_type": "Conv",
        "equation": "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]",
        "dimension_relations": [f"ix={s}*ox+{dil}*fx", f"iy={s}*oy+{dil}*fy"],
        "loop_dims": list(ZZ_DIMS),
        "loop_sizes": [int(x) for x in sizes],
        # O = partial-sum precision, O_final = final output precision (bits)
        "operand_precision": {"W": hw["word_bits"], "I": hw["word_bits"], "O": hw["psum_bits"],
                              "O_final": hw["word_bits"]},
        "operand_source": {"W": 0, "I": 0},  # source == own id: a constant operand (no producer layer)
    }]


def _directions(ops: list[str], kind: str) -> list[str]:
    """Port allocations: fh = written from the level above, tl = read towards the level below (MACs), fl = written
    from below, th = read towards the level above. kind: "read", "write" or "rw"."""
    out: list[str] = []
    for op in ops:
        dirs = ["fh", "tl"] if op != "O" else ["fh", "tl", "fl", "th"]
        if kind == "read":
            dirs = [d for d in dirs if d in ("tl", "th")]
        elif kind == "write":
            dirs = [d for d in dirs if d in ("fh", "fl")]
        out += [f"{op}, {d}" for d in dirs]
    return out


def _memory(size_bits: int, e16: float, ports: list[tuple[str, str, int]], served: list[str]) -> dict[str, Any]:
    """ports: (name, type, bandwidth bits/cycle). ZigZag charges a memory's r_cost per word of its read port's
    bandwidth_max and w_cost per word of its write port's: scaled so that every 16 bits cost e16."""
    ops = ["I1", "I2", "O"]
    r_bw = next(bw for _, t, bw in ports if t in ("read", "read_write"))
    w_bw = next(bw for _, t, bw in ports if t in ("write", "read_write"))
    return {
        "size": int(size_bits),
        "r_cost": float(e16 * r_bw / GRANULARITY_BITS),
        "w_cost": float(e16 * w_bw / GRANULARITY_BITS),
        "area": 0.0,
        "latency": 1,
        "operands": ops,
        "ports": [{"name": name, "type": t, "bandwidth_min": GRANULARITY_BITS, "bandwidth_max": int(bw),
                   "allocation": _directions(ops, {"read": "read", "write": "write"}.get(t, "rw"))}
                  for name, t, bw in ports],
        "served_dimensions": served,
    }


def _rf(hw: dict[str, Any]) -> dict[str, Any]:
    """The per-PE register file. ``rf_ports``: "shared" = one read port of ``rf_read_bytes_per_cycle`` and one write
    port of ``rf_write_bytes_per_cycle``; "per-operand" = the same total bandwidth split into one 16-bit read port
    per operand (I, W, O) and one 16-bit write port for the fills of I and W and one for O."""
    size = hw["rf_bytes"] * 8
    if hw["rf_ports"] == "shared":
        rf_r, rf_w = int(hw["rf_read_bytes_per_cycle"] * 8), int(hw["rf_write_bytes_per_cycle"] * 8)
        return _memory(size, hw["e_rf"], [("r_port_1", "read", rf_r), ("w_port_1", "write", rf_w)], [])
    if hw["rf_ports"] != "per-operand":
        raise ValueError(f"rf_ports must be 'shared' or 'per-operand', not {hw['rf_ports']!r}")
    w = GRANULARITY_BITS
    if (hw["rf_read_bytes_per_cycle"] * 8, hw["rf_write_bytes_per_cycle"] * 8) != (3 * w, 2 * w):
        raise ValueError("rf_ports 'per-operand' needs 6 B/cycle of reads and 4 B/cycle of writes")
    mem = _memory(size, hw["e_rf"], [("r_port_1", "read", w), ("w_port_1", "write", w)], [])
    mem["ports"] = [
        {"name": "r_port_1", "type": "read", "bandwidth_min": w, "bandwidth_max": w, "allocation": ["I1, tl"]},
        {"name": "r_port_2", "type": "read", "bandwidth_min": w, "bandwidth_max": w, "allocation": ["I2, tl"]},
        {"name": "r_port_3", "type": "read", "bandwidth_min": w, "bandwidth_max": w, "allocation": ["O, tl", "O, th"]},
        {"name": "w_port_1", "type": "write", "bandwidth_min": w, "bandwidth_max": w,
         "allocation": ["I1, fh", "I2, fh"]},
        {"name": "w_port_2", "type": "write", "bandwidth_min": w, "bandwidth_max": w, "allocation": ["O, fh", "O, fl"]},
    ]
    return mem


def accelerator(hw: dict[str, Any]) -> dict[str, Any]:
    """The Eyeriss-like accelerator in ZigZag's accelerator format (memories innermost first; bits, bits/cycle)."""
    return {
        "name": "dlaopt_eyeriss",
        "memories": {
            "rf": _rf(hw),
            "glb": _memory(hw["glb_bytes"] * 8, hw["e_glb"],
                           [("rw_port_1", "read_write", int(hw["glb_bytes_per_cycle"] * 8))], ["D1", "D2"]),
            "dram": _memory(10**15, hw["e_dram"], [("rw_port_1", "read_write", int(hw["dram_bytes_per_cycle"] * 8))],
                            ["D1", "D2"]),
        },
        "operational_array": {"unit_energy": float(hw["e_mac"]), "unit_area": 1.0, "dimensions": ["D1", "D2"],
                              "sizes": [int(hw["rows"]), int(hw["cols"])]},
    }


def mapping() -> list[dict[str, Any]]:
    """No spatial mapping given: ZigZag generates (and ranks) the candidates itself."""
    return [{"name": "default", "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]


# ------------------------------------------------------------------------------------------------ results
def _num(f: Any) -> int | float:
    f = float(f)
    return int(f) if f.is_integer() else f


def _loops(levels: Any) -> list[list[list[Any]]]:
    return [[[str(d), _num(f)] for d, f in lvl] for lvl in levels]


def extract(cme: Any) -> dict[str, Any]:
    """What the comparison needs from one ``CostModelEvaluation``."""
    layer, acc, tm = cme.layer, cme.accelerator, cme.temporal_mapping
    links = layer.memory_operand_links
    temporal: dict[str, Any] = {}
    for op in layer.layer_operands:  # LayerOperand O, W, I
        mem_op = links.layer_to_mem_op(op)
        n = len(tm.mapping_dic_origin[op])
        temporal[str(op)] = {
            "levels": [acc.get_memory_level(mem_op, lv).name for lv in range(n)],  # innermost first
            "loops_as_allocated": _loops(tm.mapping_dic_origin[op]),
            "loops_stationary": _loops(tm.mapping_dic_stationary[op]),
        }
    cuts = [temporal[op]["loops_as_allocated"] for op in temporal]
    spatial, per_dim, per_dim_int = _spatial(cme)
    fractional = [[oa, d, f] for oa, m in spatial.items() for d, f in m.items() if isinstance(f, float)]
    return {
        "energy": float(cme.energy_total),
        "mac_energy": float(cme.mac_energy),
        "latency": float(cme.latency_total2),
        "latency_breakdown": {
            "ideal_cycle": float(cme.ideal_cycle),
            "ideal_temporal_cycle": float(cme.ideal_temporal_cycle),
            "stall_slack_comb": float(cme.stall_slack_comb),
            "data_onloading": float(cme.data_onloading_cycle),
            "data_offloading": float(cme.data_offloading_cycle),
        },
        "mac_utilization": float(cme.mac_utilization2),
        "macs": int(layer.total_mac_count),
        "spatial_mapping": spatial,
        "spatial_mapping_generated": {str(oa): {str(d): _num(f) for d, f in m.items()}
                                      for oa, m in layer.spatial_mapping.items()},
        "spatial_per_dim": per_dim,
        "spatial_per_dim_int": per_dim_int,
        "fractional": fractional,
        "temporal_mapping": temporal,
        "even": all(c == cuts[0] for c in cuts),
        "mem_energy_per_operand_per_level": {str(op): [float(x) for x in v]
                                             for op, v in cme.mem_energy_breakdown.items()},
        "memory_word_accesses": {str(op): [{str(k): float(v) for k, v in a.data.items()} for a in v]
                                 for op, v in cme.memory_word_access.items()},
        # the same in bits: words times the bandwidth_max of the port serving that direction
        "memory_bit_accesses": _bit_accesses(cme),
    }


def _spatial(cme: Any) -> tuple[dict[str, dict[str, int | float]], dict[str, int | float], dict[str, int | float]]:
    """The spatial unrolling per array dimension as ZigZag uses it. The generator proposes integer factors
    (``layer.spatial_mapping``); ZigZag's conversion then makes the factor of a dimension that does not divide the
    layer fractional so that the temporal remainder is an integer: of the array dimensions unrolling that layer
    dimension, the first with the largest factor takes ``size / temporal / (factors on the earlier array dims)``.
    The per-dimension totals it works with are in ``cme.spatial_mapping`` (fractional, used for energy) and
    ``cme.spatial_mapping_int`` (the same rounded down, used for transfer timing)."""

    def per_dim(sm: Any) -> dict[str, int | float]:
        op = next(iter(sm.mapping_dict_origin))
        out: dict[str, float] = {}
        for level in sm.mapping_dict_origin[op]:
            for d, f in level:
                out[str(d)] = out.get(str(d), 1.0) * float(f)
        return {d: _num(f) for d, f in out.items()}

    total, total_int = per_dim(cme.spatial_mapping), per_dim(cme.spatial_mapping_int)
    gen = {str(oa): {str(d): float(f) for d, f in m.items()} for oa, m in cme.layer.spatial_mapping.items()}
    spatial: dict[str, dict[str, int | float]] = {oa: {} for oa in gen}
    for d in {d for m in gen.values() for d in m}:
        axes = [oa for oa in gen if d in gen[oa]]
        adjusted = next(oa for oa in axes if gen[oa][d] == max(gen[a][d] for a in axes))
        others = 1.0
        for oa in axes:
            if oa != adjusted:
                spatial[oa][d] = _num(gen[oa][d])
                others *= gen[oa][d]
        spatial[adjusted][d] = _num(float(total.get(d, 1)) / others)
    return spatial, total, total_int


def _bit_accesses(cme: Any) -> dict[str, list[dict[str, float]]]:
    links = cme.layer.memory_operand_links
    out: dict[str, list[dict[str, float]]] = {}
    for op, per_level in cme.memory_word_access.items():
        mem_op = links.layer_to_mem_op(op)
        levels = []
        for lv, acc in enumerate(per_level):
            mem_level = cme.accelerator.get_memory_level(mem_op, lv)
            levels.append({str(d): float(n) * float(mem_level.get_max_bandwidth(mem_op, d) or 0)
                           for d, n in acc.data.items()})
        out[str(op)] = levels
    return out


def run_one(layer: dict[str, Any], objective: str, hw: dict[str, Any], search: dict[str, Any],
            workdir: str) -> dict[str, Any]:
    from zigzag.api import get_hardware_performance_zigzag

    # JSON is YAML: the API wants .yaml paths for the accelerator and the mapping
    acc_path = os.path.join(workdir, "accelerator.yaml")
    map_path = os.path.join(workdir, "mapping.yaml")
    with open(acc_path, "w") as f:
        json.dump(accelerator(hw), f)
    with open(map_path, "w") as f:
        json.dump(mapping(), f)
    t0 = time.perf_counter()
    energy, latency, cmes = get_hardware_performance_zigzag(
        workload=workload(layer, hw), accelerator=acc_path, mapping=map_path, opt=objective,
        temporal_mapping_search_engine=search["engine"], temporal_mapping_type=search["temporal_mapping_type"],
        lpf_limit=int(search["lpf_limit"]), nb_spatial_mappings_generated=int(search["nb_spatial_mappings"]),
        dump_folder=os.path.join(workdir, f"dump_{objective}"), loma_show_progress_bar=False,
    )
    secs = time.perf_counter() - t0
    cme = cmes[0][1][0][0]  # [(sum over layers, [(CostModelEvaluation of layer i, extra info), ...])]
    out = {"search_seconds": secs}
    out.update(extract(cme))
    if not math.isclose(out["energy"], float(energy), rel_tol=1e-9) or out["latency"] != float(latency):
        raise RuntimeError(f"result mismatch: API says E={energy} L={latency}, the CME E={out['energy']} "
                           f"L={out['latency']}")
    return out


def run(request: dict[str, Any], progress: bool = True) -> dict[str, Any]:
    hw = {**HARDWARE_DEFAULTS, **dict(request.get("hardware") or {})}
    search = {**SEARCH_DEFAULTS, **dict(request.get("search") or {})}
    objectives = list(request.get("objectives") or ["energy", "latency"])
    # ZigZag's API calls logging.basicConfig(level=INFO) itself; configuring the root logger first keeps it quiet
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    t_import = time.perf_counter()
    import zigzag.api  # noqa: F401

    import_s = time.perf_counter() - t_import
    results = []
    for layer in request["layers"]:
        for objective in objectives:
            row: dict[str, Any] = {"layer": layer["name"], "objective": objective,
                                   "dims": {d: int(layer.get(d, 1)) for d in ("K", "C", "P", "Q", "R", "S")},
                                   "stride": int(layer.get("stride", 1)), "dilation": int(layer.get("dilation", 1)),
                                   "batch": int(layer.get("batch", 1))}
            with tempfile.TemporaryDirectory(prefix="zigzag_runner_") as workdir:
                try:
                    row.update(run_one(layer, objective, hw, search, workdir))
                    row["error"] = None
                except Exception as exc:  # a failed layer is recorded, the others still run
                    row["error"] = f"{type(exc).__name__}: {exc}"
                    row["traceback"] = traceback.format_exc(limit=-3)
            if progress:
                msg = (f"error {row['error']}" if row["error"] else
                       f"E={row['energy']:.4e} L={row['latency']:.4e} t={row['search_seconds']:.2f}s "
                       f"SM={row['spatial_mapping']}")
                print(f"zigzag {layer['name']:22s} {objective:8s} {msg}", file=sys.stderr, flush=True)
            results.append(row)
    return {
        "zigzag_version": metadata.version("zigzag-dse"),
        "python": sys.version.split()[0],
        "import_seconds": import_s,
        "hardware": hw,
        "search": search,
        "accelerator": accelerator(hw),
        "axes": {"D1": "rows", "D2": "cols"},
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("request", nargs="?", help="request JSON file (default: standard input)")
    ap.add_argument("--out", help="also write the result JSON to this file")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)
    if args.request:
        with open(args.request) as f:
            request = json.load(f)
    else:
        request = json.load(sys.stdin)
    result = run(request, progress=not args.quiet)
    text = json.dumps(result, indent=1)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text + "\n")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
