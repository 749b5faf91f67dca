"""Signed links that answer a Wait: `answer_token` makes one when a Wait notifies someone, `read_answer_token`
checks one when `diagrama api`'s `/v1/answers/{token}` is opened.

A token is the run's id, the Wait's address and an expiry (Unix seconds), as base64url JSON, then an HMAC-SHA256 of
those bytes under the server's secret (DIAGRAMA_ANSWER_SECRET), checked in constant time. It is a capability: whoever
holds the link may answer that one Wait until it expires, and nothing else. The secret never leaves the process.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Any

import orjson

__all__ = ["ANSWER_SECRET_ENV", "PUBLIC_URL_ENV", "AnswerLinkRefused", "answer_token", "read_answer_token"]

ANSWER_SECRET_ENV = "DIAGRAMA_ANSWER_SECRET"
"""The environment variable holding the key answer links are signed with."""
PUBLIC_URL_ENV = "DIAGRAMA_PUBLIC_URL"
"""The environment variable holding the URL `diagrama api` is reached at from outside (an answer link's base)."""
MIN_SECRET_BYTES = 16


class AnswerLinkRefused(Exception):
    """A token that does not answer: `status` 403 (not signed by this server, or damaged) or 410 (expired)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(secret: str, payload: bytes) -> bytes:
    return hmac.new(secret.encode(), payload, hashlib.sha256).digest()


def answer_token(secret: str, run_id: str, block: str, expires: float) -> str:
    """A token answering the Wait at `block` of run `run_id` until `expires` (Unix seconds)."""
    if len(secret.encode()) < MIN_SECRET_BYTES:
        raise ValueError(f"{ANSWER_SECRET_ENV} must be at least {MIN_SECRET_BYTES} bytes long")
    payload = orjson.dumps([run_id, block, int(expires)])
    return f"{_b64(payload)}.{_b64(_signature(secret, payload))}"


def read_answer_token(secret: str, token: str, *, now: float | None = None) -> tuple[str, str]:
    """(run id, Wait address) of a token this server signed and that has not expired; else AnswerLinkRefused."""
    refused = AnswerLinkRefused(403, "this answer link is not valid")
    try:
        encoded, signed = token.split(".")
        payload, signature = _unb64(encoded), _unb64(signed)
    except (ValueError, TypeError):
        raise refused from None
    if not hmac.compare_digest(signature, _signature(secret, payload)):
        raise refused
    fields: Any = orjson.loads(payload)
    run_id, block, expires = fields
    if (time.time() if now is None else now) > expires:
        raise AnswerLinkRefused(410, "this answer link has expired")
    return str(run_id), str(block)
