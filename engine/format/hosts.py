"""The hosts an HttpRequest may call: a diagram's `allowed_hosts` entries, and whether one admits a host.

An entry is a host name (`api.example.com`), a wildcard for its subdomains (`*.example.com`: any
depth, not `example.com` itself), an IP address (`127.0.0.1`, `[::1]`), each optionally with a port
(`localhost:8080`: that port only; without one, any port). Names compare in lower case, without a
trailing dot, international names as IDNA (`bücher.de` is `xn--bcher-kva.de`). Nothing is allowed by
default, and there is no entry for "every host". At run time the URL is parsed by the caller with the
parser that sends it (httpx), so that what is checked is what is reached; at load a URL written out is
parsed here (`literal_url_refusal`, with the standard library: `validate` loads no HTTP client).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple
from urllib.parse import urlsplit

__all__ = ["HostEntry", "host_allowed", "literal_url_refusal", "read_host_entry", "url_refusal"]

_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?"
_PORT = re.compile(r":([0-9]{1,5})$")


class HostEntry(NamedTuple):
    """One `allowed_hosts` entry, read: the host (lower case, IDNA), whether it is `*.` of it, and its port."""

    host: str
    wildcard: bool
    port: int | None


def read_host_entry(text: str) -> HostEntry:
    """The entry as written (`api.example.com`, `*.example.com`, `localhost:8080`, `[::1]:8080`); ValueError names
    what is wrong with one that is no host."""
    written = text.strip()
    if not written:
        raise ValueError("an empty host")
    if "://" in written or "/" in written:
        raise ValueError(f"'{written}' is a URL: write the host alone (e.g. api.example.com)")
    port = None
    found = _PORT.search(written)
    if found and not written.endswith("]") and (written.count(":") == 1 or written.startswith("[")):
        port = int(found.group(1))
        if not 0 < port < 65536:
            raise ValueError(f"'{written}': the port must be 1 to 65535")
        written = written[: found.start()]
    if written.count(":") > 1 and not written.startswith("["):
        raise ValueError(f"'{written}': write an IPv6 address in brackets ([::1], [::1]:8080)")
    if written.startswith("[") and written.endswith("]"):
        return HostEntry(written[1:-1].lower(), False, port)
    wildcard = written.startswith("*.")
    name = written[2:] if wildcard else written
    if "*" in name or not name:
        raise ValueError(f"'{text.strip()}': a wildcard is only '*.' before a domain (e.g. *.example.com); "
                         "there is no entry for every host")
    try:
        host = _idna(name)
    except UnicodeError:
        raise ValueError(f"'{text.strip()}' is not a host name") from None
    if not re.fullmatch(rf"(?:{_LABEL}\.)*{_LABEL}", host):
        raise ValueError(f"'{text.strip()}' is not a host name")
    return HostEntry(host, wildcard, port)


def _idna(name: str) -> str:
    name = name.rstrip(".").lower()
    return name if name.isascii() else name.encode("idna").decode("ascii")


def host_allowed(host: str, port: int | None, entries: Iterable[HostEntry]) -> bool:
    """Whether a URL's host (in IDNA form, as httpx's `raw_host`; any case) and effective port are admitted."""
    host = host.strip("[]").rstrip(".").lower()
    for entry in entries:
        if entry.port is not None and entry.port != port:
            continue
        if host == entry.host if not entry.wildcard else host.endswith("." + entry.host):
            return True
    return False


_DEFAULT_PORTS = {"http": 80, "https": 443}
_TEMPLATE = re.compile(r"\{[{%#]")
_WHOLE_URL = "write the whole URL, e.g. https://api.example.com/v1"


@functools.lru_cache(maxsize=256)
def _entries(allowed: tuple[str, ...]) -> tuple[HostEntry, ...]:
    """A diagram's entries, read once (its spec has checked each)."""
    return tuple(read_host_entry(entry) for entry in allowed)


def url_refusal(scheme: str, host: str, port: int | None, allowed: Sequence[str]) -> tuple[str, str, str] | None:
    """(message, hint, error type) when a URL of this scheme, host (IDNA) and port cannot be requested; else None."""
    if scheme not in _DEFAULT_PORTS:
        return (f"the URL must start with http:// or https:// (it starts with '{scheme}:')" if scheme
                else "the URL must start with http:// or https://", _WHOLE_URL, "invalid_input")
    if not host:
        return "the URL names no host", _WHOLE_URL, "invalid_input"
    if not host_allowed(host, port or _DEFAULT_PORTS[scheme], _entries(tuple(allowed))):
        listed = ", ".join(allowed) if allowed else "none"
        shown = f"[{host}]" if ":" in host else host
        return (f"the host {shown} is not in the diagram's allowed_hosts",
                f"list it in the diagram's top-level allowed_hosts (now: {listed})", "host_not_allowed")
    return None


def literal_url_refusal(written: Any, allowed: Sequence[str]) -> tuple[str, str] | None:
    """Load time: (message, hint) when a URL as written cannot be requested. A templated URL is judged by its
    literal start when that holds the whole host (`https://api.example.com/orders/{{ id }}`); else the run judges it."""
    if not isinstance(written, str):
        return None
    mark = _TEMPLATE.search(written)
    literal = written.strip() if mark is None else written[: mark.start()]
    if mark is not None:
        _, separator, rest = literal.partition("://")
        if not separator or not any(end in rest for end in "/?#"):
            return None  # the host is not all written yet
    try:
        parts = urlsplit(literal)
        host, port = parts.hostname or "", parts.port
        host = _idna(host) if host and ":" not in host else host
    except (ValueError, UnicodeError) as exc:
        return f"not a URL ({exc})", _WHOLE_URL
    refusal = url_refusal(parts.scheme.lower(), host, port, allowed)
    return None if refusal is None else (refusal[0], refusal[1])
