"""A Celery batch's total budget (`diagrama batch --backend celery --budget-total`), counted in Redis.

The rows of a batch on Celery run in many worker processes, on many machines: what they spend together is counted in
one Redis hash per batch (requests, tokens, known USD, requests with no price), added to atomically as each request is
counted, and read before each request is sent. The batch's command writes it when the batch starts or resumes (what
its recorded rows spent), and a worker starts no row once it is spent: it marks the row skipped, which the command
reads as not run (`--resume` runs it, with a larger total). Two workers checking at the same moment may each send one
request more than the rest of the budget allows, as two rows at once may in a local batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.format.spec import Budget
from engine.runtime.budgets import SharedBudget, Spent, tokens_of

__all__ = ["RedisBudget", "budget_key", "skipped_key"]

DAY_S = 24 * 3600


def budget_key(batch_id: str) -> str:
    return f"diagrama:batch:{batch_id}:spent"


def skipped_key(batch_id: str) -> str:
    """The rows a worker did not start because the batch's total was spent."""
    return f"diagrama:batch:{batch_id}:skipped"


class RedisBudget(SharedBudget):
    """A SharedBudget whose count is the batch's Redis hash: every worker's requests add to it."""

    def __init__(self, redis: Any, batch_id: str, limit: Budget) -> None:
        super().__init__(limit)
        self.redis = redis
        self.key = budget_key(batch_id)

    def start(self, spent: Spent) -> None:
        """The batch's command, as it starts or resumes: what its recorded rows spent is where the count begins."""
        self.redis.delete(self.key)
        self.redis.hset(self.key, mapping={"usd": repr(spent.usd), "tokens": spent.tokens,
                                           "requests": spent.requests, "unknown": spent.unknown})
        self.redis.expire(self.key, DAY_S)

    def add(self, usage: Mapping[str, int], usd: float | None) -> None:
        pipe = self.redis.pipeline()
        pipe.hincrby(self.key, "requests", 1)
        pipe.hincrby(self.key, "tokens", tokens_of(usage))
        if usd is None:
            pipe.hincrby(self.key, "unknown", 1)
        else:
            pipe.hincrbyfloat(self.key, "usd", usd)
        pipe.expire(self.key, DAY_S)
        pipe.execute()

    def spent_now(self) -> Spent:
        found = {key.decode() if isinstance(key, bytes) else key: value
                 for key, value in (self.redis.hgetall(self.key) or {}).items()}
        return Spent(usd=float(found.get("usd") or 0.0), tokens=int(found.get("tokens") or 0),
                     requests=int(found.get("requests") or 0), unknown=int(found.get("unknown") or 0))
