"""A knowledge base's documents read into sections: text, Markdown, HTML, PDF, CSV and JSON Lines.

A section is text that chunking may cut but never joins with another: a Markdown or HTML heading's part,
a PDF page, a CSV or JSONL row (`whole`: one passage as it is). Each keeps the line (or page) it starts on
and its metadata (front matter, heading path, a row's columns). Chunking is chunks.py's; no index here.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import orjson
import yaml

__all__ = ["DocumentError", "Section", "read_document"]


class DocumentError(ValueError):
    """A document that cannot be read as its kind (a broken PDF, a JSONL line that is not JSON)."""


@dataclass(frozen=True, slots=True)
class Section:
    """Text that starts at `line` (or is `page` of a PDF), with its metadata."""

    text: str
    line: int | None = None
    page: int | None = None
    metadata: dict[str, Any] = field(default_factory=lambda: {})
    whole: bool = False
    """A row: one passage, never cut."""


def read_document(path: Path) -> list[Section]:
    """The sections of one file, by its suffix (a suffix not listed is read as text)."""
    reader = _READERS.get(path.suffix.lower(), _text)
    return reader(path)


def _decoded(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # a legacy export: every byte is some character, none is lost


def _text(path: Path) -> list[Section]:
    return [Section(_decoded(path).replace("\r\n", "\n"), line=1)]


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """YAML front matter as metadata (scalars and lists only), the text after it, and the line that text starts on."""
    if not text.startswith("---\n"):
        return {}, text, 1
    end = text.find("\n---", 4)
    if end < 0:
        return {}, text, 1
    try:
        found = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return {}, text, 1
    rest_at = text.find("\n", end + 4)
    rest = "" if rest_at < 0 else text[rest_at + 1:]
    consumed = text[: len(text) - len(rest)].count("\n")
    metadata = {str(key): _plain(value) for key, value in found.items()} if isinstance(found, dict) else {}
    return metadata, rest, consumed + 1


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)  # a date, a mapping: kept as text, so that the index stores JSON


def _markdown(path: Path) -> list[Section]:
    metadata, text, first = _front_matter(_decoded(path).replace("\r\n", "\n"))
    sections: list[Section] = []
    headings: list[tuple[int, str]] = []
    lines: list[str] = []
    start = first
    fenced = False

    def close() -> None:
        body = "\n".join(lines).strip("\n")
        if body and any(not _HEADING.match(line) for line in body.splitlines() if line.strip()):
            found = {**metadata, **({"headings": " > ".join(title for _, title in headings)} if headings else {})}
            sections.append(Section(body, line=start, metadata=found))

    for number, line in enumerate(text.split("\n"), start=first):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading is not None:
            close()
            level = len(heading.group(1))
            headings = [*(h for h in headings if h[0] < level), (level, heading.group(2))]
            lines, start = [], number
        lines.append(line)
    close()
    return sections


class _HtmlText(HTMLParser):
    """The visible text of a page, a section per heading; scripts, styles and the head left out."""

    _SKIPPED = frozenset({"script", "style", "noscript", "template", "head", "svg"})
    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "section", "article", "table", "ul", "ol", "blockquote", "pre",
                         "dd", "dt", "header", "footer", "main", "nav", "aside", "form"})
    _HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skipping = 0
        self.title: list[str] = []
        self.in_title = False
        self.sections: list[Section] = []
        self.parts: list[str] = []
        self.start = 1
        self.headings: list[tuple[int, str]] = []
        self.heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIPPED:
            self.skipping += 1
        elif tag == "title":
            self.in_title = True
        elif tag in self._HEADINGS and not self.skipping:
            self.end_section()
            self.start = self.getpos()[0]
            self.heading = []
        elif tag in self._BLOCKS:
            self.parts.append("\n\n" if tag == "p" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif tag == "title":
            self.in_title = False
        elif tag in self._HEADINGS and self.heading is not None:
            title = " ".join("".join(self.heading).split())
            level = int(tag[1])
            self.headings = [*(h for h in self.headings if h[0] < level), (level, title)]
            self.parts.append("\n\n")
            self.heading = None
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skipping:
            self.parts.append(data)
            if self.heading is not None:
                self.heading.append(data)

    def end_section(self) -> None:
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(" ".join(line.split()) for line in "".join(self.parts).split("\n")))
        text = text.strip()
        if text:
            metadata: dict[str, Any] = {"title": " ".join("".join(self.title).split())} if self.title else {}
            if self.headings:
                metadata["headings"] = " > ".join(title for _, title in self.headings)
            self.sections.append(Section(text, line=self.start, metadata=metadata))
        self.parts = []


def _html(path: Path) -> list[Section]:
    parser = _HtmlText()
    parser.feed(_decoded(path))
    parser.close()
    parser.end_section()
    return parser.sections


def _pdf(path: Path) -> list[Section]:
    from pypdf import PdfReader  # loaded for a knowledge base that holds PDFs
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError) as exc:
        raise DocumentError(f"not a readable PDF ({exc})") from exc
    return [Section(text.strip(), page=number) for number, text in enumerate(pages, start=1) if text.strip()]


def _row(record: dict[str, Any], line: int) -> Section:
    """A row as a passage: its `text` (or `content`) column when it has one, else each column as `name: value`."""
    metadata = {str(key): _plain(value) for key, value in record.items() if key is not None}
    for column in ("text", "content"):
        if isinstance(metadata.get(column), str):
            text = metadata.pop(column)
            return Section(text, line=line, metadata=metadata, whole=True)
    text = "\n".join(f"{key}: {value}" for key, value in metadata.items() if value not in (None, ""))
    return Section(text, line=line, metadata=metadata, whole=True)


def _csv(path: Path) -> list[Section]:
    from engine.format.tables import csv_dialect

    text = _decoded(path)
    rows = csv.DictReader(io.StringIO(text, newline=""), dialect=csv_dialect(text))
    sections = []
    for record in rows:
        # The reader's line_num is the line the row ends on; a row is one line but for quoted line breaks.
        section = _row(dict(record), rows.line_num)
        if section.text:
            sections.append(section)
    return sections


def _jsonl(path: Path) -> list[Section]:
    sections = []
    for number, line in enumerate(_decoded(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise DocumentError(f"line {number} is not JSON ({exc})") from None
        section = _row(value if isinstance(value, dict) else {"text": str(value)}, number)
        if section.text:
            sections.append(section)
    return sections


_READERS: dict[str, Callable[[Path], list[Section]]] = {
    ".md": _markdown, ".markdown": _markdown, ".html": _html, ".htm": _html, ".pdf": _pdf, ".csv": _csv,
    ".jsonl": _jsonl, ".ndjson": _jsonl,
}
