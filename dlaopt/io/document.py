"""The one guarded path from a file to a plain document (instances, solutions, suites, sweeps).

Every input file is read and parsed here, within stated limits, so that a hostile or broken file is bad input (an
:class:`~dlaopt.errors.InputError` naming the file, the key or line, and the limit) rather than a hang, a memory
blow-up or a crash:

* the file is at most :data:`MAX_FILE_BYTES` (``DLAOPT_MAX_FILE_MB`` raises it); at most that many bytes (plus one)
  are ever read;
* YAML aliases may expand to at most :data:`MAX_NODES` values in all (the "billion laughs" shape is refused while
  composing, before anything is expanded), and an alias may not refer to the collection it is in;
* nesting is at most :data:`MAX_DEPTH` levels (JSON is scanned before it is parsed, YAML checked while composing);
* mapping keys are unique (JSON and YAML) and strings; keys and strings are at most :data:`MAX_STRING_CHARS`
  characters and valid Unicode;
* every number is finite (no ``NaN``/``Infinity``, ``.nan``/``.inf``) and at most :data:`MAX_NUMBER` in magnitude.

:func:`check_document` applies the value limits to a document that did not come from a file (one built in code or
merged from several files).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from dlaopt.errors import InputError

# ------------------------------------------------------------------------------------------------ the limits
MAX_FILE_ENV = "DLAOPT_MAX_FILE_MB"
DEFAULT_MAX_FILE_MB = 8
MAX_FILE_BYTES = DEFAULT_MAX_FILE_MB * 1024 * 1024  # default; DLAOPT_MAX_FILE_MB overrides (see max_file_bytes)
MAX_ONNX_ENV = "DLAOPT_MAX_ONNX_MB"
MAX_ONNX_BYTES = 1024 * 1024 * 1024  # 1 GiB; DLAOPT_MAX_ONNX_MB overrides (protobuf itself stops at 2 GiB)
MAX_DEPTH = 40  # nesting levels (real instances use fewer than 10)
MAX_NODES = 1_000_000  # values in a document, YAML aliases expanded
MAX_STRING_CHARS = 4096  # characters in one key or string
MAX_NUMBER = 2**53  # largest magnitude of a number: every integer up to it is exact in floating point
MAX_NUMBER_TEXT = "2**53 = 9007199254740992"


def max_file_bytes() -> int:
    """The size limit of input files in bytes: ``DLAOPT_MAX_FILE_MB`` (MiB, a positive number) or the default."""
    return _env_limit(MAX_FILE_ENV, MAX_FILE_BYTES, 1024 * 1024)


def max_onnx_bytes() -> int:
    """The size limit of ONNX model files in bytes: ``DLAOPT_MAX_ONNX_MB`` (MiB) or the default, which is below
    protobuf's own limit of 2 GiB."""
    return _env_limit(MAX_ONNX_ENV, MAX_ONNX_BYTES, 2047)


def _env_limit(variable: str, default: int, most_mb: float) -> int:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not (math.isfinite(mb) and 0 < mb <= most_mb):
        raise InputError(f"the environment variable {variable} is {raw!r}",
                         expected=f"a positive number of MiB, at most {most_mb:g}")
    return int(mb * 1024 * 1024)


def _size_text(n: int) -> str:
    mib = n / (1024 * 1024)
    return f"{mib:g} MiB ({n} bytes)" if n >= 1024 * 1024 else f"{n} bytes"


# ------------------------------------------------------------------------------------------------ reading
def read_bytes(path: str | Path, *, expected: str = "a YAML or JSON file", limit: int | None = None,
               raise_hint: str | None = None) -> bytes:
    """At most ``limit`` bytes of ``path`` (default :func:`max_file_bytes`); a larger, missing or unreadable file
    is an :class:`InputError` naming the file and the limit."""
    file = str(path)
    limit = max_file_bytes() if limit is None else limit
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise InputError("file not found", file=file, expected=f"an existing {expected.removeprefix('a ')}") \
            from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", file=file, expected=expected) from None
    except PermissionError:
        raise InputError("cannot read the file: permission denied", file=file) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", file=file) from None
    if len(data) > limit:
        hint = raise_hint or f"set the environment variable {MAX_FILE_ENV} to a larger number of MiB to allow it"
        raise InputError(f"the file is larger than the limit of {_size_text(limit)}; {hint}", file=file,
                         expected=f"{expected} of at most {_size_text(limit)}")
    return data


