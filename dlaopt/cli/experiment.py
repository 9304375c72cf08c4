"""``dlaopt experiment``: reproducible experiments, each imported only when it runs."""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from dlaopt.cli.common import (
    echo_json,
)

# ================================================================================================ experiments
# Subcommands of `dlaopt experiment`, imported only when that group is used. Adding one is one line here, so the
# two planned subcommands are a two-line change:
#     "thesis-sweep": "dlaopt.experiments:thesis_sweep",
#     "pinning-benchmark": "dlaopt.experiments:pinning_benchmark",
# The target may be a click command (used as it is) or a plain function, which `command_from_function` turns into
# a command: one --option per parameter (--snake-case; bool -> --flag/--no-flag; list/tuple -> repeatable option;
# Literal[...] of strings -> a choice; no default -> required), the docstring as help, and a non-None return value
# printed to stdout (JSON for mappings and lists). Decorating a function with `@experiment.command("name")` below
# the group works as well, for commands whose options cannot be derived from a signature.
EXPERIMENTS: dict[str, str] = {
    "thesis-sweep": "dlaopt.experiments.commands:thesis_sweep",
    "pinning-benchmark": "dlaopt.experiments.commands:pinning_benchmark",
    "mapping-benchmark": "dlaopt.experiments.commands:mapping_benchmark",
    "zigzag-compare": "dlaopt.experiments.commands:zigzag_compare",
    "deepopt-reproduce": "dlaopt.experiments.commands:deepopt_reproduce",
    "deepopt-benchmark": "dlaopt.experiments.commands:deepopt_benchmark",
    "magma-benchmark": "dlaopt.experiments.commands:magma_benchmark",
    "compile-benchmark": "dlaopt.experiments.commands:compile_benchmark",
    "bankmap-benchmark": "dlaopt.experiments.commands:bankmap_benchmark",
    "flexion": "dlaopt.experiments.commands:flexion",
    "confuciux": "dlaopt.experiments.commands:confuciux",
    "digamma": "dlaopt.experiments.commands:digamma",
    "flat": "dlaopt.experiments.commands:flat",
    "fusion": "dlaopt.experiments.commands:fusion",
    "polyacc": "dlaopt.experiments.commands:polyacc",
    "scale-benchmark": "dlaopt.experiments.commands:scale_benchmark",
    "allocation-benchmark": "dlaopt.experiments.commands:allocation_benchmark",
    "gamma": "dlaopt.experiments.commands:gamma",
    "mapper-study": "dlaopt.experiments.commands:mapper_study",
}


class LazyGroup(click.Group):
    """A group whose subcommands (``name -> "module:attr"``) are imported on first use."""

    def __init__(self, *args: Any, lazy_subcommands: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = lazy_subcommands if lazy_subcommands is not None else {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_subcommands:
            return self._load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command:
        module_name, _, attr = self.lazy_subcommands[cmd_name].partition(":")
        target = getattr(importlib.import_module(module_name), attr)
        if isinstance(target, click.Command):
            return target
        return command_from_function(target, cmd_name)


_SCALARS: dict[type, click.ParamType] = {int: click.INT, float: click.FLOAT, str: click.STRING,
                                         Path: click.Path(path_type=Path)}


def command_from_function(func: Callable[..., Any], name: str | None = None) -> click.Command:
    """A click command calling ``func`` with one option per parameter (see the comment above ``EXPERIMENTS``)."""
    hints = typing.get_type_hints(func)
    params: list[click.Parameter] = []
    as_list: set[str] = set()  # parameters annotated as lists (click passes tuples)
    for par in inspect.signature(func).parameters.values():
        if par.kind in (par.VAR_POSITIONAL, par.VAR_KEYWORD):
            continue
        flag = "--" + par.name.replace("_", "-")
        required = par.default is inspect.Parameter.empty
        extra: dict[str, Any] = {"required": True} if required else {"default": par.default, "show_default": True}
        hint = hints.get(par.name, str if required or par.default is None else type(par.default))
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
            hint = args[0]  # X | None
        origin = typing.get_origin(hint)
        if origin is typing.Literal and all(isinstance(a, str) for a in typing.get_args(hint)):
            params.append(click.Option([flag, par.name], type=click.Choice(list(typing.get_args(hint))), **extra))
        elif hint is bool:
            extra.pop("required", None)
            params.append(click.Option([f"{flag}/--no-{par.name.replace('_', '-')}", par.name],
                                       default=bool(extra.pop("default", False)), **extra))
        elif origin in (list, tuple, Sequence, set, frozenset):
            item = (typing.get_args(hint) or (str,))[0]
            if origin is list:
                as_list.add(par.name)
            if "default" in extra:
                extra["default"] = tuple(extra["default"] or ())
            params.append(click.Option([flag, par.name], multiple=True, type=_SCALARS.get(item, click.STRING),
                                       **extra))
        else:
            params.append(click.Option([flag, par.name], type=_SCALARS.get(hint, click.STRING), **extra))

    def callback(**kwargs: Any) -> None:
        for key in as_list & set(kwargs):
            kwargs[key] = list(kwargs[key])
        value = func(**kwargs)
        if value is None:
            return
        if isinstance(value, (Mapping, list, tuple)):
            echo_json(value)
        else:
            click.echo(str(value))

    doc = inspect.getdoc(func) or ""
    return click.Command(name or func.__name__.strip("_").replace("_", "-"), callback=callback, params=params,
                         help=doc, short_help=doc.splitlines()[0] if doc else None)


@click.group(cls=LazyGroup, lazy_subcommands=EXPERIMENTS)
def experiment() -> None:
    """Reproducible experiments (sweeps and benchmarks over instances and methods)."""



COMMANDS = [experiment]
