"""Vendors' answers kept on disk: a repeated request is answered from the cache, not the vendor (issue 39, item 3).

The key is the exact request a request block sends: vendor, method, URL and the headers that shape the answer, and
the body's bytes, hashed with SHA-256. Credentials never enter it: a header that carries one (`authorization`,
`x-api-key`, `x-goog-api-key`, any name with key, token, secret, auth, password or cookie in it) and such a query
parameter are left out of the key, and an entry whose bytes hold one of the request's credentials is not written.

Only a vendor's complete 2xx answer that its adapter could read is kept (`CacheNote.keep`, called by the request
path once it has read the reply): an error status, a cut or broken stream, a body past the cap or one that is not
the vendor's JSON are not. What is kept is the answer as it came over the wire (status, headers, the raw body, a
stream's events included), replayed through the same reading so that the stream parsers see the same bytes.

One file per entry, `<folder>/<2 hex>/<sha256>`, a JSON line (status, headers, the body's size and hash) then the
body, written to a temporary file and renamed over: concurrent writers of one entry each write a whole file, and a
reader sees one whole file or none. A file that does not check out (cut, hand-edited) is a miss.

Only request blocks' vendor calls go through the cache when it is on (`Services.response_cache`), never an
HttpRequest's calls (they may change things on the far side) nor the simulator's (`--offline` is free already).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

__all__ = ["CACHE_EXTENSION", "DEFAULT_FOLDER", "CacheNote", "CachingClient", "ResponseCache", "default_folder",
           "open_cache"]

DEFAULT_FOLDER = Path(".diagrama") / "cache"
"""Where `diagrama eval` keeps its cache, under the eval file's own folder (`default_folder`)."""
CACHE_EXTENSION = "diagrama.cache"
"""The httpx response extension a CachingClient sets: the response's CacheNote."""
_LOOKED_UP = "diagrama.cache.lookup"
"""The httpx request extension `CachingClient.kept` leaves for `send`: (key, credentials, the entry or None)."""
_FORMAT = 1
_CREDENTIAL_WORDS = ("key", "token", "secret", "auth", "password", "cookie", "signature")
_NOT_KEYED = frozenset({"host", "user-agent", "accept-encoding", "connection", "content-length"})
"""Headers that do not shape the answer (the host is in the URL; the rest is transport)."""
_NOT_KEPT = frozenset({"set-cookie", "set-cookie2"})
"""Response headers an entry leaves out."""


def _is_credential(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _CREDENTIAL_WORDS)


@dataclass(frozen=True, slots=True)
class Entry:
    """One kept answer: its status, headers and raw body, as the vendor sent them."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


def open_cache(path: str | os.PathLike[str]) -> ResponseCache:
    """The cache in the folder `path` (made when missing)."""
    return ResponseCache(Path(path))


def default_folder(beside: str | os.PathLike[str]) -> Path:
    """`diagrama eval`'s cache folder for the eval file `beside`: `.diagrama/cache` in that file's folder."""
    return Path(beside).resolve().parent / DEFAULT_FOLDER


class ResponseCache:
    """Answers kept in a folder, one file each; `hits`, `misses` and `stored` count this process's use."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self.stored = 0

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.folder)!r})"

    @staticmethod
    def key(vendor: str, request: httpx.Request) -> tuple[str, list[str]]:
        """The request's key (hex SHA-256) and the credentials it carries (which an entry must not hold)."""
        credentials: list[str] = []
        headers = []
        for name, value in request.headers.multi_items():
            lowered = name.lower()
            if _is_credential(lowered):
                credentials += [value, value.partition(" ")[2]] if " " in value else [value]
            elif lowered not in _NOT_KEYED:
                headers.append((lowered, value))
        url = request.url
        params = []
        for name, value in url.params.multi_items():
            if _is_credential(name):
                credentials.append(value)
            else:
                params.append((name, value))
        if url.userinfo:
            credentials += [part for part in url.userinfo.decode("utf-8", "replace").split(":") if part]
        plain = url.copy_with(userinfo=b"", params=params)
        head = orjson.dumps({"format": _FORMAT, "vendor": vendor, "method": request.method, "url": str(plain),
                             "headers": sorted(headers)})
        digest = hashlib.sha256(head + b"\n" + request.content).hexdigest()
        return digest, [c for c in credentials if len(c) >= 4]

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, key: str) -> Entry | None:
        """The entry kept under `key`, or None (none, or a file that does not check out)."""
        try:
            data = self._path(key).read_bytes()
        except OSError:
            return None
        head, newline, body = data.partition(b"\n")
        try:
            meta = orjson.loads(head)
            if not newline or meta.get("format") != _FORMAT or meta.get("size") != len(body) \
                    or meta.get("sha256") != hashlib.sha256(body).hexdigest():
                return None
            return Entry(int(meta["status"]), [(str(k), str(v)) for k, v in meta["headers"]], body)
        except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, entry: Entry, credentials: list[str]) -> bool:
        """Keep `entry` under `key`, atomically; False (nothing written) when its bytes hold one of `credentials`."""
        head = orjson.dumps({"format": _FORMAT, "status": entry.status, "headers": entry.headers,
                             "size": len(entry.body), "sha256": hashlib.sha256(entry.body).hexdigest()})
        data = head + b"\n" + entry.body
        if any(secret.encode() in data for secret in credentials):
            return False
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".partial-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self.stored += 1
        return True

    def clear(self) -> int:
        """Remove every entry; how many there were."""
        count = sum(1 for path in self.folder.glob("??/*") if not path.name.startswith("."))
        for sub in self.folder.glob("??"):
            if sub.is_dir():
                shutil.rmtree(sub, ignore_errors=True)
        return count


