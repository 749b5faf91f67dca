"""One vendor request as a run makes it: pick the client, send, read the reply.

This is where a vendor's reply enters: a body the adapter cannot read becomes a
`provider_malformed_response`, and each reply read is told to the services' reply
observers (`diagrama run --record`), for every request block alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import ProviderError
from engine.providers.clients import client_for, simulator_for
from engine.providers.http import Exchanges, Retried, SendHooks, base_url, send
from engine.providers.simulator import BLOCK_HEADER
from engine.providers.wire import Adapter, HttpCall, Reply, WireError

if TYPE_CHECKING:
    from engine.runtime.context import Services

__all__ = ["Answer", "ask", "read_reply"]


@dataclass(frozen=True, slots=True)
class Answer:
    reply: Reply
    attempts: int


def read_reply(adapter: Adapter, body: Any) -> Reply:
    """The adapter's reading of a 2xx body; a shape or type it cannot read is a ProviderError."""
    try:
        return adapter.parse(body)
    except WireError as exc:
        raise ProviderError(f"{adapter.vendor} sent a reply we cannot read: {exc}",
                            type="provider_malformed_response") from None


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
) -> Answer:
    """Send `call` for `block` (to the simulator when offline) and read the reply."""
    extra: dict[str, str] = {}
    if services.offline:
        client = client_for(services, f"simulated-{adapter.vendor}", simulator_for(services).transport(adapter.vendor))
        base = f"http://{adapter.vendor}.simulator"
        extra[BLOCK_HEADER] = block  # scripted replies are per block id
    else:
        client = client_for(services, adapter.vendor)
        base = base_url(explicit_base, adapter, services.environ)
    hooks = SendHooks(services.clock, services.sleep, services.limits, exchanges, retried)
    response = await send(client, base, call, adapter, block=block, timeout=timeout, hooks=hooks, extra_headers=extra)
    reply = read_reply(adapter, response.body)
    if services.reply_observers:
        seen = {"text": reply.text,
                "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.calls]}
        for observer in services.reply_observers:
            observer(block, seen)
    return Answer(reply, response.attempts)
