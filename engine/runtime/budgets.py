"""Budgets: the limit a request may not pass, checked before it is sent.

A run's budget is its Start block's `budget`, lowered (never raised) by whoever starts it (`diagrama run
--budget`, the API's run request). Budgets are inherited as the levels are: a block's own is a tighter one for
its requests, and a Subdiagram's or a Loop's own is a tighter one for the requests of the blocks inside it (the
child's own Start budget too). Every budget counts the same spend, the top run's (one `Spend` per top run, its
children's and passes' requests included), plus, in a batch with `--budget-total`, the spend of all its rows
(a `SharedBudget`). What a request would cost is the block's estimate: its input tokens and its `max_tokens`,
at its model's price.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from engine.errors import BudgetExceeded, UsageError
from engine.format.spec import Budget, tighter

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from engine.runtime.context import Spend

__all__ = ["SharedBudget", "Spent", "budget_from_text", "check_budget", "tighter", "tokens_of"]

_LIMITS = ("usd", "tokens", "requests")


def tokens_of(usage: Mapping[str, int]) -> int:
    """The tokens a budget counts: input and output (thinking and cache tokens are counted within them)."""
    return usage.get("input_tokens", 0) + usage.get("output_tokens", 0)


class Spent:
    """What has been spent against one budget: USD known, USD unknown (requests without a price), tokens, requests."""

    __slots__ = ("requests", "tokens", "unknown", "usd")

    def __init__(self, usd: float = 0.0, tokens: int = 0, requests: int = 0, unknown: int = 0) -> None:
        self.usd, self.tokens, self.requests, self.unknown = usd, tokens, requests, unknown

    @classmethod
    def of(cls, spend: Spend) -> Spent:
        return cls(spend.usd, tokens_of(spend.usage), spend.requests, spend.unknown)


class SharedBudget:
    """A budget several runs draw on together (a batch's `--budget-total`): their requests are counted here as
    they are made, from any thread. A batch on Celery keeps the count in Redis instead (engine.runs.batch_budget),
    through the same three methods."""

    def __init__(self, limit: Budget, spent: Spent | None = None) -> None:
        self.limit = limit
        self.spent = spent or Spent()
        """What was spent before (a resumed batch's recorded rows) and since."""
        self._lock = threading.Lock()

    def spent_now(self) -> Spent:
        return self.spent

    def add(self, usage: Mapping[str, int], usd: float | None) -> None:
        with self._lock:
            spent = self.spent
            spent.requests += 1
            spent.tokens += tokens_of(usage)
            if usd is None:
                spent.unknown += 1
            else:
                spent.usd += usd

    def spent_out(self) -> bool:
        """Whether nothing more can be spent: a limit reached (a batch starts no new row then)."""
        limit, spent = self.limit, self.spent_now()
        return ((limit.requests is not None and spent.requests >= limit.requests)
                or (limit.tokens is not None and spent.tokens >= limit.tokens)
                or (limit.usd is not None and spent.usd >= limit.usd))

    def check(self, tokens: int, usd: float | None, what: str) -> None:
        with self._lock:
            _check(self.limit, self.spent_now(), tokens, usd, what, "the batch's total budget")


def check_budget(limit: Budget | None, spend: Spend, tokens: int, usd: float | None, what: str, whose: str) -> None:
    """Raise BudgetExceeded when a request estimated at `tokens` and `usd` (None: its model has no price) would
    pass `limit` after `spend`; `what` names the request (a model), `whose` the budget (the run's, a block's)."""
    if limit is not None:
        _check(limit, Spent.of(spend), tokens, usd, what, whose)


def _check(limit: Budget, spent: Spent, tokens: int, usd: float | None, what: str, whose: str) -> None:
    if limit.requests is not None and spent.requests + 1 > limit.requests:
        raise BudgetExceeded(f"{whose} allows {limit.requests} requests and {spent.requests} were made: "
                             f"the request to {what} was not sent")
    if limit.tokens is not None and spent.tokens + tokens > limit.tokens:
        raise BudgetExceeded(f"{whose} allows {limit.tokens:,} tokens; {spent.tokens:,} were spent and the request "
                             f"to {what} may take {tokens:,} more (its input and max_tokens): it was not sent")
    if limit.usd is not None:
        if usd is None:
            raise BudgetExceeded(f"{whose} is ${limit.usd:g} and the price of {what} is unknown, so the request "
                                 "was not sent; add the model to a prices file (DIAGRAMA_PRICES)")
        if spent.unknown:
            raise BudgetExceeded(f"{whose} is ${limit.usd:g} and {spent.unknown} request(s) of this run had no "
                                 f"price: what was spent is unknown, so the request to {what} was not sent")
        if spent.usd + usd > limit.usd:
            raise BudgetExceeded(f"{whose} is ${limit.usd:g}; ${spent.usd:.6f} was spent and the request to {what} "
                                 f"may cost ${usd:.6f} more (its input and max_tokens): it was not sent")


def budget_from_text(texts: Iterable[str], option: str = "--budget") -> Budget:
    """`usd=0.1`, `tokens=20000,requests=5` (one or more, comma-separated or repeated) as a Budget; UsageError
    naming `option` and what is wrong."""
    limits: dict[str, str] = {}
    for text in texts:
        for pair in text.split(","):
            name, sign, value = pair.strip().partition("=")
            if not sign or name.strip() not in _LIMITS:
                raise UsageError(f"{option} takes usd=X, tokens=N or requests=N (comma-separated), not {pair.strip()!r}")
            limits[name.strip()] = value.strip()
    if not limits:
        raise UsageError(f"{option} takes usd=X, tokens=N or requests=N")
    try:
        return Budget.model_validate(limits)
    except ValueError as exc:
        details = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'budget'}: {e['msg'].lower()}"
                            for e in getattr(exc, "errors", lambda: [])())
        raise UsageError(f"{option}: {details or exc}") from None