def read_text(path: str | Path) -> str:
    """The UTF-8 text of ``path`` (at most :func:`max_file_bytes`); a missing, unreadable, oversized or non-text file
    is an :class:`InputError` naming the file."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a UTF-8 text file (undecodable byte at offset {exc.start})", file=str(path),
                         expected="a YAML or JSON file") from None


# ------------------------------------------------------------------------------------------------ numbers too large
class _BadNumber(str):
    """The text of a number literal that cannot be held (too many digits, or a float that overflows): reported by
    :func:`check_document` with its key path."""


_MAX_INT_DIGITS = 30  # longer integer literals are not even converted (Python limits int(str) to 4300 digits)


def _json_int(text: str) -> int | _BadNumber:
    return _BadNumber(text) if len(text) > _MAX_INT_DIGITS else int(text)


def _json_float(text: str) -> float | _BadNumber:
    value = float(text)
    return value if math.isfinite(value) else _BadNumber(text)


def _json_constant(text: str) -> _BadNumber:  # NaN, Infinity, -Infinity
    return _BadNumber(text)


class _DuplicateKeys(dict):  # type: ignore[type-arg]
    """A JSON object that repeats ``key``: reported by :func:`check_document` with its key path."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            return _DuplicateKeys(key)
        out[key] = value
    return out


# ------------------------------------------------------------------------------------------------ JSON nesting
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET = re.compile(r"[\[\]{}]")


