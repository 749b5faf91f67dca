"""HttpRequest in the studio: in the palette with its form, `allowed_hosts` and `secrets` kept by an edit, and a
secret's value never on the page, even from an online run whose server echoes it."""

from __future__ import annotations

import httpx

from engine import Services
from tests.web.studio_client import HEADERS, loaded, make_client, put

TOKEN_VALUE = "studio-token-value-91b7"






def test_the_palette_offers_http_request_with_its_inputs_and_outputs(client) -> None:
    palette = {entry["type"]: entry for entry in client("GET", "/api/blocks").json()}
    http = palette["HttpRequest"]
    assert list(http["inputs_schema"]["properties"]) == ["method", "url", "query", "headers", "json", "body", "timeout",
                                                         "retries", "fail_on_status"]
    assert http["inputs_schema"]["required"] == ["url"]
    assert http["inputs_schema"]["properties"]["method"]["enum"][:2] == ["GET", "POST"]
    assert http["outputs"] == ["status", "headers", "json", "text"]
    assert "allowed_hosts" in http["description"]


def test_an_edit_keeps_allowed_hosts_and_secrets(client, folder) -> None:
    view = loaded(client, "order_lookup.yaml")
    assert view["problems"] == []
    diagram = view["diagram"]
    assert diagram["allowed_hosts"] == ["api.shop.example"] and diagram["secrets"] == ["SHOP_API_TOKEN"]
    diagram["blocks"][1]["position"] = [300, 40]
    assert put(client, "order_lookup.yaml", view["hash"], diagram).status_code == 200
    text = (folder / "order_lookup.yaml").read_text()
    assert "allowed_hosts: [api.shop.example]   # the only host HttpRequest blocks may call" in text
    assert "secrets: [SHOP_API_TOKEN]" in text


def test_an_offline_run_from_the_page_takes_the_error_path(client) -> None:
    started = client("POST", "/api/diagrams/order_lookup.yaml/runs", json={"offline": True}, headers=HEADERS)
    run = started.extensions["run"]
    assert run["status"] == "succeeded" and [e["type"] for e in run["errors"]] == ["http_offline"]


def test_no_secret_reaches_the_page_from_an_online_run(folder, tmp_path) -> None:
    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"status": "shipped", "you_sent": request.headers["authorization"]})

    services = Services(environ={"SHOP_API_TOKEN": TOKEN_VALUE}, transports={"http": httpx.MockTransport(echo)})
    client = make_client(folder, tmp_path / "runs", allow_online=True, services=services)
    started = client("POST", "/api/diagrams/order_lookup.yaml/runs", json={"offline": False}, headers=HEADERS)
    run = started.extensions["run"]
    assert [e["type"] for e in run["errors"]] == ["missing_api_key"]  # the model's turn: no key here, and no vendor
    fetched = next(step for step in run["steps"] if step["block"] == "fetch")
    assert fetched["outputs"]["json"]["you_sent"] == "Bearer [REDACTED]"
    assert TOKEN_VALUE not in started.text and TOKEN_VALUE not in str(run)
    page = client("GET", f"/api/runs/{run['run_id']}")
    assert TOKEN_VALUE not in page.text
