"""An HttpRequest as the providers send it: the URL held to the diagram's `allowed_hosts`, the request
sent through the request blocks' own retry loop (`http.fetch`), and the answer read into outputs.

Online, every host goes through one pooled client (`Services.transports["http"]` stands in for all of
them in tests); offline, the request goes to the simulator's scripted replies for the block
(engine.providers.simulator.web) and never to the network. The host check uses the parser that sends
(httpx), on the URL as it is sent, so that what is checked is what is reached; a literal URL is also
checked at load (engine.format.hosts.literal_url_refusal).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from engine.errors import BlockTimeout, HttpError, InputError
from engine.format.hosts import url_refusal
from engine.providers.clients import client_for, simulator_for
from engine.providers.http import Exchanges, Fetched, Outgoing, SendHooks, fetch
from engine.providers.retries import Retried
from engine.providers.simulator.web import BLOCK_HEADER, HTTP

if TYPE_CHECKING:
    from engine.runtime.context import Services

__all__ = ["HTTP", "Fetched", "Outgoing", "checked_url", "send_web", "status_error", "web_outputs"]

_PREVIEW = 200
"""Characters of an error answer's body an `http_error` message quotes."""


def _shown(url: httpx.URL) -> str:
    """The URL's origin, as messages name it (its path and query may hold what the user would not print)."""
    port = url.port
    return f"{url.scheme}://{url.host}" + (f":{port}" if port is not None else "")


def checked_url(url: str, query: Mapping[str, Any], allowed: Sequence[str]) -> httpx.URL:
    """The URL to send, `query` merged into its own; InputError for one that is no http(s) URL, HttpError
    (`host_not_allowed`) for a host `allowed` does not admit."""
    try:
        parsed = httpx.URL(url.strip())  # a YAML block scalar ends with a line break
        if query:
            parsed = parsed.copy_merge_params({k: v for k, v in query.items() if v is not None})
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise InputError(f"with.url: not a URL ({exc})") from None
    refusal = url_refusal(parsed.scheme, parsed.raw_host.decode("ascii"), parsed.port, allowed)
    if refusal is not None:
        message, hint, kind = refusal
        if kind == "host_not_allowed":
            raise HttpError(f"{message} ({hint})", type=kind)
        raise InputError(f"with.url: {message}")
    return parsed


async def send_web(services: Services, outgoing: Outgoing, *, block: str, timeout: float,  # noqa: ASYNC109  # see fetch
                   retries: int, exchanges: Exchanges | None = None, retried: Retried | None = None,
                   observed: bool = True) -> Fetched:
    """Send `outgoing` for `block`: to its host, or offline to the scripted replies (the services' simulator); the
    services' reply observers hear the answer (or the timeout), unless not `observed` (a registry's http tool, which a
    scenario stubs by the tool's name rather than scripting a block's replies)."""
    if services.offline:
        client = client_for(services, f"simulated-{HTTP}", simulator_for(services).transport(HTTP))
        outgoing = dataclasses.replace(outgoing, headers={**outgoing.headers, BLOCK_HEADER: block})
    else:
        client = client_for(services, HTTP)
    hooks = SendHooks(services.clock, services.sleep, None, exchanges, retried)
    observers = services.reply_observers if observed else []
    try:
        fetched = await fetch(client, outgoing, block=block, timeout=timeout, hooks=hooks, max_retries=retries)
    except BlockTimeout:
        for observer in observers:
            observer(block, {"error": "timeout"})
        raise
    if observers:  # `diagrama run --record`: each answer, as a scenario scripts it
        read = web_outputs(fetched)
        body = {"json": read["json"]} if read["json"] is not None else {"text": read["text"]} if read["text"] else {}
        for observer in observers:
            observer(block, {"status": fetched.status, **body})
    return fetched


_CHARSET = re.compile(r"charset\s*=\s*[\"']?([^\"';\s]+)", re.IGNORECASE)


def _text(fetched: Fetched) -> str:
    """The body as text: in the charset its content type names, else UTF-8; undecodable bytes replaced."""
    named = _CHARSET.search(fetched.headers.get("content-type", ""))
    try:
        return fetched.raw.decode(named.group(1) if named else "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return fetched.raw.decode("utf-8", "replace")


def web_outputs(fetched: Fetched) -> dict[str, Any]:
    """The block's outputs: status, headers (lower-case names), json (None when the body is not JSON), text."""
    try:
        parsed = orjson.loads(fetched.raw) if fetched.raw.strip() else None
    except orjson.JSONDecodeError:
        parsed = None
    return {"status": fetched.status, "headers": fetched.headers, "json": parsed, "text": _text(fetched)}


def status_error(fetched: Fetched, method: str) -> HttpError:
    """`http_error` for a 4xx or 5xx: the status and reason, after how many attempts, and a short body preview."""
    url = fetched.url
    preview = " ".join(_text(fetched).split())
    preview = preview if len(preview) <= _PREVIEW else preview[: _PREVIEW - 1] + "…"
    reason = httpx.codes.get_reason_phrase(fetched.status)
    after = f" (after {fetched.attempts} attempts)" if fetched.attempts > 1 else ""
    return HttpError(f"{method} {_shown(url)}{url.path} answered {fetched.status}" + (f" {reason}" if reason else "")
                     + after + (f": {preview}" if preview else ""), status=fetched.status)
