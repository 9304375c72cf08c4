"""Side by side with ZigZag: dlaopt's exact mapper and ZigZag's search on ResNet-18's unique conv layers.

ZigZag (``zigzag-dse`` 3.9.1 from PyPI) is *not* a dependency of dlaopt: it lives in its own environment (given by
``--zigzag-python`` or created by ``--setup DIR``) and runs there through :mod:`dlaopt.experiments.zigzag_runner`, a
standalone script that reads a JSON request and prints JSON. Per layer and objective (energy, latency):

* ZigZag searches on the Eyeriss-equivalent description written by the runner (its docstring gives the numbers and
  the choices made), with ``temporal_mapping_type="even"`` — one level cut shared by every operand, which is
  dlaopt's mapping space — and LOMA's defaults (``lpf_limit`` 6, three generated spatial mappings); its search time
  and its own energy and latency are kept;
* its best mapping is translated into a dlaopt :class:`~dlaopt.formulations.mapping.mapping.Mapping`
  (:func:`translate`) and evaluated by dlaopt's cost model on the ``eyeriss`` preset;
* dlaopt's exact method (MILP warm-started by the dataflow templates, the same call as the mapping benchmark) maps
  the layer for the same objective; its time includes the warm starts. Where ZigZag's mapping pads the layer (below),
  the exact method also maps that padded shape, which tells how much of a gap the padding accounts for.

The ratio is ZigZag's mapping over dlaopt's optimum, *both in dlaopt's cost model*. The notes of the report list
where the two cost models differ (:data:`MODEL_NOTES`) with figures measured on the run: the same ZigZag mapping's
energy, latency and per-level access counts in both models.

Translation (:func:`translate_full`): ZigZag's array dimension ``D1`` is the 12 PE rows (dlaopt's ``S1:rows``) and
``D2`` the 14 columns (``S1:cols``); the temporal loops that LOMA allocated to ``rf``, ``glb`` and ``dram`` become the
factors of ``T0``, ``T1`` and ``T2``; each level's order is ZigZag's loop order there reversed (ZigZag lists loops
innermost first, dlaopt outermost first), with the loops of one dimension that LOMA split into several prime-factor
loops at one level merged into one loop at the place of its innermost occurrence. Merging there leaves every
operand's innermost run of irrelevant loops — the only thing the order decides in either model — unchanged, except
when the merged dimension is irrelevant to an operand, its innermost occurrence lies in that operand's run and a
later occurrence lies beyond a relevant loop: the run then grows by the later factor (more reuse than ZigZag's
order). :func:`translate_full` detects and reports every such case (``reuse_changes``). A spatial factor that does
not divide its dimension is fractional in ZigZag (e.g. K=64 on 14 columns: 5 temporal iterations of 12.8): dlaopt
then pads the dimension to the product of the integer factors (5 x 13 = 65), built with
``loopnest_from_operator(..., padding=...)``, and counts the padded MACs as wasted work.
"""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlaopt.errors import InputError
from dlaopt.experiments.mapping import Layer, layer_stride, unique_conv_layers
from dlaopt.formulations.mapping.arch import SPATIAL, TEMPORAL, MappingArch, arch_from_accelerator
from dlaopt.formulations.mapping.cost import CostReport, evaluate_mapping
from dlaopt.formulations.mapping.loopnest import (
    LoopNest,
    loopnest_from_operator,
)
from dlaopt.formulations.mapping.mapping import Mapping, loop_nest_text, mapping_errors
from dlaopt.specs import mapping as mapping_options
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator

ZIGZAG_VERSION = "3.9.1"
ZIGZAG_PACKAGES = (f"zigzag-dse=={ZIGZAG_VERSION}", "six")
RUNNER = Path(__file__).with_name("zigzag_runner.py")
# ZigZag's loop dimensions -> dlaopt's (P, Q = output rows, cols; R, S = filter rows, cols); G is always 1
ZZ_TO_DIM = {"B": "N", "K": "K", "C": "C", "OY": "P", "OX": "Q", "FY": "R", "FX": "S"}
DEFAULT_AXES = {"D1": "rows", "D2": "cols"}
OBJECTIVES = ("energy", "latency")
_PROBE = ("import importlib.metadata as m, sys; import zigzag.api; "
          "sys.stdout.write(m.version('zigzag-dse'))")


class TranslationError(ValueError):
    """ZigZag's mapping cannot be expressed on dlaopt's slots (the message says why)."""


@dataclass
class Translation:
    nest: LoopNest  # padded where ZigZag unrolled a dimension by a non-divisor
    mapping: Mapping
    padding: dict[str, tuple[int, int]] = field(default_factory=dict)  # dim -> (layer size, padded size)
    spatial: dict[str, dict[str, int]] = field(default_factory=dict)  # dlaopt axis -> {dim: integer factor}
    merged: list[str] = field(default_factory=list)  # repeated loops of one dimension merged at one level
    reuse_changes: list[str] = field(default_factory=list)  # where merging changed an operand's temporal reuse


# ------------------------------------------------------------------------------------------------ requests
def layer_request(nest: LoopNest) -> dict[str, Any]:
    """The runner's description of a conv layer (``TranslationError`` for what ZigZag's conv equation lacks)."""
    if nest.kind != "conv2d":
        raise TranslationError(f"layer {nest.name}: only conv2d layers are sent to ZigZag, not {nest.kind}")
    if nest.sizes.get("G", 1) != 1:
        raise TranslationError(f"layer {nest.name}: grouped convolutions are not sent to ZigZag")
    coords = nest.operand("I").coords
    row, col = dict(coords[3].terms), dict(coords[4].terms)
    if row != {"P": row.get("P", 1), "R": row.get("R", 1)} or row.get("P") != col.get("Q") or (
            row.get("R") != col.get("S")):
        raise TranslationError(f"layer {nest.name}: stride and dilation must be equal along rows and columns")
    s = nest.sizes
    return {"name": nest.name, "K": s["K"], "C": s["C"], "P": s["P"], "Q": s["Q"], "R": s["R"], "S": s["S"],
            "stride": row["P"], "dilation": row["R"], "batch": s["N"]}


