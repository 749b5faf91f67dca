"""Keys scrubbed from everything that leaves a run: trace lines, results, the store, files, consoles.

One `Redactor` per run, built once from the run's secrets (environment values that hold
keys, and those a diagram lists in `secrets:`: `Services.secrets()`), replaces with `[REDACTED]`:
each secret, also as it reads escaped inside JSON text and percent-encoded in a URL (a password
with a quote or a slash), the keys of the three vendors that nobody registered, and the masked
forms vendors print of a key (`sk-ant-...3456`, `gsk_ab****wxyz`). It leaves everything else as it was.
The base64 `data` of an image or document part is scrubbed of the secrets alone: a vendor key's
shape (`AIza` and ten letters) turns up by chance in a few percent of megabyte-sized images, and
scrubbing it there would break the file.
"""

from __future__ import annotations

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

__all__ = ["REDACTED", "Redactor", "redact_text", "redact_value"]

REDACTED = "[REDACTED]"
_ELLIPSIS = "…".encode()
_MIN_SECRET = 4  # shorter values are no keys, and scrubbing them would eat ordinary words
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

    __slots__ = ("_byte_secrets", "_bytes_to_scrub", "_secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        unique = {form for s in secrets if s and len(s) >= _MIN_SECRET for form in _forms(s)}
        # Longest first, so a key that contains another is replaced whole.
        self._secrets = tuple(sorted(unique, key=len, reverse=True))
        self._byte_secrets = tuple(s.encode() for s in self._secrets)
        # Everything whose presence in a batch means `encoded` may change it: a secret, a vendor key's
        # prefix, and with secrets, a mask (which may hide one). Found in one pass (Aho-Corasick, in Rust).
        clues = (*self._byte_secrets, *_BYTE_HINTS, *(_BYTE_MASKS if self._secrets else ()))
        self._bytes_to_scrub = _finder(clues)

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets)"

    # -- text ----------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """`text` with every secret, vendor key and masked key replaced by [REDACTED]."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
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
        for secret in self._byte_secrets:
            if secret in data:
                data = data.replace(secret, _REDACTED_BYTES)
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
    """A secret as it may be written out: itself; percent-encoded in a URL's path or query (httpx encodes a query
    value as `quote_plus` does); and each of those escaped inside JSON text, up to three times over (a body that
    quotes the secret in JSON, kept as text in an output, written in a trace line)."""
    forms = {secret}
    if not secret.isascii() or not all(c.isalnum() or c in "-._~" for c in secret):
        forms |= {quote(secret, safe=""), quote(secret), quote_plus(secret)}
    if any(c in secret for c in '"\\') or not secret.isprintable() or not secret.isascii():
        layer = set(forms)
        for _ in range(3):
            layer = {escaped for form in layer for escaped in _escaped(form)} - forms
            forms |= layer
    return forms


_REDACTED_BYTES = REDACTED.encode()
_KEY_TEXT = re.compile(_KEY)
_KEY_BYTES = re.compile(_KEY.encode())
_MASKED_KEY_TEXT = re.compile(_MASKED_KEY)
_MASKED_KEY_BYTES = re.compile(_MASKED_KEY.encode())
_MASKED_TEXT = re.compile(_MASKED)
_MASKED_BYTES = re.compile(_MASKED.encode())


_BYTE_HINTS = tuple(hint.encode() for hint in _HINTS)
_BYTE_MASKS = (b"**", b"..", _ELLIPSIS)


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
