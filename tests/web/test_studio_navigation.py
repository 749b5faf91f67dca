"""The studio's navigation routes (engine/web/navigation.py, issue 43): the runs list's filters, a diagram's chat
sessions with their turns (and forgetting one), the gallery's examples and a copy of one with what it loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.web.studio_client import HEADERS, make_client
from tests.web.test_api_models import conforms

SESSIONS = "GET /api/diagrams/{path}/sessions"


def test_the_runs_list_filters_by_status_block_error_text_and_date(folder: Path, tmp_path: Path) -> None:
    client = make_client(folder, tmp_path / "runs")
    path = folder / "greeting_counter.yaml"
    for name in ("Ana", "Bruno"):
        started = client("POST", "/api/diagrams/greeting_counter.yaml/runs", json={"inputs": {"name": name}}, headers=HEADERS)
        assert started.status_code == 202, started.text
    path.write_text(path.read_text(), encoding="utf-8")

    def listed(query: str) -> list[dict[str, Any]]:
        return conforms("GET /api/diagrams/{path}/runs", client("GET", f"/api/diagrams/greeting_counter.yaml/runs?{query}"))

    assert len(listed("")) == 2
    assert len(listed("status=succeeded")) == 2 and listed("status=failed") == []
    assert len(listed("text=bruno")) == 1 and listed("text=carla") == []
    assert len(listed("block=start")) == 2 and listed("block=nowhere") == []
    assert listed("error=timeout") == []
    assert len(listed("since=2000-01-01")) == 2 and listed("until=2000-01-01") == []
    assert client("GET", "/api/diagrams/greeting_counter.yaml/runs?since=yesterday").status_code == 400


def test_a_diagrams_sessions_are_listed_with_their_turns_and_forgotten(client) -> None:
    for message in ("Hi, I'm Alice", "What is my name?"):
        started = client("POST", "/api/diagrams/chat_memory.yaml/chat",
                         json={"session": "studio-a", "inputs": {"message": message}}, headers=HEADERS)
        assert started.status_code == 202, started.text
    [session] = conforms(SESSIONS, client("GET", "/api/diagrams/chat_memory.yaml/sessions"))
    assert session["session"] == "studio-a" and session["turns"] == 2 and session["memory"]["turns"] == 2
    assert [turn["message"] for turn in session["runs"]] == ["Hi, I'm Alice", "What is my name?"]
    assert client("GET", "/api/diagrams/greeting_counter.yaml/sessions").json() == []

    assert client("DELETE", "/api/sessions/studio-a").status_code in (403, 415)  # not from the page
    assert client("DELETE", "/api/sessions/studio-a", json={}, headers=HEADERS).status_code == 204
    assert client("GET", "/api/diagrams/chat_memory.yaml/sessions").json() == []
    assert client("DELETE", "/api/sessions/studio-a", json={}, headers=HEADERS).status_code == 404


def test_the_gallery_lists_the_examples_and_copies_one_with_what_it_loads(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    client = make_client(served, tmp_path / "runs")
    examples = conforms("GET /api/examples", client("GET", "/api/examples"))
    by_file = {e["file"]: e for e in examples}
    assert by_file["triage_inbox.yaml"]["description"].startswith("Labels each message of a CSV file")
    assert set(by_file["triage_inbox.yaml"]["needs"]) >= {"classify_one.yaml", "data/customer_messages.csv"}
    assert by_file["greeting_counter.yaml"]["needs"] == []

    made = conforms("POST /api/examples", client("POST", "/api/examples",
                                                 json={"example": "triage_inbox.yaml", "path": "my_triage.yaml"},
                                                 headers=HEADERS))
    assert made["path"] == "my_triage.yaml" and "classify_one.yaml" in made["copied"] and made["kept"] == []
    assert (served / "data" / "customer_messages.csv").is_file()
    assert "diagram: my_triage" in (served / "my_triage.yaml").read_text(encoding="utf-8")
    assert client("GET", "/api/diagrams/my_triage.yaml").json()["valid"] is True
    again = client("POST", "/api/examples", json={"example": "triage_inbox.yaml", "path": "second.yaml"}, headers=HEADERS)
    assert again.json()["kept"] and again.json()["copied"] == []
    assert client("POST", "/api/examples", json={"example": "nope.yaml", "path": "x.yaml"}, headers=HEADERS).status_code == 404
    assert client("POST", "/api/examples", json={"example": "triage_inbox.yaml", "path": "my_triage.yaml"},
                  headers=HEADERS).status_code == 409
