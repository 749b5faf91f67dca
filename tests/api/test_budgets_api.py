"""The API's run request may lower a robot's budget (Start `budget`), never raise it (issue 40, 3)."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ASKER = """
diagram: asker
description: Asks three times.
blocks:
  - id: start
    type: Start
    budget: {requests: 2}
    next: one
  - id: one
    type: GroqChatRequest
    with: {model: llama-3.3-70b-versatile, request: one, max_tokens: 20}
    next: two
  - id: two
    type: GroqChatRequest
    with: {model: llama-3.3-70b-versatile, request: two, max_tokens: 20}
    next: three
  - id: three
    type: GroqChatRequest
    with: {model: llama-3.3-70b-versatile, request: three, max_tokens: 20}
"""


def _post(client: Callable[..., httpx.AsyncClient], body: dict[str, Any]) -> httpx.Response:
    async def go() -> httpx.Response:
        async with client() as caller:
            return await caller.post("/v1/robots/asker/runs", json=body)

    return asyncio.run(go())


def test_a_run_request_lowers_the_budget_and_cannot_raise_it(client: Callable[..., httpx.AsyncClient],
                                                              robots_dir: Path) -> None:
    (robots_dir / "asker.yaml").write_text(textwrap.dedent(ASKER).lstrip(), encoding="utf-8")
    own = _post(client, {}).json()
    lowered = _post(client, {"budget": {"requests": 1}}).json()
    raised = _post(client, {"budget": {"requests": 10, "tokens": 100000}}).json()
    assert own["status"] == "failed" and own["cost"]["requests"] == 2 and own["path"] == ["start", "one", "two", "three"]
    assert lowered["cost"]["requests"] == 1 and lowered["errors"][0]["type"] == "budget_exceeded"
    assert lowered["errors"][0]["block"] == "two"
    assert raised["cost"]["requests"] == 2 and raised["errors"][0]["block"] == "three"


def test_a_budget_that_is_no_budget_is_refused_with_its_field(client: Callable[..., httpx.AsyncClient],
                                                               robots_dir: Path) -> None:
    (robots_dir / "asker.yaml").write_text(textwrap.dedent(ASKER).lstrip(), encoding="utf-8")
    for wrong, problem in (({"usd": -1}, "budget.usd"), ({"dollars": 3}, "budget.dollars"), ({}, "budget")):
        answered = _post(client, {"budget": wrong})
        assert answered.status_code == 400, answered.text
        assert any(said.startswith(problem) for said in answered.json()["problems"]), answered.json()
