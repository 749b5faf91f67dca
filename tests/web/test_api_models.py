"""The studio API's answers, their models (engine/web/models.py) and the committed JSON Schema the page's types are
generated from (engine/web/api.schema.json): the three agree, route by route, on real answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from starlette.routing import Route

from blocks.registry import registry
from engine.format.spec import COMMON_BLOCK_KEYS, ERROR_LEVELS, MESSAGE_LEVELS
from engine.web.api_schema import ANSWERS, API_SCHEMA, schema_text
from engine.web.app import create_app
from tests.web.studio_client import HEADERS, ROOT, make_client

SCHEMA = json.loads(API_SCHEMA.read_text(encoding="utf-8"))
UI_FORMAT_FIXTURE = ROOT / "engine" / "web" / "ui" / "src" / "test" / "format.json"


def conforms(route: str, response: httpx.Response) -> Any:
    """The answer's JSON, after checking it against the committed schema's entry for `route`."""
    body = response.json() if response.content else None
    validator = Draft202012Validator({"$defs": SCHEMA["$defs"], **SCHEMA["properties"][route]})
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]
    assert not problems, f"{route} answered what its schema does not allow: {problems[:5]}"
    return body


def test_the_committed_schema_is_what_the_models_give() -> None:
    assert API_SCHEMA.read_text(encoding="utf-8") == schema_text(), \
        "engine/web/api.schema.json differs from engine/web/models.py: run `python -m engine.web.models` and commit it"


def test_every_api_route_has_its_answer_model_and_every_model_its_route(tmp_path: Path) -> None:
    guard = create_app(tmp_path, tmp_path / "runs", registry(), token="t")
    routes = {f"{method} {route.path.replace(':path', '')}"
              for route in guard.app.routes if isinstance(route, Route) and route.path.startswith("/api/")
              for method in (route.methods or set()) - {"HEAD"}}
    assert routes == set(ANSWERS)
    assert set(SCHEMA["properties"]) == {*ANSWERS, "error", "conflict", "answer_refused"}


@pytest.fixture
def client(folder: Path, tmp_path: Path):
    (folder / "broken.yaml").write_text("diagram: broken\nblocks: [\n", encoding="utf-8")
    (folder / "scenarios").mkdir()
    return make_client(folder, tmp_path / "runs")


@pytest.mark.slow
def test_reading_answers_match_the_schema(client) -> None:
    conforms("GET /api/session", client("GET", "/api/session"))
    conforms("GET /api/format", client("GET", "/api/format"))
    palette = conforms("GET /api/blocks", client("GET", "/api/blocks"))
    assert {entry["type"]: entry["ports"] for entry in palette}["Loop"] == ["body"]
    listed = conforms("GET /api/diagrams", client("GET", "/api/diagrams"))
    assert {"order_agent.yaml", "broken.yaml"} <= {entry["path"] for entry in listed}
    for path in ("order_agent.yaml", "classify_messages.yaml", "policy_agent.yaml"):
        view = conforms("GET /api/diagrams/{path}", client("GET", f"/api/diagrams/{path}"))
        assert view["diagram"]["blocks"] and view["compiled"]["links"]
    levels = conforms("GET /api/diagrams/{path}", client("GET", "/api/diagrams/order_agent.yaml"))["compiled"]["levels"]
    assert levels["ask"]["message_level"]["inherited"] is True and "from" in levels["ask"]["message_level"]
    conforms("GET /api/diagrams/{path}/hash", client("GET", "/api/diagrams/order_agent.yaml/hash"))
    conforms("GET /api/diagrams/{path}/csv", client("GET", "/api/diagrams/classify_messages.yaml/csv",
                                                     params={"file": "data/customer_messages.csv"}))


def test_a_file_that_is_not_a_diagram_answers_its_problem_with_every_field_and_no_diagram(client, tmp_path: Path) -> None:
    view = conforms("GET /api/diagrams/{path}", client("GET", "/api/diagrams/broken.yaml"))
    assert view["diagram"] is None and view["valid"] is False
    [problem] = view["problems"]
    assert problem["file"] is None and problem["line"] == 3 and problem["severity"] == "error" and "YAML" in problem["message"]
    # A mapping whose blocks the page cannot draw: no diagram, the problems saying why.
    (tmp_path / "diagrams" / "five.yaml").write_text("diagram: d\nblocks: 5\n", encoding="utf-8")
    view = conforms("GET /api/diagrams/{path}", client("GET", "/api/diagrams/five.yaml"))
    assert view["diagram"] is None and any(p["line"] == 2 for p in view["problems"])
    # A YAML list is not a diagram file at all (a data file): the diagram routes answer 404.
    (tmp_path / "diagrams" / "list.yaml").write_text("- a\n- b\n", encoding="utf-8")
    gone = client("GET", "/api/diagrams/list.yaml")
    assert gone.status_code == 404 and set(gone.json()) == {"error"}


def test_editing_answers_match_the_schema(client) -> None:
    view = client("GET", "/api/diagrams/order_agent.yaml").json()
    diagram = view["diagram"]
    conforms("POST /api/validate", client("POST", "/api/validate", json={"diagram": diagram, "path": "order_agent.yaml"},
                                          headers=HEADERS))
    diagram["blocks"][1]["position"] = [10, 20]
    saved = conforms("PUT /api/diagrams/{path}", client("PUT", "/api/diagrams/order_agent.yaml",
                                                        json={"base_hash": view["hash"], "diagram": diagram}, headers=HEADERS))
    conflict = client("PUT", "/api/diagrams/order_agent.yaml", json={"base_hash": view["hash"], "diagram": diagram},
                      headers=HEADERS)
    assert conflict.status_code == 409
    assert conforms("conflict", conflict)["hash"] == saved["hash"]
    created = conforms("POST /api/diagrams", client("POST", "/api/diagrams", json={"path": "new.yaml"}, headers=HEADERS))
    renamed = conforms("POST /api/diagrams/{path}/rename", client("POST", f"/api/diagrams/{created['path']}/rename",
                                                                  json={"to": "other.yaml"}, headers=HEADERS))
    deleted = client("DELETE", f"/api/diagrams/{renamed['path']}", headers=HEADERS | {"content-type": "application/json"})
    assert deleted.status_code == 204 and conforms("DELETE /api/diagrams/{path}", deleted) is None
    refused = client("GET", "/api/diagrams/nowhere.yaml")
    assert refused.status_code == 404 and conforms("error", refused) == {"error": "not found"}


def test_run_answers_match_the_schema(client) -> None:
    started = client("POST", "/api/diagrams/order_agent.yaml/runs", json={"inputs": {}, "offline": True}, headers=HEADERS)
    assert started.status_code == 202
    run_id = conforms("POST /api/diagrams/{path}/runs", started)["run_id"]
    run = conforms("GET /api/runs/{run_id}", client("GET", f"/api/runs/{run_id}"))
    assert run["status"] == "succeeded" and run["steps"] and all(step["payloads"] == [] for step in run["steps"])
    listed = conforms("GET /api/diagrams/{path}/runs", client("GET", "/api/diagrams/order_agent.yaml/runs"))
    assert [entry["run_id"] for entry in listed] == [run_id] and isinstance(listed[0]["started"], float)
    saved = client("POST", f"/api/runs/{run_id}/scenario", json={"path": "scenarios/order.scenario.yaml"}, headers=HEADERS)
    assert conforms("POST /api/runs/{run_id}/scenario", saved) == {"path": "scenarios/order.scenario.yaml"}
    results = conforms("POST /api/scenarios/run", client("POST", "/api/scenarios/run", json={"folder": "scenarios"},
                                                         headers=HEADERS))["results"]
    assert [(r["file"], r["passed"]) for r in results] == [("scenarios/order.scenario.yaml", True)]


def test_the_format_facts_are_the_engines_and_the_pages_test_fixture_is_them(client) -> None:
    facts = client("GET", "/api/format").json()
    assert facts["common_block_keys"] == sorted(COMMON_BLOCK_KEYS)
    assert facts["levels"] == {
        "error_level": {"default": "Default", "names": list(ERROR_LEVELS)},
        "message_level": {"default": "Default", "names": list(MESSAGE_LEVELS)},
    }
    assert facts["links"] == {"next": "next", "error": "on_error", "target": "to", "condition": "when"}
    # the front end's tests draw with these facts: they must be the server's own
    assert json.loads(UI_FORMAT_FIXTURE.read_text(encoding="utf-8")) == facts
