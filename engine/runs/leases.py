"""A worker's lease on a run it is running, in Redis: how a task delivered again tells a lost run from a live one.

Celery hands a task out again when its worker is lost (the pool's child killed: at once; the whole worker: after
the broker's visibility timeout) — and also when a run simply lasts longer than that timeout. So a delivery alone
does not say the run was lost. The worker that runs a run holds its lease (`diagrama:run:lease:ID`, LEASE_S long)
and renews it every BEAT_S from a thread of its own, whatever the run's steps do. A delivery that finds the lease
held leaves the run to its holder and looks again later (the task is sent again, LEASE_S on); one that finds it
lapsed knows the holder is gone and carries the run on from its last checkpoint (engine.runs.turn.carry_on).

The same thread looks for a cancellation (`diagrama:run:cancel:ID`, set by any API process) and hands it to the
run's step loop (Services.stops): the run stops at its next step, `cancelled`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from typing import Any

__all__ = ["BEAT_S", "LEASE_S", "Lease", "cancel_key", "lease_key"]

LEASE_S = 15
"""How long a lease lasts unrenewed: past it, the run's worker is taken to be lost."""
BEAT_S = 3.0
"""How often the holder renews it (and looks for a cancellation)."""

_RENEW = """
local held = redis.call('GET', KEYS[1])
if held == false or held == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
"""
"""Renew the lease if it is ours, or take it back if it lapsed (a broker restart, a long pause); never another's."""
_LET_GO = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def lease_key(run_id: str) -> str:
    return f"diagrama:run:lease:{run_id}"


def cancel_key(run_id: str) -> str:
    """Set (by `POST /v1/runs/{id}/cancel` on the Celery backend) until the run has stopped: its worker stops it."""
    return f"diagrama:run:cancel:{run_id}"


class Lease:
    """One worker's hold on `run_id` (a context manager once taken: renewed until the block ends, then let go)."""

    def __init__(self, redis: Any, run_id: str, stops: dict[str, str]) -> None:
        self.redis = redis
        self.run_id = run_id
        self.key = lease_key(run_id)
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stops = stops
        self._done = threading.Event()
        self._beat: threading.Thread | None = None
        self._renew = redis.register_script(_RENEW)
        self._let_go = redis.register_script(_LET_GO)

    def take(self) -> bool:
        """Whether this worker now holds the run: False while another worker's lease on it is alive."""
        return bool(self.redis.set(self.key, self.token, nx=True, ex=LEASE_S))

    def holder(self) -> str | None:
        found = self.redis.get(self.key)
        return found.decode() if isinstance(found, bytes) else found

    def __enter__(self) -> Lease:
        self._beat = threading.Thread(target=self._keep, name=f"lease-{self.run_id}", daemon=True)
        self._beat.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        if self._beat is not None:
            self._beat.join(timeout=BEAT_S + 1)
        with contextlib.suppress(Exception):  # the broker is away: the lease lapses by itself
            self._let_go(keys=[self.key], args=[self.token])

    def _keep(self) -> None:
        while not self._done.wait(BEAT_S):
            try:
                self._renew(keys=[self.key], args=[self.token, LEASE_S])
                if self.redis.exists(cancel_key(self.run_id)):
                    self._stops[self.run_id] = "cancelled"  # read by the step loop on the run's thread
            except Exception:  # the broker is away for a while: renewed again when it is back
                continue
