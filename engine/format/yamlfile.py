"""The one reader of diagrama's YAML files (diagrams, registries, scenarios, the studio's view of a file).

Reads the dialect engine.format.dialect defines (YAML 1.2's core schema) and remembers where every value was
written. Only plain YAML types are built (no Python tags); duplicate keys, alias bombs, aliases that contain
themselves, nesting past MAX_DEPTH and absurdly large files are refused with a Problem that names the file and
line. The result is plain Python data plus a ``LineMap`` from a value's path to its line; plain scalars that
YAML 1.1 reads otherwise are reported on request (`ambiguous`), for `validate` to warn about.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from engine.errors import DiagramInvalid, DocumentTooLarge, Problem
from engine.format.dialect import AMBIGUOUS, IMPLICIT_STARTS, MERGE_TAG, STR_TAG, core_value, plain_tag

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "Ambiguous",
    "LineMap",
    "decode_text",
    "read_yaml",
    "read_yaml_text",
    "read_yaml_value",
]

MAX_FILE_BYTES = 8 * 1024 * 1024
# After alias expansion; a billion-laughs file reaches this in a few milliseconds.
MAX_NODES = 500_000
# Lists and mappings inside each other; far beyond any diagram or registry (JSON Schemas nest a dozen levels),
# and far enough below Python's recursion limit for every later stage that walks the values.
MAX_DEPTH = 100

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = STR_TAG
_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]  # libyaml's class when present
    """Resolves implicit tags by the core schema (engine.format.dialect), with a memo: diagrams repeat the same
    keys and values."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        # Called from libyaml for every untagged node (a quarter of composing): a lookup, names read as globals.
        if kind is _SCALAR_NODE:
            if not implicit[0]:
                return _STR_TAG  # quoted: always a string
            tag = _RESOLVED.get(value)
            if tag is None:
                if value and value[0] not in _IMPLICIT_STARTS:
                    return _STR_TAG  # no implicit type (number, bool, null, merge) begins with this: text
                tag = plain_tag(value)
                if len(value) <= 64 and len(_RESOLVED) < 100_000:
                    _RESOLVED[value] = tag
            return tag
        return _MAP_TAG if kind is _MAPPING_NODE else _SEQ_TAG

    # No path resolvers are registered, so these do nothing; libyaml's composer still calls them for every
    # node. Functions written in C that do nothing with their arguments cost no Python frame:
    descend_resolver = operator.is_  # (parent, index) → a bool nobody reads
    ascend_resolver = tuple  # () → the empty tuple


_RESOLVED: dict[str, str] = {}
"""Plain scalar → its tag, shared by every load: a pure function of the text."""
_IMPLICIT_STARTS = IMPLICIT_STARTS
# The node classes, read as globals on the hot paths (a module attribute costs a lookup each time).
_SCALAR_NODE = yaml.ScalarNode
_SEQUENCE_NODE = yaml.SequenceNode
_MAPPING_NODE = yaml.MappingNode
_MERGE_TAG = MERGE_TAG
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_AMBIGUOUS = AMBIGUOUS
_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    _MERGE_TAG,  # `<<` where it is not a key: text
}

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Ambiguous:
    """A plain scalar that YAML 1.1 reads otherwise than this reader: where it is, as written."""

    path: Path_
    line: int
    column: int
    text: str


class LineMap:
    """Maps a value's path (keys and list indices) to its 1-based line and column."""

    __slots__ = ("_marks", "file")

    def __init__(self, file: str) -> None:
        self.file = file
        self._marks: dict[Path_, tuple[int, int]] = {}

    def record(self, path: Path_, line: int, column: int) -> None:
        self._marks[path] = (line, column)

    def line(self, path: Path_) -> int | None:
        """The line of `path`, or of its nearest recorded parent."""
        mark = self.mark(path)
        return mark[0] if mark else None

    def mark(self, path: Path_) -> tuple[int, int] | None:
        for end in range(len(path), -1, -1):
            found = self._marks.get(path[:end])
            if found is not None:
                return found
        return None


