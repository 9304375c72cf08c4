"""``dlaopt zoo``, ``presets`` and ``solvers``: what is built in and what this machine can solve with."""

from __future__ import annotations

import click
from rich.table import Table

from dlaopt.cli.common import (
    console,
    echo_json,
    fmt,
    fmt_bytes,
    fmt_params,
)


# ------------------------------------------------------------------------------------------------ catalogues
@click.command()
@click.option("--json", "as_json", is_flag=True,
              help="Print a list of objects: name, description, params (defaults), operators, tensors, macs, "
                   "weight_bytes, activation_bytes.")
def zoo(as_json: bool) -> None:
    """The built-in networks, with their default parameters and size at those defaults."""
    from dlaopt.zoo import ZOO

    rows = []
    for entry in ZOO.entries():
        summary = ZOO.create(entry.name).summary()
        rows.append({"name": entry.name, "description": entry.description, "params": entry.defaults,
                     **{k: v for k, v in summary.items() if k != "name"}})
    if as_json:
        echo_json(rows)
        return
    table = Table(title="network zoo (sizes at the default parameters)", title_justify="left")
    for col, justify in (("network", "left"), ("operators", "right"), ("MACs", "right"), ("weights", "right"),
                         ("parameters (defaults)", "left"), ("description", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(r["name"], fmt(r["operators"]), fmt(r["macs"]), fmt_bytes(r["weight_bytes"], exact=False),
                      fmt_params(r["params"]), r["description"])
    console().print(table)


@click.command()
@click.option("--json", "as_json", is_flag=True,
              help="Print a list of objects: name, description, params (defaults), memories at the defaults.")
def presets(as_json: bool) -> None:
    """The built-in hardware presets, with their parameters (defaults) and memories at those defaults."""
    from dlaopt.hardware.presets import PRESETS

    rows = []
    for entry in PRESETS.entries():
        acc = PRESETS.create(entry.name)
        rows.append({"name": entry.name, "description": entry.description, "params": entry.defaults,
                     "memories": [{"name": m.name, "kind": m.kind.value, "capacity_bytes": m.capacity_bytes}
                                  for m in acc.memories]})
    if as_json:
        echo_json(rows)
        return
    table = Table(title="hardware presets", title_justify="left")
    for col in ("preset", "parameters (defaults)", "memories", "description"):
        table.add_column(col)
    for r in rows:
        mems = ", ".join(f"{m['name']} {fmt_bytes(m['capacity_bytes'])}" for m in r["memories"])
        table.add_row(r["name"], fmt_params(r["params"]), mems, r["description"])
    console().print(table)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of solver strings.")
def solvers(as_json: bool) -> None:
    """The solver strings usable with --solver (highs, cpsat and every Pyomo solver found on this machine)."""
    from dlaopt.solvers.backends import available_solvers

    names = available_solvers()
    if as_json:
        echo_json(names)
        return
    for name in names:
        click.echo(name)




COMMANDS = [zoo, presets, solvers]
