"""Seed 002's benchmark: global bank mapping of ResNet-50 on a 128-bank memory (local, propagate, exact: on-chip and
off-chip copy bytes, seed 002 §3's 76 % / 37 % against local), and data-movement elimination on the Parallel-WaveNet
flow (load/store pairs and intermediate bytes eliminated, copies saved; seed 002 §3: 123 of 124, 145 of 146 MB)."""

from __future__ import annotations

import time
from typing import Any

from dlaopt.formulations.bankmap.dme import eliminate
from dlaopt.formulations.bankmap.evaluate import evaluate
from dlaopt.formulations.bankmap.exact import solve_exact
from dlaopt.formulations.bankmap.layouts import build_layout_model
from dlaopt.formulations.bankmap.methods import local, propagate
from dlaopt.solvers.result import SolveOptions
from dlaopt.zoo import ZOO

MB = 1e6


def mapping_rows(*, banks: int = 128, bank_kbs: tuple[float, ...] = (8, 16, 64), offchip_weight: float = 4.0
                 ) -> list[dict[str, Any]]:
    """ResNet-50, fused (as inference compilers emit it) and unfused (batch norms and ReLUs as operators), per bank
    size: every method's on-chip copy, off-chip copy and spill bytes, and exact's reductions against local."""
    rows = []
    for fused in (False, True):
        wl = ZOO.create("resnet50", {"fused": fused})
        for kb in bank_kbs:
            lm = build_layout_model(wl, banks, int(kb * 1024))
            reps = {"local": evaluate(lm, local(lm, offchip_weight), offchip_weight),
                    "propagate": evaluate(lm, propagate(lm, offchip_weight), offchip_weight)}
            t0 = time.perf_counter()
            ex = solve_exact(lm, offchip_weight, options=SolveOptions(threads=1, mip_rel_gap=1e-9))
            exact_s = time.perf_counter() - t0
            assert ex.report is not None
            reps["exact"] = ex.report
            base_on = reps["local"].on_chip_copy_bytes
            base_off = reps["local"].off_chip_copy_bytes + reps["local"].spill_bytes
            for method, r in reps.items():
                off = r.off_chip_copy_bytes + r.spill_bytes
                rows.append({"graph": "resnet50" + ("" if fused else " (unfused)"), "bank_kb": kb, "method": method,
                             "on_chip_copy_mb": r.on_chip_copy_bytes / MB,
                             "off_chip_copy_mb": r.off_chip_copy_bytes / MB, "spill_mb": r.spill_bytes / MB,
                             "objective_mb": r.objective / MB,
                             "on_chip_removed": (1 - r.on_chip_copy_bytes / base_on) if base_on else None,
                             "off_chip_removed": (1 - off / base_off) if base_off else None,
                             "status": ex.status.value if method == "exact" else "",
                             "time_s": exact_s if method == "exact" else None})
    return rows


def dme_summary(*, capacities_mib: tuple[float, ...] = (2, 4, 8), dtype_bytes: int = 2) -> dict[str, Any]:
    """Data-movement elimination on the default Parallel-WaveNet flow."""
    wl = ZOO.create("parallel-wavenet", {"dtype_bytes": dtype_bytes})
    res = eliminate(wl)
    out = res.summary()
    out["copies"] = [res.copies(int(c * 1024 * 1024)) for c in capacities_mib]
    return out


def report_markdown(rows: list[dict[str, Any]], dme: dict[str, Any]) -> str:
    def pct(v: float | None) -> str:
        return "—" if v is None else f"{v:.0%}"

    lines = ["| graph | KB/bank | method | on-chip copies MB | off-chip copies MB | spills MB | on-chip removed | "
             "off-chip removed | exact s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['graph']} | {r['bank_kb']:g} | {r['method']} | {r['on_chip_copy_mb']:.2f} | "
                     f"{r['off_chip_copy_mb']:.2f} | {r['spill_mb']:.2f} | {pct(r['on_chip_removed'])} | "
                     f"{pct(r['off_chip_removed'])} | "
                     + (f"{r['time_s']:.3f} |" if r["time_s"] is not None else "|"))
    lines += ["", f"Data-movement elimination on {dme['graph']}: {dme['pairs_eliminated']} of {dme['pairs_total']} "
              f"load/store pairs, {dme['intermediate_bytes_eliminated'] / MB:.2f} of "
              f"{dme['intermediate_bytes_total'] / MB:.2f} MB of intermediate tensors eliminated "
              f"({dme['operators_before']} → {dme['operators_after']} operators, {dme['seconds']:.2f} s); kept: "
              + ", ".join(f"{t} ({why})" for _, t, why in dme["kept"]), "",
              "| on-chip capacity | on-chip copies MB before → after | off-chip copies MB before → after "
              "| total saved |",
              "|---|---|---|---|"]
    for c in dme["copies"]:
        on, off, tot = c["on_chip"], c["off_chip"], c["total"]
        lines.append(f"| {c['onchip_capacity'] / 2**20:g} MiB | {on['before'] / MB:.1f} → {on['after'] / MB:.1f} | "
                     f"{off['before'] / MB:.1f} → {off['after'] / MB:.1f} | {tot['saved_fraction']:.1%} |")
    return "\n".join(lines)
