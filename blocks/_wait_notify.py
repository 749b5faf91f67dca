"""A Wait's `notify:`: when a run stops at the Wait, POST `{run_id, robot, block, prompt, form, answer_url}` to a
webhook, through HttpRequest's own call (blocks/http_request.py: the host held to `allowed_hosts`, retries, trace),
and/or mail someone (`email: {to, subject, from}`, through the environment's SMTP server: blocks/_wait_email.py).

`answer_url` is a signed link that answers the Wait (engine.providers.answer_links) under `diagrama api`'s
`/v1/answers/{token}`: made when the environment names the server's public URL (DIAGRAMA_PUBLIC_URL) and its signing
key (DIAGRAMA_ANSWER_SECRET), for a Wait of the top run; else null. Each channel's outcome is a `wait_notified`
event (`channel`: webhook or email); one that fails is traced (ok: false, with the error) and logged, and never
fails the run; offline, nothing is sent (traced as skipped).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from blocks._wait_email import EmailNotify
from engine import Event, RunError

if TYPE_CHECKING:
    from engine import RunContext

__all__ = ["WaitNotify", "notify"]

_log = logging.getLogger("diagrama.wait")

DEFAULT_LINK_S = 7 * 24 * 3600.0
"""How long an answer link answers when the Wait has no timeout: a week."""


class WaitNotify(BaseModel):
    model_config = ConfigDict(extra="forbid")

    webhook: str | None = Field(default=None, min_length=1,
                                description="the URL a JSON POST goes to when the run stops at the Wait")
    email: EmailNotify | None = Field(default=None, description="{to, subject, from}: an e-mail through "
                                                                 "$DIAGRAMA_SMTP_URL when the run stops at the Wait")
    allowed_hosts: list[str] = Field(default_factory=lambda: [],
                                     description="hosts the webhook may reach (none: the diagram's allowed_hosts)")
    timeout: float = Field(default=10, gt=0, description="seconds for the POST (retries included), and for the e-mail")

    @model_validator(mode="after")
    def _somewhere(self) -> WaitNotify:
        if self.webhook is None and self.email is None:
            raise ValueError("notify needs a webhook, an email, or both")
        return self


async def notify(spec: WaitNotify, prompt: str, form: dict[str, Any] | None, wait_timeout: float | None,
                 context: RunContext) -> None:
    """Send the Wait's notifications; each one's outcome is a `wait_notified` event, never the run's failure."""
    address = context.address
    channels = [name for name in ("webhook", "email") if getattr(spec, name) is not None]
    if context.services.offline:
        for channel in channels:
            context.emit(Event.WAIT_NOTIFIED, block=address, channel=channel, ok=False, skipped=True,
                         error="offline: no notification is sent")
        return
    link = _answer_url(context, address, wait_timeout)
    if spec.webhook is not None:
        await _post(spec, spec.webhook, prompt, form, link, context)
    if spec.email is not None:
        from blocks._wait_email import SMTP_URL_ENV, send_email

        url = context.services.environ.get(SMTP_URL_ENV)
        if not url:
            _failed(context, "email", f"{SMTP_URL_ENV} is not set: no e-mail is sent", skipped=True)
            return
        failed = await send_email(url, spec.email, prompt, form, link, spec.timeout, context)
        if failed is None:
            context.emit(Event.WAIT_NOTIFIED, block=address, channel="email", ok=True, to=len(spec.email.to),
                         link=link is not None)
        else:
            _failed(context, "email", failed)


async def _post(spec: WaitNotify, webhook: str, prompt: str, form: dict[str, Any] | None, link: str | None,
                context: RunContext) -> None:
    """The webhook's JSON POST, through HttpRequest's call."""
    from blocks.http_request import HttpRequestInputs, send_request

    address = context.address
    body = {"run_id": context.run_id, "robot": context.diagram.name, "block": address,
            "prompt": context.trace.redactor.text(prompt),
            "form": form, "answer_url": link}
    hosts = spec.allowed_hosts or context.diagram.spec.allowed_hosts
    try:
        inputs = HttpRequestInputs.model_validate({"method": "POST", "url": webhook, "json": body,
                                                   "timeout": spec.timeout, "retries": 2})
        answer = await send_request(inputs, context, hosts, observed=False)
    except RunError as exc:
        said = exc.message if not spec.allowed_hosts else exc.message.replace(
            "the diagram's top-level allowed_hosts", "the Wait's notify.allowed_hosts").replace(
            "the diagram's allowed_hosts", "notify.allowed_hosts")
        _failed(context, "webhook", said, error_type=exc.type)
        return
    context.emit(Event.WAIT_NOTIFIED, block=address, channel="webhook", ok=True, status=answer["status"],
                 link=link is not None)


def _failed(context: RunContext, channel: str, error: str, **more: Any) -> None:
    """A notification not sent: traced and logged (`error` holds no secret: the run's are scrubbed from it)."""
    said = context.trace.redactor.text(error)
    context.emit(Event.WAIT_NOTIFIED, block=context.address, channel=channel, ok=False, error=said, **more)
    _log.warning("run %s, Wait %s: the %s notification was not sent: %s", context.run_id, context.address, channel,
                 said)


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
