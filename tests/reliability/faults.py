"""The fault catalogue: what the fake vendor does, and what the block must make of it.

Expected error types are the codes the engine uses today (engine/errors.py,
engine/providers/http.py, blocks/_request.py):

    provider_error                 the vendor answered an HTTP error (after retries, when retried)
    provider_malformed_response    a 2xx body that is not JSON, or JSON we cannot read
    block_timeout                  the block's `timeout` ran out, retries and their waits included
                                   (docs/VENDORS.md, Retries: "A wait that would cross the block's `timeout` is not
                                   taken: the block fails with a timeout error")

A fault whose `error` is None must be recovered from by retrying: the run succeeds.
Nothing a vendor sends may end a run with `block_raised` or `internal_error` (a crash).
"""

from __future__ import annotations

import email.utils
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.reliability.fakevendor import (
    Drop,
    Oversized,
    Reply,
    Reset,
    ShortBody,
    SlowBody,
    Stall,
    Step,
    Trickle,
    error_body,
    ok,
    success_body,
)

VENDORS = ("anthropic", "groq", "gemini")

HTML_PAGE = (b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
             b"<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>")


@dataclass(frozen=True)
class Fault:
    name: str
    steps: Callable[[str], list[Step]]
    error: str | None = None
    """The error type the block must end with; None: the call recovers and the run succeeds."""
    attempts: int | None = None
    """Exactly this many requests reach the vendor (None: not fixed)."""
    min_attempts: int = 1
    timeout: float = 2.0
    vendors: tuple[str, ...] = VENDORS
    tags: frozenset[str] = field(default_factory=frozenset)
    hint: float | None = None
    """The wait the vendor asked for before the retry; the block must wait exactly that."""
    vendor_status: int | None = None
    """The HTTP status whose vendor error type the final error message must quote."""
    slow: bool = False
    """Mostly waits ~0.5 s or more (a backoff, a hint, the timeout itself): the matrix runs these
    side by side rather than one after the other."""

    def __str__(self) -> str:
        return self.name


def _with(body: dict, **changes: object) -> dict:
    return {**body, **changes}


def _groq_choice(vendor: str, **message: object) -> dict:
    body = success_body(vendor)
    return _with(body, choices=[{"index": 0, "finish_reason": "stop", "message": message}])


def _hint(ms: int) -> dict[str, str]:
    return {"retry-after-ms": str(ms)}


RETRY = frozenset({"retry"})      # run for every vendor
BODY = frozenset({"body"})        # vendor-specific body shapes: run for every vendor
TRANSPORT = frozenset({"transport"})

