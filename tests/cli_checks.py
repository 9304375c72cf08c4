"""What every test of bad input on the command line checks: exit code 2, one located ``error:`` message, no
traceback."""

from __future__ import annotations


def assert_bad_input(code: int, stderr: str, *needles: str) -> None:
    """``code`` is 2 and ``stderr`` is an ``error: ...`` message containing every needle, without a traceback."""
    assert code == 2, stderr
    assert stderr.startswith("error: "), stderr
    for needle in needles:
        assert needle in stderr, (needle, stderr)
    assert "Traceback" not in stderr, stderr
