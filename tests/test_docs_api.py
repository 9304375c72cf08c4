"""The library API guide's examples run: every ```python block of docs/api.md, in order, in one namespace, from the
repository root (as the page says); and the README's "Library API" example too. Tracebacks point at the lines of the
Markdown file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
API_PAGE = ROOT / "docs" / "api.md"
README = ROOT / "README.md"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number of the block's first line, code) of every ```python block, in order."""
    return [(text.count("\n", 0, m.start(1)), m.group(1)) for m in FENCE.finditer(text)]


def run_blocks(path: Path, blocks: list[tuple[int, str]]) -> dict[str, object]:
    scope: dict[str, object] = {"__name__": "__main__"}
    for line, code in blocks:
        # pad with newlines so that line numbers in tracebacks are the Markdown file's
        exec(compile("\n" * line + code, str(path), "exec"), scope)  # noqa: S102
    return scope


def readme_library_api(text: str) -> tuple[int, int]:
    """The character span of the README's "## Library API" section."""
    start = text.index("\n## Library API\n")
    end = text.find("\n## ", start + 1)
    return start, end if end >= 0 else len(text)


def test_the_page_links_and_blocks():
    blocks = python_blocks(API_PAGE.read_text())
    assert len(blocks) >= 15
    text = README.read_text()
    start, end = readme_library_api(text)
    assert "(docs/api.md)" in text[start:end]


def test_api_page_examples_run(monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(ROOT)
    scope = run_blocks(API_PAGE, python_blocks(API_PAGE.read_text()))
    assert "res" in scope and "report" in scope
    assert capsys.readouterr().out.strip()


def test_readme_library_api_example_runs(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    text = README.read_text()
    start, end = readme_library_api(text)
    first, last = text.count("\n", 0, start), text.count("\n", 0, end)
    blocks = [(line, code) for line, code in python_blocks(text) if first <= line < last]
    assert len(blocks) == 1
    run_blocks(README, blocks)
    assert capsys.readouterr().out.strip()