class CacheNote:
    """What a response says of the cache: `cached` (answered from it), and `keep()`, which stores a missed answer
    once the request path has read it whole and found it good."""

    __slots__ = ("_cache", "_credentials", "_key", "_recording", "_response", "cached")

    def __init__(self, cache: ResponseCache, key: str, credentials: list[str], response: httpx.Response | None,
                 recording: _Recording | None) -> None:
        self._cache, self._key, self._credentials = cache, key, credentials
        self._response, self._recording = response, recording
        self.cached = response is None

    def keep(self) -> None:
        response, recording = self._response, self._recording
        if response is None or recording is None or not recording.complete:
            return
        if not 200 <= response.status_code < 300:
            return
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _NOT_KEPT]
        if recording.decoded:  # a stand-in's response, read when it was made: its content is already decoded
            headers = [(k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")]
        self._cache.put(self._key, Entry(response.status_code, headers, b"".join(recording.chunks)),
                        self._credentials)
        self._recording = None  # kept once


class _Recording(httpx.AsyncByteStream):
    """The response's raw bytes as they are read, kept; `complete` once read to the end."""

    def __init__(self, response: httpx.Response) -> None:
        self.inner = response.stream
        self.chunks: list[bytes] = []
        self.complete = False
        self.decoded = response.is_stream_consumed
        if self.decoded:  # the reader takes `content` and never iterates
            self.chunks.append(response.content)
            self.complete = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert isinstance(self.inner, httpx.AsyncByteStream)
        async for chunk in self.inner:
            self.chunks.append(chunk)
            yield chunk
        self.complete = True

    async def aclose(self) -> None:
        if isinstance(self.inner, httpx.AsyncByteStream):
            await self.inner.aclose()


class _Replay(httpx.AsyncByteStream):
    def __init__(self, body: bytes) -> None:
        self.body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.body:
            yield self.body


class CachingClient(httpx.AsyncClient):
    """A vendor's pooled client that answers from `cache` what it has kept, and notes each answer it gets for it."""

    def __init__(self, cache: ResponseCache, vendor: str, **options: Any) -> None:
        super().__init__(**options)
        self.cache, self.vendor = cache, vendor

    def kept(self, request: httpx.Request) -> bool:
        """Whether the cache holds the answer to `request` (then `send` replays it without looking again): the
        request path takes no vendor slot (`--rpm`, `--max-concurrent`) for it."""
        key, credentials = self.cache.key(self.vendor, request)
        entry = self.cache.get(key)
        request.extensions = {**request.extensions, _LOOKED_UP: (key, credentials, entry)}
        return entry is not None

    async def send(self, request: httpx.Request, **options: Any) -> httpx.Response:
        cache = self.cache
        looked_up = request.extensions.get(_LOOKED_UP)
        if looked_up is not None:
            key, credentials, entry = looked_up
        else:
            key, credentials = cache.key(self.vendor, request)
            entry = cache.get(key)
        if entry is not None:
            cache.hits += 1
            note = CacheNote(cache, key, credentials, None, None)
            return httpx.Response(entry.status, headers=entry.headers, stream=_Replay(entry.body), request=request,
                                  extensions={CACHE_EXTENSION: note})
        cache.misses += 1
        response = await super().send(request, **options)
        recording = _Recording(response) if 200 <= response.status_code < 300 else None
        if recording is not None and not recording.decoded:
            response.stream = recording
        response.extensions = {**response.extensions,
                               CACHE_EXTENSION: CacheNote(cache, key, credentials, response, recording)}
        return response