# ------------------------------------------------------------------------------------------------ translation
def translate(result: dict[str, Any], workload: Workload, op: Operator, arch: MappingArch,
              axes: dict[str, str] | None = None) -> tuple[LoopNest, Mapping]:
    """ZigZag's best mapping of ``op`` (one entry of the runner's ``results``) as a dlaopt loop nest (padded where
    ZigZag unrolled by a non-divisor) and mapping over ``arch``'s slots."""
    t = translate_full(result, workload, op, arch, axes)
    return t.nest, t.mapping


def translate_full(result: dict[str, Any], workload: Workload, op: Operator, arch: MappingArch,
                   axes: dict[str, str] | None = None) -> Translation:
    """:func:`translate` with what it had to change (see the module docstring)."""
    if result.get("error"):
        raise TranslationError(f"ZigZag failed on this layer: {result['error']}")
    axes = dict(axes or DEFAULT_AXES)
    slots = arch.slots()
    tslot = {s.level: k for k, s in enumerate(slots) if s.kind == TEMPORAL}
    sslot = {s.axis: k for k, s in enumerate(slots) if s.kind == SPATIAL and not s.mac}
    if arch.mac_fanout:
        raise TranslationError(f"accelerator '{arch.name}' has a MAC fanout inside the PE: no ZigZag counterpart")
    real = loopnest_from_operator(workload, op)
    dims = real.dims

    # the level cut: with an even mapping every operand has the same loops per level
    tm = result["temporal_mapping"]
    cuts = {t: tm[t]["loops_as_allocated"] for t in tm}
    cut = cuts["O"]
    if any(c != cut for c in cuts.values()):
        raise TranslationError("ZigZag's level cut differs between operands (an uneven mapping): "
                               + "; ".join(f"{t}: {c}" for t, c in cuts.items()))
    if len(cut) != len(arch.levels):
        raise TranslationError(f"ZigZag's mapping has {len(cut)} memory levels, '{arch.name}' has "
                               f"{len(arch.levels)}")
    levels: list[list[tuple[str, int]]] = []  # per level, innermost first, dlaopt dimension names
    for j, lv in enumerate(cut):
        loops = []
        for zd, f in lv:
            if zd not in ZZ_TO_DIM:
                raise TranslationError(f"unknown ZigZag loop dimension '{zd}'")
            if float(f) != int(f):
                raise TranslationError(f"fractional temporal loop {zd} {f} at level {j}")
            loops.append((ZZ_TO_DIM[zd], int(f)))
        levels.append(loops)
    temporal_total = {d: math.prod(f for lv in levels for dd, f in lv if dd == d) for d in dims}

    # spatial factors per dlaopt axis; ZigZag makes the factor on the adjusted axis fractional when it does not
    # divide: dlaopt's integer factor is the least that covers the layer with ZigZag's temporal loops
    spatial_zz = result["spatial_mapping"]  # {"D1": {"OX": 12}, "D2": {"K": 12.8}}
    per_dim: dict[str, dict[str, float]] = {}
    for oa, m in spatial_zz.items():
        if oa not in axes:
            raise TranslationError(f"ZigZag array dimension '{oa}' has no dlaopt axis (known: {sorted(axes)})")
        if axes[oa] not in sslot:
            raise TranslationError(f"'{arch.name}' has no spatial axis '{axes[oa]}' (slots "
                                   f"{[s.name for s in slots]})")
        for zd, f in m.items():
            if float(f) > 1:
                per_dim.setdefault(ZZ_TO_DIM[zd], {})[axes[oa]] = float(f)
    spatial: dict[str, dict[str, int]] = {axes[oa]: {} for oa in spatial_zz}
    padding: dict[str, tuple[int, int]] = {}
    sizes: dict[str, int] = {}
    for d in dims:
        n = real.sizes[d]
        t = temporal_total[d]
        on_axes = per_dim.get(d, {})
        fixed = {a: f for a, f in on_axes.items() if float(f).is_integer()}
        frac = [a for a in on_axes if a not in fixed]
        if len(frac) > 1:
            raise TranslationError(f"dimension {d} has fractional factors on several axes: {on_axes}")
        ints = {a: int(f) for a, f in fixed.items()}
        if frac:
            a = frac[0]
            ints[a] = -(-n // (t * math.prod(ints.values())))
            if ints[a] < on_axes[a]:
                raise TranslationError(f"dimension {d}: integer factor {ints[a]} below ZigZag's {on_axes[a]}")
        padded = t * math.prod(ints.values())
        if padded < n:
            raise TranslationError(f"dimension {d}: ZigZag's loops cover {padded} of {n} iterations")
        if padded != n:
            padding[d] = (n, padded)
        sizes[d] = padded
        for a, f in ints.items():
            spatial[a][d] = f
    nest = loopnest_from_operator(workload, op, {d: p for d, (_, p) in padding.items()}) if padding else real
    if dict(nest.sizes) != sizes:
        raise TranslationError(f"padded loop bounds {dict(nest.sizes)} differ from ZigZag's {sizes}")

    factors = {d: [1] * len(slots) for d in dims}
    for j, lv in enumerate(levels):
        for d, f in lv:
            factors[d][tslot[j]] *= f
    for a, m in spatial.items():
        for d, f in m.items():
            factors[d][sslot[a]] = f

    orders: list[tuple[str, ...]] = []
    merged: list[str] = []
    for j, lv in enumerate(levels):
        first: dict[str, int] = {}
        for pos, (d, _) in enumerate(lv):
            first.setdefault(d, pos)
        for d in first:
            parts = [f for dd, f in lv if dd == d]
            if len(parts) > 1:
                merged.append(f"{arch.levels[j].name}: {d} " + "*".join(map(str, parts)) + f" -> {d}{math.prod(parts)}")
        inner_first = sorted(first, key=first.__getitem__)
        absent = [d for d in dims if d not in first]
        orders.append(tuple(absent) + tuple(reversed(inner_first)))
    mapping = Mapping(factors, tuple(orders))
    merged_levels = [[(d, mapping.factors[d][tslot[j]]) for d in reversed(orders[j])] for j in range(len(levels))]
    changes = []
    for operand in nest.operands:
        for child in range(len(levels) - 1):
            before = _visits(levels, child, operand.dims)
            after = _visits(merged_levels, child, operand.dims)
            if before != after:
                changes.append(f"{operand.name} into {arch.levels[child].name}: {before} visits in ZigZag's order, "
                               f"{after} after merging")
    return Translation(nest, mapping, padding, spatial, merged, changes)


def _visits(levels: Sequence[Sequence[tuple[str, int]]], child: int, relevant: frozenset[str]) -> int:
    """Tiles of an operand brought into level ``child``: the temporal loops above it (``levels[j]`` innermost first)
    without the innermost run of loops irrelevant to the operand — the rule of both cost models."""
    loops = [(d, f) for j in range(len(levels) - 1, child, -1) for d, f in reversed(levels[j]) if f > 1]
    end = len(loops)
    while end > 0 and loops[end - 1][0] not in relevant:
        end -= 1
    return math.prod(f for _, f in loops[:end])


# ------------------------------------------------------------------------------------------------ evaluation
def evaluate_zigzag_mapping(result: dict[str, Any], workload: Workload, op: Operator, arch: MappingArch,
                            axes: dict[str, str] | None = None, word_bits: int = 16) -> dict[str, Any]:
    """ZigZag's mapping evaluated by dlaopt's cost model. Never raises for a mapping dlaopt rejects: ``valid`` is
    False and ``violations`` says why (over-capacity mappings are also evaluated without the capacity check, under
    ``unchecked``)."""
    out: dict[str, Any] = {"valid": False, "violations": [], "energy": None, "latency": None, "padding": {},
                           "spatial": {}, "merged": [], "reuse_changes": [], "mapping": None, "loop_nest": None}
    try:
        tr = translate_full(result, workload, op, arch, axes)
    except TranslationError as exc:
        out["violations"] = [f"translation: {exc}"]
        return out
    out.update(padding={d: list(p) for d, p in tr.padding.items()}, spatial=tr.spatial, merged=tr.merged,
               reuse_changes=tr.reuse_changes, mapping=tr.mapping.to_dict(arch),
               loop_nest=loop_nest_text(tr.nest, arch, tr.mapping))
    errors = mapping_errors(tr.nest, arch, tr.mapping)
    if errors:
        out["violations"] = errors
        return out
    rep = evaluate_mapping(tr.nest, arch, tr.mapping)
    out["valid"] = rep.valid
    out["violations"] = list(rep.violations)
    if not rep.valid:
        rep = evaluate_mapping(tr.nest, arch, tr.mapping, check_capacity=False)
        out["unchecked"] = _report_figures(rep)
    else:
        out.update(_report_figures(rep))
    out["accesses"] = access_comparison(result, rep, arch, word_bits)
    return out


def _report_figures(rep: CostReport) -> dict[str, Any]:
    noc = sum(v for k, v in rep.energy_breakdown.items() if k.endswith("/network"))
    return {"energy": rep.energy_pj, "latency": rep.latency_cycles, "noc_energy": noc,
            "compute_cycles": rep.compute_cycles, "memory_cycles": dict(rep.memory_cycles),
            "macs": rep.macs, "real_macs": rep.real_macs, "utilization": rep.utilization,
            "energy_breakdown": dict(rep.energy_breakdown)}


def access_comparison(result: dict[str, Any], rep: CostReport, arch: MappingArch,
                      word_bits: int = 16) -> list[dict[str, Any]]:
    """Reads and writes per (level, operand) of the same mapping in both models, in elements (ZigZag's accesses are
    converted from bits; every operand is ``word_bits`` wide here)."""
    bits = result.get("memory_bit_accesses") or {}
    rows = []
    for t in ("I", "W", "O"):
        for j, lv in enumerate(arch.levels):
            if j >= len(bits.get(t, [])):
                continue
            zz = bits[t][j]
            a = rep.accesses.get(lv.name, {}).get(t)
            if a is None:
                continue
            rows.append({"level": lv.name, "operand": t,
                         "zigzag_reads": (zz.get("rd_out_to_low", 0) + zz.get("rd_out_to_high", 0)) / word_bits,
                         "zigzag_writes": (zz.get("wr_in_by_low", 0) + zz.get("wr_in_by_high", 0)) / word_bits,
                         "dlaopt_reads": a.reads, "dlaopt_writes": a.writes})
    return rows


# ------------------------------------------------------------------------------------------------ environment
def ensure_zigzag(zigzag_python: str | None = None, setup: str | None = None,
                  progress: Callable[[str], None] | None = None) -> tuple[str, str]:
    """The interpreter to run ZigZag with and its zigzag-dse version. ``setup`` creates a virtual environment there
    (if missing) and pip-installs :data:`ZIGZAG_PACKAGES` into it. ``InputError`` when it is unusable."""
    if zigzag_python is None and setup is None:
        raise InputError("no ZigZag environment given", path=("--zigzag-python",),
                         expected="--zigzag-python PATH (a Python with zigzag-dse installed) or --setup DIR")
    if setup is not None:
        env = Path(setup)
        py = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        if not py.exists():
            if progress:
                progress(f"creating a virtual environment in {env}")
            _run_setup([sys.executable, "-m", "venv", str(env)], "--setup")
        if _probe(str(py))[0] is None:
            if progress:
                progress(f"installing {' '.join(ZIGZAG_PACKAGES)} into {env} (takes a minute or two)")
            _run_setup([str(py), "-m", "pip", "install", "-q", *ZIGZAG_PACKAGES], "--setup")
        zigzag_python = str(py)
    assert zigzag_python is not None
    version, why = _probe(zigzag_python)
    if version is None:
        raise InputError(f"the ZigZag interpreter '{zigzag_python}' is unusable: {why}", path=("--zigzag-python",),
                         expected=f"a Python with zigzag-dse {ZIGZAG_VERSION} installed, or --setup DIR")
    if version != ZIGZAG_VERSION and progress:
        progress(f"warning: zigzag-dse {version} found; the runner was written against {ZIGZAG_VERSION}")
    return zigzag_python, version


def _probe(python: str) -> tuple[str | None, str]:
    try:
        r = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    if r.returncode != 0:
        lines = (r.stderr or "").strip().splitlines()
        return None, lines[-1] if lines else f"exit code {r.returncode}"
    return r.stdout.strip(), ""


def _run_setup(cmd: list[str], option: str) -> None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"'{' '.join(cmd)}' failed: {exc}", path=(option,)) from None
    if r.returncode != 0:
        tail = " ".join((r.stderr or r.stdout or "").strip().splitlines()[-3:])
        raise InputError(f"'{' '.join(cmd)}' failed (exit {r.returncode}): {tail}", path=(option,))


