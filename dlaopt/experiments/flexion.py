"""Flexion (seed 001, Chapter 3): what an accelerator's flexibility is worth, with proven optima.

The chapter's isolation studies (§3.4) compare, per flexibility axis — Tile, Order, Parallelism, Shape — an
inflexible accelerator (InFlex), a partially flexible one (PartFlex) and a fully flexible one (FullFlex), built on
Table 3.1's resources (1024 PEs, a 100 KB buffer) with the other axes fixed to the baseline, on MnasNet: three layers
of different aspect ratios per study and the whole network. The thesis samples each constrained map space with a
genetic algorithm (10K samples); here every class is a ``flexibility`` preset of mapping constraints
(:mod:`dlaopt.formulations.mapping.flexibility`) on the ``flexion`` hardware preset, and each (layer, class,
objective) is solved by the exact method (a MILP over the cost model, warm-started): the **proven optimum** of
latency, of energy and of EDP, each verified by the evaluator. A PartFlex order or parallelism listing several
choices is solved once per choice; the class's optimum is the best (proven when every choice is).

Classes per study (the chapter's):

* **tile** — InFlex-1000: Table 3.1's tile; PartFlex-1000: any tile in a hard-partitioned buffer (1:1:1 for inputs,
  weights, outputs: the preset's ``partition``); FullFlex-1000: any tile in the shared (soft-partitioned) buffer.
* **order** — InFlex-0100: the output-stationary order Y X K C R S; PartFlex-0100: output-, weight- or
  input-stationary; FullFlex-0100: any order.
* **parallel** — InFlex-0010: K-C parallelism (K along the 64 columns); PartFlex-0010: K-C or Y-X; FullFlex-0010:
  any dimensions.
* **shape** — InFlex-0001: a square 32x32 array; PartFlex-0001-A / -B: the shapes composed of 16x16 / 4x4 blocks;
  FullFlex-0001: any shape of the 1024 PEs.
* every study also reports FullFlex-1111 (no constraint at all), and the optional study ``classes`` runs InFlex-0000,
  the fifteen FullFlex classes and PartFlex-1111 (Fig. 3.13's rows, here on the Table 3.1 baseline).

Results are normalised as the chapter normalises them, to the study's InFlex accelerator, per layer and for the
network (sums over its layers, each unique shape solved once and counted as often as it occurs; the network's EDP
is the sum of the layers' EDPs, each layer mapped for its own). Beside them: the thesis' numbers (Fig. 3.7, 3.9,
3.10(a), 3.11; the thesis minimises runtime and reports the energy of that mapping), the exact map-space sizes of
each axis (:mod:`dlaopt.formulations.mapping.mapspace`) and the area of each class (Table 3.2).

Every solve is a record in ``results.jsonl`` (a rerun with ``resume`` skips what is there); the tables are
``flexion.md`` and ``flexion.csv``, the figure ``flexion.png``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlaopt.errors import InputError
from dlaopt.results import (
    append_records,
    csv_text,
    environment,
    environment_markdown,
    fmt_number,
    md_table,
    open_results,
)

OBJECTIVES: tuple[str, ...] = ("latency", "energy", "edp")
STUDIES: tuple[str, ...] = ("tile", "order", "parallel", "shape")
ALL_STUDIES: tuple[str, ...] = (*STUDIES, "classes")
STUDY_AXIS: dict[str, str] = {"tile": "tile", "order": "order", "parallel": "parallel", "shape": "shape"}
STUDY_TITLES: dict[str, str] = {"tile": "Tile (Fig. 3.7)", "order": "Order (Fig. 3.9)",
                                "parallel": "Parallelism (Fig. 3.10(a), 16x64 PEs)", "shape": "Shape (Fig. 3.11)",
                                "classes": "All sixteen classes (Fig. 3.13's rows)"}
NETWORK = "mnasnet"
THESIS_LAYERS: dict[str, tuple[int, ...]] = {"tile": (1, 16, 29), "order": (16, 21, 29), "parallel": (10, 16, 29),
                                             "shape": (15, 16, 25), "classes": (1, 16, 29)}
"""The MnasNet layers of each study, numbered as the thesis numbers them (its conv layers from 1; they are
dlaopt's mnasnet zoo layers in order: L1 the stem conv, L16 stack2.1.expand, L29 stack3.2.dw, ...)."""
NETWORK_LABEL = "network"

# Table 3.2 (µm²). The table prints T-Flex as 763,874 (+0.004%); 736,874 is +0.004% and makes the per-axis
# overheads add up to FullFlex's 739,576 (to 2 µm²): a transposed digit, corrected here.
AREA_INFLEX = 736_843.0
AREA_AXIS: dict[str, float] = {"tile": 736_874.0, "order": 738_458.0, "parallel": 737_720.0, "shape": 737_055.0}
AREA_PARTFLEX_1111 = 738_209.0
AREA_FULLFLEX_1111 = 739_576.0

# The thesis' figures, normalised to each study's InFlex: (runtime, energy, EDP, H-F, W-F, chosen)
_T = tuple[float | None, float | None, float | None, float | None, float | None, str]
THESIS: dict[str, dict[str, dict[str, _T]]] = {
    "tile": {
        "L1": {"InFlex-1000": (1.00, 1.00, 1.00, 0.22, 0.0001, "K:32 C:16 Y:3 X:3 R:3 S:3"),
               "PartFlex-1000": (0.02, 1.04, 0.02, 0.22, 0.37, "K:32 C:3 Y:1 X:16 R:3 S:1"),
               "FullFlex-1000": (0.0035, 1.01, 0.003, 1.00, 0.50, "K:32 C:3 Y:2 X:16 R:3 S:3"),
               "FullFlex-1111": (0.0035, 1.01, 0.003, None, None, "K:32 C:3 Y:2 X:16 R:3 S:3")},
        "L16": {"InFlex-1000": (1.00, 1.00, 1.00, 0.22, 0.0002, "K:64 C:16 Y:3 X:3 R:3 S:3"),
                "PartFlex-1000": (0.43, 1.01, 0.43, 0.22, 0.54, "K:64 C:10 Y:2 X:4 R:1 S:1"),
                "FullFlex-1000": (0.14, 1.01, 0.14, 1.00, 0.69, "K:64 C:10 Y:4 X:4 R:1 S:1"),
                "FullFlex-1111": (0.05, 1.00, 0.05, None, None, "K:64 C:8 Y:4 X:4 R:1 S:1")},
        "L29": {"InFlex-1000": (1.00, 1.00, 1.00, 0.22, 0.0007, "K:1 C:16 Y:3 X:3 R:3 S:3"),
                "PartFlex-1000": (0.23, 0.55, 0.13, 0.22, 0.58, "K:1 C:8 Y:2 X:7 R:3 S:3"),
                "FullFlex-1000": (0.08, 0.55, 0.04, 1.00, 0.74, "K:1 C:24 Y:2 X:7 R:3 S:3"),
                "FullFlex-1111": (0.08, 0.55, 0.04, None, None, "K:1 C:24 Y:2 X:7 R:3 S:3")},
        NETWORK_LABEL: {"InFlex-1000": (1.00, 1.00, 1.00, 0.22, 0.0006, ""),
                        "PartFlex-1000": (0.38, 1.07, 0.41, 0.22, 0.50, ""),
                        "FullFlex-1000": (0.21, 1.05, 0.22, 1.00, 0.65, ""),
                        "FullFlex-1111": (0.14, 1.06, 0.15, None, None, "")},
    },
    "order": {
        "L16": {"InFlex-0100": (1.00, 1.00, 1.00, 0.001, 0.04, "YXKCRS"),
                "PartFlex-0100": (0.82, 1.003, 0.82, 0.004, 0.13, "KCRSYX"),
                "FullFlex-0100": (0.80, 0.9997, 0.80, 1.00, 1.00, "CXYKRS"),
                "FullFlex-1111": (0.002, 0.99, 0.002, None, None, "YCKSXR")},
        "L21": {"InFlex-0100": (1.00, 1.00, 1.00, 0.001, 0.04, "YXKCRS"),
                "PartFlex-0100": (0.77, 0.998, 0.77, 0.004, 0.13, "KCRSYX"),
                "FullFlex-0100": (0.74, 0.997, 0.74, 1.00, 1.00, "CKXYRS"),
                "FullFlex-1111": (0.002, 1.29, 0.002, None, None, "KCYRXS")},
        "L29": {"InFlex-0100": (1.00, 1.00, 1.00, 0.001, 0.01, "YXKCRS"),
                "PartFlex-0100": (1.00, 1.09, 1.09, 0.004, 0.03, "KCRSYX"),
                "FullFlex-0100": (0.997, 1.001, 0.998, 1.00, 1.00, "KCXYSR"),
                "FullFlex-1111": (0.0003, 0.48, 0.0001, None, None, "KSYRXC")},
        NETWORK_LABEL: {"InFlex-0100": (1.00, 1.00, 1.00, 0.001, 0.01, ""),
                        "PartFlex-0100": (0.90, 1.02, 0.91, 0.004, 0.03, ""),
                        "FullFlex-0100": (0.89, 0.996, 0.89, 1.00, 1.00, ""),
                        "FullFlex-1111": (0.004, 1.00, 0.004, None, None, "")},
    },
    "parallel": {
        "L10": {"InFlex-0010": (1.00, 1.00, 1.00, 0.03, 0.08, "KC"),
                "PartFlex-0010": (0.48, 1.59, 0.76, 0.07, 0.17, "YX"),
                "FullFlex-0010": (0.46, 1.20, 0.55, 1.00, 1.00, "XK"),
                "FullFlex-1111": (0.00003, 0.90, 0.00002, None, None, "XK")},
        "L16": {"InFlex-0010": (1.00, 1.00, 1.00, 0.03, 0.08, "KC"),
                "PartFlex-0010": (0.88, 1.85, 1.63, 0.07, 0.17, "YX"),
                "FullFlex-0010": (0.48, 1.50, 0.72, 1.00, 1.00, "KS"),
                "FullFlex-1111": (0.00006, 0.92, 0.00006, None, None, "KC")},
        "L29": {"InFlex-0010": (1.00, 1.00, 1.00, 0.03, 0.05, "KC"),
                "PartFlex-0010": (0.50, 0.50, 0.25, 0.07, 0.10, "YX"),
                "FullFlex-0010": (0.05, 1.62, 0.09, 1.00, 1.00, "RS"),
                "FullFlex-1111": (0.0001, 0.16, 0.00001, None, None, "KY")},
        NETWORK_LABEL: {"InFlex-0010": (1.00, 1.00, 1.00, 0.03, 0.07, ""),
                        "PartFlex-0010": (0.81, 0.87, 0.70, 0.07, 0.14, ""),
                        "FullFlex-0010": (0.59, 0.99, 0.58, 1.00, 1.00, ""),
                        "FullFlex-1111": (0.0004, 0.56, 0.0002, None, None, "")},
    },
    "shape": {
        "L15": {"InFlex-0001": (1.00, 1.00, 1.00, 0.001, 0.01, "32x32"),
                "PartFlex-0001-A": (0.67, 1.00, 0.67, 0.004, 0.06, "48x16"),
                "PartFlex-0001-B": (0.50, 0.97, 0.48, 0.06, 0.25, "24x42"),
                "FullFlex-0001": (0.50, 0.97, 0.48, 1.00, 1.00, "24x42"),
                "FullFlex-1111": (0.04, 0.95, 0.03, None, None, "72x14")},
        "L16": {"InFlex-0001": (1.00, 1.00, 1.00, 0.001, 0.03, "32x32"),
                "PartFlex-0001-A": (0.75, 0.98, 0.74, 0.004, 0.08, "16x64"),
                "PartFlex-0001-B": (0.63, 0.99, 0.62, 0.06, 0.25, "40x24"),
                "FullFlex-0001": (0.63, 0.99, 0.62, 1.00, 1.00, "40x25"),
                "FullFlex-1111": (0.04, 0.96, 0.04, None, None, "8x128")},
        "L25": {"InFlex-0001": (1.00, 1.00, 1.00, 0.001, 0.01, "32x32"),
                "PartFlex-0001-A": (0.89, 0.99, 0.88, 0.004, 0.05, "16x48"),
                "PartFlex-0001-B": (0.89, 0.99, 0.88, 0.06, 0.25, "16x48"),
                "FullFlex-0001": (0.87, 0.99, 0.86, 1.00, 1.00, "24x42"),
                "FullFlex-1111": (0.80, 1.21, 0.97, None, None, "24x42")},
        NETWORK_LABEL: {"InFlex-0001": (1.00, 1.00, 1.00, 0.00, 0.02, ""),
                        "PartFlex-0001-A": (0.98, 1.00, 0.97, 0.00, 0.04, ""),
                        "PartFlex-0001-B": (0.96, 0.99, 0.95, 0.06, 0.20, ""),
                        "FullFlex-0001": (0.96, 0.99, 0.95, 1.00, 0.98, ""),
                        "FullFlex-1111": (0.15, 1.03, 0.15, None, None, "")},
    },
}
# Fig. 3.13, MnasNet column: runtime normalised to InFlex-0000-Alexnet-Opt (an accelerator tuned for AlexNet; here the
# classes are built on Table 3.1's baseline instead, so only the ranking compares)
THESIS_CLASSES_MNASNET: dict[str, float] = {
    "InFlex-0000": 1.00, "FullFlex-1000": 0.57, "FullFlex-0100": 1.00, "FullFlex-0010": 0.92, "FullFlex-0001": 0.82,
    "FullFlex-0011": 0.51, "FullFlex-0101": 0.60, "FullFlex-1001": 0.57, "FullFlex-0110": 0.60,
    "FullFlex-1010": 0.17, "FullFlex-1100": 0.33, "FullFlex-1110": 0.17, "FullFlex-1011": 0.15,
    "FullFlex-0111": 0.51, "FullFlex-1101": 0.33, "FullFlex-1111": 0.15, "PartFlex-1111": 0.42}


@dataclass(frozen=True)
class FlexConfig:
    """One accelerator of a study: its label, its flexibility document and the preset parameters it changes."""

    label: str
    level: str  # InFlex, PartFlex or FullFlex
    flexibility: Mapping[str, Any]
    hardware: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def area_um2(self) -> float:
        """Table 3.2's area: InFlex; one flexible axis: that axis' figure; PartFlex-1111 and FullFlex-1111: theirs;
        other classes: InFlex plus the overheads of their flexible axes (which reproduces FullFlex-1111's)."""
        code = str(self.flexibility["class"])
        if self.label == "PartFlex-1111":
            return AREA_PARTFLEX_1111
        if code == "1111":
            return AREA_FULLFLEX_1111
        axes = [a for a, bit in zip(STUDIES, code, strict=True) if bit == "1"]
        return AREA_INFLEX + sum(AREA_AXIS[a] - AREA_INFLEX for a in axes)


def _stationary() -> list[list[str]]:
    from dlaopt.formulations.mapping.flexibility import STATIONARY_ORDERS

    return [list(o) for o in STATIONARY_ORDERS]


def study_configs(study: str, *, num_pes: int = 1024, blocks: Sequence[Sequence[int]] = ((16, 16), (4, 4))
                  ) -> list[FlexConfig]:
    """The accelerators of one study (the first is its InFlex, what the study normalises to)."""
    full = FlexConfig("FullFlex-1111", "FullFlex", {"class": "1111"}, note="no constraint")
    if study == "tile":
        return [FlexConfig("InFlex-1000", "InFlex", {"class": "0000"}, note="Table 3.1's tile"),
                FlexConfig("PartFlex-1000", "PartFlex", {"class": "1000"}, {"partition": "1:1:1"},
                           "any tile, hard-partitioned 1:1:1 buffer"),
                FlexConfig("FullFlex-1000", "FullFlex", {"class": "1000"}, note="any tile, shared buffer"), full]
    if study == "order":
        return [FlexConfig("InFlex-0100", "InFlex", {"class": "0000"}, note="YXKCRS"),
                FlexConfig("PartFlex-0100", "PartFlex", {"class": "0100", "order": _stationary()},
                           note="output-, weight- or input-stationary"),
                FlexConfig("FullFlex-0100", "FullFlex", {"class": "0100"}, note="any order"), full]
    if study == "parallel":
        return [FlexConfig("InFlex-0010", "InFlex", {"class": "0000"}, note="K-C"),
                FlexConfig("PartFlex-0010", "PartFlex", {"class": "0010", "parallel": [["C", "K"], ["Y", "X"]]},
                           note="K-C or Y-X"),
                FlexConfig("FullFlex-0010", "FullFlex", {"class": "0010"}, note="any dimensions"), full]
    if study == "shape":
        side = math.isqrt(num_pes)
        square = {"baseline": {"shape": [side, side]}} if side * side == num_pes else {}
        out = [FlexConfig("InFlex-0001", "InFlex", {"class": "0000", **square},
                          note=f"{side}x{side}" if square else "the array's shape")]
        for name, b in zip("AB", blocks, strict=False):
            out.append(FlexConfig(f"PartFlex-0001-{name}", "PartFlex",
                                  {"class": "0001", "shapes": {"block": [int(b[0]), int(b[1])]}, **square},
                                  note=f"{b[0]}x{b[1]} blocks"))
        return [*out, FlexConfig("FullFlex-0001", "FullFlex", {"class": "0001"}, note="any shape"), full]
    if study == "classes":
        out = [FlexConfig("InFlex-0000", "InFlex", {"class": "0000"})]
        for k in range(1, 16):
            code = format(k, "04b")
            out.append(FlexConfig(f"FullFlex-{code}", "FullFlex", {"class": code}))
        out.append(FlexConfig("PartFlex-1111", "PartFlex",
                              {"class": "1111", "order": _stationary(), "parallel": [["C", "K"], ["Y", "X"]],
                               "shapes": {"block": [int(blocks[0][0]), int(blocks[0][1])]}}, {"partition": "1:1:1"},
                              "§3.4's PartFlex choices (shape variant A)"))
        return out
    raise InputError(f"unknown study '{study}'", path=("--studies",), expected="one of: " + ", ".join(ALL_STUDIES))


# ------------------------------------------------------------------------------------------------ solving
QUICK_HARDWARE: dict[str, Any] = {"rows": 4, "cols": 4, "buffer_kb": 1.5, "rf_bytes": 16,
                                  "dram_bytes_per_cycle": 8.0, "buffer_bytes_per_cycle": 32.0}
QUICK_BLOCKS = ((2, 2), (1, 2))
QUICK_WORKLOAD: dict[str, Any] = {
    "name": "flexion-quick", "dtype_bytes": 2,
    "tensors": [{"name": "x", "shape": [1, 4, 5, 5], "role": "input"},
                {"name": "w", "shape": [4, 4, 3, 3], "role": "weight"},
                {"name": "y", "shape": [1, 4, 3, 3], "role": "output"}],
    "operators": [{"name": "conv", "kind": "conv2d", "inputs": ["x", "w"], "outputs": ["y"]}],
}
"""``quick``: one small convolution (K 4, C 4, 3x3 outputs, 3x3 filters: every baseline tile divides it) on a 4x4
array with a 1.5 KB buffer — seconds, for tests and CI."""


def _config_id(flex: Mapping[str, Any], hardware: Mapping[str, Any]) -> str:
    text = json.dumps({"flexibility": flex, "hardware": hardware}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _instance_doc(workload: Mapping[str, Any], layer: str, flex: Mapping[str, Any], hardware: Mapping[str, Any],
                  objective: str) -> dict[str, Any]:
    return {"problem": "mapping", "name": f"flexion-{layer}", "workload": dict(workload),
            "hardware": {"preset": "flexion", "params": dict(hardware)}, "objective": objective,
            "options": {"layers": [layer], "workers": 1}, "flexibility": dict(flex)}


def solve_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """One (layer, class choice, objective): the exact method's verified result as a record."""
    from dlaopt.harness import solve
    from dlaopt.io.instance import instance_from_dict
    from dlaopt.solvers.result import SolveOptions

    t0 = time.perf_counter()
    inst = instance_from_dict(task["doc"])
    res = solve(inst, "exact", options=SolveOptions(time_limit=task["time_limit"], threads=1), explain=False)
    layer = task["layer"]
    sol = (res.solution or {}).get("layers", {}).get(layer) if res.solution else None
    m = res.metrics
    rec: dict[str, Any] = {
        "instance": task["key"], "method": task["doc"]["objective"], "status": res.status.value,
        "objective": res.objective, "bound": res.bound, "verified": res.verified, "time_s": time.perf_counter() - t0,
        "energy_pj": m.get("energy_pj"), "latency_cycles": m.get("latency_cycles"), "edp": m.get("edp_sum"),
        "message": res.message[:500], "layer": layer, "choice": task["choice"],
    }
    if sol is not None:
        rec["spatial"] = _spatial_text(sol)
        rec["shape"] = sol.get("pe_array_shape")
        rec["orders"] = sol.get("orders")
    return rec


def _spatial_text(sol: Mapping[str, Any]) -> str:
    """The spatial factors of a solved layer, ``axis: dims`` per PE-array axis (e.g. ``rows C16, cols K64``)."""
    parts = []
    for lv in sol.get("levels", []):
        for axis, dims in (lv.get("spatial_below") or {}).items():
            parts.append(f"{axis} " + ("·".join(f"{d}{f}" for d, f in dims.items()) or "-"))
    return ", ".join(parts) or "-"


@dataclass
class Layer:
    label: str  # "L16" (thesis numbering) or the layer name
    name: str
    index: int  # 1-based among the mappable layers
    shape_text: str
    count: int = 1  # layers of this shape in the network (network totals)


def network_layers(workload: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    """The workload's mappable operators and their loop nests."""
    from dlaopt.formulations.mapping.loopnest import loopnest_from_operator, mappable_layers
    from dlaopt.io.instance import instance_from_dict

    inst = instance_from_dict({"problem": "mapping", "workload": dict(workload), "hardware": {"preset": "flexion"}})
    wl = inst.graph
    ops = mappable_layers(wl)
    return ops, [loopnest_from_operator(wl, op) for op in ops]


def select_layers(nests: Sequence[Any], wanted: Sequence[int | str]) -> list[Layer]:
    out = []
    for w in wanted:
        if isinstance(w, int) or (isinstance(w, str) and w.isdigit()):
            i = int(w)
            if not 1 <= i <= len(nests):
                raise InputError(f"layer {i} does not exist: the network has {len(nests)} mappable layers",
                                 path=("--layers",), expected=f"1 to {len(nests)} or layer names")
            n = nests[i - 1]
            out.append(Layer(f"L{i}", n.name, i, n.shape_text))
        else:
            idx = next((k for k, n in enumerate(nests) if n.name == w), None)
            if idx is None:
                raise InputError(f"no mappable layer named '{w}'", path=("--layers",),
                                 expected="thesis layer numbers (1-based) or layer names")
            out.append(Layer(str(w), str(w), idx + 1, nests[idx].shape_text))
    return out


def unique_network(nests: Sequence[Any]) -> list[Layer]:
    """Every unique layer shape of the network with its count (labelled by the first layer of that shape)."""
    from dlaopt.formulations.mapping.loopnest import unique_layers

    return [Layer(f"L{g[0] + 1}", nests[g[0]].name, g[0] + 1, nests[g[0]].shape_text, len(g))
            for g in unique_layers(list(nests)).values()]


@dataclass
class FlexionReport:
    rows: list[dict[str, Any]]  # per study, layer (or network), class, objective
    spaces: list[dict[str, Any]]  # per study, layer, class: the axis' map-space sizes
    csv_path: Path
    markdown_path: Path
    plot_path: Path | None
    table: str
    summary: dict[str, Any]


def run_flexion(
    out_dir: str | Path = "results/flexion",
    *,
    studies: Sequence[str] = STUDIES,
    objectives: Sequence[str] = OBJECTIVES,
    layers: Sequence[int | str] | None = None,
    network: bool = False,
    time_limit: float = 60.0,
    workers: int = 1,
    quick: bool = False,
    resume: bool = False,
    plot: bool = True,
    progress: Callable[[str], None] | None = None,
) -> FlexionReport:
    """Run the studies (see the module docstring) and write the tables and the figure into ``out_dir``.

    ``layers``: the layers of every study (thesis numbers or names; default each study's three); ``network``: also
    every layer of MnasNet, for the network rows; ``time_limit``: seconds per exact solve (a solve it stops is
    reported ``feasible`` with its bound); ``quick``: one small layer on a 4x4 array instead of MnasNet."""
    for s in studies:
        if s not in ALL_STUDIES:
            raise InputError(f"unknown study '{s}'", path=("--studies",), expected="one of: " + ", ".join(ALL_STUDIES))
    for o in objectives:
        if o not in OBJECTIVES:
            raise InputError(f"unknown objective '{o}'", path=("--objectives",),
                             expected="one of: " + ", ".join(OBJECTIVES))
    if time_limit is not None and time_limit <= 0:
        raise InputError("the time limit must be positive", path=("--time-limit",), expected="seconds > 0")
    out = Path(out_dir)
    jsonl, done = open_results(out, resume=resume)
    workload: dict[str, Any] = dict(QUICK_WORKLOAD) if quick else {"zoo": NETWORK, "params": {}}
    hardware: dict[str, Any] = dict(QUICK_HARDWARE) if quick else {}
    blocks = QUICK_BLOCKS if quick else ((16, 16), (4, 4))
    ops, nests = network_layers(workload)
    from dlaopt.hardware.presets import PRESETS

    num_pes = PRESETS.create("flexion", hardware).pe_array.num_pes
    per_study: dict[str, list[Layer]] = {}
    for s in studies:
        wanted: Sequence[int | str] = layers if layers is not None else (
            (1,) if quick else THESIS_LAYERS[s])
        per_study[s] = select_layers(nests, wanted)
    net_layers = unique_network(nests) if network else []
    configs = {s: study_configs(s, num_pes=num_pes, blocks=blocks) for s in studies}

    # the solves: (layer, config choice, objective), each once
    from dlaopt.formulations.mapping.flexibility import choices

    tasks: dict[str, dict[str, Any]] = {}
    plan: dict[tuple[str, str, str], list[str]] = {}  # (layer, config label, hardware id) -> choice config ids
    for s in studies:
        for c in configs[s]:
            hw = {**hardware, **c.hardware}
            alts = choices(c.flexibility)
            ids = []
            for k, alt in enumerate(alts):
                cid = _config_id(alt, hw)
                ids.append(cid)
                for la in {*(la.name for la in per_study[s]), *(la.name for la in net_layers)}:
                    for o in objectives:
                        key = f"{la}|{cid}"
                        tasks.setdefault(f"{key}\t{o}", {
                            "key": key, "layer": la, "time_limit": time_limit, "choice": _choice_text(alt, k, alts),
                            "doc": _instance_doc(workload, la, alt, hw, o)})
            plan[(s, c.label, "")] = ids
    todo = [t for k, t in tasks.items() if k not in done]
    if progress:
        progress(f"flexion: {len(tasks)} solves ({len(tasks) - len(todo)} already in {jsonl})")
    records = dict(done)
    t_start = time.perf_counter()
    for rec in _run(todo, workers):
        append_records(jsonl, [rec])
        records[f"{rec['instance']}\t{rec['method']}"] = rec
        if progress:
            progress(f"  {rec['layer']} {rec['choice']} {rec['method']}: {rec['status']} "
                     f"{_g(rec['objective'])} ({rec['time_s']:.1f} s)")
    wall = time.perf_counter() - t_start

    rows = _rows(studies, configs, plan, per_study, net_layers, objectives, records, thesis=not quick)
    spaces = _spaces(studies, configs, per_study, net_layers, nests, hardware, thesis=not quick)
    used = [records[k] for k in tasks if k in records]
    summary = {"solves": len(tasks), "solved_now": len(todo), "wall_s": round(wall, 1),
               "unproven": sum(1 for r in used if r.get("status") != "optimal"),
               "unverified": sum(1 for r in used if not r.get("verified")),
               "solve_s": round(sum(float(r.get("time_s") or 0.0) for r in used), 1),
               "time_limit_s": time_limit, "quick": quick, "environment": environment(1)}
    table = report_markdown(rows, spaces, summary, configs, quick=quick)
    csv_path = out / "flexion.csv"
    csv_path.write_text(csv_text(rows, CSV_FIELDS), encoding="utf-8")
    (out / "flexion_spaces.json").write_text(json.dumps(spaces, indent=1, default=str), encoding="utf-8")
    md_path = out / "flexion.md"
    md_path.write_text(table, encoding="utf-8")
    plot_path = None
    if plot:
        from dlaopt.plots import save
        from dlaopt.plots.flexion import plot_flexion

        plot_path = out / "flexion.png"
        save(plot_flexion(rows, spaces, [s for s in studies if s != "classes"]), plot_path)
    return FlexionReport(rows, spaces, csv_path, md_path, plot_path, table, summary)


def _choice_text(alt: Mapping[str, Any], k: int, alts: Sequence[Mapping[str, Any]]) -> str:
    text = f"class {alt['class']}"
    if len(alts) > 1:
        if alt.get("order"):
            text += " order " + "".join(alt["order"][0])
        if alt.get("parallel"):
            text += " parallel " + "-".join(alt["parallel"][0])
    return text


def _run(tasks: Sequence[dict[str, Any]], workers: int) -> Any:
    if workers <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield solve_task(t)
        return
    from concurrent.futures import as_completed

    from dlaopt.solvers.processes import worker_pool

    with worker_pool(workers) as pool:
        futures = [pool.submit(solve_task, t) for t in tasks]
        for f in as_completed(futures):
            yield f.result()


# ------------------------------------------------------------------------------------------------ aggregation
CSV_FIELDS = ("study", "layer", "layer_name", "shape", "count", "class", "level", "objective", "value", "normalised",
              "status", "proven", "verified", "bound", "time_s", "energy_pj", "latency_cycles", "edp", "choice",
              "spatial", "pe_array_shape", "area_um2", "area_overhead", "thesis_value")


def _best(records: Mapping[str, dict[str, Any]], layer: str, ids: Sequence[str], objective: str
          ) -> dict[str, Any] | None:
    """The best verified record over the choices of a class; proven only when every choice is."""
    recs = [records.get(f"{layer}|{cid}\t{objective}") for cid in ids]
    if any(r is None for r in recs):
        return None
    ok = [r for r in recs if r is not None and r.get("verified") and r.get("objective") is not None]
    proven = all(r is not None and r.get("status") in ("optimal", "infeasible") for r in recs)
    if not ok:
        return {"status": next((r["status"] for r in recs if r is not None), "no_solution"), "objective": None,
                "proven": proven, "verified": False}
    best = dict(min(ok, key=lambda r: r["objective"]))
    bounds = [r.get("bound") for r in recs if r is not None and r.get("status") != "infeasible"]
    best["bound"] = min(bounds) if bounds and all(b is not None for b in bounds) else None
    best["proven"] = proven
    best["status"] = "optimal" if proven else best["status"]
    return best


def _thesis(study: str, layer: str, label: str, objective: str) -> float | None:
    if study == "classes":
        return THESIS_CLASSES_MNASNET.get(label) if layer == NETWORK_LABEL and objective == "latency" else None
    t = THESIS.get(study, {}).get(layer, {}).get(label)
    return None if t is None else t[OBJECTIVES.index(objective)]


def _rows(studies: Sequence[str], configs: Mapping[str, list[FlexConfig]],
          plan: Mapping[tuple[str, str, str], list[str]], per_study: Mapping[str, list[Layer]],
          net_layers: Sequence[Layer], objectives: Sequence[str], records: Mapping[str, dict[str, Any]],
          thesis: bool = True) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for s in studies:
        for o in objectives:
            base: dict[str, float | None] = {}
            for la in [*per_study[s], *([Layer(NETWORK_LABEL, NETWORK_LABEL, 0, "", 1)] if net_layers else [])]:
                for c in configs[s]:
                    ids = plan[(s, c.label, "")]
                    if la.label == NETWORK_LABEL:
                        bests = [_best(records, x.name, ids, o) for x in net_layers]
                        ok = all(b is not None and b.get("objective") is not None for b in bests)
                        value = sum(b["objective"] * x.count for b, x in zip(bests, net_layers, strict=True)  # type: ignore[index]
                                    ) if ok else None
                        rec: dict[str, Any] = {
                            "status": "optimal" if ok and all(b["proven"] for b in bests) else  # type: ignore[index]
                            ("feasible" if ok else "missing"),
                            "proven": ok and all(b["proven"] for b in bests),  # type: ignore[index]
                            "verified": ok and all(b.get("verified") for b in bests),  # type: ignore[union-attr]
                            "objective": value,
                            "bound": sum(b["bound"] * x.count for b, x in zip(bests, net_layers, strict=True))  # type: ignore[index]
                            if ok and all(b.get("bound") is not None for b in bests) else None,  # type: ignore[union-attr]
                            "time_s": sum(b.get("time_s") or 0.0 for b in bests if b is not None),
                            "count": sum(x.count for x in net_layers)}
                        for key in ("energy_pj", "latency_cycles", "edp"):
                            rec[key] = sum((b.get(key) or 0.0) * x.count for b, x in zip(bests, net_layers, strict=True)
                                           if b is not None) if ok else None
                    else:
                        rec = _best(records, la.name, ids, o) or {"status": "missing", "objective": None,
                                                                  "proven": False, "verified": False}
                    value = rec.get("objective")
                    if c is configs[s][0]:
                        base[la.label] = value
                    b = base.get(la.label)
                    rows.append({
                        "study": s, "layer": la.label, "layer_name": la.name, "shape": la.shape_text,
                        "count": rec.get("count", la.count), "class": c.label, "level": c.level, "objective": o,
                        "value": value, "normalised": value / b if value is not None and b else None,
                        "status": rec.get("status"), "proven": rec.get("proven"), "verified": rec.get("verified"),
                        "bound": rec.get("bound"), "time_s": rec.get("time_s"), "energy_pj": rec.get("energy_pj"),
                        "latency_cycles": rec.get("latency_cycles"), "edp": rec.get("edp"),
                        "choice": rec.get("choice") if len(ids) > 1 else "", "spatial": rec.get("spatial"),
                        "pe_array_shape": "x".join(map(str, rec["shape"])) if rec.get("shape") else "",
                        "area_um2": c.area_um2, "area_overhead": c.area_um2 / AREA_INFLEX - 1,
                        "thesis_value": _thesis(s, la.label, c.label, o) if thesis else None})
    return rows


def _spaces(studies: Sequence[str], configs: Mapping[str, list[FlexConfig]], per_study: Mapping[str, list[Layer]],
            net_layers: Sequence[Layer], nests: Sequence[Any], hardware: Mapping[str, Any], thesis: bool = True
            ) -> list[dict[str, Any]]:
    """Per study, layer (and the network's mean over its layers) and class: the map-space sizes of the study's axis
    (every axis for the ``classes`` study), with the thesis' H-F and W-F when ``thesis``."""
    from dlaopt.formulations.mapping.arch import arch_from_accelerator
    from dlaopt.formulations.mapping.flexibility import parse
    from dlaopt.formulations.mapping.mapspace import axis_spaces
    from dlaopt.hardware.presets import PRESETS

    by_name = {n.name: n for n in nests}
    out = []
    cache: dict[tuple[str, str], dict[str, Any]] = {}
    for s in studies:
        axes = list(STUDY_AXIS.values()) if s == "classes" else [STUDY_AXIS[s]]
        for c in configs[s]:
            acc = PRESETS.create("flexion", {**hardware, **c.hardware})
            fc = parse(c.flexibility, acc)
            arch = arch_from_accelerator(acc)
            per_layer = []
            for la in [*per_study[s], *net_layers]:
                key = (la.name, _config_id(c.flexibility, {**hardware, **c.hardware}))
                if key not in cache:
                    cache[key] = {a: sp.to_dict() for a, sp in axis_spaces(fc, by_name[la.name], arch).items()}
                per_layer.append((la, cache[key]))
            for la, sp in per_layer[: len(per_study[s])]:
                for a in axes:
                    out.append({"study": s, "layer": la.label, "class": c.label, "axis": a, **sp[a],
                                **_thesis_flexion(s, la.label, c.label, thesis)})
            if net_layers:
                for a in axes:
                    net = [(la.count, sp[a]) for la, sp in per_layer[len(per_study[s]):]]
                    total = sum(k for k, _ in net)
                    mean = {f: sum(k * (d[f] or 0.0) for k, d in net) / total for f in ("hf", "wf")}
                    out.append({"study": s, "layer": NETWORK_LABEL, "class": c.label, "axis": a,
                                "level": net[0][1]["level"], **mean,
                                **_thesis_flexion(s, NETWORK_LABEL, c.label, thesis)})
    return out


def _thesis_flexion(study: str, layer: str, label: str, thesis: bool) -> dict[str, float | None]:
    t = THESIS.get(study, {}).get(layer, {}).get(label) if thesis else None
    return {"thesis_hf": None if t is None else t[3], "thesis_wf": None if t is None else t[4]}


# ------------------------------------------------------------------------------------------------ report
def _g(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    f = float(v)
    if f == 0:
        return "0"
    if abs(f) >= 1000 or abs(f) < 0.001:
        return f"{f:.{digits}g}"
    return f"{f:.{digits}g}"


def _norm_cell(r: Mapping[str, Any] | None) -> str:
    if r is None or r.get("normalised") is None:
        return "-" if r is None else str(r.get("status") or "-")
    mark = "" if r.get("proven") else "*"
    return _g(r["normalised"]) + mark


def report_markdown(rows: Sequence[Mapping[str, Any]], spaces: Sequence[Mapping[str, Any]],
                    summary: Mapping[str, Any], configs: Mapping[str, list[FlexConfig]], *, quick: bool = False
                    ) -> str:
    lines = ["# Flexion: proven optima per flexibility class (seed 001, Chapter 3)", ""]
    lines.append("Values are normalised to each study's InFlex accelerator, as the chapter normalises (runtime = "
                 "latency). Each entry is the proven optimum of that objective (one exact solve per objective; a `*` "
                 "marks one not proven within the time limit). `thesis` columns: the GA's best-found, normalised the "
                 "same way (the thesis minimises runtime and reports that mapping's energy and EDP). H-F = A/C, "
                 "W-F = A∩W/W of the study's axis (dlaopt.formulations.mapping.mapspace; the tile axis' H-F is "
                 "A∩W/C∩W).")
    if quick:
        lines.append("")
        lines.append("*Quick run: one small convolution on a 4x4 array (not the thesis' workload or hardware).*")
    lines.append("")
    book: Mapping[str, Any] = {} if quick else THESIS
    idx = {(r["study"], r["layer"], r["class"], r["objective"]): r for r in rows}
    sp = {(d["study"], d["layer"], d["class"], d["axis"]): d for d in spaces}
    for s, cfgs in configs.items():
        lines.append(f"## {STUDY_TITLES[s]}")
        lines.append("")
        layers = list(dict.fromkeys(r["layer"] for r in rows if r["study"] == s))
        axis = STUDY_AXIS.get(s)
        header = ["layer", "class", "runtime", "thesis", "energy", "thesis", "EDP", "thesis"]
        if axis:
            header += ["H-F", "thesis", "W-F", "thesis"]
        header += ["area µm² (Table 3.2)", "chosen (runtime optimum)"]
        body = []
        for la in layers:
            for c in cfgs:
                cells = [la if c is cfgs[0] else "", c.label]
                for o in OBJECTIVES:
                    r = idx.get((s, la, c.label, o))
                    cells.append(_norm_cell(r))
                    cells.append(_g(None if r is None else r.get("thesis_value")))
                if axis:
                    d = sp.get((s, la, c.label, axis))
                    th = book.get(s, {}).get(la, {}).get(c.label)
                    cells += [_g(None if d is None else d.get("hf")), _g(None if th is None else th[3]),
                              _g(None if d is None else d.get("wf")), _g(None if th is None else th[4])]
                cells.append(f"{c.area_um2:,.0f} (+{100 * (c.area_um2 / AREA_INFLEX - 1):.2f}%)")
                r = idx.get((s, la, c.label, "latency"))
                chosen = ""
                if r is not None and la != NETWORK_LABEL:
                    chosen = "; ".join(x for x in (r.get("choice"), r.get("spatial"),
                                                   r.get("pe_array_shape") and f"shape {r['pe_array_shape']}") if x)
                th = book.get(s, {}).get(la, {}).get(c.label)
                if th is not None and th[5]:
                    chosen += f" (thesis: {th[5]})"
                cells.append(chosen)
                body.append(cells)
        lines.append(md_table(header, body, ["l", "l"] + ["r"] * (len(header) - 4) + ["r", "l"]))
        lines.append("")
        base = [r for r in rows if r["study"] == s and r["class"] == cfgs[0].label]
        absolute = ", ".join(f"{r['layer']} {r['objective']} {fmt_number(r['value'])}" for r in base
                             if r["value"] is not None)
        lines.append(f"{cfgs[0].label} absolute values (cycles, pJ, pJ·cycles): {absolute}.")
        notes = "; ".join(f"{c.label}: {c.note}" for c in cfgs if c.note)
        lines.append(f"Classes: {notes}.")
        shapes = {r["layer"]: f"{r['layer_name']} ({r['shape']})" for r in rows if r["study"] == s
                  and r["layer"] != NETWORK_LABEL}
        lines.append("Layers: " + "; ".join(f"{k} = {v}" for k, v in shapes.items()) + ".")
        lines.append("")
    lines.append("## Run")
    lines.append("")
    lines.append(f"{summary['solves']} exact solves taking {summary['solve_s']} s in all ({summary['solved_now']} in "
                 f"this run, {summary['wall_s']} s of wall time); "
                 f"not proven optimal: {summary['unproven']}; not verified: {summary['unverified']}; time limit "
                 f"{summary['time_limit_s']} s per solve.")
    lines.append("")
    lines.append(environment_markdown(summary["environment"]))
    return "\n".join(lines) + "\n"


__all__ = ["ALL_STUDIES", "AREA_AXIS", "AREA_INFLEX", "NETWORK", "OBJECTIVES", "STUDIES", "THESIS", "THESIS_LAYERS",
           "FlexConfig", "FlexionReport", "run_flexion", "solve_task", "study_configs"]
