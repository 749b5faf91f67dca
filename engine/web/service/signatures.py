"""A webhook delivery's signature, checked as its sender signs it (a diagram's `webhook: {scheme}`): pure functions of
the secret, the raw body, the headers and the time; every comparison constant-time (hmac.compare_digest).

- `github`: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the body. GitHub sends no timestamp: a delivery is
  known by its `X-GitHub-Delivery` id, which the caller remembers for the tolerance (a replay is refused).
- `stripe`: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]` over `{t}.{body}`; t within the tolerance of now.
- `hmac`: `X-Diagrama-Signature: sha256=<hex>` over `{timestamp}.{body}`, `X-Diagrama-Timestamp: <unix>` within the
  tolerance (the timestamp is signed, so a replay cannot move it).
A good signature gives the delivery's key (what a replay would repeat); anything else gives None, with no reason:
what is wrong with a forged request is not the sender's to learn.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

__all__ = ["SIGNATURE_HEADERS", "delivery_key", "sign"]

SIGNATURE_HEADERS = {
    "X-Hub-Signature-256": "github: sha256=<hex HMAC-SHA256 of the body>",
    "X-GitHub-Delivery": "github: the delivery's id (a second delivery with the same id is refused)",
    "Stripe-Signature": "stripe: t=<unix time>,v1=<hex HMAC-SHA256 of `{t}.{body}`>",
    "X-Diagrama-Signature": "hmac: sha256=<hex HMAC-SHA256 of `{timestamp}.{body}`>",
    "X-Diagrama-Timestamp": "hmac: the unix time it was signed at",
}
_MAX_HEADER = 4096
"""A signature header longer than this is no signature (it is not parsed)."""


def sign(secret: bytes, payload: bytes) -> str:
    """The hex HMAC-SHA256 of `payload`."""
    return hmac.new(secret, payload, hashlib.sha256).hexdigest()


def _same(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))


def _fresh(stamp: str, now: float, tolerance: float) -> int | None:
    if not stamp.isascii() or not stamp.isdigit() or len(stamp) > 12:
        return None
    value = int(stamp)
    return value if abs(now - value) <= tolerance else None


def delivery_key(scheme: str, secret: bytes, body: bytes, headers: Mapping[str, str], *, now: float,
                 tolerance: float) -> str | None:
    """The delivery's key (GitHub's delivery id, or the signature) when its signature is good and fresh, else None.
    `headers`: lower-cased names."""
    if scheme == "github":
        given, delivery = headers.get("x-hub-signature-256", ""), headers.get("x-github-delivery", "")
        if not given.startswith("sha256=") or not 0 < len(delivery) <= 100:
            return None
        return f"github:{delivery}" if _same(sign(secret, body), given[7:]) else None
    if scheme == "stripe":
        header = headers.get("stripe-signature", "")
        if len(header) > _MAX_HEADER:
            return None
        parts = [part.partition("=") for part in header.split(",")]
        stamps = [value.strip() for name, _, value in parts if name.strip() == "t"]
        signatures = [value.strip() for name, _, value in parts if name.strip() == "v1"]
        stamp = _fresh(stamps[0], now, tolerance) if len(stamps) == 1 else None
        if stamp is None or not signatures:
            return None
        expected = sign(secret, f"{stamp}.".encode() + body)
        good = [given for given in signatures if _same(expected, given)]  # every one compared: no early exit
        return f"stripe:{good[0]}" if good else None
    if scheme == "hmac":
        given, sent = headers.get("x-diagrama-signature", ""), headers.get("x-diagrama-timestamp", "")
        stamp = _fresh(sent.strip(), now, tolerance)
        if not given.startswith("sha256=") or stamp is None:
            return None
        return f"hmac:{given[7:]}" if _same(sign(secret, f"{stamp}.".encode() + body), given[7:]) else None
    return None
