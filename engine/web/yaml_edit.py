"""Minimal-change rewriting of a diagram's YAML file from the studio's JSON.

The YAML file is the source of truth: this module owns reading it as JSON-ready data
and turning a whole new diagram into the smallest text edit of it (comments, key order,
quoting, blank lines and indentation kept), checked by re-parsing with ruamel and PyYAML.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import json
import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError as RuamelError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString, ScalarString

__all__ = ["MAX_DEPTH", "MAX_TEXT_BYTES", "EditError", "apply_edit", "content_hash", "new_diagram_text", "to_json"]

MAX_TEXT_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 100
# After alias expansion: an alias bomb in the file must not turn into gigabytes of JSON.
MAX_NODES = 500_000
# New collections are written in flow style only when the line stays this short.
FLOW_WIDTH = 100

_STR_TAG = "tag:yaml.org,2002:str"
_PY_SAFE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVER_12 = VersionedResolver()
_RESOLVER_11 = yaml.resolver.Resolver()
# A plain scalar may not start with these (YAML indicators, or quotes that would change the style).
_PLAIN_FIRST_BAD = set("-?:,[]{}#&*!|>'\"%@`")
_FLOW_BAD = set(",[]{}")
# Line breaks to YAML 1.1 (PyYAML) or a BOM: never written raw outside double quotes.
_BREAKS = {"\x85", "\u2028", "\u2029", "\ufeff"}


class EditError(ValueError):
    """The file cannot be parsed, or the new diagram is not something we can write."""


class _Unsupported(Exception):
    """The span editor cannot make this edit; the caller falls back to a ruamel dump."""


# ---------------------------------------------------------------- public API


def content_hash(text: str | bytes) -> str:
    """sha256 hex digest of the file's bytes (a str is hashed as UTF-8)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def to_json(text: str) -> dict[str, Any]:
    """The diagram file as plain JSON-ready data (dates become ISO strings, keys strings)."""
    _check_text_size(text)
    data = _load_plain(text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise EditError(f"the file holds a YAML {type(data).__name__}, not a mapping")
    return data


def apply_edit(text: str, new: dict[str, Any]) -> str:
    """The new file text: the smallest change of `text` whose data is `new`."""
    _check_text_size(text)
    _check_new(new)
    old = to_json(text)
    if _same(old, new):
        return text
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    # Work on "\n" only and put Windows line ends back at the end, so spliced lines match.
    crlf = "\r\n" in body and body.count("\r\n") == body.count("\n")
    if crlf:
        body = body.replace("\r\n", "\n")
    indents = _Indents()
    result: str | None = None
    try:
        result = _checked(_span_edit(body, old, new, indents), new)
    except EditError:
        raise
    except Exception:  # _Unsupported (or a span-editor slip): the ruamel dump below is checked the same way
        result = None
    if result is None:
        try:
            result = _checked(_ruamel_rewrite(body, new, indents), new)
        except Exception as exc:  # the last resort: whatever ruamel trips on becomes a clean refusal
            raise EditError(f"cannot write the diagram as YAML: {exc}") from exc
        if result is None:
            raise EditError("cannot write the diagram as YAML that reads back the same")
    if crlf:
        result = result.replace("\n", "\r\n")
    return bom + result


def new_diagram_text(name: str) -> str:
    """A fresh diagram file named `name` with a single Start block."""
    if not isinstance(name, str) or not name.strip():
        raise EditError("the diagram name must be a non-empty string")
    doc = {"diagram": name, "blocks": [{"id": "start", "type": "Start", "position": [0, 0]}]}
    return _Renderer(_Indents(), {}).document(doc)


# ---------------------------------------------------------------- checks and loading


def _check_text_size(text: str) -> None:
    if not isinstance(text, str):
        raise EditError("the file text must be a string")
    # Cheap bound first: a str has at least as many UTF-8 bytes as characters.
    if len(text) > MAX_TEXT_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise EditError(f"the file is larger than {MAX_TEXT_BYTES} bytes")


def _check_new(new: Any) -> None:
    """Refuse what we cannot or must not write, iteratively so that depth cannot crash us."""
    if not isinstance(new, dict):
        raise EditError("the diagram must be a mapping (a JSON object)")
    blocks = new.get("blocks")
    if not isinstance(blocks, list):
        raise EditError("the diagram must have a 'blocks' list")
    for n, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise EditError(f"block {n} is not a mapping")
        if not isinstance(block.get("id"), str) or not block["id"]:
            raise EditError(f"block {n} has no string 'id'")
    size = 0
    stack: list[tuple[Any, int]] = [(new, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise EditError("too deeply nested")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise EditError(f"keys must be strings, not {type(key).__name__} ({key!r:.40})")
                size += len(key) + 4
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            size += 2
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            size += len(value) + 2
        elif value is None or isinstance(value, bool | int | float):
            size += 5
        else:
            raise EditError(f"cannot write a {type(value).__name__} value in YAML")
        if size > MAX_TEXT_BYTES:
            raise EditError(f"the diagram is larger than {MAX_TEXT_BYTES} bytes")


def _ruamel_safe() -> YAML:
    # Pure Python so the resolver is ruamel's YAML 1.2 one whatever libyaml is installed.
    return YAML(typ="safe", pure=True)


def _guard_depth(text: str) -> None:
    """Refuse deep nesting before ruamel meets it: its composer recurses, and its scanner is quadratic in
    flow nesting (seconds for a line of brackets). libyaml's parser is a fast state machine.

    Only texts that could nest deeper than MAX_DEPTH are walked: many brackets or deep indentation.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH // 2 and "\n" + " " * (MAX_DEPTH // 2) not in text:
        return
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_PY_SAFE_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise EditError("too deeply nested")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):
            raise EditError("too deeply nested") from exc
        # Anything else is for the real load to report.


def _load_plain(text: str) -> Any:
    _guard_depth(text)
    try:
        raw = _ruamel_safe().load(text)
    except RecursionError as exc:
        raise EditError("too deeply nested") from exc
    except RuamelError as exc:
        raise EditError(f"the file is not valid YAML: {exc}") from exc
    except (ValueError, TypeError) as exc:  # a constructor refusing a value, e.g. a bad date
        raise EditError(f"the file is not valid YAML: {exc}") from exc
    return _plain(raw, 1, [0])


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, date | datetime | time):
        return key.isoformat()
    return str(key)


def _plain(value: Any, depth: int, count: list[int]) -> Any:
    """Loaded YAML as JSON-ready data; shared (aliased) parts are copied, so count them."""
    if depth > MAX_DEPTH:
        raise EditError("too deeply nested")
    count[0] += 1
    if count[0] > MAX_NODES:
        raise EditError(f"the file has more than {MAX_NODES} values")
    if isinstance(value, dict):
        return {_json_key(k): _plain(v, depth + 1, count) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1, count) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return str(value)  # drops ruamel's ScalarString subclasses
    if isinstance(value, date | datetime | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, set | frozenset):
        return {_json_key(k): None for k in value}
    return str(value)


def _same(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: 1 == 1.0, but True is not 1 and "1" is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return False


def _checked(result: str, new: dict[str, Any]) -> str | None:
    """`result` if both parsers read it as `new`, after quoting what only PyYAML misreads; else None."""
    if _round_trips(result, new):
        return result
    try:
        root = _compose(result)
        if root is None or not _same(_load_plain(result), new):
            return None
        fixed = _disambiguate(result, root, new)
    except (EditError, _Unsupported):
        return None
    return fixed if _round_trips(fixed, new) else None


def _round_trips(result: str, new: dict[str, Any]) -> bool:
    """Whether both parsers the project uses read `result` back as exactly `new`."""
    try:
        _check_text_size(result)
        ours = _load_plain(result)
        theirs = _plain(yaml.load(result, Loader=_PY_SAFE_LOADER), 1, [0])
    except (EditError, yaml.YAMLError, RecursionError, ValueError, TypeError):
        return False
    return _same({} if ours is None else ours, new) and _same({} if theirs is None else theirs, new)


# ---------------------------------------------------------------- scalar text


def _printable(ch: str) -> bool:
    """Characters both parsers accept raw in any scalar style (tabs and breaks excluded)."""
    o = ord(ch)
    if ch in _BREAKS:
        return False
    return 0x20 <= o <= 0x7E or 0xA0 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or o >= 0x10000


def _resolves_to_str(s: str) -> bool:
    # Both YAML 1.2 (ruamel) and 1.1 (PyYAML, what the engine runs): "yes", "on", "1e3", "0o7", "1:30" differ.
    implicit = (True, False)
    ours: str = _RESOLVER_12.resolve(ScalarNode, s, implicit)
    theirs: str = _RESOLVER_11.resolve(yaml.nodes.ScalarNode, s, implicit)
    return ours == _STR_TAG and theirs == _STR_TAG


def _plain_ok(s: str, flow: bool) -> bool:
    if not s or s != s.strip() or s[0] in _PLAIN_FIRST_BAD or s.startswith("..."):
        return False
    # Stricter than YAML on purpose: templates and anything with ':' or '#' are quoted.
    if ":" in s or "#" in s or "{{" in s or "{%" in s or len(s) > 1000:
        return False
    if flow and any(c in _FLOW_BAD for c in s):
        return False
    return all(_printable(c) for c in s) and _resolves_to_str(s)


def _single_ok(s: str) -> bool:
    return all(_printable(c) for c in s)


def _literal_ok(s: str) -> bool:
    if "\n" not in s or s.startswith(("\n", " ", "\t")) or s.endswith("\n\n"):
        return False
    lines = s[:-1].split("\n") if s.endswith("\n") else s.split("\n")
    for line in lines:
        if line and not line.strip():
            return False  # a spaces-only line would be read as an empty one
        if not all(c == "\t" or _printable(c) for c in line):
            return False
    return True


def _literal(s: str, col: int) -> str:
    chomp = "" if s.endswith("\n") else "-"
    body = s[:-1] if s.endswith("\n") else s
    return "|" + chomp + "".join("\n" + (" " * col + line if line else "") for line in body.split("\n"))


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}


def _dq(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif _printable(ch):
            out.append(ch)
        else:
            o = ord(ch)
            out.append(f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
    out.append('"')
    return "".join(out)


def _float_text(f: float) -> str:
    if math.isnan(f):
        return ".nan"
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    r = repr(f)
    if "e" in r:
        # PyYAML (YAML 1.1) reads 1e-05 as a string: it needs a dot and a signed exponent.
        mantissa, exponent = r.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        if exponent[0] not in "+-":
            exponent = "+" + exponent
        return f"{mantissa}e{exponent}"
    return r if "." in r else r + ".0"


def _scalar(value: Any, *, flow: bool, style: str | None = None, block_col: int | None = None) -> str:
    """A scalar's YAML text; `style` is the replaced scalar's, `block_col` allows a `|` block there."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    s: str = value
    if "\n" in s and not flow and block_col is not None and _literal_ok(s):
        return _literal(s, block_col)
    if style == "'" and _single_ok(s):
        return "'" + s.replace("'", "''") + "'"
    if style == '"':
        return _dq(s)
    return s if _plain_ok(s, flow) else _dq(s)


# ---------------------------------------------------------------- rendering new values


@dataclass
class _Indents:
    """The file's block indentation: `blocks:\\n  - id` is sequence 4, offset 2."""

    mapping: int = 2
    sequence: int = 4
    offset: int = 2


def _block_order(block: dict[str, Any]) -> list[str]:
    # A new block reads like the others: who it is and where it sits first.
    head = [k for k in ("id", "type", "label", "position") if k in block]
    return head + [k for k in block if k not in head]


class _Renderer:
    """Writes new values in the file's style (indentation, and flow or block per key)."""

    def __init__(self, indents: _Indents, styles: dict[tuple[str, bool], bool]) -> None:
        self.indents = indents
        self.styles = styles

    def key(self, key: str, flow: bool = False) -> str:
        if len(key) > 1000:
            raise _Unsupported("implicit keys are limited to 1024 characters")
        return key if _plain_ok(key, flow) else _dq(key)

    def flow(self, value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.key(k, True)}: {self.flow(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(self.flow(v) for v in value) + "]"
        return _scalar(value, flow=True)

    def wants_flow(self, key: str | None, value: Any, col: int, prefer: bool | None = None) -> bool:
        if not value:
            return True
        scalars_only = isinstance(value, list) and all(not isinstance(v, dict | list) for v in value)
        if key == "position" and scalars_only:
            return True
        if prefer is None and key is not None:
            prefer = self.styles.get((key, isinstance(value, dict)))  # how the file writes this key's mappings or lists
        if prefer is None:
            prefer = scalars_only
        return prefer and col + len(key or "") + 2 + len(self.flow(value)) <= FLOW_WIDTH

    def after_key(self, key: str, value: Any, col: int, prefer: bool | None = None) -> str:
        """The text after a key at column `col`, from its ':' on (no final newline)."""
        if isinstance(value, dict | list):
            if self.wants_flow(key, value, col, prefer):
                return ": " + self.flow(value)
            if isinstance(value, dict):
                return ":\n" + "\n".join(self.entry(k, v, col + self.indents.mapping) for k, v in value.items())
            # The diagram's blocks are separated by blank lines, as in the examples.
            sep = "\n\n" if key == "blocks" and col == 0 else "\n"
            dash = col + self.indents.offset
            return ":\n" + sep.join(self.item(v, dash, key) for v in value)
        return ": " + _scalar(value, flow=False, block_col=col + self.indents.mapping)

    def entry(self, key: str, value: Any, col: int) -> str:
        return " " * col + self.key(key) + self.after_key(key, value, col)

    def item(self, value: Any, dash: int, parent_key: str | None = None) -> str:
        """A sequence item with its dash at column `dash` (no final newline)."""
        col = dash + max(2, self.indents.sequence - self.indents.offset)
        lead = " " * dash + "-" + " " * (col - dash - 1)
        if isinstance(value, dict) and value and not self.wants_flow(None, value, col):
            keys = _block_order(value) if parent_key == "blocks" else list(value)
            return lead + "\n".join(self.entry(k, value[k], col) for k in keys)[col:]
        if isinstance(value, list) and value and not self.wants_flow(None, value, col):
            return lead + "\n".join(self.item(v, col) for v in value)[col:]
        if isinstance(value, dict | list):
            return lead + self.flow(value)
        return lead + _scalar(value, flow=False, block_col=col)

    def document(self, value: dict[str, Any]) -> str:
        return "".join(self.entry(k, v, 0) + "\n" for k, v in value.items())


# ---------------------------------------------------------------- the span editor


@dataclass(frozen=True)
class _Place:
    """Where a node sits: a mapping value (with its key), a sequence item, or the root."""

    kind: str  # "value", "item" or "root"
    key: Node | None = None
    name: str | None = None  # the key's text, or for items the key of their sequence
    flow: bool = False  # inside a flow collection
    top: bool = False  # a value of the root mapping


@dataclass
class _Doc:
    text: str
    render: _Renderer
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    edits: list[tuple[int, int, int, str]] = field(default_factory=list)

    # -- text geometry

    def line_start(self, i: int) -> int:
        return self.text.rfind("\n", 0, i) + 1

    def line_end(self, i: int) -> int:
        """Index just after the newline ending the line that holds `i` (or the text's end)."""
        j = self.text.find("\n", i)
        return len(self.text) if j < 0 else j + 1

    def after(self, end: int) -> int:
        """The end of the line where content ending at `end` ends (a `|+` block ends at a line start)."""
        return end if end > 0 and self.text[end - 1] == "\n" else self.line_end(end)

    def col(self, i: int) -> int:
        return i - self.line_start(i)

    def span(self, node: Node) -> tuple[int, int]:
        return self.spans[id(node)]

    def _comment_col(self, start: int) -> int | None:
        """The column of the comment on the line starting at `start`, None if not a comment line."""
        line = self.text[start : self.line_end(start)]
        stripped = line.lstrip(" ")
        return len(line) - len(stripped) if stripped.startswith("#") else None

    def with_comments_above(self, start: int, col: int) -> int:
        # A comment directly above a line, at its indentation, belongs to it.
        while start > 0:
            prev = self.line_start(start - 1)
            if self._comment_col(prev) != col:
                break
            start = prev
        return start

    def with_deeper_comments(self, end: int, col: int) -> int:
        # Commented-out lines indented under an entry are part of it.
        while end < len(self.text):
            c = self._comment_col(end)
            if c is None or c <= col:
                break
            end = self.line_end(end)
        return end

    def colon(self, key: Node) -> int:
        i = self.span(key)[1]
        while i < len(self.text) and self.text[i] in " \t":
            i += 1
        if i >= len(self.text) or self.text[i] != ":":
            raise _Unsupported("no ':' after the key")
        return i

    def dash(self, item: Node) -> int:
        i = self.span(item)[0] - 1
        while i >= 0 and self.text[i] in " \t\n":
            i -= 1
        if i < 0 or self.text[i] != "-":
            raise _Unsupported("no '-' before the item")
        return i

    def edit(self, start: int, end: int, text: str) -> None:
        self.edits.append((start, end, len(self.edits), text))

    def insert_lines(self, at: int, lines: str) -> None:
        """Insert whole lines (no final newline in `lines`) at a line start."""
        if at == len(self.text) and self.text and not self.text.endswith("\n"):
            lines = "\n" + lines
        self.edit(at, at, lines + "\n")


def _apply(text: str, edits: list[tuple[int, int, int, str]], lo: int = 0, hi: int | None = None) -> str:
    """Splice non-overlapping edits into text[lo:hi]."""
    hi = len(text) if hi is None else hi
    out: list[str] = []
    pos = lo
    for start, end, _, repl in sorted(edits):
        if start < pos or end > hi:
            raise _Unsupported("overlapping edits")
        out.append(text[pos:start])
        out.append(repl)
        pos = end
    out.append(text[pos:hi])
    return "".join(out)


def _scan(doc: _Doc, node: Node, depth: int, seen: set[int], indents: _Indents, found: set[str]) -> None:
    """Record every node's content span; learn the file's indentation and per-key styles."""
    if depth > MAX_DEPTH:
        raise EditError("too deeply nested")
    if id(node) in seen:
        raise _Unsupported("a shared node")  # _compose builds each node once; a text edit must touch one place
    seen.add(id(node))
    text = doc.text
    start, end = node.start_mark.index, node.end_mark.index
    if isinstance(node, ScalarNode):
        header = text[start : text.find("\n", start)] if node.style in ("|", ">") else ""
        if header and "+" not in header.split("#")[0]:
            end = start + len(text[start:end].rstrip())  # its trailing blank lines are not its text (unless kept: `|+`)
        doc.spans[id(node)] = (start, end)
        return
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if not isinstance(key, ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                raise _Unsupported("complex or merge keys")
            _scan(doc, key, depth + 1, seen, indents, found)
            _scan(doc, value, depth + 1, seen, indents, found)
            if _empty_scalar(value):
                at = doc.colon(key) + 1  # ruamel puts an empty value at the next token
                doc.spans[id(value)] = (at, at)
            _learn(doc, key, value, indents, found)
        children = [v for _, v in node.value]
    elif isinstance(node, SequenceNode):
        for item in node.value:
            _scan(doc, item, depth + 1, seen, indents, found)
            if _empty_scalar(item):
                if node.flow_style:
                    raise _Unsupported("empty flow item")
                at = doc.dash(item) + 1
                doc.spans[id(item)] = (at, at)
        children = list(node.value)
    else:  # pragma: no cover - the composer builds only these three
        raise _Unsupported(type(node).__name__)
    if not node.flow_style:
        if not children:
            raise _Unsupported("empty block collection")
        end = doc.span(children[-1])[1]
    doc.spans[id(node)] = (start, end)


def _empty_scalar(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.style is None and node.value == ""


def _learn(doc: _Doc, key: Node, value: Node, indents: _Indents, found: set[str]) -> None:
    if not isinstance(value, MappingNode | SequenceNode) or not value.value:
        return
    name = key.value
    doc.render.styles.setdefault((name, isinstance(value, MappingNode)), bool(value.flow_style))
    if value.flow_style:
        return
    key_col = doc.col(doc.span(key)[0])
    first = value.value[0][0] if isinstance(value, MappingNode) else value.value[0]
    first_col = doc.col(doc.span(first)[0])
    if isinstance(value, MappingNode) and "mapping" not in found and first_col > key_col:
        indents.mapping = first_col - key_col
        found.add("mapping")
    elif isinstance(value, SequenceNode) and "sequence" not in found:
        try:
            dash_col = doc.col(doc.dash(first))
        except _Unsupported:
            return
        if dash_col >= key_col and first_col >= dash_col + 2:
            indents.offset = dash_col - key_col
            indents.sequence = first_col - key_col
            found.add("sequence")


_ALIAS_TAG = "!alias"


def _compose(text: str) -> Node | None:
    """ruamel's node tree with positions, built from its events so that an alias is a node of its own.

    (ruamel's composer hands back the anchored node for an alias: its text would be lost.)
    """
    root: Node | None = None
    stack: list[Node] = []
    keys: list[Node | None] = []
    try:
        for event in YAML(typ="rt").parse(text):
            node: Node
            if isinstance(event, ScalarEvent):
                tag = event.tag or _RESOLVER_12.resolve(ScalarNode, event.value, event.implicit)
                node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
            elif isinstance(event, AliasEvent):
                node = ScalarNode(_ALIAS_TAG, "", event.start_mark, event.end_mark, style="*")
            elif isinstance(event, MappingStartEvent | SequenceStartEvent):
                kind = MappingNode if isinstance(event, MappingStartEvent) else SequenceNode
                stack.append(kind(event.tag, [], event.start_mark, event.end_mark, flow_style=event.flow_style))
                keys.append(None)
                if len(stack) > MAX_DEPTH:
                    raise EditError("too deeply nested")
                continue
            elif isinstance(event, CollectionEndEvent):
                node = stack.pop()
                keys.pop()
                node.end_mark = event.end_mark
            else:
                continue  # stream and document events
            if not stack:
                root = node
            elif isinstance(stack[-1], MappingNode):
                key = keys[-1]
                if key is None:
                    keys[-1] = node
                else:
                    stack[-1].value.append((key, node))
                    keys[-1] = None
            else:
                stack[-1].value.append(node)
    except RuamelError as exc:
        raise EditError(f"the file is not valid YAML: {exc}") from exc
    return root


def _span_edit(text: str, old: dict[str, Any], new: dict[str, Any], indents: _Indents) -> str:
    root = _compose(text)
    if root is not None:
        fixed = _disambiguate(text, root, old)
        if fixed != text:
            text = fixed
            root = _compose(text)
    doc = _Doc(text, _Renderer(indents, {}))
    if root is None:
        # Only comments (or nothing): keep them and write the diagram under them.
        sep = "" if not text or text.endswith("\n") else "\n"
        return text + sep + doc.render.document(new)
    _scan(doc, root, 1, set(), indents, set())
    _edit(doc, root, old, new, _Place("root"))
    return _apply(text, doc.edits)


def _disambiguate(text: str, root: Node, old: dict[str, Any]) -> str:
    """Quote the plain scalars that PyYAML (YAML 1.1) reads differently from ruamel, e.g. `on`, `yes`, `0o7`.

    Left alone they would make any edited file read back differently by the engine.
    """
    try:
        theirs = _plain(yaml.load(text, Loader=_PY_SAFE_LOADER), 1, [0])
    except (EditError, yaml.YAMLError, RecursionError, ValueError, TypeError):
        return text
    if _same(old, theirs):
        return text
    fixes: dict[int, tuple[int, int, str]] = {}

    def fix(node: Node, ours: Any) -> None:
        if isinstance(node, ScalarNode) and node.style is None and node.value:
            repl = _dq(ours) if isinstance(ours, str) else _scalar(ours, flow=True)
            fixes[id(node)] = (node.start_mark.index, node.end_mark.index, repl)

    def walk(node: Node, a: Any, b: Any, depth: int) -> None:
        if depth > MAX_DEPTH or _same(a, b):
            return
        if isinstance(node, MappingNode) and isinstance(a, dict) and isinstance(b, dict):
            if len(node.value) == len(a) == len(b):
                for (key, value), (ka, va), (kb, vb) in zip(node.value, a.items(), b.items(), strict=True):
                    if ka != kb:
                        fix(key, ka)
                    walk(value, va, vb, depth + 1)
        elif isinstance(node, SequenceNode) and isinstance(a, list) and isinstance(b, list):
            if len(node.value) == len(a) == len(b):
                for item, va, vb in zip(node.value, a, b, strict=True):
                    walk(item, va, vb, depth + 1)
        else:
            fix(node, a)

    walk(root, old, theirs, 1)
    return _apply(text, [(start, end, n, repl) for n, (start, end, repl) in enumerate(fixes.values())])


def _edit(doc: _Doc, node: Node, old: Any, new: Any, place: _Place) -> None:
    if _same(old, new):
        return
    if isinstance(node, MappingNode) and isinstance(old, dict) and isinstance(new, dict) and new:
        if len(node.value) != len(old):
            raise _Unsupported("the mapping's keys do not match its data")
        if node.flow_style:
            _edit_flow_map(doc, node, old, new, place)
        else:
            _edit_block_map(doc, node, old, new, place)
        return
    if isinstance(node, SequenceNode) and isinstance(old, list) and isinstance(new, list) and new:
        if len(node.value) != len(old):
            raise _Unsupported("the sequence's items do not match its data")
        if node.flow_style:
            _edit_flow_seq(doc, node, old, new, place)
        elif place.top and place.name == "blocks":
            _edit_blocks(doc, node, old, new, place)
        else:
            _edit_block_seq(doc, node, old, new, place)
        return
    _replace(doc, node, new, place)


def _replace(doc: _Doc, node: Node, new: Any, place: _Place) -> None:
    """Write `new` where `node` is, in the style of its place."""
    start, end = doc.span(node)
    render = doc.render
    if place.kind == "root":
        doc.edit(start, end, render.flow(new) if getattr(node, "flow_style", False) else render.document(new).rstrip("\n"))
        return
    if place.flow:
        doc.edit(start, end, render.flow(new))
        return
    if not isinstance(new, dict | list) and isinstance(node, ScalarNode) and start != end:
        # Scalar for scalar: keep the spacing and comment around it, and its quote style.
        rest = doc.text[end : doc.after(end)]
        block_col = doc.col(start) if place.kind == "item" else None
        if place.kind == "value" and place.key is not None:
            block_col = doc.col(doc.span(place.key)[0]) + render.indents.mapping
        if rest.strip():
            block_col = None  # a `|` block cannot have a comment after its last line
        style = node.style if node.style in ("'", '"') else None
        doc.edit(start, end, _scalar(new, flow=False, style=style, block_col=block_col))
        return
    prefer: bool | None = None
    if (isinstance(node, MappingNode) and isinstance(new, dict)) or (isinstance(node, SequenceNode) and isinstance(new, list)):
        prefer = bool(node.flow_style) if node.value else None  # same kind: keep its style
    if place.kind == "value" and place.key is not None and place.name is not None:
        colon = doc.colon(place.key)
        key_col = doc.col(doc.span(place.key)[0])
        doc.edit(colon, end, render.after_key(place.name, new, key_col, prefer))
        return
    dash = doc.dash(node)
    text = render.item(new, doc.col(dash), place.name)
    doc.edit(dash, end, text[doc.col(dash) :])


def _ordered(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the file's key order: kept keys where they were, new ones at the end."""
    return {**{k: new[k] for k in old if k in new}, **{k: v for k, v in new.items() if k not in old}}


def _edit_flow_map(doc: _Doc, node: MappingNode, old: dict[str, Any], new: dict[str, Any], place: _Place) -> None:
    if old.keys() == new.keys():
        for k, (key, value) in zip(old, node.value, strict=True):
            _edit(doc, value, old[k], new[k], _Place("value", key, k, flow=True))
        return
    _replace(doc, node, _ordered(old, new), place)


def _edit_flow_seq(doc: _Doc, node: SequenceNode, old: list[Any], new: list[Any], place: _Place) -> None:
    if len(old) == len(new):
        for item, a, b in zip(node.value, old, new, strict=True):
            _edit(doc, item, a, b, _Place("item", name=place.name, flow=True))
        return
    _replace(doc, node, new, place)


def _edit_block_map(doc: _Doc, node: MappingNode, old: dict[str, Any], new: dict[str, Any], place: _Place) -> None:
    names = list(old)
    pairs: list[tuple[Node, Node]] = list(node.value)
    if not any(k in new for k in names):
        _replace(doc, node, new, place)
        return
    top = place.kind == "root"
    for name, (key, value) in zip(names, pairs, strict=True):
        if name in new:
            _edit(doc, value, old[name], new[name], _Place("value", key, name, top=top))

    def entry_end(i: int) -> int:
        return doc.after(doc.span(pairs[i][1])[1])

    # Removed keys: their lines, with a comment directly above and commented lines under them.
    covered: set[int] = set()
    for i, name in enumerate(names):
        if name in new or i in covered:
            continue
        key_start = doc.span(pairs[i][0])[0]
        line = doc.line_start(key_start)
        key_col = doc.col(key_start)
        if doc.text[line:key_start].strip():
            # The first key of a `- key: value` item: pull the next kept key up onto the dash line.
            nxt = next((j for j in range(i + 1, len(names)) if names[j] in new), None)
            if nxt is None:
                raise _Unsupported("no key left on the item's line")
            covered.update(range(i, nxt))
            doc.edit(key_start, doc.span(pairs[nxt][0])[0], "")
            continue
        doc.edit(doc.with_comments_above(line, key_col), doc.with_deeper_comments(entry_end(i), key_col), "")

    added = [k for k in new if k not in old]
    if not added:
        return
    key_col = doc.col(doc.span(pairs[0][0])[0])
    at_end = entry_end(len(pairs) - 1)
    groups: dict[int, list[str]] = {}
    for name in added:
        at = at_end
        if name == "position" and ("label" in old or "type" in old):
            at = entry_end(names.index("label" if "label" in old else "type"))
        elif top and "blocks" in old and name != "blocks":
            at = doc.line_start(doc.span(pairs[names.index("blocks")][0])[0])  # header keys before the blocks
        groups.setdefault(at, []).append(doc.render.entry(name, new[name], key_col))
    for at, lines in groups.items():
        doc.insert_lines(at, "\n".join(lines))


def _json_sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _item_range(doc: _Doc, item: Node) -> tuple[int, int]:
    """A block sequence item's lines: from its attached comment to commented lines under it."""
    dash = doc.dash(item)
    line = doc.line_start(dash)
    if doc.text[line:dash].strip():
        raise _Unsupported("an item on its parent's line")
    col = doc.col(dash)
    return doc.with_comments_above(line, col), doc.with_deeper_comments(doc.after(doc.span(item)[1]), col)


def _edit_block_seq(doc: _Doc, node: SequenceNode, old: list[Any], new: list[Any], place: _Place) -> None:
    items: list[Node] = list(node.value)
    dash_col = doc.col(doc.dash(items[0]))
    matcher = difflib.SequenceMatcher(a=[_json_sort_key(x) for x in old], b=[_json_sort_key(x) for x in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        for d in range(paired):
            _edit(doc, items[i1 + d], old[i1 + d], new[j1 + d], _Place("item", name=place.name))
        for i in range(i1 + paired, i2):
            doc.edit(*_item_range(doc, items[i]), "")
        if j1 + paired < j2:
            at = _item_range(doc, items[i2])[0] if i2 < len(items) else doc.after(doc.span(items[-1])[1])
            text = "\n".join(doc.render.item(v, dash_col, place.name) for v in new[j1 + paired : j2])
            doc.insert_lines(at, text)


def _longest_increasing(seq: list[int]) -> set[int]:
    """The values of one longest increasing subsequence (patience sorting)."""
    tails: list[int] = []
    tail_at: list[int] = []
    prev = [-1] * len(seq)
    for n, value in enumerate(seq):
        k = bisect_left(tails, value)
        if k == len(tails):
            tails.append(value)
            tail_at.append(n)
        else:
            tails[k] = value
            tail_at[k] = n
        prev[n] = tail_at[k - 1] if k else -1
    out: set[int] = set()
    n = tail_at[-1] if tail_at else -1
    while n >= 0:
        out.add(seq[n])
        n = prev[n]
    return out


def _match_blocks(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[int, int]:
    """new index -> old index: the same id, or a renamed block (same type, mostly the same keys)."""
    old_at = {b["id"]: i for i, b in enumerate(old)}
    pairs = {j: old_at[b["id"]] for j, b in enumerate(new) if b["id"] in old_at}
    new_ids = {b["id"] for b in new}
    free = [i for i, b in enumerate(old) if b["id"] not in new_ids]
    for j, block in enumerate(new):
        if j in pairs or not free:
            continue
        best: tuple[float, int] | None = None
        for i in free:
            if not _same(old[i].get("type"), block.get("type")):
                continue
            keys = (old[i].keys() | block.keys()) - {"id"}
            equal = sum(1 for k in keys if k in old[i] and k in block and _same(old[i][k], block[k]))
            score = equal / max(1, len(keys))
            if score >= 0.5 and (best is None or score > best[0]):
                best = (score, i)
        if best is not None:
            pairs[j] = best[1]
            free.remove(best[1])
    return pairs


def _split_gap(gap: str) -> tuple[str, str, str]:
    """The lines before a block: (detached lines, blank separator, comment lines attached to it)."""
    lines = gap.splitlines(keepends=True)
    c = len(lines)
    while c > 0 and lines[c - 1].lstrip().startswith("#"):
        c -= 1
    s = c
    while s > 0 and not lines[s - 1].strip():
        s -= 1
    return "".join(lines[:s]), "".join(lines[s:c]), "".join(lines[c:])


def _edit_blocks(doc: _Doc, node: SequenceNode, old: list[Any], new: list[Any], place: _Place) -> None:
    """The diagram's blocks: matched by id, each block's lines kept, moved or dropped whole."""
    items: list[Node] = list(node.value)
    old_ids = [b.get("id") if isinstance(b, dict) else None for b in old]
    new_ids = [b["id"] for b in new]
    if (
        not all(isinstance(i, str) for i in old_ids)
        or len(set(old_ids)) != len(old_ids)
        or len(set(new_ids)) != len(new_ids)
        or not all(isinstance(it, MappingNode) and not it.flow_style for it in items)
        or place.key is None
    ):
        _edit_block_seq(doc, node, old, new, place)
        return
    text = doc.text
    region_start = doc.line_end(doc.span(place.key)[1])
    bodies: list[tuple[int, int]] = []
    gaps: list[tuple[str, str, str]] = []
    prev_end = region_start
    for item in items:
        dash = doc.dash(item)
        line = doc.line_start(dash)
        if text[line:dash].strip() or line < prev_end:
            raise _Unsupported("an odd blocks layout")
        gap = text[prev_end:line]
        if any(g.strip() and not g.lstrip().startswith("#") for g in gap.splitlines()):
            raise _Unsupported("text between blocks")
        gaps.append(_split_gap(gap))
        end = doc.with_deeper_comments(doc.after(doc.span(item)[1]), doc.col(dash))
        bodies.append((line, end))
        prev_end = end
    region_end = prev_end
    dash_col = doc.col(doc.dash(items[0]))
    seps = Counter(g[1] for g in gaps[1:])
    default_sep = seps.most_common(1)[0][0] if seps else "\n"
    first_sep = gaps[0][1]

    pairs = _match_blocks(old, new)
    # Each kept block's own lines, edited in place.
    edited: dict[int, str] = {}
    outer = doc.edits
    for j, k in pairs.items():
        doc.edits = []
        _edit(doc, items[k], old[k], new[j], _Place("item", name="blocks"))
        edited[k] = _apply(text, doc.edits, *bodies[k])
    doc.edits = outer

    kept = _longest_increasing([pairs[j] for j in range(len(new)) if j in pairs])
    out: list[str] = []
    pre_done = 0
    for j, block in enumerate(new):
        i = pairs.get(j)
        if i is not None and i in kept:
            while pre_done <= i:  # detached comments stay where they were
                out.append(gaps[pre_done][0])
                pre_done += 1
        if out and not out[-1].endswith("\n") and out[-1]:
            out.append("\n")  # the old last block ended the file without a newline
        if i is None:
            sep = first_sep if j == 0 else default_sep
            out.append(sep + doc.render.item(block, dash_col, "blocks") + "\n")
            continue
        if j == 0:
            sep = first_sep
        elif i == 0 or (i not in kept and not gaps[i][1]):
            sep = default_sep
        else:
            sep = gaps[i][1]
        out.append(sep + gaps[i][2] + edited[i])
    out.extend(gaps[k][0] for k in range(pre_done, len(items)))
    region = "".join(out)
    if region != text[region_start:region_end]:
        doc.edit(region_start, region_end, region)


# ---------------------------------------------------------------- the ruamel fallback


def _rt_string(s: str) -> Any:
    if "\n" in s and _literal_ok(s):
        return LiteralScalarString(s)
    return s if _plain_ok(s, False) else DoubleQuotedScalarString(s)


def _rt_new(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        cm = CommentedMap()
        for k, v in value.items():
            cm[k] = _rt_new(v, k)
        return cm
    if isinstance(value, list):
        cs = CommentedSeq(_rt_new(v) for v in value)
        if key == "position" or not value:
            cs.fa.set_flow_style()
        return cs
    if isinstance(value, str):
        return _rt_string(value)
    return value


def _rt_update(current: Any, value: Any, key: str | None, top: bool, seen: set[int]) -> Any:
    """`value` reusing `current`'s containers and scalar styles where it can."""
    if isinstance(current, dict | list):
        if id(current) in seen:
            # An alias of a container already updated: keep it only if it still holds the same data.
            return current if _same(_plain(current, 1, [0]), value) else _rt_new(value, key)
        seen.add(id(current))
    if isinstance(current, CommentedMap) and isinstance(value, dict) and value:
        _rt_merge(current, value, False, seen)
        return current
    if isinstance(current, CommentedSeq) and isinstance(value, list) and value:
        if (
            top
            and key == "blocks"
            and all(isinstance(b, CommentedMap) for b in current)
            and [b.get("id") for b in current] != [b["id"] for b in value]
        ):
            # Reordered, added or removed blocks; else update them in place and keep their comments.
            by_id = {str(b.get("id")): b for b in current}
            blocks = [_rt_update(by_id[b["id"]], b, None, False, seen) if b["id"] in by_id else _rt_new(b) for b in value]
            del current[:]
            current.extend(blocks)
            return current
        for n in range(min(len(current), len(value))):
            current[n] = _rt_update(current[n], value[n], None, False, seen)
        del current[len(value) :]
        current.extend(_rt_new(v) for v in value[len(current) :])
        return current
    if _same(_plain(current, 1, [0]), value):
        return current
    if isinstance(value, str) and isinstance(current, DoubleQuotedScalarString) and "\n" not in value:
        return DoubleQuotedScalarString(value)
    return _rt_new(value, key)


def _rt_merge(cm: CommentedMap, new: dict[str, Any], top: bool, seen: set[int]) -> None:
    names = {_json_key(k): k for k in cm}
    for name, k in names.items():
        if name not in new:
            del cm[k]
    for name, value in new.items():
        if name in names:
            cm[names[name]] = _rt_update(cm[names[name]], value, name, top, seen)
        elif name == "position" and ("label" in cm or "type" in cm):
            cm.insert(list(cm).index("label" if "label" in cm else "type") + 1, name, _rt_new(value, name))
        else:
            cm[name] = _rt_new(value, name)


def _rt_quote_ambiguous(value: Any, depth: int = 0) -> None:
    # Plain strings that PyYAML (YAML 1.1) would read as something else, e.g. yes/on/1e3.
    if depth > MAX_DEPTH:
        return
    slots: Iterator[Any] = iter(value.keys()) if isinstance(value, dict) else iter(range(len(value)))
    for slot in list(slots):
        item = value[slot]
        if isinstance(item, dict | list):
            _rt_quote_ambiguous(item, depth + 1)
        elif isinstance(item, str) and not isinstance(item, ScalarString) and not _resolves_to_str(item):
            value[slot] = DoubleQuotedScalarString(item)


def _represent_float(representer: Any, value: float) -> Any:
    return representer.represent_scalar("tag:yaml.org,2002:float", _float_text(value))


def _ruamel_rewrite(text: str, new: dict[str, Any], indents: _Indents) -> str:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 1 << 16  # never fold long lines
    rt.indent(mapping=indents.mapping, sequence=indents.sequence, offset=indents.offset)
    rt.representer.add_representer(float, _represent_float)
    doc = rt.load(text) if text.strip() else None
    if not isinstance(doc, CommentedMap):
        doc = CommentedMap()
    _rt_merge(doc, new, True, set())
    for key in doc:
        if isinstance(doc[key], dict | list):
            _rt_quote_ambiguous(doc[key])
    buf = io.StringIO()
    rt.dump(doc, buf)
    return buf.getvalue()
