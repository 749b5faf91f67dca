"""Signed webhooks (`POST /v1/hooks/{name}`, a diagram's `webhook:`): GitHub's, Stripe's and diagrama's HMAC
signatures accepted without an API key, the body mapped to inputs, answered 202 at once; a bad or stale signature
401 (one message), a replayed delivery 409, no such webhook 404, a body that is no JSON or does not fit 400, too
large 413; the secret in no trace and no log line."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import io
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import structlog

from engine.runs.service_logs import configure
from tests.api.conftest import AUTH, KEYS, inner

SECRET = "whsec-0123456789-topsecret"
HOOKED = """
diagram: {name}
webhook:
  secret_env: HOOK_SECRET
  scheme: {scheme}
  tolerance: 300
  inputs:
    title: "{{{{ body.issue.title }}}}"
    number: "{{{{ body.issue.number }}}}"
    agent: "{{{{ headers['user-agent'] }}}}"
blocks:
  - id: start
    type: Start
    message_level: Debug
    inputs: {{title: none, number: 0, agent: ""}}
    next: keep
  - id: keep
    type: Set
    set: {{kept: "{{{{ title }}}} #{{{{ number }}}}"}}
"""
ISSUE = {"action": "opened", "issue": {"title": "Login fails", "number": 42}, "repository": {"full_name": "o/r"}}


@pytest.fixture
def hooked(robots_dir: Path, make_app: Callable[..., Any]) -> Any:
    for scheme in ("github", "stripe", "hmac"):
        (robots_dir / f"{scheme}_hook.yaml").write_text(
            textwrap.dedent(HOOKED.format(name=f"{scheme}-hook", scheme=scheme)).lstrip(), encoding="utf-8")
    # A triggered run belongs to no key: an admin's reads it (engine.web.service.tenants).
    return make_app(environ={"DIAGRAMA_API_KEYS": KEYS, "HOOK_SECRET": SECRET}, admin_keys=("ci",))


def signed(scheme: str, body: bytes, *, secret: str = SECRET, at: float | None = None,
           delivery: str | None = None) -> dict[str, str]:
    """The headers the sender would send (the signature computed here, as GitHub's and Stripe's docs say)."""
    stamp = str(int(at if at is not None else time.time()))
    if scheme == "github":
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return {"X-Hub-Signature-256": f"sha256={digest}", "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
                "X-GitHub-Event": "issues", "User-Agent": "GitHub-Hookshot/abc"}
    digest = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    if scheme == "stripe":
        return {"Stripe-Signature": f"t={stamp},v1={digest},v0=ignored", "User-Agent": "Stripe/1.0"}
    return {"X-Diagrama-Signature": f"sha256={digest}", "X-Diagrama-Timestamp": stamp, "User-Agent": "mine"}


def post(app: Any, name: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    """The delivery, sent with no API key."""
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api.test") as caller:
            return await caller.post(f"/v1/hooks/{name}", content=body,
                                     headers={"Content-Type": "application/json", **headers})

    return asyncio.run(go())


def ended(app: Any, run_id: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        backend = inner(app).state.backend
        await backend.result(run_id)
        await backend.recorded()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api.test",
                                     headers=AUTH) as caller:
            return dict((await caller.get(f"/v1/runs/{run_id}")).json())

    return asyncio.run(go())


@pytest.mark.parametrize("scheme", ["github", "stripe", "hmac"])
def test_a_signed_delivery_starts_a_run_with_the_mapped_inputs(hooked: Any, scheme: str) -> None:
    body = orjson.dumps(ISSUE)
    answered = post(hooked, f"{scheme}_hook", body, signed(scheme, body))
    assert answered.status_code == 202, answered.text
    run_id = answered.json()["run_id"]
    assert answered.headers["x-run-id"] == run_id and answered.headers["location"] == f"/v1/runs/{run_id}"
    run = ended(hooked, run_id)
    assert run["status"] == "succeeded" and run["variables"]["kept"] == "Login fails #42"
    assert run["variables"]["agent"] == signed(scheme, body)["User-Agent"]
    recorded = inner(hooked).state.backend.store.run(run_id)
    assert recorded["trigger"] == "webhook"


@pytest.mark.parametrize("scheme", ["github", "stripe", "hmac"])
def test_a_wrong_or_missing_signature_is_401_saying_no_more(hooked: Any, scheme: str) -> None:
    body = orjson.dumps(ISSUE)
    forged = post(hooked, f"{scheme}_hook", body, signed(scheme, body, secret="guess"))
    bare = post(hooked, f"{scheme}_hook", body, {})
    tampered = post(hooked, f"{scheme}_hook", body.replace(b"42", b"43"), signed(scheme, body))
    assert [forged.status_code, bare.status_code, tampered.status_code] == [401, 401, 401]
    assert forged.json() == bare.json() == tampered.json() == {"error": "the request's signature does not verify",
                                                               "problems": []}


@pytest.mark.parametrize("scheme", ["stripe", "hmac"])
def test_a_timestamp_outside_the_tolerance_is_refused(hooked: Any, scheme: str) -> None:
    body = orjson.dumps(ISSUE)
    assert post(hooked, f"{scheme}_hook", body, signed(scheme, body, at=time.time() - 301)).status_code == 401
    assert post(hooked, f"{scheme}_hook", body, signed(scheme, body, at=time.time() + 301)).status_code == 401


@pytest.mark.parametrize("scheme", ["github", "stripe", "hmac"])
def test_a_delivery_sent_again_is_refused(hooked: Any, scheme: str) -> None:
    body = orjson.dumps(ISSUE)
    headers = signed(scheme, body, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert post(hooked, f"{scheme}_hook", body, headers).status_code == 202
    again = post(hooked, f"{scheme}_hook", body, headers)
    assert again.status_code == 409 and "received already" in again.json()["error"]


def test_no_such_webhook_is_404(hooked: Any) -> None:
    body = orjson.dumps(ISSUE)
    for name in ("nobody", "counter", "broken"):  # none, one with no webhook, one whose diagram has problems
        answered = post(hooked, name, body, signed("github", body))
        assert answered.status_code == 404 and answered.json()["problems"] == [], name


def test_only_the_hook_route_goes_without_a_key(hooked: Any) -> None:
    for path in ("/v1/robots", "/v1/hooks/github_hook/more", "/v1/hooks/"):
        async def go(path: str = path) -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=hooked),
                                         base_url="http://api.test") as caller:
                return await caller.post(path, json={})

        assert asyncio.run(go()).status_code == 401, path


def test_a_body_that_is_no_json_or_does_not_fit_is_400(hooked: Any) -> None:
    text = b"title=hello"
    assert post(hooked, "github_hook", text, signed("github", text)).status_code == 400
    wrong = orjson.dumps({"issue": {"title": "x", "number": "forty-two"}})
    answered = post(hooked, "github_hook", wrong, signed("github", wrong))
    assert answered.status_code == 400 and "number" in answered.json()["problems"][0]
    missing = orjson.dumps({"zen": "Keep it logically awesome."})  # GitHub's ping: no issue
    assert post(hooked, "github_hook", missing, signed("github", missing)).status_code == 400


def test_a_body_over_the_cap_is_413(hooked: Any) -> None:
    big = orjson.dumps({"issue": {"title": "x" * (1024 * 1024), "number": 1}})
    assert post(hooked, "github_hook", big, signed("github", big)).status_code == 413


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    captured = io.StringIO()
    configure("json", "debug", stream=captured)
    yield captured
    structlog.reset_defaults()


def test_the_secret_is_in_no_trace_and_no_log(logged: io.StringIO, hooked: Any, tmp_path: Path) -> None:
    body = orjson.dumps({"issue": {"title": f"leaked {SECRET}", "number": 7}})
    answered = post(hooked, "hmac_hook", body, signed("hmac", body))
    assert answered.status_code == 202
    run_id = answered.json()["run_id"]
    run = ended(hooked, run_id)
    assert SECRET not in orjson.dumps(run).decode()
    trace = (tmp_path / "runs" / run_id / "trace.jsonl").read_text()
    assert "leaked" in trace and SECRET not in trace
    assert post(hooked, "hmac_hook", body, signed("hmac", body, secret="nope")).status_code == 401
    assert "webhook_received" in logged.getvalue() and SECRET not in logged.getvalue()


def test_the_example_robot_runs_on_its_schedule_and_from_a_signed_github_delivery(tmp_path: Path) -> None:
    """diagrams/daily_digest.yaml as `diagrama api diagrams --offline` serves it: its weekday 08:00 Lisbon tick fires
    (the scheduler driven at that instant), and a GitHub issue delivery signed with its secret starts a run."""
    import datetime as dt
    import shutil
    import zoneinfo

    from engine.runtime.context import Services
    from engine.web.api import create_app

    folder = tmp_path / "diagrams"
    folder.mkdir()
    shutil.copy(Path(__file__).parents[2] / "diagrams" / "daily_digest.yaml", folder)
    app = create_app(folder, runs_dir=tmp_path / "runs", offline=True, admin_keys=("ci",), services=Services(
        environ={"DIAGRAMA_API_KEYS": KEYS, "GITHUB_HOOK_SECRET": SECRET}))
    monday = dt.datetime(2026, 12, 7, 8, 0, tzinfo=zoneinfo.ZoneInfo("Europe/Lisbon")).timestamp()
    scheduler = inner(app).state.scheduler

    async def tick() -> None:
        await scheduler.fire_due(monday + 0.5)
        await scheduler.settled()

    asyncio.run(tick())
    [(robot, index, when, scheduled, _lag)] = list(scheduler.fired)
    assert (robot, index, when) == ("daily_digest", 0, monday)
    assert ended(app, scheduled)["variables"]["topic"] == "yesterday's support tickets"
    body = orjson.dumps(ISSUE)
    answered = post(app, "daily_digest", body, signed("github", body))
    assert answered.status_code == 202, answered.text
    run = ended(app, answered.json()["run_id"])
    assert run["status"] == "succeeded" and run["variables"]["topic"] == "Login fails"
    assert "Login fails" in run["variables"]["digest"]  # the simulator's answer, offline


def test_a_callback_diagrama_signs_passes_a_webhooks_hmac_check() -> None:
    # One scheme, written by the callbacks and checked by the webhooks: one diagrama's callback can start another's robot.
    from engine.web.service.callbacks import signature
    from engine.web.service.signatures import delivery_key

    body, stamp = b'{"run_id": "r1", "status": "succeeded"}', "1796563764"
    headers = {"x-diagrama-signature": signature("s3cret-callback-key", stamp, body), "x-diagrama-timestamp": stamp}
    assert delivery_key("hmac", b"s3cret-callback-key", body, headers, now=1796563764.0, tolerance=300) is not None
    assert delivery_key("hmac", b"another-key-altogether", body, headers, now=1796563764.0, tolerance=300) is None


WAITING = """
diagram: asks-hook
webhook:
  secret_env: HOOK_SECRET
  scheme: hmac
  inputs: {title: "{{ body.issue.title }}"}
