"""A Wait's `notify: {email: {to, subject, from}}`: when a run stops at the Wait, an e-mail through SMTP.

The server is the environment's, never the diagram's: `DIAGRAMA_SMTP_URL`, `smtp://user:password@host:587` (STARTTLS,
required unless the host is this machine: localhost, 127.0.0.1, ::1) or `smtps://user:password@host:465` (TLS from
the start); `DIAGRAMA_SMTP_FROM` is the sender when the Wait names none. The message is plain text: the prompt, the
form's fields and the signed answer link (blocks/_wait_notify.py). The standard library's smtplib sends it on a
thread, within the notification's timeout. The password never leaves this module: it is in no event, log line or
error (each error is scrubbed of it, and of the run's secrets). Without a URL nothing is sent: a traced skip
(blocks/_wait_notify.py) rather than a load warning, as the process that runs a diagram may have an environment
that the one that checks it lacks.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import unquote, urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema

if TYPE_CHECKING:
    from email.message import EmailMessage

    from engine import Report, RunContext

__all__ = ["SMTP_FROM_ENV", "SMTP_URL_ENV", "EmailNotify", "check_written", "send_email"]

SMTP_URL_ENV = "DIAGRAMA_SMTP_URL"
SMTP_FROM_ENV = "DIAGRAMA_SMTP_FROM"
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_ADDRESS = r"[^\s@<>()\[\],;:\"\\]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+"
_WRITTEN_ADDRESS = re.compile(rf"(?:{_ADDRESS}|[^<>@,;\r\n]*<{_ADDRESS}>)")
_TEMPLATE_MARKS = ("{{", "{%", "{#")


def _address(value: str) -> str:
    if not _WRITTEN_ADDRESS.fullmatch(value.strip()):
        raise ValueError(f"{value!r} is no e-mail address (name@example.com, or Name <name@example.com>)")
    return value.strip()


Address = Annotated[str, AfterValidator(_address)]


_TO_SCHEMA = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]}


def _listed(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class EmailNotify(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    to: Annotated[list[Address], BeforeValidator(_listed), WithJsonSchema(_TO_SCHEMA)] = Field(
        min_length=1, description="who is told: an address, or a list of them")
    subject: str = Field(default="", description="the subject (a template, rendered in the run's scope); none: "
                                                 "'ROBOT waits for your answer'")
    from_: Address | None = Field(default=None, alias="from", description="the sender (none: $DIAGRAMA_SMTP_FROM)")


def check_written(notify: Any, report: Report) -> None:
    """Load-time checks of `notify:` as written where it holds templates (a subject), which the loader's own check of
    the inputs leaves to the run: every problem but those of values a run renders. (A constant `notify:` is checked
    whole by the loader, a missing `to` included.)"""
    from blocks._wait_notify import WaitNotify

    if not isinstance(notify, dict):
        return
    templated = _templated(notify)
    if not templated:
        return
    try:
        WaitNotify.model_validate(notify)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            if error["type"] != "missing" and (not templated or (
                    error["type"] != "extra_forbidden" and _templated(error.get("input")))):
                continue
            where = ".".join(str(part) for part in ("notify", *error["loc"]))
            report(where, f"{where}: {error['msg']}", None)


def _templated(value: Any) -> bool:
    if isinstance(value, str):
        return any(mark in value for mark in _TEMPLATE_MARKS)
    if isinstance(value, dict):
        return any(_templated(v) for v in value.values())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False


@dataclasses.dataclass(frozen=True, repr=False)
class _Server:
    """Where the mail goes, read from DIAGRAMA_SMTP_URL; no repr (the password is in it)."""

    host: str
    port: int
    tls: bool  # smtps: TLS from the first byte; else STARTTLS (a remote host must offer it)
    user: str
    password: str


def _server(url: str) -> _Server:
    """DIAGRAMA_SMTP_URL read; a ValueError whose message never quotes the URL (it holds the password)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("smtp", "smtps"):
        raise ValueError(f"{SMTP_URL_ENV} must start smtp:// (STARTTLS) or smtps:// (TLS)")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{SMTP_URL_ENV} has a port that is no number") from None
    if not parts.hostname:
        raise ValueError(f"{SMTP_URL_ENV} names no host")
    return _Server(parts.hostname, port or (465 if parts.scheme == "smtps" else 587), parts.scheme == "smtps",
                   unquote(parts.username or ""), unquote(parts.password or ""))


