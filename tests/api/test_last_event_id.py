"""`Last-Event-ID` values that are no event number (a non-ASCII digit, a number too long for an event's, a byte
that is no text) are refused with 400 and the API's error body, before any stream starts: never a traceback, never a
200 whose stream breaks (security review, finding A)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api.conftest import AUTH, GATES, inner, read_events


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def _until_done(caller: httpx.AsyncClient, run_id: str) -> None:
    # Polled as a client would (the run is a task of this loop: it ends after a few turns).
    while (await caller.get(f"/v1/runs/{run_id}")).json()["status"] == "running":  # noqa: ASYNC110
        await asyncio.sleep(0.01)


def _refused(answered: httpx.Response) -> None:
    assert answered.status_code == 400, answered.text
    body = answered.json()
    assert set(body) == {"error", "problems"}
    assert "Last-Event-ID" in body["error"] and "Traceback" not in answered.text


@pytest.mark.parametrize("value", [
    b"\xb2",  # latin-1 for '²': str.isdigit() says yes, int() says no
    b"\xd9\xa3",  # an Arabic-Indic digit in UTF-8: not latin-1 text, and no ASCII digit
    b"1" * 5000,  # past int()'s 4300-digit limit
    b"1" * 30,  # past what an event number (and a Redis stream id) can be
    b"9" * 19,  # 19 digits: one past the bound
    b"-1", b"1.5", b"0x10", b"1e3", b"+1", b"\xef\xbc\x91",  # signs, fractions, bases, a full-width '1'
])
def test_a_last_event_id_that_is_no_event_number_is_a_400_on_a_finished_run(
        client: Callable[..., httpx.AsyncClient], value: bytes) -> None:
    async def go() -> httpx.Response:
        async with client() as caller:
            run_id = (await caller.post("/v1/robots/counter/runs", json={"wait": False})).json()["run_id"]
            await _until_done(caller, run_id)
            return await caller.get(f"/v1/runs/{run_id}/events", headers={**AUTH, "Last-Event-ID": value})

    _refused(run(go()))


def test_a_30_digit_last_event_id_on_a_run_still_going_is_a_400_not_a_broken_stream(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app()
    gate = GATES.setdefault("last-event-id", threading.Event())
    gate.clear()

    async def go() -> tuple[httpx.Response, str]:
        async with client(app) as caller:
            accepted = await caller.post("/v1/robots/holder/runs", json={"wait": False,
                                                                         "inputs": {"gate": "last-event-id"}})
            run_id = str(accepted.json()["run_id"])
            try:
                record = inner(app).state.backend.runs[run_id]
                # It has events, and holds at its Hold block: certainly still going (the record has no event to wait on).
                while record.last < 3:  # noqa: ASYNC110
                    await asyncio.sleep(0.005)
                assert not record.done.done()
                # A timeout: a handler that took the value would follow the run, which holds until the gate opens.
                answered = await asyncio.wait_for(caller.get(
                    f"/v1/runs/{run_id}/events", headers={**AUTH, "Last-Event-ID": "1" * 30}), timeout=10)
            finally:
                gate.set()
            await _until_done(caller, run_id)
            return answered, run_id

    try:
        answered, _run_id = run(go())
    finally:
        gate.set()
        GATES.pop("last-event-id", None)
    _refused(answered)


@pytest.mark.parametrize(("value", "after"), [("0", 0), ("3", 3), (" 3 ", 3), ("", 0), ("999999999999999999", None)])
def test_a_last_event_id_within_bounds_still_streams(client: Callable[..., httpx.AsyncClient], value: str,
                                                     after: int | None) -> None:
    async def go() -> tuple[httpx.Response, httpx.Response]:
        async with client() as caller:
            run_id = (await caller.post("/v1/robots/counter/runs", json={"wait": False})).json()["run_id"]
            await _until_done(caller, run_id)
            return (await caller.get(f"/v1/runs/{run_id}/events"),
                    await caller.get(f"/v1/runs/{run_id}/events", headers={**AUTH, "Last-Event-ID": value}))

    whole, answered = run(go())
    assert answered.status_code == 200, answered.text
    numbers = [event.id for event in read_events(iter(whole.text.splitlines()))]
    assert len(numbers) > 3
    expected = numbers[after:] if after is not None else []  # 18 nines: after every event there will ever be
    assert [event.id for event in read_events(iter(answered.text.splitlines()))] == expected