def run_zigzag(python: str, request: dict[str, Any], out_path: Path | None = None,
               progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the runner on ``request`` under ``python``; its progress lines go to ``progress``."""
    with tempfile.TemporaryDirectory(prefix="dlaopt_zigzag_") as tmp:
        req = Path(tmp) / "request.json"
        req.write_text(json.dumps(request))
        res = Path(out_path) if out_path is not None else Path(tmp) / "result.json"
        cmd = [python, str(RUNNER), str(req), "--out", str(res)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        tail: list[str] = []
        assert proc.stderr is not None
        for line in proc.stderr:
            line = line.rstrip()
            tail = (tail + [line])[-20:]
            if progress and line.startswith("zigzag "):
                progress(line)
        rc = proc.wait()
        if rc != 0:
            raise RuntimeError(f"the ZigZag runner failed (exit {rc}):\n" + "\n".join(tail))
        return json.loads(res.read_text())


# ------------------------------------------------------------------------------------------------ the comparison
def run_dlaopt_exact(nest: LoopNest, arch: MappingArch, objective: str, time_limit: float,
                     seed: int = 0) -> dict[str, Any]:
    from dlaopt.formulations.mapping.layers import run_layer_exact
    from dlaopt.solvers.result import SolveOptions

    r = run_layer_exact(nest, arch, objective, dict(mapping_options.DEFAULT_OPTIONS),
                        SolveOptions(time_limit=time_limit, threads=1, seed=seed), "highs")
    out: dict[str, Any] = {"status": r["status"], "message": r["message"], "time_s": r["time_s"],
                           "warm_start_s": r["warm_start_s"], "bound": r["bound"], "energy": None, "latency": None,
                           "mapping": None}
    m = r["mapping"]
    if m is not None:
        rep = evaluate_mapping(nest, arch, m)
        out.update(_report_figures(rep))
        out["mapping"] = m.to_dict(arch)
        out["loop_nest"] = loop_nest_text(nest, arch, m)
    return out


def compare_rows(raw: dict[str, Any], layers: Sequence[Layer], workload: Workload, arch: MappingArch,
                 exact: dict[tuple[str, str], dict[str, Any]],
                 exact_padded: dict[tuple[str, str], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per (layer, objective) from the runner's output ``raw`` and dlaopt's exact results (``exact_padded``:
    dlaopt's exact method on the padded shape of ZigZag's mapping, where it padded)."""
    by_key = {(r["layer"], r["objective"]): r for r in raw["results"]}
    axes = raw.get("axes") or DEFAULT_AXES
    word_bits = int((raw.get("hardware") or {}).get("word_bits", 16))
    rows = []
    for layer in layers:
        for objective in {o: None for (_, o) in by_key}:
            zz = by_key.get((layer.nest.name, objective))
            if zz is None:
                continue
            ev = evaluate_zigzag_mapping(zz, workload, layer.op, arch, axes, word_bits)
            dl = exact.get((layer.nest.name, objective), {})
            row: dict[str, Any] = {
                "layer": layer.nest.name, "shape": layer.nest.shape_text, "stride": layer_stride(layer.nest),
                "count": layer.count, "objective": objective,
                "zz_search_s": zz.get("search_seconds"), "zz_energy": zz.get("energy"),
                "zz_latency": zz.get("latency"), "zz_error": zz.get("error"),
                "zz_spatial": _spatial_text(zz.get("spatial_mapping") or {}, axes),
                "zz_padded": ", ".join(f"{d} {a}->{b}" for d, (a, b) in ev["padding"].items()),
                "zzd_valid": ev["valid"], "zzd_violation": "; ".join(ev["violations"]),
                "zzd_energy": ev["energy"], "zzd_latency": ev["latency"], "zzd_noc_energy": ev.get("noc_energy"),
                "zzd_merged": "; ".join(ev["merged"]), "zzd_reuse_changes": "; ".join(ev["reuse_changes"]),
                "dl_status": dl.get("status"), "dl_time_s": dl.get("time_s"), "dl_energy": dl.get("energy"),
                "dl_latency": dl.get("latency"), "dl_noc_energy": dl.get("noc_energy"),
            }
            zv = row[f"zzd_{objective}"]
            dv = row[f"dl_{objective}"]
            row["ratio"] = zv / dv if ev["valid"] and zv is not None and dv else None
            unchecked = ev.get("unchecked") or {}
            row["zzd_unchecked_energy"] = unchecked.get("energy")
            row["zzd_unchecked_latency"] = unchecked.get("latency")
            uv = unchecked.get(objective)
            row["ratio_unchecked"] = uv / dv if uv is not None and dv else None
            dp = (exact_padded or {}).get((layer.nest.name, objective), {})
            row["dl_padded_time_s"] = dp.get("time_s")
            row["dl_padded_status"] = dp.get("status")
            row["dl_message"] = dl.get("message") or ""
            row["dl_padded_message"] = dp.get("message") or ""
            row["dl_padded_objective"] = dp.get(objective)
            best = min((v for v in (dv, row["dl_padded_objective"]) if v is not None), default=None)
            row["ratio_best"] = zv / best if ev["valid"] and zv is not None and best else None
            row["time_ratio"] = (row["zz_search_s"] / row["dl_time_s"]
                                 if row["zz_search_s"] and row["dl_time_s"] else None)
            row["model_energy_ratio"] = (ev["energy"] / zz["energy"]
                                         if ev["energy"] is not None and zz.get("energy") else None)
            row["model_latency_ratio"] = (ev["latency"] / zz["latency"]
                                          if ev["latency"] is not None and zz.get("latency") else None)
            row["_detail"] = {"zigzag": zz, "zigzag_in_dlaopt": ev, "dlaopt_exact": dl, "dlaopt_exact_padded": dp}
            rows.append(row)
    return rows


def _spatial_text(sm: dict[str, dict[str, Any]], axes: dict[str, str]) -> str:
    parts = []
    for oa, m in sm.items():
        for d, f in m.items():
            ff = float(f)
            parts.append(f"{axes.get(oa, oa)}:{ZZ_TO_DIM.get(d, d)}{int(ff) if ff.is_integer() else round(ff, 2)}")
    return " ".join(parts)


def run_zigzag_compare(
    out_dir: str | Path = "results/zigzag-compare",
    *,
    zigzag_python: str | None = None,
    setup: str | None = None,
    network: str = "resnet18",
    preset: str = "eyeriss",
    objectives: Sequence[str] = OBJECTIVES,
    layers: int | None = None,
    time_limit: float = 60.0,
    seed: int = 0,
    zigzag_raw: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run both tools on ``network``'s unique conv layers and write ``zigzag-compare.{csv,md,json}`` (and the
    runner's raw output, ``zigzag-raw.json``) into ``out_dir``. ``zigzag_raw`` reuses a saved runner output instead
    of running ZigZag. ZigZag runs first, then dlaopt, one solve at a time (one thread each) for clean timings."""
    from dlaopt.hardware.presets import PRESETS
    from dlaopt.zoo import ZOO

    for o in objectives:
        if o not in OBJECTIVES:
            raise InputError(f"unknown objective '{o}'", path=("--objectives",), expected="energy and/or latency")
    out = Path(out_dir)
    wl = ZOO.create(network, {})
    arch = arch_from_accelerator(PRESETS.create(preset, {}))
    convs = unique_conv_layers(wl)[:layers]
    version = None
    if zigzag_raw is not None:
        raw = json.loads(Path(zigzag_raw).read_text())
    else:
        python, version = ensure_zigzag(zigzag_python, setup, progress)
        request = {"layers": [layer_request(c.nest) for c in convs], "objectives": list(objectives)}
        out.mkdir(parents=True, exist_ok=True)
        raw = run_zigzag(python, request, out / "zigzag-raw.json", progress)
    out.mkdir(parents=True, exist_ok=True)
    exact: dict[tuple[str, str], dict[str, Any]] = {}
    for c in convs:
        for o in objectives:
            exact[c.nest.name, o] = r = run_dlaopt_exact(c.nest, arch, o, time_limit, seed)
            if progress:
                progress(f"dlaopt {c.nest.name:22s} {o:8s} E={_g(r['energy'])} L={_g(r['latency'])} "
                         f"t={r['time_s']:.2f}s {r['status']}")
    # dlaopt's exact method on the padded shape ZigZag's mapping uses (ZigZag may unroll by a non-divisor; dlaopt's
    # exact method only factorizes the given bounds): tells how much of a gap is padding
    exact_padded: dict[tuple[str, str], dict[str, Any]] = {}
    by_key = {(r["layer"], r["objective"]): r for r in raw["results"]}
    for c in convs:
        for o in objectives:
            zz = by_key.get((c.nest.name, o))
            if zz is None or zz.get("error"):
                continue
            try:
                tr = translate_full(zz, wl, c.op, arch, raw.get("axes"))
            except TranslationError:
                continue
            if tr.padding:
                exact_padded[c.nest.name, o] = r = run_dlaopt_exact(tr.nest, arch, o, time_limit, seed)
                if progress:
                    progress(f"dlaopt {c.nest.name:22s} {o:8s} padded {tr.nest.shape_text}: E={_g(r['energy'])} "
                             f"L={_g(r['latency'])} t={r['time_s']:.2f}s {r['status']}")
    rows = compare_rows(raw, convs, wl, arch, exact, exact_padded)
    summary = summarize(rows, objectives)
    meta = {"network": network, "preset": preset, "objectives": list(objectives), "time_limit": time_limit,
            "zigzag_version": raw.get("zigzag_version", version), "zigzag_search": raw.get("search"),
            "zigzag_hardware": raw.get("hardware"), "zigzag_import_s": raw.get("import_seconds")}
    table = markdown_report(rows, summary, meta)
    flat = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    csv_path, md_path, json_path = out / "zigzag-compare.csv", out / "zigzag-compare.md", out / "zigzag-compare.json"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(flat[0]) if flat else ["layer"])
        w.writeheader()
        w.writerows(flat)
    md_path.write_text(table)
    json_path.write_text(json.dumps({"meta": meta, "summary": summary, "rows": flat,
                                     "details": [r["_detail"] for r in rows]}, indent=1, default=str) + "\n")
    return {"rows": flat, "summary": summary, "meta": meta, "table": table, "csv": str(csv_path),
            "markdown": str(md_path), "json": str(json_path)}


# ------------------------------------------------------------------------------------------------ report
def summarize(rows: Sequence[dict[str, Any]], objectives: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for o in objectives:
        rs = [r for r in rows if r["objective"] == o]
        ok = [r for r in rs if r["ratio"] is not None]
        s: dict[str, Any] = {
            "layers": len(rs),
            "zigzag_failed": sum(1 for r in rs if r["zz_error"]),
            "zigzag_invalid_in_dlaopt": sum(1 for r in rs if not r["zz_error"] and not r["zzd_valid"]),
            "zigzag_padded": sum(1 for r in rs if r["zz_padded"]),
            "merge_changed_reuse": sum(1 for r in rs if r["zzd_reuse_changes"]),
            "dlaopt_optimal": sum(1 for r in rs if r["dl_status"] == "optimal"),
            "zigzag_search_s_total": sum(r["zz_search_s"] or 0 for r in rs),
            "dlaopt_time_s_total": sum(r["dl_time_s"] or 0 for r in rs),
            "ratio_below_1": [r["layer"] for r in ok if r["ratio"] < 1],
            "ratio_below_1_unpadded": [r["layer"] for r in ok if r["ratio"] < 1 and not r["zz_padded"]],
        }
        if ok:
            s["ratio_geomean"] = _geomean(r["ratio"] for r in ok)
            s["ratio_min"] = min(r["ratio"] for r in ok)
            s["ratio_max"] = max(r["ratio"] for r in ok)
            s["zigzag_network_total"] = sum(r["count"] * r[f"zzd_{o}"] for r in ok)
            s["dlaopt_network_total"] = sum(r["count"] * r[f"dl_{o}"] for r in ok)
            s["network_ratio"] = s["zigzag_network_total"] / s["dlaopt_network_total"]
        best = [r["ratio_best"] for r in rs if r["ratio_best"] is not None]
        if best:
            s["ratio_best_geomean"], s["ratio_best_min"] = _geomean(best), min(best)
        for k in ("model_energy_ratio", "model_latency_ratio"):
            vals = [r[k] for r in rs if r[k]]
            if vals:
                s[f"{k}_min"], s[f"{k}_max"] = min(vals), max(vals)
        noc = [r["zzd_noc_energy"] / r["zzd_energy"] for r in rs if r["zzd_energy"] and r["zzd_noc_energy"]]
        if noc:
            s["noc_share_min"], s["noc_share_max"] = min(noc), max(noc)
        wasted = [1 - r["_detail"]["zigzag_in_dlaopt"].get("real_macs", 0) / r["_detail"]["zigzag_in_dlaopt"]["macs"]
                  for r in rs if r["zz_padded"] and r["_detail"]["zigzag_in_dlaopt"].get("macs")]
        if wasted:
            s["padded_macs_share_min"], s["padded_macs_share_max"] = min(wasted), max(wasted)
        out[o] = s
    return out


def _geomean(values: Any) -> float:
    vals = list(values)
    return math.exp(statistics.fmean(math.log(v) for v in vals))


def _g(v: float | None, digits: int = 4) -> str:
    return "-" if v is None else f"{v:.{digits}g}"


def _access_stats(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per (level, operand, reads/writes), over the rows without padding: ZigZag's count over dlaopt's for the same
    mapping."""
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for r in rows:
        if r["zz_padded"] or r["zz_error"]:
            continue
        for a in r["_detail"]["zigzag_in_dlaopt"].get("accesses", []):
            for kind in ("reads", "writes"):
                z, d = a[f"zigzag_{kind}"], a[f"dlaopt_{kind}"]
                if d or z:
                    ratios.setdefault((a["level"], a["operand"], kind), []).append(z / d if d else math.inf)
    order = {"rf": 0, "glb": 1, "dram": 2}
    lines = []
    for (lv, t, kind), vals in sorted(ratios.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1:])):
        same = sum(1 for v in vals if abs(v - 1) < 1e-3)
        lines.append(f"| {lv} | {t} | {kind} | {_g(min(vals), 3)} | {_g(max(vals), 3)} | {same}/{len(vals)} |")
    return lines


