"""`Idempotency-Key` on `POST /v1/robots/{name}/runs`: a request sent again with the same key (by the same API key,
within KEPT_S) gets the first request's run — its answer now, or 202 for `wait: false` — and starts none.

The keys are claimed in the run store (`request_keys`), so API processes sharing it agree: the first insert of a
(key id, key) wins, the others read its run. A request that started no run (the backend refused it) lets its claim
go, so sending it again tries again; a claim whose run never came within STARTING_S (its process died) is taken
over. A key sent with another body (robot, inputs, session, level, callback; `wait` may differ) is refused (422).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel

from engine.web.service.durable import Refused

__all__ = ["HEADER", "KEPT_S", "Claim", "Idempotency", "read_key"]

HEADER = "Idempotency-Key"
KEPT_S = 24 * 3600.0
STARTING_S = 60.0
"""A claim without its run this long after it was made is abandoned (its request's process died)."""
_WAIT_START_S = 10.0
"""How long a request waits for another request with its key to name its run, before a 409."""
_POLL_S = 0.05
_SWEEP_S = 3600.0
"""How often expired claims of every key are deleted (the table holds about a day's keys)."""


def read_key(value: str | None) -> str | None:
    """The header's key, None without one; Refused 400 for one that is not 1 to 255 printable ASCII characters."""
    if value is None:
        return None
    if not 1 <= len(value) <= 255 or not all(" " <= char <= "~" for char in value):
        raise Refused(400, f"{HEADER} is 1 to 255 printable ASCII characters", [
            f"{HEADER}: {len(value)} characters" + ("" if 1 <= len(value) <= 255 else ", not 1 to 255")
            + ("" if all(" " <= char <= "~" for char in value) else ", some not printable ASCII")])
    return value


def _fingerprint(robot: str, asked: BaseModel) -> str:
    body = asked.model_dump(mode="json", exclude={"wait"})
    return hashlib.sha256(robot.encode() + b"\n" + orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class Claim:
    """This request's hold on its key: `run_id` the first request's run (replay it), or None (start one, then
    `started`, or `failed` when none started)."""

    run_id: str | None
    _store: Any
    _key_id: str
    _key: str

    async def started(self, run_id: str) -> None:
        await asyncio.to_thread(self._store.bind_request_key, self._key_id, self._key, run_id)

    async def failed(self) -> None:
        await asyncio.to_thread(self._store.bind_request_key, self._key_id, self._key, None)


class Idempotency:
    """The claims, in the run store (None: without the batch extra there is none, and a key is refused)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._swept = 0.0

    async def claim(self, key_id: str | None, value: str | None, robot: str, asked: BaseModel) -> Claim | None:
        """None without the header; else this request's Claim, or Refused: 400 a bad key or no store, 422 the key
        came with another body, 409 the request that has it is still starting its run."""
        key = read_key(value)
        if key is None:
            return None
        if self.store is None:
            raise Refused(400, f"{HEADER} needs the run store (pip install 'diagrama[batch]')",
                          [f"{HEADER}: this server keeps no run store to remember keys in"])
        owner, fingerprint = key_id or "", _fingerprint(robot, asked)
        if time.time() - self._swept > _SWEEP_S:
            self._swept = time.time()
            await asyncio.to_thread(self.store.forget_request_keys, KEPT_S)
        waited = 0.0
        while True:
            held = await asyncio.to_thread(self.store.claim_request_key, owner, key, fingerprint, kept_s=KEPT_S,
                                           starting_s=STARTING_S)
            if held is None:
                return Claim(None, self.store, owner, key)
            if held.fingerprint != fingerprint:
                raise Refused(422, f"{HEADER} '{key}' came with another request", [
                    f"{HEADER}: a request with another body (robot, inputs, session, message_level or callback_url) "
                    f"used this key within {KEPT_S / 3600:g} h; send a new key for a new run"])
            if held.run_id is not None:
                return Claim(held.run_id, self.store, owner, key)
            if waited >= _WAIT_START_S:
                raise Refused(409, f"a request with {HEADER} '{key}' is still starting its run; send it again soon")
            await asyncio.sleep(_POLL_S)
            waited += _POLL_S
