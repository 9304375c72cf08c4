"""Error types shared by the whole package.

``InputError`` is the one exception that means "the user gave us bad input": the CLI turns it into a one-paragraph
message on stderr and exit code 2, never a traceback. Everything else that escapes is an internal error (exit 1).
"""

from __future__ import annotations

from collections.abc import Sequence


def format_key_path(path: Sequence[str | int]) -> str:
    """Render a key path like ``workload.operators[3].inputs`` from its parts."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


class DlaoptError(Exception):
    """Base class of every error raised on purpose by dlaopt."""


class InputError(DlaoptError):
    """Bad user input: which file, which key, what was wrong, what is expected."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        path: Sequence[str | int] = (),
        expected: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.path = tuple(path)
        self.expected = expected
        super().__init__(self.render())

    def render(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.path:
            where.append(f"key '{format_key_path(self.path)}'")
        text = (": ".join([", ".join(where), self.message]) if where else self.message)
        if self.expected:
            text += f" (expected {self.expected})"
        return text

    def located(self, *, file: str | None = None, prefix: Sequence[str | int] = ()) -> InputError:
        """The same error with a file name and/or a key-path prefix added."""
        return InputError(
            self.message,
            file=self.file or file,
            path=tuple(prefix) + self.path,
            expected=self.expected,
        )


class InfeasibleInstanceError(DlaoptError):
    """An instance that provably has no solution, with the reason (e.g. a tensor larger than every scratchpad)."""
