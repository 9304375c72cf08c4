"""Buffer lists as CSV, the interchange format of the static memory-allocation literature (MiniMalloc's benchmark
files, TelaMalloc's traces): a header line ``id,lower,upper,size`` (or ``buffer,start,end,size``), then one buffer
per line::

    id,lower,upper,size
    conv1.out,0,2,4096
    conv2.out,1,3,8192

A buffer is alive during the steps ``[lower, upper)`` (``upper``/``end`` is exclusive) and has ``size`` bytes. Two
optional columns: ``alignment`` (its offset must be a multiple of it; a blank cell or no column: the memory's
alignment) and ``offset`` (a placement: ignored when the file is read as buffers, read as the solution by
:func:`read_buffer_table`). Column names are case-insensitive, cells may be padded with spaces, blank lines are
skipped, ids may be quoted (``"a,b"``).

Reading is bounded like every input file (:func:`dlaopt.io.document.read_bytes`: at most ``DLAOPT_MAX_FILE_MB``, at
most :data:`MAX_BUFFERS` buffers, every number at most :data:`~dlaopt.io.document.MAX_NUMBER` and the sizes together
too), and every bad line is an :class:`~dlaopt.errors.InputError` naming the file, the line, the column and what is
expected. :func:`write_buffers_csv` writes the same format with an ``offset`` column.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dlaopt.errors import InputError
from dlaopt.io.document import MAX_NUMBER, MAX_NUMBER_TEXT, MAX_STRING_CHARS, read_bytes
from dlaopt.workload.buffers import AllocBuffer, BufferSet

MAX_BUFFERS = 100_000
"""The most buffers a file may hold (production allocation problems have hundreds to a few thousands)."""

COLUMN_SPELLINGS: dict[str, tuple[str, ...]] = {
    "id": ("id", "buffer"),
    "lower": ("lower", "start"),
    "upper": ("upper", "end"),
    "size": ("size",),
    "alignment": ("alignment",),
    "offset": ("offset",),
}
"""Each column's accepted names (the first is the canonical one)."""
REQUIRED_COLUMNS: tuple[str, ...] = ("id", "lower", "upper", "size")
EXPECTED_HEADER = "a header id,lower,upper,size (or buffer,start,end,size), optionally with alignment and offset"

_NAME_OF = {spelling: column for column, spellings in COLUMN_SPELLINGS.items() for spelling in spellings}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_CONTENT_LINE = re.compile(r"^[ \t]*[^\s,]", re.MULTILINE)  # a line that is not blank (nor only commas)
_MAX_DIGITS = 30  # longer integer literals are not converted at all


@dataclass(frozen=True)
class BufferTable:
    """A buffer CSV as read: the buffers, the offsets its ``offset`` column gives (by id; only the non-blank cells)
    and the column names as the header spells them (canonical column -> spelling, in the canonical order)."""

    buffers: BufferSet
    offsets: dict[str, int] = field(default_factory=dict)
    spelling: dict[str, str] = field(default_factory=dict)

    @property
    def has_offsets(self) -> bool:
        """Every buffer has an offset (the file is a complete placement)."""
        return bool(self.buffers.buffers) and len(self.offsets) == len(self.buffers.buffers)


# ================================================================================================ reading
def read_buffers_csv(path: str | Path, *, alignment: int = 1, name: str | None = None) -> BufferSet:
    """The buffers of the CSV file ``path`` (buffers without an alignment get ``alignment``; ``name``: the set's
    name, default the file's stem). Every bad input is an :class:`InputError` naming the file and the line."""
    return read_buffer_table(path, alignment=alignment, name=name).buffers


def read_buffer_table(path: str | Path, *, alignment: int = 1, name: str | None = None) -> BufferTable:
    """:func:`read_buffers_csv` with the file's offsets and header spelling."""
    data = read_bytes(path, expected="a CSV file of buffers")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"line {line}: not UTF-8 text (undecodable byte at offset {exc.start})", file=str(path),
                         expected="a CSV file of buffers") from None
    return parse_buffers_csv(text, file=str(path), alignment=alignment,
                             name=name if name is not None else Path(path).stem or "buffers")


