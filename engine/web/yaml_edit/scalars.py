"""Scalar text: how a value is written so that it reads back as itself, and means the same to YAML 1.1.

Plain where the dialect (engine.format.dialect) and YAML 1.1 both read it as that text, else single or
double quoted, or a `|` block for multi-line text; numbers spelled so that YAML 1.1 reads them alike,
so that nothing the studio writes is warned about as ambiguous.
"""

from __future__ import annotations

from typing import Any

from engine.format.dialect import number_text, reads_as_text

# A plain scalar may not start with these (YAML indicators, or quotes that would change the style).
_PLAIN_FIRST_BAD = set("-?:,[]{}#&*!|>'\"%@`")
_FLOW_BAD = set(",[]{}")
# Line breaks to YAML 1.1 (PyYAML) or a BOM: never written raw outside double quotes.
_BREAKS = {"\x85", "\u2028", "\u2029", "\ufeff"}
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}


def _printable(ch: str) -> bool:
    """Characters both parsers accept raw in any scalar style (tabs and breaks excluded)."""
    o = ord(ch)
    if ch in _BREAKS:
        return False
    return 0x20 <= o <= 0x7E or 0xA0 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or o >= 0x10000


# Keys are text to diagrama whatever they say; `x:`/`y:` keys (coordinates) stay plain though the YAML 1.1 spec
# lists y and n among its booleans, as no YAML 1.1 library (PyYAML, SnakeYAML) reads keys that way.
_PLAIN_KEYS = frozenset("yYnN")


def plain_ok(s: str, flow: bool, *, key: bool = False) -> bool:
    if not s or s != s.strip() or s[0] in _PLAIN_FIRST_BAD or s.startswith("..."):
        return False
    # Stricter than YAML on purpose: templates and anything with ':' or '#' are quoted.
    if ":" in s or "#" in s or "{{" in s or "{%" in s or len(s) > 1000:
        return False
    if flow and any(c in _FLOW_BAD for c in s):
        return False
    return all(_printable(c) for c in s) and (reads_as_text(s) or (key and s in _PLAIN_KEYS))


def _single_ok(s: str) -> bool:
    return all(_printable(c) for c in s)


def literal_ok(s: str) -> bool:
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


def dq(s: str) -> str:
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


def scalar(value: Any, *, flow: bool, style: str | None = None, block_col: int | None = None) -> str:
    """A scalar's YAML text; `style` is the replaced scalar's, `block_col` allows a `|` block there."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_text(value)
    s: str = value
    if "\n" in s and not flow and block_col is not None and literal_ok(s):
        return _literal(s, block_col)
    if style == "'" and _single_ok(s):
        return "'" + s.replace("'", "''") + "'"
    if style == '"':
        return dq(s)
    return s if plain_ok(s, flow) else dq(s)
