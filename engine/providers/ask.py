"""One vendor request as a run makes it: pick the client, send, read the reply.

This is where a vendor's reply enters: a body the adapter cannot read becomes a
`provider_malformed_response`, an outcome that leaves nothing usable becomes its own
error (`judge`: refused, blocked, a truncated call), and each reply read is told to the
services' reply observers (`diagrama run --record`), for every request block alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import OutputTruncated, ProviderBlocked, ProviderError, ProviderRefused
from engine.providers.clients import client_for, simulator_for
from engine.providers.http import Exchanges, Retried, SendHooks, base_url, send
from engine.providers.simulator import BLOCK_HEADER
from engine.providers.streaming import TextSink
from engine.providers.wire import Adapter, HttpCall, Reply, WireError

if TYPE_CHECKING:
    from engine.runtime.context import Services

__all__ = ["Answer", "ask", "judge", "read_reply"]


@dataclass(frozen=True, slots=True)
class Answer:
    reply: Reply
    attempts: int
    cached: bool = False
    """Answered from the response cache (Services.response_cache), without calling the vendor."""


def read_reply(adapter: Adapter, body: Any) -> Reply:
    """The adapter's reading of a 2xx body; a shape or type it cannot read is a ProviderError."""
    try:
        return adapter.parse(body)
    except WireError as exc:
        raise ProviderError(f"{adapter.vendor} sent a reply we cannot read: {exc}",
                            type="provider_malformed_response") from None


def _detail(reply: Reply) -> str:
    said = [reply.refusal] if reply.refusal else []
    details = reply.stop_details or {}
    said += [f"{key}: {details[key]}" for key in ("category", "block_reason", "finish_message")
             if details.get(key) and details[key] != reply.refusal]
    return f" ({'; '.join(str(s) for s in said)})" if said else ""


def judge(vendor: str, reply: Reply) -> Reply:
    """The reply, unless its outcome left nothing usable: then the error of that outcome (docs/VENDORS.md, "Our conversation").

    A refusal or a safety/content filter with no text and no call is `provider_refused`; a blocked
    prompt is `provider_blocked`; a tool call cut off by the token or context limit is
    `output_truncated` (a cut-off text still succeeds, with finish `max_tokens`); a turn that
    ended on a tool call the vendor could not make (Gemini's MALFORMED_FUNCTION_CALL) is a
    `provider_error` with the vendor's value as its vendor type.
    """
    usable = bool(reply.text or reply.calls)
    stop = reply.stop_reason
    if reply.finish == "blocked":
        raise ProviderBlocked(f"{vendor} blocked the prompt ({stop}){_detail(reply)}", vendor_type=stop)
    if reply.finish == "refused" and not usable:
        raise ProviderRefused(f"{vendor} refused to answer (stop reason {stop}){_detail(reply)}", vendor_type=stop)
    if reply.finish in ("max_tokens", "context_exceeded") and reply.calls:
        names = ", ".join(call.name for call in reply.calls)
        raise OutputTruncated(f"{vendor} cut off a tool call ({names}) at the token limit (stop reason {stop}); "
                              "raise max_tokens", vendor_type=stop)
    if reply.finish == "tool_calls" and not usable:
        raise ProviderError(f"{vendor} ended the turn on a tool call it could not make (stop reason {stop})"
                            f"{_detail(reply)}", type="provider_error", vendor_type=stop)
    return reply


async def ask(
    services: Services,
    adapter: Adapter,
    call: HttpCall,
    *,
    block: str,
    timeout: float,  # noqa: ASYNC109  # bounds the retries too (see send)
    explicit_base: str | None = None,
    exchanges: Exchanges | None = None,
    retried: Retried | None = None,
    stream: bool = False,
    on_text: TextSink | None = None,
) -> Answer:
    """Send `call` for `block` (to the simulator when offline) and read the reply.

    With `stream`, the vendor is asked for a stream, read into the same reply; `on_text` hears each piece of its
    text as it arrives.
    """
    if stream:
        call = adapter.streamed(call)
    extra: dict[str, str] = {}
    pins = services.pins if services.pins is not None and services.pins.pinned(block) else None
    if pins is not None:  # a pinned answer (engine.testing.pins): scripted, online or not
        client = client_for(services, f"pinned-{adapter.vendor}", pins.transport(adapter.vendor))
        base = f"http://{adapter.vendor}.simulator"
        extra[BLOCK_HEADER] = block
    elif services.offline:
        client = client_for(services, f"simulated-{adapter.vendor}", simulator_for(services).transport(adapter.vendor))
        base = f"http://{adapter.vendor}.simulator"
        extra[BLOCK_HEADER] = block  # scripted replies are per block id
    else:
        client = client_for(services, adapter.vendor, cache=services.response_cache)
        base = base_url(explicit_base, adapter, services.environ)
    hooks = SendHooks(services.clock, services.sleep, services.limits, exchanges, retried, on_text=on_text)
    response = await send(client, base, call, adapter, block=block, timeout=timeout, hooks=hooks, extra_headers=extra,
                          assemble=adapter.assembler if stream else None)
    reply = read_reply(adapter, response.body)
    note = response.cache
    if note is not None:
        note.keep()  # a complete 2xx answer the adapter reads: kept (a hit keeps nothing)
    if services.reply_observers:
        seen = {"text": reply.text,
                "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.calls]}
        for observer in services.reply_observers:
            observer(block, seen)
    try:
        judge(adapter.vendor, reply)
    except ProviderError as exc:
        raise exc.at_block(block) from None
    return Answer(reply, response.attempts, note is not None and note.cached)