async def send_email(url: str, spec: EmailNotify, prompt: str, form: dict[str, Any] | None, link: str | None,
                     seconds: float, context: RunContext) -> str | None:
    """Mail the Wait's question; None when sent, else why not (scrubbed of the password and the run's secrets)."""
    from email.message import EmailMessage

    try:
        server = _server(url)
    except ValueError as exc:
        return str(exc)
    redact = context.trace.redactor.text
    robot = context.diagram.name
    message = EmailMessage()
    message["Subject"] = " ".join(redact(spec.subject or f"{robot} waits for your answer").split())
    message["From"] = spec.from_ or context.services.environ.get(SMTP_FROM_ENV) or (
        server.user if "@" in server.user else f"diagrama@{server.host}")
    message["To"] = ", ".join(spec.to)
    message.set_content(_body(redact(prompt), form, link, context))
    try:
        import asyncio  # loaded when a run sends: validate needs no event loop

        await asyncio.wait_for(asyncio.to_thread(_send, server, message, seconds), seconds)
    except TimeoutError:
        return f"no answer from the SMTP server {server.host}:{server.port} in {seconds:g} s"
    except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors, as are refused connections and TLS's
        said = str(exc) or type(exc).__name__
        for secret in {server.password, url} - {""}:
            said = said.replace(secret, "[REDACTED]")
        return redact(f"the e-mail to {server.host}:{server.port} failed: {type(exc).__name__}: {said}")
    return None


def _send(server: _Server, message: EmailMessage, timeout: float) -> None:
    """One SMTP conversation, on a thread: TLS (smtps, or STARTTLS to a host not this machine), login, send."""
    import smtplib
    import ssl

    tls = ssl.create_default_context()
    client = (smtplib.SMTP_SSL(server.host, server.port, timeout=timeout, context=tls) if server.tls
              else smtplib.SMTP(server.host, server.port, timeout=timeout))
    with client:
        client.ehlo()
        if not server.tls and server.host not in _LOCAL_HOSTS:
            if not client.has_extn("starttls"):
                raise smtplib.SMTPNotSupportedError("the server offers no STARTTLS: nothing is sent in the clear "
                                                    "(smtps:// for TLS from the start)")
            client.starttls(context=tls)
            client.ehlo()
        if server.user:
            client.login(server.user, server.password)
        client.send_message(message)


def _body(prompt: str, form: dict[str, Any] | None, link: str | None, context: RunContext) -> str:
    """The message's text: the question, the form's fields, the link (or how else to answer), the run."""
    lines = [prompt, ""]
    fields = (form or {}).get("properties") if isinstance(form, dict) else None
    if isinstance(fields, dict) and fields:
        required = set((form or {}).get("required") or ())
        lines.append("The answer's fields:")
        for name, field in fields.items():
            said = field if isinstance(field, dict) else {}
            kind = said.get("type", "any")
            note = ", required" if name in required else ""
            about = f": {said['description']}" if said.get("description") else ""
            lines.append(f"  - {name} ({kind}{note}){about}")
        lines.append("")
    if link:
        lines += ["Answer here:", link]
    else:
        lines.append(f"Answer with: diagrama resume {context.run_id} --input name=value")
    lines += ["", f"Run {context.run_id} of {context.diagram.name} waits at {context.address}."]
    return "\n".join(lines) + "\n"