def _json_depth_error(text: str, file: str) -> InputError | None:
    """An error when brackets outside strings nest deeper than :data:`MAX_DEPTH` (checked without recursion, in
    passes that each remove the innermost pairs), else ``None``."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    blanked = _JSON_STRING.sub(lambda m: " " * len(m.group()), text)  # positions kept, brackets in strings gone
    shape = _NOT_BRACKET.sub("", blanked).replace("{", "[").replace("}", "]")
    for _ in range(MAX_DEPTH):
        if not shape:
            return None
        shorter = shape.replace("[]", "")
        if shorter == shape:  # unbalanced: json.loads reports the syntax error
            return None
        shape = shorter
    if not shape or "[]" not in shape:
        return None
    depth = 0
    for m in _BRACKET.finditer(blanked):
        depth += 1 if m.group() in "[{" else -1
        if depth > MAX_DEPTH:
            line = blanked.count("\n", 0, m.start()) + 1
            column = m.start() - (blanked.rfind("\n", 0, m.start()) + 1) + 1
            return InputError(f"nesting deeper than {MAX_DEPTH} levels at line {line}, column {column}", file=file,
                              expected=f"lists and mappings nested at most {MAX_DEPTH} levels deep")
    return None  # pragma: no cover - the passes above found it deeper


# ------------------------------------------------------------------------------------------------ YAML
class _GuardedComposer(yaml.composer.Composer):
    """Composes YAML nodes while counting the values aliases expand to and the nesting depth (so an alias bomb is
    refused before anything is expanded), and refuses an alias inside the collection it names."""

    def _init_guard(self) -> None:
        self._sizes: dict[int, int] = {}  # id(node) -> values it expands to (nodes stay alive while composing)
        self._open_anchors: set[str] = set()  # anchors of the collections being composed (names are unique)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.events.AliasEvent):
            if event.anchor in self._open_anchors:
                raise _YamlLimitError(
                    None, None, f"the alias *{event.anchor} is inside the collection it names (a recursive alias)",
                    event.start_mark)
            self._aliases += 1
            return super().compose_node(parent, index)
        if not isinstance(event, (yaml.events.SequenceStartEvent, yaml.events.MappingStartEvent)):
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _YamlLimitError(
                f"lists and mappings nested at most {MAX_DEPTH} levels deep", None,
                f"nesting deeper than {MAX_DEPTH} levels (the limit)", event.start_mark)
        if event.anchor is not None:
            self._open_anchors.add(event.anchor)
        node = super().compose_node(parent, index)
        self._open_anchors.discard(event.anchor)
        self._depth -= 1
        children = node.value if isinstance(node, yaml.SequenceNode) else [n for kv in node.value for n in kv]
        size = 1 + sum(self._sizes.get(id(c), 1) for c in children)
        if size > MAX_NODES:
            raise _YamlLimitError(
                f"at most {MAX_NODES} values with every alias (*name) expanded", None,
                f"too many aliases: they expand the document to more than {MAX_NODES} values (the limit)",
                event.start_mark)
        self._sizes[id(node)] = size
        return node


class _StrictLoader(_GuardedComposer, yaml.SafeLoader):
    """A safe loader (pure Python) with the guarded composer, that rejects duplicate keys in a mapping (plain YAML
    silently keeps the last one) and keeps integer literals too long to convert as :class:`_BadNumber`."""

    def __init__(self, stream: Any) -> None:
        yaml.SafeLoader.__init__(self, stream)
        self._init_guard()


_LOADERS: list[type] = [_StrictLoader]
try:
    from yaml._yaml import CParser as _CParser  # libyaml's scanner and parser, when PyYAML was built with it
except ImportError:  # pragma: no cover - PyYAML without libyaml
    _CParser = None
if _CParser is not None:
    class _StrictCLoader(_GuardedComposer, _CParser, yaml.constructor.SafeConstructor,  # type: ignore[misc]
                         yaml.resolver.Resolver):
        """:class:`_StrictLoader` with libyaml's scanner and parser (about five times faster); the composer, and
        with it every limit, is the same Python code."""

        def __init__(self, stream: Any) -> None:
            _CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self._init_guard()

    _LOADERS.append(_StrictCLoader)
_YAML_LOADER = _LOADERS[-1]


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: the base constructor reports it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int | _BadNumber:
    text = str(node.value).replace("_", "")
    if len(text) > _MAX_INT_DIGITS:
        return _BadNumber(node.value)
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


for _loader in _LOADERS:
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)  # type: ignore[attr-defined]
    _loader.add_constructor("tag:yaml.org,2002:int", _construct_int)  # type: ignore[attr-defined]


class _YamlLimitError(yaml.composer.ComposerError):
    """A limit of this module exceeded while composing YAML (reported without "syntax error")."""


def _yaml_error(exc: yaml.YAMLError, file: str) -> InputError:
    if isinstance(exc, _YamlLimitError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return InputError(f"at line {mark.line + 1}, column {mark.column + 1}: {exc.problem}", file=file,
                          expected=exc.context)
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        what = exc.problem or "invalid YAML"
        if "maximum nesting depth" in what:  # libyaml's own limit (1000 levels), met before the composer's
            return InputError(f"at line {mark.line + 1}, column {mark.column + 1}: nesting deeper than {MAX_DEPTH} "
                              "levels (the limit)", file=file,
                              expected=f"lists and mappings nested at most {MAX_DEPTH} levels deep")
        if exc.context:
            what += f" ({exc.context})"
        return InputError(f"YAML syntax error at line {mark.line + 1}, column {mark.column + 1}: {what}", file=file)
    return InputError(f"YAML syntax error: {exc}", file=file)


# ------------------------------------------------------------------------------------------------ parsing
def parse_document(text: str, *, file: str, json_syntax: bool = False) -> Any:
    """Parse YAML (or JSON when ``json_syntax``) within the limits of this module; syntax errors are
    :class:`InputError` with line and column, values beyond a limit name the key path."""
    if json_syntax:
        too_deep = _json_depth_error(text, file)
        if too_deep is not None:
            raise too_deep
        try:
            doc = json.loads(text, object_pairs_hook=_json_pairs, parse_int=_json_int, parse_float=_json_float,
                             parse_constant=_json_constant)
        except json.JSONDecodeError as exc:
            raise InputError(f"JSON syntax error at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                             file=file) from None
        except RecursionError:
            raise InputError(f"nesting deeper than {MAX_DEPTH} levels", file=file,
                             expected=f"lists and mappings nested at most {MAX_DEPTH} levels deep") from None
        except ValueError as exc:
            raise InputError(f"JSON error: {exc}", file=file) from None
    else:
        try:
            doc = yaml.load(text, Loader=_YAML_LOADER)  # safe: SafeConstructor only
        except yaml.YAMLError as exc:
            raise _yaml_error(exc, file) from None
        except RecursionError:  # pragma: no cover - the composer's depth limit comes first
            raise InputError(f"nesting deeper than {MAX_DEPTH} levels", file=file,
                             expected=f"lists and mappings nested at most {MAX_DEPTH} levels deep") from None
    check_document(doc, file=file)
    return doc


def load_mapping(path: str | Path, *, what: str) -> dict[str, Any]:
    """Read and parse ``path`` (JSON by a ``.json`` suffix, else YAML); the top level must be a mapping."""
    file = str(path)
    text = read_text(path)
    doc = parse_document(text, file=file, json_syntax=Path(path).suffix.lower() == ".json")
    if doc is None:
        raise InputError("the file is empty", file=file, expected=f"a mapping describing {what}")
    if not isinstance(doc, Mapping):
        kind = "a list" if isinstance(doc, list) else f"{type(doc).__name__} {_short(doc)}"
        raise InputError(f"the top level is {kind}, not a mapping", file=file, expected=f"a mapping describing {what}")
    return dict(doc)


# ------------------------------------------------------------------------------------------------ value limits
def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 5] + "...'" if isinstance(value, str) \
        else text[: limit - 3] + "..."


def check_document(doc: Any, *, file: str | None = None) -> None:
    """Check every value of ``doc`` against the limits of this module (depth, count, keys, strings, numbers),
    without recursion; the first violation is an :class:`InputError` naming ``file`` and the key path."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    count = 0
    while stack:
        value, path = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise InputError(f"the document has more than {MAX_NODES} values (the limit)", file=file,
                             expected=f"at most {MAX_NODES} values (lists, mappings, strings and numbers)")
        if isinstance(value, str):
            _check_string(value, file, path, "string")
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, (int, float)):
            _check_number(value, file, path)
        elif isinstance(value, (Mapping, list, tuple)):
            if len(path) >= MAX_DEPTH:
                raise InputError(f"nesting deeper than {MAX_DEPTH} levels", file=file, path=path,
                                 expected=f"lists and mappings nested at most {MAX_DEPTH} levels deep")
            if isinstance(value, _DuplicateKeys):
                raise InputError(f"duplicate key {_short(value.key)}", file=file, path=path,
                                 expected="each key at most once in a mapping")
            if isinstance(value, Mapping):
                for key, item in value.items():
                    if not isinstance(key, str):
                        kind = "null" if key is None else "a boolean" if isinstance(key, bool) else \
                            "a number" if isinstance(key, (int, float)) else f"a {type(key).__name__}"
                        raise InputError(f"the key {_short(key)} is {kind}, not text", file=file, path=path,
                                         expected="text keys (quote keys like 1, yes, no or null)")
                    _check_string(key, file, path, "key")
                    stack.append((item, (*path, key)))
            else:
                stack.extend((item, (*path, i)) for i, item in enumerate(value))


