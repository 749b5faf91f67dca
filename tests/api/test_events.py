"""A run's events as Server-Sent Events, on a real server: in order as they happen, `text_delta` from the fake event
source, resumed with Last-Event-ID without gaps, replayed from the trace, and a client that leaves mid-stream."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from engine.runtime.trace import read_events as read_trace
from tests.api.conftest import AUTH, GATES, KEY, Served, inner, read_events


def start(served: Served, robot: str, **body: Any) -> str:
    answered = httpx.post(f"{served.url}/v1/robots/{robot}/runs", json={"wait": False, **body}, headers=AUTH)
    assert answered.status_code == 202, answered.text
    return str(answered.json()["run_id"])


def stream(served: Served, run_id: str, last: int | None = None, stop_after: int | None = None) -> list[Any]:
    headers = {**AUTH, **({"Last-Event-ID": str(last)} if last is not None else {})}
    with httpx.stream("GET", f"{served.url}/v1/runs/{run_id}/events", headers=headers, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return read_events(response, stop_after)


def wait_for(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def test_events_come_in_order_with_text_deltas_and_end_with_run_finished(serve: Callable[..., Served],
                                                                         make_app: Callable[..., Any],
                                                                         tmp_path: Any) -> None:
    served = serve(make_app(admin_keys=("ci",)))  # an admin key reads events as the trace has them (test_shown)
    run_id = start(served, "speaker", inputs={"pieces": ["Bom", " ", "dia"]})
    events = stream(served, run_id)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert events[0].event == "run_started" and events[-1].event == "run_finished"
    deltas = [orjson.loads(e.data) for e in events if e.event == "text_delta"]
    assert [(d["block"], d["text"]) for d in deltas] == [("speak", "Bom"), ("speak", " "), ("speak", "dia")]
    # Event N is the trace's Nth line, as the trace has it.
    trace = read_trace(tmp_path / "runs" / run_id / "trace.jsonl")
    assert [orjson.loads(e.data) for e in events] == trace


def test_a_reconnect_with_last_event_id_goes_on_without_gaps(serve: Callable[..., Served]) -> None:
    served = serve()
    GATES.pop("resume", None)
    run_id = start(served, "holder", inputs={"gate": "resume"})
    first = stream(served, run_id, stop_after=4)  # the client leaves while the run holds
    assert [e.id for e in first] == [1, 2, 3, 4]
    GATES.setdefault("resume", __import__("threading").Event()).set()
    rest = stream(served, run_id, last=first[-1].id)
    whole = stream(served, run_id)
    assert [e.id for e in first + rest] == [e.id for e in whole] == list(range(1, len(whole) + 1))
    assert [e.data for e in first + rest] == [e.data for e in whole]
    assert rest[-1].event == "run_finished"


@pytest.mark.slow
def test_a_finished_runs_events_are_replayed_from_its_trace_by_a_later_server(
        serve: Callable[..., Served], make_app: Callable[..., Any]) -> None:
    first = serve()
    run_id = start(first, "speaker")
    live = stream(first, run_id)
    later = serve(make_app())  # holds nothing of the run in memory
    replayed = stream(later, run_id)
    assert [(e.id, e.event, e.data) for e in replayed] == [(e.id, e.event, e.data) for e in live]
    assert [e.id for e in stream(later, run_id, last=3)] == [e.id for e in live][3:]


def test_a_client_that_leaves_mid_stream_leaves_the_run_running_and_nothing_held(serve: Callable[..., Served]) -> None:
    served = serve()
    backend = inner(served.app).state.backend
    GATES.pop("leave", None)
    run_id = start(served, "holder", inputs={"gate": "leave"})
    record = backend.runs[run_id]
    with httpx.stream("GET", f"{served.url}/v1/runs/{run_id}/events", headers=AUTH, timeout=30) as response:
        lines = response.iter_lines()  # held: a line iterator dropped half-read closes the connection (httpcore)
        got = read_events(lines, stop_after=2)
        assert len(got) == 2 and record.listeners == 1
    # The connection is closed; the server notices at its next write or disconnect message.
    wait_for(lambda: record.listeners == 0)
    assert not record.done.done()  # still holding: the client's leaving did not stop it
    GATES["leave"].set()
    wait_for(lambda: record.done.done())
    found = httpx.get(f"{served.url}/v1/runs/{run_id}", headers=AUTH).json()
    assert found["status"] == "succeeded" and found["variables"]["done"] is True
    assert backend.active() == 0 and record.listeners == 0


def test_a_waiting_client_that_leaves_does_not_stop_the_run(serve: Callable[..., Served]) -> None:
    served = serve()
    backend = inner(served.app).state.backend
    GATES.pop("wait", None)
    body = orjson.dumps({"inputs": {"gate": "wait"}})
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as caller:  # a client that waits, then gives up mid-wait
        caller.sendall(b"POST /v1/robots/holder/runs HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n"
                       + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        wait_for(lambda: any(r.robot == "holder" for r in backend.runs.values()))
    [record] = [r for r in backend.runs.values() if r.robot == "holder"]
    wait_for(lambda: "wait" in GATES)  # the run's record is there a moment before its Hold block makes the gate
    assert not record.done.done()
    GATES["wait"].set()
    wait_for(lambda: record.done.done())
    assert record.status == "succeeded"


def test_secrets_never_reach_an_event(serve: Callable[..., Served]) -> None:
    served = serve()
    run_id = start(served, "echoer", inputs={"text": f"key {KEY}"}, message_level="Detailed")
    events = stream(served, run_id)
    assert events and all(KEY not in e.data for e in events)
    assert any("[REDACTED]" in e.data for e in events)


def test_events_of_an_unknown_run_or_with_a_bad_last_event_id_are_refused(serve: Callable[..., Served]) -> None:
    served = serve()
    assert httpx.get(f"{served.url}/v1/runs/20260101-000000-abcdef/events", headers=AUTH).status_code == 404
    run_id = start(served, "counter")
    refused = httpx.get(f"{served.url}/v1/runs/{run_id}/events", headers={**AUTH, "Last-Event-ID": "x"})
    assert refused.status_code == 400
