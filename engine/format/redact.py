"""Keys scrubbed from everything that leaves a run: trace lines, results, the store, files, consoles.

One `Redactor` per run, built once from the run's secrets (environment values that hold
keys, and those a diagram lists in `secrets:`: `Services.secrets()`), replaces with `[REDACTED]`:
each secret in every spelling it can take on the wire — escaped inside JSON text; percent-encoded in a URL,
whole or in part (httpx leaves `!` and `+` as they are in a path), in either case of hex digits; with `+` for
a space (a form body); base64-encoded, as in a Basic `Authorization` header that a URL's `user:password@`
becomes — the keys of the three vendors that nobody registered, and the masked forms vendors print of a key
(`sk-ant-...3456`, `gsk_ab****wxyz`). It leaves everything else as it was. A secret shorter than
`MIN_SECRET_LENGTH` could not be told from ordinary words: a diagram's are refused where they are read.
The base64 `data` of an image or document part is scrubbed of the secrets alone: a vendor key's
shape (`AIza` and ten letters) turns up by chance in a few percent of megabyte-sized images, and
scrubbing it there would break the file.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

import orjson
from ahocorasick_rs import BytesAhoCorasick
from pydantic import BaseModel

from engine.format.tables import DataTable

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "Redactor", "redact_text", "redact_value"]

REDACTED = "[REDACTED]"
_ELLIPSIS = "…".encode()
MIN_SECRET_LENGTH = 4
"""Shorter values are no keys, and scrubbing them would eat ordinary words: they are not redacted."""
_MIN_BASE64 = 8  # a secret's base64 is scrubbed where at least this many of its characters are its own alone
# Keys of the three vendors, caught even where nobody registered them as secrets.
_KEY = r"sk-ant-[A-Za-z0-9_\-]{6,}|gsk_[A-Za-z0-9]{6,}|AIza[0-9A-Za-z_\-]{10,}"
# A vendor's key with its middle masked, registered or not ("sk-ant-api03-...AbCd").
_MASKED_KEY = r"(?:sk-ant-|gsk_|AIza)[A-Za-z0-9_\-]*(?:[*.]{2,}|…)+[A-Za-z0-9_\-]{2,}"
# Any masked token: head, a run of `*`, `.` or `…`, tail; it is a key's when both ends are the key's.
_MASKED = r"(?<![A-Za-z0-9_\-])([A-Za-z0-9_\-]*)((?:[*.]{2,}|…)+)([A-Za-z0-9_\-]{2,})(?![A-Za-z0-9_\-])"
_HINTS = ("sk-ant-", "gsk_", "AIza")
_FILE_PARTS = ("image", "document")


class Redactor:
    """Scrubs text, bytes and values of one set of secrets; cheap to call on text without any.

    The secrets stay inside (no repr shows them); hand a Redactor around, not the keys.
    """

    __slots__ = ("_byte_secrets", "_bytes_to_scrub", "_originals", "_secrets", "_spelled_bytes", "_spelled_text")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        originals = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
        self._originals = tuple(originals)
        # Longest first, so a key that contains another is replaced whole.
        self._secrets = tuple(sorted({form for s in originals for form in _forms(s)}, key=len, reverse=True))
        self._byte_secrets = tuple(s.encode() for s in self._secrets)
        self._spelled_text, self._spelled_bytes = _spelled(tuple(sorted(originals)))
        # Everything whose presence in a batch means `encoded` may change it: a secret, a vendor key's prefix, and
        # with secrets, a mask (which may hide one), a Basic credential and, where one could be spelled so, a percent
        # sign. Found in one pass (Aho-Corasick, in Rust).
        clues = (*self._byte_secrets, *_BYTE_HINTS, *(_BYTE_MASKS + _BYTE_BASIC if self._secrets else ()),
                 *((b"%",) if self._spelled_bytes is not None else ()))
        self._bytes_to_scrub = _finder(clues)

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets)"

    # -- text ----------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """`text` with every secret, vendor key and masked key replaced by [REDACTED]."""
        if self._originals and ("asic" in text or "ASIC" in text):  # first: a secret's base64 may be in one
            text = _BASIC_TEXT.sub(self._basic_text, text)
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if self._spelled_text is not None and "%" in text:
            text = self._spelled_text.sub(REDACTED, text)
        # Each `in` is a pass over the text: a masked form is looked for only where one could be a key's.
        hinted = "sk-ant-" in text or "gsk_" in text or ("z" in text and "AIza" in text)
        if (self._secrets or hinted) and ("**" in text or ".." in text or "…" in text):
            if self._secrets:
                text = _MASKED_TEXT.sub(self._masked_text, text)
            if hinted:
                text = _MASKED_KEY_TEXT.sub(REDACTED, text)
        if hinted:
            text = _KEY_TEXT.sub(REDACTED, text)
        return text

    def encoded(self, data: bytes | bytearray) -> bytes | bytearray:
        """The same for UTF-8 bytes (a trace batch): each secret's bytes, the vendor keys, the masked forms.

        `data` itself when nothing in it needs scrubbing (nearly always): one pass over it tells, about
        thirty times faster than the `in` tests below (each a pass of its own, 0.3–0.5 ns a byte).
        """
        if not self._bytes_to_scrub.find_matches_as_indexes(data):
            return data
        data = bytes(data)
        if self._originals and (b"asic" in data or b"ASIC" in data):
            data = _BASIC_BYTES.sub(self._basic_bytes, data)
        for secret in self._byte_secrets:
            if secret in data:
                data = data.replace(secret, _REDACTED_BYTES)
        if self._spelled_bytes is not None and b"%" in data:
            data = self._spelled_bytes.sub(_REDACTED_BYTES, data)
        # The masked forms are looked for only where one could be a key's (a secret, a vendor key's prefix).
        hinted = b"sk-ant-" in data or b"gsk_" in data or b"AIza" in data
        if (self._secrets or hinted) and (b"**" in data or b".." in data or _ELLIPSIS in data):
            if self._secrets:
                data = _MASKED_BYTES.sub(self._masked_bytes, data)
            if hinted:
                data = _MASKED_KEY_BYTES.sub(_REDACTED_BYTES, data)
        if hinted:
            data = _KEY_BYTES.sub(_REDACTED_BYTES, data)
        return data

    def _is_masked_secret(self, head: str, mask: str, tail: str) -> bool:
        """Whether head…tail is a secret as vendors print it: its first and last characters around a mask."""
        if head:
            if len(head) < 3 or len(head) + len(tail) < 6:
                return False
        elif not (mask.startswith("****") and len(tail) >= 4):
            return False  # with no head, only "****3456" (the last characters shown) is a key's form
        return any(len(secret) > len(head) + len(tail) and secret.startswith(head) and secret.endswith(tail)
                   for secret in self._secrets)

    def _holds_secret(self, credential: bytes) -> bool:
        """Whether a Basic credential's base64 decodes to text that holds a secret (`user:password`)."""
        padded = credential + b"=" * (-len(credential) % 4)
        try:
            decoded = (base64.urlsafe_b64decode if b"-" in padded or b"_" in padded else base64.b64decode)(padded)
        except ValueError:
            return False
        text = decoded.decode("utf-8", "replace")
        return any(secret in text for secret in self._originals)

    def _basic_text(self, match: re.Match[str]) -> str:
        return match.group(1) + REDACTED if self._holds_secret(match.group(2).encode()) else match.group(0)

    def _basic_bytes(self, match: re.Match[bytes]) -> bytes:
        return match.group(1) + _REDACTED_BYTES if self._holds_secret(match.group(2)) else match.group(0)

    def _masked_text(self, match: re.Match[str]) -> str:
        head, mask, tail = match.groups()
        return REDACTED if self._is_masked_secret(head, mask, tail) else match.group(0)

    def _masked_bytes(self, match: re.Match[bytes]) -> bytes:
        head, mask, tail = (part.decode() for part in match.groups())
        return _REDACTED_BYTES if self._is_masked_secret(head, mask, tail) else match.group(0)

    # -- values --------------------------------------------------------------------------------
    def value(self, value: Any) -> Any:
        """`value` with its strings scrubbed (mapping keys too); containers are copied only where something changed.

        Mappings, lists, tuples, sets and data tables keep their type; a model or another
        object that holds a key becomes its plain JSON form, scrubbed.
        """
        return self._value(value, 0)

    def _value(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self.text(value)
        if depth > 200:  # deeper than any value a template builds: a cycle, most likely
            return value
        if isinstance(value, Mapping):
            if value.get("type") in _FILE_PARTS and isinstance(value.get("data"), str):
                return self._file_part(value, depth)
            items = [(self._value(k, depth + 1), self._value(v, depth + 1)) for k, v in value.items()]
            if all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(items, value.items(), strict=True)):
                return value
            return dict(items)
        if isinstance(value, (list, tuple, set, frozenset)):
            scrubbed = [self._value(item, depth + 1) for item in value]
            if all(new is old for new, old in zip(scrubbed, value, strict=True)):
                return value
            if isinstance(value, list):
                return scrubbed
            try:
                return type(value)(scrubbed)
            except TypeError:  # a named tuple, which takes its fields one by one
                return scrubbed
        if isinstance(value, DataTable):
            columns = self._value(value.columns, depth + 1)
            rows = self._value(value.rows, depth + 1)
            if columns is value.columns and rows is value.rows:
                return value
            return DataTable(columns, rows)
        return self._other(value, depth)

    def _file_part(self, part: Mapping[str, Any], depth: int) -> Any:
        """An image or document part: its other fields as any value's, its base64 `data` scrubbed of the secrets only."""
        data = part["data"]
        scrubbed = data
        for secret in self._secrets:
            if secret in scrubbed:
                scrubbed = scrubbed.replace(secret, REDACTED)
        items = [(key, scrubbed if key == "data" else self._value(item, depth + 1)) for key, item in part.items()]
        if all(new is part[key] for key, new in items):
            return part
        return dict(items)

    def _other(self, value: Any, depth: int) -> Any:
        from engine.format.jsonout import plain

        if isinstance(value, BaseModel):
            dumped: Any = value.model_dump(mode="json")
        else:
            try:
                dumped = plain(value)
            except (TypeError, ValueError):
                dumped = repr(value)
        scrubbed = self._value(dumped, depth + 1)
        return value if scrubbed is dumped or scrubbed == dumped else scrubbed


