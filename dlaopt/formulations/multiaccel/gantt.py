"""A schedule drawn as SVG: one lane per sub-accelerator with its jobs (coloured by tenant), and under it the system
bandwidth each sub-accelerator is allocated over time (stacked), against the system bandwidth."""

from __future__ import annotations

from html import escape

import numpy as np

from dlaopt.formulations.multiaccel.model import JobTable, Simulation

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
LANE_H = 26
LEFT = 120
WIDTH = 1000
BW_H = 160


def gantt_svg(sim: Simulation, table: JobTable, system_bandwidth: float, *, title: str = "") -> str:
    """The SVG document (a string)."""
    n_acc = table.n_accelerators
    span = sim.makespan or 1.0
    tenants = sorted(set(table.tenants))
    colour = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(tenants)}

    def x(t: float) -> float:
        return LEFT + (WIDTH - LEFT - 20) * t / span

    top = 40
    bw_top = top + n_acc * LANE_H + 50
    height = bw_top + BW_H + 60 + 18 * ((len(tenants) + 3) // 4)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" '
           f'font-size="11">',
           f'<text x="{LEFT}" y="20" font-size="14">{escape(title)} — makespan {span * 1e3:.4g} ms, throughput '
           f'{sim.throughput / 1e9:.4g} GOPS</text>']
    for a, name in enumerate(table.accelerators):
        y = top + a * LANE_H
        out.append(f'<text x="{LEFT - 14}" y="{y + LANE_H * 0.65:.1f}" text-anchor="end">{escape(name)}</text>'
                   f'<rect x="{LEFT - 11}" y="{y + LANE_H * 0.35:.1f}" width="8" height="8" fill="{_lane(a, n_acc)}"/>')
        out.append(f'<line x1="{LEFT}" y1="{y + LANE_H}" x2="{WIDTH - 20}" y2="{y + LANE_H}" stroke="#ddd"/>')
    for j in range(table.n_jobs):
        a = int(sim.accelerator[j])
        y = top + a * LANE_H + 3
        x0, x1 = x(float(sim.start[j])), x(float(sim.end[j]))
        out.append(f'<rect x="{x0:.2f}" y="{y}" width="{max(x1 - x0, 0.5):.2f}" height="{LANE_H - 6}" '
                   f'fill="{colour[table.tenants[j]]}" stroke="white" stroke-width="0.5">'
                   f'<title>{escape(table.jobs[j])}: {sim.start[j] * 1e3:.4g}–{sim.end[j] * 1e3:.4g} ms</title>'
                   f'</rect>')
    # bandwidth over time, stacked by sub-accelerator
    scale = BW_H / max(system_bandwidth, 1e-30)
    base = bw_top + BW_H
    out.append(f'<text x="{LEFT - 6}" y="{bw_top + 10}" text-anchor="end">bandwidth</text>')
    out.append(f'<line x1="{LEFT}" y1="{bw_top}" x2="{WIDTH - 20}" y2="{bw_top}" stroke="#333" '
               f'stroke-dasharray="4 3"/>')
    out.append(f'<text x="{WIDTH - 20}" y="{bw_top - 4}" text-anchor="end">system {system_bandwidth / 1e9:.4g} GB/s'
               f'</text>')
    for seg in sim.segments:
        if seg.t1 <= seg.t0:
            continue
        level = 0.0
        per_acc = np.zeros(n_acc)
        for j, alloc in zip(seg.jobs, seg.allocation, strict=True):
            per_acc[int(sim.accelerator[j])] += alloc
        for a in range(n_acc):
            if per_acc[a] <= 0:
                continue
            h = per_acc[a] * scale
            out.append(f'<rect x="{x(seg.t0):.2f}" y="{base - level - h:.2f}" width="{x(seg.t1) - x(seg.t0):.2f}" '
                       f'height="{h:.2f}" fill="{_lane(a, n_acc)}" fill-opacity="0.8"/>')
            level += h
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - 20}" y2="{base}" stroke="#333"/>')
    for k in range(5):
        t = span * k / 4
        out.append(f'<text x="{x(t):.1f}" y="{base + 14}" text-anchor="middle">{t * 1e3:.3g} ms</text>')
    out.append(f'<text x="{LEFT}" y="{base + 28}">bandwidth stacked by sub-accelerator (the squares beside the lane '
               'names); jobs coloured by tenant:</text>')
    for i, t in enumerate(tenants):
        lx, ly = LEFT + (i % 4) * 220, base + 46 + 18 * (i // 4)
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colour[t]}"/>'
                   f'<text x="{lx + 16}" y="{ly}">{escape(t)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _lane(a: int, n: int) -> str:
    return f"hsl({int(360 * a / max(n, 1))},45%,60%)"
