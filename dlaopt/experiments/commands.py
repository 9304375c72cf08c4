"""Click commands of ``dlaopt experiment`` (registered lazily in :data:`dlaopt.cli.EXPERIMENTS`)."""

from __future__ import annotations

import json
import sys

import click


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@click.command("thesis-sweep")
@click.option("--out", "out_dir", default="results/thesis-sweep", show_default=True, help="Output folder.")
@click.option("--networks", help="Comma-separated subset of: CNN, Lenet5, Lstm, Minerva, Elu, Large-Elu, Resnet, VGG.")
@click.option("--sizes", help="Comma-separated scratchpad sizes in KB (default 32,64,...,2048).")
@click.option("--methods", help="Comma-separated methods (default naive,onsram,greedy,coloring,exact).")
@click.option("--time-limit", type=float, default=60.0, show_default=True, help="Per exact solve, seconds.")
@click.option("--oversize", type=click.Choice(["tile", "cap"]), default="tile", show_default=True,
              help="'cap' reproduces the thesis' accounting (tensors shrunk to the scratchpad size); 'tile' rebuilds "
              "oversized operators into tiles.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def thesis_sweep(out_dir: str, networks: str | None, sizes: str | None, methods: str | None, time_limit: float,
                 oversize: str, as_json: bool) -> None:
    """Seed 000's Chapter 7 sweep: networks x scratchpad sizes on the three-scratchpad SMAUG preset."""
    from dlaopt.errors import InputError
    from dlaopt.experiments.pinning import SWEEP_METHODS, THESIS_NETWORKS, run_thesis_sweep

    nets = _csv(networks)
    for n in nets or []:
        if n not in THESIS_NETWORKS:
            raise InputError(f"unknown thesis network '{n}'", path=("--networks",),
                             expected="one of: " + ", ".join(THESIS_NETWORKS))
    try:
        kbs = [int(s) for s in _csv(sizes) or []] or None
    except ValueError:
        raise InputError(f"sizes must be integers, got '{sizes}'", path=("--sizes",)) from None
    report = run_thesis_sweep(out_dir, networks=nets, sizes_kb=kbs, methods=_csv(methods) or SWEEP_METHODS,
                              time_limit=time_limit, oversize=oversize,
                              progress=None if as_json else (lambda s: click.echo(s, err=True)))
    if as_json:
        json.dump(report.rows, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return
    click.echo(report.table_markdown)
    click.echo(f"rows: {report.csv_path}\ntable: {report.table_path}\nplot: {report.plot_path}")


@click.command("pinning-benchmark")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def pinning_benchmark(as_json: bool) -> None:
    """ResNet-50 (3x256 KB, proven optimum) and BERT-base (12 layers, seq 128, 1 % gap in 60 s): the figures."""
    from dlaopt.experiments.pinning import run_pinning_benchmark

    rows = run_pinning_benchmark(progress=None if as_json else (lambda s: click.echo(s, err=True)))
    if as_json:
        json.dump(rows, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return
    for r in rows:
        click.echo(f"\n{r['benchmark']}")
        for k, v in r.items():
            if k != "benchmark":
                click.echo(f"  {k:>24}: {v}")