def _escaped(text: str) -> set[str]:
    """`text` as it reads inside JSON text: orjson's form and `json`'s ASCII-only one."""
    return {orjson.dumps(text)[1:-1].decode(), json.dumps(text)[1:-1]}


def _forms(secret: str) -> set[str]:
    """A secret as it may be written out whole: itself; percent-encoded in a URL's path or query (httpx encodes a
    query value as `quote_plus` does), with `+` for a space (a form body); each of those escaped inside JSON text, up
    to three times over (a body that quotes the secret in JSON, kept as text in an output, written in a trace line);
    and its base64 (`_base64_cores`). Spellings that mix these, character by character, are `_spelled`'s."""
    forms = {secret}
    if not _unreserved(secret):
        forms |= {quote(secret, safe=""), quote(secret), quote_plus(secret), _httpx_path(secret)}
    if " " in secret:
        forms.add(secret.replace(" ", "+"))
    if any(c in secret for c in '"\\') or not secret.isprintable() or not secret.isascii():
        layer = set(forms)
        for _ in range(3):
            layer = {escaped for form in layer for escaped in _escaped(form)} - forms
            forms |= layer
    return forms | _base64_cores(secret)


def _unreserved(text: str) -> bool:
    """Whether no URL encoder would change `text` (RFC 3986's unreserved characters alone)."""
    return text.isascii() and all(c.isalnum() or c in "-._~" for c in text)


