"""Where every value's text is: the scanned file, its line geometry, and the edits queued against it.

The scan records each node's content span and learns the file's indentation and per-key
flow or block style; edits are (start, end, order, text) spans spliced in one pass at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.web.yaml_edit.checks import MAX_DEPTH, EditError, Unsupported
from engine.web.yaml_edit.render import Indents, Renderer


@dataclass(frozen=True)
class Place:
    """Where a node sits: a mapping value (with its key), a sequence item, or the root."""

    kind: str  # "value", "item" or "root"
    key: Node | None = None
    name: str | None = None  # the key's text, or for items the key of their sequence
    flow: bool = False  # inside a flow collection
    top: bool = False  # a value of the root mapping


@dataclass
class Doc:
    text: str
    render: Renderer
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
            raise Unsupported("no ':' after the key")
        return i

    def dash(self, item: Node) -> int:
        i = self.span(item)[0] - 1
        while i >= 0 and self.text[i] in " \t\n":
            i -= 1
        if i < 0 or self.text[i] != "-":
            raise Unsupported("no '-' before the item")
        return i

    def edit(self, start: int, end: int, text: str) -> None:
        self.edits.append((start, end, len(self.edits), text))

    def insert_lines(self, at: int, lines: str) -> None:
        """Insert whole lines (no final newline in `lines`) at a line start."""
        if at == len(self.text) and self.text and not self.text.endswith("\n"):
            lines = "\n" + lines
        self.edit(at, at, lines + "\n")


def apply_edits(text: str, edits: list[tuple[int, int, int, str]], lo: int = 0, hi: int | None = None) -> str:
    """Splice non-overlapping edits into text[lo:hi]."""
    hi = len(text) if hi is None else hi
    out: list[str] = []
    pos = lo
    for start, end, _, repl in sorted(edits):
        if start < pos or end > hi:
            raise Unsupported("overlapping edits")
        out.append(text[pos:start])
        out.append(repl)
        pos = end
    out.append(text[pos:hi])
    return "".join(out)


def scan(doc: Doc, node: Node, depth: int, seen: set[int], indents: Indents, found: set[str]) -> None:
    """Record every node's content span; learn the file's indentation and per-key styles."""
    if depth > MAX_DEPTH:
        raise EditError("too deeply nested")
    if id(node) in seen:
        raise Unsupported("a shared node")  # compose builds each node once; a text edit must touch one place
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
                raise Unsupported("complex or merge keys")
            scan(doc, key, depth + 1, seen, indents, found)
            scan(doc, value, depth + 1, seen, indents, found)
            if _empty_scalar(value):
                at = doc.colon(key) + 1  # an empty value has no text: its place is right after the colon
                doc.spans[id(value)] = (at, at)
            _learn(doc, key, value, indents, found)
        children = [v for _, v in node.value]
    elif isinstance(node, SequenceNode):
        for item in node.value:
            scan(doc, item, depth + 1, seen, indents, found)
            if _empty_scalar(item):
                if node.flow_style:
                    raise Unsupported("empty flow item")
                at = doc.dash(item) + 1
                doc.spans[id(item)] = (at, at)
        children = list(node.value)
    else:  # pragma: no cover - the composer builds only these three
        raise Unsupported(type(node).__name__)
    if not node.flow_style:
        if not children:
            raise Unsupported("empty block collection")
        end = doc.span(children[-1])[1]
    doc.spans[id(node)] = (start, end)


def _empty_scalar(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.style is None and node.value == ""


def _learn(doc: Doc, key: Node, value: Node, indents: Indents, found: set[str]) -> None:
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
        except Unsupported:
            return
        if dash_col >= key_col and first_col >= dash_col + 2:
            indents.offset = dash_col - key_col
            indents.sequence = first_col - key_col
            found.add("sequence")
