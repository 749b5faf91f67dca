"""A Wait's `notify: {email: ...}`: a real (local) SMTP server receives the message, its subject rendered in the run's
scope and the answer link in its body; the SMTP password is in no trace line and no result; a server that cannot be
reached or refuses the login is traced and the run still waits; offline or without DIAGRAMA_SMTP_URL nothing is
sent; a bad address, a missing `to` or an unknown key is refused at load, at its line."""

from __future__ import annotations

import asyncio
import email
import email.policy
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from blocks.registry import registry
from engine import DiagramInvalid, RunResult, Services, execute
from engine.compile.loader import load_diagram
from engine.runs.checkpoints import SqliteCheckpoints
from engine.runtime.trace import read_events

PASSWORD = "smtp-p4ss/w0rd+sec"
"""Spelled percent-encoded in the URL (its slash and plus), as people must write it."""
USER = "robot@mail.test"
SECRET = "answer-links-test-secret-0123456789"
NOTIFIED = """
diagram: mailed
description: Waits for a person, telling them by e-mail.
blocks:
  - id: start
    type: Start
    inputs: {text: hello, reviewer: ops@example.com}
    next: ask
  - id: ask
    type: Wait
    with:
      prompt: "Send the reply about {{ text }}?"
      form: {type: object, properties: {approved: {type: boolean, description: "go ahead"}, note: {type: string}},
             required: [approved]}
      notify:
        email: {to: ["{{ reviewer }}", boss@example.com], subject: "Approve {{ text | upper }}?",
                from: "Robots <robots@example.com>"}
    set: {approved: "{{ answer.approved }}"}
"""


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append((list(envelope.rcpt_tos), parsed))
        return "250 OK"


def _login(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    good = isinstance(data, LoginPassword) and data.login.decode() == USER and data.password.decode() == PASSWORD
    return AuthResult(success=good, handled=False)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def inbox() -> Iterator[tuple[int, _Inbox]]:
    """A real SMTP server on a loopback port, on its own thread, asking for a login (over plain text: loopback)."""
    handler = _Inbox()
    port = _free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, authenticator=_login, auth_require_tls=False)
    controller.start()
    yield port, handler
    controller.stop()


def _url(port: int, password: str = PASSWORD) -> str:
    return f"smtp://robot%40mail.test:{password.replace('/', '%2F').replace('+', '%2B')}@127.0.0.1:{port}"


def _run(tmp_path: Path, environ: dict[str, str], *, offline: bool = False,
         text: str = NOTIFIED) -> tuple[RunResult, list[dict[str, Any]], bytes]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "mailed.yaml").write_text(text.lstrip(), encoding="utf-8")
    diagram = load_diagram(tmp_path / "mailed.yaml", registry())
    store = SqliteCheckpoints(tmp_path / "runs" / "diagrama.db")
    services = Services(environ=environ, checkpoints=store, offline=offline)
    result = asyncio.run(execute(diagram, {"text": "ciao"}, runs_dir=tmp_path / "runs", services=services))
    assert result.trace is not None
    return result, read_events(result.trace), result.trace.read_bytes()


def _told(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["event"] == "wait_notified"]


def test_the_email_reaches_the_server_with_the_subject_rendered_and_the_answer_link(
        tmp_path: Path, inbox: tuple[int, _Inbox]) -> None:
    port, handler = inbox
    result, events, trace = _run(tmp_path, {"DIAGRAMA_SMTP_URL": _url(port), "DIAGRAMA_ANSWER_SECRET": SECRET,
                                            "DIAGRAMA_PUBLIC_URL": "http://api.test/"})
    assert result.status == "waiting", result.errors
    assert len(handler.messages) == 1
    recipients, message = handler.messages[0]
    assert recipients == ["ops@example.com", "boss@example.com"]
    assert message["Subject"] == "Approve CIAO?" and message["From"] == "Robots <robots@example.com>"
    assert message["To"] == "ops@example.com, boss@example.com"
    body = message.get_content().replace("\r\n", "\n")
    assert body.startswith("Send the reply about ciao?\n")
    assert "  - approved (boolean, required): go ahead" in body and "  - note (string)" in body
    assert "http://api.test/v1/answers/" in body and result.run_id in body
    told = _told(events)
    assert [(e["channel"], e["ok"], e["to"], e["link"]) for e in told] == [("email", True, 2, True)]
    assert PASSWORD.encode() not in trace and b"p4ss" not in trace
    assert "p4ss" not in repr(result)


