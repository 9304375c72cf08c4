"""What the experiment commands share: their scale (quick or the seed's, with overrides) and how they write their
reports (CSV, Markdown, JSON details, a figure)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlaopt.errors import InputError
from dlaopt.results import csv_text


@dataclass
class ExperimentReport:
    """What an experiment command wrote: its rows, the files, the Markdown table and a summary."""

    rows: list[dict[str, Any]]
    csv_path: Path
    markdown_path: Path
    plot_path: Path | None
    table: str
    summary: dict[str, Any]


def experiment_scale(quick: Mapping[str, int], full: Mapping[str, int], use_full: bool,
                     **overrides: int | None) -> dict[str, int]:
    """``full`` or ``quick``, with every override that is not ``None`` in place (each a positive integer, else a
    located error naming its command-line option)."""
    scale = dict(full if use_full else quick)
    for key, value in overrides.items():
        if value is None:
            continue
        if value < 1:
            raise InputError(f"{key.replace('_', ' ')} must be positive, got {value}",
                             path=(f"--{key.replace('_', '-')}",), expected="an integer >= 1")
        scale[key] = value
    return scale


def check_positive(**options: float | None) -> None:
    """Every option given (not ``None``) must be positive; else a located error naming its command-line option
    (``total_time_limit`` is ``--total-time-limit``)."""
    for key, value in options.items():
        if value is not None and not value > 0:
            option = f"--{key.replace('_', '-')}"
            raise InputError(f"{option} must be positive, got {value}", path=(option,), expected="a number > 0")


def output_folder(out_dir: str | Path, log_name: str) -> tuple[Path, Path]:
    """The output folder (created) and its log of finished rows ``log_name`` (emptied: a new run starts it)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / log_name
    log.unlink(missing_ok=True)
    return out, log


def check_choices(values: Sequence[Any], allowed: Sequence[Any], option: str, what: str,
                  expected: str | None = None, show: Callable[[Any], str] = str) -> None:
    """Every value of command-line ``option`` must be one of ``allowed``; else a located error naming it."""
    for v in values:
        if v not in allowed:
            raise InputError(f"unknown {what} '{show(v)}'", path=(option,),
                             expected=expected or "one of: " + ", ".join(show(a) for a in allowed))


def write_report(out: Path, stem: str, rows: Sequence[Mapping[str, Any]], fields: Sequence[str], markdown: str,
                 details: tuple[str, Any], figure: Callable[[], Any] | None) -> tuple[Path, Path, Path | None]:
    """``<stem>.csv`` (the rows, ``fields`` as columns), ``<stem>.md``, the JSON ``details`` (a file name and its
    content) and, when ``figure`` builds one, ``<stem>.png``; returns the CSV, Markdown and figure paths."""
    csv_path = out / f"{stem}.csv"
    csv_path.write_text(csv_text(rows, fields), encoding="utf-8")
    name, content = details
    (out / name).write_text(json.dumps(content, indent=1, default=str), encoding="utf-8")
    md_path = out / f"{stem}.md"
    md_path.write_text(markdown, encoding="utf-8")
    plot_path = None
    if figure is not None:
        from dlaopt.plots import save

        plot_path = out / f"{stem}.png"
        save(figure(), plot_path)
    return csv_path, md_path, plot_path
