"""The studio's edit API and its guard, through httpx against the ASGI app on a copy of the examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from blocks.registry import registry
from tests.web.studio_client import HEADERS, ORIGIN, TOKEN, loaded, make_client, put

# -- reading ------------------------------------------------------------------------------------------------


def test_get_returns_hash_diagram_as_json_problems_and_compiled_picture(client, folder: Path) -> None:
    view = loaded(client)
    import hashlib

    assert view["hash"] == hashlib.sha256((folder / "order_agent.yaml").read_bytes()).hexdigest()
    assert view["diagram"]["diagram"] == "order-agent"
    assert [b["id"] for b in view["diagram"]["blocks"]] == ["start", "ask", "dispatch", "apologise", "done"]
    assert view["problems"] == []
    links = {(link["source"], link["target"]): link for link in view["compiled"]["links"]}
    assert links[("ask", "dispatch")]["when"] == "{{ called_tools | length > 0 }}" and links[("ask", "dispatch")]["order"] == 1
    assert links[("ask", "done")]["order"] == 2 and links[("ask", "apologise")]["kind"] == "error"
    assert view["compiled"]["levels"]["ask"]["error_level"] == {"value": "Handle", "inherited": True, "from": "Start 'start'"}
    assert {"question", "history"} <= set(view["compiled"]["scope"]["ask"]["with"])
    assert "called_tools" in view["compiled"]["scope"]["ask"]["when"]
    assert any(g["group"] == "orders" and any(t["name"] == "get_order_status" for t in g["tools"]) for g in view["registries"])


def test_a_problem_in_a_registry_names_that_file_and_its_own_line(client, folder: Path) -> None:
    registry = folder / "registry" / "orders.yaml"
    registry.write_text(registry.read_text().replace("handler: shop.tools:get_order_status",
                                                     "handler: shop.tools:get_order_statuz"))
    line = registry.read_text().splitlines().index("    handler: shop.tools:get_order_statuz") + 1
    problems = loaded(client)["problems"]
    found = [p for p in problems if p["file"] == "registry/orders.yaml"]
    assert found and found[0]["line"] == line, problems
    # A problem of the diagram's own text names no other file.
    view = client("POST", "/api/validate", json={"path": "claude_qa.yaml", "diagram": {"blocks": [{"id": "s"}]}},
                  headers=HEADERS).json()
    assert view["problems"] and all(p["file"] is None for p in view["problems"])


def test_palette_lists_every_registered_type_with_its_input_schema(client) -> None:
    palette = {entry["type"]: entry for entry in client("GET", "/api/blocks").json()}
    assert set(palette) == set(registry())
    claude = palette["ClaudeRequest"]
    temperature = claude["inputs_schema"]["properties"]["temperature"]
    assert {"maximum": 1, "minimum": 0, "type": "number"} in temperature["anyOf"]
    assert claude["table_fields"] == {"history": "history", "tools": "tools"}
    # a type's own link keys; the ones every block has (next, on_error) are the format's (GET /api/format)
    assert "called_tools" in claude["outputs"] and palette["Loop"]["ports"] == ["body"] and claude["ports"] == []
    assert palette["Loop"]["body_names"] == ["item", "index"]
    # The form of a Loop offers `concurrency` (a whole number, at least 1); a Subdiagram's asks for its file and
    # takes its inputs as a mapping of names.
    concurrency = palette["Loop"]["inputs_schema"]["properties"]["concurrency"]
    assert (concurrency["type"], concurrency["minimum"], concurrency["default"]) == ("integer", 1, 1)
    subdiagram = palette["Subdiagram"]
    assert subdiagram["inputs_schema"]["required"] == ["diagram"]
    assert subdiagram["inputs_schema"]["properties"]["diagram"]["type"] == "string"
    assert subdiagram["inputs_schema"]["properties"]["inputs"]["type"] == "object"
    assert subdiagram["outputs"] == ["variables", "status", "run_id"] and subdiagram["ports"] == []
    # The Function block's form comes from its Inputs model, like every other type's.
    function = palette["Function"]
    assert set(function["inputs_schema"]["properties"]) == {"function", "arguments", "timeout"}
    assert function["inputs_schema"]["required"] == ["function"] and function["outputs"] == ["result"]


# -- saving with minimal diffs ------------------------------------------------------------------------------


def test_moving_a_block_changes_exactly_its_position_line(client, folder: Path) -> None:
    view = loaded(client)
    before = (folder / "order_agent.yaml").read_text().splitlines()
    diagram = view["diagram"]
    diagram["blocks"][1]["position"] = [420, 80]
    response = put(client, "order_agent.yaml", view["hash"], diagram)
    assert response.status_code == 200, response.text
    after = (folder / "order_agent.yaml").read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=False) if a != b]
    assert len(after) == len(before) + 1 and changed  # one line added: the block had no position
    assert [line for line in after if line not in before] == ["    position: [420, 80]"]
    view = loaded(client)
    diagram = view["diagram"]
    diagram["blocks"][1]["position"] = [500, 90]
    put(client, "order_agent.yaml", view["hash"], diagram)
    again = (folder / "order_agent.yaml").read_text().splitlines()
    assert [(a, b) for a, b in zip(after, again, strict=True) if a != b] == [("    position: [420, 80]", "    position: [500, 90]")]


def test_saved_file_keeps_comments_and_validates(client, folder: Path) -> None:
    view = loaded(client)
    diagram = view["diagram"]
    diagram["blocks"].append({"id": "log", "type": "Set", "set": {"note": "{{ answer }}"}})
    diagram["blocks"][4]["next"] = "log"
    response = put(client, "order_agent.yaml", view["hash"], diagram)
    assert response.status_code == 200 and response.json()["problems"] == []
    text = (folder / "order_agent.yaml").read_text()
    assert text.startswith("# yaml-language-server: $schema=../diagram.schema.json\n")
    from engine import validate

    assert validate(folder / "order_agent.yaml", registry()) == []


def test_save_over_an_outside_change_is_refused_with_a_diff(client, folder: Path) -> None:
    view = loaded(client)
    path = folder / "order_agent.yaml"
    path.write_text(path.read_text().replace("max_steps: 40", "max_steps: 41"))
    before = path.read_text()
    response = put(client, "order_agent.yaml", view["hash"], view["diagram"])
    assert response.status_code == 409
    body = response.json()
    assert "-    max_steps: 40" in body["diff"] and "+    max_steps: 41" in body["diff"]
    assert body["hash"] != view["hash"] and path.read_text() == before


def test_invalid_diagram_can_be_saved_and_its_problems_are_answered(client, folder: Path) -> None:
    view = loaded(client)
    diagram = view["diagram"]
    diagram["blocks"][1]["with"]["temperature"] = 3
    response = put(client, "order_agent.yaml", view["hash"], diagram)
    assert response.status_code == 200
    problems = response.json()["problems"]
    assert any(p["block"] == "ask" and p["field"] and "temperature" in p["field"] for p in problems)
    assert "temperature: 3" in (folder / "order_agent.yaml").read_text()


def test_validate_checks_without_writing(client, folder: Path) -> None:
    before = (folder / "order_agent.yaml").read_text()
    diagram = loaded(client)["diagram"]
    diagram["blocks"][1]["next"][0]["to"] = "dispatchh"
    response = client("POST", "/api/validate", json={"diagram": diagram, "path": "order_agent.yaml"}, headers=HEADERS)
    assert response.status_code == 200
    problem = next(p for p in response.json()["problems"] if p["block"] == "ask")
    assert "dispatchh" in problem["message"] and problem["hint"] == "did you mean 'dispatch'?"
    assert (folder / "order_agent.yaml").read_text() == before


# -- files --------------------------------------------------------------------------------------------------


def test_new_duplicate_rename_delete(client, folder: Path) -> None:
    assert client("POST", "/api/diagrams", json={"path": "novo.yaml"}, headers=HEADERS).status_code == 201
    assert loaded(client, "novo.yaml")["problems"] == []
    assert client("POST", "/api/diagrams", json={"path": "copia.yaml", "copy_of": "order_agent.yaml"},
                  headers=HEADERS).status_code == 201
    # the copy is the original but for its `diagram:` name, the copy's own (issue 29)
    assert (folder / "copia.yaml").read_text() == \
        (folder / "order_agent.yaml").read_text().replace("diagram: order-agent", "diagram: copia")
    assert client("POST", "/api/diagrams/copia.yaml/rename", json={"to": "outra.yaml"}, headers=HEADERS).json() == {
        "path": "outra.yaml"}
    assert client("DELETE", "/api/diagrams/outra.yaml", headers=HEADERS | {"content-type": "application/json"}).status_code == 204
    assert not (folder / "outra.yaml").exists() and not (folder / "copia.yaml").exists()


@pytest.mark.parametrize("name", ["../escape.yaml", "/tmp/x.yaml", "sub/x.yaml", "x.txt", "", "order_agent.yaml", 5])
def test_new_file_names_that_leave_the_folder_or_exist_are_refused(client, folder: Path, name: object) -> None:
    response = client("POST", "/api/diagrams", json={"path": name}, headers=HEADERS)
    assert response.status_code in (409, 422) and "error" in response.json()
    assert not (folder.parent / "escape.yaml").exists()


def test_csv_preview_stays_inside_the_folder(client) -> None:
    preview = client("GET", "/api/diagrams/classify_messages.yaml/csv", params={"file": "data/customer_messages.csv"}).json()
    assert preview["columns"] and preview["rows"] and preview["total"] >= len(preview["rows"])
    for outside in ("../../../../etc/passwd", "/etc/passwd", "../pyproject.toml"):
        response = client("GET", "/api/diagrams/classify_messages.yaml/csv", params={"file": outside})
        assert response.status_code == 404 and "root" not in response.text


def test_a_symlink_pointing_outside_is_neither_listed_nor_read(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.yaml"
    outside.write_text("diagram: secret-name\ndescription: secret description\nblocks: []\n")
    (folder / "link.yaml").symlink_to(outside)
    client = make_client(folder, tmp_path / "runs")
    listed = client("GET", "/api/diagrams")
    assert "secret" not in listed.text and "link.yaml" not in listed.text
    assert client("GET", "/api/diagrams/link.yaml").status_code == 404


# -- the guard ----------------------------------------------------------------------------------------------


def test_a_foreign_origin_cannot_start_a_run(client) -> None:
    response = client("POST", "/api/diagrams/order_agent.yaml/runs", json={"offline": True},
                      headers={"x-diagrama-token": TOKEN, "origin": "https://evil.example"})
    assert response.status_code == 403 and "Origin" in response.json()["error"]


def test_a_rebinding_host_is_refused_even_for_reads(client) -> None:
    assert client("GET", "/api/diagrams", base="http://evil.example:8765").status_code == 421
    assert client("GET", "/api/session", base="http://evil.example:8765").status_code == 421


def test_text_plain_and_form_posts_are_refused(client) -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        response = client("POST", "/api/diagrams/order_agent.yaml/runs", content=b'{"offline": false}',
                          headers={"content-type": content_type, "x-diagrama-token": TOKEN})
        assert response.status_code == 415


def test_state_changes_need_the_token(client) -> None:
    response = client("POST", "/api/diagrams/order_agent.yaml/runs", json={"offline": True}, headers={"origin": ORIGIN})
    assert response.status_code == 403 and "token" in response.json()["error"]
    token = client("GET", "/api/session").json()["token"]
    assert token == TOKEN


def test_cross_site_fetch_metadata_is_refused(client) -> None:
    headers = {"x-diagrama-token": TOKEN, "sec-fetch-site": "cross-site"}
    response = client("POST", "/api/validate", json={"diagram": {}}, headers=headers)
    assert response.status_code == 403


def test_online_runs_from_the_page_are_opt_in(client, folder: Path, tmp_path: Path) -> None:
    response = client("POST", "/api/diagrams/claude_qa.yaml/runs", json={"offline": False}, headers=HEADERS)
    assert response.status_code == 403 and "--allow-online" in response.json()["error"]
    allowed = make_client(folder, tmp_path / "runs2", allow_online=True, services=None)
    started = allowed("POST", "/api/diagrams/claude_qa.yaml/runs", json={"offline": False}, headers=HEADERS)
    assert started.status_code == 202  # it runs online (and fails here without a key): allowed, not refused


def test_read_only_refuses_every_edit(folder: Path, tmp_path: Path) -> None:
    client = make_client(folder, tmp_path / "runs", read_only=True)
    view = loaded(client)
    assert put(client, "order_agent.yaml", view["hash"], view["diagram"]).status_code == 403
    assert client("POST", "/api/diagrams", json={"path": "x.yaml"}, headers=HEADERS).status_code == 403
    assert client("GET", "/api/session").json()["read_only"] is True


@pytest.mark.parametrize(("method", "url", "body"), [
    ("GET", "/api/runs/x?after=abc", None),
    ("POST", "/api/diagrams/order_agent.yaml/runs", b"[1,2]"),
    ("POST", "/api/diagrams/order_agent.yaml/runs", b'"x"'),
    ("POST", "/api/diagrams/order_agent.yaml/runs", b'{"inputs": [1]}'),
    ("POST", "/api/diagrams/order_agent.yaml/runs", b'{"inputs": {}, "offline": "no"}'),
    ("POST", "/api/diagrams/order_agent.yaml/runs", b"{not json"),
    ("PUT", "/api/diagrams/order_agent.yaml", b'{"base_hash": 1}'),
    ("PUT", "/api/diagrams/order_agent.yaml", b'{"base_hash": "x", "diagram": []}'),
    ("POST", "/api/validate", b'{"diagram": "x"}'),
    ("POST", "/api/diagrams/order_agent.yaml/rename", b'{"to": null}'),
])
def test_bad_requests_get_a_message_not_a_500(client, folder: Path, method: str, url: str, body: bytes | None) -> None:
    before = (folder / "order_agent.yaml").read_text()
    if url.startswith("/api/runs/x"):
        started = client("POST", "/api/diagrams/greeting_counter.yaml/runs", json={}, headers=HEADERS)
        url = url.replace("/x?", f"/{started.json()['run_id']}?")
    response = client(method, url, content=body, headers=HEADERS | {"content-type": "application/json"})
    assert 400 <= response.status_code < 500 and response.json()["error"]
    assert (folder / "order_agent.yaml").read_text() == before


def test_deeply_nested_or_huge_edits_are_refused_cleanly(client, folder: Path) -> None:
    import orjson

    view = loaded(client)
    before = (folder / "order_agent.yaml").read_text()
    diagram = view["diagram"]
    diagram["blocks"][4]["set"] = {"deep": "NESTED"}
    body = orjson.dumps({"base_hash": view["hash"], "diagram": diagram}).replace(b'"NESTED"', b"[" * 5000 + b"1" + b"]" * 5000)
    response = client("PUT", "/api/diagrams/order_agent.yaml", content=body, headers=HEADERS | {"content-type": "application/json"})
    assert 400 <= response.status_code < 500 and response.json()["error"]
    diagram["blocks"][4]["set"] = {"deep": "NESTED"}
    body = orjson.dumps({"base_hash": view["hash"], "diagram": diagram}).replace(b'"NESTED"', b"[" * 200 + b"1" + b"]" * 200)
    response = client("PUT", "/api/diagrams/order_agent.yaml", content=body, headers=HEADERS | {"content-type": "application/json"})
    assert 400 <= response.status_code < 500 and response.json()["error"]
    huge = b'{"base_hash": "x", "diagram": {"blocks": [], "pad": "' + b"a" * (9 * 1024 * 1024) + b'"}}'
    response = client("PUT", "/api/diagrams/order_agent.yaml", content=huge, headers=HEADERS | {"content-type": "application/json"})
    assert response.status_code == 413
    assert (folder / "order_agent.yaml").read_text() == before


def test_no_key_reaches_the_studio(client, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-123456")
    started = client("POST", "/api/diagrams/claude_qa.yaml/runs", json={"offline": True}, headers=HEADERS)
    assert "sk-ant-secret-value-123456" not in str(started.extensions["run"])
    for url in ("/api/diagrams/claude_qa.yaml", "/api/session", "/api/blocks", "/api/diagrams"):
        assert "sk-ant-secret-value-123456" not in client("GET", url).text


def test_a_function_diagram_opens_valid_and_a_save_keeps_its_allowed_modules(client, folder: Path) -> None:
    view = loaded(client, "order_quote.yaml")
    assert view["valid"], view["problems"]
    assert view["diagram"]["allowed_modules"] == ["shop.pricing"]
    diagram = view["diagram"]
    diagram["blocks"][1]["position"] = [300, 40]
    response = put(client, "order_quote.yaml", view["hash"], diagram)
    assert response.status_code == 200, response.text
    text = (folder / "order_quote.yaml").read_text()
    assert "allowed_modules: [shop.pricing]" in text and "position: [300, 40]" in text
    assert loaded(client, "order_quote.yaml")["valid"]
