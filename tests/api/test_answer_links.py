"""A Wait's `notify:` and its signed answer link: the notification POST reaches a (local, fake) webhook with a link,
the link's form escapes what the run asks, the link answers the run through the API's resume path, and a tampered or
expired link is refused."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.providers.answer_links import answer_token
from tests.api.conftest import KEYS

SECRET = "answer-links-test-secret-0123456789"
NOTIFIED = """
diagram: notified
description: Waits for a person, telling them by webhook.
blocks:
  - id: start
    type: Start
    message_level: Debug
    inputs: {text: hello, hook: ""}
    next: ask
  - id: ask
    type: Wait
    with:
      prompt: "Send <script>alert('{{ text }}')</script>?"
      form: {type: object, properties: {approved: {type: boolean}, note: {type: string}}, required: [approved]}
      notify: {webhook: "{{ hook }}", allowed_hosts: ["127.0.0.1"]}
    set: {approved: "{{ answer.approved }}", note: "{{ answer.note }}"}
"""


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A fake webhook receiver on a loopback port: every JSON body it is sent."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hooks/diagrama", received
    server.shutdown()
    server.server_close()


@pytest.fixture
def app(make_app: Callable[..., Any], robots_dir: Path) -> Any:
    (robots_dir / "notified.yaml").write_text(NOTIFIED.lstrip(), encoding="utf-8")
    return make_app(offline=False, environ={"DIAGRAMA_API_KEYS": KEYS, "DIAGRAMA_ANSWER_SECRET": SECRET,
                                           "DIAGRAMA_PUBLIC_URL": "http://api.test/"})


def test_the_notification_carries_a_link_that_answers_the_run(app: Any, client: Callable[..., httpx.AsyncClient],
                                                             hook: tuple[str, list[dict[str, Any]]]) -> None:
    url, received = hook

    async def go() -> dict[str, Any]:
        async with client(app) as caller:
            first = await caller.post("/v1/robots/notified/runs", json={"inputs": {"text": "ciao", "hook": url}})
            link = received[0]["answer_url"] if received else ""
            path = urllib.parse.urlsplit(link).path
            async with httpx.AsyncClient(transport=caller._transport, base_url="http://api.test") as anyone:  # no key
                form = await anyone.get(path)
                answered = await anyone.post(path, data={"approved": "true", "note": "<b>ok</b>"})
                again = await anyone.post(path, data={"approved": "true"})
            after = await caller.get(f"/v1/runs/{first.json()['run_id']}")
            return {"first": first.json(), "form": form, "answered": answered, "again": again, "after": after.json()}

    got = asyncio.run(go())
    assert got["first"]["status"] == "waiting"
    sent = received[0]
    assert sent["run_id"] == got["first"]["run_id"] and sent["robot"] == "notified" and sent["block"] == "ask"
    assert sent["prompt"] == "Send <script>alert('ciao')</script>?" and sent["form"]["required"] == ["approved"]
    assert sent["answer_url"].startswith("http://api.test/v1/answers/")
    page = got["form"].text
    assert got["form"].status_code == 200 and got["form"].headers["content-type"].startswith("text/html")
    assert "<script>" not in page and "&lt;script&gt;alert(&#x27;ciao&#x27;)&lt;/script&gt;" in page
    assert 'name="approved"' in page and 'name="note"' in page
    assert got["answered"].status_code == 200, got["answered"].text
    deadline = time.monotonic() + 10
    after = got["after"]
    while after["status"] != "succeeded" and time.monotonic() < deadline:
        after = asyncio.run(_read(app, client, after["run_id"]))
    assert after["status"] == "succeeded" and after["variables"]["approved"] is True
    assert after["variables"]["note"] == "<b>ok</b>"
    assert got["again"].status_code == 409


async def _read(app: Any, client: Callable[..., httpx.AsyncClient], run_id: str) -> dict[str, Any]:
    await asyncio.sleep(0.05)
    async with client(app) as caller:
        found: dict[str, Any] = (await caller.get(f"/v1/runs/{run_id}")).json()
        return found


def test_a_tampered_or_expired_link_is_refused(app: Any, client: Callable[..., httpx.AsyncClient],
                                              hook: tuple[str, list[dict[str, Any]]]) -> None:
    url = hook[0]

    async def go() -> dict[str, int]:
        async with client(app) as caller:
            run = (await caller.post("/v1/robots/notified/runs", json={"inputs": {"hook": url}})).json()["run_id"]
            good = answer_token(SECRET, run, "ask", time.time() + 60)
            forged = answer_token("another-servers-secret-0123456789", run, "ask", time.time() + 60)
            expired = answer_token(SECRET, run, "ask", time.time() - 1)
            signature = good.split(".")[1]
            other = answer_token(SECRET, run, "other", time.time() + 60).split(".")[0]
            async with httpx.AsyncClient(transport=caller._transport, base_url="http://api.test") as anyone:
                return {"good": (await anyone.get(f"/v1/answers/{good}")).status_code,
                        "forged": (await anyone.get(f"/v1/answers/{forged}")).status_code,
                        "swapped": (await anyone.post(f"/v1/answers/{other}.{signature}",
                                                      data={"approved": "true"})).status_code,
                        "garbage": (await anyone.get("/v1/answers/not-a-token")).status_code,
                        "expired": (await anyone.post(f"/v1/answers/{expired}", data={"approved": "true"})).status_code,
                        "status": (await caller.get(f"/v1/runs/{run}")).json()["status"] == "waiting"}

    got = asyncio.run(go())
    assert got == {"good": 200, "forged": 403, "swapped": 403, "garbage": 403, "expired": 410, "status": True}


def test_a_notification_that_fails_is_traced_and_the_run_still_waits(
        app: Any, client: Callable[..., httpx.AsyncClient], tmp_path: Path) -> None:
    async def go() -> dict[str, Any]:
        async with client(app) as caller:
            first = await caller.post("/v1/robots/notified/runs",
                                      json={"inputs": {"hook": "https://hooks.elsewhere.test/x"}})
            return dict(first.json())

    first = asyncio.run(go())
    assert first["status"] == "waiting"
    from engine.runtime.trace import read_events

    events = read_events(tmp_path / "runs" / first["run_id"] / "trace.jsonl")
    told = [e for e in events if e["event"] == "wait_notified"]
    assert told and told[0]["ok"] is False and told[0]["error_type"] == "host_not_allowed"
    assert "hooks.elsewhere.test is not in notify.allowed_hosts" in told[0]["error"]