def _check_string(text: str, file: str | None, path: tuple[str | int, ...], what: str) -> None:
    if isinstance(text, _BadNumber):
        raise InputError(f"the number {_short(str(text))} cannot be used", file=file, path=path,
                         expected=f"a finite number of magnitude at most {MAX_NUMBER_TEXT}")
    if len(text) > MAX_STRING_CHARS:
        where = f"{what} {text[:40]!r}..." if what == "key" else f"{what}"
        raise InputError(f"the {where} is {len(text)} characters long, more than the limit of {MAX_STRING_CHARS}",
                         file=file, path=path if what != "key" else path,
                         expected=f"{what}s of at most {MAX_STRING_CHARS} characters")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(f"the {what} {_short(text)} holds an unpaired surrogate (\\u{ord(text[exc.start]):04x})",
                             file=file, path=path, expected="valid Unicode text") from None


def _check_number(value: int | float, file: str | None, path: tuple[str | int, ...]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{value} is not a finite number", file=file, path=path,
                         expected=f"a finite number of magnitude at most {MAX_NUMBER_TEXT}")
    if abs(value) > MAX_NUMBER:
        shown = f"{value:.6g}" if isinstance(value, float) or value.bit_length() > 100 else str(value)
        raise InputError(f"{shown} is too large", file=file, path=path,
                         expected=f"a number of magnitude at most {MAX_NUMBER_TEXT}")