FAULTS: list[Fault] = [
    # -- rate limits and server errors: retried, honouring the vendor's hints -------------------
    Fault("429-retry-after-s-then-ok",
          lambda v: [Reply(429, error_body(v, 429), {"retry-after": "1"}), ok(v)],
          attempts=2, timeout=3.0, tags=RETRY, hint=1.0, slow=True),
    Fault("429-retry-after-ms-then-ok",
          lambda v: [Reply(429, error_body(v, 429), _hint(150)), ok(v)], attempts=2, tags=RETRY,
          hint=0.15),
    Fault("429-retry-delay-body-then-ok",  # Gemini: google.rpc.RetryInfo in the error body
          lambda v: [Reply(429, error_body(v, 429, details=[
              {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.2s"}])), ok(v)],
          attempts=2, vendors=("gemini",), tags=RETRY, hint=0.2),
    Fault("429-retry-delay-body-past-timeout",
          lambda v: [Reply(429, error_body(v, 429, details=[
              {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}])), ok(v)],
          error="block_timeout", attempts=1, vendors=("gemini",), tags=RETRY),
    Fault("429-retry-after-unreadable-then-ok",  # not a number nor a date: fall back to the backoff
          lambda v: [Reply(429, error_body(v, 429), {"retry-after": "soon"}), ok(v)],
          attempts=2, tags=RETRY, slow=True),
    Fault("429-retry-after-http-date-then-ok",  # an HTTP date about a second ahead
          lambda v: [Reply(429, error_body(v, 429), {"retry-after": email.utils.formatdate(time.time() + 1, usegmt=True)}),
                     ok(v)],
          attempts=2, timeout=3.0, tags=RETRY, slow=True),
    Fault("429-always", lambda v: [Reply(429, error_body(v, 429), _hint(10))],
          error="provider_error", min_attempts=3, vendor_status=429, tags=RETRY),
    Fault("429-wait-past-timeout",  # the hint would cross the deadline: fail now, do not sleep 30 s
          lambda v: [Reply(429, error_body(v, 429), {"retry-after": "30"}), ok(v)],
          error="block_timeout", attempts=1, tags=RETRY),
    Fault("500-then-ok", lambda v: [Reply(500, error_body(v, 500)), ok(v)], attempts=2, tags=RETRY, slow=True),
    Fault("503-then-ok", lambda v: [Reply(503, error_body(v, 503), _hint(50)), ok(v)], attempts=2, tags=RETRY),
    Fault("529-then-ok", lambda v: [Reply(529, error_body(v, 529), _hint(50)), ok(v)], attempts=2,
          vendors=("anthropic",), tags=RETRY),
    Fault("500-always", lambda v: [Reply(500, error_body(v, 500), _hint(10))],
          error="provider_error", min_attempts=3, vendor_status=500, tags=RETRY),
    Fault("503-always", lambda v: [Reply(503, error_body(v, 503), _hint(10))],
          error="provider_error", min_attempts=3, vendor_status=503, tags=RETRY),
    Fault("529-always", lambda v: [Reply(529, error_body(v, 529), _hint(10))],
          error="provider_error", min_attempts=3, vendor_status=529, vendors=("anthropic",), tags=RETRY),
    Fault("503-no-hint-until-deadline", lambda v: [Reply(503, error_body(v, 503))],
          error="block_timeout", min_attempts=2, timeout=2.0, tags=RETRY, slow=True),
    Fault("400-not-retried", lambda v: [Reply(400, error_body(v, 400)), ok(v)],
          error="provider_error", attempts=1, tags=RETRY, vendor_status=400),
    Fault("x-should-retry-false-on-503", lambda v: [Reply(503, error_body(v, 503), {"x-should-retry": "false"}), ok(v)],
          error="provider_error", attempts=1, tags=RETRY, vendor_status=503),
    Fault("x-should-retry-true-on-400", lambda v: [Reply(400, error_body(v, 400),
                                                         {"x-should-retry": "true", **_hint(20)}), ok(v)],
          attempts=2, tags=RETRY),
    # -- bodies that cannot be read ---------------------------------------------------------------
    Fault("truncated-json", lambda v: [Reply(200, json.dumps(success_body(v))[:40])],
          error="provider_malformed_response", attempts=1, tags=BODY),
    Fault("invalid-json", lambda v: [Reply(200, b"{'content': [oops]}")],
          error="provider_malformed_response", attempts=1),
    Fault("empty-200", lambda v: [Reply(200, b"")],
          error="provider_malformed_response", attempts=1),
    Fault("invalid-utf8-json", lambda v: [Reply(200, b'{"content": [{"type": "text", "text": "\xff\xfe"}]}')],
          error="provider_malformed_response", attempts=1),
    Fault("corrupt-gzip-200", lambda v: [Reply(200, b"\x1f\x8b\x08\x00not really gzip at all",
                                               {"content-encoding": "gzip"})],
          error="provider_malformed_response", attempts=1),
    Fault("html-200", lambda v: [Reply(200, HTML_PAGE, content_type="text/html")],
          error="provider_malformed_response", attempts=1),
    Fault("html-502-then-ok", lambda v: [Reply(502, HTML_PAGE, content_type="text/html"), ok(v)], attempts=2, slow=True),
    Fault("html-502-until-deadline", lambda v: [Reply(502, HTML_PAGE, content_type="text/html")],
          error="block_timeout", min_attempts=2, timeout=2.0, slow=True),
    Fault("html-403", lambda v: [Reply(403, HTML_PAGE.replace(b"502 Bad Gateway", b"403 Forbidden"),
                                       content_type="text/html")],
          error="provider_error", attempts=1),
    # wrong-typed JSON: each vendor's own shapes
    Fault("usage-wrong-type", lambda v: [Reply(200, _with(success_body(v), **(
        {"usageMetadata": "lots"} if v == "gemini" else {"usage": "lots"})))],
          error="provider_malformed_response", attempts=1, tags=BODY),
    Fault("content-wrong-type", lambda v: [Reply(200, {
        "anthropic": _with(success_body(v), content=5),
        "groq": _with(success_body(v), choices={}),
        "gemini": _with(success_body(v), candidates=5)}[v])],
          error="provider_malformed_response", attempts=1, tags=BODY),
    Fault("item-wrong-type", lambda v: [Reply(200, {
        "anthropic": _with(success_body(v), content=["Order 42 has shipped."]),
        "groq": _with(success_body(v), choices=[{"index": 0, "finish_reason": "stop", "message": "hi"}]),
        "gemini": _with(success_body(v), candidates=[{"index": 0, "content": "hi"}])}[v])],
          error="provider_malformed_response", attempts=1, tags=BODY),
    Fault("json-array-body", lambda v: [Reply(200, [success_body(v)])],
          error="provider_malformed_response", attempts=1, tags=BODY),
    # missing required fields
    Fault("missing-content", lambda v: [Reply(200, {
        "anthropic": {k: x for k, x in success_body(v).items() if k != "content"},
        "groq": {k: x for k, x in success_body(v).items() if k != "choices"},
        "gemini": {k: x for k, x in success_body(v).items() if k != "candidates"}}[v])],
          error="provider_malformed_response", attempts=1, tags=BODY),
    Fault("tool-call-missing-fields", lambda v: [Reply(200, {
        "anthropic": _with(success_body(v), stop_reason="tool_use",
                           content=[{"type": "tool_use", "input": {"order_id": 42}}]),
        "groq": _groq_choice(v, role="assistant", content=None,
                             tool_calls=[{"id": "call_1", "type": "function", "function": {"name": "get_order_status",
                                                                                           "arguments": "{\"order_id\": "}}]),
        "gemini": _with(success_body(v), candidates=[{"index": 0, "finishReason": "STOP", "content": {
            "role": "model", "parts": [{"functionCall": {"name": "get_order_status", "args": "42"}}]}}])}[v])],
          error="provider_malformed_response", attempts=1, tags=BODY),
    # -- the connection itself ---------------------------------------------------------------------
    Fault("no-response-stall", lambda v: [Stall()], error="block_timeout", attempts=1, timeout=1.0, tags=TRANSPORT, slow=True),
    Fault("slow-body", lambda v: [SlowBody(v)], error="block_timeout", attempts=1, timeout=1.0, tags=TRANSPORT, slow=True),
    Fault("trickled-body", lambda v: [Trickle(v, 0.2)], error="block_timeout", attempts=1, timeout=1.0,
          tags=TRANSPORT, slow=True),
    Fault("reset-mid-body-then-ok", lambda v: [Reset(v), ok(v)], attempts=2, tags=TRANSPORT, slow=True),
    Fault("reset-mid-body-until-deadline", lambda v: [Reset(v)], error="block_timeout", min_attempts=2, timeout=2.0,
          tags=TRANSPORT, slow=True),
    Fault("short-body-then-close-then-ok", lambda v: [ShortBody(v), ok(v)], attempts=2, tags=TRANSPORT, slow=True),
    Fault("not-http-until-deadline", lambda v: [Reply(0, b"", raw=b"SSH-2.0-OpenSSH_9.6\r\n")],
          error="block_timeout", min_attempts=2, timeout=2.0, tags=TRANSPORT, slow=True),
    Fault("dropped-before-response-then-ok", lambda v: [Drop(), ok(v)], attempts=2, tags=TRANSPORT, slow=True),
    Fault("dropped-before-response-until-deadline", lambda v: [Drop()], error="block_timeout", min_attempts=2,
          timeout=2.0, tags=TRANSPORT, slow=True),
    Fault("oversized-valid-20mb", lambda v: [Oversized(v)], attempts=1, timeout=3.0, tags=TRANSPORT, slow=True),
    Fault("oversized-not-json-20mb", lambda v: [Oversized(v, valid_json=False)],
          error="provider_malformed_response", attempts=1, timeout=3.0, tags=TRANSPORT, slow=True),
]

BY_NAME = {fault.name: fault for fault in FAULTS}


def free_port() -> int:
    """A loopback port nothing listens on (closed again at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
