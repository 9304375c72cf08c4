"""The thesis sweep on a small slice: files written, every method verified, exact never worse."""

from __future__ import annotations

import csv

from click.testing import CliRunner

from dlaopt.cli import cli
from dlaopt.experiments.pinning import rows_from_csv, run_thesis_sweep, thesis_table


def test_small_sweep_writes_csv_table_and_plot(tmp_path):
    rep = run_thesis_sweep(tmp_path, networks=["Minerva", "Lenet5"], sizes_kb=[32, 128], time_limit=20)
    assert rep.csv_path.exists() and rep.table_path.exists()
    assert rep.plot_path is not None and rep.plot_path.stat().st_size > 10_000
    rows = list(csv.DictReader(rep.csv_path.open()))
    assert len(rows) == 2 * 2 * 5
    assert all(r["verified"] == "True" for r in rows)
    for net in ("Minerva", "Lenet5"):
        for kb in ("32", "128"):
            group = {r["method"]: float(r["objective"]) for r in rows if r["network"] == net and r["spad_kb"] == kb}
            assert all(group["exact"] <= v + 1e-6 for v in group.values())
            assert float(next(r for r in rows if r["network"] == net and r["spad_kb"] == kb
                              and r["method"] == "naive")["reduction_factor"]) == 0.0
    assert "| Minerva |" in rep.table_markdown and "47.65%" in rep.table_markdown  # thesis figure alongside
    assert thesis_table(rows_from_csv(rep.csv_path)) == rep.table_markdown


def test_sweep_cli(tmp_path):
    res = CliRunner().invoke(cli, ["experiment", "thesis-sweep", "--networks", "Minerva", "--sizes", "64",
                                    "--oversize", "cap", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["experiment", "thesis-sweep", "--networks", "Nope", "--out", str(tmp_path)])
    assert res.exit_code == 2