def _cell(valid: bool, v: float | None, unchecked: float | None, digits: int = 4) -> str:
    if valid or v is not None:
        return _g(v, digits)
    return f"({_g(unchecked, digits)})" if unchecked is not None else "-"


def markdown_report(rows: Sequence[dict[str, Any]], summary: dict[str, Any], meta: dict[str, Any]) -> str:
    search = meta.get("zigzag_search") or {}
    hw = meta.get("zigzag_hardware") or {}
    lines = [f"# dlaopt exact vs ZigZag {meta.get('zigzag_version') or ''}: {meta['network']} on {meta['preset']}", ""]
    lines.append(
        f"ZigZag: LOMA, `temporal_mapping_type={search.get('temporal_mapping_type')}`, `lpf_limit` "
        f"{search.get('lpf_limit')}, {search.get('nb_spatial_mappings')} generated spatial mappings (the API defaults "
        f"except `even`), RF ports `{hw.get('rf_ports', '-')}`; its search time is the "
        f"`get_hardware_performance_zigzag` call (the {_g(meta.get('zigzag_import_s'), 2)} s import is excluded). "
        f"dlaopt: `exact` (a MILP warm-started "
        f"by the three dataflow templates, one thread, a time limit of {meta['time_limit']:g} s per layer); its time "
        f"includes the warm starts. Both ran one at a time on the same machine. Energies are in the normalised unit "
        f"(1 = one MAC = one 16-bit RF access) and latencies in cycles.")
    lines.append("")
    lines.append(
        "Columns: `ZZ own` = ZigZag's own figures for its best mapping; `ZZ->dl` = the same mapping evaluated by "
        "dlaopt's cost model (in parentheses when dlaopt rejects it, evaluated without the capacity check); `dlaopt` "
        "= dlaopt's exact optimum; `ratio` = ZZ->dl / dlaopt on the objective, both in dlaopt's model (> 1: dlaopt's "
        "mapping is better); `dl pad` = dlaopt's exact optimum on the padded shape that ZigZag's mapping uses (ZigZag "
        "may unroll a dimension by a non-divisor, which dlaopt's exact method does not try unless given the padding); "
        "`ratio*` = ZZ->dl / min(dlaopt, dl pad); `x` = how many layers of ResNet-18 have this shape.")
    lines.append("")
    for o in meta["objectives"]:
        unit = "E" if o == "energy" else "L"
        lines.append(f"## Objective: {o}")
        lines.append("")
        head = ["layer", "shape", "x", "ZZ s", "dlaopt s", "ZZ own E", "ZZ own L", "ZZ->dl E", "ZZ->dl L", "dlaopt E",
                "dlaopt L", "ratio", f"dl pad {unit}", "ratio*", "ZZ spatial", "notes"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in rows:
            if r["objective"] != o:
                continue
            notes = []
            if r["zz_error"]:
                notes.append(f"ZigZag failed: {r['zz_error']}")
            elif not r["zzd_valid"]:
                notes.append(f"invalid in dlaopt: {r['zzd_violation']}")
            if r["zz_padded"]:
                notes.append(f"padded {r['zz_padded']}")
            if r["zzd_merged"]:
                notes.append(f"merged {r['zzd_merged']}")
            if r["zzd_reuse_changes"]:
                notes.append(f"merging changed reuse: {r['zzd_reuse_changes']}")
            if r["dl_status"] != "optimal":
                notes.append(f"dlaopt {r['dl_status']}" + (f" ({r['dl_message']})" if r["dl_message"] else ""))
            if r["dl_padded_status"] not in (None, "optimal"):
                notes.append(f"dl pad {r['dl_padded_status']}"
                             + (f" ({r['dl_padded_message']})" if r["dl_padded_message"] else ""))
            shape = r["shape"] + (f" /{r['stride']}" if r["stride"] > 1 else "")
            valid = bool(r["zzd_valid"])
            cells = [r["layer"], shape, str(r["count"]), _g(r["zz_search_s"], 3), _g(r["dl_time_s"], 3),
                     _g(r["zz_energy"]), _g(r["zz_latency"]),
                     _cell(valid, r["zzd_energy"], r["zzd_unchecked_energy"]),
                     _cell(valid, r["zzd_latency"], r["zzd_unchecked_latency"]),
                     _g(r["dl_energy"]), _g(r["dl_latency"]), _cell(valid, r["ratio"], r["ratio_unchecked"]),
                     _g(r["dl_padded_objective"]), _g(r["ratio_best"]), r["zz_spatial"], "; ".join(notes)]
            lines.append("| " + " | ".join(cells) + " |")
        s = summary.get(o, {})
        lines.append("")
        txt = (f"Search time: ZigZag {s.get('zigzag_search_s_total', 0):.1f} s in total, dlaopt exact "
               f"{s.get('dlaopt_time_s_total', 0):.1f} s ({s.get('dlaopt_optimal', 0)}/{s.get('layers', 0)} proven "
               f"optimal).")
        if "ratio_geomean" in s:
            txt += (f" Ratio ZZ->dl / dlaopt over the {s['layers'] - s['zigzag_invalid_in_dlaopt']} valid rows: "
                    f"geometric mean {s['ratio_geomean']:.3f}, range {s['ratio_min']:.3f}–{s['ratio_max']:.3f}; "
                    f"network total (each layer times its count) {s['network_ratio']:.3f}.")
            if s["ratio_below_1"]:
                txt += (f" Below 1 (ZigZag's mapping better in dlaopt's own model): {', '.join(s['ratio_below_1'])}"
                        f"; of these without padding: {', '.join(s['ratio_below_1_unpadded']) or 'none'}.")
        if "ratio_best_geomean" in s:
            txt += (f" Against the better of dlaopt's optimum and its optimum on ZigZag's padded shape (ratio*): "
                    f"geometric mean {s['ratio_best_geomean']:.3f}, minimum {s['ratio_best_min']:.3f}.")
        if "model_energy_ratio_min" in s:
            txt += (f" The same ZigZag mapping in dlaopt's model over ZigZag's own: energy "
                    f"{s['model_energy_ratio_min']:.3f}–{s['model_energy_ratio_max']:.3f}, latency "
                    f"{s['model_latency_ratio_min']:.3f}–{s['model_latency_ratio_max']:.3f}.")
        if "noc_share_min" in s:
            txt += (f" NoC energy (charged by dlaopt only) is {100 * s['noc_share_min']:.1f}–"
                    f"{100 * s['noc_share_max']:.1f} % of dlaopt's energy of ZigZag's mappings.")
        if "padded_macs_share_min" in s:
            txt += (f" Padding adds {100 * s['padded_macs_share_min']:.1f}–{100 * s['padded_macs_share_max']:.1f} % "
                    f"wasted MACs in dlaopt's evaluation.")
        txt += (f" ZigZag failures: {s.get('zigzag_failed', 0)}; invalid in dlaopt: "
                f"{s.get('zigzag_invalid_in_dlaopt', 0)}; padded: {s.get('zigzag_padded', 0)}; loop merging changed "
                f"reuse: {s.get('merge_changed_reuse', 0)}.")
        lines += [txt, ""]
    acc = _access_stats(rows)
    if acc:
        lines += ["## Access counts of the same mapping: ZigZag / dlaopt", "",
                  "Elements read from and written into each memory by ZigZag's mappings *without padding* (padding "
                  "changes dlaopt's counts by itself), in both models (all operands are 16 bit): the minimum and "
                  "maximum over those rows of ZigZag's count over dlaopt's, and how many rows agree within 0.1 %.",
                  "", "| level | operand | kind | min | max | equal |", "|---|---|---|---|---|---|", *acc, ""]
    lines += ["## Where the two models differ", "",
              "Checked in zigzag-dse 3.9.1's source (paths under `site-packages/zigzag/`) and dlaopt's "
              "`formulations/mapping/cost.py`, and against the counts above.", ""]
    lines += [f"{i}. {n}" for i, n in enumerate(MODEL_NOTES, 1)]
    lines.append("")
    return "\n".join(lines)


# Each note was checked against zigzag-dse 3.9.1's source and dlaopt's cost model, and the counted effects against
# the access counts of ZigZag's mappings in both models (see the report's access table).
MODEL_NOTES: tuple[str, ...] = (
    "**Mapping space: even vs uneven.** ZigZag's default `temporal_mapping_type` is `uneven`: each operand may cut "
    "the loop order at its own level boundaries. Here it is `even`: `MemoryAllocator."
    "is_valid_idx_combination_for_even_mapping_type` (opt/loma/memory_allocator.py) rejects cuts that differ "
    "between operands, which is dlaopt's space (one temporal slot per level for all operands). The runner checks "
    "that every result has the same cut for I, W and O, and the translation refuses one that does not.",
    "**Search spaces.** ZigZag does not search the spatial mapping jointly with the temporal one. "
    "`SpatialMappingGeneratorStage` ranks single-dimension unrollings per array dimension by a utilisation "
    "heuristic and keeps the top 3. For each of them, LOMA merges the temporal loops' prime factors down to at most "
    "`lpf_limit` (6) (`limit_lpfs` in opt/loma/engine.py), enumerates every permutation of them, and allocates each "
    "one to the memories greedily, bottom-up (`MemoryAllocator`). dlaopt's exact method optimises spatial and "
    "temporal factors and the orders together over every divisor factorization, and proves optimality within its "
    "model. ZigZag also unrolls by non-divisors (item 3), which dlaopt's exact method only does when it is given the "
    "padding: the `dl pad` column.",
    "**Fractional spatial unrolling and padding.** When the unroll factor does not divide the dimension, ZigZag "
    "makes it fractional so that the temporal remainder is an integer (K=64 on 14 columns: 5 iterations x 12.8; "
    "stages/mapping/spatial_mapping_conversion.py). It charges the MAC energy for the real MACs only "
    "(`calc_mac_energy_cost`), the data at the fractional counts, and the capacity in LOMA at the fractional tile "
    "sizes. The cycles include the idle PEs (`ideal_temporal_cycle`). Its integer variant, used for transfer "
    "timing, rounds *down* (`int(...)`: 12 for 12.8, which does not cover the layer). dlaopt pads the dimension to "
    "the product of the integer factors (5 x 13 = 65), so the padded MACs and their data are charged as wasted work "
    "and the padded tiles must fit the memories, which can push a tile that fits in ZigZag's accounting over a "
    "capacity in dlaopt's (reported as invalid, with the violation).",
    "**Partial-sum precision.** dlaopt keeps partial sums at the output word size: cost.py charges every access of "
    "O at `word_bytes`. ZigZag has a separate partial-sum precision, `O`, for outputs while reduction loops remain "
    "above a level. It is set to 16 bit here, so both models move the same bytes. With ZigZag's usual 32 bits, "
    "every partial-sum transfer would double.",
    "**NoC energy.** dlaopt's `eyeriss` preset charges 1 per byte (2 per 16-bit word) for every element moved into "
    "or out of a PE's RF (fills, drains and reloads). ZigZag has no interconnect energy: `CostModelEvaluation."
    "calc_energy` says `# TODO: Interconnection energy`. The summary gives the NoC share.",
    "**Reads of a stationary operand at the MACs.** The API hard-wires `access_same_data_considered_as_no_access="
    "True` (api.py). For I and W, mapping/mapping.py therefore divides the RF's reads towards the MACs by the product "
    "of the RF's bottom loops that are irrelevant to the operand, as if the value stayed at the MAC input. dlaopt's "
    "MACs have no storage: every MAC reads its input and weight from the RF. See the `rf I reads` and `rf W reads` "
    "rows of the access table.",
    "**First accumulation of a partial sum.** dlaopt's cost model skips the read of the first update of each output "
    "in each PE and the first reload of each output at each level (a partial sum that does not exist yet is not "
    "read). In ZigZag's word access counts (which its energy uses), the RF's reads of O towards the MACs equal the "
    "number of MACs — every accumulation, the first included — and a level above is read for every reload, the "
    "first included: |O| more reads per reloading level, and with a reduction dimension (C, R, S) unrolled over the "
    "array, |O| x that unrolling more RF reads (each PE's first accumulation). See the `O` rows of the access "
    "table.",
    "**Spatial sliding-window reuse.** When output rows or columns (P, Q) are unrolled over the array, dlaopt's GLB "
    "reads of I count the union of the PEs' input tiles once: the overlapping halos of neighbouring PEs are "
    "multicast. ZigZag multicasts only across array dimensions that are fully irrelevant to the operand, and sends "
    "every PE its whole tile otherwise. The partially relevant OX/FX-style \"diagonal\" reuse exists only in the "
    "spatial mapping generator's `enable_weight_diagonal_mapping`, which the API does not expose. See the "
    "`glb I reads` row of the access table (3x3 layers with P and Q on the array).",
    "**Multicast and spatial reduction otherwise.** Both read a broadcast operand (W across P/Q, I across K) from "
    "the GLB once and write a spatially reduced output into the GLB once; neither charges an adder tree. dlaopt's "
    "NoC energy (item 5) is charged per PE.",
    "**Halo within a tile.** Both count an input tile exactly. dlaopt counts the distinct rows "
    "`{stride*p + dilation*r}`. ZigZag's `LayerNode.calc_pr_dimension_size` gives `a*b - max(0, b - s)*(a - 1)`, "
    "the same count, also for the 1x1 stride-2 layers whose tiles have holes; it truncates fractional sizes with "
    "`int()` (\"TODO this int conversion is suspicious\"). Neither model reuses the overlap between consecutive "
    "temporal tiles: a refetched tile is fetched whole (ZigZag's `decouple_pr_loop`: \"we ignore the input FIFO "
    "effect\").",
    "**Temporal reuse.** ZigZag repeatedly moves each level's bottom loops that are irrelevant to an operand down a "
    "level (`TemporalMapping.innermost_stationary_loop_merge_down`). dlaopt skips the innermost run of irrelevant "
    "loops above a child. For a given loop order, both give the same reuse. LOMA can interleave the prime-factor "
    "loops of one dimension at a level, whereas dlaopt has one loop per dimension and level. The translation "
    "therefore merges them (see the module docstring), and `merging changed reuse` flags any row where that changed "
    "a visit count.",
    "**Latency composition.** ZigZag: `latency_total2 = ideal_temporal_cycle + stall_slack_comb + data_onloading + "
    "data_offloading`. Each (operand, direction) takes `ceil(bits per period / port bandwidth)` whole cycles per "
    "period (`calculate_real_data_transfer_cycles`). The stalls of the transfers that share a port add up, and "
    "`stall_slack_comb` is the worst port's. A transfer may use the whole period only where the level can "
    "double-buffer (data ≤ 50 % of the capacity), and the first fill and the last drain are added in series. "
    "dlaopt: `max(compute, max over levels of traffic / bandwidth)`, a fluid bandwidth with compute and every "
    "level's transfers fully overlapped (double buffering assumed, no capacity charged for it), and no fill or drain "
    "term. Because of the whole-cycle rounding, the runner gives the RF one 16-bit port per operand and direction "
    "group instead of one 48-bit read and one 32-bit write port (both are 6 + 4 B/cycle). With the single ports "
    "(`rf_ports=\"shared\"`), ZigZag's latency for the same mapping was up to 2.2x dlaopt's (measured once on the 22 "
    "searches of ResNet-18; about 1.0–1.5x with the per-operand ports).",
    "**Tie-breaking.** ZigZag's `MinimalEnergyStage` breaks an energy tie by latency (and `MinimalLatencyStage` a "
    "latency tie by energy). dlaopt's exact method optimises the one objective, so its energy optimum can be very "
    "slow (see `dlaopt L` in the energy table) and its latency optimum energy-hungry.",
    "**Energy per word vs per byte.** ZigZag charges `r_cost`/`w_cost` per word of the port's `bandwidth_max` bits. "
    "With `bandwidth_min` = 16 and cost = e16 x bandwidth_max / 16, every 16 bits cost e16, as with dlaopt's "
    "per-byte energies (half the per-16-bit figures). ZigZag truncates each word count with `int()` "
    "(`_calc_memory_access`), which is negligible.",
    "**Capacity.** Both require the tiles of I, W and O at a level to fit its memory together, without double "
    "buffering (ZigZag's `force_double_buffering` is off by default). A ZigZag mapping that dlaopt rejects is "
    "reported as invalid, with the violation (item 3 gives one cause).",
    "**Bypass and boundary traffic.** Neither tool searches bypass. ZigZag passes an operand through every memory "
    "that lists it; dlaopt through every level that keeps it in the hardware description. Both descriptions keep I, "
    "W and O at every level. Neither counts bringing I and W into DRAM or taking O out of it; both count DRAM's "
    "reads of I and W and its writes (and partial-sum reads) of O.",
)


__all__ = ["MODEL_NOTES", "OBJECTIVES", "RUNNER", "Translation", "TranslationError", "compare_rows",
           "ensure_zigzag", "evaluate_zigzag_mapping", "layer_request", "markdown_report", "run_zigzag",
           "run_zigzag_compare", "translate", "translate_full", "unique_conv_layers"]