def parse_buffers_csv(text: str, *, file: str | None = None, alignment: int = 1,
                      name: str = "buffers") -> BufferTable:
    """Parse the text of a buffer CSV (see the module docstring); errors name ``file`` and the line."""
    if not isinstance(alignment, int) or isinstance(alignment, bool) or not 1 <= alignment <= MAX_NUMBER:
        raise InputError(f"the default alignment {alignment!r} is not a positive integer of at most "
                         f"{MAX_NUMBER_TEXT}")
    text = text.removeprefix("\ufeff")
    nul = text.find("\x00")
    if nul >= 0:
        raise InputError(f"line {text.count(chr(10), 0, nul) + 1}: a NUL character (not a text file)", file=file,
                         expected="a CSV file of buffers")
    if len(_CONTENT_LINE.findall(text)) > MAX_BUFFERS + 1:  # refused before any line is parsed
        raise InputError(f"the file has more than {MAX_BUFFERS:,} lines of buffers", file=file,
                         expected=f"at most {MAX_BUFFERS:,} buffers in one file")
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True, strict=True)
    header: list[str] | None = None
    columns: dict[str, int] = {}
    spelling: dict[str, str] = {}
    buffers: list[AllocBuffer] = []
    offsets: dict[str, int] = {}
    first_line: dict[str, int] = {}
    total = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(f"line {reader.line_num}: not valid CSV ({exc})", file=file,
                             expected="comma-separated values, one buffer per line") from None
        line = reader.line_num
        cells = [c.strip() for c in row]
        if not any(cells):
            continue
        if header is None:
            header, columns, spelling = _read_header(cells, line, file)
            continue
        if len(buffers) >= MAX_BUFFERS:
            raise InputError(f"line {line}: more than {MAX_BUFFERS:,} buffers", file=file,
                             expected=f"at most {MAX_BUFFERS:,} buffers in one file")
        if len(cells) != len(header):
            raise InputError(f"line {line} has {len(cells)} value(s), the header has {len(header)} column(s) "
                             f"({','.join(header)})", file=file, expected="one value per column on every line")
        buffer, offset = _read_row(cells, line, columns, spelling, alignment, file)
        if buffer.id in first_line:
            raise InputError(f"line {line}, column '{spelling['id']}': buffer id '{buffer.id}' is already used on "
                             f"line {first_line[buffer.id]}", file=file, expected="a different id on every line")
        first_line[buffer.id] = line
        total += buffer.size
        if total > MAX_NUMBER:
            raise InputError(f"line {line}: the buffers up to this line have {total:,} bytes in all, too many for "
                             "a model", file=file, expected=f"at most {MAX_NUMBER_TEXT} bytes in all")
        buffers.append(buffer)
        if offset is not None:
            offsets[buffer.id] = offset
    if header is None:
        raise InputError("the file is empty (no header, no buffers)", file=file, expected=EXPECTED_HEADER)
    if not buffers:
        raise InputError("the file has a header but no buffers", file=file,
                         expected="one buffer per line after the header")
    return BufferTable(BufferSet(tuple(buffers), name or "buffers"), offsets, spelling)


