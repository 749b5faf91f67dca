"""The studio's knowledge routes (engine/web/knowledge.py): a diagram's bases listed, the retrieval test's search,
the re-index; answers as the committed schema says, refusals for what is not there or not allowed."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.web.studio_client import HEADERS, make_client
from tests.web.test_api_models import conforms

SEARCH = "POST /api/diagrams/{path}/knowledge/{name}/search"


def test_the_bases_are_listed_searched_and_indexed(folder: Path, tmp_path: Path) -> None:
    shutil.rmtree(folder / "kb" / ".diagrama-index.sqlite", ignore_errors=True)
    for stale in (folder / "kb").glob(".diagrama-index*"):
        stale.unlink()
    client = make_client(folder, tmp_path / "runs")
    [listed] = conforms("GET /api/diagrams/{path}/knowledge", client("GET", "/api/diagrams/policy_bot.yaml/knowledge"))
    assert (listed["name"], listed["folder"], listed["declared_in"]) == ("policies", "kb", "policy_bot.yaml")
    assert listed["files"] == 5 and listed["chunks"] == 0 and listed["indexed"] is None  # listing made no index
    found = conforms(SEARCH, client("POST", "/api/diagrams/policy_bot.yaml/knowledge/policies/search",
                                    json={"query": "refund", "top_k": 3}, headers=HEADERS))
    assert found["knowledge"] == "policies" and 1 <= len(found["passages"]) <= 3
    first = found["passages"][0]
    assert first["source"] == "refunds.md" and 0 < first["score"] <= 1 and "refund" in first["text"].lower()
    [listed] = client("GET", "/api/diagrams/policy_bot.yaml/knowledge").json()
    assert listed["chunks"] > 0 and listed["indexed"] is not None
    indexed = conforms("POST /api/diagrams/{path}/knowledge/{name}/index",
                       client("POST", "/api/diagrams/policy_bot.yaml/knowledge/policies/index", json={}, headers=HEADERS))
    assert (indexed["files"], indexed["unchanged"], indexed["added"]) == (5, 5, 0)


def test_what_is_not_there_or_not_allowed_is_refused(folder: Path, tmp_path: Path) -> None:
    client = make_client(folder, tmp_path / "runs")
    url = "/api/diagrams/policy_bot.yaml/knowledge"
    assert client("POST", f"{url}/nope/search", json={"query": "x"}, headers=HEADERS).status_code == 404
    assert client("POST", f"{url}/policies/search", json={"query": ""}, headers=HEADERS).status_code == 422
    assert client("POST", f"{url}/policies/search", json={"query": "x", "top_k": 0}, headers=HEADERS).status_code == 422
    assert client("POST", f"{url}/policies/search", json={"query": "x"}).status_code == 403  # not from the page
    assert client("GET", "/api/diagrams/../policy_bot.yaml/knowledge").status_code == 404
    assert client("GET", "/api/diagrams/order_agent.yaml/knowledge").json() == []
    read_only = make_client(folder, tmp_path / "runs", read_only=True)
    assert read_only("POST", f"{url}/policies/index", json={}, headers=HEADERS).status_code == 403