class _Builder:
    def __init__(self, file: str, ambiguous: list[Ambiguous] | None) -> None:
        self.lines = LineMap(file)
        self.ambiguous = ambiguous
        self.problems: list[Problem] = []
        self.nodes = 0
        self._constructor = SafeConstructor()
        self.file = file
        self._open: set[int] = set()
        """The lists and mappings being built, outermost first: an alias to one of them would never end."""

    def _problem(self, node: yaml.Node, message: str, hint: str | None = None) -> None:
        mark = node.start_mark
        self.problems.append(
            Problem(self.file, mark.line + 1, message, hint=hint, column=mark.column + 1, code="yaml")
        )

    def build(self, node: yaml.Node, path: Path_) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise DocumentTooLarge(node.start_mark.line + 1)
        if type(node) is _SCALAR_NODE:
            return self._scalar(node, path)
        identity = id(node)
        if identity in self._open:
            self._problem(node, "an alias refers to a list or mapping it is part of", "a value cannot contain itself")
            return None
        if len(path) >= MAX_DEPTH:
            self._problem(node, f"lists and mappings are nested more than {MAX_DEPTH} levels deep",
                          "flatten the structure")
            return None
        self._open.add(identity)
        try:
            return self._collection(node, path)
        finally:
            self._open.discard(identity)

    def _collection(self, node: yaml.Node, path: Path_) -> Any:
        if type(node) is _SEQUENCE_NODE:
            if node.tag != _SEQ_TAG:
                self._problem(node, f"unsupported YAML tag {node.tag!r}", "use a plain list")
                return []
            items = []
            marks = self.lines._marks  # the builder fills the map it owns
            for index, child in enumerate(node.value):
                child_path = (*path, index)
                mark = child.start_mark
                marks[child_path] = (mark.line + 1, mark.column + 1)
                items.append(self.build(child, child_path))
            return items
        if type(node) is _MAPPING_NODE:
            if node.tag != _MAP_TAG:
                self._problem(node, f"unsupported YAML tag {node.tag!r}", "use a plain mapping")
                return {}
            return self._mapping(node, path)
        raise AssertionError(f"unknown YAML node {node!r}")  # pragma: no cover

    def _scalar(self, node: yaml.ScalarNode, path: Path_) -> Any:
        tag = node.tag
        if tag.startswith(_AMBIGUOUS):
            tag = tag[len(_AMBIGUOUS):]
            if self.ambiguous is not None:
                mark = node.start_mark
                self.ambiguous.append(Ambiguous(path, mark.line + 1, mark.column + 1, node.value))
        elif tag not in _SCALAR_TAGS:
            if tag == _TIMESTAMP_TAG:
                return node.value  # `!!timestamp`: dates stay text, as the core schema reads them untagged
            self._problem(
                node,
                f"unsupported YAML tag {tag!r}",
                "only plain strings, numbers, booleans and null are allowed",
            )
            return None
        try:
            return core_value(tag, node.value)
        except ValueError as exc:  # '!!bool yes', or an integer past Python's 4,300 digits
            shown = node.value if len(node.value) <= 40 else node.value[:39] + "…"
            if plain_tag(node.value).endswith(tag):
                self._problem(node, f"'{shown}' is not a number Python can read", "quote it to keep it as text")
            else:
                self._problem(node, f"'{shown}' is not a {tag.rsplit(':', 1)[-1]} in YAML 1.2 ({exc})",
                              "quote it to keep it as text, or write the value in that type's form")
            return None

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[str, Any]:
        result: dict[str, Any] = {}
        seen: dict[str, int] = {}
        marks = self.lines._marks  # the builder fills the map it owns
        scalars = 0  # added to `nodes` at the end: the text bounds one mapping's entries, build() the expansion
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged = self.build(value_node, path)
                sources = merged if isinstance(merged, list) else [merged]
                for source in sources:
                    if isinstance(source, dict):
                        for key, value in source.items():
                            result.setdefault(key, value)
                continue
            if type(key_node) is not _SCALAR_NODE:
                self._problem(key_node, "a mapping key must be a plain string")
                continue
            # Keys are always names in our formats: keep them as written ("on", "no", "1").
            key = key_node.value
            mark = key_node.start_mark
            line = mark.line + 1
            if key in seen:
                self._problem(
                    key_node,
                    f"duplicate key '{key}' (first written on line {seen[key]})",
                    "remove one of them",
                )
                continue
            seen[key] = line
            child_path = (*path, key)
            marks[child_path] = (line, mark.column + 1)
            if type(value_node) is _SCALAR_NODE:  # the common case, without the dispatch in build()
                scalars += 1
                result[key] = value_node.value if value_node.tag == _STR_TAG else self._scalar(value_node, child_path)
            else:
                result[key] = self.build(value_node, child_path)
        self.nodes += scalars
        return result