def _read_header(cells: list[str], line: int, file: str | None) -> tuple[list[str], dict[str, int], dict[str, str]]:
    columns: dict[str, int] = {}
    spelling: dict[str, str] = {}
    for j, cell in enumerate(cells):
        key = cell.lower()
        column = _NAME_OF.get(key)
        if column is None:
            if _INTEGER.fullmatch(cell):
                raise InputError(f"line {line}: the first line is not a header ({cell!r} is a number, not a "
                                 "column name)", file=file, expected=EXPECTED_HEADER)
            close = difflib.get_close_matches(key, list(_NAME_OF), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            shown = cell if len(cell) <= 40 else cell[:40] + "..."
            raise InputError(f"line {line}: unknown column {shown!r}{hint}", file=file,
                             expected="columns " + ", ".join("/".join(s) for s in COLUMN_SPELLINGS.values()))
        if column in columns:
            raise InputError(f"line {line}: columns '{spelling[column]}' and '{cell}' both give the buffer's "
                             f"{column}", file=file, expected="each column once")
        columns[column] = j
        spelling[column] = cell
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        names = ", ".join("/".join(COLUMN_SPELLINGS[c]) for c in missing)
        raise InputError(f"line {line}: the header has no column '{names}'", file=file, expected=EXPECTED_HEADER)
    order = {c: spelling[c] for c in COLUMN_SPELLINGS if c in spelling}
    return cells, columns, order


def _read_row(cells: list[str], line: int, columns: Mapping[str, int], spelling: Mapping[str, str],
              default_alignment: int, file: str | None) -> tuple[AllocBuffer, int | None]:
    def where(column: str) -> str:
        return f"line {line}, column '{spelling[column]}'"

    ident = cells[columns["id"]]
    if not ident:
        raise InputError(f"{where('id')}: the buffer id is empty", file=file, expected="a non-empty id")
    if len(ident) > MAX_STRING_CHARS:
        raise InputError(f"{where('id')}: the id has {len(ident):,} characters", file=file,
                         expected=f"at most {MAX_STRING_CHARS} characters")
    lower = _integer(cells[columns["lower"]], where("lower"), file, minimum=0)
    upper = _integer(cells[columns["upper"]], where("upper"), file, minimum=1)
    size = _integer(cells[columns["size"]], where("size"), file, minimum=1)
    if upper <= lower:
        raise InputError(f"{where('upper')}: buffer '{ident}' lives during [{lower}, {upper}), which is empty "
                         f"({spelling['upper']} is exclusive)", file=file,
                         expected=f"{spelling['upper']} greater than {spelling['lower']}")
    alignment = default_alignment
    if "alignment" in columns and cells[columns["alignment"]]:
        alignment = _integer(cells[columns["alignment"]], where("alignment"), file, minimum=1)
    offset = None
    if "offset" in columns and cells[columns["offset"]]:
        offset = _integer(cells[columns["offset"]], where("offset"), file, minimum=0)
    return AllocBuffer(ident, lower, upper, size, alignment), offset


def _integer(cell: str, where: str, file: str | None, *, minimum: int) -> int:
    kind = "a non-negative integer" if minimum == 0 else "a positive integer"
    expected = f"{kind} of at most {MAX_NUMBER_TEXT}"
    if not cell:
        raise InputError(f"{where}: the value is missing", file=file, expected=expected)
    if not _INTEGER.fullmatch(cell):
        shown = cell if len(cell) <= 40 else cell[:40] + "..."
        raise InputError(f"{where}: {shown!r} is not an integer", file=file, expected=expected)
    digits = len(cell.lstrip("+-"))
    value = int(cell) if digits <= _MAX_DIGITS else None
    if value is None or value > MAX_NUMBER:
        shown = cell if len(cell) <= 40 else cell[:20] + f"... ({digits} digits)"
        raise InputError(f"{where}: {shown} is too large", file=file, expected=expected)
    if value < minimum:
        what = "negative" if value < 0 else "zero"
        raise InputError(f"{where}: {value} is {what}", file=file, expected=expected)
    return value


def read_header_spelling(path: str | Path) -> dict[str, str]:
    """The column names of the buffer CSV ``path`` as its header spells them (canonical column -> spelling), to
    write a placement back in the reader's own words; ``{}`` when the file has no readable header."""
    try:
        text = read_bytes(path, expected="a CSV file of buffers").decode("utf-8-sig")
        for row in csv.reader(io.StringIO(text, newline=""), skipinitialspace=True, strict=True):
            cells = [c.strip() for c in row]
            if any(cells):
                return _read_header(cells, 1, str(path))[2]
    except (InputError, UnicodeDecodeError, csv.Error):
        pass
    return {}


# ================================================================================================ writing
def buffers_csv_text(buffers: BufferSet | Sequence[AllocBuffer], offsets: Mapping[str, int] | None = None, *,
                     spelling: Mapping[str, str] | None = None) -> str:
    """The CSV text of ``buffers`` with an ``offset`` column when ``offsets`` is given (a blank cell for a buffer
    it does not place). An ``alignment`` column is written when some buffer's alignment is not 1. ``spelling``:
    the column names to use (e.g. ``{"id": "buffer", "lower": "start", "upper": "end"}``), default the canonical
    ones."""
    items = buffers.buffers if isinstance(buffers, BufferSet) else tuple(buffers)
    names = {c: spellings[0] for c, spellings in COLUMN_SPELLINGS.items()}
    names.update({c: s for c, s in (spelling or {}).items() if c in names})
    columns = list(REQUIRED_COLUMNS)
    if any(b.alignment != 1 for b in items):
        columns.append("alignment")
    if offsets is not None:
        columns.append("offset")
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([names[c] for c in columns])
    for b in items:
        row: list[str | int] = [b.id, b.lower, b.upper, b.size]
        if "alignment" in columns:
            row.append(b.alignment)
        if offsets is not None:
            offset = offsets.get(b.id)
            row.append("" if offset is None else int(offset))
        writer.writerow(row)
    return out.getvalue()


def write_buffers_csv(path: str | Path, buffers: BufferSet | Sequence[AllocBuffer],
                      offsets: Mapping[str, int] | None = None, *,
                      spelling: Mapping[str, str] | None = None) -> Path:
    """Write :func:`buffers_csv_text` to ``path`` (creating parent directories); returns the path."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(buffers_csv_text(buffers, offsets, spelling=spelling), encoding="utf-8", newline="")
    except OSError as exc:
        raise InputError(f"cannot write the file: {exc.strerror or exc}", file=str(path)) from None
    return p


__all__ = [
    "COLUMN_SPELLINGS",
    "MAX_BUFFERS",
    "BufferTable",
    "buffers_csv_text",
    "parse_buffers_csv",
    "read_buffer_table",
    "read_buffers_csv",
    "read_header_spelling",
    "write_buffers_csv",
]
