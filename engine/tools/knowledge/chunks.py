"""Sections cut into passages (chunks) of at most `size` characters, `overlap` of them repeated in the next.

A cut falls at a paragraph break where one lies in the second half of the window, else at a sentence's
end, else between words; only a word longer than the window is cut inside. Each chunk keeps its source,
the line it starts on (text) or its page (PDF), and its section's metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.tools.knowledge.documents import Section

__all__ = ["Chunk", "chunk_sections", "split_text"]

_SENTENCE_END = re.compile(r"[.!?;:…。](?:[\"')\]]*)\s")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One passage of a document, as the index stores it."""

    text: str
    source: str
    line: int | None = None
    page: int | None = None
    metadata: dict[str, Any] = field(default_factory=lambda: {})


def _cut(text: str, start: int, end: int) -> int:
    """Where the window text[start:end] ends: the best boundary in its second half (end itself if none)."""
    floor = start + (end - start) // 2
    paragraph = text.rfind("\n\n", floor, end)
    if paragraph >= 0:
        return paragraph + 2
    sentence = None
    for found in _SENTENCE_END.finditer(text, floor, end):
        sentence = found.end()
    if sentence is not None:
        return sentence
    line = text.rfind("\n", floor, end)
    if line >= 0:
        return line + 1
    space = text.rfind(" ", floor, end)
    return space + 1 if space >= 0 else end


def _next_start(text: str, end: int, overlap: int, start: int) -> int:
    """Where the next window starts: within the last `overlap` characters before `end`, at the first line or sentence
    that begins there, else at the first word."""
    if overlap <= 0:
        return end
    back = max(end - overlap, start + 1)
    if back > 0 and not text[back - 1].isspace():
        limit = len(text[:end].rstrip())  # a sentence that begins only after the window's last words repeats nothing
        sentence = _SENTENCE_END.search(text, back, limit)
        newline = text.find("\n", back, limit)
        found = min((at for at in (sentence.end() if sentence else -1, newline + 1 if newline >= 0 else -1)
                     if 0 <= at < limit), default=-1)
        if found < 0:
            space = text.find(" ", back, limit)
            found = space + 1 if space >= 0 else end
        back = found
    return back


def split_text(text: str, size: int, overlap: int) -> list[tuple[int, str]]:
    """The windows of `text`: (offset of its first character, its text stripped), none empty."""
    windows: list[tuple[int, str]] = []
    start, length = 0, len(text)
    while start < length:
        end = min(start + size, length)
        if end < length:
            end = _cut(text, start, end)
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            windows.append((start + (len(piece) - len(piece.lstrip())), stripped))
        if end >= length:
            break
        start = _next_start(text, end, overlap, start)
    return windows


def chunk_sections(sections: Iterable[Section], source: str, size: int, overlap: int) -> list[Chunk]:
    """Each section's passages in order: a row whole, other text cut into windows."""
    chunks: list[Chunk] = []
    for section in sections:
        if section.whole or len(section.text) <= size:
            text = section.text.strip()
            if text:
                chunks.append(Chunk(text, source, section.line, section.page, section.metadata))
            continue
        lines_before, counted = 0, 0
        for offset, text in split_text(section.text, size, overlap):
            lines_before += section.text.count("\n", counted, offset)
            counted = offset
            line = section.line + lines_before if section.line is not None else None
            chunks.append(Chunk(text, source, line, section.page, section.metadata))
    return chunks