def _syntax_problem(exc: yaml.MarkedYAMLError, text: str, file: str) -> Problem:
    """libyaml's complaint in a person's words, at the place to fix: a tab, an unclosed quote, or as it says."""
    mark = exc.problem_mark or exc.context_mark
    lines = text.splitlines()
    if mark is not None and mark.line < len(lines):
        written = lines[mark.line]
        indent = written[: len(written) - len(written.lstrip(" \t"))]
        if "\t" in indent and mark.column <= len(indent):
            return Problem(file, mark.line + 1, "not valid YAML: a tab in the indentation",
                           column=indent.index("\t") + 1, hint="YAML indents with spaces only; replace the tab with spaces",
                           code="yaml")
    opened = exc.context_mark
    if opened is not None and exc.context == "while scanning a quoted scalar" and opened.line < len(lines):
        # libyaml notices only where it gives up (often the end of the file); the fix is where the quote opened.
        quote = lines[opened.line][opened.column:opened.column + 1] or '"'
        return Problem(file, opened.line + 1, f"not valid YAML: the quoted text opened here with {quote} is never closed",
                       column=opened.column + 1, hint=f"end the value with {quote}, or remove the opening {quote}",
                       code="yaml")
    at_end = mark is not None and (mark.line >= len(lines) or not (
        lines[mark.line][mark.column:].strip() or any(rest.strip() for rest in lines[mark.line + 1:])))
    if opened is not None and at_end and exc.context in ("while parsing a flow sequence", "while parsing a flow mapping"):
        bracket = "[" if exc.context.endswith("sequence") else "{"
        closer = "]" if bracket == "[" else "}"
        return Problem(file, opened.line + 1, f"not valid YAML: the {bracket} opened here is never closed",
                       column=opened.column + 1, hint=f"close it with {closer}", code="yaml")
    message = exc.problem or str(exc)
    if exc.context:
        message = f"{message} ({exc.context})"
    return Problem(file, mark.line + 1 if mark else None, f"not valid YAML: {message}",
                   column=mark.column + 1 if mark else None, code="yaml")


def decode_text(data: bytes, file: str) -> str:
    """A file's bytes as UTF-8 text, newlines as `\\n` (as `read_text` gives them); DiagramInvalid at the line and
    column of the first byte that is not UTF-8."""
    try:
        text = data.decode("utf-8")
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(data[data.rfind(b"\n", 0, exc.start) + 1:exc.start].decode("utf-8", "replace")) + 1
        raise DiagramInvalid([Problem(file, line, f"the file is not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be read",
                                      column=column, hint="save it as UTF-8 in your editor",
                                      code="not_text")]) from None


def read_yaml_text(text: str, file: str, problems: list[Problem] | None = None,
                   ambiguous: list[Ambiguous] | None = None) -> tuple[Any, LineMap]:
    """Parse one YAML document; raise DiagramInvalid listing every problem found.

    With a `problems` list, problems that leave the data usable (a duplicate key, an
    unsupported tag) are appended there instead, so later checks can still run. With an
    `ambiguous` list, every plain scalar value YAML 1.1 reads otherwise is appended to it.
    """
    if len(text) > MAX_FILE_BYTES:
        raise DiagramInvalid(
            [Problem(file, None, f"the file is {len(text)} bytes; the limit is {MAX_FILE_BYTES}")]
        )
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        raise DiagramInvalid([_syntax_problem(exc, text, file)]) from exc
    except yaml.YAMLError as exc:
        raise DiagramInvalid([Problem(file, None, f"not valid YAML: {exc}", code="yaml")]) from exc
    builder = _Builder(file, ambiguous)
    if root is None:
        return None, builder.lines
    builder.lines.record((), root.start_mark.line + 1, root.start_mark.column + 1)
    try:
        data = builder.build(root, ())
    except DocumentTooLarge as exc:
        raise DiagramInvalid(
            [
                Problem(
                    file,
                    exc.line,
                    f"the document expands to more than {MAX_NODES} values",
                    hint="aliases that repeat aliases (a 'billion laughs' file) are refused",
                    code="yaml",
                )
            ]
        ) from None  # our own signal, not a cause: the Problem says all of it
    if builder.problems:
        if problems is None:
            raise DiagramInvalid(builder.problems)
        problems.extend(builder.problems)
    return data, builder.lines


def read_yaml(path: Path) -> tuple[Any, LineMap]:
    """Read a YAML file from disk (see read_yaml_text)."""
    file = str(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DiagramInvalid([Problem(file, None, f"cannot read the file: {exc.strerror}")]) from exc
    if size > MAX_FILE_BYTES:
        raise DiagramInvalid([Problem(file, None, f"the file is {size} bytes; the limit is {MAX_FILE_BYTES}")])
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DiagramInvalid([Problem(file, None, f"cannot read the file: {exc.strerror}")]) from exc
    return read_yaml_text(decode_text(data, file), file)


def read_yaml_value(text: str, source: str) -> Any:
    """A small YAML text's data alone, in the same dialect (a `--input` value, an inputs file); DiagramInvalid
    naming `source` when it is not YAML."""
    data, _ = read_yaml_text(text, source)
    return data