blocks:
  - id: start
    type: Start
    inputs: {title: none}
    next: ask
  - id: ask
    type: Wait
    with: {prompt: "Triage {{ title }}?", form: {type: object}}
    set: {answered: "{{ title }}"}
"""


def test_a_triggered_run_that_waited_is_still_its_triggers_once_answered(hooked: Any, robots_dir: Path) -> None:
    (robots_dir / "asks_hook.yaml").write_text(WAITING.lstrip(), encoding="utf-8")
    body = orjson.dumps(ISSUE)
    run_id = post(hooked, "asks_hook", body, signed("hmac", body)).json()["run_id"]
    assert ended(hooked, run_id)["status"] == "waiting"
    backend = inner(hooked).state.backend
    assert backend.store.run(run_id)["trigger"] == "webhook"

    async def answer() -> dict[str, Any]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=hooked), base_url="http://api.test",
                                     headers=AUTH) as caller:
            resumed = await caller.post(f"/v1/runs/{run_id}/resume", json={"answer": {}, "wait": True})
            assert resumed.status_code == 200, resumed.text
            await backend.recorded()
            return dict((await caller.get(f"/v1/runs/{run_id}")).json())

    run = asyncio.run(answer())
    assert run["status"] == "succeeded" and run["variables"]["answered"] == "Login fails"
    assert backend.store.run(run_id)["trigger"] == "webhook"  # the resume's record knew no trigger
