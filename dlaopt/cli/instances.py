"""``dlaopt show``, ``make``, ``schema`` and ``import``: instance files, their schema and ONNX workloads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from dlaopt.cli.common import (
    console,
    echo_json,
    fmt,
    fmt_bytes,
    fmt_params,
    instance_options,
    kv_table,
    load_instance_file,
    parse_assignments,
    prepare_instance,
)
from dlaopt.errors import InputError
from dlaopt.hardware.model import Accelerator, Platform

if TYPE_CHECKING:
    from dlaopt.io.instance import Instance


def _workload_dict(inst: Instance) -> dict[str, Any]:
    from dlaopt.workload.buffers import BufferSet
    from dlaopt.workload.jobs import InlineJobs, TaskGroup

    w = inst.workload
    if isinstance(w, BufferSet):
        return {"name": w.name, "buffers": len(w.buffers), "steps": max(b.upper for b in w.buffers),
                "bytes": sum(b.size for b in w.buffers), "largest": max(b.size for b in w.buffers)}
    if isinstance(w, TaskGroup):
        return {"task": w.task, "group_size": w.group_size, "seed": w.seed, "batch": w.batch or "network default"}
    if isinstance(w, InlineJobs):
        return {"jobs": len(w.jobs), "tenants": len({j.tenant for j in w.jobs}), "ops": sum(j.ops for j in w.jobs)}
    return w.summary()


def _platform_dict(inst: Instance) -> dict[str, Any]:
    plat = inst.platform
    return {"name": plat.name, "system_bandwidth_gbps": plat.system_bandwidth_bytes_per_s / 1e9,
            "accelerators": [_hardware_dict(a) for a in plat.accelerators]}


def _hardware_dict(acc: Accelerator) -> dict[str, Any]:
    return {
        "name": acc.name,
        "description": acc.description,
        "clock_mhz": acc.clock_hz / 1e6,
        "pe_array": {"axes": [list(a) for a in acc.pe_array.axes], "arrays": acc.pe_array.arrays,
                     "num_pes": acc.pe_array.num_pes,
                     "peak_macs_per_cycle": acc.pe_array.peak_macs_per_cycle, "vector_lanes": acc.pe_array.lanes},
        "dma": {"bandwidth_bytes_per_cycle": acc.dma.bandwidth_bytes_per_cycle,
                "latency_cycles": acc.dma.latency_cycles},
        "memories": [
            {"name": m.name, "kind": m.kind.value, "capacity_bytes": m.capacity_bytes, "instances": m.instances,
             "access": m.access.value, "holds": sorted(r.value for r in m.holds),
             "bandwidth_bytes_per_cycle": m.bandwidth_bytes_per_cycle}
            for m in acc.memories
        ],
        "params": dict(acc.params),
    }


@click.command()
@click.argument("instance", metavar="INSTANCE")
@instance_options
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: file, problem, name, objective, options, workload, hardware, prepared, "
              "infeasible, constraints.")
def show(instance: str, capacity: int | None, alignment: int | None, objective: str | None, as_json: bool) -> None:
    """Show INSTANCE: problem, objective, options, the constraints in force, workload, hardware and the problem's
    prepared data (INSTANCE may be a CSV of buffers with --capacity, as for `dlaopt solve`).

    The instance is prepared as for solving, so an instance the problem cannot use is an error (exit 2).
    """
    from dlaopt.hardware.arena import Arena

    inst = load_instance_file(instance, capacity=capacity, alignment=alignment, objective=objective)
    p = prepare_instance(inst)
    data = {
        "file": inst.source,
        "problem": inst.problem,
        "name": inst.name,
        "objective": inst.objective,
        "options": dict(inst.options),
        "workload": _workload_dict(inst),
        "hardware": (_platform_dict(inst) if isinstance(inst.hardware, Platform)
                     else {"memory": inst.hardware.name, "capacity_bytes": inst.hardware.capacity_bytes,
                           "alignment": inst.hardware.alignment} if isinstance(inst.hardware, Arena)
                     else _hardware_dict(inst.accelerator)),
        "prepared": p.problem.describe(p.data),
        "infeasible": p.problem.infeasibility_reason(p.data),
        "constraints": [c.to_dict() for c in p.problem.declared_constraints(inst)],
    }
    if as_json:
        echo_json(data)
        return
    out = console()
    hw = data["hardware"]
    out.print(kv_table([
        ("instance", f"{inst.name} ({inst.source})"),
        ("problem", f"{inst.problem}: {p.problem.title}"),
        ("objective", inst.objective),
        ("options", fmt_params(data["options"])),
        ("infeasible", data["infeasible"] or "no (not known to be)"),
    ]))
    if data["constraints"]:
        out.print(kv_table([(c["at"], fmt_params({k: v for k, v in c.items() if k not in ("at", "kind", "name")}))
                            for c in data["constraints"]], title="constraints"))
    out.print(kv_table(list(data["workload"].items()), title="workload"))
    if isinstance(inst.hardware, Arena):
        out.print(kv_table([("memory", hw["memory"]), ("capacity", fmt_bytes(hw["capacity_bytes"])),
                            ("alignment", f"{hw['alignment']} B")], title="hardware"))
    elif isinstance(inst.hardware, Platform):
        out.print(kv_table([("name", hw["name"]),
                             ("system bandwidth", f"{fmt(hw['system_bandwidth_gbps'])} GB/s")], title="platform"))
        for sub in hw["accelerators"]:
            _print_accelerator(out, sub)
    else:
        _print_accelerator(out, hw)
    if data["prepared"]:
        out.print(kv_table(list(data["prepared"].items()), title=f"{inst.problem} (prepared)"))
    methods = Table(title="methods", title_justify="left")
    for col in ("method", "kind", "default solver", "description"):
        methods.add_column(col)
    for m in p.problem.methods:
        methods.add_row(m.name, m.kind, m.default_solver or "-", m.description)
    out.print(methods)


def _print_accelerator(out: Any, hw: dict[str, Any]) -> None:
    out.print(kv_table([
        ("name", hw["name"]),
        ("clock", f"{fmt(hw['clock_mhz'])} MHz"),
        ("PE array", (f"{hw['pe_array']['arrays']} arrays of " if hw["pe_array"]["arrays"] > 1 else "")
         + " x ".join(f"{n} {s}" for n, s in hw["pe_array"]["axes"])
         + f" ({fmt(hw['pe_array']['peak_macs_per_cycle'])} MACs/cycle)"),
        ("DMA", f"{fmt(hw['dma']['bandwidth_bytes_per_cycle'])} B/cycle, latency "
                f"{fmt(hw['dma']['latency_cycles'])} cycles"),
    ], title="hardware"))
    table = Table(title="memories", title_justify="left")
    for col in ("name", "kind", "capacity", "instances", "access", "holds"):
        table.add_column(col, justify="right" if col in ("capacity", "instances") else "left")
    for m in hw["memories"]:
        table.add_row(m["name"], m["kind"], fmt_bytes(m["capacity_bytes"]), str(m["instances"]), m["access"],
                      ", ".join(m["holds"]))
    out.print(table)



# ------------------------------------------------------------------------------------------------ make, schema
@click.command()
@click.option("--problem", default="pinning", show_default=True, help="The problem.")
@click.option("--network", required=True, metavar="NAME", help="A zoo network (see `dlaopt zoo`).")
@click.option("--param", "params", multiple=True, callback=parse_assignments, metavar="K=V",
              help="A network parameter (repeatable); V is read as a YAML scalar (3, 0.5, true, text).")
@click.option("--preset", required=True, metavar="P", help="A hardware preset (see `dlaopt presets`).")
@click.option("--hw", "hw_params", multiple=True, callback=parse_assignments, metavar="K=V",
              help="A preset parameter (repeatable), e.g. --hw spad_kb=256.")
@click.option("--objective", default=None, metavar="O", help="The objective (default: the problem's first).")
@click.option("--option", "options", multiple=True, callback=parse_assignments, metavar="K=V",
              help="A problem option (repeatable), e.g. --option oversize=cap.")
@click.option("--name", default=None, help="Instance name (default: derived from network, preset and parameters).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the instance here (JSON for .json, else YAML); default: print YAML to stdout.")
def make(problem: str, network: str, params: dict[str, Any], preset: str, hw_params: dict[str, Any],
         objective: str | None, options: dict[str, Any], name: str | None, output: Path | None) -> None:
    """Write an instance file for a zoo network on a hardware preset (validated before it is written)."""
    import yaml

    from dlaopt.io import make_instance_document, save_document

    doc = make_instance_document(problem, network, params, preset, hw_params, objective=objective,
                                 options=options or None, name=name)
    if output is None:
        click.echo(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120), nl=False)
    else:
        written = save_document(doc, output)
        click.echo(f"instance written to {written}", err=True)


@click.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the schema here instead of printing it.")
def schema(output: Path | None) -> None:
    """The JSON Schema (Draft 2020-12) of instance files."""
    from dlaopt.io import write_schema
    from dlaopt.io.schema import schema_text

    if output is None:
        click.echo(schema_text(), nl=False)
        return
    try:
        written = write_schema(output)
    except OSError as exc:
        raise InputError(f"cannot write the file: {exc.strerror or exc}", file=str(output)) from None
    click.echo(f"schema written to {written}", err=True)


# ------------------------------------------------------------------------------------------------ import
@click.command("import")
@click.argument("model", metavar="MODEL.onnx")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the workload here (YAML); default: print it to stdout.")
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="Sets the first dimension of every graph input.")
@click.option("--dim", "dims", multiple=True, callback=parse_assignments, metavar="NAME=VALUE",
              help="The size of a symbolic input dimension (repeatable), e.g. --dim seq=128.")
@click.option("--name", default=None, help="Workload name (default: the model file's stem).")
@click.option("--dtype-bytes", type=click.IntRange(min=1), default=None,
              help="Bytes per element (default: the size of the model's floating-point type).")
def import_(model: str, output: Path | None, batch: int | None, dims: dict[str, Any], name: str | None,
            dtype_bytes: int | None) -> None:
    """Import the ONNX model MODEL.onnx as an inline workload (YAML) for instance files.

    Paste the result under `workload:` in an instance, or let the instance read the model itself:
    `workload: {onnx: MODEL.onnx, batch: 1, dims: {seq: 128}}`. A summary (operators, MACs, parameters) goes to
    stderr. An unsupported operator or an unresolved dimension is bad input (exit 2), naming the node or the
    dimension.
    """
    from dlaopt.io.onnx import dump_workload_yaml, import_onnx, workload_document
    from dlaopt.workload.tensor import TensorRole

    for key, value in dims.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise click.BadParameter(f"{key}={value!r}: the size must be a positive integer", param_hint="--dim")
    try:
        wl = import_onnx(model, batch=batch, dims=dims, name=name, dtype_bytes=dtype_bytes)
    except InputError as exc:  # no instance keys here: name the model file only
        raise InputError(exc.message, file=exc.file or model, expected=exc.expected) from None
    params = sum(t.numel for t in wl.tensors_with_role(TensorRole.WEIGHT))
    settings = [f"--batch {batch}"] if batch is not None else []
    settings += [f"--dim {k}={v}" for k, v in dims.items()]
    summary = f"{wl.name}: {len(wl.operators):,} operators, {wl.total_macs:,} MACs, {params:,} parameters"
    comment = f"dlaopt import {' '.join([Path(model).name, *settings])}\n{summary}"
    text = dump_workload_yaml(workload_document(wl), comment=comment)
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write the file: {exc.strerror or exc}", file=str(output)) from None
        summary += f"; written to {output}"
    click.echo(summary, err=True)




COMMANDS = [show, make, schema, import_]
