"""Issue 42, item 5, the studio's part: a diagram's published versions, Publish (refused while the diagram has errors,
and under --read-only) and Rollback; a save in the studio changes nothing `diagrama api` serves until Publish."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from blocks.registry import registry
from engine.runtime.api import run_async
from engine.runtime.context import Services
from engine.web.service.robots import Robots
from tests.web.studio_client import HEADERS, loaded, make_client, put
from tests.web.test_api_models import conforms

GREETER = """
diagram: greeter
blocks:
  - id: start
    type: Start
    inputs: {name: Ana}
    next: greet
  - id: greet
    type: Set
    set: {greeting: "Hello {{ name }}"}
"""


@pytest.fixture
def robots(tmp_path: Path) -> Path:
    folder = tmp_path / "robots"
    folder.mkdir()
    (folder / "greeter.yaml").write_text(textwrap.dedent(GREETER).lstrip(), encoding="utf-8")
    return folder


def served_greeting(folder: Path) -> str:
    """What a run of the greeter answers as `diagrama api` serves it (its live version; the file when never published)."""
    async def go() -> str:
        diagram = await Robots(folder, registry()).diagram("greeter")
        assert diagram is not None
        result = await run_async(diagram, {"name": "Bea"}, runs_dir=None, services=Services(offline=True))
        return str(result.variables["greeting"])

    return asyncio.run(go())


def test_publish_then_a_save_is_a_draft_until_the_next_publish(robots: Path, tmp_path: Path) -> None:
    client = make_client(robots, tmp_path / "runs")
    never = conforms("GET /api/diagrams/{path}/published", client("GET", "/api/diagrams/greeter.yaml/published"))
    assert never == {"state": "never", "live": None, "versions": [], "code_changes": [], "published": None}
    first = client("POST", "/api/diagrams/greeter.yaml/publish", json={"note": "first"}, headers=HEADERS)
    assert first.status_code == 200, first.text
    made = conforms("POST /api/diagrams/{path}/publish", first)
    assert made["state"] == "published" and made["live"] == 1 and made["published"] == 1
    [row] = made["versions"]
    assert row["number"] == 1 and row["note"] == "first" and row["live"] is True and row["files"] == 1
    assert served_greeting(robots) == "Hello Bea"

    view = loaded(client, "greeter.yaml")
    view["diagram"]["blocks"][1]["set"]["greeting"] = "Bye {{ name }}"
    assert put(client, "greeter.yaml", view["hash"], view["diagram"]).status_code == 200
    draft = client("GET", "/api/diagrams/greeter.yaml/published").json()
    assert draft["state"] == "draft" and draft["live"] == 1
    assert served_greeting(robots) == "Hello Bea"  # saved, not published: the API serves v1

    second = client("POST", "/api/diagrams/greeter.yaml/publish", json={"note": "bye"}, headers=HEADERS).json()
    assert second["state"] == "published" and second["live"] == 2
    assert [(v["number"], v["live"]) for v in second["versions"]] == [(2, True), (1, False)]  # newest first
    assert served_greeting(robots) == "Bye Bea"

    back = client("POST", "/api/diagrams/greeter.yaml/rollback", json={"version": 1}, headers=HEADERS)
    rolled = conforms("POST /api/diagrams/{path}/rollback", back)
    assert rolled["live"] == 3 and rolled["versions"][0]["rollback_of"] == 1 and rolled["state"] == "draft"
    assert served_greeting(robots) == "Hello Bea"
    missing = client("POST", "/api/diagrams/greeter.yaml/rollback", json={"version": 9}, headers=HEADERS)
    assert missing.status_code == 404 and "no version 9" in missing.json()["error"]


def test_publish_is_refused_for_a_diagram_with_errors(robots: Path, tmp_path: Path) -> None:
    client = make_client(robots, tmp_path / "runs")
    path = robots / "greeter.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("next: greet", "next: nowhere"), encoding="utf-8")
    refused = client("POST", "/api/diagrams/greeter.yaml/publish", json={"note": "broken"}, headers=HEADERS)
    assert refused.status_code == 422
    body = conforms("answer_refused", refused)
    assert body["problems"] and any("nowhere" in line for line in body["problems"])
    assert client("GET", "/api/diagrams/greeter.yaml/published").json()["state"] == "never"
    bad_note = client("POST", "/api/diagrams/greeter.yaml/publish", json={"note": 5}, headers=HEADERS)
    assert bad_note.status_code == 422


def test_publish_and_rollback_are_refused_under_read_only_and_cross_site(robots: Path, tmp_path: Path) -> None:
    read_only = make_client(robots, tmp_path / "runs", read_only=True)
    assert read_only("POST", "/api/diagrams/greeter.yaml/publish", json={"note": "x"}, headers=HEADERS).status_code == 403
    assert read_only("POST", "/api/diagrams/greeter.yaml/rollback", json={"version": 1},
                     headers=HEADERS).status_code == 403
    assert read_only("GET", "/api/diagrams/greeter.yaml/published").json()["state"] == "never"  # reading is allowed
    client = make_client(robots, tmp_path / "runs2")
    no_token = client("POST", "/api/diagrams/greeter.yaml/publish", json={"note": "x"},
                      headers={"origin": HEADERS["origin"]})
    assert no_token.status_code == 403
    assert not (robots / ".diagrama").exists()
