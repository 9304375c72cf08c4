"""The co-design experiments (seed 001: ConfuciuX, Chapter 8; DiGamma, Chapter 6) run end to end at a tiny scale
through the command line, write their tables, traces and figures, and the proven optimum is never beaten."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from click.testing import CliRunner

from dlaopt.cli import cli
from dlaopt.experiments.confuciux import samples_to_within


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _num(v: str) -> float | None:
    return float(v) if v not in ("", "None") else None


def test_samples_to_within():
    trace = [(1, 130.0), (5, 110.0), (9, 100.5)]
    assert samples_to_within(trace, 100.0) == 9
    assert samples_to_within(trace, 100.0, tol=0.15) == 5
    assert samples_to_within(trace, 50.0) is None
    assert samples_to_within([], 100.0) is None
    assert samples_to_within(trace, math.inf) is None


def test_confuciux_experiment(tmp_path):
    out = tmp_path / "cx"
    res = CliRunner().invoke(cli, ["experiment", "confuciux", "--out", str(out), "--models", "lenet5",
                                    "--objectives", "latency", "--constraints", "area-iot,power-cloud",
                                    "--epochs", "40", "--generations", "10", "--workers", "1"])
    assert res.exit_code == 0, res.output
    for name in ("confuciux.md", "confuciux.csv", "confuciux_traces.json", "confuciux.png"):
        assert (out / name).stat().st_size > 0, name
    rows = _rows(out / "confuciux.csv")
    cases = {(r["deployment"], r["aggregate"], r["resource"], r["platform"]) for r in rows}
    assert len(cases) == 3 * 2  # LS, LP sum, LP max x two budgets
    for case in cases:
        by = {r["method"]: r for r in rows if (r["deployment"], r["aggregate"], r["resource"], r["platform"]) == case}
        assert set(by) == {"exact", "confuciux", "rl", "ga", "random"}
        assert by["exact"]["status"] == "optimal"
        assert by["exact"]["verified"] == "True"
        opt = _num(by["exact"]["value"])
        assert opt is not None and opt > 0
        for m, r in by.items():
            v = _num(r["value"])
            if v is not None:
                assert v >= opt * (1 - 1e-9), (case, m, v, opt)
        assert by["confuciux"]["verified"] in ("True", "")
    doc = json.loads((out / "confuciux_traces.json").read_text())
    assert len(doc["cases"]) == len(cases)
    md = (out / "confuciux.md").read_text()
    assert "proven optimum" in md and "issue" not in md.lower()


def test_digamma_experiment(tmp_path):
    out = tmp_path / "dg"
    res = CliRunner().invoke(cli, ["experiment", "digamma", "--out", str(out), "--models", "lenet5",
                                    "--platforms", "edge", "--samples", "40", "--mapping-samples", "20",
                                    "--workers", "1", "--entry-time-limit", "20"])
    assert res.exit_code == 0, res.output
    for name in ("digamma.md", "digamma.csv", "digamma.json", "digamma.png"):
        assert (out / name).stat().st_size > 0, name
    rows = {r["method"]: r for r in _rows(out / "digamma.csv")}
    assert set(rows) == {"exact", "digamma", "mapping-opt-buffer", "mapping-opt-medium", "mapping-opt-compute",
                         "hw-opt-dla", "hw-opt-shi", "hw-opt-eye"}
    assert rows["exact"]["status"] == "optimal"
    opt = _num(rows["exact"]["latency"])
    assert opt is not None and opt > 0
    for m, r in rows.items():
        v = _num(r["latency"])
        if v is not None:
            assert r["verified"] == "True", m
            assert v >= opt * (1 - 1e-6), (m, v, opt)
            assert float(r["area_mm2"]) <= 0.2 * (1 + 1e-9)
    assert "Fig. 6.7" in (out / "digamma.md").read_text()