@pytest.mark.parametrize("case", ["refused", "wrong password"])
def test_a_failed_email_is_traced_without_the_password_and_the_run_still_waits(
        tmp_path: Path, inbox: tuple[int, _Inbox], case: str) -> None:
    port, handler = inbox
    url = _url(_free_port()) if case == "refused" else _url(port, password="not-" + PASSWORD)
    result, events, trace = _run(tmp_path, {"DIAGRAMA_SMTP_URL": url})
    assert result.status == "waiting", result.errors
    assert handler.messages == []
    told = _told(events)
    assert len(told) == 1 and told[0]["channel"] == "email" and told[0]["ok"] is False
    expected = "ConnectionRefusedError" if case == "refused" else "SMTPAuthenticationError"
    assert expected in told[0]["error"] and "127.0.0.1" in told[0]["error"]
    assert b"p4ss" not in trace and "p4ss" not in repr(result)


def test_offline_or_without_a_server_nothing_is_sent(tmp_path: Path, inbox: tuple[int, _Inbox]) -> None:
    port, handler = inbox
    _, offline, _ = _run(tmp_path / "offline", {"DIAGRAMA_SMTP_URL": _url(port)}, offline=True)
    _, unset, _ = _run(tmp_path / "unset", {})
    assert handler.messages == []
    assert [(e["channel"], e["ok"], e["skipped"]) for e in _told(offline) + _told(unset)] == [
        ("email", False, True), ("email", False, True)]
    assert "offline" in _told(offline)[0]["error"] and "DIAGRAMA_SMTP_URL is not set" in _told(unset)[0]["error"]


@pytest.mark.parametrize(("email_", "line", "said"), [
    ('{to: [ops@example.com, "not an address"], subject: "Hi {{ text }}"}', 4, "'not an address' is no e-mail address"),
    ("{to: ops@example.com, from: robots}", 4, "'robots' is no e-mail address"),
    ('{to: "ops@", subject: "Hi"}', 3, "'ops@' is no e-mail address"),
    ('{subject: "Hi {{ text }}"}', 3, "notify.email.to: Field required"),
    ("{subject: Hi}", 3, "missing required key 'to'"),
    ('{to: ops@example.com, subjet: "Hi {{ text }}"}', 4, "Extra inputs are not permitted"),
    ("{to: [], subject: Hi}", 3, "at least 1 item"),
])
def test_a_bad_email_is_refused_at_load_at_its_line(tmp_path: Path, email_: str, line: int, said: str) -> None:
    written = email_.replace("{to: [ops@example.com, ", "{to: [ops@example.com,\n          ").replace(
        "{to: ops@example.com, ", "{to: ops@example.com,\n          ").replace('{to: "ops@", ', '{to: "ops@",\n      ')
    (tmp_path / "bad.yaml").write_text(f"""diagram: bad
blocks:
  - {{id: start, type: Start, inputs: {{text: hi}}, next: ask}}
  - id: ask
    type: Wait
    with:
      prompt: Go on?
      notify:
        email: {written}
""", encoding="utf-8")
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(tmp_path / "bad.yaml", registry())
    problems = caught.value.problems
    assert len(problems) == 1, problems
    assert said in problems[0].message and problems[0].block == "ask"
    assert problems[0].line == 6 + line


def test_notify_needs_a_webhook_or_an_email(tmp_path: Path) -> None:
    (tmp_path / "none.yaml").write_text("""diagram: none
blocks:
  - {id: start, type: Start, next: ask}
  - id: ask
    type: Wait
    with: {prompt: Go on?, notify: {timeout: 5}}
""", encoding="utf-8")
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(tmp_path / "none.yaml", registry())
    assert "notify needs a webhook, an email, or both" in caught.value.problems[0].message