def _httpx_path(text: str) -> str:
    """`text` as httpx writes it in a URL's path: sub-delimiters, `:` and `@` stay as they are."""
    return quote(text, safe="!$&'()*+,;=:@")


def _base64_cores(secret: str) -> set[str]:
    """The characters of `secret`'s base64 that depend on its bytes alone, at each of the three alignments it can
    take in a longer value (`user:password` in a Basic credential), in both alphabets: a few characters at each end
    also hold their neighbours' bits. Cores shorter than _MIN_BASE64 are left out: they turn up by chance."""
    raw = secret.encode()
    cores = set()
    for before in range(3):
        start, end = -(-8 * before // 6), 8 * (before + len(raw)) // 6
        encoded = base64.b64encode(bytes(before) + raw).decode()[start:end]
        if len(encoded) >= _MIN_BASE64:
            cores |= {encoded, encoded.replace("+", "-").replace("/", "_")}
    return cores


def _percent(character: str) -> str:
    """A pattern for `character` percent-encoded, its hex digits in either case (`%C3%A9`, `%c3%a9`)."""
    return "".join("%" + "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in f"{byte:02X}")
                   for byte in character.encode())


@functools.lru_cache(maxsize=16)
def _spelled(secrets: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[bytes] | None]:
    """Patterns for the secrets an encoder would change, spelled character by character as an encoder may (as it
    is, percent-encoded in either case, `+` for a space, escaped in JSON), looked for where text holds a `%`: an
    encoder that encodes only some characters (httpx's path) or a value that mixes forms is caught whatever it did.
    Each character's spellings differ in their first character, so matching takes time linear in the text."""
    spellings = []
    for secret in sorted((s for s in secrets if not _unreserved(s)), key=len, reverse=True):
        pieces = []
        for character in secret:
            escaped = {character}
            for _ in range(3):  # escaped in JSON up to three times over, as `_forms` has it
                escaped |= {form for one in escaped for form in _escaped(one)}
            ways = {_percent(character)} | {re.escape(form) for form in escaped}
            if character == " ":
                ways.add(re.escape("+"))
            pieces.append("(?:" + "|".join(sorted(ways, key=len, reverse=True)) + ")")
        spellings.append("".join(pieces))
    if not spellings:
        return None, None
    pattern = "|".join(spellings)
    return re.compile(pattern), re.compile(pattern.encode())


_REDACTED_BYTES = REDACTED.encode()
_KEY_TEXT = re.compile(_KEY)
_KEY_BYTES = re.compile(_KEY.encode())
_MASKED_KEY_TEXT = re.compile(_MASKED_KEY)
_MASKED_KEY_BYTES = re.compile(_MASKED_KEY.encode())
_MASKED_TEXT = re.compile(_MASKED)
_MASKED_BYTES = re.compile(_MASKED.encode())


_BYTE_HINTS = tuple(hint.encode() for hint in _HINTS)
_BYTE_MASKS = (b"**", b"..", _ELLIPSIS)
_BYTE_BASIC = (b"Basic", b"basic", b"BASIC")
# A Basic credential (`Authorization: Basic dXNlcjpw…`): its base64 is decoded and looked into.
_BASIC = r"(?i)((?<![A-Za-z0-9])basic\s+)([A-Za-z0-9+/_\-]{4,}={0,2})"
_BASIC_TEXT = re.compile(_BASIC)
_BASIC_BYTES = re.compile(_BASIC.encode())


@functools.lru_cache(maxsize=16)
def _finder(clues: tuple[bytes, ...]) -> BytesAhoCorasick:
    """The automaton for one set of clues: built once a process (15–50 µs) for the runs that share their secrets."""
    return BytesAhoCorasick(list(clues))


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """`text` scrubbed of `secrets` (e.g. `Services().secrets()`) as the trace scrubs its lines."""
    return Redactor(secrets).text(text)


def redact_value(value: Any, secrets: Iterable[str]) -> Any:
    """`value` (a result, an event, a JSON body) with every string scrubbed of `secrets` and vendor keys."""
    return Redactor(secrets).value(value)
