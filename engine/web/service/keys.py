"""Who may call the robots: bearer keys, kept only as SHA-256 digests and compared in constant time, each with an id
for logs (never the key) and a requests-per-minute limit.

Keys come from `DIAGRAMA_API_KEYS` (`id=key,id=key`, or bare keys, whose id is taken from their digest) and from
a keys file, which holds digests only (`ID sha256:HEX [rpm=N] [admin]` a line; `diagrama api-key ID` makes a key and
its line). An admin key sees every caller's runs and sessions (engine.web.service.tenants); `--admin-key ID` and
`DIAGRAMA_API_ADMINS` (ids, comma-separated) make a key of either source one. A plain SHA-256 suffices for keys
made of 32 random bytes: nothing shorter is accepted from the file, and a key is never guessed from its digest. The
limit is a token bucket per key holding a minute's worth of requests. The keys file is read again while the server
runs (engine.web.service.rotation).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from engine.errors import UsageError

__all__ = ["ADMINS_VARIABLE", "KEYS_VARIABLE", "ApiKey", "KeyRing", "LocalRateLimits", "admin_ids", "as_admins",
           "checked_limit", "is_limit", "keys_from_environ", "keys_from_file", "new_key", "retry_after"]

KEYS_VARIABLE = "DIAGRAMA_API_KEYS"
ADMINS_VARIABLE = "DIAGRAMA_API_ADMINS"
"""Ids of admin keys, comma-separated (as `--admin-key`): DIAGRAMA_API_KEYS' `id=key` pairs have no room for a flag."""
_LINE = "`ID sha256:HEX [rpm=N] [admin]`"
_KEY_PREFIX = "dgk_"
_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")
_MIN_KEY = 16


def is_limit(rpm: float) -> bool:
    """Whether `rpm` is a limit a token bucket can keep: a finite number of requests a minute above 0. `nan` compares
    false with everything, so a bucket of `nan` tokens never refuses (and never says so); `inf` never empties."""
    return math.isfinite(rpm) and rpm > 0


def checked_limit(rpm: float) -> float:
    """`rpm`, or ValueError: the buckets' own guard, for a caller that did not check (the readers of keys and of
    `--rpm` refuse such values first, naming where they were written)."""
    if not is_limit(rpm):
        raise ValueError(f"a rate limit is a finite number of requests a minute above 0, not {rpm!r}")
    return rpm


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    digest: bytes
    rpm: float | None = None
    """This key's own requests per minute; None: the server's `--rpm`."""
    admin: bool = False
    """Sees every caller's runs and sessions, and events as the trace has them (pid, host, paths)."""

    def __post_init__(self) -> None:
        if self.rpm is not None:
            checked_limit(self.rpm)  # a key built in code (not read from a file) gets the file's rule too


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def new_key(key_id: str) -> tuple[str, str]:
    """A fresh key and its keys-file line (`ID sha256:HEX`): the key is shown once, the file keeps the digest."""
    if not _ID.match(key_id):
        raise UsageError(f"a key id is letters, digits and _ . @ - (at most 64), not {key_id!r}")
    key = _KEY_PREFIX + secrets.token_urlsafe(32)
    return key, f"{key_id} sha256:{digest(key).hex()}"


def keys_from_environ(environ: Mapping[str, str]) -> tuple[list[ApiKey], list[str]]:
    """The keys in DIAGRAMA_API_KEYS, and the keys themselves (only to scrub them from logs and runs' outputs)."""
    text = environ.get(KEYS_VARIABLE, "")
    keys: list[ApiKey] = []
    plain: list[str] = []
    for number, item in enumerate(part.strip() for part in text.split(",")):
        if not item:
            continue
        key_id, sep, key = item.partition("=")
        if not sep:
            key_id, key = "", item
        key_id, key = key_id.strip(), key.strip()
        if len(key) < _MIN_KEY:
            raise UsageError(f"{KEYS_VARIABLE}: key {number + 1} is shorter than {_MIN_KEY} characters; make keys "
                             "with `diagrama api-key ID`")
        if key_id and not _ID.match(key_id):
            raise UsageError(f"{KEYS_VARIABLE}: key {number + 1}'s id is letters, digits and _ . @ -, not {key_id!r}")
        found = digest(key)
        keys.append(ApiKey(key_id or f"key-{found.hex()[:8]}", found))
        plain.append(key)
    return keys, plain


