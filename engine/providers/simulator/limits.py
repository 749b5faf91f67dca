"""The request's output limit, held to by the answers the simulator makes up: a vendor never says more than it may.

Each vendor's limit field: Anthropic `max_tokens` (required), Groq `max_completion_tokens` (or its deprecated
alias `max_tokens`), Gemini `generationConfig.maxOutputTokens` (optional). A made-up answer whose estimate (4
characters a token, 40 characters a tool call) is over the limit is cut to what fits, told as exactly the limit,
and ends on the vendor's max-tokens stop reason (`finish: max_tokens`, rendered by `replies` as for a scripted cut:
a tool call's arguments cut off too). Thinking counts within the limit, as each vendor counts it, so it leaves
that much less room for the answer. Scripted replies are told as written and never pass through here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.providers.simulator.replies import Outcome

__all__ = ["output_limit", "thinking_tokens", "within_limit"]


def output_limit(vendor: str, body: dict[str, Any]) -> int | None:
    """The most output tokens the request allows; None where it sets no limit."""
    if vendor == "anthropic":
        found = body.get("max_tokens")
    elif vendor == "groq":
        found = body.get("max_completion_tokens", body.get("max_tokens"))
    else:
        found = (body.get("generationConfig") or {}).get("maxOutputTokens")
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def thinking_tokens(thinking: str | None) -> int:
    """The simulator's count of a reply's thinking (as Groq's reasoning_tokens and Gemini's thoughtsTokenCount)."""
    return max(1, len(thinking) // 4) if thinking else 0


def within_limit(vendor: str, body: dict[str, Any], outcome: Outcome) -> Outcome:
    """The made-up outcome, or, when it does not fit the request's limit, the outcome cut at the limit."""
    limit = output_limit(vendor, body)
    thought = thinking_tokens(outcome.thinking)
    if limit is None or outcome.output_tokens + thought <= limit:
        return outcome
    room = max(0, limit - thought)
    # Anthropic's output_tokens and Groq's completion_tokens include the thinking; Gemini tells its thoughts apart.
    told = max(0, limit - thought) if vendor == "gemini" else limit
    return dataclasses.replace(outcome, text=outcome.text[: room * 4], output_tokens=told,
                               script={**outcome.script, "finish": "max_tokens"})
