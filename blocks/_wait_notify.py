"""A Wait's `notify:`: when a run stops at the Wait, POST `{run_id, robot, block, prompt, form, answer_url}` to a
webhook, through HttpRequest's own call (blocks/http_request.py: the host held to `allowed_hosts`, retries, trace).

`answer_url` is a signed link that answers the Wait (engine.providers.answer_links) under `diagrama api`'s
`/v1/answers/{token}`: made when the environment names the server's public URL (DIAGRAMA_PUBLIC_URL) and its signing
key (DIAGRAMA_ANSWER_SECRET), for a Wait of the top run; else null. A notification that fails is traced
(`wait_notified`, ok: false, with the error) and never fails the run; offline, nothing is sent.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from engine import Event, RunError

if TYPE_CHECKING:
    from engine import RunContext

__all__ = ["WaitNotify", "notify"]

DEFAULT_LINK_S = 7 * 24 * 3600.0
"""How long an answer link answers when the Wait has no timeout: a week."""


class WaitNotify(BaseModel):
    model_config = ConfigDict(extra="forbid")

    webhook: str = Field(min_length=1, description="the URL a JSON POST goes to when the run stops at the Wait")
    allowed_hosts: list[str] = Field(default_factory=lambda: [],
                                     description="hosts the webhook may reach (none: the diagram's allowed_hosts)")
    timeout: float = Field(default=10, gt=0, description="seconds for the POST, retries included")


async def notify(spec: WaitNotify, prompt: str, form: dict[str, Any] | None, wait_timeout: float | None,
                 context: RunContext) -> None:
    """Send the Wait's notification; its outcome is a `wait_notified` event, never the run's failure."""
    from blocks.http_request import HttpRequestInputs, send_request

    address = context.address
    if context.services.offline:
        context.emit(Event.WAIT_NOTIFIED, block=address, ok=False, error="offline: no notification is sent")
        return
    link = _answer_url(context, address, wait_timeout)
    body = {"run_id": context.run_id, "robot": context.diagram.name, "block": address,
            "prompt": context.trace.redactor.text(prompt),
            "form": form, "answer_url": link}
    hosts = spec.allowed_hosts or context.diagram.spec.allowed_hosts
    try:
        inputs = HttpRequestInputs.model_validate({"method": "POST", "url": spec.webhook, "json": body,
                                                   "timeout": spec.timeout, "retries": 2})
        answer = await send_request(inputs, context, hosts, observed=False)
    except RunError as exc:
        said = exc.message if not spec.allowed_hosts else exc.message.replace(
            "the diagram's top-level allowed_hosts", "the Wait's notify.allowed_hosts").replace(
            "the diagram's allowed_hosts", "notify.allowed_hosts")
        context.emit(Event.WAIT_NOTIFIED, block=address, ok=False, error=said, error_type=exc.type)
        return
    context.emit(Event.WAIT_NOTIFIED, block=address, ok=True, status=answer["status"], link=link is not None)


def _answer_url(context: RunContext, address: str, wait_timeout: float | None) -> str | None:
    """The signed link answering this Wait, or None (no public URL or key; a Wait inside a Subdiagram's child)."""
    from engine.providers import ANSWER_SECRET_ENV, PUBLIC_URL_ENV, answer_token

    environ = context.services.environ
    secret, public = environ.get(ANSWER_SECRET_ENV), environ.get(PUBLIC_URL_ENV)
    if not secret or not public or context.prefix:
        return None
    expires = time.time() + (wait_timeout or DEFAULT_LINK_S)
    try:
        token = answer_token(secret, context.run_id, address, expires)
    except ValueError:  # a key too short to sign with: no link rather than a forgeable one
        return None
    return f"{public.rstrip('/')}/v1/answers/{token}"