def keys_from_file(path: Path) -> list[ApiKey]:
    """The keys-file's keys: `ID sha256:HEX [rpm=N] [admin]` a line, `#` comments; UsageError naming the file and
    line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the keys file {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # a file saved in another encoding, or not a keys file at all
        at_line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UsageError(f"{path}:{at_line}: the keys file is not UTF-8 text: byte 0x{data[exc.start]:02x} at column "
                         f"{column} (offset {exc.start}); save it as UTF-8, {_LINE} a line") from None
    keys: list[ApiKey] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{number}"
        words = line.split()
        if not 2 <= len(words) <= 4 or not _ID.match(words[0]):
            raise UsageError(f"{where}: write {_LINE} (`diagrama api-key ID` prints the line)")
        found = _DIGEST.match(words[1])
        if found is None:
            raise UsageError(f"{where}: the file keeps a key's digest (sha256:HEX), never the key itself; "
                             "`diagrama api-key ID` prints the line")
        rpm, admin = _options(words[2:], where)
        keys.append(ApiKey(words[0], bytes.fromhex(found.group(1)), rpm, admin))
    return keys


def _options(words: list[str], where: str) -> tuple[float | None, bool]:
    """A keys-file line's words after the digest: `rpm=N` and `admin`, each at most once, in either order."""
    rpm: float | None = None
    admin = False
    for word in words:
        shown = word if len(word) <= 40 else f"{word[:40]}…"
        if word == "admin" and not admin:
            admin = True
            continue
        name, _, value = word.partition("=")
        if name != "rpm" or rpm is not None:
            raise UsageError(f"{where}: after the digest come rpm=N and admin, each at most once, not {shown!r}; "
                             f"write {_LINE}")
        try:
            rpm = float(value)
        except ValueError:
            rpm = math.nan
        if not is_limit(rpm):  # float() takes nan and inf: a key they limit is never limited
            raise UsageError(f"{where}: rpm=N is a finite number of requests per minute above 0, not {shown!r}")
    return rpm, admin


def admin_ids(environ: Mapping[str, str], given: Iterable[str] = ()) -> frozenset[str]:
    """The admin keys' ids: `given` (`--admin-key`) and DIAGRAMA_API_ADMINS'; UsageError for one that is no id."""
    named = [*given, *(part.strip() for part in environ.get(ADMINS_VARIABLE, "").split(","))]
    for key_id in named:
        if key_id and not _ID.match(key_id):
            raise UsageError(f"an admin key is named by its id (letters, digits and _ . @ -), not {key_id!r} "
                             f"(--admin-key, {ADMINS_VARIABLE})")
    return frozenset(key_id for key_id in named if key_id)


def as_admins(keys: Iterable[ApiKey], admins: frozenset[str]) -> list[ApiKey]:
    """`keys`, those whose id is in `admins` made admin keys."""
    return [replace(key, admin=True) if key.key_id in admins and not key.admin else key for key in keys]


class KeyRing:
    """The server's keys; `identify` finds a presented key's entry in time that does not depend on which one, or
    whether any, matches (every digest is compared)."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self.keys = tuple(keys)
        ids = [key.key_id for key in self.keys]
        duplicated = sorted({key_id for key_id in ids if ids.count(key_id) > 1})
        if duplicated:
            raise UsageError(f"key ids must differ; given twice: {', '.join(duplicated)}")

    def identify(self, presented: str) -> ApiKey | None:
        wanted = digest(presented)
        found = None
        for key in self.keys:
            if hmac.compare_digest(key.digest, wanted):
                found = key
        return found


class LocalRateLimits:
    """Per-key token buckets in this process: each holds `rpm` requests and refills at `rpm / 60` a second."""

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}  # key id → (tokens, when)

    async def take(self, key_id: str, rpm: float) -> float:
        """0 when the request may go; else the seconds until it may (the answer's Retry-After)."""
        checked_limit(rpm)  # with nan every comparison below is false: the request would go, and every next one
        now = time.monotonic()
        tokens, at = self._buckets.get(key_id, (rpm, now))
        tokens = min(rpm, tokens + (now - at) * rpm / 60)
        if tokens >= 1:
            self._buckets[key_id] = (tokens - 1, now)
            return 0.0
        self._buckets[key_id] = (tokens, now)
        return (1 - tokens) * 60 / rpm


def retry_after(seconds: float) -> str:
    """Retry-After's whole seconds, at least one."""
    return str(max(1, math.ceil(seconds)))
