"""Running ``dlaopt`` in a subprocess as a user would, and what every command-line test checks: a solution that
verifies on its own, and bad input that exits 2 with one located ``error:`` message and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlaopt.cli import cli
from dlaopt.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def run_dlaopt(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m dlaopt ARGS`` in a subprocess (from the repository root by default), without debug tracebacks and
    with a non-interactive plotting backend."""
    env = {k: v for k, v in os.environ.items() if k != "DLAOPT_DEBUG"}
    env["MPLBACKEND"] = "Agg"
    return subprocess.run([sys.executable, "-m", "dlaopt", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or ROOT, env=env)


def solve_and_verify(instance: Path, solution: Path, *options: str) -> None:
    """``dlaopt solve INSTANCE OPTIONS -o SOLUTION`` succeeds and ``dlaopt verify`` accepts the file it wrote."""
    run = run_dlaopt("solve", instance, *options, "-o", solution)
    assert run.returncode == 0, run.stderr
    check = run_dlaopt("verify", instance, solution)
    assert check.returncode == 0, check.stderr


def assert_bad_input(code: int, stderr: str, *needles: str) -> None:
    """``code`` is 2 and ``stderr`` is an ``error: ...`` message containing every needle, without a traceback."""
    assert code == 2, stderr
    assert stderr.startswith("error: "), stderr
    for needle in needles:
        assert needle in stderr, (needle, stderr)
    assert "Traceback" not in stderr, stderr


def assert_rejected_file(load: Callable[[Path], object], path: Path, where: str, command: str, out: Path) -> None:
    """A bad input file (a suite, a sweep): ``load`` raises an :class:`InputError` naming the file and ``where``,
    and ``dlaopt COMMAND PATH --out OUT`` exits as :func:`assert_bad_input` says without running anything."""
    with pytest.raises(InputError) as info:
        load(path)
    message = info.value.render()
    assert path.name in message and where in message, message
    result = CliRunner().invoke(cli, [command, str(path), "--out", str(out)])
    assert_bad_input(result.exit_code, result.stderr, where)
    assert not out.exists()  # nothing ran
