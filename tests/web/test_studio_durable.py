"""The studio's durable runs through its API: waiting runs and their answers, replay from a block, chat turns and
their memory (engine/web/durable.py), on a copy of the examples, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.web.studio_client import HEADERS, TOKEN, make_client
from tests.web.test_api_models import conforms


def waiting_run(client) -> dict[str, Any]:
    started = client("POST", "/api/diagrams/approve_reply.yaml/runs", json={"offline": True}, headers=HEADERS)
    assert started.status_code == 202
    run: dict[str, Any] = started.extensions["run"]
    assert run["status"] == "waiting", run
    conforms("GET /api/runs/{run_id}", client("GET", f"/api/runs/{run['run_id']}"))
    return run


def test_a_waiting_run_is_listed_with_its_prompt_and_form(client) -> None:
    run = waiting_run(client)
    assert run["waiting"]["block"] == "approve"
    assert run["waiting"]["prompt"].startswith("Send this reply? (simulated")
    assert run["waiting"]["form"]["required"] == ["approved"] and run["waiting"]["timeout"] == 86400
    assert run["checkpointed"] is True and run["replay_of"] is None
    listed = conforms("GET /api/diagrams/{path}/runs", client("GET", "/api/diagrams/approve_reply.yaml/runs"))
    assert [(r["run_id"], r["status"]) for r in listed] == [(run["run_id"], "waiting")]
    assert listed[0]["waiting"] == run["waiting"]


def test_a_wrong_answer_shows_its_problems_and_the_run_stays_waiting(client) -> None:
    run_id = waiting_run(client)["run_id"]
    refused = client("POST", f"/api/runs/{run_id}/resume", json={"answer": {"approved": "yes", "note": 3}},
                     headers=HEADERS)
    assert refused.status_code == 422
    conforms("answer_refused", refused)
    assert refused.json()["problems"] == ['approved: "yes" is not of type "boolean"', 'note: 3 is not of type "string"']
    assert "still waiting" in refused.json()["error"]
    missing = client("POST", f"/api/runs/{run_id}/resume", json={"answer": {}}, headers=HEADERS)
    assert missing.status_code == 422 and missing.json()["problems"] == ['answer: "approved" is a required property']
    assert client("GET", f"/api/runs/{run_id}").json()["status"] == "waiting"


def test_an_answer_resumes_the_run_under_its_own_id_which_then_cannot_be_answered_again(client) -> None:
    run_id = waiting_run(client)["run_id"]
    resumed = client("POST", f"/api/runs/{run_id}/resume", json={"answer": {"approved": True}, "offline": True},
                     headers=HEADERS)
    assert resumed.status_code == 202 and conforms("POST /api/runs/{run_id}/resume", resumed) == {"run_id": run_id}
    run = resumed.extensions["run"]
    assert run["status"] == "succeeded" and run["waiting"] is None
    assert run["variables"]["approved"] is True and run["variables"]["sent"].startswith("(simulated")
    assert [(s["block"], s["status"]) for s in run["steps"]] == [
        ("start", "succeeded"), ("draft", "succeeded"), ("approve", "waiting"), ("approve", "succeeded"),
        ("send", "succeeded")]
    again = client("POST", f"/api/runs/{run_id}/resume", json={"answer": {"approved": False}}, headers=HEADERS)
    assert again.status_code == 409 and "succeeded" in again.json()["error"]
    listed = client("GET", "/api/diagrams/approve_reply.yaml/runs").json()
    assert [(r["status"], r["waiting"]) for r in listed] == [("succeeded", None)]
    # its first part ran before this answer: it is no scenario
    saved = client("POST", f"/api/runs/{run_id}/scenario", json={"path": "x.scenario.yaml"}, headers=HEADERS)
    assert saved.status_code == 409 and "resumed" in saved.json()["error"]


def test_answers_are_runs_guarded_as_runs_are(client, folder: Path, tmp_path: Path) -> None:
    run_id = waiting_run(client)["run_id"]
    url = f"/api/runs/{run_id}/resume"
    body = {"answer": {"approved": True}}
    foreign = client("POST", url, json=body, headers={"x-diagrama-token": TOKEN, "origin": "https://evil.example"})
    assert foreign.status_code == 403
    assert client("POST", url, json=body, headers={"origin": "http://127.0.0.1:8765"}).status_code == 403
    online = client("POST", url, json=body | {"offline": False}, headers=HEADERS)
    assert online.status_code == 403 and "--allow-online" in online.json()["error"]
    assert client("POST", "/api/runs/nope/resume", json=body, headers=HEADERS).status_code == 404
    assert client("GET", f"/api/runs/{run_id}").json()["status"] == "waiting"
    # another studio over another folder does not see this run, even sharing the runs folder
    other = tmp_path / "other"
    other.mkdir()
    elsewhere = make_client(other, tmp_path / "runs")
    assert elsewhere("POST", url, json=body, headers=HEADERS).status_code == 404
    # --read-only shows and runs diagrams: answering is running
    read_only = make_client(folder, tmp_path / "runs", read_only=True)
    answered = read_only("POST", url, json=body, headers=HEADERS)
    assert answered.status_code == 202 and answered.extensions["run"]["status"] == "succeeded"


def test_replay_from_a_block_starts_a_new_linked_run_from_the_scope_it_had_there(client, folder: Path) -> None:
    run_id = waiting_run(client)["run_id"]
    client("POST", f"/api/runs/{run_id}/resume", json={"answer": {"approved": False}}, headers=HEADERS)
    assert client("GET", f"/api/runs/{run_id}").json()["variables"]["sent"] == ""
    # the second half changed on disk: `hold` now says so
    path = folder / "approve_reply.yaml"
    path.write_text(path.read_text().replace('      sent: ""\n', '      sent: "held"\n'), encoding="utf-8")
    replayed = client("POST", f"/api/runs/{run_id}/replay", json={"block": "hold"}, headers=HEADERS)
    assert replayed.status_code == 202 and replayed.json()["run_id"] != run_id
    run = replayed.extensions["run"]
    assert run["status"] == "succeeded" and run["replay_of"] == run_id
    assert [s["block"] for s in run["steps"]] == ["hold"]
    assert run["variables"]["sent"] == "held" and run["variables"]["approved"] is False
    assert run["variables"]["draft"].startswith("(simulated")  # the old run's scope, no request sent again
    never = client("POST", f"/api/runs/{run_id}/replay", json={"block": "send"}, headers=HEADERS)
    assert never.status_code == 409 and "never reached block 'send'" in never.json()["error"]
    assert client("POST", f"/api/runs/{run_id}/replay", json={"block": 3}, headers=HEADERS).status_code == 422


def test_a_run_that_is_not_durable_has_no_checkpoints_to_replay(client, folder: Path) -> None:
    path = folder / "greeting_counter.yaml"
    path.write_text(path.read_text().replace("type: Start\n", "type: Start\n    durable: false\n", 1), encoding="utf-8")
    run = client("POST", "/api/diagrams/greeting_counter.yaml/runs", json={}, headers=HEADERS).extensions["run"]
    assert run["status"] == "succeeded" and run["checkpointed"] is False
    refused = client("POST", f"/api/runs/{run['run_id']}/replay", json={"block": "start"}, headers=HEADERS)
    assert refused.status_code == 409 and "no durable run" in refused.json()["error"]


def test_chat_turns_remember_and_a_new_session_starts_afresh(client) -> None:
    def turn(session: str, message: str) -> dict[str, Any]:
        started = client("POST", "/api/diagrams/chat_memory.yaml/chat",
                         json={"session": session, "inputs": {"message": message}}, headers=HEADERS)
        assert started.status_code == 202, started.text
        run: dict[str, Any] = started.extensions["run"]
        assert run["status"] == "succeeded" and run["session"] == session
        return run

    first = turn("studio-a", "Hi, I'm Alice")
    assert first["variables"]["answer"] == "(simulated claude-sonnet-4-5) You said: Hi, I'm Alice"
    memory = conforms("GET /api/sessions/{session}", client("GET", "/api/sessions/studio-a"))
    assert memory["turns"] == 1 and memory["diagram"] == "chat_memory.yaml" and memory["held_by"] is None
    assert memory["memory"]["turns"] == 1 and len(memory["memory"]["history"]) == 2
    turn("studio-a", "What is my name?")
    memory = client("GET", "/api/sessions/studio-a").json()
    assert memory["turns"] == 2 and memory["memory"]["turns"] == 2
    assert [m["content"] for m in memory["memory"]["history"] if m["role"] == "user"] == [
        "Hi, I'm Alice", "What is my name?"]
    turn("studio-b", "Hello")
    assert client("GET", "/api/sessions/studio-b").json()["memory"]["turns"] == 1
    assert client("GET", "/api/sessions/studio-a").json()["turns"] == 2


def test_chat_refusals(client) -> None:
    def chat(path: str, body: Any) -> Any:
        return client("POST", f"/api/diagrams/{path}/chat", json=body, headers=HEADERS)

    no_memory = chat("greeting_counter.yaml", {"session": "s"})
    assert no_memory.status_code == 422 and "keeps no memory" in no_memory.json()["error"]
    for body in ({"session": "a b"}, {"session": ""}, {}, {"session": "s", "inputs": [1]}, {"session": "x" * 129}):
        assert chat("chat_memory.yaml", body).status_code == 422
    assert chat("chat_memory.yaml", {"session": "s", "offline": False}).status_code == 403
    assert chat("chat_memory.yaml", {"session": "s", "inputs": {"nope": 1}}).status_code == 400
    assert client("GET", "/api/sessions/unknown").status_code == 404
    assert client("GET", "/api/sessions/a%20b").status_code == 404


def test_a_turn_waits_for_its_session_held_elsewhere_and_is_shown_running_meanwhile(folder: Path, tmp_path: Path) -> None:
    """A turn of a session another run holds (`diagrama run --session` in a terminal) waits for it, shown as
    running, then starts from what that run stored: turns never overlap, none is lost."""
    import asyncio

    import httpx

    from blocks.registry import registry
    from engine.format.snapshot import encode
    from engine.runs.checkpoints import open_checkpoints
    from engine.web.app import create_app

    runs = tmp_path / "runs"
    store = open_checkpoints(None, runs)
    assert store.try_claim_session("held", str((folder / "chat_memory.yaml").resolve()), "terminal-run").held
    app = create_app(folder, runs, registry(), token=TOKEN)

    async def go() -> dict[str, Any]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as client:
            started = await client.post("/api/diagrams/chat_memory.yaml/chat", headers=HEADERS,
                                        json={"session": "held", "inputs": {"message": "second"}})
            run_id = started.json()["run_id"]
            for _ in range(5):
                await asyncio.sleep(0.05)
                shown = (await client.get(f"/api/runs/{run_id}")).json()
                assert (shown["status"], shown["count"]) == ("running", 0), shown
            # the terminal's turn ends, storing its memory: the studio's turn starts from it
            store.release_session("held", "terminal-run", encode({"history": [{"role": "user", "content": "first"}],
                                                                  "turns": 7}))
            for _ in range(200):
                await asyncio.sleep(0.05)
                shown = (await client.get(f"/api/runs/{run_id}")).json()
                if shown["status"] != "running":
                    break
            session = (await client.get("/api/sessions/held")).json()
            return {"run": shown, "session": session}

    try:
        found = asyncio.run(go())
    finally:
        store.close()
    assert found["run"]["status"] == "succeeded"
    assert found["session"]["turns"] == 2 and found["session"]["memory"]["turns"] == 8
    assert [m["content"] for m in found["session"]["memory"]["history"] if m["role"] == "user"] == ["first", "second"]


def test_no_key_reaches_the_store_or_a_page_from_a_waiting_run_or_a_chat(folder: Path, tmp_path: Path) -> None:
    """A key given as an input (and echoed by the offline model) stays out of the run store's rows, checkpoints and
    sessions, and out of the waiting prompt, the run and the session the page reads."""
    from engine.runtime.context import Services

    key = "sk-ant-api03-StudioDurableTestKey0123456789"
    services = Services(environ={"ANTHROPIC_API_KEY": key})
    runs = tmp_path / "runs"
    client = make_client(folder, runs, services=services)
    started = client("POST", "/api/diagrams/approve_reply.yaml/runs", json={"inputs": {"message": f"my key {key}"}},
                     headers=HEADERS)
    run = started.extensions["run"]
    assert run["status"] == "waiting" and "[REDACTED]" in run["waiting"]["prompt"]
    answered = client("POST", f"/api/runs/{run['run_id']}/resume", json={"answer": {"approved": True, "note": key}},
                      headers=HEADERS)
    assert answered.extensions["run"]["status"] == "succeeded"
    chat = client("POST", "/api/diagrams/chat_memory.yaml/chat", json={"session": "k", "inputs": {"message": key}},
                  headers=HEADERS)
    assert chat.extensions["run"]["status"] == "succeeded"
    pages = [client("GET", f"/api/runs/{run['run_id']}").text, client("GET", "/api/sessions/k").text,
             client("GET", "/api/diagrams/approve_reply.yaml/runs").text, answered.extensions["run"].__repr__()]
    assert all(key not in page for page in pages)
    assert "[REDACTED]" in client("GET", "/api/sessions/k").text
    stored = b"".join(path.read_bytes() for path in runs.glob("diagrama.db*"))
    assert stored and key.encode() not in stored
